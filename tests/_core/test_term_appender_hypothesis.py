# SPDX-License-Identifier: Apache-2.0
"""Properties of positions/tails and of what the appenders leave in the terms, checked by walking the
frames in plain Python."""

from hypothesis import event, given, settings, strategies as st

from aeron._core import logbuffer as lb
from aeron._core.term_appender import ADMIN_ACTION, ConcurrentTermAppender, ExclusiveTermAppender
from tests._core.test_term_appender import HEADER, align32, make_raw_log

INT32 = st.integers(-(2**31), 2**31 - 1)


def wrap32(v):
    return (v + 2**31) % 2**32 - 2**31


# -- pure-Python model of LogBufferDescriptor's tails and positions ---------------------------------------
@settings(max_examples=200, deadline=None)
@given(shift=st.integers(16, 30), initial=INT32, count=st.integers(0, 2**31 - 1), data=st.data())
def test_position_round_trip(shift, initial, count, data):
    term_length = 1 << shift
    offset = data.draw(st.integers(0, term_length // 32 - 1)) * 32
    term_id = wrap32(initial + count)
    position = lb.compute_position(term_id, offset, shift, initial)
    assert position == count * term_length + offset                       # model
    assert lb.compute_term_begin_position(term_id, shift, initial) == count * term_length
    assert lb.compute_term_id_from_position(position, shift, initial) == term_id
    assert lb.compute_term_offset_from_position(position, shift) == offset
    assert lb.term_count(term_id, initial) == count
    assert lb.index_by_position(position, shift) == count % 3 == lb.index_by_term(initial, term_id)
    assert lb.index_by_term_count(count) == count % 3
    assert position < lb.max_possible_position(term_length)


@settings(max_examples=200, deadline=None)
@given(term_id=INT32, raw_offset=st.integers(0, 2**32 - 1), shift=st.integers(16, 30))
def test_raw_tail_round_trip(term_id, raw_offset, shift):
    term_length = 1 << shift
    raw = (term_id << 32) | raw_offset
    if raw_offset < 2**31:
        assert lb.pack_tail(term_id, raw_offset) == raw
    assert lb.term_id(raw) == term_id
    assert lb.term_offset(raw, term_length) == min(raw_offset, term_length)


# -- append then walk -----------------------------------------------------------------------------------
TERM = 65536
MAX_MESSAGE = TERM // 8


def payload(index, length):
    return bytes((index * 31 + i) & 0xFF for i in range(length))


def walk_log(log, start_position, end_position, session_id, stream_id):
    """Walk every frame from start to end position; return (messages [(payload, end_position)], pads)."""
    term_length = log.term_length
    shift = log.position_bits_to_shift
    initial = log.initial_term_id
    data = log.buffer.get_bytes(0, 3 * term_length)
    messages, pads = [], []
    assembling = None
    position = start_position
    while position < end_position:
        term_count = position >> shift
        term_id = wrap32(initial + term_count)
        base = (term_count % 3) * term_length
        offset = position & (term_length - 1)
        (length, version, flags, ftype, frame_offset, session, stream, fterm_id, reserved) = \
            HEADER.unpack_from(data, base + offset)
        assert length > 0, f"gap at position {position}"
        assert (version, frame_offset, session, stream, fterm_id) == (0, offset, session_id, stream_id, term_id)
        if ftype == 0:
            assert flags == 0xC0
            # end-of-term padding covers exactly the rest of the term
            assert offset + length == term_length, f"pad at {offset} of length {length}"
            assert assembling is None
            pads.append(position)
        else:
            assert ftype == 1
            body = data[base + offset + 32:base + offset + length]
            if flags & 0x80:
                assert assembling is None
                assembling = bytearray()
            else:
                assert assembling is not None, "fragment without BEGIN"
            assembling += body
            if flags & 0x40:
                messages.append((bytes(assembling), position + align32(length)))
                assembling = None
            else:
                assert length == log.mtu_length, "non-final fragments are full"
        position += align32(length)
    assert position == end_position
    assert assembling is None
    return messages, pads


@settings(max_examples=200, deadline=None)
@given(
    kind=st.sampled_from([ConcurrentTermAppender, ExclusiveTermAppender]),
    initial=INT32,
    start_count=st.integers(0, 1000),
    # biased toward the end of the term so that many examples trip it
    start_slot=st.one_of(st.integers(0, TERM // 32), st.integers(TERM // 32 - 100, TERM // 32)),
    mtu=st.sampled_from([64, 256, 1408, 4096]),
    session_id=INT32,
    lengths=st.lists(st.one_of(st.integers(0, 200), st.integers(0, MAX_MESSAGE)), min_size=3, max_size=40),
    vectored=st.booleans(),
)
def test_append_then_walk(kind, initial, start_count, start_slot, mtu, session_id, lengths, vectored):
    term_id = wrap32(initial + start_count)
    start_offset = start_slot * 32
    log = make_raw_log(TERM, initial, session_id, 77, term_id=term_id, term_offset=start_offset, mtu_length=mtu)
    app = kind(log)
    start = start_count * TERM + start_offset
    assert app.position == start
    max_payload = mtu - 32
    expected = []
    position = start
    active = start_count                 # term count the appender should be on
    for index, length in enumerate(lengths):
        msg = payload(index, length)
        framed = align32(length + 32) if length <= max_payload else lb.compute_fragmented_length(length, max_payload)
        if position - start + framed > 2 * TERM:
            break                        # stay clear of the partition we started in (no cleaner here)
        parts = [msg[:length // 3], msg[length // 3:]] if vectored else None
        result = app.offerv(parts) if vectored else app.offer(msg)
        if result == ADMIN_ACTION:
            # tripped: the rest of the term became padding (if any was left) and the log rotated
            term_end = (active + 1) * TERM
            event("tripped the term" if position < term_end else "term already full")
            assert position + framed > term_end
            position = term_end
            active += 1
            assert app.position == position
            assert log.active_term_count == active
            if position - start + framed > 2 * TERM:
                break
            result = app.offerv(parts) if vectored else app.offer(msg)
        assert result == position + framed, (index, length)
        position = result
        expected.append((msg, result))
        assert app.position == position
    messages, pads = walk_log(log, start, position, session_id, 77)
    event("fragmented" if any(len(m) > max_payload for m, _ in expected) else "unfragmented only")
    assert messages == expected
    assert len(pads) <= active - start_count
    assert log.active_term_count == active
    raw = log.raw_tails()[active % 3]
    assert lb.term_id(raw) == wrap32(initial + active)
    assert active * TERM + lb.term_offset(raw, TERM) == position
    app.close()
    log.close()
