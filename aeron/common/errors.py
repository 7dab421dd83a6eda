# SPDX-License-Identifier: Apache-2.0
"""Exception hierarchy and Aeron's ErrorCode.

Back pressure, admin action and not-connected are return codes on the hot path, never exceptions.
Exceptions here also inherit a builtin where one fits, so ``except TimeoutError`` or
``except ValueError`` keeps working for callers who do not know Aeron's names.
"""
from __future__ import annotations

import enum


class Category(enum.IntEnum):
    """Severity of an AeronError, as Aeron's ``AeronException.Category``."""

    FATAL = 0
    ERROR = 1
    WARN = 2


class ErrorCode(enum.IntEnum):
    """Error codes carried by the driver's ON_ERROR response (Aeron ``ErrorCode``)."""

    UNKNOWN_CODE_VALUE = -1
    UNUSED = 0
    INVALID_CHANNEL = 1
    UNKNOWN_SUBSCRIPTION = 2
    UNKNOWN_PUBLICATION = 3
    CHANNEL_ENDPOINT_ERROR = 4
    UNKNOWN_COUNTER = 5
    UNKNOWN_COMMAND_TYPE_ID = 6
    MALFORMED_COMMAND = 7
    NOT_SUPPORTED = 8
    UNKNOWN_HOST = 9
    RESOURCE_TEMPORARILY_UNAVAILABLE = 10
    GENERIC_ERROR = 11
    STORAGE_SPACE = 12
    IMAGE_REJECTED = 13
    PUBLICATION_REVOKED = 14

    @classmethod
    def of(cls, value: int) -> "ErrorCode":
        """Map a number off the wire to a code, UNKNOWN_CODE_VALUE when it is not one we know."""
        try:
            return cls(value)
        except ValueError:
            return cls.UNKNOWN_CODE_VALUE


class AeronError(Exception):
    """Base of every error raised by this package."""

    category: Category = Category.ERROR

    def __init__(self, *args: object, category: Category | None = None) -> None:
        """``args`` as for Exception; ``category`` overrides the class's severity."""
        super().__init__(*args)
        if category is not None:
            self.category = category


class RegistrationError(AeronError):
    """The driver refused a command (add publication, subscription, counter, ...)."""

    def __init__(self, error_code: int, message: str = "", correlation_id: int = -1) -> None:
        """``error_code`` as the driver sent it (kept in ``raw_error_code``, mapped to ``error_code``)."""
        self.error_code = ErrorCode.of(error_code)
        self.raw_error_code = error_code
        self.correlation_id = correlation_id
        super().__init__(f"{self.error_code.name} ({error_code}): {message}" if message else self.error_code.name)


class ConfigurationError(AeronError, ValueError):
    """Invalid configuration value or channel URI."""


class InvalidChannelError(ConfigurationError):
    """A channel URI that does not parse or carries an invalid parameter value.

    ``channel`` is the whole URI as given and ``part`` the piece that is wrong (a parameter, a key, the media),
    so a driver can answer INVALID_CHANNEL with a message that points at it. Every layer raises this type for a
    bad channel: the URI parser, the client's checks of parameter values, and (as ChannelRejectedError) the
    client when the driver refuses a channel.
    """

    error_code: "ErrorCode" = ErrorCode.INVALID_CHANNEL     # what a driver answers for it

    def __init__(self, message: str, channel: str = "", part: str = "") -> None:
        """The message names ``part`` and the channel (cut to 200 characters)."""
        self.channel = channel
        self.part = part
        shown = channel if len(channel) <= 200 else channel[:200] + "..."
        super().__init__(f"{message}: {part!r} in channel {shown!r}" if part else f"{message}: {shown!r}")


class ChannelRejectedError(InvalidChannelError, RegistrationError):
    """A channel the media driver refused (ON_ERROR INVALID_CHANNEL, or UNKNOWN_HOST for an endpoint it could not
    resolve): an InvalidChannelError like the ones the client raises itself, and a RegistrationError with the
    driver's ``error_code`` and the command's ``correlation_id``."""

    def __init__(self, error_code: int, message: str, channel: str = "", correlation_id: int = -1) -> None:
        """``error_code`` and ``message`` as the driver sent them; the message names ``channel`` if it does not
        already."""
        # both bases have their own __init__: set the attributes of each here, then the text once
        self.error_code = ErrorCode.of(error_code)
        self.raw_error_code = error_code
        self.correlation_id = correlation_id
        self.channel = channel
        self.part = ""
        text = f"{self.error_code.name} ({error_code}): {message}" if message else self.error_code.name
        if channel and channel not in text:
            text += f" (channel {channel!r})"
        AeronError.__init__(self, text)


class AeronDirError(ConfigurationError):
    """The Aeron directory is not safe to use or could not be removed: it is a symbolic link, it is owned by
    another user, or entries of it were left behind. ``path`` is the directory; ``failures`` lists the
    ``(path, OSError)`` pairs of what could not be removed."""

    def __init__(self, message: str, path: str, failures: list[tuple[str, OSError]] | None = None) -> None:
        """``message`` names ``path``; ``failures`` are the entries left behind, if any."""
        self.path = path
        self.failures = list(failures or ())
        super().__init__(message)


class CpuLatencyQosError(ConfigurationError):
    """A CPU latency QoS request that cannot be held (``aeron.driver.cpu.latency.qos.us``): a value out of range, or
    the device (``path``, by default ``/dev/cpu_dma_latency``) could not be opened or written; ``os_error`` is the
    OSError when there was one (ENOENT: no such device; EACCES: the device is root's only by default)."""

    def __init__(self, message: str, path: str = "", os_error: OSError | None = None) -> None:
        """``message`` names ``path`` and the OS error."""
        self.path = path
        self.os_error = os_error
        super().__init__(message)


class AgentTerminationError(AeronError):
    """Raised from ``Agent.do_work`` (or ``on_start``) to end its runner's loop cleanly (Agrona's
    AgentTerminationException). Not an error to report: runners neither log nor count it."""


class InvalidArgumentError(AeronError, ValueError):
    """An argument out of range: a length, an offset, a stream position."""


class OutOfBoundsError(AeronError, IndexError):
    """An offset or length falls outside the buffer it refers to."""


class IllegalStateError(AeronError, RuntimeError):
    """An operation that is not valid in the object's current state (e.g. a claim committed twice)."""


class CorruptFileError(AeronError, ValueError):
    """A file (cnc.dat, log buffer, catalog, ...) is truncated or its contents are inconsistent."""

    def __init__(self, message: str, path: object = None, offset: int | None = None) -> None:
        """The message ends with the file's ``path`` and the ``offset`` of the problem, when known."""
        self.path = path
        self.offset = offset
        where = ""
        if path is not None:
            where += f" [{path}"
            where += f" @ offset {offset}]" if offset is not None else "]"
        elif offset is not None:
            where = f" [offset {offset}]"
        super().__init__(message + where)


class MalformedMessageError(AeronError, ValueError):
    """A control-protocol message (client command or driver response) that cannot be decoded: too short, a
    string length that is negative or runs past the message, or an unknown message type.

    ``type_id`` is the message type, ``offset`` where in the buffer the problem was found, and ``error_code``
    the ErrorCode a driver logs for it (MALFORMED_COMMAND, or UNKNOWN_COMMAND_TYPE_ID for an unknown type).
    """

    def __init__(self, message: str, type_id: int | None = None, offset: int | None = None,
                 error_code: int = ErrorCode.MALFORMED_COMMAND) -> None:
        """See the class docstring for the fields."""
        self.type_id = type_id
        self.offset = offset
        self.error_code = ErrorCode.of(error_code)
        super().__init__(message)


class MalformedFrameError(MalformedMessageError):
    """A UDP datagram that is not a valid Aeron frame (aeron._core.frames): ``reason`` is the negative
    FRAME_INVALID_* code of the check that failed, ``type_id`` the frame type code read from the header (when
    there was one) and ``offset`` where in the datagram the problem was found."""

    def __init__(self, message: str, reason: int = 0, type_id: int | None = None, offset: int | None = None) -> None:
        """See the class docstring for the fields."""
        self.reason = reason
        super().__init__(message, type_id=type_id, offset=offset)


class CncNotInitialisedError(IllegalStateError):
    """cnc.dat exists but its version field is still 0: the driver has not finished creating it."""


class CncVersionError(AeronError):
    """cnc.dat has a major version this client does not understand (fatal, as upstream)."""

    category = Category.FATAL


class ActiveDriverError(IllegalStateError):
    """A media driver is already running in this Aeron directory (Aeron ``ActiveDriverException``)."""


class AeronTimeoutError(AeronError, TimeoutError):
    """Something did not happen in time."""


class DriverTimeoutError(AeronTimeoutError):
    """The media driver stopped heartbeating (or never started)."""

    category = Category.FATAL


class ClientTimeoutError(AeronTimeoutError):
    """The driver timed this client out for missing keepalives."""

    category = Category.FATAL


class ConductorServiceTimeoutError(AeronTimeoutError):
    """The client conductor was not serviced within its interval."""

    category = Category.FATAL


class ChannelEndpointError(AeronError):
    """A channel endpoint failed (bind, resolve, send)."""


class StorageSpaceError(RegistrationError):
    """Not enough space to create a file (log buffer, recording segment): the driver answered STORAGE_SPACE."""


class PublicationClosedError(AeronError):
    """Offer on a closed publication, or its stream reached its maximum position."""


class ArchiveError(AeronError):
    """Error reported by Aeron Archive, with its code."""

    def __init__(self, message: str = "", code: int = 0, correlation_id: int = -1) -> None:
        """``code`` is the archive's error code, ``correlation_id`` the request's."""
        self.code = code
        self.correlation_id = correlation_id
        super().__init__(message)


class ClusterError(AeronError):
    """Error reported by Aeron Cluster."""


__all__ = [
    "Category", "ErrorCode", "AeronError", "RegistrationError", "ConfigurationError", "InvalidChannelError",
    "ChannelRejectedError",
    "AeronDirError", "CpuLatencyQosError",
    "AgentTerminationError",
    "InvalidArgumentError", "OutOfBoundsError", "IllegalStateError", "CorruptFileError", "MalformedMessageError",
    "CncNotInitialisedError", "CncVersionError", "ActiveDriverError",
    "AeronTimeoutError", "DriverTimeoutError", "ClientTimeoutError", "ConductorServiceTimeoutError",
    "ChannelEndpointError", "StorageSpaceError", "PublicationClosedError", "ArchiveError", "ClusterError",
]
