# SPDX-License-Identifier: Apache-2.0
"""Our samples and the official C samples, mixed, on both drivers over IPC: official publisher → our subscriber,
ours → theirs, cping ↔ our pong, our ping ↔ cpong, and all-ours on `aeronmd`. Needs AERON_C_BIN."""
from __future__ import annotations

import re
import signal

import pytest

from aeron._core.wakeup import AWAKE, PARKED, SLOT_COUNT, WOKEN, YIELDING, stream_bit
from aeron.common.wakeup import open_board
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


def _futex_slots_of(aeron_dir, pid, stream_id):
    """The board's slots that ``pid`` parks in on a futex woken by data for ``stream_id``."""
    board = open_board(aeron_dir)
    assert board is not None
    try:
        slots = [board.slot_state(i) for i in range(SLOT_COUNT)]
    finally:
        board.close()
    return [s for s in slots if s[1] == pid and s[0] in (AWAKE, PARKED, WOKEN, YIELDING) and s[2] & stream_bit(stream_id)]


@pytest.mark.parametrize("idle", ["default", "spin"])
def test_our_pong_parks_on_the_board_by_default_on_our_driver_only(driver_dir, official, idle):
    args = ("-p", driver_dir, "-c", "aeron:ipc", "-C", "aeron:ipc")
    pong = procs.popen(procs.sample("pong", *args, *(() if idle == "default" else ("--idle", idle))))
    try:
        # cping's round trips done: the pong is in its loop, with whatever idle strategy it chose
        ping = procs.run([official("cping"), *args, "-m", "200", "-w", "20", "-L", "32"], timeout=60)
        assert ping.returncode == 0, ping.stdout + ping.stderr
        parked = _futex_slots_of(driver_dir, pong.pid, 1002)
    finally:
        procs.stop(pong)
    ours = driver_dir.endswith("/ours")
    assert len(parked) == (1 if ours and idle == "default" else 0), parked
