# SPDX-License-Identifier: Apache-2.0
"""The service's side of the control channel on our driver: what ConsensusModuleProxy sends decodes as the
consensus module reads it, and what the consensus module sends reaches the agent through ServiceAdapter."""
from __future__ import annotations

import pytest

from aeron._core.buffer_claim import BufferClaim
from aeron._core.codecs import cluster as codecs
from aeron.client import FragmentAssembler
from aeron.cluster.service.cluster import Role
from aeron.cluster.service.consensus_module_proxy import ConsensusModuleProxy
from aeron.cluster.service.service_adapter import ServiceAdapter
from aeron.common.errors import ClusterError
from tests.cluster.service.conftest import encode
from tests.support import wait_for

CONTROL = "aeron:ipc?term-length=128k"


def received(subscription, count: int) -> list[tuple]:
    """``count`` messages from ``subscription``, each (template id, decoder field values...)."""
    got: list[tuple] = []

    def on_message(buffer, offset, length, header):
        template_id = buffer.get_i16(offset + 2)
        decoder = {33: codecs.ServiceAckDecoder, 31: codecs.ScheduleTimerDecoder, 32: codecs.CancelTimerDecoder,
                   30: codecs.CloseSessionDecoder, 34: codecs.ClusterMembersQueryDecoder,
                   1: codecs.SessionMessageHeaderDecoder}[template_id]().wrap_header(buffer, offset, offset + length)
        names = [n for n in dir(decoder) if not n.startswith("_") and n.islower() and n not in (
            "wrap", "wrap_header", "release", "offset", "encoded_length", "acting_block_length", "acting_version")]
        values = tuple((n, getattr(decoder, n)) for n in sorted(names))
        extra = buffer.get_bytes(offset + 32, length - 32) if template_id == 1 else None
        decoder.release()
        got.append((template_id, dict(values), extra))

    assembler = FragmentAssembler(on_message)
    wait_for(lambda: subscription.poll(assembler, count) >= 0 and len(got) >= count, what=f"{count} messages")
    return got


@pytest.fixture
def proxy_and_cm(client):
    cm = client.add_subscription(CONTROL, 105)
    proxy = ConsensusModuleProxy(client.add_publication(CONTROL, 105))
    wait_for(lambda: proxy.publication.is_connected, what="connected")
    yield proxy, cm
    proxy.close()
    cm.close()


def test_the_proxy_encodes_what_the_consensus_module_reads(proxy_and_cm):
    proxy, cm = proxy_and_cm
    assert proxy.ack(4096, 77, 3, 123456, 2)
    assert proxy.schedule_timer(11, 5000)
    assert proxy.cancel_timer(11)
    assert proxy.close_session(42)
    assert proxy.cluster_members_query(99)
    got = received(cm, 5)
    assert [(t, f) for t, f, _ in got] == [
        (33, dict(ack_id=3, log_position=4096, relevant_id=123456, service_id=2, timestamp=77)),
        (31, dict(correlation_id=11, deadline=5000)),
        (32, dict(correlation_id=11)),
        (30, dict(cluster_session_id=42)),
        (34, dict(correlation_id=99, extended=codecs.BooleanType.TRUE)),
    ]


def test_a_service_message_is_the_session_header_then_the_payload(proxy_and_cm):
    proxy, cm = proxy_and_cm
    header = encode(codecs.SessionMessageHeaderEncoder, leadership_term_id=5, cluster_session_id=1, timestamp=0)
    assert proxy.offer(header, b"one") > 0
    assert proxy.offerv(header, [b"tw", b"o"]) > 0
    claim = BufferClaim()
    assert proxy.try_claim(32 + 5, claim, header) > 0
    claim.put_bytes(b"three", 32)
    claim.commit()
    got = received(cm, 3)
    assert [extra for _, _, extra in got] == [b"one", b"two", b"three"]
    assert all(f["cluster_session_id"] == 1 and f["leadership_term_id"] == 5 for _, f, _ in got)


def test_a_closed_publication_is_a_cluster_error(client):
    proxy = ConsensusModuleProxy(client.add_publication(CONTROL, 105))
    proxy.publication.close()
    with pytest.raises(ClusterError, match="publication is closed"):
        proxy.ack(0, 0, 0, 0, 0)


def test_an_unconnected_publication_is_a_cluster_error(client):
    proxy = ConsensusModuleProxy(client.add_publication(CONTROL, 105))
    try:
        with pytest.raises(ClusterError, match="not connected"):
            proxy.schedule_timer(1, 2)
    finally:
        proxy.close()


class RecordingAgent:
    def __init__(self):
        self.calls = []

    def on_join_log(self, *args):
        self.calls.append(("join", *args))

    def on_service_termination_position(self, *args):
        self.calls.append(("terminate", *args))

    def on_request_service_ack(self, *args):
        self.calls.append(("ack", *args))


def test_the_service_adapter_hands_each_control_message_to_the_agent(client):
    agent = RecordingAgent()
    adapter = ServiceAdapter(client.add_subscription(CONTROL, 104), agent)
    cm = client.add_publication(CONTROL, 104)
    wait_for(lambda: cm.is_connected, what="connected")
    messages = [
        encode(codecs.JoinLogEncoder, {"log_channel": "aeron:ipc?alias=log"}, log_position=96,
               max_log_position=2 ** 63 - 1, member_id=1, log_session_id=-5, log_stream_id=100,
               is_startup=codecs.BooleanType.TRUE, role=Role.LEADER, is_standby=codecs.BooleanType.FALSE),
        encode(codecs.ClusterMembersResponseEncoder, {"active_members": "x", "passive_followers": ""},
               correlation_id=1, leader_member_id=0),
        encode(codecs.ServiceTerminationPositionEncoder, log_position=4096, ack_required=codecs.BooleanType.TRUE),
        encode(codecs.RequestServiceAckEncoder, log_position=1024),
    ]
    for message in messages:
        wait_for(lambda: cm.offer(message) > 0, what="offer")
    wait_for(lambda: adapter.poll() >= 0 and len(agent.calls) == 3, what="three calls")
    assert agent.calls == [
        ("join", 96, 2 ** 63 - 1, 1, -5, 100, True, Role.LEADER, False, "aeron:ipc?alias=log"),
        ("terminate", 4096, True),
        ("ack", 1024),
    ]
    adapter.close()
    assert adapter.subscription.is_closed
    cm.close()


def test_the_service_adapter_refuses_another_schema(client):
    adapter = ServiceAdapter(client.add_subscription(CONTROL, 104), RecordingAgent())
    cm = client.add_publication(CONTROL, 104)
    wait_for(lambda: cm.is_connected, what="connected")
    foreign = bytearray(encode(codecs.RequestServiceAckEncoder, log_position=1))
    foreign[4:6] = (7).to_bytes(2, "little")
    wait_for(lambda: cm.offer(bytes(foreign)) > 0, what="offer")
    with pytest.raises(ClusterError, match="expected schemaId=111, actual=7"):
        wait_for(lambda: adapter.poll() > 0, what="the message")
    adapter.close()
    cm.close()
