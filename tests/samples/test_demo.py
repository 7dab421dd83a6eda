# SPDX-License-Identifier: Apache-2.0
"""The README's main command: the demo on an embedded driver delivers every message in order and prints
throughput and round-trip percentiles."""
import re
import subprocess
import sys

import pytest

from tests import procs


@pytest.mark.timeout(90)
def test_demo_delivers_every_message_in_order_and_measures_round_trips():
    # a 64 KiB term with 20,000 96-byte frames forces many rotations, cleanings and limit updates
    proc = subprocess.run(
        [sys.executable, "-m", "aeron.samples.demo", "--messages", "20000", "--size", "64", "--pings", "2000",
         "--term-length", "65536", "--timeout", "60"],
        capture_output=True, text=True, timeout=80, env=procs.client_env())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "received 20000 messages, 0 out of order" in proc.stdout
    assert re.search(r"publisher\s+[\d,]+ msgs/s", proc.stdout)
    assert "latency: 2000 round trips" in proc.stdout
    assert re.search(r"p50 [\d.]+ µs  p90 [\d.]+ µs  p99 [\d.]+ µs  p99\.9 [\d.]+ µs", proc.stdout), proc.stdout
    assert proc.stdout.rstrip().endswith("demo: OK")


@pytest.mark.parametrize("args,message", [
    (["--size", "8"], "--size must be at least 16"),
    (["--term-length", "1000"], "--term-length"),
    (["--messages", "0"], "--messages and --pings must be at least 1"),
])
def test_demo_rejects_bad_arguments(args, message):
    proc = subprocess.run([sys.executable, "-m", "aeron.samples.demo", *args],
                          capture_output=True, text=True, timeout=30, env=procs.client_env())
    assert proc.returncode == 2
    assert message in proc.stderr
