# SPDX-License-Identifier: Apache-2.0
"""The clustered service container against a consensus module played by the test (FakeConsensusModule): start-up
acks, joining the log, the service's callbacks in log order, egress from a leader and mocked egress on a follower,
timers, service messages and session closes to the consensus module, requested acks, termination, and the mark
file and counters it keeps."""
from __future__ import annotations

import threading

import pytest

from aeron._core.buffer_claim import BufferClaim
from aeron._core.codecs import cluster as codecs
from aeron._core.codecs.cluster import CloseReason, ClusterTimeUnit
from aeron.client import FragmentAssembler
from aeron.cluster.service.client_session import ClientSession
from aeron.cluster.service.cluster import Role
from aeron.cluster.service.cluster_mark_file import ClusterMarkFile
from aeron.cluster.service.clustered_service import ClusteredService
from aeron.cluster.service.clustered_service_container import ClusteredServiceContainer, Context
from aeron.common.errors import ClusterError
from tests.cluster.service.fake_consensus_module import FakeConsensusModule
from tests.support import wait_for


class RecordingService(ClusteredService):
    """Records its callbacks; echoes session messages, and on some payloads uses the cluster."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self.cluster = None
        self.offer_results: list[int] = []
        self.errors: list[BaseException] = []
        self.terminated = threading.Event()
        self.background_work = 0

    def on_start(self, cluster, snapshot_image):
        self.cluster = cluster
        self.calls.append(("start", snapshot_image))
        try:
            cluster.schedule_timer(1, 2)
        except ClusterError as ex:
            self.errors.append(ex)

    def on_session_open(self, session, timestamp):
        self.calls.append(("open", session.id, timestamp, session.response_channel, session.response_stream_id))

    def on_session_close(self, session, timestamp, close_reason):
        self.calls.append(("close", session.id, timestamp, close_reason))

    def on_session_message(self, session, timestamp, buffer, offset, length, header):
        payload = buffer.get_bytes(offset, length)
        self.calls.append(("message", None if session is None else session.id, timestamp, payload,
                           self.cluster.log_position, self.cluster.time))
        if payload == b"timer":
            assert self.cluster.schedule_timer(42, timestamp + 10)
        elif payload == b"cancel":
            assert self.cluster.cancel_timer(42)
        elif payload == b"service":
            self.offer_results.append(self.cluster.offer(b"from-service"))
        elif payload == b"close" and session is not None:
            session.close()
            self.calls.append(("closing", session.is_closing))
        elif payload == b"claim" and session is not None:
            claim = BufferClaim()
            result = session.try_claim(5, claim)
            claim.put_bytes(b"claim", 32)
            claim.commit()
            self.offer_results.append(result)
        elif session is not None:
            self.offer_results.append(session.offer(b"echo:" + payload))

    def on_timer_event(self, correlation_id, timestamp):
        self.calls.append(("timer", correlation_id, timestamp))

    def on_take_snapshot(self, snapshot_publication):
        self.calls.append(("snapshot",))

    def on_role_change(self, new_role):
        self.calls.append(("role", new_role))
        try:
            self.cluster.offer(b"not now")
        except ClusterError as ex:
            self.errors.append(ex)

    def on_terminate(self, cluster):
        self.calls.append(("terminate",))
        self.terminated.set()

    def on_new_leadership_term_event(self, leadership_term_id, log_position, timestamp, term_base_log_position,
                                     leader_member_id, log_session_id, time_unit, app_version):
        self.calls.append(("term", leadership_term_id, log_position, timestamp, time_unit, app_version))

    def do_background_work(self, now_ns):
        self.background_work += 1
        return 0


@pytest.fixture
def cm(client):
    fake = FakeConsensusModule(client)
    yield fake
    fake.close()


@pytest.fixture
def container_of(driver, tmp_path):
    """Launch a container for a service; closed after the test."""
    launched: list[ClusteredServiceContainer] = []

    def launch(service, **settings) -> ClusteredServiceContainer:
        settings.setdefault("idle_strategy_name", "sleep-ms")
        ctx = Context(environ={}, aeron_dir=driver.aeron_dir, cluster_dir=str(tmp_path / "cluster"),
                      clustered_service=service, **settings)
        container = ClusteredServiceContainer.launch(ctx)
        launched.append(container)
        return container

    yield launch
    for container in launched:
        container.close()


def error_texts(container) -> list[str]:
    """The errors in the container's mark file, read once the container has stopped."""
    container.close()
    path = container.context.mark_file.path
    mark = ClusterMarkFile.open(path.parent, path.name)
    try:
        return [record.text for record in mark.error_records()]
    finally:
        mark.close()


def egress(client, stream_id: int = 102):
    """The test's egress subscription (the clients' response channel is aeron:ipc) and what arrived on it."""
    subscription = client.add_subscription("aeron:ipc", stream_id)
    messages: list[tuple] = []

    def on_message(buffer, offset, length, header):
        decoder = codecs.SessionMessageHeaderDecoder().wrap_header(buffer, offset, offset + length)
        messages.append((decoder.cluster_session_id, decoder.leadership_term_id, decoder.timestamp,
                         buffer.get_bytes(offset + 32, length - 32)))
        decoder.release()

    assembler = FragmentAssembler(on_message)
    return subscription, messages, lambda: subscription.poll(assembler, 10)


def test_a_leader_service_starts_joins_and_follows_the_log(client, cm, container_of, tmp_path):
    service = RecordingService()
    container = container_of(service)
    start_ack = cm.await_received("ack")[0]
    assert start_ack == ("ack", 0, 0, 0, container.context.aeron.client_id, 0)
    assert service.calls == [("start", None)]
    assert isinstance(service.errors[0], ClusterError) and "onStart" in str(service.errors[0])

    cm.join_log(Role.LEADER)
    assert cm.await_received("ack", 2)[1] == ("ack", 0, 0, 1, -1, 0)
    wait_for(lambda: ("role", Role.LEADER) in service.calls, what="role change")
    assert "onRoleChange" in str(service.errors[1])
    assert service.cluster.role == Role.LEADER and service.cluster.member_id == 0

    subscription, messages, poll_egress = egress(client)
    term_end = cm.new_leadership_term(leadership_term_id=0, timestamp=1000)
    open_end = cm.session_open(5, timestamp=1001)
    wait_for(lambda: service.calls[-1][0] == "open", what="session open")
    wait_for(lambda: subscription.is_connected, what="egress connected")
    hello_end = cm.session_message(5, b"hello", timestamp=1002)
    wait_for(lambda: poll_egress() >= 0 and messages, what="echo")
    assert messages == [(5, 0, 1002, b"echo:hello")]
    assert service.offer_results[-1] > 0
    assert service.calls[2:] == [
        ("term", 0, term_end, 1000, ClusterTimeUnit.MILLIS, 1),
        ("open", 5, 1001, "aeron:ipc", 102),
        ("message", 5, 1002, b"hello", hello_end, 1002),
    ]
    assert service.cluster.time_unit == ClusterTimeUnit.MILLIS
    assert open_end < hello_end

    cm.session_message(5, b"claim", timestamp=1003)
    wait_for(lambda: poll_egress() >= 0 and len(messages) == 2, what="claimed egress")
    assert messages[1] == (5, 0, 1003, b"claim")

    cm.session_message(5, b"timer")
    assert cm.await_received("schedule")[0] == ("schedule", 42, 1012)
    cm.session_message(5, b"cancel")
    assert cm.await_received("cancel")[0] == ("cancel", 42)
    cm.timer_event(42, timestamp=1013)
    wait_for(lambda: service.calls[-1] == ("timer", 42, 1013), what="timer event")

    cm.session_message(5, b"service")
    service_message = cm.await_received("message")[0]
    assert (service_message[1], service_message[2], service_message[4]) == (0, 0, b"from-service")
    cm.session_message(0, b"loop back")
    wait_for(lambda: service.calls[-1][:4] == ("message", None, 1002, b"loop back"), what="service message")

    cm.session_message(5, b"close")
    assert cm.await_received("close")[0] == ("close", 5)
    wait_for(lambda: service.calls[-1] == ("closing", True), what="closing")
    assert [s.id for s in service.cluster.client_sessions] == [5]
    close_end = cm.session_close(5, CloseReason.SERVICE_ACTION, timestamp=1020)
    wait_for(lambda: service.calls[-1] == ("close", 5, 1020, CloseReason.SERVICE_ACTION), what="session close")
    assert service.cluster.get_client_session(5) is None and not service.cluster.client_sessions

    cm.request_ack(close_end)
    assert cm.await_received("ack", 3)[2] == ("ack", close_end, 1020, 2, -1, 0)

    cm.terminate_at(close_end)
    assert service.terminated.wait(10)
    assert cm.await_received("ack", 4)[3] == ("ack", close_end, 1020, 3, -1, 0)
    wait_for(lambda: not container.agent_runner.is_running, what="the container stopped")
    assert service.calls.count(("terminate",)) == 1
    assert service.background_work > 0
    subscription.close()


def test_a_follower_service_mocks_its_egress(client, cm, container_of):
    service = RecordingService()
    container_of(service)
    cm.start_service(Role.FOLLOWER)
    cm.new_leadership_term()
    cm.session_open(3)
    cm.session_message(3, b"hello")
    cm.session_message(3, b"claim")
    wait_for(lambda: len(service.offer_results) == 2, what="two egress attempts")
    assert service.offer_results == [ClientSession.MOCKED_OFFER, ClientSession.MOCKED_OFFER]
    session = service.cluster.get_client_session(3)
    assert session.response_publication is None
    assert service.cluster.role == Role.FOLLOWER
    assert ("role", Role.FOLLOWER) not in service.calls      # a follower it was already


def test_the_service_reads_no_further_than_the_commit_position(client, cm, container_of):
    service = RecordingService()
    container_of(service)
    cm.start_service(Role.FOLLOWER)
    cm.new_leadership_term()
    first = cm.session_message(0, b"one")
    cm.session_message(0, b"two", commit=False)
    wait_for(lambda: service.calls and service.calls[-1][3:5] == (b"one", first), what="the first message")
    assert not any(c[0] == "message" and c[3] == b"two" for c in service.calls)
    cm.commit_position.set_ordered(cm.log.position)
    wait_for(lambda: service.calls[-1][3] == b"two", what="the second message once committed")


def test_a_log_reaching_its_bound_is_closed_and_the_role_reverts_to_follower(client, cm, container_of):
    service = RecordingService()
    container_of(service)
    cm.start_service(Role.LEADER, max_log_position=96)
    wait_for(lambda: ("role", Role.LEADER) in service.calls, what="leader")
    cm.new_leadership_term()
    wait_for(lambda: service.calls[-1] == ("role", Role.FOLLOWER), what="back to follower at the bound")
    assert service.cluster.log_position == 96


def test_errors_go_to_the_mark_file_and_the_error_counter(client, cm, container_of, tmp_path):
    service = RecordingService()
    container = container_of(service)
    cm.start_service(Role.FOLLOWER)
    cm.new_leadership_term()
    cm.session_close(99)
    ctx = container.context
    wait_for(lambda: ctx.error_counter.get() == 1, what="the error counted")
    records = ctx.mark_file.error_records()
    assert len(records) == 1 and "unknown session close: clusterSessionId=99" in records[0].text


def test_the_mark_file_describes_the_container(client, cm, container_of, tmp_path):
    service = RecordingService()
    container = container_of(service, service_id=1, service_name="svc-one", cluster_id=0)
    cm.await_received("ack")
    path = tmp_path / "cluster" / "cluster-mark-service-1.dat"
    mark = ClusterMarkFile.open(path.parent, path.name)
    try:
        decoder = mark.decoder()
        assert (decoder.component_type, decoder.service_id, decoder.member_id, decoder.ingress_stream_id,
                decoder.service_stream_id, decoder.consensus_module_stream_id, decoder.archive_stream_id,
                decoder.cluster_id) == (2, 1, -1, -1, 104, 105, 10, 0)
        assert decoder.service_name == "svc-one"
        assert decoder.aeron_directory == container.context.aeron_dir
        assert decoder.control_channel == "aeron:ipc?term-length=128k"
        decoder.release()
        cm.join_log(Role.FOLLOWER, member_id=4)
        cm.await_received("ack", 2)
        wait_for(lambda: mark.member_id() == 4, what="the member id in the mark file")
        assert mark.activity_timestamp_volatile() > 0
        container.close()
        assert mark.activity_timestamp_volatile() == -1
    finally:
        mark.close()


def test_a_service_failing_to_start_acks_without_a_client_id_and_terminates(client, cm, container_of):
    class Failing(RecordingService):
        def on_start(self, cluster, snapshot_image):
            raise RuntimeError("no start")

    service = Failing()
    container = container_of(service)
    assert cm.await_received("ack")[0] == ("ack", 0, 0, 0, -1, 0)
    wait_for(lambda: not container.agent_runner.is_running, what="the container stopped")
    assert not service.terminated.is_set()          # on_terminate only after a successful start
    text = error_texts(container)[0]
    assert "failed to start service=0 leadershipTermId=-1 logPosition=0" in text and "no start" in text


def test_close_while_waiting_for_the_consensus_module_ends_promptly(container_of):
    service = RecordingService()
    container = container_of(service)           # no consensus module: it waits for the commit position counter
    container.close()
    assert not container.agent_runner.is_running and service.calls == []
    assert error_texts(container) == []                     # a close is no error


def test_losing_the_commit_position_counter_terminates_the_container(client, cm, container_of):
    service = RecordingService()
    hooked = threading.Event()
    container = container_of(service, termination_hook=hooked.set)
    cm.start_service(Role.FOLLOWER)
    cm.commit_position.close()                  # the consensus module went away
    assert hooked.wait(10)
    wait_for(lambda: not container.agent_runner.is_running, what="the container stopped")
    assert service.terminated.is_set()          # the service had started: it hears of the end
    assert any("commit-pos counter unexpectedly closed" in text for text in error_texts(container))


def test_an_invoked_container_runs_on_the_callers_thread(client, cm, driver, tmp_path):
    service = RecordingService()
    ctx = Context(environ={}, aeron_dir=driver.aeron_dir, cluster_dir=str(tmp_path / "cluster"),
                  clustered_service=service, use_agent_invoker=True)
    with ClusteredServiceContainer.launch(ctx) as container:     # starts it: the service is recovered and acked
        invoker = container.agent_invoker
        assert container.agent_runner is None and invoker.is_running
        assert not any(t.name == ctx.service_name for t in threading.enumerate())    # no thread of its own
        assert service.calls == [("start", None)]
        cm.await_received("ack")
        cm.join_log(Role.FOLLOWER)
        wait_for(lambda: cm.poll() >= 0 and len([m for m in cm.received if m[0] == "ack"]) == 2,
                 invoke=invoker.invoke, what="the join acked")
        cm.new_leadership_term()
        cm.session_open(2)
        wait_for(lambda: service.calls[-1][0] == "open", invoke=invoker.invoke, what="the session, when invoked")
    assert invoker.is_closed and ("terminate",) in service.calls


def test_a_cycle_with_nothing_to_do_reads_the_control_stream_between_ticks(client, cm, driver, tmp_path):
    # a parked service woken by a JoinLog within a millisecond of its last tick must read it in that cycle: parking
    # again with it unread waited up to the wake-up park's long bound (100 ms) in every election
    clock = [0]

    def nano_clock() -> int:
        clock[0] += 100_000                 # 0.1 ms a reading: ten cycles to a tick
        return clock[0]
    service = RecordingService()
    ctx = Context(environ={}, aeron_dir=driver.aeron_dir, cluster_dir=str(tmp_path / "cluster"),
                  clustered_service=service, use_agent_invoker=True, nano_clock=nano_clock)
    with ClusteredServiceContainer.launch(ctx) as container:
        invoker = container.agent_invoker
        cm.await_received("ack")
        clock[0] += 2_000_000
        invoker.invoke()                    # a tick: the control stream read, nothing in it
        cm.join_log(Role.FOLLOWER)          # in the stream (IPC) when join_log returns
        invoker.invoke()                    # 0.1 ms later: no tick, nothing else to do
        assert cm.await_received("ack", 2)[1][0] == "ack"       # joined and acked within that one cycle
