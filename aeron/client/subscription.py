# SPDX-License-Identifier: Apache-2.0
"""Subscription: the images of one channel and stream, polled in turn (Aeron ``Subscription``)."""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from aeron._core.counters import CHANNEL_ENDPOINT_STATUS_ACTIVE, CHANNEL_ENDPOINT_STATUS_ERRORED
from aeron._core.term_reader import TermReader
from aeron.client import local_socket_address_status
from aeron.common.channel_uri import CONTROL_MODE_MANUAL, ENDPOINT_PARAM_NAME, MDC_CONTROL_MODE_PARAM_NAME, ChannelUri
from aeron.common.errors import IllegalStateError

if TYPE_CHECKING:
    from aeron.client.client_conductor import ClientConductor
    from aeron.client.handlers import (AvailableImageHandler, BlockHandler, ControlledFragmentHandler,
                                       FragmentHandler, UnavailableImageHandler)
    from aeron.client.image import Image

NULL_COUNTER_ID = -1
_Handler = TypeVar("_Handler")


class Subscription:
    """``poll(handler, fragment_limit)`` reads up to ``fragment_limit`` fragments across the images, starting
    with a different image each call so that no publisher starves the others. The image list is replaced
    (never mutated) by the conductor, so polling from one thread needs no lock. Polling a closed subscription
    raises IllegalStateError; an image the driver closed meanwhile simply delivers nothing.
    """

    __slots__ = ("_conductor", "channel", "stream_id", "registration_id", "channel_status_id", "_images",
                 "_round_robin_index", "_closed", "available_image_handler", "unavailable_image_handler",
                 "_resolved_endpoint", "_resolved_channel", "__weakref__")

    def __init__(self, conductor: ClientConductor, channel: str, stream_id: int, registration_id: int,
                 available_image_handler: AvailableImageHandler | None = None,
                 unavailable_image_handler: UnavailableImageHandler | None = None) -> None:
        """Made by the client conductor when the driver registered the subscription: use ``Aeron.add_subscription``."""
        self._conductor = conductor
        self.channel = channel
        self.stream_id = stream_id
        self.registration_id = registration_id
        self.channel_status_id = NULL_COUNTER_ID
        self._images: tuple[Image, ...] = ()
        self._round_robin_index = 0
        self._closed = False
        self.available_image_handler = available_image_handler
        self.unavailable_image_handler = unavailable_image_handler
        self._resolved_endpoint: str | None = None
        self._resolved_channel: str | None = None

    # -- polling (one Python call per image; per fragment work is in the compiled reader) ----------------

    def poll(self, handler: FragmentHandler, fragment_limit: int) -> int:
        """Deliver up to ``fragment_limit`` fragments as ``handler(buffer, offset, length, header)``.

        ``buffer`` is the log itself: ``buffer.get_bytes(offset, length)`` copies the payload, ``buffer.view(offset,
        length)`` is a zero-copy view valid during the call. A message longer than one frame's payload (the MTU
        less its 32-byte header) arrives in fragments: wrap the handler in a FragmentAssembler to get whole
        messages. Returns the number of fragments delivered.
        """
        return self.poll_images(TermReader.poll, handler, fragment_limit)

    def controlled_poll(self, handler: ControlledFragmentHandler, fragment_limit: int) -> int:
        """As :meth:`poll`, but the handler returns a ControlledPollAction (ABORT, BREAK, COMMIT or CONTINUE).

        ABORT leaves the fragment to be delivered again; BREAK stops this poll after it. Returns the fragments
        consumed.
        """
        return self.poll_images(TermReader.controlled_poll, handler, fragment_limit)

    def poll_images(self, read: Callable[[Image, _Handler, int], int], handler: _Handler,
                    fragment_limit: int) -> int:
        """``read(image, handler, remaining_limit)`` for each image in turn until ``fragment_limit`` fragments are
        read, each call starting one image further on (what :meth:`poll` does with ``Image.poll``): for a reader
        that must know which image a fragment came from. Returns the fragments ``read`` reported."""
        if self._closed:
            raise IllegalStateError("Subscription is closed")
        images = self._images
        count = len(images)
        if count == 0:
            return 0
        start = self._round_robin_index + 1
        if start >= count:
            start = 0
        self._round_robin_index = start
        fragments = 0
        i = start
        while True:
            fragments += read(images[i], handler, fragment_limit - fragments)
            if fragments >= fragment_limit:
                break
            i += 1
            if i == count:
                i = 0
            if i == start:
                break
        return fragments

    def block_poll(self, block_handler: BlockHandler, block_length_limit: int) -> int:
        """Each image in turn delivers at most one block of up to ``block_length_limit`` bytes."""
        if self._closed:
            raise IllegalStateError("Subscription is closed")
        consumed = 0
        for image in self._images:
            consumed += image.block_poll(block_handler, block_length_limit)
        return consumed

    # -- images ---------------------------------------------------------------------------------------

    @property
    def images(self) -> tuple[Image, ...]:
        """The images now connected (a snapshot: the conductor replaces the tuple)."""
        return self._images

    @property
    def image_count(self) -> int:
        """How many images the subscription has."""
        return len(self._images)

    def image_by_session_id(self, session_id: int) -> Image | None:
        """The image of publisher ``session_id``, or None."""
        for image in self._images:
            if image.session_id == session_id:
                return image
        return None

    def image_at_index(self, index: int) -> Image:
        """The image at ``index`` of :attr:`images`."""
        return self._images[index]

    @property
    def is_connected(self) -> bool:
        """True when at least one image is connected (open and not at end of stream)."""
        return any(not image.is_closed for image in self._images)

    def has_no_images(self) -> bool:
        """True when no publisher's image is connected."""
        return not self._images

    def _add_image(self, image: Image) -> None:
        self._images = self._images + (image,)

    def _remove_image(self, correlation_id: int) -> Image | None:
        for image in self._images:
            if image.correlation_id == correlation_id:
                self._images = tuple(i for i in self._images if i is not image)
                return image
        return None

    def _has_image(self, correlation_id: int) -> bool:
        return any(image.correlation_id == correlation_id for image in self._images)

    # -- destinations (multi-destination subscriptions) --------------------------------------------------

    def add_destination(self, endpoint_channel: str) -> None:
        """Also receive over ``endpoint_channel`` (e.g. ``aeron:udp?endpoint=host:port``) on a
        ``control-mode=manual`` subscription: a stream arriving over several destinations is one image.
        Waits for the driver; raises RegistrationError when it refuses."""
        self._conductor.receive_destination(self, endpoint_channel, add=True)

    def remove_destination(self, endpoint_channel: str) -> None:
        """Stop receiving over a destination added with :meth:`add_destination` (the same channel string)."""
        self._conductor.receive_destination(self, endpoint_channel, add=False)

    def async_add_destination(self, endpoint_channel: str) -> int:
        """:meth:`add_destination` without waiting: returns the command's correlation id, active in
        ``Aeron.is_command_active`` until the driver answers; a refusal goes to the error handler."""
        return self._conductor.async_destination(self, endpoint_channel, add=True, receive=True)

    def async_remove_destination(self, endpoint_channel: str) -> int:
        """:meth:`remove_destination` without waiting (see :meth:`async_add_destination`)."""
        return self._conductor.async_destination(self, endpoint_channel, add=False, receive=True)

    # -- lifecycle ------------------------------------------------------------------------------------

    @property
    def channel_status(self) -> int:
        """The receive channel's status counter value (ACTIVE, ERRORED, ...); IPC has none and is ACTIVE while open."""
        if self._closed:
            return CHANNEL_ENDPOINT_STATUS_ERRORED
        if self.channel_status_id == NULL_COUNTER_ID:
            return CHANNEL_ENDPOINT_STATUS_ACTIVE
        return self._conductor.counter_value(self.channel_status_id)

    @property
    def is_closed(self) -> bool:
        """True once the subscription is closed (by the user or the client)."""
        return self._closed

    # -- bound addresses ------------------------------------------------------------------------------

    def local_socket_addresses(self) -> list[str]:
        """The addresses (``host:port``) the driver bound this subscription's channel to: one per socket (a
        multi-destination subscription has one per destination); empty for IPC or unless the channel is ACTIVE."""
        return local_socket_address_status.find_addresses(
            self._conductor.counters_reader, self.channel_status, self.channel_status_id)

    @property
    def resolved_endpoint(self) -> str | None:
        """The first bound address of the channel (``host:port``, a wildcard port resolved), or None while there
        is none (not ACTIVE yet, IPC, or a multi-destination subscription without destinations). Kept once found."""
        if self._resolved_endpoint is None:
            self._resolved_endpoint = local_socket_address_status.find_address(
                self._conductor.counters_reader, self.channel_status, self.channel_status_id)
        return self._resolved_endpoint

    def try_resolve_channel_endpoint_port(self) -> str | None:
        """The channel with a wildcard endpoint port (``endpoint=host:0``) replaced by the port the driver bound,
        as Aeron's ``tryResolveChannelEndpointPort``: the channel unchanged when there is nothing to resolve (no
        endpoint, a fixed port, ``control-mode=manual``), None while the port is not known yet."""
        if self._resolved_channel is None:
            uri = ChannelUri.parse(self.channel)
            endpoint = uri.get(ENDPOINT_PARAM_NAME)
            if (endpoint is None or not endpoint.endswith(":0")
                    or uri.get(MDC_CONTROL_MODE_PARAM_NAME) == CONTROL_MODE_MANUAL):
                self._resolved_channel = self.channel
            else:
                resolved = self.resolved_endpoint
                if resolved is not None:
                    uri.replace_endpoint_wildcard_port(resolved)
                    self._resolved_channel = str(uri)
        return self._resolved_channel

    def close(self) -> None:
        """Close the subscription and its images; tell the driver. Idempotent."""
        self._conductor.release_subscription(self)

    def _internal_close(self) -> tuple[Image, ...]:
        self._closed = True
        images, self._images = self._images, ()
        for image in images:
            image._retire()
        return images

    def __enter__(self) -> Subscription:
        """Return the subscription; the ``with`` block closes it."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the subscription."""
        self.close()

    def __repr__(self) -> str:
        """Channel, stream, registration id, image count and state."""
        state = "closed" if self._closed else "open"
        return (f"<Subscription {self.channel!r} stream={self.stream_id} reg={self.registration_id} "
                f"images={len(self._images)} {state}>")
