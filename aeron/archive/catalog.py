# SPDX-License-Identifier: Apache-2.0
"""The archive's recording catalog, ``archive.catalog``, byte-compatible with Aeron's.

Layout: a 32-byte CatalogHeader, then one entry per recording in id order, each a 32-byte
RecordingDescriptorHeader and a RecordingDescriptor body (no SBE message header) padded to the catalog's
alignment (64; a legacy catalog with alignment 0 uses 1024-byte entries starting at 1024). The file is mapped
shared and entries are read and updated in place through the generated flyweights of
``aeron._core.codecs.archive``, so a running Java tool or a read-only reader (ArchiveTool, Spark) sees updates.

Only VALID entries are recordings to the archive (listings, replays); INVALID and DELETED entries stay in place
and keep their ids, which are never reused.
"""
from __future__ import annotations

import mmap
import os
import pathlib
import time
from collections.abc import Callable, Iterator
from typing import NamedTuple

from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.cnc import semantic_version_compose, semantic_version_to_string
from aeron._core.codecs.archive import (
    CatalogHeaderDecoder,
    CatalogHeaderEncoder,
    RecordingDescriptorDecoder,
    RecordingDescriptorEncoder,
    RecordingDescriptorHeaderDecoder,
    RecordingDescriptorHeaderEncoder,
    RecordingState,
)
from aeron.archive import segments
from aeron.archive.checksums import Checksum
from aeron.archive.configuration import NULL_POSITION, NULL_TIMESTAMP, NULL_VALUE
from aeron.archive.recording_descriptor import RecordingDescriptor
from aeron.common.constants import INT32_MAX
from aeron.common.errors import (
    CorruptFileError,
    IllegalStateError,
    InvalidArgumentError,
    MalformedMessageError,
)

CATALOG_FILE_NAME = "archive.catalog"
DEFAULT_CAPACITY = 1024 * 1024
MIN_CAPACITY = CatalogHeaderEncoder.BLOCK_LENGTH
MAX_CATALOG_LENGTH = INT32_MAX
DEFAULT_ALIGNMENT = 1024             # legacy (pre-3.x) entry alignment and first entry offset
CACHE_LINE_LENGTH = 64               # current entry alignment
DESCRIPTOR_HEADER_LENGTH = RecordingDescriptorHeaderEncoder.BLOCK_LENGTH
DESCRIPTOR_BLOCK_LENGTH = RecordingDescriptorEncoder.BLOCK_LENGTH

MAJOR_VERSION, MINOR_VERSION, PATCH_VERSION = 3, 1, 0
SEMANTIC_VERSION = semantic_version_compose(MAJOR_VERSION, MINOR_VERSION, PATCH_VERSION)   # the file's, not the protocol's

# field offsets inside the body (for the ordered and in-place writes the reference prescribes)
_STOP_TIMESTAMP = 32
_START_POSITION = 40
_STOP_POSITION = 48
_SESSION_ID = 72
_HEADER_STATE = 4
_HEADER_CHECKSUM = 8

_TERM_MIN, _TERM_MAX = 64 * 1024, 1024 * 1024 * 1024


def align(value: int, alignment: int) -> int:
    """``value`` rounded up to a multiple of the power of two ``alignment``."""
    return (value + alignment - 1) & ~(alignment - 1)


class DescriptorHeader(NamedTuple):
    """A catalog entry's RecordingDescriptorHeader."""

    length: int
    state: int
    checksum: int
    reserved: int


def _descriptor_body_length(stripped_channel: bytes, original_channel: bytes, source_identity: bytes) -> int:
    return DESCRIPTOR_BLOCK_LENGTH + 12 + len(stripped_channel) + len(original_channel) + len(source_identity)


def _ascii(name: str, value: str | bytes) -> bytes:
    if isinstance(value, str):
        try:
            return value.encode("ascii")
        except UnicodeEncodeError:
            raise InvalidArgumentError(f"{name} must be US-ASCII: {value!r}") from None
    return bytes(value)


def _park(*flyweights: object) -> None:
    """Let flyweights go of the catalog mapping (an mmap with an exported view cannot be closed or remapped, and a
    traceback keeps the flyweights alive)."""
    for flyweight in flyweights:
        flyweight.release()  # type: ignore[attr-defined]


class Catalog:
    """``archive.catalog`` of an archive directory, mapped shared.

    ``Catalog(archive_dir)`` opens (or creates) the catalog for writing, grows the file to ``capacity``, and
    repairs the stop position of recordings cut off by a crash unless ``fix_on_refresh`` is False.
    ``Catalog(archive_dir, read_only=True)`` opens an existing catalog for reading only (tools, Spark): nothing is
    written, :meth:`refresh` picks up entries added by the running archive.

    Corruption (a truncated file, an entry running past the file, a state or id out of order, an incompatible
    version) raises CorruptFileError naming the file and the offset. ``strict`` (the default) also refuses entries
    whose term or segment length or positions are impossible; ArchiveTool opens with ``strict=False`` so that
    ``verify`` can find and mark such entries INVALID.
    """

    def __init__(self, archive_dir: str | os.PathLike[str], *, capacity: int = DEFAULT_CAPACITY,
                 read_only: bool = False, file_sync_level: int = 0, checksum: Checksum | None = None,
                 epoch_clock: Callable[[], int] | None = None, fix_on_refresh: bool = True,
                 check_version: bool = True, strict: bool = True) -> None:
        """Open ``archive_dir``/archive.catalog; see the class docstring."""
        if capacity < MIN_CAPACITY or capacity > MAX_CATALOG_LENGTH:
            raise InvalidArgumentError(f"catalog capacity must be in [{MIN_CAPACITY}, {MAX_CATALOG_LENGTH}], "
                                       f"got {capacity}")
        self.archive_dir = pathlib.Path(archive_dir)
        self.path = self.archive_dir / CATALOG_FILE_NAME
        self.read_only = read_only
        self.checksum = checksum
        self._check_version = check_version
        self._strict = strict
        self._clock = epoch_clock or (lambda: time.time_ns() // 1_000_000)
        self._force_writes = file_sync_level > 0
        self._force_metadata = file_sync_level > 1
        self._fd = -1
        self._mm: mmap.mmap | None = None
        self._atomic: AtomicBuffer | None = None
        self._offsets: dict[int, int] = {}          # recording id -> entry offset, every entry
        self._valid: dict[int, int] = {}            # recording id -> entry offset, VALID entries (the index)
        self._last_recording_id = -1
        self.closed = False
        exists = self.path.exists()
        if read_only and not exists:
            raise FileNotFoundError(f"no catalog: {self.path}")
        try:
            self._open(exists, capacity)
            if not read_only and exists and fix_on_refresh:
                self._refresh_and_fix()
        except BaseException:
            self.close()
            raise

    # -- opening ------------------------------------------------------------------------------------------------

    def _open(self, exists: bool, capacity: int) -> None:
        path = str(self.path)
        flags = os.O_RDONLY if self.read_only else os.O_RDWR | os.O_CREAT
        self._fd = os.open(path, flags, 0o666)
        size = os.fstat(self._fd).st_size
        if exists and size < CatalogHeaderEncoder.BLOCK_LENGTH:
            raise CorruptFileError(f"catalog shorter than its {CatalogHeaderEncoder.BLOCK_LENGTH}-byte header "
                                   f"({size} bytes)", path=path, offset=size)
        if self.read_only:
            self.capacity = size
        else:
            self.capacity = max(size, capacity) if exists else capacity
            if size < self.capacity:
                os.ftruncate(self._fd, self.capacity)   # sparse, as Java's map of a longer region
        self._map()
        if exists:
            header = CatalogHeaderDecoder().wrap(self._mm, 0, CatalogHeaderEncoder.BLOCK_LENGTH,
                                                 CatalogHeaderEncoder.SCHEMA_VERSION)
            version, alignment, next_id = header.version, header.alignment, header.next_recording_id
            del header
            if self._check_version and (version >> 16) != MAJOR_VERSION:
                raise CorruptFileError(f"incompatible catalog file version {semantic_version_to_string(version)}, "
                                       f"archive software is {semantic_version_to_string(SEMANTIC_VERSION)}",
                                       path=path, offset=0)
            if alignment == 0:
                if not self.read_only:
                    raise IllegalStateError(f"{path}: legacy catalog layout (alignment 0), migrate it first")
                self.alignment, self.first_entry_offset = DEFAULT_ALIGNMENT, DEFAULT_ALIGNMENT
                self.legacy = True
            else:
                if alignment < 32 or alignment & (alignment - 1):
                    raise CorruptFileError(f"catalog alignment {alignment} is not a power of two >= 32",
                                           path=path, offset=16)
                self.alignment, self.first_entry_offset = alignment, CatalogHeaderEncoder.BLOCK_LENGTH
                self.legacy = False
            self._next_recording_id = next_id
            self._next_entry_offset = self.first_entry_offset
            self._build_index(min(size, self.capacity))
            if self._next_recording_id == 0 or self.legacy:
                self._next_recording_id = self._last_recording_id + 1
            elif self._next_recording_id < self._last_recording_id + 1 and not self.read_only:
                raise CorruptFileError(f"invalid nextRecordingId: expected value greater or equal to "
                                       f"{self._last_recording_id + 1}, was {self._next_recording_id}",
                                       path=path, offset=8)
        else:
            self.alignment, self.first_entry_offset, self.legacy = CACHE_LINE_LENGTH, CatalogHeaderEncoder.BLOCK_LENGTH, False
            encoder = CatalogHeaderEncoder().wrap(self._mm, 0)
            encoder.version = SEMANTIC_VERSION
            encoder.length = CatalogHeaderEncoder.BLOCK_LENGTH
            encoder.next_recording_id = 0
            encoder.alignment = CACHE_LINE_LENGTH
            del encoder
            self._next_recording_id = 0
            self._next_entry_offset = self.first_entry_offset
            self._force(directory=True)

    def _map(self) -> None:
        if self.capacity == 0:
            raise CorruptFileError("catalog is empty", path=str(self.path), offset=0)
        if self.read_only:
            self._mm = mmap.mmap(self._fd, self.capacity, access=mmap.ACCESS_READ)
        else:
            self._mm = mmap.mmap(self._fd, self.capacity, access=mmap.ACCESS_WRITE)
            self._atomic = AtomicBuffer(self._mm)

    def _unmap(self) -> None:
        if self._atomic is not None:
            self._atomic.close()
            self._atomic = None
        if self._mm is not None:
            self._mm.close()
            self._mm = None

    def _entry_length(self, offset: int) -> int:
        assert self._mm is not None
        return int.from_bytes(self._mm[offset:offset + 4], "little", signed=True)

    def _build_index(self, end: int, start: int | None = None) -> None:
        """Scan entries from ``start`` (the first entry) up to ``end`` (the bytes the file really holds)."""
        offset = self.first_entry_offset if start is None else start
        header = RecordingDescriptorHeaderDecoder()
        body = RecordingDescriptorDecoder()
        try:
            offset = self._scan_entries(offset, end, header, body)
        finally:
            _park(header, body)
        self._next_entry_offset = offset

    def _scan_entries(self, offset: int, end: int, header: RecordingDescriptorHeaderDecoder,
                      body: RecordingDescriptorDecoder) -> int:
        path = str(self.path)
        assert self._mm is not None
        while offset + DESCRIPTOR_HEADER_LENGTH <= end:
            length = self._entry_length(offset)
            if length == 0:
                break
            if length < 0:
                raise CorruptFileError(f"catalog entry length {length} is negative", path=path, offset=offset)
            frame_length = align(length + DESCRIPTOR_HEADER_LENGTH, self.alignment)
            if offset + DESCRIPTOR_HEADER_LENGTH + length > end:
                raise CorruptFileError(f"catalog entry of {length} bytes runs past the end of the file ({end} "
                                       f"bytes)", path=path, offset=offset)
            header.wrap(self._mm, offset, DESCRIPTOR_HEADER_LENGTH, RecordingDescriptorHeaderEncoder.SCHEMA_VERSION)
            state = header.state
            if state not in (RecordingState.INVALID, RecordingState.VALID, RecordingState.DELETED):
                raise CorruptFileError(f"catalog entry state {state} is not INVALID, VALID or DELETED", path=path,
                                       offset=offset + _HEADER_STATE)
            body_offset = offset + DESCRIPTOR_HEADER_LENGTH
            try:
                body.wrap(self._mm, body_offset, DESCRIPTOR_BLOCK_LENGTH, RecordingDescriptorEncoder.SCHEMA_VERSION,
                          body_offset + length)
            except MalformedMessageError as ex:
                raise CorruptFileError(f"catalog entry body does not decode: {ex}", path=path,
                                       offset=body_offset) from None
            if self._strict:
                self._check_body(body, offset)
            recording_id = body.recording_id
            if recording_id <= self._last_recording_id:
                raise CorruptFileError(f"catalog entry recording id {recording_id} is not above the previous "
                                       f"{self._last_recording_id}", path=path, offset=body_offset + 16)
            self._last_recording_id = recording_id
            self._offsets[recording_id] = offset
            if state == RecordingState.VALID:
                self._valid[recording_id] = offset
            offset += frame_length
        return offset

    def _check_body(self, body: RecordingDescriptorDecoder, offset: int) -> None:
        path = str(self.path)
        base = offset + DESCRIPTOR_HEADER_LENGTH
        term_length = body.term_buffer_length
        if term_length < _TERM_MIN or term_length > _TERM_MAX or term_length & (term_length - 1):
            raise CorruptFileError(f"catalog entry term buffer length {term_length} is not a power of two in "
                                   f"[64 KiB, 1 GiB]", path=path, offset=base + 64)
        segment_length = body.segment_file_length
        if segment_length < term_length or segment_length & (segment_length - 1):
            raise CorruptFileError(f"catalog entry segment file length {segment_length} is not a power of two "
                                   f">= the term length {term_length}", path=path, offset=base + 60)
        if body.start_position < 0:
            raise CorruptFileError(f"catalog entry start position {body.start_position} is negative", path=path,
                                   offset=base + _START_POSITION)
        stop = body.stop_position
        if stop != NULL_POSITION and stop < body.start_position:
            raise CorruptFileError(f"catalog entry stop position {stop} is before its start position "
                                   f"{body.start_position}", path=path, offset=base + _STOP_POSITION)

    def _force(self, directory: bool = False) -> None:
        if not self._force_writes or self._fd < 0:
            return
        if self._mm is not None:
            self._mm.flush()
        (os.fsync if self._force_metadata else os.fdatasync)(self._fd)
        if directory:
            dir_fd = os.open(self.archive_dir, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)

    def _refresh_and_fix(self) -> None:
        """Recover the stop position of VALID entries left at -1 by a crash, from their last segment."""
        files = None
        now = self._clock()
        for recording_id, offset in list(self._valid.items()):
            body_offset = offset + DESCRIPTOR_HEADER_LENGTH
            if self._get_i64(body_offset + _STOP_POSITION) != NULL_POSITION:
                continue
            if files is None:
                files = segments.index_segment_files(self.archive_dir)
            body = RecordingDescriptorDecoder().wrap(self._mm, body_offset, DESCRIPTOR_BLOCK_LENGTH,
                                                     RecordingDescriptorEncoder.SCHEMA_VERSION)
            start, term_length, segment_length = (body.start_position, body.term_buffer_length,
                                                  body.segment_file_length)
            del body
            stop = segments.compute_stop_position(self.archive_dir, files.get(recording_id, []), start,
                                                  term_length, segment_length, self.checksum)
            self._put_i64(body_offset + _STOP_TIMESTAMP, now)
            self._put_i64_ordered(body_offset + _STOP_POSITION, stop)
            self._update_checksum(offset)
        self._force()

    # -- raw field access ---------------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self.closed or self._mm is None:
            raise IllegalStateError(f"catalog is closed: {self.path}")

    def _check_writable(self) -> None:
        self._check_open()
        if self.read_only:
            raise IllegalStateError(f"catalog opened read-only: {self.path}")

    def _get_i64(self, offset: int) -> int:
        assert self._mm is not None
        return int.from_bytes(self._mm[offset:offset + 8], "little", signed=True)

    def _put_i64(self, offset: int, value: int) -> None:
        assert self._atomic is not None
        self._atomic.put_i64(offset, value)

    def _put_i64_ordered(self, offset: int, value: int) -> None:
        assert self._atomic is not None
        self._atomic.put_i64_ordered(offset, value)

    def _put_i32(self, offset: int, value: int) -> None:
        assert self._atomic is not None
        self._atomic.put_i32(offset, value)

    def _compute_checksum(self, offset: int, length: int) -> int:
        if self.checksum is None:
            return 0
        assert self._mm is not None
        view = memoryview(self._mm)[offset + DESCRIPTOR_HEADER_LENGTH:offset + DESCRIPTOR_HEADER_LENGTH + length]
        try:
            return self.checksum(view)
        finally:
            view.release()

    def _update_checksum(self, offset: int) -> None:
        if self.checksum is not None:
            self._put_i32(offset + _HEADER_CHECKSUM, self._compute_checksum(offset, self._entry_length(offset)))

    def _offset_of(self, recording_id: int, any_state: bool = False) -> int:
        offset = (self._offsets if any_state else self._valid).get(recording_id, -1)
        if offset < 0:
            raise KeyError(f"unknown recording id: {recording_id}")
        return offset

    # -- queries --------------------------------------------------------------------------------------------------

    @property
    def next_recording_id(self) -> int:
        """The id the next new recording gets."""
        return self._next_recording_id

    @property
    def entry_count(self) -> int:
        """Number of VALID entries (the in-memory index)."""
        return len(self._valid)

    @property
    def version(self) -> int:
        """The catalog header's semantic version."""
        self._check_open()
        return CatalogHeaderDecoder().wrap(self._mm, 0, CatalogHeaderEncoder.BLOCK_LENGTH,
                                           CatalogHeaderEncoder.SCHEMA_VERSION).version

    def has_recording(self, recording_id: int) -> bool:
        """Whether ``recording_id`` is a VALID entry."""
        return recording_id in self._valid

    def entry_offset(self, recording_id: int, any_state: bool = True) -> int:
        """File offset of ``recording_id``'s entry (-1 when absent)."""
        return (self._offsets if any_state else self._valid).get(recording_id, -1)

    def recording(self, recording_id: int, any_state: bool = False) -> RecordingDescriptor:
        """A snapshot of VALID recording ``recording_id`` (any state with ``any_state``); KeyError if absent."""
        self._check_open()
        return self._descriptor_at(self._offset_of(recording_id, any_state))

    def find_recording(self, recording_id: int, any_state: bool = False) -> RecordingDescriptor | None:
        """Like :meth:`recording`, None when absent."""
        offset = (self._offsets if any_state else self._valid).get(recording_id, -1)
        return None if offset < 0 else self._descriptor_at(offset)

    def _descriptor_at(self, offset: int) -> RecordingDescriptor:
        self._check_open()
        assert self._mm is not None
        length, state, checksum = (int.from_bytes(self._mm[offset + i:offset + i + 4], "little", signed=True)
                                   for i in (0, _HEADER_STATE, _HEADER_CHECKSUM))
        body_offset = offset + DESCRIPTOR_HEADER_LENGTH
        d = RecordingDescriptorDecoder()
        try:
            d.wrap(self._mm, body_offset, DESCRIPTOR_BLOCK_LENGTH, RecordingDescriptorEncoder.SCHEMA_VERSION,
                   body_offset + length)
            return self._snapshot(d, state, checksum)
        except MalformedMessageError as ex:
            raise CorruptFileError(f"catalog entry body does not decode: {ex}", path=str(self.path),
                                   offset=body_offset) from None
        finally:
            _park(d)

    @staticmethod
    def _snapshot(d: RecordingDescriptorDecoder, state: int, checksum: int) -> RecordingDescriptor:
        return RecordingDescriptor(
            d.control_session_id, d.correlation_id, d.recording_id, d.start_timestamp, d.stop_timestamp,
            d.start_position, d.stop_position, d.initial_term_id, d.segment_file_length, d.term_buffer_length,
            d.mtu_length, d.session_id, d.stream_id, d.stripped_channel, d.original_channel, d.source_identity,
            RecordingState(state), checksum)

    def __iter__(self) -> Iterator[RecordingDescriptor]:
        """VALID recordings in id order."""
        for offset in list(self._valid.values()):
            yield self._descriptor_at(offset)

    def entries(self) -> Iterator[RecordingDescriptor]:
        """Every entry (VALID, INVALID and DELETED) in id order; ``state`` tells them apart."""
        for offset in list(self._offsets.values()):
            yield self._descriptor_at(offset)

    def recording_ids(self) -> list[int]:
        """Ids of the VALID recordings, ascending."""
        return list(self._valid)

    def __len__(self) -> int:
        """Number of VALID recordings."""
        return len(self._valid)

    def __contains__(self, recording_id: object) -> bool:
        """Whether ``recording_id`` is a VALID recording."""
        return recording_id in self._valid

    def start_position(self, recording_id: int) -> int:
        """Start position of VALID recording ``recording_id``."""
        self._check_open()
        return self._get_i64(self._offset_of(recording_id) + DESCRIPTOR_HEADER_LENGTH + _START_POSITION)

    def stop_position(self, recording_id: int) -> int:
        """Stop position of VALID recording ``recording_id`` (-1 while it records)."""
        self._check_open()
        return self._get_i64(self._offset_of(recording_id) + DESCRIPTOR_HEADER_LENGTH + _STOP_POSITION)

    def find_last_matching_recording(self, min_recording_id: int, channel_fragment: str | bytes, stream_id: int,
                                     session_id: int) -> int:
        """Highest VALID recording id >= ``min_recording_id`` with this stream and session id whose original
        channel contains ``channel_fragment`` (empty matches all); -1 when none (Aeron ``Catalog.findLast``)."""
        self._check_open()
        if min_recording_id < 0:
            return NULL_VALUE
        fragment = _ascii("channel fragment", channel_fragment)
        body = RecordingDescriptorDecoder()
        try:
            for recording_id in reversed(self._valid):
                if recording_id < min_recording_id:
                    break
                offset = self._valid[recording_id]
                body_offset = offset + DESCRIPTOR_HEADER_LENGTH
                body.wrap(self._mm, body_offset, DESCRIPTOR_BLOCK_LENGTH, RecordingDescriptorEncoder.SCHEMA_VERSION,
                          body_offset + self._entry_length(offset))
                if body.session_id == session_id and body.stream_id == stream_id and \
                        (not fragment or fragment in body.original_channel.encode("ascii", "replace")):
                    return recording_id
            return NULL_VALUE
        finally:
            _park(body)

    def descriptor_header(self, recording_id: int) -> DescriptorHeader:
        """``recording_id``'s RecordingDescriptorHeader fields (any state)."""
        self._check_open()
        assert self._mm is not None
        offset = self._offset_of(recording_id, True)
        length, state, checksum = (int.from_bytes(self._mm[offset + i:offset + i + 4], "little", signed=True)
                                   for i in (0, _HEADER_STATE, _HEADER_CHECKSUM))
        return DescriptorHeader(length, state, checksum, int.from_bytes(self._mm[offset + 31:offset + 32], "little",
                                                                        signed=True))

    def entry_bytes(self, recording_id: int) -> bytes:
        """A copy of ``recording_id``'s entry as stored: the 32-byte header and the body up to its length."""
        self._check_open()
        assert self._mm is not None
        offset = self._offset_of(recording_id, True)
        return bytes(self._mm[offset:offset + DESCRIPTOR_HEADER_LENGTH + self._entry_length(offset)])

    def compute_descriptor_checksum(self, recording_id: int) -> int:
        """The catalog checksum of ``recording_id``'s padded body as it is now (0 without a checksum)."""
        self._check_open()
        offset = self._offset_of(recording_id, True)
        return self._compute_checksum(offset, self._entry_length(offset))

    def header_bytes(self, recording_id: int) -> tuple[int, int, int]:
        """``(length, state, checksum)`` of ``recording_id``'s descriptor header (any state)."""
        self._check_open()
        header = RecordingDescriptorHeaderDecoder().wrap(self._mm, self._offset_of(recording_id, True),
                                                         DESCRIPTOR_HEADER_LENGTH,
                                                         RecordingDescriptorHeaderEncoder.SCHEMA_VERSION)
        return header.length, header.state, header.checksum

    def refresh(self) -> int:
        """Pick up entries appended since the last scan (a read-only reader following a running archive), and
        state changes of known ones; returns how many entries were added."""
        self._check_open()
        size = os.fstat(self._fd).st_size
        if size > self.capacity:
            self._unmap()
            self.capacity = size
            self._map()
        before = len(self._offsets)
        # states of known entries may have changed (purge, mark-invalid)
        for recording_id, offset in self._offsets.items():
            state = int.from_bytes(self._mm[offset + _HEADER_STATE:offset + _HEADER_STATE + 4], "little")  # type: ignore[index]
            if state == RecordingState.VALID:
                self._valid[recording_id] = offset
            else:
                self._valid.pop(recording_id, None)
        self._build_index(self.capacity, self._next_entry_offset)
        self._valid = dict(sorted(self._valid.items()))
        self._next_recording_id = max(self._next_recording_id, self._last_recording_id + 1)
        return len(self._offsets) - before

    # -- updates ------------------------------------------------------------------------------------------------

    def add_recording(self, *, start_position: int, start_timestamp: int, initial_term_id: int,
                      segment_file_length: int, term_buffer_length: int, mtu_length: int, session_id: int,
                      stream_id: int, stripped_channel: str, original_channel: str, source_identity: str,
                      stop_position: int = NULL_POSITION, stop_timestamp: int = NULL_TIMESTAMP) -> int:
        """Append a VALID entry and return its recording id (Aeron ``Catalog.addNewRecording``).

        The body is written first, then the header's length and checksum, then its state (VALID), then the
        catalog header's nextRecordingId.
        """
        self._check_writable()
        stripped = _ascii("stripped channel", stripped_channel)
        original = _ascii("original channel", original_channel)
        source = _ascii("source identity", source_identity)
        frame_length = align(DESCRIPTOR_HEADER_LENGTH + _descriptor_body_length(stripped, original, source),
                             self.alignment)
        offset = self._next_entry_offset
        if offset + frame_length > self.capacity:
            self._grow(frame_length)
        recording_id = self._next_recording_id
        self._encode_body(offset, recording_id, 0, 0, start_timestamp, stop_timestamp, start_position,
                          stop_position, initial_term_id, segment_file_length, term_buffer_length, mtu_length,
                          session_id, stream_id, stripped, original, source)
        length = frame_length - DESCRIPTOR_HEADER_LENGTH
        header = RecordingDescriptorHeaderEncoder().wrap(self._mm, offset)
        header.length = length
        header.checksum = self._compute_checksum(offset, length)
        header.state = RecordingState.VALID
        del header
        catalog_header = CatalogHeaderEncoder().wrap(self._mm, 0)
        catalog_header.next_recording_id = recording_id + 1
        del catalog_header
        self._force()
        self._next_recording_id = recording_id + 1
        self._next_entry_offset = offset + frame_length
        self._last_recording_id = recording_id
        self._offsets[recording_id] = offset
        self._valid[recording_id] = offset
        return recording_id

    def _encode_body(self, offset: int, recording_id: int, control_session_id: int, correlation_id: int,
                     start_timestamp: int, stop_timestamp: int, start_position: int, stop_position: int,
                     initial_term_id: int, segment_file_length: int, term_buffer_length: int, mtu_length: int,
                     session_id: int, stream_id: int, stripped: bytes, original: bytes, source: bytes) -> None:
        body = RecordingDescriptorEncoder().wrap(self._mm, offset + DESCRIPTOR_HEADER_LENGTH)
        try:
            body.control_session_id = control_session_id
            body.correlation_id = correlation_id
            body.recording_id = recording_id
            body.start_timestamp = start_timestamp
            body.stop_timestamp = stop_timestamp
            body.start_position = start_position
            body.stop_position = stop_position
            body.initial_term_id = initial_term_id
            body.segment_file_length = segment_file_length
            body.term_buffer_length = term_buffer_length
            body.mtu_length = mtu_length
            body.session_id = session_id
            body.stream_id = stream_id
            body.put_stripped_channel(stripped)
            body.put_original_channel(original)
            body.put_source_identity(source)
        finally:
            _park(body)

    def _grow(self, frame_length: int) -> None:
        """Grow the file by x1.5 steps until ``frame_length`` more bytes fit at the end (Aeron ``growCatalog``)."""
        old = self.capacity
        target = self._next_entry_offset + frame_length
        if target > MAX_CATALOG_LENGTH:
            if old == MAX_CATALOG_LENGTH:
                raise IllegalStateError(f"catalog is full, max capacity reached: {MAX_CATALOG_LENGTH}")
            raise IllegalStateError(f"recording is too big: total recording length is {frame_length} bytes, "
                                    f"available space is {MAX_CATALOG_LENGTH - self._next_entry_offset} bytes")
        new = old
        while new < target:
            new = min(new + (new >> 1), MAX_CATALOG_LENGTH)
        self._unmap()
        os.ftruncate(self._fd, new)
        self.capacity = new
        self._map()

    def recording_stopped(self, recording_id: int, position: int, timestamp_ms: int, any_state: bool = False) -> None:
        """Stop timestamp, then stop position (release), then checksum (``any_state``: also a non-VALID entry)."""
        self._check_writable()
        offset = self._offset_of(recording_id, any_state)
        body = offset + DESCRIPTOR_HEADER_LENGTH
        self._put_i64(body + _STOP_TIMESTAMP, timestamp_ms)
        self._put_i64_ordered(body + _STOP_POSITION, position)
        self._update_checksum(offset)
        self._force()

    def update_stop_position(self, recording_id: int, position: int) -> None:
        """Stop position (release) then checksum (truncate)."""
        self._check_writable()
        offset = self._offset_of(recording_id)
        self._put_i64_ordered(offset + DESCRIPTOR_HEADER_LENGTH + _STOP_POSITION, position)
        self._update_checksum(offset)
        self._force()

    def update_start_position(self, recording_id: int, position: int) -> None:
        """Start position then checksum (detach, attach, migrate)."""
        self._check_writable()
        offset = self._offset_of(recording_id)
        self._put_i64(offset + DESCRIPTOR_HEADER_LENGTH + _START_POSITION, position)
        self._update_checksum(offset)
        self._force()

    def extend_recording(self, recording_id: int, control_session_id: int, correlation_id: int,
                         session_id: int) -> None:
        """A recording is being extended: control session and correlation ids, stop timestamp -1, session id,
        then stop position -1 (release), then checksum."""
        self._check_writable()
        offset = self._offset_of(recording_id)
        body = offset + DESCRIPTOR_HEADER_LENGTH
        self._put_i64(body, control_session_id)
        self._put_i64(body + 8, correlation_id)
        self._put_i64(body + _STOP_TIMESTAMP, NULL_TIMESTAMP)
        self._put_i32(body + _SESSION_ID, session_id)
        self._put_i64_ordered(body + _STOP_POSITION, NULL_POSITION)
        self._update_checksum(offset)
        self._force()

    def change_state(self, recording_id: int, state: RecordingState, any_state: bool = False) -> bool:
        """Set the entry's state; returns False when there is no such entry.

        Without ``any_state`` only a VALID entry is changed (the archive's purge); tools pass ``any_state`` to
        revive INVALID entries.
        """
        self._check_writable()
        offset = (self._offsets if any_state else self._valid).get(recording_id, -1)
        if offset < 0:
            return False
        self._atomic.put_i32(offset + _HEADER_STATE, int(state))  # type: ignore[union-attr]
        if state == RecordingState.VALID:
            self._valid[recording_id] = offset
            self._valid = dict(sorted(self._valid.items()))
        else:
            self._valid.pop(recording_id, None)
        self._force()
        return True

    def update_checksum(self, recording_id: int) -> None:
        """Recompute ``recording_id``'s descriptor checksum with the catalog's checksum (ArchiveTool checksum)."""
        self._check_writable()
        self._update_checksum(self._offset_of(recording_id, True))
        self._force()

    def replace_recording(self, recording_id: int, *, start_position: int, stop_position: int,
                          start_timestamp: int, stop_timestamp: int, initial_term_id: int, segment_file_length: int,
                          term_buffer_length: int, mtu_length: int, session_id: int, stream_id: int,
                          stripped_channel: str, original_channel: str, source_identity: str) -> None:
        """Re-encode a VALID entry (replicate into an empty recording, channel update): a longer entry shifts the
        later ones right, a shorter one keeps its frame and zeroes the tail (Aeron ``replaceRecording``)."""
        self._check_writable()
        offset = self._offset_of(recording_id)
        stripped = _ascii("stripped channel", stripped_channel)
        original = _ascii("original channel", original_channel)
        source = _ascii("source identity", source_identity)
        old_frame = align(self._entry_length(offset) + DESCRIPTOR_HEADER_LENGTH, self.alignment)
        new_frame = align(DESCRIPTOR_HEADER_LENGTH + _descriptor_body_length(stripped, original, source),
                          self.alignment)
        if new_frame > old_frame:
            shift = new_frame - old_frame
            end = self._next_entry_offset
            if end + shift > self.capacity:
                self._grow(shift)
            assert self._mm is not None
            tail = offset + old_frame
            if tail < end:
                self._mm.move(tail + shift, tail, end - tail)
                for rid, off in self._offsets.items():
                    if off > offset:
                        self._offsets[rid] = off + shift
                        if rid in self._valid:
                            self._valid[rid] = off + shift
            self._next_entry_offset = end + shift
            length = checksum_length = new_frame - DESCRIPTOR_HEADER_LENGTH
        else:
            length = old_frame - DESCRIPTOR_HEADER_LENGTH
            checksum_length = new_frame - DESCRIPTOR_HEADER_LENGTH
            self._atomic.set_memory(offset + new_frame, old_frame - new_frame, 0)  # type: ignore[union-attr]
        assert self._mm is not None
        self._mm[offset + DESCRIPTOR_HEADER_LENGTH:offset + new_frame] = bytes(new_frame - DESCRIPTOR_HEADER_LENGTH)
        self._encode_body(offset, recording_id, 0, 0, start_timestamp, stop_timestamp, start_position,
                          stop_position, initial_term_id, segment_file_length, term_buffer_length, mtu_length,
                          session_id, stream_id, stripped, original, source)
        header = RecordingDescriptorHeaderEncoder().wrap(self._mm, offset)
        header.length = length
        header.checksum = self._compute_checksum(offset, checksum_length)
        header.state = RecordingState.VALID
        del header
        self._force()

    # -- lifecycle ----------------------------------------------------------------------------------------------

    def close(self) -> None:
        """Unmap and close (forcing the file first when writable)."""
        if self.closed:
            return
        self.closed = True
        try:
            if self._mm is not None and not self.read_only:
                self._mm.flush()
        finally:
            self._unmap()
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1

    def __enter__(self) -> Catalog:  # noqa: PYI034 (not meant to be subclassed)
        """The catalog itself."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close it."""
        self.close()

    def __repr__(self) -> str:
        """Path, capacity and counts."""
        return (f"Catalog({str(self.path)!r}, capacity={getattr(self, 'capacity', 0)}, "
                f"entries={len(self._offsets)}, valid={len(self._valid)}, next_recording_id="
                f"{getattr(self, '_next_recording_id', -1)}{', read_only' if self.read_only else ''})")
