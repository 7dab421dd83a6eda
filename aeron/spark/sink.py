# SPDX-License-Identifier: Apache-2.0
"""The ``aeron`` Spark sink: each row's payload published as one message on a channel and stream.

``df.write.format("aeron").option("channel", "aeron:udp?endpoint=host:port").option("streamId", "1001")
.save()`` and the streaming twin (``writeStream.format("aeron")``). Each write task adds an exclusive
publication, waits for it to connect, and offers the rows of its partition in order. Options (case-insensitive):

- ``channel`` and ``streamId`` (required).
- ``column``: the binary or string column to publish (default ``payload``); ``encoding=json`` publishes each
  whole row as a JSON object instead.
- ``aeronDir``: the directory of a running media driver. Without it each task launches an embedded driver
  (:mod:`aeron.spark.connection`) and, before closing it, waits until the driver has drained and released the
  closed publication (every message sent, the linger over), or until the archive recorded every message.
- ``timeoutMs`` (default 10,000): how long a task waits for the publication to connect, for one message to get
  past back pressure, or for its messages to be delivered, before it fails with AeronTimeoutError.
- ``record=true``: the archive at ``controlChannel`` (with the other archive options of
  :mod:`aeron.spark.connection`) records what each task publishes: the task starts a recording of its
  publication's session before offering (``sourceLocation``: ``local`` for a spy on the archive's own driver,
  the default for IPC, or ``remote``, the default for UDP), waits until the recorded position reaches the
  publication's, then stops that recording. Each task makes one recording.
"""
from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    DataSourceStreamWriter,
    DataSourceWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from aeron._core.counters import DRIVER_PUBLISHER_LIMIT_TYPE_ID
from aeron.archive.client import AeronArchive, SourceLocation
from aeron.common.channel_uri import ChannelUri
from aeron.common.errors import (
    AeronTimeoutError,
    InvalidArgumentError,
    PublicationClosedError,
)
from aeron.spark.connection import (
    ArchiveSettings,
    Connection,
    bool_option,
    int_option,
    poll_until,
    timeout_ms_option,
)

_BACK_OFF_S = 0.0005


@dataclasses.dataclass
class PublishedMessages(WriterCommitMessage):
    """What one task published: its message count, the publication's final position, and the recording that
    holds them (-1 without ``record``)."""

    messages: int
    position: int
    recording_id: int = -1


@dataclasses.dataclass(frozen=True)
class SinkSettings:
    """The parsed options of the sink."""

    channel: str
    stream_id: int
    column: str
    encoding: str
    aeron_dir: str | None
    timeout_s: float
    archive: ArchiveSettings | None = None
    source_location: SourceLocation = SourceLocation.REMOTE

    @classmethod
    def from_options(cls, options: Any) -> SinkSettings:
        """Parse the options (see the module docstring)."""
        channel = options.get("channel")
        if not channel or options.get("streamId") is None:
            raise InvalidArgumentError("the aeron sink needs option('channel', ...) and option('streamId', ...)")
        encoding = (options.get("encoding") or "column").lower()
        if encoding not in ("column", "json"):
            raise InvalidArgumentError(f"option encoding must be 'column' or 'json', got {encoding!r}")
        stream_id = int_option(options, "streamId", None)
        assert stream_id is not None
        timeout_ms = timeout_ms_option(options)
        archive = None
        location = SourceLocation.LOCAL if channel.startswith("aeron:ipc") else SourceLocation.REMOTE
        if bool_option(options, "record"):
            archive = ArchiveSettings.from_options(options)
            if archive is None:
                raise InvalidArgumentError("option record needs the archive's option('controlChannel', ...)")
            where = options.get("sourceLocation")
            if where:
                if where.lower() not in ("local", "remote"):
                    raise InvalidArgumentError(f"option sourceLocation must be 'local' or 'remote', got {where!r}")
                location = SourceLocation[where.upper()]
        return cls(channel, stream_id, options.get("column") or "payload", encoding, options.get("aeronDir") or None,
                   timeout_ms / 1000.0, archive, location)


def _payloads(batch: pa.RecordBatch, settings: SinkSettings) -> tuple[memoryview, memoryview] | list[bytes]:
    """The messages of ``batch``: (int32 offsets, data) views of a binary column, or encoded rows."""
    if settings.encoding == "json":
        return [json.dumps(row, default=str).encode() for row in batch.to_pylist()]
    if settings.column not in batch.schema.names:
        raise InvalidArgumentError(f"the aeron sink publishes column {settings.column!r}, which the rows lack "
                                   f"(columns: {batch.schema.names})")
    column = batch.column(settings.column)
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type) \
            or pa.types.is_large_binary(column.type):
        column = column.cast(pa.binary())
    if not pa.types.is_binary(column.type):
        raise InvalidArgumentError(f"column {settings.column!r} must be binary or string, is {column.type}")
    if column.null_count:
        raise InvalidArgumentError(f"column {settings.column!r} holds nulls, which are no message")
    _, offsets, data = column.buffers()
    # the views start at the array's own offset (a sliced batch shares its parent's buffers)
    off = memoryview(offsets).cast("i")[column.offset:column.offset + len(column) + 1]
    return off, memoryview(data) if data is not None else memoryview(b"")


def publish(settings: SinkSettings, batches: Iterator[pa.RecordBatch]) -> PublishedMessages:
    """Offer every message of ``batches`` on one exclusive publication, in order, with back pressure; with
    ``record`` in a recording of its own."""
    with Connection(settings.aeron_dir, settings.archive) as conn:
        assert conn.aeron is not None
        archive = conn.archive
        publication = conn.aeron.add_exclusive_publication(settings.channel, settings.stream_id)
        subscription_id = recording_id = -1
        try:
            if archive is not None:
                subscription_id, recording_id = _start_recording(archive, publication, settings)
            poll_until(lambda: publication.is_connected, settings.timeout_s,
                       f"publication {settings.channel} stream {settings.stream_id} not connected")
            count = _offer_all(publication, batches, settings)
            position = publication.position
            if archive is not None:
                poll_until(lambda: archive.get_recording_position(recording_id) >= position, settings.timeout_s,
                           f"recording {recording_id} not at position {position}")
        finally:
            try:
                if archive is not None and subscription_id >= 0:
                    archive.try_stop_recording_subscription(subscription_id)
            finally:
                publication.close()
        if conn.is_embedded and archive is None:
            # the embedded driver goes with this task: first let it send everything and linger for late NAKs
            assert conn.driver is not None
            reader = conn.aeron.counters_reader
            registration_id = publication.registration_id
            linger_s = conn.driver.context.publication_linger_timeout_ns / 1e9
            poll_until(lambda: reader.find_by_type_id_and_registration_id(
                DRIVER_PUBLISHER_LIMIT_TYPE_ID, registration_id) < 0, settings.timeout_s + linger_s,
                f"publication {settings.channel} stream {settings.stream_id} not drained", interval_s=0.005)
    return PublishedMessages(count, position, recording_id)


def _start_recording(archive: AeronArchive, publication: Any, settings: SinkSettings) -> tuple[int, int]:
    """Record ``publication``'s session (before anything is offered, so the recording holds all of it); returns
    (recording subscription id, recording id) once the archive has the recording."""
    uri = ChannelUri.parse(settings.channel)
    uri.put("session-id", str(publication.session_id))
    subscription_id = archive.start_recording(str(uri), settings.stream_id, settings.source_location)
    found = [-1]

    def started() -> bool:
        found[0] = archive.find_last_matching_recording(0, "", settings.stream_id, publication.session_id)
        return found[0] >= 0
    try:
        poll_until(started, settings.timeout_s,
                   f"no recording of session {publication.session_id} stream {settings.stream_id}")
    except BaseException:
        archive.try_stop_recording_subscription(subscription_id)
        raise
    return subscription_id, found[0]


def _offer_all(publication: Any, batches: Iterator[pa.RecordBatch], settings: SinkSettings) -> int:
    count = 0
    for batch in batches:
        messages = _payloads(batch, settings)
        if isinstance(messages, list):
            for m in messages:
                _offer(publication, m, 0, len(m), settings)
            count += len(messages)
        else:
            offsets, data = messages
            for i in range(len(offsets) - 1):
                start = offsets[i]
                _offer(publication, data, start, offsets[i + 1] - start, settings)
            count += len(offsets) - 1
    return count


def _offer(publication: Any, buffer: Any, offset: int, length: int, settings: SinkSettings) -> None:
    result = publication.offer(buffer, offset, length)
    if result > 0:
        return
    deadline = time.monotonic() + settings.timeout_s
    while result < 0:
        if result in (publication.CLOSED, publication.MAX_POSITION_EXCEEDED):
            raise PublicationClosedError(f"publication {settings.channel} stream {settings.stream_id} closed "
                                         f"(offer returned {result})")
        if time.monotonic() > deadline:
            raise AeronTimeoutError(f"message not accepted by {settings.channel} stream {settings.stream_id} "
                                    f"within {settings.timeout_s} s (offer returned {result})")
        time.sleep(_BACK_OFF_S)
        result = publication.offer(buffer, offset, length)


class AeronWriter(DataSourceArrowWriter):
    """Batch writer: one exclusive publication per task."""

    def __init__(self, options: Any) -> None:
        """Parse the options."""
        self.settings = SinkSettings.from_options(options)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> PublishedMessages:
        """Publish this task's rows."""
        return publish(self.settings, iterator)


class AeronStreamWriter(DataSourceStreamArrowWriter):
    """Streaming writer: each micro-batch task publishes its rows as the batch writer does."""

    def __init__(self, options: Any) -> None:
        """Parse the options."""
        self.settings = SinkSettings.from_options(options)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> PublishedMessages:
        """Publish this task's rows."""
        return publish(self.settings, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Published messages are already on the stream: nothing to finish."""

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Published messages cannot be taken back: an aborted batch may have been partly delivered."""


class AeronSinkDataSource(DataSource):
    """``format("aeron")``: see the module docstring."""

    @classmethod
    def name(cls) -> str:
        """The format name."""
        return "aeron"

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        """The batch writer (``overwrite`` means nothing to a stream)."""
        return AeronWriter(self.options)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        """The streaming writer."""
        return AeronStreamWriter(self.options)
