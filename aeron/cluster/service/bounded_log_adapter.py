# SPDX-License-Identifier: Apache-2.0
"""``BoundedLogAdapter``: how a clustered service consumes the replicated log, up to the commit position and never
past the log's bound (``maxLogPosition`` of JoinLog). Port of Aeron's ``io.aeron.cluster.service.BoundedLogAdapter``.

Fragmented entries are reassembled (Aeron's one-image reassembly), then dispatched by template id: SessionMessageHeader
(the application's messages) goes to the service; TimerEvent, SessionOpenEvent, SessionCloseEvent,
ClusterActionRequest and NewLeadershipTermEvent to the agent; MembershipChangeEvent (dynamic join, removed from
Aeron) and unknown templates are skipped; an entry of another schema is a ClusterError.

The per-message path is compiled: a :class:`~aeron._core.cluster_log.LogEntryDispatcher` is the image's fragment
handler; it reads each entry's message header and a session message's fields in place, keeps the log position and
cluster time for the agent, and calls the service with the message's session (Aeron's
``ClusteredServiceAgent.onSessionMessage``). The other entries are control-rate and decoded here with the generated
flyweights, which let go of the buffer before the agent runs.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aeron._core.codecs import cluster as codecs
from aeron._core.cluster_log import LogEntryDispatcher
from aeron.cluster.service.cluster_clock import ClusterClock

if TYPE_CHECKING:
    from aeron.client.image import Image
    from aeron.cluster.service.clustered_service_agent import ClusteredServiceAgent

__all__ = ["BoundedLogAdapter", "CLUSTER_ACTION_FLAGS_DEFAULT", "CLUSTER_ACTION_FLAGS_STANDBY_SNAPSHOT"]

# ConsensusModule.CLUSTER_ACTION_FLAGS_*: ClusterActionRequest.flags (a null, from an older leader, means default)
CLUSTER_ACTION_FLAGS_DEFAULT = 0
CLUSTER_ACTION_FLAGS_STANDBY_SNAPSHOT = 1

_HEADER = codecs.MESSAGE_HEADER_LENGTH
_TIMER_EVENT = codecs.TimerEventDecoder.TEMPLATE_ID
_SESSION_OPEN = codecs.SessionOpenEventDecoder.TEMPLATE_ID
_SESSION_CLOSE = codecs.SessionCloseEventDecoder.TEMPLATE_ID
_ACTION_REQUEST = codecs.ClusterActionRequestDecoder.TEMPLATE_ID
_NEW_LEADERSHIP_TERM = codecs.NewLeadershipTermEventDecoder.TEMPLATE_ID
_EVENTS = frozenset((_TIMER_EVENT, _SESSION_OPEN, _SESSION_CLOSE, _ACTION_REQUEST, _NEW_LEADERSHIP_TERM))


def _enum(enum_type: Any, value: int) -> Any:
    """The enum member of ``value``, or NULL_VAL for a value this schema does not know (as SBE's Java codecs)."""
    try:
        return enum_type(value)
    except ValueError:
        return enum_type.NULL_VAL


class BoundedLogAdapter:
    """Reads the log image for the agent, bounded by a limit position (the commit position) on each poll and by
    ``max_log_position`` overall."""

    def __init__(self, agent: ClusteredServiceAgent, fragment_limit: int) -> None:
        """Dispatch to ``agent`` (session messages straight to its service, with its sessions), at most
        ``fragment_limit`` fragments a poll."""
        self.agent = agent
        self.fragment_limit = fragment_limit
        self.max_log_position = 0
        self.image: Image | None = None
        self.dispatcher = LogEntryDispatcher(agent.service.on_session_message, agent.session_by_id, self._on_event)
        self._timer_event = codecs.TimerEventDecoder()
        self._open_event = codecs.SessionOpenEventDecoder()
        self._close_event = codecs.SessionCloseEventDecoder()
        self._action_request = codecs.ClusterActionRequestDecoder()
        self._new_leadership_term_event = codecs.NewLeadershipTermEventDecoder()

    def close(self) -> None:
        """Close the image's subscription and forget the image."""
        image = self.image
        if image is not None:
            self.image = None
            self.dispatcher.clear()
            image.subscription.close()

    def is_done(self) -> bool:
        """True when the image reached ``max_log_position``, or ended, or was closed."""
        image = self.image
        assert image is not None
        return image.position >= self.max_log_position or image.is_end_of_stream or image.is_closed

    def poll(self, limit: int) -> int:
        """Read the image up to position ``limit``; returns the fragments read."""
        image = self.image
        assert image is not None
        return int(image.bounded_controlled_poll(self.dispatcher, limit, self.fragment_limit))

    def _on_event(self, template_id: int, buffer: Any, offset: int, length: int, header: Any) -> None:
        # the control-rate entries, decoded here; MembershipChangeEvent (removed dynamic join) and unknown
        # templates are skipped
        if template_id not in _EVENTS:
            return
        block_length = buffer.get_i16(offset) & 0xFFFF
        version = buffer.get_i16(offset + 6) & 0xFFFF
        body, end = offset + _HEADER, offset + length
        agent = self.agent
        if template_id == _TIMER_EVENT:
            t = self._timer_event.wrap(buffer, body, block_length, version, end)
            try:
                correlation_id, timestamp = t.correlation_id, t.timestamp
            finally:
                t.release()
            agent.on_timer_event(header.position, correlation_id, timestamp)
        elif template_id == _SESSION_OPEN:
            o = self._open_event.wrap(buffer, body, block_length, version, end)
            try:
                open_args = (o.leadership_term_id, header.position, o.cluster_session_id, o.timestamp,
                             o.response_stream_id, o.response_channel, o.encoded_principal)
            finally:
                o.release()
            agent.on_session_open(*open_args)
        elif template_id == _SESSION_CLOSE:
            c = self._close_event.wrap(buffer, body, block_length, version, end)
            try:
                close_args = (c.leadership_term_id, header.position, c.cluster_session_id, c.timestamp,
                              _enum(codecs.CloseReason, c.close_reason))
            finally:
                c.release()
            agent.on_session_close(*close_args)
        elif template_id == _ACTION_REQUEST:
            a = self._action_request.wrap(buffer, body, block_length, version, end)
            try:
                flags = a.flags
                action_args = (a.leadership_term_id, a.log_position, a.timestamp,
                               _enum(codecs.ClusterAction, a.action),
                               CLUSTER_ACTION_FLAGS_DEFAULT if flags == a.FLAGS_NULL_VALUE else flags)
            finally:
                a.release()
            agent.on_service_action(*action_args)
        else:
            n = self._new_leadership_term_event.wrap(buffer, body, block_length, version, end)
            try:
                term_args = (n.leadership_term_id, n.log_position, n.timestamp, n.term_base_log_position,
                             n.leader_member_id, n.log_session_id, ClusterClock.map(n.time_unit), n.app_version)
            finally:
                n.release()
            agent.on_new_leadership_term_event(*term_args)
