# SPDX-License-Identifier: Apache-2.0
"""Agents, the runners and invokers that drive their duty cycles, idle strategies and clocks.

Port of Agrona's Agent / AgentRunner / AgentInvoker / CompositeAgent and idle strategies, with the names Aeron's
drivers accept for ``AERON_*_IDLE_STRATEGY`` (aeron_agent.c) and ``aeron.*.idle.strategy`` (Configuration.java).
An agent's ``do_work`` returns how much work it did; the idle strategy backs off only while that is 0.
Agents survive errors: an exception from ``do_work`` goes to the error handler, bumps the error counter and
the loop goes on. :class:`AgentTerminationError` ends the loop cleanly.

Cold path: one Python call per duty cycle, never per message.
"""
from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from aeron.common.channel_uri import parse_duration_ns
from aeron.common.errors import AeronTimeoutError, AgentTerminationError, ConfigurationError, IllegalStateError

__all__ = [
    "Agent", "AgentRunner", "AgentInvoker", "CompositeAgent", "AgentTerminationError", "ErrorHandler",
    "IdleStrategy", "NoOpIdleStrategy", "BusySpinIdleStrategy", "YieldingIdleStrategy", "SleepingIdleStrategy",
    "SleepingMillisIdleStrategy", "BackoffIdleStrategy", "idle_strategy_from_name",
    "epoch_ms", "epoch_ns", "nano_time", "CachedNanoClock", "CachedEpochClock",
]

_log = logging.getLogger("aeron.agent")


def _add_note(error: BaseException, note: str) -> None:
    if sys.version_info >= (3, 11):
        error.add_note(note)
    else:   # 3.10 has no add_note: the same attribute, which its tracebacks do not print
        error.__dict__.setdefault("__notes__", []).append(note)


ErrorHandler = Callable[[BaseException], Any]


class _Counter(Protocol):
    def increment(self) -> int: ...


# ---- clocks ----------------------------------------------------------------------------------------------------

def epoch_ms() -> int:
    """Wall-clock milliseconds since the Unix epoch (Aeron's EpochClock; heartbeats and timestamps in cnc.dat)."""
    return time.time_ns() // 1_000_000


def epoch_ns() -> int:
    """Wall-clock nanoseconds since the Unix epoch."""
    return time.time_ns()


def nano_time() -> int:
    """Monotonic nanoseconds from an arbitrary origin (Aeron's NanoClock; timeouts and intervals)."""
    return time.monotonic_ns()


class CachedNanoClock:
    """A nano clock read once per duty cycle (Agrona's CachedNanoClock): ``now = clock.update()`` at the top of
    ``do_work``, then ``clock.nano_time()`` everywhere else in that cycle costs no system call."""

    __slots__ = ("_clock", "_time_ns")

    def __init__(self, clock: Callable[[], int] = nano_time) -> None:
        """Read ``clock`` (monotonic nanoseconds) once now; later reads come from :meth:`update`."""
        self._clock = clock
        self._time_ns = clock()

    def update(self, time_ns: int | None = None) -> int:
        """Store ``time_ns``, or read the source clock when None; returns the stored value."""
        self._time_ns = self._clock() if time_ns is None else time_ns
        return self._time_ns

    def advance(self, delta_ns: int) -> int:
        """Move the cached time on by ``delta_ns`` (tests); returns it."""
        self._time_ns += delta_ns
        return self._time_ns

    def nano_time(self) -> int:
        """The cached time, in nanoseconds."""
        return self._time_ns


class CachedEpochClock:
    """An epoch-millisecond clock read once per duty cycle (Agrona's CachedEpochClock)."""

    __slots__ = ("_clock", "_time_ms")

    def __init__(self, clock: Callable[[], int] = epoch_ms) -> None:
        """Read ``clock`` (epoch milliseconds) once now; later reads come from :meth:`update`."""
        self._clock = clock
        self._time_ms = clock()

    def update(self, time_ms: int | None = None) -> int:
        """Store ``time_ms``, or read the source clock when None; returns the stored value."""
        self._time_ms = self._clock() if time_ms is None else time_ms
        return self._time_ms

    def advance(self, delta_ms: int) -> int:
        """Move the cached time on by ``delta_ms`` (tests); returns it."""
        self._time_ms += delta_ms
        return self._time_ms

    def time(self) -> int:
        """The cached time, in epoch milliseconds."""
        return self._time_ms


# ---- agents ----------------------------------------------------------------------------------------------------

class Agent:
    """Base of an agent: override ``do_work`` (and ``on_start`` / ``on_close`` if needed), set ``role_name``."""

    role_name: str = "agent"

    def on_start(self) -> None:
        """Called once on the agent's thread before the first ``do_work``."""

    def do_work(self) -> int:
        """One duty cycle. Returns the amount of work done (0 lets the idle strategy back off)."""
        raise NotImplementedError

    def on_close(self) -> None:
        """Called once when the agent stops, also when ``on_start`` failed or the agent never started."""


def _default_error_handler(error: BaseException) -> None:
    _log.error("agent error: %s", error, exc_info=(type(error), error, error.__traceback__))


class _ErrorReporter:
    """Shared error path of runner and invoker: the handler must never take the agent down."""

    __slots__ = ("error_handler", "error_counter")

    def __init__(self, error_handler: ErrorHandler | None, error_counter: _Counter | None) -> None:
        self.error_handler = error_handler if error_handler is not None else _default_error_handler
        self.error_counter = error_counter

    def report(self, error: BaseException) -> None:
        counter = self.error_counter
        if counter is not None and not getattr(counter, "is_closed", False):
            try:
                counter.increment()
            except Exception:  # a counter whose memory is gone must not stop the agent either
                _log.exception("agent error counter failed")
        try:
            self.error_handler(error)
        except Exception:
            _log.exception("agent error handler failed while handling %r", error)


class AgentRunner:
    """Runs an agent on its own daemon thread, named after ``agent.role_name``.

    The thread calls ``on_start`` once, then loops ``idle_strategy.idle(agent.do_work())`` until :meth:`close`
    or an :class:`AgentTerminationError`, then calls ``on_close`` once. Exceptions from ``do_work`` go to
    ``error_handler`` (default: logged to ``aeron.agent``) and bump ``error_counter`` (anything with
    ``increment()``, e.g. an AtomicCounter); the loop continues. An exception from ``on_start`` is reported
    and skips the loop, and ``on_close`` still runs.
    """

    def __init__(self, agent: Agent, idle_strategy: "IdleStrategy", error_handler: ErrorHandler | None = None,
                 error_counter: _Counter | None = None) -> None:
        """Prepare to run ``agent`` with ``idle_strategy``; nothing runs until :meth:`start`."""
        self.agent = agent
        self.idle_strategy = idle_strategy
        self._errors = _ErrorReporter(error_handler, error_counter)
        self._running = True
        self._closed = False
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._on_close_called = False

    @property
    def role_name(self) -> str:
        """The agent's role name (also the thread's name)."""
        return self.agent.role_name

    @property
    def thread(self) -> threading.Thread | None:
        """The agent's thread, None before :meth:`start`."""
        return self._thread

    @property
    def is_running(self) -> bool:
        """True while the duty cycle thread is alive and has not been asked to stop."""
        thread = self._thread
        return self._running and thread is not None and thread.is_alive()

    @property
    def is_closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._closed

    def start(self) -> threading.Thread:
        """Start the agent's thread. Raises IllegalStateError if already started or closed."""
        with self._lock:
            if self._closed:
                raise IllegalStateError(f"agent runner {self.role_name!r} is closed")
            if self._thread is not None:
                raise IllegalStateError(f"agent runner {self.role_name!r} already started")
            self._thread = threading.Thread(target=self._run, name=self.role_name, daemon=True)
            self._thread.start()
            return self._thread

    def _run(self) -> None:
        agent = self.agent
        try:
            try:
                if self._running:   # closed before the thread got going: skip straight to on_close
                    agent.on_start()
            except AgentTerminationError:
                self._running = False
            except Exception as error:
                self._running = False
                self._errors.report(error)
            idle = self.idle_strategy.idle
            report = self._errors.report
            while self._running:
                try:
                    work = agent.do_work()
                except AgentTerminationError:
                    break
                except Exception as error:
                    report(error)
                    continue
                idle(work)
        finally:
            self._running = False
            self._call_on_close()

    def _call_on_close(self) -> None:
        with self._lock:
            if self._on_close_called:
                return
            self._on_close_called = True
        try:
            self.agent.on_close()
        except Exception as error:
            self._errors.report(error)

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop the loop, wait up to ``timeout_s`` for the thread, and make sure ``on_close`` ran once.

        Idempotent. Raises AeronTimeoutError when the thread is still inside ``do_work`` after the timeout
        (its ``on_close`` then runs when it returns); calling close again waits again.
        """
        with self._lock:
            self._running = False
            self._closed = True
            thread = self._thread
        wake = getattr(self.idle_strategy, "wake", None)
        if wake is not None and thread is not None and thread is not threading.current_thread():
            wake()                  # a long park (wakeup strategy) ends now rather than at its bound
        if thread is None:
            self._call_on_close()   # never started: the agent is closed here, as Agrona does
            return
        if thread is threading.current_thread():
            return                  # closed from inside do_work: the loop ends and calls on_close itself
        thread.join(timeout_s)
        if thread.is_alive():
            raise AeronTimeoutError(f"agent {self.role_name!r} did not stop within {timeout_s} s")

    def __enter__(self) -> "AgentRunner":
        """Return the runner; the ``with`` block closes it."""
        return self

    def __exit__(self, *exc_info: object) -> None:
        """Close the runner."""
        self.close()

    def __repr__(self) -> str:
        """Role name and state."""
        return f"<AgentRunner {self.role_name!r} running={self.is_running} closed={self._closed}>"


class AgentInvoker:
    """Drives an agent from the caller's thread (Agrona's AgentInvoker): the embedding application calls
    :meth:`invoke` from its own loop (INVOKER threading mode, the asyncio face)."""

    def __init__(self, agent: Agent, error_handler: ErrorHandler | None = None,
                 error_counter: _Counter | None = None) -> None:
        """Prepare to drive ``agent``; call :meth:`start`, then :meth:`invoke` from your loop."""
        self.agent = agent
        self._errors = _ErrorReporter(error_handler, error_counter)
        self._started = False
        self._running = False
        self._closed = False

    @property
    def role_name(self) -> str:
        """The agent's role name."""
        return self.agent.role_name

    @property
    def is_started(self) -> bool:
        """True once :meth:`start` was called."""
        return self._started

    @property
    def is_running(self) -> bool:
        """True after a successful start until :meth:`close`."""
        return self._running

    @property
    def is_closed(self) -> bool:
        """True once closed (by :meth:`close`, a failed start or AgentTerminationError)."""
        return self._closed

    def start(self) -> None:
        """Call ``on_start`` once. If it raises, the error is reported and the invoker closes."""
        if self._started or self._closed:
            return
        self._started = True
        try:
            self.agent.on_start()
        except AgentTerminationError:
            self.close()
            return
        except Exception as error:
            self._errors.report(error)
            self.close()
            return
        self._running = True

    def invoke(self) -> int:
        """Run one duty cycle. Returns the work count; 0 when not started, closed, or ``do_work`` raised."""
        if not self._running:
            return 0
        try:
            return self.agent.do_work()
        except AgentTerminationError:
            self.close()
        except Exception as error:
            self._errors.report(error)
        return 0

    def close(self) -> None:
        """Stop invoking and call ``on_close`` once (also when never started). Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._running = False
        try:
            self.agent.on_close()
        except Exception as error:
            self._errors.report(error)

    def __repr__(self) -> str:
        """Role name and state."""
        return f"<AgentInvoker {self.role_name!r} running={self._running} closed={self._closed}>"


class CompositeAgent(Agent):
    """Several agents run as one (Agrona's CompositeAgent), e.g. the driver's SHARED threading mode.

    ``do_work`` sums the agents' work. If one raises, the exception propagates and the next cycle resumes with
    the agent after it, so one failing agent cannot starve the others. ``on_start`` / ``on_close`` call every
    agent even if some raise, then raise the first error (the others attached as notes).
    """

    def __init__(self, *agents: Agent) -> None:
        """Run ``agents`` (or one list of them) in order; ConfigurationError when there are none."""
        if len(agents) == 1 and isinstance(agents[0], (list, tuple)):
            agents = tuple(agents[0])
        if not agents:
            raise ConfigurationError("CompositeAgent needs at least one agent")
        self.agents: tuple[Agent, ...] = tuple(agents)
        self.role_name = "[" + ",".join(agent.role_name for agent in self.agents) + "]"
        self._index = 0

    def on_start(self) -> None:
        """Start every agent (see the class docstring for errors)."""
        self._each("on_start")

    def do_work(self) -> int:
        """One duty cycle of each agent in turn; returns the summed work."""
        work = 0
        agents = self.agents
        index = self._index
        try:
            while index < len(agents):
                work += agents[index].do_work()
                index += 1
        except BaseException:
            self._index = index + 1         # the retry starts after the agent that raised
            raise
        self._index = 0
        return work

    def on_close(self) -> None:
        """Close every agent (see the class docstring for errors)."""
        self._each("on_close")

    def _each(self, method: str) -> None:
        first: BaseException | None = None
        for agent in self.agents:
            try:
                getattr(agent, method)()
            except Exception as error:
                if first is None:
                    first = error
                else:
                    _add_note(first, f"also from {agent.role_name}.{method}: {error!r}")
        if first is not None:
            raise first


# ---- idle strategies -------------------------------------------------------------------------------------------

def _sleep_ns(duration_ns: int) -> None:
    time.sleep(duration_ns / 1e9)


class IdleStrategy:
    """Base of the idle strategies: ``idle(work_count)`` after each duty cycle, ``reset()`` to start over."""

    __slots__ = ()
    alias = ""

    def idle(self, work_count: int = 0) -> None:
        """Called after each duty cycle with its work count: back off while it is 0."""
        raise NotImplementedError

    def reset(self) -> None:
        """Forget any back-off state."""

    def __repr__(self) -> str:
        """The strategy's class name and settings."""
        return f"{type(self).__name__}()"


class NoOpIdleStrategy(IdleStrategy):
    """Never idles: the caller's loop is the strategy (e.g. an invoker embedded in another loop)."""

    __slots__ = ()
    alias = "noop"

    def idle(self, work_count: int = 0) -> None:
        """Return at once."""
        pass


class BusySpinIdleStrategy(IdleStrategy):
    """Returns at once and lets the loop spin. Python has no spin-wait hint, so this burns a core: use it only
    with a core to spare."""

    __slots__ = ()
    alias = "spin"

    def idle(self, work_count: int = 0) -> None:
        """Return at once (the caller's loop spins)."""
        pass


class YieldingIdleStrategy(IdleStrategy):
    """Yields the CPU (``sched_yield``) when there was no work."""

    __slots__ = ("_yield",)
    alias = "yield"

    def __init__(self, *, yield_fn: Callable[[], Any] = os.sched_yield) -> None:
        """``yield_fn`` replaces ``os.sched_yield`` (tests)."""
        self._yield = yield_fn

    def idle(self, work_count: int = 0) -> None:
        """Yield the CPU when ``work_count`` is 0."""
        if work_count <= 0:
            self._yield()


class SleepingIdleStrategy(IdleStrategy):
    """Sleeps ``sleep_ns`` when there was no work (Agrona's default period, 1 µs; the OS rounds it up)."""

    __slots__ = ("sleep_ns", "_sleep")
    alias = "sleep-ns"
    DEFAULT_SLEEP_NS = 1_000

    def __init__(self, sleep_ns: int = DEFAULT_SLEEP_NS, *, sleep_fn: Callable[[int], Any] = _sleep_ns) -> None:
        """Sleep ``sleep_ns`` (> 0, else ConfigurationError); ``sleep_fn(ns)`` replaces the sleep (tests)."""
        if sleep_ns <= 0:
            raise ConfigurationError(f"sleep period must be > 0 ns, got {sleep_ns}")
        self.sleep_ns = int(sleep_ns)
        self._sleep = sleep_fn

    def idle(self, work_count: int = 0) -> None:
        """Sleep when ``work_count`` is 0."""
        if work_count <= 0:
            self._sleep(self.sleep_ns)

    def __repr__(self) -> str:
        """The period."""
        return f"SleepingIdleStrategy(sleep_ns={self.sleep_ns})"


class SleepingMillisIdleStrategy(SleepingIdleStrategy):
    """Sleeps ``sleep_ms`` milliseconds when there was no work (Agrona's SleepingMillisIdleStrategy, 1 ms)."""

    __slots__ = ()
    alias = "sleep-ms"

    def __init__(self, sleep_ms: int = 1, *, sleep_fn: Callable[[int], Any] = _sleep_ns) -> None:
        """Sleep ``sleep_ms`` milliseconds; ``sleep_fn(ns)`` replaces the sleep (tests)."""
        super().__init__(int(sleep_ms) * 1_000_000, sleep_fn=sleep_fn)


NOT_IDLE = 0
SPINNING = 1
YIELDING = 2
PARKING = 3


class BackoffIdleStrategy(IdleStrategy):
    """Spin, then yield, then park with doubling sleeps from ``min_park_ns`` up to ``max_park_ns``; any work
    resets it (Agrona's BackoffIdleStrategy, same state machine as aeron_idle_strategy_backoff_idle).

    Spinning only counts (Python has no spin-wait hint and a spin costs a full interpreter round anyway).
    ``state``, ``spins``, ``yields`` and ``park_period_ns`` are observable; ``yield_fn`` and ``sleep_fn``
    (nanoseconds) can be replaced, e.g. by fakes in tests.
    """

    __slots__ = ("max_spins", "max_yields", "min_park_ns", "max_park_ns", "state", "spins", "yields",
                 "park_period_ns", "_yield", "_sleep")
    alias = "backoff"

    def __init__(self, max_spins: int = 10, max_yields: int = 5, min_park_ns: int = 1000,
                 max_park_ns: int = 1_000_000, *, yield_fn: Callable[[], Any] = os.sched_yield,
                 sleep_fn: Callable[[int], Any] = _sleep_ns) -> None:
        """Back off with these limits; ConfigurationError for negative counts or park periods outside
        1 <= min <= max."""
        if max_spins < 0 or max_yields < 0:
            raise ConfigurationError(f"max_spins and max_yields must be >= 0, got {max_spins}, {max_yields}")
        if min_park_ns < 1 or max_park_ns < min_park_ns:
            raise ConfigurationError(
                f"need 1 <= min_park_ns <= max_park_ns, got min_park_ns={min_park_ns} max_park_ns={max_park_ns}")
        self.max_spins = int(max_spins)
        self.max_yields = int(max_yields)
        self.min_park_ns = int(min_park_ns)
        self.max_park_ns = int(max_park_ns)
        self._yield = yield_fn
        self._sleep = sleep_fn
        self.reset()

    def reset(self) -> None:
        """Back to not idle: spins, yields and the park period start over."""
        self.spins = 0
        self.yields = 0
        self.park_period_ns = self.min_park_ns
        self.state = NOT_IDLE

    def idle(self, work_count: int = 0) -> None:
        """Step the spin, yield, park state machine while ``work_count`` is 0."""
        if work_count > 0:
            if self.state != NOT_IDLE:
                self.reset()
            return
        if self.state == PARKING:
            self._sleep(self.park_period_ns)
            self.park_period_ns = min(self.park_period_ns * 2, self.max_park_ns)
        elif self._count_step():
            self._yield()

    def _count_step(self) -> bool:
        """One idle step before parking, counted; True when this step yields."""
        state = self.state
        if state == NOT_IDLE:
            self.state = SPINNING
            self.spins += 1
        elif state == SPINNING:
            self.spins += 1
            if self.spins > self.max_spins:
                self.state = YIELDING
                self.yields = 0
        else:
            self.yields += 1
            if self.yields > self.max_yields:
                self.state = PARKING
                self.park_period_ns = self.min_park_ns
            else:
                return True
        return False

    def steps_to_park(self) -> tuple[int, int] | None:
        """What the idle steps from here until parking do: (steps that only count, steps that yield), the step into
        parking left out (it only counts too); None once parking. For a caller that runs these phases itself in
        compiled code (aeron.driver.driver_wakeup.SignallingAgent) and then counts them with :meth:`advance`."""
        state = self.state
        if state == NOT_IDLE:
            return self.max_spins + 1, self.max_yields
        if state == SPINNING:
            return self.max_spins + 1 - self.spins, self.max_yields
        if state == YIELDING:
            return 0, self.max_yields - self.yields
        return None

    def advance(self, steps: int) -> None:
        """Count ``steps`` idle steps as taken (as ``idle(0)`` would, without yielding or sleeping): the caller spun
        or yielded them itself. Only the steps before parking count; parking's own steps sleep and are not skipped.
        A few operations whatever ``steps`` is: the driver counts each of its compiled phases here."""
        if steps <= 0 or self.state == PARKING:
            return
        if self.state == NOT_IDLE:
            self.state = SPINNING
            self.spins += 1
            steps -= 1
        if steps and self.state == SPINNING:
            # the step that takes spins past max_spins moves on to yielding
            take = max(1, self.max_spins + 1 - self.spins)
            if steps < take:
                self.spins += steps
                return
            self.spins += take
            steps -= take
            self.state = YIELDING
            self.yields = 0
        if steps:                           # yielding: the step that takes yields past max_yields parks
            take = max(1, self.max_yields + 1 - self.yields)
            if steps < take:
                self.yields += steps
                return
            self.yields += take
            self.state = PARKING
            self.park_period_ns = self.min_park_ns

    def __repr__(self) -> str:
        """The four settings."""
        return (f"BackoffIdleStrategy(max_spins={self.max_spins}, max_yields={self.max_yields}, "
                f"min_park_ns={self.min_park_ns}, max_park_ns={self.max_park_ns})")


# Aeron's driver defaults for "backoff" (Configuration.IDLE_*; AERON_IDLE_STRATEGY_BACKOFF_* in aeron_agent.h).
# Note max yields: 20 in Aeron's drivers, 5 in Agrona's own BackoffIdleStrategy defaults.
DRIVER_BACKOFF_MAX_SPINS = 10
DRIVER_BACKOFF_MAX_YIELDS = 20
DRIVER_BACKOFF_MIN_PARK_NS = 1_000
DRIVER_BACKOFF_MAX_PARK_NS = 1_000_000

_NOOP = ("noop", "org.agrona.concurrent.NoOpIdleStrategy", "aeron_idle_strategy_noop")
_SPIN = ("spin", "org.agrona.concurrent.BusySpinIdleStrategy", "aeron_idle_strategy_busy_spinning")
_YIELD = ("yield", "org.agrona.concurrent.YieldingIdleStrategy", "aeron_idle_strategy_yielding")
_SLEEP_NS = ("sleep-ns", "sleeping", "org.agrona.concurrent.SleepingIdleStrategy", "aeron_idle_strategy_sleeping")
_SLEEP_MS = ("sleep", "sleep-ms", "org.agrona.concurrent.SleepingMillisIdleStrategy")
_BACKOFF = ("backoff", "org.agrona.concurrent.BackoffIdleStrategy", "aeron_idle_strategy_backoff")
_WAKEUP = ("wakeup",)       # ours: no Aeron driver knows it
IDLE_STRATEGY_NAMES = _NOOP + _SPIN + _YIELD + _SLEEP_NS + _SLEEP_MS + _BACKOFF + _WAKEUP


def idle_strategy_from_name(name: str, init_args: str | None = None) -> IdleStrategy:
    """Build the idle strategy Aeron's drivers name ``name`` (``AERON_*_IDLE_STRATEGY`` / ``aeron.*.idle.strategy``).

    Accepted: ``noop``, ``spin``, ``yield``, ``sleep-ns``/``sleeping`` (1 µs), ``sleep-ms`` and ``sleep`` (1 ms),
    ``backoff`` (Aeron's driver defaults 10 spins, 20 yields, 1 µs..1 ms), ``wakeup`` (ours: backoff whose
    parks wait for a wake-up after 10 µs of spinning; see aeron.common.wakeup.WakeupIdleStrategy), the Agrona
    class names (``org.agrona.concurrent.BackoffIdleStrategy`` ...) and the C symbol names
    (``aeron_idle_strategy_backoff`` ...). ``init_args`` is the C driver's ``AERON_*_IDLE_STRATEGY_INIT_ARGS``: a
    duration for the sleeping strategies (``100us``), ``spins-yields-minpark-maxpark`` for backoff
    (``10-20-1us-1ms``), ``spin-maxpark`` (``10us-1ms``) or backoff's form (for its sleeps when unbound) for
    wakeup.
    Raises ConfigurationError for an unknown name or malformed init args.
    """
    if not isinstance(name, str):
        raise ConfigurationError(f"idle strategy name must be a str, not {type(name).__name__}")
    key = name.strip()
    args = init_args.strip() if init_args is not None and init_args.strip() else None
    if key in _NOOP:
        return NoOpIdleStrategy()
    if key in _SPIN:
        return BusySpinIdleStrategy()
    if key in _YIELD:
        return YieldingIdleStrategy()
    if key in _SLEEP_NS or key in _SLEEP_MS:
        if args is None:
            return SleepingIdleStrategy() if key in _SLEEP_NS else SleepingMillisIdleStrategy()
        try:
            return SleepingIdleStrategy(parse_duration_ns(args))
        except ConfigurationError as error:
            raise ConfigurationError(f"idle strategy {key!r}: bad init args {init_args!r}: {error}") from None
    if key in _BACKOFF or key in _WAKEUP:
        cls = BackoffIdleStrategy
        if key in _WAKEUP:
            # ours, beside the wake-up board it parks on; imported only when named, so that the agents alone load
            # no compiled module
            from aeron.common.wakeup import WakeupIdleStrategy
            cls = WakeupIdleStrategy
        if args is not None and key in _WAKEUP and len(args.split("-")) == 2:
            spin, park = args.split("-")
            try:
                return WakeupIdleStrategy(DRIVER_BACKOFF_MAX_SPINS, DRIVER_BACKOFF_MAX_YIELDS,
                                          DRIVER_BACKOFF_MIN_PARK_NS, parse_duration_ns(park),
                                          spin_ns=parse_duration_ns(spin))
            except ConfigurationError as error:
                raise ConfigurationError(f"idle strategy {key!r}: bad init args {init_args!r}: {error}") from None
        if args is None:
            return cls(DRIVER_BACKOFF_MAX_SPINS, DRIVER_BACKOFF_MAX_YIELDS,
                       DRIVER_BACKOFF_MIN_PARK_NS, DRIVER_BACKOFF_MAX_PARK_NS)
        parts = args.split("-")
        if len(parts) != 4 or not parts[0].isdigit() or not parts[1].isdigit():
            raise ConfigurationError(
                f"idle strategy {key!r}: init args {init_args!r} must be spins-yields-minpark-maxpark "
                "(e.g. 10-20-1us-1ms)")
        try:
            return cls(int(parts[0]), int(parts[1]), parse_duration_ns(parts[2]), parse_duration_ns(parts[3]))
        except ConfigurationError as error:
            raise ConfigurationError(f"idle strategy {key!r}: bad init args {init_args!r}: {error}") from None
    raise ConfigurationError(
        f"unknown idle strategy {name!r} (expected one of: noop, spin, yield, sleep-ns, sleeping, sleep-ms, sleep, "
        "backoff, wakeup, or an org.agrona.concurrent.*IdleStrategy class name)")
