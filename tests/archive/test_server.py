# SPDX-License-Identifier: Apache-2.0
"""The archive server driven by a raw control client (generated codecs): sessions, recording, listing, replay."""
from __future__ import annotations

import os
import time
import zlib

import pytest

from aeron import Aeron, Context
from aeron._core.codecs import archive as codecs
from aeron._core.codecs.archive import ControlResponseCode, RecordingSignal, SourceLocation
from aeron._core.fragment_assembler import FragmentAssembler
from aeron.archive.archive import ArchivingMediaDriver
from aeron.archive.archive import Context as ArchiveContext
from aeron.archive.catalog import Catalog
from aeron.archive.checksums import new_checksum
from aeron.archive.errors import ArchiveErrorCode
from aeron.archive.archive_mark_file import ArchiveMarkFile
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


def test_connect_archive_id_keepalive_and_mark_file(client, archiving_driver):
    archive_id = client.ok(codecs.ArchiveIdRequestEncoder)
    assert archive_id == archiving_driver.archive.archive_id
    client.request(codecs.KeepAliveRequestEncoder)
    assert client.ok(codecs.ArchiveIdRequestEncoder) == archive_id
    archive_dir = archiving_driver.archive.context.archive_dir
    with ArchiveMarkFile.open(archive_dir) as mark:
        header = mark.header()
        assert (mark.version, header.archive_id, header.pid) == (196864, archive_id, os.getpid())
        assert header.aeron_directory == archiving_driver.driver.aeron_dir
        assert header.local_control_channel == CONTROL and header.control_channel == ""
        assert mark.activity_timestamp > 0


def test_clean_shutdown_marks_the_mark_file_terminated(shm_dir):
    amd = ArchivingMediaDriver.launch(driver_context(aeron_dir=str(shm_dir / "driver")),
                                      archive_context(shm_dir / "archive"))
    amd.close()
    with ArchiveMarkFile.open(shm_dir / "archive") as mark:
        assert mark.version == 196864 and mark.activity_timestamp == -1


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




def test_listings_find_last_and_subscriptions(client, aeron):
    r0, sub0, pub0, _ = record(client, aeron, "aeron:ipc?term-length=64k|alias=first", 1000, [b"a" * 100] * 3)
    r1, sub1, pub1, _ = record(client, aeron, "aeron:ipc?term-length=64k|alias=second", 1001, [b"b" * 100] * 3)
    found = client.list_recordings(from_recording_id=0, record_count=10)
    descriptors = [m for m in found if m.name == "RecordingDescriptor"]
    assert [d.recording_id for d in descriptors] == [r0, r1]
    assert found[-1].name == "ControlResponse" and found[-1].code == ControlResponseCode.RECORDING_UNKNOWN
    assert found[-1].relevant_id == r1 + 1
    d0 = descriptors[0]
    assert (d0.stream_id, d0.stripped_channel, d0.original_channel, d0.source_identity) == (
        1000, "aeron:ipc?alias=first", "aeron:ipc?term-length=64k|alias=first", "aeron:ipc")
    assert (d0.start_position, d0.stop_position, d0.term_buffer_length, d0.segment_file_length) == (
        0, -1, 64 * 1024, 64 * 1024)
    # for URI: stream id and a fragment of the original channel
    by_uri = client.list_recordings(codecs.ListRecordingsForUriRequestEncoder, from_recording_id=0,
                                    record_count=10, stream_id=1001, channel="second")
    assert [m.recording_id for m in by_uri if m.name == "RecordingDescriptor"] == [r1]
    one = client.list_recordings(codecs.ListRecordingRequestEncoder, recording_id=r1)
    assert one[0].name == "RecordingDescriptor" and one[0].recording_id == r1
    unknown = client.call(codecs.ListRecordingRequestEncoder, recording_id=999)
    assert unknown.code == ControlResponseCode.RECORDING_UNKNOWN and unknown.relevant_id == 999
    session_id = descriptors[1].session_id
    assert client.ok(codecs.FindLastMatchingRecordingRequestEncoder, min_recording_id=0, session_id=session_id,
                     stream_id=1001, channel="second") == r1
    assert client.ok(codecs.FindLastMatchingRecordingRequestEncoder, min_recording_id=0, session_id=session_id,
                     stream_id=1000, channel="") == -1
    subs = []
    correlation_id = client.request(codecs.ListRecordingSubscriptionsRequestEncoder, pseudo_index=0,
                                    subscription_count=10, apply_stream_id=0, stream_id=0, channel="")
    end = client.wait_response(correlation_id, "ControlResponse")
    assert end.code == ControlResponseCode.SUBSCRIPTION_UNKNOWN
    while True:
        try:
            subs.append(client.wait_response(correlation_id, "RecordingSubscriptionDescriptor", timeout_s=0.2))
        except AssertionError:
            break
    assert sorted(s.subscription_id for s in subs) == sorted([sub0, sub1])
    # one listing at a time per session is not violated by sequential listings; errors keep the session alive
    dup = client.call(codecs.StartRecordingRequestEncoder, stream_id=1000, source_location=SourceLocation.REMOTE,
                      channel="aeron:ipc?term-length=64k|alias=first")
    assert dup.code == ControlResponseCode.ERROR and dup.relevant_id == ArchiveErrorCode.ACTIVE_SUBSCRIPTION
    client.ok(codecs.StopRecordingRequestEncoder, stream_id=1000, channel="aeron:ipc?alias=first")
    client.wait_signal(RecordingSignal.STOP, r0)
    gone = client.call(codecs.StopRecordingRequestEncoder, stream_id=1000, channel="aeron:ipc?alias=first")
    assert gone.code == ControlResponseCode.ERROR and gone.relevant_id == ArchiveErrorCode.UNKNOWN_SUBSCRIPTION
    assert client.ok(codecs.StopRecordingByIdentityRequestEncoder, recording_id=r1) == 1
    client.wait_signal(RecordingSignal.STOP, r1)
    assert client.ok(codecs.StopRecordingByIdentityRequestEncoder, recording_id=r1) == 0
    pub0.close()
    pub1.close()


def test_replay_errors(client, aeron):
    recording_id, sub_id, pub, stop = record(client, aeron, "aeron:ipc?term-length=64k", 1000, [b"x" * 64] * 10)
    client.ok(codecs.StopRecordingSubscriptionRequestEncoder, subscription_id=sub_id)
    client.wait_signal(RecordingSignal.STOP, recording_id)

    def replay_error(**fields):
        args = dict(recording_id=recording_id, position=-1, length=-1, replay_stream_id=1002, file_io_max_length=0,
                    replay_token=-1, replay_channel="aeron:ipc")
        args.update(fields)
        response = client.call(codecs.ReplayRequestEncoder, **args)
        assert response.code == ControlResponseCode.ERROR, response
        return response.relevant_id

    assert replay_error(recording_id=77) == ArchiveErrorCode.UNKNOWN_RECORDING
    assert replay_error(position=33) == ArchiveErrorCode.GENERIC
    assert replay_error(position=stop) == ArchiveErrorCode.INVALID_POSITION
    assert replay_error(position=stop + 1024) == ArchiveErrorCode.INVALID_POSITION
    assert replay_error(replay_channel="aeron:bogus") == ArchiveErrorCode.GENERIC
    assert replay_error(position=32) == ArchiveErrorCode.INVALID_POSITION      # not a frame start (96-byte frames)
    assert client.ok(codecs.StopReplayRequestEncoder, replay_session_id=12345) == 0
    pub.close()


def test_replay_from_position_with_length(client, aeron):
    messages = [i.to_bytes(4, "little") * 50 for i in range(100)]     # 200 bytes -> 256-byte frames
    recording_id, sub_id, pub, stop = record(client, aeron, "aeron:ipc?term-length=64k", 1000, messages)
    client.ok(codecs.StopRecordingSubscriptionRequestEncoder, subscription_id=sub_id)
    client.wait_signal(RecordingSignal.STOP, recording_id)
    _, sub = replay(client, aeron, recording_id, position=10 * 256, length=5 * 256)
    assert collect(sub, 5) == messages[10:15]
    wait_for(lambda: sub.images and sub.images[0].is_end_of_stream or not sub.images, what="end of replay")
    # -2: what exists, then stop
    _, sub2 = replay(client, aeron, recording_id, position=90 * 256, length=-2, stream_id=1003)
    assert collect(sub2, 10) == messages[90:]
    pub.close()


def test_live_replay_follows_the_recording(client, aeron, archiving_driver):
    channel = "aeron:ipc?term-length=64k"
    recording_id, sub_id, pub, _ = record(client, aeron, channel, 1000, [b"first"])
    _, sub = replay(client, aeron, recording_id, length=-1)
    messages = [b"first"] + [f"live {i}".encode() * 40 for i in range(300)]   # crosses terms and segments
    got = []
    assembler = FragmentAssembler(lambda b, o, n, h: got.append(b.get_bytes(o, n)))
    for m in messages[1:]:
        wait_for(lambda: pub.offer(m) > 0, invoke=lambda: sub.poll(assembler, 100), what="offer")
    wait_for(lambda: len(got) >= len(messages), invoke=lambda: sub.poll(assembler, 100), what="live replay")
    assert got == messages
    client.ok(codecs.StopRecordingSubscriptionRequestEncoder, subscription_id=sub_id)
    client.wait_signal(RecordingSignal.STOP, recording_id)
    # the recording stopped: the live replay ends (publication closed, image goes away after linger)
    wait_for(lambda: not archiving_driver.archive.conductor.replay_sessions, what="replay ended")
    pub.close()


def test_bounded_replay_stops_at_the_counter(client, aeron):
    messages = [i.to_bytes(2, "little") * 48 for i in range(40)]      # 96 bytes -> 128-byte frames
    recording_id, sub_id, pub, stop = record(client, aeron, "aeron:ipc?term-length=64k", 1000, messages)
    client.ok(codecs.StopRecordingSubscriptionRequestEncoder, subscription_id=sub_id)
    client.wait_signal(RecordingSignal.STOP, recording_id)
    with aeron.add_counter(1001, "replay limit") as limit:
        limit.set_ordered(10 * 128)
        sub = aeron.add_subscription("aeron:ipc", 1004)
        client.ok(codecs.BoundedReplayRequestEncoder, recording_id=recording_id, position=0, length=-1,
                  limit_counter_id=limit.counter_id, replay_stream_id=1004, file_io_max_length=0, replay_token=-1,
                  replay_channel="aeron:ipc")
        got = collect(sub, 10)
        assert got == messages[:10]
        time.sleep(0.2)
        assert sub.poll(lambda *a: got.append(a), 10) == 0        # held at the limit
        limit.set_ordered(25 * 128)
        got += collect(sub, 15)
        assert got == messages[:25]
    pub.close()


def test_malformed_and_fuzzed_requests_get_errors_and_the_archive_keeps_serving(client, archiving_driver):
    import random
    rng = random.Random(12)
    archive_id = client.ok(codecs.ArchiveIdRequestEncoder)
    # a request of this session truncated mid-block: answered with ERROR, the correlation id its own
    full = bytes(bytearray(8) + bytearray(16))
    header = codecs.MessageHeaderEncoder()
    buf = bytearray(8 + 16)
    header.wrap(buf, 0)
    header.block_length = 24
    header.template_id = codecs.ReplayRequestEncoder.TEMPLATE_ID
    header.schema_id = codecs.SCHEMA_ID
    header.version = codecs.SCHEMA_VERSION
    enc = codecs.KeepAliveRequestEncoder().wrap(buf, 8)
    enc.control_session_id = client.control_session_id
    enc.correlation_id = 4242
    client.offer(bytes(buf))
    response = client.wait_response(4242, "ControlResponse")
    assert response.code == ControlResponseCode.ERROR and response.relevant_id == ArchiveErrorCode.GENERIC
    # an unknown template id of this session
    header.template_id = 999
    client.offer(bytes(buf).replace(bytes(4242 .to_bytes(8, "little")), (4343).to_bytes(8, "little")))
    response = client.wait_response(4343, "ControlResponse")
    assert response.code == ControlResponseCode.ERROR
    # noise: random bytes, wrong schema ids, huge var lengths
    for i in range(300):
        n = rng.randrange(0, 200)
        noise = bytearray(rng.randbytes(n))
        if n >= 8 and i % 3 == 0:
            noise[4:6] = codecs.SCHEMA_ID.to_bytes(2, "little")
            noise[2:4] = rng.choice(list(codecs.TEMPLATES)).to_bytes(2, "little")
        if n >= 16 and i % 2 == 0:
            noise[8:16] = client.control_session_id.to_bytes(8, "little", signed=True)
        client.offer(bytes(noise) or b"\0")
    del full
    assert client.ok(codecs.ArchiveIdRequestEncoder) == archive_id
    assert archiving_driver.archive.conductor.adapter.malformed_count > 0


def test_truncate_purge_and_segment_operations(client, aeron, archiving_driver):
    archive_dir = archiving_driver.archive.context.archive_dir
    messages = [bytes([i % 250]) * 992 for i in range(400)]      # 1 KiB frames: 64 per segment, 7 segments
    recording_id, sub_id, pub, stop = record(client, aeron, "aeron:ipc?term-length=64k", 1000, messages)
    active = client.call(codecs.TruncateRecordingRequestEncoder, recording_id=recording_id, position=0)
    assert active.code == ControlResponseCode.ERROR and active.relevant_id == ArchiveErrorCode.ACTIVE_RECORDING
    client.ok(codecs.StopRecordingSubscriptionRequestEncoder, subscription_id=sub_id)
    client.wait_signal(RecordingSignal.STOP, recording_id)
    segs = lambda: sorted(int(n.split("-")[1][:-4]) for n in os.listdir(archive_dir)      # noqa: E731
                          if n.startswith(f"{recording_id}-"))
    assert stop == 400 * 1024
    assert segs() == [i * 65536 for i in range(7)]
    # detach the first two segments, then attach them back
    assert client.ok(codecs.DetachSegmentsRequestEncoder, recording_id=recording_id,
                     new_start_position=2 * 65536) == 0
    assert client.ok(codecs.StartPositionRequestEncoder, recording_id=recording_id) == 2 * 65536
    assert client.ok(codecs.AttachSegmentsRequestEncoder, recording_id=recording_id) == 2
    assert client.ok(codecs.StartPositionRequestEncoder, recording_id=recording_id) == 0
    # purge segments: detach + delete
    assert client.ok(codecs.PurgeSegmentsRequestEncoder, recording_id=recording_id,
                     new_start_position=65536) == 1
    client.wait_signal(RecordingSignal.DELETE, recording_id)
    assert segs()[0] == 65536
    bad = client.call(codecs.DetachSegmentsRequestEncoder, recording_id=recording_id, new_start_position=1000)
    assert bad.code == ControlResponseCode.ERROR and bad.relevant_id == ArchiveErrorCode.INVALID_POSITION
    # truncate inside the third segment at a frame boundary: later files go, the rest stays replayable
    cut = 150 * 1024
    assert client.ok(codecs.TruncateRecordingRequestEncoder, recording_id=recording_id, position=cut) == 4
    client.wait_signal(RecordingSignal.DELETE, recording_id)
    assert client.ok(codecs.StopPositionRequestEncoder, recording_id=recording_id) == cut
    assert segs() == [65536, 131072]
    _, sub = replay(client, aeron, recording_id, position=65536, length=-2)
    assert collect(sub, 150 - 64) == messages[64:150]
    # purge the recording: gone from listings, files deleted
    wait_for(lambda: not archiving_driver.archive.conductor.replay_sessions, what="replay ended")
    assert client.ok(codecs.PurgeRecordingRequestEncoder, recording_id=recording_id) == 2
    client.wait_signal(RecordingSignal.DELETE, recording_id)
    assert segs() == []
    unknown = client.call(codecs.ListRecordingRequestEncoder, recording_id=recording_id)
    assert unknown.code == ControlResponseCode.RECORDING_UNKNOWN
    pub.close()


def test_client_vanishing_mid_replay_ends_the_replay(client, aeron, archiving_driver):
    messages = [bytes([i % 200]) * 1000 for i in range(2000)]
    recording_id, sub_id, pub, stop = record(client, aeron, "aeron:ipc?term-length=64k", 1000, messages)
    _, sub = replay(client, aeron, recording_id, length=-1)
    collect(sub, 10)
    sub.close()                                 # the replay's only subscriber goes away mid-replay
    wait_for(lambda: not archiving_driver.archive.conductor.replay_sessions, what="replay ended")
    assert client.ok(codecs.ArchiveIdRequestEncoder) == archiving_driver.archive.archive_id
    # and ends quietly, as Aeron's ReplaySession.replay does: a subscriber that left has what it wanted (a
    # consensus module that read its snapshot), and an ERROR would fail the client's next poll
    assert not [m for m in client.messages if getattr(m, "code", None) == ControlResponseCode.ERROR], client.messages
    pub.close()


def _udp_archive(shm_dir, **overrides):
    port = free_port()
    amd = ArchivingMediaDriver.launch(
        driver_context(aeron_dir=str(shm_dir / "driver")),
        archive_context(shm_dir / "archive", control_channel_enabled=True,
                        control_channel=f"aeron:udp?endpoint=127.0.0.1:{port}", **overrides))
    return amd, port


@pytest.mark.parametrize("mode", ["SHARED", "DEDICATED"])
def test_udp_control_udp_and_spy_recordings(shm_dir, mode):
    amd, port = _udp_archive(shm_dir, threading_mode=mode)
    try:
        with Aeron.connect(Context(aeron_dir=amd.driver.aeron_dir)) as aeron:
            c = ControlClient(aeron, f"aeron:udp?endpoint=127.0.0.1:{port}", 10,
                              f"aeron:udp?endpoint=127.0.0.1:{free_port()}", 20)
            assert c.connect().code == ControlResponseCode.OK
            # a UDP stream recorded from the network (REMOTE), with fragmented messages across terms and segments
            data_channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}|term-length=64k"
            messages = [bytes([i % 256]) * (100 + (i * 131) % 5000) for i in range(150)]
            recording_id, sub_id, pub, stop = record(c, aeron, data_channel, 2000, messages)
            # a UDP publication recorded locally through a spy (LOCAL)
            spy_channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}|term-length=64k|ssc=true"
            spy_messages = [f"spy {i}".encode() * 30 for i in range(50)]
            spy_id, spy_sub, spy_pub, _ = record(c, aeron, spy_channel, 2001, spy_messages, SourceLocation.LOCAL)
            for sid, rid in ((sub_id, recording_id), (spy_sub, spy_id)):
                c.ok(codecs.StopRecordingSubscriptionRequestEncoder, subscription_id=sid)
                c.wait_signal(RecordingSignal.STOP, rid)
            replay_channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
            _, sub = replay(c, aeron, recording_id, channel=replay_channel, stream_id=2002)
            assert collect(sub, len(messages)) == messages
            _, sub2 = replay(c, aeron, spy_id, channel="aeron:ipc", stream_id=2003)
            assert collect(sub2, len(spy_messages)) == spy_messages
            listed = c.list_recordings(codecs.ListRecordingRequestEncoder, recording_id=recording_id)[0]
            assert listed.source_identity.startswith("127.0.0.1:")
            assert listed.stripped_channel == f"aeron:udp?endpoint={data_channel.split('=')[1].split('|')[0]}"
            c.request(codecs.CloseSessionRequestEncoder)
            wait_for(lambda: not amd.archive.conductor.sessions, what="session closed")
            pub.close()
            spy_pub.close()
            c.close()
    finally:
        amd.close()


class _ChallengingAuthenticator:
    def __init__(self):
        self.credentials = {}

    def on_connect_request(self, session_id, credentials, now_ms):
        self.credentials[session_id] = credentials

    def on_challenge_response(self, session_id, credentials, now_ms):
        self.credentials[session_id] = credentials

    def on_connected_session(self, proxy, now_ms):
        creds = self.credentials[proxy.session_id]
        if creds == b"admin":
            proxy.challenge(b"password?")
        else:
            proxy.reject()

    def on_challenged_session(self, proxy, now_ms):
        creds = self.credentials[proxy.session_id]
        if creds == b"secret":
            proxy.authenticate(b"admin")
        elif creds != b"admin":
            proxy.reject()


def test_authentication_challenge_and_rejection(shm_dir):
    amd = ArchivingMediaDriver.launch(driver_context(aeron_dir=str(shm_dir / "driver")),
                                      archive_context(shm_dir / "archive", authenticator=_ChallengingAuthenticator()))
    try:
        with Aeron.connect(Context(aeron_dir=amd.driver.aeron_dir)) as aeron:
            c = ControlClient(aeron, CONTROL, 10, RESPONSE, 21)
            challenge = c.connect(credentials=b"admin")
            assert challenge.name == "Challenge" and challenge.encoded_challenge == b"password?"
            correlation_id = c.request(codecs.ChallengeResponseEncoder, control_session_id=challenge.control_session_id,
                                       encoded_credentials=b"secret")
            ok = c.wait_response(correlation_id, "ControlResponse")
            assert ok.code == ControlResponseCode.OK and ok.relevant_id == challenge.control_session_id
            c.control_session_id = ok.relevant_id
            assert c.ok(codecs.ArchiveIdRequestEncoder) == amd.archive.archive_id
            c.close()
            bad = ControlClient(aeron, CONTROL, 10, RESPONSE, 22)
            rejected = bad.connect(credentials=b"nobody")
            assert rejected.code == ControlResponseCode.ERROR
            assert rejected.relevant_id == ArchiveErrorCode.AUTHENTICATION_REJECTED
            bad.close()
            old = ControlClient(aeron, CONTROL, 10, RESPONSE, 23)
            refused = old.connect(version=2 << 16)
            assert refused.code == ControlResponseCode.ERROR and "version" in refused.error_message
            old.close()
    finally:
        amd.close()


@pytest.mark.parametrize("checksum", ["io.aeron.archive.checksum.Crc32", "CRC-32C"])
def test_recording_events_extend_checksums_and_file_sync(shm_dir, checksum):
    events_channel = "aeron:ipc?term-length=64k"
    amd = ArchivingMediaDriver.launch(
        driver_context(aeron_dir=str(shm_dir / "driver")),
        archive_context(shm_dir / "archive", recording_events_enabled=True, recording_events_channel=events_channel,
                        record_checksum=checksum, replay_checksum=checksum,
                        file_sync_level=2))
    try:
        with Aeron.connect(Context(aeron_dir=amd.driver.aeron_dir)) as aeron:
            events = aeron.add_subscription(events_channel, 30)
            c = ControlClient(aeron, CONTROL, 10, RESPONSE, 20)
            assert c.connect().code == ControlResponseCode.OK
            channel = "aeron:ipc?term-length=64k"
            first = [b"one" * 100] * 20
            recording_id, sub_id, pub, stop = record(c, aeron, channel, 3000, first)
            pub.close()
            c.wait_signal(RecordingSignal.STOP, recording_id)
            c.ok(codecs.StopRecordingSubscriptionRequestEncoder, subscription_id=sub_id)
            seen = []
            from tests.archive.control_client import decode
            assembler = FragmentAssembler(lambda b, o, n, h: seen.append(decode(b.get_bytes(o, n))))
            wait_for(lambda: any(m.name == "RecordingStopped" for m in seen), invoke=lambda: events.poll(assembler, 10),
                     what="events")
            names = [m.name for m in seen]
            assert names[0] == "RecordingStarted" and "RecordingProgress" in names
            assert seen[-1].stop_position == stop and seen[0].recording_id == recording_id
            # the segment holds CRC-32s in the session id fields (RecordingWriter.computeChecksum)
            path = os.path.join(amd.archive.context.archive_dir, f"{recording_id}-0.rec")
            with open(path, "rb") as f:
                frame = f.read(352)
            stored = int.from_bytes(frame[12:16], "little", signed=True)
            assert stored == new_checksum(checksum).compute(frame[32:352])
            if checksum.endswith("Crc32"):
                assert stored & 0xFFFFFFFF == zlib.crc32(frame[32:352])
            with Catalog(amd.archive.context.archive_dir, read_only=True) as catalog:    # descriptor checksums
                offset = catalog.entry_offset(recording_id)
                length, _, descriptor_checksum = catalog.header_bytes(recording_id)
            with open(os.path.join(amd.archive.context.archive_dir, "archive.catalog"), "rb") as f:
                f.seek(offset + 32)
                assert descriptor_checksum == new_checksum(checksum).compute(f.read(length)) != 0
            # extend the stopped recording with a publication that starts at its stop position
            c.ok(codecs.ExtendRecordingRequestEncoder, recording_id=recording_id, stream_id=3000,
                 source_location=SourceLocation.REMOTE, channel=channel)
            desc = c.list_recordings(codecs.ListRecordingRequestEncoder, recording_id=recording_id)[0]
            bits = desc.term_buffer_length.bit_length() - 1
            ext_channel = (f"{channel}|init-term-id={desc.initial_term_id}|term-id="
                           f"{desc.initial_term_id + (stop >> bits)}|"
                           f"term-offset={stop & (desc.term_buffer_length - 1)}")
            pub2 = aeron.add_exclusive_publication(ext_channel, 3000)
            ext = c.wait_signal(RecordingSignal.EXTEND, recording_id)
            assert ext.position == stop
            second = [b"two" * 100] * 20
            end = publish(pub2, second)
            wait_for(lambda: c.ok(codecs.RecordingPositionRequestEncoder, recording_id=recording_id) >= end,
                     what="extended")
            _, sub = replay(c, aeron, recording_id)
            assert collect(sub, 40) == first + second           # checksums verified on replay
            pub2.close()
            c.close()
    finally:
        amd.close()


def test_response_channel_session_and_token_replay(shm_dir):
    amd, port = _udp_archive(shm_dir)
    try:
        with Aeron.connect(Context(aeron_dir=amd.driver.aeron_dir)) as aeron:
            request = f"aeron:udp?endpoint=127.0.0.1:{port}"
            c = ControlClient(aeron, request, 10, f"aeron:udp?control-mode=response|control=127.0.0.1:{free_port()}",
                              20)
            assert c.connect().code == ControlResponseCode.OK
            messages = [bytes([i]) * 300 for i in range(30)]
            recording_id, sub_id, pub, stop = record(c, aeron, "aeron:ipc?term-length=64k", 1000, messages)
            c.ok(codecs.StopRecordingSubscriptionRequestEncoder, subscription_id=sub_id)
            c.wait_signal(RecordingSignal.STOP, recording_id)
            token = c.ok(codecs.ReplayTokenRequestEncoder, recording_id=recording_id)
            assert token != -1
            # the replay subscription is a response channel; the request goes on a connection of its own
            replay_channel = f"aeron:udp?control-mode=response|control=127.0.0.1:{free_port()}"
            replay_sub = aeron.add_subscription(replay_channel, 1005)
            replay_pub = aeron.add_exclusive_publication(
                f"{request}|response-correlation-id={replay_sub.registration_id}", 10)
            wait_for(lambda: replay_pub.is_connected, what="replay request connection")
            from tests.archive.control_client import encode
            data = encode(codecs.ReplayRequestEncoder, control_session_id=c.control_session_id, correlation_id=777,
                          recording_id=recording_id, position=-1, length=-1, replay_stream_id=1005,
                          file_io_max_length=0, replay_token=token, replay_channel=replay_channel)
            wait_for(lambda: replay_pub.offer(data) > 0, what="replay request sent")
            ok = c.wait_response(777, "ControlResponse")
            assert ok.code == ControlResponseCode.OK, ok
            assert collect(replay_sub, len(messages)) == messages
            # the token was used once: a second request with it is ignored, the session stays fine
            assert c.ok(codecs.ArchiveIdRequestEncoder) == amd.archive.archive_id
            replay_pub.close()
            pub.close()
            c.close()
    finally:
        amd.close()


def test_control_session_ends_when_its_client_goes(client, aeron, archiving_driver):
    conductor = archiving_driver.archive.conductor
    assert client.control_session_id in conductor.sessions
    client.subscription.close()                 # responses can no longer be delivered
    client.publication.close()                  # and the request image goes
    wait_for(lambda: client.control_session_id not in conductor.sessions, what="session aborted")


def test_counters_the_archive_allocates(client, aeron, archiving_driver):
    archive_id = archiving_driver.archive.archive_id
    recording_id, sub_id, pub, stop = record(client, aeron, "aeron:ipc?term-length=64k", 1000, [b"z" * 500] * 10)
    counters = {c.type_id: c for c in aeron.counters_reader.counters() if c.type_id in (100, 101, 102, 113)}
    assert set(counters) == {100, 101, 102, 113}
    rec_pos = counters[100]
    assert rec_pos.label.startswith(f"rec-pos: {recording_id} ")
    assert rec_pos.label.endswith(f" - archiveId={archive_id}")
    key = rec_pos.key
    assert int.from_bytes(key[0:8], "little") == recording_id
    source_length = int.from_bytes(key[12:16], "little")
    assert key[16:16 + source_length] == b"aeron:ipc"
    assert int.from_bytes(key[16 + source_length:24 + source_length], "little", signed=True) == archive_id
    assert aeron.counters_reader.get_counter_value(rec_pos.counter_id) == stop
    assert counters[102].label == f"Archive Control Sessions - archiveId={archive_id}"
    assert aeron.counters_reader.get_counter_value(counters[102].counter_id) == 1
    session = counters[113]
    assert session.label.startswith("control-session: sourceIdentity=aeron:ipc sessionId=")
    wait_for(lambda: aeron.counters_reader.get_counter_value(session.counter_id) == client.control_session_id,
             what="session counter value")
    assert counters[101].label.startswith(f"Archive Errors - archiveId={archive_id} version=")
    client.ok(codecs.StopRecordingSubscriptionRequestEncoder, subscription_id=sub_id)
    client.wait_signal(RecordingSignal.STOP, recording_id)
    wait_for(lambda: all(c.type_id != 100 for c in aeron.counters_reader.counters()), what="rec-pos freed")
    pub.close()


def test_migrate_segments_and_update_channel(client, aeron, archiving_driver):
    archive_dir = archiving_driver.archive.context.archive_dir
    channel = "aeron:ipc?term-length=64k"
    first = [bytes([i % 250]) * 992 for i in range(128)]           # exactly two 64 KiB segments
    src_id, sub_id, pub, stop = record(client, aeron, channel, 1000, first)
    assert stop == 2 * 65536
    client.ok(codecs.StopRecordingSubscriptionRequestEncoder, subscription_id=sub_id)
    client.wait_signal(RecordingSignal.STOP, src_id)
    pub.close()
    # a second recording continuing the stream from the first one's stop position (same term layout)
    desc = client.list_recordings(codecs.ListRecordingRequestEncoder, recording_id=src_id)[0]
    ext = f"{channel}|init-term-id={desc.initial_term_id}|term-id={desc.initial_term_id + 2}|term-offset=0"
    second = [bytes([i % 250]) * 992 for i in range(128, 160)]
    dst_id, sub2, pub2, stop2 = record(client, aeron, ext, 1000, second)
    client.ok(codecs.StopRecordingSubscriptionRequestEncoder, subscription_id=sub2)
    client.wait_signal(RecordingSignal.STOP, dst_id)
    pub2.close()
    assert client.ok(codecs.StartPositionRequestEncoder, recording_id=dst_id) == stop
    assert client.ok(codecs.MigrateSegmentsRequestEncoder, src_recording_id=src_id, dst_recording_id=dst_id) == 2
    client.wait_signal(RecordingSignal.DELETE, src_id)
    assert client.ok(codecs.StartPositionRequestEncoder, recording_id=dst_id) == 0
    assert not [n for n in os.listdir(archive_dir) if n.startswith(f"{src_id}-")]
    _, sub = replay(client, aeron, dst_id, length=-2)
    assert collect(sub, 160) == first + second
    assert client.ok(codecs.UpdateChannelRequestEncoder, recording_id=dst_id,
                     channel="aeron:udp?endpoint=localhost:40123|alias=renamed-and-much-longer-than-before") == 0
    listed = client.list_recordings(codecs.ListRecordingRequestEncoder, recording_id=dst_id)[0]
    assert listed.stripped_channel == "aeron:udp?endpoint=localhost:40123|alias=renamed-and-much-longer-than-before"
    assert listed.start_position == 0 and listed.stop_position == stop2
    unknown = client.call(codecs.UpdateChannelRequestEncoder, recording_id=99, channel="aeron:ipc")
    assert unknown.code == ControlResponseCode.RECORDING_UNKNOWN
