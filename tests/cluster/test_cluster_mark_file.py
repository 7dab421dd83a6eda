# SPDX-License-Identifier: Apache-2.0
"""ClusterMarkFile: the layout Java writes and reads, the liveness rules of Agrona's MarkFile (an active file is
refused, a stale one or one whose owner died is taken over, its errors saved), tools refusing a failed start,
legacy files, link files, and the golden Java mark files."""
import os
import pathlib
import struct
import subprocess
import sys
import time

import pytest

from aeron._core.codecs.cluster_mark import ClusterComponentType
from aeron.cluster.service.cluster_mark_file import ClusterMarkFile, format_mark_file_header, header_offset_of
from aeron.common.errors import AeronTimeoutError, ClusterError, IllegalStateError, InvalidArgumentError
from aeron.common.mark_file import (
    ACTIVATION_IN_PROGRESS_TIMESTAMP,
    ActiveMarkFileError,
    ensure_mark_file_link,
    resolve_link,
)

CM = ClusterComponentType.CONSENSUS_MODULE


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _fill(mark: ClusterMarkFile, services_dir: str = "/services") -> None:
    enc = mark.encoder()
    enc.archive_stream_id, enc.service_stream_id, enc.consensus_module_stream_id = 10, 104, 105
    enc.ingress_stream_id, enc.member_id, enc.service_id, enc.cluster_id = 101, 2, -1, 7
    enc.put_aeron_directory("/dev/shm/driver").put_control_channel("aeron:ipc?term-length=128k")
    enc.put_ingress_channel("aeron:udp").put_service_name("").put_authenticator("auth")
    enc.put_services_cluster_dir(services_dir)


def _make(path: pathlib.Path, component=CM, **kwargs) -> ClusterMarkFile:
    mark = ClusterMarkFile.create(path, component, **kwargs)
    _fill(mark)
    return mark


def test_a_new_file_has_javas_layout_and_becomes_ready_last(tmp_path):
    path = tmp_path / ClusterMarkFile.FILENAME
    with _make(path, pid=4242) as mark:
        raw = path.read_bytes()
        assert len(raw) == 8192 + 1024 * 1024 == 1056768
        assert raw[:8] == struct.pack("<HHHH", 128, 200, 110, 2)
        assert struct.unpack_from("<i", raw, 8)[0] == 0                # not ready yet
        assert struct.unpack_from("<i", raw, 12)[0] == CM
        assert struct.unpack_from("<qq", raw, 32) == (4242, -1)         # pid, candidateTermId
        assert struct.unpack_from("<iii", raw, 72) == (8192, 1024 * 1024, 7)
        assert raw[136:140] == struct.pack("<i", len("/dev/shm/driver"))
        mark.signal_ready(1234)
        raw = path.read_bytes()
        assert struct.unpack_from("<iiq", raw, 8) == (768, CM, 1234)
        assert mark.activity_timestamp_volatile() == 1234 and mark.version_volatile() == 768
        mark.update_activity_timestamp(5678)
        assert struct.unpack_from("<q", path.read_bytes(), 16)[0] == 5678
        assert (mark.member_id(), mark.cluster_id(), mark.member_id(3), mark.cluster_id()) == (2, 7, 3, 7)
        props = mark.load_control_properties()
        assert (props.member_id, props.service_stream_id, props.consensus_module_stream_id,
                props.aeron_directory_name, props.control_channel) == (3, 104, 105, "/dev/shm/driver",
                                                                       "aeron:ipc?term-length=128k")
        mark.signal_terminated()
        assert struct.unpack_from("<q", path.read_bytes(), 16)[0] == -1


def test_file_length_is_rounded_to_the_page_and_bad_sizes_refused(tmp_path):
    with ClusterMarkFile.create(tmp_path / "a.dat", CM, error_buffer_length=1024 * 1024 + 1, file_page_size=8192):
        assert os.path.getsize(tmp_path / "a.dat") == 8192 + 1024 * 1024 + 8192
    with pytest.raises(InvalidArgumentError, match="errorBufferLength"):
        ClusterMarkFile.create(tmp_path / "b.dat", CM, error_buffer_length=4096)
    with pytest.raises(InvalidArgumentError, match="page size"):
        ClusterMarkFile.create(tmp_path / "c.dat", CM, file_page_size=3000)
    assert not (tmp_path / "b.dat").exists() and not (tmp_path / "c.dat").exists()


def test_a_live_owners_file_is_refused(tmp_path):
    path = tmp_path / ClusterMarkFile.FILENAME
    with _make(path) as mark:
        mark.signal_ready(_now_ms())                 # this process: alive, heartbeat fresh
        with pytest.raises(ActiveMarkFileError, match="active mark file detected"):
            ClusterMarkFile.create(path, CM)
        assert mark.version_volatile() == 768        # untouched


def test_a_stale_file_is_taken_over_with_its_errors_saved_and_cleared(tmp_path):
    path = tmp_path / ClusterMarkFile.FILENAME
    with _make(path) as mark:
        mark.signal_ready(_now_ms() - 60_000)
        mark.error_log.record(ValueError("the previous run failed"))
    lines = []
    with ClusterMarkFile.create(path, CM, log=lines.append) as mark:
        assert mark.activity_timestamp_volatile() == ACTIVATION_IN_PROGRESS_TIMESTAMP
        assert mark.error_records() == []
        assert mark.component_type == CM
    saved = sorted(tmp_path.glob("CONSENSUS_MODULE-*-error.log"))
    assert len(saved) == 1
    text = saved[0].read_text()
    assert "1 observations from" in text and "the previous run failed" in text
    assert text.endswith("\n1 distinct errors observed.\n")
    assert any(line.startswith("WARNING: existing errors saved to: ") for line in lines)


def test_a_dead_owners_fresh_file_is_taken_over_without_waiting_out_the_timeout(tmp_path):
    path = tmp_path / ClusterMarkFile.FILENAME
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                           check=True)
    dead_pid = int(child.stdout)
    with _make(path, pid=dead_pid) as mark:
        mark.signal_ready(_now_ms())                 # heartbeat fresh, owner gone
    started = time.monotonic()
    with ClusterMarkFile.create(path, CM, timeout_ms=60_000) as mark:
        assert mark.pid == os.getpid()
    assert time.monotonic() - started < 30           # far below the 60 s liveness timeout


def test_a_file_being_activated_is_refused(tmp_path):
    path = tmp_path / ClusterMarkFile.FILENAME
    with _make(path):
        pass
    with ClusterMarkFile.create(path, CM):           # leaves the timestamp at ACTIVATION_IN_PROGRESS
        with pytest.raises(ActiveMarkFileError):
            ClusterMarkFile.create(path, CM)


def test_the_type_of_an_existing_file_must_match_but_a_backup_may_become_a_consensus_module(tmp_path):
    path = tmp_path / "mark.dat"
    with _make(path, ClusterComponentType.CONTAINER):
        pass
    with pytest.raises(ClusterError, match="existing Mark file type CONTAINER not same as required type "
                                           "CONSENSUS_MODULE"):
        ClusterMarkFile.create(path, CM)
    backup = tmp_path / "backup.dat"
    with _make(backup, ClusterComponentType.BACKUP):
        pass
    with ClusterMarkFile.create(backup, CM) as mark:
        assert mark.component_type == CM


def test_a_failed_start_is_refused_by_tools_and_only_warned_about_on_restart(tmp_path):
    path = tmp_path / ClusterMarkFile.FILENAME
    with _make(path) as mark:
        mark.signal_failed_start()
    with pytest.raises(ClusterError, match="major version"):
        ClusterMarkFile.open(tmp_path)
    lines = []
    with ClusterMarkFile.create(path, CM, log=lines.append):
        pass
    assert "mark file version -1 indicates error on previous startup." in lines


def test_another_major_version_is_refused(tmp_path):
    path = tmp_path / ClusterMarkFile.FILENAME
    with _make(path) as mark:
        mark.signal_ready(_now_ms() - 60_000)
    raw = bytearray(path.read_bytes())
    raw[8:12] = struct.pack("<i", 1 << 16)
    path.write_bytes(raw)
    with pytest.raises(ClusterError, match="major version 1 does not match software: 0"):
        ClusterMarkFile.open(tmp_path)
    with pytest.raises(ClusterError, match="major version 1"):
        ClusterMarkFile.create(path, CM)


def test_tools_wait_for_a_file_and_time_out(tmp_path):
    started = time.monotonic()
    with pytest.raises(AeronTimeoutError, match="mark file not created"):
        ClusterMarkFile.open(tmp_path, timeout_ms=200)
    assert time.monotonic() - started >= 0.2
    with ClusterMarkFile.create(tmp_path / ClusterMarkFile.FILENAME, CM):
        with pytest.raises(AeronTimeoutError, match="not initialised"):
            ClusterMarkFile.open(tmp_path, timeout_ms=50)


def test_a_tool_reads_read_only_and_cannot_write(tmp_path):
    with _make(tmp_path / ClusterMarkFile.FILENAME) as mark:
        mark.signal_ready(99)
    with ClusterMarkFile.open(tmp_path) as mark:
        assert mark.activity_timestamp_volatile() == 99
        with pytest.raises(IllegalStateError):
            mark.encoder()
        with pytest.raises(IllegalStateError):
            mark.update_activity_timestamp(1)
    assert mark.activity_timestamp_volatile() == -1 and mark.is_closed


def test_golden_java_mark_files_open_and_format_as_javas_describe(golden_node):
    with ClusterMarkFile.open(golden_node / "cluster") as mark:
        assert (mark.pid, mark.activity_timestamp_volatile(), mark.component_type) == (24254, -1, CM)
        assert mark.error_records() == []
        decoder = mark.decoder()
        text = format_mark_file_header(decoder)
        decoder.release()
    assert text.startswith("[MarkFileHeader](sbeTemplateId=200|sbeSchemaId=110|sbeSchemaVersion=2|"
                           "sbeBlockLength=128):version=768|componentType=CONSENSUS_MODULE|activityTimestamp=-1|")
    assert text.endswith("|servicesClusterDir='/dev/shm/golden-cluster-work/node0/cluster'")
    name = ClusterMarkFile.mark_filename_for_service(0)
    with ClusterMarkFile.open(golden_node / "cluster", name) as service:
        assert service.component_type == ClusterComponentType.CONTAINER
        assert service.load_control_properties().member_id == 0


def test_a_golden_file_is_taken_over_in_place(golden_node):
    path = golden_node / "cluster" / ClusterMarkFile.FILENAME
    with ClusterMarkFile.create(path, CM) as mark:
        assert mark.candidate_term_id() == -1 and mark.pid == os.getpid()
        _fill(mark)
        mark.signal_ready(1)
    with ClusterMarkFile.open(golden_node / "cluster") as mark:
        assert mark.load_control_properties().aeron_directory_name == "/dev/shm/driver"


def test_a_legacy_file_without_message_header_is_read_and_rewritten_with_one(tmp_path):
    path = tmp_path / ClusterMarkFile.FILENAME
    with _make(path) as mark:
        mark.signal_ready(_now_ms() - 60_000)
    current = path.read_bytes()
    legacy = bytearray(len(current))
    legacy[0:8192 - 8] = current[8:8192]             # the header block at offset 0
    struct.pack_into("<q", legacy, 32, 17)           # a candidateTermId an older Aeron kept here
    struct.pack_into("<q", legacy, 16, _now_ms() - 60_000)   # an old run's start (the new layout's timestamp)
    path.write_bytes(legacy)
    assert header_offset_of(legacy) == 0
    with ClusterMarkFile.open(tmp_path) as mark:
        assert mark.pid == os.getpid() and mark.candidate_term_id() == 17
        decoder = mark.decoder()
        assert decoder.aeron_directory == "/dev/shm/driver"
        decoder.release()
    with ClusterMarkFile.create(path, CM) as mark:
        assert mark.candidate_term_id() == 17       # kept for NodeStateFile to take over
    raw = path.read_bytes()
    assert header_offset_of(raw) == 8 and struct.unpack_from("<q", raw, 40)[0] == 17


def test_link_files_name_the_mark_file_directory(tmp_path):
    cluster_dir, mark_dir = tmp_path / "cluster", tmp_path / "marks"
    cluster_dir.mkdir()
    mark_dir.mkdir()
    ensure_mark_file_link(cluster_dir, mark_dir / ClusterMarkFile.FILENAME, ClusterMarkFile.LINK_FILENAME)
    assert resolve_link(cluster_dir / ClusterMarkFile.LINK_FILENAME) == mark_dir.resolve()
    assert ClusterMarkFile.resolve_mark_file_dir(cluster_dir) == mark_dir.resolve()
    ensure_mark_file_link(cluster_dir, cluster_dir / ClusterMarkFile.FILENAME, ClusterMarkFile.LINK_FILENAME)
    assert not (cluster_dir / ClusterMarkFile.LINK_FILENAME).exists()
    assert ClusterMarkFile.resolve_mark_file_dir(cluster_dir) == cluster_dir


def test_names_and_header_capacity():
    assert ClusterMarkFile.mark_filename_for_service(3) == "cluster-mark-service-3.dat"
    assert ClusterMarkFile.link_filename_for_service(3) == "cluster-mark-service-3.lnk"
    assert ClusterMarkFile.is_service_mark_file("/x/cluster-mark-service-3.dat")
    assert not ClusterMarkFile.is_service_mark_file("cluster-mark.dat")
    assert ClusterMarkFile.is_consensus_module_mark_file("/x/cluster-mark.dat")
    ClusterMarkFile.check_header_length("d", "c", "i", "s", "a")
    with pytest.raises(ClusterError, match="headerLengthCapacity=8192"):
        ClusterMarkFile.check_header_length("d" * 8100, "c", "i", "s", "a")
