# SPDX-License-Identifier: Apache-2.0
"""Leader election (Aeron's ``Election``), a state machine stepped by the consensus module's duty cycle.

A member canvasses the others with its log (term and append position); one whose log is at least as far along as
a quorum's (all of them, before the canvass deadline) nominates itself after a random delay of up to half the
election timeout, persists its candidate term in node-state.dat and asks for votes. A member votes yes for a
candidate of a higher candidate term whose log is not behind its own, persisting that term first, so it never
votes twice in a term across restarts. A candidate with a unanimous, or at the election timeout a quorum of, yes
votes becomes leader of that term: it opens the new log publication and tells the others with NewLeadershipTerm.

The new leader replays its own uncommitted log to its services, starts recording the new term, and closes the
election once a quorum has reported the new term's start position, by appending NewLeadershipTermEvent. A follower
first gets its log to the start of the new term: by replicating the leader's log from the leader's archive when it
lacks a previous term's end, by replaying what it has and the leader committed, and by catching up from the
leader's archive (a replay merged into the live log) when it is behind; then it joins the live log.

A follower's log that runs past the new term's base position has entries the cluster never committed: it is
truncated to that position and the election restarts. Any error returns the election to INIT at the commit
position; timeouts on the follower's steps are warnings that do the same.

Time comes in as ``now_ns`` (cluster time in nanoseconds) and the nomination delay from ``ctx.random``, so tests can
drive every transition without sleeping.
"""
from __future__ import annotations

from typing import Any

from aeron._core.codecs.cluster import ClusterTimeUnit
from aeron.archive.configuration import NULL_POSITION
from aeron.cluster._channels import create_destination_uri, parse_channel
from aeron.cluster.cluster_clocks import convert, to_nanos
from aeron.cluster.cluster_event import ClusterEvent, ElectionTimeoutError
from aeron.cluster.cluster_member import ClusterMember
from aeron.cluster.consensus_module import State
from aeron.cluster.election_state import ElectionState
from aeron.cluster.service.cluster import Role
from aeron.common import event_log
from aeron.common.constants import NULL_VALUE
from aeron.common.errors import Category, ClusterError

__all__ = ["Election", "ElectionState"]

NULL_SESSION_ID = -1
APPEND_POSITION_FLAG_NONE = 0
_DAY_NS = 86_400_000_000_000
_ERRORED = -1                       # ChannelEndpointStatus.ERRORED


class Election:
    """One election of a consensus module; ``do_work(now_ns)`` steps it until its state is CLOSED."""

    def __init__(self, is_node_startup: bool, graceful_closed_leader_id: int, leadership_term_id: int,
                 term_base_log_position: int, log_position: int, append_position: int, cluster_members: list[Any],
                 cluster_member_by_id: dict[int, Any], this_member: Any, consensus_publisher: Any, ctx: Any,
                 consensus_module_agent: Any) -> None:
        """Start in INIT with the log as the consensus module knows it: the term of its last entry, that term's
        base, the commit (``log_position``) and append positions."""
        if this_member is None:
            raise ClusterError("thisMember must be given")
        self.is_node_startup = is_node_startup
        self.is_extended_canvass = is_node_startup
        self.graceful_closed_leader_id = graceful_closed_leader_id
        self.log_position = log_position
        self.append_position = append_position
        self.log_leadership_term_id = leadership_term_id
        self.initial_log_leadership_term_id = leadership_term_id
        self.initial_term_base_log_position = term_base_log_position
        self.leadership_term_id = leadership_term_id
        self.candidate_term_id = leadership_term_id
        self.cluster_members = cluster_members
        self.cluster_member_by_id = cluster_member_by_id
        self.this_member = this_member
        self.consensus_publisher = consensus_publisher
        self.ctx = ctx
        self.consensus_module_agent = consensus_module_agent
        now_ns = ctx.cluster_clock.time_nanos()
        self.initial_time_of_last_update_ns = now_ns - _DAY_NS
        self.time_of_last_update_ns = self.initial_time_of_last_update_ns
        self.time_of_last_commit_position_update_ns = self.initial_time_of_last_update_ns
        self.time_of_last_state_change_ns = 0
        self.nomination_deadline_ns = 0
        self.notified_commit_position = 0
        self.catchup_join_position = NULL_POSITION
        self.replication_leadership_term_id = NULL_VALUE
        self.replication_stop_position = NULL_POSITION
        self.replication_deadline_ns = 0
        self.replication_term_base_log_position = NULL_VALUE
        self.leader_recording_id = NULL_VALUE
        self.last_published_commit_position = 0
        self.last_published_append_position = 0
        self.log_session_id = NULL_SESSION_ID
        self.is_first_init = True
        self.is_leader_startup = False
        self.leader_member: Any = None
        self.state = ElectionState.INIT
        self.log_subscription: Any = None
        self.log_replay: Any = None
        self.log_replication: Any = None
        ctx.election_state_counter.set_ordered(ElectionState.INIT)
        ctx.election_counter.increment_ordered()

    def leader(self) -> Any:
        """The leader this election found (None until it found one)."""
        return self.leader_member

    def this_member_id(self) -> int:
        """This member's id."""
        return int(self.this_member.id)

    # -- stepping -------------------------------------------------------------------------------------------

    def do_work(self, now_ns: int) -> int:
        """One step of the current state; returns the work done."""
        handler = self._STEPS.get(self.state)
        return 0 if handler is None else int(handler(self, now_ns))

    def handle_error(self, now_ns: int, ex: BaseException) -> None:
        """An error while the election ran: report it and start again from INIT at the commit position."""
        self.ctx.counted_error_handler(ex)
        self.log_position = self.ctx.commit_position_counter.get()
        self._state(ElectionState.INIT, now_ns, str(ex))

    # -- messages -------------------------------------------------------------------------------------------

    def on_recording_signal(self, correlation_id: int, recording_id: int, position: int, signal: Any) -> None:
        """A recording signal of the local archive, for the log replication."""
        if self.state is ElectionState.INIT:
            return
        if self.log_replication is not None:
            self.log_replication.on_signal(correlation_id, recording_id, position, signal)
            self.consensus_module_agent.set_log_recording_id(self.log_replication.recording_id)

    def on_canvass_position(self, log_leadership_term_id: int, log_position: int, leadership_term_id: int,
                            follower_member_id: int, protocol_version: int) -> None:
        """A member's log, canvassed; a leader answers a member in an older term with NewLeadershipTerm."""
        if self.state is ElectionState.INIT:
            return
        if follower_member_id == self.graceful_closed_leader_id:
            self.graceful_closed_leader_id = NULL_VALUE
        follower = self.cluster_member_by_id.get(follower_member_id)
        if follower is None or self.this_member.id == follower_member_id:
            return
        agent = self.consensus_module_agent
        agent.update_member_log_position(follower, log_leadership_term_id, log_position)
        if log_leadership_term_id < self.leadership_term_id:
            if agent.role is Role.LEADER:
                now_ns = self._now_ns()
                self._publish_new_leadership_term_to(
                    follower, log_leadership_term_id,
                    agent.quorum_position_bounded_by_leader_log(self.append_position, now_ns),
                    self._nanos_to_timestamp(now_ns))
        elif log_leadership_term_id > self.leadership_term_id:
            if self.state in (ElectionState.LEADER_LOG_REPLICATION, ElectionState.LEADER_READY):
                raise ClusterEvent("potential new election in progress")

    def on_request_vote(self, log_leadership_term_id: int, log_position: int, candidate_term_id: int,
                        candidate_id: int, protocol_version: int) -> None:
        """A candidate asks for this member's vote."""
        if self.state is ElectionState.INIT or candidate_id == self.this_member.id:
            return
        ctx = self.ctx
        if candidate_term_id <= self.candidate_term_id:
            self._place_vote(candidate_term_id, candidate_id, False)
        elif ClusterMember.compare_log(self.log_leadership_term_id, self.append_position, log_leadership_term_id,
                                       log_position) > 0:
            self.candidate_term_id = ctx.node_state_file.propose_max_candidate_term_id(
                candidate_term_id, log_position, ctx.epoch_clock())
            self._place_vote(candidate_term_id, candidate_id, False)
            candidate = self.cluster_member_by_id.get(candidate_id)
            agent = self.consensus_module_agent
            if candidate is not None and agent.role is Role.LEADER:
                now_ns = self._now_ns()
                self._publish_new_leadership_term_to(
                    candidate, log_leadership_term_id,
                    agent.quorum_position_bounded_by_leader_log(self.append_position, now_ns),
                    self._nanos_to_timestamp(now_ns))
        elif self.state in (ElectionState.CANVASS, ElectionState.NOMINATE, ElectionState.CANDIDATE_BALLOT,
                            ElectionState.FOLLOWER_BALLOT):
            now_ns = self._now_ns()
            self.candidate_term_id = ctx.node_state_file.propose_max_candidate_term_id(
                candidate_term_id, log_position, now_ns // 1_000_000)
            self._place_vote(candidate_term_id, candidate_id, True)
            self._state(ElectionState.FOLLOWER_BALLOT, now_ns, "")

    def on_vote(self, candidate_term_id: int, log_leadership_term_id: int, log_position: int, candidate_id: int,
                voter_id: int, vote: bool) -> None:
        """A vote for this candidate, counted in CANDIDATE_BALLOT for its current candidate term."""
        if self.state is ElectionState.INIT:
            return
        if (self.state is ElectionState.CANDIDATE_BALLOT and candidate_term_id == self.candidate_term_id
                and candidate_id == self.this_member.id):
            follower = self.cluster_member_by_id.get(voter_id)
            if follower is not None:
                follower.candidate_term_id = candidate_term_id
                follower.vote = bool(vote)
                self.consensus_module_agent.update_member_log_position(follower, log_leadership_term_id,
                                                                       log_position)

    def on_new_leadership_term(self, log_leadership_term_id: int, next_leadership_term_id: int,
                               next_term_base_log_position: int, next_log_position: int, leadership_term_id: int,
                               term_base_log_position: int, log_position: int, commit_position: int,
                               leader_recording_id: int, timestamp: int, leader_member_id: int, log_session_id: int,
                               is_startup: bool) -> None:
        """A leader announces its term; a member canvassing, or balloting in that term, follows it."""
        state = self.state
        if state is ElectionState.INIT:
            return
        leader = self.cluster_member_by_id.get(leader_member_id)
        if leader is None or (leader_member_id == self.this_member.id
                              and leadership_term_id == self.leadership_term_id):
            return
        if leader_member_id == self.graceful_closed_leader_id:
            self.graceful_closed_leader_id = NULL_VALUE
        if ((state in (ElectionState.FOLLOWER_BALLOT, ElectionState.CANDIDATE_BALLOT)
                and leadership_term_id == self.candidate_term_id) or state is ElectionState.CANVASS):
            if log_leadership_term_id == self.log_leadership_term_id:
                if next_term_base_log_position != NULL_POSITION and next_term_base_log_position < self.append_position:
                    self.on_truncate_log_entry(
                        self.this_member.id, state, log_leadership_term_id, self.leadership_term_id,
                        self.candidate_term_id, self.ctx.commit_position_counter.get(), self.log_position,
                        self.append_position, self.append_position, next_term_base_log_position)
                self.leader_member = leader
                self.is_leader_startup = is_startup
                self.leadership_term_id = leadership_term_id
                self.candidate_term_id = max(leadership_term_id, self.candidate_term_id)
                self.log_session_id = log_session_id
                self.leader_recording_id = leader_recording_id
                self.catchup_join_position = log_position if self.append_position < log_position else NULL_POSITION
                self.notified_commit_position = max(self.notified_commit_position, commit_position)
                if self.append_position < term_base_log_position:
                    if next_leadership_term_id != NULL_VALUE:
                        if self.append_position < next_term_base_log_position:
                            self.replication_leadership_term_id = log_leadership_term_id
                            self.replication_stop_position = next_term_base_log_position
                            # an open, uncommitted term: its base is already in the recording log
                            self.replication_term_base_log_position = NULL_VALUE
                            self._state(ElectionState.FOLLOWER_LOG_REPLICATION, self._now_ns(), "")
                        elif self.append_position == next_term_base_log_position:
                            if next_log_position != NULL_POSITION:
                                self.replication_leadership_term_id = next_leadership_term_id
                                self.replication_stop_position = next_log_position
                                self.replication_term_base_log_position = next_term_base_log_position
                                self._state(ElectionState.FOLLOWER_LOG_REPLICATION, self._now_ns(), "")
                    else:
                        raise ClusterError(
                            f"invalid newLeadershipTerm - this.appendPosition={self.append_position} < "
                            f"termBaseLogPosition={term_base_log_position} and nextLeadershipTermId="
                            f"{next_leadership_term_id}, logLeadershipTermId={log_leadership_term_id}, "
                            f"nextTermBaseLogPosition={next_term_base_log_position}, nextLogPosition="
                            f"{next_log_position}, leadershipTermId={leadership_term_id}, termBaseLogPosition="
                            f"{term_base_log_position}, logPosition={log_position}, commitPosition={commit_position}, "
                            f"leaderRecordingId={leader_recording_id}, leaderMemberId={leader_member_id}, "
                            f"logSessionId={log_session_id}, isStartup={str(is_startup).lower()}")
                else:
                    self._state(ElectionState.FOLLOWER_REPLAY, self._now_ns(), "")
            else:
                self._state(ElectionState.CANVASS, self._now_ns(), "")
        if (self.state is ElectionState.FOLLOWER_LOG_REPLICATION
                and log_leadership_term_id == self.log_leadership_term_id
                and self.leader_member is not None and self.leader_member.id == leader_member_id):
            self.replication_deadline_ns = self._now_ns() + self.ctx.leader_heartbeat_timeout_ns

    def on_append_position(self, leadership_term_id: int, log_position: int, follower_member_id: int,
                           flags: int) -> None:
        """A follower's append position."""
        if self.state is ElectionState.INIT:
            return
        if leadership_term_id <= self.leadership_term_id:
            follower = self.cluster_member_by_id.get(follower_member_id)
            if follower is not None:
                agent = self.consensus_module_agent
                agent.update_member_log_position(follower, leadership_term_id, log_position)
                agent.track_catchup_completion(follower, leadership_term_id, flags)

    def on_commit_position(self, leadership_term_id: int, log_position: int, leader_member_id: int) -> None:
        """The leader's commit position. The term is not compared: leaders of older releases sent another term
        in CommitPosition than in NewLeadershipTerm."""
        state = self.state
        if state is ElectionState.INIT:
            return
        if self.leader_member is not None and self.leader_member.id == leader_member_id:
            self.notified_commit_position = max(self.notified_commit_position, log_position)
            if state is ElectionState.FOLLOWER_LOG_REPLICATION:
                self.replication_deadline_ns = self._now_ns() + self.ctx.leader_heartbeat_timeout_ns
        elif leadership_term_id > self.leadership_term_id and state is ElectionState.LEADER_READY:
            raise ClusterEvent(
                f"new leader detected due to commit position -  memberId={self.this_member_id()} "
                f"this.leadershipTermId={self.leadership_term_id} this.leaderMemberId="
                f"{self.leader_member.id if self.leader_member is not None else NULL_VALUE} "
                f"this.logPosition={self.log_position} newLeadershipTermId={leadership_term_id} "
                f"newLeaderMemberId={leader_member_id} newCommitPosition={log_position})")

    def on_replay_new_leadership_term_event(self, leadership_term_id: int, log_position: int, timestamp: int,
                                            term_base_log_position: int) -> None:
        """A NewLeadershipTermEvent met while replaying or catching up: record that term."""
        if self.state is ElectionState.INIT:
            return
        if self.state in (ElectionState.FOLLOWER_CATCHUP, ElectionState.FOLLOWER_REPLAY):
            now_ns = to_nanos(self.ctx.cluster_clock.time_unit(), timestamp)
            self._ensure_recording_log_coherent(leadership_term_id, term_base_log_position, NULL_VALUE, now_ns)
            self.log_position = log_position
            self.log_leadership_term_id = leadership_term_id

    def on_truncate_log_entry(self, member_id: int, state: ElectionState, log_leadership_term_id: int,
                              leadership_term_id: int, candidate_term_id: int, commit_position: int,
                              log_position: int, append_position: int, old_position: int, new_position: int) -> None:
        """Truncate this member's log to ``new_position`` (entries the cluster never committed) and restart the
        election (raises ClusterEvent)."""
        self.consensus_module_agent.truncate_log_entry(log_leadership_term_id, new_position)
        self.append_position = new_position
        raise ClusterEvent(
            f"Truncating Cluster Log - memberId={member_id} state={state.name} "
            f"this.logLeadershipTermId={log_leadership_term_id} this.leadershipTermId={leadership_term_id} "
            f"this.candidateTermId={candidate_term_id} this.commitPosition={commit_position} "
            f"this.logPosition={log_position} this.appendPosition={append_position} oldPosition={old_position} "
            f"newPosition={new_position}")

    # -- states ---------------------------------------------------------------------------------------------

    def _init(self, now_ns: int) -> int:
        if self.is_first_init:
            self.is_first_init = False
            if not self.is_node_startup:
                self._prepare_for_new_leadership(now_ns)
        else:
            self._stop_log_replication()
            self._stop_catchup()
            self._prepare_for_new_leadership(now_ns)
            self.log_session_id = NULL_SESSION_ID
            self._stop_replay()
            if self.log_subscription is not None:
                registration_id = self.log_subscription.registration_id
                self.log_subscription.close()
                self.consensus_module_agent.await_local_sockets_closed(registration_id)
                self.log_subscription = None
        ctx = self.ctx
        self.notified_commit_position = 0
        self.candidate_term_id = max(ctx.node_state_file.candidate_term_id(), self.leadership_term_id)
        if len(self.cluster_members) == 1 and self.this_member.id == self.cluster_members[0].id:
            # a cluster of one: nominate itself and win the ballot at once
            self.candidate_term_id += 1
            ctx.node_state_file.update_candidate_term_id(self.candidate_term_id, self.log_position,
                                                         ctx.epoch_clock())
            self.leader_member = self.this_member
            self.leadership_term_id = self.candidate_term_id
            self._state(ElectionState.LEADER_LOG_REPLICATION, now_ns, "single-node cluster leader")
        else:
            self._state(ElectionState.CANVASS, now_ns, "")
        return 1

    def _canvass(self, now_ns: int) -> int:
        work = 0
        ctx = self.ctx
        if self.is_extended_canvass:
            deadline_ns = self.time_of_last_state_change_ns + ctx.startup_canvass_timeout_ns
        else:
            deadline_ns = self.consensus_module_agent.time_of_last_leader_update_ns + ctx.leader_heartbeat_timeout_ns
        if self._has_update_interval_expired(now_ns, ctx.election_status_interval_ns):
            self.time_of_last_update_ns = now_ns
            self._publish_canvass_position()
            work += 1
        if ctx.appointed_leader_id != NULL_VALUE and ctx.appointed_leader_id != self.this_member.id:
            return work
        if (ClusterMember.is_unanimous_candidate(self.cluster_members, self.this_member, self.graceful_closed_leader_id)
                or (now_ns >= deadline_ns
                    and ClusterMember.is_quorum_candidate(self.cluster_members, self.this_member))):
            delay_ns = int(ctx.random.random() * (ctx.election_timeout_ns >> 1))
            self.nomination_deadline_ns = now_ns + delay_ns
            self._state(ElectionState.NOMINATE, now_ns, "")
            work += 1
        return work

    def _nominate(self, now_ns: int) -> int:
        ctx = self.ctx
        if now_ns >= self.nomination_deadline_ns:
            self.candidate_term_id = ctx.node_state_file.propose_max_candidate_term_id(
                self.candidate_term_id + 1, self.log_position, ctx.epoch_clock())
            ClusterMember.become_candidate(self.cluster_members, self.candidate_term_id, self.this_member.id)
            self._state(ElectionState.CANDIDATE_BALLOT, now_ns, "")
            return 1
        if self._has_update_interval_expired(now_ns, ctx.election_status_interval_ns):
            self.time_of_last_update_ns = now_ns
            self._publish_canvass_position()
            return 1
        return 0

    def _candidate_ballot(self, now_ns: int) -> int:
        work = 0
        if ClusterMember.is_unanimous_leader(self.cluster_members, self.candidate_term_id,
                                             self.graceful_closed_leader_id):
            self.leader_member = self.this_member
            self.leadership_term_id = self.candidate_term_id
            self._state(ElectionState.LEADER_LOG_REPLICATION, now_ns, "unanimous leader")
            work += 1
        elif now_ns >= self.time_of_last_state_change_ns + self.ctx.election_timeout_ns:
            if ClusterMember.is_quorum_leader(self.cluster_members, self.candidate_term_id):
                self.leader_member = self.this_member
                self.leadership_term_id = self.candidate_term_id
                self._state(ElectionState.LEADER_LOG_REPLICATION, now_ns, "quorum leader")
            else:
                self._state(ElectionState.CANVASS, now_ns, "")
            work += 1
        else:
            for member in self.cluster_members:
                if not member.is_ballot_sent:
                    work += 1
                    member.is_ballot_sent = self.consensus_publisher.request_vote(
                        member.publication, self.log_leadership_term_id, self.append_position, self.candidate_term_id,
                        self.this_member.id)
        return work

    def _follower_ballot(self, now_ns: int) -> int:
        if now_ns >= self.time_of_last_state_change_ns + self.ctx.election_timeout_ns:
            self._state(ElectionState.CANVASS, now_ns, "")
            return 1
        return 0

    def _leader_log_replication(self, now_ns: int) -> int:
        work = 0
        self.this_member.log_position = self.append_position
        self.this_member.time_of_last_append_position_ns = now_ns
        quorum_position = self.consensus_module_agent.quorum_position_bounded_by_leader_log(self.append_position,
                                                                                           now_ns)
        work += self._publish_new_leadership_term_on_interval(quorum_position, now_ns)
        work += self._publish_commit_position_on_interval(quorum_position, now_ns)
        if quorum_position >= self.append_position:
            work += 1
            self._state(ElectionState.LEADER_REPLAY, now_ns, "")
        return work

    def _leader_replay(self, now_ns: int) -> int:
        work = 0
        if self.log_replay is None:
            if self.log_position < self.append_position:
                self.log_replay = self.consensus_module_agent.new_log_replay(self.log_position, self.append_position)
            else:
                self._state(ElectionState.LEADER_INIT, now_ns, "")
            work += 1
            self.is_leader_startup = self.is_node_startup
            self.this_member.leadership_term_id = self.leadership_term_id
            self.this_member.log_position = self.append_position
            self.this_member.time_of_last_append_position_ns = now_ns
        else:
            work += self.log_replay.do_work()
            if self.log_replay.is_done():
                self._stop_replay()
                self.log_position = self.append_position
                self._state(ElectionState.LEADER_INIT, now_ns, "")
        quorum_position = self.consensus_module_agent.quorum_position_bounded_by_leader_log(self.append_position,
                                                                                           now_ns)
        work += self._publish_new_leadership_term_on_interval(quorum_position, now_ns)
        work += self._publish_commit_position_on_interval(quorum_position, now_ns)
        return work

    def _leader_init(self, now_ns: int) -> int:
        self.consensus_module_agent.join_log_as_leader(self.leadership_term_id, self.log_position, self.log_session_id,
                                                       self.is_leader_startup)
        self._update_recording_log(now_ns)
        self._state(ElectionState.LEADER_READY, now_ns, "")
        return 1

    def _leader_ready(self, now_ns: int) -> int:
        agent = self.consensus_module_agent
        quorum_position = agent.quorum_position_bounded_by_leader_log(self.append_position, now_ns)
        work = int(agent.update_leader_position(now_ns, self.append_position, quorum_position))
        work += self._publish_new_leadership_term_on_interval(quorum_position, now_ns)
        if ClusterMember.has_quorum_at_position(self.cluster_members, self.leadership_term_id, self.log_position,
                                                now_ns, self.ctx.leader_heartbeat_timeout_ns):
            if agent.append_new_leadership_term_event(now_ns):
                agent.election_complete(now_ns)
                self._state(ElectionState.CLOSED, now_ns, "")
                work += 1
        return work

    def _follower_log_replication(self, now_ns: int) -> int:
        work = 0
        agent = self.consensus_module_agent
        if self.log_replication is None:
            if self.append_position < self.replication_stop_position:
                self.log_replication = agent.new_log_replication(
                    self.leader_member.archive_endpoint, self.leader_member.archive_response_endpoint,
                    self.leader_recording_id, self.replication_stop_position, now_ns)
                self.replication_deadline_ns = now_ns + self.ctx.leader_heartbeat_timeout_ns
                work += 1
            else:
                self._update_recording_log_for_replication(self.replication_leadership_term_id,
                                                           self.replication_term_base_log_position,
                                                           self.replication_stop_position, now_ns)
                self._state(ElectionState.CANVASS, now_ns, "")
        else:
            work += agent.poll_archive_events()
            self.log_replication.poll(now_ns)
            replication_done = self.log_replication.has_replication_ended and self.log_replication.has_stopped
            # published after the completion check so that the term's end position is reported as appended
            work += self._publish_follower_replication_position(now_ns)
            if replication_done:
                if self.notified_commit_position >= self.append_position:
                    self.append_position = self.log_replication.position
                    self._stop_log_replication()
                    self._update_recording_log_for_replication(self.replication_leadership_term_id,
                                                               self.replication_term_base_log_position,
                                                               self.replication_stop_position, now_ns)
                    self._state(ElectionState.CANVASS, now_ns, "")
                    work += 1
                elif now_ns >= self.replication_deadline_ns:
                    raise ElectionTimeoutError("timeout awaiting commit position")
        return work

    def _follower_replay(self, now_ns: int) -> int:
        work = 0
        if self.log_replay is None:
            if self.log_position < self.append_position:
                if self.notified_commit_position == 0:
                    return self._publish_follower_append_position(now_ns)
                if self.log_position >= self.notified_commit_position:
                    relation = "greater than" if self.log_position > self.notified_commit_position else "equal to"
                    self._state(ElectionState.CANVASS, now_ns,
                                f"log replay rejected: logPosition={self.log_position} is {relation} "
                                f"quorumPosition={self.notified_commit_position}")
                else:
                    self.log_replay = self.consensus_module_agent.new_log_replay(
                        self.log_position, min(self.append_position, self.notified_commit_position))
                    work += 1
            else:
                self._state(ElectionState.FOLLOWER_CATCHUP_INIT if self.catchup_join_position != NULL_POSITION
                            else ElectionState.FOLLOWER_LOG_INIT, now_ns, "nothing to replay")
                work += 1
        else:
            work += self.log_replay.do_work()
            if self.log_replay.is_done():
                self.log_position = self.log_replay.position()
                self._stop_replay()
                if self.log_position == self.append_position:
                    self._state(ElectionState.FOLLOWER_CATCHUP_INIT if self.catchup_join_position != NULL_POSITION
                                else ElectionState.FOLLOWER_LOG_INIT, now_ns, "log replay done")
                else:
                    self._state(ElectionState.CANVASS, now_ns, f"incomplete log replay: logPosition="
                                f"{self.log_position} appendPosition={self.append_position}")
        return work

    def _follower_catchup_init(self, now_ns: int) -> int:
        if self.log_subscription is None:
            self.log_subscription = self._add_follower_subscription()
            self._add_catchup_log_destination()
        catchup_endpoint = None
        endpoint = self.this_member.catchup_endpoint
        if endpoint.endswith(":0"):
            resolved = self.log_subscription.resolved_endpoint
            if resolved is not None:
                catchup_endpoint = endpoint[:-2] + resolved[resolved.rindex(":"):]
        else:
            catchup_endpoint = endpoint
        if catchup_endpoint is not None and self._send_catchup_position(catchup_endpoint):
            self.time_of_last_update_ns = now_ns
            self.consensus_module_agent.catchup_initiated(now_ns)
            self._state(ElectionState.FOLLOWER_CATCHUP_AWAIT, now_ns, "")
        elif now_ns >= self.time_of_last_state_change_ns + self.ctx.leader_heartbeat_timeout_ns:
            raise ElectionTimeoutError("failed to send catchup position")
        return 1

    def _follower_catchup_await(self, now_ns: int) -> int:
        work = 0
        image = self.log_subscription.image_by_session_id(self.log_session_id)
        timeout = now_ns >= self.time_of_last_state_change_ns + self.ctx.leader_heartbeat_timeout_ns
        if image is not None:
            self._verify_log_join_position("followerCatchupAwait", image.join_position)
            if self.consensus_module_agent.try_join_log_as_follower(image, self.is_leader_startup, now_ns):
                self._state(ElectionState.FOLLOWER_CATCHUP, now_ns, "")
                work += 1
            elif self.log_subscription.channel_status == _ERRORED:
                raise ClusterError(f"failed to add catchup log as follower - {self.log_subscription.channel}",
                                   category=Category.WARN)
            elif timeout:
                raise ElectionTimeoutError("failed to join catchup log as follower")
        elif timeout:
            raise ElectionTimeoutError("failed to join catchup log")
        return work

    def _follower_catchup(self, now_ns: int) -> int:
        agent = self.consensus_module_agent
        work = int(agent.catchup_poll(self.notified_commit_position, now_ns))
        if agent.live_log_destination is None and agent.is_catchup_near_live(
                max(self.catchup_join_position, self.notified_commit_position)):
            self._add_live_log_destination()
            work += 1
        position = self.ctx.commit_position_counter.get()
        if (position >= self.catchup_join_position and position >= self.notified_commit_position
                and agent.catchup_log_destination is None and agent.state is not State.SNAPSHOT):
            self.append_position = position
            self.log_position = position
            self._state(ElectionState.FOLLOWER_LOG_INIT, now_ns, "")
            work += 1
        return work

    def _follower_log_init(self, now_ns: int) -> int:
        if self.log_subscription is None:
            if self.log_session_id != NULL_SESSION_ID:
                self.log_subscription = self._add_follower_subscription()
                self._add_live_log_destination()
                self._state(ElectionState.FOLLOWER_LOG_AWAIT, now_ns, "")
        else:
            self._state(ElectionState.FOLLOWER_READY, now_ns, "")
        return 1

    def _follower_log_await(self, now_ns: int) -> int:
        work = 0
        image = self.log_subscription.image_by_session_id(self.log_session_id)
        timeout = now_ns >= self.time_of_last_state_change_ns + self.ctx.leader_heartbeat_timeout_ns
        if image is not None:
            self._verify_log_join_position("followerLogAwait", image.join_position)
            if self.consensus_module_agent.try_join_log_as_follower(image, self.is_leader_startup, now_ns):
                self._update_recording_log(now_ns)
                self._state(ElectionState.FOLLOWER_READY, now_ns, "")
                work += 1
            elif timeout:
                raise ElectionTimeoutError("failed to join live log as follower")
        elif self.log_subscription.channel_status == _ERRORED:
            raise ClusterError(f"failed to add live log as follower - {self.log_subscription.channel}",
                               category=Category.WARN)
        elif timeout:
            raise ElectionTimeoutError("failed to join live log")
        return work

    def _follower_ready(self, now_ns: int) -> int:
        if self.consensus_publisher.append_position(self.leader_member.publication, self.leadership_term_id,
                                                    self.log_position, self.this_member.id,
                                                    APPEND_POSITION_FLAG_NONE):
            self.consensus_module_agent.election_complete(now_ns)
            self._state(ElectionState.CLOSED, now_ns, "")
        elif now_ns >= self.time_of_last_state_change_ns + self.ctx.leader_heartbeat_timeout_ns:
            raise ElectionTimeoutError("ready follower failed to notify leader")
        return 1

    _STEPS = {
        ElectionState.INIT: _init,
        ElectionState.CANVASS: _canvass,
        ElectionState.NOMINATE: _nominate,
        ElectionState.CANDIDATE_BALLOT: _candidate_ballot,
        ElectionState.FOLLOWER_BALLOT: _follower_ballot,
        ElectionState.LEADER_LOG_REPLICATION: _leader_log_replication,
        ElectionState.LEADER_REPLAY: _leader_replay,
        ElectionState.LEADER_INIT: _leader_init,
        ElectionState.LEADER_READY: _leader_ready,
        ElectionState.FOLLOWER_LOG_REPLICATION: _follower_log_replication,
        ElectionState.FOLLOWER_REPLAY: _follower_replay,
        ElectionState.FOLLOWER_CATCHUP_INIT: _follower_catchup_init,
        ElectionState.FOLLOWER_CATCHUP_AWAIT: _follower_catchup_await,
        ElectionState.FOLLOWER_CATCHUP: _follower_catchup,
        ElectionState.FOLLOWER_LOG_INIT: _follower_log_init,
        ElectionState.FOLLOWER_LOG_AWAIT: _follower_log_await,
        ElectionState.FOLLOWER_READY: _follower_ready,
    }

    # -- helpers --------------------------------------------------------------------------------------------

    def _place_vote(self, candidate_term_id: int, candidate_id: int, vote: bool) -> None:
        candidate = self.cluster_member_by_id.get(candidate_id)
        if candidate is not None:
            self.consensus_publisher.place_vote(candidate.publication, candidate_term_id, self.log_leadership_term_id,
                                                self.append_position, candidate_id, self.this_member.id, vote)

    def _publish_new_leadership_term_on_interval(self, quorum_position: int, now_ns: int) -> int:
        if self._has_update_interval_expired(now_ns, self.ctx.leader_heartbeat_interval_ns):
            self.time_of_last_update_ns = now_ns
            timestamp = self._nanos_to_timestamp(now_ns)
            for member in self.cluster_members:
                self._publish_new_leadership_term_to(member, self.log_leadership_term_id, quorum_position, timestamp)
            return 1
        return 0

    def _publish_commit_position_on_interval(self, quorum_position: int, now_ns: int) -> int:
        # a quorum position going back during the election stops the commit positions; NewLeadershipTerm goes on
        if (self.last_published_commit_position < quorum_position
                or (self.last_published_commit_position == quorum_position
                    and now_ns - self.time_of_last_commit_position_update_ns
                    >= self.ctx.leader_heartbeat_interval_ns)):
            self.time_of_last_commit_position_update_ns = now_ns
            self.last_published_commit_position = quorum_position
            # the election's term, as in its NewLeadershipTerm
            self.consensus_module_agent.publish_commit_position(quorum_position, self.leadership_term_id)
            return 1
        return 0

    def _publish_canvass_position(self) -> None:
        ctx = self.ctx
        for member in self.cluster_members:
            if member.id != self.this_member.id:
                if member.publication is None:
                    ClusterMember.try_add_publication(member, ctx.consensus_stream_id, ctx.aeron,
                                                      ctx.counted_error_handler)
                self.consensus_publisher.canvass_position(member.publication, self.log_leadership_term_id,
                                                          self.append_position, self.leadership_term_id,
                                                          self.this_member.id)

    def _publish_new_leadership_term_to(self, member: Any, log_leadership_term_id: int, quorum_position: int,
                                        timestamp: int) -> None:
        if member.id == self.this_member.id or self.log_session_id == NULL_SESSION_ID:
            return
        next_entry = self.ctx.recording_log.find_term_entry(log_leadership_term_id + 1)
        if next_entry is not None:
            next_leadership_term_id = next_entry.leadership_term_id
            next_term_base_log_position = next_entry.term_base_log_position
            next_log_position = next_entry.log_position if next_entry.log_position != NULL_POSITION \
                else self.append_position
        else:
            next_leadership_term_id = self.leadership_term_id
            next_term_base_log_position = self.append_position
            next_log_position = NULL_POSITION
        self.consensus_publisher.new_leadership_term(
            member.publication, log_leadership_term_id, next_leadership_term_id, next_term_base_log_position,
            next_log_position, self.leadership_term_id, self.append_position, self.append_position, quorum_position,
            self.consensus_module_agent.log_recording_id, timestamp, self.this_member.id, self.log_session_id,
            self.ctx.app_version, self.is_leader_startup)

    def _publish_follower_replication_position(self, now_ns: int) -> int:
        position = self.log_replication.position
        if position > self.append_position or (
                position == self.append_position
                and self._has_update_interval_expired(now_ns, self.ctx.leader_heartbeat_interval_ns)):
            if self.consensus_publisher.append_position(self.leader_member.publication, self.leadership_term_id,
                                                        position, self.this_member.id, APPEND_POSITION_FLAG_NONE):
                self.append_position = position
                self.time_of_last_update_ns = now_ns
                return 1
        return 0

    def _publish_follower_append_position(self, now_ns: int) -> int:
        if (self.last_published_append_position != self.append_position
                or self._has_update_interval_expired(now_ns, self.ctx.leader_heartbeat_interval_ns)):
            if self.consensus_publisher.append_position(self.leader_member.publication, self.leadership_term_id,
                                                        self.append_position, self.this_member.id,
                                                        APPEND_POSITION_FLAG_NONE):
                self.last_published_append_position = self.append_position
                self.time_of_last_update_ns = now_ns
                return 1
        return 0

    def _send_catchup_position(self, catchup_endpoint: str) -> bool:
        return bool(self.consensus_publisher.catchup_position(self.leader_member.publication, self.leadership_term_id,
                                                              self.log_position, self.this_member.id,
                                                              catchup_endpoint))

    def _add_catchup_log_destination(self) -> None:
        destination = create_destination_uri(self.ctx.log_channel, self.this_member.catchup_endpoint)
        self.log_subscription.add_destination(destination)
        self.consensus_module_agent.catchup_log_destination = destination

    def _add_live_log_destination(self) -> None:
        ctx = self.ctx
        if ctx.is_log_mdc:
            destination = create_destination_uri(ctx.log_channel, self.this_member.log_endpoint)
        else:
            destination = ctx.log_channel
        self.log_subscription.add_destination(destination)
        self.consensus_module_agent.live_log_destination = destination

    def _add_follower_subscription(self) -> Any:
        ctx = self.ctx
        aeron = ctx.aeron
        log_uri = parse_channel(ctx.log_channel)
        params = [f"tags={aeron.next_correlation_id()},{aeron.next_correlation_id()}", "control-mode=manual",
                  f"session-id={self.log_session_id}", "group=true", "rejoin=false"]
        for key in ("so-rcvbuf", "rcv-wnd"):
            value = log_uri.get(key)
            if value is not None:
                params.append(f"{key}={value}")
        params.append("alias=log-cm")
        return aeron.add_subscription("aeron:udp?" + "|".join(params), ctx.log_stream_id)

    def _state(self, new_state: ElectionState, now_ns: int, reason: str) -> None:
        if new_state is self.state:
            return
        if self.state is ElectionState.CANVASS:
            self.is_extended_canvass = False
        agent = self.consensus_module_agent
        if new_state is ElectionState.CANVASS:
            self._reset_members()
            agent.set_role(Role.FOLLOWER)
        elif new_state is ElectionState.CANDIDATE_BALLOT:
            agent.set_role(Role.CANDIDATE)
        elif new_state is ElectionState.LEADER_LOG_REPLICATION:
            agent.set_role(Role.LEADER)
            self.log_session_id = agent.add_log_publication(self.append_position)
        elif new_state in (ElectionState.FOLLOWER_LOG_REPLICATION, ElectionState.FOLLOWER_REPLAY):
            agent.set_role(Role.FOLLOWER)
        if event_log.ENABLED:
            event_log.log_event(f"member-{self.this_member.id}", "ELECTION_STATE_CHANGE",
                                f"{self.state.name} -> {new_state.name} leadershipTermId={self.leadership_term_id} "
                                f"candidateTermId={self.candidate_term_id} logPosition={self.log_position} "
                                f"appendPosition={self.append_position} {reason}")
        self.state = new_state
        self.ctx.election_state_counter.set_ordered(new_state)
        self.time_of_last_state_change_ns = now_ns
        self.time_of_last_update_ns = self.initial_time_of_last_update_ns
        self.time_of_last_commit_position_update_ns = self.initial_time_of_last_update_ns

    def _stop_catchup(self) -> None:
        self.consensus_module_agent.stop_all_catchups()
        self.catchup_join_position = NULL_POSITION

    def _reset_members(self) -> None:
        ClusterMember.reset_members(self.cluster_members)
        self.this_member.leadership_term_id = self.leadership_term_id
        self.this_member.log_position = self.append_position
        self.leader_member = None

    def _stop_replay(self) -> None:
        if self.log_replay is not None:
            self.log_replay.close()
            self.log_replay = None
        self.last_published_append_position = 0

    def _stop_log_replication(self) -> None:
        if self.log_replication is not None:
            self.log_replication.close()
            self.log_replication = None
        self.replication_deadline_ns = 0
        self.last_published_commit_position = 0

    def _ensure_recording_log_coherent(self, leadership_term_id: int, term_base_log_position: int, log_position: int,
                                       now_ns: int) -> None:
        ensure_recording_log_coherent(self.ctx, self.consensus_module_agent.log_recording_id,
                                      self.initial_log_leadership_term_id, self.initial_term_base_log_position,
                                      leadership_term_id, term_base_log_position, log_position, now_ns)

    def _update_recording_log(self, now_ns: int) -> None:
        self._ensure_recording_log_coherent(self.leadership_term_id, self.log_position, NULL_VALUE, now_ns)
        self.log_leadership_term_id = self.leadership_term_id

    def _update_recording_log_for_replication(self, leadership_term_id: int, term_base_log_position: int,
                                              log_position: int, now_ns: int) -> None:
        self._ensure_recording_log_coherent(leadership_term_id, term_base_log_position, log_position, now_ns)
        self.log_leadership_term_id = leadership_term_id

    def _verify_log_join_position(self, state: str, join_position: int) -> None:
        if join_position != self.log_position:
            inequality = " less " if join_position < self.log_position else " greater "
            raise ClusterEvent(f"{state} - joinPosition={join_position}{inequality}than logPosition="
                               f"{self.log_position}")

    def _has_update_interval_expired(self, now_ns: int, interval_ns: int) -> bool:
        return now_ns - self.time_of_last_update_ns >= interval_ns

    def _prepare_for_new_leadership(self, now_ns: int) -> None:
        last_append_position = self.consensus_module_agent.prepare_for_new_leadership(self.log_position, now_ns)
        if last_append_position != NULL_POSITION:
            self.append_position = last_append_position

    def _now_ns(self) -> int:
        return int(self.ctx.cluster_clock.time_nanos())

    def _nanos_to_timestamp(self, time_ns: int) -> int:
        return convert(self.ctx.cluster_clock.time_unit(), time_ns, ClusterTimeUnit.NANOS)

    def __repr__(self) -> str:
        """The election's state and positions."""
        return (f"Election{{state={self.state.name}, thisMember={self.this_member.id}, "
                f"leaderMember={None if self.leader_member is None else self.leader_member.id}, "
                f"candidateTermId={self.candidate_term_id}, leadershipTermId={self.leadership_term_id}, "
                f"logLeadershipTermId={self.log_leadership_term_id}, logPosition={self.log_position}, "
                f"appendPosition={self.append_position}, notifiedCommitPosition={self.notified_commit_position}, "
                f"catchupJoinPosition={self.catchup_join_position}, logSessionId={self.log_session_id}}}")


def ensure_recording_log_coherent(ctx: Any, recording_id: int, initial_log_leadership_term_id: int,
                                  initial_term_base_log_position: int, leadership_term_id: int,
                                  term_base_log_position: int, log_position: int, now_ns: int) -> None:
    """Make the recording log hold a TERM entry for ``leadership_term_id`` (and any terms missed before it)
    (Aeron's ``Election.ensureRecordingLogCoherent``); nothing without a log recording yet (a replication that
    found nothing to copy)."""
    if recording_id == NULL_VALUE:
        return
    timestamp = convert(ctx.cluster_clock.time_unit(), now_ns, ClusterTimeUnit.NANOS)
    ctx.recording_log.ensure_coherent(
        recording_id, initial_log_leadership_term_id, initial_term_base_log_position, leadership_term_id,
        term_base_log_position if term_base_log_position != NULL_VALUE else initial_term_base_log_position,
        log_position, now_ns, timestamp, ctx.file_sync_level)
