# SPDX-License-Identifier: Apache-2.0
"""Channel helpers the consensus module shares (Aeron's ``ChannelUri.createDestinationUri``, ``addSessionId``,
``initialPosition``, ``addAliasIfAbsent`` and ``ClusterMember.setControlEndpoint``'s port wildcard)."""
from __future__ import annotations

from aeron.common.channel_uri import ChannelUri

__all__ = ["add_alias_if_absent", "add_session_id", "create_destination_uri", "parse_channel", "set_initial_position"]

IPC_CHANNEL = "aeron:ipc"
UDP_CHANNEL = "aeron:udp"
SPY_PREFIX = "aeron-spy:"


def parse_channel(channel: str) -> ChannelUri:
    """``channel`` parsed as a template: Aeron's cluster defaults include a bare ``aeron:udp`` (parameters are added
    before use), which Java's ChannelUri accepts and ours refuses as a channel to open."""
    if channel in (UDP_CHANNEL, IPC_CHANNEL):
        return ChannelUri(channel[len("aeron:"):])
    return ChannelUri.parse(channel)


def create_destination_uri(channel: str, endpoint: str) -> str:
    """``aeron:<media>?endpoint=<endpoint>`` for a destination of ``channel``, keeping its ``interface``."""
    uri = parse_channel(channel)
    destination = f"aeron:{uri.media}?endpoint={endpoint}"
    interface = uri.get("interface")
    return destination if interface is None else f"{destination}|interface={interface}"


def add_session_id(channel: str, session_id: int) -> str:
    """``channel`` with ``session-id=<session_id>``."""
    uri = parse_channel(channel)
    uri.put("session-id", str(session_id))
    return str(uri)


def add_alias_if_absent(channel: str, alias: str) -> str:
    """``channel`` with ``alias=<alias>`` unless it has one."""
    uri = parse_channel(channel)
    if uri.get("alias") is None:
        uri.put("alias", alias)
    return str(uri)


def set_initial_position(uri: ChannelUri, position: int, initial_term_id: int, term_length: int) -> None:
    """Set ``init-term-id``, ``term-id``, ``term-offset`` and ``term-length`` so that a publication starts at
    ``position`` of a stream with ``initial_term_id`` (Aeron's ``ChannelUri.initialPosition``)."""
    if position < 0 or position & 31:
        raise ValueError(f"invalid position: {position}")
    bits_to_shift = (term_length & -term_length).bit_length() - 1
    term_id = initial_term_id + (position >> bits_to_shift)
    term_offset = position & (term_length - 1)
    uri.put("init-term-id", str(initial_term_id))
    uri.put("term-id", str(to_int32(term_id)))
    uri.put("term-offset", str(term_offset))
    uri.put("term-length", str(term_length))


def to_int32(value: int) -> int:
    """The low 32 bits of ``value`` as a signed int (Java's ``(int)`` cast: a session id from a correlation id)."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & (1 << 31) else value
