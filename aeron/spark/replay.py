# SPDX-License-Identifier: Apache-2.0
"""Recorded messages read through a running archive (``option("controlChannel", ...)``), for recordings on
another machine: the planner lists the recordings over the control channel, and each range is one replay of its
positions, received on the task's driver.

A replay delivers the recorded frames unchanged except for the session and stream ids (the replay's own), so
the task copies each replayed term's frames into a term-sized buffer as the image's block poll hands them over
and runs the same compiled kernel as the offline scan (``aeron._core.segment_batch``) over it; the session and
stream id columns then get the recording's ids. A message never crosses a term (Aeron appends a whole message
to one term), so a range ``[from, to)`` replays from the start of ``from``'s term (a frame boundary) to the end
of the term holding ``to - 1`` (or the recording's end): the same messages as the offline reader, each exactly
once however the ranges are cut.
"""
from __future__ import annotations

import dataclasses
import struct
import time
import warnings
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from aeron._core.segment_batch import SCAN_CORRUPT, SCAN_FULL, scan_messages
from aeron.archive import segments
from aeron.archive.client.aeron_archive import AeronArchive, is_response_channel, replay_image_session_id
from aeron.archive.errors import ArchiveError
from aeron.archive.recording_descriptor import RecordingDescriptor
from aeron.common.channel_uri import ChannelUri
from aeron.common.errors import AeronTimeoutError
from aeron.spark import scan
from aeron.spark.connection import ArchiveSettings, Connection, poll_until

_LIST_BATCH = 1000
_IDLE_S = 0.0002


@dataclasses.dataclass(frozen=True)
class ReplayedRange:
    """A range read by replay: its ``range.limit_position`` is where the replay may run to (the stop position,
    or a live recording's recorded position when planned); ``session_id`` is the recording's."""

    range: scan.RecordingRange
    session_id: int


def list_descriptors(archive: AeronArchive) -> list[RecordingDescriptor]:
    """Every recording the archive lists (ListRecordings, in pages)."""
    out: list[RecordingDescriptor] = []
    from_id = 0
    while True:
        page: list[RecordingDescriptor] = []
        archive.list_recordings(from_id, _LIST_BATCH, page.append)
        out.extend(page)
        if len(page) < _LIST_BATCH:
            return out
        from_id = page[-1].recording_id + 1


def recorded_end(archive: AeronArchive, d: RecordingDescriptor) -> int:
    """The stop position, or for an active recording the position recorded now (a frame boundary, maybe inside a
    fragmented message: that message is left to a later read)."""
    if d.stop_position >= 0:
        return d.stop_position
    return max(archive.get_max_recorded_position(d.recording_id), d.start_position)


def plan(d: RecordingDescriptor, from_position: int, to_position: int, end: int,
         max_bytes_per_partition: int) -> list[ReplayedRange]:
    """The ranges of ``[from_position, min(to_position, end))`` of ``d``, split as the offline reader splits."""
    hi = min(end, to_position)
    return [ReplayedRange(dataclasses.replace(r, limit_position=end), d.session_id)
            for r in scan.split_recording("", d, from_position, hi, max_bytes_per_partition)]


def _constant_i32(value: int, rows: int) -> pa.Array:
    return pa.Array.from_buffers(pa.int32(), rows, [None, pa.py_buffer(struct.pack("<i", value) * rows)])


def _restamp(batch: pa.RecordBatch, stream_id: int, session_id: int) -> pa.RecordBatch:
    columns = list(batch.columns)
    columns[scan.SCHEMA.get_field_index("stream_id")] = _constant_i32(stream_id, batch.num_rows)
    columns[scan.SCHEMA.get_field_index("session_id")] = _constant_i32(session_id, batch.num_rows)
    return pa.RecordBatch.from_arrays(columns, schema=scan.SCHEMA)


class _Replay:
    """One replay of ``[position, position + length)`` of a recording and the image that receives it."""

    def __init__(self, conn: Connection, settings: ArchiveSettings, recording_id: int, position: int,
                 length: int) -> None:
        assert conn.aeron is not None and conn.archive is not None
        self.archive = conn.archive
        self.timeout_s = settings.timeout_ms / 1000.0
        self.replay_session_id: int | None = None
        self.subscription: Any = None
        channel, stream_id = settings.replay_channel, settings.replay_stream_id
        try:
            if is_response_channel(channel):
                # over the connection this client opens: no address for the archive to reach
                self.subscription = self.archive.replay(recording_id, channel, stream_id, position, length)
                self.image = self._await_image(lambda s: s.images[0] if s.images else None)
                return
            uri = ChannelUri.parse(channel)
            if (uri.get("endpoint") or "").endswith(":0"):
                # bind first, then tell the archive the port the driver chose
                self.subscription = conn.aeron.add_subscription(channel, stream_id)
                channel = poll_until(self.subscription.try_resolve_channel_endpoint_port, self.timeout_s,
                                     "no bound replay port", _IDLE_S)
                self.replay_session_id = self.archive.start_replay(recording_id, channel, stream_id, position,
                                                                   length)
            else:
                self.replay_session_id = self.archive.start_replay(recording_id, channel, stream_id, position,
                                                                   length)
                uri.put("session-id", str(replay_image_session_id(self.replay_session_id)))
                self.subscription = conn.aeron.add_subscription(str(uri), stream_id)
            session_id = replay_image_session_id(self.replay_session_id)
            self.image = self._await_image(lambda s: s.image_by_session_id(session_id))
        except BaseException:
            self.close(finished=False)
            raise

    def _await_image(self, pick: Any) -> Any:
        return poll_until(lambda: pick(self.subscription), self.timeout_s, "no replay image", _IDLE_S)

    def fill(self, term: bytearray, stop: int) -> None:
        """Copy the replayed frames up to position ``stop`` (within the image's current term) into ``term`` at
        their term offsets."""
        image = self.image

        def on_block(buffer: Any, offset: int, length: int, session_id: int, term_id: int) -> None:
            term[offset:offset + length] = buffer.view(offset, length)

        deadline = time.monotonic() + self.timeout_s
        while (position := image.position) < stop:
            if image.block_poll(on_block, stop - position) > 0:
                deadline = time.monotonic() + self.timeout_s
                continue
            if image.is_closed or image.is_end_of_stream:
                raise ArchiveError(f"the replay ended at position {image.position}, before {stop}")
            if time.monotonic() > deadline:
                raise AeronTimeoutError(f"replay made no progress for {self.timeout_s} s at position {position}")
            time.sleep(_IDLE_S)

    def close(self, finished: bool) -> None:
        """Close the subscription; an unfinished replay is stopped at the archive."""
        subscription, self.subscription = self.subscription, None
        try:
            if not finished and self.replay_session_id is not None:
                try:
                    self.archive.stop_replay(self.replay_session_id)
                except ArchiveError:
                    pass                    # it may have ended on its own meanwhile
        finally:
            if subscription is not None:
                subscription.close()


def message_boundary(conn: Connection, settings: ArchiveSettings, d: RecordingDescriptor, position: int) -> int:
    """The start of the first message of ``d`` not complete before ``position`` (a live recording's recorded
    position: a frame boundary, as a replay ends only on one), else ``position``: the streaming end of a live
    recording, so that the next batch starts at a message. Only the term holding ``position - 1`` is replayed,
    since no message crosses a term."""
    tl = d.term_buffer_length
    if position <= d.start_position:
        return position
    last = position - 1
    base = last - (last & (tl - 1))
    first = max(base, d.start_position)
    term = bytearray(tl)
    view = memoryview(term)
    try:
        replay = _Replay(conn, settings, d.recording_id, first, position - first)
        finished = False
        try:
            replay.fill(term, position)
            finished = True
        finally:
            replay.close(finished)
        _, _, next_offset, _, _ = scan_messages(view, first - base, position - base, position - base, base, tl,
                                                d.initial_term_id)
        return base + next_offset
    finally:
        view.release()


def read_replayed(conn: Connection, settings: ArchiveSettings, rr: ReplayedRange, *, skip_corrupt: bool = False,
                  max_rows_per_batch: int = scan.DEFAULT_MAX_ROWS_PER_BATCH,
                  max_bytes_per_batch: int = scan.DEFAULT_MAX_BYTES_PER_BATCH) -> Iterator[pa.RecordBatch]:
    """Record batches (``scan.SCHEMA``) of the messages whose first fragment lies in ``rr``'s range, replayed by
    the archive ``conn`` is connected to. An invalid replayed frame raises CorruptSegmentError naming the
    archive's segment file and offset, or with ``skip_corrupt`` warns and resumes at the next term."""
    r = rr.range
    tl = r.term_length
    if r.from_position >= r.to_position:
        return
    first = max(r.from_position - (r.from_position & (tl - 1)), r.start_position)
    last = r.to_position - 1
    hi = min(last - (last & (tl - 1)) + tl, r.limit_position)
    if hi <= first:
        return
    term = bytearray(tl)
    view = memoryview(term)
    replay = _Replay(conn, settings, r.recording_id, first, hi - first)
    finished = False
    try:
        position = first
        while position < hi:
            base = position - (position & (tl - 1))
            stop = min(base + tl, hi)
            replay.fill(term, stop)
            walk, end, limit = position - base, min(r.to_position, stop) - base, stop - base
            skip = r.from_position - base
            while walk < end:
                rows, nbytes, next_offset, status, error = scan_messages(
                    view, walk, end, limit, base, tl, r.initial_term_id, r.timestamp_mode, r.timestamp_offset,
                    max_rows_per_batch, max_bytes_per_batch, None, skip)
                if rows:
                    batch, next_offset = scan._batch(r, view, walk, next_offset, limit, base, skip, rows, nbytes)
                    yield _restamp(batch, r.stream_id, rr.session_id)
                if status == SCAN_FULL:
                    walk = next_offset
                    continue
                if status == SCAN_CORRUPT:
                    seg_base = segments.segment_file_base_position(r.start_position, base + error, tl,
                                                                   r.segment_file_length)
                    name = segments.segment_file_name(r.recording_id, seg_base)
                    if not skip_corrupt:
                        raise scan.CorruptSegmentError(f"invalid frame in the replay of recording {r.recording_id}",
                                                       path=name, offset=base + error - seg_base)
                    warnings.warn(f"skipping the rest of a term of {name} after an invalid replayed frame at offset "
                                  f"{base + error - seg_base}", RuntimeWarning, stacklevel=2)
                break
            position = stop
        finished = True
    finally:
        replay.close(finished)
        view.release()
