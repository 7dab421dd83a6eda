# SPDX-License-Identifier: Apache-2.0
"""EgressAdapter and ControlledEgressAdapter: decode one session's egress and dispatch it to a listener (Aeron's
``EgressAdapter`` and ``ControlledEgressAdapter``); :class:`AeronCluster` polls its egress through them too.

Only this session's messages are dispatched (the egress channel may carry other sessions'); a message of another
SBE schema goes to the listener extension, or raises ClusterError without one (as Aeron's adapters do); a message
that does not decode is counted in ``malformed_count`` and dropped. The decoders are reused and let go of the log
after each message, so the per-message path allocates nothing of its own and pins no log buffer.
"""
from __future__ import annotations

from typing import Any

from aeron._core.codecs.cluster import (SCHEMA_ID, AdminRequestType, AdminResponseCode, AdminResponseDecoder,
                                        MessageHeaderDecoder, NewLeaderEventDecoder, SessionEventDecoder,
                                        SessionMessageHeaderDecoder)
from aeron._core.fragment_assembler import ControlledFragmentAssembler, FragmentAssembler
from aeron._core.term_reader import CONTINUE
from aeron.cluster.client.egress_listener import ControlledEgressListener, EgressListener, as_egress_listener
from aeron.cluster.client.egress_poller import event_code
from aeron.common.errors import ClusterError, MalformedMessageError, OutOfBoundsError

__all__ = ["EgressAdapter", "ControlledEgressAdapter", "SESSION_HEADER_LENGTH"]

_HEADER_LENGTH = MessageHeaderDecoder.ENCODED_LENGTH
SESSION_HEADER_LENGTH = _HEADER_LENGTH + SessionMessageHeaderDecoder.BLOCK_LENGTH
_SESSION_MESSAGE = SessionMessageHeaderDecoder.TEMPLATE_ID
_SESSION_EVENT = SessionEventDecoder.TEMPLATE_ID
_NEW_LEADER_EVENT = NewLeaderEventDecoder.TEMPLATE_ID
_ADMIN_RESPONSE = AdminResponseDecoder.TEMPLATE_ID


def _enum(cls: Any, value: int) -> Any:
    try:
        return cls(value)
    except ValueError:
        return cls.NULL_VAL


class EgressAdapter:
    """Polls ``subscription`` and dispatches this session's egress to ``listener`` (an :class:`EgressListener`, an
    object with its methods, or an ``on_message`` function): ``poll()`` returns the fragments read."""

    def __init__(self, listener: Any, cluster_session_id: int, subscription: Any, fragment_limit: int = 10,
                 listener_extension: Any = None) -> None:
        """Dispatch the egress of ``cluster_session_id`` read from ``subscription``, ``fragment_limit`` fragments
        a poll; ``listener_extension`` receives other schemas' messages."""
        self.listener: Any = self._as_listener(listener)
        self.listener_extension = listener_extension
        self.cluster_session_id = cluster_session_id
        self.subscription = subscription
        self.fragment_limit = fragment_limit
        self.malformed_count = 0
        self._header = MessageHeaderDecoder()
        self._session_message = SessionMessageHeaderDecoder()
        self._session_event = SessionEventDecoder()
        self._new_leader_event = NewLeaderEventDecoder()
        self._admin_response = AdminResponseDecoder()
        self._assembler = self._make_assembler()

    @staticmethod
    def _as_listener(listener: Any) -> Any:
        return as_egress_listener(listener)

    def _make_assembler(self) -> Any:
        return FragmentAssembler(self.on_fragment)

    def poll(self) -> int:
        """Read up to ``fragment_limit`` fragments, dispatching whole messages; returns the fragments read."""
        return self.subscription.poll(self._assembler, self.fragment_limit)  # type: ignore[no-any-return]

    def clear(self) -> None:
        """Drop any partly assembled message (a new leader's egress starts afresh)."""
        self._assembler.clear()

    # -- dispatch --------------------------------------------------------------------------------------------------
    def on_fragment(self, buffer: Any, offset: int, length: int, header: Any) -> int:
        """Decode one whole message and dispatch it; returns the listener's action for a session message
        (CONTINUE otherwise)."""
        message_header = self._header
        try:
            message_header.wrap(buffer, offset)
            try:
                schema_id = message_header.schema_id
                template_id = message_header.template_id
                block_length = message_header.block_length
                version = message_header.version
            finally:
                message_header.release()
        except OutOfBoundsError:
            self.malformed_count += 1
            return CONTINUE
        if schema_id != SCHEMA_ID:
            return self._on_extension_message(block_length, template_id, schema_id, version, buffer, offset, length)
        body = offset + _HEADER_LENGTH
        end = offset + length
        try:
            if template_id == _SESSION_MESSAGE:
                message = self._session_message.wrap(buffer, body, block_length, version, end)
                cluster_session_id = message.cluster_session_id
                timestamp = message.timestamp
                message.release()
                if cluster_session_id == self.cluster_session_id:
                    action = self.listener.on_message(cluster_session_id, timestamp, buffer,
                                                      offset + SESSION_HEADER_LENGTH, length - SESSION_HEADER_LENGTH,
                                                      header)
                    return CONTINUE if action is None else action
            elif template_id == _SESSION_EVENT:
                event = self._session_event.wrap(buffer, body, block_length, version, end)
                try:
                    cluster_session_id = event.cluster_session_id
                    if cluster_session_id == self.cluster_session_id:
                        self._on_session_event(event.correlation_id, cluster_session_id, event.leadership_term_id,
                                               event.leader_member_id, event_code(event.code), event.detail)
                finally:
                    event.release()
            elif template_id == _NEW_LEADER_EVENT:
                new_leader = self._new_leader_event.wrap(buffer, body, block_length, version, end)
                try:
                    cluster_session_id = new_leader.cluster_session_id
                    leadership_term_id = new_leader.leadership_term_id
                    leader_member_id = new_leader.leader_member_id
                    ingress_endpoints = new_leader.ingress_endpoints
                finally:
                    new_leader.release()
                if cluster_session_id == self.cluster_session_id:
                    return self._on_new_leader(cluster_session_id, leadership_term_id, leader_member_id,
                                               ingress_endpoints, header)
            elif template_id == _ADMIN_RESPONSE:
                response = self._admin_response.wrap(buffer, body, block_length, version, end)
                try:
                    cluster_session_id = response.cluster_session_id
                    if cluster_session_id == self.cluster_session_id:
                        # the payload follows the message text, each after its 4-byte length (Java's
                        # EgressAdapter.onFragment works the offset out the same way)
                        payload_offset = response.offset + block_length + 4 + response.message_length + 4
                        self.listener.on_admin_response(
                            cluster_session_id, response.correlation_id,
                            _enum(AdminRequestType, response.request_type),
                            _enum(AdminResponseCode, response.response_code), response.message, buffer,
                            payload_offset, response.payload_length)
                finally:
                    response.release()
        except MalformedMessageError:
            self.malformed_count += 1
            self._release_all()         # a failed wrap may still hold the log
        return CONTINUE

    def _release_all(self) -> None:
        for decoder in (self._session_message, self._session_event, self._new_leader_event, self._admin_response):
            decoder.release()

    def _on_extension_message(self, block_length: int, template_id: int, schema_id: int, version: int, buffer: Any,
                              offset: int, length: int) -> int:
        extension = self.listener_extension
        if extension is None:
            raise ClusterError(f"expected schemaId={SCHEMA_ID}, actual={schema_id}")
        result = extension.on_extension_message(block_length, template_id, schema_id, version, buffer,
                                                offset + _HEADER_LENGTH, length - _HEADER_LENGTH)
        return CONTINUE if result is None else int(result)

    def _on_session_event(self, correlation_id: int, cluster_session_id: int, leadership_term_id: int,
                          leader_member_id: int, code: Any, detail: str) -> None:
        self.listener.on_session_event(correlation_id, cluster_session_id, leadership_term_id, leader_member_id, code,
                                       detail)

    def _on_new_leader(self, cluster_session_id: int, leadership_term_id: int, leader_member_id: int,
                       ingress_endpoints: str, header: Any) -> int:
        self.listener.on_new_leader(cluster_session_id, leadership_term_id, leader_member_id, ingress_endpoints)
        return CONTINUE


class ControlledEgressAdapter(EgressAdapter):
    """As :class:`EgressAdapter` with a controlled poll: the listener's ``on_message`` returns a ControlledPollAction
    (ABORT leaves the message in the log to be delivered again, BREAK ends the poll after it)."""

    def _make_assembler(self) -> Any:
        return ControlledFragmentAssembler(self.on_fragment)

    def poll(self) -> int:
        """Read up to ``fragment_limit`` fragments as the listener's actions allow; returns the fragments
        consumed."""
        return self.subscription.controlled_poll(self._assembler, self.fragment_limit)  # type: ignore[no-any-return]
