# SPDX-License-Identifier: Apache-2.0
"""Cluster members (Aeron's ``ClusterMember``): their endpoints, the state an election keeps about each, and the
quorum arithmetic of the consensus module.

The members string (``aeron.cluster.members``) is ``<id>,<ingress>,<consensus>,<log>,<catchup>,<archive>
[,<archiveResponse>[,<egressResponse>]]`` per member, members separated by ``|``; a member's own endpoints
(``aeron.cluster.member.endpoints``) are the five ``ingress,consensus,log,catchup,archive``; the ingress
endpoints string given to clients is ``<id>=<ingress endpoint>,...``.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from aeron.archive.configuration import NULL_POSITION
from aeron.common.channel_uri import ChannelUri
from aeron.common.constants import NULL_VALUE
from aeron.common.errors import ClusterError, RegistrationError

__all__ = ["ClusterMember"]

_INT = re.compile(r"[+-]?[0-9]+")               # what Java's Integer.parseInt accepts


def _split(text: str, separator: str) -> list[str]:
    # Java's String.split: trailing empty strings dropped ("0,a,...|" is one member)
    parts = text.split(separator)
    while parts and not parts[-1]:
        parts.pop()
    return parts


def _java(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class ClusterMember:
    """One member of the cluster: its endpoints and what the consensus module and the election know of it."""

    __slots__ = ("id", "ingress_endpoint", "consensus_endpoint", "log_endpoint", "catchup_endpoint",
                 "archive_endpoint", "archive_response_endpoint", "egress_response_endpoint", "endpoints",
                 "is_ballot_sent", "is_leader", "has_terminated", "leadership_term_id", "candidate_term_id",
                 "catchup_replay_session_id", "catchup_replay_correlation_id", "correlation_id", "log_position",
                 "time_of_last_append_position_ns", "publication", "consensus_channel", "vote")

    def __init__(self, member_id: int, ingress_endpoint: str, consensus_endpoint: str, log_endpoint: str,
                 catchup_endpoint: str, archive_endpoint: str, endpoints: str,
                 archive_response_endpoint: str | None = None, egress_response_endpoint: str | None = None) -> None:
        """A member with its endpoints; ``endpoints`` is the comma-joined list :meth:`encode_as_string` writes."""
        self.id = member_id
        self.ingress_endpoint = ingress_endpoint
        self.consensus_endpoint = consensus_endpoint
        self.log_endpoint = log_endpoint
        self.catchup_endpoint = catchup_endpoint
        self.archive_endpoint = archive_endpoint
        self.archive_response_endpoint = archive_response_endpoint
        self.egress_response_endpoint = egress_response_endpoint
        self.endpoints = endpoints
        self.is_ballot_sent = False
        self.is_leader = False
        self.has_terminated = False
        self.leadership_term_id = NULL_VALUE
        self.candidate_term_id = NULL_VALUE
        self.catchup_replay_session_id = NULL_VALUE
        self.catchup_replay_correlation_id = NULL_VALUE
        self.correlation_id = NULL_VALUE
        self.log_position = NULL_POSITION
        self.time_of_last_append_position_ns = NULL_VALUE
        self.publication: Any = None
        self.consensus_channel: str | None = None
        self.vote: bool | None = None

    def reset(self) -> None:
        """Forget the election state (ballot, leadership, vote, terms, log position)."""
        self.is_ballot_sent = False
        self.is_leader = False
        self.has_terminated = False
        self.vote = None
        self.candidate_term_id = NULL_VALUE
        self.leadership_term_id = NULL_VALUE
        self.log_position = NULL_POSITION

    def close_publication(self, error_handler: Callable[[BaseException], None] | None = None) -> None:
        """Close the consensus publication to this member, if any (errors go to ``error_handler``)."""
        publication, self.publication = self.publication, None
        if publication is not None:
            try:
                publication.close()
            except Exception as ex:     # noqa: BLE001 - reported, as CloseHelper.close(errorHandler, ...)
                if error_handler is None:
                    raise
                error_handler(ex)

    # -- per member ---------------------------------------------------------------------------------------------

    def is_active(self, now_ns: int, timeout_ns: int) -> bool:
        """An AppendPosition arrived within ``timeout_ns``."""
        return self.time_of_last_append_position_ns + timeout_ns > now_ns

    def will_vote_for(self, candidate: ClusterMember) -> bool:
        """This member's known log is not ahead of the candidate's. Liveness is not asked: a crashed or cut-off
        member must not stop the others from nominating themselves."""
        return self.log_position != NULL_POSITION and ClusterMember.compare_log(self, candidate) <= 0

    def has_reached_position(self, leadership_term_id: int, position: int, now_ns: int, timeout_ns: int) -> bool:
        """Active, in ``leadership_term_id``, and at or past ``position``."""
        return self.is_active(now_ns, timeout_ns) and leadership_term_id == self.leadership_term_id and \
            self.log_position >= position

    def __repr__(self) -> str:
        """Aeron's ``toString`` (what ``ClusterTool list-members`` prints for each member)."""
        return (f"ClusterMember{{id={self.id}, isBallotSent={_java(self.is_ballot_sent)}, "
                f"isLeader={_java(self.is_leader)}, leadershipTermId={self.leadership_term_id}, "
                f"logPosition={self.log_position}, candidateTermId={self.candidate_term_id}, "
                f"catchupReplaySessionId={self.catchup_replay_session_id}, correlationId={self.correlation_id}, "
                f"timeOfLastAppendPositionNs={self.time_of_last_append_position_ns}, "
                f"ingressEndpoint='{self.ingress_endpoint}', consensusEndpoint='{self.consensus_endpoint}', "
                f"logEndpoint='{self.log_endpoint}', catchupEndpoint='{self.catchup_endpoint}', "
                f"archiveEndpoint='{self.archive_endpoint}', endpoints='{self.endpoints}', "
                f"publication={_java(self.publication)}, vote={_java(self.vote)}}}")

    __str__ = __repr__

    # -- parsing and encoding -----------------------------------------------------------------------------------

    @staticmethod
    def parse(value: str | None) -> list[ClusterMember]:
        """The members of a members string (none for an empty one); ClusterError names a bad member."""
        if not value:
            return []
        members = []
        for id_and_endpoints in _split(value, "|"):
            attributes = _split(id_and_endpoints, ",")
            if not 6 <= len(attributes) <= 8:
                raise ClusterError(f"invalid member value: {id_and_endpoints} within: {value}")
            if not _INT.fullmatch(attributes[0]) or not -(2 ** 31) <= int(attributes[0]) < 2 ** 31:
                raise ClusterError("invalid cluster member id, must be an integer value")
            member_id = int(attributes[0])
            archive_response = attributes[6] if len(attributes) > 6 else None
            egress_response = attributes[7] if len(attributes) > 7 else None
            ingress, consensus, log, catchup, archive = attributes[1:6]
            members.append(ClusterMember(member_id, ingress, consensus, log, catchup, archive,
                                         ",".join(attributes[1:]), archive_response, egress_response))
        return members

    @staticmethod
    def parse_endpoints(member_id: int, endpoints: str) -> ClusterMember:
        """A member from its five endpoints ``ingress,consensus,log,catchup,archive``."""
        attributes = _split(endpoints, ",")
        if len(attributes) != 5:
            raise ClusterError(f"invalid member value: {endpoints}")
        ingress, consensus, log, catchup, archive = attributes
        return ClusterMember(member_id, ingress, consensus, log, catchup, archive, endpoints)

    @staticmethod
    def encode_as_string(members: Sequence[ClusterMember]) -> str:
        """The members string of ``members``: ``<id>,<endpoints>`` joined by ``|``."""
        return "|".join(f"{m.id},{m.endpoints}" for m in members)

    @staticmethod
    def ingress_endpoints(members: Sequence[ClusterMember]) -> str:
        """``<id>=<ingress endpoint>,...``, for clients (REDIRECT details, NewLeaderEvent)."""
        return ",".join(f"{m.id}={m.ingress_endpoint}" for m in members)

    # -- consensus publications ---------------------------------------------------------------------------------

    @staticmethod
    def add_consensus_publications(members: Sequence[ClusterMember], this_member: ClusterMember,
                                   channel_template: str, stream_id: int, bind_consensus_control: bool, aeron: Any,
                                   error_handler: Callable[[BaseException], None]) -> None:
        """An exclusive publication to every other member's consensus endpoint, with ``control=<own consensus
        host>:0`` when ``bind_consensus_control``."""
        uri = ChannelUri.parse(channel_template)
        for member in members:
            if member.id != this_member.id:
                uri.put("endpoint", member.consensus_endpoint)
                ClusterMember.set_control_endpoint(uri, bind_consensus_control, this_member.consensus_endpoint)
                member.consensus_channel = str(uri)
                ClusterMember.try_add_publication(member, stream_id, aeron, error_handler)

    @staticmethod
    def add_consensus_publication(this_member: ClusterMember, other_member: ClusterMember, channel_template: str,
                                  stream_id: int, bind_consensus_control: bool, aeron: Any,
                                  error_handler: Callable[[BaseException], None]) -> None:
        """The consensus publication to one member (its channel made once)."""
        if other_member.consensus_channel is None:
            uri = ChannelUri.parse(channel_template)
            uri.put("endpoint", other_member.consensus_endpoint)
            ClusterMember.set_control_endpoint(uri, bind_consensus_control, this_member.consensus_endpoint)
            other_member.consensus_channel = str(uri)
        ClusterMember.try_add_publication(other_member, stream_id, aeron, error_handler)

    @staticmethod
    def try_add_publication(member: ClusterMember, stream_id: int, aeron: Any,
                            error_handler: Callable[[BaseException], None]) -> None:
        """Add the member's exclusive consensus publication; a refusal is reported, not raised."""
        try:
            member.publication = aeron.add_exclusive_publication(member.consensus_channel, stream_id)
        except RegistrationError as ex:
            error_handler(ClusterError(f"failed to add consensus publication for member: {member.id} - {ex}"))

    @staticmethod
    def close_consensus_publications(error_handler: Callable[[BaseException], None] | None,
                                     members: Iterable[ClusterMember]) -> None:
        """Close every member's consensus publication."""
        for member in members:
            member.close_publication(error_handler)

    @staticmethod
    def set_control_endpoint(uri: ChannelUri, should_bind: bool, endpoint: str | None) -> None:
        """``control=<host>:0`` from ``endpoint`` (Aeron's ``replacePortWithWildcard``) when ``should_bind``."""
        if not should_bind or endpoint is None or ":" not in endpoint:
            return
        uri.put("control", endpoint[:endpoint.rindex(":") + 1] + "0")

    # -- quorum arithmetic --------------------------------------------------------------------------------------

    @staticmethod
    def quorum_threshold(member_count: int) -> int:
        """Members needed for a quorum: a majority, ``member_count // 2 + 1``."""
        return (member_count >> 1) + 1

    @staticmethod
    def has_active_quorum(members: Sequence[ClusterMember], now_ns: int, timeout_ns: int) -> bool:
        """A quorum of members sent an AppendPosition within ``timeout_ns``."""
        threshold = ClusterMember.quorum_threshold(len(members))
        for member in members:
            if member.is_active(now_ns, timeout_ns):
                threshold -= 1
                if threshold <= 0:
                    return True
        return False

    @staticmethod
    def quorum_position(members: Sequence[ClusterMember], ranked_positions: list[int], now_ns: int,
                        timeout_ns: int) -> int:
        """The highest log position a quorum of active members has reached: the lowest of the
        ``len(ranked_positions)`` (the quorum threshold) highest positions, inactive members counting 0."""
        length = len(ranked_positions)
        for i in range(length):
            ranked_positions[i] = 0
        for member in members:
            if member.is_active(now_ns, timeout_ns):
                position = member.log_position
                for i in range(length):
                    if position > ranked_positions[i]:
                        ranked_positions[i], position = position, ranked_positions[i]
        return ranked_positions[length - 1]

    @staticmethod
    def has_quorum_at_position(members: Sequence[ClusterMember], leadership_term_id: int, position: int,
                               now_ns: int, timeout_ns: int) -> bool:
        """A quorum of active members reached ``position`` in ``leadership_term_id``."""
        votes = sum(1 for m in members if m.has_reached_position(leadership_term_id, position, now_ns, timeout_ns))
        return votes >= ClusterMember.quorum_threshold(len(members))

    @staticmethod
    def reset_members(members: Iterable[ClusterMember]) -> None:
        """:meth:`reset` every member (Aeron's static ``reset``)."""
        for member in members:
            member.reset()

    @staticmethod
    def become_candidate(members: Iterable[ClusterMember], candidate_term_id: int, candidate_member_id: int) -> None:
        """The candidate votes for itself with its ballot sent; the others' votes are unknown."""
        for member in members:
            if member.id == candidate_member_id:
                member.vote, member.candidate_term_id, member.is_ballot_sent = True, candidate_term_id, True
            else:
                member.vote, member.candidate_term_id, member.is_ballot_sent = None, NULL_VALUE, False

    @staticmethod
    def is_unanimous_leader(members: Sequence[ClusterMember], candidate_term_id: int,
                            graceful_closed_leader_id: int) -> bool:
        """Every member but a gracefully closed leader voted yes in ``candidate_term_id``, and they are a quorum."""
        votes = 0
        for member in members:
            if member.id == graceful_closed_leader_id:
                continue
            if member.candidate_term_id != candidate_term_id or member.vote is not True:
                return False
            votes += 1
        return votes >= ClusterMember.quorum_threshold(len(members))

    @staticmethod
    def is_quorum_leader(members: Sequence[ClusterMember], candidate_term_id: int) -> bool:
        """A quorum voted yes in ``candidate_term_id`` and nobody of that term voted no."""
        votes = 0
        for member in members:
            if member.candidate_term_id == candidate_term_id:
                if member.vote is False:
                    return False
                if member.vote is True:
                    votes += 1
        return votes >= ClusterMember.quorum_threshold(len(members))

    @staticmethod
    def is_unanimous_candidate(members: Sequence[ClusterMember], candidate: ClusterMember,
                               graceful_closed_leader_id: int) -> bool:
        """Every member but a gracefully closed leader would vote for ``candidate``, and they are a quorum."""
        possible = 0
        for member in members:
            if member.id == graceful_closed_leader_id:
                continue
            if not member.will_vote_for(candidate):
                return False
            possible += 1
        return possible >= ClusterMember.quorum_threshold(len(members))

    @staticmethod
    def is_quorum_candidate(members: Sequence[ClusterMember], candidate: ClusterMember) -> bool:
        """A quorum would vote for ``candidate``."""
        possible = sum(1 for m in members if m.will_vote_for(candidate))
        return possible >= ClusterMember.quorum_threshold(len(members))

    @staticmethod
    def compare_log(*logs: ClusterMember | int) -> int:
        """Order two logs by leadership term, then position: -1, 0 or 1. Either two members
        (``compare_log(lhs, rhs)``, their leadership term and log position) or four numbers
        (``compare_log(lhs_log_leadership_term_id, lhs_log_position, rhs_log_leadership_term_id,
        rhs_log_position)``)."""
        if len(logs) == 2 and all(isinstance(m, ClusterMember) for m in logs):
            lhs, rhs = logs
            a = (lhs.leadership_term_id, lhs.log_position)           # type: ignore[union-attr]
            b = (rhs.leadership_term_id, rhs.log_position)           # type: ignore[union-attr]
        elif len(logs) == 4 and all(isinstance(v, int) for v in logs):
            a, b = (logs[0], logs[1]), (logs[2], logs[3])
        else:
            raise TypeError("compare_log takes two ClusterMembers or four ints")
        return (a > b) - (a < b)

    @staticmethod
    def find_member(members: Iterable[ClusterMember], member_id: int) -> ClusterMember | None:
        """The member with ``member_id``, or None."""
        for member in members:
            if member.id == member_id:
                return member
        return None

    @staticmethod
    def determine_member(members: Sequence[ClusterMember], member_id: int, member_endpoints: str) -> ClusterMember:
        """This node's member: ``member_id`` among ``members`` (its endpoints checked against ``member_endpoints``
        when given), or, without members, one made from ``member_endpoints``."""
        member = ClusterMember.find_member(members, member_id) if member_id != NULL_VALUE else None
        if not members and member is None:
            return ClusterMember.parse_endpoints(NULL_VALUE, member_endpoints)
        if member is None:
            raise ClusterError(f"memberId={member_id} not found in clusterMembers")
        if member_endpoints:
            ClusterMember.validate_member_endpoints(member, member_endpoints)
        return member

    @staticmethod
    def validate_member_endpoints(member: ClusterMember, member_endpoints: str) -> None:
        """ClusterError when ``member_endpoints`` differ from the member's."""
        if not ClusterMember.are_same_endpoints(member, ClusterMember.parse_endpoints(NULL_VALUE, member_endpoints)):
            raise ClusterError(f"clusterMembers and endpoints differ: {member.endpoints} != {member_endpoints}")

    @staticmethod
    def are_same_endpoints(lhs: ClusterMember, rhs: ClusterMember) -> bool:
        """The five endpoints are the same."""
        return (lhs.ingress_endpoint, lhs.consensus_endpoint, lhs.log_endpoint, lhs.catchup_endpoint,
                lhs.archive_endpoint) == (rhs.ingress_endpoint, rhs.consensus_endpoint, rhs.log_endpoint,
                                          rhs.catchup_endpoint, rhs.archive_endpoint)

    @staticmethod
    def set_is_leader(members: Iterable[ClusterMember], leader_member_id: int) -> None:
        """Mark the leader among ``members``."""
        for member in members:
            member.is_leader = member.id == leader_member_id
