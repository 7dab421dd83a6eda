# SPDX-License-Identifier: Apache-2.0
import pytest

from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.fragment_assembler import (BufferBuilder, ControlledFragmentAssembler, FragmentAssembler,
                                            ImageControlledFragmentAssembler, ImageFragmentAssembler)
from aeron._core.term_reader import ABORT, BREAK, COMMIT, CONTINUE, Header
from aeron.common.errors import InvalidArgumentError

from .framing import BEGIN, END, INITIAL, SESSION, STREAM, TERM, UNFRAGMENTED, write_frame

MAX_PAYLOAD = 1408 - 32


class Collector:
    def __init__(self, action=None):
        self.messages = []
        self.action = action

    def __call__(self, buffer, offset, length, header):
        self.messages.append((buffer.get_bytes(offset, length), header.copy()))
        return self.action

    @property
    def payloads(self):
        return [m[0] for m in self.messages]


class Fragments:
    """Frames in a private term, delivered to an assembler one by one via a Header."""

    def __init__(self, size=1 << 16):
        self.term = AtomicBuffer(bytearray(size))
        self.header = Header(INITIAL, 16)
        self.offsets = {}

    def frame(self, offset, payload, flags, session_id=SESSION, term_id=INITIAL):
        write_frame(self.term, offset, payload, flags=flags, session_id=session_id, stream_id=STREAM,
                    term_id=term_id)
        return offset

    def deliver(self, handler, offset):
        self.header.wrap(self.term, offset)
        return handler(self.term, offset + 32, self.header.frame_length - 32, self.header)


# -- through a real poll ------------------------------------------------------------------------

def test_unfragmented_passthrough(writer, reader):
    writer.frame(b"single", reserved_value=99)
    got = []
    asm = FragmentAssembler(lambda *a: got.append(a))
    assert reader.poll(asm.on_fragment, 10) == 1
    buffer, offset, length, header = got[0]
    # the reader's own arguments, untouched
    assert (offset, length) == (32, 6) and len(buffer) == TERM
    assert header.frame_length == 38 and header.flags == UNFRAGMENTED


def test_three_fragment_message(writer, reader):
    payload = bytes(range(256)) * 12            # 3072 bytes -> 1376 + 1376 + 320
    writer.frame(b"before")
    start = writer.message(payload, MAX_PAYLOAD)
    writer.frame(b"after")
    col = Collector()
    asm = FragmentAssembler(col)
    assert reader.poll(asm, 100) == 5
    assert col.payloads == [b"before", payload, b"after"]
    h = col.messages[1][1]
    assert h.frame_length == 32 + len(payload)
    assert h.flags == BEGIN | END
    assert h.term_offset == start == 64
    assert h.session_id == SESSION and h.stream_id == STREAM and h.term_id == INITIAL
    # position = end of the last fragment = start of "after"
    assert h.position == 64 + 1408 * 2 + 352
    assert col.messages[2][1].position == h.position + 64


def test_builder_is_reused_across_messages(writer, reader):
    payload = b"m" * 3000
    writer.message(payload, MAX_PAYLOAD)
    writer.message(payload[::-1], MAX_PAYLOAD)
    buffers = []
    asm = FragmentAssembler(lambda b, o, n, h: buffers.append((b, b.get_bytes(o, n))), initial_buffer_length=4096)
    reader.poll(asm, 100)
    assert [x[1] for x in buffers] == [payload, payload[::-1]]
    assert buffers[0][0] is buffers[1][0]
    assert asm.session_count == 1


def test_builder_grows(writer, reader):
    payload = bytes(range(251)) * 40           # 10040 bytes, initial capacity 64
    writer.message(payload, MAX_PAYLOAD)
    col = Collector()
    reader.poll(FragmentAssembler(col, 0), 100)
    assert col.payloads == [payload]


# -- direct fragment sequences ------------------------------------------------------------------

def test_middle_without_begin_dropped():
    f = Fragments()
    col = Collector()
    asm = FragmentAssembler(col)
    f.deliver(asm, f.frame(64, b"mid", 0))
    f.deliver(asm, f.frame(128, b"end", END))
    assert col.messages == []
    assert asm.session_count == 0


def test_end_without_begin_after_completed_message_dropped():
    f = Fragments()
    col = Collector()
    asm = FragmentAssembler(col)
    f.deliver(asm, f.frame(0, b"a", BEGIN))
    f.deliver(asm, f.frame(64, b"b", END))
    f.deliver(asm, f.frame(128, b"c", END))
    assert col.payloads == [b"ab"]


def test_offset_mismatch_drops_partial_message():
    f = Fragments()
    col = Collector()
    asm = FragmentAssembler(col)
    f.deliver(asm, f.frame(0, b"a", BEGIN))
    f.deliver(asm, f.frame(128, b"gap", 0))      # expected at 64
    f.deliver(asm, f.frame(192, b"end", END))
    assert col.messages == []
    # a fresh BEGIN starts over cleanly
    f.deliver(asm, f.frame(256, b"x", BEGIN))
    f.deliver(asm, f.frame(320, b"y", 0))
    f.deliver(asm, f.frame(384, b"z", END))
    assert col.payloads == [b"xyz"]
    h = col.messages[0][1]
    assert (h.term_offset, h.frame_length, h.flags, h.position) == (256, 35, 0xC0, 448)


def test_begin_restarts_message_in_progress():
    f = Fragments()
    col = Collector()
    asm = FragmentAssembler(col)
    f.deliver(asm, f.frame(0, b"old", BEGIN))
    f.deliver(asm, f.frame(64, b"new", BEGIN))
    f.deliver(asm, f.frame(128, b"!", END))
    assert col.payloads == [b"new!"]


def test_interleaved_sessions():
    f = Fragments()
    col = Collector()
    asm = FragmentAssembler(col)
    f.deliver(asm, f.frame(0, b"A1", BEGIN, session_id=1))
    f.deliver(asm, f.frame(1024, b"B1", BEGIN, session_id=2))
    f.deliver(asm, f.frame(1088, b"B2", END, session_id=2))
    f.deliver(asm, f.frame(64, b"A2", 0, session_id=1))
    f.deliver(asm, f.frame(128, b"A3", END, session_id=1))
    assert col.payloads == [b"B1B2", b"A1A2A3"]
    assert [m[1].session_id for m in col.messages] == [2, 1]
    assert asm.free_session_buffer(1) is True
    assert asm.free_session_buffer(1) is False
    asm.clear()
    assert asm.session_count == 0


def test_free_session_buffer_discards_progress():
    f = Fragments()
    col = Collector()
    asm = FragmentAssembler(col)
    f.deliver(asm, f.frame(0, b"a", BEGIN))
    asm.free_session_buffer(SESSION)
    f.deliver(asm, f.frame(64, b"b", END))
    assert col.messages == []


def test_delegate_raising_resets_builder():
    f = Fragments()

    def boom(*a):
        raise RuntimeError("x")

    asm = FragmentAssembler(boom)
    f.deliver(asm, f.frame(0, b"a", BEGIN))
    with pytest.raises(RuntimeError):
        f.deliver(asm, f.frame(64, b"b", END))
    # the END is not completed twice
    f.deliver(asm, f.frame(64, b"b", END))


def test_non_atomic_buffer_source():
    term = bytearray(256)
    write_frame(term, 0, b"by", flags=BEGIN, session_id=1)
    write_frame(term, 64, b"tes", flags=END, session_id=1)
    col = Collector()
    asm = FragmentAssembler(col)
    hdr_buf = AtomicBuffer(bytearray(term))
    h = Header(0, 16)
    asm(bytes(term), 32, 2, h.wrap(hdr_buf, 0))
    asm(bytes(term), 96, 3, h.wrap(hdr_buf, 64))
    assert col.payloads == [b"bytes"]
    with pytest.raises(IndexError):
        asm(bytes(term), 250, 20, h.wrap(hdr_buf, 0))


def test_bad_construction():
    with pytest.raises(InvalidArgumentError):
        FragmentAssembler(42)
    with pytest.raises(InvalidArgumentError):
        FragmentAssembler(print, -1)
    with pytest.raises(TypeError):
        FragmentAssembler(print)(bytearray(64), 0, 0, None)


# -- controlled ---------------------------------------------------------------------------------

def test_controlled_passes_actions_and_abort_redelivers(writer, reader):
    payload = b"q" * 3000
    writer.frame(b"u")
    writer.message(payload, MAX_PAYLOAD)
    actions = [CONTINUE, ABORT, COMMIT]
    col = []

    def delegate(buffer, offset, length, header):
        col.append((buffer.get_bytes(offset, length), header.frame_length))
        return actions.pop(0)

    asm = ControlledFragmentAssembler(delegate)
    # unfragmented CONTINUE, then the 3 fragments: the END aborted -> stop before it
    assert reader.controlled_poll(asm, 100) == 3
    assert reader.position == 64 + 1408 * 2
    assert reader.controlled_poll(asm, 100) == 1
    assert [c[0] for c in col] == [b"u", payload, payload]
    assert col[2][1] == 32 + 3000
    assert reader.position == 64 + 1408 * 2 + 288


def test_controlled_break_passthrough(writer, reader):
    writer.frame(b"a")
    writer.frame(b"b")
    asm = ControlledFragmentAssembler(Collector(BREAK))
    assert reader.controlled_poll(asm, 100) == 1


def test_controlled_malformed_continues():
    f = Fragments()
    col = Collector(COMMIT)
    asm = ControlledFragmentAssembler(col)
    assert f.deliver(asm, f.frame(64, b"mid", 0)) == CONTINUE
    assert f.deliver(asm, f.frame(0, b"a", BEGIN)) == CONTINUE
    assert f.deliver(asm, f.frame(128, b"bad", END)) == CONTINUE
    assert col.messages == []


# -- image assembler ----------------------------------------------------------------------------

def test_image_fragment_assembler(writer, reader):
    payload = bytes(range(200)) * 20
    writer.message(payload, MAX_PAYLOAD)
    writer.frame(b"tail")
    col = Collector()
    asm = ImageFragmentAssembler(col)
    assert reader.poll(asm, 100) == 4
    assert col.payloads == [payload, b"tail"]
    assert col.messages[0][1].flags == 0xC0


def test_image_assembler_drops_mismatch():
    f = Fragments()
    col = Collector()
    asm = ImageFragmentAssembler(col)
    f.deliver(asm, f.frame(0, b"a", BEGIN))
    f.deliver(asm, f.frame(96, b"c", END))
    f.deliver(asm, f.frame(64, b"b", END))
    assert col.messages == []
    f.deliver(asm, f.frame(128, b"x", BEGIN))
    asm.clear()
    f.deliver(asm, f.frame(192, b"y", END))
    assert col.messages == []


def test_image_controlled_assembler_passes_actions_and_abort_redelivers(writer, reader):
    payload = b"z" * 3000
    writer.frame(b"u")
    writer.message(payload, MAX_PAYLOAD)
    writer.frame(b"v")
    actions = [CONTINUE, ABORT, COMMIT, BREAK]
    got = []

    def delegate(buffer, offset, length, header):
        got.append((buffer.get_bytes(offset, length), header.frame_length, header.flags))
        return actions.pop(0)

    asm = ImageControlledFragmentAssembler(delegate)
    assert reader.controlled_poll(asm, 100) == 3            # "u", then BEGIN and middle; the END aborted
    assert reader.position == 64 + 1408 * 2
    assert reader.controlled_poll(asm, 100) == 2            # the END again (COMMIT), then "v" (BREAK)
    assert got == [(b"u", 33, 0xC0), (payload, 32 + 3000, 0xC0), (payload, 32 + 3000, 0xC0), (b"v", 33, 0xC0)]
    assert reader.controlled_poll(asm, 100) == 0


def test_image_controlled_assembler_is_one_message_whatever_the_session():
    # one image's fragments: no lookup by session id, so a message begun under one session id and ended under
    # another at the expected term offset is one message (a replay and the live stream it joins share positions)
    f = Fragments()
    col = Collector(CONTINUE)
    asm = ImageControlledFragmentAssembler(col)
    assert f.deliver(asm, f.frame(0, b"ab", BEGIN, session_id=1)) == CONTINUE
    assert f.deliver(asm, f.frame(64, b"cd", END, session_id=2)) == CONTINUE
    assert col.payloads == [b"abcd"]
    assert f.deliver(asm, f.frame(128, b"mid", 0)) == CONTINUE          # no message in progress: dropped
    assert f.deliver(asm, f.frame(192, b"x", BEGIN)) == CONTINUE
    asm.clear()
    assert f.deliver(asm, f.frame(256, b"y", END)) == CONTINUE
    assert col.payloads == [b"abcd"]
    with pytest.raises(InvalidArgumentError):
        ImageControlledFragmentAssembler(42)


def test_buffer_builder_validation():
    with pytest.raises(InvalidArgumentError):
        BufferBuilder(-1)
    assert BufferBuilder(0).capacity == 64


# -- a delegate closing what it was handed --------------------------------------------------------

@pytest.mark.parametrize("kind", [FragmentAssembler, ImageFragmentAssembler, ControlledFragmentAssembler,
                                  ImageControlledFragmentAssembler])
@pytest.mark.parametrize("what", ["buffer", "header"])
def test_delegate_closing_its_buffer_or_header_does_not_break_the_builder(kind, what):
    # The builder keeps raw pointers into its storage and its complete header. A delegate that
    # closes the AtomicBuffer it was handed (or header.buffer) must not leave those pointers NULL:
    # the next message used to be copied to address 0 (segfault).
    f = Fragments()
    got = []

    def delegate(buffer, offset, length, header):
        got.append((buffer.get_bytes(offset, length), header.term_offset, header.frame_length,
                    header.flags, header.position))
        (buffer if what == "buffer" else header.buffer).close()
        return CONTINUE

    asm = kind(delegate)
    for start, text in ((0, b"first"), (256, b"second")):
        f.deliver(asm, f.frame(start, text[:2], BEGIN))
        f.deliver(asm, f.frame(start + 64, text[2:4], 0))
        f.deliver(asm, f.frame(start + 128, text[4:], END))
    assert got == [(b"first", 0, 37, 0xC0, 192), (b"second", 256, 38, 0xC0, 448)]


def test_controlled_abort_after_delegate_closed_header_redelivers_intact():
    # ABORT keeps the message for redelivery; the redelivered header must still carry the BEGIN
    # fragment's fields even though the delegate closed header.buffer the first time.
    f = Fragments()
    got = []

    def delegate(buffer, offset, length, header):
        got.append((buffer.get_bytes(offset, length), header.term_offset, header.frame_length, header.flags))
        header.buffer.close()
        return ABORT if len(got) == 1 else CONTINUE

    asm = ControlledFragmentAssembler(delegate)
    f.deliver(asm, f.frame(0, b"ab", BEGIN))
    end = f.frame(64, b"cd", END)
    assert f.deliver(asm, end) == ABORT
    assert f.deliver(asm, end) == CONTINUE
    assert got == [(b"abcd", 0, 36, 0xC0)] * 2
