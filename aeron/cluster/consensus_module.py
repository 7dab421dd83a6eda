# SPDX-License-Identifier: Apache-2.0
"""The consensus module's ``State`` and ``Configuration`` (Aeron's ``ConsensusModule.State`` and
``ConsensusModule.Configuration``): protocol versions, counter type ids, and every ``aeron.cluster.*`` property
the consensus module reads, with its default, its ``AERON_CLUSTER_*`` environment variable and its parser.

``Configuration.SETTINGS`` lists them for a context to resolve (``aeron.common.settings.resolve``); the constants
keep Aeron's names (``LOG_CHANNEL_PROP_NAME``, ``LOG_CHANNEL_DEFAULT``, ...). The settings the consensus module
shares with the service container (cluster id and directories, control and snapshot channels, stream ids) are
``ClusteredServiceContainer.Configuration``'s, in :mod:`aeron.cluster.service.clustered_service_container`.
"""
from __future__ import annotations

import enum

from aeron._core.counters import CountersReader
from aeron.cluster.service.cluster_counters import (
    CLUSTER_CLIENT_TIMEOUT_COUNT_TYPE_ID,
    CLUSTER_CONSENSUS_MODULE_ERROR_COUNT_TYPE_ID,
    CLUSTER_CONSENSUS_MODULE_STATE_TYPE_ID,
    CLUSTER_CONTROL_TOGGLE_TYPE_ID,
    CLUSTER_ELECTION_COUNT_TYPE_ID,
    CLUSTER_ELECTION_STATE_TYPE_ID,
    CLUSTER_INVALID_REQUEST_COUNT_TYPE_ID,
    CLUSTER_LEADERSHIP_TERM_ID_TYPE_ID,
    CLUSTER_RECOVERY_STATE_TYPE_ID,
    CLUSTER_SNAPSHOT_COUNTER_TYPE_ID,
    ClusterCounters,
)
from aeron.cluster.service.cluster_mark_file import ClusterMarkFile
from aeron.cluster.service.clustered_service_container import Configuration as ContainerConfiguration
from aeron.common.errors import ClusterError
from aeron.common.settings import Setting, SettingsTable, parse_bool, parse_duration_ns, parse_int, \
    parse_size

__all__ = ["Configuration", "State"]

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
