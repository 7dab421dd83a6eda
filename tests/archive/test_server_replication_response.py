# SPDX-License-Identifier: Apache-2.0
"""Replication over response channels between two of our archives on two drivers: the source's control responses
and the replay both come back over ``control-mode=response`` channels (a whole stopped recording, a bounded part of
one, an active recording followed until the replication is stopped; over IPC response channels with both archives on
one driver), and the OK the destination sends for the
replication id when it makes the recording subscription; a second replication on the same response channel and
stream is refused (ACTIVE_SUBSCRIPTION), as Aeron refuses it."""
from __future__ import annotations

import contextlib

import pytest

from aeron import Aeron, Context
from aeron._core.codecs import archive as codecs
from aeron._core.codecs.archive import ControlResponseCode, RecordingSignal
from aeron.archive import ArchiveErrorCode, ReplicationParams
from aeron.archive.archive import Archive
from aeron.driver.media_driver import MediaDriver
from tests.archive.archives import our_archive, scratch_dir
from tests.archive.control_client import ControlClient
from tests.archive.replication_scenarios import (WAIT_S, collect_replay, connected, control_responses,
                                                 expected_responses, message_ends,
                                                 replicate_over_response_channels, response_channel,
                                                 second_replication_on_the_same_response_channel,
                                                 start_live_recording)
from tests.archive.test_server import archive_context, collect, record, replay
from tests.support import driver_context, wait_for

IPC = "aeron:ipc?term-length=64k"

pytestmark = pytest.mark.timeout(120)

@pytest.fixture(scope="module")
def base():
    with scratch_dir("rresp") as path:
        yield path


@pytest.fixture(scope="module")
def src(base):
    with our_archive(base, "src", 5721) as handle:
        yield handle


@pytest.fixture(scope="module")
def dst(base):
    with our_archive(base, "dst", 5722) as handle:
        yield handle


def settled(src, dst) -> None:
    """Nothing of a finished replication is left on either side."""
    wait_for(lambda: not src.proc.archive.conductor.replay_sessions, WAIT_S, what="source replay ended")
    wait_for(lambda: not dst.proc.archive.conductor.replication_sessions, WAIT_S, what="replication closed")
    wait_for(lambda: not dst.proc.archive.conductor.recording_subscriptions, WAIT_S, what="recording closed")


@pytest.fixture
def seen(src, dst, monkeypatch):
    """The response channels control sessions at the source answer on, the channels the destination's recording
    subscriptions and the source's replays use, and whether each replay request came with a token on a connection
    of its own."""
    seen: dict[str, list] = {"recording": [], "replay": [], "connect": []}
    dst_conductor = dst.proc.archive.conductor
    src_conductor = src.proc.archive.conductor
    subscribe, on_replay = dst_conductor.subscribe_for_replication, src_conductor.on_replay
    on_auth_connect = src_conductor.on_auth_connect

    def spy_connect(image, correlation_id, response_stream_id, version, response_channel, *rest):
        seen["connect"].append(response_channel)
        return on_auth_connect(image, correlation_id, response_stream_id, version, response_channel, *rest)

    def spy_subscribe(session, replication_id, stream_id, channel, dst_recording_id):
        seen["recording"].append(channel)
        return subscribe(session, replication_id, stream_id, channel, dst_recording_id)

    def spy_replay(session, correlation_id, d, replay_image=None):
        seen["replay"].append((d.replay_channel, d.replay_token != -1, replay_image is not None))
        return on_replay(session, correlation_id, d, replay_image)
    monkeypatch.setattr(dst_conductor, "subscribe_for_replication", spy_subscribe)
    monkeypatch.setattr(src_conductor, "on_replay", spy_replay)
    monkeypatch.setattr(src_conductor, "on_auth_connect", spy_connect)
    return seen


def check_response_path(seen: dict, response_control: bool = True, response_replay: bool = True) -> None:
    # the replication's control session at the source answers over a response channel (the test's own client of
    # the source connects first, with a plain one)
    assert ["control-mode=response" in channel for channel in seen["connect"]] == [False, response_control]
    # the recording subscription is the response subscription (no session id), and the replay request came with
    # a token on its own connection, naming that subscription
    [recording] = seen["recording"]
    [(replay_channel, has_token, own_connection)] = seen["replay"]
    if response_replay:
        assert "control-mode=response" in recording and "session-id" not in recording, recording
        assert "control-mode=response" in replay_channel and "response-correlation-id=" in replay_channel
        assert has_token and own_connection
    else:
        assert "control-mode" not in recording and "session-id=" in recording, recording
        assert "control-mode" not in replay_channel and not has_token and not own_connection


@pytest.mark.parametrize("response_control,response_replay", [(True, True), (True, False), (False, True)],
                         ids=["both", "control-only", "replay-only"])
def test_a_stopped_recording_replicated_over_response_channels(src, dst, seen, response_control, response_replay):
    facts = replicate_over_response_channels(src, dst, response_control=response_control,
                                             response_replay=response_replay)
    check_response_path(seen, response_control, response_replay)
    assert facts["responses"] == expected_responses(facts, facts["stop_position"])
    # the OK names the recording subscription the EXTEND signal names
    assert facts["extend_ok"][0].relevant_id == facts["extend"][0].subscription_id
    assert facts["messages"] == 301
    settled(src, dst)


def test_a_bounded_replication_over_response_channels_stops_at_its_position(src, dst, seen):
    count = 200
    middle = message_ends([b"x" * (28 + i % 200 + 4) for i in range(count)])[count // 2 - 1]
    facts = replicate_over_response_channels(src, dst, count=count, stop_position=middle)
    assert facts["responses"] == expected_responses(facts, middle)
    assert facts["messages"] == count // 2
    check_response_path(seen)
    settled(src, dst)


def test_an_active_recording_followed_over_response_channels_until_the_replication_stops(src, dst, seen):
    with connected(src) as s, connected(dst) as d:
        src_id, subscription_id, publication, publisher = start_live_recording(s)
        try:
            params = ReplicationParams(replication_channel=response_channel(),
                                       src_response_channel=response_channel())
            replication_id = d.archive.replicate(src_id, -1, src.control_stream_id, src.control_channel,
                                                 params=params)
            dst_id = d.await_signal(RecordingSignal.EXTEND, replication_id).recording_id
            replication = dst.proc.archive.conductor.replication_sessions[replication_id]
            publisher.start()
            publisher.wait_for_more(100)
            publisher.stop()
            end = publication.position
            wait_for(lambda: d.archive.get_recording_position(dst_id) >= end, WAIT_S, interval_s=0.005,
                     what="the replication follows the live recording")
            d.archive.stop_replication(replication_id)
            d.await_signal(RecordingSignal.REPLICATE_END, replication_id)
            assert d.signals.kinds(replication_id)[:2] == [RecordingSignal.REPLICATE, RecordingSignal.EXTEND]
            settled(src, dst)
            # the replay's request publication went with the replication
            assert replication.response_publication is None
            # the recording stops once its subscription has gone (after REPLICATE_END)
            assert d.await_signal(RecordingSignal.STOP, replication_id).position == end
            assert d.archive.get_stop_position(dst_id) == end
            assert collect_replay(d, dst_id, end, len(publisher.sent)) == publisher.sent
        finally:
            publisher.stop()
            publication.close()
            s.archive.try_stop_recording_subscription(subscription_id)
    check_response_path(seen)


def test_a_second_replication_on_the_same_response_channel_is_refused(src, dst):
    responses = second_replication_on_the_same_response_channel(src, dst)
    assert [r[:2] for r in responses] == [("RecordingSignalEvent", RecordingSignal.REPLICATE),
                                          ("ControlResponse", ControlResponseCode.ERROR),
                                          ("RecordingSignalEvent", RecordingSignal.REPLICATE_END)]
    assert responses[1][2] == ArchiveErrorCode.ACTIVE_SUBSCRIPTION
    settled(src, dst)


@pytest.fixture
def two_archives_on_one_driver(shm_dir):
    """A driver with two of our archives on it, each reached over IPC on a control stream of its own."""
    with contextlib.ExitStack() as stack:
        driver = stack.enter_context(MediaDriver.launch(driver_context(aeron_dir=str(shm_dir / "driver"))))
        archives = [stack.enter_context(contextlib.closing(Archive.launch(archive_context(
            shm_dir / name, aeron_dir=driver.aeron_dir, local_control_stream_id=stream_id, archive_id=archive_id,
            replication_channel="aeron:ipc")))) for name, stream_id, archive_id in (("src", 10, 1), ("dst", 11, 2))]
        aeron = stack.enter_context(Aeron.connect(Context(aeron_dir=driver.aeron_dir)))
        clients = [ControlClient(aeron, IPC, stream_id, IPC, 20 + stream_id) for stream_id in (10, 11)]
        for client in clients:
            assert client.connect().code == ControlResponseCode.OK
        yield archives, aeron, clients


def test_replication_over_ipc_response_channels(two_archives_on_one_driver):
    # both archives on one driver: the source's control responses and the replay come back over IPC response
    # channels
    (src, dst), aeron, (src_client, dst_client) = two_archives_on_one_driver
    messages = [bytes([i % 256]) * (10 + (i * 97) % 3000) for i in range(200)]
    src_id, sub_id, pub, stop = record(src_client, aeron, IPC, 1000, messages)
    src_client.ok(codecs.StopRecordingSubscriptionRequestEncoder, subscription_id=sub_id)
    src_client.wait_signal(RecordingSignal.STOP, src_id)
    pub.close()
    replication_id = dst_client.ok(
        codecs.ReplicateRequest2Encoder, src_recording_id=src_id, dst_recording_id=-1, stop_position=-1,
        channel_tag_id=-1, subscription_tag_id=-1, src_control_stream_id=10, file_io_max_length=-1,
        replication_session_id=-1, src_control_channel=IPC, live_destination="",
        replication_channel="aeron:ipc?control-mode=response", encoded_credentials=b"",
        src_response_channel="aeron:ipc?control-mode=response|term-length=64k")
    dst_client._wait(lambda: ("RecordingSignalEvent", RecordingSignal.STOP, stop) in
                     control_responses(dst_client, replication_id), "replicated and stopped")
    responses = control_responses(dst_client, replication_id)
    subscription_id = responses[1][2]
    assert responses == [("RecordingSignalEvent", RecordingSignal.REPLICATE, 0),
                         ("ControlResponse", ControlResponseCode.OK, subscription_id),
                         ("RecordingSignalEvent", RecordingSignal.EXTEND, 0),
                         ("RecordingSignalEvent", RecordingSignal.SYNC, stop),
                         ("RecordingSignalEvent", RecordingSignal.REPLICATE_END, -1),
                         ("RecordingSignalEvent", RecordingSignal.STOP, stop)]
    dst_id = [m for m in dst_client.messages if m.name == "RecordingSignalEvent" and
              m.correlation_id == replication_id][0].recording_id
    _, sub = replay(dst_client, aeron, dst_id, length=-2, stream_id=1010)
    assert collect(sub, len(messages)) == messages
    wait_for(lambda: not src.conductor.replay_sessions and not dst.conductor.replication_sessions, WAIT_S,
             what="replication closed")
