# SPDX-License-Identifier: Apache-2.0
"""PublicationLimit, the conductor's per cycle update of a network publication's pub-pos and pub-lmt in compiled code:
pub-pos from the log's tail; while connected the limit a window past the slowest of the sender position and the
working spies once that passes the trip limit (then a trip gain further), the log cleaned a term behind; nothing while
not active; a disconnection with the limit ahead of the sender, or a flow control only Python can judge, handed back
with nothing changed."""
from __future__ import annotations

import pytest

from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.counters import COUNTER_LENGTH, AtomicCounter
from aeron._core.logbuffer import LogBuffers, pack_tail
from aeron._core.publication_limit import HAND_BACK, PublicationLimit
from aeron._core.term_scanner import LogCleaner
from aeron.common.errors import IllegalStateError

TERM = 64 * 1024
WINDOW = TERM // 2
PUB_POS, PUB_LMT, SND_POS, SPY = range(4)


@pytest.fixture
def rig(tmp_path):
    log = LogBuffers.create(str(tmp_path / "pub.logbuffer"), term_length=TERM, initial_term_id=5, session_id=1,
                            stream_id=2)
    values = AtomicBuffer(bytearray(COUNTER_LENGTH * 4))
    counters = [AtomicCounter(values, i) for i in range(4)]
    limit = PublicationLimit(log, counters[PUB_POS], counters[PUB_LMT], counters[SND_POS], WINDOW)
    limit.cleaner = LogCleaner(log, 0)
    yield log, counters, limit
    log.close()


def test_the_limit_moves_a_window_past_the_slowest_reader_once_it_passes_the_trip_limit(rig):
    log, counters, limit = rig
    assert (limit.window_length, limit.trip_gain, limit.term_length) == (WINDOW, WINDOW // 8, TERM)
    # not connected, the limit not ahead: pub-pos only
    assert limit.update() == 0 and counters[PUB_LMT].get() == 0
    limit.has_receivers = True
    assert limit.update() == 1 and counters[PUB_LMT].get() == WINDOW and limit.trip_limit == WINDOW + WINDOW // 8
    counters[SND_POS].set(WINDOW // 8 - 32)               # short of the trip limit: no move
    assert limit.update() == 0 and counters[PUB_LMT].get() == WINDOW
    assert limit.consumer_position == WINDOW // 8 - 32
    counters[SND_POS].set(WINDOW // 8)
    assert limit.update() == 1 and counters[PUB_LMT].get() == WINDOW + WINDOW // 8
    # a working spy behind the sender holds it back; a resting one (left out of the positions) does not
    counters[SPY].set(0)
    counters[SND_POS].set(TERM)
    limit.set_spies([counters[SPY]], 1)
    assert limit.update() == 0 and counters[PUB_LMT].get() == WINDOW + WINDOW // 8
    limit.set_spies([], 1)
    assert limit.update() == 1 and counters[PUB_LMT].get() == TERM + WINDOW
    # pub-pos is the log's tail
    log.metadata_buffer().put_i64(0, pack_tail(5, 64))      # the first partition's tail: a frame appended
    assert limit.update() == 0 and counters[PUB_POS].get() == 64 == log.producer_position()


def test_spies_that_simulate_a_connection_connect_it_and_python_keeps_what_only_it_may_do(rig):
    log, counters, limit = rig
    limit.spies_simulate_connection = True
    limit.set_spies([counters[SPY]], 1)
    assert limit.update() == 1 and counters[PUB_LMT].get() == WINDOW
    limit.set_spies([], 0)                  # no spy and no receiver: the limit ahead is Python's to pull back
    counters[PUB_POS].set(-1)
    assert limit.update() == HAND_BACK and counters[PUB_POS].get() == -1 and counters[PUB_LMT].get() == WINDOW
    limit.active = False                    # draining, lingering: nothing
    assert limit.update() == 0
    limit.active = True
    limit.python_only = True                # a group's minimum size of receivers
    limit.has_receivers = True
    assert limit.update() == HAND_BACK and counters[PUB_LMT].get() == WINDOW
    limit.python_only = False
    with pytest.raises(TypeError):
        limit.set_spies([object()], 1)
    log.close()
    with pytest.raises(IllegalStateError):
        limit.update()
