# SPDX-License-Identifier: Apache-2.0
"""Codecs of the client <-> driver control protocol (aeron_control_protocol.h, io.aeron.command).

Commands travel in the to-driver ring, responses in the to-clients broadcast buffer; both are records whose
payload is one of the messages below. Everything is little-endian and packed to 4 bytes (the C structs use
``#pragma pack(4)``), strings are an int32 length followed by the bytes with no NUL.

This is the cold path (one message per registration), so it is plain Python: one frozen dataclass per
message, ``encode() -> bytes`` and ``decode(buffer, offset=0, length=-1)`` over anything exporting the
buffer protocol (bytes, bytearray, memoryview, mmap, AtomicBuffer). Decoding never reads past ``length``:
a message that is too short, has a negative length or a string running past its end raises
MalformedMessageError. Bytes after the last field are ignored, as the drivers do (the C client writes a NUL
after the REJECT_IMAGE reason; the C driver accepts a 24-byte REMOVE_PUBLICATION).

Strings are Latin-1 on both sides: identical to ASCII for every string Aeron writes, and lossless for any
other byte so a decode/encode round trip reproduces the wire bytes.

Names follow the Java flyweights (``PublicationMessageFlyweight`` -> PublicationCommand, ...); the Java names
of the responses are kept as aliases (``ImageBuffersReady = ImageReady``, ...).
"""
from __future__ import annotations

import contextlib
import dataclasses
import ipaddress
import os
import struct
import sys
from collections.abc import Iterable, Iterator
from typing import Any, ClassVar

from aeron.common.errors import ErrorCode, InvalidArgumentError, MalformedMessageError

# -- command type ids (client -> driver), aeron_control_protocol.h AERON_COMMAND_* ---------------------------
ADD_PUBLICATION = 0x01
REMOVE_PUBLICATION = 0x02
ADD_EXCLUSIVE_PUBLICATION = 0x03
ADD_SUBSCRIPTION = 0x04
REMOVE_SUBSCRIPTION = 0x05
CLIENT_KEEPALIVE = 0x06
ADD_DESTINATION = 0x07
REMOVE_DESTINATION = 0x08
ADD_COUNTER = 0x09
REMOVE_COUNTER = 0x0A
CLIENT_CLOSE = 0x0B
ADD_RCV_DESTINATION = 0x0C
REMOVE_RCV_DESTINATION = 0x0D
TERMINATE_DRIVER = 0x0E
ADD_STATIC_COUNTER = 0x0F
REJECT_IMAGE = 0x10
REMOVE_DESTINATION_BY_ID = 0x11
GET_NEXT_AVAILABLE_SESSION_ID = 0x12

# -- response / event type ids (driver -> clients), AERON_RESPONSE_* ------------------------------------------
ON_ERROR = 0x0F01
ON_AVAILABLE_IMAGE = 0x0F02
ON_PUBLICATION_READY = 0x0F03
ON_OPERATION_SUCCESS = 0x0F04
ON_UNAVAILABLE_IMAGE = 0x0F05
ON_EXCLUSIVE_PUBLICATION_READY = 0x0F06
ON_SUBSCRIPTION_READY = 0x0F07
ON_COUNTER_READY = 0x0F08
ON_UNAVAILABLE_COUNTER = 0x0F09
ON_CLIENT_TIMEOUT = 0x0F0A
ON_STATIC_COUNTER = 0x0F0B
ON_PUBLICATION_ERROR = 0x0F0C
ON_NEXT_AVAILABLE_SESSION_ID = 0x0F0D

# REMOVE_PUBLICATION flags bit 0 (AERON_COMMAND_REMOVE_PUBLICATION_FLAG_REVOKE).
REMOVE_PUBLICATION_FLAG_REVOKE = 0x1

# ON_PUBLICATION_ERROR address types.
ADDRESS_TYPE_UNKNOWN = 0
ADDRESS_TYPE_IPV4 = 1
ADDRESS_TYPE_IPV6 = 2

# Control protocol version advertised by the driver in system counter 43 (1.0.0 encoded as major<<16).
CONTROL_PROTOCOL_MAJOR_VERSION = 1
CONTROL_PROTOCOL_MINOR_VERSION = 0
CONTROL_PROTOCOL_PATCH_VERSION = 0
CONTROL_PROTOCOL_SEMANTIC_VERSION = (1 << 16) | (0 << 8) | 0

COMMAND_NAMES: dict[int, str] = {
    value: name for name, value in list(globals().items())
    if isinstance(value, int) and 0x01 <= value <= 0x12 and name.isupper()
    and not name.startswith(("ON_", "ADDRESS_", "REMOVE_PUBLICATION_FLAG", "CONTROL_"))
}
RESPONSE_NAMES: dict[int, str] = {
    value: name for name, value in list(globals().items()) if name.startswith("ON_") and isinstance(value, int)
}

_I16 = struct.Struct("<h")
_I32 = struct.Struct("<i")
_I64 = struct.Struct("<q")
_CORRELATED = struct.Struct("<qq")              # client id, correlation id: every command starts with it


def type_name(type_id: int) -> str:
    """Aeron's name of a command or response type id (``"0x13"`` style text when unknown)."""
    return COMMAND_NAMES.get(type_id) or RESPONSE_NAMES.get(type_id) or f"0x{type_id:x}"


def _align4(length: int) -> int:
    return (length + 3) & ~3


def _text_bytes(value: str, field: str) -> bytes:
    try:
        return value.encode("latin-1")
    except UnicodeEncodeError as exc:
        raise InvalidArgumentError(f"{field} is not ASCII text: {value!r}") from exc
    except AttributeError as exc:
        raise InvalidArgumentError(f"{field} must be str, not {type(value).__name__}") from exc


def _var(data: bytes) -> bytes:
    """int32 length + data."""
    return _I32.pack(len(data)) + data


def _var_padded(data: bytes) -> bytes:
    """int32 length + data + zero padding to 4 bytes (a string followed by another field)."""
    return _I32.pack(len(data)) + data + b"\0" * (-len(data) & 3)


@contextlib.contextmanager
def _message_view(buffer: Any, offset: int, length: int, type_id: int) -> Iterator[memoryview]:
    """A byte view of exactly [offset, offset + length) of ``buffer``; released on exit so an AtomicBuffer
    can be closed afterwards (decoded fields are copies)."""
    with memoryview(buffer) as whole:
        with (whole.cast("B") if whole.format != "B" or whole.ndim != 1 else whole[:]) as flat:
            capacity = len(flat)
            if length == -1:
                length = capacity - offset
            if offset < 0 or length < 0 or offset > capacity or length > capacity - offset:
                raise MalformedMessageError(
                    f"{type_name(type_id)}: offset={offset} length={length} outside a buffer of {capacity} bytes",
                    type_id, offset)
            with flat[offset:offset + length] as view:
                yield view


class _Reader:
    """Field reads over one message view; every read is checked against the message length."""

    __slots__ = ("view", "base", "type_id")

    def __init__(self, view: memoryview, base: int, type_id: int) -> None:
        self.view = view            # exactly the message bytes
        self.base = base            # offset of the message in the caller's buffer, for error reports
        self.type_id = type_id

    def fail(self, text: str, position: int) -> MalformedMessageError:
        return MalformedMessageError(f"{type_name(self.type_id)}: {text}", self.type_id, self.base + position)

    def require(self, minimum: int) -> None:
        if len(self.view) < minimum:
            raise self.fail(f"too short: length={len(self.view)} < {minimum}", 0)

    def fixed(self, layout: struct.Struct, position: int) -> tuple[Any, ...]:
        if position + layout.size > len(self.view):
            raise self.fail(f"too short: length={len(self.view)} < {position + layout.size}", position)
        return layout.unpack_from(self.view, position)

    def var_bytes(self, position: int, field: str, padded: bool = False) -> tuple[bytes, int]:
        """(bytes, offset after them) of an int32-length-prefixed field; ``padded`` skips to 4-alignment."""
        (size,) = self.fixed(_I32, position)
        start = position + _I32.size
        if size < 0:
            raise self.fail(f"negative {field} length {size}", position)
        if size > len(self.view) - start:
            raise self.fail(f"{field} length {size} runs past the end of a {len(self.view)}-byte message",
                            position)
        end = start + size
        data = bytes(self.view[start:end])
        return data, start + (_align4(size) if padded else size)

    def text(self, position: int, field: str, padded: bool = False) -> tuple[str, int]:
        data, end = self.var_bytes(position, field, padded)
        return data.decode("latin-1"), end


class _Message:
    """Shared encode/decode plumbing; subclasses are frozen dataclasses."""

    __slots__ = ()
    TYPE_IDS: ClassVar[tuple[int, ...]]     # the message types this layout is used for, default first
    MIN_LENGTH: ClassVar[int]                # fixed part: shorter is malformed

    def encode(self) -> bytes:
        """The message payload, exactly as Aeron lays it out."""
        try:
            return self._encode()
        except struct.error as exc:
            raise InvalidArgumentError(f"{type(self).__name__}: field out of range ({exc}): {self!r}") from None

    def _encode(self) -> bytes:
        raise NotImplementedError

    @classmethod
    def decode(cls, buffer: Any, offset: int = 0, length: int = -1, msg_type_id: int | None = None) -> Any:
        """Decode one message from ``buffer[offset:offset + length]`` (``length=-1``: to the end).

        ``msg_type_id`` picks the type for layouts shared by several (ADD_PUBLICATION or
        ADD_EXCLUSIVE_PUBLICATION, ...); it defaults to the first. Raises MalformedMessageError.
        """
        if msg_type_id is None:
            msg_type_id = cls.TYPE_IDS[0]
        elif msg_type_id not in cls.TYPE_IDS:
            raise InvalidArgumentError(f"{cls.__name__} does not carry message type {type_name(msg_type_id)}")
        with _message_view(buffer, offset, length, msg_type_id) as view:
            reader = _Reader(view, offset, msg_type_id)
            reader.require(cls.MIN_LENGTH)
            return cls._decode(reader)

    @classmethod
    def _decode(cls, reader: _Reader) -> Any:
        raise NotImplementedError

    def _check_type(self) -> None:
        msg_type_id = getattr(self, "msg_type_id")
        if msg_type_id not in self.TYPE_IDS:
            raise InvalidArgumentError(
                f"{type(self).__name__} cannot carry message type {type_name(msg_type_id)}; "
                f"one of {', '.join(type_name(t) for t in self.TYPE_IDS)}")


class _SingleType(_Message):
    """A layout used by exactly one message type: ``TYPE_ID`` is a class constant."""

    __slots__ = ()
    TYPE_ID: ClassVar[int]

    @property
    def msg_type_id(self) -> int:
        return self.TYPE_ID


class _MultiType(_Message):
    """A layout shared by several message types: the instance carries ``msg_type_id``; ``TYPE_ID`` reads it."""

    __slots__ = ()

    @property
    def TYPE_ID(self) -> int:   # noqa: N802 - same spelling as the single-type classes' constant
        return getattr(self, "msg_type_id")

    def __post_init__(self) -> None:
        # the subclasses' dataclass __init__ calls it: a message type the layout does not carry is refused at once
        self._check_type()



def _bytes_field(instance: object, name: str, maximum: int | None = None) -> None:
    """Store a bytes-like field as bytes (hashable, comparable after a round trip)."""
    value = getattr(instance, name)
    if isinstance(value, (str, int)):       # bytes(5) would silently make five zero bytes
        raise InvalidArgumentError(f"{name} must be bytes-like, not {type(value).__name__}")
    try:
        data = bytes(value)
    except TypeError as exc:
        raise InvalidArgumentError(f"{name} must be bytes-like, not {type(value).__name__}") from exc
    if maximum is not None and len(data) > maximum:
        raise InvalidArgumentError(f"{name} longer than {maximum} bytes: {len(data)}")
    object.__setattr__(instance, name, data)


# ============================================================================================================
# Commands (client -> driver). Every one starts with client id (int64 @0) and correlation id (int64 @8).
# ============================================================================================================

@dataclasses.dataclass(frozen=True, slots=True)
class CorrelatedCommand(_MultiType):
    """CLIENT_KEEPALIVE / CLIENT_CLOSE: the 16-byte correlated header only (Java CorrelatedMessageFlyweight)."""

    TYPE_IDS: ClassVar[tuple[int, ...]] = (CLIENT_KEEPALIVE, CLIENT_CLOSE)
    MIN_LENGTH: ClassVar[int] = 16

    client_id: int
    correlation_id: int
    msg_type_id: int = dataclasses.field(default=CLIENT_KEEPALIVE, kw_only=True)

    def _encode(self) -> bytes:
        return _CORRELATED.pack(self.client_id, self.correlation_id)

    @classmethod
    def _decode(cls, reader: _Reader) -> CorrelatedCommand:
        client_id, correlation_id = reader.fixed(_CORRELATED, 0)
        return cls(client_id, correlation_id, msg_type_id=reader.type_id)


_PUBLICATION = struct.Struct("<qqi")


@dataclasses.dataclass(frozen=True, slots=True)
class PublicationCommand(_MultiType):
    """ADD_PUBLICATION / ADD_EXCLUSIVE_PUBLICATION (Java PublicationMessageFlyweight): 24 + channel."""

    TYPE_IDS: ClassVar[tuple[int, ...]] = (ADD_PUBLICATION, ADD_EXCLUSIVE_PUBLICATION)
    MIN_LENGTH: ClassVar[int] = 24

    client_id: int
    correlation_id: int
    stream_id: int
    channel: str
    msg_type_id: int = dataclasses.field(default=ADD_PUBLICATION, kw_only=True)

    @property
    def is_exclusive(self) -> bool:
        return self.msg_type_id == ADD_EXCLUSIVE_PUBLICATION

    def _encode(self) -> bytes:
        return (_PUBLICATION.pack(self.client_id, self.correlation_id, self.stream_id)
                + _var(_text_bytes(self.channel, "channel")))

    @classmethod
    def _decode(cls, reader: _Reader) -> PublicationCommand:
        client_id, correlation_id, stream_id = reader.fixed(_PUBLICATION, 0)
        channel, _ = reader.text(20, "channel")
        return cls(client_id, correlation_id, stream_id, channel, msg_type_id=reader.type_id)


_REMOVE_PUBLICATION = struct.Struct("<qqqQ")
_REMOVE = struct.Struct("<qqq")


@dataclasses.dataclass(frozen=True, slots=True)
class RemovePublicationCommand(_SingleType):
    """REMOVE_PUBLICATION (Java RemovePublicationFlyweight): 32 bytes, the last 8 are flags (bit 0 revoke).

    The older 24-byte form without flags decodes with ``flags=0``, as the C driver accepts it.
    """

    TYPE_ID: ClassVar[int] = REMOVE_PUBLICATION
    TYPE_IDS: ClassVar[tuple[int, ...]] = (REMOVE_PUBLICATION,)
    MIN_LENGTH: ClassVar[int] = 24

    client_id: int
    correlation_id: int
    registration_id: int
    flags: int = 0

    @property
    def revoke(self) -> bool:
        return bool(self.flags & REMOVE_PUBLICATION_FLAG_REVOKE)

    def _encode(self) -> bytes:
        return _REMOVE_PUBLICATION.pack(self.client_id, self.correlation_id, self.registration_id, self.flags)

    @classmethod
    def _decode(cls, reader: _Reader) -> RemovePublicationCommand:
        client_id, correlation_id, registration_id = reader.fixed(_REMOVE, 0)
        flags = reader.fixed(_REMOVE_PUBLICATION, 0)[3] if len(reader.view) >= _REMOVE_PUBLICATION.size else 0
        return cls(client_id, correlation_id, registration_id, flags)


_SUBSCRIPTION = struct.Struct("<qqqi")


@dataclasses.dataclass(frozen=True, slots=True)
class SubscriptionCommand(_SingleType):
    """ADD_SUBSCRIPTION (Java SubscriptionMessageFlyweight): 32 + channel.

    ``registration_correlation_id`` is unused by the drivers (Java clients write -1, C leaves 0).
    """

    TYPE_ID: ClassVar[int] = ADD_SUBSCRIPTION
    TYPE_IDS: ClassVar[tuple[int, ...]] = (ADD_SUBSCRIPTION,)
    MIN_LENGTH: ClassVar[int] = 32

    client_id: int
    correlation_id: int
    registration_correlation_id: int
    stream_id: int
    channel: str

    def _encode(self) -> bytes:
        return (_SUBSCRIPTION.pack(self.client_id, self.correlation_id, self.registration_correlation_id,
                                   self.stream_id) + _var(_text_bytes(self.channel, "channel")))

    @classmethod
    def _decode(cls, reader: _Reader) -> SubscriptionCommand:
        client_id, correlation_id, registration_correlation_id, stream_id = reader.fixed(_SUBSCRIPTION, 0)
        channel, _ = reader.text(28, "channel")
        return cls(client_id, correlation_id, registration_correlation_id, stream_id, channel)


@dataclasses.dataclass(frozen=True, slots=True)
class RemoveCommand(_MultiType):
    """REMOVE_SUBSCRIPTION / REMOVE_COUNTER (Java RemoveMessageFlyweight): 24 bytes."""

    TYPE_IDS: ClassVar[tuple[int, ...]] = (REMOVE_SUBSCRIPTION, REMOVE_COUNTER)
    MIN_LENGTH: ClassVar[int] = 24

    client_id: int
    correlation_id: int
    registration_id: int
    msg_type_id: int = dataclasses.field(default=REMOVE_SUBSCRIPTION, kw_only=True)

    def _encode(self) -> bytes:
        return _REMOVE.pack(self.client_id, self.correlation_id, self.registration_id)

    @classmethod
    def _decode(cls, reader: _Reader) -> RemoveCommand:
        client_id, correlation_id, registration_id = reader.fixed(_REMOVE, 0)
        return cls(client_id, correlation_id, registration_id, msg_type_id=reader.type_id)


@dataclasses.dataclass(frozen=True, slots=True)
class DestinationCommand(_MultiType):
    """ADD/REMOVE_DESTINATION and ADD/REMOVE_RCV_DESTINATION (Java DestinationMessageFlyweight): 28 + channel.

    ``registration_id`` is the publication (send destinations) or subscription (receive destinations).
    """

    TYPE_IDS: ClassVar[tuple[int, ...]] = (ADD_DESTINATION, REMOVE_DESTINATION, ADD_RCV_DESTINATION,
                                           REMOVE_RCV_DESTINATION)
    MIN_LENGTH: ClassVar[int] = 28

    client_id: int
    correlation_id: int
    registration_id: int
    channel: str
    msg_type_id: int = dataclasses.field(default=ADD_DESTINATION, kw_only=True)

    def _encode(self) -> bytes:
        return (_REMOVE.pack(self.client_id, self.correlation_id, self.registration_id)
                + _var(_text_bytes(self.channel, "channel")))

    @classmethod
    def _decode(cls, reader: _Reader) -> DestinationCommand:
        client_id, correlation_id, registration_id = reader.fixed(_REMOVE, 0)
        channel, _ = reader.text(24, "channel")
        return cls(client_id, correlation_id, registration_id, channel, msg_type_id=reader.type_id)


_DESTINATION_BY_ID = struct.Struct("<qqqq")


@dataclasses.dataclass(frozen=True, slots=True)
class DestinationByIdCommand(_SingleType):
    """REMOVE_DESTINATION_BY_ID (Java DestinationByIdMessageFlyweight): 32 bytes."""

    TYPE_ID: ClassVar[int] = REMOVE_DESTINATION_BY_ID
    TYPE_IDS: ClassVar[tuple[int, ...]] = (REMOVE_DESTINATION_BY_ID,)
    MIN_LENGTH: ClassVar[int] = 32

    client_id: int
    correlation_id: int
    resource_registration_id: int
    destination_registration_id: int

    @property
    def registration_id(self) -> int:
        """The publication's registration id, named as in DestinationCommand."""
        return self.resource_registration_id

    def _encode(self) -> bytes:
        return _DESTINATION_BY_ID.pack(self.client_id, self.correlation_id, self.resource_registration_id,
                                       self.destination_registration_id)

    @classmethod
    def _decode(cls, reader: _Reader) -> DestinationByIdCommand:
        return cls(*reader.fixed(_DESTINATION_BY_ID, 0))


_COUNTER = struct.Struct("<qqi")


@dataclasses.dataclass(frozen=True, slots=True)
class CounterCommand(_SingleType):
    """ADD_COUNTER (Java CounterMessageFlyweight): 28 + align(key, 4) + label.

    The key is padded to 4 bytes because the label length follows it. The C driver only checks >= 20 bytes
    up front; we require the two length fields (28) as the Java flyweight does.
    """

    TYPE_ID: ClassVar[int] = ADD_COUNTER
    TYPE_IDS: ClassVar[tuple[int, ...]] = (ADD_COUNTER,)
    MIN_LENGTH: ClassVar[int] = 28

    client_id: int
    correlation_id: int
    type_id: int                # the counter's type id, not the message type
    key: bytes
    label: str

    def __post_init__(self) -> None:
        _bytes_field(self, "key")

    def _encode(self) -> bytes:
        return (_COUNTER.pack(self.client_id, self.correlation_id, self.type_id)
                + _var_padded(self.key) + _var(_text_bytes(self.label, "label")))

    @classmethod
    def _decode(cls, reader: _Reader) -> CounterCommand:
        client_id, correlation_id, type_id = reader.fixed(_COUNTER, 0)
        key, position = reader.var_bytes(20, "key", padded=True)
        label, _ = reader.text(position, "label")
        return cls(client_id, correlation_id, type_id, key, label)


_STATIC_COUNTER = struct.Struct("<qqqi")


@dataclasses.dataclass(frozen=True, slots=True)
class StaticCounterCommand(_SingleType):
    """ADD_STATIC_COUNTER (Java StaticCounterMessageFlyweight): 36 + align(key, 4) + label.

    ``registration_id`` is chosen by the application; the counter is owned by nobody and survives its client.
    """

    TYPE_ID: ClassVar[int] = ADD_STATIC_COUNTER
    TYPE_IDS: ClassVar[tuple[int, ...]] = (ADD_STATIC_COUNTER,)
    MIN_LENGTH: ClassVar[int] = 36

    client_id: int
    correlation_id: int
    registration_id: int
    type_id: int                # the counter's type id
    key: bytes
    label: str

    def __post_init__(self) -> None:
        _bytes_field(self, "key")

    def _encode(self) -> bytes:
        return (_STATIC_COUNTER.pack(self.client_id, self.correlation_id, self.registration_id, self.type_id)
                + _var_padded(self.key) + _var(_text_bytes(self.label, "label")))

    @classmethod
    def _decode(cls, reader: _Reader) -> StaticCounterCommand:
        client_id, correlation_id, registration_id, type_id = reader.fixed(_STATIC_COUNTER, 0)
        key, position = reader.var_bytes(28, "key", padded=True)
        label, _ = reader.text(position, "label")
        return cls(client_id, correlation_id, registration_id, type_id, key, label)


@dataclasses.dataclass(frozen=True, slots=True)
class TerminateDriverCommand(_SingleType):
    """TERMINATE_DRIVER (Java TerminateDriverFlyweight): 20 + token bytes."""

    TYPE_ID: ClassVar[int] = TERMINATE_DRIVER
    TYPE_IDS: ClassVar[tuple[int, ...]] = (TERMINATE_DRIVER,)
    MIN_LENGTH: ClassVar[int] = 20

    client_id: int
    correlation_id: int
    token: bytes = b""

    def __post_init__(self) -> None:
        _bytes_field(self, "token")

    def _encode(self) -> bytes:
        return _CORRELATED.pack(self.client_id, self.correlation_id) + _var(self.token)

    @classmethod
    def _decode(cls, reader: _Reader) -> TerminateDriverCommand:
        client_id, correlation_id = reader.fixed(_CORRELATED, 0)
        token, _ = reader.var_bytes(16, "token")
        return cls(client_id, correlation_id, token)


_REJECT_IMAGE = struct.Struct("<qqqq")


@dataclasses.dataclass(frozen=True, slots=True)
class RejectImageCommand(_SingleType):
    """REJECT_IMAGE (Java RejectImageFlyweight): 36 + reason.

    encode() appends one NUL after the reason, not counted in its length, as the C client does: the C driver
    requires at least 40 bytes (its struct size), so without it a reason under 4 bytes would be malformed.
    """

    TYPE_ID: ClassVar[int] = REJECT_IMAGE
    TYPE_IDS: ClassVar[tuple[int, ...]] = (REJECT_IMAGE,)
    MIN_LENGTH: ClassVar[int] = 36

    client_id: int
    correlation_id: int
    image_correlation_id: int
    position: int
    reason: str

    def _encode(self) -> bytes:
        return (_REJECT_IMAGE.pack(self.client_id, self.correlation_id, self.image_correlation_id, self.position)
                + _var(_text_bytes(self.reason, "reason")) + b"\0")

    @classmethod
    def _decode(cls, reader: _Reader) -> RejectImageCommand:
        client_id, correlation_id, image_correlation_id, position = reader.fixed(_REJECT_IMAGE, 0)
        reason, _ = reader.text(32, "reason")
        return cls(client_id, correlation_id, image_correlation_id, position, reason)


_NEXT_SESSION_ID = struct.Struct("<qqi")


@dataclasses.dataclass(frozen=True, slots=True)
class NextSessionIdCommand(_SingleType):
    """GET_NEXT_AVAILABLE_SESSION_ID (Java GetNextAvailableSessionIdMessageFlyweight): 20 bytes."""

    TYPE_ID: ClassVar[int] = GET_NEXT_AVAILABLE_SESSION_ID
    TYPE_IDS: ClassVar[tuple[int, ...]] = (GET_NEXT_AVAILABLE_SESSION_ID,)
    MIN_LENGTH: ClassVar[int] = 20

    client_id: int
    correlation_id: int
    stream_id: int

    def _encode(self) -> bytes:
        return _NEXT_SESSION_ID.pack(self.client_id, self.correlation_id, self.stream_id)

    @classmethod
    def _decode(cls, reader: _Reader) -> NextSessionIdCommand:
        return cls(*reader.fixed(_NEXT_SESSION_ID, 0))


# ============================================================================================================
# Responses and events (driver -> clients, broadcast to every client)
# ============================================================================================================

_ERROR = struct.Struct("<qi")


@dataclasses.dataclass(frozen=True, slots=True)
class ErrorResponse(_SingleType):
    """ON_ERROR (Java ErrorResponseFlyweight): 16 + message.

    ``correlation_id`` is the offending command's correlation id (for CHANNEL_ENDPOINT_ERROR the Java client
    reads it as a channel status counter id). ``error_code`` is the raw number; ErrorCode.of() maps it.
    """

    TYPE_ID: ClassVar[int] = ON_ERROR
    TYPE_IDS: ClassVar[tuple[int, ...]] = (ON_ERROR,)
    MIN_LENGTH: ClassVar[int] = 16

    correlation_id: int
    error_code: int
    error_message: str

    @property
    def offending_command_correlation_id(self) -> int:
        return self.correlation_id

    @property
    def code(self) -> ErrorCode:
        return ErrorCode.of(self.error_code)

    def _encode(self) -> bytes:
        return (_ERROR.pack(self.correlation_id, int(self.error_code))
                + _var(_text_bytes(self.error_message, "error_message")))

    @classmethod
    def _decode(cls, reader: _Reader) -> ErrorResponse:
        correlation_id, error_code = reader.fixed(_ERROR, 0)
        message, _ = reader.text(12, "error message")
        return cls(correlation_id, error_code, message)


_IMAGE_READY = struct.Struct("<qiiqi")


@dataclasses.dataclass(frozen=True, slots=True)
class ImageReady(_SingleType):
    """ON_AVAILABLE_IMAGE (Java ImageBuffersReadyFlyweight): 32 + align(log file, 4) + 4 + source identity.

    ``correlation_id`` is the image's: the publication's registration id for IPC and spies.
    """

    TYPE_ID: ClassVar[int] = ON_AVAILABLE_IMAGE
    TYPE_IDS: ClassVar[tuple[int, ...]] = (ON_AVAILABLE_IMAGE,)
    MIN_LENGTH: ClassVar[int] = 36

    correlation_id: int
    session_id: int
    stream_id: int
    subscription_registration_id: int
    subscriber_position_id: int
    log_file_name: str
    source_identity: str

    def _encode(self) -> bytes:
        return (_IMAGE_READY.pack(self.correlation_id, self.session_id, self.stream_id,
                                  self.subscription_registration_id, self.subscriber_position_id)
                + _var_padded(_text_bytes(self.log_file_name, "log_file_name"))
                + _var(_text_bytes(self.source_identity, "source_identity")))

    @classmethod
    def _decode(cls, reader: _Reader) -> ImageReady:
        correlation_id, session_id, stream_id, subscription_id, position_id = reader.fixed(_IMAGE_READY, 0)
        log_file_name, position = reader.text(28, "log file name", padded=True)
        source_identity, _ = reader.text(position, "source identity")
        return cls(correlation_id, session_id, stream_id, subscription_id, position_id, log_file_name,
                   source_identity)


_PUBLICATION_READY = struct.Struct("<qqiiii")


@dataclasses.dataclass(frozen=True, slots=True)
class PublicationReady(_MultiType):
    """ON_PUBLICATION_READY / ON_EXCLUSIVE_PUBLICATION_READY (Java PublicationBuffersReadyFlyweight): 36 + log.

    ``registration_id`` is the original publication's (shared by concurrent publications), ``correlation_id``
    this request's. ``position_limit_counter_id`` is ``pub-lmt``; ``channel_status_indicator_id`` -1 for IPC.
    """

    TYPE_IDS: ClassVar[tuple[int, ...]] = (ON_PUBLICATION_READY, ON_EXCLUSIVE_PUBLICATION_READY)
    MIN_LENGTH: ClassVar[int] = 36

    msg_type_id: int
    correlation_id: int
    registration_id: int
    session_id: int
    stream_id: int
    position_limit_counter_id: int
    channel_status_indicator_id: int
    log_file_name: str

    @property
    def is_exclusive(self) -> bool:
        return self.msg_type_id == ON_EXCLUSIVE_PUBLICATION_READY

    def _encode(self) -> bytes:
        return (_PUBLICATION_READY.pack(self.correlation_id, self.registration_id, self.session_id, self.stream_id,
                                        self.position_limit_counter_id, self.channel_status_indicator_id)
                + _var(_text_bytes(self.log_file_name, "log_file_name")))

    @classmethod
    def _decode(cls, reader: _Reader) -> PublicationReady:
        correlation_id, registration_id, session_id, stream_id, limit_id, status_id = reader.fixed(
            _PUBLICATION_READY, 0)
        log_file_name, _ = reader.text(32, "log file name")
        return cls(reader.type_id, correlation_id, registration_id, session_id, stream_id, limit_id, status_id,
                   log_file_name)


@dataclasses.dataclass(frozen=True, slots=True)
class OperationSucceeded(_SingleType):
    """ON_OPERATION_SUCCESS (Java OperationSucceededFlyweight): correlation id, 8 bytes."""

    TYPE_ID: ClassVar[int] = ON_OPERATION_SUCCESS
    TYPE_IDS: ClassVar[tuple[int, ...]] = (ON_OPERATION_SUCCESS,)
    MIN_LENGTH: ClassVar[int] = 8

    correlation_id: int

    def _encode(self) -> bytes:
        return _I64.pack(self.correlation_id)

    @classmethod
    def _decode(cls, reader: _Reader) -> OperationSucceeded:
        return cls(*reader.fixed(_I64, 0))


_IMAGE_MESSAGE = struct.Struct("<qqi")


@dataclasses.dataclass(frozen=True, slots=True)
class ImageUnavailable(_SingleType):
    """ON_UNAVAILABLE_IMAGE (Java ImageMessageFlyweight): 24 + the subscription's channel."""

    TYPE_ID: ClassVar[int] = ON_UNAVAILABLE_IMAGE
    TYPE_IDS: ClassVar[tuple[int, ...]] = (ON_UNAVAILABLE_IMAGE,)
    MIN_LENGTH: ClassVar[int] = 24

    correlation_id: int
    subscription_registration_id: int
    stream_id: int
    channel: str

    def _encode(self) -> bytes:
        return (_IMAGE_MESSAGE.pack(self.correlation_id, self.subscription_registration_id, self.stream_id)
                + _var(_text_bytes(self.channel, "channel")))

    @classmethod
    def _decode(cls, reader: _Reader) -> ImageUnavailable:
        correlation_id, subscription_registration_id, stream_id = reader.fixed(_IMAGE_MESSAGE, 0)
        channel, _ = reader.text(20, "channel")
        return cls(correlation_id, subscription_registration_id, stream_id, channel)


_ID_AND_INT = struct.Struct("<qi")


@dataclasses.dataclass(frozen=True, slots=True)
class SubscriptionReady(_SingleType):
    """ON_SUBSCRIPTION_READY (Java SubscriptionReadyFlyweight): 12 bytes; status indicator -1 for IPC/spy."""

    TYPE_ID: ClassVar[int] = ON_SUBSCRIPTION_READY
    TYPE_IDS: ClassVar[tuple[int, ...]] = (ON_SUBSCRIPTION_READY,)
    MIN_LENGTH: ClassVar[int] = 12

    correlation_id: int
    channel_status_indicator_id: int

    def _encode(self) -> bytes:
        return _ID_AND_INT.pack(self.correlation_id, self.channel_status_indicator_id)

    @classmethod
    def _decode(cls, reader: _Reader) -> SubscriptionReady:
        return cls(*reader.fixed(_ID_AND_INT, 0))


@dataclasses.dataclass(frozen=True, slots=True)
class CounterUpdate(_MultiType):
    """ON_COUNTER_READY / ON_UNAVAILABLE_COUNTER (Java CounterUpdateFlyweight): 12 bytes.

    ``correlation_id`` is the counter's registration id; for a client heartbeat counter, the client id.
    """

    TYPE_IDS: ClassVar[tuple[int, ...]] = (ON_COUNTER_READY, ON_UNAVAILABLE_COUNTER)
    MIN_LENGTH: ClassVar[int] = 12

    msg_type_id: int
    correlation_id: int
    counter_id: int

    def _encode(self) -> bytes:
        return _ID_AND_INT.pack(self.correlation_id, self.counter_id)

    @classmethod
    def _decode(cls, reader: _Reader) -> CounterUpdate:
        return cls(reader.type_id, *reader.fixed(_ID_AND_INT, 0))


@dataclasses.dataclass(frozen=True, slots=True)
class ClientTimeout(_SingleType):
    """ON_CLIENT_TIMEOUT (Java ClientTimeoutFlyweight): client id, 8 bytes."""

    TYPE_ID: ClassVar[int] = ON_CLIENT_TIMEOUT
    TYPE_IDS: ClassVar[tuple[int, ...]] = (ON_CLIENT_TIMEOUT,)
    MIN_LENGTH: ClassVar[int] = 8

    client_id: int

    def _encode(self) -> bytes:
        return _I64.pack(self.client_id)

    @classmethod
    def _decode(cls, reader: _Reader) -> ClientTimeout:
        return cls(*reader.fixed(_I64, 0))


@dataclasses.dataclass(frozen=True, slots=True)
class StaticCounterReply(_SingleType):
    """ON_STATIC_COUNTER (Java StaticCounterFlyweight): correlation id + counter id, 12 bytes."""

    TYPE_ID: ClassVar[int] = ON_STATIC_COUNTER
    TYPE_IDS: ClassVar[tuple[int, ...]] = (ON_STATIC_COUNTER,)
    MIN_LENGTH: ClassVar[int] = 12

    correlation_id: int
    counter_id: int

    def _encode(self) -> bytes:
        return _ID_AND_INT.pack(self.correlation_id, self.counter_id)

    @classmethod
    def _decode(cls, reader: _Reader) -> StaticCounterReply:
        return cls(*reader.fixed(_ID_AND_INT, 0))


_PUBLICATION_ERROR = struct.Struct("<qqiiqqhH16si")


@dataclasses.dataclass(frozen=True, slots=True)
class PublicationErrorFrame(_SingleType):
    """ON_PUBLICATION_ERROR (Java PublicationErrorFrameFlyweight): 68 + message.

    ``source_port`` is host order; ``source_address`` is 16 bytes in network order (IPv4 in the first 4,
    a shorter value is zero-padded). The C client only accepts >= 72 bytes (its struct size); encode() writes
    68 + message like the drivers do.
    """

    TYPE_ID: ClassVar[int] = ON_PUBLICATION_ERROR
    TYPE_IDS: ClassVar[tuple[int, ...]] = (ON_PUBLICATION_ERROR,)
    MIN_LENGTH: ClassVar[int] = 68

    registration_id: int
    destination_registration_id: int
    session_id: int
    stream_id: int
    receiver_id: int
    group_tag: int
    address_type: int
    source_port: int
    source_address: bytes
    error_code: int
    error_message: str

    def __post_init__(self) -> None:
        _bytes_field(self, "source_address", 16)
        object.__setattr__(self, "source_address", self.source_address.ljust(16, b"\0"))

    @property
    def source_ip(self) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
        """The source address by address type (None when the type is unknown)."""
        if self.address_type == ADDRESS_TYPE_IPV4:
            return ipaddress.IPv4Address(self.source_address[:4])
        if self.address_type == ADDRESS_TYPE_IPV6:
            return ipaddress.IPv6Address(self.source_address)
        return None

    def _encode(self) -> bytes:
        return (_PUBLICATION_ERROR.pack(self.registration_id, self.destination_registration_id, self.session_id,
                                        self.stream_id, self.receiver_id, self.group_tag, self.address_type,
                                        self.source_port, self.source_address, int(self.error_code))
                + _var(_text_bytes(self.error_message, "error_message")))

    @classmethod
    def _decode(cls, reader: _Reader) -> PublicationErrorFrame:
        (registration_id, destination_id, session_id, stream_id, receiver_id, group_tag, address_type, port,
         address, error_code) = reader.fixed(_PUBLICATION_ERROR, 0)
        message, _ = reader.text(64, "error message")
        return cls(registration_id, destination_id, session_id, stream_id, receiver_id, group_tag, address_type,
                   port, address, error_code, message)


@dataclasses.dataclass(frozen=True, slots=True)
class NextSessionIdReply(_SingleType):
    """ON_NEXT_AVAILABLE_SESSION_ID (Java NextAvailableSessionIdFlyweight): 12 bytes."""

    TYPE_ID: ClassVar[int] = ON_NEXT_AVAILABLE_SESSION_ID
    TYPE_IDS: ClassVar[tuple[int, ...]] = (ON_NEXT_AVAILABLE_SESSION_ID,)
    MIN_LENGTH: ClassVar[int] = 12

    correlation_id: int
    next_session_id: int

    def _encode(self) -> bytes:
        return _ID_AND_INT.pack(self.correlation_id, self.next_session_id)

    @classmethod
    def _decode(cls, reader: _Reader) -> NextSessionIdReply:
        return cls(*reader.fixed(_ID_AND_INT, 0))


# Java flyweight names, for readers porting from Aeron.
ImageBuffersReady = ImageReady
PublicationBuffersReady = PublicationReady
ImageMessage = ImageUnavailable
StaticCounter = StaticCounterReply
NextAvailableSessionId = NextSessionIdReply
NextAvailableSessionIdCommand = NextSessionIdCommand

COMMAND_CODECS: dict[int, type[_Message]] = {
    ADD_PUBLICATION: PublicationCommand,
    REMOVE_PUBLICATION: RemovePublicationCommand,
    ADD_EXCLUSIVE_PUBLICATION: PublicationCommand,
    ADD_SUBSCRIPTION: SubscriptionCommand,
    REMOVE_SUBSCRIPTION: RemoveCommand,
    CLIENT_KEEPALIVE: CorrelatedCommand,
    ADD_DESTINATION: DestinationCommand,
    REMOVE_DESTINATION: DestinationCommand,
    ADD_COUNTER: CounterCommand,
    REMOVE_COUNTER: RemoveCommand,
    CLIENT_CLOSE: CorrelatedCommand,
    ADD_RCV_DESTINATION: DestinationCommand,
    REMOVE_RCV_DESTINATION: DestinationCommand,
    TERMINATE_DRIVER: TerminateDriverCommand,
    ADD_STATIC_COUNTER: StaticCounterCommand,
    REJECT_IMAGE: RejectImageCommand,
    REMOVE_DESTINATION_BY_ID: DestinationByIdCommand,
    GET_NEXT_AVAILABLE_SESSION_ID: NextSessionIdCommand,
}

RESPONSE_CODECS: dict[int, type[_Message]] = {
    ON_ERROR: ErrorResponse,
    ON_AVAILABLE_IMAGE: ImageReady,
    ON_PUBLICATION_READY: PublicationReady,
    ON_OPERATION_SUCCESS: OperationSucceeded,
    ON_UNAVAILABLE_IMAGE: ImageUnavailable,
    ON_EXCLUSIVE_PUBLICATION_READY: PublicationReady,
    ON_SUBSCRIPTION_READY: SubscriptionReady,
    ON_COUNTER_READY: CounterUpdate,
    ON_UNAVAILABLE_COUNTER: CounterUpdate,
    ON_CLIENT_TIMEOUT: ClientTimeout,
    ON_STATIC_COUNTER: StaticCounterReply,
    ON_PUBLICATION_ERROR: PublicationErrorFrame,
    ON_NEXT_AVAILABLE_SESSION_ID: NextSessionIdReply,
}


def decode_command(type_id: int, buffer: Any, offset: int = 0, length: int = -1) -> Any:
    """Decode a to-driver record's payload by its type id.

    Raises MalformedMessageError; for an unknown type its ``error_code`` is UNKNOWN_COMMAND_TYPE_ID and its
    text ``command=<n> unknown``, as the C driver logs it.
    """
    codec = COMMAND_CODECS.get(type_id)
    if codec is None:
        raise MalformedMessageError(f"command={type_id} unknown", type_id, offset,
                                    ErrorCode.UNKNOWN_COMMAND_TYPE_ID)
    return codec.decode(buffer, offset, length, type_id)


def decode_response(type_id: int, buffer: Any, offset: int = 0, length: int = -1) -> Any:
    """Decode a to-clients broadcast record's payload by its type id. Raises MalformedMessageError."""
    codec = RESPONSE_CODECS.get(type_id)
    if codec is None:
        raise MalformedMessageError(f"response={type_id} unknown", type_id, offset,
                                    ErrorCode.UNKNOWN_COMMAND_TYPE_ID)
    return codec.decode(buffer, offset, length, type_id)


# -- error text, as the C driver writes it --------------------------------------------------------------------

# aeron_error_code_str: the description after "(-<code>) ".
ERROR_CODE_DESCRIPTIONS: dict[int, str] = {
    ErrorCode.UNUSED: "generic error, see message",
    ErrorCode.INVALID_CHANNEL: "invalid channel",
    ErrorCode.UNKNOWN_SUBSCRIPTION: "unknown subscription",
    ErrorCode.UNKNOWN_PUBLICATION: "unknown publication",
    ErrorCode.CHANNEL_ENDPOINT_ERROR: "channel endpoint error",
    ErrorCode.UNKNOWN_COUNTER: "unknown counter",
    ErrorCode.UNKNOWN_COMMAND_TYPE_ID: "unknown command type id",
    ErrorCode.MALFORMED_COMMAND: "malformed command",
    ErrorCode.NOT_SUPPORTED: "not supported",
    ErrorCode.UNKNOWN_HOST: "unknown host",
    ErrorCode.RESOURCE_TEMPORARILY_UNAVAILABLE: "resource temporarily unavailable",
    ErrorCode.GENERIC_ERROR: "generic error, see message",
    ErrorCode.STORAGE_SPACE: "insufficient storage space",
    ErrorCode.IMAGE_REJECTED: "image rejected",
    ErrorCode.PUBLICATION_REVOKED: "publication revoked",
}


def error_code_description(code: int) -> str:
    """The C driver's short description of an ErrorCode ("unknown error code" for any other number)."""
    return ERROR_CODE_DESCRIPTIONS.get(int(code), "unknown error code")


def format_driver_error(code: int, message: str, *, function: str | None = None, filename: str | None = None,
                        line: int | None = None, context: Iterable[tuple[str, str, int, str]] = (),
                        os_errno: int | None = None) -> str:
    """Error text as the C driver writes it into ON_ERROR and the distinct error log.

    ``(-<code>) <description>`` (or ``(<errno>) <strerror>`` when ``os_errno`` is given), a newline, then
    ``[<function>, <file>:<line>] <message>`` and one more such line per ``context`` entry
    ``(function, file, line, text)``, each ending in a newline. ``function``/``filename``/``line`` default
    to the caller's frame. Clients must not parse this; only the numeric code is contractual.
    """
    if function is None or filename is None or line is None:
        frame = sys._getframe(1)
        function = frame.f_code.co_name if function is None else function
        filename = os.path.basename(frame.f_code.co_filename) if filename is None else filename
        line = frame.f_lineno if line is None else line
    if os_errno is not None and os_errno > 0:
        head = f"({os_errno}) {os.strerror(os_errno)}\n"
    else:
        head = f"({-int(code)}) {error_code_description(code)}\n"
    lines = [head, f"[{function}, {filename}:{line}] {message}\n"]
    lines.extend(f"[{c_function}, {c_file}:{c_line}] {text}\n" for c_function, c_file, c_line, text in context)
    return "".join(lines)


__all__ = [
    name for name in list(globals())
    if not name.startswith("_") and name not in {
        "annotations", "contextlib", "dataclasses", "ipaddress", "os", "struct", "sys", "Any", "ClassVar",
        "Iterable", "Iterator", "ErrorCode", "InvalidArgumentError",
    }
]
