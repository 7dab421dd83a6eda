# SPDX-License-Identifier: Apache-2.0
"""An embedded driver's agents and an application's agents on one thread, with one park (docs/wakeup.md).

The threads of one Python process take turns on the GIL: a driver thread that inserts a datagram and wakes the
thread polling it pays a wake-up (a futex, then the GIL) on every hop, and on a machine with fewer cores than busy
threads the woken thread waits for whole duty cycles of the others. Run as one agent on one thread, the driver's
receiver inserts the datagram and the subscriber polls it in the same duty cycle, and what it offers in reply is
sent by the sender in the next. A cluster member (``ClusteredMediaDriver.launch(one_thread=True)``) runs so.
"""
from __future__ import annotations

from typing import Any, Callable

from aeron.common.agent import Agent, AgentInvoker, IdleStrategy
from aeron.common.errors import ConfigurationError

__all__ = ["DriverThreadAgent"]


class DriverThreadAgent(Agent):
    """One duty cycle of an INVOKER-mode driver (``MediaDriver.invoker``) and then of each invoker added (an Aeron
    client's conductor, an archive's agents, a consensus module), in that order; run by one AgentRunner with
    :meth:`bind`'s idle strategy.

    :meth:`invoke` is the same cycle for a part's synchronous wait on this thread (an AeronArchive request of the
    consensus module, the consensus module's wait for its services): the parts already in a duty cycle on the stack
    are left out, so that nothing runs inside itself, and what the wait is for (the archive's answer, the driver's)
    still comes. An Aeron client on this thread waits for the driver alone (its ``driver_agent_invoker``: the driver
    never waits on anyone).

    The park (:meth:`bind`) is one waiter of the wake-up board for all of it: the driver's bits (client commands,
    data to send) and UDP sockets, and the bits of every stream the other parts poll; it ends at the driver's next
    timer (``time_to_deadline_ns``) and within the shortest quiet bound any part asks (``quiet_park_ns``: a consensus
    module's election or heartbeat timeout, an archive's replay).

    Closing the runner closes none of the parts: each is closed by its owner (ClusteredMediaDriver.close), once the
    thread has stopped."""

    def __init__(self, driver: Any, role_name: str = "driver-thread") -> None:
        """Run ``driver`` (a MediaDriver in ThreadingMode.INVOKER; ConfigurationError otherwise) first in each cycle."""
        invoker = driver.invoker
        if invoker is None:
            raise ConfigurationError("DriverThreadAgent needs a MediaDriver in ThreadingMode.INVOKER")
        self.role_name = role_name
        self._driver = driver
        self._driver_invoker: AgentInvoker = invoker
        self._driver_part = _Part(invoker, None)
        self._signalling = signalling = driver.invoked_agent if hasattr(driver.invoked_agent, "active") else None
        self._parts: list[_Part] = []
        self._quiets: list[Callable[[int], int]] = []
        self._after_cycle: list[Callable[[], None]] = []
        self.idle_strategy: IdleStrategy | None = None
        self.waiter: Any = None
        self.active = True
        if signalling is not None:
            # what a park asks every time (WakeupIdleStrategy.idle, _rechecked, _data_first): the driver's own, one
            # call fewer each (not quiet_park_ns: the strategy holds that method from bind, before the parts' bounds)
            self.time_to_deadline_ns = signalling.time_to_deadline_ns     # type: ignore[method-assign]
            self.commands_pending = signalling.commands_pending           # type: ignore[method-assign]
            # a wake-up whose data half and parts' turns moved nothing: the driver says whether a whole cycle is owed
            self.wake_served = signalling.wake_served

    def add(self, invoker: AgentInvoker, quiet: Callable[[int], int] | None = None,
            start_when: Callable[[], bool] | None = None, after_cycle: Callable[[], None] | None = None,
            driver_fed: bool = False) -> None:
        """Run ``invoker`` after the ones added before; ``quiet(quiet_ns)`` bounds the thread's parks as the part's
        own idle strategy's quiet bound would. One not started yet is started on the thread (:meth:`on_start`), its
        ``on_start`` running the other parts while it waits (a consensus module's waits for its archive and its
        services); one after it not started yet is started inside that wait, on its first turn once ``start_when()``
        is true (a hosted clustered service, once the consensus module's start has made what the service's start
        reads, and waits for the service's ack: the service's start then needs nothing of the part below it).
        ``after_cycle()`` runs at the end of each cycle (:meth:`invoke`, :meth:`fast_work`), once the data half has sent
        what the parts offered: a consensus module's wake-up of the services it owes (a process woken earlier may take
        the core from this thread before the sends). ``driver_fed``: the part's input is the driver's conductor alone
        (a client's conductor: the broadcast to clients, which only a whole cycle of the driver writes; its own timers,
        keepalives and timeouts of seconds, wait at most for the next whole cycle of the thread, owed within
        WakeupIdleStrategy.full_cycle_defer_ns while data moves, and run after every park that times out): it skips
        its turn in a data half (:meth:`fast_work`) when its last turn found nothing and no whole driver cycle began
        since."""
        self._parts.append(_Part(invoker, start_when, driver_fed and self._signalling is not None))
        if after_cycle is not None:
            self._after_cycle.append(after_cycle)
        if quiet is not None:
            self._quiets.append(quiet)

    def on_start(self) -> None:
        """Start the invokers added not started, in order, each while the others run in its waits."""
        for part in self._parts:
            if part.startable():
                part.busy = True
                try:
                    part.invoker.start()
                finally:
                    part.busy = False

    def bind(self, idle: IdleStrategy, mask: int) -> IdleStrategy:
        """Bind ``idle`` (a ``wakeup`` idle strategy; another kind is left as it is) to park on the driver's wake-ups
        and ``mask`` (aeron.common.wakeup.streams_mask of what the parts poll, CLIENTS for their clients'
        conductors); more bits can be added later with ``waiter.set_mask``. Returns ``idle``."""
        self.idle_strategy = idle
        self.waiter = self._driver.bind_invoker_idle_strategy(idle, mask, self)
        return idle

    def add_mask(self, mask: int) -> None:
        """Also wake for ``mask``'s bits (a part that polls a stream it did not when :meth:`bind` ran)."""
        waiter = self.waiter
        if waiter is not None:
            waiter.set_mask(waiter.mask | mask)

    def do_work(self) -> int:
        """One duty cycle of the driver and of each part."""
        return self.invoke()

    def invoke(self) -> int:
        """One duty cycle of the driver and of each part not already in a duty cycle on this thread; returns the work.
        ``active`` is then whether anything but the driver's timers ran (a wake-up idle strategy spins only then)."""
        driver_work = 0
        driver = self._driver_part
        if not driver.busy:
            driver.busy = True
            try:
                driver_work = driver.invoke()
            finally:
                driver.busy = False
        work = self._run_parts(False)
        signalling = self._signalling
        self.active = work > 0 or (signalling.active if signalling is not None else driver_work > 0)
        for after in self._after_cycle:
            after()
        return work + driver_work

    def _run_parts(self, data_half: bool) -> int:
        # one duty cycle of each part not in one already on this thread's stack: a flag per part, no lookups (this
        # runs several times per message); in a data half, not a driver-fed part with nothing new for it (add)
        work = 0
        signalling = self._signalling
        for part in self._parts:
            if part.busy:
                continue
            if part.driver_fed:
                cycles = signalling.cycles
                if data_half and part.idle_at_cycle == cycles:
                    continue
            part.busy = True
            try:
                if part.started or part.invoker.is_started:
                    part.started = True
                    done = part.invoke()
                    if part.driver_fed:
                        # read before its turn: a driver cycle run during it (a wait) counts as one since
                        part.idle_at_cycle = cycles if done == 0 else -1
                    work += done
                elif part.startable():
                    # one added after a part whose start waits for it (a hosted clustered service, whose first ack
                    # the consensus module's on_start awaits): started here, inside that wait
                    part.invoker.start()
                    work += 1
            finally:
                part.busy = False
        return work

    # -- the park's timers (WakeupIdleStrategy's ``timers``) ----------------------------------------------------

    def time_to_deadline_ns(self, far_ns: int) -> int:
        """Nanoseconds until the driver's next timer is due, at most ``far_ns`` (with a signalling driver, its own
        method: see __init__)."""
        return far_ns

    def quiet_park_ns(self, quiet_ns: int) -> int:
        """The longest park now: the driver's quiet bound, within each part's."""
        signalling = self._signalling
        bound = signalling.quiet_park_ns(quiet_ns) if signalling is not None else quiet_ns
        for quiet in self._quiets:
            part_bound = quiet(quiet_ns)
            if part_bound < bound:
                bound = part_bound
        return bound

    def fast_work(self, wait_ns: int = 0, spin_ns: int = 0, passes_left: int = 1, defer_ns: int = 0) -> int:
        """The driver's data half (SignallingAgent.fast_work: its send and receive passes, without waiting), then a
        duty cycle of each part, then the data half again when they did work (what they offered is sent now): what a
        wake-up runs first (WakeupIdleStrategy._data_first), the rest of the driver's cycle (status messages, control
        frames, its conductor, timers) owed for up to a millisecond. Returns the passes that moved data (a part's work
        counts as one), -1 when the driver has no data half and the parts did nothing."""
        signalling = self._signalling
        moved = signalling.fast_work(0, 0, passes_left, defer_ns) if signalling is not None else -1
        work = self._run_parts(True)
        if work:
            self.active = True
            moved = max(moved, 0) + 1
            if signalling is not None:
                moved += max(signalling.fast_work(0, 0, passes_left, defer_ns), 0)
        for after in self._after_cycle:
            after()
        return moved

    fast_idle_ns = 0        # no spin of its own (WakeupIdleStrategy.data_spin_ns is 0 on this thread)

    def commands_pending(self) -> bool:
        """Whether a client command or a command queued for the driver's agents waits (what a data half leaves to a
        whole cycle; with a signalling driver, its own method: see __init__)."""
        return False

    def wait_idle_strategy(self) -> IdleStrategy:
        """An idle strategy for a part's synchronous waits on this thread (a consensus module's blocking steps): each
        ``idle`` first runs the other parts (:meth:`invoke`), then idles with the thread's strategy."""
        return _WaitIdleStrategy(self)


class _Part:
    """One invoker on the thread: whether it is in a duty cycle (or its start) on the thread's stack now, and whether
    it has started (once true, it stays so)."""

    __slots__ = ("invoker", "invoke", "start_when", "busy", "started", "driver_fed", "idle_at_cycle")

    def __init__(self, invoker: AgentInvoker, start_when: Callable[[], bool] | None, driver_fed: bool = False) -> None:
        self.invoker = invoker
        self.invoke = invoker.invoke
        self.start_when = start_when
        self.busy = False
        self.started = False
        self.driver_fed = driver_fed
        self.idle_at_cycle = -1        # the driver's whole cycles when its last turn found nothing; -1: it found work

    def startable(self) -> bool:
        invoker = self.invoker
        if invoker.is_started or invoker.is_closed:
            return False
        start_when = self.start_when
        return start_when is None or start_when()


class _WaitIdleStrategy(IdleStrategy):
    """DriverThreadAgent.wait_idle_strategy: the thread's other parts run while one of them waits."""

    __slots__ = ("_thread",)

    def __init__(self, thread: DriverThreadAgent) -> None:
        self._thread = thread

    def idle(self, work_count: int = 0) -> None:
        """Run the other parts once, then idle with the thread's strategy on the work of both."""
        thread = self._thread
        work = thread.invoke()
        if work_count > 0:
            thread.active = True
        thread.idle_strategy.idle(work_count + work)                   # type: ignore[union-attr]

    def reset(self) -> None:
        """The thread's strategy starts over."""
        self._thread.idle_strategy.reset()                              # type: ignore[union-attr]

    def wake(self) -> None:
        """End a park in progress (a close from another thread)."""
        wake = getattr(self._thread.idle_strategy, "wake", None)
        if wake is not None:
            wake()
