# SPDX-License-Identifier: Apache-2.0
"""The official C AeronStat, ErrorStat and LossStat read files written by our core: cnc.dat (header,
to-driver ring heartbeat, counters, distinct error log) and loss-report.dat."""
import os
import re
import subprocess
import time

import pytest

from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.cnc import CncFile
from aeron._core.counters import (CountersManager, DRIVER_PUBLISHER_LIMIT_TYPE_ID, DRIVER_SYSTEM_COUNTER_TYPE_ID,
                                  stream_counter_key_encode)
from aeron._core.error_log import DistinctErrorLog
from aeron._core.loss_report import LossReport
from aeron._core.ring_buffer import ManyToOneRingBuffer
from tests._reference.official_outputs import ERROR_STAT_LINES, write_reference_errors

pytestmark = pytest.mark.interop
MIB = 1024 * 1024


def _make_cnc(aeron_dir):
    cnc = CncFile.create(os.path.join(aeron_dir, "cnc.dat"), to_driver_buffer_length=MIB + 768,
                         to_clients_buffer_length=MIB + 128, counters_metadata_buffer_length=4 * MIB,
                         counters_values_buffer_length=MIB, error_log_buffer_length=MIB,
                         client_liveness_timeout_ns=10_000_000_000, start_timestamp_ms=int(time.time() * 1000),
                         pid=os.getpid())
    ring = ManyToOneRingBuffer(cnc.to_driver_buffer())
    ring.consumer_heartbeat_time = int(time.time() * 1000)   # the tools check the driver is alive
    return cnc, ring


def _run(exe, *args):
    # TZ=UTC: the tools print local time, the expected lines are in UTC
    proc = subprocess.run([exe, *args], capture_output=True, text=True, timeout=20,
                          env={**os.environ, "TZ": "UTC"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_aeron_stat_reads_our_counters(shm_dir, official):
    cnc, ring = _make_cnc(shm_dir)
    manager = CountersManager(cnc.counters_metadata_buffer(), cnc.counters_values_buffer())
    sent = manager.allocate("Bytes sent", type_id=DRIVER_SYSTEM_COUNTER_TYPE_ID,
                            key=(0).to_bytes(4, "little"), registration_id=0, owner_id=-1)
    manager.set_counter_value(sent, 1_234_567)
    limit = manager.allocate("pub-lmt: 4 -1382497356 1001 aeron:ipc", type_id=DRIVER_PUBLISHER_LIMIT_TYPE_ID,
                             key=stream_counter_key_encode(4, -1382497356, 1001, "aeron:ipc"),
                             registration_id=4, owner_id=3)
    manager.set_counter_value(limit, 32768)
    out = _run(official("AeronStat"), "-d", str(shm_dir), "-w", "false")
    lines = out.splitlines()
    assert re.match(r".*Aeron Stat \(CnC v0\.2\.0\), pid %d, heartbeat age -?\d+ms" % os.getpid(), lines[0])
    assert lines[2:] == ["   0:                  1,234,567 - Bytes sent",
                         "   1:                     32,768 - pub-lmt: 4 -1382497356 1001 aeron:ipc"]
    del manager, ring
    cnc.close()


def test_error_stat_reads_our_distinct_error_log(shm_dir, official):
    cnc, ring = _make_cnc(shm_dir)
    log = write_reference_errors(lambda clock: DistinctErrorLog(cnc.error_log_buffer(), clock))
    out = _run(official("ErrorStat"), "-d", str(shm_dir))
    # ErrorStat prints the first and last observation (UTC), the count and "(code) text"
    assert out.splitlines() == ERROR_STAT_LINES
    del log, ring
    cnc.close()


def test_loss_stat_reads_our_loss_report(shm_dir, official):
    # LossStat needs a live cnc.dat beside loss-report.dat to find the directory
    cnc, ring = _make_cnc(shm_dir)
    report_buf = AtomicBuffer.map_file(os.path.join(shm_dir, "loss-report.dat"), MIB, create=True)
    report = LossReport(report_buf)
    offset = report.create_entry(64, 1_795_334_011_700, -976833086, 1001,
                                 "aeron:udp?endpoint=127.0.0.1:40611|cc=cubic", "127.0.0.1:40612")
    report.record_observation(offset, 32, 1_795_334_012_000)
    out = _run(official("LossStat"), "-d", str(shm_dir))
    lines = out.splitlines()
    assert lines[0].startswith("OBSERVATION_COUNT, TOTAL_BYTES_LOST")
    fields = lines[1].split(",")
    assert fields[0:2] == ["2", "96"]
    assert fields[4:] == ["-976833086", "1001", "aeron:udp?endpoint=127.0.0.1:40611|cc=cubic", "127.0.0.1:40612"]
    assert "1 entries read" in out
    del report, ring
    report_buf.close()
    cnc.close()
