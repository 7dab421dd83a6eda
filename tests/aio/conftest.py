# SPDX-License-Identifier: Apache-2.0
"""Every async test runs on the default asyncio loop and on uvloop; an exception the loop could not deliver to
anyone (a failed task nobody awaited, a callback that raised) fails the test."""
import asyncio

import pytest
import uvloop

import aeron.aio
from tests.support import MS, driver_context


def pytest_asyncio_loop_factories(config, item):
    """Each async test here runs once per loop."""
    return {"asyncio": asyncio.new_event_loop, "uvloop": uvloop.new_event_loop}


@pytest.fixture
async def loop_errors():
    """Collects what the loop's exception handler sees; the test fails if anything arrived."""
    errors = []
    loop = asyncio.get_running_loop()
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: errors.append(context))
    yield errors
    loop.set_exception_handler(previous)
    assert errors == [], errors


@pytest.fixture
async def client(loop_errors):
    driver_ctx = driver_context(ipc_term_buffer_length=65536, timer_interval_ns=50 * MS,
                                publication_linger_timeout_ns=100 * MS)
    async with aeron.aio.connect(launch_embedded=True, driver_context=driver_ctx,
                                 resource_linger_duration_ns=100_000_000) as c:
        yield c
