# SPDX-License-Identifier: Apache-2.0
"""Reads a consensus module snapshot from its replay image (Aeron's ``ConsensusModuleSnapshotAdapter``) into a
listener: the consensus module agent on recovery, or a printer for ClusterTool.

Entries may come in any order between BEGIN and END; legacy ClusterMembers entries and SECTION markers are
skipped. A marker of another snapshot type, an END without BEGIN, a second BEGIN or another schema is a
ClusterError. Reading stops at END.
"""
from __future__ import annotations

from typing import Any, Protocol

from aeron._core.codecs import cluster as codecs
from aeron._core.fragment_assembler import ImageControlledFragmentAssembler
from aeron._core.term_reader import BREAK, CONTINUE
from aeron.cluster.service.cluster_clock import ClusterClock
from aeron.common.errors import ClusterError

__all__ = ["ConsensusModuleSnapshotAdapter", "ConsensusModuleSnapshotListener", "FRAGMENT_LIMIT"]

FRAGMENT_LIMIT = 10
SNAPSHOT_TYPE_ID = 1
_HEADER = codecs.MESSAGE_HEADER_LENGTH


class ConsensusModuleSnapshotListener(Protocol):
    """What a snapshot is loaded into (Aeron's ``ConsensusModuleSnapshotListener``)."""

    def on_load_begin_snapshot(self, app_version: int, time_unit: Any, buffer: Any, offset: int,
                               length: int) -> None:
        """The BEGIN marker, with the snapshot's application version and cluster time unit."""

    def on_load_consensus_module_state(self, next_session_id: int, next_service_session_id: int,
                                       log_service_session_id: int, pending_message_capacity: int, buffer: Any,
                                       offset: int, length: int) -> None:
        """The ConsensusModule entry."""

    def on_load_pending_message(self, cluster_session_id: int, buffer: Any, offset: int, length: int) -> None:
        """A queued service message (the whole message at ``buffer[offset:offset+length]``)."""

    def on_load_cluster_session(self, cluster_session_id: int, correlation_id: int, opened_log_position: int,
                                time_of_last_activity: int, close_reason: int, response_stream_id: int,
                                response_channel: str, buffer: Any, offset: int, length: int) -> None:
        """A ClusterSession entry."""

    def on_load_timer(self, correlation_id: int, deadline: int, buffer: Any, offset: int, length: int) -> None:
        """A Timer entry."""

    def on_load_pending_message_tracker(self, next_service_session_id: int, log_service_session_id: int,
                                        pending_message_capacity: int, service_id: int, buffer: Any, offset: int,
                                        length: int) -> None:
        """A PendingMessageTracker entry."""

    def on_load_end_snapshot(self, buffer: Any, offset: int, length: int) -> None:
        """The END marker."""


class ConsensusModuleSnapshotAdapter:
    """Polls a snapshot image into a :class:`ConsensusModuleSnapshotListener`."""

    def __init__(self, image: Any, listener: Any) -> None:
        """Read ``image`` (the snapshot's replay) into ``listener``."""
        self.image = image
        self.listener = listener
        self.in_snapshot = False
        self.is_done = False
        self._assembler = ImageControlledFragmentAssembler(self.on_fragment)

    def poll(self) -> int:
        """Poll up to 10 fragments; returns how many."""
        return int(self.image.controlled_poll(self._assembler, FRAGMENT_LIMIT))

    def on_fragment(self, buffer: Any, offset: int, length: int, header: Any) -> int:
        """Decode one entry and call the listener."""
        h = codecs.MessageHeaderDecoder().wrap(buffer, offset)
        schema_id, template_id, block_length, version = h.schema_id, h.template_id, h.block_length, h.version
        h.release()
        if schema_id != codecs.SCHEMA_ID:
            raise ClusterError(f"expected schemaId={codecs.SCHEMA_ID}, actual={schema_id}")
        listener = self.listener
        body, end = offset + _HEADER, offset + length
        if template_id == codecs.SessionMessageHeaderDecoder.TEMPLATE_ID:
            message = codecs.SessionMessageHeaderDecoder().wrap(buffer, body, block_length, version, end)
            cluster_session_id = message.cluster_session_id
            message.release()
            listener.on_load_pending_message(cluster_session_id, buffer, offset, length)
        elif template_id == codecs.SnapshotMarkerDecoder.TEMPLATE_ID:
            marker = codecs.SnapshotMarkerDecoder().wrap(buffer, body, block_length, version, end)
            type_id, mark, time_unit, app_version = marker.type_id, marker.mark, marker.time_unit, marker.app_version
            marker.release()
            if type_id != SNAPSHOT_TYPE_ID:
                raise ClusterError(f"unexpected snapshot type: {type_id}")
            if mark == codecs.SnapshotMark.BEGIN:
                if self.in_snapshot:
                    raise ClusterError("already in snapshot")
                self.in_snapshot = True
                listener.on_load_begin_snapshot(app_version, ClusterClock.map(time_unit), buffer, offset, length)
                return CONTINUE
            if mark == codecs.SnapshotMark.END:
                if not self.in_snapshot:
                    raise ClusterError("missing begin snapshot")
                listener.on_load_end_snapshot(buffer, offset, length)
                self.is_done = True
                return BREAK
        elif template_id == codecs.ClusterSessionDecoder.TEMPLATE_ID:
            session = codecs.ClusterSessionDecoder().wrap(buffer, body, block_length, version, end)
            fields = (session.cluster_session_id, session.correlation_id, session.opened_log_position,
                      session.time_of_last_activity, session.close_reason, session.response_stream_id,
                      session.response_channel)
            session.release()
            listener.on_load_cluster_session(*fields, buffer, offset, length)
        elif template_id == codecs.TimerDecoder.TEMPLATE_ID:
            timer = codecs.TimerDecoder().wrap(buffer, body, block_length, version, end)
            correlation_id, deadline = timer.correlation_id, timer.deadline
            timer.release()
            listener.on_load_timer(correlation_id, deadline, buffer, offset, length)
        elif template_id == codecs.ConsensusModuleDecoder.TEMPLATE_ID:
            state = codecs.ConsensusModuleDecoder().wrap(buffer, body, block_length, version, end)
            fields2 = (state.next_session_id, state.next_service_session_id, state.log_service_session_id,
                       state.pending_message_capacity)
            state.release()
            listener.on_load_consensus_module_state(*fields2, buffer, offset, length)
        elif template_id == codecs.PendingMessageTrackerDecoder.TEMPLATE_ID:
            tracker = codecs.PendingMessageTrackerDecoder().wrap(buffer, body, block_length, version, end)
            fields3 = (tracker.next_service_session_id, tracker.log_service_session_id,
                       tracker.pending_message_capacity, tracker.service_id)
            tracker.release()
            listener.on_load_pending_message_tracker(*fields3, buffer, offset, length)
        return CONTINUE
