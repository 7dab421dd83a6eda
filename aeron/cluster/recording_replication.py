# SPDX-License-Identifier: Apache-2.0
"""Replicating the leader's log recording into this member's archive during an election (Aeron's
``RecordingReplication``).

The local archive is asked to replicate the leader's recording (through the leader's archive control endpoint)
into this member's log recording, up to a stop position. Progress is followed through the replicated recording's
position counter, found when the archive signals EXTEND; the recording signals SYNC, REPLICATE_END and STOP mark
the end. No progress for the progress timeout is a ClusterError (a warning below the stop position), after which
the replication is stopped.
"""
from __future__ import annotations

from typing import Any

from aeron._core.codecs.archive import RecordingSignal
from aeron.archive.configuration import NULL_POSITION
from aeron.archive.status.recording_pos import RecordingPos
from aeron.common.constants import NULL_VALUE
from aeron.common.errors import Category, ClusterError

__all__ = ["RecordingReplication"]

NULL_COUNTER_ID = -1


class RecordingReplication:
    """One replication of a recording into the local archive, stepped by ``poll`` and fed recording signals."""

    def __init__(self, archive: Any, src_recording_id: int, src_archive_channel: str, src_control_stream_id: int,
                 replication_params: Any, progress_check_timeout_ns: int, progress_check_interval_ns: int,
                 now_ns: int) -> None:
        """Ask ``archive`` (the local AeronArchive) to replicate ``src_recording_id`` with ``replication_params``
        (an ``aeron.archive.client.ReplicationParams``: destination recording, stop position, channels)."""
        self.archive = archive
        self.stop_position = replication_params.stop_position
        self.progress_check_timeout_ns = progress_check_timeout_ns
        self.progress_check_interval_ns = progress_check_interval_ns
        self.progress_deadline_ns = now_ns + progress_check_timeout_ns
        self.progress_check_deadline_ns = now_ns + progress_check_interval_ns
        self.src_archive_channel = src_archive_channel
        self.recording_position_counter_id = NULL_COUNTER_ID
        self.recording_id = NULL_VALUE
        self.position = NULL_POSITION
        self.last_recording_signal: Any = RecordingSignal.NULL_VAL
        self.has_replication_ended = False
        self.has_synced = False
        self.has_stopped = False
        self.replication_id = archive.replicate(src_recording_id, replication_params.dst_recording_id,
                                                src_control_stream_id, src_archive_channel, params=replication_params)

    def poll(self, now_ns: int) -> int:
        """Check progress; ClusterError (and the replication stopped) when none came within the timeout."""
        work = 0
        if self.has_replication_ended:
            return work
        try:
            if now_ns >= self.progress_check_deadline_ns:
                self.progress_check_deadline_ns = now_ns + self.progress_check_interval_ns
                if self._poll_dst_recording_position():
                    self.progress_deadline_ns = now_ns + self.progress_check_timeout_ns
                work += 1
            if now_ns >= self.progress_deadline_ns:
                if self.stop_position == NULL_POSITION or self.position < self.stop_position:
                    raise ClusterError("log replication has not progressed", category=Category.WARN)
                raise ClusterError("log replication failed to stop")
            return work
        except ClusterError as ex:
            try:
                self.close()
            except ClusterError as ex1:
                ex.__context__ = ex1
            raise

    def close(self) -> None:
        """Stop the replication if it has not ended (ClusterError, a warning, when the archive refuses)."""
        if not self.has_replication_ended:
            self.has_replication_ended = True
            try:
                self.archive.try_stop_replication(self.replication_id)
            except Exception as ex:         # noqa: BLE001 - Aeron wraps any failure to stop
                raise ClusterError(f"failed to stop log replication: {ex}", category=Category.WARN) from ex

    def on_signal(self, correlation_id: int, recording_id: int, position: int, signal: Any) -> None:
        """A recording signal of the local archive; those of this replication move it on."""
        if correlation_id != self.replication_id:
            return
        if signal == RecordingSignal.EXTEND:
            counters = self.archive.context.aeron.counters_reader
            self.recording_position_counter_id = RecordingPos.find_counter_id_by_recording(counters, recording_id,
                                                                              self.archive.archive_id)
        elif signal == RecordingSignal.SYNC:
            self.has_synced = True
        elif signal == RecordingSignal.REPLICATE_END:
            self.has_replication_ended = True
        elif signal == RecordingSignal.STOP:
            if position != NULL_POSITION:
                self.position = position
            self.has_stopped = True
        elif signal == RecordingSignal.DELETE:
            raise ClusterError(f"recording was deleted during replication: {self}")
        self.last_recording_signal = signal
        if recording_id != NULL_VALUE:
            self.recording_id = recording_id
        if position != NULL_POSITION:
            self.position = position

    def _poll_dst_recording_position(self) -> bool:
        if self.recording_position_counter_id != NULL_COUNTER_ID:
            counters = self.archive.context.aeron.counters_reader
            recording_position = counters.get_counter_value(self.recording_position_counter_id)
            if RecordingPos.is_active(counters, self.recording_position_counter_id, self.recording_id) and \
                    recording_position > self.position:
                self.position = recording_position
                return True
        return False

    def __repr__(self) -> str:
        """Aeron's ``toString``."""
        return (f"RecordingReplication{{replicationId={self.replication_id}, stopPosition={self.stop_position}, "
                f"recordingPositionCounterId={self.recording_position_counter_id}, recordingId={self.recording_id}, "
                f"position={self.position}, lastRecordingSignal={self.last_recording_signal!r}, "
                f"hasReplicationEnded={self.has_replication_ended}, hasSynced={self.has_synced}, "
                f"hasStopped={self.has_stopped}}}")
