# SPDX-License-Identifier: Apache-2.0
"""The consensus module's agent (Aeron's ``ConsensusModuleAgent``): one thread that runs a cluster member.

Each duty cycle: a slow tick every 10 ms (the Aeron client's conductor, the mark file's activity timestamp, the
local archive's signals, answers to redirected and rejected sessions; on the leader the control toggle, pending
sessions, session timeouts and the check that a quorum of followers is alive; on a follower the leader's
heartbeat timeout); then the consensus stream; then either the election in progress or the steady state: the
leader fires timers, appends service messages and ingress to the log and publishes the commit position as the
quorum's append positions advance, a follower reads the log up to the leader's commit position and reports its
append position. Services talk to it over the IPC control channel throughout.

The agent is single-threaded, as Aeron's: where Aeron's blocks (awaiting the services' acks, a recording counter,
a snapshot's recording), it idles here with the context's idle strategy, running the Aeron client's conductor.
States (``ConsensusModule.State``): INIT, ACTIVE, SUSPENDED, SNAPSHOT, QUITTING, TERMINATING, CLOSED; roles
(``Cluster.Role``): FOLLOWER, CANDIDATE, LEADER, both published in counters.
"""
from __future__ import annotations

import ipaddress
from collections import deque
from typing import Any

from aeron._core.codecs import cluster as codecs
from aeron._core.codecs.archive import RecordingSignal
from aeron._core.codecs.cluster import AdminRequestType, AdminResponseCode, ClusterAction
from aeron._core.counters import NULL_COUNTER_ID, RECORD_ALLOCATED
from aeron._core.cluster_ingress import IngressSessionAppender
from aeron._core.term_reader import ABORT, CONTINUE
from aeron.archive.client import AeronArchive, ReplicationParams, SourceLocation
from aeron.archive.status.recording_pos import RecordingPos
from aeron.archive.client.aeron_archive import State as ArchiveState
from aeron.archive.errors import ArchiveError, ArchiveErrorCode
from aeron.cluster._channels import (IPC_CHANNEL, SPY_PREFIX, UDP_CHANNEL, add_session_id, create_destination_uri,
                                     parse_channel, set_initial_position)
from aeron.cluster.cluster_control import CounterValue
from aeron.cluster.cluster_control import ToggleState as ClusterControlToggle
from aeron.cluster.cluster_event import ClusterEvent, ClusterTerminationError
from aeron.cluster.cluster_member import ClusterMember
from aeron.cluster.cluster_session import State as ClusterSessionState
from aeron.cluster.consensus_adapter import ConsensusAdapter
from aeron.cluster.consensus_module import State
from aeron.cluster.consensus_module_adapter import ConsensusModuleAdapter
from aeron.cluster.consensus_module_snapshot_adapter import ConsensusModuleSnapshotAdapter
from aeron.cluster.consensus_module_snapshot_taker import ConsensusModuleSnapshotTaker
from aeron.cluster.consensus_publisher import ConsensusPublisher
from aeron.cluster.election import Election
from aeron.cluster.ingress_adapter import IngressAdapter
from aeron.cluster.log_adapter import LogAdapter
from aeron.cluster.log_publisher import check_result as check_log_result
from aeron.common.agent import DRIVER_BACKOFF_MAX_PARK_NS as WAKEUP_ELECTION_PARK_NS
from aeron.cluster.log_replay import LogReplay
from aeron.cluster.node_control import ToggleState as NodeControlToggle
from aeron.cluster.pending_service_message_tracker import (PendingServiceMessageTracker, service_id_from_log_message,
                                                           service_id_from_service_message)
from aeron.archive.configuration import NULL_POSITION
from aeron.client import local_socket_address_status
from aeron.cluster._channels import to_int32
from aeron.cluster.cluster_clocks import convert, to_nanos
from aeron.cluster.recording_replication import RecordingReplication
from aeron.cluster.service.cluster import Role
from aeron.cluster.service.cluster_clock import ClusterClock, nanos_per_unit
from aeron.cluster.service.recovery_state import RecoveryState
from aeron.cluster.service_ack import EMPTY_SERVICE_ACKS, ServiceAck
from aeron.cluster.service_proxy import ServiceProxy
from aeron.cluster.session_manager import SessionManager
from aeron.common import event_log
from aeron.common.agent import Agent, IdleStrategy
from aeron.common.channel_uri import ChannelUri
from aeron.common.constants import INT64_MAX, NULL_VALUE
from aeron.common.errors import AgentTerminationError, Category, ClusterError

__all__ = ["ConsensusModuleAgent", "SLOW_TICK_INTERVAL_NS"]

SLOW_TICK_INTERVAL_NS = 10_000_000
MARK_FILE_UPDATE_INTERVAL_NS = 1_000_000_000
APPEND_POSITION_FLAG_NONE = 0
APPEND_POSITION_FLAG_CATCHUP = 1
CLUSTER_ACTION_FLAGS_DEFAULT = 0
CLUSTER_ACTION_FLAGS_STANDBY_SNAPSHOT = 1
NULL_LENGTH = -1
SERVICE_ID = -1
SNAPSHOT_TYPE_ID = 1
LIVE_ADD_MAX_WINDOW = 32 * 1024 * 1024
_NANOS = codecs.ClusterTimeUnit.NANOS


def _semantic_version_string(version: int) -> str:
    return f"{(version >> 16) & 0xFF}.{(version >> 8) & 0xFF}.{version & 0xFF}"


class _Interrupted(AgentTerminationError):
    """A blocking step ended by :meth:`ConsensusModuleAgent.interrupt` (the module closing)."""


class ConsensusModuleAgent(Agent):
    """The consensus module of one cluster member (see the module docstring)."""

    def __init__(self, ctx: Any) -> None:
        """Set up from a concluded ``ConsensusModule.Context``: the consensus, ingress and service adapters, the
        service proxy, the session manager, the timers and the service message trackers."""
        self.ctx = ctx
        self.role_name = str(ctx.agent_role_name)   # aeron.cluster.consensus.module.agent.role.name
        self.aeron = ctx.aeron
        self.cluster_clock = ctx.cluster_clock
        self.cluster_time_unit = ctx.cluster_clock.time_unit()
        self.timer_service = ctx.timer_service_supplier.new_instance(self.cluster_time_unit, self.on_timer_event)
        self.leader_heartbeat_interval_ns = ctx.leader_heartbeat_interval_ns
        self.leader_heartbeat_timeout_ns = ctx.leader_heartbeat_timeout_ns
        self.egress_publisher = ctx.egress_publisher
        self.module_state = ctx.module_state_counter
        self.commit_position = ctx.commit_position_counter
        self.control_toggle = CounterValue(self.aeron.counters_reader.values_buffer,
                                           ctx.control_toggle_counter.counter_id)
        self._control_toggle_counter = ctx.control_toggle_counter
        self.node_control_toggle = CounterValue(self.aeron.counters_reader.values_buffer,
                                                ctx.node_control_toggle_counter.counter_id)
        self.log_publisher = ctx.log_publisher
        self.idle_strategy = self.bind_idle_strategy(ctx.idle_strategy_supplier())
        # the services read the log up to the commit position: a parked container wakes when it moves, on the bit of
        # the control stream it polls anyway (not the log's: the log's data and its recording would wake it for
        # nothing, the data being readable only once committed)
        self._commit_wake = self.aeron.stream_wake_signal(ctx.service_stream_id)
        # on a member's one thread (ClusteredMediaDriver one_thread) the wake is owed until the thread's data half has
        # sent what the cycle offered (DriverThreadAgent's after-cycle step): a container woken at once would take the
        # core from the thread before the commit position and the log went out to the followers
        self.defer_commit_wake = False
        self._commit_wake_owed = False
        self.active_members: list[ClusterMember] = ClusterMember.parse(ctx.cluster_members)
        self.member_id = ctx.cluster_member_id
        self.cluster_role_counter = ctx.cluster_node_role_counter
        self.mark_file = ctx.mark_file
        self.recording_log = ctx.recording_log
        self.service_count = ctx.service_count
        self.service_client_ids = [NULL_VALUE] * self.service_count
        self.service_ack_queues = ServiceAck.new_array_of_queues(self.service_count)
        self.duty_cycle_tracker = ctx.duty_cycle_tracker
        self.total_snapshot_duration_tracker = ctx.total_snapshot_duration_tracker
        self.aeron_client_invoker = self.aeron.conductor_agent_invoker
        self.aeron_client_invoker.invoke()
        self.ranked_positions = [0] * ClusterMember.quorum_threshold(len(self.active_members))
        self.leadership_term_id = NULL_VALUE
        self.expected_ack_position = 0
        self.service_ack_id = 0
        self.termination_position = NULL_POSITION
        self.termination_leadership_term_id = NULL_VALUE
        self.notified_commit_position = 0
        self.last_append_position = NULL_POSITION
        self.last_quorum_backtrack_commit_position = NULL_POSITION
        self.time_of_last_log_update_ns = 0
        self._reset_quorum_look()
        self.time_of_last_append_position_update_ns = 0
        self.time_of_last_append_position_send_ns = 0
        self.time_of_last_leader_update_ns = 0
        self.slow_tick_deadline_ns = 0
        self.mark_file_update_deadline_ns = 0
        self.log_publication_channel_tag = 0
        self.append_position: Any = None            # the log recording's position counter (Aeron's ReadableCounter)
        self._append_position_registration_id = NULL_VALUE
        self.state = State.INIT
        self.role = Role.FOLLOWER
        self.cluster_role_counter.set_ordered(Role.FOLLOWER)
        self.consensus_publisher = ConsensusPublisher()
        self.cluster_member_by_id = {m.id: m for m in self.active_members}
        self.expired_timer_count_by_correlation_id: dict[int, int] = {}
        self.uncommitted_timers: deque[tuple[int, int]] = deque()
        self.uncommitted_previous_state: deque[tuple[int, State]] = deque()
        self.recovery_plan: Any = None
        self.archive: Any = None
        self.election: Election | None = None
        self.cluster_termination: ClusterTermination | None = None
        self.log_subscription_id = NULL_VALUE
        self.log_recording_id = NULL_VALUE
        self.log_recording_stop_position = 0
        self.live_log_destination: str | None = None
        self.catchup_log_destination: str | None = None
        self.ingress_endpoints: str | None = None
        self.local_log_channel: str | None = None
        self.this_member = ClusterMember.determine_member(self.active_members, self.member_id, ctx.member_endpoints)
        self.leader_member = self.this_member
        self.session_manager = SessionManager(
            self.active_members, self.member_id, self.cluster_clock, self.egress_publisher, self.aeron,
            ctx.session_timeout_ns, ctx.counted_error_handler, ctx.timed_out_client_counter,
            ctx.counted_error_handler, ctx.accept_standby_snapshots, ctx.standby_snapshot_counter,
            ctx.authenticator, ctx.authorisation_service, self.recording_log, self.log_publisher,
            self.consensus_publisher, self.commit_position.counter_id, ctx.cluster_id, ctx.max_concurrent_sessions,
            self.service_count, ctx.standby_snapshot_notification_processing_delay_ns)
        consensus_uri = parse_channel(ctx.consensus_channel)
        if not consensus_uri.has("endpoint"):
            consensus_uri.put("endpoint", self.this_member.consensus_endpoint)
        self.consensus_adapter = ConsensusAdapter(
            self.aeron.add_subscription(str(consensus_uri), ctx.consensus_stream_id), self,
            ctx.counted_error_handler)
        self.ingress_adapter = IngressAdapter(ctx.ingress_fragment_limit, self, ctx.counted_error_handler)
        # the leader's per-message path (on_ingress_message and the log append) in compiled code
        self.ingress_adapter.use_session_appender(IngressSessionAppender(
            self, self.ingress_adapter.on_message, self.session_manager.session_by_id, ClusterSessionState.OPEN,
            Role.LEADER, self.log_publisher, self.cluster_clock, self.log_publisher.session_message_header,
            check_log_result))
        self.log_adapter = LogAdapter(self, ctx.log_fragment_limit)
        # a follower's per-message path (a session message's activity) in compiled code
        self.log_adapter.use_session_dispatcher(self.session_manager.session_by_id,
                                                nanos_per_unit(self.cluster_time_unit))
        self.consensus_module_adapter = ConsensusModuleAdapter(
            self.aeron.add_subscription(ctx.control_channel, ctx.consensus_module_stream_id), self,
            ctx.counted_error_handler)
        self.service_proxy = ServiceProxy(self.aeron.add_publication(ctx.control_channel, ctx.service_stream_id))
        self.authorisation_service = ctx.authorisation_service
        self.pending_service_message_trackers = [
            PendingServiceMessageTracker(i, self.commit_position, self.log_publisher, self.cluster_clock)
            for i in range(self.service_count)]
        self.response_channel_template = parse_channel(ctx.egress_channel) if ctx.egress_channel else None
        ctx.unavailable_counter_handler = self.on_unavailable_counter
        self._closed = False
        self._interrupted = False

    def _reset_quorum_look(self) -> None:
        # what the leader's last look at the quorum saw (update_leader_position): the append position, its own position
        # as the quorum counted it, and how many member positions had come (update_member_log_position); NULL_POSITION
        # when it must look again
        self._quorum_seen_append_position = NULL_POSITION
        self._quorum_seen_own_position = NULL_POSITION
        self._member_position_updates = 0
        self._quorum_seen_member_updates = -1

    # -- the Agent ------------------------------------------------------------------------------------------

    def on_start(self) -> None:
        """Connect to the local archive, recover from the latest snapshot and the log, connect to the other
        members and start the first election."""
        ctx = self.ctx
        ctx.archive_context.recording_signal_consumer = self._on_recording_signal
        self._pending_signals: deque[Any] = deque()
        self.archive = AeronArchive.connect(ctx.archive_context)
        last_term_recording_id = self.recording_log.find_last_term_recording_id()
        if last_term_recording_id != NULL_VALUE:
            self.archive.try_stop_recording_by_identity(last_term_recording_id)
        self.recovery_plan = self._recover_from_snapshot_and_log()
        for member in self.active_members:
            if member.id != self.member_id:
                self._add_consensus_publication(member)
        plan = self.recovery_plan
        commit_position = self.commit_position.get()
        self.election = Election(True, NULL_VALUE, plan.last_leadership_term_id, plan.last_term_base_log_position,
                                 commit_position, plan.appended_log_position, self.active_members,
                                 self.cluster_member_by_id, self.this_member, self.consensus_publisher, ctx, self)
        self.election.do_work(self.cluster_clock.time_nanos())
        self.set_state(State.ACTIVE, "started")
        self.duty_cycle_tracker.update(self.cluster_clock.time_nanos())

    def bind_idle_strategy(self, idle: IdleStrategy) -> IdleStrategy:
        """``idle``, when a ``wakeup`` one, parked until data comes for what this agent polls: ingress, consensus,
        the log (and the archive's recording of it, which signals the log's stream), the services' control, the
        local archive's responses, and the driver's writes to this agent's client (docs/wakeup.md). It signals the
        services' control stream when it moves the commit position: what a parked container waits for."""
        return self.aeron.bind_agent_idle_strategy(idle, self.wake_streams(), conductor=True, quiet=self.quiet_park_ns)

    def wake_streams(self) -> tuple[int, ...]:
        """The streams whose data (or signal) a park of this agent wakes for: ingress, consensus, the log, the
        services' control, the local archive's responses."""
        ctx = self.ctx
        return (ctx.ingress_stream_id, ctx.consensus_stream_id, ctx.log_stream_id, ctx.consensus_module_stream_id,
                ctx.archive_context.control_response_stream_id)

    def quiet_park_ns(self, quiet_ns: int) -> int:
        """The longest park now, within ``quiet_ns`` (the idle strategy's ``quiet``: see below)."""
        # the agent's timers (heartbeats, session and leader timeouts) are not signalled: parks stay within the
        # idle strategy's quiet bound rather than growing to our driver's long one, and within a millisecond (the
        # first bound, Agrona's backoff's longest park) while an election's status intervals and timeouts run; an
        # active follower's end by its leader heartbeat timeout (a millisecond at least), so that it notices a silent
        # leader at its slow tick, as Java's does, not up to a quiet bound later
        if self.election is not None:
            return WAKEUP_ELECTION_PARK_NS
        if self.role is Role.FOLLOWER and self.state is State.ACTIVE:
            left_ns = (self.time_of_last_log_update_ns + self.leader_heartbeat_timeout_ns
                       - self.cluster_clock.time_nanos())
            return min(quiet_ns, max(left_ns, WAKEUP_ELECTION_PARK_NS))
        return quiet_ns

    def do_work(self) -> int:
        """One duty cycle (see the module docstring)."""
        timestamp = self.cluster_clock.time()
        now_ns = self.cluster_clock.convert_to_nanos(timestamp)
        work = 0
        self.duty_cycle_tracker.measure_and_update(now_ns)
        try:
            try:
                if now_ns >= self.slow_tick_deadline_ns:
                    slow_work = self._slow_tick_work(now_ns)
                    work += slow_work
                    self.slow_tick_deadline_ns = now_ns + 1 if slow_work > 0 else now_ns + SLOW_TICK_INTERVAL_NS
                work += self.consensus_adapter.poll()
                if self.election is not None:
                    self._quorum_seen_append_position = NULL_POSITION   # members' positions reset: look again after
                    work += self.election.do_work(now_ns)
                else:
                    work += self._consensus_work(timestamp, now_ns)
            except AgentTerminationError:
                raise
            except Exception as ex:
                if isinstance(ex, ArchiveError) and ex.code == ArchiveErrorCode.STORAGE_SPACE:
                    self.ctx.counted_error_handler(ex)
                    self._unexpected_termination(str(ex))
                if self.archive is not None and self.archive.state is not ArchiveState.CONNECTED:
                    self.ctx.counted_error_handler(ex)
                    self._unexpected_termination("local archive is not connected")
                if self.election is not None:
                    self.election.handle_error(now_ns, ex)
                else:
                    raise
        except AgentTerminationError as ex:
            if not isinstance(ex, _Interrupted):        # a close is no termination of the cluster
                self._run_termination_hook()
            raise
        return work

    def on_close(self) -> None:
        """Tell the services to stop, close what was opened, and the context."""
        if self._closed:
            return
        self._closed = True
        ctx = self.ctx
        error_handler = ctx.counted_error_handler
        if not self.aeron.is_closed:
            if self.service_count > 0:
                try:
                    self.service_proxy.termination_position(self.commit_position.get(), False, error_handler)
                except Exception as ex:     # noqa: BLE001 - closing carries on
                    error_handler(ex)
            self.log_publisher.disconnect(error_handler)
            subscription = self.log_adapter.subscription
            if subscription is not None:
                _quietly(subscription.close, error_handler)
            self._try_stop_log_recording()
            if self.archive is not None:
                _quietly(self.archive.close, error_handler)
            if not ctx.owns_aeron_client:
                ClusterMember.close_consensus_publications(error_handler, self.active_members)
                _quietly(self.ingress_adapter.close, error_handler)
                _quietly(self.consensus_adapter.close, error_handler)
                _quietly(self.service_proxy.close, error_handler)
                _quietly(self.consensus_module_adapter.close, error_handler)
                self.session_manager.close_sessions(error_handler)
            self.set_state(State.CLOSED, "closed")
        _quietly(self.mark_file.signal_terminated, error_handler)
        ctx.close()

    # -- idling (Aeron's ConsensusModuleAgent as an IdleStrategy) --------------------------------------------

    def interrupt(self) -> None:
        """Make the agent's blocking steps end (Java interrupts the agent's thread): the next :meth:`idle` raises
        AgentTerminationError, so that a close does not wait on a service that never comes (``on_start``'s wait
        for the services' first acks) or anything else a blocking step waits for. A park in progress ends now."""
        self._interrupted = True
        wake = getattr(self.idle_strategy, "wake", None)
        if wake is not None:
            wake()

    def idle(self, work_count: int = 0) -> None:
        """Wait a little inside a blocking step: run the client conductor, idle, and poll the archive's
        signals when there was nothing to do. AgentTerminationError once interrupted (Aeron's
        ``checkInterruptStatus``)."""
        if self._interrupted:
            raise _Interrupted("interrupted")
        self.aeron_client_invoker.invoke()
        if self.aeron.is_closed:
            raise AgentTerminationError("unexpected Aeron close")
        self.idle_strategy.idle(work_count)
        if work_count == 0:
            self.poll_archive_events()

    def reset(self) -> None:
        """Reset the idle strategy."""
        self.idle_strategy.reset()

    # -- state and role --------------------------------------------------------------------------------------

    def set_state(self, new_state: State, reason: str = "") -> None:
        """Move to ``new_state`` and publish it in the state counter."""
        if new_state is not self.state:
            if event_log.ENABLED:
                event_log.log_event(f"member-{self.member_id}", "STATE_CHANGE",
                                    f"{self.state.name} -> {new_state.name} {reason}")
            self.state = new_state
            if not self.module_state.is_closed:
                self.module_state.set_ordered(int(new_state))

    def set_role(self, new_role: Role) -> None:
        """Take ``new_role`` and publish it in the role counter."""
        if new_role is not self.role:
            if event_log.ENABLED:
                event_log.log_event(f"member-{self.member_id}", "ROLE_CHANGE", f"{self.role.name} -> {new_role.name}")
            self.role = new_role
            if not self.cluster_role_counter.is_closed:
                self.cluster_role_counter.set_ordered(int(new_role))

    def set_log_recording_id(self, recording_id: int) -> None:
        """The log's recording id, when known."""
        if recording_id != NULL_VALUE:
            self.log_recording_id = recording_id

    def set_leadership_term_id(self, leadership_term_id: int) -> None:
        """The current term, published in its counter and given to the service message trackers."""
        self.leadership_term_id = leadership_term_id
        self.ctx.leadership_term_id_counter.set_ordered(leadership_term_id)
        for tracker in self.pending_service_message_trackers:
            tracker.leadership_term_id = leadership_term_id

    # -- snapshot loading (ConsensusModuleSnapshotListener) -----------------------------------------------------

    def on_load_begin_snapshot(self, app_version: int, time_unit: Any, buffer: Any, offset: int, length: int) -> None:
        """The snapshot's version and time unit must be ours (fatal ClusterError otherwise)."""
        if not self.ctx.app_version_validator(self.ctx.app_version, app_version):
            raise ClusterError(f"incompatible version: {_semantic_version_string(self.ctx.app_version)} snapshot="
                               f"{_semantic_version_string(app_version)}", category=Category.FATAL)
        if time_unit != self.cluster_time_unit:
            raise ClusterError(f"incompatible time unit: {self.cluster_time_unit.name} snapshot={time_unit.name}",
                               category=Category.FATAL)

    def on_load_end_snapshot(self, buffer: Any, offset: int, length: int) -> None:
        """Nothing more to load."""

    def on_load_cluster_session(self, cluster_session_id: int, correlation_id: int, opened_position: int,
                                time_of_last_activity: int, close_reason: int, response_stream_id: int,
                                response_channel: str, buffer: Any, offset: int, length: int) -> None:
        """A session of the snapshot."""
        self.session_manager.on_load_cluster_session(cluster_session_id, correlation_id, opened_position,
                                                     time_of_last_activity, close_reason, response_stream_id,
                                                     response_channel)

    def on_load_consensus_module_state(self, next_session_id: int, next_service_session_id: int,
                                       log_service_session_id: int, pending_message_capacity: int, buffer: Any,
                                       offset: int, length: int) -> None:
        """The next session id, and (legacy) service 0's tracker state."""
        self.session_manager.load_next_session_id(next_session_id)
        if self.pending_service_message_trackers:
            self.pending_service_message_trackers[0].load_state(next_service_session_id, log_service_session_id,
                                                                pending_message_capacity)

    def on_load_pending_message_tracker(self, next_service_session_id: int, log_service_session_id: int,
                                        pending_message_capacity: int, service_id: int, buffer: Any, offset: int,
                                        length: int) -> None:
        """A service's tracker state (ClusterError for a service id this member does not run)."""
        if not 0 <= service_id < len(self.pending_service_message_trackers):
            raise ClusterError(f"serviceId={service_id} invalid for serviceCount="
                               f"{len(self.pending_service_message_trackers)}")
        self.pending_service_message_trackers[service_id].load_state(next_service_session_id, log_service_session_id,
                                                                     pending_message_capacity)

    def on_load_pending_message(self, cluster_session_id: int, buffer: Any, offset: int, length: int) -> None:
        """A queued service message."""
        service_id = service_id_from_log_message(cluster_session_id)
        self.pending_service_message_trackers[service_id].append_message(buffer, offset, length)

    def on_load_timer(self, correlation_id: int, deadline: int, buffer: Any, offset: int, length: int) -> None:
        """A timer of the snapshot."""
        self.on_schedule_timer(correlation_id, deadline)

    # -- ingress ---------------------------------------------------------------------------------------------

    def on_extension_message(self, acting_block_length: int, template_id: int, schema_id: int, acting_version: int,
                             buffer: Any, offset: int, length: int, header: Any) -> int:
        """A message of another schema on ingress: no extension here, so reported and dropped."""
        self.ctx.counted_error_handler(ClusterEvent(f"expected schemaId={codecs.SCHEMA_ID}, actual={schema_id}"))
        return CONTINUE

    def on_session_connect(self, correlation_id: int, response_stream_id: int, version: int, response_channel: str,
                           encoded_credentials: bytes, client_info: str, image: Any) -> None:
        """SessionConnectRequest."""
        self.session_manager.on_session_connect(correlation_id, response_stream_id, version,
                                                self._refine_response_channel(response_channel), encoded_credentials,
                                                client_info, image, int(self.role), self.ingress_endpoints)

    def on_session_close(self, leadership_term_id: int, cluster_session_id: int) -> None:
        """SessionCloseRequest: the leader closes the session."""
        if leadership_term_id == self.leadership_term_id and self.role is Role.LEADER:
            self.session_manager.on_session_close(leadership_term_id, cluster_session_id)

    def on_admin_request(self, leadership_term_id: int, cluster_session_id: int, correlation_id: int,
                         request_type: int, payload: bytes) -> None:
        """AdminRequest: a SNAPSHOT request toggles the control toggle, if the session is authorised."""
        if self.role is not Role.LEADER or leadership_term_id != self.leadership_term_id:
            return
        session = self.session_manager.find_by_session_id(cluster_session_id)
        if session is None or not session.is_open():
            return
        name = AdminRequestType(request_type).name if request_type in (t.value for t in AdminRequestType) \
            else str(request_type)
        if not self.authorisation_service.is_authorised(codecs.SCHEMA_ID, codecs.AdminRequestDecoder.TEMPLATE_ID,
                                                        request_type, session.encoded_principal):
            self.egress_publisher.send_admin_response(session, correlation_id, request_type,
                                                      AdminResponseCode.UNAUTHORISED_ACCESS,
                                                      f"Execution of the {name} request was not authorised")
            return
        if request_type == AdminRequestType.SNAPSHOT:
            if ClusterControlToggle.SNAPSHOT.toggle(self.control_toggle):
                self.egress_publisher.send_admin_response(session, correlation_id, request_type,
                                                          AdminResponseCode.OK, "")
            else:
                self.egress_publisher.send_admin_response(
                    session, correlation_id, request_type, AdminResponseCode.ERROR,
                    "Failed to switch ClusterControl to the ToggleState.SNAPSHOT state")
        else:
            self.egress_publisher.send_admin_response(session, correlation_id, request_type, AdminResponseCode.ERROR,
                                                      f"Unknown request type: {name}")

    def on_ingress_message(self, leadership_term_id: int, cluster_session_id: int, buffer: Any, offset: int,
                           length: int) -> int:
        """A session message: the leader appends it to the log with the cluster time (ABORT when the log is back
        pressured, to read it again)."""
        if leadership_term_id == self.leadership_term_id and self.role is Role.LEADER:
            session = self.session_manager.find_by_session_id(cluster_session_id)
            if session is not None and session.is_open():
                timestamp = self.cluster_clock.time()
                if self.log_publisher.append_message(leadership_term_id, cluster_session_id, timestamp, buffer,
                                                     offset, length) > 0:
                    session.time_of_last_activity_ns = self.cluster_clock.convert_to_nanos(timestamp)
                else:
                    return ABORT
        return CONTINUE

    def on_session_keep_alive(self, leadership_term_id: int, cluster_session_id: int, image: Any) -> None:
        """SessionKeepAlive refreshes the session."""
        if leadership_term_id == self.leadership_term_id and self.role is Role.LEADER:
            session = self.session_manager.find_by_session_id(cluster_session_id)
            if session is not None and session.is_open():
                session.link_ingress_image(image)
                session.time_of_last_activity_ns = self.cluster_clock.time_nanos()

    def on_ingress_challenge_response(self, correlation_id: int, cluster_session_id: int,
                                      encoded_credentials: bytes) -> None:
        """A client's ChallengeResponse: the leader's authenticator hears it; a follower forwards it."""
        if self.role is Role.LEADER:
            self.session_manager.on_challenge_response_for_user_session(correlation_id, cluster_session_id,
                                                                        encoded_credentials)
        else:
            self.consensus_publisher.challenge_response(self.leader_member.publication, correlation_id,
                                                        cluster_session_id, encoded_credentials)

    def on_consensus_challenge_response(self, correlation_id: int, cluster_session_id: int,
                                        encoded_credentials: bytes) -> None:
        """A backup's ChallengeResponse."""
        self.session_manager.on_challenge_response_for_backup_session(correlation_id, cluster_session_id,
                                                                      encoded_credentials)

    # -- timers ----------------------------------------------------------------------------------------------

    def on_timer_event(self, correlation_id: int) -> bool:
        """A timer expired on the leader: append TimerEvent (False, keeping the timer, when back pressured)."""
        append_position = self.log_publisher.append_timer(correlation_id, self.leadership_term_id,
                                                          self.cluster_clock.time())
        if append_position > 0:
            self.uncommitted_timers.append((append_position, correlation_id))
            return True
        return False

    def on_schedule_timer(self, correlation_id: int, deadline: int) -> None:
        """ScheduleTimer; a follower that already read this timer's TimerEvent drops the schedule."""
        count = self.expired_timer_count_by_correlation_id.get(correlation_id, 0)
        if count == 0:
            self.timer_service.schedule_timer_for_correlation_id(correlation_id, deadline)
        elif count == 1:
            del self.expired_timer_count_by_correlation_id[correlation_id]
        else:
            self.expired_timer_count_by_correlation_id[correlation_id] = count - 1

    def on_cancel_timer(self, correlation_id: int) -> None:
        """CancelTimer."""
        self.timer_service.cancel_timer_by_correlation_id(correlation_id)

    # -- consensus messages ----------------------------------------------------------------------------------

    def on_canvass_position(self, log_leadership_term_id: int, log_position: int, leadership_term_id: int,
                            follower_member_id: int, protocol_version: int) -> None:
        """CanvassPosition: to the election, or, for a leader, a lagging member to answer with its next term."""
        self._check_follower_for_consensus_publication(follower_member_id)
        if self.election is not None:
            self.election.on_canvass_position(log_leadership_term_id, log_position, leadership_term_id,
                                              follower_member_id, protocol_version)
            return
        if self.role is not Role.LEADER:
            return
        follower = self.cluster_member_by_id.get(follower_member_id)
        if follower is None or log_leadership_term_id > self.leadership_term_id:
            return
        self.update_member_log_position(follower, log_leadership_term_id, log_position)
        self._stop_existing_catchup_replay(follower)
        term_base_log_position = self.recording_log.get_term_entry(self.leadership_term_id).term_base_log_position
        next_log_leadership_term_id = NULL_VALUE
        next_term_base_log_position = NULL_POSITION
        next_log_position = NULL_POSITION
        if log_leadership_term_id < self.leadership_term_id:
            next_entry = self.recording_log.find_term_entry(log_leadership_term_id + 1)
            next_log_leadership_term_id = next_entry.leadership_term_id if next_entry else self.leadership_term_id
            next_term_base_log_position = next_entry.term_base_log_position if next_entry \
                else term_base_log_position
            next_log_position = next_entry.log_position if next_entry else NULL_POSITION
        self.consensus_publisher.new_leadership_term(
            follower.publication, log_leadership_term_id, next_log_leadership_term_id, next_term_base_log_position,
            next_log_position, self.leadership_term_id, term_base_log_position, self.log_publisher.position(),
            self.commit_position.get(), self.log_recording_id, self.cluster_clock.time(), self.member_id,
            self.log_publisher.session_id(), self.ctx.app_version, False)

    def on_request_vote(self, log_leadership_term_id: int, log_position: int, candidate_term_id: int,
                        candidate_id: int, protocol_version: int) -> None:
        """RequestVote: to the election, or a reason to start one."""
        if self.election is not None:
            self.election.on_request_vote(log_leadership_term_id, log_position, candidate_term_id, candidate_id,
                                          protocol_version)
        elif candidate_term_id > self.leadership_term_id:
            self._enter_election(False, f"unexpected vote request: this.leadershipTermId={self.leadership_term_id} "
                                        f"candidateTermId={candidate_term_id}")

    def on_vote(self, candidate_term_id: int, log_leadership_term_id: int, log_position: int, candidate_id: int,
                voter_id: int, vote: bool) -> None:
        """Vote: to the election."""
        if self.election is not None:
            self.election.on_vote(candidate_term_id, log_leadership_term_id, log_position, candidate_id, voter_id,
                                  vote)

    def on_new_leadership_term(self, log_leadership_term_id: int, next_leadership_term_id: int,
                               next_term_base_log_position: int, next_log_position: int, leadership_term_id: int,
                               term_base_log_position: int, log_position: int, commit_position: int,
                               leader_recording_id: int, timestamp: int, leader_id: int, log_session_id: int,
                               app_version: int, is_startup: bool) -> None:
        """NewLeadershipTerm: to the election; in steady state a heartbeat of the current leader, or news of a
        newer term."""
        if not self.ctx.app_version_validator(self.ctx.app_version, app_version):
            error = (f"incompatible version: {_semantic_version_string(self.ctx.app_version)} log="
                     f"{_semantic_version_string(app_version)}")
            self.ctx.counted_error_handler(ClusterError(error, category=Category.FATAL))
            self._unexpected_termination(error)
        now_ns = self.cluster_clock.time_nanos()
        if leadership_term_id >= self.leadership_term_id:
            self.time_of_last_leader_update_ns = now_ns
        if self.election is not None:
            self.election.on_new_leadership_term(
                log_leadership_term_id, next_leadership_term_id, next_term_base_log_position, next_log_position,
                leadership_term_id, term_base_log_position, log_position, commit_position, leader_recording_id,
                timestamp, leader_id, log_session_id, is_startup)
        elif self.role is Role.FOLLOWER and leadership_term_id == self.leadership_term_id and \
                leader_id == self.leader_member.id:
            self.notified_commit_position = max(self.notified_commit_position, commit_position)
            self.time_of_last_log_update_ns = now_ns
        elif leadership_term_id > self.leadership_term_id:
            self._enter_election(False, f"unexpected new leadership term event: this.leadershipTermId="
                                        f"{self.leadership_term_id} newLeadershipTermId={leadership_term_id}")

    def on_append_position(self, leadership_term_id: int, log_position: int, follower_member_id: int,
                           flags: int) -> None:
        """AppendPosition from a follower."""
        if self.election is not None:
            self.election.on_append_position(leadership_term_id, log_position, follower_member_id, flags)
        elif leadership_term_id <= self.leadership_term_id and self.role is Role.LEADER:
            follower = self.cluster_member_by_id.get(follower_member_id)
            if event_log.STEPS:
                event_log.log_event(f"member-{self.member_id}", "APPEND_POSITION_RECEIVED",
                                    f"{follower_member_id} {log_position}")
            if follower is not None:
                self.update_member_log_position(follower, leadership_term_id, log_position)
                self.track_catchup_completion(follower, leadership_term_id, flags)

    def update_member_log_position(self, member: Any, leadership_term_id: int, log_position: int) -> None:
        """What a member reported of its log, and when."""
        member.leadership_term_id = leadership_term_id
        member.log_position = log_position
        member.time_of_last_append_position_ns = self.cluster_clock.time_nanos()
        self._member_position_updates += 1

    def on_commit_position(self, leadership_term_id: int, log_position: int, leader_member_id: int) -> None:
        """CommitPosition from the leader (its heartbeat)."""
        now_ns = self.cluster_clock.time_nanos()
        if leadership_term_id >= self.leadership_term_id:
            self.time_of_last_leader_update_ns = now_ns
        if self.election is not None:
            self.election.on_commit_position(leadership_term_id, log_position, leader_member_id)
        elif leadership_term_id == self.leadership_term_id:
            if self.leader_member.id == leader_member_id and self.role is Role.FOLLOWER:
                self.notified_commit_position = max(self.notified_commit_position, log_position)
                self.time_of_last_log_update_ns = now_ns
        elif leadership_term_id > self.leadership_term_id:
            self._enter_election(
                False, f"unexpected commit position from new leader -  memberId={self.member_id} "
                       f"this.leadershipTermId={self.leadership_term_id} this.leaderMemberId={self.leader_member.id} "
                       f"this.commitPosition={self.commit_position.get()} this.appendPosition="
                       f"{self._append_position_value() if self.append_position is not None else NULL_POSITION} "
                       f"newLeadershipTermId={leadership_term_id} newLeaderMemberId={leader_member_id} "
                       f"newCommitPosition={log_position})")

    def on_catchup_position(self, leadership_term_id: int, log_position: int, follower_member_id: int,
                            catchup_endpoint: str) -> None:
        """CatchupPosition: the leader replays its log from ``log_position`` to the follower's catch-up
        endpoint."""
        if leadership_term_id <= self.leadership_term_id and self.role is Role.LEADER:
            follower = self.cluster_member_by_id.get(follower_member_id)
            if follower is not None and follower.catchup_replay_session_id == NULL_VALUE:
                uri = parse_channel(self.ctx.follower_catchup_channel)
                uri.put("endpoint", catchup_endpoint)
                uri.put("session-id", str(self.log_publisher.session_id()))
                uri.put("linger", "0")
                uri.put("eos", "false")
                uri.put("alias", f"catchup-followerId-{follower.id}")
                follower.catchup_replay_session_id = self.archive.start_replay(
                    self.log_recording_id, str(uri), self.ctx.log_stream_id, log_position, INT64_MAX)
                follower.catchup_replay_correlation_id = self.archive.last_correlation_id

    def on_stop_catchup(self, leadership_term_id: int, follower_member_id: int) -> None:
        """StopCatchup for this member: drop the catch-up destination."""
        if leadership_term_id == self.leadership_term_id and follower_member_id == self.member_id:
            if self.catchup_log_destination is not None:
                self.log_adapter.async_remove_destination(self.catchup_log_destination)
                self.catchup_log_destination = None

    def on_termination_position(self, leadership_term_id: int, log_position: int) -> None:
        """TerminationPosition: a follower stops when its log reaches ``log_position``."""
        if leadership_term_id == self.leadership_term_id and self.role is Role.FOLLOWER:
            self.termination_position = log_position
            self.termination_leadership_term_id = leadership_term_id
            self.time_of_last_log_update_ns = self.cluster_clock.time_nanos()

    def on_termination_ack(self, leadership_term_id: int, log_position: int, member_id: int) -> None:
        """TerminationAck from a follower."""
        if leadership_term_id == self.leadership_term_id and log_position >= self.termination_position and \
                self.role is Role.LEADER:
            member = self.cluster_member_by_id.get(member_id)
            if member is not None:
                member.has_terminated = True
                if self.cluster_termination is not None and self.cluster_termination.can_terminate(
                        self.active_members, self.cluster_clock.time_nanos()):
                    self.recording_log.commit_log_position(leadership_term_id, self.termination_position)
                    self._close_and_terminate()

    def on_backup_query(self, correlation_id: int, response_stream_id: int, version: int, log_position: int,
                        response_channel: str, encoded_credentials: bytes, image: Any) -> None:
        """BackupQuery, answered outside elections."""
        if self.election is None and self.state in (State.ACTIVE, State.SUSPENDED, State.SNAPSHOT):
            self.session_manager.on_backup_query(correlation_id, response_stream_id, version, log_position,
                                                 self._refine_response_channel(response_channel),
                                                 encoded_credentials, image)

    def on_heartbeat_request(self, correlation_id: int, response_stream_id: int, response_channel: str,
                             encoded_credentials: bytes, image: Any) -> None:
        """HeartbeatRequest, answered outside elections."""
        if self.election is None and self.state in (State.ACTIVE, State.SUSPENDED, State.SNAPSHOT):
            self.session_manager.on_heartbeat_request(correlation_id, response_stream_id,
                                                      self._refine_response_channel(response_channel),
                                                      encoded_credentials, image)

    def on_standby_snapshot(self, correlation_id: int, version: int, entries: list[Any], response_stream_id: int,
                            response_channel: str, encoded_credentials: bytes, image: Any) -> None:
        """StandbySnapshot, accepted outside elections when configured."""
        if self.election is None and self.state in (State.ACTIVE, State.SUSPENDED, State.SNAPSHOT):
            self.session_manager.on_standby_snapshot(correlation_id, version, entries, response_stream_id,
                                                     self._refine_response_channel(response_channel),
                                                     encoded_credentials, image)

    def on_cluster_members_query(self, correlation_id: int, is_extended: bool) -> None:
        """ClusterMembersQuery (from a service or ClusterTool)."""
        if is_extended:
            self.service_proxy.cluster_members_extended_response(
                correlation_id, self.cluster_clock.time_nanos(), self.leader_member.id, self.member_id,
                self.active_members)
        else:
            self.service_proxy.cluster_members_response(correlation_id, self.leader_member.id,
                                                        ClusterMember.encode_as_string(self.active_members))

    # -- services --------------------------------------------------------------------------------------------

    def on_service_close_session(self, cluster_session_id: int) -> None:
        """CloseSession from a service."""
        self.session_manager.on_service_close_session(
            cluster_session_id, self.role is Role.LEADER and self.state is State.ACTIVE, self.leadership_term_id)

    def on_service_message(self, cluster_session_id: int, buffer: Any, offset: int, length: int) -> None:
        """A service's message to the cluster: queued for the log."""
        service_id = service_id_from_service_message(cluster_session_id)
        if not 0 <= service_id < len(self.pending_service_message_trackers):
            self.ctx.counted_error_handler(ClusterError(f"service message from unknown serviceId={service_id}"))
            return
        self.pending_service_message_trackers[service_id].enqueue_message(buffer, offset, length)

    def on_service_ack(self, log_position: int, timestamp: int, ack_id: int, relevant_id: int,
                       service_id: int) -> None:
        """ServiceAck: queued; when every service acked the expected position, the snapshot, quit or termination
        waiting for it goes on."""
        self._capture_service_ack(log_position, ack_id, relevant_id, service_id)
        if ServiceAck.has_reached(log_position, self.service_ack_id, self.service_ack_queues):
            if self.state is State.SNAPSHOT:
                self.service_ack_id += 1
                acks = ServiceAck.poll_service_acks(self.service_ack_queues, log_position, service_id)
                self._snapshot_on_service_ack(log_position, timestamp, acks)
            elif self.state is State.QUITTING:
                self._close_and_terminate()
            elif self.state is State.TERMINATING:
                self._terminate_on_service_ack(log_position)

    # -- the log as a follower reads it ----------------------------------------------------------------------

    def on_replay_session_message(self, cluster_session_id: int, timestamp: int) -> None:
        """A session message in the log: the session was active; a service message leaves the queue."""
        session = self.session_manager.find_by_session_id(cluster_session_id)
        if session is not None:
            session.time_of_last_activity_ns = to_nanos(self.cluster_time_unit, timestamp)
        elif cluster_session_id < 0:
            service_id = service_id_from_log_message(cluster_session_id)
            if service_id < len(self.pending_service_message_trackers):
                self.pending_service_message_trackers[service_id].sweep_follower_messages(cluster_session_id)

    def on_replay_extension_message(self, acting_block_length: int, template_id: int, schema_id: int,
                                    acting_version: int, buffer: Any, offset: int, length: int, header: Any) -> int:
        """Another schema in the log: fatal without an extension."""
        raise ClusterError(f"expected schemaId={codecs.SCHEMA_ID}, actual={schema_id}")

    def on_replay_timer_event(self, correlation_id: int) -> None:
        """A TimerEvent in the log: cancel the timer, or remember it fired before its schedule arrived."""
        if not self.timer_service.cancel_timer_by_correlation_id(correlation_id):
            self.expired_timer_count_by_correlation_id[correlation_id] = \
                self.expired_timer_count_by_correlation_id.get(correlation_id, 0) + 1

    def on_replay_session_open(self, log_position: int, correlation_id: int, cluster_session_id: int,
                               timestamp: int, response_stream_id: int, response_channel: str) -> None:
        """A SessionOpenEvent in the log."""
        self.session_manager.on_replay_session_open(log_position, correlation_id, cluster_session_id, timestamp,
                                                    response_stream_id, response_channel)

    def on_replay_session_close(self, cluster_session_id: int, close_reason: int) -> None:
        """A SessionCloseEvent in the log."""
        self.session_manager.on_replay_session_close(cluster_session_id, close_reason)

    def on_replay_cluster_action(self, leadership_term_id: int, log_position: int, timestamp: int, action: int,
                                 flags: int) -> None:
        """A ClusterActionRequest in the log: suspend, resume, or take a snapshot (with the services)."""
        if leadership_term_id != self.leadership_term_id:
            return
        if action == ClusterAction.SUSPEND:
            self.set_state(State.SUSPENDED, "ReplayClusterAction.SUSPENDED")
        elif action == ClusterAction.RESUME:
            self.set_state(State.ACTIVE, "ReplayClusterAction.ACTIVE")
        elif action == ClusterAction.SNAPSHOT and flags == CLUSTER_ACTION_FLAGS_DEFAULT:
            self.set_state(State.SNAPSHOT, "ReplayClusterAction.SNAPSHOT")
            self.total_snapshot_duration_tracker.on_snapshot_begin(self.cluster_clock.time_nanos())
            if self.service_count == 0:
                self._snapshot_on_service_ack(log_position, timestamp, EMPTY_SERVICE_ACKS)

    def on_replay_new_leadership_term_event(self, leadership_term_id: int, log_position: int, timestamp: int,
                                            term_base_log_position: int, time_unit: int, app_version: int) -> None:
        """A NewLeadershipTermEvent in the log: its time unit and version must be ours; the term moves on."""
        unit = ClusterClock.map(time_unit)
        if unit != self.cluster_time_unit:
            error = f"incompatible timestamp units: {self.cluster_time_unit.name} log={unit.name}"
            self.ctx.counted_error_handler(ClusterError(error, category=Category.FATAL))
            self._unexpected_termination(error)
        if not self.ctx.app_version_validator(self.ctx.app_version, app_version):
            error = (f"incompatible version: {_semantic_version_string(self.ctx.app_version)} log="
                     f"{_semantic_version_string(app_version)}")
            self.ctx.counted_error_handler(ClusterError(error, category=Category.FATAL))
            self._unexpected_termination(error)
        self.set_leadership_term_id(leadership_term_id)
        if self.election is not None:
            self.election.on_replay_new_leadership_term_event(leadership_term_id, log_position, timestamp,
                                                              term_base_log_position)

    # -- what the election asks --------------------------------------------------------------------------------

    def prepare_for_new_leadership(self, log_position: int, now_ns: int) -> int:
        """Before a new election: stop being leader or follower of the old term, roll back what was appended but
        not committed, and return the log's appended position (-1 without a log recording)."""
        self.set_role(Role.FOLLOWER)
        _quietly(self.ingress_adapter.close, self.ctx.counted_error_handler)
        if self.catchup_log_destination is not None:
            self.log_adapter.async_remove_destination(self.catchup_log_destination)
            self.catchup_log_destination = None
        if self.live_log_destination is not None:
            self.log_adapter.async_remove_destination(self.live_log_destination)
            self.live_log_destination = None
        self.last_quorum_backtrack_commit_position = NULL_POSITION
        log_subscription_registration_id = self.log_adapter.disconnect(self.ctx.counted_error_handler)
        self.log_publisher.disconnect(self.ctx.counted_error_handler)
        ClusterControlToggle.deactivate(self.control_toggle)
        rec_pos = self.append_position
        rec_pos_registration_id = self._append_position_registration_id
        self._try_stop_log_recording()
        if self.log_recording_id != RecordingPos.NULL_RECORDING_ID:
            self.last_append_position = self._get_last_appended_position()
            self.time_of_last_append_position_update_ns = now_ns
            self.recovery_plan = self.recording_log.create_recovery_plan(self.archive, self.service_count,
                                                                         self.log_recording_id)
            self.session_manager.clear_sessions_after(log_position, self.leadership_term_id)
            self.session_manager.disconnect_sessions()
            self.commit_position.set_ordered(log_position)
            self._restore_uncommitted_entries(log_position)
            counters = self.aeron.counters_reader
            self.idle_strategy.reset()
            if rec_pos is not None:
                while counters.get_counter_state(rec_pos) == RECORD_ALLOCATED and \
                        counters.get_counter_registration_id(rec_pos) == rec_pos_registration_id:
                    self.idle()
            else:
                while RecordingPos.find_counter_id_by_recording(counters, self.log_recording_id,
                                                                 self.archive.archive_id) != NULL_COUNTER_ID:
                    self.idle()
        if log_subscription_registration_id != NULL_VALUE:
            self.await_local_sockets_closed(log_subscription_registration_id)
        return self.last_append_position

    def add_log_publication(self, append_position: int) -> int:
        """The new leader's log publication for the new term, starting at ``append_position`` of the log's
        stream; returns its session id."""
        ctx = self.ctx
        log_publication_tag = self.aeron.next_correlation_id()
        self.log_publication_channel_tag = self.aeron.next_correlation_id()
        uri = parse_channel(ctx.log_channel)
        uri.put("alias", "log")
        uri.put("tags", f"{self.log_publication_channel_tag},{log_publication_tag}")
        if uri.is_udp:
            if ctx.is_log_mdc:
                uri.put("control-mode", "manual")
                ClusterMember.set_control_endpoint(uri, ctx.enable_control_on_log_channel,
                                                   self.this_member.log_endpoint)
            uri.put("ssc", "true" if len(self.active_members) == 1 else "false")
        log = self.recovery_plan.log
        if log is not None:
            set_initial_position(uri, append_position, log.initial_term_id, log.term_buffer_length)
            uri.put("mtu", str(log.mtu_length))
        else:
            uri.put("init-term-id", "0")
            uri.put("term-id", "0")
            uri.put("term-offset", "0")
        publication = self.aeron.add_exclusive_publication(str(uri), ctx.log_stream_id)
        self.log_publisher.publication = publication
        if ctx.is_log_mdc:
            for member in self.active_members:
                if member.id != self.member_id:
                    self.log_publisher.add_destination(member.log_endpoint)
        return int(publication.session_id)

    def join_log_as_leader(self, leadership_term_id: int, log_position: int, log_session_id: int,
                           is_startup: bool) -> None:
        """Record the new term's log locally and have the services join it (through a spy, or IPC)."""
        ctx = self.ctx
        is_ipc = ctx.log_channel.startswith(IPC_CHANNEL)
        channel = (IPC_CHANNEL if is_ipc else UDP_CHANNEL) + \
            f"?tags={self.log_publication_channel_tag}|session-id={log_session_id}|alias=log"
        self.set_leadership_term_id(leadership_term_id)
        self._start_log_recording(channel, ctx.log_stream_id, SourceLocation.LOCAL)
        self.idle_strategy.reset()
        while not self._try_create_append_position(log_session_id):
            self.idle()
        self.local_log_channel = channel if is_ipc else SPY_PREFIX + channel
        self.await_services_ready(self.local_log_channel, ctx.log_stream_id, log_session_id, log_position, INT64_MAX,
                                  is_startup, Role.LEADER)

    def try_join_log_as_follower(self, image: Any, is_leader_startup: bool, now_ns: int) -> bool:
        """Record the leader's log image locally and, once its recording counter appears, have the services join
        it; whether it joined."""
        subscription = image.subscription
        if self.log_subscription_id == NULL_VALUE:
            self._start_log_recording(subscription.channel, subscription.stream_id, SourceLocation.REMOTE)
        if self._try_create_append_position(image.session_id):
            self.log_adapter.image = image
            self.last_append_position = image.join_position
            self.time_of_last_append_position_update_ns = now_ns
            self.await_services_ready(subscription.channel, subscription.stream_id, image.session_id,
                                      image.join_position, INT64_MAX, is_leader_startup, Role.FOLLOWER)
            return True
        return False

    def await_services_ready(self, log_channel: str, stream_id: int, log_session_id: int, log_position: int,
                             max_log_position: int, is_startup: bool, role: Role) -> None:
        """JoinLog to the services, then wait for each to ack ``log_position``."""
        if self.service_count > 0:
            self.service_proxy.join_log(log_position, max_log_position, self.member_id, log_session_id, stream_id,
                                        is_startup, role, log_channel, False)
            self.expected_ack_position = log_position
            self.idle_strategy.reset()
            while not ServiceAck.has_reached(log_position, self.service_ack_id, self.service_ack_queues):
                self.idle(self.consensus_module_adapter.poll())
                if self.state is State.CLOSED:
                    self._unexpected_termination("State.CLOSED == state")
            ServiceAck.remove_head(self.service_ack_queues)
            self.service_ack_id += 1

    def new_log_replay(self, log_position: int, append_position: int) -> LogReplay:
        """A replay of this member's log from ``log_position`` to ``append_position``."""
        return LogReplay(self.archive, self.log_recording_id, log_position, append_position, self.log_adapter,
                         self.ctx)

    def replay_log_poll(self, log_adapter: Any, stop_position: int) -> int:
        """Read a replay up to ``stop_position``, moving the commit position with it."""
        work = 0
        if self.state in (State.ACTIVE, State.SUSPENDED):
            log_adapter.poll(stop_position)
            position = log_adapter.position()
            if self.commit_position.propose_max_ordered(position):
                work += 1
            elif log_adapter.is_image_closed() and position < stop_position:
                raise ClusterEvent(f"unexpected image close when replaying log: position={position}")
        work += self.consensus_module_adapter.poll()
        return work

    def truncate_log_entry(self, leadership_term_id: int, log_position: int) -> None:
        """Cut the log recording at ``log_position`` (entries the cluster never committed)."""
        self.archive.truncate_recording(self.log_recording_id, log_position)
        if leadership_term_id != NULL_VALUE:
            self.recording_log.commit_log_position(leadership_term_id, log_position)
        self.log_adapter.disconnect_to(self.ctx.counted_error_handler, log_position)
        self.log_recording_stop_position = log_position

    def append_new_leadership_term_event(self, now_ns: int) -> bool:
        """The new leader's first entry of its term."""
        election = self.election
        assert election is not None, "only during an election"
        return bool(self.log_publisher.append_new_leadership_term_event(
            self.leadership_term_id, convert(self.cluster_time_unit, now_ns, _NANOS), election.log_position,
            self.member_id, self.log_publisher.session_id(), self.cluster_time_unit, self.ctx.app_version))

    def election_complete(self, now_ns: int) -> None:
        """The election closed: take up the new term (a leader activates the control toggle and tells its
        sessions), and open ingress."""
        election = self.election
        assert election is not None, "only at the end of an election"
        self.set_leadership_term_id(election.leadership_term_id)
        if self.role is Role.LEADER:
            self.time_of_last_log_update_ns = now_ns - self.leader_heartbeat_interval_ns
            self.timer_service.current_time(convert(self.cluster_time_unit, now_ns, _NANOS))
            ClusterControlToggle.activate(self.control_toggle)
            self.session_manager.prepare_sessions_for_new_term(election.is_leader_startup)
        else:
            self.time_of_last_log_update_ns = now_ns
            self.time_of_last_append_position_update_ns = now_ns
            self.time_of_last_append_position_send_ns = now_ns
            self.local_log_channel = None
        NodeControlToggle.activate(self.node_control_toggle)
        self.recovery_plan = self.recording_log.create_recovery_plan(self.archive, self.service_count,
                                                                     self.log_recording_id)
        log_position = election.log_position
        self.notified_commit_position = max(self.notified_commit_position, log_position)
        self.commit_position.set_ordered(log_position)
        self._update_member_details(election.leader())
        self._connect_ingress()
        self.election = None

    def track_catchup_completion(self, follower: Any, leadership_term_id: int, flags: int) -> None:
        """A follower catching up reached the live log: stop its replay and tell it (StopCatchup)."""
        if follower.catchup_replay_session_id != NULL_VALUE or flags & APPEND_POSITION_FLAG_CATCHUP:
            if follower.log_position >= self.log_publisher.position():
                if follower.catchup_replay_correlation_id != NULL_VALUE:
                    if self.archive.archive_proxy.stop_replay(follower.catchup_replay_session_id,
                                                              self.aeron.next_correlation_id(),
                                                              self.archive.control_session_id):
                        follower.catchup_replay_correlation_id = NULL_VALUE
                if self.consensus_publisher.stop_catchup(follower.publication, leadership_term_id, follower.id):
                    follower.catchup_replay_session_id = NULL_VALUE

    def catchup_initiated(self, now_ns: int) -> None:
        """The follower asked the leader for a catch-up replay."""
        self.time_of_last_append_position_update_ns = now_ns
        self.time_of_last_append_position_send_ns = now_ns

    def catchup_poll(self, limit_position: int, now_ns: int) -> int:
        """Read the catch-up log up to ``limit_position`` (and what is recorded), reporting progress."""
        election = self.election
        assert election is not None, "only during an election"
        work = 0
        if self.state in (State.ACTIVE, State.SUSPENDED):
            if self.append_position is None:
                raise ClusterEvent(f"unexpected recording stop during catchup: position={self.log_adapter.position()}")
            current_append_position = self._append_position_value()
            fragments = self.log_adapter.poll(min(current_append_position, limit_position))
            work += fragments
            if fragments == 0 and self.log_adapter.is_image_closed():
                raise ClusterEvent(f"unexpected image close during catchup: position={self.log_adapter.position()}")
            work += self._update_follower_position(election.leader().publication, now_ns,
                                                   self.leadership_term_id, current_append_position,
                                                   APPEND_POSITION_FLAG_CATCHUP)
            self.commit_position.propose_max_ordered(self.log_adapter.position())
        if now_ns > self.time_of_last_append_position_update_ns + self.leader_heartbeat_timeout_ns and \
                self.state is State.ACTIVE:
            raise ClusterEvent(
                f"no catchup progress: commitPosition={self.commit_position.get()} limitPosition={limit_position} "
                f"lastAppendPosition={self.last_append_position} appendPosition="
                f"{self._append_position_value() if self.append_position is not None else NULL_POSITION} "
                f"logPosition={election.log_position}")
        work += self.consensus_module_adapter.poll()
        return work

    def is_catchup_near_live(self, position: int) -> bool:
        """The catch-up image is within a quarter term (at most 32 MiB) of ``position``."""
        image = self.log_adapter.image
        if image is not None:
            window = min(image.term_buffer_length >> 2, LIVE_ADD_MAX_WINDOW)
            return int(image.position) >= position - window
        return False

    def stop_all_catchups(self) -> None:
        """Stop the catch-up replays of every member."""
        for member in self.active_members:
            if member.catchup_replay_session_id != NULL_VALUE:
                if member.catchup_replay_correlation_id != NULL_VALUE:
                    try:
                        self.archive.stop_replay(member.catchup_replay_session_id)
                    except Exception:       # noqa: BLE001 - Aeron reports the replay as already stopped
                        self.ctx.counted_error_handler(ClusterEvent("replay already stopped for catchup"))
                member.catchup_replay_session_id = NULL_VALUE
                member.catchup_replay_correlation_id = NULL_VALUE

    def quorum_position_bounded_by_leader_log(self, leader_append_position: int, now_ns: int) -> int:
        """The quorum's position, never beyond the leader's own recorded log (its archive may lag the
        followers')."""
        quorum_position = ClusterMember.quorum_position(self.active_members, self.ranked_positions, now_ns,
                                                        self.leader_heartbeat_timeout_ns)
        return min(quorum_position, leader_append_position)

    def update_leader_position(self, now_ns: int, append_position: int | None = None,
                               quorum_position: int | None = None) -> int:
        """The leader's commit position: published when the quorum moves it, or as a heartbeat."""
        this_member = self.this_member
        if append_position is None:
            if self.append_position is None:
                return 0
            append_position = self._append_position_value()
            updates = self._member_position_updates
            own_position = this_member.log_position         # the quorum counts the last look's (Java's order)
            if append_position == self._quorum_seen_append_position and updates == self._quorum_seen_member_updates \
                    and own_position == self._quorum_seen_own_position \
                    and now_ns < self.time_of_last_log_update_ns + self.leader_heartbeat_interval_ns:
                # Nothing the quorum is made of moved since the last look (ConsensusModuleAgent.updateLeaderPosition
                # looks every duty cycle), which left it at or below the commit position; time alone only lets a
                # member lapse (counting 0), so the quorum is no higher now: no commit, and no heartbeat due yet
                this_member.log_position = append_position
                this_member.time_of_last_append_position_ns = now_ns
                return 0
            quorum_position = self.quorum_position_bounded_by_leader_log(append_position, now_ns)
            self._quorum_seen_append_position = append_position
            self._quorum_seen_member_updates = updates
            self._quorum_seen_own_position = own_position
        else:
            self._quorum_seen_append_position = NULL_POSITION       # an election's look: the next one looks again
        assert quorum_position is not None
        this_member.log_position = append_position
        this_member.time_of_last_append_position_ns = now_ns
        leader_commit_position = self.commit_position.get()
        if quorum_position > leader_commit_position or \
                now_ns >= self.time_of_last_log_update_ns + self.leader_heartbeat_interval_ns:
            if quorum_position < leader_commit_position and \
                    leader_commit_position > self.last_quorum_backtrack_commit_position:
                self.last_quorum_backtrack_commit_position = leader_commit_position
                self.ctx.counted_error_handler(ClusterEvent(
                    f"quorum position went backwards: leaderCommitPosition={leader_commit_position} "
                    f"quorumPosition={quorum_position}"))
            self.publish_commit_position(quorum_position, self.leadership_term_id)
            if self.commit_position.propose_max_ordered(quorum_position) and self._commit_wake is not None:
                self._signal_commit()
            self.time_of_last_log_update_ns = now_ns
            self._sweep_uncommitted_entries_to(quorum_position)
            return 1
        return 0

    def _signal_commit(self) -> None:
        # the commit position moved: wake the parked services now, or once the thread's cycle is done
        if event_log.STEPS:
            event_log.log_event(f"member-{self.member_id}", "COMMIT", str(self.commit_position.get()))
        if self.defer_commit_wake:
            self._commit_wake_owed = True
        else:
            self._commit_wake.signal()                                   # type: ignore[union-attr]

    def signal_owed_wakes(self) -> None:
        """Wake the parked services for a commit position moved in this cycle (``defer_commit_wake``)."""
        if self._commit_wake_owed:
            if event_log.STEPS:
                event_log.log_event(f"member-{self.member_id}", "SERVICES_WOKEN")
            self._commit_wake_owed = False
            self._commit_wake.signal()                                   # type: ignore[union-attr]

    def publish_commit_position(self, commit_position: int, leadership_term_id: int) -> None:
        """CommitPosition to every follower."""
        for member in self.active_members:
            if member.id != self.member_id:
                self.consensus_publisher.commit_position(member.publication, leadership_term_id, commit_position,
                                                         self.member_id)

    def new_log_replication(self, leader_archive_endpoint: str, response_archive_endpoint: str | None,
                            leader_recording_id: int, stop_position: int, now_ns: int) -> RecordingReplication:
        """Replicate the leader's log recording into ours, up to ``stop_position``."""
        ctx = self.ctx
        replication_channel = ctx.replication_channel
        params = ReplicationParams(dst_recording_id=self.log_recording_id, stop_position=stop_position,
                                   replication_session_id=to_int32(self.aeron.next_correlation_id()))
        if response_archive_endpoint is not None:
            uri = parse_channel(replication_channel)
            uri.remove("endpoint")
            uri.put("control", response_archive_endpoint)
            uri.put("control-mode", "response")
            replication_channel = str(uri)
            params.src_response_channel = replication_channel
        params.replication_channel = replication_channel
        return RecordingReplication(
            self.archive, leader_recording_id,
            create_destination_uri(ctx.leader_archive_control_channel, leader_archive_endpoint),
            self.archive.context.control_request_stream_id, params, ctx.leader_heartbeat_timeout_ns,
            ctx.leader_heartbeat_interval_ns, now_ns)

    def await_local_sockets_closed(self, registration_id: int) -> None:
        """Wait for the sockets of a closed subscription to go (so its endpoints can be bound again)."""
        self.idle_strategy.reset()
        counters = self.aeron.counters_reader
        while local_socket_address_status.find_number_of_addresses_by_registration_id(counters, registration_id) > 0:
            self.idle()

    def poll_archive_events(self) -> int:
        """The local archive's recording signals and errors: a stopped log recording starts an election; a
        failed catch-up replay is forgotten."""
        work = 0
        archive = self.archive
        if archive is None:
            return work
        try:
            work += archive.poll_for_recording_signals()
        except ArchiveError as ex:
            work += 1
            for member in self.active_members:
                if member.catchup_replay_correlation_id == ex.correlation_id:
                    member.catchup_replay_session_id = NULL_VALUE
                    member.catchup_replay_correlation_id = NULL_VALUE
                    self.ctx.counted_error_handler(ClusterEvent(f"catchup replay failed - {ex}"))
                    return work
            if ex.code == ArchiveErrorCode.UNKNOWN_REPLAY:
                self.ctx.counted_error_handler(ClusterEvent(f"replay no longer relevant - {ex}"))
                return work
            raise
        while self._pending_signals:
            work += 1
            signal = self._pending_signals.popleft()
            if self._on_archive_signal(signal):
                return work
        if work == 0 and not archive.control_response_poller.subscription.is_connected:
            error = "local archive is not connected"
            self.ctx.counted_error_handler(ClusterEvent(error, category=Category.ERROR))
            self._unexpected_termination(error)
        return work

    def _on_recording_signal(self, event: Any) -> None:
        # the archive client hands signals over while it polls; they are acted on once it returns
        self._pending_signals.append(event)

    def _on_archive_signal(self, event: Any) -> bool:
        recording_id, position, signal = event.recording_id, event.position, event.signal
        if signal == RecordingSignal.STOP and recording_id == self.log_recording_id:
            self.log_recording_stop_position = position
            if self.election is None and self.state is State.ACTIVE:
                is_eos = self.log_adapter.is_log_end_of_stream_at(position)
                self._enter_election(is_eos, f"log recording stopped: eos={str(is_eos).lower()}")
                return True
        if self.election is not None:
            self.election.on_recording_signal(event.correlation_id, recording_id, position, signal)
        return False

    # -- the slow tick and the steady state ------------------------------------------------------------------

    def _slow_tick_work(self, now_ns: int) -> int:
        work = self.aeron_client_invoker.invoke()
        if self.aeron.is_closed:
            raise AgentTerminationError("unexpected Aeron close")
        if self.state is State.CLOSED:
            self._unexpected_termination("State.CLOSED == state")
        if now_ns >= self.mark_file_update_deadline_ns:
            self.mark_file_update_deadline_ns = now_ns + MARK_FILE_UPDATE_INTERVAL_NS
            self.mark_file.update_activity_timestamp(self.cluster_clock.time_millis())
        work += self.poll_archive_events()
        session_manager = self.session_manager
        work += session_manager.send_redirects(self.leadership_term_id, self.leader_member.id, now_ns)
        work += session_manager.send_rejections(self.leadership_term_id, self.leader_member.id, now_ns)
        if self.election is None:
            if self.role is Role.LEADER:
                work += self._check_cluster_control_toggle(now_ns)
                if self.state is State.ACTIVE:
                    work += session_manager.process_all_pending_sessions(now_ns, self.leader_member.id,
                                                                         self.leadership_term_id)
                    work += session_manager.check_sessions(now_ns, self.leadership_term_id, self.leader_member.id,
                                                           self.ingress_endpoints)
                    if len(self.active_members) > 1 and not ClusterMember.has_active_quorum(
                            self.active_members, now_ns, self.leader_heartbeat_timeout_ns):
                        self._enter_election(False, "inactive follower quorum")
                        work += 1
                elif self.state is State.TERMINATING:
                    if self.cluster_termination is not None and self.cluster_termination.can_terminate(
                            self.active_members, now_ns):
                        self.recording_log.commit_log_position(self.leadership_term_id, self.termination_position)
                        self._close_and_terminate()
            else:
                if self.role is Role.FOLLOWER and self.state is State.ACTIVE:
                    work += session_manager.process_pending_backup_sessions(now_ns, self.leader_member.id,
                                                                            self.leadership_term_id)
                if self.state in (State.ACTIVE, State.SUSPENDED):
                    if now_ns >= self.time_of_last_log_update_ns + self.leader_heartbeat_timeout_ns and \
                            self.termination_position == NULL_POSITION:
                        self._enter_election(False, "leader heartbeat timeout")
                        work += 1
        work += session_manager.process_pending_standby_snapshot_notifications(self.commit_position.get(), now_ns)
        return work

    def _consensus_work(self, timestamp: int, now_ns: int) -> int:
        work = 0
        if self.role is Role.LEADER:
            if self.state is State.ACTIVE:
                work += self.timer_service.poll(timestamp)
                for tracker in self.pending_service_message_trackers:
                    work += tracker.poll()
                polled = self.ingress_adapter.poll()
                if polled and event_log.STEPS:
                    event_log.log_event(f"member-{self.member_id}", "INGRESS_POLLED", str(polled))
                work += polled
            work += self.update_leader_position(now_ns)
        else:
            if self.state in (State.ACTIVE, State.SUSPENDED):
                if self.termination_position != NULL_POSITION and \
                        self.log_adapter.position() >= self.termination_position:
                    self.set_state(State.TERMINATING, f"terminationPosition={self.termination_position}")
                    if self.service_count > 0:
                        self.service_proxy.termination_position(self.termination_position, True,
                                                                self.ctx.counted_error_handler)
                    else:
                        self._do_termination(self.log_adapter.position())
                else:
                    limit = self._append_position_value() if self.append_position is not None \
                        else self.log_recording_stop_position
                    count = self.log_adapter.poll(min(self.notified_commit_position, limit))
                    if count and event_log.STEPS:
                        event_log.log_event(f"member-{self.member_id}", "LOG_POLLED", str(count))
                    if count == 0 and self.log_adapter.is_image_closed():
                        is_eos = self.log_adapter.is_log_end_of_stream()
                        self._enter_election(is_eos, f"log disconnected from leader: eos={str(is_eos).lower()}")
                        return 1
                    if self.commit_position.propose_max_ordered(self.log_adapter.position()) and \
                            self._commit_wake is not None:
                        self._signal_commit()
                    work += self.ingress_adapter.poll()
                    work += count
            work += self._update_follower_position_now(now_ns)
        work += self.consensus_module_adapter.poll()
        return work

    def _check_cluster_control_toggle(self, now_ns: int) -> int:
        state = self.state
        toggle = self.control_toggle
        if state is State.ACTIVE:
            toggle_state = ClusterControlToggle.get(toggle)
            if toggle_state is ClusterControlToggle.SUSPEND:
                if self._append_action(ClusterAction.SUSPEND, CLUSTER_ACTION_FLAGS_DEFAULT):
                    self._offer_position_and_previous_state(self.log_publisher.position(), state)
                    self.set_state(State.SUSPENDED, "ClusterControl.SUSPEND")
            elif toggle_state is ClusterControlToggle.SNAPSHOT:
                if self._append_action(ClusterAction.SNAPSHOT, CLUSTER_ACTION_FLAGS_DEFAULT):
                    self._offer_position_and_previous_state(self.log_publisher.position(), state)
                    self.set_state(State.SNAPSHOT, "ClusterControl.SNAPSHOT")
                    self.total_snapshot_duration_tracker.on_snapshot_begin(now_ns)
            elif toggle_state is ClusterControlToggle.STANDBY_SNAPSHOT:
                if self._append_action(ClusterAction.SNAPSHOT, CLUSTER_ACTION_FLAGS_STANDBY_SNAPSHOT):
                    ClusterControlToggle.reset(toggle)
            elif toggle_state is ClusterControlToggle.SHUTDOWN:
                if self._append_action(ClusterAction.SNAPSHOT, CLUSTER_ACTION_FLAGS_DEFAULT):
                    position = self.log_publisher.position()
                    self.cluster_termination = ClusterTermination(now_ns + self.ctx.termination_timeout_ns)
                    self.cluster_termination.termination_position(
                        self.ctx.counted_error_handler, self.consensus_publisher, self.active_members,
                        self.this_member, self.leadership_term_id, position)
                    self.termination_position = position
                    self.termination_leadership_term_id = self.leadership_term_id
                    self._offer_position_and_previous_state(position, state)
                    self.set_state(State.SNAPSHOT, "ClusterControl.SHUTDOWN")
                    self.total_snapshot_duration_tracker.on_snapshot_begin(now_ns)
            elif toggle_state is ClusterControlToggle.ABORT:
                position = self.log_publisher.position()
                self.cluster_termination = ClusterTermination(now_ns + self.ctx.termination_timeout_ns)
                self.cluster_termination.termination_position(
                    self.ctx.counted_error_handler, self.consensus_publisher, self.active_members, self.this_member,
                    self.leadership_term_id, position)
                self.termination_position = position
                self.termination_leadership_term_id = self.leadership_term_id
                if self.service_count > 0:
                    self.service_proxy.termination_position(position, True, self.ctx.counted_error_handler)
                else:
                    self.cluster_termination.on_services_terminated()
                self.set_state(State.TERMINATING, "ClusterControl.ABORT")
            else:
                return 0
            return 1
        if state is State.SNAPSHOT:
            if self.service_count == 0 and self.log_publisher.position() <= self.commit_position.get():
                self._snapshot_on_service_ack(self.commit_position.get(), self.cluster_clock.time(),
                                              EMPTY_SERVICE_ACKS)
        elif state is State.SUSPENDED:
            if ClusterControlToggle.get(toggle) is ClusterControlToggle.RESUME:
                if self._append_action(ClusterAction.RESUME, CLUSTER_ACTION_FLAGS_DEFAULT):
                    self._offer_position_and_previous_state(self.log_publisher.position(), state)
                    self.set_state(State.ACTIVE, "ClusterControl.RESUME")
                    ClusterControlToggle.reset(toggle)
                return 1
        return 0

    def _offer_position_and_previous_state(self, position: int, state: State) -> None:
        self.uncommitted_previous_state.append((position, state))

    def _append_action(self, action: int, flags: int) -> bool:
        return bool(self.log_publisher.append_cluster_action(self.leadership_term_id, self.cluster_clock.time(),
                                                             action, flags))

    def _capture_service_ack(self, log_position: int, ack_id: int, relevant_id: int, service_id: int) -> None:
        if not 0 <= service_id < self.service_count:
            raise ClusterError(f"ack from unknown serviceId={service_id} (serviceCount={self.service_count})")
        if ack_id == 0 and self.service_client_ids[service_id] != NULL_VALUE:
            raise ClusterError(f"initial ack already received from service: possible duplicate serviceId={service_id}")
        self.service_ack_queues[service_id].append(ServiceAck(ack_id, log_position, relevant_id))

    def _try_create_append_position(self, log_session_id: int) -> bool:
        counters = self.aeron.counters_reader
        counter_id = RecordingPos.find_counter_id_by_session(counters, log_session_id, self.archive.archive_id)
        if counter_id == NULL_COUNTER_ID:
            return False
        registration_id = counters.get_counter_registration_id(counter_id)
        if registration_id == 0:
            return False
        recording_id = RecordingPos.get_recording_id(counters, counter_id)
        if recording_id == RecordingPos.NULL_RECORDING_ID:
            return False
        self.set_log_recording_id(recording_id)
        self.append_position = counter_id
        self._append_position_registration_id = registration_id
        return True

    def _append_position_value(self) -> int:
        # Aeron's ReadableCounter.get of the log recording's position counter
        return int(self.aeron.counters_reader.get_counter_value(self.append_position))

    def _update_follower_position_now(self, now_ns: int) -> int:
        recorded_position = self._append_position_value() if self.append_position is not None \
            else self.log_recording_stop_position
        return self._update_follower_position(self.leader_member.publication, now_ns, self.leadership_term_id,
                                              recorded_position, APPEND_POSITION_FLAG_NONE)

    def _update_follower_position(self, publication: Any, now_ns: int, leadership_term_id: int,
                                  append_position: int, flags: int) -> int:
        position = max(append_position, self.last_append_position)
        if position > self.last_append_position or \
                now_ns >= self.time_of_last_append_position_send_ns + self.leader_heartbeat_interval_ns:
            if self.consensus_publisher.append_position(publication, leadership_term_id, position, self.member_id,
                                                        flags):
                if position > self.last_append_position:
                    if event_log.STEPS:
                        event_log.log_event(f"member-{self.member_id}", "APPEND_POSITION_SENT", str(position))
                    self.last_append_position = position
                    self.time_of_last_append_position_update_ns = now_ns
                self.time_of_last_append_position_send_ns = now_ns
                return 1
        return 0

    # -- recovery and snapshots ------------------------------------------------------------------------------

    def _recover_from_snapshot_and_log(self) -> Any:
        plan = self.recording_log.create_recovery_plan(self.archive, self.service_count, self.log_recording_id)
        if plan.log is not None:
            self.set_log_recording_id(plan.log.recording_id)
        counter = self._add_recovery_state_counter(plan)
        try:
            if plan.snapshots:
                self._load_snapshot(plan.snapshots[0])
            self.idle_strategy.reset()
            while not ServiceAck.has_reached(self.expected_ack_position, self.service_ack_id, self.service_ack_queues):
                self.idle(self.consensus_module_adapter.poll())
            acks = ServiceAck.poll_service_acks(self.service_ack_queues)
            if not ServiceAck.are_all_relevant_ids_non_null("failed to start clustered service", acks,
                                                            self.ctx.counted_error_handler):
                raise AgentTerminationError("failed to start clustered service(s)")
            for i, ack in enumerate(acks):
                self.service_client_ids[i] = ack.relevant_id
            self.service_ack_id += 1
        finally:
            counter.close()
        return plan

    def _add_recovery_state_counter(self, plan: Any) -> Any:
        if plan.snapshots:
            snapshot = plan.snapshots[0]
            service_ids = [NULL_VALUE] * (len(plan.snapshots) - 1)
            for service_snapshot in plan.snapshots[1:]:
                service_ids[service_snapshot.service_id] = service_snapshot.recording_id
            return RecoveryState.allocate(self.aeron, snapshot.leadership_term_id, snapshot.log_position,
                                          snapshot.timestamp, self.ctx.cluster_id, *service_ids)
        return RecoveryState.allocate(self.aeron, self.leadership_term_id, 0, 0, self.ctx.cluster_id)

    def _load_snapshot(self, snapshot: Any) -> None:
        ctx = self.ctx
        channel, stream_id = ctx.replay_channel, ctx.replay_stream_id
        session_id = to_int32(self.archive.start_replay(snapshot.recording_id, channel, stream_id, 0, NULL_LENGTH))
        subscription = self.aeron.add_subscription(add_session_id(channel, session_id), stream_id)
        try:
            self.idle_strategy.reset()
            image = subscription.image_by_session_id(session_id)
            while image is None:
                self.idle()
                image = subscription.image_by_session_id(session_id)
            adapter = ConsensusModuleSnapshotAdapter(image, self)
            self.idle_strategy.reset()
            while True:
                fragments = adapter.poll()
                if adapter.is_done:
                    break
                if fragments == 0:
                    self.poll_archive_events()
                    if image.is_closed:
                        raise ClusterError(f"snapshot ended unexpectedly: {image}")
                self.idle(fragments)
            for tracker in self.pending_service_message_trackers:
                tracker.verify()
                tracker.reset()
        finally:
            subscription.close()
        self.timer_service.current_time(self.cluster_clock.time())
        self.commit_position.set_ordered(snapshot.log_position)
        self.set_leadership_term_id(snapshot.leadership_term_id)
        self.expected_ack_position = snapshot.log_position

    def _snapshot_on_service_ack(self, log_position: int, timestamp: int, acks: Any) -> None:
        if ServiceAck.are_all_relevant_ids_non_null("failed to take snapshot", acks, self.ctx.counted_error_handler):
            try:
                self._take_snapshot(timestamp, log_position, acks)
            except Exception as ex:
                self.ctx.counted_error_handler(ClusterError(f"failed to take snapshot: {ex}"))
                if isinstance(ex, AgentTerminationError) or (
                        isinstance(ex, ArchiveError) and ex.code == ArchiveErrorCode.STORAGE_SPACE):
                    self._unexpected_termination(str(ex))
        self.session_manager.update_time_of_last_activity()
        if self.cluster_termination is not None:
            if self.service_count > 0:
                self.service_proxy.termination_position(self.termination_position, True,
                                                        self.ctx.counted_error_handler)
            else:
                self.cluster_termination.on_services_terminated()
            self.cluster_termination.deadline_ns = self.cluster_clock.time_nanos() + self.ctx.termination_timeout_ns
            self.set_state(State.TERMINATING, "null != clusterTermination")
        else:
            self.set_state(State.ACTIVE, "snapshot complete")
            if self.role is Role.LEADER:
                ClusterControlToggle.reset(self.control_toggle)

    def _take_snapshot(self, timestamp: int, log_position: int, acks: Any) -> None:
        ctx = self.ctx
        publication = self.aeron.add_exclusive_publication(ctx.snapshot_channel, ctx.snapshot_stream_id)
        try:
            channel = add_session_id(ctx.snapshot_channel, publication.session_id)
            self.archive.start_recording(channel, ctx.snapshot_stream_id, SourceLocation.LOCAL, True)
            counters = self.aeron.counters_reader
            counter_id = self._await_recording_counter(counters, publication.session_id)
            recording_id = RecordingPos.get_recording_id(counters, counter_id)
            self._snapshot_state(publication, log_position, self.leadership_term_id)
            self._await_recording_complete(recording_id, publication.position, counters, counter_id)
        finally:
            publication.close()
        term_base_log_position = self.recording_log.get_term_entry(self.leadership_term_id).term_base_log_position
        for service_id in range(len(acks) - 1, -1, -1):
            self.recording_log.append_snapshot(acks[service_id].relevant_id, self.leadership_term_id,
                                               term_base_log_position, log_position, timestamp, service_id)
        self.recording_log.append_snapshot(recording_id, self.leadership_term_id, term_base_log_position,
                                           log_position, timestamp, SERVICE_ID)
        self.recording_log.force(ctx.file_sync_level)
        self.recovery_plan = self.recording_log.create_recovery_plan(self.archive, self.service_count, NULL_VALUE)
        self.total_snapshot_duration_tracker.on_snapshot_end(self.cluster_clock.time_nanos())
        ctx.snapshot_counter.increment_ordered()

    def _await_recording_complete(self, recording_id: int, position: int, counters: Any, counter_id: int) -> None:
        self.idle_strategy.reset()
        while counters.get_counter_value(counter_id) < position:
            self.idle()
            if not RecordingPos.is_active(counters, counter_id, recording_id):
                raise ClusterError(f"recording has stopped unexpectedly: {recording_id}")

    def _await_recording_counter(self, counters: Any, session_id: int) -> int:
        self.idle_strategy.reset()
        counter_id = RecordingPos.find_counter_id_by_session(counters, session_id, self.archive.archive_id)
        while counter_id == NULL_COUNTER_ID:
            self.idle()
            counter_id = RecordingPos.find_counter_id_by_session(counters, session_id, self.archive.archive_id)
        return counter_id

    def _snapshot_state(self, publication: Any, log_position: int, leadership_term_id: int) -> None:
        ctx = self.ctx
        taker = ConsensusModuleSnapshotTaker(publication, self.idle_strategy, self.aeron_client_invoker)
        taker.mark_begin(SNAPSHOT_TYPE_ID, log_position, leadership_term_id, 0, self.cluster_time_unit,
                         ctx.app_version)
        trackers = self.pending_service_message_trackers
        if trackers:
            first = trackers[0]
            taker.snapshot_consensus_module_state(self.session_manager.next_committed_session_id,
                                                  first.next_service_session_id, first.log_service_session_id,
                                                  first.size())
        else:
            taker.snapshot_consensus_module_state(self.session_manager.next_committed_session_id, 0, 0, 0)
        self.session_manager.snapshot_sessions(taker)
        self.timer_service.snapshot(taker.snapshot_timer)
        for tracker in trackers:
            taker.snapshot_tracker(tracker, ctx.counted_error_handler)
        taker.mark_end(SNAPSHOT_TYPE_ID, log_position, leadership_term_id, 0, self.cluster_time_unit,
                       ctx.app_version)

    # -- uncommitted entries ---------------------------------------------------------------------------------

    def _sweep_uncommitted_entries_to(self, commit_position: int) -> None:
        for tracker in self.pending_service_message_trackers:
            tracker.sweep_leader_messages()
        timers = self.uncommitted_timers
        while timers and timers[0][0] <= commit_position:
            timers.popleft()
        self.session_manager.sweep_uncommitted_sessions(commit_position)
        states = self.uncommitted_previous_state
        while states and states[0][0] <= commit_position:
            states.popleft()

    def _restore_uncommitted_entries(self, commit_position: int) -> None:
        for append_position, correlation_id in self.uncommitted_timers:
            if append_position > commit_position:
                self.timer_service.schedule_timer_for_correlation_id(correlation_id, 0)
        self.uncommitted_timers.clear()
        for tracker in self.pending_service_message_trackers:
            tracker.restore_uncommitted_messages()
        self.session_manager.restore_uncommitted_sessions(commit_position)
        states = self.uncommitted_previous_state
        while states and states[0][0] <= commit_position:
            states.popleft()
        if states:
            _, committed_state = states.popleft()
            if self.state is not State.CLOSED:
                self.set_state(committed_state, "rollback")
        states.clear()

    # -- elections, termination ------------------------------------------------------------------------------

    def _enter_election(self, is_log_end_of_stream: bool, reason: str) -> None:
        if self.election is not None:
            raise ClusterError("election in progress")
        self.set_role(Role.FOLLOWER)
        term_entry = self.recording_log.find_term_entry(self.leadership_term_id)
        term_base_log_position = term_entry.term_base_log_position if term_entry is not None \
            else self.recovery_plan.last_term_base_log_position
        appended_position = self._append_position_value() if self.append_position is not None \
            else max(self.recovery_plan.appended_log_position, self.log_recording_stop_position)
        self.ctx.counted_error_handler(ClusterEvent(reason))
        self.election = Election(False, self.leader_member.id if is_log_end_of_stream else NULL_VALUE,
                                 self.leadership_term_id, term_base_log_position, self.commit_position.get(),
                                 appended_position, self.active_members, self.cluster_member_by_id, self.this_member,
                                 self.consensus_publisher, self.ctx, self)
        self.election.do_work(self.cluster_clock.time_nanos())

    def _close_and_terminate(self) -> None:
        self._try_stop_log_recording()
        self.set_state(State.CLOSED, "expected termination")
        raise ClusterTerminationError(True)

    def _unexpected_termination(self, reason: str) -> None:
        if self.service_count > 0:
            self.service_proxy.termination_position(0, True, self.ctx.counted_error_handler)
        self._try_stop_log_recording()
        self.set_state(State.CLOSED, reason)
        raise ClusterTerminationError(False)

    def _terminate_on_service_ack(self, log_position: int) -> None:
        if self.cluster_termination is not None:
            self.cluster_termination.on_services_terminated()
        self._do_termination(log_position)

    def _do_termination(self, log_position: int) -> None:
        if self.cluster_termination is None:
            if self.termination_leadership_term_id == self.leadership_term_id:
                self.consensus_publisher.termination_ack(self.leader_member.publication, self.leadership_term_id,
                                                         log_position, self.member_id)
            else:
                self.ctx.counted_error_handler(ClusterEvent(
                    "termination ack not sent - different leadership term to request", category=Category.ERROR))
            self.recording_log.commit_log_position(self.leadership_term_id, log_position)
            self._close_and_terminate()
        elif self.cluster_termination.can_terminate(self.active_members, self.cluster_clock.time_nanos()):
            self.recording_log.commit_log_position(self.leadership_term_id, log_position)
            self._close_and_terminate()

    def _try_stop_log_recording(self) -> None:
        self.append_position = None
        archive = self.archive
        if archive is not None and archive.state is ArchiveState.CONNECTED:
            try:
                if self.log_subscription_id != NULL_VALUE:
                    subscription_id, self.log_subscription_id = self.log_subscription_id, NULL_VALUE
                    archive.try_stop_recording_subscription(subscription_id)
                elif self.log_recording_id != NULL_VALUE:
                    archive.try_stop_recording_by_identity(self.log_recording_id)
            except Exception as ex:     # noqa: BLE001 - a warning: the archive may have stopped it already
                self.ctx.counted_error_handler(ClusterEvent(str(ex), category=Category.WARN))

    def _get_last_appended_position(self) -> int:
        self.idle_strategy.reset()
        while True:
            position = self.archive.get_stop_position(self.log_recording_id)
            if position != NULL_POSITION:
                return int(position)
            self.idle()

    def _start_log_recording(self, channel: str, stream_id: int, source_location: int) -> None:
        log_recording_id = self.recording_log.find_last_term_recording_id()
        if log_recording_id == RecordingPos.NULL_RECORDING_ID:
            self.log_subscription_id = self.archive.start_recording(channel, stream_id, source_location, True)
        else:
            self.log_subscription_id = self.archive.extend_recording(log_recording_id, channel, stream_id,
                                                                     source_location, True)

    def _update_member_details(self, new_leader: Any) -> None:
        self.leader_member = new_leader
        for member in self.active_members:
            member.is_leader = member.id == new_leader.id
        self.ingress_endpoints = ClusterMember.ingress_endpoints(self.active_members)

    def _connect_ingress(self) -> None:
        ctx = self.ctx
        uri = parse_channel(ctx.ingress_channel)
        if not uri.has("endpoint"):
            uri.put("endpoint", self.this_member.ingress_endpoint)
        if self.role is not Role.LEADER and _is_multicast(uri):
            return          # followers do not read multicast ingress
        uri.put("rejoin", "false")
        uri.put("reliable", "true")
        subscription = self.aeron.add_subscription(str(uri), ctx.ingress_stream_id, None,
                                                   self._on_unavailable_ingress_image)
        ipc_subscription = None
        if self.role is Role.LEADER and ctx.is_ipc_ingress_allowed:
            ipc_subscription = self.aeron.add_subscription(IPC_CHANNEL, ctx.ingress_stream_id, None,
                                                           self._on_unavailable_ingress_image)
        self.ingress_adapter.connect(subscription, ipc_subscription)

    def _on_unavailable_ingress_image(self, image: Any) -> None:
        if self.role is Role.LEADER and self.state is State.ACTIVE:
            self.session_manager.timeout_on_unavailable_image(image.correlation_id)
        is_ipc = image.subscription.channel.startswith(IPC_CHANNEL)
        self.ingress_adapter.free_session_buffer(image.session_id, is_ipc)

    def on_unavailable_counter(self, counters: Any, registration_id: int, counter_id: int) -> None:
        """A counter went away: a service's Aeron client (the service died), or the log's recording position."""
        if self.state in (State.TERMINATING, State.QUITTING):
            return
        for service_id, client_id in enumerate(self.service_client_ids):
            if registration_id == client_id:
                msg = f"Aeron client in service closed unexpectedly: serviceId={service_id}"
                self.ctx.counted_error_handler(ClusterEvent(msg))
                self.set_state(State.CLOSED, msg)
                return
        if self.append_position is not None and self._append_position_registration_id == registration_id:
            self.append_position = None
            self.log_subscription_id = NULL_VALUE

    def _check_follower_for_consensus_publication(self, follower_member_id: int) -> None:
        follower = self.cluster_member_by_id.get(follower_member_id)
        if follower is not None and follower.publication is None:
            self._add_consensus_publication(follower)

    def _add_consensus_publication(self, member: Any) -> None:
        # ClusterMember.addConsensusPublication: the peer's consensus endpoint, our consensus host as control
        ctx = self.ctx
        if member.consensus_channel is None:
            uri = parse_channel(ctx.consensus_channel)
            uri.put("endpoint", member.consensus_endpoint)
            ClusterMember.set_control_endpoint(uri, ctx.enable_control_on_consensus_channel,
                                               self.this_member.consensus_endpoint)
            member.consensus_channel = str(uri)
        ClusterMember.try_add_publication(member, ctx.consensus_stream_id, self.aeron, ctx.counted_error_handler)

    def _stop_existing_catchup_replay(self, follower: Any) -> None:
        if follower.catchup_replay_session_id != NULL_VALUE:
            if self.archive.archive_proxy.stop_replay(follower.catchup_replay_session_id,
                                                      self.aeron.next_correlation_id(),
                                                      self.archive.control_session_id):
                follower.catchup_replay_session_id = NULL_VALUE
                follower.catchup_replay_correlation_id = NULL_VALUE

    def _refine_response_channel(self, response_channel: str) -> str:
        template = self.response_channel_template
        if template is None:
            return response_channel
        if response_channel.startswith(IPC_CHANNEL):
            return response_channel if self.ctx.is_ipc_ingress_allowed else str(self.ctx.egress_channel)
        uri = parse_channel(response_channel)
        for key, value in template.params.items():
            uri.put(key, value)
        return str(uri)

    def _run_termination_hook(self) -> None:
        try:
            self.ctx.termination_hook()
        except Exception as ex:     # noqa: BLE001 - reported, the agent terminates anyway
            self.ctx.counted_error_handler(ex)

    def __repr__(self) -> str:
        """Aeron's ``toString``."""
        return f"ConsensusModuleAgent{{memberId={self.member_id}, election={self.election!r}}}"


class ClusterTermination:
    """An orderly termination the leader leads (Aeron's ``ClusterTermination``): it tells the followers where the
    log ends, and terminates once its services and every follower acknowledged, or at the deadline."""

    def __init__(self, deadline_ns: int) -> None:
        """Terminate at the latest at ``deadline_ns``."""
        self.deadline_ns = deadline_ns
        self.is_awaiting_services = True

    def can_terminate(self, members: Any, now_ns: int) -> bool:
        """The services stopped, and every follower acked (or the deadline passed)."""
        if self.is_awaiting_services:
            return False
        if all(member.is_leader or member.has_terminated for member in members):
            return True
        return now_ns >= self.deadline_ns

    def on_services_terminated(self) -> None:
        """This member's services stopped."""
        self.is_awaiting_services = False

    def termination_position(self, error_handler: Any, consensus_publisher: Any, members: Any, this_member: Any,
                             leadership_term_id: int, position: int) -> None:
        """TerminationPosition to every follower."""
        for member in members:
            member.has_terminated = False
            if member is not this_member:
                if not consensus_publisher.termination_position(member.publication, leadership_term_id, position):
                    error_handler(ClusterEvent(f"failed to send termination position to member={member.id}"))



def _is_multicast(uri: ChannelUri) -> bool:
    endpoint = uri.get("endpoint")
    if endpoint is None:
        return False
    host = endpoint.rsplit(":", 1)[0].strip("[]")
    try:
        return ipaddress.ip_address(host).is_multicast
    except ValueError:
        return False


def _quietly(action: Any, error_handler: Any) -> None:
    try:
        action()
    except Exception as ex:     # noqa: BLE001 - CloseHelper.close(errorHandler, ...): reported, closing goes on
        error_handler(ex)
