# SPDX-License-Identifier: Apache-2.0
"""Replication between two of our archives on two drivers: a stopped recording copied into a new one and onto the
end of an existing one, a bounded (stop position) copy, errors, and stop replication (the live merge and tagged
replication: test_server_replication_live.py)."""
from __future__ import annotations

import contextlib

import pytest

from aeron import Aeron, Context
from aeron._core.codecs import archive as codecs
from aeron._core.codecs.archive import ControlResponseCode, RecordingSignal
from aeron._core.fragment_assembler import FragmentAssembler
from aeron.archive.archive import ArchivingMediaDriver
from aeron.archive.errors import ArchiveErrorCode
from tests.archive.control_client import ControlClient
from tests.archive.test_server import archive_context, collect, record, replay
from tests.support import driver_context, free_port, wait_for

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def two_archives(shm_dir):
    src_port = free_port()
    with contextlib.ExitStack() as stack:
        src = stack.enter_context(ArchivingMediaDriver.launch(
            driver_context(aeron_dir=str(shm_dir / "src-driver")),
            archive_context(shm_dir / "src", control_channel_enabled=True,
                            control_channel=f"aeron:udp?endpoint=127.0.0.1:{src_port}")))
        dst = stack.enter_context(ArchivingMediaDriver.launch(
            driver_context(aeron_dir=str(shm_dir / "dst-driver")),
            archive_context(shm_dir / "dst", replication_channel="aeron:udp?endpoint=127.0.0.1:0")))
        src_aeron = stack.enter_context(Aeron.connect(Context(aeron_dir=src.driver.aeron_dir)))
        dst_aeron = stack.enter_context(Aeron.connect(Context(aeron_dir=dst.driver.aeron_dir)))
        src_client = ControlClient(src_aeron, "aeron:ipc?term-length=64k", 10, "aeron:ipc?term-length=64k", 20)
        dst_client = ControlClient(dst_aeron, "aeron:ipc?term-length=64k", 10, "aeron:ipc?term-length=64k", 20)
        assert src_client.connect().code == ControlResponseCode.OK
        assert dst_client.connect().code == ControlResponseCode.OK
        yield src, dst, src_aeron, dst_aeron, src_client, dst_client, f"aeron:udp?endpoint=127.0.0.1:{src_port}"


def replicate(client, src_control, src_recording_id, dst_recording_id=-1, stop_position=-1, file_io_max_length=-1):
    return client.ok(codecs.ReplicateRequest2Encoder, src_recording_id=src_recording_id,
                     dst_recording_id=dst_recording_id, stop_position=stop_position, channel_tag_id=-1,
                     subscription_tag_id=-1, src_control_stream_id=10, file_io_max_length=file_io_max_length,
                     replication_session_id=-1, src_control_channel=src_control, live_destination="",
                     replication_channel="", encoded_credentials=b"", src_response_channel="")


def test_replicate_a_stopped_recording_into_a_new_and_an_existing_one(two_archives):
    src, dst, src_aeron, dst_aeron, src_client, dst_client, src_control = two_archives
    channel = "aeron:ipc?term-length=64k"
    messages = [bytes([i % 256]) * (10 + (i * 97) % 4000) for i in range(300)]
    src_id, sub_id, pub, stop = record(src_client, src_aeron, channel, 1000, messages)
    src_client.ok(codecs.StopRecordingSubscriptionRequestEncoder, subscription_id=sub_id)
    src_client.wait_signal(RecordingSignal.STOP, src_id)
    # a bounded copy first: up to a message boundary in the middle
    half = 150
    _, probe = replay(src_client, src_aeron, src_id, length=-2, stream_id=1009)
    ends = []
    assembler = FragmentAssembler(lambda b, o, n, h: ends.append(h.position))
    wait_for(lambda: len(ends) >= len(messages), invoke=lambda: probe.poll(assembler, 100), what="probe")
    middle = ends[half - 1]
    replication_id = replicate(dst_client, src_control, src_id, stop_position=middle)
    created = dst_client.wait_signal(RecordingSignal.REPLICATE)
    dst_id = created.recording_id
    assert created.correlation_id == replication_id and created.position == 0
    extended = dst_client.wait_signal(RecordingSignal.EXTEND, dst_id, timeout_s=30)
    # the OK for the replication id naming the recording subscription, sent when it was made (as Aeron does)
    extend_ok = dst_client.wait_response(replication_id, "ControlResponse")
    assert extend_ok.code == ControlResponseCode.OK and extend_ok.relevant_id == extended.subscription_id != -1
    ended = dst_client.wait_signal(RecordingSignal.REPLICATE_END, dst_id)
    assert ended.subscription_id == -1
    # short of the source's stop position: not in sync, so no SYNC (Aeron's ReplicationSession.replicate)
    assert not [m for m in dst_client.messages if m.name == "RecordingSignalEvent" and
                m.correlation_id == replication_id and m.signal == RecordingSignal.SYNC]
    assert dst_client.ok(codecs.StopPositionRequestEncoder, recording_id=dst_id) == middle
    # then the rest onto the same recording
    replicate(dst_client, src_control, src_id, dst_recording_id=dst_id)
    dst_client.wait_signal(RecordingSignal.EXTEND, dst_id, timeout_s=30)
    synced = dst_client.wait_signal(RecordingSignal.SYNC, dst_id, timeout_s=30)
    assert synced.position == stop
    dst_client.wait_signal(RecordingSignal.REPLICATE_END, dst_id)
    assert dst_client.ok(codecs.StopPositionRequestEncoder, recording_id=dst_id) == stop
    listed = dst_client.list_recordings(codecs.ListRecordingRequestEncoder, recording_id=dst_id)[0]
    original = src_client.list_recordings(codecs.ListRecordingRequestEncoder, recording_id=src_id)[0]
    for field in ("start_position", "stop_position", "initial_term_id", "term_buffer_length", "mtu_length",
                  "stream_id", "original_channel", "stripped_channel"):
        assert getattr(listed, field) == getattr(original, field), field
    _, sub = replay(dst_client, dst_aeron, dst_id, length=-2, stream_id=1010)
    assert collect(sub, len(messages)) == messages
    # already in sync: SYNC at once
    replicate(dst_client, src_control, src_id, dst_recording_id=dst_id)
    assert dst_client.wait_signal(RecordingSignal.SYNC, dst_id).position == stop
    dst_client.wait_signal(RecordingSignal.REPLICATE_END, dst_id)
    pub.close()


def test_replication_errors(two_archives):
    src, dst, src_aeron, dst_aeron, src_client, dst_client, src_control = two_archives
    # unknown source recording: the replication fails with an ERROR for the replication id
    replication_id = replicate(dst_client, src_control, 42)
    error = dst_client.wait_response(replication_id, "ControlResponse", timeout_s=30)
    assert error.code == ControlResponseCode.ERROR and error.relevant_id == ArchiveErrorCode.UNKNOWN_RECORDING
    dst_client.wait_signal(RecordingSignal.REPLICATE_END)
    # nobody at the source control channel: a connection failure
    nobody = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
    replication_id = replicate(dst_client, nobody, 0)
    error = dst_client.wait_response(replication_id, "ControlResponse", timeout_s=30)
    assert error.code == ControlResponseCode.ERROR
    assert error.relevant_id == ArchiveErrorCode.REPLICATION_CONNECTION_FAILURE
    unknown = dst_client.call(codecs.StopReplicationRequestEncoder, replication_id=123)
    assert unknown.code == ControlResponseCode.ERROR and unknown.relevant_id == ArchiveErrorCode.UNKNOWN_REPLICATION
    ipc = dst_client.call(codecs.ReplicateRequest2Encoder, src_recording_id=0, dst_recording_id=-1,
                          stop_position=-1, channel_tag_id=-1, subscription_tag_id=-1, src_control_stream_id=10,
                          file_io_max_length=-1, replication_session_id=-1, src_control_channel=src_control,
                          live_destination="aeron:ipc", replication_channel="", encoded_credentials=b"",
                          src_response_channel="")
    assert ipc.code == ControlResponseCode.ERROR and "live merge needs UDP" in ipc.error_message


def test_a_file_io_max_length_below_the_mtu_fails_the_replication_zero_included(two_archives):
    # as Aeron: only -1 (NULL_VALUE) means the recording's own; 0 is a length like any other
    src, dst, src_aeron, dst_aeron, src_client, dst_client, src_control = two_archives
    src_id, sub_id, pub, _ = record(src_client, src_aeron, "aeron:ipc?term-length=64k", 1000, [b"m" * 100] * 5)
    for file_io in (0, 1000):
        replication_id = replicate(dst_client, src_control, src_id, file_io_max_length=file_io)
        error = dst_client.wait_response(replication_id, "ControlResponse", timeout_s=30)
        assert error.code == ControlResponseCode.ERROR and error.relevant_id == ArchiveErrorCode.GENERIC
        assert f"fileIoMaxLength ({file_io}) is less than the recording mtuLength (1408)" in error.error_message
        end = dst_client.wait_signal(RecordingSignal.REPLICATE_END)
        assert end.correlation_id == replication_id
    assert not [m for m in dst_client.messages if m.name == "RecordingSignalEvent"]      # no recording made
    pub.close()


def test_replicating_an_active_recording_follows_it_until_stopped(two_archives):
    src, dst, src_aeron, dst_aeron, src_client, dst_client, src_control = two_archives
    channel = "aeron:ipc?term-length=64k"
    src_id, sub_id, pub, _ = record(src_client, src_aeron, channel, 1000, [b"before" * 50] * 20)
    replication_id = replicate(dst_client, src_control, src_id)
    dst_id = dst_client.wait_signal(RecordingSignal.REPLICATE).recording_id
    dst_client.wait_signal(RecordingSignal.EXTEND, dst_id, timeout_s=30)
    end = None
    for i in range(200):
        message = f"live {i}".encode() * 20
        wait_for(lambda: pub.offer(message) > 0, what="offer")
        end = pub.position
    wait_for(lambda: dst_client.ok(codecs.RecordingPositionRequestEncoder, recording_id=dst_id) >= end,
             timeout_s=30, what="replicated live")
    assert dst_client.ok(codecs.StopReplicationRequestEncoder, replication_id=replication_id) == 0
    dst_client.wait_signal(RecordingSignal.REPLICATE_END, dst_id, timeout_s=30)
    wait_for(lambda: dst_client.ok(codecs.StopPositionRequestEncoder, recording_id=dst_id) == end,
             what="stopped at the replicated position")
    wait_for(lambda: not src.archive.conductor.replay_sessions, timeout_s=30, what="source replay stopped")
    pub.close()
