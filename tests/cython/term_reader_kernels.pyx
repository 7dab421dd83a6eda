# SPDX-License-Identifier: Apache-2.0
# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""A C-level consumer of aeron._core.term_reader's nogil kernels (cimported across .so files).

``read_frames`` exposes term_reader_read with a C callback. ``write_frames`` / ``read_concurrently``
run a release-ordered writer and an acquire-ordered reader on separate threads without the GIL, so a
test can check the publish protocol (frame length stored last, with release): every frame the reader sees is complete.
Frame payloads: i32 sequence, then bytes (sequence + i) & 0xFF.
"""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t
from libc.string cimport memcpy

from aeron._core.atomic cimport cpu_pause, store_release_i32
from aeron._core.atomic_buffer cimport AtomicBuffer
from aeron._core.term_reader cimport term_reader_read, term_block_scan
from aeron._core.term_scanner cimport term_scanner_scan_for_availability

cdef enum:
    MAX_RECORDED = 4096


cdef struct recorder_t:
    int32_t count
    int32_t stop_after            # return non-zero from the callback after this many, -1 never
    int32_t offsets[MAX_RECORDED]
    int32_t lengths[MAX_RECORDED]


cdef int record(void *ctx, const uint8_t *term, int32_t frame_offset, int32_t frame_length) noexcept nogil:
    cdef recorder_t *r = <recorder_t *>ctx
    if r.count < MAX_RECORDED:
        r.offsets[r.count] = frame_offset
        r.lengths[r.count] = frame_length
    r.count += 1
    return 1 if r.stop_after >= 0 and r.count >= r.stop_after else 0


def read_frames(AtomicBuffer term, int32_t offset, int32_t limit_offset, int32_t fragment_limit,
                int32_t stop_after=-1):
    """Returns (next_offset, fragments, [(frame_offset, frame_length), ...])."""
    term.check(0, term.length)
    cdef recorder_t r
    r.count = 0
    r.stop_after = stop_after
    cdef int64_t outcome = term_reader_read(term.data, offset, limit_offset, <int32_t>term.length,
                                            fragment_limit, record, &r)
    frames = [(r.offsets[i], r.lengths[i]) for i in range(min(r.count, MAX_RECORDED))]
    return <int32_t>(outcome >> 32), <int32_t>(outcome & 0xFFFFFFFF), frames


def block_scan(AtomicBuffer term, int32_t offset, int32_t limit_offset):
    term.check(0, term.length)
    return term_block_scan(term.data, offset, limit_offset, <int32_t>term.length)


cdef inline int32_t payload_length(int32_t seq) noexcept nogil:
    return 4 + (seq * 37) % 300


def write_frames(AtomicBuffer term, int32_t count):
    """Append ``count`` frames without the GIL: payload and header first, length last (release).
    Returns the number written (stops at the end of the term)."""
    term.check(0, term.length)
    cdef uint8_t *base = term.data
    cdef int32_t capacity = <int32_t>term.length
    cdef int32_t offset = 0, seq = 0, length, frame_length, i
    cdef uint8_t *frame
    cdef uint16_t frame_type = 1
    with nogil:
        while seq < count:
            length = payload_length(seq)
            frame_length = 32 + length
            if offset + ((frame_length + 31) & ~31) > capacity:
                break
            frame = base + offset
            memcpy(frame + 32, &seq, 4)
            for i in range(4, length):
                frame[32 + i] = <uint8_t>((seq + i) & 0xFF)
            frame[4] = 0
            frame[5] = 0xC0
            memcpy(frame + 6, &frame_type, 2)
            memcpy(frame + 8, &offset, 4)
            store_release_i32(<int32_t *>frame, frame_length)
            offset += (frame_length + 31) & ~31
            seq += 1
            for i in range(20):        # slow down so the reader keeps catching up with the tail
                cpu_pause()
    return seq


cdef struct checker_t:
    int32_t expected_seq
    int32_t errors


cdef int check_frame(void *ctx, const uint8_t *term, int32_t frame_offset, int32_t frame_length) noexcept nogil:
    cdef checker_t *c = <checker_t *>ctx
    cdef const uint8_t *payload = term + frame_offset + 32
    cdef int32_t seq, i, length = frame_length - 32
    memcpy(&seq, payload, 4)
    if seq != c.expected_seq or length != payload_length(seq):
        c.errors += 1
    else:
        for i in range(4, length):
            if payload[i] != <uint8_t>((seq + i) & 0xFF):
                c.errors += 1
                break
    c.expected_seq += 1
    return 0


def read_concurrently(AtomicBuffer term, int32_t count, int64_t max_idle_spins):
    """Poll with the kernels until ``count`` frames are read or ``max_idle_spins`` polls in a row
    find nothing. Returns (frames read, errors, batches that saw data)."""
    term.check(0, term.length)
    cdef checker_t c
    c.expected_seq = 0
    c.errors = 0
    cdef int32_t offset = 0, capacity = <int32_t>term.length
    cdef int64_t idle = 0, outcome
    cdef int32_t batches = 0, padding
    with nogil:
        while c.expected_seq < count and idle < max_idle_spins:
            # the sender's scan must agree that something is there whenever the reader finds it
            term_scanner_scan_for_availability(term.data + offset, capacity - offset, 1408, &padding)
            outcome = term_reader_read(term.data, offset, capacity, capacity, 16, check_frame, &c)
            if <int32_t>(outcome >> 32) == offset:
                idle += 1
                cpu_pause()
            else:
                idle = 0
                batches += 1
                offset = <int32_t>(outcome >> 32)
    return c.expected_seq, c.errors, batches
