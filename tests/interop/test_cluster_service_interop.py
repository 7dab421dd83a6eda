# SPDX-License-Identifier: Apache-2.0
"""Our clustered service container with Java's consensus module: a one-member Java ClusteredMediaDriver whose one
service is ours (a ClusteredServiceContainer in this process, on the node's driver directory), driven by Java's
AeronCluster client and ClusterTool. Sessions open, echo, close; timers fire; service messages go round the log;
a snapshot is taken and a restarted node's service recovers from it; ClusterTool shutdown terminates the service.
Needs AERON_JAVA_CP (skips without it)."""
from __future__ import annotations

import os
import re
import struct
import subprocess
import sys
import threading

import pytest

from aeron.cluster.service.cluster import Role
from aeron.cluster.service.clustered_service import ClusteredService
from aeron.cluster.service.clustered_service_container import ClusteredServiceContainer, Context
from tests.interop.cluster_support import JVM_OPTIONS, MemberProcess, cluster_java, cluster_members, \
    ingress_endpoints, namespaces_work, run_client  # noqa: F401 - cluster_java is a fixture
from tests.procs import client_env
from tests.support import wait_for


class InteropService(ClusteredService):
    """Echoes, schedules timers, relays service messages, counts messages; its snapshot is the count."""

    def __init__(self) -> None:
        self.cluster = None
        self.count = 0
        self.loaded_count: int | None = None
        self.events: list[tuple] = []
        self.terminated = threading.Event()

    def on_start(self, cluster, snapshot_image):
        self.cluster = cluster
        if snapshot_image is not None:
            def on_fragment(buffer, offset, length, header):
                self.count = self.loaded_count = buffer.get_i64(offset)
            while self.loaded_count is None and not snapshot_image.is_end_of_stream:
                cluster.idle_strategy.idle(snapshot_image.poll(on_fragment, 1))
        self.events.append(("start", snapshot_image is not None))

    def send(self, session, text: str) -> None:
        data = text.encode()
        self.cluster.idle_strategy.reset()
        while session.offer(data) < 0:
            self.cluster.idle_strategy.idle()

    def on_session_open(self, session, timestamp):
        self.events.append(("open", session.id))

    def on_session_close(self, session, timestamp, close_reason):
        self.events.append(("close", session.id, close_reason.name))

    def on_session_message(self, session, timestamp, buffer, offset, length, header):
        text = buffer.get_bytes(offset, length).decode()
        if session is None:                               # a service message, back through the log
            for s in self.cluster.client_sessions:
                self.send(s, "relayed:" + text)
            return
        self.count += 1
        if text.startswith("timer:"):
            while not self.cluster.schedule_timer(7, self.cluster.time + int(text[6:])):
                self.cluster.idle_strategy.idle()
            self.send(session, "scheduled")
        elif text.startswith("svc:"):
            while self.cluster.offer(text[4:].encode()) < 0:
                self.cluster.idle_strategy.idle()
        elif text == "count":
            self.send(session, f"count:{self.count}")
        else:
            self.send(session, "echo:" + text)

    def on_timer_event(self, correlation_id, timestamp):
        self.events.append(("timer", correlation_id))
        for session in self.cluster.client_sessions:
            self.send(session, f"fired:{correlation_id}")

    def on_take_snapshot(self, snapshot_publication):
        self.events.append(("snapshot", self.count))
        data = struct.pack("<q", self.count)
        self.cluster.idle_strategy.reset()
        while snapshot_publication.offer(data) < 0:
            self.cluster.idle_strategy.idle()

    def on_role_change(self, new_role):
        self.events.append(("role", new_role))

    def on_terminate(self, cluster):
        self.events.append(("terminate",))
        self.terminated.set()


@pytest.fixture
def classpath(cluster_java):
    """The Java classpath with our compiled test programs."""
    return cluster_java[0]


@pytest.fixture
def node(classpath, shm_dir):
    java_node = java_member(classpath, shm_dir)
    yield java_node
    java_node.stop()


def java_member(classpath: str, base, member_id: int = 0, members: str | None = None,
                **overrides: str) -> MemberProcess:
    """Java's ClusteredMediaDriver as member ``member_id`` of ``members`` (a cluster of its own when None), its one
    service ours (started by the test)."""
    return MemberProcess(member_id, members or cluster_members(1), base, classpath, java=True, service=None,
                         **overrides)


def launch(node: MemberProcess, service: ClusteredService) -> ClusteredServiceContainer:
    return ClusteredServiceContainer.launch(Context(environ={}, aeron_dir=node.aeron_dir, cluster_dir=node.cluster_dir,
                                                    clustered_service=service))


def java_client(classpath: str, node: MemberProcess, *commands: str) -> list[str]:
    """ClusterEchoClient's output lines, on ``node``'s driver, running ``commands``."""
    return run_client(classpath, node.aeron_dir, node.ingress_endpoints, *commands)


def egress(lines: list[str]) -> list[str]:
    return [line.split(" ", 2)[2] for line in lines if line.startswith("EGRESS ")]


def test_sessions_messages_timers_and_service_messages_on_javas_consensus_module(node, classpath):
    node.start()
    service = InteropService()
    with launch(node, service):
        lines = java_client(classpath, node, "send:hello", "await:echo:hello", "send:timer:50",
                           "await:fired:7", "send:svc:ping", "await:relayed:ping")
        session_id = int(lines[0].split()[1])
        assert lines[0] == f"SESSION {session_id} 0"
        assert egress(lines) == ["echo:hello", "scheduled", "fired:7", "relayed:ping"]
        assert lines[-1] == "CLOSED"
        wait_for(lambda: service.events[-1][0] == "close", what="the session closed")
        assert service.events == [("start", False), ("role", Role.LEADER), ("open", session_id), ("timer", 7),
                                  ("close", session_id, "CLIENT_ACTION")]
        assert service.cluster.role == Role.LEADER and service.cluster.member_id == 0
        # Java's ClusterTool reads our container's mark file beside its consensus module's
        describe = node.tool("describe").stdout
        assert "componentType=CONTAINER" in describe and f"pid={os.getpid()}" in describe, describe
        assert "serviceId=0|headerLength=8192" in describe and "serviceName='clustered-service-0-0'" in describe


def test_clustertool_shutdown_terminates_the_service(node, classpath):
    node.start()
    service = InteropService()
    with launch(node, service) as container:
        java_client(classpath, node, "send:a", "await:echo:a")
        result = node.tool("shutdown")
        assert "SHUTDOWN applied successfully" in result.stdout, result.stdout + result.stderr
        assert service.terminated.wait(30)
        wait_for(lambda: not container.agent_runner.is_running, 30, what="the container stopped")
        assert node.await_exit(60) == 0
        # a shutdown takes a snapshot first: the service wrote its count
        assert ("snapshot", 1) in service.events


def test_a_snapshot_restores_the_service_after_a_restart(node, classpath):
    node.start()
    first = InteropService()
    with launch(node, first):
        java_client(classpath, node, "send:a", "await:echo:a", "send:b", "await:echo:b")
        result = node.tool("snapshot")
        assert "SNAPSHOT applied successfully" in result.stdout, result.stdout + result.stderr
        assert ("snapshot", 2) in first.events
        result = node.tool("recording-log")
        assert "type=SNAPSHOT" in result.stdout and "serviceId=0" in result.stdout, result.stdout
        java_client(classpath, node, "send:c", "await:echo:c")
    node.stop()

    node.start()
    second = InteropService()
    with launch(node, second):
        lines = java_client(classpath, node, "send:count", "await:count:")
        # the snapshot's count (2), then the log after it replayed ("c"), then this message
        assert egress(lines) == ["count:4"]
        assert second.loaded_count == 2
        assert second.events[0] == ("start", True)


# The official run (Java's BasicAuctionClusteredServiceNode and BasicAuctionClusterClient, Aeron 1.53.0-SNAPSHOT at
# 63c11a6914, one node, three bids of customer 1): the service's lines and the client's. Ids, the client's port and
# the prices (random) differ from run to run.
GOLDEN_SERVICE_OUTPUT = """\
onSessionOpen(ClientSession{id=1, responseStreamId=102, responseChannel='aeron:udp?rejoin=false|endpoint=localhost:55256', encodedPrincipal=[], responsePublication=Publication{originalRegistrationId=80, registrationId=81, isClosed=false, isConnected=true, initialTermId=-1461104592, termBufferLength=65536, sessionId=259338102, streamId=102, channel='aeron:udp?rejoin=false|endpoint=localhost:55256', position=96}, isClosing=false})
attemptBid(this=Auction{bestPrice=0, currentWinningCustomerId=-1}, price=109,customerId=1)
attemptBid(this=Auction{bestPrice=109, currentWinningCustomerId=1}, price=114,customerId=1)
attemptBid(this=Auction{bestPrice=114, currentWinningCustomerId=1}, price=116,customerId=1)
onSessionClose(ClientSession{id=1, responseStreamId=102, responseChannel='aeron:udp?rejoin=false|endpoint=localhost:55256', encodedPrincipal=[], responsePublication=null, isClosing=false})
"""  # noqa: E501
GOLDEN_CLIENT_OUTPUT = """\
Sent(0, 1, 109) bidsRemaining=2
SessionMessage(1, 0,1, 109, true)
Sent(1, 1, 114) bidsRemaining=1
SessionMessage(1, 1,1, 114, true)
Sent(2, 1, 116) bidsRemaining=0
SessionMessage(1, 2,1, 116, true)
"""

# the tutorial's node 0: archive control, ingress, consensus, log, catch-up on 9001..9005 (only in a namespace)
TUTORIAL_NODE = {
    "aeron.archive.control.channel": "aeron:udp?endpoint=127.0.0.1:9001",
    "aeron.cluster.members": "0,127.0.0.1:9002,127.0.0.1:9003,127.0.0.1:9004,127.0.0.1:9005,127.0.0.1:9001",
}
NAMESPACE_SCRIPT = """\
ip link set lo up || exit 90
{java} -cp {cp} io.aeron.cluster.ClusteredMediaDriver {properties} > {base}/node.out 2>&1 &
NODE=$!
while [ ! -f {base}/go ]; do kill -0 $NODE || exit 91; sleep 0.05; done
{java} -Daeron.dir={base}/client -Daeron.cluster.tutorial.customerId=1 -Daeron.cluster.tutorial.numOfBids=3 \
    -Daeron.cluster.tutorial.bidIntervalMs=200 -Daeron.cluster.tutorial.hostnames=127.0.0.1 -cp {cp} \
    io.aeron.samples.cluster.tutorial.BasicAuctionClusterClient > {base}/client.out 2>&1
echo $? > {base}/client.rc
while [ ! -f {base}/stop ]; do sleep 0.05; done
kill -TERM $NODE
wait $NODE
"""


def normalised(text: str, booleans: bool = False) -> list[str]:
    """Lines with what differs from run to run (ids, ports, positions, prices; with ``booleans`` whether a random bid
    won) as ``#``."""
    return re.sub(r"-?\d+|\b(true|false)\b" if booleans else r"-?\d+", "#", text).splitlines()


def test_our_basic_auction_service_on_javas_node_with_javas_tutorial_client(classpath, shm_dir):
    if not namespaces_work():
        pytest.skip("no network namespace (unshare -n) for the tutorial's fixed ports")
    node = java_member(classpath, shm_dir, **TUTORIAL_NODE)
    properties = shm_dir / "node.properties"
    properties.write_text("".join(f"{k}={v}\n" for k, v in node.properties().items()))
    java = " ".join(["java", *JVM_OPTIONS])
    script = NAMESPACE_SCRIPT.format(java=java, cp=classpath, properties=properties, base=shm_dir)
    namespace = subprocess.Popen(["unshare", "-n", "sh", "-c", script], env=client_env())
    container = None
    try:
        wait_for(lambda: os.path.exists(os.path.join(node.cluster_dir, "cluster-mark.dat")) and
                 os.path.exists(os.path.join(node.aeron_dir, "cnc.dat")), 60, what="the Java node")
        container = subprocess.Popen(
            [sys.executable, "-m", "aeron.cluster.service", f"aeron.dir={node.aeron_dir}",
             f"aeron.cluster.dir={node.cluster_dir}",
             "aeron.cluster.service.class.name=aeron.samples.cluster.basic_auction_clustered_service:"
             "BasicAuctionClusteredService"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=client_env())
        wait_for(lambda: node.tool("is-leader").returncode == 0, 60, what="the node leading", interval_s=0.2)
        (shm_dir / "go").touch()
        wait_for(lambda: (shm_dir / "client.rc").exists(), 60, what="the tutorial's client", interval_s=0.1)
        client_output = (shm_dir / "client.out").read_text()
        assert (shm_dir / "client.rc").read_text().strip() == "0", client_output
        # the client bids on a timer, so on a busy machine an answer may come after its next bid: the bids and the
        # answers are compared each in their order
        for kind in ("Sent(", "SessionMessage("):
            assert [line for line in normalised(client_output, booleans=True) if line.startswith(kind)] == \
                [line for line in normalised(GOLDEN_CLIENT_OUTPUT, booleans=True) if line.startswith(kind)]
        result = node.tool("snapshot")
        assert "SNAPSHOT applied successfully" in result.stdout, result.stdout + result.stderr
        (shm_dir / "stop").touch()
        namespace.wait(60)                  # the node's ShutdownSignalBarrier ends it on SIGTERM
        out, err = container.communicate(timeout=60)
        assert container.returncode == 0, err
        lines = out.splitlines()
        assert normalised("\n".join(lines[:5])) == normalised(GOLDEN_SERVICE_OUTPUT)
        assert lines[5:] == ["Shutdown ClusteredServiceContainer..."]
        # the bids the client sent are the ones our service saw, and each won when it beat the best before it
        sent = [int(p) for p in re.findall(r"Sent\(\d+, 1, (\d+)\)", client_output)]
        assert [int(p) for p in re.findall(r"price=(\d+),customerId=1", out)] == sent
        won = [w == "true" for w in re.findall(r"SessionMessage\(1, \d+,1, \d+, (true|false)\)", client_output)]
        assert won == [price > max([0] + sent[:i]) for i, price in enumerate(sent)]
    finally:
        (shm_dir / "stop").touch()
        (shm_dir / "go").touch()
        if namespace.poll() is None:
            namespace.terminate()
            namespace.wait(30)
        if container is not None and container.poll() is None:
            container.terminate()
            container.communicate(timeout=30)


def leading(services: list[InteropService], among) -> tuple[int] | None:
    """``(index,)`` of the service among ``among`` whose member leads, or None."""
    for i in among:
        if services[i].cluster is not None and services[i].cluster.role == Role.LEADER:
            return (i,)
    return None


def test_three_members_with_our_services_follow_one_log_and_fail_over(classpath, shm_dir):
    members = cluster_members(3)
    nodes = [java_member(classpath, shm_dir, i, members, **{"aeron.cluster.session.timeout": "5s"})
             for i in range(3)]
    services = [InteropService() for _ in nodes]
    containers: list[ClusteredServiceContainer | None] = []
    try:
        for node in nodes:
            node.start()
        containers = [launch(node, service) for node, service in zip(nodes, services)]
        leader, = wait_for(lambda: leading(services, range(3)), 120, what="a leader")
        lines = java_client(classpath, nodes[leader], "send:hello", "await:echo:hello", "send:count",
                           "await:count:")
        # one answer a message: the followers' services mock their egress
        assert egress(lines) == ["echo:hello", "count:2"]
        wait_for(lambda: all(s.count == 2 for s in services), 30, what="every member's service saw both messages")
        followers = [i for i in range(3) if i != leader]
        assert all(services[i].cluster.role == Role.FOLLOWER for i in followers)

        nodes[leader].kill()                        # the leader dies; its service is gone with it
        containers[leader].close()
        containers[leader] = None
        new_leader, = wait_for(lambda: leading(services, followers), 120, what="a new leader")
        assert ("role", Role.LEADER) in services[new_leader].events
        lines = java_client(classpath, nodes[new_leader], "send:count", "await:count:")
        assert egress(lines) == ["count:3"]
        wait_for(lambda: all(services[i].count == 3 for i in followers), 30, what="both survivors' services")
    finally:
        for container in containers:
            if container is not None:
                container.close()
        for node in nodes:
            node.stop()


def launch_our_member(shm_dir, members: str):
    """Our ClusteredMediaDriver (driver, archive, consensus module) as the one member of ``members`` (skips while
    our consensus module is not in this checkout)."""
    clustered_media_driver = pytest.importorskip("aeron.cluster.clustered_media_driver",
                                                 reason="our consensus module is not in this checkout yet")
    from aeron.archive.archive import Context as ArchiveContext
    from aeron.cluster.consensus_module import Context as ConsensusModuleContext
    from tests.support import driver_context
    archive = ArchiveContext(environ={}, archive_dir=str(shm_dir / "archive"), control_channel_enabled=False,
                             threading_mode="SHARED", segment_file_length=256 * 1024, idle_strategy="backoff")
    cm = ConsensusModuleContext({
        "aeron.cluster.member.id": "0", "aeron.cluster.members": members,
        "aeron.cluster.dir": str(shm_dir / "cluster"), "aeron.cluster.ingress.channel": "aeron:udp?term-length=64k",
        "aeron.cluster.log.channel": "aeron:udp?term-length=256k",
        "aeron.cluster.replication.channel": "aeron:udp?endpoint=127.0.0.1:0"}, environ={})
    return clustered_media_driver.ClusteredMediaDriver.launch(driver_context(aeron_dir=str(shm_dir / "driver")),
                                                              archive, cm)


def test_our_service_on_our_consensus_module_snapshots_and_recovers(classpath, shm_dir):
    members = cluster_members(1)
    for round_ in range(2):
        cmd = launch_our_member(shm_dir, members)
        aeron_dir, cluster_dir = cmd.media_driver.aeron_dir, str(shm_dir / "cluster")
        service = InteropService()
        try:
            with ClusteredServiceContainer.launch(Context(environ={}, aeron_dir=aeron_dir, cluster_dir=cluster_dir,
                                                          clustered_service=service)):
                wait_for(lambda: service.cluster is not None and service.cluster.role == Role.LEADER, 60,
                         what="the member leading")
                if round_ == 0:
                    lines = run_client(classpath, aeron_dir, ingress_endpoints(members), "send:hello",
                                       "await:echo:hello", "send:timer:50", "await:fired:7", "send:svc:ping",
                                       "await:relayed:ping")
                    assert egress(lines) == ["echo:hello", "scheduled", "fired:7", "relayed:ping"]
                    from aeron.cluster.cluster_control import ToggleState, find_control_toggle
                    reader = cmd.consensus_module.ctx.aeron.counters_reader
                    assert ToggleState.SNAPSHOT.toggle(find_control_toggle(reader, reader.values_buffer, 0))
                    wait_for(lambda: ("snapshot", 3) in service.events, 30, what="the snapshot")
                    run_client(classpath, aeron_dir, ingress_endpoints(members), "send:c", "await:echo:c")
                else:
                    lines = run_client(classpath, aeron_dir, ingress_endpoints(members), "send:count",
                                       "await:count:")
                    # the snapshot's count (3), the message after it replayed ("c"), then this one
                    assert egress(lines) == ["count:5"] and service.loaded_count == 3
        finally:
            cmd.close()
