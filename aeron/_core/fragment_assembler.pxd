# SPDX-License-Identifier: Apache-2.0
# Reassembly of fragmented messages (port of Aeron's FragmentAssembler, BufferBuilder).
# One BufferBuilder per session, reused across messages: no allocation per message once warm.
cimport cython
from libc.stdint cimport int32_t, uint8_t
from aeron._core.atomic_buffer cimport AtomicBuffer
from aeron._core.term_reader cimport Header


@cython.final
cdef class BufferBuilder:
    cdef bytearray storage             # message bytes; replaced (never resized) when it must grow
    cdef AtomicBuffer buffer           # view over storage handed to the delegate
    cdef int32_t capacity              # len(storage)
    cdef int32_t limit                 # bytes appended so far
    cdef int32_t next_term_offset      # where the next fragment must start, -1 when idle
    cdef int32_t first_term_offset     # term offset of the BEGIN fragment
    cdef Header complete_header        # header of the assembled message over header_storage
    cdef bytearray header_storage      # the 32 bytes complete_header shows; owned here, not by its view

    cdef void reset(self) noexcept
    cdef int ensure_views(self) except -1
    cdef int capture_header(self, Header header) except -1
    cdef int append(self, const uint8_t *src, int32_t length) except -1
    cdef Header complete(self, Header last)


cdef class _AssemblerBase:
    cdef object delegate               # handler(buffer, offset, length, header)
    cdef int32_t initial_buffer_length # first capacity of a session's builder

    cdef const uint8_t *source(self, object buffer, Py_ssize_t offset, Py_ssize_t length,
                               Py_buffer *view, bint *release) except NULL
    # the builder of a session's message (None when there is none and ``create`` is false)
    cdef BufferBuilder builder_for(self, int32_t session_id, bint create)


cdef class _SessionAssembler(_AssemblerBase):
    cdef dict builders                 # session id -> BufferBuilder
    cdef int32_t last_session_id       # one-entry cache in front of the dict
    cdef BufferBuilder last_builder    # builder of last_session_id, or None


@cython.final
cdef class FragmentAssembler(_SessionAssembler):
    pass


@cython.final
cdef class ControlledFragmentAssembler(_SessionAssembler):
    pass


cdef class _ImageAssembler(_AssemblerBase):
    cdef BufferBuilder builder         # the single session of one image


@cython.final
cdef class ImageFragmentAssembler(_ImageAssembler):
    pass


@cython.final
cdef class ImageControlledFragmentAssembler(_ImageAssembler):
    pass
