# SPDX-License-Identifier: Apache-2.0
"""Our AeronCluster client driving the register service (tests.cluster.system.register_service) for tests: sends
numbered commands, keeps its session alive while it waits, and keeps what came back (answers, new leaders, session
events). Every wait has a deadline."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from aeron.cluster.client import AeronCluster, Context, EgressListener
from aeron.common.errors import ClusterError

T = TypeVar("T")
MS = 1_000_000
KEEP_ALIVE_INTERVAL_S = 0.5


def add_value(seq: int) -> int:
    """What command ``seq`` of an ``add`` stream adds: the answers then tell the order the commands were applied in."""
    return seq % 7 + 1


def running_totals(applied: list[str]) -> dict[str, int]:
    """``client:seq`` -> the total right after it was applied, for an ``applied`` list of add commands made with
    :func:`add_value`."""
    total = 0
    totals = {}
    for entry in applied:
        total += add_value(int(entry.split(":")[1]))
        totals[entry] = total
    return totals


def client_context(aeron_dir: str, ingress_endpoints: str, listener: Any = None, **settings: Any) -> Context:
    """A client context on the driver of ``aeron_dir``, UDP ingress to ``ingress_endpoints`` and an egress on an
    ephemeral loopback port; a 10 s message timeout."""
    settings.setdefault("message_timeout_ns", 10_000 * MS)
    return Context(environ={}, aeron_dir=aeron_dir, ingress_channel="aeron:udp?term-length=64k",
                   ingress_endpoints=ingress_endpoints, egress_channel="aeron:udp?endpoint=127.0.0.1:0",
                   egress_listener=listener, **settings)


class RegisterClient(EgressListener):
    """A session with the cluster, named ``name`` in its commands (``add <name> <seq> <n>``)."""

    def __init__(self, name: str, aeron_dir: str, ingress_endpoints: str, **settings: Any) -> None:
        self.name = name
        self.answers: dict[int, str] = {}               # seq -> result
        self.new_leaders: list[tuple[int, int, int, str]] = []
        self.session_events: list[tuple[int, int, int, Any, str]] = []
        self.next_seq = 0
        self._last_send = time.monotonic()
        self.cluster = AeronCluster.connect(client_context(aeron_dir, ingress_endpoints, self, **settings))

    # -- EgressListener ----------------------------------------------------------------------------------------------
    def on_message(self, cluster_session_id: int, timestamp: int, buffer: Any, offset: int, length: int,
                   header: Any) -> None:
        """An answer: ``<verb> <client> <seq> <result>``."""
        _verb, client, seq, result = buffer.get_bytes(offset, length).decode("ascii").split()
        if client == self.name:
            self.answers[int(seq)] = result

    def on_new_leader(self, cluster_session_id: int, leadership_term_id: int, leader_member_id: int,
                      ingress_endpoints: str) -> None:
        """Kept in :attr:`new_leaders`."""
        self.new_leaders.append((cluster_session_id, leadership_term_id, leader_member_id, ingress_endpoints))

    def on_session_event(self, correlation_id: int, cluster_session_id: int, leadership_term_id: int,
                         leader_member_id: int, code: Any, detail: str) -> None:
        """Kept in :attr:`session_events`."""
        self.session_events.append((cluster_session_id, leadership_term_id, leader_member_id, code, detail))

    # -- sending and polling -----------------------------------------------------------------------------------------
    @property
    def session_id(self) -> int:
        return self.cluster.cluster_session_id

    def poll(self, keep_alive: bool = True) -> int:
        """Poll the egress, and send a keep-alive when nothing was sent for a while; the work done."""
        work = self.cluster.poll_egress()
        if keep_alive and not self.cluster.is_closed and time.monotonic() - self._last_send > KEEP_ALIVE_INTERVAL_S:
            try:
                if self.cluster.send_keep_alive():
                    self._last_send = time.monotonic()
            except ClusterError:
                pass                    # no ingress now (a leader change): the next poll tries again
        return work

    def try_send(self, verb: str, *args: Any) -> int | None:
        """One attempt to send command ``<verb> <name> <next seq> args``: its seq, or None when the offer was not
        accepted (back pressure, a leader change)."""
        seq = self.next_seq
        text = " ".join([verb, self.name, str(seq), *map(str, args)]).encode("ascii")
        if self.cluster.offer(text) > 0:
            self.next_seq += 1
            self._last_send = time.monotonic()
            return seq
        return None

    def send(self, verb: str, *args: Any, timeout: float = 60.0) -> int:
        """Send a command, polling meanwhile until the offer is accepted; its seq."""
        deadline = time.monotonic() + timeout
        while True:
            seq = self.try_send(verb, *args)
            if seq is not None:
                return seq
            self._check(deadline, f"sending {verb}")
            if not self.poll():
                time.sleep(0.001)

    def wait(self, predicate: Any, timeout: float = 60.0, what: str = "condition") -> Any:
        """Poll (keeping the session alive) until ``predicate()`` is true; returns its value."""
        deadline = time.monotonic() + timeout
        while True:
            result = predicate()
            if result:
                return result
            self._check(deadline, what)
            if not self.poll():
                time.sleep(0.001)

    def run_while(self, action: Callable[[], T], timeout: float = 120.0, what: str = "an action") -> T:
        """``action()`` on a thread of its own while this client polls and keeps its session alive (the session
        would time out while the test waits on something else: a member starting, a tool, the members' states);
        its result, or the exception it raised."""
        outcome: list[Any] = []

        def run() -> None:
            try:
                outcome.append((True, action()))
            except BaseException as exc:    # noqa: BLE001 - given back to the caller below
                outcome.append((False, exc))

        thread = threading.Thread(target=run, name=f"{self.name}-run-while", daemon=True)
        thread.start()
        self.wait(lambda: outcome, timeout, what)
        ok, value = outcome[0]
        if not ok:
            raise value
        return value  # type: ignore[no-any-return]

    def answer(self, seq: int, timeout: float = 60.0) -> str:
        """Wait for the answer to command ``seq``."""
        return str(self.wait(lambda: self.answers.get(seq), timeout, f"the answer to {self.name}:{seq}"))

    def call(self, verb: str, *args: Any, timeout: float = 60.0) -> str:
        """Send a command and wait for its answer."""
        return self.answer(self.send(verb, *args, timeout=timeout), timeout)

    def add_many(self, count: int, timeout: float = 60.0) -> list[int]:
        """Send ``count`` adds one after another, each once the previous was answered; their seqs."""
        return [self._add_and_wait(timeout) for _ in range(count)]

    def _add_and_wait(self, timeout: float) -> int:
        seq = self.next_seq
        self.call("add", add_value(seq), timeout=timeout)
        return seq

    def _check(self, deadline: float, what: str) -> None:
        if self.cluster.is_closed:
            raise AssertionError(f"client {self.name} closed while {what}: {self.cluster.close_error!r}")
        if time.monotonic() > deadline:
            raise AssertionError(f"client {self.name}: {what} timed out ({self.cluster!r})")

    def close(self) -> None:
        """Close the session (idempotent)."""
        self.cluster.close()
