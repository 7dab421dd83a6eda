# SPDX-License-Identifier: Apache-2.0
"""The archive's constants, defined once for its client, its server and the readers of its files: Aeron's
``AeronArchive`` statics (``NULL_POSITION``, ``REPLAY_ALL_AND_FOLLOW``, ...) and ``AeronArchive.Configuration``
(the protocol version, the property names and defaults both ends of the control channel share).

Frame and log constants are the transport's (``aeron._core.logbuffer.FRAME_ALIGNMENT``,
``aeron._core.frames.DATA_HEADER_LENGTH``), and ``NULL_VALUE`` is ``aeron.common.constants``'s (``Aeron.NULL_VALUE``),
not repeated here. This module imports nothing of the archive, so a client, a server and a file reader may all
import it.
"""
from __future__ import annotations

from aeron._core.cnc import semantic_version_compose
from aeron._core.logbuffer import DEFAULT_MTU_LENGTH
from aeron.common.constants import NULL_VALUE

NULL_POSITION = NULL_VALUE          # no position: a recording's start when replaying, still active when stopping
NULL_TIMESTAMP = NULL_VALUE
NULL_LENGTH = NULL_VALUE
REPLAY_ALL_AND_FOLLOW = NULL_LENGTH  # replay length: all that is recorded, then follow the live recording
REPLAY_ALL_AND_STOP = -2            # replay length: all that is recorded when the replay starts
NOT_CONNECTED_MSG = "not connected"

# the control protocol's version: 1.12.0, sent in AuthConnectRequest and in every ControlResponse
PROTOCOL_MAJOR_VERSION = 1
PROTOCOL_MINOR_VERSION = 12
PROTOCOL_PATCH_VERSION = 0
PROTOCOL_SEMANTIC_VERSION = semantic_version_compose(PROTOCOL_MAJOR_VERSION, PROTOCOL_MINOR_VERSION,
                                                     PROTOCOL_PATCH_VERSION)
# archives from this version on answer an ArchiveIdRequest (AeronArchive.AsyncConnect asks it after connecting)
PROTOCOL_VERSION_WITH_ARCHIVE_ID = semantic_version_compose(1, 11, 0)

# property names and defaults the client's and the server's contexts share
CONTROL_CHANNEL_PROP_NAME = "aeron.archive.control.channel"
CONTROL_STREAM_ID_PROP_NAME = "aeron.archive.control.stream.id"
CONTROL_STREAM_ID_DEFAULT = 10
LOCAL_CONTROL_CHANNEL_PROP_NAME = "aeron.archive.local.control.channel"
LOCAL_CONTROL_CHANNEL_DEFAULT = "aeron:ipc?term-length=64k"
LOCAL_CONTROL_STREAM_ID_PROP_NAME = "aeron.archive.local.control.stream.id"
LOCAL_CONTROL_STREAM_ID_DEFAULT = CONTROL_STREAM_ID_DEFAULT
CONTROL_RESPONSE_CHANNEL_PROP_NAME = "aeron.archive.control.response.channel"
CONTROL_RESPONSE_STREAM_ID_PROP_NAME = "aeron.archive.control.response.stream.id"
CONTROL_RESPONSE_STREAM_ID_DEFAULT = 20
RECORDING_EVENTS_CHANNEL_PROP_NAME = "aeron.archive.recording.events.channel"
RECORDING_EVENTS_STREAM_ID_PROP_NAME = "aeron.archive.recording.events.stream.id"
RECORDING_EVENTS_STREAM_ID_DEFAULT = 30
RECORDING_EVENTS_ENABLED_PROP_NAME = "aeron.archive.recording.events.enabled"
RECORDING_EVENTS_ENABLED_DEFAULT = False
CONTROL_TERM_BUFFER_SPARSE_PROP_NAME = "aeron.archive.control.term.buffer.sparse"
CONTROL_TERM_BUFFER_SPARSE_DEFAULT = True
CONTROL_TERM_BUFFER_LENGTH_PROP_NAME = "aeron.archive.control.term.buffer.length"
CONTROL_TERM_BUFFER_LENGTH_DEFAULT = 64 * 1024
CONTROL_MTU_LENGTH_PROP_NAME = "aeron.archive.control.mtu.length"
CONTROL_MTU_LENGTH_DEFAULT = DEFAULT_MTU_LENGTH     # the driver's
MESSAGE_TIMEOUT_PROP_NAME = "aeron.archive.message.timeout"
MESSAGE_TIMEOUT_DEFAULT_NS = 10_000_000_000
MESSAGE_RETRY_ATTEMPTS_PROP_NAME = "aeron.archive.message.retry.attempts"
MESSAGE_RETRY_ATTEMPTS_DEFAULT = 3
CLIENT_NAME_PROP_NAME = "aeron.archive.client.name"
MAX_CLIENT_NAME_LENGTH = 100

__all__ = [
    "NULL_VALUE", "NULL_POSITION", "NULL_TIMESTAMP", "NULL_LENGTH", "REPLAY_ALL_AND_FOLLOW", "REPLAY_ALL_AND_STOP",
    "NOT_CONNECTED_MSG", "PROTOCOL_MAJOR_VERSION", "PROTOCOL_MINOR_VERSION", "PROTOCOL_PATCH_VERSION",
    "PROTOCOL_SEMANTIC_VERSION", "PROTOCOL_VERSION_WITH_ARCHIVE_ID",
    "CONTROL_CHANNEL_PROP_NAME", "CONTROL_STREAM_ID_PROP_NAME", "CONTROL_STREAM_ID_DEFAULT",
    "LOCAL_CONTROL_CHANNEL_PROP_NAME", "LOCAL_CONTROL_CHANNEL_DEFAULT", "LOCAL_CONTROL_STREAM_ID_PROP_NAME",
    "LOCAL_CONTROL_STREAM_ID_DEFAULT", "CONTROL_RESPONSE_CHANNEL_PROP_NAME", "CONTROL_RESPONSE_STREAM_ID_PROP_NAME",
    "CONTROL_RESPONSE_STREAM_ID_DEFAULT", "RECORDING_EVENTS_CHANNEL_PROP_NAME", "RECORDING_EVENTS_STREAM_ID_PROP_NAME",
    "RECORDING_EVENTS_STREAM_ID_DEFAULT", "RECORDING_EVENTS_ENABLED_PROP_NAME", "RECORDING_EVENTS_ENABLED_DEFAULT",
    "CONTROL_TERM_BUFFER_SPARSE_PROP_NAME", "CONTROL_TERM_BUFFER_SPARSE_DEFAULT",
    "CONTROL_TERM_BUFFER_LENGTH_PROP_NAME", "CONTROL_TERM_BUFFER_LENGTH_DEFAULT", "CONTROL_MTU_LENGTH_PROP_NAME",
    "CONTROL_MTU_LENGTH_DEFAULT", "MESSAGE_TIMEOUT_PROP_NAME", "MESSAGE_TIMEOUT_DEFAULT_NS",
    "MESSAGE_RETRY_ATTEMPTS_PROP_NAME", "MESSAGE_RETRY_ATTEMPTS_DEFAULT", "CLIENT_NAME_PROP_NAME",
    "MAX_CLIENT_NAME_LENGTH",
]
