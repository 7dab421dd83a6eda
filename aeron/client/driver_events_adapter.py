# SPDX-License-Identifier: Apache-2.0
"""DriverEventsAdapter: the driver's responses and events on the to-clients broadcast buffer of cnc.dat, decoded and
handed to the client conductor (Aeron's ``io.aeron.DriverEventsAdapter``; the decoding is aeron.common.command's).

Every client of a driver reads the same broadcast, so most messages are for another client: the conductor matches
their correlation ids against what it awaits and drops the rest. Cold path: one call per response.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aeron.common import command as cmd
from aeron.common.errors import MalformedMessageError

if TYPE_CHECKING:
    from aeron._core.atomic_buffer import AtomicBuffer
    from aeron._core.broadcast import CopyBroadcastReceiver
    from aeron.client.client_conductor import ClientConductor

__all__ = ["DriverEventsAdapter"]


class DriverEventsAdapter:
    """Reads ``receiver`` (positioned before the client's first command, so none of its answers is missed) and calls
    ``conductor``'s ``on_*`` method for each message; a malformed message goes to ``error_handler`` (one of an
    unknown type is skipped silently: a newer driver's)."""

    __slots__ = ("client_id", "_receiver", "_conductor", "_error_handler", "_handlers")

    def __init__(self, client_id: int, receiver: CopyBroadcastReceiver, conductor: ClientConductor,
                 error_handler: Callable[[BaseException], Any]) -> None:
        """Hand the messages of ``receiver`` to ``conductor`` (client ``client_id``'s)."""
        self.client_id = client_id
        self._receiver = receiver
        self._conductor = conductor
        self._error_handler = error_handler
        self._handlers: dict[int, Callable[[Any], None]] = {
            cmd.ON_ERROR: conductor.on_error,
            cmd.ON_PUBLICATION_READY: conductor.on_new_publication,
            cmd.ON_EXCLUSIVE_PUBLICATION_READY: conductor.on_new_publication,
            cmd.ON_SUBSCRIPTION_READY: conductor.on_new_subscription,
            cmd.ON_AVAILABLE_IMAGE: conductor.on_available_image,
            cmd.ON_UNAVAILABLE_IMAGE: conductor.on_unavailable_image,
            cmd.ON_COUNTER_READY: conductor.on_counter_ready,
            cmd.ON_UNAVAILABLE_COUNTER: conductor.on_unavailable_counter,
            cmd.ON_STATIC_COUNTER: conductor.on_static_counter,
            cmd.ON_OPERATION_SUCCESS: conductor.on_operation_success,
            cmd.ON_NEXT_AVAILABLE_SESSION_ID: conductor.on_next_available_session_id,
            cmd.ON_PUBLICATION_ERROR: conductor.on_publication_error,
        }

    def receive(self) -> int:
        """Handle the next message, if any: 1, else 0. Raises IllegalStateError when the broadcast lapped this
        reader (messages were lost; the reader goes on from the latest)."""
        return 1 if self._receiver.receive(self.on_message) else 0

    def close(self) -> None:
        """Let go of the broadcast buffer (the conductor unmaps it next) and of the conductor; nothing is received
        after."""
        self._receiver = None           # type: ignore[assignment]
        self._conductor = None          # type: ignore[assignment]
        self._error_handler = None      # type: ignore[assignment]
        self._handlers = {}

    def on_message(self, msg_type_id: int, buffer: AtomicBuffer, offset: int, length: int) -> None:
        """Decode one message and call the conductor's handler for its type."""
        try:
            message = cmd.decode_response(msg_type_id, buffer, offset, length)
        except MalformedMessageError as exc:
            if exc.error_code != exc.error_code.UNKNOWN_COMMAND_TYPE_ID:
                self._error_handler(exc)        # unknown types are ignorable (a newer driver), garbage is not
            return
        if msg_type_id == cmd.ON_CLIENT_TIMEOUT:
            # the driver broadcasts every client's timeout: only ours ends this client
            if message.client_id == self.client_id:
                self._conductor.on_client_timeout()
            return
        handler = self._handlers.get(msg_type_id)
        if handler is not None:
            handler(message)
