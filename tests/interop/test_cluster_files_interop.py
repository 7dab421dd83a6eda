# SPDX-License-Identifier: Apache-2.0
"""Cluster files across implementations (needs AERON_JAVA_CP; skips cleanly without it).

- The official Java ClusterTool reads a cluster directory our ClusterMarkFile, NodeStateFile and RecordingLog wrote
  (mark files with an error, a recording log of many terms with snapshots, an invalidated set, a standby snapshot
  and a removed entry) and prints what our tool prints: describe, pid, recording-log, errors; its is-leader reads
  the counters of our driver.
- Java's ClusterTool rewrites our recording log (sort, seed, invalidate) and our RecordingLog reads the result as
  ours would have written it; Java's NodeStateFile reads our node-state.dat, and we read one it wrote.
- Our reading of the golden Java files is tests/cluster/.
"""
import datetime
import io
import os
import re
import shutil
import subprocess

import pytest

from aeron import Aeron
from aeron import Context as AeronContext
from aeron._core.cnc import CncFile
from aeron._core.codecs.cluster_mark import ClusterComponentType
from aeron.cluster import tool
from aeron.cluster.election_state import ElectionState
from aeron.cluster.node_state_file import NodeStateFile
from aeron.cluster.recording_log import RecordingLog
from aeron.cluster.service import cluster_counters as cc
from aeron.cluster.service.cluster import Role
from aeron.cluster.service.cluster_counters import ClusterCounters
from aeron.cluster.service.cluster_mark_file import ClusterMarkFile
from aeron.driver import MediaDriver
from tests import procs
from tests.archive.archives import JAVA_OPENS
from tests.support import driver_context

UTC = datetime.timezone.utc
START_MS = 1_795_000_000_000


def java_classpath():
    value = os.environ.get("AERON_JAVA_CP")
    if not value:
        pytest.skip("AERON_JAVA_CP is not set: the official Java ClusterTool is not available")
    return value


def java(*args, timeout=120):
    cmd = ["java", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Duser.timezone=UTC", *JAVA_OPENS,
           "-cp", java_classpath(), *map(str, args)]
    env = dict(procs.client_env(), TZ="UTC")
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, check=False)


def java_tool(cluster_dir, *args):
    return java("io.aeron.cluster.ClusterTool", cluster_dir, *args)


def ours(fn, *args, **kwargs):
    out = io.StringIO()
    fn(*args, out=out, **kwargs)
    return out.getvalue()


def without_clock(text):
    """The time of day of the run on each ``Type:`` line."""
    return re.sub(r"^(Type: \S+ )\d\d:\d\d:\d\d ", r"\1HH:MM:SS ", text, flags=re.M)


def _mark_file(path, component, services_dir, driver_dir, service_id, ingress_stream_id, service_name,
               authenticator):
    mark = ClusterMarkFile.create(path, component, epoch_clock=lambda: START_MS)
    enc = mark.encoder()
    enc.archive_stream_id, enc.service_stream_id, enc.consensus_module_stream_id = 10, 104, 105
    enc.ingress_stream_id, enc.member_id, enc.service_id, enc.cluster_id = ingress_stream_id, 1, service_id, 0
    enc.put_aeron_directory(str(driver_dir)).put_control_channel("aeron:ipc?term-length=128k")
    enc.put_ingress_channel("aeron:udp?term-length=64k" if ingress_stream_id > 0 else "")
    enc.put_service_name(service_name).put_authenticator(authenticator)
    enc.put_services_cluster_dir(str(services_dir) if component == ClusterComponentType.CONSENSUS_MODULE else "")
    return mark


def _recording_log(cluster_dir):
    with RecordingLog(cluster_dir, create_new=True) as log:
        for term in range(12):                                  # enough terms to grow Agrona's index map
            log.append_term(7, term, term * 1000, START_MS + term)
        for position in (2500, 7500):
            for service_id in (1, 0, -1):
                log.append_snapshot(100 + position // 100 + service_id, position // 1000, position // 1000 * 1000,
                                    position, START_MS + position, service_id)
        log.append_standby_snapshot(300, 3, 3000, 3300, START_MS, -1, "standby-archive.example.com:8010")
        log.append_snapshot(400, 11, 11000, 11500, START_MS, -1)
        log.remove_entry(11, log.next_entry_index - 1)
        log.commit_log_position(11, 11800)


@pytest.fixture
def our_cluster(tmp_path, shm_dir):
    java_classpath()
    cluster = tmp_path / "cluster"
    cluster.mkdir()
    driver = shm_dir / "driver"
    driver.mkdir()
    cnc = CncFile.create(driver / "cnc.dat", to_driver_buffer_length=1024 + 768, to_clients_buffer_length=1024 + 128,
                         counters_metadata_buffer_length=4096, counters_values_buffer_length=1024,
                         error_log_buffer_length=4096, client_liveness_timeout_ns=10 ** 10,
                         start_timestamp_ms=START_MS, pid=os.getpid())
    cnc.close()
    with _mark_file(cluster / ClusterMarkFile.FILENAME, ClusterComponentType.CONSENSUS_MODULE, cluster, driver,
                    -1, 101, "", "io.aeron.security.DefaultAuthenticatorSupplier") as mark:
        mark.error_log.record(RuntimeError("a consensus module error"))
        mark.signal_ready(START_MS + 5)
        mark.signal_terminated()
    with _mark_file(cluster / ClusterMarkFile.mark_filename_for_service(0), ClusterComponentType.CONTAINER, cluster,
                    driver, 0, -1, "clustered-service-1-0", "") as mark:
        mark.signal_ready(START_MS + 6)
    with NodeStateFile(cluster, create_new=True) as state:
        state.propose_max_candidate_term_id(11, 11800, START_MS + 7)
    _recording_log(cluster)
    return cluster


@pytest.mark.parametrize("command, fn", [("describe", tool.describe), ("errors", tool.errors)])
def test_java_tool_prints_what_ours_prints_on_our_directory(our_cluster, command, fn):
    result = java_tool(our_cluster, command)
    assert result.returncode == 0, result.stderr
    assert without_clock(result.stdout) == without_clock(ours(fn, our_cluster, tz=UTC))
    assert "componentType=CONSENSUS_MODULE" in result.stdout or "a consensus module error" in result.stdout


def test_java_tool_reads_our_pid_and_recording_log(our_cluster):
    assert java_tool(our_cluster, "pid").stdout == f"{os.getpid()}\n"
    result = java_tool(our_cluster, "recording-log")
    assert result.returncode == 0, result.stderr
    assert result.stdout == ours(tool.recording_log, our_cluster)
    assert "cacheIndex={" in result.stdout and "archiveEndpoint=standby-archive.example.com:8010" in result.stdout


def _entries(cluster_dir):
    with RecordingLog(cluster_dir) as log:
        return [(e.recording_id, e.leadership_term_id, e.term_base_log_position, e.log_position, e.timestamp,
                 e.service_id, e.type, e.is_valid, e.archive_endpoint, e.entry_index) for e in log.entries]


def test_java_rewrites_of_our_recording_log_read_as_ours(our_cluster, tmp_path):
    for command, fn in (("sort-recording-log", tool.sort_recording_log),
                        ("seed-recording-log-from-snapshot", tool.seed_recording_log_from_snapshot)):
        theirs, mine = tmp_path / f"java-{command}", tmp_path / f"ours-{command}"
        for target in (theirs, mine):
            target.mkdir()
            shutil.copy(our_cluster / "recording.log", target)
        result = java_tool(theirs, command)
        assert result.returncode == 0, result.stdout + result.stderr
        fn(mine)
        # the same entries; the padding after each entry's fields is not compared: Java's holds what its
        # buffer last held (here a standby snapshot's endpoint), ours zeros
        assert _entries(theirs) == _entries(mine), command
    result = java_tool(our_cluster, "invalidate-latest-snapshot")
    assert result.stdout == " invalidate latest snapshot: true\n"
    with RecordingLog(our_cluster) as log:
        assert sorted(e.recording_id for e in log.entries if not e.is_valid) == [174, 175, 176]
        assert log.get_latest_snapshot(-1).recording_id == 124


NODE_STATE_PROGRAM = """
import io.aeron.cluster.NodeStateFile;
import java.io.File;

public class NodeStateProbe
{
    public static void main(final String[] args) throws Exception
    {
        try (NodeStateFile file = new NodeStateFile(new File(args[0]), args.length > 1, 0))
        {
            if (args.length > 1)
            {
                file.proposeMaxCandidateTermId(Long.parseLong(args[1]), 4096, 1795000000123L);
            }
            final NodeStateFile.CandidateTerm term = file.candidateTerm();
            System.out.println(term.candidateTermId() + " " + term.timestamp() + " " + term.logPosition());
        }
    }
}
"""


def test_node_state_files_are_read_both_ways(our_cluster, tmp_path):
    probe = tmp_path / "NodeStateProbe.java"
    probe.write_text(NODE_STATE_PROGRAM)
    result = java(probe, our_cluster)                       # Java reads ours
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"11 {START_MS + 7} 11800\n"
    theirs = tmp_path / "java-node"
    theirs.mkdir()
    result = java(probe, theirs, 42)                        # Java writes one, we read it
    assert result.returncode == 0, result.stderr
    with NodeStateFile(theirs) as state:
        assert state.candidate_term() == (42, 1795000000123, 4096)
    assert (theirs / "node-state.dat").read_bytes()[:24] == (our_cluster / "node-state.dat").read_bytes()[:24]


def test_java_is_leader_reads_our_drivers_counters(tmp_path):
    java_classpath()
    with MediaDriver.launch_embedded(driver_context()) as driver, \
            Aeron.connect(AeronContext(aeron_dir=driver.aeron_dir)) as aeron:
        with ClusterMarkFile.create(tmp_path / ClusterMarkFile.FILENAME, ClusterComponentType.CONSENSUS_MODULE) as mark:
            mark.encoder().put_aeron_directory(driver.aeron_dir)
            mark.signal_ready(START_MS)
        role = ClusterCounters.allocate(aeron, cc.NODE_ROLE_NAME, cc.CLUSTER_NODE_ROLE_TYPE_ID, 0)
        election = ClusterCounters.allocate(aeron, cc.ELECTION_STATE_NAME, cc.CLUSTER_ELECTION_STATE_TYPE_ID, 0)
        role.set_ordered(Role.LEADER)
        election.set_ordered(ElectionState.CLOSED)
        assert java_tool(tmp_path, "is-leader").returncode == 0 == tool.is_leader(tmp_path)
        role.set_ordered(Role.FOLLOWER)
        assert java_tool(tmp_path, "is-leader").returncode == 1 == tool.is_leader(tmp_path)
