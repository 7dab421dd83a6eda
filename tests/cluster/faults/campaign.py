# SPDX-License-Identifier: Apache-2.0
"""A fault campaign against a cluster of our members: ``python -m tests.cluster.faults.campaign --seed 7``.

It starts N members (each its own processes), clients in their own processes (half on the sync AeronCluster, half
on aeron.aio.cluster) that log every invocation and completion, and applies the fault schedule drawn from the seed
(``schedule.py``; printed first, and run again exactly by the same command). Then it heals everything, waits for a
leader, reads every key and has every member write its state down, and checks: linearizability of the history
(``linearizability.py``), exactly-once application, the same log on every member, one leader per term, identical
final states (``checks.py``). Elections are counted and timed from the members' counters, sampled four times a
second.

Partitions need a network namespace per member: unless ``--no-netns`` is given, the campaign runs itself again
under ``unshare -n`` when it may (root, ``unshare`` works), and without partitions otherwise (said in the summary).

The summary is printed and written to ``<dir>/summary.json``; the exit status is 1 when a check failed, and then
the directory (logs, each member's cluster, archive and applied file, the clients' histories) is kept; ``--keep``
keeps it always.
"""
from __future__ import annotations

import argparse
import collections
import concurrent.futures
import json
import os
import pathlib
import random
import shutil
import subprocess
import sys
import threading
import time
from typing import Any

from aeron.cluster.__main__ import ONE_THREAD_PROPERTY
from tests.cluster.faults import checks, harness, linearizability, schedule, slow_disk
from tests.interop.cluster_support import ingress_endpoints
from tests.procs import client_env
from tests.support import wait_for

LEADER_TIMEOUT_S = 120.0
ARCHIVE_TMPFS_MB = 128
QUICK_RECOVERY_S = 30.0         # --quick: how long the next fault waits for a leader after the previous one


class Monitor(threading.Thread):
    """Samples every member's counters: who leads which term, and how long the cluster had no leader."""

    def __init__(self, members: list[harness.Member], interval: float = 0.25) -> None:
        super().__init__(daemon=True, name="faults-monitor")
        self.members = members
        self.interval = interval
        self.stopped = threading.Event()
        self.leaders: dict[int, set[int]] = collections.defaultdict(set)      # term -> members seen leading it
        self.violations: list[str] = []
        self.leaderless: list[float] = []         # durations of the spells without a leader, seconds
        self._leaderless_since: float | None = None
        self.samples = 0

    def run(self) -> None:
        while not self.stopped.wait(self.interval):
            self.sample()

    def sample(self) -> None:
        now = time.monotonic()
        leading: dict[int, int] = {}
        for member in self.members:
            state = member.counters()
            if state[1] == 2 and state[2] == 17 and state[4] is not None:
                leading[member.member_id] = state[4]
                self.leaders[state[4]].add(member.member_id)
        self.samples += 1
        terms = collections.Counter(leading.values())
        for term, count in terms.items():
            if count > 1:
                self.violations.append(f"members {sorted(m for m, t in leading.items() if t == term)} lead term "
                                       f"{term} at once")
        if leading and self._leaderless_since is not None:
            self.leaderless.append(now - self._leaderless_since)
            self._leaderless_since = None
        elif not leading and self._leaderless_since is None:
            self._leaderless_since = now

    def leader(self) -> harness.Member | None:
        """The member leading the highest term now, if any."""
        best = None
        for member in self.members:
            state = member.counters()
            if state[1] == 2 and state[2] == 17 and state[4] is not None and (best is None or state[4] > best[0]):
                best = (state[4], member)
        return None if best is None else best[1]


class Campaign:
    """One campaign run (see the module docstring)."""

    def __init__(self, args: argparse.Namespace, network: harness.Network, base: pathlib.Path) -> None:
        self.args = args
        self.network = network
        self.base = base
        self.members_string = harness.members_string(network, args.members)
        classpath = os.environ.get("AERON_JAVA_CP", "")
        self.left_out: dict[str, str] = {}          # fault kinds asked for but not possible here, and why
        library = None
        if "slowdisk" in args.kinds.split(","):
            library, why = slow_disk.build(base)
            if library is None:
                self.left_out["slowdisk"] = why
        self.members = [harness.Member(i, self.members_string, base, network,
                                       java=(i == 0 and args.java), classpath=classpath,
                                       flawed_service=args.flawed_service, slow_disk_library=library,
                                       overrides=({ONE_THREAD_PROPERTY: "false"}
                                                  if args.threads and not (i == 0 and args.java) else None))
                        for i in range(args.members)]
        self.monitor = Monitor(self.members)
        self.rng = random.Random(args.seed ^ 0x5F5F)
        self.injected: collections.Counter[str] = collections.Counter()
        self.consequences: collections.Counter[str] = collections.Counter()
        self.errors: list[str] = []
        self.applied_faults: list[str] = []
        self.clients: list[subprocess.Popen] = []
        self.client_driver: harness.ClientDriver | None = None
        self.slow_forces = 0
        self.java_faults: collections.Counter[str] = collections.Counter()     # what the Java member took
        self.stop_path = base / "clients-stop"

    def log(self, text: str) -> None:
        line = f"[faults {time.monotonic() - self.t0:8.2f}s] {text}"
        print(line, flush=True)
        with open(self.base / "campaign.log", "a") as f:
            f.write(line + "\n")

    def wait_for_leader(self, timeout: float = LEADER_TIMEOUT_S) -> harness.Member:
        return wait_for(self.monitor.leader, timeout, what="a leader", interval_s=0.2)

    def start_clients(self, until: float, epoch: float) -> None:
        endpoints = ingress_endpoints(self.members_string)
        for i in range(self.args.clients):
            mode = "sync" if i % 2 == 0 else "aio"
            name = f"{mode}{i}"
            command = [sys.executable, "-m", "tests.cluster.faults.client", "--mode", mode, "--name", name,
                       "--seed", str(self.args.seed * 1000 + i), "--aeron-dir", self.client_driver.aeron_dir,
                       "--ingress-endpoints", endpoints, "--host", self.network.client_host(),
                       "--history", str(self.base / f"history-{name}.jsonl"), "--until", repr(until),
                       "--epoch", repr(epoch), "--op-timeout", str(self.args.op_timeout),
                       "--stop-file", str(self.stop_path)]
            log = open(self.base / f"client-{name}.log", "a")      # noqa: SIM115 - the child keeps it
            self.clients.append(subprocess.Popen(command, cwd=str(harness.REPO), env=client_env(), stdout=log,
                                                 stderr=subprocess.STDOUT))
            log.close()

    def resolve(self, fault: schedule.Fault) -> harness.Member:
        target = fault.target
        if target == "leader":
            leader = self.monitor.leader()
            target = leader.member_id if leader is not None else self.rng.randrange(len(self.members))
        member = self.members[int(target)]
        if member.java and (fault.kind == "clock" or "reorder" in fault.detail or "duplicate" in fault.detail):
            # Java's member keeps its own cluster clock (no jump clock there), and Java's driver has loss generators
            # only (DebugReceiveChannelEndpoint), no reordering or duplication
            member = self.members[(member.member_id + 1) % len(self.members)]
        return member

    def lossy_properties(self, member: harness.Member, fault: schedule.Fault) -> dict[str, str]:
        """The properties that start ``member`` with the fault's generator on its receive path: ours through the
        driver's interceptors; Java's through its debug receive endpoint, whose loss rates are read once at start
        (DebugChannelEndpointConfiguration's static fields), hence the restart there too."""
        if member.java:
            loss = fault.detail["loss"]
            return {"aeron.ReceiveChannelEndpoint.supplier": "io.aeron.driver.ext.DebugReceiveChannelEndpointSupplier",
                    "aeron.debug.receive.data.loss.rate": str(loss["rate"]),
                    "aeron.debug.receive.data.loss.seed": str(loss["seed"])}
        names = [k for k in schedule.RECEIVE_KINDS if k in fault.detail]       # chained in this order
        props = {"aeron.udp.channel.incoming.interceptors": ",".join(names)}
        for name in names:
            props[f"aeron.udp.channel.transport.bindings.{name}.args"] = \
                "|".join(f"{k}={v}" for k, v in fault.detail[name].items())
        return props

    def restart(self, member: harness.Member, extra: dict[str, str] | None = None) -> None:
        try:
            member.start(extra=extra)
        except AssertionError as ex:
            self.errors.append(f"member {member.member_id} did not restart: {ex}")
            self.log(f"ERROR member {member.member_id} did not restart")

    def supervise(self) -> None:
        """Restart what stopped by itself, as an operator's supervisor would: a member that terminated (Aeron's
        members do on a full disk, a lost driver, a client conductor stalled past its service interval, ...), or a
        service container that exited beside a running member. Counted under the run's consequences."""
        for member in self.members:
            if member.paused:
                continue
            if member.proc is not None and not member.is_running():
                code = member.proc.returncode
                self.log(f"  member {member.member_id} exited by itself ({code}): restarting it")
                self.consequences[f"member exited by itself ({code}), restarted"] += 1
                member.kill()
                self.restart(member)
            elif member.container is not None and member.container.poll() is not None:
                code = member.container.returncode
                self.log(f"  member {member.member_id}'s service container exited ({code}): starting it again")
                self.consequences[f"service container exited ({code}), restarted"] += 1
                member.start_container()

    def apply(self, fault: schedule.Fault) -> None:
        member = self.resolve(fault)
        self.log(f"{fault.kind} member {member.member_id} ({fault})")
        self.applied_faults.append(f"{fault} -> member {member.member_id}")
        if member.java:
            self.java_faults[fault.kind] += 1
        if fault.kind == "partition":
            self.injected[f"partition-{fault.detail['shape']}"] += 1
        else:
            for kind in fault.kind.split("+"):          # chained receive generators count once each
                self.injected[kind] += 1
        if fault.kind == "snapshot":
            if not member.snapshot():
                self.log("  snapshot toggle not taken (no leader, or one in progress)")
                self.injected["snapshot"] -= 1
                self.consequences["snapshot request not taken"] += 1
            return
        if fault.kind == "kill":
            member.kill()
            time.sleep(fault.hold)
            self.restart(member)
        elif fault.kind == "pause":
            member.pause()
            time.sleep(fault.hold)
            member.resume()
        elif fault.kind.split("+")[0] in schedule.RECEIVE_KINDS:
            member.kill()
            self.restart(member, self.lossy_properties(member, fault))
            time.sleep(fault.hold)
            member.kill()
            self.restart(member)
        elif fault.kind == "slowdisk":
            before = slow_disk.delayed_forces(member.slow_disk_path)
            slow_disk.set_delay(member.slow_disk_path, fault.detail["delay_ms"])
            time.sleep(fault.hold)
            slow_disk.set_delay(member.slow_disk_path, 0)
            delayed = slow_disk.delayed_forces(member.slow_disk_path) - before
            self.slow_forces += delayed
            self.log(f"  {delayed} forces delayed by {fault.detail['delay_ms']} ms")
        elif fault.kind == "disk":
            filler = member.archive_dir / "faults-filler"
            written = harness.fill_file_system(filler)
            self.log(f"  archive file system full ({written >> 20} MiB of filler)")
            time.sleep(fault.hold)
            filler.unlink(missing_ok=True)
            if not member.is_running():
                self.log(f"  member {member.member_id} stopped while its disk was full: restarting it")
                self.consequences["member stopped by a full disk"] += 1
                member.kill()
                self.restart(member)
        elif fault.kind == "clock":
            from tests.cluster.faults.clock import set_offset
            set_offset(member.clock_path, fault.detail["offset_ms"])
            time.sleep(fault.hold)
            set_offset(member.clock_path, 0)
        elif fault.kind == "partition":
            pairs = schedule.partition_pairs(len(self.members), fault.detail["shape"],
                                             random.Random(fault.detail["seed"]), member.member_id)
            self.log(f"  cut {pairs}")
            self.network.cut(pairs)
            time.sleep(fault.hold)
            self.network.heal()

    def run(self) -> dict[str, Any]:
        args = self.args
        self.t0 = time.monotonic()
        if "partition" in args.kinds.split(",") and not self.network.partitions:
            self.left_out["partition"] = "no network namespaces (loopback)"
        if "disk" in args.kinds.split(",") and not harness.mounts_available():
            self.left_out["disk"] = "no mount namespace for the archives' small file systems"
        kinds = tuple(k for k in args.kinds.split(",") if k and k not in self.left_out)
        faults = schedule.generate(args.seed, args.members, args.duration, kinds, cover=args.quick,
                                   quick=args.quick, merge_receive=not args.java)
        self.clients_s = args.duration
        if args.quick:
            # the clients run until the schedule, which covers every kind, is through (then told by the stop file)
            self.clients_s = max(args.duration, faults[-1].at + faults[-1].hold if faults else 0.0) + 600.0
        self.log(f"seed {args.seed}: {len(faults)} faults over {args.duration:.0f} s on {args.members} members "
                 f"({'namespaces' if self.network.partitions else 'loopback, no partitions'}); replay with: "
                 f"{replay_command(args)}")
        for fault in faults:
            self.log(f"  schedule {fault}")
        for kind, why in self.left_out.items():
            self.log(f"  {kind} left out: {why}")
        if harness.mounts_available():
            for member in self.members:
                harness.mount_tmpfs(member.archive_dir, ARCHIVE_TMPFS_MB)
        # the members start together (each waits for its own driver, archive and consensus module)
        with concurrent.futures.ThreadPoolExecutor(len(self.members)) as pool:
            for started in [pool.submit(member.start) for member in self.members]:
                started.result()
        self.monitor.start()
        self.wait_for_leader()
        self.client_driver = harness.ClientDriver(self.base)
        start = time.monotonic()
        until = start + self.clients_s
        self.start_clients(until, start)
        previous_end, previous_at, previous_hold = start, 0.0, 0.0
        for fault in faults:
            # the schedule's gap after the previous fault's end, however long that fault took (a restart on a busy
            # machine can take a minute): faults that fell behind must not pile up on a cluster still recovering
            gap = fault.at - previous_at - (0.0 if previous_at == 0.0 else previous_hold)
            if args.quick:
                # the next fault once the cluster has a leader again (a condition, not a guess of how long that takes)
                self.supervise()
                try:
                    self.wait_for_leader(QUICK_RECOVERY_S)
                except AssertionError:
                    self.log(f"  no leader {QUICK_RECOVERY_S:.0f} s after the last fault: going on")
            delay = previous_end + max(gap, 0.0) - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            self.supervise()
            self.apply(fault)
            previous_end, previous_at, previous_hold = time.monotonic(), fault.at, fault.hold
            if previous_end > until and not args.quick:
                self.log(f"the clients' time is up: {len(faults) - faults.index(fault) - 1} faults left out")
                break
        self.log("schedule done: healing")
        self.network.heal()
        for member in self.members:
            if member.paused:
                member.resume()
        self.supervise()
        leader = self.wait_for_leader()
        self.log(f"leader after healing: member {leader.member_id}")
        if args.quick:
            time.sleep(1.0)             # a few operations on the healed cluster
            self.stop_path.touch()
        for client in self.clients:
            try:
                client.wait(timeout=max(0.0, until - time.monotonic()) + 3 * args.op_timeout + 60)
            except subprocess.TimeoutExpired:
                client.kill()
                client.wait(timeout=10)
                self.errors.append(f"client {client.args[6]} did not finish")
        self.log("clients done: final reads")
        history = checks.read_history(sorted(self.base.glob("history-*.jsonl")))
        keys = sorted({op.key for op in history})
        self.final_reads(keys)
        dumps = self.wait_for_dumps()
        self.log("final states written: stopping")
        self.monitor.stopped.set()
        self.monitor.join(timeout=10)
        with concurrent.futures.ThreadPoolExecutor(len(self.members)) as pool:
            for stopped in [pool.submit(member.stop) for member in self.members]:
                stopped.result()
        self.client_driver.stop()
        self.log("stopped: checking")
        summary = self.check(dumps)
        self.log("checked")
        return summary

    def final_reads(self, keys: list[str]) -> None:
        command = [sys.executable, "-m", "tests.cluster.faults.client", "--mode", "final", "--name", "final",
                   "--seed", "0", "--aeron-dir", self.client_driver.aeron_dir,
                   "--ingress-endpoints", ingress_endpoints(self.members_string),
                   "--host", self.network.client_host(), "--history", str(self.base / "history-final.jsonl"),
                   "--until", repr(time.monotonic() + 180), "--epoch", "0", "--op-timeout",
                   str(self.args.op_timeout), "--final-keys", ",".join(keys)]
        with open(self.base / "client-final.log", "a") as log:
            done = subprocess.run(command, cwd=str(harness.REPO), env=client_env(), stdout=log,
                                  stderr=subprocess.STDOUT, timeout=240, check=False)
        if done.returncode != 0:
            self.errors.append("the final reads were not all answered")

    def wait_for_dumps(self) -> dict[int, dict[str, Any]]:
        def dumps() -> dict[int, dict[str, Any]] | None:
            found = {}
            for member in self.members:
                entries = [e for e in checks.read_applied(member.applied_path) if "dump" in e]
                if entries:
                    found[member.member_id] = entries[-1]["dump"]
            return found if len(found) == len(self.members) else None
        try:
            return wait_for(dumps, 120, what="every member's final state", interval_s=0.5)
        except AssertionError as ex:
            self.errors.append(str(ex))
            partial = {}
            for member in self.members:
                entries = [e for e in checks.read_applied(member.applied_path) if "dump" in e]
                if entries:
                    partial[member.member_id] = entries[-1]["dump"]
            return partial

    def check(self, dumps: dict[int, dict[str, Any]]) -> dict[str, Any]:
        leaderless = self.monitor.leaderless
        summary: dict[str, Any] = {
            "seed": self.args.seed, "members": self.args.members, "duration_s": self.args.duration,
            "network": "namespaces" if self.network.partitions else "loopback",
            "java_member": self.args.java,
            "faults_injected": dict(sorted(self.injected.items())), "faults_total": sum(self.injected.values()),
            "kinds_left_out": self.left_out, "slow_disk_forces_delayed": self.slow_forces,
            "java_member_faults": dict(sorted(self.java_faults.items())),
            "consequences": dict(self.consequences),
            "elections_seen": len(leaderless),
            "election_s": {"max": round(max(leaderless), 2), "mean": round(sum(leaderless) / len(leaderless), 2)}
            if leaderless else {},
        }
        return check_run(self.base, len(self.members), summary, self.monitor.violations, self.errors,
                         all_dumped=len(dumps) == len(self.members))


def check_run(base: pathlib.Path, members: int, summary: dict[str, Any], monitor_violations: list[str],
              errors: list[str], all_dumped: bool) -> dict[str, Any]:
    """Every check on a run's files in ``base`` (clients' histories, members' applied files), added to
    ``summary``. Unknown outcomes are settled by the applied files only when every member wrote its final state."""
    history = checks.read_history(sorted(base.glob("history-*.jsonl")))
    applied = {i: checks.read_applied(base / f"m{i}-applied.jsonl") for i in range(members)}
    dumps = {i: [e for e in entries if "dump" in e][-1]["dump"] for i, entries in applied.items()
             if any("dump" in e for e in entries)}
    applied_violations, facts = checks.check_applied(applied)
    settled, unknown_applied, unknown_dropped = (checks.resolve_unknowns(history, facts["results"]) if all_dumped
                                                 else (history, 0, 0))
    t = time.monotonic()
    result = linearizability.check(settled)
    check_s = time.monotonic() - t
    violations = {
        "linearizability": [r.describe() for r in result.violations],
        "exactly_once": checks.check_exactly_once(history, facts["positions_of"]),
        "logs_and_leaders": applied_violations + monitor_violations,
        "final_state": checks.check_dumps(dumps, history),
        "harness": errors,
    }
    statuses = collections.Counter(op.status for op in history)
    summary.update({
        "operations": len(history), "ok": statuses["ok"], "fail": statuses["fail"],
        "unknown": statuses["unknown"], "unknown_found_applied": unknown_applied,
        "unknown_found_not_applied": unknown_dropped, "keys": len(result.keys),
        "undecided_keys": [k for k, r in result.keys.items() if r.linearizable is None],
        "linearizability_check_s": round(check_s, 2), "commands_applied": facts["commands"],
        "leadership_terms": len(facts["terms"]),
        "violations": {k: v for k, v in violations.items() if v},
        "violation_count": sum(len(v) for v in violations.values()),
    })
    return summary


def replay_command(args: argparse.Namespace) -> str:
    parts = ["python -m tests.cluster.faults.campaign", f"--seed {args.seed}", f"--members {args.members}",
             f"--duration {args.duration:g}", f"--clients {args.clients}", f"--kinds {args.kinds}"]
    if args.java:
        parts.append("--java")
    if args.no_netns:
        parts.append("--no-netns")
    if args.flawed_service:
        parts.append("--flawed-service")
    if args.quick:
        parts.append("--quick")
    if args.threads:
        parts.append("--threads")
    return " ".join(parts)


def can_unshare() -> bool:
    try:
        done = subprocess.run(["unshare", "-n", "-m", "true"], capture_output=True, timeout=30, check=False)
        return done.returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tests.cluster.faults.campaign", description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=None, help="the schedule's seed (random when not given)")
    parser.add_argument("--members", type=int, default=3)
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of faults and operations")
    parser.add_argument("--clients", type=int, default=4, help="client processes (half sync, half aio)")
    parser.add_argument("--kinds", default=",".join(schedule.ALL_KINDS), help="fault kinds, comma separated")
    parser.add_argument("--op-timeout", type=float, default=5.0, help="seconds before an operation is unknown")
    parser.add_argument("--dir", default=None, help="where the run's files go (default: a new /dev/shm dir)")
    parser.add_argument("--keep", action="store_true", help="keep the run's files even when every check passed")
    parser.add_argument("--no-netns", action="store_true", help="stay on loopback (no partitions)")
    parser.add_argument("--java", action="store_true",
                        help="member 0 is Java's ClusteredMediaDriver (needs AERON_JAVA_CP)")
    parser.add_argument("--quick", action="store_true",
                        help="the test suite's run: every kind once first, short holds and gaps, each next fault "
                             "once a leader is back, the clients kept on until the schedule is through")
    parser.add_argument("--recheck", metavar="DIR", default=None,
                        help="run the checks again on a kept run's directory (nothing is started)")
    parser.add_argument("--threads", action="store_true",
                        help="our members run their driver, archive and consensus module on a thread each "
                             "(aeron.cluster.member.one.thread=false; one thread by default)")
    parser.add_argument("--flawed-service", action="store_true", help=argparse.SUPPRESS)   # the checks' own test
    args = parser.parse_args(argv)
    if args.seed is None:
        args.seed = random.randrange(1 << 31)
    return args


def recheck(base: pathlib.Path) -> int:
    """The checks again on a kept run (its summary.json gives the member count and the run's own facts)."""
    previous = json.loads((base / "summary.json").read_text())
    keep = ("seed", "members", "duration_s", "network", "java_member", "faults_injected", "faults_total",
            "kinds_left_out", "slow_disk_forces_delayed", "java_member_faults", "consequences", "elections_seen", "election_s")
    summary = {k: previous[k] for k in keep if k in previous}
    members = len(list(base.glob("m*-applied.jsonl")))
    summary = check_run(base, members, summary, [], [], all_dumped=all(
        any("dump" in e for e in checks.read_applied(base / f"m{i}-applied.jsonl")) for i in range(members)))
    print(json.dumps({k: v for k, v in summary.items() if k != "violations"}, indent=2, default=str))
    for kind, found in summary["violations"].items():
        print(f"--- {kind} ({len(found)})")
        for text in found[:20]:
            print(text)
    return 1 if summary["violation_count"] else 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.recheck:
        return recheck(pathlib.Path(args.recheck))
    if args.java and not os.environ.get("AERON_JAVA_CP"):
        print("--java needs AERON_JAVA_CP", file=sys.stderr)
        return 2
    if (not args.no_netns and os.environ.get("FAULTS_NETNS") != "1" and os.geteuid() == 0 and can_unshare()):
        env = dict(os.environ, FAULTS_NETNS="1", FAULTS_MOUNTNS="1")
        argv = sys.argv[1:] if argv is None else list(argv)
        if "--seed" not in argv:
            argv += ["--seed", str(args.seed)]
        # a network namespace for the bridge and a private mount namespace for the archives' small file systems
        return subprocess.run(["unshare", "-n", "-m", "--propagation", "private", sys.executable, "-m",
                               "tests.cluster.faults.campaign", *argv], env=env, cwd=str(harness.REPO),
                              check=False).returncode
    base = pathlib.Path(args.dir) if args.dir else pathlib.Path(f"/dev/shm/aeron-faults-{args.seed}-{os.getpid()}")
    base.mkdir(parents=True, exist_ok=True)
    network: harness.Network
    if not args.no_netns and harness.namespaces_available() is None:
        network = harness.NamespaceNetwork(args.members)
    else:
        network = harness.LoopbackNetwork(args.members)
    campaign = Campaign(args, network, base)
    summary: dict[str, Any]
    try:
        summary = campaign.run()
    except BaseException as ex:
        summary = {"seed": args.seed, "violations": {"harness": [f"{type(ex).__name__}: {ex}"]},
                   "violation_count": 1, "faults_injected": dict(campaign.injected)}
        if isinstance(ex, KeyboardInterrupt):
            raise
    finally:
        campaign.monitor.stopped.set()
        for client in campaign.clients:
            if client.poll() is None:
                client.kill()
                client.wait(timeout=10)
        for member in campaign.members:
            if member.is_running():
                member.stop(timeout=10)
        if campaign.client_driver is not None:
            campaign.client_driver.stop()
        network.close()
    failed = summary.get("violation_count", 0) > 0
    if harness.mounts_available():
        for member in campaign.members:
            if failed:      # the archive's tmpfs goes with this namespace: keep a copy for inspection
                shutil.copytree(member.archive_dir, member.dir / "archive-kept", dirs_exist_ok=True,
                                ignore=shutil.ignore_patterns("faults-filler"))
            subprocess.run(["umount", str(member.archive_dir)], capture_output=True, timeout=30, check=False)
    summary["dir"] = str(base)
    (base / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    print(json.dumps({k: v for k, v in summary.items() if k != "violations"}, indent=2, default=str))
    if failed:
        print(f"\nFAILED seed {args.seed}; files kept in {base}; replay: {replay_command(args)}")
        for kind, found in summary["violations"].items():
            print(f"--- {kind} ({len(found)})")
            for text in found[:20]:
                print(text)
    elif not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
