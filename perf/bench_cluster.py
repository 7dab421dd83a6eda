# SPDX-License-Identifier: Apache-2.0
"""A one-member cluster, ours against Java's, in the same run: echoed messages per second and member CPU per message.

    AERON_JAVA_CP=... .venv/bin/python perf/bench_cluster.py [--count 100000] [--length 32] [--repeat 3]

Each member is one process holding the media driver, the archive and the consensus module: ours is
``python -m aeron.cluster`` (SHARED threading for the driver and the archive, as the interop tests run it), Java's is
``io.aeron.cluster.ClusteredMediaDriver`` with the same properties. Beside each run Java's ClusteredServiceContainer
(tests/interop/cluster_java/ClusterTestService.java, echoing every message to its session) and Java's AeronCluster
(ClusterTestClient.java, ``burst``: offers ``--count`` messages of ``--length`` bytes while polling its egress, until
every echo is back). So the client's messages cross ingress, are appended to the log, recorded by the member's archive,
committed, read by the service and echoed back on egress: the whole per-message path of a leader.

Rate = messages / time from the first offer to the last echo, as the client measures it; CPU = the member process's
user + system time (/proc/<pid>/stat, every thread) over the burst, per message. A member is started afresh for every
case, ours and Java's taking turns ``--repeat`` times so that the machine's load falls on both alike; each case first
sends 2000 messages to warm up (Java's JIT). The ratios are ours / Java's (rate: 1.0 is Java's rate; CPU: 1.0 is as
much CPU per message as Java's). Results: perf/results/cluster.json. Needs javac and AERON_JAVA_CP.
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
import time
import uuid

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

from tests.interop.cluster_support import (JavaClient, MemberProcess, cluster_members,  # noqa: E402
                                           ingress_endpoints)
from tests.support import wait_for  # noqa: E402

JAVA_SOURCES = ("ClusterTestService.java", "ClusterTestClient.java")


def compile_java(java_cp: str, classes: pathlib.Path) -> str:
    """The test service and client compiled into ``classes``; the class path with them."""
    sources = [str(REPO / "tests" / "interop" / "cluster_java" / name) for name in JAVA_SOURCES]
    subprocess.run(["javac", "-cp", java_cp, "-d", str(classes), *sources], check=True)
    return f"{java_cp}:{classes}"


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (every thread)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_case(java: bool, classpath: str, count: int, length: int) -> dict[str, float]:
    """One member (Java's or ours) with its service and a client: the burst's rate and the member's CPU per message."""
    base = pathlib.Path(f"/dev/shm/bench-cluster-{uuid.uuid4().hex[:8]}")
    base.mkdir()
    node = MemberProcess(0, cluster_members(1), base, classpath, java=java)
    client = None
    try:
        node.start()
        wait_for(node.is_leader, 60, what="a leader", interval_s=0.1)
        client = JavaClient(classpath, node.aeron_dir, ingress_endpoints(node.members))
        client.out.wait_for("CONNECTED", 60)
        client.command(f"burst 2000 {length}")
        client.out.wait_for("BURST", 120)
        assert node.proc is not None
        cpu0 = process_cpu_s(node.proc.pid)
        client.command(f"burst {count} {length}")
        line = client.out.wait_for("BURST", 600)
        cpu = process_cpu_s(node.proc.pid) - cpu0
        _, sent, elapsed_ns = line.split()
        return {"msg_per_s": int(sent) / (int(elapsed_ns) / 1e9), "cpu_us_per_msg": cpu * 1e6 / int(sent)}
    finally:
        if client is not None:
            client.close()
        node.stop()
        shutil.rmtree(base, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    """Run the cases and print (and save) the figures and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--length", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    java_cp = os.environ.get("AERON_JAVA_CP")
    if not java_cp or shutil.which("javac") is None:
        print("bench_cluster: needs AERON_JAVA_CP (Aeron's jars) and javac", file=sys.stderr)
        return 2
    results: dict[str, object] = {"count": args.count, "length": args.length, "load_average_start": os.getloadavg()}
    runs: dict[str, list[dict[str, float]]] = {"ours": [], "java": []}
    with tempfile.TemporaryDirectory() as classes:
        classpath = compile_java(java_cp, pathlib.Path(classes))
        for _ in range(args.repeat):
            for side in ("java", "ours"):
                figures = run_case(side == "java", classpath, args.count, args.length)
                runs[side].append(figures)
                print(f"{side:5s} {figures['msg_per_s']:12,.0f} msg/s {figures['cpu_us_per_msg']:8.2f} µs CPU/msg",
                      flush=True)
    summary = {side: {key: statistics.median(run[key] for run in runs[side]) for key in runs[side][0]}
               for side in runs}
    ratio = {"msg_per_s": summary["ours"]["msg_per_s"] / summary["java"]["msg_per_s"],
             "cpu_us_per_msg": summary["ours"]["cpu_us_per_msg"] / summary["java"]["cpu_us_per_msg"]}
    print(f"median: ours {summary['ours']['msg_per_s']:,.0f} msg/s, {summary['ours']['cpu_us_per_msg']:.2f} µs CPU/msg; "
          f"Java {summary['java']['msg_per_s']:,.0f} msg/s, {summary['java']['cpu_us_per_msg']:.2f} µs CPU/msg; "
          f"ratio rate {ratio['msg_per_s']:.2f}, CPU {ratio['cpu_us_per_msg']:.2f}")
    results.update(runs=runs, median=summary, ratio=ratio, load_average_end=os.getloadavg(), time=time.time())
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    (out / "cluster.json").write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
