# SPDX-License-Identifier: Apache-2.0
# LossDetector: the first gap between an image's rebuild position and its high-water mark, and when to NAK it.
from libc.stdint cimport int32_t, int64_t, uint8_t

cdef enum:
    LOSS_NEW_GAP = 1                # the scan found a gap that is not the active one: a new loss
    LOSS_NAK_DUE = 2                # the active gap's timer has expired: NAK it (then advance_nak_timer)


cdef class LossDetector:
    cdef readonly object delay
    cdef object _on_nak
    cdef object _on_loss
    cdef public int32_t active_term_id
    cdef public int32_t active_term_offset
    cdef public int32_t active_length
    cdef public int64_t expiry_ns   # when the active gap's NAK is due
    cdef public bint gap_open       # the last scan found a gap: its timer (expiry_ns) is running
    cdef public int32_t report_term_id      # the range last reported as lost (aeron_publication_image_report_loss)
    cdef public int32_t report_term_offset
    cdef public int32_t report_length
    cdef readonly bint static       # delays fixed (unicast, gap filling): first_delay_ns and retry_delay_ns
    cdef readonly int64_t first_delay_ns
    cdef readonly int64_t retry_delay_ns

    cdef int32_t find_gap(self, const uint8_t *term, int32_t term_length, int32_t rebuild_term_id,
                          int32_t rebuild_offset, int32_t hwm_term_id, int32_t hwm_offset,
                          int32_t *gap_length) noexcept nogil
    cdef bint is_new(self, int32_t term_id, int32_t gap_offset, int32_t gap_length) noexcept nogil
    cdef int on_gap(self, int32_t term_id, int32_t gap_offset, int32_t gap_length, int64_t now_ns,
                    int64_t first_delay_ns) noexcept nogil
    cdef int64_t loss_to_report(self, int32_t term_id, int32_t term_offset, int32_t length) noexcept nogil
    cdef void reported(self, int32_t term_id, int32_t term_offset, int32_t length) noexcept nogil
