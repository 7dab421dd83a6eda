# SPDX-License-Identifier: Apache-2.0
"""``ServiceAdapter``: what a clustered service reads from its consensus module on the control channel's service
stream (104): JoinLog, ServiceTerminationPosition and requestServiceAck, handed to the agent one message a poll.
Port of Aeron's ``io.aeron.cluster.service.ServiceAdapter``.

The control channel is shared by every service of the member (and ClusterTool), so messages meant for others
(ClusterMembersResponse, ...) are skipped; a message of another schema is a ClusterError, as in Aeron.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aeron._core.codecs import cluster as codecs
from aeron._core.fragment_assembler import FragmentAssembler
from aeron.cluster.service.cluster import Role
from aeron.common.errors import ClusterError

if TYPE_CHECKING:
    from aeron.cluster.service.clustered_service_agent import ClusteredServiceAgent

__all__ = ["ServiceAdapter"]

FRAGMENT_LIMIT = 1
_HEADER = codecs.MESSAGE_HEADER_LENGTH


class ServiceAdapter:
    """Polls the service stream of the control channel and calls the agent's ``on_join_log``,
    ``on_service_termination_position`` and ``on_request_service_ack``."""

    def __init__(self, subscription: Any, agent: ClusteredServiceAgent) -> None:
        """Read ``subscription`` (the adapter owns it) for ``agent``."""
        self.subscription = subscription
        self.agent = agent
        self._assembler = FragmentAssembler(self.on_fragment)
        self._header = codecs.MessageHeaderDecoder()
        self._join_log = codecs.JoinLogDecoder()
        self._termination_position = codecs.ServiceTerminationPositionDecoder()
        self._request_service_ack = codecs.RequestServiceAckDecoder()

    def close(self) -> None:
        """Close the subscription."""
        self.subscription.close()

    def poll(self) -> int:
        """Read at most one message; returns the fragments read."""
        return int(self.subscription.poll(self._assembler, FRAGMENT_LIMIT))

    def on_fragment(self, buffer: Any, offset: int, length: int, header: Any) -> None:
        """Decode one assembled message and hand it to the agent."""
        end = offset + length
        h = self._header.wrap(buffer, offset)
        schema_id, template_id, block_length, version = h.schema_id, h.template_id, h.block_length, h.version
        h.release()
        if schema_id != codecs.SCHEMA_ID:
            raise ClusterError(f"expected schemaId={codecs.SCHEMA_ID}, actual={schema_id}")
        # decoders let go of the log's buffer before the agent runs: a view kept would pin the log's mapping
        if template_id == codecs.JoinLogDecoder.TEMPLATE_ID:
            d = self._join_log.wrap(buffer, offset + _HEADER, block_length, version, end)
            try:
                args = (d.log_position, d.max_log_position, d.member_id, d.log_session_id, d.log_stream_id,
                        d.is_startup == codecs.BooleanType.TRUE, Role.get(d.role),
                        d.is_standby == codecs.BooleanType.TRUE, d.log_channel)
            finally:
                d.release()
            self.agent.on_join_log(*args)
        elif template_id == codecs.ServiceTerminationPositionDecoder.TEMPLATE_ID:
            t = self._termination_position.wrap(buffer, offset + _HEADER, block_length, version, end)
            try:
                log_position, ack_required = t.log_position, t.ack_required == codecs.BooleanType.TRUE
            finally:
                t.release()
            self.agent.on_service_termination_position(log_position, ack_required)
        elif template_id == codecs.RequestServiceAckDecoder.TEMPLATE_ID:
            r = self._request_service_ack.wrap(buffer, offset + _HEADER, block_length, version, end)
            try:
                log_position = r.log_position
            finally:
                r.release()
            self.agent.on_request_service_ack(log_position)
