# SPDX-License-Identifier: Apache-2.0
"""aeron.common.op: an operation runs to its result under the sync driver and the async one, its error reaches
the caller, and a driver that stops early closes the operation so that its clean-up runs at once."""
import asyncio

import pytest

from aeron.common.agent import IdleStrategy
from aeron.common.op import drive, drive_async


class CountingIdle(IdleStrategy):
    """Records the work counts it is given; raises once ``fail_after`` idles are done (when set)."""

    def __init__(self, fail_after=None):
        self.works = []
        self.resets = 0
        self.fail_after = fail_after

    def idle(self, work_count=0):
        if self.fail_after is not None and len(self.works) >= self.fail_after:
            raise KeyboardInterrupt
        self.works.append(work_count)

    def reset(self):
        self.resets += 1


class AsyncIdle:
    def __init__(self):
        self.works = []

    def reset(self):
        pass

    async def idle(self, work_count=0):
        self.works.append(work_count)
        await asyncio.sleep(0)


def operation(steps, log, result="done", error=None):
    """Waits ``steps`` times (yielding 0), then returns ``result`` or raises ``error``; logs its clean-up."""
    try:
        for _ in range(steps):
            yield 0
        if error is not None:
            raise error
        return result
    except GeneratorExit:
        log.append("closed")
        raise
    finally:
        log.append("finally")


def test_drive_runs_an_operation_to_its_result_idling_and_invoking_between_steps():
    log, idle, invoked = [], CountingIdle(), []

    def invoke():
        invoked.append(1)
        return 2

    assert drive(operation(3, log, result=42), idle, invoke) == 42
    assert idle.resets == 1 and idle.works == [2, 2, 2] and len(invoked) == 3
    assert log == ["finally"]


def test_drive_raises_the_operations_error():
    log = []
    with pytest.raises(ValueError, match="refused"):
        drive(operation(2, log, error=ValueError("refused")), CountingIdle())
    assert log == ["finally"]


def test_an_operation_abandoned_by_the_sync_driver_is_closed_at_once():
    log = []
    with pytest.raises(KeyboardInterrupt):
        drive(operation(10, log), CountingIdle(fail_after=2))
    assert log == ["closed", "finally"]


def test_drive_async_runs_an_operation_and_raises_its_error():
    log, idle = [], AsyncIdle()
    assert asyncio.run(drive_async(operation(3, log, result="ok"), idle)) == "ok"
    assert idle.works == [0, 0, 0] and log == ["finally"]
    with pytest.raises(ValueError):
        asyncio.run(drive_async(operation(1, [], error=ValueError("no")), AsyncIdle()))


def test_cancelling_the_awaiting_task_closes_the_operation():
    log = []

    async def main():
        task = asyncio.create_task(drive_async(operation(1_000_000, log), AsyncIdle()))
        for _ in range(5):
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert log == ["closed", "finally"]
