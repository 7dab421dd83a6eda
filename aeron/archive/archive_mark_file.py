# SPDX-License-Identifier: Apache-2.0
"""``archive-mark.dat``: the archive's liveness and configuration file, byte-compatible with Aeron's
``ArchiveMarkFile``, on the common :class:`aeron.common.mark_file.MarkFile` (Agrona's ``MarkFile``) as the cluster's
mark files are: one liveness rule, one take-over, one error-log printer.

Layout: an SBE message header and the MarkFileHeader (template 200 of schema 100) with the four channel strings,
zeros up to 8192 bytes, then a distinct error log (Agrona's layout, readable by Aeron's ArchiveTool ``errors``).
``version`` (offset 8) is written last when the archive is ready and ``activityTimestamp`` (offset 16) refreshed
every second; both are what readers wait for. A legacy file has no message header (the header block at offset 0).
"""
from __future__ import annotations

import dataclasses
import mmap
import os
import pathlib
import time
from collections.abc import Callable

from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.cnc import semantic_version_compose
from aeron._core.codecs.archive_mark import MarkFileHeaderDecoder, MarkFileHeaderEncoder
from aeron._core.error_log import DistinctErrorLog, ErrorLogRecord
from aeron.archive.configuration import NULL_VALUE
from aeron.common.errors import CorruptFileError, IllegalStateError, InvalidArgumentError, MalformedMessageError
from aeron.common.mark_file import (
    ActiveMarkFileError,
    MarkFile,
    ensure_mark_file_link,
    error_log_records,
    resolve_link,
)

FILENAME = "archive-mark.dat"
LINK_FILENAME = "archive-mark.lnk"
ERROR_FILE_PREFIX = "archive"            # archive-<timestamp>-error.log: an old run's errors (ArchiveMarkFile)
HEADER_LENGTH = 8192                     # header region; the error log starts here
HEADER_OFFSET = 8                        # the MarkFileHeader block follows an SBE message header
# MarkFileHeader block offsets (schema 100)
_VERSION, _ACTIVITY_TIMESTAMP, _PID, _HEADER_LENGTH, _ERROR_BUFFER_LENGTH = 0, 8, 24, 44, 48
VERSION_OFFSET = HEADER_OFFSET + _VERSION
ACTIVITY_TIMESTAMP_OFFSET = HEADER_OFFSET + _ACTIVITY_TIMESTAMP
MAJOR_VERSION, MINOR_VERSION, PATCH_VERSION = 3, 1, 0
SEMANTIC_VERSION = semantic_version_compose(MAJOR_VERSION, MINOR_VERSION, PATCH_VERSION)   # the file's
ERROR_BUFFER_LENGTH_DEFAULT = 1024 * 1024
LIVENESS_TIMEOUT_MS = 10_000
UPDATE_INTERVAL_MS = 1_000


class ActiveArchiveError(ActiveMarkFileError):
    """The mark file belongs to an archive that is still running (its activity timestamp is fresh)."""


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _align(value: int, alignment: int) -> int:
    return (value + alignment - 1) & ~(alignment - 1)


def resolve_mark_file_dir(archive_dir: str | os.PathLike[str]) -> pathlib.Path:
    """The directory holding ``archive-mark.dat``: ``archive_dir``, or where ``archive-mark.lnk`` points."""
    link = pathlib.Path(archive_dir) / LINK_FILENAME
    return resolve_link(link) if link.exists() else pathlib.Path(archive_dir)


def header_offset_of(data: bytes | memoryview | mmap.mmap) -> int:
    """8 when the file starts with the SBE message header of MarkFileHeader, 0 for a legacy file."""
    if len(data) >= 8:
        template_id = int.from_bytes(data[2:4], "little")
        schema_id = int.from_bytes(data[4:6], "little")
        if template_id == MarkFileHeaderEncoder.TEMPLATE_ID and schema_id == MarkFileHeaderEncoder.SCHEMA_ID:
            return HEADER_OFFSET
    return 0


def _read_header_offset(path: pathlib.Path) -> int:
    with open(path, "rb") as f:
        return header_offset_of(f.read(HEADER_OFFSET))


def _check_major_version(path: pathlib.Path, offset: int) -> Callable[[int], None]:
    def check(version: int) -> None:
        if (version >> 16) != MAJOR_VERSION:
            raise CorruptFileError(f"mark file major version {version >> 16} is not {MAJOR_VERSION} "
                                   f"({(version >> 16) & 0xFF}.{(version >> 8) & 0xFF}.{version & 0xFF})",
                                   path=str(path), offset=offset)
    return check


@dataclasses.dataclass(frozen=True)
class MarkFileHeader:
    """A snapshot of the mark file's header fields (Aeron's names in snake_case) and how it was encoded."""

    version: int
    activity_timestamp: int
    start_timestamp: int
    pid: int
    control_stream_id: int
    local_control_stream_id: int
    events_stream_id: int
    header_length: int
    error_buffer_length: int
    archive_id: int
    control_channel: str
    local_control_channel: str
    events_channel: str
    aeron_directory: str
    acting_block_length: int = MarkFileHeaderEncoder.BLOCK_LENGTH
    acting_version: int = MarkFileHeaderEncoder.SCHEMA_VERSION
    header_offset: int = HEADER_OFFSET


class ArchiveMarkFile:
    """The mark file of a running archive (``create``) or of an archive directory a tool reads (``open``)."""

    def __init__(self, mark_file: MarkFile, header_offset: int, writable: bool) -> None:
        """Use :meth:`create` or :meth:`open`."""
        self._mark_file = mark_file
        self._header_offset = header_offset
        self._writable = writable
        self._error_log: DistinctErrorLog | None = None
        self._error_buffer: AtomicBuffer | None = None
        self._clock: Callable[[], int] = _now_ms

    @property
    def path(self) -> pathlib.Path:
        """The file."""
        return self._mark_file.path

    @property
    def closed(self) -> bool:
        """True once closed."""
        return self._mark_file.closed

    # -- creation (the archive) ---------------------------------------------------------------------------------

    @classmethod
    def create(cls, mark_file_dir: str | os.PathLike[str], *, aeron_directory: str, control_channel: str = "",
               local_control_channel: str = "aeron:ipc?term-length=64k", events_channel: str = "",
               control_stream_id: int = 10, local_control_stream_id: int = 10, events_stream_id: int = 30,
               archive_id: int = NULL_VALUE, error_buffer_length: int = ERROR_BUFFER_LENGTH_DEFAULT,
               file_page_size: int = 4096, epoch_clock: Callable[[], int] | None = None,
               liveness_timeout_ms: int = LIVENESS_TIMEOUT_MS, pid: int | None = None,
               archive_dir: str | os.PathLike[str] | None = None,
               log: Callable[[str], None] | None = None) -> ArchiveMarkFile:
        """Create (or take over) ``mark_file_dir/archive-mark.dat`` for a starting archive, ``version`` still 0.

        An existing file is taken over as :meth:`aeron.common.mark_file.MarkFile.map_new_or_existing` rules: one
        whose activity timestamp is younger than ``liveness_timeout_ms`` raises ActiveArchiveError, unless the pid
        it names is gone from this host and its timestamp has stopped (a killed archive: taken over within 1.5 s
        of its last refresh, see ``aeron.common.cnc_attach.is_driver_dead``). Its error log is saved to
        ``archive-<timestamp>-error.log`` beside it, and it is rewritten from zeros in the current layout, its
        timestamp left at ACTIVATION_IN_PROGRESS until :meth:`signal_ready`. With ``archive_dir`` elsewhere,
        ``archive-mark.lnk`` there names ``mark_file_dir`` (and is removed when they are the same).
        """
        clock = epoch_clock or _now_ms
        if error_buffer_length < ERROR_BUFFER_LENGTH_DEFAULT:
            raise InvalidArgumentError(f"error buffer length must be >= {ERROR_BUFFER_LENGTH_DEFAULT}, "
                                       f"got {error_buffer_length}")
        if file_page_size <= 0 or file_page_size & (file_page_size - 1):
            raise InvalidArgumentError(f"file page size must be a power of two, got {file_page_size}")
        strings = [s.encode("ascii") for s in (control_channel, local_control_channel, events_channel,
                                                aeron_directory)]
        header_length = HEADER_OFFSET + MarkFileHeaderEncoder.BLOCK_LENGTH + 16 + sum(map(len, strings))
        if header_length > HEADER_LENGTH:
            raise InvalidArgumentError(f"ArchiveMarkFile headerLength={header_length} > headerLengthCapacity="
                                       f"{HEADER_LENGTH}")
        mark_dir = pathlib.Path(mark_file_dir)
        mark_dir.mkdir(parents=True, exist_ok=True)
        path = mark_dir / FILENAME
        total = _align(HEADER_LENGTH + error_buffer_length, file_page_size)
        offset = _read_header_offset(path) if path.exists() else HEADER_OFFSET
        try:
            mark, existed = MarkFile.map_new_or_existing(
                path, version_offset=offset + _VERSION, timestamp_offset=offset + _ACTIVITY_TIMESTAMP,
                total_file_length=total, timeout_ms=liveness_timeout_ms, epoch_clock=clock,
                pid_of=lambda buffer: buffer.get_i64(offset + _PID), log=log)
        except ActiveMarkFileError as ex:
            raise ActiveArchiveError(str(ex)) from None
        try:
            if existed:
                buffer = mark.buffer
                mark.save_existing_errors(buffer.get_i32(offset + _HEADER_LENGTH),
                                          buffer.get_i32(offset + _ERROR_BUFFER_LENGTH), ERROR_FILE_PREFIX, log)
                # from zeros, as a new file: nothing of the old header (a longer channel's tail) stays behind
                if offset != HEADER_OFFSET:
                    mark.relocate(VERSION_OFFSET, ACTIVITY_TIMESTAMP_OFFSET)
                else:
                    mark.clear()
            encoder = MarkFileHeaderEncoder().wrap_and_apply_header(mark.buffer, 0)
            try:
                encoder.start_timestamp = clock()
                encoder.pid = os.getpid() if pid is None else pid
                encoder.control_stream_id = control_stream_id
                encoder.local_control_stream_id = local_control_stream_id
                encoder.events_stream_id = events_stream_id
                encoder.header_length = HEADER_LENGTH
                encoder.error_buffer_length = error_buffer_length
                encoder.archive_id = archive_id
                encoder.put_control_channel(strings[0])
                encoder.put_local_control_channel(strings[1])
                encoder.put_events_channel(strings[2])
                encoder.put_aeron_directory(strings[3])
            finally:
                encoder.release()
            if archive_dir is not None:
                ensure_mark_file_link(archive_dir, path, LINK_FILENAME)
        except BaseException:
            mark.close()
            raise
        marked = cls(mark, HEADER_OFFSET, True)
        marked._clock = clock
        return marked

    # -- opening (tools) ----------------------------------------------------------------------------------------

    @classmethod
    def open(cls, archive_dir: str | os.PathLike[str], timeout_ms: int = 5_000, check_version: bool = True,
             log: Callable[[str], None] | None = None) -> ArchiveMarkFile:
        """Map an existing mark file read-only (following ``archive-mark.lnk``), waiting up to ``timeout_ms`` for a
        non-zero version and activity timestamp (AeronTimeoutError); its major version must be 3 unless
        ``check_version`` is False (CorruptFileError). ``log`` hears ``INFO: mark file exists: <path>``."""
        path = resolve_mark_file_dir(archive_dir) / FILENAME
        offset = _read_header_offset(path) if path.exists() else HEADER_OFFSET
        mark = MarkFile.map_existing(
            path, version_offset=offset + _VERSION, timestamp_offset=offset + _ACTIVITY_TIMESTAMP,
            timeout_ms=timeout_ms, version_check=_check_major_version(path, offset) if check_version else
            (lambda version: None), log=log)
        return cls(mark, offset, False)

    # -- fields -------------------------------------------------------------------------------------------------

    def header(self) -> MarkFileHeader:
        """A snapshot of the header fields."""
        view = self._mark_file.data
        decoder = MarkFileHeaderDecoder()
        try:
            if self._header_offset:
                decoder.wrap_header(view, 0, HEADER_LENGTH)
            else:
                # legacy: no message header; the v1 fields are there when headerLength is set
                decoder.wrap(view, 0, MarkFileHeaderEncoder.BLOCK_LENGTH, 0)
                version = 1 if self._mark_file.get_i32(_HEADER_LENGTH) > 0 else 0
                decoder.wrap(view, 0, MarkFileHeaderEncoder.BLOCK_LENGTH, version)
            return MarkFileHeader(
                decoder.version, decoder.activity_timestamp, decoder.start_timestamp, decoder.pid,
                decoder.control_stream_id, decoder.local_control_stream_id, decoder.events_stream_id,
                decoder.header_length, decoder.error_buffer_length, decoder.archive_id, decoder.control_channel,
                decoder.local_control_channel, decoder.events_channel, decoder.aeron_directory,
                decoder.acting_block_length, decoder.acting_version, self._header_offset)
        except MalformedMessageError as ex:
            raise CorruptFileError(f"mark file header does not decode: {ex}", path=str(self.path),
                                   offset=self._header_offset) from None
        finally:
            decoder.release()

    @property
    def version(self) -> int:
        """The semantic version (0 until the archive is ready)."""
        return self._mark_file.version_volatile()

    @property
    def activity_timestamp(self) -> int:
        """Epoch ms of the archive's last heartbeat (-1 after a clean shutdown)."""
        return self._mark_file.timestamp_volatile()

    @property
    def pid(self) -> int:
        """Process id of the archive."""
        return self.header().pid

    @property
    def archive_id(self) -> int:
        """The archive id written at start."""
        return self.header().archive_id

    # -- liveness -----------------------------------------------------------------------------------------------

    def _owned(self) -> MarkFile:
        if not self._writable or self.closed:
            raise IllegalStateError(f"mark file not open for writing: {self.path}")
        return self._mark_file

    def signal_ready(self, activity_timestamp: int | None = None) -> None:
        """Activity timestamp (release), then the version (release) last: readers now see a ready archive."""
        mark = self._owned()
        mark.timestamp_release(self._clock() if activity_timestamp is None else activity_timestamp)
        mark.signal_ready(SEMANTIC_VERSION)
        mark.force()

    def signal_terminated(self) -> None:
        """Clean shutdown: the activity timestamp becomes -1."""
        self.signal_ready(NULL_VALUE)

    def update_activity_timestamp(self, now_ms: int) -> None:
        """The conductor's heartbeat (every :data:`UPDATE_INTERVAL_MS`)."""
        self._owned().timestamp_release(now_ms)

    def force(self) -> None:
        """Flush the mapping to the file."""
        self._owned().force()

    # -- error log ----------------------------------------------------------------------------------------------

    @property
    def error_log(self) -> DistinctErrorLog:
        """The archive's DistinctErrorLog over the error region (created on first use)."""
        buffer = self._owned().buffer
        if self._error_log is None:
            header = self.header()
            self._error_buffer = AtomicBuffer(buffer, header.header_length, header.error_buffer_length)
            self._error_log = DistinctErrorLog(self._error_buffer, self._clock)
        return self._error_log

    def error_records(self) -> list[ErrorLogRecord]:
        """The distinct errors recorded in the file, in log order (print them with
        :func:`aeron.common.mark_file.print_error_log`)."""
        header = self.header()
        return error_log_records(self._mark_file.data, header.header_length, header.error_buffer_length)

    # -- lifecycle ----------------------------------------------------------------------------------------------

    def close(self) -> None:
        """Unmap (idempotent)."""
        if self.closed:
            return
        self._error_log = None
        if self._error_buffer is not None:
            self._error_buffer.close()
            self._error_buffer = None
        self._mark_file.close()

    def __enter__(self) -> ArchiveMarkFile:  # noqa: PYI034 (not meant to be subclassed)
        """The mark file itself."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close it."""
        self.close()
