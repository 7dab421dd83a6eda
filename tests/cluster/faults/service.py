# SPDX-License-Identifier: Apache-2.0
"""The fault campaign's clustered service: keys of lists, counters and registers (the model of ``history.py``), each
command answered with its result, and every command it applies written to this member's applied file with its log
position, so that the harness can compare what each member applied.

A command is a JSON object ``{"i": id, "o": op, "k": key, "v": value}``; the answer ``{"i": id, "r": result}`` goes
to the session that sent it (on the leader; a follower's ``ClientSession.offer`` sends nothing). ``{"o": "dump"}``
answers nothing and writes the whole state to the applied file. The applied file (``FAULTS_APPLIED_FILE``) gets one
JSON line per event: ``{"pos": ..., "cmd": ..., "r": ...}`` per command, ``{"term": ..., "leader": ..., "pos": ...}``
per new leadership term, ``{"start": snapshot?}`` when the service starts, ``{"dump": state, "pos": ...}``.
A restarted member applies again what followed its snapshot: the same position must then give the same line.

``FAULTS_SERVICE_FLAW=1`` plants a bug, the same on every member, for the test that shows the checks catch one.

The state is the snapshot: one message per key (a list in chunks of ``CHUNK`` elements), then an end marker.
"""
from __future__ import annotations

import json
import os
from typing import Any

from aeron.client import ImageFragmentAssembler
from aeron.cluster.service.clustered_service import ClusteredService
from tests.cluster.faults.history import ModelError, apply, initial_state, payload

CHUNK = 256
FLAW_EVERY = 7          # with FAULTS_SERVICE_FLAW=1, every 7th append is answered but not kept (the checks' own test)
SEND_ATTEMPTS = 100


def encode(value: Any) -> bytes:
    """The JSON bytes of a command, an answer or a snapshot message."""
    return json.dumps(value, separators=(",", ":")).encode()


def decode_tuples(value: Any) -> Any:
    """JSON lists back into the model's tuples."""
    if isinstance(value, list):
        return tuple(decode_tuples(v) for v in value)
    return value


class FaultsService(ClusteredService):
    """Applies the model's operations in log order and answers each."""

    def __init__(self) -> None:
        self.state: dict[str, Any] = {}
        self.cluster: Any = None
        self.flawed = os.environ.get("FAULTS_SERVICE_FLAW") == "1"
        path = os.environ.get("FAULTS_APPLIED_FILE")
        self._applied = open(path, "a", encoding="utf-8") if path else None       # noqa: SIM115 - kept open

    def _record(self, entry: dict[str, Any]) -> None:
        if self._applied is not None:
            self._applied.write(json.dumps(entry, separators=(",", ":")) + "\n")
            self._applied.flush()       # a kill -9 keeps what reached the page cache

    def on_start(self, cluster: Any, snapshot_image: Any) -> None:
        """Keep the cluster; load the snapshot when there is one."""
        self.cluster = cluster
        if snapshot_image is not None:
            self._load(snapshot_image)
        self._record({"start": snapshot_image is not None, "keys": len(self.state)})

    def _load(self, image: Any) -> None:
        done = False

        def on_fragment(buffer: Any, offset: int, length: int, header: Any) -> None:
            nonlocal done
            message = json.loads(payload(buffer, offset, length))
            if message.get("end"):
                done = True
                return
            key, part = message["k"], decode_tuples(message["s"])
            if key[:1] == "l":
                self.state[key] = self.state.get(key, ()) + part
            else:
                self.state[key] = part

        idle = self.cluster.idle_strategy
        assembler = ImageFragmentAssembler(on_fragment)     # a chunk of a list is longer than one frame
        while not done:
            if image.is_end_of_stream:
                raise ValueError("the faults service's snapshot ended before its end marker")
            idle.idle(image.poll(assembler.on_fragment, 10))

    def on_take_snapshot(self, snapshot_publication: Any) -> None:
        """Every key's state (lists in chunks), then the end marker."""
        messages = []
        for key, state in sorted(self.state.items()):
            if key[:1] == "l":
                messages += [{"k": key, "s": list(state[i:i + CHUNK])} for i in range(0, len(state), CHUNK)]
            else:
                messages.append({"k": key, "s": state})
        messages.append({"end": True})
        idle = self.cluster.idle_strategy
        for message in messages:
            data = encode(message)
            idle.reset()
            while snapshot_publication.offer(data, 0, len(data)) < 0:
                idle.idle()

    def on_session_message(self, session: Any, timestamp: int, buffer: Any, offset: int, length: int,
                           header: Any) -> None:
        """Apply a command, record it, answer it."""
        command = json.loads(payload(buffer, offset, length))
        name = command.get("o")
        if name == "dump":
            self._record({"dump": {k: list(v) if isinstance(v, tuple) else v for k, v in self.state.items()},
                          "pos": header.position})
            return
        key = command["k"]
        try:
            state = self.state.get(key, initial_state(key))
            self.state[key], result = apply(key, state, name, decode_tuples(command.get("v")))
            if self.flawed and name == "append" and len(self.state[key]) % FLAW_EVERY == 0:
                self.state[key] = state         # the planted bug: acknowledged, never kept
        except (ModelError, TypeError, ValueError) as ex:
            result = {"error": str(ex)}
        self._record({"pos": header.position, "cmd": command, "r": result})
        if session is not None:
            data = encode({"i": command.get("i"), "r": result})
            idle = self.cluster.idle_strategy
            idle.reset()
            for _ in range(SEND_ATTEMPTS):
                if session.offer(data, 0, len(data)) > 0:
                    break
                idle.idle()

    def on_new_leadership_term_event(self, leadership_term_id: int, log_position: int, timestamp: int,
                                     term_base_log_position: int, leader_member_id: int, log_session_id: int,
                                     time_unit: Any, app_version: int) -> None:
        """Record who leads which term (every member must agree)."""
        self._record({"term": leadership_term_id, "leader": leader_member_id, "pos": log_position})

    def on_session_open(self, session: Any, timestamp: int) -> None:
        """Nothing."""

    def on_session_close(self, session: Any, timestamp: int, close_reason: Any) -> None:
        """Nothing."""

    def on_timer_event(self, correlation_id: int, timestamp: int) -> None:
        """Nothing."""

    def on_role_change(self, new_role: Any) -> None:
        """Nothing."""

    def on_terminate(self, cluster: Any) -> None:
        """Close the applied file."""
        if self._applied is not None:
            self._applied.close()
            self._applied = None
