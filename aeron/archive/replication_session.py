# SPDX-License-Identifier: Apache-2.0
"""Replication: this archive acts as a client of a source archive and records the source's replay of a recording
into a local one (Aeron ReplicationSession). Runs on the conductor, one step per duty cycle; the
source archive's requests are the archive client's own operation generators (aeron.archive.client), advanced with
``next()`` so that nothing here blocks the conductor.

With a live destination the replication ends by merging onto the live stream, as ReplayMerge does on the client
side: the recording subscription is multi-destination (``control-mode=manual``), the replay arrives over one
destination with the live publication's session id; once the replay is within a window of the source's recorded
position the live destination is added, and once the image is level with it and fed by both, the replay destination
is removed and the replay stopped. The recording then goes on from the live stream alone (MERGE signal) until that
stream ends. A tagged replication (channel/subscription tag ids) uses the same multi-destination subscription,
tagged, so that other subscriptions naming the tags share its receive endpoint.

With a ``control-mode=response`` replication channel (neither live destination nor tags) the replay comes back
over a response channel, as a client's replay over one does: the recording subscription is the response
subscription (no session id: the source's replay publication is paired with it), a replay token is asked for on
the source connection, and the ReplayRequest, bearing it, goes on a request publication of its own whose
``response-correlation-id`` names the recording subscription; that publication lives as long as the replication.
"""
from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any

from aeron._core.codecs.archive import RecordingSignal
from aeron.archive.client.aeron_archive import Context as ClientContext
from aeron.archive.client.aeron_archive import connect_op
from aeron.archive.client.archive_proxy import ReplayParams
from aeron.archive.client.replay_merge import LIVE_ADD_MAX_WINDOW, REPLAY_REMOVE_THRESHOLD
from aeron.archive.configuration import NULL_POSITION, NULL_VALUE
from aeron.archive.errors import ArchiveErrorCode
from aeron.common.channel_uri import (CONTROL_MODE_MANUAL, CONTROL_MODE_RESPONSE, ENDPOINT_PARAM_NAME, EOS_PARAM_NAME,
                                      INTERFACE_PARAM_NAME, LINGER_PARAM_NAME, MDC_CONTROL_MODE_PARAM_NAME,
                                      REJOIN_PARAM_NAME, RESPONSE_CORRELATION_ID_PARAM_NAME, SESSION_ID_PARAM_NAME,
                                      TAGS_PARAM_NAME, ChannelUri)
from aeron.common.errors import AeronError

if TYPE_CHECKING:
    from aeron.archive.archive_conductor import ArchiveConductor
    from aeron.archive.control_session import ControlSession

SOURCE_ARCHIVE_POLL_INTERVAL_NS = 100_000_000      # how often an idle step looks for an ERROR from the source


class ReplicationState(enum.Enum):
    """Where a replication is (Aeron ReplicationSession.State)."""

    CONNECT = 0
    REPLICATE_DESCRIPTOR = 1
    SRC_RECORDING_POSITION = 2
    EXTEND = 3
    REPLAY_TOKEN = 4
    GET_ARCHIVE_PROXY = 5
    REPLAY = 6
    AWAIT_IMAGE = 7
    REPLICATE = 8
    CATCHUP = 9
    ATTEMPT_LIVE_JOIN = 10
    DONE = 11


class _Credentials:
    """Credentials supplier of the source connection: the request's encoded credentials, also for a challenge."""

    def __init__(self, credentials: bytes) -> None:
        self._credentials = credentials

    def encoded_credentials(self) -> bytes:
        return self._credentials

    def on_challenge(self, encoded_challenge: bytes) -> bytes:
        return self._credentials


def default_response_channel(src_control_channel: str, local_control_channel: str | None = None) -> str:
    """The control response channel of a replication's connection to the source archive when the request names
    none: ``aeron:ipc`` for an IPC source, else ``aeron:udp?endpoint=<host>:0`` on the host of this archive's own
    control channel, where the source's responses must come (Aeron's ``Archive.Context.conclude`` derives the
    archive client context's response channel so); the source's host only when this archive has no UDP control
    channel."""
    uri = ChannelUri.parse(src_control_channel)
    if uri.is_ipc:
        return "aeron:ipc"
    endpoint = None
    if local_control_channel:
        local = ChannelUri.parse(local_control_channel)
        endpoint = None if local.is_ipc else local.get(ENDPOINT_PARAM_NAME)
    endpoint = endpoint or uri.get(ENDPOINT_PARAM_NAME) or "localhost:0"
    host = endpoint.rsplit(":", 1)[0]
    return f"aeron:udp?endpoint={host}:0"


def destination_uri(channel: str, endpoint: str) -> str:
    """The destination a multi-destination subscription receives ``channel``'s endpoint through: media, endpoint
    and the channel's interface (Aeron ``ChannelUri.createDestinationUri``)."""
    uri = ChannelUri.parse(channel)
    destination = f"aeron:{uri.media}?{ENDPOINT_PARAM_NAME}={endpoint}"
    interface = uri.get(INTERFACE_PARAM_NAME)
    return destination + f"|{INTERFACE_PARAM_NAME}={interface}" if interface is not None else destination


class ReplicationSession:
    """Replicates ``src_recording_id`` of the archive at ``src_control_channel`` into a local recording."""

    def __init__(self, conductor: "ArchiveConductor", control_session: "ControlSession", replication_id: int,
                 src_recording_id: int, dst_recording_id: int, stop_position: int, src_control_channel: str,
                 src_control_stream_id: int, replication_channel: str, replication_session_id: int,
                 encoded_credentials: bytes, src_response_channel: str, file_io_max_length: int,
                 now_ns: int, channel_tag_id: int = NULL_VALUE, subscription_tag_id: int = NULL_VALUE,
                 live_destination: str = "") -> None:
        """Made by the conductor for a Replicate request (already validated)."""
        self.conductor = conductor
        self.control_session = control_session
        self.replication_id = replication_id
        self.src_recording_id = src_recording_id
        self.dst_recording_id = dst_recording_id
        self.stop_position = stop_position
        self.replication_channel = replication_channel
        self.replication_session_id = replication_session_id
        self.file_io_max_length = file_io_max_length
        self.live_destination = live_destination or None
        # the replay comes back over a response channel: paired with the recording subscription, not by session id
        self.is_response = ChannelUri.parse(replication_channel).control_mode == CONTROL_MODE_RESPONSE
        self.replay_token = NULL_VALUE
        self.response_publication: Any = None
        # a tag left out is the replication id, as Aeron does, so a tagged subscription always has both
        self.is_tagged = channel_tag_id != NULL_VALUE or subscription_tag_id != NULL_VALUE
        self.channel_tag_id = replication_id if channel_tag_id == NULL_VALUE else channel_tag_id
        self.subscription_tag_id = replication_id if subscription_tag_id == NULL_VALUE else subscription_tag_id
        self.state = ReplicationState.CONNECT
        self.error = ""
        self.error_code = ArchiveErrorCode.GENERIC
        self.src_archive: Any = None
        self.src_descriptor: Any = None
        self.src_replay_session_id = NULL_VALUE
        self.src_recording_position = NULL_POSITION
        self.replay_position = NULL_POSITION
        self.replay_destination: str | None = None
        self.is_live_added = False
        self.recording_subscription: Any = None
        self.recording: Any = None
        self.position = NULL_POSITION
        self._timeout_ns = conductor.ctx.connect_timeout_ns
        self._deadline_ns = now_ns + self._timeout_ns
        self._next_source_poll_ns = now_ns
        self._abort = False
        client_ctx = ClientContext(environ={}, control_request_channel=src_control_channel,
                                   control_request_stream_id=src_control_stream_id,
                                   control_response_channel=src_response_channel or
                                   default_response_channel(src_control_channel,
                                                            conductor.ctx.control_channel
                                                            if conductor.ctx.control_channel_enabled else None),
                                   message_timeout_ns=self._timeout_ns)
        client_ctx.aeron = conductor.aeron
        if encoded_credentials:
            client_ctx.credentials_supplier = _Credentials(encoded_credentials)
        client_ctx.conclude()
        self._op: Any = connect_op(client_ctx)
        self._descriptors: list[Any] = []

    @property
    def is_done(self) -> bool:
        """True once finished (the conductor then closes it)."""
        return self.state is ReplicationState.DONE

    @property
    def is_mds(self) -> bool:
        """Whether the recording subscription is multi-destination (a live merge or a tagged replication)."""
        return self.is_tagged or self.live_destination is not None

    def abort(self) -> None:
        """Stop at the next step (StopReplication, archive closing)."""
        self._abort = True

    def _set_state(self, state: ReplicationState, now_ns: int) -> int:
        self.state = state
        self._deadline_ns = now_ns + self._timeout_ns
        return 1

    def _fail(self, message: str, code: int = ArchiveErrorCode.GENERIC) -> int:
        self.error = message
        self.error_code = code
        self.state = ReplicationState.DONE
        return 1

    def _step(self) -> tuple[bool, Any]:
        """Advance the current client operation; ``(finished, result)``."""
        try:
            next(self._op)
            return False, None
        except StopIteration as stop:
            self._op = None
            return True, stop.value

    def do_work(self, now_ns: int) -> int:
        """One step; errors end the replication with an ERROR response for the replication id."""
        if self.state is ReplicationState.DONE:
            return 0
        if self._abort:
            self.state = ReplicationState.DONE
            return 1
        rec_sub = self.recording_subscription
        if self.recording is None and rec_sub is not None and rec_sub.closed:
            self.state = ReplicationState.DONE          # stopped by a request before its recording began
            return 1
        try:
            work = self._do_work(now_ns)
            if self._op is None and self.src_archive is not None and self.state is not ReplicationState.DONE:
                work += self._poll_source_archive(now_ns)
            return work
        except AeronError as ex:
            code = getattr(ex, "error_code", None)
            if self.state is ReplicationState.CONNECT:
                code = ArchiveErrorCode.REPLICATION_CONNECTION_FAILURE
            return self._fail(f"replication {self.replication_id} failed in {self.state.name}: {ex}",
                              ArchiveErrorCode.GENERIC if code is None else int(code))

    def _poll_source_archive(self, now_ns: int) -> int:
        # between requests, an ERROR the source sends (its replay failed, the session closed) ends the replication
        if now_ns - self._next_source_poll_ns < 0:
            return 0
        self._next_source_poll_ns = now_ns + SOURCE_ARCHIVE_POLL_INTERVAL_NS
        message = self.src_archive.poll_for_error_response()
        if message is not None:
            return self._fail(f"replication {self.replication_id}: source archive: {message}")
        return 0

    def _do_work(self, now_ns: int) -> int:
        state = self.state
        if state is ReplicationState.CONNECT:
            finished, archive = self._step()
            if not finished:
                return 0
            self.src_archive = archive
            self._op = archive.list_recording_op(self.src_recording_id, self._descriptors.append)
            return self._set_state(ReplicationState.REPLICATE_DESCRIPTOR, now_ns)
        if state is ReplicationState.REPLICATE_DESCRIPTOR:
            finished, count = self._step()
            if not finished:
                return 0
            if not count:
                return self._fail(f"unknown src recording id {self.src_recording_id}",
                                  ArchiveErrorCode.UNKNOWN_RECORDING)
            return self._on_descriptor(self._descriptors[0], now_ns)
        if state is ReplicationState.SRC_RECORDING_POSITION:
            return self._src_recording_position(now_ns)
        if state is ReplicationState.EXTEND:
            return self._extend(now_ns)
        if state is ReplicationState.REPLAY_TOKEN:
            finished, token = self._step()
            if not finished:
                return 0
            self.replay_token = token
            self._op = self.src_archive.replay_request_publication_op(self.recording_subscription.registration_id)
            return self._set_state(ReplicationState.GET_ARCHIVE_PROXY, now_ns)
        if state is ReplicationState.GET_ARCHIVE_PROXY:
            finished, publication = self._step()
            if not finished:
                return 0
            self.response_publication = publication
            return self._set_state(ReplicationState.REPLAY, now_ns)
        if state is ReplicationState.REPLAY:
            return self._replay(now_ns)
        if state is ReplicationState.AWAIT_IMAGE:
            recording = self.conductor.recording_sessions.get(self.dst_recording_id)
            if recording is None:
                if now_ns - self._deadline_ns > 0:
                    return self._fail("no image from the source replay within the connect timeout")
                return 0
            self.recording = recording
            return self._set_state(ReplicationState.REPLICATE if self.live_destination is None
                                   else ReplicationState.CATCHUP, now_ns)
        if state is ReplicationState.REPLICATE:
            return self._replicate()
        if state is ReplicationState.CATCHUP:
            image = self.recording.image
            if image.position >= self.src_recording_position:
                return self._set_state(ReplicationState.ATTEMPT_LIVE_JOIN, now_ns)
            if self.recording.is_done or image.is_closed:
                return self._fail("replication image closed unexpectedly")
            return 0
        if state is ReplicationState.ATTEMPT_LIVE_JOIN:
            return self._attempt_live_join(now_ns)
        return 0

    def _replay_session_id(self) -> int:
        # the session id the source's replay publication gets: the recording's (a merge needs the live one's), or
        # the one the request forces
        if self.live_destination is None and self.replication_session_id != NULL_VALUE:
            return self.replication_session_id
        return self.src_descriptor.session_id

    def _on_descriptor(self, src: Any, now_ns: int) -> int:
        conductor = self.conductor
        catalog = conductor.catalog
        self.src_descriptor = src
        if self.file_io_max_length != NULL_VALUE and self.file_io_max_length < src.mtu_length:
            return self._fail(f"replication fileIoMaxLength ({self.file_io_max_length}) is less than the recording "
                              f"mtuLength ({src.mtu_length})")
        if self.live_destination is not None and src.stop_position != NULL_POSITION:
            return self._fail("cannot live merge without active source recording")
        # the source's description, timestamps included, as Aeron copies it
        description = dict(start_position=src.start_position, stop_position=src.start_position,
                           start_timestamp=src.start_timestamp, stop_timestamp=src.start_timestamp,
                           initial_term_id=src.initial_term_id, segment_file_length=src.segment_file_length,
                           term_buffer_length=src.term_buffer_length, mtu_length=src.mtu_length,
                           session_id=src.session_id, stream_id=src.stream_id, stripped_channel=src.stripped_channel,
                           original_channel=src.original_channel, source_identity=src.source_identity)
        if self.dst_recording_id == NULL_VALUE:
            self.dst_recording_id = catalog.add_recording(**description)
            self.control_session.send_signal(self.replication_id, self.dst_recording_id, NULL_VALUE,
                                             src.start_position, RecordingSignal.REPLICATE)
        else:
            dst = catalog.find_recording(self.dst_recording_id)
            if dst is None:
                return self._fail(f"unknown dst recording id {self.dst_recording_id}",
                                  ArchiveErrorCode.UNKNOWN_RECORDING)
            if self.dst_recording_id in conductor.recording_sessions:
                return self._fail(f"dst recording {self.dst_recording_id} is active",
                                  ArchiveErrorCode.ACTIVE_RECORDING)
            same = ("initial_term_id", "term_buffer_length", "mtu_length", "stream_id")
            if dst.start_position == dst.stop_position:
                catalog.replace_recording(self.dst_recording_id, **description)     # empty: becomes the source's
            elif any(getattr(dst, name) != getattr(src, name) for name in same) or \
                    dst.stop_position < src.start_position or \
                    (src.stop_position != NULL_POSITION and dst.stop_position > src.stop_position):
                return self._fail(f"dst recording {self.dst_recording_id} cannot continue src recording "
                                  f"{self.src_recording_id}", ArchiveErrorCode.INVALID_EXTENSION)
        dst_stop = catalog.stop_position(self.dst_recording_id)
        self.replay_position = dst_stop
        if src.start_position == src.stop_position or src.stop_position == dst_stop:
            # SYNC: the destination holds all the source's stopped recording has (ReplicationSession
            # .onRecordingDescriptor), whatever stop position was asked for
            self.position = dst_stop
            self.control_session.send_signal(self.replication_id, self.dst_recording_id, NULL_VALUE,
                                             src.stop_position, RecordingSignal.SYNC)
            self.state = ReplicationState.DONE
            return 1
        if self.stop_position != NULL_POSITION and dst_stop >= self.stop_position:
            self.position = dst_stop        # already as far as asked: nothing to replay, and not in sync
            self.state = ReplicationState.DONE
            return 1
        if self.live_destination is not None:
            self._op = self.src_archive.get_recording_position_op(self.src_recording_id)
            return self._set_state(ReplicationState.SRC_RECORDING_POSITION, now_ns)
        return self._set_state(ReplicationState.EXTEND, now_ns)

    def _src_recording_position(self, now_ns: int) -> int:
        finished, position = self._step()
        if not finished:
            return 0
        if position == NULL_POSITION:
            return self._fail("cannot live merge without active source recording")
        self.src_recording_position = position
        return self._set_state(ReplicationState.EXTEND, now_ns)

    def _extend(self, now_ns: int) -> int:
        """The recording subscription: an extension of the dst recording with the replay's session id; for a merge
        or a tagged replication a tagged multi-destination one with the replay's endpoint as first destination."""
        uri = ChannelUri.parse(self.replication_channel)
        endpoint = uri.get(ENDPOINT_PARAM_NAME)
        uri.put(REJOIN_PARAM_NAME, "false")
        if not self.is_response:
            uri.put(SESSION_ID_PARAM_NAME, str(self._replay_session_id()))
        if self.is_mds:
            if endpoint is None:
                return self._fail(f"replication channel has no endpoint for the replay destination: "
                                  f"{self.replication_channel}")
            uri.remove(ENDPOINT_PARAM_NAME)
            uri.put(TAGS_PARAM_NAME, f"{self.channel_tag_id},{self.subscription_tag_id}")
            uri.put(MDC_CONTROL_MODE_PARAM_NAME, CONTROL_MODE_MANUAL)
        self.recording_subscription = self.conductor.subscribe_for_replication(
            self.control_session, self.replication_id, self.src_descriptor.stream_id, str(uri), self.dst_recording_id)
        if self.is_mds:
            assert endpoint is not None
            self.replay_destination = destination_uri(self.replication_channel, endpoint)
            self.recording_subscription.subscription.async_add_destination(self.replay_destination)
        if self.is_response:
            self._op = self.src_archive.request_replay_token_op(self.src_recording_id)
            return self._set_state(ReplicationState.REPLAY_TOKEN, now_ns)
        return self._set_state(ReplicationState.REPLAY, now_ns)

    def _replay(self, now_ns: int) -> int:
        if self._op is None:
            uri = ChannelUri.parse(self.replication_channel)
            endpoint = uri.get(ENDPOINT_PARAM_NAME)
            if endpoint is not None and endpoint.endswith(":0"):
                # the replay goes to the port the driver bound for the (replay destination of the) subscription
                resolved = self.recording_subscription.subscription.resolved_endpoint
                if resolved is None:
                    if now_ns - self._deadline_ns > 0:
                        return self._fail(f"replication channel endpoint not resolved: "
                                          f"{self.recording_subscription.subscription.channel}")
                    return 0
                uri.replace_endpoint_wildcard_port(resolved)
            if self.live_destination is not None:
                # the replay must end without an end of stream: the image goes on with the live stream
                uri.put(LINGER_PARAM_NAME, "0")
                uri.put(EOS_PARAM_NAME, "false")
            length = (self.stop_position - self.replay_position if self.stop_position != NULL_POSITION
                      else NULL_VALUE)
            params = ReplayParams(position=self.replay_position, length=length,
                                  file_io_max_length=self.file_io_max_length, replay_token=self.replay_token)
            if self.is_response:
                # no session id: the source pairs its replay publication with the image this request comes on,
                # whose publication names the recording subscription (Aeron names it in the channel too)
                uri.put(RESPONSE_CORRELATION_ID_PARAM_NAME, str(self.recording_subscription.registration_id))
                self._op = self.src_archive.start_replay_on_publication_op(
                    self.response_publication, self.src_recording_id, str(uri), self.src_descriptor.stream_id, params)
            else:
                uri.put(SESSION_ID_PARAM_NAME, str(self._replay_session_id()))
                self._op = self.src_archive.start_replay_op(self.src_recording_id, str(uri),
                                                            self.src_descriptor.stream_id, params=params)
            return 1
        finished, replay_session_id = self._step()
        if not finished:
            return 0
        self.src_replay_session_id = replay_session_id
        return self._set_state(ReplicationState.AWAIT_IMAGE, now_ns)

    def _replicate(self) -> int:
        conductor = self.conductor
        recording = self.recording
        done = recording.is_done
        self.position = recording.position
        if self.stop_position != NULL_POSITION and self.position >= self.stop_position and not done:
            recording.abort()
            return 1
        if not done:
            return 0
        stop = conductor.catalog.stop_position(self.dst_recording_id)
        self.position = stop if stop != NULL_POSITION else self.position
        src_stop = self.src_descriptor.stop_position
        if src_stop != NULL_POSITION and self.position >= src_stop:
            # SYNC means the copy reached the source's stop position (ReplicationSession.replicate): a replication
            # asked to stop short of it, or of a live source, ends without one
            self.control_session.send_signal(self.replication_id, self.dst_recording_id,
                                             self.recording_subscription.registration_id, self.position,
                                             RecordingSignal.SYNC)
        self.src_replay_session_id = NULL_VALUE       # the replay ended with the image
        self.state = ReplicationState.DONE
        return 1

    def _attempt_live_join(self, now_ns: int) -> int:
        """Ask the source for its recorded position, again and again: add the live destination once within the
        window of it, then, level with it and fed by both destinations, drop the replay (the merge)."""
        image = self.recording.image
        if self._op is None:
            self._op = self.src_archive.get_recording_position_op(self.src_recording_id)
            return 1
        finished, src_position = self._step()
        if not finished:
            if self.recording.is_done or image.is_closed:
                return self._fail("replication image closed unexpectedly")
            return 0
        if src_position == NULL_POSITION:
            return self._fail("cannot live merge without active source recording")
        self.src_recording_position = src_position
        position = image.position
        if not self.is_live_added:
            if src_position - position <= min(image.term_buffer_length >> 2, LIVE_ADD_MAX_WINDOW):
                self.recording_subscription.subscription.async_add_destination(self.live_destination)
                self.is_live_added = True
                self._deadline_ns = now_ns + self._timeout_ns
            return 1
        transports = image.log_buffers.active_transport_count
        if src_position - position <= REPLAY_REMOVE_THRESHOLD and transports >= 2:
            self.recording_subscription.subscription.async_remove_destination(self.replay_destination)
            self.replay_destination = None
            # the recording now belongs to the live stream: closing this session leaves it running
            self.recording_subscription = None
            self.position = position
            self.control_session.send_signal(self.replication_id, self.dst_recording_id, NULL_VALUE, position,
                                             RecordingSignal.MERGE)
            self.state = ReplicationState.DONE
            return 1
        if transports >= 2:
            self._deadline_ns = now_ns + self._timeout_ns     # the live stream flows: level with it sooner or later
        elif now_ns - self._deadline_ns > 0:
            return self._fail(f"live destination did not join within the connect timeout: "
                              f"{self.live_destination} (activeTransportCount={transports}, position={position}, "
                              f"srcRecordingPosition={src_position})")
        return 1

    def close(self) -> None:
        """Stop the source replay if it still runs, close the source connection, the replay's request publication
        and, unless merged, the recording subscription."""
        archive = self.src_archive
        self.src_archive = None
        if self.recording_subscription is not None:
            self.conductor.close_recording_subscription(self.recording_subscription)
            self.recording_subscription = None      # gone: REPLICATE_END names none (ReplicationSession.close)
        publication, self.response_publication = self.response_publication, None
        if publication is not None:
            try:
                publication.close()
            except AeronError:
                pass
        if self._op is not None:
            try:
                self._op.close()          # an unfinished connect closes what it made
            except AeronError:
                pass
            self._op = None
        if archive is not None:
            try:
                if self.src_replay_session_id != NULL_VALUE:
                    archive.archive_proxy.stop_replay(self.src_replay_session_id, self.conductor.aeron
                                                      .next_correlation_id(), archive.control_session_id)
                archive.close()
            except AeronError:
                pass


def replicate_request_problem(replication_channel: str, live_destination: str, tagged: bool) -> str | None:
    """Why a Replicate request's channels cannot work, or None: a live destination must be a UDP channel, and a
    ``control-mode=response`` replication channel takes neither a live destination nor tags (as Aeron refuses)."""
    try:
        replication_uri = ChannelUri.parse(replication_channel)
    except AeronError as ex:
        return f"invalid replication channel: {ex}"
    response = replication_uri.control_mode == CONTROL_MODE_RESPONSE
    if live_destination:
        if response:
            return "response channels can't be used with live destinations"
        try:
            live_uri = ChannelUri.parse(live_destination)
        except AeronError as ex:
            return f"invalid live destination: {ex}"
        if not live_uri.is_udp or not replication_uri.is_udp:
            return f"live merge needs UDP channels: liveDestination={live_destination} " \
                   f"replicationChannel={replication_channel}"
    if tagged and response:
        return "response channels can't be used with tagged replication"
    return None
