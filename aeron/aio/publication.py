# SPDX-License-Identifier: Apache-2.0
"""AsyncPublication: the sync Publication plus waiting. An offer that succeeds returns without suspending."""
from __future__ import annotations

import asyncio
from types import TracebackType
from typing import TYPE_CHECKING

from aeron.aio._idle import AsyncBackoffIdleStrategy, LoopShare, deadline
from aeron.client import BufferClaim, ExclusivePublication, Publication
from aeron.common.errors import PublicationClosedError

if TYPE_CHECKING:
    from typing_extensions import Buffer

CLOSED = Publication.CLOSED                                     # the codes that end a publication's life
MAX_POSITION_EXCEEDED = Publication.MAX_POSITION_EXCEEDED


def _closed_error(result: int, publication: Publication | ExclusivePublication) -> PublicationClosedError:
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

    def __init__(self, publication: Publication | ExclusivePublication) -> None:
        """Wrap a sync Publication or ExclusivePublication (made by ``AsyncAeron.add_publication``)."""
        self.publication = publication
        super().__init__()

    async def offer(self, buffer: Buffer, offset: int = 0, length: int = -1, timeout: float | None = None) -> int:
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

    async def _offer_slow(self, buffer: Buffer, offset: int, length: int, timeout: float | None) -> int:
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

    # The sync publication's state, typed (anything else: ``.publication``).
    @property
    def channel(self) -> str:
        """The channel the publication was added with."""
        return self.publication.channel

    @property
    def stream_id(self) -> int:
        """The stream id."""
        return self.publication.stream_id

    @property
    def session_id(self) -> int:
        """The session id (of this publication's stream)."""
        return self.publication.session_id

    @property
    def registration_id(self) -> int:
        """The registration id the driver gave it."""
        return self.publication.registration_id

    @property
    def position(self) -> int:
        """The position the next message will be offered at."""
        return self.publication.position

    @property
    def position_limit(self) -> int:
        """How far offers may go before back pressure (flow control's limit)."""
        return self.publication.position_limit

    @property
    def max_payload_length(self) -> int:
        """The largest payload that fits one frame (a larger message is fragmented)."""
        return self.publication.max_payload_length

    @property
    def max_message_length(self) -> int:
        """The largest message an offer accepts."""
        return self.publication.max_message_length

    @property
    def is_connected(self) -> bool:
        """True while at least one subscriber is connected."""
        return self.publication.is_connected

    @property
    def is_closed(self) -> bool:
        """True once the publication is closed."""
        return self.publication.is_closed

    if not TYPE_CHECKING:
        def __getattr__(self, name: str) -> object:
            """Everything else is the sync publication's (at run time; type checkers see only what is above)."""
            return getattr(self.publication, name)

    def close(self) -> None:
        """Close the publication. Idempotent."""
        self.publication.close()

    def __repr__(self) -> str:
        """The wrapped publication's summary."""
        return f"<AsyncPublication {self.publication!r}>"


class _AsyncClaim:
    __slots__ = ("_publication", "_length", "_timeout", "_claim")

    def __init__(self, publication: Publication | ExclusivePublication, length: int, timeout: float | None) -> None:
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

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> bool:
        if self._claim.is_active:
            if exc_type is None:
                self._claim.commit()
            else:
                self._claim.abort()
        return False
