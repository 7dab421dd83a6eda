# SPDX-License-Identifier: Apache-2.0
# LogBuffers: a mapped (or in-memory) log of 3 term partitions + metadata, validated once on open.
from libc.stdint cimport int32_t, int64_t, uint8_t
from aeron._core.atomic_buffer cimport AtomicBuffer

cdef class LogBuffers:
    cdef readonly AtomicBuffer buffer     # the whole log (owns/pins the memory)
    cdef uint8_t *terms[3]                # partition starts
    cdef uint8_t *meta                    # metadata section (last 4096 bytes)
    cdef readonly int32_t term_length
    cdef readonly int32_t position_bits_to_shift
    cdef readonly int32_t initial_term_id
    cdef readonly int32_t mtu_length
    cdef readonly int32_t page_size
    cdef readonly int32_t max_message_length
    cdef readonly int64_t max_possible_position
    cdef int check_open(self) except -1
