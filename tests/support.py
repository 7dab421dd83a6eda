# SPDX-License-Identifier: Apache-2.0
"""What tests of every package share: an embedded driver's context, free loopback ports and one bounded wait.
Fixtures built on these live in the conftest files; presets (the client tests' short timeouts, the UDP tests'
settings) are dictionaries of overrides passed to :func:`driver_context`, not copies of it."""
from __future__ import annotations

import socket
import time
from collections.abc import Callable
from typing import Any, TypeVar

from aeron.driver import Context as DriverContext

MS = 1_000_000
T = TypeVar("T")


def driver_context(**overrides: Any) -> DriverContext:
    """A driver context for a test: one thread (SHARED, backing off) and nothing read from the environment."""
    settings: dict[str, Any] = dict(threading_mode="SHARED", shared_idle_strategy="backoff")
    settings.update(overrides)
    return DriverContext(environ={}, **settings)


def free_port() -> int:
    """A UDP port on 127.0.0.1 that nothing is bound to right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate: Callable[[], T], timeout_s: float = 10.0, *, invoke: Callable[[], Any] | None = None,
             what: str = "condition", interval_s: float = 0.001) -> T:
    """Call ``predicate`` until it returns something true and return that, calling ``invoke`` (a duty cycle of an
    invoker, an offer) between tries, else sleeping ``interval_s``; fail the test after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not met within {timeout_s} s")
        if invoke is not None:
            invoke()
        else:
            time.sleep(interval_s)
