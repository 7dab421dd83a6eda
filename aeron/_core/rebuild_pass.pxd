# SPDX-License-Identifier: Apache-2.0
# RebuildPass: an image's rebuild tracking (loss scan, NAK, receiver position, status message) in compiled code.
from libc.stdint cimport int32_t, int64_t, uint8_t

from aeron._core.counters cimport AtomicCounter
from aeron._core.data_dispatcher cimport ImageReceiveState
from aeron._core.logbuffer cimport LogBuffers
from aeron._core.loss_detector cimport LossDetector
from aeron._core.loss_report cimport LossReport
from aeron._core.term_scanner cimport LogCleaner
from aeron._core.udp_transport cimport UdpTransport, sockaddr_storage, socklen_t

cdef enum:
    TRACK_IDLE = 0                  # nothing sent
    TRACK_WORK = 1                  # a status message or a NAK went out
    TRACK_PYTHON = 2                # the image's Python path must decide (nothing was changed)


cdef class RebuildPass:
    cdef readonly ImageReceiveState state
    cdef readonly LossDetector loss
    cdef LogCleaner cleaner
    cdef LogBuffers log
    cdef list _counters             # kept alive: rcv-pos, rcv-naks-sent, and the system counters below
    cdef int64_t *rcv_pos
    cdef int64_t *naks_sent         # the image's rcv-naks-sent
    cdef int64_t *nak_messages_sent
    cdef int64_t *status_messages_sent
    cdef int64_t *bytes_sent        # the endpoint's: what its sends count
    cdef public int64_t next_sm_position
    cdef public int32_t next_sm_window
    cdef public int64_t time_of_last_sm_ns
    cdef public bint sm_pending
    cdef readonly int64_t sm_timeout_ns
    cdef readonly int64_t liveness_timeout_ns
    cdef int64_t receiver_id
    cdef bint has_group_tag
    cdef int64_t group_tag
    cdef readonly bint armed        # aim() made it runnable; disarm() or a hand-back to Python ends that
    cdef UdpTransport transport
    cdef sockaddr_storage address
    cdef socklen_t address_length
    cdef object address_key
    cdef LossReport report
    cdef Py_ssize_t report_entry    # -1: none yet (the first loss makes it in Python)
    cdef int64_t connection_floor_ns
    cdef readonly int64_t gaps_seen # the image's gap count when the pass last scanned
    cdef readonly int send_errno    # a send that failed (not a full socket): the Python side raises it
    cdef uint8_t frame[64]

    cdef int run(self, int64_t min_sub, int64_t max_sub, int64_t now_ns, bint on_interval=*) noexcept nogil
    cdef int64_t deadline_ns(self) noexcept nogil
    cdef int64_t sm_threshold(self) noexcept nogil
    cdef int _send(self, int32_t length) noexcept nogil
