# SPDX-License-Identifier: Apache-2.0
"""Our client's ``wakeup`` idle strategy on the official `aeronmd`, which never signals: a loop on a UDP
subscription still gets every message (its parks are bounded, as backoff's sleeps), and it never yields before a
park (nobody would end the yield but its time); and our clients' loops keep Aeron's idle strategies there by default.
Needs AERON_C_BIN."""
from __future__ import annotations

import pytest

from aeron import Aeron, Context
from aeron.archive.client.aeron_archive import Context as ArchiveContext
from aeron.cluster.client.aeron_cluster import Context as ClusterContext
from aeron.common.agent import BackoffIdleStrategy, BusySpinIdleStrategy
from aeron.common.wakeup import WakeupIdleStrategy
from aeron.samples import _common
from tests import procs
from tests.client.conftest import receive_one_by_one, wait_for
from tests.support import free_port

pytestmark = [pytest.mark.interop, pytest.mark.timeout(60)]


def test_a_udp_subscriber_on_aeronmd_parks_bounded_and_never_yields(official, shm_dir):
    aeron_dir = str(shm_dir / "aeronmd")
    driver = procs.start_aeronmd(official("aeronmd"), aeron_dir)
    try:
        with Aeron.connect(Context(aeron_dir)) as client:
            channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
            sub = client.add_subscription(channel, 21)
            pub = client.add_publication(channel, 21)
            wait_for(lambda: pub.is_connected and sub.image_count == 1, what="connected on aeronmd")
            idle = client.wakeup_idle_strategy(sub)
            assert idle.is_bound and idle.yield_ns == WakeupIdleStrategy.DEFAULT_YIELD_NS
            got = receive_one_by_one(pub, sub, idle)
            assert got == [bytes([i]) * 8 for i in range(20)]
            assert idle.parks > 0 and idle.waiter.timeouts > 0        # picked up by the park's bound
            assert idle.waiter.yield_phases == 0
    finally:
        procs.stop(driver)


def test_on_aeronmd_our_clients_keep_aerons_idle_strategies(official, shm_dir):
    aeron_dir = str(shm_dir / "aeronmd")
    driver = procs.start_aeronmd(official("aeronmd"), aeron_dir)
    try:
        with Aeron.connect(Context(aeron_dir)) as client:
            assert not client.wakeup_by_default         # our client made the board; it names no driver
            sub = client.add_subscription("aeron:ipc", 22)
            spin = BusySpinIdleStrategy()
            assert client.default_idle_strategy(spin, sub) is spin
            assert _common.idle_strategy(client, "auto", sub) is None          # the samples spin, as cping does
            archive = ArchiveContext(environ={}, control_request_channel="aeron:ipc",
                                     control_response_channel="aeron:ipc", aeron=client).conclude()
            cluster = ClusterContext(environ={}, ingress_channel="aeron:ipc", egress_channel="aeron:ipc",
                                     aeron=client).conclude()
            for ctx in (archive, cluster):
                assert type(ctx.idle_strategy) is BackoffIdleStrategy
                ctx.close()
    finally:
        procs.stop(driver)
