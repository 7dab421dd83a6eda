# SPDX-License-Identifier: Apache-2.0
"""Port of the C sample cpong: echoes every ping back on the pong channel until SIGINT.

    python -m aeron.samples.pong [-C uri] [-c uri] [-p|--dir prefix] [-S stream-id] [-s stream-id]
                                 [--idle strategy]

Spins on the ping image, as cpong does (one spinning thread); ``--idle wakeup`` parks until a ping arrives.
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from aeron.client import ImageFragmentAssembler
from aeron.samples import _common as c


def main(argv: Sequence[str] | None = None) -> int:
    args = c.parser("pong", "cCpsSi").parse_args(argv)
    ping_channel = args.channel or c.DEFAULT_PING_CHANNEL
    ping_stream_id = c.DEFAULT_PING_STREAM_ID if args.stream_id is None else args.stream_id
    running = c.Running().install()
    print(f"Subscribing Ping at channel {ping_channel} on Stream ID {ping_stream_id}")
    print(f"Publishing Pong at channel {args.pong_channel} on Stream ID {args.pong_stream_id}", flush=True)
    with c.connect(args.prefix) as client:
        subscription = client.add_subscription(ping_channel, ping_stream_id, c.print_available_image,
                                               c.print_unavailable_image)
        print(f"Subscription channel status {c.uint64(c.channel_status(subscription))}")
        publication = client.add_exclusive_publication(args.pong_channel, args.pong_stream_id)
        print(f"Publication channel status {c.uint64(c.channel_status(publication))}", flush=True)
        while running and not (subscription.is_connected and publication.is_connected):
            time.sleep(0.001)
        image = c.wait_for_image(subscription, running)
        if image is None:
            return 0
        offer = publication.offer

        def echo(buffer: Any, offset: int, length: int, header: Any) -> None:
            # the received frame's memory is offered straight back: no copy in Python
            while offer(buffer, offset, length) < 0:
                if not running:
                    return

        handler = ImageFragmentAssembler(echo)
        poll = image.poll
        limit = c.DEFAULT_FRAGMENT_COUNT_LIMIT
        idle = c.idle_strategy(client, args.idle, subscription).idle
        while running:
            idle(poll(handler, limit))
        print("Shutting down...", flush=True)
    return 0


if __name__ == "__main__":
    c.main_guard(main)
