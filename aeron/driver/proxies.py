# SPDX-License-Identifier: Apache-2.0
"""Commands between the driver's agents: the conductor tells the Sender and the Receiver what to add and remove,
the Receiver asks the conductor for images, and both hand resources back when they let go of them
(SenderProxy.java, ReceiverProxy.java, DriverConductorProxy.java, CommandProxy.java; aeron_driver_sender_proxy.c,
aeron_driver_receiver_proxy.c, aeron_driver_conductor_proxy.c).

A command is a small record ``(handler, arg, ...)``: the target's handler, looked up once when the proxy is made,
and its arguments. No closure is made per command. The target drains a bounded number per duty cycle
(COMMAND_DRAIN_LIMIT, Aeron's AERON_COMMAND_DRAIN_LIMIT).

As in Aeron since the proxies stopped calling the target directly in SHARED and INVOKER modes, every command is
queued in every threading mode, so a handler never runs inside another agent's duty cycle. A full queue counts a
failed offer in the proxy's system counter and retries after yielding the thread, as Aeron does. One deviation:
when the target runs on the offering thread (SHARED, INVOKER), waiting would never end, so the retry first runs
the target's oldest command itself.
"""
from __future__ import annotations

import collections
import os
import threading
from collections.abc import Callable
from typing import Any

# Capacity in records. The Java driver's queues hold 1024 commands (Configuration.CMD_QUEUE_CAPACITY); the C
# driver's are byte rings of 128 MiB (AERON_COMMAND_RB_CAPACITY * 1024), sized so they never fill in practice.
COMMAND_QUEUE_CAPACITY = 1024
# The conductor stops reading client commands while a queue has fewer free records than this (Aeron's
# notAcceptingClientCommands; AERON_COMMAND_RB_RESERVE in C): one client command queues at most two records per
# agent (an endpoint and what uses it), so a command is never started that could not be handed on.
COMMAND_QUEUE_RESERVE = 8
COMMAND_DRAIN_LIMIT = 1          # AERON_COMMAND_DRAIN_LIMIT: commands run per duty cycle of the target


class CommandQueue:
    """A bounded FIFO of command records with one consumer (the target agent).

    ``deque.append`` and ``popleft`` are atomic, so one producer and one consumer need no lock. The conductor's
    queue has two producers (sender and receiver threads), whose length check and append are made one step by a
    lock, so the bound holds exactly.
    """

    __slots__ = ("capacity", "is_closed", "_records", "_lock")

    def __init__(self, capacity: int = COMMAND_QUEUE_CAPACITY, producers: int = 1) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be positive, got {capacity}")
        self.capacity = capacity
        self.is_closed = False
        self._records: collections.deque[tuple] = collections.deque()
        self._lock = threading.Lock() if producers > 1 else None

    def __len__(self) -> int:
        return len(self._records)

    @property
    def records(self) -> collections.deque[tuple]:
        """The queue's records themselves, for a hot loop to test for emptiness (or count) without a call each time:
        read-only by convention, taken once; offer and drain stay the only writers."""
        return self._records

    def remaining_capacity(self) -> int:
        return self.capacity - len(self._records)

    def offer(self, record: tuple) -> bool:
        """Append ``record``; False when the queue is full (or closed)."""
        if self.is_closed:
            return False
        lock = self._lock
        if lock is None:
            if len(self._records) >= self.capacity:
                return False
            self._records.append(record)
            return True
        with lock:
            if len(self._records) >= self.capacity:
                return False
            self._records.append(record)
            return True

    def drain(self, limit: int) -> int:
        """Run up to ``limit`` commands, oldest first (consumer side). Returns how many ran."""
        records = self._records
        count = 0
        while count < limit and records:
            record = records.popleft()
            count += 1
            record[0](*record[1:])
        return count

    def close(self) -> None:
        """The consumer has stopped: later offers are refused and nothing queued will run."""
        self.is_closed = True
        self._records.clear()


class CommandProxy:
    """Offers records onto a target's queue; a full queue bumps ``fail_counter`` and retries (CommandProxy.java)."""

    __slots__ = ("queue", "_fail_counter", "_runs_on_caller_thread")

    def __init__(self, queue: CommandQueue, fail_counter: Any, runs_on_caller_thread: bool) -> None:
        self.queue = queue
        self._fail_counter = fail_counter
        self._runs_on_caller_thread = runs_on_caller_thread

    def offer(self, record: tuple) -> bool:
        """Queue ``record``, waiting for room. Returns False only when the target has stopped (never runs it)."""
        queue = self.queue
        while not queue.offer(record):
            if queue.is_closed:
                return False
            if not self._fail_counter.is_closed:
                self._fail_counter.increment_ordered()
            if self._runs_on_caller_thread:
                queue.drain(1)           # the target cannot run while we wait: make room by running it here
            else:
                os.sched_yield()
        return True

    def is_applying_backpressure(self) -> bool:
        """True when the target's queue is nearly full: take no new client command until it drains."""
        queue = self.queue           # remaining_capacity() inlined: the conductor asks every duty cycle
        return queue.capacity - len(queue._records) < COMMAND_QUEUE_RESERVE


class SenderProxy(CommandProxy):
    """Conductor → Sender (SenderProxy.java, aeron_driver_sender_proxy.c)."""

    __slots__ = ("_on_add_endpoint", "_on_remove_endpoint", "_on_add_publication", "_on_remove_publication",
                 "_on_add_destination", "_on_remove_destination", "_on_remove_destination_by_id")

    def __init__(self, sender: Any, fail_counter: Any, runs_on_caller_thread: bool) -> None:
        super().__init__(sender.command_queue, fail_counter, runs_on_caller_thread)
        self._on_add_endpoint = sender.on_add_endpoint
        self._on_remove_endpoint = sender.on_remove_endpoint
        self._on_add_publication = sender.on_add_publication
        self._on_remove_publication = sender.on_remove_publication
        self._on_add_destination = sender.on_add_destination
        self._on_remove_destination = sender.on_remove_destination
        self._on_remove_destination_by_id = sender.on_remove_destination_by_id

    def add_endpoint(self, endpoint: Any) -> None:
        self.offer((self._on_add_endpoint, endpoint))

    def remove_endpoint(self, endpoint: Any) -> None:
        self.offer((self._on_remove_endpoint, endpoint))

    def add_publication(self, publication: Any) -> None:
        self.offer((self._on_add_publication, publication))

    def remove_publication(self, publication: Any) -> None:
        self.offer((self._on_remove_publication, publication))

    def add_destination(self, endpoint: Any, address: tuple, registration_id: int, now_ns: int) -> None:
        self.offer((self._on_add_destination, endpoint, address, registration_id, now_ns))

    def remove_destination(self, endpoint: Any, address: tuple) -> None:
        self.offer((self._on_remove_destination, endpoint, address))

    def remove_destination_by_id(self, endpoint: Any, registration_id: int) -> None:
        """The destination an ADD_DESTINATION with this correlation id added (REMOVE_DESTINATION_BY_ID)."""
        self.offer((self._on_remove_destination_by_id, endpoint, registration_id))


class ReceiverProxy(CommandProxy):
    """Conductor → Receiver (ReceiverProxy.java, aeron_driver_receiver_proxy.c)."""

    __slots__ = ("_on_add_endpoint", "_on_remove_endpoint", "_on_add_subscription", "_on_remove_subscription",
                 "_on_add_publication_image", "_on_remove_publication_image", "_on_image_init_failed",
                 "_on_add_destination", "_on_remove_destination", "_on_reject_image", "_on_request_setup")

    def __init__(self, receiver: Any, fail_counter: Any, runs_on_caller_thread: bool) -> None:
        super().__init__(receiver.command_queue, fail_counter, runs_on_caller_thread)
        self._on_add_endpoint = receiver.on_add_endpoint
        self._on_remove_endpoint = receiver.on_remove_endpoint
        self._on_add_subscription = receiver.on_add_subscription
        self._on_remove_subscription = receiver.on_remove_subscription
        self._on_add_publication_image = receiver.on_add_publication_image
        self._on_remove_publication_image = receiver.on_remove_publication_image
        self._on_image_init_failed = receiver.on_image_init_failed
        self._on_add_destination = receiver.on_add_destination
        self._on_remove_destination = receiver.on_remove_destination
        self._on_reject_image = receiver.on_reject_image
        self._on_request_setup = receiver.on_request_setup

    def add_endpoint(self, endpoint: Any) -> None:
        self.offer((self._on_add_endpoint, endpoint))

    def remove_endpoint(self, endpoint: Any) -> None:
        self.offer((self._on_remove_endpoint, endpoint))

    def add_subscription(self, endpoint: Any, stream_id: int, session_id: int | None) -> None:
        """Interest in ``stream_id`` (one session of it when ``session_id`` is not None)."""
        self.offer((self._on_add_subscription, endpoint, stream_id, session_id))

    def remove_subscription(self, endpoint: Any, stream_id: int, session_id: int | None) -> None:
        self.offer((self._on_remove_subscription, endpoint, stream_id, session_id))

    def add_publication_image(self, image: Any) -> None:
        self.offer((self._on_add_publication_image, image))

    def remove_publication_image(self, image: Any, now_ns: int, rejoin: bool) -> None:
        self.offer((self._on_remove_publication_image, image, now_ns, rejoin))

    def image_init_failed(self, endpoint: Any, stream_id: int, session_id: int, now_ns: int) -> None:
        """The conductor could not make the image a SETUP asked for: cool the session down before a retry."""
        self.offer((self._on_image_init_failed, endpoint, stream_id, session_id, now_ns))

    def add_destination(self, endpoint: Any, destination: Any, now_ns: int) -> None:
        """A multi-destination subscription's new socket (aeron_driver_receiver_proxy_on_add_destination)."""
        self.offer((self._on_add_destination, endpoint, destination, now_ns))

    def remove_destination(self, endpoint: Any, destination: Any) -> None:
        """Stop polling a destination; it is handed back to the conductor to close."""
        self.offer((self._on_remove_destination, endpoint, destination))

    def reject_image(self, image: Any, reason: str) -> None:
        """REJECT_IMAGE of a network image (aeron_driver_receiver_proxy_on_invalidate_image)."""
        self.offer((self._on_reject_image, image, reason))

    def request_setup(self, endpoint: Any, stream_id: int, session_id: int) -> None:
        """Ask the endpoint's explicit control addresses for a session's SETUP (a response subscription that has
        learnt its session; aeron_driver_receiver_proxy_on_request_setup)."""
        self.offer((self._on_request_setup, endpoint, stream_id, session_id))


def _sender_release(resource: Any) -> None:
    resource.sender_release()


def _receiver_release(resource: Any) -> None:
    resource.receiver_release()


class DriverConductorProxy(CommandProxy):
    """Sender and Receiver → conductor (DriverConductorProxy.java, aeron_driver_conductor_proxy.c). Its queue has
    two producers when the sender and the receiver run on their own threads."""

    __slots__ = ("_on_create_publication_image", "_on_publication_error", "_on_response_setup",
                 "_on_response_connected")

    def __init__(self, queue: CommandQueue, on_create_publication_image: Callable[..., None], fail_counter: Any,
                 runs_on_caller_thread: bool, on_publication_error: Callable[..., None] | None = None,
                 on_response_setup: Callable[..., None] | None = None,
                 on_response_connected: Callable[..., None] | None = None) -> None:
        super().__init__(queue, fail_counter, runs_on_caller_thread)
        self._on_create_publication_image = on_create_publication_image
        self._on_publication_error = on_publication_error
        self._on_response_setup = on_response_setup
        self._on_response_connected = on_response_connected

    def create_publication_image(self, endpoint: Any, setup: dict, control_address: tuple, source: tuple) -> None:
        """A SETUP for a wanted stream arrived: the conductor makes the image (receiver thread)."""
        self.offer((self._on_create_publication_image, endpoint, setup, control_address, source))

    def publication_error(self, frame: Any) -> None:
        """A publication heard an error frame from a receiver it knew: the conductor logs it and tells the clients
        (aeron_driver_conductor_proxy_on_publication_error; sender thread)."""
        self.offer((self._on_publication_error, frame))

    def response_setup(self, response_correlation_id: int, response_session_id: int) -> None:
        """A request publication heard RSP_SETUP: bind its response subscription to that session (sender thread)."""
        self.offer((self._on_response_setup, response_correlation_id, response_session_id))

    def response_connected(self, response_correlation_id: int) -> None:
        """A publication with a response correlation id heard its first receiver (sender thread)."""
        self.offer((self._on_response_connected, response_correlation_id))

    def sender_released(self, resource: Any) -> None:
        """The sender has dropped a publication or send endpoint: the conductor may free it
        (aeron_driver_conductor_proxy_on_release_resource)."""
        self.offer((_sender_release, resource))

    def receiver_released(self, resource: Any) -> None:
        """The receiver has dropped an image or receive endpoint: the conductor may free it."""
        self.offer((_receiver_release, resource))
