# SPDX-License-Identifier: Apache-2.0
"""Waking instead of spinning: the wake-up board in the aeron dir, the masks that say who wakes whom, how a driver
agent or a client gets a waiter or a signal, and WakeupIdleStrategy, which parks on a waiter (docs/wakeup.md; the
compiled half is aeron._core.wakeup).

The board is ``<aeron dir>/wakeup.dat``, a file of ours that no Aeron tool opens; every Aeron file keeps its
official layout. Whoever gets there first creates it (our driver recreates it with the directory); a board
that cannot be opened or has another layout means "no wake-ups": sleepers then time out as a backoff park
does, and writers signal nothing.

Masks (one 64-bit word per sleeper): bit ``stream_id % STREAM_BITS`` for subscribers of that stream, one bit per
driver agent: CONDUCTOR (client commands), SENDER (data in a network publication), RECEIVER (commands from the
conductor; its sockets wake it by themselves), SPIES for spy subscribers, and CLIENTS for our client conductors
(our driver wrote to the clients' broadcast).

Clients of ours also register on the board (a slot in state CLIENT naming their client id, never woken): they
signal every command and offer, so a driver of ours whose every client is registered need not poll for them; it
says so in the header (ALL_SIGNAL_OFFSET), and every sleeper may then park longer (LONG_QUIET_PARK_NS).
"""
from __future__ import annotations

import logging
import mmap
import operator
import os
import random
import socket
import time
from collections.abc import Callable
from typing import Any, Protocol

from aeron._core import wakeup as _wk
from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.wakeup import WakeSignal, Waiter, WakeupBoard, stream_bit
from aeron.common.agent import NOT_IDLE, PARKING, SPINNING, BackoffIdleStrategy, IdleStrategy, _sleep_ns
from aeron.common.constants import INT64_MIN
from aeron.common.errors import ConfigurationError

__all__ = ["WAKEUP_FILE", "STREAM_BITS", "ALL_STREAMS", "CLIENTS", "CONDUCTOR", "SENDER", "RECEIVER", "SPIES", "stream_bit",
           "streams_mask", "open_board", "new_waiter", "WakeSignal", "Waiter", "WakeupBoard", "ClientRegistry",
           "LONG_QUIET_PARK_NS", "DRIVER_PID_OFFSET", "WakeupIdleStrategy", "ClientWakeupIdleStrategy",
           "AutoIdleStrategy"]

WAKEUP_FILE = "wakeup.dat"
STREAM_BITS = _wk.STREAM_BITS
ALL_STREAMS = (1 << STREAM_BITS) - 1
CLIENTS = 1 << 59
RECEIVER = 1 << 60
SENDER = 1 << 61
CONDUCTOR = 1 << 62
# bit 63 (the sign bit of the int64 mask): spy subscribers, the only readers of a network publication's log. A
# network publication's offers signal SENDER | SPIES, not their stream's bit: its data reaches that stream's
# subscribers only through the driver's receiver, which wakes them when it has inserted it.
SPIES = INT64_MIN

_log = logging.getLogger("aeron.wakeup")

# A slot's state while it registers a client of ours (FREE, AWAKE, PARKED, WOKEN, YIELDING are the sleepers'
# states): its token is the client id, its mask 0; a writer's scan skips it (only PARKED and YIELDING slots are
# woken), and a dead process's slot is taken back as any other (new_waiter).
CLIENT = 4
# Header word (i32) our driver keeps: 1 while every live client of the driver is registered (each signals what it
# writes), 0 otherwise; 0 on aeronmd, which never writes it.
ALL_SIGNAL_OFFSET = 16
# Header word (i32): the pid of the driver of ours that made the board (open_board(create=True), in the directory
# it has just recreated), the same pid as cnc.dat's; 0 when a client made it (aeronmd knows nothing of the board).
# A client whose board names its driver's pid is on a driver of ours: its poll loops choose wakeup by default.
DRIVER_PID_OFFSET = 20
# The bound a park grows to while nothing happens and ALL_SIGNAL holds (instead of the 16 ms quiet bound, which
# is there for writers that never signal): Aeron's heartbeat interval. What still needs polling then (a reader
# that moved a publisher's limit or a status message's position) is picked up within it.
LONG_QUIET_PARK_NS = 100_000_000


def streams_mask(stream_ids: object, spies: bool = False) -> int:
    """The OR of the bits of ``stream_ids``, with SPIES when ``spies`` (a spy subscription is among them);
    every stream and the spies when ``stream_ids`` is None."""
    if stream_ids is None:
        return ALL_STREAMS | SPIES
    mask = SPIES if spies else 0
    for stream_id in stream_ids:        # type: ignore[attr-defined]
        mask |= stream_bit(int(stream_id))
    return mask


def _send_socket() -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.setblocking(False)
    return sock


def open_board(aeron_dir: str, *, create: bool = False, file_mode: int | None = None) -> WakeupBoard | None:
    """Map ``aeron_dir``'s board. ``create``: make a fresh one (the driver, in its just-recreated directory).
    Otherwise an existing board is opened, or made when there is none (our clients on aeronmd). None when the
    board cannot be had (no such directory, no permission, another layout): then nothing wakes and nothing
    signals, and every park is bounded as before."""
    path = os.path.join(aeron_dir, WAKEUP_FILE)
    try:
        if create:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666 if file_mode is None else file_mode)
    except OSError as exc:
        _log.debug("no wake-up board at %s: %s", path, exc)
        return None
    try:
        if file_mode is not None:
            os.fchmod(fd, file_mode)
        fresh = os.fstat(fd).st_size == 0
        if fresh:
            os.ftruncate(fd, _wk.FILE_LENGTH)       # zeroed: all slots free; two creators write the same
        elif os.fstat(fd).st_size < _wk.FILE_LENGTH:
            return None
        mapping = mmap.mmap(fd, _wk.FILE_LENGTH)
    except OSError as exc:
        _log.debug("no wake-up board at %s: %s", path, exc)
        return None
    finally:
        os.close(fd)
    board = WakeupBoard(mapping, _send_socket())
    if fresh:
        if create:
            header = AtomicBuffer(mapping, 0, _wk.FILE_LENGTH)
            header.put_i32_ordered(DRIVER_PID_OFFSET, os.getpid())    # before the magic: readers see both
            header.close()
        board.init_header()
    elif not board.header_ok():
        board.close()
        _log.debug("wake-up board %s has another layout: not used", path)
        return None
    return board


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def new_waiter(board: WakeupBoard, mask: int, *, futex: bool = False) -> Waiter | None:
    """Claim a slot of ``board`` for a sleeper woken by ``mask``; None when every slot is held by a live process
    (the caller then parks with bounded sleeps only). Slots of processes that died are taken back.

    ``futex``: the sleeper waits on its slot's state word (a futex) and writers wake it with FUTEX_WAKE, for a
    thread that waits on nothing else (a client's poll loop); it has no socket, so no ``fileno()`` for an event
    loop and no other descriptors to wait on. Otherwise it waits in ``ppoll`` on its own socket."""
    token = random.getrandbits(63)
    index = board.claim(os.getpid(), mask, token, futex)
    if index < 0:
        for i in range(_wk.SLOT_COUNT):
            state, pid, _, _ = board.slot_state(i)
            if state != _wk.FREE and not _pid_alive(pid):
                board.reclaim(i, state)
        index = board.claim(os.getpid(), mask, token, futex)
        if index < 0:
            return None
    if futex:
        return Waiter(board, index, None)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        sock.setblocking(False)
        sock.bind(_wk.socket_name(token))
    except OSError:
        sock.close()
        board.reclaim(index, _wk.AWAKE)
        raise
    return Waiter(board, index, sock)


class ClientRegistry:
    """The clients of ours on ``board`` (slots in state CLIENT) and the driver's ALL_SIGNAL verdict; a view of
    the board's mapping (cold: per client and per park, not per message)."""

    __slots__ = ("_buffer",)

    def __init__(self, board: WakeupBoard) -> None:
        """View ``board``'s mapping (pinned by the board for as long as anyone holds it)."""
        self._buffer = AtomicBuffer(board.mapping, 0, _wk.FILE_LENGTH)

    @staticmethod
    def _slot(index: int) -> int:
        return _wk.SLOTS_OFFSET + index * _wk.SLOT_LENGTH

    def register(self, client_id: int) -> int:
        """Take a slot naming ``client_id`` as ours; its index, or -1 when the board is full of live slots."""
        buffer = self._buffer
        for attempt in range(2):
            for index in range(_wk.SLOT_COUNT):
                offset = self._slot(index)
                if buffer.get_i32_volatile(offset) == _wk.FREE and buffer.compare_and_set_i32(offset, _wk.FREE, _wk.AWAKE):
                    buffer.put_i32_ordered(offset + 4, os.getpid())
                    buffer.put_i64_ordered(offset + 8, 0)
                    buffer.put_i64_ordered(offset + 16, client_id)
                    buffer.put_i32_ordered(offset, CLIENT)
                    return index
            if attempt == 0:
                self._reclaim_dead()
        return -1

    def _reclaim_dead(self) -> None:
        buffer = self._buffer
        for index in range(_wk.SLOT_COUNT):
            offset = self._slot(index)
            state = buffer.get_i32_volatile(offset)
            if state == CLIENT and not _pid_alive(buffer.get_i32_volatile(offset + 4)):
                buffer.compare_and_set_i32(offset, CLIENT, _wk.FREE)

    def release(self, index: int, client_id: int) -> None:
        """Free slot ``index`` if it still registers ``client_id``."""
        offset = self._slot(index)
        if self._buffer.get_i64_volatile(offset + 16) == client_id:
            self._buffer.compare_and_set_i32(offset, CLIENT, _wk.FREE)

    def is_registered(self, client_id: int) -> bool:
        """True when a live slot registers ``client_id`` (a client of ours: it signals what it writes)."""
        buffer = self._buffer
        for index in range(_wk.SLOT_COUNT):
            offset = self._slot(index)
            if (buffer.get_i32_volatile(offset) == CLIENT and buffer.get_i64_volatile(offset + 16) == client_id
                    and _pid_alive(buffer.get_i32_volatile(offset + 4))):
                return True
        return False

    @property
    def all_signal(self) -> bool:
        """The driver's verdict: every live client of it signals (see ALL_SIGNAL_OFFSET)."""
        return self._buffer.get_i32_volatile(ALL_SIGNAL_OFFSET) == 1

    @all_signal.setter
    def all_signal(self, value: bool) -> None:
        self._buffer.put_i32_ordered(ALL_SIGNAL_OFFSET, 1 if value else 0)

    @property
    def driver_pid(self) -> int:
        """The pid of the driver of ours that made the board; 0 when a client made it (see DRIVER_PID_OFFSET)."""
        return self._buffer.get_i32_volatile(DRIVER_PID_OFFSET)

    def quiet_park_ns(self, quiet_ns: int) -> int:
        """The bound a park may grow to: LONG_QUIET_PARK_NS while the driver says every client signals (at least
        ``quiet_ns``), else ``quiet_ns``."""
        return max(LONG_QUIET_PARK_NS, quiet_ns) if self.all_signal else quiet_ns

    def close(self) -> None:
        """Release the view of the mapping."""
        self._buffer.close()


# ---- the idle strategy that parks on the board -----------------------------------------------------------------

# a driver thread's data spin runs the rest of its duty cycle after at most this many passes that moved data (a
# stream that keeps coming: its status messages and flow control are not held up by the spin)
FULL_CYCLE_DEFER_PASSES = 64


# what a driver thread's data half after a wake-up found (WakeupIdleStrategy._data_first)
_WHOLE_CYCLE = 0        # the caller's next duty cycle, a whole one
_PARKED_AGAIN = 1       # it moved data, and the data halves after it nothing more: parked again, the rest owed
_WOKE_FOR_NOTHING = 2   # it moved nothing (WakeupIdleStrategy._served_wake: parked again, or a whole cycle)


class _Waiter(Protocol):
    @property
    def prepared(self) -> bool: ...
    def prepare(self) -> None: ...
    def cancel(self) -> None: ...
    def wait(self, timeout_ns: int, fds: Any = None, yield_ns: int = 0) -> bool: ...
    def close(self) -> None: ...


class WakeupIdleStrategy(BackoffIdleStrategy):
    """Spin briefly, then, instead of sleeping, park until someone wakes us (docs/wakeup.md).

    Unbound (no ``waiter``) it is exactly BackoffIdleStrategy with the limits given. Bound to a waiter on the
    aeron dir's wake-up board: after work it keeps returning at once (the caller polls again) for ``spin_ns``
    (10 µs: a hot IPC ping-pong never parks between messages), without yielding (on a busy machine a yield sends
    the thread behind every other runnable process, while a thread woken from a park runs at once). Then each
    park is: mark parked and return (the caller's next duty cycle re-checks for work: a writer that wrote before
    it saw the mark is caught there), then sleep in ``poll`` on the wake-up socket and on the descriptors
    ``fds()`` returns (a driver agent's UDP sockets). A park is bounded, so that a writer that never signals (an
    official client or driver) is still picked up: by ``max_park_ns`` (1 ms, backoff's longest sleep) while
    work comes and goes, the bound doubling with each park that ends by timeout up to ``quiet_park_ns`` (16 ms,
    the client conductor's idle sleep) once nothing has happened for a while, which is what keeps an idle
    process under 1 % of a core. Any work resets it.

    With ``yield_ns`` (a futex waiter only: what ``Aeron.wakeup_idle_strategy`` gives a loop on network
    subscriptions), the first park after work yields the CPU in a loop for up to that long before it sleeps, woken
    meanwhile by the writer's CAS alone (aeron._core.wakeup), while ``quiet`` says every writer signals (on
    ``aeronmd``, or with an official client about, a yield would end by its time alone: it parks at once). Its CPU then does not halt between messages, and on
    a virtual machine waking a halted vCPU costs tens of microseconds; a yield that finds another process on the
    CPU ends the phase and holds the next ones off, since a thread that yielded waits behind that process when its
    data comes, where a parked one would be woken ahead of it (docs/wakeup.md).

    Bound with ``timers`` (our driver's agents, aeron.driver.driver_wakeup.SignallingAgent): work that moved no
    data and no command (``timers.active`` false: a heartbeat, a status message, a timer) neither spins nor resets
    the bound, and a park also ends when ``timers.time_to_deadline_ns(bound)`` says the next timer is due, so the
    driver wakes for its timers when they are due rather than polling for them every millisecond after each one.
    When ``timers`` also has ``fast_work`` (the data half of the driver's duty cycle: compiled send and receive
    passes), the spin after data is that half alone, over and over, for ``data_spin_ns`` (200 µs), the rest of
    the cycle deferred by up to ``full_cycle_defer_ns`` (1 ms): see :meth:`_fast_spin`; and a wake-up runs that half
    first, before the whole cycle that follows it (:meth:`_data_after_wake`).

    A timer-only cycle run while a park was prepared is that park's re-check: the strategy parks at once.

    A client's spin that ends in a park :attr:`SPIN_GIVE_UP_MISSES` times in a row is given up: the next parks come
    at once after work, but for one spin in :attr:`SPIN_PROBE_EVERY`, and the first spin answered again (work
    within it) takes the spin back. A spin that is never answered is often one that keeps its partner off the
    core: a peer that this thread's wake-up preempted on the same CPU (both cores busy) can send nothing until the
    spin ends, so each round trip paid the whole spin (docs/wakeup.md, perf/aio_counts.py).

    ``quiet(quiet_park_ns)`` (the timers' ``quiet_park_ns``, or a client's ClientRegistry.quiet_park_ns) may raise
    the quiet bound, asked once a park's bound has grown to it: longer while our driver says every writer signals
    (docs/wakeup.md).
    """

    __slots__ = ("waiter", "fds", "timers", "quiet", "_fast", "spin_ns", "yield_ns", "data_spin_ns",
                 "full_cycle_defer_ns", "quiet_park_ns", "park_bound_ns", "_spin_start_ns", "_clock", "_prepared", "_owed_ns", "_pending",
                 "_after_work", "_data_woke", "parks", "spin_misses", "_spin_skips", "spins_given_up")
    alias = "wakeup"
    DEFAULT_SPIN_NS = 10_000
    # A client's spin after work that ends in a park this many times in a row is given up (the next parks come at
    # once) but for one spin in SPIN_PROBE_EVERY, which takes it back when it is answered again: see the class
    # docstring
    SPIN_GIVE_UP_MISSES = _wk.SPIN_GIVE_UP_MISSES
    SPIN_PROBE_EVERY = _wk.SPIN_PROBE_EVERY
    DEFAULT_YIELD_NS = 100_000
    DEFAULT_DATA_SPIN_NS = 200_000
    DEFAULT_FULL_CYCLE_DEFER_NS = 1_000_000
    DEFAULT_QUIET_PARK_NS = 16_000_000

    def __init__(self, max_spins: int = 10, max_yields: int = 20, min_park_ns: int = 1000,
                 max_park_ns: int = 1_000_000, *, spin_ns: int = DEFAULT_SPIN_NS, yield_ns: int = 0,
                 quiet_park_ns: int = DEFAULT_QUIET_PARK_NS, waiter: _Waiter | None = None,
                 fds: Callable[[], Any] | None = None, yield_fn: Callable[[], Any] = os.sched_yield,
                 sleep_fn: Callable[[int], Any] = _sleep_ns, clock: Callable[[], int] = time.perf_counter_ns) -> None:
        """Backoff's limits (used unbound; ``max_park_ns`` is also the first bound of a wake-up park), the spin
        time, the yield time (the first park after work yields the CPU that long before it sleeps: a futex waiter
        only, see the class docstring), the quiet bound (at least ``max_park_ns``); ``waiter`` and ``fds`` as
        :meth:`bind`; ``clock`` (nanoseconds) replaces the spin clock (tests)."""
        super().__init__(max_spins, max_yields, min_park_ns, max_park_ns, yield_fn=yield_fn, sleep_fn=sleep_fn)
        if spin_ns < 0:
            raise ConfigurationError(f"spin_ns must be >= 0, got {spin_ns}")
        if yield_ns < 0:
            raise ConfigurationError(f"yield_ns must be >= 0, got {yield_ns}")
        self.spin_ns = int(spin_ns)
        self.yield_ns = int(yield_ns)
        self._after_work = False
        self.data_spin_ns = self.DEFAULT_DATA_SPIN_NS
        self.full_cycle_defer_ns = self.DEFAULT_FULL_CYCLE_DEFER_NS
        self.quiet_park_ns = max(int(quiet_park_ns), self.max_park_ns)
        self.park_bound_ns = self.max_park_ns
        self._spin_start_ns = 0
        self._pending: Callable[[], bool] | None = None
        self._owed_ns = 0             # a driver thread's data halves ran alone after wake-ups: its whole cycle by then
        self._data_woke = False       # a driver thread's data half ran at its wake-up: the cycle after it, then the spin
        self._clock = clock
        self.waiter: _Waiter | None = None
        self.fds: Callable[[], Any] | None = None
        self.timers: Any = None
        self._fast: Callable[..., int] | None = None
        self.quiet: Callable[[int], int] | None = None
        self._prepared = False
        self.parks = 0
        self.spin_misses = 0          # client spins in a row that ended in a park
        self._spin_skips = 0
        self.spins_given_up = 0       # spins skipped since the strategy was made (a count for perf/aio_counts.py)
        if waiter is not None:
            self.bind(waiter, fds)

    def bind(self, waiter: _Waiter | None, fds: Callable[[], Any] | None = None,
             timers: Any = None, quiet: Callable[[int], int] | None = None) -> "WakeupIdleStrategy":
        """Park on ``waiter`` (:func:`new_waiter`), also waking when a descriptor of ``fds()`` is
        readable, timed by ``timers`` and bounded by ``quiet`` (see the class docstring); None unbinds (back to
        backoff's sleeps). Returns self. A strategy with a yield time takes only a futex waiter (ConfigurationError)."""
        if self.yield_ns and waiter is not None and not getattr(waiter, "futex", False):
            raise ConfigurationError("a wake-up idle strategy that yields before it parks needs a futex waiter")
        if self._prepared and self.waiter is not None:
            self.waiter.cancel()
        self._prepared = False
        self._data_woke = False
        self.waiter = waiter
        self.fds = fds
        self.timers = timers if waiter is not None else None
        self._fast = getattr(self.timers, "fast_work", None)
        # with fast_work, what a data half alone leaves undone: data halves run first after a wake-up (_data_first)
        self._pending = getattr(self.timers, "commands_pending", None)
        if quiet is None and self.timers is not None:
            quiet = getattr(self.timers, "quiet_park_ns", None)
        self.quiet = quiet if waiter is not None else None
        self.reset()
        return self

    @property
    def is_bound(self) -> bool:
        """True when parks wait for a wake-up rather than sleeping."""
        return self.waiter is not None

    def reset(self) -> None:
        """As backoff's, and the park bound back to ``max_park_ns``."""
        super().reset()
        self.park_bound_ns = self.max_park_ns

    def idle(self, work_count: int = 0) -> None:
        """Spin for ``spin_ns`` after work, then prepare a park and, if the next duty cycle also found nothing,
        wait."""
        data_woke = self._data_woke
        if data_woke:
            self._data_woke = False     # this cycle follows a data half run at a wake-up (_data_after_wake)
        if work_count > 0:
            timers = self.timers
            if timers is None or timers.active or data_woke:
                if self.state == SPINNING:
                    self.spin_misses = 0        # the spin was answered
                self._after_work = True
                # the work came straight after a park (a wake-up), not from the re-check of one or a spin
                woken = self.state == PARKING and not self._prepared
                if self._prepared:
                    self._prepared = False
                    self.waiter.cancel()                                # type: ignore[union-attr]
                if self.state != NOT_IDLE:
                    self.reset()
                if self._fast is None:
                    if woken and self.spin_ns == 0 and timers is None and self.waiter is not None:
                        # no spin to run (a client of network streams) and a message after a wake-up, as in a
                        # request and its response: the park is prepared now and the caller's next poll is its
                        # re-check, as the bare design's client marks its slot parked right after its offer and looks
                        # once more (perf/bare_wakeup.c); a whole poll and idle call fewer between a message and
                        # the park, on a CPU the other client is often waiting for. Not while messages keep coming
                        # (the re-check found more): writers would then wake a loop that is not asleep
                        self.state = PARKING
                        self.waiter.prepare()
                        self._prepared = True
                    return
                # a driver thread: its spin (the data half alone) starts now, not after another whole cycle
                self.state = SPINNING
                self._spin_start_ns = self._clock()
                spun = self._fast_spin()
                if spun or (spun is None and self.spin_ns > 0):
                    return
                self.state = PARKING
                self.waiter.prepare()                                   # type: ignore[union-attr]
                self._prepared = True
                # after a data spin the re-check is a whole cycle: during the spin a subscriber may have read enough
                # to owe its publisher a status message (or moved an IPC limit), and the timers came due unserved;
                # only a whole cycle sees those, and nothing would wake the park for them
                if self.data_spin_ns or not self._rechecked(self.waiter):           # type: ignore[arg-type]
                    return              # the next duty cycle is the re-check of a park
            else:
                # only timers ran (a heartbeat, a status message): no spin, the park bound kept
                self.state = PARKING
                if not self._prepared:
                    self.waiter.prepare()                               # type: ignore[union-attr]
                    self._prepared = True
                    if not self._rechecked(self.waiter):                # type: ignore[arg-type]
                        return          # the next duty cycle is the re-check of a park
                # prepared before this cycle, which moved no data and no command: it was the re-check; park now
        waiter = self.waiter
        if waiter is None:
            super().idle(work_count)
            return
        state = self.state
        fast = self._fast
        if state == NOT_IDLE:
            if fast is None and self.spin_ns > 0 and self.spin_misses >= self.SPIN_GIVE_UP_MISSES:
                self._spin_skips += 1
                if self._spin_skips % self.SPIN_PROBE_EVERY:
                    self.spins_given_up += 1
                    self.state = state = PARKING        # straight to the park: the spin only held the core
            if state == NOT_IDLE:
                self.state = state = SPINNING
                self._spin_start_ns = self._clock()
                if fast is None and self.spin_ns > 0:
                    return
        if state == SPINNING:
            spun = self._fast_spin() if fast is not None else None
            if spun:
                return
            if spun is None and self._clock() - self._spin_start_ns < self.spin_ns:
                return
            if fast is None and self.spin_ns > 0:
                self.spin_misses += 1
            self.state = PARKING
        if not self._prepared:
            waiter.prepare()
            self._prepared = True
            return                      # the caller's next duty cycle is the re-check
        self._prepared = False
        self.parks += 1
        fds = self.fds
        bound = self.park_bound_ns
        cap = self.quiet_park_ns
        quiet = self.quiet
        signalled = quiet is None       # unless told otherwise (a test's waiter), writers are taken to signal
        if quiet is not None:
            longest = quiet(cap)
            if longest > cap:
                signalled = True
                # every writer signals (our driver says so): the bound guards against nobody, and a park's timer
                # shorter than the scheduler tick costs a reprogrammed clock event on the way in and out, which
                # doubled a UDP round trip here (docs/wakeup.md); the bound of its own is kept for when that ends
                bound = longest
            elif bound > longest:
                # the long bound was withdrawn (a writer that does not signal), or a driver's quiet bound is
                # backoff's while an official client is connected (SignallingAgent.quiet_park_ns)
                bound = self.park_bound_ns = longest
            cap = longest
        timeout = bound
        timers = self.timers
        if self._owed_ns:
            # the re-check went on in data halves alone (_rechecked): the rest of the cycle is owed by then, and at
            # once when a timer came due meanwhile (no whole cycle has run it)
            timeout = min(bound, self._owed_ns - self._clock())
            if timers is not None:
                timeout = min(timeout, timers.time_to_deadline_ns(timeout))
            if timeout <= 0:
                self._owed_ns = 0
                self._prepared = True   # still marked parked: the caller's cycle (the owed one) is the re-check
                return
        elif timers is not None:
            due = timers.time_to_deadline_ns(bound)
            # a timer still due after the cycle that ran it failed (a send refused): retried as backoff would
            timeout = due if due > 0 else min(bound, self.max_park_ns)
        # the first park after work yields first (yield_ns), the next message likely close, while every writer
        # signals: a writer that does not (aeronmd, an official client) would not end the yield, only the park's bound
        yield_ns = self.yield_ns if self._after_work and signalled else 0
        self._after_work = False
        while True:
            park_end = self._clock() + timeout
            if yield_ns:
                woken = waiter.wait(timeout, None, yield_ns)
            else:
                woken = waiter.wait(timeout, fds() if fds is not None else None)
            if not woken:
                if self._owed_ns:
                    self._owed_ns = 0       # the rest of the cycle after data halves alone: the caller's next cycle
                elif bound < cap:
                    self.park_bound_ns = min(bound * 2, cap)
                # nothing woke us: the caller's next duty cycle doubles as the re-check of the next park (one cycle
                # per timeout, not two)
                waiter.prepare()
                self._prepared = True
                return
            if waiter.prepared:
                # woken by a socket of ours alone, still parked (a driver's waiter: stay_parked_on_fds): the caller's
                # next duty cycle reads it and is the re-check of the next park (one cycle for a status message or a
                # heartbeat received, not two)
                self._prepared = True
            if self._pending is not None and self.data_spin_ns:
                self._owed_ns = 0
                self._data_after_wake(waiter)
                return
            if self._pending is None:
                self._owed_ns = 0
                return
            verdict = self._data_first(waiter)
            if verdict == _WOKE_FOR_NOTHING:
                if self._served_wake(waiter):
                    # the wake-up's work was done already (see _served_wake): parked again, until the park's own end
                    self._prepared = False
                    self.parks += 1
                    timeout = park_end - self._clock()
                    if timeout > 0:
                        yield_ns = 0
                        continue
                    self._prepared = True       # still marked parked: the caller's cycle is the re-check
                self._owed_ns = 0
                return
            if verdict != _PARKED_AGAIN:
                self._owed_ns = 0
                return
            self._prepared = False
            self.parks += 1
            # parked again at once: until the next wake-up, the next timer, or the rest of the cycle owed
            timeout = self._owed_ns - self._clock()
            if timers is not None:
                timeout = min(timeout, timers.time_to_deadline_ns(timeout))
            if timeout <= 0:
                self._owed_ns = 0
                return
            yield_ns = 0

    def _data_after_wake(self, waiter: _Waiter) -> None:
        """After a driver thread's wake-up, with its data spin on: the data half first (``timers.fast_work``: one
        compiled call sends what a client offered, reads the receive sockets, inserts and wakes the subscribers), then
        the caller's whole duty cycle (the rest: commands, status messages, timers), then the spin, which that cycle
        neither starts over nor ends when it moves no data of its own (``timers.active`` false: a status message for
        the data just received). A whole cycle of Python first held the data up by as long as its sender's and
        receiver's parts before their passes."""
        if self._fast(0) <= 0:                                          # type: ignore[misc]
            return                      # a command, a control frame or a timer woke us: the whole cycle serves it
        if self._prepared:
            self._prepared = False      # woken by a socket of ours, still marked parked: no longer asleep
            waiter.cancel()
        self.reset()
        self.state = SPINNING
        self._spin_start_ns = self._clock()
        self._data_woke = True

    def _rechecked(self, waiter: _Waiter) -> bool:
        """A driver thread's re-check of the park just prepared, without a whole duty cycle: the data half alone
        (``timers.fast_work``) and the command queues (``timers.commands_pending``); True when neither has anything,
        and the thread parks at once. A whole cycle of Python as the re-check costs as much as the cycle before it,
        and holds the GIL as long: in one process with its clients (an embedded driver), a subscriber just woken waits
        that long for it (perf/cluster_hops_bound.py). Datagrams on the sockets need no re-check: the park's ``poll``
        finds them.

        When the data half moved data (on a thread with more parts than the driver, DriverThreadAgent, their work
        counts: a consensus module's answer to what the cycle brought), data halves go on alone as after a wake-up
        (:meth:`_data_halves`), the rest of the cycle owed ``full_cycle_defer_ns`` from now, when the park that follows
        ends at the latest; True when they ended with nothing moved (that park), False for a whole cycle next. A whole
        cycle each time was most of a busy member's driver Python: its conductor, sender and receiver for what data
        halves and the parts' turns had done already."""
        pending = self._pending
        if pending is None or pending():
            return False
        timers = self.timers
        if timers is not None and timers.time_to_deadline_ns(1) <= 0:
            return False                # a timer due now (a status message, a NAK, a heartbeat): a whole cycle
        moved = self._fast(0)                                           # type: ignore[misc]
        if moved <= 0:
            return moved == 0
        self._owed_ns = self._clock() + self.full_cycle_defer_ns
        if self._data_halves(waiter):
            return True
        self._owed_ns = 0
        return False

    def _data_first(self, waiter: _Waiter) -> int:
        """After a driver thread's wake-up, with its data spin off (``data_spin_ns`` 0: with it on, the cycle that the
        wake-up runs is followed by the spin, which catches the next data without a wake-up): the data half of its duty
        cycle alone (``timers.fast_work``: the compiled send and receive passes, their subscribers signalled), rather
        than a whole cycle of Python first. True when it
        moved data and the thread may park again at once: the rest of the cycle (status messages, control frames,
        limits, timers) is then owed, and runs ``full_cycle_defer_ns`` after the first data half that owes it at the
        latest (the park's timeout), or at the first wake-up whose data half moves nothing (a command, a status
        message or a NAK: what only a whole cycle serves). The re-check of that park is a data half too, with the
        waiter marked parked first, and the command queues looked at (``timers.commands_pending``): a writer that
        wrote before it saw the mark is caught there, as by a whole cycle.

        In one process with its clients (an embedded driver) this is what lets a subscriber the receive pass has just
        woken run at once: its thread takes the GIL when the driver parks, which a whole cycle and its re-check (tens
        of microseconds of Python each) would hold up, once per hop (perf/cluster_hops_bound.py). Returns
        _PARKED_AGAIN for True, _WOKE_FOR_NOTHING when the first data half moved nothing (_served_wake decides), else
        _WHOLE_CYCLE: the caller's next duty cycle runs (a whole one), as after any wake-up."""
        moved = self._fast(0)                                           # type: ignore[misc]
        if moved <= 0:
            # nothing for the data half: a command, a control frame or a timer woke us, or nothing at all
            return _WOKE_FOR_NOTHING if moved == 0 else _WHOLE_CYCLE
        now = self._clock()
        if not self._owed_ns:
            self._owed_ns = now + self.full_cycle_defer_ns
        elif now >= self._owed_ns:
            return _WHOLE_CYCLE
        return _PARKED_AGAIN if self._data_halves(waiter) else _WHOLE_CYCLE

    def _served_wake(self, waiter: _Waiter) -> bool:
        """After a wake-up whose data half (and, on a member's thread, the parts' turns) moved nothing: True when the
        thread may park again at once, with no whole cycle. A writer that wrote before it saw the park's mark wakes
        the park that follows the re-check which already took its data (each message of a stream may leave one such
        wake-up); a whole cycle and the re-check cycle after it, each of the driver's Python and every part, was
        what each of them cost. ``timers.wake_served()`` (SignallingAgent) says whether anything that only a whole
        cycle serves waits (a command, a driver timer due, a control frame on the sender's sockets, which it reads;
        and not while a client that does not signal is connected: its wake-ups are the board's, for the bound); then,
        with the park marked first, a data half and the command queues as the re-check, as after data halves alone
        (_data_halves): True when neither has anything. False: a whole cycle next (marked parked still when the
        re-check found work: that cycle is its re-check)."""
        served = getattr(self.timers, "wake_served", None)
        if served is None or not served():
            return False
        waiter.prepare()
        self._prepared = True
        return not self._pending() and self._fast(0) == 0                # type: ignore[misc]

    def _data_halves(self, waiter: _Waiter) -> bool:
        """Data halves alone after one that moved data, each the re-check of a park marked first, the command queues
        looked at before it: True once one moves nothing (the thread parks, the rest of its cycle owed), False at a
        command, at a thread without a data half, once the owed cycle is due, or after FULL_CYCLE_DEFER_PASSES of them
        (a whole cycle next)."""
        fast = self._fast
        pending = self._pending
        clock = self._clock
        for _ in range(FULL_CYCLE_DEFER_PASSES):
            waiter.prepare()
            self._prepared = True
            if pending():
                return False
            moved = fast(0)                                             # type: ignore[misc]
            if moved < 0:
                return False
            if moved == 0:
                return True
            if clock() >= self._owed_ns:
                return False            # the driver's timers and the rest wait no longer than that
        return False

    def _fast_spin(self) -> bool | None:
        """A driver thread's spin: its data half (``timers.fast_work``: the compiled send and receive passes, the
        subscribers signalled) over and over instead of whole duty cycles, for ``data_spin_ns`` after the last data
        moved, so that a reply offered or received meanwhile moves within microseconds rather than after the rest
        of a cycle of Python (tens of µs). The rest of the cycle (status messages, control frames, timers,
        commands, limits) is owed once data moved, and runs when the spin ends, ``full_cycle_defer_ns`` after
        the first data it owes, or after FULL_CYCLE_DEFER_PASSES passes that moved data, whichever comes first:
        True then (the caller's next duty cycle runs it, and the spin starts again after it). False when the spin
        ended with nothing owed: park. None when the thread has no data half to watch (``fast_work`` returns a
        negative count: a conductor's thread, no network publication or subscription): the ordinary spin.

        ``fast_work(wait_ns, spin_ns, passes_left, defer_ns)`` may itself go on after a pass that moved data, within
        those bounds (the driver's runs its passes in one compiled call: SignallingAgent.fast_work): it returns the
        passes that moved data, and ``timers.fast_idle_ns`` how long it then waited with nothing."""
        fast = self._fast
        clock = self._clock
        start = self._spin_start_ns
        spin_ns = self.data_spin_ns
        defer = self.full_cycle_defer_ns
        owed = 0
        passes = 0
        while True:
            now = clock()
            if now - start >= spin_ns:
                if owed:
                    self.state = NOT_IDLE
                    return True
                return False
            # the data half may spin on by itself after data moved (its own passes within the same bounds)
            moved = fast(spin_ns - (now - start), spin_ns, FULL_CYCLE_DEFER_PASSES - passes,  # type: ignore[misc]
                         defer - (now - owed) if owed else defer)
            if moved < 0:                           # no data half on this thread: the ordinary spin
                if owed:
                    self.state = NOT_IDLE
                    return True
                return None
            if moved:
                passes += moved
                if owed == 0:
                    owed = now
                if now - owed >= defer or passes >= FULL_CYCLE_DEFER_PASSES:
                    self.state = NOT_IDLE
                    return True
                # the spin restarts at its last pass that moved data, which it may have waited after already
                start = self._spin_start_ns = clock() - self.timers.fast_idle_ns                # type: ignore

    def wake(self) -> None:
        """End a park in progress (from another thread: a runner closing) by signalling what wakes the waiter."""
        waiter = self.waiter
        if waiter is not None and not waiter.board.is_closed:
            waiter.board.signal(waiter.mask)

    def cancel_park(self) -> None:
        """Withdraw the park the last :meth:`idle` prepared (writers need no longer wake us) and start over: the
        loop goes on with another strategy for a while (AutoIdleStrategy)."""
        if self._prepared:
            self._prepared = False
            self.waiter.cancel()                                        # type: ignore[union-attr]
        self.reset()

    def close(self) -> None:
        """Release the waiter's slot (if bound) and go back to backoff's sleeps."""
        waiter = self.waiter
        self.bind(None)
        if waiter is not None:
            waiter.close()

    def __repr__(self) -> str:
        """The settings and whether it is bound."""
        return (f"WakeupIdleStrategy(spin_ns={self.spin_ns}, max_park_ns={self.max_park_ns}, "
                f"quiet_park_ns={self.quiet_park_ns}, bound={self.is_bound})")


def _in_core(name: str) -> Any:
    """A ClientWakeupIdleStrategy attribute kept in its compiled core (WakeupIdleCore) under ``name``."""
    return property(operator.attrgetter(f"_core.{name}"), lambda self, value: setattr(self._core, name, value))


def _core_clock(strategy: "ClientWakeupIdleStrategy") -> Callable[[], int]:
    clock = strategy._core.clock
    return time.perf_counter_ns if clock is None else clock      # type: ignore[no-any-return]


def _set_core_clock(strategy: "ClientWakeupIdleStrategy", clock: Callable[[], int]) -> None:
    # perf_counter_ns is CLOCK_MONOTONIC, which the core reads without a call into Python
    strategy._core.clock = None if clock is time.perf_counter_ns else clock


class ClientWakeupIdleStrategy(WakeupIdleStrategy):
    """A WakeupIdleStrategy whose :meth:`idle` is compiled (aeron._core.wakeup.WakeupIdleCore) while it is bound to a
    waiter with no timers: a client's poll loop (what ``Aeron.wakeup_idle_strategy`` gives). Same behaviour, same
    attributes (kept in the core), but each call is one C call with no Python frame and no allocation, and the
    waiter's slot is driven without method calls; the spin clock is read without a call into Python unless a test
    gives one, and ``quiet`` without one when it is a QuietBound (a client's: ``Aeron.quiet_park_ns``; any other
    callable is called once per park). Unbound, or bound with timers (a driver agent), ``idle`` is
    WakeupIdleStrategy's."""

    __slots__ = ("_core",)

    state = _in_core("state")
    spins = _in_core("spins")
    yields = _in_core("yields")
    min_park_ns = _in_core("min_park_ns")
    max_park_ns = _in_core("max_park_ns")
    park_period_ns = _in_core("park_period_ns")
    spin_ns = _in_core("spin_ns")
    yield_ns = _in_core("yield_ns")
    quiet_park_ns = _in_core("quiet_park_ns")
    park_bound_ns = _in_core("park_bound_ns")
    _spin_start_ns = _in_core("spin_start_ns")
    parks = _in_core("parks")
    spin_misses = _in_core("spin_misses")
    _spin_skips = _in_core("spin_skips")
    spins_given_up = _in_core("spins_given_up")
    _prepared = _in_core("prepared")
    _after_work = _in_core("after_work")
    waiter = _in_core("waiter")
    fds = _in_core("fds")
    quiet = _in_core("quiet")
    _clock = property(_core_clock, _set_core_clock)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """As WakeupIdleStrategy's."""
        self._core = _wk.WakeupIdleCore(WakeupIdleStrategy.idle.__get__(self))
        super().__init__(*args, **kwargs)

    @property                                                           # type: ignore[override]
    def idle(self) -> Callable[[int], None]:
        """``idle(work_count=0)``: WakeupIdleStrategy.idle, compiled in client mode (the class docstring)."""
        return self._core.idle                                          # type: ignore[no-any-return]

    def bind(self, waiter: _Waiter | None, fds: Callable[[], Any] | None = None,
             timers: Any = None, quiet: Callable[[int], int] | None = None) -> "WakeupIdleStrategy":
        """As WakeupIdleStrategy's; client mode (the compiled idle) when ``waiter`` is set and ``timers`` not."""
        self._core.client = False
        super().bind(waiter, fds, timers, quiet)
        self._core.client = waiter is not None and self.timers is None
        return self

    def __repr__(self) -> str:
        """The settings and whether it is bound."""
        return "Client" + super().__repr__()


class AutoIdleStrategy(IdleStrategy):
    """A bound ``wakeup`` while our driver says every client of it signals what it writes
    (``ClientRegistry.all_signal``), ``fallback`` (the strategy Aeron's client would use: spin for a ping, backoff,
    ...) while a client that does not signal is connected: what ``Aeron.default_idle_strategy`` gives a loop on
    IPC or spy subscriptions on a driver of ours (docs/wakeup.md). An official client's IPC offer goes straight to
    the log and wakes nobody, so a parked loop would find its data only when the park's bound ends; our driver wakes
    every parked sleeper when such a client connects, and the loop goes on with ``fallback`` until it leaves.

    The verdict is read after each message and before each park while on ``wakeup`` (a park costs system calls;
    the read, a load), and after each message or :attr:`CHECK_EVERY` idle calls while on ``fallback``."""

    __slots__ = ("wakeup", "fallback", "_core")
    alias = "auto"
    CHECK_EVERY = 1024

    def __init__(self, wakeup: WakeupIdleStrategy, fallback: IdleStrategy, all_signal: Callable[[], bool]) -> None:
        """``wakeup`` bound to the board, ``fallback``, and ``all_signal()`` (the driver's verdict; a client's
        QuietBound.all_signal is read without a call into Python)."""
        self.wakeup = wakeup
        self.fallback = fallback
        # the per-call steps compiled (aeron._core.wakeup.AutoIdleCore), with a ClientWakeupIdleStrategy's idle
        # run inside the same call; a switch comes back here (_switch)
        self._core = _wk.AutoIdleCore(wakeup, fallback.idle, all_signal, self._switch, self.CHECK_EVERY)

    @property
    def on_wakeup(self) -> bool:
        """True while it idles with ``wakeup``."""
        return bool(self._core.on_wakeup)

    @property
    def switches(self) -> int:
        """Times it went from one strategy to the other (a count for tests)."""
        return int(self._core.switches)

    @property                                                           # type: ignore[override]
    def idle(self) -> Callable[[int], None]:
        """``idle(work_count=0)``: ``wakeup.idle`` or ``fallback.idle``, switching when the driver's verdict changed
        (compiled: AutoIdleCore)."""
        return self._core.idle                                          # type: ignore[no-any-return]

    def _switch(self, to_wakeup: bool, work_count: int) -> None:
        """The verdict changed: withdraw the park and go on with ``fallback``, or start ``wakeup`` over."""
        core = self._core
        core.switches += 1
        core.calls = 0
        if to_wakeup:
            core.on_wakeup = True
            self.wakeup.reset()
            self.wakeup.idle(work_count)
            return
        self.wakeup.cancel_park()
        core.on_wakeup = False
        self.fallback.reset()
        self.fallback.idle(work_count)

    def reset(self) -> None:
        """Both strategies start over (a prepared park withdrawn)."""
        self.wakeup.cancel_park()
        self.fallback.reset()

    def close(self) -> None:
        """Release the wake-up strategy's slot on the board."""
        self.wakeup.close()

    def __repr__(self) -> str:
        """Both strategies and which one idles now."""
        return f"AutoIdleStrategy({self.wakeup!r}, {self.fallback!r}, on_wakeup={self.on_wakeup})"
