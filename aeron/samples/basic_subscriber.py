# SPDX-License-Identifier: Apache-2.0
"""Port of the C sample basic_subscriber: prints every assembled message until SIGINT.

    python -m aeron.samples.basic_subscriber [-c uri] [-p|--dir prefix] [-s stream-id]
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from aeron.client import FragmentAssembler
from aeron.samples import _common as c


def main(argv: Sequence[str] | None = None) -> int:
    args = c.parser("basic_subscriber", "cps").parse_args(argv)
    channel, stream_id = c.channel_and_stream_id(args)
    running = c.Running().install()
    print(f"Subscribing to channel {channel} on Stream ID {stream_id}", flush=True)
    with c.connect(args.prefix) as client:
        subscription = c.add_subscription(client, channel, stream_id)

        def on_message(buffer: Any, offset: int, length: int, header: Any) -> None:
            text = buffer.get_bytes(offset, length).decode("utf-8", "replace")
            c.println(f"Message to stream {stream_id} from session {header.session_id} ({length} bytes) <<{text}>>")

        assembler = FragmentAssembler(on_message)
        while running:
            if subscription.poll(assembler, c.DEFAULT_FRAGMENT_COUNT_LIMIT) == 0:
                time.sleep(0.001)           # the C sample's 1 ms sleeping idle
        c.println("Shutting down...")
    return 0


if __name__ == "__main__":
    c.main_guard(main)
