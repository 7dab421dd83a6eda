# SPDX-License-Identifier: Apache-2.0
"""The consensus module's messages to clients (Aeron's ``EgressPublisher``): SessionEvent, Challenge,
NewLeaderEvent and AdminResponse, offered on each session's response publication.

Each send is up to three offers and reports whether it went; a session without a connected publication sends
nothing (the caller retries on a later cycle).
"""
from __future__ import annotations

from typing import Any

from aeron._core.codecs import cluster as codecs

__all__ = ["EgressPublisher", "CLIENT_PROTOCOL_SEMANTIC_VERSION"]

SEND_ATTEMPTS = 3
CLIENT_PROTOCOL_SEMANTIC_VERSION = (0 << 16) | (3 << 8) | 0    # AeronCluster.Configuration's 0.3.0
_HEADER = codecs.MESSAGE_HEADER_LENGTH


class EgressPublisher:
    """Encodes and offers egress control messages to a session's client."""

    def __init__(self, leader_heartbeat_timeout_ns: int) -> None:
        """``leader_heartbeat_timeout_ns`` goes in every SessionEvent, so clients size their new-leader wait."""
        self.leader_heartbeat_timeout_ns = leader_heartbeat_timeout_ns
        self._buffer = bytearray(16 * 1024)
        self._session_event = codecs.SessionEventEncoder()
        self._challenge = codecs.ChallengeEncoder()
        self._new_leader_event = codecs.NewLeaderEventEncoder()
        self._admin_response = codecs.AdminResponseEncoder()

    def _send(self, session: Any, encoder: Any) -> bool:
        length = _HEADER + encoder.encoded_length
        for _ in range(SEND_ATTEMPTS):
            if session.offer(self._buffer, 0, length) > 0:
                return True
        return False

    def send_event(self, session: Any, leadership_term_id: int, leader_member_id: int, code: int,
                   detail: str) -> bool:
        """SessionEvent ``code`` with ``detail`` to the session's client."""
        e = self._session_event.wrap_and_apply_header(self._buffer, 0)
        e.cluster_session_id = session.id
        e.correlation_id = session.correlation_id
        e.leadership_term_id = leadership_term_id
        e.leader_member_id = leader_member_id
        e.code = code
        e.version = CLIENT_PROTOCOL_SEMANTIC_VERSION
        e.leader_heartbeat_timeout_ns = self.leader_heartbeat_timeout_ns
        e.put_detail(detail)
        return self._send(session, e)

    def send_challenge(self, session: Any, encoded_challenge: bytes) -> bool:
        """Challenge from the authenticator to the session's client."""
        e = self._challenge.wrap_and_apply_header(self._buffer, 0)
        e.cluster_session_id = session.id
        e.correlation_id = session.correlation_id
        e.put_encoded_challenge(bytes(encoded_challenge))
        return self._send(session, e)

    def new_leader(self, session: Any, leadership_term_id: int, leader_member_id: int,
                   ingress_endpoints: str) -> bool:
        """NewLeaderEvent after an election."""
        e = self._new_leader_event.wrap_and_apply_header(self._buffer, 0)
        e.leadership_term_id = leadership_term_id
        e.cluster_session_id = session.id
        e.leader_member_id = leader_member_id
        e.put_ingress_endpoints(ingress_endpoints)
        return self._send(session, e)

    def send_admin_response(self, session: Any, correlation_id: int, request_type: int, response_code: int,
                            message: str) -> bool:
        """AdminResponse to an AdminRequest (empty payload)."""
        e = self._admin_response.wrap_and_apply_header(self._buffer, 0)
        e.cluster_session_id = session.id
        e.correlation_id = correlation_id
        e.request_type = request_type
        e.response_code = response_code
        e.put_message(message)
        e.put_payload(b"")
        return self._send(session, e)

    def __repr__(self) -> str:
        """Aeron's ``toString``."""
        return "EgressPublisher{}"
