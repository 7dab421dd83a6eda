# SPDX-License-Identifier: Apache-2.0
# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""To-driver many-to-one ring buffer.

Port of Agrona's ManyToOneRingBuffer and aeron_mpsc_rb.c, laid out as Agrona's
RingBufferDescriptor. Producers are any number of threads or processes; there is one consumer.

GIL policy: write/try_claim keep the GIL (commands are small; a release costs more than the copy).
read() runs with the GIL because it calls a Python handler per record; the per-record work (acquire
load, alignment, bounds) is C.

Malformed records: Agrona and the C ring trust every committed length, so one bad length (shorter than a
header, past the end of the ring, or past what producers have claimed) would hand the handler memory
outside the record and, in our checked version, stop the consumer at that record for good. Here the
consumer skips it: the bytes from it to the first later record from which well-formed records run exactly
to the producers' tail become padding (a bad header beyond the tail, where nothing was claimed, is just
cleared), the records after it are read on the next call, and read() raises CorruptFileError once,
after committing, to report what it skipped.
"""
cimport cython
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from libc.stdint cimport INT32_MAX, int32_t, int64_t, uint8_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset

from aeron._core.atomic cimport (cas_i32, cas_i64, fence_release, get_and_add_i64, load_acquire_i32, load_acquire_i64,
                                 store_release_i32, store_release_i64)
from aeron._core.atomic_buffer cimport AtomicBuffer, check_span
from aeron._core.record_descriptor cimport (RECORD_MAX_CAPACITY, capacity_of, pin_records, record_align,
                                            record_length_ptr, record_type_ptr, records_init, unpin)
from aeron.common.errors import CorruptFileError, IllegalStateError, InvalidArgumentError

# -- layout constants (Python view of ring_buffer.pxd) ------------------------------------------------
ALIGNMENT = RB_ALIGNMENT
HEADER_LENGTH = RB_RECORD_HEADER_LENGTH
LENGTH_OFFSET = RB_LENGTH_OFFSET
TYPE_OFFSET = RB_TYPE_OFFSET
PADDING_MSG_TYPE_ID = RB_PADDING_MSG_TYPE_ID
TAIL_POSITION_OFFSET = RB_TAIL_POSITION_OFFSET
HEAD_CACHE_POSITION_OFFSET = RB_HEAD_CACHE_POSITION_OFFSET
HEAD_POSITION_OFFSET = RB_HEAD_POSITION_OFFSET
CORRELATION_COUNTER_OFFSET = RB_CORRELATION_COUNTER_OFFSET
CONSUMER_HEARTBEAT_OFFSET = RB_CONSUMER_HEARTBEAT_OFFSET
TRAILER_LENGTH = RB_TRAILER_LENGTH
MIN_CAPACITY = RB_MIN_CAPACITY
MAX_CAPACITY = RECORD_MAX_CAPACITY
INSUFFICIENT_CAPACITY = RB_INSUFFICIENT_CAPACITY
ABORT = RB_ACTION_ABORT
BREAK = RB_ACTION_BREAK
COMMIT = RB_ACTION_COMMIT
CONTINUE = RB_ACTION_CONTINUE


def compute_capacity(Py_ssize_t length):
    """Capacity of a ring buffer section of ``length`` bytes, or -1 when it is not valid
    (power of two, ``MIN_CAPACITY``..``MAX_CAPACITY``)."""
    return capacity_of(length, RB_TRAILER_LENGTH)


# ------------------------------------------------------------------------------------------------
# Kernels
# ------------------------------------------------------------------------------------------------
cdef int mpsc_rb_init(mpsc_rb_t *rb, uint8_t *buffer, Py_ssize_t length) noexcept nogil:
    cdef uint8_t *trailer = records_init(buffer, length, RB_TRAILER_LENGTH, &rb.capacity, &rb.max_msg_length)
    if trailer == NULL:
        return -1
    rb.buffer = buffer
    rb.tail_position = <int64_t *>(trailer + RB_TAIL_POSITION_OFFSET)
    rb.head_cache_position = <int64_t *>(trailer + RB_HEAD_CACHE_POSITION_OFFSET)
    rb.head_position = <int64_t *>(trailer + RB_HEAD_POSITION_OFFSET)
    rb.correlation_counter = <int64_t *>(trailer + RB_CORRELATION_COUNTER_OFFSET)
    rb.consumer_heartbeat = <int64_t *>(trailer + RB_CONSUMER_HEARTBEAT_OFFSET)
    return 0


cdef int32_t mpsc_rb_claim_capacity(mpsc_rb_t *rb, int32_t record_length) noexcept nogil:
    # Port of claimCapacity. The head cache spares producers a read of the consumer's cache line
    # while there is room; it is refreshed whenever the cached head says the ring is full.
    cdef int32_t required = record_align(record_length)
    cdef int32_t capacity = rb.capacity
    cdef int64_t mask = capacity - 1
    cdef int64_t head = load_acquire_i64(rb.head_cache_position)
    cdef int64_t tail
    cdef int32_t tail_index = 0, head_index, to_end, padding = 0
    while True:
        tail = load_acquire_i64(rb.tail_position)
        if required > capacity - (tail - head):
            head = load_acquire_i64(rb.head_position)
            if required > capacity - (tail - head):
                return RB_INSUFFICIENT_CAPACITY
            store_release_i64(rb.head_cache_position, head)
        padding = 0
        tail_index = <int32_t>(tail & mask)
        to_end = capacity - tail_index
        if required > to_end:
            # The record goes to index 0 and the rest of this lap becomes padding, so the consumer
            # must already be past `required` bytes of the next lap.
            head_index = <int32_t>(head & mask)
            if required > head_index:
                head = load_acquire_i64(rb.head_position)
                head_index = <int32_t>(head & mask)
                if required > head_index:
                    return RB_INSUFFICIENT_CAPACITY
                store_release_i64(rb.head_cache_position, head)
            padding = to_end
        if cas_i64(rb.tail_position, tail, tail + required + padding):
            break
    if padding != 0:
        # Negative first so a concurrent unblock() never mistakes the half-written header for a gap.
        store_release_i32(record_length_ptr(rb.buffer, tail_index), -padding)
        fence_release()
        record_type_ptr(rb.buffer, tail_index)[0] = RB_PADDING_MSG_TYPE_ID
        store_release_i32(record_length_ptr(rb.buffer, tail_index), padding)
        tail_index = 0
    return tail_index


cdef int mpsc_rb_write(mpsc_rb_t *rb, int32_t msg_type_id, const uint8_t *src, int32_t length) noexcept nogil:
    cdef int32_t record_length = length + RB_RECORD_HEADER_LENGTH
    cdef int32_t index = mpsc_rb_claim_capacity(rb, record_length)
    if index == RB_INSUFFICIENT_CAPACITY:
        return 0
    store_release_i32(record_length_ptr(rb.buffer, index), -record_length)
    fence_release()
    record_type_ptr(rb.buffer, index)[0] = msg_type_id
    if length > 0:
        memcpy(rb.buffer + index + RB_RECORD_HEADER_LENGTH, src, <size_t>length)
    # The release store of the positive length is what publishes the record to the consumer.
    store_release_i32(record_length_ptr(rb.buffer, index), record_length)
    return 1


cdef int32_t mpsc_rb_try_claim(mpsc_rb_t *rb, int32_t msg_type_id, int32_t length) noexcept nogil:
    cdef int32_t record_length = length + RB_RECORD_HEADER_LENGTH
    cdef int32_t index = mpsc_rb_claim_capacity(rb, record_length)
    if index == RB_INSUFFICIENT_CAPACITY:
        return RB_INSUFFICIENT_CAPACITY
    store_release_i32(record_length_ptr(rb.buffer, index), -record_length)
    fence_release()
    record_type_ptr(rb.buffer, index)[0] = msg_type_id
    return index + RB_RECORD_HEADER_LENGTH


cdef inline int _claimed_state(mpsc_rb_t *rb, int32_t record_index, int32_t *length) noexcept nogil:
    length[0] = load_acquire_i32(record_length_ptr(rb.buffer, record_index))
    if length[0] < 0:
        return 0
    return -3 if record_type_ptr(rb.buffer, record_index)[0] == RB_PADDING_MSG_TYPE_ID else -2


cdef int mpsc_rb_commit(mpsc_rb_t *rb, int32_t index) noexcept nogil:
    cdef int32_t record_index = index - RB_RECORD_HEADER_LENGTH
    cdef int32_t length
    if record_index < 0 or record_index > rb.capacity - RB_RECORD_HEADER_LENGTH:
        return -1
    cdef int state = _claimed_state(rb, record_index, &length)
    if state == 0:
        store_release_i32(record_length_ptr(rb.buffer, record_index), -length)
    return state


cdef int mpsc_rb_abort(mpsc_rb_t *rb, int32_t index) noexcept nogil:
    cdef int32_t record_index = index - RB_RECORD_HEADER_LENGTH
    cdef int32_t length
    if record_index < 0 or record_index > rb.capacity - RB_RECORD_HEADER_LENGTH:
        return -1
    cdef int state = _claimed_state(rb, record_index, &length)
    if state == 0:
        record_type_ptr(rb.buffer, record_index)[0] = RB_PADDING_MSG_TYPE_ID
        store_release_i32(record_length_ptr(rb.buffer, record_index), -length)
    return state


cdef int64_t mpsc_rb_next_correlation_id(mpsc_rb_t *rb) noexcept nogil:
    return get_and_add_i64(rb.correlation_counter, 1)


cdef int32_t mpsc_rb_size(mpsc_rb_t *rb) noexcept nogil:
    # Re-read the head until it is stable around the tail read, so the difference is consistent.
    cdef int64_t head_before, tail, size
    cdef int64_t head_after = load_acquire_i64(rb.head_position)
    while True:
        head_before = head_after
        tail = load_acquire_i64(rb.tail_position)
        head_after = load_acquire_i64(rb.head_position)
        if head_after == head_before:
            break
    size = tail - head_after
    if size < 0:
        return 0
    if size > rb.capacity:
        return rb.capacity
    return <int32_t>size


cdef bint _scan_back_to_confirm_still_zeroed(uint8_t *buffer, int32_t from_index, int32_t limit) noexcept nogil:
    cdef int32_t i = from_index - RB_ALIGNMENT
    while i >= limit:
        if load_acquire_i32(record_length_ptr(buffer, i)) != 0:
            return False
        i -= RB_ALIGNMENT
    return True


cdef bint mpsc_rb_unblock(mpsc_rb_t *rb) noexcept nogil:
    # Port of unblock. Deviation: the forward scan checks `i < limit` before its first read, so a
    # head in the last 8-byte slot never reads the trailer.
    cdef int64_t head = load_acquire_i64(rb.head_position)
    cdef int64_t tail = load_acquire_i64(rb.tail_position)
    if head == tail:
        return False
    cdef int64_t mask = rb.capacity - 1
    cdef int32_t consumer_index = <int32_t>(head & mask)
    cdef int32_t producer_index = <int32_t>(tail & mask)
    cdef int32_t length = load_acquire_i32(record_length_ptr(rb.buffer, consumer_index))
    cdef int32_t limit, i
    if length < 0:
        # Claimed and never committed: the producer died or hung between claim and commit.
        record_type_ptr(rb.buffer, consumer_index)[0] = RB_PADDING_MSG_TYPE_ID
        store_release_i32(record_length_ptr(rb.buffer, consumer_index), -length)
        return True
    if length == 0:
        # The tail moved past here but no header was written: pad up to the next record written.
        limit = producer_index if producer_index > consumer_index else rb.capacity
        i = consumer_index + RB_ALIGNMENT
        while i < limit:
            if load_acquire_i32(record_length_ptr(rb.buffer, i)) != 0:
                if _scan_back_to_confirm_still_zeroed(rb.buffer, i, consumer_index):
                    record_type_ptr(rb.buffer, consumer_index)[0] = RB_PADDING_MSG_TYPE_ID
                    store_release_i32(record_length_ptr(rb.buffer, consumer_index), i - consumer_index)
                    return True
                return False
            i += RB_ALIGNMENT
    return False


cdef int32_t mpsc_rb_record_length_at(mpsc_rb_t *rb, int32_t index, int32_t limit) noexcept nogil:
    cdef int32_t length = load_acquire_i32(record_length_ptr(rb.buffer, index))
    if length <= 0:
        return 0
    if length < RB_RECORD_HEADER_LENGTH or length > limit - index:
        return -1
    return length


cdef bint mpsc_rb_record_fits(mpsc_rb_t *rb, int64_t record_position, int32_t record_length,
                              int64_t *tail_seen) noexcept nogil:
    # A committed record lies wholly before the tail: its producer moved the tail past it before writing the
    # header. `tail_seen` caches the last tail read; it is read again only when a record seems to overrun it.
    cdef int64_t end = record_position + record_align(record_length)
    if end <= tail_seen[0]:
        return True
    tail_seen[0] = load_acquire_i64(rb.tail_position)
    return end <= tail_seen[0]


cdef int32_t mpsc_rb_malformed_extent(mpsc_rb_t *rb, int32_t record_index, int32_t end_index) noexcept nogil:
    # Which later slot does the next real record start at? The first aligned index j in
    # (record_index, end_index] from which well-formed headers (8 <= |length|, fitting, a type set on a
    # committed record; negative lengths are claims still being written) chain exactly to end_index. One
    # backward pass marks every slot whose chain gets there, so the search is linear in the region; j =
    # end_index (an empty chain) always qualifies. Garbage in the bad record's payload would have to chain
    # exactly to the tail to be taken for records.
    cdef int32_t slots = (end_index - record_index) >> 3
    cdef int32_t s, k, length, aligned
    cdef uint8_t *reaches
    if slots <= 1:
        return end_index - record_index
    reaches = <uint8_t *>malloc(<size_t>slots + 1)
    if reaches == NULL:
        return end_index - record_index             # no memory for the search: skip all that was written
    reaches[slots] = 1
    s = slots - 1
    while s >= 1:
        k = record_index + (s << 3)
        length = load_acquire_i32(record_length_ptr(rb.buffer, k))
        reaches[s] = 0
        if length < 0 and length != -INT32_MAX - 1:
            length = -length
        elif length > 0 and record_type_ptr(rb.buffer, k)[0] == 0:
            length = 0
        if length >= RB_RECORD_HEADER_LENGTH and length <= end_index - k:
            aligned = record_align(length)
            if k + aligned <= end_index:
                reaches[s] = reaches[s + (aligned >> 3)]
        s -= 1
    s = 1
    while reaches[s] == 0:
        s += 1
    free(reaches)
    return s << 3


cdef void mpsc_rb_consume(mpsc_rb_t *rb, int64_t head, int32_t bytes) noexcept nogil:
    # Zeroing is part of the protocol: producers and unblock() treat zero as "nothing written".
    cdef int32_t head_index = <int32_t>(head & (rb.capacity - 1))
    memset(rb.buffer + head_index, 0, <size_t>bytes)
    store_release_i64(rb.head_position, head + bytes)


# ------------------------------------------------------------------------------------------------
# Python face
# ------------------------------------------------------------------------------------------------
@cython.final
cdef class ManyToOneRingBuffer:
    """Many producers, one consumer, over ``buffer`` (records then a 768-byte trailer).

    ``ManyToOneRingBuffer(buffer, path=None)``: ``buffer.capacity - 768`` must be a power of two
    (>= 8), else ConfigurationError, or CorruptFileError when ``path`` (or ``buffer.path``) names
    the file the memory comes from. The buffer is pinned (it cannot be closed) until ``close()``.
    """

    INSUFFICIENT_CAPACITY = RB_INSUFFICIENT_CAPACITY

    def __cinit__(self, AtomicBuffer buffer not None, path=None, Py_ssize_t file_offset=0):
        self._has_pin = False
        self._reading = False
        pin_records(buffer, path, file_offset, "ring buffer", RB_TRAILER_LENGTH, &self._pin)
        self._has_pin = True
        mpsc_rb_init(&self.rb, buffer.data, buffer.length)
        self.buffer = buffer

    def __dealloc__(self):
        unpin(&self._pin, &self._has_pin)

    cdef int _check(self) except -1:
        if not self._has_pin:
            raise IllegalStateError("ring buffer is closed")
        return 0

    cdef int _check_msg(self, int32_t msg_type_id, Py_ssize_t length) except -1:
        if msg_type_id < 1:
            raise InvalidArgumentError(f"message type id must be >= 1, got {msg_type_id}")
        if length < 0:
            raise InvalidArgumentError(f"invalid message length={length}")
        if length > self.rb.max_msg_length:
            raise InvalidArgumentError(
                f"encoded message exceeds max_msg_length of {self.rb.max_msg_length}, length={length}")
        return 0

    cdef int32_t _check_index(self, Py_ssize_t index) except -1:
        if (index < RB_RECORD_HEADER_LENGTH or index > self.rb.capacity
                or index % RB_ALIGNMENT != 0):
            raise InvalidArgumentError(f"invalid message index {index}")
        return <int32_t>index

    def close(self):
        """Release the pinned buffer (it is not closed). Refused from inside a read handler."""
        if self._reading:
            raise IllegalStateError("cannot close a ring buffer from inside its read handler")
        unpin(&self._pin, &self._has_pin)

    @property
    def is_closed(self):
        return not self._has_pin

    @property
    def capacity(self):
        return self.rb.capacity

    @property
    def max_msg_length(self):
        return self.rb.max_msg_length

    def write(self, int32_t msg_type_id, src, Py_ssize_t offset=0, Py_ssize_t length=-1):
        """Write ``src[offset:offset + length]`` (any buffer; ``length=-1`` to its end) as one record.

        Returns True when written, False when the ring is full (never blocks). Raises
        InvalidArgumentError (type id < 1, too long) or OutOfBoundsError (range outside ``src``).
        """
        self._check()
        cdef Py_buffer view
        cdef int rc
        PyObject_GetBuffer(src, &view, PyBUF_SIMPLE)
        try:
            length = check_span(offset, length, view.len)
            self._check_msg(msg_type_id, length)
            rc = mpsc_rb_write(&self.rb, msg_type_id, <const uint8_t *>view.buf + offset, <int32_t>length)
        finally:
            PyBuffer_Release(&view)
        return rc == 1

    def try_claim(self, int32_t msg_type_id, Py_ssize_t length):
        """Claim room for a ``length``-byte message; fill ``buffer`` at the returned index, then
        ``commit(index)`` or ``abort(index)``.

        Returns the payload index in ``buffer`` or INSUFFICIENT_CAPACITY (-2) when full.
        """
        self._check()
        self._check_msg(msg_type_id, length)
        return mpsc_rb_try_claim(&self.rb, msg_type_id, <int32_t>length)

    def commit(self, Py_ssize_t index):
        """Publish a claimed record. IllegalStateError if it was already committed or aborted."""
        self._check()
        cdef int rc = mpsc_rb_commit(&self.rb, self._check_index(index))
        if rc != 0:
            self._claim_error(rc, index)

    def abort(self, Py_ssize_t index):
        """Turn a claimed record into padding the consumer skips."""
        self._check()
        cdef int rc = mpsc_rb_abort(&self.rb, self._check_index(index))
        if rc != 0:
            self._claim_error(rc, index)

    cdef int _claim_error(self, int rc, Py_ssize_t index) except -1:
        if rc == -1:
            raise InvalidArgumentError(f"invalid message index {index}")
        raise IllegalStateError(f"claimed space previously {'aborted' if rc == -3 else 'committed'}")

    def read(self, handler, int32_t message_count_limit=INT32_MAX):
        """Deliver up to ``message_count_limit`` records as
        ``handler(msg_type_id, buffer, offset, length)`` (``buffer`` is this ring's AtomicBuffer;
        the range is valid only during the call), then zero them and move the head.

        Reads one contiguous block: records after a wrap come on the next call. A handler that raises
        stops the read; every record up to and including that one is consumed (Agrona semantics) and
        the exception propagates. Returns the number of messages delivered. A malformed record length
        raises CorruptFileError after committing the records before it.
        """
        self._check()
        cdef mpsc_rb_t *rb = &self.rb
        cdef int64_t head = rb.head_position[0]          # plain: the consumer is the only writer
        cdef int32_t capacity = rb.capacity
        cdef int32_t head_index = <int32_t>(head & (capacity - 1))
        cdef int32_t max_block = capacity - head_index
        cdef int32_t bytes_read = 0, messages_read = 0, record_index, record_length, msg_type_id, skipped
        cdef int64_t tail_seen = 0
        cdef object buffer = self.buffer
        self._reading = True
        try:
            while bytes_read < max_block and messages_read < message_count_limit:
                record_index = head_index + bytes_read
                record_length = mpsc_rb_record_length_at(rb, record_index, capacity)
                if record_length == 0:
                    break
                if record_length < 0 or not mpsc_rb_record_fits(rb, head + bytes_read, record_length, &tail_seen):
                    skipped = self._skip_malformed(record_index, head + bytes_read)
                    bytes_read += skipped
                    self._corrupt(record_index, skipped)
                bytes_read += record_align(record_length)
                msg_type_id = record_type_ptr(rb.buffer, record_index)[0]
                if msg_type_id == RB_PADDING_MSG_TYPE_ID:
                    continue
                messages_read += 1
                handler(msg_type_id, buffer, record_index + RB_RECORD_HEADER_LENGTH,
                        record_length - RB_RECORD_HEADER_LENGTH)
        finally:
            self._reading = False
            if bytes_read != 0:
                mpsc_rb_consume(rb, head, bytes_read)
        return messages_read

    def controlled_read(self, handler, int32_t message_count_limit=INT32_MAX):
        """As ``read`` but ``handler`` returns ABORT (leave this record, stop), BREAK (stop after
        it), COMMIT (move the head through it now) or CONTINUE. Returns messages consumed."""
        self._check()
        cdef mpsc_rb_t *rb = &self.rb
        cdef int64_t head = rb.head_position[0]
        cdef int32_t capacity = rb.capacity
        cdef int32_t head_index = <int32_t>(head & (capacity - 1))
        cdef int32_t max_block = capacity - head_index
        cdef int32_t bytes_read = 0, messages_read = 0, record_index, record_length, aligned, msg_type_id, skipped
        cdef int64_t tail_seen = 0
        cdef int action
        cdef object buffer = self.buffer
        self._reading = True
        try:
            while bytes_read < max_block and messages_read < message_count_limit:
                record_index = head_index + bytes_read
                record_length = mpsc_rb_record_length_at(rb, record_index, capacity)
                if record_length == 0:
                    break
                if record_length < 0 or not mpsc_rb_record_fits(rb, head + bytes_read, record_length, &tail_seen):
                    skipped = self._skip_malformed(record_index, head + bytes_read)
                    bytes_read += skipped
                    self._corrupt(record_index, skipped)
                aligned = record_align(record_length)
                bytes_read += aligned
                msg_type_id = record_type_ptr(rb.buffer, record_index)[0]
                if msg_type_id == RB_PADDING_MSG_TYPE_ID:
                    continue
                # A raising handler leaves the record consumed, as in read().
                action = handler(msg_type_id, buffer, record_index + RB_RECORD_HEADER_LENGTH,
                                 record_length - RB_RECORD_HEADER_LENGTH)
                if action == RB_ACTION_ABORT:
                    bytes_read -= aligned
                    break
                messages_read += 1
                if action == RB_ACTION_BREAK:
                    break
                if action == RB_ACTION_COMMIT:
                    mpsc_rb_consume(rb, head, bytes_read)
                    head += bytes_read
                    head_index += bytes_read
                    max_block -= bytes_read
                    bytes_read = 0
                elif action != RB_ACTION_CONTINUE:
                    raise InvalidArgumentError(f"controlled read handler returned {action}, not an action 1..4")
        finally:
            self._reading = False
            if bytes_read != 0:
                mpsc_rb_consume(rb, head, bytes_read)
        return messages_read

    cdef int32_t _skip_malformed(self, int32_t record_index, int64_t record_position) noexcept:
        # Bytes to consume over the malformed record at record_index; 0 when it lies beyond the tail, where
        # nothing was claimed: then its header is cleared (CAS, so a producer that claims the slot meanwhile
        # keeps its own header) and the head stays.
        cdef mpsc_rb_t *rb = &self.rb
        cdef int64_t tail = load_acquire_i64(rb.tail_position)
        cdef int32_t length = load_acquire_i32(record_length_ptr(rb.buffer, record_index))
        cdef int64_t written = tail - record_position
        self._malformed_length = length
        self._malformed_written = written
        if written <= 0:
            cas_i32(record_length_ptr(rb.buffer, record_index), length, 0)
            return 0
        if written > rb.capacity - record_index:
            written = rb.capacity - record_index        # the rest of this lap; the next starts at index 0
        return mpsc_rb_malformed_extent(rb, record_index, record_index + <int32_t>written)

    cdef int _corrupt(self, int32_t record_index, int32_t skipped) except -1:
        cdef str what
        if skipped == 0:
            what = "beyond the producers' tail: cleared"
        else:
            what = f"skipped {skipped} bytes to the next well-formed record"
        raise CorruptFileError(f"ring buffer record at index {record_index} has a malformed length "
                               f"{self._malformed_length} (capacity {self.rb.capacity}, "
                               f"{self._malformed_written} bytes claimed from it): {what}",
                               path=self.buffer.path, offset=record_index)

    def next_correlation_id(self):
        """Atomic fetch-add on the trailer's correlation counter; returns the previous value."""
        self._check()
        return mpsc_rb_next_correlation_id(&self.rb)

    @property
    def consumer_heartbeat_time(self):
        """Consumer (driver) heartbeat in epoch ms, acquire load; 0 never started, -1 shut down."""
        self._check()
        return load_acquire_i64(self.rb.consumer_heartbeat)

    @consumer_heartbeat_time.setter
    def consumer_heartbeat_time(self, int64_t time_ms):
        self._check()
        store_release_i64(self.rb.consumer_heartbeat, time_ms)

    def producer_position(self):
        self._check()
        return load_acquire_i64(self.rb.tail_position)

    def consumer_position(self):
        self._check()
        return load_acquire_i64(self.rb.head_position)

    def size(self):
        """Bytes between head and tail (including padding and claimed records)."""
        self._check()
        return mpsc_rb_size(&self.rb)

    def unblock(self):
        """Consumer side: pad over an abandoned claim or unwritten gap at the head. True if it did."""
        self._check()
        return mpsc_rb_unblock(&self.rb)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        if not self._has_pin:
            return "<ManyToOneRingBuffer closed>"
        return (f"<ManyToOneRingBuffer capacity={self.rb.capacity} head={load_acquire_i64(self.rb.head_position)} "
                f"tail={load_acquire_i64(self.rb.tail_position)}>")
