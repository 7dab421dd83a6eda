# SPDX-License-Identifier: Apache-2.0
"""The Sender over a real loopback socket: a unicast publication's data goes out in its endpoint's compiled send
pass (setup, heartbeat, flow control and retransmits stay with the publication), several publications share one
pass, a manual multi-destination-cast endpoint's pass sends to each destination, and the endpoints that cannot use it
(send timestamps, dynamic MDC, a response publication, a test transport) keep the per-publication send. Retransmits count in retransmitted bytes, not in bytes sent, as aeronmd's counters."""
from __future__ import annotations

import socket

import pytest

from aeron._core import counters as ctr
from aeron._core import frames as f
from aeron._core.udp_transport import UdpTransport
from tests.driver.fakes import (
    MS, Agents, Counters, FakeTransport, ManualClock, nak, network_publication, send_endpoint, status_message,
)
from tests.support import wait_for


class Inbox:
    """The subscriber's side: a socket that reads what the publication sends (``read``: the first frame of each
    datagram, ``drain``: every frame waiting) and answers with control frames."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(2.0)
        self.channel = f"aeron:udp?endpoint=127.0.0.1:{self.sock.getsockname()[1]}"

    def read(self, count):
        return [f.decode_frame(self.sock.recv(65536)) for _ in range(count)]

    def drain(self):
        self.sock.setblocking(False)
        out = []
        try:
            while True:
                out.extend(f.decode_datagram(self.sock.recv(65536)))     # an MTU holds several frames
        except BlockingIOError:
            pass
        finally:
            self.sock.settimeout(2.0)
        return out


@pytest.fixture
def rig(tmp_path):
    inbox = Inbox()
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    transport = UdpTransport(sock, name="snd")
    counters, clock = Counters(), ManualClock()
    agents = Agents(counters, clock)
    endpoint = send_endpoint(counters, transport, inbox.channel)
    made = []

    def publication(session_id=7):
        pub, appender = network_publication(tmp_path, counters, endpoint, clock, session_id=session_id,
                                            channel=inbox.channel, name=f"pub{session_id}")
        endpoint.add_publication(pub)
        agents.sender_proxy.add_publication(pub)
        made.append((pub, appender))
        return pub, appender
    agents.sender_proxy.add_endpoint(endpoint)
    yield counters, clock, agents, endpoint, inbox, transport, publication
    for pub, appender in made:
        appender.close()
        pub.close()
    transport.close()
    inbox.sock.close()


def _connect(counters, clock, agents, inbox, transport, session_id=7, term_offset=0, window=32768):
    received = counters[ctr.STATUS_MESSAGES_RECEIVED]
    inbox.sock.sendto(status_message(session_id=session_id, term_offset=term_offset, window=window),
                      transport.bound_address)
    wait_for(lambda: counters[ctr.STATUS_MESSAGES_RECEIVED] > received, 3.0,
             invoke=lambda: (clock.advance(MS), agents.sender.do_work()))


def test_a_unicast_publication_streams_through_the_compiled_pass(rig):
    counters, clock, agents, endpoint, inbox, transport, publication = rig
    pub, appender = publication()
    agents.sender.do_work()
    agents.sender.do_work()
    assert endpoint.pass_publications == [pub]
    assert inbox.read(1)[0].type == f.HDR_TYPE_SETUP                  # setups still go out
    _connect(counters, clock, agents, inbox, transport)
    assert pub.has_receivers and pub.snd_lmt.get() == 32768
    pub.update_pub_pos_and_lmt()
    for n in range(20):
        assert appender.offer(bytes([n]) * 32) > 0
    bytes_before = counters[ctr.BYTES_SENT]
    wait_for(lambda: pub.snd_pos.get() == 20 * 64, 3.0, invoke=lambda: agents.sender.do_work())
    data = [d for d in inbox.drain() if d.type == f.HDR_TYPE_DATA and not d.is_heartbeat]
    assert b"".join(bytes(d.payload) for d in data) == b"".join(bytes([n]) * 32 for n in range(20))
    assert counters[ctr.BYTES_SENT] - bytes_before == 20 * 64 and pub.bytes_sent == 20 * 64
    # idle: a heartbeat at the sender position after the heartbeat interval
    clock.advance(101 * MS)
    agents.sender.do_work()
    heartbeat = inbox.read(1)[0]
    assert heartbeat.is_heartbeat and heartbeat.term_offset == 20 * 64
    # a NAK resends the range once; it counts as retransmitted bytes only
    bytes_before = counters[ctr.BYTES_SENT]
    inbox.sock.sendto(nak(term_offset=64, length=128), transport.bound_address)
    wait_for(lambda: counters[ctr.RETRANSMITS_SENT] == 1, 3.0,
             invoke=lambda: (clock.advance(MS), agents.sender.do_work()))
    resent = inbox.drain()
    assert [(d.term_offset, bytes(d.payload)) for d in resent if not d.is_heartbeat][:1] == [(64, bytes([1]) * 32)]
    assert counters[ctr.RETRANSMITTED_BYTES] == 128 and counters[ctr.BYTES_SENT] - bytes_before < 128


def test_publications_of_an_endpoint_share_one_pass_and_leave_it_when_removed(rig):
    counters, clock, agents, endpoint, inbox, transport, publication = rig
    a, appender_a = publication(7)
    b, appender_b = publication(8)
    wait_for(lambda: len(agents.sender.publications) == 2, 3.0, invoke=agents.sender.do_work)
    assert endpoint.pass_publications == [a, b] and endpoint._send_pass.count == 2
    _connect(counters, clock, agents, inbox, transport, session_id=7)
    _connect(counters, clock, agents, inbox, transport, session_id=8)
    for pub, appender in ((a, appender_a), (b, appender_b)):
        pub.update_pub_pos_and_lmt()
        for _ in range(3):
            assert appender.offer(b"y" * 100) > 0
    wait_for(lambda: a.snd_pos.get() == b.snd_pos.get() == 3 * 160, 3.0, invoke=lambda: agents.sender.do_work())
    sessions = sorted(d.session_id for d in inbox.drain()
                      if d.type == f.HDR_TYPE_DATA and not d.is_heartbeat)
    assert sessions == [7, 7, 7, 8, 8, 8]
    agents.sender_proxy.remove_publication(a)
    agents.sender.do_work()
    assert endpoint.pass_publications == [b] and endpoint._send_pass.count == 1 and a not in agents.sender.publications


def test_send_timestamps_and_test_transports_keep_the_per_publication_send(tmp_path):
    counters, clock = Counters(), ManualClock()
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    stamped = UdpTransport(sock)
    stamped.set_timestamp_offsets(channel_send=-8)
    for transport in (stamped, FakeTransport()):
        endpoint = send_endpoint(counters, transport)
        pub, appender = network_publication(tmp_path, counters, endpoint, clock, name=f"p{id(transport)}")
        assert endpoint.sender_add_publication(pub) is False and endpoint.pass_publications == []
        appender.close()
        pub.close()
    stamped.close()


def test_a_manual_mdc_publication_streams_to_each_destination_through_the_pass(tmp_path):
    counters, clock = Counters(), ManualClock()
    agents = Agents(counters, clock)
    inboxes = [Inbox(), Inbox()]
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    transport = UdpTransport(sock, name="snd")
    channel = "aeron:udp?control-mode=manual"
    endpoint = send_endpoint(counters, transport, channel)
    pub, appender = network_publication(tmp_path, counters, endpoint, clock, channel=channel, name="mdc")
    try:
        endpoint.add_publication(pub)
        agents.sender_proxy.add_endpoint(endpoint)
        agents.sender_proxy.add_publication(pub)
        for n, inbox in enumerate(inboxes):
            endpoint.add_destination(inbox.sock.getsockname(), n + 1, clock())
        wait_for(lambda: endpoint.pass_publications == [pub], 3.0, invoke=agents.sender.do_work)
        assert endpoint._send_pass.multi_destination
        for receiver_id, inbox in enumerate(inboxes):
            received = counters[ctr.STATUS_MESSAGES_RECEIVED]
            inbox.sock.sendto(status_message(receiver_id=receiver_id), transport.bound_address)
            wait_for(lambda: counters[ctr.STATUS_MESSAGES_RECEIVED] > received, 3.0,
                     invoke=lambda: (clock.advance(MS), agents.sender.do_work()))
        pub.update_pub_pos_and_lmt()
        for n in range(10):
            assert appender.offer(bytes([n]) * 32) > 0
        wait_for(lambda: pub.snd_pos.get() == 10 * 64, 3.0, invoke=agents.sender.do_work)
        expected = b"".join(bytes([n]) * 32 for n in range(10))
        for inbox in inboxes:
            data = [d for d in inbox.drain() if d.type == f.HDR_TYPE_DATA and not d.is_heartbeat]
            assert b"".join(bytes(d.payload) for d in data) == expected
        # a destination removed gets nothing more; the other gets the rest
        assert endpoint.remove_destination(registration_id=1)
        for n in range(10, 13):
            assert appender.offer(bytes([n]) * 32) > 0
        wait_for(lambda: pub.snd_pos.get() == 13 * 64, 3.0, invoke=agents.sender.do_work)
        assert [d for d in inboxes[0].drain() if d.type == f.HDR_TYPE_DATA and not d.is_heartbeat] == []
        data = [d for d in inboxes[1].drain() if d.type == f.HDR_TYPE_DATA and not d.is_heartbeat]
        assert b"".join(bytes(d.payload) for d in data) == b"".join(bytes([n]) * 32 for n in range(10, 13))
    finally:
        appender.close()
        pub.close()
        transport.close()
        for inbox in inboxes:
            inbox.sock.close()
