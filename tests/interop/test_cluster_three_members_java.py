# SPDX-License-Identifier: Apache-2.0
"""Three of our members, each its own process (``python -m aeron.cluster``) with a service container beside it
(Java's ClusteredServiceContainer, or ours, ``python -m aeron.cluster.service``, running the same test service:
then the cluster is entirely ours), and Java's AeronCluster as the client: a leader is elected, messages go through
the replicated log, the leader is killed with SIGKILL and another is elected, the client follows the new leader,
and the old leader restarts and catches up. A timer scheduled before the kill fires once, from the new leader.
Needs AERON_JAVA_CP (skips without it)."""
from __future__ import annotations

import pytest

from tests.interop.cluster_support import (IDLE_CLIENT_SESSION_TIMEOUT, JavaClient, MemberProcess,  # noqa: F401
                                           cluster_java, cluster_members, ingress_endpoints)
from tests.support import wait_for


@pytest.mark.parametrize("service", ["java", "python"])
def test_three_members_elect_replicate_fail_over_and_rejoin(cluster_java, shm_dir, service):
    classpath, _ = cluster_java
    members = cluster_members(3)
    nodes = [MemberProcess(i, members, shm_dir, classpath, service=service, **IDLE_CLIENT_SESSION_TIMEOUT)
             for i in range(3)]
    client = None
    try:
        for node in nodes:
            node.start()
        leader = wait_for(lambda: next((n for n in nodes if n.is_leader()), None), 60, what="a leader",
                          interval_s=0.2)
        wait_for(lambda: sum(n.is_follower() for n in nodes) == 2, 60, what="two followers", interval_s=0.2)
        client = JavaClient(classpath, nodes[(leader.member_id + 1) % 3].aeron_dir, ingress_endpoints(members))
        client.out.wait_for("CONNECTED", 60)
        for i in range(10):
            client.send(f"a{i}")
            client.expect(f"a{i}")
        # the timer is scheduled on every member (each service asks its consensus module) but only a leader fires it
        client.send("timer:9:4000")
        client.expect("timer:9:4000")
        committed = leader.counters()[3]
        wait_for(lambda: all(n.counters()[3] == committed for n in nodes), 30, what="followers at the commit position",
                 interval_s=0.2)

        leader.kill()
        survivors = [n for n in nodes if n is not leader]
        new_leader = wait_for(lambda: next((n for n in survivors if n.is_leader()), None), 60,
                              what="a new leader", interval_s=0.2)
        assert new_leader.counters()[4] >= 1                     # a later leadership term
        client.command("poll 100")
        client.out.wait_for("NEW_LEADER", 60)
        client.out.wait_for("POLLED", 60)
        for i in range(10):
            client.send(f"b{i}")
            client.expect(f"b{i}")
        for node in survivors:                                   # the new leader's TimerEvent, replicated
            node.service_out.wait_for("SERVICE_TIMER 9", 60)

        leader.start()                                           # the old leader rejoins as a follower
        wait_for(leader.is_follower, 90, what="the old leader following", interval_s=0.2)
        client.send("count?")
        client.expect("count=21")
        committed = new_leader.counters()[3]
        wait_for(lambda: leader.counters()[3] >= committed, 60, what="the old leader caught up", interval_s=0.2)
        leader.service_out.wait_for("SERVICE_TIMER 9", 60)       # the rejoining member replays the TimerEvent
        for node in nodes:                                       # fired once
            assert node.service_out.drain().count("SERVICE_TIMER 9") == 1, node.member_id
    finally:
        if client is not None:
            client.close()
        for node in nodes:
            node.stop()
