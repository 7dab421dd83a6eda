# SPDX-License-Identifier: Apache-2.0
# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""ControlFrameReader: what comes back to a send channel endpoint, read in compiled code (the receive half of
aeron_send_channel_endpoint.c).

``poll(transport)`` is one call per batch with the GIL released: recvmmsg into the transport's slots, the frame
checks of validate_frame, status messages and NAKs parsed into preallocated records, the other valid frames a
sender acts on (RTTM, ERR, RSP_SETUP) recorded by slot for Python to decode; invalid datagrams counted and dropped,
bytes received counted. ``parse(buffer, length)`` does the same for one datagram from Python (a transport without
compiled slots). The records are read back with ``frame_type(i)``, ``slot(i)``, ``status_message(i)`` and
``nak(i)``; they stay valid until the next call.

With ``set_fast(send_pass, counter)``, ``poll(transport, now_ns)`` takes a status message without flags itself when
the pass's publication takes it (SendPass.set_fast_status: connected to that one receiver under max flow control):
the sender limit moves there and then, and no record is left for Python. With a NAK counter too, ``poll`` hands
each NAK to the pass (SendPass.on_nak): a publication set by set_fast_retransmit resends it there and then.
"""
from libc.stdint cimport int32_t, int64_t, uint8_t

from aeron._core.atomic cimport get_and_add_i64
from aeron._core.counters cimport AtomicCounter
from aeron._core.frames cimport (
    FLAGS_FIELD_OFFSET, HDR_TYPE_ERR, HDR_TYPE_NAK, HDR_TYPE_RSP_SETUP, HDR_TYPE_RTTM, HDR_TYPE_SM,
    NAK_LENGTH_FIELD_OFFSET, NAK_SESSION_ID_FIELD_OFFSET, NAK_STREAM_ID_FIELD_OFFSET, NAK_TERM_ID_FIELD_OFFSET,
    NAK_TERM_OFFSET_FIELD_OFFSET, SM_CONSUMPTION_TERM_ID_FIELD_OFFSET, SM_CONSUMPTION_TERM_OFFSET_FIELD_OFFSET,
    SM_RECEIVER_ID_FIELD_OFFSET, SM_RECEIVER_WINDOW_FIELD_OFFSET, SM_SESSION_ID_FIELD_OFFSET,
    SM_STREAM_ID_FIELD_OFFSET, frame_validate, frames_get_i32, frames_get_i64, frames_sm_group_tag,
)
from aeron._core.send_pass cimport NAK_INVALID, NAK_NOT_TAKEN, SendPass
from aeron._core.udp_transport cimport UdpTransport

from aeron.common.errors import InvalidArgumentError


cdef class ControlFrameReader:
    """``ControlFrameReader(bytes_received, invalid_packets)``: the system counters it adds to."""

    def __init__(self, AtomicCounter bytes_received not None, AtomicCounter invalid_packets not None):
        bytes_received._check()
        invalid_packets._check()
        self._counters = [bytes_received, invalid_packets]
        self.bytes_received = bytes_received.addr
        self.invalid_packets = invalid_packets.addr
        self.record_count = 0
        self._fast_pass = None
        self.status_messages = NULL
        self.naks_received = NULL
        self.now_ns = 0
        self.fast_count = 0
        self.fast_naks = 0
        self.last_fast_ns = 0

    def set_fast(self, SendPass send_pass, AtomicCounter status_messages=None, AtomicCounter naks_received=None):
        """Status messages without flags that ``send_pass`` takes (SendPass.set_fast_status) are taken in ``poll``,
        counted in ``status_messages``, and leave no record; with ``naks_received``, so are the NAKs it takes
        (SendPass.on_nak), counted there. None: every one is a record."""
        if send_pass is None:
            self._fast_pass = None
            self.status_messages = NULL
            self.naks_received = NULL
            return
        if status_messages is None:
            raise InvalidArgumentError("status messages taken here add to a counter")
        status_messages._check()
        self._counters.append(status_messages)
        self.naks_received = NULL
        if naks_received is not None:
            naks_received._check()
            self._counters.append(naks_received)
            self.naks_received = naks_received.addr
        self._fast_pass = send_pass
        self.status_messages = status_messages.addr

    @property
    def fast(self):
        """True while status messages may be taken in ``poll`` (``set_fast`` with a pass)."""
        return self.status_messages != NULL

    cdef void parse(self, const uint8_t *p, int32_t length, int32_t slot) noexcept nogil:
        cdef int frame_type = frame_validate(p, length)
        cdef ControlRecord *r
        cdef int taken
        if frame_type < 0:
            get_and_add_i64(self.invalid_packets, 1)
            return
        if frame_type != HDR_TYPE_SM and frame_type != HDR_TYPE_NAK and frame_type != HDR_TYPE_RTTM and \
                frame_type != HDR_TYPE_ERR and frame_type != HDR_TYPE_RSP_SETUP:
            return                              # valid, but nothing a sender acts on
        if frame_type == HDR_TYPE_SM and p[FLAGS_FIELD_OFFSET] == 0 and self.status_messages != NULL and \
                (<SendPass>self._fast_pass).on_status_message(
                    frames_get_i32(p, SM_SESSION_ID_FIELD_OFFSET), frames_get_i32(p, SM_STREAM_ID_FIELD_OFFSET),
                    frames_get_i32(p, SM_CONSUMPTION_TERM_ID_FIELD_OFFSET),
                    frames_get_i32(p, SM_CONSUMPTION_TERM_OFFSET_FIELD_OFFSET),
                    frames_get_i32(p, SM_RECEIVER_WINDOW_FIELD_OFFSET), frames_get_i64(p, SM_RECEIVER_ID_FIELD_OFFSET),
                    self.now_ns):
            get_and_add_i64(self.status_messages, 1)
            self.fast_count += 1
            self.last_fast_ns = self.now_ns
            return
        if frame_type == HDR_TYPE_NAK and self.naks_received != NULL and self.status_messages != NULL:
            taken = (<SendPass>self._fast_pass).on_nak(
                frames_get_i32(p, NAK_SESSION_ID_FIELD_OFFSET), frames_get_i32(p, NAK_STREAM_ID_FIELD_OFFSET),
                frames_get_i32(p, NAK_TERM_ID_FIELD_OFFSET), frames_get_i32(p, NAK_TERM_OFFSET_FIELD_OFFSET),
                frames_get_i32(p, NAK_LENGTH_FIELD_OFFSET), self.now_ns)
            if taken != NAK_NOT_TAKEN:
                get_and_add_i64(self.naks_received, 1)
                if taken == NAK_INVALID:
                    get_and_add_i64(self.invalid_packets, 1)
                self.fast_naks += 1
                return
        r = &self.records[self.record_count]
        self.record_count += 1
        r.frame_type = frame_type
        r.slot = slot
        r.flags = p[FLAGS_FIELD_OFFSET]
        if frame_type == HDR_TYPE_SM:
            r.session_id = frames_get_i32(p, SM_SESSION_ID_FIELD_OFFSET)
            r.stream_id = frames_get_i32(p, SM_STREAM_ID_FIELD_OFFSET)
            r.term_id = frames_get_i32(p, SM_CONSUMPTION_TERM_ID_FIELD_OFFSET)
            r.term_offset = frames_get_i32(p, SM_CONSUMPTION_TERM_OFFSET_FIELD_OFFSET)
            r.length = frames_get_i32(p, SM_RECEIVER_WINDOW_FIELD_OFFSET)
            r.receiver_id = frames_get_i64(p, SM_RECEIVER_ID_FIELD_OFFSET)
            r.group_tag = frames_sm_group_tag(p, &r.has_group_tag)
        elif frame_type == HDR_TYPE_NAK:
            r.session_id = frames_get_i32(p, NAK_SESSION_ID_FIELD_OFFSET)
            r.stream_id = frames_get_i32(p, NAK_STREAM_ID_FIELD_OFFSET)
            r.term_id = frames_get_i32(p, NAK_TERM_ID_FIELD_OFFSET)
            r.term_offset = frames_get_i32(p, NAK_TERM_OFFSET_FIELD_OFFSET)
            r.length = frames_get_i32(p, NAK_LENGTH_FIELD_OFFSET)

    def poll(self, UdpTransport transport not None, int64_t now_ns=0):
        """Receive one batch on ``transport`` and read it (``now_ns``: the time of a status message taken here);
        returns the datagrams received."""
        transport._check()
        cdef int n, i
        cdef int64_t total
        self.record_count = 0
        self.fast_count = 0
        self.fast_naks = 0
        self.now_ns = now_ns
        with nogil:
            n = transport.receive_slots()
        if n < 0:
            n = transport.received_or_raise(n)          # a retry without recvmmsg, nothing, or an error raised
        if n > 0:
            if self.naks_received != NULL and (<SendPass>self._fast_pass).bytes_sent != NULL:
                (<SendPass>self._fast_pass).prepare_bound()     # a NAK taken here is resent through it: aimed now
            with nogil:
                total = 0
                for i in range(n):
                    if transport.rx_len[i] > 0:
                        total += transport.rx_len[i]
                        self.parse(transport.slot_data[i], transport.rx_len[i], i)
                get_and_add_i64(self.bytes_received, total)
        return n

    def parse_datagram(self, buffer, Py_ssize_t length):
        """One datagram from Python, as one record (or none: invalid, counted, or nothing a sender acts on);
        returns the record count (0 or 1). Adds to bytes received."""
        cdef const uint8_t[::1] view = buffer
        if length < 0 or length > view.shape[0] or length > 0x7FFFFFFF:
            raise InvalidArgumentError(f"length {length} must be in [0, {view.shape[0]}]")
        self.record_count = 0
        if length == 0:
            return 0
        get_and_add_i64(self.bytes_received, length)
        cdef int64_t *status_messages = self.status_messages
        self.status_messages = NULL             # no time given here: every status message is a record
        self.parse(&view[0], <int32_t>length, 0)
        self.status_messages = status_messages
        return self.record_count

    cdef int _check_index(self, int index) except -1:
        if index < 0 or index >= self.record_count:
            raise InvalidArgumentError(f"record {index} of {self.record_count}")
        return 0

    def frame_type(self, int index):
        self._check_index(index)
        return self.records[index].frame_type

    def slot(self, int index):
        self._check_index(index)
        return self.records[index].slot

    def status_message(self, int index):
        """(session id, stream id, flags, consumption term id, consumption term offset, receiver window, receiver
        id, group tag or None)."""
        self._check_index(index)
        cdef ControlRecord *r = &self.records[index]
        if r.frame_type != HDR_TYPE_SM:
            raise InvalidArgumentError(f"record {index} is not a status message")
        return (r.session_id, r.stream_id, r.flags, r.term_id, r.term_offset, r.length, r.receiver_id,
                r.group_tag if r.has_group_tag else None)

    def nak(self, int index):
        """(session id, stream id, term id, term offset, length)."""
        self._check_index(index)
        cdef ControlRecord *r = &self.records[index]
        if r.frame_type != HDR_TYPE_NAK:
            raise InvalidArgumentError(f"record {index} is not a NAK")
        return (r.session_id, r.stream_id, r.term_id, r.term_offset, r.length)
