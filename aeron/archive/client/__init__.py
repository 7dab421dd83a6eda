# SPDX-License-Identifier: Apache-2.0
"""The archive client (Aeron's ``io.aeron.archive.client``): :class:`AeronArchive` and its Context, the
:class:`ArchiveProxy` that encodes requests, the pollers and adapters of the control response and recording events
streams, :class:`ReplayMerge` and :class:`PersistentSubscription`.

It builds on the Aeron client and on what the archive's client and server share (``aeron.archive.configuration``,
``aeron.archive.errors``, ``aeron.archive.recording_descriptor``), never on the archive server: importing it
loads no ``Archive``, conductor or session (docs/layers.md).
"""
from aeron.archive.client.aeron_archive import (AeronArchive, AsyncConnect, Context, ContextSettings,
                                                NullCredentialsSupplier, SourceLocation, State, connect_op,
                                                is_response_channel, replay_image_session_id,
                                                segment_file_base_position)
from aeron.archive.client.handlers import (AgentInvoker, ControlledFragmentHandler, CredentialsSupplier,
                                          FragmentHandler, ImageHandler)
from aeron.archive.client.archive_proxy import ArchiveProxy, ReplayParams, ReplicationParams
from aeron.archive.client.persistent_subscription import PersistentSubscription
from aeron.archive.client.pollers import (ControlResponsePoller, RecordingDescriptorPoller, RecordingEvent,
                                          RecordingEventsAdapter, RecordingProgress, RecordingSignalAdapter,
                                          RecordingSignalEvent, RecordingStarted, RecordingStopped,
                                          RecordingSubscriptionDescriptor, RecordingSubscriptionDescriptorPoller,
                                          decode_recording_event)
from aeron.archive.client.replay_merge import ReplayMerge
from aeron.archive.configuration import (NULL_LENGTH, NULL_POSITION, NULL_TIMESTAMP, NULL_VALUE, REPLAY_ALL_AND_FOLLOW,
                                         REPLAY_ALL_AND_STOP)
from aeron.archive.errors import ArchiveError, ArchiveErrorCode, ArchiveTimeoutError
from aeron.archive.recording_descriptor import RecordingDescriptor

__all__ = [
    "AeronArchive", "AsyncConnect", "Context", "ContextSettings", "NullCredentialsSupplier", "SourceLocation", "State",
    "connect_op",
    "is_response_channel", "replay_image_session_id", "segment_file_base_position",
    "ArchiveProxy", "ReplayParams", "ReplicationParams",
    "FragmentHandler", "ControlledFragmentHandler", "ImageHandler", "CredentialsSupplier", "AgentInvoker",
    "PersistentSubscription", "ReplayMerge",
    "ControlResponsePoller", "RecordingDescriptorPoller", "RecordingSubscriptionDescriptorPoller",
    "RecordingSignalAdapter", "RecordingEventsAdapter", "RecordingSignalEvent", "RecordingSubscriptionDescriptor",
    "RecordingEvent", "RecordingStarted", "RecordingProgress", "RecordingStopped", "decode_recording_event",
    "RecordingDescriptor", "ArchiveError", "ArchiveErrorCode", "ArchiveTimeoutError",
    "NULL_VALUE", "NULL_POSITION", "NULL_LENGTH", "NULL_TIMESTAMP", "REPLAY_ALL_AND_FOLLOW", "REPLAY_ALL_AND_STOP",
]
