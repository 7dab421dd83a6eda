# SPDX-License-Identifier: Apache-2.0
"""Client-side checks of a channel's parameter values, for publications and subscriptions alike.

A bad value raises :class:`InvalidChannelError` naming the parameter and its value before any command reaches
the driver, whichever driver it is: the C driver answers some of these with GENERIC_ERROR and a trace of its
source lines, and ignores others on subscriptions (``mtu``, ``term-length``, ``sparse``), where a typo would go
unnoticed. Only the syntax and ranges every driver agrees on are checked here; what one driver supports
(response channels, transport security, publication reuse by tag) stays the driver's decision, and so do
host names, which only the driver resolves.

Cold path: runs once per add_publication / add_subscription.
"""
from __future__ import annotations

import re

from aeron.common.channel_uri import ChannelUri, parse_duration_ns
from aeron.common.constants import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN
from aeron.common.errors import ConfigurationError, InvalidChannelError

__all__ = ["validate_channel"]

_SIZE_KEYS = ("so-sndbuf", "so-rcvbuf", "rcv-wnd", "pub-wnd")
_DURATION_KEYS = ("linger", "nak-delay", "untethered-window-limit-timeout", "untethered-linger-timeout",
                  "untethered-resting-timeout")
_BOOL_KEYS = ("reliable", "sparse", "eos", "tether", "rejoin", "ssc", "ats")
_TIMESTAMP_OFFSET_KEYS = ("media-rcv-ts-offset", "channel-rcv-ts-offset", "channel-snd-ts-offset")
_CHOICES = {
    "control-mode": ("manual", "dynamic", "response"),
    "group": ("true", "false", "infer"),
    "cc": ("static", "cubic"),
}
_ADDRESS_KEYS = ("endpoint", "control", "response-endpoint")
_FLOW_CONTROL_STRATEGIES = ("max", "min", "tagged")
_INT_RE = re.compile(r"[+-]?[0-9]+")
_PORT_RE = re.compile(r"[0-9]{1,5}")


def _error(uri: ChannelUri, reason: str, key: str) -> InvalidChannelError:
    return InvalidChannelError(reason, str(uri), f"{key}={uri.get(key)}")


def _int_in(uri: ChannelUri, key: str, low: int, high: int, what: str) -> int | None:
    text = uri.get(key)
    if text is None:
        return None
    if not _INT_RE.fullmatch(text) or not low <= int(text) <= high:
        raise _error(uri, f"{key} must be {what}", key)
    return int(text)


def _check_address(uri: ChannelUri, key: str) -> None:
    """``host:port`` or ``[ipv6]:port`` with a port in 0..65535; the host itself is the driver's to resolve."""
    text = uri.get(key)
    if text is None:
        return
    if text.startswith("["):
        close = text.find("]")
        if close < 0 or not text[close + 1:].startswith(":"):
            raise _error(uri, f"{key} must be [ipv6-address]:port", key)
        host, port = text[1:close], text[close + 2:]
    else:
        host, sep, port = text.rpartition(":")
        if not sep:
            raise _error(uri, f"{key} must be host:port", key)
    if not host:
        raise _error(uri, f"{key} has no host", key)
    if not _PORT_RE.fullmatch(port) or int(port) > 65535:
        raise _error(uri, f"{key} port must be a number in 0..65535", key)


def _check_flow_control(uri: ChannelUri) -> None:
    """``max``, ``min`` or ``tagged``, then options ``,g:<tag>[/<min size>]``, ``,t:<duration>``, ``,rrwm:<n>``."""
    text = uri.get("fc")
    if text is None:
        return
    strategy, *options = text.split(",")
    if strategy not in _FLOW_CONTROL_STRATEGIES:
        raise _error(uri, "fc must start with max, min or tagged", "fc")
    for option in options:
        name, sep, value = option.partition(":")
        if name == "g" and sep:
            tag, _, size = value.partition("/")
            valid = (not tag or _INT_RE.fullmatch(tag) is not None) and (not size or size.isdigit())
        elif name == "t" and sep:
            try:
                parse_duration_ns(value)
                valid = True
            except ConfigurationError:
                valid = False
        elif name == "rrwm" and sep:
            valid = value.isdigit()
        else:
            valid = False
        if not valid:
            raise _error(uri, f"invalid fc option {option!r} (g:<tag>[/<min size>], t:<duration> or rrwm:<n>)",
                         "fc")


def validate_channel(channel: str) -> ChannelUri:
    """Parse ``channel`` and check every parameter value it carries; returns the parsed URI.

    Raises InvalidChannelError (a ValueError) naming the first bad parameter and its value.
    """
    uri = ChannelUri.parse(channel)
    mtu = uri.mtu()                                  # > 32, <= 65504, multiple of 32
    term_length = uri.term_length()                  # power of two in [64 KiB, 1 GiB]
    uri.initial_position(term_length)                # init-term-id, term-id, term-offset: all or none, in range
    if not uri.is_session_id_tagged():
        uri.session_id()                             # an int32 (tag:<n> was checked by parse)
    uri.max_resend()
    uri.response_correlation_id()
    uri.stream_id()
    _int_in(uri, "gtag", INT64_MIN, INT64_MAX, "an int64")
    _int_in(uri, "ttl", 0, 255, "an integer in 0..255")
    for key in _SIZE_KEYS:
        value = uri.get_size(key)
        if value is not None and value <= 0:
            raise _error(uri, f"{key} must be > 0", key)
    for key in _DURATION_KEYS:
        uri.get_duration_ns(key)
    for key in _BOOL_KEYS:
        uri.get_bool(key)
    for key, choices in _CHOICES.items():
        value = uri.get(key)
        if value is not None and value not in choices:
            raise _error(uri, f"{key} must be one of {', '.join(choices)}", key)
    for key in _TIMESTAMP_OFFSET_KEYS:
        if uri.get(key) != "reserved":
            _int_in(uri, key, INT32_MIN, INT32_MAX, "an int32 or 'reserved'")
    if uri.get("control-mode") == "dynamic" and uri.get("control") is None:
        raise _error(uri, "control-mode=dynamic needs a control address", "control-mode")
    if uri.media == "udp":
        for key in _ADDRESS_KEYS:
            _check_address(uri, key)
    _check_flow_control(uri)
    window = uri.publication_window_length()
    if window is not None:
        if mtu is not None and window < mtu:
            raise _error(uri, f"pub-wnd must not be below the mtu {mtu}", "pub-wnd")
        if term_length is not None and window > term_length // 2:
            raise _error(uri, f"pub-wnd must not exceed half the term-length ({term_length // 2})", "pub-wnd")
    receiver_window = uri.receiver_window_length()
    socket_rcvbuf = uri.get_size("so-rcvbuf")
    if receiver_window is not None and socket_rcvbuf is not None and receiver_window > socket_rcvbuf:
        raise _error(uri, f"rcv-wnd must not exceed so-rcvbuf ({socket_rcvbuf})", "rcv-wnd")
    return uri
