# SPDX-License-Identifier: Apache-2.0
"""Channel URIs (``aeron:ipc``, ``aeron:udp?endpoint=...``, ``aeron-spy:aeron:udp?...``) and value syntax.

Port of ChannelUri (Java) / aeron_uri.c (C) with a stricter grammar: every
parameter is ``key=value`` with a non-empty key and value, separated by ``|``; a key given twice, an empty
key or value, a missing ``=``, an unknown media, a missing ``aeron:`` scheme or a malformed ``tags`` /
``session-id=tag:`` value raises :class:`InvalidChannelError` naming the bad part. (Java keeps the last of a
duplicated key and accepts empty values; C keeps the first and rejects empty values.)

Parameter values are kept as text, as upstream does, and typed getters parse and validate them on demand,
so the driver can report a bad value for the command that used it. ``parse_size`` and ``parse_duration_ns``
implement Aeron's value syntax (SystemUtil.parseSize / parseDuration) and are shared with driver configuration parsing.

Cold path: plain Python.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from types import MappingProxyType

from aeron._core.logbuffer import FRAME_ALIGNMENT, MAX_UDP_PAYLOAD_LENGTH, TERM_MAX_LENGTH, TERM_MIN_LENGTH
from aeron._core.logbuffer import HEADER_LENGTH as DATA_HEADER_LENGTH
from aeron.common.constants import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN
from aeron.common.errors import ConfigurationError, InvalidArgumentError, InvalidChannelError

__all__ = [
    "ChannelUri", "parse_size", "parse_duration_ns", "InvalidChannelError",
    "MAX_URI_LENGTH", "AERON_SCHEME", "AERON_PREFIX", "SPY_QUALIFIER", "SPY_PREFIX", "IPC_MEDIA", "UDP_MEDIA",
    "IPC_CHANNEL", "TAG_PREFIX", "INVALID_TAG",
]

MAX_URI_LENGTH = 4095
AERON_SCHEME = "aeron"
AERON_PREFIX = "aeron:"
SPY_QUALIFIER = "aeron-spy"
SPY_PREFIX = "aeron-spy:"
IPC_MEDIA = "ipc"
UDP_MEDIA = "udp"
IPC_CHANNEL = "aeron:ipc"
TAG_PREFIX = "tag:"
INVALID_TAG = -1
MEDIA = (UDP_MEDIA, IPC_MEDIA)

# Parameter names, as CommonContext.*_PARAM_NAME.
ENDPOINT_PARAM_NAME = "endpoint"
INTERFACE_PARAM_NAME = "interface"
INITIAL_TERM_ID_PARAM_NAME = "init-term-id"
TERM_ID_PARAM_NAME = "term-id"
TERM_OFFSET_PARAM_NAME = "term-offset"
TERM_LENGTH_PARAM_NAME = "term-length"
MTU_LENGTH_PARAM_NAME = "mtu"
TTL_PARAM_NAME = "ttl"
MDC_CONTROL_PARAM_NAME = "control"
MDC_CONTROL_MODE_PARAM_NAME = "control-mode"
SESSION_ID_PARAM_NAME = "session-id"
LINGER_PARAM_NAME = "linger"
RELIABLE_STREAM_PARAM_NAME = "reliable"
TAGS_PARAM_NAME = "tags"
SPARSE_PARAM_NAME = "sparse"
ALIAS_PARAM_NAME = "alias"
EOS_PARAM_NAME = "eos"
TETHER_PARAM_NAME = "tether"
GROUP_PARAM_NAME = "group"
REJOIN_PARAM_NAME = "rejoin"
CONGESTION_CONTROL_PARAM_NAME = "cc"
FLOW_CONTROL_PARAM_NAME = "fc"
GROUP_TAG_PARAM_NAME = "gtag"
SPIES_SIMULATE_CONNECTION_PARAM_NAME = "ssc"
SOCKET_SNDBUF_PARAM_NAME = "so-sndbuf"
SOCKET_RCVBUF_PARAM_NAME = "so-rcvbuf"
RECEIVER_WINDOW_LENGTH_PARAM_NAME = "rcv-wnd"
MEDIA_RCV_TIMESTAMP_OFFSET_PARAM_NAME = "media-rcv-ts-offset"
CHANNEL_RECEIVE_TIMESTAMP_OFFSET_PARAM_NAME = "channel-rcv-ts-offset"
CHANNEL_SEND_TIMESTAMP_OFFSET_PARAM_NAME = "channel-snd-ts-offset"
RESPONSE_ENDPOINT_PARAM_NAME = "response-endpoint"
RESPONSE_CORRELATION_ID_PARAM_NAME = "response-correlation-id"
NAK_DELAY_PARAM_NAME = "nak-delay"
UNTETHERED_WINDOW_LIMIT_TIMEOUT_PARAM_NAME = "untethered-window-limit-timeout"
UNTETHERED_LINGER_TIMEOUT_PARAM_NAME = "untethered-linger-timeout"
UNTETHERED_RESTING_TIMEOUT_PARAM_NAME = "untethered-resting-timeout"
MAX_RESEND_PARAM_NAME = "max-resend"
STREAM_ID_PARAM_NAME = "stream-id"
PUBLICATION_WINDOW_LENGTH_PARAM_NAME = "pub-wnd"
ATS_PARAM_NAME = "ats"

CONTROL_MODE_MANUAL = "manual"
CONTROL_MODE_DYNAMIC = "dynamic"
CONTROL_MODE_RESPONSE = "response"
# response-correlation-id=prototype is stored as -2 (aeron_driver_uri.c).
RESPONSE_CORRELATION_ID_PROTOTYPE = -2

# Limits checked by the typed getters, as the C driver checks them; the log's (term lengths, frame alignment,
# header and UDP payload lengths) are the log buffer's own, imported above.
MAX_RESEND_MAX = 256

# C prints these first, in this order, then every other parameter in the order given (aeron_uri_udp_sprint,
# aeron_uri_ipc_sprint); the canonical string keeps that order.
_LEADING_KEYS = {
    UDP_MEDIA: (ENDPOINT_PARAM_NAME, INTERFACE_PARAM_NAME, MDC_CONTROL_PARAM_NAME, MDC_CONTROL_MODE_PARAM_NAME,
                TAGS_PARAM_NAME, TTL_PARAM_NAME),
    IPC_MEDIA: (TAGS_PARAM_NAME,),
}

_SIZE_RE = re.compile(r"([0-9]+)([kKmMgG]?)")
_SIZE_SHIFT = {"": 0, "k": 10, "m": 20, "g": 30}
# ASCII: under plain IGNORECASE the long s (U+017F) would match "s"
_DURATION_RE = re.compile(r"([0-9]+)(ns|us|ms|s)?", re.IGNORECASE | re.ASCII)
_MAX_DIGITS = 20                        # more significant digits than any int64 has: too large, whatever they are
_DURATION_SCALE = {None: 1, "ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
_INT_RE = re.compile(r"[+-]?[0-9]+")
_TAG_RE = re.compile(r"[0-9]+")


def _digits_value(digits: str) -> int | None:
    # int() refuses strings of more than 4,300 digits with a bare ValueError: settle huge numbers first
    significant = digits.lstrip("0")
    return None if len(significant) > _MAX_DIGITS else int(significant or "0")


def _decimal(text: str) -> int | None:
    """A signed decimal integer, None when it is not one; huge values come back out of any int64 range."""
    if not _INT_RE.fullmatch(text):
        return None
    number = _digits_value(text.lstrip("+-"))
    if number is None:
        number = INT64_MAX + 1
    return -number if text.startswith("-") else number


def parse_size(text: str) -> int:
    """Parse a size: a decimal integer with an optional ``k``/``m``/``g`` suffix (powers of 1024, either case).

    Port of aeron_parse_size64 / SystemUtil.parseSize, but strict: no sign, no trailing text.
    Raises ConfigurationError for anything else or a result above INT64_MAX.
    """
    match = _SIZE_RE.fullmatch(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise ConfigurationError(f"invalid size {text!r} (expected digits with an optional k, m or g suffix)")
    number = _digits_value(match.group(1))
    value = INT64_MAX + 1 if number is None else number << _SIZE_SHIFT[match.group(2).lower()]
    if value > INT64_MAX:
        raise ConfigurationError(f"size {text!r} is too large (maximum {INT64_MAX})")
    return value


def parse_duration_ns(text: str) -> int:
    """Parse a duration in nanoseconds: an integer with an optional ``ns``/``us``/``ms``/``s`` suffix.

    Port of aeron_parse_duration_ns: a value with a unit that overflows saturates to INT64_MAX; a plain number
    above INT64_MAX is an error (as strtoll's ERANGE there). Raises ConfigurationError on bad syntax.
    """
    match = _DURATION_RE.fullmatch(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise ConfigurationError(f"invalid duration {text!r} (expected digits with an optional ns, us, ms or s suffix)")
    number = _digits_value(match.group(1))
    value = INT64_MAX + 1 if number is None else number
    unit = match.group(2)
    if unit is None:
        if value > INT64_MAX:
            raise ConfigurationError(f"duration {text!r} is too large (maximum {INT64_MAX} ns)")
        return value
    return min(value * _DURATION_SCALE[unit.lower()], INT64_MAX)


def _is_power_of_two(value: int) -> bool:
    return value > 0 and (value & (value - 1)) == 0


class ChannelUri:
    """A parsed channel URI: optional ``aeron-spy`` prefix, media (``udp``/``ipc``) and ordered parameters.

    Build one with :meth:`parse` or the constructor; ``str(uri)`` gives the canonical string. Instances are
    mutable through :meth:`put` / :meth:`remove` (which validate as the parser does) and so are not hashable.
    """

    __slots__ = ("_prefix", "_media", "_params", "_channel_tag", "_entity_tag")

    def __init__(self, media: str, params: Mapping[str, str] | Iterable[tuple[str, str]] | None = None,
                 prefix: str = "") -> None:
        """A URI of ``media`` (``udp`` or ``ipc``) with ``params`` in order, spy when ``prefix`` is ``aeron-spy``.

        Raises InvalidChannelError for an unknown media or prefix, a duplicate key or a value the parser refuses.
        """
        if prefix not in ("", SPY_QUALIFIER):
            raise InvalidChannelError("unknown channel prefix (expected 'aeron-spy' or none)", prefix, prefix)
        if media not in MEDIA:
            raise InvalidChannelError("unknown media (expected 'udp' or 'ipc')", str(media), str(media))
        self._prefix = prefix
        self._media = media
        self._params: dict[str, str] = {}
        self._channel_tag: int | None = None
        self._entity_tag: int | None = None
        items = params.items() if isinstance(params, Mapping) else (params or ())
        for key, value in items:
            if key in self._params:
                raise InvalidChannelError("duplicate key", self._describe(), f"{key}={value}")
            self.put(key, value)

    # ---- parsing -------------------------------------------------------------------------------------------

    @classmethod
    def parse(cls, text: str) -> "ChannelUri":
        """Parse a channel string. Raises InvalidChannelError (a ConfigurationError) naming the bad part."""
        if not isinstance(text, str):
            raise InvalidChannelError(f"channel must be a str, not {type(text).__name__}", repr(text), "")
        if len(text) > MAX_URI_LENGTH:
            raise InvalidChannelError(
                f"URI length ({len(text)}) exceeds max supported length ({MAX_URI_LENGTH})", text,
                text[MAX_URI_LENGTH:MAX_URI_LENGTH + 20])
        position = 0
        prefix = ""
        if text.startswith(SPY_PREFIX):
            prefix = SPY_QUALIFIER
            position = len(SPY_PREFIX)
        if not text.startswith(AERON_PREFIX, position):
            head = text[position:].split("?", 1)[0]
            raise InvalidChannelError("channel must start with 'aeron:' (or 'aeron-spy:aeron:')", text, head)
        position += len(AERON_PREFIX)
        media, question, params_text = text[position:].partition("?")
        if media not in MEDIA:
            raise InvalidChannelError("unknown media (expected 'udp' or 'ipc')", text, media or text)
        uri = cls.__new__(cls)
        uri._prefix = prefix
        uri._media = media
        uri._params = {}
        uri._channel_tag = None
        uri._entity_tag = None
        if question:
            if not params_text:
                raise InvalidChannelError("'?' must be followed by parameters", text, "?")
            for param in params_text.split("|"):
                if not param:
                    raise InvalidChannelError("empty parameter (a '|' with nothing on one side)", text, "|")
                key, equals, value = param.partition("=")
                if not equals:
                    raise InvalidChannelError("parameter has no '=' (expected key=value)", text, param)
                if not key:
                    raise InvalidChannelError("empty key", text, param)
                if not value:
                    raise InvalidChannelError("empty value", text, param)
                if key in uri._params:
                    raise InvalidChannelError("duplicate key", text, param)
                uri._check_and_set(key, value, text)
        elif media == UDP_MEDIA:
            # aeron_uri_parse refuses 'aeron:udp' without '?'; Java accepts it but its driver then fails.
            raise InvalidChannelError("'aeron:udp' needs parameters ('aeron:udp?endpoint=...')", text, "aeron:udp")
        return uri

    def _describe(self) -> str:
        return str(self)

    def _check_and_set(self, key: str, value: str, channel: str) -> None:
        part = f"{key}={value}"
        if key == TAGS_PARAM_NAME:
            channel_tag, comma, entity_tag = value.partition(",")
            if (not _valid_tag(channel_tag)) or (comma and not _valid_tag(entity_tag)):
                raise InvalidChannelError(
                    "invalid tags (expected channelTag[,entityTag], unsigned decimal)", channel, part)
            self._channel_tag = _digits_value(channel_tag)
            self._entity_tag = _digits_value(entity_tag) if comma else None
        elif key == SESSION_ID_PARAM_NAME and value.startswith(TAG_PREFIX):
            if not _valid_tag(value[len(TAG_PREFIX):]):
                raise InvalidChannelError("invalid session-id tag (expected tag:<unsigned decimal>)", channel, part)
        self._params[key] = value

    # ---- structure -----------------------------------------------------------------------------------------

    @property
    def prefix(self) -> str:
        """``"aeron-spy"`` for a spy channel, else ``""``."""
        return self._prefix

    @property
    def media(self) -> str:
        """``"udp"`` or ``"ipc"``."""
        return self._media

    @property
    def scheme(self) -> str:
        """Always ``aeron``."""
        return AERON_SCHEME

    @property
    def is_udp(self) -> bool:
        """True for ``aeron:udp``."""
        return self._media == UDP_MEDIA

    @property
    def is_ipc(self) -> bool:
        """True for ``aeron:ipc``."""
        return self._media == IPC_MEDIA

    @property
    def is_spy(self) -> bool:
        """True for an ``aeron-spy:`` channel (a subscription that reads a local publication)."""
        return self._prefix == SPY_QUALIFIER

    @property
    def params(self) -> Mapping[str, str]:
        """Read-only view of the parameters in the order given."""
        return MappingProxyType(self._params)

    def get(self, key: str, default: str | None = None) -> str | None:
        """The raw text of a parameter, or ``default`` when absent."""
        return self._params.get(key, default)

    def has(self, key: str) -> bool:
        """True when the parameter is present."""
        return key in self._params

    def __contains__(self, key: object) -> bool:
        """``key in uri``: as :meth:`has`."""
        return key in self._params

    def __iter__(self) -> Iterator[str]:
        """The parameter keys in order."""
        return iter(self._params)

    def __len__(self) -> int:
        """The number of parameters."""
        return len(self._params)

    def put(self, key: str, value: str) -> str | None:
        """Set a parameter (validated as the parser does); returns the previous value or None."""
        value = str(value)
        if not isinstance(key, str) or not key or "=" in key or "|" in key:
            raise InvalidChannelError("invalid key (non-empty, no '=' or '|')", self._describe(), str(key))
        if not value or "|" in value:
            raise InvalidChannelError("invalid value (non-empty, no '|')", self._describe(), f"{key}={value}")
        previous = self._params.get(key)
        self._check_and_set(key, value, self._describe())
        return previous

    def remove(self, key: str) -> str | None:
        """Remove a parameter; returns its value or None."""
        if key == TAGS_PARAM_NAME:
            self._channel_tag = self._entity_tag = None
        return self._params.pop(key, None)

    @property
    def channel_tag(self) -> int | None:
        """First number of ``tags=channelTag[,entityTag]``, or None."""
        return self._channel_tag

    @property
    def entity_tag(self) -> int | None:
        """Second number of ``tags=channelTag,entityTag`` (the publication/subscription tag), or None."""
        return self._entity_tag

    @property
    def tags(self) -> tuple[int | None, int | None]:
        """``(channel_tag, entity_tag)``, each None when absent."""
        return (self._channel_tag, self._entity_tag)

    @property
    def alias(self) -> str | None:
        """The informational ``alias`` parameter, or None."""
        return self._params.get(ALIAS_PARAM_NAME)

    @property
    def endpoint(self) -> str | None:
        """The ``endpoint`` parameter (``host:port``), or None."""
        return self._params.get(ENDPOINT_PARAM_NAME)

    @property
    def control_mode(self) -> str | None:
        """The ``control-mode`` parameter (``manual``, ``dynamic``, ...), or None."""
        return self._params.get(MDC_CONTROL_MODE_PARAM_NAME)

    def replace_endpoint_wildcard_port(self, resolved_endpoint: str) -> None:
        """Fill a wildcard endpoint (``host:0``) with the port of ``resolved_endpoint`` (``host:port`` as the
        driver bound it), keeping the host as written; with no endpoint, set it to ``resolved_endpoint``; leave
        any other endpoint as it is. Raises InvalidArgumentError if ``resolved_endpoint`` has no port or port 0."""
        separator = resolved_endpoint.rfind(":")
        if separator == -1:
            raise InvalidArgumentError(f"no port in resolved endpoint {resolved_endpoint!r}")
        if resolved_endpoint.endswith(":0"):
            raise InvalidArgumentError(f"wildcard port in resolved endpoint {resolved_endpoint!r}")
        existing = self._params.get(ENDPOINT_PARAM_NAME)
        if existing is None:
            self.put(ENDPOINT_PARAM_NAME, resolved_endpoint)
        elif existing.endswith(":0"):
            self.put(ENDPOINT_PARAM_NAME, existing[:-2] + resolved_endpoint[separator:])

    # ---- canonical form ------------------------------------------------------------------------------------

    def __str__(self) -> str:
        """The canonical string: media, then the leading keys in C's order, then the rest as given."""
        head = (self._prefix + ":" if self._prefix else "") + AERON_PREFIX + self._media
        if not self._params:
            return head
        leading = _LEADING_KEYS[self._media]
        ordered = [f"{key}={self._params[key]}" for key in leading if key in self._params]
        ordered += [f"{key}={value}" for key, value in self._params.items() if key not in leading]
        return head + "?" + "|".join(ordered)

    def __repr__(self) -> str:
        """``ChannelUri.parse('<canonical string>')``."""
        return f"ChannelUri.parse({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        """Same prefix, media and parameters (order of parameters aside)."""
        if not isinstance(other, ChannelUri):
            return NotImplemented
        return self._prefix == other._prefix and self._media == other._media and self._params == other._params

    __hash__ = None  # type: ignore[assignment]  # mutable

    def copy(self) -> "ChannelUri":
        """An independent copy."""
        uri = ChannelUri.__new__(ChannelUri)
        uri._prefix, uri._media, uri._params = self._prefix, self._media, dict(self._params)
        uri._channel_tag, uri._entity_tag = self._channel_tag, self._entity_tag
        return uri

    # ---- typed getters (None when the parameter is absent) -------------------------------------------------

    def _error(self, reason: str, key: str) -> InvalidChannelError:
        return InvalidChannelError(reason, str(self), f"{key}={self._params[key]}")

    def get_int32(self, key: str) -> int | None:
        """A decimal int32 parameter (Java's Integer.parseInt; C's strtol would also take hex and octal)."""
        value = self._params.get(key)
        if value is None:
            return None
        number = _decimal(value)
        if number is None or not INT32_MIN <= number <= INT32_MAX:
            raise self._error("not an int32", key)
        return number

    def get_int64(self, key: str) -> int | None:
        """A decimal int64 parameter."""
        value = self._params.get(key)
        if value is None:
            return None
        number = _decimal(value)
        if number is None or not INT64_MIN <= number <= INT64_MAX:
            raise self._error("not an int64", key)
        return number

    def get_size(self, key: str) -> int | None:
        """A size parameter (``64k``, ``1m``, ``1408``)."""
        value = self._params.get(key)
        if value is None:
            return None
        try:
            return parse_size(value)
        except ConfigurationError as error:
            raise self._error(f"invalid size ({error})", key) from None

    def get_duration_ns(self, key: str) -> int | None:
        """A duration parameter in nanoseconds (``5s``, ``100ms``, ``250us``, ``1000``)."""
        value = self._params.get(key)
        if value is None:
            return None
        try:
            return parse_duration_ns(value)
        except ConfigurationError as error:
            raise self._error(f"invalid duration ({error})", key) from None

    def get_bool(self, key: str) -> bool | None:
        """A boolean parameter. As aeron_uri_get_bool, the value must start with ``true`` or ``false``."""
        value = self._params.get(key)
        if value is None:
            return None
        if value.startswith("true"):
            return True
        if value.startswith("false"):
            return False
        raise self._error("not a boolean (expected true or false)", key)

    def term_length(self) -> int | None:
        """``term-length``: a size, power of two in [64 KiB, 1 GiB]."""
        value = self.get_size(TERM_LENGTH_PARAM_NAME)
        if value is not None and not (_is_power_of_two(value) and TERM_MIN_LENGTH <= value <= TERM_MAX_LENGTH):
            raise self._error(
                f"term-length must be a power of two in [{TERM_MIN_LENGTH}, {TERM_MAX_LENGTH}]", TERM_LENGTH_PARAM_NAME)
        return value

    def mtu(self) -> int | None:
        """``mtu``: a size, > 32, <= 65504 and a multiple of 32."""
        value = self.get_size(MTU_LENGTH_PARAM_NAME)
        if value is not None and not (DATA_HEADER_LENGTH < value <= MAX_UDP_PAYLOAD_LENGTH
                                      and value % FRAME_ALIGNMENT == 0):
            raise self._error(
                f"mtu must be > {DATA_HEADER_LENGTH}, <= {MAX_UDP_PAYLOAD_LENGTH} and a multiple of {FRAME_ALIGNMENT}",
                MTU_LENGTH_PARAM_NAME)
        return value

    def session_id(self) -> int | None:
        """``session-id`` as an int32. A ``tag:<n>`` value raises here: read it with :meth:`session_id_tag`."""
        value = self._params.get(SESSION_ID_PARAM_NAME)
        if value is not None and value.startswith(TAG_PREFIX):
            raise self._error("session-id refers to a tagged publication (use session_id_tag())",
                              SESSION_ID_PARAM_NAME)
        return self.get_int32(SESSION_ID_PARAM_NAME)

    def is_session_id_tagged(self) -> bool:
        """True when ``session-id`` is ``tag:<n>``."""
        value = self._params.get(SESSION_ID_PARAM_NAME)
        return value is not None and value.startswith(TAG_PREFIX)

    def session_id_tag(self) -> int | None:
        """The ``n`` of ``session-id=tag:<n>``, or None when absent or not tagged."""
        value = self._params.get(SESSION_ID_PARAM_NAME)
        if value is None or not value.startswith(TAG_PREFIX):
            return None
        return _digits_value(value[len(TAG_PREFIX):])

    def linger_ns(self) -> int | None:
        """``linger``: publication linger timeout in nanoseconds."""
        return self.get_duration_ns(LINGER_PARAM_NAME)

    def initial_position(self, term_length: int | None = None) -> tuple[int, int, int] | None:
        """``(init-term-id, term-id, term-offset)``, all three or None when none is given.

        ``term_length`` (default: this URI's ``term-length``, if any) bounds ``term-offset``, which must also
        be a multiple of 32; ``term-id - init-term-id`` must not be negative (wrap-aware), as the C driver checks.
        """
        present = [key for key in (INITIAL_TERM_ID_PARAM_NAME, TERM_ID_PARAM_NAME, TERM_OFFSET_PARAM_NAME)
                   if key in self._params]
        if not present:
            return None
        if len(present) != 3:
            raise InvalidChannelError(
                "init-term-id, term-id and term-offset must be used as a complete set", str(self),
                "|".join(f"{key}={self._params[key]}" for key in present))
        initial_term_id = self.get_int32(INITIAL_TERM_ID_PARAM_NAME)
        term_id = self.get_int32(TERM_ID_PARAM_NAME)
        term_offset = self.get_size(TERM_OFFSET_PARAM_NAME)
        assert initial_term_id is not None and term_id is not None and term_offset is not None
        difference = ((term_id - initial_term_id + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)
        if difference < 0:
            raise InvalidChannelError(
                "term-id must not be before init-term-id", str(self),
                f"{INITIAL_TERM_ID_PARAM_NAME}={initial_term_id}|{TERM_ID_PARAM_NAME}={term_id}")
        if term_length is None:
            term_length = self.term_length()
        if term_length is not None and term_offset > term_length:
            raise self._error(f"term-offset must not exceed the term length {term_length}", TERM_OFFSET_PARAM_NAME)
        if term_offset % FRAME_ALIGNMENT != 0:
            raise self._error(f"term-offset must be a multiple of {FRAME_ALIGNMENT}", TERM_OFFSET_PARAM_NAME)
        return (initial_term_id, term_id, term_offset)

    def max_resend(self) -> int | None:
        """``max-resend``: 1..256."""
        value = self.get_size(MAX_RESEND_PARAM_NAME)
        if value is not None and not 1 <= value <= MAX_RESEND_MAX:
            raise self._error(f"max-resend must be in [1, {MAX_RESEND_MAX}]", MAX_RESEND_PARAM_NAME)
        return value

    def publication_window_length(self) -> int | None:
        """``pub-wnd`` as a size (the driver checks it against mtu and term length / 2)."""
        return self.get_size(PUBLICATION_WINDOW_LENGTH_PARAM_NAME)

    def receiver_window_length(self) -> int | None:
        """``rcv-wnd`` as a size."""
        return self.get_size(RECEIVER_WINDOW_LENGTH_PARAM_NAME)

    def stream_id(self) -> int | None:
        """``stream-id`` as an int32, or None."""
        return self.get_int32(STREAM_ID_PARAM_NAME)

    def response_correlation_id(self) -> int | None:
        """``response-correlation-id``: int64 >= -1, or ``prototype`` (returned as -2)."""
        value = self._params.get(RESPONSE_CORRELATION_ID_PARAM_NAME)
        if value == "prototype":
            return RESPONSE_CORRELATION_ID_PROTOTYPE
        result = self.get_int64(RESPONSE_CORRELATION_ID_PARAM_NAME)
        if result is not None and result < -1:
            raise self._error("response-correlation-id must be >= -1 or 'prototype'", RESPONSE_CORRELATION_ID_PARAM_NAME)
        return result

    def sparse(self) -> bool | None:
        """``sparse``: whether log files are sparse, or None."""
        return self.get_bool(SPARSE_PARAM_NAME)

    def reliable(self) -> bool | None:
        """``reliable``: False lets a subscription skip lost data instead of NAKing it, or None."""
        return self.get_bool(RELIABLE_STREAM_PARAM_NAME)

    def tether(self) -> bool | None:
        """``tether``: False lets a slow subscription fall behind without holding up the publication, or None."""
        return self.get_bool(TETHER_PARAM_NAME)

    def rejoin(self) -> bool | None:
        """``rejoin``: whether a subscription rejoins a stream after its image timed out, or None."""
        return self.get_bool(REJOIN_PARAM_NAME)

    def eos(self) -> bool | None:
        """``eos``: whether closing the publication signals end of stream, or None."""
        return self.get_bool(EOS_PARAM_NAME)

    def spies_simulate_connection(self) -> bool | None:
        """``ssc``: whether a spy alone counts as a connected subscriber, or None."""
        return self.get_bool(SPIES_SIMULATE_CONNECTION_PARAM_NAME)


def _valid_tag(text: str) -> bool:
    if _TAG_RE.fullmatch(text) is None:
        return False
    value = _digits_value(text)
    return value is not None and value <= INT64_MAX
