# SPDX-License-Identifier: Apache-2.0
# cnc.dat descriptor: a 128-byte header then five sections back to back (to-driver ring, to-clients
# broadcast, counters metadata, counters values, error log). This module only lays out and validates
# the file and hands out AtomicBuffers over the sections; the ring, broadcast, counters and error log
# modules interpret them.
from libc.stdint cimport int32_t, int64_t
from aeron._core.atomic_buffer cimport AtomicBuffer

cdef enum:
    CNC_VERSION_FIELD_OFFSET = 0
    CNC_TO_DRIVER_BUFFER_LENGTH_FIELD_OFFSET = 4
    CNC_TO_CLIENTS_BUFFER_LENGTH_FIELD_OFFSET = 8
    CNC_COUNTERS_METADATA_BUFFER_LENGTH_FIELD_OFFSET = 12
    CNC_COUNTERS_VALUES_BUFFER_LENGTH_FIELD_OFFSET = 16
    CNC_ERROR_LOG_BUFFER_LENGTH_FIELD_OFFSET = 20
    CNC_CLIENT_LIVENESS_TIMEOUT_FIELD_OFFSET = 24
    CNC_START_TIMESTAMP_FIELD_OFFSET = 32
    CNC_PID_FIELD_OFFSET = 40
    CNC_FILE_PAGE_SIZE_FIELD_OFFSET = 48
    CNC_META_DATA_LENGTH = 128            # header length = 2 cache lines
    CNC_VERSION_MAJOR = 0
    CNC_VERSION_MINOR = 2
    CNC_VERSION_PATCH = 0


cdef inline int32_t semantic_version_compose_c(int32_t major, int32_t minor, int32_t patch) noexcept nogil:
    return (major << 16) | (minor << 8) | patch


cdef class CncFile:
    cdef readonly AtomicBuffer buffer                    # the whole file (owns the mapping)
    cdef readonly object path                            # file path, None for from_buffer
    cdef readonly int32_t to_driver_buffer_length
    cdef readonly int32_t to_clients_buffer_length
    cdef readonly int32_t counters_metadata_buffer_length
    cdef readonly int32_t counters_values_buffer_length
    cdef readonly int32_t error_log_buffer_length
    cdef readonly int64_t client_liveness_timeout_ns
    cdef readonly int64_t start_timestamp_ms
    cdef readonly int64_t pid
    cdef readonly int32_t file_page_size
    cdef readonly Py_ssize_t to_driver_buffer_offset
    cdef readonly Py_ssize_t to_clients_buffer_offset
    cdef readonly Py_ssize_t counters_metadata_buffer_offset
    cdef readonly Py_ssize_t counters_values_buffer_offset
    cdef readonly Py_ssize_t error_log_buffer_offset
    cdef readonly Py_ssize_t required_length              # 128 + sum of section lengths
    cdef dict _sections                                  # section name -> AtomicBuffer (closed with us)

    cdef int load_header(self, bint allow_uninitialised) except -1   # read + validate fields
    cdef _section(self, str name, Py_ssize_t offset, Py_ssize_t length)
