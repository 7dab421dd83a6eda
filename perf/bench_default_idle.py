# SPDX-License-Identifier: Apache-2.0
"""Our samples' default idle strategy (``--idle auto``: wakeup on a media driver of ours; docs/wakeup.md) against the
strategy that was their default before (``--idle spin``, as cping/cpong; ``sleep-ms`` for basic_subscriber) and
against naming ``--idle wakeup``, interleaved in one run on one driver of ours (its default idle strategy, SHARED):

    .venv/bin/python perf/bench_default_idle.py [--rounds 3] [--pings 5000] [--idle-seconds 5]

  * idle: a pong (and a basic_subscriber) connected to a client in this process that sends nothing: the CPU % of
    its process over ``--idle-seconds`` (the scheduler's count, summed over its threads) and its sleeps a second
    (voluntary context switches);
  * round trip: our ping against our pong, both with the case's ``--idle``, over IPC and UDP: p50/p90/p99 in µs;
  * with AERON_C_BIN, the official cping against our pong (default, and ``--idle wakeup``), IPC: an official client
    on our driver, whose offers wake nobody; the default goes back to spinning while it is connected.

Prints one table row per measurement and round, and the machine's load average beside each round.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid

ROOT = pathlib.Path(__file__).resolve().parent.parent
PY = sys.executable


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AERON_")}
    env["PYTHONPATH"] = str(ROOT)
    return env


def _port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate(timeout=5)


def _start_driver() -> tuple[subprocess.Popen, str]:
    aeron_dir = f"/dev/shm/aeron-bench-default-idle-{uuid.uuid4().hex[:8]}"
    proc = subprocess.Popen([PY, "-m", "aeron.driver", f"aeron.dir={aeron_dir}", "aeron.dir.delete.on.start=true",
                             "aeron.dir.delete.on.shutdown=true", "aeron.threading.mode=SHARED"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env())
    deadline = time.monotonic() + 30
    while not os.path.exists(os.path.join(aeron_dir, "cnc.dat")):
        if proc.poll() is not None or time.monotonic() > deadline:
            _stop(proc)
            raise RuntimeError("our driver did not start")
        time.sleep(0.05)
    time.sleep(0.5)
    return proc, aeron_dir


def _cpu_ns(pid: int) -> int:
    total = 0
    for task in pathlib.Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError):
            continue
    return total


def _sleeps(pid: int) -> int:
    total = 0
    for task in pathlib.Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int(re.search(r"^voluntary_ctxt_switches:\s+(\d+)", (task / "status").read_text(), re.M)[1])
        except (OSError, TypeError):
            continue
    return total


def _idle_args(idle: str) -> list[str]:
    return [] if idle == "default" else ["--idle", idle]


def idle_cost(aeron_dir: str, sample: str, idle: str, seconds: float) -> tuple[float, float]:
    """CPU % and sleeps a second of ``sample`` (pong or basic_subscriber) connected to a client of this process
    that sends nothing."""
    from aeron import Aeron, Context
    channel = "aeron:ipc"
    args = ["-p", aeron_dir, "-c", channel] + (["-C", channel] if sample == "pong" else [])
    proc = subprocess.Popen([PY, "-m", f"aeron.samples.{sample}", *args, *_idle_args(idle)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=_env())
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith(b"Subscription channel status"):
                break
        with Aeron.connect(Context(aeron_dir)) as client:
            stream = 1002 if sample == "pong" else 1001
            pub = client.add_exclusive_publication(channel, stream)
            sub = client.add_subscription(channel, 1003) if sample == "pong" else None
            deadline = time.monotonic() + 20
            while not (pub.is_connected and (sub is None or sub.image_count)) and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(1.0)
            cpu, sleeps = _cpu_ns(proc.pid), _sleeps(proc.pid)
            time.sleep(seconds)
            return (100.0 * (_cpu_ns(proc.pid) - cpu) / 1e9 / seconds, (_sleeps(proc.pid) - sleeps) / seconds)
    finally:
        _stop(proc)


_streams = 3000


def round_trip(aeron_dir: str, ping: list[str], pong: list[str], transport: str, pings: int,
               timeout: float = 180.0) -> tuple[float, ...]:
    if transport == "ipc":
        ping_channel = pong_channel = "aeron:ipc"
    else:
        ping_channel, pong_channel = (f"aeron:udp?endpoint=127.0.0.1:{_port()}", f"aeron:udp?endpoint=127.0.0.1:"
                                                                                 f"{_port()}")
    # streams of its own: a ping stopped by the timeout leaves its publication in the driver until its client's
    # liveness timeout, and the next pong would take that one's image as the ping's
    global _streams
    _streams += 2
    args = ["-p", aeron_dir, "-c", ping_channel, "-C", pong_channel, "-s", str(_streams), "-S", str(_streams + 1)]
    pong_proc = subprocess.Popen([*pong, *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=_env())
    try:
        assert pong_proc.stdout is not None
        for line in pong_proc.stdout:
            if line.startswith(b"Publication channel status"):
                break
        try:
            out = subprocess.run([*ping, *args, "-m", str(pings), "-w", str(max(500, pings // 4)), "-L", "32"],
                                 capture_output=True, text=True, timeout=timeout, env=_env()).stdout
        except subprocess.TimeoutExpired:
            print(f"# no histogram within {timeout:.0f} s: {' '.join(ping[-3:])} against {' '.join(pong[-3:])} "
                  f"over {transport}", flush=True)
            return (float("nan"),) * 3
    finally:
        _stop(pong_proc)
    rows = [(float(v), float(p) * 100.0) for v, p in re.findall(r"^\s*(\d+\.\d+)\s+(\d\.\d+)\s+\d+", out, re.M)]
    if not rows:
        raise RuntimeError(f"no histogram in the ping's output: {out}")
    return tuple(next(v for v, p in rows if p >= t - 1e-9) for t in (50.0, 90.0, 99.0))


def _sample(name: str, idle: str) -> list[str]:
    return [PY, "-m", f"aeron.samples.{name}", *_idle_args(idle)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pings", type=int, default=5000)
    parser.add_argument("--idle-seconds", type=float, default=5.0)
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds a ping may take (two spinning "
                        "processes on a busy machine can take minutes: the row then shows nan)")
    parser.add_argument("--no-cping", action="store_true", help="skip the official cping even with AERON_C_BIN")
    args = parser.parse_args(argv)
    c_bin = None if args.no_cping else os.environ.get("AERON_C_BIN")
    driver, aeron_dir = _start_driver()
    try:
        print(f"{'round':>5} {'load':>5}  {'measurement':<44} {'default':>22} {'before':>22} {'--idle wakeup':>22}")
        for r in range(1, args.rounds + 1):
            load = os.getloadavg()[0]
            for sample, before in (("pong", "spin"), ("basic_subscriber", "sleep-ms")):
                cells = []
                for idle in ("default", before, "wakeup"):
                    cpu, sleeps = idle_cost(aeron_dir, sample, idle, args.idle_seconds)
                    cells.append(f"{cpu:6.2f} % {sleeps:7.0f}/s")
                print(f"{r:>5} {load:5.1f}  {'idle ' + sample + ' (CPU, sleeps), before ' + before:<44} "
                      + " ".join(f"{c:>22}" for c in cells), flush=True)
            for transport in ("ipc", "udp"):
                cells = []
                for idle in ("default", "spin", "wakeup"):
                    p = round_trip(aeron_dir, _sample("ping", idle), _sample("pong", idle), transport, args.pings,
                                   args.timeout)
                    cells.append("/".join(f"{v:.1f}" for v in p))
                print(f"{r:>5} {load:5.1f}  {'ping-pong ' + transport + ' p50/p90/p99 us, before spin':<44} "
                      + " ".join(f"{c:>22}" for c in cells), flush=True)
            if c_bin:
                cping = [os.path.join(c_bin, "cping")]
                cells = [("/".join(f"{v:.1f}" for v in round_trip(aeron_dir, cping, _sample("pong", idle), "ipc",
                                                                   args.pings, args.timeout)))
                         for idle in ("default", "spin", "wakeup")]
                print(f"{r:>5} {load:5.1f}  {'cping -> our pong ipc p50/p90/p99 us':<44} "
                      + " ".join(f"{c:>22}" for c in cells), flush=True)
    finally:
        _stop(driver)
        shutil.rmtree(aeron_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
