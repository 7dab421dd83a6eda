# SPDX-License-Identifier: Apache-2.0
"""archive-mark.dat: the golden Java mark file decodes, ours is byte-identical for the same fields, readiness and
liveness (a killed archive's file taken over at once), the error log (and its hand-over to archive-<time>-error.log),
the link file and legacy files."""
import os
import subprocess
import sys
import threading
import time

import pytest

from aeron.archive.archive_mark_file import (
    FILENAME,
    LINK_FILENAME,
    SEMANTIC_VERSION,
    ActiveArchiveError,
    ArchiveMarkFile,
)
from aeron.common.errors import AeronTimeoutError, CorruptFileError, IllegalStateError
from aeron.common.mark_file import print_error_log
from tests.archive.archive_files_support import unpack_golden_archive

GOLDEN_FIELDS = dict(control_channel="aeron:udp?endpoint=127.0.0.1:40631",  # noqa: C408
                     local_control_channel="aeron:ipc?term-length=64k", events_channel="",
                     aeron_directory="/dev/shm/golden-archive-driver", archive_id=1, pid=23298)


def test_golden_mark_file_decodes(golden_dir, tmp_path):
    archive = unpack_golden_archive(golden_dir, tmp_path)
    with ArchiveMarkFile.open(archive) as mark:
        h = mark.header()
        assert (h.version, h.activity_timestamp, h.start_timestamp, h.pid) == (196864, -1, 1795335385523, 23298)
        assert (h.control_stream_id, h.local_control_stream_id, h.events_stream_id) == (10, 10, 30)
        assert (h.header_length, h.error_buffer_length, h.archive_id) == (8192, 1048576, 1)
        assert (h.control_channel, h.local_control_channel, h.events_channel, h.aeron_directory) == (
            "aeron:udp?endpoint=127.0.0.1:40631", "aeron:ipc?term-length=64k", "", "/dev/shm/golden-archive-driver")
        assert mark.pid == 23298 and mark.archive_id == 1 and mark.error_records() == []
        with pytest.raises(IllegalStateError):
            mark.update_activity_timestamp(1)


def test_mark_file_we_write_equals_the_java_one(golden_dir, tmp_path):
    golden = unpack_golden_archive(golden_dir, tmp_path / "golden")
    ours = tmp_path / "ours"
    mark = ArchiveMarkFile.create(ours, epoch_clock=lambda: 1795335385523, **GOLDEN_FIELDS)
    try:
        mark.signal_terminated()
    finally:
        mark.close()
    assert (ours / FILENAME).read_bytes() == (golden / FILENAME).read_bytes()


def test_readiness_heartbeat_and_termination(tmp_path):
    clock = [1000]
    mark = ArchiveMarkFile.create(tmp_path, aeron_directory="/dev/shm/x", epoch_clock=lambda: clock[0])
    try:
        assert mark.version == 0 and mark.activity_timestamp == 0
        with pytest.raises(AeronTimeoutError, match="not ready"):
            ArchiveMarkFile.open(tmp_path, timeout_ms=50)
        mark.signal_ready(2000)
        with ArchiveMarkFile.open(tmp_path, timeout_ms=50) as reader:
            assert reader.version == SEMANTIC_VERSION and reader.activity_timestamp == 2000
            mark.update_activity_timestamp(3000)
            assert reader.activity_timestamp == 3000 and reader.header().start_timestamp == 1000
        # a second archive on the same directory while this one beats
        with pytest.raises(ActiveArchiveError):
            ArchiveMarkFile.create(tmp_path, aeron_directory="/dev/shm/x", epoch_clock=lambda: 5000)
        mark.signal_terminated()
        assert mark.activity_timestamp == -1
    finally:
        mark.close()
    again = ArchiveMarkFile.create(tmp_path, aeron_directory="/dev/shm/y", epoch_clock=lambda: 5000)
    again.close()


def test_error_log_is_readable_and_handed_over_on_restart(tmp_path):
    mark = ArchiveMarkFile.create(tmp_path, aeron_directory="/dev/shm/x", epoch_clock=lambda: 1_700_000_000_000)
    try:
        mark.signal_ready()
        assert mark.error_log.record(ValueError("first failure"))
        assert mark.error_log.record(ValueError("first failure"))
        assert mark.error_log.record("second failure")
        with ArchiveMarkFile.open(tmp_path) as reader:
            records = reader.error_records()
        assert [(r.observation_count, r.text.splitlines()[-1]) for r in records] == [
            (2, "ValueError: first failure"), (1, "second failure")]
        text = print_error_log(records)
        assert text.startswith("\n2 observations from ") and text.endswith("\n2 distinct errors observed.\n")
        mark.signal_terminated()
    finally:
        mark.close()
    assert print_error_log([]) == "\n0 distinct errors observed\n"
    logged = []
    restarted = ArchiveMarkFile.create(tmp_path, aeron_directory="/dev/shm/x", log=logged.append)
    try:
        saved = list(tmp_path.glob("archive-*-error.log"))
        assert len(saved) == 1 and "second failure" in saved[0].read_text()
        assert logged == [f"WARNING: existing errors saved to: {saved[0]}"]
        assert restarted.error_records() == []
    finally:
        restarted.close()


def test_link_file_points_tools_at_the_mark_file_dir(tmp_path):
    archive, marks = tmp_path / "archive", tmp_path / "marks"
    archive.mkdir()
    mark = ArchiveMarkFile.create(marks, aeron_directory="/dev/shm/x", archive_dir=archive)
    try:
        mark.signal_ready()
        assert (archive / LINK_FILENAME).read_text() == str(marks.resolve())
        with ArchiveMarkFile.open(archive) as reader:
            assert reader.path == marks.resolve() / FILENAME
    finally:
        mark.close()
    ArchiveMarkFile.create(archive, aeron_directory="/dev/shm/x", archive_dir=archive).close()
    assert not (archive / LINK_FILENAME).exists()


def test_legacy_mark_file_without_message_header_is_read(golden_dir, tmp_path):
    archive = unpack_golden_archive(golden_dir, tmp_path)
    raw = (archive / FILENAME).read_bytes()
    legacy = raw[8:8 + 128] + bytes(len(raw) - 128)
    (archive / FILENAME).write_bytes(legacy)
    with ArchiveMarkFile.open(archive) as mark:
        h = mark.header()
        assert h.header_offset == 0 and h.pid == 23298 and h.header_length == 8192 and h.acting_version == 1
        assert h.control_channel == "" and h.archive_id == -1         # fields after version 1 are absent


def test_wrong_major_version_and_short_file(golden_dir, tmp_path):
    archive = unpack_golden_archive(golden_dir, tmp_path)
    raw = bytearray((archive / FILENAME).read_bytes())
    raw[8:12] = (2 << 16).to_bytes(4, "little")
    (archive / FILENAME).write_bytes(raw)
    with pytest.raises(CorruptFileError, match="major version 2") as err:
        ArchiveMarkFile.open(archive)
    assert err.value.offset == 8
    (archive / FILENAME).write_bytes(raw[:20])
    with pytest.raises(CorruptFileError, match="too short"):
        ArchiveMarkFile.open(archive)


def dead_pid():
    """The pid of a process that has exited and been reaped."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(30)
    return proc.pid


def now_ms():
    return time.time_ns() // 1_000_000


def test_a_fresh_mark_file_of_a_dead_pid_is_taken_over_at_once(tmp_path):
    messages = []
    mark = ArchiveMarkFile.create(tmp_path, aeron_directory="/dev/shm/x", pid=dead_pid())
    mark.signal_ready(now_ms())          # refreshed a moment ago, then its archive was killed
    mark.close()
    again = ArchiveMarkFile.create(tmp_path, aeron_directory="/dev/shm/y", log=messages.append)
    try:
        assert again.header().aeron_directory == "/dev/shm/y" and again.header().pid == os.getpid()
    finally:
        again.close()
    assert any("is gone: taking its mark file over" in m for m in messages)


def test_a_live_pid_keeps_the_liveness_rule(tmp_path):
    mark = ArchiveMarkFile.create(tmp_path, aeron_directory="/dev/shm/x")       # this process: alive
    try:
        mark.signal_ready(now_ms())
        with pytest.raises(ActiveArchiveError, match=f"active mark file detected: .*pid {os.getpid()}"):
            ArchiveMarkFile.create(tmp_path, aeron_directory="/dev/shm/y")
    finally:
        mark.close()


def test_a_dead_pid_whose_timestamp_still_moves_keeps_the_liveness_rule(tmp_path):
    # an archive in another pid namespace (or on another host) sharing the directory: its pid means nothing here,
    # but it refreshes its activity timestamp
    mark = ArchiveMarkFile.create(tmp_path, aeron_directory="/dev/shm/x", pid=dead_pid())
    stop = threading.Event()

    def beat():
        while not stop.is_set():
            mark.update_activity_timestamp(now_ms())
            stop.wait(0.2)
    mark.signal_ready(now_ms())
    beating = threading.Thread(target=beat)
    beating.start()
    try:
        with pytest.raises(ActiveArchiveError):
            ArchiveMarkFile.create(tmp_path, aeron_directory="/dev/shm/y")
    finally:
        stop.set()
        beating.join(10)
        mark.close()
