# SPDX-License-Identifier: Apache-2.0
"""The checks of a campaign besides linearizability, on what the clients and the members' services wrote:

- every acknowledged operation applied exactly once, an unknown one at most once, a failed one never (by command
  id, over the applied files of every member);
- every member applied the same command at the same log position, with the same answer (a restarted member
  applies again what followed its snapshot: it must come out the same);
- one leader per leadership term (the services' new-leadership-term events, and the members' counters as sampled);
- the final state every member wrote down (``dump``) identical, and consistent with the history: each acknowledged
  append in its list once, an unknown one at most once, nothing that was not appended.
"""
from __future__ import annotations

import collections
import dataclasses
import json
import pathlib
from collections.abc import Iterable
from typing import Any

from tests.cluster.faults.history import FAIL, INFINITY, OK, UNKNOWN, Operation, number


def read_history(paths: Iterable[pathlib.Path]) -> list[Operation]:
    """The operations of the clients' history files; an invocation without completion is unknown."""
    ops: dict[tuple[str, int], Operation] = {}
    for path in paths:
        process = None
        with open(path, encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue                # a line cut short by a kill
                if record["ev"] == "invoke":
                    process = record["process"]
                    value = record["value"]
                    ops[(process, record["id"])] = Operation(
                        process, record["op"], record["key"], tuple(value) if isinstance(value, list) else value,
                        record["t"], ref=f"{process}/{record['id']}")
                    continue
                op = ops.get((process, record["id"])) if process is not None else None
                if op is None:
                    continue
                if record["ev"] == "ok":
                    op.status, op.ret, op.output = OK, record["t"], _tuples(record["out"])
                elif record["ev"] == "fail":
                    op.status, op.ret = FAIL, record["t"]
                else:
                    op.status, op.ret = UNKNOWN, INFINITY
    return number(sorted(ops.values(), key=lambda o: (o.call, o.process)))


def _tuples(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    return value


def read_applied(path: pathlib.Path) -> list[dict[str, Any]]:
    """The entries of a member's applied file (a last line cut short by a kill left out)."""
    if not path.exists():
        return []
    entries = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                entries.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return entries


def check_applied(applied: dict[int, list[dict[str, Any]]]) -> tuple[list[str], dict[str, Any]]:
    """Violations of "same command, same answer at the same position on every member" and "one leader per term",
    and facts: the command ids applied with their positions, the terms and their leaders."""
    violations: list[str] = []
    at: dict[int, tuple[int, str]] = {}
    positions_of: dict[str, set[int]] = collections.defaultdict(set)
    results: dict[str, Any] = {}
    leaders: dict[int, set[int]] = collections.defaultdict(set)
    for member, entries in sorted(applied.items()):
        for entry in entries:
            if "cmd" in entry:
                text = json.dumps([entry["cmd"], entry["r"]], sort_keys=True)
                seen = at.get(entry["pos"])
                if seen is None:
                    at[entry["pos"]] = (member, text)
                elif seen[1] != text:
                    violations.append(f"log position {entry['pos']}: member {seen[0]} applied {seen[1]}, member "
                                      f"{member} applied {text}")
                if entry["cmd"].get("i") is not None:
                    positions_of[entry["cmd"]["i"]].add(entry["pos"])
                    results[entry["cmd"]["i"]] = _tuples(entry["r"])
            elif "term" in entry:
                leaders[entry["term"]].add(entry["leader"])
    for term, who in sorted(leaders.items()):
        if len(who) > 1:
            violations.append(f"leadership term {term} has leaders {sorted(who)}")
    for command_id, positions in sorted(positions_of.items()):
        if len(positions) > 1:
            violations.append(f"command {command_id} applied at {len(positions)} log positions {sorted(positions)}")
    return violations, {"positions_of": positions_of, "results": results, "terms": dict(leaders),
                        "commands": len(at)}


def resolve_unknowns(history: list[Operation], results: dict[str, Any]) -> tuple[list[Operation], int, int]:
    """The history with each unknown outcome settled by the members' applied files, read once every member has
    written its final state (nothing the clients sent can still be applied after it): applied, it is an operation
    with the answer the service gave and a return time still unknown; not applied, it did not happen. Returns the
    history and how many unknowns were found applied and not. The search then has no unknown subsets of counter
    additions to try (an exponential number), and checks the applied ones' answers too."""
    resolved, applied, dropped = [], 0, 0
    for op in history:
        if op.status == UNKNOWN and op.ref:
            if op.ref in results:
                op = dataclasses.replace(op, status=OK, output=results[op.ref], ret=INFINITY)
                applied += 1
            else:
                op = dataclasses.replace(op, status=FAIL)
                dropped += 1
        resolved.append(op)
    return resolved, applied, dropped


def check_exactly_once(history: list[Operation], positions_of: dict[str, set[int]]) -> list[str]:
    """Acknowledged operations applied once, failed ones never (unknown: at most once, checked by positions)."""
    violations = []
    for op in history:
        applied = len(positions_of.get(op.ref, ()))
        if op.status == OK and applied != 1:
            violations.append(f"acknowledged {op} applied {applied} times")
        elif op.status == FAIL and applied:
            violations.append(f"failed {op} was applied")
    return violations


def check_dumps(dumps: dict[int, dict[str, Any]], history: list[Operation]) -> list[str]:
    """The members' final states identical, and each list's elements accounted for by the history."""
    violations = []
    if not dumps:
        return ["no member wrote its final state"]
    first_member, first = next(iter(sorted(dumps.items())))
    for member, dump in sorted(dumps.items()):
        if dump != first:
            differing = sorted(k for k in set(dump) | set(first) if dump.get(k) != first.get(k))
            violations.append(f"final state of member {member} differs from member {first_member}'s at keys "
                              f"{differing}")
    appended: dict[str, dict[Any, str]] = collections.defaultdict(dict)
    for op in history:
        if op.op == "append":
            appended[op.key][op.value] = op.status
    for key, state in sorted(first.items()):
        if key[:1] != "l":
            continue
        counts = collections.Counter(state)
        for value, count in counts.items():
            status = appended[key].get(value)
            if status is None:
                violations.append(f"{key}: {value!r} in the final state was never appended")
            elif status == FAIL:
                violations.append(f"{key}: {value!r} in the final state was a failed append")
            if count > 1:
                violations.append(f"{key}: {value!r} appears {count} times")
        for value, status in appended[key].items():
            if status == OK and value not in counts:
                violations.append(f"{key}: acknowledged append {value!r} missing from the final state")
    for key, values in appended.items():
        if key not in first and any(status == OK for status in values.values()):
            violations.append(f"{key}: acknowledged appends but the key is missing from the final state")
    return violations
