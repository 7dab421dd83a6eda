# SPDX-License-Identifier: Apache-2.0
"""The archive's one checksum kernel (aeron_crc.h through crc.pxd), as recording (archive_io.frame_checksum, the
value SegmentWriter stores), verify (segment_scanner.checksum / verify_frames) and the CRC-32C table path reach it:
the check values of both CRCs, java.util.zip.CRC32 (zlib's crc32 is the same function), and a byte-at-a-time
reference in Python (the algorithm the recorder used before the kernel was shared) on random data at every short
length and misalignment."""
import random
import zlib

import pytest

from aeron._core import archive_io, segment_scanner
from aeron._core.segment_scanner import CHECKSUM_CRC32, CHECKSUM_CRC32C, checksum
from aeron.common.errors import InvalidArgumentError

from .framing import HDR_TYPE_PAD, align, write_frame


def _table(polynomial):
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ polynomial if c & 1 else c >> 1
        table.append(c)
    return table


_TABLES = {CHECKSUM_CRC32: _table(0xEDB88320), CHECKSUM_CRC32C: _table(0x82F63B78)}


def reference(kind, data):
    """Reflected CRC, all-ones start and end, byte at a time, as a signed int32 (Java's ``(int)`` of the CRC)."""
    table = _TABLES[kind]
    c = 0xFFFFFFFF
    for b in data:
        c = table[(c ^ b) & 0xFF] ^ (c >> 8)
    c ^= 0xFFFFFFFF
    return c - (1 << 32) if c & 0x80000000 else c


def signed(value):
    return value - (1 << 32) if value & 0x80000000 else value


def test_check_values():
    assert checksum(CHECKSUM_CRC32, b"123456789") == signed(0xCBF43926)
    assert checksum(CHECKSUM_CRC32C, b"123456789") == signed(0xE3069283)
    assert checksum(CHECKSUM_CRC32, b"") == 0 and checksum(CHECKSUM_CRC32C, b"") == 0
    # RFC 3720 (iSCSI) B.4, CRC-32C of 32-byte patterns
    assert checksum(CHECKSUM_CRC32C, bytes(32)) == signed(0x8A9136AA)
    assert checksum(CHECKSUM_CRC32C, b"\xff" * 32) == signed(0x62A8AB43)
    assert checksum(CHECKSUM_CRC32C, bytes(range(32))) == signed(0x46DD794E)
    assert checksum(CHECKSUM_CRC32C, bytes(range(31, -1, -1))) == signed(0x113FDB5C)
    assert segment_scanner._crc32c_table(b"123456789") == signed(0xE3069283)


def test_every_short_length_and_misalignment_matches_the_references():
    rng = random.Random(20240529)
    data = bytes(rng.getrandbits(8) for _ in range(300))
    for start in range(8):
        for length in range(0, 300 - start, 7 if start else 1):
            piece = data[start:start + length]
            expected_crc32 = signed(zlib.crc32(piece))
            assert checksum(CHECKSUM_CRC32, data, start, length) == expected_crc32, (start, length)
            assert reference(CHECKSUM_CRC32, piece) == expected_crc32
            expected = reference(CHECKSUM_CRC32C, piece)
            assert checksum(CHECKSUM_CRC32C, data, start, length) == expected, (start, length)
            assert segment_scanner._crc32c_table(piece) == expected, (start, length)


def test_long_random_buffers():
    rng = random.Random(7)
    for length in (4096, 65536 + 13, 1 << 20):
        data = rng.randbytes(length)
        assert checksum(CHECKSUM_CRC32, data) == signed(zlib.crc32(data))
        assert checksum(CHECKSUM_CRC32C, data) == segment_scanner._crc32c_table(data)
    data = rng.randbytes(5000)
    assert checksum(CHECKSUM_CRC32C, data) == reference(CHECKSUM_CRC32C, data)


@pytest.mark.parametrize("kind", [CHECKSUM_CRC32, CHECKSUM_CRC32C])
def test_record_and_verify_paths_store_and_check_the_same_value(kind):
    # the recorder's frame checksum is the CRC of the frame's aligned body, [32, align(frame length, 32))
    rng = random.Random(kind)
    term = bytearray(8192)
    offset = 0
    offsets = []
    for n in (0, 1, 31, 32, 33, 100, 1000):
        offsets.append((offset, 32 + n))
        offset = write_frame(term, offset, rng.randbytes(n), session_id=5, stream_id=6)
    term[offset:offset + 32] = b"\x00" * 32
    for at, frame_length in offsets:
        expected = reference(kind, term[at + 32:at + align(frame_length)])
        assert archive_io.frame_checksum(term, at, frame_length, kind) == expected
        assert checksum(kind, term, at + 32, align(frame_length) - 32) == expected
    # ArchiveTool checksum writes them, verify accepts them, and a changed payload byte is found
    frames, end, short = segment_scanner.apply_checksums(term, 0, kind)
    assert (frames, end, short) == (len(offsets), offset, 0)
    for at, frame_length in offsets:
        stored = int.from_bytes(term[at + 12:at + 16], "little", signed=True)
        assert stored == archive_io.frame_checksum(term, at, frame_length, kind)
    assert segment_scanner.verify_frames(term, 0, len(term), 0, 1 << 16, 0, 6, kind) == (0, (offset,))
    term[offsets[-1][0] + 40] ^= 1
    code, details = segment_scanner.verify_frames(term, 0, len(term), 0, 1 << 16, 0, 6, kind)
    assert code == segment_scanner.VERIFY_BAD_CHECKSUM and details[0] == offsets[-1][0]


def test_padding_frames_are_not_checksummed():
    term = bytearray(256)
    write_frame(term, 0, b"", frame_type=HDR_TYPE_PAD, frame_length=128, session_id=77)
    assert segment_scanner.apply_checksums(term, 0, CHECKSUM_CRC32C) == (0, 128, 0)
    assert int.from_bytes(term[12:16], "little") == 77


def test_one_set_of_kinds():
    assert (archive_io.CHECKSUM_NONE, archive_io.CHECKSUM_CRC32, archive_io.CHECKSUM_CRC32C) == \
        (segment_scanner.CHECKSUM_NONE, CHECKSUM_CRC32, CHECKSUM_CRC32C)
    assert isinstance(segment_scanner.crc32c_in_hardware(), bool)


@pytest.mark.parametrize("kind", [-1, 3, 99])
def test_unknown_kinds_are_refused(kind):
    with pytest.raises(InvalidArgumentError, match="unknown checksum"):
        checksum(kind, b"abc")
    with pytest.raises(InvalidArgumentError, match="unknown checksum"):
        segment_scanner.apply_checksums(bytearray(64), 0, kind)
    with pytest.raises(InvalidArgumentError, match="unknown checksum"):
        segment_scanner.verify_frames(bytes(64), 0, 64, 0, 1 << 16, 0, 1, kind)
    with pytest.raises(InvalidArgumentError, match="unknown checksum"):
        archive_io.frame_checksum(bytes(64), 0, 32, kind)
    with pytest.raises(InvalidArgumentError, match="unknown checksum"):
        archive_io.SegmentWriter(0, kind, 4096)
