# SPDX-License-Identifier: Apache-2.0
import datetime
from collections.abc import Callable, Sequence
from typing import NamedTuple, SupportsInt

from aeron._core.atomic_buffer import AtomicBuffer

LENGTH_OFFSET: int
OBSERVATION_COUNT_OFFSET: int
LAST_OBSERVATION_TIMESTAMP_OFFSET: int
FIRST_OBSERVATION_TIMESTAMP_OFFSET: int
ENCODED_ERROR_OFFSET: int
HEADER_LENGTH: int
RECORD_ALIGNMENT: int

class ErrorLogRecord(NamedTuple):
    observation_count: int
    first_timestamp: int
    last_timestamp: int
    text: str
    offset: int

def encode_error(error: BaseException | str, error_code: SupportsInt | None = None) -> str: ...

class DistinctErrorLog:
    def __init__(self, buffer: AtomicBuffer, clock_ms: Callable[[], int] | None = None) -> None: ...
    @property
    def buffer(self) -> AtomicBuffer: ...
    @property
    def next_offset(self) -> int: ...
    def record(self, error: BaseException | str, error_code: SupportsInt | None = None) -> bool: ...
    @property
    def distinct_count(self) -> int: ...

def error_log_exists(buffer: AtomicBuffer) -> bool: ...
def read_error_log(buffer: AtomicBuffer, since_timestamp: int = 0) -> list[ErrorLogRecord]: ...
def format_timestamp(epoch_ms: SupportsInt, tz: datetime.tzinfo | None = None) -> str: ...
def distinct_key(text: str) -> str: ...
def format_error_log(records: Sequence[ErrorLogRecord], tz: datetime.tzinfo | None = None) -> str: ...
