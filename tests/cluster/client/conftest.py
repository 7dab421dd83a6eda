# SPDX-License-Identifier: Apache-2.0
"""Fixtures of the cluster client tests: our embedded driver with short timeouts (a lost ingress or egress shows
within a second), a scripted fake cluster on it (fake_cluster.py), and the client's context pointed at it."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import aeron.aio
from aeron import MediaDriver
from aeron.cluster.client import Context, EgressListener
from tests import support
# the aio tests' loops (asyncio and uvloop) and their check that the loop met no stray exception
from tests.aio.conftest import loop_errors, pytest_asyncio_loop_factories  # noqa: F401
from tests.cluster.client.fake_cluster import FakeCluster

MS = 1_000_000

# short liveness so that a member that stops listening, or stops publishing, is noticed within a test
CLUSTER_CLIENT_DRIVER_SETTINGS: dict[str, Any] = dict(
    ipc_term_buffer_length=65536, term_buffer_length=65536, timer_interval_ns=50 * MS,
    publication_linger_timeout_ns=100 * MS, publication_connection_timeout_ns=500 * MS,
    image_liveness_timeout_ns=500 * MS, client_liveness_timeout_ns=2000 * MS,
    publication_unblock_timeout_ns=3000 * MS)


@pytest.fixture
def driver() -> Iterator[Any]:
    with MediaDriver.launch_embedded(support.driver_context(**CLUSTER_CLIENT_DRIVER_SETTINGS)) as d:
        yield d


@pytest.fixture
async def client(driver, loop_errors):  # noqa: F811 - the imported fixture
    """An AsyncAeron on the driver."""
    async with aeron.aio.connect(driver.aeron_dir, resource_linger_duration_ns=100 * MS) as c:
        yield c


@pytest.fixture
def make_fake(driver):
    """``make_fake(member_count=1, respond=echo_respond, ...)``: a FakeCluster on the driver, closed after the
    test."""
    made: list[FakeCluster] = []

    def make(**kwargs: Any) -> FakeCluster:
        fake = FakeCluster(driver.aeron_dir, **kwargs)
        made.append(fake)
        return fake

    yield make
    for fake in made:
        fake.close()


class RecordingListener(EgressListener):
    """Keeps everything the egress delivered: messages (copied), session events, new leaders, admin responses."""

    def __init__(self) -> None:
        self.messages: list[tuple[int, int, bytes]] = []
        self.session_events: list[tuple[Any, ...]] = []
        self.new_leaders: list[tuple[Any, ...]] = []
        self.admin_responses: list[tuple[Any, ...]] = []

    def on_message(self, cluster_session_id: int, timestamp: int, buffer: Any, offset: int, length: int,
                   header: Any) -> None:
        self.messages.append((cluster_session_id, timestamp, buffer.get_bytes(offset, length)))

    def on_session_event(self, correlation_id: int, cluster_session_id: int, leadership_term_id: int,
                         leader_member_id: int, code: Any, detail: str) -> None:
        self.session_events.append((correlation_id, cluster_session_id, leadership_term_id, leader_member_id, code,
                                    detail))

    def on_new_leader(self, cluster_session_id: int, leadership_term_id: int, leader_member_id: int,
                      ingress_endpoints: str) -> None:
        self.new_leaders.append((cluster_session_id, leadership_term_id, leader_member_id, ingress_endpoints))

    def on_admin_response(self, cluster_session_id: int, correlation_id: int, request_type: Any, response_code: Any,
                          message: str, payload: Any, payload_offset: int, payload_length: int) -> None:
        self.admin_responses.append((cluster_session_id, correlation_id, request_type, response_code, message,
                                     payload.get_bytes(payload_offset, payload_length)))


def client_context(driver: Any, fake: FakeCluster, listener: Any = None, members: list[int] | None = None,
                   **settings: Any) -> Context:
    """A context for ``fake``'s members (all, or ``members``) with an ephemeral UDP egress and a 2 s message
    timeout."""
    settings.setdefault("message_timeout_ns", 2000 * MS)
    return Context(environ={}, aeron_dir=driver.aeron_dir, ingress_channel="aeron:udp",
                   ingress_endpoints=fake.ingress_endpoints(members), egress_channel="aeron:udp?endpoint=127.0.0.1:0",
                   egress_listener=listener, **settings)
