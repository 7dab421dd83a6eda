# SPDX-License-Identifier: Apache-2.0
"""ReceiveDestination: one socket of a receive channel endpoint (port of aeron_receive_destination.c).

A plain subscription's endpoint has exactly one, for its own channel. A multi-destination subscription
(``control-mode=manual``) starts with none and gains one per ADD_RCV_DESTINATION; every destination feeds the
endpoint's one dispatcher, so a stream arriving over several of them is rebuilt into one image. Status messages,
NAKs and RTT replies for what arrived on a destination leave through that destination's socket, so a dynamic
multi-destination-cast sender learns the right address, and go to its control address when it has one
(multicast control group, explicit ``control=``)."""
from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

from aeron._core.data_dispatcher import address_key

if TYPE_CHECKING:
    from aeron._core.udp_transport import UdpTransport
    from aeron.driver.udp_channel import UdpChannel

# a destination without traffic for this long stops getting status messages and NAKs (AERON_RECEIVE_DESTINATION_
# TIMEOUT_NS); its control address is then re-resolved by the C driver, which this driver does not need to do
DESTINATION_TIMEOUT_NS = 5_000_000_000
_dispatch_ids = itertools.count(1)


def source_key(address: tuple) -> bytes:
    """How the compiled data path knows a source (data_dispatcher.address_key); an address that is not numeric
    gets a key no datagram has, so what comes from it takes the Python path."""
    try:
        return address_key(address)
    except (OSError, TypeError, ValueError, IndexError):
        return b"\xff\xff"


class ReceiveDestination:
    """Owned by the conductor (creation, counters, closing) and used by the receiver (polling, sending)."""

    __slots__ = ("udp_channel", "transport", "local_sockaddr_counter_id", "control_address",
                 "time_of_last_activity_ns", "receiver_released", "dispatch_id")

    def __init__(self, udp_channel: UdpChannel, transport: UdpTransport | Any, local_sockaddr_counter_id: int | None,
                 now_ns: int = 0) -> None:
        self.udp_channel = udp_channel
        self.transport = transport
        # None when the endpoint owns the counter (the single destination of a plain subscription)
        self.local_sockaddr_counter_id = local_sockaddr_counter_id
        self.control_address: tuple | None = udp_channel.remote_control
        self.time_of_last_activity_ns = now_ns
        self.receiver_released = False
        # tells the compiled data path which destination a datagram came through (image connections are per
        # destination); unique in the process, never reused
        self.dispatch_id = next(_dispatch_ids)

    @property
    def has_control_address(self) -> bool:
        """Status messages go to a fixed address rather than to wherever the data came from."""
        return self.control_address is not None

    @property
    def has_explicit_control(self) -> bool:
        """``control=`` (not multicast): the subscription announces itself to that address to elicit SETUPs."""
        return self.control_address is not None and not self.udp_channel.is_multicast

    def matches(self, udp_channel: UdpChannel) -> bool:
        """The destination an ADD_RCV_DESTINATION with this channel made (aeron_udp_channel_equals)."""
        return udp_channel.canonical_form == self.udp_channel.canonical_form

    def receiver_release(self) -> None:
        """The receiver no longer polls or sends through it: the conductor may close it."""
        self.receiver_released = True

    def close(self) -> None:
        self.transport.close()

    def __repr__(self) -> str:
        return f"<ReceiveDestination {self.udp_channel.original!r}>"
