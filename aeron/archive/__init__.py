# SPDX-License-Identifier: Apache-2.0
"""Aeron Archive: record, replay and replicate streams, file- and protocol-compatible with official Aeron."""
from aeron.archive.archive_proxy import ArchiveProxy, ReplayParams, ReplicationParams
from aeron.archive.client import AeronArchive, Context, SourceLocation
from aeron.archive.errors import ArchiveError, ArchiveErrorCode, ArchiveTimeoutError

__all__ = ["AeronArchive", "Context", "SourceLocation", "ArchiveProxy", "ReplayParams", "ReplicationParams",
           "ArchiveError", "ArchiveErrorCode", "ArchiveTimeoutError"]
