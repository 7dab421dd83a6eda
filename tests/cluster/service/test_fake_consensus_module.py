# SPDX-License-Identifier: Apache-2.0
"""The consensus module the tests play: it refuses an ack out of turn, as Aeron's does, and a container closed with
``close_container`` leaves the next consensus module nothing of its own to read, not even an ack nobody read."""
from __future__ import annotations

import pytest

from aeron._core.codecs import cluster as codecs
from aeron._core.term_reader import ABORT
from aeron.cluster.service.cluster import Role
from tests.cluster.service.conftest import encode
from tests.cluster.service.fake_consensus_module import CONTROL, FakeConsensusModule, close_container
from tests.cluster.service.test_clustered_service_agent import RecordingService
from tests.cluster.service.test_snapshots import launch
from tests.support import wait_for


def ack(ack_id: int, service_id: int = 0) -> bytes:
    return encode(codecs.ServiceAckEncoder, log_position=0, timestamp=0, ack_id=ack_id, relevant_id=-1,
                  service_id=service_id)


def test_an_ack_out_of_turn_is_refused(client):
    cm = FakeConsensusModule(client)
    publication = client.add_publication(CONTROL, 105)
    def send(message: bytes) -> None:
        wait_for(lambda: publication.offer(message) > 0, what="ack sent")
    try:
        for message in (ack(0), ack(0, service_id=1), ack(1)):      # each service's in turn
            send(message)
        cm.await_received("ack", 3)
        send(ack(3))
        with pytest.raises(AssertionError, match="ack 3 from service 0 where ack 2 was due"):
            wait_for(cm.poll, what="the ack out of turn")
        assert [m[3:6:2] for m in cm.received] == [(0, 0), (0, 1), (1, 0)]
    finally:
        publication.close()
        cm.close()


def test_the_next_consensus_module_reads_nothing_the_closed_container_left(archiving_driver, aeron, tmp_path):
    aeron_dir, cluster_dir = archiving_driver.driver.aeron_dir, str(tmp_path / "cluster")
    cm = FakeConsensusModule(aeron)
    container = launch(aeron_dir, cluster_dir, RecordingService())
    try:
        cm.start_service(Role.LEADER)
        cm.request_ack(0)
        image = wait_for(lambda: next(iter(cm.from_services.images), None), what="the control image")
        seen: list[int] = []

        def peek(buffer, offset, length, header):
            seen.append(buffer.get_i16(offset + 2))
            return ABORT                    # left unread: the subscription stays before it
        wait_for(lambda: image.controlled_poll(peek, 1) >= 0 and seen, what="the third ack")
        assert seen[0] == codecs.ServiceAckDecoder.TEMPLATE_ID and len(cm.received) == 2
    finally:
        close_container(aeron, container)
        cm.close()
    cm = FakeConsensusModule(aeron)
    container = launch(aeron_dir, cluster_dir, RecordingService())
    try:
        assert cm.await_received("ack")[0] == ("ack", 0, 0, 0, container.context.aeron.client_id, 0)
    finally:
        container.close()
        cm.close()
