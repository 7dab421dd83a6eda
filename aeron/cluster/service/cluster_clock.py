# SPDX-License-Identifier: Apache-2.0
"""``ClusterClock``: cluster time, the clock the leader stamps log entries with, in a unit of milliseconds,
microseconds or nanoseconds since the epoch (Aeron's ``io.aeron.cluster.service.ClusterClock``).

Java names the unit with ``java.util.concurrent.TimeUnit``; here it is the protocol's own enum,
:class:`~aeron._core.codecs.cluster.ClusterTimeUnit` (MILLIS, MICROS, NANOS), which is what the log, snapshots and
``Cluster.time_unit`` carry. :meth:`ClusterClock.map` reads one from a message, where a null (an older leader)
means milliseconds.
"""
from __future__ import annotations

from aeron._core.codecs.cluster import ClusterTimeUnit

__all__ = ["ClusterClock", "ClusterTimeUnit", "nanos_per_unit"]

_NANOS_PER_UNIT = {ClusterTimeUnit.MILLIS: 1_000_000, ClusterTimeUnit.MICROS: 1_000, ClusterTimeUnit.NANOS: 1}


def nanos_per_unit(time_unit: ClusterTimeUnit) -> int:
    """Nanoseconds in one ``time_unit`` (ValueError for an unsupported unit)."""
    try:
        return _NANOS_PER_UNIT[time_unit]
    except KeyError:
        raise ValueError(f"unsupported time unit: {time_unit!r}") from None


class ClusterClock:
    """A clock of cluster time; subclasses give :meth:`time` and, when not milliseconds, :meth:`time_unit`."""

    def time_unit(self) -> ClusterTimeUnit:
        """The unit of :meth:`time` (milliseconds unless overridden)."""
        return ClusterTimeUnit.MILLIS

    def time(self) -> int:
        """The current time in :meth:`time_unit` since the epoch."""
        raise NotImplementedError

    def time_millis(self) -> int:
        """The current time in milliseconds."""
        return self.time() * nanos_per_unit(self.time_unit()) // 1_000_000

    def time_micros(self) -> int:
        """The current time in microseconds."""
        return self.time() * nanos_per_unit(self.time_unit()) // 1_000

    def time_nanos(self) -> int:
        """The current time in nanoseconds."""
        return self.time() * nanos_per_unit(self.time_unit())

    def convert_to_nanos(self, time: int) -> int:
        """``time`` in this clock's unit, in nanoseconds."""
        return time * nanos_per_unit(self.time_unit())

    @staticmethod
    def map(code: int) -> ClusterTimeUnit:
        """The time unit of a ClusterTimeUnit code read from a message: null means milliseconds (ValueError for a
        code this schema does not know)."""
        if code == ClusterTimeUnit.NULL_VAL:
            return ClusterTimeUnit.MILLIS
        try:
            unit = ClusterTimeUnit(code)
        except ValueError:
            raise ValueError(f"unsupported time unit: {code}") from None
        return unit
