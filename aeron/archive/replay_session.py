# SPDX-License-Identifier: Apache-2.0
"""Replay: a recording's segment files, mapped, fed to an exclusive publication that starts at the recorded initial
term id, term length and position (Aeron ReplaySession).

The frames go into the publication's term by the compiled ReplayBlockReader, without the GIL: read with ``pread``
straight into the term (the mapping only serves each run's first header), or, on tmpfs, whose reads cost more than a
copy from the mapping does, copied from the mapping. Per duty cycle a batch of blocks (each at most the file IO max
length and within its term), bounded by the segment end and the limit (the stop position, a live recording's
position, or a bounded replay's counter).
"""
from __future__ import annotations

import enum
import os
from collections.abc import Callable
from typing import Any

from aeron._core.archive_io import ReplayBlockReader, prefers_pread
from aeron._core.atomic_buffer import AtomicBuffer
from aeron.archive.configuration import NULL_POSITION
from aeron.archive.segments import segment_file_base_position, segment_file_name
from aeron.common.constants import INT64_MAX
from aeron.common.errors import AeronError, CorruptFileError

REPLAY_BATCH_LENGTH = 16 * 1024 * 1024       # most bytes one duty cycle replays for one replay


class ReplayState(enum.Enum):
    """Where a replay session is."""

    INIT = 0
    REPLAY = 1
    INACTIVE = 2
    DONE = 3


class ReplaySession:
    """Replays ``[replay_position, replay_position + length)`` of one recording, following ``limit()``.

    ``limit()`` returns ``(limit_position, is_final)``: how far the recording is known to exist and whether that
    can still grow (a live recording or a bounded replay's counter) or not (a stopped recording, a closed counter).
    """

    def __init__(self, replay_session_id: int, correlation_id: int, control_session: Any, recording_id: int,
                 start_position: int, initial_term_id: int, term_length: int, segment_length: int,
                 replay_position: int, length: int, limit: Callable[[], tuple[int, bool]], publication: Any,
                 archive_dir: str, file_io_max_length: int, connect_deadline_ns: int,
                 verify_checksum: int) -> None:
        """Made by the conductor once the replay publication exists."""
        self.replay_session_id = replay_session_id
        self.correlation_id = correlation_id
        self.control_session = control_session
        self.recording_id = recording_id
        self.start_position = start_position
        self.initial_term_id = initial_term_id
        self.term_length = term_length
        self.segment_length = segment_length
        self.replay_position = replay_position
        self.replay_limit = replay_position + length if length < (1 << 62) else INT64_MAX
        self.limit = limit
        self.publication = publication
        self.archive_dir = archive_dir
        self.reader = ReplayBlockReader(file_io_max_length)
        # as the recorder's batch: a term's worth (at least one block) per duty cycle, without the GIL
        self.batch_length = max(file_io_max_length, min(term_length, REPLAY_BATCH_LENGTH))
        self.connect_deadline_ns = connect_deadline_ns
        self.verify_checksum = verify_checksum
        self.state = ReplayState.INIT
        self.segment: AtomicBuffer | None = None
        self.segment_fd = -1
        self.segment_base = NULL_POSITION
        self.error: str = ""
        self._abort = ""

    @property
    def is_done(self) -> bool:
        """True once finished (the conductor then closes it)."""
        return self.state is ReplayState.DONE

    def abort(self, reason: str = "replay aborted") -> None:
        """Stop at the next duty cycle (any thread)."""
        self._abort = reason or "replay aborted"

    def open_segment(self) -> None:
        """Map the segment holding the replay position; CorruptFileError/OSError when it is missing."""
        base = segment_file_base_position(self.start_position, self.replay_position, self.term_length,
                                          self.segment_length)
        if self.segment is not None and base == self.segment_base:
            return
        self._close_segment()
        path = os.path.join(self.archive_dir, segment_file_name(self.recording_id, base))
        segment = AtomicBuffer.map_file(path, min_length=self.segment_length)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            try:
                if prefers_pread(fd):
                    self.segment_fd, fd = fd, -1
            finally:
                if fd >= 0:
                    os.close(fd)
        except BaseException:
            segment.close()
            raise
        self.segment = segment
        self.segment_base = base

    def _close_segment(self) -> None:
        segment, fd = self.segment, self.segment_fd
        self.segment, self.segment_fd = None, -1
        if segment is not None:
            segment.close()
        if fd >= 0:
            os.close(fd)

    def do_work(self, now_ns: int) -> int:
        """Wait for the subscriber, then replay one block."""
        if self.state is ReplayState.DONE:
            return 0
        if self._abort and self.state is not ReplayState.INACTIVE:
            self.error = "" if self._abort == "stopped" else self._abort
            self.state = ReplayState.INACTIVE
        if self.state is ReplayState.INIT:
            if self.publication.is_connected:
                self.state = ReplayState.REPLAY
            elif now_ns - self.connect_deadline_ns > 0:
                self.error = "no connection established for replay"
                self.state = ReplayState.INACTIVE
            return 1 if self.state is not ReplayState.INIT else 0
        if self.state is ReplayState.REPLAY:
            return self._replay()
        self._close_segment()
        self.state = ReplayState.DONE
        return 1

    def _replay(self) -> int:
        pub = self.publication
        if not pub.is_connected:
            # the subscriber left: the replay ends without an ERROR to the client, as Aeron's ReplaySession.replay
            # (a consensus module closes its snapshot's replay once it has read it, and takes an ERROR as fatal)
            self.state = ReplayState.INACTIVE
            return 1
        limit_position, is_final = self.limit()
        end = min(limit_position, self.replay_limit)
        position = self.replay_position
        if position >= end:
            if position >= self.replay_limit or is_final:
                self.state = ReplayState.INACTIVE
                return 1
            return 0
        try:
            self.open_segment()
            assert self.segment is not None
            file_offset = position - self.segment_base
            available = min(end - position, self.segment_length - file_offset, self.batch_length)
            consumed = self.reader.replay(self.segment, file_offset, self.term_length, available, pub,
                                          self.verify_checksum, self.segment_fd)
            if consumed == 0 and position < limit_position and self.segment.get_i32_volatile(file_offset) <= 0:
                # the recording's position says a frame is here and the file has none: a lost or cut segment
                # never fills in, so end the replay with an error rather than wait (ReplaySession.replay raises
                # "unexpected end of recording" for a frame length <= 0)
                raise CorruptFileError(f"unexpected end of recording at position={position}: no frame where the "
                                       f"recording has data up to position={limit_position}",
                                       path=self._segment_path(), offset=file_offset)
        except (AeronError, OSError) as ex:
            self._fail(ex, position)
            return 1
        if consumed > 0:
            self.replay_position = position + consumed
            if self.replay_position - self.segment_base >= self.segment_length:
                self._close_segment()
            return 1
        if consumed == pub.CLOSED or consumed == pub.MAX_POSITION_EXCEEDED:
            self.state = ReplayState.INACTIVE         # "stream closed before replay complete": no ERROR either
            return 1
        return 0

    def _segment_path(self) -> str:
        base = segment_file_base_position(self.start_position, self.replay_position, self.term_length,
                                          self.segment_length)
        return os.path.join(self.archive_dir, segment_file_name(self.recording_id, base))

    def _fail(self, ex: BaseException, position: int) -> None:
        # the control session's ERROR for the replay request names what failed, where (the segment file, the offset
        # in it, the replay position) and which replay, as Aeron's ReplaySession.raiseError does
        where = ex.path if isinstance(ex, CorruptFileError) and ex.path else self._segment_path()
        text = str(ex) if where in str(ex) else f"{ex} [{where}]"
        self.error = (f"replay failed at position={position}: {text}, recordingId={self.recording_id}, "
                      f"replaySessionId={self.replay_session_id}")
        self.state = ReplayState.INACTIVE

    def close(self) -> None:
        """Unmap the segment and close the publication (its subscriber sees the end of stream after linger)."""
        self._close_segment()
        pub = self.publication
        self.publication = None
        if pub is not None:
            try:
                pub.close()
            except AeronError:
                pass
