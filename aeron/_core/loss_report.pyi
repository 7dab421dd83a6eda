# SPDX-License-Identifier: Apache-2.0
import datetime
from collections.abc import Sequence
from typing import NamedTuple

from typing_extensions import Buffer

from aeron._core.atomic_buffer import AtomicBuffer

LOSS_REPORT_FILE: str
OBSERVATION_COUNT_OFFSET: int
TOTAL_BYTES_LOST_OFFSET: int
FIRST_OBSERVATION_OFFSET: int
LAST_OBSERVATION_OFFSET: int
SESSION_ID_OFFSET: int
STREAM_ID_OFFSET: int
CHANNEL_OFFSET: int
ENTRY_ALIGNMENT: int
LOSS_STAT_HEADER: str

class LossReportEntry(NamedTuple):
    observation_count: int
    total_bytes_lost: int
    first_observation_timestamp: int
    last_observation_timestamp: int
    session_id: int
    stream_id: int
    channel: str
    source: str
    offset: int

def entry_length(channel_length: int, source_length: int) -> int: ...

class LossReport:
    def __init__(self, buffer: AtomicBuffer) -> None: ...
    @property
    def buffer(self) -> AtomicBuffer: ...
    @property
    def next_record_offset(self) -> int: ...
    def create_entry(self, initial_bytes_lost: int, timestamp_ms: int, session_id: int, stream_id: int,
                     channel: str | Buffer, source: str | Buffer) -> int: ...
    def record_observation(self, offset: int, bytes_lost: int, timestamp_ms: int) -> None: ...

def read_loss_report(buffer: AtomicBuffer) -> list[LossReportEntry]: ...
def format_loss_entry(entry: LossReportEntry, tz: datetime.tzinfo | None = None) -> str: ...
def format_loss_report(entries: Sequence[LossReportEntry], tz: datetime.tzinfo | None = None) -> str: ...
