# SPDX-License-Identifier: Apache-2.0
"""Control sessions: the request decoder (Aeron ControlSessionAdapter), the response encoder (ControlResponseProxy)
and one client's session state machine (ControlSession).

Every message is decoded and encoded with the generated codecs (aeron._core.codecs.archive). A request that cannot
be decoded is dropped and counted when it names no session; when its session is known it is answered with an ERROR
response carrying the request's correlation id, so a client sees why.
"""
from __future__ import annotations

import enum
from collections import deque
from typing import TYPE_CHECKING, Any

from aeron._core.cnc import semantic_version_to_string
from aeron._core.codecs import archive as codecs
from aeron._core.codecs.archive import ControlResponseCode, MessageHeaderDecoder, RecordingSignal
from aeron.archive.configuration import NULL_VALUE, PROTOCOL_SEMANTIC_VERSION
from aeron.archive.errors import ArchiveErrorCode
from aeron.common.channel_uri import (CONTROL_MODE_RESPONSE, MTU_LENGTH_PARAM_NAME, RESPONSE_CORRELATION_ID_PARAM_NAME,
                                      SPARSE_PARAM_NAME, TERM_LENGTH_PARAM_NAME, ChannelUri)
from aeron.common.errors import AeronError, Category, MalformedMessageError, OutOfBoundsError, RegistrationError

if TYPE_CHECKING:
    from aeron.archive.archive_conductor import ArchiveConductor
    from aeron.client.image import Image

RESEND_INTERVAL_NS = 200_000_000        # CONNECTED/AUTHENTICATED/REJECTED re-sent (ControlSession.RESEND_INTERVAL_MS)


class RequestError(AeronError):
    """A request the archive refuses: answered with ERROR, ``code`` as relevant id and the message."""

    def __init__(self, message: str, code: int = ArchiveErrorCode.GENERIC) -> None:
        """``code`` is an ArchiveErrorCode."""
        super().__init__(message)
        self.code = int(code)

    @property
    def error_code(self) -> int:
        """The ArchiveErrorCode (the name the client's errors use)."""
        return self.code


class UnauthorisedActionWarning(AeronError):
    """Logged (the error log, the error counter) when a request is refused by the authorisation service."""

    category = Category.WARN


class ControlResponseProxy:
    """Encodes archive → client messages into one reusable buffer; each method returns the encoded bytes."""

    def __init__(self) -> None:
        """Preallocate the encoders and the buffer (responses are at most an error text or a descriptor long)."""
        self._buffer = bytearray(64 * 1024)
        self._response = codecs.ControlResponseEncoder()
        self._challenge = codecs.ChallengeEncoder()
        self._signal = codecs.RecordingSignalEventEncoder()
        self._sub_descriptor = codecs.RecordingSubscriptionDescriptorEncoder()
        self._ping = codecs.PingEncoder()
        self._descriptor = codecs.RecordingDescriptorEncoder()

    def _ensure(self, length: int) -> None:
        if length > len(self._buffer):
            self._buffer = bytearray(max(length, 2 * len(self._buffer)))

    def response(self, control_session_id: int, correlation_id: int, relevant_id: int, code: int,
                 error_message: str = "") -> bytes:
        """A ControlResponse (version = the archive protocol version)."""
        text = error_message.encode("ascii", "replace")
        self._ensure(48 + len(text))
        enc = self._response.wrap_and_apply_header(self._buffer, 0)
        enc.control_session_id = control_session_id
        enc.correlation_id = correlation_id
        enc.relevant_id = relevant_id
        enc.code = int(code)
        enc.version = PROTOCOL_SEMANTIC_VERSION
        enc.put_error_message(text)
        return bytes(self._buffer[:8 + enc.encoded_length])

    def challenge(self, control_session_id: int, correlation_id: int, encoded_challenge: bytes) -> bytes:
        """A Challenge (version not filled, as the Java archive)."""
        self._ensure(40 + len(encoded_challenge))
        enc = self._challenge.wrap_and_apply_header(self._buffer, 0)
        enc.control_session_id = control_session_id
        enc.correlation_id = correlation_id
        enc.version = 0
        enc.put_encoded_challenge(encoded_challenge)
        return bytes(self._buffer[:8 + enc.encoded_length])

    def signal(self, control_session_id: int, correlation_id: int, recording_id: int, subscription_id: int,
               position: int, signal: RecordingSignal) -> bytes:
        """A RecordingSignalEvent."""
        enc = self._signal.wrap_and_apply_header(self._buffer, 0)
        enc.control_session_id = control_session_id
        enc.correlation_id = correlation_id
        enc.recording_id = recording_id
        enc.subscription_id = subscription_id
        enc.position = position
        enc.signal = int(signal)
        return bytes(self._buffer[:8 + enc.encoded_length])

    def descriptor(self, control_session_id: int, correlation_id: int, desc: Any) -> bytes:
        """A RecordingDescriptor of a catalog entry with the listing request's control session and correlation ids."""
        channels = [text.encode("ascii", "replace") for text in
                    (desc.stripped_channel, desc.original_channel, desc.source_identity)]
        self._ensure(8 + 80 + 12 + sum(len(c) for c in channels))
        enc = self._descriptor.wrap_and_apply_header(self._buffer, 0)
        enc.control_session_id = control_session_id
        enc.correlation_id = correlation_id
        enc.recording_id = desc.recording_id
        enc.start_timestamp = desc.start_timestamp
        enc.stop_timestamp = desc.stop_timestamp
        enc.start_position = desc.start_position
        enc.stop_position = desc.stop_position
        enc.initial_term_id = desc.initial_term_id
        enc.segment_file_length = desc.segment_file_length
        enc.term_buffer_length = desc.term_buffer_length
        enc.mtu_length = desc.mtu_length
        enc.session_id = desc.session_id
        enc.stream_id = desc.stream_id
        enc.put_stripped_channel(channels[0])
        enc.put_original_channel(channels[1])
        enc.put_source_identity(channels[2])
        return bytes(self._buffer[:8 + enc.encoded_length])

    def subscription_descriptor(self, control_session_id: int, correlation_id: int, subscription_id: int,
                                stream_id: int, stripped_channel: str) -> bytes:
        """A RecordingSubscriptionDescriptor."""
        text = stripped_channel.encode("ascii", "replace")
        self._ensure(48 + len(text))
        enc = self._sub_descriptor.wrap_and_apply_header(self._buffer, 0)
        enc.control_session_id = control_session_id
        enc.correlation_id = correlation_id
        enc.subscription_id = subscription_id
        enc.stream_id = stream_id
        enc.put_stripped_channel(text)
        return bytes(self._buffer[:8 + enc.encoded_length])

    def ping(self, control_session_id: int) -> bytes:
        """A Ping."""
        enc = self._ping.wrap_and_apply_header(self._buffer, 0)
        enc.control_session_id = control_session_id
        return bytes(self._buffer[:8 + enc.encoded_length])


class SessionState(enum.Enum):
    """ControlSession.State."""

    INIT = 0
    CONNECTING = 1
    CONNECTED = 2
    CHALLENGED = 3
    AUTHENTICATED = 4
    ACTIVE = 5
    REJECTED = 6
    DONE = 7


def response_channel_for(channel: str, ctx: Any, request_image_correlation_id: int) -> str:
    """The archive's response publication channel: the client's channel with term length, sparse and MTU taken
    from it or from the archive's control defaults; ``control-mode=response`` adds the request image's
    correlation id."""
    uri = ChannelUri.parse(channel)
    if not uri.has(TERM_LENGTH_PARAM_NAME):
        uri.put(TERM_LENGTH_PARAM_NAME, str(ctx.control_term_buffer_length))
    if not uri.has(SPARSE_PARAM_NAME):
        uri.put(SPARSE_PARAM_NAME, "true" if ctx.control_term_buffer_sparse else "false")
    if not uri.has(MTU_LENGTH_PARAM_NAME):
        uri.put(MTU_LENGTH_PARAM_NAME, str(ctx.control_mtu_length))
    if uri.control_mode == CONTROL_MODE_RESPONSE:
        uri.put(RESPONSE_CORRELATION_ID_PARAM_NAME, str(request_image_correlation_id))
    return str(uri)


class _AuthProxy:
    """What an authenticator may do with a session in CONNECTED or CHALLENGED state."""

    __slots__ = ("_session",)

    def __init__(self, session: "ControlSession") -> None:
        self._session = session

    @property
    def session_id(self) -> int:
        """The control session id."""
        return self._session.control_session_id

    def authenticate(self, encoded_principal: bytes = b"") -> None:
        """Accept the session."""
        self._session.on_authenticated(encoded_principal)

    def challenge(self, encoded_challenge: bytes) -> None:
        """Send a Challenge; the session waits for a ChallengeResponse."""
        self._session.on_challenge(encoded_challenge)

    def reject(self) -> None:
        """Reject the session (AUTHENTICATION_REJECTED until it times out)."""
        self._session.on_reject()


class ControlSession:
    """One client's control session: its response publication, its queue of encoded responses, its state.

    Requests reach it through the adapter only from the image that connected it. Responses go through a queue
    flushed every duty cycle, so a back-pressured response publication delays but never drops an answer; a
    publication that stays unable to take one for the connect timeout ends the session.
    """

    def __init__(self, conductor: "ArchiveConductor", control_session_id: int, correlation_id: int,
                 image: "Image", response_channel: str, response_stream_id: int, client_version: int,
                 encoded_credentials: bytes, client_info: str, now_ns: int) -> None:
        """Made by the conductor for an AuthConnectRequest."""
        self.conductor = conductor
        self.control_session_id = control_session_id
        self.correlation_id = correlation_id
        self.image = image
        self.response_channel = response_channel
        self.response_stream_id = response_stream_id
        self.client_version = client_version
        self.encoded_credentials = encoded_credentials
        self.client_info = client_info
        self.state = SessionState.INIT
        self.publication: Any = None
        self._publication_registration_id = NULL_VALUE
        self._queue: deque[bytes] = deque()
        self._deadline_ns = now_ns + conductor.ctx.connect_timeout_ns
        self._resend_deadline_ns = now_ns
        self._ping_deadline_ns = now_ns
        self._encoded_challenge = b""
        self.listing: Any = None               # the one active listing
        self.reason = ""
        self.counter_registration_id = NULL_VALUE     # the control-session counter (type 113), value = session id
        self.counter: Any = None
        self.encoded_principal: bytes | None = None      # what the authenticator accepted; None until it did

    @property
    def is_done(self) -> bool:
        """True once the session ended."""
        return self.state is SessionState.DONE

    # -- sending ------------------------------------------------------------------------------------------

    def send(self, message: bytes) -> None:
        """Queue an encoded message for the client (flushed in order)."""
        if self.state is not SessionState.DONE:
            self._queue.append(message)

    def send_ok(self, correlation_id: int, relevant_id: int) -> None:
        """Queue ControlResponse OK."""
        self.send(self.conductor.proxy.response(self.control_session_id, correlation_id, relevant_id,
                                                ControlResponseCode.OK))

    def send_error(self, correlation_id: int, code: int, message: str) -> None:
        """Queue ControlResponse ERROR with ``code`` as relevant id."""
        self.send(self.conductor.proxy.response(self.control_session_id, correlation_id, int(code),
                                                ControlResponseCode.ERROR, message))

    def send_code(self, correlation_id: int, relevant_id: int, code: ControlResponseCode) -> None:
        """Queue a ControlResponse with another code (RECORDING_UNKNOWN, SUBSCRIPTION_UNKNOWN)."""
        self.send(self.conductor.proxy.response(self.control_session_id, correlation_id, relevant_id, code))

    def send_signal(self, correlation_id: int, recording_id: int, subscription_id: int, position: int,
                    signal: RecordingSignal) -> None:
        """Queue a RecordingSignalEvent."""
        self.send(self.conductor.proxy.signal(self.control_session_id, correlation_id, recording_id,
                                              subscription_id, position, signal))

    def _flush(self, now_ns: int) -> int:
        pub = self.publication
        work = 0
        while self._queue:
            message = self._queue[0]
            result = pub.offer(message)
            if result > 0:
                self._queue.popleft()
                work += 1
                self._deadline_ns = now_ns + self.conductor.ctx.connect_timeout_ns
            elif result == pub.CLOSED or result == pub.NOT_CONNECTED and self.state is SessionState.ACTIVE:
                self.abort(f"response publication {'closed' if result == pub.CLOSED else 'not connected'}")
                break
            else:
                if now_ns - self._deadline_ns > 0:
                    self.abort("response publication back pressured past the connect timeout")
                break
        if not self._queue:
            self._deadline_ns = now_ns + self.conductor.ctx.connect_timeout_ns
        return work

    # -- state machine -------------------------------------------------------------------------------------

    def do_work(self, now_ns: int) -> int:
        """One step of the session; returns the work done."""
        state = self.state
        if state is SessionState.ACTIVE and self.listing is None and not self._queue and self.counter is not None \
                and now_ns - self._ping_deadline_ns < 0:
            # the steady state, stepped every duty cycle of the archive: nothing queued, listed or due, so only the
            # ends of the session are looked at (as below, in the same order)
            if self.image.is_closed:
                self.abort("request image closed")
                return 1
            if not self.publication.is_connected:
                self.abort("response publication not connected")
                return 1
            return 0
        if state is SessionState.DONE:
            return 0
        work = 0
        if self.counter is None and self.counter_registration_id != NULL_VALUE:
            try:
                self.counter = self.conductor.aeron.get_counter(self.counter_registration_id)
            except RegistrationError:
                self.counter_registration_id = NULL_VALUE
            if self.counter is not None:
                self.counter.set_ordered(self.control_session_id)
        if state is SessionState.INIT:
            channel = response_channel_for(self.response_channel, self.conductor.ctx, self.image.correlation_id)
            self._publication_registration_id = self.conductor.aeron.async_add_exclusive_publication(
                channel, self.response_stream_id)
            self.state = SessionState.CONNECTING
            return 1
        if state is SessionState.CONNECTING:
            if self.publication is None:
                try:
                    self.publication = self.conductor.aeron.get_exclusive_publication(
                        self._publication_registration_id)
                except RegistrationError as ex:
                    self.abort(f"response publication refused: {ex}")
                    return 1
            if self.publication is not None and self.publication.is_connected:
                self.state = SessionState.CONNECTED
                self._resend_deadline_ns = now_ns
                work += 1
            elif now_ns - self._deadline_ns > 0:
                self.abort("response publication not connected within the connect timeout")
                return 1
            else:
                return 0
        if self.image.is_closed:
            self.abort("request image closed")
            return 1
        if self.state is SessionState.CONNECTED:
            if now_ns - self._resend_deadline_ns >= 0:
                self._resend_deadline_ns = now_ns + RESEND_INTERVAL_NS
                if (self.client_version >> 16) & 0xFF != 1:
                    self.send_error(self.correlation_id, self.control_session_id,
                                    f"invalid client version {semantic_version_to_string(self.client_version)}, archive is "
                                    f"{semantic_version_to_string(PROTOCOL_SEMANTIC_VERSION)}")
                    self.state = SessionState.REJECTED
                else:
                    self.conductor.ctx.authenticator.on_connected_session(_AuthProxy(self), now_ns // 1_000_000)
                work += 1
        elif self.state is SessionState.CHALLENGED:
            self.conductor.ctx.authenticator.on_challenged_session(_AuthProxy(self), now_ns // 1_000_000)
        elif self.state is SessionState.AUTHENTICATED:
            if now_ns - self._resend_deadline_ns >= 0:
                self._resend_deadline_ns = now_ns + RESEND_INTERVAL_NS
                if not self._queue:
                    self.send_ok(self.correlation_id, self.control_session_id)
                work += 1
        elif self.state is SessionState.REJECTED:
            if now_ns - self._resend_deadline_ns >= 0:
                self._resend_deadline_ns = now_ns + RESEND_INTERVAL_NS
                if not self._queue:
                    self.send_error(self.correlation_id, ArchiveErrorCode.AUTHENTICATION_REJECTED,
                                    "authentication rejected")
            if now_ns - self._deadline_ns > 0:
                self.abort("rejected")
                return 1
        elif self.state is SessionState.ACTIVE:
            if self.listing is not None:
                work += self.listing.do_work()
                if self.listing.is_done:
                    self.listing = None
            if now_ns - self._ping_deadline_ns >= 0:
                self._ping_deadline_ns = now_ns + self.conductor.ctx.session_liveness_check_interval_ns
                if not self._queue:
                    self.send(self.conductor.proxy.ping(self.control_session_id))
            if not self.publication.is_connected:
                self.abort("response publication not connected")
                return 1
        if self._queue and self.state is not SessionState.DONE:
            work += self._flush(now_ns)
        elif self.state in (SessionState.CONNECTED, SessionState.CHALLENGED) and now_ns - self._deadline_ns > 0:
            self.abort("not authenticated within the connect timeout")
        return work

    def on_authenticated(self, encoded_principal: bytes) -> None:
        """Authenticator accepted: answer OK (re-sent until the first request)."""
        if self.state in (SessionState.CONNECTED, SessionState.CHALLENGED):
            self.state = SessionState.AUTHENTICATED
            self.encoded_principal = bytes(encoded_principal)
            self._resend_deadline_ns = 0
            self.send_ok(self.correlation_id, self.control_session_id)
            self._resend_deadline_ns = self.conductor.nano_time + RESEND_INTERVAL_NS

    def on_challenge(self, encoded_challenge: bytes) -> None:
        """Authenticator asks for more: send a Challenge."""
        if self.state is SessionState.CONNECTED:
            self.state = SessionState.CHALLENGED
            self.send(self.conductor.proxy.challenge(self.control_session_id, self.correlation_id,
                                                     encoded_challenge))

    def on_reject(self) -> None:
        """Authenticator refused."""
        if self.state in (SessionState.CONNECTED, SessionState.CHALLENGED):
            self.state = SessionState.REJECTED
            self._resend_deadline_ns = 0

    def on_challenge_response(self, correlation_id: int, encoded_credentials: bytes) -> None:
        """ChallengeResponse: its correlation id becomes the session's."""
        if self.state is SessionState.CHALLENGED:
            self.correlation_id = correlation_id
            self.conductor.ctx.authenticator.on_challenge_response(
                self.control_session_id, encoded_credentials, self.conductor.nano_time // 1_000_000)

    def authorise(self, template_id: int, correlation_id: int) -> bool:
        """Ask the archive's authorisation service whether this session's principal may make a request of
        ``template_id``; a refusal is answered with UNAUTHORISED_ACTION and logged as a warning."""
        conductor = self.conductor
        if conductor.ctx.authorisation_service.is_authorised(codecs.SCHEMA_ID, template_id, None,
                                                             self.encoded_principal):
            return True
        conductor.log_error(UnauthorisedActionWarning(
            f"unauthorised archive action={template_id} controlSessionId={self.control_session_id} "
            f"source={self.image.source_identity}"))
        self.send_error(correlation_id, ArchiveErrorCode.UNAUTHORISED_ACTION, "unauthorised action")
        return False

    def activate_on_request(self) -> bool:
        """A request arrived: an AUTHENTICATED session becomes ACTIVE. False when the session cannot serve it."""
        if self.state is SessionState.AUTHENTICATED:
            self.state = SessionState.ACTIVE
        return self.state is SessionState.ACTIVE

    def abort(self, reason: str) -> None:
        """End the session (queued responses are dropped)."""
        if self.state is not SessionState.DONE:
            self.reason = reason
            self.state = SessionState.DONE
            self._queue.clear()
            self.listing = None
            self.conductor.on_session_closed(self)

    def close(self) -> None:
        """Release the response publication and the session counter."""
        pub = self.publication
        self.publication = None
        counter = self.counter
        self.counter = None
        if counter is None and self.counter_registration_id != NULL_VALUE:
            try:
                counter = self.conductor.aeron.get_counter(self.counter_registration_id)
            except AeronError:
                counter = None
        if counter is not None:
            try:
                counter.close()
            except AeronError:
                pass
        if pub is not None:
            try:
                pub.close()
            except AeronError:
                pass

    def __repr__(self) -> str:
        """Id, state and response channel."""
        return (f"<ControlSession {self.control_session_id} {self.state.name} "
                f"{self.response_channel!r}:{self.response_stream_id}>")


# -- request decoding ------------------------------------------------------------------------------------------

# requests the adapter serves, by template id: (decoder class, ArchiveConductor handler name)
_REQUESTS: dict[int, tuple[type, str]] = {
    codecs.CloseSessionRequestDecoder.TEMPLATE_ID: (codecs.CloseSessionRequestDecoder, "on_close_session"),
    codecs.StartRecordingRequestDecoder.TEMPLATE_ID: (codecs.StartRecordingRequestDecoder, "on_start_recording"),
    codecs.StartRecordingRequest2Decoder.TEMPLATE_ID: (codecs.StartRecordingRequest2Decoder, "on_start_recording"),
    codecs.StopRecordingRequestDecoder.TEMPLATE_ID: (codecs.StopRecordingRequestDecoder, "on_stop_recording"),
    codecs.StopRecordingSubscriptionRequestDecoder.TEMPLATE_ID: (
        codecs.StopRecordingSubscriptionRequestDecoder, "on_stop_recording_subscription"),
    codecs.StopRecordingByIdentityRequestDecoder.TEMPLATE_ID: (
        codecs.StopRecordingByIdentityRequestDecoder, "on_stop_recording_by_identity"),
    codecs.ReplayRequestDecoder.TEMPLATE_ID: (codecs.ReplayRequestDecoder, "on_replay"),
    codecs.BoundedReplayRequestDecoder.TEMPLATE_ID: (codecs.BoundedReplayRequestDecoder, "on_replay"),
    codecs.StopReplayRequestDecoder.TEMPLATE_ID: (codecs.StopReplayRequestDecoder, "on_stop_replay"),
    codecs.StopAllReplaysRequestDecoder.TEMPLATE_ID: (codecs.StopAllReplaysRequestDecoder, "on_stop_all_replays"),
    codecs.ListRecordingsRequestDecoder.TEMPLATE_ID: (codecs.ListRecordingsRequestDecoder, "on_list_recordings"),
    codecs.ListRecordingsForUriRequestDecoder.TEMPLATE_ID: (
        codecs.ListRecordingsForUriRequestDecoder, "on_list_recordings_for_uri"),
    codecs.ListRecordingRequestDecoder.TEMPLATE_ID: (codecs.ListRecordingRequestDecoder, "on_list_recording"),
    codecs.ListRecordingSubscriptionsRequestDecoder.TEMPLATE_ID: (
        codecs.ListRecordingSubscriptionsRequestDecoder, "on_list_recording_subscriptions"),
    codecs.RecordingPositionRequestDecoder.TEMPLATE_ID: (
        codecs.RecordingPositionRequestDecoder, "on_recording_position"),
    codecs.StopPositionRequestDecoder.TEMPLATE_ID: (codecs.StopPositionRequestDecoder, "on_stop_position"),
    codecs.StartPositionRequestDecoder.TEMPLATE_ID: (codecs.StartPositionRequestDecoder, "on_start_position"),
    codecs.MaxRecordedPositionRequestDecoder.TEMPLATE_ID: (
        codecs.MaxRecordedPositionRequestDecoder, "on_max_recorded_position"),
    codecs.FindLastMatchingRecordingRequestDecoder.TEMPLATE_ID: (
        codecs.FindLastMatchingRecordingRequestDecoder, "on_find_last_matching_recording"),
    codecs.ExtendRecordingRequestDecoder.TEMPLATE_ID: (codecs.ExtendRecordingRequestDecoder, "on_extend_recording"),
    codecs.ExtendRecordingRequest2Decoder.TEMPLATE_ID: (
        codecs.ExtendRecordingRequest2Decoder, "on_extend_recording"),
    codecs.TruncateRecordingRequestDecoder.TEMPLATE_ID: (
        codecs.TruncateRecordingRequestDecoder, "on_truncate_recording"),
    codecs.PurgeRecordingRequestDecoder.TEMPLATE_ID: (codecs.PurgeRecordingRequestDecoder, "on_purge_recording"),
    codecs.DetachSegmentsRequestDecoder.TEMPLATE_ID: (codecs.DetachSegmentsRequestDecoder, "on_detach_segments"),
    codecs.DeleteDetachedSegmentsRequestDecoder.TEMPLATE_ID: (
        codecs.DeleteDetachedSegmentsRequestDecoder, "on_delete_detached_segments"),
    codecs.PurgeSegmentsRequestDecoder.TEMPLATE_ID: (codecs.PurgeSegmentsRequestDecoder, "on_purge_segments"),
    codecs.AttachSegmentsRequestDecoder.TEMPLATE_ID: (codecs.AttachSegmentsRequestDecoder, "on_attach_segments"),
    codecs.MigrateSegmentsRequestDecoder.TEMPLATE_ID: (codecs.MigrateSegmentsRequestDecoder, "on_migrate_segments"),
    codecs.KeepAliveRequestDecoder.TEMPLATE_ID: (codecs.KeepAliveRequestDecoder, "on_keep_alive"),
    codecs.ArchiveIdRequestDecoder.TEMPLATE_ID: (codecs.ArchiveIdRequestDecoder, "on_archive_id"),
    codecs.ReplayTokenRequestDecoder.TEMPLATE_ID: (codecs.ReplayTokenRequestDecoder, "on_replay_token"),
    codecs.ChallengeResponseDecoder.TEMPLATE_ID: (codecs.ChallengeResponseDecoder, "on_challenge_response"),
    codecs.UpdateChannelRequestDecoder.TEMPLATE_ID: (codecs.UpdateChannelRequestDecoder, "on_update_channel"),
    codecs.ReplicateRequestDecoder.TEMPLATE_ID: (codecs.ReplicateRequestDecoder, "on_replicate"),
    codecs.TaggedReplicateRequestDecoder.TEMPLATE_ID: (codecs.TaggedReplicateRequestDecoder, "on_replicate"),
    codecs.ReplicateRequest2Decoder.TEMPLATE_ID: (codecs.ReplicateRequest2Decoder, "on_replicate"),
    codecs.StopReplicationRequestDecoder.TEMPLATE_ID: (codecs.StopReplicationRequestDecoder, "on_stop_replication"),
}


class ControlSessionAdapter:
    """Decodes control requests from the control subscriptions' images and hands them to the conductor."""

    def __init__(self, conductor: "ArchiveConductor") -> None:
        """One decoder per template, reused."""
        self.conductor = conductor
        self._header = MessageHeaderDecoder()
        self._auth_connect = codecs.AuthConnectRequestDecoder()
        self._prefix = codecs.KeepAliveRequestDecoder()
        self._decoders = {tid: (cls(), name) for tid, (cls, name) in _REQUESTS.items()}
        self.malformed_count = 0
        self.current_image: Any = None

    def on_fragment(self, buffer: Any, offset: int, length: int, header: Any) -> None:
        """Fragment handler (behind a FragmentAssembler): one whole request."""
        data = buffer.get_bytes(offset, length)
        try:
            hdr = self._header.wrap(data, 0)
            schema_id = hdr.schema_id
            template_id = hdr.template_id
        except MalformedMessageError:
            self.malformed_count += 1
            return
        if schema_id != codecs.SCHEMA_ID:
            self.malformed_count += 1
            self.conductor.log_error(MalformedMessageError(
                f"control request of schema {schema_id}, expected {codecs.SCHEMA_ID}", type_id=template_id))
            return
        image = self.current_image
        if template_id == codecs.AuthConnectRequestDecoder.TEMPLATE_ID:
            try:
                d = self._auth_connect.wrap_header(data, 0)
                self.conductor.on_auth_connect(image, d.correlation_id, d.response_stream_id, d.version,
                                               d.response_channel, d.encoded_credentials, d.client_info)
            except MalformedMessageError as ex:
                self.malformed_count += 1
                self.conductor.log_error(ex)
            return
        entry = self._decoders.get(template_id)
        if entry is None:
            self.malformed_count += 1
            self._answer_unknown(data, image, template_id)
            return
        decoder, handler_name = entry
        try:
            d = decoder.wrap_header(data, 0)
            control_session_id = d.control_session_id
        except MalformedMessageError as ex:
            self.malformed_count += 1
            self._answer_malformed(data, image, ex)
            return
        self.conductor.dispatch(image, control_session_id, handler_name, d, template_id)

    def _session_and_correlation(self, data: bytes, image: Any) -> tuple[ControlSession | None, int]:
        # the requests that name a session start with (controlSessionId, correlationId), KeepAliveRequest's whole
        # block: read them through its decoder to answer a request that does not decode as its own template
        try:
            prefix = self._prefix.wrap(data, 8, codecs.KeepAliveRequestDecoder.BLOCK_LENGTH, codecs.SCHEMA_VERSION,
                                       len(data))
            control_session_id, correlation_id = prefix.control_session_id, prefix.correlation_id
        except (MalformedMessageError, OutOfBoundsError):
            return None, NULL_VALUE
        return self.conductor.session_for(image, control_session_id), correlation_id

    def _answer_malformed(self, data: bytes, image: Any, ex: Exception) -> None:
        session, correlation_id = self._session_and_correlation(data, image)
        if session is not None and session.activate_on_request():
            session.send_error(correlation_id, ArchiveErrorCode.GENERIC, f"malformed request: {ex}")
        else:
            self.conductor.log_error(ex)

    def _answer_unknown(self, data: bytes, image: Any, template_id: int) -> None:
        session, correlation_id = self._session_and_correlation(data, image)
        if session is not None and session.activate_on_request():
            session.send_error(correlation_id, ArchiveErrorCode.GENERIC, f"unexpected template id {template_id}")
