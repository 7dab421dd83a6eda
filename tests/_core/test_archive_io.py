# SPDX-License-Identifier: Apache-2.0
"""The archive's compiled data path: SegmentWriter.record (image term blocks into a segment file) and
ReplayBlockReader.replay (segment frames into an exclusive publication's term), over logs made here."""
import os

import pytest

from aeron._core.archive_io import CHECKSUM_CRC32, CHECKSUM_CRC32C, ReplayBlockReader, SegmentWriter, frame_checksum
from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.logbuffer import LogBuffers
from aeron._core.term_appender import ExclusiveTermAppender
from aeron._core.term_reader import TermReader
from aeron.common.errors import CorruptFileError, InvalidArgumentError
from tests.support import align

from .framing import FRAME_ALIGNMENT, HDR_TYPE_PAD, read_header, write_frame, write_pad

TERM = 64 * 1024
INITIAL = 7
SESSION, STREAM = 0x1234, 10
REPLAY_SESSION, REPLAY_STREAM = -55, 99
BACK_PRESSURED = -2


def make_log(session_id=SESSION, stream_id=STREAM, **kw):
    return LogBuffers.create(term_length=TERM, initial_term_id=INITIAL, session_id=session_id, stream_id=stream_id,
                             is_connected=1, log_type=1, **kw)


def payload(i, n):
    return bytes((i + k) & 0xFF for k in range(n))


def fill_term(buffer, sizes, term_id=INITIAL, start=0):
    """DATA frames of the given payload sizes from ``start``; returns the end offset."""
    offset = start
    for i, n in enumerate(sizes):
        offset = write_frame(buffer, offset, payload(i, n), session_id=SESSION, stream_id=STREAM, term_id=term_id)
    return offset


@pytest.fixture
def segment_file(tmp_path):
    path = tmp_path / "0-0.rec"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    os.ftruncate(fd, 2 * TERM)
    yield path, fd
    os.close(fd)


def read_file(path, offset, length):
    with open(path, "rb") as f:
        f.seek(offset)
        return f.read(length)


# -- recording -----------------------------------------------------------------------------------------------------

def test_record_writes_runs_straight_from_the_term_and_advances_the_position(segment_file):
    path, fd = segment_file
    log = make_log()
    reader = TermReader(log)
    term = log.term_buffer(0)
    end = fill_term(term, [10, 200, 0, 1000, 33])
    writer = SegmentWriter()
    writer.fd = fd
    assert writer.record(reader, 4096, 2 * TERM, 1 << 20) == end
    assert reader.position == end and writer.segment_offset == end
    assert read_file(path, 0, end) == term.get_bytes(0, end)
    assert writer.record(reader, 4096, 2 * TERM, 1 << 20) == 0           # nothing more there
    end2 = fill_term(term, [5], start=end)
    assert writer.record(reader, 4096, 2 * TERM, 1 << 20) == end2 - end
    assert read_file(path, end, end2 - end) == term.get_bytes(end, end2 - end)
    reader.close()


def test_record_stops_after_max_length_and_at_the_segment_end(segment_file):
    _, fd = segment_file
    log = make_log()
    reader = TermReader(log)
    fill_term(log.term_buffer(0), [100] * 10)                 # ten 160-byte frames
    writer = SegmentWriter()
    writer.fd = fd
    # runs of at most 320 bytes (2 frames); a budget of 400 ends after the run that passes it
    assert writer.record(reader, 320, 2 * TERM, 400) == 640
    # the segment ends at 800: the writer never passes it
    assert writer.record(reader, 320, 800, 1 << 20) == 160
    assert writer.segment_offset == 800
    assert writer.record(reader, 320, 800, 1 << 20) == 0
    assert reader.position == 800
    reader.close()


def test_record_writes_a_pad_as_its_header_only_and_crosses_terms(segment_file):
    path, fd = segment_file
    os.pwrite(fd, b"\xff" * (2 * TERM), 0)
    log = make_log()
    reader = TermReader(log)
    end = fill_term(log.term_buffer(0), [1000] * 3)
    write_pad(log.term_buffer(0), end, TERM - end, session_id=SESSION, stream_id=STREAM, term_id=INITIAL)
    end1 = fill_term(log.term_buffer(1), [64, 64], term_id=INITIAL + 1)
    writer = SegmentWriter()
    writer.fd = fd
    assert writer.record(reader, TERM, 2 * TERM, 1 << 20) == TERM + end1
    assert reader.position == TERM + end1
    assert read_header(read_file(path, end, 32), 0)[3] == HDR_TYPE_PAD
    assert read_file(path, end + 32, TERM - end - 32) == b"\xff" * (TERM - end - 32)    # the body stays as it was
    assert read_file(path, TERM, end1) == log.term_buffer(1).get_bytes(0, end1)
    reader.close()


@pytest.mark.parametrize("kind", [CHECKSUM_CRC32, CHECKSUM_CRC32C])
def test_record_checksums_go_into_the_file_not_the_term(segment_file, kind):
    path, fd = segment_file
    log = make_log()
    reader = TermReader(log)
    term = log.term_buffer(0)
    end = fill_term(term, [10, 300, 4])
    before = term.get_bytes(0, end)
    writer = SegmentWriter(0, kind, 4096)
    writer.fd = fd
    with pytest.raises(InvalidArgumentError):
        writer.record(reader, 8192, 2 * TERM, 1 << 20)     # runs longer than the scratch block
    assert writer.record(reader, 4096, 2 * TERM, 1 << 20) == end
    assert term.get_bytes(0, end) == before
    data = read_file(path, 0, end)
    offset = 0
    while offset < end:
        frame_length, session_id = read_header(data, offset)[0], read_header(data, offset)[5]
        assert session_id == frame_checksum(data, offset, frame_length, kind)
        assert data[offset + 32:offset + frame_length] == before[offset + 32:offset + frame_length]
        offset += align(frame_length, FRAME_ALIGNMENT)
    reader.close()


def test_record_write_error_leaves_the_position(tmp_path):
    path = tmp_path / "0-0.rec"
    path.write_bytes(bytes(TERM))
    fd = os.open(path, os.O_RDONLY)
    log = make_log()
    reader = TermReader(log)
    fill_term(log.term_buffer(0), [10])
    writer = SegmentWriter()
    writer.fd = fd
    try:
        with pytest.raises(OSError):
            writer.record(reader, 4096, TERM, 1 << 20)
        assert reader.position == 0 and writer.segment_offset == 0
    finally:
        os.close(fd)
    reader.close()


def test_record_refuses_a_corrupt_frame_and_needs_a_file(segment_file):
    _, fd = segment_file
    log = make_log()
    reader = TermReader(log)
    log.term_buffer(0).put_i32(0, TERM + 64)                  # runs past the term
    writer = SegmentWriter()
    with pytest.raises(InvalidArgumentError):
        writer.record(reader, 4096, TERM, 1 << 20)           # no file open
    writer.fd = fd
    with pytest.raises(CorruptFileError):
        writer.record(reader, 4096, TERM, 1 << 20)
    assert reader.position == 0
    reader.retire()
    assert writer.record(reader, 4096, TERM, 1 << 20) == 0
    reader.close()


# -- replay --------------------------------------------------------------------------------------------------------

def recorded_segment(sizes_per_term):
    """A two-term segment: DATA frames of the given sizes per term, each term ending with a PAD."""
    data = bytearray(2 * TERM)
    for t, sizes in enumerate(sizes_per_term):
        view = memoryview(data)[t * TERM:(t + 1) * TERM]
        end = fill_term(view, sizes, term_id=INITIAL + t)
        if end < TERM:
            write_pad(view, end, TERM - end, session_id=SESSION, stream_id=STREAM, term_id=INITIAL + t)
        view.release()
    return data


class Source:
    """Replay input over recorded bytes: the mapping alone, or (``pread``) the mapping of a file holding them plus a
    descriptor the reader reads the runs with. ``of(data)`` (re)writes the bytes and returns the segment."""

    def __init__(self, tmp_path, pread):
        self.tmp_path, self.pread, self.fd, self.count, self.opened = tmp_path, pread, -1, 0, []

    def of(self, data):
        if not self.pread:
            return AtomicBuffer(data)
        self.count += 1
        path = self.tmp_path / f"{self.count}-0.rec"
        path.write_bytes(bytes(data))
        self.fd = os.open(path, os.O_RDONLY)
        segment = AtomicBuffer.map_file(str(path))
        self.opened.append((segment, self.fd))
        return segment

    def replay(self, reader, segment, offset, term, available, pub, kind=0):
        return reader.replay(segment, offset, term, available, pub, kind, self.fd if self.pread else -1)

    def close(self):
        for segment, fd in self.opened:
            segment.close()
            os.close(fd)


@pytest.fixture(params=[False, True], ids=["mapped", "pread"])
def source(request, tmp_path):
    src = Source(tmp_path, request.param)
    yield src
    src.close()


def replay_publication(limit=None, **kw):
    log = make_log(REPLAY_SESSION, REPLAY_STREAM, **kw)
    if limit is None:
        return log, ExclusiveTermAppender(log), None
    counter = AtomicBuffer(bytearray(64))
    counter.put_i64_ordered(8, limit)
    return log, ExclusiveTermAppender(log, counter, 8), counter


def with_replay_ids(data, end):
    """``data[:end]`` with every frame's session and stream id those of the replay publication."""
    expected = bytearray(data[:end])
    offset = 0
    while offset < end:
        frame_length = read_header(expected, offset)[0]
        expected[offset + 12:offset + 20] = REPLAY_SESSION.to_bytes(4, "little", signed=True) + \
            REPLAY_STREAM.to_bytes(4, "little", signed=True)
        offset += align(frame_length, FRAME_ALIGNMENT)
    return bytes(expected)


def test_replay_copies_frames_with_the_publication_ids_and_recreates_pads(source):
    data = recorded_segment([[10, 300, 1000] * 20, [64, 0, 5]])        # term 1: 96 + 32 + 64 bytes, then a PAD
    segment = source.of(data)
    log, pub, _ = replay_publication()
    reader = ReplayBlockReader(4096)
    assert source.replay(reader, segment, 0, TERM, TERM + 192, pub) == TERM + 192
    assert pub.position == TERM + 192
    expected = with_replay_ids(data, TERM + 192)
    assert log.term_buffer(0).get_bytes(0, TERM) == expected[:TERM]
    assert log.term_buffer(1).get_bytes(0, 192) == expected[TERM:]
    assert source.replay(reader, segment, TERM + 192, TERM, 0, pub) == 0
    # a budget that ends inside a frame: the frames before it only
    log2, pub2, _ = replay_publication()
    assert source.replay(reader, segment, 0, TERM, 64 + 100, pub2) == 64
    assert log2.term_buffer(0).get_i32(64) == 0             # what was read past the run stays unpublished


def test_replay_waits_for_back_pressure_and_stops_at_the_limit(source):
    data = recorded_segment([[1000] * 10, []])
    segment = source.of(data)
    log, pub, counter = replay_publication(limit=0)
    reader = ReplayBlockReader(2112)                         # runs of two 1056-byte frames
    assert source.replay(reader, segment, 0, TERM, 10 * 1056, pub) == BACK_PRESSURED
    assert pub.position == 0
    counter.put_i64_ordered(8, 100)                         # the first run fits under the limit, the second not
    assert source.replay(reader, segment, 0, TERM, 10 * 1056, pub) == 2112
    assert pub.position == 2112
    counter.put_i64_ordered(8, 1 << 40)
    assert source.replay(reader, segment, 2112, TERM, 8 * 1056, pub) == 8 * 1056
    assert log.term_buffer(0).get_bytes(0, 10 * 1056) == with_replay_ids(data, 10 * 1056)
    pub.close()
    assert source.replay(reader, segment, 0, TERM, 1056, pub) == -4          # CLOSED


@pytest.mark.parametrize("kind", [CHECKSUM_CRC32, CHECKSUM_CRC32C])
def test_replay_verifies_checksums(kind, source):
    data = recorded_segment([[10, 300, 1000], []])
    for offset in (0, 64, 416):
        frame_length = read_header(data, offset)[0]
        data[offset + 12:offset + 16] = frame_checksum(data, offset, frame_length, kind).to_bytes(4, "little",
                                                                                                   signed=True)
    segment = source.of(data)
    log, pub, _ = replay_publication()
    assert source.replay(ReplayBlockReader(4096), segment, 0, TERM, 1472, pub, kind) == 1472
    data[64 + 40] ^= 1
    segment = source.of(data)
    log, pub, _ = replay_publication()
    with pytest.raises(CorruptFileError) as error:
        source.replay(ReplayBlockReader(4096), segment, 0, TERM, 1472, pub, kind)
    assert error.value.offset == 64
    assert pub.position == 64                               # the frame before it was replayed


def test_replay_refuses_what_cannot_be_a_recording(source):
    data = recorded_segment([[10, 300, 1000], []])
    segment = source.of(data)
    reader = ReplayBlockReader(4096)
    log, pub, _ = replay_publication()
    with pytest.raises(InvalidArgumentError):
        source.replay(reader, segment, 0, TERM * 2, 64, pub)        # not the publication's term length
    with pytest.raises(InvalidArgumentError):
        source.replay(reader, segment, TERM, TERM, TERM + 32, pub)  # past the segment
    with pytest.raises(InvalidArgumentError):
        source.replay(reader, segment, 16, TERM, 64, pub)           # not 32-aligned
    # the publication is not where the recorded frame is
    log, pub, _ = replay_publication(term_id=INITIAL, term_offset=64, start_at_position=True)
    with pytest.raises(CorruptFileError) as error:
        source.replay(reader, segment, 0, TERM, 1472, pub)
    assert error.value.offset == 0
    # a frame type that is neither DATA nor PAD
    bad = bytearray(data)
    bad[64 + 6] = 5
    log, pub, _ = replay_publication()
    with pytest.raises(CorruptFileError) as error:
        source.replay(reader, source.of(bad), 0, TERM, 1472, pub)
    assert error.value.offset == 64 and pub.position == 64
    # a frame length that runs past the term, and a frame longer than a replay block
    bad = bytearray(data)
    bad[0:4] = (TERM + 32).to_bytes(4, "little")
    log, pub, _ = replay_publication()
    with pytest.raises(CorruptFileError):
        source.replay(reader, source.of(bad), 0, TERM, 1472, pub)
    with pytest.raises(CorruptFileError):
        source.replay(ReplayBlockReader(512), segment, 416, TERM, 1056, pub)
    assert pub.position == 0
    # nothing recorded yet
    assert source.replay(reader, source.of(bytearray(2 * TERM)), 0, TERM, 1472, pub) == 0


def test_replay_by_pread_reports_a_short_file_and_a_failed_read(tmp_path):
    data = recorded_segment([[10, 300, 1000], []])
    path = tmp_path / "0-0.rec"
    path.write_bytes(bytes(data))
    segment = AtomicBuffer.map_file(str(path))
    fd = os.open(path, os.O_RDWR)
    try:
        reader = ReplayBlockReader(4096)
        log, pub, _ = replay_publication()
        os.ftruncate(fd, 64 + 200)                  # ends inside the 1056-byte frame at 416... and the one at 64
        with pytest.raises(CorruptFileError) as error:
            reader.replay(segment, 0, TERM, 1472, pub, 0, fd)
        assert error.value.offset == 64 and error.value.path == str(path)
        assert pub.position == 64                   # the whole frame before it was replayed
        assert log.term_buffer(0).get_i32(64) == 0
        with pytest.raises(OSError):
            reader.replay(segment, 64, TERM, 1408, pub, 0, 1 << 20)      # not a descriptor
        assert pub.position == 64
    finally:
        os.close(fd)
        segment.close()
