# SPDX-License-Identifier: Apache-2.0
"""UDP loopback benchmark, side by side in one run: our driver vs the official `aeronmd`, same clients.

    .venv/bin/python perf/bench_udp.py [--runs 3] [--quick] [--stream-only]     (official parts need AERON_C_BIN)

Cases (median of ``--runs``, interleaved, ratios ours/aeronmd): official `streaming_publisher` →
`rate_subscriber` over `aeron:udp?endpoint=127.0.0.1:<port>` with 32 B and 1 KiB messages; `cping` ↔ `cpong`
RTT percentiles; the same with our Python samples. Both drivers: SHARED threading mode, `backoff` idle, default
16 MiB terms, one driver holding both ends (data crosses loopback UDP twice for ping-pong). Spinning threads: the
two sample clients (2); the driver thread backs off. The raw socket floor is perf/bench_udp_raw.py.
Results: perf/results/udp.json. Targets (docs/roadmap.md): stream >= 0.8x aeronmd, RTT <= 1.5x aeronmd.
"""
from __future__ import annotations

import argparse
import socket
import sys

from bench_ipc import run_cases


def _port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="smaller message counts")
    parser.add_argument("--stream-only", action="store_true", help="only the streaming cases")
    args = parser.parse_args(argv)
    scale = 0.25 if args.quick else 1.0
    cases = [("udp-stream-C-32B", "C", "stream", int(4e6 * scale), 32),
             ("udp-stream-C-1KiB", "C", "stream", int(1e6 * scale), 1024),
             ("udp-rtt-C-32B", "C", "rtt", int(2e3 * scale), 200),
             ("udp-stream-py-32B", "py", "stream", int(2e6 * scale), 32),
             ("udp-rtt-py-32B", "py", "rtt", int(2e3 * scale), 200)]
    if args.stream_only:
        cases = [case for case in cases if case[2] == "stream"]
    data = f"aeron:udp?endpoint=127.0.0.1:{_port()}"
    pings = (f"aeron:udp?endpoint=127.0.0.1:{_port()}", f"aeron:udp?endpoint=127.0.0.1:{_port()}")
    return run_cases(cases, args.runs, "udp", data, pings,
                     "targets: stream >= 0.8x aeronmd, RTT p50/p99 <= 1.5x aeronmd (docs/roadmap.md)")


if __name__ == "__main__":
    sys.exit(main())
