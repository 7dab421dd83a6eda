# SPDX-License-Identifier: Apache-2.0
"""Issue 15 defects 3 and 4: a raw UDP socket floods a subscription's endpoint with DATA frames of made-up sessions
(state kept for them is bounded and expires, the SETUP-eliciting replies are rate limited) and with forged SETUPs
(images are limited per stream and endpoint, refusals logged), while a real publication streams on the same endpoint
and loses nothing."""
from __future__ import annotations

import os
import random
import socket
import struct
import time

import pytest

from aeron import Aeron, Context
from aeron._core import frames as f
from aeron._core.cnc import CncFile
from aeron._core.error_log import read_error_log
from aeron.common.errors import ConfigurationError
from aeron.driver import Context as DriverContext, MediaDriver
from aeron.driver import receive_channel_endpoint as rce
from tests.driver.udp_helpers import Collector, driver_context, free_port, numbered, receive_queues_empty
from tests.support import wait_for

pytestmark = pytest.mark.timeout(120)

DATA_HEADER = struct.Struct("<iBBhiiiiq")     # length, version, flags, type, term offset, session, stream, term id, rsv


class Target:
    def __init__(self, **overrides):
        self.driver = MediaDriver.launch_embedded(driver_context(**overrides))
        self.client = Aeron.connect(Context(self.driver.aeron_dir))
        self.port = free_port()
        self.channel = f"aeron:udp?endpoint=127.0.0.1:{self.port}"
        self.sub = self.client.add_subscription(self.channel, 1001)
        self.pub = self.client.add_exclusive_publication(self.channel, 1001)
        wait_for(lambda: self.pub.is_connected and self.sub.image_count == 1)
        self.attacker = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.attacker.bind(("127.0.0.1", 0))
        self.attacker.setblocking(False)
        self.got = Collector()
        self.sent = 0

    def endpoint(self):
        endpoints = self.driver.conductor.receiver.endpoints
        assert len(endpoints) == 1
        return endpoints[0]

    def step(self, burst=1):
        """Offer the next numbered message if there is room, poll what arrived."""
        for _ in range(burst):
            if self.pub.offer(numbered(self.sent, 64)) > 0:
                self.sent += 1
        self.sub.poll(self.got, 64)

    def replies(self) -> int:
        count = 0
        while True:
            try:
                datagram = self.attacker.recv(2048)
            except BlockingIOError:
                return count
            if f.validate_frame(datagram, 0, len(datagram)) == f.HDR_TYPE_SM:
                count += 1

    def all_arrived(self, timeout_s=30.0):
        deadline = time.monotonic() + timeout_s
        while len(self.got.messages) < self.sent:
            assert time.monotonic() < deadline, ("stream stalled", self.sent, len(self.got.messages))
            self.sub.poll(self.got, 64)
            time.sleep(0)
        assert set(self.got.sessions) == {self.pub.session_id}
        assert [int.from_bytes(m[:8], "little") for m in self.got.messages] == list(range(self.sent))

    def errors(self) -> list:
        cnc = CncFile.map_existing(os.path.join(self.driver.aeron_dir, "cnc.dat"))
        try:
            return read_error_log(cnc.error_log_buffer())
        finally:
            cnc.close()

    def close(self):
        self.attacker.close()
        self.client.close()
        self.driver.close()


@pytest.fixture
def target(request):
    t = Target(**getattr(request, "param", {}))
    try:
        yield t
    finally:
        t.close()


def data_frame(session_id: int, stream_id: int = 1001) -> bytes:
    frame = bytearray(64)
    DATA_HEADER.pack_into(frame, 0, 64, 0, 0xC0, f.HDR_TYPE_DATA, 0, session_id, stream_id, 7, 0)
    return bytes(frame)


def test_data_from_made_up_sessions_keeps_bounded_expiring_state_and_rate_limited_replies(target):
    rng = random.Random(15)
    real = target.pub.session_id
    started = time.monotonic()
    flood = 5000
    for i in range(flood):
        session_id = rng.randrange(-2**31, 2**31)
        if session_id != real:
            target.attacker.sendto(data_frame(session_id), ("127.0.0.1", target.port))
        if i % 50 == 0:
            target.step()
    target.all_arrived()
    elapsed_ns = (time.monotonic() - started) * 1e9
    # every window of SWEEP_INTERVAL_NS gives at most ELICIT_REPLY_LIMIT replies, and each pending state lasts at
    # most PENDING_SETUP_TIMEOUT_NS plus a sweep
    windows = int(elapsed_ns // rce.SWEEP_INTERVAL_NS) + 2
    wait_for(lambda: receive_queues_empty(target.port), what="the flood read")      # and so, replied to
    replies = target.replies()
    assert 0 < replies <= rce.ELICIT_REPLY_LIMIT * windows < flood
    live_windows = (rce.PENDING_SETUP_TIMEOUT_NS + rce.SWEEP_INTERVAL_NS) // rce.SWEEP_INTERVAL_NS + 1
    assert target.endpoint().session_state_count() <= 1 + rce.ELICIT_REPLY_LIMIT * live_windows
    # the state of sessions that never sent a SETUP expires: only the real image is left
    wait_for(lambda: target.endpoint().session_state_count() == 1, timeout_s=10)
    for _ in range(200):
        target.step()
    target.all_arrived()


@pytest.mark.parametrize("target", [dict(stream_session_limit=4, image_liveness_timeout_ns=30_000_000_000)],
                         indirect=True)
def test_forged_setups_make_no_more_images_than_the_limit_and_the_stream_loses_nothing(target):
    rng = random.Random(4)
    real = target.pub.session_id
    setup = bytearray(f.SETUP_HEADER_LENGTH)
    for i in range(2000):
        session_id = rng.randrange(-2**31, 2**31)
        if session_id != real:
            f.encode_setup(setup, 0, session_id, 1001, 10, 10, 0, 65536, 1408, 0, 0)
            target.attacker.sendto(setup, ("127.0.0.1", target.port))
        if i % 20 == 0:
            target.step()
        if i % 200 == 0:
            assert target.sub.image_count <= 4
    wait_for(lambda: target.sub.image_count == 4, timeout_s=10, invoke=target.step)
    for _ in range(300):
        target.step()
        assert target.sub.image_count <= 4
    target.all_arrived()
    assert target.sent > 100
    refused = [r for r in target.errors() if "exceeded session limit" in r.text]
    # one distinct entry counting the refusals (the kernel may drop some of the flood before the driver reads it)
    assert len(refused) == 1 and refused[0].observation_count >= 100


def test_the_stream_session_limit_is_a_setting():
    assert DriverContext(environ={"AERON_DRIVER_STREAM_SESSION_LIMIT": "7"}).stream_session_limit == 7
    assert DriverContext(environ={}).stream_session_limit == 1024
    with pytest.raises(ConfigurationError):
        DriverContext(environ={}, stream_session_limit=0).conclude()
