# SPDX-License-Identifier: Apache-2.0
"""Where the time of perf/cluster_hops_bound.py's round trip goes: the bound run with CLOCK_MONOTONIC stamps in its
four processes (leader L, followers F1 and F2, client C), and each driver's whole duty cycles counted.

    .venv/bin/python perf/cluster_hops_stamps.py [--pings 1000] [--data-spin 0us] [--cycles] [--show 2]

Stamps (each code after the process's letter): O<stream> an offer (``!``: refused), I<stream> a poll that read
something, XP / XW a relay's (or the client's) park and its wake-up, DP / DW / DT a driver thread's park, wake-up and
timeout, r a receive endpoint's poll that read datagrams in a whole cycle, f a data half alone that moved data
(SignallingAgent.fast_work), k status messages or NAKs read, S<stream> a send pass in a whole cycle that sent; with
``--cycles``, c at the start of every whole duty cycle (it adds a stamp per cycle). Prints the round trips nearest
the median as timelines (µs from the client's offer), the median time of each milestone's first occurrence, and
per process the whole cycles per round trip and their CPU time (thread time) each. The stamps cost a little:
compare runs of this script with each other, not with perf/bench_cluster_three.py.
"""
from __future__ import annotations

import argparse
import collections
import glob
import json
import os
import pathlib
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

_STAMPS: list = []
_CYCLES = [0, 0]            # whole duty cycles, their thread time (ns)


def _stamp(code: str, _clock=time.perf_counter_ns, _append=_STAMPS.append) -> None:
    _append((_clock(), code))


class _StampedWaiter:
    """A waiter stamping each wait (``code`` + P), and how it ended (W woken, T timed out)."""

    def __init__(self, waiter, code: str) -> None:
        self._waiter, self._code = waiter, code

    def wait(self, timeout_ns, fds=None, yield_ns=0):
        _stamp(self._code + "P")
        woken = self._waiter.wait(timeout_ns, fds, yield_ns) if yield_ns else self._waiter.wait(timeout_ns, fds)
        _stamp(self._code + ("W" if woken else "T"))
        return woken

    def __getattr__(self, name):
        return getattr(self._waiter, name)


def _wrap(cls, name: str, code, when=lambda result: result):
    original = getattr(cls, name)

    def stamped(self, *args, **kwargs):
        result = original(self, *args, **kwargs)
        if when(result):
            _stamp(code(self, result) if callable(code) else code)
        return result

    setattr(cls, name, stamped)


def _instrument(tag: str, cycles: bool) -> None:
    """Stamps in this process (``tag``: L, F1, F2, C), before the bound's code runs."""
    global _stamp
    plain = _stamp

    def tagged(code: str) -> None:
        plain(tag + code)

    _stamp = tagged
    from aeron.client import aeron as client_aeron
    from aeron.client.publication import ExclusivePublication
    from aeron.client.subscription import Subscription
    from aeron.driver import media_driver
    from aeron.driver.driver_wakeup import SignallingAgent
    from aeron.driver.receive_channel_endpoint import ReceiveChannelEndpoint
    from aeron.driver.send_channel_endpoint import SendChannelEndpoint

    original_start = media_driver.MediaDriver._start

    def start(self, agents, idle_name, on_error):
        original_start(self, agents, idle_name, on_error)
        idle = self._runners[-1].idle_strategy
        if getattr(idle, "waiter", None) is not None:
            idle.waiter = _StampedWaiter(idle.waiter, "D")

    media_driver.MediaDriver._start = start
    original_idle = client_aeron.Aeron.wakeup_idle_strategy

    def wakeup_idle_strategy(self, *subscriptions, **kwargs):
        idle = original_idle(self, *subscriptions, **kwargs)
        if getattr(idle, "waiter", None) is not None:
            idle.waiter = _StampedWaiter(idle.waiter, "X")
        return idle

    client_aeron.Aeron.wakeup_idle_strategy = wakeup_idle_strategy
    _wrap(ExclusivePublication, "offer", lambda p, r: f"O{p.stream_id}" + ("" if r >= 0 else "!"), lambda r: True)
    _wrap(Subscription, "poll", lambda s, r: f"I{s.stream_id}")
    _wrap(SendChannelEndpoint, "send_pass",
          lambda e, r: f"S{e.pass_publications[0].stream_id}" if e.pass_publications else "S")
    _wrap(SendChannelEndpoint, "poll_control", "k")
    _wrap(ReceiveChannelEndpoint, "poll", "r")
    _wrap(SignallingAgent, "fast_work", "f", lambda r: r > 0)
    original_do_work = SignallingAgent.do_work

    def do_work(self, _thread_time=time.thread_time_ns):
        if cycles:
            _stamp("c")
        begin = _thread_time()
        work = original_do_work(self)
        _CYCLES[0] += 1
        _CYCLES[1] += _thread_time() - begin
        return work

    SignallingAgent.do_work = do_work


def run_role(out: str, tag: str, cycles: bool, argv: list[str]) -> int:
    """One process of the bound, stamped; its stamps and cycle counts written to ``out`` on SIGTERM."""
    def dump(*_):
        pathlib.Path(out).write_text(json.dumps({"tag": tag, "stamps": _STAMPS, "cycles": _CYCLES}))
        os._exit(0)

    signal.signal(signal.SIGTERM, dump)
    _instrument(tag, cycles)
    import cluster_hops_bound
    return cluster_hops_bound.main(argv)


def _trips(stamps: list) -> list[list]:
    trips, current = [], None
    for t, code in sorted(stamps):
        if code == "CO101":
            current = [(t, code)]
            trips.append(current)
        elif current is not None:
            current.append((t, code))
            if code == "CI102":
                current = None
    return [trip for trip in trips if trip[-1][1] == "CI102"]


def main(argv: list[str] | None = None) -> int:
    """Run the stamped bound and print where its round trips' time goes."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pings", type=int, default=1000)
    parser.add_argument("--data-spin", default="0us", help="the drivers' data spin, as the cluster benchmark's")
    parser.add_argument("--cycles", action="store_true", help="stamp every whole duty cycle (c)")
    parser.add_argument("--show", type=int, default=2, help="round trips shown as timelines")
    parser.add_argument("--role", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.role:
        out, tag, cycles, *rest = args.role
        return run_role(out, tag, cycles == "1", rest)
    from bench_cluster_three import (
        LineReader,
        bound_pingpong,
        client_env,
        free_port,
        stop_process,
    )
    base = pathlib.Path(f"/dev/shm/cluster-hops-stamps-{uuid.uuid4().hex[:8]}")
    outs = pathlib.Path(tempfile.mkdtemp(prefix="cluster-hops-stamps-"))
    ingress, ack, log1, log2, egress = (free_port() for _ in range(5))
    roles = [("L", ["leader", str(base / "l"), *map(str, (ingress, ack, log1, log2, egress))]),
             ("F1", ["follower", str(base / "f1"), str(log1), str(ack)]),
             ("F2", ["follower", str(base / "f2"), str(log2), str(ack)]),
             ("C", ["client", str(base / "f1"), str(ingress), str(egress)])]
    procs: list[subprocess.Popen] = []
    try:
        for tag, role in roles:
            env = {**client_env(), "AERON_DRIVER_WAKEUP_DATA_SPIN": args.data_spin}
            proc = subprocess.Popen([sys.executable, __file__, "--role", str(outs / f"{tag}.json"), tag,
                                     "1" if args.cycles else "0", *role], env=env, stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            procs.append(proc)
            reader = LineReader(proc)
            reader.wait_for("READY", 60)
        print(bound_pingpong(proc, reader, 32, args.pings), f"(load {os.getloadavg()[0]:.1f})")
    finally:
        for proc in reversed(procs):
            stop_process(proc, 10)
        shutil.rmtree(base, ignore_errors=True)
    stamps, cycles = [], {}
    for path in glob.glob(str(outs / "*.json")):
        data = json.loads(pathlib.Path(path).read_text())
        stamps += [tuple(s) for s in data["stamps"]]
        cycles[data["tag"]] = data["cycles"]
    shutil.rmtree(outs, ignore_errors=True)
    trips = _trips(stamps)[-args.pings:]
    if not trips:
        print("no complete round trip stamped")
        return 1
    median = statistics.median(trip[-1][0] - trip[0][0] for trip in trips)
    for trip in sorted(trips, key=lambda trip: abs(trip[-1][0] - trip[0][0] - median))[:args.show]:
        print(f"--- {(trip[-1][0] - trip[0][0]) / 1e3:.0f} µs:",
              " ".join(f"{code}@{(t - trip[0][0]) / 1e3:.0f}" for t, code in trip))
    firsts = collections.defaultdict(list)
    for trip in trips:
        seen: set[str] = set()
        for t, code in trip:
            if code not in seen:
                seen.add(code)
                firsts[code].append((t - trip[0][0]) / 1e3)
    print("milestone: median µs of its first occurrence in a round trip (round trips with it)")
    for code, times in sorted(firsts.items(), key=lambda item: statistics.median(item[1])):
        print(f"  {code:8s} {statistics.median(times):8.1f} ({len(times)})")
    total = args.pings + 200
    for tag, (count, cpu_ns) in sorted(cycles.items()):
        if count:
            print(f"{tag}: {count / total:.2f} whole duty cycles per round trip, {cpu_ns / max(count, 1) / 1e3:.1f} µs "
                  "thread time each")
    return 0


if __name__ == "__main__":
    sys.exit(main())
