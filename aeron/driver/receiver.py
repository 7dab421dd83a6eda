# SPDX-License-Identifier: Apache-2.0
"""Receiver: the agent that reads receive channel endpoints into images and sends their status messages and
NAKs (aeron_driver_receiver.c). Deviation from Aeron: the image's rebuild tracking (loss scan, receiver position,
SM scheduling) also runs here rather than on the conductor, which saves a hand-off per cycle; the decisions are
the same."""
from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Any

from aeron._core import counters as ctr
from aeron.common.agent import Agent

CYCLE_THRESHOLD_NS = 100_000_000


class Receiver(Agent):
    role_name = "receiver"

    def __init__(self, nano_clock: Callable[[], int], system: dict[int, Any]) -> None:
        self.commands: collections.deque[Callable[[Receiver], None]] = collections.deque()
        self.endpoints: list[Any] = []
        self.images: list[Any] = []
        self._nano_clock = nano_clock
        self._system = system

    def add_endpoint(self, endpoint: Any) -> None:
        self.endpoints.append(endpoint)

    def remove_endpoint(self, endpoint: Any) -> None:
        if endpoint in self.endpoints:
            self.endpoints.remove(endpoint)
        endpoint.receiver_released = True

    def add_image(self, image: Any) -> None:
        self.images.append(image)
        image.endpoint.add_image(image)

    def remove_image(self, image: Any, now_ns: int, rejoin: bool) -> None:
        if image in self.images:
            self.images.remove(image)
        image.endpoint.remove_image(image, now_ns, rejoin)
        image.receiver_released = True

    def do_work(self) -> int:
        now = self._nano_clock()
        work = 0
        commands = self.commands
        while commands:
            commands.popleft()(self)
            work += 1
        for endpoint in self.endpoints:
            work += endpoint.poll(now)
            work += endpoint.elicit_setups(now)
        for image in self.images:
            work += image.track_rebuild(now)
            work += image.send_pending_status_message(now)
        cycle = self._nano_clock() - now
        self._system[ctr.RECEIVER_MAX_CYCLE_TIME].propose_max_ordered(cycle)
        if cycle > CYCLE_THRESHOLD_NS:
            self._system[ctr.RECEIVER_CYCLE_TIME_THRESHOLD_EXCEEDED].increment_ordered()
        return work
