# SPDX-License-Identifier: Apache-2.0
"""Where a round trip of perf/bench_cluster_three.py's ping-pong goes, step by step, on our side: our members, their
containers and our client write the steps of each ping to one event log (``AERON_EVENT_CLUSTER_LOG`` with
``AERON_EVENT_CLUSTER_STEPS=true``, aeron/common/event_log.py), on one clock, and this script reads them back.

    .venv/bin/python perf/cluster_rtt_steps.py [--pings 400] [--ours key=value ...]
    .venv/bin/python perf/cluster_rtt_steps.py --log <event log>      # read a log written before

It runs ``bench_cluster_three.py --only ours --runs 1 --no-bound`` with a short throughput phase (it needs what that
script needs: AERON_JAVA_CP and javac), then prints for the ping-pong's round trips the time between successive steps
(p10 / p50 / p90, µs):

    ping offered (client) → ingress polled (leader) → AppendPosition sent (the first follower) → AppendPosition
    received (leader) → commit (leader) → services woken (leader, at the end of its one thread's cycle) → log polled
    (the leader's service) → echo received (client)

and the median round trip's timeline with every member's and service's steps. Each step costs a line written to the
log (a system call): the round trips are longer than without, so compare runs of this script with each other.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from typing import NamedTuple

HERE = pathlib.Path(__file__).resolve().parent


class Event(NamedTuple):
    ns: int
    who: str
    kind: str
    detail: str


# (who, kind) of each step in order: who is "client", "leader" (the member that polled the ping from its ingress),
# "follower" (any other member), or "leader-service"
STEPS = [("client", "PING_OFFERED"), ("leader", "INGRESS_POLLED"), ("follower", "APPEND_POSITION_SENT"),
         ("leader", "APPEND_POSITION_RECEIVED"), ("leader", "COMMIT"), ("leader", "SERVICES_WOKEN"),
         ("leader-service", "LOG_POLLED"), ("client", "ECHO_RECEIVED")]


def read_events(lines: Iterable[str]) -> list[Event]:
    """The log's lines (``<ns> <pid> <who> <event> [detail]``) as events in time order; other lines are skipped."""
    events = []
    for line in lines:
        parts = line.rstrip("\n").split(" ", 4)
        if len(parts) < 4 or not parts[0].isdigit():
            continue
        events.append(Event(int(parts[0]), parts[2], parts[3], parts[4] if len(parts) > 4 else ""))
    events.sort()
    return events


def round_trips(events: list[Event]) -> list[list[Event]]:
    """Each ping's events: from PING_OFFERED to its ECHO_RECEIVED."""
    trips: list[list[Event]] = []
    current: list[Event] | None = None
    for event in events:
        if event.who == "client" and event.kind == "PING_OFFERED":
            current = [event]
        elif current is not None:
            current.append(event)
            if event.who == "client" and event.kind == "ECHO_RECEIVED":
                trips.append(current)
                current = None
    return trips


def _role(event: Event, leader: str | None) -> str:
    if event.who == "client":
        return "client"
    if event.who == leader:
        return "leader"
    if leader is not None and event.who == "service-" + leader.rsplit("-", 1)[1]:
        return "leader-service"
    return "follower" if event.who.startswith("member-") else "service"


def step_times(trip: list[Event]) -> list[int | None]:
    """The time of each of STEPS in ``trip``, each the first after the step before (None when it did not occur)."""
    leader = next((e.who for e in trip if e.kind == "INGRESS_POLLED"), None)
    times: list[int | None] = []
    index = 0
    for who, kind in STEPS:
        found = None
        for i in range(index, len(trip)):
            event = trip[i]
            if event.kind == kind and _role(event, leader) == who:
                found, index = event.ns, i
                break
        times.append(found)
    return times


def _percentiles(values: list[float]) -> str:
    ordered = sorted(values)
    n = len(ordered)
    return f"{ordered[n // 10]:8.0f} {ordered[n // 2]:8.0f} {ordered[n * 9 // 10]:8.0f}"


def report(events: list[Event], last: int | None = None) -> str:
    """The steps' gaps over the round trips (the last ``last`` of them) and the median round trip's timeline."""
    trips = round_trips(events)
    if last is not None:
        trips = trips[-last:]
    if not trips:
        return "no round trips in the log (was AERON_EVENT_CLUSTER_STEPS=true set for every process?)\n"
    out = [f"{len(trips)} round trips; µs between steps (p10 p50 p90):"]
    times = [step_times(t) for t in trips]
    for k in range(1, len(STEPS)):
        gaps = []
        for row in times:
            before = next((row[j] for j in range(k - 1, -1, -1) if row[j] is not None), None)
            if row[k] is not None and before is not None:
                gaps.append((row[k] - before) / 1e3)
        name = f"{STEPS[k][1].lower().replace('_', ' ')} ({STEPS[k][0]})"
        out.append(f"  {name:42s} {_percentiles(gaps) if gaps else '       -'}   in {len(gaps)} of {len(trips)}")
    rtts = sorted(((t[-1].ns - t[0].ns) / 1e3, i) for i, t in enumerate(trips))
    out.append(f"  {'round trip':42s} {_percentiles([r for r, _ in rtts])}")
    median_rtt, median_index = rtts[len(rtts) // 2]
    trip = trips[median_index]
    out.append(f"the median round trip ({median_rtt:.0f} µs), every step, µs from the offer:")
    for event in trip:
        out.append(f"  {(event.ns - trip[0].ns) / 1e3:8.1f}  {event.who:10s} {event.kind} {event.detail}")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pings", type=int, default=400)
    parser.add_argument("--ours", nargs="*", default=[], help="key=value properties for our members and containers")
    parser.add_argument("--log", help="read this event log instead of running the benchmark")
    args = parser.parse_args(argv)
    if args.log:
        with open(args.log) as f:
            sys.stdout.write(report(read_events(f)))
        return 0
    with tempfile.TemporaryDirectory(prefix="cluster-rtt-steps-") as tmp:
        log = os.path.join(tmp, "events.log")
        env = {**os.environ, "AERON_EVENT_CLUSTER_LOG": log, "AERON_EVENT_CLUSTER_STEPS": "true"}
        command = [sys.executable, str(HERE / "bench_cluster_three.py"), "--only", "ours", "--runs", "1", "--no-bound",
                   "--count", "2000", "--pings", str(args.pings)]
        if args.ours:
            command += ["--ours", *args.ours]
        done = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        sys.stdout.write("".join(line + "\n" for line in done.stdout.splitlines() if line.startswith("run ")))
        if done.returncode != 0:
            sys.stdout.write(done.stdout)
            return done.returncode
        with open(log) as f:
            sys.stdout.write(report(read_events(f), last=args.pings))
    return 0


if __name__ == "__main__":
    sys.exit(main())
