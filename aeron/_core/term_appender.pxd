# SPDX-License-Identifier: Apache-2.0
# Write side of a log buffer (aeron_publication.c, aeron_exclusive_publication.c): nogil kernels over raw
# pointers plus the two appender classes the Publication / ExclusivePublication faces subclass.
# Kernels assume validated input: length <= max_message_length, iov covering exactly `length` bytes.
from cpython.buffer cimport Py_buffer
from libc.stdint cimport int32_t, int64_t, uint8_t
from aeron._core.atomic_buffer cimport AtomicBuffer
from aeron._core.buffer_claim cimport BufferClaim
from aeron._core.wakeup cimport WakeSignal
from aeron._core.logbuffer cimport LogBuffers

cdef enum:
    APPEND_NOT_CONNECTED = -1
    APPEND_BACK_PRESSURED = -2
    APPEND_ADMIN_ACTION = -3
    APPEND_CLOSED = -4
    APPEND_MAX_POSITION_EXCEEDED = -5
    APPEND_GIL_RELEASE_THRESHOLD = 64 * 1024   # copies at least this long run without the GIL
    APPEND_STACK_IOV = 8                       # offerv parts held on the stack before allocating

# One contiguous source part of a message (a vectored offer has several).
ctypedef struct appender_iov_t:
    const uint8_t *base                # first byte of the part
    Py_ssize_t length                  # bytes in the part

# Where a successful reservation landed; the caller writes its frames there.
ctypedef struct appender_span_t:
    uint8_t *term                      # partition start
    int32_t partition_index            # which partition `term` is
    int32_t term_offset                # offset of the first frame in the partition
    int32_t term_id                    # term id to stamp into the headers

# Everything the kernels need, resolved once when the appender is made.
ctypedef struct appender_state_t:
    uint8_t *terms[3]                  # partition starts
    uint8_t *meta                      # log metadata section (tails, active term count, is_connected)
    const int64_t *position_limit      # pub-lmt counter, read with acquire; may point at no_limit
    int64_t no_limit                   # INT64_MAX, the limit when no counter is given
    int64_t max_possible_position      # term_length << 31
    int64_t term_begin_position        # exclusive only: position of the start of term_id
    int32_t term_length                # bytes per partition
    int32_t position_bits_to_shift     # log2(term_length)
    int32_t initial_term_id            # from metadata
    int32_t session_id                 # from the default frame header
    int32_t stream_id                  # from the default frame header
    int32_t max_payload_length         # mtu - 32: largest unfragmented payload
    int32_t max_message_length         # min(16 MiB, term_length / 8)
    int32_t term_id                    # exclusive only: current term id
    int32_t term_offset                # exclusive only: next free offset in the current term
    int32_t active_partition_index     # exclusive only: partition holding term_id

# -- frame writers (any appender) -------------------------------------------------------------------
# Header as aeron_publication_header_write: release-store -frame_length, release fence, then the fields
# (flags BEGIN|END, DATA).
cdef void frame_header_write(uint8_t *term, int32_t offset, int32_t frame_length, int32_t term_id,
                             int32_t session_id, int32_t stream_id) noexcept nogil
# A committed PAD frame of frame_length bytes at offset (end-of-term padding, append_padding, abort).
cdef void frame_padding_write(uint8_t *term, int32_t offset, int32_t frame_length, int32_t term_id,
                              int32_t session_id, int32_t stream_id) noexcept nogil
# Write a message of `length` bytes as one frame or max_payload fragments starting at term_offset.
# With commit each fragment's length is release-stored in order; without, lengths stay negative.
cdef void term_fragments_write(uint8_t *term, int32_t term_offset, const appender_iov_t *iov,
                               int32_t length, int32_t max_payload_length, int32_t term_id,
                               int32_t session_id, int32_t stream_id, bint commit) noexcept nogil
# Bytes a message of `length` occupies in the term: one aligned frame or the fragmented length
# (aeron_logbuffer_compute_fragmented_length).
cdef int32_t framed_length_of(int32_t length, int32_t max_payload_length) noexcept nogil
# Publication.backPressureStatus: MAX_POSITION_EXCEEDED, BACK_PRESSURED (connected) or NOT_CONNECTED.
cdef int64_t back_pressure_status(const appender_state_t *s, int64_t position, int32_t length) noexcept nogil

# -- concurrent (aeron_publication_offer): any number of threads/processes on one log --------------
# Limit check, fetch-and-add framed_length on the active tail, end-of-term handling. Returns the
# position after the span (span filled) or a negative status (nothing to write).
cdef int64_t concurrent_reserve(appender_state_t *s, int32_t length, int32_t framed_length,
                                appender_span_t *span) noexcept nogil
# Whole offer: reserve then write and commit every fragment.
cdef int64_t concurrent_offer(appender_state_t *s, const appender_iov_t *iov, int32_t length) noexcept nogil

# -- exclusive (aeron_exclusive_publication_offer): a single writer keeping term id/offset locally --
# As concurrent_reserve but publishes the tail with a release store and rotates without CAS.
cdef int64_t exclusive_reserve(appender_state_t *s, int32_t length, int32_t framed_length,
                               appender_span_t *span) noexcept nogil
cdef int64_t exclusive_offer(appender_state_t *s, const appender_iov_t *iov, int32_t length) noexcept nogil
# Move to the next term: plain-store its tail, release-store active_term_count
# (aeron_exclusive_publication_rotate_term).
cdef void exclusive_rotate_term(appender_state_t *s) noexcept nogil
# Initialise term id/offset/begin position from the active partition's tail.
cdef void exclusive_init_from_tail(appender_state_t *s) noexcept nogil


cdef class TermAppender:
    cdef appender_state_t state        # kernel view of the log; its address is stable for our lifetime
    cdef readonly LogBuffers log       # the log we append to
    cdef AtomicBuffer _limit_buffer    # pub-lmt counter buffer (pinned), or None
    cdef Py_buffer _log_pin            # export on the log's memory so it cannot be unmapped under us
    cdef Py_buffer _limit_pin          # export on the counter buffer, likewise
    cdef bint _has_log_pin
    cdef bint _has_limit_pin
    cdef bint closed                   # after close() every offer returns CLOSED
    cdef tuple _term_buffers           # AtomicBuffers over the partitions, made for the first supplier call
    cdef BufferClaim _claim            # the reusable claim try_claim(length) returns, made on first use
    cdef WakeSignal _wake              # signalled after each append (aeron.common.wakeup), or None

    cdef int64_t _reserve(self, int32_t length, int32_t framed_length, appender_span_t *span) noexcept nogil
    cdef int64_t _append(self, const appender_iov_t *iov, int32_t length, object supplier) except? -100
    cdef int64_t _claim_into(self, int32_t length, BufferClaim claim) except? -100
    cdef int _commit_with_supplier(self, appender_span_t *span, int32_t length, object supplier) except -1
    cdef void _pad_uncommitted(self, uint8_t *term, int32_t frame_offset, int32_t remaining) noexcept
    cdef object _term_buffer(self, int32_t index)
    cdef int _check_length(self, Py_ssize_t length) except -1
    cdef int _release_pins(self) except -1
    cdef void _release_exports(self) noexcept


cdef class ConcurrentTermAppender(TermAppender):
    pass


cdef class ExclusiveTermAppender(TermAppender):
    cdef int _check_first_frame(self, const uint8_t *src) except -1
