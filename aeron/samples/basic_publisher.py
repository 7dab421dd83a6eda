# SPDX-License-Identifier: Apache-2.0
"""Port of the C sample basic_publisher: offers "Hello World! <n>" once a second and prints each outcome.

    python -m aeron.samples.basic_publisher [-f] [-c uri] [-l linger] [-m messages] [-p|--dir prefix] [-s stream-id]
"""
from __future__ import annotations

import time
from collections.abc import Sequence

from aeron.samples import _common as c


def build_large_message(length: int) -> bytes:
    """The C sample's -f message: numbered lines of text filling ``length`` bytes."""
    length = max(2, length)
    out = bytearray(b"\n")
    line = 0
    while len(out) < length:
        out += f"[{line:3d}] This is a line of text fill out a large message to test whether large MTUs cause " \
               f"issues...\n".encode()
        line += 1
    return bytes(out[:length])


def main(argv: Sequence[str] | None = None) -> int:
    args = c.parser("basic_publisher", "clmpsf").parse_args(argv)
    channel, stream_id = c.channel_and_stream_id(args)
    running = c.Running().install()
    print(f"Publishing to channel {channel} on Stream ID {stream_id}", flush=True)
    with c.connect(args.prefix) as client:
        publication = client.add_publication(channel, stream_id)
        print(f"Publication channel status {c.uint64(c.channel_status(publication))}", flush=True)
        large = None
        if args.fill_mtu:
            large = build_large_message(publication.max_payload_length)
            print(f"Using message of {len(large)} bytes", flush=True)
        i = 0
        while i < args.messages and running:
            message = large if large is not None else f"Hello World! {i}".encode()
            print(f"offering {i}/{args.messages} - ", end="", flush=True)
            result = publication.offer(message)
            if result > 0:
                print("yay!")
            elif result == publication.BACK_PRESSURED:
                print("Offer failed due to back pressure")
            elif result == publication.NOT_CONNECTED:
                print("Offer failed because publisher is not connected to a subscriber")
            elif result == publication.ADMIN_ACTION:
                print("Offer failed because of an administration action in the system")
            elif result == publication.CLOSED:
                print("Offer failed because publication is closed")
            else:
                print(f"Offer failed due to unknown reason {result}")
            if not publication.is_connected:
                print("No active subscribers detected")
            print(end="", flush=True)
            i += 1
            deadline = time.monotonic() + 1.0
            while running and time.monotonic() < deadline:
                time.sleep(0.01)
        print("Done sending.", flush=True)
        if args.linger_ns > 0:
            print(f"Lingering for {args.linger_ns} nanoseconds", flush=True)
            time.sleep(args.linger_ns / 1e9)
        publication.close()
    return 0


if __name__ == "__main__":
    c.main_guard(main)
