# SPDX-License-Identifier: Apache-2.0
"""``SnapshotDurationTracker``: the longest snapshot, and how many took longer than a threshold, in two counters
(Aeron's ``io.aeron.cluster.service.SnapshotDurationTracker``)."""
from __future__ import annotations

from typing import Any

from aeron.common.constants import INT64_MIN

__all__ = ["SnapshotDurationTracker"]

_NOT_STARTED = INT64_MIN          # Long.MIN_VALUE: no snapshot began


class SnapshotDurationTracker:
    """Measures from :meth:`on_snapshot_begin` to :meth:`on_snapshot_end`."""

    def __init__(self, max_snapshot_duration: Any, snapshot_duration_threshold_exceeded_count: Any,
                 duration_threshold_ns: int) -> None:
        """Report to the two counters (with ``propose_max_ordered`` and ``increment``)."""
        self.max_snapshot_duration = max_snapshot_duration
        self.snapshot_duration_threshold_exceeded_count = snapshot_duration_threshold_exceeded_count
        self.duration_threshold_ns = duration_threshold_ns
        self._snapshot_start_time_ns = _NOT_STARTED

    def on_snapshot_begin(self, time_ns: int) -> None:
        """A snapshot starts at ``time_ns``."""
        self._snapshot_start_time_ns = time_ns

    def on_snapshot_end(self, time_ns: int) -> None:
        """The snapshot ended at ``time_ns`` (ignored when none began)."""
        if self._snapshot_start_time_ns != _NOT_STARTED:
            duration_ns = time_ns - self._snapshot_start_time_ns
            if duration_ns > self.duration_threshold_ns:
                self.snapshot_duration_threshold_exceeded_count.increment()
            self.max_snapshot_duration.propose_max_ordered(duration_ns)
