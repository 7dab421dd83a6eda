# SPDX-License-Identifier: Apache-2.0
"""Opening a channel endpoint's UDP socket (aeron_udp_channel_transport.c: bind, multicast membership and
interface, TTL, buffer sizes) and handing it to the compiled batching transport (aeron._core.udp_transport), plus
the loss generators (aeron_udp_channel_transport_loss.c and friends) that wrap a transport for tests: chosen once
at construction, so the data path has no test branch."""
from __future__ import annotations

import random
import socket
import struct
from collections.abc import Callable

from aeron._core.udp_transport import UdpTransport
from aeron.errors import ChannelEndpointError



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


class LossyTransport:
    """Drops received datagrams that ``should_drop(buffer, length)`` selects (Aeron's loss generators at the
    transport seam): a dropped slot reads as length 0. Counts what it dropped. Sends pass straight through."""

    def __init__(self, transport: UdpTransport, should_drop: Callable[[bytearray, int], bool]) -> None:
        self._transport = transport
        self._should_drop = should_drop
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

    def receive_batch(self) -> int:
        count = self._transport.receive_batch()
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

    def receive(self) -> tuple[int, tuple | None]:
        while True:
            length, source = self._transport.receive()
            if length == 0 or not self._should_drop(self.receive_buffer, length):
                return length, source
            self.dropped += 1


def random_loss(rate: float, seed: int | None = None, data_only: bool = True,
                msg_type_mask: int | None = None) -> Callable[[bytearray, int], bool]:
    """Drop each datagram whose frame type bit is in ``msg_type_mask`` with probability ``rate`` (the C "loss"
    binding's rate and recv-msg-mask); without a mask: DATA and PAD only, or every type when not ``data_only``."""
    rng = random.Random(seed)
    if msg_type_mask is None:
        msg_type_mask = 0x3 if data_only else 0xFFFF

    def should_drop(buffer: bytearray, length: int) -> bool:
        if length < 8 or not (1 << (buffer[6] & 0xF)) & msg_type_mask:
            return False
        return rng.random() < rate
    return should_drop


_DATA_HEADER = struct.Struct("<iBBhiiii")      # frame length, version, flags, type, term offset, session, stream,
#                                                  term id


def fixed_loss(term_id: int, term_offset: int, length: int) -> Callable[[bytearray, int], bool]:
    """The C "fixed-loss" interceptor: per stream and session, from the first DATA datagram (heartbeats
    included) of ``term_id``, drop consecutive datagrams until the tracked offset reaches
    ``term_offset + length``."""
    tracking: dict[tuple[int, int], int] = {}

    def should_drop(buffer: bytearray, datagram_length: int) -> bool:
        if datagram_length < 32 or buffer[6] != 1 or buffer[7] != 0:
            return False
        _, _, _, _, offset, session_id, stream_id, frame_term_id = _DATA_HEADER.unpack_from(buffer, 0)
        if frame_term_id != term_id:
            return False
        key = (stream_id, session_id)
        tracked = tracking.setdefault(key, offset)
        if tracked < term_offset + length and offset <= tracked < offset + datagram_length:
            tracking[key] = offset + datagram_length
            return True
        return False
    return should_drop


def multi_gap_loss(term_id: int, gap_radix: int, gap_length: int, total_gaps: int) -> Callable[[bytearray, int], bool]:
    """The C "multi-gap-loss" interceptor: in ``term_id``, drop the data at every multiple of ``gap_radix`` (a
    power of two) for ``gap_length`` bytes, ``total_gaps`` times, once each (a retransmit gets through)."""
    if gap_radix <= 0 or gap_radix & (gap_radix - 1):
        raise ValueError(f"gap-radix must be a power of two, got {gap_radix}")
    radix_bits = gap_radix.bit_length() - 1
    radix_mask = ~(gap_radix - 1)
    last_gap_limit = total_gaps * gap_radix + gap_length
    tracking: dict[tuple[int, int], int] = {}

    def should_drop(buffer: bytearray, datagram_length: int) -> bool:
        if datagram_length < 32 or buffer[6] != 1 or buffer[7] != 0:
            return False
        _, _, _, _, offset, session_id, stream_id, frame_term_id = _DATA_HEADER.unpack_from(buffer, 0)
        if frame_term_id != term_id or offset > last_gap_limit:
            return False
        key = (stream_id, session_id)
        if tracking.setdefault(key, offset) > offset:
            return False
        frame_limit = offset + datagram_length
        trailing_zeros = (offset & -offset).bit_length() - 1 if offset else 0
        previous_gap = offset & radix_mask
        next_gap = ((offset >> radix_bits) + 1) << radix_bits
        if (offset != 0 and trailing_zeros >= radix_bits) or \
                (previous_gap > 0 and offset < previous_gap + gap_length) or \
                (frame_limit > next_gap and offset < next_gap + gap_length):
            tracking[key] = frame_limit
            return True
        return False
    return should_drop
