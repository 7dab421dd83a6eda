# SPDX-License-Identifier: Apache-2.0
"""The service docs/clustered-services.md shows works: it counts, answers its clients, and its snapshot restores
its count (run against the consensus module the tests play, on our driver and archive)."""
from __future__ import annotations

import re

from aeron import Aeron, Context
from aeron._core.codecs.cluster import ClusterAction
from aeron.cluster.service.cluster import Role
from aeron.cluster.service.clustered_service_container import ClusteredServiceContainer
from aeron.cluster.service.clustered_service_container import Context as ContainerContext
from tests.cluster.service.fake_consensus_module import FakeConsensusModule, close_container
from tests.cluster.service.test_clustered_service_agent import egress
from tests.conftest import PROJECT_ROOT
from tests.support import wait_for

GUIDE = PROJECT_ROOT / "docs" / "clustered-services.md"


def counter_service_class() -> type:
    code = re.search(r"```python\n(.*?)```", GUIDE.read_text(), re.S)[1]
    namespace: dict = {}
    exec(compile(code, str(GUIDE), "exec"), namespace)
    return namespace["CounterService"]


def test_the_guides_counter_service(archiving_driver, tmp_path):
    CounterService = counter_service_class()
    aeron_dir = archiving_driver.driver.aeron_dir
    with Aeron.connect(Context(aeron_dir=aeron_dir)) as client:
        cm = FakeConsensusModule(client)
        service = CounterService()
        ctx = ContainerContext(environ={}, aeron_dir=aeron_dir, cluster_dir=str(tmp_path / "cluster"),
                               clustered_service=service, idle_strategy_name="sleep-ms")
        container = ClusteredServiceContainer.launch(ctx)
        subscription, messages, poll_egress = egress(client)
        try:
            cm.start_service(Role.LEADER)
            cm.new_leadership_term()
            cm.session_open(1)
            wait_for(lambda: subscription.is_connected, what="egress")
            for payload in (b"a", b"b", b"c"):
                cm.session_message(1, payload)
            wait_for(lambda: poll_egress() >= 0 and len(messages) == 3, what="three answers")
            assert [int.from_bytes(m[3], "little") for m in messages] == [1, 2, 3]
            position = cm.cluster_action(ClusterAction.SNAPSHOT)
            recording_id = cm.await_received("ack", 3)[2][4]
        finally:
            close_container(client, container)
            cm.close()
            subscription.close()
        cm = FakeConsensusModule(client, leadership_term_id=0, log_position=position, snapshot_recording_ids=(
            recording_id,))
        restored = CounterService()
        ctx = ContainerContext(environ={}, aeron_dir=aeron_dir, cluster_dir=str(tmp_path / "cluster"),
                               clustered_service=restored, idle_strategy_name="sleep-ms")
        container = ClusteredServiceContainer.launch(ctx)
        try:
            cm.await_received("ack")
            assert restored.count == 3
        finally:
            container.close()
            cm.close()
