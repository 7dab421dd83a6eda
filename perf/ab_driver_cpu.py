# SPDX-License-Identifier: Apache-2.0
"""Driver CPU per datagram of two checkouts of ours, alternately, paired: is a change better than the one before?

    .venv/bin/python perf/ab_driver_cpu.py OTHER_CHECKOUT [--pairs 12] [--side sent] [--length 1024] [--messages N]
                                                                                    (needs AERON_C_BIN)

One run is one stream of perf/bench_driver_cpu.py's ``measure()`` with ours on ``--side`` and `aeronmd` on the other,
in OTHER_CHECKOUT (its own .venv, built) and then in this one; a pair is one run of each, back to back, so that the
load of the moment hits both. Runs of one driver spread by 10 to 20 % on 2 vCPUs (the two official clients spin, and
both drivers run in the gaps), more than most changes move the mean: compare the ratio of each pair, and its mean
over many pairs with its standard error, rather than two medians of three. Results: perf/results/ab_driver_cpu.json.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"

_RUN = """
import json, os, sys
sys.path.insert(0, "perf")
import bench_driver_cpu as b
side, length, messages = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
kinds = ("ours", "aeronmd") if side == "sent" else ("aeronmd", "ours")
print(json.dumps(b.measure(*kinds, os.environ["AERON_C_BIN"], messages, length)))
"""


def _one(checkout: Path, side: str, length: int, messages: int) -> float:
    out = subprocess.run([str(checkout / ".venv" / "bin" / "python"), "-c", _RUN, side, str(length), str(messages)],
                         cwd=checkout, capture_output=True, text=True, timeout=900, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{checkout}: {out.stderr.strip()[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])[f"{side}_us"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("other", type=Path, help="the checkout to compare against (with its own built .venv)")
    parser.add_argument("--pairs", type=int, default=12)
    parser.add_argument("--side", choices=("sent", "received"), default="sent")
    parser.add_argument("--length", type=int, default=1024, help="message length (32 goes with mtu=96)")
    parser.add_argument("--messages", type=int, default=100_000)
    args = parser.parse_args(argv)
    if not os.access(os.path.join(os.environ.get("AERON_C_BIN", ""), "aeronmd"), os.X_OK):
        print("AERON_C_BIN not set: this benchmark needs the official clients and aeronmd")
        return 0
    other, this = args.other.resolve(), HERE.parent
    if not (other / ".venv" / "bin" / "python").exists():
        print(f"{other} has no .venv: build it first (./run.sh build there)", file=sys.stderr)
        return 2
    pairs: list[tuple[float, float]] = []
    for i in range(args.pairs):
        before = _one(other, args.side, args.length, args.messages)
        after = _one(this, args.side, args.length, args.messages)
        pairs.append((before, after))
        print(f"pair {i + 1:2d}: other {before:7.3f}  this {after:7.3f} µs per {args.side} datagram  "
              f"ratio {after / before:.3f}", flush=True)
    ratios = [after / before for before, after in pairs]
    mean = statistics.mean(ratios)
    se = statistics.stdev(ratios) / len(ratios) ** 0.5 if len(ratios) > 1 else float("nan")
    lower = sum(1 for ratio in ratios if ratio < 1)
    print(f"\nthis / other, {args.side} {args.length} B, {len(pairs)} pairs: mean {mean:.3f} (standard error {se:.3f}), "
          f"median {statistics.median(ratios):.3f}; this lower in {lower}; means {statistics.mean(p[1] for p in pairs):.3f}"
          f" against {statistics.mean(p[0] for p in pairs):.3f} µs")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "ab_driver_cpu.json").write_text(json.dumps(
        {"other": str(other), "side": args.side, "length": args.length, "messages": args.messages,
         "pairs": pairs, "mean_ratio": mean, "standard_error": se}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
