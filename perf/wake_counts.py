# SPDX-License-Identifier: Apache-2.0
"""Counts behind the wake-up latency figures (docs/wakeup.md), which a noisy machine does not change the way it
changes times: per UDP or IPC round trip of the ping/pong samples on our driver (all ``wakeup``, SHARED mode), and
per second with a ping connected and no traffic.

    .venv/bin/python perf/wake_counts.py [--pings 5000] [--transport udp|ipc] [--idle-seconds 5] [--syscalls]

For each process (driver, ping, pong): the driver's duty cycles, its data halves between them (``fast_polls``,
``fast_hits`` those that moved data, ``fast_passes`` the compiled passes that moved data, ``fast_handed_back`` the
compiled data halves that stopped for the Python one: a SETUP, a send refused), the parks of each sleeper and how they ended
(woken or timed out), the wake-up datagrams it sent, its voluntary context switches (each is a sleep: a park, a
GIL hand-over) and its CPU time; ``--syscalls`` adds the system calls (``strace -c -f``, which slows every
process down, so the other counts are taken in a run without it).

Experiment knobs (environment): WAKE_COUNTS_ROOT=<checkout> runs that checkout's code (before/after pairs);
WAKE_COUNTS_TIMING=1 adds each driver agent's time per duty cycle;
WAKE_COUNTS_DRIVER_SPIN_NS and WAKE_COUNTS_CLIENT_SPIN_NS replace the driver's and the samples' spin times,
WAKE_COUNTS_CLIENT_YIELD_NS the samples' yield time before a park,
WAKE_COUNTS_DATA_SPIN_NS and WAKE_COUNTS_FULL_CYCLE_DEFER_NS the driver's data spin and how long it defers the rest
of a duty cycle; WAKE_COUNTS_STAMPS=1 adds the time between the milestones of a round trip (CLOCK_MONOTONIC stamps
in the three processes: ping offer, driver send, insert, pong wake-up, ...), p10/p50/p90. The driver's own
milestones (saw, sent, inserted) come from its data half in Python: with the compiled one (DataSpin.run_data, the
default) they are not stamped, and WAKE_COUNTS_PYTHON_DATA_HALF=1 runs the data half in Python as before this one
call existed (the compiled wait, then Sender.send_data and Receiver.poll_data), for its stamps or a comparison.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

HERE = pathlib.Path(__file__).resolve().parent
# WAKE_COUNTS_ROOT: measure another checkout's code (built in place) with this script, e.g. a before/after pair
ROOT = pathlib.Path(os.environ.get("WAKE_COUNTS_ROOT") or HERE.parent)
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))


def _thread_switches() -> tuple[int, int]:
    voluntary = involuntary = 0
    for task in pathlib.Path("/proc/self/task").iterdir():
        try:
            text = (task / "status").read_text()
        except OSError:
            continue
        voluntary += int(re.search(r"^voluntary_ctxt_switches:\s+(\d+)", text, re.M).group(1))
        involuntary += int(re.search(r"^nonvoluntary_ctxt_switches:\s+(\d+)", text, re.M).group(1))
    return voluntary, involuntary


def _process_stats(extra: dict) -> dict:
    times = os.times()
    voluntary, involuntary = _thread_switches()
    # cpu_ns: the scheduler's own count (CLOCK_PROCESS_CPUTIME_ID), not 10 ms ticks as cpu_s
    return dict(extra, cpu_s=times.user + times.system, cpu_ns=time.process_time_ns(), voluntary_switches=voluntary,
                involuntary_switches=involuntary)


def _on_snapshot(out: str, stats) -> None:
    """SIGUSR1 writes the counts so far to ``out``.<n> (n = 1, 2, ...): the parent takes a window's difference."""
    taken = [0]

    def snapshot(*_):
        taken[0] += 1
        _write_stamps(out)
        pathlib.Path(f"{out}.{taken[0]}").write_text(json.dumps(stats()))

    signal.signal(signal.SIGUSR1, snapshot)


_STAMPS: list = []          # (perf_counter_ns, code) with WAKE_COUNTS_STAMPS=1: per-hop times of a round trip


def _stamping() -> bool:
    return bool(os.environ.get("WAKE_COUNTS_STAMPS"))


def _stamp(code: str, _clock=time.perf_counter_ns, _append=_STAMPS.append) -> None:
    _append((_clock(), code))


class _StampedWaiter:
    """A waiter whose ``wait`` stamps its start (``code`` with P for W: when a client parked) and its return
    (``code``: when a sleeper woke)."""

    def __init__(self, waiter, code: str) -> None:
        self._waiter = waiter
        self._code = code
        self._park_code = code[:-1] + "P"

    def wait(self, timeout_ns, fds=None, yield_ns=0):
        _stamp(self._park_code)
        woken = self._waiter.wait(timeout_ns, fds, yield_ns) if yield_ns else self._waiter.wait(timeout_ns, fds)
        _stamp(self._code)
        return woken

    def __getattr__(self, name):
        return getattr(self._waiter, name)


class _StampedSpin:
    """The driver's compiled data spin, stamping ("D") each wait that found data: when the driver saw an offer or
    a datagram, before the Python that sends or reads it."""

    def __init__(self, spin) -> None:
        self._spin = spin

    def wait(self, timeout_ns):
        found = self._spin.wait(timeout_ns)
        if found:
            _stamp("D")
        return found

    def __getattr__(self, name):
        return getattr(self._spin, name)


def _write_stamps(out: str) -> None:
    if _stamping():
        pathlib.Path(out + ".stamps").write_text(json.dumps(_STAMPS))


def _sleepers(idles: list) -> dict:
    """``idles``: (idle strategy, its waiter when bound): the waiter is kept as the driver closes it."""
    stats = {"parks": 0, "woken": 0, "timeouts": 0}
    for idle, waiter in idles:
        stats["parks"] += getattr(idle, "parks", 0)
        if waiter is not None:
            stats["woken"] += waiter.wakeups
            stats["timeouts"] += waiter.timeouts
            if getattr(waiter, "yield_phases", 0):       # a futex waiter that yields before it sleeps
                for key, name in (("yield_phases", "yield_phases"), ("yield_wakeups", "yield_woken"),
                                  ("yields_timed_out", "yields_timed_out"), ("yields_contended", "yields_contended")):
                    stats[name] = stats.get(name, 0) + getattr(waiter, key)
    return stats


def run_driver(out: str, args: list[str]) -> int:
    """The driver, counting: duty cycles, its sleepers' parks, the wake-ups it sent."""
    from aeron.driver import __main__ as driver_main
    from aeron.driver import media_driver
    captured: dict = {"idles": [], "runners": [], "boards": []}
    original_start = media_driver.MediaDriver._start

    def start(self, agents, idle_name, on_error):
        original_start(self, agents, idle_name, on_error)
        runner = self._runners[-1]
        captured["runners"].append(runner)
        captured["idles"].append((runner.idle_strategy, getattr(runner.idle_strategy, "waiter", None)))
        captured["boards"].append(self._wakeup_board)
        for knob, attribute in (("WAKE_COUNTS_DRIVER_SPIN_NS", "spin_ns"), ("WAKE_COUNTS_DATA_SPIN_NS", "data_spin_ns"),
                                ("WAKE_COUNTS_FULL_CYCLE_DEFER_NS", "full_cycle_defer_ns")):
            if os.environ.get(knob) and hasattr(runner.idle_strategy, attribute):
                setattr(runner.idle_strategy, attribute, int(os.environ[knob]))
        if _stamping() and getattr(runner.idle_strategy, "waiter", None) is not None:
            runner.idle_strategy.waiter = _StampedWaiter(runner.idle_strategy.waiter, "DW")
            timers = runner.idle_strategy.timers
            if getattr(timers, "_spin", None) is not None:
                timers._spin = _StampedSpin(timers._spin)
        receiver = self._conductor.receiver
        if _stamping() and getattr(receiver, "signal_data", None) is not None:
            signal = receiver.signal_data

            def signal_data(mask, _signal=signal):
                _stamp(f"R{mask.bit_length() - 1}")
                _signal(mask)

            receiver.signal_data = signal_data

    media_driver.MediaDriver._start = start
    counted_cycles = [0]
    from aeron.driver.driver_wakeup import SignallingAgent
    original_do_work = SignallingAgent.do_work

    def do_work(self):
        counted_cycles[0] += 1
        return original_do_work(self)

    SignallingAgent.do_work = do_work
    if os.environ.get("WAKE_COUNTS_PYTHON_DATA_HALF"):
        original_watch = SignallingAgent._watch

        def watch(self):
            original_watch(self)
            self._spin_passes = False       # the compiled wait, then the data half in Python

        SignallingAgent._watch = watch
    if _stamping():
        from aeron.common.wakeup import stream_bit
        from aeron.driver.send_channel_endpoint import SendChannelEndpoint
        for name in ("send_pass", "send_data"):
            if not hasattr(SendChannelEndpoint, name):
                continue

            def stamped(self, now_ns, _original=getattr(SendChannelEndpoint, name)):
                sent = _original(self, now_ns)
                if sent and self.pass_publications:
                    _stamp(f"S{stream_bit(self.pass_publications[0].stream_id).bit_length() - 1}")
                return sent

            setattr(SendChannelEndpoint, name, stamped)
        from aeron.driver.receiver import Receiver
        original_poll_data = Receiver.poll_data

        def poll_data(self):
            # the compiled receive has inserted and woken the subscribers by the time it returns: "inserted" is
            # stamped after the fact (R with no stream: the receive does not say which stream it was)
            read = original_poll_data(self)
            if read:
                _stamp("R0")
            return read

        Receiver.poll_data = poll_data
    fast_counts = [0, 0, 0, 0]
    cycle_kinds = {"active": 0, "timer_only": 0, "no_work": 0, "spin_owed": 0}
    original_signalling_do_work = SignallingAgent.do_work

    def classified_do_work(self):
        # what each whole duty cycle was: data or commands moved, only timers (heartbeat, status message), nothing
        work = original_signalling_do_work(self)
        cycle_kinds["active" if work > 0 and self.active else "timer_only" if work > 0 else "no_work"] += 1
        return work

    SignallingAgent.do_work = classified_do_work
    from aeron.common.wakeup import WakeupIdleStrategy
    original_fast_spin = WakeupIdleStrategy._fast_spin

    def counted_fast_spin(self):
        spun = original_fast_spin(self)
        if spun:
            cycle_kinds["spin_owed"] += 1           # the data spin stopped to run the cycle it owed
        return spun

    WakeupIdleStrategy._fast_spin = counted_fast_spin
    if hasattr(SignallingAgent, "fast_work"):
        original_fast_work = SignallingAgent.fast_work

        def fast_work(self, *spin):
            work = original_fast_work(self, *spin)
            fast_counts[0] += 1
            fast_counts[1] += 1 if work else 0
            data_spin = getattr(self, "_spin", None)
            if data_spin is not None and getattr(self, "_spin_passes", False):
                # the compiled data half's passes, and its stops for the Python one (a SETUP, a send refused, ...)
                fast_counts[2] += 1 if data_spin.handed_back else 0
                fast_counts[3] += data_spin.data_passes
            return work

        SignallingAgent.fast_work = fast_work
    timings: dict[str, list[int]] = {}
    if os.environ.get("WAKE_COUNTS_TIMING"):
        # the time each agent's duty cycle takes (adds a clock read per agent per cycle)
        from aeron.driver.driver_conductor import DriverConductor
        from aeron.driver.receiver import Receiver
        from aeron.driver.sender import Sender
        clock = time.perf_counter_ns
        for cls in (DriverConductor, Sender, Receiver):
            cell = timings.setdefault(cls.__name__, [0, 0])

            def timed(self, _original=cls.do_work, _cell=cell):
                start = clock()
                work = _original(self)
                _cell[0] += clock() - start
                _cell[1] += 1
                return work

            cls.do_work = timed

    profile_out = os.environ.get("WAKE_COUNTS_PROFILE")
    if profile_out:
        # cProfile the driver's duty cycles (one profiler, enabled around each cycle on whichever agent thread)
        import cProfile
        profiler = cProfile.Profile()
        profiled_do_work = SignallingAgent.do_work

        def do_work_profiled(self):
            profiler.enable()
            try:
                return profiled_do_work(self)
            finally:
                profiler.disable()

        SignallingAgent.do_work = do_work_profiled
        signal.signal(signal.SIGUSR2, lambda *_: profiler.dump_stats(profile_out))

    def stats():
        boards = [b for b in captured["boards"] if b is not None]
        extra = {f"{name}_ns": cell[0] for name, cell in timings.items()}
        return _process_stats(dict(_sleepers(captured["idles"]), cycles=counted_cycles[0], fast_polls=fast_counts[0],
                                   fast_hits=fast_counts[1], fast_handed_back=fast_counts[2],
                                   fast_passes=fast_counts[3],
                                   wakeups_sent=sum(b.wakeups_sent for b in boards),
                                   **{f"cycles_{kind}": n for kind, n in cycle_kinds.items()}, **extra))

    _on_snapshot(out, stats)
    return driver_main.main(args)


def _patch_client_idle(captured: list, role: str = "") -> None:
    from aeron.samples import _common
    original = _common.idle_strategy

    def idle_strategy(client, name, *subscriptions):
        idle = original(client, name, *subscriptions)
        if _stamping() and getattr(idle, "waiter", None) is not None:
            idle.waiter = _StampedWaiter(idle.waiter, role[:2].upper() + "W")
        if os.environ.get("WAKE_COUNTS_CLIENT_SPIN_NS"):
            idle.spin_ns = int(os.environ["WAKE_COUNTS_CLIENT_SPIN_NS"])
        if os.environ.get("WAKE_COUNTS_CLIENT_YIELD_NS"):
            idle.yield_ns = int(os.environ["WAKE_COUNTS_CLIENT_YIELD_NS"])
        if os.environ.get("WAKE_COUNTS_CLIENT_PARK_NS"):
            idle.max_park_ns = idle.park_bound_ns = int(os.environ["WAKE_COUNTS_CLIENT_PARK_NS"])
        captured.append((idle, client))
        return idle

    _common.idle_strategy = idle_strategy


def run_sample(role: str, out: str, args: list[str]) -> int:
    """The ping or pong sample, counting its parks and the wake-ups it sent."""
    captured: list = []
    _patch_client_idle(captured, role)
    if _stamping():
        from aeron.client.publication import ExclusivePublication
        appender_offer = ExclusivePublication.offer
        code = role[:2].upper() + "O"

        def offer(self, *offer_args, _code=code):
            _stamp(_code)
            return appender_offer(self, *offer_args)

        ExclusivePublication.offer = offer

    def stats():
        idles = [(idle, getattr(idle, "waiter", None)) for idle, _ in captured]
        sent = 0
        for _, client in captured:
            board = client._conductor.wakeup_board
            sent += board.wakeups_sent if board is not None and not board.is_closed else 0
        return _process_stats(dict(_sleepers(idles), wakeups_sent=sent))

    _on_snapshot(out, stats)
    if role == "pong":
        from aeron.samples import pong as sample
        return sample.main(args)
    from aeron.samples import ping as sample
    original = sample.send_ping_and_receive_pong

    def send_ping_and_receive_pong(*call_args, **kwargs):
        os.kill(os.getpid(), signal.SIGUSR1)
        original(*call_args, **kwargs)
        os.kill(os.getpid(), signal.SIGUSR1)

    sample.send_ping_and_receive_pong = send_ping_and_receive_pong
    return sample.main(args)


# -- the parent: start the three, run the pings or wait, collect --------------------------------------------------
def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AERON_")}
    env["PYTHONPATH"] = str(ROOT)
    return env


def _wrap(role: str, out: str, argv: list[str], strace: str | None) -> list[str]:
    cmd = [sys.executable, str(pathlib.Path(__file__).resolve()), f"_{role}", out, *argv]
    if strace:
        return ["strace", "-f", "-c", "-o", strace, *cmd]
    return cmd


def _snapshot(procs: dict, outs: dict, n: int) -> dict:
    if any(proc.args[0] == "strace" for proc in procs.values()):
        return {role: {} for role in procs}         # strace's pid is not the sample's: totals only
    for proc in procs.values():
        proc.send_signal(signal.SIGUSR1)
    deadline = time.monotonic() + 10
    taken = {}
    for role in procs:
        path = pathlib.Path(f"{outs[role]}.{n}")
        while not path.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.01)
        taken[role] = json.loads(path.read_text())
    return taken


def _difference(after: dict, before: dict) -> dict:
    return {key: after[key] - before.get(key, 0) for key in after}


def _idle_aio_client(aeron_dir: str, ping_channel: str, pong_channel: str, idle_seconds: float,
                     window: Callable[[str], None]) -> int:
    """The idle ping as an aeron.aio client: a task awaiting ``receive()`` through the window (``window("before")``
    and ``window("after")`` snapshot the other processes at its edges); its CPU (ns)."""
    import asyncio

    from aeron import aio

    async def run() -> int:
        async with aio.connect(aeron_dir) as client:
            sub = await client.add_subscription(pong_channel, 1003)
            pub = await client.add_exclusive_publication(ping_channel, 1002)
            deadline = time.monotonic() + 20
            while not (pub.is_connected and sub.image_count) and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            await asyncio.sleep(2.0)
            window("before")
            start = time.process_time_ns()
            with contextlib.suppress(Exception):
                await sub.receive(timeout=idle_seconds)
            used = time.process_time_ns() - start
            window("after")
            return used

    return asyncio.run(run())


def measure(transport: str, pings: int, idle_seconds: float, syscalls: bool, aio: bool = False) -> dict:
    from bench_wakeup import _channels, _stop
    tmp = tempfile.mkdtemp(prefix="wake-counts-")
    outs = {role: os.path.join(tmp, role) for role in ("driver", "ping", "pong")}
    traces = {role: os.path.join(tmp, f"{role}.strace") for role in outs} if syscalls else {}
    aeron_dir = f"/dev/shm/aeron-wake-counts-{os.getpid()}"
    driver = subprocess.Popen(_wrap("driver", outs["driver"], [
        f"aeron.dir={aeron_dir}", "aeron.dir.delete.on.start=true", "aeron.dir.delete.on.shutdown=true",
        "aeron.threading.mode=SHARED", "aeron.shared.idle.strategy=wakeup"], traces.get("driver")),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env())
    procs = {"driver": driver}
    result: dict = {"transport": transport, "pings": pings, "p50_us": None}
    client = None
    try:
        deadline = time.monotonic() + 30
        while not os.path.exists(os.path.join(aeron_dir, "cnc.dat")):
            if driver.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("driver did not start")
            time.sleep(0.05)
        time.sleep(1.0)
        ping_channel, pong_channel = _channels(transport)
        common = ["-p", aeron_dir, "-c", ping_channel, "-C", pong_channel]
        procs["pong"] = subprocess.Popen(_wrap("pong", outs["pong"], [*common, "--idle", "wakeup"],
                                               traces.get("pong")),
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env())
        time.sleep(1.5)
        if pings:
            before = _snapshot(procs, outs, 1)
            ping = subprocess.run(_wrap("ping", outs["ping"], [*common, "--idle", "wakeup", "-m", str(pings), "-w",
                                                               "0", "-L", "32"], traces.get("ping")),
                                  capture_output=True, text=True, timeout=900, env=_env())
            after = _snapshot(procs, outs, 2)
            rows = re.findall(r"^\s*(\d+\.\d+)\s+(\d\.\d+)\s+\d+", ping.stdout, re.M)
            result["p50_us"] = next((float(v) for v, p in rows if float(p) >= 0.5), None)
            if not syscalls:
                ping_before = json.loads(pathlib.Path(outs["ping"] + ".3").read_text())
                ping_after = json.loads(pathlib.Path(outs["ping"] + ".4").read_text())
                result["ping"] = _difference(ping_after, ping_before)
        elif aio:
            taken: dict = {}

            def window(edge: str) -> None:
                taken[edge] = _snapshot(procs, outs, 1 if edge == "before" else 2)

            result["client"] = {"cpu_ns": _idle_aio_client(aeron_dir, ping_channel, pong_channel, idle_seconds,
                                                           window)}
            before, after = taken["before"], taken["after"]
        else:
            from aeron import Aeron, Context
            client = Aeron.connect(Context(aeron_dir))
            sub = client.add_subscription(pong_channel, 1003)          # the samples' default stream ids
            pub = client.add_exclusive_publication(ping_channel, 1002)
            deadline = time.monotonic() + 20
            while not (pub.is_connected and sub.image_count) and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(2.0)
            before = _snapshot(procs, outs, 1)
            client_before = time.process_time_ns()
            time.sleep(idle_seconds)
            # this process is the idle ping's client (its conductor thread; the main thread sleeps)
            result["client"] = {"cpu_ns": time.process_time_ns() - client_before}
            after = _snapshot(procs, outs, 2)
        if os.environ.get("WAKE_COUNTS_PROFILE") and not pings:
            driver.send_signal(signal.SIGUSR2)          # the driver writes its profile
            time.sleep(1.0)
        for role in procs:
            result[role] = _difference(after[role], before[role])
    finally:
        if client is not None:
            client.close()
        for proc in reversed(list(procs.values())):
            if proc.args[0] == "strace":
                _interrupt_traced(proc)
            _stop(proc)
    if syscalls:
        for role, path in traces.items():
            if os.path.exists(path):
                result[role] = dict(result.get(role) or {}, syscalls_total=_strace_counts(path))
    if _stamping() and pings:
        result["hops"] = _hops(tmp, pings)
    shutil.rmtree(tmp, ignore_errors=True)
    return result


_HOPS = (("PIO", "ping offer"), ("D", "driver saw ping"), ("S", "driver sent ping"), ("R", "ping inserted"),
         ("POW", "pong woke"), ("POO", "pong offer"), ("D", "driver saw pong"), ("S", "driver sent pong"),
         ("R", "pong inserted"), ("PIW", "ping woke"))


def _hops(tmp: str, pings: int) -> list:
    """Per round trip of the last ``pings``, the time from each milestone to the next (ping offer, the driver's
    send, its insert and signal, the pong's wake-up and offer, ... the ping's wake-up, its next offer), from the
    three processes' CLOCK_MONOTONIC stamps; a milestone that did not happen (a client that caught the data in
    its spin: no wake-up) counts as zero. The insert stamp comes from the receiver's Python signal: a driver
    whose compiled receive wakes the subscribers itself has none (that hop 100 % absent), and the next hop is then
    sent until woke. Returns (label, p10, p50, p90 µs, share missing)."""
    stamps = []
    for role in ("driver", "ping", "pong"):
        path = pathlib.Path(tmp, role + ".stamps")
        if path.exists():
            stamps += [tuple(x) for x in json.loads(path.read_text())]
    stamps.sort()
    starts = [i for i, (_, code) in enumerate(stamps) if code == "PIO"][-pings:]
    segments: list[list[float]] = [[] for _ in range(len(_HOPS))]
    missing = [0] * len(_HOPS)
    for n, start in enumerate(starts[:-1]):
        end = starts[n + 1]
        previous = stamps[start][0]
        k = start
        for h, (code, _) in enumerate(_HOPS[1:] + (("PIO", "next ping offer"),), start=0):
            j = k + 1
            while j <= end and not (stamps[j][1] == code or (code in "SR" and stamps[j][1].startswith(code)
                                                                and stamps[j][1][1:].isdigit())):
                j += 1
            if j > end or (code == "PIO" and j != end):
                if code != "PIO":
                    segments[h].append(0.0)
                    missing[h] += 1
                    continue
                j = end
            segments[h].append((stamps[j][0] - previous) / 1000)
            previous = stamps[j][0]
            k = j
    labels = [f"{_HOPS[h][1]} -> {(_HOPS[1:] + (('PIO', 'next ping offer'),))[h][1]}" for h in range(len(_HOPS))]
    # beside the chain: each client's tail, from its offer until it parks (it shares a core with the other client,
    # whose wake-up waits behind it)
    # and each direction whole, from a client's offer until the other client woke (the driver's hop and that client's
    # wake-up: the chain above has no driver milestones when the compiled data half runs), and the pong's own time
    # from its wake-up to its offer (the ping's is in the chain)
    for offer, park, label in (("PIO", "PIP", "ping offer -> ping parked"), ("POO", "POP", "pong offer -> pong parked"),
                               ("PIO", "POW", "ping offer -> pong woke"), ("POO", "PIW", "pong offer -> ping woke"),
                               ("POW", "POO", "pong woke -> pong offer")):
        tails: list[float] = []
        lost = 0
        window = stamps[starts[0]:starts[-1]] if len(starts) > 1 else []
        for i, (t, code) in enumerate(window):
            if code != offer:
                continue
            j = i + 1
            while j < len(window) and window[j][1] not in (park, offer):
                j += 1
            if j < len(window) and window[j][1] == park:
                tails.append((window[j][0] - t) / 1000)
            else:
                lost += 1
        labels.append(label)
        segments.append(tails)
        missing.append(lost)
    out = []
    for h, values in enumerate(segments):
        if values:
            values.sort()
            out.append((labels[h], values[len(values) // 10], values[len(values) // 2], values[9 * len(values) // 10],
                        missing[h] / (len(values) + (missing[h] if h >= len(_HOPS) else 0))))
    return out


def _interrupt_traced(proc: subprocess.Popen) -> None:
    """SIGINT the process strace runs (strace then writes its summary as it exits), not strace."""
    try:
        children = pathlib.Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
    except OSError:
        return
    for child in children:
        with contextlib.suppress(OSError):
            os.kill(int(child), signal.SIGINT)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(20)


def _strace_counts(path: str) -> dict[str, int]:
    counts = {}
    for line in pathlib.Path(path).read_text().splitlines():
        fields = line.split()
        if len(fields) >= 5 and fields[-1].isidentifier() and fields[-1] != "total" and fields[3].isdigit():
            counts[fields[-1]] = int(fields[3])
    return counts


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    pin = os.environ.get("WAKE_COUNTS_PIN")          # "driver-cpu,clients-cpu": a diagnosis of CPU sharing
    if pin and argv and argv[0] in ("_driver", "_ping", "_pong"):
        cpus = [int(c) for c in pin.split(",")]
        os.sched_setaffinity(0, {cpus[0] if argv[0] == "_driver" else cpus[1]})
    if argv and argv[0] == "_driver":
        return run_driver(argv[1], argv[2:])
    if argv and argv[0] in ("_ping", "_pong"):
        return run_sample(argv[0][1:], argv[1], argv[2:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pings", type=int, default=5000, help="round trips (0: the idle measurement)")
    parser.add_argument("--transport", choices=("udp", "ipc"), default="udp")
    parser.add_argument("--idle-seconds", type=float, default=5.0)
    parser.add_argument("--syscalls", action="store_true", help="also count system calls with strace -c -f")
    parser.add_argument("--aio", action="store_true", help="idle: the ping is an aeron.aio client awaiting receive()")
    args = parser.parse_args(argv)
    result = measure(args.transport, args.pings, args.idle_seconds, args.syscalls, args.aio)
    per = result["pings"] or args.idle_seconds
    unit = "round trip" if result["pings"] else "second (idle)"
    print(f"{args.transport}: per {unit}" + (f", p50 {result['p50_us']} µs" if result["p50_us"] else ""))
    for role in ("driver", "ping", "pong", "client"):
        stats = result.get(role)
        if role == "client" and not stats:
            continue
        if not stats:
            print(f"  {role:6s} (no counts)")
            continue
        cells = []
        for key in ("cycles", "cycles_active", "cycles_timer_only", "cycles_no_work", "cycles_spin_owed", "fast_polls", "fast_hits", "fast_handed_back", "fast_passes", "parks", "woken", "yield_phases", "yield_woken", "yields_timed_out", "yields_contended", "timeouts", "wakeups_sent", "voluntary_switches",
                    "involuntary_switches"):
            if key in stats:
                cells.append(f"{key} {stats[key] / per:7.2f}")
        for key in sorted(stats):
            if key.endswith("_ns") and key != "cpu_ns" and stats.get("cycles"):
                cells.append(f"{key[:-3]} {stats[key] / stats['cycles'] / 1000:6.2f} µs/cycle")
        if "cpu_ns" in stats:
            cells.append(f"cpu {stats['cpu_ns'] / 1e3 / per:8.1f} µs" if result["pings"]
                         else f"cpu {stats['cpu_ns'] / 1e7 / per:5.2f} %")
        print(f"  {role:6s} " + "  ".join(cells))
        if "syscalls_total" in stats:
            top = sorted(stats["syscalls_total"].items(), key=lambda kv: -kv[1])[:8]
            total = sum(stats["syscalls_total"].values()) / per
            print(f"         syscalls (whole run, start-up included) {total:7.2f}: "
                  + ", ".join(f"{name} {count / per:.2f}" for name, count in top))
    for label, p10, p50, p90, missing in result.get("hops", ()):
        print(f"  {label:40s} p10 {p10:8.1f}  p50 {p50:8.1f}  p90 {p90:8.1f} µs  (absent {100 * missing:.0f} %)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
