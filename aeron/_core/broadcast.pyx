# SPDX-License-Identifier: Apache-2.0
# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""To-clients broadcast buffer: transmitter, receiver and copy receiver.

Port of Agrona's BroadcastTransmitter / BroadcastReceiver / CopyBroadcastReceiver and
aeron_broadcast_transmitter.c / aeron_broadcast_receiver.h.

A receiver starts at ``latest`` as the C client does (older Agrona copy receivers first drained to
the tail); its first receive may therefore repeat the most recent record, which clients filter by
correlation id anyway.
"""
cimport cython
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from libc.stdint cimport int32_t, int64_t, uint8_t
from libc.string cimport memcpy

from aeron._core.atomic cimport fence_acquire, fence_release, load_acquire_i64, store_release_i64
from aeron._core.atomic_buffer cimport AtomicBuffer, check_span
from aeron._core.record_descriptor cimport (RECORD_MAX_CAPACITY, capacity_of, pin_records, record_align,
                                            record_length_ptr, record_type_ptr, records_init, unpin)
from aeron.common.errors import CorruptFileError, IllegalStateError, InvalidArgumentError

# -- layout constants (Python view of broadcast.pxd) ---------------------------------------------------
TAIL_INTENT_COUNTER_OFFSET = BCAST_TAIL_INTENT_COUNTER_OFFSET
TAIL_COUNTER_OFFSET = BCAST_TAIL_COUNTER_OFFSET
LATEST_COUNTER_OFFSET = BCAST_LATEST_COUNTER_OFFSET
TRAILER_LENGTH = BCAST_TRAILER_LENGTH
RECORD_ALIGNMENT = BCAST_RECORD_ALIGNMENT
HEADER_LENGTH = BCAST_RECORD_HEADER_LENGTH
LENGTH_OFFSET = BCAST_LENGTH_OFFSET
TYPE_OFFSET = BCAST_TYPE_OFFSET
PADDING_MSG_TYPE_ID = BCAST_PADDING_MSG_TYPE_ID
SCRATCH_BUFFER_LENGTH = BCAST_SCRATCH_BUFFER_LENGTH_DEFAULT
MAX_CAPACITY = RECORD_MAX_CAPACITY

cdef enum:
    RESYNC_ATTEMPTS = 16    # bounded retries when a lapped receiver keeps reading torn headers


def compute_capacity(Py_ssize_t length):
    """Capacity of a broadcast section of ``length`` bytes, or -1 when it is not a power of two."""
    return capacity_of(length, BCAST_TRAILER_LENGTH)


# ------------------------------------------------------------------------------------------------
# Kernels
# ------------------------------------------------------------------------------------------------
cdef int broadcast_buffer_init(broadcast_buffer_t *b, uint8_t *buffer, Py_ssize_t length) noexcept nogil:
    cdef uint8_t *trailer = records_init(buffer, length, BCAST_TRAILER_LENGTH, &b.capacity, &b.max_msg_length)
    if trailer == NULL:
        return -1
    b.buffer = buffer
    b.tail_intent_counter = <int64_t *>(trailer + BCAST_TAIL_INTENT_COUNTER_OFFSET)
    b.tail_counter = <int64_t *>(trailer + BCAST_TAIL_COUNTER_OFFSET)
    b.latest_counter = <int64_t *>(trailer + BCAST_LATEST_COUNTER_OFFSET)
    return 0


cdef inline void _signal_tail_intent(broadcast_buffer_t *b, int64_t new_tail) noexcept nogil:
    # Receivers compare their cursor against the intent, so it must be visible before any byte of
    # the records it covers is overwritten: release store, then a fence ordering the later stores.
    store_release_i64(b.tail_intent_counter, new_tail)
    fence_release()


cdef void broadcast_transmit(broadcast_buffer_t *b, int32_t msg_type_id, const uint8_t *src,
                             int32_t length) noexcept nogil:
    cdef int64_t current_tail = b.tail_counter[0]        # plain: single writer
    cdef int32_t record_offset = <int32_t>(current_tail & (b.capacity - 1))
    cdef int32_t record_length = length + BCAST_RECORD_HEADER_LENGTH
    cdef int32_t aligned = record_align(record_length)
    cdef int64_t new_tail = current_tail + aligned
    cdef int32_t to_end = b.capacity - record_offset
    if to_end < aligned:
        _signal_tail_intent(b, new_tail + to_end)
        record_length_ptr(b.buffer, record_offset)[0] = to_end
        record_type_ptr(b.buffer, record_offset)[0] = BCAST_PADDING_MSG_TYPE_ID
        current_tail += to_end
        record_offset = 0
    else:
        _signal_tail_intent(b, new_tail)
    record_length_ptr(b.buffer, record_offset)[0] = record_length
    record_type_ptr(b.buffer, record_offset)[0] = msg_type_id
    if length > 0:
        memcpy(b.buffer + record_offset + BCAST_RECORD_HEADER_LENGTH, src, <size_t>length)
    store_release_i64(b.latest_counter, current_tail)
    # Publishing the tail (release) makes the record, and the padding before it, visible.
    store_release_i64(b.tail_counter, current_tail + aligned)


cdef void broadcast_receiver_init(broadcast_buffer_t *b, broadcast_receiver_state_t *r) noexcept nogil:
    cdef int64_t latest = load_acquire_i64(b.latest_counter)
    r.cursor = latest
    r.next_record = latest
    r.record_offset = <int32_t>(latest & (b.capacity - 1))
    r.lapped_count = 0


cdef bint broadcast_receiver_validate_at(broadcast_buffer_t *b, int64_t cursor) noexcept nogil:
    return cursor + b.capacity > load_acquire_i64(b.tail_intent_counter)


cdef inline bint _well_formed(broadcast_buffer_t *b, int32_t offset, int32_t length) noexcept nogil:
    return length >= BCAST_RECORD_HEADER_LENGTH and record_align(length) <= b.capacity - offset


cdef int broadcast_receive_next(broadcast_buffer_t *b, broadcast_receiver_state_t *r) noexcept nogil:
    # Port of receiveNext. Deviation: a length outside the buffer is never followed. If the record
    # was overwritten (lapped) we resynchronise at `latest` like the lap check does; otherwise the
    # buffer is corrupt and -1 is returned with the receiver unchanged.
    cdef int64_t tail = load_acquire_i64(b.tail_counter)
    cdef int64_t cursor = r.next_record
    cdef int64_t mask = b.capacity - 1
    cdef int32_t record_offset, length, first_length
    cdef int attempt
    if tail <= cursor:
        return 0
    for attempt in range(RESYNC_ATTEMPTS):
        record_offset = <int32_t>(cursor & mask)
        if not broadcast_receiver_validate_at(b, cursor):
            r.lapped_count += 1
            cursor = load_acquire_i64(b.latest_counter)
            record_offset = <int32_t>(cursor & mask)
        length = record_length_ptr(b.buffer, record_offset)[0]
        if not _well_formed(b, record_offset, length):
            if broadcast_receiver_validate_at(b, cursor):
                return -1
            continue                       # torn by the transmitter: lapped again, retry at latest
        if record_type_ptr(b.buffer, record_offset)[0] == BCAST_PADDING_MSG_TYPE_ID:
            first_length = record_length_ptr(b.buffer, 0)[0]
            if not _well_formed(b, 0, first_length):
                if broadcast_receiver_validate_at(b, cursor):
                    return -1
                continue
            r.cursor = cursor + record_align(length)
            r.next_record = r.cursor + record_align(first_length)
            r.record_offset = 0
        else:
            r.cursor = cursor
            r.next_record = cursor + record_align(length)
            r.record_offset = record_offset
        return 1
    return 0


# ------------------------------------------------------------------------------------------------
# Python face
# ------------------------------------------------------------------------------------------------
cdef int _init_buffer(broadcast_buffer_t *b, AtomicBuffer buffer, object path, Py_ssize_t file_offset,
                      Py_buffer *pin) except -1:
    pin_records(buffer, path, file_offset, "broadcast buffer", BCAST_TRAILER_LENGTH, pin)
    broadcast_buffer_init(b, buffer.data, buffer.length)
    return 0


@cython.final
cdef class BroadcastTransmitter:
    """The single writer of a broadcast buffer (``capacity + 128`` bytes, capacity a power of two).

    ``BroadcastTransmitter(buffer, path=None)``; bad capacity raises ConfigurationError, or
    CorruptFileError when the memory comes from a file.
    """

    def __cinit__(self, AtomicBuffer buffer not None, path=None, Py_ssize_t file_offset=0):
        self._has_pin = False
        _init_buffer(&self.b, buffer, path, file_offset, &self._pin)
        self._has_pin = True
        self.buffer = buffer

    def __dealloc__(self):
        unpin(&self._pin, &self._has_pin)

    cdef int _check(self) except -1:
        if not self._has_pin:
            raise IllegalStateError("broadcast transmitter is closed")
        return 0

    def close(self):
        """Release the pinned buffer (it is not closed)."""
        unpin(&self._pin, &self._has_pin)

    @property
    def is_closed(self):
        return not self._has_pin

    @property
    def capacity(self):
        return self.b.capacity

    @property
    def max_msg_length(self):
        return self.b.max_msg_length

    def transmit(self, int32_t msg_type_id, src, Py_ssize_t offset=0, Py_ssize_t length=-1):
        """Broadcast ``src[offset:offset + length]`` (any buffer; ``length=-1`` to its end).

        Never blocks; receivers that fall a buffer behind are lapped. Raises InvalidArgumentError
        (type id < 1, length > max_msg_length) or OutOfBoundsError (range outside ``src``).
        """
        self._check()
        if msg_type_id < 1:
            raise InvalidArgumentError(f"message type id must be >= 1, got {msg_type_id}")
        cdef Py_buffer view
        PyObject_GetBuffer(src, &view, PyBUF_SIMPLE)
        try:
            length = check_span(offset, length, view.len)
            if length > self.b.max_msg_length:
                raise InvalidArgumentError(
                    f"encoded message exceeds max_msg_length of {self.b.max_msg_length}, length={length}")
            broadcast_transmit(&self.b, msg_type_id, <const uint8_t *>view.buf + offset, <int32_t>length)
        finally:
            PyBuffer_Release(&view)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


@cython.final
cdef class BroadcastReceiver:
    """One reader of a broadcast buffer, starting at the most recent record (``latest``).

    ``receive_next()`` moves to the next record; ``type_id``, ``offset``, ``length`` and ``buffer``
    describe it, and ``validate()`` tells whether it may have been overwritten since.
    """

    def __cinit__(self, AtomicBuffer buffer not None, path=None, Py_ssize_t file_offset=0):
        self._has_pin = False
        _init_buffer(&self.b, buffer, path, file_offset, &self._pin)
        self._has_pin = True
        self.buffer = buffer
        broadcast_receiver_init(&self.b, &self.r)

    def __dealloc__(self):
        unpin(&self._pin, &self._has_pin)

    cdef int _check(self) except -1:
        if not self._has_pin:
            raise IllegalStateError("broadcast receiver is closed")
        return 0

    cdef int _receive_next(self) except -1:
        cdef int rc = broadcast_receive_next(&self.b, &self.r)
        if rc < 0:
            offset = <int32_t>(self.r.next_record & (self.b.capacity - 1))
            raise CorruptFileError(
                f"broadcast record at offset {offset} has a malformed length "
                f"{record_length_ptr(self.b.buffer, offset)[0]} (capacity {self.b.capacity})",
                path=self.buffer.path, offset=offset)
        return rc

    def close(self):
        """Release the pinned buffer (it is not closed)."""
        unpin(&self._pin, &self._has_pin)

    @property
    def is_closed(self):
        return not self._has_pin

    @property
    def capacity(self):
        return self.b.capacity

    @property
    def lapped_count(self):
        """Times the transmitter overtook this receiver (each time at least a buffer was lost)."""
        return self.r.lapped_count

    @property
    def cursor(self):
        """Stream position of the current record."""
        return self.r.cursor

    @property
    def next_record(self):
        """Stream position the next receive_next() looks at."""
        return self.r.next_record

    @property
    def type_id(self):
        self._check()
        return record_type_ptr(self.b.buffer, self.r.record_offset)[0]

    @property
    def offset(self):
        """Offset of the current message's payload in ``buffer``."""
        return self.r.record_offset + BCAST_RECORD_HEADER_LENGTH

    @property
    def length(self):
        """Payload length of the current message."""
        self._check()
        return record_length_ptr(self.b.buffer, self.r.record_offset)[0] - BCAST_RECORD_HEADER_LENGTH

    def receive_next(self):
        """Move to the next record. True when one is available; lapping bumps ``lapped_count``
        and continues at ``latest``. Raises CorruptFileError on a malformed record length."""
        self._check()
        return self._receive_next() == 1

    def validate(self):
        """True while the current record cannot have been overwritten (call after reading it)."""
        self._check()
        fence_acquire()
        return broadcast_receiver_validate_at(&self.b, self.r.cursor)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


@cython.final
cdef class CopyBroadcastReceiver:
    """Receives one message at a time into a private scratch buffer, validated after the copy.

    ``CopyBroadcastReceiver(receiver, scratch_length=4096)``. ``receive(handler)`` calls
    ``handler(msg_type_id, scratch_buffer, 0, length)``.
    """

    def __cinit__(self, BroadcastReceiver receiver not None, Py_ssize_t scratch_length=BCAST_SCRATCH_BUFFER_LENGTH_DEFAULT):
        if scratch_length < 1 or scratch_length > (1 << 30):
            raise InvalidArgumentError(f"scratch_length must be in 1..{1 << 30}, got {scratch_length}")
        receiver._check()
        self.receiver = receiver
        self._scratch = bytearray(scratch_length)
        self.scratch_buffer = AtomicBuffer(self._scratch)
        # The AtomicBuffer holds an export of the bytearray, so it cannot be resized under this pointer
        # for as long as the scratch buffer is open; we copy only while it is.
        self._scratch_data = <uint8_t *>(<char *>self._scratch)
        self._scratch_length = <int32_t>scratch_length

    @property
    def scratch_length(self):
        return self._scratch_length

    def receive(self, handler):
        """Deliver the next message, if any, to ``handler(msg_type_id, buffer, offset, length)``.

        Returns 1 when a message was delivered, 0 when there was none. Raises IllegalStateError
        "unable to keep up with broadcast" when lapped before or during the copy (messages were
        lost), IllegalStateError when the message is longer than the scratch buffer (it is skipped),
        CorruptFileError on a malformed record.
        """
        cdef BroadcastReceiver receiver = self.receiver
        receiver._check()
        if self.scratch_buffer.closed:
            raise IllegalStateError("scratch buffer is closed")
        cdef int64_t last_seen_lapped_count = receiver.r.lapped_count
        if receiver._receive_next() == 0:
            return 0
        if last_seen_lapped_count != receiver.r.lapped_count:
            raise IllegalStateError("unable to keep up with broadcast")
        cdef int32_t record_offset = receiver.r.record_offset
        cdef int32_t length = record_length_ptr(receiver.b.buffer, record_offset)[0] - BCAST_RECORD_HEADER_LENGTH
        cdef int32_t msg_type_id = record_type_ptr(receiver.b.buffer, record_offset)[0]
        if length > self._scratch_length or length < 0:
            # A length that cannot be right is what a lap looks like mid-read: the transmitter
            # overwrote the header after receive_next read it. Report the lap, not the size.
            fence_acquire()
            if not broadcast_receiver_validate_at(&receiver.b, receiver.r.cursor):
                raise IllegalStateError("unable to keep up with broadcast")
            raise IllegalStateError(
                f"scratch buffer too small, required: {length}, found: {self._scratch_length}")
        if length > 0:
            memcpy(self._scratch_data, receiver.b.buffer + record_offset + BCAST_RECORD_HEADER_LENGTH,
                   <size_t>length)
        # The copy may be torn if the transmitter lapped us meanwhile: check after copying.
        fence_acquire()
        if not broadcast_receiver_validate_at(&receiver.b, receiver.r.cursor):
            raise IllegalStateError("unable to keep up with broadcast")
        handler(msg_type_id, self.scratch_buffer, 0, length)
        return 1
