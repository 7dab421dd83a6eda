# SPDX-License-Identifier: Apache-2.0
"""A clustered service's snapshots through our archive: ServiceSnapshotTaker writes the markers and sessions a
ServiceSnapshotLoader reads back (a session too long for one frame included), leaving the image on the
application's data; a container takes a snapshot when the log asks, acks it with its recording id, and a container
started from that recording recovers its sessions and state; the official Java service snapshot of the golden
BasicAuction run loads into our port of the tutorial's service."""
from __future__ import annotations

import gzip
import pathlib
import shutil
import struct

import pytest

from aeron import Aeron, Context
from aeron._core.codecs.cluster import ClusterAction, ClusterTimeUnit
from aeron.archive.archive import ArchivingMediaDriver
from aeron.archive.client import AeronArchive, SourceLocation
from aeron.archive.client import Context as ArchiveClientContext
from aeron.cluster.service.cluster import Role
from aeron.cluster.service.clustered_service_container import ClusteredServiceContainer
from aeron.cluster.service.clustered_service_container import Context as ContainerContext
from aeron.cluster.service.service_snapshot_loader import ServiceSnapshotLoader
from aeron.cluster.service.service_snapshot_taker import ServiceSnapshotTaker
from aeron.common.agent import SleepingMillisIdleStrategy
from aeron.common.errors import ClusterError
from aeron.samples.cluster.basic_auction_clustered_service import BasicAuctionClusteredService
from tests.archive.test_server import archive_context
from tests.cluster.service.fake_consensus_module import FakeConsensusModule, close_container
from tests.cluster.service.test_clustered_service_agent import RecordingService
from tests.support import driver_context, wait_for

GOLDEN_ARCHIVE = pathlib.Path(__file__).resolve().parents[2] / "data" / "golden" / "cluster" / "node0" / "archive"
LOCAL_CONTROL = "aeron:ipc?term-length=64k"


def start_archive(shm_dir: pathlib.Path, archive_dir: pathlib.Path | None = None) -> ArchivingMediaDriver:
    return ArchivingMediaDriver.launch(driver_context(aeron_dir=str(shm_dir / "driver")),
                                       archive_context(archive_dir or shm_dir / "archive"))


@pytest.fixture
def archive(aeron):
    with AeronArchive.connect(ArchiveClientContext(aeron=aeron, control_request_channel=LOCAL_CONTROL,
                                                   control_response_channel=LOCAL_CONTROL,
                                                   control_response_stream_id=30)) as client:
        yield client


class Session:
    def __init__(self, cluster_session_id, response_stream_id, response_channel, encoded_principal):
        self.id = cluster_session_id
        self.response_stream_id = response_stream_id
        self.response_channel = response_channel
        self.encoded_principal = encoded_principal


class Sessions:
    """What the loader hands the agent."""

    def __init__(self):
        self.added = []

    def add_session(self, *args):
        self.added.append(args)


def record_snapshot(aeron, archive, write) -> int:
    """Record what ``write(publication)`` writes on the snapshot channel; returns the recording id."""
    publication = aeron.add_exclusive_publication("aeron:ipc?alias=snapshot", 106)
    channel = f"aeron:ipc?alias=snapshot|session-id={publication.session_id}"
    archive.start_recording(channel, 106, SourceLocation.LOCAL, auto_stop=True)
    recording_id = wait_for(lambda: archive.find_last_matching_recording(0, "alias=snapshot", 106,
                                                                         publication.session_id) + 1,
                            what="the recording") - 1
    write(publication)
    end = publication.position
    wait_for(lambda: archive.get_recording_position(recording_id) >= end, what="recorded")
    publication.close()
    wait_for(lambda: archive.get_stop_position(recording_id) == end, what="recording stopped")
    return recording_id


def test_the_loader_reads_what_the_taker_wrote_and_stops_on_the_applications_data(aeron, archive):
    long_channel = "aeron:udp?endpoint=localhost:20121|alias=" + "x" * 2000     # more than one frame
    sessions = [Session(3, 102, "aeron:udp?endpoint=localhost:9", b""),
                Session(9, 104, long_channel, bytes(range(10)))]

    def write(publication):
        taker = ServiceSnapshotTaker(publication, SleepingMillisIdleStrategy())
        taker.mark_begin(2, 4096, 7, 0, ClusterTimeUnit.MICROS, 0x010203)
        for session in sessions:
            taker.snapshot_session(session)
        taker.mark_end(2, 4096, 7, 0, ClusterTimeUnit.MICROS, 0x010203)
        wait_for(lambda: publication.offer(b"application state") > 0, what="the application's data")

    recording_id = record_snapshot(aeron, archive, write)
    with archive.replay(recording_id, "aeron:ipc", 103, 0, -1) as subscription:
        image = wait_for(lambda: subscription.image_at_index(0) if subscription.image_count else None,
                         what="the replay image")
        agent = Sessions()
        loader = ServiceSnapshotLoader(image, agent)
        wait_for(lambda: loader.poll() >= 0 and loader.is_done, what="the END marker")
        assert agent.added == [(3, 102, "aeron:udp?endpoint=localhost:9", b""),
                               (9, 104, long_channel, bytes(range(10)))]
        assert (loader.app_version, loader.time_unit) == (0x010203, ClusterTimeUnit.MICROS)
        data = []
        wait_for(lambda: image.poll(lambda b, o, n, h: data.append(b.get_bytes(o, n)), 10) >= 0 and data,
                 what="the application's data")
        assert data == [b"application state"]


def test_the_loader_refuses_another_components_snapshot(aeron, archive):
    def write(publication):
        ServiceSnapshotTaker(publication, SleepingMillisIdleStrategy()).mark_begin(1, 0, 0, 0, None, 0)

    recording_id = record_snapshot(aeron, archive, write)
    with archive.replay(recording_id, "aeron:ipc", 103, 0, -1) as subscription:
        image = wait_for(lambda: subscription.image_at_index(0) if subscription.image_count else None,
                         what="the replay image")
        loader = ServiceSnapshotLoader(image, Sessions())
        with pytest.raises(ClusterError, match="unexpected snapshot type: 1"):
            wait_for(lambda: loader.poll() > 0, what="the marker")


def launch(aeron_dir, cluster_dir, service) -> ClusteredServiceContainer:
    return ClusteredServiceContainer.launch(ContainerContext(environ={}, aeron_dir=aeron_dir, cluster_dir=cluster_dir,
                                                             clustered_service=service,
                                                             idle_strategy_name="sleep-ms"))


class StatefulService(RecordingService):
    """Keeps the payloads it saw; they are its snapshot."""

    def __init__(self):
        super().__init__()
        self.state: list[bytes] = []

    def on_start(self, cluster, snapshot_image):
        super().on_start(cluster, snapshot_image)
        if snapshot_image is not None:
            def on_fragment(buffer, offset, length, header):
                count = buffer.get_i32(offset)
                self.state = [buffer.get_bytes(offset + 4 + 8 * i, 8).rstrip(b"\0") for i in range(count)]
            while not self.state and not snapshot_image.is_end_of_stream:
                cluster.idle_strategy.idle(snapshot_image.poll(on_fragment, 1))

    def on_session_message(self, session, timestamp, buffer, offset, length, header):
        self.state.append(buffer.get_bytes(offset, length))

    def on_take_snapshot(self, snapshot_publication):
        super().on_take_snapshot(snapshot_publication)
        data = struct.pack("<i", len(self.state)) + b"".join(s.ljust(8, b"\0") for s in self.state)
        while snapshot_publication.offer(data) < 0:
            self.cluster.idle_strategy.idle()


def test_a_container_snapshots_on_request_and_a_new_one_recovers_from_it(archiving_driver, aeron, archive, tmp_path):
    aeron_dir = archiving_driver.driver.aeron_dir
    cm = FakeConsensusModule(aeron)
    service = StatefulService()
    container = launch(aeron_dir, str(tmp_path / "cluster"), service)
    try:
        cm.start_service(Role.LEADER)
        cm.new_leadership_term(leadership_term_id=0, timestamp=500, time_unit=ClusterTimeUnit.MICROS)
        cm.session_open(5, response_channel="aeron:ipc?alias=egress", response_stream_id=102)
        cm.session_message(5, b"one")
        cm.session_message(5, b"two")
        position = cm.cluster_action(ClusterAction.SNAPSHOT, timestamp=600)
        snapshot_ack = cm.await_received("ack", 3)[2]
        assert snapshot_ack[:4] == ("ack", position, 600, 2) and snapshot_ack[5] == 0
        recording_id = snapshot_ack[4]
        assert recording_id >= 0 and ("snapshot",) in service.calls
        # a standby snapshot is not this member's to take
        cm.cluster_action(ClusterAction.SNAPSHOT, flags=1)
        cm.session_message(5, b"after")
        wait_for(lambda: service.state[-1] == b"after", what="the message after")
        assert len([m for m in cm.received if m[0] == "ack"]) == 3
    finally:
        close_container(aeron, container)
        cm.close()

    recovering = FakeConsensusModule(aeron, leadership_term_id=0, log_position=position, timestamp=600,
                                     snapshot_recording_ids=(recording_id,))
    restored = StatefulService()
    container = launch(aeron_dir, str(tmp_path / "cluster"), restored)
    try:
        assert recovering.await_received("ack")[0] == ("ack", position, 600, 0, container.context.aeron.client_id, 0)
        assert restored.state == [b"one", b"two"]
        assert restored.calls[0][0] == "start" and restored.calls[0][1] is not None
        sessions = restored.cluster.client_sessions
        assert [(s.id, s.response_channel, s.response_stream_id) for s in sessions] == \
            [(5, "aeron:ipc?alias=egress", 102)]
        assert restored.cluster.time_unit == ClusterTimeUnit.MICROS
        assert (restored.cluster.log_position, restored.cluster.time) == (position, 600)
    finally:
        container.close()
        recovering.close()


def test_the_official_services_snapshot_loads_into_our_basic_auction_service(shm_dir, tmp_path, capsys):
    archive_dir = shm_dir / "archive"
    archive_dir.mkdir()
    for packed in GOLDEN_ARCHIVE.glob("*.gz"):
        (archive_dir / packed.stem).write_bytes(gzip.decompress(packed.read_bytes()))
    (archive_dir / "archive-mark.dat").unlink(missing_ok=True)    # the golden node's, left by a clean stop
    amd = start_archive(shm_dir, archive_dir)
    try:
        with Aeron.connect(Context(aeron_dir=amd.driver.aeron_dir)) as client:
            # Java's recording log: service 0's snapshot is recording 1, at log position 736 of term 0
            cm = FakeConsensusModule(client, leadership_term_id=0, log_position=736, timestamp=1795335493045,
                                     snapshot_recording_ids=(1,))
            service = BasicAuctionClusteredService()
            container = launch(amd.driver.aeron_dir, str(tmp_path / "cluster"), service)
            try:
                assert cm.await_received("ack")[0][1:4] == (736, 1795335493045, 0)
                assert (service.auction.current_winning_customer_id, service.auction.best_price) == (1, 116)
                assert service.cluster.client_sessions == ()        # the client had closed its session
            finally:
                container.close()
                cm.close()
    finally:
        amd.close()
        shutil.rmtree(archive_dir, ignore_errors=True)
