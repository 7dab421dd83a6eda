# SPDX-License-Identifier: Apache-2.0
"""A clustered service's log path: session messages from a log image through the BoundedLogAdapter (reassembly, the
compiled LogEntryDispatcher) to a service, against the floor Python sets in the same run (the same image
polled with a Python handler that only counts).

    .venv/bin/python perf/bench_cluster_service.py [--messages 50000] [--length 32] [--runs 5]

One process, one thread polling: our embedded driver (SHARED, backoff) and an exclusive IPC publication of
SessionMessageHeader entries (the leader's log, written before each timed poll, so only the reading is timed); the
log is read to its end by the adapter, whose service only counts (the whole path from the image to a service's
``on_session_message``, its session looked up, the log position and cluster time kept), then by the bare handler.
Prints each path's ns a message (median of the runs) and the adapter's cost over the floor.
"""
from __future__ import annotations

import argparse
import statistics
import time

from aeron import Aeron, Context, MediaDriver
from aeron._core.codecs import cluster as codecs
from aeron._core.term_reader import CONTINUE
from aeron.cluster.service.bounded_log_adapter import BoundedLogAdapter
from aeron.driver import Context as DriverContext

TERM_LENGTH = 16 * 1024 * 1024


class CountingAgent:
    """What the adapter reads of an agent: its sessions, and its service, here one that only counts."""

    def __init__(self) -> None:
        self.count = 0
        self.session_by_id: dict[int, object] = {1: object()}
        self.service = self

    def on_session_message(self, session: object, timestamp: int, buffer: object, offset: int, length: int,
                           header: object) -> None:
        self.count += 1


def entry(length: int) -> bytes:
    message = bytearray(32 + length)
    encoder = codecs.SessionMessageHeaderEncoder().wrap_and_apply_header(message, 0)
    encoder.leadership_term_id, encoder.cluster_session_id, encoder.timestamp = 0, 1, 1
    encoder.release()
    return bytes(message)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=50_000)
    parser.add_argument("--length", type=int, default=32, help="payload bytes after the 32-byte session header")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    message = entry(args.length)
    # one image position: each run appends a batch for each path and reads it, the paths' order alternating
    results: dict[str, list[float]] = {"adapter": [], "floor": []}
    driver_ctx = DriverContext(environ={}, threading_mode="SHARED", shared_idle_strategy="backoff",
                               ipc_term_buffer_length=TERM_LENGTH)
    with MediaDriver.launch_embedded(driver_ctx) as driver, Aeron.connect(Context(driver.aeron_dir)) as client:
        subscription = client.add_subscription("aeron:ipc", 100)
        publication = client.add_exclusive_publication(f"aeron:ipc?term-length={TERM_LENGTH}", 100)
        while subscription.image_count == 0:
            time.sleep(0.001)
        image = subscription.image_at_index(0)
        agent = CountingAgent()
        adapter = BoundedLogAdapter(agent, 50)      # type: ignore[arg-type]
        adapter.image = image
        counted = [0]

        def floor_handler(buffer: object, offset: int, length: int, header: object) -> int:
            counted[0] += 1
            return CONTINUE

        def append() -> None:
            for _ in range(args.messages):
                while publication.offer(message) < 0:
                    image.poll(lambda *a: None, 0)

        def run_adapter() -> float:
            agent.count = 0
            start = time.perf_counter()
            while agent.count < args.messages:
                adapter.poll(publication.position)
            return time.perf_counter() - start

        def run_floor() -> float:
            counted[0] = 0
            start = time.perf_counter()
            while counted[0] < args.messages:
                image.bounded_controlled_poll(floor_handler, publication.position, 50)
            return time.perf_counter() - start

        for run in range(args.runs):
            order = (("adapter", run_adapter), ("floor", run_floor))
            for name, timed in (order if run % 2 == 0 else order[::-1]):
                append()
                results[name].append(timed() / args.messages * 1e9)
        adapter.image = None
    adapter_ns, floor_ns = statistics.median(results["adapter"]), statistics.median(results["floor"])
    print(f"{args.messages} session messages of {args.length} B, median of {args.runs} runs")
    print(f"  BoundedLogAdapter to a service that counts: {adapter_ns:7.0f} ns/msg")
    print(f"  floor (a Python handler that counts):       {floor_ns:7.0f} ns/msg")
    print(f"  adapter / floor: {adapter_ns / floor_ns:.2f}")


if __name__ == "__main__":
    main()
