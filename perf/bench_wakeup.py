# SPDX-License-Identifier: Apache-2.0
"""Waking instead of spinning (docs/wakeup.md), side by side in one run: round-trip latency with every idle thread
of ours parked, against aeronmd with backoff and with busy-spin, quiet and with one CPU burner per core.

    .venv/bin/python perf/bench_wakeup.py [--pings 20000] [--quick] [--no-burners]   (aeronmd parts need AERON_C_BIN)

Cases (each with its own driver process and /dev/shm dir, all in SHARED threading mode):
  * ours wakeup: our driver with ``aeron.shared.idle.strategy=wakeup`` and our ping/pong samples with
    ``--idle wakeup`` (nothing spins: every idle thread parks on the wake-up board or its sockets);
  * aeronmd backoff / aeronmd spin: the official driver with AERON_SHARED_IDLE_STRATEGY=backoff or spin and the
    official cping/cpong (which busy-spin, as they always do);
  * asyncio: our driver (wakeup), the ping an ``aeron.aio`` client on asyncio in this process awaiting each pong,
    the pong our sample with ``--idle wakeup``;
  * idle CPU: our driver and a pong (both wakeup) with no traffic for 5 s: CPU % of each process;
  * raw socket (UDP only), the reference measured in the same run: two Python processes ping-ponging a 32-byte
    datagram with plain sockets, each blocked in poll() until its socket is readable (perf/bench_udp_raw.py). It is
    the floor of any round trip in which nothing spins: one send, one wake-up and one receive per direction, no
    driver. Ours is reported against it ("ours / raw");
  * bare design (UDP only, needs a C compiler): perf/bare_wakeup.c, compiled here with ``cc -O2``: the hops of our
    UDP round trip with no Python and no Aeron logic (a spinning "driver" process sending and receiving each
    message over loopback sockets, two client processes offering through shared memory that yield for
    WakeupIdleStrategy.DEFAULT_YIELD_NS, as our samples' loops do, then park on futexes until the driver wakes them):
    the floor of this design on this machine ("ours / bare"); and the same parking at once, without yielding
    ("bare-design-c-park": our design before the yield phase).
``--cpu-latency-qos`` holds the kernel's CPU latency QoS request at 0 µs for the whole run (aeron.common.cpu_latency,
root only; docs/wakeup.md): idle CPUs then poll in the kernel's idle loop instead of halting, and a wake-up on an
idle CPU no longer pays for waking it from a halt (on this VM, 15 to 25 µs per wake-up).
IPC (``aeron:ipc``) and UDP (``aeron:udp?endpoint=127.0.0.1:<port>``, one driver holding both ends).
With burners: one ``while True: pass`` process per core (os.cpu_count()) at the same priority, for the whole case.
Results: perf/results/wakeup.json. Targets (issue 14): UDP p50 <= 30 µs and p99 <= 200 µs, IPC p50 <= 10 µs,
asyncio IPC p50 <= 20 µs, each process < 1 % CPU when idle.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid

from bench_udp_raw import rtt as raw_socket_rtt

from aeron.common.wakeup import WakeupIdleStrategy
from aeron.common.cpu_latency import CpuLatencyRequest

HERE = pathlib.Path(__file__).resolve().parent
# BENCH_WAKEUP_ROOT: run another checkout's driver and samples (built in place), e.g. a before/after pair in one session
ROOT = pathlib.Path(os.environ.get("BENCH_WAKEUP_ROOT") or HERE.parent)
RESULTS = HERE / "results"
PY = sys.executable


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AERON_")}
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra or {})
    return env


def _port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Driver:
    def __init__(self, kind: str, idle: str) -> None:
        self.dir = f"/dev/shm/aeron-bench-wk-{kind}-{uuid.uuid4().hex[:8]}"
        if kind == "ours":
            args = [PY, "-m", "aeron.driver", f"aeron.dir={self.dir}", "aeron.dir.delete.on.start=true",
                    "aeron.dir.delete.on.shutdown=true", "aeron.threading.mode=SHARED",
                    f"aeron.shared.idle.strategy={idle}"]
            env = _env()
        else:
            args = [os.path.join(os.environ["AERON_C_BIN"], "aeronmd")]
            env = _env(dict(AERON_DIR=self.dir, AERON_DIR_DELETE_ON_START="1", AERON_DIR_DELETE_ON_SHUTDOWN="1",
                            AERON_THREADING_MODE="SHARED", AERON_SHARED_IDLE_STRATEGY=idle))
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        deadline = time.monotonic() + 20
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
        _stop(self.proc)
        shutil.rmtree(self.dir, ignore_errors=True)


def _stop(proc: subprocess.Popen) -> str:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        out, _ = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate(timeout=5)
    return out or ""


def _clients(kind: str, idle: str) -> tuple[list[str], list[str]]:
    if kind == "C":
        bin_dir = os.environ["AERON_C_BIN"]
        return [os.path.join(bin_dir, "cping")], [os.path.join(bin_dir, "cpong")]
    return ([PY, "-m", "aeron.samples.ping", "--idle", idle], [PY, "-m", "aeron.samples.pong", "--idle", idle])


def _channels(transport: str) -> tuple[str, str]:
    if transport == "ipc":
        return "aeron:ipc", "aeron:ipc"
    return f"aeron:udp?endpoint=127.0.0.1:{_port()}", f"aeron:udp?endpoint=127.0.0.1:{_port()}"


def sample_rtt(driver: Driver, kind: str, idle: str, transport: str, pings: int) -> dict[str, float]:
    ping, pong = _clients(kind, idle)
    ping_channel, pong_channel = _channels(transport)
    args = ["-p", driver.dir, "-c", ping_channel, "-C", pong_channel]
    pong_proc = subprocess.Popen([*pong, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 env=_env())
    try:
        time.sleep(0.5)
        out = subprocess.run([*ping, *args, "-m", str(pings), "-w", str(max(1000, pings // 4)), "-L", "32"],
                             capture_output=True, text=True, timeout=600, env=_env()).stdout
    finally:
        _stop(pong_proc)
    return ping_percentiles(out)


def ping_percentiles(out: str) -> dict[str, float]:
    """p50, p90 and p99 (µs) from the histogram a ping sample prints (ours and cping alike)."""
    rows = [(float(v), float(p) * 100.0) for v, p in re.findall(r"^\s*(\d+\.\d+)\s+(\d\.\d+)\s+\d+", out, re.M)]
    if not rows:
        raise RuntimeError(f"no histogram in ping output: {out}")
    return {f"p{t:g}": next((v for v, p in rows if p >= t - 1e-9), rows[-1][0]) for t in (50.0, 90.0, 99.0)}


async def _aio_ping(aeron_dir: str, pings: int, ping_stream: int, pong_stream: int) -> list[int]:
    import aeron.aio
    samples = []
    async with aeron.aio.connect(aeron_dir) as client:
        sub = await client.add_subscription("aeron:ipc", pong_stream)
        pub = await client.add_exclusive_publication("aeron:ipc", ping_stream)
        await pub.wait_connected(timeout=10)
        while not sub.image_count:
            await asyncio.sleep(0.001)
        message = bytes(32)
        clock = time.perf_counter_ns
        for _ in range(pings):
            start = clock()
            await pub.offer(message)
            await sub.receive(timeout=5)
            samples.append(clock() - start)
    return samples


def aio_rtt(driver: Driver, pings: int) -> dict[str, float]:
    pong_proc = subprocess.Popen([PY, "-m", "aeron.samples.pong", "--idle", "wakeup", "-p", driver.dir, "-c",
                                  "aeron:ipc", "-C", "aeron:ipc", "-s", "2002", "-S", "2003"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env())
    try:
        time.sleep(0.5)
        samples = asyncio.run(_aio_ping(driver.dir, pings + pings // 4, 2002, 2003))[pings // 4:]
    finally:
        _stop(pong_proc)
    samples.sort()
    return {f"p{t:g}": samples[min(len(samples) - 1, int(t * len(samples) / 100))] / 1000.0 for t in (50, 90, 99)}


def _cpu_ns(pid: int) -> int:
    """The process's CPU time in ns: the scheduler's own count (schedstat), summed over its threads (not 10 ms
    ticks as /proc/<pid>/stat)."""
    total = 0
    for task in pathlib.Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError):
            continue                # a thread that just ended
    return total


def _wakeups(pid: int, kind: str = "voluntary") -> int:
    """The process's voluntary context switches, summed over its threads: each is a sleep (a park, a timed wait);
    ``kind="nonvoluntary"``: its preemptions."""
    total = 0
    for task in pathlib.Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int(re.search(rf"^{kind}_ctxt_switches:\s+(\d+)", (task / "status").read_text(), re.MULTILINE)[1])
        except (OSError, TypeError):
            continue
    return total


def idle_cpu(transport: str, seconds: float = 5.0) -> dict[str, float]:
    """CPU % of our driver, of a pong (both wakeup) and of the ping's client (this process, only its conductor
    thread runs), connected and sending nothing, over ``transport`` (over UDP the driver still sends heartbeats
    and status messages: that is most of its idle work); first the pong alone, before any ping ("pong_no_peer",
    with its sleeps a second, "pong_no_peer_wakeups_per_s": a count the machine's load does not change)."""
    from aeron import Aeron, Context
    driver = Driver("ours", "wakeup")
    ping_channel, pong_channel = _channels(transport)
    pong = subprocess.Popen([PY, "-m", "aeron.samples.pong", "--idle", "wakeup", "-p", driver.dir, "-c", ping_channel,
                             "-C", pong_channel], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=_env())
    client = None
    try:
        for line in pong.stdout:            # its client is up and its subscription and publication added
            if line.startswith(b"Publication channel status"):
                break
        time.sleep(1.0)
        cpu, switches = _cpu_ns(pong.pid), _wakeups(pong.pid)
        time.sleep(seconds)
        no_peer = {"pong_no_peer": round(100.0 * (_cpu_ns(pong.pid) - cpu) / 1e9 / seconds, 2),
                   "pong_no_peer_wakeups_per_s": round((_wakeups(pong.pid) - switches) / seconds, 1)}
        client = Aeron.connect(Context(driver.dir))
        sub = client.add_subscription(pong_channel, 1003)          # the samples' default stream ids
        pub = client.add_exclusive_publication(ping_channel, 1002)
        deadline = time.monotonic() + 20
        while not (pub.is_connected and sub.image_count) and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(2.0)
        pids = (("driver", driver.proc.pid), ("pong", pong.pid), ("client", os.getpid()))
        before = {name: _cpu_ns(pid) for name, pid in pids}
        time.sleep(seconds)
        after = {name: _cpu_ns(pid) for name, pid in pids}
        return {**{name: round(100.0 * (after[name] - before[name]) / 1e9 / seconds, 2) for name in before},
                **no_peer}
    finally:
        if client is not None:
            client.close()
        _stop(pong)
        driver.close()


def _burn() -> None:
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    while True:
        pass


class Burners:
    def __init__(self, count: int) -> None:
        ctx = mp.get_context("spawn")
        self.procs = [ctx.Process(target=_burn, daemon=True) for _ in range(count)]
        for p in self.procs:
            p.start()

    def close(self) -> None:
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            p.join(5)


def build_bare(workdir: str, name: str = "bare_wakeup") -> str | None:
    """Compile perf/<name>.c (a bare design in C) into ``workdir``; the executable's path, or None without a C
    compiler."""
    exe = os.path.join(workdir, name)
    compiler = os.environ.get("CC", "cc")
    if shutil.which(compiler) is None:
        return None
    subprocess.run([compiler, "-O2", "-o", exe, str(HERE / f"{name}.c")], check=True)
    return exe


def bare_rtt(exe: str, pings: int, yield_ns: int) -> dict[str, float]:
    # args: pings, warm-up, spin_ns, touch_pages, park_timeout_ns, yield_ns
    out = subprocess.run([exe, str(pings), str(max(1000, pings // 4)), "0", "0", "0", str(yield_ns)],
                         capture_output=True, text=True, timeout=600, check=True).stdout
    values = json.loads(out)
    return {t: values[t] for t in ("p50", "p90", "p99")}


def raw_rtt(pings: int) -> dict[str, float]:
    out = raw_socket_rtt("socket", pings, "poll")
    return {"p50": out["p50_us"], "p90": out["p90_us"], "p99": out["p99_us"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pings", type=int, default=20000)
    parser.add_argument("--quick", action="store_true", help="5,000 pings")
    parser.add_argument("--no-burners", action="store_true")
    parser.add_argument("--only", default="", help="comma-separated case names to run")
    parser.add_argument("--cpu-latency-qos", action="store_true",
                        help="hold /dev/cpu_dma_latency at 0 for the whole run (root; idle CPUs poll, not halt)")
    args = parser.parse_args(argv)
    # one request serves the whole machine: every process of the run wakes on CPUs that poll instead of halting
    qos = CpuLatencyRequest(0) if args.cpu_latency_qos else None
    try:
        return _run(args)
    finally:
        if qos is not None:
            qos.release()


def _run(args: argparse.Namespace) -> int:
    pings = 5000 if args.quick else args.pings
    have_c = bool(os.environ.get("AERON_C_BIN")) and os.access(
        os.path.join(os.environ.get("AERON_C_BIN", ""), "aeronmd"), os.X_OK)
    cases = [("ours-wakeup", "ours", "wakeup", "py", "wakeup")]
    if have_c:
        cases += [("aeronmd-backoff", "aeronmd", "backoff", "C", ""), ("aeronmd-spin", "aeronmd", "spin", "C", "")]
    only = {c for c in args.only.split(",") if c}
    results: dict[str, object] = {"cpu_latency_qos": args.cpu_latency_qos}
    workdir = tempfile.mkdtemp(prefix="bench-wakeup-")
    try:
        bare_exe = build_bare(workdir)
        _cases(args, pings, cases, only, results, bare_exe)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    RESULTS.mkdir(exist_ok=True)
    name = "wakeup_qos.json" if args.cpu_latency_qos else "wakeup.json"
    (RESULTS / name).write_text(json.dumps(results, indent=1))
    return 0


def _cases(args: argparse.Namespace, pings: int, cases: list, only: set, results: dict, bare_exe: str | None) -> None:
    if not only or "idle" in only:
        for transport in ("ipc", "udp"):
            results[f"idle_cpu_percent/{transport}"] = cpu = idle_cpu(transport)
            print(f"idle CPU % over {transport} (ours, wakeup, 5 s, no traffic): {cpu}", flush=True)
    for burners in ([0] if args.no_burners else [0, os.cpu_count() or 1]):
        burn = Burners(burners) if burners else None
        try:
            if not only or "raw" in only:
                key = f"udp/raw-socket-poll/burners={burners}"
                results[key] = raw_rtt(pings)
                print(f"{key:40s} {_fmt(results[key])}", flush=True)
            if bare_exe is not None and (not only or "bare" in only):
                for name, yield_ns in (("bare-design-c", WakeupIdleStrategy.DEFAULT_YIELD_NS),
                                       ("bare-design-c-park", 0)):
                    key = f"udp/{name}/burners={burners}"
                    results[key] = bare_rtt(bare_exe, pings, yield_ns)
                    print(f"{key:40s} {_fmt(results[key])}", flush=True)
            for transport in ("ipc", "udp"):
                for name, driver_kind, driver_idle, client_kind, client_idle in cases:
                    if only and name not in only:
                        continue
                    key = f"{transport}/{name}/burners={burners}"
                    driver = Driver(driver_kind, driver_idle)
                    try:
                        results[key] = sample_rtt(driver, client_kind, client_idle, transport, pings)
                    finally:
                        driver.close()
                    print(f"{key:40s} {_fmt(results[key])}", flush=True)
            if not only or "asyncio" in only:
                key = f"ipc/asyncio-wakeup/burners={burners}"
                driver = Driver("ours", "wakeup")
                try:
                    results[key] = aio_rtt(driver, pings)
                finally:
                    driver.close()
                print(f"{key:40s} {_fmt(results[key])}", flush=True)
        finally:
            if burn is not None:
                burn.close()
    for burners in ([0] if args.no_burners else [0, os.cpu_count() or 1]):
        ours = results.get(f"udp/ours-wakeup/burners={burners}")
        for reference, what in (("raw-socket-poll", "raw sockets parked in poll()"),
                                ("bare-design-c", "the bare design in C")):
            base = results.get(f"udp/{reference}/burners={burners}")
            if ours and base:
                ratio = {t: ours[t] / base[t] for t in ("p50", "p90", "p99")}
                results[f"udp/ours-over-{reference}/burners={burners}"] = ratio
                print(f"UDP round trip, ours wakeup / {what}, burners={burners}: "
                      + " ".join(f"{t} {v:.2f}x" for t, v in ratio.items()), flush=True)


def _fmt(value: object) -> str:
    return " ".join(f"{k} {v:9.2f}" for k, v in value.items()) + " µs"      # type: ignore[attr-defined]


if __name__ == "__main__":
    sys.exit(main())
