# SPDX-License-Identifier: Apache-2.0
"""aeron.aio parks on the client's wake-up descriptor (docs/wakeup.md) and re-fills one Message per subscription:
the async receive path allocates nothing per message."""
import asyncio
import gc
import tracemalloc

from tests.aio.test_aio import connected_pair


async def test_a_parked_receive_is_woken_by_the_offer(client):
    pub, sub = await connected_pair(client)
    assert client._wakeup is not None
    board = client.aeron._conductor.wakeup_board
    before = board.wakeups_sent

    async def later():
        await asyncio.sleep(0.05)           # long enough that the receive has parked
        await pub.offer(b"late")

    task = asyncio.create_task(later())
    message = await sub.receive(timeout=5)
    await task
    assert bytes(message) == b"late"
    assert board.wakeups_sent > before       # the receive was parked: the offer signalled it


async def test_receive_returns_one_message_object_refilled_in_place(client):
    pub, sub = await connected_pair(client)
    for i in range(3):
        await pub.offer(bytes([i]) * 4)
    first = await sub.receive(timeout=5)
    assert bytes(first.payload) == b"\0" * 4
    kept = first.copy()
    second = await sub.receive(timeout=5)
    assert second is first and bytes(second) == b"\1" * 4 and second.length == 4
    assert bytes(kept) == b"\0" * 4 and kept.position < second.position


async def test_the_async_receive_path_allocates_nothing_per_message(client):
    pub, sub = await connected_pair(client)
    payload = bytes(32)
    # what is live at the snapshots' instants (the embedded driver's threads, the loop's handles) is a few dozen
    # blocks whatever the count; a per-message allocation kept would be count blocks or more
    count = 20000

    async def exchange(n):
        total = 0
        for _ in range(n):
            while await pub.offer(payload) < 0:
                pass
            message = await sub.receive(timeout=5)
            total += message.length
        return total

    await exchange(500)                     # warm up: caches and freelists fill
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        assert await exchange(count) == 32 * count
        gc.collect()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    filters = [tracemalloc.Filter(False, tracemalloc.__file__), tracemalloc.Filter(False, "<frozen importlib*")]
    diff = after.filter_traces(filters).compare_to(before.filter_traces(filters), "filename")
    blocks = sum(d.count_diff for d in diff)
    assert blocks < count // 100, [str(d) for d in diff[:10]]      # per message it would be >= count
