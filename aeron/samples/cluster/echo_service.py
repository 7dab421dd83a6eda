# SPDX-License-Identifier: Apache-2.0
"""Port of Aeron's ``io.aeron.samples.cluster.EchoService``: each session message goes back to its client (three
attempts, idling between them with the cluster's idle strategy); no state, so nothing to snapshot."""
from __future__ import annotations

from typing import Any

from aeron.cluster.service.clustered_service import ClusteredService

SEND_ATTEMPTS = 3


class EchoService(ClusteredService):
    """Echoes every session message to its session."""

    def __init__(self) -> None:
        self.cluster: Any = None
        self.idle_strategy: Any = None

    def on_start(self, cluster: Any, snapshot_image: Any) -> None:
        """Keep the cluster and its idle strategy."""
        self.cluster = cluster
        self.idle_strategy = cluster.idle_strategy

    def on_session_open(self, session: Any, timestamp: int) -> None:
        """Nothing."""

    def on_session_close(self, session: Any, timestamp: int, close_reason: Any) -> None:
        """Nothing."""

    def on_session_message(self, session: Any, timestamp: int, buffer: Any, offset: int, length: int,
                           header: Any) -> None:
        """Offer the message back to its session, three attempts at most."""
        self.idle_strategy.reset()
        for _ in range(SEND_ATTEMPTS):
            if session.offer(buffer, offset, length) > 0:
                return
            self.idle_strategy.idle()

    def on_timer_event(self, correlation_id: int, timestamp: int) -> None:
        """Nothing."""

    def on_take_snapshot(self, snapshot_publication: Any) -> None:
        """Nothing to keep."""

    def on_role_change(self, new_role: Any) -> None:
        """Nothing."""

    def on_terminate(self, cluster: Any) -> None:
        """Nothing."""
