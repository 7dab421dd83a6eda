# SPDX-License-Identifier: Apache-2.0
"""The client's per-message paths keep nothing per message: an offer (the session header and the payload gathered
by the compiled two-buffer offer) and an egress poll (reused decoders, let go after each message) leave no blocks
behind, counted with tracemalloc over thousands of round trips."""
from __future__ import annotations

import gc
import time
import tracemalloc
from typing import Any

from aeron.cluster.client import AeronCluster, EgressListener
from tests.cluster.client.conftest import client_context


class Counting(EgressListener):
    def __init__(self) -> None:
        self.count = 0
        self.total = 0

    def on_message(self, cluster_session_id: int, timestamp: int, buffer: Any, offset: int, length: int,
                   header: Any) -> None:
        self.count += 1
        self.total += length


def test_offer_and_poll_egress_keep_nothing_per_message(driver, make_fake):
    fake = make_fake(record=False)
    listener = Counting()
    payload = bytearray(64)
    with AeronCluster.connect(client_context(driver, fake, listener)) as cluster:
        def exchange(count: int) -> None:
            target = listener.count + count
            sent = 0
            deadline = time.monotonic() + 60
            while listener.count < target:
                assert time.monotonic() < deadline, "echoes did not come back"
                if sent < count and cluster.offer(payload, 0, 64) > 0:
                    sent += 1
                cluster.poll_egress()

        exchange(500)                       # warm up: caches and free lists fill
        count = 10_000
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.take_snapshot()
            exchange(count)
            gc.collect()
            after = tracemalloc.take_snapshot()
        finally:
            tracemalloc.stop()
        assert listener.total == 64 * (count + 500)
    filters = [tracemalloc.Filter(False, tracemalloc.__file__), tracemalloc.Filter(False, "<frozen importlib*"),
               tracemalloc.Filter(False, "*/fake_cluster.py"), tracemalloc.Filter(False, "*/threading.py")]
    diff = after.filter_traces(filters).compare_to(before.filter_traces(filters), "filename")
    blocks = sum(d.count_diff for d in diff)
    assert blocks < count // 100, [str(d) for d in diff[:10]]       # kept per message it would be >= count


async def test_the_async_offer_and_receive_keep_nothing_per_message(client, make_fake):
    import aeron.aio.cluster
    fake = make_fake(record=False)
    payload = bytearray(64)
    async with aeron.aio.cluster.connect(client=client, environ={}, ingress_channel="aeron:udp",
                                         ingress_endpoints=fake.ingress_endpoints(),
                                         egress_channel="aeron:udp?endpoint=127.0.0.1:0") as cluster:
        async def exchange(count: int) -> int:
            total = 0
            for _ in range(count):
                await cluster.offer(payload, 0, 64, timeout=30)
                message = await cluster.receive(timeout=30)
                total += message.length
            return total

        await exchange(500)                 # warm up: caches and free lists fill
        count = 5000
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.take_snapshot()
            assert await exchange(count) == 64 * count
            gc.collect()
            after = tracemalloc.take_snapshot()
        finally:
            tracemalloc.stop()
    # what the cluster client's own code keeps: the loop's timer handles, the client conductor's and the embedded
    # driver's work come and go with the moment of the snapshot (more of them on a loaded machine), whatever the count
    filters = [tracemalloc.Filter(True, "*/aeron/cluster/*"), tracemalloc.Filter(True, "*/aeron/aio/cluster.py"),
               tracemalloc.Filter(True, "*/aeron/common/op.py")]
    diff = after.filter_traces(filters).compare_to(before.filter_traces(filters), "filename")
    blocks = sum(d.count_diff for d in diff)
    assert blocks < count // 100, [str(d) for d in diff[:10]]       # kept per message it would be >= count
