# SPDX-License-Identifier: Apache-2.0
"""Sender: the agent that sends network publications and reads their control frames (aeron_driver_sender.c).

The conductor hands it publications and endpoints through ``commands`` (a deque: appends and pops are atomic),
so the two never share a data structure while it is being changed.
"""
from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Any

from aeron._core import counters as ctr
from aeron.common.agent import Agent

CONTROL_POLL_RATIO = 6                 # poll control frames every 6th cycle, and whenever nothing was sent
CONTROL_POLL_INTERVAL_NS = 100_000_000
CYCLE_THRESHOLD_NS = 100_000_000


class Sender(Agent):
    role_name = "sender"

    def __init__(self, nano_clock: Callable[[], int], system: dict[int, Any]) -> None:
        self.commands: collections.deque[Callable[[Sender], None]] = collections.deque()
        self.publications: list[Any] = []
        self.endpoints: list[Any] = []
        self._nano_clock = nano_clock
        self._system = system
        self._round_robin = 0
        self._cycles = 0
        self._last_control_poll_ns = 0

    # conductor → sender (executed on the sender thread)
    def add_publication(self, publication: Any) -> None:
        self.publications.append(publication)

    def remove_publication(self, publication: Any) -> None:
        if publication in self.publications:
            self.publications.remove(publication)
        publication.sender_released = True

    def add_endpoint(self, endpoint: Any) -> None:
        self.endpoints.append(endpoint)

    def remove_endpoint(self, endpoint: Any) -> None:
        if endpoint in self.endpoints:
            self.endpoints.remove(endpoint)
        endpoint.sender_released = True

    def do_work(self) -> int:
        start = self._nano_clock()
        work = 0
        commands = self.commands
        while commands:
            commands.popleft()(self)
            work += 1
        sent = 0
        publications = self.publications
        count = len(publications)
        if count:
            start_index = self._round_robin = (self._round_robin + 1) % count
            for i in range(count):
                sent += publications[(start_index + i) % count].send(start)
        self._cycles += 1
        if sent == 0 or self._cycles % CONTROL_POLL_RATIO == 0 or \
                start - self._last_control_poll_ns > CONTROL_POLL_INTERVAL_NS:
            for endpoint in self.endpoints:
                work += endpoint.poll_control(start)
                endpoint.check_destinations(start)
            self._last_control_poll_ns = start
        cycle = self._nano_clock() - start
        self._system[ctr.SENDER_MAX_CYCLE_TIME].propose_max_ordered(cycle)
        if cycle > CYCLE_THRESHOLD_NS:
            self._system[ctr.SENDER_CYCLE_TIME_THRESHOLD_EXCEEDED].increment_ordered()
        return work + (1 if sent else 0)
