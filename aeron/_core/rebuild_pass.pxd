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

    # what a receiver duty cycle leaves to the image's Python path (RebuildPass.hand_back)
    HAND_BACK_NONE = 0
    HAND_BACK_ALL = 1               # track_rebuild and send_pending_status_message
    HAND_BACK_SEND = 2              # send_pending_status_message only: a status message is pending or due

    # the image's lifecycle as the receiver's duty cycle needs it (PublicationImage.state)
    IMAGE_ACTIVE = 0
    IMAGE_DRAINING = 1
    IMAGE_LINGER = 2
    IMAGE_DONE = 3


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
    # what the receiver's duty cycle reads for the image without Python (cycle): the positions of the subscribers
    # that hold it back (not resting), its lifecycle, what the last rebuild scan saw
    cdef int64_t **positions
    cdef Py_ssize_t position_count
    cdef list _positions            # the AtomicCounters behind positions, kept alive
    cdef public int lifecycle       # IMAGE_*
    cdef public bint rejected       # error frames instead of status messages: Python's alone
    cdef public bint static_window  # a receiver window that congestion control does not move
    cdef public int64_t timer_slack_ns
    cdef public int64_t tracked_inserts
    cdef public int64_t tracked_hwm
    cdef public int64_t tracked_min_sub
    cdef public int64_t tracked_max_sub
    cdef readonly int hand_back     # HAND_BACK_*: what the last cycle left to Python
    cdef readonly int64_t disarms   # times it was disarmed: the image tries to aim it again after each

    cdef int cycle(self, int64_t now_ns) except -1

    cdef int run(self, int64_t min_sub, int64_t max_sub, int64_t now_ns, bint on_interval=*) noexcept nogil
    cdef int64_t deadline_ns(self) noexcept nogil
    cdef int64_t sm_threshold(self) noexcept nogil
    cdef int _send(self, int32_t length) noexcept nogil


cdef class ImageTracking:
    cdef public list passes         # the RebuildPass of each of the receiver's images, in its order
    cdef readonly int hand_backs    # images the last track() left to Python (their pass's hand_back says what)
