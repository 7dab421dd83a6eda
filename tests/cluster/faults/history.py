# SPDX-License-Identifier: Apache-2.0
"""The history a fault campaign records, and the model of the campaign's service it is checked against.

A history is a list of :class:`Operation`: one per client invocation, with the client (``process``), what was asked
(``op``, ``key``, ``value``), when it was called and when it completed (seconds on the campaign's monotonic clock:
every client process shares ``time.monotonic`` with the harness on one machine), and its outcome: ``ok`` with the
service's answer, ``fail`` (known not to have happened, e.g. refused before it reached the cluster) or ``unknown``
(timed out or the session was lost: it may have happened, once, at any time after its call, or never).

The service is a set of keys of three kinds, told apart by the key's first letter:

- ``l...``: an append-only list; ``append(x)`` answers the list's length after the append, ``read`` the list;
- ``c...``: a counter; ``add(d)`` answers the new value, ``read`` the value;
- ``r...``: a register; ``write(v)`` answers ``None``, ``cas((old, new))`` answers whether it swapped, ``read`` the
  value (``None`` until written).

The model (:func:`step`) is deterministic and pure: the service in ``faults_service.py`` applies the same function, so
what a member answers and what the checker expects cannot drift apart.
"""
from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterable
from typing import Any

OK, FAIL, UNKNOWN = "ok", "fail", "unknown"
INFINITY = math.inf


@dataclasses.dataclass
class Operation:
    """One client invocation and its completion (``ret`` is ``INFINITY`` for an unknown outcome)."""

    process: str
    op: str
    key: str
    value: Any
    call: float
    ret: float = INFINITY
    status: str = UNKNOWN
    output: Any = None
    index: int = -1             # position in the history, set by :func:`number`
    ref: str = ""               # the command id the client sent ("<client>/<n>"), to find it in the applied files

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready record (an unknown return time as None)."""
        record = dataclasses.asdict(self)
        record["ret"] = None if self.ret == INFINITY else self.ret
        return record

    @classmethod
    def from_json(cls, record: dict[str, Any]) -> Operation:
        """The operation of a :meth:`to_json` record (lists back into tuples, where the model keeps tuples)."""
        record = dict(record)
        record["ret"] = INFINITY if record.get("ret") is None else record["ret"]
        record["value"] = _tuples(record.get("value"))
        record["output"] = _tuples(record.get("output"))
        return cls(**record)

    def __str__(self) -> str:
        ret = "?" if self.ret == INFINITY else f"{self.ret:.6f}"
        return (f"#{self.index} {self.process} {self.op}({self.key}, {self.value!r}) [{self.call:.6f}, {ret}] "
                f"{self.status} {self.output!r}")


def payload(buffer: Any, offset: int, length: int) -> bytes:
    """The bytes of a message, from a fragment's buffer or an assembler's."""
    get_bytes = getattr(buffer, "get_bytes", None)
    return get_bytes(offset, length) if get_bytes is not None else bytes(buffer[offset:offset + length])


def _tuples(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    return value


def number(history: Iterable[Operation]) -> list[Operation]:
    """The history as a list, each operation's ``index`` its position."""
    ops = list(history)
    for i, op in enumerate(ops):
        op.index = i
    return ops


def save(history: Iterable[Operation], path: Any) -> None:
    """Write a history as JSON lines."""
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(op.to_json()) + "\n" for op in history)


def load(path: Any) -> list[Operation]:
    """Read a history written by :func:`save` (or by the campaign's clients)."""
    with open(path, encoding="utf-8") as f:
        return number(Operation.from_json(json.loads(line)) for line in f if line.strip())


class ModelError(ValueError):
    """An operation the model does not know (a bad history, not a linearizability violation)."""


def initial_state(key: str) -> Any:
    """The state of a key nobody has touched."""
    kind = key[:1]
    if kind == "l":
        return ()
    if kind == "c":
        return 0
    if kind == "r":
        return None
    raise ModelError(f"unknown key kind {key!r}: keys start with l (list), c (counter) or r (register)")


def apply(key: str, state: Any, op: str, value: Any) -> tuple[Any, Any]:
    """``(new state, answer)`` of ``op(value)`` on ``key`` in ``state``: what the service does."""
    kind = key[:1]
    if op == "read":
        return state, state
    if kind == "l" and op == "append":
        new = state + (value,)
        return new, len(new)
    if kind == "c" and op == "add":
        new = state + int(value)
        return new, new
    if kind == "r" and op == "write":
        return value, None
    if kind == "r" and op == "cas":
        old, new = value
        return (new, True) if state == old else (state, False)
    raise ModelError(f"operation {op!r} is not defined on key {key!r}")


def step(key: str, state: Any, op: Operation) -> tuple[bool, Any]:
    """Whether ``op`` can take effect in ``state`` with the answer it got, and the state after it. An unknown
    outcome accepts any answer; a failed operation never reaches here (it did not happen)."""
    new, answer = apply(key, state, op.op, op.value)
    if op.status == UNKNOWN:
        return True, new
    return answer == op.output, new
