# SPDX-License-Identifier: Apache-2.0
"""Our consensus module as a one-member cluster, with Java's ClusteredServiceContainer as its service and Java's
AeronCluster as the client: elect, connect, echo through the log, timers, service messages, a snapshot, and a
restart that recovers from it. Needs AERON_JAVA_CP (skips without it)."""
from __future__ import annotations

from aeron.archive.archive import Context as ArchiveContext
from aeron.cluster.clustered_media_driver import ClusteredMediaDriver
from aeron.cluster.consensus_module import Context
from aeron.cluster.election_state import ElectionState
from aeron.cluster.service.cluster_counters import ClusterCounters
from tests.interop.cluster_support import (JavaClient, cluster_java, cluster_members, member_properties,  # noqa: F401
                                           start_container, stop_process)
from tests.support import driver_context, wait_for

ELECTION_STATE_TYPE_ID = 207
ROLE_TYPE_ID = 201


def launch_member(shm_dir, members):
    aeron_dir = str(shm_dir / "driver")
    archive = ArchiveContext(environ={}, archive_dir=str(shm_dir / "archive"), control_channel_enabled=False,
                             threading_mode="SHARED", segment_file_length=256 * 1024, idle_strategy="backoff")
    cm = Context(member_properties(0, members, str(shm_dir / "cluster")), environ={})
    return ClusteredMediaDriver.launch(driver_context(aeron_dir=aeron_dir), archive, cm)


def counter(cmd, type_id):
    reader = cmd.consensus_module.ctx.aeron.counters_reader
    return ClusterCounters.find_value(reader, type_id, 0)


def test_one_member_cluster_with_java_service_and_client(cluster_java, shm_dir):
    classpath, _ = cluster_java
    members = cluster_members(1)
    cmd = launch_member(shm_dir, members)
    container = client = None
    try:
        container, service_out = start_container(classpath, cmd.media_driver.aeron_dir, str(shm_dir / "cluster"))
        service_out.wait_for("SERVICE_START count=0")
        wait_for(lambda: counter(cmd, ELECTION_STATE_TYPE_ID) == ElectionState.CLOSED, 30, what="election closed")
        assert counter(cmd, ROLE_TYPE_ID) == 2
        ingress = "0=" + members.split(",")[1]
        client = JavaClient(classpath, cmd.media_driver.aeron_dir, ingress)
        client.out.wait_for("CONNECTED")
        for i in range(20):
            client.send(f"hello-{i}")
        for i in range(20):
            client.expect(f"hello-{i}")
        client.send("count?")
        client.expect("count=20")
    finally:
        if client is not None:
            client.close()
        stop_process(container)
        cmd.close()


def toggle(cmd, state):
    from aeron.cluster.cluster_control import ToggleState, find_control_toggle
    reader = cmd.consensus_module.ctx.aeron.counters_reader
    counter = find_control_toggle(reader, reader.values_buffer, 0)
    return ToggleState[state].toggle(counter)


def test_timers_service_messages_snapshot_and_restart_recovery(cluster_java, shm_dir):
    classpath, _ = cluster_java
    members = cluster_members(1)
    ingress = "0=" + members.split(",")[1]
    cmd = launch_member(shm_dir, members)
    container = client = None
    try:
        container, service_out = start_container(classpath, cmd.media_driver.aeron_dir, str(shm_dir / "cluster"))
        service_out.wait_for("SERVICE_START count=0")
        client = JavaClient(classpath, cmd.media_driver.aeron_dir, ingress)
        client.out.wait_for("CONNECTED", 60)
        client.send("timer:7:200")
        client.expect("timer-fired:7")
        client.send("svc:from-service")
        client.expect("svc-msg:from-service")
        for i in range(5):
            client.send(f"m{i}")
            client.expect(f"m{i}")
        assert toggle(cmd, "SNAPSHOT")
        wait_for(lambda: counter(cmd, 205) == 1, 30, what="a snapshot")
        service_out.wait_for("SERVICE_SNAPSHOT count=7")      # the timer and svc requests echo too
        wait_for(lambda: counter(cmd, 202) == 1, 10, what="the toggle back to NEUTRAL")
        for i in range(5, 8):
            client.send(f"m{i}")
            client.expect(f"m{i}")
        client.send("count?")
        client.expect("count=10")
    finally:
        if client is not None:
            client.close()
        stop_process(container)
        cmd.close()
    entries = (shm_dir / "cluster" / "recording.log").read_bytes()
    assert len(entries) >= 3 * 64                          # a term, the service's snapshot and the module's

    cmd = launch_member(shm_dir, members)
    container = client = None
    try:
        container, service_out = start_container(classpath, cmd.media_driver.aeron_dir, str(shm_dir / "cluster"))
        service_out.wait_for("SERVICE_START count=7")       # from the snapshot, then the log after it is replayed
        wait_for(lambda: counter(cmd, ELECTION_STATE_TYPE_ID) == ElectionState.CLOSED, 60, what="election closed")
        client = JavaClient(classpath, cmd.media_driver.aeron_dir, ingress)
        client.out.wait_for("CONNECTED", 60)
        client.send("count?")
        client.expect("count=10")
    finally:
        if client is not None:
            client.close()
        stop_process(container)
        cmd.close()
