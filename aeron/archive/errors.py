# SPDX-License-Identifier: Apache-2.0
"""Archive errors: Aeron's archive error codes (``ArchiveException``) and one exception class per code.

An ERROR control response carries the code in its ``relevantId``; :func:`archive_error` turns it into the
matching subclass, so callers can catch ``UnknownRecordingError`` or test ``err.error_code``. Every class derives
from :class:`aeron.common.errors.ArchiveError`, so ``except aeron.errors.ArchiveError`` keeps catching them all.
"""
from __future__ import annotations

import enum

from aeron.common.errors import AeronTimeoutError
from aeron.common.errors import ArchiveError as _CommonArchiveError


class ArchiveErrorCode(enum.IntEnum):
    """The archive's error codes (``relevantId`` of an ERROR response), as ``ArchiveException`` numbers them."""

    GENERIC = 0
    ACTIVE_LISTING = 1
    ACTIVE_RECORDING = 2
    ACTIVE_SUBSCRIPTION = 3
    UNKNOWN_SUBSCRIPTION = 4
    UNKNOWN_RECORDING = 5
    UNKNOWN_REPLAY = 6
    MAX_REPLAYS = 7
    MAX_RECORDINGS = 8
    INVALID_EXTENSION = 9
    AUTHENTICATION_REJECTED = 10
    STORAGE_SPACE = 11
    UNKNOWN_REPLICATION = 12
    UNAUTHORISED_ACTION = 13
    REPLICATION_CONNECTION_FAILURE = 14
    EMPTY_RECORDING = 15
    INVALID_POSITION = 16


class ArchiveError(_CommonArchiveError):
    """An error the archive answered (or the client met talking to it).

    ``error_code`` is the :class:`ArchiveErrorCode` (GENERIC for client-side failures; an unknown number from a
    newer archive stays a plain int), ``correlation_id`` the request's (-1 when none).
    """

    ERROR_CODE: int = ArchiveErrorCode.GENERIC

    def __init__(self, message: str = "", error_code: int | None = None, correlation_id: int = -1) -> None:
        """``error_code`` defaults to the class's own code."""
        code = self.ERROR_CODE if error_code is None else error_code
        try:
            code = ArchiveErrorCode(code)
        except ValueError:
            pass
        super().__init__(message, code, correlation_id)

    @property
    def error_code(self) -> int:
        """The archive error code (an :class:`ArchiveErrorCode` when known)."""
        return self.code

    def __str__(self) -> str:
        """The message, with the code's name and the correlation id."""
        name = self.code.name if isinstance(self.code, ArchiveErrorCode) else str(self.code)
        text = super().__str__()
        return f"{text} (errorCode={name}, correlationId={self.correlation_id})"


class ArchiveTimeoutError(ArchiveError, AeronTimeoutError):
    """No answer from the archive within the message (or connect) timeout."""


def _subclass(name: str, code: ArchiveErrorCode, doc: str) -> type[ArchiveError]:
    return type(name, (ArchiveError,), {"ERROR_CODE": code, "__doc__": doc, "__module__": __name__})


GenericArchiveError = _subclass("GenericArchiveError", ArchiveErrorCode.GENERIC, "GENERIC: unspecific failure.")
ActiveListingError = _subclass("ActiveListingError", ArchiveErrorCode.ACTIVE_LISTING,
                               "ACTIVE_LISTING: a listing is already running on this session.")
ActiveRecordingError = _subclass("ActiveRecordingError", ArchiveErrorCode.ACTIVE_RECORDING,
                                 "ACTIVE_RECORDING: not allowed on an active recording.")
ActiveSubscriptionError = _subclass("ActiveSubscriptionError", ArchiveErrorCode.ACTIVE_SUBSCRIPTION,
                                    "ACTIVE_SUBSCRIPTION: that channel and stream are already being recorded.")
UnknownSubscriptionError = _subclass("UnknownSubscriptionError", ArchiveErrorCode.UNKNOWN_SUBSCRIPTION,
                                     "UNKNOWN_SUBSCRIPTION: no recording subscription matches.")
UnknownRecordingError = _subclass("UnknownRecordingError", ArchiveErrorCode.UNKNOWN_RECORDING,
                                  "UNKNOWN_RECORDING: no such recording in the catalog.")
UnknownReplayError = _subclass("UnknownReplayError", ArchiveErrorCode.UNKNOWN_REPLAY,
                               "UNKNOWN_REPLAY: no such replay session.")
MaxReplaysError = _subclass("MaxReplaysError", ArchiveErrorCode.MAX_REPLAYS,
                            "MAX_REPLAYS: the archive's concurrent replay limit is reached.")
MaxRecordingsError = _subclass("MaxRecordingsError", ArchiveErrorCode.MAX_RECORDINGS,
                               "MAX_RECORDINGS: the archive's concurrent recording limit is reached.")
InvalidExtensionError = _subclass("InvalidExtensionError", ArchiveErrorCode.INVALID_EXTENSION,
                                  "INVALID_EXTENSION: the image does not match the recording being extended.")
AuthenticationRejectedError = _subclass("AuthenticationRejectedError", ArchiveErrorCode.AUTHENTICATION_REJECTED,
                                        "AUTHENTICATION_REJECTED: the archive refused the connect.")
StorageSpaceArchiveError = _subclass("StorageSpaceArchiveError", ArchiveErrorCode.STORAGE_SPACE,
                                     "STORAGE_SPACE: the archive is low on storage space.")
UnknownReplicationError = _subclass("UnknownReplicationError", ArchiveErrorCode.UNKNOWN_REPLICATION,
                                    "UNKNOWN_REPLICATION: no such replication.")
UnauthorisedActionError = _subclass("UnauthorisedActionError", ArchiveErrorCode.UNAUTHORISED_ACTION,
                                    "UNAUTHORISED_ACTION: the archive's authorisation refused the request.")
ReplicationConnectionFailureError = _subclass(
    "ReplicationConnectionFailureError", ArchiveErrorCode.REPLICATION_CONNECTION_FAILURE,
    "REPLICATION_CONNECTION_FAILURE: the destination archive could not connect to the source.")
EmptyRecordingError = _subclass("EmptyRecordingError", ArchiveErrorCode.EMPTY_RECORDING,
                                "EMPTY_RECORDING: nothing to replay in the requested range.")
InvalidPositionError = _subclass("InvalidPositionError", ArchiveErrorCode.INVALID_POSITION,
                                 "INVALID_POSITION: the position is unaligned or outside the recording.")

ERROR_CLASSES: dict[int, type[ArchiveError]] = {
    cls.ERROR_CODE: cls for cls in (
        GenericArchiveError, ActiveListingError, ActiveRecordingError, ActiveSubscriptionError,
        UnknownSubscriptionError, UnknownRecordingError, UnknownReplayError, MaxReplaysError, MaxRecordingsError,
        InvalidExtensionError, AuthenticationRejectedError, StorageSpaceArchiveError, UnknownReplicationError,
        UnauthorisedActionError, ReplicationConnectionFailureError, EmptyRecordingError, InvalidPositionError)
}


def archive_error(message: str, error_code: int, correlation_id: int = -1) -> ArchiveError:
    """The exception for an ERROR response: the class of ``error_code`` (plain ArchiveError when unknown)."""
    cls = ERROR_CLASSES.get(error_code, ArchiveError)
    return cls(message, error_code, correlation_id)


__all__ = [
    "ArchiveErrorCode", "ArchiveError", "ArchiveTimeoutError", "archive_error", "ERROR_CLASSES",
    "GenericArchiveError", "ActiveListingError", "ActiveRecordingError", "ActiveSubscriptionError",
    "UnknownSubscriptionError", "UnknownRecordingError", "UnknownReplayError", "MaxReplaysError",
    "MaxRecordingsError", "InvalidExtensionError", "AuthenticationRejectedError", "StorageSpaceArchiveError",
    "UnknownReplicationError", "UnauthorisedActionError", "ReplicationConnectionFailureError",
    "EmptyRecordingError", "InvalidPositionError",
]
