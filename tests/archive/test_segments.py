# SPDX-License-Identifier: Apache-2.0
"""Segment file names, position arithmetic (segments aligned to the start term's base), listing, frame walks."""
import gzip
import struct
import zlib

import pytest

from aeron._core import segment_scanner as k
from aeron._core.segment_scanner import scan_frames
from aeron.archive import segments
from aeron.archive.checksums import CRC32, CRC32C, new_checksum
from aeron.common.errors import CorruptFileError, InvalidArgumentError
from tests.archive.archive_files_support import (
    INITIAL_TERM_ID,
    STREAM_ID,
    messages_across_a_term,
    unpack_golden_archive,
    write_recording,
)

TERM = 64 * 1024
SEGMENT = 4 * TERM


def test_file_names_round_trip():
    assert segments.segment_file_name(7, 134217728) == "7-134217728.rec"
    assert segments.parse_segment_file_name("7-134217728.rec") == (7, 134217728)
    for bad in ("7-.rec", "-5.rec", "7-5.rec.del", "x-5.rec", "7-5", "7--5.rec", "7-+5.rec", "archive.catalog"):
        assert segments.parse_segment_file_name(bad) is None, bad


def test_segment_base_is_aligned_to_the_start_term_base():
    start = 3 * TERM + 96                      # mid-term 3
    assert segments.start_term_base(start, TERM) == 3 * TERM
    assert segments.segment_file_base_position(start, start, TERM, SEGMENT) == 3 * TERM
    assert segments.segment_file_base_position(start, 7 * TERM - 32, TERM, SEGMENT) == 3 * TERM
    assert segments.segment_file_base_position(start, 7 * TERM, TERM, SEGMENT) == 7 * TERM
    assert segments.segment_offset(start, 7 * TERM + 64, TERM, SEGMENT) == 64
    assert segments.segment_offset(start, start, TERM, SEGMENT) == 96
    with pytest.raises(InvalidArgumentError):
        segments.segment_file_base_position(0, 0, 3000, SEGMENT)


def test_term_id_and_position_wrap_as_int32():
    assert segments.term_id(5 * TERM + 10, 2**31 - 2, TERM) == -(2**31) + 3
    assert segments.position_of(-(2**31) + 3, 10, 2**31 - 2, TERM) == 5 * TERM + 10
    assert segments.term_offset(5 * TERM + 10, TERM) == 10


def test_listing_sorts_by_base_position(tmp_path):
    for name in ("3-131072.rec", "3-0.rec", "3-65536.rec", "33-0.rec", "3-0.rec.del", "archive.catalog"):
        (tmp_path / name).write_bytes(b"")
    assert segments.list_segment_files(tmp_path, 3) == ["3-0.rec", "3-65536.rec", "3-131072.rec"]
    assert segments.index_segment_files(tmp_path) == {
        3: [(0, "3-0.rec"), (65536, "3-65536.rec"), (131072, "3-131072.rec")], 33: [(0, "33-0.rec")]}


def test_scan_frames_over_the_golden_segments(golden_dir, tmp_path):
    archive = unpack_golden_archive(golden_dir, tmp_path)
    data0 = (archive / "0-0.rec").read_bytes()
    data1 = (archive / "1-0.rec").read_bytes()
    assert scan_frames(data0, 0, len(data0)) == (320, 64)          # 5 x "Hello World! N"
    assert scan_frames(data1, 0, len(data1)) == (5152, 928)        # 3 x 1408 + a 928-byte last fragment
    assert scan_frames(data1, 1408, 4224) == (4224, 1408)
    assert scan_frames(data1, 0, 1000) == (0, 0)                   # a frame running past the limit is not whole
    assert segments.compute_stop_position(archive, [(0, "1-0.rec")], 0, TERM, TERM) == 5152
    with pytest.raises(InvalidArgumentError):
        scan_frames(data1, 5, len(data1))


def test_golden_segments_are_what_the_readme_says(golden_dir):
    data = gzip.decompress((golden_dir / "archive" / "archive-dir" / "0-0.rec.gz").read_bytes())
    assert len(data) == 65536
    assert [data[off + 32:off + 46] for off in range(0, 320, 64)] == [b"Hello World! %d" % i for i in range(5)]


def test_checksums_match_java_crc32_and_crc32c():
    for data in (b"", b"a", b"123456789", bytes(range(256)) * 37):
        expected = zlib.crc32(data)
        assert CRC32(data) == (expected - (1 << 32) if expected & 0x80000000 else expected)
    assert CRC32C(b"123456789") & 0xFFFFFFFF == 0xE3069283          # the CRC-32C check value
    assert CRC32C.compute(b"xx123456789yy", 2, 9) == CRC32C(b"123456789")
    assert new_checksum("io.aeron.archive.checksum.Crc32") is CRC32 and new_checksum(" CRC-32C ") is CRC32C
    with pytest.raises(InvalidArgumentError):
        new_checksum("com.example.Nope")
    with pytest.raises(InvalidArgumentError):
        new_checksum("")


def test_verify_frames_checks_headers_and_checksums(golden_dir, tmp_path):
    archive = unpack_golden_archive(golden_dir, tmp_path)
    data = bytearray((archive / "1-0.rec").read_bytes())
    initial_term_id, stream_id = -1684349351, 1002
    assert k.verify_frames(data, 0, len(data), 0, TERM, initial_term_id, stream_id) == (k.VERIFY_OK, (5152,))
    assert k.verify_frames(data, 0, len(data), 0, TERM, initial_term_id, 1001)[0] == k.VERIFY_BAD_HEADER
    code, details = k.verify_frames(data, 0, len(data), 0, TERM, initial_term_id, stream_id, k.CHECKSUM_CRC32)
    assert code == k.VERIFY_BAD_CHECKSUM and details[0] == 0 and details[1] == -1330240283
    assert k.apply_checksums(data, 0, k.CHECKSUM_CRC32) == (4, 5152, 0)
    assert k.verify_frames(data, 0, len(data), 0, TERM, initial_term_id, stream_id, k.CHECKSUM_CRC32) == \
        (k.VERIFY_OK, (5152,))
    assert int.from_bytes(data[12:16], "little", signed=True) == CRC32.compute(data, 32, 1376)
    data[40] ^= 1
    assert k.verify_frames(data, 0, len(data), 0, TERM, initial_term_id, stream_id, k.CHECKSUM_CRC32)[0] == \
        k.VERIFY_BAD_CHECKSUM
    # a frame whose data runs past the end of a truncated file; a header cut short
    assert k.verify_frames(bytes(data[:1000]), 0, 1000, 0, TERM, initial_term_id, stream_id)[0] == \
        k.VERIFY_DATA_UNREADABLE
    assert k.verify_frames(bytes(data[:1408 + 10]), 0, 1418, 0, TERM, initial_term_id, stream_id) == \
        (k.VERIFY_HEADER_UNREADABLE, (1408,))


GOLDEN_1 = dict(recording_id=1, start_position=0, stop_position=5152, initial_term_id=-1684349351,  # noqa: C408
                term_length=TERM, segment_file_length=TERM, stream_id=1002)


def test_validate_recording_files_accepts_whole_recordings(golden_dir, tmp_path):
    archive = unpack_golden_archive(golden_dir, tmp_path)
    assert segments.validate_recording_files(archive, **GOLDEN_1) == 5152
    assert segments.validate_recording_files(archive, 0, 0, 320, 606839151, TERM, TERM, 1001) == 320
    # across a term's padding into a second segment file
    stop = write_recording(tmp_path, 5, 0, messages_across_a_term(70))
    assert stop > TERM and len(segments.list_segment_files(tmp_path, 5)) == 2
    assert segments.validate_recording_files(tmp_path, 5, 0, stop, INITIAL_TERM_ID, TERM, TERM, STREAM_ID) == stop
    assert segments.validate_recording_files(tmp_path, 5, 2048, 4096, INITIAL_TERM_ID, TERM, TERM, STREAM_ID) == 4096
    assert segments.validate_recording_files(tmp_path, 5, 64, 64, INITIAL_TERM_ID, TERM, TERM, STREAM_ID) == 64


def test_validate_recording_files_reports_path_and_offset(golden_dir, tmp_path):
    archive = unpack_golden_archive(golden_dir, tmp_path)
    path = archive / "1-0.rec"
    data = path.read_bytes()
    path.write_bytes(data[:2000])                                   # truncated inside the second frame
    with pytest.raises(CorruptFileError, match="truncated segment file") as err:
        segments.validate_recording_files(archive, **GOLDEN_1)
    assert err.value.offset == 2000 and err.value.path == str(path)
    path.write_bytes(data[:1408] + bytes(len(data) - 1408))          # the data ends before the stop position
    with pytest.raises(CorruptFileError, match="end at offset 1408") as err:
        segments.validate_recording_files(archive, **GOLDEN_1)
    flipped = bytearray(data)
    struct.pack_into("<i", flipped, 2816 + 8, 7)                    # third frame: wrong term offset
    path.write_bytes(bytes(flipped))
    with pytest.raises(CorruptFileError, match="termOffset=7") as err:
        segments.validate_recording_files(archive, **GOLDEN_1)
    assert err.value.offset == 2816
    path.write_bytes(data)
    with pytest.raises(CorruptFileError, match="runs past the stop position"):
        segments.validate_recording_files(archive, **dict(GOLDEN_1, stop_position=5152 - 64))
    with pytest.raises(CorruptFileError, match="checksum"):
        segments.validate_recording_files(archive, **GOLDEN_1, checksum=CRC32)
    path.unlink()
    with pytest.raises(CorruptFileError, match="missing segment file") as err:
        segments.validate_recording_files(archive, **GOLDEN_1)
    assert err.value.path == str(path)


def test_crc32c_instruction_and_table_agree():
    # on an SSE4.2 CPU checksum() uses the crc32 instruction; the table version is the reference either way
    data = bytes(range(256)) * 41 + b"tail"
    for start in range(24):
        for length in (0, 1, 7, 8, 9, 63, 64, 65, 1000):
            piece = data[start:start + length]
            assert CRC32C(piece) == k._crc32c_table(piece), (start, length)
    assert isinstance(k.crc32c_in_hardware(), bool)
