# SPDX-License-Identifier: Apache-2.0
"""DriverProxy: the client's commands to the media driver, encoded into the to-driver ring buffer of cnc.dat
(Aeron's ``io.aeron.DriverProxy``; the encoding is aeron.common.command's).

One method per command, named as upstream; each takes a fresh correlation id from the ring and returns it, so
that the conductor can match the driver's answer on the broadcast (aeron.client.driver_events_adapter). Cold path:
one call per command. Not thread-safe by itself: the client conductor's lock serialises its callers, as Aeron's
client lock does.
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from aeron.common import command as cmd
from aeron.common.agent import nano_time
from aeron.common.errors import DriverTimeoutError
from aeron.common.wakeup import CONDUCTOR

if TYPE_CHECKING:
    from aeron._core.ring_buffer import ManyToOneRingBuffer
    from aeron._core.wakeup import WakeupBoard

__all__ = ["DriverProxy"]


class DriverProxy:
    """Writes the commands of client ``client_id`` to the driver's ring ``to_driver``.

    Where Aeron fails a command at once when the ring is full, this one retries for ``driver_timeout_ns`` (a driver
    busy for a moment still takes it) and then raises DriverTimeoutError. With a ``wakeup_board`` (ours,
    docs/wakeup.md) each command signals the driver's conductor, so that a parked conductor of ours reads it now.
    """

    __slots__ = ("client_id", "_to_driver", "_driver_timeout_ns", "_wakeup_board")

    def __init__(self, to_driver: ManyToOneRingBuffer, client_id: int, driver_timeout_ns: int,
                 wakeup_board: WakeupBoard | None = None) -> None:
        """Write to ``to_driver`` for ``client_id``; see the class docstring for the timeout and the board."""
        self.client_id = client_id
        self._to_driver = to_driver
        self._driver_timeout_ns = driver_timeout_ns
        self._wakeup_board = wakeup_board

    def time_of_last_driver_keepalive_ms(self) -> int:
        """The driver's last heartbeat (epoch ms) on the ring; -1 once the driver has shut down."""
        return int(self._to_driver.consumer_heartbeat_time)

    def next_correlation_id(self) -> int:
        """A new id from the ring, unique among every client of the driver."""
        return int(self._to_driver.next_correlation_id())

    # -- publications and subscriptions -------------------------------------------------------------------

    def add_publication(self, channel: str, stream_id: int) -> int:
        """ADD_PUBLICATION (a concurrent publication); returns its correlation id."""
        return self._send(cmd.PublicationCommand(self.client_id, self.next_correlation_id(), stream_id, channel,
                                                 msg_type_id=cmd.ADD_PUBLICATION))

    def add_exclusive_publication(self, channel: str, stream_id: int) -> int:
        """ADD_EXCLUSIVE_PUBLICATION; returns its correlation id."""
        return self._send(cmd.PublicationCommand(self.client_id, self.next_correlation_id(), stream_id, channel,
                                                 msg_type_id=cmd.ADD_EXCLUSIVE_PUBLICATION))

    def remove_publication(self, registration_id: int) -> int:
        """REMOVE_PUBLICATION for the publication added with ``registration_id``; returns its correlation id."""
        return self._send(cmd.RemovePublicationCommand(self.client_id, self.next_correlation_id(), registration_id))

    def add_subscription(self, channel: str, stream_id: int) -> int:
        """ADD_SUBSCRIPTION; returns its correlation id."""
        return self._send(cmd.SubscriptionCommand(self.client_id, self.next_correlation_id(), -1, stream_id, channel))

    def remove_subscription(self, registration_id: int) -> int:
        """REMOVE_SUBSCRIPTION; returns its correlation id."""
        return self._remove(registration_id, cmd.REMOVE_SUBSCRIPTION)

    # -- destinations -----------------------------------------------------------------------------------------

    def add_destination(self, registration_id: int, endpoint_channel: str) -> int:
        """ADD_DESTINATION to the manual multi-destination-cast publication ``registration_id``."""
        return self._destination(registration_id, endpoint_channel, cmd.ADD_DESTINATION)

    def remove_destination(self, registration_id: int, endpoint_channel: str) -> int:
        """REMOVE_DESTINATION ``endpoint_channel`` from publication ``registration_id``."""
        return self._destination(registration_id, endpoint_channel, cmd.REMOVE_DESTINATION)

    def remove_destination_by_id(self, publication_registration_id: int, destination_registration_id: int) -> int:
        """REMOVE_DESTINATION_BY_ID: the destination its ADD_DESTINATION's correlation id names."""
        return self._send(cmd.DestinationByIdCommand(self.client_id, self.next_correlation_id(),
                                                     publication_registration_id, destination_registration_id))

    def add_rcv_destination(self, registration_id: int, endpoint_channel: str) -> int:
        """ADD_RCV_DESTINATION to the ``control-mode=manual`` subscription ``registration_id``."""
        return self._destination(registration_id, endpoint_channel, cmd.ADD_RCV_DESTINATION)

    def remove_rcv_destination(self, registration_id: int, endpoint_channel: str) -> int:
        """REMOVE_RCV_DESTINATION ``endpoint_channel`` from subscription ``registration_id``."""
        return self._destination(registration_id, endpoint_channel, cmd.REMOVE_RCV_DESTINATION)

    # -- counters, sessions, images, the client ----------------------------------------------------------------

    def add_counter(self, type_id: int, key: bytes, label: str) -> int:
        """ADD_COUNTER; returns its correlation id."""
        return self._send(cmd.CounterCommand(self.client_id, self.next_correlation_id(), type_id, key, label))

    def add_static_counter(self, type_id: int, key: bytes, label: str, registration_id: int) -> int:
        """ADD_STATIC_COUNTER: a counter found again by ``registration_id``; returns the command's correlation id."""
        return self._send(cmd.StaticCounterCommand(self.client_id, self.next_correlation_id(), registration_id,
                                                   type_id, key, label))

    def remove_counter(self, registration_id: int) -> int:
        """REMOVE_COUNTER; returns its correlation id."""
        return self._remove(registration_id, cmd.REMOVE_COUNTER)

    def next_available_session_id(self, stream_id: int) -> int:
        """GET_NEXT_AVAILABLE_SESSION_ID for ``stream_id``; returns its correlation id."""
        return self._send(cmd.NextSessionIdCommand(self.client_id, self.next_correlation_id(), stream_id))

    def reject_image(self, image_correlation_id: int, position: int, reason: str) -> int:
        """REJECT_IMAGE: the driver stops the image and tells its publisher ``reason``."""
        return self._send(cmd.RejectImageCommand(self.client_id, self.next_correlation_id(), image_correlation_id,
                                                 position, reason))

    def client_close(self) -> None:
        """CLIENT_CLOSE: the driver releases every resource of this client now rather than at its timeout."""
        self._send(cmd.CorrelatedCommand(self.client_id, -1, msg_type_id=cmd.CLIENT_CLOSE))

    # -- writing ----------------------------------------------------------------------------------------------

    def _remove(self, registration_id: int, msg_type_id: int) -> int:
        return self._send(cmd.RemoveCommand(self.client_id, self.next_correlation_id(), registration_id,
                                            msg_type_id=msg_type_id))

    def _destination(self, registration_id: int, endpoint_channel: str, msg_type_id: int) -> int:
        return self._send(cmd.DestinationCommand(self.client_id, self.next_correlation_id(), registration_id,
                                                 endpoint_channel, msg_type_id=msg_type_id))

    def _send(self, message: Any) -> int:
        """Write ``message`` to the ring; the ring full for the driver timeout is a driver timeout."""
        payload = message.encode()
        if not self._to_driver.write(message.msg_type_id, payload):
            deadline = nano_time() + self._driver_timeout_ns
            while not self._to_driver.write(message.msg_type_id, payload):
                if nano_time() > deadline:
                    raise DriverTimeoutError("could not write to the to-driver ring buffer: driver not consuming")
                time.sleep(0.001)
        if self._wakeup_board is not None:
            self._wakeup_board.signal(CONDUCTOR)         # a parked conductor of ours reads it now
        return int(message.correlation_id)

    def __repr__(self) -> str:
        """The client id."""
        return f"DriverProxy(client_id={self.client_id})"
