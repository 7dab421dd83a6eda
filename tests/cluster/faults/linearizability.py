# SPDX-License-Identifier: Apache-2.0
"""A linearizability checker for the histories of the fault campaign: the Wing & Gong search with Lowe's
just-in-time linearization and a cache of (linearized set, state) pairs, as Porcupine does it
(github.com/anishathalye/porcupine, ``checker.go``), on each key of the history alone (P-compositionality: a
history is linearizable when each key's sub-history is).

The search walks the history's call and return events in time order as a linked list. At a call it tries to
linearize that operation now (the model must accept its answer): the operation's call and return events are lifted
out of the list and the walk restarts from the front. At a return it meets an operation that was not linearized
before it returned, so the last choice is undone (backtracking). The history is linearizable when the list empties.
A (set of linearized operations, state) pair seen before is not explored again.

Unknown outcomes return at infinity and accept any answer, so linearizing one at the very end stands for "it never
happened" (nothing observes it afterwards) and anywhere earlier for "it happened then". Failed operations did not
happen and are left out.

On a violation the result names the key, the earliest time at which the key's history stops being linearizable (the
history cut there, operations still running at the cut taken as unknown: a property that only grows with the cut,
so it is found by bisection), the longest linearizable prefix the search found, the state it leaves, and the window:
the operations after that prefix up to the cut, which cannot be linearized from that state.
"""
from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from tests.cluster.faults.history import (
    FAIL,
    INFINITY,
    UNKNOWN,
    Operation,
    initial_state,
    step,
)

DEFAULT_BUDGET = 2_000_000     # search steps per key before the answer is "undecided"


@dataclasses.dataclass
class KeyResult:
    """The verdict on one key: ``linearizable`` is True, False, or None when the search ran out of budget."""

    key: str
    linearizable: bool | None
    operations: int
    steps: int
    longest: list[Operation] = dataclasses.field(default_factory=list)
    state_after_longest: Any = None
    fail_time: float | None = None
    window: list[Operation] = dataclasses.field(default_factory=list)

    def describe(self) -> str:
        """A report of a violation: the state after the longest linearizable prefix, then the window."""
        if self.linearizable is not False:
            return f"{self.key}: {'linearizable' if self.linearizable else 'undecided'} ({self.operations} ops)"
        lines = [f"key {self.key}: not linearizable; fails by t={self.fail_time:.6f}",
                 (f"  longest linearizable prefix: {len(self.longest)} of {self.operations} ops, leaving state "
                  f"{self.state_after_longest!r}; last of it:")]
        lines += [f"    {op}" for op in self.longest[-3:]]
        lines.append(f"  window that cannot follow it ({len(self.window)} ops):")
        lines += [f"    {op}" for op in self.window]
        return "\n".join(lines)


@dataclasses.dataclass
class Result:
    """The verdict on a whole history."""

    keys: dict[str, KeyResult]

    @property
    def linearizable(self) -> bool | None:
        """False when a key is not linearizable, None when none is but one is undecided, else True."""
        verdicts = [r.linearizable for r in self.keys.values()]
        if False in verdicts:
            return False
        return None if None in verdicts else True

    @property
    def violations(self) -> list[KeyResult]:
        """The keys found not linearizable."""
        return [r for r in self.keys.values() if r.linearizable is False]


class _Node:
    __slots__ = ("id", "is_call", "match", "next", "op", "prev")

    def __init__(self, op: Operation | None, is_call: bool, op_id: int) -> None:
        self.op = op
        self.is_call = is_call
        self.match: _Node | None = None
        self.prev: _Node | None = None
        self.next: _Node | None = None
        self.id = op_id


def _events(ops: list[Operation]) -> _Node:
    """The call and return events of ``ops`` in time order (a call before a return at the same time, so that
    operations that touch count as concurrent) as a linked list behind a head node."""
    events = []
    for i, op in enumerate(ops):
        events.append((op.call, 0, i, True))
        events.append((op.ret, 1, i, False))
    events.sort(key=lambda e: (e[0], e[1], e[2]))
    head = _Node(None, False, -1)
    calls: dict[int, _Node] = {}
    prev = head
    for _, _, i, is_call in events:
        node = _Node(ops[i], is_call, i)
        if is_call:
            calls[i] = node
        else:
            calls[i].match = node
        node.prev = prev
        prev.next = node
        prev = node
    return head


def _lift(call: _Node) -> None:
    call.prev.next = call.next          # type: ignore[union-attr]
    if call.next is not None:
        call.next.prev = call.prev
    ret = call.match
    assert ret is not None
    ret.prev.next = ret.next            # type: ignore[union-attr]
    if ret.next is not None:
        ret.next.prev = ret.prev


def _unlift(call: _Node) -> None:
    ret = call.match
    assert ret is not None
    ret.prev.next = ret                 # type: ignore[union-attr]
    if ret.next is not None:
        ret.next.prev = ret
    call.prev.next = call               # type: ignore[union-attr]
    if call.next is not None:
        call.next.prev = call


def _search(key: str, ops: list[Operation], start_state: Any, budget: int
            ) -> tuple[bool | None, int, list[int], Any]:
    """``(verdict, steps, longest linearization as indices into ops, its final state)``."""
    head = _events(ops)
    state = start_state
    linearized = 0
    cache: set[tuple[int, Any]] = set()
    calls: list[tuple[_Node, Any]] = []
    longest: list[int] = []
    longest_state = start_state
    steps = 0
    entry = head.next
    while head.next is not None:
        steps += 1
        if steps > budget:
            if len(calls) > len(longest):
                longest, longest_state = [c.id for c, _ in calls], state
            return None, steps, longest, longest_state
        assert entry is not None
        if entry.is_call:
            ok, new_state = step(key, state, entry.op)     # type: ignore[arg-type]
            if ok:
                new_linearized = linearized | (1 << entry.id)
                if (new_linearized, new_state) not in cache:
                    cache.add((new_linearized, new_state))
                    calls.append((entry, state))
                    state, linearized = new_state, new_linearized
                    _lift(entry)
                    entry = head.next
                    continue
            entry = entry.next
        else:
            if len(calls) > len(longest):        # a dead end: the longest prefix so far ends here
                longest, longest_state = [c.id for c, _ in calls], state
            if not calls:
                return False, steps, longest, longest_state
            entry, state = calls.pop()
            linearized &= ~(1 << entry.id)
            _unlift(entry)
            entry = entry.next
    return True, steps, [c.id for c, _ in calls], state


def _cut(ops: list[Operation], t: float) -> list[Operation]:
    """The history as seen at time ``t``: operations called by then, those still running taken as unknown."""
    cut = []
    for op in ops:
        if op.call > t:
            continue
        if op.ret > t and op.status != UNKNOWN:
            op = dataclasses.replace(op, ret=INFINITY, status=UNKNOWN, output=None)
        cut.append(op)
    return cut


def check_key(key: str, ops: list[Operation], budget: int = DEFAULT_BUDGET) -> KeyResult:
    """The verdict on the operations of one key (failed operations already left out)."""
    verdict, steps, _, _ = _search(key, ops, initial_state(key), budget)
    result = KeyResult(key, verdict, len(ops), steps)
    if verdict is not False:
        return result
    # the earliest failing cut, by bisection over the finite event times
    times = sorted({op.call for op in ops} | {op.ret for op in ops if op.ret != INFINITY})
    lo, hi = 0, len(times) - 1              # the full history (cut at the last time) fails
    while lo < hi:
        mid = (lo + hi) // 2
        if _search(key, _cut(ops, times[mid]), initial_state(key), budget)[0] is False:
            hi = mid
        else:
            lo = mid + 1
    fail_time = times[lo]
    cut = _cut(ops, fail_time)
    _, _, longest, longest_state = _search(key, cut, initial_state(key), budget)
    done = set(longest)
    result.fail_time = fail_time
    result.longest = [cut[i] for i in longest]
    result.state_after_longest = longest_state
    result.window = sorted((op for i, op in enumerate(cut) if i not in done), key=lambda op: (op.call, op.index))
    return result


def check(history: Iterable[Operation], budget: int = DEFAULT_BUDGET) -> Result:
    """The verdict on a history: each key checked alone; failed operations left out."""
    by_key: dict[str, list[Operation]] = defaultdict(list)
    for op in history:
        if op.status != FAIL:
            by_key[op.key].append(op)
    return Result({key: check_key(key, ops, budget) for key, ops in sorted(by_key.items())})
