# SPDX-License-Identifier: Apache-2.0
"""What tests of every package share: an embedded driver's context, a directory of their own under /dev/shm, free
loopback ports, frame alignment and one bounded wait. Fixtures built on these live in tests/conftest.py (``driver``,
``client``, ``shm_dir``); presets (the client tests' short timeouts, the UDP tests' settings) are dictionaries of
overrides passed to :func:`driver_context`, not copies of it."""
from __future__ import annotations

import contextlib
import os
import pathlib
import random
import shutil
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from aeron._core.cnc import CncFile
from aeron._core.ring_buffer import ManyToOneRingBuffer
from aeron.driver import Context as DriverContext

MS = 1_000_000
T = TypeVar("T")


def driver_context(**overrides: Any) -> DriverContext:
    """A driver context for a test: one thread (SHARED, backing off) and nothing read from the environment."""
    settings: dict[str, Any] = dict(threading_mode="SHARED", shared_idle_strategy="backoff")
    settings.update(overrides)
    return DriverContext(environ={}, **settings)


@contextlib.contextmanager
def shm_directory(prefix: str = "aeron-py-test") -> Iterator[pathlib.Path]:
    """A fresh directory under /dev/shm (/tmp without it), removed afterwards whatever is left in it."""
    base = pathlib.Path("/dev/shm") if os.path.isdir("/dev/shm") else pathlib.Path("/tmp")
    path = base / f"{prefix}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    path.mkdir()
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def driver_heartbeat_ms(aeron_dir: str | os.PathLike[str]) -> int:
    """The heartbeat of the driver in ``aeron_dir`` (epoch ms, on its to-driver ring): 0 before its first, -1 after
    it shut down; its conductor writes it on every timer tick."""
    cnc = CncFile.map_existing(os.path.join(aeron_dir, "cnc.dat"))
    section = cnc.to_driver_buffer()
    ring = ManyToOneRingBuffer(section)
    try:
        return int(ring.consumer_heartbeat_time)
    finally:
        ring.close()
        section.close()
        cnc.close()


def wait_for_timer_ticks(aeron_dir: str | os.PathLike[str], ticks: int, interval_ms: int,
                         timeout_s: float = 10.0) -> None:
    """Wait until the conductor of the driver in ``aeron_dir`` has moved its heartbeat ``ticks`` timer intervals on
    (at least ``ticks - 1`` whole intervals of its own ticking since the call): for a test that asserts that
    something does not happen within some ticks, as the driver counts them however loaded the machine is."""
    start = driver_heartbeat_ms(aeron_dir)
    wait_for(lambda: driver_heartbeat_ms(aeron_dir) >= start + ticks * interval_ms, timeout_s,
             what=f"{ticks} timer ticks of the driver in {aeron_dir}", interval_s=0.005)


def free_port(kind: int = socket.SOCK_DGRAM) -> int:
    """A port on 127.0.0.1 that nothing is bound to right now: UDP, or TCP with ``kind=socket.SOCK_STREAM``."""
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ephemeral_low() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range", encoding="ascii") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def restartable_port(kind: int = socket.SOCK_DGRAM, tries: int = 200) -> int:
    """A free port on 127.0.0.1 below the kernel's ephemeral range, for an endpoint a test binds again after its
    process is killed (a cluster member restarting on its own ports): a port from :func:`free_port` is an ephemeral
    one, which any ``port 0`` bind meanwhile (another member's archive replication, a client's egress) may be given
    while the killed member is down, so that the restart finds its address in use."""
    high = min(_ephemeral_low(), 65536)
    low = max(1024, high - 12000)
    rng = random.Random()
    for _ in range(tries):
        port = rng.randrange(low, high)
        with socket.socket(socket.AF_INET, kind) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    return free_port(kind)


def align(value: int, alignment: int) -> int:
    """``value`` rounded up to a multiple of ``alignment`` (a power of two), as frames and records are laid out."""
    return (value + alignment - 1) & -alignment


def wait_for(predicate: Callable[[], T], timeout_s: float = 10.0, *, invoke: Callable[[], Any] | None = None,
             what: str | Callable[[], str] = "condition", interval_s: float = 0.001) -> T:
    """Call ``predicate`` until it returns something true and return that; between tries call ``invoke`` (a duty
    cycle of an invoker, a poll, an offer) and sleep ``interval_s`` when it returned nothing true (no work done: the
    wait spins no CPU away from the driver); fail the test after ``timeout_s``, saying ``what`` was awaited (a
    callable is called then, so that a description of the state is the state at the timeout, not at the start)."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"{what() if callable(what) else what} not met within {timeout_s} s")
        if invoke is None or not invoke():
            time.sleep(interval_s)


class InvokerThread:
    """Runs an INVOKER-mode driver's duty cycles on a thread (every 0.5 ms) until :meth:`stop`: a test that needs the
    driver working, then none of its duty cycles running (what its close alone does)."""

    def __init__(self, driver: Any) -> None:
        self._running = threading.Event()
        self._running.set()
        self._thread = threading.Thread(target=self._run, args=(driver,), daemon=True)
        self._thread.start()

    def _run(self, driver: Any) -> None:
        while self._running.is_set():
            driver.do_work()
            time.sleep(0.0005)

    def stop(self) -> None:
        """No duty cycle after this returns."""
        self._running.clear()
        self._thread.join(10)
