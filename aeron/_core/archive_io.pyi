# SPDX-License-Identifier: Apache-2.0
from typing import Any

from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.term_appender import ExclusiveTermAppender
from aeron._core.term_reader import TermReader

CHECKSUM_NONE: int
CHECKSUM_CRC32: int
CHECKSUM_CRC32C: int

def frame_checksum(buffer: Any, offset: int, frame_length: int, kind: int = ...) -> int: ...
def prefers_pread(file: int) -> bool: ...

class SegmentWriter:
    fd: int
    segment_offset: int
    sync_level: int
    @property
    def checksum(self) -> int: ...
    def __init__(self, sync_level: int = 0, checksum: int = ..., max_block_length: int = 0) -> None: ...
    def record(self, image: TermReader, block_length_limit: int, segment_length: int, max_length: int) -> int: ...
    def force(self) -> None: ...

class ReplayBlockReader:
    @property
    def max_block_length(self) -> int: ...
    def __init__(self, max_block_length: int) -> None: ...
    def replay(self, segment: AtomicBuffer, file_offset: int, term_length: int, available: int,
               publication: ExclusiveTermAppender, verify_checksum: int = ..., file: int = ...) -> int: ...
