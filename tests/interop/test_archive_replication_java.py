# SPDX-License-Identifier: Apache-2.0
"""Replication across our archive and the official Java ArchivingMediaDriver, both ways: with a merge onto the live
stream while the publisher keeps publishing (signals in order, every message exactly once in the destination
recording, the recording going on from the live stream after the merge), and of a stopped recording over response
channels (every answer for the replication id, the OK naming the recording subscription among them, as the other
side gives it; a second replication on the same response channel refused on both), and the signals of replications
of stopped and live recordings, to their end, short of it and stopped by request (SYNC only when the copy reached
the source's stop position; REPLICATE_END naming no subscription), the Java destination giving the reference. The scenarios are
tests/archive/replication_scenarios.py's. Needs AERON_JAVA_CP (skips cleanly without it)."""
from __future__ import annotations


import pytest

from aeron._core.codecs.archive import ControlResponseCode, RecordingSignal
from aeron.archive import ArchiveErrorCode
from tests.archive.archives import java_classpath, our_archive, scratch_dir, start_java_archive, stop_archive
from tests.archive.replication_scenarios import (WAIT_S, check_signals, expected_responses,
                                                 replicate_and_record_signals,
                                                 replicate_into_a_recording_already_in_sync,
                                                 replicate_over_response_channels, replicate_with_live_merge,
                                                 second_replication_on_the_same_response_channel)
from tests.support import wait_for

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def base():
    java_classpath()
    with scratch_dir("jrepl") as path:
        yield path


@pytest.fixture(scope="module")
def java(base):
    handle = start_java_archive(base, "java", archive_id=6711)
    try:
        yield handle
    finally:
        stop_archive(handle)


@pytest.fixture(scope="module")
def ours(base):
    with our_archive(base, "ours", 6712) as handle:
        yield handle


@pytest.mark.parametrize("tagged", [False, True], ids=["plain", "tagged"])
def test_java_source_replicated_into_our_archive_with_live_merge(java, ours, tagged):
    replicate_with_live_merge(java, ours, tagged=tagged)
    conductor = ours.proc.archive.conductor
    wait_for(lambda: not conductor.replication_sessions and not conductor.recording_subscriptions, WAIT_S,
             what="our replication closed")


@pytest.mark.parametrize("tagged", [False, True], ids=["plain", "tagged"])
def test_our_source_replicated_into_the_java_archive_with_live_merge(ours, java, tagged):
    replicate_with_live_merge(ours, java, tagged=tagged)
    # the Java archive stopped the replay it merged away from
    wait_for(lambda: not ours.proc.archive.conductor.replay_sessions, WAIT_S, what="our replay stopped")


RESPONSE_MODES = pytest.mark.parametrize("response_control,response_replay", [(True, True), (True, False),
                                                                           (False, True)],
                                         ids=["both", "control-only", "replay-only"])


@RESPONSE_MODES
def test_java_source_replicated_into_our_archive_over_response_channels(java, ours, response_control,
                                                                        response_replay):
    facts = replicate_over_response_channels(java, ours, response_control=response_control,
                                             response_replay=response_replay)
    assert facts["responses"] == expected_responses(facts, facts["stop_position"])
    conductor = ours.proc.archive.conductor
    wait_for(lambda: not conductor.replication_sessions and not conductor.recording_subscriptions, WAIT_S,
             what="our replication closed")


# not replay-only: the Java destination's replay request publication keeps the session-id of its plain control
# connection's and its driver refuses it ("existing publication has clashing sessionId"), whatever the source
@pytest.mark.parametrize("response_control,response_replay", [(True, True), (True, False)],
                         ids=["both", "control-only"])
def test_our_source_replicated_into_the_java_archive_over_response_channels(ours, java, response_control,
                                                                            response_replay):
    # the Java destination's answers for the replication id, the OK naming its recording subscription among them,
    # are those ours gives (tests/archive/test_server_replication_response.py)
    facts = replicate_over_response_channels(ours, java, response_control=response_control,
                                             response_replay=response_replay)
    assert facts["responses"] == expected_responses(facts, facts["stop_position"])
    assert facts["extend_ok"][0].relevant_id == facts["extend"][0].subscription_id
    wait_for(lambda: not ours.proc.archive.conductor.replay_sessions, WAIT_S, what="our replay ended")


@pytest.mark.parametrize("direction", ["java-to-ours", "ours-to-java"])
def test_a_second_replication_on_the_same_response_channel_is_refused_on_both(java, ours, direction):
    src, dst = (java, ours) if direction == "java-to-ours" else (ours, java)
    responses = second_replication_on_the_same_response_channel(src, dst)
    assert [r[:2] for r in responses] == [("RecordingSignalEvent", RecordingSignal.REPLICATE),
                                          ("ControlResponse", ControlResponseCode.ERROR),
                                          ("RecordingSignalEvent", RecordingSignal.REPLICATE_END)]
    assert responses[1][2] == ArchiveErrorCode.ACTIVE_SUBSCRIPTION


@pytest.mark.parametrize("direction", ["java-to-ours", "ours-to-java"])
@pytest.mark.parametrize("live, short, stop_by_request", [
    (False, False, False), (False, True, False), (True, True, False), (True, False, True)],
    ids=["stopped-to-its-end", "stopped-short", "live-short", "live-stopped-by-request"])
def test_replication_signals_as_java_sends_them(java, ours, direction, live, short, stop_by_request):
    # into the Java archive, it is the reference: check_signals holds it to the sequence we send
    src, dst = (java, ours) if direction == "java-to-ours" else (ours, java)
    facts = replicate_and_record_signals(src, dst, live=live, short=short, stop_by_request=stop_by_request)
    check_signals(facts)
    if short:
        assert facts["dst_stop"] == facts["half"]


@pytest.mark.parametrize("direction", ["java-to-ours", "ours-to-java"])
def test_a_replication_into_a_copy_in_sync_ends_at_once_with_sync(java, ours, direction):
    src, dst = (java, ours) if direction == "java-to-ours" else (ours, java)
    *signals, facts = replicate_into_a_recording_already_in_sync(src, dst)
    dst_id = facts["dst_recording_id"]
    assert signals == [(RecordingSignal.SYNC, dst_id, -1, facts["src_stop"]),
                       (RecordingSignal.REPLICATE_END, dst_id, -1, -1)]
