# SPDX-License-Identifier: Apache-2.0
"""The client's callback types, in one place and by Aeron's names (``io.aeron.logbuffer.FragmentHandler``,
``io.aeron.AvailableImageHandler``, Agrona's ``ErrorHandler``...), each exported from ``aeron``.

Each is a ``Callable`` alias rather than a callback ``Protocol``: a type checker gives a lambda's parameters their
types from a ``Callable`` it is passed to (``sub.poll(lambda buffer, offset, length, header: ...)`` checks
``buffer.get_bytes(...)`` against AtomicBuffer), but not from a Protocol's ``__call__``, where mypy types them
``Any``. A handler's return value is ignored where the type says ``object``; any function or callable object whose
parameters accept these arguments fits, whatever the parameters are named.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias

from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.counters import CountersReader
from aeron._core.term_reader import Header
from aeron.client.image import Image
from aeron.common.agent import ErrorHandler
from aeron.common.command import PublicationErrorFrame

__all__ = [
    "AvailableCounterHandler", "AvailableImageHandler", "BlockHandler", "CloseHandler", "ControlledFragmentHandler",
    "ErrorHandler", "FragmentHandler", "PublicationErrorFrameHandler", "UnavailableCounterHandler",
    "UnavailableImageHandler",
]

FragmentHandler: TypeAlias = Callable[[AtomicBuffer, int, int, Header], object]
"""``handler(buffer, offset, length, header)`` for each fragment a poll delivers (Aeron's ``FragmentHandler``):
``buffer`` is the log itself, valid during the call (``buffer.get_bytes(offset, length)`` copies the payload)."""

ControlledFragmentHandler: TypeAlias = Callable[[AtomicBuffer, int, int, Header], int]
"""As :data:`FragmentHandler`, returning a ``ControlledPollAction`` (ABORT, BREAK, COMMIT or CONTINUE)."""

BlockHandler: TypeAlias = Callable[[AtomicBuffer, int, int, int, int], object]
"""``handler(buffer, offset, length, session_id, term_id)`` for a block of whole frames (``Image.block_poll``)."""

AvailableImageHandler: TypeAlias = Callable[[Image], object]
"""``handler(image)`` when a publisher's image joins a subscription (on the client conductor's thread)."""

UnavailableImageHandler: TypeAlias = Callable[[Image], object]
"""``handler(image)`` when an image leaves its subscription (the publisher went, or the subscription closed)."""

AvailableCounterHandler: TypeAlias = Callable[[CountersReader, int, int], object]
"""``handler(counters_reader, registration_id, counter_id)`` when a counter is allocated."""

UnavailableCounterHandler: TypeAlias = Callable[[CountersReader, int, int], object]
"""``handler(counters_reader, registration_id, counter_id)`` when a counter is freed."""

CloseHandler: TypeAlias = Callable[[], object]
"""``handler()`` once, when the client closes (Aeron's ``Aeron.Context.closeHandler``)."""

PublicationErrorFrameHandler: TypeAlias = Callable[[PublicationErrorFrame], object]
"""``handler(error_frame)`` when a receiver rejected an image of one of this client's publications."""
