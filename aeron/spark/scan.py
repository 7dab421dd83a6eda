# SPDX-License-Identifier: Apache-2.0
"""Recorded messages of an archive directory as Arrow record batches, without Spark.

The driver side plans :class:`RecordingRange` pieces from the catalog (:func:`plan_ranges`); the executor side
turns one range into record batches (:func:`read_range`) by mapping the segment files and running the compiled
kernel ``aeron._core.segment_batch`` twice per batch: once to measure, once to fill Arrow buffers allocated in
between. A range carries every descriptor field it needs, so executors never open the catalog.
"""
from __future__ import annotations

import dataclasses
import mmap
import os
import pathlib
import struct
import warnings
from collections.abc import Iterable, Iterator

import pyarrow as pa

from aeron._core.segment_batch import (
    SCAN_CORRUPT,
    SCAN_END,
    SCAN_END_OF_DATA,
    SCAN_FULL,
    TIMESTAMP_NONE,
    TIMESTAMP_PAYLOAD,
    TIMESTAMP_RESERVED,
    scan_messages,
)
from aeron.archive import segments
from aeron.archive.catalog import Catalog
from aeron.archive.recording_descriptor import RecordingDescriptor
from aeron.common.errors import CorruptFileError, InvalidArgumentError

# Each Spark task has a fixed cost in the JVM and the Python worker, a large share of a 128 MiB partition's scan
# (docs/performance.md, "Spark source"); fewer, larger partitions scan faster.
DEFAULT_MAX_BYTES_PER_PARTITION = 512 * 1024 * 1024
DEFAULT_MAX_ROWS_PER_BATCH = 65536
DEFAULT_MAX_BYTES_PER_BATCH = 8 * 1024 * 1024

# Arrow schema of the source; aeron.spark.source gives Spark the same as DDL.
SCHEMA = pa.schema([
    ("recording_id", pa.int64()),
    ("position", pa.int64()),
    ("stream_id", pa.int32()),
    ("session_id", pa.int32()),
    ("term_id", pa.int32()),
    ("term_offset", pa.int32()),
    ("flags", pa.int16()),
    ("reserved_value", pa.int64()),
    ("timestamp", pa.timestamp("us", tz="UTC")),
    ("payload", pa.binary()),
])

# the channel parameters that put a timestamp into each message (the stripped channel keeps them)
_TIMESTAMP_PARAMS = ("media-rcv-ts-offset", "channel-rcv-ts-offset", "channel-snd-ts-offset")


class CorruptSegmentError(CorruptFileError):
    """A recording segment holds a frame whose header contradicts its place (``path`` and ``offset`` name it)."""


@dataclasses.dataclass(frozen=True)
class RecordingRange:
    """Messages of one recording whose first fragment lies in positions ``[from_position, to_position)``.

    ``limit_position`` bounds how far the fragments of a message may run (the recording's stop position, or -1
    while it is recording: up to the first unwritten frame).
    """

    archive_dir: str
    recording_id: int
    from_position: int
    to_position: int
    limit_position: int
    start_position: int
    initial_term_id: int
    term_length: int
    segment_file_length: int
    stream_id: int
    timestamp_mode: int = TIMESTAMP_NONE
    timestamp_offset: int = 0


def timestamp_source(channel: str) -> tuple[int, int]:
    """``(mode, payload_offset)`` of the message timestamps a recorded channel carries (first of the media
    receive, channel receive and channel send timestamps that it sets)."""
    _, _, query = channel.partition("?")
    params = dict(p.partition("=")[::2] for p in query.split("|") if p)
    for name in _TIMESTAMP_PARAMS:
        value = params.get(name)
        if value == "reserved":
            return TIMESTAMP_RESERVED, 0
        if value is not None and value.lstrip("-").isdigit():
            return TIMESTAMP_PAYLOAD, int(value)
    return TIMESTAMP_NONE, 0


def recording_end(archive_dir: str | os.PathLike[str], d: RecordingDescriptor, hint: int | None = None) -> int:
    """The stop position of ``d``; for a live recording (stop -1) the start of its first incomplete message,
    walked from ``hint`` (a message boundary this function returned before) or from the recording's start."""
    if d.stop_position >= 0:
        return d.stop_position
    position = d.start_position if hint is None else max(hint, d.start_position)
    seg_len = d.segment_file_length
    while True:
        seg_base = segments.segment_file_base_position(d.start_position, position, d.term_buffer_length, seg_len)
        try:
            mapped, size = _map(pathlib.Path(archive_dir) / segments.segment_file_name(d.recording_id, seg_base))
        except FileNotFoundError:
            return position
        if mapped is None:
            return position
        try:
            with memoryview(mapped) as view:
                limit = min(seg_len, size)
                walk = position - seg_base
                if walk >= limit:
                    return position
                _, _, next_offset, status, error = scan_messages(
                    view, walk, limit, limit, seg_base, d.term_buffer_length, d.initial_term_id)
        finally:
            mapped.close()
        position = seg_base + (error if status == SCAN_CORRUPT else next_offset)
        if status != SCAN_END or limit < seg_len:
            return position


def split_recording(archive_dir: str, d: RecordingDescriptor, from_position: int, to_position: int,
                    max_bytes_per_partition: int) -> list[RecordingRange]:
    """Term-aligned ranges of at most ``max_bytes_per_partition`` (at least one term) covering
    ``[from_position, to_position)`` of recording ``d``."""
    term_length = d.term_buffer_length
    chunk = max(term_length, max_bytes_per_partition // term_length * term_length)
    base = segments.start_term_base(d.start_position, term_length)
    lo = max(from_position, d.start_position)
    mode, ts_offset = timestamp_source(d.stripped_channel)
    ranges = []
    while lo < to_position:
        edge = base + ((lo - base) // chunk + 1) * chunk
        hi = min(edge, to_position)
        ranges.append(RecordingRange(str(archive_dir), d.recording_id, lo, hi, d.stop_position, d.start_position,
                                     d.initial_term_id, term_length, d.segment_file_length, d.stream_id, mode,
                                     ts_offset))
        lo = hi
    return ranges


def plan_ranges(archive_dir: str | os.PathLike[str], *, recording_ids: Iterable[int] | None = None,
                stream_ids: Iterable[int] | None = None, channel: str | None = None, from_position: int = 0,
                to_position: int | None = None,
                max_bytes_per_partition: int = DEFAULT_MAX_BYTES_PER_PARTITION) -> list[RecordingRange]:
    """Plan the ranges of the VALID recordings of ``archive_dir`` that match the filters (``channel`` is a
    substring of the original or stripped channel); positions filter the first fragment of each message."""
    if max_bytes_per_partition < 1:
        raise InvalidArgumentError(f"maxBytesPerPartition must be positive, got {max_bytes_per_partition}")
    ids = None if recording_ids is None else set(recording_ids)
    streams = None if stream_ids is None else set(stream_ids)
    ranges: list[RecordingRange] = []
    with Catalog(archive_dir, read_only=True) as catalog:
        for d in catalog:
            if ids is not None and d.recording_id not in ids:
                continue
            if streams is not None and d.stream_id not in streams:
                continue
            if channel is not None and channel not in d.original_channel and channel not in d.stripped_channel:
                continue
            end = recording_end(archive_dir, d)
            hi = end if to_position is None else min(end, to_position)
            ranges.extend(split_recording(str(archive_dir), d, from_position, hi, max_bytes_per_partition))
    return ranges


def _segment_pieces(r: RecordingRange) -> Iterator[tuple[int, int, int]]:
    # (segment base, walk start offset, skip-before offset) of each segment the range touches
    seg_len = r.segment_file_length
    position = r.from_position
    while position < r.to_position:
        seg_base = segments.segment_file_base_position(r.start_position, position, r.term_length, seg_len)
        term_base = position - (position & (r.term_length - 1))
        walk = max(term_base, r.start_position) - seg_base
        walk -= walk & 31
        yield seg_base, walk, position - seg_base
        position = seg_base + seg_len


def _map(path: pathlib.Path) -> tuple[mmap.mmap | None, int]:
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            return None, 0
        return mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ), size


def _batch(r: RecordingRange, view: memoryview, walk: int, end: int, limit: int, seg_base: int, skip: int,
           rows: int, nbytes: int) -> tuple[pa.RecordBatch, int]:
    position = pa.allocate_buffer(rows * 8)
    stream_id = pa.allocate_buffer(rows * 4)
    session_id = pa.allocate_buffer(rows * 4)
    term_id = pa.allocate_buffer(rows * 4)
    term_offset = pa.allocate_buffer(rows * 4)
    flags = pa.allocate_buffer(rows * 2)
    reserved = pa.allocate_buffer(rows * 8)
    timestamp = pa.allocate_buffer(rows * 8)
    valid = bytearray((rows + 7) // 8)
    offsets = pa.allocate_buffer((rows + 1) * 4)
    data = pa.allocate_buffer(nbytes)
    got, got_bytes, next_offset, _, _ = scan_messages(
        view, walk, end, limit, seg_base, r.term_length, r.initial_term_id, r.timestamp_mode, r.timestamp_offset,
        rows, nbytes if nbytes > 0 else 1,
        (memoryview(position).cast("q"), memoryview(stream_id).cast("i"), memoryview(session_id).cast("i"),
         memoryview(term_id).cast("i"), memoryview(term_offset).cast("i"), memoryview(flags).cast("h"),
         memoryview(reserved).cast("q"), memoryview(timestamp).cast("q"), memoryview(valid),
         memoryview(offsets).cast("i"), memoryview(data).cast("B")), skip)
    if got != rows or got_bytes != nbytes:
        raise CorruptFileError(f"segment changed between measuring and reading ({got} of {rows} messages)",
                               path=segments.segment_file_name(r.recording_id, seg_base), offset=walk)
    if r.timestamp_mode == TIMESTAMP_NONE:
        ts = pa.nulls(rows, pa.timestamp("us", tz="UTC"))
    else:
        ts = pa.Array.from_buffers(pa.timestamp("ns", tz="UTC"), rows, [pa.py_buffer(valid), timestamp])
        ts = ts.cast(pa.timestamp("us", tz="UTC"), safe=False)
    columns = [
        pa.Array.from_buffers(pa.int64(), rows, [None, pa.py_buffer(struct.pack("<q", r.recording_id) * rows)]),
        pa.Array.from_buffers(pa.int64(), rows, [None, position]),
        pa.Array.from_buffers(pa.int32(), rows, [None, stream_id]),
        pa.Array.from_buffers(pa.int32(), rows, [None, session_id]),
        pa.Array.from_buffers(pa.int32(), rows, [None, term_id]),
        pa.Array.from_buffers(pa.int32(), rows, [None, term_offset]),
        pa.Array.from_buffers(pa.int16(), rows, [None, flags]),
        pa.Array.from_buffers(pa.int64(), rows, [None, reserved]),
        ts,
        pa.Array.from_buffers(pa.binary(), rows, [None, offsets, data]),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=SCHEMA), next_offset


def read_range(r: RecordingRange, *, skip_corrupt: bool = False, max_rows_per_batch: int = DEFAULT_MAX_ROWS_PER_BATCH,
               max_bytes_per_batch: int = DEFAULT_MAX_BYTES_PER_BATCH) -> Iterator[pa.RecordBatch]:
    """Record batches (``SCHEMA``) of the complete, valid messages of ``r``, in position order.

    A missing segment file or the first unwritten frame ends the range quietly (a still-being-written or
    truncated recording). An invalid frame raises CorruptSegmentError naming the file and offset, or with
    ``skip_corrupt`` warns and resumes at the next term of that segment.
    """
    archive_dir = pathlib.Path(r.archive_dir)
    for seg_base, walk, skip in _segment_pieces(r):
        path = archive_dir / segments.segment_file_name(r.recording_id, seg_base)
        try:
            mapped, size = _map(path)
        except FileNotFoundError:
            return
        if mapped is None:
            return
        try:
            view = memoryview(mapped)
            try:
                end = min(r.to_position - seg_base, r.segment_file_length, size)
                limit = min(r.segment_file_length, size)
                if r.limit_position >= 0:
                    limit = min(limit, r.limit_position - seg_base)
                end = min(end, limit)
                while walk < end:
                    rows, nbytes, next_offset, status, error = scan_messages(
                        view, walk, end, limit, seg_base, r.term_length, r.initial_term_id, r.timestamp_mode,
                        r.timestamp_offset, max_rows_per_batch, max_bytes_per_batch, None, skip)
                    if rows:
                        batch, next_offset = _batch(r, view, walk, next_offset, limit, seg_base, skip, rows, nbytes)
                        yield batch
                    if status == SCAN_FULL:
                        walk = next_offset
                        continue
                    if status == SCAN_CORRUPT:
                        if not skip_corrupt:
                            raise CorruptSegmentError(f"invalid frame in recording {r.recording_id}", path=path,
                                                      offset=error)
                        warnings.warn(f"skipping the rest of a term of {path} after an invalid frame at offset "
                                      f"{error}", RuntimeWarning, stacklevel=2)
                        walk = error - (error & (r.term_length - 1)) + r.term_length
                        continue
                    if status == SCAN_END_OF_DATA:
                        return
                    break
            finally:
                view.release()
        finally:
            mapped.close()
