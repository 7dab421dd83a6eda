# SPDX-License-Identifier: Apache-2.0
"""Port of the C sample streaming_publisher: offers as fast as it can, reporting the rate every second.

    python -m aeron.samples.streaming_publisher [-c uri] [-L length] [-l linger] [-m messages] [-p|--dir prefix]
                                                [-s stream-id]

Spins on back pressure, as the C sample does (one spinning thread plus the 1 s rate reporter).
"""
from __future__ import annotations

import time
from collections.abc import Sequence

from aeron.samples import _common as c


def main(argv: Sequence[str] | None = None) -> int:
    args = c.parser("streaming_publisher", "cLlmps").parse_args(argv)
    channel, stream_id = c.channel_and_stream_id(args)
    if args.length < 8:
        print("message length must be at least 8 bytes (it carries the sequence number)")
        return 1
    running = c.Running().install()
    message = bytearray(args.length)
    print(f"Streaming {args.messages} messages of payload length {args.length} bytes to {channel} on stream id "
          f"{stream_id}", flush=True)
    with c.connect(args.prefix) as client:
        publication = client.add_publication(channel, stream_id)
        # PRId64 here, unlike the other C samples (PRIu64): IPC prints -1
        print(f"Publication channel status {c.channel_status(publication)}", flush=True)
        reporter = c.RateReporter().start()
        sequence = memoryview(message).cast("q")
        offer = publication.offer
        back_pressure = 0
        sent = 0
        length = args.length
        start = time.perf_counter_ns()
        for i in range(args.messages):
            if not running:
                break
            sequence[0] = i
            while offer(message) < 0:
                back_pressure += 1
                if not running:
                    break
            sent += 1
            # the reporter's counters, updated in place (RateReporter.on_message without the call)
            reporter.total_messages += 1
            reporter.total_bytes += length
        duration = max(1, time.perf_counter_ns() - start)
        print("Done sending.")
        reporter.halt()
        print(f"Publisher back pressure ratio {back_pressure / max(1, sent):g}")
        print(f"Total: {duration // 1_000_000}ms, {sent * 1e9 / duration:.4g} msgs/sec, "
              f"{sent * length * 1e9 / duration:.4g} bytes/sec, totals {sent} messages "
              f"{sent * length // (1024 * 1024)} MB payloads", flush=True)
        if args.linger_ns > 0:
            print(f"Lingering for {args.linger_ns} nanoseconds", flush=True)
            time.sleep(args.linger_ns / 1e9)
    return 0


if __name__ == "__main__":
    c.main_guard(main)
