# SPDX-License-Identifier: Apache-2.0
"""AsyncPublication: the sync Publication plus waiting. An offer that succeeds returns without suspending."""
from __future__ import annotations

import asyncio
from typing import Any

from aeron.aio._idle import AsyncBackoffIdleStrategy, LoopShare, deadline
from aeron.client import BufferClaim, Publication
from aeron.common.errors import PublicationClosedError

CLOSED = Publication.CLOSED                                     # the codes that end a publication's life
MAX_POSITION_EXCEEDED = Publication.MAX_POSITION_EXCEEDED


def _closed_error(result: int, publication: Any) -> PublicationClosedError:
    reason = "closed" if result == CLOSED else "at its maximum position"
    return PublicationClosedError(f"publication {publication.registration_id} is {reason} ({result})")


class AsyncPublication(LoopShare):
    """``await offer(...)`` returns the new position. Back pressure, admin action and not connected are waited out
    with a loop-friendly backoff; CLOSED and MAX_POSITION_EXCEEDED raise PublicationClosedError; a ``timeout``
    (seconds) that expires raises AeronTimeoutError (also a TimeoutError). Cancelling an offer that has not
    succeeded leaves nothing in the stream. After 256 offers accepted in a row, or 0.5 ms of them, the next one
    first gives the loop a turn (sleep(0), ``_idle.LoopShare``), so a burst into a large window cannot starve
    the loop."""

    __slots__ = ("publication",)

    def __init__(self, publication: Any) -> None:
        """Wrap a sync Publication or ExclusivePublication (made by ``AsyncAeron.add_publication``)."""
        self.publication = publication
        super().__init__()

    async def offer(self, buffer: Any, offset: int = 0, length: int = -1, timeout: float | None = None) -> int:
        """Offer ``buffer[offset:offset + length]`` as one message; returns the new stream position.

        Returns without suspending when the offer is accepted at once. NOT_CONNECTED, BACK_PRESSURED and
        ADMIN_ACTION are waited out; CLOSED and MAX_POSITION_EXCEEDED raise PublicationClosedError; AeronTimeoutError
        after ``timeout`` seconds (None: no limit).
        """
        run = self._run
        self._run = run + 1
        if run & 15 == 0 and self._turn_due(run):
            await asyncio.sleep(0)                      # before the offer: a cancel here sends nothing
        result = self.publication.offer(buffer, offset, length)
        if result > 0:
            return result                               # fast path: nothing awaited
        if result == CLOSED or result == MAX_POSITION_EXCEEDED:
            raise _closed_error(result, self.publication)
        return await self._offer_slow(buffer, offset, length, timeout)

    async def _offer_slow(self, buffer: Any, offset: int, length: int, timeout: float | None) -> int:
        idle = AsyncBackoffIdleStrategy()
        offer = self.publication.offer
        async with deadline(timeout, "offer accepted"):
            while True:
                await idle.idle(0)
                result = offer(buffer, offset, length)
                if result > 0:
                    self._run = 0
                    return result
                if result == CLOSED or result == MAX_POSITION_EXCEEDED:
                    raise _closed_error(result, self.publication)
        raise AssertionError("unreachable")

    def try_claim(self, length: int, timeout: float | None = None) -> "_AsyncClaim":
        """``async with pub.try_claim(n) as claim:`` waits for the claim, commits on exit (aborts on error)."""
        return _AsyncClaim(self.publication, length, timeout)

    async def wait_connected(self, timeout: float | None = None) -> None:
        """Wait until a subscriber is connected: PublicationClosedError if the publication closes,
        AeronTimeoutError after ``timeout`` seconds."""
        idle = AsyncBackoffIdleStrategy()
        async with deadline(timeout, "publication connected"):
            while not self.publication.is_connected:
                if self.publication.is_closed:
                    raise PublicationClosedError(f"publication {self.publication.registration_id} is closed")
                await idle.idle(0)

    def __getattr__(self, name: str) -> Any:
        """Everything else (``position``, ``is_connected``, ``session_id``, ...) is the sync publication's."""
        # position, position_limit, is_connected, session_id, ... come from the sync publication
        return getattr(self.publication, name)

    def close(self) -> None:
        """Close the publication. Idempotent."""
        self.publication.close()

    def __repr__(self) -> str:
        """The wrapped publication's summary."""
        return f"<AsyncPublication {self.publication!r}>"


class _AsyncClaim:
    __slots__ = ("_publication", "_length", "_timeout", "_claim")

    def __init__(self, publication: Any, length: int, timeout: float | None) -> None:
        self._publication = publication
        self._length = length
        self._timeout = timeout
        self._claim = BufferClaim()

    async def __aenter__(self) -> BufferClaim:
        claim = self._claim
        result = self._publication.try_claim(self._length, claim)
        if result > 0:
            return claim
        idle = AsyncBackoffIdleStrategy()
        async with deadline(self._timeout, f"claim of {self._length} bytes granted"):
            while True:
                if result == CLOSED or result == MAX_POSITION_EXCEEDED:
                    raise _closed_error(result, self._publication)
                await idle.idle(0)
                result = self._publication.try_claim(self._length, claim)
                if result > 0:
                    return claim
        raise AssertionError("unreachable")

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        if self._claim.is_active:
            if exc_type is None:
                self._claim.commit()
            else:
                self._claim.abort()
        return False
