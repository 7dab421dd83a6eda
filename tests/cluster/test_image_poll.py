# SPDX-License-Identifier: Apache-2.0
"""ImagePoller: each image polled in turn, starting one further on each poll, the image known to the handler,
the fragment limit shared across images."""
from __future__ import annotations

from aeron.client.subscription import Subscription
from aeron.cluster._image_poll import ImagePoller


def subscription_of(*images):
    """A Subscription's polling over fake images (no conductor: poll_images reads only the image tuple)."""
    subscription = Subscription.__new__(Subscription)
    subscription._images = tuple(images)
    subscription._round_robin_index = 0
    subscription._closed = False
    return subscription


class FakeImage:
    def __init__(self, name: str, fragments: int) -> None:
        self.name = name
        self.fragments = fragments
        self.calls: list[tuple[str, int]] = []

    def _deliver(self, kind: str, handler, limit: int) -> int:
        self.calls.append((kind, limit))
        count = min(limit, self.fragments)
        for _ in range(count):
            handler(self.name)
        return count

    def poll(self, handler, limit: int) -> int:
        return self._deliver("poll", handler, limit)

    def controlled_poll(self, handler, limit: int) -> int:
        return self._deliver("controlled", handler, limit)


def test_each_image_in_turn_with_the_image_known_to_the_handler():
    poller = ImagePoller()
    images = (FakeImage("a", 2), FakeImage("b", 2), FakeImage("c", 2))
    seen: list[tuple[str, str]] = []
    handler = lambda name: seen.append((name, poller.image.name))  # noqa: E731
    subscription = subscription_of(*images)
    assert poller.poll(subscription, handler, 10, controlled=False) == 6
    assert seen[:2] == [("b", "b"), ("b", "b")] and {s[0] for s in seen} == {"a", "b", "c"}
    assert all(name == image for name, image in seen) and poller.image is None
    seen.clear()
    assert poller.poll(subscription, handler, 3, controlled=True) == 3        # starts at c, the limit shared
    assert [s[0] for s in seen] == ["c", "c", "a"]
    assert images[2].calls[-1] == ("controlled", 3) and images[0].calls[-1] == ("controlled", 1)
    assert poller.poll(subscription_of(), handler, 3, controlled=False) == 0


def test_the_image_is_cleared_when_a_handler_raises():
    poller = ImagePoller()

    def handler(name):
        raise RuntimeError(name)

    try:
        poller.poll(subscription_of(FakeImage("a", 1)), handler, 5, controlled=False)
    except RuntimeError:
        pass
    assert poller.image is None
