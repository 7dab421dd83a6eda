# SPDX-License-Identifier: Apache-2.0
"""Snapshots and restarts of a whole cluster of our members, no Java: ClusterTool ``snapshot`` on the leader makes
every member snapshot its consensus module and service (recording.log gets the snapshot entries, in the order
Java's members write them); after every member is killed and started again, each recovers the same state from its
snapshot and the log after it, and new commands go on from there. ClusterTool ``shutdown`` then stops the cluster
in order (a snapshot, every member and container exits 0), and it starts again from that snapshot."""
from __future__ import annotations

import re

import pytest

from aeron.cluster import tool
from aeron.cluster.recording_log import ENTRY_TYPE_SNAPSHOT, ENTRY_TYPE_TERM
from tests.cluster.conftest import expected
from tests.cluster.system.members import MemberProcess, TestCluster
from tests.cluster.system.register_client import add_value, running_totals

pytestmark = pytest.mark.timeout(300)


def snapshots(member: MemberProcess) -> list:
    """The valid snapshot entries of the member's recording.log."""
    return [e for e in tool.recording_log(member.cluster_dir, out=None) if e.type == ENTRY_TYPE_SNAPSHOT and e.is_valid]


def entry_shapes(text: str) -> list[tuple[str, ...]]:
    """The field names of each ``Entry{...}`` of a ``recording-log`` output."""
    return [tuple(re.findall(r"(\w+)=", body)) for body in re.findall(r"Entry\{([^}]*)\}", text)]


def check_state(state: dict, names: list[str]) -> None:
    """Each client's adds applied once, in order, and the total the sum of them."""
    for name in names:
        mine = [int(e.split(":")[1]) for e in state["applied"] if e.startswith(f"{name}:")]
        assert mine == list(range(len(mine))), (name, mine)
    assert state["total"] == running_totals(state["applied"])[state["applied"][-1]]


def test_snapshot_then_full_restart_recovers_the_state_and_goes_on(make_cluster, make_client, hosted_threading):
    # the services in containers of their own (python -m aeron.cluster.service), as Java's members run them; or on
    # the member's one thread: its snapshot taken, and loaded at the restart inside the consensus module's start
    on_thread = "aeron.cluster.member.one.thread.service" in hosted_threading
    cluster: TestCluster = make_cluster(3, container="in-process" if on_thread else "process", **hosted_threading)
    leader = cluster.leader()
    cluster.wait_for_followers(2)
    first = make_client("first", cluster.ingress_endpoints())
    first.add_many(15)

    # ClusterTool snapshot on the leader: every member takes one at the same log position
    result = first.run_while(lambda: leader.cluster_tool("snapshot"))    # the session kept alive meanwhile
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Member [{leader.member_id}]: SNAPSHOT applied successfully" in result.stdout
    first.wait(lambda: all(len(snapshots(m)) == 2 for m in cluster.members), 60, "a snapshot on every member")
    positions = {(e.service_id, e.log_position) for m in cluster.members for e in snapshots(m)}
    assert len({p for _, p in positions}) == 1 and {s for s, _ in positions} == {0, -1}
    # recording.log as Java's members write it: the terms (one, unless the load made the cluster elect again),
    # the service's snapshot, then the consensus module's, each entry with the fields of Java's
    golden = entry_shapes(expected("live/clustertool-recording-log.txt"))
    result = first.run_while(lambda: leader.cluster_tool("recording-log"))
    assert result.returncode == 0, result.stderr
    assert set(entry_shapes(result.stdout)) == set(golden), result.stdout
    kinds = re.findall(r"serviceId=(-?\d+), type=(\w+)", result.stdout)
    assert kinds[0] == ("-1", "TERM") and kinds.count(("-1", "TERM")) == len(kinds) - 2, result.stdout
    snapshot_at = kinds.index(("0", "SNAPSHOT"))
    assert kinds[snapshot_at + 1] == ("-1", "SNAPSHOT"), result.stdout

    first.add_many(5)                                   # in the log after the snapshot
    first.run_while(lambda: cluster.wait_for_same_state(predicate=lambda s: "first:19" in s["applied"]))
    first.close()
    before = cluster.wait_for_same_state(predicate=lambda s: str(first.session_id) in s["closed"])

    # every member killed, then started again: the snapshot and the log after it give the same state back
    cluster.kill()
    cluster.start()
    cluster.leader()
    cluster.wait_for_followers(2)
    after = cluster.wait_for_same_state(predicate=lambda s: s["applied"] == before["applied"])
    assert {k: v for k, v in after.items() if k != "terms"} == {k: v for k, v in before.items() if k != "terms"}
    assert after["terms"][:len(before["terms"])] == before["terms"]
    for member in cluster.members:
        record = member.service_record()
        assert record["local"]["loaded_snapshot"] and record["local"]["starts"] == 2, (member, record["local"])

    second = make_client("second", cluster.ingress_endpoints())
    answers = {seq: int(second.answers[seq]) for seq in second.add_many(10)}
    state = second.run_while(lambda: cluster.wait_for_same_state(predicate=lambda s: "second:9" in s["applied"]))
    totals = running_totals(state["applied"])
    assert answers == {seq: totals[f"second:{seq}"] for seq in range(10)}
    check_state(state, ["first", "second"])
    second.close()
    state = cluster.wait_for_same_state(predicate=lambda s: str(second.session_id) in s["closed"])

    # ClusterTool shutdown: a snapshot, then every member terminates by itself and exits 0
    leader = cluster.leader()
    result = leader.cluster_tool("shutdown")
    assert result.returncode == 0, result.stdout + result.stderr
    for member in cluster.members:
        assert member.wait_exit(60) == 0, member.log_text()[-3000:]
        if not on_thread:
            assert member.container_proc is not None and member.container_proc.wait(60) == 0
    for member in cluster.members:
        entries = tool.recording_log(member.cluster_dir, out=None)
        assert [e.type for e in entries if e.is_valid].count(ENTRY_TYPE_SNAPSHOT) == 4
        assert entries[0].type == ENTRY_TYPE_TERM
    cluster.start()
    cluster.leader()
    cluster.wait_for_followers(2)
    restarted = cluster.wait_for_same_state(predicate=lambda s: s["applied"] == state["applied"])
    assert restarted["total"] == state["total"] and restarted["closed"] == state["closed"]
    third = make_client("third", cluster.ingress_endpoints())
    assert int(third.call("add", add_value(0))) == state["total"] + add_value(0)
