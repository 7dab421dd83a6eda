# SPDX-License-Identifier: Apache-2.0
"""BoundedLogAdapter on a log the test writes as a leader would (an exclusive IPC publication of cluster protocol
entries on our driver): each entry reaches the agent with its log position, fragmented entries whole, nothing past
the limit position, skipped templates skipped, another schema refused."""
from __future__ import annotations

import pytest

from aeron._core.codecs import cluster as codecs
from aeron.cluster.client.aeron_cluster import SESSION_HEADER_LENGTH
from aeron.cluster.service.bounded_log_adapter import BoundedLogAdapter
from aeron.common.errors import ClusterError
from tests.cluster.service.conftest import encode
from tests.support import wait_for


class RecordingAgent:
    """Records what the adapter hands an agent, and its service, whose sessions are ids 5 and -7 here."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self.session_by_id = {5: "session 5", -7: "session -7"}
        self.service = self
        self.adapter: BoundedLogAdapter | None = None

    def on_session_message(self, session, timestamp, buffer, offset, length, header):
        dispatcher = self.adapter.dispatcher
        self.calls.append(("message", dispatcher.log_position, session, timestamp, buffer.get_bytes(offset, length),
                           header.position, dispatcher.cluster_time))

    def on_timer_event(self, log_position, correlation_id, timestamp):
        self.calls.append(("timer", log_position, correlation_id, timestamp))

    def on_session_open(self, leadership_term_id, log_position, cluster_session_id, timestamp, response_stream_id,
                        response_channel, encoded_principal):
        self.calls.append(("open", leadership_term_id, log_position, cluster_session_id, timestamp,
                           response_stream_id, response_channel, encoded_principal))

    def on_session_close(self, leadership_term_id, log_position, cluster_session_id, timestamp, close_reason):
        self.calls.append(("close", leadership_term_id, log_position, cluster_session_id, timestamp, close_reason))

    def on_service_action(self, leadership_term_id, log_position, timestamp, action, flags):
        self.calls.append(("action", leadership_term_id, log_position, timestamp, action, flags))

    def on_new_leadership_term_event(self, leadership_term_id, log_position, timestamp, term_base_log_position,
                                     leader_member_id, log_session_id, time_unit, app_version):
        self.calls.append(("term", leadership_term_id, log_position, timestamp, term_base_log_position,
                           leader_member_id, log_session_id, time_unit, app_version))


def session_message(cluster_session_id: int, timestamp: int, payload: bytes) -> bytes:
    return encode(codecs.SessionMessageHeaderEncoder, payload=payload, leadership_term_id=0,
                  cluster_session_id=cluster_session_id, timestamp=timestamp)


@pytest.fixture
def log(client):
    """An exclusive IPC publication (the log) and the image of a subscription to it."""
    sub = client.add_subscription("aeron:ipc", 100)
    pub = client.add_exclusive_publication("aeron:ipc?term-length=64k", 100)
    wait_for(lambda: pub.is_connected and sub.image_count == 1, what="log connected")
    yield pub, sub.image_at_index(0)
    pub.close()
    sub.close()


def append(pub, message: bytes) -> int:
    position = wait_for(lambda: max(pub.offer(message), 0), what="offer")
    return position


def adapter_for(agent: RecordingAgent) -> BoundedLogAdapter:
    agent.adapter = BoundedLogAdapter(agent, 10)
    return agent.adapter


def test_each_entry_reaches_the_agent_with_the_position_after_it(log):
    pub, image = log
    agent = RecordingAgent()
    adapter = adapter_for(agent)
    adapter.image = image
    adapter.max_log_position = 2 ** 63 - 1
    p_term = append(pub, encode(codecs.NewLeadershipTermEventEncoder, leadership_term_id=3, log_position=96,
                                timestamp=1000, term_base_log_position=0, leader_member_id=2, log_session_id=77,
                                time_unit=codecs.ClusterTimeUnit.MICROS, app_version=1))
    p_open = append(pub, encode(codecs.SessionOpenEventEncoder,
                                {"response_channel": "aeron:udp?endpoint=localhost:9",
                                 "encoded_principal": b"\x01\xff"},
                                leadership_term_id=3, correlation_id=4, cluster_session_id=5, timestamp=1001,
                                response_stream_id=102))
    p_msg = append(pub, session_message(5, 1002, b"hello"))
    p_timer = append(pub, encode(codecs.TimerEventEncoder, leadership_term_id=3, correlation_id=9, timestamp=1003))
    p_close = append(pub, encode(codecs.SessionCloseEventEncoder, leadership_term_id=3, cluster_session_id=5,
                                 timestamp=1004, close_reason=codecs.CloseReason.TIMEOUT))
    action = encode(codecs.ClusterActionRequestEncoder, leadership_term_id=3, log_position=0, timestamp=1005,
                    action=codecs.ClusterAction.SNAPSHOT, flags=codecs.ClusterActionRequestEncoder.FLAGS_NULL_VALUE)
    append(pub, action)

    wait_for(lambda: adapter.poll(pub.position) >= 0 and len(agent.calls) == 6, what="six entries")
    assert agent.calls == [
        ("term", 3, 96, 1000, 0, 2, 77, codecs.ClusterTimeUnit.MICROS, 1),
        ("open", 3, p_open, 5, 1001, 102, "aeron:udp?endpoint=localhost:9", b"\x01\xff"),
        ("message", p_msg, "session 5", 1002, b"hello", p_msg, 1002),
        ("timer", p_timer, 9, 1003),
        ("close", 3, p_close, 5, 1004, codecs.CloseReason.TIMEOUT),
        # a null flags field (an older leader) is the default flags
        ("action", 3, 0, 1005, codecs.ClusterAction.SNAPSHOT, 0),
    ]
    assert p_term == 96 and image.position == pub.position


def test_a_fragmented_entry_is_dispatched_whole_with_the_position_after_its_last_fragment(log):
    pub, image = log
    agent = RecordingAgent()
    adapter = adapter_for(agent)
    adapter.image = image
    adapter.max_log_position = 2 ** 63 - 1
    payload = bytes(range(256)) * 20                        # 5120 bytes: several IPC MTUs
    end = append(pub, session_message(-7, 55, payload))
    assert end > 5120 + SESSION_HEADER_LENGTH + 32          # it went in more than one frame
    wait_for(lambda: adapter.poll(end) >= 0 and agent.calls, what="the whole message")
    assert agent.calls == [("message", end, "session -7", 55, payload, end, 55)]


def test_the_limit_position_bounds_each_poll(log):
    pub, image = log
    agent = RecordingAgent()
    adapter = adapter_for(agent)
    adapter.image = image
    first = append(pub, session_message(1, 1, b"a"))
    append(pub, session_message(1, 2, b"b"))
    adapter.max_log_position = first
    wait_for(lambda: adapter.poll(first) >= 0 and agent.calls, what="the first message")
    assert adapter.poll(first) == 0
    assert [call[4] for call in agent.calls] == [b"a"]
    assert image.position == first
    assert adapter.is_done()                                # at its bound
    adapter.max_log_position = 2 ** 63 - 1
    assert not adapter.is_done()


def test_membership_changes_and_unknown_templates_are_skipped(log):
    pub, image = log
    agent = RecordingAgent()
    adapter = adapter_for(agent)
    adapter.image = image
    append(pub, encode(codecs.MembershipChangeEventEncoder, {"cluster_members": "0,a|"}, leadership_term_id=0,
                       log_position=0, timestamp=0, leader_member_id=0, cluster_size=1, change_type=0, member_id=0))
    append(pub, encode(codecs.ServiceAckEncoder, log_position=0, timestamp=0, ack_id=0, relevant_id=0, service_id=0))
    end = append(pub, session_message(1, 2, b"after"))
    wait_for(lambda: adapter.poll(end) >= 0 and agent.calls, what="the message after them")
    assert [call[0] for call in agent.calls] == ["message"]


def test_an_entry_of_another_schema_is_a_cluster_error(log):
    pub, image = log
    adapter = adapter_for(RecordingAgent())
    adapter.image = image
    foreign = bytearray(session_message(1, 2, b"x"))
    foreign[4:6] = (101).to_bytes(2, "little")             # the archive's schema id
    end = append(pub, bytes(foreign))
    with pytest.raises(ClusterError, match="expected schemaId=111, actual=101"):
        wait_for(lambda: adapter.poll(end) > 0, what="the foreign entry")


def test_close_closes_the_image_subscription(client):
    sub = client.add_subscription("aeron:ipc", 100)
    pub = client.add_exclusive_publication("aeron:ipc", 100)
    wait_for(lambda: sub.image_count == 1, what="image")
    adapter = adapter_for(RecordingAgent())
    adapter.image = sub.image_at_index(0)
    adapter.close()
    assert adapter.image is None and sub.is_closed
    pub.close()
