# SPDX-License-Identifier: Apache-2.0
"""The cluster client on asyncio: ``async with aeron.aio.cluster.connect(...) as cluster``.

:class:`AsyncAeronCluster` wraps a sync :class:`aeron.cluster.client.AeronCluster` and awaits the very same
operations (the connect handshake, keep-alives, admin requests, close; see :mod:`aeron.common.op`) where the sync
client would idle, so it holds no protocol state of its own: leader changes, lost leaders and the session's end are
the sync client's, followed by every egress poll made here.

- ``await cluster.offer(payload, timeout=...)`` returns the ingress position. Back pressure and a leader change
  (the ingress not connected while the client looks for, or connects to, a new leader) are waited out, polling
  the egress meanwhile so that the new leader is heard of; a closed session raises ClusterSessionClosedError, a
  lost cluster the ClusterTimeoutError that closed it, ``timeout`` AeronTimeoutError.
- ``async for message in cluster`` (or ``await cluster.receive()``) yields the session's egress messages, one
  :class:`ClusterMessage` re-filled in place: its payload is a zero-copy view of the log valid until the next step
  (``copy()`` keeps one). There is no queue between the log and the application: an unread message back-pressures
  the cluster's egress, and what comes after it on the egress (a NewLeaderEvent too) is seen once it is read.
- Session events, new-leader events and admin responses go to the ``listener`` given to :func:`connect` (an
  ``EgressListener``; its ``on_message`` is not used here) and, as :class:`SessionEvent`, :class:`NewLeaderEvent`
  and :class:`AdminResponse` objects, to ``cluster.events()``, a bounded queue (the oldest dropped when full,
  counted in ``events_dropped``).
- Keep-alives are the application's to send (``await cluster.send_keep_alive()``), as in Aeron: a session silent
  for the cluster's session timeout (10 s by default) is closed by the cluster. ``connect(keep_alive_interval=s)``
  starts a task that sends one whenever ``s`` seconds passed without an offer, and polls the egress for events.
"""
from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Union

from aeron.aio._idle import AsyncBackoffIdleStrategy, LoopShare, async_idle, deadline
from aeron.aio.client import AsyncAeron
from aeron.aio.subscription import Message
from aeron.client import ControlledPollAction, Publication
from aeron.client.aeron import Aeron
from aeron.client.context import Context as AeronContext
from aeron.cluster.client.aeron_cluster import AeronCluster, Context, ContextSettings, State, connect_op
from aeron.cluster.client.egress_listener import (AdminRequestType, AdminResponseCode, ControlledEgressListener,
                                                  EventCode, as_egress_listener)
from aeron.cluster.client.errors import ClusterSessionClosedError
from aeron.common.errors import ClusterError, ConfigurationError, IllegalStateError
from aeron.common.op import Op, drive_async

if TYPE_CHECKING:
    from typing_extensions import Unpack     # typing's from Python 3.11; annotations only, never imported at run time

__all__ = ["AsyncAeronCluster", "ClusterMessage", "SessionEvent", "NewLeaderEvent", "AdminResponse", "connect",
           "EVENT_QUEUE_CAPACITY"]

EVENT_QUEUE_CAPACITY = 1024
ABORT = ControlledPollAction.ABORT
BREAK = ControlledPollAction.BREAK
CLOSED = Publication.CLOSED
MAX_POSITION_EXCEEDED = Publication.MAX_POSITION_EXCEEDED


class ClusterMessage(Message):
    """One egress message of the session: ``cluster_session_id``, ``timestamp`` (the cluster time of the log entry
    that caused it), the ``payload`` (after the session header; a memoryview valid for this step) and the
    :class:`aeron.aio.subscription.Message` fields of its first fragment. ``copy()`` keeps it."""

    __slots__ = ("cluster_session_id", "timestamp")

    def __init__(self, payload: Any = None, cluster_session_id: int = 0, timestamp: int = 0, **fields: Any) -> None:
        """A message over ``payload``; :class:`AsyncAeronCluster` makes one and re-fills it."""
        super().__init__(payload, **fields)
        self.cluster_session_id = cluster_session_id
        self.timestamp = timestamp

    def copy(self) -> "ClusterMessage":
        """The same message over its own bytes: valid for as long as you keep it."""
        return ClusterMessage(self.tobytes(), self.cluster_session_id, self.timestamp, session_id=self.session_id,
                              stream_id=self.stream_id, term_id=self.term_id, term_offset=self.term_offset,
                              position=self.position, reserved_value=self.reserved_value, flags=self.flags)

    def __repr__(self) -> str:
        """Session, timestamp and length."""
        return (f"<ClusterMessage cluster_session_id={self.cluster_session_id} timestamp={self.timestamp} "
                f"length={self.length}>")


@dataclasses.dataclass(frozen=True)
class SessionEvent:
    """A SessionEvent for this session (``code`` CLOSED with ``detail`` TIMEOUT, SERVICE_ACTION or election; ERROR;
    ...), as ``EgressListener.on_session_event`` receives it."""

    correlation_id: int
    cluster_session_id: int
    leadership_term_id: int
    leader_member_id: int
    code: EventCode
    detail: str


@dataclasses.dataclass(frozen=True)
class NewLeaderEvent:
    """A new leader took over; the client already follows it."""

    cluster_session_id: int
    leadership_term_id: int
    leader_member_id: int
    ingress_endpoints: str


@dataclasses.dataclass(frozen=True)
class AdminResponse:
    """The answer to an admin request (``send_admin_request_to_take_a_snapshot``); ``payload`` copied."""

    cluster_session_id: int
    correlation_id: int
    request_type: AdminRequestType
    response_code: AdminResponseCode
    message: str
    payload: bytes


ClusterEvent = Union[SessionEvent, NewLeaderEvent, AdminResponse]


class _Egress(ControlledEgressListener):
    """The sync client's controlled egress listener: takes at most one message a poll when asked to (BREAK), else
    leaves messages in the log (ABORT); queues the events and passes them to the application's listener."""

    def __init__(self, listener: Any, capacity: int) -> None:
        self.listener = as_egress_listener(listener) if listener is not None else None
        self.events: collections.deque[ClusterEvent] = collections.deque()
        self.capacity = capacity
        self.dropped = 0
        self.take = False
        self.message = ClusterMessage()         # re-filled at every step: nothing allocated per message
        self.taken: ClusterMessage | None = None

    def on_message(self, cluster_session_id: int, timestamp: int, buffer: Any, offset: int, length: int,
                   header: Any) -> int:
        """Fill the message when one is wanted, else leave it in the log."""
        if not self.take or self.taken is not None:
            return ABORT
        message = self.message
        message._fill(buffer, offset, length, header)
        message.cluster_session_id = cluster_session_id
        message.timestamp = timestamp
        self.taken = message
        return BREAK

    def _queue(self, event: ClusterEvent) -> None:
        if len(self.events) >= self.capacity:
            self.events.popleft()
            self.dropped += 1
        self.events.append(event)

    def on_session_event(self, correlation_id: int, cluster_session_id: int, leadership_term_id: int,
                         leader_member_id: int, code: EventCode, detail: str) -> None:
        """Queue it and pass it on."""
        self._queue(SessionEvent(correlation_id, cluster_session_id, leadership_term_id, leader_member_id, code,
                                 detail))
        if self.listener is not None:
            self.listener.on_session_event(correlation_id, cluster_session_id, leadership_term_id, leader_member_id,
                                           code, detail)

    def on_new_leader(self, cluster_session_id: int, leadership_term_id: int, leader_member_id: int,
                      ingress_endpoints: str) -> None:
        """Queue it and pass it on."""
        self._queue(NewLeaderEvent(cluster_session_id, leadership_term_id, leader_member_id, ingress_endpoints))
        if self.listener is not None:
            self.listener.on_new_leader(cluster_session_id, leadership_term_id, leader_member_id, ingress_endpoints)

    def on_admin_response(self, cluster_session_id: int, correlation_id: int, request_type: AdminRequestType,
                          response_code: AdminResponseCode, message: str, payload: Any, payload_offset: int,
                          payload_length: int) -> None:
        """Queue it (payload copied) and pass it on."""
        self._queue(AdminResponse(cluster_session_id, correlation_id, request_type, response_code, message,
                                  payload.get_bytes(payload_offset, payload_length)))
        if self.listener is not None:
            self.listener.on_admin_response(cluster_session_id, correlation_id, request_type, response_code, message,
                                            payload, payload_offset, payload_length)


class AsyncAeronCluster(LoopShare):
    """Made by :func:`connect`; see the module docstring. ``cluster`` is the sync client it wraps."""

    def __init__(self, cluster: AeronCluster, egress: _Egress, client: AsyncAeron, owns_client: bool = False,
                 keep_alive_interval: float | None = None) -> None:
        """Wrap a connected sync client whose Aeron is ``client``'s and whose controlled egress listener is
        ``egress``; use :func:`connect`."""
        super().__init__()
        self.cluster = cluster
        self.client = client
        self._egress = egress
        self._owns_client = owns_client
        self._current: ClusterMessage | None = None
        self._ingress_count = 0
        self._closed_by_application = False
        self._keep_alive_task: asyncio.Task[None] | None = None
        if keep_alive_interval is not None:
            self._keep_alive_task = asyncio.get_running_loop().create_task(
                self._keep_alive(keep_alive_interval), name=f"cluster-keep-alive-{cluster.cluster_session_id}")

    async def _drive(self, op: Op[Any]) -> Any:
        return await drive_async(op, AsyncBackoffIdleStrategy())

    # -- identity and state ----------------------------------------------------------------------------------------
    @property
    def cluster_session_id(self) -> int:
        """The cluster's id of this session."""
        return self.cluster.cluster_session_id

    @property
    def leadership_term_id(self) -> int:
        """The leadership term this client knows of."""
        return self.cluster.leadership_term_id

    @property
    def leader_member_id(self) -> int:
        """The member id of the leader this client knows of."""
        return self.cluster.leader_member_id

    @property
    def state(self) -> State:
        """The sync client's :class:`aeron.cluster.client.State`."""
        return self.cluster.state

    @property
    def is_closed(self) -> bool:
        """True once the session is closed (by :meth:`close`, by the cluster, or after losing the cluster)."""
        return self.cluster.is_closed

    @property
    def context(self) -> Context:
        """The sync client's concluded context."""
        return self.cluster.context

    @property
    def events_dropped(self) -> int:
        """Events dropped from a full :meth:`events` queue."""
        return self._egress.dropped

    def _closed_error(self) -> ClusterError:
        # a fresh exception each time (one instance raised again and again would pile up tracebacks)
        error = self.cluster.close_error
        if isinstance(error, ClusterSessionClosedError):
            return ClusterSessionClosedError(str(error), error.reason)
        if error is not None:
            return type(error)(*error.args)
        return ClusterSessionClosedError("the cluster client is closed", "CLOSED")

    # -- egress ---------------------------------------------------------------------------------------------------
    def _poll(self, take: bool) -> int:
        # one controlled poll of the sync client: a message taken (into self._current) only when ``take``; events
        # and state changes always. Returns the work done. A poll for events only (an offer's wait, the keep-alive
        # task, events()) leaves the message the application holds alone: it is valid until the next receive.
        previous = self._current
        if take and previous is not None:   # the last step's view is no longer valid
            previous.release()
            self._current = None
        egress = self._egress
        egress.take = take
        egress.taken = None
        try:
            work = self.cluster.controlled_poll_egress()
        finally:
            egress.take = False
        message, egress.taken = egress.taken, None
        if message is not None:
            if self.cluster.is_closed:
                message = message.copy()    # taken just before the session's end released the egress
            self._current = message
        elif take:
            self._current = None
        return work

    def receive_nowait(self) -> ClusterMessage | None:
        """The next egress message if one is in the log, else None (never waits). Raises the session's end as
        :meth:`receive` does."""
        if self.cluster.is_closed:
            raise self._closed_error()
        self._poll(True)
        return self._current

    async def receive(self, timeout: float | None = None) -> ClusterMessage:
        """The next egress message of the session, waiting for one (AeronTimeoutError after ``timeout`` seconds).
        Its payload is valid until the next receive (``copy()`` keeps it). Raises ClusterSessionClosedError once the
        session is closed, or the ClusterTimeoutError that closed it."""
        run = self._run_count()
        if run & 15 == 0 and self._turn_due(run):
            await asyncio.sleep(0)          # a long backlog still lets the loop run (polls nothing: loses nothing)
        message = self.receive_nowait()
        if message is not None:
            return message                  # fast path: nothing awaited
        idle = async_idle(self.client._wakeup)      # woken by data for this client's subscriptions
        async with deadline(timeout, "cluster egress message received"):
            while True:
                await idle.idle(0)
                message = self.receive_nowait()
                if message is not None:
                    self._run = 0
                    return message
        raise AssertionError("unreachable")

    def _run_count(self) -> int:
        run = self._run
        self._run = run + 1
        return run

    def __aiter__(self) -> "AsyncAeronCluster":
        """``async for message in cluster``: the egress messages until the session closes (a close by the
        application ends the iteration; one by the cluster, or a lost cluster, raises its error)."""
        return self

    async def __anext__(self) -> ClusterMessage:
        """The next egress message (see :meth:`receive`)."""
        if self._closed_by_application:
            raise StopAsyncIteration
        try:
            return await self.receive()
        except ClusterSessionClosedError:
            if self._closed_by_application:
                raise StopAsyncIteration from None
            raise

    async def events(self, timeout: float | None = None) -> AsyncIterator[ClusterEvent]:
        """``async for event in cluster.events()``: the session events, new-leader events and admin responses met
        by any egress poll of this client (iterating messages, waiting offers, the keep-alive task), polling the
        egress itself while there are none (messages are left for :meth:`receive`). Ends once the session is
        closed and its events are consumed; AeronTimeoutError when none comes for ``timeout`` seconds."""
        queue = self._egress.events
        idle = AsyncBackoffIdleStrategy()
        while True:
            if queue:
                idle.reset()
                yield queue.popleft()
                continue
            if self.cluster.is_closed:
                return
            async with deadline(timeout, "cluster event"):
                while not queue and not self.cluster.is_closed:
                    await idle.idle(self._poll(False))

    # -- ingress --------------------------------------------------------------------------------------------------
    async def offer(self, buffer: Any, offset: int = 0, length: int = -1, timeout: float | None = None) -> int:
        """Offer ``buffer[offset:offset + length]`` to the cluster after the session header (no copy); returns the
        new ingress position. Returns without suspending when the offer is accepted at once; back pressure and a
        leader change are waited out while the egress is polled for events (messages are left for
        :meth:`receive`). Raises ClusterSessionClosedError (or the ClusterTimeoutError of a lost cluster) once the
        session is closed, AeronTimeoutError after ``timeout`` seconds (None: no limit)."""
        run = self._run_count()
        if run & 15 == 0 and self._turn_due(run):
            await asyncio.sleep(0)                      # before the offer: a cancel here sends nothing
        result = self.cluster.offer(buffer, offset, length)
        if result > 0:
            self._ingress_count += 1
            return result                               # fast path: nothing awaited
        return await self._offer_slow(buffer, offset, length, timeout, result)

    async def _offer_slow(self, buffer: Any, offset: int, length: int, timeout: float | None, result: int) -> int:
        cluster = self.cluster
        idle = AsyncBackoffIdleStrategy()
        async with deadline(timeout, "cluster offer accepted"):
            while True:
                if result == CLOSED or result == MAX_POSITION_EXCEEDED or cluster.is_closed:
                    work = self._poll(False) if not cluster.is_closed else 0     # a pending close is carried out
                    if cluster.is_closed:
                        raise self._closed_error()
                    await idle.idle(work)
                else:
                    await idle.idle(self._poll(False))
                result = cluster.offer(buffer, offset, length)
                if result > 0:
                    self._run = 0
                    self._ingress_count += 1
                    return result
        raise AssertionError("unreachable")

    async def send_keep_alive(self) -> bool:
        """Send a SessionKeepAlive (up to three tries): True when sent, False when back pressured or while a leader
        changes. Raises ClusterSessionClosedError once the session is closed."""
        if self.cluster.is_closed:
            raise self._closed_error()
        sent: bool = await self._drive(self.cluster.send_keep_alive_op())
        if sent:
            self._ingress_count += 1
        return sent

    async def send_admin_request_to_take_a_snapshot(self, correlation_id: int) -> bool:
        """Ask the cluster to take a snapshot (as :meth:`AeronCluster.send_admin_request_to_take_a_snapshot`); the
        answer comes as an :class:`AdminResponse` event (and to the listener)."""
        if self.cluster.is_closed:
            raise self._closed_error()
        return await self._drive(self.cluster.send_admin_request_to_take_a_snapshot_op(correlation_id))  # type: ignore[no-any-return]

    async def _keep_alive(self, interval: float) -> None:
        # a keep-alive whenever ``interval`` passed without ingress; the egress polled for events each time
        last = self._ingress_count
        try:
            while not self.cluster.is_closed:
                await asyncio.sleep(interval)
                if self.cluster.is_closed:
                    return
                self._poll(False)
                if self._ingress_count == last and not self.cluster.is_closed:
                    await self.send_keep_alive()
                last = self._ingress_count
        except ClusterError:
            return          # the session's end (or a refused send) is the client's state: offers and receives say it

    # -- lifecycle ----------------------------------------------------------------------------------------------
    async def close(self) -> None:
        """Close the session (SessionCloseRequest when connected to a leader), and the AsyncAeron when
        :func:`connect` made it. Idempotent."""
        self._closed_by_application = True
        task, self._keep_alive_task = self._keep_alive_task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._current is not None:
            self._current.release()
            self._current = None
        if not self.cluster.is_closed:
            await self._drive(self.cluster.close_op())
        if self._owns_client:
            self._owns_client = False
            await self.client.close()

    async def __aenter__(self) -> "AsyncAeronCluster":
        """Return the client; the ``async with`` block closes it."""
        return self

    async def __aexit__(self, *exc: object) -> None:
        """Close the client."""
        await self.close()

    def __repr__(self) -> str:
        """The wrapped client's summary."""
        return f"<AsyncAeronCluster {self.cluster!r}>"


@contextlib.asynccontextmanager
async def connect(context: Context | None = None, *, client: AsyncAeron | None = None, listener: Any = None,
                  keep_alive_interval: float | None = None, event_queue_capacity: int = EVENT_QUEUE_CAPACITY,
                  **settings: Unpack[ContextSettings]) -> AsyncIterator[AsyncAeronCluster]:
    """``async with aeron.aio.cluster.connect(ingress_channel=..., ingress_endpoints=..., egress_channel=...) as
    cluster``: open a session with the cluster without blocking the loop (ClusterTimeoutError after the message
    timeout, ClusterError / ClusterAuthenticationError when refused).

    ``client`` is an :class:`aeron.aio.AsyncAeron` to use; without one an AsyncAeron is attached to the context's
    ``aeron_dir`` and closed on exit. ``context`` (or ``settings``, the keywords of
    :class:`aeron.cluster.client.Context`, checked by type checkers); its ``aeron`` is set to the AsyncAeron's client
    and its controlled egress listener to this face's. ``listener`` (an ``EgressListener``) hears the session events, new leaders and admin
    responses; ``keep_alive_interval`` (seconds) starts the keep-alive task.
    """
    if context is None:
        context = Context(**settings)
    elif settings:
        raise IllegalStateError("pass either a Context or keyword settings, not both")
    if keep_alive_interval is not None and not keep_alive_interval > 0:
        raise ConfigurationError(f"keep_alive_interval must be positive, got {keep_alive_interval}")
    owns = client is None
    if client is None:
        loop = asyncio.get_running_loop()
        aeron = await loop.run_in_executor(None, Aeron.connect, AeronContext(
            context.aeron_dir, use_conductor_agent_invoker=True))
        client = AsyncAeron(aeron)
    try:
        egress = _Egress(listener, event_queue_capacity)
        context.aeron = client.aeron
        context.owns_aeron_client = False
        context.controlled_egress_listener = egress
        context.conclude()
        sync_cluster = await drive_async(connect_op(context), AsyncBackoffIdleStrategy())
        cluster = AsyncAeronCluster(sync_cluster, egress, client, owns, keep_alive_interval)
    except BaseException:
        if owns:
            await client.close()
        raise
    try:
        yield cluster
    finally:
        await cluster.close()
