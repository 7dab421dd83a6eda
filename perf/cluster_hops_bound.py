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

Every message is 32 bytes of payload plus what the cluster adds (the session header is not added here: the bound
leaves out everything but the hops). The client prints ``RTT <n> <p50> <p90> <p99> <max>`` in ns, as
perf/cluster_bench_client.py does. Each process prints READY once its driver and streams are up.
"""
from __future__ import annotations

import os
import sys
import time

from aeron import Aeron, Context, MediaDriver
from aeron.driver import Context as DriverContext

HOST = "127.0.0.1"


def channel(port: int) -> str:
    return f"aeron:udp?endpoint={HOST}:{port}|term-length=64k"


def embedded(aeron_dir: str) -> MediaDriver:
    # the data spin as the benchmark's members have it (AERON_DRIVER_WAKEUP_DATA_SPIN), nothing else from the environment
    environ = {k: v for k, v in os.environ.items() if k == "AERON_DRIVER_WAKEUP_DATA_SPIN"}
    return MediaDriver.launch_embedded(DriverContext(environ=environ, aeron_dir=aeron_dir, threading_mode="SHARED",
                                                     shared_idle_strategy="wakeup", dir_delete_on_start=True))


def connected(*publications: object) -> None:
    while not all(p.is_connected for p in publications):           # type: ignore[attr-defined]
        time.sleep(0.01)


def offer(publication: object, payload: bytes) -> None:
    """Offer, waiting out back pressure for up to a second (sleeping, so that the driver in this process runs);
    a message still refused is dropped, and the client's round trip times out."""
    deadline = time.monotonic() + 1.0
    while publication.offer(payload) < 0 and time.monotonic() < deadline:     # type: ignore[attr-defined]
        time.sleep(0.0001)


def leader(aeron_dir: str, ingress: int, ack: int, f1: int, f2: int, egress: int) -> None:
    with embedded(aeron_dir), Aeron.connect(Context(aeron_dir)) as client:
        ingress_sub = client.add_subscription(channel(ingress), 101)
        ack_sub = client.add_subscription(channel(ack), 108)
        logs = [client.add_exclusive_publication(channel(port), 100) for port in (f1, f2)]
        egress_pub = client.add_exclusive_publication(channel(egress), 102)
        idle = client.wakeup_idle_strategy(ingress_sub, ack_sub)
        print("READY", flush=True)
        connected(*logs)
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

        while True:
            work = ingress_sub.poll(on_ingress, 10) + ack_sub.poll(on_ack, 10)
            # a quorum of two (this member and the first follower to ack): the later ack changes nothing
            while pending and pending[0][0] <= state["acked"]:
                offer(egress_pub, pending.pop(0)[1])
                work += 1
            idle.idle(work)


def follower(aeron_dir: str, log: int, ack: int) -> None:
    with embedded(aeron_dir), Aeron.connect(Context(aeron_dir)) as client:
        log_sub = client.add_subscription(channel(log), 100)
        ack_pub = client.add_exclusive_publication(channel(ack), 108)
        idle = client.wakeup_idle_strategy(log_sub)
        print("READY", flush=True)

        def on_log(buffer, offset, length, header) -> None:
            offer(ack_pub, buffer.get_bytes(offset, 8))

        while True:
            idle.idle(log_sub.poll(on_log, 10))


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
