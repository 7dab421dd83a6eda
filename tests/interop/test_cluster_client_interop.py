# SPDX-License-Identifier: Apache-2.0
"""Our AeronCluster client (sync and asyncio, on our driver) against official Java Aeron Cluster members running an
echo service (tests/interop/java_cluster_nodes.py): connect, echo round trips, many messages in order, keep-alives, close,
an admin snapshot request, a challenge from the cluster's authenticator, the session closed by the cluster (timeout,
service action), and in a three-member cluster a redirect from a follower and a leader change after the leader's
SIGKILL. Needs AERON_JAVA_CP (skips without it)."""
from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

import aeron.aio
import aeron.aio.cluster
from aeron import MediaDriver
from aeron.aio.cluster import AdminResponse, NewLeaderEvent
from aeron.cluster.client import (AdminResponseCode, AeronCluster, ClusterAuthenticationError,
                                  ClusterSessionClosedError, Context, EventCode, State)
from tests import support
from tests.cluster.client.conftest import RecordingListener
from tests.interop.cluster_support import JavaCluster, cluster_java  # noqa: F401 - a fixture
from tests.support import wait_for

MS = 1_000_000


@pytest.fixture
def driver():
    with MediaDriver.launch_embedded(support.driver_context(term_buffer_length=65536)) as d:
        yield d


@pytest.fixture
def java_cluster(cluster_java, shm_dir):
    """``java_cluster(size=1, properties=None, allow_admin=False)``: started members with a leader, stopped after
    the test."""
    classpath, _ = cluster_java
    made: list[JavaCluster] = []

    def make(size: int = 1, properties: dict[str, str] | None = None, allow_admin: bool = False) -> JavaCluster:
        cluster = JavaCluster(shm_dir, classpath, size, properties, allow_admin)
        made.append(cluster)
        cluster.start()
        cluster.leader(120)
        return cluster

    yield make
    for cluster in made:
        cluster.stop()


def context(driver: Any, cluster: JavaCluster, listener: Any = None, endpoints: str | None = None,
            **settings: Any) -> Context:
    settings.setdefault("message_timeout_ns", 10_000 * MS)
    return Context(environ={}, aeron_dir=driver.aeron_dir, ingress_channel="aeron:udp",
                   ingress_endpoints=endpoints or cluster.ingress_endpoints(),
                   egress_channel="aeron:udp?endpoint=localhost:0", egress_listener=listener, **settings)


def poll_until(cluster: AeronCluster, predicate: Any, timeout_s: float = 30.0, what: Any = "condition") -> Any:
    return wait_for(predicate, timeout_s, invoke=lambda: cluster.poll_egress() or time.sleep(0.001), what=what)


def echo(cluster: AeronCluster, listener: RecordingListener, payloads: list[bytes], timeout_s: float = 30.0) -> None:
    """Offer each payload (waiting out back pressure) and wait until all their echoes came back."""
    start = len(listener.messages)
    deadline = time.monotonic() + timeout_s
    for payload in payloads:
        while cluster.offer(payload) < 0:
            assert time.monotonic() < deadline and not cluster.is_closed, "offer not accepted"
            cluster.poll_egress()
    # a stall fails, a busy machine's slow echoes do not: the wait starts over while echoes keep coming
    expected = start + len(payloads)
    while len(listener.messages) < expected:
        seen = len(listener.messages)
        poll_until(cluster, lambda: len(listener.messages) >= expected or len(listener.messages) > seen, timeout_s,
                   lambda: f"echoes: {len(listener.messages) - start} of {len(payloads)} came back, the last "
                           f"{listener.messages[-1][2][:8] if listener.messages else None!r}; client "
                           f"{cluster.state}, egress images {cluster.egress_subscription.image_count}")
    assert [m[2] for m in listener.messages[start:]] == payloads


def test_connect_echo_many_in_order_keep_alive_and_close(driver, java_cluster):
    cluster_nodes = java_cluster()
    listener = RecordingListener()
    cluster = AeronCluster.connect(context(driver, cluster_nodes, listener, client_name="py-interop"))
    session_id = cluster.cluster_session_id
    assert session_id > 0 and cluster.leader_member_id == 0 and cluster.state is State.CONNECTED
    echo(cluster, listener, [b"hello java cluster"])
    assert listener.messages[0][0] == session_id and listener.messages[0][1] > 0     # the cluster's time
    echo(cluster, listener, [i.to_bytes(4, "little") * (1 + i % 300) for i in range(2000)])
    assert cluster.send_keep_alive()
    cluster.close()
    member = cluster_nodes.members[0]
    wait_for(lambda: f"SESSION_CLOSED {session_id} CLIENT_ACTION" in member.lines, 30, what="session closed")


def test_admin_snapshot_request_is_refused_by_default_and_taken_when_allowed(driver, java_cluster):
    refusing = java_cluster()
    listener = RecordingListener()
    with AeronCluster.connect(context(driver, refusing, listener)) as cluster:
        assert cluster.send_admin_request_to_take_a_snapshot(11)
        poll_until(cluster, lambda: listener.admin_responses, what="admin response")
        assert listener.admin_responses[0][1] == 11
        assert listener.admin_responses[0][3] == AdminResponseCode.UNAUTHORISED_ACCESS
    refusing.stop()
    allowing = java_cluster(allow_admin=True)
    listener = RecordingListener()
    with AeronCluster.connect(context(driver, allowing, listener)) as cluster:
        assert cluster.send_admin_request_to_take_a_snapshot(12)
        poll_until(cluster, lambda: listener.admin_responses, what="admin response")
        assert listener.admin_responses[0][1] == 12 and listener.admin_responses[0][3] == AdminResponseCode.OK
        wait_for(lambda: "SNAPSHOT" in allowing.members[0].lines, 30, what="snapshot taken")


def test_a_challenge_is_answered_and_bad_credentials_are_rejected(driver, java_cluster):
    nodes = java_cluster()

    class Supplier:
        def __init__(self, credentials: bytes) -> None:
            self.credentials = credentials

        def encoded_credentials(self) -> bytes:
            return self.credentials

        def on_challenge(self, challenge: bytes) -> bytes:
            return b"answer-to-" + challenge

    listener = RecordingListener()
    with AeronCluster.connect(context(driver, nodes, listener, credentials_supplier=Supplier(b"challenge"))) as c:
        echo(c, listener, [b"after the challenge"])
    with pytest.raises(ClusterAuthenticationError):
        AeronCluster.connect(context(driver, nodes, listener, credentials_supplier=Supplier(b"reject")))


def test_the_session_timeout_and_a_service_action_close_the_session(driver, java_cluster):
    nodes = java_cluster(properties={"aeron.cluster.session.timeout": "2s"})
    listener = RecordingListener()
    silent = AeronCluster.connect(context(driver, nodes, listener))
    poll_until(silent, lambda: silent.is_closed, 60, "session timed out")
    assert isinstance(silent.close_error, ClusterSessionClosedError) and silent.close_error.reason == "TIMEOUT"
    assert listener.session_events[-1][4] is EventCode.CLOSED and listener.session_events[-1][5] == "TIMEOUT"
    listener = RecordingListener()
    cluster = AeronCluster.connect(context(driver, nodes, listener))
    while cluster.offer(b"close-me") < 0:
        cluster.poll_egress()
    poll_until(cluster, lambda: cluster.is_closed, 30, "closed by the service")
    assert cluster.close_error.reason == "SERVICE_ACTION"


def test_the_asyncio_face_echoes_and_sees_the_admin_response(driver, java_cluster):
    nodes = java_cluster()

    async def main() -> None:
        async with aeron.aio.connect(driver.aeron_dir) as client:
            async with aeron.aio.cluster.connect(client=client, keep_alive_interval=1.0,
                                                 **context_settings(driver, nodes)) as cluster:
                for i in range(500):
                    await cluster.offer(i.to_bytes(4, "little"), timeout=10)
                got = []
                async for message in cluster:
                    got.append(int.from_bytes(message.payload, "little"))
                    if len(got) == 500:
                        break
                assert got == list(range(500))
                assert await cluster.send_admin_request_to_take_a_snapshot(5)
                async for event in cluster.events(timeout=30):
                    if isinstance(event, AdminResponse):
                        assert event.correlation_id == 5
                        assert event.response_code == AdminResponseCode.UNAUTHORISED_ACCESS
                        break

    asyncio.run(main())


def context_settings(driver: Any, nodes: JavaCluster, **more: Any) -> dict[str, Any]:
    return dict(environ={}, ingress_channel="aeron:udp", ingress_endpoints=nodes.ingress_endpoints(),
                egress_channel="aeron:udp?endpoint=localhost:0", message_timeout_ns=10_000 * MS, **more)


def test_three_members_redirect_to_the_leader_and_follow_a_new_one_after_its_sigkill(driver, java_cluster):
    nodes = java_cluster(size=3)
    leader = nodes.leader()
    follower = next(m for m in nodes.members if m is not leader)
    listener = RecordingListener()
    # told of one follower only: its REDIRECT names the leader and every member's endpoint
    cluster = AeronCluster.connect(context(driver, nodes, listener,
                                           endpoints=f"{follower.member_id}={follower.ingress_endpoint}"))
    try:
        assert cluster.leader_member_id == leader.member_id
        term = cluster.leadership_term_id
        echo(cluster, listener, [b"to the first leader"])
        leader.kill()
        # keep the session alive and the egress polled while the survivors elect a new leader
        deadline = time.monotonic() + 90
        next_keep_alive = 0.0
        while not listener.new_leaders:
            assert time.monotonic() < deadline, f"no new leader: {[m.lines[-5:] for m in nodes.members]}"
            assert not cluster.is_closed, cluster.close_error
            if time.monotonic() >= next_keep_alive:
                cluster.send_keep_alive()
                next_keep_alive = time.monotonic() + 0.5
            cluster.poll_egress()
            time.sleep(0.001)
        new_leader = nodes.leader(60, exclude=(leader.member_id,))
        assert cluster.leader_member_id == new_leader.member_id != leader.member_id
        assert cluster.leadership_term_id > term
        assert listener.new_leaders[-1][1:3] == (cluster.leadership_term_id, new_leader.member_id)
        echo(cluster, listener, [b"to the new leader"], 60)
        assert cluster.state is State.CONNECTED
    finally:
        cluster.close()


def test_the_asyncio_face_follows_a_new_leader_after_the_leaders_sigkill(driver, java_cluster):
    nodes = java_cluster(size=3)
    leader = nodes.leader()

    async def main() -> None:
        async with aeron.aio.connect(driver.aeron_dir) as client:
            async with aeron.aio.cluster.connect(client=client, keep_alive_interval=0.5,
                                                 **context_settings(driver, nodes)) as cluster:
                assert cluster.leader_member_id == leader.member_id
                await cluster.offer(b"before", timeout=10)
                assert (await cluster.receive(timeout=30)).tobytes() == b"before"
                leader.kill()
                async for event in cluster.events(timeout=90):     # the keep-alive task polls the egress
                    if isinstance(event, NewLeaderEvent):
                        break
                assert cluster.leader_member_id != leader.member_id
                await cluster.offer(b"after", timeout=60)         # waits for the new leader's ingress
                assert (await cluster.receive(timeout=60)).tobytes() == b"after"

    asyncio.run(main())
