# SPDX-License-Identifier: Apache-2.0
"""Aeron Archive: record, replay and replicate streams, file- and protocol-compatible with official Aeron.

Laid out as Aeron's ``io.aeron.archive``: the client in :mod:`aeron.archive.client` (``AeronArchive``,
``ArchiveProxy``, the pollers, ``ReplayMerge``, ``PersistentSubscription``); the server in this package
(``Archive``, ``ArchiveConductor``, the control, recording, replay and replication sessions, ``ArchiveMarkFile``,
``ArchiveTool``); what both share in modules that import neither (:mod:`aeron.archive.configuration`,
:mod:`aeron.archive.errors`, :mod:`aeron.archive.recording_descriptor`, :mod:`aeron.archive.checksums`); and the
readers of an archive's files, which load no server either (:mod:`aeron.archive.catalog`,
:mod:`aeron.archive.segments`). docs/layers.md holds the rule.

The names below are imported on first use, so ``import aeron.archive.client`` loads no server code and a reader of
archive files loads neither a client nor a server.
"""
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # What __getattr__ returns, spelt out for type checkers (``X as X``: an explicit re-export, as mypy --strict
    # wants); at run time none of it is imported until first used.
    from aeron.archive.archive import Archive as Archive
    from aeron.archive.archive import ArchiveThreadingMode as ArchiveThreadingMode
    from aeron.archive.archive import ArchivingMediaDriver as ArchivingMediaDriver
    from aeron.archive.client import AeronArchive as AeronArchive
    from aeron.archive.client import ArchiveProxy as ArchiveProxy
    from aeron.archive.client import AsyncConnect as AsyncConnect
    from aeron.archive.client import Context as Context
    from aeron.archive.client import PersistentSubscription as PersistentSubscription
    from aeron.archive.client import RecordingSignalEvent as RecordingSignalEvent
    from aeron.archive.client import ReplayMerge as ReplayMerge
    from aeron.archive.client import ReplayParams as ReplayParams
    from aeron.archive.client import ReplicationParams as ReplicationParams
    from aeron.archive.client import SourceLocation as SourceLocation
    from aeron.archive.errors import ArchiveError as ArchiveError
    from aeron.archive.errors import ArchiveErrorCode as ArchiveErrorCode
    from aeron.archive.errors import ArchiveTimeoutError as ArchiveTimeoutError
    from aeron.archive.recording_descriptor import (
        RecordingDescriptor as RecordingDescriptor,
    )

_CLIENT_NAMES = ("AeronArchive", "ArchiveProxy", "AsyncConnect", "Context", "PersistentSubscription",
                 "RecordingSignalEvent", "ReplayMerge", "ReplayParams", "ReplicationParams", "SourceLocation")
_SHARED_NAMES = ("ArchiveError", "ArchiveErrorCode", "ArchiveTimeoutError", "RecordingDescriptor")
_SERVER_NAMES = ("Archive", "ArchiveThreadingMode", "ArchivingMediaDriver")

__all__ = list(_CLIENT_NAMES) + list(_SHARED_NAMES) + list(_SERVER_NAMES)


def __getattr__(name: str) -> object:
    # the client's, the shared and the server's names each from their own module on first use: a client or a
    # reader of archive files loads no archive server
    if name in _CLIENT_NAMES:
        from aeron.archive import client
        return getattr(client, name)
    if name in _SHARED_NAMES:
        if name == "RecordingDescriptor":
            from aeron.archive import recording_descriptor
            return recording_descriptor.RecordingDescriptor
        from aeron.archive import errors
        return getattr(errors, name)
    if name in _SERVER_NAMES:
        from aeron.archive import archive as server
        return getattr(server, name)
    raise AttributeError(f"module 'aeron.archive' has no attribute {name!r}")
