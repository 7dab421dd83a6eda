# SPDX-License-Identifier: Apache-2.0
"""aeron.aio on asyncio and uvloop: fast paths that never suspend, waiting out back pressure, timeouts,
cancellation that loses nothing, assembled messages in order, image events, a responsive loop."""
from __future__ import annotations

import asyncio
import sys
import time

import pytest

import aeron.aio
from aeron.aio import AeronTimeoutError, PublicationClosedError
from aeron.errors import IllegalStateError
from tests import procs

pytestmark = pytest.mark.timeout(60)


async def connected_pair(client, stream_id=1001, channel="aeron:ipc"):
    sub = await client.add_subscription(channel, stream_id, timeout=5)
    pub = await client.add_publication(channel, stream_id, timeout=5)
    await pub.wait_connected(timeout=5)
    return pub, sub


async def test_a_successful_offer_returns_without_suspending(client):
    pub, sub = await connected_pair(client)
    coroutine = pub.offer(b"fast")
    with pytest.raises(StopIteration) as done:
        coroutine.send(None)                        # completes on the first step: nothing awaited
    assert done.value.value == 64
    message = sub.receive_nowait()
    assert bytes(message) == b"fast"
    coroutine = sub.receive()                         # a message waiting: receive does not suspend either
    await pub.offer(b"again")
    with pytest.raises(StopIteration) as done:
        coroutine.send(None)
    assert bytes(done.value.value) == b"again"


async def test_back_pressure_is_waited_out(client):
    pub, sub = await connected_pair(client)
    while pub.publication.offer(bytes(1000)) > 0:     # a 64 KiB term: the window fills at 32 KiB
        pass
    assert pub.publication.offer(bytes(1000)) == pub.BACK_PRESSURED
    pending = asyncio.ensure_future(pub.offer(b"after", timeout=5))
    await asyncio.sleep(0.05)
    assert not pending.done()
    drained = 0
    while not pending.done():
        message = sub.receive_nowait()
        if message is None:
            await asyncio.sleep(0.001)
        else:
            drained += 1
    assert await pending > 0 and drained > 0


async def test_timeouts_raise_aeron_timeout_error_which_is_a_timeout_error(client):
    pub = await client.add_publication("aeron:ipc", 2002)
    with pytest.raises(AeronTimeoutError):
        await pub.offer(b"nobody listens", timeout=0.05)
    sub = await client.add_subscription("aeron:ipc", 2003)
    with pytest.raises(TimeoutError):
        await sub.receive(timeout=0.05)
    with pytest.raises(AeronTimeoutError):
        await pub.wait_connected(timeout=0.05)
    with pytest.raises(AeronTimeoutError):
        async with pub.try_claim(8, timeout=0.05):
            pass


async def test_cancelled_awaits_leave_the_client_usable_and_lose_nothing(client):
    pub, sub = await connected_pair(client)
    waiting = asyncio.ensure_future(sub.receive())
    await asyncio.sleep(0.01)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    for i in range(3):
        await pub.offer(f"m{i}".encode())
    got = [bytes(await sub.receive(timeout=2)) for _ in range(3)]
    assert got == [b"m0", b"m1", b"m2"]
    lonely = await client.add_publication("aeron:ipc", 2004)
    offer = asyncio.ensure_future(lonely.offer(b"x"))
    await asyncio.sleep(0.01)
    offer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await offer
    assert await pub.offer(b"still works") > 0


async def test_async_for_yields_assembled_messages_in_order(client):
    pub, sub = await connected_pair(client)
    sizes = [10, 5000, 1, 3000, 64]                    # two of them span several frames
    for i, size in enumerate(sizes):
        await pub.offer(bytes([i]) * size, timeout=5)
    received = []
    async for message in sub:
        received.append(message.copy())                # the step's view goes away at the next step
        if len(received) == len(sizes):
            break
    assert [bytes(m) for m in received] == [bytes([i]) * size for i, size in enumerate(sizes)]
    assert received[1].session_id == pub.session_id and received[1].position > received[0].position


async def test_receive_many_and_try_claim(client):
    pub, sub = await connected_pair(client)
    async with pub.try_claim(5) as claim:
        claim.buffer[:] = b"claim"
    for i in range(4):
        await pub.offer(bytes([65 + i]))
    messages = await sub.receive_many(10, timeout=2)
    assert [bytes(m) for m in messages] == [b"claim", b"A", b"B", b"C", b"D"]
    with pytest.raises(ValueError):
        await sub.receive_many(0)


async def test_image_events_arrive_as_an_async_stream(client):
    sub = await client.add_subscription("aeron:ipc", 3003)
    events = sub.image_events()
    pub = await client.add_publication("aeron:ipc", 3003)
    first = await asyncio.wait_for(events.__anext__(), 5)
    assert first.available and first.image.session_id == pub.session_id
    pub.close()
    second = await asyncio.wait_for(events.__anext__(), 5)
    assert not second.available and second.image.session_id == pub.session_id
    assert sub.image_events_dropped == 0
    await events.aclose()


async def test_closed_publication_raises(client):
    pub, _ = await connected_pair(client)
    pub.close()
    with pytest.raises(PublicationClosedError):
        await pub.offer(b"late")


async def test_reentrant_client_calls_from_a_handler_raise(client):
    outcome = []

    def on_available(image):
        try:
            client.aeron.add_publication("aeron:ipc", 9)
        except IllegalStateError as exc:
            outcome.append(str(exc))
    await client.add_subscription("aeron:ipc", 4004, available_image_handler=on_available)
    await client.add_publication("aeron:ipc", 4004)
    deadline = time.monotonic() + 5
    while not outcome and time.monotonic() < deadline:
        await asyncio.sleep(0.005)
    assert outcome == ["reentrant calls not permitted during callbacks"]


async def test_the_loop_stays_responsive_while_draining_a_fast_publisher(client):
    sub = await client.add_subscription("aeron:ipc", 5005)
    publisher = procs.popen([sys.executable, "-m", "aeron.samples.streaming_publisher", "-p",
                             client.aeron.context.aeron_dir, "-c", "aeron:ipc", "-s", "5005", "-m", "300000"])
    lags = []

    async def probe():
        loop = asyncio.get_running_loop()
        expected = loop.time() + 0.01
        while True:
            await asyncio.sleep(max(0.0, expected - loop.time()))
            lags.append(loop.time() - expected)
            expected += 0.01
    probing = asyncio.ensure_future(probe())
    try:
        count = 0
        async for _ in sub:
            count += 1
            if count == 300_000:
                break
    finally:
        probing.cancel()
        procs.stop(publisher)
    lags.sort()
    assert len(lags) > 10
    p95 = lags[int(len(lags) * 0.95) - 1]
    # a 10 ms timer fires within 5 ms of schedule (p95) while the loop drains ~300k messages, and never more
    # than 50 ms late, on a 2-core box shared with the publisher process and the driver
    assert p95 < 0.005 and lags[-1] < 0.05, (p95, lags[-1])


async def test_install_uvloop_sets_the_policy():
    import uvloop
    previous = asyncio.get_event_loop_policy()
    try:
        aeron.aio.install_uvloop()
        assert isinstance(asyncio.get_event_loop_policy(), uvloop.EventLoopPolicy)
    finally:
        asyncio.set_event_loop_policy(previous)


async def test_each_test_runs_on_both_loops(request):
    loop = asyncio.get_running_loop()
    assert ("uvloop" in type(loop).__module__) == request.node.name.endswith("[uvloop]")


async def test_poll_waits_for_a_fragment_and_counters_register(client):
    pub, sub = await connected_pair(client)
    got = []
    polling = asyncio.ensure_future(sub.poll(lambda b, o, l, h: got.append(b.get_bytes(o, l)), 10, timeout=5))
    await asyncio.sleep(0.01)
    assert not polling.done()
    await pub.offer(b"polled")
    assert await polling == 1 and got == [b"polled"]
    counter = await client.add_counter(1001, "async counter", timeout=5)
    counter.increment()
    assert client.counters_reader.get_counter_value(counter.counter_id) == 1
    assert client.counters_reader.get_counter_label(counter.counter_id) == "async counter"
    counter.close()
