# SPDX-License-Identifier: Apache-2.0
"""Steady-state allocation check: offers and polls must allocate nothing per message.

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


def main():
    results = [measure(k, s) for k in ("concurrent", "exclusive") for s in (32, 1024)]
    json.dump(results, sys.stdout, indent=1)
    print()
    bad = [r for r in results if r["net_blocks"] > 16]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
