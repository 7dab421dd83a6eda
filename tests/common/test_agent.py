# SPDX-License-Identifier: Apache-2.0
"""aeron.common.agent: runner loop, error path, termination, invoker, composite, idle strategies, names, clocks."""
from __future__ import annotations

import threading
import time

import pytest

from aeron.common.agent import (
    PARKING, SPINNING, YIELDING, NOT_IDLE, Agent, AgentInvoker, AgentRunner, AgentTerminationError,
    BackoffIdleStrategy, BusySpinIdleStrategy, CachedEpochClock, CachedNanoClock, CompositeAgent,
    NoOpIdleStrategy, SleepingIdleStrategy, SleepingMillisIdleStrategy, YieldingIdleStrategy, epoch_ms,
    idle_strategy_from_name, nano_time,
)
from aeron.common.errors import AeronError, AeronTimeoutError, ConfigurationError, IllegalStateError
from tests.support import wait_for

WAIT_S = 5.0


class Counter:
    def __init__(self) -> None:
        self.value = 0

    def increment(self) -> int:
        self.value += 1
        return self.value


class RecordingIdle(NoOpIdleStrategy):
    """Records every work count it is given; a short sleep keeps the runner thread from hogging a core."""

    __slots__ = ("calls",)

    def __init__(self) -> None:
        self.calls: list[int] = []

    def idle(self, work_count: int = 0) -> None:
        self.calls.append(work_count)
        if work_count <= 0:
            time.sleep(0.0005)


class ScriptedAgent(Agent):
    """do_work returns / raises the scripted items in turn, then returns 0."""

    role_name = "scripted"

    def __init__(self, script=(), start_error: BaseException | None = None) -> None:
        self.script = list(script)
        self.start_error = start_error
        self.events: list[str] = []
        self.cycles = 0
        self.done = threading.Event()
        self.thread_name: str | None = None

    def on_start(self) -> None:
        self.thread_name = threading.current_thread().name
        self.events.append("start")
        if self.start_error is not None:
            raise self.start_error

    def do_work(self) -> int:
        self.cycles += 1
        if not self.script:
            self.done.set()
            return 0
        item = self.script.pop(0)
        if isinstance(item, BaseException):
            raise item
        return item

    def on_close(self) -> None:
        self.events.append("close")


# ---- AgentRunner -------------------------------------------------------------------------------------------

def test_runner_runs_on_named_daemon_thread_and_feeds_work_counts_to_idle():
    agent = ScriptedAgent([3, 0, 2])
    idle = RecordingIdle()
    runner = AgentRunner(agent, idle)
    thread = runner.start()
    try:
        assert thread.daemon and thread.name == "scripted"
        assert agent.done.wait(WAIT_S)
        assert runner.is_running
        assert agent.thread_name == "scripted"
    finally:
        runner.close(timeout_s=WAIT_S)
    assert idle.calls[:3] == [3, 0, 2]
    assert not runner.is_running and runner.is_closed
    assert not thread.is_alive()
    assert agent.events == ["start", "close"]


def test_runner_reports_do_work_errors_counts_them_and_keeps_cycling():
    errors: list[BaseException] = []
    counter = Counter()
    boom1, boom2 = ValueError("boom1"), KeyError("boom2")
    agent = ScriptedAgent([1, boom1, 2, boom2, 5])
    idle = RecordingIdle()
    runner = AgentRunner(agent, idle, error_handler=errors.append, error_counter=counter)
    runner.start()
    try:
        assert agent.done.wait(WAIT_S)
    finally:
        runner.close(timeout_s=WAIT_S)
    assert errors == [boom1, boom2]
    assert counter.value == 2
    assert idle.calls[:3] == [1, 2, 5]      # a raising cycle does not call idle
    assert agent.events == ["start", "close"]


def test_runner_default_error_handler_logs(caplog):
    agent = ScriptedAgent([RuntimeError("logged failure")])
    runner = AgentRunner(agent, RecordingIdle())
    with caplog.at_level("ERROR", logger="aeron.agent"):
        runner.start()
        try:
            assert agent.done.wait(WAIT_S)
        finally:
            runner.close(timeout_s=WAIT_S)
    assert any("logged failure" in record.getMessage() for record in caplog.records)
    assert any(record.exc_info for record in caplog.records)


def test_runner_survives_a_raising_error_handler_and_counter():
    class BadCounter:
        def increment(self):
            raise OSError("counter gone")

    def bad_handler(error):
        raise RuntimeError("handler failed")

    agent = ScriptedAgent([ValueError("x"), 7])
    idle = RecordingIdle()
    runner = AgentRunner(agent, idle, error_handler=bad_handler, error_counter=BadCounter())
    runner.start()
    try:
        assert agent.done.wait(WAIT_S)
    finally:
        runner.close(timeout_s=WAIT_S)
    assert idle.calls[0] == 7


def test_runner_skips_closed_error_counter():
    class ClosedCounter(Counter):
        is_closed = True

    counter = ClosedCounter()
    agent = ScriptedAgent([ValueError("x")])
    runner = AgentRunner(agent, RecordingIdle(), error_handler=lambda e: None, error_counter=counter)
    runner.start()
    try:
        assert agent.done.wait(WAIT_S)
    finally:
        runner.close(timeout_s=WAIT_S)
    assert counter.value == 0


def test_termination_error_ends_loop_cleanly_without_reporting():
    errors: list[BaseException] = []
    counter = Counter()
    agent = ScriptedAgent([1, AgentTerminationError(), 99])
    idle = RecordingIdle()
    runner = AgentRunner(agent, idle, error_handler=errors.append, error_counter=counter)
    thread = runner.start()
    thread.join(WAIT_S)
    assert not thread.is_alive()
    assert not runner.is_running
    assert agent.events == ["start", "close"]
    assert agent.cycles == 2 and idle.calls == [1]
    assert errors == [] and counter.value == 0
    runner.close(timeout_s=WAIT_S)
    assert agent.events == ["start", "close"]


def test_on_start_error_is_reported_loop_skipped_and_on_close_called_once():
    errors: list[BaseException] = []
    failure = RuntimeError("start failed")
    agent = ScriptedAgent([1, 2], start_error=failure)
    runner = AgentRunner(agent, RecordingIdle(), error_handler=errors.append)
    thread = runner.start()
    thread.join(WAIT_S)
    assert not thread.is_alive()
    assert errors == [failure]
    assert agent.cycles == 0
    runner.close(timeout_s=WAIT_S)
    runner.close(timeout_s=WAIT_S)
    assert agent.events == ["start", "close"]


def test_close_is_idempotent_and_on_close_runs_once():
    agent = ScriptedAgent()
    runner = AgentRunner(agent, RecordingIdle())
    runner.start()
    assert agent.done.wait(WAIT_S)
    runner.close(timeout_s=WAIT_S)
    runner.close(timeout_s=WAIT_S)
    with runner:
        pass
    assert agent.events == ["start", "close"]
    with pytest.raises(IllegalStateError):
        runner.start()


def test_close_without_start_calls_on_close_only():
    agent = ScriptedAgent()
    runner = AgentRunner(agent, RecordingIdle())
    assert not runner.is_running
    runner.close()
    runner.close()
    assert agent.events == ["close"]
    with pytest.raises(IllegalStateError):
        runner.start()


def test_start_twice_refused():
    agent = ScriptedAgent()
    runner = AgentRunner(agent, RecordingIdle())
    runner.start()
    try:
        with pytest.raises(IllegalStateError):
            runner.start()
    finally:
        runner.close(timeout_s=WAIT_S)


def test_close_times_out_on_a_stuck_agent_then_succeeds_later():
    release = threading.Event()
    entered = threading.Event()

    class Stuck(ScriptedAgent):
        def do_work(self) -> int:
            entered.set()
            release.wait(WAIT_S)
            return 0

    agent = Stuck()
    runner = AgentRunner(agent, RecordingIdle())
    runner.start()
    assert entered.wait(WAIT_S)
    with pytest.raises(AeronTimeoutError):
        runner.close(timeout_s=0.05)
    assert "close" not in agent.events
    release.set()
    runner.close(timeout_s=WAIT_S)
    assert agent.events == ["start", "close"]


def test_close_from_inside_do_work_stops_the_loop():
    holder: dict[str, AgentRunner] = {}

    class SelfClosing(ScriptedAgent):
        def do_work(self) -> int:
            self.cycles += 1
            holder["runner"].close()
            return 1

    agent = SelfClosing()
    runner = AgentRunner(agent, RecordingIdle())
    holder["runner"] = runner
    thread = runner.start()
    thread.join(WAIT_S)
    assert not thread.is_alive()
    assert agent.cycles == 1
    assert agent.events == ["start", "close"]


def test_on_close_error_is_reported():
    errors: list[BaseException] = []
    failure = RuntimeError("close failed")

    class BadClose(ScriptedAgent):
        def on_close(self) -> None:
            super().on_close()
            raise failure

    agent = BadClose()
    runner = AgentRunner(agent, RecordingIdle(), error_handler=errors.append)
    runner.start()
    assert agent.done.wait(WAIT_S)
    runner.close(timeout_s=WAIT_S)
    assert errors == [failure]
    assert agent.events == ["start", "close"]


def test_runner_with_real_backoff_idle_strategy_stops_promptly():
    agent = ScriptedAgent()
    runner = AgentRunner(agent, BackoffIdleStrategy(max_spins=1, max_yields=1, min_park_ns=10_000,
                                                    max_park_ns=1_000_000))
    runner.start()
    assert agent.done.wait(WAIT_S)
    wait_for(lambda: agent.cycles > 20, WAIT_S, what="more than 20 duty cycles")
    started = time.monotonic()
    runner.close(timeout_s=WAIT_S)
    assert time.monotonic() - started < 1.0
    assert agent.events == ["start", "close"]


# ---- AgentInvoker ------------------------------------------------------------------------------------------

def test_invoker_lifecycle():
    agent = ScriptedAgent([4, 2])
    invoker = AgentInvoker(agent)
    assert invoker.invoke() == 0 and agent.cycles == 0        # not started
    invoker.start()
    invoker.start()
    assert agent.events == ["start"]
    assert invoker.is_started and invoker.is_running
    assert invoker.invoke() == 4
    assert invoker.invoke() == 2
    assert invoker.invoke() == 0
    invoker.close()
    invoker.close()
    assert agent.events == ["start", "close"]
    assert invoker.is_closed and not invoker.is_running
    cycles = agent.cycles
    assert invoker.invoke() == 0 and agent.cycles == cycles   # closed
    invoker.start()
    assert agent.events == ["start", "close"]


def test_invoker_errors_go_to_handler_and_counter():
    errors: list[BaseException] = []
    counter = Counter()
    failure = ValueError("bad cycle")
    agent = ScriptedAgent([failure, 3])
    invoker = AgentInvoker(agent, error_handler=errors.append, error_counter=counter)
    invoker.start()
    assert invoker.invoke() == 0
    assert invoker.invoke() == 3
    assert errors == [failure] and counter.value == 1
    invoker.close()


def test_invoker_termination_closes():
    errors: list[BaseException] = []
    agent = ScriptedAgent([AgentTerminationError(), 5])
    invoker = AgentInvoker(agent, error_handler=errors.append)
    invoker.start()
    assert invoker.invoke() == 0
    assert invoker.is_closed
    assert agent.events == ["start", "close"]
    assert invoker.invoke() == 0
    assert errors == []


def test_invoker_on_start_error_reports_and_closes():
    errors: list[BaseException] = []
    failure = RuntimeError("no start")
    agent = ScriptedAgent([5], start_error=failure)
    invoker = AgentInvoker(agent, error_handler=errors.append)
    invoker.start()
    assert errors == [failure]
    assert invoker.is_closed and not invoker.is_running
    assert invoker.invoke() == 0
    assert agent.events == ["start", "close"]


def test_invoker_close_without_start_calls_on_close():
    agent = ScriptedAgent()
    invoker = AgentInvoker(agent)
    invoker.close()
    assert agent.events == ["close"]


# ---- CompositeAgent ----------------------------------------------------------------------------------------

class Named(Agent):
    def __init__(self, name: str, work=(), log=None, fail_start=False, fail_close=False) -> None:
        self.role_name = name
        self.work = list(work)
        self.log = log if log is not None else []
        self.fail_start = fail_start
        self.fail_close = fail_close

    def on_start(self) -> None:
        self.log.append(f"{self.role_name}.start")
        if self.fail_start:
            raise RuntimeError(f"{self.role_name} start")

    def do_work(self) -> int:
        self.log.append(f"{self.role_name}.work")
        item = self.work.pop(0) if self.work else 0
        if isinstance(item, BaseException):
            raise item
        return item

    def on_close(self) -> None:
        self.log.append(f"{self.role_name}.close")
        if self.fail_close:
            raise RuntimeError(f"{self.role_name} close")


def test_composite_sums_work_and_names_roles():
    log: list[str] = []
    composite = CompositeAgent(Named("a", [1, 2], log), Named("b", [10, 20], log))
    assert composite.role_name == "[a,b]"
    composite.on_start()
    assert composite.do_work() == 11
    assert composite.do_work() == 22
    composite.on_close()
    assert log == ["a.start", "b.start", "a.work", "b.work", "a.work", "b.work", "a.close", "b.close"]
    assert CompositeAgent([Named("x"), Named("y")]).role_name == "[x,y]"
    with pytest.raises(ConfigurationError):
        CompositeAgent()


def test_composite_resumes_after_the_agent_that_raised():
    log: list[str] = []
    failure = ValueError("a failed")
    composite = CompositeAgent(Named("a", [failure, 1], log), Named("b", [5, 6], log), Named("c", [7, 8], log))
    with pytest.raises(ValueError):
        composite.do_work()
    assert composite.do_work() == 12          # b and c, not a again
    assert composite.do_work() == 1 + 6 + 8
    assert log == ["a.work", "b.work", "c.work", "a.work", "b.work", "c.work"]


def test_composite_start_and_close_reach_every_agent_and_raise_the_first_error():
    log: list[str] = []
    composite = CompositeAgent(Named("a", log=log, fail_start=True, fail_close=True),
                               Named("b", log=log, fail_start=True), Named("c", log=log, fail_close=True))
    with pytest.raises(RuntimeError, match="a start") as info:
        composite.on_start()
    assert any("b start" in note for note in info.value.__notes__)
    with pytest.raises(RuntimeError, match="a close") as info:
        composite.on_close()
    assert any("c close" in note for note in info.value.__notes__)
    assert log == ["a.start", "b.start", "c.start", "a.close", "b.close", "c.close"]


def test_composite_in_a_runner():
    log: list[str] = []
    done = threading.Event()

    class Last(Named):
        def do_work(self) -> int:
            done.set()
            return super().do_work()

    errors: list[BaseException] = []
    runner = AgentRunner(CompositeAgent(Named("a", [ValueError("x")], log), Last("b", [], log)), RecordingIdle(),
                         error_handler=errors.append)
    thread = runner.start()
    assert thread.name == "[a,b]"
    assert done.wait(WAIT_S)
    runner.close(timeout_s=WAIT_S)
    assert len(errors) == 1
    assert log[0:2] == ["a.start", "b.start"] and log[-2:] == ["a.close", "b.close"]


# ---- idle strategies ---------------------------------------------------------------------------------------

class Fakes:
    def __init__(self) -> None:
        self.events: list[tuple[str, int]] = []

    def yield_fn(self) -> None:
        self.events.append(("yield", 0))

    def sleep_fn(self, ns: int) -> None:
        self.events.append(("park", ns))


def test_backoff_sequence_spins_yields_then_parks_doubling_to_max():
    fakes = Fakes()
    idle = BackoffIdleStrategy(max_spins=3, max_yields=2, min_park_ns=1000, max_park_ns=5000,
                               yield_fn=fakes.yield_fn, sleep_fn=fakes.sleep_fn)
    assert idle.state == NOT_IDLE
    states = []
    for _ in range(12):
        idle.idle(0)
        states.append(idle.state)
    # Agrona's state machine: the first idle enters SPINNING; after max_spins more, YIELDING; the (max_yields+1)th
    # yield step enters PARKING without yielding; then each step parks and doubles, capped at max.
    assert states == [SPINNING, SPINNING, SPINNING, YIELDING, YIELDING, YIELDING, PARKING,
                      PARKING, PARKING, PARKING, PARKING, PARKING]
    assert fakes.events == [("yield", 0), ("yield", 0),
                            ("park", 1000), ("park", 2000), ("park", 4000), ("park", 5000), ("park", 5000)]
    assert idle.park_period_ns == 5000


def test_backoff_resets_on_work():
    fakes = Fakes()
    idle = BackoffIdleStrategy(max_spins=1, max_yields=1, min_park_ns=100, max_park_ns=10_000,
                               yield_fn=fakes.yield_fn, sleep_fn=fakes.sleep_fn)
    for _ in range(6):
        idle.idle(0)
    assert idle.state == PARKING and idle.park_period_ns == 400   # parked at 100 and 200
    idle.idle(1)
    assert (idle.state, idle.spins, idle.yields, idle.park_period_ns) == (NOT_IDLE, 0, 0, 100)
    fakes.events.clear()
    for _ in range(5):
        idle.idle(0)
    assert fakes.events == [("yield", 0), ("park", 100)]
    idle.reset()
    assert idle.state == NOT_IDLE and idle.park_period_ns == 100


@pytest.mark.parametrize("taken", range(8))
def test_backoff_steps_to_park_and_advance_count_as_its_own_idle_steps(taken):
    # a caller that spins and yields these phases itself (the driver's compiled probes) counts them with advance:
    # the strategy must end where its own idle(0) calls would have left it, and parks right after the plan
    fakes = Fakes()

    def strategy():
        return BackoffIdleStrategy(max_spins=3, max_yields=2, min_park_ns=1000, max_park_ns=5000,
                                   yield_fn=fakes.yield_fn, sleep_fn=fakes.sleep_fn)
    own, counted = strategy(), strategy()
    for _ in range(taken):
        own.idle(0)
        counted.idle(0)
    fakes.events.clear()
    plan = own.steps_to_park()
    if own.state == PARKING:
        assert plan is None
        return
    pauses, yields = plan
    for _ in range(pauses + yields + 1):
        own.idle(0)
    assert own.state == PARKING and fakes.events == [("yield", 0)] * yields     # the plan's yields, no park yet
    fakes.events.clear()
    counted.advance(pauses + yields + 1)
    assert fakes.events == []                                                     # counted, not yielded
    assert (counted.state, counted.spins, counted.yields, counted.park_period_ns) == \
        (own.state, own.spins, own.yields, own.park_period_ns)
    counted.advance(3)                                   # parking's own steps are not skipped
    assert counted.park_period_ns == 1000 and counted.state == PARKING


def test_backoff_advance_part_way_lands_on_the_same_step():
    fakes = Fakes()
    own = BackoffIdleStrategy(max_spins=3, max_yields=2, yield_fn=fakes.yield_fn, sleep_fn=fakes.sleep_fn)
    counted = BackoffIdleStrategy(max_spins=3, max_yields=2, yield_fn=fakes.yield_fn, sleep_fn=fakes.sleep_fn)
    assert own.steps_to_park() == (4, 2)
    for steps in range(1, 7):
        own.idle(0)
        counted.advance(1)
        assert (counted.state, counted.spins, counted.yields) == (own.state, own.spins, own.yields), steps
        pauses, yields = own.steps_to_park() or (0, 0)
        assert pauses + yields + 1 == 7 - steps or own.state == PARKING


@pytest.mark.parametrize("max_spins, max_yields", [(0, 0), (0, 3), (3, 0), (10, 5), (2, 7)])
def test_backoff_advance_counts_as_many_single_steps(max_spins, max_yields):
    # advance(n) in a few operations ends where n steps counted one at a time end, from every state before parking
    def strategy():
        return BackoffIdleStrategy(max_spins=max_spins, max_yields=max_yields, yield_fn=lambda: None,
                                   sleep_fn=lambda _ns: None)
    for before in range(max_spins + max_yields + 3):
        for steps in range(max_spins + max_yields + 4):
            one, many = strategy(), strategy()
            for _ in range(before):
                one.idle(0)
                many.idle(0)
            for _ in range(steps):
                if one.state != PARKING:
                    one._count_step()
            many.advance(steps)
            assert (many.state, many.spins, many.yields, many.park_period_ns) == \
                (one.state, one.spins, one.yields, one.park_period_ns), (before, steps)


def test_backoff_default_sleep_really_sleeps_about_the_park_period():
    idle = BackoffIdleStrategy(max_spins=0, max_yields=0, min_park_ns=2_000_000, max_park_ns=2_000_000)
    for _ in range(3):
        idle.idle()
    assert idle.state == PARKING
    started = time.monotonic_ns()
    idle.idle()
    assert time.monotonic_ns() - started >= 1_900_000


def test_backoff_validation():
    with pytest.raises(ConfigurationError):
        BackoffIdleStrategy(max_spins=-1)
    with pytest.raises(ConfigurationError):
        BackoffIdleStrategy(min_park_ns=0)
    with pytest.raises(ConfigurationError):
        BackoffIdleStrategy(min_park_ns=10, max_park_ns=5)
    assert (BackoffIdleStrategy().max_spins, BackoffIdleStrategy().max_yields) == (10, 5)


def test_simple_strategies_idle_only_without_work():
    fakes = Fakes()
    yielding = YieldingIdleStrategy(yield_fn=fakes.yield_fn)
    yielding.idle(3)
    yielding.idle(0)
    sleeping = SleepingIdleStrategy(250, sleep_fn=fakes.sleep_fn)
    sleeping.idle(1)
    sleeping.idle(0)
    sleeping.idle()
    millis = SleepingMillisIdleStrategy(2, sleep_fn=fakes.sleep_fn)
    millis.idle(0)
    assert fakes.events == [("yield", 0), ("park", 250), ("park", 250), ("park", 2_000_000)]
    BusySpinIdleStrategy().idle(0)
    NoOpIdleStrategy().idle(0)
    with pytest.raises(ConfigurationError):
        SleepingIdleStrategy(0)


@pytest.mark.parametrize("name, cls", [
    ("noop", NoOpIdleStrategy), ("org.agrona.concurrent.NoOpIdleStrategy", NoOpIdleStrategy),
    ("aeron_idle_strategy_noop", NoOpIdleStrategy),
    ("spin", BusySpinIdleStrategy), ("org.agrona.concurrent.BusySpinIdleStrategy", BusySpinIdleStrategy),
    ("yield", YieldingIdleStrategy), ("org.agrona.concurrent.YieldingIdleStrategy", YieldingIdleStrategy),
    ("sleep-ns", SleepingIdleStrategy), ("sleeping", SleepingIdleStrategy),
    ("org.agrona.concurrent.SleepingIdleStrategy", SleepingIdleStrategy),
    ("sleep-ms", SleepingMillisIdleStrategy), ("sleep", SleepingMillisIdleStrategy),
    ("org.agrona.concurrent.SleepingMillisIdleStrategy", SleepingMillisIdleStrategy),
    ("backoff", BackoffIdleStrategy), ("org.agrona.concurrent.BackoffIdleStrategy", BackoffIdleStrategy),
    ("aeron_idle_strategy_backoff", BackoffIdleStrategy), (" backoff ", BackoffIdleStrategy),
])
def test_idle_strategy_from_name(name, cls):
    assert type(idle_strategy_from_name(name)) is cls


def test_idle_strategy_from_name_defaults_and_init_args():
    backoff = idle_strategy_from_name("backoff")
    assert (backoff.max_spins, backoff.max_yields, backoff.min_park_ns, backoff.max_park_ns) == (10, 20, 1000, 1_000_000)
    assert idle_strategy_from_name("sleep").sleep_ns == 1_000_000
    assert idle_strategy_from_name("sleep-ms").sleep_ns == 1_000_000
    assert idle_strategy_from_name("sleep-ns").sleep_ns == 1_000
    assert idle_strategy_from_name("sleeping", "100us").sleep_ns == 100_000
    assert idle_strategy_from_name("sleep-ns", "2500").sleep_ns == 2_500
    custom = idle_strategy_from_name("backoff", "5-7-2us-3ms")
    assert (custom.max_spins, custom.max_yields, custom.min_park_ns, custom.max_park_ns) == (5, 7, 2000, 3_000_000)
    assert type(idle_strategy_from_name("backoff", "")) is BackoffIdleStrategy


@pytest.mark.parametrize("name, init_args", [
    ("busy", None), ("", None), ("Backoff", None), ("controllable", None), ("org.agrona.concurrent.Foo", None),
    ("backoff", "1-2-3us"), ("backoff", "a-2-3us-4us"), ("backoff", "1-2-3xs-4us"), ("backoff", "1-2-4ms-3ms"),
    ("sleeping", "fast"), ("sleeping", "0"), (None, None),
])
def test_idle_strategy_from_name_errors(name, init_args):
    with pytest.raises(ConfigurationError) as info:
        idle_strategy_from_name(name, init_args)
    assert isinstance(info.value, AeronError) and isinstance(info.value, ValueError)


# ---- clocks ------------------------------------------------------------------------------------------------

def test_clocks():
    assert abs(epoch_ms() - time.time() * 1000) < 1000
    a = nano_time()
    b = nano_time()
    assert b >= a
    ticks = iter([100, 250])
    clock = CachedNanoClock(lambda: next(ticks))
    assert clock.nano_time() == 100
    assert clock.update() == 250 and clock.nano_time() == 250
    assert clock.update(400) == 400
    assert clock.advance(5) == 405 and clock.nano_time() == 405
    epoch = CachedEpochClock(lambda: 7)
    assert epoch.time() == 7 and epoch.update(9) == 9 and epoch.advance(1) == 10 and epoch.time() == 10
