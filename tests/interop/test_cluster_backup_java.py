# SPDX-License-Identifier: Apache-2.0
"""Java's ClusterBackup (``ClusterBackupMediaDriver``) backing up our one-member cluster: its BackupQuery on our
consensus endpoint is answered, it replicates the snapshots from our archive, records the live log replayed from
it, and follows the log as the cluster goes on. Needs AERON_JAVA_CP (skips without it)."""
from __future__ import annotations

import pathlib
import subprocess

from aeron.cluster import tool
from aeron.cluster.cluster_control import map_counters
from aeron.cluster.recording_log import RecordingLog
from aeron.cluster.service.cluster_counters import ClusterCounters
from tests.interop.cluster_support import (JVM_OPTIONS, JavaClient, MemberProcess, cluster_java,  # noqa: F401
                                           cluster_members, ingress_endpoints, stop_process)
from tests.procs import client_env
from tests.support import free_port, wait_for

BACKUP_STATE_TYPE_ID = 208
LIVE_LOG_POSITION_TYPE_ID = 209
BACKING_UP = 5
SNAPSHOT = 1


def backup_counters(aeron_dir: pathlib.Path) -> tuple[int | None, int | None]:
    """(ClusterBackup state, live log position), Nones while unavailable."""
    try:
        with map_counters(aeron_dir / "cnc.dat") as mapped:
            return (ClusterCounters.find_value(mapped.reader, BACKUP_STATE_TYPE_ID, 0),
                    ClusterCounters.find_value(mapped.reader, LIVE_LOG_POSITION_TYPE_ID, 0))
    except Exception:                   # noqa: BLE001 - not there yet
        return None, None


def start_backup(classpath: str, base: pathlib.Path, consensus_endpoint: str) -> subprocess.Popen:
    props = {
        "aeron.dir": base / "driver", "aeron.cluster.dir": base / "cluster", "aeron.archive.dir": base / "archive",
        "aeron.dir.delete.on.start": "true", "aeron.threading.mode": "SHARED",
        "aeron.archive.threading.mode": "SHARED",
        "aeron.archive.control.channel": f"aeron:udp?endpoint=127.0.0.1:{free_port()}",
        "aeron.archive.control.response.channel": "aeron:udp?endpoint=127.0.0.1:0",
        "aeron.archive.replication.channel": "aeron:udp?endpoint=127.0.0.1:0", "aeron.archive.id": "99",
        "aeron.cluster.consensus.endpoints": consensus_endpoint,
        "aeron.cluster.consensus.channel": f"aeron:udp?endpoint=127.0.0.1:{free_port()}",
        "aeron.cluster.backup.catchup.endpoint": f"127.0.0.1:{free_port()}",
        "aeron.cluster.backup.interval": "2s",
    }
    base.mkdir(parents=True, exist_ok=True)
    with open(base / "backup.log", "w") as log:
        return subprocess.Popen(["java", *JVM_OPTIONS, "-cp", classpath, *[f"-D{k}={v}" for k, v in props.items()],
                                 "io.aeron.cluster.ClusterBackupMediaDriver"], env=client_env(), stdout=log,
                                stderr=subprocess.STDOUT)


def test_java_cluster_backup_of_our_member(cluster_java, shm_dir):
    classpath, _ = cluster_java
    members = cluster_members(1)
    node = MemberProcess(0, members, shm_dir, classpath)
    backup_dir = shm_dir / "backup"
    client = backup = None
    try:
        node.start()
        wait_for(node.is_leader, 60, what="a leader", interval_s=0.2)
        client = JavaClient(classpath, node.aeron_dir, ingress_endpoints(members))
        client.out.wait_for("CONNECTED", 60)
        for i in range(5):
            client.send(f"a{i}")
            client.expect(f"a{i}")
        assert tool.toggle_cluster_state(node.cluster_dir, "snapshot", timeout_ms=30_000)
        for i in range(5):
            client.send(f"b{i}")
            client.expect(f"b{i}")

        backup = start_backup(classpath, backup_dir, members.split(",")[2])

        def backed_up(position: int | None) -> bool:
            client.command("poll 200")              # the client's keep-alives while the backup works
            client.out.wait_for("POLLED", 30)
            state, live_log_position = backup_counters(backup_dir / "driver")
            return state == BACKING_UP and live_log_position == position

        wait_for(lambda: backed_up(node.counters()[3]), 60, what="the backup at the commit position")
        for i in range(5):
            client.send(f"c{i}")
            client.expect(f"c{i}")
        wait_for(lambda: backed_up(node.counters()[3]), 60, what="the backup following the log")

        with RecordingLog(backup_dir / "cluster", False) as backup_log, \
                RecordingLog(node.cluster_dir, False) as member_log:
            def snapshots(log):
                return sorted((e.service_id, e.log_position) for e in log.entries if e.type == SNAPSHOT)
            assert snapshots(backup_log) == snapshots(member_log) and len(snapshots(member_log)) == 2
            assert [e.leadership_term_id for e in backup_log.entries if e.type == 0] == [0]
    finally:
        stop_process(backup)
        if client is not None:
            client.close()
        node.stop()
