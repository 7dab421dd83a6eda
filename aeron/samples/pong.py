# SPDX-License-Identifier: Apache-2.0
"""Port of the C sample cpong: echoes every ping back on the pong channel until SIGINT.

    python -m aeron.samples.pong [-C uri] [-c uri] [-p|--dir prefix] [-S stream-id] [-s stream-id]
                                 [--idle strategy]

Waits for each ping with ``--idle auto`` by default: on a media driver of ours it parks until a ping arrives
(``wakeup``), on ``aeronmd`` or Aeron's Java driver it spins on the ping image as cpong does (one spinning
thread), and so it does on ours while an official client is connected to it (its IPC offers wake nobody).
``--idle spin``, ``--idle wakeup`` or any other name choose.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aeron.client import ImageFragmentAssembler
from aeron.samples import _common as c


def main(argv: Sequence[str] | None = None) -> int:
    args = c.parser("pong", "cCpsSi").parse_args(argv)
    ping_channel, ping_stream_id = c.channel_and_stream_id(args, c.DEFAULT_PING_CHANNEL, c.DEFAULT_PING_STREAM_ID)
    running = c.Running().install()
    print(f"Subscribing Ping at channel {ping_channel} on Stream ID {ping_stream_id}")
    print(f"Publishing Pong at channel {args.pong_channel} on Stream ID {args.pong_stream_id}", flush=True)
    with c.connect(args.prefix) as client:
        subscription = c.add_subscription(client, ping_channel, ping_stream_id)
        publication = client.add_exclusive_publication(args.pong_channel, args.pong_stream_id)
        print(f"Publication channel status {c.uint64(c.channel_status(publication))}", flush=True)
        idle_strategy = c.idle_strategy(client, args.idle, subscription)
        image = c.wait_for_ping_pong(subscription, publication, running, c.parking(idle_strategy))
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
        c.poll_while_running(poll, handler, limit, running, idle_strategy)
        print("Shutting down...", flush=True)
    return 0


if __name__ == "__main__":
    c.main_guard(main)
