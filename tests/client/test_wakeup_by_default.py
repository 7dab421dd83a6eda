# SPDX-License-Identifier: Apache-2.0
"""Our clients' loops choose ``wakeup`` by default on a driver of ours, and keep Aeron's strategies elsewhere: the
board names the driver that made it (Aeron.wakeup_by_default), Aeron.default_idle_strategy and
Aeron.response_idle_strategy pick from it, and an IPC loop goes back to its fallback while a client that does not
signal (an official one) is connected (AutoIdleStrategy). The samples' ``--idle auto``, AeronArchive's and
AeronCluster's waits use them."""
import os
import threading
import time

import pytest

from aeron import Aeron, Context
from aeron.archive.client.aeron_archive import Context as ArchiveContext
from aeron.cluster.client.aeron_cluster import Context as ClusterContext
from aeron.common.agent import BackoffIdleStrategy, BusySpinIdleStrategy, SleepingMillisIdleStrategy
from aeron.common.wakeup import (DRIVER_PID_OFFSET, WAKEUP_FILE, AutoIdleStrategy, ClientRegistry, WakeupIdleStrategy,
                                 open_board)
from aeron.samples import _common
from tests.client.conftest import unregistered_client
from tests.support import free_port, wait_for

pytestmark = pytest.mark.timeout(60)


def test_the_board_names_the_driver_that_made_it(driver, client):
    board = open_board(driver.aeron_dir)
    registry = ClientRegistry(board)
    try:
        assert registry.driver_pid == client._conductor._cnc.pid > 0
    finally:
        registry.close()
        board.close()
    assert client.wakeup_by_default


def test_on_our_driver_a_loop_given_no_idle_strategy_parks_on_the_board(client):
    fallback = BusySpinIdleStrategy()
    udp = client.add_subscription(f"aeron:udp?endpoint=127.0.0.1:{free_port()}", 31)
    idle = client.default_idle_strategy(fallback, udp)
    # network data is inserted and signalled by our driver's receiver, whoever published it
    assert isinstance(idle, WakeupIdleStrategy) and idle.is_bound and idle.spin_ns == 0
    idle.close()
    ipc = client.add_subscription("aeron:ipc", 32)
    auto = client.default_idle_strategy(fallback, ipc)
    assert isinstance(auto, AutoIdleStrategy) and auto.wakeup.is_bound and auto.fallback is fallback
    registry = client._conductor.client_registry
    wait_for(lambda: registry.all_signal, what="every client ours")
    pub = client.add_publication("aeron:ipc", 32)
    wait_for(lambda: pub.is_connected, what="connected")
    got = []
    done = threading.Event()

    def receive():
        while not got and not done.is_set():
            auto.idle(ipc.poll(lambda *a: got.append(a), 10))

    reader = threading.Thread(target=receive)
    reader.start()
    try:
        wait_for(lambda: auto.wakeup.parks > 0, what="parked")
        assert pub.offer(b"signalled") > 0
        wait_for(lambda: got, what="the message")
    finally:
        done.set()
        reader.join(10)
    assert auto.on_wakeup and auto.switches == 0 and auto.wakeup.waiter.wakeups > 0
    auto.close()
    assert not auto.wakeup.is_bound


def test_an_ipc_loop_spins_as_before_while_an_official_client_is_connected(driver, client, monkeypatch):
    ipc = client.add_subscription("aeron:ipc", 33)
    registry = client._conductor.client_registry
    wait_for(lambda: registry.all_signal, what="every client ours")
    spins = []

    class Fallback(BusySpinIdleStrategy):
        """Counts its calls (their work counts, the last 8) and sleeps when idle: a test does not spin."""

        def idle(self, work_count=0):
            spins.append(work_count)
            del spins[:-8]
            if not work_count:
                time.sleep(0.0005)

    auto = client.default_idle_strategy(Fallback(), ipc)
    try:
        for _ in range(20):              # the spin, then a prepared park
            auto.idle(0)
        assert auto.on_wakeup and not spins
        official = unregistered_client(driver.aeron_dir, monkeypatch)
        try:
            pub = official.add_publication("aeron:ipc", 33)        # its offers wake nobody
            assert not registry.all_signal
            # the switch comes at the first idle call that reads the verdict gone (a loaded machine may deliver
            # the driver's notice a call or two later): waited for, not assumed to be the very next call
            wait_for(lambda: auto.idle(0) or not auto.on_wakeup, what="the fallback taken")
            assert spins and set(spins) == {0} and auto.switches == 1
            assert not auto.wakeup.waiter.prepared                  # the prepared park withdrawn
            wait_for(lambda: pub.is_connected, what="connected")
            assert pub.offer(b"unsignalled") > 0
            got = []
            deadline = time.monotonic() + 30
            while not got and time.monotonic() < deadline:
                auto.idle(ipc.poll(lambda *a: got.append(a), 10))
            assert got and not auto.on_wakeup and spins[-1] == 1
        finally:
            official.close()
        wait_for(lambda: registry.all_signal, what="every client ours again")
        for _ in range(AutoIdleStrategy.CHECK_EVERY):
            auto.idle(0)
        assert auto.on_wakeup and auto.switches == 2
    finally:
        auto.close()


def test_waits_for_responses_wake_on_the_stream_and_stay_bounded_as_backoff(client):
    fallback = BackoffIdleStrategy(10, 20, 1_000, 1_000_000)
    idle = client.response_idle_strategy(34, fallback)
    try:
        assert isinstance(idle, WakeupIdleStrategy) and idle.is_bound
        assert (idle.max_spins, idle.max_yields, idle.min_park_ns) == (10, 20, 1_000)
        assert idle.max_park_ns == idle.quiet_park_ns == 1_000_000
        assert idle.quiet(idle.quiet_park_ns) == 1_000_000       # never the long bound: connections are not signalled
        for _ in range(200):
            idle.idle(0)
        assert idle.park_bound_ns == 1_000_000
        pub = client.add_publication("aeron:ipc", 34)
        sub = client.add_subscription("aeron:ipc", 34)
        wait_for(lambda: pub.is_connected, what="connected")
        waiter = idle.waiter
        before = waiter.wakeups
        waiter.prepare()
        assert pub.offer(b"response") > 0
        assert waiter.wait(10_000_000_000) and waiter.wakeups == before + 1
        assert sub.poll(lambda *a: None, 10) == 1
    finally:
        idle.close()


def test_without_our_drivers_board_everything_keeps_aerons_strategies(driver):
    # as on aeronmd: no board from the driver, so our client makes one that names no driver
    board_path = f"{driver.aeron_dir}/{WAKEUP_FILE}"
    os.unlink(board_path)
    with Aeron.connect(Context(driver.aeron_dir)) as client:
        assert os.path.exists(board_path) and not client.wakeup_by_default
        sub = client.add_subscription("aeron:ipc", 35)
        fallback = BusySpinIdleStrategy()
        assert client.default_idle_strategy(fallback, sub) is fallback
        backoff = BackoffIdleStrategy(10, 20, 1_000, 1_000_000)
        assert client.response_idle_strategy(36, backoff) is backoff
        assert _common.idle_strategy(client, "auto", sub) is None                    # cping's spin
        assert isinstance(_common.idle_strategy(client, "auto", sub, fallback="sleep-ms"), SleepingMillisIdleStrategy)
        explicit = _common.idle_strategy(client, "wakeup", sub)
        assert isinstance(explicit, WakeupIdleStrategy) and explicit.is_bound     # an explicit choice holds
        explicit.close()


def test_a_board_naming_another_driver_is_not_ours(driver):
    board = open_board(driver.aeron_dir)
    registry = ClientRegistry(board)
    try:
        registry._buffer.put_i32_ordered(DRIVER_PID_OFFSET, 2 ** 31 - 1)     # a driver that is gone (aeronmd now)
        with Aeron.connect(Context(driver.aeron_dir)) as client:
            assert not client.wakeup_by_default
    finally:
        registry.close()
        board.close()


def test_the_samples_idle_option(client):
    sub = client.add_subscription("aeron:ipc", 37)
    auto = _common.idle_strategy(client, "auto", sub)
    assert isinstance(auto, AutoIdleStrategy) and isinstance(auto.fallback, BusySpinIdleStrategy)
    assert _common.parking(auto) is auto.wakeup
    auto.close()
    assert _common.idle_strategy(client, "spin", sub) is None          # an explicit choice holds
    assert isinstance(_common.idle_strategy(client, "backoff", sub), BackoffIdleStrategy)
    wakeup = _common.idle_strategy(client, " wakeup ", sub)
    assert isinstance(wakeup, WakeupIdleStrategy) and wakeup.is_bound
    wakeup.close()
    args = _common.parser("pong", "cCpsSi").parse_args([])
    assert args.idle == "auto"


def test_the_archive_and_cluster_clients_wait_for_responses_on_the_board_when_given_no_idle_strategy(client):
    archive = ArchiveContext(environ={}, control_request_channel="aeron:ipc", control_response_channel="aeron:ipc",
                             control_response_stream_id=38, aeron=client).conclude()
    cluster = ClusterContext(environ={}, ingress_channel="aeron:ipc", egress_channel="aeron:ipc", egress_stream_id=39,
                             aeron=client).conclude()
    for ctx, fallback_limits in ((archive, (10, 20, 1_000, 1_000_000)), (cluster, (1, 10, 1_000, 1_000_000))):
        idle = ctx.idle_strategy
        assert isinstance(idle, WakeupIdleStrategy) and idle.is_bound
        assert (idle.max_spins, idle.max_yields, idle.min_park_ns, idle.max_park_ns) == fallback_limits
        waiter = idle.waiter
        ctx.close()                     # releases its slot on the board; the client is the caller's
        assert waiter.is_closed and not client.is_closed
    given = BackoffIdleStrategy()
    ctx = ArchiveContext(environ={}, control_request_channel="aeron:ipc", control_response_channel="aeron:ipc",
                         aeron=client, idle_strategy=given).conclude()
    assert ctx.idle_strategy is given
    ctx.close()
