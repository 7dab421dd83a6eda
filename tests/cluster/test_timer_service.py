# SPDX-License-Identifier: Apache-2.0
"""The consensus module's timer services: the wheel and the priority heap, as Aeron's TimerService tests check
them (scheduling, rescheduling, cancelling, polling limits, a handler that refuses, snapshots)."""
import pytest

from aeron._core.codecs.cluster import ClusterTimeUnit
from aeron.cluster.timer_service import (
    POLL_LIMIT,
    DeadlineTimerWheel,
    PriorityHeapTimerService,
    PriorityHeapTimerServiceSupplier,
    WheelTimerService,
    WheelTimerServiceSupplier,
    find_next_positive_power_of_two,
    timer_service_supplier_from_name,
)
from aeron.common.errors import ConfigurationError, InvalidArgumentError


class Recorder:
    def __init__(self, refuse=()):
        self.fired = []
        self.refuse = set(refuse)

    def __call__(self, correlation_id):
        if correlation_id in self.refuse:
            return False
        self.fired.append(correlation_id)
        return True


def wheel(handler):
    return WheelTimerService(handler, 0, 8, 128)


def heap(handler):
    return PriorityHeapTimerService(handler)


SERVICES = [pytest.param(wheel, id="wheel"), pytest.param(heap, id="heap")]


@pytest.mark.parametrize("make", SERVICES)
def test_timers_fire_at_their_deadline_and_not_before(make):
    fired = Recorder()
    service = make(fired)
    service.schedule_timer_for_correlation_id(1, 100)
    service.schedule_timer_for_correlation_id(2, 300)
    assert service.poll(50) == 0
    assert service.poll(150) == 1
    assert fired.fired == [1]
    assert service.poll(400) == 1
    assert fired.fired == [1, 2]
    assert service.poll(1000) == 0


@pytest.mark.parametrize("make", SERVICES)
def test_rescheduling_replaces_the_deadline(make):
    fired = Recorder()
    service = make(fired)
    service.schedule_timer_for_correlation_id(7, 100)
    service.schedule_timer_for_correlation_id(7, 500)
    assert service.poll(200) == 0
    assert service.poll(600) == 1
    assert fired.fired == [7]
    service.schedule_timer_for_correlation_id(8, 900)
    service.schedule_timer_for_correlation_id(8, 700)
    assert service.poll(750) == 1
    assert fired.fired == [7, 8]


@pytest.mark.parametrize("make", SERVICES)
def test_cancel(make):
    fired = Recorder()
    service = make(fired)
    service.schedule_timer_for_correlation_id(1, 100)
    service.schedule_timer_for_correlation_id(2, 100)
    assert service.cancel_timer_by_correlation_id(1)
    assert not service.cancel_timer_by_correlation_id(1)
    assert not service.cancel_timer_by_correlation_id(99)
    assert service.poll(200) == 1
    assert fired.fired == [2]


@pytest.mark.parametrize("make", SERVICES)
def test_a_refused_timer_stays_and_fires_later(make):
    fired = Recorder(refuse={1})
    service = make(fired)
    service.schedule_timer_for_correlation_id(1, 100)
    assert service.poll(200) == 0
    fired.refuse.clear()
    assert service.poll(200) == 1
    assert fired.fired == [1]


@pytest.mark.parametrize("make", SERVICES)
def test_poll_expires_at_most_the_limit(make):
    fired = Recorder()
    service = make(fired)
    for i in range(POLL_LIMIT + 5):
        service.schedule_timer_for_correlation_id(i, 10)
    first = service.poll(20)
    assert first == POLL_LIMIT
    assert service.poll(20) + first == POLL_LIMIT + 5
    assert sorted(fired.fired) == list(range(POLL_LIMIT + 5))


@pytest.mark.parametrize("make", SERVICES)
def test_snapshot_lists_every_timer(make):
    service = make(Recorder())
    for i in range(50):
        service.schedule_timer_for_correlation_id(i, 1000 + 3 * i)
    service.cancel_timer_by_correlation_id(10)
    taken = {}
    service.snapshot(lambda correlation_id, deadline: taken.__setitem__(correlation_id, deadline))
    assert taken == {i: 1000 + 3 * i for i in range(50) if i != 10}


def test_heap_fires_in_deadline_order_ties_in_scheduling_order():
    fired = Recorder()
    service = heap(fired)
    deadlines = [50, 10, 40, 10, 30, 20, 20]
    for i, deadline in enumerate(deadlines):
        service.schedule_timer_for_correlation_id(i, deadline)
    assert service.poll(100) == len(deadlines)
    assert [deadlines[i] for i in fired.fired] == sorted(deadlines)


def test_heap_stays_a_heap_through_cancels_and_moves():
    fired = Recorder()
    service = heap(fired)
    for i in range(100):
        service.schedule_timer_for_correlation_id(i, (i * 37) % 101)
    for i in range(0, 100, 3):
        service.cancel_timer_by_correlation_id(i)
    for i in range(1, 100, 7):
        service.schedule_timer_for_correlation_id(i, 200 - i)
    expected = {i: (200 - i if i % 7 == 1 else (i * 37) % 101) for i in range(100) if i % 3 or i % 7 == 1}
    while service.poll(1000):
        pass
    assert sorted(fired.fired, key=lambda c: (expected[c],)) == fired.fired
    assert sorted(fired.fired) == sorted(expected)


def test_wheel_grows_a_spoke_past_its_allocation():
    fired = Recorder()
    service = wheel(fired)
    for i in range(DeadlineTimerWheel.INITIAL_TICK_ALLOCATION * 3):
        service.schedule_timer_for_correlation_id(i, 16)
    assert service.size == DeadlineTimerWheel.INITIAL_TICK_ALLOCATION * 3
    total = 0
    while True:
        expired = service.poll(100)
        if not expired:
            break
        total += expired
    assert total == DeadlineTimerWheel.INITIAL_TICK_ALLOCATION * 3
    assert service.size == 0


def test_wheel_current_time_moves_the_tick_forward():
    fired = Recorder()
    service = WheelTimerService(fired, 0, 8, 16)
    service.current_time(1_000_000)
    service.schedule_timer_for_correlation_id(1, 500)        # in the past: due at once
    assert service.poll(1_000_000) == 1


def test_wheel_rejects_settings_that_are_not_powers_of_two():
    with pytest.raises(InvalidArgumentError):
        WheelTimerService(Recorder(), 0, 8, 100)
    with pytest.raises(InvalidArgumentError):
        WheelTimerService(Recorder(), 0, 10, 128)


def test_suppliers_convert_to_the_cluster_time_unit():
    supplier = timer_service_supplier_from_name(None, ClusterTimeUnit.MILLIS, 8_000_000, 128)
    assert isinstance(supplier, WheelTimerServiceSupplier)
    service = supplier.new_instance(ClusterTimeUnit.MILLIS, Recorder())
    assert service.wheel.tick_resolution == 8
    nanos = timer_service_supplier_from_name("io.aeron.cluster.WheelTimerServiceSupplier", ClusterTimeUnit.NANOS,
                                             8_000_000, 128).new_instance(ClusterTimeUnit.NANOS, Recorder())
    assert nanos.wheel.tick_resolution == find_next_positive_power_of_two(8_000_000) == 8_388_608
    heap_supplier = timer_service_supplier_from_name("io.aeron.cluster.PriorityHeapTimerServiceSupplier",
                                                     ClusterTimeUnit.MILLIS, 8_000_000, 128)
    assert isinstance(heap_supplier, PriorityHeapTimerServiceSupplier)
    with pytest.raises(ConfigurationError, match="invalid TimerServiceSupplier"):
        timer_service_supplier_from_name("com.example.Timers", ClusterTimeUnit.MILLIS, 8_000_000, 128)
