# SPDX-License-Identifier: Apache-2.0
"""Three cluster members on one machine, ours against Java's, in the same run: ingress → egress throughput with a
window of outstanding messages, ping-pong round trips, and failover after the leader's ``kill -9``.

    AERON_JAVA_CP=... .venv/bin/python perf/bench_cluster_three.py [--runs 3] [--count 50000] [--length 32]
        [--window 64] [--pings 2000] [--hosted] [--ours key=value ...]

Each side is three members, each member two processes (one with ``--hosted``), and a client:

* ours: ``python -m aeron.cluster`` (our driver, archive and consensus module in one process, on one thread:
  ``aeron.cluster.member.one.thread``), ``python -m aeron.cluster.service`` running ``aeron.samples.cluster.echo_service``,
  and our AeronCluster (perf/cluster_bench_client.py); with ``--hosted`` the echo service runs in the member's process
  instead, on the member's one thread (``aeron.cluster.service.class.name`` and
  ``aeron.cluster.member.one.thread.service``: no container process);
* Java's: ``io.aeron.cluster.ClusteredMediaDriver`` with the same properties, Java's ClusteredServiceContainer
  running perf/cluster_java/BenchEchoService.java (Aeron's sample EchoService, public), and Java's AeronCluster
  (perf/cluster_java/ClusterBenchClient.java); with ``--hosted`` the container runs in the member's JVM instead
  (perf/cluster_java/BenchHostedNode.java launches both, as Java's BasicAuction tutorial hosts its container; the
  container keeps Java's defaults: its own thread, BackoffIdleStrategy), so that neither side has container
  processes and the leader's ``kill -9`` takes its service down with it on both.

The client runs on a follower's driver, so that ingress crosses UDP to the leader, the log goes to both followers
(a quorum of two of three commits), the leader's service echoes on egress back over UDP. Every member has the
same timeouts (tests/interop/cluster_support.member_properties: leader heartbeat timeout 2 s, interval 100 ms,
election timeout 300 ms). Nothing spins for long: Java's agents and client use Agrona's BackoffIdleStrategy (its
default: spins, yields, then parks 1 µs to 1 ms), ours the idle strategies the member and the container are given
(``--ours`` adds properties to both: the defaults below) and a wake-up idle strategy in the client; the idle CPU
of each side (every process, 2 s with a connected client and nothing sent) says whether anything spins.

Per run and side, one fresh cluster: the client connects, idles, warms up (5000 messages, 500 round trips: Java's
JIT), then ``throughput`` (``--count`` messages of ``--length`` bytes, at most ``--window`` unanswered; the rate is
messages over the time from the first offer to the last echo, and the CPU is every process's user + system time
over it, per message), ``pingpong`` (``--pings`` round trips, one outstanding: p50, p99), then ``failover`` (a
probe every millisecond; the time from just before the leader's SIGKILL to the first echo from the new leader).
Java and ours take turns, starting with the other each run, so that the machine's load falls on both alike. The
summary gives each figure's median per side, the ratio ours / Java of the medians, and the spread of the ratios of
the runs (each run's ours over the same run's Java). Results: perf/results/cluster_three.json (``--hosted``: cluster_three_hosted.json). Needs javac and
AERON_JAVA_CP.

``AERON_EVENT_CLUSTER_LOG=<file>`` times our failovers step by step: our members, containers and client append
their election, role and state changes to it (aeron/common/event_log.py), and this script the leader's SIGKILL
(``LEADER_SIGKILL``) and the first echo from the new leader, on one clock.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

from bench_cluster import process_cpu_s  # noqa: E402
from tests.interop.cluster_support import (JAVA_OPENS, LineReader, MemberProcess, cluster_members,  # noqa: E402
                                           close_pipes, ingress_endpoints, stop_process)
from aeron.common.event_log import log_event  # noqa: E402
from tests.procs import client_env  # noqa: E402
from tests.support import free_port, wait_for  # noqa: E402

# what ours runs with unless --ours says otherwise: our driver's threads wake on work (docs/wakeup.md), and each
# member's driver, archive and consensus module share one thread (aeron.cluster.member.one.thread, the member's default,
# given here too: measured better than a thread each, in round trip and CPU per message; --ours
# aeron.cluster.member.one.thread=false for the latter)
OUR_DEFAULTS = {"aeron.shared.idle.strategy": "wakeup", "aeron.driver.wakeup.data.spin": "0us",
                "aeron.cluster.idle.strategy": "wakeup", "aeron.archive.idle.strategy": "wakeup",
                "aeron.cluster.member.one.thread": "true"}
JAVA_THREADS = ("Java: per member a driver thread (SHARED), an archive thread (SHARED), the consensus module, the "
                "container's service thread, each BackoffIdleStrategy; the client's thread BackoffIdleStrategy")
JAVA_THREADS_HOSTED = ("Java: per member one JVM (perf/cluster_java/BenchHostedNode.java: ClusteredMediaDriver and "
                       "ClusteredServiceContainer) with a driver thread (SHARED), an archive thread (SHARED), the "
                       "consensus module, the container's service thread, each BackoffIdleStrategy, no container "
                       "process; the client's thread BackoffIdleStrategy")


def compile_java(java_cp: str, classes: pathlib.Path) -> str:
    """The benchmark's Java client and service compiled into ``classes``; the class path with them."""
    sources = sorted(str(p) for p in (HERE / "cluster_java").glob("*.java"))
    subprocess.run(["javac", "-cp", java_cp, "-d", str(classes), *sources], check=True)
    return f"{java_cp}:{classes}"


ECHO_SERVICE = "aeron.samples.cluster.echo_service:EchoService"
# --hosted: the echo service in our member's process, on its one thread
HOSTED = {"aeron.cluster.service.class.name": ECHO_SERVICE, "aeron.cluster.member.one.thread.service": "true"}


def hosted(ours: dict[str, str]) -> bool:
    """Whether our members host the service in their process (no container process)."""
    return "aeron.cluster.service.class.name" in ours


def one_thread(ours: dict[str, str]) -> bool:
    """Whether our members run their driver, archive and consensus module on one thread."""
    return ours.get("aeron.cluster.member.one.thread", "false").lower() in ("true", "1", "on", "yes")


def our_threads(ours: dict[str, str]) -> str:
    if hosted(ours) and ours.get("aeron.cluster.member.one.thread.service", "false").lower() in ("true", "1", "on"):
        return ("ours: per member one thread for the driver, the archive, the consensus module and the echo service "
                "(aeron.cluster.member.one.thread.service, parking with " +
                ours.get("aeron.shared.idle.strategy", "backoff") + "), no container process; the client's thread "
                "wakeup (parks on the egress)")
    if one_thread(ours):
        return ("ours: per member one thread for the driver, the archive and the consensus module "
                "(aeron.cluster.member.one.thread, parking with " + ours.get("aeron.shared.idle.strategy", "backoff") +
                "), the container's service thread (" + ours.get("aeron.cluster.idle.strategy", "backoff") +
                "); the client's thread wakeup (parks on the egress)")
    return ("ours: per member a driver thread (SHARED, " + ours.get("aeron.shared.idle.strategy", "backoff") +
            ", data spin " + ours.get("aeron.driver.wakeup.data.spin", "200us") +
            "), an archive thread (SHARED, " + ours.get("aeron.archive.idle.strategy", "backoff") +
            "), the consensus module (" + ours.get("aeron.cluster.idle.strategy", "backoff") +
            "), the container's service thread (" + ours.get("aeron.cluster.idle.strategy", "backoff") +
            "); the client's thread wakeup (parks on the egress)")


class Side:
    """One side's three members and its client."""

    def __init__(self, java: bool, classpath: str, ours: dict[str, str]) -> None:
        self.java = java
        self.classpath = classpath
        self.base = pathlib.Path(f"/dev/shm/bench-cluster3-{uuid.uuid4().hex[:8]}")
        self.base.mkdir()
        members = cluster_members(3)
        self.endpoints = ingress_endpoints(members)
        overrides = {} if java else dict(ours)
        self.ours = ours
        if hosted(ours):
            # the service in the member's process on both sides: Java's in the member's JVM (BenchHostedNode)
            self.nodes = [MemberProcess(i, members, self.base, classpath, java=java, service=None,
                                        java_main="BenchHostedNode", **overrides) for i in range(3)]
        else:
            self.nodes = [MemberProcess(i, members, self.base, classpath, java=java, service="java",
                                        container=self.java_container if java else self.our_container, **overrides)
                          for i in range(3)]
        self.client: subprocess.Popen | None = None
        self.out: LineReader | None = None

    def java_container(self, node: MemberProcess) -> tuple[subprocess.Popen, LineReader]:
        args = ["java", *JAVA_OPENS, "-cp", self.classpath, f"-Daeron.dir={node.aeron_dir}",
                f"-Daeron.cluster.dir={node.cluster_dir}", "-Daeron.cluster.service.class.name=BenchEchoService",
                "io.aeron.cluster.service.ClusteredServiceContainer"]
        proc = subprocess.Popen(args, env=client_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        return proc, LineReader(proc)

    def our_container(self, node: MemberProcess) -> tuple[subprocess.Popen, LineReader]:
        props = {"aeron.dir": node.aeron_dir, "aeron.cluster.dir": node.cluster_dir,
                 "aeron.cluster.service.class.name": ECHO_SERVICE,
                 **{k: v for k, v in self.ours.items() if k.startswith("aeron.cluster.")}}
        args = [sys.executable, "-m", "aeron.cluster.service", *[f"{k}={v}" for k, v in props.items()]]
        proc = subprocess.Popen(args, cwd=str(REPO), env=client_env(), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        return proc, LineReader(proc)

    def start(self) -> MemberProcess:
        """Start the members (in parallel) and a client on a follower's driver; the leader."""
        errors: list[BaseException] = []

        def start(node: MemberProcess) -> None:
            try:
                node.start(120)
            except BaseException as ex:     # noqa: BLE001 - raised below on the caller's thread
                errors.append(ex)
        threads = [threading.Thread(target=start, args=(node,)) for node in self.nodes]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
        leader = wait_for(lambda: next((n for n in self.nodes if n.is_leader()), None), 120, what="a leader",
                          interval_s=0.1)
        wait_for(lambda: sum(n.is_follower() for n in self.nodes) == 2, 120, what="two followers", interval_s=0.1)
        follower = next(n for n in self.nodes if n is not leader)
        egress = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
        if self.java:
            command = ["java", *JAVA_OPENS, "-cp", self.classpath, "ClusterBenchClient"]
        else:
            command = [sys.executable, str(HERE / "cluster_bench_client.py")]
        self.client = subprocess.Popen([*command, follower.aeron_dir, self.endpoints, egress], cwd=str(REPO),
                                       env=client_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, text=True)
        self.out = LineReader(self.client)
        self.out.wait_for("CONNECTED", 60)
        return leader

    def command(self, line: str, answer: str, timeout: float = 600) -> str:
        assert self.client is not None and self.client.stdin is not None and self.out is not None
        self.client.stdin.write(line + "\n")
        self.client.stdin.flush()
        got = self.out.wait_for("", timeout)
        while not got.startswith((answer, "TIMEOUT", "ERROR")):
            got = self.out.wait_for("", timeout)
        if not got.startswith(answer):
            raise AssertionError(f"{line}: {got}; {self.out.lines[-20:]}")
        return got

    def pids(self) -> list[int]:
        procs = [p for n in self.nodes for p in (n.proc, n.container) if p is not None and p.poll() is None]
        return [p.pid for p in [*procs, self.client] if p is not None and p.poll() is None]

    def cpu_by_role(self, leader: MemberProcess) -> dict[str, float]:
        """CPU seconds so far of the leader's member and container, the followers' (summed) and the client."""
        def cpu(proc: subprocess.Popen | None) -> float:
            try:
                return process_cpu_s(proc.pid) if proc is not None and proc.poll() is None else 0.0
            except OSError:
                return 0.0
        followers = [n for n in self.nodes if n is not leader]
        return {"leader member": cpu(leader.proc), "leader container": cpu(leader.container),
                "follower members": sum(cpu(n.proc) for n in followers),
                "follower containers": sum(cpu(n.container) for n in followers), "client": cpu(self.client)}

    def cpu_s(self) -> float:
        total = 0.0
        for pid in self.pids():
            try:
                total += process_cpu_s(pid)
            except OSError:
                pass
        return total

    def stop(self) -> None:
        if self.client is not None:
            try:
                if self.client.poll() is None:
                    assert self.client.stdin is not None
                    self.client.stdin.write("close\n")
                    self.client.stdin.flush()
                    self.client.wait(timeout=20)
            except (OSError, subprocess.TimeoutExpired):
                self.client.kill()
                self.client.wait(timeout=10)
            close_pipes(self.client)
        for node in self.nodes:
            node.stop()
        shutil.rmtree(self.base, ignore_errors=True)


def run_side(java: bool, classpath: str, args: argparse.Namespace, ours: dict[str, str]) -> dict[str, float]:
    """One fresh three-member cluster of one side: its figures."""
    side = Side(java, classpath, ours)
    try:
        leader = side.start()
        cpu0, t0 = side.cpu_s(), time.monotonic()
        time.sleep(2.0)
        idle_cpu = (side.cpu_s() - cpu0) / (time.monotonic() - t0)
        side.command(f"throughput 5000 {args.length} {args.window}", "THROUGHPUT")
        side.command(f"pingpong 500 {args.length}", "RTT")
        cpu0 = side.cpu_s()
        roles0 = side.cpu_by_role(leader)
        _, count, elapsed_ns = side.command(f"throughput {args.count} {args.length} {args.window}",
                                            "THROUGHPUT").split()
        cpu = side.cpu_s() - cpu0
        roles = {k: round((v - roles0[k]) * 1e6 / int(count), 1) for k, v in side.cpu_by_role(leader).items()}
        _, _, p50, p90, p99, worst = side.command(f"pingpong {args.pings} {args.length}", "RTT").split()
        assert side.client is not None and side.client.stdin is not None
        side.client.stdin.write(f"failover {args.length}\n")
        side.client.stdin.flush()
        assert side.out is not None
        side.out.wait_for("FAILOVER_READY", 60)
        time.sleep(0.2)
        killed_ns = time.monotonic_ns()
        log_event("bench", "LEADER_SIGKILL", f"java={java} member={leader.member_id}")
        leader.kill()
        line = side.out.wait_for("FAILOVER", 120)
        log_event("bench", "FIRST_ECHO_FROM_NEW_LEADER", line)
        failover_ms = (int(line.split()[1]) - killed_ns) / 1e6
        return {"msg_per_s": int(count) / (int(elapsed_ns) / 1e9), "cpu_us_per_msg": cpu * 1e6 / int(count),
                "rtt_p50_us": int(p50) / 1e3, "rtt_p90_us": int(p90) / 1e3, "rtt_p99_us": int(p99) / 1e3,
                "rtt_max_us": int(worst) / 1e3, "failover_ms": failover_ms, "idle_cpu_pct": idle_cpu * 100,
                "cpu_us_per_msg_by_process": roles}
    finally:
        side.stop()


def bound_pingpong(client: subprocess.Popen, out: LineReader, length: int, pings: int) -> str:
    """The round trips of perf/cluster_hops_bound.py's client once it is READY: 200 to warm up, then ``pings``;
    the client's ``RTT ...`` line for the latter."""
    assert client.stdin is not None
    client.stdin.write(f"pingpong 200 {length}\npingpong {pings} {length}\n")
    client.stdin.flush()
    out.wait_for("RTT", 300)
    return out.wait_for("RTT", 300)


def run_bound(args: argparse.Namespace, data_spin: str, one: bool = False) -> dict[str, float]:
    """The round trip of perf/cluster_hops_bound.py: the cluster's UDP hops through our drivers (their data spin as
    our members', and with ``one`` each relay on its driver's thread, as our members' agents), no cluster logic."""
    base = pathlib.Path(f"/dev/shm/bench-cluster3-bound-{uuid.uuid4().hex[:8]}")
    script = str(HERE / "cluster_hops_bound.py")
    ingress, ack, log1, log2, egress = (free_port() for _ in range(5))
    roles = [["leader", str(base / "l"), *map(str, (ingress, ack, log1, log2, egress))],
             ["follower", str(base / "f1"), str(log1), str(ack)], ["follower", str(base / "f2"), str(log2), str(ack)]]
    procs: list[subprocess.Popen] = []
    try:
        for role in roles:
            env = {**client_env(), "AERON_DRIVER_WAKEUP_DATA_SPIN": data_spin,
                   "CLUSTER_HOPS_ONE_THREAD": "1" if one else "0"}
            proc = subprocess.Popen([sys.executable, script, *role], cwd=str(REPO), env=env,
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            procs.append(proc)
            LineReader(proc).wait_for("READY", 60)
        client = subprocess.Popen([sys.executable, script, "client", str(base / "f1"), str(ingress), str(egress)],
                                  cwd=str(REPO), env=client_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)
        procs.append(client)
        out = LineReader(client)
        out.wait_for("READY", 60)
        _, _, p50, p90, p99, worst, lost = bound_pingpong(client, out, args.length, args.pings).split()
        return {"rtt_p50_us": int(p50) / 1e3, "rtt_p90_us": int(p90) / 1e3, "rtt_p99_us": int(p99) / 1e3,
                "rtt_max_us": int(worst) / 1e3, "lost": int(lost.split("=")[1])}
    finally:
        for proc in reversed(procs):
            stop_process(proc, 10)
        shutil.rmtree(base, ignore_errors=True)


FIGURES = (("msg_per_s", "throughput msg/s", "{:,.0f}", "higher"), ("cpu_us_per_msg", "CPU µs/msg (all procs)",
           "{:.1f}", "lower"), ("rtt_p50_us", "RTT p50 µs", "{:.0f}", "lower"), ("rtt_p99_us", "RTT p99 µs", "{:.0f}",
           "lower"), ("failover_ms", "failover ms", "{:.0f}", "lower"), ("idle_cpu_pct", "idle CPU % (all procs)",
           "{:.1f}", "lower"))


def main(argv: list[str] | None = None) -> int:
    """Run the sides in turn and print (and save) the figures, ratios and spreads."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--count", type=int, default=50_000)
    parser.add_argument("--length", type=int, default=32)
    parser.add_argument("--window", type=int, default=64)
    parser.add_argument("--pings", type=int, default=2000)
    parser.add_argument("--ours", nargs="*", default=[], help="key=value properties for our members and containers")
    parser.add_argument("--hosted", action="store_true",
                        help="the members host the echo service: ours on their one thread, Java's in their JVM "
                             "(no container processes)")
    parser.add_argument("--only", choices=("java", "ours"), help="run one side only (profiling)")
    parser.add_argument("--no-bound", action="store_true", help="leave out the hops' bound (cluster_hops_bound.py)")
    args = parser.parse_args(argv)
    java_cp = os.environ.get("AERON_JAVA_CP")
    if not java_cp or shutil.which("javac") is None:
        print("bench_cluster_three: needs AERON_JAVA_CP (Aeron's jars) and javac", file=sys.stderr)
        return 2
    ours = {**OUR_DEFAULTS, **(HOSTED if args.hosted else {}), **dict(kv.split("=", 1) for kv in args.ours)}
    print(JAVA_THREADS_HOSTED if hosted(ours) else JAVA_THREADS)
    print(our_threads(ours))
    print("spinning threads: none on either side (every agent backs off or parks; see idle CPU below)", flush=True)
    results: dict[str, object] = {"args": vars(args), "ours_properties": ours, "load_average_start": os.getloadavg()}
    runs: dict[str, list[dict[str, float]]] = {"ours": [], "java": [], "bound": []}
    failed: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as classes:
        classpath = compile_java(java_cp, pathlib.Path(classes))
        for run in range(args.runs):
            order = ("java", "ours") if run % 2 == 0 else ("ours", "java")
            for side in order:
                if args.only and side != args.only:
                    continue
                try:
                    figures = run_side(side == "java", classpath, args, ours)
                except AssertionError as failure:
                    # a run that did not finish (a member starved past its heartbeat timeout on a loaded machine:
                    # an election mid-run loses the window's messages) is reported and left out of the figures
                    print(f"run {run} {side:5s} FAILED: {str(failure)[:300]}", flush=True)
                    failed.append({"run": run, "side": side, "error": str(failure)[:2000]})
                    continue
                figures["run"] = run
                runs[side].append(figures)
                print(f"run {run} {side:5s} " + "  ".join(f"{label} {fmt.format(figures[key])}"
                                                          for key, label, fmt, _ in FIGURES), flush=True)
                print(f"      CPU µs/msg by process: {figures['cpu_us_per_msg_by_process']}", flush=True)
            if not args.only and not args.no_bound:
                bound = run_bound(args, ours.get("aeron.driver.wakeup.data.spin", "200us"), one_thread(ours))
                runs["bound"].append(bound)
                print(f"run {run} bound RTT p50 µs {bound['rtt_p50_us']:.0f}  RTT p99 µs {bound['rtt_p99_us']:.0f}",
                      flush=True)
    results.update(runs=runs, failed=failed, load_average_end=os.getloadavg(), time=time.time())
    if not args.only and runs["ours"] and runs["java"]:
        summary = {}
        print(f"\n{'figure':24s} {'ours':>10s} {'Java':>10s} {'ours/Java':>10s}  spread of run ratios")
        for key, label, fmt, better in FIGURES:
            mine = statistics.median(r[key] for r in runs["ours"])
            theirs = statistics.median(r[key] for r in runs["java"])
            java_by_run = {j["run"]: j for j in runs["java"]}
            ratios = [o[key] / java_by_run[o["run"]][key] for o in runs["ours"]
                      if o["run"] in java_by_run and java_by_run[o["run"]][key]] or [float("nan")]
            ratio = mine / theirs if theirs else float("nan")
            summary[key] = {"ours": mine, "java": theirs, "ratio": ratio, "run_ratios": ratios}
            print(f"{label:24s} {fmt.format(mine):>10s} {fmt.format(theirs):>10s} {ratio:10.2f}  "
                  f"{min(ratios):.2f}-{max(ratios):.2f} ({better} is better)")
        if runs["bound"]:
            for key in ("rtt_p50_us", "rtt_p99_us"):
                bound = statistics.median(r[key] for r in runs["bound"])
                summary[f"bound_{key}"] = {"bound": bound, "ours_over_bound": summary[key]["ours"] / bound,
                                           "java_over_bound": summary[key]["java"] / bound}
                print(f"bound {key}: {bound:.0f} µs (the same UDP hops through our drivers, no cluster logic): "
                      f"ours {summary[key]['ours'] / bound:.1f}x, Java {summary[key]['java'] / bound:.1f}x of it")
        results["summary"] = summary
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    (out / ("cluster_three_hosted.json" if hosted(ours) else "cluster_three.json")).write_text(
        json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
