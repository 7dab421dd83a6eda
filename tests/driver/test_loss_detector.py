# SPDX-License-Identifier: Apache-2.0
"""LossDetector and its delay generators as pure logic over a real term (aeron_loss_detector.c): the first gap
between the rebuild position and the high-water mark, when it is NAKed, when it counts as a new loss."""
from __future__ import annotations

import math
import random

import pytest

from aeron._core.atomic_buffer import AtomicBuffer
from aeron.common.errors import InvalidArgumentError
from aeron.driver.loss_detector import (DEFAULT_NAK_MULTICAST_GROUP_SIZE, DEFAULT_NAK_MULTICAST_MAX_BACKOFF_NS,
                                        DEFAULT_NAK_UNICAST_DELAY_NS, DEFAULT_NAK_UNICAST_RETRY_RATIO, LossDetector,
                                        OptimalMulticastDelayGenerator, StaticDelayGenerator)
from tests._core.framing import write_frame

TERM = 64 * 1024
TERM_ID = 5
US = 1_000


class Recorder:
    def __init__(self):
        self.naks = []
        self.losses = []


@pytest.fixture
def term():
    memory = bytearray(TERM)
    return memory, AtomicBuffer(memory)


def detector(delay_ns=1 * US, retry_ns=100 * US):
    rec = Recorder()
    ld = LossDetector(StaticDelayGenerator(delay_ns, retry_ns), lambda *gap: rec.naks.append(gap),
                      lambda *gap: rec.losses.append(gap))
    return ld, rec


def frames(memory, *offsets, size=64):
    for offset in offsets:
        write_frame(memory, offset, bytes(size - 32), term_id=TERM_ID)


def test_defaults_are_the_reference_values():
    assert DEFAULT_NAK_UNICAST_DELAY_NS == 1_000 and DEFAULT_NAK_UNICAST_RETRY_RATIO == 100
    assert DEFAULT_NAK_MULTICAST_MAX_BACKOFF_NS == 10_000_000 and DEFAULT_NAK_MULTICAST_GROUP_SIZE == 10


def test_no_gap_returns_the_end_of_contiguous_data(term):
    memory, buffer = term
    frames(memory, 0, 64, 128)
    ld, rec = detector()
    assert ld.scan(buffer, TERM, TERM_ID, 0, TERM_ID, 192, 0) == (192, False)
    assert ld.scan(buffer, TERM, TERM_ID, 192, TERM_ID, 192, 0) == (192, False)     # rebuild at hwm
    assert ld.scan(buffer, TERM, TERM_ID, 256, TERM_ID, 192, 0) == (256, False)     # beyond: unchanged
    assert rec.naks == [] and rec.losses == []


def test_a_gap_is_reported_once_then_naked_after_the_delay_and_retried(term):
    memory, buffer = term
    frames(memory, 0, 1024)                                 # [64, 1024) missing
    ld, rec = detector(delay_ns=1 * US, retry_ns=100 * US)
    assert ld.scan(buffer, TERM, TERM_ID, 0, TERM_ID, 1088, 0) == (64, True)
    assert rec.losses == [(TERM_ID, 64, 960)]
    assert rec.naks == []                                   # 1 µs delay not yet elapsed
    assert ld.scan(buffer, TERM, TERM_ID, 64, TERM_ID, 1088, 999) == (64, False)
    assert rec.naks == []
    assert ld.scan(buffer, TERM, TERM_ID, 64, TERM_ID, 1088, 1 * US) == (64, False)
    assert rec.naks == [(TERM_ID, 64, 960)]
    ld.scan(buffer, TERM, TERM_ID, 64, TERM_ID, 1088, 100 * US)
    assert len(rec.naks) == 1                               # retry after 100 µs more
    ld.scan(buffer, TERM, TERM_ID, 64, TERM_ID, 1088, 101 * US)
    assert rec.naks == [(TERM_ID, 64, 960)] * 2
    assert rec.losses == [(TERM_ID, 64, 960)]               # still one loss


def test_zero_delay_naks_in_the_same_scan(term):
    memory, buffer = term
    frames(memory, 0, 256)
    ld, rec = detector(delay_ns=0, retry_ns=0)
    assert ld.scan(buffer, TERM, TERM_ID, 0, TERM_ID, 320, 0) == (64, True)
    assert rec.naks == [(TERM_ID, 64, 192)]


def test_a_gap_shrunk_by_data_at_its_end_is_a_new_gap_with_its_own_timer(term):
    # only the very same gap (term, offset and length) keeps its timer, as aeron_loss_detector_gaps_match
    memory, buffer = term
    frames(memory, 0, 1024)
    ld, rec = detector(delay_ns=10 * US, retry_ns=100 * US)
    ld.scan(buffer, TERM, TERM_ID, 0, TERM_ID, 1088, 0)
    frames(memory, 960)                                     # the retransmit's tail arrived first
    assert ld.scan(buffer, TERM, TERM_ID, 64, TERM_ID, 1088, 5 * US) == (64, True)
    assert rec.losses == [(TERM_ID, 64, 960), (TERM_ID, 64, 896)]
    ld.scan(buffer, TERM, TERM_ID, 64, TERM_ID, 1088, 10 * US)
    assert rec.naks == []                                   # its timer started at 5 µs
    ld.scan(buffer, TERM, TERM_ID, 64, TERM_ID, 1088, 15 * US)
    assert rec.naks == [(TERM_ID, 64, 896)]


def test_the_loss_report_hears_of_a_naked_gap_once_and_then_only_of_what_it_grew_by():
    ld, rec = detector()
    assert ld.report_loss(TERM_ID, 64, 960) == 960
    assert ld.report_loss(TERM_ID, 64, 960) == 0            # its retry
    assert ld.report_loss(TERM_ID, 64, 896) == 0            # shrunk
    assert ld.report_loss(TERM_ID, 64, 1024) == 64          # grown: the 64 bytes past the range reported
    assert ld.report_loss(TERM_ID, 1088, 64) == 64          # past it
    assert ld.report_loss(TERM_ID + 1, 1088, 64) == 64      # another term


def test_a_filled_gap_moves_the_rebuild_position_and_a_later_gap_is_a_new_loss(term):
    memory, buffer = term
    frames(memory, 0, 128)
    ld, rec = detector()
    ld.scan(buffer, TERM, TERM_ID, 0, TERM_ID, 192, 0)
    frames(memory, 64, 256)                                 # gap filled; data at 256 leaves [192, 256) missing
    assert ld.scan(buffer, TERM, TERM_ID, 0, TERM_ID, 320, 10 * US) == (192, True)
    assert rec.losses == [(TERM_ID, 64, 64), (TERM_ID, 192, 64)]


def test_when_the_hwm_is_in_the_next_term_the_scan_runs_to_the_end_of_the_rebuild_term(term):
    memory, buffer = term
    frames(memory, 0)
    ld, rec = detector(delay_ns=0, retry_ns=0)
    assert ld.scan(buffer, TERM, TERM_ID, 0, TERM_ID + 1, 512, 0) == (64, True)
    assert rec.losses == [(TERM_ID, 64, TERM - 64)]
    assert rec.naks == [(TERM_ID, 64, TERM - 64)]
    frames(memory, *range(64, TERM, 64))
    assert ld.scan(buffer, TERM, TERM_ID, 64, TERM_ID + 1, 512, 1) == (TERM, False)


def test_rebuild_past_the_hwm_after_a_term_ending_pad_is_not_a_loss(term):
    # the PAD datagram is header-only: hwm = pad offset + 32, the rebuild steps over the whole PAD into the next term
    memory, buffer = term
    ld, rec = detector(delay_ns=0, retry_ns=0)
    assert ld.scan(buffer, TERM, TERM_ID + 1, 0, TERM_ID, TERM - 736, 0) == (0, False)
    assert ld.scan(buffer, TERM, -2**31, 0, 2**31 - 1, 64, 0) == (0, False)          # across the int32 wrap
    assert rec.losses == [] and rec.naks == []


# -- delay generators ------------------------------------------------------------------------------------------------

def test_static_delay_generator():
    gen = StaticDelayGenerator(1 * US, 100 * US)
    assert (gen.first(), gen.retry()) == (1 * US, 100 * US)
    assert StaticDelayGenerator(7).retry() == 7


class EdgeRandom(random.Random):
    """uniform() returns one end of its range."""

    def __init__(self, high):
        super().__init__(0)
        self.high = high

    def uniform(self, a, b):
        return b if self.high else a


def test_optimal_multicast_delay_spans_zero_to_the_max_backoff():
    t = 10_000_000
    assert OptimalMulticastDelayGenerator(t, 10, EdgeRandom(False)).first() == 0
    assert abs(OptimalMulticastDelayGenerator(t, 10, EdgeRandom(True)).first() - t) <= 1
    gen = OptimalMulticastDelayGenerator(t, 10, random.Random(1))
    delays = [gen.first() for _ in range(2000)] + [gen.retry() for _ in range(500)]
    assert all(0 <= d <= t for d in delays)
    # OptimalMulticastDelayGenerator's formula evaluated directly for the same draws
    lam = math.log(10) + 1
    assert lam == pytest.approx(3.3026, abs=1e-4)
    rng = random.Random(9)
    draws = [rng.uniform(0.0, lam / t) for _ in range(50)]
    gen = OptimalMulticastDelayGenerator(t, 10, random.Random(9))
    expected = [int((t / lam) * math.log((x + lam / (t * (math.exp(lam) - 1))) * (math.exp(lam) - 1) * t / lam))
                for x in draws]
    assert [gen.first() for _ in range(50)] == expected
    # the distribution favours long delays: most receivers wait, few NAK early
    assert sorted(delays)[len(delays) // 2] > t // 2


class CountingDelays:
    """A generator with no fixed delays (as the multicast one): drawn from Python, first() only for a new gap."""

    def __init__(self):
        self.firsts = self.retries = 0

    def first(self):
        self.firsts += 1
        return 10 * US

    def retry(self):
        self.retries += 1
        return 50 * US


def test_a_generator_without_fixed_delays_is_drawn_only_for_a_new_gap_and_each_nak(term):
    memory, buffer = term
    frames(memory, 64)                                      # [0, 64) missing
    delays = CountingDelays()
    rec = Recorder()
    ld = LossDetector(delays, lambda *gap: rec.naks.append(gap), lambda *gap: rec.losses.append(gap))
    assert not ld.static
    for now in (0, 5 * US, 9 * US):
        ld.scan(buffer, TERM, TERM_ID, 0, TERM_ID, 128, now)
    assert (delays.firsts, delays.retries, rec.naks) == (1, 0, [])
    ld.scan(buffer, TERM, TERM_ID, 0, TERM_ID, 128, 10 * US)
    assert (delays.firsts, delays.retries, rec.naks, ld.expiry_ns) == (1, 1, [(TERM_ID, 0, 64)], 60 * US)


def test_fixed_delays_are_read_once_and_checked():
    ld = LossDetector(StaticDelayGenerator(3 * US, 70 * US), print)
    assert (ld.static, ld.first_delay_ns, ld.retry_delay_ns) == (True, 3 * US, 70 * US)
    with pytest.raises(InvalidArgumentError):
        LossDetector(StaticDelayGenerator(-1, 5), print)


def test_offsets_outside_the_term_are_refused(term):
    memory, buffer = term
    ld, rec = detector()
    for args in ((TERM * 2, TERM_ID, 0, TERM_ID, 64), (TERM, TERM_ID, -32, TERM_ID, 64),
                 (TERM, TERM_ID, 0, TERM_ID, TERM + 32)):
        with pytest.raises(InvalidArgumentError):
            ld.scan(buffer, args[0], *args[1:], 0)
    assert rec.losses == [] and rec.naks == []
