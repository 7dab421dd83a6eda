# SPDX-License-Identifier: Apache-2.0
"""The command queues and proxies between the driver's agents (CommandProxy.java, aeron_driver_sender_proxy.c):
bounded FIFO, a bounded drain per duty cycle, a full queue counted in the *_PROXY_FAILS system counters and
retried, the conductor taking no client command while a queue is nearly full."""
from __future__ import annotations

import threading

import pytest

from aeron.common import command as cmd
from aeron._core import counters as ctr
from aeron.driver import MediaDriver
from aeron.driver.proxies import (
    COMMAND_QUEUE_CAPACITY, COMMAND_QUEUE_RESERVE, CommandProxy, CommandQueue,
)
from tests.driver.fakes import Counters
from tests.driver.rawclient import RawClient
from tests.driver.udp_helpers import driver_context, wait_for


class Recorder:
    def __init__(self):
        self.ran = []

    def __call__(self, *args):
        self.ran.append(args)


def test_a_queue_is_a_bounded_fifo_drained_a_bounded_number_at_a_time():
    queue = CommandQueue(capacity=3)
    ran = Recorder()
    assert all(queue.offer((ran, n)) for n in range(3))
    assert not queue.offer((ran, 3)) and len(queue) == 3 and queue.remaining_capacity() == 0
    assert queue.drain(2) == 2 and ran.ran == [(0,), (1,)]
    assert queue.offer((ran, "a", "b"))
    assert queue.drain(10) == 2 and ran.ran == [(0,), (1,), (2,), ("a", "b")]
    assert queue.drain(10) == 0


def test_the_default_capacity_is_aerons_command_queue():
    assert CommandQueue().capacity == COMMAND_QUEUE_CAPACITY == 1024


def test_a_closed_queue_refuses_and_forgets():
    queue = CommandQueue()
    ran = Recorder()
    queue.offer((ran, 1))
    queue.close()
    assert not queue.offer((ran, 2)) and queue.drain(10) == 0 and ran.ran == []


def test_two_producers_never_overfill_the_queue():
    queue = CommandQueue(capacity=500, producers=2)
    accepted = [0, 0]
    start = threading.Barrier(2)

    def produce(index):
        start.wait()
        for n in range(2000):
            if queue.offer((print, n)):
                accepted[index] += 1

    threads = [threading.Thread(target=produce, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert sum(accepted) == len(queue) == 500


def test_backpressure_is_applied_before_the_queue_is_full():
    counters = Counters()
    proxy = CommandProxy(CommandQueue(capacity=20), counters.system[ctr.SENDER_PROXY_FAILS], False)
    ran = Recorder()
    for n in range(20 - COMMAND_QUEUE_RESERVE):
        assert not proxy.is_applying_backpressure()
        proxy.offer((ran, n))
    assert not proxy.is_applying_backpressure()                            # exactly the reserve left
    proxy.offer((ran, "one more"))
    assert proxy.is_applying_backpressure()


def test_a_full_queue_on_the_same_thread_counts_a_failure_and_runs_the_oldest_command():
    counters = Counters()
    ran = Recorder()
    proxy = CommandProxy(CommandQueue(capacity=4), counters.system[ctr.RECEIVER_PROXY_FAILS], True)
    for n in range(4):
        proxy.offer((ran, n))
    assert proxy.offer((ran, 4))
    assert counters[ctr.RECEIVER_PROXY_FAILS] == 1 and ran.ran == [(0,)]
    proxy.queue.drain(10)
    assert ran.ran == [(n,) for n in range(5)]                            # order kept


def test_a_full_queue_on_another_thread_is_waited_for_and_counted():
    counters = Counters()
    ran = Recorder()
    proxy = CommandProxy(CommandQueue(capacity=2), counters.system[ctr.CONDUCTOR_PROXY_FAILS], False)
    proxy.offer((ran, 0))
    proxy.offer((ran, 1))
    offered = threading.Event()
    producer = threading.Thread(target=lambda: (proxy.offer((ran, 2)), offered.set()))
    producer.start()
    wait_for(lambda: counters[ctr.CONDUCTOR_PROXY_FAILS] > 0, timeout_s=10)
    assert not offered.is_set()
    proxy.queue.drain(1)
    producer.join(10)
    assert offered.is_set() and not producer.is_alive()
    proxy.queue.drain(10)
    assert ran.ran == [(0,), (1,), (2,)]


def test_a_closed_target_ends_the_wait():
    counters = Counters()
    proxy = CommandProxy(CommandQueue(capacity=1), counters.system[ctr.SENDER_PROXY_FAILS], False)
    proxy.offer((print,))
    done = threading.Event()
    producer = threading.Thread(target=lambda: (proxy.offer((print,)), done.set()))
    producer.start()
    wait_for(lambda: counters[ctr.SENDER_PROXY_FAILS] > 0, timeout_s=10)
    proxy.queue.close()
    producer.join(10)
    assert done.is_set()


@pytest.mark.timeout(60)
def test_the_conductor_takes_no_client_command_while_the_sender_is_behind(shm_dir):
    ctx = driver_context(threading_mode="INVOKER", aeron_dir=str(shm_dir / "driver"))
    with MediaDriver.launch(ctx) as driver:
        client = RawClient(driver.aeron_dir)
        try:
            conductor = driver.conductor
            queue = conductor.network.sender_proxy.queue
            ran = Recorder()
            while queue.remaining_capacity() >= COMMAND_QUEUE_RESERVE:      # a sender far behind
                queue.offer((ran,))
            correlation_id = client.next_id()
            client.send(cmd.ADD_PUBLICATION, cmd.PublicationCommand(client.client_id, correlation_id, 1001,
                                                                    "aeron:ipc").encode())
            driver.do_work()                                                # conductor waits, sender drains one
            assert queue.remaining_capacity() == COMMAND_QUEUE_RESERVE
            client.poll()
            assert not [m for _, m in client.received if getattr(m, "correlation_id", None) == correlation_id]
            for _ in range(5):
                driver.do_work()
            client.await_response(lambda type_id, m: type_id == cmd.ON_PUBLICATION_READY
                                  and m.correlation_id == correlation_id, timeout_s=5)
            for _ in range(COMMAND_QUEUE_CAPACITY):                         # the sender catches up
                driver.do_work()
            assert len(ran.ran) == COMMAND_QUEUE_CAPACITY - COMMAND_QUEUE_RESERVE + 1
        finally:
            client.close()
