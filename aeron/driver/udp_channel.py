# SPDX-License-Identifier: Apache-2.0
"""UdpChannel: a UDP channel URI resolved into socket addresses (port of aeron_udp_channel.c).

Unicast: a publication sends to ``endpoint`` from ``interface`` (or an ephemeral port); a subscription binds
``endpoint``. Multicast (``endpoint`` a multicast group): data goes to the group, status messages and NAKs to the
control group, the data address + 1 (its last byte must be odd); both sides bind the group port on ``interface``.
Explicit control (``control=``): MDC publications receive status messages on ``control`` and MDC subscriptions
send them there. The canonical form names the endpoint for sharing (aeron_uri_udp_canonicalise).
"""
from __future__ import annotations

import ipaddress
import itertools
import socket
from dataclasses import dataclass, field
from typing import Any

from aeron.common.channel_uri import ChannelUri
from aeron.common.errors import InvalidChannelError
from aeron.driver.name_resolver import NameResolutionError

CONTROL_MODE_MANUAL = "manual"
CONTROL_MODE_DYNAMIC = "dynamic"
CONTROL_MODE_RESPONSE = "response"

_unique_ids = itertools.count(1)
TIMESTAMP_NONE = -1                     # a timestamp offset not given (AERON_NULL_VALUE)
TIMESTAMP_RESERVED_VALUE = -8           # `reserved`: the frame's reserved value (AERON_UDP_CHANNEL_RESERVED_VALUE_OFFSET)
TIMESTAMP_OFFSET_KEYS = ("media-rcv-ts-offset", "channel-rcv-ts-offset", "channel-snd-ts-offset")
Address = tuple  # (host, port) or (host, port, flowinfo, scope_id) for IPv6


def _split_host_port(text: str, channel: str, key: str) -> tuple[str, int | None]:
    """``host:port``, ``[v6]:port``, ``host`` (port None)."""
    if text.startswith("["):
        close = text.find("]")
        if close < 0:
            raise InvalidChannelError("unterminated IPv6 address", channel, f"{key}={text}")
        host, rest = text[1:close], text[close + 1:]
        if not rest:
            return host, None
        if not rest.startswith(":"):
            raise InvalidChannelError("expected :port after the IPv6 address", channel, f"{key}={text}")
        port_text = rest[1:]
    else:
        host, sep, port_text = text.rpartition(":")
        if not sep:
            return text, None
    try:
        port = int(port_text)
    except ValueError:
        raise InvalidChannelError("invalid port", channel, f"{key}={text}") from None
    if not 0 <= port <= 65535:
        raise InvalidChannelError("port out of range 0..65535", channel, f"{key}={text}")
    return host, port


def resolve(text: str, channel: str, key: str, default_port: int | None = None,
            resolver: Any = None) -> tuple[int, Address]:
    """Resolve ``host:port`` to (family, sockaddr), preferring IPv4 like the C driver's resolver. With the
    driver's name ``resolver`` (name_resolver.py), a host that is not an address literal is resolved by it, so
    it may name a driver."""
    if resolver is not None:
        text = resolver.lookup(text, key, False)
    host, port = _split_host_port(text, channel, key)
    if port is None:
        if default_port is None:
            raise InvalidChannelError("address needs a port", channel, f"{key}={text}")
        port = default_port
    if host in ("", "*"):
        host = "0.0.0.0"
    if resolver is not None and not _is_literal(host):
        try:
            family, address = resolver.resolve(host, key, False)
        except NameResolutionError as exc:
            raise InvalidChannelError(f"unknown host ({exc})", channel, f"{key}={text}") from None
        return family, ((address, port, 0, 0) if family == socket.AF_INET6 else (address, port))
    try:
        infos = socket.getaddrinfo(host, port, 0, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
    except (socket.gaierror, UnicodeError) as exc:
        raise InvalidChannelError(f"unknown host ({exc})", channel, f"{key}={text}") from None
    infos.sort(key=lambda info: 0 if info[0] == socket.AF_INET else 1)
    family, _, _, _, sockaddr = infos[0]
    return family, sockaddr


def _is_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host.split("%")[0])
    except ValueError:
        return False
    return True


def _is_multicast(sockaddr: Address) -> bool:
    return ipaddress.ip_address(sockaddr[0].split("%")[0]).is_multicast


def _is_wildcard(sockaddr: Address) -> bool:
    return ipaddress.ip_address(sockaddr[0].split("%")[0]).is_unspecified


def _same(a: Address | None, b: Address | None) -> bool:
    return a is not None and b is not None and a[:2] == b[:2]


def _format(sockaddr: Address) -> str:
    host = sockaddr[0]
    return f"[{host}]:{sockaddr[1]}" if ":" in host else f"{host}:{sockaddr[1]}"


@dataclass
class UdpChannel:
    original: str
    uri: ChannelUri
    family: int
    remote_data: Address | None             # where data goes (publication) / comes from (subscription endpoint)
    local_data: Address                     # where the data socket binds
    remote_control: Address | None          # where status messages go (multicast control group, MDC control)
    local_control: Address | None           # where a publication's socket receives status messages
    interface: Address | None               # multicast interface (host, 0)
    is_multicast: bool = False
    has_explicit_control: bool = False
    control_mode: str | None = None
    ttl: int = 0
    canonical_form: str = ""
    tag: int | None = None
    extra: dict = field(default_factory=dict)
    # where DATA frames get their timestamps: TIMESTAMP_RESERVED_VALUE, an offset into the payload, or TIMESTAMP_NONE
    media_rcv_timestamp_offset: int = TIMESTAMP_NONE
    channel_rcv_timestamp_offset: int = TIMESTAMP_NONE
    channel_snd_timestamp_offset: int = TIMESTAMP_NONE
    # the addresses a tagged channel must agree on with the endpoint it names (the C driver's remote_data and
    # local_data): the endpoint (wildcard when absent), and the control address or else the interface (wildcard)
    tag_remote: Address | None = None
    tag_local: Address | None = None
    has_explicit_endpoint: bool = False

    @property
    def is_wildcard(self) -> bool:
        """Neither address nor port on either side: a channel naming only a tag (aeron_udp_channel_is_wildcard)."""
        return all(a is not None and _is_wildcard(a) and a[1] == 0 for a in (self.tag_remote, self.tag_local))

    def tag_addresses_match(self, other: "UdpChannel") -> bool:
        """Whether this channel names the same endpoint and control (or interface) as ``other`` (address and port
        as resolved, as aeron_udp_channel_endpoints_match_with_override compares them)."""
        return self.is_wildcard or (_same(self.tag_remote, other.tag_remote) and _same(self.tag_local, other.tag_local))

    @property
    def is_dynamic_control_mode(self) -> bool:
        return self.control_mode == CONTROL_MODE_DYNAMIC

    @property
    def is_manual_control_mode(self) -> bool:
        return self.control_mode == CONTROL_MODE_MANUAL

    @property
    def is_multi_destination(self) -> bool:
        return self.control_mode in (CONTROL_MODE_DYNAMIC, CONTROL_MODE_MANUAL)

    @property
    def has_group_semantics(self) -> bool:
        return self.is_multicast or self.is_multi_destination

    @classmethod
    def parse(cls, channel: str, uri: ChannelUri | None = None, is_subscription: bool = False,
              is_destination: bool = False, resolver: Any = None) -> "UdpChannel":
        """Raises InvalidChannelError naming the part that does not resolve or is not allowed. A destination's
        canonical form never gets a unique suffix: removing a destination finds it by that form. ``resolver``
        (the driver's name resolver) resolves the names in ``endpoint`` and ``control``; without one the
        operating system does."""
        uri = uri if uri is not None else ChannelUri.parse(channel)
        if uri.media != "udp":
            raise InvalidChannelError("UDP channel expected", channel, uri.media)
        endpoint = uri.get("endpoint")
        control = uri.get("control")
        control_mode = uri.get("control-mode")
        if control_mode not in (None, CONTROL_MODE_MANUAL, CONTROL_MODE_DYNAMIC, CONTROL_MODE_RESPONSE):
            raise InvalidChannelError("unknown control-mode", channel, f"control-mode={control_mode}")
        if control_mode == CONTROL_MODE_DYNAMIC and control is None:
            raise InvalidChannelError("control-mode=dynamic requires a control address", channel, "control-mode")
        tags = uri.tags
        tag = tags[0] if tags else None
        if endpoint is None and control is None and control_mode not in (CONTROL_MODE_MANUAL, CONTROL_MODE_RESPONSE):
            if tag is None:
                raise InvalidChannelError("aeron:udp needs an endpoint or control address", channel, "endpoint")
        ttl_text = uri.get("ttl")
        ttl = 0
        if ttl_text is not None:
            try:
                ttl = min(255, int(ttl_text))
            except ValueError:
                raise InvalidChannelError("invalid ttl", channel, f"ttl={ttl_text}") from None
            if ttl < 0:
                raise InvalidChannelError("invalid ttl", channel, f"ttl={ttl_text}")

        interface_text = uri.get("interface")
        family = socket.AF_INET
        remote_data = remote_control = local_control = interface = control_addr = None
        is_multicast = False
        if endpoint is not None:
            family, remote_data = resolve(endpoint, channel, "endpoint", resolver=resolver)
            is_multicast = _is_multicast(remote_data)
        if interface_text is not None:
            if interface_text.startswith("{"):
                raise InvalidChannelError("interface names are not supported; give an address", channel,
                                          f"interface={interface_text}")
            host = interface_text.split("/")[0]
            _, interface = resolve(host, channel, "interface", default_port=0)

        if is_multicast:
            assert remote_data is not None
            group = ipaddress.ip_address(remote_data[0].split("%")[0])
            if group.version == 4 and int(group) & 1 == 0:
                raise InvalidChannelError("multicast data address must be odd", channel, f"endpoint={endpoint}")
            control_group = str(group + 1)
            remote_control = (control_group, remote_data[1], *remote_data[2:])
            iface = interface if interface is not None else (("0.0.0.0", 0) if family == socket.AF_INET else ("::", 0))
            interface = (iface[0], 0)
            local_data = remote_data          # receivers bind the data group's port
            local_control = remote_control    # senders bind the control group's port
        else:
            if control is not None:
                _, control_addr = resolve(control, channel, "control", resolver=resolver)
                if is_subscription:
                    remote_control = control_addr
                else:
                    local_control = control_addr
            if is_subscription:
                local_data = remote_data if remote_data is not None else (
                    interface if interface is not None else ("0.0.0.0", 0))
            else:
                local_data = local_control if local_control is not None else (
                    interface if interface is not None else (("0.0.0.0", 0) if family == socket.AF_INET
                                                              else ("::", 0)))

        # canonical form as aeron_uri_udp_canonicalise: the literal control/endpoint values where given, else the
        # resolved interface (wildcard when absent); multicast always names the resolved interface and group
        any_interface = ("0.0.0.0", 0) if family == socket.AF_INET else ("::", 0)
        if is_multicast:
            assert remote_data is not None and interface is not None
            canonical = f"UDP-{_format(interface)}-{_format(remote_data)}"
            wildcard = False
        else:
            local_text = control if control is not None else _format(interface or any_interface)
            remote_text = endpoint if endpoint is not None else _format(any_interface)
            canonical = f"UDP-{local_text}-{remote_text}"
            wildcard = (endpoint is None and control is None) or (
                remote_data is not None and remote_data[1] == 0) or (
                control is not None and _split_host_port(control, channel, "control")[1] == 0)
        if wildcard and not is_destination:
            canonical += f"#{tag}" if tag is not None else f"-{next(_unique_ids)}"
        media_rcv, channel_rcv, channel_snd = _timestamp_offsets(uri, channel)
        if is_multicast:
            tag_remote, tag_local = remote_data, interface
        else:
            tag_remote = remote_data if remote_data is not None else any_interface
            tag_local = control_addr if control_addr is not None else (
                interface if interface is not None else any_interface)
        return cls(original=channel, uri=uri, family=family, remote_data=remote_data, local_data=local_data,
                   remote_control=remote_control, local_control=local_control, interface=interface,
                   is_multicast=is_multicast, has_explicit_control=control is not None,
                   control_mode=control_mode, ttl=ttl, canonical_form=canonical, tag=tag,
                   media_rcv_timestamp_offset=media_rcv, channel_rcv_timestamp_offset=channel_rcv,
                   channel_snd_timestamp_offset=channel_snd, tag_remote=tag_remote, tag_local=tag_local,
                   has_explicit_endpoint=endpoint is not None)

    @property
    def timestamp_offsets(self) -> tuple[int, int, int]:
        """(media-rcv-ts-offset, channel-rcv-ts-offset, channel-snd-ts-offset) as offsets."""
        return (self.media_rcv_timestamp_offset, self.channel_rcv_timestamp_offset,
                self.channel_snd_timestamp_offset)

    def __str__(self) -> str:
        return self.original


def _timestamp_offsets(uri: ChannelUri, channel: str) -> tuple[int, int, int]:
    """The three timestamp offsets (aeron_driver_uri_get_timestamp_offset: `reserved` or an integer, C's strtol base
    0), refusing two that would overwrite each other's 8 bytes (aeron_udp_channel_verify_timestamp_offsets_do_not_
    overlap)."""
    offsets = []
    for key in TIMESTAMP_OFFSET_KEYS:
        text = uri.get(key)
        if text is None:
            offsets.append(TIMESTAMP_NONE)
        elif text == "reserved":
            offsets.append(TIMESTAMP_RESERVED_VALUE)
        else:
            try:
                value = int(text, 0)
            except ValueError:
                raise InvalidChannelError(f"invalid {key} (`reserved` or an offset)", channel, f"{key}={text}") \
                    from None
            if not -(1 << 31) <= value < 1 << 31:
                raise InvalidChannelError(f"invalid {key}: out of range", channel, f"{key}={text}")
            offsets.append(value)
    for (i, a), (j, b) in itertools.combinations(enumerate(offsets), 2):
        if a != TIMESTAMP_NONE and b != TIMESTAMP_NONE and abs(a - b) < 8:
            raise InvalidChannelError(f"{TIMESTAMP_OFFSET_KEYS[i]} and {TIMESTAMP_OFFSET_KEYS[j]} overlap", channel,
                                      f"{TIMESTAMP_OFFSET_KEYS[i]}, {TIMESTAMP_OFFSET_KEYS[j]}")
    return offsets[0], offsets[1], offsets[2]


def format_address(sockaddr: Address) -> str:
    """``ip:port`` as the drivers print it in counter labels."""
    return _format(sockaddr)
