# SPDX-License-Identifier: Apache-2.0
"""The counters through which the consensus module, its services and ClusterTool coordinate, in the media
driver's counters (Aeron's ``ClusterCounters`` and the cluster type ids of ``AeronCounters``).

A cluster counter's key is its cluster id (int32) and its label ``<name> - clusterId=<id>``; a service counter's
key adds the service id and its label `` serviceId=<id>``; a versioned one ends with `` version=<v>
commit=<sha>``. :meth:`ClusterCounters.find` finds one by type and cluster id in a CountersReader, from a client
(``aeron.counters_reader``) or from a mapped cnc.dat (a tool).
"""
from __future__ import annotations

import struct
from typing import Any

from aeron._core.counters import MAX_LABEL_LENGTH, RECORD_ALLOCATED, RECORD_UNUSED, CountersReader
from aeron.common.constants import NULL_VALUE
from aeron.common.errors import ClusterError

__all__ = ["CLUSTER_ID_LABEL_SUFFIX", "ClusterCounters"]


# AeronCounters: the cluster's type ids
CLUSTER_CONSENSUS_MODULE_STATE_TYPE_ID = 200
CLUSTER_NODE_ROLE_TYPE_ID = 201
CLUSTER_CONTROL_TOGGLE_TYPE_ID = 202
CLUSTER_COMMIT_POSITION_TYPE_ID = 203
CLUSTER_RECOVERY_STATE_TYPE_ID = 204
CLUSTER_SNAPSHOT_COUNTER_TYPE_ID = 205
CLUSTER_ELECTION_STATE_TYPE_ID = 207
CLUSTER_BACKUP_STATE_TYPE_ID = 208
CLUSTER_BACKUP_LIVE_LOG_POSITION_TYPE_ID = 209
CLUSTER_BACKUP_QUERY_DEADLINE_TYPE_ID = 210
CLUSTER_BACKUP_ERROR_COUNT_TYPE_ID = 211
CLUSTER_CONSENSUS_MODULE_ERROR_COUNT_TYPE_ID = 212
CLUSTER_CLIENT_TIMEOUT_COUNT_TYPE_ID = 213
CLUSTER_INVALID_REQUEST_COUNT_TYPE_ID = 214
CLUSTER_CLUSTERED_SERVICE_ERROR_COUNT_TYPE_ID = 215
CLUSTER_MAX_CYCLE_TIME_TYPE_ID = 216
CLUSTER_CYCLE_TIME_THRESHOLD_EXCEEDED_TYPE_ID = 217
CLUSTER_CLUSTERED_SERVICE_MAX_CYCLE_TIME_TYPE_ID = 218
CLUSTER_CLUSTERED_SERVICE_CYCLE_TIME_THRESHOLD_EXCEEDED_TYPE_ID = 219
CLUSTER_STANDBY_STATE_TYPE_ID = 220
CLUSTER_STANDBY_ERROR_COUNT_TYPE_ID = 221
CLUSTER_STANDBY_HEARTBEAT_RESPONSE_COUNT_TYPE_ID = 222
CLUSTER_STANDBY_CONTROL_TOGGLE_TYPE_ID = 223
CLUSTER_STANDBY_MAX_CYCLE_TIME_TYPE_ID = 227
CLUSTER_STANDBY_CYCLE_TIME_THRESHOLD_EXCEEDED_TYPE_ID = 228
CLUSTER_STANDBY_SOURCE_MEMBER_ID_TYPE_ID = 231
CLUSTER_STANDBY_SNAPSHOT_COUNTER_TYPE_ID = 232
NODE_CONTROL_TOGGLE_TYPE_ID = 233
CLUSTER_TOTAL_MAX_SNAPSHOT_DURATION_TYPE_ID = 234
CLUSTER_TOTAL_SNAPSHOT_DURATION_THRESHOLD_EXCEEDED_TYPE_ID = 235
CLUSTERED_SERVICE_MAX_SNAPSHOT_DURATION_TYPE_ID = 236
CLUSTERED_SERVICE_SNAPSHOT_DURATION_THRESHOLD_EXCEEDED_TYPE_ID = 237
CLUSTER_ELECTION_COUNT_TYPE_ID = 238
CLUSTER_LEADERSHIP_TERM_ID_TYPE_ID = 239
CLUSTER_BACKUP_SNAPSHOT_RETRIEVE_COUNT_TYPE_ID = 240
CLUSTER_SESSION_TYPE_ID = 241

CLUSTER_ID_LABEL_SUFFIX = " - clusterId="
SERVICE_ID_SUFFIX = " serviceId="

# the names the consensus module gives its counters (ConsensusModule.Context.conclude)
CONSENSUS_MODULE_STATE_NAME = "Consensus Module state"
ELECTION_STATE_NAME = "Cluster election state"
ELECTION_COUNT_NAME = "Cluster election count"
LEADERSHIP_TERM_ID_NAME = "Cluster leadership term id"
NODE_ROLE_NAME = "Cluster node role"
COMMIT_POSITION_NAME = "Cluster commit-pos:"
CONTROL_TOGGLE_NAME = "Cluster control toggle"
NODE_CONTROL_TOGGLE_NAME = "Node control toggle"
SNAPSHOT_COUNT_NAME = "Cluster snapshot count"
CLIENT_TIMEOUT_COUNT_NAME = "Cluster timed out client count"
STANDBY_SNAPSHOT_COUNT_NAME = "Cluster standby snapshots received"
CONSENSUS_MODULE_ERRORS_NAME = "Cluster Errors"
SERVICE_ERRORS_NAME = "Cluster Container Errors"
CLUSTER_SESSION_LABEL_PREFIX = "cluster-session: "


def format_version_info(full_version: str, commit_hash_code: str) -> str:
    """``version=<v> commit=<sha>`` (Aeron's ``AeronCounters.formatVersionInfo``)."""
    return f"version={full_version} commit={commit_hash_code}"


def _label(text: str) -> str:
    # Agrona writes labels as ASCII and the driver keeps at most MAX_LABEL_LENGTH bytes of them
    return text.encode("ascii", "replace")[:MAX_LABEL_LENGTH].decode("ascii")


class ClusterCounters:
    """Allocating and finding the cluster's counters (Aeron's ``ClusterCounters``). ``aeron`` is a client with
    ``add_counter(type_id, label, key)``."""

    @staticmethod
    def allocate(aeron: Any, name: str, type_id: int, cluster_id: int) -> Any:
        """A counter keyed by ``cluster_id``, labelled ``<name> - clusterId=<id>``."""
        return aeron.add_counter(type_id, _label(f"{name}{CLUSTER_ID_LABEL_SUFFIX}{cluster_id}"),
                                 struct.pack("<i", cluster_id))

    @staticmethod
    def allocate_versioned(aeron: Any, name: str, type_id: int, cluster_id: int, version: str,
                           commit_hash_code: str) -> Any:
        """As :meth:`allocate`, the label ending with `` version=<v> commit=<sha>``."""
        label = f"{name}{CLUSTER_ID_LABEL_SUFFIX}{cluster_id} {format_version_info(version, commit_hash_code)}"
        return aeron.add_counter(type_id, _label(label), struct.pack("<i", cluster_id))

    @staticmethod
    def allocate_service_counter(aeron: Any, name: str, type_id: int, cluster_id: int, service_id: int) -> Any:
        """A counter keyed by cluster and service id, labelled ``<name> - clusterId=<c> serviceId=<s>``."""
        label = f"{name}{CLUSTER_ID_LABEL_SUFFIX}{cluster_id}{SERVICE_ID_SUFFIX}{service_id}"
        return aeron.add_counter(type_id, _label(label), struct.pack("<ii", cluster_id, service_id))

    @staticmethod
    def allocate_service_error_counter(aeron: Any, cluster_id: int, service_id: int, version: str,
                                       commit_hash_code: str) -> Any:
        """A service container's error counter (type 215), with its version."""
        label = (f"{SERVICE_ERRORS_NAME}{CLUSTER_ID_LABEL_SUFFIX}{cluster_id}{SERVICE_ID_SUFFIX}{service_id} "
                 f"{format_version_info(version, commit_hash_code)}")
        return aeron.add_counter(CLUSTER_CLUSTERED_SERVICE_ERROR_COUNT_TYPE_ID, _label(label),
                                 struct.pack("<ii", cluster_id, service_id))

    @staticmethod
    def cluster_session_key(cluster_id: int, cluster_session_id: int) -> bytes:
        """The key of a cluster session counter (type 241): cluster id int32, then session id int64."""
        return struct.pack("<iq", cluster_id, cluster_session_id)

    @staticmethod
    def cluster_session_label(session_info: str, cluster_id: int) -> str:
        """``cluster-session: <session info> - clusterId=<id>`` (``ClusterSession.addSessionCounter``)."""
        return _label(f"{CLUSTER_SESSION_LABEL_PREFIX}{session_info}{CLUSTER_ID_LABEL_SUFFIX}{cluster_id}")

    @staticmethod
    def session_info(client_info: str, source_identity: str, session_id: int) -> str:
        """A session's description: its client info, then the ingress image's source identity and session id
        (``SessionManager.sessionInfo``)."""
        image_info = f"sourceIdentity={source_identity} sessionId={session_id}"
        return f"{client_info} {image_info}" if client_info else image_info

    @staticmethod
    def find(counters: CountersReader, type_id: int, cluster_id: int) -> int:
        """The id of the first allocated counter of ``type_id`` keyed by ``cluster_id``, or -1."""
        for counter_id in range(counters.max_counter_id + 1):
            state = counters.get_counter_state(counter_id)
            if state == RECORD_ALLOCATED:
                if counters.get_counter_type_id(counter_id) == type_id and \
                        struct.unpack_from("<i", counters.get_counter_key(counter_id))[0] == cluster_id:
                    return counter_id
            elif state == RECORD_UNUSED:
                break
        return NULL_VALUE

    @staticmethod
    def find_value(counters: CountersReader, type_id: int, cluster_id: int) -> int | None:
        """The value of the counter :meth:`find` finds, or None."""
        counter_id = ClusterCounters.find(counters, type_id, cluster_id)
        return None if counter_id == NULL_VALUE else counters.get_counter_value(counter_id)

    @staticmethod
    def check_type_id(counters: CountersReader, counter_id: int, expected_type_id: int) -> None:
        """ClusterError when ``counter_id`` is not of ``expected_type_id`` (``AeronCounters.validateCounterTypeId``)."""
        actual = counters.get_counter_type_id(counter_id)
        if actual != expected_type_id:
            raise ClusterError(f"The type for counterId={counter_id}, typeId={actual} does not match the expected "
                               f"typeId={expected_type_id}")
