# SPDX-License-Identifier: Apache-2.0
"""IPC benchmark, side by side in one run: our driver vs the official `aeronmd`, with the same clients.

    .venv/bin/python perf/bench_ipc.py [--runs 3] [--quick]        (official parts need AERON_C_BIN)

Cases, each run ``--runs`` times per driver, median reported, ratios ours/aeronmd:
  * stream-C-32B / stream-C-1KiB: official `streaming_publisher` → `rate_subscriber` (msg/s from the
    publisher's "Total:" line);
  * rtt-C-32B: official `cping` ↔ `cpong` (p50/p90/p99/p99.9 from cping's histogram);
  * stream-py-32B: our `aeron.samples.streaming_publisher` → `rate_subscriber` (Python clients);
  * rtt-py-32B: our `aeron.samples.ping` ↔ `pong`.
Both drivers: SHARED threading mode, `backoff` idle (one thread that parks when idle), default IPC term length
(64 MiB), each in its own /dev/shm directory. Spinning threads: the two sample clients busy-spin (2 threads);
Python clients also run a client conductor thread each that sleeps 16 ms between duty cycles.
Results: perf/results/ipc.json.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
import uuid

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AERON_")}
    env["PYTHONPATH"] = str(ROOT)
    return env


class Driver:
    def __init__(self, kind: str, bin_dir: str | None) -> None:
        self.kind = kind
        self.dir = f"/dev/shm/aeron-bench-{kind}-{uuid.uuid4().hex[:8]}"
        env = _env()
        if kind == "ours":
            args = [sys.executable, "-m", "aeron.driver", f"aeron.dir={self.dir}", "aeron.dir.delete.on.start=true",
                    "aeron.dir.delete.on.shutdown=true", "aeron.threading.mode=SHARED",
                    "aeron.shared.idle.strategy=backoff"]
        else:
            args = [os.path.join(bin_dir or "", "aeronmd")]
            env.update(AERON_DIR=self.dir, AERON_DIR_DELETE_ON_START="1", AERON_DIR_DELETE_ON_SHUTDOWN="1",
                       AERON_THREADING_MODE="SHARED", AERON_SHARED_IDLE_STRATEGY="backoff")
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        deadline = time.monotonic() + 15
        cnc = os.path.join(self.dir, "cnc.dat")
        while True:
            try:
                with open(cnc, "rb") as f:
                    if f.read(4) not in (b"", b"\0\0\0\0"):
                        break
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError(f"{kind} driver did not start")
            time.sleep(0.05)
        time.sleep(0.3)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc.stderr.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def _popen(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen(["stdbuf", "-oL", *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=_env())


def _stop(proc: subprocess.Popen) -> str:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        out, _ = proc.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate(timeout=5)
    return out


def _clients(kind: str, bin_dir: str | None) -> dict[str, list[str]]:
    if kind == "C":
        return {name: [os.path.join(bin_dir or "", exe)] for name, exe in (
            ("publisher", "streaming_publisher"), ("subscriber", "rate_subscriber"), ("ping", "cping"),
            ("pong", "cpong"))}
    # the subscriber, ping and pong spin, as the C ones do (their default on our driver parks instead)
    spin = {"subscriber", "ping", "pong"}
    return {name: [sys.executable, "-m", f"aeron.samples.{mod}", *(("--idle", "spin") if name in spin else ())]
            for name, mod in (("publisher", "streaming_publisher"), ("subscriber", "rate_subscriber"),
                              ("ping", "ping"), ("pong", "pong"))}


def stream(driver: Driver, clients: dict[str, list[str]], messages: int, length: int,
           channel: str = "aeron:ipc") -> float:
    sub = _popen([*clients["subscriber"], "-p", driver.dir, "-c", channel])
    try:
        time.sleep(0.5)
        pub = subprocess.run([*clients["publisher"], "-p", driver.dir, "-c", channel, "-m", str(messages), "-L",
                              str(length)], capture_output=True, text=True, timeout=300, env=_env())
    finally:
        _stop(sub)
    found = re.search(r"Total: \d+ms, ([\d.e+]+) msgs/sec", pub.stdout)
    if not found:
        raise RuntimeError(f"no total in publisher output: {pub.stdout} {pub.stderr}")
    return float(found[1])


_TARGETS = (50.0, 90.0, 99.0, 99.9)


def rtt(driver: Driver, clients: dict[str, list[str]], messages: int, warm_up: int,
        channels: tuple[str, str] = ("aeron:ipc", "aeron:ipc")) -> dict[float, float]:
    args = ["-p", driver.dir, "-c", channels[0], "-C", channels[1]]
    pong = _popen([*clients["pong"], *args])
    try:
        time.sleep(0.5)
        ping = subprocess.run([*clients["ping"], *args, "-m", str(messages), "-w", str(warm_up), "-L", "32"],
                              capture_output=True, text=True, timeout=300, env=_env())
    finally:
        _stop(pong)
    rows = [(float(v), float(p) * 100.0) for v, p in
            re.findall(r"^\s*(\d+\.\d+)\s+(\d\.\d+)\s+\d+", ping.stdout, re.M)]
    if not rows:
        raise RuntimeError(f"no histogram in ping output: {ping.stdout} {ping.stderr}")
    out = {}
    for target in _TARGETS:
        out[target] = next((v for v, p in rows if p >= target - 1e-9), rows[-1][0])
    return out                                  # microseconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="smaller message counts")
    args = parser.parse_args(argv)
    scale = 0.2 if args.quick else 1.0
    cases = [("stream-C-32B", "C", "stream", int(60e6 * scale), 32),
             ("stream-C-1KiB", "C", "stream", int(10e6 * scale), 1024),
             ("rtt-C-32B", "C", "rtt", int(500e3 * scale), 50_000),
             ("stream-py-32B", "py", "stream", int(10e6 * scale), 32),
             ("rtt-py-32B", "py", "rtt", int(200e3 * scale), 20_000)]
    return run_cases(cases, args.runs, "ipc", "aeron:ipc", ("aeron:ipc", "aeron:ipc"),
                     "targets: stream >= 0.8x aeronmd (docs/roadmap.md)")


def run_cases(cases: list[tuple[str, str, str, int, int]], runs: int, name: str, channel: str,
              rtt_channels: tuple[str, str], targets: str) -> int:
    """Run each case on each driver ``runs`` times (interleaved), print medians and ratios, save JSON."""
    bin_dir = os.environ.get("AERON_C_BIN")
    have_c = bool(bin_dir) and os.access(os.path.join(bin_dir or "", "aeronmd"), os.X_OK)
    drivers = ["ours", "aeronmd"] if have_c else ["ours"]
    if not have_c:
        cases = [c for c in cases if c[1] != "C"]
        print("AERON_C_BIN not set: official clients and aeronmd skipped")
    results: dict[str, dict[str, object]] = {}
    for case, client_kind, what, count, extra in cases:
        clients = _clients(client_kind, bin_dir)
        samples: dict[str, list] = {kind: [] for kind in drivers}
        for _ in range(runs):
            for kind in drivers:            # interleaved, so background noise hits both drivers alike
                driver = Driver(kind, bin_dir)
                try:
                    samples[kind].append(stream(driver, clients, count, extra, channel) if what == "stream"
                                         else rtt(driver, clients, count, extra, rtt_channels))
                finally:
                    driver.close()
        for kind in drivers:
            if what == "stream":
                value: object = statistics.median(samples[kind])
            else:
                value = {t: statistics.median(s[t] for s in samples[kind]) for t in _TARGETS}
            results.setdefault(case, {})[kind] = value
            print(f"{case:15s} {kind:8s} {_fmt(value)}", flush=True)
    print()
    print(f"{'case':15s} {'ours':>34s} {'aeronmd':>34s} {'ours/aeronmd':>14s}")
    for case, by_driver in results.items():
        ours, theirs = by_driver.get("ours"), by_driver.get("aeronmd")
        if isinstance(ours, float):
            ratio = f"{ours / theirs:.2f}x msg/s" if isinstance(theirs, float) else "-"
        else:
            ratio = (f"p50 {ours[50.0] / theirs[50.0]:.2f}x p99 {ours[99.0] / theirs[99.0]:.2f}x"   # type: ignore[index]
                     if theirs else "-")
        print(f"{case:15s} {_fmt(ours):>34s} {_fmt(theirs):>34s} {ratio:>14s}")
    print("\nspinning threads: 2 (the two sample clients); drivers SHARED + backoff idle; median of "
          f"{runs} runs; {targets}")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(
        {k: {d: (v if isinstance(v, float) else {str(p): x for p, x in v.items()})   # type: ignore[union-attr]
             for d, v in by.items()} for k, by in results.items()}, indent=1))
    return 0


def _fmt(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value / 1e6:.2f} M msg/s"
    return " ".join(f"p{p:g} {v:.2f}" for p, v in value.items()) + " µs"     # type: ignore[attr-defined]


if __name__ == "__main__":
    sys.exit(main())
