# SPDX-License-Identifier: Apache-2.0
# The message walk of segment_batch.pyx at C level: a Scan describes a region of a mapped segment and collects the
# results, Columns the Arrow buffers a filling walk writes (see scan_messages' docstring for their layout).
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t

cdef enum:
    ST_END = 0
    ST_END_OF_DATA = 1
    ST_FULL = 2
    ST_CORRUPT = 3
    TS_NONE = 0
    TS_RESERVED = 1
    TS_PAYLOAD = 2


cdef struct Columns:
    int64_t *position
    int32_t *stream_id
    int32_t *session_id
    int32_t *term_id
    int32_t *term_offset
    int16_t *flags
    int64_t *reserved_value
    int64_t *timestamp
    uint8_t *timestamp_valid
    int32_t *offsets
    uint8_t *data


cdef struct Scan:
    const uint8_t *seg
    int64_t offset
    int64_t skip_before        # messages whose first fragment lies before this offset are walked, not taken
    int64_t end
    int64_t limit
    int64_t segment_base
    int32_t term_length
    int32_t shift
    int32_t initial_term_id
    int ts_mode
    int32_t ts_offset
    int64_t max_rows
    int64_t max_bytes
    int64_t data_capacity      # room of the payload buffer when filling, else -1
    # results
    int64_t rows
    int64_t nbytes
    int64_t next_offset
    int64_t error_offset
    int status


cdef void walk(Scan *s, Columns *c, bint fill) noexcept nogil
