# SPDX-License-Identifier: Apache-2.0
"""Our AeronCluster as the client of perf/bench_cluster_three.py, the twin of perf/cluster_java/ClusterBenchClient.java
(same commands, same output), driven line by line on stdin:

    .venv/bin/python perf/cluster_bench_client.py <aeron dir> <ingress endpoints> <egress channel>

``throughput <n> <len> <window>``, ``pingpong <n> <len>``, ``failover <len>``, ``close``: see the Java client. Every
wait idles with our wake-up idle strategy on the egress subscription (docs/wakeup.md): it parks until our driver's
receiver writes the egress, where Java's client backs off (spins, yields, then parks up to 1 ms).
``time.monotonic_ns`` is CLOCK_MONOTONIC, the clock of Java's ``System.nanoTime``. With ``AERON_EVENT_CLUSTER_STEPS``
(aeron/common/event_log.py) each ping's offer and echo go to the event log too (perf/cluster_rtt_steps.py).
"""
from __future__ import annotations

import sys
import time

from aeron import Aeron, Context as AeronContext
from aeron.cluster.client import AeronCluster, Context, EgressListener
from aeron.common import event_log


class Counting(EgressListener):
    """Counts echoes and keeps the time of the last."""

    def __init__(self) -> None:
        self.echoes = 0
        self.last_echo_ns = 0

    def on_message(self, cluster_session_id: int, timestamp: int, buffer: object, offset: int, length: int,
                   header: object) -> None:
        self.echoes += 1
        self.last_echo_ns = time.monotonic_ns()


def throughput(cluster: AeronCluster, idle: object, listener: Counting, count: int, length: int, window: int) -> str:
    payload = b"t" * length
    listener.echoes = 0
    sent = 0
    offer, poll, idle_fn = cluster.offer, cluster.poll_egress, idle.idle        # type: ignore[attr-defined]
    start = time.monotonic_ns()
    deadline = start + 300 * 10**9
    while listener.echoes < count:
        work = 0
        while sent < count and sent - listener.echoes < window and offer(payload) > 0:
            sent += 1
            work += 1
        work += poll()
        idle_fn(work)
        if not work and time.monotonic_ns() > deadline:
            return f"TIMEOUT throughput {listener.echoes}"
    return f"THROUGHPUT {count} {listener.last_echo_ns - start}"


def pingpong(cluster: AeronCluster, idle: object, listener: Counting, count: int, length: int) -> str:
    payload = b"p" * length
    rtt = [0] * count
    listener.echoes = 0
    offer, poll, idle_fn, reset = cluster.offer, cluster.poll_egress, idle.idle, idle.reset  # type: ignore[attr-defined]
    deadline = time.monotonic_ns() + 300 * 10**9
    steps = event_log.STEPS
    for done in range(count):
        sent_ns = time.monotonic_ns()
        if steps:
            event_log.log_event("client", "PING_OFFERED", str(done))
        while offer(payload) < 0:
            idle_fn(poll())
        reset()
        while listener.echoes == done:
            idle_fn(poll())
            if time.monotonic_ns() > deadline:
                return f"TIMEOUT pingpong {done}"
        reset()
        if steps:
            event_log.log_event("client", "ECHO_RECEIVED", str(done))
        rtt[done] = listener.last_echo_ns - sent_ns
    rtt.sort()
    return f"RTT {count} {rtt[count // 2]} {rtt[int(count * 0.9)]} {rtt[int(count * 0.99)]} {rtt[-1]}"


def failover(cluster: AeronCluster, idle: object, listener: Counting, length: int) -> str:
    payload = b"f" * length
    term = cluster.leadership_term_id
    deadline = time.monotonic_ns() + 300 * 10**9
    seen = listener.echoes
    last_offer_ns = 0
    offer_term = term
    outstanding = ready = False
    while time.monotonic_ns() < deadline:
        work = cluster.poll_egress()
        now = time.monotonic_ns()
        if listener.echoes != seen:
            seen = listener.echoes
            outstanding = False
            if cluster.leadership_term_id != term:
                return f"FAILOVER {listener.last_echo_ns} {cluster.leader_member_id}"
            if not ready:
                ready = True
                print("FAILOVER_READY", flush=True)
        if ((not outstanding and now - last_offer_ns >= 1_000_000)
                or (outstanding and (now - last_offer_ns >= 10_000_000 or cluster.leadership_term_id != offer_term))):
            if cluster.offer(payload) > 0:
                outstanding = True
                last_offer_ns = now
                offer_term = cluster.leadership_term_id
                work += 1
            else:
                cluster.send_keep_alive()
        idle.idle(work)                                                       # type: ignore[attr-defined]
    return "TIMEOUT failover"


def main(argv: list[str]) -> int:
    aeron_dir, endpoints, egress = argv
    listener = Counting()
    client = Aeron.connect(AeronContext(aeron_dir))
    cluster = AeronCluster.connect(Context(environ={}, aeron=client, aeron_dir=aeron_dir,
                                           ingress_channel="aeron:udp?term-length=64k", ingress_endpoints=endpoints,
                                           egress_channel=egress, egress_listener=listener,
                                           message_timeout_ns=30 * 10**9))
    idle = client.wakeup_idle_strategy(cluster.egress_subscription)
    print(f"CONNECTED leader={cluster.leader_member_id}", flush=True)
    try:
        for line in sys.stdin:
            parts = line.split()
            if not parts:
                continue
            if parts[0] == "throughput":
                out = throughput(cluster, idle, listener, int(parts[1]), int(parts[2]), int(parts[3]))
            elif parts[0] == "pingpong":
                out = pingpong(cluster, idle, listener, int(parts[1]), int(parts[2]))
            elif parts[0] == "failover":
                out = failover(cluster, idle, listener, int(parts[1]))
            elif parts[0] == "close":
                break
            else:
                out = f"ERROR unknown command {parts[0]}"
            print(out, flush=True)
    finally:
        cluster.close()
        client.close()
    print("CLOSED", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
