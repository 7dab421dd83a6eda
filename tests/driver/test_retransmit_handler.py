# SPDX-License-Identifier: Apache-2.0
"""RetransmitHandler as pure logic (aeron_retransmit_handler.c): immediate and delayed
resends, linger suppressing duplicate NAKs, the unicast single action, the multicast pool and its overflow."""
from __future__ import annotations

import pytest

from aeron.driver.flow_control import FlowControl, MinFlowControl
from aeron.driver.retransmit_handler import DEFAULT_LINGER_NS, RetransmitHandler

TERM = 64 * 1024
MS = 1_000_000


class Recorder:
    def __init__(self):
        self.resends = []
        self.overflows = 0

    def resend(self, term_id, term_offset, length):
        self.resends.append((term_id, term_offset, length))

    def overflow(self):
        self.overflows += 1


def unicast_length(offset, length):
    return FlowControl().max_retransmission_length(offset, length, TERM, 1408)


def multicast_length(offset, length):
    return MinFlowControl().max_retransmission_length(offset, length, TERM, 1408)


def test_defaults_are_the_reference_values():
    assert DEFAULT_LINGER_NS == 10 * MS          # aeron_driver_context.c: retransmit linger 10 ms, delay 0


def test_immediate_resend_then_linger_suppresses_duplicates_for_the_same_range():
    rec = Recorder()
    handler = RetransmitHandler(rec.resend)
    assert handler.on_nak(7, 1024, 256, TERM, 0, unicast_length)
    assert rec.resends == [(7, 1024, 256)]
    # same range, a range starting inside it, while lingering: ignored
    assert not handler.on_nak(7, 1024, 256, TERM, 1 * MS, unicast_length)
    assert not handler.on_nak(7, 1024 + 128, 64, TERM, 2 * MS, unicast_length)
    assert rec.resends == [(7, 1024, 256)]
    # same offset in another term is a different loss
    assert handler.on_nak(8, 1024, 256, TERM, 3 * MS, unicast_length)
    assert rec.resends[-1] == (8, 1024, 256)


def test_linger_ends_strictly_after_the_linger_timeout():
    rec = Recorder()
    handler = RetransmitHandler(rec.resend, max_retransmits=4, linger_ns=10 * MS)
    handler.on_nak(1, 0, 64, TERM, 0, multicast_length)
    handler.process_timeouts(10 * MS)                                # at expiry: still lingering (C: now > expiry)
    assert not handler.on_nak(1, 0, 64, TERM, 10 * MS, multicast_length)
    handler.process_timeouts(10 * MS + 1)                            # past it: free again
    assert handler.on_nak(1, 0, 64, TERM, 10 * MS + 1, multicast_length)
    assert rec.resends == [(1, 0, 64), (1, 0, 64)]


def test_delayed_resend_fires_after_the_delay_and_then_lingers():
    rec = Recorder()
    handler = RetransmitHandler(rec.resend, max_retransmits=4, delay_ns=5 * MS, linger_ns=10 * MS)
    assert handler.on_nak(3, 4096, 1408, TERM, 0, multicast_length)
    assert rec.resends == []
    assert handler.process_timeouts(5 * MS) == 0
    assert not handler.on_nak(3, 4096, 1408, TERM, 4 * MS, multicast_length)   # delayed: duplicate suppressed
    assert handler.process_timeouts(5 * MS + 1) == 1
    assert rec.resends == [(3, 4096, 1408)]
    assert not handler.on_nak(3, 4096, 1408, TERM, 6 * MS, multicast_length)   # lingering
    handler.process_timeouts(15 * MS + 2)
    assert handler.on_nak(3, 4096, 1408, TERM, 16 * MS, multicast_length)
    assert rec.resends == [(3, 4096, 1408)]                                     # delayed again, not yet resent


def test_unicast_reuses_its_single_action_for_a_different_range():
    rec = Recorder()
    handler = RetransmitHandler(rec.resend, max_retransmits=1)
    assert handler.on_nak(1, 0, 64, TERM, 0, unicast_length)
    assert handler.on_nak(1, 4096, 64, TERM, 1, unicast_length)                # not overlapping: reused at once
    assert not handler.on_nak(1, 4096, 64, TERM, 2, unicast_length)
    assert handler.on_nak(1, 0, 64, TERM, 3, unicast_length)                   # the first range is free again
    assert rec.resends == [(1, 0, 64), (1, 4096, 64), (1, 0, 64)]


def test_multicast_pool_overflow_drops_the_nak_and_counts_it():
    rec = Recorder()
    handler = RetransmitHandler(rec.resend, max_retransmits=2, on_overflow=rec.overflow)
    assert handler.on_nak(1, 0, 64, TERM, 0, multicast_length)
    assert handler.on_nak(1, 1024, 64, TERM, 0, multicast_length)
    assert not handler.on_nak(1, 2048, 64, TERM, 0, multicast_length)
    assert rec.overflows == 1 and len(rec.resends) == 2
    handler.process_timeouts(DEFAULT_LINGER_NS + 1)
    assert handler.on_nak(1, 2048, 64, TERM, DEFAULT_LINGER_NS + 1, multicast_length)


def test_the_action_length_is_the_flow_control_retransmission_length():
    rec = Recorder()
    big_term = 16 * 1024 * 1024
    handler = RetransmitHandler(rec.resend)
    handler.on_nak(1, 0, 8 * 1024 * 1024, big_term, 0,
                   lambda offset, length: FlowControl().max_retransmission_length(offset, length, big_term, 1408))
    assert rec.resends == [(1, 0, 2 * 1024 * 1024)]          # 128 KiB × rrwm 16
    # and an offset NAKed inside the capped action's range is suppressed, one beyond it is not
    assert not handler.on_nak(1, 2 * 1024 * 1024 - 32, 64, big_term, 1, lambda o, n: n)
    assert handler.on_nak(1, 2 * 1024 * 1024, 64, big_term, 1, lambda o, n: n)


@pytest.mark.parametrize("term_offset, length", [(-32, 64), (TERM - 31, 64), (TERM, 64), (0, 0), (0, -5)])
def test_invalid_naks_are_ignored(term_offset, length):
    rec = Recorder()
    handler = RetransmitHandler(rec.resend)
    assert not handler.on_nak(1, term_offset, length, TERM, 0, unicast_length)
    assert rec.resends == []


def test_the_last_frame_slot_of_a_term_is_a_valid_nak_offset():
    rec = Recorder()
    handler = RetransmitHandler(rec.resend)
    assert handler.on_nak(1, TERM - 32, 64, TERM, 0, unicast_length)
    assert rec.resends == [(1, TERM - 32, 32)]               # capped at the end of the term
