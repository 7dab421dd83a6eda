# SPDX-License-Identifier: Apache-2.0
"""Agrona's ``MarkFile``: a memory-mapped file whose ``version`` and ``activityTimestamp`` fields tell readers
that a component is ready and alive, under the archive's and the cluster's mark files (as Aeron's
``ArchiveMarkFile`` and ``ClusterMarkFile`` wrap Agrona's).

A component creates the file, or takes over one whose owner has gone: an existing file is refused while its
timestamp is younger than the liveness timeout (``active mark file detected``), unless the pid it records names
no live process on this host and its timestamp has stopped moving, which is what our media driver does with a
dead driver's cnc.dat (``aeron.common.cnc_attach.is_driver_dead``), so a crashed component restarts at once.
Taking over compare-and-sets the timestamp to ``ACTIVATION_IN_PROGRESS_TIMESTAMP`` (Agrona's guard against two
processes activating at once), which stays there until the new owner is ready. The component then writes its
fields and calls :meth:`MarkFile.signal_ready`: the timestamp, then the version, each with release ordering.
Tools map an existing file read-only and wait for a non-zero version and timestamp (Agrona's
``mapExistingMarkFile``).

Also here: the ``.lnk`` files that point a component's directory at its mark file directory
(``MarkFile.ensureMarkFileLink``), and the text and file of ``CommonContext.printErrorLog`` /
``saveExistingErrors`` for the distinct error log a mark file carries.
"""
from __future__ import annotations

import datetime
import mmap
import os
import pathlib
import time
from collections.abc import Callable

from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.error_log import ErrorLogRecord, format_timestamp, read_error_log
from aeron.common.cnc_attach import driver_pid_is_gone, is_driver_dead
from aeron.common.constants import INT64_MAX
from aeron.common.errors import AeronTimeoutError, CorruptFileError, IllegalStateError

__all__ = ["ACTIVATION_IN_PROGRESS_TIMESTAMP", "ActiveMarkFileError", "MarkFile", "ensure_mark_file_link",
           "error_log_records", "print_error_log", "resolve_link", "save_existing_errors"]

# Agrona MarkFile.ACTIVATION_IN_PROGRESS_TIMESTAMP (Long.MAX_VALUE): a file being taken over looks alive
ACTIVATION_IN_PROGRESS_TIMESTAMP = INT64_MAX
_POLL_S = 0.016                         # Agrona sleeps 16 ms between looks at a file being created


class ActiveMarkFileError(IllegalStateError):
    """The mark file belongs to a component that is still running (its activity timestamp is fresh)."""


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _size_of(path: pathlib.Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return -1


class MarkFile:
    """One mapped mark file with its version and activity timestamp at fixed offsets.

    Writable (:meth:`map_new_or_existing`) for the component that owns it, or read-only (:meth:`map_existing`)
    for a tool. ``buffer`` is the mapping as an AtomicBuffer (writable files) and ``data`` a read-only view.
    """

    def __init__(self, path: pathlib.Path, version_offset: int, timestamp_offset: int,
                 buffer: AtomicBuffer | None = None, data: mmap.mmap | None = None) -> None:
        """Use :meth:`map_new_or_existing` or :meth:`map_existing`."""
        self.path = path
        self.version_offset = version_offset
        self.timestamp_offset = timestamp_offset
        self._buffer = buffer
        self._data = data
        self.closed = False

    # -- mapping ------------------------------------------------------------------------------------------------

    @classmethod
    def map_new_or_existing(cls, path: str | os.PathLike[str], *, version_offset: int, timestamp_offset: int,
                            total_file_length: int, timeout_ms: int,
                            epoch_clock: Callable[[], int] = _now_ms,
                            version_check: Callable[[int], None] = lambda version: None,
                            pid_of: Callable[[AtomicBuffer], int] | None = None,
                            log: Callable[[str], None] | None = None) -> tuple[MarkFile, bool]:
        """Create ``path`` (sparse, ``total_file_length`` bytes) or take over the existing file; returns the mark
        file and whether it existed (Agrona's ``mapNewOrExistingMarkFile``).

        An existing file is grown to ``total_file_length`` when shorter, ``version_check(version)`` may raise, and
        a positive timestamp younger than ``timeout_ms`` raises ActiveMarkFileError unless ``pid_of(buffer)`` (the
        owner's pid as the file records it) names a process gone from this host whose timestamp has stopped (then
        ``log`` hears that the file is taken over). The timestamp of a taken-over file is left at
        ACTIVATION_IN_PROGRESS_TIMESTAMP until :meth:`signal_ready`; a file with that timestamp is refused.
        """
        path = pathlib.Path(path)
        if not path.exists():
            buffer = AtomicBuffer.map_file(path, total_file_length, create=True)
            return cls(path, version_offset, timestamp_offset, buffer=buffer), False
        fd = os.open(path, os.O_RDWR)
        try:
            if os.fstat(fd).st_size < total_file_length:
                os.ftruncate(fd, total_file_length)
        finally:
            os.close(fd)
        buffer = AtomicBuffer.map_file(path)
        try:
            if buffer.capacity < timestamp_offset + 8:
                raise CorruptFileError(f"active mark file too short: capacity={buffer.capacity} < "
                                       f"{timestamp_offset + 8}", path=str(path), offset=buffer.capacity)
            # no INFO lines here: Aeron's components create their mark files without a logger
            version_check(buffer.get_i32_volatile(version_offset))
            timestamp = buffer.get_i64_volatile(timestamp_offset)
            age = epoch_clock() - timestamp
            # 0 (never ready) and -1 (a clean stop) say no owner, whatever the clock
            if timestamp > 0 and age < timeout_ms:
                pid = pid_of(buffer) if pid_of is not None else 0
                owner = f"pid {pid}, " if pid_of is not None else ""
                if timestamp == ACTIVATION_IN_PROGRESS_TIMESTAMP:
                    # an owner killed while it started never ages: its file is taken over once its recorded pid is
                    # gone from this host (a file that records no pid yet stays refused, as Agrona's)
                    if pid <= 0 or not driver_pid_is_gone(pid):
                        raise ActiveMarkFileError(f"active mark file detected: {path} ({owner}activation in progress)")
                # judged on the wall clock whatever epoch_clock is: a stopped heartbeat must age in real time
                elif not is_driver_dead(pid, lambda: buffer.get_i64_volatile(timestamp_offset)):
                    raise ActiveMarkFileError(f"active mark file detected: {path} ({owner}activity {age} ms ago)")
                if log is not None:
                    log(f"WARNING: the owner of {path} (pid {pid}) is gone: taking its mark file over")
            if not buffer.compare_and_set_i64(timestamp_offset, timestamp, ACTIVATION_IN_PROGRESS_TIMESTAMP):
                raise ActiveMarkFileError(f"concurrent mark file activation: {path}")
        except BaseException:
            buffer.close()
            raise
        return cls(path, version_offset, timestamp_offset, buffer=buffer), True

    @classmethod
    def map_existing(cls, path: str | os.PathLike[str], *, version_offset: int, timestamp_offset: int,
                     timeout_ms: int, epoch_clock: Callable[[], int] = _now_ms,
                     version_check: Callable[[int], None] = lambda version: None,
                     log: Callable[[str], None] | None = None) -> MarkFile:
        """Map an existing file read-only, waiting up to ``timeout_ms`` for it to exist, for a non-zero version
        (then ``version_check(version)``) and a non-zero timestamp (Agrona's ``mapExistingMarkFile``); raises
        AeronTimeoutError naming what it waited for."""
        path = pathlib.Path(path)
        deadline = epoch_clock() + timeout_ms
        needed = max(version_offset + 4, timestamp_offset + 8)
        while (size := _size_of(path)) < needed:
            # a creator sizes the file in one step: empty is being created, shorter than its fields is corrupt
            if size > 0:
                raise CorruptFileError(f"mark file too short: {size} bytes < {needed}", path=str(path), offset=size)
            if epoch_clock() > deadline:
                raise AeronTimeoutError(f"mark file not created: {path}")
            time.sleep(_POLL_S)
        with open(path, "rb") as f:
            data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        if log is not None:
            log(f"INFO: mark file exists: {path}")
        mark = cls(path, version_offset, timestamp_offset, data=data)
        try:
            while (version := mark.version_volatile()) == 0:
                if epoch_clock() > deadline:
                    raise AeronTimeoutError(f"mark file not ready, created but not initialised (version 0) after "
                                            f"{timeout_ms} ms: {path}")
                time.sleep(0.001)
            version_check(version)
            while mark.timestamp_volatile() == 0:
                if epoch_clock() > deadline:
                    raise AeronTimeoutError(f"mark file not ready, no non-zero timestamp detected (version "
                                            f"{version}) after {timeout_ms} ms: {path}")
                time.sleep(0.001)
        except BaseException:
            mark.close()
            raise
        return mark

    # -- fields -------------------------------------------------------------------------------------------------

    @property
    def buffer(self) -> AtomicBuffer:
        """The writable mapping (IllegalStateError for a read-only or closed file)."""
        if self.closed or self._buffer is None:
            raise IllegalStateError(f"mark file not open for writing: {self.path}")
        return self._buffer

    @property
    def data(self) -> AtomicBuffer | mmap.mmap:
        """The mapping to read from: the AtomicBuffer of a writable file, the read-only mmap of a tool's."""
        if self.closed:
            raise IllegalStateError(f"mark file is closed: {self.path}")
        return self._buffer if self._buffer is not None else self._data  # type: ignore[return-value]

    @property
    def capacity(self) -> int:
        """Bytes mapped."""
        data = self.data
        return data.capacity if isinstance(data, AtomicBuffer) else len(data)

    def get_i32(self, offset: int) -> int:
        """An int32 of the mapping (a volatile read on a writable file)."""
        data = self.data
        if isinstance(data, AtomicBuffer):
            return data.get_i32_volatile(offset)
        return int.from_bytes(data[offset:offset + 4], "little", signed=True)

    def get_i64(self, offset: int) -> int:
        """An int64 of the mapping (a volatile read on a writable file)."""
        data = self.data
        if isinstance(data, AtomicBuffer):
            return data.get_i64_volatile(offset)
        return int.from_bytes(data[offset:offset + 8], "little", signed=True)

    def version_volatile(self) -> int:
        """The version field (0 until the owner is ready)."""
        return self.get_i32(self.version_offset)

    def timestamp_volatile(self) -> int:
        """The activity timestamp (epoch ms of the owner's last heartbeat)."""
        return self.get_i64(self.timestamp_offset)

    def signal_ready(self, version: int) -> None:
        """Write the version with release ordering: readers that see it see every field written before."""
        self.buffer.put_i32_ordered(self.version_offset, version)

    def timestamp_release(self, timestamp: int) -> None:
        """Write the activity timestamp with release ordering (the owner's heartbeat)."""
        self.buffer.put_i64_ordered(self.timestamp_offset, timestamp)

    def clear(self) -> None:
        """Zero the mapping, all but the timestamp: a taken-over file keeps saying ACTIVATION_IN_PROGRESS while its
        new owner writes its fields."""
        buffer = self.buffer
        end = self.timestamp_offset + 8
        buffer.set_memory(0, self.timestamp_offset, 0)
        buffer.set_memory(end, buffer.capacity - end, 0)

    def relocate(self, version_offset: int, timestamp_offset: int) -> None:
        """Move the version and timestamp fields (a legacy file rewritten in the current layout): the mapping is
        zeroed and the timestamp at its new place says ACTIVATION_IN_PROGRESS, as it did at the old one."""
        buffer = self.buffer
        buffer.put_i64_ordered(timestamp_offset, ACTIVATION_IN_PROGRESS_TIMESTAMP)
        self.version_offset, self.timestamp_offset = version_offset, timestamp_offset
        self.clear()

    def save_existing_errors(self, offset: int, length: int, prefix: str,
                             log: Callable[[str], None] | None = None) -> pathlib.Path | None:
        """Save the distinct error log at ``[offset, offset + length)`` of a taken-over file to
        ``<prefix>-<timestamp>-error.log`` beside it (:func:`save_existing_errors`), then zero that region; a
        region outside the file (a header that says nothing sensible) is left alone. Returns the file written."""
        buffer = self.buffer
        if not (0 < offset and 0 < length and offset + length <= buffer.capacity):
            return None
        saved = save_existing_errors(self.path, error_log_records(buffer, offset, length), prefix, log)
        buffer.set_memory(offset, length, 0)
        return saved

    def force(self) -> None:
        """Write the mapping's dirty pages back to the file (an fsync of the file does so for shared mappings)."""
        self.buffer
        fd = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def close(self) -> None:
        """Unmap (idempotent)."""
        if self.closed:
            return
        self.closed = True
        if self._buffer is not None:
            self._buffer.close()
            self._buffer = None
        if self._data is not None:
            self._data.close()
            self._data = None

    def __enter__(self) -> MarkFile:  # noqa: PYI034 (not meant to be subclassed)
        """The mark file itself."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close it."""
        self.close()


# -- link files ---------------------------------------------------------------------------------------------------


def ensure_mark_file_link(service_dir: str | os.PathLike[str], mark_file: str | os.PathLike[str],
                          link_filename: str) -> None:
    """Write ``service_dir/link_filename`` naming the directory of ``mark_file`` when that is another directory,
    and remove a stale link when it is the same one (Agrona's ``MarkFile.ensureMarkFileLink``)."""
    service = pathlib.Path(service_dir).resolve()
    parent = pathlib.Path(mark_file).parent.resolve()
    link = service / link_filename
    if service == parent:
        link.unlink(missing_ok=True)
    else:
        link.write_bytes(str(parent).encode("ascii"))


def resolve_link(link_file: str | os.PathLike[str]) -> pathlib.Path:
    """The directory a ``.lnk`` file names (its ASCII text, trimmed)."""
    return pathlib.Path(pathlib.Path(link_file).read_bytes().decode("ascii").strip())


# -- the distinct error log of a mark file ------------------------------------------------------------------------


def error_log_records(data: AtomicBuffer | mmap.mmap | bytes | bytearray, offset: int,
                      length: int) -> list[ErrorLogRecord]:
    """The distinct errors of the error log at ``data[offset:offset + length]``, in log order."""
    if length <= 0 or offset < 0:
        return []
    if isinstance(data, AtomicBuffer):
        section = AtomicBuffer(data, offset, length)
    else:
        section = AtomicBuffer(bytearray(data[offset:offset + length]))
    try:
        return read_error_log(section)
    finally:
        section.close()


def print_error_log(records: list[ErrorLogRecord], tz: datetime.tzinfo | None = None) -> str:
    """The text of Java's ``CommonContext.printErrorLog`` for ``records`` (what ClusterTool and ArchiveTool
    ``errors`` print, and a saved error file holds)."""
    if not records:
        return "\n0 distinct errors observed\n"
    parts = [f"\n{r.observation_count} observations from {format_timestamp(r.first_timestamp, tz)} to "
             f"{format_timestamp(r.last_timestamp, tz)} for:\n{r.text}\n" for r in records]
    parts.append(f"\n{len(records)} distinct errors observed.\n")
    return "".join(parts)


def save_existing_errors(mark_file: str | os.PathLike[str], records: list[ErrorLogRecord], prefix: str,
                         log: Callable[[str], None] | None = None) -> pathlib.Path | None:
    """Write ``records`` to ``<prefix>-<yyyy-MM-dd-HH-mm-ss-SSSZ>-error.log`` beside ``mark_file`` (nothing when
    there are none) and return the file written (Java's ``CommonContext.saveExistingErrors``)."""
    if not records:
        return None
    now = datetime.datetime.now().astimezone()
    stamp = now.strftime("%Y-%m-%d-%H-%M-%S-") + f"{now.microsecond // 1000:03d}" + now.strftime("%z")
    target = pathlib.Path(mark_file).parent / f"{prefix}-{stamp}-error.log"
    if log is not None:
        log(f"WARNING: existing errors saved to: {target}")
    target.write_bytes(print_error_log(records).encode("ascii", "replace"))
    return target
