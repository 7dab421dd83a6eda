# SPDX-License-Identifier: Apache-2.0
"""Aeron Archive: record, replay and replicate streams, file- and protocol-compatible with official Aeron."""
from aeron.archive.archive_proxy import ArchiveProxy, ReplayParams, ReplicationParams
from aeron.archive.client import AeronArchive, AsyncConnect, Context, SourceLocation
from aeron.archive.errors import ArchiveError, ArchiveErrorCode, ArchiveTimeoutError
from aeron.archive.persistent_subscription import PersistentSubscription
from aeron.archive.replay_merge import ReplayMerge

__all__ = ["AeronArchive", "AsyncConnect", "Context", "SourceLocation", "ArchiveProxy", "ReplayParams",
           "ReplicationParams", "ArchiveError", "ArchiveErrorCode", "ArchiveTimeoutError", "PersistentSubscription",
           "ReplayMerge"]
