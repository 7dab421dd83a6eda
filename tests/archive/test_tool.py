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


def torn_last_fragment(archive):
    """Recording 1's segment ends in a frame straddling a page whose rest is zeros, its stop position lost."""
    seg = bytearray(65536)
    for offset in range(0, 4096 - 64, 64):
        struct.pack_into("<iBBhiiii", seg, offset, 64, 0, 0xC0, 1, offset, -1330240283, 1002, -1684349351)
    struct.pack_into("<iBBhiiii", seg, 4096 - 64, 1000, 0, 0xC0, 1, 4096 - 64, -1330240283, 1002, -1684349351)
    (archive / "1-0.rec").write_bytes(bytes(seg))
    patch_catalog(archive, ENTRY1 + 32 + 48, "<q", -1)


def test_torn_last_fragment_is_truncated_when_confirmed(archive):
    torn_last_fragment(archive)
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


# -- prompts: only an explicit yes does anything destructive ---------------------------------------------------------

CLOSED = "closed"           # fd 0 closed: Python's sys.stdin is None
EOF_ = "eof"                # /dev/null: the end of input at the first read


def cli_with(archive, *args, stdin):
    env = dict(os.environ, TZ="UTC")
    command = [sys.executable, "-m", "aeron.archive.tool", str(archive), *map(str, args)]
    if stdin == CLOSED:
        return subprocess.run(["sh", "-c", 'exec "$@" 0<&-', "sh", *command], capture_output=True, text=True,
                              timeout=60, env=env, cwd=PROJECT_ROOT, check=False)
    if stdin == EOF_:
        return subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, env=env,
                              cwd=PROJECT_ROOT, check=False)
    return subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=60, env=env,
                          cwd=PROJECT_ROOT, check=False)


def snapshot(archive):
    return {p.name: (p.stat().st_size, p.read_bytes()) for p in sorted(archive.iterdir()) if p.is_file()}


def prepare_compact(archive):
    run(tool.mark_invalid, archive, 0)


def prepare_orphans(archive):
    for name in ("0-65536.rec", "1-131072.rec"):
        (archive / name).write_bytes(b"x")


def compacted(archive):
    return not (archive / "0-0.rec").exists() and tool.count_entries(archive) == 1


def orphans_deleted(archive):
    return not (archive / "0-65536.rec").exists() and not (archive / "1-131072.rec").exists()


def orphans_of_0_deleted(archive):
    return not (archive / "0-65536.rec").exists() and (archive / "1-131072.rec").exists()


def truncated(archive):
    return (archive / "1-0.rec").read_bytes()[4096 - 64:4096 - 60] == b"\0\0\0\0"


DESTRUCTIVE = {
    "compact": (("compact",), prepare_compact, compacted),
    "delete-orphaned-segments": (("delete-orphaned-segments",), prepare_orphans, orphans_deleted),
    "delete-orphaned-segments-id": (("delete-orphaned-segments", 0), prepare_orphans, orphans_of_0_deleted),
    "verify-truncate": (("verify", 1), torn_last_fragment, truncated),
}


@pytest.mark.parametrize("stdin", [CLOSED, EOF_])
@pytest.mark.parametrize("name", sorted(DESTRUCTIVE))
def test_destructive_command_without_an_answer_does_nothing_and_fails(archive, name, stdin):
    args, prepare, _ = DESTRUCTIVE[name]
    prepare(archive)
    before = snapshot(archive)
    result = cli_with(archive, *args, stdin=stdin)
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "(y/n)" in result.stdout or "(n) to do nothing" in result.stdout
    assert "NoAnswerError: no answer to" in result.stderr and "(end of input): nothing was done" in result.stderr
    assert snapshot(archive) == before


@pytest.mark.parametrize("answer, yes", [("n\n", False), ("no\n", False), ("\n", False), ("yy\n", False),
                                         ("N", False), ("y\n", True), ("Y\n", True), ("yes\n", True),
                                         (" YES \n", True), ("y", True)])
@pytest.mark.parametrize("name", sorted(DESTRUCTIVE))
def test_destructive_command_is_done_only_on_yes(archive, name, answer, yes):
    args, prepare, done = DESTRUCTIVE[name]
    prepare(archive)
    result = cli_with(archive, *args, stdin=answer)
    if name == "verify-truncate" and not yes:     # as Aeron: not truncated, so the entry is not proven: INVALID
        assert result.returncode == 255 and "Found potentially incomplete last fragment" in result.stdout
        with Catalog(archive, read_only=True, strict=False) as catalog:
            assert catalog.recording(1, any_state=True).state == RecordingState.INVALID
    else:
        assert result.returncode == 0, (result.stdout, result.stderr)
    assert done(archive) is yes


@pytest.mark.parametrize("stdin", [CLOSED, EOF_])
def test_dump_stops_at_its_prompt_without_an_answer(archive, stdin):
    result = cli_with(archive, "dump", 2, stdin=stdin)
    assert result.returncode == 1
    assert result.stdout.count("Specified frame limit 2 reached. Continue? (y/n): ") == 1
    assert "Recording 1" not in result.stdout and "NoAnswerError" in result.stderr


def test_dump_goes_on_only_on_yes(archive):
    result = cli_with(archive, "dump", 2, stdin="y\n\nn\n")
    assert result.returncode == 0
    # recording 0 went on after the first prompt, then stopped at the empty answer; recording 1 was asked too
    assert result.stdout.count("Continue? (y/n): ") == 3 and "Recording 1" in result.stdout


# -- a segment that lost data ----------------------------------------------------------------------------------------


def state_of(archive, recording_id):
    with Catalog(archive, read_only=True, strict=False) as catalog:
        d = catalog.recording(recording_id, any_state=True)
        return d.state, d.stop_position


def test_verify_flags_a_segment_cut_inside_a_frame_as_java_does(archive):
    os.truncate(archive / "1-0.rec", 1000)          # frames of 1408 bytes: the cut is inside the first
    results, text = run(tool.verify, archive, 1)
    assert text == f"(recordingId=1, file={archive / '1-0.rec'}) ERR: failed to read 1376 byte(s) of data at offset 32\n"
    assert not results[0].ok and state_of(archive, 1) == (RecordingState.INVALID, 5152)
    assert cli(archive, "verify").returncode == 255


@pytest.mark.parametrize("damage", ["cut between frames", "hole of zeros"])
def test_verify_flags_files_that_end_before_the_stop_position(archive, damage):
    if damage == "cut between frames":
        os.truncate(archive / "1-0.rec", 2816)
    else:
        seg = bytearray((archive / "1-0.rec").read_bytes())
        seg[2816:4224] = bytes(1408)
        (archive / "1-0.rec").write_bytes(seg)
    results, text = run(tool.verify, archive, 1)
    assert text == (f"(recordingId=1, file={archive / '1-0.rec'}) ERR: recorded frames end at offset 2816 "
                    f"(position=2816), before stopPosition=5152\n")
    # reported and INVALID, its stop position kept: nothing is shrunk to hide the loss
    assert not results[0].ok and state_of(archive, 1) == (RecordingState.INVALID, 5152)
