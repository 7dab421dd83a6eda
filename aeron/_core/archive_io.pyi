# SPDX-License-Identifier: Apache-2.0
from typing import Any

from aeron._core.atomic_buffer import AtomicBuffer

CHECKSUM_NONE: int
CHECKSUM_CRC32: int
CHECKSUM_CRC32C: int

def frame_checksum(buffer: Any, offset: int, frame_length: int, kind: int = ...) -> int: ...

class SegmentWriter:
    fd: int
    segment_offset: int
    sync_level: int
    @property
    def checksum(self) -> int: ...
    def __init__(self, sync_level: int = 0, checksum: int = ..., max_block_length: int = 0) -> None: ...
    def on_block(self, buffer: AtomicBuffer, offset: int, length: int, session_id: int, term_id: int) -> None: ...
    def force(self) -> None: ...

class ReplayBlockReader:
    @property
    def max_block_length(self) -> int: ...
    def __init__(self, max_block_length: int) -> None: ...
    def replay_block(self, segment: AtomicBuffer, file_offset: int, term_length: int, available: int,
                     publication: Any, session_id: int, stream_id: int, verify_checksum: int = ...) -> int: ...
