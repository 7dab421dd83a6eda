# SPDX-License-Identifier: Apache-2.0
"""Fixtures of the common tests: a wake-up board of its own."""
import pytest

from aeron.common.wakeup import open_board


@pytest.fixture
def board(shm_dir):
    """A new wake-up board in the test's own directory, closed after the test."""
    board = open_board(str(shm_dir), create=True)
    assert board is not None
    yield board
    board.close()
