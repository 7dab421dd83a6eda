# SPDX-License-Identifier: Apache-2.0
"""Acknowledgements from the clustered services (Aeron's ``ServiceAck``).

Each service numbers its ``ServiceAck`` messages 0, 1, 2, ... The consensus module keeps one queue per service and
moves on (start-up done, log joined, snapshot taken, termination) only when the head of every queue is the ack it
expects: the next ack id at the expected log position. Anything else at the head is an "ack out of sequence", a
fatal disagreement between the consensus module and a service about where the log is.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from aeron.common.constants import NULL_VALUE
from aeron.common.errors import ClusterError

__all__ = ["ServiceAck", "EMPTY_SERVICE_ACKS"]



class ServiceAck:
    """One service's acknowledgement: ``ack_id``, ``log_position`` and ``relevant_id`` (the service's Aeron client id
    on start-up, its snapshot's recording id after a snapshot, -1 otherwise)."""

    __slots__ = ("ack_id", "log_position", "relevant_id")

    def __init__(self, ack_id: int, log_position: int, relevant_id: int) -> None:
        """An ack as received."""
        self.ack_id = ack_id
        self.log_position = log_position
        self.relevant_id = relevant_id

    def __repr__(self) -> str:
        """Aeron's ``toString``."""
        return f"ServiceAck{{ackId={self.ack_id}, logPosition={self.log_position}, relevantId={self.relevant_id}}}"

    @staticmethod
    def new_array_of_queues(service_count: int) -> list[deque[ServiceAck]]:
        """One empty queue per service."""
        return [deque() for _ in range(service_count)]

    @staticmethod
    def has_reached(log_position: int, ack_id: int, queues: Sequence[deque[ServiceAck]]) -> bool:
        """Every service's queue holds an ack at its head, and each is ``ack_id`` at ``log_position``; ClusterError
        ("ack out of sequence") when a head is another ack."""
        for service_id, queue in enumerate(queues):
            if not queue:
                return False
            ack = queue[0]
            if ack.ack_id != ack_id or ack.log_position != log_position:
                raise ClusterError(
                    f"ack out of sequence: expected [ackId={ack_id}, logPosition={log_position}] vs received "
                    f"[ackId={ack.ack_id}, logPosition={ack.log_position}, relevantId={ack.relevant_id}, "
                    f"serviceId={service_id}]")
        return True

    @staticmethod
    def remove_head(queues: Sequence[deque[ServiceAck]]) -> None:
        """Drop the head ack of every queue."""
        for queue in queues:
            if queue:
                queue.popleft()

    @staticmethod
    def poll_service_acks(queues: Sequence[deque[ServiceAck]], log_position: int | None = None,
                          service_id: int = NULL_VALUE) -> list[ServiceAck]:
        """Take the head ack of every queue; ClusterError when one is missing (or, with ``log_position``, at
        another position)."""
        acks = []
        for id_, queue in enumerate(queues):
            ack = queue.popleft() if queue else None
            if log_position is None:
                if ack is None:
                    raise ClusterError(f"invalid ack for serviceId={id_}")
            elif ack is None or ack.log_position != log_position:
                raise ClusterError(f"invalid ack for serviceId={service_id} logPosition={log_position} "
                                   f"{'null' if ack is None else ack}")
            acks.append(ack)
        return acks

    @staticmethod
    def are_all_relevant_ids_non_null(message: str, acks: Sequence[ServiceAck],
                                      record: Callable[[BaseException], Any]) -> bool:
        """Every ack carries a relevant id; each that does not is recorded (``record(ClusterError)``) as
        ``service=<id> <message>``, highest service first."""
        complete = True
        for service_id in range(len(acks) - 1, -1, -1):
            if acks[service_id].relevant_id == NULL_VALUE:
                record(ClusterError(f"service={service_id} {message}"))
                complete = False
        return complete


EMPTY_SERVICE_ACKS: tuple[ServiceAck, ...] = ()
