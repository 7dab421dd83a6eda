# SPDX-License-Identifier: Apache-2.0
"""One of our members and two of Java's (``io.aeron.cluster.ClusteredMediaDriver``) in one cluster, each with Java's
ClusteredServiceContainer, and Java's AeronCluster as the client: ours leads Java followers, a Java member leads
ours, snapshots are taken by every member (Java's ClusterTool asking our leader), and a killed leader is replaced
and rejoins. Needs AERON_JAVA_CP (skips without it)."""
from __future__ import annotations

from aeron.cluster.cluster_control import ToggleState, find_control_toggle, map_counters
from aeron.cluster.recording_log import RecordingLog
from tests.interop.cluster_support import (IDLE_CLIENT_SESSION_TIMEOUT, JavaClient, MemberProcess,  # noqa: F401
                                           cluster_java, cluster_members, ingress_endpoints, start_elected)
from tests.support import wait_for

SNAPSHOT_COUNT_TYPE_ID = 205


def start_cluster(shm_dir, classpath, **overrides):
    members = cluster_members(3)
    nodes = [MemberProcess(i, members, shm_dir, classpath, java=(i != 0), **overrides) for i in range(3)]
    return members, nodes, start_elected(nodes)


def snapshot_count(node):
    from aeron.cluster.service.cluster_counters import ClusterCounters
    with map_counters(f"{node.aeron_dir}/cnc.dat") as mapped:
        return ClusterCounters.find_value(mapped.reader, SNAPSHOT_COUNT_TYPE_ID, 0)


def snapshots_in_recording_log(node):
    with RecordingLog(node.cluster_dir, False) as log:
        return sorted(e.service_id for e in log.entries if e.type == 1)


def echo(client, prefix, count):
    for i in range(count):
        client.send(f"{prefix}{i}")
        client.expect(f"{prefix}{i}")


def stop_all(client, nodes):
    if client is not None:
        client.close()
    for node in nodes:
        node.stop()


def test_our_leader_java_followers_and_javas_cluster_tool_snapshot(cluster_java, shm_dir):
    classpath, _ = cluster_java
    members, nodes, leader = start_cluster(shm_dir, classpath, **{"aeron.cluster.appointed.leader.id": "0"})
    client = None
    try:
        assert leader.member_id == 0 and not leader.java
        client = JavaClient(classpath, nodes[1].aeron_dir, ingress_endpoints(members))
        client.out.wait_for("CONNECTED", 60)
        echo(client, "a", 10)
        committed = leader.counters()[3]
        wait_for(lambda: all(n.counters()[3] == committed for n in nodes), 30, what="all at the commit position",
                 interval_s=0.2)
        tool = leader.tool("snapshot")
        assert tool.stdout.strip().endswith("Member [0]: SNAPSHOT applied successfully"), tool.stdout + tool.stderr
        wait_for(lambda: all(snapshot_count(n) == 1 for n in nodes), 60, what="a snapshot on every member",
                 interval_s=0.2)
        for node in nodes:
            assert snapshots_in_recording_log(node) == [-1, 0]
        echo(client, "b", 5)
        client.send("count?")
        client.expect("count=15")
    finally:
        stop_all(client, nodes)


def test_java_leader_our_follower_takes_the_snapshot_too(cluster_java, shm_dir):
    classpath, _ = cluster_java
    members, nodes, leader = start_cluster(shm_dir, classpath, **{"aeron.cluster.appointed.leader.id": "1"})
    client = None
    try:
        assert leader.member_id == 1 and leader.java
        ours = nodes[0]
        assert ours.is_follower()
        client = JavaClient(classpath, ours.aeron_dir, ingress_endpoints(members))
        client.out.wait_for("CONNECTED", 60)
        echo(client, "a", 10)
        with map_counters(f"{leader.aeron_dir}/cnc.dat") as mapped:
            assert ToggleState.SNAPSHOT.toggle(find_control_toggle(mapped.reader, mapped.values, 0))
        wait_for(lambda: snapshot_count(ours) == 1, 60, what="our follower's snapshot", interval_s=0.2)
        assert snapshots_in_recording_log(ours) == [-1, 0]
        ours.service_out.wait_for("SERVICE_SNAPSHOT count=10")
        committed = leader.counters()[3]
        wait_for(lambda: ours.counters()[3] == committed, 30, what="our follower at the commit position",
                 interval_s=0.2)
    finally:
        stop_all(client, nodes)


def test_mixed_cluster_fails_over_and_the_old_leader_rejoins(cluster_java, shm_dir):
    classpath, _ = cluster_java
    members, nodes, leader = start_cluster(shm_dir, classpath, **IDLE_CLIENT_SESSION_TIMEOUT)
    client = None
    try:
        client = JavaClient(classpath, nodes[(leader.member_id + 1) % 3].aeron_dir, ingress_endpoints(members))
        client.out.wait_for("CONNECTED", 60)
        echo(client, "a", 10)
        leader.kill()
        survivors = [n for n in nodes if n is not leader]
        new_leader = wait_for(lambda: next((n for n in survivors if n.is_leader()), None), 60,
                              what="a new leader", interval_s=0.2)
        client.command("poll 100")
        client.out.wait_for("NEW_LEADER", 60)
        client.out.wait_for("POLLED", 60)
        echo(client, "b", 10)
        leader.start()
        wait_for(leader.is_follower, 90, what="the old leader following", interval_s=0.2)
        committed = new_leader.counters()[3]
        wait_for(lambda: leader.counters()[3] >= committed, 60, what="the old leader caught up", interval_s=0.2)
        client.send("count?")
        client.expect("count=20")
    finally:
        stop_all(client, nodes)
