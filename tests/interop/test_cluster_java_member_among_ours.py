# SPDX-License-Identifier: Apache-2.0
"""Java and our cluster members with Java's and our services, and Java's tools on our member's files:

- one cluster of three members, one Java (``io.aeron.cluster.ClusteredMediaDriver`` with Java's container running
  ClusterTestService.java) and two of ours (``python -m aeron.cluster`` with our container running its Python twin,
  tests/interop/cluster_test_service.py): it elects, replicates, snapshots, survives the loss of a member (the Java
  leader, our leader, our follower: killed with SIGKILL, the others go on, restarted, it catches up), and ends with
  the same service state on every member;
- Java's ClusterTool reads the directory of our running member (our container beside it): describe, pid,
  recording-log, list-members, errors print what ours prints; Java's ArchiveTool describes and verifies our member's
  archive (its log and snapshots).

Java's AeronCluster client drives them, on a media driver of its own. Needs AERON_JAVA_CP (skips without it)."""
from __future__ import annotations

import re

import pytest

from aeron.cluster.cluster_control import map_counters
from aeron.cluster.recording_log import RecordingLog
from aeron.cluster.service.cluster_counters import ClusterCounters
from aeron.driver import MediaDriver
from tests import support
from tests.interop.cluster_support import (IDLE_CLIENT_SESSION_TIMEOUT, JavaClient, MemberProcess,  # noqa: F401
                                           cluster_java, cluster_members, cluster_tool, ingress_endpoints, java,
                                           our_cluster_tool, without_times)
from tests.support import wait_for

SNAPSHOT_COUNT_TYPE_ID = 205


@pytest.fixture
def client_driver():
    """A media driver of the test's own for the Java client, so that no member's death takes the client with it."""
    with MediaDriver.launch_embedded(support.driver_context(term_buffer_length=65536)) as driver:
        yield driver


def snapshot_count(node: MemberProcess) -> int | None:
    try:
        with map_counters(f"{node.aeron_dir}/cnc.dat") as mapped:
            return ClusterCounters.find_value(mapped.reader, SNAPSHOT_COUNT_TYPE_ID, 0)
    except Exception:                   # noqa: BLE001 - the member is (re)starting
        return None


def echo(client: JavaClient, prefix: str, count: int) -> None:
    for i in range(count):
        client.send(f"{prefix}{i}")
        client.expect(f"{prefix}{i}")


def polling(client: JavaClient, condition, timeout: float, what: str):
    """Wait for ``condition`` while the client polls its egress and sends keep-alives (an idle client's session
    times out while a member restarts); the condition's value."""
    def poll_then_check():
        client.command("poll 200")
        client.out.wait_for("POLLED", 60)
        return condition()
    return wait_for(poll_then_check, timeout, what=what, interval_s=0.05)


def state_of(nodes: list[MemberProcess]) -> str:
    """Each member's counters (state, role, election state, commit position, term) and the end of its log."""
    return "\n".join(f"member {n.member_id} {n.counters()}: ...{n.log_text()[-1500:]}\n"
                     f"{our_cluster_tool(n.cluster_dir, 'errors')[1][-3000:]}" for n in nodes)


def lose_and_restart(client: JavaClient, nodes: list[MemberProcess], victim: MemberProcess, total: int) -> int:
    """Kill ``victim``, echo through the survivors (following a new leader if it led) and snapshot them, restart it
    and wait until it follows and has caught up (the log it missed holds a snapshot); the number of messages counted
    now."""
    was_leader = victim.is_leader()
    victim.kill()
    survivors = [n for n in nodes if n is not victim]
    seen = len(client.out.drain())
    leader = polling(client, lambda: next((n for n in survivors if n.is_leader()), None), 45,
                     f"a leader without member {victim.member_id}")
    if was_leader:
        polling(client, lambda: any(line.startswith("NEW_LEADER") for line in client.out.drain()[seen:]), 60,
                "the client told of the new leader")
    echo(client, f"k{victim.member_id}-", 5)          # the two survivors make progress, and snapshot
    snapshot = cluster_tool(leader.classpath, leader.cluster_dir, "snapshot")
    assert snapshot.stdout.strip() == f"Member [{leader.member_id}]: SNAPSHOT applied successfully", \
        snapshot.stdout + snapshot.stderr
    for node in survivors:
        node.service_out.wait_for(f"SERVICE_SNAPSHOT count={total + 5}", 30)
    echo(client, f"l{victim.member_id}-", 2)
    victim.start()
    polling(client, victim.is_follower, 60, f"member {victim.member_id} following again")
    committed = commit_position(leader)
    polling(client, lambda: commit_position(victim) >= committed, 45, f"member {victim.member_id} caught up")
    return total + 7


def leader_of(nodes: list[MemberProcess], what: str = "a leader") -> MemberProcess:
    return wait_for(lambda: next((n for n in nodes if n.is_leader()), None), 90, what=what, interval_s=0.2)


def commit_position(node: MemberProcess) -> int:
    position = node.counters()[3]
    return -1 if position is None else position


# the member killed, among the elected members (the Java member is member 0)
LOSSES = {
    "the leader": lambda nodes: next(n for n in nodes if n.is_leader()),
    "the Java member": lambda nodes: nodes[0],
    "a follower of ours": lambda nodes: next(n for n in nodes[1:] if n.is_follower()),
}


@pytest.mark.parametrize("lost", list(LOSSES))
def test_one_java_member_two_of_ours_snapshot_and_survive_a_loss(cluster_java, shm_dir, client_driver, lost):
    classpath, _ = cluster_java
    members = cluster_members(3)
    settings = IDLE_CLIENT_SESSION_TIMEOUT
    nodes = [MemberProcess(0, members, shm_dir, classpath, java=True, service="java", **settings),
             MemberProcess(1, members, shm_dir, classpath, service="python", **settings),
             MemberProcess(2, members, shm_dir, classpath, service="python", **settings)]
    client = None
    try:
        for node in nodes:
            node.start()
        leader = leader_of(nodes)
        wait_for(lambda: sum(n.is_follower() for n in nodes) == 2, 90, what="two followers", interval_s=0.2)
        client = JavaClient(classpath, client_driver.aeron_dir, ingress_endpoints(members))
        client.out.wait_for("CONNECTED", 60)
        echo(client, "a", 5)
        total = 5

        snapshot = cluster_tool(classpath, leader.cluster_dir, "snapshot")
        assert snapshot.stdout.strip() == f"Member [{leader.member_id}]: SNAPSHOT applied successfully", \
            snapshot.stdout + snapshot.stderr
        wait_for(lambda: all(snapshot_count(n) == 1 for n in nodes), 60, what="a snapshot on every member",
                 interval_s=0.2)
        for node in nodes:
            node.service_out.wait_for(f"SERVICE_SNAPSHOT count={total}", 30)
            with RecordingLog(node.cluster_dir, False) as log:
                assert sorted(e.service_id for e in log.entries if e.type == 1) == [-1, 0], node.member_id

        try:
            total = lose_and_restart(client, nodes, LOSSES[lost](nodes), total)
        except AssertionError as ex:
            raise AssertionError(f"{ex}\n{state_of(nodes)}") from ex
        # the session lived on (a new leader sends OK for a session it learnt from the log, as Java's
        # ClusterSession.sendSessionOpenEvent does, then the NewLeaderEvent)
        assert not [line for line in client.out.drain()
                    if line.startswith(("SESSION_EVENT", "ERROR")) and line.strip() != "SESSION_EVENT OK"]

        client.send("count?")
        client.expect(f"count={total}")
        leader = leader_of(nodes)
        snapshot = cluster_tool(classpath, leader.cluster_dir, "snapshot")
        assert "SNAPSHOT applied successfully" in snapshot.stdout, snapshot.stdout + snapshot.stderr
        # the same state on every member: each service snapshots the count of messages it saw
        for node in nodes:
            node.service_out.wait_for(f"SERVICE_SNAPSHOT count={total}", 60)
    finally:
        if client is not None:
            client.close()
        for node in nodes:
            node.stop()


def test_javas_cluster_tool_and_archive_tool_read_our_member(cluster_java, shm_dir, client_driver):
    classpath, _ = cluster_java
    members = cluster_members(1)
    # the client idles while the tools run: its session outlives them
    node = MemberProcess(0, members, shm_dir, classpath, service="python", **{"aeron.cluster.session.timeout": "90s"})
    client = None
    try:
        node.start()
        wait_for(node.is_leader, 90, what="the member leading", interval_s=0.2)
        client = JavaClient(classpath, client_driver.aeron_dir, ingress_endpoints(members))
        client.out.wait_for("CONNECTED", 60)
        echo(client, "a", 3)
        snapshot = cluster_tool(classpath, node.cluster_dir, "snapshot")
        assert snapshot.stdout.strip() == "Member [0]: SNAPSHOT applied successfully", snapshot.stdout
        node.service_out.wait_for("SERVICE_SNAPSHOT count=3", 30)
        echo(client, "b", 2)

        for command in ("describe", "pid", "recording-log", "errors", "list-members"):
            javas = cluster_tool(classpath, node.cluster_dir, command)
            status, text = our_cluster_tool(node.cluster_dir, command)
            assert javas.returncode == status == 0, (command, javas.stdout, javas.stderr, text)
            assert without_times(javas.stdout) == without_times(text), command
        javas = cluster_tool(classpath, node.cluster_dir, "describe").stdout
        assert "componentType=CONSENSUS_MODULE" in javas and "componentType=CONTAINER" in javas, javas
        assert f"pid={node.proc.pid}" in javas and f"pid={node.container.pid}" in javas, javas
        assert cluster_tool(classpath, node.cluster_dir, "pid").stdout == f"{node.proc.pid}\n"
        recording_log = cluster_tool(classpath, node.cluster_dir, "recording-log").stdout
        assert recording_log.count("type=SNAPSHOT") == 2 and recording_log.count("type=TERM") == 1, recording_log
        assert "leaderMemberId=0, memberId=0" in cluster_tool(classpath, node.cluster_dir, "list-members").stdout
        client.close()                           # Java's SessionCloseRequest closes the session at once
        assert node.service_out.wait_for("SERVICE_SESSION_CLOSE", 30).endswith(" CLIENT_ACTION")
    finally:
        if client is not None:
            client.close()
        node.stop()
    assert node.proc.returncode == 0

    archive_dir = node.dir / "archive"
    describe = java(classpath, "io.aeron.archive.ArchiveTool", archive_dir, "describe")
    assert describe.returncode == 0, describe.stdout + describe.stderr
    # the log (stream 100) and the two snapshots: the service's (stream 106) and the consensus module's (107)
    streams = re.findall(r"\|streamId=(\d+)\|", describe.stdout)
    assert sorted(int(stream) for stream in streams) == [100, 106, 107], describe.stdout
    verify = java(classpath, "io.aeron.archive.ArchiveTool", archive_dir, "verify", "-a",
                  properties={"aeron.archive.dir": str(archive_dir)})
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert "INVALID" not in verify.stdout, verify.stdout
