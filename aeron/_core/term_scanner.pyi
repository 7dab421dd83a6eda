# SPDX-License-Identifier: Apache-2.0
from typing import Any, Callable, Union

from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.logbuffer import LogBuffers

NO_ACTION: int
UNBLOCKED: int
UNBLOCKED_TO_END: int

def scan_for_availability(term: AtomicBuffer, offset: int, max_length: int) -> tuple[int, int]: ...
def validate_data_packet(packet: Any, length: int, term_offset: int, term_length: int) -> int: ...
def clean_term(term: AtomicBuffer, offset: int, length: int) -> None: ...

class LogCleaner:
    clean_position: int
    def __init__(self, log: LogBuffers, clean_position: int) -> None: ...
    def clean_to(self, target: int) -> int: ...

class TermRebuilder:
    @staticmethod
    def insert(term: AtomicBuffer, term_offset: int, packet: Any, length: int = ...) -> bool: ...

class TermGapScanner:
    @staticmethod
    def scan_for_gap(term: AtomicBuffer, term_id: int, rebuild_offset: int, limit_offset: int,
                     handler: Callable[[int, int, int], Any]) -> int: ...

class TermGapFiller:
    @staticmethod
    def try_fill_gap(meta: Union[LogBuffers, AtomicBuffer], term: AtomicBuffer, term_id: int, gap_offset: int,
                     gap_length: int) -> bool: ...

class TermUnblocker:
    NO_ACTION: int
    UNBLOCKED: int
    UNBLOCKED_TO_END: int
    @staticmethod
    def unblock(meta: Union[LogBuffers, AtomicBuffer], term: AtomicBuffer, blocked_offset: int, tail_offset: int,
                term_id: int) -> int: ...

class LogBufferUnblocker:
    @staticmethod
    def unblock(log: LogBuffers, blocked_position: int) -> bool: ...
