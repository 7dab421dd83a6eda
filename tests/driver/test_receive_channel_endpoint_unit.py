# SPDX-License-Identifier: Apache-2.0
"""ReceiveChannelEndpoint without a socket: datagrams queued on a recording transport are validated, counted and
dispatched (DATA and heartbeats to their image by session and stream, SETUP for a wanted stream to the
conductor, RTTM answered); an unknown session of a wanted stream is asked for a SETUP, and a session whose image
failed cools down (aeron_receive_channel_endpoint.c, aeron_data_packet_dispatcher.c)."""
from __future__ import annotations

import pytest

from aeron._core import counters as ctr
from aeron._core import frames as f
from aeron._core.logbuffer import compute_log_length
from tests.driver.fakes import (
    MS, PUBLISHER, TERM_LENGTH, Counters, FakeTransport, ManualClock, data_frame, receive_endpoint, setup_frame,
)


class RecordingImage:
    """What the endpoint reads of and calls on a PublicationImage, recorded."""

    def __init__(self, session_id: int, stream_id: int = 1001) -> None:
        self.session_id = session_id
        self.stream_id = stream_id
        self.term_length = TERM_LENGTH
        self.inserted: list[tuple] = []
        self.rttms: list[tuple] = []
        self.sources: list[tuple] = []
        self.receive_state = None       # no compiled state: its datagrams reach insert_packet through Python

    def insert_packet(self, buffer, length, term_id, term_offset, is_heartbeat, flags, source, now_ns,
                      destination=None):
        self.inserted.append((bytes(buffer[:length]), term_id, term_offset, is_heartbeat, flags, source))
        return 0 if is_heartbeat else length

    def on_rttm(self, now_ns, echo_timestamp, reception_delta):
        self.rttms.append((now_ns, echo_timestamp, reception_delta))

    def _connection(self, destination, source, now_ns):       # destination: the receive socket it came over
        self.sources.append(source)


@pytest.fixture
def rig():
    counters, clock, transport = Counters(), ManualClock(), FakeTransport()
    setups: list[tuple] = []
    endpoint = receive_endpoint(counters, transport, lambda *request: setups.append(request))
    endpoint.add_subscription(1001, None)
    return counters, clock, transport, endpoint, setups


def test_data_goes_to_the_image_of_its_session(rig):
    counters, clock, transport, endpoint, setups = rig
    seven, eight = RecordingImage(7), RecordingImage(8)
    endpoint.add_image(seven)
    endpoint.add_image(eight)
    frame = data_frame(64, b"z" * 40, session_id=8, term_id=101)
    transport.deliver(frame)
    heartbeat = bytearray(32)
    f.encode_heartbeat(heartbeat, 0, 7, 1001, 100, 128)
    transport.deliver(bytes(heartbeat))
    assert endpoint.poll(clock()) == 2 + len(frame)                      # datagrams + bytes inserted
    assert eight.inserted == [(frame, 101, 64, False, f.UNFRAGMENTED, PUBLISHER)]
    assert seven.inserted == [(bytes(heartbeat), 100, 128, True, f.UNFRAGMENTED, PUBLISHER)]
    assert counters[ctr.BYTES_RECEIVED] == len(frame) + 32


def test_invalid_datagrams_are_counted_once_and_dropped(rig):
    counters, clock, transport, endpoint, setups = rig
    image = RecordingImage(7)
    endpoint.add_image(image)
    too_short = data_frame(0, b"a" * 8)[:16]
    unaligned = data_frame(40, b"a" * 8)                                 # fails validate_frame
    past_term = data_frame(TERM_LENGTH - 32, b"a" * 40)                  # fails the image's term check
    for datagram in (too_short, unaligned, past_term, b"\xff" * 40):
        transport.deliver(datagram)
    endpoint.poll(clock())
    assert counters[ctr.INVALID_PACKETS] == 4 and image.inserted == []


def test_an_unknown_session_is_asked_for_a_setup_once_per_timeout(rig):
    counters, clock, transport, endpoint, setups = rig
    transport.deliver(data_frame(0, b"a" * 8, session_id=9))
    endpoint.poll(clock())
    [(request, address)] = transport.sent
    sm = f.decode_frame(request)
    assert address == PUBLISHER
    assert (sm.type, sm.flags, sm.session_id, sm.stream_id, sm.receiver_window, sm.receiver_id) == (
        f.HDR_TYPE_SM, f.SM_SEND_SETUP_FLAG, 9, 1001, 0, endpoint.receiver_id)
    transport.deliver(data_frame(64, b"a" * 8, session_id=9))
    clock.advance(500 * MS)
    endpoint.poll(clock())
    assert len(transport.sent) == 1                                      # still pending
    clock.advance(501 * MS)
    transport.deliver(data_frame(128, b"a" * 8, session_id=9))
    endpoint.poll(clock())
    assert len(transport.sent) == 2


def test_data_of_an_unwanted_stream_is_ignored(rig):
    counters, clock, transport, endpoint, setups = rig
    transport.deliver(data_frame(0, b"a" * 8, stream_id=2002))
    transport.deliver(setup_frame(stream_id=2002))
    endpoint.poll(clock())
    assert transport.sent == [] and setups == [] and counters[ctr.INVALID_PACKETS] == 0


def test_a_setup_for_a_wanted_stream_goes_to_the_conductor_once(rig):
    counters, clock, transport, endpoint, setups = rig
    transport.deliver(setup_frame(session_id=9, initial_term_id=5, active_term_id=6, term_offset=1024))
    transport.deliver(setup_frame(session_id=9, initial_term_id=5, active_term_id=6, term_offset=1024))
    endpoint.poll(clock())
    [(handed_endpoint, setup, control_address, source)] = setups
    assert handed_endpoint is endpoint and control_address == source == PUBLISHER
    hold = setup.pop("unconfirmed_hold")          # its share of the unconfirmed images' budget, until confirmed
    assert (hold.source, hold.log_length) == (PUBLISHER, compute_log_length(TERM_LENGTH))
    assert setup == {"flags": 0, "term_offset": 1024, "session_id": 9, "stream_id": 1001, "initial_term_id": 5,
                     "active_term_id": 6, "term_length": TERM_LENGTH, "mtu": 1408, "ttl": 0,
                     "destination": endpoint.destinations[0]}     # the socket it came over (the channel's own)


def test_a_setup_from_another_source_of_an_existing_image_adds_a_connection(rig):
    counters, clock, transport, endpoint, setups = rig
    image = RecordingImage(7)
    endpoint.add_image(image)
    transport.deliver(setup_frame(), ("127.0.0.1", 40999))
    endpoint.poll(clock())
    assert setups == [] and image.sources == [("127.0.0.1", 40999)]


def test_setups_that_cannot_make_an_image_are_counted(rig):
    counters, clock, transport, endpoint, setups = rig
    transport.deliver(setup_frame(term_length=3000))                     # validate_frame refuses it
    transport.deliver(setup_frame(mtu=32))                               # no room for a payload
    transport.deliver(setup_frame(initial_term_id=10, active_term_id=9))  # joins before the initial term
    endpoint.poll(clock())
    assert setups == [] and counters[ctr.INVALID_PACKETS] == 3


def test_a_failed_image_cools_its_session_down(rig):
    counters, clock, transport, endpoint, setups = rig
    transport.deliver(setup_frame(session_id=9))
    endpoint.poll(clock())
    assert len(setups) == 1
    endpoint.on_image_init_failed(1001, 9, clock())
    clock.advance(500 * MS)
    transport.deliver(setup_frame(session_id=9))
    endpoint.poll(clock())
    assert len(setups) == 1
    clock.advance(501 * MS)
    transport.deliver(setup_frame(session_id=9))
    endpoint.poll(clock())
    assert len(setups) == 2


def test_rtt_measurements_are_answered_or_handed_to_the_image(rig):
    counters, clock, transport, endpoint, setups = rig
    image = RecordingImage(7)
    endpoint.add_image(image)
    request = bytearray(f.RTTM_HEADER_LENGTH)
    f.encode_rttm(request, 0, 7, 1001, 555, 0, 0, f.RTTM_REPLY_FLAG)
    reply = bytearray(f.RTTM_HEADER_LENGTH)
    f.encode_rttm(reply, 0, 7, 1001, 777, 11, endpoint.receiver_id)
    other = bytearray(f.RTTM_HEADER_LENGTH)
    f.encode_rttm(other, 0, 7, 1001, 999, 0, endpoint.receiver_id + 1)  # for another receiver
    for datagram in (request, reply, other):
        transport.deliver(bytes(datagram))
    endpoint.poll(clock())
    [(answer, address)] = transport.sent
    answer = f.decode_frame(answer)
    assert address == PUBLISHER
    assert (answer.flags, answer.echo_timestamp, answer.receiver_id) == (0, 555, endpoint.receiver_id)
    assert image.rttms == [(clock(), 777, 11)]


def test_explicit_control_subscriptions_announce_themselves_every_second():
    counters, clock, transport = Counters(), ManualClock(), FakeTransport()
    endpoint = receive_endpoint(counters, transport, lambda *args: None,
                                channel="aeron:udp?endpoint=127.0.0.1:40123|control=127.0.0.1:40200")
    assert endpoint.elicit_setups(clock()) == 0                          # nothing subscribed yet
    endpoint.add_subscription(1001, None)
    assert endpoint.elicit_setups(clock()) == 1
    assert endpoint.elicit_setups(clock() + 999 * MS) == 0
    assert endpoint.elicit_setups(clock() + 1_000 * MS) == 1
    sm = f.decode_frame(transport.sent[0][0])
    assert transport.sent[0][1] == ("127.0.0.1", 40200)
    assert (sm.flags, sm.session_id, sm.stream_id) == (f.SM_SEND_SETUP_FLAG, 0, 0)


def test_requests_for_a_setup_carry_the_endpoints_group_tag():
    """A tagged sender counts a receiver's SETUP request only when it carries the tag (aeron_tagged_flow_control.c),
    so both kinds of request, the announcement to a control address and the answer to an unknown session, carry the
    endpoint's group tag; an untagged endpoint sends the short status message."""
    for group_tag, length in ((2004, f.SM_WITH_GROUP_TAG_LENGTH), (None, f.SM_HEADER_LENGTH)):
        counters, clock, transport = Counters(), ManualClock(), FakeTransport()
        endpoint = receive_endpoint(counters, transport, lambda *args: None,
                                    channel="aeron:udp?endpoint=127.0.0.1:40123|control=127.0.0.1:40200",
                                    group_tag=group_tag)
        endpoint.add_subscription(1001, None)
        endpoint.elicit_setups(clock())
        transport.deliver(data_frame(0, b"a" * 8, session_id=9))
        endpoint.poll(clock())
        requests = [f.decode_frame(datagram) for datagram, _ in transport.sent]
        assert [(len(datagram), sm.flags, sm.session_id, sm.group_tag)
                for (datagram, _), sm in zip(transport.sent, requests)] == [
            (length, f.SM_SEND_SETUP_FLAG, 0, group_tag), (length, f.SM_SEND_SETUP_FLAG, 9, group_tag)]
