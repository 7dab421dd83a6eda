# SPDX-License-Identifier: Apache-2.0
"""ClusteredServiceContainer.Context: Aeron's defaults and property names, the environment, what conclude() makes
(mark file and link, counters, the local archive's context) and what it refuses."""
from __future__ import annotations

import pytest

from aeron.archive.client import Context as ArchiveContext
from aeron.cluster.service.cluster_counters import (
    CLUSTER_CLUSTERED_SERVICE_CYCLE_TIME_THRESHOLD_EXCEEDED_TYPE_ID,
    CLUSTER_CLUSTERED_SERVICE_ERROR_COUNT_TYPE_ID,
    CLUSTER_CLUSTERED_SERVICE_MAX_CYCLE_TIME_TYPE_ID,
    CLUSTERED_SERVICE_MAX_SNAPSHOT_DURATION_TYPE_ID,
    CLUSTERED_SERVICE_SNAPSHOT_DURATION_THRESHOLD_EXCEEDED_TYPE_ID,
)
from aeron.cluster.service.cluster_mark_file import ClusterMarkFile
from aeron.cluster.service.clustered_service_container import ClusteredServiceContainer, Context
from aeron.common.agent import BackoffIdleStrategy, SleepingMillisIdleStrategy
from aeron.common.errors import ClusterError, ConfigurationError, IllegalStateError
from aeron.common.mark_file import ActiveMarkFileError
from aeron.common.version import __version__
from aeron.samples.cluster.echo_service import EchoService


def test_defaults_are_aerons():
    ctx = Context(environ={})
    assert (ctx.cluster_id, ctx.service_id, ctx.service_name, ctx.service_class_name) == (0, 0, None, None)
    assert (ctx.control_channel, ctx.service_stream_id, ctx.consensus_module_stream_id) == \
        ("aeron:ipc?term-length=128k", 104, 105)
    assert (ctx.replay_channel, ctx.replay_stream_id) == ("aeron:ipc", 103)
    assert (ctx.snapshot_channel, ctx.snapshot_stream_id) == ("aeron:ipc?alias=snapshot", 106)
    assert (ctx.cluster_dir, ctx.mark_file_dir, ctx.error_buffer_length) == ("aeron-cluster", None, 1024 * 1024)
    assert (ctx.is_responding_service, ctx.log_fragment_limit) == (True, 50)
    assert (ctx.cycle_threshold_ns, ctx.snapshot_duration_threshold_ns) == (100_000_000, 1_000_000_000)
    assert ctx.idle_strategy_name == "org.agrona.concurrent.BackoffIdleStrategy"
    assert isinstance(ctx.idle_strategy(), BackoffIdleStrategy)
    assert ctx.app_version == 1 and not ctx.is_concluded


def test_properties_the_environment_and_keywords_in_that_order():
    ctx = Context({"aeron.cluster.service.id": "3", "aeron.cluster.service.name": "auction",
                   "aeron.cluster.snapshot.channel": "aeron:ipc?alias=snap", "aeron.cluster.service.responder": "false",
                   "aeron.cluster.service.cycle.threshold": "250ms", "aeron.cluster.idle.strategy": "sleep-ms"},
                  environ={"AERON_CLUSTER_ID": "7", "AERON_CLUSTER_SERVICE_ID": "1", "AERON_DIR": "/dev/shm/x"},
                  log_fragment_limit=10)
    assert (ctx.cluster_id, ctx.service_id, ctx.service_name) == (7, 3, "auction")
    assert (ctx.snapshot_channel, ctx.is_responding_service, ctx.cycle_threshold_ns) == \
        ("aeron:ipc?alias=snap", False, 250_000_000)
    assert (ctx.aeron_dir, ctx.log_fragment_limit) == ("/dev/shm/x", 10)
    assert isinstance(ctx.idle_strategy(), SleepingMillisIdleStrategy)
    assert Context(["-Daeron.cluster.replay.stream.id=33", "aeron.dir=/tmp/d"], environ={}).replay_stream_id == 33


def test_unknown_names_and_bad_values_are_configuration_errors():
    with pytest.raises(ConfigurationError, match="unknown clustered service container property"):
        Context({"aeron.cluster.no.such": "1"}, environ={})
    with pytest.raises(ConfigurationError, match="unknown ClusteredServiceContainer.Context setting"):
        Context(environ={}, no_such=1)
    with pytest.raises(ConfigurationError, match="aeron.cluster.service.id"):
        Context({"aeron.cluster.service.id": "one"}, environ={})
    with pytest.raises(ConfigurationError, match="AERON_CLUSTER_SERVICE_ID|aeron.cluster.service.id"):
        Context(environ={"AERON_CLUSTER_SERVICE_ID": "x"})


def concluded(driver, tmp_path, **settings) -> Context:
    settings.setdefault("clustered_service", EchoService())
    ctx = Context(environ={}, aeron_dir=driver.aeron_dir, cluster_dir=str(tmp_path / "cluster"), **settings)
    return ctx.conclude()


def test_conclude_makes_the_mark_file_counters_and_archive_context(driver, client, tmp_path):
    ctx = concluded(driver, tmp_path, cluster_id=2, service_id=3)
    try:
        assert ctx.service_name == "clustered-service-2-3" and ctx.owns_aeron_client
        assert ctx.mark_file.path == tmp_path / "cluster" / "cluster-mark-service-3.dat"
        assert ctx.mark_file.version_volatile() == ClusterMarkFile.SEMANTIC_VERSION
        archive = ctx.archive_context
        assert archive.control_request_channel == "aeron:ipc?term-length=64k|alias=sc-3-archive-ctrl-req-cluster-2"
        assert archive.control_response_channel == "aeron:ipc?term-length=64k|alias=sc-3-archive-ctrl-resp-cluster-2"
        assert (archive.control_request_stream_id, archive.control_response_stream_id) == (10, 2 * 100 + 100 + 20 + 4)
        assert archive.aeron is ctx.aeron and not archive.owns_aeron_client
        assert ctx.new_archive_context() is not archive
        labels = {c.type_id: c.label for c in client.counters_reader if c.type_id in (
            CLUSTER_CLUSTERED_SERVICE_ERROR_COUNT_TYPE_ID, CLUSTER_CLUSTERED_SERVICE_MAX_CYCLE_TIME_TYPE_ID,
            CLUSTER_CLUSTERED_SERVICE_CYCLE_TIME_THRESHOLD_EXCEEDED_TYPE_ID,
            CLUSTERED_SERVICE_MAX_SNAPSHOT_DURATION_TYPE_ID,
            CLUSTERED_SERVICE_SNAPSHOT_DURATION_THRESHOLD_EXCEEDED_TYPE_ID)}
        assert labels == {
            CLUSTER_CLUSTERED_SERVICE_ERROR_COUNT_TYPE_ID:
                f"Cluster Container Errors - clusterId=2 serviceId=3 version={__version__} commit=aeron-py",
            CLUSTER_CLUSTERED_SERVICE_MAX_CYCLE_TIME_TYPE_ID:
                "Cluster container max cycle time in ns - clusterId=2 serviceId=3",
            CLUSTER_CLUSTERED_SERVICE_CYCLE_TIME_THRESHOLD_EXCEEDED_TYPE_ID:
                "Cluster container work cycle time exceeded count: threshold=100ms - clusterId=2 serviceId=3",
            CLUSTERED_SERVICE_MAX_SNAPSHOT_DURATION_TYPE_ID:
                "Clustered service max snapshot duration in ns - clusterId=2 serviceId=3",
            CLUSTERED_SERVICE_SNAPSHOT_DURATION_THRESHOLD_EXCEEDED_TYPE_ID:
                "Clustered service max snapshot duration exceeded count: threshold=1s - clusterId=2 serviceId=3",
        }
        with pytest.raises(IllegalStateError):
            ctx.conclude()
    finally:
        ctx.close()
    assert ctx.aeron.is_closed and ctx.mark_file.is_closed


def test_a_mark_file_elsewhere_gets_a_link_in_the_cluster_directory(driver, tmp_path):
    ctx = concluded(driver, tmp_path, mark_file_dir=str(tmp_path / "marks"))
    try:
        assert ctx.mark_file.path == tmp_path / "marks" / "cluster-mark-service-0.dat"
        link = tmp_path / "cluster" / "cluster-mark-service-0.lnk"
        assert link.read_text() == str(tmp_path / "marks")
    finally:
        ctx.close()


def test_conclude_refuses(driver, tmp_path):
    with pytest.raises(ConfigurationError, match=r"service id outside allowed range \[0,9\]: 10"):
        Context(environ={}, service_id=10, clustered_service=EchoService()).conclude()
    with pytest.raises(ConfigurationError, match="unknown idle strategy"):
        Context(environ={}, idle_strategy_name="lazy", clustered_service=EchoService()).conclude()
    ctx = Context(environ={}, aeron_dir=driver.aeron_dir, cluster_dir=str(tmp_path / "c1"))
    with pytest.raises(ClusterError, match="either a instance or class name for the service must be provided"):
        ctx.conclude()
    ctx.close()
    ctx = Context(environ={}, aeron_dir=driver.aeron_dir, cluster_dir=str(tmp_path / "c2"),
                  clustered_service=EchoService(),
                  archive_context=ArchiveContext(control_request_channel="aeron:udp?endpoint=localhost:8010",
                                                 control_response_channel="aeron:ipc"))
    with pytest.raises(ClusterError, match="local archive control must be IPC"):
        ctx.conclude()
    ctx.close()


def test_the_service_may_be_named_by_its_class(driver, tmp_path):
    ctx = concluded(driver, tmp_path, clustered_service=None,
                    service_class_name="aeron.samples.cluster.echo_service:EchoService")
    try:
        assert isinstance(ctx.clustered_service, EchoService)
    finally:
        ctx.close()
    with pytest.raises(ConfigurationError, match="cannot load the clustered service 'no.such:Thing'"):
        Context(environ={}, aeron_dir=driver.aeron_dir, cluster_dir=str(tmp_path / "c3"),
                service_class_name="no.such:Thing").conclude()


def test_a_failed_start_marks_the_mark_file(driver, tmp_path):
    ctx = Context(environ={}, aeron_dir=driver.aeron_dir, cluster_dir=str(tmp_path / "cluster"))
    with pytest.raises(ClusterError):
        ClusteredServiceContainer(ctx)         # no service
    # tools refuse a failed start's mark file, so its version is read raw: -1 after the 8-byte message header
    path = tmp_path / "cluster" / "cluster-mark-service-0.dat"
    assert int.from_bytes(path.read_bytes()[8:12], "little", signed=True) == ClusterMarkFile.VERSION_FAILED


def test_a_live_container_keeps_a_second_one_out(driver, tmp_path):
    first = concluded(driver, tmp_path)
    try:
        with pytest.raises(ActiveMarkFileError):
            concluded(driver, tmp_path)
    finally:
        first.close()
