# SPDX-License-Identifier: Apache-2.0
"""Replication with a merge onto the live stream and tagged replication, between two of our archives on two
drivers in this process: the merge while the publisher keeps publishing (plain and followed by a tagged
subscription), a tagged copy of a stopped recording, and the merge's failures and refusals (a live channel nobody
publishes on, a source archive nobody answers for, a stopped source recording, channels that cannot work)."""
from __future__ import annotations

import bisect

import pytest

from aeron._core.codecs.archive import RecordingSignal
from aeron.archive import ArchiveError, ArchiveErrorCode
from tests.archive.archives import TERM_LENGTH, our_archive, scratch_dir
from tests.archive.replication_scenarios import (LIVE_STREAM_ID, WAIT_S, Follower, check_signals, collect_replay,
                                                 connected, live_channel, replicate_and_record_signals,
                                                 replicate_into_a_recording_already_in_sync,
                                                 replicate_with_live_merge, start_live_recording)
from tests.support import free_port, wait_for

pytestmark = pytest.mark.timeout(120)

# the destination's connect timeout bounds each request to the source and the wait for the live stream to join
DST_CONNECT_TIMEOUT_NS = 3_000_000_000


@pytest.fixture(scope="module")
def base():
    with scratch_dir("rlive") as path:
        yield path


@pytest.fixture(scope="module")
def src(base):
    with our_archive(base, "src", 5711) as handle:
        yield handle


@pytest.fixture(scope="module")
def dst(base):
    with our_archive(base, "dst", 5712, connect_timeout_ns=DST_CONNECT_TIMEOUT_NS) as handle:
        yield handle


def settled(src, dst) -> None:
    """Nothing of a finished replication is left: no replay at the source, no replication or recording
    subscription at the destination."""
    wait_for(lambda: not src.proc.archive.conductor.replay_sessions, WAIT_S, what="source replay stopped")
    wait_for(lambda: not dst.proc.archive.conductor.replication_sessions, WAIT_S, what="replication closed")
    wait_for(lambda: not dst.proc.archive.conductor.recording_subscriptions, WAIT_S, what="recording closed")


@pytest.mark.parametrize("tagged", [False, True], ids=["plain", "tagged"])
def test_replication_merges_onto_the_live_stream_while_the_publisher_keeps_going(src, dst, tagged):
    facts = replicate_with_live_merge(src, dst, tagged=tagged)
    assert 0 < facts["merge_position"] < facts["stop_position"]
    settled(src, dst)


def frame_ends(messages: list[bytes]) -> tuple[list[int], set[int]]:
    """The stream position after each message (one unfragmented frame each; a frame that does not fit in what is
    left of a term goes to the next one, after a padding frame), and the ends of those padding frames (term ends: a
    recording may stop there too)."""
    ends, paddings, position = [], set(), 0
    for data in messages:
        length = (32 + len(data) + 31) & ~31
        if position % TERM_LENGTH + length > TERM_LENGTH:
            position += TERM_LENGTH - position % TERM_LENGTH
            paddings.add(position)
        position += length
        ends.append(position)
    return ends, paddings


def test_merge_onto_a_live_channel_nobody_publishes_on_fails_cleanly(src, dst):
    with connected(src) as s, connected(dst) as d:
        src_id, subscription_id, publication, publisher = start_live_recording(s)
        try:
            publisher.start()
            replication_id = d.archive.replicate(src_id, -1, src.control_stream_id, src.control_channel,
                                                 live_channel())
            with pytest.raises(ArchiveError, match="live destination did not join") as info:
                wait_for(lambda: False, WAIT_S, invoke=d.archive.poll_for_recording_signals, what="the error")
            assert info.value.correlation_id == replication_id
            stop = d.await_signal(RecordingSignal.STOP, replication_id)
            assert d.signals.kinds(replication_id) == [RecordingSignal.REPLICATE, RecordingSignal.EXTEND,
                                                       RecordingSignal.REPLICATE_END, RecordingSignal.STOP]
            dst_id = stop.recording_id
            publisher.stop()
            # what was recorded up to the failure is a clean prefix of the stream
            ends, paddings = frame_ends(publisher.sent)
            assert stop.position in ends or stop.position in paddings
            count = bisect.bisect_right(ends, stop.position)
            assert collect_replay(d, dst_id, stop.position, count) == publisher.sent[:count]
            settled(src, dst)
        finally:
            publisher.stop()
            publication.close()
            s.archive.try_stop_recording_subscription(subscription_id)


def test_merge_requests_that_cannot_work_are_refused(src, dst):
    with connected(src) as s, connected(dst) as d:
        src_id, subscription_id, publication, publisher = start_live_recording(s)
        try:
            for live, reason in (("aeron:ipc", "live merge needs UDP channels"),
                                 ("aeron:udp?endpoint", "invalid live destination")):
                with pytest.raises(ArchiveError, match=reason):
                    d.archive.replicate(src_id, -1, src.control_stream_id, src.control_channel, live)
            with pytest.raises(ArchiveError, match="response channels can't be used with live destinations"):
                d.archive.replicate(src_id, -1, src.control_stream_id, src.control_channel, live_channel(),
                                    replication_channel="aeron:udp?control-mode=response|control=localhost:10000")
            with pytest.raises(ArchiveError, match="response channels can't be used with tagged replication"):
                d.archive.tagged_replicate(src_id, -1, 5, 6, src.control_stream_id, src.control_channel,
                                           replication_channel="aeron:udp?control-mode=response|"
                                                               "control=localhost:10000")
            # a source archive nobody answers for
            nobody = f"aeron:udp?endpoint=localhost:{free_port()}"
            replication_id = d.archive.replicate(src_id, -1, src.control_stream_id, nobody, live_channel())
            with pytest.raises(ArchiveError) as info:
                wait_for(lambda: False, WAIT_S, invoke=d.archive.poll_for_recording_signals, what="the error")
            assert info.value.error_code == ArchiveErrorCode.REPLICATION_CONNECTION_FAILURE
            d.await_signal(RecordingSignal.REPLICATE_END, replication_id)
            assert d.signals.kinds(replication_id) == [RecordingSignal.REPLICATE_END]
            # a source recording that has stopped has no live stream to merge onto
            s.archive.stop_recording_subscription(subscription_id)
            wait_for(lambda: s.signals.of(RecordingSignal.STOP), WAIT_S, invoke=s.archive.poll_for_recording_signals,
                     what="source STOP")
            replication_id = d.archive.replicate(src_id, -1, src.control_stream_id, src.control_channel,
                                                 live_channel())
            with pytest.raises(ArchiveError, match="cannot live merge without active source recording"):
                wait_for(lambda: False, WAIT_S, invoke=d.archive.poll_for_recording_signals, what="the error")
            d.await_signal(RecordingSignal.REPLICATE_END, replication_id)
            assert d.signals.kinds(replication_id) == [RecordingSignal.REPLICATE_END]
            settled(src, dst)
        finally:
            publication.close()
            s.archive.try_stop_recording_subscription(subscription_id)


def test_tagged_replication_of_a_stopped_recording_feeds_a_subscription_naming_the_tags(src, dst):
    with connected(src) as s, connected(dst) as d:
        src_id, subscription_id, publication, publisher = start_live_recording(s)
        publication.close()
        s.archive.stop_recording_subscription(subscription_id)
        wait_for(lambda: s.signals.of(RecordingSignal.STOP), WAIT_S, invoke=s.archive.poll_for_recording_signals,
                 what="source STOP")
        stop_position = s.archive.get_stop_position(src_id)
        channel_tag, subscription_tag = d.aeron.next_correlation_id(), d.aeron.next_correlation_id()
        follower = Follower(d.aeron.add_subscription(
            f"aeron:udp?control-mode=manual|tags={channel_tag},{subscription_tag}", LIVE_STREAM_ID))
        try:
            replication_id = d.archive.tagged_replicate(src_id, -1, channel_tag, subscription_tag,
                                                        src.control_stream_id, src.control_channel)
            stop = d.await_signal(RecordingSignal.STOP, replication_id)
            assert d.signals.kinds(replication_id) == [RecordingSignal.REPLICATE, RecordingSignal.EXTEND,
                                                       RecordingSignal.SYNC, RecordingSignal.REPLICATE_END,
                                                       RecordingSignal.STOP]
            assert stop.position == stop_position == d.archive.get_stop_position(stop.recording_id)
            wait_for(lambda: len(follower.got) >= len(publisher.sent), WAIT_S, interval_s=0.005,
                     what="the tagged subscription got the replication")
            assert follower.got == publisher.sent
            assert collect_replay(d, stop.recording_id, stop_position, len(publisher.sent)) == publisher.sent
            settled(src, dst)
        finally:
            follower.stop()
            follower.subscription.close()


@pytest.mark.parametrize("live, short, stop_by_request", [
    (False, False, False), (False, True, False), (True, True, False), (True, False, True)],
    ids=["stopped-to-its-end", "stopped-short", "live-short", "live-stopped-by-request"])
def test_replication_signals_are_javas(src, dst, live, short, stop_by_request):
    facts = replicate_and_record_signals(src, dst, live=live, short=short, stop_by_request=stop_by_request)
    check_signals(facts)
    if short:
        assert facts["dst_stop"] == facts["half"]
    settled(src, dst)


def test_a_replication_into_a_copy_in_sync_ends_at_once_with_sync(src, dst):
    *signals, facts = replicate_into_a_recording_already_in_sync(src, dst)
    dst_id = facts["dst_recording_id"]
    assert signals == [(RecordingSignal.SYNC, dst_id, -1, facts["src_stop"]),
                       (RecordingSignal.REPLICATE_END, dst_id, -1, -1)]
    settled(src, dst)
