# SPDX-License-Identifier: Apache-2.0
"""DutyCycleStallTracker: each driver agent's longest duty cycle and how many went over the threshold, in its two
system counters (Aeron's ``io.aeron.driver.status.DutyCycleStallTracker``; the conductor's, the sender's and the
receiver's ``*_MAX_CYCLE_TIME`` and ``*_CYCLE_TIME_THRESHOLD_EXCEEDED``)."""
from __future__ import annotations

from aeron._core.counters import AtomicCounter

# aeron.driver.{conductor,sender,receiver}.cycle.threshold: our driver's default for each agent
CYCLE_THRESHOLD_NS = 100_000_000


class DutyCycleStallTracker:
    """Reports one agent's cycle times (a cycle measured from its start to its end)."""

    __slots__ = ("max_cycle_time", "cycle_time_threshold_exceeded_count", "cycle_time_threshold_ns", "_max_ns",
                 "report_above_ns")

    def __init__(self, max_cycle_time: AtomicCounter, cycle_time_threshold_exceeded_count: AtomicCounter,
                 cycle_time_threshold_ns: int = CYCLE_THRESHOLD_NS) -> None:
        self.max_cycle_time = max_cycle_time
        self.cycle_time_threshold_exceeded_count = cycle_time_threshold_exceeded_count
        self.cycle_time_threshold_ns = cycle_time_threshold_ns
        self._max_ns = 0
        # a cycle no longer than this changes neither counter: the agents skip the call for it (every duty cycle)
        self.report_above_ns = 0

    def report_measurement(self, duration_ns: int) -> None:
        """One cycle of ``duration_ns``: a new longest is proposed to the max counter, one over the threshold
        counted."""
        if duration_ns > self._max_ns:      # only this agent writes the counter: only a new maximum needs the call
            self._max_ns = duration_ns
            self.max_cycle_time.propose_max_ordered(duration_ns)
        if duration_ns > self.cycle_time_threshold_ns:
            self.cycle_time_threshold_exceeded_count.increment_ordered()
        self.report_above_ns = min(self._max_ns, self.cycle_time_threshold_ns)
