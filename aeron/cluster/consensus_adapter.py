# SPDX-License-Identifier: Apache-2.0
"""Reads the consensus stream (Aeron's ``ConsensusAdapter``): the messages other members, backups and standbys
send to this member's consensus endpoint, each handed to the consensus module agent.

Another schema on this stream is a ClusterError, as in Aeron. A message of our schema that does not decode (a
truncated frame, a hostile length) goes to the error handler and is dropped. Decoders are reused, and released
after each message so that no view of the subscription's log outlives the handler. The two messages that come with
the log's every move, AppendPosition and CommitPosition, are read in compiled code
(aeron._core.cluster_consensus.ConsensusPositionDispatcher); the rest come to :meth:`ConsensusAdapter.on_fragment`.
"""
from __future__ import annotations

from typing import Any

from aeron._core.cluster_consensus import ConsensusPositionDispatcher
from aeron._core.codecs import cluster as codecs
from aeron._core.fragment_assembler import FragmentAssembler
from aeron.cluster._image_poll import ImagePoller
from aeron.common.constants import NULL_VALUE
from aeron.common.errors import ClusterError, MalformedMessageError

__all__ = ["ConsensusAdapter", "FRAGMENT_LIMIT", "StandbySnapshotEntry"]

FRAGMENT_LIMIT = 10
_HEADER = codecs.MESSAGE_HEADER_LENGTH


class StandbySnapshotEntry:
    """One snapshot a standby announced (Aeron's ``StandbySnapshotEntry``)."""

    __slots__ = ("recording_id", "leadership_term_id", "term_base_log_position", "log_position", "timestamp",
                 "service_id", "archive_endpoint")

    def __init__(self, recording_id: int, leadership_term_id: int, term_base_log_position: int, log_position: int,
                 timestamp: int, service_id: int, archive_endpoint: str) -> None:
        """The entry's fields."""
        self.recording_id = recording_id
        self.leadership_term_id = leadership_term_id
        self.term_base_log_position = term_base_log_position
        self.log_position = log_position
        self.timestamp = timestamp
        self.service_id = service_id
        self.archive_endpoint = archive_endpoint


class ConsensusAdapter:
    """Polls the consensus subscription and dispatches to the agent's ``on_*`` methods."""

    def __init__(self, subscription: Any, consensus_module_agent: Any, error_handler: Any = None) -> None:
        """``error_handler(exception)`` hears of malformed messages (dropped); None raises them."""
        self.subscription = subscription
        self._agent = consensus_module_agent
        self._error_handler = error_handler
        self._assembler = FragmentAssembler(ConsensusPositionDispatcher(consensus_module_agent, self.on_fragment))
        self._image_poller = ImagePoller()
        self._header = codecs.MessageHeaderDecoder()
        self._decoders: dict[int, Any] = {
            cls.TEMPLATE_ID: cls() for cls in (
                codecs.CanvassPositionDecoder, codecs.RequestVoteDecoder, codecs.VoteDecoder,
                codecs.NewLeadershipTermDecoder, codecs.AppendPositionDecoder, codecs.CommitPositionDecoder,
                codecs.CatchupPositionDecoder, codecs.StopCatchupDecoder, codecs.TerminationPositionDecoder,
                codecs.TerminationAckDecoder, codecs.BackupQueryDecoder, codecs.ChallengeResponseDecoder,
                codecs.HeartbeatRequestDecoder, codecs.StandbySnapshotDecoder)}

    def close(self) -> None:
        """Close the subscription."""
        self.subscription.close()

    def poll(self, limit: int = FRAGMENT_LIMIT) -> int:
        """Poll up to ``limit`` fragments; returns how many. Each image is polled on its own, so that the requests
        of a cluster backup or a standby are answered with the image they came by (``Header.context()``)."""
        return self._image_poller.poll(self.subscription, self._assembler, limit, False)

    def on_fragment(self, buffer: Any, offset: int, length: int, header: Any) -> None:
        """Decode one message and call the agent."""
        h = self._header.wrap(buffer, offset)
        try:
            schema_id, template_id, block_length, version = h.schema_id, h.template_id, h.block_length, h.version
        finally:
            h.release()
        if schema_id != codecs.SCHEMA_ID:
            raise ClusterError(f"expected schemaId={codecs.SCHEMA_ID}, actual={schema_id}")
        decoder = self._decoders.get(template_id)
        if decoder is None:
            return
        try:
            decoder.wrap(buffer, offset + _HEADER, block_length, version, offset + length)
        except MalformedMessageError as ex:
            self._malformed(ex, template_id)
            return
        try:
            self._dispatch(template_id, decoder, self._image_poller.image)
        finally:
            decoder.release()

    def _malformed(self, ex: MalformedMessageError, template_id: int) -> None:
        error = MalformedMessageError(f"malformed consensus message templateId={template_id}: {ex}")
        if self._error_handler is None:
            raise error from ex
        self._error_handler(error)

    def _dispatch(self, template_id: int, d: Any, image: Any) -> None:
        agent = self._agent
        if template_id == codecs.CanvassPositionDecoder.TEMPLATE_ID:
            agent.on_canvass_position(d.log_leadership_term_id, d.log_position, d.leadership_term_id,
                                      d.follower_member_id, d.protocol_version)
        elif template_id == codecs.RequestVoteDecoder.TEMPLATE_ID:
            agent.on_request_vote(d.log_leadership_term_id, d.log_position, d.candidate_term_id,
                                  d.candidate_member_id, d.protocol_version)
        elif template_id == codecs.VoteDecoder.TEMPLATE_ID:
            agent.on_vote(d.candidate_term_id, d.log_leadership_term_id, d.log_position, d.candidate_member_id,
                          d.follower_member_id, d.vote == codecs.BooleanType.TRUE)
        elif template_id == codecs.NewLeadershipTermDecoder.TEMPLATE_ID:
            agent.on_new_leadership_term(
                d.log_leadership_term_id, d.next_leadership_term_id, d.next_term_base_log_position,
                d.next_log_position, d.leadership_term_id, d.term_base_log_position, d.log_position,
                d.commit_position, d.leader_recording_id, d.timestamp, d.leader_member_id, d.log_session_id,
                d.app_version, d.is_startup == codecs.BooleanType.TRUE)
        elif template_id == codecs.AppendPositionDecoder.TEMPLATE_ID:
            agent.on_append_position(d.leadership_term_id, d.log_position, d.follower_member_id, d.flags)
        elif template_id == codecs.CommitPositionDecoder.TEMPLATE_ID:
            agent.on_commit_position(d.leadership_term_id, d.log_position, d.leader_member_id)
        elif template_id == codecs.CatchupPositionDecoder.TEMPLATE_ID:
            agent.on_catchup_position(d.leadership_term_id, d.log_position, d.follower_member_id,
                                      d.catchup_endpoint)
        elif template_id == codecs.StopCatchupDecoder.TEMPLATE_ID:
            agent.on_stop_catchup(d.leadership_term_id, d.follower_member_id)
        elif template_id == codecs.TerminationPositionDecoder.TEMPLATE_ID:
            agent.on_termination_position(d.leadership_term_id, d.log_position)
        elif template_id == codecs.TerminationAckDecoder.TEMPLATE_ID:
            agent.on_termination_ack(d.leadership_term_id, d.log_position, d.member_id)
        elif template_id == codecs.BackupQueryDecoder.TEMPLATE_ID:
            log_position = d.log_position
            if log_position == codecs.BackupQueryDecoder.LOG_POSITION_NULL_VALUE:
                log_position = NULL_VALUE
            agent.on_backup_query(d.correlation_id, d.response_stream_id, d.version, log_position,
                                  d.response_channel, d.encoded_credentials, image)
        elif template_id == codecs.ChallengeResponseDecoder.TEMPLATE_ID:
            agent.on_consensus_challenge_response(d.correlation_id, d.cluster_session_id, d.encoded_credentials)
        elif template_id == codecs.HeartbeatRequestDecoder.TEMPLATE_ID:
            agent.on_heartbeat_request(d.correlation_id, d.response_stream_id, d.response_channel,
                                       d.encoded_credentials, image)
        elif template_id == codecs.StandbySnapshotDecoder.TEMPLATE_ID:
            entries = [StandbySnapshotEntry(s.recording_id, s.leadership_term_id, s.term_base_log_position,
                                            s.log_position, s.timestamp, s.service_id, s.archive_endpoint)
                       for s in d.snapshots]
            agent.on_standby_snapshot(d.correlation_id, d.version, entries, d.response_stream_id,
                                      d.response_channel, d.encoded_credentials, image)
