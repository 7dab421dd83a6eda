# SPDX-License-Identifier: Apache-2.0
"""AeronCluster (sync) against a scripted fake cluster on our driver: the connect handshake (OK, challenge,
redirect, rejections, timeout), offers and the egress, keep-alives, admin requests, close, leader changes, lost
leaders and the session's end."""
from __future__ import annotations

import time

import pytest

from aeron._core.codecs import cluster as codecs
from aeron._core.term_appender import CLOSED, NOT_CONNECTED
from aeron.cluster.client import (AeronCluster, AsyncConnect, ClusterAuthenticationError, ClusterError,
                                  ClusterSessionClosedError, ClusterTimeoutError, Configuration, State)
from aeron.common.agent import DRIVER_BACKOFF_MAX_PARK_NS
from aeron.common.security import NullCredentialsSupplier
from aeron.common.wakeup import WakeupIdleStrategy
from aeron.driver.media_driver import MediaDriver, ThreadingMode
from tests.cluster.client.conftest import MS, RecordingListener, client_context
from tests.cluster.client.fake_cluster import HEARTBEAT_TIMEOUT_NS, FakeMember, Request, echo_respond
from tests.support import InvokerThread, driver_context, wait_for

QUIET_NS = WakeupIdleStrategy.DEFAULT_QUIET_PARK_NS


def poll_until(cluster: AeronCluster, predicate, timeout_s: float = 10.0, what: str = "condition"):
    return wait_for(predicate, timeout_s, invoke=lambda: cluster.poll_egress() or time.sleep(0.0005), what=what)


# -- connect --------------------------------------------------------------------------------------------------------

def test_connect_opens_a_session_with_the_leader_and_tells_it_the_resolved_egress(driver, make_fake):
    fake = make_fake(leadership_term_id=7)
    ctx = client_context(driver, fake, RecordingListener(), client_name="tester")
    with AeronCluster.connect(ctx) as cluster:
        assert cluster.cluster_session_id == 1
        assert cluster.leadership_term_id == 7
        assert cluster.leader_member_id == 0
        assert cluster.state is State.CONNECTED and not cluster.is_closed
        # the new-leader timeout comes from the leader's heartbeat timeout when the context has none
        assert ctx.new_leader_timeout_ns == 2 * HEARTBEAT_TIMEOUT_NS
        [connect] = fake.of("SessionConnectRequest")
        assert connect.fields["version"] == Configuration.PROTOCOL_SEMANTIC_VERSION == 0x300
        assert connect.fields["response_stream_id"] == 102
        channel = connect.fields["response_channel"]
        assert channel.startswith("aeron:udp?endpoint=127.0.0.1:") and not channel.endswith(":0")
        assert "rejoin=false" in channel
        assert connect.fields["client_info"].startswith("name=tester version=")
        assert connect.fields["encoded_credentials"] == b""
    assert cluster.is_closed


def test_credentials_and_a_challenge_are_answered_by_the_supplier(driver, make_fake):
    class Supplier:
        def encoded_credentials(self) -> bytes:
            return b"user:secret"

        def on_challenge(self, challenge: bytes) -> bytes:
            return b"answer-to-" + challenge

    def respond(request: Request, member: FakeMember) -> None:
        if request.name == "SessionConnectRequest":
            member.challenge(55, request.fields["correlation_id"], b"nonce")
        elif request.name == "ChallengeResponse":
            member.session_event(request.fields["cluster_session_id"], request.fields["correlation_id"],
                                 codecs.EventCode.OK)

    fake = make_fake(respond=respond)
    with AeronCluster.connect(client_context(driver, fake, RecordingListener(),
                                             credentials_supplier=Supplier())) as cluster:
        assert cluster.cluster_session_id == 55
    assert fake.of("SessionConnectRequest")[0].fields["encoded_credentials"] == b"user:secret"
    [answer] = fake.of("ChallengeResponse")
    assert answer.fields["encoded_credentials"] == b"answer-to-nonce"
    assert answer.fields["cluster_session_id"] == 55


def test_a_follower_redirects_the_connect_to_the_leader(driver, make_fake):
    fake = make_fake(member_count=3, leader_id=2, leadership_term_id=3)
    # the client only knows member 1 at first: the redirect names the leader and every member's endpoint
    with AeronCluster.connect(client_context(driver, fake, RecordingListener(), members=[1])) as cluster:
        assert cluster.leader_member_id == 2
        assert cluster.leadership_term_id == 3
        assert len(fake.of("SessionConnectRequest", member_id=1)) == 1
        assert len(fake.of("SessionConnectRequest", member_id=2)) == 1
        assert cluster.offer(b"to the leader") > 0
        [message] = fake.wait_for("SessionMessageHeader")
        assert message.member_id == 2 and message.payload == b"to the leader"


@pytest.mark.parametrize("code, error", [(codecs.EventCode.ERROR, ClusterError),
                                         (codecs.EventCode.AUTHENTICATION_REJECTED, ClusterAuthenticationError)])
def test_a_rejected_connect_raises_the_typed_error_with_the_clusters_detail(driver, make_fake, code, error):
    def respond(request: Request, member: FakeMember) -> None:
        if request.name == "SessionConnectRequest":
            member.session_event(-1, request.fields["correlation_id"], code, "go away")

    fake = make_fake(respond=respond)
    ctx = client_context(driver, fake, RecordingListener())
    with pytest.raises(error, match="go away") as raised:
        AeronCluster.connect(ctx)
    assert type(raised.value) is error
    assert ctx.aeron is not None and ctx.aeron.is_closed        # the context's own client is closed again


def test_a_connect_nobody_answers_times_out_after_the_message_timeout(driver, make_fake):
    fake = make_fake(respond=lambda request, member: None)
    ctx = client_context(driver, fake, RecordingListener(), message_timeout_ns=300 * MS)
    started = time.monotonic()
    with pytest.raises(ClusterTimeoutError, match="state=POLL_RESPONSE") as raised:
        AeronCluster.connect(ctx)
    assert isinstance(raised.value, TimeoutError)
    assert time.monotonic() - started >= 0.3
    assert len(fake.of("SessionConnectRequest")) == 1


def test_no_member_listening_times_out_awaiting_the_publication(driver, make_fake):
    fake = make_fake()
    fake.call(fake.members[0].close_ingress)
    ctx = client_context(driver, fake, RecordingListener(), message_timeout_ns=300 * MS)
    with pytest.raises(ClusterTimeoutError, match="AWAIT_PUBLICATION_CONNECTED"):
        AeronCluster.connect(ctx)


def test_async_connect_steps_through_aerons_states(driver, make_fake):
    fake = make_fake()
    async_connect = AeronCluster.async_connect(client_context(driver, fake, RecordingListener()))
    assert async_connect.state is AsyncConnect.State.CREATE_EGRESS_SUBSCRIPTION and async_connect.step == -1
    seen = [async_connect.state]
    cluster = None
    deadline = time.monotonic() + 10
    while cluster is None and time.monotonic() < deadline:
        cluster = async_connect.poll()
        if async_connect.state is not seen[-1]:
            seen.append(async_connect.state)
        time.sleep(0.0005)
    assert cluster is not None
    with cluster:
        assert [s.name for s in seen] == ["CREATE_EGRESS_SUBSCRIPTION", "CREATE_INGRESS_PUBLICATIONS",
                                          "AWAIT_PUBLICATION_CONNECTED", "SEND_MESSAGE", "POLL_RESPONSE",
                                          "CONCLUDE_CONNECT", "DONE"]
        assert AsyncConnect.step_name(3) == "POLL_RESPONSE" and AsyncConnect.step_name(9) == "<unknown>"


def test_an_abandoned_async_connect_releases_what_it_made(driver, make_fake):
    fake = make_fake(respond=lambda request, member: None)
    ctx = client_context(driver, fake, RecordingListener(), aeron=None)
    async_connect = AeronCluster.async_connect(ctx)
    wait_for(lambda: async_connect.poll() is None and async_connect.state is AsyncConnect.State.POLL_RESPONSE,
             what="connect request sent")
    async_connect.close()
    assert ctx.aeron is not None and ctx.aeron.is_closed


def test_the_context_reads_aerons_properties_and_environment():
    ctx = AeronCluster.Context({"aeron.cluster.ingress.channel": "aeron:udp",
                                "aeron.cluster.message.timeout": "250ms"},
                               environ={"AERON_CLUSTER_INGRESS_ENDPOINTS": "0=h:1,1=h:2",
                                        "AERON_CLUSTER_EGRESS_STREAM_ID": "77",
                                        "AERON_CLUSTER_INGRESS_CHANNEL": "aeron:ipc"},
                               egress_channel="aeron:udp?endpoint=localhost:0")
    assert ctx.ingress_channel == "aeron:udp"          # properties win over the environment
    assert ctx.message_timeout_ns == 250 * MS
    assert ctx.ingress_endpoints == "0=h:1,1=h:2" and ctx.egress_stream_id == 77 and ctx.ingress_stream_id == 101
    with pytest.raises(TypeError, match="ingress_chanel"):            # every setting is a named keyword
        AeronCluster.Context(environ={}, ingress_chanel="x")      # type: ignore[call-arg]
    with pytest.raises(ValueError, match="unknown cluster client property"):
        AeronCluster.Context({"aeron.cluster.ingress.chanel": "x"}, environ={})
    with pytest.raises(ValueError, match="aeron.cluster.egress.stream.id"):
        AeronCluster.Context(["aeron.cluster.egress.stream.id=x"], environ={})


@pytest.mark.parametrize("settings, message", [
    (dict(egress_channel="aeron:udp?endpoint=localhost:0"), "ingress_channel must be specified"),
    (dict(ingress_channel="aeron:udp"), "egress_channel must be specified"),
    (dict(ingress_channel="aeron:ipc", ingress_endpoints="0=h:1", egress_channel="aeron:ipc"),
     "ingress_endpoints must be None when using IPC"),
    (dict(ingress_channel="aeron:udp", ingress_endpoints="0:h:1", egress_channel="aeron:ipc"), "missing '='"),
    (dict(ingress_channel="aeron:udp", ingress_endpoints="x=h:1", egress_channel="aeron:ipc"), "not a number"),
    (dict(ingress_channel="aeron:udp", egress_channel="aeron:ipc", new_leader_timeout_ns=0), "positive or -1"),
    (dict(ingress_channel="aeron:udp", egress_channel="aeron:ipc", client_name="x" * 101), "client_name length"),
])
def test_conclude_refuses_a_bad_context_before_connecting_anything(settings, message):
    ctx = AeronCluster.Context(environ={}, **settings)
    with pytest.raises(ValueError, match=message):
        ctx.conclude()
    assert ctx.aeron is None


# -- ingress and egress ----------------------------------------------------------------------------------------------

def test_offers_carry_the_session_header_and_the_egress_delivers_this_sessions_messages(driver, make_fake):
    fake = make_fake(leadership_term_id=4)
    listener = RecordingListener()
    with AeronCluster.connect(client_context(driver, fake, listener)) as cluster:
        data = bytearray(b"xxhello worldyy")
        assert cluster.offer(data, 2, 11) > 0
        assert cluster.offer(b"second") > 0
        requests = fake.wait_for("SessionMessageHeader", 2)
        assert [r.payload for r in requests] == [b"hello world", b"second"]
        assert all(r.fields["cluster_session_id"] == 1 and r.fields["leadership_term_id"] == 4
                   and r.fields["timestamp"] == 0 for r in requests)
        # another session's message on the same egress is not ours: only the echoes arrive
        fake.call(lambda: fake.members[0].message(99, b"not for you"))
        poll_until(cluster, lambda: len(listener.messages) >= 2, what="echoes")
        fake.call(lambda: fake.members[0].message(1, b"last"))
        poll_until(cluster, lambda: len(listener.messages) >= 3, what="last")
        assert listener.messages == [(1, 123, b"hello world"), (1, 123, b"second"), (1, 0, b"last")]


def test_many_messages_arrive_in_order(driver, make_fake):
    fake = make_fake()
    listener = RecordingListener()
    count = 2000
    with AeronCluster.connect(client_context(driver, fake, listener)) as cluster:
        sent = 0
        deadline = time.monotonic() + 30
        while len(listener.messages) < count and time.monotonic() < deadline:
            if sent < count and cluster.offer(sent.to_bytes(4, "little") * 50) > 0:
                sent += 1
            cluster.poll_egress()
        assert [int.from_bytes(m[2][:4], "little") for m in listener.messages] == list(range(count))
        assert all(len(m[2]) == 200 for m in listener.messages)


def test_a_message_longer_than_the_mtu_is_offered_and_assembled(driver, make_fake):
    fake = make_fake()
    listener = RecordingListener()
    with AeronCluster.connect(client_context(driver, fake, listener)) as cluster:
        big = bytes(range(256)) * 20        # several frames (MTU 1408), under the 8 KiB maximum of a 64 KiB term
        assert cluster.offer(big) > 0
        poll_until(cluster, lambda: listener.messages, what="echo")
        assert listener.messages[0][2] == big


def test_try_claim_and_offerv_put_the_session_header_first(driver, make_fake):
    from aeron.client import BufferClaim
    fake = make_fake(leadership_term_id=2)
    with AeronCluster.connect(client_context(driver, fake, RecordingListener())) as cluster:
        claim = BufferClaim()
        assert cluster.try_claim(5, claim) > 0
        claim.buffer[AeronCluster.SESSION_HEADER_LENGTH:] = b"claim"
        claim.commit()
        assert cluster.offerv([None, b"vec", b"tor"]) > 0
        requests = fake.wait_for("SessionMessageHeader", 2)
        assert [r.payload for r in requests] == [b"claim", b"vector"]
        assert all(r.fields["leadership_term_id"] == 2 and r.fields["cluster_session_id"] == 1 for r in requests)


def test_keep_alive_admin_request_and_close_reach_the_leader(driver, make_fake):
    def respond(request: Request, member: FakeMember) -> None:
        echo_respond(request, member)
        if request.name == "AdminRequest":
            member.admin_response(request.fields["cluster_session_id"], request.fields["correlation_id"],
                                  codecs.AdminResponseCode.UNAUTHORISED_ACCESS, "not allowed", b"pl")

    fake = make_fake(respond=respond, leadership_term_id=5)
    listener = RecordingListener()
    cluster = AeronCluster.connect(client_context(driver, fake, listener))
    assert cluster.send_keep_alive() is True
    [keep_alive] = fake.wait_for("SessionKeepAlive")
    assert keep_alive.fields == {"leadership_term_id": 5, "cluster_session_id": 1}
    assert cluster.send_admin_request_to_take_a_snapshot(4242) is True
    [admin] = fake.wait_for("AdminRequest")
    assert admin.fields == {"leadership_term_id": 5, "cluster_session_id": 1, "correlation_id": 4242,
                            "request_type": codecs.AdminRequestType.SNAPSHOT, "payload": b""}
    poll_until(cluster, lambda: listener.admin_responses, what="admin response")
    assert listener.admin_responses == [(1, 4242, codecs.AdminRequestType.SNAPSHOT,
                                         codecs.AdminResponseCode.UNAUTHORISED_ACCESS, "not allowed", b"pl")]
    cluster.close()
    [close] = fake.wait_for("SessionCloseRequest")
    assert close.fields == {"leadership_term_id": 5, "cluster_session_id": 1}
    assert cluster.is_closed and cluster.close_error is None
    assert cluster.offer(b"late") == CLOSED
    assert cluster.poll_egress() == 0
    cluster.close()                 # idempotent
    assert len(fake.of("SessionCloseRequest")) == 1


def test_the_close_request_reaches_the_leader_when_the_clients_driver_closes_at_once(driver, make_fake, shm_dir):
    # an application closing its cluster client and then its embedded driver right away (the tutorial's client): the
    # SessionCloseRequest offered by close() goes out with the driver's close. The client's driver runs in INVOKER
    # mode, so that none of its duty cycles runs between the two closes.
    fake = make_fake(leadership_term_id=3)
    client_driver = MediaDriver.launch(driver_context(aeron_dir=str(shm_dir / "client"),
                                                      threading_mode=ThreadingMode.INVOKER))
    invoker = InvokerThread(client_driver)
    try:
        ctx = client_context(driver, fake)
        ctx.aeron_dir = client_driver.aeron_dir
        cluster = AeronCluster.connect(ctx)
        assert cluster.send_keep_alive() is True
        fake.wait_for("SessionKeepAlive")           # the ingress is up and flowing
        invoker.stop()
        cluster.close()
        client_driver.close()
        [close] = fake.wait_for("SessionCloseRequest")
        assert close.fields == {"leadership_term_id": 3, "cluster_session_id": 1}
    finally:
        invoker.stop()
        client_driver.close()


def test_the_cluster_closing_the_session_closes_the_client_with_the_reason(driver, make_fake):
    fake = make_fake()
    listener = RecordingListener()
    cluster = AeronCluster.connect(client_context(driver, fake, listener))
    fake.call(lambda: fake.members[0].session_event(1, 0, codecs.EventCode.CLOSED, "TIMEOUT"))
    poll_until(cluster, lambda: cluster.is_closed, what="closed")
    assert listener.session_events == [(0, 1, 0, 0, codecs.EventCode.CLOSED, "TIMEOUT")]
    error = cluster.close_error
    assert isinstance(error, ClusterSessionClosedError) and error.reason == "TIMEOUT"
    assert cluster.offer(b"x") == CLOSED
    assert fake.of("SessionCloseRequest") == []        # the cluster ended it: nothing to ask


def test_another_sessions_close_event_is_ignored(driver, make_fake):
    fake = make_fake()
    listener = RecordingListener()
    with AeronCluster.connect(client_context(driver, fake, listener)) as cluster:
        fake.call(lambda: fake.members[0].session_event(2, 0, codecs.EventCode.CLOSED, "TIMEOUT"))
        fake.call(lambda: fake.members[0].message(1, b"after"))
        poll_until(cluster, lambda: listener.messages, what="message")
        assert listener.session_events == [] and cluster.state is State.CONNECTED


# -- leader changes ----------------------------------------------------------------------------------------------

def test_a_new_leader_event_moves_the_ingress_and_the_term(driver, make_fake):
    fake = make_fake(member_count=2, leadership_term_id=1)
    listener = RecordingListener()
    with AeronCluster.connect(client_context(driver, fake, listener)) as cluster:
        assert cluster.leader_member_id == 0
        response_channel = fake.of("SessionConnectRequest")[0].fields["response_channel"]
        new_leader = fake.members[1]
        fake.leader_id = 1

        def announce() -> None:
            new_leader.attach_egress(response_channel)
            new_leader.new_leader_event(1, 2, fake.ingress_endpoints())
        fake.call(announce)
        poll_until(cluster, lambda: listener.new_leaders, what="new leader")
        assert listener.new_leaders == [(1, 2, 1, fake.ingress_endpoints())]
        assert cluster.leader_member_id == 1 and cluster.leadership_term_id == 2
        assert cluster.state is State.AWAIT_NEW_LEADER_CONNECTION
        # nothing signals the new ingress's connection: the client's wake-up parks stay within 1 ms meanwhile
        aeron = cluster.context.aeron
        assert aeron.quiet_park_ns(QUIET_NS) == DRIVER_BACKOFF_MAX_PARK_NS
        # offers say NOT_CONNECTED (never raise) until the new leader's ingress is up, then go to it
        results = []
        wait_for(lambda: results.append(cluster.offer(b"to the new leader")) or results[-1] > 0,
                 invoke=lambda: cluster.poll_egress() or time.sleep(0.001), what="offer to the new leader")
        assert set(results[:-1]) <= {NOT_CONNECTED}
        assert cluster.state is State.CONNECTED
        assert aeron.quiet_park_ns(QUIET_NS) > DRIVER_BACKOFF_MAX_PARK_NS        # connected: the hold released
        [message] = fake.wait_for("SessionMessageHeader", member_id=1)
        assert message.fields["leadership_term_id"] == 2 and message.payload == b"to the new leader"
        assert cluster.send_keep_alive()
        assert fake.wait_for("SessionKeepAlive", member_id=1)[0].fields["leadership_term_id"] == 2


def test_a_lost_leader_is_waited_for_until_a_new_one_announces_itself(driver, make_fake):
    fake = make_fake(member_count=2, leadership_term_id=1)
    listener = RecordingListener()
    ctx = client_context(driver, fake, listener, new_leader_timeout_ns=20_000 * MS)
    with AeronCluster.connect(ctx) as cluster:
        response_channel = fake.of("SessionConnectRequest")[0].fields["response_channel"]
        fake.call(fake.members[0].close_ingress)
        fake.call(fake.members[0].detach_egress)
        # the leader is gone: offers find the ingress not connected and the client waits for a new leader
        wait_for(lambda: cluster.offer(b"x") == NOT_CONNECTED and cluster.state is State.AWAIT_NEW_LEADER,
                 invoke=lambda: cluster.poll_egress() or time.sleep(0.001), what="leader lost")
        assert cluster.offer(b"x") == NOT_CONNECTED
        assert cluster.send_keep_alive() is False
        fake.leader_id = 1

        def announce() -> None:
            fake.members[1].attach_egress(response_channel)
            fake.members[1].new_leader_event(1, 2, fake.ingress_endpoints())
        fake.call(announce)
        wait_for(lambda: cluster.offer(b"back") > 0, invoke=lambda: cluster.poll_egress() or time.sleep(0.001),
                 what="offer to the new leader")
        assert fake.wait_for("SessionMessageHeader", member_id=1)[0].payload == b"back"
        assert cluster.state is State.CONNECTED


def test_no_new_leader_within_the_new_leader_timeout_closes_the_client(driver, make_fake):
    fake = make_fake()
    ctx = client_context(driver, fake, RecordingListener(), new_leader_timeout_ns=300 * MS)
    cluster = AeronCluster.connect(ctx)
    fake.call(fake.members[0].detach_egress)
    # the egress image going away is a lost leader too, even without offers
    poll_until(cluster, lambda: cluster.state is not State.CONNECTED, what="leader lost")
    poll_until(cluster, lambda: cluster.is_closed, what="closed after the new leader timeout")
    assert isinstance(cluster.close_error, ClusterTimeoutError)
    assert "new leader timeout" in str(cluster.close_error)
    assert cluster.offer(b"x") == CLOSED


def test_a_new_leader_whose_ingress_never_connects_closes_the_client_after_the_message_timeout(driver, make_fake):
    fake = make_fake(member_count=2)
    ctx = client_context(driver, fake, RecordingListener(), message_timeout_ns=400 * MS)
    cluster = AeronCluster.connect(ctx)
    response_channel = fake.of("SessionConnectRequest")[0].fields["response_channel"]
    fake.call(fake.members[1].close_ingress)

    def announce() -> None:
        fake.members[1].attach_egress(response_channel)
        fake.members[1].new_leader_event(1, 9, fake.ingress_endpoints())
    fake.call(announce)
    wait_for(lambda: cluster.offer(b"x") and cluster.is_closed, invoke=lambda: cluster.poll_egress() or
             time.sleep(0.001), what="closed")
    assert isinstance(cluster.close_error, ClusterTimeoutError)
    assert "not connected within the message timeout" in str(cluster.close_error)


def test_a_new_leader_event_for_another_session_is_refused(driver, make_fake):
    fake = make_fake()
    with AeronCluster.connect(client_context(driver, fake, RecordingListener())) as cluster:
        with pytest.raises(ClusterError, match="invalid clusterSessionId=5 expected=1"):
            cluster.on_new_leader(5, 1, 1, "1=h:1")


# -- what the egress may hold ----------------------------------------------------------------------------------

def test_a_malformed_egress_message_is_counted_and_dropped(driver, make_fake):
    fake = make_fake()
    listener = RecordingListener()
    with AeronCluster.connect(client_context(driver, fake, listener)) as cluster:
        # a SessionEvent whose detail length runs past the message's end
        bad = bytearray(fake_session_event_bytes())
        bad[-4 - 5:-5] = (1000).to_bytes(4, "little")
        fake.call(lambda: fake.members[0].send(bytes(bad)))
        fake.call(lambda: fake.members[0].message(1, b"after"))
        poll_until(cluster, lambda: listener.messages, what="message after the bad one")
        assert cluster._egress.malformed_count == 1
        assert listener.session_events == []


def fake_session_event_bytes() -> bytes:
    from tests.cluster.client.fake_cluster import encode

    def fill(e):
        e.cluster_session_id = 1
        e.correlation_id = 0
        e.leadership_term_id = 0
        e.leader_member_id = 0
        e.code = codecs.EventCode.ERROR
        e.version = 0x300
        e.leader_heartbeat_timeout_ns = 1
        e.put_detail("hello")
    return encode(codecs.SessionEventEncoder, fill)


def test_a_message_of_another_schema_raises_without_an_extension_and_reaches_one_when_given(driver, make_fake):
    fake = make_fake()
    listener = RecordingListener()
    foreign = (24).to_bytes(2, "little") + (1).to_bytes(2, "little") + (999).to_bytes(2, "little") + \
        (3).to_bytes(2, "little") + b"extension body"
    with AeronCluster.connect(client_context(driver, fake, listener)) as cluster:
        fake.call(lambda: fake.members[0].send(foreign))
        with pytest.raises(ClusterError, match="expected schemaId=111, actual=999"):
            poll_until(cluster, lambda: False, timeout_s=5)
        got = []

        class Extension:
            def on_extension_message(self, block_length, template_id, schema_id, version, buffer, offset, length):
                got.append((block_length, template_id, schema_id, version, buffer.get_bytes(offset, length)))

        cluster.egress_listener_extension = Extension()
        fake.call(lambda: fake.members[0].send(foreign))
        poll_until(cluster, lambda: got, what="extension message")
        assert got == [(24, 1, 999, 3, b"extension body")]


def test_the_null_credentials_supplier_sends_nothing():
    supplier = NullCredentialsSupplier()
    assert supplier.encoded_credentials() == b"" and supplier.on_challenge(b"x") == b""


# -- the public pieces on their own ------------------------------------------------------------------------------

def test_controlled_poll_egress_leaves_an_aborted_message_in_the_log(driver, make_fake):
    from aeron.client import ControlledPollAction
    from aeron.cluster.client import ControlledEgressListener

    class Picky(ControlledEgressListener):
        def __init__(self) -> None:
            self.seen: list[bytes] = []
            self.aborts = 0

        def on_message(self, cluster_session_id, timestamp, buffer, offset, length, header) -> int:
            payload = buffer.get_bytes(offset, length)
            if payload == b"later" and self.aborts < 3:
                self.aborts += 1
                return ControlledPollAction.ABORT
            self.seen.append(payload)
            return ControlledPollAction.CONTINUE

    fake = make_fake()
    picky = Picky()
    with AeronCluster.connect(client_context(driver, fake, controlled_egress_listener=picky)) as cluster:
        assert cluster.offer(b"later") > 0 and cluster.offer(b"after") > 0
        wait_for(lambda: len(picky.seen) == 2, invoke=lambda: cluster.controlled_poll_egress() or time.sleep(0.001),
                 what="both messages")
        assert picky.seen == [b"later", b"after"] and picky.aborts == 3


def test_poll_egress_without_an_egress_listener_is_a_configuration_error(driver, make_fake):
    fake = make_fake()
    with AeronCluster.connect(client_context(driver, fake)) as cluster:
        assert cluster.offer(b"echo me") > 0
        with pytest.raises(ValueError, match="egress_listener must be specified"):
            poll_until(cluster, lambda: False, timeout_s=5)


def test_the_ingress_publication_used_directly_with_the_decorator_and_an_egress_adapter(driver, make_fake):
    from aeron.cluster.client import EgressAdapter, IngressSessionDecorator

    fake = make_fake(leadership_term_id=8)
    with AeronCluster.connect(client_context(driver, fake, RecordingListener())) as cluster:
        decorator = IngressSessionDecorator(cluster.cluster_session_id, cluster.leadership_term_id)
        assert decorator.cluster_session_id == 1 and decorator.leadership_term_id == 8
        result = decorator.offer(cluster.ingress_publication, b"xxdirectyy", 2, 6)
        cluster.track_ingress_publication_result(result)
        assert result > 0
        [request] = fake.wait_for("SessionMessageHeader")
        assert request.payload == b"direct" and request.fields["leadership_term_id"] == 8
        assert request.fields["timestamp"] == -1           # the decorator's null, as Aeron's
        own = RecordingListener()
        adapter = EgressAdapter(own, cluster.cluster_session_id, cluster.egress_subscription)
        wait_for(lambda: own.messages, invoke=lambda: adapter.poll() or time.sleep(0.001), what="echo via adapter")
        assert own.messages == [(1, 123, b"direct")]


def test_the_egress_poller_reports_one_message_at_a_time(driver, make_fake):
    from aeron.cluster.client import EgressPoller

    fake = make_fake()
    with AeronCluster.connect(client_context(driver, fake, RecordingListener())) as cluster:
        poller = EgressPoller(cluster.egress_subscription)
        fake.call(lambda: fake.members[0].session_event(1, 42, codecs.EventCode.ERROR, "oops", leadership_term_id=3))
        fake.call(lambda: fake.members[0].new_leader_event(1, 4, "0=h:1"))
        got = []

        def poll_one() -> None:
            if poller.poll() and poller.is_poll_complete:
                got.append((poller.template_id, poller.correlation_id, poller.event_code, poller.detail,
                            poller.leadership_term_id))
            else:
                time.sleep(0.001)
        wait_for(lambda: len(got) >= 2, invoke=poll_one, what="two events")
        assert got == [(codecs.SessionEventDecoder.TEMPLATE_ID, 42, codecs.EventCode.ERROR, "oops", 3),
                       (codecs.NewLeaderEventDecoder.TEMPLATE_ID, -1, None, "0=h:1", 4)]
        assert poller.egress_image is not None and not poller.is_challenged
