# SPDX-License-Identifier: Apache-2.0
"""Our samples and the official C samples, mixed, on both drivers over IPC: official publisher → our subscriber,
ours → theirs, cping ↔ our pong, our ping ↔ cpong, and all-ours on `aeronmd`. Needs AERON_C_BIN."""
from __future__ import annotations

import re
import signal

import pytest

from tests import procs

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]


@pytest.fixture(params=["ours", "aeronmd"])
def driver_dir(request, official, shm_dir):
    aeron_dir = str(shm_dir / request.param)
    if request.param == "ours":
        driver = procs.start_our_driver(aeron_dir)
    else:
        driver = procs.start_aeronmd(official("aeronmd"), aeron_dir)
    try:
        yield aeron_dir
    finally:
        procs.stop(driver)


def _subscriber(kind, official, aeron_dir):
    args = ("-p", aeron_dir, "-c", "aeron:ipc", "-s", "1001")
    if kind == "ours":
        return procs.popen(procs.sample("basic_subscriber", *args))
    return procs.popen(["stdbuf", "-oL", official("basic_subscriber"), *args])


def _publisher(kind, official, aeron_dir):
    args = ("-p", aeron_dir, "-c", "aeron:ipc", "-s", "1001", "-m", "3")
    return procs.run(procs.sample("basic_publisher", *args) if kind == "ours"
                     else [official("basic_publisher"), *args], timeout=40)


@pytest.mark.parametrize("publisher_kind,subscriber_kind",
                         [("official", "ours"), ("ours", "official"), ("ours", "ours")])
def test_basic_publisher_to_basic_subscriber(driver_dir, official, publisher_kind, subscriber_kind):
    subscriber = _subscriber(subscriber_kind, official, driver_dir)
    try:
        procs.wait_for_line(subscriber, "Subscription channel status 1", timeout=20)
        publisher = _publisher(publisher_kind, official, driver_dir)
        assert publisher.stdout.count("yay!") == 3, publisher.stdout + publisher.stderr
        lines = procs.wait_for_line(subscriber, "<<Hello World! 2>>", timeout=20)
    finally:
        out, err = procs.stop(subscriber, signal.SIGINT)
    text = "".join(lines) + out
    assert re.findall(r"Message to stream 1001 from session -?\d+ \(14 bytes\) <<Hello World! (\d)>>", text) == [
        "0", "1", "2"], text + err
    assert re.search(r"Available image on aeron:ipc streamId=1001 sessionId=-?\d+ mtu=1408 term-length=65536 "
                     r"from aeron:ipc", text), text


@pytest.mark.parametrize("ping_kind,pong_kind", [("official", "ours"), ("ours", "official"), ("ours", "ours")])
def test_ping_pong(driver_dir, official, ping_kind, pong_kind):
    args = ("-p", driver_dir, "-c", "aeron:ipc", "-C", "aeron:ipc")
    pong = procs.popen(procs.sample("pong", *args) if pong_kind == "ours" else [official("cpong"), *args])
    try:
        ping_args = (*args, "-m", "2000", "-w", "200", "-L", "32")
        ping = procs.run(procs.sample("ping", *ping_args) if ping_kind == "ours"
                         else [official("cping"), *ping_args], timeout=60)
    finally:
        procs.stop(pong)
    assert ping.returncode == 0, ping.stdout + ping.stderr
    assert "Pinging 2000 messages of length 32 bytes" in ping.stdout
    # both pings print an HdrHistogram-style table whose last line is the 100th percentile of 2000 samples
    assert re.search(r"^\s+\d+\.\d+\s+1\.0+\s+2000\b", ping.stdout, re.M), ping.stdout
