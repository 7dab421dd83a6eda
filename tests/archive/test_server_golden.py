# SPDX-License-Identifier: Apache-2.0
"""Our archive recording what the Java archive recorded for the golden directory (tests/data/golden/archive) writes the
same segment files, byte for byte, and catalog entries equal field by field (ids and timestamps aside): recording 0,
five "Hello World! N" on UDP stream 1001 recorded locally through a spy, and recording 1, one 5,000-byte message in
4 fragments on IPC stream 1002. The publications are given the golden session and initial term ids."""
from __future__ import annotations

import gzip

import pytest

from aeron import Aeron, Context
from aeron._core.codecs import archive as codecs
from aeron._core.codecs.archive import ControlResponseCode, RecordingSignal, SourceLocation
from aeron.archive.archive import ArchivingMediaDriver
from aeron.archive.catalog import Catalog
from tests.archive.control_client import ControlClient
from tests.archive.test_server import archive_context
from tests.support import driver_context, free_port, wait_for

GOLDEN_PORT = "40641"


def _golden_catalog(golden_dir, shm_dir):
    copy = shm_dir / "golden"
    copy.mkdir()
    (copy / "archive.catalog").write_bytes(
        gzip.open(golden_dir / "archive" / "archive-dir" / "archive.catalog.gz").read())
    return Catalog(copy, read_only=True)


@pytest.mark.parametrize("golden_id", [0, 1])
def test_recording_the_golden_messages_writes_the_golden_segment_and_entry(shm_dir, golden_dir, golden_id):
    golden = gzip.open(golden_dir / "archive" / "archive-dir" / f"{golden_id}-0.rec.gz").read()
    with _golden_catalog(golden_dir, shm_dir) as golden_catalog:
        expected = golden_catalog.recording(golden_id)
    port = str(free_port())
    channel = expected.original_channel.replace(GOLDEN_PORT, port)
    if golden_id == 0:
        messages = [f"Hello World! {i}".encode() for i in range(5)]
    else:
        messages = [bytes(ord("A") + i % 26 for i in range(5000))]
    pub_channel = (f"{channel}{'|' if '?' in channel else '?'}term-length=64k|mtu=1408|"
                   f"session-id={expected.session_id}|init-term-id={expected.initial_term_id}|"
                   f"term-id={expected.initial_term_id}|term-offset=0")
    if golden_id == 0:
        pub_channel += "|ssc=true"          # no network subscriber: the archive's spy makes it connected
    amd = ArchivingMediaDriver.launch(driver_context(aeron_dir=str(shm_dir / "driver")),
                                      archive_context(shm_dir / "archive"))
    try:
        with Aeron.connect(Context(aeron_dir=amd.driver.aeron_dir)) as aeron:
            client = ControlClient(aeron, "aeron:ipc?term-length=64k", 10, "aeron:ipc?term-length=64k", 20)
            assert client.connect().code == ControlResponseCode.OK
            sub_id = client.ok(codecs.StartRecordingRequestEncoder, stream_id=expected.stream_id,
                               source_location=SourceLocation.LOCAL, channel=channel)
            pub = aeron.add_exclusive_publication(pub_channel, expected.stream_id)
            recording_id = client.wait_signal(RecordingSignal.START).recording_id
            for message in messages:
                wait_for(lambda: pub.offer(message) > 0, what="offer")
            assert pub.position == expected.stop_position
            wait_for(lambda: client.ok(codecs.RecordingPositionRequestEncoder, recording_id=recording_id) ==
                     expected.stop_position, what="recorded")
            client.ok(codecs.StopRecordingSubscriptionRequestEncoder, subscription_id=sub_id)
            client.wait_signal(RecordingSignal.STOP, recording_id)
            pub.close()
            client.close()
    finally:
        amd.close()
    with open(shm_dir / "archive" / f"{recording_id}-0.rec", "rb") as f:
        ours = f.read()
    assert len(ours) == len(golden) == 65536
    assert ours == golden
    with Catalog(shm_dir / "archive", read_only=True) as catalog:
        entry = catalog.recording(recording_id)
    for field in ("start_position", "stop_position", "initial_term_id", "segment_file_length", "term_buffer_length",
                  "mtu_length", "session_id", "stream_id", "source_identity", "control_session_id", "correlation_id",
                  "state", "checksum"):
        assert getattr(entry, field) == getattr(expected, field), field
    for field in ("stripped_channel", "original_channel"):
        assert getattr(entry, field) == getattr(expected, field).replace(GOLDEN_PORT, port), field
