# SPDX-License-Identifier: Apache-2.0
"""Replication over response channels between two of our archives on two drivers: the source's control responses
and the replay both come back over ``control-mode=response`` channels (a whole stopped recording, a bounded part of
one, an active recording followed until the replication is stopped), and the OK the destination sends for the
replication id when it makes the recording subscription; a second replication on the same response channel and
stream is refused (ACTIVE_SUBSCRIPTION), as Aeron refuses it."""
from __future__ import annotations

import os
import pathlib
import shutil
import uuid

import pytest

from aeron._core.codecs.archive import ControlResponseCode, RecordingSignal
from aeron.archive import ArchiveErrorCode, ReplicationParams
from tests.archive.archives import our_archive
from tests.archive.replication_scenarios import (WAIT_S, collect_replay, connected, expected_responses, message_ends,
                                                 replicate_over_response_channels, response_channel,
                                                 second_replication_on_the_same_response_channel,
                                                 start_live_recording)
from tests.support import wait_for

pytestmark = pytest.mark.timeout(120)

@pytest.fixture(scope="module")
def base():
    path = pathlib.Path("/dev/shm" if os.path.isdir("/dev/shm") else "/tmp") / f"aeron-py-rresp-{uuid.uuid4().hex[:8]}"
    path.mkdir()
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


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
