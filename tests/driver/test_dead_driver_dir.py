# SPDX-License-Identifier: Apache-2.0
"""A directory left by a dead driver (its pid gone from this host, its heartbeat stopped) does not block a new
driver: ``is_driver_active`` answers False at once instead of waiting out, or trusting, the driver timeout. A
driver whose pid is not visible but whose heartbeat still moves (another pid namespace) stays active."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from aeron._core.cnc import CncFile
from aeron._core.ring_buffer import ManyToOneRingBuffer
from aeron.common.cnc_attach import DEAD_DRIVER_HEARTBEAT_MS, is_driver_dead, read_cnc_pid
from aeron.driver import Context, MediaDriver, is_driver_active
from tests import procs

MIB = 1024 * 1024
LONG_TIMEOUT_MS = 60_000       # a check that waited this long would have failed by the pytest timeout


def dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def write_cnc(aeron_dir, pid: int, heartbeat_ms: int | None, ready: bool = True) -> None:
    os.makedirs(aeron_dir, exist_ok=True)
    cnc = CncFile.create(os.path.join(aeron_dir, "cnc.dat"), to_driver_buffer_length=1024 + 768,
                         to_clients_buffer_length=1024 + 128, counters_metadata_buffer_length=4096,
                         counters_values_buffer_length=1024, error_log_buffer_length=1024,
                         client_liveness_timeout_ns=10**10, start_timestamp_ms=0, pid=pid, signal_ready=False)
    section = cnc.to_driver_buffer()
    ring = ManyToOneRingBuffer(section)
    if heartbeat_ms is not None:
        ring.consumer_heartbeat_time = heartbeat_ms
    ring.close()
    section.close()
    if ready:
        cnc.signal_cnc_ready()
    cnc.close()


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def test_dead_pid_and_a_heartbeat_younger_than_the_timeout_is_not_active(shm_dir):
    # before: active for the whole 10 s driver timeout, so a new driver was refused
    write_cnc(shm_dir, dead_pid(), now_ms() - 3000)
    assert not is_driver_active(str(shm_dir), 10_000)


def test_live_pid_and_the_same_heartbeat_is_active(shm_dir):
    write_cnc(shm_dir, os.getpid(), now_ms() - 3000)
    assert is_driver_active(str(shm_dir), 10_000)


def test_unknown_pid_keeps_the_heartbeat_rule(shm_dir):
    write_cnc(shm_dir, 0, now_ms() - 3000)
    assert is_driver_active(str(shm_dir), 10_000)


def test_a_driver_that_died_creating_the_file_does_not_hold_the_timeout(shm_dir):
    # version still 0: before, the check waited the whole driver timeout for it
    write_cnc(shm_dir, dead_pid(), None, ready=False)
    assert read_cnc_pid(str(shm_dir / "cnc.dat")) > 0
    done = threading.Event()
    answer = []

    def check() -> None:
        answer.append(is_driver_active(str(shm_dir), LONG_TIMEOUT_MS))
        done.set()

    threading.Thread(target=check, daemon=True).start()
    assert done.wait(20), "is_driver_active waited for the version of a dead creator"
    assert answer == [False]


def test_pid_not_visible_but_heartbeat_moving_is_active(shm_dir):
    """A driver in another pid namespace sharing the directory: its pid means nothing here, its heartbeat moves."""
    write_cnc(shm_dir, dead_pid(), now_ms())
    cnc = CncFile.map_existing(str(shm_dir / "cnc.dat"))
    section = cnc.to_driver_buffer()
    ring = ManyToOneRingBuffer(section)
    stop = threading.Event()

    def heartbeat() -> None:
        while not stop.wait(0.05):
            ring.consumer_heartbeat_time = now_ms()

    beat = threading.Thread(target=heartbeat)
    beat.start()
    try:
        assert is_driver_active(str(shm_dir), 10_000)
    finally:
        stop.set()
        beat.join()
        ring.close()
        section.close()
        cnc.close()


def test_is_driver_dead_waits_for_the_heartbeat_to_grow_stale():
    gone = dead_pid()
    clock = [1_000_000]
    heartbeat = clock[0]

    def tick() -> int:
        clock[0] += 100                     # each look at the clock moves it 100 ms on
        return clock[0]

    assert is_driver_dead(gone, lambda: heartbeat, tick)
    assert clock[0] - heartbeat > DEAD_DRIVER_HEARTBEAT_MS
    assert not is_driver_dead(os.getpid(), lambda: heartbeat, tick)
    beats = iter(range(1, 100))
    assert not is_driver_dead(gone, lambda: next(beats), tick)      # it moved: alive elsewhere


def test_new_driver_starts_at_once_on_the_dir_of_a_killed_driver(shm_dir):
    aeron_dir = str(shm_dir / "d")
    args = [f"aeron.dir={aeron_dir}", "aeron.threading.mode=SHARED", "aeron.ipc.term.buffer.length=64k",
            "aeron.counters.buffer.length=1m"]
    # procs.start_our_driver deletes on start and on shutdown; this driver must leave its directory behind
    proc = subprocess.Popen([sys.executable, "-m", "aeron.driver", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=procs.client_env())
    try:
        procs.wait_for_cnc(proc, aeron_dir, "our driver")
        deadline = time.monotonic() + 20
        while not is_driver_active(aeron_dir, 10_000):
            assert time.monotonic() < deadline, "the driver never became active"
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=10)
    assert os.path.exists(os.path.join(aeron_dir, "cnc.dat"))
    # its heartbeat is fresh (under the 10 s timeout) but its process is gone: before, ActiveDriverError
    ctx = Context(environ={}, aeron_dir=aeron_dir, threading_mode="SHARED", counters_buffer_length=MIB,
                  ipc_term_buffer_length=65536, driver_timeout_ms=10_000)
    with MediaDriver.launch(ctx) as driver:
        assert is_driver_active(driver.aeron_dir, 10_000)
        assert read_cnc_pid(os.path.join(driver.aeron_dir, "cnc.dat")) == os.getpid()


@pytest.mark.parametrize("heartbeat_age_ms", [0, 500])
def test_a_fresh_heartbeat_of_a_dead_pid_is_trusted_for_at_most_the_dead_driver_period(shm_dir, heartbeat_age_ms):
    write_cnc(shm_dir, dead_pid(), now_ms() - heartbeat_age_ms)
    assert not is_driver_active(str(shm_dir), LONG_TIMEOUT_MS)
