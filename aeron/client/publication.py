# SPDX-License-Identifier: Apache-2.0
"""Publication and ExclusivePublication: the compiled appenders plus the client-side identity and lifecycle.

The offer/claim paths, ``try_claim`` in both forms included, are the Cython appenders' own methods (no Python
frame per message); what is here is cold: identity, close and channel status.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from aeron._core import term_appender as _ta
from aeron._core.counters import CHANNEL_ENDPOINT_STATUS_ACTIVE, CHANNEL_ENDPOINT_STATUS_ERRORED
from aeron._core.term_appender import ConcurrentTermAppender, ExclusiveTermAppender
from aeron.client import local_socket_address_status

if TYPE_CHECKING:
    from aeron.client.client_conductor import ClientConductor

NULL_COUNTER_ID = -1
_Publication = TypeVar("_Publication", bound="_PublicationMixin")


class _PublicationMixin:
    """Shared cold half of both publication kinds (the appender base supplies the hot half)."""

    __slots__ = ()
    NOT_CONNECTED = _ta.NOT_CONNECTED
    BACK_PRESSURED = _ta.BACK_PRESSURED
    ADMIN_ACTION = _ta.ADMIN_ACTION
    CLOSED = _ta.CLOSED
    MAX_POSITION_EXCEEDED = _ta.MAX_POSITION_EXCEEDED

    _conductor: ClientConductor
    channel: str
    registration_id: int
    original_registration_id: int
    channel_status_id: int
    log_file_name: str

    def _init_identity(self, conductor: ClientConductor, channel: str, registration_id: int,
                       original_registration_id: int, channel_status_id: int, position_limit_id: int,
                       log_file_name: str) -> None:
        self._conductor = conductor
        self.channel = channel
        self.registration_id = registration_id
        self.original_registration_id = original_registration_id
        self.channel_status_id = channel_status_id
        self.position_limit_id = position_limit_id
        self.log_file_name = log_file_name

    @property
    def channel_status(self) -> int:
        """The send channel's status counter (ACTIVE, ERRORED, ...); IPC has none and is ACTIVE while open."""
        if self.is_closed:      # type: ignore[attr-defined]
            return CHANNEL_ENDPOINT_STATUS_ERRORED
        if self.channel_status_id == NULL_COUNTER_ID:
            return CHANNEL_ENDPOINT_STATUS_ACTIVE
        return self._conductor.counter_value(self.channel_status_id)

    def local_socket_addresses(self) -> list[str]:
        """The addresses (``host:port``) the driver bound this publication's send channel to (the send socket;
        a ``control=host:0`` wildcard shows its port here); empty for IPC or unless the channel is ACTIVE."""
        return local_socket_address_status.find_addresses(
            self._conductor.counters_reader, self.channel_status, self.channel_status_id)

    if TYPE_CHECKING:       # supplied by each concrete class, bound to its appender
        def _internal_close(self) -> None: ...

    def add_destination(self, endpoint_channel: str) -> int:
        """Add a destination (``aeron:udp?endpoint=host:port``) to a ``control-mode=manual`` publication. Returns
        its registration id, for :meth:`remove_destination`."""
        return self._conductor.destination(self, endpoint_channel, add=True)

    def remove_destination(self, endpoint_channel: str | int) -> None:
        """Stop sending to a destination added with :meth:`add_destination`: named by its channel, or by its
        registration id (REMOVE_DESTINATION_BY_ID)."""
        if isinstance(endpoint_channel, int) and not isinstance(endpoint_channel, bool):
            self._conductor.remove_destination_by_id(self, endpoint_channel)
        else:
            self._conductor.destination(self, endpoint_channel, add=False)

    def async_add_destination(self, endpoint_channel: str) -> int:
        """:meth:`add_destination` without waiting: returns the command's correlation id, active in
        ``Aeron.is_command_active`` until the driver answers; a refusal goes to the error handler."""
        return self._conductor.async_destination(self, endpoint_channel, add=True, receive=False)

    def async_remove_destination(self, endpoint_channel: str | int) -> int:
        """:meth:`remove_destination` without waiting (see :meth:`async_add_destination`); by channel or by the
        destination's registration id."""
        if isinstance(endpoint_channel, int) and not isinstance(endpoint_channel, bool):
            return self._conductor.remove_destination_by_id(self, endpoint_channel, wait=False)
        return self._conductor.async_destination(self, endpoint_channel, add=False, receive=False)

    def close(self) -> None:
        """Stop offering and tell the driver. Idempotent; later offers return CLOSED."""
        self._conductor.release_publication(self)

    def __enter__(self: _Publication) -> _Publication:
        """Return the publication; the ``with`` block closes it."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the publication."""
        self.close()

    def __repr__(self) -> str:
        """Channel, stream, session, registration id and state."""
        state = "closed" if self.is_closed else "open"      # type: ignore[attr-defined]
        return (f"<{type(self).__name__} {self.channel!r} stream={self.stream_id} "   # type: ignore[attr-defined]
                f"session={self.session_id} reg={self.registration_id} {state}>")     # type: ignore[attr-defined]


class Publication(_PublicationMixin, ConcurrentTermAppender):
    """A concurrent publication: any thread may offer; the driver may share its log with other adders.

    ``offer(buffer, offset=0, length=-1, reserved_value_supplier=None)`` takes any buffer-protocol object
    without copying it first and returns the new stream position (> 0) or NOT_CONNECTED, BACK_PRESSURED,
    ADMIN_ACTION, CLOSED or MAX_POSITION_EXCEEDED. ``offerv(buffers)`` gathers several buffers into one message.
    ``try_claim(length, claim=None)`` claims a frame to write in place: the position with a caller's claim,
    the publication's own reusable claim (status in ``claim.position``) without one.
    """

    __slots__ = ("_conductor", "channel", "registration_id", "original_registration_id", "channel_status_id",
                 "position_limit_id", "log_file_name")

    def _internal_close(self) -> None:
        ConcurrentTermAppender.close(self)


class ExclusivePublication(_PublicationMixin, ExclusiveTermAppender):
    """A publication used by one thread at a time, never shared: a cheaper offer, plus ``offer_block`` and
    ``append_padding``; ``term_id``, ``term_offset`` expose where the next message goes."""

    __slots__ = ("_conductor", "channel", "registration_id", "original_registration_id", "channel_status_id",
                 "position_limit_id", "log_file_name")

    def _internal_close(self) -> None:
        ExclusiveTermAppender.close(self)
