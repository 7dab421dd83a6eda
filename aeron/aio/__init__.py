# SPDX-License-Identifier: Apache-2.0
"""The asyncio face: ``async with aeron.aio.connect(...) as client`` wraps the sync client (composition) and only
adds waiting. Works on the default loop and on uvloop (:func:`install_uvloop` or your own policy)."""
from aeron.aio._idle import AsyncBackoffIdleStrategy
from aeron.aio.client import AsyncAeron, connect
from aeron.aio.publication import AsyncPublication
from aeron.aio.subscription import IMAGE_EVENT_QUEUE_CAPACITY, AsyncSubscription, ImageEvent, Message
from aeron.common.errors import AeronTimeoutError, PublicationClosedError


def install_uvloop() -> None:
    """Make uvloop the event loop for new loops (``asyncio.run``); needs the ``aio`` extra."""
    import asyncio

    import uvloop
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())


__all__ = ["AeronTimeoutError", "AsyncAeron", "AsyncBackoffIdleStrategy", "AsyncPublication", "AsyncSubscription",
           "IMAGE_EVENT_QUEUE_CAPACITY", "ImageEvent", "Message", "PublicationClosedError", "connect",
           "install_uvloop"]
