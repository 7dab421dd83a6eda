# SPDX-License-Identifier: Apache-2.0
"""Which threading mode should our GIL-bound driver default to? Each mode measured in one run, interleaved.

    .venv/bin/python perf/bench_threading.py [--runs 3] [--quick] [--idle backoff]

For SHARED, SHARED_NETWORK and DEDICATED (INVOKER needs an application driving it, so it cannot be a standalone
driver's default): our driver as its own process with ``aeron.threading.mode=<mode>`` and every agent's idle
strategy ``--idle`` (backoff, Aeron's default), our Python sample clients:
  * stream: ``streaming_publisher`` → ``rate_subscriber``, 32 B, over IPC and over UDP loopback (msg/s);
  * rtt: ``ping`` ↔ ``pong`` (busy-spinning clients), 32 B, over IPC and UDP (µs percentiles).
Median of ``--runs``; results in perf/results/threading.json. The choice and its reasons: docs/performance.md.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
import uuid

from bench_ipc import RESULTS, _clients, _env, rtt, stream

MODES = ("SHARED", "SHARED_NETWORK", "DEDICATED")


def _port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class OurDriver:
    def __init__(self, mode: str, idle: str) -> None:
        self.dir = f"/dev/shm/aeron-bench-mode-{uuid.uuid4().hex[:8]}"
        args = [sys.executable, "-m", "aeron.driver", f"aeron.dir={self.dir}", "aeron.dir.delete.on.start=true",
                "aeron.dir.delete.on.shutdown=true", f"aeron.threading.mode={mode}"]
        args += [f"aeron.{agent}.idle.strategy={idle}" for agent in
                 ("shared", "sharednetwork", "conductor", "sender", "receiver")]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env())
        deadline = time.monotonic() + 20
        while not os.path.exists(os.path.join(self.dir, "cnc.dat")):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError(f"driver in {mode} did not start")
            time.sleep(0.05)
        time.sleep(0.5)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        shutil.rmtree(self.dir, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="smaller message counts")
    parser.add_argument("--idle", default="backoff", help="idle strategy of every driver agent")
    args = parser.parse_args(argv)
    scale = 0.25 if args.quick else 1.0
    clients = _clients("py", None)
    cases = [("ipc-stream", "stream", "ipc", int(4e6 * scale)), ("udp-stream", "stream", "udp", int(2e6 * scale)),
             ("ipc-rtt", "rtt", "ipc", int(40e3 * scale)), ("udp-rtt", "rtt", "udp", int(4e3 * scale))]
    samples: dict[str, dict[str, list]] = {name: {mode: [] for mode in MODES} for name, *_ in cases}
    for run in range(args.runs):
        for name, what, transport, count in cases:
            for mode in MODES:              # interleaved: background noise hits every mode alike
                channel = "aeron:ipc" if transport == "ipc" else f"aeron:udp?endpoint=127.0.0.1:{_port()}"
                pong_channel = "aeron:ipc" if transport == "ipc" else f"aeron:udp?endpoint=127.0.0.1:{_port()}"
                driver = OurDriver(mode, args.idle)
                try:
                    if what == "stream":
                        value: object = stream(driver, clients, count, 32, channel)     # type: ignore[arg-type]
                    else:
                        value = rtt(driver, clients, count, max(500, count // 10),        # type: ignore[arg-type]
                                    (channel, pong_channel))
                finally:
                    driver.close()
                samples[name][mode].append(value)
                print(f"run {run + 1} {name:11s} {mode:15s} {_fmt(value)}", flush=True)
    results: dict[str, dict[str, object]] = {}
    print()
    for name, what, *_ in cases:
        for mode in MODES:
            values = samples[name][mode]
            results.setdefault(name, {})[mode] = (statistics.median(values) if what == "stream" else
                                                  {str(p): statistics.median(v[p] for v in values) for p in values[0]})
            print(f"{name:11s} {mode:15s} {_fmt(results[name][mode])}")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "threading.json").write_text(json.dumps({"idle": args.idle, "runs": args.runs, "results": results},
                                                       indent=1))
    return 0


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value / 1e6:.3f} M msg/s"
    return " ".join(f"p{float(p):g} {v:.1f}" for p, v in value.items()) + " µs"    # type: ignore[attr-defined]


if __name__ == "__main__":
    sys.exit(main())
