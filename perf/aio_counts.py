# SPDX-License-Identifier: Apache-2.0
"""Counts behind the asyncio round trip (docs/wakeup.md), which a busy machine does not change the way it changes
times: an ``aeron.aio`` client pinging our pong sample over IPC (our driver and the pong both ``wakeup``), per round
trip and per run, on asyncio and on uvloop.

    .venv/bin/python perf/aio_counts.py [--pings 3000] [--runs 10] [--loops asyncio,uvloop] [--burners]

Per round trip, for each run: the p50 and p90 (µs); the pong's sleeps (voluntary context switches of the pong
process: each is a park that was not ended by its spin); the pinging process's sleeps (its loop blocked in
epoll); the client's wake-ups by the board (``AsyncWakeup.wakeups``: parks the pong's write ended); the loop turns
it gave away while waiting (``asyncio.sleep(0)`` calls of the idle strategy); and on asyncio the loop's selector
calls, how many of them could block. A round trip with no park on either side (0, 0, 0) is the fast one; one with
both parked pays two wake-ups.
Each run ends with the references measured in the same run: our sync ping sample on the same driver
(``--idle wakeup``, the same 32-byte messages over IPC), and the run's ratio asyncio / sync; and, with a C compiler,
the bare design in C (perf/bare_ipc.c: the same spins, parks and wake-ups with no Python and no Aeron logic, the floor
of this design on this machine), and the ratio asyncio / bare.
AIO_COUNTS_PIN=0,1 pins the pinging process and the pong to those CPUs (a diagnosis: same core or not).
``--burners``: one ``while True: pass`` process per core for the whole run (the same priority).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_wakeup import PY, Burners, Driver, _env, _stop, build_bare, ping_percentiles
from bench_wakeup import _wakeups as _switches


class _SelectCounter:
    """Wraps an asyncio selector's ``select``: calls, and calls that may block (a timeout other than 0)."""

    def __init__(self, selector) -> None:
        self.inner = selector.select
        self.calls = self.blocking = 0
        selector.select = self.select

    def select(self, timeout=None):
        self.calls += 1
        if timeout is None or timeout > 0:
            self.blocking += 1
        return self.inner(timeout)


async def _ping(aeron_dir: str, pings: int, pong_pid: int, stream: int) -> dict:
    from aeron import Aeron, Context
    from aeron.aio.client import AsyncAeron

    sleeps0 = [0]
    real_sleep = asyncio.sleep

    async def counting_sleep(delay, result=None):
        if delay == 0:
            sleeps0[0] += 1
        return await real_sleep(delay, result)

    loop = asyncio.get_running_loop()
    selector = getattr(loop, "_selector", None)
    counter = _SelectCounter(selector) if selector is not None else None
    client = AsyncAeron(Aeron.connect(Context(aeron_dir, use_conductor_agent_invoker=True)))
    try:
        sub = await client.add_subscription("aeron:ipc", stream + 1)
        pub = await client.add_exclusive_publication("aeron:ipc", stream)
        await pub.wait_connected(timeout=30)
        while not sub.image_count:
            await asyncio.sleep(0.01)
        message = bytearray(32)
        for _ in range(min(1000, pings)):                       # warm-up
            await pub.offer(message)
            await sub.receive(timeout=5)
        wakeup = client._wakeup
        rtts = []
        asyncio.sleep = counting_sleep
        def counts():
            return (_switches(pong_pid), _switches(os.getpid()), wakeup.wakeups if wakeup else 0,
                    counter.calls if counter else 0, counter.blocking if counter else 0,
                    _switches(pong_pid, "nonvoluntary"), _switches(os.getpid(), "nonvoluntary"))
        before = counts()
        clock = time.perf_counter_ns
        for _ in range(pings):
            start = clock()
            await pub.offer(message)
            await sub.receive(timeout=5)
            rtts.append(clock() - start)
        after = counts()
        asyncio.sleep = real_sleep
    finally:
        asyncio.sleep = real_sleep
        await client.close()
    per = [(a - b) / pings for a, b in zip(after, before)]
    rtts.sort()
    return {"p50_us": rtts[len(rtts) // 2] / 1e3, "p90_us": rtts[len(rtts) * 9 // 10] / 1e3,
            "pong_sleeps": per[0], "ping_sleeps": per[1], "board_wakeups": per[2], "sleep0": sleeps0[0] / pings,
            "selects": per[3] if counter else None, "blocking_selects": per[4] if counter else None,
            "pong_preempted": per[5], "ping_preempted": per[6]}


def bare_p50_us(exe: str, pings: int) -> float:
    """The bare design's IPC round trip (perf/bare_ipc.c), its spins as our pong's and the asyncio client's."""
    out = subprocess.run([exe, str(pings), str(max(1000, pings // 4))], capture_output=True, text=True, timeout=600,
                         check=True).stdout
    return float(json.loads(out)["p50"])


def one_run(loop_name: str, pings: int, bare_exe: str | None = None) -> dict:
    driver = Driver("ours", "wakeup")
    stream = 3002
    pong = subprocess.Popen(
        [PY, "-m", "aeron.samples.pong", "--idle", "wakeup", "-p", driver.dir, "-c", "aeron:ipc", "-C", "aeron:ipc",
         "-s", str(stream), "-S", str(stream + 1)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env())
    pin = os.environ.get("AIO_COUNTS_PIN")       # "ping_cpu,pong_cpu": a diagnosis only (which core each runs on)
    if pin:
        ping_cpu, pong_cpu = (int(x) for x in pin.split(","))
        os.sched_setaffinity(0, {ping_cpu})
        os.sched_setaffinity(pong.pid, {pong_cpu})
    try:
        if loop_name == "uvloop":
            import uvloop
            loop = uvloop.new_event_loop()
        else:
            loop = asyncio.new_event_loop()
        try:
            row = loop.run_until_complete(_ping(driver.dir, pings, pong.pid, stream))
        finally:
            loop.close()
        row["sync_p50_us"] = sync_p50_us(driver.dir, pings, stream + 2)
        row["bare_p50_us"] = bare_p50_us(bare_exe, pings) if bare_exe else None
        return row
    finally:
        _stop(pong)
        driver.close()


def sync_p50_us(aeron_dir: str, pings: int, stream: int) -> float:
    """The reference: our sync ping sample against a pong of its own (a pong serves one ping for its life, as
    Aeron's Pong does), both parking (``--idle wakeup``) on the same driver."""
    streams = ["-p", aeron_dir, "-c", "aeron:ipc", "-C", "aeron:ipc", "-s", str(stream), "-S", str(stream + 1)]
    pong = subprocess.Popen([PY, "-m", "aeron.samples.pong", "--idle", "wakeup", *streams],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env())
    try:
        out = subprocess.run([PY, "-m", "aeron.samples.ping", "--idle", "wakeup", *streams, "-m", str(pings),
                              "-w", str(max(1000, pings // 4)), "-L", "32"],
                             capture_output=True, text=True, timeout=600, env=_env()).stdout
    finally:
        _stop(pong)
    return ping_percentiles(out)["p50"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pings", type=int, default=3000)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--loops", default="asyncio,uvloop")
    parser.add_argument("--burners", action="store_true")
    args = parser.parse_args(argv)
    workdir = tempfile.mkdtemp(prefix="aio-counts-")
    bare_exe = build_bare(workdir, "bare_ipc")
    burners = Burners(os.cpu_count() or 1) if args.burners else None
    try:
        for loop_name in args.loops.split(","):
            rows = []
            for i in range(args.runs):
                row = one_run(loop_name, args.pings, bare_exe)
                rows.append(row)
                print(f"{loop_name:8s} run {i + 1:2d}: p50 {row['p50_us']:6.1f} p90 {row['p90_us']:6.1f} µs; per round"
                      f" trip: pong sleeps {row['pong_sleeps']:.2f}, ping sleeps {row['ping_sleeps']:.2f}, board"
                      f" wake-ups {row['board_wakeups']:.2f}, sleep(0) {row['sleep0']:.2f}"
                      + (f", selects {row['selects']:.2f} ({row['blocking_selects']:.2f} blocking)"
                         if row["selects"] is not None else "")
                      + f", preempted pong {row['pong_preempted']:.2f} ping {row['ping_preempted']:.2f}"
                      + f"; sync client p50 {row['sync_p50_us']:.1f} µs (asyncio / sync"
                      f" {row['p50_us'] / row['sync_p50_us']:.1f}x)"
                      + (f"; bare design in C p50 {row['bare_p50_us']:.1f} µs (asyncio / bare"
                         f" {row['p50_us'] / row['bare_p50_us']:.1f}x)" if row["bare_p50_us"] else "")
                      + f"; load {os.getloadavg()[0]:.1f}", flush=True)
            p50s = sorted(r["p50_us"] for r in rows)
            ratios = sorted(r["p50_us"] / r["sync_p50_us"] for r in rows)
            print(f"{loop_name:8s} p50 over {len(rows)} runs: min {p50s[0]:.1f}, median {statistics.median(p50s):.1f},"
                  f" max {p50s[-1]:.1f} µs; over the sync client's: min {ratios[0]:.1f}x, median"
                  f" {statistics.median(ratios):.1f}x, max {ratios[-1]:.1f}x", flush=True)
            bares = sorted(r["bare_p50_us"] for r in rows if r["bare_p50_us"])
            if bares:
                print(f"{loop_name:8s} the bare design's p50 in the same runs: min {bares[0]:.1f}, median"
                      f" {statistics.median(bares):.1f}, max {bares[-1]:.1f} µs", flush=True)
    finally:
        if burners is not None:
            burners.close()
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    mp.set_start_method("spawn")
    sys.exit(main())
