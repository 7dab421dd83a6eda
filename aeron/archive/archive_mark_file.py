# SPDX-License-Identifier: Apache-2.0
"""``archive-mark.dat``: the archive's liveness and configuration file, byte-compatible with Aeron's
``ArchiveMarkFile``.

Layout: an SBE message header and the MarkFileHeader (template 200 of schema 100) with the four channel strings,
zeros up to 8192 bytes, then a distinct error log (Agrona's layout, readable by Aeron's ArchiveTool ``errors``).
``version`` (offset 8) is written last when the archive is ready and ``activityTimestamp`` (offset 16) refreshed
every second; both are what readers wait for. A legacy file has no message header (the header block at offset 0).
"""
from __future__ import annotations

import dataclasses
import datetime
import mmap
import os
import pathlib
import time
from collections.abc import Callable

from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.cnc import semantic_version_compose
from aeron._core.codecs.archive_mark import MarkFileHeaderDecoder, MarkFileHeaderEncoder
from aeron._core.error_log import (
    DistinctErrorLog,
    ErrorLogRecord,
    format_timestamp,
    read_error_log,
)
from aeron.archive.configuration import NULL_VALUE
from aeron.common.cnc_attach import is_driver_dead
from aeron.common.errors import (
    AeronTimeoutError,
    CorruptFileError,
    IllegalStateError,
    InvalidArgumentError,
    MalformedMessageError,
)

FILENAME = "archive-mark.dat"
LINK_FILENAME = "archive-mark.lnk"
HEADER_LENGTH = 8192                     # header region; the error log starts here
HEADER_OFFSET = 8                        # the MarkFileHeader block follows an SBE message header
VERSION_OFFSET = HEADER_OFFSET + 0
ACTIVITY_TIMESTAMP_OFFSET = HEADER_OFFSET + 8
MAJOR_VERSION, MINOR_VERSION, PATCH_VERSION = 3, 1, 0
SEMANTIC_VERSION = semantic_version_compose(MAJOR_VERSION, MINOR_VERSION, PATCH_VERSION)   # the file's
ERROR_BUFFER_LENGTH_DEFAULT = 1024 * 1024
LIVENESS_TIMEOUT_MS = 10_000
UPDATE_INTERVAL_MS = 1_000


class ActiveArchiveError(IllegalStateError):
    """The mark file belongs to an archive that is still running (its activity timestamp is fresh)."""


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _align(value: int, alignment: int) -> int:
    return (value + alignment - 1) & ~(alignment - 1)


def _read_activity_timestamp(path: pathlib.Path, header_offset: int) -> int:
    try:
        with open(path, "rb") as f:
            raw = os.pread(f.fileno(), 8, header_offset + 8)
    except OSError:
        return 0
    return int.from_bytes(raw, "little", signed=True) if len(raw) == 8 else 0


def resolve_mark_file_dir(archive_dir: str | os.PathLike[str]) -> pathlib.Path:
    """The directory holding ``archive-mark.dat``: ``archive_dir``, or where ``archive-mark.lnk`` points."""
    archive_dir = pathlib.Path(archive_dir)
    link = archive_dir / LINK_FILENAME
    if link.exists():
        return pathlib.Path(link.read_text("ascii").strip())
    return archive_dir


def header_offset_of(data: bytes | memoryview | mmap.mmap) -> int:
    """8 when the file starts with the SBE message header of MarkFileHeader, 0 for a legacy file."""
    if len(data) >= 8:
        template_id = int.from_bytes(data[2:4], "little")
        schema_id = int.from_bytes(data[4:6], "little")
        if template_id == MarkFileHeaderEncoder.TEMPLATE_ID and schema_id == MarkFileHeaderEncoder.SCHEMA_ID:
            return HEADER_OFFSET
    return 0


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

    def __init__(self, path: pathlib.Path, buffer: AtomicBuffer | None, data: mmap.mmap | None,
                 header_offset: int, writable: bool) -> None:
        """Use :meth:`create` or :meth:`open`."""
        self.path = path
        self._buffer = buffer
        self._data = data
        self._header_offset = header_offset
        self._writable = writable
        self._error_log: DistinctErrorLog | None = None
        self._error_buffer: AtomicBuffer | None = None
        self._clock: Callable[[], int] = _now_ms
        self.closed = False

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

        An existing file whose activity timestamp is younger than ``liveness_timeout_ms`` raises
        ActiveArchiveError, unless the pid it names is gone from this host and its timestamp has stopped (a killed
        archive: taken over within 1.5 s of its last refresh, see ``aeron.common.cnc_attach.is_driver_dead``);
        otherwise its error log is saved to ``archive-<timestamp>-error.log`` beside it and the
        file is replaced. With ``archive_dir`` elsewhere, ``archive-mark.lnk`` there names ``mark_file_dir`` (and
        is removed when they are the same). Call :meth:`signal_ready` once the archive runs.
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
        if path.exists():
            cls._take_over(path, clock, liveness_timeout_ms, log)
        total = _align(HEADER_LENGTH + error_buffer_length, file_page_size)
        buffer = AtomicBuffer.map_file(path, total, create=True)
        encoder = MarkFileHeaderEncoder().wrap_and_apply_header(buffer, 0)
        try:
            encoder.activity_timestamp = 0
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
            link = pathlib.Path(archive_dir) / LINK_FILENAME
            if pathlib.Path(archive_dir).resolve() == mark_dir.resolve():
                link.unlink(missing_ok=True)
            else:
                link.write_text(str(mark_dir.resolve()), "ascii")
        mark = cls(path, buffer, None, HEADER_OFFSET, True)
        mark._clock = clock
        return mark

    @classmethod
    def _take_over(cls, path: pathlib.Path, clock: Callable[[], int], liveness_timeout_ms: int,
                   log: Callable[[str], None] | None) -> None:
        data = path.read_bytes()
        offset = header_offset_of(data)
        if len(data) >= offset + 32:
            timestamp = int.from_bytes(data[offset + 8:offset + 16], "little", signed=True)
            version = int.from_bytes(data[offset:offset + 4], "little", signed=True)
            pid = int.from_bytes(data[offset + 24:offset + 32], "little", signed=True)
            if version != 0 and timestamp > 0 and clock() - timestamp < liveness_timeout_ms:
                # Aeron waits out the liveness timeout. An archive killed a moment ago would block a restart for
                # 10 s, so, as the driver judges its cnc.dat: when the pid it wrote is gone from this host and its
                # activity timestamp has stopped, it is dead now. A live pid, or a timestamp still moving (an
                # archive in another pid namespace, or on another host, sharing the directory), keeps the rule.
                def read_timestamp() -> int:
                    return _read_activity_timestamp(path, offset)
                if not is_driver_dead(pid, read_timestamp, clock):
                    raise ActiveArchiveError(f"active mark file detected: {path} (pid {pid}, activity "
                                             f"{clock() - timestamp} ms ago)")
                if log is not None:
                    log(f"WARNING: the archive of {path} (pid {pid}) is gone: taking its mark file over")
        saved = save_existing_errors(path, data, offset)
        if saved is not None and log is not None:
            log(f"WARNING: existing errors saved to: {saved}")
        path.unlink()

    # -- opening (tools) ----------------------------------------------------------------------------------------

    @classmethod
    def open(cls, archive_dir: str | os.PathLike[str], timeout_ms: int = 5_000,
             check_version: bool = True) -> ArchiveMarkFile:
        """Map an existing mark file read-only (following ``archive-mark.lnk``), waiting up to ``timeout_ms`` for a
        non-zero version and activity timestamp; its major version must be 3 unless ``check_version`` is False."""
        path = resolve_mark_file_dir(archive_dir) / FILENAME
        deadline = _now_ms() + timeout_ms
        while True:
            with open(path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                if size < HEADER_OFFSET + 24:
                    raise CorruptFileError(f"mark file too short: {size} bytes", path=str(path), offset=size)
                data = mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ)
            offset = header_offset_of(data)
            version = int.from_bytes(data[offset:offset + 4], "little", signed=True)
            timestamp = int.from_bytes(data[offset + 8:offset + 16], "little", signed=True)
            if version != 0 and timestamp != 0:
                break
            data.close()
            if _now_ms() > deadline:
                raise AeronTimeoutError(f"mark file not ready (version {version}, activity timestamp "
                                        f"{timestamp}) after {timeout_ms} ms: {path}")
            time.sleep(0.016)
        if check_version and (version >> 16) != MAJOR_VERSION:
            data.close()
            raise CorruptFileError(f"mark file major version {version >> 16} is not {MAJOR_VERSION} "
                                   f"({(version >> 16) & 0xFF}.{(version >> 8) & 0xFF}.{version & 0xFF})",
                                   path=str(path), offset=offset)
        return cls(path, None, data, offset, False)

    # -- fields -------------------------------------------------------------------------------------------------

    def _view(self) -> AtomicBuffer | mmap.mmap:
        if self.closed:
            raise IllegalStateError(f"mark file is closed: {self.path}")
        return self._buffer if self._buffer is not None else self._data  # type: ignore[return-value]

    def header(self) -> MarkFileHeader:
        """A snapshot of the header fields."""
        view = self._view()
        decoder = MarkFileHeaderDecoder()
        try:
            if self._header_offset:
                decoder.wrap_header(view, 0, HEADER_LENGTH)
            else:
                # legacy: no message header; the v1 fields are there when headerLength is set
                decoder.wrap(view, 0, MarkFileHeaderEncoder.BLOCK_LENGTH, 0)
                version = 1 if int.from_bytes(bytes(memoryview(view)[44:48]), "little", signed=True) > 0 else 0
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

    def _get_i64(self, offset: int) -> int:
        view = self._view()
        if isinstance(view, AtomicBuffer):
            return view.get_i64_volatile(offset)
        return int.from_bytes(view[offset:offset + 8], "little", signed=True)

    @property
    def version(self) -> int:
        """The semantic version (0 until the archive is ready)."""
        offset = self._header_offset
        return int.from_bytes(bytes(memoryview(self._view())[offset:offset + 4]), "little", signed=True)

    @property
    def activity_timestamp(self) -> int:
        """Epoch ms of the archive's last heartbeat (-1 after a clean shutdown)."""
        return self._get_i64(self._header_offset + 8)

    @property
    def pid(self) -> int:
        """Process id of the archive."""
        return self.header().pid

    @property
    def archive_id(self) -> int:
        """The archive id written at start."""
        return self.header().archive_id

    # -- liveness -----------------------------------------------------------------------------------------------

    def _writable_buffer(self) -> AtomicBuffer:
        if self.closed or self._buffer is None or not self._writable:
            raise IllegalStateError(f"mark file not open for writing: {self.path}")
        return self._buffer

    def signal_ready(self, activity_timestamp: int | None = None) -> None:
        """Activity timestamp (release), then the version (release) last: readers now see a ready archive."""
        buffer = self._writable_buffer()
        now = self._clock() if activity_timestamp is None else activity_timestamp
        buffer.put_i64_ordered(ACTIVITY_TIMESTAMP_OFFSET, now)
        buffer.put_i32_ordered(VERSION_OFFSET, SEMANTIC_VERSION)
        self.force()

    def signal_terminated(self) -> None:
        """Clean shutdown: the activity timestamp becomes -1."""
        self.signal_ready(NULL_VALUE)

    def update_activity_timestamp(self, now_ms: int) -> None:
        """The conductor's heartbeat (every :data:`UPDATE_INTERVAL_MS`)."""
        self._writable_buffer().put_i64_ordered(ACTIVITY_TIMESTAMP_OFFSET, now_ms)

    def force(self) -> None:
        """Flush the mapping to the file."""
        self._writable_buffer()
        fd = os.open(self.path, os.O_RDONLY)      # fsync of the file writes back its dirty shared pages
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    # -- error log ----------------------------------------------------------------------------------------------

    @property
    def error_log(self) -> DistinctErrorLog:
        """The archive's DistinctErrorLog over the error region (created on first use)."""
        buffer = self._writable_buffer()
        if self._error_log is None:
            header = self.header()
            self._error_buffer = AtomicBuffer(buffer, header.header_length, header.error_buffer_length)
            self._error_log = DistinctErrorLog(self._error_buffer, self._clock)
        return self._error_log

    def error_records(self) -> list[ErrorLogRecord]:
        """The distinct errors recorded in the file, in log order."""
        header = self.header()
        if header.header_length <= 0 or header.error_buffer_length <= 0:
            return []
        start, length = header.header_length, header.error_buffer_length
        view = self._view()
        if isinstance(view, AtomicBuffer):
            section = AtomicBuffer(view, start, length)
        else:
            section = AtomicBuffer(bytearray(view[start:start + length]))
        try:
            return read_error_log(section)
        finally:
            section.close()

    # -- lifecycle ----------------------------------------------------------------------------------------------

    def close(self) -> None:
        """Unmap."""
        if self.closed:
            return
        self.closed = True
        self._error_log = None
        if self._error_buffer is not None:
            self._error_buffer.close()
            self._error_buffer = None
        if self._buffer is not None:
            self._buffer.close()
            self._buffer = None
        if self._data is not None:
            self._data.close()
            self._data = None

    def __enter__(self) -> ArchiveMarkFile:  # noqa: PYI034 (not meant to be subclassed)
        """The mark file itself."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close it."""
        self.close()


def format_error_records(records: list[ErrorLogRecord], tz: datetime.tzinfo | None = None) -> str:
    """Java's ``CommonContext.printErrorLog`` text for ``records`` (what ArchiveTool ``errors`` prints)."""
    if not records:
        return "\n0 distinct errors observed\n"
    parts = [f"\n{r.observation_count} observations from {format_timestamp(r.first_timestamp, tz)} to "
             f"{format_timestamp(r.last_timestamp, tz)} for:\n{r.text}\n" for r in records]
    parts.append(f"\n{len(records)} distinct errors observed.\n")
    return "".join(parts)


def save_existing_errors(path: pathlib.Path, data: bytes, header_offset: int) -> str | None:
    """Write the error log of an old mark file's bytes to ``archive-<yyyy-MM-dd-HH-mm-ss-SSSZ>-error.log`` beside it
    (nothing when it holds no error); returns the file written."""
    block = data[header_offset:header_offset + MarkFileHeaderEncoder.BLOCK_LENGTH]
    if len(block) < 52:
        return None
    header_length = int.from_bytes(block[44:48], "little", signed=True)
    error_length = int.from_bytes(block[48:52], "little", signed=True)
    if header_length <= 0 or error_length <= 0 or header_length + error_length > len(data):
        return None
    section = AtomicBuffer(bytearray(data[header_length:header_length + error_length]))
    try:
        records = read_error_log(section)
    finally:
        section.close()
    if not records:
        return None
    now = datetime.datetime.now().astimezone()
    stamp = now.strftime("%Y-%m-%d-%H-%M-%S-") + f"{now.microsecond // 1000:03d}" + now.strftime("%z")
    target = path.parent / f"archive-{stamp}-error.log"
    target.write_text(format_error_records(records), "ascii", errors="replace")
    return str(target)
