# SPDX-License-Identifier: Apache-2.0
"""ArchiveConductor: the archive's agent (Aeron ArchiveConductor).

It polls the control subscriptions, runs the control sessions, validates requests against the catalog, and starts
recording and replay sessions, which run on the recorder and the replayer (two SessionWorker agents: their own
threads in DEDICATED mode, the conductor's in SHARED and INVOKER modes). A session that ends is handed back to the
conductor, which updates the catalog and sends its signals, so that only the conductor thread writes the catalog.
"""
from __future__ import annotations

import os
import random
import struct
import sys
import threading
import traceback
from collections import deque
from typing import TYPE_CHECKING, Any

from aeron._core.codecs import archive as codecs
from aeron._core.codecs.archive import BooleanType, ControlResponseCode, RecordingSignal, RecordingState, SourceLocation
from aeron._core.fragment_assembler import FragmentAssembler
from aeron._core.logbuffer import FRAME_ALIGNMENT
from aeron._core.term_reader import any_fragment_pending
from aeron.archive.archive_mark_file import ArchiveMarkFile
from aeron.archive.catalog import Catalog
from aeron.archive.checksums import new_checksum
from aeron.archive.configuration import NULL_POSITION, NULL_VALUE
from aeron.common.wakeup import stream_bit
from aeron.archive.control_session import (ControlResponseProxy, ControlSession, ControlSessionAdapter, RequestError,
                                           SessionState)
from aeron.archive.errors import ArchiveErrorCode
from aeron.archive.recording_session import RecordingSession, checksum_kind
from aeron.archive.replay_session import ReplaySession
from aeron.archive.replication_session import ReplicationSession, replicate_request_problem
from aeron.archive.segments import parse_segment_file_name, segment_file_base_position, segment_file_name
from aeron.common.agent import Agent, CompositeAgent
from aeron.common.channel_uri import (CONTROL_MODE_RESPONSE, RESPONSE_CORRELATION_ID_PARAM_NAME, SPY_PREFIX, ChannelUri,
                                      parse_size)
from aeron.common.constants import INT64_MAX
from aeron.common.errors import AeronError, InvalidChannelError, RegistrationError
from aeron.common.version import __version__

if TYPE_CHECKING:
    from aeron.archive.archive import Context
    from aeron.client.aeron import Aeron
    from aeron.client.image import Image

RECORDING_POSITION_TYPE_ID = 100       # RecordingPos.RECORDING_POSITION_TYPE_ID
ARCHIVE_ERROR_COUNT_TYPE_ID = 101
ARCHIVE_CONTROL_SESSIONS_TYPE_ID = 102
ARCHIVE_CONTROL_SESSION_TYPE_ID = 113
MAX_KEY_LENGTH = 112
MAX_LABEL_LENGTH = 380
MARK_FILE_UPDATE_INTERVAL_NS = 1_000_000_000
COUNTER_RECORD_ALLOCATED = 1

# the request-channel parameters a recording keeps, in ChannelUriStringBuilder's order
_STRIPPED_KEYS = ("tags", "endpoint", "interface", "control", "control-mode", "session-id", "ttl", "alias", "cc",
                  "fc", "gtag", "tether", "group", "rejoin", "so-sndbuf", "so-rcvbuf", "rcv-wnd",
                  "media-rcv-ts-offset", "channel-rcv-ts-offset", "channel-snd-ts-offset", "response-endpoint",
                  "response-correlation-id", "stream-id")
_SIZE_KEYS = ("so-sndbuf", "so-rcvbuf", "rcv-wnd")
# what identifies a recording subscription (Aeron ArchiveConductor.makeKey)
_KEY_PARAMS = ("endpoint", "interface", "control", "session-id", "tags")


def _format_size(text: str) -> str:
    # byte sizes are re-formatted with the largest exact g/m/k suffix, as ChannelUriStringBuilder prints them
    try:
        value = parse_size(text)
    except (AeronError, ValueError):
        return text
    for suffix, shift in (("g", 30), ("m", 20), ("k", 10)):
        if value and value % (1 << shift) == 0:
            return f"{value >> shift}{suffix}"
    return str(value)


def stripped_channel(uri: ChannelUri) -> str:
    """The channel a catalog entry stores: media plus the kept parameters, in Aeron's order."""
    parts = []
    for key in _STRIPPED_KEYS:
        value = uri.get(key)
        if value is not None:
            parts.append(f"{key}={_format_size(value) if key in _SIZE_KEYS else value}")
    head = "aeron:" + uri.media
    return head + "?" + "|".join(parts) if parts else head


def subscription_key(stream_id: int, uri: ChannelUri) -> str:
    """Identity of a recording subscription: stream id, media and the addressing parameters."""
    return f"{stream_id}:{uri.media}:" + "|".join(f"{k}={uri.get(k)}" for k in _KEY_PARAMS if uri.has(k))


class RecordingSubscription:
    """An archive subscription that records each of its images."""

    def __init__(self, subscription: Any, key: str, original_channel: str, stripped: str, stream_id: int,
                 control_session: ControlSession, correlation_id: int, auto_stop: bool,
                 extend_recording_id: int = NULL_VALUE) -> None:
        """Registered by the conductor for StartRecording / ExtendRecording."""
        self.subscription = subscription
        self.registration_id = subscription.registration_id
        self.key = key
        self.original_channel = original_channel
        self.stripped_channel = stripped
        self.stream_id = stream_id
        self.control_session = control_session
        self.correlation_id = correlation_id
        self.auto_stop = auto_stop
        self.extend_recording_id = extend_recording_id
        self.sessions: set[RecordingSession] = set()
        self.closed = False


class SessionWorker(Agent):
    """Runs recording or replay sessions (Aeron's Recorder / Replayer). Sessions come in and finished ones go back
    to the conductor through thread-safe deques."""

    def __init__(self, role: str, replay: bool, nano_clock: Any) -> None:
        """``replay`` sessions take the time in ``do_work``."""
        self.role_name = role
        self._replay = replay
        self._nano_clock = nano_clock
        self._sessions: list[Any] = []
        self._incoming: deque[Any] = deque()
        self.finished: deque[Any] = deque()
        self.closed = False

    def add_session(self, session: Any) -> None:
        """Hand a session to this worker (any thread)."""
        self._incoming.append(session)

    def do_work(self) -> int:
        """One step of every session."""
        work = 0
        while self._incoming:
            self._sessions.append(self._incoming.popleft())
            work += 1
        if not self._sessions:
            return work
        now_ns = self._nano_clock() if self._replay else 0
        done = None
        for session in self._sessions:
            work += session.do_work(now_ns) if self._replay else session.do_work()
            if session.is_done:
                done = done or []
                done.append(session)
        if done:
            for session in done:
                self._sessions.remove(session)
                self.finished.append(session)
        return work

    def on_close(self) -> None:
        """Abort every session (they close on the conductor)."""
        self.closed = True
        while self._incoming:
            self._sessions.append(self._incoming.popleft())
        for session in self._sessions:
            self.finished.append(session)
        self._sessions.clear()


class RecordingEventsProxy:
    """Publishes RecordingStarted/Progress/Stopped on the recording events channel.

    The recorder (started, progress) and the conductor (stopped) may be different threads: a lock serialises them on
    the one exclusive publication. Progress is best effort (dropped under back pressure); a started or stopped event
    the publication cannot take now waits in a small queue, in order, flushed by later events and by the conductor.
    """

    MAX_PENDING = 1024

    def __init__(self, publication: Any) -> None:
        """Over an exclusive publication."""
        self.publication = publication
        self._buffer = bytearray(8192)
        self._started = codecs.RecordingStartedEncoder()
        self._progress = codecs.RecordingProgressEncoder()
        self._stopped = codecs.RecordingStoppedEncoder()
        self._lock = threading.Lock()
        self._pending: deque[bytes] = deque()

    def started(self, recording_id: int, start_position: int, session_id: int, stream_id: int, channel: str,
                source_identity: str) -> None:
        """RecordingStarted."""
        with self._lock:
            enc = self._started.wrap_and_apply_header(self._buffer, 0)
            enc.recording_id = recording_id
            enc.start_position = start_position
            enc.session_id = session_id
            enc.stream_id = stream_id
            enc.put_channel(channel.encode("ascii", "replace")[:4096])
            enc.put_source_identity(source_identity.encode("ascii", "replace")[:1024])
            self._send(8 + enc.encoded_length, keep=True)

    def progress(self, recording_id: int, start_position: int, position: int) -> None:
        """RecordingProgress."""
        with self._lock:
            enc = self._progress.wrap_and_apply_header(self._buffer, 0)
            enc.recording_id = recording_id
            enc.start_position = start_position
            enc.position = position
            self._send(8 + enc.encoded_length, keep=False)

    def stopped(self, recording_id: int, start_position: int, stop_position: int) -> None:
        """RecordingStopped."""
        with self._lock:
            enc = self._stopped.wrap_and_apply_header(self._buffer, 0)
            enc.recording_id = recording_id
            enc.start_position = start_position
            enc.stop_position = stop_position
            self._send(8 + enc.encoded_length, keep=True)

    def flush(self) -> int:
        """Offer the waiting started/stopped events (the conductor's duty cycle)."""
        if not self._pending:
            return 0
        with self._lock:
            return self._flush()

    def _flush(self) -> int:
        sent = 0
        while self._pending and self.publication.offer(self._pending[0]) > 0:
            self._pending.popleft()
            sent += 1
        return sent

    def _send(self, length: int, keep: bool) -> None:
        self._flush()
        if not self._pending and self.publication.offer(self._buffer, 0, length) > 0:
            return
        if keep and len(self._pending) < self.MAX_PENDING:
            self._pending.append(bytes(self._buffer[:length]))


class _PendingReplay:
    """A replay whose publication the driver is still making."""

    def __init__(self, registration_id: int, session: ControlSession, correlation_id: int, args: dict[str, Any],
                 deadline_ns: int) -> None:
        self.registration_id = registration_id
        self.session = session
        self.correlation_id = correlation_id
        self.args = args
        self.deadline_ns = deadline_ns


class ArchiveConductor(Agent):
    """The archive's conductor agent; see the module docstring."""

    def __init__(self, ctx: "Context", aeron: "Aeron") -> None:
        """Open the catalog, subscribe to the control channels and make the recorder and replayer."""
        self.role_name = "archive-conductor"
        self.ctx = ctx
        self.aeron = aeron
        # the waiters of agents parked on the wake-up board (Archive binds them): widened to each recorded stream
        self.wake_waiters: list[Any] = []
        self.archive_dir = ctx.archive_dir
        self.nano_time = ctx.nano_clock()
        self.archive_id = ctx.archive_id if ctx.archive_id != NULL_VALUE else aeron.client_id
        os.makedirs(self.archive_dir, exist_ok=True)
        os.makedirs(ctx.mark_file_dir, exist_ok=True)
        self._error_lock = threading.Lock()
        # the mark file first: it refuses to start over a live archive
        self.mark_file = ArchiveMarkFile.create(
            ctx.mark_file_dir, aeron_directory=aeron.context.aeron_dir or "",
            control_channel=ctx.control_channel if ctx.control_channel_enabled else "",
            local_control_channel=ctx.local_control_channel,
            events_channel=ctx.recording_events_channel if ctx.recording_events_enabled else "",
            control_stream_id=ctx.control_stream_id, local_control_stream_id=ctx.local_control_stream_id,
            events_stream_id=ctx.recording_events_stream_id, archive_id=self.archive_id,
            error_buffer_length=ctx.error_buffer_length, epoch_clock=ctx.epoch_clock_ms,
            archive_dir=self.archive_dir)
        self._mark_file_deadline_ns = 0
        try:
            # with a record checksum the catalog keeps descriptor checksums too
            self.catalog = Catalog(self.archive_dir, capacity=ctx.catalog_capacity,
                                   file_sync_level=ctx.catalog_file_sync_level, epoch_clock=ctx.epoch_clock_ms,
                                   checksum=new_checksum(ctx.record_checksum) if ctx.record_checksum else None)
        except BaseException:
            self.mark_file.close()
            raise
        self.proxy = ControlResponseProxy()
        self.adapter = ControlSessionAdapter(self)
        self.recorder = SessionWorker("archive-recorder", False, ctx.nano_clock)
        self.replayer = SessionWorker("archive-replayer", True, ctx.nano_clock)
        self.sessions: dict[int, ControlSession] = {}
        self.recording_subscriptions: dict[int, RecordingSubscription] = {}
        self.recording_sessions: dict[int, RecordingSession] = {}        # by recording id
        self.replay_sessions: dict[int, ReplaySession] = {}              # by replay session id
        self._pending_replays: list[_PendingReplay] = []
        self._replay_tokens: dict[int, tuple[ControlSession, int, int]] = {}
        self.replication_sessions: dict[int, ReplicationSession] = {}
        self._images: deque[tuple[RecordingSubscription, Image]] = deque()
        self._next_session_id = random.randrange(0, 1 << 30)
        self._next_replay_id = 1
        self.errors: deque[BaseException] = deque(maxlen=100)
        self.error_count = 0
        self._closed = False
        self._control_subscriptions: list[tuple[Any, FragmentAssembler]] = []
        self.events_proxy: RecordingEventsProxy | None = None
        self.error_counter: Any = None
        self.sessions_counter: Any = None
        try:
            archive_key = struct.pack("<q", self.archive_id)
            self.error_counter = aeron.add_counter(
                ARCHIVE_ERROR_COUNT_TYPE_ID, f"Archive Errors - archiveId={self.archive_id} version={__version__} "
                f"commit=aeron-py", archive_key)
            self.sessions_counter = aeron.add_counter(
                ARCHIVE_CONTROL_SESSIONS_TYPE_ID, f"Archive Control Sessions - archiveId={self.archive_id}",
                archive_key)
            if ctx.control_channel_enabled:
                sub = aeron.add_subscription(ctx.control_channel, ctx.control_stream_id)
                self._control_subscriptions.append((sub, FragmentAssembler(self.adapter.on_fragment)))
            local = aeron.add_subscription(ctx.local_control_channel, ctx.local_control_stream_id)
            self._control_subscriptions.append((local, FragmentAssembler(self.adapter.on_fragment)))
            if ctx.recording_events_enabled:
                self.events_proxy = RecordingEventsProxy(aeron.add_exclusive_publication(
                    ctx.recording_events_channel, ctx.recording_events_stream_id))
        except BaseException:
            self._close_resources()
            raise
        self.mark_file.signal_ready(ctx.epoch_clock_ms())

    # -- agent -----------------------------------------------------------------------------------------------

    def shared_agent(self) -> Agent:
        """Conductor, recorder and replayer as one agent (SHARED and INVOKER modes)."""
        return CompositeAgent(self, self.recorder, self.replayer)

    def on_error(self, error: BaseException) -> None:
        """Agent error handler: remembered, counted and printed."""
        self.log_error(error)

    def log_error(self, error: BaseException) -> None:
        """Record an error the archive survived."""
        with self._error_lock:              # the recorder and replayer threads report here too
            self.error_count += 1
            self.errors.append(error)
            if self.error_counter is not None and not self.error_counter.is_closed:
                self.error_counter.increment()
            if not self.mark_file.closed:
                self.mark_file.error_log.record(error)
        if os.environ.get("AERON_ARCHIVE_DEBUG"):
            traceback.print_exception(type(error), error, error.__traceback__, file=sys.stderr)

    def do_work(self) -> int:
        """Poll requests, run control sessions, start and finish recording and replay sessions."""
        if self._closed:
            return 0
        now_ns = self.nano_time = self.ctx.nano_clock()
        work = 0
        if now_ns - self._mark_file_deadline_ns >= 0:
            self._mark_file_deadline_ns = now_ns + MARK_FILE_UPDATE_INTERVAL_NS
            self.mark_file.update_activity_timestamp(self.ctx.epoch_clock_ms())
        for sub, assembler in self._control_subscriptions:
            images = sub.images
            if not any_fragment_pending(images):
                continue        # polled every duty cycle, mostly empty: decided on a few loads
            for image in images:
                self.adapter.current_image = image
                work += image.poll(assembler, 16)
        self.adapter.current_image = None
        while self._images:
            rec_sub, image = self._images.popleft()
            work += 1
            try:
                self._start_recording_session(rec_sub, image)
            except (AeronError, OSError) as ex:
                self.log_error(ex)
                rec_sub.control_session.send_error(rec_sub.correlation_id, ArchiveErrorCode.GENERIC, str(ex))
        if self._pending_replays:
            work += self._poll_pending_replays(now_ns)
        if self.replication_sessions:
            work += self._run_replications(now_ns)
        if self.events_proxy is not None:
            work += self.events_proxy.flush()
        if self.sessions:
            done = None
            for session in self.sessions.values():
                work += session.do_work(now_ns)
                if session.state is SessionState.DONE:
                    done = done or []
                    done.append(session)
            if done:
                for session in done:
                    self.sessions.pop(session.control_session_id, None)
                    session.close()
                self.sessions_counter.set_ordered(len(self.sessions))
        while self.recorder.finished:
            self._close_recording_session(self.recorder.finished.popleft())
            work += 1
        while self.replayer.finished:
            self._close_replay_session(self.replayer.finished.popleft())
            work += 1
        return work

    def on_close(self) -> None:
        """Close everything (the agent runner calls this on its thread)."""
        self.close_once()

    def close_once(self) -> None:
        """Stop every session, close the subscriptions and the catalog. Idempotent."""
        if self._closed:
            return
        self._closed = True
        for replication in list(self.replication_sessions.values()):
            replication.close()
        self.replication_sessions.clear()
        self.recorder.on_close()
        self.replayer.on_close()
        while self.recorder.finished:
            session = self.recorder.finished.popleft()
            session.close()
            self._close_recording_session(session)
        while self.replayer.finished:
            self._close_replay_session(self.replayer.finished.popleft())
        for session in list(self.sessions.values()):
            session.abort("archive closing")
            session.close()
        self.sessions.clear()
        self._close_resources()

    def _close_resources(self) -> None:
        for rec_sub in list(self.recording_subscriptions.values()):
            self._close_recording_subscription(rec_sub)
        for sub, _ in self._control_subscriptions:
            _quietly(sub.close)
        self._control_subscriptions.clear()
        if self.events_proxy is not None:
            _quietly(self.events_proxy.publication.close)
        for counter in (self.error_counter, self.sessions_counter):
            if counter is not None:
                _quietly(counter.close)
        _quietly(self.catalog.close)
        if not self.mark_file.closed:
            _quietly(self.mark_file.signal_terminated)
            self.mark_file.close()

    # -- sessions --------------------------------------------------------------------------------------------

    def _new_session_id(self) -> int:
        session_id = self._next_session_id
        self._next_session_id += 1
        return session_id

    def on_auth_connect(self, image: "Image", correlation_id: int, response_stream_id: int, version: int,
                        response_channel: str, encoded_credentials: bytes, client_info: str) -> None:
        """AuthConnectRequest: a new control session bound to ``image``."""
        session_id = self._new_session_id()
        try:
            ChannelUri.parse(response_channel)
        except InvalidChannelError as ex:
            self.log_error(ex)
            return
        session = ControlSession(self, session_id, correlation_id, image, response_channel, response_stream_id,
                                 version, encoded_credentials, client_info, self.nano_time)
        self.ctx.authenticator.on_connect_request(session_id, encoded_credentials, self.nano_time // 1_000_000)
        self.sessions[session_id] = session
        info = f"{client_info} " if client_info else ""
        suffix = f" - archiveId={self.archive_id}"
        label = f"control-session: {info}sourceIdentity={image.source_identity} sessionId={image.session_id}"
        session.counter_registration_id = self.aeron.async_add_counter(
            ARCHIVE_CONTROL_SESSION_TYPE_ID, label[:MAX_LABEL_LENGTH - len(suffix)] + suffix,
            struct.pack("<qq", self.archive_id, session_id))
        self.sessions_counter.set_ordered(len(self.sessions))

    def session_for(self, image: "Image", control_session_id: int) -> ControlSession | None:
        """The session named by a request, when the request came from the image that connected it."""
        session = self.sessions.get(control_session_id)
        if session is None or session.image is not image:
            return None
        return session

    def on_session_closed(self, session: ControlSession) -> None:
        """A control session ended: its listing stops; recordings and replays go on."""

    def dispatch(self, image: "Image", control_session_id: int, handler_name: str, decoder: Any,
                 template_id: int) -> None:
        """Run a decoded request for its session; a refused request is answered with ERROR."""
        session = self.session_for(image, control_session_id)
        replay_image = None
        if session is None and handler_name == "on_replay":
            session = self._session_for_replay_token(control_session_id, decoder)
            replay_image = image
        if session is None:
            return              # unknown session or another image's: ignored, as Aeron does
        if handler_name == "on_challenge_response":
            session.on_challenge_response(decoder.correlation_id, decoder.encoded_credentials)
            return
        # every request but closing is authorised first, as Aeron's adapter does (a token-borne replay was checked
        # when its token was asked for)
        if replay_image is None and handler_name != "on_close_session" and \
                not session.authorise(template_id, decoder.correlation_id):
            return
        if not session.activate_on_request():
            return
        if handler_name == "on_close_session":
            session.abort("closed by the client")
            return
        if handler_name == "on_keep_alive":
            return
        correlation_id = decoder.correlation_id
        try:
            if replay_image is not None:
                self.on_replay(session, correlation_id, decoder, replay_image)
            else:
                getattr(self, handler_name)(session, correlation_id, decoder)
        except RequestError as ex:
            session.send_error(correlation_id, ex.code, str(ex))
        except (AeronError, OSError, ValueError) as ex:
            self.log_error(ex)
            session.send_error(correlation_id, ArchiveErrorCode.GENERIC, str(ex))

    # -- requests: identity and positions --------------------------------------------------------------------

    def on_archive_id(self, session: ControlSession, correlation_id: int, d: Any) -> None:
        """ArchiveIdRequest."""
        session.send_ok(correlation_id, self.archive_id)

    def _check_recording(self, recording_id: int) -> None:
        if not self.catalog.has_recording(recording_id):
            raise RequestError(f"unknown recording id: {recording_id}", ArchiveErrorCode.UNKNOWN_RECORDING)

    def on_recording_position(self, session: ControlSession, correlation_id: int, d: Any) -> None:
        """RecordingPositionRequest: the live position, or -1 when not recording; UNKNOWN_RECORDING for an id the
        catalog has not (as Aeron's ``ArchiveConductor.getRecordingPosition``)."""
        self._check_recording(d.recording_id)
        recording = self.recording_sessions.get(d.recording_id)
        session.send_ok(correlation_id, recording.position if recording is not None else NULL_POSITION)

    def on_stop_position(self, session: ControlSession, correlation_id: int, d: Any) -> None:
        """StopPositionRequest."""
        self._check_recording(d.recording_id)
        session.send_ok(correlation_id, self.catalog.stop_position(d.recording_id))

    def on_start_position(self, session: ControlSession, correlation_id: int, d: Any) -> None:
        """StartPositionRequest."""
        self._check_recording(d.recording_id)
        session.send_ok(correlation_id, self.catalog.start_position(d.recording_id))

    def on_max_recorded_position(self, session: ControlSession, correlation_id: int, d: Any) -> None:
        """MaxRecordedPositionRequest: live position when recording, else the stop position."""
        self._check_recording(d.recording_id)
        recording = self.recording_sessions.get(d.recording_id)
        session.send_ok(correlation_id, recording.position if recording is not None
                        else self.catalog.stop_position(d.recording_id))

    def on_find_last_matching_recording(self, session: ControlSession, correlation_id: int, d: Any) -> None:
        """FindLastMatchingRecordingRequest."""
        if d.min_recording_id < 0:
            raise RequestError(f"minRecordingId={d.min_recording_id} < 0",
                               ArchiveErrorCode.UNKNOWN_RECORDING)
        session.send_ok(correlation_id, self.catalog.find_last_matching_recording(
            d.min_recording_id, d.channel.encode("ascii", "replace"), d.stream_id, d.session_id))

    # -- requests: listings ----------------------------------------------------------------------------------

    def _start_listing(self, session: ControlSession, listing: Any) -> None:
        if session.listing is not None:
            raise RequestError("active listing already in progress", ArchiveErrorCode.ACTIVE_LISTING)
        session.listing = listing

    def on_list_recordings(self, session: ControlSession, correlation_id: int, d: Any) -> None:
        """ListRecordingsRequest."""
        self._start_listing(session, _ListRecordings(self, session, correlation_id, d.from_recording_id,
                                                     d.record_count, None, None))

    def on_list_recordings_for_uri(self, session: ControlSession, correlation_id: int, d: Any) -> None:
        """ListRecordingsForUriRequest: stream id equal, original channel containing the given one."""
        self._start_listing(session, _ListRecordings(self, session, correlation_id, d.from_recording_id,
                                                     d.record_count, d.stream_id,
                                                     d.channel.encode("ascii", "replace")))

    def on_list_recording(self, session: ControlSession, correlation_id: int, d: Any) -> None:
        """ListRecordingRequest."""
        if session.listing is not None:
            raise RequestError("active listing already in progress", ArchiveErrorCode.ACTIVE_LISTING)
        desc = self.catalog.find_recording(d.recording_id)
        if desc is None:
            session.send_code(correlation_id, d.recording_id, ControlResponseCode.RECORDING_UNKNOWN)
        else:
            session.send(self.proxy.descriptor(session.control_session_id, correlation_id, desc))

    def on_list_recording_subscriptions(self, session: ControlSession, correlation_id: int, d: Any) -> None:
        """ListRecordingSubscriptionsRequest."""
        if session.listing is not None:
            raise RequestError("active listing already in progress", ArchiveErrorCode.ACTIVE_LISTING)
        subs = list(self.recording_subscriptions.values())
        index, count = d.pseudo_index, d.subscription_count
        if index < 0 or index >= len(subs) or count <= 0:
            session.send_code(correlation_id, 0, ControlResponseCode.SUBSCRIPTION_UNKNOWN)
            return
        apply_stream = d.apply_stream_id == BooleanType.TRUE
        fragment = d.channel
        sent = 0
        for rec_sub in subs[index:]:
            if apply_stream and rec_sub.stream_id != d.stream_id:
                continue
            if fragment not in rec_sub.stripped_channel:
                continue
            session.send(self.proxy.subscription_descriptor(session.control_session_id, correlation_id,
                                                            rec_sub.registration_id, rec_sub.stream_id,
                                                            rec_sub.stripped_channel))
            sent += 1
            if sent >= count:
                return
        session.send_code(correlation_id, 0, ControlResponseCode.SUBSCRIPTION_UNKNOWN)

    # -- requests: recording ---------------------------------------------------------------------------------

    def on_start_recording(self, session: ControlSession, correlation_id: int, d: Any) -> None:
        """StartRecordingRequest(2): subscribe and record each image."""
        auto_stop = getattr(d, "auto_stop", BooleanType.FALSE) == BooleanType.TRUE
        self._subscribe_for_recording(session, correlation_id, d.stream_id, d.source_location, d.channel,
                                      auto_stop, NULL_VALUE)

    def _subscribe_for_recording(self, session: ControlSession, correlation_id: int, stream_id: int,
                                 source_location: int, channel: str, auto_stop: bool, extend_id: int) -> None:
        if len(self.recording_sessions) >= self.ctx.max_concurrent_recordings:
            raise RequestError(f"max concurrent recordings reached {self.ctx.max_concurrent_recordings}",
                               ArchiveErrorCode.MAX_RECORDINGS)
        self.check_storage_space()
        try:
            uri = ChannelUri.parse(channel)
        except InvalidChannelError as ex:
            raise RequestError(f"invalid channel: {ex}") from None
        if uri.is_spy:
            raise RequestError(f"use SourceLocation.LOCAL to record a publication locally: {channel}")
        key = subscription_key(stream_id, uri)
        if any(s.key == key for s in self.recording_subscriptions.values()):
            raise RequestError(f"recording exists for streamId={stream_id} channel={channel}",
                               ArchiveErrorCode.ACTIVE_SUBSCRIPTION)
        stripped = stripped_channel(uri)
        sub_channel = SPY_PREFIX + stripped if source_location == SourceLocation.LOCAL and uri.is_udp else stripped
        rec_sub = self._add_recording_subscription(session, correlation_id, stream_id, sub_channel, key, channel,
                                                   stripped, auto_stop, extend_id)
        session.send_ok(correlation_id, rec_sub.registration_id)

    def subscribe_for_replication(self, session: ControlSession, replication_id: int, stream_id: int, channel: str,
                                  dst_recording_id: int) -> RecordingSubscription:
        """The auto-stop extend subscription a replication records the source's replay with; answered, as an
        ExtendRecording is, with an OK for the replication id naming the subscription (Aeron does the same); refused
        as an ExtendRecording is when a recording subscription of the same key exists (e.g. another replication on
        the same response channel and stream)."""
        self.check_storage_space()
        uri = ChannelUri.parse(channel)
        key = subscription_key(stream_id, uri)
        if any(s.key == key for s in self.recording_subscriptions.values()):
            raise RequestError(f"recording exists for streamId={stream_id} channel={channel}",
                               ArchiveErrorCode.ACTIVE_SUBSCRIPTION)
        rec_sub = self._add_recording_subscription(session, replication_id, stream_id, channel, key, channel,
                                                   stripped_channel(uri), True, dst_recording_id)
        session.send_ok(replication_id, rec_sub.registration_id)
        return rec_sub

    def check_storage_space(self) -> None:
        """Refuse (STORAGE_SPACE) to start writing a recording when the archive's file system has no more usable
        space than the low storage space threshold."""
        threshold = self.ctx.low_storage_space_threshold
        usable = self.ctx.usable_space_probe()
        if usable <= threshold:
            raise RequestError(f"low storage threshold={threshold} <= usableSpace={usable}",
                               ArchiveErrorCode.STORAGE_SPACE)

    def close_recording_subscription(self, rec_sub: RecordingSubscription) -> None:
        """Close a recording subscription (its recordings stop)."""
        if not rec_sub.closed:
            self._close_recording_subscription(rec_sub)

    def _add_recording_subscription(self, session: ControlSession, correlation_id: int, stream_id: int,
                                    sub_channel: str, key: str, channel: str, stripped: str, auto_stop: bool,
                                    extend_id: int) -> RecordingSubscription:
        holder: list[RecordingSubscription] = []
        images = self._images

        def on_available(image: "Image") -> None:         # client conductor thread: hand over to ours
            if holder:
                images.append((holder[0], image))
            else:
                early.append(image)

        early: list[Image] = []
        subscription = self.aeron.add_subscription(sub_channel, stream_id, available_image_handler=on_available)
        for waiter in self.wake_waiters:                    # a parked agent wakes for the recorded stream's data
            waiter.set_mask(waiter.mask | stream_bit(stream_id))
        rec_sub = RecordingSubscription(subscription, key, channel, stripped, stream_id, session, correlation_id,
                                        auto_stop, extend_id)
        holder.append(rec_sub)
        for image in early:
            images.append((rec_sub, image))
        self.recording_subscriptions[rec_sub.registration_id] = rec_sub
        return rec_sub

    def _start_recording_session(self, rec_sub: RecordingSubscription, image: "Image") -> None:
        if rec_sub.closed or image.is_closed:
            return
        session = rec_sub.control_session
        log = image.log_buffers
        term_length = image.term_buffer_length
        if rec_sub.extend_recording_id != NULL_VALUE:
            recording_id = rec_sub.extend_recording_id
            desc = self.catalog.recording(recording_id)
            problem = None
            if recording_id in self.recording_sessions:
                problem = "cannot extend active recording"
            elif image.join_position != desc.stop_position:
                problem = f"cannot extend recording {recording_id}: image join position {image.join_position} " \
                          f"!= stop position {desc.stop_position}"
            elif (image.initial_term_id, term_length, log.mtu_length) != (
                    desc.initial_term_id, desc.term_buffer_length, desc.mtu_length):
                problem = f"cannot extend recording {recording_id}: initial term id, term length or mtu differ"
            if problem is not None:
                session.send_error(rec_sub.correlation_id, ArchiveErrorCode.INVALID_EXTENSION, problem)
                return
            start_position = desc.start_position
            segment_length = desc.segment_file_length
            self.catalog.extend_recording(recording_id, session.control_session_id, rec_sub.correlation_id,
                                          image.session_id)
            signal = RecordingSignal.EXTEND
        else:
            start_position = image.join_position
            segment_length = max(self.ctx.segment_file_length, term_length)
            recording_id = self.catalog.add_recording(
                start_position=start_position, start_timestamp=self.ctx.epoch_clock_ms(),
                initial_term_id=image.initial_term_id, segment_file_length=segment_length,
                term_buffer_length=term_length, mtu_length=log.mtu_length, session_id=image.session_id,
                stream_id=rec_sub.stream_id, stripped_channel=rec_sub.stripped_channel,
                original_channel=rec_sub.original_channel, source_identity=image.source_identity)
            signal = RecordingSignal.START
        counter = self._add_recording_position_counter(recording_id, image, rec_sub)
        counter.set_ordered(image.join_position)
        recording = RecordingSession(rec_sub.correlation_id, recording_id, start_position, segment_length,
                                     rec_sub.original_channel, image, counter, self.archive_dir, self.ctx, session,
                                     rec_sub.registration_id, rec_sub.auto_stop, self.events_proxy,
                                     self.aeron.stream_wake_signal(rec_sub.stream_id))
        rec_sub.sessions.add(recording)
        self.recording_sessions[recording_id] = recording
        self.recorder.add_session(recording)
        session.send_signal(rec_sub.correlation_id, recording_id, rec_sub.registration_id, image.join_position,
                            signal)

    def _add_recording_position_counter(self, recording_id: int, image: "Image", rec_sub: RecordingSubscription):
        source = image.source_identity.encode("ascii", "replace")[:MAX_KEY_LENGTH - 16 - 8]
        key = struct.pack(f"<qii{len(source)}sq", recording_id, image.session_id, len(source), source,
                          self.archive_id)
        suffix = f" - archiveId={self.archive_id}"
        label = f"rec-pos: {recording_id} {image.session_id} {rec_sub.stream_id} {rec_sub.stripped_channel}"
        label = label[:MAX_LABEL_LENGTH - len(suffix)] + suffix
        return self.aeron.add_counter(RECORDING_POSITION_TYPE_ID, label, key)

    def _close_recording_session(self, recording: RecordingSession) -> None:
        recording_id = recording.recording_id
        position = recording.position
        if self.recording_sessions.get(recording_id) is recording:
            del self.recording_sessions[recording_id]
        _quietly(recording.close)
        try:
            self.catalog.recording_stopped(recording_id, position, self.ctx.epoch_clock_ms())
        except (AeronError, OSError) as ex:
            self.log_error(ex)
        _quietly(recording.position_counter.close)
        if self.events_proxy is not None:
            _quietly(self.events_proxy.stopped, recording_id, recording.join_position, position)
        session = recording.control_session
        if recording.error is not None:
            self.log_error(recording.error)
            session.send_error(recording.correlation_id, recording.error_code,
                               f"recording {recording_id} failed: {recording.error_message}")
        session.send_signal(recording.correlation_id, recording_id, recording.subscription_id, position,
                            RecordingSignal.STOP)
        rec_sub = self.recording_subscriptions.get(recording.subscription_id)
        if rec_sub is not None:
            rec_sub.sessions.discard(recording)
            if rec_sub.auto_stop and not rec_sub.sessions:
                self._close_recording_subscription(rec_sub)

    def _close_recording_subscription(self, rec_sub: RecordingSubscription) -> None:
        rec_sub.closed = True
        self.recording_subscriptions.pop(rec_sub.registration_id, None)
        for recording in list(rec_sub.sessions):
            recording.abort()
        _quietly(rec_sub.subscription.close)

    def on_stop_recording(self, session: ControlSession, correlation_id: int, d: Any) -> None:
        """StopRecordingRequest: by channel and stream."""
        try:
            key = subscription_key(d.stream_id, ChannelUri.parse(d.channel))
        except InvalidChannelError as ex:
            raise RequestError(f"invalid channel: {ex}") from None
        for rec_sub in list(self.recording_subscriptions.values()):
            if rec_sub.key == key:
                self._close_recording_subscription(rec_sub)
                session.send_ok(correlation_id, 0)
                return
        raise RequestError(f"no recording found for streamId={d.stream_id} channel={d.channel}",
                           ArchiveErrorCode.UNKNOWN_SUBSCRIPTION)

    def on_stop_recording_subscription(self, session: ControlSession, correlation_id: int, d: Any) -> None:
        """StopRecordingSubscriptionRequest: by subscription registration id."""
        rec_sub = self.recording_subscriptions.get(d.subscription_id)
        if rec_sub is None:
            raise RequestError(f"no recording subscription found for subscriptionId={d.subscription_id}",
                               ArchiveErrorCode.UNKNOWN_SUBSCRIPTION)
        self._close_recording_subscription(rec_sub)
        session.send_ok(correlation_id, 0)

    def on_stop_recording_by_identity(self, session: ControlSession, correlation_id: int, d: Any) -> None:
        """StopRecordingByIdentityRequest: 1 if an active recording was stopped, else 0."""
        self._check_recording(d.recording_id)
        recording = self.recording_sessions.get(d.recording_id)
        if recording is None:
            session.send_ok(correlation_id, 0)
            return
        recording.abort()
        rec_sub = self.recording_subscriptions.get(recording.subscription_id)
        if rec_sub is not None and rec_sub.sessions <= {recording}:
            self._close_recording_subscription(rec_sub)
        session.send_ok(correlation_id, 1)

    def on_extend_recording(self, session: ControlSession, correlation_id: int, d: Any) -> None:
        """ExtendRecordingRequest(2): record new images onto the end of a stopped recording."""
        self._check_recording(d.recording_id)
        if d.recording_id in self.recording_sessions:
            raise RequestError(f"cannot extend active recording {d.recording_id}", ArchiveErrorCode.ACTIVE_RECORDING)
        desc = self.catalog.recording(d.recording_id)
        if desc.stream_id != d.stream_id:
            raise RequestError(f"cannot extend recording {d.recording_id} with streamId={d.stream_id} != "
                               f"existing streamId={desc.stream_id}", ArchiveErrorCode.UNKNOWN_RECORDING)
        auto_stop = getattr(d, "auto_stop", BooleanType.FALSE) == BooleanType.TRUE
        self._subscribe_for_recording(session, correlation_id, d.stream_id, d.source_location, d.channel,
                                      auto_stop, d.recording_id)

    # -- requests: replay ------------------------------------------------------------------------------------

    def _session_for_replay_token(self, control_session_id: int, d: Any) -> ControlSession | None:
        # a replay request on a response-channel connection of its own, attributed by its token
        if d.acting_version < 10 or d.replay_token == NULL_VALUE:
            return None
        entry = self._replay_tokens.pop(d.replay_token, None)
        if entry is None:
            return None
        session, recording_id, deadline_ns = entry
        if session.control_session_id != control_session_id or recording_id != d.recording_id or \
                self.nano_time - deadline_ns > 0 or session.is_done:
            return None
        return session

    def on_replay(self, session: ControlSession, correlation_id: int, d: Any, replay_image: Any = None) -> None:
        """ReplayRequest / BoundedReplayRequest; ``replay_image`` is the response-channel
        connection a token-bearing request came on (its correlation id goes on a control-mode=response replay)."""
        if len(self.replay_sessions) + len(self._pending_replays) >= self.ctx.max_concurrent_replays:
            raise RequestError(f"max concurrent replays reached {self.ctx.max_concurrent_replays}",
                               ArchiveErrorCode.MAX_REPLAYS)
        recording_id = d.recording_id
        self._check_recording(recording_id)
        desc = self.catalog.recording(recording_id)
        bounded = isinstance(d, codecs.BoundedReplayRequestDecoder)
        recording = self.recording_sessions.get(recording_id)
        limit_counter_id = d.limit_counter_id if bounded else NULL_VALUE
        if bounded:
            limit_value = self.aeron.counters_reader.get_counter_value(limit_counter_id)
        elif recording is not None:
            limit_value = recording.position
        else:
            limit_value = NULL_POSITION
        has_limit = bounded or recording is not None
        start, stop = desc.start_position, desc.stop_position
        position = d.position
        if position == NULL_POSITION:
            position = start
        else:
            if position & (FRAME_ALIGNMENT - 1):
                raise RequestError(f"requested replay start position={position} is not a multiple of "
                                   f"FRAME_ALIGNMENT ({FRAME_ALIGNMENT}) for recording {recording_id}")
            if position < start:
                raise RequestError(f"requested replay start position={position} is less than recording start "
                                   f"position={start} for recording {recording_id}",
                                   ArchiveErrorCode.INVALID_POSITION)
            if not has_limit and stop != NULL_POSITION and position >= stop:
                raise RequestError(f"requested replay start position={position} must be less than the limit "
                                   f"position={stop} for recording {recording_id}",
                                   ArchiveErrorCode.INVALID_POSITION)
        if has_limit and position > limit_value:
            raise RequestError(f"requested replay start position={position} must be less than the limit "
                               f"position={limit_value} for recording {recording_id}",
                               ArchiveErrorCode.INVALID_POSITION)
        file_io = d.file_io_max_length
        if file_io is None or file_io <= 0 or d.acting_version < 7:
            file_io = self.ctx.file_io_max_length
        elif file_io < desc.mtu_length:
            raise RequestError(f"fileIoMaxLength={file_io} < mtuLength={desc.mtu_length}")
        length = d.length
        max_length = INT64_MAX - position if has_limit else stop - position
        if length == -1 or length == INT64_MAX:
            length = max_length
        elif length == -2:
            length = (limit_value if has_limit else stop) - position
            if length == 0:
                raise RequestError(f"empty replay of recording {recording_id} from position {position}",
                                   ArchiveErrorCode.EMPTY_RECORDING)
        else:
            length = min(length, max_length)
        if length < 0:
            raise RequestError(f"replay length {d.length} is invalid for recording {recording_id}")
        try:
            uri = ChannelUri.parse(d.replay_channel)
        except InvalidChannelError as ex:
            raise RequestError(f"invalid replay channel: {ex}") from None
        # the replay publication starts where the recording has the position
        term_length = desc.term_buffer_length
        bits = term_length.bit_length() - 1
        for key, value in (("init-term-id", desc.initial_term_id), ("term-length", term_length),
                           ("term-id", _i32(desc.initial_term_id + (position >> bits))),
                           ("term-offset", position & (term_length - 1)), ("mtu", desc.mtu_length)):
            uri.put(key, str(value))
        if not uri.has("linger"):
            uri.put("linger", str(self.ctx.replay_linger_timeout_ns))
        if uri.control_mode == CONTROL_MODE_RESPONSE:
            if replay_image is None:
                raise RequestError("a control-mode=response replay needs a replay token and its own connection")
            uri.put(RESPONSE_CORRELATION_ID_PARAM_NAME, str(replay_image.correlation_id))
        registration_id = self.aeron.async_add_exclusive_publication(str(uri), d.replay_stream_id)
        args = dict(recording_id=recording_id, desc=desc, position=position, length=length,
                    limit_counter_id=limit_counter_id, file_io=file_io)
        self._pending_replays.append(_PendingReplay(registration_id, session, correlation_id, args,
                                                    self.nano_time + self.ctx.connect_timeout_ns))

    def _poll_pending_replays(self, now_ns: int) -> int:
        work = 0
        for pending in list(self._pending_replays):
            try:
                pub = self.aeron.get_exclusive_publication(pending.registration_id)
            except RegistrationError as ex:
                self._pending_replays.remove(pending)
                pending.session.send_error(pending.correlation_id, ArchiveErrorCode.GENERIC,
                                           f"replay publication refused: {ex}")
                work += 1
                continue
            if pub is None:
                if now_ns - pending.deadline_ns > 0:
                    self._pending_replays.remove(pending)
                    pending.session.send_error(pending.correlation_id, ArchiveErrorCode.GENERIC,
                                               "replay publication not created within the connect timeout")
                    work += 1
                continue
            self._pending_replays.remove(pending)
            work += 1
            self._start_replay_session(pending, pub, now_ns)
        return work

    def _start_replay_session(self, pending: _PendingReplay, pub: Any, now_ns: int) -> None:
        a = pending.args
        desc = a["desc"]
        recording_id = a["recording_id"]
        replay_session_id = (self._next_replay_id << 32) | (pub.session_id & 0xFFFFFFFF)
        self._next_replay_id += 1
        limit = self._limit_function(recording_id, a["limit_counter_id"])
        replay = ReplaySession(replay_session_id, pending.correlation_id, pending.session, recording_id,
                               desc.start_position, desc.initial_term_id, desc.term_buffer_length,
                               desc.segment_file_length, a["position"], a["length"], limit, pub, self.archive_dir,
                               a["file_io"], now_ns + self.ctx.connect_timeout_ns,
                               checksum_kind(self.ctx.replay_checksum))
        try:
            if a["length"] > 0:
                replay.open_segment()
                self._validate_replay_start(replay, desc)
        except (AeronError, OSError, RequestError) as ex:
            replay.close()
            code = ex.code if isinstance(ex, RequestError) else ArchiveErrorCode.GENERIC
            pending.session.send_error(pending.correlation_id, code, str(ex))
            return
        self.replay_sessions[replay_session_id] = replay
        pending.session.send_ok(pending.correlation_id, replay_session_id)
        self.replayer.add_session(replay)

    def _validate_replay_start(self, replay: ReplaySession, desc: Any) -> None:
        position = replay.replay_position
        if position == desc.start_position:
            return
        segment = replay.segment
        assert segment is not None
        offset = position - replay.segment_base
        frame = segment.get_bytes(offset, 32)        # a data frame header (not an SBE message)
        term_offset = int.from_bytes(frame[8:12], "little", signed=True)
        stream_id = int.from_bytes(frame[16:20], "little", signed=True)
        term_id = int.from_bytes(frame[20:24], "little", signed=True)
        bits = desc.term_buffer_length.bit_length() - 1
        expected_term_id = _i32(desc.initial_term_id + (position >> bits))
        if (term_offset, term_id, stream_id) != (position & (desc.term_buffer_length - 1), expected_term_id,
                                                 desc.stream_id):
            raise RequestError(f"requested replay start position={position} does not start a frame of recording "
                               f"{desc.recording_id}", ArchiveErrorCode.INVALID_POSITION)

    def _limit_function(self, recording_id: int, limit_counter_id: int):
        catalog = self.catalog
        recordings = self.recording_sessions
        if limit_counter_id != NULL_VALUE:
            reader = self.aeron.counters_reader
            last = [reader.get_counter_value(limit_counter_id)]

            def counter_limit() -> tuple[int, bool]:
                if reader.get_counter_state(limit_counter_id) != COUNTER_RECORD_ALLOCATED:
                    return last[0], True
                last[0] = reader.get_counter_value(limit_counter_id)
                return last[0], False
            return counter_limit
        recording = recordings.get(recording_id)
        if recording is None:
            stop = catalog.stop_position(recording_id)
            return lambda: (stop, True)

        def live_limit() -> tuple[int, bool]:
            done = recording.is_done            # first: once done, the position read after it is the final one
            return recording.position, done
        return live_limit

    def _close_replay_session(self, replay: ReplaySession) -> None:
        self.replay_sessions.pop(replay.replay_session_id, None)
        replay.close()
        if replay.error:
            replay.control_session.send_error(replay.correlation_id, ArchiveErrorCode.GENERIC, replay.error)

    def on_stop_replay(self, session: ControlSession, correlation_id: int, d: Any) -> None:
        """StopReplayRequest: always OK."""
        replay = self.replay_sessions.get(d.replay_session_id)
        if replay is not None:
            replay.abort("stopped")
        session.send_ok(correlation_id, 0)

    def on_stop_all_replays(self, session: ControlSession, correlation_id: int, d: Any) -> None:
        """StopAllReplaysRequest: every replay of the recording (-1: all)."""
        for replay in list(self.replay_sessions.values()):
            if d.recording_id == NULL_VALUE or replay.recording_id == d.recording_id:
                replay.abort("stopped")
        session.send_ok(correlation_id, 0)

    def on_replay_token(self, session: ControlSession, correlation_id: int, d: Any) -> None:
        """ReplayTokenRequest: a token valid for the connect timeout that attributes a replay request arriving on
        another connection to this session and recording."""
        self._check_recording(d.recording_id)
        token = NULL_VALUE
        while token == NULL_VALUE or token in self._replay_tokens:
            token = random.getrandbits(63)
        self._replay_tokens[token] = (session, d.recording_id, self.nano_time + self.ctx.connect_timeout_ns)
        session.send_ok(correlation_id, token)

    # -- requests: catalog maintenance -----------------------------------------------------------------------

    def _check_stopped(self, recording_id: int) -> None:
        self._check_recording(recording_id)
        if recording_id in self.recording_sessions:
            raise RequestError(f"recording {recording_id} is active", ArchiveErrorCode.ACTIVE_RECORDING)

    def _check_not_replayed(self, recording_id: int) -> None:
        if any(r.recording_id == recording_id for r in self.replay_sessions.values()):
            raise RequestError(f"cannot change recording {recording_id}: it is being replayed",
                               ArchiveErrorCode.ACTIVE_RECORDING)

    def _segment_files(self, recording_id: int) -> list[tuple[int, str]]:
        found = []
        for name in os.listdir(self.archive_dir):
            parsed = parse_segment_file_name(name)
            if parsed is not None and parsed[0] == recording_id:
                found.append((parsed[1], os.path.join(self.archive_dir, name)))
        return sorted(found)

    def _delete_files(self, session: ControlSession, correlation_id: int, recording_id: int,
                      paths: list[str]) -> None:
        session.send_ok(correlation_id, len(paths))
        for path in paths:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        session.send_signal(correlation_id, recording_id, NULL_VALUE, NULL_POSITION, RecordingSignal.DELETE)

    def on_truncate_recording(self, session: ControlSession, correlation_id: int, d: Any) -> None:
        """TruncateRecordingRequest."""
        recording_id, position = d.recording_id, d.position
        self._check_stopped(recording_id)
        self._check_not_replayed(recording_id)
        desc = self.catalog.recording(recording_id)
        start, stop = desc.start_position, desc.stop_position
        if position & (FRAME_ALIGNMENT - 1) or position < start or position > stop:
            raise RequestError(f"invalid truncate position {position}: recording {recording_id} spans "
                               f"[{start}, {stop}]", ArchiveErrorCode.INVALID_POSITION)
        seg_len, term_len = desc.segment_file_length, desc.term_buffer_length
        files = self._segment_files(recording_id)
        if position == start:
            doomed = [path for _, path in files]
        else:
            base = segment_file_base_position(start, position, term_len, seg_len)
            offset = position - base
            doomed = [path for b, path in files if b > base or (b == base and offset == 0)]
            if offset > 0 and position != stop:
                path = os.path.join(self.archive_dir, segment_file_name(recording_id, base))
                with open(path, "r+b") as f:
                    f.truncate(offset)
                    f.truncate(seg_len)
        self.catalog.update_stop_position(recording_id, position)
        self._delete_files(session, correlation_id, recording_id, doomed)

    def on_purge_recording(self, session: ControlSession, correlation_id: int, d: Any) -> None:
        """PurgeRecordingRequest: mark DELETED and delete every segment file."""
        recording_id = d.recording_id
        self._check_stopped(recording_id)
        self._check_not_replayed(recording_id)
        paths = [path for _, path in self._segment_files(recording_id)]
        self.catalog.change_state(recording_id, RecordingState.DELETED)
        self._delete_files(session, correlation_id, recording_id, paths)

    def _check_new_start(self, recording_id: int, new_start: int) -> Any:
        desc = self.catalog.recording(recording_id)
        seg_len, term_len = desc.segment_file_length, desc.term_buffer_length
        start = desc.start_position
        first_base = segment_file_base_position(start, start, term_len, seg_len)
        end = self.recording_sessions[recording_id].position if recording_id in self.recording_sessions \
            else desc.stop_position
        end_base = segment_file_base_position(start, max(end, start), term_len, seg_len)
        if new_start < 0 or (new_start - first_base) % seg_len:
            raise RequestError(f"invalid segment start: newStartPosition={new_start} is not a segment boundary",
                               ArchiveErrorCode.INVALID_POSITION)
        if new_start <= first_base or new_start > end_base:
            raise RequestError(f"invalid segment start: newStartPosition={new_start} outside "
                               f"({first_base}, {end_base}]", ArchiveErrorCode.INVALID_POSITION)
        for replay in self.replay_sessions.values():
            if replay.recording_id == recording_id and replay.replay_position < new_start:
                raise RequestError(f"cannot detach segments of recording {recording_id}: a replay is reading them",
                                   ArchiveErrorCode.ACTIVE_RECORDING)
        return desc

    def on_detach_segments(self, session: ControlSession, correlation_id: int, d: Any) -> None:
        """DetachSegmentsRequest: move the start forward; files stay."""
        self._check_recording(d.recording_id)
        self._check_new_start(d.recording_id, d.new_start_position)
        self.catalog.update_start_position(d.recording_id, d.new_start_position)
        session.send_ok(correlation_id, 0)

    def _detached_files(self, recording_id: int) -> list[str]:
        desc = self.catalog.recording(recording_id)
        base = segment_file_base_position(desc.start_position, desc.start_position, desc.term_buffer_length,
                                          desc.segment_file_length)
        return [path for b, path in self._segment_files(recording_id) if b < base]

    def on_delete_detached_segments(self, session: ControlSession, correlation_id: int, d: Any) -> None:
        """DeleteDetachedSegmentsRequest: files before the start position."""
        self._check_recording(d.recording_id)
        self._delete_files(session, correlation_id, d.recording_id, self._detached_files(d.recording_id))

    def on_purge_segments(self, session: ControlSession, correlation_id: int, d: Any) -> None:
        """PurgeSegmentsRequest: detach and delete."""
        self._check_recording(d.recording_id)
        self._check_new_start(d.recording_id, d.new_start_position)
        self.catalog.update_start_position(d.recording_id, d.new_start_position)
        self._delete_files(session, correlation_id, d.recording_id, self._detached_files(d.recording_id))

    def on_attach_segments(self, session: ControlSession, correlation_id: int, d: Any) -> None:
        """AttachSegmentsRequest: walk back over earlier segment files that still exist."""
        recording_id = d.recording_id
        self._check_recording(recording_id)
        desc = self.catalog.recording(recording_id)
        seg_len, term_len = desc.segment_file_length, desc.term_buffer_length
        bits = term_len.bit_length() - 1
        base = segment_file_base_position(desc.start_position, desc.start_position, term_len, seg_len)
        attached = 0
        position = base
        while position - seg_len >= 0:
            candidate = position - seg_len
            path = os.path.join(self.archive_dir, segment_file_name(recording_id, candidate))
            if not os.path.exists(path) or os.path.getsize(path) != seg_len:
                break
            with open(path, "rb") as f:
                frame = f.read(32)
            term_id = int.from_bytes(frame[20:24], "little", signed=True)
            stream_id = int.from_bytes(frame[16:20], "little", signed=True)
            if term_id != _i32(desc.initial_term_id + (candidate >> bits)) or stream_id != desc.stream_id:
                break
            position = candidate
            attached += 1
        if attached:
            self.catalog.update_start_position(recording_id, position)
        session.send_ok(correlation_id, attached)

    def on_migrate_segments(self, session: ControlSession, correlation_id: int, d: Any) -> None:
        """MigrateSegmentsRequest: move the segment files of stopped recording ``src`` in front of ``dst``, which
        must start, at a segment boundary, where ``src`` stops; both alike (segment and term length, initial term
        id, stream id, mtu). ``dst`` then starts where ``src`` did and ``src`` is left empty."""
        src_id, dst_id = d.src_recording_id, d.dst_recording_id
        for recording_id in (src_id, dst_id):
            self._check_stopped(recording_id)
            self._check_not_replayed(recording_id)
        if src_id == dst_id:
            raise RequestError(f"cannot migrate recording {src_id} onto itself")
        src, dst = self.catalog.recording(src_id), self.catalog.recording(dst_id)
        same = ("segment_file_length", "term_buffer_length", "initial_term_id", "stream_id", "mtu_length")
        if any(getattr(src, name) != getattr(dst, name) for name in same):
            raise RequestError(f"invalid migrate: recordings {src_id} and {dst_id} differ in one of {same}")
        if src.stop_position != dst.start_position:
            raise RequestError(f"invalid migrate: srcStopPosition={src.stop_position} != "
                               f"dstStartPosition={dst.start_position}", ArchiveErrorCode.INVALID_POSITION)
        seg_len, term_len = src.segment_file_length, src.term_buffer_length
        boundary = dst.start_position
        if segment_file_base_position(src.start_position, boundary, term_len, seg_len) != boundary:
            raise RequestError(f"invalid migrate: dstStartPosition={boundary} is not a segment boundary",
                               ArchiveErrorCode.INVALID_POSITION)
        moving = [(b, path) for b, path in self._segment_files(src_id) if b < boundary]
        for base, _ in moving:
            target = os.path.join(self.archive_dir, segment_file_name(dst_id, base))
            if os.path.exists(target):
                raise RequestError(f"invalid migrate: {target} already exists")
        for base, path in moving:
            os.rename(path, os.path.join(self.archive_dir, segment_file_name(dst_id, base)))
        self.catalog.update_start_position(dst_id, src.start_position)
        self.catalog.update_start_position(src_id, src.stop_position)
        leftover = [path for b, path in self._segment_files(src_id)]
        session.send_ok(correlation_id, len(moving))
        for path in leftover:
            _quietly(os.unlink, path)
        session.send_signal(correlation_id, src_id, NULL_VALUE, NULL_POSITION, RecordingSignal.DELETE)

    def on_update_channel(self, session: ControlSession, correlation_id: int, d: Any) -> None:
        """UpdateChannelRequest: new original and stripped channel for a recording's catalog entry."""
        desc = self.catalog.find_recording(d.recording_id)
        if desc is None:
            session.send_code(correlation_id, d.recording_id, ControlResponseCode.RECORDING_UNKNOWN)
            return
        try:
            stripped = stripped_channel(ChannelUri.parse(d.channel))
        except InvalidChannelError as ex:
            raise RequestError(f"invalid channel: {ex}") from None
        self.catalog.replace_recording(
            d.recording_id, start_position=desc.start_position, stop_position=desc.stop_position,
            start_timestamp=desc.start_timestamp, stop_timestamp=desc.stop_timestamp,
            initial_term_id=desc.initial_term_id, segment_file_length=desc.segment_file_length,
            term_buffer_length=desc.term_buffer_length, mtu_length=desc.mtu_length, session_id=desc.session_id,
            stream_id=desc.stream_id, stripped_channel=stripped, original_channel=d.channel,
            source_identity=desc.source_identity)
        session.send_ok(correlation_id, 0)

    # -- replication -------------------------------------------------------------------------------------------

    def on_replicate(self, session: ControlSession, correlation_id: int, d: Any) -> None:
        """ReplicateRequest(2) / TaggedReplicateRequest: replicate a recording of another archive into this one."""
        live_destination = d.live_destination
        channel_tag_id = getattr(d, "channel_tag_id", NULL_VALUE)
        subscription_tag_id = getattr(d, "subscription_tag_id", NULL_VALUE)
        v2 = isinstance(d, codecs.ReplicateRequest2Decoder)
        replication_channel = (d.replication_channel if v2 else "") or self.ctx.replication_channel
        if not replication_channel:
            raise RequestError("no replication channel: set aeron.archive.replication.channel or pass one")
        tagged = channel_tag_id != NULL_VALUE or subscription_tag_id != NULL_VALUE
        problem = replicate_request_problem(replication_channel, live_destination, tagged)
        if problem is not None:
            raise RequestError(problem)
        dst_recording_id = d.dst_recording_id
        if dst_recording_id != NULL_VALUE:
            self._check_stopped(dst_recording_id)
        if len(self.recording_sessions) >= self.ctx.max_concurrent_recordings:
            raise RequestError(f"max concurrent recordings reached {self.ctx.max_concurrent_recordings}",
                               ArchiveErrorCode.MAX_RECORDINGS)
        replication_id = self._new_session_id()
        # as Aeron: only NULL_VALUE means "the recording's"; any other value below its mtu fails the replication
        file_io = d.file_io_max_length if v2 and d.acting_version >= 7 else NULL_VALUE
        replication = ReplicationSession(
            self, session, replication_id, d.src_recording_id, dst_recording_id,
            d.stop_position if v2 else NULL_POSITION, d.src_control_channel, d.src_control_stream_id,
            replication_channel, d.replication_session_id if v2 and d.acting_version >= 8 else NULL_VALUE,
            d.encoded_credentials if v2 and d.acting_version >= 8 else b"",
            d.src_response_channel if v2 and d.acting_version >= 10 else "",
            file_io, self.nano_time, channel_tag_id, subscription_tag_id,
            live_destination)
        self.replication_sessions[replication_id] = replication
        session.send_ok(correlation_id, replication_id)

    def on_stop_replication(self, session: ControlSession, correlation_id: int, d: Any) -> None:
        """StopReplicationRequest."""
        replication = self.replication_sessions.get(d.replication_id)
        if replication is None:
            raise RequestError(f"unknown replication id {d.replication_id}", ArchiveErrorCode.UNKNOWN_REPLICATION)
        replication.abort()
        session.send_ok(correlation_id, 0)

    def _run_replications(self, now_ns: int) -> int:
        work = 0
        for replication in list(self.replication_sessions.values()):
            work += replication.do_work(now_ns)
            if replication.is_done:
                del self.replication_sessions[replication.replication_id]
                replication.close()
                session = replication.control_session
                if replication.error:
                    self.log_error(RequestError(replication.error, replication.error_code))
                    session.send_error(replication.replication_id, replication.error_code, replication.error)
                # as Aeron's ReplicationSession.close: its recording subscription is closed first, so the signal
                # names none
                session.send_signal(replication.replication_id, replication.dst_recording_id, NULL_VALUE,
                                    NULL_POSITION, RecordingSignal.REPLICATE_END)
        return work


class _ListRecordings:
    """A ListRecordings(ForUri) in progress: a few descriptors per duty cycle."""

    BATCH = 16

    def __init__(self, conductor: ArchiveConductor, session: ControlSession, correlation_id: int, from_id: int,
                 count: int, stream_id: int | None, fragment: bytes | None) -> None:
        self.conductor = conductor
        self.session = session
        self.correlation_id = correlation_id
        self.next_id = max(from_id, 0)
        self.remaining = count
        self.stream_id = stream_id
        self.fragment = fragment
        self.is_done = count <= 0

    def do_work(self) -> int:
        """Send up to BATCH matching descriptors; end with RECORDING_UNKNOWN when the catalog runs out."""
        if self.is_done:
            return 0
        catalog = self.conductor.catalog
        proxy = self.conductor.proxy
        sid = self.session.control_session_id
        sent = 0
        limit = catalog.next_recording_id
        while sent < self.BATCH and self.remaining > 0 and self.next_id < limit:
            recording_id = self.next_id
            self.next_id += 1
            desc = catalog.find_recording(recording_id)
            if desc is None:
                continue
            if self.stream_id is not None and (desc.stream_id != self.stream_id or self.fragment not in
                                               desc.original_channel.encode("ascii", "replace")):
                continue
            self.session.send(proxy.descriptor(sid, self.correlation_id, desc))
            self.remaining -= 1
            sent += 1
        if self.remaining <= 0:
            self.is_done = True
        elif self.next_id >= limit:
            self.session.send_code(self.correlation_id, self.next_id, ControlResponseCode.RECORDING_UNKNOWN)
            self.is_done = True
        return sent


def _i32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def _quietly(fn: Any, *args: Any) -> None:
    try:
        fn(*args)
    except (AeronError, OSError):
        pass
