# SPDX-License-Identifier: Apache-2.0
"""aeron.aio.archive against our archive and the official Java archive (that one needs AERON_JAVA_CP and skips
without it): connect, record, signals and events as async streams, a replay as an async iterator, typed errors, on
asyncio and uvloop."""
from __future__ import annotations

import asyncio
import dataclasses
import os
import pathlib
import shutil
import uuid

import pytest

import aeron.aio.archive
from aeron._core.codecs.archive import RecordingSignal
from aeron.archive import SourceLocation
from aeron.archive import errors as E
from aeron.archive.client import RecordingStarted, RecordingStopped
from tests.archive.archives import SEGMENT_LENGTH, java_classpath, our_archive, start_java_archive, stop_archive
from tests.support import free_port

STREAM_ID = 1101


@pytest.fixture(scope="module", params=["ours", "java"])
def archive_handle(request):
    """An archive with id 5150: ours (in this process) or the official Java one."""
    if request.param == "java":
        java_classpath()
    base = pathlib.Path("/dev/shm" if os.path.isdir("/dev/shm") else "/tmp") / f"aeron-py-aarc-{uuid.uuid4().hex[:8]}"
    base.mkdir()
    try:
        if request.param == "ours":
            with our_archive(base, "aio", 5150) as handle:
                yield handle
        else:
            handle = start_java_archive(base, "aio", archive_id=5150)
            try:
                yield handle
            finally:
                stop_archive(handle)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def settings(handle) -> dict:
    return dict(control_request_channel=handle.control_channel,
                control_response_channel="aeron:udp?endpoint=localhost:0",
                recording_events_channel=handle.events_channel, aeron_dir=handle.aeron_dir, environ={})


async def offer_all(publication, messages) -> None:
    for message in messages:
        await publication.offer(message, timeout=10)


async def test_record_then_replay_as_an_async_iterator(archive_handle, loop_errors):
    messages = [bytes([i]) * (50 + i) for i in range(30)] + [bytes(range(256)) * 12]   # the last one fragmented
    async with aeron.aio.archive.connect(**settings(archive_handle)) as archive:
        assert archive.archive_id == 5150
        events = archive.recording_events()
        await events.start()
        channel = f"aeron:udp?endpoint=localhost:{free_port()}"
        subscription_id = await archive.start_recording(channel, STREAM_ID, SourceLocation.REMOTE)
        publication = await archive.client.add_exclusive_publication(channel, STREAM_ID, timeout=10)
        start = None
        async for signal in archive.recording_signals(timeout=20):
            if signal.signal == RecordingSignal.START:
                start = signal
                break
        assert start is not None and start.subscription_id == subscription_id
        recording_id = start.recording_id
        started = await asyncio.wait_for(anext_matching(events, RecordingStarted, recording_id), 20)
        assert started.stream_id == STREAM_ID and started.channel == channel
        await offer_all(publication, messages)
        stop = publication.position
        while await archive.get_recording_position(recording_id) < stop:
            await asyncio.sleep(0.01)
        await archive.stop_recording(channel, STREAM_ID)
        stopped = await asyncio.wait_for(anext_matching(events, RecordingStopped, recording_id), 20)
        assert stopped.stop_position == stop
        await events.close()
        descriptor = await archive.list_recording(recording_id)
        assert descriptor is not None and descriptor.stop_position == stop
        assert await archive.list_recording(10**6) is None
        got = []
        async for message in archive.replay(recording_id, position=0, length=stop):
            got.append(bytes(message))
        assert got == messages
        half = []
        async with archive.replay(recording_id, position=0) as replay:      # -2: to the recording's end
            async for message in replay:
                half.append(message.copy())
                if len(half) == 5:
                    break
        assert [bytes(m) for m in half] == messages[:5]
        response_channel = f"aeron:udp?control-mode=response|control=localhost:{free_port()}"
        over_response = [bytes(m) async for m in archive.replay(recording_id, position=0, length=stop,
                                                                replay_channel=response_channel)]
        assert over_response == messages
        publication.close()


async def anext_matching(events, kind, recording_id):
    async for event in events:
        if isinstance(event, kind) and event.recording_id == recording_id:
            return event
    raise AssertionError("events ended")


async def test_errors_are_typed_and_listing_works(archive_handle, loop_errors):
    async with aeron.aio.archive.connect(**settings(archive_handle)) as archive:
        with pytest.raises(E.UnknownRecordingError) as info:
            await archive.get_stop_position(10**6)
        assert info.value.error_code == E.ArchiveErrorCode.UNKNOWN_RECORDING
        await archive.stop_replay(1 << 40)         # Aeron 1.53 answers OK for an unknown replay
        assert await archive.try_stop_replication(10**6) is False
        assert await archive.try_stop_recording("aeron:udp?endpoint=localhost:9", STREAM_ID) is False
        with pytest.raises(E.UnknownReplicationError):
            await archive.stop_replication(10**6)
        with pytest.raises(E.UnknownSubscriptionError):
            await archive.stop_recording("aeron:udp?endpoint=localhost:9", STREAM_ID)
        recordings = await archive.list_recordings(0, 100)
        assert all(r.control_session_id == archive.control_session_id for r in recordings)
        assert await archive.find_last_matching_recording(0, "no-such", STREAM_ID, 0) == -1
        # as Java's ArchiveConductor: every position query checks the id first
        for query in (archive.get_recording_position, archive.get_start_position, archive.get_max_recorded_position):
            with pytest.raises(E.UnknownRecordingError, match="unknown recording id: 1000000"):
                await query(10**6)
        with pytest.raises(E.UnknownRecordingError, match="minRecordingId=-1 < 0"):
            await archive.find_last_matching_recording(-1, "", STREAM_ID, 0)


def uncorrelated(descriptors):
    # each answer carries its own request's correlation id; the rest is the same entry
    return [dataclasses.replace(d, correlation_id=0) for d in descriptors]


async def test_listings_in_list_and_consumer_forms(archive_handle, loop_errors):
    async with aeron.aio.archive.connect(**settings(archive_handle)) as archive:
        channel = f"aeron:udp?endpoint=localhost:{free_port()}"
        subscription_id = await archive.start_recording(channel, STREAM_ID, SourceLocation.REMOTE)
        publication = await archive.client.add_exclusive_publication(channel, STREAM_ID, timeout=10)
        async for signal in archive.recording_signals(timeout=20):
            if signal.signal == RecordingSignal.START:
                recording_id = signal.recording_id
                break
        listed = await archive.list_recordings(0, 1000)
        assert recording_id in [d.recording_id for d in listed]
        given = []
        assert await archive.list_recordings(0, 1000, given.append) == len(listed)
        assert uncorrelated(given) == uncorrelated(listed)
        port = channel.rsplit(":", 1)[1]
        for_uri = await archive.list_recordings_for_uri(0, 10, f":{port}", STREAM_ID)
        assert [d.recording_id for d in for_uri] == [recording_id]
        given = []
        assert await archive.list_recordings_for_uri(0, 10, f":{port}", STREAM_ID, given.append) == 1
        assert uncorrelated(given) == uncorrelated(for_uri)
        one = []
        assert await archive.list_recording(recording_id, one.append) == 1
        assert uncorrelated(one) == uncorrelated(for_uri)
        assert await archive.list_recording(10**6, one.append) == 0
        subs = await archive.list_recording_subscriptions(0, 10, channel, STREAM_ID, True)
        assert [s.subscription_id for s in subs] == [subscription_id]
        given = []
        assert await archive.list_recording_subscriptions(0, 10, channel, STREAM_ID, True, given.append) == 1
        assert uncorrelated(given) == uncorrelated(subs)
        await archive.stop_recording_subscription(subscription_id)
        publication.close()


async def test_a_shared_async_client_and_concurrent_requests(archive_handle, loop_errors):
    async with aeron.aio.connect(aeron_dir=archive_handle.aeron_dir) as client:
        async with aeron.aio.archive.connect(client=client, **settings(archive_handle)) as archive:
            results = await asyncio.gather(*(archive.get_start_position(10**6 + i) for i in range(5)),
                                           return_exceptions=True)
            assert all(isinstance(r, E.UnknownRecordingError) for r in results)
        assert not client.is_closed


@pytest.fixture(scope="module")
def our_handle():
    """Our archive only: the Java archive replays stale bytes and goes silent where a segment lost data (see
    tests/archive/test_server_client_suite.py)."""
    base = pathlib.Path("/dev/shm" if os.path.isdir("/dev/shm") else "/tmp") / f"aeron-py-aarc-{uuid.uuid4().hex[:8]}"
    base.mkdir()
    try:
        with our_archive(base, "aio-ours", 5151) as handle:
            yield handle
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("cut", ["truncated", "zeroed"])
async def test_replay_stream_raises_when_the_archive_ends_the_replay_with_an_error(our_handle, loop_errors, cut):
    messages = [i.to_bytes(4, "little") * 23 for i in range(3 * SEGMENT_LENGTH // 128 + 100)]   # 128-byte frames
    async with aeron.aio.archive.connect(**settings(our_handle)) as archive:
        channel = f"aeron:udp?endpoint=localhost:{free_port()}"
        await archive.start_recording(channel, STREAM_ID, SourceLocation.REMOTE)
        publication = await archive.client.add_exclusive_publication(channel, STREAM_ID, timeout=10)
        async for signal in archive.recording_signals(timeout=20):
            if signal.signal == RecordingSignal.START:
                recording_id = signal.recording_id
                break
        await offer_all(publication, messages)
        stop = publication.position
        while await archive.get_recording_position(recording_id) < stop:
            await asyncio.sleep(0.01)
        await archive.stop_recording(channel, STREAM_ID)
        publication.close()
        base = stop - stop % SEGMENT_LENGTH
        path = os.path.join(our_handle.archive_dir, f"{recording_id}-{base}.rec")
        if cut == "truncated":
            os.truncate(path, 1000)             # the catalog still says `stop`
            lost_from = base
        else:
            with open(path, "r+b") as f:
                f.seek(4096)
                f.write(bytes(4096))
            lost_from = base + 4096
        got = []
        with pytest.raises(E.ArchiveError) as info:
            async for message in archive.replay(recording_id, position=0, length=stop):
                got.append(bytes(message))
        assert got == messages[:lost_from // 128]
        assert path in str(info.value) and f"position={lost_from}" in str(info.value)
        # a replay that ends well still just stops
        assert len([m async for m in archive.replay(recording_id, position=0, length=base)]) == base // 128
