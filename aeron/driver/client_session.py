# SPDX-License-Identifier: Apache-2.0
"""ClientSession: a client as the driver knows it (port of aeron_client_t in aeron_driver_conductor.c,
AeronClient.java).

Created on the first command of an unknown client id (aeron_driver_conductor_get_or_add_client) with a
``client-heartbeat`` counter that the client's keepalives move; when the heartbeat is older than the liveness
timeout the client has reached its end of life and the conductor releases everything it holds: its publications,
subscriptions and counters.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aeron._core.counters import AtomicCounter

if TYPE_CHECKING:
    from aeron.driver.driver_conductor import DriverConductor
    from aeron.driver.subscription_link import SubscriptionLink


class ClientSession:
    __slots__ = ("client_id", "heartbeat", "liveness_timeout_ms", "closed_by_command", "reached_end_of_life",
                 "publication_links", "subscriptions", "counters", "_client_timeouts")

    def __init__(self, client_id: int, heartbeat: AtomicCounter, liveness_timeout_ms: int,
                 client_timeouts: AtomicCounter, now_ms: int) -> None:
        self.client_id = client_id
        self.heartbeat = heartbeat                      # client-heartbeat: epoch ms of the last keepalive
        self.liveness_timeout_ms = liveness_timeout_ms
        self.closed_by_command = False
        self.reached_end_of_life = False
        # one entry per ADD_*PUBLICATION, keyed by that command's correlation id: a shared publication is
        # removed by the id its adder got (C aeron_publication_link_t), not only by its original id
        self.publication_links: dict[int, Any] = {}
        self.subscriptions: dict[int, SubscriptionLink] = {}   # by registration id
        self.counters: dict[int, int] = {}                      # ADD_COUNTER registration id -> counter id
        self._client_timeouts = client_timeouts                 # system counter "Client liveness timeouts"
        heartbeat.set_ordered(now_ms)

    @property
    def heartbeat_counter_id(self) -> int:
        return self.heartbeat.counter_id

    def on_keepalive(self, now_ms: int) -> None:
        self.heartbeat.set_ordered(now_ms)

    def on_close_by_command(self) -> None:
        """CLIENT_CLOSE: expire at the next check without ON_CLIENT_TIMEOUT (aeron_driver_conductor_on_client_close)."""
        self.closed_by_command = True
        self.heartbeat.set_ordered(0)

    def on_time_event(self, now_ns: int, now_ms: int, conductor: DriverConductor) -> int:
        """Port of aeron_client_on_time_event: a stale heartbeat ends the client (told unless it said goodbye)."""
        if self.reached_end_of_life or now_ms <= self.heartbeat.get_volatile() + self.liveness_timeout_ms:
            return 0
        self.reached_end_of_life = True
        if not self.closed_by_command:
            conductor.client_proxy.on_client_timeout(self.client_id)
            self._client_timeouts.increment_ordered()
        return 1

    def has_reached_end_of_life(self) -> bool:
        return self.reached_end_of_life
