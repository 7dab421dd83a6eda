# SPDX-License-Identifier: Apache-2.0
"""Our samples (`python -m aeron.samples.*`) as separate processes on our driver over IPC: the output lines of
the official C samples, the messages delivered, the percentiles printed."""
from __future__ import annotations

import re
import signal

import pytest

from tests import procs

pytestmark = pytest.mark.timeout(90)


@pytest.fixture
def driver_dir(shm_dir):
    aeron_dir = str(shm_dir / "driver")
    driver = procs.start_our_driver(aeron_dir)
    try:
        yield aeron_dir
    finally:
        procs.stop(driver)


def test_basic_publisher_to_basic_subscriber(driver_dir):
    subscriber = procs.popen(procs.sample("basic_subscriber", "-p", driver_dir, "-c", "aeron:ipc", "-s", "77"))
    try:
        procs.wait_for_line(subscriber, "Subscription channel status 1", timeout=20)
        publisher = procs.run(procs.sample("basic_publisher", "-p", driver_dir, "-c", "aeron:ipc", "-s", "77",
                                           "-m", "3"), timeout=30)
        assert publisher.returncode == 0, publisher.stderr
        assert publisher.stdout.splitlines() == [
            "Publishing to channel aeron:ipc on Stream ID 77", "Publication channel status 1",
            "offering 0/3 - yay!", "offering 1/3 - yay!", "offering 2/3 - yay!", "Done sending."]
        lines = procs.wait_for_line(subscriber, "Unavailable image on aeron:ipc streamId=77", timeout=20)
    finally:
        out, err = procs.stop(subscriber, signal.SIGINT)
    text = "".join(lines) + out
    assert re.findall(r"Message to stream 77 from session -?\d+ \((\d+) bytes\) <<(Hello World! \d)>>", text) == [
        ("14", "Hello World! 0"), ("14", "Hello World! 1"), ("14", "Hello World! 2")], text + err
    assert re.search(r"Available image on aeron:ipc streamId=77 sessionId=-?\d+ mtu=1408 term-length=65536 "
                     r"from aeron:ipc", text), text
    assert text.rstrip().endswith("Shutting down..."), text


def test_basic_publisher_without_subscriber_reports_not_connected(driver_dir):
    publisher = procs.run(procs.sample("basic_publisher", "-p", driver_dir, "-c", "aeron:ipc", "-m", "1"))
    assert publisher.returncode == 0, publisher.stderr
    assert "offering 0/1 - Offer failed because publisher is not connected to a subscriber" in publisher.stdout
    assert "No active subscribers detected" in publisher.stdout


def test_fill_mtu_message_fills_one_frame(driver_dir):
    subscriber = procs.popen(procs.sample("basic_subscriber", "-p", driver_dir, "-c", "aeron:ipc"))
    try:
        procs.wait_for_line(subscriber, "Subscription channel status 1", timeout=20)
        publisher = procs.run(procs.sample("basic_publisher", "-p", driver_dir, "-c", "aeron:ipc", "-m", "1",
                                           "-f"), timeout=30)
        # max payload length: MTU 1408 - 32-byte header, as the C sample's -f
        assert "Using message of 1376 bytes" in publisher.stdout, publisher.stdout
        assert "offering 0/1 - yay!" in publisher.stdout, publisher.stdout
        lines = procs.wait_for_line(subscriber, "[  1] This is a line of text", timeout=20)
    finally:
        procs.stop(subscriber)
    assert "(1376 bytes) <<\n" in "".join(lines)       # the message starts with a newline, as in C


def test_ping_pong_prints_percentiles(driver_dir):
    pong = procs.popen(procs.sample("pong", "-p", driver_dir, "-c", "aeron:ipc", "-C", "aeron:ipc"))
    try:
        ping = procs.run(procs.sample("ping", "-p", driver_dir, "-c", "aeron:ipc", "-C", "aeron:ipc", "-m", "2000",
                                      "-w", "200"), timeout=60)
    finally:
        pong_out, pong_err = procs.stop(pong)
    assert ping.returncode == 0, ping.stdout + ping.stderr
    assert "Warming up the media driver with 200 messages of length 32 bytes" in ping.stdout
    rows = re.findall(r"^\s+(\d+\.\d+)\s+(0\.\d+|1\.0+)\s+(\d+)$", ping.stdout, re.M)
    assert [r[1] for r in rows] == ["0.500000", "0.900000", "0.990000", "0.999000", "0.999900", "1.000000"]
    values = [float(r[0]) for r in rows]
    assert values == sorted(values) and values[0] > 0
    assert "#[Total count    =         2000]" in ping.stdout
    assert "Shutting down..." in pong_out, pong_out + pong_err


def test_streaming_publisher_to_rate_subscriber(driver_dir):
    subscriber = procs.popen(procs.sample("rate_subscriber", "-p", driver_dir, "-c", "aeron:ipc"))
    try:
        procs.wait_for_line(subscriber, "Subscription channel status 1", timeout=20)
        publisher = procs.run(procs.sample("streaming_publisher", "-p", driver_dir, "-c", "aeron:ipc", "-m",
                                           "200000", "-L", "64"), timeout=60)
        assert publisher.returncode == 0, publisher.stderr
        assert "Streaming 200000 messages of payload length 64 bytes to aeron:ipc on stream id 1001" in publisher.stdout
        assert re.search(r"Total: \d+ms, [\d.e+]+ msgs/sec, [\d.e+]+ bytes/sec, totals 200000 messages 12 MB "
                         r"payloads", publisher.stdout), publisher.stdout
        lines = procs.wait_for_line(subscriber, "totals 200000 messages", timeout=20)
    finally:
        procs.stop(subscriber)
    assert re.search(r"^\d+ms, [\d.e+]+ msgs/sec, [\d.e+]+ bytes/sec, totals 200000 messages 12 MB payloads$",
                     lines[-1].rstrip(), re.M), lines


def test_bad_arguments_exit_with_usage():
    result = procs.run(procs.sample("basic_publisher", "-m", "lots"))
    assert result.returncode == 2 and "-m" in result.stderr

