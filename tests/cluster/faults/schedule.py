# SPDX-License-Identifier: Apache-2.0
"""The fault schedule of a campaign, drawn from a seed: the same seed, member count, duration and fault kinds give
the same schedule, which the campaign prints before it starts so that a failing run can be run again exactly.

Faults come one after another (each held for its ``hold`` seconds, then healed), with snapshots requested between
and during them. A fault's target is ``"leader"`` (resolved when the fault is applied, to whichever member leads
then) or a member id; leaders are favoured. Kinds:

- ``kill``: kill -9 of the member's processes, restarted after ``hold``;
- ``pause``: SIGSTOP for ``hold`` (longer than the leader heartbeat timeout), then SIGCONT;
- ``loss``: the member restarted with the driver's receive loss generator at ``rate``, restarted clean after
  ``hold`` (two kill -9s, with random loss of every data frame the member receives between them); a Java member
  gets Java's own debug receive endpoint with the same rate (``DebugReceiveChannelEndpoint``);
- ``reorder``: the same with the driver's reorder generator: ``rate`` of the data frames the member receives held
  back until ``depth`` more have arrived;
- ``duplicate``: the same with the duplicate generator: ``rate`` of them delivered twice, the copy ``depth`` later;
- ``partition``: network cuts for ``hold`` (needs the namespace network): ``isolate`` the target, ``split`` the
  members into a minority and a majority, or a ``bridge`` (one member hears both sides, which do not hear each
  other);
- ``clock``: the member's cluster clock jumps by ``offset_ms`` (forward or back) for ``hold``, then back to true
  time (``clock.py``);
- ``disk``: the member's archive file system (a small tmpfs of its own, which needs the campaign's own mount
  namespace) filled up for ``hold``, then emptied; a member that stopped meanwhile is restarted;
- ``slowdisk``: each fsync, fdatasync and msync of the member's processes delayed by ``delay_ms`` for ``hold``
  (``slow_disk.c``, preloaded into every member when this kind is on);
- ``snapshot``: the leader is asked for a snapshot (no hold).

``cover`` starts the schedule with one fault of every kind (in an order drawn from the seed), so that a short run
still sees them all; ``quick`` draws the shorter holds and gaps of the test suite's campaign (a pause still outlasts
the leader heartbeat timeout), and its cover puts loss, reorder and duplicate in one fault (kind
``loss+reorder+duplicate``: the three generators chained on the member's receive path, one restart pair for all)
unless ``merge_receive`` is False (a Java member can take loss only).

The detail of a receive-path fault names each generator with its arguments: ``{"reorder": {"rate": 0.1, "seed": 7,
"depth": 3}}``.
"""
from __future__ import annotations

import dataclasses
import random
from typing import Any

RECEIVE_KINDS = ("loss", "reorder", "duplicate")
ALL_KINDS = ("kill", "pause", "loss", "reorder", "duplicate", "partition", "clock", "disk", "slowdisk", "snapshot")
WEIGHTS = {"kill": 4, "pause": 3, "loss": 2, "reorder": 1, "duplicate": 1, "partition": 4, "clock": 2, "disk": 1,
           "slowdisk": 2, "snapshot": 3}
LEADER_BIAS = 0.6
# (low, high) seconds a fault of each kind is held, long runs and the quick ones
HOLDS = {"kill": (1.0, 6.0), "pause": (4.0, 8.0), "loss": (4.0, 10.0), "reorder": (4.0, 10.0),
         "duplicate": (4.0, 10.0), "partition": (4.0, 10.0), "clock": (3.0, 8.0), "disk": (3.0, 8.0),
         "slowdisk": (3.0, 8.0)}
QUICK_HOLDS = {"kill": (0.5, 1.5), "pause": (3.5, 4.5), "loss": (1.5, 3.0), "reorder": (1.5, 3.0),
               "duplicate": (1.5, 3.0), "partition": (2.0, 4.0), "clock": (1.5, 3.0), "disk": (1.5, 3.0),
               "slowdisk": (2.0, 3.5)}


@dataclasses.dataclass
class Fault:
    """One fault: ``at`` seconds after the schedule starts, ``kind``, ``target`` ("leader" or a member id),
    ``hold`` seconds, and the kind's ``detail``."""

    at: float
    kind: str
    target: Any
    hold: float
    detail: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __str__(self) -> str:
        detail = " ".join(f"{k}={v}" for k, v in sorted(self.detail.items()))
        return f"t+{self.at:7.2f}s {self.kind:9s} target={self.target} hold={self.hold:.2f}s {detail}".rstrip()


def partition_pairs(members: int, kind: str, rng: random.Random, target: int) -> list[tuple[int, int]]:
    """The member pairs to cut for a partition of ``kind`` around ``target``."""
    everyone = list(range(members))
    if kind == "isolate":
        return [(target, m) for m in everyone if m != target]
    if kind == "split":
        minority_size = rng.randrange(1, (members - 1) // 2 + 1)
        others = [m for m in everyone if m != target]
        minority = {target, *rng.sample(others, minority_size - 1)}
        return [(a, b) for a in sorted(minority) for b in everyone if b not in minority]
    if kind == "bridge":
        others = [m for m in everyone if m != target]
        rng.shuffle(others)
        half = len(others) // 2
        left, right = others[:half], others[half:]
        return [(a, b) for a in left for b in right]
    raise ValueError(f"unknown partition kind {kind!r}")


def generate(seed: int, members: int, duration: float, kinds: tuple[str, ...] = ALL_KINDS,
             warmup: float = 4.0, settle: float = 6.0, cover: bool = False, quick: bool = False,
             merge_receive: bool = True) -> list[Fault]:
    """The schedule for ``duration`` seconds of faults among ``members``, of the given ``kinds`` only (with
    ``cover``, every kind at least once even past ``duration``)."""
    unknown = set(kinds) - set(ALL_KINDS)
    if unknown:
        raise ValueError(f"unknown fault kinds {sorted(unknown)}; known: {ALL_KINDS}")
    rng = random.Random(seed)
    choices = [k for k in kinds]
    weights = [WEIGHTS[k] for k in choices]
    holds = QUICK_HOLDS if quick else HOLDS
    gaps = (0.5, 1.5) if quick else (1.5, 4.0)
    first = rng.sample(choices, len(choices)) if cover else []
    if quick and cover and merge_receive and sum(k in RECEIVE_KINDS for k in first) > 1:
        together = "+".join(k for k in RECEIVE_KINDS if k in first)
        first = [together if k == together.split("+")[0] else k for k in first
                 if k not in RECEIVE_KINDS or k == together.split("+")[0]]
    faults: list[Fault] = []
    t = warmup
    while first or t < duration - settle:
        kind = first.pop(0) if first else rng.choices(choices, weights)[0]
        target: Any = "leader" if rng.random() < LEADER_BIAS else rng.randrange(members)
        if kind == "snapshot":
            faults.append(Fault(round(t, 2), kind, "leader", 0.0))
            t += rng.uniform(*gaps) if quick else rng.uniform(1.0, 3.0)
            continue
        hold = rng.uniform(*holds[kind.split("+")[0]])
        detail: dict[str, Any] = {}
        if kind.split("+")[0] in RECEIVE_KINDS:
            for part in kind.split("+"):
                detail[part] = {"rate": round(rng.uniform(0.05, 0.3), 3), "seed": rng.randrange(1 << 31)}
                if part != "loss":
                    detail[part]["depth"] = rng.randrange(1, 8) if part == "reorder" else rng.randrange(0, 4)
        elif kind == "slowdisk":
            detail = {"delay_ms": rng.choice((20, 50, 100, 250, 500, 1000))}
        elif kind == "clock":
            detail = {"offset_ms": rng.choice((-1, 1)) * rng.randrange(2_000, 60_000)}
        elif kind == "partition":
            detail = {"shape": rng.choice(("isolate", "split", "bridge") if members >= 3 else ("isolate",)),
                      "seed": rng.randrange(1 << 31)}
        faults.append(Fault(round(t, 2), kind, target, round(hold, 2), detail))
        t += hold + rng.uniform(*gaps)
    return faults
