# SPDX-License-Identifier: Apache-2.0
"""DriverThreadAgent: an INVOKER driver, a client's conductor and an application's agents on one thread with one park
(what ``ClusteredMediaDriver.launch(one_thread=True)`` runs a member on). A client on that thread waits for the driver
by running it (``Context.driver_agent_invoker``); a part's wait runs the others, never itself; a UDP ping-pong goes
round on the one thread, its park woken by the datagrams and the offers."""
from __future__ import annotations

import time

import pytest

from aeron import Aeron, Context, MediaDriver
from aeron.common.agent import Agent, AgentInvoker, AgentRunner
from aeron.common.errors import ConfigurationError
from aeron.common.wakeup import CLIENTS, WakeupIdleStrategy, streams_mask
from aeron.driver import Context as DriverContext
from aeron.driver.driver_thread import DriverThreadAgent
from tests.support import free_port

pytestmark = pytest.mark.timeout(120)


def _driver(shm_dir, mode: str = "INVOKER") -> MediaDriver:
    return MediaDriver.launch(DriverContext(aeron_dir=str(shm_dir / "driver"), threading_mode=mode,
                                            shared_idle_strategy="wakeup", dir_delete_on_start=True,
                                            dir_delete_on_shutdown=True))


def _client(driver: MediaDriver) -> Aeron:
    # driver timeout short: without the driver invoker a request would wait for an answer nobody runs
    return Aeron.connect(Context(driver.aeron_dir, use_conductor_agent_invoker=True, driver_timeout_ms=3000,
                                 driver_agent_invoker=driver.invoker))


def test_a_driver_with_threads_of_its_own_is_refused(shm_dir):
    with _driver(shm_dir, "SHARED") as driver:
        with pytest.raises(ConfigurationError, match="INVOKER"):
            DriverThreadAgent(driver)


class _Echo(Agent):
    """Answers each ping on one UDP stream with a pong on another."""

    role_name = "echo"

    def __init__(self, client: Aeron, ping_port: int, pong_port: int) -> None:
        self.ping_sub = client.add_subscription(f"aeron:udp?endpoint=127.0.0.1:{ping_port}", 1001)
        self.pong_pub = client.add_exclusive_publication(f"aeron:udp?endpoint=127.0.0.1:{pong_port}", 1002)
        self.refused = 0

    def on_ping(self, buffer, offset, length, header) -> None:
        if self.pong_pub.offer(buffer.get_bytes(offset, length)) < 0:
            self.refused += 1                   # a 64 KiB window never fills with one outstanding message

    def do_work(self) -> int:
        return self.ping_sub.poll(self.on_ping, 10)


def test_a_udp_echo_on_one_thread_parks_between_messages_and_wakes_for_each(shm_dir):
    ping_port, pong_port = free_port(), free_port()
    with _driver(shm_dir) as driver, MediaDriver.launch(DriverContext(
            aeron_dir=str(shm_dir / "peer"), threading_mode="SHARED", shared_idle_strategy="wakeup",
            dir_delete_on_start=True, dir_delete_on_shutdown=True)) as peer_driver:
        thread = DriverThreadAgent(driver)
        client = _client(driver)
        runner = None
        try:
            thread.add(client.conductor_agent_invoker)
            idle = thread.bind(WakeupIdleStrategy(), streams_mask((1001,)) | CLIENTS)
            assert thread.waiter is not None
            # the client's requests are answered although nothing else runs the driver: it runs it while it waits
            echo = _Echo(client, ping_port, pong_port)
            echo_invoker = AgentInvoker(echo)
            echo_invoker.start()
            thread.add(echo_invoker)
            runner = AgentRunner(thread, idle)
            runner.start()
            with Aeron.connect(Context(peer_driver.aeron_dir)) as peer:
                ping = peer.add_exclusive_publication(f"aeron:udp?endpoint=127.0.0.1:{ping_port}", 1001)
                pong = peer.add_subscription(f"aeron:udp?endpoint=127.0.0.1:{pong_port}", 1002)
                wait = peer.wakeup_idle_strategy(pong)
                deadline = time.monotonic() + 60
                # the echo's publication too: a ping answered before its first status message would be refused
                while not ping.is_connected or pong.image_count == 0 or not echo.pong_pub.is_connected:
                    assert time.monotonic() < deadline, "the streams never connected"
                    wait.idle(0)
                parks_before = idle.parks
                got = []
                for i in range(50):
                    while ping.offer(b"ping %d" % i) < 0:
                        assert time.monotonic() < deadline, "the ping was refused"
                        wait.idle(0)
                    wait.reset()
                    while len(got) <= i:
                        assert time.monotonic() < deadline, f"pong {i} never came (pongs refused: {echo.refused})"
                        wait.idle(pong.poll(lambda b, o, n, h: got.append(b.get_bytes(o, n)), 10))
                assert got == [b"ping %d" % i for i in range(50)] and echo.refused == 0
                # between pings the one thread parked (no spinning), and each ping's datagram woke it
                assert idle.parks > parks_before
        finally:
            if runner is not None:
                runner.close()
            client.close()


class _Waiting(Agent):
    """A part whose duty cycle waits (as a consensus module's blocking step does): it runs the thread meanwhile."""

    role_name = "waiting"

    def __init__(self, thread: DriverThreadAgent) -> None:
        self.thread = thread
        self.cycles = 0
        self.nested = 0

    def do_work(self) -> int:
        self.cycles += 1
        if self.nested:                         # inside its own wait: never
            raise AssertionError("a part ran inside its own wait")
        self.nested += 1
        try:
            self.thread.invoke()                # what its wait's idle strategy runs
        finally:
            self.nested -= 1
        return 0


class _Counting(Agent):
    role_name = "counting"

    def __init__(self) -> None:
        self.cycles = 0

    def do_work(self) -> int:
        self.cycles += 1
        return 0


def test_a_parts_wait_runs_the_others_and_never_itself(shm_dir):
    with _driver(shm_dir) as driver:
        thread = DriverThreadAgent(driver)
        waiting, counting = _Waiting(thread), _Counting()
        for agent in (waiting, counting):
            invoker = AgentInvoker(agent)
            invoker.start()
            thread.add(invoker)
        thread.do_work()
        assert waiting.cycles == 1
        assert counting.cycles == 2             # once in the waiting part's wait, once after it



def test_after_cycle_runs_at_the_end_of_each_cycle_after_the_parts(shm_dir):
    with _driver(shm_dir) as driver:
        thread = DriverThreadAgent(driver)
        counting = _Counting()
        invoker = AgentInvoker(counting)
        invoker.start()
        seen: list[int] = []
        thread.add(invoker, after_cycle=lambda: seen.append(counting.cycles))
        thread.do_work()
        assert seen == [1]                      # after the part's cycle, not before it
        thread.fast_work()
        assert seen == [1, 2]
        thread.invoke()
        assert seen == [1, 2, 3]

def test_a_parts_quiet_bound_added_after_bind_bounds_the_threads_parks(shm_dir):
    # the idle strategy takes the thread's quiet_park_ns when bound, before the parts (and their bounds) are added:
    # a bound of a part added later (a consensus module's election and heartbeat timeouts) must still end the parks
    with _driver(shm_dir) as driver:
        thread = DriverThreadAgent(driver)
        idle = thread.bind(WakeupIdleStrategy(), CLIENTS)
        assert isinstance(idle, WakeupIdleStrategy) and idle.quiet is not None
        signalling = driver.invoked_agent
        invoker = AgentInvoker(_Counting())
        invoker.start()
        bounds = [300_000]                      # within the driver's own (backoff's 1 ms while no client signals)
        thread.add(invoker, quiet=lambda quiet_ns: min(quiet_ns, bounds[0]))
        assert idle.quiet(idle.quiet_park_ns) == 300_000
        bounds[0] = 40_000_000                  # asked each park, never kept
        assert idle.quiet(idle.quiet_park_ns) == min(40_000_000, signalling.quiet_park_ns(idle.quiet_park_ns))
        # and the driver's timers end the parks as the driver's own agent says
        assert idle.timers is thread
        far = 500_000_000
        assert abs(thread.time_to_deadline_ns(far) - signalling.time_to_deadline_ns(far)) < 50_000_000
        assert thread.commands_pending() == signalling.commands_pending()


def test_a_part_started_by_its_owner_after_it_was_added_runs_from_the_next_cycle(shm_dir):
    with _driver(shm_dir) as driver:
        thread = DriverThreadAgent(driver)
        counting = _Counting()
        invoker = AgentInvoker(counting)
        thread.add(invoker, start_when=lambda: False)      # never started by the thread
        thread.do_work()
        thread.fast_work()
        assert counting.cycles == 0 and not invoker.is_started
        invoker.start()
        thread.do_work()
        thread.fast_work()
        assert counting.cycles == 2
        invoker.close()                         # closed: no more cycles, though it started
        thread.do_work()
        assert counting.cycles == 2


class _Fed(Agent):
    """A part whose turns find ``pending`` work items, one each."""

    role_name = "fed"

    def __init__(self) -> None:
        self.turns = 0
        self.pending = 0

    def do_work(self) -> int:
        self.turns += 1
        if self.pending:
            self.pending -= 1
            return 1
        return 0


def test_a_driver_fed_part_skips_data_halves_only_after_an_empty_turn_and_until_the_next_driver_cycle(shm_dir):
    with _driver(shm_dir) as driver:
        thread = DriverThreadAgent(driver)
        thread.bind(WakeupIdleStrategy(), CLIENTS)
        fed, other = _Fed(), _Counting()
        for agent, driver_fed in ((fed, True), (other, False)):
            invoker = AgentInvoker(agent)
            invoker.start()
            thread.add(invoker, driver_fed=driver_fed)
        thread.do_work()                        # a whole cycle: every part
        assert (fed.turns, other.cycles) == (1, 1)
        thread.fast_work()                      # its last turn found nothing, and the driver has not run since
        thread.fast_work()
        assert (fed.turns, other.cycles) == (1, 3)
        driver.invoker.invoke()                 # a whole driver cycle run elsewhere (a client's wait for an answer)
        thread.fast_work()
        assert fed.turns == 2
        thread.fast_work()
        assert fed.turns == 2
        fed.pending = 2
        thread.invoke()                         # it finds work: its turns go on in the data halves until one is empty
        thread.fast_work()
        assert fed.turns == 4 and fed.pending == 0
        thread.fast_work()                      # the empty one
        thread.fast_work()
        thread.fast_work()
        assert fed.turns == 5
        thread.do_work()                        # and every whole cycle runs it
        assert fed.turns == 6


def test_a_client_on_the_thread_sees_what_the_driver_broadcasts_while_the_thread_parks(shm_dir):
    # the client's conductor is driver-fed (ClusteredMediaDriver adds it so): an image of another process's publication
    # reaches its subscription, the thread parked in between
    with _driver(shm_dir) as driver:
        thread = DriverThreadAgent(driver)
        idle = thread.bind(WakeupIdleStrategy(), CLIENTS)
        client = _client(driver)
        thread.add(client.conductor_agent_invoker, driver_fed=True)
        subscription = client.add_subscription("aeron:ipc", 1004)
        runner = AgentRunner(thread, idle)
        runner.start()
        try:
            with Aeron.connect(Context(driver.aeron_dir)) as other:
                publication = other.add_publication("aeron:ipc", 1004)
                deadline = time.monotonic() + 20
                while not subscription.images and time.monotonic() < deadline:
                    time.sleep(0.01)
                assert subscription.images, "the image never reached the client on the thread"
                assert publication.is_connected
        finally:
            runner.close()
            client.close()


def test_a_wake_up_is_served_by_a_data_half_unless_a_command_waits_for_a_whole_cycle(shm_dir):
    # what WakeupIdleStrategy._served_wake asks after a wake-up whose data half and parts moved nothing
    with _driver(shm_dir) as driver:
        thread = DriverThreadAgent(driver)
        thread.bind(WakeupIdleStrategy(), CLIENTS)
        client = _client(driver)
        try:
            thread.add(client.conductor_agent_invoker, driver_fed=True)
            client.add_subscription("aeron:ipc", 1005)
            for _ in range(3):
                thread.do_work()
            assert thread.wake_served()             # nothing waits: every client of ours signals, no command
            client.async_add_subscription("aeron:ipc", 1006)
            assert not thread.wake_served()         # a client's command: only the conductor's whole cycle reads it
            thread.do_work()
            assert thread.wake_served()
        finally:
            client.close()


class _StartsWithARequest(Agent):
    role_name = "starts-with-a-request"

    def __init__(self, client: Aeron) -> None:
        self.client = client
        self.subscription = None

    def on_start(self) -> None:
        # a synchronous request in on_start, as a consensus module's connection to its archive
        self.subscription = self.client.add_subscription("aeron:ipc", 1003)

    def do_work(self) -> int:
        return 0


def test_a_part_added_unstarted_starts_on_the_runners_thread(shm_dir):
    with _driver(shm_dir) as driver:
        thread = DriverThreadAgent(driver)
        client = _client(driver)
        try:
            thread.add(client.conductor_agent_invoker)
            idle = thread.bind(WakeupIdleStrategy(), CLIENTS)
            part = _StartsWithARequest(client)
            invoker = AgentInvoker(part)
            thread.add(invoker)
            assert not invoker.is_started
            runner = AgentRunner(thread, idle)
            runner.start()
            try:
                deadline = time.monotonic() + 30
                while part.subscription is None:
                    assert time.monotonic() < deadline, "the part never started"
                    time.sleep(0.01)
                assert invoker.is_started and not invoker.is_closed
            finally:
                runner.close()
        finally:
            client.close()


class _AwaitsItsService(Agent):
    """As a consensus module's on_start: makes what its service's start reads (``ready``), then waits, running the
    thread's other parts, for the service's ack."""

    role_name = "awaits-its-service"

    def __init__(self, thread: DriverThreadAgent) -> None:
        self.thread = thread
        self.ready = False
        self.acked = False
        self.waits_before_ready = 0

    def on_start(self) -> None:
        for _ in range(3):                  # its archive connection: the thread's parts run, the service must not start
            self.waits_before_ready += 1
            self.thread.invoke()
        self.ready = True
        deadline = time.monotonic() + 10
        while not self.acked:
            assert time.monotonic() < deadline, "the service never acked"
            self.thread.invoke()

    def do_work(self) -> int:
        return 0


class _Service(Agent):
    role_name = "service"

    def __init__(self, module: _AwaitsItsService) -> None:
        self.module = module
        self.started_when_ready: bool | None = None

    def on_start(self) -> None:
        self.started_when_ready = self.module.ready
        self.module.acked = True

    def do_work(self) -> int:
        return 0


def test_a_part_after_a_waiting_start_starts_inside_that_wait_once_its_start_may_run(shm_dir):
    # ClusteredMediaDriver's hosted service: started inside the consensus module's on_start, once start_when says the
    # module made what the service's start reads (a start earlier would wait for it with the module below it)
    with _driver(shm_dir) as driver:
        thread = DriverThreadAgent(driver)
        module = _AwaitsItsService(thread)
        service = _Service(module)
        module_invoker, service_invoker = AgentInvoker(module), AgentInvoker(service)
        thread.add(module_invoker)
        thread.add(service_invoker, start_when=lambda: module.ready)
        thread.on_start()
        assert module.waits_before_ready == 3 and module_invoker.is_running
        assert service.started_when_ready is True and service_invoker.is_running
