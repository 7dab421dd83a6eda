# SPDX-License-Identifier: Apache-2.0
"""EgressPoller: one egress message of interest at a time (Aeron ``EgressPoller``), as the connect handshake and
other request/response users of the egress stream want it.

After :meth:`EgressPoller.poll`, ``is_poll_complete`` tells whether a SessionEvent, NewLeaderEvent, Challenge or
session message arrived, and the attributes describe it (the whole message is not kept: ``detail`` and the
challenge are copied out). Messages of other schemas are skipped; one that does not decode is counted in
``malformed_count`` and dropped.
"""
from __future__ import annotations

from typing import Any

from aeron._core.codecs.cluster import (SCHEMA_ID, ChallengeDecoder, EventCode, MessageHeaderDecoder,
                                        NewLeaderEventDecoder, SessionEventDecoder, SessionMessageHeaderDecoder)
from aeron._core.fragment_assembler import ControlledFragmentAssembler
from aeron._core.term_reader import ABORT, BREAK, CONTINUE
from aeron.common.constants import NULL_VALUE
from aeron.common.errors import MalformedMessageError

__all__ = ["EgressPoller", "NULL_VALUE"]

_HEADER_LENGTH = MessageHeaderDecoder.ENCODED_LENGTH
_NULL_HEARTBEAT_TIMEOUT = SessionEventDecoder.LEADER_HEARTBEAT_TIMEOUT_NS_NULL_VALUE


def event_code(value: int) -> EventCode:
    """The EventCode of a wire value (NULL_VAL for one this schema does not know)."""
    try:
        return EventCode(value)
    except ValueError:
        return EventCode.NULL_VAL


class EgressPoller:
    """Polls an egress subscription for one SessionEvent, NewLeaderEvent, Challenge or session message at a time
    (see the module docstring)."""

    def __init__(self, subscription: Any, fragment_limit: int = 10) -> None:
        """Poll ``subscription`` up to ``fragment_limit`` fragments a call."""
        self.subscription = subscription
        self.fragment_limit = fragment_limit
        self._assembler = ControlledFragmentAssembler(self._on_fragment)
        self._header = MessageHeaderDecoder()
        self._session_event = SessionEventDecoder()
        self._new_leader_event = NewLeaderEventDecoder()
        self._challenge = ChallengeDecoder()
        self._session_message = SessionMessageHeaderDecoder()
        self.egress_image: Any = None
        self.is_poll_complete = False
        self.malformed_count = 0
        self._clear()

    def _clear(self) -> None:
        self.cluster_session_id = NULL_VALUE
        self.correlation_id = NULL_VALUE
        self.leadership_term_id = NULL_VALUE
        self.leader_member_id = NULL_VALUE
        self.template_id = NULL_VALUE
        self.version = 0
        self.leader_heartbeat_timeout_ns = NULL_VALUE
        self.event_code: EventCode | None = None
        self.detail = ""
        self.encoded_challenge: bytes | None = None

    @property
    def is_challenged(self) -> bool:
        """True when the message polled was a Challenge."""
        return self.template_id == ChallengeDecoder.TEMPLATE_ID

    def poll(self) -> int:
        """Read until one message of interest arrived (or the fragment limit); returns the fragments read."""
        if self.is_poll_complete:
            self.is_poll_complete = False
            self._clear()
        return self.subscription.controlled_poll(self._assembler, self.fragment_limit)  # type: ignore[no-any-return]

    def _on_fragment(self, buffer: Any, offset: int, length: int, header: Any) -> int:
        if self.is_poll_complete:
            return ABORT
        end = offset + length
        decoder: Any = None
        try:
            message_header = self._header.wrap(buffer, offset)
            try:
                if message_header.schema_id != SCHEMA_ID:
                    return CONTINUE
                template_id = message_header.template_id
                block_length = message_header.block_length
                version = message_header.version
            finally:
                message_header.release()
            body = offset + _HEADER_LENGTH
            if template_id == SessionMessageHeaderDecoder.TEMPLATE_ID:
                decoder = self._session_message.wrap(buffer, body, block_length, version, end)
                self.leadership_term_id = decoder.leadership_term_id
                self.cluster_session_id = decoder.cluster_session_id
            elif template_id == SessionEventDecoder.TEMPLATE_ID:
                decoder = self._session_event.wrap(buffer, body, block_length, version, end)
                self.cluster_session_id = decoder.cluster_session_id
                self.correlation_id = decoder.correlation_id
                self.leadership_term_id = decoder.leadership_term_id
                self.leader_member_id = decoder.leader_member_id
                self.event_code = event_code(decoder.code)
                self.version = decoder.version
                timeout_ns = decoder.leader_heartbeat_timeout_ns
                self.leader_heartbeat_timeout_ns = NULL_VALUE if timeout_ns == _NULL_HEARTBEAT_TIMEOUT else timeout_ns
                self.detail = decoder.detail
                self.egress_image = self.subscription.image_by_session_id(header.session_id)
            elif template_id == NewLeaderEventDecoder.TEMPLATE_ID:
                decoder = self._new_leader_event.wrap(buffer, body, block_length, version, end)
                self.cluster_session_id = decoder.cluster_session_id
                self.leadership_term_id = decoder.leadership_term_id
                self.leader_member_id = decoder.leader_member_id
                self.detail = decoder.ingress_endpoints
                self.egress_image = self.subscription.image_by_session_id(header.session_id)
            elif template_id == ChallengeDecoder.TEMPLATE_ID:
                decoder = self._challenge.wrap(buffer, body, block_length, version, end)
                self.encoded_challenge = decoder.encoded_challenge
                self.cluster_session_id = decoder.cluster_session_id
                self.correlation_id = decoder.correlation_id
            else:
                return CONTINUE
        except MalformedMessageError:
            self.malformed_count += 1
            self._clear()
            return CONTINUE
        finally:
            if decoder is not None:
                decoder.release()
        self.template_id = template_id
        self.is_poll_complete = True
        return BREAK
