# SPDX-License-Identifier: Apache-2.0
"""``ClientSession``: a client's session as a clustered service sees it, with its egress (Aeron's
``io.aeron.cluster.service.ClientSession`` and ``ContainerClientSession``).

Only the leader's services send egress: a session opens its response publication when the service is a responding
one (the default) and the member leads, and on every other member ``offer`` and ``try_claim`` pretend to succeed
with :attr:`ClientSession.MOCKED_OFFER` (a claim is then taken on a private buffer, so the same service code runs on
every member). Each message goes out behind a SessionMessageHeader (the session's id, the leadership term, and the
cluster time of the log entry being processed).
"""
from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from aeron._core.term_appender import CLOSED
from aeron.common.errors import ClusterError, RegistrationError

if TYPE_CHECKING:
    from aeron._core.buffer_claim import BufferClaim
    from aeron.client.aeron import Aeron
    from aeron.cluster.service.clustered_service_agent import ClusteredServiceAgent

__all__ = ["ClientSession", "ContainerClientSession"]


class ClientSession(abc.ABC):
    """A session of a client connected to the cluster."""

    MOCKED_OFFER = 1
    """What ``offer`` returns on a member that does not lead: a position that means success."""

    @property
    @abc.abstractmethod
    def id(self) -> int:
        """The cluster session id."""

    @property
    @abc.abstractmethod
    def response_stream_id(self) -> int:
        """The stream id of the client's egress."""

    @property
    @abc.abstractmethod
    def response_channel(self) -> str:
        """The channel of the client's egress."""

    @property
    @abc.abstractmethod
    def encoded_principal(self) -> bytes:
        """The principal the authenticator gave the session (empty by default)."""

    @abc.abstractmethod
    def close(self) -> None:
        """Ask the cluster to close this session (a SERVICE_ACTION close, once the request is in the log)."""

    @property
    @abc.abstractmethod
    def is_closing(self) -> bool:
        """True once the close was asked for (reset when a new term starts with this member leading)."""

    @abc.abstractmethod
    def offer(self, buffer: Any, offset: int = 0, length: int = -1) -> int:
        """Send ``buffer[offset:offset + length]`` (all of it by default) to the client. Returns the new position,
        MOCKED_OFFER when not leading, or a negative Publication code (NOT_CONNECTED, BACK_PRESSURED,
        ADMIN_ACTION, CLOSED, MAX_POSITION_EXCEEDED)."""

    @abc.abstractmethod
    def offerv(self, vectors: Sequence[Any]) -> int:
        """As :meth:`offer`, the message gathered from the buffers in ``vectors``."""

    @abc.abstractmethod
    def try_claim(self, length: int, buffer_claim: BufferClaim) -> int:
        """Claim room for a message of ``length`` bytes: the session header fills the first 32 bytes of
        ``buffer_claim``, the message goes after it, then commit. Returns as :meth:`offer`."""


class ContainerClientSession(ClientSession):
    """The container's session: egress through the agent, which knows the role, term and cluster time."""

    __slots__ = ("_id", "_response_stream_id", "_response_channel", "_encoded_principal", "_agent",
                 "response_publication", "_is_closing")

    def __init__(self, cluster_session_id: int, response_stream_id: int, response_channel: str,
                 encoded_principal: bytes, agent: ClusteredServiceAgent) -> None:
        """A session as SessionOpenEvent (or a snapshot's ClientSession) describes it."""
        self._id = cluster_session_id
        self._response_stream_id = response_stream_id
        self._response_channel = response_channel
        self._encoded_principal = encoded_principal
        self._agent = agent
        self.response_publication: Any = None
        self._is_closing = False

    @property
    def id(self) -> int:
        """The cluster session id."""
        return self._id

    @property
    def response_stream_id(self) -> int:
        """The stream id of the client's egress."""
        return self._response_stream_id

    @property
    def response_channel(self) -> str:
        """The channel of the client's egress."""
        return self._response_channel

    @property
    def encoded_principal(self) -> bytes:
        """The principal the authenticator gave the session."""
        return self._encoded_principal

    def close(self) -> None:
        """Ask the cluster to close this session, if the service still knows it."""
        if self._agent.get_client_session(self._id) is not None:
            self._agent.close_client_session(self._id)

    @property
    def is_closing(self) -> bool:
        """True once the close was asked for."""
        return self._is_closing

    def offer(self, buffer: Any, offset: int = 0, length: int = -1) -> int:
        """Send a message to the client (see :meth:`ClientSession.offer`)."""
        return self._agent.egress.offer(self._id, self.response_publication, buffer, offset, length)

    def offerv(self, vectors: Sequence[Any]) -> int:
        """Send a gathered message to the client."""
        return self._agent.offerv_egress(self._id, self.response_publication, vectors)

    def try_claim(self, length: int, buffer_claim: BufferClaim) -> int:
        """Claim room for a message to the client."""
        return self._agent.try_claim_egress(self._id, self.response_publication, length, buffer_claim)

    def connect(self, aeron: Aeron) -> None:
        """Open the response publication (once); a failed registration is reported as a warning and leaves the
        session unconnected (its offers return NOT_CONNECTED)."""
        if self.response_publication is None:
            try:
                self.response_publication = aeron.add_publication(self._response_channel, self._response_stream_id)
            except RegistrationError as ex:
                self._agent.handle_error(ClusterError(f"failed to connect session response publication: {ex}"))

    def mark_closing(self) -> None:
        """The close request was sent."""
        self._is_closing = True

    def reset_closing(self) -> None:
        """A new term began with this member leading: the close may be asked for again."""
        self._is_closing = False

    def disconnect(self, error_handler: Any) -> None:
        """Close the response publication (errors go to ``error_handler``)."""
        publication, self.response_publication = self.response_publication, None
        if publication is not None:
            try:
                publication.close()
            except Exception as ex:
                error_handler(ex)

    def __str__(self) -> str:
        """Aeron's ``ClientSession{...}`` text (``encodedPrincipal`` as Java prints a byte array)."""
        principal = ", ".join(str(b - 256 if b > 127 else b) for b in self._encoded_principal)
        return (f"ClientSession{{id={self._id}, responseStreamId={self._response_stream_id}, "
                f"responseChannel='{self._response_channel}', encodedPrincipal=[{principal}], "
                f"responsePublication={_publication_text(self.response_publication)}, "
                f"isClosing={'true' if self._is_closing else 'false'}}}")

    __repr__ = __str__


def _publication_text(publication: Any) -> str:
    """A publication as Aeron's ``Publication.toString`` prints it (``null`` for none)."""
    if publication is None:
        return "null"
    closed = publication.is_closed
    return (f"Publication{{originalRegistrationId={publication.original_registration_id}, "
            f"registrationId={publication.registration_id}, isClosed={'true' if closed else 'false'}, "
            f"isConnected={'false' if closed or not publication.is_connected else 'true'}, "
            f"initialTermId={publication.initial_term_id}, termBufferLength={publication.term_buffer_length}, "
            f"sessionId={publication.session_id}, streamId={publication.stream_id}, "
            f"channel='{publication.channel}', position={CLOSED if closed else publication.position}}}")
