# SPDX-License-Identifier: Apache-2.0
"""The archive server driven by a raw control client (generated codecs): sessions, recording, listing, replay."""
from __future__ import annotations

import os
import time

import pytest

from aeron import Aeron, Context
from aeron._core.codecs import archive as codecs
from aeron._core.codecs.archive import ControlResponseCode, RecordingSignal, SourceLocation
from aeron._core.fragment_assembler import FragmentAssembler
from aeron.archive.archive import Archive, ArchiveThreadingMode, ArchivingMediaDriver
from aeron.archive.archive import Context as ArchiveContext
from aeron.archive.control_session import ArchiveErrorCode
from tests.archive.control_client import ControlClient
from tests.support import driver_context, free_port, wait_for

CONTROL = "aeron:ipc?term-length=64k"
RESPONSE = "aeron:ipc?term-length=64k"


def archive_context(archive_dir, **overrides):
    settings = dict(archive_dir=str(archive_dir), control_channel_enabled=False, threading_mode="SHARED",
                    segment_file_length=64 * 1024, idle_strategy="backoff")
    settings.update(overrides)
    return ArchiveContext(environ={}, **settings)


@pytest.fixture
def archiving_driver(shm_dir):
    amd = ArchivingMediaDriver.launch(driver_context(aeron_dir=str(shm_dir / "driver")),
                                      archive_context(shm_dir / "archive"))
    try:
        yield amd
    finally:
        amd.close()


@pytest.fixture
def aeron(archiving_driver):
    with Aeron.connect(Context(aeron_dir=archiving_driver.driver.aeron_dir)) as client:
        yield client


@pytest.fixture
def client(aeron):
    c = ControlClient(aeron, CONTROL, 10, RESPONSE, 20)
    response = c.connect()
    assert response.code == ControlResponseCode.OK, response
    try:
        yield c
    finally:
        c.close()


def publish(pub, messages):
    for m in messages:
        wait_for(lambda: pub.offer(m) > 0, what="offer")
    return pub.position


def collect(sub, count, timeout_s=10.0):
    got = []
    assembler = FragmentAssembler(lambda b, o, n, h: got.append(b.get_bytes(o, n)))
    wait_for(lambda: len(got) >= count, timeout_s, invoke=lambda: sub.poll(assembler, 100), what=f"{count} messages")
    return got


def record(client, aeron, channel, stream_id, messages, location=SourceLocation.REMOTE):
    """Start recording, publish, wait until recorded; returns (recording_id, subscription_id, stop position)."""
    sub_id = client.ok(codecs.StartRecordingRequestEncoder, stream_id=stream_id, source_location=location,
                       channel=channel)
    pub = aeron.add_exclusive_publication(channel, stream_id)
    start = client.wait_signal(RecordingSignal.START)
    position = publish(pub, messages)
    wait_for(lambda: client.ok(codecs.RecordingPositionRequestEncoder, recording_id=start.recording_id) >= position,
             what="recorded")
    return start.recording_id, sub_id, pub, position


def replay(client, aeron, recording_id, position=-1, length=-1, stream_id=1001, channel="aeron:ipc"):
    sub = aeron.add_subscription(channel, stream_id)
    replay_session_id = client.ok(codecs.ReplayRequestEncoder, recording_id=recording_id, position=position,
                                  length=length, replay_stream_id=stream_id, file_io_max_length=0, replay_token=-1,
                                  replay_channel=channel)
    return replay_session_id, sub


def test_connect_archive_id_and_keepalive(client, archiving_driver):
    archive_id = client.ok(codecs.ArchiveIdRequestEncoder)
    assert archive_id == archiving_driver.archive.archive_id
    client.request(codecs.KeepAliveRequestEncoder)
    assert client.ok(codecs.ArchiveIdRequestEncoder) == archive_id


def test_record_and_replay_ipc_byte_for_byte(client, aeron, archiving_driver):
    messages = [bytes([i % 251]) * (1 + (i * 37) % 3000) for i in range(200)]   # fragments at mtu 1408
    recording_id, sub_id, pub, stop = record(client, aeron, "aeron:ipc?term-length=64k", 1000, messages)
    client.ok(codecs.StopRecordingSubscriptionRequestEncoder, subscription_id=sub_id)
    stopped = client.wait_signal(RecordingSignal.STOP, recording_id)
    assert stopped.position == stop
    assert client.ok(codecs.StopPositionRequestEncoder, recording_id=recording_id) == stop
    assert client.ok(codecs.StartPositionRequestEncoder, recording_id=recording_id) == 0
    assert client.ok(codecs.RecordingPositionRequestEncoder, recording_id=recording_id) == -1
    replay_session_id, sub = replay(client, aeron, recording_id)
    got = collect(sub, len(messages))
    assert got == messages
    image = sub.images[0]
    assert image.session_id == replay_session_id & 0xFFFFFFFF or image.session_id == (
        replay_session_id & 0xFFFFFFFF) - (1 << 32)
    # the segment files: 64 KiB segments, named <id>-<base>.rec
    names = sorted(os.listdir(archiving_driver.archive.context.archive_dir))
    assert f"{recording_id}-0.rec" in names and f"{recording_id}-65536.rec" in names
    pub.close()


