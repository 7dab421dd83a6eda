# SPDX-License-Identifier: Apache-2.0
"""RecordingLog: the golden Java file read and printed as Java prints it, entries written byte for byte as Java
writes them, Java's sorted order, commits, invalidation and restoration in place, removal, standby snapshots,
hostile and truncated files, and recovery plans against a fake archive."""
import shutil
import struct
import types

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aeron.cluster.recording_log import (
    ENTRY_TYPE_SNAPSHOT,
    ENTRY_TYPE_STANDBY_SNAPSHOT,
    ENTRY_TYPE_TERM,
    RECORDING_LOG_FILE_NAME,
    RecordingLog,
    _Long2LongHashMap,
    write_entries,
)
from aeron.common.errors import ClusterError, CorruptFileError
from tests.cluster.conftest import GOLDEN_CLUSTER, expected

GOLDEN_LOG = GOLDEN_CLUSTER / "node0" / "cluster" / RECORDING_LOG_FILE_NAME


class FakeArchive:
    """What a recovery plan asks of an archive: ``list_recording`` of known extents."""

    def __init__(self, **extents):
        self.extents = {int(k[1:]): v for k, v in extents.items()}
        self.asked = []

    def list_recording(self, recording_id, consumer):
        self.asked.append(recording_id)
        if recording_id not in self.extents:
            return 0
        start, stop = self.extents[recording_id]
        consumer(types.SimpleNamespace(start_position=start, stop_position=stop, initial_term_id=0,
                                       term_buffer_length=65536, mtu_length=1408, session_id=259338101))
        return 1


@pytest.fixture
def golden_dir(tmp_path):
    shutil.copy(GOLDEN_LOG, tmp_path)
    return tmp_path


def test_the_golden_java_log_prints_as_javas_tool(golden_dir):
    with RecordingLog(golden_dir) as log:
        assert str(log) + "\n" == expected("offline/clustertool-recording-log.txt")
        terms = [e for e in log.entries if e.type == ENTRY_TYPE_TERM]
        assert [(e.recording_id, e.log_position, e.position) for e in terms] == [(0, -1, 0)]
        assert log.find_last_term_recording_id() == 0 and log.next_entry_index == 3
        assert log.get_latest_snapshot(-1).recording_id == 2 and log.get_latest_snapshot(0).recording_id == 1
        assert log.get_latest_snapshot(1) is None
        assert log.get_term_timestamp(0) == 1795335488559 and log.get_term_timestamp(1) == -1
        assert log.is_unknown(1) and not log.is_unknown(0)


def test_entries_are_written_as_java_writes_them(tmp_path):
    with RecordingLog(tmp_path, create_new=True) as log:
        log.append_term(0, 0, 0, 1795335488559)
        log.append_snapshot(1, 0, 0, 736, 1795335493045, 0)
        log.append_snapshot(2, 0, 0, 736, 1795335493045, -1)
    assert (tmp_path / RECORDING_LOG_FILE_NAME).read_bytes() == GOLDEN_LOG.read_bytes()


def test_a_missing_log_is_an_error_unless_created(tmp_path):
    with pytest.raises(ClusterError, match="no recording log"):
        RecordingLog(tmp_path)
    with RecordingLog(tmp_path, create_new=True) as log:
        assert log.entries == [] and str(log) == "RecordingLog{entries=[], cacheIndex={}}"


def _two_terms_and_snapshots(directory):
    with RecordingLog(directory, create_new=True) as log:
        log.append_term(5, 0, 0, 10)
        log.append_term(5, 1, 400, 20)                                   # commits term 0 at 400
        for service_id in (1, 0, -1):                                     # a snapshot set of term 0, late
            log.append_snapshot(10 + service_id, 0, 0, 300, 30, service_id)
        for service_id in (1, 0, -1):
            log.append_snapshot(20 + service_id, 1, 400, 500, 40, service_id)


def test_entries_are_kept_in_javas_sorted_order(tmp_path):
    _two_terms_and_snapshots(tmp_path)
    with RecordingLog(tmp_path) as log:
        order = [(e.type, e.leadership_term_id, e.service_id, e.entry_index) for e in log.entries]
        assert order == [(ENTRY_TYPE_TERM, 0, -1, 0), (ENTRY_TYPE_SNAPSHOT, 0, 1, 2), (ENTRY_TYPE_SNAPSHOT, 0, 0, 3),
                         (ENTRY_TYPE_SNAPSHOT, 0, -1, 4), (ENTRY_TYPE_TERM, 1, -1, 1),
                         (ENTRY_TYPE_SNAPSHOT, 1, 1, 5), (ENTRY_TYPE_SNAPSHOT, 1, 0, 6),
                         (ENTRY_TYPE_SNAPSHOT, 1, -1, 7)]
        assert log.get_term_entry(0).log_position == 400
        assert log.find_term_entry(1).entry_index == 1 and "1=4" in str(log) and "0=0" in str(log)
    # the order built while appending is the order read back
    with RecordingLog(tmp_path, create_new=True) as log:
        appended = [e.entry_index for e in log.entries]
    assert appended == [0, 2, 3, 4, 1, 5, 6, 7]


def test_a_term_is_committed_in_place_and_the_next_terms_base_is_used(tmp_path):
    with RecordingLog(tmp_path, create_new=True) as log:
        log.append_term(3, 1, 100, 1)
        log.append_term(3, 0, 0, 1)                       # an earlier term later: ends where term 1 begins
        assert log.get_term_entry(0).log_position == 100
        log.commit_log_position(1, 250)
        with pytest.raises(ClusterError, match="unknown leadershipTermId=7"):
            log.commit_log_position(7, 1)
        with pytest.raises(ClusterError, match="duplicate TERM entry for leadershipTermId=1"):
            log.append_term(3, 1, 100, 1)
        with pytest.raises(ClusterError, match="invalid TERM recordingId=4, expected recordingId=3"):
            log.append_term(4, 2, 250, 1)
        with pytest.raises(ClusterError, match="invalid recordingId=-1"):
            log.append_snapshot(-1, 1, 100, 250, 1, 0)
    raw = (tmp_path / RECORDING_LOG_FILE_NAME).read_bytes()
    assert len(raw) == 128 and struct.unpack_from("<q", raw, 24)[0] == 250


def test_the_latest_snapshot_set_is_invalidated_and_an_identical_one_restored_in_place(tmp_path):
    _two_terms_and_snapshots(tmp_path)
    path = tmp_path / RECORDING_LOG_FILE_NAME
    size = path.stat().st_size
    with RecordingLog(tmp_path) as log:
        assert log.invalidate_latest_snapshot()
        assert log.get_latest_snapshot(-1).recording_id == 9 and log.get_latest_snapshot(1).recording_id == 11
        invalid = [e for e in log.entries if not e.is_valid]
        assert sorted(e.recording_id for e in invalid) == [19, 20, 21]
    raw = path.read_bytes()
    for entry in invalid:
        assert struct.unpack_from("<i", raw, entry.position + 44)[0] == ENTRY_TYPE_SNAPSHOT | -(1 << 31)
    with RecordingLog(tmp_path) as log:
        assert "isValid=false" in str(log) and log.get_latest_snapshot(-1).recording_id == 9
        log.append_snapshot(99, 1, 400, 500, 41, -1)          # the same set again: valid once more, in place
        assert log.get_latest_snapshot(-1).recording_id == 99
    assert path.stat().st_size == size
    with RecordingLog(tmp_path) as log:
        # service 0 of that set stays invalid: its latest valid snapshot is the earlier set's, as Java finds it
        assert log.get_latest_snapshot(-1).recording_id == 99 and log.get_latest_snapshot(0).recording_id == 10
        assert log.invalidate_latest_snapshot()                # 99 alone: its services stay invalid
        assert log.invalidate_latest_snapshot()                # then term 0's set
        assert not log.invalidate_latest_snapshot()


def test_a_snapshot_of_an_unknown_term_is_not_invalidated(tmp_path):
    with RecordingLog(tmp_path, create_new=True) as log:
        log.append_snapshot(1, 4, 0, 10, 1, -1)
        with pytest.raises(ClusterError, match="no matching term for snapshot: leadershipTermId=4"):
            log.invalidate_latest_snapshot()


def test_a_removed_entry_is_skipped_but_still_counted(tmp_path):
    _two_terms_and_snapshots(tmp_path)
    with RecordingLog(tmp_path) as log:
        log.remove_entry(1, 6)
        assert [e.entry_index for e in log.entries] == [0, 2, 3, 4, 1, 5, 7] and log.next_entry_index == 8
        with pytest.raises(ClusterError, match="unknown entry index: 6"):
            log.remove_entry(1, 6)
    raw = (tmp_path / RECORDING_LOG_FILE_NAME).read_bytes()
    assert struct.unpack_from("<i", raw, 6 * 64 + 44)[0] == -1


def test_standby_snapshots_carry_their_archive_endpoint(tmp_path):
    endpoint = "archive-host-with-a-long-name.example.com:8010"
    with RecordingLog(tmp_path, create_new=True) as log:
        log.append_term(1, 0, 0, 1)
        for service_id in (0, -1):
            log.append_standby_snapshot(30 + service_id, 0, 0, 64, 2, service_id, endpoint)
        log.append_standby_snapshot(40, 0, 0, 128, 3, -1, "other:1")     # an incomplete set
        with pytest.raises(ClusterError, match="valid endpoint"):
            log.append_standby_snapshot(41, 0, 0, 128, 3, -1, "")
        with pytest.raises(ClusterError, match="Endpoint is too long"):
            log.append_standby_snapshot(41, 0, 0, 128, 3, -1, "x" * 5000)
    raw = (tmp_path / RECORDING_LOG_FILE_NAME).read_bytes()
    assert len(raw) == 64 + 128 + 128 + 64
    assert struct.unpack_from("<i", raw, 64 + 48)[0] == len(endpoint) and endpoint.encode() in raw
    with RecordingLog(tmp_path) as log:
        standby = [e for e in log.entries if e.type == ENTRY_TYPE_STANDBY_SNAPSHOT]
        assert [e.archive_endpoint for e in standby] == [endpoint, endpoint, "other:1"]
        assert f"archiveEndpoint={endpoint}}}" in str(log)
        latest = log.latest_standby_snapshots(1)
        assert list(latest) == [endpoint] and sorted(e.recording_id for e in latest[endpoint]) == [29, 30]
        assert log.latest_standby_snapshots(2) == {}
        assert log.get_latest_snapshot(-1) is None           # standby snapshots are not recovered from


def test_a_hostile_endpoint_length_is_reported_with_path_and_offset(tmp_path):
    with RecordingLog(tmp_path, create_new=True) as log:
        log.append_term(1, 0, 0, 1)
        log.append_standby_snapshot(30, 0, 0, 64, 2, -1, "host:1")
    path = tmp_path / RECORDING_LOG_FILE_NAME
    raw = bytearray(path.read_bytes())
    raw[64 + 48:64 + 52] = struct.pack("<i", -5)
    path.write_bytes(raw)
    with pytest.raises(CorruptFileError) as info:
        RecordingLog(tmp_path)
    assert info.value.offset == 64 + 48 and str(path) in str(info.value)


def test_a_truncated_tail_is_not_read_as_java_does(tmp_path):
    with RecordingLog(tmp_path, create_new=True) as log:
        log.append_term(1, 0, 0, 1)
        log.append_standby_snapshot(30, 0, 0, 64, 2, -1, "host:1")
        log.append_snapshot(31, 0, 0, 64, 2, -1)
    path = tmp_path / RECORDING_LOG_FILE_NAME
    raw = path.read_bytes()
    path.write_bytes(raw[:64 + 48])                    # the standby entry's endpoint is cut off
    with RecordingLog(tmp_path) as log:
        assert [e.recording_id for e in log.entries] == [1]
    path.write_bytes(raw[:64 + 64 + 48])               # an entry of exactly 48 bytes is not read
    with RecordingLog(tmp_path) as log:
        assert [e.recording_id for e in log.entries] == [1, 30]
    path.write_bytes(raw[:64 + 64 + 49])               # but one more byte is
    with RecordingLog(tmp_path) as log:
        assert [e.recording_id for e in log.entries] == [1, 30, 31]


def test_terms_of_two_log_recordings_are_refused_on_reading(tmp_path):
    with RecordingLog(tmp_path, create_new=True) as log:
        log.append_term(1, 0, 0, 1)
    path = tmp_path / RECORDING_LOG_FILE_NAME
    raw = path.read_bytes()
    path.write_bytes(raw + struct.pack("<qqqqqii", 2, 1, 0, -1, 1, -1, 0) + bytes(16))
    with pytest.raises(ClusterError, match="invalid TERM recordingId=2, expected recordingId=1"):
        RecordingLog(tmp_path)


def test_ensure_coherent_fills_in_missing_terms(tmp_path):
    with RecordingLog(tmp_path, create_new=True) as log:
        log.ensure_coherent(7, 0, 0, 2, 300, -1, 0, 5, 0)
        assert [(e.leadership_term_id, e.term_base_log_position, e.log_position) for e in log.entries] == \
            [(0, 0, 0), (1, 0, 300), (2, 300, -1)]
        log.ensure_coherent(7, 0, 0, 4, 500, 600, 0, 6, 1)
        assert [(e.leadership_term_id, e.term_base_log_position, e.log_position) for e in log.entries][2:] == \
            [(2, 300, 500), (3, 500, 500), (4, 500, 600)]
    with RecordingLog(tmp_path, create_new=True) as log:
        log.commit_log_position(4, -1)
        with pytest.raises(ClusterError, match="Prior term was not committed"):
            log.ensure_coherent(7, 0, 0, 5, -1, -1, 0, 6, 0)


def test_recovery_plan_of_the_golden_log_prints_as_javas(golden_dir):
    archive = FakeArchive(r0=(0, -1))                  # the log recording still active, as in the live run
    with RecordingLog(golden_dir) as log:
        plan = log.create_recovery_plan(archive, 1)
    assert str(plan) + "\n" == expected("live/clustertool-recovery-plan-1.txt")
    assert archive.asked == [0]
    assert (plan.last_leadership_term_id, plan.appended_log_position, plan.committed_log_position) == (0, -1, 736)
    assert [s.service_id for s in plan.snapshots] == [-1, 0]


def test_recovery_plans_without_snapshots_logs_or_services(golden_dir, tmp_path):
    with RecordingLog(golden_dir) as log:
        plan = log.create_recovery_plan(FakeArchive(r0=(0, 1000)), 0)
        assert [s.service_id for s in plan.snapshots] == [-1] and plan.appended_log_position == 1000
        with pytest.raises(ClusterError, match="snapshot missing for service at index 3"):
            log.create_recovery_plan(FakeArchive(r0=(0, 1000)), 3)
        with pytest.raises(ClusterError, match="unknown recording id: 0"):
            log.create_recovery_plan(FakeArchive(), 1)
    empty = tmp_path / "empty"
    empty.mkdir()
    with RecordingLog(empty, create_new=True) as log:
        plan = log.create_recovery_plan(FakeArchive(), 1)
        assert str(plan) == ("RecoveryPlan[lastLeadershipTermId=-1, lastTermBaseLogPosition=0, "
                             "appendedLogPosition=0, committedLogPosition=0, snapshots=[], log=null]")
        plan = log.create_recovery_plan(FakeArchive(r8=(64, 960)), 1, replicated_recording_id=8)
        assert (plan.log.recording_id, plan.log.start_position, plan.appended_log_position) == (8, 64, 960)
        log.append_term(3, 0, 0, 1)
        plan = log.create_recovery_plan(FakeArchive(r3=(0, 512)), 1)
        assert (plan.log.start_position, plan.committed_log_position, plan.snapshots) == (0, 0, [])


def test_find_snapshot_at_or_before_or_lowest(tmp_path):
    _two_terms_and_snapshots(tmp_path)
    with RecordingLog(tmp_path) as log:
        assert [s.recording_id for s in log.find_snapshot_at_or_before_or_lowest(450, 2)] == [11, 10, 9]
        assert [s.recording_id for s in log.find_snapshot_at_or_before_or_lowest(10_000, 2)] == [21, 20, 19]
        assert [s.recording_id for s in log.find_snapshot_at_or_before_or_lowest(0, 2)] == [11, 10, 9]
        assert log.find_snapshot_at_or_before_or_lowest(10_000, 5) is None


def test_write_entries_replaces_the_file_keeping_invalid_flags(tmp_path):
    _two_terms_and_snapshots(tmp_path)
    with RecordingLog(tmp_path) as log:
        log.invalidate_latest_snapshot()
        entries = log.entries
    write_entries(tmp_path, entries)
    with RecordingLog(tmp_path) as log:
        assert [e.entry_index for e in log.entries] == list(range(8))
        assert sum(not e.is_valid for e in log.entries) == 3
    write_entries(tmp_path, [])
    assert not (tmp_path / RECORDING_LOG_FILE_NAME).exists()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["put", "remove"]), st.integers(-5, 40), st.integers(0, 1000)),
                max_size=120))
def test_the_term_index_map_behaves_as_a_dict(ops):
    m, d = _Long2LongHashMap(), {}
    for op, key, value in ops:
        if op == "put":
            m.put(key, value)
            d[key] = value
        else:
            m.remove(key)
            d.pop(key, None)
    assert dict(m.items()) == d and len(list(m.items())) == len(d)
    assert all(m.get(k) == v for k, v in d.items()) and m.get(1000) == -1
