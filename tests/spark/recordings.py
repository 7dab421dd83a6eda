# SPDX-License-Identifier: Apache-2.0
"""Synthetic archive recordings for the Spark tests: catalog entries (aeron.archive.catalog) and segment files
laid out as Aeron's recorder (RecordingWriter) writes them: term-aligned segments, BEGIN/END fragments of at most
mtu - 32 payload bytes, a padding header (only the header, as the recorder writes) where a message does not fit
the rest of a term."""
from __future__ import annotations

import os
import pathlib
import struct

from aeron.archive import segments
from aeron.archive.catalog import Catalog

HEADER = struct.Struct("<iBBHiiiiq")


def _align(n: int) -> int:
    return (n + 31) & ~31


class RecordingWriter:
    """Appends messages to one recording of ``archive_dir`` as the archive would record them."""

    def __init__(self, archive_dir: str | os.PathLike[str], *, stream_id: int = 1001, session_id: int = 77,
                 term_length: int = 64 * 1024, segment_length: int = 64 * 1024, mtu: int = 1408,
                 initial_term_id: int = 1000, start_position: int = 0, channel: str = "aeron:ipc",
                 catalog: Catalog | None = None) -> None:
        self.dir = pathlib.Path(archive_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.term_length = term_length
        self.segment_length = max(segment_length, term_length)
        self.mtu = mtu
        self.stream_id = stream_id
        self.session_id = session_id
        self.initial_term_id = initial_term_id
        self.start_position = start_position
        self.position = start_position
        self.messages: list[tuple[int, bytes]] = []      # (position of the first fragment, payload)
        own = catalog is None
        catalog = catalog or Catalog(self.dir)
        try:
            self.recording_id = catalog.add_recording(
                start_position=start_position, start_timestamp=1, initial_term_id=initial_term_id,
                segment_file_length=self.segment_length, term_buffer_length=term_length, mtu_length=mtu,
                session_id=session_id, stream_id=stream_id, stripped_channel=channel, original_channel=channel,
                source_identity="aeron:ipc")
        finally:
            if own:
                catalog.close()

    def _write(self, position: int, data: bytes) -> None:
        base = segments.segment_file_base_position(self.start_position, position, self.term_length,
                                                   self.segment_length)
        path = self.dir / segments.segment_file_name(self.recording_id, base)
        if not path.exists():
            with open(path, "wb") as f:
                f.truncate(self.segment_length)
        with open(path, "r+b") as f:
            f.seek(position - base)
            f.write(data)

    def _header(self, length: int, flags: int, frame_type: int, position: int, reserved: int = 0) -> bytes:
        term_offset = position & (self.term_length - 1)
        term_id = self.initial_term_id + (position // self.term_length)
        return HEADER.pack(length, 0, flags, frame_type, term_offset, self.session_id, self.stream_id, term_id,
                           reserved)

    def append(self, payload: bytes, reserved: int = 0) -> int:
        """Record one message; returns the position of its first fragment."""
        max_payload = self.mtu - 32
        chunks = [payload[i:i + max_payload] for i in range(0, len(payload), max_payload)] or [b""]
        needed = sum(_align(32 + len(c)) for c in chunks)
        term_offset = self.position & (self.term_length - 1)
        if term_offset + needed > self.term_length:
            pad = self.term_length - term_offset
            self._write(self.position, self._header(pad, 0xC0, 0, self.position))
            self.position += pad
        first = self.position
        for i, chunk in enumerate(chunks):
            flags = (0x80 if i == 0 else 0) | (0x40 if i == len(chunks) - 1 else 0)
            frame = self._header(32 + len(chunk), flags, 1, self.position, reserved) + chunk
            self._write(self.position, frame + bytes(_align(len(frame)) - len(frame)))
            self.position += _align(len(frame))
        self.messages.append((first, payload))
        return first

    def stop(self, catalog: Catalog | None = None) -> None:
        """Mark the recording stopped at the current position."""
        own = catalog is None
        catalog = catalog or Catalog(self.dir)
        try:
            catalog.recording_stopped(self.recording_id, self.position, 2)
        finally:
            if own:
                catalog.close()


def record_trades(archive_dir: str | os.PathLike[str], count: int = 60) -> list[dict[str, object]]:
    """``count`` JSON trades (sym, px, qty, ts a few seconds apart) recorded on stream 1001 of ``archive_dir``, and one
    more on stream 1002 (another stream, which a query of stream 1001 must leave out); returns the trades."""
    import json

    writer = RecordingWriter(archive_dir, stream_id=1001)
    trades: list[dict[str, object]] = [
        {"sym": "AB" if i % 3 else "CD", "px": 100 + i % 7, "qty": 1 + i % 5, "ts": 1_700_000_000_000 + i * 7_000}
        for i in range(count)]
    for trade in trades:
        writer.append(json.dumps(trade).encode())
    RecordingWriter(archive_dir, stream_id=1002).append(json.dumps({"sym": "AB", "px": 1e9, "qty": 1, "ts": 0}).encode())
    return trades
