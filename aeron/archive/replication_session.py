# SPDX-License-Identifier: Apache-2.0
"""Replication: this archive acts as a client of a source archive and records the source's replay of a recording
into a local one (Aeron ReplicationSession, archive.md §11.1). Runs on the conductor, one step per duty cycle; the
source archive's requests are the archive client's own operation generators (aeron.archive.client), advanced with
``next()`` so that nothing here blocks the conductor.

Not done here: merging onto a live stream (``liveDestination``), refused with an error; tagged replication puts the
tags on an ordinary recording subscription instead of Aeron's multi-destination one.
"""
from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any

from aeron._core.codecs.archive import RecordingSignal
from aeron.archive.archive_proxy import ReplayParams
from aeron.archive.client import Context as ClientContext
from aeron.archive.client import connect_op
from aeron.archive.errors import ArchiveErrorCode
from aeron.common.channel_uri import (ENDPOINT_PARAM_NAME, REJOIN_PARAM_NAME, SESSION_ID_PARAM_NAME, TAGS_PARAM_NAME,
                                      ChannelUri)
from aeron.common.errors import AeronError

if TYPE_CHECKING:
    from aeron.archive.conductor import ArchiveConductor
    from aeron.archive.control_session import ControlSession

NULL_VALUE = -1
NULL_POSITION = -1


class ReplicationState(enum.Enum):
    """Where a replication is (Aeron ReplicationSession.State, without the live-merge states)."""

    CONNECT = 0
    REPLICATE_DESCRIPTOR = 1
    EXTEND = 2
    REPLAY = 3
    AWAIT_IMAGE = 4
    REPLICATE = 5
    DONE = 6


class _Credentials:
    """Credentials supplier of the source connection: the request's encoded credentials, also for a challenge."""

    def __init__(self, credentials: bytes) -> None:
        self._credentials = credentials

    def encoded_credentials(self) -> bytes:
        return self._credentials

    def on_challenge(self, encoded_challenge: bytes) -> bytes:
        return self._credentials


def default_response_channel(src_control_channel: str) -> str:
    """``aeron:udp?endpoint=<control host>:0`` for a UDP source, ``aeron:ipc`` for an IPC one (archive.md §13)."""
    uri = ChannelUri.parse(src_control_channel)
    if uri.is_ipc:
        return "aeron:ipc"
    endpoint = uri.get(ENDPOINT_PARAM_NAME) or "localhost:0"
    host = endpoint.rsplit(":", 1)[0]
    return f"aeron:udp?endpoint={host}:0"


class ReplicationSession:
    """Replicates ``src_recording_id`` of the archive at ``src_control_channel`` into a local recording."""

    def __init__(self, conductor: "ArchiveConductor", control_session: "ControlSession", replication_id: int,
                 src_recording_id: int, dst_recording_id: int, stop_position: int, src_control_channel: str,
                 src_control_stream_id: int, replication_channel: str, replication_session_id: int,
                 encoded_credentials: bytes, src_response_channel: str, file_io_max_length: int,
                 now_ns: int, channel_tag_id: int = NULL_VALUE, subscription_tag_id: int = NULL_VALUE) -> None:
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
        self.channel_tag_id = channel_tag_id
        self.subscription_tag_id = subscription_tag_id
        self.state = ReplicationState.CONNECT
        self.error = ""
        self.error_code = ArchiveErrorCode.GENERIC
        self.src_archive: Any = None
        self.src_descriptor: Any = None
        self.src_replay_session_id = NULL_VALUE
        self.replay_position = NULL_POSITION
        self.recording_subscription: Any = None
        self.recording: Any = None
        self.position = NULL_POSITION
        self._deadline_ns = now_ns + conductor.ctx.connect_timeout_ns
        self._abort = False
        client_ctx = ClientContext(environ={}, control_request_channel=src_control_channel,
                                   control_request_stream_id=src_control_stream_id,
                                   control_response_channel=src_response_channel or
                                   default_response_channel(src_control_channel),
                                   message_timeout_ns=conductor.ctx.connect_timeout_ns)
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

    def abort(self) -> None:
        """Stop at the next step (StopReplication, archive closing)."""
        self._abort = True

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
        try:
            return self._do_work(now_ns)
        except AeronError as ex:
            code = getattr(ex, "error_code", None)
            if self.state is ReplicationState.CONNECT:
                code = ArchiveErrorCode.REPLICATION_CONNECTION_FAILURE
            return self._fail(f"replication {self.replication_id} failed in {self.state.name}: {ex}",
                              ArchiveErrorCode.GENERIC if code is None else int(code))

    def _do_work(self, now_ns: int) -> int:
        conductor = self.conductor
        state = self.state
        if state is ReplicationState.CONNECT:
            finished, archive = self._step()
            if not finished:
                return 0
            self.src_archive = archive
            self._op = archive._list_recording_op(self.src_recording_id, self._descriptors.append)
            self.state = ReplicationState.REPLICATE_DESCRIPTOR
            return 1
        if state is ReplicationState.REPLICATE_DESCRIPTOR:
            finished, count = self._step()
            if not finished:
                return 0
            if not count:
                return self._fail(f"unknown src recording id {self.src_recording_id}",
                                  ArchiveErrorCode.UNKNOWN_RECORDING)
            return self._on_descriptor(self._descriptors[0], now_ns)
        if state is ReplicationState.EXTEND:
            sub = self.recording_subscription.subscription
            resolved = sub.try_resolve_channel_endpoint_port()
            if resolved is None:
                if now_ns - self._deadline_ns > 0:
                    return self._fail("replication channel endpoint not resolved")
                return 0
            uri = ChannelUri.parse(resolved)
            uri.put(SESSION_ID_PARAM_NAME, str(self._replay_image_session_id()))
            src = self.src_descriptor
            length = (self.stop_position - self.replay_position if self.stop_position != NULL_POSITION
                      else NULL_VALUE)
            params = ReplayParams(position=self.replay_position, length=length,
                                  file_io_max_length=self.file_io_max_length)
            self._op = self.src_archive._start_replay_op(self.src_recording_id, str(uri), src.stream_id, params)
            self.state = ReplicationState.REPLAY
            return 1
        if state is ReplicationState.REPLAY:
            finished, replay_session_id = self._step()
            if not finished:
                return 0
            self.src_replay_session_id = replay_session_id
            self._deadline_ns = now_ns + conductor.ctx.connect_timeout_ns
            self.state = ReplicationState.AWAIT_IMAGE
            return 1
        if state is ReplicationState.AWAIT_IMAGE:
            recording = conductor.recording_sessions.get(self.dst_recording_id)
            if recording is None:
                if now_ns - self._deadline_ns > 0:
                    return self._fail("no image from the source replay within the connect timeout")
                return 0
            self.recording = recording
            self.state = ReplicationState.REPLICATE
            return 1
        if state is ReplicationState.REPLICATE:
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
            if self.src_descriptor.stop_position != NULL_POSITION or self.stop_position != NULL_POSITION:
                self.control_session.send_signal(self.replication_id, self.dst_recording_id,
                                                 self.recording_subscription.registration_id, self.position,
                                                 RecordingSignal.SYNC)
            self.src_replay_session_id = NULL_VALUE       # the replay ended with the image
            self.state = ReplicationState.DONE
            return 1
        return 0

    def _replay_image_session_id(self) -> int:
        # the session id the source's replay publication gets: forced, or the source recording's (archive.md §11.1)
        if self.replication_session_id != NULL_VALUE:
            return self.replication_session_id
        return self.src_descriptor.session_id

    def _on_descriptor(self, src: Any, now_ns: int) -> int:
        conductor = self.conductor
        catalog = conductor.catalog
        self.src_descriptor = src
        if self.dst_recording_id == NULL_VALUE:
            now_ms = conductor.ctx.epoch_clock_ms()
            self.dst_recording_id = catalog.add_recording(
                start_position=src.start_position, stop_position=src.start_position, start_timestamp=now_ms,
                stop_timestamp=now_ms, initial_term_id=src.initial_term_id,
                segment_file_length=src.segment_file_length, term_buffer_length=src.term_buffer_length,
                mtu_length=src.mtu_length, session_id=src.session_id, stream_id=src.stream_id,
                stripped_channel=src.stripped_channel, original_channel=src.original_channel,
                source_identity=src.source_identity)
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
            if any(getattr(dst, name) != getattr(src, name) for name in same) or \
                    dst.stop_position < src.start_position or \
                    (src.stop_position != NULL_POSITION and dst.stop_position > src.stop_position):
                return self._fail(f"dst recording {self.dst_recording_id} cannot continue src recording "
                                  f"{self.src_recording_id}", ArchiveErrorCode.INVALID_EXTENSION)
        dst_stop = catalog.stop_position(self.dst_recording_id)
        self.replay_position = dst_stop
        end = self.stop_position if self.stop_position != NULL_POSITION else src.stop_position
        if end != NULL_POSITION and dst_stop >= end:
            self.position = dst_stop
            self.control_session.send_signal(self.replication_id, self.dst_recording_id, NULL_VALUE, dst_stop,
                                             RecordingSignal.SYNC)
            self.state = ReplicationState.DONE
            return 1
        uri = ChannelUri.parse(self.replication_channel)
        uri.put(SESSION_ID_PARAM_NAME, str(self._replay_image_session_id()))
        uri.put(REJOIN_PARAM_NAME, "false")
        if self.channel_tag_id != NULL_VALUE:
            # tagged: the recording subscription carries the request's tags (no multi-destination subscription)
            tags = str(self.channel_tag_id) if self.subscription_tag_id == NULL_VALUE else \
                f"{self.channel_tag_id},{self.subscription_tag_id}"
            uri.put(TAGS_PARAM_NAME, tags)
        self.recording_subscription = conductor.subscribe_for_replication(
            self.control_session, self.replication_id, src.stream_id, str(uri), self.dst_recording_id)
        self._deadline_ns = now_ns + conductor.ctx.connect_timeout_ns
        self.state = ReplicationState.EXTEND
        return 1

    def close(self) -> None:
        """Stop the source replay if it still runs, close the source connection and the recording subscription."""
        archive = self.src_archive
        self.src_archive = None
        if self.recording_subscription is not None:
            self.conductor.close_recording_subscription(self.recording_subscription)
        if archive is not None:
            try:
                if self.src_replay_session_id != NULL_VALUE:
                    archive.archive_proxy.stop_replay(self.src_replay_session_id, self.conductor.aeron
                                                      .next_correlation_id(), archive.control_session_id)
                archive.close()
            except AeronError:
                pass
