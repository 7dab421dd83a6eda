# SPDX-License-Identifier: Apache-2.0
"""Our ClusteredService twin of tests/interop/cluster_java/ClusterTestService.java: the same replies to the same
messages, the same snapshot (the message count as one little-endian int64) and the same stdout lines, so a member
running this one (``python -m aeron.cluster.service
aeron.cluster.service.class.name=tests.interop.cluster_test_service:ClusterTestService``) and a member running
Java's hold the same state in one cluster, and a test reads either's output the same way.

    "timer:<id>:<delayMs>"  schedule timer <id>; when it fires every session gets "timer-fired:<id>"
    "svc:<text>"            Cluster.offer(<text>); when the log delivers it every session gets "svc-msg:<text>"
    "count?"                the session gets "count=<messages seen>"
    "close-me"              the service closes the session
    anything else           echoed (as the two above, counted)
"""
from __future__ import annotations

import struct
import time
from typing import Any

from aeron.cluster.service.clustered_service import ClusteredService

COUNT = struct.Struct("<q")


def say(line: str) -> None:
    print(line, flush=True)


class ClusterTestService(ClusteredService):
    """See the module docstring."""

    def __init__(self) -> None:
        self.cluster: Any = None
        self.message_count = 0

    def on_start(self, cluster: Any, snapshot_image: Any) -> None:
        self.cluster = cluster
        if snapshot_image is not None:
            loaded: list[int] = []

            def on_fragment(buffer: Any, offset: int, length: int, header: Any) -> None:
                loaded.append(COUNT.unpack(buffer.get_bytes(offset, 8))[0])

            while not loaded:
                if snapshot_image.poll(on_fragment, 1) == 0:
                    if snapshot_image.is_end_of_stream or snapshot_image.is_closed:
                        break
                    cluster.idle_strategy.idle()
            self.message_count = max(0, loaded[0]) if loaded else 0
        say(f"SERVICE_START count={self.message_count}")

    def on_session_open(self, session: Any, timestamp: int) -> None:
        say(f"SERVICE_SESSION_OPEN {session.id}")

    def on_session_close(self, session: Any, timestamp: int, close_reason: Any) -> None:
        say(f"SERVICE_SESSION_CLOSE {session.id} {close_reason.name}")

    def on_session_message(self, session: Any, timestamp: int, buffer: Any, offset: int, length: int,
                           header: Any) -> None:
        data = buffer.get_bytes(offset, length)
        text = data.decode()
        if session is None:
            self.broadcast("svc-msg:" + text)
            return
        if text.startswith("timer:"):
            _, correlation_id, delay = text.split(":")
            self.cluster.schedule_timer(int(correlation_id), timestamp + int(delay))
        elif text.startswith("svc:"):
            while self.cluster.offer(text[4:].encode()) < 0:
                self.cluster.idle_strategy.idle()
        elif text == "count?":
            self.reply(session, f"count={self.message_count}")
            return
        elif text == "close-me":
            self.cluster.close_client_session(session.id)
            return
        self.message_count += 1
        self.echo(session, data)

    def on_timer_event(self, correlation_id: int, timestamp: int) -> None:
        say(f"SERVICE_TIMER {correlation_id}")
        self.broadcast(f"timer-fired:{correlation_id}")

    def on_take_snapshot(self, snapshot_publication: Any) -> None:
        data = COUNT.pack(self.message_count)
        while snapshot_publication.offer(data) < 0:
            self.cluster.idle_strategy.idle()
        say(f"SERVICE_SNAPSHOT count={self.message_count}")

    def on_role_change(self, new_role: Any) -> None:
        say(f"SERVICE_ROLE {new_role.name}")

    def on_terminate(self, cluster: Any) -> None:
        say("SERVICE_TERMINATE")

    def echo(self, session: Any, data: bytes) -> None:
        """Offer ``data`` to ``session`` for up to a second (a follower's session takes it at once)."""
        deadline = time.monotonic() + 1.0
        while session.offer(data) < 0 and time.monotonic() < deadline:
            self.cluster.idle_strategy.idle()

    def reply(self, session: Any, text: str) -> None:
        self.echo(session, text.encode())

    def broadcast(self, text: str) -> None:
        for session in self.cluster.client_sessions:
            self.reply(session, text)
