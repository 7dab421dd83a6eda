# SPDX-License-Identifier: Apache-2.0
"""tether=false on a network subscription, the same scenario with the subscriptions on `aeronmd` and on our driver
(the publication on the other one): the untethered subscriber that does not poll loses its image and stops holding
the publication back, then rejoins on the same counter; the tethered one next to it gets every message. Our
client drives both drivers. Needs AERON_C_BIN."""
from __future__ import annotations

import contextlib
import time

import pytest

from aeron import Aeron, Context, MediaDriver
from tests.driver.udp_helpers import Collector, driver_context, free_port, numbered, wait_for

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

UNTETHERED = "tether=false|untethered-window-limit-timeout=100ms|untethered-linger-timeout=100ms" \
             "|untethered-resting-timeout=300ms"
WINDOW = 32768


@pytest.mark.parametrize("subscriber_side", ["ours", "aeronmd"])
def test_untethered_network_subscriber_rests_and_rejoins(aeronmd, shm_dir, subscriber_side):
    available, unavailable = [], []
    with contextlib.ExitStack() as stack:
        driver = stack.enter_context(MediaDriver.launch(driver_context(aeron_dir=str(shm_dir / "ours"))))
        dirs = {"ours": driver.aeron_dir, "aeronmd": aeronmd}
        sub_client = stack.enter_context(Aeron.connect(Context(
            dirs[subscriber_side], available_image_handler=available.append,
            unavailable_image_handler=unavailable.append)))
        pub_client = stack.enter_context(Aeron.connect(Context(
            dirs["aeronmd" if subscriber_side == "ours" else "ours"])))
        channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
        lagging = sub_client.add_subscription(f"{channel}|{UNTETHERED}", 1001)     # its timeouts rule the image
        tethered = sub_client.add_subscription(channel, 1001)
        pub = pub_client.add_exclusive_publication(channel, 1001)
        wait_for(lambda: pub.is_connected and tethered.image_count == 1 and lagging.image_count == 1, timeout_s=20)
        image = lagging.images[0]
        counter_id = image.subscriber_position_id
        got = Collector()
        n = 0
        deadline = time.monotonic() + 30

        def run_until(done):
            nonlocal n
            while not done():
                assert time.monotonic() < deadline, (pub.position, len(unavailable), lagging.image_count)
                if pub.offer(numbered(n, 480)) > 0:
                    n += 1
                tethered.poll(got, 64)

        run_until(lambda: image in unavailable)
        run_until(lambda: pub.position > 4 * WINDOW and lagging.image_count == 1)
        back = lagging.images[0]
        assert back.subscriber_position_id == counter_id and back.correlation_id == image.correlation_id
        assert back.join_position > WINDOW
        wait_for(lambda: len(got.messages) == n, invoke=lambda: tethered.poll(got, 64))
        assert got.messages == [numbered(i, 480) for i in range(n)]
