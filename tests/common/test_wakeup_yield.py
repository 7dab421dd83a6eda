# SPDX-License-Identifier: Apache-2.0
"""A futex waiter that yields before it sleeps (aeron._core.wakeup.Waiter.wait's ``yield_ns``): a writer ends the
yield phase by its CAS alone, the phase ends by its time (then the futex wait goes on) or by the wait's own
timeout, and a yield that finds another process on the CPU holds the next phases off."""
import os
import subprocess
import sys
import threading
import time

import pytest

from aeron._core import wakeup as wk
from aeron.common.errors import ConfigurationError, IllegalStateError
from aeron.common.wakeup import WakeupIdleStrategy, new_waiter, stream_bit

LONG_NS = 10_000_000_000        # a wait that must end by a wake-up ends long before this


def _until(predicate, seconds=10.0):
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.0002)


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
        waiter.prepare()
        thread, result = _wait_in_thread(waiter, LONG_NS, LONG_NS)
        try:
            _until(lambda: board.slot_state(waiter.index)[0] == wk.YIELDING)
            assert board.parked_count == 1              # a yielding sleeper counts as parked: writers look for it
            board.signal(stream_bit(8))                 # not its bits
            assert board.slot_state(waiter.index)[0] == wk.YIELDING and board.wakeups_sent == 0
            board.signal(stream_bit(7))
        finally:
            thread.join(10)
        assert not thread.is_alive() and result["woken"] is True
        assert board.wakeups_sent == 1
        assert (waiter.yield_phases, waiter.yield_wakeups, waiter.wakeups, waiter.timeouts) == (1, 1, 1, 0)
        assert board.slot_state(waiter.index)[0] == wk.AWAKE and board.parked_count == 0
    finally:
        waiter.close()


def test_a_yield_phase_that_runs_its_time_out_sleeps_on_the_futex(board):
    waiter = new_waiter(board, stream_bit(7), futex=True)
    try:
        waiter.prepare()
        thread, result = _wait_in_thread(waiter, LONG_NS, 2_000_000)
        try:
            _until(lambda: waiter.yield_phases == 1 or board.slot_state(waiter.index)[0] == wk.YIELDING)
            _until(lambda: board.slot_state(waiter.index)[0] == wk.PARKED)     # the phase is over: asleep
            board.signal(stream_bit(7))                                         # CAS and FUTEX_WAKE
        finally:
            thread.join(10)
        assert not thread.is_alive() and result["woken"] is True
        # ended by its time, or by a long yield when other processes keep this machine's CPUs busy
        assert waiter.yield_phases == 1 and waiter.yields_timed_out + waiter.yields_contended == 1
        assert (waiter.yield_wakeups, waiter.wakeups) == (0, 1)
        assert board.parked_count == 0
    finally:
        waiter.close()


def test_the_waits_timeout_bounds_its_yield_phase(board):
    waiter = new_waiter(board, stream_bit(7), futex=True)
    try:
        waiter.prepare()
        start = time.monotonic()
        assert waiter.wait(3_000_000, None, LONG_NS) is False
        assert time.monotonic() - start < 5
        assert (waiter.yield_phases, waiter.yields_timed_out + waiter.yields_contended, waiter.timeouts) == (1, 1, 1)
        assert board.slot_state(waiter.index)[0] == wk.AWAKE and board.parked_count == 0
        waiter.prepare()
        board.signal(stream_bit(7))                 # before the wait: no phase, the wait returns at once
        assert waiter.wait(LONG_NS, None, LONG_NS) is True and waiter.yield_phases == 1
    finally:
        waiter.close()


def test_only_a_futex_waiter_yields(board):
    waiter = new_waiter(board, stream_bit(7))
    try:
        waiter.prepare()
        with pytest.raises(IllegalStateError):
            waiter.wait(1_000_000, None, 1_000)
        waiter.cancel()
        with pytest.raises(ConfigurationError):
            WakeupIdleStrategy(yield_ns=1_000).bind(waiter)
    finally:
        waiter.close()
    with pytest.raises(ConfigurationError):
        WakeupIdleStrategy(yield_ns=-1)


_HOG = """
import os, sys
os.sched_setaffinity(0, {int(sys.argv[1])})
print("hogging", flush=True)
while True:
    pass
"""


def _phase(waiter, yield_ns=20_000_000):
    waiter.prepare()
    return waiter.wait(30_000_000, None, yield_ns)


def _hog(cpu):
    hog = subprocess.Popen([sys.executable, "-c", _HOG, str(cpu)], stdout=subprocess.PIPE, text=True)
    assert hog.stdout.readline().strip() == "hogging"
    time.sleep(0.05)
    return hog


def _kill(hog):
    hog.kill()
    hog.wait()
    hog.stdout.close()


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs sched_setaffinity")
def test_a_yield_that_finds_another_process_on_the_cpu_holds_the_next_phases_off(board):
    cpu = min(os.sched_getaffinity(0))
    mask = os.sched_getaffinity(0)
    waiter = new_waiter(board, stream_bit(7), futex=True)
    result = {}

    def on_the_hogs_cpu():
        os.sched_setaffinity(0, {cpu})          # this thread only
        hog = _hog(cpu)
        try:
            _phase(waiter)
            result["first"] = (waiter.yields_contended, waiter.yield_holdoff_ns)
            before = waiter.yield_phases
            _phase(waiter)                          # held off: no phase at all
            result["held_off"] = waiter.yield_phases - before
            time.sleep(wk.YIELD_HOLDOFF_MIN_NS / 1e9 + 0.02)
            _phase(waiter)                          # contended again, the first phase after the hold-off: doubled
            result["again"] = (waiter.yields_contended, waiter.yield_holdoff_ns)
        finally:
            _kill(hog)
        time.sleep(2 * wk.YIELD_HOLDOFF_MIN_NS / 1e9 + 0.02)
        # a phase that cannot be contended: the wait's own timeout of 0 leaves it no time to yield
        phases, contended = waiter.yield_phases, waiter.yields_contended
        waiter.prepare()
        waiter.wait(0, None, 1_000)
        result["quiet"] = (waiter.yield_phases - phases, waiter.yields_contended - contended)
        hog = _hog(cpu)
        try:
            _phase(waiter)                          # contended after a phase that was not: the shortest hold-off
            result["reset"] = waiter.yield_holdoff_ns
        finally:
            _kill(hog)

    try:
        thread = threading.Thread(target=on_the_hogs_cpu)
        thread.start()
        thread.join(30)
        assert not thread.is_alive()
        assert result["first"] == (1, wk.YIELD_HOLDOFF_MIN_NS)
        assert result["held_off"] == 0
        assert result["again"] == (2, 2 * wk.YIELD_HOLDOFF_MIN_NS)
        assert result["quiet"] == (1, 0)
        assert result["reset"] == wk.YIELD_HOLDOFF_MIN_NS
        assert board.parked_count == 0
    finally:
        os.sched_setaffinity(0, mask)
        waiter.close()


_YIELDING_SLEEPER = """
import sys
from aeron.common.wakeup import open_board, stream_bit, new_waiter
waiter = new_waiter(open_board(sys.argv[1]), stream_bit(3), futex=True)
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
            _until(lambda: board.slot_state(index)[0] == wk.YIELDING)
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


def test_the_strategy_yields_in_the_first_park_after_work_only():
    waiter = FakeFutexWaiter()
    idle = WakeupIdleStrategy(0, 0, 1000, 4000, spin_ns=0, yield_ns=50_000, waiter=waiter)
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
    assert WakeupIdleStrategy(yield_ns=0, waiter=FakeFutexWaiter()).yield_ns == 0


def test_a_writer_that_saw_the_slot_yielding_still_wakes_it_once_it_has_gone_to_sleep(board):
    """The writer read "yielding", then the sleeper's yield time ran out and it went to parked before the writer's
    CAS: the CAS fails, and the writer must look again and wake the parked sleeper, not give up (a lost wake-up:
    asleep until its timeout)."""
    waiter = new_waiter(board, stream_bit(7), futex=True)
    try:
        waiter.prepare()
        thread, result = _wait_in_thread(waiter, LONG_NS, 0)     # asleep in FUTEX_WAIT, the slot PARKED
        try:
            _until(lambda: board.slot_state(waiter.index)[0] == wk.PARKED)
            time.sleep(0.05)
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


def test_the_strategy_yields_only_while_every_writer_signals():
    """On aeronmd, or with an official client about (the driver's ALL_SIGNAL is 0), nobody would end a yield but its
    time: the park sleeps at once, as before."""
    all_signal = [False]
    waiter = FakeFutexWaiter()
    idle = WakeupIdleStrategy(0, 0, 1000, 4000, spin_ns=0, yield_ns=50_000, quiet_park_ns=16_000)
    idle.bind(waiter, quiet=lambda cap: 100_000 if all_signal[0] else cap)
    for signalled in (False, True, False):
        all_signal[0] = signalled
        idle.idle(1)
        idle.idle(0)            # prepare
        idle.idle(0)            # the park
    assert [call[1] for call in waiter.calls if isinstance(call, tuple)] == [0, 50_000, 0]
