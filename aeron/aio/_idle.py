# SPDX-License-Identifier: Apache-2.0
"""Waiting without a file descriptor: shared memory gives the loop nothing to select on, so an await that has to
wait backs off (sleep(0) a few times, then doubling sleeps up to a cap) and resets when work shows up."""
from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator

from aeron.common.errors import AeronTimeoutError

if sys.version_info >= (3, 11):
    from asyncio import timeout as _timeout
else:   # asyncio.timeout's origin; it raises asyncio.TimeoutError, not yet the builtin TimeoutError on 3.10
    from async_timeout import timeout as _timeout

DEFAULT_SPINS = 8                  # sleep(0) rounds: let other tasks run, come straight back
DEFAULT_MIN_SLEEP_S = 50e-6
DEFAULT_MAX_SLEEP_S = 1e-3         # the cap: 1 ms of extra latency at worst once idle
# An await that finds its work done returns without suspending; a loop of such awaits (``async for`` over a
# backlog, offers into a large window) would never give the loop a turn. So every YIELD_EVERY consecutive
# results that did not suspend, the next one yields once (sleep(0)): timers and other tasks run at least every
# ~YIELD_EVERY messages (a few hundred microseconds), at a cost of one loop turn per YIELD_EVERY messages.
YIELD_EVERY = 256


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

    async def idle(self, work_count: int = 0) -> None:
        if work_count > 0:
            self.reset()
            await asyncio.sleep(0)
            return
        if self._count < self._spins:
            self._count += 1
            await asyncio.sleep(0)
            return
        await asyncio.sleep(self._sleep)
        self._sleep = min(self._sleep * 2, self._max)


@contextlib.asynccontextmanager
async def deadline(timeout: float | None, what: str) -> AsyncIterator[None]:
    """``async with deadline(t, "offer accepted"):`` — AeronTimeoutError (a TimeoutError) when ``t`` seconds pass."""
    try:
        async with _timeout(timeout):
            yield
    except (TimeoutError, asyncio.TimeoutError) as exc:
        if isinstance(exc, AeronTimeoutError):
            raise
        raise AeronTimeoutError(f"{what}: not within {timeout} s") from None
