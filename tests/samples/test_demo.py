# SPDX-License-Identifier: Apache-2.0
"""The README's main command: the demo on an embedded driver delivers every message in order and prints
throughput and round-trip percentiles."""
import re
import subprocess
import sys
import time

import pytest

from aeron import Aeron, Context, MediaDriver
from aeron.driver import Context as DriverContext
from aeron.samples import demo
from tests import procs


@pytest.mark.timeout(90)
def test_demo_delivers_every_message_in_order_and_measures_round_trips():
    # a 64 KiB term with 8,000 96-byte frames forces a dozen rotations, cleanings and many limit updates
    proc = subprocess.run(
        [sys.executable, "-m", "aeron.samples.demo", "--messages", "8000", "--size", "64", "--pings", "500",
         "--term-length", "65536", "--timeout", "60"],
        capture_output=True, text=True, timeout=80, env=procs.client_env())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "received 8000 messages, 0 out of order" in proc.stdout
    assert re.search(r"publisher\s+[\d,]+ msgs/s", proc.stdout)
    assert "latency: 500 round trips" in proc.stdout
    assert re.search(r"p50 [\d.]+ µs  p90 [\d.]+ µs  p99 [\d.]+ µs  p99\.9 [\d.]+ µs", proc.stdout), proc.stdout
    assert proc.stdout.rstrip().endswith("demo: OK")


@pytest.mark.parametrize("args,message", [
    (["--size", "8"], "--size must be at least 16"),
    (["--term-length", "1000"], "--term-length"),
    (["--messages", "0"], "--messages and --pings must be at least 1"),
])
def test_demo_rejects_bad_arguments(args, message, capsys):
    with pytest.raises(SystemExit) as exit_:         # argparse's error: status 2, the usage and the message
        demo.main(args)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_demo_progress_reads_the_stream_counters(capsys):
    """The once-a-second progress line: counts derived from the driver's pub-pos and sub-pos of the stream."""
    ctx = DriverContext(environ={}, threading_mode="SHARED", ipc_term_buffer_length=65536)
    with MediaDriver.launch_embedded(ctx) as driver, Aeron.connect(Context(driver.aeron_dir)) as client:
        sub = client.add_subscription("aeron:ipc", demo.STREAM_ID)
        pub = client.add_publication("aeron:ipc", demo.STREAM_ID)
        progress = demo._Progress(client.counters_reader, interval_s=0.0)
        progress.phase(lambda: progress.streaming(10, 40))
        progress.tick()
        for i in range(10):
            while pub.offer(bytes(40)) < 0:
                pass
        received = 0
        while received < 4:
            received += sub.poll(lambda *args: None, 4 - received)
        deadline = time.monotonic() + 10        # the driver updates pub-pos on its duty cycle
        while demo._stream_positions(client.counters_reader, demo.STREAM_ID).get("pub-pos", 0) < 10 * 96:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        progress.tick()
        progress.phase(lambda: progress.round_trips(5, 40))
        progress.tick()
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("s  sent 0 / received 0 of 10 messages"), lines
    assert lines[1].endswith("s  sent 10 / received 4 of 10 messages"), lines
    assert lines[2].endswith("s  0 of 5 round trips"), lines
