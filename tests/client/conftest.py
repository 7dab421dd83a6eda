# SPDX-License-Identifier: Apache-2.0
"""Fixtures of the client tests: the ``driver`` and ``client`` fixtures of tests/conftest.py with this package's
presets (the driver's short timeouts; the client's errors collected), and small bounded helpers."""
from __future__ import annotations

import threading
from typing import Any

import pytest

from aeron import Aeron, Context
from aeron.driver import Context as DriverContext
from tests import support
from tests.support import wait_for

MS = 1_000_000
TERM_LENGTH = 65536
LIVENESS_NS = 1000 * MS                 # client liveness timeout of the test drivers
UNBLOCK_NS = 1500 * MS                  # publication unblock timeout
DRIVER_TIMEOUT_MS = 2000
LINGER_NS = 100 * MS                    # client resource linger and driver publication linger
TIMER_MS = 50                           # the test drivers' timer interval


# The client tests' preset: short timeouts so that liveness, unblocking and lingering happen within a test.
CLIENT_DRIVER_SETTINGS: dict[str, Any] = dict(
    ipc_term_buffer_length=TERM_LENGTH, timer_interval_ns=TIMER_MS * MS, publication_linger_timeout_ns=LINGER_NS,
    client_liveness_timeout_ns=LIVENESS_NS, publication_unblock_timeout_ns=UNBLOCK_NS,
    driver_timeout_ms=DRIVER_TIMEOUT_MS, counters_free_to_reuse_timeout_ns=0)


def driver_context(**overrides: Any) -> DriverContext:
    return support.driver_context(**{**CLIENT_DRIVER_SETTINGS, **overrides})


def client_settings_of(errors: list[BaseException] | None = None, **settings: Any) -> dict[str, Any]:
    """The client tests' preset: the driver timeout, linger and keepalive to match the driver's, errors collected."""
    settings.setdefault("driver_timeout_ms", DRIVER_TIMEOUT_MS)
    settings.setdefault("resource_linger_duration_ns", LINGER_NS)
    settings.setdefault("keepalive_interval_ns", 100 * MS)
    if errors is not None:
        settings.setdefault("error_handler", errors.append)
    return settings


def client_context(aeron_dir: str, errors: list[BaseException] | None = None, **settings: Any) -> Context:
    return Context(aeron_dir, **client_settings_of(errors, **settings))


@pytest.fixture
def driver_settings() -> dict[str, Any]:
    return CLIENT_DRIVER_SETTINGS


@pytest.fixture
def errors() -> list[BaseException]:
    return []


@pytest.fixture
def client_settings(errors: list[BaseException]) -> dict[str, Any]:
    return client_settings_of(errors)


def connected_pair(client: Aeron, stream_id: int = 1001, channel: str = "aeron:ipc", exclusive: bool = False):
    sub = client.add_subscription(channel, stream_id)
    pub = (client.add_exclusive_publication if exclusive else client.add_publication)(channel, stream_id)
    wait_for(lambda: pub.is_connected and sub.image_count == 1, what="publication connected")
    return pub, sub


def drain(sub: Any, limit: int = 100) -> list[bytes]:
    """One poll of ``sub`` (a Subscription or an Image); the payloads copied out."""
    got: list[bytes] = []
    sub.poll(lambda b, o, l, h: got.append(b.get_bytes(o, l)), limit)
    return got


def receive(sub: Any, count: int, timeout_s: float = 5.0) -> list[bytes]:
    """Poll until ``count`` messages arrived (bounded)."""
    got: list[bytes] = []
    handler = lambda b, o, l, h: got.append(b.get_bytes(o, l))      # noqa: E731
    wait_for(lambda: sub.poll(handler, count - len(got)) >= 0 and len(got) >= count, timeout_s,
             what=f"{count} messages")
    return got


def receive_one_by_one(pub: Any, sub: Any, idle: Any, count: int = 20) -> list[bytes]:
    """A reader thread polls ``sub`` with ``idle`` (a wake-up idle strategy, parking between messages) while this
    thread offers ``count`` 8-byte messages one at a time, each after the last arrived; the payloads received."""
    got: list[bytes] = []
    done = threading.Event()

    def read() -> None:
        while len(got) < count and not done.is_set():
            idle.idle(sub.poll(lambda b, o, l, h: got.append(b.get_bytes(o, l)), 10))

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for i in range(count):
            while pub.offer(bytes([i]) * 8) < 0:
                pass
            wait_for(lambda: len(got) > i, what=f"message {i}")
    finally:
        done.set()
        reader.join(10)
    return got


def unregistered_client(aeron_dir: str, monkeypatch: pytest.MonkeyPatch) -> Aeron:
    """A client that neither registers nor signals, as an official client: no wake-up board."""
    from aeron.client import client_conductor
    with monkeypatch.context() as patch:
        patch.setattr(client_conductor, "open_board", lambda aeron_dir: None)
        return Aeron.connect(Context(aeron_dir))
