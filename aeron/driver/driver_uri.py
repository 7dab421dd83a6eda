# SPDX-License-Identifier: Apache-2.0
"""Channel URI parameters as the driver reads them (aeron_driver_uri.c): every bad value is a CommandError with
INVALID_CHANNEL naming the parameter, which the conductor answers to the client."""
from __future__ import annotations

from collections.abc import Callable

from aeron.common.channel_uri import ChannelUri, parse_duration_ns
from aeron.driver.driver_common import CommandError
from aeron.common.constants import INT64_MAX
from aeron.common.errors import ConfigurationError, ErrorCode


def parse_channel(channel: str) -> ChannelUri:
    try:
        return ChannelUri.parse(channel)
    except ConfigurationError as exc:
        raise CommandError(ErrorCode.INVALID_CHANNEL, f"invalid channel {channel!r}: {exc}") from exc


def uri_int(uri: ChannelUri, key: str, parse: Callable[[str], int], default: int | None) -> int | None:
    """``uri``'s ``key`` through ``parse`` (int, parse_size, ...), or ``default`` when absent."""
    text = uri.get(key)
    if text is None:
        return default
    try:
        return parse(text)
    except (ValueError, ConfigurationError) as exc:
        raise CommandError(ErrorCode.INVALID_CHANNEL, f"invalid {key}={text!r}: {exc}") from exc


def uri_duration(uri: ChannelUri, key: str, default: int) -> int:
    """A duration parameter in nanoseconds (``5s``, ``100ms``, ``250us``, plain ns)."""
    value = uri_int(uri, key, parse_duration_ns, default)
    return default if value is None else value


def uri_bool(uri: ChannelUri, key: str, default: bool) -> bool:
    """A boolean parameter: any prefix of ``true`` or ``false``."""
    text = uri.get(key)
    if text is None:
        return default
    value = text.strip().lower()
    if value and "true".startswith(value):
        return True
    if value and "false".startswith(value):
        return False
    raise CommandError(ErrorCode.INVALID_CHANNEL, f"invalid {key}={text!r}: expected true or false")


PROTOTYPE_CORRELATION_ID = -2            # response-correlation-id=prototype (AERON_URI_PROTOTYPE_VALUE_CORRELATION_ID)


def uri_response_correlation_id(uri: ChannelUri) -> int | None:
    """``response-correlation-id``: None when absent (or -1), PROTOTYPE_CORRELATION_ID for `prototype`, else the id
    (aeron_driver_uri_get_response_correlation_id; GENERIC_ERROR as the C driver's EINVAL)."""
    text = uri.get("response-correlation-id")
    if text is None:
        return None
    if text == "prototype":
        return PROTOTYPE_CORRELATION_ID
    try:
        value = int(text)
    except ValueError:
        value = -3
    if value < -1 or value > INT64_MAX:
        raise CommandError(ErrorCode.GENERIC_ERROR, "invalid response-correlation-id, must be a number greater "
                                                    "than or equal to -1, or 'prototype'")
    return None if value == -1 else value


def uri_untethered_timeouts(uri: ChannelUri, ctx) -> tuple[int, int, int]:
    """A channel's untethered window limit, linger and resting timeouts, else the driver's (the linger timeout
    defaults to the window limit timeout, as in Aeron)."""
    window_limit_ns = uri_duration(uri, "untethered-window-limit-timeout", ctx.untethered_window_limit_timeout_ns)
    return (window_limit_ns, uri_duration(uri, "untethered-linger-timeout", window_limit_ns),
            uri_duration(uri, "untethered-resting-timeout", ctx.untethered_resting_timeout_ns))
