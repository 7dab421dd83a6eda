# SPDX-License-Identifier: Apache-2.0
"""aeron.aio parks on the client's wake-up descriptor (docs/wakeup.md) and re-fills one Message per subscription:
the async receive path allocates nothing per message."""
import asyncio
import gc
import tracemalloc

import pytest

from aeron.aio import AeronTimeoutError
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


class _RecordingWakeup:
    """Stands for an AsyncWakeup: records each park's bound and times out at once."""

    quiet = None

    def __init__(self) -> None:
        self.bounds: list[float] = []
        self.waiter = type("W", (), {"prepared": True})()

    def prepare(self) -> None:
        pass

    async def wait(self, timeout_s: float) -> bool:
        self.bounds.append(timeout_s)
        return False


async def test_a_park_lasts_no_longer_than_what_is_left_of_the_callers_timeout():
    from aeron.aio._idle import QUIET_PARK_S, AsyncBackoffIdleStrategy, AsyncWakeupIdleStrategy

    wakeup = _RecordingWakeup()
    idle = AsyncWakeupIdleStrategy(wakeup, spins=0)                    # type: ignore[arg-type]
    for limit in (None, 0.0005, None, -1.0, None, None, None, None, None):
        await idle.idle(0)                                              # the park's mark
        await idle.idle(0, limit)
    # unlimited parks double up to the cap; a limited one is cut to what is left, never below zero, and a cut park
    # still doubles the bound for the next
    assert wakeup.bounds[0] == 1e-3 and wakeup.bounds[1] == 0.0005 and wakeup.bounds[2] == 4e-3
    assert wakeup.bounds[3] == 0.0 and wakeup.bounds[4] == 16e-3 and max(wakeup.bounds) == QUIET_PARK_S
    backoff = AsyncBackoffIdleStrategy(spins=0, min_sleep_s=0.5, max_sleep_s=1.0)
    loop = asyncio.get_running_loop()
    started = loop.time()
    await backoff.idle(0, 0.001)                                        # a 0.5 s sleep cut to 1 ms
    assert loop.time() - started < 0.4


async def test_poll_and_receive_time_out_and_a_message_that_comes_in_time_is_taken(client):
    pub, sub = await connected_pair(client)
    with pytest.raises(AeronTimeoutError):
        await sub.poll(lambda *args: None, 10, timeout=0.05)
    with pytest.raises(AeronTimeoutError):
        await sub.receive(timeout=0)
    fragments: list[bytes] = []

    async def later():
        await asyncio.sleep(0.05)
        await pub.offer(b"in time")

    task = asyncio.create_task(later())
    assert await sub.poll(lambda buffer, offset, length, header: fragments.append(buffer.get_bytes(offset, length)),
                          10, timeout=30) == 1
    await task
    assert fragments == [b"in time"]
