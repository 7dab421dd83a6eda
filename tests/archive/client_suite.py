# SPDX-License-Identifier: Apache-2.0
"""The archive client against a running archive: every request, its answer, the typed errors, signals, events,
replays (plain, bounded, into a subscription), segments, ReplayMerge and replication.

A test module imports these tests (``from tests.archive.client_suite import *``) and defines the ``archive``
fixture (an :class:`tests.archive.archives.ArchiveHandle`) and ``second_archive`` (another one, for replication):
tests/interop/test_archive_client_java.py runs them against the official Java archive."""
from __future__ import annotations

import dataclasses
import threading
import time
from typing import Any

import pytest

from aeron._core.codecs.archive import RecordingSignal
from aeron._core.fragment_assembler import FragmentAssembler
from aeron.archive import AeronArchive, ArchiveError, ArchiveErrorCode, ReplayParams, SourceLocation
from aeron.client import ControlledPollAction
from aeron.archive import errors as E
from aeron.archive.client import (REPLAY_ALL_AND_STOP, RecordingDescriptor, RecordingEventsAdapter, RecordingProgress,
                                  RecordingStarted, RecordingStopped, State, replay_image_session_id)
from aeron.archive.client.replay_merge import ReplayMerge
from aeron.archive.client.persistent_subscription import (FROM_LIVE, FROM_START, PersistentSubscription,
                                                          PersistentSubscriptionError, PersistentSubscriptionListener)
from aeron.archive.client.persistent_subscription import Context as PersistentContext
from aeron.archive.client.persistent_subscription import State as PersistentState
from aeron.common import errors as common_errors
from aeron.common.channel_uri import ChannelUri
from tests.archive.archives import SEGMENT_LENGTH, TERM_LENGTH
from tests.support import free_port, wait_for

STREAM_ID = 1001
WAIT_S = 20.0


class Signals:
    """A recording signal consumer that keeps what it got."""

    def __init__(self) -> None:
        self.events: list[Any] = []

    def __call__(self, event: Any) -> None:
        self.events.append(event)

    def of(self, signal: RecordingSignal) -> list[Any]:
        return [e for e in self.events if e.signal == signal]


@pytest.fixture
def aeron(archive):
    client = archive.connect_aeron()
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def signals():
    return Signals()


@pytest.fixture
def client(archive, aeron, signals):
    ctx = archive.context(aeron=aeron)
    ctx.recording_signal_consumer = signals
    arc = AeronArchive.connect(ctx)
    try:
        yield arc
    finally:
        arc.close()


def udp_channel() -> str:
    return f"aeron:udp?endpoint=localhost:{free_port()}"


def payloads(count: int, size: int = 100) -> list[bytes]:
    return [bytes([(i + j) & 0xFF for j in range(size)]) + i.to_bytes(4, "little") for i in range(count)]


def offer_all(publication: Any, messages: list[bytes], client: AeronArchive | None = None) -> None:
    for message in messages:
        deadline = time.monotonic() + WAIT_S
        while publication.offer(message) < 0:
            if time.monotonic() > deadline:
                raise AssertionError("offer kept failing")
            if client is not None:
                client.poll_for_recording_signals()
            time.sleep(0.0005)


def await_signal(client: AeronArchive, signals: Signals, signal: RecordingSignal, count: int = 1) -> list[Any]:
    return wait_for(lambda: len(signals.of(signal)) >= count and signals.of(signal), WAIT_S,
                    invoke=client.poll_for_recording_signals, what=f"{signal.name} signal")


def record(client: AeronArchive, aeron: Any, signals: Signals, messages: list[bytes],
           channel: str | None = None, source: SourceLocation = SourceLocation.REMOTE) -> tuple[int, int, Any]:
    """Record ``messages`` on a new UDP channel; returns (recording id, stop position, publication)."""
    channel = channel or udp_channel()
    subscription_id = client.start_recording(channel, STREAM_ID, source)
    publication = aeron.add_exclusive_publication(channel, STREAM_ID)
    start = wait_for(lambda: [e for e in signals.of(RecordingSignal.START) if e.subscription_id == subscription_id],
                     WAIT_S, invoke=client.poll_for_recording_signals, what="START signal")[0]
    offer_all(publication, messages, client)
    recording_id = start.recording_id
    wait_for(lambda: client.get_recording_position(recording_id) >= publication.position, WAIT_S,
             invoke=lambda: time.sleep(0.005), what="recorded position")
    return recording_id, publication.position, publication


def collect(subscription: Any, expected: int, timeout: float = WAIT_S) -> list[bytes]:
    got: list[bytes] = []
    assembler = FragmentAssembler(lambda buf, off, length, hdr: got.append(buf.get_bytes(off, length)))
    wait_for(lambda: len(got) >= expected, timeout, invoke=lambda: subscription.poll(assembler, 50) or
             time.sleep(0.001), what=f"{expected} messages")
    return got


# -- session ---------------------------------------------------------------------------------------------------
def test_connect_gives_session_and_archive_id(client, archive):
    assert client.archive_id == archive.archive_id
    assert client.control_session_id >= 0
    assert client.state is State.CONNECTED


def test_close_is_idempotent_and_later_calls_raise(archive, aeron):
    arc = AeronArchive.connect(archive.context(aeron=aeron))
    arc.close()
    arc.close()
    assert arc.state is State.CLOSED
    with pytest.raises(ArchiveError, match="client is closed"):
        arc.get_start_position(0)


def test_two_sessions_are_independent(archive, aeron):
    with AeronArchive.connect(archive.context(aeron=aeron)) as a, \
            AeronArchive.connect(archive.context(aeron=aeron)) as b:
        assert a.control_session_id != b.control_session_id
        assert a.archive_id == b.archive_id


# -- recording, positions, listing ----------------------------------------------------------------------------
def test_record_then_replay_byte_for_byte_with_fragmented_messages(client, aeron, signals):
    messages = payloads(40) + [bytes(range(256)) * 20]          # 5 KiB: fragmented at the 1408 MTU
    channel = udp_channel()
    recording_id, stop, publication = record(client, aeron, signals, messages, channel)
    assert client.get_start_position(recording_id) == 0
    assert client.get_stop_position(recording_id) == -1           # still active
    assert client.get_max_recorded_position(recording_id) == stop
    client.stop_recording(channel, STREAM_ID)
    stopped = await_signal(client, signals, RecordingSignal.STOP)[-1]
    assert stopped.recording_id == recording_id and stopped.position == stop
    assert client.get_recording_position(recording_id) == -1
    assert client.get_stop_position(recording_id) == stop
    assert client.get_max_recorded_position(recording_id) == stop
    replay_channel = udp_channel()
    subscription = client.replay(recording_id, replay_channel, 2002, 0, stop)
    try:
        assert collect(subscription, len(messages)) == messages
        session_id = int(ChannelUri.parse(subscription.channel).get("session-id"))
        assert all(image.session_id == session_id for image in subscription.images)
    finally:
        subscription.close()
    publication.close()


def test_list_recording_descriptor_fields(client, aeron, signals):
    channel = udp_channel()
    recording_id, stop, publication = record(client, aeron, signals, payloads(5), channel)
    client.stop_recording(channel, STREAM_ID)
    await_signal(client, signals, RecordingSignal.STOP)
    got: list[RecordingDescriptor] = []
    assert client.list_recording(recording_id, got.append) == 1
    d = got[0]
    assert (d.recording_id, d.start_position, d.stop_position, d.stream_id) == (recording_id, 0, stop, STREAM_ID)
    assert d.session_id == publication.session_id
    assert d.initial_term_id == publication.initial_term_id
    assert d.term_buffer_length == publication.term_buffer_length
    assert d.control_session_id == client.control_session_id
    assert d.correlation_id == client.last_correlation_id
    assert d.original_channel == channel and d.stripped_channel == channel
    assert d.start_timestamp > 0 and d.stop_timestamp >= d.start_timestamp
    assert d.mtu_length == 1408 and d.segment_file_length >= d.term_buffer_length
    assert "localhost" in d.source_identity or "127.0.0.1" in d.source_identity
    assert client.list_recording(recording_id + 1000, got.append) == 0
    publication.close()


def uncorrelated(descriptors: list[Any]) -> list[Any]:
    # each answer carries its own request's correlation id; the rest is the same entry
    return [dataclasses.replace(d, correlation_id=0) for d in descriptors]


def test_list_recordings_and_for_uri_and_find_last_matching(client, aeron, signals):
    channels = [udp_channel(), udp_channel()]
    ids = []
    for channel in channels:
        ids.append(record(client, aeron, signals, payloads(3), channel)[0])
        client.stop_recording(channel, STREAM_ID)
    # stop_recording is answered when the stop is asked for; the catalog has the stop once the STOP signal came
    await_signal(client, signals, RecordingSignal.STOP, count=2)
    seen: list[RecordingDescriptor] = []
    assert client.list_recordings(0, 100, seen.append) == len(seen) >= 2
    assert [d.recording_id for d in seen][-2:] == ids
    assert [d.recording_id for d in seen] == sorted(d.recording_id for d in seen)
    port = ChannelUri.parse(channels[1]).endpoint.rsplit(":", 1)[1]
    for_uri: list[RecordingDescriptor] = []
    assert client.list_recordings_for_uri(0, 10, f":{port}", STREAM_ID, for_uri.append) == 1
    assert for_uri[0].recording_id == ids[1]
    assert client.list_recordings_for_uri(0, 10, f":{port}", STREAM_ID + 1, for_uri.append) == 0
    assert client.find_last_matching_recording(0, "localhost", STREAM_ID, for_uri[0].session_id) == ids[1]
    assert client.find_last_matching_recording(0, "no-such-host", STREAM_ID, for_uri[0].session_id) == -1
    limited: list[RecordingDescriptor] = []
    assert client.list_recordings(ids[0], 1, limited.append) == 1 and limited[0].recording_id == ids[0]
    # the list form (as aeron.aio.archive's): the same descriptors, in order
    assert uncorrelated(client.list_recordings(0, 100)) == uncorrelated(seen)
    assert uncorrelated(client.list_recordings(ids[0], 1)) == uncorrelated(limited)
    assert uncorrelated(client.list_recordings_for_uri(0, 10, f":{port}", STREAM_ID)) == uncorrelated(for_uri)
    assert client.list_recordings_for_uri(0, 10, f":{port}", STREAM_ID + 1) == []
    one = client.list_recording(ids[1])
    assert one is not None and uncorrelated([one]) == uncorrelated(for_uri[:1])
    assert client.list_recording(ids[1] + 1000) is None


def test_list_recording_subscriptions_and_stop_by_subscription_id(client, aeron, signals):
    channel = udp_channel()
    subscription_id = client.start_recording(channel, STREAM_ID, SourceLocation.REMOTE)
    found: list[Any] = []
    assert client.list_recording_subscriptions(0, 10, channel, STREAM_ID, True, found.append) >= 1
    mine = [s for s in found if s.subscription_id == subscription_id]
    assert mine and mine[0].stream_id == STREAM_ID and mine[0].stripped_channel == channel
    assert uncorrelated(client.list_recording_subscriptions(0, 10, channel, STREAM_ID, True)) == uncorrelated(found)
    assert client.list_recording_subscriptions(0, 10, "no-such-channel", STREAM_ID, True) == []
    none: list[Any] = []
    assert client.list_recording_subscriptions(0, 10, "no-such-channel", STREAM_ID, True, none.append) == 0
    client.stop_recording_subscription(subscription_id)
    assert client.try_stop_recording_subscription(subscription_id) is False
    after: list[Any] = []
    client.list_recording_subscriptions(0, 10, channel, STREAM_ID, True, after.append)
    assert all(s.subscription_id != subscription_id for s in after)


def test_stop_recording_by_identity_and_try_stop(client, aeron, signals):
    channel = udp_channel()
    recording_id, _, publication = record(client, aeron, signals, payloads(3), channel)
    assert client.try_stop_recording_by_identity(recording_id) is True
    await_signal(client, signals, RecordingSignal.STOP)
    assert client.try_stop_recording_by_identity(recording_id) is False
    assert client.try_stop_recording(channel, STREAM_ID) in (True, False)   # subscription may linger until EOS
    assert client.try_stop_recording(udp_channel(), STREAM_ID) is False
    publication.close()


def test_add_recorded_publication_records_locally(client, signals):
    channel = udp_channel()
    publication = client.add_recorded_publication(channel, STREAM_ID)
    try:
        start = await_signal(client, signals, RecordingSignal.START)[-1]
        offer_all(publication, payloads(5), client)
        wait_for(lambda: client.get_recording_position(start.recording_id) == publication.position, WAIT_S,
                 what="local recording")
        client.stop_recording_publication(publication)
        await_signal(client, signals, RecordingSignal.STOP)
        assert client.get_stop_position(start.recording_id) == publication.position
    finally:
        publication.close()


def test_extend_recording_continues_at_the_stop_position(client, aeron, signals):
    channel = udp_channel()
    recording_id, stop, publication = record(client, aeron, signals, payloads(4), channel)
    client.stop_recording(channel, STREAM_ID)
    await_signal(client, signals, RecordingSignal.STOP)
    publication.close()
    descriptor: list[RecordingDescriptor] = []
    client.list_recording(recording_id, descriptor.append)
    d = descriptor[0]
    uri = ChannelUri.parse(udp_channel())
    term_id = d.initial_term_id + stop // d.term_buffer_length
    ext_channel = (f"{uri}|init-term-id={d.initial_term_id}|term-id={term_id}|"
                   f"term-offset={stop % d.term_buffer_length}|term-length={d.term_buffer_length}|mtu={d.mtu_length}")
    client.extend_recording(recording_id, str(uri), STREAM_ID, SourceLocation.REMOTE)
    extension = aeron.add_exclusive_publication(ext_channel, STREAM_ID)
    await_signal(client, signals, RecordingSignal.EXTEND)
    more = payloads(3, 60)
    offer_all(extension, more, client)
    wait_for(lambda: client.get_recording_position(recording_id) == extension.position, WAIT_S,
             what="extended position")
    client.stop_recording(str(uri), STREAM_ID)
    await_signal(client, signals, RecordingSignal.STOP, 2)
    assert client.get_stop_position(recording_id) == extension.position > stop
    sub = client.replay(recording_id, udp_channel(), 2003, 0, extension.position)
    try:
        assert collect(sub, 7) == payloads(4) + more
    finally:
        sub.close()
        extension.close()


# -- replays ------------------------------------------------------------------------------------------------------
def test_start_replay_then_stop_replay_and_stop_all(client, aeron, signals):
    recording_id, stop, publication = record(client, aeron, signals, payloads(20))
    replay_channel = udp_channel()
    session = client.start_replay(recording_id, replay_channel, 2004, 0, -1)    # follows the live recording
    sub = aeron.add_subscription(f"{replay_channel}|session-id={replay_image_session_id(session)}", 2004)
    try:
        assert len(collect(sub, 20)) == 20
        client.stop_replay(session)
        wait_for(lambda: not sub.images or sub.images[0].is_closed or sub.images[0].is_end_of_stream, WAIT_S,
                 invoke=lambda: sub.poll(lambda *a: None, 10) or time.sleep(0.01), what="replay stopped")
        client.stop_replay(session + (1 << 40))        # an unknown replay: the archive answers OK (Aeron 1.53)
        client.start_replay(recording_id, udp_channel(), 2005, 0, -1)
        client.stop_all_replays(recording_id)
        client.stop_all_replays()
    finally:
        sub.close()
        publication.close()


def test_bounded_replay_stops_at_the_limit_counter(client, aeron, signals):
    messages = payloads(10)
    recording_id, stop, publication = record(client, aeron, signals, messages)
    frame = stop // len(messages)
    counter = aeron.add_counter(1001, "replay limit")
    try:
        counter.set(frame * 4)
        replay_channel = udp_channel()
        session = client.start_bounded_replay(recording_id, 0, stop, counter.counter_id, replay_channel, 2006)
        sub = aeron.add_subscription(f"{replay_channel}|session-id={replay_image_session_id(session)}", 2006)
        got = collect(sub, 4)
        time.sleep(0.3)
        sub.poll(lambda *a: got.append(b"extra"), 10)
        assert got == messages[:4]
        counter.set(stop)
        assert collect(sub, 6) == messages[4:]
        sub.close()
    finally:
        counter.close()
        publication.close()


def test_replay_all_and_stop_of_a_stopped_recording(client, aeron, signals):
    channel = udp_channel()
    recording_id, stop, publication = record(client, aeron, signals, payloads(6), channel)
    client.stop_recording(channel, STREAM_ID)
    sub = client.replay(recording_id, udp_channel(), 2007, 0, REPLAY_ALL_AND_STOP)
    try:
        assert collect(sub, 6) == payloads(6)
        wait_for(lambda: sub.images and sub.images[0].is_end_of_stream or not sub.images, WAIT_S,
                 invoke=lambda: sub.poll(lambda *a: None, 10) or time.sleep(0.01), what="end of replay")
    finally:
        sub.close()
        publication.close()


def test_connect_and_replay_over_response_channels(archive, aeron, signals):
    response_channel = f"aeron:udp?control-mode=response|control=localhost:{free_port()}"
    ctx = archive.context(aeron=aeron, control_response_channel=response_channel)
    ctx.recording_signal_consumer = signals
    with AeronArchive.connect(ctx) as arc:
        assert "session-id" not in arc.context.control_request_channel
        assert "response-correlation-id=" in arc.context.control_request_channel
        channel = udp_channel()
        messages = payloads(20)
        recording_id, stop, publication = record(arc, aeron, signals, messages, channel)
        arc.stop_recording(channel, STREAM_ID)
        sub = arc.replay(recording_id, response_channel, 2020, 0, stop)
        try:
            assert collect(sub, len(messages)) == messages
        finally:
            sub.close()
        own = aeron.add_subscription(response_channel, 2021)
        try:
            params = ReplayParams(position=0, length=stop, subscription_registration_id=own.registration_id)
            arc.start_replay(recording_id, response_channel, 2021, params=params)
            assert collect(own, len(messages)) == messages
            with pytest.raises(ArchiveError, match="subscription_registration_id must be set"):
                arc.start_replay(recording_id, response_channel, 2021, 0, stop)
        finally:
            own.close()
        publication.close()


# -- errors ---------------------------------------------------------------------------------------------------
def test_queries_of_an_unknown_recording_are_answered_as_java_does(client):
    # ArchiveConductor.getRecordingPosition (and the start, stop and max recorded positions) check the id first
    for unknown in (1_000_000, -1):
        for query in (client.get_recording_position, client.get_start_position, client.get_stop_position,
                      client.get_max_recorded_position):
            with pytest.raises(E.UnknownRecordingError, match=f"unknown recording id: {unknown}") as info:
                query(unknown)
            assert info.value.error_code == ArchiveErrorCode.UNKNOWN_RECORDING
    # findLastMatchingRecording: a negative minimum is an error, no match is -1
    with pytest.raises(E.UnknownRecordingError, match="minRecordingId=-1 < 0"):
        client.find_last_matching_recording(-1, "", STREAM_ID, 1)
    assert client.find_last_matching_recording(1_000_000, "", STREAM_ID, 1) == -1
    got: list[RecordingDescriptor] = []
    assert client.list_recording(1_000_000, got.append) == 0 and got == []


def test_errors_are_typed_with_their_code(client, aeron, signals):
    unknown = 1_000_000
    with pytest.raises(E.UnknownRecordingError) as info:
        client.get_stop_position(unknown)
    assert info.value.error_code == ArchiveErrorCode.UNKNOWN_RECORDING
    assert info.value.correlation_id == client.last_correlation_id
    assert isinstance(info.value, ArchiveError)
    assert isinstance(info.value, common_errors.ArchiveError)
    with pytest.raises(E.UnknownSubscriptionError):
        client.stop_recording(udp_channel(), STREAM_ID)
    with pytest.raises(E.UnknownSubscriptionError):
        client.stop_recording_subscription(unknown)
    with pytest.raises(E.UnknownRecordingError):
        client.start_replay(unknown, udp_channel(), 2008, 0, -1)
    with pytest.raises(E.UnknownReplicationError):
        client.stop_replication(unknown)
    assert client.try_stop_replication(unknown) is False
    with pytest.raises(E.UnknownRecordingError):
        client.purge_recording(unknown)
    channel = udp_channel()
    recording_id, stop, publication = record(client, aeron, signals, payloads(5), channel)
    with pytest.raises(E.ActiveSubscriptionError):
        client.start_recording(channel, STREAM_ID, SourceLocation.REMOTE)
    with pytest.raises(E.ActiveRecordingError):
        client.truncate_recording(recording_id, 0)
    with pytest.raises(E.ActiveRecordingError):
        client.purge_recording(recording_id)
    with pytest.raises(ArchiveError) as unaligned:
        client.start_replay(recording_id, udp_channel(), 2009, 3, -1)
    assert unaligned.value.error_code == ArchiveErrorCode.GENERIC
    client.stop_recording(channel, STREAM_ID)
    await_signal(client, signals, RecordingSignal.STOP)
    with pytest.raises(E.InvalidPositionError):
        client.start_replay(recording_id, udp_channel(), 2010, stop + 32, -1)
    assert client.get_start_position(recording_id) == 0       # the session keeps working after errors
    publication.close()


def test_poll_for_error_response_and_check_for_error_response(client):
    proxy = client.archive_proxy
    assert client.poll_for_error_response() is None
    correlation_id = client.aeron.next_correlation_id()
    assert proxy.get_stop_position(1_000_000, correlation_id, client.control_session_id)
    message = wait_for(lambda: client.poll_for_error_response(), WAIT_S, what="error response")
    assert "1000000" in message or "unknown" in message.lower()
    correlation_id = client.aeron.next_correlation_id()
    assert proxy.get_stop_position(1_000_000, correlation_id, client.control_session_id)
    with pytest.raises(E.UnknownRecordingError) as info:
        wait_for(lambda: client.check_for_error_response(), 5.0, what="error raised")
    assert info.value.correlation_id == correlation_id


# -- truncate, purge, segments -----------------------------------------------------------------------------------
def test_truncate_and_purge_with_delete_signals(client, aeron, signals):
    channel = udp_channel()
    messages = payloads(10)
    recording_id, stop, publication = record(client, aeron, signals, messages, channel)
    client.stop_recording(channel, STREAM_ID)
    await_signal(client, signals, RecordingSignal.STOP)
    frame = stop // len(messages)
    assert client.truncate_recording(recording_id, frame * 5) == 0     # within the one segment: no file deleted
    assert client.get_stop_position(recording_id) == frame * 5
    sub = client.replay(recording_id, udp_channel(), 2011, 0, REPLAY_ALL_AND_STOP)
    try:
        assert collect(sub, 5) == messages[:5]
    finally:
        sub.close()
    client.stop_all_replays(recording_id)
    assert client.purge_recording(recording_id) == 1
    await_signal(client, signals, RecordingSignal.DELETE)
    assert client.list_recording(recording_id, lambda d: None) == 0
    with pytest.raises(E.UnknownRecordingError):
        client.get_start_position(recording_id)
    publication.close()


def test_detach_attach_purge_and_delete_detached_segments(client, aeron, signals, archive):
    channel = udp_channel()
    messages = payloads(1000, 1000)        # ~1 MiB: four segments of 256 KiB
    recording_id, stop, publication = record(client, aeron, signals, messages, channel)
    client.stop_recording(channel, STREAM_ID)
    await_signal(client, signals, RecordingSignal.STOP)
    assert stop > 3 * SEGMENT_LENGTH
    client.detach_segments(recording_id, SEGMENT_LENGTH)
    assert client.get_start_position(recording_id) == SEGMENT_LENGTH
    assert client.attach_segments(recording_id) == 1
    assert client.get_start_position(recording_id) == 0
    client.detach_segments(recording_id, SEGMENT_LENGTH)
    assert client.delete_detached_segments(recording_id) == 1
    assert client.purge_segments(recording_id, 2 * SEGMENT_LENGTH) == 1
    assert client.get_start_position(recording_id) == 2 * SEGMENT_LENGTH
    await_signal(client, signals, RecordingSignal.DELETE, 2)
    with pytest.raises(ArchiveError):
        client.detach_segments(recording_id, 2 * SEGMENT_LENGTH + 32)   # not a segment boundary
    with pytest.raises(ArchiveError):
        client.migrate_segments(recording_id, recording_id)
    publication.close()


def test_migrate_segments_moves_a_recording_to_the_front_of_its_successor(client, aeron, signals):
    first = [bytes([i & 0xFF]) * 992 for i in range(SEGMENT_LENGTH // 1024)]     # 1 KiB frames: one full segment
    channel = udp_channel()
    src_id, src_stop, src_pub = record(client, aeron, signals, first, channel)
    client.stop_recording(channel, STREAM_ID)
    assert src_stop == SEGMENT_LENGTH
    initial_term_id = src_pub.initial_term_id
    src_pub.close()
    uri = udp_channel()
    next_channel = (f"{uri}|init-term-id={initial_term_id}|term-id={initial_term_id + SEGMENT_LENGTH // TERM_LENGTH}|"
                    f"term-offset=0|term-length={TERM_LENGTH}")
    second = payloads(10)
    dst_id, dst_stop, dst_pub = record(client, aeron, signals, second, next_channel)
    client.stop_recording(next_channel, STREAM_ID)
    assert client.get_start_position(dst_id) == SEGMENT_LENGTH
    await_signal(client, signals, RecordingSignal.STOP, 2)
    assert client.migrate_segments(src_id, dst_id) == 1
    assert client.get_start_position(dst_id) == 0
    await_signal(client, signals, RecordingSignal.DELETE)
    sub = client.replay(dst_id, udp_channel(), 2013, 0, REPLAY_ALL_AND_STOP)
    try:
        assert collect(sub, len(first) + len(second)) == first + second
    finally:
        sub.close()
        dst_pub.close()


def test_update_channel_and_auto_stop_recording(client, aeron, signals):
    channel = udp_channel()
    recording_id, _, publication = record(client, aeron, signals, payloads(3), channel)
    client.stop_recording(channel, STREAM_ID)
    client.update_channel(recording_id, channel + "|alias=renamed")
    got: list[RecordingDescriptor] = []
    client.list_recording(recording_id, got.append)
    assert got[0].original_channel == channel + "|alias=renamed"
    publication.close()
    auto = udp_channel()
    subscription_id = client.start_recording(auto, STREAM_ID, SourceLocation.REMOTE, auto_stop=True)
    exclusive = aeron.add_exclusive_publication(auto, STREAM_ID)
    await_signal(client, signals, RecordingSignal.START, 2)
    offer_all(exclusive, payloads(2), client)
    exclusive.close()                                # the image goes, the recording stops, and so does the subscription
    wait_for(lambda: [s for s in signals.of(RecordingSignal.STOP) if s.subscription_id == subscription_id], WAIT_S,
             invoke=client.poll_for_recording_signals, what="auto stop")
    wait_for(lambda: not client.try_stop_recording_subscription(subscription_id), WAIT_S,
             invoke=lambda: time.sleep(0.05), what="the recording subscription removed")


def test_add_recorded_exclusive_publication(client, signals):
    publication = client.add_recorded_exclusive_publication(udp_channel(), STREAM_ID)
    try:
        start = await_signal(client, signals, RecordingSignal.START)[-1]
        offer_all(publication, payloads(4), client)
        wait_for(lambda: client.get_recording_position(start.recording_id) == publication.position, WAIT_S,
                 what="recorded")
        client.stop_recording_publication(publication)
    finally:
        publication.close()


# -- signals and events -------------------------------------------------------------------------------------------
def test_recording_events_adapter_sees_started_progress_stopped(client, aeron, signals, archive):
    events: list[Any] = []
    events_sub = aeron.add_subscription(archive.events_channel, archive.events_stream_id)
    try:
        adapter = RecordingEventsAdapter(events.append, events_sub)
        wait_for(lambda: events_sub.is_connected or adapter.poll(), WAIT_S, invoke=lambda: time.sleep(0.01),
                 what="events stream")
        channel = udp_channel()
        recording_id, stop, publication = record(client, aeron, signals, payloads(50), channel)
        client.stop_recording(channel, STREAM_ID)
        wait_for(lambda: any(isinstance(e, RecordingStopped) and e.recording_id == recording_id for e in events),
                 WAIT_S, invoke=lambda: adapter.poll() or time.sleep(0.005), what="RecordingStopped")
        mine = [e for e in events if e.recording_id == recording_id]
        assert isinstance(mine[0], RecordingStarted), mine[:3]
        assert (mine[0].stream_id, mine[0].channel, mine[0].start_position) == (STREAM_ID, channel, 0)
        assert mine[-1].stop_position == stop
        assert all(isinstance(e, RecordingProgress) for e in mine[1:-1])
        publication.close()
    finally:
        events_sub.close()


# -- ReplayMerge ---------------------------------------------------------------------------------------------------
def test_replay_merge_joins_the_live_stream_while_the_publisher_keeps_going(client, aeron, signals):
    control_port = free_port()
    live_channel = f"aeron:udp?control=localhost:{control_port}|control-mode=dynamic"
    recording_id, _, publication = record(client, aeron, signals, payloads(200), live_channel, SourceLocation.LOCAL)
    sent = payloads(200)
    stop_publishing = threading.Event()
    lock = threading.Lock()

    def publish() -> None:
        i = 200
        while not stop_publishing.is_set() and i < 4000:
            message = payloads(1, 100)[0][:-4] + i.to_bytes(4, "little")
            with lock:
                if publication.offer(message) > 0:
                    sent.append(message)
                    i += 1
            time.sleep(0.0005)

    thread = threading.Thread(target=publish, daemon=True)
    thread.start()
    subscription = aeron.add_subscription("aeron:udp?control-mode=manual", STREAM_ID)
    got: list[bytes] = []
    assembler = FragmentAssembler(lambda buf, off, length, hdr: got.append(buf.get_bytes(off, length)))
    # the replay carries the live publication's session id, so that both destinations feed one image
    merge = ReplayMerge(subscription, client, f"aeron:udp?session-id={publication.session_id}",
                        "aeron:udp?endpoint=localhost:0",
                        f"aeron:udp?endpoint=localhost:0|control=localhost:{control_port}", recording_id, 0)
    try:
        wait_for(lambda: merge.is_merged, 30.0, invoke=lambda: merge.poll(assembler, 50) or time.sleep(0.0005),
                 what="merged")
        assert merge.is_live_added and not merge.has_failed
        time.sleep(0.2)
    finally:
        stop_publishing.set()
        thread.join(10)
    with lock:
        total = len(sent)
    wait_for(lambda: len(got) >= total, WAIT_S, invoke=lambda: merge.poll(assembler, 50) or time.sleep(0.001),
             what="every message after the merge")
    assert got == sent                      # in order, no gap, no duplicate across the switch
    assert merge.image.log_buffers.active_transport_count == 1
    merge.close()
    subscription.close()
    publication.close()


# -- replication ---------------------------------------------------------------------------------------------------
def test_replicate_a_stopped_recording_into_a_second_archive(client, aeron, signals, second_archive):
    channel = udp_channel()
    messages = payloads(30)
    recording_id, stop, publication = record(client, aeron, signals, messages, channel)
    client.stop_recording(channel, STREAM_ID)
    await_signal(client, signals, RecordingSignal.STOP)
    dst_signals = Signals()
    dst_aeron = second_archive.connect_aeron()
    ctx = second_archive.context(aeron=dst_aeron)
    ctx.recording_signal_consumer = dst_signals
    try:
        with AeronArchive.connect(ctx) as dst:
            replication_id = dst.replicate(recording_id, -1, client.context.control_request_stream_id,
                                           archive_control_channel(client))
            await_signal(dst, dst_signals, RecordingSignal.REPLICATE_END)
            kinds = [e.signal for e in dst_signals.events if e.correlation_id == replication_id]
            assert RecordingSignal.REPLICATE in kinds and RecordingSignal.SYNC in kinds
            dst_id = dst_signals.of(RecordingSignal.REPLICATE)[0].recording_id
            assert dst.get_stop_position(dst_id) == stop
            sub = dst.replay(dst_id, udp_channel(), 2012, 0, REPLAY_ALL_AND_STOP)
            try:
                assert collect(sub, len(messages)) == messages
            finally:
                sub.close()
            with pytest.raises(E.UnknownReplicationError):
                dst.stop_replication(replication_id)
            half = stop // 2
            bounded = dst.replicate(recording_id, -1, client.context.control_request_stream_id,
                                    archive_control_channel(client), stop_position=half)
            wait_for(lambda: any(e.correlation_id == bounded and e.signal == RecordingSignal.REPLICATE_END
                                 for e in dst_signals.events), WAIT_S, invoke=dst.poll_for_recording_signals,
                     what="bounded replication end")
            bounded_id = [e for e in dst_signals.events if e.correlation_id == bounded
                          and e.signal == RecordingSignal.REPLICATE][0].recording_id
            assert dst.get_stop_position(bounded_id) == half
            tagged = dst.tagged_replicate(recording_id, -1, 77, 78, client.context.control_request_stream_id,
                                          archive_control_channel(client))
            wait_for(lambda: any(e.correlation_id == tagged and e.signal == RecordingSignal.REPLICATE_END
                                 for e in dst_signals.events), WAIT_S, invoke=dst.poll_for_recording_signals,
                     what="tagged replication end")
    finally:
        dst_aeron.close()
        publication.close()


def test_replicate_with_live_merge_while_the_source_keeps_recording(client, aeron, signals, second_archive):
    """Replication that merges onto the live stream (MERGE signal) while the publisher keeps going, the live
    destination naming an ephemeral endpoint and the publication's control address."""
    control_port = free_port()
    live = f"aeron:udp?control=localhost:{control_port}|control-mode=dynamic"
    recording_id, _, publication = record(client, aeron, signals, payloads(100), live, SourceLocation.LOCAL)
    stop = threading.Event()

    def publish() -> None:
        while not stop.is_set():
            publication.offer(payloads(1)[0])
            time.sleep(0.001)

    thread = threading.Thread(target=publish, daemon=True)
    thread.start()
    dst_aeron = second_archive.connect_aeron()
    dst_signals = Signals()
    ctx = second_archive.context(aeron=dst_aeron)
    ctx.recording_signal_consumer = dst_signals
    try:
        with AeronArchive.connect(ctx) as dst:
            replication_id = dst.replicate(recording_id, -1, client.context.control_request_stream_id,
                                           archive_control_channel(client),
                                           f"aeron:udp?endpoint=localhost:0|control=localhost:{control_port}")
            merge = wait_for(lambda: dst_signals.of(RecordingSignal.MERGE), WAIT_S,
                             invoke=dst.poll_for_recording_signals, what="MERGE")[0]
            assert merge.correlation_id == replication_id and merge.position > 0
            dst_id = merge.recording_id
            wait_for(lambda: dst.get_recording_position(dst_id) > merge.position, WAIT_S,
                     invoke=lambda: time.sleep(0.01), what="the merged recording follows the live stream")
            dst.try_stop_replication(replication_id)      # the session may already have ended after the merge
            await_signal(dst, dst_signals, RecordingSignal.REPLICATE_END)
            dst.try_stop_recording_by_identity(dst_id)
    finally:
        stop.set()
        thread.join(10)
        dst_aeron.close()
        publication.close()
        client.stop_recording(live, STREAM_ID)


def archive_control_channel(client: AeronArchive) -> str:
    """The source archive's control channel as the destination should dial it (without the client's session id
    and defaults)."""
    uri = ChannelUri.parse(client.context.control_request_channel)
    return f"aeron:udp?endpoint={uri.endpoint}"


# -- PersistentSubscription ----------------------------------------------------------------------------------------
class Listener(PersistentSubscriptionListener):
    def __init__(self) -> None:
        self.joined = 0
        self.left = 0
        self.errors: list[BaseException] = []

    def on_live_joined(self) -> None:
        self.joined += 1

    def on_live_left(self) -> None:
        self.left += 1

    def on_error(self, error: BaseException) -> None:
        self.errors.append(error)


def persistent(archive, aeron, recording_id: int, start: int, live_channel: str, listener: Listener,
               replay_channel: str = "aeron:ipc", live_stream_id: int = STREAM_ID) -> PersistentSubscription:
    # an IPC response channel answers an IPC request publication: the archive's local control channel then
    settings = dict(control_request_channel="aeron:ipc", control_response_channel="aeron:ipc") if \
        replay_channel.startswith("aeron:ipc") and "control-mode=response" in replay_channel else {}
    return PersistentSubscription.create(PersistentContext(
        recording_id=recording_id, start_position=start, live_channel=live_channel, live_stream_id=live_stream_id,
        replay_channel=replay_channel, replay_stream_id=3003, archive_context=archive.context(**settings),
        aeron=aeron, listener=listener))


@pytest.mark.parametrize("replay_channel", ["aeron:ipc", "aeron:udp?endpoint=localhost:0", "response-udp",
                                            "aeron:ipc?control-mode=response"])
def test_persistent_subscription_replays_history_then_switches_to_live(client, aeron, signals, archive,
                                                                       replay_channel):
    if replay_channel == "response-udp":         # a replay over a response channel of its own
        replay_channel = f"aeron:udp?control-mode=response|control=localhost:{free_port()}"
    live_channel = f"aeron:ipc?alias=persistent-{free_port()}"
    first = payloads(300)
    recording_id, _, publication = record(client, aeron, signals, first, live_channel, SourceLocation.LOCAL)
    listener = Listener()
    got: list[bytes] = []
    handler = lambda buf, off, length, hdr: got.append(buf.get_bytes(off, length))   # noqa: E731
    ps = persistent(archive, aeron, recording_id, FROM_START, live_channel, listener, replay_channel)
    try:
        seen_replaying = []
        states = set()
        wait_for(lambda: (seen_replaying.append(ps.is_replaying) or states.add(ps.state) or ps.is_live) and
                 len(got) >= len(first), 30.0, invoke=lambda: ps.poll(handler, 20) or time.sleep(0.0005),
                 what="live after the replay")
        assert any(seen_replaying) and listener.joined == 1 and not ps.has_failed
        assert ps.ctx.state_counter.get() == PersistentState.LIVE
        # a response channel replay asks for a replay token and sends its request on a publication of its own
        assert (PersistentState.AWAIT_REPLAY_TOKEN in states) == ("control-mode=response" in replay_channel)
        more = [m + b"!" for m in payloads(50)]
        offer_all(publication, more)
        wait_for(lambda: len(got) >= len(first) + len(more), WAIT_S,
                 invoke=lambda: ps.poll(handler, 20) or time.sleep(0.0005), what="live messages")
        assert got == first + more
        assert ps.position == publication.position
    finally:
        ps.close()
        publication.close()
        client.stop_recording(live_channel, STREAM_ID)


def test_persistent_subscription_from_live_and_its_failures(client, aeron, signals, archive):
    live_channel = "aeron:ipc?alias=persistent-live"
    client.try_stop_recording(live_channel, STREAM_ID)
    recording_id, _, publication = record(client, aeron, signals, payloads(10), live_channel, SourceLocation.LOCAL)
    got: list[bytes] = []
    handler = lambda buf, off, length, hdr: got.append(buf.get_bytes(off, length))   # noqa: E731
    listener = Listener()
    ps = persistent(archive, aeron, recording_id, FROM_LIVE, live_channel, listener)
    try:
        wait_for(lambda: ps.is_live, WAIT_S, invoke=lambda: ps.poll(handler, 20) or time.sleep(0.001),
                 what="live")
        assert got == [] and ps.join_difference == 0
        offer_all(publication, payloads(3))
        wait_for(lambda: len(got) == 3, WAIT_S, invoke=lambda: ps.poll(handler, 20) or time.sleep(0.001),
                 what="live messages")
    finally:
        ps.close()
    for recording, stream, reason in ((1_000_000, STREAM_ID, PersistentSubscriptionError.Reason.RECORDING_NOT_FOUND),
                                      (recording_id, STREAM_ID + 1,
                                       PersistentSubscriptionError.Reason.STREAM_ID_MISMATCH)):
        failing = persistent(archive, aeron, recording, FROM_START, live_channel, Listener(), live_stream_id=stream)
        try:
            wait_for(lambda f=failing: f.has_failed, WAIT_S,
                     invoke=lambda f=failing: f.poll(handler, 20) or time.sleep(0.001), what="failure")
            assert isinstance(failing.failure_reason, PersistentSubscriptionError)
            assert failing.failure_reason.reason is reason
        finally:
            failing.close()
    publication.close()
    client.stop_recording(live_channel, STREAM_ID)


def test_persistent_subscription_controlled_poll_honours_every_action(client, aeron, signals, archive):
    # ABORT (the message comes again), BREAK (the poll ends after it), COMMIT and CONTINUE, in the replay, while
    # switching and live; every 50th message is fragmented
    live_channel = f"aeron:ipc?alias=persistent-controlled-{free_port()}"
    first = [m * (40 if i % 50 == 0 else 1) for i, m in enumerate(payloads(300))]
    recording_id, _, publication = record(client, aeron, signals, first, live_channel, SourceLocation.LOCAL)
    listener = Listener()
    accepted: list[bytes] = []
    aborted: list[bytes] = []
    this_poll: list[str] = []

    def handler(buf: Any, off: int, length: int, hdr: Any) -> int:
        message = buf.get_bytes(off, length)
        index = int.from_bytes(message[100:104], "little")      # payloads' index after its 100 pattern bytes
        kind = index % 10
        if kind == 3 and message not in aborted:
            aborted.append(message)
            this_poll.append("ABORT")
            return ControlledPollAction.ABORT
        accepted.append(message)
        name = {5: "BREAK", 7: "COMMIT"}.get(kind, "CONTINUE")
        this_poll.append(name)
        return int(getattr(ControlledPollAction, name))

    def poll() -> int:
        this_poll.clear()
        work = ps.controlled_poll(handler, 20)
        assert "BREAK" not in this_poll[:-1] and "ABORT" not in this_poll[:-1], this_poll
        return work

    ps = persistent(archive, aeron, recording_id, FROM_START, live_channel, listener)
    try:
        seen_replaying = []
        wait_for(lambda: (seen_replaying.append(ps.is_replaying) or ps.is_live) and len(accepted) >= len(first),
                 30.0, invoke=lambda: poll() or time.sleep(0.0005), what="live after the replay")
        assert any(seen_replaying) and listener.joined == 1 and not ps.has_failed
        more = [m + b"?" for m in payloads(40)]
        offer_all(publication, more)
        wait_for(lambda: len(accepted) >= len(first) + len(more), WAIT_S,
                 invoke=lambda: poll() or time.sleep(0.0005), what="live messages")
        assert accepted == first + more
        assert aborted == [m for m in first + more if int.from_bytes(m[100:104], "little") % 10 == 3]
        assert ps.position == publication.position
    finally:
        ps.close()
        publication.close()
        client.stop_recording(live_channel, STREAM_ID)
