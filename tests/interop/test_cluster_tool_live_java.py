# SPDX-License-Identifier: Apache-2.0
"""ClusterTool's live commands against our running members (Java's ClusteredServiceContainer as their service):
ours prints what Java's prints (list-members, snapshot, suspend, resume, the refusals), Java's tool drives our
consensus module too, and shutdown and abort stop a three-member cluster in order. Needs AERON_JAVA_CP."""
from __future__ import annotations

from aeron.cluster.recording_log import RecordingLog
from tests.interop.cluster_support import (MemberProcess, cluster_java, cluster_members, java,  # noqa: F401
                                           our_cluster_tool, start_elected, without_times)
from tests.support import wait_for


def javas(classpath, *args):
    done = java(classpath, "io.aeron.cluster.ClusterTool", *args)
    return done.returncode if done.returncode < 128 else done.returncode - 256, done.stdout


def start(shm_dir, classpath, count):
    members = cluster_members(count)
    nodes = [MemberProcess(i, members, shm_dir, classpath) for i in range(count)]
    start_elected(nodes)
    return nodes


def test_live_commands_print_as_javas(cluster_java, shm_dir):
    classpath, _ = cluster_java
    nodes = start(shm_dir, classpath, 3)
    try:
        leader = next(n for n in nodes if n.is_leader())
        follower = next(n for n in nodes if n.is_follower())
        status, text = our_cluster_tool(leader.cluster_dir, "list-members")
        assert status == 0
        assert without_times(text) == without_times(javas(classpath, leader.cluster_dir, "list-members")[1])
        assert f"leaderMemberId={leader.member_id}, memberId={leader.member_id}" in text
        assert our_cluster_tool(leader.cluster_dir, "is-leader") == (0, "")
        assert our_cluster_tool(follower.cluster_dir, "is-leader")[0] == 1

        refused = our_cluster_tool(follower.cluster_dir, "snapshot")
        assert refused == (-1, f"Member [{follower.member_id}]: Current node is not the leader (leaderMemberId = "
                               f"{leader.member_id}), unable to SNAPSHOT\n")
        assert javas(classpath, follower.cluster_dir, "snapshot") == refused

        assert our_cluster_tool(leader.cluster_dir, "snapshot") == (0, f"Member [{leader.member_id}]: SNAPSHOT applied "
                                                           f"successfully\n")
        with RecordingLog(leader.cluster_dir, False) as log:
            assert sorted(e.service_id for e in log.entries if e.type == 1) == [-1, 0]
        assert our_cluster_tool(leader.cluster_dir, "resume") == (
            -1, f"Member [{leader.member_id}]: Unable to RESUME as the state of the consensus module is ACTIVE, but "
                f"needs to be SUSPENDED\n")
        assert our_cluster_tool(leader.cluster_dir, "suspend") == (0, f"Member [{leader.member_id}]: SUSPEND applied "
                                                          f"successfully\n")
        wait_for(lambda: leader.counters()[0] == 2, 30, what="the leader SUSPENDED", interval_s=0.1)
        wait_for(lambda: all(n.counters()[0] == 2 for n in nodes), 30, what="every member SUSPENDED",
                 interval_s=0.1)
        assert javas(classpath, leader.cluster_dir, "resume") == (
            0, f"Member [{leader.member_id}]: RESUME applied successfully\n")
        wait_for(lambda: all(n.counters()[0] == 1 for n in nodes), 30, what="every member ACTIVE again",
                 interval_s=0.1)
    finally:
        for node in nodes:
            node.stop()


def test_shutdown_stops_every_member_after_a_snapshot(cluster_java, shm_dir):
    classpath, _ = cluster_java
    nodes = start(shm_dir, classpath, 3)
    try:
        leader = next(n for n in nodes if n.is_leader())
        assert our_cluster_tool(leader.cluster_dir, "shutdown") == (0, f"Member [{leader.member_id}]: SHUTDOWN applied "
                                                           f"successfully\n")
        for node in nodes:
            assert node.proc.wait(timeout=60) == 0
        for node in nodes:
            with RecordingLog(node.cluster_dir, False) as log:
                snapshots = [e for e in log.entries if e.type == 1]
                terms = [e for e in log.entries if e.type == 0]
            assert sorted(e.service_id for e in snapshots) == [-1, 0]
            assert terms[-1].log_position == snapshots[-1].log_position      # the term committed where it stopped
    finally:
        for node in nodes:
            node.stop()


def test_abort_stops_every_member_without_a_snapshot(cluster_java, shm_dir):
    classpath, _ = cluster_java
    nodes = start(shm_dir, classpath, 3)
    try:
        leader = next(n for n in nodes if n.is_leader())
        assert our_cluster_tool(leader.cluster_dir, "abort") == (
            0, f"Member [{leader.member_id}]: ABORT applied successfully\n")
        for node in nodes:
            assert node.proc.wait(timeout=60) == 0
        for node in nodes:
            with RecordingLog(node.cluster_dir, False) as log:
                assert not [e for e in log.entries if e.type == 1]
                assert log.find_last_term().log_position != -1
    finally:
        for node in nodes:
            node.stop()
