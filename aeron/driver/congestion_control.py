# SPDX-License-Identifier: Apache-2.0
"""Receiver congestion control: the window a receiver advertises in its status messages (aeron_congestion_control.c;
StaticWindowCongestionControl, CubicCongestionControl). ``cc=static`` (default) or ``cc=cubic``."""
from __future__ import annotations

from typing import Any

from aeron.common.errors import InvalidChannelError

DEFAULT_INITIAL_RTT_NS = 100_000
CUBIC_C = 0.4
CUBIC_B = 0.2


def _cbrt(x: float) -> float:
    # math.cbrt is 3.11+; the argument here is a window length scaled, never negative
    return x ** (1.0 / 3.0)


def receiver_window_length(term_length: int, initial_window: int) -> int:
    return min(initial_window, term_length // 2)


class StaticWindowCongestionControl:
    """A constant window; never measures RTT, never forces a status message."""

    name = "static"

    def __init__(self, term_length: int, mtu: int, initial_window: int) -> None:
        self.window = receiver_window_length(term_length, initial_window)

    def should_measure_rtt(self, now_ns: int) -> bool:
        return False

    def on_rttm_sent(self, now_ns: int) -> None:
        pass

    def on_rttm(self, now_ns: int, rtt_ns: int) -> None:
        pass

    def on_track_rebuild(self, now_ns: int, new_consumption_position: int, last_sm_position: int,
                         hwm_position: int, loss_found: bool) -> tuple[int, bool]:
        """(window, force a status message)."""
        return self.window, False

    def initial_window_length(self) -> int:
        return self.window

    def detach_counters(self) -> None:
        pass


class CubicCongestionControl:
    """CUBIC over the receiver window in MTU units: shrink by B on loss, grow as C·(t − K)³ since then."""

    name = "cubic"

    def __init__(self, term_length: int, mtu: int, initial_window: int, measure_rtt: bool = False,
                 tcp_mode: bool = False, initial_rtt_ns: int = DEFAULT_INITIAL_RTT_NS) -> None:
        self.mtu = mtu
        self.max_cwnd = max(1, receiver_window_length(term_length, initial_window) // mtu)
        self.cwnd = min(10, self.max_cwnd)
        self.w_max = self.max_cwnd
        self.k = _cbrt(self.w_max * CUBIC_B / CUBIC_C)
        self.rtt_ns = initial_rtt_ns
        self.initial_rtt_ns = initial_rtt_ns
        self.measure_rtt = measure_rtt
        self.tcp_mode = tcp_mode
        self.last_loss_ns = 0
        self.last_update_ns = 0
        self.last_rtt_ns = 0
        self.rtt_timeout_ns = 4 * initial_rtt_ns
        self._rtt_counter: Any = None            # rcv-cc-cubic-rtt (ns) and rcv-cc-cubic-wnd (bytes)
        self._window_counter: Any = None

    def attach_counters(self, rtt: Any, window: Any) -> None:
        self._rtt_counter, self._window_counter = rtt, window
        rtt.set_ordered(0)
        window.set_ordered(self.cwnd * self.mtu)

    def detach_counters(self) -> None:
        for counter in (self._rtt_counter, self._window_counter):
            if counter is not None:
                counter.close()
        self._rtt_counter = self._window_counter = None

    def should_measure_rtt(self, now_ns: int) -> bool:
        return self.measure_rtt and now_ns > self.last_rtt_ns + self.rtt_timeout_ns

    def on_rttm_sent(self, now_ns: int) -> None:
        self.last_rtt_ns = now_ns

    def on_rttm(self, now_ns: int, rtt_ns: int) -> None:
        self.rtt_ns = rtt_ns
        self.rtt_timeout_ns = max(rtt_ns, self.initial_rtt_ns) * 4
        if self._rtt_counter is not None:
            self._rtt_counter.set_ordered(rtt_ns)

    def on_track_rebuild(self, now_ns: int, new_consumption_position: int, last_sm_position: int,
                         hwm_position: int, loss_found: bool) -> tuple[int, bool]:
        force = False
        if loss_found:
            force = True
            self.w_max = self.cwnd
            self.k = _cbrt(self.w_max * CUBIC_B / CUBIC_C)
            self.cwnd = max(1, int(self.cwnd * (1.0 - CUBIC_B)))
            self.last_loss_ns = now_ns
        elif self.cwnd < self.max_cwnd and now_ns > self.last_update_ns + self.rtt_ns:
            t = (now_ns - self.last_loss_ns) / 1e9
            self.cwnd = min(self.max_cwnd, self.w_max + int(CUBIC_C * (t - self.k) ** 3))
            self.cwnd = max(1, self.cwnd)
            if self.tcp_mode:
                w_tcp = int(self.w_max * (1 - CUBIC_B) + 3 * CUBIC_B / (2 - CUBIC_B) * t / (self.rtt_ns / 1e9))
                self.cwnd = min(self.max_cwnd, max(self.cwnd, w_tcp))
            self.last_update_ns = now_ns
        elif self.cwnd == 1 and new_consumption_position > last_sm_position:
            force = True
        window = self.cwnd * self.mtu
        if self._window_counter is not None:
            self._window_counter.set_ordered(window)
        return window, force

    def initial_window_length(self) -> int:
        return self.cwnd * self.mtu


def congestion_control_for(cc: str | None, term_length: int, mtu: int, initial_window: int,
                           measure_rtt: bool = False, initial_rtt_ns: int = DEFAULT_INITIAL_RTT_NS):
    if cc is None or cc == "static":
        return StaticWindowCongestionControl(term_length, mtu, initial_window)
    if cc == "cubic":
        return CubicCongestionControl(term_length, mtu, initial_window, measure_rtt=measure_rtt,
                                      initial_rtt_ns=initial_rtt_ns)
    raise InvalidChannelError("unknown congestion control (static or cubic)", "", f"cc={cc}")
