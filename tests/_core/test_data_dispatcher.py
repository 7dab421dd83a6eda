# SPDX-License-Identifier: Apache-2.0
"""DataPacketDispatcher, the compiled receive data path: datagrams of a known (session, stream) from a known
connection are inserted into the image's term with hwm and counters; what needs Python (unknown session, SETUP,
RTTM, end of stream, a new source, a rejected image) comes back as events naming the slot; invalid datagrams are
counted and dropped; hostile bytes and lengths never crash it or write outside a term; the table survives any
order of adds and removes. Over real loopback sockets (one recvmmsg per poll) and through ``dispatch``."""
from __future__ import annotations

import random
import socket
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aeron._core import frames as f
from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.counters import AtomicCounter
from aeron._core.data_dispatcher import (
    DISPATCH_HANDLED, DISPATCH_RTTM_FRAME, DISPATCH_SETUP_FRAME, DISPATCH_TO_IMAGE, FAST_CONNECTIONS,
    DataPacketDispatcher, ImageReceiveState, address_key,
)
from aeron._core.loss_generator import LossGenerator
from aeron._core.udp_transport import UdpTransport
from aeron._core.wakeup import PARKED, stream_bit
from aeron.common.wakeup import new_waiter, open_board
from aeron.common.errors import InvalidArgumentError

TERM_LENGTH = 65536
SESSION, STREAM, INITIAL_TERM_ID = 7, 1001, 100
DESTINATION = 1
SOURCE = ("127.0.0.1", 40124)
NOW = 5_000_000_000
DEADLINE_S = 3.0
BYTES_RECEIVED, INVALID, HEARTBEATS, OVER_RUNS, UNDER_RUNS, HWM = range(6)


def data_frame(term_offset, payload, *, session_id=SESSION, stream_id=STREAM, term_id=INITIAL_TERM_ID,
               flags=f.UNFRAGMENTED):
    frame_length = f.DATA_HEADER_LENGTH + len(payload)
    out = bytearray((frame_length + 31) & ~31)
    f.encode_heartbeat(out, 0, session_id, stream_id, term_id, term_offset, flags)
    out[0:4] = frame_length.to_bytes(4, "little")
    out[f.DATA_HEADER_LENGTH:frame_length] = payload
    return bytes(out)


def heartbeat(term_offset, flags=f.UNFRAGMENTED, session_id=SESSION):
    out = bytearray(f.DATA_HEADER_LENGTH)
    f.encode_heartbeat(out, 0, session_id, STREAM, INITIAL_TERM_ID, term_offset, flags)
    return bytes(out)


class Rig:
    def __init__(self) -> None:
        self.values = AtomicBuffer(bytearray(128 * 8))
        self.counters = [AtomicCounter(self.values, i) for i in range(6)]
        self.dispatcher = DataPacketDispatcher(*self.counters[:5])
        self.terms = [AtomicBuffer(bytearray(TERM_LENGTH)) for _ in range(3)]
        self.state = self.image(SESSION, self.terms)
        self.dispatcher.add(self.state)

    def image(self, session_id, terms=None, stream_id=STREAM):
        state = ImageReceiveState(session_id, stream_id, INITIAL_TERM_ID,
                                  terms or [AtomicBuffer(bytearray(TERM_LENGTH)) for _ in range(3)],
                                  self.counters[HWM], 0, 0)
        state.set_connections([(DESTINATION, address_key(SOURCE), 0)])
        return state

    def __getitem__(self, index):
        return self.counters[index].get()

    def dispatch(self, datagram, source=SOURCE, destination=DESTINATION):
        return self.dispatcher.dispatch(datagram, len(datagram), address_key(source), destination, NOW)


@pytest.fixture
def rig():
    return Rig()


def test_data_of_a_known_image_is_inserted_with_hwm_times_and_counters(rig):
    frame = data_frame(64, b"x" * 40)
    assert rig.dispatch(frame) == DISPATCH_HANDLED
    assert rig.terms[0].get_bytes(64, len(frame)) == frame
    assert (rig[BYTES_RECEIVED], rig[HWM], rig.dispatcher.inserted) == (len(frame), 64 + len(frame), len(frame))
    assert rig.state.time_of_last_packet_ns == NOW and rig.state.connection_time(0) == NOW
    rig.state.last_sm_position = TERM_LENGTH - 1024                  # the window now reaches into the next term
    assert rig.dispatch(data_frame(0, b"y" * 8, term_id=INITIAL_TERM_ID + 1)) == DISPATCH_HANDLED
    assert rig.terms[1].get_i32(0) == 40


def test_gaps_count_the_data_inserted_past_the_high_water_mark(rig):
    assert rig.dispatch(data_frame(0, b"a" * 32)) == DISPATCH_HANDLED and rig.dispatcher.gaps == 0   # in order
    assert rig.dispatch(data_frame(192, b"c" * 32)) == DISPATCH_HANDLED and rig.dispatcher.gaps == 1  # a gap before
    assert rig.dispatch(data_frame(64, b"b" * 32)) == DISPATCH_HANDLED and rig.dispatcher.gaps == 0   # a fill
    assert rig.dispatch(heartbeat(1024)) == DISPATCH_HANDLED and rig.dispatcher.gaps == 0             # no data


def test_unknown_session_unknown_stream_setup_and_rttm_go_to_python(rig):
    assert rig.dispatch(data_frame(0, b"a", session_id=8)) == DISPATCH_TO_IMAGE
    assert rig.dispatch(data_frame(0, b"a", stream_id=9)) == DISPATCH_TO_IMAGE
    setup = bytearray(f.SETUP_HEADER_LENGTH)
    f.encode_setup(setup, 0, 8, STREAM, 100, 100, 0, TERM_LENGTH, 1408)
    assert rig.dispatch(bytes(setup)) == DISPATCH_SETUP_FRAME
    rttm = bytearray(f.RTTM_HEADER_LENGTH)
    f.encode_rttm(rttm, 0, SESSION, STREAM, 1, 0, 0)
    assert rig.dispatch(bytes(rttm)) == DISPATCH_RTTM_FRAME
    assert rig.terms[0].get_i32(0) == 0 and rig[INVALID] == 0


def test_a_new_source_or_destination_a_rejected_image_and_end_of_stream_go_to_python(rig):
    frame = data_frame(0, b"a" * 8)
    assert rig.dispatch(frame, source=("127.0.0.1", 1)) == DISPATCH_TO_IMAGE
    assert rig.dispatch(frame, destination=2) == DISPATCH_TO_IMAGE
    assert rig.dispatch(heartbeat(0, f.UNFRAGMENTED | f.EOS_FLAG)) == DISPATCH_TO_IMAGE
    rig.state.set_connections([(DESTINATION, address_key(SOURCE), 0), (2, None, 0)])   # fixed: any source
    assert rig.dispatch(frame, source=("127.0.0.1", 1), destination=2) == DISPATCH_HANDLED
    assert rig.state.connection_time(1) == NOW
    rig.state.accepting = False
    assert rig.dispatch(data_frame(64, b"b" * 8)) == DISPATCH_TO_IMAGE
    assert rig.terms[0].get_i32(64) == 0


def test_heartbeats_and_flow_control_window(rig):
    assert rig.dispatch(heartbeat(1024)) == DISPATCH_HANDLED
    assert (rig[HEARTBEATS], rig[HWM], rig.dispatcher.inserted) == (1, 1024, 0)
    rig.state.last_sm_position = 4096
    assert rig.dispatch(data_frame(0, b"old")) == DISPATCH_HANDLED                    # behind the last SM
    assert rig[UNDER_RUNS] == 1 and rig.terms[0].get_i32(0) == 0
    assert rig.dispatch(data_frame(4096 + TERM_LENGTH // 2, b"far")) == DISPATCH_HANDLED   # past the window
    assert rig[OVER_RUNS] == 1
    assert rig.dispatch(data_frame(0, b"x", term_id=INITIAL_TERM_ID - 1)) == DISPATCH_HANDLED  # before the image
    assert rig[INVALID] == 0 and rig.dispatcher.inserted == 0


@pytest.mark.parametrize("datagram", [
    b"\x00" * 7,                                                     # shorter than a header
    data_frame(0, b"a" * 8)[:40],                                    # not 32-aligned
    bytes([0x20, 0, 0, 0, 9]) + data_frame(0, b"")[5:],              # bad version
    data_frame(TERM_LENGTH - 32, b"a" * 40),                         # runs past the term
    data_frame(0, b"a" * 8) + data_frame(128, b"b" * 8),             # second frame not at the running offset
], ids=["short", "unaligned", "version", "past-term", "offset"])
def test_invalid_datagrams_are_counted_and_dropped(rig, datagram):
    assert rig.dispatch(datagram) == DISPATCH_HANDLED
    assert rig[INVALID] == 1 and rig.dispatcher.inserted == 0
    assert all(term.get_bytes(0, TERM_LENGTH) == bytes(TERM_LENGTH) for term in rig.terms)


@settings(max_examples=300, deadline=None)
@given(datagram=st.binary(min_size=0, max_size=256), claimed=st.integers(min_value=-2**31, max_value=2**31 - 1),
       offset=st.integers(min_value=-2**31, max_value=2**31 - 1), term_id=st.integers(min_value=-2**31,
                                                                                    max_value=2**31 - 1))
def test_hostile_datagrams_never_crash_nor_write_outside_the_terms(datagram, claimed, offset, term_id):
    rig = Rig()
    guard = AtomicBuffer(bytearray(3 * TERM_LENGTH + 2 * 4096))       # terms inside, guard bytes around them
    terms = [AtomicBuffer(guard, 4096 + i * TERM_LENGTH, TERM_LENGTH) for i in range(3)]
    state = rig.image(SESSION, terms)
    rig.dispatcher.add(state)
    header = bytearray(data_frame(0, b"")[:32])
    header[0:4] = claimed.to_bytes(4, "little", signed=True)
    header[8:12] = offset.to_bytes(4, "little", signed=True)
    header[20:24] = term_id.to_bytes(4, "little", signed=True)
    for candidate in (datagram, bytes(header) + datagram):
        kind = rig.dispatch(candidate)
        assert kind in (DISPATCH_HANDLED, DISPATCH_TO_IMAGE, DISPATCH_SETUP_FRAME, DISPATCH_RTTM_FRAME)
    assert guard.get_bytes(0, 4096) == bytes(4096) and guard.get_bytes(4096 + 3 * TERM_LENGTH, 4096) == bytes(4096)


def test_lengths_beyond_the_buffer_are_refused(rig):
    with pytest.raises(InvalidArgumentError):
        rig.dispatcher.dispatch(b"\x00" * 32, 33, address_key(SOURCE), DESTINATION, NOW)
    with pytest.raises(InvalidArgumentError):
        rig.dispatcher.dispatch(b"\x00" * 32, -1, address_key(SOURCE), DESTINATION, NOW)
    with pytest.raises(InvalidArgumentError):
        rig.state.set_connections([(DESTINATION, b"\x00" * 29, 0)])
    with pytest.raises(InvalidArgumentError):
        rig.dispatcher.event_slot(0)


def test_only_the_first_connections_are_matched_in_compiled_code(rig):
    sources = [("127.0.0.1", 50000 + i) for i in range(FAST_CONNECTIONS + 1)]
    rig.state.set_connections([(DESTINATION, address_key(s), 0) for s in sources])
    assert rig.state.connection_count == FAST_CONNECTIONS
    assert rig.dispatch(data_frame(0, b"a"), source=sources[FAST_CONNECTIONS - 1]) == DISPATCH_HANDLED
    assert rig.dispatch(data_frame(64, b"b"), source=sources[FAST_CONNECTIONS]) == DISPATCH_TO_IMAGE


def test_the_table_keeps_every_pair_through_adds_and_removes(rig):
    states = {}
    rng = random.Random(11)
    for _ in range(2000):
        session_id = rng.randrange(-40, 40)
        stream_id = rng.choice((STREAM, STREAM + 1))
        if (session_id, stream_id) in states and rng.random() < 0.5:
            assert rig.dispatcher.remove(states.pop((session_id, stream_id)))
        else:
            state = rig.image(session_id, stream_id=stream_id)
            rig.dispatcher.add(state)                             # replaces an earlier state of the pair
            states[(session_id, stream_id)] = state
        if (SESSION, STREAM) not in states:
            states[(SESSION, STREAM)] = rig.state
            rig.dispatcher.add(rig.state)
    assert len(rig.dispatcher) == len(states)
    for (session_id, stream_id), state in states.items():
        assert rig.dispatcher.get(session_id, stream_id) is state
    assert rig.dispatcher.get(99, STREAM) is None
    assert not rig.dispatcher.remove(rig.image(99))


def _send_all(transport, datagrams, sender):
    for datagram in datagrams:
        sender.sendto(datagram, transport.bound_address)


def _poll_until(rig, transport, count, loss=None):
    """Poll until ``count`` datagrams were received (bounded); the events of each poll, as (kind, payload)."""
    received, events, dropped = 0, [], 0
    deadline = time.monotonic() + DEADLINE_S
    while received < count and time.monotonic() < deadline:
        received += rig.dispatcher.poll(transport, DESTINATION, NOW, loss)
        dropped += rig.dispatcher.dropped
        for i in range(rig.dispatcher.event_count):
            slot = rig.dispatcher.event_slot(i)
            events.append((rig.dispatcher.event_kind(i), bytes(transport.slots[slot][:transport.length(slot)])))
    return received, events, dropped


def _loopback(batch):
    """A receiving transport and a sending socket on 127.0.0.1 (the caller closes both)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sender.bind(("127.0.0.1", 0))
    return UdpTransport(sock, batch=batch), sender


def test_poll_receives_a_batch_inserts_and_hands_back_the_rest_over_loopback(rig):
    transport, sender = _loopback(batch=16)
    try:
        rig.state.set_connections([(DESTINATION, address_key(sender.getsockname()), 0)])
        frames_in = [data_frame(i * 64, bytes([i]) * 24) for i in range(20)]
        unknown = data_frame(0, b"u", session_id=8)
        _send_all(transport, [*frames_in, unknown, b"\x01\x02\x03"], sender)
        received, events, _ = _poll_until(rig, transport, 22)
        assert received == 22
        assert events == [(DISPATCH_TO_IMAGE, unknown)]
        assert rig.terms[0].get_bytes(0, 20 * 64) == b"".join(frames_in)
        assert rig[INVALID] == 1 and rig[HWM] == 20 * 64
        assert rig[BYTES_RECEIVED] == 20 * 64 + len(unknown) + 3
    finally:
        transport.close()
        sender.close()


def test_poll_wakes_the_subscribers_of_what_it_inserted_on_its_wake_board(rig, shm_dir):
    board = open_board(str(shm_dir), create=True)
    ours, other = new_waiter(board, stream_bit(STREAM), futex=True), new_waiter(board, stream_bit(STREAM + 1))
    transport, sender = _loopback(batch=8)
    try:
        rig.dispatcher.set_wake_board(board)
        rig.state.set_connections([(DESTINATION, address_key(sender.getsockname()), 0)])
        ours.prepare()
        other.prepare()
        _send_all(transport, [heartbeat(0)], sender)
        _poll_until(rig, transport, 1)
        assert board.wakeups_sent == 0                                   # a heartbeat wakes nobody
        _send_all(transport, [data_frame(0, b"a" * 8)], sender)
        _poll_until(rig, transport, 1)
        # woken by the poll itself, before anyone took the mask; the other stream's subscriber stays parked
        assert board.wakeups_sent == 1 and ours.wait(10_000_000_000) is True
        assert board.slot_state(other.index)[0] == PARKED
        ours.prepare()
        _send_all(transport, [data_frame(64, b"b" * 8)], sender)
        _poll_until(rig, transport, 1)
        assert board.wakeups_sent == 1       # its bit was signalled since the mask was last taken: not again
        assert rig.dispatcher.take_data_mask() == stream_bit(STREAM)     # all of it, for the receiver's activity
        assert rig.dispatcher.unsignalled_mask == 0                      # ... none of it left for it to signal
        _send_all(transport, [data_frame(128, b"c" * 8)], sender)
        _poll_until(rig, transport, 1)
        assert board.wakeups_sent == 2 and ours.wait(10_000_000_000) is True
        rig.dispatcher.take_data_mask()
        rig.dispatcher.set_wake_board(None)
        ours.prepare()
        _send_all(transport, [data_frame(192, b"d" * 8)], sender)
        _poll_until(rig, transport, 1)
        assert board.wakeups_sent == 2                                   # no board: the caller signals
        assert rig.dispatcher.take_data_mask() == rig.dispatcher.unsignalled_mask == stream_bit(STREAM)
        ours.cancel()
    finally:
        transport.close()
        sender.close()
        ours.close()
        other.close()
        board.close()


def test_poll_applies_a_compiled_loss_generator(rig):
    transport, sender = _loopback(batch=8)
    try:
        rig.state.set_connections([(DESTINATION, address_key(sender.getsockname()), 0)])
        _send_all(transport, [data_frame(i * 64, b"z" * 8) for i in range(4)], sender)
        received, events, dropped = _poll_until(rig, transport, 4, LossGenerator.random(1.0, seed=3))
        assert (received, events, dropped) == (4, [], 4)                 # every DATA datagram dropped
        assert rig.terms[0].get_bytes(0, 256) == bytes(256) and rig[BYTES_RECEIVED] == 0
    finally:
        transport.close()
        sender.close()


def test_address_keys_tell_sources_apart():
    assert address_key(("127.0.0.1", 1)) != address_key(("127.0.0.1", 2))
    assert address_key(("127.0.0.1", 1)) != address_key(("127.0.0.2", 1))
    assert len(address_key(("::1", 1, 0, 0))) == 28 and len(address_key(("10.0.0.1", 1))) == 8


def test_the_data_mask_names_the_streams_data_was_inserted_into(rig):
    other = rig.image(SESSION, stream_id=-3)
    rig.dispatcher.add(other)
    assert rig.dispatch(heartbeat(0)) == DISPATCH_HANDLED
    assert rig.dispatcher.take_data_mask() == 0                      # a heartbeat brings no data: wakes nobody
    rig.dispatch(data_frame(0, b"a" * 8))
    rig.dispatch(data_frame(0, b"b" * 8, stream_id=-3))
    assert rig.dispatcher.take_data_mask() == stream_bit(STREAM) | stream_bit(-3) == (1 << 57) | (1 << 56)
    assert rig.dispatcher.take_data_mask() == 0                      # taken: cleared
