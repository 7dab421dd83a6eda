# SPDX-License-Identifier: Apache-2.0
"""AsyncSubscription: the sync Subscription plus waiting, and assembled messages as an async iterator.

There is no queue between the log and the user: each ``receive``/``__anext__`` polls exactly one assembled
message out of the log (a controlled poll that stops after it), so a slow consumer back-pressures its publishers
exactly as a slow sync subscriber does, and cancelling an await never loses a message (nothing is polled until it
is returned). The payload is a memoryview of the log (or of the assembler's buffer for a fragmented message),
valid until the next step; ``Message.copy()`` detaches it. The Message object itself is re-filled in place at each
step (``receive`` returns the same object every time) and its view is made only when ``payload`` is read, so the
async path allocates nothing per message of its own. A message already in the log is returned without
suspending, except that after 256 such results in a row, or 0.5 ms of them, the next one first gives the loop a
turn (``_idle.LoopShare``), so draining a backlog cannot starve timers or other tasks. Image events go through a
bounded queue: when it is full the oldest event is dropped and ``image_events_dropped`` counts it (the
slow-consumer signal).
"""
from __future__ import annotations

import asyncio
import collections
from collections.abc import AsyncIterator, Callable
from time import perf_counter
from typing import TYPE_CHECKING, TypeVar

from aeron.aio._idle import SHARED_MEMORY_SPIN_S, AsyncBackoffIdleStrategy, AsyncWakeup, LoopShare, async_idle
from aeron.client import AtomicBuffer, ControlledFragmentAssembler, ControlledPollAction, Header, Image, Subscription
from aeron.common.errors import AeronTimeoutError, IllegalStateError

T = TypeVar("T")

if TYPE_CHECKING:
    from typing_extensions import Buffer

    from aeron.client.handlers import FragmentHandler

BREAK = ControlledPollAction.BREAK

IMAGE_EVENT_QUEUE_CAPACITY = 1024


class Message:
    """One assembled message: ``payload`` (memoryview, valid for this step), ``length``, and the header fields
    of its first fragment.

    An AsyncSubscription hands out the same Message object at every step, re-filled in place, and makes the
    payload view only when ``payload`` is first read in that step: a consumer that reads ``length`` and the
    header fields, or ``copy()``/``bytes()``, allocates nothing per message. Keep a message with ``copy()``.
    """

    __slots__ = ("_buffer", "offset", "_length", "_view", "session_id", "stream_id", "term_id", "term_offset",
                 "position", "reserved_value", "flags")

    def __init__(self, payload: Buffer | None = None, session_id: int = 0, stream_id: int = 0, term_id: int = 0,
                 term_offset: int = 0, position: int = 0, reserved_value: int = 0, flags: int = 0) -> None:
        """A message over ``payload`` (a memoryview or bytes); AsyncSubscription makes one and re-fills it."""
        view = None if payload is None else memoryview(payload)
        self._buffer: AtomicBuffer | None = None
        self.offset = 0
        self._length = 0 if view is None else view.nbytes
        self._view: memoryview | None = view
        self.session_id = session_id
        self.stream_id = stream_id
        self.term_id = term_id
        self.term_offset = term_offset
        self.position = position
        self.reserved_value = reserved_value
        self.flags = flags

    def _fill(self, buffer: AtomicBuffer, offset: int, length: int, header: Header) -> None:
        # the step's message: the log (or assembler) buffer and where the payload is; the view comes on demand
        self._buffer = buffer
        self.offset = offset
        self._length = length
        self.session_id = header.session_id
        self.stream_id = header.stream_id
        self.term_id = header.term_id
        self.term_offset = header.term_offset
        self.position = header.position
        self.reserved_value = header.reserved_value
        self.flags = header.flags

    @property
    def payload(self) -> memoryview:
        """The payload, a memoryview valid for this step (released by the next one)."""
        view = self._view
        if view is None:
            if self._buffer is None:
                raise ValueError("message released: its step is over (copy() keeps a message)")
            view = self._view = self._buffer.view(self.offset, self._length)
        return view

    @property
    def length(self) -> int:
        """Payload length in bytes."""
        return self._length

    def copy(self) -> "Message":
        """The same message over its own bytes: valid for as long as you keep it."""
        return Message(self.tobytes(), self.session_id, self.stream_id, self.term_id, self.term_offset,
                       self.position, self.reserved_value, self.flags)

    def tobytes(self) -> bytes:
        """A copy of the payload."""
        if self._view is not None:
            return self._view.tobytes()
        if self._buffer is None:
            raise ValueError("message released: its step is over (copy() keeps a message)")
        return self._buffer.get_bytes(self.offset, self._length)

    def release(self) -> None:
        """Release the payload view now (the next step does it otherwise)."""
        view = self._view
        self._view = None
        self._buffer = None
        if view is not None:
            view.release()

    def __bytes__(self) -> bytes:
        """A copy of the payload."""
        return self.tobytes()

    def __repr__(self) -> str:
        """Session, stream, position and length."""
        return f"<Message session={self.session_id} stream={self.stream_id} position={self.position} " \
               f"length={self._length}>"


class ImageEvent:
    """An image became available (``available`` True) or unavailable on a subscription."""
    __slots__ = ("available", "image")

    def __init__(self, available: bool, image: Image) -> None:
        """``image`` is the sync :class:`aeron.Image`."""
        self.available = available
        self.image = image

    def __repr__(self) -> str:
        """Which event, and the image."""
        return f"<ImageEvent {'available' if self.available else 'unavailable'} {self.image!r}>"


class AsyncSubscription(LoopShare):
    """The sync Subscription plus waiting: ``receive``, ``receive_many``, ``poll``, ``async for`` over messages.

    See the module docstring for the guarantees (no queue, cancel-safe, zero-copy until the next step).
    """
    __slots__ = ("subscription", "_assembler", "_taken", "_current", "_message", "_wakeup", "_events",
                 "image_events_dropped", "_spin_s", "__weakref__")

    def __init__(self, subscription: Subscription, wakeup: AsyncWakeup | None = None) -> None:
        """Wrap a sync Subscription (made by ``AsyncAeron.add_subscription``); ``wakeup`` is the client's waiter
        on the loop (None: waits back off)."""
        self.subscription = subscription
        self._assembler = ControlledFragmentAssembler(self._on_message)
        self._taken: Message | None = None
        self._current: Message | None = None
        self._message = Message()           # re-filled at every step (nothing allocated per message)
        self._wakeup = wakeup
        # shared memory (IPC, a spy): its writer may be a parked pong woken by our offer; spin past its wake-up
        self._spin_s = 0.0 if subscription.channel.startswith("aeron:udp") else SHARED_MEMORY_SPIN_S
        self._events: collections.deque[ImageEvent] = collections.deque()
        self.image_events_dropped = 0
        super().__init__()

    # -- the one-message poll --------------------------------------------------------------------------------
    def _on_message(self, buffer: AtomicBuffer, offset: int, length: int, header: Header) -> int:
        if self._taken is not None:
            return BREAK            # not reached: the poll stops after one message
        message = self._message
        message._fill(buffer, offset, length, header)
        self._taken = message
        return BREAK

    def _poll_one(self) -> Message | None:
        previous = self._current
        if previous is not None:            # the last step's view is no longer valid
            previous.release()
            self._current = None
        self._taken = None
        self.subscription.controlled_poll(self._assembler, 64)
        message, self._taken = self._taken, None
        self._current = message
        return message

    def receive_nowait(self) -> Message | None:
        """The next message if one is in the log, else None (never waits)."""
        return self._poll_one()

    async def receive(self, timeout: float | None = None) -> Message:
        """The next assembled message, waiting for one; AeronTimeoutError after ``timeout`` seconds.

        The payload is valid until the next receive (``copy()`` keeps it). Raises IllegalStateError once the
        subscription is closed.
        """
        run = self._run
        self._run = run + 1
        if run & 15 == 0 and self._turn_due(run):
            await asyncio.sleep(0)          # a long backlog still lets the loop run (polls nothing: loses nothing)
        message = self._poll_one()
        if message is not None:
            return message                  # fast path: nothing awaited
        return await self._await(self._poll_one, timeout, "message received")

    async def receive_many(self, max_messages: int, timeout: float | None = None) -> list[Message]:
        """Between 1 and ``max_messages`` messages, each copied (they outlive the step); waits for the first."""
        if max_messages < 1:
            raise ValueError(f"max_messages must be >= 1, got {max_messages}")
        first = await self.receive(timeout)
        out = [first.copy()]
        while len(out) < max_messages:
            message = self._poll_one()
            if message is None:
                break
            out.append(message.copy())
        self._release_current()
        return out

    def _release_current(self) -> None:
        if self._current is not None:
            self._current.release()
            self._current = None

    async def poll(self, handler: FragmentHandler, fragment_limit: int, timeout: float | None = None) -> int:
        """``subscription.poll(handler, limit)``, waiting until at least one fragment was delivered."""
        run = self._run
        self._run = run + 1
        if run & 15 == 0 and self._turn_due(run):
            await asyncio.sleep(0)
        count = self.subscription.poll(handler, fragment_limit)
        if count:
            return count
        poll = self.subscription.poll
        return await self._await(lambda: poll(handler, fragment_limit) or None, timeout, "fragment polled")

    async def _await(self, attempt: Callable[[], T | None], timeout: float | None, what: str) -> T:
        # Idle and attempt again until ``attempt()`` gives something (not None). The timeout bounds the parks and is
        # checked after each attempt, rather than by a timer of the loop's around the wait (asyncio.timeout), which
        # cost several µs on each await that had to wait: every ping of a round trip whose answer was not yet there.
        idle = async_idle(self._wakeup, self._spin_s)
        if timeout is None:
            while True:
                await idle.idle(0)
                result = attempt()
                if result is not None:
                    self._run = 0
                    return result
        end = perf_counter() + timeout
        while True:
            await idle.idle(0, end - perf_counter())
            result = attempt()
            if result is not None:
                self._run = 0
                return result
            if perf_counter() >= end:
                raise AeronTimeoutError(f"{what}: not within {timeout} s")

    def __aiter__(self) -> AsyncIterator[Message]:
        """``async for message in subscription``: one message per step."""
        return self

    async def __anext__(self) -> Message:
        """The next message (as :meth:`receive`); StopAsyncIteration once the subscription is closed."""
        if self.subscription.is_closed:
            self._release_current()
            raise StopAsyncIteration
        try:
            return await self.receive()
        except IllegalStateError:
            if self.subscription.is_closed:
                raise StopAsyncIteration from None
            raise

    # -- image events ------------------------------------------------------------------------------------------
    def _on_image_event(self, available: bool, image: Image) -> None:
        events = self._events
        if len(events) >= IMAGE_EVENT_QUEUE_CAPACITY:
            events.popleft()
            self.image_events_dropped += 1
        events.append(ImageEvent(available, image))

    async def image_events(self, timeout: float | None = None) -> AsyncIterator[ImageEvent]:
        """Image available/unavailable events as they happen; ends when the subscription is closed, after the
        events queued until then (closing makes each remaining image unavailable)."""
        idle = AsyncBackoffIdleStrategy()
        while True:
            if self._events:
                idle.reset()
                yield self._events.popleft()
                continue
            if self.subscription.is_closed:
                return
            await idle.idle(0)

    # The sync subscription's state, typed (anything else: ``.subscription``).
    @property
    def channel(self) -> str:
        """The channel the subscription was added with."""
        return self.subscription.channel

    @property
    def stream_id(self) -> int:
        """The stream id."""
        return self.subscription.stream_id

    @property
    def registration_id(self) -> int:
        """The registration id the driver gave it."""
        return self.subscription.registration_id

    @property
    def images(self) -> tuple[Image, ...]:
        """The images now connected (a snapshot)."""
        return self.subscription.images

    @property
    def image_count(self) -> int:
        """How many images the subscription has."""
        return self.subscription.image_count

    @property
    def is_connected(self) -> bool:
        """True when at least one image is connected."""
        return self.subscription.is_connected

    @property
    def is_closed(self) -> bool:
        """True once the subscription is closed."""
        return self.subscription.is_closed

    if not TYPE_CHECKING:
        def __getattr__(self, name: str) -> object:
            """Everything else is the sync subscription's (at run time; type checkers see only what is above)."""
            return getattr(self.subscription, name)

    def close(self) -> None:
        """Release the last message's view and close the subscription. Idempotent."""
        self._release_current()
        self.subscription.close()

    def __repr__(self) -> str:
        """The wrapped subscription's summary."""
        return f"<AsyncSubscription {self.subscription!r}>"
