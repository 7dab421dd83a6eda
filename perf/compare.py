# SPDX-License-Identifier: Apache-2.0
"""The latency regression check: this checkout against its base commit, both measured on this machine at the same
time, their values taken in turn; exit 1 on a regression.

    .venv/bin/python perf/compare.py [--base REF] [--rounds 4] [--values 20] [--only ipc_rtt,...] [-o run.json]
    ./run.sh regress [same options]

The base (by default the merge base of HEAD and ``main``, or HEAD where there is no ``main``) is checked out in a
git worktree of its own under the virtual environment (``.venv/regress/<commit>``, kept for the next run) and built
there, reusing this checkout's compiled modules whose sources it shares; when the base is HEAD and the checkout has
no change, both sides are this checkout (an A/A run: it shows the noise). Each round starts one worker per side
(perf/regression.py --serve: its own driver and pong processes, PYTHONPATH naming the code measured; both run this
checkout's harness) and, per benchmark, asks them for values in turn, which side first alternating: a value lasts
5 ms or more, so each pair is taken within about ten milliseconds, and a machine that is slower or busier at that
moment moves both alike. No baseline from another machine is read.

Each pair gives a ratio change / base; the verdict is on the median of those ratios over every pair of every round.
Its noise is measured, not assumed: the standard error of that median (1.253 sigma / sqrt(pairs), sigma from the
interquartile range of the log ratios / 1.349). A benchmark regresses when its median ratio exceeds 1 by more than
``--sigmas`` (3) times that noise and by at least ``--min-change`` (10 %). The references (``ref_*``: a raw UDP
ping-pong, a bare copy) are the same code on both sides: their ratio shows how well the pairing cancels the
machine's drift, and they are never judged. Improvements are reported, never failed.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
# the compiled sources and what they include: equal files keep this checkout's build of them in the base's worktree
BUILD_SOURCES = ("*.pyx", "*.pxd", "*.h", "*.pxi")
ARTEFACTS = ("*.c", "*.so")


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], check=True, capture_output=True, text=True).stdout.strip()


def resolve_base(ref: str | None) -> str:
    """The commit to compare with: ``ref``, else the merge base of HEAD and main, else HEAD."""
    if ref is not None:
        return _git("rev-parse", "--verify", f"{ref}^{{commit}}")
    try:
        return _git("merge-base", "HEAD", "main")
    except subprocess.CalledProcessError:
        return _git("rev-parse", "HEAD")


def checkout_is_base(base: str) -> bool:
    """True when this checkout is the base commit with no change to a tracked file."""
    return _git("rev-parse", "HEAD") == base and not _git("status", "--porcelain", "--untracked-files=no")


def _seed_build(tree: pathlib.Path) -> int:
    """Copy this checkout's compiled modules into the base's fresh worktree where their sources are equal (byte for
    byte, and given the same times so the build takes them as up to date); sources that differ keep the checkout's
    time, later than the copies, and are rebuilt with whatever cimports them. Returns the sources that differ."""
    differ = 0
    for pattern in BUILD_SOURCES:
        for source in (ROOT / "aeron").rglob(pattern):
            other = tree / source.relative_to(ROOT)
            if other.exists() and other.read_bytes() == source.read_bytes():
                stat = source.stat()
                os.utime(other, ns=(stat.st_atime_ns, stat.st_mtime_ns))
            elif other.exists():
                differ += 1
    for pattern in ARTEFACTS:
        for artefact in (ROOT / "aeron").rglob(pattern):
            target = tree / artefact.relative_to(ROOT)
            if target.parent.is_dir() and not (pattern == "*.c" and _git("ls-files", str(artefact))):
                shutil.copy2(artefact, target)
    if (ROOT / "build").is_dir():
        shutil.copytree(ROOT / "build", tree / "build", symlinks=True, dirs_exist_ok=True)
    return differ


def prepare_base(base: str, quiet: bool = False) -> pathlib.Path:
    """The base commit's worktree, created and built on first use."""
    tree = pathlib.Path(sys.prefix) / "regress" / base
    if not (tree / ".regress-built").exists():
        if not tree.exists():
            tree.parent.mkdir(parents=True, exist_ok=True)
            _git("worktree", "add", "--detach", str(tree), base)
            differ = _seed_build(tree)
            if not quiet:
                print(f"regress: base {base[:12]} checked out in {tree}; {differ} compiled source(s) differ from this"
                      " checkout's and are rebuilt there (seconds for none, minutes for many)", flush=True)
        with open(tree / ".regress-build.log", "w") as log:
            subprocess.run(["flock", str(tree / ".build.lock"), sys.executable, "setup.py", "-q", "build_ext",
                            "--inplace", "-j", "2"], cwd=tree, check=True, stdout=log, stderr=subprocess.STDOUT)
        (tree / ".regress-built").touch()
    os.utime(tree / ".regress-built")
    _prune(tree.parent, KEEP_BASES)
    return tree


KEEP_BASES = 3      # base worktrees kept under .venv/regress (most recently used first); older ones are removed


def _prune(folder: pathlib.Path, keep: int) -> None:
    trees = sorted((t for t in folder.iterdir() if (t / ".regress-built").exists()),
                   key=lambda t: (t / ".regress-built").stat().st_mtime, reverse=True)
    for tree in trees[keep:]:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False,
                       capture_output=True)


class Worker:
    """A perf/regression.py --serve process on the code of ``tree`` (its own driver and pongs, kept between values)."""

    def __init__(self, tree: pathlib.Path) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("AERON_")}
        env["PYTHONPATH"] = str(tree)
        self.proc = subprocess.Popen([sys.executable, str(HERE / "regression.py"), "--serve"], env=env, cwd=str(HERE),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def ask(self, *command: object) -> float:
        self.proc.stdin.write(" ".join(map(str, command)) + "\n")    # type: ignore[union-attr]
        self.proc.stdin.flush()                                         # type: ignore[union-attr]
        line = self.proc.stdout.readline()                              # type: ignore[union-attr]
        if not line:
            raise RuntimeError(f"regression.py --serve ended (exit {self.proc.wait()}) on {command}")
        return json.loads(line)

    def close(self) -> None:
        try:
            self.proc.stdin.write("quit\n")                               # type: ignore[union-attr]
            self.proc.stdin.close()                                     # type: ignore[union-attr]
            self.proc.wait(60)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait(10)


def run_round(base_tree: pathlib.Path, values: int, only: list[str], base_first: bool) -> dict[str, dict]:
    """One round: a fresh worker per side, both alive; per benchmark the loop count calibrated on the change, two
    warm-up values each, then ``values`` pairs, the two sides asked in turn (which goes first alternating), so that
    each pair is taken within about ten milliseconds, whatever the machine does meanwhile."""
    workers = {"base": Worker(base_tree), "change": Worker(ROOT)}
    try:
        out: dict[str, dict[str, list[float]]] = {"base": {}, "change": {}}
        for name in only:
            loops = int(workers["change"].ask("calibrate", name))
            for worker in workers.values():
                for _ in range(2):
                    worker.ask("run", name, loops)
            for values_of_side in out.values():
                values_of_side[name] = []
            for i in range(values):
                order = ("base", "change") if (i % 2 == 0) == base_first else ("change", "base")
                for side in order:
                    out[side][name].append(workers[side].ask("run", name, loops))
        return out
    finally:
        for worker in workers.values():
            worker.close()


def verdicts(rounds: list[dict[str, dict[str, list[float]]]], sigmas: float, min_change: float) -> dict[str, dict]:
    """{benchmark: {ratio, noise, allowed, base_s, change_s, ratios, verdict}} from rounds of {"base": {name: values},
    "change": {name: values}}, the values of a round paired by index; the verdict is "reference" for ref_*, else
    "REGRESSION", "faster" or "ok"."""
    out = {}
    names = [n for n in rounds[0]["base"] if all(n in r["base"] and n in r["change"] for r in rounds)]
    for name in names:
        logs = [math.log(c / b) for r in rounds for b, c in zip(r["base"][name], r["change"][name])]
        ratio = math.exp(statistics.median(logs))
        if len(logs) >= 4:
            q1, _, q3 = statistics.quantiles(logs, n=4, method="inclusive")
            noise = 1.253 * (q3 - q1) / 1.349 / math.sqrt(len(logs))
        else:
            noise = float("inf")       # too few pairs to know the noise: never a verdict of regression
        allowed = max(min_change, sigmas * noise)
        if name.startswith("ref_"):
            verdict = "reference"
        elif ratio - 1.0 > allowed:
            verdict = "REGRESSION"
        elif 1.0 - ratio > allowed:
            verdict = "faster"
        else:
            verdict = "ok"
        per_round = [math.exp(statistics.median(math.log(c / b) for b, c in zip(r["base"][name], r["change"][name])))
                     for r in rounds]
        out[name] = {"ratio": ratio, "noise": noise, "allowed": allowed,
                     "base_s": statistics.median(v for r in rounds for v in r["base"][name]),
                     "change_s": statistics.median(v for r in rounds for v in r["change"][name]),
                     "ratios": per_round, "verdict": verdict}
    return out


def _fmt_s(seconds: float) -> str:
    return f"{seconds * 1e6:9.2f} µs" if seconds >= 1e-6 else f"{seconds * 1e9:9.1f} ns"


def report(result: dict[str, dict]) -> list[str]:
    """Print the table; return the names that regressed."""
    print(f"{'benchmark':13s} {'base':>12s} {'change':>12s} {'ratio':>7s} {'allowed':>8s}  verdict   (ratio per round)")
    for name, r in result.items():
        per_round = " ".join(f"{x:.2f}" for x in r["ratios"])
        print(f"{name:13s} {_fmt_s(r['base_s'])} {_fmt_s(r['change_s'])} {r['ratio']:7.3f} {r['allowed']:+8.1%}  "
              f"{r['verdict']:9s} ({per_round})")
    return [name for name, r in result.items() if r["verdict"] == "REGRESSION"]


def main(argv: list[str] | None = None) -> int:
    from regression import BENCHMARKS

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", help="the commit to compare with (default: merge-base HEAD main)")
    parser.add_argument("--rounds", type=int, default=4, help="fresh pairs of worker processes")
    parser.add_argument("--values", type=int, default=20, help="pairs of values per benchmark and round")
    parser.add_argument("--only", default=",".join(BENCHMARKS), help="comma-separated benchmarks")
    parser.add_argument("--sigmas", type=float, default=3.0)
    parser.add_argument("--min-change", type=float, default=0.10)
    parser.add_argument("-o", "--output", help="write every timing and verdict as JSON")
    parser.add_argument("--fast", action="store_true", help="2 rounds")
    args = parser.parse_args(argv)
    if args.fast:
        args.rounds = 2
    only = [n for n in args.only.split(",") if n]
    unknown = set(only) - set(BENCHMARKS)
    if unknown:
        parser.error(f"unknown benchmarks: {', '.join(sorted(unknown))}")
    base = resolve_base(args.base)
    same = checkout_is_base(base)
    base_tree = ROOT if same else prepare_base(base)
    print(f"regress: change = {ROOT}{' (the base itself: an A/A run)' if same else ''}, base = {base[:12]}"
          f" ({base_tree}); {args.rounds} rounds; load average {os.getloadavg()[0]:.1f}", flush=True)
    rounds = []
    started = time.monotonic()
    for i in range(args.rounds):
        rounds.append(run_round(base_tree, args.values, only, base_first=i % 2 == 0))
        print(f"regress: round {i + 1}/{args.rounds} done ({time.monotonic() - started:.0f} s, load average "
              f"{os.getloadavg()[0]:.1f})", flush=True)
    result = verdicts(rounds, args.sigmas, args.min_change)
    regressed = report(result)
    if args.output:
        pathlib.Path(args.output).write_text(json.dumps({"base": base, "same": same, "rounds": rounds,
                                                         "verdicts": result}, indent=1) + "\n")
    if regressed:
        print(f"regressed beyond the measured noise: {', '.join(regressed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
