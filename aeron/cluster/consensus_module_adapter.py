# SPDX-License-Identifier: Apache-2.0
"""Reads what the clustered services send the consensus module (Aeron's ``ConsensusModuleAdapter``), on the IPC
control channel's consensus module stream (105): service messages (``Cluster.offer``), CloseSession, ScheduleTimer,
CancelTimer, ServiceAck and ClusterMembersQuery (also sent by ClusterTool).

Polling stops after a ServiceAck (BREAK), so that the agent sees each ack before the next message, as Aeron's does.
Another schema here is a ClusterError; a message that does not decode goes to the error handler and is dropped.
"""
from __future__ import annotations

from typing import Any

from aeron._core.codecs import cluster as codecs
from aeron._core.fragment_assembler import ControlledFragmentAssembler
from aeron._core.term_reader import BREAK, CONTINUE, any_fragment_pending
from aeron.common.errors import ClusterError, MalformedMessageError

__all__ = ["ConsensusModuleAdapter", "FRAGMENT_LIMIT"]

FRAGMENT_LIMIT = 25
_HEADER = codecs.MESSAGE_HEADER_LENGTH
SESSION_HEADER_LENGTH = _HEADER + codecs.SessionMessageHeaderDecoder.BLOCK_LENGTH
_SESSION_MESSAGE = codecs.SessionMessageHeaderDecoder.TEMPLATE_ID
_CLOSE_SESSION = codecs.CloseSessionDecoder.TEMPLATE_ID
_SCHEDULE_TIMER = codecs.ScheduleTimerDecoder.TEMPLATE_ID
_CANCEL_TIMER = codecs.CancelTimerDecoder.TEMPLATE_ID
_SERVICE_ACK = codecs.ServiceAckDecoder.TEMPLATE_ID
_MEMBERS_QUERY = codecs.ClusterMembersQueryDecoder.TEMPLATE_ID


class ConsensusModuleAdapter:
    """Polls the services' stream into the consensus module agent."""

    def __init__(self, subscription: Any, consensus_module_agent: Any, error_handler: Any = None) -> None:
        """``error_handler(exception)`` hears of malformed messages (dropped); None raises them."""
        self.subscription = subscription
        self._agent = consensus_module_agent
        self._error_handler = error_handler
        self._assembler = ControlledFragmentAssembler(self.on_fragment)
        self._header = codecs.MessageHeaderDecoder()
        self._session_header = codecs.SessionMessageHeaderDecoder()
        self._close_session = codecs.CloseSessionDecoder()
        self._schedule_timer = codecs.ScheduleTimerDecoder()
        self._cancel_timer = codecs.CancelTimerDecoder()
        self._service_ack = codecs.ServiceAckDecoder()
        self._members_query = codecs.ClusterMembersQueryDecoder()

    def close(self) -> None:
        """Close the subscription."""
        self.subscription.close()

    def poll(self) -> int:
        """Poll up to 25 fragments; returns how many."""
        subscription = self.subscription
        # polled every duty cycle, mostly empty (the services' acks and messages are rare): decided on a few loads
        if not subscription.is_closed and not any_fragment_pending(subscription.images):
            return 0
        return int(subscription.controlled_poll(self._assembler, FRAGMENT_LIMIT))

    def on_fragment(self, buffer: Any, offset: int, length: int, header: Any) -> int:
        """Decode one message and call the agent; returns the poll action."""
        h = self._header.wrap(buffer, offset)
        try:
            schema_id, template_id, block_length, version = h.schema_id, h.template_id, h.block_length, h.version
        finally:
            h.release()
        if schema_id != codecs.SCHEMA_ID:
            raise ClusterError(f"expected schemaId={codecs.SCHEMA_ID}, actual={schema_id}")
        agent = self._agent
        body = offset + _HEADER
        end = offset + length
        action = CONTINUE
        try:
            if template_id == _SESSION_MESSAGE:
                message = self._session_header.wrap(buffer, body, block_length, version, end)
                try:
                    cluster_session_id = message.cluster_session_id
                finally:
                    message.release()
                agent.on_service_message(cluster_session_id, buffer, offset + SESSION_HEADER_LENGTH,
                                         length - SESSION_HEADER_LENGTH)
            elif template_id == _CLOSE_SESSION:
                closing = self._close_session.wrap(buffer, body, block_length, version, end)
                try:
                    cluster_session_id = closing.cluster_session_id
                finally:
                    closing.release()
                agent.on_service_close_session(cluster_session_id)
            elif template_id == _SCHEDULE_TIMER:
                schedule = self._schedule_timer.wrap(buffer, body, block_length, version, end)
                try:
                    correlation_id, deadline = schedule.correlation_id, schedule.deadline
                finally:
                    schedule.release()
                agent.on_schedule_timer(correlation_id, deadline)
            elif template_id == _CANCEL_TIMER:
                cancel = self._cancel_timer.wrap(buffer, body, block_length, version, end)
                try:
                    correlation_id = cancel.correlation_id
                finally:
                    cancel.release()
                agent.on_cancel_timer(correlation_id)
            elif template_id == _SERVICE_ACK:
                service_ack = self._service_ack.wrap(buffer, body, block_length, version, end)
                try:
                    ack = (service_ack.log_position, service_ack.timestamp, service_ack.ack_id, service_ack.relevant_id,
                           service_ack.service_id)
                finally:
                    service_ack.release()
                agent.on_service_ack(*ack)
                action = BREAK
            elif template_id == _MEMBERS_QUERY:
                query = self._members_query.wrap(buffer, body, block_length, version, end)
                try:
                    correlation_id, extended = query.correlation_id, query.extended == codecs.BooleanType.TRUE
                finally:
                    query.release()
                agent.on_cluster_members_query(correlation_id, extended)
        except MalformedMessageError as ex:
            error = MalformedMessageError(f"malformed service message templateId={template_id}: {ex}")
            if self._error_handler is None:
                raise error from ex
            self._error_handler(error)
        return action
