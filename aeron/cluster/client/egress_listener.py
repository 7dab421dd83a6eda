# SPDX-License-Identifier: Apache-2.0
"""What the cluster's egress is delivered to (Aeron's ``EgressListener``, ``ControlledEgressListener`` and their
``*Extension`` for messages of other schemas).

Subclass a listener and override what you need: ``on_message`` is the one every application has; the session
events, new-leader events and admin responses have no-op defaults. A plain function taking ``on_message``'s
arguments is accepted wherever a listener is (:func:`as_egress_listener`).

``buffer`` is the subscription's log (or the fragment assembler's buffer for a message longer than one frame):
``buffer.view(offset, length)`` is a zero-copy view valid during the call, ``buffer.get_bytes(offset, length)`` a
copy to keep.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aeron._core.codecs.cluster import AdminRequestType, AdminResponseCode, CloseReason, EventCode
from aeron._core.term_reader import CONTINUE

__all__ = ["EventCode", "CloseReason", "AdminRequestType", "AdminResponseCode", "EgressListener", "ControlledEgressListener", "EgressListenerExtension",
           "ControlledEgressListenerExtension", "as_egress_listener"]


class _EgressEvents:
    """The callbacks both listeners share, no-ops by default."""

    def on_session_event(self, correlation_id: int, cluster_session_id: int, leadership_term_id: int,
                         leader_member_id: int, code: EventCode, detail: str) -> None:
        """A SessionEvent for this session: CLOSED (``detail`` TIMEOUT, SERVICE_ACTION, election), ERROR, ..."""

    def on_new_leader(self, cluster_session_id: int, leadership_term_id: int, leader_member_id: int,
                      ingress_endpoints: str) -> None:
        """A new leader took over (``ingress_endpoints`` is ``id=host:port,...``); the client already follows it."""

    def on_admin_response(self, cluster_session_id: int, correlation_id: int, request_type: AdminRequestType,
                          response_code: AdminResponseCode, message: str, payload: Any, payload_offset: int,
                          payload_length: int) -> None:
        """The answer to an admin request (``send_admin_request_to_take_a_snapshot``)."""


class EgressListener(_EgressEvents):
    """Receives the egress of one session, as :meth:`AeronCluster.poll_egress` or :class:`EgressAdapter`
    decode it."""

    def on_message(self, cluster_session_id: int, timestamp: int, buffer: Any, offset: int, length: int,
                   header: Any) -> None:
        """A message from the clustered service: the payload is ``buffer[offset:offset + length]`` (the session
        header already skipped); ``timestamp`` is the cluster time of the log entry that caused it."""
        raise NotImplementedError("EgressListener.on_message must be overridden")


class ControlledEgressListener(_EgressEvents):
    """As :class:`EgressListener`, for :meth:`AeronCluster.controlled_poll_egress`: ``on_message`` returns a
    ControlledPollAction (ABORT leaves the message to be delivered again, BREAK stops the poll after it)."""

    def on_message(self, cluster_session_id: int, timestamp: int, buffer: Any, offset: int, length: int,
                   header: Any) -> int:
        """As :meth:`EgressListener.on_message`; returns ABORT, BREAK, COMMIT or CONTINUE."""
        raise NotImplementedError("ControlledEgressListener.on_message must be overridden")


class EgressListenerExtension:
    """Receives egress messages of another SBE schema than the cluster's (Aeron ``EgressListenerExtension``)."""

    def on_extension_message(self, acting_block_length: int, template_id: int, schema_id: int, acting_version: int,
                             buffer: Any, offset: int, length: int) -> None:
        """One message: ``buffer[offset:offset + length]`` is its body (after the 8-byte message header)."""


class ControlledEgressListenerExtension:
    """As :class:`EgressListenerExtension` for a controlled poll: returns a ControlledPollAction."""

    def on_extension_message(self, acting_block_length: int, template_id: int, schema_id: int, acting_version: int,
                             buffer: Any, offset: int, length: int) -> int:
        """One message; returns ABORT, BREAK, COMMIT or CONTINUE."""
        return CONTINUE


class _FunctionListener(_EgressEvents):
    """A plain ``on_message`` function as a listener (either kind)."""

    def __init__(self, function: Callable[..., Any]) -> None:
        self.on_message = function


def as_egress_listener(value: Any) -> Any:
    """``value`` as a listener (an :class:`EgressListener` or :class:`ControlledEgressListener` as it is, else one
    with its ``on_message``): an object with ``on_message`` (the other callbacks are optional, a missing one is a
    no-op), or a function taking ``on_message``'s arguments."""
    if isinstance(value, _EgressEvents):
        return value
    if hasattr(value, "on_message"):
        return _Delegating(value)
    if callable(value):
        return _FunctionListener(value)
    raise TypeError(f"not an egress listener (no on_message, not callable): {value!r}")


class _Delegating(_EgressEvents):
    """An object that is no EgressListener subclass but has some of its methods (duck typing)."""

    def __init__(self, target: Any) -> None:
        self.target = target
        self.on_message = target.on_message
        for name in ("on_session_event", "on_new_leader", "on_admin_response"):
            method = getattr(target, name, None)
            if method is not None:
                setattr(self, name, method)
