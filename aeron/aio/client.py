# SPDX-License-Identifier: Apache-2.0
"""AsyncAeron: an Aeron client whose conductor runs as an invoker driven by one task on the event loop, so the
whole client lives on the loop thread: no locks contended, no thread hand-offs (Aeron's
conductorAgentInvoker)."""
from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from aeron.aio._idle import AsyncBackoffIdleStrategy, AsyncWakeup, deadline
from aeron.aio.publication import AsyncPublication
from aeron.aio.subscription import AsyncSubscription
from aeron.client.aeron import Aeron
from aeron.client.context import Context
from aeron.common.errors import IllegalStateError


class AsyncAeron:
    """Made by :func:`connect`. ``await add_publication(channel, stream_id, timeout=None)`` and friends register
    with the driver without blocking the loop; the conductor task keeps the client alive (heartbeats, images)."""

    def __init__(self, aeron: Aeron, driver: Any = None) -> None:
        """Wrap ``aeron`` (made with ``use_conductor_agent_invoker=True``) and start its conductor task on the running
        loop; ``driver`` is an embedded MediaDriver to close with the client. Use :func:`connect`.
        """
        invoker = aeron.conductor_agent_invoker
        if invoker is None:
            raise IllegalStateError("AsyncAeron needs a client built with use_conductor_agent_invoker=True")
        self.aeron = aeron
        self.driver = driver
        self._invoker = invoker
        self._subscriptions: list[AsyncSubscription] = []     # to release their last message's view on close
        self._closed = False
        loop = asyncio.get_running_loop()
        # one waiter for every subscription of this client, watched by the loop (docs/wakeup.md); None: backoff
        waiter = aeron.wakeup_waiter()
        self._wakeup: AsyncWakeup | None = (AsyncWakeup(waiter, loop, aeron.quiet_park_ns) if waiter is not None
                                            else None)
        # the conductor task parks on a waiter our driver wakes when it writes to its clients (docs/wakeup.md)
        conductor_waiter = aeron.conductor_waiter()
        self._conductor_wakeup = AsyncWakeup(conductor_waiter, loop) if conductor_waiter is not None else None
        self._task: asyncio.Task[None] | None = asyncio.get_running_loop().create_task(
            self._run_conductor(), name="aeron-client-conductor")

    async def _run_conductor(self) -> None:
        # keepalives and driver responses: awaiting a registration runs its own duty cycles, so the task can
        # sleep as long as a sync client's conductor thread does (idle_sleep_duration_ns, 16 ms)
        # (parked on the wake-up board when there is one: until our driver writes to its clients or the next
        # keepalive is due, longer than 16 ms while every client of our driver signals)
        idle = AsyncBackoffIdleStrategy(spins=2, max_sleep_s=self.aeron.context.idle_sleep_duration_ns / 1e9)
        invoke = self._invoker.invoke
        wakeup = self._conductor_wakeup
        park_ns = self.aeron.conductor_park_ns
        while not self._invoker.is_closed:
            work = invoke()
            if work or wakeup is None:
                await idle.idle(work)
                continue
            wakeup.prepare()
            if invoke():                        # the re-check: a response that came before the mark
                wakeup.waiter.cancel()
                idle.reset()
                continue
            await wakeup.wait(max(park_ns(), 0) / 1e9)

    # -- registration --------------------------------------------------------------------------------------------
    async def _await_registration(self, registration_id: int, get: Any, what: str, timeout: float | None,
                                  remove: Any) -> Any:
        resource = get(registration_id)        # runs a duty cycle: often answered at once
        if resource is not None:
            return resource
        idle = AsyncBackoffIdleStrategy()
        try:
            async with deadline(timeout, f"{what} registered"):
                while True:
                    await idle.idle(0)
                    resource = get(registration_id)
                    if resource is not None:
                        return resource
        except BaseException:
            # timed out or cancelled before the driver answered: the driver would still make it, for nobody
            remove(registration_id)
            raise
        raise AssertionError("unreachable")

    async def add_publication(self, channel: str, stream_id: int, timeout: float | None = None) -> AsyncPublication:
        """Add a concurrent publication; waits for the driver without blocking the loop.

        Raises InvalidChannelError, the driver's RegistrationError, or AeronTimeoutError after ``timeout`` seconds.
        """
        registration_id = self.aeron.async_add_publication(channel, stream_id)
        publication = await self._await_registration(registration_id, self.aeron.get_publication, "publication",
                                                     timeout, self.aeron.async_remove_publication)
        return AsyncPublication(publication)

    async def add_exclusive_publication(self, channel: str, stream_id: int,
                                        timeout: float | None = None) -> AsyncPublication:
        """Add an exclusive publication (one offering task, its own session); raises as :meth:`add_publication`."""
        registration_id = self.aeron.async_add_exclusive_publication(channel, stream_id)
        publication = await self._await_registration(registration_id, self.aeron.get_exclusive_publication,
                                                     "exclusive publication", timeout,
                                                     self.aeron.async_remove_publication)
        return AsyncPublication(publication)

    async def add_subscription(self, channel: str, stream_id: int, timeout: float | None = None,
                               available_image_handler: Any = None,
                               unavailable_image_handler: Any = None) -> AsyncSubscription:
        """Add a subscription; waits for the driver without blocking the loop.

        Image events also reach :meth:`AsyncSubscription.image_events`; the optional handlers are called from the
        conductor task as well. Raises as :meth:`add_publication`.
        """
        holder: list[AsyncSubscription] = []

        def on_available(image: Any) -> None:
            if holder:
                holder[0]._on_image_event(True, image)
            if available_image_handler is not None:
                available_image_handler(image)

        def on_unavailable(image: Any) -> None:
            if holder:
                holder[0]._on_image_event(False, image)
            if unavailable_image_handler is not None:
                unavailable_image_handler(image)

        registration_id = self.aeron.async_add_subscription(channel, stream_id, on_available, on_unavailable)
        subscription = await self._await_registration(registration_id, self.aeron.get_subscription, "subscription",
                                                      timeout, self.aeron.async_remove_subscription)
        wrapper = AsyncSubscription(subscription, self._wakeup)
        holder.append(wrapper)
        self._subscriptions.append(wrapper)
        for image in subscription.images:           # images that came with the registration itself
            wrapper._on_image_event(True, image)
        return wrapper

    async def add_counter(self, type_id: int, label: str, key: bytes = b"", timeout: float | None = None) -> Any:
        """Allocate a counter in the driver (a sync :class:`aeron.Counter`); raises as :meth:`add_publication`."""
        registration_id = self.aeron.async_add_counter(type_id, label, key)
        return await self._await_registration(registration_id, self.aeron.get_counter, "counter", timeout,
                                              self.aeron.async_remove_counter)

    @property
    def counters_reader(self) -> Any:
        """A reader of the driver's counters (as ``Aeron.counters_reader``)."""
        return self.aeron.counters_reader

    @property
    def client_id(self) -> int:
        """This client's id, as the driver knows it."""
        return self.aeron.client_id

    @property
    def is_closed(self) -> bool:
        """True once :meth:`close` ran or the client was terminated."""
        return self._closed or self.aeron.is_closed

    async def close(self) -> None:
        """Close the client (and an embedded driver). Idempotent."""
        if self._closed:
            return
        self._closed = True
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for subscription in self._subscriptions:
            subscription._release_current()       # the last step's view pins the log: drop it before unmapping
        self._subscriptions.clear()
        if self._wakeup is not None:
            self._wakeup.close()
        if self._conductor_wakeup is not None:
            self._conductor_wakeup.close()
        self.aeron.close()
        if self.driver is not None:
            driver, self.driver = self.driver, None
            await asyncio.get_running_loop().run_in_executor(None, driver.close)

    async def __aenter__(self) -> "AsyncAeron":
        """Return the client; the ``async with`` block closes it."""
        return self

    async def __aexit__(self, *exc: object) -> None:
        """Close the client (and an embedded driver)."""
        await self.close()

    def __repr__(self) -> str:
        """The wrapped client's summary."""
        return f"<AsyncAeron {self.aeron!r}>"


@contextlib.asynccontextmanager
async def connect(aeron_dir: str | None = None, *, launch_embedded: bool = False, driver_context: Any = None,
                  **settings: Any) -> AsyncIterator[AsyncAeron]:
    """``async with aeron.aio.connect(aeron_dir=..., launch_embedded=False, **Context settings) as client``.

    With ``launch_embedded=True`` a MediaDriver is started in a fresh /dev/shm directory (SHARED mode, backoff
    idle, or ``driver_context``) and closed on exit. The blocking attach runs in the default executor.
    """
    loop = asyncio.get_running_loop()
    driver = None
    if launch_embedded:
        from aeron.driver import Context as DriverContext
        from aeron.driver import MediaDriver
        ctx = driver_context if driver_context is not None else DriverContext(threading_mode="SHARED",
                                                                             shared_idle_strategy="backoff")
        driver = await loop.run_in_executor(None, MediaDriver.launch_embedded, ctx)
        aeron_dir = driver.aeron_dir
    try:
        context = Context(aeron_dir, use_conductor_agent_invoker=True, **settings)
        aeron = await loop.run_in_executor(None, Aeron.connect, context)
    except BaseException:
        if driver is not None:
            driver.close()
        raise
    client = AsyncAeron(aeron, driver)
    try:
        yield client
    finally:
        await client.close()
