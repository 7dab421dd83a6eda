# SPDX-License-Identifier: Apache-2.0
"""Port of the C sample cping: round-trip latency against a pong (``aeron.samples.pong`` or the official
``cpong``), printed as percentiles in microseconds.

    python -m aeron.samples.ping [-C uri] [-c uri] [-L length] [-m messages] [-p|--dir prefix] [-S stream-id]
                                 [-s stream-id] [-w messages] [--idle strategy]

Waits for each pong with ``--idle auto`` by default: on a media driver of ours it parks until the pong arrives
(``wakeup``: about the round trip of a spin, and an idle CPU), on ``aeronmd`` or Aeron's Java driver it spins as
cping does (one spinning thread here, one in the pong), and so it does on ours while an official client is
connected to it (its IPC offers wake nobody). ``--idle spin``, ``--idle wakeup`` or any other name choose.
"""
from __future__ import annotations

import time
from array import array
from collections.abc import Sequence
from typing import Any

from aeron.client import ImageFragmentAssembler
from aeron.samples import _common as c


class _PongHandler:
    """Records each round trip into a preallocated array: nothing allocated per message."""

    __slots__ = ("rtts", "count")

    def __init__(self, capacity: int) -> None:
        self.rtts = array("q", bytes(8 * max(1, capacity)))
        self.count = 0

    def __call__(self, buffer: Any, offset: int, length: int, header: Any) -> None:
        self.rtts[self.count] = time.perf_counter_ns() - buffer.get_i64(offset)
        self.count += 1


def send_ping_and_receive_pong(publication: Any, image: Any, handler: _PongHandler, poll_handler: Any,
                               messages: int, message: bytearray, running: c.Running, idle: Any = None) -> None:
    handler.count = 0
    offer = publication.offer
    poll = image.poll
    clock = time.perf_counter_ns
    stamp = memoryview(message).cast("q")       # the first 8 bytes carry the send time
    limit = c.DEFAULT_FRAGMENT_COUNT_LIMIT
    work = 0
    for i in range(messages):
        if not running:
            break
        stamp[0] = clock()
        while offer(message) < 0:
            stamp[0] = clock()
        if idle is None:
            while handler.count < i + 1:
                poll(poll_handler, limit)
        else:
            # the idle strategy hears of the poll that delivered the last pong only now, after this ping's offer:
            # off the round trip's path (with a wakeup strategy it prepares the park the next poll re-checks)
            if work:
                idle(work)
            while True:
                work = poll(poll_handler, limit)
                if handler.count > i:
                    break
                idle(work)


def main(argv: Sequence[str] | None = None) -> int:
    args = c.parser("ping", "cCLmpsSwi").parse_args(argv)
    ping_channel, ping_stream_id = c.channel_and_stream_id(args, c.DEFAULT_PING_CHANNEL, c.DEFAULT_PING_STREAM_ID)
    if args.length < 8:
        print("message length must be at least 8 bytes (it carries the timestamp)")
        return 1
    running = c.Running().install()
    print(f"Publishing Ping at channel {ping_channel} on Stream ID {ping_stream_id}")
    print(f"Subscribing Pong at channel {args.pong_channel} on Stream ID {args.pong_stream_id}", flush=True)
    with c.connect(args.prefix) as client:
        subscription = c.add_subscription(client, args.pong_channel, args.pong_stream_id)
        publication = client.add_exclusive_publication(ping_channel, ping_stream_id)
        print(f"Publication channel status {c.uint64(c.channel_status(publication))}", flush=True)
        idle_strategy = c.idle_strategy(client, args.idle, subscription)
        image = c.wait_for_ping_pong(subscription, publication, running, c.parking(idle_strategy))
        if image is None:
            return 1
        message = bytearray(args.length)
        handler = _PongHandler(max(args.messages, args.warm_up))
        poll_handler = handler if args.length <= publication.max_payload_length else ImageFragmentAssembler(handler)
        print(f"Warming up the media driver with {args.warm_up} messages of length {args.length} bytes", flush=True)
        start = time.perf_counter_ns()
        idle = None if idle_strategy is None else idle_strategy.idle
        send_ping_and_receive_pong(publication, image, handler, poll_handler, args.warm_up, message, running, idle)
        print(f"Warm up complete in {time.perf_counter_ns() - start}ns")
        print(f"Pinging {args.messages} messages of length {args.length} bytes", flush=True)
        send_ping_and_receive_pong(publication, image, handler, poll_handler, args.messages, message, running, idle)
        c.print_percentiles(handler.rtts[:handler.count])
        print("Shutting down...", flush=True)
    return 0


if __name__ == "__main__":
    c.main_guard(main)
