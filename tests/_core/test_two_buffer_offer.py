# SPDX-License-Identifier: Apache-2.0
"""two_buffer_offer: two buffer ranges appended as one message, as Aeron's Publication.offer with two buffers (the
cluster's session header and an application payload), with the appender's own status codes and checks."""
import pytest

from aeron._core.term_appender import (BACK_PRESSURED, CLOSED, NOT_CONNECTED, ConcurrentTermAppender,
                                       ExclusiveTermAppender)
from aeron._core.two_buffer_offer import two_buffer_offer
from aeron.common.errors import InvalidArgumentError, OutOfBoundsError
from tests._core.test_term_appender import APPENDERS, TERM, limit_counter, make_log, raw, walk_term


@pytest.mark.parametrize("kind", APPENDERS)
def test_the_two_ranges_are_one_frame(kind):
    log = make_log(kind)
    app = kind(log)
    assert two_buffer_offer(app, b"HEADER--", 0, 6, bytearray(b"xxpayloadyy"), 2, 7) == 64
    assert two_buffer_offer(app, memoryview(b"ab"), 0, -1, b"cd") == 128      # -1: to the buffer's end
    frames, end = walk_term(raw(log), TERM)
    assert [p for _, _, p in frames] == [b"HEADERpayload", b"abcd"] and end == 128
    assert [f[2] for _, f, _ in frames] == [0xC0, 0xC0]           # unfragmented: BEGIN | END
    app.close()
    log.close()


@pytest.mark.parametrize("kind", APPENDERS)
def test_a_message_longer_than_a_frame_is_fragmented_across_the_two_ranges(kind):
    log = make_log(kind)
    app = kind(log)
    header = bytes(range(32))
    payload = bytes(i * 7 % 251 for i in range(3000))
    assert two_buffer_offer(app, header, 0, 32, payload, 0, 3000) == 3136
    frames, _ = walk_term(raw(log), TERM)
    assert [f[2] for _, f, _ in frames] == [0x80, 0x00, 0x40]
    assert b"".join(p for _, _, p in frames) == header + payload
    app.close()
    log.close()


def test_status_codes_and_refused_ranges():
    log = make_log(ConcurrentTermAppender)
    counter = limit_counter(64)
    app = ConcurrentTermAppender(log, counter, 8)
    assert two_buffer_offer(app, b"h", 0, 1, b"p") == 64
    assert two_buffer_offer(app, b"h", 0, 1, b"p") == BACK_PRESSURED
    log.is_connected = False
    assert two_buffer_offer(app, b"h", 0, 1, b"p") == NOT_CONNECTED
    with pytest.raises(OutOfBoundsError):
        two_buffer_offer(app, b"h", 0, 2, b"p")
    with pytest.raises(OutOfBoundsError):
        two_buffer_offer(app, b"h", 0, 1, b"p", 1, 1)
    with pytest.raises(InvalidArgumentError, match="length"):
        two_buffer_offer(app, b"h", 0, 1, b"p", 0, -2)
    with pytest.raises(InvalidArgumentError, match="max_message_length"):
        two_buffer_offer(app, bytes(TERM // 8), 0, -1, b"x")
    app.close()
    assert two_buffer_offer(app, b"h", 0, 1, b"p") == CLOSED
    counter.close()
    log.close()


def test_an_exclusive_appender_takes_it_too():
    log = make_log(ExclusiveTermAppender)
    app = ExclusiveTermAppender(log)
    assert two_buffer_offer(app, b"h", 0, 1, b"p") == 64 and app.position == 64
    app.close()
    log.close()
