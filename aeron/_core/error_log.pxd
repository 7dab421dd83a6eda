# SPDX-License-Identifier: Apache-2.0
# Distinct error log: records of (length, observation count, last/first timestamps, text), each
# aligned to 8, from offset 0 of the last cnc.dat section. Repeats bump the count of one record.
from libc.stdint cimport int32_t, int64_t
from aeron._core.atomic_buffer cimport AtomicBuffer

cdef enum:
    ERROR_LOG_LENGTH_OFFSET = 0
    ERROR_LOG_OBSERVATION_COUNT_OFFSET = 4
    ERROR_LOG_LAST_OBSERVATION_TIMESTAMP_OFFSET = 8
    ERROR_LOG_FIRST_OBSERVATION_TIMESTAMP_OFFSET = 16
    ERROR_LOG_ENCODED_ERROR_OFFSET = 24     # header length
    ERROR_LOG_RECORD_ALIGNMENT = 8


cdef class DistinctErrorLog:
    cdef readonly AtomicBuffer buffer       # the error log section
    cdef object clock_ms                    # callable returning epoch ms
    cdef dict observations                  # (error code, text) -> record offset
    cdef readonly Py_ssize_t next_offset    # where the next distinct record goes
    cdef object lock                        # serialises new records between threads
