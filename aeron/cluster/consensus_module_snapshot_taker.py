# SPDX-License-Identifier: Apache-2.0
"""Writes the consensus module's snapshot (Aeron's ``ConsensusModuleSnapshotTaker`` and the service package's
``SnapshotTaker`` it extends) to an exclusive publication that the local archive records.

In order: SnapshotMarker BEGIN (typeId 1), ConsensusModule (next committed session id, and service 0's tracker
state, a legacy duplicate), a ClusterSession per open or closing session, a Timer per scheduled timer, per service
a PendingMessageTracker followed by its queued messages as whole SessionMessageHeader messages, then
SnapshotMarker END. Back pressure is waited out with the idle strategy (running the client conductor); a closed,
unconnected or full publication is a ClusterError.
"""
from __future__ import annotations

from typing import Any

from aeron._core.codecs import cluster as codecs
from aeron._core.term_appender import CLOSED, MAX_POSITION_EXCEEDED, NOT_CONNECTED
from aeron.common.constants import NULL_VALUE
from aeron.common.errors import Category, ClusterError

__all__ = ["ConsensusModuleSnapshotTaker", "SnapshotTaker"]

_HEADER = codecs.MESSAGE_HEADER_LENGTH


class SnapshotTaker:
    """Offers snapshot entries, waiting out back pressure (Aeron's ``SnapshotTaker``)."""

    def __init__(self, publication: Any, idle_strategy: Any, aeron_client_invoker: Any = None) -> None:
        """``aeron_client_invoker`` (the client conductor's invoker, or None) runs while waiting."""
        self.publication = publication
        self.idle_strategy = idle_strategy
        self._invoker = aeron_client_invoker
        self._buffer = bytearray(64 * 1024)
        self._marker = codecs.SnapshotMarkerEncoder()

    def mark_begin(self, snapshot_type_id: int, log_position: int, leadership_term_id: int, snapshot_index: int,
                   time_unit: int, app_version: int) -> None:
        """SnapshotMarker BEGIN."""
        self.mark_snapshot(snapshot_type_id, log_position, leadership_term_id, snapshot_index,
                           codecs.SnapshotMark.BEGIN, time_unit, app_version)

    def mark_end(self, snapshot_type_id: int, log_position: int, leadership_term_id: int, snapshot_index: int,
                 time_unit: int, app_version: int) -> None:
        """SnapshotMarker END."""
        self.mark_snapshot(snapshot_type_id, log_position, leadership_term_id, snapshot_index,
                           codecs.SnapshotMark.END, time_unit, app_version)

    def mark_snapshot(self, snapshot_type_id: int, log_position: int, leadership_term_id: int, snapshot_index: int,
                      mark: int, time_unit: int, app_version: int) -> None:
        """A SnapshotMarker."""
        e = self._marker.wrap_and_apply_header(self._buffer, 0)
        e.type_id = snapshot_type_id
        e.log_position = log_position
        e.leadership_term_id = leadership_term_id
        e.index = snapshot_index
        e.mark = mark
        e.time_unit = int(time_unit)
        e.app_version = app_version
        self.offer(self._buffer, 0, _HEADER + e.encoded_length)

    def offer(self, buffer: Any, offset: int, length: int) -> None:
        """Offer ``buffer[offset:offset+length]``, idling until it goes."""
        self.idle_strategy.reset()
        while True:
            result = self.publication.offer(buffer, offset, length)
            if result > 0:
                return
            self.check_result_and_idle(result)

    def check_result_and_idle(self, result: int) -> None:
        """ClusterError for a closed, unconnected or full publication; otherwise run the client and idle."""
        if result == NOT_CONNECTED:
            raise ClusterError("publication is not connected")
        if result == CLOSED:
            raise ClusterError("publication is closed")
        if result == MAX_POSITION_EXCEEDED:
            raise ClusterError(f"publication at max position: term-length={self.publication.term_buffer_length}")
        if self._invoker is not None:
            self._invoker.invoke()
        self.idle_strategy.idle()


class ConsensusModuleSnapshotTaker(SnapshotTaker):
    """The consensus module's entries."""

    def __init__(self, publication: Any, idle_strategy: Any, aeron_client_invoker: Any = None) -> None:
        """Write to ``publication``."""
        super().__init__(publication, idle_strategy, aeron_client_invoker)
        self._consensus_module = codecs.ConsensusModuleEncoder()
        self._cluster_session = codecs.ClusterSessionEncoder()
        self._timer = codecs.TimerEncoder()
        self._tracker = codecs.PendingMessageTrackerEncoder()

    def snapshot_consensus_module_state(self, next_session_id: int, next_service_session_id: int,
                                        log_service_session_id: int, pending_message_capacity: int) -> None:
        """The ConsensusModule entry."""
        e = self._consensus_module.wrap_and_apply_header(self._buffer, 0)
        e.next_session_id = next_session_id
        e.next_service_session_id = next_service_session_id
        e.log_service_session_id = log_service_session_id
        e.pending_message_capacity = pending_message_capacity
        self.offer(self._buffer, 0, _HEADER + e.encoded_length)

    def snapshot_session(self, session: Any) -> None:
        """A ClusterSession entry (its time of last activity is not kept)."""
        e = self._cluster_session.wrap_and_apply_header(self._buffer, 0)
        e.cluster_session_id = session.id
        e.correlation_id = session.correlation_id
        e.opened_log_position = session.opened_log_position
        e.time_of_last_activity = NULL_VALUE
        e.close_reason = session.close_reason
        e.response_stream_id = session.response_stream_id
        e.put_response_channel(session.response_channel)
        self.offer(self._buffer, 0, _HEADER + e.encoded_length)

    def snapshot_timer(self, correlation_id: int, deadline: int) -> None:
        """A Timer entry (the timer service's snapshot callback)."""
        e = self._timer.wrap_and_apply_header(self._buffer, 0)
        e.correlation_id = correlation_id
        e.deadline = deadline
        self.offer(self._buffer, 0, _HEADER + e.encoded_length)

    __call__ = snapshot_timer

    def snapshot_tracker(self, tracker: Any, error_handler: Any) -> None:
        """A PendingMessageTracker entry and the tracker's queued messages. A follower whose queue is empty but
        whose next id is behind the log missed service messages (a service that offers differently on different
        members): reported, and the id corrected."""
        next_service_session_id = _correct_next_service_session_id(tracker, error_handler)
        e = self._tracker.wrap_and_apply_header(self._buffer, 0)
        e.next_service_session_id = next_service_session_id
        e.log_service_session_id = tracker.log_service_session_id
        e.pending_message_capacity = tracker.size()
        e.service_id = tracker.service_id
        self.offer(self._buffer, 0, _HEADER + e.encoded_length)
        tracker.for_each_message(self._on_message)

    def _on_message(self, buffer: Any, offset: int, length: int, head_offset: int) -> bool:
        self.offer(buffer, offset, length)
        return True


def _correct_next_service_session_id(tracker: Any, error_handler: Any) -> int:
    next_service_session_id = tracker.log_service_session_id + 1 if tracker.pending_messages.is_empty() \
        else tracker.next_service_session_id
    missed = next_service_session_id - tracker.next_service_session_id
    if missed > 0:
        error_handler(ClusterError(
            f"Follower has missed {missed} service message(s).  Please check service (id={tracker.service_id}) "
            f"determinism around the use of Cluster::offer", category=Category.ERROR))
    return int(next_service_session_id)
