# SPDX-License-Identifier: Apache-2.0
"""Our client and driver on the wake-up board: offers, claim commits and commands wake whoever they concern;
the driver's agents park on it and on their sockets; at rest the directory holds only Aeron's files."""
import os
import threading

import pytest

from aeron import Aeron, Context, MediaDriver
from aeron._core import counters as ctr
from aeron.common.agent import DRIVER_BACKOFF_MAX_PARK_NS, SleepingIdleStrategy
from aeron.common.wakeup import (CLIENTS, CONDUCTOR, LONG_QUIET_PARK_NS, SENDER, SPIES, WAKEUP_FILE, ClientRegistry,
                                 ClientWakeupIdleStrategy, WakeupIdleStrategy, new_waiter, open_board, stream_bit)
from aeron.driver.driver_wakeup import SignallingAgent
from tests.support import driver_context, free_port, wait_for
from tests.client.conftest import client_context, receive_one_by_one, unregistered_client

LONG_NS = 10_000_000_000


WAKEUP_IDLE = dict(shared_idle_strategy="wakeup", conductor_idle_strategy="wakeup", sender_idle_strategy="wakeup",
                   receiver_idle_strategy="wakeup")
pytestmark = pytest.mark.driver(**WAKEUP_IDLE, dir_delete_on_shutdown=False)


@pytest.fixture(params=["SHARED", "DEDICATED"])
def driver_settings(request):
    return dict(threading_mode=request.param)


@pytest.fixture(autouse=True)
def at_rest(shm_dir):
    """After the ``driver`` fixture's driver has closed (an autouse fixture is set up before it, so torn down after):
    its directory holds only Aeron's files."""
    yield
    aeron_dir = shm_dir / "embedded"
    if aeron_dir.exists():
        assert sorted(os.listdir(aeron_dir)) == ["cnc.dat", "images", "loss-report.dat", "publications"]


def test_ipc_offer_and_claim_wake_a_parked_subscriber(driver):
    with Aeron.connect(Context(driver.aeron_dir)) as client:
        sub = client.add_subscription("aeron:ipc", 11)
        pub = client.add_publication("aeron:ipc", 11)
        assert pub.wake_signal.mask == stream_bit(11)          # IPC: its subscribers only, not the driver
        wait_for(lambda: pub.is_connected and sub.image_count, what="connected")
        waiter = client.wakeup_waiter(sub)
        waiter.prepare()
        assert pub.offer(b"hello") > 0
        assert waiter.wait(LONG_NS) is True
        waiter.prepare()
        with pub.try_claim(4) as claim:
            claim.buffer[:] = b"abcd"
        assert waiter.wait(LONG_NS) is True and waiter.wakeups == 2
        got = []
        wait_for(lambda: sub.poll(lambda b, o, n, h: got.append(b.get_bytes(o, n)), 10) or len(got) == 2)
        assert got == [b"hello", b"abcd"]


def test_udp_round_trip_with_every_driver_agent_parking(driver):
    port = free_port()
    channel = f"aeron:udp?endpoint=127.0.0.1:{port}"
    with Aeron.connect(Context(driver.aeron_dir)) as client:
        sub = client.add_subscription(channel, 12)
        pub = client.add_publication(channel, 12)
        # the sender and any spy: stream 12's subscribers are woken by the receiver once the data is in their image
        assert pub.wake_signal.mask == SENDER | SPIES
        wait_for(lambda: pub.is_connected and sub.image_count, what="connected")
        idle = client.wakeup_idle_strategy(sub)
        assert isinstance(idle, ClientWakeupIdleStrategy) and idle.is_bound
        assert idle.idle.__qualname__ == "WakeupIdleCore.idle"   # its idle compiled: a client's loop
        assert type(idle.quiet).__name__ == "QuietBound"               # read per park without Python
        assert idle.spin_ns == 0                # its data comes through the driver: nothing to catch by spinning
        assert idle.waiter.futex and idle.waiter.fileno() == -1     # a thread's loop parks on a futex
        assert client.wakeup_waiter(sub).fileno() >= 0             # an event loop's waiter keeps its socket
        assert client.wakeup_idle_strategy(sub, spin_ns=5000).spin_ns == 5000
        assert client.wakeup_idle_strategy().spin_ns == WakeupIdleStrategy.DEFAULT_SPIN_NS      # IPC among them
        # after a message, a network subscriber's first park yields the CPU before it sleeps (docs/wakeup.md)
        assert idle.yield_ns == WakeupIdleStrategy.DEFAULT_YIELD_NS > 0
        assert client.wakeup_idle_strategy().yield_ns == 0
        assert client.wakeup_idle_strategy(sub, yield_ns=0).yield_ns == 0
        got = receive_one_by_one(pub, sub, idle)
        assert got == [bytes([i]) * 8 for i in range(20)]
        assert idle.parks > 0 and idle.waiter.yield_phases > 0
        driver_waiters = [r.idle_strategy for r in driver._runners]
        assert all(isinstance(i, WakeupIdleStrategy) and i.is_bound for i in driver_waiters)


def test_the_receiver_wakes_the_subscribers_of_the_stream_it_inserted_data_for_only(driver):
    port = free_port()
    channel = f"aeron:udp?endpoint=127.0.0.1:{port}"
    with Aeron.connect(Context(driver.aeron_dir)) as client:
        sub = client.add_subscription(channel, 12)
        pub = client.add_publication(channel, 12)
        wait_for(lambda: pub.is_connected and sub.image_count, what="connected")
        board = client._conductor.wakeup_board
        mine, other = new_waiter(board, stream_bit(12)), new_waiter(board, stream_bit(13))
        try:
            mine.prepare()
            other.prepare()
            while pub.offer(b"x" * 8) < 0:
                pass
            assert mine.wait(LONG_NS) is True                   # woken once the receiver inserted it
            assert sub.poll(lambda *args: None, 10) == 1
            assert other.wait(50_000_000) is False              # another stream's subscriber slept on
        finally:
            mine.close()
            other.close()


def test_client_commands_signal_the_conductor(driver):
    board = None
    with Aeron.connect(Context(driver.aeron_dir)) as client:
        board = client._conductor.wakeup_board
        waiter = client._conductor.new_waiter([])
        waiter.set_mask(CONDUCTOR)
        waiter.prepare()
        client.add_subscription("aeron:ipc", 13)
        assert waiter.wait(LONG_NS) is True
    assert board.is_closed


def test_our_client_on_a_directory_without_a_board_makes_one(shm_dir):
    ctx = driver_context(aeron_dir=str(shm_dir / "d"))
    with MediaDriver.launch(ctx) as driver:
        os.unlink(os.path.join(driver.aeron_dir, WAKEUP_FILE))   # as under aeronmd
        with Aeron.connect(Context(driver.aeron_dir)) as client:
            assert client._conductor.wakeup_board is not None
            assert os.path.exists(os.path.join(driver.aeron_dir, WAKEUP_FILE))


def test_the_data_half_of_a_duty_cycle_sends_receives_and_wakes_the_subscriber_at_once(shm_dir):
    """What a driver thread's data spin runs between whole duty cycles (SignallingAgent.fast_work): an offer goes out,
    comes in and wakes its subscriber in one call, with no status message, timer or command run."""
    ctx = driver_context(threading_mode="INVOKER", aeron_dir=str(shm_dir / "d"))
    port = free_port()
    channel = f"aeron:udp?endpoint=127.0.0.1:{port}"
    with MediaDriver.launch_embedded(ctx) as driver, \
            Aeron.connect(client_context(driver.aeron_dir, use_conductor_agent_invoker=True)) as client:
        signalling = driver._invoker.agent
        sub_id = client.async_add_subscription(channel, 14)
        pub_id = client.async_add_exclusive_publication(channel, 14)

        def step():
            driver.do_work()
            client.conductor_agent_invoker.invoke()

        got_resources: dict = {}

        def added():
            step()
            for key, get, registration_id in (("sub", client.get_subscription, sub_id),
                                              ("pub", client.get_exclusive_publication, pub_id)):
                if key not in got_resources:
                    resource = get(registration_id)          # handed out once: kept when it comes
                    if resource is not None:
                        got_resources[key] = resource
            return len(got_resources) == 2

        wait_for(added, what="added")
        sub, pub = got_resources["sub"], got_resources["pub"]
        wait_for(lambda: step() or (pub.is_connected and sub.image_count), what="connected")
        for _ in range(20):
            step()                                      # setups and status messages settled
        waiter = new_waiter(client._conductor.wakeup_board, stream_bit(14))
        try:
            waiter.prepare()
            commands = driver._conductor.to_driver.consumer_position()
            assert pub.offer(b"ping" * 8) > 0
            assert signalling.fast_work() > 0           # sent, received, inserted: one call
            spin = signalling._spin
            assert (spin.sends, spin.receives, spin.handed_back) == (1, 1, False)    # compiled, no Python half
            assert waiter.wait(0) is True               # and its subscriber signalled
            got = []
            assert sub.poll(lambda b, o, n, h: got.append(b.get_bytes(o, n)), 10) == 1
            assert got == [b"ping" * 8]
            assert signalling.fast_work() == 0          # nothing more to move
            assert driver._conductor.to_driver.consumer_position() == commands     # the conductor did not run
            errors = []
            signalling._on_error = errors.append        # as a duty cycle's errors: reported, the thread goes on
            receiver = driver._conductor.receiver

            def broken():
                raise OSError("a socket failed")

            receiver.poll_data = broken
            signalling._spin_passes = False             # the Python half (a driver clock other than CLOCK_MONOTONIC)
            try:
                assert pub.offer(b"pong" * 8) > 0
                assert signalling.fast_work() > 0 and [type(e) for e in errors] == [OSError]
            finally:
                del receiver.poll_data
        finally:
            waiter.close()


def test_status_messages_to_a_publication_of_the_same_thread_are_read_in_the_cycle_that_sent_them(shm_dir):
    """An idle cycle whose receiver sent status messages on their interval to a publication of this driver (a ping and
    its pong on one driver) lets its sender read them at once: they would otherwise end the next park."""
    ctx = driver_context(threading_mode="INVOKER", aeron_dir=str(shm_dir / "d"))
    port = free_port()
    channel = f"aeron:udp?endpoint=127.0.0.1:{port}"
    with MediaDriver.launch_embedded(ctx) as driver, Aeron.connect(Context(driver.aeron_dir)) as client:
        signalling = driver._invoker.agent
        conductor = driver._conductor
        stop = threading.Event()

        def invoke():
            while not stop.is_set():
                driver.do_work()

        invoker = threading.Thread(target=invoke)
        invoker.start()
        try:
            sub = client.add_subscription(channel, 15)
            pub = client.add_exclusive_publication(channel, 15)
            wait_for(lambda: pub.is_connected and sub.image_count, what="connected")
        finally:
            stop.set()
            invoker.join()
        for _ in range(20):
            driver.do_work()                            # setups and first status messages settled
        [image] = conductor.receiver.images
        received = conductor.system[ctr.STATUS_MESSAGES_RECEIVED]
        for _ in range(20):                             # a cycle with a client command in it is active: try again
            image.time_of_last_sm_ns = 0                # its interval is up
            before = received.get()
            signalling.do_work()
            if not signalling.active:
                break
        assert not signalling.active and conductor.receiver.timer_status_messages == 1
        assert received.get() == before + 1             # read by the sender in the cycle that sent it
        assert conductor.sender.poll_control() == 0     # nothing left in its socket to end a park


def test_a_driver_with_no_network_stream_has_no_data_half_to_spin_on(shm_dir):
    ctx = driver_context(threading_mode="INVOKER", aeron_dir=str(shm_dir / "d"))
    with MediaDriver.launch_embedded(ctx) as driver:
        driver.do_work()
        assert driver._invoker.agent.fast_work(1_000_000) == -1     # the ordinary spin, then a park

QUIET_NS = WakeupIdleStrategy.DEFAULT_QUIET_PARK_NS


def _conductor_agent(driver):
    """The SignallingAgent of the thread that runs the driver's conductor."""
    for runner in driver._runners:
        agent = runner.agent
        if isinstance(agent, SignallingAgent) and agent._conductor is not None:
            return agent
    raise AssertionError("no conductor thread")


def test_the_driver_parks_long_only_while_every_client_is_ours(driver, monkeypatch):
    board = open_board(driver.aeron_dir)
    registry = ClientRegistry(board)
    agent = _conductor_agent(driver)
    try:
        with Aeron.connect(Context(driver.aeron_dir)) as ours:
            assert registry.is_registered(ours._conductor.client_id)
            sub = ours.add_subscription("aeron:ipc", 21)
            wait_for(lambda: registry.all_signal, what="every client ours")
            assert agent.quiet_park_ns(QUIET_NS) == LONG_QUIET_PARK_NS
            assert ours.wakeup_idle_strategy(sub).quiet(QUIET_NS) == LONG_QUIET_PARK_NS
            # a client that does not signal (an official one): its first command is served by a park that was
            # bounded by the long bound, and from then on the driver's parks are bounded as backoff's (1 ms) and
            # our clients' by the short bound
            official = unregistered_client(driver.aeron_dir, monkeypatch)
            try:
                assert not registry.is_registered(official._conductor.client_id)
                pub = official.add_publication("aeron:ipc", 21)
                assert not registry.all_signal
                assert agent.quiet_park_ns(QUIET_NS) == DRIVER_BACKOFF_MAX_PARK_NS
                idle = ours.wakeup_idle_strategy(sub)
                assert idle.quiet(QUIET_NS) == QUIET_NS
                # its offers do not signal: our parked subscriber still gets them, within the short bound
                wait_for(lambda: pub.is_connected, what="connected")
                assert pub.offer(b"unsignalled") > 0
                got = []
                done = threading.Event()

                def receive():
                    while not got and not done.is_set():
                        idle.idle(sub.poll(lambda *a: got.append(a), 10))

                reader = threading.Thread(target=receive)
                reader.start()
                try:
                    wait_for(lambda: got, what="the unsignalled message")
                finally:
                    done.set()
                    reader.join(10)
            finally:
                official.close()
            wait_for(lambda: registry.all_signal, what="every client ours again")   # its session released
        assert not registry.is_registered(ours._conductor.client_id)
    finally:
        registry.close()
        board.close()


def test_a_reader_still_reading_keeps_the_short_bound(driver):
    board = open_board(driver.aeron_dir)
    registry = ClientRegistry(board)
    agent = _conductor_agent(driver)
    try:
        with Aeron.connect(Context(driver.aeron_dir)) as client:
            sub = client.add_subscription("aeron:ipc", 22)
            pub = client.add_publication("aeron:ipc", 22)
            wait_for(lambda: pub.is_connected and registry.all_signal, what="connected")
            assert pub.offer(b"unread") > 0
            # the IPC publication's reader has not read it: its limit will move, which nobody signals
            assert agent.quiet_park_ns(QUIET_NS) == QUIET_NS
            wait_for(lambda: sub.poll(lambda *a: None, 10), what="read")
            assert agent.quiet_park_ns(QUIET_NS) == LONG_QUIET_PARK_NS
    finally:
        registry.close()
        board.close()


def test_a_back_pressured_offer_wakes_the_driver_conductor(shm_dir):
    ctx = driver_context(aeron_dir=str(shm_dir / "d"), shared_idle_strategy="wakeup")
    with MediaDriver.launch(ctx) as driver, Aeron.connect(Context(driver.aeron_dir)) as client:
        client.add_subscription("aeron:ipc", 23)                # never read: the window fills
        pub = client.add_publication("aeron:ipc?term-length=64k", 23)
        wait_for(lambda: pub.is_connected, what="connected")
        while pub.offer(bytes(1000)) > 0:
            pass
        waiter = new_waiter(client._conductor.wakeup_board, CONDUCTOR)
        try:
            waiter.prepare()
            assert pub.offer(bytes(1000)) == pub.BACK_PRESSURED
            assert waiter.wait(LONG_NS) is True             # the conductor moves limits: it is told at once
        finally:
            waiter.close()


def test_a_dead_client_is_not_ours(shm_dir):
    ctx = driver_context(aeron_dir=str(shm_dir / "d"))
    with MediaDriver.launch(ctx) as driver:
        board = open_board(driver.aeron_dir)
        registry = ClientRegistry(board)
        try:
            index = registry.register(987654321)
            assert index >= 0 and registry.is_registered(987654321)
            buffer_offset = 128 + index * 64 + 4                # the slot's pid (aeron._core.wakeup's layout)
            registry._buffer.put_i32_ordered(buffer_offset, 2 ** 31 - 1)     # no such process
            assert not registry.is_registered(987654321)
            registry.release(index, 987654321)
            assert board.slot_state(index)[0] == 0
        finally:
            registry.close()
            board.close()


def test_the_client_conductor_thread_parks_until_our_driver_broadcasts(driver):
    with Aeron.connect(Context(driver.aeron_dir)) as client, Aeron.connect(Context(driver.aeron_dir)) as other:
        idle = client._runner.idle_strategy
        assert isinstance(idle, WakeupIdleStrategy) and idle.is_bound and idle.waiter.mask == CLIENTS
        wait_for(lambda: client._conductor.client_registry.all_signal, what="every client ours")
        # while our driver says every client signals, it parks up to the keepalive interval (timed by it)
        assert idle.quiet(QUIET_NS) == client.context.keepalive_interval_ns
        waiter = new_waiter(client._conductor.wakeup_board, CLIENTS)
        try:
            waiter.prepare()
            other.add_subscription("aeron:ipc", 24)         # the driver's response wakes our client conductors
            assert waiter.wait(LONG_NS) is True
        finally:
            waiter.close()
        # another client's image reaches this client's handler through its parked conductor thread
        seen = []
        sub = client.add_subscription("aeron:ipc", 25, available_image_handler=seen.append)
        pub = other.add_publication("aeron:ipc", 25)
        wait_for(lambda: seen and pub.is_connected and sub.image_count, what="image available")
    assert idle.waiter is None          # released on the conductor thread as it stopped


def test_a_client_with_its_own_idle_strategy_keeps_it(driver):
    mine = SleepingIdleStrategy(1_000_000)
    with Aeron.connect(Context(driver.aeron_dir, idle_strategy=mine)) as client:
        assert client._runner.idle_strategy is mine


def test_the_client_conductor_thread_sleeps_when_parking_is_turned_off(driver):
    # Context(conductor_parking=False): the escape hatch back to the 16 ms sleeps
    with Aeron.connect(Context(driver.aeron_dir, conductor_parking=False)) as client:
        assert not isinstance(client._runner.idle_strategy, WakeupIdleStrategy)


def test_an_agents_wakeup_idle_strategy_bound_to_its_streams_and_woken_by_a_stream_signal(driver):
    with Aeron.connect(Context(driver.aeron_dir)) as client:
        idle = client.bind_agent_idle_strategy(WakeupIdleStrategy(), (100, 101), conductor=True)
        assert idle.is_bound and idle.waiter.futex
        assert idle.waiter.mask == stream_bit(100) | stream_bit(101) | CLIENTS
        assert client.bind_agent_idle_strategy(idle, (7,)) is idle and idle.waiter.mask & stream_bit(7) == 0
        spying = client.bind_agent_idle_strategy(WakeupIdleStrategy(), (10,), spies=True)
        assert spying.waiter.mask == stream_bit(10) | SPIES
        other = SleepingIdleStrategy()
        assert client.bind_agent_idle_strategy(other, (100,)) is other      # not a wakeup one: left as it is
        # a writer of a position counter wakes the readers of its stream
        signal = client.stream_wake_signal(101)
        assert signal is not None and signal.mask == stream_bit(101)
        idle.waiter.prepare()
        signal.signal()
        assert idle.waiter.wait(LONG_NS) is True
        spying.waiter.prepare()
        signal.signal()
        assert spying.waiter.wait(1_000_000) is False           # not its stream


@pytest.mark.driver(**WAKEUP_IDLE, dir_delete_on_shutdown=False, wakeup_data_spin_ns=0)
def test_the_drivers_data_spin_is_a_setting(driver):
    runners = [r for r in driver._runners if isinstance(r.idle_strategy, WakeupIdleStrategy)]
    assert runners and all(r.idle_strategy.data_spin_ns == 0 for r in runners)


def test_parks_stay_within_1ms_while_an_async_add_waits_or_a_user_holds_them(driver):
    # the driver's answer to an async add wakes the client's conductor, not the thread polling get_publication, and a
    # publication's connection wakes nobody: those waits are bounded as Agrona's backoff bounds them
    with Aeron.connect(Context(driver.aeron_dir)) as client:
        sub = client.add_subscription("aeron:ipc", 24)
        wait_for(lambda: client.quiet_park_ns(QUIET_NS) == LONG_QUIET_PARK_NS, what="every client ours")
        registration_id = client.async_add_publication("aeron:ipc", 24)
        assert client.quiet_park_ns(QUIET_NS) == DRIVER_BACKOFF_MAX_PARK_NS
        assert client.wakeup_idle_strategy(sub).quiet(QUIET_NS) == DRIVER_BACKOFF_MAX_PARK_NS
        pub = wait_for(lambda: client.get_publication(registration_id), what="the publication")
        assert client.quiet_park_ns(QUIET_NS) == LONG_QUIET_PARK_NS      # taken: the long bound again
        client.hold_brief_parks(True)
        client.hold_brief_parks(True)
        client.hold_brief_parks(False)
        assert client.quiet_park_ns(QUIET_NS) == DRIVER_BACKOFF_MAX_PARK_NS
        client.hold_brief_parks(False)
        assert client.quiet_park_ns(QUIET_NS) == LONG_QUIET_PARK_NS
        pub.close()
