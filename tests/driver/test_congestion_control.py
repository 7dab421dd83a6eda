# SPDX-License-Identifier: Apache-2.0
"""Receiver congestion control as pure logic (aeron_congestion_control.c): the static window and
CUBIC's window in MTU units, its loss reaction, growth, forced status messages and RTT bookkeeping."""
from __future__ import annotations

import pytest

from aeron.driver.congestion_control import (CUBIC_B, CUBIC_C, DEFAULT_INITIAL_RTT_NS, CubicCongestionControl,
                                             StaticWindowCongestionControl, congestion_control_for,
                                             receiver_window_length)
from aeron.common.errors import InvalidChannelError

KIB = 1024
MTU = 1408


class FakeCounter:
    def __init__(self):
        self.value = None
        self.closed = False

    def set_ordered(self, value):
        self.value = value

    def close(self):
        self.closed = True


@pytest.mark.parametrize("term_length, initial, expected", [
    (64 * KIB, 128 * KIB, 32 * KIB),            # seen from the C driver: 64 KiB term -> 32768
    (16 * 1024 * KIB, 128 * KIB, 128 * KIB),
    (16 * 1024 * KIB, 8 * KIB, 8 * KIB),        # rcv-wnd smaller than half a term
])
def test_receiver_window_length(term_length, initial, expected):
    assert receiver_window_length(term_length, initial) == expected


def test_static_window_is_constant_and_never_measures_or_forces():
    cc = StaticWindowCongestionControl(64 * KIB, MTU, 128 * KIB)
    assert cc.initial_window_length() == 32 * KIB
    for now, loss in ((0, False), (10**9, True), (2 * 10**9, False)):
        assert cc.on_track_rebuild(now, 4096, 0, 8192, loss) == (32 * KIB, False)
    assert not cc.should_measure_rtt(10**12)


def new_cubic(**kw):
    return CubicCongestionControl(64 * KIB, MTU, 128 * KIB, **kw)


def test_cubic_initial_state():
    cc = new_cubic()
    assert cc.max_cwnd == 32 * KIB // MTU == 23
    assert cc.cwnd == 10 and cc.initial_window_length() == 10 * MTU
    assert cc.w_max == 23 and cc.k == pytest.approx((23 * CUBIC_B / CUBIC_C) ** (1 / 3))
    assert (CUBIC_C, CUBIC_B, DEFAULT_INITIAL_RTT_NS) == (0.4, 0.2, 100_000)
    assert new_cubic(initial_rtt_ns=1_000).rtt_timeout_ns == 4_000


def test_cubic_window_grows_only_after_an_rtt_and_follows_the_cubic():
    cc = new_cubic()
    assert cc.on_track_rebuild(100_000, 0, 0, 0, False) == (10 * MTU, False)     # not after the update interval
    now = 200_000
    t = now / 1e9
    expected = min(23, 23 + int(CUBIC_C * (t - cc.k) ** 3))
    assert cc.on_track_rebuild(now, 0, 0, 0, False) == (expected * MTU, False)
    assert cc.cwnd == expected
    # long after the last loss the window is back at its maximum and stays there
    assert cc.on_track_rebuild(10**10, 0, 0, 0, False) == (23 * MTU, False)
    assert cc.on_track_rebuild(2 * 10**10, 0, 0, 0, False) == (23 * MTU, False)


def test_cubic_loss_shrinks_by_b_and_forces_a_status_message():
    cc = new_cubic()
    window, force = cc.on_track_rebuild(5_000, 0, 0, 4096, True)
    assert force and window == int(10 * (1 - CUBIC_B)) * MTU == 8 * MTU
    assert cc.w_max == 10 and cc.k == pytest.approx((10 * CUBIC_B / CUBIC_C) ** (1 / 3))
    assert cc.last_loss_ns == 5_000
    # growth restarts from the loss: t measured from it
    now = 5_000 + 200_000
    expected = min(23, 10 + int(CUBIC_C * ((now - 5_000) / 1e9 - cc.k) ** 3))
    assert cc.on_track_rebuild(now, 0, 0, 0, False) == (max(1, expected) * MTU, False)


def test_cubic_window_never_falls_below_one_mtu_and_forces_an_sm_when_consumption_moves():
    cc = CubicCongestionControl(4 * KIB, MTU, 128 * KIB)        # window 2 KiB: max_cwnd 1
    assert cc.max_cwnd == 1 and cc.cwnd == 1
    assert cc.on_track_rebuild(0, 0, 0, 0, True) == (MTU, True)
    assert cc.on_track_rebuild(1, 64, 0, 64, False) == (MTU, True)          # consumed past the last SM
    assert cc.on_track_rebuild(2, 64, 64, 64, False) == (MTU, False)


def test_cubic_tcp_mode_is_at_least_the_tcp_friendly_window():
    cc = new_cubic(tcp_mode=True)
    cc.on_track_rebuild(0, 0, 0, 0, True)                                   # w_max 10, cwnd 8
    now = 50_000_000                                                        # 50 ms, RTT 100 µs
    t = now / 1e9
    cubic = 10 + int(CUBIC_C * (t - cc.k) ** 3)
    w_tcp = int(10 * (1 - CUBIC_B) + 3 * CUBIC_B / (2 - CUBIC_B) * t / (100_000 / 1e9))
    window, _ = cc.on_track_rebuild(now, 0, 0, 0, False)
    assert window == min(23, max(cubic, w_tcp)) * MTU


def test_cubic_rtt_measurement_schedule_and_counters():
    cc = new_cubic(measure_rtt=True, initial_rtt_ns=100_000)
    rtt, wnd = FakeCounter(), FakeCounter()
    cc.attach_counters(rtt, wnd)
    assert (rtt.value, wnd.value) == (0, 10 * MTU)
    assert cc.should_measure_rtt(400_001) and not cc.should_measure_rtt(400_000)
    cc.on_rttm_sent(1_000_000)
    assert not cc.should_measure_rtt(1_400_000) and cc.should_measure_rtt(1_400_001)
    cc.on_rttm(1_500_000, 250_000)
    assert rtt.value == 250_000 and cc.rtt_timeout_ns == 1_000_000
    cc.on_rttm(1_600_000, 10_000)                       # below the initial RTT: timeout floors at 4 × initial
    assert cc.rtt_timeout_ns == 400_000
    cc.on_track_rebuild(2_000_000, 0, 0, 0, True)
    assert wnd.value == cc.cwnd * MTU
    cc.detach_counters()
    assert rtt.closed and wnd.closed
    assert not new_cubic().should_measure_rtt(10**12)   # measuring is off by default


def test_selection_by_the_cc_parameter():
    assert type(congestion_control_for(None, 64 * KIB, MTU, 128 * KIB)) is StaticWindowCongestionControl
    assert type(congestion_control_for("static", 64 * KIB, MTU, 128 * KIB)) is StaticWindowCongestionControl
    cubic = congestion_control_for("cubic", 64 * KIB, MTU, 128 * KIB, measure_rtt=True, initial_rtt_ns=7)
    assert type(cubic) is CubicCongestionControl and cubic.measure_rtt and cubic.initial_rtt_ns == 7
    with pytest.raises(InvalidChannelError) as info:
        congestion_control_for("reno", 64 * KIB, MTU, 128 * KIB)
    assert "cc=reno" in str(info.value)
