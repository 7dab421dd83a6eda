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
        """Made by the client conductor when the driver allocated the counter: use ``Aeron.add_counter``."""
        self._conductor = conductor
        self._counter = AtomicCounter(values, counter_id)
        self.registration_id = registration_id
        self.counter_id = counter_id
        self._closed = False

    def get(self) -> int:
        """The value (plain read)."""
        return self._counter.get()

    def get_volatile(self) -> int:
        """The value, read with acquire semantics (sees other threads' ordered writes)."""
        return self._counter.get_volatile()

    def set(self, value: int) -> None:
        """Set the value (plain write)."""
        self._counter.set(value)

    def set_ordered(self, value: int) -> None:
        """Set the value with release semantics, for readers in other processes."""
        self._counter.set_ordered(value)

    def increment(self) -> int:
        """Add one atomically; returns the value before."""
        return self._counter.increment()

    def increment_ordered(self) -> int:
        """Add one with release semantics (single writer); returns the value before."""
        return self._counter.increment_ordered()

    def get_and_add(self, delta: int) -> int:
        """Add ``delta`` atomically; returns the value before."""
        return self._counter.get_and_add(delta)

    def propose_max_ordered(self, proposed: int) -> bool:
        """Set the value to ``proposed`` if that is larger (single writer); True when it was set."""
        return self._counter.propose_max_ordered(proposed)

    @property
    def label(self) -> str:
        """The counter's label as the driver stored it. Raises IllegalStateError once closed."""
        if self._closed:
            raise IllegalStateError("counter is closed")
        return self._conductor.counters_reader.get_counter_label(self.counter_id)

    @property
    def is_closed(self) -> bool:
        """True once closed by the user, the driver or the client."""
        return self._closed

    def close(self) -> None:
        """Free the counter in the driver. Idempotent."""
        self._conductor.release_counter(self)

    def _internal_close(self) -> None:
        self._closed = True
        self._counter.close()

    def __enter__(self) -> Counter:
        """Return the counter; the ``with`` block closes it."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the counter."""
        self.close()

    def __repr__(self) -> str:
        """Counter id, registration id and state."""
        return f"<Counter id={self.counter_id} reg={self.registration_id} {'closed' if self._closed else 'open'}>"
