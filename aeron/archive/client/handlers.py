# SPDX-License-Identifier: Apache-2.0
"""What the archive client calls back, typed for type checkers: the fragment handlers of ``ReplayMerge.poll`` and
``PersistentSubscription.poll``/``controlled_poll`` (Aeron's ``FragmentHandler`` and ``ControlledFragmentHandler``),
the image handlers of a replay's subscription, the credentials supplier and the agent invoker of a Context.

The parameters are positional-only, so a handler's own parameter names do not matter; a
``FragmentAssembler`` is a FragmentHandler.
"""
from __future__ import annotations

from typing import Protocol

from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.term_reader import Header
from aeron.client.image import Image
from aeron.common.security import CredentialsSupplier     # what a client authenticates with, archive or cluster


class FragmentHandler(Protocol):
    """``handler(buffer, offset, length, header)``: one fragment at ``buffer[offset:offset + length]`` (the log
    itself, valid during the call), its frame's header in ``header``; what it returns is ignored."""

    def __call__(self, buffer: AtomicBuffer, offset: int, length: int, header: Header, /) -> object:
        """Handle one fragment."""


class ControlledFragmentHandler(Protocol):
    """As :class:`FragmentHandler`, returning a ``ControlledPollAction`` (ABORT, BREAK, COMMIT or CONTINUE)."""

    def __call__(self, buffer: AtomicBuffer, offset: int, length: int, header: Header, /) -> int:
        """Handle one fragment; the action to take."""


class ImageHandler(Protocol):
    """``handler(image)``: an image of a subscription became available, or went away."""

    def __call__(self, image: Image, /) -> object:
        """Handle the image's arrival or departure."""


class AgentInvoker(Protocol):
    """Something a waiting client drives, one duty cycle per call (an ``AgentInvoker``)."""

    def invoke(self) -> int:
        """One duty cycle; the work done."""


__all__ = ["AgentInvoker", "ControlledFragmentHandler", "CredentialsSupplier", "FragmentHandler", "ImageHandler"]
