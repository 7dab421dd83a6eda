# SPDX-License-Identifier: Apache-2.0
"""Pollers and adapters of the archive's control responses, descriptors, signals and recording events (Aeron's
``ControlResponsePoller``, ``RecordingDescriptorPoller``, ``RecordingSubscriptionDescriptorPoller``,
``RecordingSignalAdapter``, ``RecordingSignalPoller``, ``RecordingEventsAdapter``).

They read control-rate messages, so they are Python; decoders are made per message so that no view of the
subscription's log outlives the handler (a pinned view would stop the log being unmapped).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aeron._core.codecs import archive as codecs
from aeron._core.fragment_assembler import ControlledFragmentAssembler, FragmentAssembler
from aeron._core.term_reader import ABORT, BREAK, CONTINUE
from aeron.archive.configuration import NULL_VALUE
from aeron.archive.errors import ArchiveError, archive_error
from aeron.archive.recording_descriptor import RecordingDescriptor

FRAGMENT_LIMIT = 10
_HEADER = codecs.MESSAGE_HEADER_LENGTH


@dataclass(frozen=True)
class RecordingSubscriptionDescriptor:
    """One recording subscription as ListRecordingSubscriptions delivers it."""

    control_session_id: int
    correlation_id: int
    subscription_id: int
    stream_id: int
    stripped_channel: str


@dataclass(frozen=True)
class RecordingSignalEvent:
    """A recording signal: ``signal`` is a :class:`aeron._core.codecs.archive.RecordingSignal`."""

    control_session_id: int
    correlation_id: int
    recording_id: int
    subscription_id: int
    position: int
    signal: codecs.RecordingSignal


RecordingSignalConsumer = Callable[[RecordingSignalEvent], Any]
RecordingDescriptorConsumer = Callable[[RecordingDescriptor], Any]
RecordingSubscriptionDescriptorConsumer = Callable[[RecordingSubscriptionDescriptor], Any]
ErrorHandler = Callable[[BaseException], Any]


def _header(buffer: Any, offset: int) -> tuple[int, int, int]:
    """(template id, block length, version) of the message at ``offset``; ArchiveError for another schema."""
    header = codecs.MessageHeaderDecoder().wrap(buffer, offset)
    schema_id = header.schema_id
    if schema_id != codecs.SCHEMA_ID:
        raise ArchiveError(f"expected schemaId={codecs.SCHEMA_ID}, actual={schema_id}")
    return header.template_id, header.block_length, header.version


def _decode(decoder_class: Any, buffer: Any, offset: int, length: int, block_length: int, version: int) -> Any:
    return decoder_class().wrap(buffer, offset + _HEADER, block_length, version, offset + length)


def _signal(decoder: Any) -> RecordingSignalEvent:
    try:
        signal = codecs.RecordingSignal(decoder.signal)
    except ValueError:
        signal = codecs.RecordingSignal.NULL_VAL
    return RecordingSignalEvent(decoder.control_session_id, decoder.correlation_id, decoder.recording_id,
                                decoder.subscription_id, decoder.position, signal)


def _response_code(value: int) -> codecs.ControlResponseCode:
    try:
        return codecs.ControlResponseCode(value)
    except ValueError:
        return codecs.ControlResponseCode.NULL_VAL


def descriptor_from(decoder: Any) -> RecordingDescriptor:
    """A :class:`RecordingDescriptor` copied out of a RecordingDescriptorDecoder."""
    d = decoder
    return RecordingDescriptor(d.control_session_id, d.correlation_id, d.recording_id, d.start_timestamp,
                               d.stop_timestamp, d.start_position, d.stop_position, d.initial_term_id,
                               d.segment_file_length, d.term_buffer_length, d.mtu_length, d.session_id, d.stream_id,
                               d.stripped_channel, d.original_channel, d.source_identity)


class ControlResponsePoller:
    """Polls the control response subscription for one ControlResponse, Challenge or RecordingSignalEvent at a
    time: after :meth:`poll`, ``is_poll_complete`` tells whether one arrived and the attributes describe it.
    Anything else (Ping, descriptors of a listing nobody waits for) is skipped."""

    def __init__(self, subscription: Any, fragment_limit: int = FRAGMENT_LIMIT) -> None:
        """Poll ``subscription`` (the control response subscription) up to ``fragment_limit`` fragments a call."""
        self.subscription = subscription
        self.fragment_limit = fragment_limit
        self._assembler = ControlledFragmentAssembler(self._on_fragment)
        self.is_poll_complete = False
        self._clear()

    def _clear(self) -> None:
        self.template_id = NULL_VALUE
        self.control_session_id = NULL_VALUE
        self.correlation_id = NULL_VALUE
        self.relevant_id = NULL_VALUE
        self.version = 0
        self.code: codecs.ControlResponseCode | None = None
        self.error_message: str | None = None
        self.recording_id = NULL_VALUE
        self.subscription_id = NULL_VALUE
        self.position = NULL_VALUE
        self.recording_signal: codecs.RecordingSignal | None = None
        self.encoded_challenge: bytes | None = None

    def poll(self) -> int:
        """Read until one message of interest arrived (or the fragment limit); returns the fragments read."""
        if self.is_poll_complete:
            self._clear()
            self.is_poll_complete = False
        return self.subscription.controlled_poll(self._assembler, self.fragment_limit)

    @property
    def was_challenged(self) -> bool:
        """True when the message was a Challenge."""
        return self.encoded_challenge is not None

    def signal_event(self) -> RecordingSignalEvent:
        """The polled RecordingSignalEvent as a value."""
        assert self.recording_signal is not None
        return RecordingSignalEvent(self.control_session_id, self.correlation_id, self.recording_id,
                                    self.subscription_id, self.position, self.recording_signal)

    def _on_fragment(self, buffer: Any, offset: int, length: int, header: Any) -> int:
        if self.is_poll_complete:
            return ABORT
        template_id, block_length, version = _header(buffer, offset)
        if template_id == codecs.ControlResponseDecoder.TEMPLATE_ID:
            d = _decode(codecs.ControlResponseDecoder, buffer, offset, length, block_length, version)
            self.control_session_id = d.control_session_id
            self.correlation_id = d.correlation_id
            self.relevant_id = d.relevant_id
            self.code = _response_code(d.code)
            self.version = d.version
            self.error_message = d.error_message
        elif template_id == codecs.ChallengeDecoder.TEMPLATE_ID:
            d = _decode(codecs.ChallengeDecoder, buffer, offset, length, block_length, version)
            self.control_session_id = d.control_session_id
            self.correlation_id = d.correlation_id
            self.relevant_id = NULL_VALUE
            self.code = codecs.ControlResponseCode.NULL_VAL
            self.version = d.version
            self.error_message = ""
            self.encoded_challenge = bytes(d.encoded_challenge)
        elif template_id == codecs.RecordingSignalEventDecoder.TEMPLATE_ID:
            event = _signal(_decode(codecs.RecordingSignalEventDecoder, buffer, offset, length, block_length,
                                    version))
            self.control_session_id = event.control_session_id
            self.correlation_id = event.correlation_id
            self.recording_id = event.recording_id
            self.subscription_id = event.subscription_id
            self.position = event.position
            self.recording_signal = event.signal
        else:
            return CONTINUE
        self.template_id = template_id
        self.is_poll_complete = True
        return BREAK

    def __repr__(self) -> str:
        """The polled message's fields."""
        return (f"ControlResponsePoller(template_id={self.template_id}, control_session_id={self.control_session_id}, "
                f"correlation_id={self.correlation_id}, relevant_id={self.relevant_id}, code={self.code!r}, "
                f"error_message={self.error_message!r}, is_poll_complete={self.is_poll_complete})")


class _ListingPoller:
    """Shared half of the descriptor pollers: one listing (correlation id, expected count) at a time."""

    TERMINAL_CODE = codecs.ControlResponseCode.RECORDING_UNKNOWN

    def __init__(self, subscription: Any, control_session_id: int, error_handler: ErrorHandler | None = None,
                 signal_consumer: RecordingSignalConsumer | None = None,
                 fragment_limit: int = FRAGMENT_LIMIT) -> None:
        """Read ``subscription`` for session ``control_session_id``; signals go to ``signal_consumer``, errors of
        other requests to ``error_handler``."""
        self.subscription = subscription
        self.control_session_id = control_session_id
        self.error_handler = error_handler
        self.signal_consumer = signal_consumer
        self.fragment_limit = fragment_limit
        self.correlation_id = NULL_VALUE
        self.remaining_count = 0
        self.is_dispatch_complete = False
        self._consumer: Callable[[Any], Any] | None = None
        self._assembler = ControlledFragmentAssembler(self._on_fragment)

    def reset(self, correlation_id: int, count: int, consumer: Callable[[Any], Any]) -> None:
        """Start waiting for listing ``correlation_id`` of up to ``count`` entries for ``consumer``."""
        self.correlation_id = correlation_id
        self.remaining_count = count
        self._consumer = consumer
        self.is_dispatch_complete = False

    def poll(self) -> int:
        """Dispatch what arrived; returns the fragments read."""
        if self.is_dispatch_complete:
            self.is_dispatch_complete = False
        return self.subscription.controlled_poll(self._assembler, self.fragment_limit)

    def _on_entry(self, buffer: Any, offset: int, length: int, block_length: int, version: int) -> Any:
        raise NotImplementedError

    ENTRY_TEMPLATE_ID = -1

    def _on_fragment(self, buffer: Any, offset: int, length: int, header: Any) -> int:
        if self.is_dispatch_complete:
            return ABORT
        template_id, block_length, version = _header(buffer, offset)
        if template_id == codecs.ControlResponseDecoder.TEMPLATE_ID:
            d = _decode(codecs.ControlResponseDecoder, buffer, offset, length, block_length, version)
            if d.control_session_id == self.control_session_id:
                code = d.code
                correlation_id = d.correlation_id
                if code == self.TERMINAL_CODE and correlation_id == self.correlation_id:
                    self.is_dispatch_complete = True
                    return BREAK
                if code == codecs.ControlResponseCode.ERROR:
                    error = archive_error(f"response for correlationId={self.correlation_id}, error: "
                                          f"{d.error_message}", d.relevant_id, correlation_id)
                    if correlation_id == self.correlation_id:
                        raise error
                    if self.error_handler is not None:
                        self.error_handler(error)
        elif template_id == self.ENTRY_TEMPLATE_ID:
            entry = self._on_entry(buffer, offset, length, block_length, version)
            if entry.control_session_id == self.control_session_id and entry.correlation_id == self.correlation_id:
                assert self._consumer is not None
                self._consumer(entry)
                self.remaining_count -= 1
                if self.remaining_count == 0:
                    self.is_dispatch_complete = True
                    return BREAK
        elif template_id == codecs.RecordingSignalEventDecoder.TEMPLATE_ID:
            event = _signal(_decode(codecs.RecordingSignalEventDecoder, buffer, offset, length, block_length,
                                    version))
            if event.control_session_id == self.control_session_id and self.signal_consumer is not None:
                self.signal_consumer(event)
        return CONTINUE


class RecordingDescriptorPoller(_ListingPoller):
    """Collects the RecordingDescriptors of one ListRecording(s) request; RECORDING_UNKNOWN ends the listing."""

    ENTRY_TEMPLATE_ID = codecs.RecordingDescriptorDecoder.TEMPLATE_ID
    TERMINAL_CODE = codecs.ControlResponseCode.RECORDING_UNKNOWN

    def _on_entry(self, buffer: Any, offset: int, length: int, block_length: int, version: int) -> Any:
        return descriptor_from(_decode(codecs.RecordingDescriptorDecoder, buffer, offset, length, block_length,
                                       version))


class RecordingSubscriptionDescriptorPoller(_ListingPoller):
    """Collects the descriptors of one ListRecordingSubscriptions request; SUBSCRIPTION_UNKNOWN ends it."""

    ENTRY_TEMPLATE_ID = codecs.RecordingSubscriptionDescriptorDecoder.TEMPLATE_ID
    TERMINAL_CODE = codecs.ControlResponseCode.SUBSCRIPTION_UNKNOWN

    def _on_entry(self, buffer: Any, offset: int, length: int, block_length: int, version: int) -> Any:
        d = _decode(codecs.RecordingSubscriptionDescriptorDecoder, buffer, offset, length, block_length, version)
        return RecordingSubscriptionDescriptor(d.control_session_id, d.correlation_id, d.subscription_id,
                                               d.stream_id, d.stripped_channel)


class RecordingSignalAdapter:
    """Dispatches the control session's responses and recording signals to callbacks (Aeron
    ``RecordingSignalAdapter``), for applications that poll the response subscription themselves.

    ``control_event_listener(control_session_id, correlation_id, relevant_id, code, error_message)`` gets the
    control responses, ``signal_consumer(event)`` the signals; messages of other sessions are skipped.
    """

    def __init__(self, control_session_id: int, control_event_listener: Callable[..., Any] | None,
                 signal_consumer: RecordingSignalConsumer, subscription: Any,
                 fragment_limit: int = FRAGMENT_LIMIT) -> None:
        """Read ``subscription`` for session ``control_session_id``."""
        self.control_session_id = control_session_id
        self.control_event_listener = control_event_listener
        self.signal_consumer = signal_consumer
        self.subscription = subscription
        self.fragment_limit = fragment_limit
        self._is_abort = False
        self._assembler = ControlledFragmentAssembler(self._on_fragment)

    def poll(self) -> int:
        """Dispatch what arrived, stopping after each signal; returns the fragments read."""
        if self._is_abort:
            self._is_abort = False
        return self.subscription.controlled_poll(self._assembler, self.fragment_limit)

    def _on_fragment(self, buffer: Any, offset: int, length: int, header: Any) -> int:
        if self._is_abort:
            return ABORT
        template_id, block_length, version = _header(buffer, offset)
        if template_id == codecs.ControlResponseDecoder.TEMPLATE_ID:
            d = _decode(codecs.ControlResponseDecoder, buffer, offset, length, block_length, version)
            if d.control_session_id == self.control_session_id and self.control_event_listener is not None:
                self.control_event_listener(d.control_session_id, d.correlation_id, d.relevant_id,
                                            _response_code(d.code), d.error_message)
        elif template_id == codecs.RecordingSignalEventDecoder.TEMPLATE_ID:
            event = _signal(_decode(codecs.RecordingSignalEventDecoder, buffer, offset, length, block_length,
                                    version))
            if event.control_session_id == self.control_session_id:
                self.signal_consumer(event)
                self._is_abort = True
                return BREAK
        return CONTINUE


@dataclass(frozen=True)
class RecordingStarted:
    """RecordingStarted on the recording events stream."""

    recording_id: int
    start_position: int
    session_id: int
    stream_id: int
    channel: str
    source_identity: str


@dataclass(frozen=True)
class RecordingProgress:
    """RecordingProgress on the recording events stream."""

    recording_id: int
    start_position: int
    position: int


@dataclass(frozen=True)
class RecordingStopped:
    """RecordingStopped on the recording events stream."""

    recording_id: int
    start_position: int
    stop_position: int


RecordingEvent = RecordingStarted | RecordingProgress | RecordingStopped


def decode_recording_event(buffer: Any, offset: int, length: int) -> RecordingEvent | None:
    """The recording event at ``offset`` (None for a template that is not one); ArchiveError for another schema."""
    template_id, block_length, version = _header(buffer, offset)
    if template_id == codecs.RecordingStartedDecoder.TEMPLATE_ID:
        d = _decode(codecs.RecordingStartedDecoder, buffer, offset, length, block_length, version)
        return RecordingStarted(d.recording_id, d.start_position, d.session_id, d.stream_id, d.channel,
                                d.source_identity)
    if template_id == codecs.RecordingProgressDecoder.TEMPLATE_ID:
        d = _decode(codecs.RecordingProgressDecoder, buffer, offset, length, block_length, version)
        return RecordingProgress(d.recording_id, d.start_position, d.position)
    if template_id == codecs.RecordingStoppedDecoder.TEMPLATE_ID:
        d = _decode(codecs.RecordingStoppedDecoder, buffer, offset, length, block_length, version)
        return RecordingStopped(d.recording_id, d.start_position, d.stop_position)
    return None


class RecordingEventsAdapter:
    """Reads the archive's recording events stream (Aeron ``RecordingEventsAdapter``): each event goes to
    ``listener(event)`` as a :class:`RecordingStarted`, :class:`RecordingProgress` or :class:`RecordingStopped`."""

    def __init__(self, listener: Callable[[RecordingEvent], Any], subscription: Any,
                 fragment_limit: int = FRAGMENT_LIMIT) -> None:
        """Read ``subscription`` (on the events channel and stream)."""
        self.listener = listener
        self.subscription = subscription
        self.fragment_limit = fragment_limit
        self._assembler = FragmentAssembler(self._on_fragment)

    def poll(self) -> int:
        """Dispatch what arrived; returns the fragments read."""
        return self.subscription.poll(self._assembler, self.fragment_limit)

    def _on_fragment(self, buffer: Any, offset: int, length: int, header: Any) -> None:
        event = decode_recording_event(buffer, offset, length)
        if event is not None:
            self.listener(event)
