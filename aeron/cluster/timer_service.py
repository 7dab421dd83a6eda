# SPDX-License-Identifier: Apache-2.0
"""The consensus module's timers (Aeron's ``TimerService``, ``WheelTimerService``, ``PriorityHeapTimerService``).

Services schedule timers by correlation id and absolute deadline in cluster time (``ScheduleTimer``); only the
leader polls them, and appends a ``TimerEvent`` to the log for each one that expires. A timer handler that returns
False (the log is back pressured) keeps the timer, which fires again on a later poll.

``WheelTimerService`` (the default, ``aeron.cluster.timer.service.supplier`` =
``io.aeron.cluster.WheelTimerServiceSupplier``) is Agrona's ``DeadlineTimerWheel``: O(1) schedule and cancel, with
deadlines rounded to the tick (8 ms by default, as a power of two in the cluster's time unit).
``PriorityHeapTimerService`` (``io.aeron.cluster.PriorityHeapTimerServiceSupplier``) is a binary heap that fires in
deadline order, ties in scheduling order.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from aeron._core.codecs.cluster import ClusterTimeUnit
from aeron.cluster.cluster_clocks import convert
from aeron.common.errors import ConfigurationError, IllegalStateError, InvalidArgumentError

__all__ = ["POLL_LIMIT", "DeadlineTimerWheel", "PriorityHeapTimerService", "PriorityHeapTimerServiceSupplier",
           "TimerService", "WheelTimerService", "WheelTimerServiceSupplier", "find_next_positive_power_of_two",
           "timer_service_supplier_from_name"]

POLL_LIMIT = 20
"""At most this many timers expire in one ``poll`` (Aeron's ``TimerService.POLL_LIMIT``)."""

NULL_DEADLINE = (1 << 63) - 1
_NULL_VALUE = -1

TimerHandler = Callable[[int], bool]
"""``on_timer_event(correlation_id) -> bool``: True when the expiry was handled, False to keep the timer."""


class TimerService(Protocol):
    """What the consensus module needs of a timer service."""

    def poll(self, now: int) -> int:
        """Expire the timers due at ``now`` (cluster time), at most :data:`POLL_LIMIT`; returns how many."""

    def schedule_timer_for_correlation_id(self, correlation_id: int, deadline: int) -> None:
        """Schedule, or move, the timer of ``correlation_id``."""

    def cancel_timer_by_correlation_id(self, correlation_id: int) -> bool:
        """Cancel the timer of ``correlation_id``; whether there was one."""

    def snapshot(self, snapshot_taker: Callable[[int, int], Any]) -> None:
        """Call ``snapshot_taker(correlation_id, deadline)`` for every scheduled timer."""

    def current_time(self, now: int) -> None:
        """Tell the service the current cluster time (a new leader's timers start from it)."""


def find_next_positive_power_of_two(value: int) -> int:
    """The smallest power of two >= ``value`` (1 for values below 2), as Agrona's ``BitUtil``."""
    return 1 if value <= 1 else 1 << (value - 1).bit_length()


def _is_power_of_two(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


def _trailing_zeros(value: int) -> int:
    return (value & -value).bit_length() - 1


class DeadlineTimerWheel:
    """Agrona's ``DeadlineTimerWheel``: ``ticks_per_wheel`` spokes of ``tick_resolution`` each, every spoke an array of
    deadlines that doubles when full. A timer id is ``(spoke << 32) | slot``. Times are in one unit throughout
    (the cluster's)."""

    INITIAL_TICK_ALLOCATION = 16

    def __init__(self, start_time: int, tick_resolution: int, ticks_per_wheel: int,
                 initial_tick_allocation: int = INITIAL_TICK_ALLOCATION) -> None:
        """InvalidArgumentError unless ``ticks_per_wheel``, ``tick_resolution`` and the allocation are powers of 2."""
        if not _is_power_of_two(ticks_per_wheel):
            raise InvalidArgumentError(f"ticks per wheel must be a power of 2: {ticks_per_wheel}")
        if not _is_power_of_two(tick_resolution):
            raise InvalidArgumentError(f"tick resolution must be a power of 2: {tick_resolution}")
        if not _is_power_of_two(initial_tick_allocation):
            raise InvalidArgumentError(f"tick allocation must be a power of 2: {initial_tick_allocation}")
        self.ticks_per_wheel = ticks_per_wheel
        self.tick_resolution = tick_resolution
        self.start_time = start_time
        self.timer_count = 0
        self._tick_mask = ticks_per_wheel - 1
        self._resolution_bits_to_shift = _trailing_zeros(tick_resolution)
        self._tick_allocation = initial_tick_allocation
        self._allocation_bits_to_shift = _trailing_zeros(initial_tick_allocation)
        self._current_tick = 0
        self._poll_index = 0
        self._wheel = [NULL_DEADLINE] * (ticks_per_wheel * initial_tick_allocation)

    def reset_start_time(self, start_time: int) -> None:
        """Start again from ``start_time`` (IllegalStateError while timers are scheduled)."""
        if self.timer_count > 0:
            raise IllegalStateError("can not reset startTime with active timers")
        self.start_time = start_time
        self._current_tick = 0
        self._poll_index = 0

    def current_tick_time(self) -> int:
        """The time at the end of the current tick."""
        return ((self._current_tick + 1) << self._resolution_bits_to_shift) + self.start_time

    def set_current_tick_time(self, now: int) -> None:
        """Move the current tick forward to ``now`` (never back)."""
        self._current_tick = max((now - self.start_time) >> self._resolution_bits_to_shift, self._current_tick)

    def clear(self) -> None:
        """Drop every timer."""
        self._wheel = [NULL_DEADLINE] * len(self._wheel)
        self.timer_count = 0

    def schedule_timer(self, deadline: int) -> int:
        """Schedule a timer for ``deadline``; returns its id."""
        deadline_tick = max((deadline - self.start_time) >> self._resolution_bits_to_shift, self._current_tick)
        spoke_index = deadline_tick & self._tick_mask
        tick_start_index = spoke_index << self._allocation_bits_to_shift
        wheel = self._wheel
        for i in range(self._tick_allocation):
            if wheel[tick_start_index + i] == NULL_DEADLINE:
                wheel[tick_start_index + i] = deadline
                self.timer_count += 1
                return (spoke_index << 32) | i
        return self._increase_capacity(deadline, spoke_index)

    def cancel_timer(self, timer_id: int) -> bool:
        """Cancel a timer by id; whether it was scheduled."""
        spoke_index = timer_id >> 32
        tick_index = timer_id & 0xFFFFFFFF
        if spoke_index < self.ticks_per_wheel and tick_index < self._tick_allocation:
            wheel_index = (spoke_index << self._allocation_bits_to_shift) + tick_index
            if self._wheel[wheel_index] != NULL_DEADLINE:
                self._wheel[wheel_index] = NULL_DEADLINE
                self.timer_count -= 1
                return True
        return False

    def poll(self, now: int, handler: Callable[[int, int], bool], expiry_limit: int) -> int:
        """Expire timers of the current tick due at ``now``, calling ``handler(now, timer_id)``: one that returns
        False is kept and stops the poll. Moves to the next tick once the current one is done."""
        expired = 0
        if self.timer_count > 0:
            spoke_index = self._current_tick & self._tick_mask
            length = self._tick_allocation
            wheel = self._wheel
            i = 0
            while i < length and expiry_limit > expired:
                wheel_index = (spoke_index << self._allocation_bits_to_shift) + self._poll_index
                deadline = wheel[wheel_index]
                if now >= deadline:
                    wheel[wheel_index] = NULL_DEADLINE
                    self.timer_count -= 1
                    expired += 1
                    if not handler(now, (spoke_index << 32) | self._poll_index):
                        wheel[wheel_index] = deadline
                        self.timer_count += 1
                        return expired - 1
                self._poll_index = 0 if self._poll_index + 1 >= length else self._poll_index + 1
                i += 1
            if expiry_limit > expired and now >= self.current_tick_time():
                self._current_tick += 1
                self._poll_index = 0
            elif self._poll_index >= self._tick_allocation:
                self._poll_index = 0
        elif now >= self.current_tick_time():
            self._current_tick += 1
            self._poll_index = 0
        return expired

    def for_each(self, consumer: Callable[[int, int], Any]) -> None:
        """``consumer(deadline, timer_id)`` for every scheduled timer."""
        remaining = self.timer_count
        if remaining == 0:
            return
        mask = self._tick_allocation - 1
        for i, deadline in enumerate(self._wheel):
            if deadline != NULL_DEADLINE:
                consumer(deadline, ((i >> self._allocation_bits_to_shift) << 32) | (i & mask))
                remaining -= 1
                if remaining <= 0:
                    return

    def deadline(self, timer_id: int) -> int:
        """The deadline of a timer id (``NULL_DEADLINE`` when not scheduled)."""
        spoke_index = timer_id >> 32
        tick_index = timer_id & 0xFFFFFFFF
        if spoke_index < self.ticks_per_wheel and tick_index < self._tick_allocation:
            return self._wheel[(spoke_index << self._allocation_bits_to_shift) + tick_index]
        return NULL_DEADLINE

    def _increase_capacity(self, deadline: int, spoke_index: int) -> int:
        new_allocation = self._tick_allocation << 1
        new_bits = _trailing_zeros(new_allocation)
        if self.ticks_per_wheel * new_allocation > (1 << 30):
            raise IllegalStateError(f"max capacity reached at tickAllocation={self._tick_allocation}")
        new_wheel = [NULL_DEADLINE] * (self.ticks_per_wheel * new_allocation)
        for j in range(self.ticks_per_wheel):
            old_start = j << self._allocation_bits_to_shift
            new_start = j << new_bits
            new_wheel[new_start:new_start + self._tick_allocation] = \
                self._wheel[old_start:old_start + self._tick_allocation]
        new_wheel[(spoke_index << new_bits) + self._tick_allocation] = deadline
        timer_id = (spoke_index << 32) | self._tick_allocation
        self.timer_count += 1
        self._tick_allocation = new_allocation
        self._allocation_bits_to_shift = new_bits
        self._wheel = new_wheel
        return timer_id


class WheelTimerService:
    """Timers on a :class:`DeadlineTimerWheel`, by correlation id (Aeron's ``WheelTimerService``)."""

    def __init__(self, timer_handler: TimerHandler, start_time: int, tick_resolution: int,
                 ticks_per_wheel: int) -> None:
        """``timer_handler(correlation_id) -> bool`` is called for each expired timer."""
        if timer_handler is None:
            raise InvalidArgumentError("timer handler must be given")
        self.wheel = DeadlineTimerWheel(start_time, tick_resolution, ticks_per_wheel)
        self._timer_handler = timer_handler
        self._timer_id_by_correlation_id: dict[int, int] = {}
        self._correlation_id_by_timer_id: dict[int, int] = {}
        self._is_abort = False

    def poll(self, now: int) -> int:
        """Expire the timers due at ``now``, tick by tick, until :data:`POLL_LIMIT` or the handler refuses one."""
        expired = 0
        self._is_abort = False
        wheel = self.wheel
        while True:
            expired += wheel.poll(now, self._on_timer_expiry, POLL_LIMIT)
            if self._is_abort or expired >= POLL_LIMIT or wheel.current_tick_time() >= now:
                return expired

    def _on_timer_expiry(self, now: int, timer_id: int) -> bool:
        correlation_id = self._correlation_id_by_timer_id[timer_id]
        if self._timer_handler(correlation_id):
            del self._correlation_id_by_timer_id[timer_id]
            del self._timer_id_by_correlation_id[correlation_id]
            return True
        self._is_abort = True
        return False

    def schedule_timer_for_correlation_id(self, correlation_id: int, deadline: int) -> None:
        """Schedule, or move, the timer of ``correlation_id``."""
        self.cancel_timer_by_correlation_id(correlation_id)
        timer_id = self.wheel.schedule_timer(deadline)
        self._timer_id_by_correlation_id[correlation_id] = timer_id
        self._correlation_id_by_timer_id[timer_id] = correlation_id

    def cancel_timer_by_correlation_id(self, correlation_id: int) -> bool:
        """Cancel the timer of ``correlation_id``; whether there was one."""
        timer_id = self._timer_id_by_correlation_id.pop(correlation_id, None)
        if timer_id is None:
            return False
        self.wheel.cancel_timer(timer_id)
        del self._correlation_id_by_timer_id[timer_id]
        return True

    def snapshot(self, snapshot_taker: Callable[[int, int], Any]) -> None:
        """``snapshot_taker(correlation_id, deadline)`` for every scheduled timer."""
        for correlation_id, timer_id in self._timer_id_by_correlation_id.items():
            snapshot_taker(correlation_id, self.wheel.deadline(timer_id))

    def current_time(self, now: int) -> None:
        """Move the wheel's current tick to ``now``."""
        self.wheel.set_current_tick_time(now)

    @property
    def size(self) -> int:
        """The number of scheduled timers."""
        return len(self._timer_id_by_correlation_id)


class _HeapTimer:
    __slots__ = ("correlation_id", "deadline", "index")

    def __init__(self, correlation_id: int, deadline: int, index: int) -> None:
        self.correlation_id = correlation_id
        self.deadline = deadline
        self.index = index

    def __repr__(self) -> str:
        return (f"PriorityHeapTimerService.Timer{{correlationId={self.correlation_id}, deadline={self.deadline}, "
                f"index={self.index}}}")


class PriorityHeapTimerService:
    """Timers in a binary min-heap on deadline (Aeron's ``PriorityHeapTimerService``): they fire in deadline order,
    and a rescheduled timer moves within the heap."""

    def __init__(self, timer_handler: TimerHandler) -> None:
        """``timer_handler(correlation_id) -> bool`` is called for each expired timer."""
        if timer_handler is None:
            raise InvalidArgumentError("TimerHandler must be given")
        self._timer_handler = timer_handler
        self._timer_by_correlation_id: dict[int, _HeapTimer] = {}
        self._timers: list[_HeapTimer] = []
        self._free_timers: list[_HeapTimer] = []

    def poll(self, now: int) -> int:
        """Fire the timers due at ``now`` in deadline order, at most :data:`POLL_LIMIT`; stops when the handler
        refuses one."""
        expired = 0
        timers = self._timers
        while timers and expired < POLL_LIMIT:
            timer = timers[0]
            if timer.deadline > now:
                break
            if not self._timer_handler(timer.correlation_id):
                break
            expired += 1
            last = timers.pop()
            if timers:
                self._shift_down(len(timers), 0, last)
            del self._timer_by_correlation_id[timer.correlation_id]
            self._add_to_free_list(timer)
        return expired

    def schedule_timer_for_correlation_id(self, correlation_id: int, deadline: int) -> None:
        """Schedule, or move, the timer of ``correlation_id``."""
        existing = self._timer_by_correlation_id.get(correlation_id)
        if existing is not None:
            if deadline < existing.deadline:
                existing.deadline = deadline
                self._shift_up(existing.index, existing)
            elif deadline > existing.deadline:
                existing.deadline = deadline
                self._shift_down(len(self._timers), existing.index, existing)
            return
        index = len(self._timers)
        if self._free_timers:
            timer = self._free_timers.pop()
            timer.correlation_id, timer.deadline, timer.index = correlation_id, deadline, index
        else:
            timer = _HeapTimer(correlation_id, deadline, index)
        self._timers.append(timer)
        self._timer_by_correlation_id[correlation_id] = timer
        self._shift_up(index, timer)

    def cancel_timer_by_correlation_id(self, correlation_id: int) -> bool:
        """Cancel the timer of ``correlation_id``; whether there was one."""
        removed = self._timer_by_correlation_id.pop(correlation_id, None)
        if removed is None:
            return False
        timers = self._timers
        last = timers.pop()
        last_index = len(timers)
        if last_index != removed.index:
            self._shift_down(last_index, removed.index, last)
            if timers[removed.index] is last:
                self._shift_up(removed.index, last)
        self._add_to_free_list(removed)
        return True

    def snapshot(self, snapshot_taker: Callable[[int, int], Any]) -> None:
        """``snapshot_taker(correlation_id, deadline)`` for every timer, in heap order."""
        for timer in self._timers:
            snapshot_taker(timer.correlation_id, timer.deadline)

    def current_time(self, now: int) -> None:
        """Nothing to do: the heap holds absolute deadlines."""

    def for_each(self, consumer: Callable[[Any], Any]) -> None:
        """``consumer(timer)`` for every timer (correlation_id, deadline, index), in heap order."""
        for timer in self._timers:
            consumer(timer)

    @property
    def size(self) -> int:
        """The number of scheduled timers."""
        return len(self._timers)

    def _shift_up(self, start_index: int, timer: _HeapTimer) -> None:
        timers = self._timers
        index = start_index
        while index > 0:
            prev_index = (index - 1) >> 1
            prev = timers[prev_index]
            if timer.deadline >= prev.deadline:
                break
            timers[index] = prev
            prev.index = index
            index = prev_index
        timers[index] = timer
        timer.index = index

    def _shift_down(self, size: int, start_index: int, timer: _HeapTimer) -> None:
        timers = self._timers
        half = size >> 1
        index = start_index
        while index < half:
            next_index = (index << 1) + 1
            right = next_index + 1
            next_timer = timers[next_index]
            if right < size and next_timer.deadline > timers[right].deadline:
                next_index = right
                next_timer = timers[next_index]
            if timer.deadline < next_timer.deadline:
                break
            timers[index] = next_timer
            next_timer.index = index
            index = next_index
        timers[index] = timer
        timer.index = index

    def _add_to_free_list(self, timer: _HeapTimer) -> None:
        timer.correlation_id = timer.deadline = timer.index = _NULL_VALUE
        self._free_timers.append(timer)


class WheelTimerServiceSupplier:
    """Makes :class:`WheelTimerService` s (Aeron's ``WheelTimerServiceSupplier``): ``start_time`` and
    ``tick_resolution`` in ``time_unit``, converted to the cluster's unit, the resolution rounded up to a power of 2."""

    def __init__(self, time_unit: ClusterTimeUnit, start_time: int, tick_resolution: int, ticks_per_wheel: int) -> None:
        """The wheel's settings in ``time_unit``."""
        self.time_unit = time_unit
        self.start_time = start_time
        self.tick_resolution = tick_resolution
        self.ticks_per_wheel = ticks_per_wheel

    def new_instance(self, cluster_time_unit: ClusterTimeUnit, timer_handler: TimerHandler) -> WheelTimerService:
        """A wheel in ``cluster_time_unit`` calling ``timer_handler``."""
        return WheelTimerService(
            timer_handler,
            convert(cluster_time_unit, self.start_time, self.time_unit),
            find_next_positive_power_of_two(convert(cluster_time_unit, self.tick_resolution, self.time_unit)),
            self.ticks_per_wheel)

    def __repr__(self) -> str:
        """The settings."""
        return (f"WheelTimerServiceSupplier(time_unit={self.time_unit.name}, start_time={self.start_time}, "
                f"tick_resolution={self.tick_resolution}, ticks_per_wheel={self.ticks_per_wheel})")


class PriorityHeapTimerServiceSupplier:
    """Makes :class:`PriorityHeapTimerService` s (Aeron's ``PriorityHeapTimerServiceSupplier``)."""

    def new_instance(self, cluster_time_unit: ClusterTimeUnit, timer_handler: TimerHandler) -> PriorityHeapTimerService:
        """A heap calling ``timer_handler``."""
        return PriorityHeapTimerService(timer_handler)

    def __repr__(self) -> str:
        """The class name."""
        return "PriorityHeapTimerServiceSupplier()"


WHEEL_SUPPLIER_NAME = "io.aeron.cluster.WheelTimerServiceSupplier"
PRIORITY_HEAP_SUPPLIER_NAME = "io.aeron.cluster.PriorityHeapTimerServiceSupplier"


def timer_service_supplier_from_name(name: str | None, cluster_time_unit: ClusterTimeUnit, wheel_tick_resolution_ns: int,
                                     ticks_per_wheel: int) -> Any:
    """The supplier ``aeron.cluster.timer.service.supplier`` names (``ConsensusModule.Context``'s
    ``getTimerServiceSupplierFromSystemProperty``): the wheel, in the cluster's unit with its tick resolution rounded
    up to a power of two, or the priority heap; ConfigurationError for anything else."""
    text = (name or WHEEL_SUPPLIER_NAME).strip()
    if text in (WHEEL_SUPPLIER_NAME, "WheelTimerServiceSupplier"):
        resolution = convert(cluster_time_unit, wheel_tick_resolution_ns, ClusterTimeUnit.NANOS)
        return WheelTimerServiceSupplier(cluster_time_unit, 0, find_next_positive_power_of_two(resolution),
                                         ticks_per_wheel)
    if text in (PRIORITY_HEAP_SUPPLIER_NAME, "PriorityHeapTimerServiceSupplier"):
        return PriorityHeapTimerServiceSupplier()
    raise ConfigurationError(f"invalid TimerServiceSupplier: {text}")
