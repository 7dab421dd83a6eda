# SPDX-License-Identifier: Apache-2.0
"""Properties of TermReader over terms written by the independent tests/_core/framing.py writer."""

from hypothesis import given, settings, strategies as st

from aeron._core.logbuffer import LogBuffers
from aeron._core.term_reader import ABORT, BREAK, COMMIT, CONTINUE, TermReader
from tests.support import align

from .framing import FRAME_ALIGNMENT, TermWriter

TERM = 65536
SESSION, STREAM, INITIAL = 77, 3, 2**31 - 2   # near the wrap; LogBuffers.create rejects negatives (reported)

item = st.one_of(
    st.tuples(st.just("msg"), st.integers(0, 600)),
    st.tuples(st.just("pad"), st.integers(1, 8)),
)


def build(items, uncommitted_tail):
    log = LogBuffers.create(term_length=TERM, initial_term_id=INITIAL, session_id=SESSION, stream_id=STREAM)
    w = TermWriter(log, 0, session_id=SESSION, stream_id=STREAM, term_id=INITIAL)
    expected = []
    for n, (kind, size) in enumerate(items):
        if kind == "msg":
            payload = bytes([n % 251]) * size
            w.frame(payload, reserved_value=n)
            expected.append((payload, n, w.offset))
        else:
            w.pad(size * 32)
    end = w.offset
    if uncommitted_tail:
        w.frame(b"claimed", frame_length=-39)
    w.close()
    return log, expected, end


@settings(max_examples=150, deadline=None)
@given(st.lists(item, max_size=40), st.lists(st.integers(1, 7), min_size=1, max_size=10), st.booleans())
def test_poll_delivers_everything_in_order(items, limits, uncommitted_tail):
    log, expected, end = build(items, uncommitted_tail)
    reader = TermReader(log)
    got = []

    def handler(buffer, offset, length, header):
        got.append((buffer.get_bytes(offset, length), header.reserved_value, header.position))
        assert header.session_id == SESSION and header.term_id == INITIAL
        assert header.frame_length == length + 32 and header.offset + 32 == offset

    polls = 0
    while True:
        limit = limits[polls % len(limits)]
        n = reader.poll(handler, limit)
        assert 0 <= n <= limit
        polls += 1
        if n == 0:
            break
        assert polls <= len(expected) + 1
    assert got == expected
    # trailing padding is consumed too; an uncommitted frame is never passed
    assert reader.position == end
    assert reader.poll(handler, 10) == 0
    reader.close()


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, 300), min_size=1, max_size=30),
       st.lists(st.sampled_from([ABORT, BREAK, COMMIT, CONTINUE]), max_size=60),
       st.integers(1, 8))
def test_controlled_poll_abort_redelivers_exactly(sizes, actions, fragment_limit):
    log, expected, end = build([("msg", s) for s in sizes], False)
    reader = TermReader(log)
    deliveries = []
    pending = list(actions)

    def handler(buffer, offset, length, header):
        action = pending.pop(0) if pending else CONTINUE
        deliveries.append((header.reserved_value, action, reader.position))
        return action

    for _ in range(len(sizes) + len(actions) + 2):
        if reader.controlled_poll(handler, fragment_limit) == 0 and reader.position == end:
            break
    assert reader.position == end
    accepted = [d[0] for d in deliveries if d[1] != ABORT]
    assert accepted == list(range(len(sizes)))
    for i, (n, action, _) in enumerate(deliveries):
        if action == ABORT:
            assert deliveries[i + 1][0] == n
    # COMMIT publishes the position at once: the next delivery sees it
    for i, (n, action, _) in enumerate(deliveries[:-1]):
        if action == COMMIT:
            assert deliveries[i + 1][2] == expected[n][2]
    reader.close()


@settings(max_examples=100, deadline=None)
@given(st.lists(item, max_size=30), st.integers(0, 2048))
def test_bounded_poll_never_starts_a_frame_at_or_past_limit(items, limit):
    log, expected, end = build(items, False)
    reader = TermReader(log)
    starts = []
    reader.bounded_poll(lambda b, o, n, h: starts.append(h.offset), limit, 1000)
    assert all(s < limit for s in starts)
    assert [e[2] for e in expected if e[2] - align(len(e[0]) + 32, FRAME_ALIGNMENT) < limit] == \
        [e[2] for e in expected][:len(starts)]
    reader.close()
