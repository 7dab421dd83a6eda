# SPDX-License-Identifier: Apache-2.0
"""Polling a subscription one image at a time, so that a message's handler knows the image it came from (Aeron's
adapters read it from ``Header.context()``: the ingress's and the consensus stream's session requests keep the
image's source identity and session id)."""
from __future__ import annotations

from typing import Any

__all__ = ["ImagePoller"]


class ImagePoller:
    """Polls each image of a subscription in turn, starting one image further on each time (as
    ``Subscription.poll``), with :attr:`image` set to the image being polled."""

    __slots__ = ("image", "_round_robin_index")

    def __init__(self) -> None:
        """No image until a poll."""
        self.image: Any = None
        self._round_robin_index = 0

    def poll(self, subscription: Any, handler: Any, fragment_limit: int, controlled: bool) -> int:
        """Up to ``fragment_limit`` fragments from ``subscription``'s images (``controlled_poll`` when
        ``controlled``); returns how many."""
        images = subscription.images
        count = len(images)
        if count == 0:
            return 0
        start = self._round_robin_index + 1
        if start >= count:
            start = 0
        self._round_robin_index = start
        fragments = 0
        for i in range(count):
            image = images[(start + i) % count]
            self.image = image
            try:
                if controlled:
                    fragments += image.controlled_poll(handler, fragment_limit - fragments)
                else:
                    fragments += image.poll(handler, fragment_limit - fragments)
            finally:
                self.image = None
            if fragments >= fragment_limit:
                break
        return fragments
