# SPDX-License-Identifier: Apache-2.0
"""Port of the C sample basic_subscriber: prints every assembled message until SIGINT.

    python -m aeron.samples.basic_subscriber [-c uri] [-p|--dir prefix] [-s stream-id] [--idle strategy]

Waits for messages with ``--idle auto`` by default: on a media driver of ours it parks until one arrives
(``wakeup``), on ``aeronmd`` or Aeron's Java driver it sleeps 1 ms whenever a poll finds nothing, as the C sample
does, and so it does on ours while an official client is connected to it on an IPC or spy channel (its offers
wake nobody). ``--idle sleep-ms``, ``--idle wakeup`` or any other name choose.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aeron.client import FragmentAssembler
from aeron.samples import _common as c


def main(argv: Sequence[str] | None = None) -> int:
    args = c.parser("basic_subscriber", "cpsi", idle_fallback="sleep-ms").parse_args(argv)
    channel, stream_id = c.channel_and_stream_id(args)
    running = c.Running().install()
    print(f"Subscribing to channel {channel} on Stream ID {stream_id}", flush=True)
    with c.connect(args.prefix) as client:
        subscription = c.add_subscription(client, channel, stream_id)

        def on_message(buffer: Any, offset: int, length: int, header: Any) -> None:
            text = buffer.get_bytes(offset, length).decode("utf-8", "replace")
            c.println(f"Message to stream {stream_id} from session {header.session_id} ({length} bytes) <<{text}>>")

        assembler = FragmentAssembler(on_message)
        # sleep-ms, the fallback of auto, is the C sample's 1 ms sleep after a poll that found nothing
        idle = c.idle_strategy(client, args.idle, subscription, fallback="sleep-ms").idle
        while running:
            idle(subscription.poll(assembler, c.DEFAULT_FRAGMENT_COUNT_LIMIT))
        c.println("Shutting down...")
    return 0


if __name__ == "__main__":
    c.main_guard(main)
