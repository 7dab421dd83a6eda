# SPDX-License-Identifier: Apache-2.0
"""Opening a channel endpoint's UDP socket (aeron_udp_channel_transport.c: bind, multicast membership and
interface, TTL, buffer sizes) and handing it to the compiled batching transport (aeron._core.udp_transport), plus
the loss generators (aeron_udp_channel_transport_loss.c and friends) that wrap a transport for tests: chosen once
at construction, so the data path has no test branch."""
from __future__ import annotations

import socket
import struct
from collections.abc import Callable

from aeron._core.loss_generator import LossGenerator
from aeron._core.udp_transport import UdpTransport
from aeron.common.errors import ChannelEndpointError


def open_udp_transport(family: int, bind_address: tuple, *, multicast_group: tuple | None = None,
                       interface: tuple | None = None, ttl: int = 0, so_rcvbuf: int = 0, so_sndbuf: int = 0,
                       name: str = "", batch: int = 16) -> UdpTransport:
    """A configured, bound, non-blocking UDP socket wrapped in the compiled batching transport."""
    sock = socket.socket(family, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
    try:
        sock.setblocking(False)
        if so_rcvbuf > 0:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, so_rcvbuf)
        if so_sndbuf > 0:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, so_sndbuf)
        if multicast_group is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(multicast_group[:2] if family == socket.AF_INET else multicast_group)
            iface = (interface or ("0.0.0.0", 0))[0]
            if family == socket.AF_INET:
                mreq = socket.inet_aton(multicast_group[0]) + socket.inet_aton(iface)
                sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, mreq)
                sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(iface))
                sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)
                if ttl > 0:
                    sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, ttl)
            else:
                mreq = socket.inet_pton(socket.AF_INET6, multicast_group[0]) + struct.pack("@I", 0)
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_JOIN_GROUP, mreq)
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_LOOP, 1)
                if ttl > 0:
                    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, ttl)
        else:
            sock.bind(bind_address)
        return UdpTransport(sock, batch=batch, name=name)
    except OSError as exc:
        sock.close()
        raise ChannelEndpointError(f"{name}: cannot open UDP socket at {bind_address}: {exc}") from exc


def _chain_dropped(generator: LossGenerator | None) -> int:
    total = 0
    while generator is not None:
        total += generator.dropped
        generator = generator.next_generator
    return total


class LossyTransport:
    """Drops received datagrams that ``should_drop(buffer, length)`` selects (Aeron's loss generators at the
    transport seam): a dropped slot reads as length 0. Counts what it dropped. Sends pass straight through.
    A compiled LossGenerator filters a whole batch in one nogil call (and may reorder or duplicate datagrams:
    held and copied ones come in slots after the received ones)."""

    def __init__(self, transport: UdpTransport, should_drop: Callable[[bytearray, int], bool]) -> None:
        self._transport = transport
        self._should_drop = should_drop
        self.inner = transport
        # a compiled generator runs inside the receive data path's one call per batch
        self.compiled = should_drop if isinstance(should_drop, LossGenerator) else None
        self._lengths: list[int] = []
        self.dropped = 0
        self.slots = transport.slots
        self.receive_buffer = transport.receive_buffer
        self.bound_address = transport.bound_address
        self.socket = transport.socket
        self.name = transport.name
        self.send = transport.send
        self.send_term_batch = transport.send_term_batch
        self.source = transport.source
        self.fileno = transport.fileno
        self.close = transport.close
        if self.compiled is not None:
            self.length = transport.length                  # deliver_received zeroes dropped slots in place

    def receive_batch(self) -> int:
        count = self._transport.receive_batch()
        if self.compiled is not None:
            dropped = _chain_dropped(self.compiled)
            count = self.compiled.deliver_received(self._transport)    # reorder / duplicate add slots
            self.dropped += _chain_dropped(self.compiled) - dropped
            return count
        lengths = []
        for i in range(count):
            length = self._transport.length(i)
            if self._should_drop(self.slots[i], length):
                self.dropped += 1
                length = 0
            lengths.append(length)
        self._lengths = lengths
        return count

    def length(self, slot: int) -> int:
        return self._lengths[slot]
