# SPDX-License-Identifier: Apache-2.0
"""The ``aeron-archive`` Spark data source: archive recordings as a DataFrame, in batch and streaming.

``spark.read.format("aeron-archive").option("path", archive_dir).load()`` reads ``archive.catalog`` and the
segment files directly (no driver or archive process), on the driver to plan and on every executor to read, so
the directory must be visible to all of them (local, or a shared filesystem).
``option("controlChannel", ...)`` instead of ``path`` reads through a running archive: the planner
lists its recordings over the control channel and each partition is a replay of its position range, received on
the executor's driver (:mod:`aeron.spark.replay`); same schema, same rows. Options (case-insensitive):

- ``path``: the archive directory, or ``controlChannel`` (and ``controlStreamId``, ``controlResponseChannel``,
  ``controlResponseStreamId``, ``replayChannel``, ``replayStreamId``, ``timeoutMs``, ``aeronDir``: see
  :mod:`aeron.spark.connection`; without ``aeronDir`` each task launches an embedded driver). One of the two.
- ``maxBytesPerPartition``: the most recording bytes of one partition, rounded down to whole terms (at least
  one term); default 512 MiB (a task has a fixed cost of its own: fewer, larger partitions scan faster, as long
  as there are at least as many as task slots).
- ``recordingId`` / ``streamId``: comma-separated ids to read; ``channel``: a substring of the recorded
  channel; ``fromPosition`` / ``toPosition``: the first fragment's position, ``[from, to)``. These are the
  predicates that ``pushFilters`` takes from a query on Spark 4.1+ (``recording_id``, ``stream_id`` and
  ``position`` comparisons), with ``option("pushFilters", "true")`` and the Spark conf
  ``spark.sql.python.filterPushdown.enabled=true`` (Spark refuses a reader that pushes while the conf is off).
- ``onCorrupt``: ``fail`` (default: CorruptSegmentError naming file and offset) or ``skip`` (warn, resume at
  the next term).
- ``maxRowsPerBatch`` / ``maxBytesPerBatch``: the Arrow batches ``read`` yields.
- ``decoder``: ``raw`` (default), ``utf-8``, ``json`` (+ ``valueSchema``), ``struct:<format>``
  (+ ``valueColumns``): typed columns after ``payload`` (:mod:`aeron.spark.decoders`; :func:`with_decoder` for a
  user function).
- streaming: ``startingPosition`` ``earliest`` (default) or ``latest``; ``maxBytesPerTrigger``.
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    LessThan,
    LessThanOrEqual,
)
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxBytes,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from aeron.archive.catalog import Catalog, RecordingDescriptor
from aeron.common.errors import InvalidArgumentError
from aeron.spark import decoders, replay, scan
from aeron.spark.connection import ArchiveSettings, Connection, int_option

SCHEMA_DDL = ("recording_id bigint, position bigint, stream_id int, session_id int, term_id int, term_offset int, "
              "flags smallint, reserved_value bigint, timestamp timestamp, payload binary")


def _ids(value: str | None) -> frozenset[int] | None:
    if value is None or value.strip() == "":
        return None
    try:
        return frozenset(int(v) for v in value.split(","))
    except ValueError:
        raise InvalidArgumentError(f"expected comma-separated integers, got {value!r}") from None


@dataclasses.dataclass
class Selection:
    """Which recordings and positions a query reads: from the options, narrowed by pushed filters."""

    archive_dir: str
    remote: ArchiveSettings | None = None
    recording_ids: frozenset[int] | None = None
    stream_ids: frozenset[int] | None = None
    channel: str | None = None
    from_position: int = 0
    to_position: int | None = None

    @classmethod
    def from_options(cls, options: Any) -> Selection:
        """Parse the selection options (see the module docstring)."""
        path = options.get("path")
        remote = ArchiveSettings.from_options(options)
        if path and remote is not None:
            raise InvalidArgumentError("the aeron-archive source reads either the files (option path) or through "
                                       "a running archive (option controlChannel), not both")
        if not path and remote is None:
            raise InvalidArgumentError("the aeron-archive source needs option('path', <archive dir>) or "
                                       "option('controlChannel', <the archive's control channel>)")
        return cls(os.fspath(path) if path else "", remote, _ids(options.get("recordingId")),
                   _ids(options.get("streamId")),
                   options.get("channel") or None, int_option(options, "fromPosition", 0) or 0,
                   int_option(options, "toPosition", None))

    def matches(self, d: RecordingDescriptor) -> bool:
        """Whether recording ``d`` is selected."""
        return ((self.recording_ids is None or d.recording_id in self.recording_ids)
                and (self.stream_ids is None or d.stream_id in self.stream_ids)
                and (self.channel is None or self.channel in d.original_channel
                     or self.channel in d.stripped_channel))

    def narrow_ids(self, field: str, ids: frozenset[int]) -> None:
        """AND ``ids`` into the recording or stream ids."""
        current = getattr(self, field)
        setattr(self, field, ids if current is None else current & ids)

    def push(self, f: Filter) -> bool:
        """Take filter ``f`` when it is one the scan applies exactly; False leaves it to Spark."""
        column = f.attribute[0] if len(f.attribute) == 1 else None
        ids_field = {"recording_id": "recording_ids", "stream_id": "stream_ids"}.get(column or "")
        if ids_field is not None:
            if isinstance(f, EqualTo) and isinstance(f.value, int):
                self.narrow_ids(ids_field, frozenset([f.value]))
                return True
            if isinstance(f, In) and all(isinstance(v, int) for v in f.value):
                self.narrow_ids(ids_field, frozenset(f.value))
                return True
            return False
        if column == "position" and isinstance(getattr(f, "value", None), int):
            v = f.value
            if isinstance(f, EqualTo):
                self._from(v)
                self._to(v + 1)
            elif isinstance(f, GreaterThan):
                self._from(v + 1)
            elif isinstance(f, GreaterThanOrEqual):
                self._from(v)
            elif isinstance(f, LessThan):
                self._to(v)
            elif isinstance(f, LessThanOrEqual):
                self._to(v + 1)
            else:
                return False
            return True
        return False

    def _from(self, position: int) -> None:
        self.from_position = max(self.from_position, position)

    def _to(self, position: int) -> None:
        self.to_position = position if self.to_position is None else min(self.to_position, position)

    def descriptors(self) -> list[RecordingDescriptor]:
        """The VALID, selected recordings of the catalog now."""
        with Catalog(self.archive_dir, read_only=True) as catalog:
            return [d for d in catalog if self.matches(d)]

    def replayed_ranges(self, aeron_dir: str | None, max_bytes_per_partition: int) -> list[replay.ReplayedRange]:
        """The ranges of the selected recordings of the running archive (a connection only while planning)."""
        assert self.remote is not None
        ranges = []
        with Connection(aeron_dir, self.remote) as conn:
            assert conn.archive is not None
            for d in replay.list_descriptors(conn.archive):
                if self.matches(d):
                    end = replay.recorded_end(conn.archive, d)
                    to = end if self.to_position is None else self.to_position
                    ranges.extend(replay.plan(d, self.from_position, to, end, max_bytes_per_partition))
        return ranges


class RangePartition(InputPartition):
    """One Spark partition: a position range of one recording (:class:`aeron.spark.scan.RecordingRange`), or one
    to replay (:class:`aeron.spark.replay.ReplayedRange`)."""

    def __init__(self, value: scan.RecordingRange | replay.ReplayedRange) -> None:
        """Wrap ``value``."""
        super().__init__(value)


@dataclasses.dataclass(frozen=True)
class ReadSettings:
    """How executors read a range (the options that do not select)."""

    skip_corrupt: bool = False
    max_rows_per_batch: int = scan.DEFAULT_MAX_ROWS_PER_BATCH
    max_bytes_per_batch: int = scan.DEFAULT_MAX_BYTES_PER_BATCH
    decoder: decoders.Decoder | None = None
    decoded_types: tuple[pa.DataType, ...] = ()
    remote: ArchiveSettings | None = None
    aeron_dir: str | None = None

    @classmethod
    def from_options(cls, options: Any, schema: StructType | None = None,
                     decoder: decoders.Decoder | None = None) -> ReadSettings:
        """Parse ``onCorrupt``, ``maxRowsPerBatch``, ``maxBytesPerBatch`` and the decoder (``decoder`` when the
        format brings its own); ``schema`` is the one Spark resolved, whose trailing columns the decoder fills."""
        on_corrupt = (options.get("onCorrupt") or "fail").lower()
        if on_corrupt not in ("fail", "skip"):
            raise InvalidArgumentError(f"option onCorrupt must be 'fail' or 'skip', got {on_corrupt!r}")
        decoder = decoder or decoders.decoder_from_options(options)
        types: tuple[pa.DataType, ...] = ()
        if decoder is not None and schema is not None:
            arrow = to_arrow_schema(schema, timezone="UTC")
            types = tuple(arrow.field(i).type for i in range(len(scan.SCHEMA), len(arrow)))
            if isinstance(decoder, decoders.JsonDecoder):
                decoder = dataclasses.replace(decoder, types=types)
        return cls(on_corrupt == "skip", int_option(options, "maxRowsPerBatch", scan.DEFAULT_MAX_ROWS_PER_BATCH) or 1,
                   int_option(options, "maxBytesPerBatch", scan.DEFAULT_MAX_BYTES_PER_BATCH) or 1, decoder, types,
                   ArchiveSettings.from_options(options), options.get("aeronDir") or None)

    def _replayed(self, value: replay.ReplayedRange) -> Iterator[pa.RecordBatch]:
        assert self.remote is not None
        with Connection(self.aeron_dir, self.remote) as conn:
            yield from replay.read_replayed(conn, self.remote, value, skip_corrupt=self.skip_corrupt,
                                            max_rows_per_batch=self.max_rows_per_batch,
                                            max_bytes_per_batch=self.max_bytes_per_batch)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Record batches of one partition (with the decoder's columns)."""
        if isinstance(partition.value, replay.ReplayedRange):
            batches = self._replayed(partition.value)
        else:
            batches = scan.read_range(partition.value, skip_corrupt=self.skip_corrupt,
                                      max_rows_per_batch=self.max_rows_per_batch,
                                      max_bytes_per_batch=self.max_bytes_per_batch)
        if self.decoder is None:
            return batches
        return (decoders.apply(self.decoder, b, self.decoded_types) for b in batches)


def _max_bytes_per_partition(options: Any) -> int:
    value = int_option(options, "maxBytesPerPartition", scan.DEFAULT_MAX_BYTES_PER_PARTITION)
    assert value is not None
    if value < 1:
        raise InvalidArgumentError(f"maxBytesPerPartition must be positive, got {value}")
    return value


class AeronArchiveReader(DataSourceReader):
    """Batch reader: plans term-aligned ranges on the driver, reads them with the compiled kernel."""

    def __init__(self, options: Any, schema: StructType | None = None,
                 decoder: decoders.Decoder | None = None) -> None:
        """Parse ``options`` (see the module docstring)."""
        self.selection = Selection.from_options(options)
        self.settings = ReadSettings.from_options(options, schema, decoder)
        self.max_bytes_per_partition = _max_bytes_per_partition(options)

    def partitions(self) -> Sequence[InputPartition]:
        """One partition per range of at most maxBytesPerPartition of each selected recording."""
        s = self.selection
        parts: list[InputPartition] = []
        if s.remote is not None:
            parts.extend(RangePartition(r) for r in s.replayed_ranges(self.settings.aeron_dir,
                                                                      self.max_bytes_per_partition))
        else:
            for d in s.descriptors():
                end = scan.recording_end(s.archive_dir, d)
                hi = end if s.to_position is None else min(end, s.to_position)
                for r in scan.split_recording(s.archive_dir, d, s.from_position, hi, self.max_bytes_per_partition):
                    parts.append(RangePartition(r))
        # Spark wants at least one partition; an empty range reads nothing
        return parts or [RangePartition(dataclasses.replace(_EMPTY, archive_dir=s.archive_dir))]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Arrow batches of ``partition``."""
        return self.settings.read(partition)


_EMPTY = scan.RecordingRange("", -1, 0, 0, 0, 0, 0, 1 << 16, 1 << 16, 0)


class AeronArchivePushdownReader(AeronArchiveReader):
    """The batch reader that also takes predicates from Spark 4.1+ (``option("pushFilters", "true")``)."""

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        """Apply recording_id, stream_id and position predicates in planning; return the rest to Spark."""
        for f in filters:
            if not self.selection.push(f):
                yield f


class AeronArchiveStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Streaming reader: offsets ``{recordingId: position}`` (keys as strings, as JSON has them).

    A batch ``[start, end)`` reads, per recording, the messages whose first fragment lies in its position range,
    so a query restarted from its checkpoint reads every message once whatever the trigger boundaries were. A
    live recording's end is the start of its first incomplete message; new matching recordings join as new keys.
    With ``controlChannel`` each planning call connects to the archive for its duration (Spark may kill the
    planner's process without calling ``stop``, which would leave an embedded driver's directory behind), and a
    live recording's end is found by replaying the term of its recorded position
    (:func:`aeron.spark.replay.message_boundary`).
    """

    def __init__(self, options: Any, schema: StructType | None = None,
                 decoder: decoders.Decoder | None = None) -> None:
        """Parse ``options`` (see the module docstring)."""
        self.selection = Selection.from_options(options)
        self.settings = ReadSettings.from_options(options, schema, decoder)
        self.max_bytes_per_partition = _max_bytes_per_partition(options)
        self.max_bytes_per_trigger = int_option(options, "maxBytesPerTrigger", None)
        starting = (options.get("startingPosition") or "earliest").lower()
        if starting not in ("earliest", "latest"):
            raise InvalidArgumentError(f"startingPosition must be 'earliest' or 'latest', got {starting!r}")
        self.starting = starting
        self._available_now: dict[str, int] | None = None
        self._ends: dict[int, int] = {}            # live recordings: the last end found, where the next walk starts
        self._conn: Connection | None = None

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without a planning connection (executors read with connections of their own)."""
        state = dict(self.__dict__)
        state["_conn"] = None
        return state

    @contextlib.contextmanager
    def _planning(self) -> Iterator[None]:
        if self.selection.remote is None or self._conn is not None:
            yield
            return
        with Connection(self.settings.aeron_dir, self.selection.remote) as conn:
            self._conn = conn
            try:
                yield
            finally:
                self._conn = None

    def _archive(self) -> Connection:
        assert self._conn is not None, "archive calls happen inside _planning"
        return self._conn

    def _descriptors(self) -> list[RecordingDescriptor]:
        s = self.selection
        if s.remote is None:
            return s.descriptors()
        archive = self._archive().archive
        assert archive is not None
        return [d for d in replay.list_descriptors(archive) if s.matches(d)]

    def _end(self, d: RecordingDescriptor) -> int:
        s = self.selection
        if s.remote is None:
            end = scan.recording_end(s.archive_dir, d, self._ends.get(d.recording_id))
            if d.stop_position < 0:
                self._ends[d.recording_id] = end
            return end
        conn = self._archive()
        assert conn.archive is not None
        end = replay.recorded_end(conn.archive, d)
        if d.stop_position < 0:
            end = replay.message_boundary(conn, s.remote, d, end)
        return end

    def _ranges(self, d: RecordingDescriptor, lo: int, hi: int) -> list[InputPartition]:
        s = self.selection
        if s.remote is None:
            return [RangePartition(r) for r in
                    scan.split_recording(s.archive_dir, d, lo, hi, self.max_bytes_per_partition)]
        archive = self._archive().archive
        assert archive is not None
        # a message begun before hi may end past it (hi cut by maxBytesPerTrigger): replay up to what is recorded
        limit = replay.recorded_end(archive, d)
        return [RangePartition(r) for r in replay.plan(d, lo, hi, limit, self.max_bytes_per_partition)]

    def _latest(self) -> dict[str, int]:
        s = self.selection
        latest = {}
        for d in self._descriptors():
            end = self._end(d)
            if s.to_position is not None:
                end = min(end, s.to_position)
            latest[str(d.recording_id)] = max(end, d.start_position, s.from_position)
        return latest

    def _first(self, d: RecordingDescriptor) -> int:
        return max(d.start_position, self.selection.from_position)

    def initialOffset(self) -> dict:
        """Every selected recording at its start (``earliest``) or at its end now (``latest``)."""
        with self._planning():
            if self.starting == "latest":
                return self._latest()
            return {str(d.recording_id): self._first(d) for d in self._descriptors()}

    def getDefaultReadLimit(self) -> ReadLimit:
        """``maxBytesPerTrigger`` when set."""
        if self.max_bytes_per_trigger is not None:
            return ReadMaxBytes(self.max_bytes_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        """Fix the target: nothing recorded after this call is read by an AvailableNow query."""
        with self._planning():
            self._available_now = self._latest()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        """The end of every selected recording now (or at the AvailableNow target), within ``limit``'s bytes."""
        with self._planning():
            latest = self._available_now if self._available_now is not None else self._latest()
            budget = limit.max_bytes if isinstance(limit, ReadMaxBytes) else None
            end = dict(start)
            for key in sorted(latest, key=int):
                first = start.get(key)
                if first is None:
                    first = self._first_of(key)
                target = latest[key]
                if budget is not None:
                    take = max(0, min(target - first, budget))
                    budget -= take
                    target = first + take
                end[key] = max(first, target)
            return end

    def _first_of(self, key: str) -> int:
        for d in self._descriptors():
            if d.recording_id == int(key):
                return self._first(d)
        return self.selection.from_position

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        """Ranges ``[start[id], end[id])`` of each recording, split as the batch reader does."""
        with self._planning():
            descriptors = {str(d.recording_id): d for d in self._descriptors()}
            parts: list[InputPartition] = []
            for key in sorted(end, key=int):
                d = descriptors.get(key)
                if d is None:
                    continue                       # purged since: nothing left to read
                lo = start.get(key, self._first(d))
                hi = end[key]
                if hi > lo:
                    parts.extend(self._ranges(d, lo, hi))
            return parts

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Arrow batches of ``partition``."""
        return self.settings.read(partition)

    def commit(self, end: dict) -> None:
        """Nothing to release: the archive keeps its recordings."""

    def stop(self) -> None:
        """Nothing to release: planning connections close with their calls."""


class AeronArchiveDataSource(DataSource):
    """``format("aeron-archive")``: see the module docstring."""

    decoder: decoders.Decoder | None = None         # a format made by with_decoder brings its own

    @classmethod
    def name(cls) -> str:
        """The format name."""
        return "aeron-archive"

    def _decoder(self) -> decoders.Decoder | None:
        return self.decoder or decoders.decoder_from_options(self.options)

    def schema(self) -> str:
        """recording_id, position, stream_id, session_id, term_id, term_offset, flags, reserved_value,
        timestamp, payload, then the decoder's columns."""
        decoder = self._decoder()
        return SCHEMA_DDL if decoder is None else f"{SCHEMA_DDL}, {decoder.ddl}"

    def reader(self, schema: StructType) -> DataSourceReader:
        """The batch reader (the pushdown one with ``option("pushFilters", "true")``)."""
        if (self.options.get("pushFilters") or "false").lower() == "true":
            return AeronArchivePushdownReader(self.options, schema, self.decoder)
        return AeronArchiveReader(self.options, schema, self.decoder)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        """The streaming reader."""
        return AeronArchiveStreamReader(self.options, schema, self.decoder)


def with_decoder(fn: Callable[[pa.BinaryArray], Any], value_schema: str,
                 name: str = "aeron-archive-decoded") -> type[AeronArchiveDataSource]:
    """A source format ``name`` that adds the columns of ``value_schema`` (Spark DDL) computed by
    ``fn(payload: pa.BinaryArray)`` per batch (an Array, a sequence of them, or a RecordBatch); register it with
    ``spark.dataSource.register``. ``fn`` travels to the executors by value (cloudpickle)."""
    format_name = name

    class AeronArchiveDecodedDataSource(AeronArchiveDataSource):
        """``aeron-archive`` with a user decoder."""

        decoder = decoders.FunctionDecoder(fn, value_schema)

        @classmethod
        def name(cls) -> str:
            """The format name given to with_decoder."""
            return format_name

    return AeronArchiveDecodedDataSource
