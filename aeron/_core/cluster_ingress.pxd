# SPDX-License-Identifier: Apache-2.0
# The leader's ingress session messages appended to the log in compiled code (cluster_ingress.pyx says how).
from libc.stdint cimport int64_t, uint8_t

cdef enum:
    _SCHEMA_ID = 111
    _SESSION_MESSAGE = 1
    _BLOCK_LENGTH = 24
    _SESSION_HEADER_LENGTH = 32
    _LEADERSHIP_TERM_ID_OFFSET = 8
    _CLUSTER_SESSION_ID_OFFSET = 16
    _TIMESTAMP_OFFSET = 24
    _SEND_ATTEMPTS = 3


cdef class IngressSessionAppender:
    cdef object agent
    cdef object on_other
    cdef dict sessions
    cdef object open_state
    cdef object leader_role
    cdef object log_publisher
    cdef object clock_time
    cdef object to_nanos
    cdef object check_result
    cdef uint8_t header[_SESSION_HEADER_LENGTH]
    cdef readonly int64_t appended
