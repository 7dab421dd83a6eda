# SPDX-License-Identifier: Apache-2.0
"""Polling a subscription one image at a time, so that a message's handler knows the image it came from (Aeron's
adapters read it from ``Header.context()``: the ingress's and the consensus stream's session requests keep the
image's source identity and session id)."""
from __future__ import annotations

from typing import Any

from aeron._core.term_reader import any_fragment_pending

__all__ = ["ImagePoller"]


class ImagePoller:
    """Polls each image of a subscription in turn (``Subscription.poll_images``), with :attr:`image` set to the
    image being polled."""

    __slots__ = ("image", "_controlled")

    def __init__(self) -> None:
        """No image until a poll."""
        self.image: Any = None
        self._controlled = False

    def poll(self, subscription: Any, handler: Any, fragment_limit: int, controlled: bool) -> int:
        """Up to ``fragment_limit`` fragments from ``subscription``'s images (``controlled_poll`` when
        ``controlled``); returns how many."""
        # polled every duty cycle, mostly empty: a few loads decide that, before a Python call per image and layer
        if not subscription.is_closed and not any_fragment_pending(subscription.images):
            return 0
        self._controlled = controlled
        return int(subscription.poll_images(self._read, handler, fragment_limit))

    def _read(self, image: Any, handler: Any, fragment_limit: int) -> int:
        self.image = image
        try:
            if self._controlled:
                return int(image.controlled_poll(handler, fragment_limit))
            return int(image.poll(handler, fragment_limit))
        finally:
            self.image = None
