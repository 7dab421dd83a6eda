# SPDX-License-Identifier: Apache-2.0
"""The files our running members write (the consensus module's and the service container's mark files,
recording.log) and what they answer on their control channel, read back by our ClusterTool
(``python -m aeron.cluster.tool``): ``describe``, ``pid``, ``recording-log``, ``list-members`` and ``is-leader``
print what Java's tool prints for a Java member (tests/data/golden/cluster/expected: the same fields in the same
order; values are this cluster's)."""
from __future__ import annotations

import re
import time
from collections.abc import Callable

import pytest

from aeron.cluster import tool
from tests.cluster.conftest import expected
from tests.cluster.system.members import MemberProcess, TestCluster

pytestmark = pytest.mark.timeout(300)


def fields(text: str) -> list[str]:
    """The field names of a ``name=value|name=value`` or ``name=value, name=value`` text, in order."""
    return re.findall(r"(\w+)=", text)


def values(text: str) -> dict[str, str]:
    """The fields of a ``[MarkFileHeader]...`` line."""
    return dict(re.findall(r"(\w+)=('[^']*'|[^|]*)", text.split(":", 1)[1]))


def test_describe_reads_both_mark_files_of_each_member_as_javas_tool_does(shared_cluster: TestCluster):
    golden = expected("offline/clustertool-describe.txt").splitlines()
    for member in shared_cluster.members:
        result = member.cluster_tool("describe")
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        assert len(lines) == len(golden), result.stdout
        assert lines[0].startswith("Type: CONSENSUS_MODULE ") and lines[3].startswith("Type: CONTAINER ")
        assert lines[2] == f"INFO: mark file exists: {member.cluster_dir}/cluster-mark-service-0.dat"
        for ours, theirs in ((lines[1], golden[1]), (lines[4], golden[4])):
            assert fields(ours) == fields(theirs), (ours, theirs)
        cm, container = values(lines[1]), values(lines[4])
        pid = str(member.pid)                       # the container runs in the member's process
        assert (cm["componentType"], cm["memberId"], cm["serviceId"], cm["pid"]) == ("CONSENSUS_MODULE",
                                                                                      str(member.member_id), "-1", pid)
        assert (container["componentType"], container["serviceId"], container["pid"]) == ("CONTAINER", "0", pid)
        assert cm["aeronDirectory"] == container["aeronDirectory"] == f"'{member.aeron_dir}'"
        assert cm["ingressChannel"] == "'aeron:udp?term-length=64k'"
        assert container["serviceName"] == "'clustered-service-0-0'"
        assert int(cm["activityTimestamp"]) > 0     # running: its liveness is kept up

        descriptions = tool.describe(member.cluster_dir, out=None)
        assert [d.component_type for d in descriptions] == ["CONSENSUS_MODULE", "CONTAINER"]
        result = member.cluster_tool("pid")
        assert (result.returncode, result.stdout.strip()) == (0, pid)


def eventually(check: Callable[[], None], timeout: float = 60.0) -> None:
    """Run ``check`` until it passes: what names the leader is checked again when the load made the cluster elect
    another one in between."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            check()
            return
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def test_recording_log_list_members_and_is_leader_read_our_running_members(shared_cluster: TestCluster):
    golden_entry = fields(re.findall(r"Entry\{[^}]*\}", expected("live/clustertool-recording-log.txt"))[0])
    golden_members = expected("live/clustertool-list-members.txt")
    golden_member = fields(re.findall(r"ClusterMember\{[^}]*\}", golden_members)[0])
    for member in shared_cluster.members:
        result = member.cluster_tool("recording-log")
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith("RecordingLog{entries=[Entry{") and "cacheIndex={" in result.stdout
        entries = re.findall(r"Entry\{[^}]*\}", result.stdout)
        assert entries and all(fields(e) == golden_entry for e in entries), result.stdout
        # term 0 first, open (logPosition=-1) unless the load made the cluster elect again since
        assert "recordingId=0, leadershipTermId=0, termBaseLogPosition=0, logPosition=" in entries[0]
        assert "serviceId=-1, type=TERM, isValid=true, entryIndex=0" in entries[0]
        assert "logPosition=-1," in entries[-1] and "type=TERM" in entries[-1]
        assert tool.recording_log(member.cluster_dir, out=None)[0].leadership_term_id == 0

        def list_members(member: MemberProcess = member) -> None:
            leader = shared_cluster.leader()
            result = member.cluster_tool("list-members")
            assert result.returncode == 0, result.stdout + result.stderr
            assert fields(result.stdout.split("activeMembers=")[0]) == \
                fields(golden_members.split("activeMembers=")[0])
            members = re.findall(r"ClusterMember\{[^}]*\}", result.stdout)
            assert len(members) == 3 and all(fields(m) == golden_member for m in members), result.stdout
            assert f"leaderMemberId={leader.member_id}, memberId={member.member_id}," in result.stdout
            assert f"ingressEndpoint='{member.ingress_endpoint}'" in result.stdout

        def is_leader(member: MemberProcess = member) -> None:
            expected_status = 0 if member is shared_cluster.leader() else 1
            result = member.cluster_tool("is-leader")
            assert (result.returncode, result.stdout) == (expected_status, ""), result.stderr
            assert tool.is_leader(member.cluster_dir, out=None) == expected_status

        eventually(list_members)
        eventually(is_leader)
