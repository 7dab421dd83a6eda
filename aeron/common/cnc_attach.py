# SPDX-License-Identifier: Apache-2.0
"""Judging a driver directory, for a client attaching, a tool reading it and a new driver taking it over: has its
driver died (its pid in the cnc.dat header and its heartbeat), can its cnc.dat be mapped at all, and how to
start a driver when there is none."""
from __future__ import annotations

import errno
import os
import struct
import time
from collections.abc import Callable

from aeron._core.cnc import CNC_FILE, CncFile
from aeron._core.error_log import ErrorLogRecord, read_error_log
from aeron.common.paths import default_aeron_dir

__all__ = ["DEAD_DRIVER_HEARTBEAT_MS", "cnc_open_error", "driver_error_records", "driver_pid_is_gone",
           "is_driver_dead", "no_driver_hint", "read_cnc_pid"]

# A live driver (ours or the C one) refreshes its heartbeat every timer interval, 1 s by default: one whose pid is
# gone and whose heartbeat has not moved for this long is dead, whatever the driver timeout says.
DEAD_DRIVER_HEARTBEAT_MS = 1500
_CNC_PID_OFFSET = 40                    # cnc.dat header: driver pid, int64 (CncFileDescriptor.PID_FIELD_OFFSET)


def no_driver_hint(aeron_dir: str) -> str:
    """How to start a media driver for ``aeron_dir``, for the messages of a client that found none."""
    env = "" if aeron_dir == default_aeron_dir() else f"AERON_DIR={aeron_dir} "
    return (f"start a media driver for {aeron_dir}: `{env}python -m aeron.driver`, or embed one in this process "
            "with `driver = MediaDriver.launch_embedded()` and connect with `Context(driver.aeron_dir)`")


def read_cnc_pid(cnc_path: str) -> int:
    """The driver pid recorded in a cnc.dat header, 0 when the file is absent, unreadable or too short. The pid is
    written before the version, so it may be read from a file whose version is still 0."""
    try:
        with open(cnc_path, "rb") as f:
            head = f.read(_CNC_PID_OFFSET + 8)
    except OSError:
        return 0
    if len(head) < _CNC_PID_OFFSET + 8:
        return 0
    return int(struct.unpack_from("<q", head, _CNC_PID_OFFSET)[0])


def driver_pid_is_gone(pid: int) -> bool:
    """True when ``pid`` names no live process on this host: none with that id, or a zombie. False when it may be
    alive, and for 0 or an impossible id (unknown, say nothing)."""
    if not 0 < pid <= 0x3FFFFFFF:       # above the kernel's pid_max limit: not a pid of this host
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:                     # EPERM: it exists, another user's
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        state = stat[stat.rindex(b")") + 2:stat.rindex(b")") + 3]
    except (OSError, ValueError):
        return False
    return state in (b"Z", b"X")        # dead, its pid not yet reaped by its parent


def is_driver_dead(pid: int, read_heartbeat_ms: Callable[[], int],
                   clock_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000) -> bool:
    """True when the driver that wrote a cnc.dat has died: ``pid`` (from its header) names no live process on this
    host and its heartbeat (``read_heartbeat_ms()``) has stopped for DEAD_DRIVER_HEARTBEAT_MS.

    With the pid gone and the heartbeat younger than that, waits (at most DEAD_DRIVER_HEARTBEAT_MS) for the
    heartbeat either to move, which a driver in another pid namespace sharing the directory does (not dead), or
    to grow that old (dead). With the pid alive or unknown, answers False at once.
    """
    if not driver_pid_is_gone(pid):
        return False
    first = read_heartbeat_ms()
    while True:
        heartbeat = read_heartbeat_ms()
        if heartbeat != first:
            return False
        if clock_ms() - heartbeat > DEAD_DRIVER_HEARTBEAT_MS:
            return True
        time.sleep(0.01)


_REASONS = {errno.EACCES: "permission denied", errno.EPERM: "permission denied", errno.EROFS: "read-only file system",
            errno.EISDIR: "is a directory, not a CnC file", errno.ENOTDIR: "a part of the aeron dir path is not a directory",
            errno.ELOOP: "too many levels of symbolic links"}


def cnc_open_error(path: str, error: OSError) -> OSError:
    """The error to raise at once for a cnc.dat that exists but cannot be mapped: no driver will fix that by
    starting, so waiting out the driver timeout would only hide it. An OSError of the same errno (a
    PermissionError for EACCES/EPERM), naming the reason and the path."""
    code = error.errno or errno.EIO
    reason = _REASONS.get(code) or (error.strerror or os.strerror(code)).lower()
    if code in (errno.EACCES, errno.EPERM):
        reason += (" (the media driver runs as another user: run the client as that user, or give this one "
                   "read-write access to the aeron dir)")
    return OSError(code, f"{reason}: cannot map the media driver's CnC file", path)


def driver_error_records(aeron_dir: str | os.PathLike[str]) -> list[ErrorLogRecord]:
    """The distinct errors of the media driver's error log in ``aeron_dir/cnc.dat``, in log order: what a new driver
    saves of an old one's, and what ArchiveTool and ClusterTool ``errors`` print. Raises as ``CncFile.map_existing``
    does for a file that is absent, not initialised or of another major version."""
    cnc = CncFile.map_existing(os.path.join(os.fspath(aeron_dir), CNC_FILE))
    try:
        section = cnc.error_log_buffer()
        try:
            return read_error_log(section)
        finally:
            section.close()
    finally:
        cnc.close()
