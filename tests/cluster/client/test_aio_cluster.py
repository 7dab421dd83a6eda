# SPDX-License-Identifier: Apache-2.0
"""aeron.aio.cluster against the scripted fake cluster, on asyncio and on uvloop: connect (OK, challenge, redirect,
rejections, timeout), offer and ``async for`` over the egress, events, keep-alives (sent by the application and by
the opt-in task), leader changes waited out by offers, and the session's end raised as typed errors."""
from __future__ import annotations

import asyncio
import time

import pytest

import aeron.aio
import aeron.aio.cluster
from aeron._core.codecs import cluster as codecs
from aeron.aio.cluster import AdminResponse, ClusterMessage, NewLeaderEvent, SessionEvent
from aeron.cluster.client import (ClusterAuthenticationError, ClusterError, ClusterSessionClosedError,
                                  ClusterTimeoutError, State)
from aeron.common.errors import AeronTimeoutError
from tests.cluster.client.conftest import MS, RecordingListener
from tests.cluster.client.fake_cluster import FakeMember, Request, echo_respond


def settings(fake, members=None, **more):
    more.setdefault("message_timeout_ns", 2000 * MS)
    return dict(environ={}, ingress_channel="aeron:udp", ingress_endpoints=fake.ingress_endpoints(members),
                egress_channel="aeron:udp?endpoint=127.0.0.1:0", **more)


async def wait_for_requests(fake, name, count=1, member_id=None, timeout_s=10.0):
    deadline = time.monotonic() + timeout_s
    while len(fake.of(name, member_id)) < count:
        assert time.monotonic() < deadline, f"{count} {name} not received: {fake.requests}"
        await asyncio.sleep(0.002)
    return fake.of(name, member_id)


async def test_connect_offer_and_iterate_the_echoes(client, make_fake):
    fake = make_fake(leadership_term_id=3)
    async with aeron.aio.cluster.connect(client=client, **settings(fake)) as cluster:
        assert cluster.cluster_session_id == 1 and cluster.leadership_term_id == 3 and cluster.leader_member_id == 0
        for i in range(100):
            assert await cluster.offer(i.to_bytes(4, "little") * 8, timeout=5) > 0
        got = []
        async for message in cluster:
            assert isinstance(message, ClusterMessage)
            assert message.cluster_session_id == 1 and message.timestamp == 123 and message.length == 32
            got.append(int.from_bytes(message.payload[:4], "little"))
            if len(got) == 100:
                break
        assert got == list(range(100))
        kept = message.copy()
        assert await cluster.offer(b"next", timeout=5) > 0
        nxt = await cluster.receive(timeout=5)
        assert nxt is message and bytes(nxt.payload) == b"next"        # one object re-filled: copy() keeps one
        assert int.from_bytes(bytes(kept.payload[:4]), "little") == 99
    assert cluster.is_closed
    await wait_for_requests(fake, "SessionCloseRequest")


async def test_an_own_aeron_is_made_and_closed_when_no_client_is_given(driver, make_fake, loop_errors):
    fake = make_fake()
    async with aeron.aio.cluster.connect(aeron_dir=driver.aeron_dir, **settings(fake)) as cluster:
        assert await cluster.offer(b"x", timeout=5) > 0
        assert bytes((await cluster.receive(timeout=5)).payload) == b"x"
        aeron_client = cluster.client
    assert aeron_client.is_closed


async def test_challenge_redirect_and_rejections(client, make_fake):
    class Supplier:
        def encoded_credentials(self):
            return b"me"

        def on_challenge(self, challenge):
            return challenge[::-1]

    def respond(request: Request, member: FakeMember) -> None:
        if request.name == "SessionConnectRequest" and member.member_id == 1:
            member.challenge(9, request.fields["correlation_id"], b"abc")
        elif request.name == "ChallengeResponse":
            code = codecs.EventCode.OK if request.fields["encoded_credentials"] == b"cba" else \
                codecs.EventCode.AUTHENTICATION_REJECTED
            member.session_event(9, request.fields["correlation_id"], code, "bad answer")
        else:
            echo_respond(request, member)

    fake = make_fake(member_count=2, leader_id=1, respond=respond)
    async with aeron.aio.cluster.connect(client=client, credentials_supplier=Supplier(),
                                         **settings(fake, members=[0])) as cluster:
        assert cluster.cluster_session_id == 9 and cluster.leader_member_id == 1
    [_, redirect_target] = fake.of("SessionConnectRequest")
    assert redirect_target.member_id == 1

    class Wrong(Supplier):
        def on_challenge(self, challenge):
            return b"nope"

    with pytest.raises(ClusterAuthenticationError, match="bad answer"):
        async with aeron.aio.cluster.connect(client=client, credentials_supplier=Wrong(), **settings(fake)):
            pass


async def test_a_connect_nobody_answers_times_out(client, make_fake):
    fake = make_fake(respond=lambda request, member: None)
    with pytest.raises(ClusterTimeoutError):
        async with aeron.aio.cluster.connect(client=client, **settings(fake, message_timeout_ns=300 * MS)):
            pass
    assert not client.is_closed         # a client given to connect is the caller's


async def test_events_reach_the_listener_and_the_event_stream(client, make_fake):
    def respond(request: Request, member: FakeMember) -> None:
        echo_respond(request, member)
        if request.name == "AdminRequest":
            member.admin_response(request.fields["cluster_session_id"], request.fields["correlation_id"],
                                  codecs.AdminResponseCode.OK, "done", b"p")

    fake = make_fake(member_count=2, respond=respond)
    listener = RecordingListener()
    async with aeron.aio.cluster.connect(client=client, listener=listener, **settings(fake)) as cluster:
        assert await cluster.send_admin_request_to_take_a_snapshot(77)
        response_channel = fake.of("SessionConnectRequest")[0].fields["response_channel"]
        fake.leader_id = 1

        def announce() -> None:
            fake.members[1].attach_egress(response_channel)
            fake.members[1].new_leader_event(1, 4, fake.ingress_endpoints())
        fake.call(announce)
        events = []
        async for event in cluster.events(timeout=10):
            events.append(event)
            if len(events) == 2:
                break
        by_type = {type(e): e for e in events}
        assert by_type[AdminResponse] == AdminResponse(1, 77, codecs.AdminRequestType.SNAPSHOT,
                                                       codecs.AdminResponseCode.OK, "done", b"p")
        assert by_type[NewLeaderEvent] == NewLeaderEvent(1, 4, 1, fake.ingress_endpoints())
        assert listener.new_leaders == [(1, 4, 1, fake.ingress_endpoints())]
        assert len(listener.admin_responses) == 1 and listener.messages == []
        # the offer waits out the switch to the new leader and lands there with the new term
        assert await cluster.offer(b"after the change", timeout=10) > 0
        [message] = await wait_for_requests(fake, "SessionMessageHeader", member_id=1)
        assert message.fields["leadership_term_id"] == 4 and cluster.state is State.CONNECTED


async def test_the_cluster_closing_the_session_ends_iteration_with_the_reason(client, make_fake):
    fake = make_fake()
    async with aeron.aio.cluster.connect(client=client, **settings(fake)) as cluster:
        assert await cluster.offer(b"one", timeout=5) > 0
        await wait_for_requests(fake, "SessionMessageHeader")        # its echo goes out before the event
        fake.call(lambda: fake.members[0].session_event(1, 0, codecs.EventCode.CLOSED, "SERVICE_ACTION"))
        got = []
        with pytest.raises(ClusterSessionClosedError) as raised:
            async for message in cluster:
                got.append(message.tobytes())
        assert got == [b"one"] and raised.value.reason == "SERVICE_ACTION"
        with pytest.raises(ClusterSessionClosedError):
            await cluster.offer(b"late", timeout=1)
        with pytest.raises(ClusterSessionClosedError):
            await cluster.send_keep_alive()
        assert [e for e in [e async for e in cluster.events()] if isinstance(e, SessionEvent)] == [
            SessionEvent(0, 1, 0, 0, codecs.EventCode.CLOSED, "SERVICE_ACTION")]


async def test_a_lost_cluster_fails_a_waiting_offer_with_the_timeout(client, make_fake):
    fake = make_fake()
    async with aeron.aio.cluster.connect(client=client, **settings(fake, new_leader_timeout_ns=400 * MS)) as cluster:
        fake.call(fake.members[0].close_ingress)
        fake.call(fake.members[0].detach_egress)
        started = time.monotonic()
        with pytest.raises(ClusterTimeoutError, match="new leader timeout"):
            while True:
                await cluster.offer(b"x", timeout=10)
                await asyncio.sleep(0.01)
        assert time.monotonic() - started < 10
        assert cluster.is_closed


async def test_an_offer_that_cannot_be_made_in_time_raises_aerons_timeout(client, make_fake):
    fake = make_fake()
    async with aeron.aio.cluster.connect(client=client, **settings(fake)) as cluster:
        fake.call(fake.members[0].close_ingress)
        with pytest.raises(AeronTimeoutError):
            while True:
                await cluster.offer(b"x", timeout=0.2)
        assert not cluster.is_closed        # looking for a new leader (20 s by default), not closed


async def test_keep_alives_by_hand_and_by_the_opt_in_task(client, make_fake):
    fake = make_fake(leadership_term_id=6)
    async with aeron.aio.cluster.connect(client=client, **settings(fake)) as cluster:
        assert await cluster.send_keep_alive()
        [keep_alive] = await wait_for_requests(fake, "SessionKeepAlive")
        assert keep_alive.fields == {"leadership_term_id": 6, "cluster_session_id": 1}
    async with aeron.aio.cluster.connect(client=client, keep_alive_interval=0.05, **settings(fake)) as cluster:
        await wait_for_requests(fake, "SessionKeepAlive", count=4)
        session = cluster.cluster_session_id
        # while the application offers, the task has nothing to do
        count = len(fake.of("SessionKeepAlive"))
        deadline = time.monotonic() + 0.5
        while time.monotonic() < deadline:
            assert await cluster.offer(b"busy", timeout=5) > 0
            await asyncio.sleep(0.005)
        assert len(fake.of("SessionKeepAlive")) <= count + 1
    assert all(r.fields["cluster_session_id"] in (1, session) for r in fake.of("SessionKeepAlive"))
    with pytest.raises(ValueError, match="keep_alive_interval"):
        async with aeron.aio.cluster.connect(client=client, keep_alive_interval=0, **settings(fake)):
            pass


async def test_receive_times_out_without_a_message_and_the_error_is_typed(client, make_fake):
    fake = make_fake()
    async with aeron.aio.cluster.connect(client=client, **settings(fake)) as cluster:
        with pytest.raises(AeronTimeoutError):
            await cluster.receive(timeout=0.05)
        assert cluster.receive_nowait() is None
    with pytest.raises(ClusterSessionClosedError):
        cluster.receive_nowait()
    assert isinstance(ClusterSessionClosedError("x"), ClusterError)


async def test_a_message_held_by_the_application_outlives_polls_for_events(client, make_fake):
    fake = make_fake()
    async with aeron.aio.cluster.connect(client=client, keep_alive_interval=0.01, **settings(fake)) as cluster:
        assert await cluster.offer(b"held", timeout=5) > 0
        message = await cluster.receive(timeout=5)
        await wait_for_requests(fake, "SessionKeepAlive", count=3)      # the task polled the egress meanwhile
        assert await cluster.offer(b"more", timeout=5) > 0              # so did this offer
        assert bytes(message.payload) == b"held"
        assert bytes((await cluster.receive(timeout=5)).payload) == b"more"
