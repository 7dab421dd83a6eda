# SPDX-License-Identifier: Apache-2.0
import gzip
import struct

import pytest

from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.logbuffer import LogBuffers
from aeron._core.term_reader import (ABORT, BREAK, COMMIT, CONTINUE, ControlledPollAction, Header,
                                     TermReader, any_fragment_pending)
from aeron.common.errors import CorruptFileError, IllegalStateError, InvalidArgumentError

from .framing import (BEGIN, END, FRAME_ALIGNMENT, HEADER, INITIAL, SESSION, STREAM, TERM, TermWriter, write_frame,
                      write_pad)

# (relative path, session id, initial term id) of the golden log buffers (official Aeron, tests/data/golden)
GOLDEN = [
    ("ipc-c-aeronmd/4.logbuffer.gz", -1382497356, 2145401527),
    ("ipc-java-mediadriver/4.logbuffer.gz", 1492258850, -604896961),
    ("udp-unicast/publisher-driver/publications/2.logbuffer.gz", -1814757439, 1569665970),
    ("udp-unicast/subscriber-driver/images/3.logbuffer.gz", -1814757439, 1569665970),
    ("udp-unicast-loss-rttm/publisher-driver/publications/2.logbuffer.gz", -976833086, 1000),
    ("udp-unicast-loss-rttm/subscriber-driver/images/3.logbuffer.gz", -976833086, 1000),
    ("udp-multicast/publisher-driver/publications/2.logbuffer.gz", 180082899, -379515587),
    ("udp-multicast/subscriber-driver/images/3.logbuffer.gz", 180082899, -379515587),
]


class Recorder:
    def __init__(self, result=None):
        self.frames = []
        self.result = result

    def __call__(self, buffer, offset, length, header):
        self.frames.append((bytes(buffer.get_bytes(offset, length)), header.copy(), offset, length))
        return self.result

    @property
    def payloads(self):
        return [f[0] for f in self.frames]


# -- golden files --------------------------------------------------------------------------------

@pytest.mark.parametrize("rel,session_id,initial_term_id", GOLDEN, ids=[g[0].split(".")[0] for g in GOLDEN])
def test_golden_log_reads_hello_world(golden_dir, rel, session_id, initial_term_id):
    data = bytearray(gzip.decompress((golden_dir / "logbuffers" / rel).read_bytes()))
    assert len(data) == 200704
    log = LogBuffers(data)
    reader = TermReader(log)
    rec = Recorder()
    assert reader.poll(rec, 100) == 5
    assert rec.payloads == [f"Hello World! {i}".encode() for i in range(5)]
    for i, (_, h, offset, length) in enumerate(rec.frames):
        assert (offset, length) == (i * 64 + 32, 14)
        assert h.frame_length == 46 and h.version == 0 and h.flags == 0xC0 and h.type == 1
        assert h.term_offset == i * 64
        assert h.session_id == session_id and h.stream_id == 1001
        assert h.term_id == initial_term_id == h.initial_term_id
        assert h.reserved_value == 0
        assert h.position == 64 * (i + 1)
        assert h.position_bits_to_shift == 16
    assert reader.position == 320
    assert reader.poll(rec, 100) == 0
    assert reader.position == 320
    assert not reader.is_end_of_stream
    reader.close()
    log.close()


# -- poll ---------------------------------------------------------------------------------------

def test_poll_empty_returns_zero(reader):
    assert reader.poll(Recorder(), 10) == 0
    assert reader.position == 0


def test_poll_handler_arguments_reference_the_term(log, writer, reader):
    writer.frame(b"abc", reserved_value=-7)
    seen = []

    def handler(buffer, offset, length, header):
        seen.append((buffer, offset, length, header, header.offset, header.buffer))

    assert reader.poll(handler, 1) == 1
    buffer, offset, length, header, frame_offset, header_buffer = seen[0]
    assert isinstance(buffer, AtomicBuffer) and len(buffer) == TERM
    assert (offset, length, frame_offset) == (32, 3, 0)
    assert header_buffer is buffer
    assert isinstance(header, Header)
    # the same objects are reused for the next poll (no allocation per message)
    writer.frame(b"defg")
    assert reader.poll(handler, 1) == 1
    assert seen[1][0] is buffer and seen[1][3] is header
    assert seen[1][1:3] == (96, 4)


def test_poll_respects_fragment_limit(writer, reader):
    for i in range(5):
        writer.frame(bytes([i]) * 10)
    rec = Recorder()
    assert reader.poll(rec, 2) == 2
    assert reader.position == 128
    assert reader.poll(rec, 2) == 2
    assert reader.poll(rec, 2) == 1
    assert [p[0] for p in rec.payloads] == [0, 1, 2, 3, 4]
    assert reader.position == 320
    assert reader.poll(rec, 0) == 0


def test_padding_skipped_and_not_counted(writer, reader):
    writer.frame(b"a")
    writer.pad(96)
    writer.frame(b"b")
    rec = Recorder()
    assert reader.poll(rec, 2) == 2
    assert rec.payloads == [b"a", b"b"]
    assert reader.position == 64 + 96 + 64


def test_padding_only_advances_position(writer, reader):
    writer.pad(128)
    assert reader.poll(Recorder(), 10) == 0
    assert reader.position == 128


def test_poll_does_not_cross_term_boundary(log, reader):
    w0 = TermWriter(log, 0, session_id=SESSION, stream_id=STREAM, term_id=INITIAL)
    w1 = TermWriter(log, 1, session_id=SESSION, stream_id=STREAM, term_id=INITIAL + 1)
    w0.offset = TERM - 128
    reader.position = TERM - 128
    w0.frame(b"last")
    w0.pad(64)
    w1.frame(b"next")
    rec = Recorder()
    assert reader.poll(rec, 10) == 1
    assert rec.payloads == [b"last"]
    assert reader.position == TERM
    assert reader.poll(rec, 10) == 1
    assert rec.payloads == [b"last", b"next"]
    assert rec.frames[1][1].position == TERM + 64
    assert rec.frames[1][1].term_id == INITIAL + 1
    w0.close()
    w1.close()


def test_negative_frame_length_stops(writer, reader):
    writer.frame(b"ok")
    writer.frame(b"claimed", frame_length=-(32 + 7))
    writer.frame(b"after")
    rec = Recorder()
    assert reader.poll(rec, 10) == 1
    assert reader.position == 64
    assert reader.poll(rec, 10) == 0


def test_handler_raising_commits_through_that_fragment(writer, reader):
    for i in range(4):
        writer.frame(bytes([i]))
    calls = []

    def handler(buffer, offset, length, header):
        calls.append(buffer.get_u8(offset))
        if len(calls) == 2:
            raise KeyError("boom")

    with pytest.raises(KeyError, match="boom"):
        reader.poll(handler, 10)
    assert calls == [0, 1]
    assert reader.position == 128
    assert reader.poll(handler, 10) == 2
    assert calls == [0, 1, 2, 3]
    assert reader.position == 256


def test_handler_closing_reader_stops_cleanly(log, writer):
    reader = TermReader(log)
    writer.frame(b"1")
    writer.frame(b"2")
    got = []

    def handler(buffer, offset, length, header):
        got.append(length)
        reader.close()

    assert reader.poll(handler, 10) == 1
    assert got == [1]
    with pytest.raises(IllegalStateError):
        reader.poll(handler, 10)


@pytest.mark.parametrize("controlled", [False, True])
def test_handler_closing_its_term_view_stops_and_later_polls_refuse(log, writer, controlled):
    # The term view handed to handlers pins the log; once a handler closes it the reader must not
    # go on reading raw term memory that may be unmapped. It stops after that fragment (position
    # committed through it) and later polls raise instead of reading.
    reader = TermReader(log)
    for p in (b"1", b"2", b"3"):
        writer.frame(p)
    got = []

    def handler(buffer, offset, length, header):
        got.append(buffer.get_bytes(offset, length))
        buffer.close()
        return CONTINUE

    poll = reader.controlled_poll if controlled else reader.poll
    assert poll(handler, 10) == 1
    assert got == [b"1"] and reader.position == 64
    with pytest.raises(IllegalStateError):
        poll(handler, 10)
    with pytest.raises(IllegalStateError):
        reader.block_poll(lambda *a: None, 1000)
    assert got == [b"1"] and reader.position == 64
    reader.close()


def test_handler_closing_every_view_then_the_log_cannot_crash_the_reader(shm_dir):
    # File-backed log: closing the three term views lets log.close() unmap the file. A reader that
    # kept walking its cached term pointers after that used to segfault.
    log = LogBuffers.create(shm_dir / "1.logbuffer", term_length=TERM, initial_term_id=0, session_id=1,
                            stream_id=2)
    for i in range(3):
        term = log.term_buffer(i)
        write_frame(term, 0, b"abc", session_id=1, stream_id=2, term_id=i)
        write_pad(term, 64, TERM - 64, session_id=1, stream_id=2, term_id=i)
        term.close()
    reader = TermReader(log)
    views = []

    def handler(buffer, offset, length, header):
        views.append(buffer)

    for _ in range(3):
        assert reader.poll(handler, 10) == 1      # the frame, then the PAD to the end of the term
    assert reader.position == 3 * TERM and len({id(v) for v in views}) == 3
    for v in views:
        v.close()
    log.close()                                   # nothing pins the mapping any more
    with pytest.raises(IllegalStateError):
        reader.poll(handler, 10)
    with pytest.raises(IllegalStateError):
        reader.block_poll(lambda *a: None, 1000)
    reader.close()


# -- controlled poll ---------------------------------------------------------------------------

def test_action_constants():
    assert (ABORT, BREAK, COMMIT, CONTINUE) == (1, 2, 3, 4)
    assert ControlledPollAction.ABORT == 1 and ControlledPollAction.CONTINUE == 4


def test_controlled_abort_redelivers(writer, reader):
    writer.frame(b"x")
    writer.frame(b"y")
    actions = iter([CONTINUE, ABORT, CONTINUE])
    rec = []

    def handler(buffer, offset, length, header):
        rec.append(buffer.get_bytes(offset, length))
        return next(actions)

    assert reader.controlled_poll(handler, 10) == 1
    assert reader.position == 64
    assert reader.controlled_poll(handler, 10) == 1
    assert rec == [b"x", b"y", b"y"]
    assert reader.position == 128


def test_controlled_break(writer, reader):
    for _ in range(3):
        writer.frame(b"z")
    assert reader.controlled_poll(Recorder(BREAK), 10) == 1
    assert reader.position == 64


def test_controlled_commit_stores_position_immediately(log, writer):
    counter = AtomicBuffer(bytearray(64))
    reader = TermReader(log, counter, 8)
    for _ in range(3):
        writer.frame(b"c")
    seen = []

    def handler(buffer, offset, length, header):
        seen.append(counter.get_i64(8))
        return COMMIT

    assert reader.controlled_poll(handler, 10) == 3
    assert seen == [0, 64, 128]
    assert counter.get_i64(8) == 192
    reader.close()


def test_controlled_continue_stores_at_end(log, writer):
    counter = AtomicBuffer(bytearray(16))
    reader = TermReader(log, counter, 0)
    for _ in range(3):
        writer.frame(b"c")
    seen = []

    def handler(buffer, offset, length, header):
        seen.append(counter.get_i64(0))
        return CONTINUE

    assert reader.controlled_poll(handler, 10) == 3
    assert seen == [0, 0, 0]
    assert counter.get_i64(0) == 192
    reader.close()


def test_controlled_bad_action_raises_and_commits(writer, reader):
    writer.frame(b"a")
    writer.frame(b"b")
    with pytest.raises(InvalidArgumentError):
        reader.controlled_poll(Recorder(99), 10)
    assert reader.position == 64
    with pytest.raises(TypeError):
        reader.controlled_poll(Recorder(None), 10)
    assert reader.position == 128


# -- bounded poll ------------------------------------------------------------------------------

def test_bounded_poll_stops_at_limit(writer, reader):
    for i in range(5):
        writer.frame(bytes([i]))
    rec = Recorder()
    assert reader.bounded_poll(rec, 128, 10) == 2
    assert reader.position == 128
    assert reader.bounded_poll(rec, 128, 10) == 0
    # a frame that starts before the limit is read whole
    assert reader.bounded_poll(rec, 129, 10) == 1
    assert reader.position == 192
    assert reader.bounded_controlled_poll(Recorder(CONTINUE), 1 << 40, 10) == 2
    assert reader.position == 320


# -- block poll --------------------------------------------------------------------------------

def test_block_poll_run_and_stop_at_pad(writer, reader):
    writer.frame(b"a" * 10)
    writer.frame(b"b" * 40)
    writer.pad(64)
    writer.frame(b"c")
    blocks = []

    def on_block(buffer, offset, length, session_id, term_id):
        blocks.append((bytes(buffer.get_bytes(offset, length)), offset, length, session_id, term_id))

    assert reader.block_poll(on_block, 4096) == 64 + 96
    assert blocks[0][1:] == (0, 160, SESSION, INITIAL)
    assert HEADER.unpack_from(blocks[0][0], 64)[0] == 72
    # PAD at the start is consumed alone
    assert reader.block_poll(on_block, 4096) == 64
    assert blocks[1][1:3] == (160, 64)
    assert reader.block_poll(on_block, 4096) == 64
    assert reader.position == 288
    assert reader.block_poll(on_block, 4096) == 0
    assert len(blocks) == 3


def test_block_poll_limit_excludes_partial_frame(writer, reader):
    writer.frame(b"a")
    writer.frame(b"b" * 40)
    assert reader.block_poll(lambda *a: None, 100) == 64
    assert reader.block_poll(lambda *a: None, 64) == 0
    assert reader.block_poll(lambda *a: None, 96) == 96
    with pytest.raises(InvalidArgumentError):
        reader.block_poll(lambda *a: None, -1)


def test_block_poll_handler_raising_still_commits(writer, reader):
    writer.frame(b"a")

    def on_block(*args):
        raise ValueError("x")

    with pytest.raises(ValueError):
        reader.block_poll(on_block, 1000)
    assert reader.position == 64


# -- position --------------------------------------------------------------------------------

def test_position_counter_initial_and_release(log, writer):
    counter = AtomicBuffer(bytearray(32))
    reader = TermReader(log, counter, 16, initial_position=64)
    assert counter.get_i64(16) == 64
    writer.frame(b"skip")
    writer.frame(b"read")
    rec = Recorder()
    assert reader.poll(rec, 10) == 1 and rec.payloads == [b"read"]
    assert counter.get_i64(16) == 128 == reader.position
    reader.close()


def test_position_setter_validation(writer, reader):
    with pytest.raises(InvalidArgumentError):
        reader.position = 33
    with pytest.raises(InvalidArgumentError):
        reader.position = TERM + 32
    with pytest.raises(InvalidArgumentError):
        reader.position = -32
    reader.position = 64
    with pytest.raises(InvalidArgumentError):
        reader.position = 32          # backwards
    reader.position = TERM            # end of the current term is allowed
    assert reader.position == TERM


def test_constructor_validation(log):
    with pytest.raises(InvalidArgumentError):
        TermReader(log, initial_position=33)
    with pytest.raises(InvalidArgumentError):
        TermReader(log, initial_position=-64)
    with pytest.raises(InvalidArgumentError):
        TermReader(log, AtomicBuffer(bytearray(16)), 4)
    with pytest.raises(Exception) as e:
        TermReader(log, AtomicBuffer(bytearray(16)), 16)
    assert isinstance(e.value, IndexError)


def test_properties_and_end_of_stream(log, reader):
    assert reader.term_buffer_length == TERM
    assert reader.initial_term_id == INITIAL
    assert not reader.is_end_of_stream
    log.end_of_stream_position = 0
    assert reader.is_end_of_stream


def test_use_after_close_raises(log, writer):
    reader = TermReader(log)
    writer.frame(b"x")
    held = []
    reader.poll(lambda b, o, n, h: held.append(h), 1)
    reader.close()
    reader.close()
    for call in (lambda: reader.poll(Recorder(), 1), lambda: reader.controlled_poll(Recorder(), 1),
                 lambda: reader.bounded_poll(Recorder(), 10, 1), lambda: reader.block_poll(Recorder(), 1),
                 lambda: reader.position, lambda: reader.is_end_of_stream):
        with pytest.raises(IllegalStateError):
            call()
    with pytest.raises(IllegalStateError):
        reader.position = 0
    with pytest.raises(IllegalStateError):
        held[0].session_id          # the reusable header must not read freed memory
    # closing the reader releases its term views so the log itself can be closed
    writer.close()
    log.close()


def test_counter_cannot_be_closed_under_reader(log):
    counter = AtomicBuffer(bytearray(16))
    reader = TermReader(log, counter)
    with pytest.raises(IllegalStateError):
        counter.close()
    reader.close()
    counter.close()


# -- corrupt terms ---------------------------------------------------------------------------

def test_frame_running_past_term_end_raises_corrupt(log, writer, reader):
    writer.frame(b"good")
    writer.frame(b"", frame_length=TERM)        # at offset 64: would run past the end
    rec = Recorder()
    with pytest.raises(CorruptFileError) as e:
        reader.poll(rec, 10)
    assert e.value.offset == 64
    assert rec.payloads == [b"good"]
    assert reader.position == 64
    with pytest.raises(CorruptFileError):
        reader.poll(rec, 10)
    with pytest.raises(CorruptFileError):
        reader.block_poll(rec, 1000)
    assert reader.position == 64


@pytest.mark.parametrize("bad_length", [1, 31, 0x7FFFFFFF])
def test_corrupt_lengths_never_read(log, writer, reader, bad_length):
    writer.frame(b"", frame_length=bad_length)
    with pytest.raises(CorruptFileError):
        reader.poll(Recorder(), 10)
    with pytest.raises(CorruptFileError):
        reader.controlled_poll(Recorder(CONTINUE), 10)
    assert reader.position == 0


def test_corrupt_padding_past_end(log, writer, reader):
    writer.offset = TERM - 64
    reader.position = TERM - 64
    writer.pad(128)
    with pytest.raises(CorruptFileError):
        reader.poll(Recorder(), 10)


def test_negative_subscriber_position_is_rejected(log):
    counter = AtomicBuffer(bytearray(8))
    reader = TermReader(log, counter)
    counter.put_i64(0, -64)
    with pytest.raises(CorruptFileError):
        reader.poll(Recorder(), 1)
    reader.close()


@pytest.mark.parametrize("position", [TERM - 1, TERM - 4, 33])
def test_unaligned_subscriber_position_is_rejected(log, position):
    # Frames start on 32-byte boundaries; an unaligned sub-pos (corrupt counter) would make the
    # reader load frame lengths unaligned and, at TERM - 1, read bytes past the end of the term.
    counter = AtomicBuffer(bytearray(8))
    reader = TermReader(log, counter)
    counter.put_i64(0, position)
    with pytest.raises(CorruptFileError):
        reader.poll(Recorder(), 1)
    with pytest.raises(CorruptFileError):
        reader.block_poll(Recorder(), 1000)
    assert counter.get_i64(0) == position
    reader.close()


# -- Header ------------------------------------------------------------------------------------

def test_header_wrap_and_copy():
    buf = AtomicBuffer(bytearray(128))
    write_frame(buf, 64, b"q" * 10, session_id=-3, stream_id=9, term_id=12, flags=BEGIN, reserved_value=1 << 40)
    h = Header(10, 16).wrap(buf, 64)
    assert (h.frame_length, h.flags, h.type, h.term_offset, h.session_id, h.stream_id, h.term_id) == \
        (42, BEGIN, 1, 64, -3, 9, 12)
    assert h.reserved_value == 1 << 40
    assert h.next_term_offset == 128
    assert h.position == (2 << 16) + 128
    c = h.copy()
    buf.put_i32(64 + 12, 77)
    assert h.session_id == 77 and c.session_id == -3
    assert c.offset == 0 and c.position == h.position
    with pytest.raises(Exception) as e:
        Header().wrap(buf, 100)
    assert isinstance(e.value, IndexError)
    with pytest.raises(InvalidArgumentError):
        Header(0, 31)


# -- nogil kernels, cimported by a C consumer (tests/cython/term_reader_kernels.pyx) ------------

def test_kernel_read_frames_skips_padding_and_packs_outcome():
    from tests.cython import term_reader_kernels as k
    term = AtomicBuffer(bytearray(TERM))
    off = write_frame(term, 0, b"a" * 10)
    off = write_pad(term, off, 64)
    off = write_frame(term, off, b"b" * 40)
    write_frame(term, off, b"", frame_length=-40)
    assert k.read_frames(term, 0, TERM, 10) == (224, 2, [(0, 42), (128, 72)])
    assert k.read_frames(term, 0, TERM, 1) == (64, 1, [(0, 42)])
    assert k.read_frames(term, 0, TERM, 10, stop_after=1) == (64, 1, [(0, 42)])
    # frames starting below the limit are read whole; padding before the limit is skipped
    assert k.read_frames(term, 64, 129, 10) == (224, 1, [(128, 72)])
    assert k.read_frames(term, 64, 128, 10) == (128, 0, [])
    assert k.read_frames(term, 0, 64, 10) == (64, 1, [(0, 42)])
    # a corrupt frame stops the kernel before it
    write_frame(term, 224, b"", frame_length=TERM)
    assert k.read_frames(term, 0, TERM, 10)[:2] == (224, 2)
    assert k.block_scan(term, 0, TERM) == 64          # stops at the PAD
    assert k.block_scan(term, 64, TERM) == 128        # PAD first: consumed alone
    assert k.block_scan(term, 128, TERM) == 224       # corrupt frame not included


def test_kernel_concurrent_writer_and_reader_see_only_complete_frames():
    import threading
    from tests.cython import term_reader_kernels as k
    term = AtomicBuffer(bytearray(1 << 20))
    count = 5000
    result = {}
    reader = threading.Thread(target=lambda: result.setdefault("r", k.read_concurrently(term, count, 50_000_000)))
    writer = threading.Thread(target=lambda: result.setdefault("w", k.write_frames(term, count)))
    reader.start()
    writer.start()
    writer.join(20)
    reader.join(20)
    assert not writer.is_alive() and not reader.is_alive()
    assert result["w"] == count
    frames, errors, batches = result["r"]
    assert (frames, errors) == (count, 0)
    assert batches >= 1


def test_any_fragment_pending_is_whether_a_poll_would_find_a_frame(log, writer):
    reader, other = TermReader(log), TermReader(LogBuffers.create(term_length=TERM, initial_term_id=INITIAL,
                                                                   session_id=SESSION, stream_id=STREAM))
    try:
        assert not any_fragment_pending(()) and not any_fragment_pending((reader, other))
        writer.frame(b"x" * 10, frame_length=-42)       # being written: not committed yet
        assert not any_fragment_pending((other, reader))
        writer.offset = 0
        writer.frame(b"x" * 10)
        assert any_fragment_pending((other, reader)) and not any_fragment_pending((other,))
        assert reader.poll(Recorder(), 10) == 1 and not any_fragment_pending((reader,))
        writer.pad(64)                                  # padding is something for the poll to pass
        assert any_fragment_pending((reader,))
        assert reader.poll(Recorder(), 10) == 0 and not any_fragment_pending((reader,))
        writer.frame(b"y")
        reader.retire()                                 # its polls deliver nothing
        assert not any_fragment_pending((reader,)) and reader.poll(Recorder(), 10) == 0
        # what the poll would reject, or cannot tell, is left to the poll
        assert any_fragment_pending((object(),))
        other.close()
        assert any_fragment_pending((other,))
        with pytest.raises(IllegalStateError):
            other.poll(Recorder(), 1)
    finally:
        reader.close()
        other.close()
