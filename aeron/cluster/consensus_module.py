# SPDX-License-Identifier: Apache-2.0
"""The consensus module (Aeron's ``ConsensusModule``): its ``Context``, ``State`` and ``Configuration``.

``Configuration`` holds the protocol versions, counter type ids, and every ``aeron.cluster.*`` property the
consensus module reads, with its default, its ``AERON_CLUSTER_*`` environment variable and its parser
(``Configuration.SETTINGS``; the constants keep Aeron's names: ``LOG_CHANNEL_PROP_NAME``, ``LOG_CHANNEL_DEFAULT``,
...). The settings the consensus module shares with the service container (cluster id and directories, control and
snapshot channels, stream ids) are ``ClusteredServiceContainer.Configuration``'s, in
:mod:`aeron.cluster.service.clustered_service_container`.

A :class:`Context` is made from those properties (``Context(properties, environ=...)``: defaults, then
``AERON_CLUSTER_*`` environment variables, then the properties, then keyword attributes), and ``conclude()`` does
what Aeron's does before the consensus module starts: checks the settings (ConfigurationError naming the
property), creates the cluster directory, the mark file (``cluster-mark.dat``, and ``cluster-mark.lnk`` when it
lives elsewhere), ``node-state.dat`` and ``recording.log``, connects an Aeron client (its conductor run by the
consensus module's thread) and allocates the cluster's counters with Aeron's labels: state (200), role (201),
control toggle (202), commit position (203), snapshot count (205), election state (207), errors (212), timed out
clients (213), node control toggle (233), election count (238) and leadership term id (239).

``ConsensusModule.launch(ctx)`` concludes the context and runs a
:class:`~aeron.cluster.consensus_module_agent.ConsensusModuleAgent` on its own thread, or, with
``use_agent_invoker``, on the caller's (``ConsensusModule.conductor_agent_invoker``).
"""
from __future__ import annotations

import dataclasses
import enum
import pathlib
import random
import shutil
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from aeron._core.codecs.cluster_mark import ClusterComponentType
from aeron._core.counters import CountersReader
from aeron.archive.client import Context as ArchiveContext
from aeron.archive.configuration import (CONTROL_RESPONSE_STREAM_ID_DEFAULT, LOCAL_CONTROL_CHANNEL_DEFAULT,
                                         LOCAL_CONTROL_STREAM_ID_DEFAULT)
from aeron.client.aeron import Aeron
from aeron.client.context import Context as AeronContext
from aeron.cluster._channels import add_alias_if_absent, parse_channel
from aeron.cluster.cluster_clocks import cluster_clock_from_name
from aeron.cluster.egress_publisher import EgressPublisher
from aeron.cluster.log_publisher import LogPublisher
from aeron.cluster.node_state_file import NodeStateFile
from aeron.cluster.recording_log import RecordingLog
from aeron.cluster.security import authorisation_service_from_name
from aeron.cluster.service.cluster_counters import (
    CLUSTER_CLIENT_TIMEOUT_COUNT_TYPE_ID,
    CLUSTER_CONSENSUS_MODULE_ERROR_COUNT_TYPE_ID,
    CLUSTER_CONSENSUS_MODULE_STATE_TYPE_ID,
    CLUSTER_CONTROL_TOGGLE_TYPE_ID,
    CLUSTER_CYCLE_TIME_THRESHOLD_EXCEEDED_TYPE_ID,
    CLUSTER_ELECTION_COUNT_TYPE_ID,
    CLUSTER_ELECTION_STATE_TYPE_ID,
    CLUSTER_INVALID_REQUEST_COUNT_TYPE_ID,
    CLUSTER_LEADERSHIP_TERM_ID_TYPE_ID,
    CLUSTER_MAX_CYCLE_TIME_TYPE_ID,
    CLUSTER_RECOVERY_STATE_TYPE_ID,
    CLUSTER_SNAPSHOT_COUNTER_TYPE_ID,
    CLUSTER_STANDBY_SNAPSHOT_COUNTER_TYPE_ID,
    CLUSTER_TOTAL_MAX_SNAPSHOT_DURATION_TYPE_ID,
    CLUSTER_TOTAL_SNAPSHOT_DURATION_THRESHOLD_EXCEEDED_TYPE_ID,
    NODE_CONTROL_TOGGLE_TYPE_ID,
    ClusterCounters,
)
from aeron.cluster.service.cluster_mark_file import ClusterMarkFile
from aeron.cluster.service.clustered_service_container import Configuration as ContainerConfiguration
from aeron.cluster.timer_service import timer_service_supplier_from_name
from aeron.common.agent import AgentInvoker, AgentRunner, BackoffIdleStrategy, IdleStrategy, idle_strategy_from_name
from aeron.common.errors import ClusterError, ConfigurationError, IllegalStateError
from aeron.common.mark_file import ensure_mark_file_link
from aeron.common.security import authenticator_from_name
from aeron.common.settings import (Setting, SettingsContext, SettingsTable, parse_bool, parse_duration_ns,
                                   parse_int, parse_size)
from aeron.common.constants import NULL_VALUE
from aeron.common.version import __version__

__all__ = ["ConsensusModule", "Configuration", "Context", "State"]

_SECOND_NS = 1_000_000_000
_MILLI_NS = 1_000_000


class State(enum.IntEnum):
    """The consensus module's state, the value of its state counter (type 200)."""

    INIT = 0
    ACTIVE = 1
    SUSPENDED = 2
    SNAPSHOT = 3
    QUITTING = 4
    TERMINATING = 5
    CLOSED = 6

    @classmethod
    def get(cls, code: int) -> State:
        """The state of a counter value (ClusterError for an invalid one)."""
        if not 0 <= code < len(cls):
            raise ClusterError(f"invalid state counter code: {code}")
        return cls(code)

    @classmethod
    def find(cls, counters: CountersReader, cluster_id: int) -> State | None:
        """The state a consensus module of ``cluster_id`` shows in these counters, or None when there is none."""
        counter_id = ClusterCounters.find(counters, CLUSTER_CONSENSUS_MODULE_STATE_TYPE_ID, cluster_id)
        if counter_id == -1:
            return None
        return cls.get(counters.get_counter_value(counter_id))


class Configuration(SettingsTable):
    """``ConsensusModule.Configuration``: the consensus module's constants and properties."""

    # the member-to-member consensus protocol, sent in CanvassPosition and RequestVote
    PROTOCOL_MAJOR_VERSION = 1
    PROTOCOL_MINOR_VERSION = 0
    PROTOCOL_PATCH_VERSION = 0
    PROTOCOL_SEMANTIC_VERSION = (PROTOCOL_MAJOR_VERSION << 16) | (PROTOCOL_MINOR_VERSION << 8) | PROTOCOL_PATCH_VERSION
    SNAPSHOT_TYPE_ID = 1                # typeId of the consensus module's SnapshotMarker
    SERVICE_ID = -1                     # the consensus module's service id in recording.log

    CONSENSUS_MODULE_STATE_TYPE_ID = CLUSTER_CONSENSUS_MODULE_STATE_TYPE_ID
    CLUSTER_NODE_ROLE_TYPE_ID = ContainerConfiguration.CLUSTER_NODE_ROLE_TYPE_ID
    CONTROL_TOGGLE_TYPE_ID = CLUSTER_CONTROL_TOGGLE_TYPE_ID
    COMMIT_POSITION_TYPE_ID = ContainerConfiguration.COMMIT_POSITION_TYPE_ID
    RECOVERY_STATE_TYPE_ID = CLUSTER_RECOVERY_STATE_TYPE_ID
    SNAPSHOT_COUNTER_TYPE_ID = CLUSTER_SNAPSHOT_COUNTER_TYPE_ID
    ELECTION_STATE_TYPE_ID = CLUSTER_ELECTION_STATE_TYPE_ID
    CONSENSUS_MODULE_ERROR_COUNT_TYPE_ID = CLUSTER_CONSENSUS_MODULE_ERROR_COUNT_TYPE_ID
    CLUSTER_CLIENT_TIMEOUT_COUNT_TYPE_ID = CLUSTER_CLIENT_TIMEOUT_COUNT_TYPE_ID
    CLUSTER_INVALID_REQUEST_COUNT_TYPE_ID = CLUSTER_INVALID_REQUEST_COUNT_TYPE_ID
    CLUSTER_ELECTION_COUNT_TYPE_ID = CLUSTER_ELECTION_COUNT_TYPE_ID
    CLUSTER_LEADERSHIP_TERM_ID_TYPE_ID = CLUSTER_LEADERSHIP_TERM_ID_TYPE_ID

    SESSION_LIMIT_MSG = "concurrent session limit"
    SESSION_REJECTED_MSG = "session failed authentication"
    SESSION_INVALID_VERSION_MSG = "invalid client version"

    CLUSTER_INGRESS_FRAGMENT_LIMIT_PROP_NAME = "aeron.cluster.ingress.fragment.limit"
    CLUSTER_INGRESS_FRAGMENT_LIMIT_DEFAULT = 50
    CLUSTER_INGRESS_IPC_ALLOWED_PROP_NAME = "aeron.cluster.ingress.ipc.allowed"
    CLUSTER_INGRESS_IPC_ALLOWED_DEFAULT = False
    CLUSTER_MEMBER_ID_PROP_NAME = "aeron.cluster.member.id"
    CLUSTER_MEMBER_ID_DEFAULT = 0
    APPOINTED_LEADER_ID_PROP_NAME = "aeron.cluster.appointed.leader.id"
    APPOINTED_LEADER_ID_DEFAULT = -1
    CLUSTER_MEMBERS_PROP_NAME = "aeron.cluster.members"
    CLUSTER_MEMBERS_DEFAULT: str | None = None
    CLUSTER_CONSENSUS_ENDPOINTS_PROP_NAME = "aeron.cluster.consensus.endpoints"
    CLUSTER_CONSENSUS_ENDPOINTS_DEFAULT = ""
    LOG_CHANNEL_PROP_NAME = "aeron.cluster.log.channel"
    LOG_CHANNEL_DEFAULT = "aeron:udp?term-length=64m"
    MEMBER_ENDPOINTS_PROP_NAME = "aeron.cluster.member.endpoints"
    MEMBER_ENDPOINTS_DEFAULT = ""
    LOG_STREAM_ID_PROP_NAME = "aeron.cluster.log.stream.id"
    LOG_STREAM_ID_DEFAULT = 100
    # the consensus module's snapshots use the container's snapshot channel property, with its own stream default
    SNAPSHOT_CHANNEL_DEFAULT = "aeron:ipc?alias=snapshot"
    SNAPSHOT_STREAM_ID_DEFAULT = 107
    CONSENSUS_CHANNEL_PROP_NAME = "aeron.cluster.consensus.channel"
    CONSENSUS_CHANNEL_DEFAULT = "aeron:udp"
    CONSENSUS_STREAM_ID_PROP_NAME = "aeron.cluster.consensus.stream.id"
    CONSENSUS_STREAM_ID_DEFAULT = 108
    REPLICATION_CHANNEL_PROP_NAME = "aeron.cluster.replication.channel"
    REPLICATION_CHANNEL_DEFAULT: str | None = None
    FOLLOWER_CATCHUP_CHANNEL_PROP_NAME = "aeron.cluster.follower.catchup.channel"
    FOLLOWER_CATCHUP_CHANNEL_DEFAULT = "aeron:udp"
    LEADER_ARCHIVE_CONTROL_CHANNEL_PROP_NAME = "aeron.cluster.leader.archive.control.channel"
    LEADER_ARCHIVE_CONTROL_CHANNEL_DEFAULT = "aeron:udp?term-length=64k"
    SERVICE_COUNT_PROP_NAME = "aeron.cluster.service.count"
    SERVICE_COUNT_DEFAULT = 1
    MAX_CONCURRENT_SESSIONS_PROP_NAME = "aeron.cluster.max.sessions"
    MAX_CONCURRENT_SESSIONS_DEFAULT = 10
    SESSION_TIMEOUT_PROP_NAME = "aeron.cluster.session.timeout"
    SESSION_TIMEOUT_DEFAULT_NS = 10 * _SECOND_NS
    LEADER_HEARTBEAT_TIMEOUT_PROP_NAME = "aeron.cluster.leader.heartbeat.timeout"
    LEADER_HEARTBEAT_TIMEOUT_DEFAULT_NS = 10 * _SECOND_NS
    LEADER_HEARTBEAT_INTERVAL_PROP_NAME = "aeron.cluster.leader.heartbeat.interval"
    LEADER_HEARTBEAT_INTERVAL_DEFAULT_NS = 200 * _MILLI_NS
    STARTUP_CANVASS_TIMEOUT_PROP_NAME = "aeron.cluster.startup.canvass.timeout"
    STARTUP_CANVASS_TIMEOUT_DEFAULT_NS = 60 * _SECOND_NS
    ELECTION_TIMEOUT_PROP_NAME = "aeron.cluster.election.timeout"
    ELECTION_TIMEOUT_DEFAULT_NS = _SECOND_NS
    ELECTION_STATUS_INTERVAL_PROP_NAME = "aeron.cluster.election.status.interval"
    ELECTION_STATUS_INTERVAL_DEFAULT_NS = 100 * _MILLI_NS
    AUTHENTICATOR_SUPPLIER_PROP_NAME = "aeron.cluster.authenticator.supplier"
    AUTHENTICATOR_SUPPLIER_DEFAULT = "io.aeron.security.DefaultAuthenticatorSupplier"
    AUTHORISATION_SERVICE_SUPPLIER_PROP_NAME = "aeron.cluster.authorisation.service.supplier"
    AUTHORISATION_SERVICE_SUPPLIER_DEFAULT = ""
    ERROR_BUFFER_LENGTH_PROP_NAME = "aeron.cluster.error.buffer.length"
    ERROR_BUFFER_LENGTH_DEFAULT = ClusterMarkFile.ERROR_BUFFER_MIN_LENGTH
    TERMINATION_TIMEOUT_PROP_NAME = "aeron.cluster.termination.timeout"
    TERMINATION_TIMEOUT_DEFAULT_NS = 10 * _SECOND_NS
    CYCLE_THRESHOLD_PROP_NAME = "aeron.cluster.cycle.threshold"
    CYCLE_THRESHOLD_DEFAULT_NS = 100 * _MILLI_NS
    TOTAL_SNAPSHOT_DURATION_THRESHOLD_PROP_NAME = "aeron.cluster.total.snapshot.threshold"
    TOTAL_SNAPSHOT_DURATION_THRESHOLD_DEFAULT_NS = 1000 * _MILLI_NS
    STANDBY_SNAPSHOT_NOTIFICATION_PROCESSING_DELAY_PROP_NAME = \
        "aeron.cluster.standby.snapshot.notification.processing.delay"
    STANDBY_SNAPSHOT_NOTIFICATION_PROCESSING_DELAY_DEFAULT_NS = 0
    # the @Config annotation advertises 4 ms, the value is 8 ms
    WHEEL_TICK_RESOLUTION_PROP_NAME = "aeron.cluster.wheel.tick.resolution"
    WHEEL_TICK_RESOLUTION_DEFAULT_NS = 8 * _MILLI_NS
    TICKS_PER_WHEEL_PROP_NAME = "aeron.cluster.ticks.per.wheel"
    TICKS_PER_WHEEL_DEFAULT = 128
    FILE_SYNC_LEVEL_PROP_NAME = "aeron.cluster.file.sync.level"
    FILE_SYNC_LEVEL_DEFAULT = 0
    TIMER_SERVICE_SUPPLIER_PROP_NAME = "aeron.cluster.timer.service.supplier"
    TIMER_SERVICE_SUPPLIER_WHEEL = "io.aeron.cluster.WheelTimerServiceSupplier"
    TIMER_SERVICE_SUPPLIER_PRIORITY_HEAP = "io.aeron.cluster.PriorityHeapTimerServiceSupplier"
    TIMER_SERVICE_SUPPLIER_DEFAULT = TIMER_SERVICE_SUPPLIER_WHEEL
    CLUSTER_CONSENSUS_MODULE_AGENT_ROLE_NAME_PROP_NAME = "aeron.cluster.consensus.module.agent.role.name"
    CLUSTER_REPLICATION_PROGRESS_TIMEOUT_PROP_NAME = "aeron.cluster.replication.progress.timeout"
    CLUSTER_REPLICATION_PROGRESS_TIMEOUT_DEFAULT_NS = 10 * _SECOND_NS
    # unset (-1): a tenth of the progress timeout
    CLUSTER_REPLICATION_PROGRESS_INTERVAL_PROP_NAME = "aeron.cluster.replication.progress.interval"
    CLUSTER_ACCEPT_STANDBY_SNAPSHOTS_PROP_NAME = "aeron.cluster.accept.standby.snapshots"
    CLUSTER_CLOCK_PROP_NAME = "aeron.cluster.clock"
    CLUSTER_CLOCK_DEFAULT = "io.aeron.cluster.MillisecondClusterClock"
    CONSENSUS_MODULE_EXTENSION_CLASS_NAME_PROP_NAME = "aeron.cluster.consensus.module.extension"
    CONSENSUS_MODULE_ENABLE_CONTROL_ON_CONSENSUS_CHANNEL_PROP_NAME = "aeron.cluster.consensus.control.enable"
    CONSENSUS_MODULE_ENABLE_CONTROL_ON_LOG_CHANNEL_PROP_NAME = "aeron.cluster.log.control.enable"

    SETTINGS: tuple[Setting, ...] = (
        Setting("ingress_fragment_limit", CLUSTER_INGRESS_FRAGMENT_LIMIT_PROP_NAME,
                CLUSTER_INGRESS_FRAGMENT_LIMIT_DEFAULT, parse_int),
        Setting("is_ipc_ingress_allowed", CLUSTER_INGRESS_IPC_ALLOWED_PROP_NAME, CLUSTER_INGRESS_IPC_ALLOWED_DEFAULT,
                parse_bool),
        Setting("cluster_member_id", CLUSTER_MEMBER_ID_PROP_NAME, CLUSTER_MEMBER_ID_DEFAULT, parse_int),
        Setting("appointed_leader_id", APPOINTED_LEADER_ID_PROP_NAME, APPOINTED_LEADER_ID_DEFAULT, parse_int),
        Setting("cluster_members", CLUSTER_MEMBERS_PROP_NAME, CLUSTER_MEMBERS_DEFAULT),
        Setting("cluster_consensus_endpoints", CLUSTER_CONSENSUS_ENDPOINTS_PROP_NAME,
                CLUSTER_CONSENSUS_ENDPOINTS_DEFAULT),
        Setting("log_channel", LOG_CHANNEL_PROP_NAME, LOG_CHANNEL_DEFAULT),
        Setting("log_stream_id", LOG_STREAM_ID_PROP_NAME, LOG_STREAM_ID_DEFAULT, parse_int),
        Setting("member_endpoints", MEMBER_ENDPOINTS_PROP_NAME, MEMBER_ENDPOINTS_DEFAULT),
        Setting("snapshot_channel", ContainerConfiguration.SNAPSHOT_CHANNEL_PROP_NAME, SNAPSHOT_CHANNEL_DEFAULT),
        Setting("snapshot_stream_id", ContainerConfiguration.SNAPSHOT_STREAM_ID_PROP_NAME,
                SNAPSHOT_STREAM_ID_DEFAULT, parse_int),
        Setting("consensus_channel", CONSENSUS_CHANNEL_PROP_NAME, CONSENSUS_CHANNEL_DEFAULT),
        Setting("consensus_stream_id", CONSENSUS_STREAM_ID_PROP_NAME, CONSENSUS_STREAM_ID_DEFAULT, parse_int),
        Setting("replication_channel", REPLICATION_CHANNEL_PROP_NAME, REPLICATION_CHANNEL_DEFAULT),
        Setting("follower_catchup_channel", FOLLOWER_CATCHUP_CHANNEL_PROP_NAME, FOLLOWER_CATCHUP_CHANNEL_DEFAULT),
        Setting("leader_archive_control_channel", LEADER_ARCHIVE_CONTROL_CHANNEL_PROP_NAME,
                LEADER_ARCHIVE_CONTROL_CHANNEL_DEFAULT),
        Setting("service_count", SERVICE_COUNT_PROP_NAME, SERVICE_COUNT_DEFAULT, parse_int),
        Setting("max_concurrent_sessions", MAX_CONCURRENT_SESSIONS_PROP_NAME, MAX_CONCURRENT_SESSIONS_DEFAULT,
                parse_int),
        Setting("session_timeout_ns", SESSION_TIMEOUT_PROP_NAME, SESSION_TIMEOUT_DEFAULT_NS, parse_duration_ns),
        Setting("leader_heartbeat_timeout_ns", LEADER_HEARTBEAT_TIMEOUT_PROP_NAME,
                LEADER_HEARTBEAT_TIMEOUT_DEFAULT_NS, parse_duration_ns),
        Setting("leader_heartbeat_interval_ns", LEADER_HEARTBEAT_INTERVAL_PROP_NAME,
                LEADER_HEARTBEAT_INTERVAL_DEFAULT_NS, parse_duration_ns),
        Setting("startup_canvass_timeout_ns", STARTUP_CANVASS_TIMEOUT_PROP_NAME, STARTUP_CANVASS_TIMEOUT_DEFAULT_NS,
                parse_duration_ns),
        Setting("election_timeout_ns", ELECTION_TIMEOUT_PROP_NAME, ELECTION_TIMEOUT_DEFAULT_NS, parse_duration_ns),
        Setting("election_status_interval_ns", ELECTION_STATUS_INTERVAL_PROP_NAME,
                ELECTION_STATUS_INTERVAL_DEFAULT_NS, parse_duration_ns),
        Setting("authenticator_supplier", AUTHENTICATOR_SUPPLIER_PROP_NAME, AUTHENTICATOR_SUPPLIER_DEFAULT),
        Setting("authorisation_service_supplier", AUTHORISATION_SERVICE_SUPPLIER_PROP_NAME,
                AUTHORISATION_SERVICE_SUPPLIER_DEFAULT),
        Setting("error_buffer_length", ERROR_BUFFER_LENGTH_PROP_NAME, ERROR_BUFFER_LENGTH_DEFAULT, parse_size),
        Setting("termination_timeout_ns", TERMINATION_TIMEOUT_PROP_NAME, TERMINATION_TIMEOUT_DEFAULT_NS,
                parse_duration_ns),
        Setting("cycle_threshold_ns", CYCLE_THRESHOLD_PROP_NAME, CYCLE_THRESHOLD_DEFAULT_NS, parse_duration_ns),
        Setting("total_snapshot_duration_threshold_ns", TOTAL_SNAPSHOT_DURATION_THRESHOLD_PROP_NAME,
                TOTAL_SNAPSHOT_DURATION_THRESHOLD_DEFAULT_NS, parse_duration_ns),
        Setting("standby_snapshot_notification_processing_delay_ns",
                STANDBY_SNAPSHOT_NOTIFICATION_PROCESSING_DELAY_PROP_NAME,
                STANDBY_SNAPSHOT_NOTIFICATION_PROCESSING_DELAY_DEFAULT_NS, parse_duration_ns),
        Setting("wheel_tick_resolution_ns", WHEEL_TICK_RESOLUTION_PROP_NAME, WHEEL_TICK_RESOLUTION_DEFAULT_NS,
                parse_duration_ns),
        Setting("ticks_per_wheel", TICKS_PER_WHEEL_PROP_NAME, TICKS_PER_WHEEL_DEFAULT, parse_int),
        Setting("file_sync_level", FILE_SYNC_LEVEL_PROP_NAME, FILE_SYNC_LEVEL_DEFAULT, parse_int),
        Setting("timer_service_supplier", TIMER_SERVICE_SUPPLIER_PROP_NAME, TIMER_SERVICE_SUPPLIER_DEFAULT),
        Setting("agent_role_name", CLUSTER_CONSENSUS_MODULE_AGENT_ROLE_NAME_PROP_NAME, None),
        Setting("replication_progress_timeout_ns", CLUSTER_REPLICATION_PROGRESS_TIMEOUT_PROP_NAME,
                CLUSTER_REPLICATION_PROGRESS_TIMEOUT_DEFAULT_NS, parse_duration_ns),
        Setting("replication_progress_interval_ns", CLUSTER_REPLICATION_PROGRESS_INTERVAL_PROP_NAME, -1,
                parse_duration_ns),
        Setting("accept_standby_snapshots", CLUSTER_ACCEPT_STANDBY_SNAPSHOTS_PROP_NAME, False, parse_bool),
        Setting("cluster_clock", CLUSTER_CLOCK_PROP_NAME, CLUSTER_CLOCK_DEFAULT),
        Setting("consensus_module_extension", CONSENSUS_MODULE_EXTENSION_CLASS_NAME_PROP_NAME, None),
        Setting("enable_control_on_consensus_channel", CONSENSUS_MODULE_ENABLE_CONTROL_ON_CONSENSUS_CHANNEL_PROP_NAME,
                True, parse_bool),
        Setting("enable_control_on_log_channel", CONSENSUS_MODULE_ENABLE_CONTROL_ON_LOG_CHANNEL_PROP_NAME, True,
                parse_bool),
    )


MAX_SERVICE_COUNT = ContainerConfiguration.MAX_SERVICE_COUNT
AERON_CLUSTER_CONSENSUS_THREAD_NAME = "aeron-cl-cm"
_VERSION_COMMIT = "aeron-py"


def _semantic_version(major: int, minor: int, patch: int) -> int:
    return (major << 16) | (minor << 8) | patch


# the settings the consensus module reads besides its own Configuration's: the container's it shares, the client's
# ingress and egress, the driver directory and the archive's file sync level (Aeron's Context reads the latter)
_CONTAINER_ATTRS = ("cluster_id", "replay_channel", "replay_stream_id", "control_channel", "service_stream_id",
                    "consensus_module_stream_id", "cluster_dir", "cluster_services_dir", "mark_file_dir",
                    "log_fragment_limit", "idle_strategy")
_EXTRA_SETTINGS: tuple[Setting, ...] = (
    Setting("aeron_dir", "aeron.dir", None),
    Setting("ingress_channel", "aeron.cluster.ingress.channel", None),
    Setting("ingress_stream_id", "aeron.cluster.ingress.stream.id", 101, parse_int),
    Setting("egress_channel", "aeron.cluster.egress.channel", None),
    Setting("archive_file_sync_level", "aeron.archive.file.sync.level", 0, parse_int),
    Setting("delete_dir_on_start", "aeron.cluster.dir.delete.on.start", False, parse_bool),
)
# settings that hold, once given or concluded, the object their name stands for (a clock, a supplier, an idle
# strategy) are taken as they are when they are not text
_OBJECT_SETTINGS = ("timer_service_supplier", "cluster_clock", "idle_strategy")


def _as_given(value: Any) -> Any:
    return value


def _context_setting(setting: Setting) -> Setting:
    return dataclasses.replace(setting, check=_as_given) if setting.attr in _OBJECT_SETTINGS else setting


_SETTINGS: tuple[Setting, ...] = tuple(_context_setting(s) for s in (
    [s for s in Configuration.SETTINGS if s.attr != "file_sync_level"]
    + [Setting("file_sync_level", Configuration.FILE_SYNC_LEVEL_PROP_NAME, None, parse_int)]
    + [ContainerConfiguration.setting(a) for a in _CONTAINER_ATTRS]
    + list(_EXTRA_SETTINGS)))
_OBJECT_ATTRS = ("aeron", "epoch_clock", "random", "authenticator", "authorisation_service", "error_handler",
                 "termination_hook", "archive_context", "app_version", "use_agent_invoker", "idle_strategy_supplier",
                 "log_publisher", "egress_publisher", "app_version_validator", "mark_file", "node_state_file",
                 "recording_log")


class _DutyCycleTracker:
    """Aeron's ``DutyCycleStallTracker``: the longest duty cycle (counter 216) and how many exceeded the threshold
    (217)."""

    def __init__(self, max_cycle_time: Any, threshold_exceeded: Any, threshold_ns: int) -> None:
        self.max_cycle_time = max_cycle_time
        self.threshold_exceeded = threshold_exceeded
        self.threshold_ns = threshold_ns
        self.time_of_last_update_ns = 0

    def update(self, now_ns: int) -> None:
        self.time_of_last_update_ns = now_ns

    def measure_and_update(self, now_ns: int) -> None:
        cycle_ns = now_ns - self.time_of_last_update_ns
        if cycle_ns > self.max_cycle_time.get():
            self.max_cycle_time.set_ordered(cycle_ns)
        if cycle_ns > self.threshold_ns:
            self.threshold_exceeded.increment_ordered()
        self.time_of_last_update_ns = now_ns


class _SnapshotDurationTracker:
    """Aeron's ``SnapshotDurationTracker``: the longest snapshot (counter 234) and how many exceeded the threshold
    (235)."""

    def __init__(self, max_duration: Any, threshold_exceeded: Any, threshold_ns: int) -> None:
        self.max_duration = max_duration
        self.threshold_exceeded = threshold_exceeded
        self.threshold_ns = threshold_ns
        self.start_ns = NULL_VALUE

    def on_snapshot_begin(self, now_ns: int) -> None:
        self.start_ns = now_ns

    def on_snapshot_end(self, now_ns: int) -> None:
        if self.start_ns != NULL_VALUE:
            duration_ns = now_ns - self.start_ns
            if duration_ns > self.max_duration.get():
                self.max_duration.set_ordered(duration_ns)
            if duration_ns > self.threshold_ns:
                self.threshold_exceeded.increment_ordered()
            self.start_ns = NULL_VALUE


def _format_duration(ns: int) -> str:
    # Agrona's SystemUtil.formatDuration
    if ns % 1_000_000_000 == 0:
        return f"{ns // 1_000_000_000}s"
    if ns % 1_000_000 == 0:
        return f"{ns // 1_000_000}ms"
    if ns % 1_000 == 0:
        return f"{ns // 1_000}us"
    return f"{ns}ns"


def _major(version: int) -> int:
    return (version >> 16) & 0xFF


class Context(SettingsContext):
    """The consensus module's configuration (see the module docstring).

    Besides the properties (attributes named as in Aeron, in snake case: ``cluster_member_id``, ``cluster_members``,
    ``ingress_channel``, ``log_channel``, ``replication_channel``, ``leader_heartbeat_timeout_ns``, ...): ``aeron``
    (a client to use, which must run its conductor through an agent invoker), ``cluster_clock``, ``epoch_clock``
    (a function returning epoch milliseconds), ``random`` (``random()`` in [0, 1): the nomination delay),
    ``timer_service_supplier``, ``authenticator``, ``authorisation_service``, ``error_handler``,
    ``termination_hook`` (called when the consensus module terminates), ``archive_context`` (an
    ``aeron.archive.client.Context`` for the local archive), ``app_version`` (a semantic version int, default
    0.0.1), ``use_agent_invoker`` and ``idle_strategy_supplier``.
    """

    ingress_fragment_limit: int
    is_ipc_ingress_allowed: bool
    cluster_member_id: int
    appointed_leader_id: int
    cluster_members: str | None
    cluster_consensus_endpoints: str
    log_channel: str
    log_stream_id: int
    member_endpoints: str
    snapshot_channel: str
    snapshot_stream_id: int
    consensus_channel: str
    consensus_stream_id: int
    replication_channel: str | None
    follower_catchup_channel: str
    leader_archive_control_channel: str
    service_count: int
    max_concurrent_sessions: int
    session_timeout_ns: int
    leader_heartbeat_timeout_ns: int
    leader_heartbeat_interval_ns: int
    startup_canvass_timeout_ns: int
    election_timeout_ns: int
    election_status_interval_ns: int
    authenticator_supplier: str
    authorisation_service_supplier: str
    error_buffer_length: int
    termination_timeout_ns: int
    cycle_threshold_ns: int
    total_snapshot_duration_threshold_ns: int
    standby_snapshot_notification_processing_delay_ns: int
    wheel_tick_resolution_ns: int
    ticks_per_wheel: int
    timer_service_supplier: Any             # a supplier's name (the property) until concluded, then the supplier
    agent_role_name: str | None
    replication_progress_timeout_ns: int
    replication_progress_interval_ns: int
    accept_standby_snapshots: bool
    cluster_clock: Any                      # a clock's name (the property) until concluded, then the clock
    consensus_module_extension: str | None
    enable_control_on_consensus_channel: bool
    enable_control_on_log_channel: bool
    file_sync_level: int | None
    cluster_id: int
    replay_channel: str
    replay_stream_id: int
    control_channel: str
    service_stream_id: int
    consensus_module_stream_id: int
    cluster_dir: str
    cluster_services_dir: str | None
    mark_file_dir: str | None
    log_fragment_limit: int
    idle_strategy: str
    aeron_dir: str | None
    ingress_channel: str | None
    ingress_stream_id: int
    egress_channel: str | None
    archive_file_sync_level: int
    delete_dir_on_start: bool

    SETTINGS = _SETTINGS
    CONTEXT_NAME = "ConsensusModule.Context"
    COMPONENT = "consensus module"
    EXTRA_ATTRS = _OBJECT_ATTRS

    def __init__(self, properties: Mapping[str, Any] | Iterable[str] | None = None, *,
                 environ: Mapping[str, str] | None = None, **attributes: Any) -> None:
        """Defaults, then ``environ`` (``os.environ`` unless given), then ``properties``, then ``attributes``;
        ConfigurationError for an unknown name or a value that does not parse."""
        self.aeron: Any = None
        self.owns_aeron_client = False
        self.epoch_clock: Callable[[], int] = lambda: time.time_ns() // 1_000_000
        self.random: Any = None
        self.authenticator: Any = None
        self.authorisation_service: Any = None
        self.error_handler: Callable[[BaseException], Any] | None = None
        self.termination_hook: Callable[[], Any] = lambda: None
        self.archive_context: Any = None
        self.app_version = _semantic_version(0, 0, 1)
        self.use_agent_invoker = False
        self.idle_strategy_supplier: Callable[[], IdleStrategy] | None = None
        self.log_publisher: Any = None
        self.egress_publisher: Any = None
        self.app_version_validator: Callable[[int, int], bool] = lambda ours, theirs: _major(ours) == _major(theirs)
        self.mark_file: Any = None
        self.node_state_file: Any = None
        self.recording_log: Any = None
        self.is_concluded = False
        super().__init__(properties, environ=environ, **attributes)

    # -- conclude -------------------------------------------------------------------------------------------------

    def conclude(self) -> Context:
        """Check the settings and make what the consensus module needs (see the module docstring)."""
        if self.is_concluded:
            raise IllegalStateError("ConsensusModule.Context already concluded")
        self.is_concluded = True
        self._validate()
        cluster_dir = pathlib.Path(self.cluster_dir).resolve()
        self.cluster_dir = str(cluster_dir)
        mark_file_dir = pathlib.Path(self.mark_file_dir).resolve() if self.mark_file_dir else cluster_dir
        self.mark_file_dir = str(mark_file_dir)
        self.cluster_services_dir = str(pathlib.Path(self.cluster_services_dir).resolve()) \
            if self.cluster_services_dir else self.cluster_dir
        if self.delete_dir_on_start and cluster_dir.exists():
            shutil.rmtree(cluster_dir)
        cluster_dir.mkdir(parents=True, exist_ok=True)
        mark_file_dir.mkdir(parents=True, exist_ok=True)
        if self.cluster_clock is None or isinstance(self.cluster_clock, str):
            self.cluster_clock = cluster_clock_from_name(self.cluster_clock)
        if self.mark_file is None:
            self.mark_file = ClusterMarkFile.create(
                mark_file_dir / ClusterMarkFile.FILENAME, ClusterComponentType.CONSENSUS_MODULE,
                self.error_buffer_length, self.epoch_clock, ContainerConfiguration.LIVENESS_TIMEOUT_MS,
                self._file_page_size())
        ensure_mark_file_link(cluster_dir, mark_file_dir / ClusterMarkFile.FILENAME, ClusterMarkFile.LINK_FILENAME)
        if self.file_sync_level is None:
            self.file_sync_level = self.archive_file_sync_level
        if self.node_state_file is None:
            self.node_state_file = NodeStateFile(cluster_dir, True, self.file_sync_level)
        self.node_state_file.migrate_candidate_term_id(self.mark_file.candidate_term_id(), self.epoch_clock())
        self.error_log = self.mark_file.error_log
        user_handler = self.error_handler
        error_log = self.error_log

        def record(error: BaseException) -> None:
            error_log.record(error)
            if user_handler is not None:
                user_handler(error)
        self._record_error = record
        if self.recording_log is None:
            self.recording_log = RecordingLog(cluster_dir, True)
        if not self.agent_role_name:
            self.agent_role_name = f"{AERON_CLUSTER_CONSENSUS_THREAD_NAME}-consensus-module-{self.cluster_id}-" \
                                   f"{self.cluster_member_id}"
        if self.aeron is None:
            self.owns_aeron_client = True
            self.aeron = Aeron.connect(AeronContext(self.aeron_dir, use_conductor_agent_invoker=True,
                                                    error_handler=self.counted_error_handler,
                                                    client_name=self.agent_role_name[:100],
                                                                                    unavailable_counter_handler=self._on_unavailable_counter))
        elif self.aeron.conductor_agent_invoker is None:
            raise ConfigurationError("Aeron client must use conductor agent invoker")
        self.error_counter = ClusterCounters.allocate_versioned(
            self.aeron, "Cluster Errors", Configuration.CONSENSUS_MODULE_ERROR_COUNT_TYPE_ID, self.cluster_id,
            __version__, _VERSION_COMMIT)
        self._allocate_counters()
        if self.idle_strategy_supplier is None:
            name = self.idle_strategy
            self.idle_strategy_supplier = lambda: _idle_strategy(name)
        if self.timer_service_supplier is None or isinstance(self.timer_service_supplier, str):
            self.timer_service_supplier = timer_service_supplier_from_name(
                self.timer_service_supplier, self.cluster_clock.time_unit(), self.wheel_tick_resolution_ns,
                self.ticks_per_wheel)
        if self.archive_context is None:
            self.archive_context = ArchiveContext(
                control_request_channel=LOCAL_CONTROL_CHANNEL_DEFAULT,
                control_response_channel=LOCAL_CONTROL_CHANNEL_DEFAULT,
                control_request_stream_id=LOCAL_CONTROL_STREAM_ID_DEFAULT,
                control_response_stream_id=self.cluster_id * 100 + 100 + CONTROL_RESPONSE_STREAM_ID_DEFAULT)
        archive_ctx = self.archive_context
        if not str(archive_ctx.control_request_channel).startswith("aeron:ipc") or \
                not str(archive_ctx.control_response_channel).startswith("aeron:ipc"):
            raise ConfigurationError("local archive control must be IPC")
        archive_ctx.aeron = self.aeron
        archive_ctx.error_handler = None
        archive_ctx.control_request_channel = add_alias_if_absent(
            archive_ctx.control_request_channel,
            f"cm-archive-ctrl-req-cluster-{self.cluster_id}-member-{self.cluster_member_id}")
        archive_ctx.control_response_channel = add_alias_if_absent(
            archive_ctx.control_response_channel,
            f"cm-archive-ctrl-resp-cluster-{self.cluster_id}-member-{self.cluster_member_id}")
        archive_ctx.client_name = self.agent_role_name[:100]
        if self.authenticator is None:
            self.authenticator = authenticator_from_name(self.authenticator_supplier)
        if self.authorisation_service is None:
            self.authorisation_service = authorisation_service_from_name(self.authorisation_service_supplier)
        if self.random is None:
            self.random = random.Random()
        if self.log_publisher is None:
            self.log_publisher = LogPublisher(self.log_channel)
        if self.egress_publisher is None:
            self.egress_publisher = EgressPublisher(self.leader_heartbeat_timeout_ns)
        log_uri = parse_channel(self.log_channel)
        self.is_log_mdc = log_uri.is_udp and log_uri.get("endpoint") is None
        self._conclude_mark_file()
        return self

    def _validate(self) -> None:
        log_uri = parse_channel(self.log_channel)
        for key in ("init-term-id", "term-id", "term-offset"):
            if log_uri.has(key):
                raise ConfigurationError(f"logChannel must not contain: {key}")
        if not 0 <= self.service_count <= MAX_SERVICE_COUNT:
            raise ConfigurationError(f"service count of range [0, {MAX_SERVICE_COUNT}]: {self.service_count}")
        if self.service_count == 0:
            raise ConfigurationError("zero services are only supported when ConsensusModuleExtension is enabled "
                                     "(aeron.cluster.service.count=0)")
        if self.cluster_members is None:
            raise ConfigurationError("ConsensusModule.Context.clusterMembers must be set (aeron.cluster.members)")
        if self.startup_canvass_timeout_ns // self.leader_heartbeat_timeout_ns < 2:
            raise ConfigurationError(f"startupCanvassTimeoutNs={self.startup_canvass_timeout_ns} must be a multiple "
                                     f"of leaderHeartbeatTimeoutNs={self.leader_heartbeat_timeout_ns}")
        if self.ingress_channel is None:
            raise ConfigurationError("ingressChannel must be specified (aeron.cluster.ingress.channel)")
        if self.replication_channel is None:
            raise ConfigurationError("replicationChannel must be set (aeron.cluster.replication.channel)")
        if self.leader_heartbeat_interval_ns <= 0 or self.election_timeout_ns <= 0:
            raise ConfigurationError("leader heartbeat interval and election timeout must be > 0")

    def _file_page_size(self) -> int:
        return 4096

    def _allocate_counters(self) -> None:
        aeron, cluster_id = self.aeron, self.cluster_id
        if ClusterCounters.find(aeron.counters_reader, Configuration.CONSENSUS_MODULE_STATE_TYPE_ID,
                                cluster_id) != NULL_VALUE:
            raise ClusterError(f"existing consensus module detected for clusterId={cluster_id}")
        self.module_state_counter = ClusterCounters.allocate(
            aeron, "Consensus Module state", Configuration.CONSENSUS_MODULE_STATE_TYPE_ID, cluster_id)
        self.election_state_counter = ClusterCounters.allocate(
            aeron, "Cluster election state", Configuration.ELECTION_STATE_TYPE_ID, cluster_id)
        self.election_counter = ClusterCounters.allocate(
            aeron, "Cluster election count", Configuration.CLUSTER_ELECTION_COUNT_TYPE_ID, cluster_id)
        self.leadership_term_id_counter = ClusterCounters.allocate(
            aeron, "Cluster leadership term id", Configuration.CLUSTER_LEADERSHIP_TERM_ID_TYPE_ID, cluster_id)
        self.cluster_node_role_counter = ClusterCounters.allocate(
            aeron, "Cluster node role", Configuration.CLUSTER_NODE_ROLE_TYPE_ID, cluster_id)
        self.commit_position_counter = ClusterCounters.allocate(
            aeron, "Cluster commit-pos:", Configuration.COMMIT_POSITION_TYPE_ID, cluster_id)
        self.control_toggle_counter = ClusterCounters.allocate(
            aeron, "Cluster control toggle", Configuration.CONTROL_TOGGLE_TYPE_ID, cluster_id)
        self.node_control_toggle_counter = ClusterCounters.allocate(
            aeron, "Node control toggle", NODE_CONTROL_TOGGLE_TYPE_ID, cluster_id)
        self.snapshot_counter = ClusterCounters.allocate(
            aeron, "Cluster snapshot count", Configuration.SNAPSHOT_COUNTER_TYPE_ID, cluster_id)
        self.timed_out_client_counter = ClusterCounters.allocate(
            aeron, "Cluster timed out client count", Configuration.CLUSTER_CLIENT_TIMEOUT_COUNT_TYPE_ID, cluster_id)
        self.standby_snapshot_counter = None
        if self.accept_standby_snapshots:
            self.standby_snapshot_counter = ClusterCounters.allocate(
                aeron, "Cluster standby snapshots received", CLUSTER_STANDBY_SNAPSHOT_COUNTER_TYPE_ID, cluster_id)
        self.duty_cycle_tracker = _DutyCycleTracker(
            ClusterCounters.allocate(aeron, "Cluster max cycle time in ns", CLUSTER_MAX_CYCLE_TIME_TYPE_ID,
                                     cluster_id),
            ClusterCounters.allocate(aeron, "Cluster work cycle time exceeded count: threshold="
                                     f"{_format_duration(self.cycle_threshold_ns)}",
                                     CLUSTER_CYCLE_TIME_THRESHOLD_EXCEEDED_TYPE_ID, cluster_id),
            self.cycle_threshold_ns)
        self.total_snapshot_duration_tracker = _SnapshotDurationTracker(
            ClusterCounters.allocate(aeron, "Total max snapshot duration in ns",
                                     CLUSTER_TOTAL_MAX_SNAPSHOT_DURATION_TYPE_ID, cluster_id),
            ClusterCounters.allocate(aeron, "Total max snapshot duration exceeded count: threshold="
                                     f"{_format_duration(self.total_snapshot_duration_threshold_ns)}",
                                     CLUSTER_TOTAL_SNAPSHOT_DURATION_THRESHOLD_EXCEEDED_TYPE_ID, cluster_id),
            self.total_snapshot_duration_threshold_ns)

    def _conclude_mark_file(self) -> None:
        authenticator_name = getattr(self.authenticator, "__class__", type(self.authenticator)).__name__
        if repr(self.authenticator) == "io.aeron.security.DefaultAuthenticatorSupplier":
            authenticator_name = "io.aeron.security.DefaultAuthenticatorSupplier"
        aeron_dir = self.aeron.context.aeron_dir
        ClusterMarkFile.check_header_length(aeron_dir, self.control_channel, self.ingress_channel, None,
                                            authenticator_name)
        e = self.mark_file.encoder()
        e.archive_stream_id = self.archive_context.control_request_stream_id
        e.service_stream_id = self.service_stream_id
        e.consensus_module_stream_id = self.consensus_module_stream_id
        e.ingress_stream_id = self.ingress_stream_id
        e.member_id = self.cluster_member_id
        e.service_id = NULL_VALUE
        e.cluster_id = self.cluster_id
        e.put_aeron_directory(aeron_dir)
        e.put_control_channel(self.control_channel)
        e.put_ingress_channel(self.ingress_channel)
        e.put_service_name("")
        e.put_authenticator(authenticator_name)
        e.put_services_cluster_dir(self.cluster_services_dir)
        e.release()
        self.mark_file.signal_ready(self.epoch_clock())

    # -- what the agent uses -----------------------------------------------------------------------------------

    def counted_error_handler(self, error: BaseException) -> None:
        """Count ``error`` (the errors counter, type 212) and record it in the mark file's error log."""
        counter = getattr(self, "error_counter", None)
        if counter is not None and not counter.is_closed:
            counter.increment_ordered()
        record = getattr(self, "_record_error", None)
        if record is not None:
            record(error)

    def _on_unavailable_counter(self, counters: Any, registration_id: int, counter_id: int) -> None:
        handler = getattr(self, "unavailable_counter_handler", None)
        if handler is not None:
            handler(counters, registration_id, counter_id)

    def close(self) -> None:
        """Close the files, and the Aeron client when this context connected it (else the counters it made)."""
        for closeable in (self.recording_log, self.node_state_file, self.mark_file):
            if closeable is not None:
                try:
                    closeable.close()
                except Exception as ex:     # noqa: BLE001 - the rest still closes
                    self.counted_error_handler(ex)
        if self.owns_aeron_client:
            if self.aeron is not None:
                self.aeron.close()
        elif self.aeron is not None and not self.aeron.is_closed:
            for name in ("timed_out_client_counter", "control_toggle_counter", "snapshot_counter",
                         "module_state_counter", "election_state_counter", "cluster_node_role_counter",
                         "commit_position_counter"):
                counter = getattr(self, name, None)
                if counter is not None:
                    counter.close()

    def __repr__(self) -> str:
        """The member, its cluster and its directory."""
        return (f"ConsensusModule.Context(cluster_id={self.cluster_id}, cluster_member_id={self.cluster_member_id}, "
                f"cluster_dir={self.cluster_dir!r}, cluster_members={self.cluster_members!r})")


def _idle_strategy(name: str) -> IdleStrategy:
    if name in ("org.agrona.concurrent.BackoffIdleStrategy", "backoff", None, ""):
        return BackoffIdleStrategy(10, 20, 1_000, 1_000_000)
    return idle_strategy_from_name(name)


_ModuleContext = Context                # ConsensusModule.Context names the class inside ConsensusModule's body


class ConsensusModule:
    """A running consensus module: its context and agent, on its own thread or on the caller's."""

    Context = Context                   # Aeron's nested names: ConsensusModule.Context, .Configuration, .State
    Configuration = Configuration
    State = State

    def __init__(self, ctx: _ModuleContext) -> None:
        """Use :meth:`launch`."""
        from aeron.cluster.consensus_module_agent import ConsensusModuleAgent
        try:
            ctx.conclude()
            self.ctx = ctx
            self.agent = ConsensusModuleAgent(ctx)
        except BaseException:
            if ctx.mark_file is not None:
                try:
                    ctx.mark_file.signal_failed_start()
                except Exception:       # noqa: BLE001 - the start failed already; that error is the one raised
                    pass
            try:
                ctx.close()
            except Exception:           # noqa: BLE001
                pass
            raise
        self._runner: AgentRunner | None = None
        self._invoker: AgentInvoker | None = None
        if ctx.use_agent_invoker:
            self._invoker = AgentInvoker(self.agent, ctx.counted_error_handler)
        else:
            supplier = ctx.idle_strategy_supplier
            assert supplier is not None, "set by conclude"
            self._runner = AgentRunner(self.agent, self.agent.bind_idle_strategy(supplier()), ctx.counted_error_handler)

    @classmethod
    def launch(cls, ctx: _ModuleContext | None = None, **attributes: Any) -> ConsensusModule:
        """Conclude ``ctx`` (or a Context of ``attributes``) and start the agent."""
        module = cls(ctx if ctx is not None else _ModuleContext(**attributes))
        if module._runner is not None:
            module._runner.start()
        else:
            assert module._invoker is not None
            module._invoker.start()
        return module

    @property
    def context(self) -> _ModuleContext:
        """The concluded context."""
        return self.ctx

    @property
    def conductor_agent_invoker(self) -> AgentInvoker | None:
        """The agent's invoker (with ``use_agent_invoker``), else None."""
        return self._invoker

    @property
    def is_terminated(self) -> bool:
        """The agent has stopped (terminated or closed)."""
        if self._runner is not None:
            return self._runner.is_closed or not self._runner.is_running
        return self._invoker is None or self._invoker.is_closed

    def close(self) -> None:
        """Stop the agent (its ``on_close`` closes what it opened and the context), interrupting a blocking step
        it is in (waiting for its services to start, say)."""
        self.agent.interrupt()
        if self._runner is not None:
            self._runner.close()
        if self._invoker is not None:
            self._invoker.close()

    def __enter__(self) -> ConsensusModule:
        """The module; the ``with`` block closes it."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close it."""
        self.close()

    def __repr__(self) -> str:
        """The member and its state."""
        return f"ConsensusModule(member_id={self.ctx.cluster_member_id}, cluster_id={self.ctx.cluster_id})"

