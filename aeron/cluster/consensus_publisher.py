# SPDX-License-Identifier: Apache-2.0
"""Member-to-member consensus messages (Aeron's ``ConsensusPublisher``), offered on the exclusive publication to
each peer's consensus endpoint (stream 108).

Each send is up to three offers; back pressure gives up (the caller retries on its next cycle, as Aeron's does) and
a missing publication (a peer not yet reachable) sends nothing. A closed publication, or one at its maximum
position, raises ClusterError. The encoders and their buffer are made once and reused.
"""
from __future__ import annotations

from typing import Any

from aeron._core.codecs import cluster as codecs
from aeron._core.term_appender import CLOSED, MAX_POSITION_EXCEEDED
from aeron.common.errors import ClusterError

__all__ = ["ConsensusPublisher", "PROTOCOL_SEMANTIC_VERSION"]

SEND_ATTEMPTS = 3
NULL_SESSION_ID = -1
PROTOCOL_SEMANTIC_VERSION = (1 << 16) | (0 << 8) | 0   # ConsensusModule.Configuration's 1.0.0
_HEADER = codecs.MESSAGE_HEADER_LENGTH


def _check_result(position: int, publication: Any) -> None:
    if position == CLOSED:
        raise ClusterError("publication is closed")
    if position == MAX_POSITION_EXCEEDED:
        raise ClusterError(f"publication at max position: term-length={publication.term_buffer_length}")


class ConsensusPublisher:
    """Encodes and offers the consensus protocol's messages."""

    def __init__(self) -> None:
        """Encoders over one reusable buffer."""
        self._buffer = bytearray(64 * 1024)
        self._canvass_position = codecs.CanvassPositionEncoder()
        self._request_vote = codecs.RequestVoteEncoder()
        self._vote = codecs.VoteEncoder()
        self._new_leadership_term = codecs.NewLeadershipTermEncoder()
        self._append_position = codecs.AppendPositionEncoder()
        self._commit_position = codecs.CommitPositionEncoder()
        self._catchup_position = codecs.CatchupPositionEncoder()
        self._stop_catchup = codecs.StopCatchupEncoder()
        self._termination_position = codecs.TerminationPositionEncoder()
        self._termination_ack = codecs.TerminationAckEncoder()
        self._backup_query = codecs.BackupQueryEncoder()
        self._backup_response = codecs.BackupResponseEncoder()
        self._heartbeat_request = codecs.HeartbeatRequestEncoder()
        self._heartbeat_response = codecs.HeartbeatResponseEncoder()
        self._challenge_response = codecs.ChallengeResponseEncoder()
        self._standby_snapshot = codecs.StandbySnapshotEncoder()

    def _send(self, publication: Any, encoder: Any) -> bool:
        length = _HEADER + encoder.encoded_length
        buffer = self._buffer
        for _ in range(SEND_ATTEMPTS):
            position = publication.offer(buffer, 0, length)
            if position > 0:
                return True
            _check_result(position, publication)
        return False

    def canvass_position(self, publication: Any, log_leadership_term_id: int, log_position: int,
                         leadership_term_id: int, follower_member_id: int) -> None:
        """CanvassPosition: this member's log and term, to a peer (election canvass)."""
        if publication is None:
            return
        e = self._canvass_position.wrap_and_apply_header(self._buffer, 0)
        e.log_leadership_term_id = log_leadership_term_id
        e.log_position = log_position
        e.leadership_term_id = leadership_term_id
        e.follower_member_id = follower_member_id
        e.protocol_version = PROTOCOL_SEMANTIC_VERSION
        self._send(publication, e)

    def request_vote(self, publication: Any, log_leadership_term_id: int, log_position: int, candidate_term_id: int,
                     candidate_member_id: int) -> bool:
        """RequestVote from a candidate; whether it was sent."""
        if publication is None:
            return False
        e = self._request_vote.wrap_and_apply_header(self._buffer, 0)
        e.log_leadership_term_id = log_leadership_term_id
        e.log_position = log_position
        e.candidate_term_id = candidate_term_id
        e.candidate_member_id = candidate_member_id
        e.protocol_version = PROTOCOL_SEMANTIC_VERSION
        return self._send(publication, e)

    def place_vote(self, publication: Any, candidate_term_id: int, log_leadership_term_id: int, log_position: int,
                   candidate_member_id: int, follower_member_id: int, vote: bool) -> None:
        """Vote for (or against) a candidate."""
        if publication is None:
            return
        e = self._vote.wrap_and_apply_header(self._buffer, 0)
        e.candidate_term_id = candidate_term_id
        e.log_leadership_term_id = log_leadership_term_id
        e.log_position = log_position
        e.candidate_member_id = candidate_member_id
        e.follower_member_id = follower_member_id
        e.vote = codecs.BooleanType.TRUE if vote else codecs.BooleanType.FALSE
        self._send(publication, e)

    def new_leadership_term(self, publication: Any, log_leadership_term_id: int, next_leadership_term_id: int,
                            next_term_base_log_position: int, next_log_position: int, leadership_term_id: int,
                            term_base_log_position: int, log_position: int, commit_position: int,
                            leader_recording_id: int, timestamp: int, leader_member_id: int, log_session_id: int,
                            app_version: int, is_startup: bool) -> None:
        """NewLeadershipTerm from a leader (ClusterError without a log session id)."""
        if publication is None:
            return
        if log_session_id == NULL_SESSION_ID:
            raise ClusterError("logSessionId was null, should always have a value")
        e = self._new_leadership_term.wrap_and_apply_header(self._buffer, 0)
        e.log_leadership_term_id = log_leadership_term_id
        e.next_leadership_term_id = next_leadership_term_id
        e.next_term_base_log_position = next_term_base_log_position
        e.next_log_position = next_log_position
        e.leadership_term_id = leadership_term_id
        e.term_base_log_position = term_base_log_position
        e.log_position = log_position
        e.leader_recording_id = leader_recording_id
        e.timestamp = timestamp
        e.leader_member_id = leader_member_id
        e.log_session_id = log_session_id
        e.app_version = app_version
        e.is_startup = codecs.BooleanType.TRUE if is_startup else codecs.BooleanType.FALSE
        e.commit_position = commit_position
        self._send(publication, e)

    def append_position(self, publication: Any, leadership_term_id: int, log_position: int, follower_member_id: int,
                        flags: int) -> bool:
        """AppendPosition from a follower; whether it was sent."""
        if publication is None:
            return False
        e = self._append_position.wrap_and_apply_header(self._buffer, 0)
        e.leadership_term_id = leadership_term_id
        e.log_position = log_position
        e.follower_member_id = follower_member_id
        e.flags = flags
        return self._send(publication, e)

    def commit_position(self, publication: Any, leadership_term_id: int, log_position: int,
                        leader_member_id: int) -> None:
        """CommitPosition from the leader (its heartbeat)."""
        if publication is None:
            return
        e = self._commit_position.wrap_and_apply_header(self._buffer, 0)
        e.leadership_term_id = leadership_term_id
        e.log_position = log_position
        e.leader_member_id = leader_member_id
        self._send(publication, e)

    def catchup_position(self, publication: Any, leadership_term_id: int, log_position: int, follower_member_id: int,
                         catchup_endpoint: str) -> bool:
        """CatchupPosition from a follower behind the leader; whether it was sent."""
        if publication is None:
            return False
        e = self._catchup_position.wrap_and_apply_header(self._buffer, 0)
        e.leadership_term_id = leadership_term_id
        e.log_position = log_position
        e.follower_member_id = follower_member_id
        e.put_catchup_endpoint(catchup_endpoint)
        return self._send(publication, e)

    def stop_catchup(self, publication: Any, leadership_term_id: int, follower_member_id: int) -> bool:
        """StopCatchup to a follower whose catch-up replay is done; whether it was sent."""
        if publication is None:
            return False
        e = self._stop_catchup.wrap_and_apply_header(self._buffer, 0)
        e.leadership_term_id = leadership_term_id
        e.follower_member_id = follower_member_id
        return self._send(publication, e)

    def termination_position(self, publication: Any, leadership_term_id: int, log_position: int) -> bool:
        """TerminationPosition to a follower; whether it was sent."""
        if publication is None:
            return False
        e = self._termination_position.wrap_and_apply_header(self._buffer, 0)
        e.leadership_term_id = leadership_term_id
        e.log_position = log_position
        return self._send(publication, e)

    def termination_ack(self, publication: Any, leadership_term_id: int, log_position: int, member_id: int) -> bool:
        """TerminationAck to the leader; whether it was sent."""
        if publication is None:
            return False
        e = self._termination_ack.wrap_and_apply_header(self._buffer, 0)
        e.leadership_term_id = leadership_term_id
        e.log_position = log_position
        e.member_id = member_id
        return self._send(publication, e)

    def backup_query(self, publication: Any, correlation_id: int, response_stream_id: int, version: int,
                     log_position: int, response_channel: str, encoded_credentials: bytes) -> bool:
        """BackupQuery (a ClusterBackup's request); whether it was sent."""
        if publication is None:
            return False
        e = self._backup_query.wrap_and_apply_header(self._buffer, 0)
        e.correlation_id = correlation_id
        e.response_stream_id = response_stream_id
        e.version = version
        e.log_position = log_position if log_position != -1 else codecs.BackupQueryEncoder.LOG_POSITION_NULL_VALUE
        e.put_response_channel(response_channel)
        e.put_encoded_credentials(bytes(encoded_credentials))
        return self._send(publication, e)

    def backup_response(self, session: Any, commit_position_counter_id: int, leader_member_id: int, member_id: int,
                        last_entry: Any, cluster_members: str, snapshots: list[Any] | None) -> bool:
        """BackupResponse to a backup's session: the last term of the recording log, the snapshot set and the
        members."""
        e = self._backup_response.wrap_and_apply_header(self._buffer, 0)
        e.correlation_id = session.correlation_id
        e.log_recording_id = last_entry.recording_id
        e.log_leadership_term_id = last_entry.leadership_term_id
        e.log_term_base_log_position = last_entry.term_base_log_position
        e.last_leadership_term_id = last_entry.leadership_term_id
        e.last_term_base_log_position = last_entry.term_base_log_position
        e.commit_position_counter_id = commit_position_counter_id
        e.leader_member_id = leader_member_id
        e.member_id = member_id
        snapshot_list = snapshots or []
        group = e.snapshots_count(len(snapshot_list))
        for snapshot in snapshot_list:
            group.next()
            group.recording_id = snapshot.recording_id
            group.leadership_term_id = snapshot.leadership_term_id
            group.term_base_log_position = snapshot.term_base_log_position
            group.log_position = snapshot.log_position
            group.timestamp = snapshot.timestamp
            group.service_id = snapshot.service_id
        e.put_cluster_members(cluster_members)
        return self._send_session(session, e)

    def heartbeat_request(self, publication: Any, correlation_id: int, response_stream_id: int,
                          response_channel: str, encoded_credentials: bytes) -> bool:
        """HeartbeatRequest; whether it was sent."""
        if publication is None:
            return False
        e = self._heartbeat_request.wrap_and_apply_header(self._buffer, 0)
        e.correlation_id = correlation_id
        e.response_stream_id = response_stream_id
        e.put_response_channel(response_channel)
        e.put_encoded_credentials(bytes(encoded_credentials))
        return self._send(publication, e)

    def heartbeat_response(self, session: Any) -> bool:
        """HeartbeatResponse to the requester's session."""
        e = self._heartbeat_response.wrap_and_apply_header(self._buffer, 0)
        e.correlation_id = session.correlation_id
        return self._send_session(session, e)

    def challenge_response(self, publication: Any, next_correlation_id: int, cluster_session_id: int,
                           encoded_challenge_response: bytes) -> bool:
        """ChallengeResponse forwarded by a follower to the leader; whether it was sent."""
        if publication is None:
            return False
        e = self._challenge_response.wrap_and_apply_header(self._buffer, 0)
        e.correlation_id = next_correlation_id
        e.cluster_session_id = cluster_session_id
        e.put_encoded_credentials(bytes(encoded_challenge_response))
        return self._send(publication, e)

    def _send_session(self, session: Any, encoder: Any) -> bool:
        publication = session.response_publication
        if publication is None:
            return False
        return self._send(publication, encoder)
