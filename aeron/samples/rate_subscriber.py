# SPDX-License-Identifier: Apache-2.0
"""Port of the C sample rate_subscriber: counts messages and reports the rate every second until SIGINT.

    python -m aeron.samples.rate_subscriber [-c uri] [-f limit] [-p|--dir prefix] [-s stream-id] [--idle strategy]

Waits for messages with ``--idle auto`` by default: on a media driver of ours it parks when a poll finds nothing
(``wakeup``), on ``aeronmd`` or Aeron's Java driver it spins on the subscription as the C sample does (one spinning
thread plus the 1 s rate reporter), and so it does on ours while an official client is connected to it on an IPC
or spy channel (its offers wake nobody). ``--idle spin``, ``--idle wakeup`` or any other name choose.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aeron.client import FragmentAssembler
from aeron.samples import _common as c


class _Counter:
    __slots__ = ("reporter",)

    def __init__(self, reporter: c.RateReporter) -> None:
        self.reporter = reporter

    def __call__(self, buffer: Any, offset: int, length: int, header: Any) -> None:
        reporter = self.reporter
        reporter.total_messages += 1
        reporter.total_bytes += length


def main(argv: Sequence[str] | None = None) -> int:
    args = c.parser("rate_subscriber", "cFpsi").parse_args(argv)
    channel, stream_id = c.channel_and_stream_id(args)
    running = c.Running().install()
    print(f"Subscribing to channel {channel} on Stream ID {stream_id}", flush=True)
    with c.connect(args.prefix) as client:
        subscription = c.add_subscription(client, channel, stream_id)
        reporter = c.RateReporter().start()
        handler = FragmentAssembler(_Counter(reporter))
        poll = subscription.poll
        limit = args.fragment_limit
        idle_strategy = c.idle_strategy(client, args.idle, subscription)
        c.poll_while_running(poll, handler, limit, running, idle_strategy)
        print("Shutting down...", flush=True)
        reporter.halt()
    return 0


if __name__ == "__main__":
    c.main_guard(main)
