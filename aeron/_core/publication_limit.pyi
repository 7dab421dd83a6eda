# SPDX-License-Identifier: Apache-2.0
from aeron._core.counters import AtomicCounter
from aeron._core.logbuffer import LogBuffers
from aeron._core.term_scanner import LogCleaner

HAND_BACK: int

class PublicationLimit:
    cleaner: LogCleaner | None
    spy_count: int
    active: bool
    has_receivers: bool
    spies_simulate_connection: bool
    python_only: bool
    trip_limit: int
    consumer_position: int
    def __init__(self, log: LogBuffers, pub_pos: AtomicCounter, pub_lmt: AtomicCounter, snd_pos: AtomicCounter,
                 window_length: int) -> None: ...
    @property
    def window_length(self) -> int: ...
    @property
    def trip_gain(self) -> int: ...
    @property
    def term_length(self) -> int: ...
    def set_spies(self, positions: list[AtomicCounter], count: int) -> None: ...
    def update(self) -> int: ...
