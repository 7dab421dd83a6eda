# SPDX-License-Identifier: Apache-2.0
"""Async ping-pong RTT and streaming, side by side in one run: our client sync, on asyncio and on uvloop; pyzmq's
``zmq.asyncio`` and a plain asyncio/uvloop UDP echo for comparison.

    .venv/bin/python perf/bench_aio.py [--pings 20000] [--messages 1000000]

Setup: our driver runs as its own process (SHARED, backoff idle); the pong side is another process (our sync
`aeron.samples.pong`, a zmq REP socket, a UDP echo server), spinning or blocking as noted. The measuring side runs
in this process. Spinning threads: the pong process (1) and, for the sync ping, this process (1); the asyncio pings
back off with sleep(0) then short sleeps. Target (docs/roadmap.md): async RTT p50 <= 1/3 of pyzmq's.
Results: perf/results/aio.json.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"
PING_STREAM, PONG_STREAM = 1002, 1003


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AERON_")}
    env["PYTHONPATH"] = str(ROOT)
    return env


def _percentiles(samples: list[int]) -> dict[str, float]:
    samples = sorted(samples)
    pick = lambda p: samples[min(len(samples) - 1, int(p * len(samples) / 100))] / 1000.0   # noqa: E731
    return {"p50_us": pick(50), "p90_us": pick(90), "p99_us": pick(99)}


class Driver:
    def __init__(self) -> None:
        self.dir = f"/dev/shm/aeron-bench-aio-{uuid.uuid4().hex[:8]}"
        self.proc = subprocess.Popen([sys.executable, "-m", "aeron.driver", f"aeron.dir={self.dir}",
                                      "aeron.threading.mode=SHARED", "aeron.dir.delete.on.shutdown=true"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env())
        deadline = time.monotonic() + 15
        while not os.path.exists(os.path.join(self.dir, "cnc.dat")):
            if time.monotonic() > deadline:
                raise RuntimeError("driver did not start")
            time.sleep(0.05)
        time.sleep(0.3)

    def close(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(15)
        shutil.rmtree(self.dir, ignore_errors=True)


def _pong_process(aeron_dir: str, offset: int) -> subprocess.Popen:
    # fresh stream ids per run: the previous run's publications linger, and a pong serves the first image it sees
    return subprocess.Popen([sys.executable, "-m", "aeron.samples.pong", "--idle", "spin", "-p", aeron_dir, "-c",
                             "aeron:ipc", "-C", "aeron:ipc", "-s", str(PING_STREAM + offset), "-S",
                             str(PONG_STREAM + offset)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env())


def sync_rtt(aeron_dir: str, pings: int, offset: int) -> dict[str, float]:
    from aeron import Aeron, Context
    samples = []
    with Aeron.connect(Context(aeron_dir)) as client:
        sub = client.add_subscription("aeron:ipc", PONG_STREAM + offset)
        pub = client.add_exclusive_publication("aeron:ipc", PING_STREAM + offset)
        while not (pub.is_connected and sub.image_count):
            time.sleep(0.001)
        got = [0]

        def on_pong(buffer, offset, length, header):
            got[0] += 1
        message = bytes(32)
        clock = time.perf_counter_ns
        for i in range(pings):
            start = clock()
            while pub.offer(message) < 0:
                pass
            while got[0] <= i:
                sub.poll(on_pong, 10)
            samples.append(clock() - start)
    return _percentiles(samples[pings // 10:])


async def _async_rtt(aeron_dir: str, pings: int, offset: int) -> dict[str, float]:
    import aeron.aio
    samples = []
    async with aeron.aio.connect(aeron_dir) as client:
        sub = await client.add_subscription("aeron:ipc", PONG_STREAM + offset)
        pub = await client.add_exclusive_publication("aeron:ipc", PING_STREAM + offset)
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
    return _percentiles(samples[pings // 10:])


async def _async_stream(aeron_dir: str, messages: int) -> float:
    import aeron.aio
    async with aeron.aio.connect(aeron_dir) as client:
        pub = await client.add_publication("aeron:ipc", 1001)
        await pub.wait_connected(timeout=10)
        payload = bytes(32)
        start = time.perf_counter()
        for _ in range(messages):
            await pub.offer(payload)
        return messages / (time.perf_counter() - start)


def sync_stream(aeron_dir: str, messages: int) -> float:
    from aeron import Aeron, Context
    with Aeron.connect(Context(aeron_dir)) as client:
        pub = client.add_publication("aeron:ipc", 1001)
        while not pub.is_connected:
            time.sleep(0.001)
        payload = bytes(32)
        offer = pub.offer
        start = time.perf_counter()
        for _ in range(messages):
            while offer(payload) < 0:
                pass
        return messages / (time.perf_counter() - start)


def _run(coroutine_factory, loop_kind: str):
    if loop_kind == "uvloop":
        import uvloop
        return uvloop.run(coroutine_factory())
    return asyncio.run(coroutine_factory())


def _zmq_rep(endpoint: str, count: int) -> None:
    import zmq
    ctx = zmq.Context()
    rep = ctx.socket(zmq.REP)
    rep.bind(endpoint)
    for _ in range(count):
        rep.send(rep.recv())
    rep.close()
    ctx.term()


async def _zmq_rtt(endpoint: str, pings: int) -> dict[str, float]:
    import zmq
    import zmq.asyncio
    ctx = zmq.asyncio.Context()
    req = ctx.socket(zmq.REQ)
    req.connect(endpoint)
    samples = []
    message = bytes(32)
    clock = time.perf_counter_ns
    for _ in range(pings):
        start = clock()
        await req.send(message)
        await req.recv()
        samples.append(clock() - start)
    req.close()
    ctx.term()
    return _percentiles(samples[pings // 10:])


def _udp_echo(port_queue, count: int) -> None:
    async def main():
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        seen = [0]

        class Echo(asyncio.DatagramProtocol):
            def connection_made(self, transport):
                self.transport = transport

            def datagram_received(self, data, addr):
                self.transport.sendto(data, addr)
                seen[0] += 1
                if seen[0] >= count and not done.done():
                    done.set_result(None)
        transport, _ = await loop.create_datagram_endpoint(Echo, local_addr=("127.0.0.1", 0))
        port_queue.put(transport.get_extra_info("sockname")[1])
        await done
        transport.close()
    import uvloop
    uvloop.run(main())


async def _udp_rtt(port: int, pings: int) -> dict[str, float]:
    loop = asyncio.get_running_loop()
    samples = []
    waiter: list[asyncio.Future] = []

    class Client(asyncio.DatagramProtocol):
        def datagram_received(self, data, addr):
            if waiter and not waiter[0].done():
                waiter[0].set_result(None)
    transport, _ = await loop.create_datagram_endpoint(Client, remote_addr=("127.0.0.1", port))
    message = bytes(32)
    clock = time.perf_counter_ns
    for _ in range(pings):
        waiter[:] = [loop.create_future()]
        start = clock()
        transport.sendto(message)
        await waiter[0]
        samples.append(clock() - start)
    transport.close()
    return _percentiles(samples[pings // 10:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pings", type=int, default=20000)
    parser.add_argument("--messages", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    results: dict[str, dict] = {}
    driver = Driver()
    try:
        for n, kind in enumerate(("sync", "asyncio", "uvloop")):
            offset = 10 * n
            pong = _pong_process(driver.dir, offset)
            try:
                time.sleep(0.5)
                if kind == "sync":
                    results[f"rtt-{kind}"] = sync_rtt(driver.dir, args.pings, offset)
                else:
                    results[f"rtt-{kind}"] = _run(lambda: _async_rtt(driver.dir, args.pings, offset), kind)
            finally:
                pong.send_signal(signal.SIGINT)
                pong.wait(10)
            print(f"aeron IPC RTT {kind:8s}: " + "  ".join(f"{k} {v:.1f}" for k, v in results[f"rtt-{kind}"].items()),
                  flush=True)
        for kind in ("sync", "asyncio", "uvloop"):
            subscriber = subprocess.Popen([sys.executable, "-m", "aeron.samples.rate_subscriber", "--idle", "spin",
                                           "-p", driver.dir, "-c", "aeron:ipc"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                          env=_env())
            try:
                time.sleep(0.5)
                rate = sync_stream(driver.dir, args.messages) if kind == "sync" else \
                    _run(lambda: _async_stream(driver.dir, args.messages), kind)
            finally:
                subscriber.send_signal(signal.SIGINT)
                subscriber.wait(10)
            results[f"stream-{kind}"] = {"msg_per_s": rate}
            print(f"aeron IPC stream 32 B {kind:8s}: {rate / 1e6:.2f} M msg/s", flush=True)
    finally:
        driver.close()
    ctx = mp.get_context("spawn")
    endpoint = f"ipc:///tmp/aeron-bench-zmq-{uuid.uuid4().hex[:8]}"
    rep = ctx.Process(target=_zmq_rep, args=(endpoint, args.pings))
    rep.start()
    results["rtt-pyzmq-asyncio"] = asyncio.run(_zmq_rtt(endpoint, args.pings))
    rep.join(10)
    print("pyzmq zmq.asyncio REQ/REP ipc RTT: " + "  ".join(f"{k} {v:.1f}" for k, v in
                                                            results["rtt-pyzmq-asyncio"].items()), flush=True)
    for kind in ("asyncio", "uvloop"):
        ports = ctx.Queue()
        echo = ctx.Process(target=_udp_echo, args=(ports, args.pings))
        echo.start()
        port = ports.get(timeout=20)
        results[f"rtt-udp-echo-{kind}"] = _run(lambda: _udp_rtt(port, args.pings), kind)
        echo.join(10)
        print(f"{kind} UDP echo RTT (uvloop server): " + "  ".join(
            f"{k} {v:.1f}" for k, v in results[f"rtt-udp-echo-{kind}"].items()), flush=True)
    zmq_p50 = results["rtt-pyzmq-asyncio"]["p50_us"]
    for kind in ("sync", "asyncio", "uvloop"):
        p50 = results[f"rtt-{kind}"]["p50_us"]
        print(f"ratio RTT p50 aeron {kind} / pyzmq = {p50 / zmq_p50:.3f} (target <= 0.333)")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "aio.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
