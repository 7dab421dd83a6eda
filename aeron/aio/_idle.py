# SPDX-License-Identifier: Apache-2.0
"""Waiting on the loop. Shared memory gives the loop nothing to select on, so without help an await that has to
wait backs off (sleep(0) a few times, then doubling sleeps up to a cap) and resets when work shows up. With the
aeron dir's wake-up board (docs/wakeup.md) it instead parks on a file descriptor the loop watches: whoever writes
the data (an IPC publisher of ours, our driver's receiver) sends one datagram to it, and the await resumes at
once; the park is still bounded by the same cap, so a writer that does not signal is picked up as before."""
from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Callable
from time import perf_counter
from typing import TYPE_CHECKING, Any

from aeron.common.errors import AeronTimeoutError

if TYPE_CHECKING:
    from aeron.common.wakeup import Waiter

if sys.version_info >= (3, 11):
    from asyncio import timeout as _timeout
else:   # asyncio.timeout's origin; it raises asyncio.TimeoutError, not yet the builtin TimeoutError on 3.10
    from async_timeout import timeout as _timeout

DEFAULT_SPINS = 8                  # sleep(0) rounds: let other tasks run, come straight back
DEFAULT_MIN_SLEEP_S = 50e-6
DEFAULT_MAX_SLEEP_S = 1e-3         # the cap: 1 ms of extra latency at worst once idle
# An await that finds its work done returns without suspending; a loop of such awaits (``async for`` over a
# backlog, offers into a large window) would never give the loop a turn. So after YIELD_EVERY such results in a
# row, or once a run of them has held the loop for YIELD_AFTER_S, the next one yields once (sleep(0)). The time
# bound matters because a timer that falls due during a run fires only after up to three runs (the one under way,
# the one queued before the timer's callback, then the woken task's step): at ~7 us a message on Python 3.10, 256
# messages alone held the loop ~2 ms, and a 10 ms ticker came 5 ms late. The clock is read every 16 results.
YIELD_EVERY = 256
YIELD_AFTER_S = 0.5e-3


class LoopShare:
    """Base of the awaitables with a fast path: ``_run`` counts the results returned in a row without suspending.
    Each fast-path attempt does ``run = self._run; self._run = run + 1`` and, every 16 results, asks
    :meth:`_turn_due` whether to ``await asyncio.sleep(0)`` first; a suspension sets ``_run = 0``. The count stays
    inline because a method call per message costs ~10 % of a 1 us receive."""

    __slots__ = ("_run", "_since")

    def __init__(self) -> None:
        self._run = 0
        self._since = 0.0

    def _turn_due(self, run: int) -> bool:
        """For ``run`` a multiple of 16: True when the caller must yield first (:data:`YIELD_EVERY` results or
        :data:`YIELD_AFTER_S` seconds since the run began, whichever comes first)."""
        if run == 0:
            self._since = perf_counter()
            return False
        if run >= YIELD_EVERY or perf_counter() - self._since >= YIELD_AFTER_S:
            self._run = 0
            return True
        return False


class AsyncBackoffIdleStrategy:
    __slots__ = ("_spins", "_min", "_max", "_count", "_sleep")

    def __init__(self, spins: int = DEFAULT_SPINS, min_sleep_s: float = DEFAULT_MIN_SLEEP_S,
                 max_sleep_s: float = DEFAULT_MAX_SLEEP_S) -> None:
        self._spins = spins
        self._min = min_sleep_s
        self._max = max_sleep_s
        self._count = 0
        self._sleep = min_sleep_s

    def reset(self) -> None:
        self._count = 0
        self._sleep = self._min

    async def idle(self, work_count: int = 0, limit_s: float | None = None) -> None:
        """One step of the backoff; a sleep lasts ``limit_s`` at most (what is left of a caller's timeout)."""
        if work_count > 0:
            self.reset()
            await asyncio.sleep(0)
            return
        if self._count < self._spins:
            self._count += 1
            await asyncio.sleep(0)
            return
        sleep = self._sleep
        await asyncio.sleep(sleep if limit_s is None else max(min(sleep, limit_s), 0.0))
        self._sleep = min(sleep * 2, self._max)


class AsyncWakeup:
    """One client's waiter on the wake-up board, watched by the loop (``add_reader``). Any number of tasks may
    wait on it at once: a wake-up resumes them all, and each polls its own subscription again."""

    __slots__ = ("waiter", "_loop", "_futures", "wakeups", "quiet")

    def __init__(self, waiter: Waiter, loop: asyncio.AbstractEventLoop,
                 quiet: Callable[[int], int] | None = None) -> None:
        """Watch ``waiter`` on ``loop``; ``quiet(ns)`` may raise the quiet bound (Aeron.quiet_park_ns)."""
        self.waiter = waiter
        self.quiet = quiet
        self._loop = loop
        self._futures: list[asyncio.Future[bool]] = []
        self.wakeups = 0
        loop.add_reader(waiter.fileno(), self._on_readable)

    def _on_readable(self) -> None:
        self.waiter.drain()
        self.waiter.cancel()
        self.wakeups += 1
        futures, self._futures = self._futures, []
        for future in futures:
            if not future.done():
                future.set_result(True)

    def prepare(self) -> None:
        """Mark parked; the caller polls once more before :meth:`wait` (so no write is missed)."""
        self.waiter.prepare()

    async def wait(self, timeout_s: float) -> bool:
        """Until a wake-up (True), or ``timeout_s`` (False); at once (True) when a wake-up already un-parked the
        waiter since this task's :meth:`prepare` (the caller polls, then prepares again)."""
        if not self.waiter.prepared:
            return True
        future: asyncio.Future[bool] = self._loop.create_future()
        self._futures.append(future)
        handle = self._loop.call_later(timeout_s, _resolve, future)
        try:
            return await future
        finally:
            handle.cancel()
            if future in self._futures:
                self._futures.remove(future)
            if not self._futures:
                self.waiter.cancel()        # nobody waits any more: writers need not signal us

    def close(self) -> None:
        """Stop watching the descriptor and resume every waiting task (the waiter is the client's to close)."""
        with contextlib.suppress(Exception):
            self._loop.remove_reader(self.waiter.fileno())
        futures, self._futures = self._futures, []
        for future in futures:
            _resolve(future)


def _resolve(future: asyncio.Future[bool]) -> None:
    if not future.done():
        future.set_result(False)


QUIET_PARK_S = 16e-3               # the bound a park grows to while nothing happens (docs/wakeup.md)
QUIET_PARK_NS = 16_000_000


class AsyncWakeupIdleStrategy(AsyncBackoffIdleStrategy):
    """AsyncBackoffIdleStrategy whose sleeps become parks on an :class:`AsyncWakeup`: sleep(0) rounds (at least
    ``spins`` of them, and for ``spin_s`` since the first), then mark parked and return (the caller polls once more),
    then wait. A park is bounded by the backoff cap (1 ms), doubling with each park that times out up to
    QUIET_PARK_S (or what the wake-up's ``quiet`` allows: longer while our driver says every client signals), as
    WakeupIdleStrategy."""

    __slots__ = ("_wakeup", "_prepared", "_bound", "_spin_s", "_spin_until")

    def __init__(self, wakeup: AsyncWakeup, spins: int = DEFAULT_SPINS, max_sleep_s: float = DEFAULT_MAX_SLEEP_S,
                 spin_s: float = 0.0) -> None:
        super().__init__(spins, DEFAULT_MIN_SLEEP_S, max_sleep_s)
        self._wakeup = wakeup
        self._prepared = False
        self._bound = max_sleep_s
        self._spin_s = spin_s
        self._spin_until = 0.0

    async def idle(self, work_count: int = 0, limit_s: float | None = None) -> None:
        """One step: a loop turn, the park's mark, or the park (``limit_s`` at most: what is left of a caller's
        timeout)."""
        if work_count > 0:
            self._bound = self._max
            self._spin_until = 0.0
            await super().idle(work_count)
            return
        if self._count < self._spins:
            self._count += 1
            await asyncio.sleep(0)
            return
        if self._spin_s and self._spinning():
            await asyncio.sleep(0)
            return
        if not self._prepared:
            self._prepared = True
            self._wakeup.prepare()
            return                          # the caller's next poll is the re-check
        self._prepared = False
        quiet = self._wakeup.quiet
        cap = QUIET_PARK_S if quiet is None else quiet(QUIET_PARK_NS) / 1e9
        bound = min(self._bound, cap)
        park = bound if limit_s is None else max(min(bound, limit_s), 0.0)
        if not await self._wakeup.wait(park):
            self._bound = min(bound * 2, cap)

    def _spinning(self) -> bool:
        """True until ``spin_s`` has passed since the first call after the counted rounds."""
        now = perf_counter()
        if not self._spin_until:
            self._spin_until = now + self._spin_s
            return True
        return now < self._spin_until


# How long an await on shared memory (an IPC or spy subscription) gives the loop turns before it parks: longer than a
# parked partner's wake-up on an idle vCPU (15 to 25 µs here), so that a pong woken by this task's offer replies
# while it still spins, and the pong's own spin sees the next offer (docs/wakeup.md). A network subscription's data
# comes through the driver, tens of µs at best: there the rounds alone (DEFAULT_SPINS).
SHARED_MEMORY_SPIN_S = 50e-6


def async_idle(wakeup: AsyncWakeup | None, spin_s: float = 0.0) -> AsyncBackoffIdleStrategy:
    """The idle strategy an await uses: parking on ``wakeup`` when the client has one (after ``spin_s`` of loop
    turns), else backoff."""
    return AsyncBackoffIdleStrategy() if wakeup is None else AsyncWakeupIdleStrategy(wakeup, spin_s=spin_s)


class deadline:                                                        # noqa: N801 - used as a function
    """``async with deadline(t, "offer accepted"):`` — AeronTimeoutError (a TimeoutError) when ``t`` seconds pass
    (``None``: no limit); a TimeoutError of the block's own becomes one too.

    A class rather than a generator-based context manager, and no timer at all without a limit: an await that has to
    wait enters one each time (every ping of a round trip whose answer was not there yet), and the generator's
    machinery cost about as much as the timer itself."""

    __slots__ = ("_seconds", "_what", "_timer")

    def __init__(self, timeout: float | None, what: str) -> None:
        self._seconds = timeout
        self._what = what
        self._timer: Any = None

    async def __aenter__(self) -> None:
        if self._seconds is not None:
            timer = _timeout(self._seconds)
            await timer.__aenter__()
            self._timer = timer

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: Any) -> bool:
        timer, self._timer = self._timer, None
        try:
            if timer is not None:
                await timer.__aexit__(exc_type, exc, tb)     # raises TimeoutError once the limit cancelled the block
        except (TimeoutError, asyncio.TimeoutError) as raised:
            if isinstance(raised, AeronTimeoutError):
                raise
            raise AeronTimeoutError(f"{self._what}: not within {self._seconds} s") from None
        if exc_type is not None and issubclass(exc_type, (TimeoutError, asyncio.TimeoutError)) and \
                not issubclass(exc_type, AeronTimeoutError):
            raise AeronTimeoutError(f"{self._what}: not within {self._seconds} s") from None
        return False
