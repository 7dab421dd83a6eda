# SPDX-License-Identifier: Apache-2.0
"""Aeron Archive: record, replay and replicate streams, file- and protocol-compatible with official Aeron."""
from typing import TYPE_CHECKING

from aeron.archive.archive_proxy import ArchiveProxy, ReplayParams, ReplicationParams
from aeron.archive.client import AeronArchive, AsyncConnect, Context, SourceLocation
from aeron.archive.errors import ArchiveError, ArchiveErrorCode, ArchiveTimeoutError
from aeron.archive.persistent_subscription import PersistentSubscription
from aeron.archive.replay_merge import ReplayMerge

if TYPE_CHECKING:
    from aeron.archive.archive import Archive as Archive
    from aeron.archive.archive import ArchiveThreadingMode as ArchiveThreadingMode
    from aeron.archive.archive import ArchivingMediaDriver as ArchivingMediaDriver

_SERVER_NAMES = ("Archive", "ArchiveThreadingMode", "ArchivingMediaDriver")

__all__ = ["AeronArchive", "AsyncConnect", "Context", "SourceLocation", "ArchiveProxy", "ReplayParams",
           "ReplicationParams", "ArchiveError", "ArchiveErrorCode", "ArchiveTimeoutError", "PersistentSubscription",
           "ReplayMerge", "Archive", "ArchiveThreadingMode", "ArchivingMediaDriver"]


def __getattr__(name: str) -> object:
    # the server's names on first use: a client or a reader of archive files loads no archive server
    if name in _SERVER_NAMES:
        import aeron.archive.archive as server
        return getattr(server, name)
    raise AttributeError(f"module 'aeron.archive' has no attribute {name!r}")
