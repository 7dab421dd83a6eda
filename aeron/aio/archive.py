# SPDX-License-Identifier: Apache-2.0
"""The archive client on asyncio: ``async with aeron.aio.archive.connect(...) as archive``.

:class:`AsyncAeronArchive` wraps a sync :class:`aeron.archive.AeronArchive` and awaits the very same operations,
its public ``*_op`` generators (see :mod:`aeron.common.op`), where the sync client would idle: so it holds no
protocol state of its own. Operations are serialised by an asyncio lock (one request in flight per control session,
as the Java client's lock does). Replays are async iterators of messages; recording events and recording signals
are async streams.
"""
from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar, overload

from aeron.aio._idle import AsyncBackoffIdleStrategy, deadline
from aeron.aio.client import AsyncAeron
from aeron.aio.subscription import AsyncSubscription, Message
from aeron.archive.client.aeron_archive import (AeronArchive, Context, ContextSettings, SourceLocation, connect_op,
                                                is_response_channel, replay_image_session_id)
from aeron.archive.client.archive_proxy import ReplayParams, ReplicationParams
from aeron.archive.client.pollers import (RecordingEvent, RecordingEventsAdapter, RecordingSignalEvent,
                                          RecordingSubscriptionDescriptor)
from aeron.archive.errors import ArchiveError
from aeron.archive.configuration import NULL_POSITION, NULL_VALUE, REPLAY_ALL_AND_FOLLOW, REPLAY_ALL_AND_STOP
from aeron.archive.recording_descriptor import RecordingDescriptor
from aeron.client.aeron import Aeron
from aeron.client.context import Context as AeronContext
from aeron.common.channel_uri import SESSION_ID_PARAM_NAME, ChannelUri
from aeron.common.errors import IllegalStateError
from aeron.common.op import Op, drive_async

if TYPE_CHECKING:
    from typing_extensions import Unpack     # typing's from Python 3.11; annotations only, never imported at run time

T = TypeVar("T")
SIGNAL_QUEUE_CAPACITY = 4096


class AsyncAeronArchive:
    """Made by :func:`connect`. Every request method of :class:`aeron.archive.AeronArchive` is here as a
    coroutine with the same arguments and results (and the same typed ArchiveErrors): each awaits the sync
    client's public operation of the same name (``start_recording`` awaits ``AeronArchive.start_recording_op``,
    see :mod:`aeron.common.op`); ``replay()`` is an async iterator of the replayed messages,
    ``recording_events()`` and ``recording_signals()`` async streams."""

    def __init__(self, archive: AeronArchive, client: AsyncAeron, signals: collections.deque[RecordingSignalEvent],
                 owns_client: bool = False) -> None:
        """Wrap a connected sync client whose Aeron is ``client``'s; use :func:`connect`."""
        self.archive = archive
        self.client = client
        self._signals = signals
        self._owns_client = owns_client
        self._lock = asyncio.Lock()
        self.signals_dropped = 0

    async def _run(self, op: Op[T]) -> T:
        # one operation in flight per session, as the sync client's lock has it; ``op`` starts under the lock
        async with self._lock:
            return await drive_async(op, AsyncBackoffIdleStrategy())

    # -- identity and lifecycle ------------------------------------------------------------------------------------
    @property
    def control_session_id(self) -> int:
        """The archive's id for this session."""
        return self.archive.control_session_id

    @property
    def archive_id(self) -> int:
        """The archive's id."""
        return self.archive.archive_id

    @property
    def context(self) -> Context:
        """The sync client's concluded context."""
        return self.archive.context

    async def close(self) -> None:
        """Close the session (and the AsyncAeron when :func:`connect` made it). Idempotent."""
        async with self._lock:
            self.archive.close()
        if self._owns_client:
            self._owns_client = False
            await self.client.close()

    async def __aenter__(self) -> "AsyncAeronArchive":
        """Return the client; the ``async with`` block closes it."""
        return self

    async def __aexit__(self, *exc: object) -> None:
        """Close the client."""
        await self.close()

    # -- recording -------------------------------------------------------------------------------------------------
    async def add_recorded_publication(self, channel: str, stream_id: int) -> Any:
        """As :meth:`AeronArchive.add_recorded_publication`: the (sync) Publication."""
        return await self._run(self.archive.add_recorded_publication_op(channel, stream_id))

    async def add_recorded_exclusive_publication(self, channel: str, stream_id: int) -> Any:
        """As :meth:`AeronArchive.add_recorded_exclusive_publication`: the (sync) ExclusivePublication."""
        return await self._run(self.archive.add_recorded_exclusive_publication_op(channel, stream_id))

    async def start_recording(self, channel: str, stream_id: int, source_location: int = SourceLocation.REMOTE,
                              auto_stop: bool | None = None) -> int:
        """As :meth:`AeronArchive.start_recording`."""
        return await self._run(self.archive.start_recording_op(channel, stream_id, source_location, auto_stop))

    async def extend_recording(self, recording_id: int, channel: str, stream_id: int,
                               source_location: int = SourceLocation.REMOTE, auto_stop: bool | None = None) -> int:
        """As :meth:`AeronArchive.extend_recording`."""
        return await self._run(self.archive.extend_recording_op(recording_id, channel, stream_id, source_location,
                                                                auto_stop))

    async def stop_recording(self, channel: str, stream_id: int) -> None:
        """As :meth:`AeronArchive.stop_recording`."""
        await self._run(self.archive.stop_recording_op(channel, stream_id))

    async def stop_recording_subscription(self, subscription_id: int) -> None:
        """As :meth:`AeronArchive.stop_recording_subscription`."""
        await self._run(self.archive.stop_recording_subscription_op(subscription_id))

    async def try_stop_recording(self, channel: str, stream_id: int) -> bool:
        """As :meth:`AeronArchive.try_stop_recording`."""
        return await self._run(self.archive.try_stop_recording_op(channel, stream_id))

    async def try_stop_recording_subscription(self, subscription_id: int) -> bool:
        """As :meth:`AeronArchive.try_stop_recording_subscription`."""
        return await self._run(self.archive.try_stop_recording_subscription_op(subscription_id))

    async def try_stop_recording_by_identity(self, recording_id: int) -> bool:
        """As :meth:`AeronArchive.try_stop_recording_by_identity`."""
        return await self._run(self.archive.try_stop_recording_by_identity_op(recording_id))

    async def stop_recording_publication(self, publication: Any) -> None:
        """As :meth:`AeronArchive.stop_recording_publication`."""
        await self._run(self.archive.stop_recording_publication_op(publication))

    # -- replay ----------------------------------------------------------------------------------------------------
    async def start_replay(self, recording_id: int, replay_channel: str, replay_stream_id: int,
                           position: int = NULL_POSITION, length: int = REPLAY_ALL_AND_FOLLOW, *,
                           params: ReplayParams | None = None) -> int:
        """As :meth:`AeronArchive.start_replay`: the replay session id."""
        return await self._run(self.archive.start_replay_op(recording_id, replay_channel, replay_stream_id, position,
                                                            length, params=params))

    async def start_bounded_replay(self, recording_id: int, position: int, length: int, limit_counter_id: int,
                                   replay_channel: str, replay_stream_id: int) -> int:
        """As :meth:`AeronArchive.start_bounded_replay`."""
        return await self._run(self.archive.start_bounded_replay_op(recording_id, position, length, limit_counter_id,
                                                                    replay_channel, replay_stream_id))

    async def stop_replay(self, replay_session_id: int) -> None:
        """As :meth:`AeronArchive.stop_replay`."""
        await self._run(self.archive.stop_replay_op(replay_session_id))

    async def stop_all_replays(self, recording_id: int = NULL_VALUE) -> None:
        """As :meth:`AeronArchive.stop_all_replays`."""
        await self._run(self.archive.stop_all_replays_op(recording_id))

    async def replay_subscription(self, recording_id: int, replay_channel: str, replay_stream_id: int,
                                  position: int = NULL_POSITION, length: int = REPLAY_ALL_AND_FOLLOW, *,
                                  params: ReplayParams | None = None) -> AsyncSubscription:
        """Start a replay and return an :class:`AsyncSubscription` to it (Java's ``replay()``)."""
        subscription = await self._run(self.archive.replay_op(recording_id, replay_channel, replay_stream_id,
                                                              position, length, params=params))
        return AsyncSubscription(subscription)

    def replay(self, recording_id: int, position: int = NULL_POSITION, length: int = REPLAY_ALL_AND_STOP, *,
               replay_channel: str = "aeron:ipc", replay_stream_id: int = 0x5EED) -> "ReplayStream":
        """``async for message in archive.replay(recording_id, position=..., length=...)``: the replayed messages
        (assembled, zero-copy until the next one: ``message.copy()`` keeps one) until the replay ends (the
        archive's end of stream after ``length`` bytes; -2, the default, stops at the recording's current end).
        The replay starts at the first step; ``await stream.close()`` (or ``async with``) stops it early."""
        return ReplayStream(self, recording_id, position, length, replay_channel, replay_stream_id)

    async def replay_error(self, replay_correlation_id: int) -> ArchiveError | None:
        """As :meth:`AeronArchive.replay_error`: the ERROR that ended the replay asked for by request
        ``replay_correlation_id``, or None (:class:`ReplayStream` asks it when its image goes)."""
        return await self._run(self.archive.replay_error_op(replay_correlation_id))

    # -- queries ---------------------------------------------------------------------------------------------------
    @overload
    async def list_recordings(self, from_recording_id: int, record_count: int) -> list[RecordingDescriptor]: ...

    @overload
    async def list_recordings(self, from_recording_id: int, record_count: int,
                              consumer: Callable[[RecordingDescriptor], object]) -> int: ...

    async def list_recordings(self, from_recording_id: int, record_count: int,
                              consumer: Callable[[RecordingDescriptor], object] | None = None
                              ) -> int | list[RecordingDescriptor]:
        """As :meth:`AeronArchive.list_recordings`: the descriptors as a list, or given to ``consumer``, returning
        the count given."""
        if consumer is None:
            return await self._run(self.archive.list_recordings_op(from_recording_id, record_count))
        return await self._run(self.archive.list_recordings_op(from_recording_id, record_count, consumer))

    @overload
    async def list_recordings_for_uri(self, from_recording_id: int, record_count: int, channel_fragment: str,
                                      stream_id: int) -> list[RecordingDescriptor]: ...

    @overload
    async def list_recordings_for_uri(self, from_recording_id: int, record_count: int, channel_fragment: str,
                                      stream_id: int, consumer: Callable[[RecordingDescriptor], object]) -> int: ...

    async def list_recordings_for_uri(self, from_recording_id: int, record_count: int, channel_fragment: str,
                                      stream_id: int, consumer: Callable[[RecordingDescriptor], object] | None = None
                                      ) -> int | list[RecordingDescriptor]:
        """As :meth:`AeronArchive.list_recordings_for_uri`: a list, or the count given to ``consumer``."""
        if consumer is None:
            return await self._run(self.archive.list_recordings_for_uri_op(from_recording_id, record_count,
                                                                           channel_fragment, stream_id))
        return await self._run(self.archive.list_recordings_for_uri_op(from_recording_id, record_count,
                                                                       channel_fragment, stream_id, consumer))

    @overload
    async def list_recording(self, recording_id: int) -> RecordingDescriptor | None: ...

    @overload
    async def list_recording(self, recording_id: int, consumer: Callable[[RecordingDescriptor], object]) -> int: ...

    async def list_recording(self, recording_id: int,
                             consumer: Callable[[RecordingDescriptor], object] | None = None
                             ) -> int | RecordingDescriptor | None:
        """As :meth:`AeronArchive.list_recording`: the descriptor, None when unknown; or given to ``consumer``,
        returning 1, or 0 when unknown."""
        if consumer is None:
            return await self._run(self.archive.list_recording_op(recording_id))
        return await self._run(self.archive.list_recording_op(recording_id, consumer))

    @overload
    async def list_recording_subscriptions(self, pseudo_index: int, subscription_count: int, channel_fragment: str,
                                           stream_id: int, apply_stream_id: bool
                                           ) -> list[RecordingSubscriptionDescriptor]: ...

    @overload
    async def list_recording_subscriptions(self, pseudo_index: int, subscription_count: int, channel_fragment: str,
                                           stream_id: int, apply_stream_id: bool,
                                           consumer: Callable[[RecordingSubscriptionDescriptor], object]) -> int: ...

    async def list_recording_subscriptions(
            self, pseudo_index: int, subscription_count: int, channel_fragment: str, stream_id: int,
            apply_stream_id: bool, consumer: Callable[[RecordingSubscriptionDescriptor], object] | None = None
    ) -> int | list[RecordingSubscriptionDescriptor]:
        """As :meth:`AeronArchive.list_recording_subscriptions`: a list, or the count given to ``consumer``."""
        if consumer is None:
            return await self._run(self.archive.list_recording_subscriptions_op(
                pseudo_index, subscription_count, channel_fragment, stream_id, apply_stream_id))
        return await self._run(self.archive.list_recording_subscriptions_op(
            pseudo_index, subscription_count, channel_fragment, stream_id, apply_stream_id, consumer))

    async def get_recording_position(self, recording_id: int) -> int:
        """As :meth:`AeronArchive.get_recording_position`."""
        return await self._run(self.archive.get_recording_position_op(recording_id))

    async def get_start_position(self, recording_id: int) -> int:
        """As :meth:`AeronArchive.get_start_position`."""
        return await self._run(self.archive.get_start_position_op(recording_id))

    async def get_stop_position(self, recording_id: int) -> int:
        """As :meth:`AeronArchive.get_stop_position`."""
        return await self._run(self.archive.get_stop_position_op(recording_id))

    async def get_max_recorded_position(self, recording_id: int) -> int:
        """As :meth:`AeronArchive.get_max_recorded_position`."""
        return await self._run(self.archive.get_max_recorded_position_op(recording_id))

    async def find_last_matching_recording(self, min_recording_id: int, channel_fragment: str, stream_id: int,
                                           session_id: int) -> int:
        """As :meth:`AeronArchive.find_last_matching_recording`."""
        return await self._run(self.archive.find_last_matching_recording_op(min_recording_id, channel_fragment,
                                                                            stream_id, session_id))

    # -- catalog and segments ----------------------------------------------------------------------------------------
    async def truncate_recording(self, recording_id: int, position: int) -> int:
        """As :meth:`AeronArchive.truncate_recording`."""
        return await self._run(self.archive.truncate_recording_op(recording_id, position))

    async def purge_recording(self, recording_id: int) -> int:
        """As :meth:`AeronArchive.purge_recording`."""
        return await self._run(self.archive.purge_recording_op(recording_id))

    async def detach_segments(self, recording_id: int, new_start_position: int) -> None:
        """As :meth:`AeronArchive.detach_segments`."""
        await self._run(self.archive.detach_segments_op(recording_id, new_start_position))

    async def delete_detached_segments(self, recording_id: int) -> int:
        """As :meth:`AeronArchive.delete_detached_segments`."""
        return await self._run(self.archive.delete_detached_segments_op(recording_id))

    async def purge_segments(self, recording_id: int, new_start_position: int) -> int:
        """As :meth:`AeronArchive.purge_segments`."""
        return await self._run(self.archive.purge_segments_op(recording_id, new_start_position))

    async def attach_segments(self, recording_id: int) -> int:
        """As :meth:`AeronArchive.attach_segments`."""
        return await self._run(self.archive.attach_segments_op(recording_id))

    async def migrate_segments(self, src_recording_id: int, dst_recording_id: int) -> int:
        """As :meth:`AeronArchive.migrate_segments`."""
        return await self._run(self.archive.migrate_segments_op(src_recording_id, dst_recording_id))

    async def update_channel(self, recording_id: int, new_channel: str) -> None:
        """As :meth:`AeronArchive.update_channel`."""
        await self._run(self.archive.update_channel_op(recording_id, new_channel))

    # -- replication -----------------------------------------------------------------------------------------------
    async def replicate(self, src_recording_id: int, dst_recording_id: int, src_control_stream_id: int,
                        src_control_channel: str, live_destination: str | None = None, *,
                        stop_position: int = NULL_POSITION, replication_channel: str | None = None,
                        params: ReplicationParams | None = None) -> int:
        """As :meth:`AeronArchive.replicate`: the replication id."""
        return await self._run(self.archive.replicate_op(
            src_recording_id, dst_recording_id, src_control_stream_id, src_control_channel, live_destination,
            stop_position=stop_position, replication_channel=replication_channel, params=params))

    async def tagged_replicate(self, src_recording_id: int, dst_recording_id: int, channel_tag_id: int,
                               subscription_tag_id: int, src_control_stream_id: int, src_control_channel: str,
                               live_destination: str | None = None, *, stop_position: int = NULL_POSITION,
                               replication_channel: str | None = None) -> int:
        """As :meth:`AeronArchive.tagged_replicate`."""
        return await self._run(self.archive.tagged_replicate_op(
            src_recording_id, dst_recording_id, channel_tag_id, subscription_tag_id, src_control_stream_id,
            src_control_channel, live_destination, stop_position=stop_position,
            replication_channel=replication_channel))

    async def stop_replication(self, replication_id: int) -> None:
        """As :meth:`AeronArchive.stop_replication`."""
        await self._run(self.archive.stop_replication_op(replication_id))

    async def try_stop_replication(self, replication_id: int) -> bool:
        """As :meth:`AeronArchive.try_stop_replication`."""
        return await self._run(self.archive.try_stop_replication_op(replication_id))

    # -- signals and events ------------------------------------------------------------------------------------------
    async def recording_signals(self, timeout: float | None = None) -> AsyncIterator[RecordingSignalEvent]:
        """The recording signals of this session as they arrive (also those met while other requests waited):
        ``async for signal in archive.recording_signals()``; AeronTimeoutError when none comes for ``timeout``
        seconds. An ERROR response for this session met while polling is raised."""
        idle = AsyncBackoffIdleStrategy()
        while True:
            if self._signals:
                idle.reset()
                yield self._signals.popleft()
                continue
            async with deadline(timeout, "recording signal"):
                while not self._signals:
                    async with self._lock:
                        work = self.archive.poll_for_recording_signals()
                    await idle.idle(work)

    def recording_events(self, channel: str | None = None, stream_id: int | None = None) -> "RecordingEventStream":
        """The archive's recording events (RecordingStarted, RecordingProgress, RecordingStopped) from its events
        channel (the context's by default): ``async with archive.recording_events() as events: async for event in
        events``. Entering subscribes and waits for the archive's events publication to connect (events sent
        before that are lost: the archive drops them without a subscriber)."""
        ctx = self.archive.context
        channel = channel or ctx.recording_events_channel
        if not channel:
            raise IllegalStateError("no recording events channel: set Context.recording_events_channel")
        return RecordingEventStream(self.client, channel,
                                    ctx.recording_events_stream_id if stream_id is None else stream_id)


class RecordingEventStream:
    """An async stream of recording events (see :meth:`AsyncAeronArchive.recording_events`)."""

    def __init__(self, client: AsyncAeron, channel: str, stream_id: int) -> None:
        """Made by :meth:`AsyncAeronArchive.recording_events`."""
        self._client = client
        self.channel = channel
        self.stream_id = stream_id
        self.subscription: AsyncSubscription | None = None
        self._events: collections.deque[RecordingEvent] = collections.deque()
        self._adapter: RecordingEventsAdapter | None = None
        self._closed = False

    async def start(self, timeout: float | None = 10.0) -> None:
        """Subscribe and wait (up to ``timeout`` s: AeronTimeoutError) until the archive's publication is
        connected. Idempotent."""
        if self.subscription is None:
            self.subscription = await self._client.add_subscription(self.channel, self.stream_id)
            self._adapter = RecordingEventsAdapter(self._events.append, self.subscription.subscription)
        idle = AsyncBackoffIdleStrategy()
        async with deadline(timeout, "recording events stream connected"):
            while not self.subscription.subscription.is_connected:
                await idle.idle(0)

    def __aiter__(self) -> "RecordingEventStream":
        """The stream itself."""
        return self

    async def __anext__(self) -> RecordingEvent:
        """The next event; StopAsyncIteration once closed."""
        if self.subscription is None:
            await self.start()
        adapter = self._adapter
        assert adapter is not None
        idle = AsyncBackoffIdleStrategy()
        while not self._events:
            if self._closed:
                raise StopAsyncIteration
            await idle.idle(adapter.poll())
        return self._events.popleft()

    async def close(self) -> None:
        """Close the subscription. Idempotent."""
        self._closed = True
        if self.subscription is not None:
            self.subscription.close()

    async def __aenter__(self) -> "RecordingEventStream":
        """Subscribe (see :meth:`start`)."""
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        """Close the stream."""
        await self.close()


class ReplayStream:
    """An async iterator over one replay's messages (see :meth:`AsyncAeronArchive.replay`)."""

    def __init__(self, archive: AsyncAeronArchive, recording_id: int, position: int, length: int,
                 replay_channel: str, replay_stream_id: int) -> None:
        """Made by :meth:`AsyncAeronArchive.replay`."""
        self._archive = archive
        self.recording_id = recording_id
        self.position = position
        self.length = length
        self.replay_channel = replay_channel
        self.replay_stream_id = replay_stream_id
        self.subscription: AsyncSubscription | None = None
        self.replay_session_id = NULL_VALUE
        self.replay_correlation_id = NULL_VALUE
        self._closed = False
        self._idle = AsyncBackoffIdleStrategy()

    async def start(self) -> None:
        """Ask the archive for the replay and subscribe to it (done by the first step when not called)."""
        if self.subscription is None and not self._closed:
            archive = self._archive
            sync = archive.archive
            if is_response_channel(self.replay_channel):     # answered over the subscription's own channel
                def replay_op() -> Op[tuple[Any, int]]:
                    subscription = yield from sync.replay_op(self.recording_id, self.replay_channel,
                                                             self.replay_stream_id, self.position, self.length)
                    return subscription, sync.last_correlation_id   # the replay request's, read under the lock
                subscription, self.replay_correlation_id = await archive._run(replay_op())
                self.subscription = AsyncSubscription(subscription)
                return

            def start_replay_op() -> Op[tuple[int, int]]:
                replay_session_id = yield from sync.start_replay_op(self.recording_id, self.replay_channel,
                                                                    self.replay_stream_id, self.position,
                                                                    self.length)
                return replay_session_id, sync.last_correlation_id
            self.replay_session_id, self.replay_correlation_id = await archive._run(start_replay_op())
            uri = ChannelUri.parse(self.replay_channel)
            uri.put(SESSION_ID_PARAM_NAME, str(replay_image_session_id(self.replay_session_id)))
            self.subscription = await archive.client.add_subscription(str(uri), self.replay_stream_id)

    def __aiter__(self) -> "ReplayStream":
        """The stream itself."""
        return self

    async def __anext__(self) -> Message:
        """The next replayed message; StopAsyncIteration at the replay's end of stream (or once closed). When the
        archive ended the replay with an ERROR (a segment file cut short or missing, a frame that is not where the
        recording says it is), that ArchiveError is raised instead, naming the segment file and the position."""
        if self.subscription is None:
            if self._closed:
                raise StopAsyncIteration
            await self.start()
        subscription = self.subscription
        assert subscription is not None
        idle = self._idle
        seen_image = False
        while True:
            if self._closed or subscription.subscription.is_closed:
                raise StopAsyncIteration
            message = subscription.receive_nowait()
            if message is not None:
                idle.reset()
                return message
            images = subscription.subscription.images
            if images:
                seen_image = True
                if all(image.is_end_of_stream or image.is_closed for image in images):
                    await self._end()
            elif seen_image:
                await self._end()
            await idle.idle(0)

    async def _end(self) -> NoReturn:
        # the image has gone: a replay the archive ended with an ERROR raises it, one that ended well stops
        await self.close()
        error = await self._archive._run(self._archive.archive.replay_error_op(self.replay_correlation_id))
        if error is not None:
            raise error
        raise StopAsyncIteration

    async def close(self) -> None:
        """Close the replay subscription (the archive ends the replay when its subscriber goes). Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self.subscription is not None:
            self.subscription.close()

    async def __aenter__(self) -> "ReplayStream":
        """Start the replay; the ``async with`` block closes it."""
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        """Close the replay."""
        await self.close()


@contextlib.asynccontextmanager
async def connect(context: Context | None = None, *, client: AsyncAeron | None = None,
                  **settings: Unpack[ContextSettings]) -> AsyncIterator[AsyncAeronArchive]:
    """``async with aeron.aio.archive.connect(control_request_channel=..., control_response_channel=...) as
    archive``: connect to an archive without blocking the loop.

    ``client`` is an :class:`aeron.aio.AsyncAeron` to use; without one an AsyncAeron is attached to the context's
    ``aeron_dir`` and closed on exit. ``context`` (or ``settings``, the keywords of :class:`aeron.archive.Context`,
    checked by type checkers); its ``aeron`` is set to the AsyncAeron's client.
    """
    if context is None:
        context = Context(**settings)
    elif settings:
        raise IllegalStateError("pass either a Context or keyword settings, not both")
    owns = client is None
    if client is None:
        loop = asyncio.get_running_loop()
        aeron = await loop.run_in_executor(None, Aeron.connect, AeronContext(
            context.aeron_dir, use_conductor_agent_invoker=True))
        client = AsyncAeron(aeron)
    try:
        signals: collections.deque[RecordingSignalEvent] = collections.deque(maxlen=SIGNAL_QUEUE_CAPACITY)
        user_consumer = context.recording_signal_consumer

        def on_signal(event: RecordingSignalEvent) -> None:
            signals.append(event)
            if user_consumer is not None:
                user_consumer(event)

        context.aeron = client.aeron
        context.owns_aeron_client = False
        context.recording_signal_consumer = on_signal
        context.conclude()
        sync_archive = await drive_async(connect_op(context), AsyncBackoffIdleStrategy())
    except BaseException:
        if owns:
            await client.close()
        raise
    archive = AsyncAeronArchive(sync_archive, client, signals, owns_client=owns)
    try:
        yield archive
    finally:
        await archive.close()


__all__ = ["AsyncAeronArchive", "ReplayStream", "RecordingEventStream", "connect"]
