# SPDX-License-Identifier: Apache-2.0
"""LossDetector: finds the first gap between the rebuild position and the high-water mark and decides when to
NAK it (wire-and-logbuffers.md §6.8; aeron_loss_detector.c). Delay generators: unicast static, multicast
randomised ("optimal multicast" backoff)."""
from __future__ import annotations

import math
import random
from collections.abc import Callable

from aeron._core.term_scanner import TermGapScanner

DEFAULT_NAK_UNICAST_DELAY_NS = 1_000
DEFAULT_NAK_UNICAST_RETRY_RATIO = 100
DEFAULT_NAK_MULTICAST_MAX_BACKOFF_NS = 10_000_000
DEFAULT_NAK_MULTICAST_GROUP_SIZE = 10


class StaticDelayGenerator:
    def __init__(self, delay_ns: int, retry_delay_ns: int | None = None) -> None:
        self.delay_ns = delay_ns
        self.retry_delay_ns = delay_ns if retry_delay_ns is None else retry_delay_ns

    def first(self) -> int:
        return self.delay_ns

    def retry(self) -> int:
        return self.retry_delay_ns


class OptimalMulticastDelayGenerator:
    """delay = (T/λ)·ln(x·(e^λ − 1)·T/λ) with x uniform in [λ/(T(e^λ−1)), λ/T + λ/(T(e^λ−1))], so delays
    spread over [0, T] and few receivers of a group NAK the same loss."""

    def __init__(self, max_backoff_ns: int = DEFAULT_NAK_MULTICAST_MAX_BACKOFF_NS,
                 group_size: int = DEFAULT_NAK_MULTICAST_GROUP_SIZE, rng: random.Random | None = None) -> None:
        self._t = float(max_backoff_ns)
        self._lambda = math.log(group_size) + 1.0
        self._factor = math.exp(self._lambda) - 1.0
        self._rng = rng or random.Random()

    def first(self) -> int:
        lam, t, f = self._lambda, self._t, self._factor
        x = self._rng.uniform(0.0, lam / t) + lam / (t * f)
        return max(0, int((t / lam) * math.log(x * f * t / lam)))

    retry = first


class LossDetector:
    """``scan(term, rebuild_position, hwm_position, now_ns)`` returns the rebuild offset up to the first gap and
    calls ``on_nak(term_id, term_offset, length)`` when the gap's timer expires; ``on_loss`` is told of every new
    gap (loss report, congestion control)."""

    def __init__(self, delay: StaticDelayGenerator | OptimalMulticastDelayGenerator,
                 on_nak: Callable[[int, int, int], None],
                 on_loss: Callable[[int, int, int], None] | None = None) -> None:
        self._delay = delay
        self._on_nak = on_nak
        self._on_loss = on_loss
        self._gap = (0, 0, 0)
        self._record_gap = self._on_gap
        self.active_term_id = 0
        self.active_term_offset = -1
        self.active_length = 0
        self.expiry_ns = 0
        self.gap_open = False          # the last scan found a gap: its NAK timer (expiry_ns) is running

    def scan(self, term, term_length: int, rebuild_term_id: int, rebuild_offset: int, hwm_term_id: int,
             hwm_offset: int, now_ns: int) -> tuple[int, bool]:
        """Returns (offset where contiguous data ends, whether a new gap was found)."""
        term_delta = (hwm_term_id - rebuild_term_id) & 0xFFFFFFFF
        if term_delta >= 0x80000000 or (term_delta == 0 and rebuild_offset >= hwm_offset):
            # rebuild position at or past the high-water mark: nothing to scan. It can be past it: a term-ending PAD
            # arrives as a 32-byte datagram, so the hwm stops 32 bytes into the padding while the scan steps over
            # the whole PAD frame into the next term (as in the C driver, which compares positions here)
            self.gap_open = False
            return rebuild_offset, False
        limit = hwm_offset if rebuild_term_id == hwm_term_id else term_length
        self._gap = (0, 0, 0)
        gap_offset = TermGapScanner.scan_for_gap(term, rebuild_term_id, rebuild_offset, limit, self._record_gap)
        found = False
        self.gap_open = self._gap[2] > 0
        if self.gap_open:
            length = self._gap[2]
            # the active gap, or what is left of it after data arrived at its end, keeps its timer and is not a
            # new loss (as aeron_loss_detector_scan; counting it again would inflate the loss report)
            if (rebuild_term_id == self.active_term_id and gap_offset == self.active_term_offset
                    and length <= self.active_length):
                self.active_length = length
            else:
                self.active_term_id, self.active_term_offset, self.active_length = rebuild_term_id, gap_offset, length
                self.expiry_ns = now_ns + self._delay.first()
                found = True
                if self._on_loss is not None:
                    self._on_loss(rebuild_term_id, gap_offset, length)
            if now_ns >= self.expiry_ns:
                self._on_nak(self.active_term_id, self.active_term_offset, self.active_length)
                self.expiry_ns = now_ns + self._delay.retry()
        return gap_offset, found

    def _on_gap(self, term_id: int, offset: int, length: int) -> None:
        self._gap = (term_id, offset, length)
