# SPDX-License-Identifier: Apache-2.0
"""The cluster's counters: Java's type ids, keys and labels, finding them by type and cluster id, the recovery
state counter's key layout, the control toggles' transitions, and the state enums read from counters."""
import struct

import pytest

from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.counters import COUNTER_LENGTH, METADATA_LENGTH, CountersManager
from aeron.cluster import node_control
from aeron.cluster.cluster_control import CounterValue, ToggleState, find_control_toggle
from aeron.cluster.consensus_module import Configuration, State
from aeron.cluster.election_state import ElectionState
from aeron.cluster.service import cluster_counters as cc
from aeron.cluster.service.cluster import Role
from aeron.cluster.service.cluster_counters import ClusterCounters
from aeron.cluster.service.clustered_service_container import Configuration as ContainerConfiguration
from aeron.cluster.service.recovery_state import RecoveryState
from aeron.common.errors import ClusterError

COUNTERS = 64


class FakeAeron:
    """``add_counter`` into a CountersManager, returning a value view of the counter as a client's would be."""

    def __init__(self):
        self.metadata = AtomicBuffer(bytearray(COUNTERS * METADATA_LENGTH))
        self.values = AtomicBuffer(bytearray(COUNTERS * COUNTER_LENGTH))
        self.manager = CountersManager(self.metadata, self.values)

    def add_counter(self, type_id, label, key=b""):
        return CounterValue(self.values, self.manager.allocate(label, type_id, key))


@pytest.fixture
def aeron():
    return FakeAeron()


def test_type_ids_are_aerons():
    assert (cc.CLUSTER_CONSENSUS_MODULE_STATE_TYPE_ID, cc.CLUSTER_NODE_ROLE_TYPE_ID, cc.CLUSTER_CONTROL_TOGGLE_TYPE_ID,
            cc.CLUSTER_COMMIT_POSITION_TYPE_ID, cc.CLUSTER_RECOVERY_STATE_TYPE_ID, cc.CLUSTER_SNAPSHOT_COUNTER_TYPE_ID,
            cc.CLUSTER_ELECTION_STATE_TYPE_ID, cc.CLUSTER_CONSENSUS_MODULE_ERROR_COUNT_TYPE_ID,
            cc.CLUSTER_CLIENT_TIMEOUT_COUNT_TYPE_ID, cc.NODE_CONTROL_TOGGLE_TYPE_ID, cc.CLUSTER_ELECTION_COUNT_TYPE_ID,
            cc.CLUSTER_LEADERSHIP_TERM_ID_TYPE_ID, cc.CLUSTER_SESSION_TYPE_ID) == \
        (200, 201, 202, 203, 204, 205, 207, 212, 213, 233, 238, 239, 241)
    assert (Configuration.CONSENSUS_MODULE_STATE_TYPE_ID, Configuration.CLUSTER_NODE_ROLE_TYPE_ID,
            Configuration.COMMIT_POSITION_TYPE_ID, ContainerConfiguration.COMMIT_POSITION_TYPE_ID,
            ContainerConfiguration.CLUSTERED_SERVICE_ERROR_COUNT_TYPE_ID) == (200, 201, 203, 203, 215)


def test_cluster_counters_are_keyed_and_labelled_as_javas(aeron):
    role = ClusterCounters.allocate(aeron, cc.NODE_ROLE_NAME, cc.CLUSTER_NODE_ROLE_TYPE_ID, 3)
    commit = ClusterCounters.allocate(aeron, cc.COMMIT_POSITION_NAME, cc.CLUSTER_COMMIT_POSITION_TYPE_ID, 3)
    errors = ClusterCounters.allocate_versioned(aeron, cc.CONSENSUS_MODULE_ERRORS_NAME,
                                                cc.CLUSTER_CONSENSUS_MODULE_ERROR_COUNT_TYPE_ID, 3, "1.2.3", "abc")
    service = ClusterCounters.allocate_service_counter(aeron, "Cluster container max cycle time in ns",
                                                       cc.CLUSTER_CLUSTERED_SERVICE_MAX_CYCLE_TIME_TYPE_ID, 3, 1)
    service_errors = ClusterCounters.allocate_service_error_counter(aeron, 3, 1, "1.2.3", "abc")
    reader = aeron.manager
    assert reader.get_counter_label(role.counter_id) == "Cluster node role - clusterId=3"
    assert reader.get_counter_label(commit.counter_id) == "Cluster commit-pos: - clusterId=3"
    assert reader.get_counter_label(errors.counter_id) == "Cluster Errors - clusterId=3 version=1.2.3 commit=abc"
    assert reader.get_counter_label(service.counter_id) == \
        "Cluster container max cycle time in ns - clusterId=3 serviceId=1"
    assert reader.get_counter_label(service_errors.counter_id) == \
        "Cluster Container Errors - clusterId=3 serviceId=1 version=1.2.3 commit=abc"
    assert reader.get_counter_key(role.counter_id)[:4] == struct.pack("<i", 3)
    assert reader.get_counter_key(service.counter_id)[:8] == struct.pack("<ii", 3, 1)
    assert ClusterCounters.find(reader, cc.CLUSTER_NODE_ROLE_TYPE_ID, 3) == role.counter_id
    assert ClusterCounters.find(reader, cc.CLUSTER_NODE_ROLE_TYPE_ID, 4) == -1
    role.set(Role.LEADER)
    assert ClusterCounters.find_value(reader, cc.CLUSTER_NODE_ROLE_TYPE_ID, 3) == 2
    assert ClusterCounters.find_value(reader, cc.CLUSTER_ELECTION_STATE_TYPE_ID, 3) is None
    ClusterCounters.check_type_id(reader, role.counter_id, cc.CLUSTER_NODE_ROLE_TYPE_ID)
    with pytest.raises(ClusterError, match="does not match the expected typeId=203"):
        ClusterCounters.check_type_id(reader, role.counter_id, cc.CLUSTER_COMMIT_POSITION_TYPE_ID)


def test_find_skips_freed_counters_and_stops_at_the_first_unused(aeron):
    first = ClusterCounters.allocate(aeron, "x", cc.CLUSTER_NODE_ROLE_TYPE_ID, 0)
    second = ClusterCounters.allocate(aeron, "y", cc.CLUSTER_NODE_ROLE_TYPE_ID, 0)
    aeron.manager.free(first.counter_id)
    assert ClusterCounters.find(aeron.manager, cc.CLUSTER_NODE_ROLE_TYPE_ID, 0) == second.counter_id


def test_cluster_session_counter_key_and_label():
    info = ClusterCounters.session_info("my-client", "127.0.0.1:5000", -42)
    assert info == "my-client sourceIdentity=127.0.0.1:5000 sessionId=-42"
    assert ClusterCounters.session_info("", "aeron:ipc", 7) == "sourceIdentity=aeron:ipc sessionId=7"
    assert ClusterCounters.cluster_session_label(info, 0) == \
        "cluster-session: my-client sourceIdentity=127.0.0.1:5000 sessionId=-42 - clusterId=0"
    assert ClusterCounters.cluster_session_key(2, 9) == struct.pack("<iq", 2, 9)
    assert len(ClusterCounters.cluster_session_label("x" * 1000, 0)) == 380


def test_recovery_state_key_and_label(aeron):
    counter = RecoveryState.allocate(aeron, 4, 736, 1795335493045, 2, 11, 12)
    reader = aeron.manager
    key = reader.get_counter_key(counter.counter_id)
    assert key[:48] == struct.pack("<qqqiiqq", 4, 736, 1795335493045, 2, 2, 11, 12)
    assert reader.get_counter_label(counter.counter_id) == \
        "Cluster recovery: leadershipTermId=4 logPosition=736 clusterId=2"
    assert reader.get_counter_type_id(counter.counter_id) == 204
    assert RecoveryState.find_counter_id(reader, 2) == counter.counter_id
    assert RecoveryState.find_counter_id(reader, 3) == -1
    assert (RecoveryState.get_leadership_term_id(reader, counter.counter_id),
            RecoveryState.get_log_position(reader, counter.counter_id),
            RecoveryState.get_timestamp(reader, counter.counter_id)) == (4, 736, 1795335493045)
    assert [RecoveryState.get_snapshot_recording_id(reader, counter.counter_id, s) for s in (0, 1)] == [11, 12]
    with pytest.raises(ClusterError, match="invalid serviceId 2 for count of 2"):
        RecoveryState.get_snapshot_recording_id(reader, counter.counter_id, 2)
    empty = RecoveryState.allocate(aeron, -1, 0, 0, 5)
    assert RecoveryState.get_leadership_term_id(reader, empty.counter_id) == -1
    other = ClusterCounters.allocate(aeron, "z", cc.CLUSTER_NODE_ROLE_TYPE_ID, 2)
    assert RecoveryState.get_log_position(reader, other.counter_id) == -1
    with pytest.raises(ClusterError, match="active counter not found"):
        RecoveryState.get_snapshot_recording_id(reader, other.counter_id, 0)
    with pytest.raises(ClusterError, match="exceeds max key length 112"):
        RecoveryState.key(0, 0, 0, 0, *range(11))


def test_a_hostile_service_count_in_a_recovery_state_key_is_refused(aeron):
    key = bytearray(RecoveryState.key(1, 2, 3, 0, 10))
    struct.pack_into("<i", key, RecoveryState.SERVICE_COUNT_OFFSET, 1000)
    counter = aeron.add_counter(RecoveryState.RECOVERY_STATE_TYPE_ID, "hostile", bytes(key))
    with pytest.raises(ClusterError, match="more than its key holds"):
        RecoveryState.get_snapshot_recording_id(aeron.manager, counter.counter_id, 500)


def test_the_cluster_control_toggle(aeron):
    toggle_counter = ClusterCounters.allocate(aeron, cc.CONTROL_TOGGLE_NAME, cc.CLUSTER_CONTROL_TOGGLE_TYPE_ID, 0)
    toggle = find_control_toggle(aeron.manager, aeron.values, 0)
    assert toggle.counter_id == toggle_counter.counter_id and find_control_toggle(aeron.manager, aeron.values, 1) is None
    assert ToggleState.get(toggle) == ToggleState.INACTIVE
    assert not ToggleState.SNAPSHOT.toggle(toggle)                    # a follower's: nothing to do
    ToggleState.activate(toggle)
    assert ToggleState.SNAPSHOT.toggle(toggle) and ToggleState.get(toggle) == ToggleState.SNAPSHOT
    assert not ToggleState.SUSPEND.toggle(toggle)                     # busy
    ToggleState.reset(toggle)
    assert ToggleState.SUSPEND.toggle(toggle)
    assert ToggleState.RESUME.toggle(toggle) and ToggleState.get(toggle) == ToggleState.RESUME
    ToggleState.deactivate(toggle)
    assert toggle.get() == 0
    toggle.set(99)
    with pytest.raises(ClusterError, match="invalid toggle value: 99"):
        ToggleState.get(toggle)
    assert [s.code for s in ToggleState] == list(range(8))


def test_the_node_control_toggle(aeron):
    ClusterCounters.allocate(aeron, cc.NODE_CONTROL_TOGGLE_NAME, cc.NODE_CONTROL_TOGGLE_TYPE_ID, 0)
    toggle = node_control.find_node_control_toggle(aeron.manager, aeron.values, 0)
    node_control.ToggleState.activate(toggle)
    assert node_control.ToggleState.VALIDATE_RECORDING_LOG.toggle(toggle)
    assert node_control.ToggleState.get(toggle) == node_control.ToggleState.VALIDATE_RECORDING_LOG
    assert node_control.CONTROL_TOGGLE_TYPE_ID == 233


def test_states_read_from_counters(aeron):
    assert State.find(aeron.manager, 0) is None
    state = ClusterCounters.allocate(aeron, cc.CONSENSUS_MODULE_STATE_NAME, cc.CLUSTER_CONSENSUS_MODULE_STATE_TYPE_ID,
                                     0)
    state.set(State.SUSPENDED)
    assert State.find(aeron.manager, 0) == State.SUSPENDED
    state.set(12)
    with pytest.raises(ClusterError, match="invalid state counter code: 12"):
        State.find(aeron.manager, 0)
    assert ElectionState.get(17) == ElectionState.CLOSED and len(ElectionState) == 18
    with pytest.raises(ClusterError, match="invalid election state counter code: 18"):
        ElectionState.get(18)
    assert Role.get(2) == Role.LEADER
    with pytest.raises(ClusterError, match="Invalid role counter code: -1"):
        Role.get(-1)
