# SPDX-License-Identifier: Apache-2.0
"""The ``aeron`` Spark sink: each row's payload published as one message on a channel and stream.

``df.write.format("aeron").option("channel", "aeron:udp?endpoint=host:port").option("streamId", "1001")
.save()`` and the streaming twin (``writeStream.format("aeron")``). Each write task connects a client to a
running media driver (``aeronDir``, default the client's default directory), adds an exclusive publication,
waits for it to connect, and offers the rows of its partition in order. Options (case-insensitive):

- ``channel`` and ``streamId`` (required).
- ``column``: the binary or string column to publish (default ``payload``); ``encoding=json`` publishes each
  whole row as a JSON object instead.
- ``aeronDir``: the driver's directory; ``timeoutMs`` (default 10,000): how long a task waits for the
  publication to connect, or for one message to get past back pressure, before it fails with
  AeronTimeoutError.

The driver runs outside the Spark tasks (an embedded driver per task would not outlive its publication's
delivery).
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

from aeron.client.aeron import Aeron
from aeron.client.context import Context
from aeron.common.errors import (
    AeronTimeoutError,
    InvalidArgumentError,
    PublicationClosedError,
)

_BACK_OFF_S = 0.0005


@dataclasses.dataclass
class PublishedMessages(WriterCommitMessage):
    """What one task published: its message count and the publication's final position."""

    messages: int
    position: int


@dataclasses.dataclass(frozen=True)
class SinkSettings:
    """The parsed options of the sink."""

    channel: str
    stream_id: int
    column: str
    encoding: str
    aeron_dir: str | None
    timeout_s: float

    @classmethod
    def from_options(cls, options: Any) -> SinkSettings:
        """Parse the options (see the module docstring)."""
        channel = options.get("channel")
        stream = options.get("streamId")
        if not channel or stream is None:
            raise InvalidArgumentError("the aeron sink needs option('channel', ...) and option('streamId', ...)")
        encoding = (options.get("encoding") or "column").lower()
        if encoding not in ("column", "json"):
            raise InvalidArgumentError(f"option encoding must be 'column' or 'json', got {encoding!r}")
        try:
            stream_id = int(stream)
            timeout_ms = int(options.get("timeoutMs") or 10_000)
        except ValueError:
            raise InvalidArgumentError("options streamId and timeoutMs must be integers") from None
        return cls(channel, stream_id, options.get("column") or "payload", encoding, options.get("aeronDir"),
                   timeout_ms / 1000.0)


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
    """Offer every message of ``batches`` on one exclusive publication, in order, with back pressure."""
    context = Context(settings.aeron_dir) if settings.aeron_dir else Context()
    count = 0
    with Aeron.connect(context) as aeron:
        publication = aeron.add_exclusive_publication(settings.channel, settings.stream_id)
        deadline = time.monotonic() + settings.timeout_s
        while not publication.is_connected:
            if time.monotonic() > deadline:
                raise AeronTimeoutError(f"publication {settings.channel} stream {settings.stream_id} not connected "
                                        f"after {settings.timeout_s} s")
            time.sleep(0.001)
        for batch in batches:
            messages = _payloads(batch, settings)
            if isinstance(messages, list):
                for m in messages:
                    _offer(publication, m, 0, len(m), settings)
            else:
                offsets, data = messages
                for i in range(len(offsets) - 1):
                    start = offsets[i]
                    _offer(publication, data, start, offsets[i + 1] - start, settings)
                count += len(offsets) - 1
                continue
            count += len(messages)
        position = publication.position
        publication.close()
    return PublishedMessages(count, position)


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
