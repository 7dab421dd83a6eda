# SPDX-License-Identifier: Apache-2.0
"""Fixtures of the common tests: a wake-up board of its own, and where a futex sleeper on it sleeps."""
import ctypes

import pytest

from aeron._core import wakeup as wk
from aeron.common.wakeup import open_board

FUTEX_WAIT = 0
FUTEX_CMD_MASK = 0x7F           # the operation without FUTEX_PRIVATE_FLAG (128) and FUTEX_CLOCK_REALTIME (256)


@pytest.fixture
def board(shm_dir):
    """A new wake-up board in the test's own directory, closed after the test."""
    board = open_board(str(shm_dir), create=True)
    assert board is not None
    yield board
    board.close()


def slot_word_address(board, index: int) -> int:
    """The address, in this process, of the state word of slot ``index`` (what a futex sleeper waits on)."""
    view = ctypes.c_char.from_buffer(board.mapping)
    try:
        return ctypes.addressof(view) + wk.SLOTS_OFFSET + index * wk.SLOT_LENGTH
    finally:
        del view                # an exported buffer would keep the mapping from closing


def asleep_on(address: int, tid: int, pid: int | str = "self") -> bool:
    """Whether thread ``tid`` of process ``pid`` is blocked in FUTEX_WAIT on the word at ``address`` (its address
    in that process): /proc shows the system call a blocked thread is in, "<number> <first argument> <second> ..."
    (futex(uaddr, op, val, ...)), and "running" otherwise."""
    try:
        with open(f"/proc/{pid}/task/{tid}/syscall") as f:
            fields = f.read().split()
    except FileNotFoundError:
        return False
    return len(fields) > 3 and int(fields[1], 16) == address and int(fields[2], 16) & FUTEX_CMD_MASK == FUTEX_WAIT


@pytest.fixture(params=["python", "compiled"])
def strategy_class(request):
    """WakeupIdleStrategy, and ClientWakeupIdleStrategy (its idle compiled while bound with no timers, a client's
    loop; else the same Python): each strategy test holds for both."""
    from aeron.common.wakeup import ClientWakeupIdleStrategy, WakeupIdleStrategy
    return WakeupIdleStrategy if request.param == "python" else ClientWakeupIdleStrategy
