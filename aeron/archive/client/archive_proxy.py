# SPDX-License-Identifier: Apache-2.0
"""ArchiveProxy: encodes control requests with the generated codecs and offers them on the request publication
(Aeron ``ArchiveProxy``). Each method returns True once offered, False after ``retry_attempts`` offers met back
pressure, and raises ArchiveError when the publication is closed, not connected or at its maximum position."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from aeron._core.codecs import archive as codecs
from aeron.archive.client.handlers import CredentialsSupplier
from aeron.archive.configuration import (MESSAGE_RETRY_ATTEMPTS_DEFAULT, NULL_POSITION, NULL_VALUE,
                                         PROTOCOL_SEMANTIC_VERSION, REPLAY_ALL_AND_FOLLOW)
from aeron.archive.errors import ArchiveError
from aeron.client.publication import ExclusivePublication

_BUFFER_LENGTH = 64 * 1024      # the largest request: ReplicateRequest2 with four channels and credentials


@dataclass
class ReplayParams:
    """Optional replay parameters (Aeron ``ReplayParams``): a bounding counter makes it a BoundedReplayRequest."""

    position: int = NULL_POSITION
    length: int = REPLAY_ALL_AND_FOLLOW
    bounding_limit_counter_id: int = NULL_VALUE
    file_io_max_length: int = NULL_VALUE
    replay_token: int = NULL_VALUE
    subscription_registration_id: int = NULL_VALUE

    @property
    def is_bounded(self) -> bool:
        """True when a limit counter bounds the replay."""
        return self.bounding_limit_counter_id != NULL_VALUE


@dataclass
class ReplicationParams:
    """Optional replication parameters (Aeron ``ReplicationParams``)."""

    stop_position: int = NULL_POSITION
    dst_recording_id: int = NULL_VALUE
    live_destination: str | None = None
    replication_channel: str | None = None
    channel_tag_id: int = NULL_VALUE
    subscription_tag_id: int = NULL_VALUE
    file_io_max_length: int = NULL_VALUE
    replication_session_id: int = NULL_VALUE
    encoded_credentials: bytes = b""
    src_response_channel: str | None = None


class ArchiveProxy:
    """Request encoder and sender over an exclusive publication to the archive's control channel."""

    __slots__ = ("publication", "retry_attempts", "credentials_supplier", "client_info", "_buffer", "_yield")

    def __init__(self, publication: ExclusivePublication | Any, retry_attempts: int = MESSAGE_RETRY_ATTEMPTS_DEFAULT,
                 credentials_supplier: CredentialsSupplier | None = None, client_info: str = "") -> None:
        """``credentials_supplier`` has ``encoded_credentials() -> bytes`` and ``on_challenge(bytes) -> bytes``."""
        self.publication = publication
        self.retry_attempts = retry_attempts
        self.credentials_supplier = credentials_supplier
        self.client_info = client_info
        self._buffer = bytearray(_BUFFER_LENGTH)
        self._yield = os.sched_yield

    # -- offering ------------------------------------------------------------------------------------------
    def _offer(self, encoder: Any) -> bool:
        length = codecs.MESSAGE_HEADER_LENGTH + encoder.encoded_length
        publication = self.publication
        attempts = self.retry_attempts
        while True:
            position = publication.offer(self._buffer, 0, length)
            if position > 0:
                return True
            if position == publication.CLOSED:
                raise ArchiveError("connection to the archive has been closed")
            if position == publication.NOT_CONNECTED:
                raise ArchiveError("connection to the archive is no longer available")
            if position == publication.MAX_POSITION_EXCEEDED:
                raise ArchiveError(f"offer failed due to max position being reached: "
                                   f"term-length={publication.term_buffer_length}")
            attempts -= 1
            if attempts <= 0:
                return False
            self._yield()

    def _try_offer(self, encoder: Any) -> bool:
        return self.publication.offer(self._buffer, 0, codecs.MESSAGE_HEADER_LENGTH + encoder.encoded_length) > 0

    def _wrap(self, encoder_class: Any) -> Any:
        return encoder_class().wrap_and_apply_header(self._buffer, 0)

    @property
    def encoded(self) -> bytes:
        """The last request encoded (header and body), for inspection."""
        header = codecs.MessageHeaderDecoder().wrap(self._buffer, 0)
        decoder_class = codecs.TEMPLATES[header.template_id][1]
        decoder = decoder_class().wrap_header(self._buffer, 0)
        return bytes(self._buffer[:codecs.MESSAGE_HEADER_LENGTH + decoder.encoded_length])

    # -- session ------------------------------------------------------------------------------------------
    def try_connect(self, response_channel: str, response_stream_id: int, correlation_id: int) -> bool:
        """One offer of AuthConnectRequest with the credentials supplier's credentials."""
        credentials = b"" if self.credentials_supplier is None else self.credentials_supplier.encoded_credentials()
        e = self._wrap(codecs.AuthConnectRequestEncoder)
        e.correlation_id = correlation_id
        e.response_stream_id = response_stream_id
        e.version = PROTOCOL_SEMANTIC_VERSION
        e.put_response_channel(response_channel)
        e.put_encoded_credentials(bytes(credentials or b""))
        e.put_client_info(self.client_info)
        return self._try_offer(e)

    def try_challenge_response(self, encoded_credentials: bytes, correlation_id: int, control_session_id: int) -> bool:
        """One offer of ChallengeResponse."""
        e = self._wrap(codecs.ChallengeResponseEncoder)
        e.control_session_id = control_session_id
        e.correlation_id = correlation_id
        e.put_encoded_credentials(bytes(encoded_credentials or b""))
        return self._try_offer(e)

    def keep_alive(self, control_session_id: int, correlation_id: int) -> bool:
        """KeepAliveRequest (activates the session after connect)."""
        e = self._wrap(codecs.KeepAliveRequestEncoder)
        e.control_session_id = control_session_id
        e.correlation_id = correlation_id
        return self._offer(e)

    def close_session(self, control_session_id: int) -> bool:
        """CloseSessionRequest (no response)."""
        e = self._wrap(codecs.CloseSessionRequestEncoder)
        e.control_session_id = control_session_id
        return self._offer(e)

    def archive_id(self, correlation_id: int, control_session_id: int) -> bool:
        """ArchiveIdRequest."""
        return self._ids(codecs.ArchiveIdRequestEncoder, correlation_id, control_session_id)

    def _ids(self, encoder_class: Any, correlation_id: int, control_session_id: int, **fields: int) -> bool:
        e = self._wrap(encoder_class)
        e.control_session_id = control_session_id
        e.correlation_id = correlation_id
        for name, value in fields.items():
            setattr(e, name, value)
        return self._offer(e)

    # -- recording ----------------------------------------------------------------------------------------
    def start_recording(self, channel: str, stream_id: int, source_location: int, correlation_id: int,
                        control_session_id: int, auto_stop: bool | None = None) -> bool:
        """StartRecordingRequest, or StartRecordingRequest2 when ``auto_stop`` is given."""
        if auto_stop is None:
            e = self._wrap(codecs.StartRecordingRequestEncoder)
        else:
            e = self._wrap(codecs.StartRecordingRequest2Encoder)
        e.control_session_id = control_session_id
        e.correlation_id = correlation_id
        e.stream_id = stream_id
        e.source_location = int(source_location)
        if auto_stop is not None:
            e.auto_stop = codecs.BooleanType.TRUE if auto_stop else codecs.BooleanType.FALSE
        e.put_channel(channel)
        return self._offer(e)

    def extend_recording(self, channel: str, stream_id: int, source_location: int, recording_id: int,
                         correlation_id: int, control_session_id: int, auto_stop: bool | None = None) -> bool:
        """ExtendRecordingRequest, or ExtendRecordingRequest2 when ``auto_stop`` is given."""
        if auto_stop is None:
            e = self._wrap(codecs.ExtendRecordingRequestEncoder)
        else:
            e = self._wrap(codecs.ExtendRecordingRequest2Encoder)
        e.control_session_id = control_session_id
        e.correlation_id = correlation_id
        e.recording_id = recording_id
        e.stream_id = stream_id
        e.source_location = int(source_location)
        if auto_stop is not None:
            e.auto_stop = codecs.BooleanType.TRUE if auto_stop else codecs.BooleanType.FALSE
        e.put_channel(channel)
        return self._offer(e)

    def stop_recording(self, channel: str, stream_id: int, correlation_id: int, control_session_id: int) -> bool:
        """StopRecordingRequest by channel and stream."""
        e = self._wrap(codecs.StopRecordingRequestEncoder)
        e.control_session_id = control_session_id
        e.correlation_id = correlation_id
        e.stream_id = stream_id
        e.put_channel(channel)
        return self._offer(e)

    def stop_recording_subscription(self, subscription_id: int, correlation_id: int, control_session_id: int) -> bool:
        """StopRecordingSubscriptionRequest."""
        return self._ids(codecs.StopRecordingSubscriptionRequestEncoder, correlation_id, control_session_id,
                         subscription_id=subscription_id)

    def stop_recording_by_identity(self, recording_id: int, correlation_id: int, control_session_id: int) -> bool:
        """StopRecordingByIdentityRequest."""
        return self._ids(codecs.StopRecordingByIdentityRequestEncoder, correlation_id, control_session_id,
                         recording_id=recording_id)

    # -- replay -------------------------------------------------------------------------------------------
    def replay(self, recording_id: int, position: int, length: int, replay_channel: str, replay_stream_id: int,
               correlation_id: int, control_session_id: int, file_io_max_length: int = NULL_VALUE,
               replay_token: int = NULL_VALUE) -> bool:
        """ReplayRequest."""
        e = self._wrap(codecs.ReplayRequestEncoder)
        e.control_session_id = control_session_id
        e.correlation_id = correlation_id
        e.recording_id = recording_id
        e.position = position
        e.length = length
        e.replay_stream_id = replay_stream_id
        e.file_io_max_length = file_io_max_length
        e.replay_token = replay_token
        e.put_replay_channel(replay_channel)
        return self._offer(e)

    def bounded_replay(self, recording_id: int, position: int, length: int, limit_counter_id: int,
                       replay_channel: str, replay_stream_id: int, correlation_id: int, control_session_id: int,
                       file_io_max_length: int = NULL_VALUE, replay_token: int = NULL_VALUE) -> bool:
        """BoundedReplayRequest: never replays past the value of counter ``limit_counter_id``."""
        e = self._wrap(codecs.BoundedReplayRequestEncoder)
        e.control_session_id = control_session_id
        e.correlation_id = correlation_id
        e.recording_id = recording_id
        e.position = position
        e.length = length
        e.limit_counter_id = limit_counter_id
        e.replay_stream_id = replay_stream_id
        e.file_io_max_length = file_io_max_length
        e.replay_token = replay_token
        e.put_replay_channel(replay_channel)
        return self._offer(e)

    def replay_with_params(self, recording_id: int, replay_channel: str, replay_stream_id: int,
                           params: ReplayParams, correlation_id: int, control_session_id: int) -> bool:
        """ReplayRequest or BoundedReplayRequest from :class:`ReplayParams`."""
        if params.is_bounded:
            return self.bounded_replay(recording_id, params.position, params.length,
                                       params.bounding_limit_counter_id, replay_channel, replay_stream_id,
                                       correlation_id, control_session_id, params.file_io_max_length,
                                       params.replay_token)
        return self.replay(recording_id, params.position, params.length, replay_channel, replay_stream_id,
                           correlation_id, control_session_id, params.file_io_max_length, params.replay_token)

    def stop_replay(self, replay_session_id: int, correlation_id: int, control_session_id: int) -> bool:
        """StopReplayRequest."""
        return self._ids(codecs.StopReplayRequestEncoder, correlation_id, control_session_id,
                         replay_session_id=replay_session_id)

    def stop_all_replays(self, recording_id: int, correlation_id: int, control_session_id: int) -> bool:
        """StopAllReplaysRequest (``recording_id`` -1: every recording)."""
        return self._ids(codecs.StopAllReplaysRequestEncoder, correlation_id, control_session_id,
                         recording_id=recording_id)

    def request_replay_token(self, correlation_id: int, control_session_id: int, recording_id: int) -> bool:
        """ReplayTokenRequest (replays over response channels)."""
        return self._ids(codecs.ReplayTokenRequestEncoder, correlation_id, control_session_id,
                         recording_id=recording_id)

    # -- queries ------------------------------------------------------------------------------------------
    def list_recordings(self, from_recording_id: int, record_count: int, correlation_id: int,
                        control_session_id: int) -> bool:
        """ListRecordingsRequest."""
        return self._ids(codecs.ListRecordingsRequestEncoder, correlation_id, control_session_id,
                         from_recording_id=from_recording_id, record_count=record_count)

    def list_recordings_for_uri(self, from_recording_id: int, record_count: int, channel_fragment: str,
                                stream_id: int, correlation_id: int, control_session_id: int) -> bool:
        """ListRecordingsForUriRequest."""
        e = self._wrap(codecs.ListRecordingsForUriRequestEncoder)
        e.control_session_id = control_session_id
        e.correlation_id = correlation_id
        e.from_recording_id = from_recording_id
        e.record_count = record_count
        e.stream_id = stream_id
        e.put_channel(channel_fragment)
        return self._offer(e)

    def list_recording(self, recording_id: int, correlation_id: int, control_session_id: int) -> bool:
        """ListRecordingRequest."""
        return self._ids(codecs.ListRecordingRequestEncoder, correlation_id, control_session_id,
                         recording_id=recording_id)

    def list_recording_subscriptions(self, pseudo_index: int, subscription_count: int, channel_fragment: str,
                                     stream_id: int, apply_stream_id: bool, correlation_id: int,
                                     control_session_id: int) -> bool:
        """ListRecordingSubscriptionsRequest."""
        e = self._wrap(codecs.ListRecordingSubscriptionsRequestEncoder)
        e.control_session_id = control_session_id
        e.correlation_id = correlation_id
        e.pseudo_index = pseudo_index
        e.subscription_count = subscription_count
        e.apply_stream_id = codecs.BooleanType.TRUE if apply_stream_id else codecs.BooleanType.FALSE
        e.stream_id = stream_id
        e.put_channel(channel_fragment)
        return self._offer(e)

    def get_recording_position(self, recording_id: int, correlation_id: int, control_session_id: int) -> bool:
        """RecordingPositionRequest."""
        return self._ids(codecs.RecordingPositionRequestEncoder, correlation_id, control_session_id,
                         recording_id=recording_id)

    def get_start_position(self, recording_id: int, correlation_id: int, control_session_id: int) -> bool:
        """StartPositionRequest."""
        return self._ids(codecs.StartPositionRequestEncoder, correlation_id, control_session_id,
                         recording_id=recording_id)

    def get_stop_position(self, recording_id: int, correlation_id: int, control_session_id: int) -> bool:
        """StopPositionRequest."""
        return self._ids(codecs.StopPositionRequestEncoder, correlation_id, control_session_id,
                         recording_id=recording_id)

    def get_max_recorded_position(self, recording_id: int, correlation_id: int, control_session_id: int) -> bool:
        """MaxRecordedPositionRequest."""
        return self._ids(codecs.MaxRecordedPositionRequestEncoder, correlation_id, control_session_id,
                         recording_id=recording_id)

    def find_last_matching_recording(self, min_recording_id: int, channel_fragment: str, stream_id: int,
                                     session_id: int, correlation_id: int, control_session_id: int) -> bool:
        """FindLastMatchingRecordingRequest."""
        e = self._wrap(codecs.FindLastMatchingRecordingRequestEncoder)
        e.control_session_id = control_session_id
        e.correlation_id = correlation_id
        e.min_recording_id = min_recording_id
        e.session_id = session_id
        e.stream_id = stream_id
        e.put_channel(channel_fragment)
        return self._offer(e)

    # -- catalog and segments -----------------------------------------------------------------------------
    def truncate_recording(self, recording_id: int, position: int, correlation_id: int,
                           control_session_id: int) -> bool:
        """TruncateRecordingRequest."""
        return self._ids(codecs.TruncateRecordingRequestEncoder, correlation_id, control_session_id,
                         recording_id=recording_id, position=position)

    def purge_recording(self, recording_id: int, correlation_id: int, control_session_id: int) -> bool:
        """PurgeRecordingRequest."""
        return self._ids(codecs.PurgeRecordingRequestEncoder, correlation_id, control_session_id,
                         recording_id=recording_id)

    def detach_segments(self, recording_id: int, new_start_position: int, correlation_id: int,
                        control_session_id: int) -> bool:
        """DetachSegmentsRequest."""
        return self._ids(codecs.DetachSegmentsRequestEncoder, correlation_id, control_session_id,
                         recording_id=recording_id, new_start_position=new_start_position)

    def delete_detached_segments(self, recording_id: int, correlation_id: int, control_session_id: int) -> bool:
        """DeleteDetachedSegmentsRequest."""
        return self._ids(codecs.DeleteDetachedSegmentsRequestEncoder, correlation_id, control_session_id,
                         recording_id=recording_id)

    def purge_segments(self, recording_id: int, new_start_position: int, correlation_id: int,
                       control_session_id: int) -> bool:
        """PurgeSegmentsRequest."""
        return self._ids(codecs.PurgeSegmentsRequestEncoder, correlation_id, control_session_id,
                         recording_id=recording_id, new_start_position=new_start_position)

    def attach_segments(self, recording_id: int, correlation_id: int, control_session_id: int) -> bool:
        """AttachSegmentsRequest."""
        return self._ids(codecs.AttachSegmentsRequestEncoder, correlation_id, control_session_id,
                         recording_id=recording_id)

    def migrate_segments(self, src_recording_id: int, dst_recording_id: int, correlation_id: int,
                         control_session_id: int) -> bool:
        """MigrateSegmentsRequest."""
        return self._ids(codecs.MigrateSegmentsRequestEncoder, correlation_id, control_session_id,
                         src_recording_id=src_recording_id, dst_recording_id=dst_recording_id)

    def update_channel(self, recording_id: int, channel: str, correlation_id: int, control_session_id: int) -> bool:
        """UpdateChannelRequest."""
        e = self._wrap(codecs.UpdateChannelRequestEncoder)
        e.control_session_id = control_session_id
        e.correlation_id = correlation_id
        e.recording_id = recording_id
        e.put_channel(channel)
        return self._offer(e)

    # -- replication --------------------------------------------------------------------------------------
    def replicate(self, src_recording_id: int, src_control_stream_id: int, src_control_channel: str,
                  params: ReplicationParams, correlation_id: int, control_session_id: int) -> bool:
        """ReplicateRequest2 (every replicate flavour: plain, with stop position, tagged, with parameters)."""
        e = self._wrap(codecs.ReplicateRequest2Encoder)
        e.control_session_id = control_session_id
        e.correlation_id = correlation_id
        e.src_recording_id = src_recording_id
        e.dst_recording_id = params.dst_recording_id
        e.stop_position = params.stop_position
        e.channel_tag_id = params.channel_tag_id
        e.subscription_tag_id = params.subscription_tag_id
        e.src_control_stream_id = src_control_stream_id
        e.file_io_max_length = params.file_io_max_length
        e.replication_session_id = params.replication_session_id
        e.put_src_control_channel(src_control_channel)
        e.put_live_destination(params.live_destination or "")
        e.put_replication_channel(params.replication_channel or "")
        e.put_encoded_credentials(bytes(params.encoded_credentials or b""))
        e.put_src_response_channel(params.src_response_channel or "")
        return self._offer(e)

    def stop_replication(self, replication_id: int, correlation_id: int, control_session_id: int) -> bool:
        """StopReplicationRequest."""
        return self._ids(codecs.StopReplicationRequestEncoder, correlation_id, control_session_id,
                         replication_id=replication_id)
