# SPDX-License-Identifier: Apache-2.0
"""The recovery state counter (type 204): what a starting consensus module recovers from, published for its
services (Aeron's ``RecoveryState``).

Key: leadershipTermId int64 @0, logPosition int64 @8, timestamp int64 @16, clusterId int32 @24, serviceCount
int32 @28, then one snapshot recording id (int64) per service @32. Label: ``Cluster recovery: leadershipTermId=<t>
logPosition=<p> clusterId=<c>``. Without a snapshot the term is -1, the position and timestamp 0 and there are no
recording ids: the services start empty.
"""
from __future__ import annotations

import struct
from typing import Any

from aeron._core.counters import MAX_KEY_LENGTH, RECORD_ALLOCATED, RECORD_UNUSED, CountersReader
from aeron.cluster.service.cluster_counters import CLUSTER_RECOVERY_STATE_TYPE_ID
from aeron.common.constants import NULL_VALUE
from aeron.common.errors import ClusterError

__all__ = ["RecoveryState"]

NULL_COUNTER_ID = -1


class RecoveryState:
    """Allocating and reading the recovery state counter."""

    RECOVERY_STATE_TYPE_ID = CLUSTER_RECOVERY_STATE_TYPE_ID
    NAME = "Cluster recovery: leadershipTermId="
    LEADERSHIP_TERM_ID_OFFSET = 0
    LOG_POSITION_OFFSET = 8
    TIMESTAMP_OFFSET = 16
    CLUSTER_ID_OFFSET = 24
    SERVICE_COUNT_OFFSET = 28
    SNAPSHOT_RECORDING_IDS_OFFSET = 32

    @staticmethod
    def key(leadership_term_id: int, log_position: int, timestamp: int, cluster_id: int,
            *snapshot_recording_ids: int) -> bytes:
        """The counter's key (ClusterError when the services' ids do not fit in a counter key)."""
        length = RecoveryState.SNAPSHOT_RECORDING_IDS_OFFSET + 8 * len(snapshot_recording_ids)
        if length > MAX_KEY_LENGTH:
            raise ClusterError(f"{length} exceeds max key length {MAX_KEY_LENGTH}")
        return struct.pack(f"<qqqii{len(snapshot_recording_ids)}q", leadership_term_id, log_position, timestamp,
                           cluster_id, len(snapshot_recording_ids), *snapshot_recording_ids)

    @staticmethod
    def label(leadership_term_id: int, log_position: int, cluster_id: int) -> str:
        """The counter's label."""
        return f"{RecoveryState.NAME}{leadership_term_id} logPosition={log_position} clusterId={cluster_id}"

    @staticmethod
    def allocate(aeron: Any, leadership_term_id: int, log_position: int, timestamp: int, cluster_id: int,
                 *snapshot_recording_ids: int) -> Any:
        """Allocate the counter through ``aeron.add_counter``."""
        return aeron.add_counter(RecoveryState.RECOVERY_STATE_TYPE_ID,
                                 RecoveryState.label(leadership_term_id, log_position, cluster_id),
                                 RecoveryState.key(leadership_term_id, log_position, timestamp, cluster_id,
                                                   *snapshot_recording_ids))

    @staticmethod
    def find_counter_id(counters: CountersReader, cluster_id: int) -> int:
        """The recovery state counter of ``cluster_id``, or -1."""
        for counter_id in range(counters.max_counter_id + 1):
            state = counters.get_counter_state(counter_id)
            if state == RECORD_ALLOCATED and \
                    counters.get_counter_type_id(counter_id) == RecoveryState.RECOVERY_STATE_TYPE_ID:
                if struct.unpack_from("<i", counters.get_counter_key(counter_id),
                                      RecoveryState.CLUSTER_ID_OFFSET)[0] == cluster_id:
                    return counter_id
            elif state == RECORD_UNUSED:
                break
        return NULL_COUNTER_ID

    @staticmethod
    def _key_of(counters: CountersReader, counter_id: int) -> bytes | None:
        if counters.get_counter_state(counter_id) == RECORD_ALLOCATED and \
                counters.get_counter_type_id(counter_id) == RecoveryState.RECOVERY_STATE_TYPE_ID:
            return counters.get_counter_key(counter_id)
        return None

    @staticmethod
    def get_leadership_term_id(counters: CountersReader, counter_id: int) -> int:
        """The leadership term of the snapshot recovered from (-1 when the counter is not a recovery state)."""
        key = RecoveryState._key_of(counters, counter_id)
        return NULL_VALUE if key is None else struct.unpack_from("<q", key, RecoveryState.LEADERSHIP_TERM_ID_OFFSET)[0]

    @staticmethod
    def get_log_position(counters: CountersReader, counter_id: int) -> int:
        """The log position of the snapshot recovered from."""
        key = RecoveryState._key_of(counters, counter_id)
        return NULL_VALUE if key is None else struct.unpack_from("<q", key, RecoveryState.LOG_POSITION_OFFSET)[0]

    @staticmethod
    def get_timestamp(counters: CountersReader, counter_id: int) -> int:
        """The cluster time of the snapshot recovered from."""
        key = RecoveryState._key_of(counters, counter_id)
        return NULL_VALUE if key is None else struct.unpack_from("<q", key, RecoveryState.TIMESTAMP_OFFSET)[0]

    @staticmethod
    def get_snapshot_recording_id(counters: CountersReader, counter_id: int, service_id: int) -> int:
        """The snapshot recording of ``service_id`` (ClusterError for a service the counter does not name, or a
        counter that is not an allocated recovery state)."""
        key = RecoveryState._key_of(counters, counter_id)
        if key is None:
            raise ClusterError(f"active counter not found {counter_id}")
        service_count = struct.unpack_from("<i", key, RecoveryState.SERVICE_COUNT_OFFSET)[0]
        if not 0 <= service_id < service_count:
            raise ClusterError(f"invalid serviceId {service_id} for count of {service_count}")
        if RecoveryState.SNAPSHOT_RECORDING_IDS_OFFSET + 8 * (service_id + 1) > len(key):
            raise ClusterError(f"recovery state counter {counter_id} names {service_count} services: more than its "
                               f"key holds")
        recording_id: int = struct.unpack_from("<q", key, RecoveryState.SNAPSHOT_RECORDING_IDS_OFFSET + 8 * service_id)[0]
        return recording_id
