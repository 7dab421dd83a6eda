# SPDX-License-Identifier: Apache-2.0
"""A consensus module closed while it waits in ``on_start`` for a service that never comes stops at once: the close
interrupts the wait (ConsensusModuleAgent.interrupt; Aeron's agent checks its thread's interrupt status in
``idle``) instead of timing out after the runner's 5 s."""
from __future__ import annotations

import pytest

from aeron.archive.archive import Context as ArchiveContext
from aeron.cluster.clustered_media_driver import ClusteredMediaDriver
from aeron.cluster.consensus_module import Context as ConsensusModuleContext
from aeron.cluster.service.recovery_state import RecoveryState
from aeron.common.constants import NULL_VALUE
from tests.support import driver_context, free_port, wait_for

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize("idle", ["backoff", "wakeup"])
def test_close_interrupts_the_wait_for_a_service_that_never_comes(shm_dir, idle):
    ports = [free_port() for _ in range(4)]
    members = f"0,127.0.0.1:{ports[0]},127.0.0.1:{ports[1]},127.0.0.1:{ports[2]},127.0.0.1:0,127.0.0.1:{ports[3]}"
    archive = ArchiveContext(environ={}, archive_dir=str(shm_dir / "archive"), control_channel_enabled=False,
                             threading_mode="SHARED", segment_file_length=256 * 1024, idle_strategy=idle)
    cm = ConsensusModuleContext({
        "aeron.cluster.member.id": "0", "aeron.cluster.members": members, "aeron.cluster.dir": str(shm_dir / "cluster"),
        "aeron.cluster.ingress.channel": "aeron:udp?term-length=64k",
        "aeron.cluster.log.channel": "aeron:udp?term-length=256k",
        "aeron.cluster.replication.channel": "aeron:udp?endpoint=127.0.0.1:0",
        "aeron.cluster.service.count": "1", "aeron.cluster.idle.strategy": idle}, environ={})
    member = ClusteredMediaDriver.launch(driver_context(aeron_dir=str(shm_dir / "driver"), shared_idle_strategy=idle),
                                         archive, cm)
    try:
        module = member.consensus_module
        agent = module.agent
        # the recovery state counter is made just before the wait for the services' first acks
        wait_for(lambda: RecoveryState.find_counter_id(agent.aeron.counters_reader, cm.cluster_id) != NULL_VALUE,
                 what="the consensus module waiting for its service")
        assert not module.is_terminated
        module.close()          # raised AeronTimeoutError after 5 s, the agent still waiting
        assert module.is_terminated
        assert agent.election is None               # it never got to its first election
    finally:
        member.close()
