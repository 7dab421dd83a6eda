# SPDX-License-Identifier: Apache-2.0
"""ClusterTool on the golden Java node prints what the Java ClusterTool printed (the time of the run aside),
is-leader reads a running driver's counters, the commands that rewrite the recording log need an explicit yes,
and bad invocations fail as Java's do."""
import datetime
import io
import os
import shutil
import struct
import types

import pytest

from aeron import Aeron
from aeron import Context as AeronContext
from aeron._core.cnc import CncFile
from aeron.archive import AeronArchive
from aeron.cluster import tool
from aeron.cluster.election_state import ElectionState
from aeron.cluster.recording_log import RECORDING_LOG_FILE_NAME, RecordingLog
from aeron.cluster.service import cluster_counters as cc
from aeron.cluster.service.cluster import Role
from aeron.cluster.service.cluster_counters import ClusterCounters
from aeron.cluster.service.cluster_mark_file import ClusterMarkFile
from aeron.driver import MediaDriver
from tests.archive.archives import our_archive, scratch_dir
from tests.archive.client_suite import Signals, payloads, record
from tests.cluster.conftest import expected
from tests.support import driver_context

UTC = datetime.timezone.utc
GOLDEN_SERVICES_DIR = "/dev/shm/golden-cluster-work/node0/cluster"
GOLDEN_DRIVER_DIR = "/dev/shm/golden-cluster-0-driver"
RUN_AT_08_18_17 = 1795335497000          # the offline run's clock line: 08:18:17 UTC


def run(fn, *args, **kwargs):
    out = io.StringIO()
    result = fn(*args, out=out, **kwargs)
    return result, out.getvalue()


def main(*argv, stdin=""):
    out = io.StringIO()
    status = tool.main([str(a) for a in argv], out, io.StringIO(stdin))
    return status, out.getvalue()


def _with_info_path(text, services_dir):
    # Java read the service mark file from the directory the mark file names; the tests, from the copy
    return text.replace(f"INFO: mark file exists: {GOLDEN_SERVICES_DIR}/", f"INFO: mark file exists: {services_dir}/")


def test_describe_prints_as_javas(golden_node):
    cluster = golden_node / "cluster"
    found, text = run(tool.describe, cluster, tz=UTC, now_ms=RUN_AT_08_18_17)
    # the service mark file is read from the copy: the directory the mark file names is gone
    assert text == _with_info_path(expected("offline/clustertool-describe.txt"), cluster)
    assert [(d.component_type, d.pid, d.activity_timestamp) for d in found] == [("CONSENSUS_MODULE", 24254, -1),
                                                                               ("CONTAINER", 24254, -1)]
    assert found[1].path == cluster / "cluster-mark-service-0.dat"


def test_pid_and_recording_log_print_as_javas(golden_node):
    cluster = golden_node / "cluster"
    assert tool.pid(cluster) == 24254
    assert main(cluster, "pid") == (0, expected("offline/clustertool-pid.txt")) == \
        (0, expected("live/clustertool-pid.txt"))
    entries, text = run(tool.recording_log, cluster)
    assert text == expected("offline/clustertool-recording-log.txt") == expected("live/clustertool-recording-log.txt")
    assert [e.recording_id for e in entries] == [0, 1, 2]
    assert main(cluster, "recording-log") == (0, text)


def test_errors_print_as_javas_with_the_drivers_error_log(golden_node, shm_dir):
    cluster = golden_node / "cluster"
    driver_dir = shm_dir / "driver"
    driver_dir.mkdir()
    cnc = CncFile.create(driver_dir / "cnc.dat", to_driver_buffer_length=1024 + 768,
                         to_clients_buffer_length=1024 + 128, counters_metadata_buffer_length=4096,
                         counters_values_buffer_length=1024, error_log_buffer_length=4096,
                         client_liveness_timeout_ns=10 ** 10, start_timestamp_ms=0, pid=os.getpid())
    cnc.close()
    found, text = run(tool.errors, cluster, tz=UTC, now_ms=RUN_AT_08_18_17, aeron_dir=driver_dir)
    assert text == _with_info_path(expected("offline/clustertool-errors.txt"), cluster).replace(
        GOLDEN_DRIVER_DIR, str(driver_dir))
    assert sorted(found) == sorted([str(cluster / "cluster-mark.dat"), str(driver_dir / "cnc.dat"),
                                    str(cluster / "cluster-mark-service-0.dat")])
    assert all(records == [] for records in found.values())
    # without the driver's directory: said so, and the services still follow
    _, text = run(tool.errors, cluster, tz=UTC, now_ms=RUN_AT_08_18_17)
    assert f"Aeron driver error log (directory: {GOLDEN_DRIVER_DIR}):\nno media driver CnC file: " in text
    assert text.endswith("Cluster component error log:\n\n0 distinct errors observed\n")


def test_errors_print_recorded_errors(tmp_path):
    with ClusterMarkFile.create(tmp_path / ClusterMarkFile.FILENAME, 1) as mark:
        encoder = mark.encoder()
        encoder.put_aeron_directory(str(tmp_path / "no-driver"))
        mark.error_log.record(RuntimeError("election failed"))
        mark.error_log.record(RuntimeError("election failed"))
        mark.signal_ready(1)
    found, text = run(tool.errors, tmp_path, tz=UTC)
    (records,) = [r for path, r in found.items() if path.endswith("cluster-mark.dat")]
    assert records[0].observation_count == 2
    assert "\n2 observations from " in text and "election failed" in text and "\n1 distinct errors observed.\n" in text


def test_describe_latest_cm_snapshot_prints_as_javas(golden_node):
    items, text = run(tool.describe_latest_cm_snapshot, golden_node / "cluster", golden_node / "archive")
    assert text == expected("live/clustertool-describe-latest-cm-snapshot.txt")
    assert [(i.name, i.offset, i.length) for i in items] == [("SnapshotMarker", 32, 48), ("ConsensusModule", 128, 36),
                                                            ("PendingMessageTracker", 224, 32),
                                                            ("SnapshotMarker", 288, 48)]
    status, cli = main(golden_node / "cluster", "describe-latest-cm-snapshot", golden_node / "archive")
    assert (status, cli) == (0, text)


def test_describe_latest_cm_snapshot_without_a_snapshot(golden_node):
    with RecordingLog(golden_node / "cluster") as log:
        assert log.invalidate_latest_snapshot()
    assert main(golden_node / "cluster", "describe-latest-cm-snapshot", golden_node / "archive") == \
        (-1, "Snapshot not found\n")
    assert main(golden_node / "cluster", "describe-latest-cm-snapshot")[0] == -1


def test_recovery_plan_prints_as_javas(golden_node):
    class Archive:
        def list_recording(self, recording_id, consumer):
            consumer(types.SimpleNamespace(start_position=0, stop_position=-1, initial_term_id=0,
                                           term_buffer_length=65536, mtu_length=1408, session_id=259338101))
            return 1

    plan, text = run(tool.recovery_plan, golden_node / "cluster", 1, Archive())
    assert text == expected("live/clustertool-recovery-plan-1.txt") and plan.log.recording_id == 0


def _unsorted_log(directory):
    with RecordingLog(directory, create_new=True) as log:
        log.append_term(5, 0, 0, 10)
        log.append_term(5, 1, 400, 20)
        for service_id in (0, -1):
            log.append_snapshot(10 + service_id, 0, 0, 300, 30, service_id)       # sorts before term 1


def test_sort_recording_log_needs_a_yes(tmp_path):
    _unsorted_log(tmp_path)
    path = tmp_path / RECORDING_LOG_FILE_NAME
    before = path.read_bytes()
    for answer in ("", "\n", "n\n", "maybe\n"):              # the end of input, an empty line, no: all refuse
        status, text = main(tmp_path, "sort-recording-log", stdin=answer)
        assert status == -1 and text.startswith("WARNING: The recording log will be rewritten in sorted order.")
        assert text.endswith("Aborted: nothing was changed.\n") and path.read_bytes() == before
    assert main(tmp_path, "sort-recording-log", stdin="y\n")[0] == 0
    with RecordingLog(tmp_path) as log:
        assert [e.entry_index for e in log.entries] == [0, 1, 2, 3]
        assert [(e.leadership_term_id, e.service_id) for e in log.entries] == [(0, -1), (0, 0), (0, -1), (1, -1)]
    assert main(tmp_path, "sort-recording-log", "--yes") == (-1, "")         # already sorted: as Java, a failure
    assert tool.sort_recording_log(tmp_path / "missing") is False


def test_seed_recording_log_from_snapshot(tmp_path):
    _unsorted_log(tmp_path)
    before = (tmp_path / RECORDING_LOG_FILE_NAME).read_bytes()
    assert main(tmp_path, "seed-recording-log-from-snapshot", stdin="no\n")[0] == -1
    assert main(tmp_path, "seed-recording-log-from-snapshot", "--yes") == (0, "")
    assert (tmp_path / "recording.log.bak").read_bytes() == before
    with RecordingLog(tmp_path) as log:
        assert [(e.recording_id, e.term_base_log_position, e.log_position, e.service_id, e.entry_index)
                for e in log.entries] == [(10, 0, 0, 0, 0), (9, 0, 0, -1, 1)]
    # no valid snapshot: no recording log at all, as Java leaves it
    other = tmp_path / "other"
    other.mkdir()
    _unsorted_log(other)
    with RecordingLog(other) as log:
        log.invalidate_latest_snapshot()
    assert tool.seed_recording_log_from_snapshot(other) == []
    assert not (other / RECORDING_LOG_FILE_NAME).exists() and (other / "recording.log.bak").exists()


def test_invalidate_latest_snapshot_prints_as_javas(golden_node):
    cluster = golden_node / "cluster"
    status, text = main(cluster, "-y", "invalidate-latest-snapshot")
    assert (status, text) == (0, " invalidate latest snapshot: true\n")
    _, log_text = run(tool.recording_log, cluster)
    assert log_text.count("isValid=false") == 2
    assert main(cluster, "invalidate-latest-snapshot", stdin="y\n")[1].endswith(" invalidate latest snapshot: false\n")


@pytest.fixture
def node_on_a_driver(tmp_path):
    """A mark file naming a running driver, and a client of that driver to make the node's counters with."""
    with MediaDriver.launch_embedded(driver_context()) as driver, \
            Aeron.connect(AeronContext(aeron_dir=driver.aeron_dir)) as aeron:
        with ClusterMarkFile.create(tmp_path / ClusterMarkFile.FILENAME, 1) as mark:
            mark.encoder().put_aeron_directory(driver.aeron_dir)
            mark.signal_ready(1)
        yield tmp_path, aeron


def test_is_leader_reads_the_role_and_election_state_counters(node_on_a_driver):
    cluster, aeron = node_on_a_driver
    assert tool.is_leader(cluster) == 1                     # no counters yet
    role = ClusterCounters.allocate(aeron, cc.NODE_ROLE_NAME, cc.CLUSTER_NODE_ROLE_TYPE_ID, 0)
    election = ClusterCounters.allocate(aeron, cc.ELECTION_STATE_NAME, cc.CLUSTER_ELECTION_STATE_TYPE_ID, 0)
    role.set_ordered(Role.LEADER)
    election.set_ordered(ElectionState.LEADER_READY)
    assert tool.is_leader(cluster) == 1
    election.set_ordered(ElectionState.CLOSED)
    assert tool.is_leader(cluster) == 0
    assert main(cluster, "is-leader") == (0, expected("live/clustertool-is-leader.txt")) == (0, "")
    role.set_ordered(Role.FOLLOWER)
    assert main(cluster, "is-leader") == (1, "")


def test_is_leader_without_mark_file_or_driver(tmp_path):
    assert main(tmp_path, "is-leader") == (-1, "cluster-mark.dat does not exist.\n")
    with ClusterMarkFile.create(tmp_path / ClusterMarkFile.FILENAME, 1) as mark:
        mark.encoder().put_aeron_directory(str(tmp_path / "no-driver"))
        mark.signal_ready(1)
    assert tool.is_leader(tmp_path) == 1


def test_missing_mark_file_and_bad_invocations(tmp_path):
    assert main(tmp_path, "describe") == (0, "cluster-mark.dat does not exist.\n")      # Java ignores the failure
    assert main(tmp_path, "pid") == (-1, "")
    status, text = main(tmp_path, "errors")
    assert (status, text) == (0, "cluster-mark.dat does not exist.\n")
    status, text = main(tmp_path, "no-such-command")
    assert status == -1 and text.startswith("Unknown command: no-such-command\nUsage: python -m aeron.cluster.tool <cluster-dir> <command>")
    status, text = main(tmp_path / "nope", "describe")
    assert status == -1 and text.startswith("Usage:")
    status, text = main(tmp_path)
    assert status == -1 and "      describe: prints out all descriptors in the mark file." in text
    assert main(tmp_path, "recording-log")[0] == -1                       # no recording log: an error, not a trace
    assert main(tmp_path, "recovery-plan")[0] == -1                       # the service count is missing
    assert main("--version")[1].startswith("aeron-py ")


def test_a_service_mark_file_found_through_its_link(golden_node, tmp_path):
    cluster = golden_node / "cluster"
    elsewhere = tmp_path / "marks"
    elsewhere.mkdir()
    shutil.move(cluster / "cluster-mark-service-0.dat", elsewhere / "cluster-mark-service-0.dat")
    (cluster / "cluster-mark-service-0.lnk").write_text(str(elsewhere))
    found, text = run(tool.describe, cluster, tz=UTC)
    assert [d.path for d in found][1] == elsewhere / "cluster-mark-service-0.dat"
    assert f"INFO: mark file exists: {elsewhere / 'cluster-mark-service-0.dat'}\n" in text


def test_the_mark_file_found_through_its_link(golden_node, tmp_path):
    cluster = golden_node / "cluster"
    elsewhere = tmp_path / "cm-marks"
    elsewhere.mkdir()
    shutil.move(cluster / "cluster-mark.dat", elsewhere / "cluster-mark.dat")
    (cluster / "cluster-mark.lnk").write_text(str(elsewhere) + "\n")
    assert tool.pid(cluster) == 24254
    raw = (elsewhere / "cluster-mark.dat").read_bytes()
    assert struct.unpack_from("<q", raw, 32)[0] == 24254


def test_recovery_plan_asks_a_running_archive(tmp_path, monkeypatch):
    # the command line connects an AeronArchive client from the AERON_ARCHIVE_* settings, as Aeron's tool does
    with scratch_dir("cluster-tool") as base, our_archive(base, "node", 5) as archive:
        signals = Signals()
        with archive.connect_aeron() as aeron:
            ctx = archive.context(aeron=aeron)
            ctx.recording_signal_consumer = signals
            with AeronArchive.connect(ctx) as client:
                recording_id, _stop, _publication = record(client, aeron, signals, payloads(5))
                with RecordingLog(tmp_path, create_new=True) as log:
                    log.append_term(recording_id, 0, 0, 1)
                plan, text = run(tool.recovery_plan, tmp_path, 0, client)
                # the command line while the publication is still open, so that both see the recording active
                monkeypatch.setenv("AERON_DIR", archive.aeron_dir)
                monkeypatch.setenv("AERON_ARCHIVE_CONTROL_CHANNEL", archive.control_channel)
                monkeypatch.setenv("AERON_ARCHIVE_CONTROL_RESPONSE_CHANNEL", "aeron:udp?endpoint=localhost:0")
                status, cli = main(tmp_path, "recovery-plan", 0)
        # the recording is still active: no stop position yet, as in the golden live run
        assert (plan.log.recording_id, plan.log.start_position, plan.log.stop_position) == (recording_id, 0, -1)
        assert status == 0 and cli.startswith("RecoveryPlan[lastLeadershipTermId=0, lastTermBaseLogPosition=0, ")
        assert cli == text
