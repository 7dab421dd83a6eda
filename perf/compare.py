# SPDX-License-Identifier: Apache-2.0
"""Compare a run of perf/regression.py with the checked-in baseline of ratios; exit 1 on a regression.

    .venv/bin/python perf/compare.py --run [--fast | --rigorous]    run the suite now, then compare (one command)
    .venv/bin/python perf/compare.py run.json                        compare a saved run
    .venv/bin/python perf/compare.py run.json --update               make run.json's ratios the new baseline

Each benchmark is divided by its reference from the same run (regression.RATIOS: round trips by the raw UDP
round trip, throughput by the bare copy), so the ratio says how much slower than the machine's own floor we are
and survives a slower or busier machine. Noise is measured, not assumed: for each benchmark and its reference
the standard error of the median of pyperf's values (sigma from the interquartile range / 1.349), relative to
the median; a ratio's noise is the two combined, and run and baseline noise combine again. A ratio regresses when it exceeds the baseline's by more
than ``--sigmas`` (3) times that combined noise, and by at least ``--min-change`` (10 %), so that a quiet machine
does not flag differences too small to matter. Improvements are reported, never failed.
"""
from __future__ import annotations

import argparse
import json
import math
import pathlib
import statistics
import subprocess
import sys
import tempfile

import pyperf

from regression import RATIOS

HERE = pathlib.Path(__file__).resolve().parent
BASELINE = HERE / "baseline.json"


def _spread(values: list[float]) -> tuple[float, float]:
    """Median of ``values`` and its noise: the standard error of a median (1.253 sigma / sqrt(n)), sigma
    estimated robustly from the interquartile range, relative to the median."""
    median = statistics.median(values)
    if len(values) < 4:
        return median, 0.0
    q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return median, 1.253 * (q3 - q1) / 1.349 / math.sqrt(len(values)) / median


def ratios(suite: pyperf.BenchmarkSuite) -> dict[str, dict[str, float]]:
    """{benchmark: {ratio, noise, value_s, reference_s}} for every benchmark of RATIOS found in ``suite``."""
    stats = {bench.get_name(): _spread(bench.get_values()) for bench in suite.get_benchmarks()}
    out = {}
    for name, reference in RATIOS.items():
        if name not in stats or reference not in stats:
            continue
        (value, noise), (ref, ref_noise) = stats[name], stats[reference]
        out[name] = {"ratio": value / ref, "noise": math.hypot(noise, ref_noise), "value_s": value,
                     "reference_s": ref}
    return out


def compare(run: dict[str, dict[str, float]], base: dict[str, dict[str, float]], sigmas: float,
            min_change: float) -> list[str]:
    """Print the table; return the names that regressed."""
    regressed = []
    print(f"{'benchmark':14s} {'baseline':>10s} {'this run':>10s} {'change':>8s} {'allowed':>8s}  verdict")
    for name, now in run.items():
        then = base.get(name)
        if then is None:
            print(f"{name:14s} {'-':>10s} {now['ratio']:10.3f}  (not in the baseline)")
            continue
        change = now["ratio"] / then["ratio"] - 1.0
        allowed = max(min_change, sigmas * math.hypot(now["noise"], then["noise"]))
        verdict = "REGRESSION" if change > allowed else ("faster" if change < -allowed else "ok")
        if verdict == "REGRESSION":
            regressed.append(name)
        print(f"{name:14s} {then['ratio']:10.3f} {now['ratio']:10.3f} {change:+8.1%} {allowed:8.1%}  {verdict}")
    missing = sorted(set(base) - set(run))
    if missing:
        print(f"not measured in this run: {', '.join(missing)}")
    return regressed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", nargs="?", help="a pyperf JSON written by perf/regression.py -o")
    parser.add_argument("--run", dest="run_now", action="store_true", help="run perf/regression.py first")
    parser.add_argument("--baseline", default=str(BASELINE))
    parser.add_argument("--update", action="store_true", help="write this run's ratios as the baseline")
    parser.add_argument("--sigmas", type=float, default=3.0)
    parser.add_argument("--min-change", type=float, default=0.10)
    args, pyperf_args = parser.parse_known_args(argv)
    if args.run_now:
        out = pathlib.Path(tempfile.mkdtemp()) / "run.json"
        subprocess.run([sys.executable, str(HERE / "regression.py"), "-o", str(out), *(pyperf_args or ["--fast"])],
                       check=True)
        path = str(out)
    elif args.run:
        path = args.run
    else:
        parser.error("give a run JSON or --run")
    run = ratios(pyperf.BenchmarkSuite.load(path))
    if args.update:
        pathlib.Path(args.baseline).write_text(json.dumps(
            {"about": "ratios of perf/regression.py benchmarks to their same-run references (perf/compare.py)",
             "ratios": run}, indent=1, sort_keys=True) + "\n")
        print(f"baseline written: {args.baseline}")
        return 0
    base = json.loads(pathlib.Path(args.baseline).read_text())["ratios"]
    regressed = compare(run, base, args.sigmas, args.min_change)
    if regressed:
        print(f"regressed beyond the measured noise: {', '.join(regressed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
