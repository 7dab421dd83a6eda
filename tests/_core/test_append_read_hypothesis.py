# SPDX-License-Identifier: Apache-2.0
"""Append then read, across modules: whatever the appenders write (fragmented, padded at term ends,
rotated through all three partitions and cleaned behind the reader, as the driver does), the term
reader with a fragment assembler hands back exactly, in order, with the right header fields."""

from hypothesis import given, settings, strategies as st

from aeron._core.fragment_assembler import FragmentAssembler
from aeron._core.logbuffer import LogBuffers
from aeron._core.term_appender import (ADMIN_ACTION, ConcurrentTermAppender,
                                       ExclusiveTermAppender)
from aeron._core.term_reader import TermReader
from aeron._core.term_scanner import clean_term

TERM_LENGTH = 64 * 1024
MTU = 1408
MAX_PAYLOAD = MTU - 32
MAX_MESSAGE = TERM_LENGTH // 8
PATTERN = bytes(range(256)) * (MAX_MESSAGE // 256 + 2)


def _clean_behind(log, reader_position, clean_position):
    # The conductor zeroes everything more than one term behind the slowest reader.
    target = reader_position - TERM_LENGTH
    while target > clean_position:
        index = (clean_position // TERM_LENGTH) % 3
        offset = clean_position % TERM_LENGTH
        length = min(target - clean_position, TERM_LENGTH - offset)
        term = log.term_buffer(index)
        clean_term(term, offset, length)
        term.close()
        clean_position += length
    return clean_position


@settings(max_examples=120, deadline=None)
@given(
    exclusive=st.booleans(),
    initial_term_id=st.integers(-2**31, 2**31 - 1),
    lengths=st.lists(st.one_of(st.integers(0, 100), st.integers(MAX_PAYLOAD - 40, MAX_PAYLOAD + 40),
                               st.integers(0, MAX_MESSAGE)), min_size=1, max_size=120),
    fragment_limit=st.integers(1, 12),
    reserved=st.booleans(),
)
def test_every_appended_message_is_read_back_in_order(exclusive, initial_term_id, lengths, fragment_limit,
                                                      reserved):
    log = LogBuffers.create(term_length=TERM_LENGTH, initial_term_id=initial_term_id, session_id=77,
                            stream_id=1001, mtu_length=MTU, is_connected=1)
    appender = (ExclusiveTermAppender if exclusive else ConcurrentTermAppender)(log)
    reader = TermReader(log)
    received = []

    def on_message(buffer, offset, length, header):
        received.append((bytes(memoryview(buffer)[offset:offset + length]), header.session_id,
                         header.stream_id, header.reserved_value, header.position))

    assembler = FragmentAssembler(on_message)
    supplier = (lambda term, term_offset, frame_length: term_offset * 7 + frame_length) if reserved else None
    expected = []
    clean_position = 0
    rotations = 0
    # repeat the drawn lengths until the stream has run through every partition more than once,
    # so rotation, end-of-term padding and reuse of cleaned partitions happen in every example
    volume = 5 * TERM_LENGTH
    schedule = []
    while volume > 0:
        for n in lengths:
            schedule.append(n)
            volume -= max(32, n + 32)
    for i, n in enumerate(schedule):
        payload = PATTERN[i & 0xFF:(i & 0xFF) + n]
        result = appender.offer(payload, reserved_value_supplier=supplier)
        while result == ADMIN_ACTION:
            rotations += 1
            result = appender.offer(payload, reserved_value_supplier=supplier)
        assert result > 0
        expected.append((payload, result))
        # read up to the appender's position, a few fragments per poll; a poll that only skips
        # end-of-term padding delivers nothing (returns 0) but still moves the position
        for _ in range(1000):
            if reader.position >= result:
                break
            reader.poll(assembler, fragment_limit)
        assert reader.position == result
        clean_position = _clean_behind(log, reader.position, clean_position)

    assert rotations >= 4
    assert [r[0] for r in received] == [e[0] for e in expected]
    assert all(r[1] == 77 and r[2] == 1001 for r in received)
    # an assembled message reports the position at the end of its last fragment
    assert [r[4] for r in received] == [e[1] for e in expected]
    if reserved:
        # the reserved value of the assembled message is its first fragment's
        assert all(r[3] != 0 for r in received)
    reader.close()
    appender.close()
    log.close()
