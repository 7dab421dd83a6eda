# SPDX-License-Identifier: Apache-2.0
"""Flow control strategies end to end over loopback multicast, each receiver in its own driver (the "hosts"):
group sizes gate the connection, tags select who counts, a departed slow receiver stops holding the sender back
(aeron_min_flow_control.c)."""
from __future__ import annotations

import contextlib
import time

import pytest

from aeron import Aeron, Context, MediaDriver
from tests.driver.udp_helpers import (Collector, counter, driver_context, free_port, multicast_available,
                                      multicast_group, stream, wait_for)

pytestmark = [pytest.mark.timeout(60),
              pytest.mark.skipif(not multicast_available(), reason="kernel refuses multicast joins on loopback")]


def channel():
    return f"aeron:udp?endpoint={multicast_group()}:{free_port()}|interface=127.0.0.1"


@contextlib.contextmanager
def hosts(shm_dir, *names):
    """An embedded driver and a client for each name."""
    with contextlib.ExitStack() as stack:
        clients = []
        for name in names:
            driver = stack.enter_context(MediaDriver.launch(driver_context(aeron_dir=str(shm_dir / name))))
            clients.append(stack.enter_context(Aeron.connect(Context(driver.aeron_dir))))
        yield clients


def test_min_with_a_group_size_connects_only_when_enough_receivers_report(shm_dir):
    ch = channel()
    with hosts(shm_dir, "p", "a", "b") as (cp, ca, cb):
        pub = cp.add_exclusive_publication(f"{ch}|fc=min,g:/2", 1001)
        first = ca.add_subscription(ch, 1001)
        wait_for(lambda: first.image_count == 1)
        time.sleep(0.5)                                   # several status messages from the one receiver
        assert not pub.is_connected
        assert pub.offer(b"early") == pub.NOT_CONNECTED
        second = cb.add_subscription(ch, 1001)
        wait_for(lambda: pub.is_connected and second.image_count == 1)
        stream(pub, [first, second], 500, 100)


def test_tagged_with_a_group_size_counts_only_tagged_receivers(shm_dir):
    ch = channel()
    with hosts(shm_dir, "p", "t1", "u", "t2") as (cp, ct1, cu, ct2):
        pub = cp.add_exclusive_publication(f"{ch}|fc=tagged,g:77/2", 1001)
        tagged = [ct1.add_subscription(f"{ch}|gtag=77", 1001)]
        untagged = cu.add_subscription(f"{ch}|gtag=78", 1001)
        wait_for(lambda: tagged[0].image_count == 1 and untagged.image_count == 1)
        time.sleep(0.5)
        assert not pub.is_connected                       # one tagged receiver of two; the other tag is ignored
        tagged.append(ct2.add_subscription(f"{ch}|gtag=77", 1001))
        wait_for(lambda: pub.is_connected and tagged[1].image_count == 1)
        stream(pub, tagged, 500, 100)
        assert counter(cp, "snd-lmt:").value <= min(s.images[0].position for s in tagged) + 32768


def test_min_lets_the_sender_go_once_the_slow_receiver_leaves(shm_dir):
    ch = channel()
    with hosts(shm_dir, "p", "fast") as (cp, cf):
        slow_driver = MediaDriver.launch(driver_context(aeron_dir=str(shm_dir / "slow")))
        slow_client = Aeron.connect(Context(slow_driver.aeron_dir))
        try:
            pub = cp.add_exclusive_publication(f"{ch}|fc=min,t:500ms", 1001)
            fast = cf.add_subscription(ch, 1001)
            slow = slow_client.add_subscription(ch, 1001)        # never polled
            wait_for(lambda: pub.is_connected and fast.image_count == 1 and slow.image_count == 1)
            got = Collector()
            deadline = time.monotonic() + 1.0
            while time.monotonic() < deadline:
                pub.offer(bytes(1000))
                fast.poll(got, 64)
            held = counter(cp, "snd-lmt:").value
            assert held <= 2 * 32768                             # the slow receiver never consumed anything
        finally:
            slow_client.close()
            slow_driver.close()                  # its EOS status message or its silence (t:500ms) drops it
        sent = 0
        deadline = time.monotonic() + 10
        while counter(cp, "snd-lmt:").value < held + 4 * 32768:
            assert time.monotonic() < deadline, counter(cp, "snd-lmt:").value
            if pub.offer(bytes(1000)) > 0:
                sent += 1
            fast.poll(got, 64)
        assert sent > 0
