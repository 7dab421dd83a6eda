# SPDX-License-Identifier: Apache-2.0
"""Reads client ingress (Aeron's ``IngressAdapter``): connect, close, keep-alive, challenge responses, admin
requests and session messages, from the UDP ingress subscription and, when allowed, an IPC one.

Images are polled one at a time so that each message's handler knows the image it came from (the session links
to it, and its source identity names the session's counter), which Aeron reads from ``Header.context``. A message
of another schema goes to the agent's extension hook; one that does not decode goes to the error handler and is
dropped. A session message whose append the log refuses (back pressure) is ABORTed, to be read again.
"""
from __future__ import annotations

from typing import Any

from aeron._core.codecs import cluster as codecs
from aeron._core.fragment_assembler import ControlledFragmentAssembler
from aeron._core.term_reader import CONTINUE
from aeron.cluster._image_poll import ImagePoller
from aeron.common.errors import MalformedMessageError

__all__ = ["IngressAdapter", "SESSION_HEADER_LENGTH"]

_HEADER = codecs.MESSAGE_HEADER_LENGTH
SESSION_HEADER_LENGTH = _HEADER + codecs.SessionMessageHeaderDecoder.BLOCK_LENGTH
_SESSION_MESSAGE = codecs.SessionMessageHeaderDecoder.TEMPLATE_ID
_CONNECT = codecs.SessionConnectRequestDecoder.TEMPLATE_ID
_CLOSE = codecs.SessionCloseRequestDecoder.TEMPLATE_ID
_KEEP_ALIVE = codecs.SessionKeepAliveDecoder.TEMPLATE_ID
_CHALLENGE_RESPONSE = codecs.ChallengeResponseDecoder.TEMPLATE_ID
_ADMIN_REQUEST = codecs.AdminRequestDecoder.TEMPLATE_ID


class IngressAdapter:
    """Polls ingress and calls the consensus module agent."""

    def __init__(self, fragment_poll_limit: int, consensus_module_agent: Any, error_handler: Any = None) -> None:
        """``error_handler(exception)`` hears of malformed messages (dropped); None raises them."""
        self.fragment_poll_limit = fragment_poll_limit
        self._agent = consensus_module_agent
        self._error_handler = error_handler
        self.subscription: Any = None
        self.ipc_subscription: Any = None
        self._udp_assembler = ControlledFragmentAssembler(self.on_message)
        self._ipc_assembler = ControlledFragmentAssembler(self.on_message)
        self._image_poller = ImagePoller()
        self.session_appender: Any = None
        self._header = codecs.MessageHeaderDecoder()
        self._session_header = codecs.SessionMessageHeaderDecoder()
        self._connect = codecs.SessionConnectRequestDecoder()
        self._close = codecs.SessionCloseRequestDecoder()
        self._keep_alive = codecs.SessionKeepAliveDecoder()
        self._challenge_response = codecs.ChallengeResponseDecoder()
        self._admin_request = codecs.AdminRequestDecoder()

    def use_session_appender(self, appender: Any) -> None:
        """Reassembled messages go to ``appender`` (aeron._core.cluster_ingress.IngressSessionAppender: session
        messages appended to the log in compiled code, every other message handed to :meth:`on_message`)."""
        self.session_appender = appender
        self._udp_assembler = ControlledFragmentAssembler(appender)
        self._ipc_assembler = ControlledFragmentAssembler(appender)

    def connect(self, subscription: Any, ipc_subscription: Any) -> None:
        """Poll these subscriptions (the IPC one may be None)."""
        self.subscription = subscription
        self.ipc_subscription = ipc_subscription

    def close(self) -> None:
        """Close the subscriptions."""
        subscription, ipc_subscription = self.subscription, self.ipc_subscription
        self.subscription = self.ipc_subscription = None
        if subscription is not None:
            subscription.close()
        if ipc_subscription is not None:
            ipc_subscription.close()
        self._udp_assembler.clear()
        self._ipc_assembler.clear()

    def poll(self) -> int:
        """Poll both subscriptions, up to the fragment limit each; returns the fragments read."""
        fragments = 0
        if self.subscription is not None:
            fragments += self._poll(self.subscription, self._udp_assembler)
        if self.ipc_subscription is not None:
            fragments += self._poll(self.ipc_subscription, self._ipc_assembler)
        return fragments

    def _poll(self, subscription: Any, assembler: Any) -> int:
        return self._image_poller.poll(subscription, assembler, self.fragment_poll_limit, True)

    @property
    def image(self) -> Any:
        """The image being polled, for the handlers (Aeron's ``Header.context()``)."""
        return self._image_poller.image

    def free_session_buffer(self, image_session_id: int, is_ipc: bool) -> None:
        """Drop the reassembly buffer of an image that went away."""
        (self._ipc_assembler if is_ipc else self._udp_assembler).free_session_buffer(image_session_id)

    def on_message(self, buffer: Any, offset: int, length: int, header: Any) -> int:
        """Decode one ingress message and call the agent; returns the poll action."""
        h = self._header.wrap(buffer, offset)
        try:
            schema_id, template_id, block_length, version = h.schema_id, h.template_id, h.block_length, h.version
        finally:
            h.release()
        agent = self._agent
        if schema_id != codecs.SCHEMA_ID:
            return int(agent.on_extension_message(block_length, template_id, schema_id, version, buffer, offset,
                                                  length, header))
        body = offset + _HEADER
        end = offset + length
        try:
            if template_id == _SESSION_MESSAGE:
                message = self._session_header.wrap(buffer, body, block_length, version, end)
                try:
                    leadership_term_id, cluster_session_id = message.leadership_term_id, message.cluster_session_id
                finally:
                    message.release()
                return int(agent.on_ingress_message(leadership_term_id, cluster_session_id, buffer,
                                                    offset + SESSION_HEADER_LENGTH, length - SESSION_HEADER_LENGTH))
            if template_id == _CONNECT:
                connect = self._connect.wrap(buffer, body, block_length, version, end)
                try:
                    args = (connect.correlation_id, connect.response_stream_id, connect.version,
                            connect.response_channel, connect.encoded_credentials, connect.client_info)
                finally:
                    connect.release()
                agent.on_session_connect(*args, self.image)
            elif template_id == _CLOSE:
                close = self._close.wrap(buffer, body, block_length, version, end)
                try:
                    args2 = (close.leadership_term_id, close.cluster_session_id)
                finally:
                    close.release()
                agent.on_session_close(*args2)
            elif template_id == _KEEP_ALIVE:
                alive = self._keep_alive.wrap(buffer, body, block_length, version, end)
                try:
                    args2 = (alive.leadership_term_id, alive.cluster_session_id)
                finally:
                    alive.release()
                agent.on_session_keep_alive(*args2, self.image)
            elif template_id == _CHALLENGE_RESPONSE:
                response = self._challenge_response.wrap(buffer, body, block_length, version, end)
                try:
                    args3 = (response.correlation_id, response.cluster_session_id, response.encoded_credentials)
                finally:
                    response.release()
                agent.on_ingress_challenge_response(*args3)
            elif template_id == _ADMIN_REQUEST:
                request = self._admin_request.wrap(buffer, body, block_length, version, end)
                try:
                    args4 = (request.leadership_term_id, request.cluster_session_id, request.correlation_id,
                             request.request_type, request.payload)
                finally:
                    request.release()
                agent.on_admin_request(*args4)
        except MalformedMessageError as ex:
            error = MalformedMessageError(f"malformed ingress message templateId={template_id}: {ex}")
            if self._error_handler is None:
                raise error from ex
            self._error_handler(error)
        return CONTINUE
