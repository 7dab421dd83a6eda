# SPDX-License-Identifier: Apache-2.0
"""DriverLog: what the driver keeps for every log it owns (IPC and network publications, publication images):
the three term views, the producer position read from the tails, cleaning behind the consumers (§3.5), closing."""
from __future__ import annotations

from aeron._core.logbuffer import LogBuffers
from aeron._core.term_scanner import clean_term


class DriverLog:
    log: LogBuffers
    terms: list
    term_length: int
    term_length_mask: int
    position_bits_to_shift: int
    clean_position: int

    def _init_log(self, log: LogBuffers, clean_position: int) -> None:
        self.log = log
        self.terms = [log.term_buffer(i) for i in range(3)]
        self.term_length = log.term_length
        self.term_length_mask = log.term_length - 1
        self.position_bits_to_shift = log.position_bits_to_shift
        self.clean_position = clean_position

    def producer_position(self) -> int:
        """Where the publishers have got to: the active partition's tail, capped at the term end."""
        log = self.log
        raw_tail = log.raw_tail_volatile(log.active_term_count % 3)
        term_offset = min(raw_tail & 0xFFFFFFFF, self.term_length)
        return log.compute_position(raw_tail >> 32, term_offset)

    def clean_buffer_to(self, target: int) -> None:
        """Zero consumed terms up to ``target`` so a partition is clean before it is reused (§3.5)."""
        while self.clean_position < target:
            position = self.clean_position
            offset = position & self.term_length_mask
            length = min(target - position, self.term_length - offset)
            if length < 8:
                break
            clean_term(self.terms[(position >> self.position_bits_to_shift) % 3], offset, length)
            self.clean_position = position + length

    def close(self) -> None:
        """Release the term views, then the mapping."""
        for term in self.terms:
            term.close()
        self.terms = []
        self.log.close()
