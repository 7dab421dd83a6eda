# SPDX-License-Identifier: Apache-2.0
"""NetworkPublication without sockets or threads: a SendChannelEndpoint over a recording transport and a manual
clock. SETUP until a status message, heartbeats when idle, data within the sender limit, retransmits on NAK and
their linger, end of stream and receiver timeouts (aeron_network_publication.c)."""
from __future__ import annotations

import pytest

from aeron._core import counters as ctr
from aeron._core import frames as f
from aeron.driver.flow_control import MinFlowControl
from tests.driver.fakes import (
    MS, MTU, SUBSCRIBER, TERM_LENGTH, Counters, FakeTransport, ManualClock, nak, network_publication,
    send_endpoint, status_message,
)


@pytest.fixture
def rig(tmp_path):
    """A publication (session 7, stream 1001, initial term 100) registered on its endpoint, as the conductor does."""
    counters = Counters()
    clock = ManualClock()
    transport = FakeTransport()
    endpoint = send_endpoint(counters, transport)
    publication, appender = network_publication(tmp_path, counters, endpoint, clock)
    endpoint.publications[(7, 1001)] = publication
    yield counters, clock, transport, endpoint, publication, appender
    appender.close()
    publication.close()


def _connect(clock, transport, endpoint, window=32768, term_offset=0):
    transport.deliver(status_message(term_offset=term_offset, window=window), SUBSCRIBER)
    endpoint.poll_control(clock())


def _decoded(transport, frame_type):
    """Every frame of the datagrams of ``frame_type`` sent so far (a DATA datagram may batch several)."""
    return [frame for d in transport.sent_of_type(frame_type) for frame in f.decode_datagram(d)]


def test_setup_every_interval_until_a_status_message_arrives(rig):
    counters, clock, transport, endpoint, publication, _ = rig
    publication.send(clock())
    setups = _decoded(transport, f.HDR_TYPE_SETUP)
    assert [(s.session_id, s.stream_id, s.initial_term_id, s.active_term_id, s.term_offset, s.term_length, s.mtu)
            for s in setups] == [(7, 1001, 100, 100, 0, TERM_LENGTH, MTU)]
    assert transport.sent[0][1] == SUBSCRIBER
    clock.advance(50 * MS)
    publication.send(clock())
    assert len(transport.sent_of_type(f.HDR_TYPE_SETUP)) == 1          # not before the 100 ms interval
    clock.advance(51 * MS)
    publication.send(clock())
    assert len(transport.sent_of_type(f.HDR_TYPE_SETUP)) == 2
    assert not publication.has_receivers and not publication.log.is_connected

    _connect(clock, transport, endpoint)
    assert publication.has_receivers and publication.log.is_connected
    assert counters[ctr.STATUS_MESSAGES_RECEIVED] == 1
    for _ in range(5):
        clock.advance(150 * MS)
        publication.send(clock())
    assert len(transport.sent_of_type(f.HDR_TYPE_SETUP)) == 2          # connected: no more SETUPs
    assert transport.sent_of_type(f.HDR_TYPE_DATA)                      # but heartbeats


def test_a_status_message_asking_for_setup_gets_one_at_once(rig):
    counters, clock, transport, endpoint, publication, _ = rig
    publication.send(clock())
    _connect(clock, transport, endpoint)
    clock.advance(101 * MS)
    transport.deliver(status_message(flags=f.SM_SEND_SETUP_FLAG, window=0), SUBSCRIBER)
    endpoint.poll_control(clock())
    publication.send(clock())
    assert len(transport.sent_of_type(f.HDR_TYPE_SETUP)) == 2


def test_heartbeats_when_idle_and_not_right_after_data(rig):
    counters, clock, transport, endpoint, publication, appender = rig
    publication.send(clock())
    _connect(clock, transport, endpoint)
    clock.advance(101 * MS)
    publication.send(clock())
    heartbeats = _decoded(transport, f.HDR_TYPE_DATA)
    assert [(h.is_heartbeat, h.flags, h.term_id, h.term_offset, h.session_id) for h in heartbeats] == [
        (True, f.UNFRAGMENTED, 100, 0, 7)]
    assert counters[ctr.HEARTBEATS_SENT] == 1
    clock.advance(50 * MS)
    publication.send(clock())
    assert len(transport.sent_of_type(f.HDR_TYPE_DATA)) == 1           # within the heartbeat interval

    assert publication.update_pub_pos_and_lmt() == 1                    # conductor: pub-lmt behind the window
    assert appender.offer(b"x" * 32) > 0
    clock.advance(1 * MS)
    publication.send(clock())
    data = [d for d in _decoded(transport, f.HDR_TYPE_DATA) if not d.is_heartbeat]
    assert [(d.term_offset, d.frame_length, bytes(d.payload)) for d in data] == [(0, 64, b"x" * 32)]
    assert publication.snd_pos.get() == 64
    clock.advance(99 * MS)
    publication.send(clock())
    assert len(transport.sent_of_type(f.HDR_TYPE_DATA)) == 2           # data counts as activity
    clock.advance(2 * MS)
    publication.send(clock())
    last = _decoded(transport, f.HDR_TYPE_DATA)[-1]
    assert last.is_heartbeat and last.term_offset == 64


def test_data_stays_within_the_sender_limit_and_back_pressure_is_counted(rig):
    counters, clock, transport, endpoint, publication, appender = rig
    publication.send(clock())
    _connect(clock, transport, endpoint, window=64)                     # room for one 64-byte frame
    publication.update_pub_pos_and_lmt()
    for n in range(3):
        assert appender.offer(bytes([n]) * 32) > 0
    publication.send(clock())
    assert [d.term_offset for d in _decoded(transport, f.HDR_TYPE_DATA)] == [0]
    assert publication.snd_pos.get() == 64 and publication.snd_lmt.get() == 64
    publication.send(clock())
    assert publication.snd_bpe.get() == 1                               # data waiting, window closed
    _connect(clock, transport, endpoint, window=128, term_offset=64)    # the receiver took frame 0
    publication.send(clock())
    assert [d.term_offset for d in _decoded(transport, f.HDR_TYPE_DATA)] == [0, 64, 128]
    assert counters[ctr.BYTES_SENT] >= 3 * 64


def test_a_nak_retransmits_once_then_lingers(rig):
    counters, clock, transport, endpoint, publication, appender = rig
    publication.send(clock())
    _connect(clock, transport, endpoint)
    publication.update_pub_pos_and_lmt()
    for n in range(2):
        appender.offer(bytes([n]) * 32)
    publication.send(clock())
    first = transport.sent_of_type(f.HDR_TYPE_DATA)
    assert len(first) == 1 and len(first[0]) == 128                    # both frames in one datagram

    transport.deliver(nak(term_offset=64, length=64), SUBSCRIBER)
    endpoint.poll_control(clock())
    resent = transport.sent_of_type(f.HDR_TYPE_DATA)[1:]
    assert resent == [first[0][64:]]                                    # exactly the NAKed frame
    assert (counters[ctr.NAK_MESSAGES_RECEIVED], publication.snd_naks.get()) == (1, 1)
    assert (counters[ctr.RETRANSMITS_SENT], counters[ctr.RETRANSMITTED_BYTES]) == (1, 64)

    transport.deliver(nak(term_offset=64, length=64), SUBSCRIBER)     # the same gap again within the linger
    clock.advance(5 * MS)
    endpoint.poll_control(clock())
    assert len(transport.sent_of_type(f.HDR_TYPE_DATA)) == 2
    clock.advance(6 * MS)                                               # linger (10 ms) over
    publication.send(clock())
    transport.deliver(nak(term_offset=64, length=64), SUBSCRIBER)
    endpoint.poll_control(clock())
    assert transport.sent_of_type(f.HDR_TYPE_DATA)[2:] == [first[0][64:]]
    assert counters[ctr.RETRANSMITS_SENT] == 2


def test_a_nak_over_several_datagrams_is_one_retransmit_of_all_its_bytes(rig):
    """RETRANSMITS_SENT counts resend actions, not datagrams (aeron_network_publication_resend), so a long gap NAKed
    once is one retransmit however many MTU-sized datagrams it takes."""
    counters, clock, transport, endpoint, publication, appender = rig
    publication.send(clock())
    _connect(clock, transport, endpoint)
    publication.update_pub_pos_and_lmt()
    for n in range(10):
        appender.offer(bytes([n]) * 992)                                # 1024-byte frames: one per datagram
    publication.send(clock())
    sent = len(transport.sent_of_type(f.HDR_TYPE_DATA))
    transport.deliver(nak(term_offset=1024, length=8 * 1024), SUBSCRIBER)
    endpoint.poll_control(clock())
    assert len(transport.sent_of_type(f.HDR_TYPE_DATA)) - sent == 8
    assert (counters[ctr.RETRANSMITS_SENT], counters[ctr.RETRANSMITTED_BYTES]) == (1, 8 * 1024)


def test_a_status_message_more_than_half_a_term_off_is_rejected_before_the_first_connection_too(rig):
    """A receiver of another publication with the same session and stream (another driver's, say) reports a far
    position: rejected and counted, and it does not connect this publication."""
    counters, clock, transport, endpoint, publication, _ = rig
    publication.send(clock())
    transport.deliver(status_message(term_id=103), SUBSCRIBER)           # three terms ahead of what was sent
    endpoint.poll_control(clock())
    assert counters[ctr.STATUS_MESSAGES_REJECTED] == 1
    assert not publication.has_receivers and not publication.has_initial_connection
    _connect(clock, transport, endpoint)                                # its own receiver still connects
    assert publication.has_receivers and counters[ctr.STATUS_MESSAGES_REJECTED] == 1


def test_a_nak_beyond_what_was_sent_is_not_answered(rig):
    counters, clock, transport, endpoint, publication, appender = rig
    publication.send(clock())
    _connect(clock, transport, endpoint)
    publication.update_pub_pos_and_lmt()
    appender.offer(b"a" * 32)
    publication.send(clock())
    transport.deliver(nak(term_offset=640, length=64), SUBSCRIBER)
    endpoint.poll_control(clock())
    assert len(transport.sent_of_type(f.HDR_TYPE_DATA)) == 1
    assert counters[ctr.RETRANSMITS_SENT] == 0 and publication.snd_naks.get() == 1


def test_end_of_stream_and_revoked_heartbeat_flags(rig):
    counters, clock, transport, endpoint, publication, _ = rig
    publication.send(clock())
    _connect(clock, transport, endpoint)
    publication.is_end_of_stream = True
    clock.advance(101 * MS)
    publication.send(clock())
    assert _decoded(transport, f.HDR_TYPE_DATA)[-1].flags == f.UNFRAGMENTED | f.EOS_FLAG
    publication.is_revoked = True
    clock.advance(101 * MS)
    publication.send(clock())
    assert _decoded(transport, f.HDR_TYPE_DATA)[-1].flags == f.UNFRAGMENTED | f.EOS_FLAG | f.REVOKED_FLAG


def test_an_end_of_stream_status_message_removes_its_receiver(rig):
    counters, clock, transport, endpoint, publication, _ = rig
    publication.send(clock())
    _connect(clock, transport, endpoint)
    transport.deliver(status_message(flags=f.SM_EOS_FLAG), SUBSCRIBER)
    endpoint.poll_control(clock())
    assert not publication.has_receivers and not publication.log.is_connected


def test_a_silent_receiver_times_out(tmp_path):
    counters, clock, transport = Counters(), ManualClock(), FakeTransport()
    endpoint = send_endpoint(counters, transport)
    publication, appender = network_publication(tmp_path, counters, endpoint, clock,
                                                connection_timeout_ns=500 * MS)
    endpoint.publications[(7, 1001)] = publication
    publication.send(clock())
    _connect(clock, transport, endpoint)
    assert publication.update_pub_pos_and_lmt() == 1
    assert publication.pub_lmt.get() == TERM_LENGTH // 2                # snd-pos 0 + the publication window
    clock.advance(400 * MS)
    publication.send(clock())
    assert publication.has_receivers
    clock.advance(101 * MS)
    publication.send(clock())
    assert not publication.has_receivers and not publication.log.is_connected
    assert publication.update_pub_pos_and_lmt() == 1                    # pub-lmt falls back to snd-pos
    assert publication.pub_lmt.get() == publication.snd_pos.get()
    appender.close()
    publication.close()


def test_min_flow_control_limit_follows_receivers_that_keep_announcing_themselves(tmp_path):
    """Dynamic MDC subscriptions announce themselves to the control address every second (session 0, stream 0, the
    SETUP flag). That only makes them destinations: the publication sends no SETUP for it, so min flow control
    sets no SETUP hold and the sender limit keeps following the slowest receiver."""
    counters, clock, transport = Counters(), ManualClock(), FakeTransport()
    channel = "aeron:udp?control=127.0.0.1:40200|control-mode=dynamic|fc=min"
    endpoint = send_endpoint(counters, transport, channel)
    publication, appender = network_publication(tmp_path, counters, endpoint, clock, channel=channel, is_group=True,
                                                flow_control=MinFlowControl())
    endpoint.publications[(7, 1001)] = publication
    receivers = {1: ("127.0.0.1", 40401), 2: ("127.0.0.1", 40402)}
    publication.send(clock())                                            # a SETUP, to no destination yet
    for receiver_id, address in receivers.items():
        transport.deliver(status_message(window=4096, receiver_id=receiver_id), address)
    endpoint.poll_control(clock())
    assert publication.log.is_connected and publication.snd_lmt.get() == 4096
    limits = []
    for window in (8192, 12288, 16384, 20480):
        for receiver_id, address in receivers.items():
            transport.deliver(status_message(session_id=0, stream_id=0, window=0, flags=f.SM_SEND_SETUP_FLAG,
                                             receiver_id=receiver_id), address)
        endpoint.poll_control(clock())
        clock.advance(101 * MS)
        publication.send(clock())
        for receiver_id, address in receivers.items():
            transport.deliver(status_message(window=window, receiver_id=receiver_id), address)
        endpoint.poll_control(clock())
        publication.send(clock())
        limits.append(publication.snd_lmt.get())
        clock.advance(900 * MS)
    assert limits == [8192, 12288, 16384, 20480]
    assert transport.sent_of_type(f.HDR_TYPE_SETUP) == []
    assert sorted(d.receiver_id for d in endpoint.destinations) == [1, 2]
    appender.close()
    publication.close()



def test_a_parking_drivers_heartbeat_may_go_early_by_its_slack_but_its_deadline_stays(rig):
    # a wakeup driver thread sends a heartbeat that is nearly due when it is awake anyway (Sender.timer_slack_ns),
    # and parks until the interval's end: never later than Aeron's 100 ms, sometimes earlier
    counters, clock, transport, endpoint, publication, _ = rig
    publication.send(clock())
    _connect(clock, transport, endpoint)
    clock.advance(101 * MS)
    publication.send(clock())
    assert counters[ctr.HEARTBEATS_SENT] == 1
    clock.advance(60 * MS)
    publication.send(clock())
    assert counters[ctr.HEARTBEATS_SENT] == 1                           # no slack: not before 100 ms
    clock.advance(41 * MS)
    publication.send(clock())
    last = clock()
    assert counters[ctr.HEARTBEATS_SENT] == 2
    publication.timer_slack_ns = 50 * MS
    assert publication.next_deadline_ns(last + 1000 * MS) == last + 100 * MS + 1      # where a park ends
    clock.advance(40 * MS)
    publication.send(clock())
    assert counters[ctr.HEARTBEATS_SENT] == 2                           # 40 ms on: not within the slack
    clock.advance(20 * MS)
    publication.send(clock())
    assert counters[ctr.HEARTBEATS_SENT] == 3                           # 60 ms on: within it
    assert publication.next_deadline_ns(clock() + 1000 * MS) == clock() + 100 * MS + 1
