# SPDX-License-Identifier: Apache-2.0
"""``ClusteredServiceAgent``: the agent of a clustered service container, and the :class:`Cluster` its service is
given (Aeron's ``io.aeron.cluster.service.ClusteredServiceAgent``).

It follows the consensus module of its member: on start it finds the commit position counter (type 203) and the
recovery state counter (type 204) of its cluster, loads its snapshot by archive replay when there is one, starts
the service and acks (ServiceAck 0, with its Aeron client id). Then, every duty cycle, it reads the control
channel (JoinLog, ServiceTerminationPosition, requestServiceAck) once a millisecond, and the log image up to the
commit position, dispatching each entry to the service; it takes and records a snapshot when the log asks,
terminates at the termination position, and keeps its mark file's activity timestamp fresh.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.buffer_claim import BufferClaim
from aeron._core.cluster_log import EgressOffer
from aeron._core.codecs import cluster as codecs
from aeron._core.codecs.cluster import CloseReason, ClusterAction, ClusterTimeUnit
from aeron._core.counters import RECORD_ALLOCATED
from aeron._core.logbuffer import HEADER_LENGTH as DATA_HEADER_LENGTH
from aeron._core.logbuffer import MAX_UDP_PAYLOAD_LENGTH
from aeron._core.term_appender import NOT_CONNECTED
from aeron.archive.client import REPLAY_ALL_AND_FOLLOW, AeronArchive, SourceLocation, replay_image_session_id
from aeron.archive.errors import ArchiveErrorCode
from aeron.archive.status.recording_pos import RecordingPos
from aeron.cluster.client.aeron_cluster import SESSION_HEADER_LENGTH
from aeron.cluster.service.bounded_log_adapter import (
    CLUSTER_ACTION_FLAGS_DEFAULT,
    CLUSTER_ACTION_FLAGS_STANDBY_SNAPSHOT,
    BoundedLogAdapter,
)
from aeron.cluster.service.client_session import ClientSession, ContainerClientSession
from aeron.cluster.service.cluster import Cluster, Role
from aeron.cluster.service.cluster_counters import ClusterCounters
from aeron.cluster.service.clustered_service_container import Configuration, Context
from aeron.cluster.service.consensus_module_proxy import ConsensusModuleProxy
from aeron.cluster.service.recovery_state import RecoveryState
from aeron.cluster.service.service_adapter import ServiceAdapter
from aeron.cluster.service.service_snapshot_loader import ServiceSnapshotLoader
from aeron.cluster.service.service_snapshot_taker import ServiceSnapshotTaker
from aeron.common import event_log
from aeron.common.agent import Agent, IdleStrategy
from aeron.common.constants import NULL_VALUE
from aeron.common.channel_uri import ALIAS_PARAM_NAME, SESSION_ID_PARAM_NAME, ChannelUri
from aeron.common.errors import AgentTerminationError, ArchiveError, ClusterError

__all__ = ["ActiveLogEvent", "ClusterTerminationError", "ClusteredServiceAgent"]

NULL_POSITION = NULL_VALUE
NULL_COUNTER_ID = NULL_VALUE
ONE_MILLISECOND_NS = 1_000_000
MARK_FILE_UPDATE_INTERVAL_MS = Configuration.MARK_FILE_UPDATE_INTERVAL_NS // 1_000_000

# which lifecycle callback is running: sending and scheduling are refused from these
LIFECYCLE_CALLBACK_NONE = 0
LIFECYCLE_CALLBACK_ON_START = 1
LIFECYCLE_CALLBACK_ON_TERMINATE = 2
LIFECYCLE_CALLBACK_ON_ROLE_CHANGE = 3
LIFECYCLE_CALLBACK_DO_BACKGROUND_WORK = 4
_LIFECYCLE_NAMES = {LIFECYCLE_CALLBACK_NONE: "none", LIFECYCLE_CALLBACK_ON_START: "onStart",
                    LIFECYCLE_CALLBACK_ON_TERMINATE: "onTerminate", LIFECYCLE_CALLBACK_ON_ROLE_CHANGE: "onRoleChange",
                    LIFECYCLE_CALLBACK_DO_BACKGROUND_WORK: "doBackgroundWork"}


class ClusterTerminationError(AgentTerminationError):
    """The container terminates at the consensus module's request (expected) or because it lost it (Aeron's
    ``ClusterTerminationException``)."""

    def __init__(self, is_expected: bool = True) -> None:
        """``is_expected``: the termination position was reached exactly."""
        self.is_expected = is_expected
        super().__init__("expected termination" if is_expected else "unexpected termination")


class _Interrupted(AgentTerminationError):
    """The container is closing (Java interrupts the agent's thread): an expected end, not reported."""

    is_expected = True


def _is_expected(error: AgentTerminationError) -> bool:
    return bool(getattr(error, "is_expected", False))


class ActiveLogEvent:
    """A JoinLog waiting for the agent to join it (Aeron's ``ActiveLogEvent``)."""

    __slots__ = ("log_position", "max_log_position", "member_id", "session_id", "stream_id", "is_startup", "role",
                 "is_standby", "channel")

    def __init__(self, log_position: int, max_log_position: int, member_id: int, session_id: int, stream_id: int,
                 is_startup: bool, role: Role, is_standby: bool, channel: str) -> None:
        """The JoinLog's fields."""
        self.log_position = log_position
        self.max_log_position = max_log_position
        self.member_id = member_id
        self.session_id = session_id
        self.stream_id = stream_id
        self.is_startup = is_startup
        self.role = role
        self.is_standby = is_standby
        self.channel = channel

    def __repr__(self) -> str:
        """The fields, as Aeron prints them."""
        return (f"ActiveLogEvent{{logPosition={self.log_position}, maxLogPosition={self.max_log_position}, "
                f"memberId={self.member_id}, sessionId={self.session_id}, streamId={self.stream_id}, "
                f"isStartup={self.is_startup}, role={self.role.name}, isStandby={self.is_standby}, "
                f"channel='{self.channel}'}}")


class _ReadableCounter:
    """A counter of another client read by id, closed once its slot is freed or reused (Aeron's
    ``ReadableCounter``; the unavailable counter handler's job is done by checking the slot)."""

    __slots__ = ("counters", "counter_id", "registration_id", "_closed")

    def __init__(self, counters: Any, counter_id: int) -> None:
        self.counters = counters
        self.counter_id = counter_id
        self.registration_id = counters.get_counter_registration_id(counter_id)
        self._closed = False

    def get(self) -> int:
        return int(self.counters.get_counter_value(self.counter_id))

    @property
    def is_closed(self) -> bool:
        if not self._closed and (
                self.counters.get_counter_state(self.counter_id) != RECORD_ALLOCATED or
                self.counters.get_counter_registration_id(self.counter_id) != self.registration_id):
            self._closed = True
        return self._closed

    def close(self) -> None:
        self._closed = True


class ClusteredServiceAgent(Agent, Cluster):
    """Runs a clustered service for its container, and is the service's :class:`Cluster`."""

    def __init__(self, ctx: Context) -> None:
        """An agent for a concluded container context: its control channel publication and subscription are added
        here."""
        assert ctx.aeron is not None and ctx.mark_file is not None
        self.ctx = ctx
        self.mark_file = ctx.mark_file
        self._aeron = ctx.aeron
        self.aeron_agent_invoker = ctx.aeron.conductor_agent_invoker
        self.service = ctx.clustered_service
        self._on_new_leadership_term_event: Callable[..., Any] = getattr(
            self.service, "on_new_leadership_term_event", _ignore)
        self._do_background_work: Callable[[int], int] = getattr(self.service, "do_background_work", _no_work)
        self._idle_strategy = self.bind_idle_strategy(ctx.idle_strategy())
        self.service_id = ctx.service_id
        self.epoch_clock = ctx.epoch_clock
        self.nano_clock = ctx.nano_clock
        assert ctx.duty_cycle_tracker is not None and ctx.snapshot_duration_tracker is not None
        self.duty_cycle_tracker = ctx.duty_cycle_tracker
        self.snapshot_duration_tracker = ctx.snapshot_duration_tracker
        self.subscription_alias = f"log-sc-{ctx.service_id}"

        self.is_abort = False
        self.is_service_active = False
        self._interrupted = False
        self._member_id = NULL_VALUE
        self.ack_id = 0
        self.termination_position = NULL_POSITION
        self.termination_ack_required = True
        self.mark_file_update_deadline_ms = 0
        self.last_slow_tick_ns = 0
        self.time_of_last_update_ns = 0
        self.active_lifecycle_callback = LIFECYCLE_CALLBACK_NONE
        self.standby_snapshot_flags = CLUSTER_ACTION_FLAGS_DEFAULT
        self.commit_position: _ReadableCounter | None = None
        self.active_log_event: ActiveLogEvent | None = None
        self._role = Role.FOLLOWER
        self._time_unit: ClusterTimeUnit | None = None
        self.requested_ack_position = NULL_POSITION

        self.sessions: list[ContainerClientSession] = []
        self.session_by_id: dict[int, ContainerClientSession] = {}
        # the log's dispatcher keeps the log position and cluster time (it sets them for session messages)
        self.log_adapter = BoundedLogAdapter(self, ctx.log_fragment_limit)
        self.log_dispatcher = self.log_adapter.dispatcher
        self._log_position = NULL_POSITION
        self.cluster_time = 0
        # the SessionMessageHeader put before every message this service sends: egress and service messages
        self._header_buffer = bytearray(SESSION_HEADER_LENGTH)
        self._session_header = codecs.SessionMessageHeaderEncoder().wrap_and_apply_header(self._header_buffer, 0)
        # a leader's egress: the header and the message offered in one compiled call (cluster_log.EgressOffer)
        self.egress = EgressOffer(self, self.log_dispatcher, self._header_buffer, Role.LEADER)
        # a followers' claim is mocked over this buffer: the service's code runs unchanged, nothing is sent
        self._message_buffer = AtomicBuffer(bytearray(MAX_UDP_PAYLOAD_LENGTH))

        channel = ctx.control_channel
        self.consensus_module_proxy = ConsensusModuleProxy(
            self._aeron.add_publication(channel, ctx.consensus_module_stream_id))
        self.service_adapter = ServiceAdapter(self._aeron.add_subscription(channel, ctx.service_stream_id), self)

    @property
    def _log_position(self) -> int:
        return int(self.log_dispatcher.log_position)

    @_log_position.setter
    def _log_position(self, position: int) -> None:
        self.log_dispatcher.log_position = position

    @property
    def cluster_time(self) -> int:
        """Cluster time of the entry being processed (also :attr:`time`)."""
        return int(self.log_dispatcher.cluster_time)

    @cluster_time.setter
    def cluster_time(self, timestamp: int) -> None:
        self.log_dispatcher.cluster_time = timestamp

    # -- Agent ------------------------------------------------------------------------------------------------------

    @property
    def role_name(self) -> str:  # type: ignore[override]
        """The service's name (the thread's name)."""
        return str(self.ctx.service_name)

    def on_start(self) -> None:
        """Find the commit position counter, recover the service's state and start it (see the module)."""
        counters = self._aeron.counters_reader
        try:
            self.commit_position = self._await_commit_position_counter(counters, self.ctx.cluster_id)
            self._recover_state(counters)
        except AgentTerminationError as ex:
            # as Agrona's AgentRunner reports whatever ends an agent's start (but a close while waiting)
            if not _is_expected(ex):
                self.handle_error(ex)
            raise
        self.time_of_last_update_ns = self.nano_clock()
        self.is_service_active = True

    def on_close(self) -> None:
        """Terminate the service if it started, close what the agent opened, mark the mark file terminated and close
        the context."""
        errors = self.ctx.counted_error_handler
        assert errors is not None
        if not self.is_abort:
            if self.is_service_active:
                self.is_service_active = False
                try:
                    self.service.on_terminate(self)
                except Exception as ex:
                    errors(ex)
            _close_quietly(self.log_adapter, errors)
            if not self.ctx.owns_aeron_client and not self._aeron.is_closed:
                _close_quietly(self.service_adapter, errors)
                _close_quietly(self.consensus_module_proxy, errors)
                self._disconnect_egress(errors)
        self.mark_file.signal_terminated()
        self.ctx.close()

    def do_work(self) -> int:
        """One duty cycle: the control channel (once a millisecond), the log up to the commit position, and the
        service's background work."""
        work_count = 0
        now_ns = self.nano_clock()
        self.duty_cycle_tracker.report_measurement(now_ns - self.time_of_last_update_ns)
        self.time_of_last_update_ns = now_ns
        try:
            ticked = self._check_for_clock_tick(now_ns)
            if ticked:
                work_count += self._poll_service_adapter()
            if self.log_adapter.image is not None:
                assert self.commit_position is not None
                polled = self.log_adapter.poll(self.commit_position.get())
                work_count += polled
                if polled and event_log.STEPS:
                    event_log.log_event(f"service-{self._member_id}", "LOG_POLLED", str(polled))
                if polled == 0 and self.log_adapter.is_done():
                    self._close_log()
                    work_count += 1
            work_count += self._invoke_background_work(now_ns)
            if work_count == 0 and not ticked:
                # a cycle with nothing to do, within a millisecond of the last tick, polls the control stream too:
                # a parked service woken by the consensus module's JoinLog would otherwise park again with it
                # unread, up to the wake-up park's quiet bound, where Java's backoff parks at most 1 ms
                work_count += self._poll_service_adapter()
        except AgentTerminationError as ex:
            self._run_termination_hook()
            if not _is_expected(ex):        # Agrona's AgentRunner reports an unexpected termination
                self.handle_error(ex)
            raise
        return work_count

    def interrupt(self) -> None:
        """Make the agent's waits end (Java interrupts the agent's thread): the next idle raises
        AgentTerminationError."""
        self._interrupted = True

    # -- Cluster ----------------------------------------------------------------------------------------------------

    @property
    def role(self) -> Role:
        """The member's role."""
        return self._role

    @property
    def member_id(self) -> int:
        """The member's id (-1 until a log was joined)."""
        return self._member_id

    @property
    def aeron(self) -> Any:
        """The container's Aeron client."""
        return self._aeron

    @property
    def context(self) -> Context:
        """The container's context."""
        return self.ctx

    def get_client_session(self, cluster_session_id: int) -> ClientSession | None:
        """The session of ``cluster_session_id``, or None."""
        return self.session_by_id.get(cluster_session_id)

    @property
    def client_sessions(self) -> Sequence[ClientSession]:
        """The open sessions in id order (a read-only tuple)."""
        return tuple(self.sessions)

    def for_each_client_session(self, action: Callable[[ClientSession], Any]) -> None:
        """``action(session)`` for each open session in id order."""
        for session in tuple(self.sessions):
            action(session)

    def close_client_session(self, cluster_session_id: int) -> bool:
        """Ask for a session's close (three attempts); ClusterError for an unknown session."""
        self._check_for_valid_invocation()
        session = self.session_by_id.get(cluster_session_id)
        if session is None:
            raise ClusterError(f"unknown clusterSessionId: {cluster_session_id}")
        if session.is_closing:
            return True
        for attempt in range(3):
            if self.consensus_module_proxy.close_session(cluster_session_id):
                session.mark_closing()
                return True
            if attempt < 2:
                self.idle()
        return False

    @property
    def time_unit(self) -> ClusterTimeUnit | None:
        """The unit of cluster time."""
        return self._time_unit

    @property
    def time(self) -> int:
        """Cluster time of the entry being processed."""
        return self.cluster_time

    @property
    def log_position(self) -> int:
        """The log position after the entry being processed."""
        return self._log_position

    def schedule_timer(self, correlation_id: int, deadline: int) -> bool:
        """ScheduleTimer to the consensus module."""
        self._check_for_valid_invocation()
        return self.consensus_module_proxy.schedule_timer(correlation_id, deadline)

    def cancel_timer(self, correlation_id: int) -> bool:
        """CancelTimer to the consensus module."""
        self._check_for_valid_invocation()
        return self.consensus_module_proxy.cancel_timer(correlation_id)

    def offer(self, buffer: Any, offset: int = 0, length: int = -1) -> int:
        """A service message to the cluster: the session header carries this service's id."""
        self._check_for_valid_invocation()
        self._session_header.cluster_session_id = self.service_id
        return self.consensus_module_proxy.offer(self._header_buffer, _message(buffer, offset, length))

    def offerv(self, vectors: Sequence[Any]) -> int:
        """A service message gathered from ``vectors``."""
        self._check_for_valid_invocation()
        self._session_header.cluster_session_id = self.service_id
        return self.consensus_module_proxy.offerv(self._header_buffer, vectors)

    def try_claim(self, length: int, buffer_claim: BufferClaim) -> int:
        """Claim a service message of ``length`` bytes (after the 32-byte session header)."""
        self._check_for_valid_invocation()
        self._session_header.cluster_session_id = self.service_id
        return self.consensus_module_proxy.try_claim(length + SESSION_HEADER_LENGTH, buffer_claim,
                                                     self._header_buffer)

    @property
    def idle_strategy(self) -> ClusteredServiceAgent:
        """The agent itself: it idles with the container's strategy and keeps the container alive meanwhile."""
        return self

    # -- IdleStrategy -----------------------------------------------------------------------------------------------

    def reset(self) -> None:
        """Reset the idle strategy."""
        self._idle_strategy.reset()

    def idle(self, work_count: int = 0) -> None:
        """Idle when no work was done, and then tick the container's clock and background work."""
        self._idle_strategy.idle(work_count)
        if work_count <= 0:
            self._do_idle_work()

    def _do_idle_work(self) -> None:
        if self._interrupted:
            raise _Interrupted("interrupted")
        now_ns = self.nano_clock()
        self._check_for_clock_tick(now_ns)
        if self.is_service_active:
            self._invoke_background_work(now_ns)

    def bind_idle_strategy(self, idle: IdleStrategy) -> IdleStrategy:
        """``idle``, when a ``wakeup`` one, parked until the consensus module writes to this service's control
        stream or moves the commit position (it signals that stream's bit: ``ConsensusModuleAgent``), or the
        driver writes to this agent's client (docs/wakeup.md). The log is read up to the commit position only, so
        its data alone never needs to wake the service."""
        return self._aeron.bind_agent_idle_strategy(idle, (self.ctx.service_stream_id,), conductor=True)

    # -- from the ServiceAdapter ------------------------------------------------------------------------------------

    def on_join_log(self, log_position: int, max_log_position: int, member_id: int, log_session_id: int,
                    log_stream_id: int, is_startup: bool, role: Role, is_standby: bool, log_channel: str) -> None:
        """JoinLog: remembered, joined at the next clock tick once any current log is done."""
        self.log_adapter.max_log_position = log_position
        self.active_log_event = ActiveLogEvent(log_position, max_log_position, member_id, log_session_id,
                                               log_stream_id, is_startup, role, is_standby, log_channel)

    def on_service_termination_position(self, log_position: int, ack_required: bool) -> None:
        """ServiceTerminationPosition: terminate on reaching ``log_position``."""
        self.termination_position = log_position
        self.termination_ack_required = ack_required

    def on_request_service_ack(self, log_position: int) -> None:
        """requestServiceAck: ack on reaching ``log_position``."""
        self.requested_ack_position = log_position

    # -- from the BoundedLogAdapter (session messages go from its dispatcher to the service) ------------------------

    def on_timer_event(self, log_position: int, correlation_id: int, timestamp: int) -> None:
        """A timer fired."""
        self._log_position = log_position
        self.cluster_time = timestamp
        self.service.on_timer_event(correlation_id, timestamp)

    def on_session_open(self, leadership_term_id: int, log_position: int, cluster_session_id: int, timestamp: int,
                        response_stream_id: int, response_channel: str, encoded_principal: bytes) -> None:
        """A session opened: the service learns of it (a leader's responding service connects its egress first)."""
        self._log_position = log_position
        self.cluster_time = timestamp
        if cluster_session_id in self.session_by_id:
            raise ClusterError(f"clashing open clusterSessionId={cluster_session_id} "
                               f"leadershipTermId={leadership_term_id} logPosition={log_position}")
        session = ContainerClientSession(cluster_session_id, response_stream_id, response_channel, encoded_principal,
                                         self)
        if self._role == Role.LEADER and self.ctx.is_responding_service:
            session.connect(self._aeron)
        self._add_session(session)
        self.service.on_session_open(session, timestamp)

    def on_session_close(self, leadership_term_id: int, log_position: int, cluster_session_id: int, timestamp: int,
                         close_reason: CloseReason) -> None:
        """A session closed; an unknown one is reported as an error and skipped."""
        self._log_position = log_position
        self.cluster_time = timestamp
        session = self.session_by_id.pop(cluster_session_id, None)
        errors = self.ctx.counted_error_handler
        assert errors is not None
        if session is None:
            errors(ClusterError(f"unknown session close: clusterSessionId={cluster_session_id} "
                                f"closeReason={close_reason.name} leadershipTermId={leadership_term_id} "
                                f"logPosition={log_position}"))
            return
        self.sessions.remove(session)
        session.disconnect(errors)
        self.service.on_session_close(session, timestamp, close_reason)

    def on_service_action(self, leadership_term_id: int, log_position: int, timestamp: int, action: ClusterAction,
                          flags: int) -> None:
        """A cluster action in the log: a SNAPSHOT for this kind of member is taken."""
        self._log_position = log_position
        self.cluster_time = timestamp
        self._execute_action(action, log_position, leadership_term_id, flags)

    def on_new_leadership_term_event(self, leadership_term_id: int, log_position: int, timestamp: int,
                                     term_base_log_position: int, leader_member_id: int, log_session_id: int,
                                     time_unit: ClusterTimeUnit, app_version: int) -> None:
        """A new term: its app version must be compatible (else the container terminates); it sets the term of
        outgoing session headers and the time unit."""
        if not self.ctx.app_version_validator(self.ctx.app_version, app_version):
            errors = self.ctx.counted_error_handler
            assert errors is not None
            errors(ClusterError(f"incompatible version: {_version_text(self.ctx.app_version)} "
                                f"log={_version_text(app_version)}"))
            raise AgentTerminationError("incompatible app version")
        self._session_header.leadership_term_id = leadership_term_id
        self._log_position = log_position
        self.cluster_time = timestamp
        self._time_unit = time_unit
        self._on_new_leadership_term_event(leadership_term_id, log_position, timestamp, term_base_log_position,
                                           leader_member_id, log_session_id, time_unit, app_version)

    # -- from the ServiceSnapshotLoader -----------------------------------------------------------------------------

    def add_session(self, cluster_session_id: int, response_stream_id: int, response_channel: str,
                    encoded_principal: bytes) -> None:
        """A session restored from the snapshot."""
        self._add_session(ContainerClientSession(cluster_session_id, response_stream_id, response_channel,
                                                 encoded_principal, self))

    def _add_session(self, session: ContainerClientSession) -> None:
        # ids normally grow, so the session goes at the end; a restored or reordered one is inserted in id order
        self.session_by_id[session.id] = session
        sessions = self.sessions
        index = len(sessions)
        while index > 0 and sessions[index - 1].id > session.id:
            index -= 1
        sessions.insert(index, session)

    def handle_error(self, error: BaseException) -> None:
        """Report an error (counted, to the mark file's error log)."""
        errors = self.ctx.counted_error_handler
        assert errors is not None
        errors(error)

    # -- egress, for ContainerClientSession -------------------------------------------------------------------------

    def offer_egress(self, cluster_session_id: int, publication: Any, buffer: Any, offset: int, length: int) -> int:
        """A message to a client: sent by a leader, mocked elsewhere (ContainerClientSession.offer calls
        :attr:`egress` itself)."""
        return int(self.egress.offer(cluster_session_id, publication, buffer, offset, length))

    def offerv_egress(self, cluster_session_id: int, publication: Any, vectors: Sequence[Any]) -> int:
        """A gathered message to a client."""
        self._check_for_valid_invocation()
        if self._role != Role.LEADER:
            return ClientSession.MOCKED_OFFER
        if publication is None:
            return NOT_CONNECTED
        header = self._session_header
        header.cluster_session_id = cluster_session_id
        header.timestamp = self.cluster_time
        return int(publication.offerv((self._header_buffer, *vectors)))

    def try_claim_egress(self, cluster_session_id: int, publication: Any, length: int,
                         buffer_claim: BufferClaim) -> int:
        """A claim for a message to a client; a follower's claim is over a private buffer."""
        self._check_for_valid_invocation()
        if self._role != Role.LEADER:
            max_payload_length = MAX_UDP_PAYLOAD_LENGTH - DATA_HEADER_LENGTH - SESSION_HEADER_LENGTH
            if length > max_payload_length:
                raise ValueError(f"claim exceeds maxPayloadLength={max_payload_length}, length={length}")
            buffer_claim.wrap(self._message_buffer, 0, DATA_HEADER_LENGTH + SESSION_HEADER_LENGTH + length)
            return ClientSession.MOCKED_OFFER
        if publication is None:
            return NOT_CONNECTED
        position = int(publication.try_claim(SESSION_HEADER_LENGTH + length, buffer_claim))
        if position > 0:
            header = self._session_header
            header.cluster_session_id = cluster_session_id
            header.timestamp = self.cluster_time
            buffer_claim.put_bytes(self._header_buffer, 0)
        return position

    # -- internals --------------------------------------------------------------------------------------------------

    def _set_role(self, new_role: Role) -> None:
        if new_role != self._role:
            self._role = new_role
            self.active_lifecycle_callback = LIFECYCLE_CALLBACK_ON_ROLE_CHANGE
            try:
                self.service.on_role_change(new_role)
            finally:
                self.active_lifecycle_callback = LIFECYCLE_CALLBACK_NONE

    def _recover_state(self, counters: Any) -> None:
        recovery_counter_id = self._await_recovery_counter(counters)
        self._log_position = RecoveryState.get_log_position(counters, recovery_counter_id)
        self.cluster_time = RecoveryState.get_timestamp(counters, recovery_counter_id)
        leadership_term_id = RecoveryState.get_leadership_term_id(counters, recovery_counter_id)
        self._session_header.leadership_term_id = leadership_term_id

        error: Exception | None = None
        snapshot_recording_id = NULL_VALUE
        self.active_lifecycle_callback = LIFECYCLE_CALLBACK_ON_START
        try:
            if leadership_term_id != NULL_VALUE:
                snapshot_recording_id = RecoveryState.get_snapshot_recording_id(counters, recovery_counter_id,
                                                                                self.service_id)
                self._load_snapshot(snapshot_recording_id)
            else:
                self.service.on_start(self, None)
        except Exception as ex:
            error = ex
        finally:
            self.active_lifecycle_callback = LIFECYCLE_CALLBACK_NONE

        ack_id = self.ack_id
        self.ack_id += 1
        relevant_id = self._aeron.client_id if error is None else NULL_VALUE
        while not self.consensus_module_proxy.ack(self._log_position, self.cluster_time, ack_id, relevant_id,
                                                  self.service_id):
            self.idle()
        if error is not None:
            raise AgentTerminationError(
                f"failed to start service={self.service_id} leadershipTermId={leadership_term_id} "
                f"logPosition={self._log_position} clusterTime={self.cluster_time} "
                f"snapshotRecordingId={snapshot_recording_id}") from error

    def _await_recovery_counter(self, counters: Any) -> int:
        self._idle_strategy.reset()
        counter_id = RecoveryState.find_counter_id(counters, self.ctx.cluster_id)
        while counter_id == NULL_COUNTER_ID:
            self.idle()
            counter_id = RecoveryState.find_counter_id(counters, self.ctx.cluster_id)
        return counter_id

    def _close_log(self) -> None:
        image = self.log_adapter.image
        assert image is not None
        self._log_position = max(image.position, self._log_position)
        errors = self.ctx.counted_error_handler
        assert errors is not None
        _close_quietly(self.log_adapter, errors)
        self._disconnect_egress(errors)
        self._set_role(Role.FOLLOWER)

    def _disconnect_egress(self, errors: Callable[[BaseException], Any]) -> None:
        for session in self.sessions:
            session.disconnect(errors)

    def _join_active_log(self, active_log: ActiveLogEvent) -> None:
        errors = self.ctx.counted_error_handler
        assert errors is not None
        if active_log.role != Role.LEADER:
            self._disconnect_egress(errors)
        self.standby_snapshot_flags = (CLUSTER_ACTION_FLAGS_STANDBY_SNAPSHOT if active_log.is_standby
                                       else CLUSTER_ACTION_FLAGS_DEFAULT)
        uri = ChannelUri.parse(active_log.channel)
        uri.put(ALIAS_PARAM_NAME, self.subscription_alias)
        log_subscription: Any = self._aeron.add_subscription(str(uri), active_log.stream_id)
        try:
            image = self._await_image(active_log.session_id, log_subscription)
            if image.join_position != self._log_position:
                raise ClusterError(f"Cluster log must be contiguous for joining image: "
                                   f"expectedPosition={self._log_position} joinPosition={image.join_position}")
            if active_log.log_position != self._log_position:
                raise ClusterError(f"Cluster log must be contiguous for active log event: "
                                   f"expectedPosition={self._log_position} eventPosition={active_log.log_position}")
            self.log_adapter.image = image
            self.log_adapter.max_log_position = active_log.max_log_position
            log_subscription = None
            ack_id = self.ack_id
            self.ack_id += 1
            while not self.consensus_module_proxy.ack(active_log.log_position, self.cluster_time, ack_id,
                                                      NULL_VALUE, self.service_id):
                self.idle()
        finally:
            if log_subscription is not None:
                try:
                    log_subscription.close()
                except Exception:
                    pass            # the join already failed; that is the error reported
        self._member_id = active_log.member_id
        self.mark_file.member_id(self._member_id)
        if active_log.role == Role.LEADER:
            for session in self.sessions:
                if self.ctx.is_responding_service and not active_log.is_startup:
                    session.connect(self._aeron)
                session.reset_closing()
        self._set_role(active_log.role)

    def _await_image(self, session_id: int, subscription: Any) -> Any:
        self._idle_strategy.reset()
        while True:
            image = subscription.image_by_session_id(session_id)
            if image is not None:
                return image
            self.idle()

    def _await_commit_position_counter(self, counters: Any, cluster_id: int) -> _ReadableCounter:
        self._idle_strategy.reset()
        counter_id = ClusterCounters.find(counters, Configuration.COMMIT_POSITION_TYPE_ID, cluster_id)
        while counter_id == NULL_COUNTER_ID:
            self.idle()
            counter_id = ClusterCounters.find(counters, Configuration.COMMIT_POSITION_TYPE_ID, cluster_id)
        return _ReadableCounter(counters, counter_id)

    def _load_snapshot(self, recording_id: int) -> None:
        with AeronArchive.connect(self.ctx.new_archive_context()) as archive:
            channel = self.ctx.replay_channel
            stream_id = self.ctx.replay_stream_id
            session_id = replay_image_session_id(archive.start_replay(recording_id, channel, stream_id, 0,
                                                                      REPLAY_ALL_AND_FOLLOW))
            uri = ChannelUri.parse(channel)
            uri.put(SESSION_ID_PARAM_NAME, str(session_id))
            with self._aeron.add_subscription(str(uri), stream_id) as subscription:
                image = self._await_image(session_id, subscription)
                self._load_state(image, archive)
                self.service.on_start(self, image)

    def _load_state(self, image: Any, archive: AeronArchive) -> None:
        loader = ServiceSnapshotLoader(image, self)
        while True:
            fragments = loader.poll()
            if loader.is_done:
                break
            if fragments == 0:
                archive.check_for_error_response()
                if image.is_closed:
                    raise ClusterError(f"snapshot ended unexpectedly: {image}")
            self.idle(fragments)
        if not self.ctx.app_version_validator(self.ctx.app_version, loader.app_version):
            raise ClusterError(f"incompatible app version: {_version_text(self.ctx.app_version)} "
                               f"snapshot={_version_text(loader.app_version)}")
        self._time_unit = loader.time_unit

    def _on_take_snapshot(self, log_position: int, leadership_term_id: int) -> int:
        try:
            with AeronArchive.connect(self.ctx.new_archive_context()) as archive, \
                    self._aeron.add_exclusive_publication(self.ctx.snapshot_channel,
                                                          self.ctx.snapshot_stream_id) as publication:
                uri = ChannelUri.parse(self.ctx.snapshot_channel)
                uri.put(SESSION_ID_PARAM_NAME, str(publication.session_id))
                archive.start_recording(str(uri), self.ctx.snapshot_stream_id, SourceLocation.LOCAL, auto_stop=True)
                counters = self._aeron.counters_reader
                counter_id = self._await_recording_counter(publication.session_id, counters, archive)
                recording_id = RecordingPos.get_recording_id(counters, counter_id)

                self._snapshot_state(publication, log_position, leadership_term_id)
                self._check_for_clock_tick(self.nano_clock())
                archive.check_for_error_response()
                self.service.on_take_snapshot(publication)
                self._await_recording_complete(recording_id, publication.position, counters, counter_id, archive)
                return recording_id
        except ArchiveError as ex:
            if ex.code == ArchiveErrorCode.STORAGE_SPACE:
                raise AgentTerminationError(str(ex)) from ex
            raise

    def _await_recording_complete(self, recording_id: int, position: int, counters: Any, counter_id: int,
                                  archive: AeronArchive) -> None:
        self._idle_strategy.reset()
        while counters.get_counter_value(counter_id) < position:
            self.idle()
            archive.check_for_error_response()
            if not RecordingPos.is_active(counters, counter_id, recording_id):
                raise ClusterError(f"recording stopped unexpectedly: {recording_id}")

    def _snapshot_state(self, publication: Any, log_position: int, leadership_term_id: int) -> None:
        taker = ServiceSnapshotTaker(publication, self._idle_strategy, self.aeron_agent_invoker)
        taker.mark_begin(Configuration.SNAPSHOT_TYPE_ID, log_position, leadership_term_id, 0, self._time_unit,
                         self.ctx.app_version)
        for session in self.sessions:
            taker.snapshot_session(session)
        taker.mark_end(Configuration.SNAPSHOT_TYPE_ID, log_position, leadership_term_id, 0, self._time_unit,
                       self.ctx.app_version)

    def _execute_action(self, action: ClusterAction, log_position: int, leadership_term_id: int, flags: int) -> None:
        if action != ClusterAction.SNAPSHOT or not self._should_snapshot(flags):
            return
        recording_id = NULL_VALUE
        error: Exception | None = None
        tracker = self.snapshot_duration_tracker
        tracker.on_snapshot_begin(self.nano_clock())
        try:
            recording_id = self._on_take_snapshot(log_position, leadership_term_id)
        except Exception as ex:
            error = ex
        finally:
            tracker.on_snapshot_end(self.nano_clock())
        ack_id = self.ack_id
        self.ack_id += 1
        while not self.consensus_module_proxy.ack(log_position, self.cluster_time, ack_id, recording_id,
                                                  self.service_id):
            self.idle()
        if error is not None:
            raise error

    def _should_snapshot(self, flags: int) -> bool:
        return flags == CLUSTER_ACTION_FLAGS_DEFAULT or (flags & self.standby_snapshot_flags) != 0

    def _await_recording_counter(self, session_id: int, counters: Any, archive: AeronArchive) -> int:
        self._idle_strategy.reset()
        archive_id = archive.archive_id
        counter_id = RecordingPos.find_counter_id_by_session(counters, session_id, archive_id)
        while counter_id == NULL_COUNTER_ID:
            self.idle()
            archive.check_for_error_response()
            counter_id = RecordingPos.find_counter_id_by_session(counters, session_id, archive_id)
        return counter_id

    def _check_for_clock_tick(self, now_ns: int) -> bool:
        if self.is_abort or self._aeron.is_closed:
            self.is_abort = True
            raise AgentTerminationError("unexpected Aeron close")
        if now_ns - self.last_slow_tick_ns > ONE_MILLISECOND_NS:
            self.last_slow_tick_ns = now_ns
            invoker = self.aeron_agent_invoker
            if invoker is not None:
                invoker.invoke()
                if self.is_abort or self._aeron.is_closed:
                    self.is_abort = True
                    raise AgentTerminationError("unexpected Aeron close")
            commit_position = self.commit_position
            if commit_position is not None and commit_position.is_closed:
                assert self.ctx.error_log is not None
                self.ctx.error_log.record(ClusterError("commit-pos counter unexpectedly closed, terminating"))
                raise ClusterTerminationError(True)
            now_ms = self.epoch_clock()
            if now_ms >= self.mark_file_update_deadline_ms:
                self.mark_file_update_deadline_ms = now_ms + MARK_FILE_UPDATE_INTERVAL_MS
                self.mark_file.update_activity_timestamp(now_ms)
            return True
        return False

    def _poll_service_adapter(self) -> int:
        work_count = self.service_adapter.poll()
        if self.active_log_event is not None and self.log_adapter.image is None:
            event, self.active_log_event = self.active_log_event, None
            self._join_active_log(event)
        if self.termination_position != NULL_POSITION and self._log_position >= self.termination_position:
            if self._log_position > self.termination_position:
                self.handle_error(ClusterError(f"service terminate: logPosition={self._log_position} > "
                                               f"terminationPosition={self.termination_position}"))
            self._terminate(self._log_position == self.termination_position, self.termination_ack_required)
        if self.requested_ack_position != NULL_POSITION and self._log_position >= self.requested_ack_position:
            if self._log_position > self.requested_ack_position:
                self.handle_error(ClusterError(f"invalid ack request: logPosition={self._log_position} > "
                                               f"requestedAckPosition={self.requested_ack_position}"))
            ack_id = self.ack_id
            self.ack_id += 1
            while not self.consensus_module_proxy.ack(self._log_position, self.cluster_time, ack_id, NULL_VALUE,
                                                      self.service_id):
                self.idle()
            self.requested_ack_position = NULL_POSITION
        return work_count

    def _terminate(self, is_termination_expected: bool, termination_ack_required: bool) -> None:
        self.is_service_active = False
        self.active_lifecycle_callback = LIFECYCLE_CALLBACK_ON_TERMINATE
        try:
            self.service.on_terminate(self)
        except Exception as ex:
            self.handle_error(ex)
        finally:
            self.active_lifecycle_callback = LIFECYCLE_CALLBACK_NONE
        if termination_ack_required:
            try:
                ack_id = self.ack_id
                self.ack_id += 1
                attempts = 5
                while not self.consensus_module_proxy.ack(self._log_position, self.cluster_time, ack_id, NULL_VALUE,
                                                          self.service_id):
                    attempts -= 1
                    if attempts == 0:
                        break
                    self.idle()
            except Exception as ex:
                self.handle_error(ex)
        self.termination_position = NULL_VALUE
        raise ClusterTerminationError(is_termination_expected)

    def _check_for_valid_invocation(self) -> None:
        if self.active_lifecycle_callback != LIFECYCLE_CALLBACK_NONE:
            raise ClusterError(f"sending messages or scheduling timers is not allowed from "
                               f"{_LIFECYCLE_NAMES.get(self.active_lifecycle_callback, 'unknown')}")

    def _invoke_background_work(self, now_ns: int) -> int:
        self.active_lifecycle_callback = LIFECYCLE_CALLBACK_DO_BACKGROUND_WORK
        try:
            return self._do_background_work(now_ns)
        finally:
            self.active_lifecycle_callback = LIFECYCLE_CALLBACK_NONE

    def _run_termination_hook(self) -> None:
        try:
            hook = self.ctx.termination_hook
            if hook is not None:
                hook()
        except Exception as ex:
            self.handle_error(ex)


def _ignore(*args: Any) -> None:
    pass


def _no_work(now_ns: int) -> int:
    return 0


def _message(buffer: Any, offset: int, length: int) -> Any:
    """``buffer[offset:offset + length]`` without a copy (the buffer itself when whole)."""
    if offset == 0 and length < 0:
        return buffer
    view = memoryview(buffer)
    return view[offset:] if length < 0 else view[offset:offset + length]


def _version_text(version: int) -> str:
    return f"{(version >> 16) & 0xFF}.{(version >> 8) & 0xFF}.{version & 0xFF}"


def _close_quietly(closeable: Any, errors: Callable[[BaseException], Any]) -> None:
    try:
        closeable.close()
    except Exception as ex:
        errors(ex)
