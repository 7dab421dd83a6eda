# SPDX-License-Identifier: Apache-2.0
"""IngressSessionDecorator: offer to a cluster's ingress Publication directly, with the session header put in front
of each message (Aeron ``IngressSessionDecorator``), for applications that use ``AeronCluster.ingress_publication``
themselves. The header and payload go as one message without being joined (no copy, no allocation)."""
from __future__ import annotations

from typing import Any

from aeron._core.codecs.cluster import MESSAGE_HEADER_LENGTH, SessionMessageHeaderEncoder
from aeron._core.two_buffer_offer import two_buffer_offer

__all__ = ["IngressSessionDecorator"]

HEADER_LENGTH = MESSAGE_HEADER_LENGTH + SessionMessageHeaderEncoder.BLOCK_LENGTH


class IngressSessionDecorator:
    """Prefixes messages with a SessionMessageHeader of ``cluster_session_id`` and ``leadership_term_id`` (both -1,
    Aeron's null value, until set)."""

    HEADER_LENGTH = HEADER_LENGTH

    def __init__(self, cluster_session_id: int = -1, leadership_term_id: int = -1) -> None:
        """The header to put in front; ``timestamp`` is -1, as Aeron's decorator leaves it."""
        self._buffer = bytearray(HEADER_LENGTH)
        self._header = SessionMessageHeaderEncoder().wrap_and_apply_header(self._buffer, 0)
        self._header.leadership_term_id = leadership_term_id
        self._header.cluster_session_id = cluster_session_id
        self._header.timestamp = -1

    @property
    def cluster_session_id(self) -> int:
        """The session id in the header."""
        return self._header.cluster_session_id

    @cluster_session_id.setter
    def cluster_session_id(self, value: int) -> None:
        self._header.cluster_session_id = value

    @property
    def leadership_term_id(self) -> int:
        """The leadership term id in the header (move it on after a new leader)."""
        return self._header.leadership_term_id

    @leadership_term_id.setter
    def leadership_term_id(self, value: int) -> None:
        self._header.leadership_term_id = value

    def offer(self, publication: Any, buffer: Any, offset: int = 0, length: int = -1) -> int:
        """Offer the header and ``buffer[offset:offset + length]`` as one message to ``publication``; returns as
        ``Publication.offer`` (the new position, or NOT_CONNECTED, BACK_PRESSURED, ADMIN_ACTION, CLOSED,
        MAX_POSITION_EXCEEDED)."""
        return two_buffer_offer(publication, self._buffer, 0, HEADER_LENGTH, buffer, offset, length)
