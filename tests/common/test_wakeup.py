# SPDX-License-Identifier: Apache-2.0
"""The wake-up board (aeron.common.wakeup, aeron._core.wakeup) and WakeupIdleStrategy: a parked waiter is woken by
a writer whose mask meets its own, never by others, and no wake-up is lost between "parked" and the wait."""
import os
import subprocess
import sys

import pytest

from aeron._core import wakeup as wk
from aeron.common.errors import ConfigurationError, IllegalStateError
from aeron.common.agent import PARKING, SPINNING, BackoffIdleStrategy, idle_strategy_from_name
from aeron.common.wakeup import (ALL_SIGNAL_OFFSET, ALL_STREAMS, CONDUCTOR, FULL_CYCLE_DEFER_PASSES, LONG_QUIET_PARK_NS,
                                 SENDER, SPIES, WAKEUP_FILE, ClientRegistry, WakeupIdleStrategy, new_waiter,
                                 open_board, stream_bit, streams_mask)
from tests.common.conftest import asleep_on
from tests.support import wait_for

LONG_NS = 10_000_000_000        # a wait that must end by a wake-up ends long before this


def test_a_fresh_board_has_the_documented_layout(shm_dir, board):
    data = (shm_dir / WAKEUP_FILE).read_bytes()
    assert len(data) == wk.FILE_LENGTH == wk.SLOTS_OFFSET + wk.SLOT_COUNT * wk.SLOT_LENGTH
    assert int.from_bytes(data[0:4], "little") == wk.MAGIC
    assert int.from_bytes(data[4:8], "little") == wk.VERSION
    assert board.header_ok() and board.parked_count == 0
    again = open_board(str(shm_dir))                # a client opens the same board
    assert again is not None and again.header_ok()
    again.close()


def test_a_board_of_another_layout_is_not_used(shm_dir):
    (shm_dir / WAKEUP_FILE).write_bytes(b"\x01" * wk.FILE_LENGTH)
    assert open_board(str(shm_dir)) is None
    assert open_board(str(shm_dir / "missing")) is None


def test_a_matching_signal_wakes_a_parked_waiter_and_others_do_not(board):
    waiter = new_waiter(board, stream_bit(7))
    try:
        waiter.prepare()
        assert board.parked_count == 1
        board.signal(stream_bit(8) | CONDUCTOR)          # not its bits: nothing sent
        assert board.wakeups_sent == 0
        assert waiter.wait(1_000_000) is False and waiter.timeouts == 1
        assert board.parked_count == 0
        waiter.prepare()
        board.signaller(stream_bit(7)).signal()         # a write that landed before the wait: not lost
        assert board.wakeups_sent == 1
        assert waiter.wait(LONG_NS) is True and waiter.wakeups == 1
        assert board.parked_count == 0
    finally:
        waiter.close()
    assert board.slot_state(waiter.index)[0] == wk.FREE


def test_signals_cost_nothing_while_nobody_is_parked(board):
    waiter = new_waiter(board, ALL_STREAMS)
    try:
        for _ in range(100):
            board.signal(ALL_STREAMS)
        assert board.wakeups_sent == 0
        waiter.prepare()
        waiter.cancel()             # the re-check found work: back to awake, nothing sent meanwhile
        board.signal(ALL_STREAMS)
        assert board.wakeups_sent == 0 and board.parked_count == 0
    finally:
        waiter.close()


def test_one_datagram_per_park_however_many_writers(board):
    waiter = new_waiter(board, stream_bit(1))
    try:
        waiter.prepare()
        for _ in range(10):
            board.signal(stream_bit(1))
        assert board.wakeups_sent == 1
        assert waiter.wait(LONG_NS) is True
        assert waiter.drain() == 0                       # the wait read its one datagram
    finally:
        waiter.close()


def test_a_readable_descriptor_ends_the_wait(board):
    import socket
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    waiter = new_waiter(board, 0)
    try:
        waiter.prepare()
        b.send(b"x")
        assert waiter.wait(LONG_NS, [a.fileno()]) is True
    finally:
        waiter.close()
        a.close()
        b.close()


def test_a_driver_waiter_woken_by_its_descriptor_alone_stays_parked(board):
    # our driver's waiters (stay_parked_on_fds): a datagram on its sockets ends the wait but not the park, so a
    # writer that writes while the thread reads that datagram still wakes its next wait
    import socket
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    waiter = new_waiter(board, CONDUCTOR)
    waiter.stay_parked_on_fds = True
    try:
        waiter.prepare()
        b.send(b"x")
        assert waiter.wait(LONG_NS, [a.fileno()]) is True and waiter.prepared
        a.recv(16)                                      # the duty cycle reads it ...
        board.signal(CONDUCTOR)                         # ... while a client writes a command: still parked, woken
        assert board.wakeups_sent == 1
        assert waiter.wait(LONG_NS, [a.fileno()]) is True and not waiter.prepared     # a wake-up ends the park
        waiter.prepare()
        assert waiter.wait(0, [a.fileno()]) is False and not waiter.prepared         # so does a timeout
    finally:
        waiter.close()
        a.close()
        b.close()


def test_a_futex_waiter_is_woken_by_a_matching_signal_only(shm_dir, board):
    waiter = new_waiter(board, stream_bit(7), futex=True)
    try:
        assert waiter.futex and waiter.fileno() == -1
        slot = wk.SLOTS_OFFSET + waiter.index * wk.SLOT_LENGTH
        data = (shm_dir / WAKEUP_FILE).read_bytes()
        assert int.from_bytes(data[slot + 24:slot + 28], "little") == wk.FUTEX
        waiter.prepare()
        board.signal(stream_bit(8) | CONDUCTOR)          # not its bits: nothing woken
        assert board.wakeups_sent == 0
        assert waiter.wait(1_000_000) is False and waiter.timeouts == 1 and board.parked_count == 0
        waiter.prepare()
        for _ in range(3):
            board.signal(stream_bit(7))                 # before the wait: the futex word is no longer PARKED
        assert board.wakeups_sent == 1
        assert waiter.wait(LONG_NS) is True and waiter.wakeups == 1
        assert board.parked_count == 0 and board.slot_state(waiter.index)[0] == wk.AWAKE
        waiter.prepare()
        board.signal(stream_bit(7))
        waiter.cancel()                                 # the re-check found work: nothing to drain
        assert board.slot_state(waiter.index)[0] == wk.AWAKE and board.parked_count == 0
        waiter.prepare()
        with pytest.raises(IllegalStateError):
            waiter.wait(LONG_NS, [0])                   # it waits on its futex and nothing else
        waiter.cancel()
    finally:
        waiter.close()
    assert board.slot_state(waiter.index)[0] == wk.FREE


_FUTEX_WAITER = """
import ctypes, sys, threading
from aeron._core import wakeup as wk
from aeron.common.wakeup import open_board, stream_bit, new_waiter
board = open_board(sys.argv[1])
waiter = new_waiter(board, stream_bit(5), futex=True)
view = ctypes.c_char.from_buffer(board.mapping)
word = ctypes.addressof(view) + wk.SLOTS_OFFSET + waiter.index * wk.SLOT_LENGTH
del view
waiter.prepare()
print(threading.get_native_id(), word, flush=True)
print(waiter.wait(10_000_000_000), waiter.wakeups, waiter.timeouts, flush=True)
"""


def test_a_futex_waiter_is_woken_by_a_writer_in_another_process(shm_dir, board):
    """The waiter sleeps in FUTEX_WAIT in its own process (not FUTEX_PRIVATE: the word is in a shared mapping) when
    this process's writer wakes it."""
    waiter = subprocess.Popen([sys.executable, "-c", _FUTEX_WAITER, str(shm_dir)], stdout=subprocess.PIPE, text=True)
    with waiter:
        try:
            tid, word = map(int, waiter.stdout.readline().split())
            wait_for(lambda: asleep_on(word, tid, waiter.pid), what="the other process asleep in FUTEX_WAIT")
            board.signal(stream_bit(5))
            assert board.wakeups_sent == 1
            assert waiter.communicate(timeout=30)[0].split() == ["True", "1", "0"]
        finally:
            waiter.kill()
    assert board.parked_count == 0


_FUTEX_SLEEPER = """
import sys
from aeron.common.wakeup import open_board, stream_bit, new_waiter
waiter = new_waiter(open_board(sys.argv[1]), stream_bit(3), futex=True)
waiter.prepare()
print(waiter.index, flush=True)
waiter.wait(60_000_000_000)
"""


def test_a_futex_waiter_whose_process_died_does_not_break_writers(shm_dir, board):
    sleeper = subprocess.Popen([sys.executable, "-c", _FUTEX_SLEEPER, str(shm_dir)], stdout=subprocess.PIPE,
                               text=True)
    with sleeper:
        try:
            index = int(sleeper.stdout.readline())
        finally:
            sleeper.kill()              # killed parked, in its futex wait or about to be
    assert board.slot_state(index)[0] == wk.PARKED and board.parked_count == 1
    board.signal(stream_bit(3))         # FUTEX_WAKE of a word nobody waits on any more: harmless
    assert board.wakeups_sent == 1 and board.slot_state(index)[0] == wk.WOKEN
    board.signal(stream_bit(3))         # not parked any more: nothing sent
    assert board.wakeups_sent == 1
    waiter = new_waiter(board, stream_bit(3), futex=True)      # the writers and the board go on as before
    try:
        waiter.prepare()
        board.signal(stream_bit(3))
        assert waiter.wait(LONG_NS) is True and board.wakeups_sent == 2
    finally:
        waiter.close()


def test_slots_of_dead_processes_are_taken_back(board):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    pid = int(dead.stdout)
    for _ in range(wk.SLOT_COUNT):
        assert board.claim(pid, ALL_STREAMS, 1) >= 0
    assert board.claim(os.getpid(), ALL_STREAMS, 2) == -1
    waiter = new_waiter(board, ALL_STREAMS)
    assert waiter is not None
    waiter.close()


def test_masks():
    assert stream_bit(1001) == 1 << (1001 % 59)
    assert stream_bit(-1) == 1 << 58
    assert streams_mask([1, 2]) == stream_bit(1) | stream_bit(2)
    assert streams_mask(None) == ALL_STREAMS | SPIES
    assert streams_mask([1], spies=True) == stream_bit(1) | SPIES
    assert not (ALL_STREAMS & (CONDUCTOR | SENDER | SPIES)) and SPIES == -(1 << 63)     # bit 63 of the int64


class FakeWaiter:
    prepared = False            # a wait ends awake

    def __init__(self):
        self.calls = []

    def prepare(self):
        self.calls.append("prepare")

    def cancel(self):
        self.calls.append("cancel")

    def wait(self, timeout_ns, fds=None):
        self.calls.append(("wait", timeout_ns, fds))
        return False

    def close(self):
        self.calls.append("close")


def test_wakeup_idle_strategy_spins_for_its_time_then_prepares_rechecks_and_waits(strategy_class):
    now = [0]
    waiter = FakeWaiter()
    idle = strategy_class(max_park_ns=5000, spin_ns=100, waiter=waiter, fds=lambda: [3],
                              clock=lambda: now[0])
    for _ in range(5):
        idle.idle(0)                                    # still within the spin time: returns at once
    assert waiter.calls == [] and idle.state != PARKING
    now[0] = 150
    idle.idle(0)
    assert waiter.calls == ["prepare"]                  # returns: the caller's next duty cycle re-checks
    idle.idle(0)
    assert waiter.calls == ["prepare", ("wait", 5000, [3]), "prepare"]   # timed out: the next cycle re-checks
    idle.idle(0)
    idle.idle(1)                                        # work after "prepare": cancelled, back to spinning
    assert waiter.calls[-2:] == ["prepare", "cancel"] and idle.state != PARKING
    idle.close()
    assert waiter.calls[-1] == "close" and not idle.is_bound


def test_a_spin_never_answered_is_given_up_and_taken_back_when_a_probe_is_answered(strategy_class):
    now = [0]
    waiter = FakeWaiter()
    idle = strategy_class(max_park_ns=5000, spin_ns=100, waiter=waiter, clock=lambda: now[0])

    def message_then_spin(answered):
        """A message, then the spin (its time passes) and either the next message within it or a park."""
        idle.idle(1)
        idle.idle(0)
        if answered:
            return                                      # the next message's idle(1) comes within the spin
        now[0] += 150
        idle.idle(0)                                    # the spin ran out: prepare
        idle.idle(0)                                    # the re-check found nothing: wait

    for _ in range(WakeupIdleStrategy.SPIN_GIVE_UP_MISSES):
        message_then_spin(False)
    assert idle.spin_misses == WakeupIdleStrategy.SPIN_GIVE_UP_MISSES and idle.spins_given_up == 0
    # given up: after the next message the first idle call prepares the park at once, no spin time passing
    idle.idle(1)
    calls = len(waiter.calls)
    idle.idle(0)
    assert waiter.calls[calls:] == ["prepare"] and idle.spins_given_up == 1
    idle.idle(0)
    for _ in range(WakeupIdleStrategy.SPIN_PROBE_EVERY - 2):
        idle.idle(1)
        idle.idle(0)
        idle.idle(0)
    assert idle.spins_given_up == WakeupIdleStrategy.SPIN_PROBE_EVERY - 1
    # one in SPIN_PROBE_EVERY spins again; answered, it takes the spin back
    message_then_spin(True)
    assert idle.spins_given_up == WakeupIdleStrategy.SPIN_PROBE_EVERY - 1
    idle.idle(1)
    assert idle.spin_misses == 0
    idle.idle(0)
    assert idle.state == SPINNING


def test_an_unbound_wakeup_strategy_is_backoff(strategy_class):
    sleeps = []
    idle = strategy_class(1, 1, 1000, 4000, yield_fn=lambda: None, sleep_fn=sleeps.append)
    for _ in range(8):
        idle.idle(0)
    assert sleeps == [1000, 2000, 4000, 4000]


def test_wakeup_by_name():
    idle = idle_strategy_from_name("wakeup")
    assert isinstance(idle, WakeupIdleStrategy) and isinstance(idle, BackoffIdleStrategy)
    assert (idle.spin_ns, idle.max_park_ns, idle.quiet_park_ns) == (10_000, 1_000_000, 16_000_000)
    idle = idle_strategy_from_name("wakeup", "20us-2ms")
    assert (idle.spin_ns, idle.max_park_ns) == (20_000, 2_000_000)
    idle = idle_strategy_from_name("wakeup", "5-0-1us-10ms")          # backoff's form: its unbound sleeps
    assert (idle.max_spins, idle.max_yields, idle.max_park_ns) == (5, 0, 10_000_000)
    with pytest.raises(ConfigurationError):
        idle_strategy_from_name("wakeup", "fast-1ms")


def test_the_agents_hold_no_wakeup_strategy_and_load_no_wakeup_module():
    # WakeupIdleStrategy is ours and lives beside the board it parks on; aeron.common.agent holds Agrona's strategies
    # and builds "wakeup" by name only when asked (the frame constants of aeron._core.logbuffer may load: channel
    # URIs check term lengths and MTUs against them)
    script = ("import sys, aeron.common.agent as agent\n"
              "print(hasattr(agent, 'WakeupIdleStrategy'), 'WakeupIdleStrategy' in agent.__all__,\n"
              "      sorted(m for m in sys.modules if m.startswith(('aeron._core.wakeup', 'aeron.common.wakeup'))))\n"
              "print(type(agent.idle_strategy_from_name('wakeup')).__module__)\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["False False []", "aeron.common.wakeup"]


def test_the_park_bound_grows_while_quiet_and_resets_on_work(strategy_class):
    waiter = FakeWaiter()
    idle = strategy_class(0, 0, 1000, 4000, spin_ns=0, quiet_park_ns=16000, waiter=waiter)
    waits = []
    for _ in range(20):
        idle.idle(0)
    waits = [call[1] for call in waiter.calls if isinstance(call, tuple)]
    assert waits[:4] == [4000, 8000, 16000, 16000]
    idle.idle(1)
    assert idle.park_bound_ns == 4000


def test_a_quiet_bound_lowered_below_the_bound_grown_so_far_takes_effect_at_the_next_park(strategy_class):
    waiter = FakeWaiter()
    limit = [16000]
    idle = strategy_class(0, 0, 1000, 1000, spin_ns=0, quiet_park_ns=16000)
    idle.bind(waiter, quiet=lambda ns: limit[0])
    for _ in range(12):
        idle.idle(0)

    def waits():
        return [call[1] for call in waiter.calls if isinstance(call, tuple)]
    assert waits()[-1] == 16000
    limit[0] = 1000                 # a driver's bound while an official client is connected: backoff's
    idle.idle(0)
    assert waits()[-1] == 1000 and idle.park_bound_ns == 1000
    idle.idle(0)
    assert waits()[-1] == 1000


class FakeTimers:
    """What our driver's SignallingAgent tells a wakeup strategy: was the cycle active, when is the next timer."""

    def __init__(self):
        self.active = True
        self.due_ns = 1 << 62

    def time_to_deadline_ns(self, far_ns):
        return min(far_ns, self.due_ns)


def test_timer_work_neither_spins_nor_resets_the_park_bound(strategy_class):
    waiter, timers = FakeWaiter(), FakeTimers()
    idle = strategy_class(0, 0, 1000, 4000, spin_ns=0, quiet_park_ns=16000, waiter=waiter)
    idle.bind(waiter, None, timers)
    for _ in range(10):
        idle.idle(0)
    assert idle.park_bound_ns == 16000
    timers.active = False                               # a heartbeat or a status message: housekeeping
    waiter.calls.clear()
    idle.idle(1)
    # the timed-out park had prepared the next one: this timer-only cycle was its re-check, so it parks at once
    # (no cancel, no second cycle), bound kept
    assert waiter.calls == [("wait", 16000, None), "prepare"] and idle.state == PARKING
    assert idle.park_bound_ns == 16000
    timers.active = True                                # data or a command: spin again, bound back to its start
    idle.idle(1)
    assert idle.park_bound_ns == 4000 and idle.state != PARKING
    assert waiter.calls[-1] == "cancel"


def test_a_park_that_stays_parked_makes_the_next_cycle_its_re_check(strategy_class):
    # a driver's waiter woken by one of its sockets stays parked: the cycle that reads the socket (a status message,
    # a heartbeat) is the re-check of the next park, which follows at once
    class StayingWaiter(FakeWaiter):
        def wait(self, timeout_ns, fds=None):
            self.calls.append(("wait", timeout_ns, fds))
            self.prepared = True
            return True

    waiter, timers = StayingWaiter(), FakeTimers()
    idle = strategy_class(0, 0, 1000, 4000, spin_ns=0, quiet_park_ns=16000)
    idle.bind(waiter, None, timers)
    idle.idle(0)
    idle.idle(0)
    assert [c if isinstance(c, str) else c[0] for c in waiter.calls] == ["prepare", "wait"]
    timers.active = False
    idle.idle(1)                                        # the socket's cycle: housekeeping only, parks again at once
    assert [c if isinstance(c, str) else c[0] for c in waiter.calls] == ["prepare", "wait", "wait"]
    assert idle.park_bound_ns == 4000                   # woken, not timed out: the bound did not grow


def test_timer_work_out_of_a_wake_up_prepares_a_park_first(strategy_class):
    waiter, timers = FakeWaiter(), FakeTimers()
    idle = strategy_class(0, 0, 1000, 4000, spin_ns=0, quiet_park_ns=16000)
    idle.bind(waiter, None, timers)
    timers.active = False
    idle.idle(1)                                        # not prepared before this cycle: it was no re-check
    assert waiter.calls == ["prepare"] and idle.state == PARKING
    idle.idle(0)                                        # the re-check found nothing: park
    assert waiter.calls[1][0] == "wait"


def test_the_quiet_bound_follows_what_quiet_allows(strategy_class):
    waiter, timers = FakeWaiter(), FakeTimers()
    idle = strategy_class(0, 0, 1000, 4000, spin_ns=0, quiet_park_ns=16000)
    cap = [64000]
    idle.bind(waiter, None, timers, quiet=lambda quiet_ns: max(quiet_ns, cap[0]))
    cap[0] = 0                                          # no long bound: 1 ms doubling to the quiet bound
    for _ in range(8):
        idle.idle(0)
    waits = [call[1] for call in waiter.calls if isinstance(call, tuple)]
    assert waits[:4] == [4000, 8000, 16000, 16000]
    cap[0] = 64000                                      # every writer signals: the long bound from the next park on
    idle.reset()                                        # (work came: the bound of its own is back to 1 ms)
    waiter.calls.clear()
    for _ in range(6):
        idle.idle(0)
    waits = [call[1] for call in waiter.calls if isinstance(call, tuple)]
    assert len(waits) >= 3 and set(waits) == {64000}
    cap[0] = 0                                          # withdrawn (a client that does not signal arrived)
    waiter.calls.clear()
    for _ in range(4):
        idle.idle(0)
    assert [call[1] for call in waiter.calls if isinstance(call, tuple)][:2] == [4000, 8000]   # its own, from 1 ms


def test_a_park_woken_keeps_the_long_bound_while_every_writer_signals(strategy_class):
    # a ping-pong's parks all end by a wake-up: with the old rule (the long bound only once the bound had grown
    # by timeouts) each armed a 1 ms timer, shorter than the scheduler tick, which cost a reprogrammed clock event
    # on the way in and out of every park
    class WokenWaiter(FakeWaiter):
        def wait(self, timeout_ns, fds=None):
            super().wait(timeout_ns, fds)
            return True

    waiter = WokenWaiter()
    idle = strategy_class(0, 0, 1000, 4000, spin_ns=0, quiet_park_ns=16000)
    idle.bind(waiter, quiet=lambda quiet_ns: 100_000)         # a client's: no timers
    for _ in range(3):
        idle.idle(0)
        idle.idle(0)
        idle.idle(1)                                    # the poll after the wake-up found data
    assert [call[1] for call in waiter.calls if isinstance(call, tuple)] == [100_000] * 3


def test_a_park_ends_when_the_next_timer_is_due(strategy_class):
    waiter, timers = FakeWaiter(), FakeTimers()
    idle = strategy_class(0, 0, 1000, 4000, spin_ns=0, quiet_park_ns=16000)
    idle.bind(waiter, None, timers)
    timers.due_ns = 2500
    for _ in range(2):                                  # no spin: prepare (the re-check), then wait
        idle.idle(0)
    waits = [call[1] for call in waiter.calls if isinstance(call, tuple)]
    assert waits == [2500]                              # not the bound (4000): the timer is due first
    timers.due_ns = 0                                   # still due after the cycle that ran it (a failed send)
    idle.idle(0)
    idle.idle(0)
    waits = [call[1] for call in waiter.calls if isinstance(call, tuple)]
    assert waits[-1] == 4000                            # retried after backoff's longest sleep, not in a loop


class FastTimers(FakeTimers):
    """A driver thread with a data half (SignallingAgent.fast_work): each pass advances the clock by ``step`` and
    moves data when the script says so."""

    def __init__(self, now, step, script=()):
        super().__init__()
        self.now, self.step, self.script, self.passes = now, step, list(script), 0
        self.fast_idle_ns = 0               # one pass per call: it never waits on after data

    def fast_work(self, wait_ns, spin_ns, passes_left, defer_ns):
        assert wait_ns > 0 and spin_ns >= wait_ns and passes_left >= 1
        self.now[0] += self.step
        self.passes += 1
        return self.script.pop(0) if self.script else 0


def test_a_driver_thread_spins_its_data_half_then_parks_without_another_whole_cycle(strategy_class):
    now = [0]
    waiter, timers = FakeWaiter(), FastTimers(now, 10)
    idle = strategy_class(max_park_ns=5000, spin_ns=0, clock=lambda: now[0])
    idle.bind(waiter, None, timers)
    idle.data_spin_ns = 100
    idle.idle(1)                                        # a whole cycle moved data: the data half, over and over
    assert timers.passes == 10 and waiter.calls == ["prepare"] and idle.state == PARKING
    idle.idle(0)                                        # the re-check cycle found nothing: park
    assert waiter.calls[1][0] == "wait"
    timers.active = False                               # timers only: no spin at all
    passes = timers.passes
    idle.idle(1)
    assert timers.passes == passes and idle.state == PARKING


def test_the_data_spin_defers_the_rest_of_the_cycle_while_data_moves(strategy_class):
    now = [0]
    waiter = FakeWaiter()
    timers = FastTimers(now, 10, [0, 1, 0, 0, 1, 0, 1])
    idle = strategy_class(max_park_ns=5000, spin_ns=0, clock=lambda: now[0])
    idle.bind(waiter, None, timers)
    idle.data_spin_ns, idle.full_cycle_defer_ns = 35, 1000
    idle.idle(1)
    # data at passes 2, 5 and 7 each restart the spin; 35 ns after the last one it ends, the rest of the cycle owed
    assert timers.passes == 11 and idle.state != PARKING and waiter.calls == []
    timers.script = [1] * 100                           # a stream: the owed cycle runs after full_cycle_defer_ns
    idle.full_cycle_defer_ns = 50
    passes = timers.passes
    idle.idle(0)
    assert timers.passes - passes == 6 and idle.state != PARKING
    idle.full_cycle_defer_ns = 1 << 40                  # ... or after FULL_CYCLE_DEFER_PASSES passes with data
    passes = timers.passes
    idle.idle(0)
    assert timers.passes - passes == FULL_CYCLE_DEFER_PASSES


def test_a_driver_thread_without_a_data_half_spins_as_any_other(strategy_class):
    now = [0]
    waiter, timers = FakeWaiter(), FastTimers(now, 0)
    timers.fast_work = lambda *spin: -1                 # a conductor's thread, or no network stream: nothing to watch
    idle = strategy_class(max_park_ns=5000, spin_ns=100, clock=lambda: now[0])
    idle.bind(waiter, None, timers)
    idle.idle(1)
    idle.idle(0)
    assert waiter.calls == [] and idle.state != PARKING  # whole cycles for spin_ns, as before
    now[0] = 150
    idle.idle(0)
    assert waiter.calls == ["prepare"]


class DataFirstTimers(FakeTimers):
    """A driver thread whose agent says what a data half leaves to a whole cycle (SignallingAgent.commands_pending):
    its data halves run first after a wake-up. ``script``: what each data half moves (0 once it runs out)."""

    def __init__(self, now, step, script=()):
        super().__init__()
        self.now, self.step, self.script, self.passes = now, step, list(script), 0
        self.commands = False

    def fast_work(self, wait_ns, spin_ns=0, passes_left=1, defer_ns=0):
        assert wait_ns == 0                             # a look, not a spin: the data spin is off
        self.now[0] += self.step
        self.passes += 1
        return self.script.pop(0) if self.script else 0

    def commands_pending(self):
        return self.commands


class WokenWaiter(FakeWaiter):
    """Woken as ``wakes`` says, one per wait (then timed out)."""

    def __init__(self, wakes=()):
        super().__init__()
        self.wakes = list(wakes)

    def wait(self, timeout_ns, fds=None):
        self.calls.append(("wait", timeout_ns, fds))
        return self.wakes.pop(0) if self.wakes else False


def _data_first(wakes, script, defer_ns=1000):
    now = [0]
    waiter, timers = WokenWaiter(wakes), DataFirstTimers(now, 10, script)
    idle = WakeupIdleStrategy(max_park_ns=5000, spin_ns=0, clock=lambda: now[0])
    idle.bind(waiter, None, timers)
    idle.data_spin_ns, idle.full_cycle_defer_ns = 0, defer_ns
    return now, waiter, timers, idle


def test_a_whole_cycle_with_work_is_re_checked_by_a_data_half_and_parks_at_once():
    _, waiter, timers, idle = _data_first([], [])
    idle.idle(1)
    # no second whole cycle as the re-check: the data half and the command queues, then the park, in this call
    assert timers.passes == 1 and waiter.calls == ["prepare", ("wait", 5000, None), "prepare"]
    timers.commands = True                              # a command came: the next whole cycle is the re-check
    waiter.calls.clear()
    idle.idle(1)
    assert waiter.calls == ["cancel", "prepare"] and timers.passes == 1
    # the re-check's data half moved data (a part of the thread answered what the cycle brought): data halves go on
    # alone, each the re-check of a park, as after a wake-up; the one that moves nothing parks, until the rest of the
    # cycle is owed at the latest (full_cycle_defer_ns after the data moved), and that park's end is a whole cycle
    timers.commands, timers.script = False, [1]
    waiter.calls.clear()
    idle.idle(1)
    assert waiter.calls == ["cancel", "prepare", "prepare", ("wait", 990, None), "prepare"] and timers.passes == 3
    assert idle._owed_ns == 0 and idle._prepared


def test_data_halves_after_a_re_check_that_moved_data_stop_for_a_command_or_once_the_owed_cycle_is_due():
    now, waiter, timers, idle = _data_first([], [1, 1, 1], defer_ns=1000)
    pending = iter([False, False, True])                # none at the re-check nor the next data half, then one
    timers.commands_pending = lambda: next(pending)
    idle.bind(waiter, None, timers)
    idle.idle(1)
    # the re-check moved data, so did the next data half; the command found before the third: a whole cycle next,
    # still marked parked (that cycle is the re-check), nothing owed
    assert timers.passes == 2 and [c for c in waiter.calls if isinstance(c, tuple)] == []
    assert idle._prepared and idle._owed_ns == 0
    # a stream that keeps the data halves busy: no data half alone past full_cycle_defer_ns after the first
    now, waiter, timers, idle = _data_first([], [1] * 100, defer_ns=100)
    idle.idle(1)
    assert [c for c in waiter.calls if isinstance(c, tuple)] == [] and idle._owed_ns == 0
    assert timers.passes < FULL_CYCLE_DEFER_PASSES and now[0] <= 100 + 2 * 10
    # and a timer of the driver's due when the data halves end: the park is not waited, the owed cycle runs now
    now, waiter, timers, idle = _data_first([], [1], defer_ns=1000)
    timers_due = iter([5, 0])                           # not due at the re-check; due once the data halves end
    timers.time_to_deadline_ns = lambda far: min(far, next(timers_due))
    idle.bind(waiter, None, timers)
    idle.idle(1)
    assert [c for c in waiter.calls if isinstance(c, tuple)] == [] and timers.passes == 2
    assert idle._owed_ns == 0 and idle._prepared


def test_a_timer_due_at_the_re_check_leaves_it_to_a_whole_cycle():
    _, waiter, timers, idle = _data_first([], [])
    timers.due_ns = 0                                   # a status message or a NAK due now: only a whole cycle sends it
    idle.idle(1)
    assert waiter.calls == ["prepare"] and timers.passes == 0


def test_after_a_wake_up_the_data_half_runs_first_and_the_rest_of_the_cycle_is_owed():
    # woken twice with data for the data half, then the park times out: one whole cycle (the owed one) for the three
    _, waiter, timers, idle = _data_first([True, True], [0, 1, 0, 1, 0], defer_ns=1000)
    idle.idle(1)                                        # a whole cycle; its re-check (nothing), then the park
    assert [c for c in waiter.calls if isinstance(c, tuple)] == [("wait", 5000, None), ("wait", 990, None),
                                                                ("wait", 970, None)]
    # woken: data moved at 20, the re-check at 30 found none: parked until the owed cycle (1020); woken with data
    # again at 40, re-checked at 50: parked until 1020 still; that park timed out: the caller's next cycle is the owed
    assert timers.passes == 5 and idle._owed_ns == 0 and waiter.calls[-1] == "prepare"


def test_a_wake_up_whose_data_half_moves_nothing_goes_to_a_whole_cycle():
    _, waiter, timers, idle = _data_first([True], [0, 0])
    idle.idle(1)
    # a command, a status message or a timer woke the thread: the caller's next cycle serves it
    assert [c for c in waiter.calls if isinstance(c, tuple)] == [("wait", 5000, None)] and timers.passes == 2


def _served(timers, verdicts):
    calls = []

    def wake_served():
        calls.append(True)
        return verdicts.pop(0)
    timers.wake_served = wake_served
    return calls


def test_a_wake_up_for_nothing_left_parks_again_until_the_parks_own_end():
    # the writer saw the mark before the re-check took its data: the wake-up finds nothing, and the driver says no
    # command, timer or control frame waits: a data half as the re-check of the same park, no whole cycle
    _, waiter, timers, idle = _data_first([True], [0, 0, 0])
    asked = _served(timers, [True])
    idle.bind(waiter, None, timers)
    idle.idle(1)
    assert [c for c in waiter.calls if isinstance(c, tuple)] == [("wait", 5000, None), ("wait", 4980, None)]
    assert timers.passes == 3 and asked == [True]
    assert waiter.calls[-1] == "prepare" and idle._prepared     # timed out: the caller's cycle is the re-check


def test_a_wake_up_for_nothing_goes_to_a_whole_cycle_when_the_driver_has_one_owed():
    # a command, a driver timer due, a control frame, or a client that does not signal: a whole cycle, as before
    _, waiter, timers, idle = _data_first([True], [0, 0])
    asked = _served(timers, [False])
    idle.bind(waiter, None, timers)
    idle.idle(1)
    assert [c for c in waiter.calls if isinstance(c, tuple)] == [("wait", 5000, None)]
    assert timers.passes == 2 and asked == [True] and not idle._prepared


def test_a_wake_up_for_nothing_whose_re_check_finds_work_goes_to_a_whole_cycle_still_marked_parked():
    _, waiter, timers, idle = _data_first([True], [0, 0, 1])       # the re-check's data half moved data
    _served(timers, [True])
    idle.bind(waiter, None, timers)
    idle.idle(1)
    assert [c for c in waiter.calls if isinstance(c, tuple)] == [("wait", 5000, None)] and timers.passes == 3
    assert idle._prepared and waiter.calls[-1] == "prepare"        # that cycle is the re-check
    _, waiter, timers, idle = _data_first([True], [0, 0])          # or a command came before it
    _served(timers, [True])
    pending = iter([False, True])                                   # none at the first re-check, one at the second
    timers.commands_pending = lambda: next(pending)
    idle.bind(waiter, None, timers)
    idle.idle(1)
    assert [c for c in waiter.calls if isinstance(c, tuple)] == [("wait", 5000, None)] and timers.passes == 2
    assert idle._prepared


def test_a_wake_up_for_nothing_at_the_parks_end_leaves_the_re_check_to_the_caller():
    now, waiter, timers, idle = _data_first([True], [0, 0, 0])
    _served(timers, [True])
    idle.bind(waiter, None, timers)

    def fast_work(wait_ns, *bounds):                                # the wake-up's data half takes the park's time
        now[0] += 2500
        timers.passes += 1
        return 0
    timers.fast_work = fast_work
    idle.bind(waiter, None, timers)
    idle.idle(1)
    # re-check at 2500, parked until 7500; woken and looked at by 5000, re-checked by 7500: the park is over, no wait
    assert [c for c in waiter.calls if isinstance(c, tuple)] == [("wait", 5000, None)] and timers.passes == 3
    assert idle._prepared


def test_a_command_found_by_the_re_check_after_a_data_half_goes_to_a_whole_cycle():
    _, waiter, timers, idle = _data_first([True], [0, 1])
    timers_pending = iter([False, True])                # none after the whole cycle, one after the data half
    timers.commands_pending = lambda: next(timers_pending)
    idle.bind(waiter, None, timers)
    idle.idle(1)
    assert [c for c in waiter.calls if isinstance(c, tuple)] == [("wait", 5000, None)] and timers.passes == 2
    assert waiter.calls[-1] == "prepare" and idle._owed_ns == 0


def test_data_halves_alone_stop_once_the_owed_cycle_is_due():
    # a stream that keeps waking the thread: the whole cycle runs full_cycle_defer_ns after the first data half
    now, waiter, _, idle = _data_first([True] * 100, [0] + [1, 0] * 100, defer_ns=100)
    idle.idle(1)
    waits = [c[1] for c in waiter.calls if isinstance(c, tuple)]
    assert waits[0] == 5000 and all(0 < w <= 100 for w in waits[1:]) and idle._owed_ns == 0
    assert now[0] <= 10 + 100 + 30                      # no data half alone past the owed cycle's time


def test_with_the_data_spin_on_a_wake_up_runs_a_whole_cycle_and_the_spin_follows_it():
    now, waiter, timers, idle = _data_first([True], [])

    def fast_work(wait_ns, *bounds):                    # the spin after the first cycle finds nothing
        now[0] += 10
        return 0

    timers.fast_work = fast_work
    idle.bind(waiter, None, timers)
    idle.data_spin_ns = 100
    idle.idle(1)
    # after the spin the re-check of the park is a whole cycle (a subscriber may have read during the spin, a timer
    # come due): back to the caller first, parked by the cycle after it that finds nothing
    assert [c for c in waiter.calls if isinstance(c, tuple)] == []
    idle.idle(0)
    # woken once: its data half first, which moved nothing (a command, a timer woke it): back to the caller for a whole
    # cycle, no spin after it
    assert [c for c in waiter.calls if isinstance(c, tuple)] == [("wait", 5000, None)] and idle._owed_ns == 0
    assert idle.state == PARKING


@pytest.mark.parametrize("cycle", ["active", "timers only", "nothing"])
def test_with_the_data_spin_on_a_wake_up_runs_the_data_half_first_then_a_whole_cycle_then_the_spin(cycle):
    # a ping's offer woke the driver: the data half sends it and wakes the pong before any Python of a whole cycle
    now, waiter, timers, idle = _data_first([True], [])
    calls = []

    def fast_work(wait_ns, spin_ns=0, passes_left=1, defer_ns=0):
        now[0] += 10
        calls.append((wait_ns, spin_ns))
        return 1 if spin_ns == 0 else 0                 # the wake-up's look finds the data; the spins, nothing

    timers.fast_work, timers.fast_idle_ns = fast_work, 0
    idle.bind(waiter, None, timers)
    idle.data_spin_ns = 100
    idle.idle(1)
    idle.idle(0)                                        # the re-check cycle found nothing: parked, then woken
    assert [c for c in waiter.calls if isinstance(c, tuple)] == [("wait", 5000, None)]
    assert calls[-1] == (0, 0) and idle.state == SPINNING and not idle._prepared
    # the caller's whole cycle (the rest: a status message for the data, commands, timers), then the spin, whether
    # or not that cycle moved anything of its own
    timers.active = cycle == "active"
    spun_from = len(calls)
    idle.idle(0 if cycle == "nothing" else 1)
    assert len(calls) > spun_from and all(spin_ns == 100 for _, spin_ns in calls[spun_from:])
    assert idle.state == PARKING and waiter.calls[-1] == "prepare"      # spun out: the next cycle is the re-check
    assert not idle._data_woke                          # only the cycle right after the wake-up spins regardless


def test_a_clients_quiet_bound_reads_the_drivers_verdict_its_holds_and_pending_commands(board):
    """QuietBound, what a client binds as its strategies' ``quiet`` (Aeron.quiet_park_ns), read per park by the
    compiled idle: the long bound while the board says every client signals, the brief one while parks are held or
    an async command awaits its answer (asked only while the conductor has commands pending), else the park's own."""
    registry = ClientRegistry(board)
    pending, awaited = {}, []

    def awaits():
        awaited.append(True)
        return answer[0]

    answer = [True]
    quiet = wk.QuietBound(board, ALL_SIGNAL_OFFSET, LONG_QUIET_PARK_NS, 1_000_000, pending, awaits)
    assert quiet(16_000_000) == 16_000_000
    registry.all_signal = True
    assert quiet(16_000_000) == LONG_QUIET_PARK_NS and quiet(2 * LONG_QUIET_PARK_NS) == 2 * LONG_QUIET_PARK_NS
    assert awaited == []                                # nothing pending: not asked
    pending[7] = object()
    assert quiet(16_000_000) == 1_000_000 and quiet(500) == 500 and awaited
    answer[0] = False                                   # pending, but past its deadline: not awaited any more
    assert quiet(16_000_000) == LONG_QUIET_PARK_NS
    quiet.holds = 1
    assert quiet(16_000_000) == 1_000_000
    quiet.holds = 0
    registry.all_signal = False
    assert quiet(16_000_000) == 16_000_000
    with pytest.raises(ValueError):
        wk.QuietBound(board, wk.SLOTS_OFFSET, LONG_QUIET_PARK_NS, 1_000_000, pending, awaits)
    registry.close()


def test_auto_idles_on_wakeup_while_every_writer_signals_and_on_its_fallback_otherwise(board, strategy_class):
    """AutoIdleStrategy (compiled: AutoIdleCore, around either wakeup strategy): the verdict read after work and
    before a park while on wakeup (a change withdraws the prepared park), after work or every CHECK_EVERY calls on
    the fallback; a QuietBound's verdict is read from the board."""
    from aeron.common.wakeup import AutoIdleStrategy

    class Fallback(BackoffIdleStrategy):
        def __init__(self):
            super().__init__()
            self.calls = []

        def idle(self, work_count=0):
            self.calls.append(work_count)

    registry = ClientRegistry(board)
    registry.all_signal = True
    quiet = wk.QuietBound(board, ALL_SIGNAL_OFFSET, LONG_QUIET_PARK_NS, 1_000_000, {}, lambda: False)
    waiter, fallback = FakeWaiter(), Fallback()
    wakeup = strategy_class(0, 0, 1000, 4000, spin_ns=0, quiet_park_ns=16000, waiter=waiter)
    auto = AutoIdleStrategy(wakeup, fallback, quiet.all_signal)
    assert auto.on_wakeup and auto.switches == 0
    auto.idle(0)
    auto.idle(0)                                        # prepared, then the park
    assert [c if isinstance(c, str) else c[0] for c in waiter.calls] == ["prepare", "wait", "prepare"]
    registry.all_signal = False                         # an official client connected
    auto.idle(0)                                        # before the park: withdrawn, the fallback's turn
    assert waiter.calls[-1] == "cancel" and not auto.on_wakeup and auto.switches == 1 and fallback.calls == [0]
    for _ in range(AutoIdleStrategy.CHECK_EVERY - 1):
        auto.idle(0)
    assert len(fallback.calls) == AutoIdleStrategy.CHECK_EVERY and not auto.on_wakeup
    registry.all_signal = True
    auto.idle(0)                                        # the CHECK_EVERY-th call reads the verdict: back on wakeup
    assert auto.on_wakeup and auto.switches == 2 and len(fallback.calls) == AutoIdleStrategy.CHECK_EVERY
    assert waiter.calls[-1] == "prepare" and wakeup.state == PARKING
    registry.all_signal = False
    auto.idle(3)                                        # work: read at once
    assert not auto.on_wakeup and fallback.calls[-1] == 3 and auto.switches == 3
    calls = []
    python_verdict = AutoIdleStrategy(strategy_class(spin_ns=0, waiter=FakeWaiter()), fallback, lambda: bool(calls))
    assert not python_verdict.on_wakeup
    calls.append(1)
    python_verdict.idle(1)
    assert python_verdict.on_wakeup and "AutoIdleStrategy(" in repr(python_verdict)
    registry.close()
