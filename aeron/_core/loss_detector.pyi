# SPDX-License-Identifier: Apache-2.0
from collections.abc import Callable
from typing import Any

from aeron._core.atomic_buffer import AtomicBuffer

class LossDetector:
    delay: Any
    active_term_id: int
    active_term_offset: int
    active_length: int
    expiry_ns: int
    gap_open: bool
    report_term_id: int
    report_term_offset: int
    report_length: int
    @property
    def static(self) -> bool: ...
    @property
    def first_delay_ns(self) -> int: ...
    @property
    def retry_delay_ns(self) -> int: ...
    def __init__(self, delay: Any, on_nak: Callable[[int, int, int], Any],
                 on_loss: Callable[[int, int, int], Any] | None = None) -> None: ...
    def report_loss(self, term_id: int, term_offset: int, length: int) -> int: ...
    def scan(self, term: AtomicBuffer, term_length: int, rebuild_term_id: int, rebuild_offset: int, hwm_term_id: int,
             hwm_offset: int, now_ns: int) -> tuple[int, bool]: ...
