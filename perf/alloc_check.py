# SPDX-License-Identifier: Apache-2.0
"""Steady-state allocation check: offers and polls, and the asyncio receive path, must allocate nothing per message.

Warms up, then counts the net blocks and bytes tracemalloc sees over many more offers/polls. Any
per-message allocation that survives the call shows up as blocks proportional to the message count.
"""
import json
import sys
import tracemalloc

from aeron._core.logbuffer import LogBuffers
from aeron._core.term_appender import ConcurrentTermAppender, ExclusiveTermAppender
from aeron._core.term_reader import TermReader

N = 200_000


def _noop(buffer, offset, length, header):
    pass


def measure(kind, size):
    log = LogBuffers.create(term_length=64 * 1024 * 1024, initial_term_id=0, session_id=1, stream_id=1,
                            is_connected=1)
    appender = (ConcurrentTermAppender if kind == "concurrent" else ExclusiveTermAppender)(log)
    reader = TermReader(log)
    msg = bytes(size)
    offer, poll = appender.offer, reader.poll
    for _ in range(1000):          # warm up: first calls may fill caches and freelists
        offer(msg)
    poll(_noop, 1000)
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    peak0 = tracemalloc.get_traced_memory()[0]
    for _ in range(N):
        offer(msg)
    polled = 0
    while polled < N:
        polled += poll(_noop, 4096)
    after = tracemalloc.take_snapshot()
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    filters = [tracemalloc.Filter(False, tracemalloc.__file__)]
    diff = after.filter_traces(filters).compare_to(before.filter_traces(filters), "filename")
    blocks = sum(d.count_diff for d in diff)
    nbytes = sum(d.size_diff for d in diff)
    appender.close()
    reader.close()
    log.close()
    return {"kind": kind, "size": size, "messages": N, "net_blocks": blocks, "net_bytes": nbytes,
            "peak_bytes_during": peak - peak0}


N_AIO = 20_000


def measure_aio(size):
    """``await pub.offer(...)`` then ``await sub.receive()`` on asyncio, through an embedded driver: the
    Message is re-filled in place and its view made only if ``payload`` is read (perf/../aeron/aio)."""
    import asyncio

    import aeron.aio

    async def run():
        async with aeron.aio.connect(launch_embedded=True) as client:
            sub = await client.add_subscription("aeron:ipc", 1)
            pub = await client.add_exclusive_publication("aeron:ipc", 1)
            await pub.wait_connected(timeout=10)
            msg = bytes(size)

            async def exchange(n):
                total = 0
                for _ in range(n):
                    while await pub.offer(msg) < 0:
                        pass
                    total += (await sub.receive(timeout=5)).length
                return total

            await exchange(2000)       # warm up
            tracemalloc.start()
            before = tracemalloc.take_snapshot()
            await exchange(N_AIO)
            after = tracemalloc.take_snapshot()
            tracemalloc.stop()
            return before, after

    before, after = asyncio.run(run())
    filters = [tracemalloc.Filter(False, tracemalloc.__file__)]
    diff = after.filter_traces(filters).compare_to(before.filter_traces(filters), "filename")
    return {"kind": "aio", "size": size, "messages": N_AIO, "net_blocks": sum(d.count_diff for d in diff),
            "net_bytes": sum(d.size_diff for d in diff), "peak_bytes_during": 0}


def main():
    results = [measure(k, s) for k in ("concurrent", "exclusive") for s in (32, 1024)]
    results += [measure_aio(s) for s in (32, 1024)]
    json.dump(results, sys.stdout, indent=1)
    print()
    # a per-message allocation would leave about one block per message; a constant few are the caches' (and for
    # aio the event loop's own state: timer handles, the conductor task), whatever the message count
    bad = [r for r in results if r["net_blocks"] > (64 if r["kind"] == "aio" else 16)]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
