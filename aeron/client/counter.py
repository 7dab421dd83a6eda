# SPDX-License-Identifier: Apache-2.0
"""Counter: a counter the driver allocated for this client (ADD_COUNTER), updated in place in cnc.dat."""
from __future__ import annotations

from typing import TYPE_CHECKING

from aeron._core.counters import AtomicCounter
from aeron.common.errors import IllegalStateError

if TYPE_CHECKING:
    from aeron._core.atomic_buffer import AtomicBuffer
    from aeron.client.client_conductor import ClientConductor


class Counter:
    """The value operations are the compiled AtomicCounter's; closing tells the driver to free the counter.
    After close (by the user, the driver or the client) every value operation raises IllegalStateError."""

    __slots__ = ("_conductor", "_counter", "registration_id", "counter_id", "_closed", "__weakref__")

    def __init__(self, conductor: ClientConductor, values: AtomicBuffer, registration_id: int,
                 counter_id: int) -> None:
        self._conductor = conductor
        self._counter = AtomicCounter(values, counter_id)
        self.registration_id = registration_id
        self.counter_id = counter_id
        self._closed = False

    def get(self) -> int:
        return self._counter.get()

    def get_volatile(self) -> int:
        return self._counter.get_volatile()

    def set(self, value: int) -> None:
        self._counter.set(value)

    def set_ordered(self, value: int) -> None:
        self._counter.set_ordered(value)

    def increment(self) -> int:
        return self._counter.increment()

    def increment_ordered(self) -> int:
        return self._counter.increment_ordered()

    def get_and_add(self, delta: int) -> int:
        return self._counter.get_and_add(delta)

    def propose_max_ordered(self, proposed: int) -> bool:
        return self._counter.propose_max_ordered(proposed)

    @property
    def label(self) -> str:
        if self._closed:
            raise IllegalStateError("counter is closed")
        return self._conductor.counters_reader.get_counter_label(self.counter_id)

    @property
    def is_closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Free the counter in the driver. Idempotent."""
        self._conductor.release_counter(self)

    def _internal_close(self) -> None:
        self._closed = True
        self._counter.close()

    def __enter__(self) -> Counter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Counter id={self.counter_id} reg={self.registration_id} {'closed' if self._closed else 'open'}>"
