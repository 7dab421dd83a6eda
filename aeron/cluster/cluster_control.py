# SPDX-License-Identifier: Apache-2.0
"""``ClusterControl``: the cluster control toggle (counter type 202) through which an operator asks the leader's
consensus module to SUSPEND, RESUME, SNAPSHOT, SHUTDOWN or ABORT, and the counters of a driver's cnc.dat mapped
for a tool (Aeron's ``ClusterControl``).

The toggle is NEUTRAL when the consensus module can take an action (INACTIVE on followers); a tool moves it from
NEUTRAL to the action with a compare-and-set, and the consensus module sets it back to NEUTRAL once done.
"""
from __future__ import annotations

import enum
import os
from typing import Any, Protocol

from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.cnc import CncFile
from aeron._core.counters import COUNTER_LENGTH, CountersReader
from aeron.cluster.service.cluster_counters import CLUSTER_CONTROL_TOGGLE_TYPE_ID, ClusterCounters
from aeron.common.constants import NULL_VALUE
from aeron.common.errors import ClusterError, CncVersionError

__all__ = ["CONTROL_TOGGLE_TYPE_ID", "CounterValue", "MappedCounters", "ToggleCounter", "ToggleState",
           "find_control_toggle", "map_counters"]

_INACTIVE, _NEUTRAL = 0, 1
CONTROL_TOGGLE_TYPE_ID = CLUSTER_CONTROL_TOGGLE_TYPE_ID


class ToggleCounter(Protocol):
    """What a toggle is read and written through: a client ``Counter`` (the consensus module's own), or a
    :class:`CounterValue` over a driver's counters (a tool's)."""

    @property
    def is_closed(self) -> bool:
        """True once the counter is closed."""

    def get(self) -> int:
        """The value."""

    def set(self, value: int) -> None:
        """Set the value."""


class CounterValue:
    """The value of one counter in a counters values buffer, with the compare-and-set a toggle needs (Agrona's
    ``AtomicCounter`` over ``CountersReader.valuesBuffer``)."""

    def __init__(self, values: AtomicBuffer, counter_id: int) -> None:
        """A view of ``counter_id``'s value in ``values``."""
        self.counter_id = counter_id
        self._values = values
        self._offset = counter_id * COUNTER_LENGTH

    @property
    def is_closed(self) -> bool:
        """True once the values buffer is unmapped."""
        return self._values.is_closed

    def get(self) -> int:
        """The value (volatile read)."""
        return self._values.get_i64_volatile(self._offset)

    def set(self, value: int) -> None:
        """Set the value (ordered write)."""
        self._values.put_i64_ordered(self._offset, value)

    def compare_and_set(self, expected: int, update: int) -> bool:
        """Set to ``update`` if it holds ``expected``; whether it did."""
        return self._values.compare_and_set_i64(self._offset, expected, update)


class ToggleStateMethods:
    """What ``ClusterControl.ToggleState`` and ``NodeControl.ToggleState`` share (their NEUTRAL and INACTIVE
    members are 1 and 0)."""

    @property
    def code(self) -> int:
        """The counter value of this state."""
        value: int = self.value    # type: ignore[attr-defined]
        return value

    def toggle(self, counter: Any) -> bool:
        """Move the toggle from NEUTRAL to this state (compare-and-set); whether it moved."""
        return bool(counter.compare_and_set(_NEUTRAL, self.code))

    @staticmethod
    def reset(counter: ToggleCounter) -> None:
        """Back to NEUTRAL: the action is done."""
        counter.set(_NEUTRAL)

    @staticmethod
    def activate(counter: ToggleCounter) -> None:
        """NEUTRAL: actions may be toggled (the leader)."""
        counter.set(_NEUTRAL)

    @staticmethod
    def deactivate(counter: ToggleCounter) -> None:
        """INACTIVE: no actions here (a follower)."""
        counter.set(_INACTIVE)

    @classmethod
    def get(cls, counter: ToggleCounter) -> Any:
        """The state the counter holds (ClusterError when closed or out of range)."""
        if counter.is_closed:
            raise ClusterError("counter is closed")
        value = counter.get()
        if not 0 <= value < len(cls):       # type: ignore[arg-type]
            raise ClusterError(f"invalid toggle value: {value}")
        return cls(value)                   # type: ignore[call-arg]


class ToggleState(ToggleStateMethods, enum.IntEnum):
    """``ClusterControl.ToggleState``."""

    INACTIVE = 0
    NEUTRAL = 1
    SUSPEND = 2
    RESUME = 3
    SNAPSHOT = 4
    SHUTDOWN = 5
    ABORT = 6
    STANDBY_SNAPSHOT = 7

    def toggle(self, counter: Any) -> bool:
        """Move the toggle from NEUTRAL to this state, or RESUME from SUSPEND (compare-and-set); whether it
        moved."""
        if self is ToggleState.RESUME and counter.get() == ToggleState.SUSPEND:
            return bool(counter.compare_and_set(ToggleState.SUSPEND.code, ToggleState.RESUME.code))
        return super().toggle(counter)


class MappedCounters:
    """The counters of a driver's cnc.dat, mapped by a tool (:func:`map_counters`); close to unmap."""

    def __init__(self, cnc: CncFile) -> None:
        """Use :func:`map_counters`."""
        self._cnc = cnc
        self.metadata = cnc.counters_metadata_buffer()
        self.values = cnc.counters_values_buffer()
        self.reader = CountersReader(self.metadata, self.values)

    def close(self) -> None:
        """Unmap."""
        self.metadata.close()
        self.values.close()
        self._cnc.close()

    def __enter__(self) -> MappedCounters:  # noqa: PYI034 (not meant to be subclassed)
        """The mapped counters."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Unmap them."""
        self.close()


def map_counters(cnc_file: str | os.PathLike[str]) -> MappedCounters:
    """Map the counters of ``cnc_file`` (a driver's cnc.dat), checking its version (CncVersionError)."""
    cnc = CncFile.map_existing(os.fspath(cnc_file))
    try:
        if (cnc.version >> 16) != 0:
            raise CncVersionError(f"CnC version not compatible: {cnc.version >> 16}.x ({cnc_file})")
        return MappedCounters(cnc)
    except BaseException:
        cnc.close()
        raise


def find_control_toggle(counters: CountersReader, values: AtomicBuffer, cluster_id: int,
                        type_id: int = CONTROL_TOGGLE_TYPE_ID) -> CounterValue | None:
    """The control toggle of ``cluster_id`` (``values`` is the counters values buffer), or None."""
    counter_id = ClusterCounters.find(counters, type_id, cluster_id)
    return None if counter_id == NULL_VALUE else CounterValue(values, counter_id)
