# SPDX-License-Identifier: Apache-2.0
"""Our ErrorStat and LossStat print what the official tools print for the same files."""
import datetime
import gzip
import os
import time

import pytest

from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.cnc import CncFile
from aeron._core.error_log import DistinctErrorLog
from aeron.common.errors import DriverTimeoutError
from aeron.tools import error_stat, loss_stat
from tests._reference.official_outputs import ERROR_STAT_LINES, write_reference_errors

UTC = datetime.timezone.utc
MIB = 1024 * 1024


def _make_cnc(aeron_dir):
    return CncFile.create(os.path.join(aeron_dir, "cnc.dat"), to_driver_buffer_length=MIB + 768,
                          to_clients_buffer_length=MIB + 128, counters_metadata_buffer_length=4 * MIB,
                          counters_values_buffer_length=MIB, error_log_buffer_length=MIB,
                          client_liveness_timeout_ns=10_000_000_000, start_timestamp_ms=int(time.time() * 1000),
                          pid=os.getpid())


def test_error_stat_output_matches_official(shm_dir, capsys):
    cnc = _make_cnc(shm_dir)
    section = cnc.error_log_buffer()
    log = write_reference_errors(lambda clock: DistinctErrorLog(section, clock))
    records = error_stat.read_errors(str(shm_dir))
    assert [(r.observation_count, r.first_timestamp, r.last_timestamp) for r in records] == [
        (2, 1_795_334_955_512, 1_795_334_955_600), (1, 1_795_334_956_000, 1_795_334_956_000)]
    assert error_stat.main(["-d", str(shm_dir)], tz=UTC) == 0
    # the lines the official C ErrorStat printed for this very log (tests/interop checks it live)
    assert capsys.readouterr().out.splitlines() == ERROR_STAT_LINES
    del log
    section.close()
    cnc.close()


def test_error_stat_reads_a_saved_error_file(shm_dir):
    path = shm_dir / "saved-errors.dat"
    buf = AtomicBuffer.map_file(path, 4096 + 64, create=True)
    section = AtomicBuffer(buf, 64)
    DistinctErrorLog(section, lambda: 1_795_334_955_512).record("boom", error_code=11)
    section.close()
    buf.close()
    records = error_stat.read_errors_from_file(str(path), offset=64)
    assert [(r.observation_count, r.text) for r in records] == [(1, "(11) boom")]


def test_error_stat_without_driver_fails_cleanly(shm_dir, capsys):
    with pytest.raises(DriverTimeoutError):
        error_stat.read_errors(str(shm_dir), timeout_ms=20)
    assert error_stat.main(["-d", str(shm_dir), "-t", "20"]) == 1
    assert "CnC file not found" in capsys.readouterr().err


def test_loss_stat_reads_golden_loss_report_as_official(golden_dir, shm_dir, capsys):
    folder = golden_dir / "frames" / "unicast-loss-rttm"
    (shm_dir / "loss-report.dat").write_bytes(
        gzip.decompress((folder / "loss-report-subscriber-driver.dat.gz").read_bytes()))
    cnc = _make_cnc(shm_dir)
    entries = loss_stat.read_loss(str(shm_dir))
    assert [(e.observation_count, e.total_bytes_lost, e.session_id, e.stream_id) for e in entries] == [
        (1, 64, -976833086, 1001)]
    assert loss_stat.main(["-d", str(shm_dir)], tz=UTC) == 0
    assert capsys.readouterr().out == (folder / "lossstat-subscriber-driver.txt").read_text()
    cnc.close()


def test_loss_stat_without_report_fails_cleanly(shm_dir, capsys):
    cnc = _make_cnc(shm_dir)
    assert loss_stat.main(["-d", str(shm_dir)]) == 1
    assert "LossStat" in capsys.readouterr().err
    cnc.close()
