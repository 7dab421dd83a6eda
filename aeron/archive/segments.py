# SPDX-License-Identifier: Apache-2.0
"""Recording segment files: names, position arithmetic, listing, and stop-position recovery.

A recording's data lives in ``<recordingId>-<segmentBasePosition>.rec`` files, each ``segment_file_length``
bytes (sparse), holding the recorded term frames at ``position - segmentBase``. Segments are aligned to the
term base of the recording's start position, not to position 0 (Aeron ``AeronArchive.segmentFileBasePosition``).
The per-frame walk runs in the compiled kernel ``aeron._core.segment_scanner``.
"""
from __future__ import annotations

import mmap
import os
import pathlib
from collections.abc import Callable

from aeron._core.logbuffer import HEADER_LENGTH as DATA_HEADER_LENGTH
from aeron._core.segment_scanner import (
    CHECKSUM_NONE,
    VERIFY_BAD_CHECKSUM,
    VERIFY_BAD_FRAME_LENGTH,
    VERIFY_BAD_HEADER,
    VERIFY_DATA_UNREADABLE,
    VERIFY_HEADER_UNREADABLE,
    VERIFY_OK,
    scan_frames,
    verify_frames,
)
from aeron.archive.checksums import Checksum
from aeron.common.errors import CorruptFileError, InvalidArgumentError

RECORDING_SEGMENT_SUFFIX = ".rec"
DELETE_SUFFIX = ".del"
PAGE_SIZE = 4096                     # the page of the straddle check (Aeron Catalog.PAGE_SIZE)


def segment_file_name(recording_id: int, segment_base_position: int) -> str:
    """``<recordingId>-<segmentBasePosition>.rec``, decimal, no padding (Aeron ``Archive.segmentFileName``)."""
    return f"{recording_id}-{segment_base_position}{RECORDING_SEGMENT_SUFFIX}"


def parse_segment_file_name(name: str) -> tuple[int, int] | None:
    """``(recording_id, segment_base_position)`` of a segment file name, or None when it is not one.

    Split at the first ``-``; both parts must be decimal (a negative base is refused as Aeron's archive does).
    """
    if not name.endswith(RECORDING_SEGMENT_SUFFIX):
        return None
    stem = name[:-len(RECORDING_SEGMENT_SUFFIX)]
    dash = stem.find("-")
    if dash <= 0 or dash == len(stem) - 1:
        return None
    rid, base = stem[:dash], stem[dash + 1:]
    if not (rid.isdigit() and base.isdigit() and rid.isascii() and base.isascii()):
        return None
    return int(rid), int(base)


def _log2(value: int) -> int:
    return value.bit_length() - 1


def _check_power_of_two(name: str, value: int) -> None:
    if value <= 0 or value & (value - 1):
        raise InvalidArgumentError(f"{name} must be a positive power of two, got {value}")


def start_term_base(start_position: int, term_length: int) -> int:
    """Base position of the term holding ``start_position``."""
    return start_position - (start_position & (term_length - 1))


def segment_file_base_position(start_position: int, position: int, term_length: int,
                               segment_file_length: int) -> int:
    """Base position of the segment file holding ``position`` for a recording starting at ``start_position``."""
    _check_power_of_two("term length", term_length)
    _check_power_of_two("segment file length", segment_file_length)
    base = start_term_base(start_position, term_length)
    from_base = position - base
    return base + (from_base - (from_base & (segment_file_length - 1)))


def segment_offset(start_position: int, position: int, term_length: int, segment_file_length: int) -> int:
    """Offset of ``position`` inside its segment file."""
    return position - segment_file_base_position(start_position, position, term_length, segment_file_length)


def term_offset(position: int, term_length: int) -> int:
    """Offset of ``position`` in its term."""
    return position & (term_length - 1)


def term_id(position: int, initial_term_id: int, term_length: int) -> int:
    """Term id of ``position`` (int32 wrap-around, as the wire carries it)."""
    value = (initial_term_id + (position >> _log2(term_length))) & 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def position_of(term_id_value: int, offset: int, initial_term_id: int, term_length: int) -> int:
    """Position of ``offset`` in term ``term_id_value``."""
    term_count = (term_id_value - initial_term_id) & 0xFFFFFFFF
    if term_count & 0x80000000:
        term_count -= 1 << 32
    return (term_count << _log2(term_length)) + offset


def list_segment_files(archive_dir: str | os.PathLike[str], recording_id: int) -> list[str]:
    """Names of ``recording_id``'s segment files in ``archive_dir``, by base position."""
    found = []
    for name in os.listdir(archive_dir):
        parsed = parse_segment_file_name(name)
        if parsed is not None and parsed[0] == recording_id:
            found.append((parsed[1], name))
    return [name for _, name in sorted(found)]


def index_segment_files(archive_dir: str | os.PathLike[str]) -> dict[int, list[tuple[int, str]]]:
    """Every segment file of ``archive_dir`` as ``{recording_id: [(base_position, name), ...]}``, bases sorted."""
    index: dict[int, list[tuple[int, str]]] = {}
    for name in os.listdir(archive_dir):
        parsed = parse_segment_file_name(name)
        if parsed is not None:
            index.setdefault(parsed[0], []).append((parsed[1], name))
    for files in index.values():
        files.sort()
    return index


def _straddles_page(offset: int, length: int) -> bool:
    return offset // PAGE_SIZE != (offset + length - 1) // PAGE_SIZE


def _pages_after_straddle_have_data(data: bytes | memoryview | mmap.mmap, offset: int, length: int) -> bool:
    # a frame crossing a page whose later pages are all zero may be torn (the page never reached the disk)
    page = (offset // PAGE_SIZE + 1) * PAGE_SIZE
    end = offset + length
    while page < end:
        chunk = bytes(data[page:min(page + PAGE_SIZE, end)])
        if chunk.count(0) == len(chunk):
            return False
        page += PAGE_SIZE
    return True


class IncompleteFragmentError(CorruptFileError):
    """The last frame of a segment crosses a page boundary and cannot be proven complete (Aeron refuses to start
    and asks for ``ArchiveTool verify``)."""


def recover_stop_offset(path: str | os.PathLike[str], offset: int, segment_file_length: int,
                        checksum: Checksum | None = None,
                        truncate_on_page_straddle: bool | Callable[[str], bool] = False) -> int:
    """End offset of the recorded frames in segment ``path``, walking from ``offset`` while frame lengths are > 0.

    When the last frame straddles a 4 KiB page and neither its checksum (``checksum``, checked against the session
    id field) nor non-zero pages prove it complete, the file is cut at that frame (and re-extended to its full
    length) and the frame's offset returned when ``truncate_on_page_straddle`` is True or returns True for the
    path; otherwise IncompleteFragmentError is raised.
    """
    path = os.fspath(path)
    with open(path, "rb") as f:
        limit = min(segment_file_length, os.fstat(f.fileno()).st_size)
        if offset >= limit:
            return offset
        data = mmap.mmap(f.fileno(), limit, access=mmap.ACCESS_READ)
    try:
        end, last_length = scan_frames(data, offset, limit)
        last_offset = end - last_length
        if not last_length or not _straddles_page(last_offset, last_length):
            return end
        if checksum is not None and checksum_matches(data, last_offset, last_length, checksum):
            return end
        if _pages_after_straddle_have_data(data, last_offset, last_length):
            return end
    finally:
        data.close()
    confirm = truncate_on_page_straddle
    if not (confirm(path) if callable(confirm) else confirm):
        raise IncompleteFragmentError(
            f"Found potentially incomplete last fragment straddling page boundary in file: {path}\n"
            "Run `ArchiveTool verify` for corrective action!", path=path, offset=last_offset)
    with open(path, "r+b") as f:
        f.truncate(last_offset)
        f.seek(segment_file_length - 1)
        f.write(b"\0")
    return last_offset


def walk_frames(data: bytes | memoryview, offset: int, limit: int) -> tuple[int, int]:
    """``(end_offset, last_aligned_frame_length)`` of the frames in ``data[offset:limit]``."""
    return scan_frames(data, offset, limit)


def checksum_matches(data: bytes | memoryview | mmap.mmap, frame_offset: int, aligned_length: int, checksum: Checksum) -> bool:
    """Whether the frame at ``frame_offset`` carries ``checksum`` of its payload in its session id field."""
    recorded = int.from_bytes(bytes(data[frame_offset + 12:frame_offset + 16]), "little", signed=True)
    return checksum.compute(data, frame_offset + DATA_HEADER_LENGTH, aligned_length - DATA_HEADER_LENGTH) == recorded


def compute_stop_position(archive_dir: str | os.PathLike[str], segment_files: list[tuple[int, str]],
                          start_position: int, term_length: int, segment_file_length: int,
                          checksum: Checksum | None = None,
                        truncate_on_page_straddle: bool | Callable[[str], bool] = False) -> int:
    """The stop position a recording's files prove: walk the frames of the highest segment.

    ``segment_files`` is ``[(base_position, name), ...]`` as :func:`index_segment_files` gives; no file means
    the recording never wrote and stops at ``start_position``.
    """
    if not segment_files:
        return start_position
    base, name = max(segment_files)
    start_term_offset = start_position & (term_length - 1)
    offset = start_term_offset if base == start_position - start_term_offset else 0
    stop_offset = recover_stop_offset(pathlib.Path(archive_dir) / name, offset, segment_file_length, checksum,
                                      truncate_on_page_straddle)
    return max(base + stop_offset, start_position)


def validate_recording_files(archive_dir: str | os.PathLike[str], recording_id: int, start_position: int,
                             stop_position: int, initial_term_id: int, term_length: int, segment_file_length: int,
                             stream_id: int, checksum: Checksum | None = None) -> int:
    """Check that the segment files of a stopped recording hold whole, well-formed frames from ``start_position``
    to ``stop_position``: every segment file in the range exists and is long enough, each frame header carries
    its term offset, term id and stream id (and, with ``checksum``, its payload checksum), and the frames end
    exactly at the stop position. Returns the frames' end position; a gap, a cut or a bad frame raises
    CorruptFileError with the segment's path and the offset in it (before a replay would misread it).
    """
    if stop_position == start_position:
        return stop_position
    if stop_position < start_position:
        raise InvalidArgumentError(f"stop position {stop_position} is before start position {start_position}")
    base = segment_file_base_position(start_position, start_position, term_length, segment_file_length)
    position = start_position
    kind = checksum.kind if checksum is not None else CHECKSUM_NONE
    while position < stop_position:
        path = os.path.join(archive_dir, segment_file_name(recording_id, base))
        offset = position - base
        end_offset = min(stop_position - base, segment_file_length)
        try:
            with open(path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                if size < end_offset:
                    raise CorruptFileError(f"truncated segment file: {size} bytes, recording {recording_id} has "
                                           f"data to offset {end_offset}", path=path, offset=size)
                data = mmap.mmap(f.fileno(), end_offset, access=mmap.ACCESS_READ)
        except FileNotFoundError:
            raise CorruptFileError(f"missing segment file of recording {recording_id} for position {position}",
                                   path=path) from None
        try:
            code, details = verify_frames(data, offset, end_offset, position, term_length, initial_term_id,
                                          stream_id, kind)
        finally:
            data.close()
        if code == VERIFY_OK and details[0] < end_offset:
            raise CorruptFileError(f"recorded frames of recording {recording_id} end at offset {details[0]}, before "
                                   f"its stop position {stop_position}", path=path, offset=details[0])
        if code == VERIFY_BAD_HEADER:
            raise CorruptFileError(f"frame header termOffset={details[1]} termId={details[3]} streamId={details[5]}"
                                   f", expected {details[2]}, {details[4]}, {details[6]}", path=path,
                                   offset=details[0])
        if code == VERIFY_BAD_CHECKSUM:
            raise CorruptFileError(f"frame checksum {details[1]} != {details[2]} computed", path=path,
                                   offset=details[0])
        if code == VERIFY_BAD_FRAME_LENGTH:
            raise CorruptFileError(f"frame length {details[1]}", path=path, offset=details[0])
        if code in (VERIFY_DATA_UNREADABLE, VERIFY_HEADER_UNREADABLE):
            raise CorruptFileError(f"frame runs past the stop position {stop_position}", path=path,
                                   offset=details[0])
        if details[0] != end_offset:
            raise CorruptFileError(f"last frame runs past the stop position {stop_position}", path=path,
                                   offset=details[0])
        position = base + end_offset
        base += segment_file_length
    return position
