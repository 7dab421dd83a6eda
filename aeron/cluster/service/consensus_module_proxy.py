# SPDX-License-Identifier: Apache-2.0
"""``ConsensusModuleProxy``: what a clustered service sends to its consensus module on the control channel's
consensus module stream (105): ServiceAck, ScheduleTimer, CancelTimer, CloseSession, ClusterMembersQuery, and the
service's own messages for the log (a SessionMessageHeader whose cluster session id is the service id, then the
payload). Port of Aeron's ``io.aeron.cluster.service.ConsensusModuleProxy``.

Each send is one attempt: True (or a position) when the message went, False (or the negative code) on back
pressure or an admin action, for the caller to idle and retry; ClusterError when the publication is not connected,
closed or at its maximum position (``ConsensusModuleProxy.checkResult``).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aeron._core.buffer_claim import BufferClaim
from aeron._core.codecs import cluster as codecs
from aeron._core.term_appender import CLOSED, MAX_POSITION_EXCEEDED, NOT_CONNECTED
from aeron.common.errors import ClusterError

__all__ = ["ConsensusModuleProxy", "check_result", "commit_encoded"]

_HEADER = codecs.MESSAGE_HEADER_LENGTH


def check_result(position: int, publication: Any) -> None:
    """ClusterError for the results that retrying cannot mend: not connected, closed, max position exceeded."""
    if position == NOT_CONNECTED:
        raise ClusterError("publication is not connected")
    if position == CLOSED:
        raise ClusterError("publication is closed")
    if position == MAX_POSITION_EXCEEDED:
        raise ClusterError(f"publication at max position: term-length={publication.term_buffer_length}")


def commit_encoded(claim: BufferClaim, encoder: Any, fields: Mapping[str, Any]) -> None:
    """Encode a message (header, then ``fields``) in place in an open claim and commit it; aborted if encoding
    fails. The encoder lets go of the claim's view before the commit, which a view still exported would refuse."""
    try:
        encoder.wrap_and_apply_header(claim.buffer, 0)
        for name, value in fields.items():
            setattr(encoder, name, value)
    except BaseException:
        encoder.release()
        claim.abort()
        raise
    encoder.release()
    claim.commit()


class ConsensusModuleProxy:
    """Encodes a service's requests to its consensus module onto ``publication``."""

    def __init__(self, publication: Any) -> None:
        """Send on ``publication`` (the control channel's consensus module stream); the proxy owns it."""
        self.publication = publication
        self._buffer_claim = BufferClaim()
        self._schedule_timer = codecs.ScheduleTimerEncoder()
        self._cancel_timer = codecs.CancelTimerEncoder()
        self._service_ack = codecs.ServiceAckEncoder()
        self._close_session = codecs.CloseSessionEncoder()
        self._cluster_members_query = codecs.ClusterMembersQueryEncoder()

    def close(self) -> None:
        """Close the publication."""
        self.publication.close()

    def _send(self, encoder: Any, **fields: int) -> bool:
        claim = self._buffer_claim
        position = self.publication.try_claim(_HEADER + encoder.BLOCK_LENGTH, claim)
        if position <= 0:
            check_result(position, self.publication)
            return False
        commit_encoded(claim, encoder, fields)
        return True

    def schedule_timer(self, correlation_id: int, deadline: int) -> bool:
        """ScheduleTimer: fire ``correlation_id`` at cluster time ``deadline`` (replacing an earlier schedule)."""
        return self._send(self._schedule_timer, correlation_id=correlation_id, deadline=deadline)

    def cancel_timer(self, correlation_id: int) -> bool:
        """CancelTimer ``correlation_id``."""
        return self._send(self._cancel_timer, correlation_id=correlation_id)

    def ack(self, log_position: int, timestamp: int, ack_id: int, relevant_id: int, service_id: int) -> bool:
        """ServiceAck: the service reached ``log_position``; ``relevant_id`` is the Aeron client id on start, the
        snapshot's recording id after a snapshot, else -1."""
        return self._send(self._service_ack, log_position=log_position, timestamp=timestamp, ack_id=ack_id,
                          relevant_id=relevant_id, service_id=service_id)

    def close_session(self, cluster_session_id: int) -> bool:
        """CloseSession: ask the consensus module to close a client session."""
        return self._send(self._close_session, cluster_session_id=cluster_session_id)

    def cluster_members_query(self, correlation_id: int) -> bool:
        """ClusterMembersQuery (extended): the answer comes on the service stream."""
        return self._send(self._cluster_members_query, correlation_id=correlation_id,
                          extended=codecs.BooleanType.TRUE)

    def offer(self, session_header: Any, message: Any) -> int:
        """A service message: the encoded ``session_header`` (SessionMessageHeader, 32 bytes) and ``message`` as
        one frame. Returns the new position, or a negative publication code to retry on (back pressure, admin
        action)."""
        position: int = self.publication.offerv((session_header, message))
        if position < 0:
            check_result(position, self.publication)
        return position

    def offerv(self, session_header: Any, vectors: Sequence[Any]) -> int:
        """As :meth:`offer`, the message gathered from ``vectors``."""
        position: int = self.publication.offerv((session_header, *vectors))
        if position < 0:
            check_result(position, self.publication)
        return position

    def try_claim(self, length: int, buffer_claim: BufferClaim, session_header: Any) -> int:
        """Claim ``length`` bytes (the session header's included) and write ``session_header`` at the start of the
        claimed payload; the caller writes its message after it and commits."""
        position: int = self.publication.try_claim(length, buffer_claim)
        if position > 0:
            buffer_claim.put_bytes(session_header, 0)
        else:
            check_result(position, self.publication)
        return position
