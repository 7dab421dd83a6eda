# SPDX-License-Identifier: Apache-2.0
"""SendChannelEndpoint without a socket: control frames queued on a recording transport are validated, counted
and dispatched by (session id, stream id) to publications that record what they are told; data goes to the
channel's endpoint or to every multi-destination-cast destination (aeron_send_channel_endpoint.c)."""
from __future__ import annotations

import pytest

from aeron._core import counters as ctr
from aeron._core import frames as f
from aeron._core.atomic_buffer import AtomicBuffer
from tests.driver.fakes import (
    MS, MTU, SUBSCRIBER, TERM_LENGTH, Counters, FakeTransport, ManualClock, data_frame, nak, send_endpoint,
    status_message,
)


class RecordingPublication:
    """The four control handlers of a NetworkPublication, recorded."""

    def __init__(self, term_length: int = TERM_LENGTH) -> None:
        self.term_length = term_length
        self.calls: list[tuple] = []

    def on_status_message(self, *args):
        self.calls.append(("sm", *args))

    def on_nak(self, *args):
        self.calls.append(("nak", *args))

    def on_rttm(self, *args):
        self.calls.append(("rttm", *args))

    def on_error(self, *args):
        self.calls.append(("err", *args))


@pytest.fixture
def rig():
    counters, clock, transport = Counters(), ManualClock(), FakeTransport()
    endpoint = send_endpoint(counters, transport)
    seven, eight = RecordingPublication(), RecordingPublication()
    endpoint.publications[(7, 1001)] = seven
    endpoint.publications[(8, 1001)] = eight
    return counters, clock, transport, endpoint, seven, eight


def test_a_status_message_goes_to_its_publication(rig):
    counters, clock, transport, endpoint, seven, eight = rig
    source = ("127.0.0.1", 50001)
    transport.deliver(status_message(session_id=8, term_id=101, term_offset=64, window=4096, receiver_id=5,
                                     group_tag=3), source)
    assert endpoint.poll_control(clock()) == 1
    assert seven.calls == []
    # a plain unicast publication has no use for the receiver's address: it is not made (dynamic MDC and response
    # channels get it, see below)
    assert eight.calls == [("sm", 0, 101, 64, 4096, 5, 3, None, clock())]
    assert counters[ctr.STATUS_MESSAGES_RECEIVED] == 1
    assert counters[ctr.BYTES_RECEIVED] == f.SM_WITH_GROUP_TAG_LENGTH


def test_a_response_endpoint_hands_the_status_message_source_on(rig):
    counters, clock, transport, endpoint, seven, eight = rig
    endpoint.is_response = True
    source = ("127.0.0.1", 50001)
    transport.deliver(status_message(session_id=8, term_id=101, term_offset=64, window=4096, receiver_id=5,
                                     group_tag=3), source)
    assert endpoint.poll_control(clock()) == 1
    assert eight.calls == [("sm", 0, 101, 64, 4096, 5, 3, source, clock())]


def test_a_subscription_announcement_reaches_no_publication(rig):
    """A status message for session 0 / stream 0 with the SETUP flag is a subscription announcing itself to a
    control address: it is counted, but no publication takes it for a SETUP request."""
    counters, clock, transport, endpoint, seven, eight = rig
    transport.deliver(status_message(session_id=0, stream_id=0, window=0, flags=f.SM_SEND_SETUP_FLAG, receiver_id=9))
    endpoint.poll_control(clock())
    assert seven.calls == eight.calls == []
    assert counters[ctr.STATUS_MESSAGES_RECEIVED] == 1


def test_a_subscription_announcement_makes_a_dynamic_destination_only():
    counters, clock, transport = Counters(), ManualClock(), FakeTransport()
    endpoint = send_endpoint(counters, transport, "aeron:udp?control=127.0.0.1:40200|control-mode=dynamic")
    publication = RecordingPublication()
    endpoint.publications[(7, 1001)] = publication
    transport.deliver(status_message(session_id=0, stream_id=0, window=0, flags=f.SM_SEND_SETUP_FLAG, receiver_id=9),
                      ("127.0.0.1", 40401))
    endpoint.poll_control(clock())
    assert [(d.address, d.receiver_id) for d in endpoint.destinations] == [(("127.0.0.1", 40401), 9)]
    assert publication.calls == []
    # the same receiver asking for its session's SETUP does reach the publication
    transport.deliver(status_message(session_id=7, window=0, flags=f.SM_SEND_SETUP_FLAG, receiver_id=9),
                      ("127.0.0.1", 40401))
    endpoint.poll_control(clock())
    assert [call[:2] for call in publication.calls] == [("sm", f.SM_SEND_SETUP_FLAG)]


def test_invalid_frames_are_counted_and_dropped(rig):
    counters, clock, transport, endpoint, seven, eight = rig
    bad_version = bytearray(status_message())
    bad_version[4] = 1
    unaligned = status_message(term_offset=33)
    for datagram in (b"\0" * 7, bytes(bad_version), unaligned, nak()[:20]):
        transport.deliver(datagram)
    endpoint.poll_control(clock())
    assert counters[ctr.INVALID_PACKETS] == 4
    assert seven.calls == [] and counters[ctr.STATUS_MESSAGES_RECEIVED] == 0


def test_a_status_message_past_the_term_is_rejected(rig):
    counters, clock, transport, endpoint, seven, eight = rig
    transport.deliver(status_message(term_offset=TERM_LENGTH))
    endpoint.poll_control(clock())
    assert counters[ctr.STATUS_MESSAGES_REJECTED] == 1 and seven.calls == []


def test_naks_are_checked_against_the_publication_term(rig):
    counters, clock, transport, endpoint, seven, eight = rig
    transport.deliver(nak(term_offset=128, length=64))
    transport.deliver(nak(term_offset=TERM_LENGTH - 32, length=64))     # runs past the term end
    transport.deliver(nak(session_id=99, term_offset=0, length=64))     # nobody's
    endpoint.poll_control(clock())
    assert seven.calls == [("nak", 100, 128, 64, clock())]
    assert counters[ctr.NAK_MESSAGES_RECEIVED] == 3 and counters[ctr.INVALID_PACKETS] == 1


def test_rttm_and_error_frames_reach_their_publication(rig):
    counters, clock, transport, endpoint, seven, eight = rig
    rttm = bytearray(f.RTTM_HEADER_LENGTH)
    f.encode_rttm(rttm, 0, 7, 1001, 12345, 0, 42, f.RTTM_REPLY_FLAG)
    error = bytearray(f.ERR_HEADER_LENGTH + 8)
    f.encode_error(error, 0, 8, 1001, 43, 13, "rejected")
    transport.deliver(bytes(rttm))
    transport.deliver(bytes(error))
    endpoint.poll_control(clock())
    assert seven.calls == [("rttm", f.RTTM_REPLY_FLAG, 12345, 42)]
    assert eight.calls == [("err", 43, 13, "rejected")]
    assert counters[ctr.ERROR_FRAMES_RECEIVED] == 1


def test_a_control_poll_stops_after_its_drain_limit(rig):
    counters, clock, transport, endpoint, seven, eight = rig
    for n in range(100):
        transport.deliver(status_message(term_offset=32 * n))
    assert endpoint.poll_control(clock()) == 64                          # CONTROL_DRAIN_LIMIT, 8 per batch
    assert len(transport.inbox) == 36


def test_unicast_data_goes_to_the_channel_endpoint(rig):
    counters, clock, transport, endpoint, seven, eight = rig
    assert endpoint.send(b"x" * 64) == 64
    assert transport.sent == [(b"x" * 64, SUBSCRIBER)]
    assert counters[ctr.BYTES_SENT] == 64


def test_manual_destinations_each_get_the_data():
    counters, clock, transport = Counters(), ManualClock(), FakeTransport()
    endpoint = send_endpoint(counters, transport, "aeron:udp?control=127.0.0.1:40200|control-mode=manual")
    _, destinations = counters.allocate()
    endpoint.attach_destinations_counter(0, destinations)
    # no destination yet: nothing goes out, and that is no short send (the C driver's destination tracker)
    assert endpoint.send(b"y" * 32) == 32 and transport.sent == []
    assert counters.system[ctr.SHORT_SENDS].get() == 0
    endpoint.add_destination(("127.0.0.1", 40301), 5, clock())
    endpoint.add_destination(("127.0.0.1", 40302), 6, clock())
    assert destinations.get() == 2
    endpoint.send(b"y" * 32)
    assert [address for _, address in transport.sent] == [("127.0.0.1", 40301), ("127.0.0.1", 40302)]
    assert endpoint.remove_destination(address=("127.0.0.1", 40301))
    assert destinations.get() == 1


def test_dynamic_destinations_come_from_status_messages_and_time_out():
    counters, clock, transport = Counters(), ManualClock(), FakeTransport()
    endpoint = send_endpoint(counters, transport, "aeron:udp?control=127.0.0.1:40200|control-mode=dynamic")
    publication = RecordingPublication()
    endpoint.publications[(7, 1001)] = publication
    transport.deliver(status_message(receiver_id=1), ("127.0.0.1", 40401))
    transport.deliver(status_message(receiver_id=2), ("127.0.0.1", 40402))
    endpoint.poll_control(clock())
    assert [d.address for d in endpoint.destinations] == [("127.0.0.1", 40401), ("127.0.0.1", 40402)]
    clock.advance(3_000 * MS)
    transport.deliver(status_message(receiver_id=2), ("127.0.0.1", 40402))
    endpoint.poll_control(clock())
    clock.advance(2_500 * MS)
    endpoint.check_destinations(clock())                                 # receiver 1 silent for 5.5 s
    assert [d.receiver_id for d in endpoint.destinations] == [2]


class CommitsAfterFirstScan(FakeTransport):
    """A transport whose first scan-and-send finds the term as it is and then lets ``commit`` run: a publisher's
    offer landing between two destinations' scans, as the application thread's can while the sender's scan has
    released the GIL."""

    def __init__(self, commit):
        super().__init__()
        self._commit = commit

    def send_term_batch(self, term, term_offset, window, mtu, max_datagrams, address):
        result = super().send_term_batch(term, term_offset, window, mtu, max_datagrams, address)
        commit, self._commit = self._commit, None
        if commit is not None:
            commit()
        return result


@pytest.mark.parametrize("committed_before", [0, 1])
def test_every_mdc_destination_gets_the_batch_the_sender_position_moves_past(committed_before):
    # frames of 1,024 bytes (one per datagram); committed_before of them are there before the first scan, the
    # rest only after it: the first destination must still get every frame the sender position moves past
    term = AtomicBuffer(bytearray(TERM_LENGTH))
    frames = [data_frame(n * 1024, bytes([n]) * (1024 - f.DATA_HEADER_LENGTH)) for n in range(3)]

    def commit(upto):
        for n in range(upto):
            term.put_bytes(n * 1024, frames[n])

    commit(committed_before)
    transport = CommitsAfterFirstScan(lambda: commit(len(frames)))
    counters, clock = Counters(), ManualClock()
    endpoint = send_endpoint(counters, transport, "aeron:udp?control=127.0.0.1:40200|control-mode=manual")
    first, second = ("127.0.0.1", 40301), ("127.0.0.1", 40302)
    endpoint.add_destination(first, 5, clock())
    endpoint.add_destination(second, 6, clock())
    sent, advance = endpoint.send_term_batch(term, 0, TERM_LENGTH // 2, MTU, 8)
    got = {address: [data for data, to in transport.sent if to == address] for address in (first, second)}
    assert advance == sum(len(d) for d in got[first]) == sum(len(d) for d in got[second]) > 0
    assert got[first] == got[second] == frames[:advance // 1024]
    assert sent == advance and counters[ctr.BYTES_SENT] == sent
