# SPDX-License-Identifier: Apache-2.0
"""Archive files across implementations (needs AERON_JAVA_CP; skips cleanly without it).

- The official Java ArchiveTool reads a directory our Catalog, ArchiveMarkFile and segment files wrote: describe,
  describe-all, count-entries, pid, dump, verify -a and errors print what our tool prints on it; checksums written
  by either tool verify with the other and give the same bytes.
- Our tool and Catalog read a directory the official Java archive wrote (recorded through our client), print what
  the Java tool prints, and recover the stop position of a recording cut off by kill -9 of the Java archive.
"""
import datetime
import gzip
import io
import os
import shutil
import signal
import subprocess
import time

import pytest

from aeron.archive import AeronArchive, tool
from aeron.archive.catalog import CATALOG_FILE_NAME, Catalog
from aeron.archive.archive_mark_file import ArchiveMarkFile
from tests import procs
from tests.archive.archive_files_support import (
    INITIAL_TERM_ID,
    SESSION_ID,
    STREAM_ID,
    TERM,
    data_frame,
    messages_across_a_term,
    write_recording,
)
from tests.archive.archives import (
    JAVA_OPENS,
    java_classpath,
    start_java_archive,
    stop_archive,
)
from tests.archive.client_suite import STREAM_ID as STREAM
from tests.archive.client_suite import Signals, payloads, record
from tests.support import wait_for

UTC = datetime.timezone.utc


def java_tool(archive_dir, *args, stdin=""):
    cmd = ["java", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Duser.timezone=UTC", *JAVA_OPENS,
           "-cp", java_classpath(), "io.aeron.archive.ArchiveTool", str(archive_dir), *map(str, args)]
    env = dict(procs.client_env(), TZ="UTC")
    return subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=120, env=env, check=False)


def ours(fn, *args, **kwargs):
    out = io.StringIO()
    fn(*args, out=out, **kwargs)
    return out.getvalue()


def without_clock(text):
    """The preamble's second line starts with the time of day of the run."""
    lines = text.split("\n")
    if len(lines) > 1 and "(start: " in lines[1]:
        lines[1] = lines[1][8:]
    return "\n".join(lines)


# -- a directory written by our code ----------------------------------------------------------------------------


def build_our_archive(base, cnc_source):
    archive = base / "ours"
    driver = base / "driver"
    driver.mkdir(parents=True)
    shutil.copy(cnc_source, driver / "cnc.dat")
    mark = ArchiveMarkFile.create(archive, aeron_directory=str(driver), control_channel="aeron:udp?endpoint=x:1",
                                  archive_id=42, epoch_clock=lambda: 1_795_000_000_000)
    mark.error_log.record("first archive error")
    mark.error_log.record("second archive error")
    mark.error_log.record("first archive error")
    mark.signal_terminated()
    mark.close()

    frames = messages_across_a_term(70)
    # recording 1: starts mid-term; a fragmented message (BEGIN, middle, END)
    start1 = 3 * 1024
    frames1 = [(start1, data_frame(start1, INITIAL_TERM_ID, b"A" * 1376, 0x80), 1408),
               (start1 + 1408, data_frame(start1 + 1408, INITIAL_TERM_ID, b"B" * 1376, 0x00), 1408),
               (start1 + 2816, data_frame(start1 + 2816, INITIAL_TERM_ID, b"C" * 100, 0x40), 160)]
    with Catalog(archive) as catalog:
        for rid, start, recording_frames, channel in ((0, 0, frames, "aeron:udp?endpoint=localhost:40123"),
                                                       (1, start1, frames1, "aeron:ipc")):
            assert catalog.add_recording(
                start_position=start, start_timestamp=1_795_000_000_100 + rid, initial_term_id=INITIAL_TERM_ID,
                segment_file_length=TERM, term_buffer_length=TERM, mtu_length=1408, session_id=SESSION_ID,
                stream_id=STREAM_ID, stripped_channel=channel, original_channel=channel + "|alias=x" * rid,
                source_identity="127.0.0.1:5555") == rid
            stop = write_recording(archive, rid, start, recording_frames)
            catalog.recording_stopped(rid, stop, 1_795_000_000_200 + rid)
        # recording 2: an empty one, and recording 3 invalid
        for rid in (2, 3):
            catalog.add_recording(start_position=0, start_timestamp=1, initial_term_id=7, segment_file_length=TERM,
                                  term_buffer_length=TERM, mtu_length=1408, session_id=1, stream_id=2,
                                  stripped_channel="aeron:ipc", original_channel="aeron:ipc",
                                  source_identity="aeron:ipc", stop_position=0, stop_timestamp=2)
        catalog.change_state(3, 0)
    return archive


@pytest.fixture
def our_archive(tmp_path, golden_dir):
    java_classpath()
    cnc = tmp_path / "cnc.dat"
    cnc.write_bytes(gzip.decompress((golden_dir / "cnc" / "c-aeronmd-ipc" / "cnc.dat.gz").read_bytes()))
    return build_our_archive(tmp_path, cnc)


@pytest.mark.parametrize("command, fn", [
    (["describe"], tool.describe), (["describe-all"], tool.describe_all), (["dump"], tool.dump),
])
def test_java_tool_prints_what_ours_prints_on_our_directory(our_archive, command, fn):
    java = java_tool(our_archive, *command)
    assert java.returncode == 0, java.stderr
    assert without_clock(java.stdout) == without_clock(ours(fn, our_archive, tz=UTC))


def test_java_tool_describes_counts_and_verifies_our_directory(our_archive):
    java = java_tool(our_archive, "describe", 1)
    assert java.returncode == 0, java.stderr
    assert java.stdout == ours(tool.describe_recording, our_archive, 1)
    assert java_tool(our_archive, "count-entries").stdout == "3\n" == f"{tool.count_entries(our_archive)}\n"
    assert java_tool(our_archive, "pid").stdout == f"{os.getpid()}\n"
    before = {p.name: p.read_bytes() for p in our_archive.iterdir()}
    java = java_tool(our_archive, "verify", "-a")
    assert java.returncode == 0, java.stdout + java.stderr
    expected = "(recordingId=0) OK\n(recordingId=1) OK\n(recordingId=2) OK\n(recordingId=3) OK\n"
    assert java.stdout == expected
    # nothing to repair: entry 3 has no segment files, so it stays INVALID, and no byte changed
    assert {p.name: p.read_bytes() for p in our_archive.iterdir()} == before
    assert ours(tool.verify, our_archive, all_segments=True) == expected


def test_java_tool_prints_our_error_log(our_archive):
    java = java_tool(our_archive, "errors")
    assert java.returncode == 0, java.stderr
    assert java.stdout == ours(tool.errors, our_archive, tz=UTC)
    assert "2 observations from" in java.stdout and "first archive error" in java.stdout


@pytest.mark.parametrize("name", ["io.aeron.archive.checksum.Crc32", "io.aeron.archive.checksum.Crc32c"])
def test_checksums_written_by_either_tool_verify_with_the_other(our_archive, tmp_path, name):
    theirs_dir = tmp_path / "theirs-checksummed"
    shutil.copytree(our_archive, theirs_dir)
    java = java_tool(theirs_dir, "checksum", name, "-a")
    assert java.returncode == 0 and java.stdout == "", java.stdout + java.stderr
    assert ours(tool.checksum, our_archive, name, all_segments=True) == ""
    for f in sorted(our_archive.glob("*.rec")) + [our_archive / CATALOG_FILE_NAME]:
        assert f.read_bytes() == (theirs_dir / f.name).read_bytes(), f.name
    java = java_tool(our_archive, "verify", "-a", "-checksum", name)
    assert java.stdout.startswith("(recordingId=0) OK\n(recordingId=1) OK\n"), java.stdout
    results = tool.verify(theirs_dir, all_segments=True, checksum=name)
    assert [r.status for r in results[:2]] == ["OK", "OK"]


def test_java_tool_marks_and_compacts_our_catalog(our_archive):
    assert java_tool(our_archive, "mark-invalid", 0).stdout == "(recordingId=0) changed state to INVALID\n"
    assert tool.count_entries(our_archive) == 2
    java = java_tool(our_archive, "compact", stdin="y\n")
    assert "Compaction result: deleted 2 records and reclaimed " in java.stdout, java.stdout
    with Catalog(our_archive, read_only=True) as catalog:
        assert [r.recording_id for r in catalog.entries()] == [1, 2] and catalog.next_recording_id == 4
    assert not list(our_archive.glob("0-*.rec"))


# -- a directory written by the Java archive ---------------------------------------------------------------------


@pytest.fixture
def java_base(tmp_path):
    java_classpath()
    base = tmp_path.parent / f"{tmp_path.name}-jarc"
    base.mkdir()
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def java_archive(java_base):
    handle = start_java_archive(java_base, "files", archive_id=77, **{"aeron.archive.segment.file.length": "65536"})
    try:
        yield handle
    finally:
        if handle.proc is not None:
            stop_archive(handle)


def connect(handle):
    aeron = handle.connect_aeron()
    signals = Signals()
    ctx = handle.context(aeron=aeron)
    ctx.recording_signal_consumer = signals
    return aeron, AeronArchive.connect(ctx), signals


def test_our_tool_reads_what_the_java_archive_wrote(java_archive):
    aeron, client, signals = connect(java_archive)
    try:
        messages = payloads(300, 500) + [bytes(range(256)) * 20]      # 150 KiB over 3 segments, one fragmented
        rid, stop, publication = record(client, aeron, signals, messages)
        client.stop_recording(publication.channel, STREAM)
        wait_for(lambda: client.get_stop_position(rid) == stop, 20, invoke=lambda: time.sleep(0.01),
                 what="stop position")
        listed = []
        client.list_recording(rid, listed.append)
        publication.close()
    finally:
        client.close()
        aeron.close()
    stop_archive(java_archive)
    archive_dir = java_archive.archive_dir
    with Catalog(archive_dir, read_only=True) as catalog:
        d = catalog.recording(rid)
    expected = listed[0]
    for field in ("recording_id", "start_position", "stop_position", "initial_term_id", "segment_file_length",
                  "term_buffer_length", "mtu_length", "session_id", "stream_id", "stripped_channel",
                  "original_channel", "source_identity", "start_timestamp", "stop_timestamp"):
        assert getattr(d, field) == getattr(expected, field), field
    assert len(list(os.scandir(archive_dir))) >= 3 + 2
    for command, fn in ((["describe"], tool.describe), (["describe-all"], tool.describe_all),
                        (["dump"], tool.dump)):
        java = java_tool(archive_dir, *command)
        assert java.returncode == 0, java.stderr
        assert without_clock(ours(fn, archive_dir, tz=UTC)) == without_clock(java.stdout), command
    assert ours(tool.verify, archive_dir, all_segments=True) == java_tool(archive_dir, "verify", "-a").stdout
    frames = tool.dump(archive_dir)[rid]
    assert sum(1 for f in frames if f.frame_type == 1 and f.flags & 0x80) == len(messages)
    assert any(f.frame_type == 0 for f in frames)                    # a term ended in padding


def test_stop_position_of_a_java_recording_cut_off_by_kill_9_is_recovered(java_archive):
    aeron, client, signals = connect(java_archive)
    try:
        rid, stop, _ = record(client, aeron, signals, payloads(200, 700))
        recorded = client.get_recording_position(rid)
        assert recorded == stop
        java_archive.proc.send_signal(signal.SIGKILL)
        java_archive.proc.wait(timeout=20)
        procs.stop(java_archive.proc)
        java_archive.proc = None
    finally:
        client.close()
        aeron.close()
    archive_dir = java_archive.archive_dir
    with Catalog(archive_dir, read_only=True) as catalog:
        assert catalog.stop_position(rid) == -1
    with Catalog(archive_dir) as catalog:             # the archive's start-up recovery
        assert catalog.stop_position(rid) == stop
    java = java_tool(archive_dir, "describe", rid)
    assert f"|stopPosition={stop}|" in java.stdout, java.stdout + java.stderr
    assert java_tool(archive_dir, "verify", "-a").stdout == ours(tool.verify, archive_dir, all_segments=True)
