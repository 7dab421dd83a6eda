# SPDX-License-Identifier: Apache-2.0
"""``ServiceSnapshotTaker``: a clustered service's part of its snapshot, one ClientSession entry per open session
between the markers (Aeron's ``io.aeron.cluster.service.ServiceSnapshotTaker``). The application's own state
follows the END marker, written by ``ClusteredService.on_take_snapshot``."""
from __future__ import annotations

from typing import Any

from aeron._core.buffer_claim import BufferClaim
from aeron._core.codecs import cluster as codecs
from aeron.cluster.service.client_session import ClientSession
from aeron.cluster.service.snapshot_taker import SnapshotTaker

__all__ = ["ServiceSnapshotTaker"]

# the ClientSession entry's fixed part: message header, block, and the two var-data length prefixes
_SESSION_FIXED_LENGTH = codecs.MESSAGE_HEADER_LENGTH + codecs.ClientSessionEncoder.BLOCK_LENGTH + 4 + 4


class ServiceSnapshotTaker(SnapshotTaker):
    """Adds the client sessions to the snapshot frame."""

    def __init__(self, publication: Any, idle_strategy: Any, aeron_agent_invoker: Any = None) -> None:
        """As :class:`SnapshotTaker`."""
        super().__init__(publication, idle_strategy, aeron_agent_invoker)
        self._client_session = codecs.ClientSessionEncoder()
        self._offer_buffer = bytearray(1024)

    def snapshot_session(self, session: ClientSession) -> None:
        """One ClientSession entry: claimed in place when it fits one frame, else encoded aside and offered (a
        fragmented message), as Aeron does for a long response channel or principal."""
        response_channel = session.response_channel.encode("ascii")
        encoded_principal = session.encoded_principal
        length = _SESSION_FIXED_LENGTH + len(response_channel) + len(encoded_principal)
        if length <= self.publication.max_payload_length:
            self.claim_and_commit(length, lambda claim: self._encode_claimed(session, response_channel,
                                                                             encoded_principal, claim))
            return
        if len(self._offer_buffer) < length:
            self._offer_buffer = bytearray(length)
        self._encode(session, response_channel, encoded_principal, self._offer_buffer)
        self.offer(self._offer_buffer, 0, length)

    def _encode_claimed(self, session: ClientSession, response_channel: bytes, encoded_principal: bytes,
                        claim: BufferClaim) -> None:
        try:
            self._encode(session, response_channel, encoded_principal, claim.buffer)
        except BaseException:
            claim.abort()
            raise
        claim.commit()

    def _encode(self, session: ClientSession, response_channel: bytes, encoded_principal: bytes, buffer: Any) -> None:
        e = self._client_session.wrap_and_apply_header(buffer, 0)
        try:
            e.cluster_session_id = session.id
            e.response_stream_id = session.response_stream_id
            e.put_response_channel(response_channel)
            e.put_encoded_principal(encoded_principal)
        finally:
            e.release()
