# SPDX-License-Identifier: Apache-2.0
"""A deterministic clustered service for the system tests: a register of numbers that clients add to, with timers,
whose whole state the tests read back from every member.

Commands are ASCII, one per message, ``<verb> <client> <seq> [args]``; the service answers each on the session's
egress with its result, ``<verb> <client> <seq> <result>``:

- ``add <client> <seq> <n>``: the total grows by ``n``; the answer is the new total.
- ``timer <client> <seq> <correlation id> <delay ms>``: schedules a timer at the command's cluster time plus the
  delay; the answer is the deadline. When it fires, ``fired`` gets ``[correlation id, leadership term id]``.
- ``close <client> <seq>``: the service closes the session (SERVICE_ACTION); no answer.

Everything that changes the state comes from the log, so every member computes the same :attr:`state`: the total,
``applied`` (each ``client:seq`` added, in log order: a command applied twice shows twice), the sessions opened
and closed (with the close reason, and the leadership term it happened in), the timers fired and the leadership
terms seen. After each change the state is
written to ``register-service-<service id>.json`` in the directory named by the environment variable
``REGISTER_SERVICE_DIR`` (the cluster directory when unset), replaced whole so a reader never sees half of it.
A snapshot holds the state as JSON in chunks, which ``on_start`` loads back. What is not state (the member's roles,
whether the member was leading when a timer fired) goes to the same file under ``local``.
"""
from __future__ import annotations

import json
import os
from typing import Any

from aeron.cluster.service.clustered_service import ClusteredService

STATE_DIR_ENV = "REGISTER_SERVICE_DIR"
CHUNK = 1000                   # snapshot chunks stay below one MTU: no fragment assembly when loading
REPLY_ATTEMPTS = 2000          # back pressure is waited out this many idles; a client gone for good is given up


def state_file(directory: str, service_id: int = 0) -> str:
    """Where the service of ``service_id`` writes its state in ``directory``."""
    return os.path.join(directory, f"register-service-{service_id}.json")


def empty_state() -> dict[str, Any]:
    """The state before anything happened."""
    return {"total": 0, "applied": [], "opened": [], "closed": {}, "closed_in_term": {}, "fired": [], "terms": []}


class RegisterService(ClusteredService):
    """The register (see the module docstring)."""

    def __init__(self) -> None:
        self.cluster: Any = None
        self.state = empty_state()
        self.local: dict[str, Any] = {"roles": [], "fired_as_leader": [], "loaded_snapshot": False, "starts": 0}
        self.path = ""
        self.leadership_term_id = -1

    # -- lifecycle -----------------------------------------------------------------------------------------------
    def on_start(self, cluster: Any, snapshot_image: Any) -> None:
        """Keep the cluster; load the snapshot's state when there is one."""
        self.cluster = cluster
        ctx = cluster.context
        directory = os.environ.get(STATE_DIR_ENV) or str(ctx.cluster_dir)
        self.path = state_file(directory, ctx.service_id)
        self.local["starts"] = self._previous_starts() + 1
        if snapshot_image is not None:
            self._load_snapshot(snapshot_image)
            self.local["loaded_snapshot"] = True
            self.leadership_term_id = self.state["terms"][-1] if self.state["terms"] else -1
        self._save()

    def _previous_starts(self) -> int:
        try:
            with open(self.path, encoding="utf-8") as f:
                return int(json.load(f)["local"]["starts"])
        except (OSError, ValueError, KeyError):
            return 0

    def _load_snapshot(self, image: Any) -> None:
        chunks: list[str] = []
        expected: list[int] = []

        def on_fragment(buffer: Any, offset: int, length: int, header: Any) -> None:
            text = buffer.get_bytes(offset, length).decode("ascii")
            if not expected:
                expected.append(int(text))
            else:
                chunks.append(text)

        while not expected or len(chunks) < expected[0]:
            if image.is_end_of_stream or image.is_closed:
                raise RuntimeError(f"snapshot ended after {len(chunks)} of {expected} chunks")
            self.cluster.idle_strategy.idle(image.poll(on_fragment, 10))
        self.state = json.loads("".join(chunks))

    def on_take_snapshot(self, snapshot_publication: Any) -> None:
        """The state as JSON: the number of chunks, then the chunks."""
        text = json.dumps(self.state, sort_keys=True)
        chunks = [text[i:i + CHUNK] for i in range(0, len(text), CHUNK)] or [""]
        for message in [str(len(chunks)), *chunks]:
            data = message.encode("ascii")
            while snapshot_publication.offer(data) < 0:
                self.cluster.idle_strategy.idle()

    def on_role_change(self, new_role: Any) -> None:
        """Noted under ``local``."""
        self.local["roles"].append(new_role.name)
        self._save()

    def on_terminate(self, cluster: Any) -> None:
        """Nothing to release."""

    # -- log events ----------------------------------------------------------------------------------------------
    def on_session_open(self, session: Any, timestamp: int) -> None:
        """Noted in ``opened``."""
        self.state["opened"].append(session.id)
        self._save()

    def on_session_close(self, session: Any, timestamp: int, close_reason: Any) -> None:
        """Noted in ``closed`` with the reason's name."""
        self.state["closed"][str(session.id)] = close_reason.name
        self.state["closed_in_term"][str(session.id)] = self.leadership_term_id
        self._save()

    def on_new_leadership_term_event(self, leadership_term_id: int, log_position: int, timestamp: int,
                                     term_base_log_position: int, leader_member_id: int, log_session_id: int,
                                     time_unit: Any, app_version: int) -> None:
        """Noted in ``terms``; timers that fire later are tagged with it."""
        self.leadership_term_id = leadership_term_id
        self.state["terms"].append(leadership_term_id)
        self._save()

    def on_session_message(self, session: Any, timestamp: int, buffer: Any, offset: int, length: int,
                           header: Any) -> None:
        """Apply a command and answer it."""
        verb, client, seq, *args = buffer.get_bytes(offset, length).decode("ascii").split()
        if verb == "add":
            self.state["total"] += int(args[0])
            self.state["applied"].append(f"{client}:{seq}")
            result = str(self.state["total"])
        elif verb == "timer":
            deadline = timestamp + int(args[1])
            while not self.cluster.schedule_timer(int(args[0]), deadline):
                self.cluster.idle_strategy.idle()
            result = str(deadline)
        elif verb == "close":
            session.close()
            return
        else:
            result = "unknown"
        self._save()
        if session is not None:
            self._reply(session, f"{verb} {client} {seq} {result}".encode("ascii"))

    def on_timer_event(self, correlation_id: int, timestamp: int) -> None:
        """Noted in ``fired`` with the leadership term it fired in."""
        self.state["fired"].append([correlation_id, self.leadership_term_id])
        if self.cluster.role.name == "LEADER":
            self.local["fired_as_leader"].append(correlation_id)
        self._save()

    # -- helpers -------------------------------------------------------------------------------------------------
    def _reply(self, session: Any, data: bytes) -> None:
        idle = self.cluster.idle_strategy
        idle.reset()
        for _ in range(REPLY_ATTEMPTS):
            if session.offer(data) > 0:
                return
            idle.idle()

    def _save(self) -> None:
        if not self.path:
            return
        temp = self.path + ".tmp"
        with open(temp, "w", encoding="utf-8") as f:
            json.dump({"state": self.state, "local": self.local, "log_position": self.cluster.log_position}, f,
                      sort_keys=True)
        os.replace(temp, self.path)


class FailingService(RegisterService):
    """A service that cannot start: ``on_start`` raises (the container, and its member, end)."""

    def on_start(self, cluster: Any, snapshot_image: Any) -> None:
        """Raise."""
        raise RuntimeError("FailingService does not start")
