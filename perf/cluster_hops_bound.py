# SPDX-License-Identifier: Apache-2.0
"""The bound of a three-member cluster's round trip on this machine, for perf/bench_cluster_three.py: the same UDP hops
through our drivers with no cluster logic. One process per member, each an embedded driver of ours (SHARED,
``wakeup``: as ``python -m aeron.cluster`` runs its driver) and one relay thread parked on the wake-up board:

    client (on a follower's driver) --ingress--> leader --log--> both followers --append ack--> leader
    leader (at the first ack: a quorum of two) --egress--> client

    .venv/bin/python perf/cluster_hops_bound.py leader <dir> <ingress port> <ack port> <f1 log port> <f2 log port>
        <egress port>
    .venv/bin/python perf/cluster_hops_bound.py follower <dir> <log port> <ack port>
    .venv/bin/python perf/cluster_hops_bound.py client <dir> <ingress port> <egress port>   (stdin: pingpong <n> <len>)

With ``CLUSTER_HOPS_ONE_THREAD=1`` a leader or follower runs its driver (INVOKER), its client's conductor and its
relay as one agent on one thread with one park (aeron.driver.driver_thread.DriverThreadAgent, as
``ClusteredMediaDriver.launch(one_thread=True)`` runs a member): no hand-off between threads within a process.

Every message is 32 bytes of payload plus what the cluster adds (the session header is not added here: the bound
leaves out everything but the hops). The client prints ``RTT <n> <p50> <p90> <p99> <max>`` in ns, as
perf/cluster_bench_client.py does. Each process prints READY once its driver and streams are up.
"""
from __future__ import annotations

import os
import sys
import time

from aeron import Aeron, Context, MediaDriver
from aeron.common.agent import Agent, AgentInvoker
from aeron.common.wakeup import CLIENTS, WakeupIdleStrategy, streams_mask
from aeron.driver import Context as DriverContext
from aeron.driver.driver_thread import DriverThreadAgent

HOST = "127.0.0.1"
ONE_THREAD = os.environ.get("CLUSTER_HOPS_ONE_THREAD") == "1"
# what a wait for a connection or out of back pressure runs: a sleep (the driver has its own thread), or the
# thread's other agents (one thread)
_pump = [lambda: time.sleep(0.0001)]


def channel(port: int) -> str:
    return f"aeron:udp?endpoint={HOST}:{port}|term-length=64k"


def embedded(aeron_dir: str) -> MediaDriver:
    # the data spin as the benchmark's members have it (AERON_DRIVER_WAKEUP_DATA_SPIN), nothing else from the environment
    environ = {k: v for k, v in os.environ.items() if k == "AERON_DRIVER_WAKEUP_DATA_SPIN"}
    return MediaDriver.launch_embedded(DriverContext(environ=environ, aeron_dir=aeron_dir,
                                                     threading_mode="INVOKER" if ONE_THREAD else "SHARED",
                                                     shared_idle_strategy="wakeup", dir_delete_on_start=True))


def connected(*publications: object) -> None:
    while not all(p.is_connected for p in publications):           # type: ignore[attr-defined]
        _pump[0]()


class _Relay(Agent):
    def __init__(self, step) -> None:
        self.do_work = step                                         # type: ignore[method-assign]


def run_member(aeron_dir: str, streams: tuple[int, ...], setup) -> None:
    """Run the relay ``setup(client, subscriptions)`` returns (its duty cycle) until killed: on its own thread
    beside a SHARED driver thread, or with ONE_THREAD on the driver's thread."""
    with embedded(aeron_dir) as driver:
        if not ONE_THREAD:
            with Aeron.connect(Context(aeron_dir)) as client:
                step, subs = setup(client)
                idle = client.wakeup_idle_strategy(*subs)
                print("READY", flush=True)
                step(True)
                while True:
                    idle.idle(step())
        thread = DriverThreadAgent(driver)
        with Aeron.connect(Context(aeron_dir, use_conductor_agent_invoker=True,
                                   driver_agent_invoker=driver.invoker)) as client:
            thread.add(client.conductor_agent_invoker)
            idle = thread.bind(WakeupIdleStrategy(), streams_mask(streams) | CLIENTS)
            _pump[0] = thread.invoke
            step, _ = setup(client)
            relay = AgentInvoker(_Relay(step))
            relay.start()
            print("READY", flush=True)
            step(True)
            thread.add(relay)
            while True:
                idle.idle(thread.do_work())


def offer(publication: object, payload: bytes) -> None:
    """Offer, waiting out back pressure for up to a second (sleeping, so that the driver in this process runs);
    a message still refused is dropped, and the client's round trip times out."""
    deadline = time.monotonic() + 1.0
    while publication.offer(payload) < 0 and time.monotonic() < deadline:     # type: ignore[attr-defined]
        _pump[0]()


def leader(aeron_dir: str, ingress: int, ack: int, f1: int, f2: int, egress: int) -> None:
    def setup(client):
        ingress_sub = client.add_subscription(channel(ingress), 101)
        ack_sub = client.add_subscription(channel(ack), 108)
        logs = [client.add_exclusive_publication(channel(port), 100) for port in (f1, f2)]
        egress_pub = client.add_exclusive_publication(channel(egress), 102)
        pending: list[tuple[int, bytes]] = []
        state = {"seq": 0, "acked": 0}

        def on_ingress(buffer, offset, length, header) -> None:
            state["seq"] += 1
            entry = state["seq"].to_bytes(8, "little") + buffer.get_bytes(offset, length)
            for log in logs:
                offer(log, entry)
            pending.append((state["seq"], entry[8:]))

        def on_ack(buffer, offset, length, header) -> None:
            state["acked"] = max(state["acked"], int.from_bytes(buffer.get_bytes(offset, 8), "little"))

        def step(first: bool = False) -> int:
            if first:
                connected(*logs)
                return 0
            work = ingress_sub.poll(on_ingress, 10) + ack_sub.poll(on_ack, 10)
            # a quorum of two (this member and the first follower to ack): the later ack changes nothing
            while pending and pending[0][0] <= state["acked"]:
                offer(egress_pub, pending.pop(0)[1])
                work += 1
            return work
        return step, (ingress_sub, ack_sub)

    run_member(aeron_dir, (101, 108), setup)


def follower(aeron_dir: str, log: int, ack: int) -> None:
    def setup(client):
        log_sub = client.add_subscription(channel(log), 100)
        ack_pub = client.add_exclusive_publication(channel(ack), 108)

        def on_log(buffer, offset, length, header) -> None:
            offer(ack_pub, buffer.get_bytes(offset, 8))

        def step(first: bool = False) -> int:
            return 0 if first else log_sub.poll(on_log, 10)
        return step, (log_sub,)

    run_member(aeron_dir, (100,), setup)


def client_loop(aeron_dir: str, ingress: int, egress: int) -> None:
    with Aeron.connect(Context(aeron_dir)) as client:
        egress_sub = client.add_subscription(channel(egress), 102)
        ingress_pub = client.add_exclusive_publication(channel(ingress), 101)
        idle = client.wakeup_idle_strategy(egress_sub)
        connected(ingress_pub)
        while egress_sub.image_count == 0:
            time.sleep(0.01)
        print("READY", flush=True)
        got = [0, 0]

        def on_egress(buffer, offset, length, header) -> None:
            got[0] += 1
            got[1] = time.monotonic_ns()

        for line in sys.stdin:
            parts = line.split()
            if not parts:
                continue
            if parts[0] == "close":
                break
            count, payload = int(parts[1]), b"p" * int(parts[2])
            rtt: list[int] = []
            lost = 0
            for _ in range(count):
                start = time.monotonic_ns()
                expected = got[0] + 1
                offer(ingress_pub, payload)
                idle.reset()
                while got[0] < expected and time.monotonic_ns() - start < 1_000_000_000:
                    idle.idle(egress_sub.poll(on_egress, 10))
                idle.reset()
                if got[0] < expected:
                    lost += 1               # dropped by an offer that gave up: not counted, and not waited for again
                    got[0] = expected
                else:
                    rtt.append(got[1] - start)
            rtt.sort()
            n = len(rtt)
            print(f"RTT {n} {rtt[n // 2]} {rtt[int(n * 0.9)]} {rtt[int(n * 0.99)]} {rtt[-1]} lost={lost}",
                  flush=True)


def main(argv: list[str]) -> int:
    role, aeron_dir, *ports = argv
    numbers = [int(p) for p in ports]
    if role == "leader":
        leader(aeron_dir, *numbers)
    elif role == "follower":
        follower(aeron_dir, *numbers)
    else:
        client_loop(aeron_dir, *numbers)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
