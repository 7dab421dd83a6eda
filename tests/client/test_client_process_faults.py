# SPDX-License-Identifier: Apache-2.0
"""Faults across processes: a publisher killed while it holds a claim, a client killed outright, the driver
killed or stopped under a client. Every wait is bounded; processes are killed in finally blocks."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from aeron import Aeron, Context, MediaDriver
from aeron._core import counters as ctr
from aeron.driver import Context as DriverContext
from aeron.errors import DriverTimeoutError
from tests import procs

pytestmark = pytest.mark.timeout(60)

CLIENT_SCRIPT = textwrap.dedent("""
    import sys, time
    from aeron import Aeron, Context
    client = Aeron.connect(Context(sys.argv[1]))
    pub = client.add_publication("aeron:ipc", 21)
    sub = client.add_subscription("aeron:ipc", 22)
    counter = client.add_counter(1001, "doomed")
    while not pub.is_connected:
        time.sleep(0.001)
    if sys.argv[2] == "claim":
        claim = pub.try_claim(64)
        assert claim, claim.position
        claim.buffer[:4] = b"dead"          # never committed
    print("ready", pub.session_id, counter.counter_id, flush=True)
    time.sleep(120)
""")


def wait_for(predicate, timeout_s=10.0):
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.005)


@pytest.fixture
def driver():
    ctx = DriverContext(threading_mode="SHARED", ipc_term_buffer_length=65536, timer_interval_ns=50_000_000,
                        client_liveness_timeout_ns=1_000_000_000, publication_unblock_timeout_ns=1_500_000_000,
                        publication_linger_timeout_ns=100_000_000, environ={})
    with MediaDriver.launch_embedded(ctx) as d:
        yield d


def _client_process(aeron_dir, mode):
    proc = procs.popen([sys.executable, "-c", CLIENT_SCRIPT, aeron_dir, mode])
    line = procs.wait_for_line(proc, "ready", timeout=20)[-1].split()
    return proc, int(line[1]), int(line[2])


def test_publisher_killed_mid_claim_is_unblocked_and_the_stream_goes_on(driver):
    with Aeron.connect(Context(driver.aeron_dir, keepalive_interval_ns=100_000_000)) as client:
        sub = client.add_subscription("aeron:ipc", 21)
        proc, session_id, _ = _client_process(driver.aeron_dir, "claim")
        try:
            pub = client.add_publication("aeron:ipc", 21)        # shares the dead client's log
            assert pub.session_id == session_id
            assert pub.offer(b"after the claim") > 0
            proc.kill()                                             # kill -9 while the claim is open
            proc.wait(10)
            got = []
            start = time.monotonic()
            wait_for(lambda: sub.poll(lambda b, o, l, h: got.append(b.get_bytes(o, l)), 10) >= 0 and got)
            waited = time.monotonic() - start
        finally:
            procs.stop(proc, signal.SIGKILL)
        # the claimed frame became padding after the unblock timeout, the message behind it arrived
        assert got == [b"after the claim"]
        assert waited > 0.3
        assert client.counters_reader.get_counter_value(ctr.UNBLOCKED_PUBLICATIONS) == 1


def test_killed_client_is_timed_out_and_its_resources_released(driver):
    with Aeron.connect(Context(driver.aeron_dir, keepalive_interval_ns=100_000_000)) as client:
        gone = []
        sub = client.add_subscription("aeron:ipc", 21, unavailable_image_handler=lambda image: gone.append(image))
        proc, session_id, counter_id = _client_process(driver.aeron_dir, "plain")
        reader = client.counters_reader
        try:
            wait_for(lambda: sub.image_count == 1)
            assert reader.get_counter_state(counter_id) == ctr.RECORD_ALLOCATED
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
            wait_for(lambda: reader.get_counter_value(ctr.CLIENT_TIMEOUTS) == 1, timeout_s=10)
        finally:
            procs.stop(proc, signal.SIGKILL)
        wait_for(lambda: gone and gone[0].session_id == session_id)
        assert reader.get_counter_state(counter_id) != ctr.RECORD_ALLOCATED
        heartbeats = [c for c in reader.counters() if c.type_id == ctr.DRIVER_HEARTBEAT_TYPE_ID]
        assert [c.registration_id for c in heartbeats] == [client.client_id]


@pytest.mark.parametrize("how, message", [(signal.SIGKILL, "MediaDriver keepalive"),
                                          (signal.SIGTERM, "MediaDriver has been shutdown")])
def test_driver_gone_under_a_client_raises_driver_timeout(shm_dir, how, message):
    aeron_dir = str(shm_dir / "driver")
    driver = procs.start_our_driver(aeron_dir, "aeron.driver.timeout=1000")
    errors = []
    try:
        client = Aeron.connect(Context(aeron_dir, driver_timeout_ms=1000, keepalive_interval_ns=100_000_000,
                                       error_handler=errors.append))
        pub = client.add_publication("aeron:ipc", 5)
        driver.send_signal(how)
        driver.wait(10)
        start = time.monotonic()
        wait_for(lambda: errors, timeout_s=10)
        assert time.monotonic() - start < 5
        assert isinstance(errors[0], DriverTimeoutError) and message in str(errors[0])
        assert pub.offer(b"x") == pub.CLOSED
        start = time.monotonic()
        with pytest.raises(DriverTimeoutError):
            client.add_publication("aeron:ipc", 6)
        assert time.monotonic() - start < 1            # no hang: the client knows it is terminated
        client.close()
    finally:
        procs.stop(driver, signal.SIGKILL)
