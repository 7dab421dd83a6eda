# SPDX-License-Identifier: Apache-2.0
"""Cluster time (Aeron's ``ClusterClock``): the clock the leader stamps log entries with, in the cluster's time unit.

The unit (milliseconds by default, or microseconds or nanoseconds) travels in the log (``NewLeadershipTermEvent``)
and in snapshots (``SnapshotMarker``) as a ``ClusterTimeUnit``, so every member and service must agree on it.
``aeron.cluster.clock`` names the clock by Aeron's class name (``io.aeron.cluster.MillisecondClusterClock``, ...),
by its short name, or as ``package.module:name`` for one of your own.
"""
from __future__ import annotations

import importlib
import time
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from aeron._core.codecs.cluster import ClusterTimeUnit
from aeron.common.errors import ConfigurationError

__all__ = ["ClusterClock", "MillisecondClusterClock", "MicrosecondClusterClock", "NanosecondClusterClock",
           "ClusterTimeUnit", "cluster_clock_from_name", "convert", "time_unit_of", "to_nanos"]

_NANOS_PER = {ClusterTimeUnit.MILLIS: 1_000_000, ClusterTimeUnit.MICROS: 1_000, ClusterTimeUnit.NANOS: 1}


def time_unit_of(code: int) -> ClusterTimeUnit:
    """The time unit a ``ClusterTimeUnit`` field carries; absent (null, older senders) is milliseconds, as Aeron's
    ``ClusterClock.map`` (ConfigurationError for a code that is not a unit)."""
    if code == ClusterTimeUnit.NULL_VAL:
        return ClusterTimeUnit.MILLIS
    try:
        return ClusterTimeUnit(code)
    except ValueError:
        raise ConfigurationError(f"unsupported time unit: {code}") from None


def to_nanos(time_unit: ClusterTimeUnit, value: int) -> int:
    """``value`` in ``time_unit`` as nanoseconds (Java's ``TimeUnit.toNanos``)."""
    return value * _NANOS_PER[time_unit]


def convert(to_unit: ClusterTimeUnit, value: int, from_unit: ClusterTimeUnit) -> int:
    """``value`` in ``from_unit`` as ``to_unit``, truncated toward zero (Java's ``TimeUnit.convert``)."""
    nanos = value * _NANOS_PER[from_unit]
    divisor = _NANOS_PER[to_unit]
    return int(nanos / divisor) if nanos < 0 else nanos // divisor


@runtime_checkable
class ClusterClock(Protocol):
    """What a cluster clock gives: ``time()`` in its ``time_unit``, and the same instant in ms, µs and ns."""

    @property
    def time_unit(self) -> ClusterTimeUnit:
        """The unit of :meth:`time`."""

    def time(self) -> int:
        """Epoch time in :attr:`time_unit`."""

    def time_millis(self) -> int:
        """Epoch time in milliseconds."""

    def time_micros(self) -> int:
        """Epoch time in microseconds."""

    def time_nanos(self) -> int:
        """Epoch time in nanoseconds."""

    def convert_to_nanos(self, time: int) -> int:
        """A time in :attr:`time_unit` as nanoseconds."""


class _EpochClock:
    """A cluster clock over an epoch-nanosecond source (``time.time_ns`` unless given one, for tests)."""

    TIME_UNIT = ClusterTimeUnit.MILLIS

    __slots__ = ("_nanos",)

    def __init__(self, epoch_nanos: Callable[[], int] = time.time_ns) -> None:
        """``epoch_nanos`` returns the epoch time in nanoseconds."""
        self._nanos = epoch_nanos

    @property
    def time_unit(self) -> ClusterTimeUnit:
        """The unit of :meth:`time`."""
        return self.TIME_UNIT

    def time(self) -> int:
        """Epoch time in :attr:`time_unit`."""
        return self._nanos() // _NANOS_PER[self.TIME_UNIT]

    def time_millis(self) -> int:
        """Epoch time in milliseconds."""
        return self._nanos() // 1_000_000

    def time_micros(self) -> int:
        """Epoch time in microseconds."""
        return self._nanos() // 1_000

    def time_nanos(self) -> int:
        """Epoch time in nanoseconds; for the millisecond clock the whole milliseconds, as Aeron's."""
        return self.time() * _NANOS_PER[self.TIME_UNIT]

    def convert_to_nanos(self, time: int) -> int:
        """A time in :attr:`time_unit` as nanoseconds."""
        return time * _NANOS_PER[self.TIME_UNIT]

    def __repr__(self) -> str:
        """The class name."""
        return f"{type(self).__name__}()"


class MillisecondClusterClock(_EpochClock):
    """Cluster time in milliseconds (Aeron's default)."""

    TIME_UNIT = ClusterTimeUnit.MILLIS
    __slots__ = ()


class MicrosecondClusterClock(_EpochClock):
    """Cluster time in microseconds."""

    TIME_UNIT = ClusterTimeUnit.MICROS
    __slots__ = ()


class NanosecondClusterClock(_EpochClock):
    """Cluster time in nanoseconds."""

    TIME_UNIT = ClusterTimeUnit.NANOS
    __slots__ = ()


_BY_NAME: dict[str, type[_EpochClock]] = {
    "io.aeron.cluster.MillisecondClusterClock": MillisecondClusterClock,
    "io.aeron.cluster.MicrosecondClusterClock": MicrosecondClusterClock,
    "io.aeron.cluster.NanosecondClusterClock": NanosecondClusterClock,
    "MillisecondClusterClock": MillisecondClusterClock,
    "MicrosecondClusterClock": MicrosecondClusterClock,
    "NanosecondClusterClock": NanosecondClusterClock,
}


def cluster_clock_from_name(name: str | None) -> Any:
    """The clock ``aeron.cluster.clock`` names: Aeron's class name or its short name (empty: milliseconds), or
    ``package.module:name`` of a clock object, class or factory (ConfigurationError otherwise)."""
    text = (name or "").strip()
    if not text:
        return MillisecondClusterClock()
    if text in _BY_NAME:
        return _BY_NAME[text]()
    module_name, sep, attr = text.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigurationError(f"failed to instantiate ClusterClock {text}: expected one of "
                                 f"{sorted(set(_BY_NAME))} or package.module:name")
    try:
        found: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError) as ex:
        raise ConfigurationError(f"failed to instantiate ClusterClock {text}: {ex}") from None
    clock = found() if isinstance(found, type) or not hasattr(found, "time_unit") else found
    if not isinstance(clock, ClusterClock):
        raise ConfigurationError(f"failed to instantiate ClusterClock {text}: {clock!r} is not a ClusterClock")
    return clock
