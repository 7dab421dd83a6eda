# SPDX-License-Identifier: Apache-2.0
# AtomicBuffer: a window over writable memory (MappedFile, bytearray, any writable buffer) with atomic
# accessors. Bounds are checked once at the Python edge; kernels use `data` directly.
from cpython.buffer cimport Py_buffer
from libc.stdint cimport int32_t, int64_t, uint8_t

# A file mapped shared with mmap(2), its descriptor closed at once; munmap on close() or collection.
cdef class MappedFile:
    cdef uint8_t *addr            # start of the mapping, NULL once unmapped
    cdef Py_ssize_t length        # mapped bytes
    cdef Py_ssize_t exports       # live buffer exports; close() refuses while any is alive
    cdef readonly object path     # the file, for messages

cdef class AtomicBuffer:
    cdef uint8_t *data            # first byte of the window
    cdef Py_ssize_t length        # window length in bytes
    cdef object owner             # object whose memory this is (kept alive while we are open)
    cdef Py_buffer _src           # buffer acquired from owner; pins mmap against close()
    cdef bint _has_src            # _src must be released on close
    cdef bint _owns_mapping       # we created owner (map_file) and close it with us
    cdef Py_ssize_t exports       # live buffer exports (memoryviews) of this window
    cdef bint closed              # after close() every access raises
    cdef readonly object path     # file path when mapped from a file, else None

    cdef int check(self, Py_ssize_t offset, Py_ssize_t length) except -1
    cdef int check_open(self) except -1
    cdef int check_aligned(self, Py_ssize_t offset, Py_ssize_t size) except -1

# Raise OutOfBoundsError unless [offset, offset + length) lies in [0, capacity).
cdef int check_bounds(Py_ssize_t offset, Py_ssize_t length, Py_ssize_t capacity) except -1
# Raise InvalidArgumentError for a negative length (other than check_span's -1).
cdef int negative_length(Py_ssize_t length) except -1


cdef inline Py_ssize_t check_span(Py_ssize_t offset, Py_ssize_t length, Py_ssize_t capacity) except -1:
    # The length of the range at ``offset`` of a caller's ``length`` (-1: to the end of ``capacity`` bytes), checked
    # as check_bounds does: the argument prologue of offers and writes.
    if length == -1:
        length = capacity - offset
    elif length < 0:
        negative_length(length)
    check_bounds(offset, length, capacity)
    return length
