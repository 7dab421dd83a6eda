# SPDX-License-Identifier: Apache-2.0
# loss-report.dat: one 64-byte aligned entry per image that saw loss (count, bytes lost, first/last
# timestamps, session, stream, channel, source). The receiver writes; LossStat reads.
from libc.stdint cimport int32_t, int64_t
from aeron._core.atomic_buffer cimport AtomicBuffer

cdef enum:
    LOSS_REPORT_OBSERVATION_COUNT_OFFSET = 0
    LOSS_REPORT_TOTAL_BYTES_LOST_OFFSET = 8
    LOSS_REPORT_FIRST_OBSERVATION_OFFSET = 16
    LOSS_REPORT_LAST_OBSERVATION_OFFSET = 24
    LOSS_REPORT_SESSION_ID_OFFSET = 32
    LOSS_REPORT_STREAM_ID_OFFSET = 36
    LOSS_REPORT_CHANNEL_OFFSET = 40
    LOSS_REPORT_ENTRY_ALIGNMENT = 64


cdef class LossReport:
    cdef readonly AtomicBuffer buffer       # whole loss report
    cdef readonly Py_ssize_t next_record_offset
    cdef set entry_offsets                  # offsets handed out by create_entry

    cdef int check_entry(self, Py_ssize_t offset) except -1
