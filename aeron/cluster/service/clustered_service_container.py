# SPDX-License-Identifier: Apache-2.0
"""``ClusteredServiceContainer.Configuration``: the constants and ``aeron.cluster.*`` properties of the clustered
service container, several of which the consensus module reads too (cluster id, directories, the control
channel and its streams, the snapshot channel), each with its default, its ``AERON_CLUSTER_*`` environment
variable and its parser (``Configuration.SETTINGS``)."""
from __future__ import annotations

from aeron.cluster.service.cluster_counters import (
    CLUSTER_CLUSTERED_SERVICE_ERROR_COUNT_TYPE_ID,
    CLUSTER_COMMIT_POSITION_TYPE_ID,
    CLUSTER_NODE_ROLE_TYPE_ID,
)
from aeron.common.settings import Setting, SettingsTable, parse_bool, parse_duration_ns, parse_int, \
    parse_size

__all__ = ["Configuration"]

_SECOND_NS = 1_000_000_000
_MILLI_NS = 1_000_000


class Configuration(SettingsTable):
    """``ClusteredServiceContainer.Configuration``: the service container's constants and properties."""

    SNAPSHOT_TYPE_ID = 2                # typeId of a clustered service's SnapshotMarker
    MARK_FILE_UPDATE_INTERVAL_NS = _SECOND_NS
    LIVENESS_TIMEOUT_MS = 10 * (MARK_FILE_UPDATE_INTERVAL_NS // _MILLI_NS)
    MAX_SERVICE_COUNT = 10
    CLUSTER_NODE_ROLE_TYPE_ID = CLUSTER_NODE_ROLE_TYPE_ID
    COMMIT_POSITION_TYPE_ID = CLUSTER_COMMIT_POSITION_TYPE_ID
    CLUSTERED_SERVICE_ERROR_COUNT_TYPE_ID = CLUSTER_CLUSTERED_SERVICE_ERROR_COUNT_TYPE_ID

    CLUSTER_ID_PROP_NAME = "aeron.cluster.id"
    CLUSTER_ID_DEFAULT = 0
    SERVICE_ID_PROP_NAME = "aeron.cluster.service.id"
    SERVICE_ID_DEFAULT = 0
    SERVICE_NAME_PROP_NAME = "aeron.cluster.service.name"
    SERVICE_NAME_DEFAULT = "clustered-service"
    SERVICE_CLASS_NAME_PROP_NAME = "aeron.cluster.service.class.name"
    REPLAY_CHANNEL_PROP_NAME = "aeron.cluster.replay.channel"
    REPLAY_CHANNEL_DEFAULT = "aeron:ipc"
    REPLAY_STREAM_ID_PROP_NAME = "aeron.cluster.replay.stream.id"
    REPLAY_STREAM_ID_DEFAULT = 103
    CONTROL_CHANNEL_PROP_NAME = "aeron.cluster.control.channel"
    CONTROL_CHANNEL_DEFAULT = "aeron:ipc?term-length=128k"
    SERVICE_STREAM_ID_PROP_NAME = "aeron.cluster.service.stream.id"
    SERVICE_STREAM_ID_DEFAULT = 104
    CONSENSUS_MODULE_STREAM_ID_PROP_NAME = "aeron.cluster.consensus.module.stream.id"
    CONSENSUS_MODULE_STREAM_ID_DEFAULT = 105
    SNAPSHOT_CHANNEL_PROP_NAME = "aeron.cluster.snapshot.channel"
    SNAPSHOT_CHANNEL_DEFAULT = "aeron:ipc?alias=snapshot"
    SNAPSHOT_STREAM_ID_PROP_NAME = "aeron.cluster.snapshot.stream.id"
    SNAPSHOT_STREAM_ID_DEFAULT = 106
    CLUSTER_DIR_PROP_NAME = "aeron.cluster.dir"
    CLUSTER_DIR_DEFAULT = "aeron-cluster"
    CLUSTER_SERVICES_DIR_PROP_NAME = "aeron.cluster.services.dir"
    MARK_FILE_DIR_PROP_NAME = "aeron.cluster.mark.file.dir"
    ERROR_BUFFER_LENGTH_PROP_NAME = "aeron.cluster.service.error.buffer.length"
    ERROR_BUFFER_LENGTH_DEFAULT = 1024 * 1024
    RESPONDER_SERVICE_PROP_NAME = "aeron.cluster.service.responder"
    RESPONDER_SERVICE_DEFAULT = True
    LOG_FRAGMENT_LIMIT_PROP_NAME = "aeron.cluster.log.fragment.limit"
    LOG_FRAGMENT_LIMIT_DEFAULT = 50
    DELEGATING_ERROR_HANDLER_PROP_NAME = "aeron.cluster.service.delegating.error.handler"
    CYCLE_THRESHOLD_PROP_NAME = "aeron.cluster.service.cycle.threshold"
    CYCLE_THRESHOLD_DEFAULT_NS = 100 * _MILLI_NS
    SNAPSHOT_DURATION_THRESHOLD_PROP_NAME = "aeron.cluster.service.snapshot.threshold"
    SNAPSHOT_DURATION_THRESHOLD_DEFAULT_NS = 1000 * _MILLI_NS
    CLUSTER_IDLE_STRATEGY_PROP_NAME = "aeron.cluster.idle.strategy"
    DEFAULT_IDLE_STRATEGY = "org.agrona.concurrent.BackoffIdleStrategy"

    SETTINGS: tuple[Setting, ...] = (
        Setting("cluster_id", CLUSTER_ID_PROP_NAME, CLUSTER_ID_DEFAULT, parse_int),
        Setting("service_id", SERVICE_ID_PROP_NAME, SERVICE_ID_DEFAULT, parse_int),
        Setting("service_name", SERVICE_NAME_PROP_NAME, SERVICE_NAME_DEFAULT),
        Setting("service_class_name", SERVICE_CLASS_NAME_PROP_NAME, None),
        Setting("replay_channel", REPLAY_CHANNEL_PROP_NAME, REPLAY_CHANNEL_DEFAULT),
        Setting("replay_stream_id", REPLAY_STREAM_ID_PROP_NAME, REPLAY_STREAM_ID_DEFAULT, parse_int),
        Setting("control_channel", CONTROL_CHANNEL_PROP_NAME, CONTROL_CHANNEL_DEFAULT),
        Setting("service_stream_id", SERVICE_STREAM_ID_PROP_NAME, SERVICE_STREAM_ID_DEFAULT, parse_int),
        Setting("consensus_module_stream_id", CONSENSUS_MODULE_STREAM_ID_PROP_NAME,
                CONSENSUS_MODULE_STREAM_ID_DEFAULT, parse_int),
        Setting("snapshot_channel", SNAPSHOT_CHANNEL_PROP_NAME, SNAPSHOT_CHANNEL_DEFAULT),
        Setting("snapshot_stream_id", SNAPSHOT_STREAM_ID_PROP_NAME, SNAPSHOT_STREAM_ID_DEFAULT, parse_int),
        Setting("cluster_dir", CLUSTER_DIR_PROP_NAME, CLUSTER_DIR_DEFAULT),
        Setting("cluster_services_dir", CLUSTER_SERVICES_DIR_PROP_NAME, None),
        Setting("mark_file_dir", MARK_FILE_DIR_PROP_NAME, None),
        Setting("error_buffer_length", ERROR_BUFFER_LENGTH_PROP_NAME, ERROR_BUFFER_LENGTH_DEFAULT, parse_size),
        Setting("is_responding_service", RESPONDER_SERVICE_PROP_NAME, RESPONDER_SERVICE_DEFAULT, parse_bool),
        Setting("log_fragment_limit", LOG_FRAGMENT_LIMIT_PROP_NAME, LOG_FRAGMENT_LIMIT_DEFAULT, parse_int),
        Setting("delegating_error_handler", DELEGATING_ERROR_HANDLER_PROP_NAME, None),
        Setting("cycle_threshold_ns", CYCLE_THRESHOLD_PROP_NAME, CYCLE_THRESHOLD_DEFAULT_NS, parse_duration_ns),
        Setting("snapshot_duration_threshold_ns", SNAPSHOT_DURATION_THRESHOLD_PROP_NAME,
                SNAPSHOT_DURATION_THRESHOLD_DEFAULT_NS, parse_duration_ns),
        Setting("idle_strategy", CLUSTER_IDLE_STRATEGY_PROP_NAME, DEFAULT_IDLE_STRATEGY),
    )
