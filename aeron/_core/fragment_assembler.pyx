# SPDX-License-Identifier: Apache-2.0
# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Reassemble fragmented messages before they reach the application handler.

Port of FragmentAssembler, ControlledFragmentAssembler, ImageFragmentAssembler, ImageControlledFragmentAssembler
and BufferBuilder. The delegate sees ``(buffer, offset, length, header)``: for an unfragmented
message the reader's own arguments, for a reassembled one the session builder's buffer at offset 0
and a header whose frame_length is 32 + total, whose flags are first | last and whose position is
the end of the last fragment. Builders are reused per session; the delegate's buffer and header
are valid only during the call.

Malformed sequences never raise: a non-BEGIN fragment with no message in progress, or at an
unexpected term offset, is dropped (and a partial message at a mismatch is discarded), as are
messages that would exceed 16 MiB (the largest message Aeron can publish).
"""
cimport cython
from cpython.buffer cimport PyBUF_ANY_CONTIGUOUS, PyObject_GetBuffer, PyBuffer_Release
from libc.stdint cimport int32_t, int64_t, uint8_t
from libc.string cimport memcpy

from aeron._core.atomic_buffer cimport AtomicBuffer, check_bounds
from aeron._core.term_reader cimport Header, CONTROLLED_ACTION_ABORT, CONTROLLED_ACTION_CONTINUE
from aeron._core cimport frame_descriptor as fd
from aeron.common.errors import InvalidArgumentError

DEFAULT_INITIAL_BUFFER_LENGTH = 4096
cdef int32_t MIN_CAPACITY = 64
cdef int32_t MAX_CAPACITY = fd.MAX_MESSAGE_LENGTH_LIMIT


@cython.final
cdef class BufferBuilder:
    """A growable buffer for one session's message in progress (Aeron BufferBuilder)."""

    def __cinit__(self, int32_t initial_capacity=DEFAULT_INITIAL_BUFFER_LENGTH):
        if initial_capacity < 0 or initial_capacity > MAX_CAPACITY:
            raise InvalidArgumentError(f"initial buffer length {initial_capacity} not in [0, {MAX_CAPACITY}]")
        self.capacity = initial_capacity if initial_capacity > MIN_CAPACITY else MIN_CAPACITY
        self.storage = bytearray(self.capacity)
        self.buffer = AtomicBuffer(self.storage)
        self.header_storage = bytearray(fd.HEADER_LENGTH)
        self.complete_header = Header.__new__(Header, 0, 16)
        self.complete_header._buffer = AtomicBuffer(self.header_storage)
        self.reset()

    cdef void reset(self) noexcept:
        self.limit = 0
        self.next_term_offset = -1
        self.first_term_offset = 0
        self.complete_header._fragmented_frame_length = -1
        self.complete_header.context = None

    cdef int ensure_views(self) except -1:
        # The delegate is handed `buffer` and complete_header.buffer and may close() them; we keep
        # raw pointers into both, so re-wrap the storage (which we own) rather than copy to NULL.
        if self.buffer.closed:
            self.buffer = AtomicBuffer(self.storage)
        if self.complete_header._buffer.closed:
            self.complete_header._buffer = AtomicBuffer(self.header_storage)
        return 0

    cdef int capture_header(self, Header header) except -1:
        cdef const uint8_t *frame = header.frame()
        cdef Header ch = self.complete_header
        self.ensure_views()
        ch._initial_term_id = header._initial_term_id
        ch._position_bits_to_shift = header._position_bits_to_shift
        memcpy(ch._buffer.data, frame, fd.HEADER_LENGTH)
        self.first_term_offset = fd.frame_i32(frame, fd.TERM_OFFSET_FIELD_OFFSET)
        return 0

    cdef int append(self, const uint8_t *src, int32_t length) except -1:
        """Returns 0, or 1 when the message would exceed MAX_CAPACITY (caller drops it)."""
        cdef int64_t required = <int64_t>self.limit + length
        cdef int64_t new_capacity
        cdef bytearray grown
        if required > MAX_CAPACITY:
            return 1
        self.ensure_views()
        if required > self.capacity:
            new_capacity = self.capacity
            while new_capacity < required:
                new_capacity *= 2
            if new_capacity > MAX_CAPACITY:
                new_capacity = MAX_CAPACITY
            # A fresh bytearray, never an in-place resize: a delegate may still hold a view of the old one.
            grown = bytearray(<Py_ssize_t>new_capacity)
            memcpy(<uint8_t *><char *>grown, <uint8_t *><char *>self.storage, <size_t>self.limit)
            self.storage = grown
            self.buffer = AtomicBuffer(grown)
            self.capacity = <int32_t>new_capacity
        if length > 0:
            memcpy(self.buffer.data + self.limit, src, <size_t>length)
        self.limit += length
        return 0

    cdef Header complete(self, Header last):
        cdef Header ch = self.complete_header
        cdef const uint8_t *last_frame = last.frame()
        self.ensure_views()
        cdef uint8_t *frame = ch._buffer.data
        cdef int32_t frame_length = fd.HEADER_LENGTH + self.limit
        memcpy(frame + fd.FRAME_LENGTH_FIELD_OFFSET, &frame_length, 4)
        frame[fd.FLAGS_FIELD_OFFSET] = frame[fd.FLAGS_FIELD_OFFSET] | last_frame[fd.FLAGS_FIELD_OFFSET]
        # the message occupies the term from the BEGIN fragment to the end of the last one
        ch._fragmented_frame_length = last.next_term_offset_c() - self.first_term_offset
        ch.context = last.context
        return ch

    @property
    def limit(self):
        return self.limit

    @property
    def capacity(self):
        return self.capacity


cdef class _AssemblerBase:

    def __cinit__(self, delegate, int32_t initial_buffer_length=DEFAULT_INITIAL_BUFFER_LENGTH):
        if not callable(delegate):
            raise InvalidArgumentError("delegate must be callable(buffer, offset, length, header)")
        if initial_buffer_length < 0 or initial_buffer_length > MAX_CAPACITY:
            raise InvalidArgumentError(f"initial buffer length {initial_buffer_length} not in [0, {MAX_CAPACITY}]")
        self.delegate = delegate
        self.initial_buffer_length = initial_buffer_length

    @property
    def delegate(self):
        """The handler whole messages go to."""
        return self.delegate

    cdef BufferBuilder builder_for(self, int32_t session_id, bint create):
        return None

    cdef const uint8_t *source(self, object buffer, Py_ssize_t offset, Py_ssize_t length,
                               Py_buffer *view, bint *release) except NULL:
        # The reader hands us AtomicBuffers; anything else with the buffer protocol also works.
        cdef AtomicBuffer ab
        release[0] = False
        if type(buffer) is AtomicBuffer:
            ab = <AtomicBuffer>buffer
            ab.check(offset, length)
            return ab.data + offset
        PyObject_GetBuffer(buffer, view, PyBUF_ANY_CONTIGUOUS)
        release[0] = True
        try:
            check_bounds(offset, length, view.len)
        except BaseException:
            PyBuffer_Release(view)
            release[0] = False
            raise
        return <const uint8_t *>view.buf + offset


cdef inline int _append_from(_AssemblerBase self, BufferBuilder builder, object buffer, Py_ssize_t offset,
                             Py_ssize_t length) except -1:
    """Append the fragment payload; returns 1 when the message grew too large and was dropped."""
    cdef Py_buffer view
    cdef bint release = False
    cdef const uint8_t *src
    cdef int rc
    if length > MAX_CAPACITY:
        builder.reset()
        return 1
    src = self.source(buffer, offset, length, &view, &release)
    try:
        rc = builder.append(src, <int32_t>length)
    finally:
        if release:
            PyBuffer_Release(&view)
    if rc != 0:
        builder.reset()
    return rc


cdef inline object _on_fragment(_AssemblerBase self, object buffer, Py_ssize_t offset, Py_ssize_t length,
                                Header header, bint controlled):
    """The poll handler of all four assemblers. An unfragmented message goes straight to the delegate; a BEGIN
    fragment starts its session's message, a later one is appended in order (one at an unexpected term offset drops
    the message) and the END calls the delegate with the whole message. A controlled assembler returns the delegate's
    action (CONTINUE for a fragment that completes nothing) and, when the delegate ABORTs a reassembled message, takes
    its last fragment back so that the fragment's redelivery completes it again; a plain one returns None."""
    cdef const uint8_t *frame = header.frame()
    cdef uint8_t flags = frame[fd.FLAGS_FIELD_OFFSET]
    cdef BufferBuilder b
    cdef int32_t previous_limit
    if (flags & fd.UNFRAGMENTED) == fd.UNFRAGMENTED:
        action = self.delegate(buffer, offset, length, header)
        return action if controlled else None
    done = CONTROLLED_ACTION_CONTINUE if controlled else None
    b = self.builder_for(fd.frame_i32(frame, fd.SESSION_ID_FIELD_OFFSET), flags & fd.BEGIN_FRAG_FLAG)
    if flags & fd.BEGIN_FRAG_FLAG:
        b.reset()
        b.capture_header(header)
        if _append_from(self, b, buffer, offset, length) == 0:
            b.next_term_offset = header.next_term_offset_c()
        return done
    if b is None:
        return done
    if fd.frame_i32(frame, fd.TERM_OFFSET_FIELD_OFFSET) != b.next_term_offset or b.next_term_offset < 0:
        b.reset()
        return done
    previous_limit = b.limit
    if _append_from(self, b, buffer, offset, length) != 0:
        return done
    if not (flags & fd.END_FRAG_FLAG):
        b.next_term_offset = header.next_term_offset_c()
        return done
    try:
        action = self.delegate(b.buffer, 0, b.limit, b.complete(header))
    except BaseException:
        b.reset()
        raise
    if controlled and action == CONTROLLED_ACTION_ABORT:
        b.limit = previous_limit
    else:
        b.reset()
    return action if controlled else None


cdef class _SessionAssembler(_AssemblerBase):

    def __cinit__(self, *args, **kwargs):
        self.builders = {}
        self.last_builder = None
        self.last_session_id = 0

    cdef BufferBuilder builder_for(self, int32_t session_id, bint create):
        cdef BufferBuilder b
        if self.last_builder is not None and self.last_session_id == session_id:
            return self.last_builder
        b = self.builders.get(session_id)
        if b is None:
            if not create:
                return None
            b = BufferBuilder(self.initial_buffer_length)
            self.builders[session_id] = b
        self.last_session_id = session_id
        self.last_builder = b
        return b

    def free_session_buffer(self, int32_t session_id):
        """Forget the builder of ``session_id`` (e.g. when its image goes). Returns True if one existed."""
        if self.last_builder is not None and self.last_session_id == session_id:
            self.last_builder = None
        return self.builders.pop(session_id, None) is not None

    def clear(self):
        """Forget every session's builder."""
        self.last_builder = None
        self.builders.clear()

    @property
    def session_count(self):
        """How many sessions have a reassembly buffer."""
        return len(self.builders)


@cython.final
cdef class FragmentAssembler(_SessionAssembler):
    """Reassembles fragments per session before calling ``delegate(buffer, offset, length, header)``.

    Use ``assembler.on_fragment`` (or the assembler itself) as the poll handler.
    """

    def on_fragment(self, buffer, Py_ssize_t offset, Py_ssize_t length, Header header not None):
        """The poll handler: an unfragmented message goes straight to the delegate; fragments are joined
        per session and the delegate gets the whole message, with the header of its first fragment."""
        _on_fragment(self, buffer, offset, length, header, False)

    def __call__(self, buffer, Py_ssize_t offset, Py_ssize_t length, Header header not None):
        _on_fragment(self, buffer, offset, length, header, False)


@cython.final
cdef class ControlledFragmentAssembler(_SessionAssembler):
    """As FragmentAssembler for controlled polls: returns the delegate's action. When the delegate
    ABORTs a reassembled message the last fragment is taken back, so its redelivery completes the
    message again."""

    def on_fragment(self, buffer, Py_ssize_t offset, Py_ssize_t length, Header header not None):
        """The controlled poll handler: as ``FragmentAssembler.on_fragment``, returning the delegate's action
        (CONTINUE for a fragment that does not complete a message)."""
        return _on_fragment(self, buffer, offset, length, header, True)

    def __call__(self, buffer, Py_ssize_t offset, Py_ssize_t length, Header header not None):
        return _on_fragment(self, buffer, offset, length, header, True)


cdef class _ImageAssembler(_AssemblerBase):

    def __cinit__(self, *args, **kwargs):
        self.builder = BufferBuilder(self.initial_buffer_length)

    cdef BufferBuilder builder_for(self, int32_t session_id, bint create):
        return self.builder

    def clear(self):
        """Discard a message in progress."""
        self.builder.reset()


@cython.final
cdef class ImageFragmentAssembler(_ImageAssembler):
    """FragmentAssembler for a single image (one session): one builder, no session lookup."""

    def on_fragment(self, buffer, Py_ssize_t offset, Py_ssize_t length, Header header not None):
        """The poll handler: as ``FragmentAssembler.on_fragment``, for one image's fragments."""
        _on_fragment(self, buffer, offset, length, header, False)

    def __call__(self, buffer, Py_ssize_t offset, Py_ssize_t length, Header header not None):
        _on_fragment(self, buffer, offset, length, header, False)


@cython.final
cdef class ImageControlledFragmentAssembler(_ImageAssembler):
    """ControlledFragmentAssembler for a single image (one session): one builder, no session lookup. When the
    delegate ABORTs a reassembled message the last fragment is taken back, so its redelivery completes it again."""

    def on_fragment(self, buffer, Py_ssize_t offset, Py_ssize_t length, Header header not None):
        """The controlled poll handler: as ``ControlledFragmentAssembler.on_fragment``, for one image's
        fragments; returns the delegate's action (CONTINUE for a fragment that does not complete a message)."""
        return _on_fragment(self, buffer, offset, length, header, True)

    def __call__(self, buffer, Py_ssize_t offset, Py_ssize_t length, Header header not None):
        return _on_fragment(self, buffer, offset, length, header, True)
