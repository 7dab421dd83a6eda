# SPDX-License-Identifier: Apache-2.0
"""The service ack queues: acks are awaited per service in sequence, and an ack out of sequence is an error."""
import pytest

from aeron.cluster.service_ack import ServiceAck
from aeron.common.errors import ClusterError


def test_has_reached_waits_for_every_service():
    queues = ServiceAck.new_array_of_queues(2)
    queues[0].append(ServiceAck(0, 100, 7))
    assert not ServiceAck.has_reached(100, 0, queues)
    queues[1].append(ServiceAck(0, 100, 8))
    assert ServiceAck.has_reached(100, 0, queues)
    acks = ServiceAck.poll_service_acks(queues)
    assert [a.relevant_id for a in acks] == [7, 8]
    assert all(not q for q in queues)


def test_an_ack_out_of_sequence_is_an_error():
    queues = ServiceAck.new_array_of_queues(1)
    queues[0].append(ServiceAck(1, 100, -1))
    with pytest.raises(ClusterError, match=r"ack out of sequence: expected \[ackId=0, logPosition=100\]"):
        ServiceAck.has_reached(100, 0, queues)
    with pytest.raises(ClusterError, match="ack out of sequence"):
        ServiceAck.has_reached(200, 1, queues)


def test_poll_at_a_position_and_relevant_ids():
    queues = ServiceAck.new_array_of_queues(2)
    queues[0].append(ServiceAck(3, 64, 11))
    queues[1].append(ServiceAck(3, 64, -1))
    acks = ServiceAck.poll_service_acks(queues, 64, 0)
    recorded = []
    assert not ServiceAck.are_all_relevant_ids_non_null("failed to take snapshot", acks, recorded.append)
    assert [str(e) for e in recorded] == ["service=1 failed to take snapshot"]
    with pytest.raises(ClusterError, match="invalid ack for serviceId=0"):
        ServiceAck.poll_service_acks(queues)
    queues[0].append(ServiceAck(4, 65, -1))
    queues[1].append(ServiceAck(4, 64, -1))
    with pytest.raises(ClusterError, match="invalid ack for serviceId=1 logPosition=64"):
        ServiceAck.poll_service_acks(queues, 64, 1)


def test_remove_head():
    queues = ServiceAck.new_array_of_queues(2)
    for q in queues:
        q.append(ServiceAck(0, 0, -1))
        q.append(ServiceAck(1, 32, -1))
    ServiceAck.remove_head(queues)
    assert ServiceAck.has_reached(32, 1, queues)
