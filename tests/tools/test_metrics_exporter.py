# SPDX-License-Identifier: Apache-2.0
"""The Prometheus exporter serves a running driver's counters, read from cnc.dat at each scrape: system counters,
per-stream positions and limits that move as messages flow, the error log's size, and driver_up 0 without a
driver. Scraped over HTTP on 127.0.0.1 with urllib."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from aeron import Aeron, Context, MediaDriver
from aeron._core import counters as ctr
from aeron.driver import Context as DriverContext
from aeron.common.errors import InvalidChannelError
from aeron.tools.metrics_exporter import start_exporter
from tests import procs
from tests.support import wait_for
from tests.tools.metrics_helpers import Scrape

STREAM_ID = 1077
MESSAGE = bytes(100)
FRAME = 160                      # 32-byte header + 100 bytes, aligned to 32


@pytest.fixture
def driver():
    ctx = DriverContext(environ={}, threading_mode="SHARED", ipc_term_buffer_length=65536,
                        counters_buffer_length=1024 * 1024, timer_interval_ns=50_000_000)
    with MediaDriver.launch_embedded(ctx) as d:
        yield d


@pytest.fixture
def exporter(driver):
    server, thread = start_exporter(driver.aeron_dir, 0, "127.0.0.1")
    try:
        yield server.server_port
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def send_and_receive(pub, sub, count: int) -> None:
    for _ in range(count):
        while pub.offer(MESSAGE) < 0:
            pass
    received = 0
    deadline = time.monotonic() + 10
    while received < count:
        received += sub.poll(lambda *args: None, count - received)
        assert time.monotonic() < deadline


def test_scrape_serves_system_counters_and_stream_positions_that_move(driver, exporter):
    with Aeron.connect(Context(driver.aeron_dir)) as client:
        sub = client.add_subscription("aeron:ipc", STREAM_ID)
        pub = client.add_publication("aeron:ipc", STREAM_ID)
        first = Scrape(exporter)
        assert first.value("aeron_driver_up", aeron_dir=driver.aeron_dir) == 1
        assert first.value("aeron_driver_info", pid=str(os.getpid()), cnc_version="0.2.0") == 1
        assert 0 <= first.value("aeron_driver_heartbeat_age_seconds") < 10
        system = {s.labels["id"]: s for s in first.all("aeron_system_counter")}
        assert set(system) == {str(i) for i in range(ctr.SYSTEM_COUNTER_COUNT)}
        assert (system["0"].labels["name"], system["0"].labels["label"]) == ("bytes_sent", "Bytes sent")
        assert system["43"].labels["name"] == "control_protocol_version" and system["43"].value == 65536
        assert first.value("aeron_clients") == 1
        stream = dict(stream_id=str(STREAM_ID), session_id=str(pub.session_id), channel="aeron:ipc")
        assert first.value("aeron_stream_position", type="pub-pos", **stream) == 0
        assert first.value("aeron_stream_position", type="sub-pos", registration_id=str(sub.registration_id),
                           **stream) == 0
        assert first.value("aeron_stream_position", type="pub-lmt", **stream) > 0

        send_and_receive(pub, sub, 10)
        # pub-pos is the driver's sample of the publisher position: it follows on the driver's duty cycle
        later = wait_for(lambda: (s := Scrape(exporter)).value("aeron_stream_position", type="pub-pos", **stream)
                         == 10 * FRAME and s, what="pub-pos at 10 frames", interval_s=0.02)
        assert later.value("aeron_stream_position", type="sub-pos", registration_id=str(sub.registration_id),
                           **stream) == 10 * FRAME
        send_and_receive(pub, sub, 5)
        last = wait_for(lambda: (s := Scrape(exporter)).value("aeron_stream_position", type="sub-pos",
                                                              registration_id=str(sub.registration_id),
                                                              **stream) == 15 * FRAME and s,
                        what="sub-pos at 15 frames", interval_s=0.02)
        assert last.value("aeron_stream_position", type="pub-pos", **stream) in (10 * FRAME, 15 * FRAME)
        # every counter appears once: heartbeat and the rest by label
        labels = [s.labels["label"] for s in last.all("aeron_counter")]
        assert any(label.startswith("client-heartbeat: id=") for label in labels)


def test_error_log_count_follows_the_driver_error_log(driver, exporter):
    assert Scrape(exporter).value("aeron_error_log_distinct_errors") == 0
    assert Scrape(exporter).all("aeron_error_log_last_observation_timestamp_seconds") == []
    with Aeron.connect(Context(driver.aeron_dir)) as client:
        for observations in (1, 2):
            with pytest.raises(InvalidChannelError):
                client.add_publication("aeron-spy:aeron:ipc", 1)        # refused by the driver: logged there
            scrape = Scrape(exporter)
            assert scrape.value("aeron_error_log_distinct_errors") == 1
            assert scrape.value("aeron_error_log_observations_total") == observations
            assert scrape.value("aeron_error_log_last_observation_timestamp_seconds") > 1e9


def test_without_a_driver_only_driver_up_zero_is_served(shm_dir):
    server, thread = start_exporter(str(shm_dir / "none"), 0, "127.0.0.1")
    try:
        scrape = Scrape(server.server_port)
        assert scrape.value("aeron_driver_up", aeron_dir=str(shm_dir / "none")) == 0
        assert {s.name for s in scrape.samples} == {"aeron_driver_up"}
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("how", ["--dir", "AERON_DIR"])
def test_command_line_serves_until_sigterm(driver, how):
    port = free_port()
    env = procs.client_env()
    args = [sys.executable, "-m", "aeron.tools.metrics_exporter", "--port", str(port)]
    if how == "--dir":
        args += ["--dir", driver.aeron_dir]
    else:
        env["AERON_DIR"] = driver.aeron_dir
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stdout.readline()
        assert f"in {driver.aeron_dir} on http://127.0.0.1:{port}/metrics" in line, line + proc.stderr.read()
        scrape = Scrape(port)
        assert scrape.value("aeron_driver_up", aeron_dir=driver.aeron_dir) == 1
        assert scrape.value("aeron_system_counter", name="bytes_sent") >= 0
    finally:
        procs.stop(proc, signal.SIGTERM)
    assert proc.returncode == 0


def test_a_port_it_cannot_listen_on_is_one_line_and_status_1():
    proc = subprocess.run([sys.executable, "-m", "aeron.tools.metrics_exporter", "--port", "-1"],
                          capture_output=True, text=True, timeout=30, env=procs.client_env())
    assert proc.returncode == 1 and proc.stderr.startswith("metrics_exporter: cannot listen on 127.0.0.1:-1")


# what the console script does (import the module, call main), with prometheus-client not importable
WITHOUT_EXTRA = """
import sys
sys.modules["prometheus_client"] = None
sys.argv[0] = "/opt/venv/bin/aeron-metrics-exporter"
from aeron.tools.metrics_exporter import main
sys.exit(main(sys.argv[1:]))
"""


def test_without_the_metrics_extra_the_command_says_which_to_install_in_one_line():
    proc = subprocess.run([sys.executable, "-c", WITHOUT_EXTRA, "--port", "0"], capture_output=True, text=True,
                          timeout=30, env=procs.client_env())
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr == ("aeron-metrics-exporter: needs the metrics extra (prometheus-client): "
                           "pip install 'aeron-py[metrics]'\n")
    helped = subprocess.run([sys.executable, "-c", WITHOUT_EXTRA, "--help"], capture_output=True, text=True,
                            timeout=30, env=procs.client_env())
    assert helped.returncode == 0 and helped.stdout.startswith("usage: aeron-metrics-exporter")


def test_without_the_metrics_extra_the_exporter_is_a_module_not_found_error_saying_which():
    script = WITHOUT_EXTRA.replace("sys.exit(main(sys.argv[1:]))", "from aeron.tools.metrics_exporter import "
                                   "start_exporter\nstart_exporter(None, 0)")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30,
                          env=procs.client_env())
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[-1] == ("ModuleNotFoundError: the Prometheus exporter needs the metrics extra "
                                            "(prometheus-client): pip install 'aeron-py[metrics]'")
