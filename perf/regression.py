# SPDX-License-Identifier: Apache-2.0
"""The latency regression suite: benchmarks of our round trips and throughput, with references (a raw UDP round
trip, a bare copy) that show what the machine is doing.

    ./run.sh regress                                   this checkout against its base commit (perf/compare.py)
    .venv/bin/python perf/regression.py -o run.json [--fast | --rigorous]      the benchmarks alone, under pyperf
    .venv/bin/python perf/regression.py --serve        perf/compare.py's worker (commands on stdin)

Benchmarks (each pyperf value is the time of one round trip or of one message):
  ref_udp_rtt      raw UDP ping-pong over loopback with a Python echo process (blocking sockets): the floor of a
                   process-to-process round trip on this machine, the reference of every *_rtt below;
  ipc_rtt          our client ↔ our pong sample over ``aeron:ipc``;
  udp_rtt          the same over ``aeron:udp`` on loopback (through our driver twice);
  aio_rtt          an ``aeron.aio`` client on asyncio ↔ the pong over IPC;
  ref_copy_32B     a bare 32-byte copy into a bytearray from a Python loop: the reference of throughput;
  ipc_msg_32B      one 32-byte message offered and polled through an IPC publication (batches of 1,000).
The two per-message benchmarks take the thread's CPU time, not the wall clock: their work is all in this thread, and
on a loaded or CPU-limited machine the time spent waiting for a CPU (most of a value at load 20) would otherwise
land on whichever side the scheduler put off, far more than any change costs.
Everything ours waits with the ``wakeup`` idle strategy (the driver, the pong, the pinging client), so nothing
spins and the numbers do not depend on how many cores are free. Each process (a ``--serve`` worker, or a pyperf worker)
starts its own driver and pong processes once, from the tree it imported ``aeron`` from, and stops them at exit.
"""
from __future__ import annotations

import asyncio
import atexit
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid

import pyperf

PY = sys.executable
PING_STREAM, PONG_STREAM = 1002, 1003
_state: dict[str, object] = {}


def _env() -> dict[str, str]:
    import aeron
    env = {k: v for k, v in os.environ.items() if not k.startswith("AERON_")}
    # the tree this process imported aeron from (perf/compare.py points PYTHONPATH at the base commit's worktree or
    # at the change): the driver and the pong run the same code as the pinging side
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(os.path.abspath(aeron.__file__)))
    return env


def _port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spawn(args: list[str]) -> subprocess.Popen:
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env())
    atexit.register(_stop, proc)
    return proc


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def _driver() -> str:
    if "dir" not in _state:
        aeron_dir = f"/dev/shm/aeron-regress-{uuid.uuid4().hex[:8]}"
        _spawn([PY, "-m", "aeron.driver", f"aeron.dir={aeron_dir}", "aeron.dir.delete.on.start=true",
                "aeron.dir.delete.on.shutdown=true", "aeron.threading.mode=SHARED",
                "aeron.shared.idle.strategy=wakeup"])
        atexit.register(shutil.rmtree, aeron_dir, True)
        deadline = time.monotonic() + 20
        while not os.path.exists(os.path.join(aeron_dir, "cnc.dat")):
            if time.monotonic() > deadline:
                raise RuntimeError("driver did not start")
            time.sleep(0.05)
        time.sleep(0.3)
        _state["dir"] = aeron_dir
    return _state["dir"]        # type: ignore[return-value]


def _client():
    if "client" not in _state:
        from aeron import Aeron, Context
        client = Aeron.connect(Context(_driver()))
        atexit.register(client.close)
        _state["client"] = client
    return _state["client"]


class _PingPong:
    """A pong process on ``channels`` and our ping side in this process, parked between pongs."""

    def __init__(self, transport: str) -> None:
        if transport == "ipc":
            ping_channel = pong_channel = "aeron:ipc"
        else:
            ping_channel = f"aeron:udp?endpoint=127.0.0.1:{_port()}"
            pong_channel = f"aeron:udp?endpoint=127.0.0.1:{_port()}"
        offset = len([k for k in _state if k.startswith("pp-")]) * 10    # own streams per transport
        self.ping_stream, self.pong_stream = PING_STREAM + offset, PONG_STREAM + offset
        aeron_dir = _driver()
        _spawn([PY, "-m", "aeron.samples.pong", "--idle", "wakeup", "-p", aeron_dir, "-c", ping_channel, "-C",
                pong_channel, "-s", str(self.ping_stream), "-S", str(self.pong_stream)])
        client = _client()
        self.sub = client.add_subscription(pong_channel, self.pong_stream)
        self.pub = client.add_exclusive_publication(ping_channel, self.ping_stream)
        deadline = time.monotonic() + 30
        while not (self.pub.is_connected and self.sub.image_count):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{transport} ping-pong did not connect")
            time.sleep(0.01)
        self.idle = client.wakeup_idle_strategy(self.sub)
        self.got = 0

    def _on_pong(self, buffer, offset, length, header) -> None:
        self.got += 1

    def time(self, loops: int) -> float:
        offer, poll, idle, handler = self.pub.offer, self.sub.poll, self.idle.idle, self._on_pong
        message = bytes(32)
        clock = time.perf_counter
        start = clock()
        for _ in range(loops):
            want = self.got + 1
            while offer(message) < 0:
                pass
            while self.got < want:
                idle(poll(handler, 10))
        return clock() - start


def _ping_pong(transport: str) -> _PingPong:
    key = f"pp-{transport}"
    if key not in _state:
        _state[key] = _PingPong(transport)
    return _state[key]          # type: ignore[return-value]


def ipc_rtt(loops: int) -> float:
    return _ping_pong("ipc").time(loops)


def udp_rtt(loops: int) -> float:
    return _ping_pong("udp").time(loops)


def _echo(port_file: str) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    with open(port_file, "w") as f:
        f.write(str(sock.getsockname()[1]))
    while True:
        data, address = sock.recvfrom(64)
        sock.sendto(data, address)


def ref_udp_rtt(loops: int) -> float:
    if "echo" not in _state:
        port_file = f"/dev/shm/aeron-regress-echo-{uuid.uuid4().hex[:8]}"
        proc = subprocess.Popen([PY, __file__, "--echo", port_file], env=_env())
        atexit.register(lambda: (proc.kill(), proc.wait()))
        while not (os.path.exists(port_file) and os.path.getsize(port_file)):
            time.sleep(0.01)
        with open(port_file) as f:
            port = int(f.read())
        os.unlink(port_file)
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.connect(("127.0.0.1", port))
        _state["echo"] = sock
    sock = _state["echo"]
    send, recv = sock.send, sock.recv       # type: ignore[attr-defined]
    message = bytes(32)
    clock = time.perf_counter
    start = clock()
    for _ in range(loops):
        send(message)
        recv(64)
    return clock() - start


def aio_rtt(loops: int) -> float:
    if "aio" not in _state:
        loop = asyncio.new_event_loop()
        atexit.register(loop.close)
        _state["aio"] = (loop, loop.run_until_complete(_aio_setup()))
        atexit.register(lambda: loop.run_until_complete(_state["aio"][1][0].close()))    # runs before loop.close
    loop, (client, pub, sub) = _state["aio"]    # type: ignore[misc]
    return loop.run_until_complete(_aio_loops(pub, sub, loops))


async def _aio_setup():
    import aeron.aio
    from aeron.aio.client import AsyncAeron
    from aeron import Aeron, Context
    aeron_dir = _driver()
    _spawn([PY, "-m", "aeron.samples.pong", "--idle", "wakeup", "-p", aeron_dir, "-c", "aeron:ipc", "-C",
            "aeron:ipc", "-s", "3002", "-S", "3003"])
    client = AsyncAeron(Aeron.connect(Context(aeron_dir, use_conductor_agent_invoker=True)))
    sub = await client.add_subscription("aeron:ipc", 3003)
    pub = await client.add_exclusive_publication("aeron:ipc", 3002)
    await pub.wait_connected(timeout=30)
    while not sub.image_count:
        await asyncio.sleep(0.01)
    assert isinstance(client, aeron.aio.AsyncAeron)
    return client, pub, sub


async def _aio_loops(pub, sub, loops: int) -> float:
    message = bytes(32)
    clock = time.perf_counter
    start = clock()
    for _ in range(loops):
        await pub.offer(message)
        await sub.receive(timeout=5)
    return clock() - start


BATCH = 1000


def ref_copy_32B(loops: int) -> float:
    payload = bytes(32)
    target = bytearray(32 * BATCH)
    clock = time.thread_time       # CPU time: a busy machine's waits for a CPU are not the code's cost
    start = clock()
    for _ in range(loops):
        for offset in range(0, 32 * BATCH, 32):
            target[offset:offset + 32] = payload
    return clock() - start          # pyperf divides by loops * inner_loops (BATCH)


def ipc_msg_32B(loops: int) -> float:
    if "tput" not in _state:
        client = _client()
        sub = client.add_subscription("aeron:ipc", 4001)
        pub = client.add_exclusive_publication("aeron:ipc", 4001)
        while not (pub.is_connected and sub.image_count):
            time.sleep(0.01)
        _state["tput"] = (pub, sub)
    pub, sub = _state["tput"]   # type: ignore[misc]
    offer, poll = pub.offer, sub.poll
    payload = bytes(32)

    def handler(buffer, offset, length, header):
        pass
    clock = time.thread_time
    start = clock()
    for _ in range(loops):
        for _ in range(BATCH):
            while offer(payload) < 0:
                pass
        polled = 0
        while polled < BATCH:
            polled += poll(handler, BATCH)
    return clock() - start


BENCHMARKS = {"ref_udp_rtt": ref_udp_rtt, "ipc_rtt": ipc_rtt, "udp_rtt": udp_rtt, "aio_rtt": aio_rtt,
              "ref_copy_32B": ref_copy_32B, "ipc_msg_32B": ipc_msg_32B}
# what each benchmark is normalised by (perf/compare.py compares these ratios)
RATIOS = {"ipc_rtt": "ref_udp_rtt", "udp_rtt": "ref_udp_rtt", "aio_rtt": "ref_udp_rtt", "ipc_msg_32B": "ref_copy_32B"}


INNER_LOOPS = {"ref_copy_32B": BATCH, "ipc_msg_32B": BATCH}


def calibrate(name: str, value_s: float = 0.005) -> int:
    """The loop count that makes one call of benchmark ``name`` last ``value_s`` or more (doubling from 1)."""
    func, loops = BENCHMARKS[name], 1
    while func(loops) < value_s and loops < 1 << 20:
        loops *= 2
    return loops


def time_per_loop(name: str, loops: int) -> float:
    """One value of benchmark ``name``: seconds per round trip or message over a call of ``loops`` loops."""
    return BENCHMARKS[name](loops) / (loops * INNER_LOOPS.get(name, 1))


def serve() -> None:
    """perf/compare.py's worker: one command a line on stdin, one JSON answer a line on stdout: ``calibrate NAME``
    (the loop count), ``run NAME LOOPS`` (a value), ``quit``. Keeps its driver and pongs between commands, so the
    base's and the change's workers, both alive, can be asked for values in turn."""
    import json
    for line in sys.stdin:
        command, *args = line.split()
        if command == "quit":
            break
        if command == "calibrate":
            answer: object = calibrate(args[0])
        elif command == "run":
            answer = time_per_loop(args[0], int(args[1]))
        else:
            raise SystemExit(f"regression.py --serve: unknown command {command!r}")
        print(json.dumps(answer), flush=True)


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--echo":
        _echo(sys.argv[2])
        return
    if sys.argv[1:] == ["--serve"]:
        serve()
        return
    runner = pyperf.Runner()
    runner.metadata["description"] = "aeron for Python latency regression suite (perf/regression.py)"
    for name, func in BENCHMARKS.items():
        runner.bench_time_func(name, func, inner_loops=INNER_LOOPS.get(name))


if __name__ == "__main__":
    main()
