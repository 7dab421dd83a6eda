# SPDX-License-Identifier: Apache-2.0
"""A tiny pure-Python frame writer for read-side tests (independent of aeron._core.term_appender).

Frames follow DataHeaderFlyweight: header struct '<iBBhiiiiq', payload at +32, 32-byte aligned slots.
Single-threaded tests need no release ordering, so fields are written with struct.pack_into.
"""
from __future__ import annotations

import struct

HEADER = struct.Struct("<iBBhiiiiq")
HEADER_LENGTH = 32
FRAME_ALIGNMENT = 32
HDR_TYPE_PAD = 0
HDR_TYPE_DATA = 1
BEGIN = 0x80
END = 0x40
UNFRAGMENTED = 0xC0


def align(value: int, alignment: int = FRAME_ALIGNMENT) -> int:
    return (value + alignment - 1) & ~(alignment - 1)


def write_frame(term, offset: int, payload: bytes = b"", *, session_id: int = 0, stream_id: int = 0,
                term_id: int = 0, flags: int = UNFRAGMENTED, frame_type: int = HDR_TYPE_DATA,
                reserved_value: int = 0, frame_length: int | None = None) -> int:
    """Write one frame at ``offset`` of ``term`` (any writable buffer); return the next aligned offset."""
    if frame_length is None:
        frame_length = HEADER_LENGTH + len(payload)
    with memoryview(term) as mv:
        mv[offset + HEADER_LENGTH:offset + HEADER_LENGTH + len(payload)] = payload
        HEADER.pack_into(mv, offset, frame_length, 0, flags, frame_type, offset, session_id, stream_id,
                         term_id, reserved_value)
    return offset + align(HEADER_LENGTH + len(payload))


def write_pad(term, offset: int, length: int, *, session_id: int = 0, stream_id: int = 0,
              term_id: int = 0) -> int:
    """A PAD frame covering ``length`` bytes (header only is written); return offset + length."""
    with memoryview(term) as mv:
        HEADER.pack_into(mv, offset, length, 0, UNFRAGMENTED, HDR_TYPE_PAD, offset, session_id, stream_id,
                         term_id, 0)
    return offset + align(length)


def write_message(term, offset: int, payload: bytes, max_payload: int, **ids) -> int:
    """Write ``payload`` fragmented as a publication would; return the next offset."""
    if len(payload) <= max_payload:
        return write_frame(term, offset, payload, flags=UNFRAGMENTED, **ids)
    pos = 0
    while pos < len(payload):
        chunk = payload[pos:pos + max_payload]
        flags = (BEGIN if pos == 0 else 0) | (END if pos + len(chunk) == len(payload) else 0)
        offset = write_frame(term, offset, chunk, flags=flags, **ids)
        pos += len(chunk)
    return offset


def read_header(term, offset: int) -> tuple:
    """(frame_length, version, flags, type, term_offset, session_id, stream_id, term_id, reserved)."""
    with memoryview(term) as mv:
        return HEADER.unpack_from(mv, offset)


class TermWriter:
    """Write frames into partition ``index`` of a LogBuffers through a term view."""

    def __init__(self, log, index: int = 0, *, session_id: int, stream_id: int, term_id: int):
        self.buffer = log.term_buffer(index)
        self.ids = {"session_id": session_id, "stream_id": stream_id, "term_id": term_id}
        self.offset = 0

    def frame(self, payload: bytes = b"", **kw) -> int:
        at = self.offset
        args = dict(self.ids)
        args.update(kw)
        self.offset = write_frame(self.buffer, at, payload, **args)
        return at

    def pad(self, length: int) -> int:
        at = self.offset
        self.offset = write_pad(self.buffer, at, length, **self.ids)
        return at

    def message(self, payload: bytes, max_payload: int) -> int:
        at = self.offset
        self.offset = write_message(self.buffer, at, payload, max_payload, **self.ids)
        return at

    def close(self):
        self.buffer.close()
