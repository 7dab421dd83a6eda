# SPDX-License-Identifier: Apache-2.0
from collections.abc import Sequence
from typing import Any

SCAN_END: int
SCAN_END_OF_DATA: int
SCAN_FULL: int
SCAN_CORRUPT: int
TIMESTAMP_NONE: int
TIMESTAMP_RESERVED: int
TIMESTAMP_PAYLOAD: int

def scan_messages(segment: Any, offset: int, end: int, limit: int, segment_base: int, term_length: int,
                  initial_term_id: int, timestamp_mode: int = 0, timestamp_offset: int = 0,
                  max_rows: int = 4611686018427387904, max_bytes: int = 4611686018427387904,
                  columns: Sequence[Any] | None = None, skip_before: int = 0) -> tuple[int, int, int, int, int]: ...
