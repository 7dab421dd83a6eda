# SPDX-License-Identifier: Apache-2.0
"""RecordingReader: a recording's frames read from its segment files, across terms and segments, without an
archive running (Aeron's ``io.aeron.archive.RecordingReader``, which ArchiveTool reads with).

It belongs with the archive's file readers (``archive.catalog``, ``archive.segments``): ArchiveTool ``dump``,
ClusterTool ``describe-latest-cm-snapshot`` and Spark read recordings with it and load no archive server. A cold
path (tools, one frame at a time, each payload copied out); the archive's replays run in the compiled kernels.
"""
from __future__ import annotations

import dataclasses
import mmap
import os
from collections.abc import Callable, Iterator

from aeron._core.logbuffer import FRAME_ALIGNMENT
from aeron._core.logbuffer import HEADER_LENGTH as DATA_HEADER_LENGTH
from aeron.archive.configuration import NULL_LENGTH, NULL_POSITION
from aeron.archive.recording_descriptor import RecordingDescriptor
from aeron.archive.segments import segment_file_base_position, segment_file_name
from aeron.common.constants import INT64_MAX
from aeron.common.errors import CorruptFileError, InvalidArgumentError

__all__ = ["RecordingFrame", "RecordingReader"]

# DataHeaderFlyweight field offsets
_FLAGS, _TYPE, _TERM_OFFSET, _STREAM_ID, _TERM_ID, _RESERVED_VALUE = 5, 6, 8, 16, 20, 24


def _i32(data: mmap.mmap, offset: int) -> int:
    return int.from_bytes(data[offset:offset + 4], "little", signed=True)


@dataclasses.dataclass(frozen=True)
class RecordingFrame:
    """One recorded frame: its recording position, term offset, frame length (header included), type, flags,
    reserved value and payload (the bytes after the 32-byte header)."""

    position: int
    term_offset: int
    frame_length: int
    frame_type: int
    flags: int
    reserved_value: int
    payload: bytes

    @property
    def aligned_length(self) -> int:
        """The frame's length in the log: its length rounded up to the frame alignment (32)."""
        return (self.frame_length + FRAME_ALIGNMENT - 1) & ~(FRAME_ALIGNMENT - 1)


class RecordingReader:
    """Reads recording ``descriptor`` from the segment files in ``archive_dir``, from ``position`` (NULL_POSITION:
    its start) for ``length`` bytes (NULL_LENGTH: up to its stop position, or, for a recording still active, up to
    the first frame that was never written).

    :meth:`poll` hands up to ``fragment_limit`` frames to a handler, as Aeron's ``poll`` does; iterating gives the
    remaining frames. The reader is done (:attr:`is_done`) at its limit, at a zero frame length, or where a segment
    file ends short; it maps one segment file at a time, read-only, and :meth:`close` (or ``with``) unmaps it.
    A position that is not the start of a fragment of this recording raises InvalidArgumentError; a segment file
    the recording needs that is not there raises CorruptFileError naming it.
    """

    def __init__(self, descriptor: RecordingDescriptor, archive_dir: str | os.PathLike[str],
                 position: int = NULL_POSITION, length: int = NULL_LENGTH) -> None:
        """Open the segment file of ``position`` (see the class docstring)."""
        if position < NULL_POSITION:
            raise InvalidArgumentError(f"invalid position: {position}")
        if length < NULL_LENGTH:
            raise InvalidArgumentError(f"invalid length: {length}")
        self.archive_dir = os.fspath(archive_dir)
        self.recording_id = descriptor.recording_id
        self.term_length = descriptor.term_buffer_length
        self.segment_length = descriptor.segment_file_length
        start = descriptor.start_position
        from_position = start if position == NULL_POSITION else position
        max_length = (descriptor.stop_position if descriptor.stop_position != NULL_POSITION else INT64_MAX) \
            - from_position
        replay_length = max_length if length == NULL_LENGTH else min(length, max_length)
        if replay_length < 0:
            raise InvalidArgumentError(f"position {from_position} is beyond the recording's stop position "
                                       f"{descriptor.stop_position}")
        self._segment_base = segment_file_base_position(start, from_position, self.term_length, self.segment_length)
        self._data: mmap.mmap | None = None
        self.is_done = False
        self.replay_position = from_position
        self.replay_limit = from_position + replay_length
        if not self._open_segment():
            return
        if from_position > start:
            offset = from_position - self._segment_base
            term_offset = from_position & (self.term_length - 1)
            term_id = (descriptor.initial_term_id + (from_position >> (self.term_length.bit_length() - 1))) \
                & 0xFFFFFFFF
            data = self._data
            if data is None or offset + DATA_HEADER_LENGTH > len(data) or _i32(data, offset + _TERM_OFFSET) \
                    != term_offset or _i32(data, offset + _TERM_ID) & 0xFFFFFFFF != term_id \
                    or _i32(data, offset + _STREAM_ID) != descriptor.stream_id:
                self.close()
                raise InvalidArgumentError(f"{from_position} position not aligned to valid fragment")

    def _open_segment(self) -> bool:
        # maps the segment file at self._segment_base; False (and done) for an empty one: nothing was written there
        name = segment_file_name(self.recording_id, self._segment_base)
        path = os.path.join(self.archive_dir, name)
        try:
            with open(path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                self._data = mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ) if size else None
        except FileNotFoundError:
            self.close()
            raise CorruptFileError(f"failed to open recording segment file {name}", path=path, offset=0) from None
        if self._data is None:
            self._finish()
            return False
        return True

    def _finish(self) -> None:
        self.is_done = True
        self.close()

    def next_frame(self) -> RecordingFrame | None:
        """The next frame, or None once done."""
        if self.is_done or self.replay_position >= self.replay_limit:
            self._finish()
            return None
        offset = self.replay_position - self._segment_base
        if offset >= self.segment_length:
            self.close()
            self._segment_base += self.segment_length
            if not self._open_segment():
                return None
            offset = 0
        data = self._data
        if data is None or offset + DATA_HEADER_LENGTH > len(data):
            self._finish()
            return None
        frame_length = _i32(data, offset)
        if frame_length <= 0:
            self._finish()
            return None
        position = self.replay_position
        frame = RecordingFrame(
            position, position & (self.term_length - 1), frame_length,
            int.from_bytes(data[offset + _TYPE:offset + _TYPE + 2], "little"), data[offset + _FLAGS],
            int.from_bytes(data[offset + _RESERVED_VALUE:offset + _RESERVED_VALUE + 8], "little", signed=True),
            bytes(data[offset + DATA_HEADER_LENGTH:offset + max(frame_length, DATA_HEADER_LENGTH)]))
        self.replay_position += frame.aligned_length
        if self.replay_position >= self.replay_limit:
            self._finish()
        return frame

    def poll(self, handler: Callable[[RecordingFrame], object], fragment_limit: int) -> int:
        """Hand up to ``fragment_limit`` frames to ``handler``; the number handed."""
        fragments = 0
        while fragments < fragment_limit and (frame := self.next_frame()) is not None:
            handler(frame)
            fragments += 1
        return fragments

    def __iter__(self) -> Iterator[RecordingFrame]:
        """The remaining frames; the reader is closed when they end."""
        try:
            while (frame := self.next_frame()) is not None:
                yield frame
        finally:
            self.close()

    def close(self) -> None:
        """Unmap the current segment file (idempotent)."""
        if self._data is not None:
            self._data.close()
            self._data = None

    def __enter__(self) -> RecordingReader:  # noqa: PYI034 (not meant to be subclassed)
        """The reader itself."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close it."""
        self.close()
