# SPDX-License-Identifier: Apache-2.0
"""DriverCounters: allocates the counters the driver keeps per stream and per channel, with Aeron's labels, keys
and type ids (io.aeron.driver.status: PublisherPos, PublisherLimit, SenderPos, ReceiverHwm, SubscriberPos,
SendChannelStatus, LocalSocketAddressStatus, ...; C: aeron_position.c), and hands each back as an AtomicCounter
that its resource holds as a typed field."""
from __future__ import annotations

from aeron._core import counters as ctr
from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.counters import AtomicCounter, CountersManager


class DriverCounters:
    __slots__ = ("manager", "values")

    def __init__(self, manager: CountersManager, values: AtomicBuffer) -> None:
        self.manager = manager
        self.values = values

    def stream_counter(self, name: str, type_id: int, registration_id: int, session_id: int, stream_id: int,
                       channel: str, *, owner_id: int, reference_id: int = 0, suffix: str = "") -> AtomicCounter:
        """A stream counter (``pub-pos``, ``snd-lmt``, ``rcv-hwm``, ``sub-pos``, ...): label
        ``name: registration session stream channel suffix``, key (registration, session, stream, channel)."""
        counter_id = self.manager.allocate(
            ctr.stream_counter_label(name, registration_id, session_id, stream_id, channel, suffix), type_id,
            ctr.stream_counter_key_encode(registration_id, session_id, stream_id, channel),
            registration_id=registration_id, owner_id=owner_id, reference_id=reference_id)
        return AtomicCounter(self.values, counter_id)

    def stream_counters(self, names: tuple[tuple[str, int], ...], registration_id: int, session_id: int,
                        stream_id: int, channel: str, *, owner_id: int) -> list[AtomicCounter]:
        """Several stream counters of one resource, in order; none stays allocated if one cannot be."""
        allocated: list[AtomicCounter] = []
        try:
            for name, type_id in names:
                allocated.append(self.stream_counter(name, type_id, registration_id, session_id, stream_id,
                                                     channel, owner_id=owner_id))
        except BaseException:
            for counter in allocated:
                self.free(counter)
            raise
        return allocated

    def subscriber_position(self, subscription_registration_id: int, subscriber_client_id: int, channel: str,
                            session_id: int, stream_id: int, resource_id: int, join_position: int) -> AtomicCounter:
        """A subscriber's ``sub-pos`` on a publication or image (referencing it), set to ``join_position``."""
        position = self.stream_counter(
            "sub-pos", ctr.DRIVER_SUBSCRIBER_POSITION_TYPE_ID, subscription_registration_id, session_id, stream_id,
            channel, owner_id=subscriber_client_id, reference_id=resource_id, suffix=f" @{join_position}")
        position.set_ordered(join_position)
        return position

    def free(self, counter: AtomicCounter) -> None:
        """Release the handle and give the counter back (reusable after the free-to-reuse timeout)."""
        counter_id = counter.counter_id
        counter.close()
        self.manager.free(counter_id)
