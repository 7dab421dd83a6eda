# SPDX-License-Identifier: Apache-2.0
"""Subscriptions as the conductor keeps them, and the positions that tie them to streams (aeron_subscription_link_t
and aeron_tetherable_position_t of aeron_driver_subscribable.c).

A link says which streams a client's subscription wants (stream id, optionally one session) and holds the
publications or images it is linked to; each of those holds one SubscriberPosition per linked subscription, over
that subscription's sub-pos counter. IPC subscriptions link to IPC publications, network subscriptions to the
images of their receive channel endpoint, spies to the network publications of the channel they name.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aeron._core.counters import AtomicCounter
from aeron.driver.untethered import TETHER_ACTIVE

if TYPE_CHECKING:
    from aeron.driver.receive_channel_endpoint import ReceiveChannelEndpoint
    from aeron.driver.udp_channel import UdpChannel

class SubscriberPosition:
    """One subscription's position on a publication or image (aeron_tetherable_position_t)."""

    __slots__ = ("subscription", "counter_id", "position", "state", "state_change_ns")

    def __init__(self, subscription: SubscriptionLink, position: AtomicCounter, now_ns: int) -> None:
        self.subscription = subscription
        self.counter_id = position.counter_id
        self.position = position                    # the sub-pos counter the subscriber's image moves
        self.state = TETHER_ACTIVE                   # untethered subscribers move on by untethered.py
        self.state_change_ns = now_ns

    def set_state(self, state: str, now_ns: int) -> None:
        self.state = state
        self.state_change_ns = now_ns

    def update_time(self, now_ns: int) -> None:
        """The subscriber kept up (or is tethered): its untethered timeouts start again from ``now_ns``."""
        self.state_change_ns = now_ns


class SubscriberPositions(dict):
    """The subscribers of an image (or the spies of a network publication) by subscription registration id: every
    change also tells the owner's compiled per-cycle code which positions now hold it back (``refresh_positions``:
    PublicationImage's rebuild pass, NetworkPublication's limit)."""

    def __init__(self, owner: Any) -> None:
        super().__init__()
        self._owner = owner

    def __setitem__(self, key: int, link: Any) -> None:
        super().__setitem__(key, link)
        self._owner.refresh_positions()

    def __delitem__(self, key: int) -> None:
        super().__delitem__(key)
        self._owner.refresh_positions()

    def pop(self, key: int, *default: Any) -> Any:
        link = super().pop(key, *default)
        self._owner.refresh_positions()
        return link

    def clear(self) -> None:
        super().clear()
        self._owner.refresh_positions()


class SubscriptionLink:
    """What a subscription matches and what it is linked to (keyed by the resource's registration id)."""

    __slots__ = ("registration_id", "client_id", "stream_id", "channel", "session_id", "tether", "rejoin",
                 "window_limit_timeout_ns", "linger_timeout_ns", "resting_timeout_ns", "is_response", "links")

    def __init__(self, registration_id: int, client_id: int, stream_id: int, channel: str, session_id: int | None,
                 tether: bool = True, rejoin: bool = True, window_limit_timeout_ns: int = 0,
                 linger_timeout_ns: int = 0, resting_timeout_ns: int = 0, is_response: bool = False) -> None:
        self.registration_id = registration_id
        self.client_id = client_id
        self.stream_id = stream_id
        self.channel = channel
        self.session_id = session_id                 # None: every session of the stream
        self.tether = tether                         # False: may fall behind without holding the publisher back
        self.rejoin = rejoin                         # untethered: come back after resting
        self.window_limit_timeout_ns = window_limit_timeout_ns
        self.linger_timeout_ns = linger_timeout_ns
        self.resting_timeout_ns = resting_timeout_ns
        # control-mode=response: no session matches until the response publication's is known
        self.is_response = is_response
        self.links: dict[int, Any] = {}              # publication registration id / image correlation id -> it

    def matches(self, resource: Any) -> bool:
        """True when a publication or image of ``resource``'s stream and session is one this subscription wants."""
        return self.matches_stream(resource.stream_id, resource.session_id)

    def matches_stream(self, stream_id: int, session_id: int) -> bool:
        return stream_id == self.stream_id and (
            (self.session_id is None and not self.is_response) or self.session_id == session_id)

    def bind_response_session(self, session_id: int) -> None:
        """A response subscription learns its response publication's session: from now on it wants that one."""
        self.session_id = session_id
        self.is_response = False

    def add_link(self, resource_id: int, resource: Any) -> None:
        self.links[resource_id] = resource

    def remove_link(self, resource_id: int) -> None:
        self.links.pop(resource_id, None)


class IpcSubscriptionLink(SubscriptionLink):
    """A subscription on ``aeron:ipc``: linked to every IPC publication of its stream (and session)."""

    __slots__ = ()


class NetworkSubscriptionLink(SubscriptionLink):
    """A subscription on a UDP channel: linked to the images its receive channel endpoint rebuilds."""

    __slots__ = ("endpoint", "udp_channel", "is_reliable", "cc", "group", "receiver_window", "nak_delay_ns")

    def __init__(self, registration_id: int, client_id: int, stream_id: int, channel: str, session_id: int | None,
                 endpoint: ReceiveChannelEndpoint, udp_channel: UdpChannel, *, is_reliable: bool, rejoin: bool,
                 tether: bool, cc: str | None, group: str | None, receiver_window: int | None,
                 nak_delay_ns: int | None, untethered_timeouts: tuple[int, int, int] = (0, 0, 0),
                 is_response: bool = False) -> None:
        super().__init__(registration_id, client_id, stream_id, channel, session_id, tether, rejoin,
                         *untethered_timeouts, is_response=is_response)
        self.endpoint = endpoint
        self.udp_channel = udp_channel
        self.is_reliable = is_reliable
        self.cc = cc                                 # congestion control of the images it creates (static, cubic)
        self.group = group                           # group=true/false/infer
        self.receiver_window = receiver_window       # rcv-wnd, None: the driver's initial window
        self.nak_delay_ns = nak_delay_ns             # nak-delay, None: the driver's


class SpySubscriptionLink(SubscriptionLink):
    """An ``aeron-spy:`` subscription: reads the local network publications of the channel it names."""

    __slots__ = ("udp_channel",)

    def __init__(self, registration_id: int, client_id: int, stream_id: int, channel: str, session_id: int | None,
                 udp_channel: UdpChannel, *, tether: bool = True, rejoin: bool = True,
                 untethered_timeouts: tuple[int, int, int] = (0, 0, 0)) -> None:
        super().__init__(registration_id, client_id, stream_id, channel, session_id, tether, rejoin,
                         *untethered_timeouts)
        self.udp_channel = udp_channel

    def matches_publication(self, publication: Any) -> bool:
        """``publication`` sends on the channel this spy names, on a wanted stream and session; a spy naming the
        channel's tag follows any publication of that stream on the tagged endpoint (aeron_driver_conductor_spy_
        subscription_link_matches)."""
        channel = publication.endpoint.udp_channel
        if self.udp_channel.tag is not None and self.udp_channel.tag == channel.tag:
            return publication.stream_id == self.stream_id
        return channel.canonical_form == self.udp_channel.canonical_form and self.matches(publication)
