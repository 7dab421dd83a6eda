# SPDX-License-Identifier: Apache-2.0
"""A cluster clock that a fault campaign can jump: ``aeron.cluster.clock=tests.cluster.faults.clock:JumpClock``.

Epoch milliseconds plus an offset that the harness writes (signed milliseconds, as text) to the file named by
``FAULTS_CLOCK_FILE``; the file is read again at most every ``REREAD_NS``, so a jump takes effect within that. The
consensus module takes its cluster clock for all its timing (Aeron's ``ConsensusModuleAgent.doWork`` derives its
``nowNs`` from ``clusterClock.time()``), so a jump forward makes the member see every timeout expire at once and a
jump back makes it see none for as long, which is what the campaign wants to provoke.
"""
from __future__ import annotations

import os
import time

from aeron.cluster.cluster_clocks import MillisecondClusterClock

REREAD_NS = 50_000_000


class JumpClock(MillisecondClusterClock):
    """Millisecond cluster time shifted by the offset in ``FAULTS_CLOCK_FILE`` (none without the variable)."""

    def __init__(self) -> None:
        super().__init__(self._epoch_nanos)
        self._path = os.environ.get("FAULTS_CLOCK_FILE")
        self._offset_ns = 0
        self._next_read_ns = 0

    def _epoch_nanos(self) -> int:
        now = time.monotonic_ns()
        if self._path is not None and now >= self._next_read_ns:
            self._next_read_ns = now + REREAD_NS
            try:
                with open(self._path, encoding="ascii") as f:
                    self._offset_ns = int(f.read().strip() or 0) * 1_000_000
            except (OSError, ValueError):
                self._offset_ns = 0
        return time.time_ns() + self._offset_ns


def set_offset(path: str | os.PathLike[str], offset_ms: int) -> None:
    """Jump the clocks reading ``path`` to epoch time plus ``offset_ms`` (atomically: written aside, renamed)."""
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="ascii") as f:
        f.write(str(int(offset_ms)))
    os.replace(tmp, path)
