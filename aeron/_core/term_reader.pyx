# SPDX-License-Identifier: Apache-2.0
# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Subscriber side of a log buffer: the Header flyweight and TermReader's poll loops.

Port of TermReader.read, Image.poll/controlledPoll/boundedPoll/blockPoll.
Frames are walked by the nogil kernels in term_reader.pxd; the only Python per fragment is the
handler call ``handler(buffer, offset, length, header)`` over a long-lived term view and one
reusable Header.

Corrupt terms: a committed frame whose length is below 32 or runs past the end of its term is never
read, nor is a term at a negative or unaligned subscriber position. The poll delivers and commits everything before it, then raises CorruptFileError naming the
file offset; the position stays on the corrupt frame, so every later poll raises again.
"""
cimport cython
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, INT64_MAX
from libc.string cimport memcpy

from aeron._core.atomic cimport load_acquire_i64, store_release_i64
from aeron._core.atomic_buffer cimport AtomicBuffer, check_bounds
from aeron._core.logbuffer cimport LogBuffers
from aeron._core cimport frame_descriptor as fd
from aeron._core cimport logbuffer_descriptor as ld
from aeron.common.errors import CorruptFileError, IllegalStateError, InvalidArgumentError

ABORT = CONTROLLED_ACTION_ABORT
BREAK = CONTROLLED_ACTION_BREAK
COMMIT = CONTROLLED_ACTION_COMMIT
CONTINUE = CONTROLLED_ACTION_CONTINUE


class ControlledPollAction:
    """Actions a controlled-poll handler returns (plain ints, as aeronc.h)."""

    ABORT = CONTROLLED_ACTION_ABORT
    BREAK = CONTROLLED_ACTION_BREAK
    COMMIT = CONTROLLED_ACTION_COMMIT
    CONTINUE = CONTROLLED_ACTION_CONTINUE


# ------------------------------------------------------------------------------------------------
# Header
# ------------------------------------------------------------------------------------------------

@cython.final
@cython.freelist(8)
cdef class Header:
    """The header of the frame being delivered (Aeron ``Header``): a flyweight re-pointed per frame.

    Valid only during the handler call; ``copy()`` gives a detached snapshot to keep.
    ``Header(initial_term_id, position_bits_to_shift)`` makes one over its own zeroed 32 bytes;
    ``wrap(buffer, offset)`` points it at a frame in any AtomicBuffer.
    """

    def __cinit__(self, int32_t initial_term_id=0, int32_t position_bits_to_shift=16):
        if position_bits_to_shift < 0 or position_bits_to_shift > 30:
            raise InvalidArgumentError(f"position_bits_to_shift {position_bits_to_shift} not in 0..30")
        self._initial_term_id = initial_term_id
        self._position_bits_to_shift = position_bits_to_shift
        self._fragmented_frame_length = -1
        self._offset = 0
        self._buffer = AtomicBuffer(bytearray(fd.HEADER_LENGTH))
        self.context = None

    cdef const uint8_t *frame(self) except NULL:
        # The term view is closed when its reader closes; never touch the pointer after that.
        if self._buffer.closed:
            raise IllegalStateError("Header used after its buffer was closed")
        return self._buffer.data + self._offset

    def wrap(self, AtomicBuffer buffer not None, Py_ssize_t offset=0):
        """Point this header at the frame starting at ``offset`` in ``buffer``."""
        buffer.check(offset, fd.HEADER_LENGTH)
        self._buffer = buffer
        self._offset = <int32_t>offset
        self._fragmented_frame_length = -1
        return self

    def copy(self):
        """A detached snapshot (own 32 bytes) with the same stream parameters."""
        cdef const uint8_t *src = self.frame()
        cdef Header h = Header.__new__(Header, self._initial_term_id, self._position_bits_to_shift)
        memcpy(h._buffer.data, src, fd.HEADER_LENGTH)
        h._fragmented_frame_length = self._fragmented_frame_length
        h.context = self.context
        return h

    @property
    def buffer(self):
        """The buffer the frame is in (the term, or an assembler's buffer)."""
        return self._buffer

    @property
    def offset(self):
        """Offset of the frame (its header) in ``buffer``."""
        return self._offset

    @property
    def initial_term_id(self):
        """The stream's term id at position 0."""
        return self._initial_term_id

    @property
    def position_bits_to_shift(self):
        """log2 of the term length."""
        return self._position_bits_to_shift

    @property
    def frame_length(self):
        """Length of the frame, header included (unaligned)."""
        return fd.frame_i32(self.frame(), fd.FRAME_LENGTH_FIELD_OFFSET)

    @property
    def version(self):
        """The frame's protocol version."""
        return self.frame()[fd.VERSION_FIELD_OFFSET]

    @property
    def flags(self):
        """The frame's flags: BEGIN (0x80) and END (0x40) of a message, EOS (0x20)."""
        return self.frame()[fd.FLAGS_FIELD_OFFSET]

    @property
    def type(self):
        """The frame type (1: DATA, 0: PAD)."""
        return (<const uint16_t *>(self.frame() + fd.TYPE_FIELD_OFFSET))[0]

    @property
    def term_offset(self):
        """Offset of the frame in its term."""
        return fd.frame_i32(self.frame(), fd.TERM_OFFSET_FIELD_OFFSET)

    @property
    def session_id(self):
        """The publisher's session id."""
        return fd.frame_i32(self.frame(), fd.SESSION_ID_FIELD_OFFSET)

    @property
    def stream_id(self):
        """The stream id."""
        return fd.frame_i32(self.frame(), fd.STREAM_ID_FIELD_OFFSET)

    @property
    def term_id(self):
        """The term id the frame is in."""
        return fd.frame_i32(self.frame(), fd.TERM_ID_FIELD_OFFSET)

    @property
    def reserved_value(self):
        """The frame's 64-bit reserved value (set by the publisher's reserved value supplier, if any)."""
        cdef int64_t v
        memcpy(&v, self.frame() + fd.RESERVED_VALUE_FIELD_OFFSET, 8)
        return v

    @property
    def fragmented_frame_length(self):
        """Span of an assembled message in the term, -1 for a single frame (Java NULL_VALUE)."""
        return self._fragmented_frame_length

    cdef int32_t next_term_offset_c(self) except? -1:
        cdef const uint8_t *f = self.frame()
        cdef int64_t occupancy = (self._fragmented_frame_length if self._fragmented_frame_length != -1
                                  else fd.frame_i32(f, fd.FRAME_LENGTH_FIELD_OFFSET))
        return <int32_t>fd.align_i64(fd.frame_i32(f, fd.TERM_OFFSET_FIELD_OFFSET) + occupancy, fd.FRAME_ALIGNMENT)

    @property
    def next_term_offset(self):
        """Term offset just after this frame (or assembled message), 32-aligned."""
        return self.next_term_offset_c()

    @property
    def position(self):
        """Stream position just after this frame: compute_position(term_id, next_term_offset)."""
        cdef int32_t next_offset = self.next_term_offset_c()
        return ld.compute_position(fd.frame_i32(self.frame(), fd.TERM_ID_FIELD_OFFSET), next_offset,
                                   self._position_bits_to_shift, self._initial_term_id)

    def __repr__(self):
        if self._buffer.closed:
            return "<Header (closed)>"
        return (f"<Header term_id={self.term_id} term_offset={self.term_offset} frame_length={self.frame_length} "
                f"flags=0x{self.flags:02x} type={self.type} session_id={self.session_id} stream_id={self.stream_id}>")



# ------------------------------------------------------------------------------------------------
# TermReader
# ------------------------------------------------------------------------------------------------

cdef class TermReader:
    """Polls a log buffer from the subscriber position (Aeron ``Image`` read side).

    ``TermReader(log, position=None, position_offset=0, initial_position=0)``: the subscriber
    position lives in ``position`` (an AtomicBuffer holding the sub-pos counter, 8-byte aligned at
    ``position_offset``, release-stored) or internally when None. ``initial_position`` is stored
    there at construction (32-aligned, 0 <= p <= max possible position).

    A handler that raises stops the poll; the position is committed through the fragment that
    raised (Java TermReader semantics) and the exception propagates.
    """

    def __cinit__(self, LogBuffers log not None, AtomicBuffer position=None, Py_ssize_t position_offset=0,
                  int64_t initial_position=0):
        self.closed = True
        log.check_open()
        if initial_position < 0 or initial_position > log.max_possible_position or initial_position % fd.FRAME_ALIGNMENT:
            raise InvalidArgumentError(
                f"initial position {initial_position} must be 32-aligned and in [0, {log.max_possible_position}]")
        self.log = log
        cdef int i
        self.term_buffers = (log.term_buffer(0), log.term_buffer(1), log.term_buffer(2))
        for i in range(ld.PARTITION_COUNT):
            self.terms[i] = (<AtomicBuffer>self.term_buffers[i]).data
        self.meta = log.meta
        self._term_length = log.term_length
        self.term_length_mask = log.term_length - 1
        self._position_bits_to_shift = log.position_bits_to_shift
        self._initial_term_id = log.initial_term_id
        self.session_id = ld.meta_i32(log.meta, ld.LOG_DEFAULT_FRAME_HEADER_OFFSET + fd.SESSION_ID_FIELD_OFFSET)
        if position is None:
            self.position_view = None
            self.position_ptr = &self._own_position
        else:
            position.check(position_offset, 8)
            if (<size_t>(position.data + position_offset)) % 8 != 0:
                raise InvalidArgumentError(f"position counter at offset {position_offset} is not 8-byte aligned")
            # Our own view holds an export on the counter memory, so it cannot be unmapped under us.
            self.position_view = AtomicBuffer(position, position_offset, 8)
            self.position_ptr = <int64_t *>self.position_view.data
        store_release_i64(self.position_ptr, initial_position)
        self.header = Header.__new__(Header, self._initial_term_id, self._position_bits_to_shift)
        self.closed = False
        self.retired = False

    cdef int check_open(self) except -1:
        if self.closed:
            raise IllegalStateError("TermReader is closed")
        return 0

    def close(self):
        """Release the term views and the position window. Idempotent."""
        if self.closed:
            return
        self.closed = True
        cdef int i
        for i in range(ld.PARTITION_COUNT):
            self.terms[i] = NULL
        self.position_ptr = NULL
        for b in self.term_buffers:
            (<AtomicBuffer>b).close()
        if self.position_view is not None:
            self.position_view.close()

    def retire(self):
        """Take the reader out of service without unmapping: every later poll delivers nothing and
        returns 0 (Aeron's closed Image), while a poll already running on another thread finishes on
        memory that stays mapped until ``close()``. Idempotent."""
        self.retired = True

    @property
    def is_retired(self):
        """True once retired: polls deliver nothing."""
        return self.retired

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def is_closed(self):
        """True once closed (unmapped)."""
        return self.closed

    @property
    def log_buffers(self):
        """The mapped log."""
        return self.log

    @property
    def term_buffer_length(self):
        """Length of each of the log's three terms, in bytes."""
        return self._term_length

    @property
    def initial_term_id(self):
        """The stream's term id at position 0."""
        return self._initial_term_id

    @property
    def position_bits_to_shift(self):
        """log2 of the term length."""
        return self._position_bits_to_shift

    @property
    def position(self):
        """The subscriber position. Setting it must stay in the current term (Java Image.position):
        current <= new <= end of the current term, 32-aligned; otherwise InvalidArgumentError."""
        self.check_open()
        return load_acquire_i64(self.position_ptr)

    @position.setter
    def position(self, int64_t new_position):
        self.check_open()
        cdef int64_t current = load_acquire_i64(self.position_ptr)
        cdef int64_t limit = (current - (current & self.term_length_mask)) + self._term_length
        if new_position < current or new_position > limit:
            raise InvalidArgumentError(f"new position {new_position} out of range {current}-{limit}")
        if new_position % fd.FRAME_ALIGNMENT:
            raise InvalidArgumentError(f"new position {new_position} not aligned to {fd.FRAME_ALIGNMENT}")
        store_release_i64(self.position_ptr, new_position)

    @property
    def is_end_of_stream(self):
        self.check_open()
        return load_acquire_i64(self.position_ptr) >= load_acquire_i64(
            <int64_t *>(self.meta + ld.LOG_END_OF_STREAM_POSITION_OFFSET))

    cdef int corrupt(self, int32_t index, int32_t term_offset, int64_t position) except -1:
        raise CorruptFileError(
            f"corrupt frame at term offset {term_offset} (partition {index}, position {position}): "
            f"frame_length {fd.frame_i32(self.terms[index], term_offset)} does not fit the term",
            path=self.log.buffer.path, offset=<Py_ssize_t>index * self._term_length + term_offset)

    cdef AtomicBuffer open_term_buffer(self, int32_t index):
        # The term views are what pin the log mapping, and handlers are handed them: once a handler
        # has closed one, `terms[index]` may point at unmapped memory, so never read through it.
        cdef AtomicBuffer buffer = <AtomicBuffer>self.term_buffers[index]
        if buffer.closed:
            raise IllegalStateError(f"term buffer {index} was closed (by a handler?); this reader cannot read it")
        return buffer

    cdef int read(self, object handler, int64_t limit_position, int fragment_limit, bint controlled) except -1:
        if self.retired:
            return 0
        self.check_open()
        if fragment_limit < 0:
            raise InvalidArgumentError(f"fragment limit must be >= 0, got {fragment_limit}")
        cdef int64_t initial_position = load_acquire_i64(self.position_ptr)
        if initial_position < 0 or initial_position & (fd.FRAME_ALIGNMENT - 1):
            raise CorruptFileError(f"subscriber position {initial_position} is negative or not 32-aligned")
        if initial_position >= limit_position:
            return 0
        cdef int32_t index = ld.index_by_position(initial_position, self._position_bits_to_shift)
        cdef int32_t capacity = self._term_length
        cdef int32_t initial_offset = <int32_t>(initial_position & self.term_length_mask)
        cdef int32_t offset = initial_offset
        cdef int64_t limit64 = limit_position - initial_position + offset
        cdef int32_t limit_offset = capacity if limit64 > capacity else <int32_t>limit64
        cdef const uint8_t *term = self.terms[index]
        cdef AtomicBuffer buffer = self.open_term_buffer(index)
        cdef Header header = self.header
        cdef int fragments = 0
        cdef int32_t frame_length = 0
        cdef int32_t frame_offset, aligned
        cdef int action
        cdef int64_t resulting
        header._buffer = buffer
        header._fragmented_frame_length = -1
        try:
            while fragments < fragment_limit:
                frame_length = term_reader_next_frame(term, &offset, limit_offset, capacity)
                if frame_length <= 0:
                    break
                frame_offset = offset
                aligned = fd.align_i32(frame_length, fd.FRAME_ALIGNMENT)
                offset += aligned          # committed through this fragment even if the handler raises
                fragments += 1
                header._offset = frame_offset
                if not controlled:
                    handler(buffer, frame_offset + fd.HEADER_LENGTH, frame_length - fd.HEADER_LENGTH, header)
                    if self.closed or buffer.closed:
                        break
                    continue
                action = handler(buffer, frame_offset + fd.HEADER_LENGTH, frame_length - fd.HEADER_LENGTH, header)
                if self.closed or buffer.closed:
                    break
                if action == CONTROLLED_ACTION_ABORT:
                    fragments -= 1
                    offset -= aligned
                    break
                elif action == CONTROLLED_ACTION_BREAK:
                    break
                elif action == CONTROLLED_ACTION_COMMIT:
                    initial_position += offset - initial_offset
                    initial_offset = offset
                    store_release_i64(self.position_ptr, initial_position)
                elif action != CONTROLLED_ACTION_CONTINUE:
                    raise InvalidArgumentError(f"controlled poll handler returned {action}, not an action 1..4")
        finally:
            # A handler may have closed us: then the position window is gone too.
            if not self.closed:
                resulting = initial_position + (offset - initial_offset)
                if resulting > initial_position:
                    store_release_i64(self.position_ptr, resulting)
        if frame_length == TERM_READ_CORRUPT and not self.closed:
            self.corrupt(index, offset, initial_position + (offset - initial_offset))
        return fragments

    def poll(self, handler, int fragment_limit):
        """Deliver up to ``fragment_limit`` fragments as ``handler(buffer, offset, length, header)``.

        Returns the number of fragments delivered (padding is skipped and not counted). Never
        crosses a term boundary.
        """
        return self.read(handler, INT64_MAX, fragment_limit, False)

    def controlled_poll(self, handler, int fragment_limit):
        """As ``poll`` but ``handler`` returns ABORT, BREAK, COMMIT or CONTINUE.

        Returns the number of fragments consumed (an aborted one is not counted).
        """
        return self.read(handler, INT64_MAX, fragment_limit, True)

    def bounded_poll(self, handler, int64_t limit_position, int fragment_limit):
        """As ``poll`` but no frame starting at or beyond ``limit_position`` is read."""
        return self.read(handler, limit_position, fragment_limit, False)

    def bounded_controlled_poll(self, handler, int64_t limit_position, int fragment_limit):
        """As ``controlled_poll`` but no frame starting at or beyond ``limit_position`` is read."""
        return self.read(handler, limit_position, fragment_limit, True)

    def block_poll(self, block_handler, int block_length_limit):
        """Deliver the next run of whole frames, at most ``block_length_limit`` bytes, as
        ``block_handler(buffer, offset, length, session_id, term_id)`` (TermBlockScanner rules: a run
        stops at a PAD; a PAD at the start is delivered alone).

        Returns the number of bytes consumed (0 when nothing is available).
        """
        if self.retired:
            return 0
        self.check_open()
        if block_length_limit < 0:
            raise InvalidArgumentError(f"block length limit must be >= 0, got {block_length_limit}")
        cdef int64_t position = load_acquire_i64(self.position_ptr)
        if position < 0 or position & (fd.FRAME_ALIGNMENT - 1):
            raise CorruptFileError(f"subscriber position {position} is negative or not 32-aligned")
        cdef int32_t index = ld.index_by_position(position, self._position_bits_to_shift)
        cdef int32_t offset = <int32_t>(position & self.term_length_mask)
        cdef int32_t capacity = self._term_length
        cdef int32_t limit_offset = (capacity if block_length_limit > capacity - offset
                                     else offset + block_length_limit)
        cdef AtomicBuffer buffer = self.open_term_buffer(index)
        cdef const uint8_t *term = self.terms[index]
        cdef int32_t resulting = term_block_scan(term, offset, limit_offset, capacity)
        cdef int32_t length = resulting - offset
        cdef int32_t frame_length
        if length == 0:
            if offset < limit_offset:
                frame_length = fd.frame_length_volatile(term, offset)
                if frame_length > 0 and frame_length_is_corrupt(frame_length, offset, capacity):
                    self.corrupt(index, offset, position)
            return 0
        cdef int32_t term_id = fd.frame_i32(term + offset, fd.TERM_ID_FIELD_OFFSET)
        try:
            block_handler(buffer, offset, length, self.session_id, term_id)
        finally:
            if not self.closed:
                store_release_i64(self.position_ptr, position + length)
        return length


def any_fragment_pending(images):
    """Whether one of ``images`` (a sequence of TermReaders: a subscription's images) has a frame committed at its
    subscriber position, i.e. whether a poll of them would find anything (a fragment, or padding to pass).

    For a reader that polls every duty cycle and mostly finds nothing (a consensus module's adapters, between
    messages): the empty poll's Python (a call per image and per layer) is skipped on a few loads. A closed image, a
    subscriber position the poll would reject, a term view a handler closed and an object that is not a TermReader
    count as pending, so that the poll that follows raises what it raises; a retired image as nothing (its polls
    deliver nothing)."""
    cdef TermReader reader
    cdef int64_t position
    cdef int32_t index
    for image in images:
        if not isinstance(image, TermReader):
            return True                 # none of ours (a test's stand-in): its poll decides
        reader = <TermReader>image
        if reader.closed:
            return True
        if reader.retired:
            continue
        position = load_acquire_i64(reader.position_ptr)
        if position < 0 or position & (fd.FRAME_ALIGNMENT - 1):
            return True
        index = ld.index_by_position(position, reader._position_bits_to_shift)
        if (<AtomicBuffer>reader.term_buffers[index]).closed:
            return True
        if fd.frame_length_volatile(reader.terms[index], <int32_t>(position & reader.term_length_mask)) > 0:
            return True     # committed (a frame being written has a negative length until then)
    return False
