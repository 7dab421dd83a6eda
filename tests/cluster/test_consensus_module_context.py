# SPDX-License-Identifier: Apache-2.0
"""ConsensusModule.Context: Aeron's properties and environment variables, typed errors for bad settings, and what
conclude() makes (the cluster directory's files and the counters with Aeron's labels)."""
from __future__ import annotations

import pytest

from aeron.cluster.consensus_module import ConsensusModule, Context
from aeron.cluster.security import ALLOW_BACKUP_AND_STANDBY
from aeron.cluster.timer_service import PriorityHeapTimerServiceSupplier, WheelTimerServiceSupplier
from aeron.common.errors import ClusterError, ConfigurationError
from aeron.common.security import DEFAULT_AUTHENTICATOR
from aeron.driver import MediaDriver
from tests.support import driver_context

MEMBERS = "0,localhost:20000,localhost:20001,localhost:20002,localhost:0,localhost:8010"


def base(**overrides):
    props = {"aeron.cluster.members": MEMBERS, "aeron.cluster.ingress.channel": "aeron:udp",
             "aeron.cluster.replication.channel": "aeron:udp?endpoint=localhost:0"}
    props.update(overrides)
    return props


def test_properties_and_environment():
    ctx = Context(base(**{"aeron.cluster.member.id": "0", "aeron.cluster.session.timeout": "3s",
                          "aeron.cluster.leader.heartbeat.interval": "50ms", "aeron.cluster.max.sessions": "3"}),
                  environ={"AERON_CLUSTER_ELECTION_TIMEOUT": "250ms", "AERON_CLUSTER_ID": "4",
                           "AERON_CLUSTER_SESSION_TIMEOUT": "9s"})
    assert ctx.session_timeout_ns == 3_000_000_000           # properties win over the environment
    assert ctx.election_timeout_ns == 250_000_000
    assert ctx.cluster_id == 4
    assert ctx.leader_heartbeat_interval_ns == 50_000_000
    assert ctx.max_concurrent_sessions == 3
    assert ctx.log_channel == "aeron:udp?term-length=64m"
    assert ctx.consensus_stream_id == 108 and ctx.log_stream_id == 100 and ctx.snapshot_stream_id == 107
    assert ctx.ingress_stream_id == 101 and ctx.service_stream_id == 104 and ctx.consensus_module_stream_id == 105
    ctx.set("AERON_CLUSTER_APPOINTED_LEADER_ID", "2")
    assert ctx.appointed_leader_id == 2
    assert ConsensusModule.Context is Context


def test_bad_settings_are_typed_errors():
    with pytest.raises(ConfigurationError, match="aeron.cluster.session.timeout"):
        Context(base(**{"aeron.cluster.session.timeout": "soon"}), environ={})
    with pytest.raises(ConfigurationError, match="unknown consensus module property"):
        Context({"aeron.cluster.no.such.thing": "1"}, environ={})
    with pytest.raises(ConfigurationError, match="unknown ConsensusModule.Context attribute"):
        Context(environ={}, no_such_attribute=1)
    ctx = Context(environ={})
    with pytest.raises(ConfigurationError, match="aeron.cluster.service.count"):
        ctx.service_count = "two"
    with pytest.raises(ConfigurationError, match="aeron.cluster.service.count"):
        ctx.service_count = 2.5
    with pytest.raises(ConfigurationError, match="aeron.cluster.ingress.ipc.allowed"):
        ctx.is_ipc_ingress_allowed = "perhaps"
    ctx.session_timeout_ns = "250ms"                       # text parses as the property would
    assert ctx.session_timeout_ns == 250_000_000


def test_clocks_suppliers_and_idle_strategies_are_taken_as_given():
    supplier = PriorityHeapTimerServiceSupplier()
    clock = object()
    ctx = Context(environ={}, timer_service_supplier=supplier, cluster_clock=clock, idle_strategy="noop")
    assert ctx.timer_service_supplier is supplier and ctx.cluster_clock is clock and ctx.idle_strategy == "noop"


@pytest.mark.parametrize("overrides, message", [
    ({"aeron.cluster.log.channel": "aeron:udp?term-length=64k|init-term-id=7"}, "must not contain: init-term-id"),
    ({"aeron.cluster.service.count": "11"}, "service count of range"),
    ({"aeron.cluster.service.count": "0"}, "zero services are only supported"),
    ({"aeron.cluster.startup.canvass.timeout": "10s"}, "must be a multiple of leaderHeartbeatTimeoutNs"),
])
def test_conclude_checks_settings_before_touching_anything(tmp_path, overrides, message):
    ctx = Context(base(**{"aeron.cluster.dir": str(tmp_path / "cluster"), **overrides}), environ={})
    with pytest.raises(ConfigurationError, match=message):
        ctx.conclude()
    assert not (tmp_path / "cluster").exists()


@pytest.mark.parametrize("missing, message", [
    ("aeron.cluster.members", "clusterMembers must be set"),
    ("aeron.cluster.ingress.channel", "ingressChannel must be specified"),
    ("aeron.cluster.replication.channel", "replicationChannel must be set"),
])
def test_required_settings(tmp_path, missing, message):
    props = base(**{"aeron.cluster.dir": str(tmp_path / "cluster")})
    del props[missing]
    with pytest.raises(ConfigurationError, match=message):
        Context(props, environ={}).conclude()


def test_conclude_makes_the_files_and_the_counters(shm_dir):
    driver = MediaDriver.launch_embedded(driver_context(aeron_dir=str(shm_dir / "driver")))
    cluster_dir = shm_dir / "cluster"
    ctx = Context(base(**{"aeron.cluster.dir": str(cluster_dir), "aeron.cluster.id": "3",
                          "aeron.cluster.timer.service.supplier": "io.aeron.cluster.PriorityHeapTimerServiceSupplier"}),
                  environ={}, aeron_dir=driver.aeron_dir)
    try:
        ctx.conclude()
        assert {p.name for p in cluster_dir.iterdir()} >= {"cluster-mark.dat", "node-state.dat", "recording.log"}
        reader = ctx.aeron.counters_reader
        labels = {reader.get_counter_type_id(i): reader.get_counter_label(i) for i in range(reader.max_counter_id)
                  if reader.get_counter_state(i) == 1}
        assert labels[200] == "Consensus Module state - clusterId=3"
        assert labels[201] == "Cluster node role - clusterId=3"
        assert labels[202] == "Cluster control toggle - clusterId=3"
        assert labels[203] == "Cluster commit-pos: - clusterId=3"
        assert labels[205] == "Cluster snapshot count - clusterId=3"
        assert labels[207] == "Cluster election state - clusterId=3"
        assert labels[212].startswith("Cluster Errors - clusterId=3 version=")
        assert labels[213] == "Cluster timed out client count - clusterId=3"
        assert labels[233] == "Node control toggle - clusterId=3"
        assert labels[238] == "Cluster election count - clusterId=3"
        assert labels[239] == "Cluster leadership term id - clusterId=3"
        assert isinstance(ctx.timer_service_supplier, PriorityHeapTimerServiceSupplier)
        assert ctx.authenticator is DEFAULT_AUTHENTICATOR
        assert ctx.authorisation_service is ALLOW_BACKUP_AND_STANDBY
        assert ctx.is_log_mdc
        assert ctx.archive_context.control_response_stream_id == 3 * 100 + 100 + 20
        assert "alias=cm-archive-ctrl-req-cluster-3-member-0" in ctx.archive_context.control_request_channel
        assert ctx.mark_file.decoder().ingress_stream_id == 101
        other = Context(base(**{"aeron.cluster.dir": str(shm_dir / "other"), "aeron.cluster.id": "3"}), environ={},
                        aeron_dir=driver.aeron_dir)
        try:
            with pytest.raises(ClusterError, match="existing consensus module detected"):
                other.conclude()
        finally:
            other.close()
    finally:
        ctx.close()
        driver.close()


def test_wheel_timer_supplier_by_default_in_the_cluster_time_unit(shm_dir):
    driver = MediaDriver.launch_embedded(driver_context(aeron_dir=str(shm_dir / "driver")))
    ctx = Context(base(**{"aeron.cluster.dir": str(shm_dir / "cluster"),
                          "aeron.cluster.clock": "io.aeron.cluster.NanosecondClusterClock"}),
                  environ={}, aeron_dir=driver.aeron_dir)
    try:
        ctx.conclude()
        assert isinstance(ctx.timer_service_supplier, WheelTimerServiceSupplier)
        assert ctx.timer_service_supplier.tick_resolution == 8_388_608        # 8 ms rounded up to 2^23 ns
    finally:
        ctx.close()
        driver.close()
