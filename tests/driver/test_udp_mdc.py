# SPDX-License-Identifier: Apache-2.0
"""Multi-destination-cast: dynamic (receivers announce themselves to the publication's control address) and manual
(Publication.add_destination / remove_destination), with the mdc-num-dest counter (MdcDestinations).
Every subscriber is its own driver, as on separate hosts."""
from __future__ import annotations

import contextlib
import time

import pytest

from aeron import Aeron, Context, MediaDriver
from aeron._core import counters as ctr
from tests.driver.udp_helpers import Collector, counter, driver_context, free_port, numbered, stream, wait_for

pytestmark = pytest.mark.timeout(60)


@contextlib.contextmanager
def hosts(shm_dir, *names):
    with contextlib.ExitStack() as stack:
        clients = []
        for name in names:
            driver = stack.enter_context(MediaDriver.launch(driver_context(aeron_dir=str(shm_dir / name))))
            clients.append(stack.enter_context(Aeron.connect(Context(driver.aeron_dir))))
        yield clients


def destinations(client, channel):
    record = counter(client, f"mdc-num-dest: {channel}")
    assert record.label == f"mdc-num-dest: {channel}"
    assert record.type_id == ctr.MDC_DESTINATIONS_COUNTER_TYPE_ID
    assert ctr.channel_status_key_decode(record.key) == channel
    return record.value


def test_dynamic_mdc_counts_the_receivers_that_announce_themselves_and_a_late_one_joins(shm_dir):
    control = f"127.0.0.1:{free_port()}"
    pub_channel = f"aeron:udp?control={control}|control-mode=dynamic"
    with hosts(shm_dir, "p", "a", "b", "c") as (cp, ca, cb, cc):
        pub = cp.add_exclusive_publication(pub_channel, 1001)
        assert destinations(cp, pub_channel) == 0
        subs = [c.add_subscription(f"aeron:udp?endpoint=127.0.0.1:{free_port()}|control={control}", 1001)
                for c in (ca, cb)]
        wait_for(lambda: pub.is_connected and all(s.image_count == 1 for s in subs), timeout_s=15)
        wait_for(lambda: destinations(cp, pub_channel) == 2)
        stream(pub, subs, 300, 100)
        late = cc.add_subscription(f"aeron:udp?endpoint=127.0.0.1:{free_port()}|control={control}", 1001)
        wait_for(lambda: late.image_count == 1, timeout_s=15,
                 invoke=lambda: [s.poll(Collector(), 64) for s in subs] and time.sleep(0.001))
        assert late.images[0].join_position == pub.position
        wait_for(lambda: destinations(cp, pub_channel) == 3)
        stream(pub, subs + [late], 300, 100, first=300)


def test_manual_mdc_destinations_are_counted_added_and_removed(shm_dir):
    with hosts(shm_dir, "p", "a", "b") as (cp, ca, cb):
        ports = [free_port(), free_port()]
        subs = [c.add_subscription(f"aeron:udp?endpoint=127.0.0.1:{port}", 1001) for c, port in zip((ca, cb), ports)]
        channel = "aeron:udp?control-mode=manual"
        pub = cp.add_exclusive_publication(channel, 1001)
        time.sleep(0.2)
        assert not pub.is_connected and destinations(cp, channel) == 0     # nowhere to send yet
        for port in ports:
            pub.add_destination(f"aeron:udp?endpoint=127.0.0.1:{port}")
        wait_for(lambda: pub.is_connected and all(s.image_count == 1 for s in subs))
        assert destinations(cp, channel) == 2
        stream(pub, subs, 200, 64)
        pub.remove_destination(f"aeron:udp?endpoint=127.0.0.1:{ports[0]}")
        wait_for(lambda: destinations(cp, channel) == 1)
        time.sleep(0.1)
        hwm = counter(ca, "rcv-hwm:").value
        got = Collector()
        for n in range(100):
            while pub.offer(numbered(n, 64)) < 0:
                subs[1].poll(got, 64)
            subs[1].poll(got, 64)
        wait_for(lambda: counter(cb, "rcv-hwm:").value == pub.position, invoke=lambda: subs[1].poll(got, 64))
        assert counter(ca, "rcv-hwm:").value == hwm                   # nothing more for the removed destination
        pub.close()
        # the endpoint and its counters go with the last publication
        wait_for(lambda: not [r for r in cp.counters_reader.counters()
                              if r.type_id == ctr.MDC_DESTINATIONS_COUNTER_TYPE_ID], timeout_s=10)
