# SPDX-License-Identifier: Apache-2.0
"""Run the pyperf benchmarks in one go and print msg/s and ratios side by side.

``./run.sh bench`` (add ``--rigorous`` for more pyperf processes; default is pyperf ``--fast``).
Results go to perf/results/*.json; compare two runs with ``python -m pyperf compare_to a.json b.json``.
"""
import json
import os
import pathlib
import subprocess
import sys

import pyperf

HERE = pathlib.Path(__file__).resolve().parent
RESULTS = HERE / "results"


def run_pyperf(script, name, extra):
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"{name}.json"
    if out.exists():
        out.unlink()
    cmd = [sys.executable, str(HERE / script), "-o", str(out), "--quiet"] + extra
    subprocess.run(cmd, check=True, cwd=HERE.parent)
    return pyperf.BenchmarkSuite.load(str(out))


def main(argv):
    mode = ["--rigorous"] if "--rigorous" in argv else ["--fast"]
    suite = run_pyperf("bench_logbuffer.py", "logbuffer", mode)
    rates = {}
    print(f"{'benchmark':32s} {'ns/msg':>10s} {'M msg/s':>10s}")
    for bench in suite.get_benchmarks():
        mean = bench.mean()
        rates[bench.get_name()] = 1.0 / mean
        print(f"{bench.get_name():32s} {mean * 1e9:10.1f} {1e-6 / mean:10.2f}")
    zmq = rates.get("pyzmq_push_ipc_32B")
    if zmq:
        for k in ("offer_concurrent_32B", "offer_exclusive_32B"):
            print(f"ratio {k} / pyzmq_push_ipc_32B = {rates[k] / zmq:.1f}x")
    offer = rates.get("publication_offer_32B")
    if offer:
        for k in ("publication_try_claim_commit_32B", "publication_try_claim_commit_own_claim_32B"):
            if k in rates:
                print(f"ratio {k} time / offer time = {offer / rates[k]:.2f}")
    print("target: offer 32 B from Python >= 5 M msg/s (docs/roadmap.md)")
    alloc = subprocess.run([sys.executable, str(HERE / "alloc_check.py")], capture_output=True, text=True,
                           cwd=HERE.parent)
    print("steady-state allocations (tracemalloc, net blocks over 200k offers + 200k polls):")
    for r in json.loads(alloc.stdout):
        print(f"  {r['kind']:10s} {r['size']:5d} B: net_blocks={r['net_blocks']} net_bytes={r['net_bytes']}")
    return alloc.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
