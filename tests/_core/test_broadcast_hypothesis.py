# SPDX-License-Identifier: Apache-2.0
"""Random transmit / receive sequences across many wraps and laps, checked against a model of
BroadcastTransmitter / BroadcastReceiver (positions, padding, latest, lap detection)."""
import struct

import pytest

from hypothesis import given, settings, strategies as st

from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.broadcast import BroadcastReceiver, BroadcastTransmitter, CopyBroadcastReceiver
from aeron.common.errors import IllegalStateError

CAPACITY = 256
MAX_MSG = CAPACITY // 8


def align8(n):
    return (n + 7) & ~7


class Model:
    def __init__(self):
        self.tail = 0
        self.latest = 0
        self.records = {}          # position -> (type, payload)
        self.padding = {}          # position -> padding length

    def transmit(self, msg_type, payload):
        aligned = align8(len(payload) + 8)
        to_end = CAPACITY - self.tail % CAPACITY
        if to_end < aligned:
            self.padding[self.tail] = to_end
            self.tail += to_end
        self.records[self.tail] = (msg_type, payload)
        self.latest = self.tail
        self.tail += aligned

    def receive(self, state):
        """Advance a receiver model {next, lapped}; the expected record or None."""
        if self.tail <= state["next"]:
            return None
        cursor = state["next"]
        if cursor + CAPACITY <= self.tail:
            state["lapped"] += 1
            cursor = self.latest
        if cursor in self.padding:
            cursor += self.padding[cursor]
        msg_type, payload = self.records[cursor]
        state["next"] = cursor + align8(len(payload) + 8)
        return msg_type, payload


ops = st.lists(
    st.one_of(
        st.tuples(st.just("tx"), st.integers(0, MAX_MSG), st.integers(1, 20)),
        st.tuples(st.just("rx"), st.integers(1, 4), st.just(0)),
        st.tuples(st.just("copy"), st.integers(1, 4), st.just(0)),
    ),
    min_size=1, max_size=250)


@settings(max_examples=150, deadline=None)
@given(ops)
def test_broadcast_matches_model_across_wraps_and_laps(operations):
    mem = bytearray(CAPACITY + 128)
    buf = AtomicBuffer(mem)
    tx = BroadcastTransmitter(buf)
    rx = BroadcastReceiver(buf)
    cr = CopyBroadcastReceiver(BroadcastReceiver(buf), scratch_length=MAX_MSG)
    model = Model()
    rx_state = {"next": 0, "lapped": 0}
    cr_state = {"next": 0, "lapped": 0}
    counter = 0
    for op, a, b in operations:
        if op == "tx":
            for i in range(b):                       # a burst of b messages, sizes varying from a
                counter += 1
                size = (a + 7 * i) % (MAX_MSG + 1)
                payload = bytes([counter & 0xFF]) * size
                tx.transmit(counter % 1000 + 1, payload)
                model.transmit(counter % 1000 + 1, payload)
                assert struct.unpack_from("<qqq", mem, CAPACITY) == (model.tail, model.tail, model.latest)
                index = model.latest % CAPACITY
                assert struct.unpack_from("<ii", mem, index) == (size + 8, counter % 1000 + 1)
            for pos, length in model.padding.items():
                if pos + CAPACITY > model.tail:              # not yet overwritten by a later lap
                    assert struct.unpack_from("<ii", mem, pos % CAPACITY) == (length, -1)
        elif op == "rx":
            for _ in range(a):
                expected = model.receive(rx_state)
                assert rx.receive_next() == (expected is not None)
                if expected is None:
                    break
                assert rx.lapped_count == rx_state["lapped"]
                assert (rx.type_id, rx.buffer.get_bytes(rx.offset, rx.length)) == expected
                assert rx.next_record == rx_state["next"]
                assert rx.validate()
        else:
            for _ in range(a):
                lapped_before = cr_state["lapped"]
                expected = model.receive(cr_state)
                got = []
                if expected is not None and cr_state["lapped"] != lapped_before:
                    with pytest.raises(IllegalStateError, match="unable to keep up"):
                        cr.receive(lambda *args: got.append(args))
                    assert got == []
                    continue
                n = cr.receive(lambda t, bb, o, ln: got.append((t, bb.get_bytes(o, ln))))
                assert n == (0 if expected is None else 1)
                if expected is None:
                    break
                assert got == [expected]
    assert rx.lapped_count == rx_state["lapped"]
