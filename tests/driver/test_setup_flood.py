# SPDX-License-Identifier: Apache-2.0
"""Issue 33: thousands of forged SETUP frames (made-up sessions, 64 MiB terms: a 192 MiB log each) from one and from
several source ports at a subscription's endpoint. The log space the driver reserves in its images directory stays
within the unconfirmed images' budget, every forged SETUP is an image, a count of ``Unconfirmed images rejected`` or a
datagram the kernel dropped, and a publisher started (on its own driver) during the flood connects and delivers every
message (aeron/driver/unconfirmed_images.py)."""
from __future__ import annotations

import contextlib
import os
import socket
import time

import pytest

from aeron import Aeron, Context
from aeron._core import counters as ctr
from aeron._core import frames as f
from aeron._core.cnc import CncFile
from aeron._core.error_log import read_error_log
from aeron._core.logbuffer import compute_log_length
from aeron.driver import MediaDriver
from tests.driver.udp_helpers import (
    Collector,
    driver_context,
    free_port,
    numbered,
    wait_for,
)

pytestmark = pytest.mark.timeout(240)

STREAM_ID = 1001
FORGED_TERM_LENGTH = 64 << 20
FORGED_LOG = compute_log_length(FORGED_TERM_LENGTH)
BUDGET = 2 * FORGED_LOG                       # room for two forged images at a time
GENUINE_LOG = compute_log_length(65536)
FORGED_SESSIONS = 1 << 20                     # made-up session ids from here on
MESSAGES = 200


def images_dir_bytes(aeron_dir: str) -> int:
    """The length of every log in the driver's images directory (reserved, not sparse: docs/operations.md)."""
    total = 0
    with os.scandir(os.path.join(aeron_dir, "images")) as entries:
        for entry in entries:
            try:
                total += entry.stat().st_size
            except FileNotFoundError:
                pass                          # deleted while we looked
    return total


def kernel_drops(port: int) -> int:
    """Datagrams the kernel dropped at the UDP socket bound to 127.0.0.1:``port`` (/proc/net/udp)."""
    local = f"0100007F:{port:04X}"
    with open("/proc/net/udp") as table:
        for line in table.readlines()[1:]:
            fields = line.split()
            if fields[1] == local:
                return int(fields[-1])
    raise AssertionError(f"no socket bound to 127.0.0.1:{port}")


def rejected_count(client) -> int:
    for record in client.counters_reader.counters():
        if record.type_id == ctr.DRIVER_SYSTEM_COUNTER_TYPE_ID and record.registration_id == \
                ctr.UNCONFIRMED_IMAGES_REJECTED:
            assert record.label == "Unconfirmed images rejected"
            return record.value
    raise AssertionError("no Unconfirmed images rejected counter")


def errors(aeron_dir: str) -> list[str]:
    cnc = CncFile.map_existing(os.path.join(aeron_dir, "cnc.dat"))
    try:
        return [record.text for record in read_error_log(cnc.error_log_buffer())]
    finally:
        cnc.close()


@pytest.mark.parametrize("ports", [1, 8])
def test_a_setup_flood_holds_no_more_than_the_budget_and_a_genuine_publisher_gets_through(ports):
    settings = dict(unconfirmed_log_bytes_max=BUDGET, unconfirmed_images_max=8, unconfirmed_source_images_max=2,
                    unconfirmed_source_log_bytes_max=FORGED_LOG, unconfirmed_image_timeout_ns=1_000_000_000,
                    image_liveness_timeout_ns=10_000_000_000)
    available: list = []
    port = free_port()
    channel = f"aeron:udp?endpoint=127.0.0.1:{port}"
    with contextlib.ExitStack() as stack:
        target = stack.enter_context(MediaDriver.launch_embedded(driver_context(**settings)))
        client = stack.enter_context(Aeron.connect(Context(target.aeron_dir)))
        subscription = client.add_subscription(channel, STREAM_ID, available_image_handler=available.append)
        # the receiver takes the stream's interest a moment after the conductor answered: SETUPs before are ignored
        wait_for(lambda: any(endpoint.streams for endpoint in target.conductor.receiver.endpoints))
        flooders = [stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_DGRAM)) for _ in range(ports)]
        for flooder in flooders:
            flooder.bind(("127.0.0.1", 0))
        setup = bytearray(f.SETUP_HEADER_LENGTH)
        sent = 0
        largest = 0
        publication = None
        got = Collector()
        offered = 0
        started = time.monotonic()
        while len(got.messages) < MESSAGES or sent < 5000:
            assert time.monotonic() - started < 150, (sent, offered, len(got.messages), errors(target.aeron_dir))
            for _ in range(50):
                f.encode_setup(setup, 0, FORGED_SESSIONS + sent, STREAM_ID, 5, 5, 0, FORGED_TERM_LENGTH, 1408)
                flooders[sent % ports].sendto(setup, ("127.0.0.1", port))
                sent += 1
            largest = max(largest, images_dir_bytes(target.aeron_dir))
            assert largest <= BUDGET + GENUINE_LOG, (largest, BUDGET)
            if publication is None and time.monotonic() - started > 1.0:
                # the genuine publisher comes during the flood, from its own driver (another source)
                publisher_driver = stack.enter_context(MediaDriver.launch_embedded(driver_context()))
                publisher_client = stack.enter_context(Aeron.connect(Context(publisher_driver.aeron_dir)))
                publication = publisher_client.add_publication(channel, STREAM_ID)
            if publication is not None and offered < MESSAGES and publication.offer(numbered(offered, 64)) > 0:
                offered += 1
            subscription.poll(got, 64)
            time.sleep(0.005)
        assert set(got.sessions) == {publication.session_id}
        assert [int.from_bytes(m[:8], "little") for m in got.messages] == list(range(MESSAGES))
        # the flood did make images, which the sampling saw: one port its own share (one image), several the budget
        assert largest >= min(ports, 2) * FORGED_LOG
        # every forged SETUP made an image, was refused and counted, or was dropped by the kernel; the genuine
        # publisher's first asks may be refused and counted too (it sends a SETUP every 100 ms until it connects)
        forged = range(FORGED_SESSIONS, FORGED_SESSIONS + sent)

        def forged_images() -> int:
            return sum(1 for image in available
                       if image.session_id in forged and image.session_id != publication.session_id)

        wait_for_counts = time.monotonic() + 30
        while rejected_count(client) + forged_images() + kernel_drops(port) < sent:
            assert time.monotonic() < wait_for_counts, (
                rejected_count(client), forged_images(), kernel_drops(port), sent, errors(target.aeron_dir))
            time.sleep(0.01)
        # at most 10 SETUPs a second from the genuine publisher while it was refused
        genuine_bound = 10 * (time.monotonic() - started) + 10
        assert rejected_count(client) + forged_images() + kernel_drops(port) <= sent + genuine_bound
        assert rejected_count(client) >= sent // 2 and forged_images() <= 20, (rejected_count(client), sent)
