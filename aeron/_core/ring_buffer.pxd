# SPDX-License-Identifier: Apache-2.0
# To-driver many-to-one ring buffer (Agrona's ManyToOneRingBuffer, aeron_mpsc_rb.c): `[capacity bytes of
# records | 768-byte trailer]`, capacity a power of two. Producers (clients, any thread or process) claim
# space by CAS on the tail; one consumer (the driver conductor) reads, zeroes what it read and moves the head.
# Kernels take an mpsc_rb_t resolved once from a checked buffer and assume validated arguments.
from cpython.buffer cimport Py_buffer
from libc.stdint cimport int32_t, int64_t, uint8_t
from aeron._core.atomic_buffer cimport AtomicBuffer
from aeron._core cimport record_descriptor as rd

cdef enum:
    RB_ALIGNMENT = rd.RECORD_ALIGNMENT
    RB_RECORD_HEADER_LENGTH = rd.RECORD_HEADER_LENGTH
    RB_LENGTH_OFFSET = rd.RECORD_LENGTH_OFFSET      # < 0 while the record is being written
    RB_TYPE_OFFSET = rd.RECORD_TYPE_OFFSET
    RB_PADDING_MSG_TYPE_ID = rd.RECORD_PADDING_MSG_TYPE_ID      # wrap, abort, unblock
    RB_TAIL_POSITION_OFFSET = 128          # trailer: int64 tail position (producers, CAS)
    RB_HEAD_CACHE_POSITION_OFFSET = 256    # trailer: int64 producers' cached copy of the head
    RB_HEAD_POSITION_OFFSET = 384          # trailer: int64 head position (consumer)
    RB_CORRELATION_COUNTER_OFFSET = 512    # trailer: int64 next correlation id (fetch-add)
    RB_CONSUMER_HEARTBEAT_OFFSET = 640     # trailer: int64 consumer heartbeat, epoch ms
    RB_TRAILER_LENGTH = 768                # six fields, two cache lines each
    RB_MIN_CAPACITY = rd.RECORD_MIN_CAPACITY
    RB_INSUFFICIENT_CAPACITY = -2          # claim/try_claim status: full (Agrona's value)
    # controlled_read handler actions, the values term_reader uses for fragments
    RB_ACTION_ABORT = 1                    # leave this record in place and stop
    RB_ACTION_BREAK = 2                    # consume this record and stop
    RB_ACTION_COMMIT = 3                   # consume, move the head now, continue
    RB_ACTION_CONTINUE = 4                 # consume and continue

# A ring resolved to raw pointers (the buffer is pinned by whoever made this).
ctypedef struct mpsc_rb_t:
    uint8_t *buffer                        # first record byte
    int32_t capacity                       # power of two
    int32_t max_msg_length                 # capacity / 8
    int64_t *tail_position                 # trailer fields (8-byte aligned)
    int64_t *head_cache_position
    int64_t *head_position
    int64_t *correlation_counter
    int64_t *consumer_heartbeat

# Fill `rb` for memory at `buffer` of `length` bytes; -1 when the capacity is invalid.
cdef int mpsc_rb_init(mpsc_rb_t *rb, uint8_t *buffer, Py_ssize_t length) noexcept nogil
# Reserve align(record_length, 8) bytes (padding the end of the buffer if needed); record index or
# RB_INSUFFICIENT_CAPACITY.
cdef int32_t mpsc_rb_claim_capacity(mpsc_rb_t *rb, int32_t record_length) noexcept nogil
# Claim, copy, commit. 1 written, 0 full.
cdef int mpsc_rb_write(mpsc_rb_t *rb, int32_t msg_type_id, const uint8_t *src, int32_t length) noexcept nogil
# Claim and write a negative length + type; payload index or RB_INSUFFICIENT_CAPACITY.
cdef int32_t mpsc_rb_try_claim(mpsc_rb_t *rb, int32_t msg_type_id, int32_t length) noexcept nogil
# 0 done; -1 bad index; -2 already committed; -3 already aborted.
cdef int mpsc_rb_commit(mpsc_rb_t *rb, int32_t index) noexcept nogil
cdef int mpsc_rb_abort(mpsc_rb_t *rb, int32_t index) noexcept nogil
# Fetch-add 1 on the correlation counter; the previous value.
cdef int64_t mpsc_rb_next_correlation_id(mpsc_rb_t *rb) noexcept nogil
# tail - head, clamped to [0, capacity], from a consistent head.
cdef int32_t mpsc_rb_size(mpsc_rb_t *rb) noexcept nogil
# Agrona's unblock: turn an abandoned claim (or a gap a producer never wrote) at the head into padding.
cdef bint mpsc_rb_unblock(mpsc_rb_t *rb) noexcept nogil
# Length of the record at `index` if it is committed and well formed, 0 when none is there yet, -1
# when the length is outside [8, limit - index] (corrupt).
cdef int32_t mpsc_rb_record_length_at(mpsc_rb_t *rb, int32_t index, int32_t limit) noexcept nogil
# True when the record at `record_position` ends at or before the producers' tail (re-read into
# `tail_seen` only when the cached value is too small).
cdef bint mpsc_rb_record_fits(mpsc_rb_t *rb, int64_t record_position, int32_t record_length,
                              int64_t *tail_seen) noexcept nogil
# Bytes to skip over a malformed record at record_index: to the first later slot from which well-formed
# records chain exactly to end_index (end_index itself if none does).
cdef int32_t mpsc_rb_malformed_extent(mpsc_rb_t *rb, int32_t record_index, int32_t end_index) noexcept nogil
# Zero [head_index, head_index + bytes) and publish head + bytes (consumer only).
cdef void mpsc_rb_consume(mpsc_rb_t *rb, int64_t head, int32_t bytes) noexcept nogil


cdef class ManyToOneRingBuffer:
    cdef mpsc_rb_t rb                      # raw view of the pinned buffer
    cdef readonly AtomicBuffer buffer      # the ring's memory, passed to read handlers
    cdef Py_buffer _pin                    # export of `buffer`: it cannot be closed under us
    cdef bint _has_pin                     # _pin must be released
    cdef bint _reading                     # inside read(): close() must wait
    cdef int32_t _malformed_length         # the last malformed record's length, for the report
    cdef int64_t _malformed_written        # bytes the producers had claimed from it, for the report
    cdef int _check(self) except -1
    cdef int _check_msg(self, int32_t msg_type_id, Py_ssize_t length) except -1
    cdef int32_t _check_index(self, Py_ssize_t index) except -1
    cdef int _claim_error(self, int rc, Py_ssize_t index) except -1   # raise for a commit/abort code
    cdef int32_t _skip_malformed(self, int32_t record_index, int64_t record_position) noexcept  # bytes to skip
    cdef int _corrupt(self, int32_t record_index, int32_t skipped) except -1  # report it: CorruptFileError
