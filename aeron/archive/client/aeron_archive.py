# SPDX-License-Identifier: Apache-2.0
"""AeronArchive: the archive client (Aeron ``AeronArchive``), its Context and AsyncConnect.

Every request is written once, as an operation (:data:`aeron.common.op.Op`): a generator that sends the request,
polls the control response stream for the answer and yields 0 whenever it has to wait. Each request method
``x`` has its operation ``x_op`` with the same arguments, published as the contract between the protocol and
the client's faces:

- :class:`AeronArchive` itself runs ``x_op`` to completion under its lock, idling with the context's idle
  strategy (and invoking the Aeron client's conductor when it has no thread): ``archive.start_recording(...)``
  is ``drive(archive.start_recording_op(...), ...)``;
- :mod:`aeron.aio.archive` awaits between the steps of the very same operations, under an asyncio lock;
- an application's own duty cycle may step one with ``next(op)`` (one operation at a time per client).

So the sync and the asyncio faces share every byte of protocol handling; see :mod:`aeron.common.op`.
"""
from __future__ import annotations

import dataclasses
import enum
import inspect
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar, overload

from aeron._core.codecs import archive as codecs
from aeron.archive.client.archive_proxy import ArchiveProxy, ReplayParams, ReplicationParams
from aeron.archive.client.handlers import AgentInvoker, CredentialsSupplier, ImageHandler
from aeron.archive.client.pollers import (ControlResponsePoller, RecordingDescriptorPoller, RecordingSignalConsumer,
                                          RecordingSignalEvent, RecordingSubscriptionDescriptor,
                                          RecordingSubscriptionDescriptorPoller)
from aeron.archive.configuration import (CLIENT_NAME_PROP_NAME, CONTROL_CHANNEL_PROP_NAME, CONTROL_MTU_LENGTH_DEFAULT,
                                         CONTROL_MTU_LENGTH_PROP_NAME, CONTROL_RESPONSE_CHANNEL_PROP_NAME,
                                         CONTROL_RESPONSE_STREAM_ID_DEFAULT, CONTROL_RESPONSE_STREAM_ID_PROP_NAME,
                                         CONTROL_STREAM_ID_DEFAULT, CONTROL_STREAM_ID_PROP_NAME,
                                         CONTROL_TERM_BUFFER_LENGTH_DEFAULT, CONTROL_TERM_BUFFER_LENGTH_PROP_NAME,
                                         CONTROL_TERM_BUFFER_SPARSE_DEFAULT, CONTROL_TERM_BUFFER_SPARSE_PROP_NAME,
                                         MAX_CLIENT_NAME_LENGTH, MESSAGE_RETRY_ATTEMPTS_DEFAULT,
                                         MESSAGE_RETRY_ATTEMPTS_PROP_NAME, MESSAGE_TIMEOUT_DEFAULT_NS,
                                         MESSAGE_TIMEOUT_PROP_NAME, NOT_CONNECTED_MSG, NULL_POSITION, NULL_VALUE,
                                         PROTOCOL_VERSION_WITH_ARCHIVE_ID, RECORDING_EVENTS_CHANNEL_PROP_NAME,
                                         RECORDING_EVENTS_STREAM_ID_DEFAULT, RECORDING_EVENTS_STREAM_ID_PROP_NAME,
                                         REPLAY_ALL_AND_FOLLOW)
from aeron.archive.errors import ArchiveError, ArchiveErrorCode, ArchiveTimeoutError, archive_error
from aeron.archive.recording_descriptor import RecordingDescriptor
from aeron.archive.segments import segment_file_base_position
from aeron.client.aeron import Aeron
from aeron.client.context import Context as AeronContext
from aeron.common.agent import BackoffIdleStrategy, IdleStrategy
from aeron.common.channel_uri import (CONTROL_MODE_RESPONSE, INITIAL_TERM_ID_PARAM_NAME, MDC_CONTROL_MODE_PARAM_NAME,
                                      MTU_LENGTH_PARAM_NAME, RESPONSE_CORRELATION_ID_PARAM_NAME, SESSION_ID_PARAM_NAME,
                                      SPARSE_PARAM_NAME, SPIES_SIMULATE_CONNECTION_PARAM_NAME, TERM_ID_PARAM_NAME,
                                      TERM_LENGTH_PARAM_NAME, TERM_OFFSET_PARAM_NAME, ChannelUri)
from aeron.common.errors import ConfigurationError, ErrorCode, IllegalStateError, RegistrationError
from aeron.common.op import Op, drive, run_agent_invokers
from aeron.common.security import NullCredentialsSupplier
from aeron.common.settings import Setting, parse_bool, parse_duration_ns, parse_int, parse_size, property_items
from aeron.common.version import __version__

if TYPE_CHECKING:
    from typing_extensions import Unpack     # typing's from Python 3.11; annotations only, never imported at run time

T = TypeVar("T")


class SourceLocation(enum.IntEnum):
    """Where the recorded publication is: LOCAL records through a spy of the archive's driver, REMOTE through
    the network."""

    LOCAL = 0
    REMOTE = 1


class State(enum.Enum):
    """A client's state: CONNECTED until the response stream is lost (DISCONNECTED) or :meth:`close` (CLOSED)."""

    CONNECTED = "CONNECTED"
    DISCONNECTED = "DISCONNECTED"
    CLOSED = "CLOSED"


def is_response_channel(channel: str) -> bool:
    """True for a ``control-mode=response`` channel (replays to it go over the response channel)."""
    return ChannelUri.parse(channel).get(MDC_CONTROL_MODE_PARAM_NAME) == CONTROL_MODE_RESPONSE


def replay_image_session_id(replay_session_id: int) -> int:
    """The session id of a replay's image: the low 32 bits of the replay session id, as a signed int32."""
    low = replay_session_id & 0xFFFF_FFFF
    return low - (1 << 32) if low & 0x8000_0000 else low


# the settings by attribute (aeron.common.settings: property, variable, default, parser)
_SETTINGS: dict[str, Setting] = {s.attr: s for s in (
    Setting("control_request_channel", CONTROL_CHANNEL_PROP_NAME, None),
    Setting("control_request_stream_id", CONTROL_STREAM_ID_PROP_NAME, CONTROL_STREAM_ID_DEFAULT, parse_int),
    Setting("control_response_channel", CONTROL_RESPONSE_CHANNEL_PROP_NAME, None),
    Setting("control_response_stream_id", CONTROL_RESPONSE_STREAM_ID_PROP_NAME, CONTROL_RESPONSE_STREAM_ID_DEFAULT,
            parse_int),
    Setting("recording_events_channel", RECORDING_EVENTS_CHANNEL_PROP_NAME, None),
    Setting("recording_events_stream_id", RECORDING_EVENTS_STREAM_ID_PROP_NAME, RECORDING_EVENTS_STREAM_ID_DEFAULT,
            parse_int),
    Setting("message_timeout_ns", MESSAGE_TIMEOUT_PROP_NAME, MESSAGE_TIMEOUT_DEFAULT_NS, parse_duration_ns),
    Setting("message_retry_attempts", MESSAGE_RETRY_ATTEMPTS_PROP_NAME, MESSAGE_RETRY_ATTEMPTS_DEFAULT, parse_int),
    Setting("control_term_buffer_length", CONTROL_TERM_BUFFER_LENGTH_PROP_NAME, CONTROL_TERM_BUFFER_LENGTH_DEFAULT,
            parse_size),
    Setting("control_term_buffer_sparse", CONTROL_TERM_BUFFER_SPARSE_PROP_NAME, CONTROL_TERM_BUFFER_SPARSE_DEFAULT,
            parse_bool),
    Setting("control_mtu_length", CONTROL_MTU_LENGTH_PROP_NAME, CONTROL_MTU_LENGTH_DEFAULT, parse_size),
    Setting("client_name", CLIENT_NAME_PROP_NAME, ""),
    Setting("aeron_dir", "aeron.dir", None),
)}
_BY_PROPERTY = {s.prop: attr for attr, s in _SETTINGS.items()}


class ContextSettings(TypedDict, total=False):
    """The keyword settings of :class:`Context`, for the functions that pass them on (``AeronArchive.connect``,
    ``aeron.aio.archive.connect``), so that a type checker holds those calls to the same names and types."""

    environ: Mapping[str, str] | None
    control_request_channel: str | None
    control_request_stream_id: int | None
    control_response_channel: str | None
    control_response_stream_id: int | None
    recording_events_channel: str | None
    recording_events_stream_id: int | None
    message_timeout_ns: int | None
    message_retry_attempts: int | None
    control_term_buffer_length: int | None
    control_term_buffer_sparse: bool | None
    control_mtu_length: int | None
    client_name: str | None
    aeron_dir: str | None
    aeron: Aeron | None
    owns_aeron_client: bool | None
    idle_strategy: IdleStrategy | None
    credentials_supplier: CredentialsSupplier | None
    recording_signal_consumer: RecordingSignalConsumer | None
    error_handler: Callable[[BaseException], object] | None
    agent_invoker: AgentInvoker | None


class Context:
    """Settings of an :class:`AeronArchive` (Aeron ``AeronArchive.Context``).

    Each setting comes from, in order: its default, the ``AERON_ARCHIVE_*`` environment variable (``AERON_DIR``
    for ``aeron_dir``), ``properties`` (Java names such as ``aeron.archive.control.channel``, or ``key=value``
    strings), then keywords. ``control_request_channel`` and ``control_response_channel`` must be set.
    ``aeron`` is a connected :class:`aeron.Aeron` to use (else one is connected to ``aeron_dir`` and closed with
    the archive client); ``idle_strategy`` waits for responses (by default backoff, or on a media driver of ours
    one that wakes when the response comes: ``Aeron.response_idle_strategy``); ``credentials_supplier`` has
    ``encoded_credentials()`` and ``on_challenge(challenge)``; ``recording_signal_consumer(event)`` receives the
    recording signals met while waiting; ``error_handler(exc)`` the errors of other requests; ``agent_invoker``
    is invoked while waiting.
    """

    control_request_channel: str | None
    control_request_stream_id: int
    control_response_channel: str | None
    control_response_stream_id: int
    recording_events_channel: str | None
    recording_events_stream_id: int
    message_timeout_ns: int
    message_retry_attempts: int
    control_term_buffer_length: int
    control_term_buffer_sparse: bool
    control_mtu_length: int
    client_name: str
    aeron_dir: str | None

    def __init__(self, properties: Mapping[str, object] | Iterable[str] | None = None, *,
                 environ: Mapping[str, str] | None = None,
                 control_request_channel: str | None = None, control_request_stream_id: int | None = None,
                 control_response_channel: str | None = None, control_response_stream_id: int | None = None,
                 recording_events_channel: str | None = None, recording_events_stream_id: int | None = None,
                 message_timeout_ns: int | None = None, message_retry_attempts: int | None = None,
                 control_term_buffer_length: int | None = None, control_term_buffer_sparse: bool | None = None,
                 control_mtu_length: int | None = None, client_name: str | None = None, aeron_dir: str | None = None,
                 aeron: Aeron | None = None, owns_aeron_client: bool | None = None,
                 idle_strategy: IdleStrategy | None = None, credentials_supplier: CredentialsSupplier | None = None,
                 recording_signal_consumer: RecordingSignalConsumer | None = None,
                 error_handler: Callable[[BaseException], object] | None = None,
                 agent_invoker: AgentInvoker | None = None) -> None:
        """Defaults, then the environment, then ``properties``, then the keywords given (None: not given);
        ConfigurationError for an unknown property or a bad value. Every setting is a named keyword, so a type
        checker (and Python itself) refuses a misspelt one."""
        for attr, setting in _SETTINGS.items():
            setattr(self, attr, setting.default)
        self.aeron: Aeron | None = None
        self.owns_aeron_client = False
        self.idle_strategy: IdleStrategy | None = None
        self.credentials_supplier: CredentialsSupplier | None = None
        self.recording_signal_consumer: RecordingSignalConsumer | None = None
        self.error_handler: Callable[[BaseException], object] | None = None
        self.agent_invoker: AgentInvoker | None = None
        self.is_concluded = False
        self._own_idle_strategy = False          # conclude() made it: close() releases its slot on the board
        environ = os.environ if environ is None else environ
        for attr, setting in _SETTINGS.items():
            if environ.get(setting.env):
                self._set_text(attr, environ[setting.env], setting.env)
        if properties is not None:
            self.update(properties)
        given = dict(
            control_request_channel=control_request_channel, control_request_stream_id=control_request_stream_id,
            control_response_channel=control_response_channel, control_response_stream_id=control_response_stream_id,
            recording_events_channel=recording_events_channel, recording_events_stream_id=recording_events_stream_id,
            message_timeout_ns=message_timeout_ns, message_retry_attempts=message_retry_attempts,
            control_term_buffer_length=control_term_buffer_length,
            control_term_buffer_sparse=control_term_buffer_sparse, control_mtu_length=control_mtu_length,
            client_name=client_name, aeron_dir=aeron_dir, aeron=aeron, owns_aeron_client=owns_aeron_client,
            idle_strategy=idle_strategy, credentials_supplier=credentials_supplier,
            recording_signal_consumer=recording_signal_consumer, error_handler=error_handler,
            agent_invoker=agent_invoker)
        for name, value in given.items():
            if value is not None:
                setattr(self, name, value)

    def _set_text(self, attr: str, text: str, name: str) -> None:
        # ConfigurationError naming the property and its variable (Setting.parse_text), whichever ``name`` gave it
        setattr(self, attr, _SETTINGS[attr].parse_text(text))

    def update(self, properties: Mapping[str, object] | Iterable[str]) -> "Context":
        """Apply a mapping of Java property names (or attribute names), or ``key=value`` strings (``-D`` allowed)."""
        for key, value in property_items(properties):
            attr = _BY_PROPERTY.get(key) or (key if key in _SETTINGS else None)
            if attr is None:
                raise ConfigurationError(f"unknown archive client property {key!r}")
            if isinstance(value, str):
                self._set_text(attr, value, key)
            else:
                setattr(self, attr, value)
        return self

    def conclude(self) -> "Context":
        """Validate, connect an Aeron client if none was given, and add the control channels' defaults
        (``term-length``, ``mtu``, ``sparse``, and a shared ``session-id`` unless the response channel uses
        ``control-mode=response``). Raises ConfigurationError; IllegalStateError when concluded twice."""
        if self.is_concluded:
            raise IllegalStateError("AeronArchive.Context already concluded")
        if not self.control_request_channel:
            raise ConfigurationError("AeronArchive.Context.control_request_channel must be set")
        if not self.control_response_channel:
            raise ConfigurationError("AeronArchive.Context.control_response_channel must be set")
        if len(self.client_name) > MAX_CLIENT_NAME_LENGTH:
            raise ConfigurationError(f"AeronArchive.Context.client_name length must be <= {MAX_CLIENT_NAME_LENGTH}")
        if self.message_retry_attempts <= 0:
            raise ConfigurationError(
                f"AeronArchive.Context.message_retry_attempts must be > 0, got: {self.message_retry_attempts}")
        request = self._apply_default_params(self.control_request_channel)
        response = self._apply_default_params(self.control_response_channel)
        self.is_concluded = True
        if self.aeron is None:
            self.aeron = Aeron.connect(AeronContext(self.aeron_dir,
                                                    client_name=self.client_name or "archive-client"))
            self.owns_aeron_client = True
        if response.get(MDC_CONTROL_MODE_PARAM_NAME) != CONTROL_MODE_RESPONSE:
            session_id = str(self.aeron.next_session_id(self.control_request_stream_id))
            request.put(SESSION_ID_PARAM_NAME, session_id)
            response.put(SESSION_ID_PARAM_NAME, session_id)
        self.control_request_channel = str(request)
        self.control_response_channel = str(response)
        if self.idle_strategy is None:
            # Aeron's backoff, or on a driver of ours one that wakes when a response comes (docs/wakeup.md)
            self.idle_strategy = self.aeron.response_idle_strategy(self.control_response_stream_id,
                                                                   BackoffIdleStrategy(10, 20, 1_000, 1_000_000))
            self._own_idle_strategy = True
        if self.credentials_supplier is None:
            self.credentials_supplier = NullCredentialsSupplier()
        return self

    def _apply_default_params(self, channel: str) -> ChannelUri:
        uri = ChannelUri.parse(channel)
        if not uri.has(TERM_LENGTH_PARAM_NAME):
            uri.put(TERM_LENGTH_PARAM_NAME, str(self.control_term_buffer_length))
        if not uri.has(MTU_LENGTH_PARAM_NAME):
            uri.put(MTU_LENGTH_PARAM_NAME, str(self.control_mtu_length))
        if not uri.has(SPARSE_PARAM_NAME):
            uri.put(SPARSE_PARAM_NAME, "true" if self.control_term_buffer_sparse else "false")
        return uri

    def run_invokers(self) -> int:
        """Invoke the Aeron client's conductor (when it has no thread) and ``agent_invoker``; the work done."""
        return run_agent_invokers(self.aeron, self.agent_invoker)

    def close(self) -> None:
        """Release the idle strategy :meth:`conclude` made, and close the Aeron client when this context connected
        it."""
        if self._own_idle_strategy:
            self._own_idle_strategy = False
            close_idle = getattr(self.idle_strategy, "close", None)
            if close_idle is not None:
                close_idle()
        if self.owns_aeron_client and self.aeron is not None:
            self.aeron.close()

    def __repr__(self) -> str:
        """The settings."""
        fields = ", ".join(f"{attr}={getattr(self, attr)!r}" for attr in _SETTINGS)
        return f"AeronArchive.Context({fields}, owns_aeron_client={self.owns_aeron_client})"


class _Deadline:
    __slots__ = ("deadline_ns", "timeout_ns")

    def __init__(self, timeout_ns: int) -> None:
        self.timeout_ns = timeout_ns
        self.deadline_ns = time.monotonic_ns() + timeout_ns

    def extend(self) -> None:
        self.deadline_ns = time.monotonic_ns() + self.timeout_ns

    def check(self, what: str, correlation_id: int = NULL_VALUE) -> None:
        if time.monotonic_ns() - self.deadline_ns > 0:
            raise ArchiveTimeoutError(f"{what} - correlationId={correlation_id} messageTimeout="
                                      f"{self.timeout_ns / 1e9:g}s", ArchiveErrorCode.GENERIC, correlation_id)


def connect_op(ctx: Context) -> Op["AeronArchive"]:
    """The connect handshake as an operation (``AeronArchive.AsyncConnect``): response subscription, request
    publication, AuthConnect (answering a Challenge with the credentials supplier), ArchiveId, KeepAlive.
    ``ctx`` must be concluded. On failure the resources it made are closed."""
    aeron = ctx.aeron
    assert aeron is not None
    deadline = _Deadline(ctx.message_timeout_ns)
    subscription = None
    publication = None
    proxy = None
    holder: list[AeronArchive] = []

    def on_unavailable(image: Any) -> None:
        if holder:
            holder[0]._set_state(State.DISCONNECTED)

    def check(step: str) -> None:
        if time.monotonic_ns() - deadline.deadline_ns > 0:
            raise ArchiveTimeoutError(f"Archive connect timeout: step={step} publication={ctx.control_request_channel}"
                                      f" subscription={ctx.control_response_channel}")

    def temporarily_unavailable(exc: RegistrationError) -> bool:
        # an endpoint of the same channel still closing (a client of the same channel just closed): the add is
        # made again, as AeronArchive.AsyncConnect does; any other refusal ends the connect
        return exc.error_code == ErrorCode.RESOURCE_TEMPORARILY_UNAVAILABLE

    pending = [NULL_VALUE, NULL_VALUE]      # the async adds (subscription, publication) not answered yet

    def add_until_answered(slot: int, add: Any, get: Any, step: str) -> Any:
        # the add, made again while the driver answers that it is temporarily unavailable; returns the resource
        while True:
            registration_id = pending[slot] = add()
            try:
                while (resource := get(registration_id)) is None:
                    check(step)
                    yield 0
                return resource
            except RegistrationError as exc:
                pending[slot] = NULL_VALUE
                if not temporarily_unavailable(exc):
                    raise
                check(step)
                yield 0

    try:
        subscription = yield from add_until_answered(
            0, lambda: aeron.async_add_subscription(ctx.control_response_channel, ctx.control_response_stream_id,
                                                    None, on_unavailable),
            aeron.get_subscription, "AWAIT_SUBSCRIPTION")
        if ChannelUri.parse(ctx.control_response_channel).get(MDC_CONTROL_MODE_PARAM_NAME) == CONTROL_MODE_RESPONSE:
            request = ChannelUri.parse(ctx.control_request_channel)
            request.put(RESPONSE_CORRELATION_ID_PARAM_NAME, str(subscription.registration_id))
            ctx.control_request_channel = str(request)
        publication = yield from add_until_answered(
            1, lambda: aeron.async_add_exclusive_publication(ctx.control_request_channel, ctx.control_request_stream_id),
            aeron.get_exclusive_publication, "ADD_PUBLICATION")
        proxy = ArchiveProxy(publication, ctx.message_retry_attempts, ctx.credentials_supplier,
                             f"name={ctx.client_name} version={__version__}")
        poller = ControlResponsePoller(subscription)
        while not publication.is_connected:
            check("AWAIT_PUBLICATION_CONNECTED")
            yield 0
        correlation_id = aeron.next_correlation_id()
        while True:
            response_channel = subscription.try_resolve_channel_endpoint_port()
            if response_channel is not None and proxy.try_connect(response_channel, ctx.control_response_stream_id,
                                                                  correlation_id):
                break
            check("SEND_CONNECT_REQUEST")
            yield 0
        while not subscription.is_connected:
            check("AWAIT_SUBSCRIPTION_CONNECTED")
            yield 0
        step = "AWAIT_CONNECT_RESPONSE"
        control_session_id = NULL_VALUE
        while True:
            poller.poll()
            if not (poller.is_poll_complete and poller.correlation_id == correlation_id):
                check(step)
                yield 0
                continue
            control_session_id = poller.control_session_id
            if poller.was_challenged:
                assert poller.encoded_challenge is not None and ctx.credentials_supplier is not None   # concluded
                credentials = ctx.credentials_supplier.on_challenge(poller.encoded_challenge)
                correlation_id = aeron.next_correlation_id()
                while not proxy.try_challenge_response(credentials, correlation_id, control_session_id):
                    check("SEND_CHALLENGE_RESPONSE")
                    yield 0
                step = "AWAIT_CHALLENGE_RESPONSE"
                continue
            code = poller.code
            if code != codecs.ControlResponseCode.OK:
                proxy.close_session(control_session_id)
                if code == codecs.ControlResponseCode.ERROR:
                    raise archive_error(poller.error_message or "", poller.relevant_id, correlation_id)
                raise ArchiveError(f"unexpected response: code={code!r}", ArchiveErrorCode.GENERIC, correlation_id)
            if step == "AWAIT_ARCHIVE_ID_RESPONSE":
                archive_id = poller.relevant_id
                break
            if poller.version < PROTOCOL_VERSION_WITH_ARCHIVE_ID:
                archive_id = NULL_VALUE
                break
            correlation_id = aeron.next_correlation_id()
            if not proxy.archive_id(correlation_id, control_session_id):
                raise ArchiveError("failed to send archive id request")
            step = "AWAIT_ARCHIVE_ID_RESPONSE"
        if not proxy.keep_alive(control_session_id, NULL_VALUE):
            proxy.close_session(control_session_id)
            raise ArchiveError("failed to send keep alive after archive connect")
        archive = AeronArchive(ctx, poller, proxy, control_session_id, archive_id)
        holder.append(archive)
        return archive
    except BaseException:
        if not ctx.owns_aeron_client:
            for resource, remove, registration in ((subscription, aeron.async_remove_subscription, pending[0]),
                                                   (publication, aeron.async_remove_publication, pending[1])):
                try:
                    if resource is not None:
                        resource.close()
                    elif registration != NULL_VALUE:
                        remove(registration)    # not answered yet (or failed: then nothing to remove)
                except Exception as exc:    # noqa: BLE001 - the original failure is the one raised
                    if ctx.error_handler is not None:
                        ctx.error_handler(exc)
        ctx.close()
        raise


class AsyncConnect:
    """A connect in progress (Java's ``AeronArchive.AsyncConnect``): each :meth:`poll` takes one step and returns
    the connected :class:`AeronArchive` once done, else None; the steps' errors are raised by :meth:`poll`."""

    def __init__(self, context: Context) -> None:
        """Conclude ``context`` and start; use :meth:`AeronArchive.async_connect`."""
        context.conclude()
        self.context = context
        self._op: Op[AeronArchive] | None = connect_op(context)
        self._archive: AeronArchive | None = None

    def poll(self) -> "AeronArchive | None":
        """One step of the handshake: the client once connected, else None."""
        if self._archive is not None:
            return self._archive
        if self._op is None:
            raise IllegalStateError("AsyncConnect is closed")
        self.context.run_invokers()
        try:
            next(self._op)
        except StopIteration as done:
            self._archive = done.value
            self._op = None
        except BaseException:
            self._op = None
            raise
        return self._archive

    def close(self) -> None:
        """Abandon an unfinished connect, closing what it made (a finished one is left to the client)."""
        op, self._op = self._op, None
        if op is not None:
            if inspect.getgeneratorstate(op) != inspect.GEN_CREATED:
                op.close()          # GeneratorExit runs connect_op's cleanup (which closes an owned client)
            else:
                self.context.close()     # never stepped: only the context's own Aeron client exists


def _drive(op: Op[T], ctx: Context) -> T:
    """Run ``op`` to completion on this thread: the context's idle strategy, its invokers between steps."""
    assert ctx.idle_strategy is not None
    return drive(op, ctx.idle_strategy, ctx.run_invokers)


class AeronArchive:
    """A connected archive client; use :meth:`connect`. Thread-safe (a lock serialises the operations).

    Methods follow the Java client in Python spelling; each sends a request, waits for its answer (up to the
    context's message timeout: ArchiveTimeoutError) and raises the typed ArchiveError of an ERROR answer.
    Recording signals met while waiting go to ``context.recording_signal_consumer``.

    Each request method ``x`` is its operation ``x_op`` (same arguments) run to completion: a generator that
    yields 0 while it waits and returns ``x``'s result, for a face that waits its own way (``aeron.aio.archive``
    awaits it; a duty cycle steps it with ``next``). Run one operation at a time per client, and not while a
    method of this client runs on another thread: the methods hold the client's lock, the operations do not.
    """

    def __init__(self, context: Context, control_response_poller: ControlResponsePoller, archive_proxy: ArchiveProxy,
                 control_session_id: int, archive_id: int) -> None:
        """Made by :func:`connect_op`; use :meth:`connect`."""
        self.context = context
        assert context.aeron is not None
        self.aeron: Aeron = context.aeron
        self.control_response_poller = control_response_poller
        self.archive_proxy = archive_proxy
        self.control_session_id = control_session_id
        self.archive_id = archive_id
        self.last_correlation_id = NULL_VALUE
        self.state = State.CONNECTED
        self._lock = threading.RLock()
        self._in_callback = False
        self._descriptor_poller: RecordingDescriptorPoller | None = None
        self._subscription_descriptor_poller: RecordingSubscriptionDescriptorPoller | None = None

    # -- connect and close ---------------------------------------------------------------------------------
    @classmethod
    def connect(cls, context: Context | None = None, **settings: Unpack[ContextSettings]) -> "AeronArchive":
        """Connect to the archive named by ``context`` (or a Context made from ``settings``), waiting up to the
        message timeout. Raises ArchiveTimeoutError, or the archive's ArchiveError (e.g.
        AuthenticationRejectedError)."""
        if context is None:
            context = Context(**settings)
        elif settings:
            raise IllegalStateError("pass either a Context or keyword settings, not both")
        context.conclude()
        return _drive(connect_op(context), context)

    @classmethod
    def async_connect(cls, context: Context | None = None, **settings: Unpack[ContextSettings]) -> "AsyncConnect":
        """Start connecting without blocking: call ``poll()`` on the result in your duty cycle until it returns the
        client (Java's ``AeronArchive.asyncConnect``)."""
        if context is None:
            context = Context(**settings)
        elif settings:
            raise IllegalStateError("pass either a Context or keyword settings, not both")
        return AsyncConnect(context)

    def close(self) -> None:
        """Close the session (CloseSessionRequest), the control publication and subscription, and the Aeron client
        when the context owns it. Idempotent."""
        with self._lock:
            if self.state is State.CLOSED:
                return
            self.state = State.CLOSED
            error: BaseException | None = None
            try:
                if self.archive_proxy.publication.is_connected:
                    self.archive_proxy.close_session(self.control_session_id)
            except Exception as exc:        # noqa: BLE001 - closing carries on; reported below
                error = exc
            if not self.context.owns_aeron_client:
                for resource in (self.archive_proxy.publication, self.control_response_poller.subscription):
                    try:
                        resource.close()
                    except Exception as exc:        # noqa: BLE001
                        error = error or exc
            self.context.close()
            if error is not None and self.context.error_handler is not None:
                self.context.error_handler(error)

    def __enter__(self) -> "AeronArchive":
        """Return the client; the ``with`` block closes it."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the client."""
        self.close()

    def _set_state(self, state: State) -> None:
        if self.state is not State.CLOSED:
            self.state = state

    def __repr__(self) -> str:
        """Session, archive id and state."""
        return (f"<AeronArchive control_session_id={self.control_session_id} archive_id={self.archive_id} "
                f"state={self.state.name}>")

    # -- running operations --------------------------------------------------------------------------------
    def _ensure_connected(self) -> None:
        if self.state is not State.CONNECTED:
            if self.state is State.CLOSED:
                raise ArchiveError("client is closed")
            self.close()
            raise ArchiveError("client is disconnected from the archive: closed")

    def _ensure_not_reentrant(self) -> None:
        if self._in_callback:
            raise IllegalStateError("reentrant calls not permitted during callbacks")

    def _run(self, op: Op[T]) -> T:
        with self._lock:
            return _drive(op, self.context)

    def _begin(self) -> int:
        self._ensure_connected()
        self._ensure_not_reentrant()
        self.last_correlation_id = self.aeron.next_correlation_id()
        return self.last_correlation_id

    def _dispatch_signal(self, event: RecordingSignalEvent) -> None:
        consumer = self.context.recording_signal_consumer
        if consumer is not None:
            consumer(event)

    def _check_for_disconnect(self) -> None:
        subscription = self.control_response_poller.subscription
        if not subscription.is_connected:
            self._set_state(State.DISCONNECTED)
            raise ArchiveError(f"response channel from archive is not connected, channel={subscription.channel}, "
                               f"streamId={subscription.stream_id}, imageCount={subscription.image_count}")

    def _poll_next_response(self, correlation_id: int, deadline: _Deadline) -> Op[None]:
        poller = self.control_response_poller
        while True:
            fragments = poller.poll()
            if poller.is_poll_complete:
                if (poller.template_id == codecs.RecordingSignalEventDecoder.TEMPLATE_ID
                        and poller.control_session_id == self.control_session_id):
                    self._dispatch_signal(poller.signal_event())
                    continue
                return
            if fragments > 0:
                continue
            self._check_for_disconnect()
            deadline.check("awaiting response", correlation_id)
            yield 0

    def _await_response(self, correlation_id: int, allowed_error_code: int | None = None) -> Op[int]:
        """The relevant id of the OK answer to ``correlation_id``; with ``allowed_error_code``, 1 for OK and 0 for
        an ERROR of that code."""
        deadline = _Deadline(self.context.message_timeout_ns)
        poller = self.control_response_poller
        while True:
            yield from self._poll_next_response(correlation_id, deadline)
            if poller.control_session_id != self.control_session_id:
                continue
            code = poller.code
            if code == codecs.ControlResponseCode.ERROR:
                error = archive_error(f"response for correlationId={correlation_id}, error: {poller.error_message}",
                                      poller.relevant_id, poller.correlation_id)
                if poller.correlation_id == correlation_id:
                    if allowed_error_code is not None and poller.relevant_id == allowed_error_code:
                        return 0
                    raise error
                if self.context.error_handler is not None:
                    self.context.error_handler(error)
            elif poller.correlation_id == correlation_id:
                if code != codecs.ControlResponseCode.OK:
                    raise ArchiveError(f"unexpected response code: {code!r}", ArchiveErrorCode.GENERIC,
                                       correlation_id)
                return 1 if allowed_error_code is not None else poller.relevant_id

    def _request(self, sent: bool, what: str, correlation_id: int, allowed_error_code: int | None = None) -> Op[int]:
        if not sent:
            raise ArchiveError(f"failed to send {what} request", ArchiveErrorCode.GENERIC, correlation_id)
        return (yield from self._await_response(correlation_id, allowed_error_code))

    # The operations. Each request method ``x`` below is ``self._run(self.x_op(...))``; aeron.aio.archive awaits
    # the same ``x_op``. An operation checks the client's state when first stepped (ArchiveError once closed or
    # disconnected, IllegalStateError from inside a listing's consumer), not when made.

    def _simple_op(self, proxy_method: str, what: str, *args: Any, allowed_error_code: int | None = None) -> Op[int]:
        correlation_id = self._begin()
        sent = getattr(self.archive_proxy, proxy_method)(*args, correlation_id, self.control_session_id)
        return (yield from self._request(sent, what, correlation_id, allowed_error_code))

    # -- recording operations -------------------------------------------------------------------------------
    def add_recorded_publication_op(self, channel: str, stream_id: int) -> Op[Any]:
        """Operation of :meth:`add_recorded_publication`: yields 0 while it waits for the driver and the archive;
        returns the Publication (closed again when the recording request fails)."""
        return (yield from self._add_recorded_publication_op(channel, stream_id, False))

    def add_recorded_exclusive_publication_op(self, channel: str, stream_id: int) -> Op[Any]:
        """Operation of :meth:`add_recorded_exclusive_publication`: returns the ExclusivePublication."""
        return (yield from self._add_recorded_publication_op(channel, stream_id, True))

    def _add_recorded_publication_op(self, channel: str, stream_id: int, exclusive: bool) -> Op[Any]:
        self._ensure_connected()
        self._ensure_not_reentrant()
        if exclusive:
            registration_id = self.aeron.async_add_exclusive_publication(channel, stream_id)
            get = self.aeron.get_exclusive_publication
        else:
            registration_id = self.aeron.async_add_publication(channel, stream_id)
            get = self.aeron.get_publication
        try:
            while (publication := get(registration_id)) is None:
                yield 0
        except BaseException:
            self.aeron.async_remove_publication(registration_id)    # abandoned before the driver answered
            raise
        try:
            if not exclusive and publication.original_registration_id != publication.registration_id:
                raise ArchiveError(f"publication already added for channel={channel} streamId={stream_id}")
            uri = ChannelUri.parse(channel)
            uri.put(SESSION_ID_PARAM_NAME, str(publication.session_id))
            yield from self.start_recording_op(str(uri), stream_id, SourceLocation.LOCAL)
        except BaseException:
            publication.close()
            raise
        return publication

    def start_recording_op(self, channel: str, stream_id: int, source_location: int = SourceLocation.REMOTE,
                           auto_stop: bool | None = None) -> Op[int]:
        """Operation of :meth:`start_recording`: yields 0 while it waits; returns the recording subscription's
        id."""
        correlation_id = self._begin()
        sent = self.archive_proxy.start_recording(channel, stream_id, source_location, correlation_id,
                                                  self.control_session_id, auto_stop)
        return (yield from self._request(sent, "start recording", correlation_id))

    def extend_recording_op(self, recording_id: int, channel: str, stream_id: int,
                            source_location: int = SourceLocation.REMOTE, auto_stop: bool | None = None) -> Op[int]:
        """Operation of :meth:`extend_recording`: returns the recording subscription's id."""
        correlation_id = self._begin()
        sent = self.archive_proxy.extend_recording(channel, stream_id, source_location, recording_id, correlation_id,
                                                   self.control_session_id, auto_stop)
        return (yield from self._request(sent, "extend recording", correlation_id))

    def stop_recording_op(self, channel: str, stream_id: int) -> Op[None]:
        """Operation of :meth:`stop_recording`: returns None once the archive answered OK."""
        yield from self._simple_op("stop_recording", "stop recording", channel, stream_id)

    def try_stop_recording_op(self, channel: str, stream_id: int) -> Op[bool]:
        """Operation of :meth:`try_stop_recording`: returns False for an unknown subscription."""
        return (yield from self._simple_op("stop_recording", "stop recording", channel, stream_id,
                                           allowed_error_code=ArchiveErrorCode.UNKNOWN_SUBSCRIPTION)) != 0

    def stop_recording_subscription_op(self, subscription_id: int) -> Op[None]:
        """Operation of :meth:`stop_recording_subscription`."""
        yield from self._simple_op("stop_recording_subscription", "stop recording", subscription_id)

    def try_stop_recording_subscription_op(self, subscription_id: int) -> Op[bool]:
        """Operation of :meth:`try_stop_recording_subscription`: returns False for an unknown subscription."""
        return (yield from self._simple_op("stop_recording_subscription", "stop recording", subscription_id,
                                           allowed_error_code=ArchiveErrorCode.UNKNOWN_SUBSCRIPTION)) != 0

    def try_stop_recording_by_identity_op(self, recording_id: int) -> Op[bool]:
        """Operation of :meth:`try_stop_recording_by_identity`: returns False when the recording was not active."""
        return (yield from self._simple_op("stop_recording_by_identity", "stop recording", recording_id)) != 0

    def stop_recording_publication_op(self, publication: Any) -> Op[None]:
        """Operation of :meth:`stop_recording_publication`."""
        uri = ChannelUri.parse(publication.channel)
        uri.put(SESSION_ID_PARAM_NAME, str(publication.session_id))
        yield from self.stop_recording_op(str(uri), publication.stream_id)

    # -- replay operations ----------------------------------------------------------------------------------
    def start_replay_op(self, recording_id: int, replay_channel: str, replay_stream_id: int,
                        position: int = NULL_POSITION, length: int = REPLAY_ALL_AND_FOLLOW, *,
                        params: ReplayParams | None = None) -> Op[int]:
        """Operation of :meth:`start_replay`: yields 0 while it waits; returns the replay session id."""
        params = params if params is not None else ReplayParams(position=position, length=length)
        if is_response_channel(replay_channel):
            if params.subscription_registration_id == NULL_VALUE:
                raise ArchiveError("when using start_replay with a response channel, "
                                   "ReplayParams.subscription_registration_id must be set")
            return (yield from self._replay_over_response_channel_op(recording_id, replay_channel,
                                                                     replay_stream_id, params,
                                                                     params.subscription_registration_id))
        correlation_id = self._begin()
        sent = self.archive_proxy.replay_with_params(recording_id, replay_channel, replay_stream_id, params,
                                                     correlation_id, self.control_session_id)
        what = "bounded replay" if params.is_bounded else "replay"
        return (yield from self._request(sent, what, correlation_id))

    def start_bounded_replay_op(self, recording_id: int, position: int, length: int, limit_counter_id: int,
                                replay_channel: str, replay_stream_id: int) -> Op[int]:
        """Operation of :meth:`start_bounded_replay`: returns the replay session id."""
        params = ReplayParams(position=position, length=length, bounding_limit_counter_id=limit_counter_id)
        return (yield from self.start_replay_op(recording_id, replay_channel, replay_stream_id, params=params))

    def stop_replay_op(self, replay_session_id: int) -> Op[None]:
        """Operation of :meth:`stop_replay`."""
        yield from self._simple_op("stop_replay", "stop replay", replay_session_id)

    def stop_all_replays_op(self, recording_id: int = NULL_VALUE) -> Op[None]:
        """Operation of :meth:`stop_all_replays`."""
        yield from self._simple_op("stop_all_replays", "stop all replays", recording_id)

    def replay_op(self, recording_id: int, replay_channel: str, replay_stream_id: int, position: int = NULL_POSITION,
                  length: int = REPLAY_ALL_AND_FOLLOW, *, params: ReplayParams | None = None,
                  available_image_handler: ImageHandler | None = None,
                  unavailable_image_handler: ImageHandler | None = None) -> Op[Any]:
        """Operation of :meth:`replay`: yields 0 while it waits for the archive and the driver; returns the
        Subscription to the replay (closed again when the replay request fails)."""
        params = params if params is not None else ReplayParams(position=position, length=length)
        if is_response_channel(replay_channel):
            subscription = yield from self._add_subscription_op(replay_channel, replay_stream_id,
                                                                available_image_handler, unavailable_image_handler)
            try:
                yield from self._replay_over_response_channel_op(recording_id, replay_channel, replay_stream_id,
                                                                 params, subscription.registration_id)
                deadline = _Deadline(self.context.message_timeout_ns)
                while not subscription.is_connected:
                    deadline.check("awaiting the replay image", self.last_correlation_id)
                    yield 0
            except BaseException:
                subscription.close()
                raise
            return subscription
        replay_session_id = yield from self.start_replay_op(recording_id, replay_channel, replay_stream_id,
                                                            params=params)
        uri = ChannelUri.parse(replay_channel)
        uri.put(SESSION_ID_PARAM_NAME, str(replay_image_session_id(replay_session_id)))
        return (yield from self._add_subscription_op(str(uri), replay_stream_id, available_image_handler,
                                                     unavailable_image_handler))

    def _add_subscription_op(self, channel: str, stream_id: int, available_image_handler: ImageHandler | None,
                             unavailable_image_handler: ImageHandler | None) -> Op[Any]:
        registration_id = self.aeron.async_add_subscription(channel, stream_id, available_image_handler,
                                                            unavailable_image_handler)
        try:
            while (subscription := self.aeron.get_subscription(registration_id)) is None:
                yield 0
        except BaseException:
            self.aeron.async_remove_subscription(registration_id)   # abandoned before the driver answered
            raise
        return subscription

    def _replay_over_response_channel_op(self, recording_id: int, replay_channel: str, replay_stream_id: int,
                                         params: ReplayParams, subscription_registration_id: int) -> Op[int]:
        """A replay to a ``control-mode=response`` subscription: a replay token on this session, then the
        ReplayRequest sent on a new request publication whose ``response-correlation-id`` names the replay
        subscription, so the archive answers it over that subscription's own channel (as
        ``AeronArchive.startReplay`` does for a response channel)."""
        token = yield from self.request_replay_token_op(recording_id)
        publication = yield from self.replay_request_publication_op(subscription_registration_id)
        try:
            return (yield from self.start_replay_on_publication_op(publication, recording_id, replay_channel,
                                                              replay_stream_id,
                                                              dataclasses.replace(params, replay_token=token)))
        finally:
            publication.close()

    def replay_error_op(self, replay_correlation_id: int) -> Op[ArchiveError | None]:
        """Operation of :meth:`replay_error`: sends an ArchiveIdRequest and reads this session's responses up to its
        answer; returns the ERROR met among them for replay request ``replay_correlation_id``, or None."""
        correlation_id = self._begin()
        if not self.archive_proxy.archive_id(correlation_id, self.control_session_id):
            raise ArchiveError("failed to send archive id request", ArchiveErrorCode.GENERIC, correlation_id)
        deadline = _Deadline(self.context.message_timeout_ns)
        poller = self.control_response_poller
        found: ArchiveError | None = None
        while True:
            yield from self._poll_next_response(correlation_id, deadline)
            if poller.control_session_id != self.control_session_id:
                continue
            if poller.correlation_id == correlation_id:
                # answered (an archive older than 1.11 answers with an ERROR): all sent before it has been read
                return found
            if poller.code == codecs.ControlResponseCode.ERROR:
                error = archive_error(f"replay for correlationId={poller.correlation_id} failed: "
                                      f"{poller.error_message}", poller.relevant_id, poller.correlation_id)
                if poller.correlation_id == replay_correlation_id:
                    found = error
                elif self.context.error_handler is not None:
                    self.context.error_handler(error)

    # The three steps of a replay over a response channel, published for drivers that interleave work of their own
    # between them (the archive's ReplicationSession replicating over a response channel).

    def request_replay_token_op(self, recording_id: int) -> Op[int]:
        """Operation of a ReplayTokenRequest: returns a replay token for ``recording_id``, which attributes a
        replay request sent on another connection to this session."""
        correlation_id = self._begin()
        sent = self.archive_proxy.request_replay_token(correlation_id, self.control_session_id, recording_id)
        return (yield from self._request(sent, "replay token", correlation_id))

    def replay_request_publication_op(self, subscription_registration_id: int) -> Op[Any]:
        """Operation that adds a request publication to the archive whose ``response-correlation-id`` names the
        replay subscription: returns it once connected with a window to send in (the caller closes it)."""
        ctx = self.context
        assert ctx.control_request_channel is not None
        uri = ChannelUri.parse(ctx.control_request_channel)
        for key in (SESSION_ID_PARAM_NAME, TERM_ID_PARAM_NAME, INITIAL_TERM_ID_PARAM_NAME, TERM_OFFSET_PARAM_NAME):
            uri.remove(key)
        uri.put(RESPONSE_CORRELATION_ID_PARAM_NAME, str(subscription_registration_id))
        uri.put(TERM_LENGTH_PARAM_NAME, str(ctx.control_term_buffer_length))
        uri.put(SPIES_SIMULATE_CONNECTION_PARAM_NAME, "false")
        registration_id = self.aeron.async_add_exclusive_publication(str(uri), ctx.control_request_stream_id)
        try:
            while (publication := self.aeron.get_exclusive_publication(registration_id)) is None:
                yield 0
        except BaseException:
            # closed before the driver answered (a replication stopped meanwhile): the publication would still be
            # made, and left open, without this
            self.aeron.async_remove_publication(registration_id)
            raise
        try:
            deadline = _Deadline(ctx.message_timeout_ns)
            while not publication.is_connected or publication.position_limit == 0:
                deadline.check("timed out waiting to establish replay connection", self.last_correlation_id)
                yield 0
        except BaseException:
            publication.close()
            raise
        return publication

    def start_replay_on_publication_op(self, publication: Any, recording_id: int, replay_channel: str,
                                       replay_stream_id: int, params: ReplayParams) -> Op[int]:
        """Operation of this session's ReplayRequest sent on ``publication`` (one from
        :meth:`replay_request_publication_op`, ``params`` with the replay token); the answer comes on this
        session's response stream: returns the replay session id."""
        correlation_id = self._begin()
        proxy = ArchiveProxy(publication, self.context.message_retry_attempts)
        sent = proxy.replay_with_params(recording_id, replay_channel, replay_stream_id, params, correlation_id,
                                        self.control_session_id)
        return (yield from self._request(sent, "replay", correlation_id))

    # -- query operations -----------------------------------------------------------------------------------
    def _list_op(self, poller: Any, correlation_id: int, sent: bool, what: str, count: int,
                 consumer: Callable[[Any], object]) -> Op[int]:
        if not sent:
            raise ArchiveError(f"failed to send {what} request", ArchiveErrorCode.GENERIC, correlation_id)
        deadline = _Deadline(self.context.message_timeout_ns)
        poller.reset(correlation_id, count, consumer)
        remaining = count
        self._in_callback = True
        try:
            while True:
                fragments = poller.poll()
                if poller.is_dispatch_complete:
                    return count - poller.remaining_count
                if poller.remaining_count != remaining:
                    remaining = poller.remaining_count
                    deadline.extend()
                if fragments > 0:
                    continue
                self._check_for_disconnect()
                deadline.check(f"awaiting {what}", correlation_id)
                yield 0
        finally:
            self._in_callback = False

    def _recording_descriptor_poller(self) -> RecordingDescriptorPoller:
        if self._descriptor_poller is None:
            self._descriptor_poller = RecordingDescriptorPoller(
                self.control_response_poller.subscription, self.control_session_id, self.context.error_handler,
                self._dispatch_signal)
        return self._descriptor_poller

    def _recording_subscription_descriptor_poller(self) -> RecordingSubscriptionDescriptorPoller:
        if self._subscription_descriptor_poller is None:
            self._subscription_descriptor_poller = RecordingSubscriptionDescriptorPoller(
                self.control_response_poller.subscription, self.control_session_id, self.context.error_handler,
                self._dispatch_signal)
        return self._subscription_descriptor_poller

    def _listing_op(self, poller: Any, correlation_id: int, sent: bool, what: str, count: int,
                    consumer: Callable[[Any], object] | None) -> Op[Any]:
        # Aeron's form gives each entry to ``consumer`` and returns the count; without one, the entries as a list
        if consumer is not None:
            return (yield from self._list_op(poller, correlation_id, sent, what, count, consumer))
        found: list[Any] = []
        yield from self._list_op(poller, correlation_id, sent, what, count, found.append)
        return found

    @overload
    def list_recordings_op(self, from_recording_id: int, record_count: int) -> Op[list[RecordingDescriptor]]: ...

    @overload
    def list_recordings_op(self, from_recording_id: int, record_count: int,
                           consumer: Callable[[RecordingDescriptor], object]) -> Op[int]: ...

    def list_recordings_op(self, from_recording_id: int, record_count: int,
                           consumer: Callable[[RecordingDescriptor], object] | None = None) -> Op[Any]:
        """Operation of :meth:`list_recordings`: calls ``consumer`` as descriptors arrive (between its steps) and
        returns how many it was given; without one, returns the descriptors."""
        correlation_id = self._begin()
        sent = self.archive_proxy.list_recordings(from_recording_id, record_count, correlation_id,
                                                  self.control_session_id)
        return (yield from self._listing_op(self._recording_descriptor_poller(), correlation_id, sent,
                                            "list recordings", record_count, consumer))

    @overload
    def list_recordings_for_uri_op(self, from_recording_id: int, record_count: int, channel_fragment: str,
                                   stream_id: int) -> Op[list[RecordingDescriptor]]: ...

    @overload
    def list_recordings_for_uri_op(self, from_recording_id: int, record_count: int, channel_fragment: str,
                                   stream_id: int, consumer: Callable[[RecordingDescriptor], object]) -> Op[int]: ...

    def list_recordings_for_uri_op(self, from_recording_id: int, record_count: int, channel_fragment: str,
                                   stream_id: int, consumer: Callable[[RecordingDescriptor], object] | None = None
                                   ) -> Op[Any]:
        """Operation of :meth:`list_recordings_for_uri`: returns how many descriptors ``consumer`` was given, or
        the descriptors without one."""
        correlation_id = self._begin()
        sent = self.archive_proxy.list_recordings_for_uri(from_recording_id, record_count, channel_fragment,
                                                          stream_id, correlation_id, self.control_session_id)
        return (yield from self._listing_op(self._recording_descriptor_poller(), correlation_id, sent,
                                            "list recordings for uri", record_count, consumer))

    @overload
    def list_recording_op(self, recording_id: int) -> Op[RecordingDescriptor | None]: ...

    @overload
    def list_recording_op(self, recording_id: int, consumer: Callable[[RecordingDescriptor], object]) -> Op[int]: ...

    def list_recording_op(self, recording_id: int, consumer: Callable[[RecordingDescriptor], object] | None = None
                          ) -> Op[Any]:
        """Operation of :meth:`list_recording`: returns 1, or 0 for an unknown recording; without a consumer, the
        descriptor or None."""
        correlation_id = self._begin()
        sent = self.archive_proxy.list_recording(recording_id, correlation_id, self.control_session_id)
        found = yield from self._listing_op(self._recording_descriptor_poller(), correlation_id, sent,
                                            "list recording", 1, consumer)
        if consumer is not None:
            return found
        return found[0] if found else None

    @overload
    def list_recording_subscriptions_op(self, pseudo_index: int, subscription_count: int, channel_fragment: str,
                                        stream_id: int, apply_stream_id: bool
                                        ) -> Op[list[RecordingSubscriptionDescriptor]]: ...

    @overload
    def list_recording_subscriptions_op(self, pseudo_index: int, subscription_count: int, channel_fragment: str,
                                        stream_id: int, apply_stream_id: bool,
                                        consumer: Callable[[RecordingSubscriptionDescriptor], object]) -> Op[int]: ...

    def list_recording_subscriptions_op(self, pseudo_index: int, subscription_count: int, channel_fragment: str,
                                        stream_id: int, apply_stream_id: bool,
                                        consumer: Callable[[RecordingSubscriptionDescriptor], object] | None = None
                                        ) -> Op[Any]:
        """Operation of :meth:`list_recording_subscriptions`: returns how many ``consumer`` was given, or the
        descriptors without one."""
        correlation_id = self._begin()
        sent = self.archive_proxy.list_recording_subscriptions(pseudo_index, subscription_count, channel_fragment,
                                                               stream_id, apply_stream_id, correlation_id,
                                                               self.control_session_id)
        return (yield from self._listing_op(self._recording_subscription_descriptor_poller(), correlation_id, sent,
                                            "list recording subscriptions", subscription_count, consumer))

    def get_recording_position_op(self, recording_id: int) -> Op[int]:
        """Operation of :meth:`get_recording_position`: returns the position, -1 when not active."""
        return (yield from self._simple_op("get_recording_position", "get recording position", recording_id))

    def get_start_position_op(self, recording_id: int) -> Op[int]:
        """Operation of :meth:`get_start_position`: returns the start position."""
        return (yield from self._simple_op("get_start_position", "get start position", recording_id))

    def get_stop_position_op(self, recording_id: int) -> Op[int]:
        """Operation of :meth:`get_stop_position`: returns the stop position, -1 while active."""
        return (yield from self._simple_op("get_stop_position", "get stop position", recording_id))

    def get_max_recorded_position_op(self, recording_id: int) -> Op[int]:
        """Operation of :meth:`get_max_recorded_position`: returns the recorded or the stop position."""
        return (yield from self._simple_op("get_max_recorded_position", "get max recorded position", recording_id))

    def find_last_matching_recording_op(self, min_recording_id: int, channel_fragment: str, stream_id: int,
                                        session_id: int) -> Op[int]:
        """Operation of :meth:`find_last_matching_recording`: returns the recording id, or -1."""
        return (yield from self._simple_op("find_last_matching_recording", "find last matching recording",
                                           min_recording_id, channel_fragment, stream_id, session_id))

    # -- catalog and segment operations ---------------------------------------------------------------------
    def truncate_recording_op(self, recording_id: int, position: int) -> Op[int]:
        """Operation of :meth:`truncate_recording`: returns the number of segment files deleted."""
        return (yield from self._simple_op("truncate_recording", "truncate recording", recording_id, position))

    def purge_recording_op(self, recording_id: int) -> Op[int]:
        """Operation of :meth:`purge_recording`: returns the number of segment files deleted."""
        return (yield from self._simple_op("purge_recording", "purge recording", recording_id))

    def detach_segments_op(self, recording_id: int, new_start_position: int) -> Op[None]:
        """Operation of :meth:`detach_segments`."""
        yield from self._simple_op("detach_segments", "detach segments", recording_id, new_start_position)

    def delete_detached_segments_op(self, recording_id: int) -> Op[int]:
        """Operation of :meth:`delete_detached_segments`: returns how many files were deleted."""
        return (yield from self._simple_op("delete_detached_segments", "delete detached segments", recording_id))

    def purge_segments_op(self, recording_id: int, new_start_position: int) -> Op[int]:
        """Operation of :meth:`purge_segments`: returns how many files were deleted."""
        return (yield from self._simple_op("purge_segments", "purge segments", recording_id, new_start_position))

    def attach_segments_op(self, recording_id: int) -> Op[int]:
        """Operation of :meth:`attach_segments`: returns how many segments were attached."""
        return (yield from self._simple_op("attach_segments", "attach segments", recording_id))

    def migrate_segments_op(self, src_recording_id: int, dst_recording_id: int) -> Op[int]:
        """Operation of :meth:`migrate_segments`: returns how many segments moved."""
        return (yield from self._simple_op("migrate_segments", "migrate segments", src_recording_id,
                                           dst_recording_id))

    def update_channel_op(self, recording_id: int, new_channel: str) -> Op[None]:
        """Operation of :meth:`update_channel`."""
        yield from self._simple_op("update_channel", "update channel", recording_id, new_channel)

    # -- replication operations -----------------------------------------------------------------------------
    def replicate_op(self, src_recording_id: int, dst_recording_id: int, src_control_stream_id: int,
                     src_control_channel: str, live_destination: str | None = None, *,
                     stop_position: int = NULL_POSITION, replication_channel: str | None = None,
                     params: ReplicationParams | None = None) -> Op[int]:
        """Operation of :meth:`replicate`: returns the replication id."""
        if params is None:
            params = ReplicationParams(stop_position=stop_position, dst_recording_id=dst_recording_id,
                                       live_destination=live_destination, replication_channel=replication_channel)
        correlation_id = self._begin()
        sent = self.archive_proxy.replicate(src_recording_id, src_control_stream_id, src_control_channel, params,
                                            correlation_id, self.control_session_id)
        return (yield from self._request(sent, "replicate", correlation_id))

    def tagged_replicate_op(self, src_recording_id: int, dst_recording_id: int, channel_tag_id: int,
                            subscription_tag_id: int, src_control_stream_id: int, src_control_channel: str,
                            live_destination: str | None = None, *, stop_position: int = NULL_POSITION,
                            replication_channel: str | None = None) -> Op[int]:
        """Operation of :meth:`tagged_replicate`: returns the replication id."""
        params = ReplicationParams(stop_position=stop_position, dst_recording_id=dst_recording_id,
                                   live_destination=live_destination, replication_channel=replication_channel,
                                   channel_tag_id=channel_tag_id, subscription_tag_id=subscription_tag_id)
        return (yield from self.replicate_op(src_recording_id, dst_recording_id, src_control_stream_id,
                                             src_control_channel, params=params))

    def stop_replication_op(self, replication_id: int) -> Op[None]:
        """Operation of :meth:`stop_replication`."""
        yield from self._simple_op("stop_replication", "stop replication", replication_id)

    def try_stop_replication_op(self, replication_id: int) -> Op[bool]:
        """Operation of :meth:`try_stop_replication`: returns False for an unknown replication."""
        return (yield from self._simple_op("stop_replication", "stop replication", replication_id,
                                           allowed_error_code=ArchiveErrorCode.UNKNOWN_REPLICATION)) != 0

    def keep_alive(self) -> None:
        """Send a KeepAliveRequest for this session (the archive does not answer it; Aeron 1.53 archives keep a
        session alive without them, older ones time an idle session out)."""
        with self._lock:
            self._ensure_connected()
            if not self.archive_proxy.keep_alive(self.control_session_id, self.aeron.next_correlation_id()):
                raise ArchiveError("failed to send keep alive request")

    # -- polling the response stream outside a request ------------------------------------------------------
    def poll_for_error_response(self) -> str | None:
        """One poll of the response stream: the message of an ERROR for this session, else None (a recording
        signal met is dispatched). Returns "not connected" when the response stream is gone."""
        with self._lock:
            self._ensure_connected()
            poller = self.control_response_poller
            if not poller.subscription.is_connected:
                self._set_state(State.DISCONNECTED)
                return NOT_CONNECTED_MSG
            if poller.poll() != 0 and poller.is_poll_complete and poller.control_session_id == self.control_session_id:
                if poller.code == codecs.ControlResponseCode.ERROR:
                    return poller.error_message
                if poller.template_id == codecs.RecordingSignalEventDecoder.TEMPLATE_ID:
                    self._dispatch_signal(poller.signal_event())
            return None

    def check_for_error_response(self) -> None:
        """One poll of the response stream: an ERROR for this session is raised as its ArchiveError (or given to
        the error handler); a recording signal is dispatched."""
        with self._lock:
            self._ensure_connected()
            poller = self.control_response_poller
            if not poller.subscription.is_connected:
                self._set_state(State.DISCONNECTED)
                self._report(ArchiveError(NOT_CONNECTED_MSG))
            elif (poller.poll() != 0 and poller.is_poll_complete
                  and poller.control_session_id == self.control_session_id):
                if poller.code == codecs.ControlResponseCode.ERROR:
                    self._report(archive_error(poller.error_message or "", poller.relevant_id, poller.correlation_id))
                elif poller.template_id == codecs.RecordingSignalEventDecoder.TEMPLATE_ID:
                    self._dispatch_signal(poller.signal_event())

    def _report(self, error: ArchiveError) -> None:
        if self.context.error_handler is not None:
            self.context.error_handler(error)
        else:
            raise error

    def poll_for_recording_signals(self) -> int:
        """One poll of the response stream: 1 when a recording signal was dispatched to the consumer, else 0. An
        ERROR for this session is raised (or given to the error handler)."""
        with self._lock:
            self._ensure_connected()
            poller = self.control_response_poller
            if poller.poll() != 0 and poller.is_poll_complete and poller.control_session_id == self.control_session_id:
                if poller.code == codecs.ControlResponseCode.ERROR:
                    self._report(archive_error(poller.error_message or "", poller.relevant_id, poller.correlation_id))
                elif poller.template_id == codecs.RecordingSignalEventDecoder.TEMPLATE_ID:
                    self._dispatch_signal(poller.signal_event())
                    return 1
            return 0

    # -- recording ------------------------------------------------------------------------------------------
    def add_recorded_publication(self, channel: str, stream_id: int) -> Any:
        """Add a publication and record it locally (its channel with its ``session-id``); ArchiveError when the
        publication already existed in this client."""
        return self._run(self.add_recorded_publication_op(channel, stream_id))

    def add_recorded_exclusive_publication(self, channel: str, stream_id: int) -> Any:
        """Add an exclusive publication and record it locally."""
        return self._run(self.add_recorded_exclusive_publication_op(channel, stream_id))

    def start_recording(self, channel: str, stream_id: int, source_location: int = SourceLocation.REMOTE,
                        auto_stop: bool | None = None) -> int:
        """Record every image of ``channel``/``stream_id``; returns the recording subscription's id. With
        ``auto_stop`` the recording subscription closes when its recordings stop."""
        return self._run(self.start_recording_op(channel, stream_id, source_location, auto_stop))

    def extend_recording(self, recording_id: int, channel: str, stream_id: int,
                         source_location: int = SourceLocation.REMOTE, auto_stop: bool | None = None) -> int:
        """Extend stopped recording ``recording_id`` with a new image of the same stream; the subscription id."""
        return self._run(self.extend_recording_op(recording_id, channel, stream_id, source_location, auto_stop))

    def stop_recording(self, channel: str, stream_id: int) -> None:
        """Stop recording ``channel``/``stream_id`` (UnknownSubscriptionError when not recorded)."""
        self._run(self.stop_recording_op(channel, stream_id))

    def try_stop_recording(self, channel: str, stream_id: int) -> bool:
        """As :meth:`stop_recording`; False instead of UnknownSubscriptionError."""
        return self._run(self.try_stop_recording_op(channel, stream_id))

    def stop_recording_subscription(self, subscription_id: int) -> None:
        """Stop the recording subscription ``subscription_id`` (Java's ``stopRecording(long)``)."""
        self._run(self.stop_recording_subscription_op(subscription_id))

    def try_stop_recording_subscription(self, subscription_id: int) -> bool:
        """As :meth:`stop_recording_subscription`; False for an unknown subscription."""
        return self._run(self.try_stop_recording_subscription_op(subscription_id))

    def try_stop_recording_by_identity(self, recording_id: int) -> bool:
        """Stop the active recording ``recording_id``; False when it was not active."""
        return self._run(self.try_stop_recording_by_identity_op(recording_id))

    def stop_recording_publication(self, publication: Any) -> None:
        """Stop recording ``publication`` (its channel with its session id)."""
        self._run(self.stop_recording_publication_op(publication))

    # -- replay ---------------------------------------------------------------------------------------------
    def start_replay(self, recording_id: int, replay_channel: str, replay_stream_id: int,
                     position: int = NULL_POSITION, length: int = REPLAY_ALL_AND_FOLLOW, *,
                     params: ReplayParams | None = None) -> int:
        """Ask for a replay of ``length`` bytes from ``position`` (-1: the start; length -1 follows a live
        recording, -2 stops at its current end) to ``replay_channel``; returns the replay session id (its low 32
        bits are the replay image's session id). ``params`` overrides position and length; a ``control-mode=
        response`` replay channel needs ``params.subscription_registration_id`` (the subscription to answer)."""
        return self._run(self.start_replay_op(recording_id, replay_channel, replay_stream_id, position, length,
                                              params=params))

    def start_bounded_replay(self, recording_id: int, position: int, length: int, limit_counter_id: int,
                             replay_channel: str, replay_stream_id: int) -> int:
        """As :meth:`start_replay`, never past the value of counter ``limit_counter_id``."""
        return self._run(self.start_bounded_replay_op(recording_id, position, length, limit_counter_id,
                                                      replay_channel, replay_stream_id))

    def stop_replay(self, replay_session_id: int) -> None:
        """Stop replay ``replay_session_id`` (Aeron 1.53 answers OK for an unknown one too)."""
        self._run(self.stop_replay_op(replay_session_id))

    def stop_all_replays(self, recording_id: int = NULL_VALUE) -> None:
        """Stop every replay of ``recording_id`` (-1: of every recording)."""
        self._run(self.stop_all_replays_op(recording_id))

    def replay(self, recording_id: int, replay_channel: str, replay_stream_id: int, position: int = NULL_POSITION,
               length: int = REPLAY_ALL_AND_FOLLOW, *, params: ReplayParams | None = None,
               available_image_handler: ImageHandler | None = None,
               unavailable_image_handler: ImageHandler | None = None) -> Any:
        """Start a replay and return a new Subscription to it (``replay_channel`` with the replay's session id; a
        ``control-mode=response`` channel is replayed over the response channel, as Aeron's
        ``AeronArchive.replay`` does)."""
        return self._run(self.replay_op(recording_id, replay_channel, replay_stream_id, position, length,
                                        params=params, available_image_handler=available_image_handler,
                                        unavailable_image_handler=unavailable_image_handler))

    def replay_error(self, replay_correlation_id: int) -> ArchiveError | None:
        """The ERROR with which the archive ended the replay asked for by request ``replay_correlation_id`` (the
        client's :attr:`last_correlation_id` after :meth:`start_replay` or :meth:`replay`), or None.

        Aeron's archive ends a replay that cannot go on (a segment file cut short or missing, a frame that is not
        where the recording says, a checksum that does not match) by closing its publication and answering the
        replay request with an ERROR naming the segment file and position; this asks after the replay's image has
        gone whether that happened: the control response stream is ordered, so one round trip reads any ERROR the
        archive sent before. Other ERRORs met go to the context's error handler."""
        return self._run(self.replay_error_op(replay_correlation_id))

    # -- queries --------------------------------------------------------------------------------------------
    @overload
    def list_recordings(self, from_recording_id: int, record_count: int) -> list[RecordingDescriptor]: ...

    @overload
    def list_recordings(self, from_recording_id: int, record_count: int,
                        consumer: Callable[[RecordingDescriptor], object]) -> int: ...

    def list_recordings(self, from_recording_id: int, record_count: int,
                        consumer: Callable[[RecordingDescriptor], object] | None = None
                        ) -> int | list[RecordingDescriptor]:
        """Up to ``record_count`` descriptors from ``from_recording_id`` on: as a list, or given to ``consumer`` as
        they arrive, returning the count given (Aeron's form)."""
        if consumer is None:
            return self._run(self.list_recordings_op(from_recording_id, record_count))
        return self._run(self.list_recordings_op(from_recording_id, record_count, consumer))

    @overload
    def list_recordings_for_uri(self, from_recording_id: int, record_count: int, channel_fragment: str,
                                stream_id: int) -> list[RecordingDescriptor]: ...

    @overload
    def list_recordings_for_uri(self, from_recording_id: int, record_count: int, channel_fragment: str,
                                stream_id: int, consumer: Callable[[RecordingDescriptor], object]) -> int: ...

    def list_recordings_for_uri(self, from_recording_id: int, record_count: int, channel_fragment: str,
                                stream_id: int, consumer: Callable[[RecordingDescriptor], object] | None = None
                                ) -> int | list[RecordingDescriptor]:
        """As :meth:`list_recordings`, for recordings of ``stream_id`` whose channel contains ``channel_fragment``."""
        if consumer is None:
            return self._run(self.list_recordings_for_uri_op(from_recording_id, record_count, channel_fragment,
                                                             stream_id))
        return self._run(self.list_recordings_for_uri_op(from_recording_id, record_count, channel_fragment,
                                                         stream_id, consumer))

    @overload
    def list_recording(self, recording_id: int) -> RecordingDescriptor | None: ...

    @overload
    def list_recording(self, recording_id: int, consumer: Callable[[RecordingDescriptor], object]) -> int: ...

    def list_recording(self, recording_id: int, consumer: Callable[[RecordingDescriptor], object] | None = None
                       ) -> int | RecordingDescriptor | None:
        """Recording ``recording_id``'s descriptor, None when unknown; or given to ``consumer``, returning 1, or 0
        when unknown (Aeron's form)."""
        if consumer is None:
            return self._run(self.list_recording_op(recording_id))
        return self._run(self.list_recording_op(recording_id, consumer))

    @overload
    def list_recording_subscriptions(self, pseudo_index: int, subscription_count: int, channel_fragment: str,
                                     stream_id: int, apply_stream_id: bool
                                     ) -> list[RecordingSubscriptionDescriptor]: ...

    @overload
    def list_recording_subscriptions(self, pseudo_index: int, subscription_count: int, channel_fragment: str,
                                     stream_id: int, apply_stream_id: bool,
                                     consumer: Callable[[RecordingSubscriptionDescriptor], object]) -> int: ...

    def list_recording_subscriptions(self, pseudo_index: int, subscription_count: int, channel_fragment: str,
                                     stream_id: int, apply_stream_id: bool,
                                     consumer: Callable[[RecordingSubscriptionDescriptor], object] | None = None
                                     ) -> int | list[RecordingSubscriptionDescriptor]:
        """Up to ``subscription_count`` active recording subscriptions: as a list, or given to ``consumer``,
        returning the count given (Aeron's form)."""
        if consumer is None:
            return self._run(self.list_recording_subscriptions_op(pseudo_index, subscription_count,
                                                                  channel_fragment, stream_id, apply_stream_id))
        return self._run(self.list_recording_subscriptions_op(pseudo_index, subscription_count, channel_fragment,
                                                              stream_id, apply_stream_id, consumer))

    def get_recording_position(self, recording_id: int) -> int:
        """The recorded position of an active recording, -1 when it is not active."""
        return self._run(self.get_recording_position_op(recording_id))

    def get_start_position(self, recording_id: int) -> int:
        """The start position of ``recording_id``."""
        return self._run(self.get_start_position_op(recording_id))

    def get_stop_position(self, recording_id: int) -> int:
        """The stop position of ``recording_id`` (-1 while it is active)."""
        return self._run(self.get_stop_position_op(recording_id))

    def get_max_recorded_position(self, recording_id: int) -> int:
        """The recorded position when active, else the stop position."""
        return self._run(self.get_max_recorded_position_op(recording_id))

    def find_last_matching_recording(self, min_recording_id: int, channel_fragment: str, stream_id: int,
                                     session_id: int) -> int:
        """The highest recording id ≥ ``min_recording_id`` matching, or -1."""
        return self._run(self.find_last_matching_recording_op(min_recording_id, channel_fragment, stream_id,
                                                              session_id))

    # -- catalog and segments -------------------------------------------------------------------------------
    def truncate_recording(self, recording_id: int, position: int) -> int:
        """Truncate stopped recording ``recording_id`` to ``position``; the number of segment files deleted."""
        return self._run(self.truncate_recording_op(recording_id, position))

    def purge_recording(self, recording_id: int) -> int:
        """Delete stopped recording ``recording_id`` and its files; the number of segment files deleted."""
        return self._run(self.purge_recording_op(recording_id))

    def detach_segments(self, recording_id: int, new_start_position: int) -> None:
        """Move the start of ``recording_id`` to ``new_start_position`` (a segment boundary), detaching the
        segments before it."""
        self._run(self.detach_segments_op(recording_id, new_start_position))

    def delete_detached_segments(self, recording_id: int) -> int:
        """Delete the detached segment files of ``recording_id``; how many."""
        return self._run(self.delete_detached_segments_op(recording_id))

    def purge_segments(self, recording_id: int, new_start_position: int) -> int:
        """Detach and delete the segments before ``new_start_position``; how many files."""
        return self._run(self.purge_segments_op(recording_id, new_start_position))

    def attach_segments(self, recording_id: int) -> int:
        """Attach the segment files found before the start of ``recording_id``; how many."""
        return self._run(self.attach_segments_op(recording_id))

    def migrate_segments(self, src_recording_id: int, dst_recording_id: int) -> int:
        """Move the segments of ``src_recording_id`` to the front of ``dst_recording_id``; how many."""
        return self._run(self.migrate_segments_op(src_recording_id, dst_recording_id))

    def update_channel(self, recording_id: int, new_channel: str) -> None:
        """Change the original channel stored for ``recording_id``."""
        self._run(self.update_channel_op(recording_id, new_channel))

    # -- replication ----------------------------------------------------------------------------------------
    def replicate(self, src_recording_id: int, dst_recording_id: int, src_control_stream_id: int,
                  src_control_channel: str, live_destination: str | None = None, *,
                  stop_position: int = NULL_POSITION, replication_channel: str | None = None,
                  params: ReplicationParams | None = None) -> int:
        """Replicate ``src_recording_id`` of the archive at ``src_control_channel`` into this archive (a new
        recording when ``dst_recording_id`` is -1); returns the replication id. Progress arrives as recording
        signals. ``params`` overrides the other optional arguments."""
        return self._run(self.replicate_op(src_recording_id, dst_recording_id, src_control_stream_id,
                                           src_control_channel, live_destination, stop_position=stop_position,
                                           replication_channel=replication_channel, params=params))

    def tagged_replicate(self, src_recording_id: int, dst_recording_id: int, channel_tag_id: int,
                         subscription_tag_id: int, src_control_stream_id: int, src_control_channel: str,
                         live_destination: str | None = None, *, stop_position: int = NULL_POSITION,
                         replication_channel: str | None = None) -> int:
        """As :meth:`replicate`, with the replication subscription tagged ``channel_tag_id``/``subscription_tag_id``."""
        return self._run(self.tagged_replicate_op(src_recording_id, dst_recording_id, channel_tag_id,
                                                  subscription_tag_id, src_control_stream_id, src_control_channel,
                                                  live_destination, stop_position=stop_position,
                                                  replication_channel=replication_channel))

    def stop_replication(self, replication_id: int) -> None:
        """Stop replication ``replication_id`` (UnknownReplicationError when there is none)."""
        self._run(self.stop_replication_op(replication_id))

    def try_stop_replication(self, replication_id: int) -> bool:
        """As :meth:`stop_replication`; False for an unknown replication."""
        return self._run(self.try_stop_replication_op(replication_id))


__all__ = ["AeronArchive", "AsyncConnect", "Context", "SourceLocation", "State", "NullCredentialsSupplier",
           "connect_op", "is_response_channel", "replay_image_session_id", "segment_file_base_position"]
