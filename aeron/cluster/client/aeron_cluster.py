# SPDX-License-Identifier: Apache-2.0
"""AeronCluster: the client of an Aeron Cluster (Aeron ``io.aeron.cluster.client.AeronCluster``), with its
``Context``, ``Configuration`` and ``AsyncConnect``.

A client opens a session with the cluster's leader (SessionConnectRequest on the ingress, answered on the client's
own egress subscription), then offers messages prefixed with a SessionMessageHeader, which the leader appends to the
replicated log for the clustered services, and polls the egress for what the services send back. It follows leader
changes by itself: a NewLeaderEvent moves the ingress to the new leader; a lost leader (the ingress publication no
longer connected, or the egress image gone) is waited for up to the new-leader timeout.

The handshake and the sends that retry (keep-alive, admin request, close) are written once as operations
(:data:`aeron.common.op.Op`): :class:`AeronCluster` drives them with the context's idle strategy, and
:mod:`aeron.aio.cluster` awaits the very same ones. ``offer``, ``try_claim`` and the egress polls never wait: they
return Publication-style codes (NOT_CONNECTED while the client looks for a leader, BACK_PRESSURED, ...) and work
counts. As in Aeron, an instance is not thread-safe: use it from one thread (or one event loop).
"""
from __future__ import annotations

import enum
import os
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias, TypedDict

from aeron._core.buffer_claim import BufferClaim
from aeron._core.codecs.cluster import (MESSAGE_HEADER_LENGTH, AdminRequestEncoder, AdminRequestType,
                                        ChallengeResponseEncoder, EventCode, SessionCloseRequestEncoder,
                                        SessionConnectRequestEncoder, SessionKeepAliveEncoder,
                                        SessionMessageHeaderEncoder)
from aeron._core.term_appender import CLOSED, MAX_POSITION_EXCEEDED, NOT_CONNECTED
from aeron._core.term_reader import COMMIT, CONTINUE
from aeron._core.two_buffer_offer import two_buffer_offer
from aeron.client.aeron import Aeron
from aeron.client.context import Context as AeronContext
from aeron.client.context import default_error_handler
from aeron.cluster.client.egress_adapter import ControlledEgressAdapter, EgressAdapter
from aeron.cluster.client.egress_listener import ControlledEgressListener, as_egress_listener
from aeron.cluster.client.egress_poller import EgressPoller
from aeron.cluster.client.errors import ClusterAuthenticationError, ClusterSessionClosedError, ClusterTimeoutError
from aeron.common import event_log
from aeron.common.agent import AgentInvoker, BackoffIdleStrategy, IdleStrategy
from aeron.common.channel_uri import ENDPOINT_PARAM_NAME, IPC_CHANNEL, REJOIN_PARAM_NAME, ChannelUri
from aeron.common.constants import NULL_VALUE
from aeron.common.errors import ClusterError, ConfigurationError, ErrorCode, IllegalStateError, RegistrationError
from aeron.common.op import Op, drive, run_agent_invokers
from aeron.common.security import CredentialsSupplier, NullCredentialsSupplier
from aeron.common.settings import Setting, SettingsTable, parse_duration_ns, parse_int, property_items
from aeron.common.version import __version__

if TYPE_CHECKING:
    from typing_extensions import Unpack     # typing's from Python 3.11; annotations only, never imported at run time

__all__ = ["AeronCluster", "ContextSettings", "AsyncConnect", "Configuration", "Context", "State", "MemberIngress", "connect_op",
           "parse_ingress_endpoints", "SESSION_HEADER_LENGTH", "NULL_VALUE"]

SEND_ATTEMPTS = 3               # tries of a keep-alive, admin request or close before giving up
FRAGMENT_LIMIT = 10             # fragments read by one egress poll
MAX_CLIENT_NAME_LENGTH = 100    # Aeron.Configuration.MAX_CLIENT_NAME_LENGTH
# ConsensusModule.Configuration.LEADER_HEARTBEAT_TIMEOUT_DEFAULT_NS, for a leader that does not send its own
# (SessionEvent before schema version 13); kept here so that the client loads no consensus module
LEADER_HEARTBEAT_TIMEOUT_DEFAULT_NS = 10_000_000_000

# the SessionMessageHeader (message header + block) before an application message's payload
SESSION_HEADER_LENGTH = MESSAGE_HEADER_LENGTH + SessionMessageHeaderEncoder.BLOCK_LENGTH

_nano_time = time.monotonic_ns


class Configuration(SettingsTable):
    """``AeronCluster.Configuration``: the client's protocol version and the ``aeron.cluster.*`` properties it
    reads, each with its default, its ``AERON_CLUSTER_*`` environment variable (upper case, ``.`` as ``_``) and its
    parser (``SETTINGS``)."""

    # the client-to-cluster protocol, sent in SessionConnectRequest; a cluster accepts major version 0 only
    PROTOCOL_MAJOR_VERSION = 0
    PROTOCOL_MINOR_VERSION = 3
    PROTOCOL_PATCH_VERSION = 0
    PROTOCOL_SEMANTIC_VERSION = (PROTOCOL_MAJOR_VERSION << 16) | (PROTOCOL_MINOR_VERSION << 8) | PROTOCOL_PATCH_VERSION

    MESSAGE_TIMEOUT_PROP_NAME = "aeron.cluster.message.timeout"
    MESSAGE_TIMEOUT_DEFAULT_NS = 5_000_000_000
    INGRESS_ENDPOINTS_PROP_NAME = "aeron.cluster.ingress.endpoints"
    INGRESS_ENDPOINTS_DEFAULT: str | None = None
    INGRESS_CHANNEL_PROP_NAME = "aeron.cluster.ingress.channel"
    INGRESS_CHANNEL_DEFAULT: str | None = None
    INGRESS_STREAM_ID_PROP_NAME = "aeron.cluster.ingress.stream.id"
    INGRESS_STREAM_ID_DEFAULT = 101
    EGRESS_CHANNEL_PROP_NAME = "aeron.cluster.egress.channel"
    EGRESS_CHANNEL_DEFAULT: str | None = None
    EGRESS_STREAM_ID_PROP_NAME = "aeron.cluster.egress.stream.id"
    EGRESS_STREAM_ID_DEFAULT = 102
    CLIENT_NAME_PROP_NAME = "aeron.cluster.client.name"
    CLIENT_NAME_DEFAULT = ""

    SETTINGS: tuple[Setting, ...] = (
        Setting("message_timeout_ns", MESSAGE_TIMEOUT_PROP_NAME, MESSAGE_TIMEOUT_DEFAULT_NS, parse_duration_ns),
        Setting("ingress_endpoints", INGRESS_ENDPOINTS_PROP_NAME, INGRESS_ENDPOINTS_DEFAULT),
        Setting("ingress_channel", INGRESS_CHANNEL_PROP_NAME, INGRESS_CHANNEL_DEFAULT),
        Setting("ingress_stream_id", INGRESS_STREAM_ID_PROP_NAME, INGRESS_STREAM_ID_DEFAULT, parse_int),
        Setting("egress_channel", EGRESS_CHANNEL_PROP_NAME, EGRESS_CHANNEL_DEFAULT),
        Setting("egress_stream_id", EGRESS_STREAM_ID_PROP_NAME, EGRESS_STREAM_ID_DEFAULT, parse_int),
        Setting("client_name", CLIENT_NAME_PROP_NAME, CLIENT_NAME_DEFAULT),
    )


# the Aeron client's own setting a cluster client context carries (Aeron's CommonContext.aeronDirectoryName)
_AERON_DIR = Setting("aeron_dir", "aeron.dir", None)
_SETTINGS: dict[str, Setting] = {s.attr: s for s in (*Configuration.SETTINGS, _AERON_DIR)}
_BY_PROPERTY: dict[str, Setting] = {s.prop: s for s in _SETTINGS.values()}


class ContextSettings(TypedDict, total=False):
    """The keyword settings of :class:`Context`, for the functions that pass them on (``AeronCluster.connect``,
    ``aeron.aio.cluster.connect``), so that a type checker holds those calls to the same names and types."""

    environ: Mapping[str, str] | None
    message_timeout_ns: int | None
    ingress_endpoints: str | None
    ingress_channel: str | None
    ingress_stream_id: int | None
    egress_channel: str | None
    egress_stream_id: int | None
    client_name: str | None
    aeron_dir: str | None
    new_leader_timeout_ns: int | None
    aeron: Aeron | None
    owns_aeron_client: bool | None
    idle_strategy: IdleStrategy | None
    credentials_supplier: CredentialsSupplier | None
    is_ingress_exclusive: bool | None
    error_handler: Callable[[BaseException], object] | None
    egress_listener: Any
    controlled_egress_listener: Any
    agent_invoker: AgentInvoker | None


class Context:
    """Settings of an :class:`AeronCluster` (Aeron ``AeronCluster.Context``).

    Each property setting comes from, in order: its default, its ``AERON_CLUSTER_*`` environment variable
    (``AERON_DIR`` for ``aeron_dir``), ``properties`` (Java names such as ``aeron.cluster.ingress.channel``, or
    ``key=value`` strings), then keywords:

    - ``ingress_channel`` (required; ``aeron:udp`` with ``ingress_endpoints``, a multicast channel, or
      ``aeron:ipc``) and ``ingress_stream_id`` (101); ``ingress_endpoints`` ``"0=host:port,1=host:port,..."``
      puts each member's endpoint into the ingress channel;
    - ``egress_channel`` (required, e.g. ``aeron:udp?endpoint=localhost:0``: port 0 takes a free port, and the
      cluster is told the one bound) and ``egress_stream_id`` (102);
    - ``message_timeout_ns`` (5 s): how long a connect, or a send that has to wait, may take;
    - ``client_name`` (sent in the connect request's client info), ``aeron_dir``.

    Other settings: ``new_leader_timeout_ns`` (how long to wait for a new leader after losing one; by default twice
    the leader heartbeat timeout the cluster announces), ``aeron`` (an :class:`aeron.Aeron` to use, else one is
    connected to ``aeron_dir`` and closed with the client; ``owns_aeron_client`` says whose it is),
    ``idle_strategy`` (waits of the sync client; by default backoff, or on a media driver of ours one that wakes
    when the egress brings the answer: ``Aeron.response_idle_strategy``), ``credentials_supplier``
    (``encoded_credentials()``, ``on_challenge(challenge)``), ``is_ingress_exclusive`` (an ExclusivePublication
    for ingress, True), ``error_handler(exc)`` (errors met while closing; by default printed to stderr, as
    Aeron's), ``egress_listener`` and ``controlled_egress_listener`` (what ``poll_egress`` and
    ``controlled_poll_egress`` deliver to: a listener or an ``on_message`` function), ``agent_invoker`` (invoked
    while waiting).
    """

    message_timeout_ns: int
    ingress_endpoints: str | None
    ingress_channel: str | None
    ingress_stream_id: int
    egress_channel: str | None
    egress_stream_id: int
    client_name: str
    aeron_dir: str | None

    def __init__(self, properties: Mapping[str, object] | Iterable[str] | None = None, *,
                 environ: Mapping[str, str] | None = None, message_timeout_ns: int | None = None,
                 ingress_endpoints: str | None = None, ingress_channel: str | None = None,
                 ingress_stream_id: int | None = None, egress_channel: str | None = None,
                 egress_stream_id: int | None = None, client_name: str | None = None, aeron_dir: str | None = None,
                 new_leader_timeout_ns: int | None = None, aeron: Aeron | None = None,
                 owns_aeron_client: bool | None = None, idle_strategy: IdleStrategy | None = None,
                 credentials_supplier: CredentialsSupplier | None = None, is_ingress_exclusive: bool | None = None,
                 error_handler: Callable[[BaseException], object] | None = None, egress_listener: Any = None,
                 controlled_egress_listener: Any = None, agent_invoker: AgentInvoker | None = None) -> None:
        """Defaults, then the environment, then ``properties``, then the keywords given (None: not given);
        ConfigurationError for an unknown property or a bad value. Every setting is a named keyword, so a type
        checker (and Python itself) refuses a misspelt one."""
        for setting in _SETTINGS.values():
            setattr(self, setting.attr, setting.default)
        self.new_leader_timeout_ns = NULL_VALUE
        self.idle_strategy: IdleStrategy | None = None
        self.aeron: Aeron | None = None
        self.owns_aeron_client = False
        self.credentials_supplier: CredentialsSupplier | None = None
        self.is_ingress_exclusive = True
        self.error_handler: Callable[[BaseException], object] | None = None
        self.egress_listener: Any = None
        self.controlled_egress_listener: Any = None
        self.agent_invoker: AgentInvoker | None = None
        self.is_concluded = False
        self._own_idle_strategy = False          # conclude() made it: close() releases its slot on the board
        environ = os.environ if environ is None else environ
        for setting in _SETTINGS.values():
            if environ.get(setting.env):
                setattr(self, setting.attr, setting.parse_text(environ[setting.env]))
        if properties is not None:
            self.update(properties)
        given = dict(
            message_timeout_ns=message_timeout_ns, ingress_endpoints=ingress_endpoints, ingress_channel=ingress_channel,
            ingress_stream_id=ingress_stream_id, egress_channel=egress_channel, egress_stream_id=egress_stream_id,
            client_name=client_name, aeron_dir=aeron_dir, new_leader_timeout_ns=new_leader_timeout_ns, aeron=aeron,
            owns_aeron_client=owns_aeron_client, idle_strategy=idle_strategy, credentials_supplier=credentials_supplier,
            is_ingress_exclusive=is_ingress_exclusive, error_handler=error_handler, egress_listener=egress_listener,
            controlled_egress_listener=controlled_egress_listener, agent_invoker=agent_invoker)
        for name, value in given.items():
            if value is not None:
                setattr(self, name, value)

    def update(self, properties: Mapping[str, object] | Iterable[str]) -> "Context":
        """Apply a mapping of Java property names (or attribute names), or ``key=value`` strings (``-D`` allowed)."""
        for key, value in property_items(properties):
            setting = _BY_PROPERTY.get(key) or _SETTINGS.get(key)
            if setting is None:
                raise ConfigurationError(f"unknown cluster client property {key!r}")
            setattr(self, setting.attr, setting.parse_text(value) if isinstance(value, str) else value)
        return self

    def conclude(self) -> "Context":
        """Validate, apply defaults and connect an Aeron client if none was given (``AeronCluster.Context.conclude``):
        ConfigurationError for a missing channel, ingress endpoints with IPC ingress, a bad timeout or a long
        client name; IllegalStateError when concluded twice. An egress over UDP gets ``rejoin=false``: a session's
        egress that went away is not to be joined again mid-stream."""
        if self.is_concluded:
            raise IllegalStateError("AeronCluster.Context already concluded")
        if self.ingress_endpoints == "":
            self.ingress_endpoints = None           # an empty property is no list (Java's default is null)
        if not self.ingress_channel:
            raise ConfigurationError("AeronCluster.Context.ingress_channel must be specified")
        if self.ingress_channel.startswith(IPC_CHANNEL) and self.ingress_endpoints is not None:
            raise ConfigurationError("AeronCluster.Context ingress_endpoints must be None when using IPC ingress")
        if not self.egress_channel:
            raise ConfigurationError("AeronCluster.Context.egress_channel must be specified")
        if not (self.new_leader_timeout_ns > 0 or self.new_leader_timeout_ns == NULL_VALUE):
            raise ConfigurationError(
                f"new_leader_timeout_ns must be positive or -1, but was {self.new_leader_timeout_ns}")
        if self.message_timeout_ns <= 0:
            raise ConfigurationError(f"message_timeout_ns must be positive, but was {self.message_timeout_ns}")
        if len(self.client_name) > MAX_CLIENT_NAME_LENGTH:
            raise ConfigurationError(f"AeronCluster.Context.client_name length must be <= {MAX_CLIENT_NAME_LENGTH}")
        if self.ingress_endpoints is not None:
            parse_ingress_endpoints(self, self.ingress_endpoints)       # fail now on a malformed list
        egress = ChannelUri.parse(self.egress_channel)
        if egress.is_udp:
            egress.put(REJOIN_PARAM_NAME, "false")
            self.egress_channel = str(egress)
        _parse_ingress_channel(self.ingress_channel)
        self.is_concluded = True
        if self.error_handler is None:
            self.error_handler = default_error_handler      # Aeron.Configuration.DEFAULT_ERROR_HANDLER: to stderr
        if self.aeron is None:
            self.aeron = Aeron.connect(AeronContext(self.aeron_dir, client_name=self.client_name or "cluster-client",
                                                    error_handler=self.error_handler))
            self.owns_aeron_client = True
        if self.idle_strategy is None:
            # Java's BackoffIdleStrategy(1, 10, 1000, 1000) parks 1 us at most; a Python sleep costs ~50 us whatever
            # it asks for, so the waits of these cold paths park up to 1 ms instead; on a driver of ours they wake
            # when the egress brings the answer (docs/wakeup.md)
            self.idle_strategy = self.aeron.response_idle_strategy(self.egress_stream_id,
                                                                   BackoffIdleStrategy(1, 10, 1_000, 1_000_000))
            self._own_idle_strategy = True
        if self.credentials_supplier is None:
            self.credentials_supplier = NullCredentialsSupplier()
        self.egress_listener = (as_egress_listener(self.egress_listener) if self.egress_listener is not None
                                else _MissingListener("egress_listener"))
        self.controlled_egress_listener = (
            as_egress_listener(self.controlled_egress_listener)
            if self.controlled_egress_listener is not None else _MissingListener("controlled_egress_listener"))
        return self

    def run_agent_invokers(self) -> int:
        """Invoke the Aeron client's conductor (when it has no thread) and ``agent_invoker``; the work done."""
        return run_agent_invokers(self.aeron, self.agent_invoker)

    def close(self) -> None:
        """Release the idle strategy :meth:`conclude` made, and close the Aeron client when this context owns it."""
        if self._own_idle_strategy:
            self._own_idle_strategy = False
            close_idle = getattr(self.idle_strategy, "close", None)
            if close_idle is not None:
                close_idle()
        if self.owns_aeron_client and self.aeron is not None and not self.aeron.is_closed:
            self.aeron.close()

    def __repr__(self) -> str:
        """The settings."""
        fields = ", ".join(f"{attr}={getattr(self, attr)!r}" for attr in _SETTINGS)
        return (f"AeronCluster.Context({fields}, new_leader_timeout_ns={self.new_leader_timeout_ns}, "
                f"is_ingress_exclusive={self.is_ingress_exclusive}, owns_aeron_client={self.owns_aeron_client})")


class _MissingListener(ControlledEgressListener):
    """The listener of a context that was given none: a message for it is a configuration error (as Aeron's
    Context.conclude makes it); events are ignored."""

    def __init__(self, name: str) -> None:
        self.name = name

    def on_message(self, cluster_session_id: int, timestamp: int, buffer: Any, offset: int, length: int,
                   header: Any) -> int:
        """Raise ConfigurationError."""
        raise ConfigurationError(f"{self.name} must be specified on AeronCluster.Context")


# -- ingress publications ---------------------------------------------------------------------------------------------

def _async_add_ingress_publication(ctx: Context, channel: str, stream_id: int) -> int:
    aeron = ctx.aeron
    assert aeron is not None
    if ctx.is_ingress_exclusive:
        return aeron.async_add_exclusive_publication(channel, stream_id)
    return aeron.async_add_publication(channel, stream_id)


def _get_ingress_publication(ctx: Context, registration_id: int) -> Any:
    aeron = ctx.aeron
    assert aeron is not None
    if ctx.is_ingress_exclusive:
        return aeron.get_exclusive_publication(registration_id)
    return aeron.get_publication(registration_id)


def _parse_ingress_channel(channel: str) -> ChannelUri:
    # a bare "aeron:udp" is the usual ingress channel with endpoints (Java's ChannelUri takes it, the members' endpoints
    # are put into it), though no channel a driver would take as it is
    return ChannelUri("udp") if channel == "aeron:udp" else ChannelUri.parse(channel)


def _member_channel(ctx: Context, endpoint: str) -> str:
    """The ingress channel aimed at one member: its endpoint put in when the channel is UDP."""
    assert ctx.ingress_channel is not None
    uri = _parse_ingress_channel(ctx.ingress_channel)
    if uri.is_udp:
        uri.put(ENDPOINT_PARAM_NAME, endpoint)
    return str(uri)


def _is_temporarily_unavailable(exc: RegistrationError) -> bool:
    # an endpoint of the same channel still closing (a client of the same channel just closed): the add is made
    # again, as AeronCluster.AsyncConnect does; any other refusal ends the attempt
    return exc.error_code == ErrorCode.RESOURCE_TEMPORARILY_UNAVAILABLE


class MemberIngress:
    """One member's ingress publication while connecting (Aeron ``AeronCluster.MemberIngress``)."""

    def __init__(self, ctx: Context, member_id: int, endpoint: str) -> None:
        """``endpoint`` is the member's ingress ``host:port``."""
        self.ctx = ctx
        self.member_id = member_id
        self.endpoint = endpoint
        self.registration_id = NULL_VALUE
        self.publication: Any = None
        self.publication_exception: RegistrationError | None = None

    def async_add_publication(self) -> None:
        """Ask the driver for the member's publication (answered by :meth:`async_get_publication`)."""
        self.registration_id = _async_add_ingress_publication(self.ctx, _member_channel(self.ctx, self.endpoint),
                                                              self.ctx.ingress_stream_id)
        self.publication = None

    def async_get_publication(self) -> None:
        """Take the driver's answer: the publication, or the refusal in ``publication_exception``."""
        try:
            self.publication = _get_ingress_publication(self.ctx, self.registration_id)
            if self.publication is not None:
                self.registration_id = NULL_VALUE
        except RegistrationError as exc:
            if not _is_temporarily_unavailable(exc):
                self.publication_exception = exc
            self.registration_id = NULL_VALUE

    def close(self) -> None:
        """Close the publication, or withdraw the add not yet answered."""
        if self.publication is not None:
            self.publication.close()
        elif self.registration_id != NULL_VALUE:
            assert self.ctx.aeron is not None
            self.ctx.aeron.async_remove_publication(self.registration_id)
        self.registration_id = NULL_VALUE
        self.publication = None

    def __repr__(self) -> str:
        """Member, endpoint and publication."""
        return f"MemberIngress(member_id={self.member_id}, endpoint={self.endpoint!r}, publication={self.publication!r})"


def parse_ingress_endpoints(ctx: Context, endpoints: str | None) -> dict[int, MemberIngress]:
    """``"0=host:port,1=host:port"`` as ``{member id: MemberIngress}`` (``AeronCluster.parseIngressEndpoints``);
    ConfigurationError for an entry without ``=`` or with a member id that is not a number."""
    members: dict[int, MemberIngress] = {}
    if endpoints is None:
        return members
    for entry in endpoints.split(","):
        member_id_text, sep, endpoint = entry.partition("=")
        if not sep:
            raise ConfigurationError(f"endpoint missing '=' separator: {endpoints}")
        try:
            member_id = int(member_id_text.strip())
        except ValueError:
            raise ConfigurationError(f"member id {member_id_text!r} is not a number: {endpoints}") from None
        members[member_id] = MemberIngress(ctx, member_id, endpoint.strip())
    return members


# -- connect ------------------------------------------------------------------------------------------------------

class AsyncConnect:
    """A connect in progress (Aeron ``AeronCluster.AsyncConnect``): each :meth:`poll` takes one step of the
    handshake and returns the connected :class:`AeronCluster` once done, else None; the steps' errors (ClusterError,
    ClusterAuthenticationError, ClusterTimeoutError after the message timeout, RegistrationError) are raised by
    :meth:`poll`. :meth:`close` releases what an unfinished connect made."""

    class State(enum.Enum):
        """The steps of the handshake, with Aeron's step numbers."""

        CREATE_EGRESS_SUBSCRIPTION = -1
        CREATE_INGRESS_PUBLICATIONS = 0
        AWAIT_PUBLICATION_CONNECTED = 1
        SEND_MESSAGE = 2
        POLL_RESPONSE = 3
        CONCLUDE_CONNECT = 4
        DONE = 5

    def __init__(self, ctx: Context, deadline_ns: int | None = None) -> None:
        """Start connecting with a concluded ``ctx``; the connect must be done by ``deadline_ns`` (monotonic, by
        default the message timeout from now). Use :meth:`AeronCluster.async_connect`."""
        if not ctx.is_concluded:
            raise IllegalStateError("AsyncConnect needs a concluded AeronCluster.Context")
        self.ctx = ctx
        self.deadline_ns = _nano_time() + ctx.message_timeout_ns if deadline_ns is None else deadline_ns
        self.state = AsyncConnect.State.CREATE_EGRESS_SUBSCRIPTION
        self._member_by_id = parse_ingress_endpoints(ctx, ctx.ingress_endpoints)
        self._egress_registration_id = NULL_VALUE
        self._egress_subscription: Any = None
        self._egress_poller: EgressPoller | None = None
        self._ingress_registration_id = NULL_VALUE
        self._ingress_publication: Any = None
        self._correlation_id = NULL_VALUE
        self._message = b""
        self._cluster_session_id = NULL_VALUE
        self._leadership_term_id = NULL_VALUE
        self._leader_member_id = NULL_VALUE
        self._leader_heartbeat_timeout_ns = NULL_VALUE
        self._egress_image: Any = None

    @property
    def step(self) -> int:
        """Aeron's number of the step reached (-1 to 5)."""
        return self.state.value

    @staticmethod
    def step_name(step: int) -> str:
        """The name of a step number, ``<unknown>`` for one out of range."""
        for state in AsyncConnect.State:
            if state.value == step:
                return state.name
        return "<unknown>"

    def poll(self) -> "AeronCluster | None":
        """Take one step: the client once connected, else None."""
        self._check_deadline()
        self.ctx.run_agent_invokers()
        state = self.state
        if state is AsyncConnect.State.CREATE_EGRESS_SUBSCRIPTION:
            self._create_egress_subscription()
        elif state is AsyncConnect.State.CREATE_INGRESS_PUBLICATIONS:
            self._create_ingress_publications()
        elif state is AsyncConnect.State.AWAIT_PUBLICATION_CONNECTED:
            self._await_publication_connected()
        elif state is AsyncConnect.State.SEND_MESSAGE:
            self._send_message()
        elif state is AsyncConnect.State.POLL_RESPONSE:
            self._poll_response()
        elif state is AsyncConnect.State.CONCLUDE_CONNECT:
            return self._conclude_connect()
        elif state is AsyncConnect.State.DONE:
            raise IllegalStateError("AsyncConnect is done: its client was returned")
        return None

    def close(self) -> None:
        """Release what an unfinished connect made (publications, the egress subscription, adds not yet answered)
        and close the context's own Aeron client. A finished connect's resources are the client's: nothing is
        done."""
        if self.state is AsyncConnect.State.DONE:
            return
        aeron = self.ctx.aeron
        assert aeron is not None
        errors: list[BaseException] = []

        def attempt(action: Callable[[], Any]) -> None:
            try:
                action()
            except Exception as exc:     # noqa: BLE001 - the remaining resources are still released
                errors.append(exc)

        if self._ingress_publication is not None:
            attempt(self._ingress_publication.close)
        elif self._ingress_registration_id != NULL_VALUE:
            attempt(lambda: aeron.async_remove_publication(self._ingress_registration_id))
        if self._egress_subscription is not None:
            attempt(self._egress_subscription.close)
        elif self._egress_registration_id != NULL_VALUE:
            attempt(lambda: aeron.async_remove_subscription(self._egress_registration_id))
        for member in self._member_by_id.values():
            attempt(member.close)
        self.state = AsyncConnect.State.DONE
        self._ingress_publication = None
        self._egress_subscription = None
        attempt(self.ctx.close)
        if errors and self.ctx.error_handler is not None:
            for exc in errors:
                self.ctx.error_handler(exc)

    # -- the steps ---------------------------------------------------------------------------------------------
    def _check_deadline(self) -> None:
        if self.deadline_ns - _nano_time() < 0:
            subscription = self._egress_subscription
            is_connected = subscription is not None and not subscription.is_closed and subscription.is_connected
            response_channel = (subscription.try_resolve_channel_endpoint_port() if subscription is not None
                                else "<unknown>")
            exc = ClusterTimeoutError(
                f"cluster connect timeout: state={self.state.name} "
                f"messageTimeout={self.ctx.message_timeout_ns / 1e9:g}s ingressChannel={self.ctx.ingress_channel} "
                f"ingressEndpoints={self.ctx.ingress_endpoints} ingressPublication={self._ingress_publication!r} "
                f"egress.isConnected={is_connected} responseChannel={response_channel}")
            for member in self._member_by_id.values():
                if member.publication_exception is not None and hasattr(exc, "add_note"):
                    exc.add_note(f"member {member.member_id} ({member.endpoint}): {member.publication_exception}")
            raise exc

    def _create_egress_subscription(self) -> None:
        aeron = self.ctx.aeron
        assert aeron is not None and self.ctx.egress_channel is not None
        if self._egress_registration_id == NULL_VALUE:
            self._egress_registration_id = aeron.async_add_subscription(self.ctx.egress_channel,
                                                                        self.ctx.egress_stream_id)
        try:
            self._egress_subscription = aeron.get_subscription(self._egress_registration_id)
        except RegistrationError as exc:
            self._egress_registration_id = NULL_VALUE
            if not _is_temporarily_unavailable(exc):
                raise
        if self._egress_subscription is not None:
            self._egress_poller = EgressPoller(self._egress_subscription, FRAGMENT_LIMIT)
            self._egress_registration_id = NULL_VALUE
            self.state = AsyncConnect.State.CREATE_INGRESS_PUBLICATIONS

    def _create_ingress_publications(self) -> None:
        ctx = self.ctx
        if ctx.ingress_endpoints is None:
            if self._ingress_publication is None:
                if self._ingress_registration_id == NULL_VALUE:
                    assert ctx.ingress_channel is not None
                    self._ingress_registration_id = _async_add_ingress_publication(ctx, ctx.ingress_channel,
                                                                                   ctx.ingress_stream_id)
                try:
                    self._ingress_publication = _get_ingress_publication(ctx, self._ingress_registration_id)
                except RegistrationError as exc:
                    self._ingress_registration_id = NULL_VALUE
                    if not _is_temporarily_unavailable(exc):
                        raise
            else:
                self._ingress_registration_id = NULL_VALUE
                self.state = AsyncConnect.State.AWAIT_PUBLICATION_CONNECTED
        else:
            self.state = AsyncConnect.State.AWAIT_PUBLICATION_CONNECTED

    def _await_publication_connected(self) -> None:
        response_channel = self._egress_subscription.try_resolve_channel_endpoint_port()
        if response_channel is None:
            return              # an ephemeral egress port not bound yet: the cluster must be told the real one
        if self._ingress_publication is None:
            for member in self._members_leader_first():
                if member.publication is None and member.publication_exception is None:
                    if member.registration_id == NULL_VALUE:
                        member.async_add_publication()
                    member.async_get_publication()
                if member.publication is not None and member.publication.is_connected:
                    self._ingress_publication = member.publication
                    self._prepare_connect_request(response_channel)
                    break
        elif self._ingress_publication.is_connected:
            self._prepare_connect_request(response_channel)

    def _members_leader_first(self) -> list[MemberIngress]:
        # after a redirect the leader is known: its publication is the one to use when several connect at once
        members = list(self._member_by_id.values())
        leader = self._member_by_id.get(self._leader_member_id)
        if leader is not None and members and members[0] is not leader:
            members.remove(leader)
            members.insert(0, leader)
        return members

    def _prepare_connect_request(self, response_channel: str) -> None:
        ctx = self.ctx
        aeron = ctx.aeron
        assert aeron is not None and ctx.credentials_supplier is not None      # both set by Context.conclude
        self._correlation_id = aeron.next_correlation_id()
        credentials = bytes(ctx.credentials_supplier.encoded_credentials() or b"")
        client_info = f"name={ctx.client_name} version={__version__}"
        channel = response_channel.encode("ascii")
        info = client_info.encode("ascii", "replace")
        buffer = bytearray(MESSAGE_HEADER_LENGTH + SessionConnectRequestEncoder.BLOCK_LENGTH + 12 + len(channel)
                           + len(credentials) + len(info))
        encoder = SessionConnectRequestEncoder().wrap_and_apply_header(buffer, 0)
        encoder.correlation_id = self._correlation_id
        encoder.response_stream_id = ctx.egress_stream_id
        encoder.version = Configuration.PROTOCOL_SEMANTIC_VERSION
        encoder.put_response_channel(channel)
        encoder.put_encoded_credentials(credentials)
        encoder.put_client_info(info)
        length = MESSAGE_HEADER_LENGTH + encoder.encoded_length
        encoder.release()
        self._message = bytes(buffer[:length])
        self.state = AsyncConnect.State.SEND_MESSAGE

    def _send_message(self) -> None:
        position = self._ingress_publication.offer(self._message)
        if position > 0:
            self.state = AsyncConnect.State.POLL_RESPONSE
        elif position == CLOSED or position == NOT_CONNECTED:
            raise ClusterError("unexpected loss of connection to cluster")

    def _poll_response(self) -> None:
        poller = self._egress_poller
        assert poller is not None
        if not (poller.poll() > 0 and poller.is_poll_complete and poller.correlation_id == self._correlation_id):
            return
        if poller.is_challenged:
            self._correlation_id = NULL_VALUE
            self._cluster_session_id = poller.cluster_session_id
            assert poller.encoded_challenge is not None and self.ctx.credentials_supplier is not None
            self._prepare_challenge_response(self.ctx.credentials_supplier.on_challenge(poller.encoded_challenge))
            return
        code = poller.event_code
        if code is EventCode.OK:
            self._leadership_term_id = poller.leadership_term_id
            self._leader_member_id = poller.leader_member_id
            self._cluster_session_id = poller.cluster_session_id
            self._leader_heartbeat_timeout_ns = poller.leader_heartbeat_timeout_ns
            self._egress_image = poller.egress_image
            self.state = AsyncConnect.State.CONCLUDE_CONNECT
        elif code is EventCode.ERROR:
            raise ClusterError(poller.detail)
        elif code is EventCode.REDIRECT:
            self._update_members()
        elif code is EventCode.AUTHENTICATION_REJECTED:
            raise ClusterAuthenticationError(poller.detail)

    def _prepare_challenge_response(self, encoded_credentials: bytes) -> None:
        aeron = self.ctx.aeron
        assert aeron is not None
        self._correlation_id = aeron.next_correlation_id()
        credentials = bytes(encoded_credentials or b"")
        buffer = bytearray(MESSAGE_HEADER_LENGTH + ChallengeResponseEncoder.BLOCK_LENGTH + 4 + len(credentials))
        encoder = ChallengeResponseEncoder().wrap_and_apply_header(buffer, 0)
        encoder.correlation_id = self._correlation_id
        encoder.cluster_session_id = self._cluster_session_id
        encoder.put_encoded_credentials(credentials)
        encoder.release()
        self._message = bytes(buffer)
        self.state = AsyncConnect.State.SEND_MESSAGE

    def _update_members(self) -> None:
        # a follower answered REDIRECT with the members' ingress endpoints: aim at the leader it named, keeping the
        # publication already made to it (AeronCluster.AsyncConnect.updateMembers)
        poller = self._egress_poller
        assert poller is not None
        self._leader_member_id = poller.leader_member_id
        old_leader = self._member_by_id.pop(self._leader_member_id, None)
        if self._ingress_publication is not None and (old_leader is None
                                                      or old_leader.publication is not self._ingress_publication):
            self._ingress_publication.close()
        self._ingress_publication = None
        for member in self._member_by_id.values():
            member.close()
        self._member_by_id = parse_ingress_endpoints(self.ctx, poller.detail)
        new_leader = self._member_by_id.get(self._leader_member_id)
        if new_leader is None:
            if old_leader is not None:
                old_leader.close()
            raise ClusterError(f"redirect names leader {self._leader_member_id} but not its ingress endpoint: "
                               f"{poller.detail!r}")
        if (old_leader is not None and old_leader.publication_exception is None
                and new_leader.endpoint == old_leader.endpoint):
            new_leader.publication = old_leader.publication
            new_leader.registration_id = old_leader.registration_id
            self._ingress_publication = old_leader.publication
        else:
            if old_leader is not None:
                old_leader.close()
            new_leader.async_add_publication()
        self.state = AsyncConnect.State.AWAIT_PUBLICATION_CONNECTED

    def _conclude_connect(self) -> "AeronCluster":
        ctx = self.ctx
        if ctx.new_leader_timeout_ns == NULL_VALUE:
            heartbeat_timeout_ns = (self._leader_heartbeat_timeout_ns if self._leader_heartbeat_timeout_ns != NULL_VALUE
                                    else LEADER_HEARTBEAT_TIMEOUT_DEFAULT_NS)
            ctx.new_leader_timeout_ns = 2 * heartbeat_timeout_ns
        leader = self._member_by_id.pop(self._leader_member_id, None)
        for member in self._member_by_id.values():
            if member.publication is not self._ingress_publication:
                member.close()
        if leader is not None and leader.publication is not self._ingress_publication:
            leader.close()
        cluster = AeronCluster(ctx, self._ingress_publication, self._egress_subscription, self._egress_image,
                               self._cluster_session_id, self._leadership_term_id, self._leader_member_id)
        self._ingress_publication = None
        self._egress_subscription = None
        self._member_by_id = {}
        self.state = AsyncConnect.State.DONE
        return cluster


def connect_op(ctx: Context) -> Op["AeronCluster"]:
    """The connect handshake as an operation over :class:`AsyncConnect`: yields 1 when a step moved the handshake
    on (0 while it waits) and returns the connected :class:`AeronCluster`. ``ctx`` must be concluded. On failure, or
    when the driver of the operation stops early, what the connect made is released (:meth:`AsyncConnect.close`)."""
    try:
        async_connect = AsyncConnect(ctx)
    except BaseException:
        ctx.close()
        raise
    try:
        while True:
            state = async_connect.state
            cluster = async_connect.poll()
            if cluster is not None:
                return cluster
            yield 1 if async_connect.state is not state else 0
    except BaseException:
        async_connect.close()
        raise


# -- the client ---------------------------------------------------------------------------------------------------

class State(enum.Enum):
    """The client's state (Aeron ``AeronCluster.State``)."""

    CONNECTED = "CONNECTED"                                       # the session is connected to a leader
    AWAIT_NEW_LEADER = "AWAIT_NEW_LEADER"                         # the leader was lost: waiting for a new one
    AWAIT_NEW_LEADER_CONNECTION = "AWAIT_NEW_LEADER_CONNECTION"   # told of a new leader: waiting for its ingress
    PENDING_CLOSE = "PENDING_CLOSE"                               # the session is over: closed by the next poll
    CLOSED = "CLOSED"                                             # closed; terminal


class _ClusterEgress(ControlledEgressAdapter):
    """The client's own egress dispatch: a CLOSED session event ends the session, a NewLeaderEvent moves the
    ingress (``AeronCluster.onFragment`` and ``onControlledFragment``)."""

    def __init__(self, cluster: "AeronCluster", listener: Any, controlled: bool) -> None:
        self._cluster = cluster
        self._controlled = controlled
        super().__init__(listener, cluster.cluster_session_id, cluster.egress_subscription, FRAGMENT_LIMIT)

    @staticmethod
    def _as_listener(listener: Any) -> Any:
        return listener         # already made a listener by Context.conclude

    def _make_assembler(self) -> Any:
        if self._controlled:
            return super()._make_assembler()
        return EgressAdapter._make_assembler(self)

    def poll(self) -> int:
        """One poll of the egress subscription, plain or controlled as this dispatcher was made."""
        if self._controlled:
            return super().poll()
        return EgressAdapter.poll(self)

    def _on_session_event(self, correlation_id: int, cluster_session_id: int, leadership_term_id: int,
                          leader_member_id: int, code: Any, detail: str) -> None:
        if code is EventCode.CLOSED:
            self._cluster._pending_close(ClusterSessionClosedError(f"session closed by the cluster: {detail}",
                                                                   detail))
        super()._on_session_event(correlation_id, cluster_session_id, leadership_term_id, leader_member_id, code,
                                  detail)

    def _on_new_leader(self, cluster_session_id: int, leadership_term_id: int, leader_member_id: int,
                       ingress_endpoints: str, header: Any) -> int:
        cluster = self._cluster
        image = cluster.egress_subscription.image_by_session_id(header.session_id)
        if image is not None:
            cluster._egress_image = image
        cluster.on_new_leader(cluster_session_id, leadership_term_id, leader_member_id, ingress_endpoints)
        return COMMIT if self._controlled else CONTINUE


class AeronCluster:
    """A connected session with the cluster (Aeron ``AeronCluster``); make one with :meth:`connect` (or
    :meth:`async_connect`). ``AeronCluster.Context``, ``AeronCluster.Configuration``, ``AeronCluster.AsyncConnect``
    and ``AeronCluster.State`` are this module's classes.

    Keep-alives are the application's to send, as in Aeron: a session with no ingress (messages or
    :meth:`send_keep_alive`) for the cluster's session timeout (10 s by default) is closed by the cluster. Poll the
    egress (:meth:`poll_egress` or :meth:`controlled_poll_egress`) often: it is how the client hears of new leaders
    and of the session's end.
    """

    SESSION_HEADER_LENGTH = SESSION_HEADER_LENGTH
    Context: TypeAlias = Context
    Configuration: TypeAlias = Configuration
    AsyncConnect: TypeAlias = AsyncConnect
    State: TypeAlias = State

    def __init__(self, ctx: Context, publication: Any, subscription: Any, egress_image: Any, cluster_session_id: int,
                 leadership_term_id: int, leader_member_id: int) -> None:
        """Made by :class:`AsyncConnect` once the session is open; use :meth:`connect`."""
        self.context = ctx
        self._publication = publication
        self._subscription = subscription
        self._egress_image = egress_image
        self._cluster_session_id = cluster_session_id
        self._leadership_term_id = leadership_term_id
        self._leader_member_id = leader_member_id
        self._member_by_id: dict[int, MemberIngress] = {}
        self._pending_registration_id = NULL_VALUE      # the new leader's ingress publication, not yet answered
        self._pending_channel = ""
        self._state = State.CONNECTED
        self._state_deadline_ns = 0
        self._close_error: ClusterError | None = None
        self._claim = BufferClaim()
        self._header_buffer = bytearray(SESSION_HEADER_LENGTH)
        self._header = SessionMessageHeaderEncoder().wrap_and_apply_header(self._header_buffer, 0)
        self._header.cluster_session_id = cluster_session_id
        self._header.leadership_term_id = leadership_term_id
        self._header.timestamp = 0          # not set by a client; the leader stamps the cluster time in the log
        self._keep_alive = SessionKeepAliveEncoder()
        self._admin_request = AdminRequestEncoder()
        self._close_request = SessionCloseRequestEncoder()
        self._egress = _ClusterEgress(self, ctx.egress_listener, controlled=False)
        self._controlled_egress = _ClusterEgress(self, ctx.controlled_egress_listener, controlled=True)

    # -- connect and close -----------------------------------------------------------------------------------------
    @classmethod
    def connect(cls, context: Context | None = None, **settings: Unpack[ContextSettings]) -> "AeronCluster":
        """Connect to the cluster named by ``context`` (or a Context made from ``settings``), waiting up to the
        message timeout: ClusterTimeoutError, or the cluster's ClusterError / ClusterAuthenticationError."""
        ctx = _context(context, settings)
        ctx.conclude()
        assert ctx.idle_strategy is not None
        return drive(connect_op(ctx), ctx.idle_strategy)

    @classmethod
    def async_connect(cls, context: Context | None = None, **settings: Unpack[ContextSettings]) -> AsyncConnect:
        """Start connecting without blocking: call ``poll()`` on the result in your duty cycle until it returns the
        client, ``close()`` it on failure (Java's ``AeronCluster.asyncConnect``)."""
        ctx = _context(context, settings)
        ctx.conclude()
        try:
            return AsyncConnect(ctx)
        except BaseException:
            ctx.close()
            raise

    def close(self) -> None:
        """Close the session (SessionCloseRequest when connected to a leader, up to three tries), the ingress
        publication and egress subscription, and the Aeron client when the context owns it. Idempotent."""
        assert self.context.idle_strategy is not None
        drive(self.close_op(), self.context.idle_strategy)

    def close_op(self) -> Op[None]:
        """Operation of :meth:`close`: yields 0 between the tries of the SessionCloseRequest."""
        if self._state is State.CLOSED:
            return
        publication = self._publication
        if self._state is State.CONNECTED and publication is not None and publication.is_connected:
            try:
                yield from self._send_op(MESSAGE_HEADER_LENGTH + SessionCloseRequestEncoder.BLOCK_LENGTH,
                                         self._encode_close_request, raise_on_closed=False)
            except ClusterError as exc:
                self._report(exc)
        self._release()

    def _release(self) -> None:
        ctx = self.context
        if not ctx.owns_aeron_client:
            for resource in (self._subscription, self._publication):
                if resource is not None:
                    try:
                        resource.close()
                    except Exception as exc:   # noqa: BLE001 - closing carries on; reported
                        self._report(exc)
            if self._pending_registration_id != NULL_VALUE:
                assert ctx.aeron is not None
                ctx.aeron.async_remove_publication(self._pending_registration_id)
        self._pending_registration_id = NULL_VALUE
        self._publication = None
        self._set_state(State.CLOSED, 0)
        self._header.release()
        ctx.close()

    def _report(self, exc: BaseException) -> None:
        if self.context.error_handler is not None:
            self.context.error_handler(exc)

    def __enter__(self) -> "AeronCluster":
        """Return the client; the ``with`` block closes it."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the client."""
        self.close()

    def __repr__(self) -> str:
        """Session, leader and state."""
        return (f"<AeronCluster cluster_session_id={self._cluster_session_id} "
                f"leadership_term_id={self._leadership_term_id} leader_member_id={self._leader_member_id} "
                f"state={self._state.name}>")

    # -- identity and state ------------------------------------------------------------------------------------------
    @property
    def cluster_session_id(self) -> int:
        """The cluster's id of this session."""
        return self._cluster_session_id

    @property
    def leadership_term_id(self) -> int:
        """The leadership term this client knows of; it moves on with each new leader."""
        return self._leadership_term_id

    @property
    def leader_member_id(self) -> int:
        """The member id of the leader this client knows of."""
        return self._leader_member_id

    @property
    def ingress_publication(self) -> Any:
        """The ingress Publication (None while the client looks for a leader). Offers made on it directly need the
        session header (:class:`IngressSessionDecorator`) and their results given to
        :meth:`track_ingress_publication_result`."""
        return self._publication

    @property
    def egress_subscription(self) -> Any:
        """The egress Subscription (an :class:`EgressAdapter` decodes it)."""
        return self._subscription

    @property
    def egress_listener_extension(self) -> Any:
        """Receives :meth:`poll_egress`'s messages of other schemas (an ``EgressListenerExtension``); without one
        such a message raises ClusterError."""
        return self._egress.listener_extension

    @egress_listener_extension.setter
    def egress_listener_extension(self, extension: Any) -> None:
        self._egress.listener_extension = extension

    @property
    def controlled_egress_listener_extension(self) -> Any:
        """As :attr:`egress_listener_extension`, for :meth:`controlled_poll_egress`."""
        return self._controlled_egress.listener_extension

    @controlled_egress_listener_extension.setter
    def controlled_egress_listener_extension(self, extension: Any) -> None:
        self._controlled_egress.listener_extension = extension

    @property
    def state(self) -> State:
        """The client's :class:`State`."""
        return self._state

    @property
    def is_closed(self) -> bool:
        """True once closed: by :meth:`close`, by the cluster (SessionEvent CLOSED) or after losing the cluster."""
        return self._state is State.CLOSED

    @property
    def close_error(self) -> ClusterError | None:
        """Why the client closed when it was not :meth:`close` that did it: ClusterSessionClosedError (closed by the
        cluster, ``reason`` its detail), ClusterTimeoutError (no new leader within the new-leader timeout, or its
        ingress not connected within the message timeout); None otherwise."""
        return self._close_error

    def _set_state(self, state: State, deadline_ns: int) -> None:
        if event_log.ENABLED and state is not self._state:
            event_log.log_event(f"client-{self._cluster_session_id}", "STATE_CHANGE",
                                f"{self._state.name} -> {state.name} leadershipTermId={self._leadership_term_id} "
                                f"leaderMemberId={self._leader_member_id}")
        awaiting = state is State.AWAIT_NEW_LEADER_CONNECTION
        if awaiting is not (self._state is State.AWAIT_NEW_LEADER_CONNECTION) and self.context.aeron is not None:
            # the ingress to the new leader connects with no signal to the thread that offers: its parks kept within
            # 1 ms meanwhile (Aeron.hold_brief_parks), where Java's client offers after a backoff park of 1 ms at most
            self.context.aeron.hold_brief_parks(awaiting)
        self._state = state
        self._state_deadline_ns = deadline_ns

    def _pending_close(self, reason: ClusterError) -> None:
        if self._close_error is None:
            self._close_error = reason
        self._set_state(State.PENDING_CLOSE, 0)

    # -- ingress --------------------------------------------------------------------------------------------------
    def offer(self, buffer: Any, offset: int = 0, length: int = -1) -> int:
        """Offer ``buffer[offset:offset + length]`` (``length=-1``: to the end) to the cluster, after this session's
        header, as one message; the payload is not copied. Returns the new ingress position (> 0), or
        NOT_CONNECTED (no leader yet: also while the client looks for a new one), BACK_PRESSURED, ADMIN_ACTION,
        CLOSED (the client is closed) or MAX_POSITION_EXCEEDED; never raises for those."""
        publication = self._publication
        if publication is None:
            return self._offer_without_publication()
        result = two_buffer_offer(publication, self._header_buffer, 0, SESSION_HEADER_LENGTH, buffer, offset, length)
        if result < 0 or self._state is not State.CONNECTED:
            self.track_ingress_publication_result(result)
        return result

    def offerv(self, buffers: list[Any]) -> int:
        """Offer the concatenation of ``buffers`` as one message; ``buffers[0]`` is replaced by the session header,
        so leave it unused (Java's ``offer(DirectBufferVector[])``). Returns as :meth:`offer`."""
        publication = self._publication
        if publication is None:
            return self._offer_without_publication()
        buffers[0] = self._header_buffer
        result = publication.offerv(buffers)
        self.track_ingress_publication_result(result)
        return result       # type: ignore[no-any-return]

    def try_claim(self, length: int, buffer_claim: BufferClaim) -> int:
        """Claim room for a message of ``length`` bytes after the session header, which is written at the start of
        the claim: write the message at ``SESSION_HEADER_LENGTH`` into the claim, then ``commit()`` (or
        ``abort()``). Returns as :meth:`offer`."""
        publication = self._publication
        if publication is None:
            return self._offer_without_publication()
        result = publication.try_claim(length + SESSION_HEADER_LENGTH, buffer_claim)
        self.track_ingress_publication_result(result)
        if result > 0:
            buffer_claim.put_bytes(self._header_buffer, 0)
        return result       # type: ignore[no-any-return]

    def _offer_without_publication(self) -> int:
        if self._state is State.CLOSED:
            return CLOSED
        if self._pending_registration_id != NULL_VALUE:
            self._poll_new_leader_publication()
        return NOT_CONNECTED

    def send_keep_alive(self) -> bool:
        """Tell the cluster this session is alive (SessionKeepAlive), up to three tries: True when sent, False when
        back pressured or not connected (during a leader change: keep polling the egress). Raises ClusterError at
        the ingress's maximum position."""
        assert self.context.idle_strategy is not None
        return drive(self.send_keep_alive_op(), self.context.idle_strategy)

    def send_keep_alive_op(self) -> Op[bool]:
        """Operation of :meth:`send_keep_alive`: yields 0 between the tries."""
        return (yield from self._send_op(MESSAGE_HEADER_LENGTH + SessionKeepAliveEncoder.BLOCK_LENGTH,
                                         self._encode_keep_alive, raise_on_closed=False))

    def send_admin_request_to_take_a_snapshot(self, correlation_id: int) -> bool:
        """Ask the cluster to take a snapshot (AdminRequest SNAPSHOT; the cluster's authorisation must allow it),
        up to three tries: True when sent. The answer comes as an admin response on the egress
        (``EgressListener.on_admin_response`` with ``correlation_id``). Raises ClusterError when the ingress is
        closed or at its maximum position."""
        assert self.context.idle_strategy is not None
        return drive(self.send_admin_request_to_take_a_snapshot_op(correlation_id), self.context.idle_strategy)

    def send_admin_request_to_take_a_snapshot_op(self, correlation_id: int) -> Op[bool]:
        """Operation of :meth:`send_admin_request_to_take_a_snapshot`: yields 0 between the tries."""
        def encode(claim: BufferClaim) -> None:
            encoder = self._admin_request.wrap_and_apply_header(claim, 0)
            encoder.leadership_term_id = self._leadership_term_id
            encoder.cluster_session_id = self._cluster_session_id
            encoder.correlation_id = correlation_id
            encoder.request_type = AdminRequestType.SNAPSHOT
            encoder.put_payload(b"")
            encoder.release()

        return (yield from self._send_op(MESSAGE_HEADER_LENGTH + AdminRequestEncoder.BLOCK_LENGTH + 4, encode,
                                         raise_on_closed=True))

    def _encode_keep_alive(self, claim: BufferClaim) -> None:
        encoder = self._keep_alive.wrap_and_apply_header(claim, 0)
        encoder.leadership_term_id = self._leadership_term_id
        encoder.cluster_session_id = self._cluster_session_id
        encoder.release()

    def _encode_close_request(self, claim: BufferClaim) -> None:
        encoder = self._close_request.wrap_and_apply_header(claim, 0)
        encoder.leadership_term_id = self._leadership_term_id
        encoder.cluster_session_id = self._cluster_session_id
        encoder.release()

    def _send_op(self, length: int, encode: Callable[[BufferClaim], None], raise_on_closed: bool) -> Op[bool]:
        # a control message claimed and written in place, tried SEND_ATTEMPTS times (AeronCluster.sendKeepAlive)
        attempts = SEND_ATTEMPTS
        claim = self._claim
        while True:
            publication = self._publication
            if publication is None:
                position = CLOSED if self._state is State.CLOSED else NOT_CONNECTED
            else:
                position = publication.try_claim(length, claim)
            self.track_ingress_publication_result(position)
            if position > 0:
                try:
                    encode(claim)
                except BaseException:
                    claim.abort()
                    raise
                claim.commit()
                return True
            if raise_on_closed and position == CLOSED:
                raise ClusterError("ingress publication is closed")
            if position == MAX_POSITION_EXCEEDED:
                term_length = publication.term_buffer_length if publication is not None else 0
                raise ClusterError(f"max position exceeded: term-length={term_length}")
            attempts -= 1
            if attempts <= 0:
                return False
            yield 0

    def track_ingress_publication_result(self, result: int) -> None:
        """Follow the ingress's state from an offer or claim result (``AeronCluster.trackIngressPublicationResult``):
        NOT_CONNECTED or CLOSED while connected starts waiting for a new leader; a result > 0 after a new leader
        was announced means its ingress is connected. The client's own sends call this; an application offering to
        :attr:`ingress_publication` directly must too."""
        state = self._state
        if state is State.CONNECTED:
            if result == NOT_CONNECTED or result == CLOSED:
                self._on_disconnected()
            elif result == MAX_POSITION_EXCEEDED:
                if self._publication is not None:
                    self._publication.close()
                    self._publication = None
                self._pending_close(ClusterSessionClosedError("ingress publication reached its maximum position",
                                                              "MAX_POSITION_EXCEEDED"))
        elif state is State.AWAIT_NEW_LEADER_CONNECTION and result > 0:
            self._set_state(State.CONNECTED, 0)

    def _on_disconnected(self) -> None:
        if self._publication is not None:
            self._publication.close()
            self._publication = None
        self._set_state(State.AWAIT_NEW_LEADER, _nano_time() + self.context.new_leader_timeout_ns)

    # -- egress ---------------------------------------------------------------------------------------------------
    def poll_egress(self) -> int:
        """Deliver up to 10 egress fragments of this session to ``context.egress_listener`` and follow the
        session's state (new leader, lost leader, end of session). Returns the work done (0: nothing)."""
        return self._poll(self._egress)

    def controlled_poll_egress(self) -> int:
        """As :meth:`poll_egress`, delivering to ``context.controlled_egress_listener``, whose ``on_message``
        returns a ControlledPollAction."""
        return self._poll(self._controlled_egress)

    def _poll(self, egress: _ClusterEgress) -> int:
        if self._state is State.CLOSED:
            return 0
        work = egress.poll()
        image = self._egress_image
        if (image is not None and image.is_closed
                and (self._state is State.CONNECTED or self._state is State.AWAIT_NEW_LEADER_CONNECTION)):
            self._on_disconnected()
            work += 1
        return work + self.poll_state_changes()

    def poll_state_changes(self) -> int:
        """Act on a state change that is due: close a session that ended, or whose new leader did not come in time;
        take the new leader's ingress publication once the driver made it. Called by the egress polls; call it
        yourself when you poll :attr:`egress_subscription` with your own adapter. Returns the work done."""
        state = self._state
        if state is State.CONNECTED:
            return 0
        if state is State.PENDING_CLOSE:
            self.close()
            return 1
        if state is State.AWAIT_NEW_LEADER or state is State.AWAIT_NEW_LEADER_CONNECTION:
            if _nano_time() - self._state_deadline_ns >= 0:
                if self._close_error is None:
                    self._close_error = self._timeout_error(state)
                self.close()
                return 1
            if self._pending_registration_id != NULL_VALUE:
                return self._poll_new_leader_publication()
        return 0

    def _timeout_error(self, state: State) -> ClusterTimeoutError:
        ctx = self.context
        if state is State.AWAIT_NEW_LEADER:
            return ClusterTimeoutError(f"no new leader within the new leader timeout "
                                       f"{ctx.new_leader_timeout_ns / 1e9:g}s (leadershipTermId="
                                       f"{self._leadership_term_id})")
        return ClusterTimeoutError(f"ingress to new leader {self._leader_member_id} not connected within the message "
                                   f"timeout {ctx.message_timeout_ns / 1e9:g}s (leadershipTermId="
                                   f"{self._leadership_term_id}, channel={self._pending_channel or None})")

    def on_new_leader(self, cluster_session_id: int, leadership_term_id: int, leader_member_id: int,
                      ingress_endpoints: str) -> None:
        """Follow a new leader (``AeronCluster.onNewLeader``): its term goes in the session header, the ingress moves
        to it (by ``ingress_endpoints`` when the context has endpoints, else the ingress channel) and the listeners
        are told. The egress polls call this on a NewLeaderEvent; call it yourself when you decode the egress with
        your own :class:`EgressAdapter` or :class:`EgressPoller`. ClusterError for another session's event."""
        if cluster_session_id != self._cluster_session_id:
            raise ClusterError(f"invalid clusterSessionId={cluster_session_id} expected={self._cluster_session_id}")
        ctx = self.context
        self._set_state(State.AWAIT_NEW_LEADER_CONNECTION, _nano_time() + ctx.message_timeout_ns)
        self._leadership_term_id = leadership_term_id
        self._leader_member_id = leader_member_id
        self._header.leadership_term_id = leadership_term_id
        if self._publication is not None:
            self._publication.close()
            self._publication = None
        self._abandon_pending_publication()
        if ctx.ingress_endpoints is None:
            assert ctx.ingress_channel is not None
            self._add_new_leader_ingress_publication(ctx.ingress_channel)
        else:
            ctx.ingress_endpoints = ingress_endpoints
            self._update_member_endpoints(ingress_endpoints, leader_member_id)
        self._egress.clear()
        self._controlled_egress.clear()
        ctx.egress_listener.on_new_leader(cluster_session_id, leadership_term_id, leader_member_id, ingress_endpoints)
        ctx.controlled_egress_listener.on_new_leader(cluster_session_id, leadership_term_id, leader_member_id,
                                                     ingress_endpoints)

    def _update_member_endpoints(self, ingress_endpoints: str, leader_member_id: int) -> None:
        for member in self._member_by_id.values():
            member.close()
        self._member_by_id = parse_ingress_endpoints(self.context, ingress_endpoints)
        new_leader = self._member_by_id.get(leader_member_id)
        if new_leader is None:
            raise ClusterError(f"new leader {leader_member_id} has no ingress endpoint in {ingress_endpoints!r}")
        self._add_new_leader_ingress_publication(_member_channel(self.context, new_leader.endpoint))

    def _add_new_leader_ingress_publication(self, channel: str) -> None:
        # Java waits here, inside pollEgress, for the driver to make the publication; this client asks and goes on,
        # taking the publication at a later poll (offers meanwhile return NOT_CONNECTED), so that no poll blocks
        # (the asyncio face polls on the loop); the state's deadline bounds both the same
        self._pending_channel = channel
        self._pending_registration_id = _async_add_ingress_publication(self.context, channel,
                                                                       self.context.ingress_stream_id)

    def _poll_new_leader_publication(self) -> int:
        ctx = self.context
        try:
            publication = _get_ingress_publication(ctx, self._pending_registration_id)
        except RegistrationError as exc:
            self._pending_registration_id = NULL_VALUE
            if not _is_temporarily_unavailable(exc):
                raise
            self._add_new_leader_ingress_publication(self._pending_channel)
            return 0
        if publication is None:
            return 0
        self._pending_registration_id = NULL_VALUE
        self._publication = publication
        member = self._member_by_id.get(self._leader_member_id)
        if member is not None:
            member.publication = publication
        return 1

    def _abandon_pending_publication(self) -> None:
        if self._pending_registration_id != NULL_VALUE:
            assert self.context.aeron is not None
            self.context.aeron.async_remove_publication(self._pending_registration_id)
            self._pending_registration_id = NULL_VALUE


def _context(context: Context | None, settings: ContextSettings) -> Context:
    if context is None:
        return Context(**settings)
    if settings:
        raise IllegalStateError("pass either a Context or keyword settings, not both")
    return context
