# SPDX-License-Identifier: Apache-2.0
"""aeron.common.mark_file.MarkFile, the one mark file mechanism under the archive's and the cluster's: the liveness
rule and its messages, taking a file over (errors saved and cleared, the rest zeroed, a legacy layout moved) and the
tools' wait for a ready file."""
import os
import pathlib
import subprocess
import sys

import pytest

from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.error_log import DistinctErrorLog
from aeron.common.errors import AeronTimeoutError, CorruptFileError
from aeron.common.mark_file import ACTIVATION_IN_PROGRESS_TIMESTAMP, ActiveMarkFileError, MarkFile

VERSION, TIMESTAMP, PID = 8, 16, 32          # a layout like the archive's: fields after an 8-byte message header
LENGTH = 64 * 1024
ERRORS, ERRORS_LENGTH = 8192, 32 * 1024


def create(path: pathlib.Path, now: int, **kwargs) -> tuple[MarkFile, bool]:
    return MarkFile.map_new_or_existing(path, version_offset=VERSION, timestamp_offset=TIMESTAMP,
                                        total_file_length=LENGTH, timeout_ms=10_000, epoch_clock=lambda: now,
                                        pid_of=lambda buffer: buffer.get_i64(PID), **kwargs)


def ready_file(path: pathlib.Path, timestamp: int, pid: int | None = None) -> None:
    mark, existed = create(path, timestamp)
    with mark:
        mark.buffer.put_i64(PID, os.getpid() if pid is None else pid)
        mark.timestamp_release(timestamp)
        mark.signal_ready(1 << 16)


def test_liveness_rule(tmp_path):
    path = tmp_path / "x.dat"
    ready_file(path, 1_000)
    with pytest.raises(ActiveMarkFileError, match=rf"active mark file detected: .*x\.dat \(pid {os.getpid()}, "
                                                  r"activity 500 ms ago\)"):
        create(path, 1_500)
    mark, existed = create(path, 11_000)                 # as old as the timeout: taken over
    with mark:
        assert existed and mark.timestamp_volatile() == ACTIVATION_IN_PROGRESS_TIMESTAMP
        with pytest.raises(ActiveMarkFileError, match="activation in progress"):
            create(path, 10 ** 13)                       # however late: another process is activating it
        mark.timestamp_release(-1)                       # a clean stop
    for stopped in (-1, 0):                              # a clean stop, never ready: no owner whatever the clock
        with MarkFile(path, VERSION, TIMESTAMP, buffer=AtomicBuffer.map_file(path)) as raw:
            raw.timestamp_release(stopped)
        create(path, 5)[0].close()


def test_a_file_left_activating_by_a_killed_owner_is_taken_over(tmp_path):
    # an owner killed while it started leaves ACTIVATION_IN_PROGRESS for ever: once the pid it recorded is gone from
    # this host the file is taken over at once; while that pid lives, or with no pid recorded, it is refused
    path = tmp_path / "x.dat"
    mark, _ = create(path, 1_000)
    with mark:
        mark.buffer.put_i64(PID, os.getpid())
        mark.timestamp_release(ACTIVATION_IN_PROGRESS_TIMESTAMP)     # as a component that has not signalled ready
    with pytest.raises(ActiveMarkFileError, match="activation in progress"):
        create(path, 1_000)
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(timeout=60)
    with MarkFile(path, VERSION, TIMESTAMP, buffer=AtomicBuffer.map_file(path)) as raw:
        raw.buffer.put_i64(PID, child.pid)
    logged: list[str] = []
    mark, existed = create(path, 1_000, log=logged.append)
    with mark:
        assert existed and mark.timestamp_volatile() == ACTIVATION_IN_PROGRESS_TIMESTAMP
        assert logged and f"pid {child.pid}" in logged[0]


def test_taking_over_saves_and_clears_the_errors_and_zeroes_the_rest(tmp_path):
    path = tmp_path / "x.dat"
    ready_file(path, 1_000)
    with MarkFile(path, VERSION, TIMESTAMP, buffer=AtomicBuffer.map_file(path)) as old:
        old.buffer.put_bytes(100, b"an old owner's channel")
        section = AtomicBuffer(old.buffer, ERRORS, ERRORS_LENGTH)
        DistinctErrorLog(section, lambda: 1_700_000_000_000).record(ValueError("the last run failed"))
        section.close()
    lines = []
    mark, _ = create(path, 20_000)
    with mark:
        saved = mark.save_existing_errors(ERRORS, ERRORS_LENGTH, "TEST", lines.append)
        assert saved is not None and saved.parent == tmp_path and saved.name.startswith("TEST-")
        assert "the last run failed" in saved.read_text() and lines == [f"WARNING: existing errors saved to: {saved}"]
        assert mark.save_existing_errors(ERRORS, ERRORS_LENGTH, "TEST") is None     # cleared: nothing more
        assert mark.save_existing_errors(LENGTH - 8, 1024, "TEST") is None          # outside the file: left alone
        mark.clear()
        data = bytes(memoryview(mark.data))
        assert data[:TIMESTAMP] == bytes(TIMESTAMP) and data[TIMESTAMP + 8:] == bytes(LENGTH - TIMESTAMP - 8)
        assert mark.timestamp_volatile() == ACTIVATION_IN_PROGRESS_TIMESTAMP
        mark.relocate(0, 8)                              # a legacy layout's fields moved to this one's
        assert (mark.version_offset, mark.timestamp_offset) == (0, 8)
        assert mark.timestamp_volatile() == ACTIVATION_IN_PROGRESS_TIMESTAMP and mark.get_i64(TIMESTAMP) == 0


def test_tools_wait_for_a_ready_file_and_name_a_short_one(tmp_path):
    path = tmp_path / "x.dat"
    with pytest.raises(AeronTimeoutError, match="mark file not created"):
        MarkFile.map_existing(path, version_offset=VERSION, timestamp_offset=TIMESTAMP, timeout_ms=20)
    path.write_bytes(bytes(12))
    with pytest.raises(CorruptFileError, match="mark file too short: 12 bytes < 24") as err:
        MarkFile.map_existing(path, version_offset=VERSION, timestamp_offset=TIMESTAMP, timeout_ms=10_000)
    assert err.value.offset == 12 and err.value.path == str(path)
    path.unlink()
    create(path, 1)[0].close()
    with pytest.raises(AeronTimeoutError, match="not ready, created but not initialised"):
        MarkFile.map_existing(path, version_offset=VERSION, timestamp_offset=TIMESTAMP, timeout_ms=20)
    ready_file(path, 5)
    lines = []
    with MarkFile.map_existing(path, version_offset=VERSION, timestamp_offset=TIMESTAMP, timeout_ms=20,
                               log=lines.append) as mark:
        assert (mark.version_volatile(), mark.timestamp_volatile()) == (1 << 16, 5)
    assert lines == [f"INFO: mark file exists: {path}"]
