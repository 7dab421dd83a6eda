# SPDX-License-Identifier: Apache-2.0
"""Recording: an image's term blocks written into ``<recordingId>-<segmentBase>.rec`` files (Aeron RecordingSession
and RecordingWriter).

Per block the work is the compiled SegmentWriter's: one ``record`` call per duty cycle takes runs of whole frames
from the image and writes each with one ``pwrite``, all without the GIL, for up to a batch of blocks. What is here is
per segment and per duty cycle: opening and rolling segment files, the position counter, the end of the recording.
"""
from __future__ import annotations

import enum
import errno
import os
from typing import TYPE_CHECKING, Any

from aeron._core.archive_io import CHECKSUM_CRC32, CHECKSUM_CRC32C, CHECKSUM_NONE, SegmentWriter
from aeron._core.term_reader import any_fragment_pending
from aeron.archive.errors import ArchiveErrorCode
from aeron.archive.segments import segment_file_base_position, segment_file_name
from aeron.common.errors import ArchiveError

if TYPE_CHECKING:
    from aeron.client.image import Image

RECORD_BATCH_LENGTH = 16 * 1024 * 1024       # most bytes one duty cycle writes for one recording
_STORAGE_ERRNOS = frozenset((errno.ENOSPC, errno.EDQUOT))       # no space, or over quota


def checksum_kind(name: str | None) -> int:
    """The archive_io kernel's checksum kind for a configured checksum name (None: no checksum)."""
    return {None: CHECKSUM_NONE, "CRC-32": CHECKSUM_CRC32, "CRC-32C": CHECKSUM_CRC32C}[name]


class RecordingState(enum.Enum):
    """Where a recording session is."""

    INIT = 0
    RECORDING = 1
    INACTIVE = 2
    STOPPED = 3


class RecordingWriter:
    """The segment files of one recording from a join position; the blocks are the compiled writer's."""

    def __init__(self, archive_dir: str, recording_id: int, start_position: int, join_position: int,
                 term_length: int, segment_length: int, sync_level: int, checksum: str | None,
                 max_block_length: int) -> None:
        """Nothing is opened until :meth:`init`."""
        self.archive_dir = archive_dir
        self.recording_id = recording_id
        self.start_position = start_position
        self.term_length = term_length
        self.segment_length = segment_length
        self.segment_base = segment_file_base_position(start_position, join_position, term_length, segment_length)
        self.join_offset = join_position - self.segment_base
        self.writer = SegmentWriter(sync_level, checksum_kind(checksum), max_block_length)
        self.sync_level = sync_level

    @property
    def position(self) -> int:
        """Recorded position: segment base plus the offset written in it."""
        return self.segment_base + self.writer.segment_offset

    def init(self) -> None:
        """Open (create if missing, at full length) the segment of the join position, positioned at the join."""
        self._open(self.segment_base, allow_existing=True)
        self.writer.segment_offset = self.join_offset

    def _open(self, base: int, allow_existing: bool) -> None:
        path = os.path.join(self.archive_dir, segment_file_name(self.recording_id, base))
        flags = os.O_RDWR | os.O_CREAT | (0 if allow_existing else os.O_EXCL)
        try:
            fd = os.open(path, flags, 0o666)
        except FileExistsError:
            raise ArchiveError(f"segment file already exists: {path}") from None
        try:
            if os.fstat(fd).st_size < self.segment_length:
                os.ftruncate(fd, self.segment_length)       # full length at once, sparse
        except BaseException:
            os.close(fd)
            raise
        if self.sync_level > 0:
            dir_fd = os.open(self.archive_dir, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
        self.writer.fd = fd
        self.segment_base = base

    def record(self, image: "Image", block_length_limit: int, max_length: int) -> int:
        """Write up to ``max_length`` bytes of what ``image`` has (runs of at most ``block_length_limit``), never
        past the open segment's end, then roll to the next segment if this one is full. Returns the bytes written."""
        length: int = self.writer.record(image, block_length_limit, self.segment_length, max_length)
        if length > 0:
            self.after_block()
        return length

    def after_block(self) -> None:
        """Roll to the next segment once this one is full (a term never crosses a segment)."""
        if self.writer.segment_offset >= self.segment_length:
            next_base = self.segment_base + self.segment_length
            self._close_fd()
            self._open(next_base, allow_existing=False)
            self.writer.segment_offset = 0      # after the open: a failed roll leaves the position at the end

    def _close_fd(self) -> None:
        fd = self.writer.fd
        if fd >= 0:
            self.writer.fd = -1
            if self.sync_level > 0:
                os.fsync(fd)
            os.close(fd)

    def close(self) -> None:
        """Close the open segment (synced first with a sync level)."""
        self._close_fd()


class RecordingSession:
    """Records one image into a recording (runs on the recorder)."""

    def __init__(self, correlation_id: int, recording_id: int, start_position: int, segment_length: int,
                 original_channel: str, image: "Image", position_counter: Any, archive_dir: str, ctx: Any,
                 control_session: Any, subscription_id: int, auto_stop: bool, events_proxy: Any,
                 wake: Any = None) -> None:
        """Made by the conductor for a new image of a recording subscription (or an extension); ``wake`` (a
        WakeSignal of the recorded stream, or None) wakes the parked readers of the recording position (a cluster's
        consensus module, whose append position it is)."""
        self._wake = wake
        self.correlation_id = correlation_id
        self.recording_id = recording_id
        self.image = image
        self.join_position = image.join_position
        self.original_channel = original_channel
        self.position_counter = position_counter
        self.control_session = control_session
        self.subscription_id = subscription_id
        self.auto_stop = auto_stop
        self.events_proxy = events_proxy
        self.usable_space_probe = ctx.usable_space_probe
        self.block_length_limit = min(image.term_buffer_length, ctx.file_io_max_length)
        # Blocks per duty cycle: each call runs without the GIL, so a batch spares the process's other threads a GIL
        # hand-over per block; a term's worth (at least one block) keeps the position counter and other sessions of
        # the recorder moving.
        self.batch_length = max(self.block_length_limit, min(image.term_buffer_length, RECORD_BATCH_LENGTH))
        self.writer = RecordingWriter(archive_dir, recording_id, start_position, self.join_position,
                                      image.term_buffer_length, segment_length, ctx.file_sync_level,
                                      ctx.record_checksum, self.block_length_limit)
        self.state = RecordingState.INIT
        self.position = self.join_position
        self.error: BaseException | None = None
        self.error_code = ArchiveErrorCode.GENERIC
        self._abort = False
        self._progress_position = self.join_position

    @property
    def is_done(self) -> bool:
        """True once stopped (the conductor then closes it)."""
        return self.state is RecordingState.STOPPED

    def abort(self) -> None:
        """Ask the recorder to stop this session at its next duty cycle (any thread)."""
        self._abort = True

    @property
    def error_message(self) -> str:
        """What failed, with the exception's type ("" without an error)."""
        error = self.error
        return "" if error is None else f"{type(error).__name__} - {error}"

    def _on_error(self, ex: BaseException) -> int:
        # as Aeron's RecordingWriter: a write refused for space (ENOSPC, or less usable space left than a block)
        # is STORAGE_SPACE; the recording stops at the last whole block written, which stays its stop position
        self.error = ex
        code = ArchiveErrorCode.GENERIC
        if isinstance(ex, OSError):
            if ex.errno in _STORAGE_ERRNOS:
                code = ArchiveErrorCode.STORAGE_SPACE
            else:
                try:
                    if self.usable_space_probe() < self.block_length_limit:
                        code = ArchiveErrorCode.STORAGE_SPACE
                except OSError:
                    pass
        self.error_code = code
        self.state = RecordingState.INACTIVE
        return 1

    def do_work(self) -> int:
        """Write what the image has; stop at its end, on abort or on an I/O error."""
        state = self.state
        if state is RecordingState.INIT:
            try:
                self.writer.init()
            except (OSError, ArchiveError) as ex:
                return self._on_error(ex)
            self.state = RecordingState.RECORDING
            if self.events_proxy is not None:
                self.events_proxy.started(self.recording_id, self.join_position, self.image.session_id,
                                          self.image.stream_id, self.original_channel, self.image.source_identity)
            return 1
        if state is RecordingState.RECORDING:
            if self._abort:
                self.state = RecordingState.INACTIVE
                return 1
            image = self.image
            try:
                # nothing new (most duty cycles of a recorder sharing its thread): decided on a few loads
                length = self.writer.record(image, self.block_length_limit, self.batch_length) \
                    if any_fragment_pending((image,)) else 0
            except (OSError, ArchiveError) as ex:
                # the runs written before the failure count: the recording stops after the last one
                self.position = self.writer.position
                self.position_counter.set_ordered(self.position)
                return self._on_error(ex)
            if length > 0:
                self.position = self.writer.position
                self.position_counter.set_ordered(self.position)
                if self._wake is not None:
                    self._wake.signal()
                if self.events_proxy is not None:
                    self.events_proxy.progress(self.recording_id, self.join_position, self.position)
                return 1
            if image.is_closed or image.is_end_of_stream:
                self.state = RecordingState.INACTIVE
                return 1
            return 0
        if state is RecordingState.INACTIVE:
            self.writer.close()
            self.state = RecordingState.STOPPED
            return 1
        return 0

    def close(self) -> None:
        """Release the segment file (recorder shutdown)."""
        self.writer.close()
