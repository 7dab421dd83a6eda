# SPDX-License-Identifier: Apache-2.0
"""ArchiveTool: inspect and repair an archive directory (Aeron ``io.aeron.archive.ArchiveTool``).

    python -m aeron.archive.tool <archive-dir> <command> [args]

Commands: ``describe [recordingId]``, ``describe-all``, ``dump [fragmentLimit]``, ``errors``, ``pid``,
``verify [recordingId] [-a] [-checksum <class>]``, ``checksum <class> [recordingId] [-a]``, ``count-entries``,
``max-entries [n]``, ``capacity [bytes]``, ``mark-valid <id>``, ``mark-invalid <id>``,
``delete-orphaned-segments [recordingId]``, ``compact``. The output matches the Java
tool's line for line. Each command is also a function here that returns what it found (and prints the Java
tool's text to ``out`` when one is given).
"""
from __future__ import annotations

import dataclasses
import datetime
import mmap
import os
import pathlib
import sys
import time
from collections.abc import Callable, Sequence
from typing import IO

from aeron._core.codecs.archive import CatalogHeaderEncoder, RecordingState
from aeron._core.error_log import ErrorLogRecord
from aeron._core.segment_scanner import (
    CHECKSUM_NONE,
    VERIFY_BAD_CHECKSUM,
    VERIFY_BAD_FRAME_LENGTH,
    VERIFY_BAD_HEADER,
    VERIFY_DATA_UNREADABLE,
    VERIFY_HEADER_UNREADABLE,
    VERIFY_OK,
    apply_checksums,
    verify_frames,
)
from aeron.archive import segments
from aeron.archive.archive_mark_file import ArchiveMarkFile, MarkFileHeader
from aeron.archive.catalog import CATALOG_FILE_NAME, MIN_CAPACITY, Catalog, DescriptorHeader
from aeron.archive.checksums import Checksum, new_checksum
from aeron.archive.configuration import NULL_POSITION
from aeron.archive.recording_descriptor import RecordingDescriptor
from aeron.archive.recording_reader import RecordingReader
from aeron.common.cnc_attach import driver_error_records
from aeron.common.constants import INT64_MAX
from aeron.common.errors import AeronError, InvalidArgumentError
from aeron.common.mark_file import print_error_log
from aeron.common.version import VERSION_TEXT

Out = IO[str] | None
Confirm = Callable[[str], bool]

DEFAULT_RECORD_LENGTH = 1024          # Aeron's deprecated max-entries arithmetic

_FRAGMENT_FLAGS_BEGIN, _FRAGMENT_FLAGS_END = 0x80, 0x40
_HDR_TYPE_PAD, _HDR_TYPE_DATA = 0, 1


class ArchiveToolError(AeronError):
    """A command that cannot be carried out (no such recording, a forbidden state change, ...)."""


def _print(out: Out, text: str = "", end: str = "\n") -> None:
    if out is not None:
        out.write(text + end)


# -- the SBE toString texts Aeron's tool prints ----------------------------------------------------------------------


def _sbe_prefix(name: str, template_id: int, schema_id: int, version: int, block_length: int,
                acting_version: int | None = None, acting_block_length: int | None = None) -> str:
    v = f"{acting_version}/{version}" if acting_version is not None and acting_version != version else str(version)
    b = (f"{acting_block_length}/{block_length}" if acting_block_length is not None
         and acting_block_length != block_length else str(block_length))
    return f"[{name}](sbeTemplateId={template_id}|sbeSchemaId={schema_id}|sbeSchemaVersion={v}|sbeBlockLength={b}):"


def format_descriptor(d: RecordingDescriptor) -> str:
    """The RecordingDescriptor decoder's toString (SBE's Java generator format)."""
    return (_sbe_prefix("RecordingDescriptor", 22, 101, 14, 80) +
            f"controlSessionId={d.control_session_id}|correlationId={d.correlation_id}|recordingId={d.recording_id}|"
            f"startTimestamp={d.start_timestamp}|stopTimestamp={d.stop_timestamp}|startPosition={d.start_position}|"
            f"stopPosition={d.stop_position}|initialTermId={d.initial_term_id}|"
            f"segmentFileLength={d.segment_file_length}|termBufferLength={d.term_buffer_length}|"
            f"mtuLength={d.mtu_length}|sessionId={d.session_id}|streamId={d.stream_id}|"
            f"strippedChannel='{d.stripped_channel}'|originalChannel='{d.original_channel}'|"
            f"sourceIdentity='{d.source_identity}'")


def _state_name(state: int) -> str:
    try:
        return RecordingState(state).name
    except ValueError:
        return "NULL_VAL"


def format_descriptor_header(h: DescriptorHeader) -> str:
    """The RecordingDescriptorHeader decoder's toString."""
    return (_sbe_prefix("RecordingDescriptorHeader", 21, 101, 14, 32) +
            f"length={h.length}|state={_state_name(h.state)}|checksum={h.checksum}|reserved={h.reserved}")


def format_mark_file_header(h: MarkFileHeader) -> str:
    """The MarkFileHeader decoder's toString."""
    return (_sbe_prefix("MarkFileHeader", 200, 100, 2, 128, h.acting_version, h.acting_block_length) +
            f"version={h.version}|activityTimestamp={h.activity_timestamp}|startTimestamp={h.start_timestamp}|"
            f"pid={h.pid}|controlStreamId={h.control_stream_id}|localControlStreamId={h.local_control_stream_id}|"
            f"eventsStreamId={h.events_stream_id}|headerLength={h.header_length}|"
            f"errorBufferLength={h.error_buffer_length}|archiveId={h.archive_id}|"
            f"controlChannel='{h.control_channel}'|localControlChannel='{h.local_control_channel}'|"
            f"eventsChannel='{h.events_channel}'|aeronDirectory='{h.aeron_directory}'")


def _java_date(epoch_ms: int, tz: datetime.tzinfo | None) -> datetime.datetime:
    moment = datetime.datetime.fromtimestamp(epoch_ms // 1000, datetime.timezone.utc)
    return moment.astimezone(tz) if tz is not None else moment.astimezone()


def pretty_hex_dump(data: bytes) -> str:
    """Agrona's ``PrintBufferUtil.prettyHexDump`` (16 bytes a row, '.' for non-printable; '' for no bytes)."""
    if not data:
        return ""
    lines = ["         +-------------------------------------------------+",
             "         |  0  1  2  3  4  5  6  7  8  9  a  b  c  d  e  f |",
             "+--------+-------------------------------------------------+----------------+"]
    for row in range(0, len(data), 16):
        chunk = data[row:row + 16]
        hexes = "".join(f" {b:02x}" for b in chunk) + "   " * (16 - len(chunk))
        text = "".join(chr(b) if 0x20 <= b < 0x7F else "." for b in chunk) + " " * (16 - len(chunk))
        lines.append(f"|{row & 0xFFFFFFFF:08x}|{hexes} |{text}|")
    lines.append("+--------+-------------------------------------------------+----------------+")
    return "\n".join(lines)


# -- opening ---------------------------------------------------------------------------------------------------------


def _open_mark_file(archive_dir: str | os.PathLike[str], out: Out) -> ArchiveMarkFile:
    return ArchiveMarkFile.open(archive_dir, log=None if out is None else lambda line: _print(out, line))


def _open_read_only(archive_dir: str | os.PathLike[str]) -> Catalog:
    return Catalog(archive_dir, read_only=True, strict=False)


def _open_read_write(archive_dir: str | os.PathLike[str], checksum: Checksum | None = None) -> Catalog:
    return Catalog(archive_dir, capacity=MIN_CAPACITY, checksum=checksum, fix_on_refresh=False, strict=False)


def _print_mark_information(mark: ArchiveMarkFile, out: Out, tz: datetime.tzinfo | None,
                            now_ms: int | None = None) -> None:
    header = mark.header()
    now = datetime.datetime.now(tz).astimezone(tz) if now_ms is None else _java_date(now_ms, tz)
    start = _java_date(header.start_timestamp, tz)
    activity = _java_date(mark.activity_timestamp, tz)
    _print(out, f"{now:%H:%M:%S} (start: {start:%Y-%m-%d %H:%M:%S}, activity: {activity:%Y-%m-%d %H:%M:%S})")
    _print(out, format_mark_file_header(header))


def _no_recording(recording_id: int) -> ArchiveToolError:
    return ArchiveToolError(f"no recording found with recordingId: {recording_id}")


# -- describe, count, pid, capacity ----------------------------------------------------------------------------------


def describe(archive_dir: str | os.PathLike[str], out: Out = None, tz: datetime.tzinfo | None = None,
             now_ms: int | None = None) -> list[RecordingDescriptor]:
    """The VALID recordings (``describe``), printed after the mark file and catalog capacity preamble."""
    return _describe(archive_dir, out, tz, now_ms, all_states=False)


def describe_all(archive_dir: str | os.PathLike[str], out: Out = None, tz: datetime.tzinfo | None = None,
                 now_ms: int | None = None) -> list[RecordingDescriptor]:
    """Every catalog entry with its state (``describe-all``)."""
    return _describe(archive_dir, out, tz, now_ms, all_states=True)


def _describe(archive_dir: str | os.PathLike[str], out: Out, tz: datetime.tzinfo | None, now_ms: int | None,
              all_states: bool) -> list[RecordingDescriptor]:
    with _open_read_only(archive_dir) as catalog, _open_mark_file(archive_dir, out) as mark:
        _print_mark_information(mark, out, tz, now_ms)
        _print(out, f"Catalog capacity in bytes: {catalog.capacity}")
        found = []
        for d in catalog.entries():
            if all_states:
                _print(out, f"{format_descriptor(d)}|{_state_name(d.state)}")
                found.append(d)
            elif d.state == RecordingState.VALID:
                _print(out, format_descriptor(d))
                found.append(d)
        return found


def describe_recording(archive_dir: str | os.PathLike[str], recording_id: int, out: Out = None) -> RecordingDescriptor:
    """Entry ``recording_id`` in any state (``describe <recordingId>``)."""
    with _open_read_only(archive_dir) as catalog:
        d = catalog.find_recording(recording_id, any_state=True)
        if d is None:
            raise _no_recording(recording_id)
        _print(out, format_descriptor(d))
        return d


def count_entries(archive_dir: str | os.PathLike[str]) -> int:
    """Number of VALID entries (``count-entries``)."""
    with _open_read_only(archive_dir) as catalog:
        return catalog.entry_count


def capacity(archive_dir: str | os.PathLike[str], new_capacity: int | None = None) -> int:
    """Catalog capacity in bytes; with ``new_capacity`` the file grows to at least that (``capacity``)."""
    if new_capacity is None:
        with _open_read_only(archive_dir) as catalog:
            return catalog.capacity
    with Catalog(archive_dir, capacity=new_capacity, fix_on_refresh=False, strict=False) as catalog:
        return catalog.capacity


def max_entries(archive_dir: str | os.PathLike[str]) -> int:
    """Deprecated in Aeron: the capacity divided by 1024 (the command only prints a deprecation notice)."""
    return capacity(archive_dir) // DEFAULT_RECORD_LENGTH


def pid(archive_dir: str | os.PathLike[str]) -> int:
    """The archive's process id from its mark file (``pid``)."""
    with ArchiveMarkFile.open(archive_dir) as mark:
        return mark.header().pid


# -- errors ----------------------------------------------------------------------------------------------------------


def errors(archive_dir: str | os.PathLike[str], out: Out = None,
           tz: datetime.tzinfo | None = None) -> tuple[list[ErrorLogRecord], list[ErrorLogRecord]]:
    """The archive's and then its media driver's distinct errors (``errors``)."""
    with ArchiveMarkFile.open(archive_dir) as mark:
        archive_records = mark.error_records()
        aeron_directory = mark.header().aeron_directory
    _print(out, "Archive error log:")
    _print(out, print_error_log(archive_records, tz), end="")
    _print(out)
    _print(out, f"Aeron driver error log (directory: {aeron_directory}):")
    cnc_path = os.path.join(aeron_directory, "cnc.dat")
    if not os.path.exists(cnc_path):
        raise ArchiveToolError(f"no driver CnC file: {cnc_path}")
    driver_records = driver_error_records(aeron_directory)
    _print(out, print_error_log(driver_records, tz), end="")
    return archive_records, driver_records


# -- dump ------------------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class DumpedFrame:
    """One frame ``dump`` walked (a :class:`aeron.archive.recording_reader.RecordingFrame` without its payload): its
    recording position, term offset, frame length, type and flags."""

    position: int
    term_offset: int
    frame_length: int
    frame_type: int
    flags: int


def dump(archive_dir: str | os.PathLike[str], fragment_limit: int = INT64_MAX, out: Out = None,
         confirm: Callable[[int], bool] | None = None, tz: datetime.tzinfo | None = None,
         now_ms: int | None = None) -> dict[int, list[DumpedFrame]]:
    """Every entry's descriptor and recorded frames (``dump``), hex dumps of the data; every ``fragment_limit``
    frames ``confirm(fragment_limit)`` decides whether to go on with that recording (default: yes)."""
    if fragment_limit <= 0:
        raise InvalidArgumentError(f"Invalid fragmentCountLimit={fragment_limit}")
    result: dict[int, list[DumpedFrame]] = {}
    with _open_read_only(archive_dir) as catalog, _open_mark_file(archive_dir, out) as mark:
        _print_mark_information(mark, out, tz, now_ms)
        _print(out, f"Catalog capacity in bytes: {catalog.capacity}")
        _print(out)
        _print(out, f"Dumping up to {fragment_limit} fragments per recording")
        for d in catalog.entries():
            result[d.recording_id] = _dump_recording(archive_dir, catalog, d, fragment_limit, out, confirm)
    return result


def _dump_recording(archive_dir: str | os.PathLike[str], catalog: Catalog, d: RecordingDescriptor,
                    fragment_limit: int, out: Out, confirm: Callable[[int], bool] | None) -> list[DumpedFrame]:
    stream_length = d.stop_position - d.start_position
    _print(out)
    _print(out)
    _print(out, f"Recording {d.recording_id}")
    _print(out, f"  channel: {d.stripped_channel}")
    _print(out, f"  streamId: {d.stream_id}")
    _print(out, f"  stream length: {NULL_POSITION if d.stop_position == NULL_POSITION else stream_length}")
    _print(out, format_descriptor_header(catalog.descriptor_header(d.recording_id)))
    _print(out, format_descriptor(d))
    frames: list[DumpedFrame] = []
    if stream_length == 0:
        _print(out, "Recording is empty")
        return frames
    count = fragment_limit
    position = d.start_position
    for recorded in RecordingReader(d, archive_dir):
        frame = DumpedFrame(recorded.position, recorded.term_offset, recorded.frame_length, recorded.frame_type,
                            recorded.flags)
        _print(out)
        _print(out, f"Frame at position [{frame.position}] ", end="")
        _print_fragment(out, frame, recorded.payload)
        frames.append(frame)
        position = frame.position + recorded.aligned_length
        count -= 1
        if count == 0:
            count = fragment_limit
            if d.stop_position != NULL_POSITION:
                _print(out, f"{stream_length - position} bytes of (from {stream_length}) remaining in recording id "
                            f"{d.recording_id}")
            if confirm is not None and not confirm(fragment_limit):
                return frames
    if d.stop_position == NULL_POSITION or position < d.stop_position:
        # the reader stopped at a zero frame length: Aeron's loop has printed the next prefix already
        _print(out)
        _print(out, f"Frame at position [{position}] ", end="")
    return frames


def _print_fragment(out: Out, frame: DumpedFrame, payload: bytes) -> None:
    _print(out, f"data at offset [{frame.term_offset + 32}] with length = {frame.frame_length - 32}")
    if frame.frame_type == _HDR_TYPE_PAD:
        _print(out, "PADDING FRAME")
    elif frame.frame_type == _HDR_TYPE_DATA:
        flags = frame.flags
        if flags & 0xC0 != 0xC0:
            suffix = ("BEGIN_FRAGMENT" if flags & _FRAGMENT_FLAGS_BEGIN else "") + \
                     ("END_FRAGMENT" if flags & _FRAGMENT_FLAGS_END else "")
            _print(out, f"Fragmented frame. {suffix}")
        _print(out, pretty_hex_dump(payload[:max(frame.frame_length - 32, 0)]))
    else:
        _print(out, f"Unexpected frame type {frame.frame_type}")


# -- verify ----------------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class VerifyResult:
    """What ``verify`` found for one entry: ``status`` OK, ERR or SKIPPED and the line it printed."""

    recording_id: int
    status: str
    message: str

    @property
    def ok(self) -> bool:
        """Not an error (OK or skipped)."""
        return self.status != "ERR"


def verify(archive_dir: str | os.PathLike[str], recording_id: int | None = None, all_segments: bool = False,
           checksum: str | Checksum | None = None, out: Out = None,
           truncate_on_page_straddle: bool | Confirm = False,
           epoch_clock: Callable[[], int] | None = None) -> list[VerifyResult]:
    """Check entries against their segment files and repair what can be (``verify [id] [-a] [-checksum c]``).

    Per entry: positions aligned and ordered, inside the highest segment; the stop position the files prove is
    written back; with ``all_segments`` every segment is checked, else only the last; with ``checksum`` the
    descriptor checksum and every data frame's checksum must match. Broken entries become INVALID; an INVALID
    entry that verifies and has files becomes VALID again. Returns one result per entry looked at.
    """
    ck = new_checksum(checksum) if isinstance(checksum, str) else checksum
    clock = epoch_clock or (lambda: time.time_ns() // 1_000_000)
    results: list[VerifyResult] = []
    with _open_read_write(archive_dir, ck) as catalog:
        files = segments.index_segment_files(archive_dir)
        entries = list(catalog.entries())
        if recording_id is not None:
            entries = [d for d in entries if d.recording_id == recording_id]
            if not entries:
                raise _no_recording(recording_id)
        for d in entries:
            result = _verify_entry(archive_dir, catalog, d, files.get(d.recording_id, []), all_segments, ck,
                                   truncate_on_page_straddle, clock)
            _print(out, result.message)
            results.append(result)
    return results


def _verify_entry(archive_dir: str | os.PathLike[str], catalog: Catalog, d: RecordingDescriptor,
                  files: list[tuple[int, str]], all_segments: bool, checksum: Checksum | None,
                  truncate: bool | Confirm, clock: Callable[[], int]) -> VerifyResult:
    rid = d.recording_id
    if d.state not in (RecordingState.VALID, RecordingState.INVALID):
        return VerifyResult(rid, "SKIPPED", f"(recordingId={rid}) skipping: {_state_name(d.state)}")

    def fail(reason: str) -> VerifyResult:
        catalog.change_state(rid, RecordingState.INVALID, any_state=True)
        return VerifyResult(rid, "ERR", f"(recordingId={rid}) ERR: {reason}" if not reason.startswith("(") else reason)

    start, stop = d.start_position, d.stop_position
    problem = _position_invariant(start, stop)
    if problem:
        return fail(problem)
    term_length, segment_length = d.term_buffer_length, d.segment_file_length
    try:
        if files:
            max_position = max(files)[0] + (segment_length - 1)
            if start > max_position or stop > max_position:
                return fail(f"Invariant violation: startPosition={start} and/or stopPosition={stop} exceed max "
                            f"segment file position={max_position}")
        computed_stop = segments.compute_stop_position(archive_dir, files, start, term_length, segment_length,
                                                       checksum, truncate)
    except NoAnswerError:
        raise                   # nobody answered the truncation prompt: leave this entry as it is and stop
    except (AeronError, OSError, ValueError) as ex:
        message = str(ex.args[0]) if ex.args else repr(ex)
        return fail(message)
    if checksum is not None:
        expected = catalog.compute_descriptor_checksum(rid)
        actual = catalog.descriptor_header(rid).checksum
        if expected != actual:
            return fail(f"invalid Catalog checksum: expected={expected}, actual={actual}")
    if files:
        for base, name in (files if all_segments else [max(files)]):
            problem = _verify_segment_file(archive_dir, d, base, name, checksum)
            if problem:
                return fail(problem)
    if stop != NULL_POSITION and computed_stop < stop:
        # the files end before the stop position the archive wrote when the recording stopped: data was lost (a
        # segment cut short, a hole of zeros). Aeron's tool moves the stop position back and prints OK when the cut
        # falls between frames; that would hide the loss, so the entry is reported and marked INVALID instead.
        base, name = max(files) if files else (start, "")
        return fail(f"(recordingId={rid}, file={os.path.join(archive_dir, name)}) ERR: recorded frames end at "
                    f"offset {computed_stop - base} (position={computed_stop}), before stopPosition={stop}")
    if computed_stop != stop:
        catalog.recording_stopped(rid, computed_stop, clock(), any_state=True)
    if d.state == RecordingState.INVALID and files:
        catalog.change_state(rid, RecordingState.VALID, any_state=True)
    return VerifyResult(rid, "OK", f"(recordingId={rid}) OK")


def _position_invariant(start: int, stop: int) -> str:
    if start < 0:
        return f"Negative startPosition={start}"
    if start & 31:
        return f"Non-aligned startPosition={start}"
    if stop != NULL_POSITION:
        if stop < start:
            return f"Invariant violation stopPosition={stop} is before startPosition={start}"
        if stop & 31:
            return f"Non-aligned stopPosition={stop}"
    return ""


def _verify_segment_file(archive_dir: str | os.PathLike[str], d: RecordingDescriptor, base: int, name: str,
                         checksum: Checksum | None) -> str:
    rid = d.recording_id
    path = os.path.join(archive_dir, name)
    where = f"(recordingId={rid}, file={path})"
    term_length = d.term_buffer_length
    start_term_offset = d.start_position & (term_length - 1)
    offset = start_term_offset if base == d.start_position - start_term_offset else 0
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            data: bytes | mmap.mmap = mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ) if size else b""
    except OSError:
        return f"{where} ERR: failed to verify file"
    try:
        code, details = verify_frames(data, offset, min(d.segment_file_length, size), base + offset, term_length,
                                      d.initial_term_id, d.stream_id,
                                      checksum.kind if checksum is not None else CHECKSUM_NONE)
    finally:
        if isinstance(data, mmap.mmap):
            data.close()
    if code == VERIFY_OK:
        return ""
    if code == VERIFY_HEADER_UNREADABLE:
        return f"{where} ERR: failed to read fragment header"
    if code == VERIFY_BAD_HEADER:
        _, term_offset, expected_offset, term_id, expected_term_id, stream_id, expected_stream_id = details
        return (f"{where} ERR: fragment termOffset={term_offset} (expected={expected_offset}), termId={term_id} "
                f"(expected={expected_term_id}), streamId={stream_id} (expected={expected_stream_id})")
    if code == VERIFY_DATA_UNREADABLE:
        return f"{where} ERR: failed to read {details[1]} byte(s) of data at offset {details[2]}"
    if code == VERIFY_BAD_CHECKSUM:
        return f"{where} ERR: checksum failed recorded={details[1]} (expected={details[2]})"
    assert code == VERIFY_BAD_FRAME_LENGTH
    return f"{where} ERR: invalid frame length {details[1]} at offset {details[0]}"


# -- checksum --------------------------------------------------------------------------------------------------------


def checksum(archive_dir: str | os.PathLike[str], checksum_name: str | Checksum, recording_id: int | None = None,
             all_segments: bool = False, out: Out = None) -> int:
    """Write frame checksums into the last (``all_segments``: every) segment of each recording, and descriptor
    checksums into the catalog (``checksum <class> [recordingId] [-a]``). Returns the data frames written."""
    ck = new_checksum(checksum_name) if isinstance(checksum_name, str) else checksum_name
    written = 0
    with _open_read_write(archive_dir, ck) as catalog:
        files = segments.index_segment_files(archive_dir)
        entries = list(catalog.entries())
        if recording_id is not None:
            entries = [d for d in entries if d.recording_id == recording_id]
            if not entries:
                raise _no_recording(recording_id)
        for d in entries:
            catalog.update_checksum(d.recording_id)
            recording_files = files.get(d.recording_id, [])
            if not recording_files and not all_segments:        # Aeron: no last segment to checksum
                _print(out, f"(recordingId={d.recording_id}) ERR: failed to compute checksums")
                _print(out, f"no segment files for recording {d.recording_id}")
                continue
            for base, name in (recording_files if all_segments else [max(recording_files)]):
                written += _checksum_segment_file(archive_dir, d, base, name, ck, out)
    return written


def _checksum_segment_file(archive_dir: str | os.PathLike[str], d: RecordingDescriptor, base: int, name: str,
                           ck: Checksum, out: Out) -> int:
    path = os.path.join(archive_dir, name)
    term_length = d.term_buffer_length
    start_term_offset = d.start_position & (term_length - 1)
    offset = start_term_offset if base == d.start_position - start_term_offset else 0
    with open(path, "r+b") as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            return 0
        data = mmap.mmap(f.fileno(), size, access=mmap.ACCESS_WRITE)
    try:
        frames, end, short_length = apply_checksums(data, offset, ck.kind)
        data.flush()
    finally:
        data.close()
    if short_length:
        _print(out, f"(recordingId={d.recording_id}, file={path}) ERR: failed to read {short_length} byte(s) of "
                    f"data at offset {end + 32}")
    return frames


# -- state changes, orphaned segments, compaction --------------------------------------------------------------------


def mark_valid(archive_dir: str | os.PathLike[str], recording_id: int, out: Out = None) -> bool:
    """INVALID -> VALID (``mark-valid``); returns whether the state changed."""
    return _change_state(archive_dir, recording_id, RecordingState.INVALID, RecordingState.VALID, out)


def mark_invalid(archive_dir: str | os.PathLike[str], recording_id: int, out: Out = None) -> bool:
    """VALID -> INVALID (``mark-invalid``); returns whether the state changed."""
    return _change_state(archive_dir, recording_id, RecordingState.VALID, RecordingState.INVALID, out)


def _change_state(archive_dir: str | os.PathLike[str], recording_id: int, expected: RecordingState,
                  target: RecordingState, out: Out) -> bool:
    with _open_read_write(archive_dir) as catalog:
        d = catalog.find_recording(recording_id, any_state=True)
        if d is None:
            raise _no_recording(recording_id)
        if d.state == target:
            return False
        if d.state != expected:
            raise ArchiveToolError(f"(recordingId={recording_id}) state transition {_state_name(d.state)} -> "
                                   f"{target.name} is not allowed")
        catalog.change_state(recording_id, target, any_state=True)
        _print(out, f"(recordingId={recording_id}) changed state to {target.name}")
        return True


def _segment_candidates(archive_dir: str | os.PathLike[str]) -> dict[int, list[str]]:
    # as Aeron: a name ending in .rec whose part before the first '-' is a recording id (the base may not parse)
    found: dict[int, list[str]] = {}
    for name in os.listdir(archive_dir):
        if not name.endswith(segments.RECORDING_SEGMENT_SUFFIX):
            continue
        head = name.split("-", 1)[0]
        if "-" in name and head.isdigit() and head.isascii():
            found.setdefault(int(head), []).append(name)
    return found


def delete_orphaned_segments(archive_dir: str | os.PathLike[str], recording_id: int | None = None,
                             out: Out = None) -> list[str]:
    """Delete segment files outside [segment of the start, segment of the stop] of their recording (all entries, or
    ``recording_id``'s); returns the names deleted (``delete-orphaned-segments``)."""
    deleted = []
    with _open_read_only(archive_dir) as catalog:
        candidates = _segment_candidates(archive_dir)
        found = False
        for d in catalog.entries():
            if recording_id is not None and d.recording_id != recording_id:
                continue
            found = True
            term, seg = d.term_buffer_length, d.segment_file_length
            min_base = segments.segment_file_base_position(d.start_position, d.start_position, term, seg)
            max_base = NULL_POSITION if d.stop_position == NULL_POSITION else \
                segments.segment_file_base_position(d.start_position, d.stop_position, term, seg)
            for name in sorted(candidates.get(d.recording_id, [])):
                parsed = segments.parse_segment_file_name(name)
                base = parsed[1] if parsed is not None else None
                if base is None or base < min_base or (max_base != NULL_POSITION and base > max_base):
                    try:
                        os.unlink(os.path.join(archive_dir, name))
                        deleted.append(name)
                    except FileNotFoundError:
                        pass
                    except OSError as ex:
                        _print(out, f"{type(ex).__name__}: {ex}")
        if recording_id is not None and not found:
            raise _no_recording(recording_id)
    return deleted


def compact(archive_dir: str | os.PathLike[str], out: Out = None) -> tuple[int, int]:
    """Rewrite the catalog keeping only VALID entries and delete the other entries' segment files
    (``compact``); returns ``(deleted records, reclaimed bytes)``."""
    archive = pathlib.Path(archive_dir)
    compact_path = archive / (CATALOG_FILE_NAME + ".compact")
    deleted = reclaimed = 0
    try:
        with _open_read_only(archive) as catalog:
            header = bytearray(CatalogHeaderEncoder.BLOCK_LENGTH)
            encoder = CatalogHeaderEncoder().wrap(header, 0)
            encoder.version = catalog.version
            encoder.length = CatalogHeaderEncoder.BLOCK_LENGTH
            encoder.next_recording_id = catalog.next_recording_id
            encoder.alignment = 0 if catalog.legacy else catalog.alignment
            encoder.release()
            parts = [bytes(header)]
            files = _segment_candidates(archive)
            for d in catalog.entries():
                entry = catalog.entry_bytes(d.recording_id)
                if d.state != RecordingState.VALID:
                    deleted += 1
                    reclaimed += len(entry)
                    for name in files.get(d.recording_id, []):
                        (archive / name).unlink(missing_ok=True)
                else:
                    parts.append(entry)
        with open(compact_path, "xb") as f:
            f.write(b"".join(parts))
        _print(out, f"Compaction result: deleted {deleted} records and reclaimed {reclaimed} bytes")
        os.replace(compact_path, archive / CATALOG_FILE_NAME)
    finally:
        compact_path.unlink(missing_ok=True)
    return deleted, reclaimed


# -- command line ----------------------------------------------------------------------------------------------------

HELP = """\
Usage: <archive-dir> <command> (items in square brackets are optional)

  capacity [capacity in bytes]: gets or increases catalog capacity.

  checksum className [recordingId] [-a]: computes and persists checksums.
     checksums are computed using the specified Checksum implementation
     (e.g. io.aeron.archive.checksum.Crc32).
     Only the last segment file of each recording is processed by default,
     unless flag '-a' is specified in which case all of the segment files are processed.

  compact: compacts Catalog file by removing entries in non-valid state and deleting the
     corresponding segment files.

  count-entries: queries the number of `VALID` recording entries in the catalog.

  delete-orphaned-segments [recordingId]: deletes orphaned recording segments that have been detached,
     If recordingId is specified, only delete orphaned segments for that recording.
     i.e. outside the start and stop recording range, but are not deleted.

  describe: prints out descriptors for all valid recordings in the catalog.

  describe recordingId: prints out descriptor for the specified recording entry in the catalog.

  describe-all: prints out descriptors for all recordings in the catalog.

  dump [data fragment limit per recording]: prints descriptor(s)
     in the catalog and associated recorded data.

  errors: prints errors for the archive and media driver.

  max-entries [number of entries]: *** DEPRECATED: use `capacity` instead. ***

  pid: prints just PID of archive.

  verify [recordingId] [-a] [-checksum className]: verifies descriptor(s) in the catalog
     checking recording files availability and contents. Only the last segment file is
     verified unless flag '-a' is specified, i.e. meaning verify all segment files.
     To perform checksum for each data frame specify the '-checksum' flag together with
     the Checksum implementation class name (e.g. io.aeron.archive.checksum.Crc32).
     Faulty entries are marked as `INVALID`.

  mark-invalid <recordingId>: marks a recording as invalid.

  mark-valid <recordingId>: marks a previously invalidated recording as valid.

"""


class NoAnswerError(ArchiveToolError):
    """A prompt met the end of its input (or no input at all): nothing was done.

    Aeron's tool reads the answer with a ``Scanner``, which throws at the end of input, so a tool run with a closed
    or empty standard input deletes nothing; this is that refusal, with a message saying so.
    """


def _read_continue_answer(message: str, out: IO[str], stdin: IO[str] | None) -> bool:
    # only an explicit yes goes on: a destructive command must never run because nobody was there to answer (Aeron
    # also takes an empty line as yes; a stray Enter deletes nothing here)
    out.write(f"\n{message}: ")
    out.flush()
    try:
        line = stdin.readline() if stdin is not None else ""
    except (OSError, ValueError):           # a closed stream
        line = ""
    if not line:
        out.write("\n")
        raise NoAnswerError(f"no answer to \"{message.splitlines()[-1]}\" (end of input): nothing was done")
    return line.strip().lower() in ("y", "yes")


def _parse_verify_args(args: Sequence[str]) -> tuple[int | None, bool, str | None]:
    recording_id, all_segments, checksum_name = None, False, None
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "-a":
            all_segments = True
        elif arg == "-checksum":
            if i + 1 >= len(args):
                raise InvalidArgumentError("Checksum class name is required when -checksum option is specified!")
            checksum_name = args[i + 1]
            i += 1
        elif recording_id is None and i == 0:
            recording_id = int(arg)
        else:
            raise InvalidArgumentError(f"unexpected verify argument: {arg!r}")
        i += 1
    return recording_id, all_segments, checksum_name


def main(argv: Sequence[str] | None = None, out: IO[str] | None = None, stdin: IO[str] | None = None) -> int:
    """``python -m aeron.archive.tool <archive-dir> <command> [args]``; returns the exit status.

    A command that asks ``Continue? (y/n)`` goes on only on ``y`` (or ``yes``); any other answer does nothing, and
    the end of input (a closed or empty stdin) does nothing and exits with status 1 (NoAnswerError).
    """
    args = list(sys.argv[1:] if argv is None else argv)
    out = out or sys.stdout
    stdin = stdin if stdin is not None else sys.stdin      # None when the process has no standard input at all
    if args == ["--version"]:
        out.write(VERSION_TEXT + "\n")
        return 0
    if args[:1] in (["-h"], ["--help"]):        # not an archive directory: the usage, under the command's name
        from aeron.common.cli import program_name
        out.write(HELP.replace("Usage: ", f"Usage: {program_name('aeron-archive-tool', 'aeron.archive.tool')} ", 1))
        return 0
    if not args or len(args) > 6:
        out.write(HELP)
        return 255
    archive_dir = args[0]
    if not os.path.exists(archive_dir):
        sys.stderr.write(f"ERR: Archive folder not found: {os.path.abspath(archive_dir)}\n")
        out.write(HELP)
        return 255
    command, rest = (args[1] if len(args) > 1 else ""), args[2:]
    try:
        return _run(archive_dir, command, rest, out, stdin)
    except (AeronError, OSError, ValueError) as ex:
        out.flush()
        sys.stderr.write(f"{type(ex).__name__}: {ex}\n")
        return 1


def _run(archive_dir: str, command: str, rest: list[str], out: IO[str], stdin: IO[str] | None) -> int:
    n = len(rest)
    if command == "describe-all":
        describe_all(archive_dir, out)
    elif command == "describe" and n == 0:
        describe(archive_dir, out)
    elif command == "describe" and n == 1:
        describe_recording(archive_dir, int(rest[0]), out)
    elif command == "dump":
        limit = int(rest[0]) if rest else INT64_MAX
        dump(archive_dir, limit, out,
             lambda n_: _read_continue_answer(f"Specified frame limit {n_} reached. Continue? (y/n)", out, stdin))
    elif command == "errors" and n == 0:
        errors(archive_dir, out)
    elif command == "pid" and n == 0:
        out.write(f"{pid(archive_dir)}\n")
    elif command == "verify":
        recording_id, all_segments, checksum_name = _parse_verify_args(rest)

        def confirm_truncate(path: str) -> bool:
            return _read_continue_answer(
                f"Last fragment in segment file: {os.path.abspath(path)} straddles a page boundary,\n"
                "i.e. it is not possible to verify if it was written correctly.\n\n"
                "Please choose the corrective action: (y) to truncate the file or (n) to do nothing", out, stdin)

        results = verify(archive_dir, recording_id, all_segments, checksum_name, out, confirm_truncate)
        return 0 if all(r.ok for r in results) else 255
    elif command == "checksum" and n >= 1:
        all_segments = "-a" in rest[1:]
        ids = [a for a in rest[1:] if a != "-a"]
        checksum(archive_dir, rest[0], int(ids[0]) if ids else None, all_segments, out)
    elif command == "count-entries" and n == 0:
        out.write(f"{count_entries(archive_dir)}\n")
    elif command == "max-entries" and n <= 1:
        out.write("max-entries is deprecated please use capacity.\n")
    elif command == "capacity" and n <= 1:
        out.write(f"{capacity(archive_dir, int(rest[0]) if rest else None)}\n")
    elif command == "compact" and n == 0:
        out.write("WARNING: Compacting the Catalog is non-recoverable operation! All non-ACTIVE recordings will be "
                  "deleted along with the corresponding segment files.")
        if _read_continue_answer("Continue? (y/n)", out, stdin):
            compact(archive_dir, out)
    elif command == "delete-orphaned-segments" and n <= 1:
        if rest:
            out.write(f"WARNING: All orphaned segment files owned by the RecordingId[{int(rest[0])}] will be deleted.")
        else:
            out.write("WARNING: All orphaned segment files will be deleted.")
        if _read_continue_answer("Continue? (y/n)", out, stdin):
            delete_orphaned_segments(archive_dir, int(rest[0]) if rest else None, out)
    elif command == "mark-valid" and n == 1:
        mark_valid(archive_dir, int(rest[0]), out)
    elif command == "mark-invalid" and n == 1:
        mark_invalid(archive_dir, int(rest[0]), out)
    else:
        sys.stderr.write("ERR: Invalid command\n")
        out.write(HELP)
        return 255
    return 0


if __name__ == "__main__":
    sys.exit(main())
