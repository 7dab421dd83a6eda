# SPDX-License-Identifier: Apache-2.0
"""The archive client without an archive: what the proxy encodes (decoded back with the generated codecs), the
pollers over crafted responses, the error mapping, the Context, and a scripted stand-in archive on our embedded
driver for the connect handshake (with a challenge), typed errors, listings, signals and timeouts."""
from __future__ import annotations

import threading
import time
from types import SimpleNamespace
from typing import Any

import pytest

from aeron import Aeron
from aeron import Context as AeronContext
from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.codecs import archive as codecs
from aeron._core.term_reader import Header
from aeron.archive import AeronArchive, ArchiveError, ArchiveErrorCode, ArchiveTimeoutError, Context
from aeron.archive import errors as E
from aeron.archive.client import (ArchiveProxy, ControlResponsePoller, NullCredentialsSupplier, PersistentSubscription,
                                  RecordingDescriptorPoller, RecordingEventsAdapter, RecordingProgress,
                                  RecordingSignalAdapter, RecordingStarted, RecordingStopped,
                                  RecordingSubscriptionDescriptorPoller, ReplayParams, ReplicationParams, State,
                                  connect_op, replay_image_session_id, segment_file_base_position)
from aeron.archive.configuration import NULL_VALUE, PROTOCOL_SEMANTIC_VERSION
from aeron.common import errors as common_errors
from aeron.common.errors import ConfigurationError
from aeron.driver import MediaDriver
from tests.archive.fake_archive import FakeArchive, Reply, default_respond
from tests.support import driver_context

MS = 1_000_000


# -- the proxy ---------------------------------------------------------------------------------------------------
class FakePublication:
    NOT_CONNECTED = -1
    BACK_PRESSURED = -2
    ADMIN_ACTION = -3
    CLOSED = -4
    MAX_POSITION_EXCEEDED = -5
    term_buffer_length = 65536

    def __init__(self, results: list[int] | None = None) -> None:
        self.results = list(results or [])
        self.offered: list[bytes] = []
        self.is_connected = True

    def offer(self, buffer: Any, offset: int, length: int) -> int:
        self.offered.append(bytes(buffer[offset:offset + length]))
        return self.results.pop(0) if self.results else 64


def decode(message: bytes) -> Any:
    header = codecs.MessageHeaderDecoder().wrap(message, 0)
    assert header.schema_id == 101 and header.version == codecs.SCHEMA_VERSION
    decoder = codecs.TEMPLATES[header.template_id][1]().wrap_header(message, 0, len(message))
    assert codecs.MESSAGE_HEADER_LENGTH + decoder.encoded_length == len(message)
    return decoder


CSID, CID = 5, 6
PROXY_CASES = [
    ("start_recording", ("aeron:udp?endpoint=h:1", 9, 1, CID, CSID), "StartRecordingRequest",
     dict(stream_id=9, source_location=1, channel="aeron:udp?endpoint=h:1")),
    ("start_recording", ("aeron:ipc", 9, 0, CID, CSID, True), "StartRecordingRequest2",
     dict(stream_id=9, source_location=0, auto_stop=1, channel="aeron:ipc")),
    ("extend_recording", ("aeron:ipc", 9, 0, 33, CID, CSID), "ExtendRecordingRequest",
     dict(recording_id=33, stream_id=9, channel="aeron:ipc")),
    ("extend_recording", ("aeron:ipc", 9, 1, 33, CID, CSID, False), "ExtendRecordingRequest2",
     dict(recording_id=33, auto_stop=0, source_location=1)),
    ("stop_recording", ("aeron:ipc", 9, CID, CSID), "StopRecordingRequest", dict(stream_id=9, channel="aeron:ipc")),
    ("stop_recording_subscription", (44, CID, CSID), "StopRecordingSubscriptionRequest", dict(subscription_id=44)),
    ("stop_recording_by_identity", (45, CID, CSID), "StopRecordingByIdentityRequest", dict(recording_id=45)),
    ("replay", (3, 64, 1000, "aeron:ipc", 77, CID, CSID), "ReplayRequest",
     dict(recording_id=3, position=64, length=1000, replay_stream_id=77, file_io_max_length=-1, replay_token=-1,
          replay_channel="aeron:ipc")),
    ("bounded_replay", (3, 64, 1000, 12, "aeron:ipc", 77, CID, CSID), "BoundedReplayRequest",
     dict(recording_id=3, position=64, length=1000, limit_counter_id=12, replay_stream_id=77,
          replay_channel="aeron:ipc")),
    ("stop_replay", (1 << 40, CID, CSID), "StopReplayRequest", dict(replay_session_id=1 << 40)),
    ("stop_all_replays", (-1, CID, CSID), "StopAllReplaysRequest", dict(recording_id=-1)),
    ("request_replay_token", (CID, CSID, 8), "ReplayTokenRequest", dict(recording_id=8)),
    ("list_recordings", (2, 10, CID, CSID), "ListRecordingsRequest", dict(from_recording_id=2, record_count=10)),
    ("list_recordings_for_uri", (2, 10, "udp", 9, CID, CSID), "ListRecordingsForUriRequest",
     dict(from_recording_id=2, record_count=10, stream_id=9, channel="udp")),
    ("list_recording", (4, CID, CSID), "ListRecordingRequest", dict(recording_id=4)),
    ("list_recording_subscriptions", (1, 5, "ipc", 9, True, CID, CSID), "ListRecordingSubscriptionsRequest",
     dict(pseudo_index=1, subscription_count=5, apply_stream_id=1, stream_id=9, channel="ipc")),
    ("get_recording_position", (4, CID, CSID), "RecordingPositionRequest", dict(recording_id=4)),
    ("get_start_position", (4, CID, CSID), "StartPositionRequest", dict(recording_id=4)),
    ("get_stop_position", (4, CID, CSID), "StopPositionRequest", dict(recording_id=4)),
    ("get_max_recorded_position", (4, CID, CSID), "MaxRecordedPositionRequest", dict(recording_id=4)),
    ("find_last_matching_recording", (1, "udp", 9, 55, CID, CSID), "FindLastMatchingRecordingRequest",
     dict(min_recording_id=1, session_id=55, stream_id=9, channel="udp")),
    ("truncate_recording", (4, 128, CID, CSID), "TruncateRecordingRequest", dict(recording_id=4, position=128)),
    ("purge_recording", (4, CID, CSID), "PurgeRecordingRequest", dict(recording_id=4)),
    ("detach_segments", (4, 1 << 20, CID, CSID), "DetachSegmentsRequest",
     dict(recording_id=4, new_start_position=1 << 20)),
    ("delete_detached_segments", (4, CID, CSID), "DeleteDetachedSegmentsRequest", dict(recording_id=4)),
    ("purge_segments", (4, 1 << 20, CID, CSID), "PurgeSegmentsRequest", dict(recording_id=4,
                                                                            new_start_position=1 << 20)),
    ("attach_segments", (4, CID, CSID), "AttachSegmentsRequest", dict(recording_id=4)),
    ("migrate_segments", (4, 5, CID, CSID), "MigrateSegmentsRequest", dict(src_recording_id=4, dst_recording_id=5)),
    ("update_channel", (4, "aeron:ipc?alias=x", CID, CSID), "UpdateChannelRequest",
     dict(recording_id=4, channel="aeron:ipc?alias=x")),
    ("stop_replication", (9, CID, CSID), "StopReplicationRequest", dict(replication_id=9)),
    ("archive_id", (CID, CSID), "ArchiveIdRequest", dict()),
    ("keep_alive", (CSID, CID), "KeepAliveRequest", dict()),
]


@pytest.mark.parametrize("method,args,message,fields", PROXY_CASES, ids=[c[0] + "-" + c[2] for c in PROXY_CASES])
def test_proxy_encodes_each_request(method, args, message, fields):
    publication = FakePublication()
    assert getattr(ArchiveProxy(publication), method)(*args) is True
    decoder = decode(publication.offered[-1])
    assert type(decoder).__name__ == message + "Decoder"
    assert decoder.control_session_id == CSID
    assert decoder.correlation_id == CID
    for name, value in fields.items():
        assert getattr(decoder, name) == value, name


def test_proxy_encodes_connect_challenge_close_and_replicate():
    publication = FakePublication()

    class Creds:
        def encoded_credentials(self):
            return b"user:pw"

        def on_challenge(self, challenge):
            return b"answer"

    proxy = ArchiveProxy(publication, credentials_supplier=Creds(), client_info="name=t")
    assert proxy.try_connect("aeron:udp?endpoint=localhost:5555", 20, 12)
    d = decode(publication.offered[-1])
    assert (d.correlation_id, d.response_stream_id, d.version) == (12, 20, PROTOCOL_SEMANTIC_VERSION)
    assert (d.response_channel, d.encoded_credentials, d.client_info) == ("aeron:udp?endpoint=localhost:5555",
                                                                          b"user:pw", "name=t")
    assert proxy.try_challenge_response(b"answer", 13, 99)
    d = decode(publication.offered[-1])
    assert (d.control_session_id, d.correlation_id, d.encoded_credentials) == (99, 13, b"answer")
    assert proxy.close_session(99)
    assert decode(publication.offered[-1]).control_session_id == 99
    params = ReplicationParams(stop_position=4096, dst_recording_id=3, live_destination="aeron:udp?endpoint=l:1",
                               replication_channel="aeron:udp?endpoint=r:0", channel_tag_id=7, subscription_tag_id=8,
                               file_io_max_length=65536, replication_session_id=31, encoded_credentials=b"c",
                               src_response_channel="aeron:udp?endpoint=s:0")
    assert proxy.replicate(11, 10, "aeron:udp?endpoint=src:8010", params, CID, CSID)
    d = decode(publication.offered[-1])
    assert type(d).__name__ == "ReplicateRequest2Decoder"
    assert (d.src_recording_id, d.dst_recording_id, d.stop_position, d.channel_tag_id, d.subscription_tag_id,
            d.src_control_stream_id, d.file_io_max_length, d.replication_session_id) == (11, 3, 4096, 7, 8, 10,
                                                                                         65536, 31)
    assert (d.src_control_channel, d.live_destination, d.replication_channel, d.encoded_credentials,
            d.src_response_channel) == ("aeron:udp?endpoint=src:8010", "aeron:udp?endpoint=l:1",
                                        "aeron:udp?endpoint=r:0", b"c", "aeron:udp?endpoint=s:0")
    assert proxy.replicate(11, 10, "aeron:ipc", ReplicationParams(), CID, CSID)
    d = decode(publication.offered[-1])
    assert (d.dst_recording_id, d.stop_position, d.channel_tag_id, d.replication_session_id) == (-1, -1, -1, -1)
    assert d.live_destination == "" and d.replication_channel == ""


def test_proxy_replay_params_choose_the_request():
    publication = FakePublication()
    proxy = ArchiveProxy(publication)
    proxy.replay_with_params(1, "aeron:ipc", 5, ReplayParams(position=32, length=64, file_io_max_length=65536), 2, 3)
    d = decode(publication.offered[-1])
    assert type(d).__name__ == "ReplayRequestDecoder" and d.file_io_max_length == 65536 and d.position == 32
    proxy.replay_with_params(1, "aeron:ipc", 5, ReplayParams(bounding_limit_counter_id=4, replay_token=9), 2, 3)
    d = decode(publication.offered[-1])
    assert type(d).__name__ == "BoundedReplayRequestDecoder" and d.limit_counter_id == 4 and d.replay_token == 9
    assert d.position == -1 and d.length == -1


def test_proxy_offer_outcomes():
    P = FakePublication
    assert ArchiveProxy(P([P.BACK_PRESSURED, P.ADMIN_ACTION, 64])).get_start_position(1, 2, 3) is True
    assert ArchiveProxy(P([P.BACK_PRESSURED] * 3)).get_start_position(1, 2, 3) is False
    assert ArchiveProxy(P([P.BACK_PRESSURED] * 5), retry_attempts=5).get_start_position(1, 2, 3) is False
    with pytest.raises(ArchiveError, match="closed"):
        ArchiveProxy(P([P.CLOSED])).get_start_position(1, 2, 3)
    with pytest.raises(ArchiveError, match="no longer available"):
        ArchiveProxy(P([P.NOT_CONNECTED])).get_start_position(1, 2, 3)
    with pytest.raises(ArchiveError, match="max position"):
        ArchiveProxy(P([P.MAX_POSITION_EXCEEDED])).get_start_position(1, 2, 3)
    assert ArchiveProxy(P([P.NOT_CONNECTED])).try_connect("aeron:ipc", 1, 2) is False   # one try, no raise


# -- pollers over crafted responses ----------------------------------------------------------------------------------
class ScriptedSubscription:
    """Delivers crafted messages as unfragmented frames, honouring the handler's BREAK/ABORT."""

    def __init__(self, messages: list[bytes]) -> None:
        self.messages = list(messages)
        self.is_connected = True
        self.channel = "aeron:ipc"
        self.stream_id = 20
        self.image_count = 1

    def _deliver(self, handler: Any, limit: int, controlled: bool) -> int:
        count = 0
        while self.messages and count < limit:
            message = self.messages[0]
            frame = bytearray(32 + len(message) + 32)
            frame[0:4] = (32 + len(message)).to_bytes(4, "little")
            frame[5] = 0xC0
            frame[6] = 1
            frame[32:32 + len(message)] = message
            buffer = AtomicBuffer(frame)
            header = Header(0, 16).wrap(buffer, 0)
            action = handler(buffer, 32, len(message), header)
            del header, buffer
            if controlled and action == 1:     # ABORT
                break
            self.messages.pop(0)
            count += 1
            if controlled and action == 2:     # BREAK
                break
        return count

    def controlled_poll(self, handler: Any, limit: int) -> int:
        return self._deliver(handler, limit, True)

    def poll(self, handler: Any, limit: int) -> int:
        return self._deliver(handler, limit, False)


def crafted(encoder_class: Any, var: dict[str, Any] | None = None, **fields: Any) -> bytes:
    buf = bytearray(8192)
    e = encoder_class().wrap_and_apply_header(buf, 0)
    for name, value in fields.items():
        setattr(e, name, value)
    for name, value in (var or {}).items():
        getattr(e, "put_" + name)(value)
    return bytes(buf[:8 + e.encoded_length])


def response(csid: int, cid: int, relevant: int, code: int = 0, message: str = "", version: int = 0) -> bytes:
    return crafted(codecs.ControlResponseEncoder, {"error_message": message}, control_session_id=csid,
                   correlation_id=cid, relevant_id=relevant, code=code, version=version)


def signal(csid: int, cid: int, recording_id: int, sig: int) -> bytes:
    return crafted(codecs.RecordingSignalEventEncoder, control_session_id=csid, correlation_id=cid,
                   recording_id=recording_id, subscription_id=3, position=640, signal=sig)


def descriptor(csid: int, cid: int, recording_id: int) -> bytes:
    return crafted(codecs.RecordingDescriptorEncoder, {"stripped_channel": "aeron:ipc", "original_channel":
                                                       "aeron:ipc?alias=a", "source_identity": "aeron:ipc"},
                   control_session_id=csid, correlation_id=cid, recording_id=recording_id, start_position=0,
                   stop_position=128, initial_term_id=5, segment_file_length=1 << 20, term_buffer_length=65536,
                   mtu_length=1408, session_id=8, stream_id=1001, start_timestamp=1, stop_timestamp=2)


def test_control_response_poller_reads_one_message_at_a_time():
    ping = crafted(codecs.PingEncoder, control_session_id=1)
    challenge = crafted(codecs.ChallengeEncoder, {"encoded_challenge": b"nonce"}, control_session_id=1,
                        correlation_id=4, version=7)
    sub = ScriptedSubscription([ping, response(1, 2, 3, 0, "", 0x010C00), signal(1, 2, 9, 1), challenge])
    poller = ControlResponsePoller(sub)
    poller.poll()
    assert poller.is_poll_complete and poller.template_id == 1
    assert (poller.control_session_id, poller.correlation_id, poller.relevant_id, poller.code, poller.version) == \
        (1, 2, 3, codecs.ControlResponseCode.OK, 0x010C00)
    poller.poll()
    assert poller.template_id == 24 and poller.recording_signal == codecs.RecordingSignal.STOP
    event = poller.signal_event()
    assert (event.recording_id, event.subscription_id, event.position) == (9, 3, 640)
    poller.poll()
    assert poller.was_challenged and poller.encoded_challenge == b"nonce" and poller.correlation_id == 4
    poller.poll()
    assert not poller.is_poll_complete and poller.code is None and poller.correlation_id == -1


def test_control_response_poller_rejects_another_schema():
    bad = bytearray(response(1, 2, 3))
    bad[4:6] = (99).to_bytes(2, "little")
    with pytest.raises(ArchiveError, match="expected schemaId=101"):
        ControlResponsePoller(ScriptedSubscription([bytes(bad)])).poll()


def test_descriptor_poller_dispatches_until_unknown_and_routes_signals_and_other_errors():
    signals, errors, got = [], [], []
    sub = ScriptedSubscription([descriptor(1, 7, 0), descriptor(2, 7, 1), descriptor(1, 8, 2), signal(1, 5, 3, 0),
                                response(1, 6, 5, 1, "other request failed"), descriptor(1, 7, 4),
                                response(1, 7, 5, codecs.ControlResponseCode.RECORDING_UNKNOWN)])
    poller = RecordingDescriptorPoller(sub, 1, errors.append, signals.append)
    poller.reset(7, 10, got.append)
    while not poller.is_dispatch_complete:
        assert poller.poll() > 0
    assert [d.recording_id for d in got] == [0, 4] and poller.remaining_count == 8
    assert got[0].original_channel == "aeron:ipc?alias=a" and got[0].stop_position == 128
    assert [s.recording_id for s in signals] == [3]
    assert isinstance(errors[0], E.UnknownRecordingError) and errors[0].correlation_id == 6


def test_descriptor_poller_stops_at_the_count_and_raises_its_own_error():
    got = []
    poller = RecordingDescriptorPoller(ScriptedSubscription([descriptor(1, 7, 0), descriptor(1, 7, 1)]), 1)
    poller.reset(7, 1, got.append)
    poller.poll()
    assert poller.is_dispatch_complete and len(got) == 1
    poller = RecordingDescriptorPoller(ScriptedSubscription([response(1, 7, 1, 1, "busy")]), 1)
    poller.reset(7, 1, got.append)
    with pytest.raises(E.ActiveListingError, match="busy"):
        poller.poll()


def test_subscription_descriptor_poller_ends_at_subscription_unknown():
    got = []
    entry = crafted(codecs.RecordingSubscriptionDescriptorEncoder, {"stripped_channel": "aeron:ipc"},
                    control_session_id=1, correlation_id=7, subscription_id=66, stream_id=9)
    poller = RecordingSubscriptionDescriptorPoller(ScriptedSubscription(
        [entry, response(1, 7, 0, codecs.ControlResponseCode.SUBSCRIPTION_UNKNOWN)]), 1)
    poller.reset(7, 5, got.append)
    while not poller.is_dispatch_complete:
        poller.poll()
    assert [(g.subscription_id, g.stream_id, g.stripped_channel) for g in got] == [(66, 9, "aeron:ipc")]


def test_recording_signal_adapter_and_events_adapter():
    responses, signals = [], []
    adapter = RecordingSignalAdapter(1, lambda *a: responses.append(a), signals.append,
                                     ScriptedSubscription([response(1, 2, 3), response(9, 2, 3), signal(1, 2, 4, 6),
                                                           signal(1, 2, 5, 0)]))
    adapter.poll()
    assert len(signals) == 1 and signals[0].signal == codecs.RecordingSignal.DELETE
    assert responses == [(1, 2, 3, codecs.ControlResponseCode.OK, "")]
    adapter.poll()
    assert len(signals) == 2
    events = []
    started = crafted(codecs.RecordingStartedEncoder, {"channel": "aeron:ipc", "source_identity": "aeron:ipc"},
                      recording_id=1, start_position=0, session_id=2, stream_id=3)
    progress = crafted(codecs.RecordingProgressEncoder, recording_id=1, start_position=0, position=64)
    stopped = crafted(codecs.RecordingStoppedEncoder, recording_id=1, start_position=0, stop_position=96)
    RecordingEventsAdapter(events.append, ScriptedSubscription([started, progress, stopped])).poll()
    assert events == [RecordingStarted(1, 0, 2, 3, "aeron:ipc", "aeron:ipc"), RecordingProgress(1, 0, 64),
                      RecordingStopped(1, 0, 96)]


# -- errors ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("code", list(ArchiveErrorCode))
def test_every_error_code_has_its_class(code):
    error = E.archive_error("boom", int(code), 42)
    assert type(error) is E.ERROR_CLASSES[code] and type(error).ERROR_CODE == code
    assert error.error_code == code and error.code == code and error.correlation_id == 42
    assert isinstance(error, ArchiveError) and isinstance(error, common_errors.ArchiveError)
    assert code.name in str(error) and "boom" in str(error)


def test_unknown_error_code_and_timeout_error():
    error = E.archive_error("new", 99)
    assert type(error) is ArchiveError and error.error_code == 99
    timeout = ArchiveTimeoutError("late")
    assert isinstance(timeout, TimeoutError) and isinstance(timeout, ArchiveError)
    assert timeout.error_code == ArchiveErrorCode.GENERIC
    assert len(E.ERROR_CLASSES) == len(ArchiveErrorCode) == 17


# -- context and helpers ----------------------------------------------------------------------------------------------
class FakeAeron:
    conductor_agent_invoker = None
    is_closed = False

    def next_session_id(self, stream_id: int) -> int:
        return -12345

    def response_idle_strategy(self, stream_id: int, fallback: object) -> object:
        return fallback         # as on a driver that is not ours


def test_context_reads_environment_then_properties_then_keywords():
    env = {"AERON_ARCHIVE_CONTROL_CHANNEL": "aeron:udp?endpoint=env:1", "AERON_ARCHIVE_CONTROL_STREAM_ID": "11",
           "AERON_ARCHIVE_MESSAGE_TIMEOUT": "2s", "AERON_ARCHIVE_CONTROL_TERM_BUFFER_SPARSE": "false",
           "AERON_DIR": "/dev/shm/x"}
    ctx = Context({"aeron.archive.control.stream.id": "12", "aeron.archive.control.response.channel":
                   "aeron:udp?endpoint=localhost:0"}, environ=env, control_response_stream_id=21)
    assert ctx.control_request_channel == "aeron:udp?endpoint=env:1"
    assert ctx.control_request_stream_id == 12
    assert ctx.control_response_stream_id == 21
    assert ctx.message_timeout_ns == 2_000_000_000
    assert ctx.control_term_buffer_sparse is False and ctx.aeron_dir == "/dev/shm/x"
    ctx.update(["-Daeron.archive.control.mtu.length=4k", "aeron.archive.client.name=me"])
    assert ctx.control_mtu_length == 4096 and ctx.client_name == "me"
    with pytest.raises(TypeError, match="no_such_setting"):     # a named keyword each: mypy refuses it too
        Context(environ={}, no_such_setting=1)  # type: ignore[call-arg]
    with pytest.raises(ConfigurationError, match="aeron.archive.control.stream.id"):
        Context({"aeron.archive.control.stream.id": "ten"}, environ={})
    with pytest.raises(ConfigurationError, match="unknown archive client property"):
        Context({"aeron.archive.nope": "1"}, environ={})


def test_context_conclude_adds_the_control_channel_defaults_and_a_shared_session_id():
    ctx = Context(environ={}, control_request_channel="aeron:udp?endpoint=localhost:8010",
                  control_response_channel="aeron:udp?endpoint=localhost:0|mtu=8k")
    ctx.aeron = FakeAeron()
    ctx.conclude()
    assert ctx.control_request_channel == ("aeron:udp?endpoint=localhost:8010|term-length=65536|mtu=1408|"
                                           "sparse=true|session-id=-12345")
    assert "mtu=8k" in ctx.control_response_channel and "session-id=-12345" in ctx.control_response_channel
    assert isinstance(ctx.credentials_supplier, NullCredentialsSupplier) and ctx.idle_strategy is not None
    with pytest.raises(common_errors.IllegalStateError):
        ctx.conclude()
    response_mode = Context(environ={}, control_request_channel="aeron:udp?endpoint=localhost:8010",
                            control_response_channel="aeron:udp?control=localhost:9|control-mode=response")
    response_mode.aeron = FakeAeron()
    assert "session-id" not in response_mode.conclude().control_request_channel
    for missing in (dict(control_response_channel="aeron:ipc"), dict(control_request_channel="aeron:ipc")):
        with pytest.raises(ConfigurationError, match="must be set"):
            Context(environ={}, **missing).conclude()
    with pytest.raises(ConfigurationError, match="message_retry_attempts"):
        Context(environ={}, control_request_channel="aeron:ipc", control_response_channel="aeron:ipc",
                message_retry_attempts=0).conclude()


def test_segment_file_base_position_and_replay_session_id():
    assert segment_file_base_position(0, 0, 65536, 1 << 20) == 0
    assert segment_file_base_position(0, (1 << 20) + 5, 65536, 1 << 20) == 1 << 20
    assert segment_file_base_position(70000, 70000, 65536, 1 << 20) == 65536
    assert segment_file_base_position(70000, 65536 + (1 << 20), 65536, 1 << 20) == 65536 + (1 << 20)
    assert replay_image_session_id((5 << 32) | 17) == 17
    assert replay_image_session_id((5 << 32) | 0xFFFF_FFFE) == -2


# -- a scripted archive on our embedded driver ---------------------------------------------------------------------
@pytest.fixture
def driver():
    with MediaDriver.launch_embedded(driver_context(ipc_term_buffer_length=65536, timer_interval_ns=50 * MS,
                                                    publication_linger_timeout_ns=100 * MS)) as d:
        yield d


def ipc_context(aeron_dir: str, **settings: Any) -> Context:
    values: dict[str, Any] = dict(control_request_channel="aeron:ipc", control_response_channel="aeron:ipc",
                                  aeron_dir=aeron_dir, message_timeout_ns=2_000 * MS)
    values.update(settings)
    return Context(environ={}, **values)


def test_connect_handshake_then_requests_against_a_scripted_archive(driver):
    fake = FakeArchive(driver.aeron_dir)
    try:
        with AeronArchive.connect(ipc_context(driver.aeron_dir, client_name="unit")) as archive:
            assert archive.control_session_id == 777 and archive.archive_id == 4242
            connect = fake.of("AuthConnectRequest")[0]
            assert connect.version == PROTOCOL_SEMANTIC_VERSION and "name=unit" in connect.client_info
            assert "session-id=" in connect.response_channel and connect.response_stream_id == 20
            assert archive.get_start_position(3) == 0
            assert fake.of("StartPositionRequest")[0].recording_id == 3
            keep_alive = fake.of("KeepAliveRequest")[0]
            assert (keep_alive.control_session_id, keep_alive.correlation_id) == (777, -1)
            archive.keep_alive()
            deadline = time.monotonic() + 5
            while len(fake.of("KeepAliveRequest")) < 2:
                assert time.monotonic() < deadline
                time.sleep(0.001)
            assert fake.of("KeepAliveRequest")[1].correlation_id > 0
        # the close request is on its way when close() returns: the fake's thread reads it when it next polls
        deadline = time.monotonic() + 5
        while not fake.of("CloseSessionRequest"):
            assert time.monotonic() < deadline, "the close request never reached the archive"
            time.sleep(0.001)
        assert fake.of("CloseSessionRequest")[0].control_session_id == 777
    finally:
        fake.close()


def test_async_connect_steps_without_blocking_and_close_abandons_it(driver):
    fake = FakeArchive(driver.aeron_dir)
    try:
        connecting = AeronArchive.async_connect(ipc_context(driver.aeron_dir))
        steps = 0
        deadline = time.monotonic() + 10
        while (archive := connecting.poll()) is None:
            steps += 1
            assert time.monotonic() < deadline
            time.sleep(0.001)
        assert steps > 0 and archive.archive_id == 4242 and connecting.poll() is archive
        archive.close()
        abandoned = AeronArchive.async_connect(ipc_context(driver.aeron_dir))
        abandoned.poll()
        aeron = abandoned.context.aeron
        abandoned.close()
        assert aeron.is_closed                      # its own client, closed with the abandoned connect
        with pytest.raises(common_errors.IllegalStateError):
            abandoned.poll()
    finally:
        fake.close()


@pytest.mark.parametrize("kind", ["subscription", "exclusive_publication"])
@pytest.mark.parametrize("code, connects", [(common_errors.ErrorCode.RESOURCE_TEMPORARILY_UNAVAILABLE, True),
                                            (common_errors.ErrorCode.GENERIC_ERROR, False)])
def test_connect_adds_again_only_while_the_driver_says_temporarily_unavailable(driver, monkeypatch, kind, code,
                                                                                connects):
    # an endpoint of the same channel still closing (a client of that channel just closed): AeronArchive.AsyncConnect
    # makes the add again; any other refusal ends the connect
    fake = FakeArchive(driver.aeron_dir)
    try:
        with Aeron.connect(AeronContext(aeron_dir=driver.aeron_dir)) as aeron:
            refused: list[int] = []
            add, get = getattr(aeron, f"async_add_{kind}"), getattr(aeron, f"get_{kind}")
            refused_id = 1 << 60                        # an add the driver refused: nothing of it is left

            def add_refused_once(*args, **kwargs):
                return refused_id if not refused else add(*args, **kwargs)

            def get_refused_once(registration_id):
                if registration_id == refused_id:
                    refused.append(registration_id)
                    raise common_errors.RegistrationError(code, "refused by the test", registration_id)
                return get(registration_id)

            monkeypatch.setattr(aeron, f"async_add_{kind}", add_refused_once)
            monkeypatch.setattr(aeron, f"get_{kind}", get_refused_once)
            ctx = ipc_context(driver.aeron_dir)
            ctx.aeron = aeron
            if connects:
                with AeronArchive.connect(ctx) as archive:
                    assert archive.archive_id == 4242
            else:
                with pytest.raises(common_errors.RegistrationError) as raised:
                    AeronArchive.connect(ctx)
                assert raised.value.error_code == code
            assert len(refused) == 1
    finally:
        fake.close()


def test_connect_answers_a_challenge_with_the_credentials_supplier(driver):
    def respond(request: Any, reply: Reply) -> None:
        name = type(request).__name__
        if name == "AuthConnectRequestDecoder":
            reply.challenge(request.correlation_id, b"what is the word")
        elif name == "ChallengeResponseDecoder":
            if request.encoded_credentials == b"bird":
                reply.response(request.correlation_id, 777)
            else:
                reply.response(request.correlation_id, 10, codecs.ControlResponseCode.ERROR, "authentication rejected")
        else:
            default_respond(request, reply)

    class Supplier:
        def __init__(self, answer: bytes) -> None:
            self.answer = answer
            self.challenges: list[bytes] = []

        def encoded_credentials(self) -> bytes:
            return b"user"

        def on_challenge(self, challenge: bytes) -> bytes:
            self.challenges.append(challenge)
            return self.answer

    fake = FakeArchive(driver.aeron_dir, respond)
    try:
        good = Supplier(b"bird")
        with AeronArchive.connect(ipc_context(driver.aeron_dir, credentials_supplier=good)) as archive:
            assert archive.control_session_id == 777 and good.challenges == [b"what is the word"]
            assert fake.of("AuthConnectRequest")[0].encoded_credentials == b"user"
    finally:
        fake.close()
    fake = FakeArchive(driver.aeron_dir, respond)
    try:
        with pytest.raises(E.AuthenticationRejectedError, match="authentication rejected"):
            AeronArchive.connect(ipc_context(driver.aeron_dir, credentials_supplier=Supplier(b"cat")))
    finally:
        fake.close()


def test_error_answers_become_typed_errors_and_others_go_to_the_error_handler(driver):
    def respond(request: Any, reply: Reply) -> None:
        name = type(request).__name__
        if name == "StopReplayRequestDecoder":
            reply.response(request.correlation_id - 1000, 1, codecs.ControlResponseCode.ERROR, "stale")
            reply.signal(request.correlation_id, 12, codecs.RecordingSignal.STOP)
            reply.response(request.correlation_id, 1, codecs.ControlResponseCode.OK, control_session_id=5)
            reply.response(request.correlation_id, 6, codecs.ControlResponseCode.ERROR, "no replay")
        elif name == "StopReplicationRequestDecoder":
            reply.response(request.correlation_id, 12, codecs.ControlResponseCode.ERROR, "no replication")
        elif name == "StartPositionRequestDecoder":
            reply.response(request.correlation_id, 0, codecs.ControlResponseCode.RECORDING_UNKNOWN)
        else:
            default_respond(request, reply)

    fake = FakeArchive(driver.aeron_dir, respond)
    handled: list[BaseException] = []
    signals: list[Any] = []
    try:
        ctx = ipc_context(driver.aeron_dir, error_handler=handled.append, recording_signal_consumer=signals.append)
        with AeronArchive.connect(ctx) as archive:
            with pytest.raises(E.UnknownReplayError, match="no replay") as info:
                archive.stop_replay(1 << 33)
            assert info.value.error_code == 6 and info.value.correlation_id == archive.last_correlation_id
            assert [type(h) for h in handled] == [E.ActiveListingError] and "stale" in str(handled[0])
            assert [s.recording_id for s in signals] == [12]
            assert archive.try_stop_replication(5) is False
            with pytest.raises(ArchiveError, match="unexpected response code"):
                archive.get_start_position(1)
    finally:
        fake.close()


def test_listing_collects_fragmented_descriptors_from_the_scripted_archive(driver):
    def respond(request: Any, reply: Reply) -> None:
        name = type(request).__name__
        if name == "ListRecordingsRequestDecoder":
            for i in range(request.record_count):
                reply.descriptor(request.correlation_id, request.from_recording_id + i)
        elif name == "ListRecordingRequestDecoder":
            reply.response(request.correlation_id, request.recording_id, codecs.ControlResponseCode.RECORDING_UNKNOWN)
        elif name == "ListRecordingSubscriptionsRequestDecoder":
            reply.subscription_descriptor(request.correlation_id, 31)
            reply.response(request.correlation_id, 0, codecs.ControlResponseCode.SUBSCRIPTION_UNKNOWN)
        else:
            default_respond(request, reply)

    fake = FakeArchive(driver.aeron_dir, respond)
    try:
        with AeronArchive.connect(ipc_context(driver.aeron_dir)) as archive:
            got: list[Any] = []
            assert archive.list_recordings(10, 3, got.append) == 3
            assert [d.recording_id for d in got] == [10, 11, 12]
            assert got[0].source_identity == "src" * 800 and got[0].original_channel.endswith("|alias=a")
            assert archive.list_recording(5, got.append) == 0
            subs: list[Any] = []
            assert archive.list_recording_subscriptions(0, 4, "", 0, False, subs.append) == 1
            assert subs[0].subscription_id == 31

            def reenter(descriptor: Any) -> None:
                archive.get_start_position(1)
            with pytest.raises(common_errors.IllegalStateError, match="reentrant"):
                archive.list_recordings(0, 1, reenter)
    finally:
        fake.close()


def test_a_silent_archive_times_out(driver):
    def respond(request: Any, reply: Reply) -> None:
        if type(request).__name__ != "StopPositionRequestDecoder":
            default_respond(request, reply)

    fake = FakeArchive(driver.aeron_dir, respond)
    try:
        with AeronArchive.connect(ipc_context(driver.aeron_dir, message_timeout_ns=300 * MS)) as archive:
            with pytest.raises(ArchiveTimeoutError, match="awaiting response"):
                archive.get_stop_position(1)
            assert archive.get_start_position(1) == 0        # still usable
    finally:
        fake.close()
    with pytest.raises(ArchiveTimeoutError, match="Archive connect timeout"):    # nobody on the control stream
        AeronArchive.connect(ipc_context(driver.aeron_dir, message_timeout_ns=300 * MS))


def test_response_stream_loss_disconnects_the_client(driver):
    fake = FakeArchive(driver.aeron_dir, lambda r, reply: (default_respond(r, reply)
                                                           if type(r).__name__ != "StopPositionRequestDecoder"
                                                           else None))
    archive = AeronArchive.connect(ipc_context(driver.aeron_dir, message_timeout_ns=5_000 * MS))
    try:
        fake.publication.close()
        with pytest.raises(ArchiveError, match="response channel from archive is not connected"):
            archive.get_stop_position(1)
        assert archive.state is State.DISCONNECTED
        with pytest.raises(ArchiveError, match="disconnected"):
            archive.get_start_position(1)
        assert archive.state is State.CLOSED
    finally:
        archive.close()
        fake.close()


# -- requests abandoned before the driver answered -------------------------------------------------------------------
@pytest.fixture
def invoked_driver():
    """A driver that answers only when the test runs its duty cycle: an add stays unanswered until then."""
    with MediaDriver.launch_embedded(driver_context(threading_mode="INVOKER", ipc_term_buffer_length=65536)) as d:
        yield d


def publication_links(driver: Any, aeron: Any, kind: str = "publication_links") -> dict[int, Any]:
    """The driver's publications (or ``subscriptions``) held for ``aeron``'s client, by registration id, after a
    few duty cycles."""
    for _ in range(20):
        driver.do_work()
    client = driver.conductor.clients.get(aeron.client_id)
    return dict(getattr(client, kind)) if client is not None else {}


def test_a_replay_request_publication_abandoned_before_it_is_made_is_removed(invoked_driver):
    # a replication stopped while its request publication is being created closes the operation making it
    with Aeron.connect(AeronContext(aeron_dir=invoked_driver.aeron_dir)) as aeron:
        stand_in = SimpleNamespace(aeron=aeron, last_correlation_id=NULL_VALUE,
                                   context=SimpleNamespace(control_request_channel="aeron:ipc",
                                                           control_term_buffer_length=65536,
                                                           control_request_stream_id=10,
                                                           message_timeout_ns=2_000 * MS))
        op = AeronArchive.replay_request_publication_op(stand_in, 12345)
        assert next(op) == 0                            # asked for, not answered: the driver has not run
        op.close()
        assert publication_links(invoked_driver, aeron) == {}
        # the same operation let finish keeps its publication (the check above can see one)
        op = AeronArchive.replay_request_publication_op(stand_in, 12345)
        next(op)
        for _ in range(200):
            invoked_driver.do_work()
            try:
                next(op)
            except StopIteration:
                break
        assert len(publication_links(invoked_driver, aeron)) == 1


def test_async_remove_of_an_add_not_yet_answered_and_of_one_answered(invoked_driver):
    with Aeron.connect(AeronContext(aeron_dir=invoked_driver.aeron_dir)) as aeron:
        pending = aeron.async_add_exclusive_publication("aeron:ipc", 11)
        aeron.async_remove_publication(pending)
        answered = aeron.async_add_publication("aeron:ipc", 12)
        assert set(publication_links(invoked_driver, aeron)) == {answered}
        aeron.async_remove_publication(answered)            # answered but not fetched: closed as usual
        assert publication_links(invoked_driver, aeron) == {}
        with pytest.raises(common_errors.InvalidArgumentError):
            aeron.get_publication(answered)                 # forgotten by the client too
        subscription = aeron.async_add_subscription("aeron:ipc", 13)
        with pytest.raises(common_errors.InvalidArgumentError):
            aeron.async_remove_publication(subscription)     # not a publication
        aeron.async_remove_subscription(subscription)
        assert publication_links(invoked_driver, aeron, "subscriptions") == {}
        counter = aeron.async_add_counter(1001, "removed before made")
        aeron.async_remove_counter(counter)
        assert publication_links(invoked_driver, aeron, "counters") == {}
        aeron.async_remove_publication(987654321)           # unknown: nothing to do


def test_operations_abandoned_before_the_driver_answered_their_adds_remove_them(invoked_driver):
    # the sync and async drivers close an operation they stop early: what it asked the driver for goes too
    with Aeron.connect(AeronContext(aeron_dir=invoked_driver.aeron_dir)) as aeron:
        stand_in = SimpleNamespace(aeron=aeron, _ensure_connected=lambda: None, _ensure_not_reentrant=lambda: None)
        for exclusive in (False, True):
            op = AeronArchive._add_recorded_publication_op(stand_in, "aeron:ipc", 21, exclusive)
            assert next(op) == 0                        # asked for, not answered: the driver has not run
            op.close()
            assert publication_links(invoked_driver, aeron) == {}
        op = AeronArchive._add_subscription_op(stand_in, "aeron:ipc", 22, None, None)    # replay_op's
        assert next(op) == 0
        op.close()
        assert publication_links(invoked_driver, aeron, "subscriptions") == {}
        op = AeronArchive._add_subscription_op(stand_in, "aeron:ipc", 22, None, None)    # one let finish stays
        next(op)
        for _ in range(200):
            invoked_driver.do_work()
            try:
                next(op)
            except StopIteration:
                break
        assert len(publication_links(invoked_driver, aeron, "subscriptions")) == 1


def test_a_persistent_subscription_removes_adds_the_driver_has_not_answered(invoked_driver):
    # its clean-ups run on loss of the archive or of the live image, when an add may still be pending
    with Aeron.connect(AeronContext(aeron_dir=invoked_driver.aeron_dir)) as aeron:
        stand_in = SimpleNamespace(
            _aeron=aeron, _request_publication=None,
            _request_publication_id=aeron.async_add_exclusive_publication("aeron:ipc", 31),
            _replay_subscription=None, _replay_subscription_id=aeron.async_add_subscription("aeron:ipc", 32),
            _live_subscription=None, _live_subscription_id=aeron.async_add_subscription("aeron:ipc", 33))
        PersistentSubscription._clean_up_request_publication(stand_in)
        PersistentSubscription._clean_up_replay_subscription(stand_in)
        PersistentSubscription._clean_up_live_subscription(stand_in)
        assert publication_links(invoked_driver, aeron) == {}
        assert publication_links(invoked_driver, aeron, "subscriptions") == {}
        assert (stand_in._request_publication_id, stand_in._replay_subscription_id,
                stand_in._live_subscription_id) == (NULL_VALUE, NULL_VALUE, NULL_VALUE)
        stand_in._live_subscription_id = aeron.async_add_subscription("aeron:ipc", 34)     # without the clean-up
        assert len(publication_links(invoked_driver, aeron, "subscriptions")) == 1


def test_a_connect_abandoned_before_the_driver_answered_leaves_nothing_on_the_application_client(invoked_driver):
    with Aeron.connect(AeronContext(aeron_dir=invoked_driver.aeron_dir)) as aeron:
        ctx = ipc_context(invoked_driver.aeron_dir)
        ctx.aeron = aeron
        concluded = threading.Event()
        runner = threading.Thread(target=lambda: [invoked_driver.do_work() for _ in iter(concluded.is_set, True)])
        runner.start()                                  # the driver answers conclude's session id request
        try:
            ctx.conclude()
        finally:
            concluded.set()
            runner.join()
        connecting = connect_op(ctx)                    # as a replication session drives it
        assert next(connecting) == 0                    # the response subscription asked for, not answered
        connecting.close()
        assert not aeron.is_closed                      # the application's client stays open...
        assert publication_links(invoked_driver, aeron, "subscriptions") == {}      # ...with nothing left on it
        assert publication_links(invoked_driver, aeron) == {}


# -- the operations: the contract between the protocol and the client's faces ------------------------------------

def _request_methods():
    """AeronArchive's request methods: the public ones that run an operation (``self._run(self.x_op(...))``)."""
    import ast
    import inspect
    import textwrap
    names = []
    for name, function in inspect.getmembers(AeronArchive, inspect.isfunction):
        if name.startswith("_") or name.endswith("_op"):
            continue
        tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)]
        if any(c.func.attr == "_run" for c in calls):
            names.append(name)
    return names


def test_every_request_method_runs_its_public_operation_with_the_same_signature():
    import inspect
    names = _request_methods()
    assert len(names) >= 35 and {"start_recording", "replay", "list_recordings", "replicate"} <= set(names)
    for name in names:
        op = getattr(AeronArchive, f"{name}_op")
        assert inspect.signature(op).parameters == inspect.signature(getattr(AeronArchive, name)).parameters, name
        assert inspect.isgeneratorfunction(op) and op.__doc__, name


def test_the_asyncio_face_uses_only_the_public_operations():
    import ast
    import inspect

    import aeron.aio.archive
    tree = ast.parse(inspect.getsource(aeron.aio.archive))
    private = sorted({n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
                      and isinstance(n.value, ast.Attribute) and n.value.attr == "archive" and n.attr.startswith("_")})
    assert private == []
    used = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr.endswith("_op")}
    assert {f"{name}_op" for name in _request_methods()} <= used
