# SPDX-License-Identifier: Apache-2.0
"""The consensus module's messages to its clustered services (Aeron's ``ServiceProxy``), on the IPC control
channel's service stream (104): JoinLog, ServiceTerminationPosition, requestServiceAck, and the answers to
ClusterMembersQuery.

Sends are up to five attempts, yielding on back pressure. A join or ack request that cannot be sent is a
ClusterError (the module cannot go on without its services); a termination position that cannot be sent is
reported to the error handler.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from aeron._core.codecs import cluster as codecs
from aeron._core.term_appender import BACK_PRESSURED, CLOSED, MAX_POSITION_EXCEEDED, NOT_CONNECTED
from aeron.common.errors import ClusterError

__all__ = ["ServiceProxy", "publication_error_string"]

SEND_ATTEMPTS = 5
_HEADER = codecs.MESSAGE_HEADER_LENGTH
_ERROR_STRINGS = {NOT_CONNECTED: "NOT_CONNECTED", BACK_PRESSURED: "BACK_PRESSURED", -3: "ADMIN_ACTION",
                  CLOSED: "CLOSED", MAX_POSITION_EXCEEDED: "MAX_POSITION_EXCEEDED"}


def publication_error_string(result: int) -> str:
    """Aeron's ``Publication.errorString``."""
    return _ERROR_STRINGS.get(result, f"unknown error code: {result}") if result <= 0 else "NONE"


def _check_result(position: int, publication: Any) -> None:
    if position == NOT_CONNECTED:
        raise ClusterError("publication is not connected")
    if position == CLOSED:
        raise ClusterError("publication is closed")
    if position == MAX_POSITION_EXCEEDED:
        raise ClusterError(f"publication at max position: term-length={publication.term_buffer_length}")


class ServiceProxy:
    """Sends to the services over ``publication`` (the control channel, service stream)."""

    def __init__(self, publication: Any) -> None:
        """The publication to the services."""
        self.publication = publication
        self._buffer = bytearray(64 * 1024)
        self._join_log = codecs.JoinLogEncoder()
        self._members_response = codecs.ClusterMembersResponseEncoder()
        self._members_extended_response = codecs.ClusterMembersExtendedResponseEncoder()
        self._termination_position = codecs.ServiceTerminationPositionEncoder()
        self._request_service_ack = codecs.RequestServiceAckEncoder()
        self._yield = os.sched_yield

    def close(self) -> None:
        """Close the publication."""
        self.publication.close()

    def _offer(self, encoder: Any) -> int:
        length = _HEADER + encoder.encoded_length
        result = 0
        for _ in range(SEND_ATTEMPTS):
            result = int(self.publication.offer(self._buffer, 0, length))
            if result > 0:
                return result
            if result == BACK_PRESSURED:
                self._yield()
        return result

    def join_log(self, log_position: int, max_log_position: int, member_id: int, log_session_id: int,
                 log_stream_id: int, is_startup: bool, role: int, channel: str, is_standby: bool = False) -> None:
        """JoinLog: the services are to read ``channel``/``log_stream_id``/``log_session_id`` from
        ``log_position``, up to ``max_log_position``, in ``role``."""
        e = self._join_log.wrap_and_apply_header(self._buffer, 0)
        e.log_position = log_position
        e.max_log_position = max_log_position
        e.member_id = member_id
        e.log_session_id = log_session_id
        e.log_stream_id = log_stream_id
        e.is_startup = codecs.BooleanType.TRUE if is_startup else codecs.BooleanType.FALSE
        e.role = int(role)
        e.is_standby = codecs.BooleanType.TRUE if is_standby else codecs.BooleanType.FALSE
        e.put_log_channel(channel)
        length = _HEADER + e.encoded_length
        position = 0
        for _ in range(SEND_ATTEMPTS):
            position = int(self.publication.offer(self._buffer, 0, length))
            if position > 0:
                return
            _check_result(position, self.publication)
            if position == BACK_PRESSURED:
                self._yield()
        raise ClusterError(f"failed to send join log request: {publication_error_string(position)}")

    def cluster_members_response(self, correlation_id: int, leader_member_id: int, active_members: str) -> None:
        """ClusterMembersResponse: the leader and the members string."""
        e = self._members_response.wrap_and_apply_header(self._buffer, 0)
        e.correlation_id = correlation_id
        e.leader_member_id = leader_member_id
        e.put_active_members(active_members)
        e.put_passive_followers("")
        result = self._offer(e)
        if result <= 0:
            raise ClusterError(f"failed to send cluster members response: result={result}")

    def cluster_members_extended_response(self, correlation_id: int, current_time_ns: int, leader_member_id: int,
                                          member_id: int, active_members: Sequence[Any]) -> None:
        """ClusterMembersExtendedResponse: what this member knows of each member."""
        e = self._members_extended_response.wrap_and_apply_header(self._buffer, 0)
        e.correlation_id = correlation_id
        e.current_time_ns = current_time_ns
        e.leader_member_id = leader_member_id
        e.member_id = member_id
        group = e.active_members_count(len(active_members))
        for member in active_members:
            group.next()
            group.leadership_term_id = member.leadership_term_id
            group.log_position = member.log_position
            group.time_of_last_append_ns = member.time_of_last_append_position_ns
            group.member_id = member.id
            group.put_ingress_endpoint(member.ingress_endpoint)
            group.put_consensus_endpoint(member.consensus_endpoint)
            group.put_log_endpoint(member.log_endpoint)
            group.put_catchup_endpoint(member.catchup_endpoint)
            group.put_archive_endpoint(member.archive_endpoint)
        e.passive_members_count(0)
        result = self._offer(e)
        if result <= 0:
            raise ClusterError(f"failed to send cluster members extended response: result={result}")

    def termination_position(self, log_position: int, ack_required: bool, error_handler: Any) -> None:
        """ServiceTerminationPosition: stop at ``log_position`` (acking when ``ack_required``)."""
        if self.publication.is_closed:
            return
        e = self._termination_position.wrap_and_apply_header(self._buffer, 0)
        e.log_position = log_position
        e.ack_required = codecs.BooleanType.TRUE if ack_required else codecs.BooleanType.FALSE
        result = self._offer(e)
        if result <= 0:
            error_handler(ClusterError(f"failed to send service termination position: result="
                                       f"{publication_error_string(result)}"))

    def request_service_ack(self, log_position: int) -> None:
        """requestServiceAck: each service acks when its log reaches ``log_position``."""
        e = self._request_service_ack.wrap_and_apply_header(self._buffer, 0)
        e.log_position = log_position
        result = self._offer(e)
        if result <= 0:
            raise ClusterError(f"failed to send request for service ack: result={publication_error_string(result)}")
