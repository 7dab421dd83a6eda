# SPDX-License-Identifier: Apache-2.0
"""The leader's appends to the replicated log (Aeron's ``LogPublisher``), on the exclusive log publication of the
current leadership term.

Each append is up to three attempts; back pressure gives up and the caller retries later (an ingress message is
left in its image). A closed log publication, or one at its maximum position, raises ClusterError.

``ClusterActionRequest`` and ``NewLeadershipTermEvent`` carry the log position *after* themselves, computed before
the claim as the publication position plus the aligned frame length, as Aeron's do. A session message is gathered
from its 32-byte session header and the client's payload in one ``offerv``, without joining them first.
"""
from __future__ import annotations

from typing import Any

from aeron._core.codecs import cluster as codecs
from aeron._core.term_appender import CLOSED, MAX_POSITION_EXCEEDED
from aeron.cluster._channels import create_destination_uri
from aeron.common.errors import ClusterError

__all__ = ["LogPublisher", "SESSION_HEADER_LENGTH"]

SEND_ATTEMPTS = 3
_HEADER = codecs.MESSAGE_HEADER_LENGTH
SESSION_HEADER_LENGTH = _HEADER + codecs.SessionMessageHeaderEncoder.BLOCK_LENGTH
DATA_HEADER_LENGTH = 32
FRAME_ALIGNMENT = 32


def _align(value: int, alignment: int) -> int:
    return (value + alignment - 1) & ~(alignment - 1)


def check_result(position: int, publication: Any) -> None:
    """Raise ClusterError for a log publication that is closed or at its maximum position (others are retried)."""
    if position == CLOSED:
        raise ClusterError("log publication is closed")
    if position == MAX_POSITION_EXCEEDED:
        raise ClusterError(f"log publication at max position: term-length={publication.term_buffer_length}")


class LogPublisher:
    """Appends log entries to the leader's log publication."""

    def __init__(self, destination_channel: str) -> None:
        """``destination_channel`` (the log channel) is the template of follower destinations."""
        self.destination_channel = destination_channel
        self._publication: Any = None
        self._session_header = bytearray(SESSION_HEADER_LENGTH)
        self._session_header_encoder = codecs.SessionMessageHeaderEncoder().wrap_and_apply_header(
            self._session_header, 0)
        self._buffer = bytearray(64 * 1024)
        self._session_open = codecs.SessionOpenEventEncoder()
        self._session_close = codecs.SessionCloseEventEncoder()
        self._timer_event = codecs.TimerEventEncoder()
        self._cluster_action = codecs.ClusterActionRequestEncoder()
        self._new_leadership_term_event = codecs.NewLeadershipTermEventEncoder()

    @property
    def session_message_header(self) -> bytes:
        """The 8-byte message header of the SessionMessageHeader entries this publisher appends."""
        return bytes(self._session_header[:codecs.MESSAGE_HEADER_LENGTH])

    @property
    def publication(self) -> Any:
        """The log publication (None between terms)."""
        return self._publication

    @publication.setter
    def publication(self, publication: Any) -> None:
        if self._publication is not None:
            self._publication.close()
        self._publication = publication

    def disconnect(self, error_handler: Any = None) -> None:
        """Close the log publication (errors to ``error_handler``)."""
        publication, self._publication = self._publication, None
        if publication is not None:
            try:
                publication.close()
            except Exception as ex:     # noqa: BLE001 - reported as CloseHelper.close(errorHandler, ...)
                if error_handler is None:
                    raise
                error_handler(ex)

    def position(self) -> int:
        """The publication position (0 without a publication)."""
        return 0 if self._publication is None else int(self._publication.position)

    def session_id(self) -> int:
        """The log publication's session id."""
        return int(self._publication.session_id)

    def add_destination(self, follower_log_endpoint: str) -> None:
        """Add a follower's log endpoint as a destination of the (manual MDC) log publication."""
        if self._publication is not None:
            self._publication.async_add_destination(
                create_destination_uri(self.destination_channel, follower_log_endpoint))

    def _offer(self, length: int) -> int:
        publication = self._publication
        position = 0
        for _ in range(SEND_ATTEMPTS):
            position = publication.offer(self._buffer, 0, length)
            if position > 0:
                return int(position)
            check_result(position, publication)
        return int(position)

    def append_message(self, leadership_term_id: int, cluster_session_id: int, timestamp: int, buffer: Any,
                       offset: int, length: int) -> int:
        """Append a session message (header, then ``buffer[offset:offset+length]``); the new position, or the
        publication's status (<= 0) after three attempts."""
        encoder = self._session_header_encoder
        encoder.leadership_term_id = leadership_term_id
        encoder.cluster_session_id = cluster_session_id
        encoder.timestamp = timestamp
        publication = self._publication
        position = 0
        with memoryview(buffer) as whole:
            payload = whole[offset:offset + length]
            try:
                buffers = (self._session_header, payload)
                for _ in range(SEND_ATTEMPTS):
                    position = publication.offerv(buffers)
                    if position > 0:
                        break
                    check_result(position, publication)
            finally:
                payload.release()
        return int(position)

    def append_session_open(self, session: Any, leadership_term_id: int, timestamp: int) -> int:
        """Append SessionOpenEvent for ``session``; the new position or the publication's status."""
        e = self._session_open.wrap_and_apply_header(self._buffer, 0)
        e.leadership_term_id = leadership_term_id
        e.cluster_session_id = session.id
        e.correlation_id = session.correlation_id
        e.timestamp = timestamp
        e.response_stream_id = session.response_stream_id
        e.put_response_channel(session.response_channel)
        e.put_encoded_principal(bytes(session.encoded_principal))
        return self._offer(_HEADER + e.encoded_length)

    def append_session_close(self, member_id: int, session: Any, leadership_term_id: int, timestamp: int,
                             time_unit: Any = None) -> bool:
        """Append SessionCloseEvent with the session's close reason; whether it was appended."""
        e = self._session_close.wrap_and_apply_header(self._buffer, 0)
        e.leadership_term_id = leadership_term_id
        e.cluster_session_id = session.id
        e.timestamp = timestamp
        e.close_reason = session.close_reason
        return self._offer(_HEADER + e.encoded_length) > 0

    def append_timer(self, correlation_id: int, leadership_term_id: int, timestamp: int) -> int:
        """Append TimerEvent; the new position or the publication's status."""
        e = self._timer_event.wrap_and_apply_header(self._buffer, 0)
        e.leadership_term_id = leadership_term_id
        e.correlation_id = correlation_id
        e.timestamp = timestamp
        return self._offer(_HEADER + e.encoded_length)

    def append_cluster_action(self, leadership_term_id: int, timestamp: int, action: int, flags: int) -> bool:
        """Append ClusterActionRequest carrying the log position after it; whether it was appended."""
        length = _HEADER + codecs.ClusterActionRequestEncoder.BLOCK_LENGTH
        aligned = _align(DATA_HEADER_LENGTH + length, FRAME_ALIGNMENT)
        publication = self._publication
        for _ in range(SEND_ATTEMPTS):
            e = self._cluster_action.wrap_and_apply_header(self._buffer, 0)
            e.leadership_term_id = leadership_term_id
            e.log_position = int(publication.position) + aligned
            e.timestamp = timestamp
            e.action = action
            e.flags = flags
            position = publication.offer(self._buffer, 0, length)
            if position > 0:
                return True
            check_result(position, publication)
        return False

    def append_new_leadership_term_event(self, leadership_term_id: int, timestamp: int, term_base_log_position: int,
                                         leader_member_id: int, log_session_id: int, time_unit: int,
                                         app_version: int) -> bool:
        """Append NewLeadershipTermEvent carrying the log position after it; whether it was appended."""
        length = _HEADER + codecs.NewLeadershipTermEventEncoder.BLOCK_LENGTH
        aligned = _align(DATA_HEADER_LENGTH + length, FRAME_ALIGNMENT)
        publication = self._publication
        for _ in range(SEND_ATTEMPTS):
            e = self._new_leadership_term_event.wrap_and_apply_header(self._buffer, 0)
            e.leadership_term_id = leadership_term_id
            e.log_position = int(publication.position) + aligned
            e.timestamp = timestamp
            e.term_base_log_position = term_base_log_position
            e.leader_member_id = leader_member_id
            e.log_session_id = log_session_id
            e.time_unit = int(time_unit)
            e.app_version = app_version
            position = publication.offer(self._buffer, 0, length)
            if position > 0:
                return True
            check_result(position, publication)
        return False

    def __repr__(self) -> str:
        """Aeron's ``toString``."""
        return f"LogPublisher{{destinationChannel='{self.destination_channel}'}}"
