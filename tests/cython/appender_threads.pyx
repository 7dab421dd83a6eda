# SPDX-License-Identifier: Apache-2.0
# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Drive the concurrent append kernel without the GIL, so several Python threads append truly in
parallel into one log. Payloads are self-describing so a test can check each one is complete:

    i32 writer id | i32 sequence | i32 payload length | bytes (writer * 31 + sequence + i) & 0xFF ...
"""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t
from libc.string cimport memcpy

from aeron._core.atomic cimport cpu_pause
from aeron._core.term_appender cimport (APPEND_ADMIN_ACTION, APPEND_BACK_PRESSURED, ConcurrentTermAppender,
                                        appender_iov_t, concurrent_offer)

cdef enum:
    HEADER_BYTES = 12           # writer id, sequence, length
    MAX_BYTES = 8192            # largest payload (stack buffer)

PAYLOAD_HEADER = HEADER_BYTES
MAX_PAYLOAD = MAX_BYTES


cdef inline uint32_t next_random(uint32_t *state) noexcept nogil:
    # xorshift32: per-thread sizes without touching Python
    cdef uint32_t x = state[0]
    x ^= x << 13
    x ^= x >> 17
    x ^= x << 5
    state[0] = x
    return x


cdef inline void fill_payload(uint8_t *buf, int32_t writer, int32_t seq, int32_t length) noexcept nogil:
    cdef int32_t i
    memcpy(buf, &writer, 4)
    memcpy(buf + 4, &seq, 4)
    memcpy(buf + 8, &length, 4)
    for i in range(HEADER_BYTES, length):
        buf[i] = <uint8_t>((writer * 31 + seq + i) & 0xFF)


def expected_payload(int32_t writer, int32_t seq, int32_t length):
    """The payload append_messages writes for (writer, seq, length), for the checker."""
    cdef bytearray out = bytearray(length)
    cdef uint8_t *p = out
    fill_payload(p, writer, seq, length)
    return bytes(out)


def append_messages(ConcurrentTermAppender appender not None, int32_t writer, int32_t count,
                    int32_t min_length, int32_t max_length, uint32_t seed, int64_t max_retries=10_000_000):
    """Append ``count`` messages of random length in [min_length, max_length] with the GIL released.
    Retries ADMIN_ACTION and BACK_PRESSURED (bounded); returns (admin_actions, failures)."""
    if min_length < HEADER_BYTES or max_length > MAX_BYTES or max_length < min_length:
        raise ValueError("bad length range")
    if max_length > appender.max_message_length:
        raise ValueError("max_length above max_message_length")
    if appender.is_closed:
        raise ValueError("appender closed")
    cdef uint8_t buf[MAX_BYTES]
    cdef appender_iov_t iov
    cdef int32_t seq, length
    cdef int64_t result, retries
    cdef int64_t admin = 0, failures = 0
    cdef uint32_t state = seed if seed != 0 else 1
    cdef uint32_t span = <uint32_t>(max_length - min_length + 1)
    with nogil:
        for seq in range(count):
            length = min_length + <int32_t>(next_random(&state) % span)
            fill_payload(buf, writer, seq, length)
            iov.base = buf
            iov.length = length
            retries = 0
            while True:
                result = concurrent_offer(&appender.state, &iov, length)
                if result > 0:
                    break
                if result == APPEND_ADMIN_ACTION:
                    admin += 1
                elif result != APPEND_BACK_PRESSURED:
                    failures += 1
                    break
                retries += 1
                if retries > max_retries:
                    failures += 1
                    break
                cpu_pause()
    return admin, failures
