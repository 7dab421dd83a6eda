# SPDX-License-Identifier: Apache-2.0
"""Untethered subscribers (``tether=false``): one state machine for every kind of image a subscriber can have, IPC
publications, network publications seen by spies and publication images (aeron_ipc_publication_check_untethered_
subscriptions, aeron_network_publication_check_untethered_subscriptions, aeron_publication_image_check_untethered_
subscriptions, which differ only in the window they measure against and where a rejoining subscriber resumes).

A tethered subscriber holds its image back as usual. An untethered one that stays more than three quarters of a
window behind for ``untethered-window-limit-timeout`` loses its image (ON_UNAVAILABLE_IMAGE) and LINGERs; after
``untethered-linger-timeout`` it RESTs, holding nothing back, or with ``rejoin=false`` is dropped; after
``untethered-resting-timeout`` it rejoins where the image is then (ON_AVAILABLE_IMAGE, same counter)."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

TETHER_ACTIVE, TETHER_LINGER, TETHER_RESTING = "ACTIVE", "LINGER", "RESTING"


def untethered_window_limit(position: int, window_length: int) -> int:
    """Below this an untethered subscriber is behind: three quarters of a window short of ``position``."""
    return position - window_length + (window_length >> 2)


def check_untethered_subscriptions(links: Iterable[Any], window_limit: int, now_ns: int,
                                   on_unavailable: Callable[[Any], None], on_drop: Callable[[Any], None],
                                   on_rejoin: Callable[[Any], None], timeouts: Any = None) -> int:
    """Move each untethered subscriber position (``SubscriberPosition``) on by the timeouts (window limit, linger,
    resting: attributes ``window_limit_timeout_ns``, ``linger_timeout_ns``, ``resting_timeout_ns``) of ``timeouts``
    (the image's, as Aeron's publication images and network publications keep them), or else of its own
    subscription. ``on_unavailable(link)`` tells its client the image went, ``on_drop(link)`` unlinks a subscriber
    that may not rejoin, ``on_rejoin(link)`` sets its position and tells its client the image is back. Returns the
    work done."""
    work = 0
    for link in list(links):
        subscription = link.subscription
        if subscription.tether:
            link.update_time(now_ns)
            continue
        limits = subscription if timeouts is None else timeouts
        if link.state == TETHER_ACTIVE:
            if link.position.get_volatile() > window_limit:
                link.update_time(now_ns)
            elif now_ns > link.state_change_ns + limits.window_limit_timeout_ns:
                on_unavailable(link)
                link.set_state(TETHER_LINGER, now_ns)
                work += 1
        elif link.state == TETHER_LINGER:
            if now_ns > link.state_change_ns + limits.linger_timeout_ns:
                if subscription.rejoin:
                    link.set_state(TETHER_RESTING, now_ns)
                else:
                    on_drop(link)
                work += 1
        elif now_ns > link.state_change_ns + limits.resting_timeout_ns:
            on_rejoin(link)                 # while still resting: it is not among the positions it joins at
            link.set_state(TETHER_ACTIVE, now_ns)
            work += 1
    return work


class UntetheredTimeouts:
    """The three timeouts of an image whose untethered subscribers all follow the same ones."""

    __slots__ = ("window_limit_timeout_ns", "linger_timeout_ns", "resting_timeout_ns")

    def __init__(self, window_limit_timeout_ns: int, linger_timeout_ns: int, resting_timeout_ns: int) -> None:
        self.window_limit_timeout_ns = window_limit_timeout_ns
        self.linger_timeout_ns = linger_timeout_ns
        self.resting_timeout_ns = resting_timeout_ns


def working_positions(links: Iterable[Any]) -> list[int]:
    """The positions of the subscribers that hold an image back (all but the resting ones)."""
    return [link.position.get_volatile() for link in links if link.state != TETHER_RESTING]


def working_span(links: Iterable[Any], furthest: int) -> tuple[int, int]:
    """The slowest of :func:`working_positions` (-1 when there is none) and the furthest of them and ``furthest``, in
    one pass with no list (a publication's limit, every whole duty cycle)."""
    slowest = -1
    for link in links:
        if link.state != TETHER_RESTING:
            position = link.position.get_volatile()
            if slowest < 0 or position < slowest:
                slowest = position
            if position > furthest:
                furthest = position
    return slowest, furthest
