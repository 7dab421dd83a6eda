# SPDX-License-Identifier: Apache-2.0
from typing import Any

CHECKSUM_NONE: int
CHECKSUM_CRC32: int
CHECKSUM_CRC32C: int
VERIFY_OK: int
VERIFY_HEADER_UNREADABLE: int
VERIFY_BAD_HEADER: int
VERIFY_DATA_UNREADABLE: int
VERIFY_BAD_CHECKSUM: int
VERIFY_BAD_FRAME_LENGTH: int

def scan_frames(buffer: Any, offset: int, limit: int) -> tuple[int, int]: ...
def checksum(kind: int, buffer: Any, offset: int = 0, length: int = -1) -> int: ...
def verify_frames(buffer: Any, offset: int, limit: int, position: int, term_length: int, initial_term_id: int,
                  stream_id: int, checksum_kind: int = ...) -> tuple[int, tuple[int, ...]]: ...
def apply_checksums(buffer: Any, offset: int, checksum_kind: int) -> tuple[int, int, int]: ...
def crc32c_in_hardware() -> bool: ...
