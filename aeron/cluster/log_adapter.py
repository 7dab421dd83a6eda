# SPDX-License-Identifier: Apache-2.0
"""The consensus module's reader of the replicated log (Aeron's ``LogAdapter``).

A follower, and any member replaying its log, reads the log image only to keep its own state in step with the
leader's: session messages refresh session activity (and retire queued service messages), timer events cancel
local timers, session open and close events maintain the session table, cluster actions change state, and a
new leadership term event moves the term on. Reading stops after a ``ClusterActionRequest`` (BREAK) so that a
snapshot or suspension takes effect at its exact position.

Fragmented entries are reassembled; a handler that ABORTs (nothing here does, an extension might) leaves the
entry to be read again. With :meth:`LogAdapter.use_session_dispatcher` (the consensus module's), the session messages
of known sessions are handled in compiled code (aeron._core.cluster_log.ConsensusLogDispatcher), and only the rest
reaches the decoders here.
"""
from __future__ import annotations

from typing import Any

from aeron._core.cluster_log import ConsensusLogDispatcher
from aeron._core.codecs import cluster as codecs
from aeron._core.fragment_assembler import ImageControlledFragmentAssembler
from aeron._core.term_reader import BREAK, CONTINUE
from aeron.common.constants import NULL_VALUE
from aeron.common.errors import ClusterError, MalformedMessageError

__all__ = ["LogAdapter"]

CLUSTER_ACTION_FLAGS_DEFAULT = 0
_HEADER = codecs.MESSAGE_HEADER_LENGTH
_SESSION_MESSAGE = codecs.SessionMessageHeaderDecoder.TEMPLATE_ID
_TIMER_EVENT = codecs.TimerEventDecoder.TEMPLATE_ID
_SESSION_OPEN = codecs.SessionOpenEventDecoder.TEMPLATE_ID
_SESSION_CLOSE = codecs.SessionCloseEventDecoder.TEMPLATE_ID
_CLUSTER_ACTION = codecs.ClusterActionRequestDecoder.TEMPLATE_ID
_NEW_LEADERSHIP_TERM_EVENT = codecs.NewLeadershipTermEventDecoder.TEMPLATE_ID


class LogAdapter:
    """Polls the log image (live, catch-up or replay) into the consensus module agent's ``on_replay_*`` methods."""

    def __init__(self, consensus_module_agent: Any, fragment_limit: int) -> None:
        """Read at most ``fragment_limit`` fragments per poll."""
        self.consensus_module_agent = consensus_module_agent
        self.fragment_limit = fragment_limit
        self._image: Any = None
        self._log_position = 0
        self._assembler: Any = ImageControlledFragmentAssembler(self._on_message)
        self._header = codecs.MessageHeaderDecoder()
        self._session_header = codecs.SessionMessageHeaderDecoder()
        self._timer_event = codecs.TimerEventDecoder()
        self._session_open = codecs.SessionOpenEventDecoder()
        self._session_close = codecs.SessionCloseEventDecoder()
        self._cluster_action = codecs.ClusterActionRequestDecoder()
        self._new_leadership_term_event = codecs.NewLeadershipTermEventDecoder()

    def use_session_dispatcher(self, session_by_id: dict[int, Any], nanos_per_unit: int) -> None:
        """Read the log with a compiled handler: a session message of a session in ``session_by_id`` (the session
        manager's map) refreshes its ``time_of_last_activity_ns`` (the timestamp times ``nanos_per_unit``) as
        ``on_replay_session_message`` would, without a call into the agent; every other entry as before."""
        self._assembler = ConsensusLogDispatcher(session_by_id, nanos_per_unit, self._on_message)

    # -- the image ------------------------------------------------------------------------------------------

    @property
    def image(self) -> Any:
        """The image being read (None when disconnected)."""
        return self._image

    @image.setter
    def image(self, image: Any) -> None:
        if self._image is not None:
            self._log_position = self._image.position
        self._image = image
        self._assembler.clear()

    @property
    def subscription(self) -> Any:
        """The image's subscription, or None."""
        return None if self._image is None else self._image.subscription

    def disconnect(self, error_handler: Any = None) -> int:
        """Close the image's subscription, remembering the position reached; returns the subscription's
        registration id (-1 without an image)."""
        registration_id = NULL_VALUE
        image = self._image
        if image is not None:
            self._log_position = image.position
            subscription = image.subscription
            registration_id = subscription.registration_id
            try:
                subscription.close()
            except Exception as ex:     # noqa: BLE001 - reported as CloseHelper.close(errorHandler, ...)
                if error_handler is None:
                    raise
                error_handler(ex)
            self._image = None
        self._assembler.clear()
        return int(registration_id)

    def disconnect_to(self, error_handler: Any, max_log_position: int) -> None:
        """Disconnect, wait for the subscription's sockets to close, and cap the position reached at
        ``max_log_position`` (the log was truncated there)."""
        self.consensus_module_agent.await_local_sockets_closed(self.disconnect(error_handler))
        self._log_position = min(self._log_position, max_log_position)

    def position(self) -> int:
        """The image position, or the position reached before it went."""
        image = self._image
        return self._log_position if image is None else int(image.position)

    def poll(self, bound_position: int) -> int:
        """Read up to ``bound_position``; returns the fragments read."""
        image = self._image
        if image is None:
            return 0
        return int(image.bounded_controlled_poll(self._assembler, bound_position, self.fragment_limit))

    def is_image_closed(self) -> bool:
        """No image, or it closed."""
        return self._image is None or bool(self._image.is_closed)

    def is_log_end_of_stream(self) -> bool:
        """The image ended with an end of stream (the leader closed the log gracefully)."""
        return self._image is not None and bool(self._image.is_end_of_stream)

    def is_log_end_of_stream_at(self, position: int) -> bool:
        """The image's end of stream is at ``position``."""
        image = self._image
        if image is None or image.is_closed:
            return False
        return position == image.log_buffers.end_of_stream_position

    def async_remove_destination(self, destination: str) -> None:
        """Remove a destination (live or catch-up) from the log subscription, without waiting."""
        image = self._image
        if image is not None and not image.subscription.is_closed:
            image.subscription.async_remove_destination(destination)

    # -- entries --------------------------------------------------------------------------------------------

    def _on_message(self, buffer: Any, offset: int, length: int, header: Any) -> int:
        h = self._header.wrap(buffer, offset)
        try:
            schema_id, template_id, block_length, version = h.schema_id, h.template_id, h.block_length, h.version
        finally:
            h.release()
        agent = self.consensus_module_agent
        if schema_id != codecs.SCHEMA_ID:
            return int(agent.on_replay_extension_message(block_length, template_id, schema_id, version, buffer,
                                                         offset, length, header))
        body = offset + _HEADER
        end = offset + length
        try:
            if template_id == _SESSION_MESSAGE:
                message = self._session_header.wrap(buffer, body, block_length, version, end)
                try:
                    agent.on_replay_session_message(message.cluster_session_id, message.timestamp)
                finally:
                    message.release()
            elif template_id == _TIMER_EVENT:
                timer = self._timer_event.wrap(buffer, body, block_length, version, end)
                try:
                    agent.on_replay_timer_event(timer.correlation_id)
                finally:
                    timer.release()
            elif template_id == _SESSION_OPEN:
                opened = self._session_open.wrap(buffer, body, block_length, version, end)
                try:
                    agent.on_replay_session_open(header.position, opened.correlation_id, opened.cluster_session_id,
                                                 opened.timestamp, opened.response_stream_id, opened.response_channel)
                finally:
                    opened.release()
            elif template_id == _SESSION_CLOSE:
                closed = self._session_close.wrap(buffer, body, block_length, version, end)
                try:
                    agent.on_replay_session_close(closed.cluster_session_id, closed.close_reason)
                finally:
                    closed.release()
            elif template_id == _CLUSTER_ACTION:
                request = self._cluster_action.wrap(buffer, body, block_length, version, end)
                try:
                    flags = request.flags
                    if flags == codecs.ClusterActionRequestDecoder.FLAGS_NULL_VALUE:
                        flags = CLUSTER_ACTION_FLAGS_DEFAULT
                    agent.on_replay_cluster_action(request.leadership_term_id, request.log_position, request.timestamp,
                                                   request.action, flags)
                finally:
                    request.release()
                return BREAK
            elif template_id == _NEW_LEADERSHIP_TERM_EVENT:
                event = self._new_leadership_term_event.wrap(buffer, body, block_length, version, end)
                try:
                    agent.on_replay_new_leadership_term_event(event.leadership_term_id, event.log_position,
                                                              event.timestamp, event.term_base_log_position,
                                                              event.time_unit, event.app_version)
                finally:
                    event.release()
        except MalformedMessageError as ex:
            # the log is what every member agreed on: an entry that does not decode is not a packet to drop
            raise ClusterError(f"malformed log entry templateId={template_id} at position={header.position}: "
                               f"{ex}") from ex
        return CONTINUE
