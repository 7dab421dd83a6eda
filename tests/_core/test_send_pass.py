# SPDX-License-Identifier: Apache-2.0
"""SendPass, the compiled data send of a send endpoint: every publication's committed frames from its sender
position up to its sender limit (at most an MTU per datagram, at most its max messages, across one term end),
gathered into sendmmsg calls over loopback; sender positions move over what went out, nothing else moves."""
from __future__ import annotations

import socket
import struct
import time

import pytest

from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.counters import AtomicCounter
from aeron._core.logbuffer import LogBuffers
from aeron._core.send_pass import SendPass
from aeron._core.udp_transport import UdpTransport
from aeron.common.errors import IllegalStateError, InvalidArgumentError

TERM_LENGTH = 1024
HDR_TYPE_PAD, HDR_TYPE_DATA = 0, 1


def _transport():
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    sock.bind(("127.0.0.1", 0))
    return UdpTransport(sock, batch=64)


def _receive(transport, count):
    got = []
    deadline = time.monotonic() + 3.0
    while len(got) < count and time.monotonic() < deadline:
        for i in range(transport.receive_batch()):
            got.append(bytes(transport.slots[i][:transport.length(i)]))
    return got


class Publication:
    """Three terms and the snd-pos / snd-lmt counters of one publication (session ``session_id``)."""

    def __init__(self, session_id, mtu=96, max_messages=8, term_length=TERM_LENGTH):
        self.session_id = session_id
        self.raw = [bytearray(term_length) for _ in range(3)]
        self.terms = [AtomicBuffer(raw) for raw in self.raw]
        values = AtomicBuffer(bytearray(2 * 128))
        self.snd_pos, self.snd_lmt = AtomicCounter(values, 0), AtomicCounter(values, 1)
        self.mtu, self.max_messages = mtu, max_messages

    def entry(self):
        return self.terms, self.snd_pos, self.snd_lmt, self.mtu, self.max_messages

    def commit(self, term_index, offset, payload_length, frame_type=HDR_TYPE_DATA):
        """A committed frame (its length written last does not matter here: one thread)."""
        frame_length = 32 + payload_length
        struct.pack_into("<iBBHiiiiq", self.raw[term_index], offset, frame_length, 0, 0xC0,
                         frame_type, offset, self.session_id, 10, term_index, 0)
        return offset + ((frame_length + 31) & ~31)


@pytest.fixture
def pair():
    sender, receiver = _transport(), _transport()
    yield sender, receiver
    sender.close()
    receiver.close()


def _sessions(datagrams):
    return [struct.unpack_from("<i", d, 12)[0] for d in datagrams]


def test_one_call_sends_every_publication_up_to_its_limit(pair):
    sender, receiver = pair
    a, b = Publication(1), Publication(2)
    end_a = end_b = 0
    for _ in range(3):
        end_a = a.commit(0, end_a, 32)
        end_b = b.commit(0, end_b, 32)
    a.snd_lmt.set_ordered(end_a)
    b.snd_lmt.set_ordered(2 * 64)                    # flow control lets b send two of its three frames
    send_pass = SendPass()
    send_pass.set_publications([a.entry(), b.entry()])
    assert send_pass.send(sender, receiver.bound_address) == 5 * 64
    assert (send_pass.sent(0), send_pass.sent(1)) == (3 * 64, 2 * 64)
    assert (a.snd_pos.get(), b.snd_pos.get()) == (3 * 64, 2 * 64)
    got = _receive(receiver, 5)
    assert sorted(_sessions(got)) == [1, 1, 1, 2, 2] and all(len(d) == 64 for d in got)
    # nothing new: nothing sent, nothing moved
    assert send_pass.send(sender, receiver.bound_address) == 0
    assert (send_pass.sent(0), send_pass.sent(1), a.snd_pos.get(), b.snd_pos.get()) == (0, 0, 3 * 64, 2 * 64)


def test_the_mtu_batches_frames_and_max_messages_bounds_a_pass(pair):
    sender, receiver = pair
    pub = Publication(1, mtu=256, max_messages=2)
    end = 0
    for _ in range(10):
        end = pub.commit(0, end, 32)                 # 64-byte frames: four to an MTU of 256
    pub.snd_lmt.set_ordered(TERM_LENGTH)
    send_pass = SendPass()
    send_pass.set_publications([pub.entry()])
    assert send_pass.send(sender, receiver.bound_address) == 2 * 256
    assert [len(d) for d in _receive(receiver, 2)] == [256, 256]
    assert send_pass.send(sender, receiver.bound_address) == 2 * 64     # what is left: one short datagram
    assert pub.snd_pos.get() == 10 * 64


def test_a_pass_steps_over_the_padding_into_the_next_term(pair):
    sender, receiver = pair
    pub = Publication(1, mtu=64, max_messages=8)       # one frame per datagram
    start = TERM_LENGTH - 128
    pub.snd_pos.set_ordered(start)
    end = pub.commit(0, start, 32)
    pub.commit(0, end, 32, HDR_TYPE_PAD)             # pads the rest of term 0
    pub.commit(1, 0, 32)
    pub.snd_lmt.set_ordered(TERM_LENGTH + 64)
    send_pass = SendPass()
    send_pass.set_publications([pub.entry()])
    sent = send_pass.send(sender, receiver.bound_address)
    assert pub.snd_pos.get() == TERM_LENGTH + 64
    got = _receive(receiver, 3)
    assert sent == sum(len(d) for d in got) and [struct.unpack_from("<H", d, 6)[0] for d in got] == \
        [HDR_TYPE_DATA, HDR_TYPE_PAD, HDR_TYPE_DATA]
    assert len(got[1]) == 32                         # the padding's header goes out, its body does not


def test_more_than_a_sendmmsg_batch_goes_out_in_several_calls(pair):
    sender, receiver = pair
    pubs = [Publication(i, max_messages=16) for i in range(1, 7)]
    for pub in pubs:
        end = 0
        for _ in range(16):
            end = pub.commit(0, end, 32)
        pub.snd_lmt.set_ordered(end)
    send_pass = SendPass()
    send_pass.set_publications([p.entry() for p in pubs])
    assert send_pass.send(sender, receiver.bound_address) == 6 * 16 * 64
    assert all(p.snd_pos.get() == 16 * 64 for p in pubs)
    assert sorted(_sessions(_receive(receiver, 96))) == sorted(list(range(1, 7)) * 16)


def test_bad_tables_are_refused_and_leave_the_old_one():
    pub = Publication(1)
    send_pass = SendPass()
    send_pass.set_publications([pub.entry()])
    with pytest.raises(InvalidArgumentError):
        send_pass.set_publications([(pub.terms[:2], pub.snd_pos, pub.snd_lmt, 96, 8)])
    with pytest.raises(InvalidArgumentError):
        send_pass.set_publications([(pub.terms, pub.snd_pos, pub.snd_lmt, 16, 8)])
    odd = [AtomicBuffer(bytearray(96)) for _ in range(3)]
    with pytest.raises(InvalidArgumentError):
        send_pass.set_publications([(odd, pub.snd_pos, pub.snd_lmt, 96, 8)])
    assert send_pass.count == 1
    with pytest.raises(IndexError):
        send_pass.sent(1)


def test_send_timestamps_need_the_per_publication_path(pair):
    sender, receiver = pair
    sender.set_timestamp_offsets(channel_send=-8)
    send_pass = SendPass()
    send_pass.set_publications([Publication(1).entry()])
    with pytest.raises(IllegalStateError):
        send_pass.send(sender, receiver.bound_address)


def test_only_the_publications_whose_python_part_is_due_are_listed(pair):
    sender, receiver = pair
    a, b = Publication(1), Publication(2)
    end = a.commit(0, 0, 32)
    a.snd_lmt.set_ordered(end)
    send_pass = SendPass()
    send_pass.set_publications([a.entry(), b.entry()])
    assert send_pass.send(sender, receiver.bound_address, 1_000) == 64       # a new table: every one is due
    assert [send_pass.due(k) for k in range(send_pass.due_count)] == [0, 1]
    assert (send_pass.last_sent_ns(0), send_pass.take_sent(0), send_pass.take_sent(0)) == (1_000, 64, 0)
    send_pass.set_due(0, 5_000)
    send_pass.set_due(1, 2_000)
    send_pass.send(sender, receiver.bound_address, 1_500)
    assert send_pass.due_count == 0
    send_pass.send(sender, receiver.bound_address, 2_000)
    assert [send_pass.due(k) for k in range(send_pass.due_count)] == [1]
    with pytest.raises(IndexError):
        send_pass.due(1)


def test_data_waiting_behind_a_closed_window_counts_back_pressure(pair):
    sender, receiver = pair
    log = LogBuffers.create(None, term_length=TERM_LENGTH * 64, initial_term_id=5, session_id=1, stream_id=10)
    terms = [log.term_buffer(i) for i in range(3)]
    values = AtomicBuffer(bytearray(3 * 128))
    snd_pos, snd_lmt, snd_bpe = (AtomicCounter(values, i) for i in range(3))
    send_pass = SendPass()
    send_pass.set_publications([(terms, snd_pos, snd_lmt, 96, 8, log, snd_bpe)])
    send_pass.send(sender, receiver.bound_address, 1)
    assert snd_bpe.get() == 0                        # nothing written: no back pressure
    log.metadata_buffer().put_i64(0, (5 << 32) | 64)  # a publisher has claimed 64 bytes; the window stays closed
    send_pass.send(sender, receiver.bound_address, 2)
    send_pass.send(sender, receiver.bound_address, 3)
    assert (snd_bpe.get(), snd_pos.get()) == (2, 0)
    with pytest.raises(InvalidArgumentError):
        send_pass.set_publications([(terms, snd_pos, snd_lmt, 96, 8, log)])


def _dead_port():
    """A loopback port nobody listens on (bound, then closed): sends to it are refused."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def test_a_multi_destination_pass_sends_each_batch_to_every_destination(pair):
    sender, first = pair
    second = _transport()
    try:
        pub = Publication(1, mtu=64)
        end = 0
        for _ in range(3):
            end = pub.commit(0, end, 32)
        pub.snd_lmt.set_ordered(end)
        send_pass = SendPass()
        send_pass.set_publications([pub.entry()])
        send_pass.set_destinations(sender, [first.bound_address, second.bound_address])
        assert send_pass.multi_destination
        # the address given is not used: the destinations are
        assert send_pass.send(sender, None) == 3 * 64
        assert pub.snd_pos.get() == 3 * 64
        assert [len(d) for d in _receive(first, 3)] == [64] * 3
        assert [len(d) for d in _receive(second, 3)] == [64] * 3
        # back to one destination
        send_pass.set_destinations(sender, None)
        assert not send_pass.multi_destination
        end = pub.commit(0, end, 32)
        pub.snd_lmt.set_ordered(end)
        assert send_pass.send(sender, second.bound_address) == 64
        assert len(_receive(second, 1)) == 1 and _receive(first, 1) == []
    finally:
        second.close()


def test_a_destination_that_refuses_holds_nobody_back(pair):
    sender, live = pair
    pub = Publication(1, mtu=64)
    send_pass = SendPass()
    send_pass.set_publications([pub.entry()])
    send_pass.set_destinations(sender, [("127.0.0.1", _dead_port()), live.bound_address])
    end = 0
    for round_ in range(4):                          # the refused one first and second in turn (round robin)
        end = pub.commit(0, end, 32)
        pub.snd_lmt.set_ordered(end)
        assert send_pass.send(sender, None) == 64
        assert len(_receive(live, 1)) == 1
    assert pub.snd_pos.get() == end


def test_with_no_destination_the_batch_counts_as_sent(pair):
    sender, _ = pair
    pub = Publication(1, mtu=64)
    end = pub.commit(0, 0, 32)
    pub.snd_lmt.set_ordered(end)
    send_pass = SendPass()
    send_pass.set_publications([pub.entry()])
    send_pass.set_destinations(sender, [])
    send_pass.send(sender, None)
    assert pub.snd_pos.get() == end


def test_a_bad_destination_is_refused_and_changes_nothing(pair):
    sender, receiver = pair
    send_pass = SendPass()
    send_pass.set_destinations(sender, [receiver.bound_address])
    with pytest.raises(InvalidArgumentError):
        send_pass.set_destinations(sender, [("127.0.0.1", _dead_port()), ("not an address",)])
    pub = Publication(1, mtu=64)
    end = pub.commit(0, 0, 32)
    pub.snd_lmt.set_ordered(end)
    send_pass.set_publications([pub.entry()])
    assert send_pass.send(sender, None) == 64
    assert len(_receive(receiver, 1)) == 1
