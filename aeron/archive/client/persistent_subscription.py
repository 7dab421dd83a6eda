# SPDX-License-Identifier: Apache-2.0
"""PersistentSubscription: read a recorded live stream in order and without gaps from any start position (Aeron
1.51+ ``PersistentSubscription``): replay from the archive until the replay is close to the recording's end, then
join the live stream and switch over at the same position, falling back to a replay whenever the live image goes.

Not thread-safe; call :meth:`poll` in a duty cycle (it also connects to the archive, without blocking, and
reconnects after a loss). Messages reach the handler assembled, across the switch from replay to live;
:meth:`PersistentSubscription.controlled_poll` takes a controlled handler instead. The replay channel may be
session specific (the replay's session id is added to it), a UDP one on a wildcard port (``endpoint=host:0``) or a
response channel (``control-mode=response``: the replay comes back over a request publication of its own, with a
replay token of the archive session, as Aeron's does).
"""
from __future__ import annotations

import enum
import time
from collections.abc import Callable
from typing import Any

from aeron._core.codecs import archive as codecs
from aeron._core.fragment_assembler import (ControlledFragmentAssembler, ImageControlledFragmentAssembler,
                                            ImageFragmentAssembler)
from aeron._core.term_reader import ABORT, CONTINUE
from aeron.archive.client.aeron_archive import AeronArchive, connect_op, replay_image_session_id
from aeron.archive.client.aeron_archive import Context as ArchiveContext
from aeron.archive.client.archive_proxy import ArchiveProxy
from aeron.archive.client.handlers import ControlledFragmentHandler, FragmentHandler
from aeron.archive.client.pollers import descriptor_from
from aeron.archive.configuration import NULL_POSITION, NULL_VALUE, REPLAY_ALL_AND_FOLLOW
from aeron.archive.errors import ArchiveError, ArchiveErrorCode
from aeron.archive.recording_descriptor import RecordingDescriptor
from aeron.client.aeron import Aeron
from aeron.client.context import Context as AeronContext
from aeron.common.channel_uri import (CONTROL_MODE_RESPONSE, ENDPOINT_PARAM_NAME, INITIAL_TERM_ID_PARAM_NAME,
                                      MDC_CONTROL_MODE_PARAM_NAME, REJOIN_PARAM_NAME,
                                      RESPONSE_CORRELATION_ID_PARAM_NAME, SESSION_ID_PARAM_NAME,
                                      SPIES_SIMULATE_CONNECTION_PARAM_NAME, TERM_ID_PARAM_NAME, TERM_LENGTH_PARAM_NAME,
                                      TERM_OFFSET_PARAM_NAME, ChannelUri)
from aeron.common.constants import INT64_MIN
from aeron.common.errors import ConfigurationError, ErrorCode, IllegalStateError, RegistrationError

FROM_START = NULL_POSITION          # replay the whole recording first
FROM_LIVE = -2                      # join the live stream wherever it is; no history
PERSISTENT_SUBSCRIPTION_STATE_TYPE_ID = 114
PERSISTENT_SUBSCRIPTION_JOIN_DIFFERENCE_TYPE_ID = 115
PERSISTENT_SUBSCRIPTION_LIVE_LEFT_COUNT_TYPE_ID = 116
PERSISTENT_SUBSCRIPTION_LIVE_JOINED_COUNT_TYPE_ID = 117


class PersistentSubscriptionError(ArchiveError):
    """A terminal failure of a PersistentSubscription; ``reason`` names it."""

    class Reason(enum.Enum):
        """Why it failed (Aeron ``PersistentSubscriptionException.Reason``)."""

        GENERIC = "GENERIC"
        RECORDING_NOT_FOUND = "RECORDING_NOT_FOUND"
        STREAM_ID_MISMATCH = "STREAM_ID_MISMATCH"
        INVALID_START_POSITION = "INVALID_START_POSITION"

    def __init__(self, reason: "PersistentSubscriptionError.Reason", message: str) -> None:
        """``reason`` and a message."""
        self.reason = reason
        super().__init__(f"{reason.name}: {message}")


class State(enum.IntEnum):
    """The states, numbered as Aeron's (the value of the state counter)."""

    AWAIT_ARCHIVE_CONNECTION = 0
    SEND_LIST_RECORDING_REQUEST = 1
    AWAIT_LIST_RECORDING_RESPONSE = 2
    SEND_REPLAY_REQUEST = 3
    AWAIT_REPLAY_RESPONSE = 4
    ADD_REPLAY_SUBSCRIPTION = 5
    AWAIT_REPLAY_SUBSCRIPTION = 6
    AWAIT_REPLAY_CHANNEL_ENDPOINT = 7
    ADD_REQUEST_PUBLICATION = 8
    AWAIT_REQUEST_PUBLICATION = 9
    SEND_REPLAY_TOKEN_REQUEST = 10
    AWAIT_REPLAY_TOKEN = 11
    REPLAY = 12
    ATTEMPT_SWITCH = 13
    ADD_LIVE_SUBSCRIPTION = 14
    AWAIT_LIVE = 15
    LIVE = 16
    FAILED = 17


class PersistentSubscriptionListener:
    """Callbacks of a PersistentSubscription (override what you need)."""

    def on_live_joined(self) -> None:
        """The subscription now reads the live stream."""

    def on_live_left(self) -> None:
        """The live image went; the subscription falls back to a replay."""

    def on_error(self, error: BaseException) -> None:
        """A recoverable error, or the terminal one (then :attr:`PersistentSubscription.failure_reason`)."""


class Context:
    """Settings of a :class:`PersistentSubscription`: ``recording_id``, ``start_position`` (a position,
    FROM_START or FROM_LIVE), ``live_channel``/``live_stream_id``, ``replay_channel``/``replay_stream_id``,
    ``archive_context`` (an :class:`aeron.archive.Context` naming the archive; not connected yet), ``listener``,
    ``aeron`` (else one is connected to ``aeron_dir`` and closed with it) and the four counters (allocated when
    not given)."""

    def __init__(self, *, recording_id: int = NULL_VALUE, start_position: int = FROM_LIVE,
                 live_channel: str | None = None, live_stream_id: int = NULL_VALUE, replay_channel: str | None = None,
                 replay_stream_id: int = NULL_VALUE, archive_context: ArchiveContext | None = None,
                 listener: PersistentSubscriptionListener | None = None, aeron: Aeron | None = None,
                 aeron_dir: str | None = None, owns_aeron_client: bool = False, state_counter: Any = None,
                 join_difference_counter: Any = None, live_left_counter: Any = None,
                 live_joined_counter: Any = None) -> None:
        """Set by keyword (each a named parameter, so a type checker refuses a misspelt one); :meth:`conclude`
        checks them."""
        self.recording_id = recording_id
        self.start_position = start_position
        self.live_channel = live_channel
        self.live_stream_id = live_stream_id
        self.replay_channel = replay_channel
        self.replay_stream_id = replay_stream_id
        self.archive_context = archive_context
        self.listener = listener if listener is not None else PersistentSubscriptionListener()
        self.aeron = aeron
        self.aeron_dir = aeron_dir
        self.owns_aeron_client = owns_aeron_client
        self.state_counter = state_counter
        self.join_difference_counter = join_difference_counter
        self.live_left_counter = live_left_counter
        self.live_joined_counter = live_joined_counter
        self.is_concluded = False

    def conclude(self) -> "Context":
        """Validate (ConfigurationError), add ``rejoin=false`` to the replay channel, connect the Aeron client and
        allocate the counters when not given."""
        if self.is_concluded:
            raise IllegalStateError("PersistentSubscription.Context already concluded")
        for name in ("recording_id", "live_stream_id", "replay_stream_id"):
            if getattr(self, name) == NULL_VALUE:
                raise ConfigurationError(f"{name} must be set")
        if not self.live_channel:
            raise ConfigurationError("live_channel must be set")
        if not self.replay_channel:
            raise ConfigurationError("replay_channel must be set")
        if self.archive_context is None:
            raise ConfigurationError("archive_context must be set")
        if self.recording_id < 0:
            raise ConfigurationError(f"invalid recording_id {self.recording_id}")
        if self.start_position < FROM_LIVE:
            raise ConfigurationError(f"invalid start_position {self.start_position}")
        uri = ChannelUri.parse(self.replay_channel)
        uri.put(REJOIN_PARAM_NAME, "false")
        self.replay_channel = str(uri)
        self.is_concluded = True
        if self.aeron is None:
            self.aeron = Aeron.connect(AeronContext(self.aeron_dir, client_name="PersistentSubscription"))
            self.owns_aeron_client = True
        if self.archive_context.aeron is None:
            self.archive_context.aeron = self.aeron
        label = f"{self.replay_stream_id} {self.replay_channel} {self.live_stream_id} {self.live_channel}"
        for attr, type_id, name in (
                ("state_counter", PERSISTENT_SUBSCRIPTION_STATE_TYPE_ID, "Persistent Subscription State"),
                ("join_difference_counter", PERSISTENT_SUBSCRIPTION_JOIN_DIFFERENCE_TYPE_ID,
                 "Persistent Subscription Join Difference"),
                ("live_left_counter", PERSISTENT_SUBSCRIPTION_LIVE_LEFT_COUNT_TYPE_ID,
                 "Persistent Subscription Live Left Count"),
                ("live_joined_counter", PERSISTENT_SUBSCRIPTION_LIVE_JOINED_COUNT_TYPE_ID,
                 "Persistent Subscription Live Joined Count")):
            if getattr(self, attr) is None:
                setattr(self, attr, self.aeron.add_counter(type_id, f"{name}: {label}"[:380]))
        return self

    def close(self) -> None:
        """Close the Aeron client when owned, else the counters."""
        if self.owns_aeron_client and self.aeron is not None:
            self.aeron.close()
        elif self.aeron is not None and not self.aeron.is_closed:
            for counter in (self.state_counter, self.join_difference_counter, self.live_left_counter,
                            self.live_joined_counter):
                if counter is not None:
                    counter.close()


class _Op:
    """One outstanding request: its correlation id, deadline and, once answered, its response."""

    __slots__ = ("correlation_id", "deadline_ns", "relevant_id", "code", "error_message", "received")

    def __init__(self) -> None:
        self.correlation_id = NULL_VALUE
        self.deadline_ns = 0
        self.received = False
        self.relevant_id = NULL_VALUE
        self.code: int | None = None
        self.error_message = ""

    def init(self, correlation_id: int, deadline_ns: int) -> None:
        self.correlation_id = correlation_id
        self.deadline_ns = deadline_ns
        self.received = False

    def on_response(self, relevant_id: int, code: int, error_message: str) -> None:
        self.relevant_id = relevant_id
        self.code = code
        self.error_message = error_message
        self.received = True


class _ListRecording(_Op):
    __slots__ = ("remaining", "descriptor")

    def __init__(self) -> None:
        super().__init__()
        self.remaining = 0
        self.descriptor: RecordingDescriptor | None = None


class _MaxRecordedPosition(_Op):
    """Asks for the recording's max position until the replay is within ``threshold`` of it."""

    __slots__ = ("phase", "max_recorded_position", "threshold", "owner")

    def __init__(self, owner: "PersistentSubscription") -> None:
        super().__init__()
        self.owner = owner
        self.phase = "REQUEST"
        self.max_recorded_position = NULL_POSITION
        self.threshold = 0

    def reset(self, threshold: int) -> None:
        self.threshold = threshold
        self.phase = "REQUEST"

    def is_caught_up(self, replayed_position: int) -> bool:
        owner = self.owner
        if self.phase == "REQUEST":
            correlation_id = owner._aeron.next_correlation_id()
            if owner._send(lambda p, cs: p.get_max_recorded_position(owner.recording_id, correlation_id, cs)):
                self.init(correlation_id, time.monotonic_ns() + owner._message_timeout_ns)
                self.phase = "AWAIT"
            return False
        if self.phase == "AWAIT":
            if self.received:
                if self.code == codecs.ControlResponseCode.OK:
                    self.max_recorded_position = self.relevant_id
                    if replayed_position >= self.max_recorded_position - self.threshold:
                        return True
                    self.phase = "RECHECK"
                else:
                    owner._set_state(State.FAILED)
                    owner._on_terminal_error(ArchiveError(
                        f"get max position request failed code={self.code} relevantId={self.relevant_id} "
                        f"errorMessage='{self.error_message}'"))
            elif self.deadline_ns - time.monotonic_ns() < 0:
                self.phase = "REQUEST"
            return False
        if replayed_position >= self.max_recorded_position:
            self.phase = "REQUEST"
        return False


class PersistentSubscription:
    """See the module docstring. Make one with :meth:`create` (or the constructor) and call :meth:`poll`."""

    def __init__(self, ctx: Context) -> None:
        """Conclude ``ctx`` and start in AWAIT_ARCHIVE_CONNECTION."""
        ctx.conclude()
        assert ctx.aeron is not None and ctx.archive_context is not None
        assert ctx.live_channel is not None and ctx.replay_channel is not None
        self.ctx = ctx
        self.recording_id = ctx.recording_id
        self.live_channel = ctx.live_channel
        self.live_stream_id = ctx.live_stream_id
        self.replay_channel = ctx.replay_channel
        self._replay_uri = ChannelUri.parse(ctx.replay_channel)
        endpoint = self._replay_uri.get(ENDPOINT_PARAM_NAME) if self._replay_uri.is_udp else None
        # the three kinds of replay channel, as Aeron's ReplayChannelType
        self._response_channel = self._replay_uri.get(MDC_CONTROL_MODE_PARAM_NAME) == CONTROL_MODE_RESPONSE
        self._dynamic_port = not self._response_channel and endpoint is not None and endpoint.endswith(":0")
        self.replay_stream_id = ctx.replay_stream_id
        self.listener = ctx.listener
        self._aeron = ctx.aeron
        self._archive_ctx = ctx.archive_context
        self._message_timeout_ns = ctx.archive_context.message_timeout_ns
        self.position = ctx.start_position
        self.failure_reason: BaseException | None = None
        self.join_difference = INT64_MIN
        self._archive: AeronArchive | None = None
        self._connecting: Any = None
        self._list_recording = _ListRecording()
        self._max_recorded_position = _MaxRecordedPosition(self)
        self._replay_request = _Op()
        self._replay_token_request = _Op()
        self._replay_token = NULL_VALUE
        self._request_publication_id = NULL_VALUE
        self._request_publication: Any = None
        self._request_proxy: ArchiveProxy | None = None
        self._request_publication_deadline_ns = 0
        self._replay_session_id = NULL_VALUE
        self._replay_subscription_id = NULL_VALUE
        self._replay_subscription: Any = None
        self._replay_image: Any = None
        self._replay_image_deadline_ns = 0
        self._live_subscription_id = NULL_VALUE
        self._live_subscription: Any = None
        self._live_image: Any = None
        self._live_image_deadline_ns = 0
        self._live_image_deadline_breached = False
        self._next_live_position = NULL_VALUE
        self._last_observed_live_position = NULL_VALUE
        self._handler: FragmentHandler | None = None
        self._controlled_handler: ControlledFragmentHandler | None = None
        self._assembler = ImageFragmentAssembler(self._on_fragment)
        self._controlled_assembler = ImageControlledFragmentAssembler(self._on_fragment_controlled)
        self._response_assembler = ControlledFragmentAssembler(self._on_response)
        self._set_join_difference(INT64_MIN)
        self.state = State.AWAIT_ARCHIVE_CONNECTION
        self._set_counter(ctx.state_counter, int(self.state))

    @classmethod
    def create(cls, ctx: Context) -> "PersistentSubscription":
        """A new PersistentSubscription for ``ctx``."""
        return cls(ctx)

    # -- public face -------------------------------------------------------------------------------------------------
    @property
    def is_live(self) -> bool:
        """True while reading the live stream."""
        return self.state is State.LIVE

    @property
    def is_replaying(self) -> bool:
        """True while reading a replay (or switching from it)."""
        return self.state in (State.REPLAY, State.ATTEMPT_SWITCH)

    @property
    def has_failed(self) -> bool:
        """True after a terminal error (:attr:`failure_reason`)."""
        return self.state is State.FAILED

    def poll(self, fragment_handler: FragmentHandler, fragment_limit: int) -> int:
        """Do the work of the current state and deliver up to ``fragment_limit`` fragments, assembled into
        messages, to ``fragment_handler(buffer, offset, length, header)``; returns the work done."""
        self._handler = fragment_handler
        try:
            return self._do_work(fragment_limit, False)
        finally:
            self._handler = None

    def controlled_poll(self, fragment_handler: ControlledFragmentHandler, fragment_limit: int) -> int:
        """As :meth:`poll`, with a controlled handler: ``fragment_handler(buffer, offset, length, header)`` returns
        a ControlledPollAction for the whole assembled message (ABORT: deliver it again at the next poll; BREAK:
        stop this poll after it; COMMIT and CONTINUE: go on), in the replay, while switching and live alike."""
        self._controlled_handler = fragment_handler
        try:
            return self._do_work(fragment_limit, True)
        finally:
            self._controlled_handler = None

    def close(self) -> None:
        """Stop the replay, close the subscriptions, the archive session and (when owned) the Aeron client."""
        if not self._aeron.is_closed:
            self._clean_up_replay()
            self._clean_up_request_publication()
            for subscription in (self._live_subscription, self._replay_subscription):
                if subscription is not None:
                    subscription.close()
            self._live_subscription = self._replay_subscription = None
        self._close_archive()
        self.ctx.close()

    def __enter__(self) -> "PersistentSubscription":
        """Return it; the ``with`` block closes it."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close it."""
        self.close()

    # -- the archive link (non-blocking) -------------------------------------------------------------------------------
    def _close_archive(self) -> None:
        archive, self._archive = self._archive, None
        self._connecting = None
        if archive is not None:
            try:
                archive.close()
            except Exception as exc:        # noqa: BLE001 - a lost archive is expected to fail closing
                self.listener.on_error(exc)

    def _poll_archive(self) -> int:
        if self.state is State.FAILED:
            return 0
        if self._archive is None:
            if self._connecting is None:
                ctx = self._archive_ctx.__class__(environ={})
                for attr in ("control_request_channel", "control_request_stream_id", "control_response_channel",
                             "control_response_stream_id", "message_timeout_ns", "message_retry_attempts",
                             "control_term_buffer_length", "control_term_buffer_sparse", "control_mtu_length",
                             "client_name", "credentials_supplier"):
                    setattr(ctx, attr, getattr(self._archive_ctx, attr))
                ctx.aeron = self._aeron
                self._connecting = connect_op(ctx.conclude() if not ctx.is_concluded else ctx)
            try:
                next(self._connecting)
                return 0
            except StopIteration as done:
                self._archive = done.value
                self._connecting = None
                return 1
            except Exception as exc:        # noqa: BLE001 - retried: the archive may come back
                self._connecting = None
                self.listener.on_error(exc)
                return 0
        archive = self._archive
        subscription = archive.control_response_poller.subscription
        if not subscription.is_connected:
            self._on_archive_disconnected()
            return 1
        return subscription.controlled_poll(self._response_assembler, 10)

    def _on_response(self, buffer: Any, offset: int, length: int, header: Any) -> int:
        archive = self._archive
        if archive is None:
            return ABORT
        hdr = codecs.MessageHeaderDecoder().wrap(buffer, offset)
        template_id = hdr.template_id
        if hdr.schema_id != codecs.SCHEMA_ID:
            return CONTINUE
        body = offset + codecs.MESSAGE_HEADER_LENGTH
        if template_id == codecs.ControlResponseDecoder.TEMPLATE_ID:
            d = codecs.ControlResponseDecoder().wrap(buffer, body, hdr.block_length, hdr.version, offset + length)
            if d.control_session_id == archive.control_session_id:
                correlation_id = d.correlation_id
                for op in (self._max_recorded_position, self._list_recording, self._replay_request,
                           self._replay_token_request):
                    if op.correlation_id == correlation_id:
                        op.on_response(d.relevant_id, d.code, d.error_message)
                        break
        elif template_id == codecs.RecordingDescriptorDecoder.TEMPLATE_ID:
            d = codecs.RecordingDescriptorDecoder().wrap(buffer, body, hdr.block_length, hdr.version,
                                                         offset + length)
            op = self._list_recording
            if d.control_session_id == archive.control_session_id and d.correlation_id == op.correlation_id:
                op.descriptor = descriptor_from(d)
                op.remaining -= 1
                if op.remaining == 0:
                    op.received = True
        return CONTINUE

    def _send(self, request: Callable[[Any, int], bool]) -> bool:
        archive = self._archive
        if archive is None:
            return False
        try:
            return request(archive.archive_proxy, archive.control_session_id)
        except ArchiveError as exc:
            self.listener.on_error(exc)
            return False

    def _on_archive_disconnected(self) -> None:
        self._close_archive()
        if self.state in (State.AWAIT_ARCHIVE_CONNECTION, State.ATTEMPT_SWITCH, State.LIVE, State.FAILED):
            return
        if self._replay_image is not None:
            self.position = self._replay_image.position
        self._clean_up_live_subscription()
        self._replay_session_id = NULL_VALUE        # the archive went: nothing to stop
        self._clean_up_request_publication()
        self._clean_up_replay_subscription()
        self._set_state(State.AWAIT_ARCHIVE_CONNECTION)

    # -- the state machine -------------------------------------------------------------------------------------------
    def _do_work(self, fragment_limit: int, controlled: bool) -> int:
        work = 0
        invoker = self._aeron.conductor_agent_invoker
        if invoker is not None:
            work += invoker.invoke()
        work += self._poll_archive()
        state = self.state
        if state is State.AWAIT_ARCHIVE_CONNECTION:
            work += self._await_archive_connection()
        elif state is State.SEND_LIST_RECORDING_REQUEST:
            work += self._send_list_recording_request()
        elif state is State.AWAIT_LIST_RECORDING_RESPONSE:
            work += self._await_list_recording_response()
        elif state is State.SEND_REPLAY_REQUEST:
            work += self._send_replay_request()
        elif state is State.AWAIT_REPLAY_RESPONSE:
            work += self._await_replay_response()
        elif state is State.ADD_REPLAY_SUBSCRIPTION:
            work += self._add_replay_subscription()
        elif state is State.AWAIT_REPLAY_SUBSCRIPTION:
            work += self._await_replay_subscription()
        elif state is State.AWAIT_REPLAY_CHANNEL_ENDPOINT:
            work += self._await_replay_channel_endpoint()
        elif state is State.ADD_REQUEST_PUBLICATION:
            work += self._add_request_publication()
        elif state is State.AWAIT_REQUEST_PUBLICATION:
            work += self._await_request_publication()
        elif state is State.SEND_REPLAY_TOKEN_REQUEST:
            work += self._send_replay_token_request()
        elif state is State.AWAIT_REPLAY_TOKEN:
            work += self._await_replay_token()
        elif state is State.REPLAY:
            work += self._replay(fragment_limit, controlled)
        elif state is State.ATTEMPT_SWITCH:
            work += self._attempt_switch(fragment_limit, controlled)
        elif state is State.ADD_LIVE_SUBSCRIPTION:
            work += self._add_live_subscription()
        elif state is State.AWAIT_LIVE:
            work += self._await_live()
        elif state is State.LIVE:
            work += self._live(fragment_limit, controlled)
        return work

    def _set_state(self, state: State) -> None:
        if state is not self.state:
            self.state = state
            self._set_counter(self.ctx.state_counter, int(state))
            if state is State.FAILED:
                self._close_archive()

    @staticmethod
    def _set_counter(counter: Any, value: int) -> None:
        if counter is not None and not counter.is_closed:
            counter.set_ordered(value)

    def _set_join_difference(self, value: int) -> None:
        self.join_difference = value
        self._set_counter(self.ctx.join_difference_counter, value)

    def _on_terminal_error(self, error: BaseException) -> None:
        self.failure_reason = error
        self.listener.on_error(error)

    def _await_archive_connection(self) -> int:
        if self._archive is None:
            return 0
        self._set_state(State.SEND_LIST_RECORDING_REQUEST)
        return 1

    def _send_list_recording_request(self) -> int:
        correlation_id = self._aeron.next_correlation_id()
        op = self._list_recording
        if not self._send(lambda p, cs: p.list_recording(self.recording_id, correlation_id, cs)):
            if self._archive is not None:
                return 0
            self._set_state(State.AWAIT_ARCHIVE_CONNECTION)
            return 1
        op.init(correlation_id, time.monotonic_ns() + self._message_timeout_ns)
        op.remaining = 1
        op.descriptor = None
        self._set_state(State.AWAIT_LIST_RECORDING_RESPONSE)
        return 1

    def _await_list_recording_response(self) -> int:
        op = self._list_recording
        if not op.received:
            if time.monotonic_ns() - op.deadline_ns >= 0:
                self._set_state(State.SEND_LIST_RECORDING_REQUEST if self._archive is not None
                                else State.AWAIT_ARCHIVE_CONNECTION)
                return 1
            return 0
        error = self._validate_descriptor()
        if error is not None:
            self._set_state(State.FAILED)
            self._on_terminal_error(error)
            return 1
        d = op.descriptor
        assert d is not None
        if self.position == FROM_LIVE or (d.stop_position != NULL_POSITION and self.position == d.stop_position):
            self._set_state(State.ADD_LIVE_SUBSCRIPTION)
        else:
            self._set_up_replay()
        return 1

    def _validate_descriptor(self) -> PersistentSubscriptionError | None:
        op = self._list_recording
        Reason = PersistentSubscriptionError.Reason
        d = op.descriptor
        if op.remaining != 0 or d is None:
            return PersistentSubscriptionError(Reason.RECORDING_NOT_FOUND, f"unknown recording id: {self.recording_id}")
        if d.stream_id != self.live_stream_id:
            return PersistentSubscriptionError(
                Reason.STREAM_ID_MISMATCH, f"Requested live stream with ID: {self.live_stream_id} does not match "
                f"stream ID: {d.stream_id} for recording: {self.recording_id}")
        if d.stop_position != NULL_POSITION and self._last_observed_live_position > d.stop_position:
            return PersistentSubscriptionError(
                Reason.INVALID_START_POSITION, f"recording {self.recording_id} stopped at position="
                f"{d.stop_position} which is earlier than last observed live position="
                f"{self._last_observed_live_position}")
        if self.position >= 0:
            if self.position < d.start_position:
                return PersistentSubscriptionError(
                    Reason.INVALID_START_POSITION, f"requested replay start position={self.position} is less than "
                    f"recording start position={d.start_position} for recording {self.recording_id}")
            if d.stop_position != NULL_POSITION and self.position > d.stop_position:
                return PersistentSubscriptionError(
                    Reason.INVALID_START_POSITION, f"requested replay start position={self.position} must be less "
                    f"than the limit position={d.stop_position} for recording {self.recording_id}")
        elif self.position == FROM_START:
            self.position = d.start_position
        return None

    def _set_up_replay(self) -> None:
        self._reset_replay_catchup_state()
        self._set_state(State.ADD_REPLAY_SUBSCRIPTION if self._dynamic_port or self._response_channel
                        else State.SEND_REPLAY_REQUEST)

    def _refresh_recording_descriptor(self) -> None:
        self._reset_replay_catchup_state()
        self._set_state(State.SEND_LIST_RECORDING_REQUEST)

    def _reset_replay_catchup_state(self) -> None:
        self._set_join_difference(INT64_MIN)
        d = self._list_recording.descriptor
        self._max_recorded_position.reset((d.term_buffer_length >> 2) if d is not None else 0)
        self._next_live_position = NULL_VALUE

    def _clean_up_replay(self) -> None:
        if self._replay_session_id != NULL_VALUE:
            session_id = self._replay_session_id
            correlation_id = self._aeron.next_correlation_id()
            self._send(lambda p, cs: p.stop_replay(session_id, correlation_id, cs))
            self._replay_session_id = NULL_VALUE

    def _clean_up_request_publication(self) -> None:
        if self._request_publication is not None:
            self._request_publication.close()
        elif self._request_publication_id != NULL_VALUE:
            self._aeron.async_remove_publication(self._request_publication_id)     # the driver has not answered
        self._request_publication_id = NULL_VALUE
        self._request_publication = None
        self._request_proxy = None

    def _clean_up_replay_subscription(self) -> None:
        if self._replay_subscription is not None:
            self._replay_subscription.close()
        elif self._replay_subscription_id != NULL_VALUE:
            self._aeron.async_remove_subscription(self._replay_subscription_id)
        self._replay_subscription_id = NULL_VALUE
        self._replay_subscription = None
        self._replay_image = None

    def _clean_up_live_subscription(self) -> None:
        if self._live_subscription is not None:
            self._live_subscription.close()
        elif self._live_subscription_id != NULL_VALUE:
            self._aeron.async_remove_subscription(self._live_subscription_id)
        self._live_subscription_id = NULL_VALUE
        self._live_subscription = None
        self._live_image = None

    def _send_replay_request(self) -> int:
        correlation_id = self._aeron.next_correlation_id()
        channel = str(self._replay_uri) if self._dynamic_port or self._response_channel else self.replay_channel
        position = self.position
        if self._response_channel:
            sent = self._send_on_request_publication(lambda p, cs: p.replay(
                self.recording_id, position, REPLAY_ALL_AND_FOLLOW, channel, self.replay_stream_id, correlation_id,
                cs, replay_token=self._replay_token))
        else:
            sent = self._send(lambda p, cs: p.replay(self.recording_id, position, REPLAY_ALL_AND_FOLLOW, channel,
                                                     self.replay_stream_id, correlation_id, cs))
        if not sent:
            if self._archive is not None:
                if not self._response_channel or time.monotonic_ns() - self._request_publication_deadline_ns < 0:
                    return 0
                # the request publication never connected: start the replay set-up again
                self._clean_up_request_publication()
                self._clean_up_replay_subscription()
                self._set_up_replay()
                return 1
            self._clean_up_request_publication()
            self._clean_up_replay_subscription()
            self._set_state(State.AWAIT_ARCHIVE_CONNECTION)
            return 1
        self._replay_request.init(correlation_id, time.monotonic_ns() + self._message_timeout_ns)
        self._set_state(State.AWAIT_REPLAY_RESPONSE)
        return 1

    def _restart_replay_set_up(self) -> None:
        """A request went unanswered: let go of its publication and subscription and set the replay up again
        (on the archive connection it has, or after connecting again)."""
        self._clean_up_request_publication()
        self._clean_up_replay_subscription()
        if self._archive is not None:
            self._set_up_replay()
        else:
            self._set_state(State.AWAIT_ARCHIVE_CONNECTION)

    def _fail_replay_set_up(self) -> None:
        self._set_state(State.FAILED)
        self._clean_up_request_publication()
        self._clean_up_replay_subscription()

    def _await_replay_response(self) -> int:
        op = self._replay_request
        if not op.received:
            if time.monotonic_ns() - op.deadline_ns >= 0:
                self._restart_replay_set_up()
                return 1
            return 0
        if op.code != codecs.ControlResponseCode.OK:
            self._fail_replay_set_up()
            Reason = PersistentSubscriptionError.Reason
            reason = {ArchiveErrorCode.INVALID_POSITION: Reason.INVALID_START_POSITION,
                      ArchiveErrorCode.UNKNOWN_RECORDING: Reason.RECORDING_NOT_FOUND}.get(op.relevant_id,
                                                                                           Reason.GENERIC)
            self._on_terminal_error(PersistentSubscriptionError(reason, f"replay request failed: {op.error_message}"))
            return 1
        self._replay_session_id = op.relevant_id
        self._replay_image_deadline_ns = time.monotonic_ns() + self._message_timeout_ns
        if self._response_channel:
            self._clean_up_request_publication()        # the replay is under way: its request connection is done
            self._set_state(State.REPLAY)
        elif self._dynamic_port:
            self._set_state(State.REPLAY)
        else:
            self._replay_uri.put(SESSION_ID_PARAM_NAME, str(replay_image_session_id(self._replay_session_id)))
            self._set_state(State.ADD_REPLAY_SUBSCRIPTION)
        return 1

    def _add_replay_subscription(self) -> int:
        channel = self.replay_channel if self._dynamic_port or self._response_channel else str(self._replay_uri)
        self._replay_subscription_id = self._aeron.async_add_subscription(channel, self.replay_stream_id)
        self._set_state(State.AWAIT_REPLAY_SUBSCRIPTION)
        return 1

    def _await_replay_subscription(self) -> int:
        try:
            subscription = self._aeron.get_subscription(self._replay_subscription_id)
        except Exception as exc:        # noqa: BLE001 - a refused registration is terminal
            self._replay_subscription_id = NULL_VALUE
            self._clean_up_replay()
            self._set_state(State.FAILED)
            self._on_terminal_error(exc)
            return 1
        if subscription is None:
            return 0
        self._replay_subscription_id = NULL_VALUE
        self._replay_subscription = subscription
        if self._response_channel:
            self._set_state(State.ADD_REQUEST_PUBLICATION)
        elif self._dynamic_port:
            self._set_state(State.AWAIT_REPLAY_CHANNEL_ENDPOINT)
        else:
            self._replay_image_deadline_ns = time.monotonic_ns() + self._message_timeout_ns
            self._set_state(State.REPLAY)
        return 1

    def _add_request_publication(self) -> int:
        # a request publication of its own whose response-correlation-id names the replay subscription: the archive
        # sends the replay over that subscription's response channel (as Aeron's PersistentSubscription does)
        archive_ctx = self._archive_ctx
        assert archive_ctx.control_request_channel is not None
        uri = ChannelUri.parse(archive_ctx.control_request_channel)
        for key in (SESSION_ID_PARAM_NAME, TERM_ID_PARAM_NAME, INITIAL_TERM_ID_PARAM_NAME, TERM_OFFSET_PARAM_NAME):
            uri.remove(key)
        uri.put(RESPONSE_CORRELATION_ID_PARAM_NAME, str(self._replay_subscription.registration_id))
        uri.put(TERM_LENGTH_PARAM_NAME, str(archive_ctx.control_term_buffer_length))
        uri.put(SPIES_SIMULATE_CONNECTION_PARAM_NAME, "false")
        self._request_publication_id = self._aeron.async_add_exclusive_publication(
            str(uri), archive_ctx.control_request_stream_id)
        self._set_state(State.AWAIT_REQUEST_PUBLICATION)
        return 1

    def _await_request_publication(self) -> int:
        try:
            publication = self._aeron.get_exclusive_publication(self._request_publication_id)
        except Exception as exc:        # noqa: BLE001 - refused: retried when temporary, else terminal
            self._request_publication_id = NULL_VALUE
            self._clean_up_replay_subscription()
            if isinstance(exc, RegistrationError) and \
                    exc.error_code == ErrorCode.RESOURCE_TEMPORARILY_UNAVAILABLE:
                self._set_up_replay()
                self.listener.on_error(exc)
            else:
                self._set_state(State.FAILED)
                self._on_terminal_error(exc)
            return 1
        if publication is None:
            return 0
        self._request_publication_id = NULL_VALUE
        self._request_publication = publication
        self._request_proxy = ArchiveProxy(publication, self._archive_ctx.message_retry_attempts)
        self._request_publication_deadline_ns = time.monotonic_ns() + self._message_timeout_ns
        self._set_state(State.SEND_REPLAY_TOKEN_REQUEST)
        return 1

    def _send_replay_token_request(self) -> int:
        correlation_id = self._aeron.next_correlation_id()
        if not self._send(lambda p, cs: p.request_replay_token(correlation_id, cs, self.recording_id)):
            if self._archive is not None:
                return 0
            self._clean_up_request_publication()
            self._clean_up_replay_subscription()
            self._set_state(State.AWAIT_ARCHIVE_CONNECTION)
            return 1
        self._replay_token_request.init(correlation_id, time.monotonic_ns() + self._message_timeout_ns)
        self._set_state(State.AWAIT_REPLAY_TOKEN)
        return 1

    def _await_replay_token(self) -> int:
        op = self._replay_token_request
        if not op.received:
            if time.monotonic_ns() - op.deadline_ns >= 0:
                self._restart_replay_set_up()
                return 1
            return 0
        if op.code != codecs.ControlResponseCode.OK:
            self._fail_replay_set_up()
            self._on_terminal_error(ArchiveError(f"replay token request failed: {op.error_message}",
                                                 op.relevant_id, op.correlation_id))
            return 1
        self._replay_token = op.relevant_id
        self._set_state(State.SEND_REPLAY_REQUEST if self._replay_uri.is_ipc else State.AWAIT_REPLAY_CHANNEL_ENDPOINT)
        return 1

    def _send_on_request_publication(self, request: Callable[[Any, int], bool]) -> bool:
        archive = self._archive
        publication = self._request_publication
        if archive is None or publication is None or not publication.is_connected:
            return False
        try:
            return request(self._request_proxy, archive.control_session_id)
        except ArchiveError as exc:
            self.listener.on_error(exc)
            return False

    def _await_replay_channel_endpoint(self) -> int:
        resolved = self._replay_subscription.try_resolve_channel_endpoint_port()
        if resolved is None:
            return 0
        endpoint = ChannelUri.parse(resolved).get(ENDPOINT_PARAM_NAME)
        if endpoint is not None:
            self._replay_uri.put(ENDPOINT_PARAM_NAME, endpoint)
        self._set_state(State.SEND_REPLAY_REQUEST)
        return 1

    def _replay(self, fragment_limit: int, controlled: bool) -> int:
        image = self._replay_image
        if image is None:
            image = self._replay_subscription.image_by_session_id(replay_image_session_id(self._replay_session_id))
            if image is None:
                if time.monotonic_ns() - self._replay_image_deadline_ns >= 0:
                    self._clean_up_replay()
                    self._clean_up_replay_subscription()
                    self._set_up_replay()
                    return 1
                return 0
            self._replay_image = image
        if image.is_closed:
            self.position = image.position
            self._clean_up_live_subscription()
            self._clean_up_replay()
            self._clean_up_replay_subscription()
            self._refresh_recording_descriptor()
            return 1
        if self._live_subscription is None and self._live_subscription_id != NULL_VALUE:
            try:
                live = self._aeron.get_subscription(self._live_subscription_id)
            except Exception as exc:        # noqa: BLE001 - a refused live registration is terminal
                self._live_subscription_id = NULL_VALUE
                self._clean_up_replay()
                self._clean_up_replay_subscription()
                self._set_state(State.FAILED)
                self._on_terminal_error(exc)
                return 1
            if live is not None:
                self._live_subscription = live
                self._live_subscription_id = NULL_VALUE
                self._set_live_image_deadline()
        live = self._live_subscription
        if live is not None:
            if live.image_count > 0:
                self._live_image = live.image_at_index(0)
                self._set_join_difference(self._live_image.position - image.position)
                self._set_state(State.ATTEMPT_SWITCH)
                return 1
            if not self._live_image_deadline_breached and time.monotonic_ns() - self._live_image_deadline_ns >= 0:
                self._on_live_image_deadline_breached()
        fragments = self._do_poll(image, fragment_limit, controlled)
        self.position = image.position
        if (self._live_subscription_id == NULL_VALUE and self._live_subscription is None
                and self._max_recorded_position.is_caught_up(self.position)):
            self._do_add_live_subscription()
        return fragments

    def _do_add_live_subscription(self) -> None:
        self._live_image = None
        self._live_subscription = None
        self._live_subscription_id = self._aeron.async_add_subscription(self.live_channel, self.live_stream_id)

    def _set_live_image_deadline(self) -> None:
        self._live_image_deadline_ns = time.monotonic_ns() + self._message_timeout_ns
        self._live_image_deadline_breached = False

    def _on_live_image_deadline_breached(self) -> None:
        self._live_image_deadline_breached = True
        self.listener.on_error(IllegalStateError(
            f"No image became available on the live subscription within {self._message_timeout_ns / 1e9:g}s. This "
            "could be caused by the publisher being down, or by a misconfiguration of the subscriber or a firewall "
            "between them."))

    def _attempt_switch(self, fragment_limit: int, controlled: bool) -> int:
        fragments = 0
        live_image = self._live_image
        replay_image = self._replay_image
        live_position = live_image.position
        replay_position = replay_image.position
        if replay_position == live_position:
            self._set_state(State.LIVE)
        else:
            if replay_image.is_closed:
                self.position = replay_position
                self._advance_last_observed_live_position(live_position)
                self._clean_up_live_subscription()
                self._clean_up_replay()
                self._clean_up_replay_subscription()
                self._refresh_recording_descriptor()
                return 1
            if live_image.is_closed:
                self._clean_up_live_subscription()
                self._reset_replay_catchup_state()
                self._set_state(State.REPLAY)
                return 1
            fragments += live_image.controlled_poll(self._on_live_catchup_fragment, fragment_limit)
            fragments += replay_image.controlled_poll(
                self._on_replay_catchup_fragment_controlled if controlled else self._on_replay_catchup_fragment,
                fragment_limit)
        if self.state is State.LIVE:
            self.position = live_image.position
            self._clean_up_replay()
            self._clean_up_replay_subscription()
            self._on_live_joined()
        return fragments

    def _on_live_catchup_fragment(self, buffer: Any, offset: int, length: int, header: Any) -> int:
        position = header.position
        if position <= self._replay_image.position:
            return CONTINUE
        self._next_live_position = position
        return ABORT

    def _on_replay_catchup_fragment(self, buffer: Any, offset: int, length: int, header: Any) -> int:
        if header.position == self._next_live_position:
            self._set_state(State.LIVE)
            return ABORT
        self._assembler.on_fragment(buffer, offset, length, header)
        return CONTINUE

    def _on_replay_catchup_fragment_controlled(self, buffer: Any, offset: int, length: int, header: Any) -> int:
        if header.position == self._next_live_position:
            self._set_state(State.LIVE)
            return ABORT
        return self._controlled_assembler.on_fragment(buffer, offset, length, header)

    def _add_live_subscription(self) -> int:
        self._do_add_live_subscription()
        self._set_state(State.AWAIT_LIVE)
        return 1

    def _await_live(self) -> int:
        if self._live_subscription is None:
            try:
                live = self._aeron.get_subscription(self._live_subscription_id)
            except Exception as exc:        # noqa: BLE001 - a refused live registration is terminal
                self._live_subscription_id = NULL_VALUE
                self._set_state(State.FAILED)
                self._on_terminal_error(exc)
                return 1
            if live is not None:
                self._live_subscription = live
                self._live_subscription_id = NULL_VALUE
                self._set_live_image_deadline()
        live = self._live_subscription
        if live is None:
            return 0
        if live.image_count > 0:
            image = live.image_at_index(0)
            live_position = image.position
            self._advance_last_observed_live_position(live_position)
            if self.position >= 0:
                if live_position < self.position:
                    self._clean_up_live_subscription()
                    self._set_state(State.FAILED)
                    self._on_terminal_error(PersistentSubscriptionError(
                        PersistentSubscriptionError.Reason.GENERIC, f"live stream joined at position {live_position}"
                        f" which is earlier than last seen position {self.position}"))
                    return 1
                if live_position > self.position:
                    self._clean_up_live_subscription()
                    self._refresh_recording_descriptor()
                    return 1
            self._live_image = image
            self.position = live_position
            self._set_join_difference(0)
            self._set_state(State.LIVE)
            self._on_live_joined()
            return 1
        if not self._live_image_deadline_breached and time.monotonic_ns() - self._live_image_deadline_ns >= 0:
            self._on_live_image_deadline_breached()
        return 0

    def _live(self, fragment_limit: int, controlled: bool) -> int:
        image = self._live_image
        fragments = self._do_poll(image, fragment_limit, controlled)
        if fragments == 0 and image.is_closed:
            final_position = image.position
            self._advance_last_observed_live_position(final_position)
            self.position = final_position
            self._clean_up_live_subscription()
            self._refresh_recording_descriptor()
            self._on_live_left()
            return 1
        self.position = image.position
        return fragments

    def _advance_last_observed_live_position(self, position: int) -> None:
        if position > self._last_observed_live_position:
            self._last_observed_live_position = position

    def _on_live_joined(self) -> None:
        counter = self.ctx.live_joined_counter
        if counter is not None and not counter.is_closed:
            counter.increment_ordered()
        self.listener.on_live_joined()

    def _on_live_left(self) -> None:
        counter = self.ctx.live_left_counter
        if counter is not None and not counter.is_closed:
            counter.increment_ordered()
        self.listener.on_live_left()

    def _do_poll(self, image: Any, fragment_limit: int, controlled: bool) -> int:
        if controlled:
            return image.controlled_poll(self._controlled_assembler, fragment_limit)
        return image.poll(self._assembler, fragment_limit)

    def _on_fragment(self, buffer: Any, offset: int, length: int, header: Any) -> None:
        handler = self._handler
        if handler is not None:
            handler(buffer, offset, length, header)

    def _on_fragment_controlled(self, buffer: Any, offset: int, length: int, header: Any) -> int:
        handler = self._controlled_handler
        if handler is None:
            return ABORT            # nobody to take it: keep it for the next poll
        return handler(buffer, offset, length, header)

    def __repr__(self) -> str:
        """State and position."""
        return (f"PersistentSubscription(recording_id={self.recording_id}, state={self.state.name}, "
                f"position={self.position}, join_difference={self.join_difference})")
