# SPDX-License-Identifier: Apache-2.0
"""Thread CPU of the media driver's whole duty cycle (conductor + sender + receiver, INVOKER), idle and per message,
with 1, 2 and 8 UDP streams; optionally against another checkout of the project in the same run.

    .venv/bin/python perf/bench_duty_cycle.py [--cycles 20000] [--streams 1,2,8] [--rounds 3]
                                              [--baseline /path/to/other/checkout]

An INVOKER driver and one client in one process; each stream is an exclusive publication and a subscription on
127.0.0.1 (a free port each, 64 KiB terms), all connected before the measure. ``idle``: one ``MediaDriver.do_work``
with nothing offered (every image and publication still looked at: rebuild tracking, status message intervals,
publisher limits, control polls). ``message``: 32 bytes offered on one of the streams in turn, a whole cycle (sent,
received, inserted), the subscription polled, a whole cycle again (its status message, the limit moved), as a ping
makes a driver do. Both in thread CPU time (time.thread_time_ns), in microseconds per cycle or per message; the
client's offer and poll are in the per-message figure, the same in both checkouts.

With ``--baseline`` each round runs the same measure in a child process of this script under the baseline checkout's
own interpreter (``<checkout>/.venv/bin/python``) and of this one, alternately, and prints the ratio of ours to it
(below 1: ours is cheaper). The machine's load is printed beside the figures: they are same-run ratios, not absolute.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
STREAM = 2001


def _port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def measure(streams: int, cycles: int) -> dict[str, float]:
    """One driver and client in this process: µs of thread CPU per idle whole cycle and per message."""
    sys.path.insert(0, os.getcwd())
    from aeron import Aeron, Context, MediaDriver
    from aeron.driver import Context as DriverContext

    base = "/dev/shm" if os.path.isdir("/dev/shm") else None
    tmp = tempfile.mkdtemp(prefix="duty-cycle-", dir=base)
    ctx = DriverContext(environ={}, threading_mode="INVOKER", aeron_dir=os.path.join(tmp, "d"))
    try:
        with MediaDriver.launch_embedded(ctx) as driver, \
                Aeron.connect(Context(driver.aeron_dir, use_conductor_agent_invoker=True)) as client:
            invoker = client.conductor_agent_invoker
            ids = []
            for i in range(streams):
                channel = f"aeron:udp?endpoint=127.0.0.1:{_port()}|term-length=64k"
                ids.append((client.async_add_subscription(channel, STREAM + i),
                            client.async_add_exclusive_publication(channel, STREAM + i)))
            subs: list = [None] * streams
            pubs: list = [None] * streams
            deadline = time.monotonic() + 60
            while not all(p is not None and s is not None and p.is_connected and s.image_count
                          for p, s in zip(pubs, subs)):
                if time.monotonic() > deadline:
                    raise RuntimeError("the streams did not connect")
                driver.do_work()
                invoker.invoke()
                for i, (sub_id, pub_id) in enumerate(ids):
                    subs[i] = subs[i] or client.get_subscription(sub_id)
                    pubs[i] = pubs[i] or client.get_exclusive_publication(pub_id)
                time.sleep(0.0005)
            for _ in range(200):
                driver.do_work()                # setups and the first status messages settled
                invoker.invoke()
            do_work = driver.do_work
            clock = time.thread_time_ns
            start = clock()
            for _ in range(cycles):
                do_work()
            idle = (clock() - start) / cycles / 1000
            payload = b"m" * 32
            received = [0]

            def on_fragment(buffer, offset, length, header):
                received[0] += 1

            messages = cycles // 2
            start = clock()
            for i in range(messages):
                k = i % streams
                pubs[k].offer(payload)
                do_work()
                subs[k].poll(on_fragment, 10)
                do_work()
            message = (clock() - start) / messages / 1000
            for _ in range(100):
                do_work()
                for sub in subs:
                    sub.poll(on_fragment, 10)
            if received[0] < messages * 9 // 10:
                raise RuntimeError(f"only {received[0]} of {messages} messages arrived")
            return {"idle_us": idle, "message_us": message}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _child(checkout: pathlib.Path, streams: int, cycles: int) -> dict[str, float]:
    python = checkout / ".venv" / "bin" / "python"
    out = subprocess.run([str(python), str(pathlib.Path(__file__).resolve()), "--child", str(streams),
                          "--cycles", str(cycles)], cwd=str(checkout), capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(checkout)}).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cycles", type=int, default=20000)
    parser.add_argument("--streams", default="1,2,8")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", type=pathlib.Path, help="another checkout of the project, built (.venv)")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(measure(args.child, args.cycles)))
        return
    checkouts = {"ours": ROOT}
    if args.baseline is not None:
        checkouts = {"baseline": args.baseline.resolve(), "ours": ROOT}
    print(f"load {os.getloadavg()[0]:.1f} at start; µs of thread CPU, median of {args.rounds} rounds")
    for streams in (int(s) for s in args.streams.split(",")):
        results: dict[str, list[dict[str, float]]] = {name: [] for name in checkouts}
        for _ in range(args.rounds):
            for name, checkout in checkouts.items():
                results[name].append(_child(checkout, streams, args.cycles))
        line = [f"streams {streams}:"]
        medians = {}
        for name, runs in results.items():
            medians[name] = {key: statistics.median(run[key] for run in runs) for key in ("idle_us", "message_us")}
            line.append(f"{name} idle {medians[name]['idle_us']:.2f} message {medians[name]['message_us']:.2f}")
        if "baseline" in medians:
            line.append("ratio idle {:.2f} message {:.2f}".format(
                *(medians["ours"][key] / medians["baseline"][key] for key in ("idle_us", "message_us"))))
        print("  ".join(line), flush=True)
    print(f"load {os.getloadavg()[0]:.1f} at end")


if __name__ == "__main__":
    main()
