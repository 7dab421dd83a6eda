# SPDX-License-Identifier: Apache-2.0
"""Our AeronStat reads the official C driver's live cnc.dat: same counters and labels as the official
AeronStat sees, the driver's pid, a fresh heartbeat."""
import os
import re
import signal
import subprocess
import time

import pytest

from aeron.tools import error_stat, stat

pytestmark = pytest.mark.interop


@pytest.fixture
def aeronmd(official, shm_dir):
    aeron_dir = shm_dir / "aeronmd"
    env = {**os.environ, "AERON_DIR": str(aeron_dir), "AERON_DIR_DELETE_ON_START": "1",
           "AERON_DIR_DELETE_ON_SHUTDOWN": "1", "AERON_THREADING_MODE": "SHARED",
           "AERON_SHARED_IDLE_STRATEGY": "backoff", "AERON_TERM_BUFFER_LENGTH": "65536",
           "AERON_IPC_TERM_BUFFER_LENGTH": "65536"}
    proc = subprocess.Popen([official("aeronmd")], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                if stat.read_stat(str(aeron_dir), timeout_ms=50).heartbeat_age_ms < 5000:
                    break
            except Exception:
                time.sleep(0.05)
        else:
            pytest.fail("aeronmd did not start: " + proc.stderr.read1().decode(errors="replace"))
        yield aeron_dir, proc
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        proc.stderr.close()


def test_our_stat_reads_aeronmd(aeronmd, official):
    aeron_dir, proc = aeronmd
    ours = stat.read_stat(str(aeron_dir))
    out = subprocess.run([official("AeronStat"), "-d", str(aeron_dir), "-w", "false"], capture_output=True,
                         text=True, timeout=20).stdout.splitlines()
    assert ours.pid == proc.pid and ours.cnc_version == "0.2.0"
    assert 0 <= ours.heartbeat_age_ms < 5000
    theirs = [re.match(r"\s*(\d+):\s+[\d,]+ - (.*)$", line).groups() for line in out[2:]]
    assert [(str(c.counter_id), c.label) for c in ours.counters] == theirs
    assert len(ours.counters) >= 40                       # the system counters at least
    assert error_stat.read_errors(str(aeron_dir)) == []   # a fresh driver has logged nothing
