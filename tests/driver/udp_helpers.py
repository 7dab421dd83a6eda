# SPDX-License-Identifier: Apache-2.0
"""Shared helpers for the UDP driver tests: free ports, embedded driver settings, bounded waits, streaming."""
from __future__ import annotations

import contextlib
import random
import socket
import time

import pytest

from aeron import Aeron, Context, MediaDriver
from aeron._core.counters import STATUS_MESSAGES_RECEIVED
from aeron.client import FragmentAssembler
from aeron.driver import Context as DriverContext
from tests import support
from tests.support import MS, free_port, wait_for  # noqa: F401  (the UDP tests import them from here)


def multicast_group() -> str:
    return f"224.0.1.{1 + 2 * random.randrange(1, 100)}"


def multicast_available() -> bool:
    """Whether the kernel lets us join a group on loopback (containers without multicast routes refuse)."""
    group = multicast_group()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.bind(("", 0))
            s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
                         socket.inet_aton(group) + socket.inet_aton("127.0.0.1"))
        except OSError:
            return False
    return True


# The UDP tests' preset: 64 KiB terms, a fast timer and short lingers and liveness so that streams set up,
# time out and go within a test.
UDP_DRIVER_SETTINGS = dict(term_buffer_length=65536, timer_interval_ns=20 * MS, publication_linger_timeout_ns=200 * MS,
                           image_liveness_timeout_ns=2_000 * MS, publication_connection_timeout_ns=2_000 * MS,
                           client_liveness_timeout_ns=5_000 * MS)
# The preset on tests/conftest.py's ``driver`` fixture: ``pytestmark = [..., UDP_DRIVER]``.
UDP_DRIVER = pytest.mark.driver(**UDP_DRIVER_SETTINGS)
TIMER_INTERVAL_MS = UDP_DRIVER_SETTINGS["timer_interval_ns"] // MS


def wait_for_ticks(client, ticks: int) -> None:
    """``ticks`` timer ticks of the driver ``client`` is on (this preset's, 20 ms each): for a test that asserts that
    something does not happen meanwhile (support.wait_for_timer_ticks)."""
    support.wait_for_timer_ticks(client.context.aeron_dir, ticks, TIMER_INTERVAL_MS)


def receive_queues_empty(*ports: int) -> bool:
    """Whether the UDP sockets bound to 127.0.0.1 on ``ports`` have nothing queued (/proc/net/udp's rx_queue): the
    driver has read every datagram sent to them so far."""
    addresses = {f"0100007F:{port:04X}" for port in ports}
    with open("/proc/net/udp") as table:
        return all(int(fields[4].split(":")[1], 16) == 0
                   for fields in (line.split() for line in table.readlines()[1:]) if fields[1] in addresses)


def system_counter(client, counter_id: int) -> int:
    """The value of one of the driver's system counters (``ctr.STATUS_MESSAGES_SENT``...)."""
    return client.counters_reader.get_counter_value(counter_id)


def held_sender_limit(client, pub, offer, window: int = 32768) -> int:
    """The sender limit (snd-lmt) of ``pub`` (the one publication of the driver ``client`` is on) once flow control
    holds it: ``offer()`` (an offer, after polling whoever keeps up) is called until the publication is back pressured
    with its sender at its limit (short of it by less than an MTU, past one receiver ``window``), and then while
    four more status messages come in, in which a receiver that moved on would have moved the limit."""
    def at_limit():
        limit = counter(client, "snd-lmt:").value
        return limit >= window and 0 <= limit - counter(client, "snd-pos:").value < 1408

    wait_for(lambda: offer() == pub.BACK_PRESSURED and at_limit(), what="the sender held at its limit")
    received = system_counter(client, STATUS_MESSAGES_RECEIVED)
    wait_for(lambda: offer() and system_counter(client, STATUS_MESSAGES_RECEIVED) >= received + 4,
             what="four more status messages")
    return counter(client, "snd-lmt:").value


def driver_context(**overrides) -> DriverContext:
    return support.driver_context(**{**UDP_DRIVER_SETTINGS, **overrides})


@contextlib.contextmanager
def hosts(shm_dir, *names, **settings):
    """An embedded driver (this preset, then ``settings``) in ``shm_dir / name`` and a client on it, for each name:
    the clients."""
    with contextlib.ExitStack() as stack:
        clients = []
        for name in names:
            driver = stack.enter_context(MediaDriver.launch(driver_context(aeron_dir=str(shm_dir / name), **settings)))
            clients.append(stack.enter_context(Aeron.connect(Context(driver.aeron_dir))))
        yield clients


class Collector:
    """Fragment handler keeping (payload, session id, term id, flags) of each message."""

    def __init__(self):
        self.messages = []
        self.sessions = []

    def __call__(self, buffer, offset, length, header):
        self.messages.append(buffer.get_bytes(offset, length))
        self.sessions.append(header.session_id)


def numbered(n: int, size: int) -> bytes:
    return (n.to_bytes(8, "little") * (size // 8 + 1))[:size]


def offer(pub, body, timeout_s=10.0, step=None) -> int:
    deadline = time.monotonic() + timeout_s
    while True:
        result = pub.offer(body)
        if result > 0:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"offer kept failing with {result}")
        if step is not None:
            step()
        time.sleep(0)


def stream(pub, subs, count, size=64, timeout_s=30.0, first=0):
    """Offer ``count`` numbered messages, polling every subscription meanwhile; each subscription must receive all
    of them, in order, each exactly ``size`` bytes. Returns the collectors."""
    collectors = [Collector() for _ in subs]
    assemblers = [FragmentAssembler(c) for c in collectors]
    sent = 0
    deadline = time.monotonic() + timeout_s
    while any(len(c.messages) < count for c in collectors):
        assert time.monotonic() < deadline, ([len(c.messages) for c in collectors], sent)
        if sent < count:
            if pub.offer(numbered(first + sent, size)) > 0:
                sent += 1
            else:
                time.sleep(0)           # back pressure: let the embedded driver's thread have the GIL
        for sub, assembler in zip(subs, assemblers):
            sub.poll(assembler, 64)
    for c in collectors:
        assert [int.from_bytes(m[:8], "little") for m in c.messages] == list(range(first, first + count))
        assert all(m == numbered(first + i, size) for i, m in enumerate(c.messages))
    return collectors


def counter(client, label_start):
    for record in client.counters_reader.counters():
        if record.label.startswith(label_start):
            return record
    raise AssertionError(f"no counter {label_start!r}")
