# SPDX-License-Identifier: Apache-2.0
"""The consensus module's cluster clocks (Aeron's ``MillisecondClusterClock`` and ``NanosecondClusterClock``, and a
microsecond one) and conversions between cluster time units (Java's ``TimeUnit.convert`` and ``toNanos``).

The unit (milliseconds by default) travels in the log (``NewLeadershipTermEvent``) and in snapshots
(``SnapshotMarker``), so every member and service of a cluster must agree on it. ``aeron.cluster.clock`` names the
clock by Aeron's class name (``io.aeron.cluster.MillisecondClusterClock``, ...), by its short name, or as
``package.module:name`` of a :class:`~aeron.cluster.service.cluster_clock.ClusterClock` of your own.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from aeron._core.codecs.cluster import ClusterTimeUnit
from aeron.cluster.service.cluster_clock import ClusterClock, nanos_per_unit
from aeron.common.errors import ConfigurationError
from aeron.common.settings import resolve_named

__all__ = ["MicrosecondClusterClock", "MillisecondClusterClock", "NanosecondClusterClock", "cluster_clock_from_name",
           "convert", "to_nanos"]


def to_nanos(time_unit: ClusterTimeUnit, value: int) -> int:
    """``value`` in ``time_unit`` as nanoseconds (Java's ``TimeUnit.toNanos``)."""
    return value * nanos_per_unit(time_unit)


def convert(to_unit: ClusterTimeUnit, value: int, from_unit: ClusterTimeUnit) -> int:
    """``value`` in ``from_unit`` as ``to_unit``, truncated toward zero (Java's ``TimeUnit.convert``)."""
    nanos = value * nanos_per_unit(from_unit)
    divisor = nanos_per_unit(to_unit)
    return -((-nanos) // divisor) if nanos < 0 else nanos // divisor


class _EpochClusterClock(ClusterClock):
    """Cluster time from an epoch-nanosecond source (``time.time_ns`` unless given one, for tests)."""

    TIME_UNIT = ClusterTimeUnit.MILLIS

    def __init__(self, epoch_nanos: Callable[[], int] = time.time_ns) -> None:
        """``epoch_nanos`` returns the epoch time in nanoseconds."""
        self._nanos = epoch_nanos
        # read every duty cycle of a consensus module (its time and now in nanoseconds): the unit's size looked up once
        self._per_unit = nanos_per_unit(self.TIME_UNIT)

    def time_unit(self) -> ClusterTimeUnit:
        """The unit of :meth:`time`."""
        return self.TIME_UNIT

    def time(self) -> int:
        """Epoch time in the clock's unit."""
        return self._nanos() // self._per_unit

    def time_nanos(self) -> int:
        """Epoch time in whole units of the clock, in nanoseconds."""
        per_unit = self._per_unit
        return self._nanos() // per_unit * per_unit

    def convert_to_nanos(self, time: int) -> int:
        """``time`` in this clock's unit, in nanoseconds."""
        return time * self._per_unit

    def time_millis(self) -> int:
        """Epoch time in milliseconds."""
        return self._nanos() // 1_000_000

    def time_micros(self) -> int:
        """Epoch time in microseconds."""
        return self._nanos() // 1_000

    def __repr__(self) -> str:
        """The class name."""
        return f"{type(self).__name__}()"


class MillisecondClusterClock(_EpochClusterClock):
    """Cluster time in milliseconds (Aeron's default); its ``time_nanos`` is whole milliseconds, as Aeron's."""

    TIME_UNIT = ClusterTimeUnit.MILLIS


class MicrosecondClusterClock(_EpochClusterClock):
    """Cluster time in microseconds."""

    TIME_UNIT = ClusterTimeUnit.MICROS


class NanosecondClusterClock(_EpochClusterClock):
    """Cluster time in nanoseconds."""

    TIME_UNIT = ClusterTimeUnit.NANOS


_BY_NAME: dict[str, type[_EpochClusterClock]] = {
    "io.aeron.cluster.MillisecondClusterClock": MillisecondClusterClock,
    "io.aeron.cluster.MicrosecondClusterClock": MicrosecondClusterClock,
    "io.aeron.cluster.NanosecondClusterClock": NanosecondClusterClock,
    "MillisecondClusterClock": MillisecondClusterClock,
    "MicrosecondClusterClock": MicrosecondClusterClock,
    "NanosecondClusterClock": NanosecondClusterClock,
}


def cluster_clock_from_name(name: str | None) -> Any:
    """The clock ``aeron.cluster.clock`` names (see the module docstring); ConfigurationError otherwise."""
    text = (name or "").strip()
    if not text:
        return MillisecondClusterClock()
    if text in _BY_NAME:
        return _BY_NAME[text]()
    found = resolve_named(text, "failed to instantiate ClusterClock",
                          f"expected one of {sorted(set(_BY_NAME))} or package.module:name")
    clock = found() if isinstance(found, type) else found
    if not isinstance(clock, ClusterClock):
        raise ConfigurationError(f"failed to instantiate ClusterClock {text}: {clock!r} is not a ClusterClock")
    return clock
