# SPDX-License-Identifier: Apache-2.0
"""RecordingDescriptor: a recording's catalog entry as a value, the same whether the catalog file was read
(``aeron.archive.catalog``) or a ListRecording(s) response delivered it (``aeron.archive.client``), so readers of
the files and clients of a running archive hand around one type."""
from __future__ import annotations

import dataclasses

from aeron._core.codecs.archive import RecordingState


@dataclasses.dataclass(frozen=True)
class RecordingDescriptor:
    """One catalog entry (the fields of Aeron's RecordingDescriptor message; ``state`` and ``checksum`` are the
    catalog entry's header, VALID and 0 from a listing)."""

    control_session_id: int
    correlation_id: int
    recording_id: int
    start_timestamp: int
    stop_timestamp: int
    start_position: int
    stop_position: int
    initial_term_id: int
    segment_file_length: int
    term_buffer_length: int
    mtu_length: int
    session_id: int
    stream_id: int
    stripped_channel: str
    original_channel: str
    source_identity: str
    state: RecordingState = RecordingState.VALID
    checksum: int = 0


__all__ = ["RecordingDescriptor"]
