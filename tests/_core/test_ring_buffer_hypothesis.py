# SPDX-License-Identifier: Apache-2.0
"""Random write / claim / read sequences across many wraps, checked against a model of the
claim rules of ManyToOneRingBuffer (positions, padding, when the ring is full)."""
import struct

from hypothesis import given, settings, strategies as st

from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.ring_buffer import ManyToOneRingBuffer
from aeron.common.errors import CorruptFileError

CAPACITY = 256
MAX_MSG = CAPACITY // 8


def align8(n):
    return (n + 7) & ~7


class Model:
    """Expected tail/head and the claim decision, written from the reference algorithm."""

    def __init__(self):
        self.tail = 0
        self.head = 0

    def claim(self, length):
        required = align8(length + 8)
        if required > CAPACITY - (self.tail - self.head):
            return None
        index = self.tail % CAPACITY
        to_end = CAPACITY - index
        padding = 0
        if required > to_end:
            if required > self.head % CAPACITY:
                return None
            padding = to_end
        self.tail += required + padding
        return (index, padding)


ops = st.lists(
    st.one_of(
        st.tuples(st.just("write"), st.integers(0, MAX_MSG), st.integers(1, 12)),    # burst of writes
        st.tuples(st.just("claim"), st.integers(0, MAX_MSG), st.booleans()),
        st.tuples(st.just("read"), st.integers(1, 20), st.just(0)),
    ),
    min_size=1, max_size=200)


@settings(max_examples=150, deadline=None)
@given(ops)
def test_ring_matches_model_across_wraps(operations):
    mem = bytearray(CAPACITY + 768)
    buf = AtomicBuffer(mem)
    ring = ManyToOneRingBuffer(buf)
    model = Model()
    pending = []                    # messages written, not yet read (FIFO)
    counter = 0
    steps = []
    for op, a, b in operations:
        if op == "write":
            # A burst of b writes with sizes varying from a; type ids 1..1000.
            steps.extend(("write", (a + 5 * i) % (MAX_MSG + 1), (a * 31 + i) % 1000 + 1) for i in range(b))
        else:
            steps.append((op, a, b))
    # Replaying the sequence (state carried over) moves it through different phases of the ring,
    # so even short examples wrap many times.
    for op, a, b in steps * 10:
        if op == "read":
            got = []
            ring.read(lambda t, bb, o, n: got.append((t, bb.get_bytes(o, n))), a)
            assert got == pending[:len(got)]
            del pending[:len(got)]
            model.head = ring.consumer_position()
            continue
        counter += 1
        payload = bytes([counter & 0xFF]) * a
        expected = model.claim(a)
        if op == "write":
            ok = ring.write(b, payload)
            assert ok == (expected is not None)
            msg_type = b
        else:
            index = ring.try_claim(7, a)
            assert (index >= 0) == (expected is not None)
            if index >= 0:
                assert struct.unpack_from("<i", mem, index - 8)[0] == -(a + 8)
                buf.put_bytes(index, payload)
                if b:
                    ring.commit(index)
                else:
                    ring.abort(index)
            ok = index >= 0 and b
            msg_type = 7
        if expected is not None:
            record_index, padding = expected
            if padding:
                assert struct.unpack_from("<ii", mem, record_index) == (padding, -1)
                record_index = 0
            length, t = struct.unpack_from("<ii", mem, record_index)
            assert length == a + 8
            assert t == (msg_type if (op == "write" or b) else -1)
            assert mem[record_index + 8:record_index + 8 + a] == payload
        if ok:
            pending.append((msg_type, payload))
        assert ring.producer_position() == model.tail
    # Drain: everything comes out in order and the data area is left zeroed.
    got = []
    for _ in range(3):
        ring.read(lambda t, bb, o, n: got.append((t, bb.get_bytes(o, n))))
    assert got == pending
    assert ring.consumer_position() == ring.producer_position()
    assert buf.is_zero(0, CAPACITY)


@settings(max_examples=200, deadline=None)
@given(before=st.lists(st.binary(max_size=MAX_MSG), max_size=6),
       bad_payload=st.binary(min_size=0, max_size=MAX_MSG),
       bad_kind=st.sampled_from(["short", "huge", "past-the-tail"]), bad_amount=st.integers(1, 2**20),
       after=st.lists(st.binary(max_size=MAX_MSG), max_size=6),
       head_start=st.integers(0, 3))
def test_one_malformed_record_loses_nothing_else(before, bad_payload, bad_kind, bad_amount, after, head_start):
    # a record whose producer claimed room for `bad_payload` but wrote a length that cannot be right (shorter
    # than a header, longer than the ring, or running past all that was claimed), amid well-formed records,
    # anywhere in a lap: every well-formed record is delivered exactly once, in order, and nothing else is.
    # (A wrong length that ends on a later record's boundary before the tail cannot be told from a right one.)
    mem = bytearray(CAPACITY + 768)
    buf = AtomicBuffer(mem)
    ring = ManyToOneRingBuffer(buf)
    for _ in range(head_start):                 # start part-way through a lap, so some cases wrap
        assert ring.write(1, bytes(MAX_MSG - 8))
        ring.read(lambda *a: None)
    expected = []
    for i, payload in enumerate(before):
        if ring.write(10 + i, payload):
            expected.append((10 + i, payload))
    index = ring.try_claim(99, len(bad_payload))
    bad = index >= 0
    record_position = ring.producer_position() - align8(len(bad_payload) + 8)
    if bad and bad_payload:
        buf.put_bytes(index, bad_payload)
    for i, payload in enumerate(after):
        if ring.write(50 + i, payload):
            expected.append((50 + i, payload))
    if bad:
        if bad_kind == "short":
            bad_length = 1 + bad_amount % 7
        elif bad_kind == "huge":
            bad_length = CAPACITY + min(bad_amount, 2**31 - 1 - CAPACITY)
        else:
            bad_length = ring.producer_position() - record_position + bad_amount % 64 + 1
        buf.put_i32_ordered(index - 8, bad_length)
    got = []
    reports = 0
    for _ in range(20):
        try:
            if ring.read(lambda t, b, o, n: got.append((t, b.get_bytes(o, n)))) == 0 and \
                    ring.consumer_position() == ring.producer_position():
                break
        except CorruptFileError as exc:
            reports += 1
            assert "malformed length" in str(exc)
    assert got == expected
    assert reports == (1 if bad else 0)
    assert ring.consumer_position() == ring.producer_position()
