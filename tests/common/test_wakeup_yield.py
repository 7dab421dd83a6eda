# SPDX-License-Identifier: Apache-2.0
"""A futex waiter that yields before it sleeps (aeron._core.wakeup.Waiter.wait's ``yield_ns``): a writer ends the
yield phase by its CAS alone, the phase ends by its time (then the futex wait goes on) or by the wait's own
timeout, and a yield that finds another process on the CPU holds the next phases off.

The phases read the time through the waiter's yield clock; the tests set one (:class:`YieldClock`) so that what
they assert (how long a phase ran, whether a yield was contended, when a hold-off ends) follows the test and not
the machine's load. One test keeps CLOCK_MONOTONIC and a real CPU burner, for the contention the clock sees."""
import os
import subprocess
import sys
import threading

import pytest

from aeron._core import wakeup as wk
from aeron.common.agent import PARKING
from aeron.common.errors import ConfigurationError, IllegalStateError
from aeron.common.wakeup import ClientWakeupIdleStrategy, WakeupIdleStrategy, new_waiter, stream_bit
from tests.common.conftest import asleep_on, slot_word_address
from tests.support import wait_for

LONG_NS = 10_000_000_000        # a wait that must end by a wake-up ends long before this
# a clock step just short of contention: a phase of a few milliseconds runs out in a few yields (each of which may
# take a time slice of its own on a busy machine)
UNCONTENDED_NS = wk.YIELD_CONTENDED_NS - 1


class YieldClock:
    """A waiter's yield clock that the test drives: each reading returns ``now`` and then moves it on by ``step``
    nanoseconds (0: time stands still, so a phase ends only by a writer; YIELD_CONTENDED_NS: every yield took as
    long as one behind another process)."""

    def __init__(self, now: int = 1_000_000_000, step: int = 0):
        self.now = now
        self.step = step

    def __call__(self) -> int:
        now = self.now
        self.now += self.step
        return now


def _state(board, waiter):
    return board.slot_state(waiter.index)[0]


def _wait_in_thread(waiter, timeout_ns, yield_ns):
    result = {}

    def run():
        result["woken"] = waiter.wait(timeout_ns, None, yield_ns)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, result


def test_a_writer_ends_the_yield_phase_by_its_cas_alone(board):
    waiter = new_waiter(board, stream_bit(7), futex=True)
    try:
        assert waiter.clock is None                     # CLOCK_MONOTONIC unless a test says otherwise
        waiter.clock = YieldClock()                     # time stands still: only a writer ends this phase
        waiter.prepare()
        thread, result = _wait_in_thread(waiter, LONG_NS, LONG_NS)
        try:
            wait_for(lambda: _state(board, waiter) == wk.YIELDING, what="the waiter yielding")
            assert board.parked_count == 1              # a yielding sleeper counts as parked: writers look for it
            board.signal(stream_bit(8))                 # not its bits
            assert _state(board, waiter) == wk.YIELDING and board.wakeups_sent == 0
            board.signal(stream_bit(7))
        finally:
            thread.join(10)
        assert not thread.is_alive() and result["woken"] is True
        assert board.wakeups_sent == 1
        assert (waiter.yield_phases, waiter.yield_wakeups, waiter.wakeups, waiter.timeouts) == (1, 1, 1, 0)
        assert (waiter.yields_timed_out, waiter.yields_contended) == (0, 0)
        assert _state(board, waiter) == wk.AWAKE and board.parked_count == 0
    finally:
        waiter.close()


def test_a_yield_phase_that_runs_its_time_out_sleeps_on_the_futex(board):
    waiter = new_waiter(board, stream_bit(7), futex=True)
    try:
        waiter.clock = YieldClock(step=UNCONTENDED_NS)  # the 2 ms phase runs out in 5 yields, uncontended
        waiter.prepare()
        thread, result = _wait_in_thread(waiter, LONG_NS, 2_000_000)
        try:
            wait_for(lambda: waiter.yield_phases == 1, what="the yield phase over")
            wait_for(lambda: _state(board, waiter) == wk.PARKED, what="the waiter asleep")
            board.signal(stream_bit(7))                 # CAS and FUTEX_WAKE
        finally:
            thread.join(10)
        assert not thread.is_alive() and result["woken"] is True
        assert (waiter.yield_phases, waiter.yields_timed_out, waiter.yields_contended) == (1, 1, 0)
        assert (waiter.yield_wakeups, waiter.wakeups, waiter.timeouts) == (0, 1, 0)
        assert board.parked_count == 0
    finally:
        waiter.close()


def test_the_waits_timeout_bounds_its_yield_phase(board):
    waiter = new_waiter(board, stream_bit(7), futex=True)
    try:
        waiter.clock = YieldClock(step=UNCONTENDED_NS)
        waiter.prepare()
        # 3 ms of the 10 s phase: the phase ends with the wait's time, and no time is left to sleep
        assert waiter.wait(3_000_000, None, LONG_NS) is False
        assert (waiter.yield_phases, waiter.yields_timed_out, waiter.yields_contended, waiter.timeouts) == \
            (1, 1, 0, 1)
        assert _state(board, waiter) == wk.AWAKE and board.parked_count == 0
        waiter.prepare()
        board.signal(stream_bit(7))                 # before the wait: no phase, the wait returns at once
        assert waiter.wait(LONG_NS, None, LONG_NS) is True and waiter.yield_phases == 1
    finally:
        waiter.close()


def test_only_a_futex_waiter_yields(board, strategy_class):
    waiter = new_waiter(board, stream_bit(7))
    try:
        waiter.prepare()
        with pytest.raises(IllegalStateError):
            waiter.wait(1_000_000, None, 1_000)
        waiter.cancel()
        with pytest.raises(ConfigurationError):
            strategy_class(yield_ns=1_000).bind(waiter)
        with pytest.raises(TypeError):
            waiter.clock = 5
    finally:
        waiter.close()
    with pytest.raises(ConfigurationError):
        strategy_class(yield_ns=-1)


def _phase(waiter, yield_ns=20_000_000):
    """One park with a yield phase; 1 ms of the wait's time (on the waiter's clock) is enough for it."""
    phases = waiter.yield_phases
    waiter.prepare()
    waiter.wait(1_000_000, None, yield_ns)
    return waiter.yield_phases - phases


def test_a_contended_yield_holds_the_next_phases_off_doubling_while_they_are_contended_too(board):
    clock = YieldClock(step=wk.YIELD_CONTENDED_NS)      # every yield took as long as one behind another process
    waiter = new_waiter(board, stream_bit(7), futex=True)
    try:
        waiter.clock = clock
        assert _phase(waiter) == 1
        assert (waiter.yields_contended, waiter.yield_holdoff_ns) == (1, wk.YIELD_HOLDOFF_MIN_NS)
        assert waiter.yield_resume_ns == clock.now - clock.step + wk.YIELD_HOLDOFF_MIN_NS
        clock.step = 0
        clock.now = waiter.yield_resume_ns - 1
        assert _phase(waiter) == 0                      # held off: no phase at all
        holdoffs = []
        clock.step = wk.YIELD_CONTENDED_NS
        while len(holdoffs) < 6:
            clock.now = waiter.yield_resume_ns          # the first phase after the hold-off: contended again
            assert _phase(waiter) == 1
            holdoffs.append(waiter.yield_holdoff_ns)
        assert holdoffs == [min(wk.YIELD_HOLDOFF_MIN_NS << n, wk.YIELD_HOLDOFF_MAX_NS) for n in range(1, 7)]
        assert holdoffs[-2:] == [wk.YIELD_HOLDOFF_MAX_NS] * 2
        assert waiter.yields_contended == 7 and waiter.yields_timed_out == 0
        # a phase that was not contended ...
        clock.now, clock.step = waiter.yield_resume_ns, UNCONTENDED_NS
        assert _phase(waiter, yield_ns=2 * UNCONTENDED_NS) == 1
        assert (waiter.yields_contended, waiter.yields_timed_out) == (7, 1)
        # ... so the next contended one holds off for the shortest time again
        clock.step = wk.YIELD_CONTENDED_NS
        assert _phase(waiter) == 1
        assert (waiter.yields_contended, waiter.yield_holdoff_ns) == (8, wk.YIELD_HOLDOFF_MIN_NS)
        assert board.parked_count == 0
    finally:
        waiter.close()


_HOG = """
import os, sys
os.sched_setaffinity(0, {int(sys.argv[1])})
print("hogging", flush=True)
while True:
    pass
"""


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs sched_setaffinity")
def test_on_clock_monotonic_a_yield_behind_another_process_on_the_cpu_is_contended(board):
    """The real clock: a process that keeps this thread's only CPU busy makes the yield take a time slice, however
    busy the rest of the machine is."""
    cpu = min(os.sched_getaffinity(0))
    waiter = new_waiter(board, stream_bit(7), futex=True)
    result = {}

    def on_the_hogs_cpu():
        os.sched_setaffinity(0, {cpu})          # this thread only
        hog = subprocess.Popen([sys.executable, "-c", _HOG, str(cpu)], stdout=subprocess.PIPE, text=True)
        try:
            if hog.stdout.readline().strip() == "hogging":
                result["phases"] = _phase(waiter)
        finally:
            hog.kill()
            hog.wait()
            hog.stdout.close()

    try:
        thread = threading.Thread(target=on_the_hogs_cpu)
        thread.start()
        thread.join(30)
        assert not thread.is_alive()
        assert result["phases"] == 1
        assert (waiter.yields_contended, waiter.yield_holdoff_ns) == (1, wk.YIELD_HOLDOFF_MIN_NS)
        assert board.parked_count == 0
    finally:
        waiter.close()


_YIELDING_SLEEPER = """
import sys
from aeron.common.wakeup import open_board, stream_bit, new_waiter
waiter = new_waiter(open_board(sys.argv[1]), stream_bit(3), futex=True)
waiter.clock = lambda: 0            # time stands still: it yields until it is killed
waiter.prepare()
print(waiter.index, flush=True)
waiter.wait(60_000_000_000, None, 60_000_000_000)
"""


def test_a_sleeper_that_died_yielding_is_taken_back(shm_dir, board):
    sleeper = subprocess.Popen([sys.executable, "-c", _YIELDING_SLEEPER, str(shm_dir)], stdout=subprocess.PIPE,
                               text=True)
    with sleeper:
        try:
            index = int(sleeper.stdout.readline())
            wait_for(lambda: board.slot_state(index)[0] == wk.YIELDING, what="the sleeper yielding")
        finally:
            sleeper.kill()
    assert board.parked_count == 1
    assert board.reclaim(index, wk.YIELDING) is True
    assert board.slot_state(index)[0] == wk.FREE and board.parked_count == 0


class FakeFutexWaiter:
    futex = True
    prepared = False

    def __init__(self, woken=False):
        self.calls = []
        self.woken = woken

    def prepare(self):
        self.calls.append("prepare")

    def cancel(self):
        self.calls.append("cancel")

    def wait(self, timeout_ns, fds=None, yield_ns=0):
        self.calls.append(("wait", yield_ns))
        return self.woken

    def close(self):
        pass


def test_the_strategy_yields_in_the_first_park_after_work_only(strategy_class):
    waiter = FakeFutexWaiter()
    idle = strategy_class(0, 0, 1000, 4000, spin_ns=0, yield_ns=50_000, waiter=waiter)
    for _ in range(4):
        idle.idle(0)            # no work yet: plain parks (each timed out, and the next cycle its re-check)
    idle.idle(3)                # a message
    for _ in range(4):
        idle.idle(0)            # prepare (the caller re-checks), then a park that yields, then plain ones
    waits = [call[1] for call in waiter.calls if isinstance(call, tuple)]
    assert waits == [0, 0, 0, 50_000, 0, 0]
    waiter.woken = True
    idle.idle(1)
    for _ in range(5):
        idle.idle(0)            # woken; then the next park (prepare, wait): no work came between, so no yield
    assert [call[1] for call in waiter.calls if isinstance(call, tuple)][6:] == [50_000, 0]
    assert strategy_class(yield_ns=0, waiter=FakeFutexWaiter()).yield_ns == 0


def test_a_client_with_no_spin_prepares_its_park_with_a_message_after_a_wake_up(strategy_class):
    """A client loop with no spin (network streams) told of a message that came straight after a wake-up (a request
    and its response) marks itself parked at once, and its next poll is the re-check, as the bare design's client does
    after its offer (perf/bare_wakeup.c): one poll and one call fewer before the park. Work found by that re-check (a
    stream) withdraws the park and the loop goes on as before, so that writers do not wake a loop that is not asleep;
    a loop that spins keeps its spin."""
    waiter = FakeFutexWaiter(woken=True)
    idle = strategy_class(0, 0, 1000, 4000, spin_ns=0, yield_ns=50_000, waiter=waiter)
    idle.idle(0)
    idle.idle(0)                # prepared, then parked and woken
    assert waiter.calls == ["prepare", ("wait", 0)]
    idle.idle(1)                # the message the wake-up was for
    assert waiter.calls[2:] == ["prepare"] and idle.state == PARKING
    idle.idle(0)                # the re-check found nothing: the park (yielding first: after work)
    assert waiter.calls[3:] == [("wait", 50_000)]
    idle.idle(1)
    idle.idle(2)                # the re-check found more: withdrawn, and not prepared again while messages come
    assert waiter.calls[4:] == ["prepare", "cancel"] and idle.state != PARKING
    idle.idle(3)
    assert waiter.calls[4:] == ["prepare", "cancel"]
    idle.idle(0)                # caught up: prepared, then the park
    idle.idle(0)
    assert waiter.calls[6:] == ["prepare", ("wait", 50_000)]
    spinning = FakeFutexWaiter(woken=True)
    now = [0]
    idle = strategy_class(0, 0, 1000, 4000, spin_ns=10_000, waiter=spinning, clock=lambda: now[0])
    idle.idle(0)                # the spin starts
    now[0] += 10_000
    idle.idle(0)                # over: prepared
    idle.idle(0)                # parked and woken
    idle.idle(1)                # the message: its spin comes first
    assert spinning.calls == ["prepare", ("wait", 0)] and idle.state != PARKING


def test_a_writer_that_saw_the_slot_yielding_still_wakes_it_once_it_has_gone_to_sleep(board):
    """The writer read "yielding", then the sleeper's yield time ran out and it went to parked before the writer's
    CAS: the CAS fails, and the writer must look again and wake the parked sleeper, not give up (a lost wake-up:
    asleep until its timeout)."""
    waiter = new_waiter(board, stream_bit(7), futex=True)
    try:
        waiter.prepare()
        thread, result = _wait_in_thread(waiter, LONG_NS, 0)     # asleep in FUTEX_WAIT, the slot PARKED
        try:
            word = slot_word_address(board, waiter.index)
            wait_for(lambda: asleep_on(word, thread.native_id), what="the waiter asleep in FUTEX_WAIT")
            assert _state(board, waiter) == wk.PARKED
            board.wake_slot_seen(waiter.index, wk.YIELDING)
        finally:
            thread.join(10)
        assert not thread.is_alive() and result["woken"] is True and waiter.timeouts == 0
        assert board.wakeups_sent == 1 and board.slot_state(waiter.index)[0] == wk.AWAKE
        board.wake_slot_seen(waiter.index, wk.PARKED)           # awake now: nothing to do, nothing sent
        assert board.wakeups_sent == 1 and board.slot_state(waiter.index)[0] == wk.AWAKE
        with pytest.raises(ValueError):
            board.wake_slot_seen(waiter.index, wk.AWAKE)
    finally:
        waiter.close()


def test_the_strategy_yields_only_while_every_writer_signals(strategy_class):
    """On aeronmd, or with an official client about (the driver's ALL_SIGNAL is 0), nobody would end a yield but its
    time: the park sleeps at once, as before."""
    all_signal = [False]
    waiter = FakeFutexWaiter()
    idle = strategy_class(0, 0, 1000, 4000, spin_ns=0, yield_ns=50_000, quiet_park_ns=16_000)
    idle.bind(waiter, quiet=lambda cap: 100_000 if all_signal[0] else cap)
    for signalled in (False, True, False):
        all_signal[0] = signalled
        idle.idle(1)
        idle.idle(0)            # prepare
        idle.idle(0)            # the park
    assert [call[1] for call in waiter.calls if isinstance(call, tuple)] == [0, 50_000, 0]


def test_a_clients_compiled_idle_parks_on_its_futex_until_a_writer_wakes_it(board):
    """ClientWakeupIdleStrategy bound to a real futex waiter with no timers (a client's poll loop): its idle is the
    compiled one, which drives the slot itself: prepared after a message that came from a wake-up, asleep in
    FUTEX_WAIT (the GIL released: this thread signals meanwhile) until a writer's signal, the bound doubling
    while parks time out and back to its start on work."""
    waiter = new_waiter(board, stream_bit(7), futex=True)
    idle = ClientWakeupIdleStrategy(0, 0, 1000, 1_000_000, spin_ns=0, yield_ns=0, quiet_park_ns=4_000_000)
    idle.bind(waiter, quiet=lambda cap: cap)
    try:
        assert idle.idle.__qualname__ == "WakeupIdleCore.idle"
        idle.idle(0)
        assert waiter.prepared and idle.state == PARKING and board.parked_count == 1
        idle.idle(0)                                    # no writer: timed out, and the next park prepared
        assert waiter.timeouts == 1 and waiter.prepared and idle.park_bound_ns == 2_000_000
        idle.idle(1)                                    # work withdraws the park, the bound back to its start
        assert not waiter.prepared and board.parked_count == 0 and idle.park_bound_ns == 1_000_000
        idle.park_bound_ns = idle.quiet_park_ns = LONG_NS   # a wait that must end by the writer
        idle.max_park_ns = LONG_NS
        idle.idle(0)
        assert waiter.prepared
        done = threading.Event()

        def loop():
            idle.idle(0)                                # asleep until the writer's signal
            done.set()

        thread = threading.Thread(target=loop)
        thread.start()
        try:
            word = slot_word_address(board, waiter.index)
            wait_for(lambda: asleep_on(word, thread.native_id), what="the loop asleep in FUTEX_WAIT")
            board.signal(stream_bit(7))
            assert done.wait(10)
        finally:
            thread.join(10)
        assert waiter.wakeups == 1 and idle.parks == 2 and not waiter.prepared and board.parked_count == 0
        idle.idle(1)                                    # the message the wake-up was for: the park prepared at once
        assert waiter.prepared and idle.state == PARKING
        idle.idle(2)                                    # the re-check found more: withdrawn
        assert not waiter.prepared and board.parked_count == 0
    finally:
        idle.close()
    assert waiter.is_closed and not idle.is_bound and idle.idle.__qualname__ == "WakeupIdleCore.idle"
    idle.idle(1)                                        # unbound: backoff's, through WakeupIdleStrategy.idle
    assert idle.state == 0


def test_a_strategy_closed_by_another_thread_mid_park_ends_that_park_unharmed(board, strategy_class):
    """A close on another thread (a client closing while a loop's thread parks): the park asleep on the futex ends at
    once (no writer, a bound of a minute), the slot is taken out of its park once (the parked count back to 0, the slot
    free, not written again by the woken thread), and the loop's next call is backoff's."""
    waiter = new_waiter(board, stream_bit(7), futex=True)
    idle = strategy_class(0, 0, 1000, 60_000_000_000, spin_ns=0, yield_ns=0, quiet_park_ns=60_000_000_000)
    idle.bind(waiter)
    errors = []

    def loop():
        try:
            idle.idle(0)
            idle.idle(0)                                # asleep until the close
            idle.idle(0)                                # unbound by then: backoff's first step
        except BaseException as exc:                    # pragma: no cover - what the test is about
            errors.append(exc)

    thread = threading.Thread(target=loop)
    thread.start()
    try:
        word = slot_word_address(board, waiter.index)
        wait_for(lambda: asleep_on(word, thread.native_id), what="the loop asleep in FUTEX_WAIT")
        idle.close()
    finally:
        thread.join(10)
    assert not thread.is_alive() and errors == [] and waiter.is_closed and not idle.is_bound
    assert board.parked_count == 0 and board.slot_state(waiter.index)[0] == wk.FREE
