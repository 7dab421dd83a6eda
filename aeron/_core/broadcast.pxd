# SPDX-License-Identifier: Apache-2.0
# To-clients broadcast buffer (Agrona's BroadcastTransmitter / BroadcastReceiver): `[capacity bytes |
# 128-byte trailer]`, capacity a power of two. One transmitter (the driver conductor) never waits; each
# receiver follows at its own pace and detects being lapped through the tail-intent counter.
from cpython.buffer cimport Py_buffer
from libc.stdint cimport int32_t, int64_t, uint8_t
from aeron._core.atomic_buffer cimport AtomicBuffer
from aeron._core cimport record_descriptor as rd

cdef enum:
    BCAST_TAIL_INTENT_COUNTER_OFFSET = 0   # trailer: int64 tail the transmitter is about to reach
    BCAST_TAIL_COUNTER_OFFSET = 8          # trailer: int64 tail after the last complete record
    BCAST_LATEST_COUNTER_OFFSET = 16       # trailer: int64 position of the most recent record
    BCAST_TRAILER_LENGTH = 128             # two cache lines
    BCAST_RECORD_ALIGNMENT = rd.RECORD_ALIGNMENT
    BCAST_RECORD_HEADER_LENGTH = rd.RECORD_HEADER_LENGTH
    BCAST_LENGTH_OFFSET = rd.RECORD_LENGTH_OFFSET
    BCAST_TYPE_OFFSET = rd.RECORD_TYPE_OFFSET
    BCAST_PADDING_MSG_TYPE_ID = rd.RECORD_PADDING_MSG_TYPE_ID   # the padding at the wrap
    BCAST_SCRATCH_BUFFER_LENGTH_DEFAULT = 4096   # CopyBroadcastReceiver default, as upstream

# A broadcast buffer resolved to raw pointers (the buffer is pinned by whoever made this).
ctypedef struct broadcast_buffer_t:
    uint8_t *buffer                        # first record byte
    int32_t capacity                       # power of two
    int32_t max_msg_length                 # capacity / 8
    int64_t *tail_intent_counter           # trailer fields (8-byte aligned)
    int64_t *tail_counter
    int64_t *latest_counter

# One receiver's position in the stream.
ctypedef struct broadcast_receiver_state_t:
    int64_t cursor                         # position of the current record
    int64_t next_record                    # position after it
    int32_t record_offset                  # cursor & mask: where the current record's header is
    int64_t lapped_count                   # times the transmitter overtook this receiver

# Fill `b` for memory at `buffer` of `length` bytes; -1 when the capacity is not a power of two.
cdef int broadcast_buffer_init(broadcast_buffer_t *b, uint8_t *buffer, Py_ssize_t length) noexcept nogil
# Single writer. Arguments validated: msg_type_id >= 1, 0 <= length <= max_msg_length.
cdef void broadcast_transmit(broadcast_buffer_t *b, int32_t msg_type_id, const uint8_t *src,
                             int32_t length) noexcept nogil
# Position a receiver at `latest` (C client behaviour).
cdef void broadcast_receiver_init(broadcast_buffer_t *b, broadcast_receiver_state_t *r) noexcept nogil
# True while the record at `cursor` cannot have been overwritten (acquire load of the tail intent).
cdef bint broadcast_receiver_validate_at(broadcast_buffer_t *b, int64_t cursor) noexcept nogil
# 1 a record is current (r.record_offset), 0 nothing new, -1 a malformed length that is not
# explained by lapping (corrupt buffer).
cdef int broadcast_receive_next(broadcast_buffer_t *b, broadcast_receiver_state_t *r) noexcept nogil


cdef class BroadcastTransmitter:
    cdef broadcast_buffer_t b              # raw view of the pinned buffer
    cdef readonly AtomicBuffer buffer      # the broadcast section
    cdef Py_buffer _pin                    # export of `buffer`: it cannot be closed under us
    cdef bint _has_pin                     # _pin must be released
    cdef int _check(self) except -1


cdef class BroadcastReceiver:
    cdef broadcast_buffer_t b              # raw view of the pinned buffer
    cdef broadcast_receiver_state_t r      # stream position
    cdef readonly AtomicBuffer buffer      # the broadcast section (handlers read records from it)
    cdef Py_buffer _pin                    # export of `buffer`: it cannot be closed under us
    cdef bint _has_pin                     # _pin must be released
    cdef int _check(self) except -1
    cdef int _receive_next(self) except -1     # 1 / 0, raises CorruptFileError


cdef class CopyBroadcastReceiver:
    cdef readonly BroadcastReceiver receiver   # the wrapped receiver
    cdef readonly AtomicBuffer scratch_buffer  # messages are copied here before delivery
    cdef bytearray _scratch                    # memory of scratch_buffer (private, never resized)
    cdef uint8_t *_scratch_data                # its first byte
    cdef int32_t _scratch_length               # its length
