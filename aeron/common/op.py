# SPDX-License-Identifier: Apache-2.0
"""Operations written once and driven by any face: the seam between a client's protocol and its sync and asyncio
faces (as asyncpg's protocol is to its connection).

An operation (:data:`Op`) is a generator that does one request's work in steps: it sends the request, polls for
the answer and, whenever it has to wait for the other end, yields the work it did (0: nothing arrived). It
returns its result (``StopIteration.value``) or raises the request's error. It never blocks, sleeps or takes a
lock, so how to wait is the face's choice:

- a sync face runs it to completion on the calling thread, idling with an idle strategy between steps:
  ``drive(op, idle_strategy, invoke)``;
- an asyncio face awaits between steps, so the loop runs while the answer is on its way:
  ``await drive_async(op, async_idle_strategy)``;
- a duty cycle (an agent) calls ``next(op)`` once per cycle and takes the result from ``StopIteration``.

The face serialises the operations of one session (one request in flight, as Aeron's clients lock). A driver
that stops early (an exception from the idle strategy or the invoker, a cancelled task) closes the operation, so
its clean-up runs at once: what it added (a publication, a subscription) is removed, not left to the collector.
The archive's client publishes its operations this way (``AeronArchive.start_recording_op`` and the others);
nothing here knows the archive, so the cluster's clients can be built the same way.
"""
from __future__ import annotations

from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from aeron.common.agent import IdleStrategy

T = TypeVar("T")
Op = Generator[int, None, T]
"""An operation: yields its work count (0 while it waits), returns its result."""


class AsyncIdleStrategy(Protocol):
    """What :func:`drive_async` waits with (``aeron.aio.AsyncBackoffIdleStrategy`` is one)."""

    def reset(self) -> None:
        """Forget any back-off state."""

    async def idle(self, work_count: int = 0) -> None:
        """Give the loop a turn, backing off while ``work_count`` is 0."""


def run_agent_invokers(aeron: Any, agent_invoker: Any = None) -> int:
    """One duty cycle of what a waiting client must keep running on its own thread: the Aeron client's conductor
    when it has no thread (``aeron.conductor_agent_invoker``), and an application's ``agent_invoker``. Returns the
    work done (Aeron's ``Context.runAgentInvokers`` of the archive and cluster clients)."""
    work = 0
    if aeron is not None and aeron.conductor_agent_invoker is not None and not aeron.is_closed:
        work += aeron.conductor_agent_invoker.invoke()
    if agent_invoker is not None:
        work += agent_invoker.invoke()
    return work


def drive(op: Op[T], idle_strategy: IdleStrategy, invoke: Callable[[], int] | None = None) -> T:
    """Run ``op`` to completion on this thread: after each step ``invoke()`` (an agent invoker to keep running,
    e.g. the client conductor's when it has no thread; its work counts) and ``idle_strategy.idle(work)``.

    Returns the operation's result and raises its error; the operation is closed if this stops early.
    """
    idle_strategy.reset()
    try:
        while True:
            work = next(op)
            if invoke is not None:
                work += invoke()
            idle_strategy.idle(work)
    except StopIteration as stop:
        return stop.value       # type: ignore[no-any-return]
    finally:
        op.close()


async def drive_async(op: Op[T], idle_strategy: AsyncIdleStrategy) -> T:
    """Run ``op`` to completion, awaiting ``idle_strategy.idle(work)`` after each step. Returns the operation's
    result and raises its error; cancelling the awaiting task closes the operation."""
    idle_strategy.reset()
    try:
        while True:
            await idle_strategy.idle(next(op))
    except StopIteration as stop:
        return stop.value       # type: ignore[no-any-return]
    finally:
        op.close()


__all__ = ["Op", "AsyncIdleStrategy", "drive", "drive_async", "run_agent_invokers"]
