# SPDX-License-Identifier: Apache-2.0
"""ArchiveTool: on the golden Java directory our describe, describe-all, describe <id>, count-entries, pid, dump and
verify -a print exactly what the Java tool printed (only the directory path and the current time differ); the
repairing commands (verify, checksum, mark-valid/invalid, delete-orphaned-segments, compact) on damaged copies."""
import datetime
import gzip
import io
import os
import struct
import subprocess
import sys

import pytest

from aeron.archive import tool
from aeron.archive.catalog import CATALOG_FILE_NAME, Catalog, RecordingState
from aeron.archive.checksums import CRC32
from aeron.archive.archive_mark_file import ArchiveMarkFile
from tests.archive.archive_files_support import expected_text, unpack_golden_archive
from tests.conftest import PROJECT_ROOT

UTC = datetime.timezone.utc
GOLDEN_NOW_MS = 1795335426000          # 2026-11-22 08:17:06 UTC, when the golden outputs were made
GOLDEN_COPY = "/dev/shm/golden-archive-copy"


@pytest.fixture
def archive(golden_dir, tmp_path):
    return unpack_golden_archive(golden_dir, tmp_path / "archive")


def run(fn, *args, **kwargs):
    out = io.StringIO()
    result = fn(*args, out=out, **kwargs)
    return result, out.getvalue()


def as_golden(text, archive):
    return text.replace(str(archive), GOLDEN_COPY)


@pytest.mark.parametrize("name, fn", [("describe", tool.describe), ("describe-all", tool.describe_all),
                                      ("dump", tool.dump)])
def test_golden_outputs_with_preamble(archive, golden_dir, name, fn):
    result, text = run(fn, archive, tz=UTC, now_ms=GOLDEN_NOW_MS)
    assert as_golden(text, archive) == expected_text(golden_dir, f"archivetool-{name}.txt")
    if name == "dump":
        assert [len(frames) for frames in result.values()] == [5, 4]
        assert [f.flags for f in result[1]] == [0x80, 0x00, 0x00, 0x40]
    else:
        assert [d.recording_id for d in result] == [0, 1]


def test_golden_describe_one_count_pid_and_verify(archive, golden_dir):
    descriptor, text = run(tool.describe_recording, archive, 1)
    assert text == expected_text(golden_dir, "archivetool-describe-1.txt") and descriptor.stop_position == 5152
    assert f"{tool.count_entries(archive)}\n" == expected_text(golden_dir, "archivetool-count-entries.txt")
    assert f"{tool.pid(archive)}\n" == expected_text(golden_dir, "archivetool-pid.txt")
    results, text = run(tool.verify, archive, all_segments=True)
    assert text == expected_text(golden_dir, "archivetool-verify-a.txt") and all(r.ok for r in results)
    # verify changed nothing in a healthy directory
    raw = gzip.decompress((golden_dir / "archive" / "archive-dir" / "archive.catalog.gz").read_bytes())
    assert (archive / CATALOG_FILE_NAME).read_bytes() == raw
    assert tool.max_entries(archive) == 1024 and tool.capacity(archive) == 1048576


def cli(*args, stdin=""):
    env = dict(os.environ, TZ="UTC")
    return subprocess.run([sys.executable, "-m", "aeron.archive.tool", *map(str, args)], input=stdin,
                          capture_output=True, text=True, timeout=60, env=env, cwd=PROJECT_ROOT, check=False)


def test_command_line(archive, golden_dir):
    describe = cli(archive, "describe")
    assert describe.returncode == 0
    lines, expected = describe.stdout.splitlines(), expected_text(golden_dir, "archivetool-describe.txt").splitlines()
    assert as_golden(lines[0], archive) == expected[0]
    assert lines[1][8:] == expected[1][8:] and lines[2:] == expected[2:]   # the time of day varies
    assert cli(archive, "verify", "-a").stdout == expected_text(golden_dir, "archivetool-verify-a.txt")
    assert cli(archive, "pid").stdout == "23298\n"
    assert cli(archive, "max-entries").stdout == "max-entries is deprecated please use capacity.\n"
    bad = cli(archive, "nonsense")
    assert bad.returncode == 255 and "ERR: Invalid command" in bad.stderr and "Usage:" in bad.stdout
    missing = cli(archive, "describe", "7")
    assert missing.returncode == 1 and "no recording found with recordingId: 7" in missing.stderr
    assert cli(archive / "nope", "describe").returncode == 255


# -- verify and repairs ----------------------------------------------------------------------------------------------


def patch_catalog(archive, offset, fmt, value):
    raw = bytearray((archive / CATALOG_FILE_NAME).read_bytes())
    struct.pack_into(fmt, raw, offset, value)
    (archive / CATALOG_FILE_NAME).write_bytes(raw)


ENTRY1 = 32 + 256          # the second entry's offset in the golden catalog


def test_verify_recovers_a_lost_stop_position(archive):
    patch_catalog(archive, ENTRY1 + 32 + 48, "<q", -1)
    results, text = run(tool.verify, archive, 1, epoch_clock=lambda: 777)
    assert text == "(recordingId=1) OK\n" and results[0].ok
    with Catalog(archive, read_only=True) as catalog:
        r = catalog.recording(1)
        assert (r.stop_position, r.stop_timestamp) == (5152, 777)


def test_verify_marks_broken_entries_invalid_and_revives_them(archive):
    seg = bytearray((archive / "1-0.rec").read_bytes())
    struct.pack_into("<i", seg, 1408 + 16, 999)            # second frame: wrong stream id
    (archive / "1-0.rec").write_bytes(seg)
    results, text = run(tool.verify, archive)
    assert [r.status for r in results] == ["OK", "ERR"]
    assert text.splitlines()[1] == (f"(recordingId=1, file={archive / '1-0.rec'}) ERR: fragment termOffset=1408 "
                                    f"(expected=1408), termId=-1684349351 (expected=-1684349351), streamId=999 "
                                    f"(expected=1002)")
    assert tool.count_entries(archive) == 1
    assert cli(archive, "verify").returncode == 255
    struct.pack_into("<i", seg, 1408 + 16, 1002)
    (archive / "1-0.rec").write_bytes(seg)
    results, _ = run(tool.verify, archive, 1)
    assert results[0].ok and tool.count_entries(archive) == 2


@pytest.mark.parametrize("start, stop, message", [
    (-32, 320, "Negative startPosition=-32"),
    (16, 320, "Non-aligned startPosition=16"),
    (0, 300, "Non-aligned stopPosition=300"),
    (64, 32, "Invariant violation stopPosition=32 is before startPosition=64"),
    (0, 65536 * 2, ("Invariant violation: startPosition=0 and/or stopPosition=131072 exceed max segment file "
                    "position=65535")),
])
def test_verify_position_invariants(archive, start, stop, message):
    patch_catalog(archive, 32 + 32 + 40, "<q", start)
    patch_catalog(archive, 32 + 32 + 48, "<q", stop)
    results, text = run(tool.verify, archive, 0)
    assert text == f"(recordingId=0) ERR: {message}\n" and not results[0].ok
    with Catalog(archive, read_only=True, strict=False) as catalog:
        assert catalog.recording(0, any_state=True).state == RecordingState.INVALID


def test_checksum_then_verify_with_checksum(archive):
    results, text = run(tool.verify, archive, checksum="io.aeron.archive.checksum.Crc32")
    assert [r.status for r in results] == ["ERR", "ERR"]     # no checksums recorded yet
    assert "checksum failed recorded=-1330240285" in text or "invalid Catalog checksum" in text
    run(tool.mark_valid, archive, 0)
    run(tool.mark_valid, archive, 1)
    written, _ = run(tool.checksum, archive, "CRC-32", all_segments=True)
    assert written == 9
    with Catalog(archive, read_only=True) as catalog:
        assert catalog.descriptor_header(1).checksum == CRC32(catalog.entry_bytes(1)[32:])
    results, text = run(tool.verify, archive, all_segments=True, checksum="CRC-32")
    assert text == "(recordingId=0) OK\n(recordingId=1) OK\n"
    seg = bytearray((archive / "0-0.rec").read_bytes())
    seg[64 + 40] ^= 0x20
    (archive / "0-0.rec").write_bytes(seg)
    results, text = run(tool.verify, archive, 0, checksum="CRC-32")
    assert not results[0].ok and "ERR: checksum failed recorded=" in text


def test_torn_last_fragment_is_truncated_when_confirmed(archive):
    seg = bytearray(65536)
    for offset in range(0, 4096 - 64, 64):
        struct.pack_into("<iBBhiiii", seg, offset, 64, 0, 0xC0, 1, offset, -1330240283, 1002, -1684349351)
    struct.pack_into("<iBBhiiii", seg, 4096 - 64, 1000, 0, 0xC0, 1, 4096 - 64, -1330240283, 1002, -1684349351)
    (archive / "1-0.rec").write_bytes(bytes(seg))
    patch_catalog(archive, ENTRY1 + 32 + 48, "<q", -1)
    asked = []
    results, text = run(tool.verify, archive, 1, truncate_on_page_straddle=lambda p: asked.append(p) or False)
    assert not results[0].ok and "Found potentially incomplete last fragment" in text and asked
    run(tool.mark_valid, archive, 1)
    patch_catalog(archive, ENTRY1 + 32 + 48, "<q", -1)
    results, text = run(tool.verify, archive, 1, truncate_on_page_straddle=True)
    assert results[0].ok
    data = (archive / "1-0.rec").read_bytes()
    assert len(data) == 65536 and data[4096 - 64:4096 - 60] == b"\0\0\0\0"
    with Catalog(archive, read_only=True) as catalog:
        assert catalog.stop_position(1) == 4096 - 64


def test_mark_valid_and_invalid(archive):
    changed, text = run(tool.mark_invalid, archive, 1)
    assert changed and text == "(recordingId=1) changed state to INVALID\n" and tool.count_entries(archive) == 1
    assert run(tool.mark_invalid, archive, 1) == (False, "")
    assert run(tool.mark_valid, archive, 1) == (True, "(recordingId=1) changed state to VALID\n")
    with Catalog(archive) as catalog:
        catalog.change_state(0, RecordingState.DELETED)
    with pytest.raises(tool.ArchiveToolError, match=r"state transition DELETED -> VALID is not allowed"):
        tool.mark_valid(archive, 0)
    with pytest.raises(tool.ArchiveToolError, match="no recording found with recordingId: 9"):
        tool.mark_invalid(archive, 9)
    _, text = run(tool.verify, archive)
    assert text.splitlines()[0] == "(recordingId=0) skipping: DELETED"


def test_delete_orphaned_segments(archive):
    for name in ("0-65536.rec", "1-131072.rec", "0-x.rec", "7-0.rec"):
        (archive / name).write_bytes(b"")
    deleted, _ = run(tool.delete_orphaned_segments, archive, 0)
    assert sorted(deleted) == ["0-65536.rec", "0-x.rec"]
    assert cli(archive, "delete-orphaned-segments", stdin="y\n").returncode == 0
    assert sorted(p.name for p in archive.glob("*.rec")) == ["0-0.rec", "1-0.rec", "7-0.rec"]
    with pytest.raises(tool.ArchiveToolError):
        tool.delete_orphaned_segments(archive, 5)


def test_compact_drops_non_valid_entries_and_their_files(archive):
    run(tool.mark_invalid, archive, 0)
    (deleted, reclaimed), text = run(tool.compact, archive)
    assert (deleted, reclaimed) == (1, 256)
    assert text == "Compaction result: deleted 1 records and reclaimed 256 bytes\n"
    assert not (archive / "0-0.rec").exists() and not (archive / (CATALOG_FILE_NAME + ".compact")).exists()
    assert os.path.getsize(archive / CATALOG_FILE_NAME) == 32 + 192
    with Catalog(archive, read_only=True) as catalog:
        assert [r.recording_id for r in catalog.entries()] == [1] and catalog.next_recording_id == 2
    with Catalog(archive) as catalog:                    # the archive re-opens it at its capacity
        assert catalog.capacity == 1024 * 1024 and catalog.recording(1).stop_position == 5152


def test_dump_fragment_limit_asks_to_continue(archive):
    asked = []
    frames, text = run(tool.dump, archive, 2, confirm=lambda n: asked.append(n) or False, tz=UTC)
    assert [len(f) for f in frames.values()] == [2, 2] and asked == [2, 2]
    assert "192 bytes of (from 320) remaining in recording id 0" in text


def test_errors_of_archive_and_driver(golden_dir, tmp_path):
    driver = tmp_path / "driver"
    driver.mkdir()
    (driver / "cnc.dat").write_bytes(gzip.decompress(
        (golden_dir / "cnc" / "c-aeronmd-ipc" / "cnc.dat.gz").read_bytes()))
    mark = ArchiveMarkFile.create(tmp_path / "archive", aeron_directory=str(driver))
    try:
        mark.signal_ready()
        mark.error_log.record("archive went wrong")
        (archive_records, driver_records), text = run(tool.errors, tmp_path / "archive", tz=UTC)
    finally:
        mark.close()
    assert [r.text for r in archive_records] == ["archive went wrong"]
    lines = text.splitlines()
    assert lines[0] == "Archive error log:" and lines[1] == ""
    assert lines[2].startswith("1 observations from ") and lines[2].endswith("+0000 for:")
    assert lines[3:7] == ["archive went wrong", "", "1 distinct errors observed.", ""]
    assert lines[7] == f"Aeron driver error log (directory: {driver}):"
    assert lines[-1] == f"{len(driver_records)} distinct errors observed" + ("." if driver_records else "")


def test_capacity_version_and_prompts(archive):
    assert tool.capacity(archive, 2 * 1024 * 1024) == 2 * 1024 * 1024 == os.path.getsize(archive / CATALOG_FILE_NAME)
    assert tool.capacity(archive) == 2 * 1024 * 1024 and tool.count_entries(archive) == 2
    out = io.StringIO()
    assert tool.main(["--version"], out=out) == 0 and out.getvalue().startswith("aeron-py ")
    dump = cli(archive, "dump", 3, stdin="n\nn\n")
    assert dump.returncode == 0
    assert dump.stdout.count("Specified frame limit 3 reached. Continue? (y/n): ") == 2
    assert "128 bytes of (from 320) remaining in recording id 0" in dump.stdout
    compact = cli(archive, "compact", stdin="n\n")
    assert "Compaction result" not in compact.stdout and tool.count_entries(archive) == 2
