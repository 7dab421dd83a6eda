# SPDX-License-Identifier: Apache-2.0
# The send endpoint's control path in compiled code: one call per batch receives and validates the frames that
# come back to a sender and parses status messages and NAKs into preallocated records.
from libc.stdint cimport int32_t, int64_t, uint8_t

from aeron._core.udp_transport cimport MAX_BATCH, UdpTransport


cdef struct ControlRecord:
    int32_t frame_type              # HDR_TYPE_SM or HDR_TYPE_NAK (parsed), another valid type (Python decodes)
    int32_t slot                    # the transport slot it came in
    int32_t flags
    int32_t session_id
    int32_t stream_id
    int32_t term_id                 # SM: consumption term id; NAK: term id of the gap
    int32_t term_offset             # SM: consumption term offset; NAK: gap start
    int32_t length                  # SM: receiver window; NAK: gap length
    int64_t receiver_id             # SM only
    int64_t group_tag               # SM only, when has_group_tag
    bint has_group_tag


cdef class ControlFrameReader:
    cdef ControlRecord records[MAX_BATCH]
    cdef readonly int record_count
    cdef int64_t *bytes_received
    cdef int64_t *invalid_packets
    cdef list _counters
    cdef object _fast_pass              # set_fast: the SendPass whose status messages may be taken here
    cdef int64_t *status_messages       # ... and the counter they add to
    cdef int64_t *naks_received         # set_fast with a NAK counter: NAKs the pass takes (SendPass.on_nak) add here
    cdef int64_t now_ns                 # the time poll() was given
    cdef readonly int fast_count        # status messages the last poll took in compiled code
    cdef readonly int64_t last_fast_ns  # when compiled code last took one (0: never)
    cdef readonly int fast_naks         # NAKs the last poll handled in compiled code

    cdef void parse(self, const uint8_t *p, int32_t length, int32_t slot) noexcept nogil
    cdef int _check_index(self, int index) except -1
