# SPDX-License-Identifier: Apache-2.0
"""Our samples (`python -m aeron.samples.*`) as separate processes on our driver: the output of the official C
samples, the messages delivered, the percentiles printed.

basic_publisher / basic_subscriber are compared exactly with the official C samples' stdout (copied to
tests/data/golden/samples/, see the README there), run with the golden run's arguments. The mask: session
ids (``sessionId=<n>``, ``from session <n>``) are random per run and become ``<session-id>``; nothing else is
masked. Two substitutions: the golden UDP run used the fixed ports 40601/40602, we use free ports; the golden
runs lingered 8 s and 4 s at the end, ours 200 ms (what follows the linger is the same). Ours are written into the
expected text.
"""
from __future__ import annotations

import re
import signal

import pytest

from aeron import Aeron, Context
from tests import procs
from tests.support import wait_for
from tests.conftest import PROJECT_ROOT
from tests.support import free_port

pytestmark = [pytest.mark.timeout(90), pytest.mark.driver_args("aeron.term.buffer.length=64k")]     # as the golden runs

GOLDEN_SAMPLES = PROJECT_ROOT / "tests" / "data" / "golden" / "samples"
# folder, subscriber channel, publisher channel, linger (ns): the golden runs' arguments (-s 1001 -m 5 for all)
GOLDEN_CASES = [
    ("ipc", "aeron:ipc", "aeron:ipc", 8_000_000_000),
    ("udp-unicast", "aeron:udp?endpoint=127.0.0.1:40601", "aeron:udp?endpoint=127.0.0.1:40601|interface=127.0.0.1:40602",
     4_000_000_000),
]
LINGER_NS = 200_000_000
SESSION_ID = re.compile(r"(sessionId=|from session )(-?\d+)")


def image_before_messages(text: str) -> str:
    """The subscriber's output with its "Available image" line ahead of the messages. The client conductor adds the
    image to the subscription and then calls the handler that prints the line, while the main thread polls: the
    first message may print in between, in the C sample as in ours (the golden run happened to print the line
    first). Every line is still compared; only that one's place is normalised."""
    lines = text.splitlines(keepends=True)
    available = next((i for i, line in enumerate(lines) if line.startswith("Available image")), None)
    first_message = next((i for i, line in enumerate(lines) if line.startswith("Message to stream")), None)
    if available is not None and first_message is not None and available > first_message:
        lines.insert(first_message, lines.pop(available))
    return "".join(lines)


def mask(text: str) -> tuple[str, set[str]]:
    """The output with its session ids replaced by ``<session-id>``, and the set of ids replaced."""
    return SESSION_ID.sub(r"\1<session-id>", text), {m.group(2) for m in SESSION_ID.finditer(text)}


@pytest.mark.parametrize("case", GOLDEN_CASES, ids=[c[0] for c in GOLDEN_CASES])
def test_basic_samples_print_the_official_output(driver_dir, case):
    folder, sub_channel, pub_channel, golden_linger_ns = case
    ports = {40601: free_port(), 40602: free_port()}    # ours for the golden run's fixed ports

    def ours(text: str) -> str:
        for golden_port, port in ports.items():
            text = text.replace(f"127.0.0.1:{golden_port}", f"127.0.0.1:{port}")
        return text.replace(f"Lingering for {golden_linger_ns} nanoseconds", f"Lingering for {LINGER_NS} nanoseconds")

    sub_channel, pub_channel = ours(sub_channel), ours(pub_channel)
    subscriber = procs.popen(procs.sample("basic_subscriber", "-p", driver_dir, "-c", sub_channel, "-s", "1001"))
    try:
        lines = procs.wait_for_line(subscriber, "Subscription channel status", timeout=20)
        with Aeron.connect(Context(driver_dir)) as client:
            anchor = None
            if pub_channel.startswith("aeron:udp"):
                # The sample offers right after adding its publication; a UDP one is connected after a SETUP /
                # status message round trip through our driver, a race the golden run won and a loaded machine
                # may lose ("not connected" for message 0). So the test holds the same publication, connected,
                # before the sample adds it: the sample shares it (same session, same log) and its output is
                # unchanged; the image goes when the test lets go of it after the sample has exited.
                anchor = client.add_publication(pub_channel, 1001)
                wait_for(lambda: anchor.is_connected)
            publisher = procs.run(procs.sample("basic_publisher", "-p", driver_dir, "-c", pub_channel, "-s", "1001",
                                               "-m", "5", "-l", f"{LINGER_NS}ns"), timeout=60)
            if anchor is not None:
                anchor.close()
        assert publisher.returncode == 0, publisher.stderr
        lines += procs.wait_for_line(subscriber, "Unavailable image", timeout=30)
    finally:
        out, err = procs.stop(subscriber, signal.SIGINT)
    golden = GOLDEN_SAMPLES / folder
    assert publisher.stdout == ours((golden / "basic_publisher.out.txt").read_text())
    got, sessions = mask(image_before_messages("".join(lines) + out))
    expected, _ = mask(ours((golden / "basic_subscriber.out.txt").read_text()))
    assert got == expected, err
    assert len(sessions) == 1                          # one publisher: the same session id on every line


def test_basic_publisher_without_subscriber_reports_not_connected(driver_dir):
    publisher = procs.run(procs.sample("basic_publisher", "-p", driver_dir, "-c", "aeron:ipc", "-m", "1"))
    assert publisher.returncode == 0, publisher.stderr
    assert "offering 0/1 - Offer failed because publisher is not connected to a subscriber" in publisher.stdout
    assert "No active subscribers detected" in publisher.stdout


def test_fill_mtu_message_fills_one_frame(driver_dir):
    subscriber = procs.popen(procs.sample("basic_subscriber", "-p", driver_dir, "-c", "aeron:ipc"))
    try:
        procs.wait_for_line(subscriber, "Subscription channel status 18446744073709551615", timeout=20)
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
    for line in ("Subscription channel status 18446744073709551615", "Publication channel status 18446744073709551615"):
        assert line in ping.stdout.splitlines(), ping.stdout     # the image line may come between them
    rows = re.findall(r"^\s+(\d+\.\d+)\s+(0\.\d+|1\.0+)\s+(\d+)$", ping.stdout, re.M)
    assert [r[1] for r in rows] == ["0.500000", "0.900000", "0.990000", "0.999000", "0.999900", "1.000000"]
    values = [float(r[0]) for r in rows]
    assert values == sorted(values) and values[0] > 0
    assert "#[Total count    =         2000]" in ping.stdout
    assert "Shutting down..." in pong_out, pong_out + pong_err


def test_streaming_publisher_to_rate_subscriber(driver_dir):
    subscriber = procs.popen(procs.sample("rate_subscriber", "-p", driver_dir, "-c", "aeron:ipc"))
    try:
        procs.wait_for_line(subscriber, "Subscription channel status 18446744073709551615", timeout=20)
        publisher = procs.run(procs.sample("streaming_publisher", "-p", driver_dir, "-c", "aeron:ipc", "-m",
                                           "20000", "-L", "64"), timeout=60)    # 30 turns of the 64 KiB terms
        assert publisher.returncode == 0, publisher.stderr
        assert publisher.stdout.startswith(
            "Streaming 20000 messages of payload length 64 bytes to aeron:ipc on stream id 1001\n"
            "Publication channel status -1\n"), publisher.stdout     # PRId64 in this C sample
        assert re.search(r"Total: \d+ms, [\d.e+]+ msgs/sec, [\d.e+]+ bytes/sec, totals 20000 messages 1 MB "
                         r"payloads", publisher.stdout), publisher.stdout
        lines = procs.wait_for_line(subscriber, "totals 20000 messages", timeout=20)
    finally:
        procs.stop(subscriber)
    assert re.search(r"^\d+ms, [\d.e+]+ msgs/sec, [\d.e+]+ bytes/sec, totals 20000 messages 1 MB payloads$",
                     lines[-1].rstrip(), re.M), lines


def test_bad_arguments_exit_with_usage():
    result = procs.run(procs.sample("basic_publisher", "-m", "lots"))
    assert result.returncode == 2 and "-m" in result.stderr

