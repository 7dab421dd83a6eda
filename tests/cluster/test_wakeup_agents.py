# SPDX-License-Identifier: Apache-2.0
"""A one-member cluster of ours with every agent on the ``wakeup`` idle strategy: the consensus module, the archive
and the service container park on the wake-up board, bound to the streams they poll (docs/wakeup.md), and still
echo a client's messages; the archive's recording and the consensus module's commit wake their readers."""
from __future__ import annotations

import functools
import time
import types

from aeron.archive.archive import Context as ArchiveContext
from aeron.archive.client import AeronArchive, Context as ArchiveClientContext
from aeron.cluster.client import AeronCluster, Context as ClientContext
from aeron.cluster.clustered_media_driver import ClusteredMediaDriver
from aeron.cluster.consensus_module import Context as ConsensusModuleContext, State
from aeron.cluster.consensus_module_agent import ConsensusModuleAgent
from aeron.cluster.service.clustered_service_container import ClusteredServiceContainer
from aeron.cluster.service.clustered_service_container import Context as ContainerContext
from aeron.cluster.service.cluster import Role
from aeron.common.agent import DRIVER_BACKOFF_MAX_PARK_NS
from aeron.common.wakeup import CLIENTS, SPIES, WakeupIdleStrategy, stream_bit
from aeron.samples.cluster.echo_service import EchoService
from tests.support import driver_context, free_port, wait_for

LOG_STREAM_ID, INGRESS_STREAM_ID, CONSENSUS_STREAM_ID, SERVICE_STREAM_ID, CONSENSUS_MODULE_STREAM_ID = \
    100, 101, 108, 104, 105
QUIET_NS = WakeupIdleStrategy.DEFAULT_QUIET_PARK_NS


def test_agents_park_on_their_streams_and_a_client_is_echoed(shm_dir):
    ports = [free_port() for _ in range(4)]
    members = f"0,127.0.0.1:{ports[0]},127.0.0.1:{ports[1]},127.0.0.1:{ports[2]},127.0.0.1:0,127.0.0.1:{ports[3]}"
    archive = ArchiveContext(environ={}, archive_dir=str(shm_dir / "archive"), control_channel_enabled=False,
                             threading_mode="SHARED", segment_file_length=256 * 1024, idle_strategy="wakeup")
    cm = ConsensusModuleContext({
        "aeron.cluster.member.id": "0", "aeron.cluster.members": members, "aeron.cluster.dir": str(shm_dir / "cluster"),
        "aeron.cluster.ingress.channel": "aeron:udp?term-length=64k",
        "aeron.cluster.log.channel": "aeron:udp?term-length=256k",
        "aeron.cluster.replication.channel": "aeron:udp?endpoint=127.0.0.1:0",
        "aeron.cluster.idle.strategy": "wakeup"}, environ={})
    member = ClusteredMediaDriver.launch(
        driver_context(aeron_dir=str(shm_dir / "driver"), shared_idle_strategy="wakeup", wakeup_data_spin_ns=0),
        archive, cm)
    try:
        container = ClusteredServiceContainer.launch(ContainerContext(
            {"aeron.cluster.idle.strategy": "wakeup"}, environ={}, aeron_dir=member.media_driver.aeron_dir,
            cluster_dir=str(shm_dir / "cluster"), clustered_service=EchoService()))
        try:
            agent = member.consensus_module.agent
            idle = agent.idle_strategy
            assert isinstance(idle, WakeupIdleStrategy) and idle.is_bound
            archive_response = cm.archive_context.control_response_stream_id
            assert idle.waiter.mask == (stream_bit(LOG_STREAM_ID) | stream_bit(INGRESS_STREAM_ID)
                                        | stream_bit(CONSENSUS_STREAM_ID) | stream_bit(CONSENSUS_MODULE_STREAM_ID)
                                        | stream_bit(archive_response) | CLIENTS)
            assert member.consensus_module._runner.idle_strategy.is_bound
            service_idle = container.agent_runner.idle_strategy
            assert service_idle.is_bound
            assert service_idle.waiter.mask == stream_bit(SERVICE_STREAM_ID) | CLIENTS      # the commit signals 104
            received: list[bytes] = []
            with AeronCluster.connect(ClientContext(
                    environ={}, aeron_dir=member.media_driver.aeron_dir, ingress_channel="aeron:udp",
                    ingress_endpoints=f"0=127.0.0.1:{ports[0]}", egress_channel="aeron:udp?endpoint=127.0.0.1:0",
                    message_timeout_ns=30_000_000_000,
                    egress_listener=lambda s, t, b, o, n, h: received.append(b.get_bytes(o, n)))) as client:
                # the archive records the log through a spy and wakes for the recorded stream
                archive_waiters = member.archive.conductor.wake_waiters
                assert archive_waiters and all(w.mask & SPIES and w.mask & stream_bit(LOG_STREAM_ID)
                                               for w in archive_waiters)
                for i in range(50):
                    payload = i.to_bytes(4, "little")
                    deadline = time.monotonic() + 30
                    while client.offer(payload) < 0:
                        assert time.monotonic() < deadline, "offer not accepted"
                        client.poll_egress()
                    wait_for(lambda: len(received) == i + 1, 30, invoke=client.poll_egress, what=f"echo {i}")
                assert received == [i.to_bytes(4, "little") for i in range(50)]
                # appended to the log by the compiled ingress path (aeron._core.cluster_ingress)
                assert agent.ingress_adapter.session_appender.appended == 50
            # a replay waits for its subscriber, then on flow control, which nothing signals: the archive's parks
            # stay within 1 ms while one runs (an election's log replay), and grow again once it is gone
            archive_idle = member.archive._runners[0].idle_strategy
            assert archive_idle.quiet(QUIET_NS) > DRIVER_BACKOFF_MAX_PARK_NS
            with AeronArchive.connect(ArchiveClientContext(
                    environ={}, aeron_dir=member.media_driver.aeron_dir,
                    control_request_channel=cm.archive_context.control_request_channel,
                    control_request_stream_id=cm.archive_context.control_request_stream_id,
                    control_response_channel="aeron:ipc", control_response_stream_id=20_777)) as archive_client:
                replay_session_id = archive_client.start_replay(
                    agent.log_recording_id, f"aeron:udp?endpoint=127.0.0.1:{free_port()}", 9999, 0, 64)
                assert archive_idle.quiet(QUIET_NS) == DRIVER_BACKOFF_MAX_PARK_NS
                archive_client.stop_replay(replay_session_id)
                wait_for(lambda: archive_idle.quiet(QUIET_NS) > DRIVER_BACKOFF_MAX_PARK_NS, what="the replay gone")
        finally:
            container.close()
    finally:
        member.close()


def test_a_followers_parks_end_by_its_leader_heartbeat_timeout():
    # nothing signals a silent leader: an active follower's parks end by the time its leader heartbeat timeout
    # passes (a millisecond at least), a leader's and a follower's far from it grow to the quiet bound, and parks
    # within an election stay within a millisecond
    class Clock:
        now_ns = 0

        def time_nanos(self) -> int:
            return self.now_ns
    agent = types.SimpleNamespace(election=None, role=Role.FOLLOWER, state=State.ACTIVE, cluster_clock=Clock(),
                                  time_of_last_log_update_ns=1_000_000_000, leader_heartbeat_timeout_ns=2_000_000_000)
    quiet = functools.partial(ConsensusModuleAgent.quiet_park_ns, agent)
    agent.cluster_clock.now_ns = 1_500_000_000
    assert quiet(QUIET_NS) == QUIET_NS                                  # 1.5 s left: the quiet bound
    agent.cluster_clock.now_ns = 2_995_000_000
    assert quiet(QUIET_NS) == 5_000_000                                 # 5 ms left
    agent.cluster_clock.now_ns = 3_100_000_000
    assert quiet(QUIET_NS) == DRIVER_BACKOFF_MAX_PARK_NS                # past it: until the slow tick notices
    agent.role = Role.LEADER
    assert quiet(QUIET_NS) == QUIET_NS
    agent.role, agent.election = Role.FOLLOWER, object()
    assert quiet(QUIET_NS) == DRIVER_BACKOFF_MAX_PARK_NS
