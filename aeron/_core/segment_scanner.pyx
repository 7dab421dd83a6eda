# SPDX-License-Identifier: Apache-2.0
# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Frame walks over recorded segment data (the archive's ``<id>-<base>.rec`` files).

A segment holds term frames back to back at 32-byte aligned offsets; a frame length <= 0 ends the recorded data.
The walks run without the GIL over a buffer the caller holds (bytes, mmap, memoryview).
"""
from cpython.buffer cimport PyBUF_ANY_CONTIGUOUS, PyObject_GetBuffer, PyBuffer_Release
from libc.stdint cimport int32_t
from libc.string cimport memcpy

from aeron.common.errors import InvalidArgumentError

cdef enum:
    FRAME_ALIGNMENT = 32


cdef inline int32_t _get_i32(const uint8_t *p) noexcept nogil:
    cdef int32_t v
    memcpy(&v, p, 4)
    return v


cdef int64_t walk_frames(const uint8_t *data, int64_t offset, int64_t limit, int64_t *last_length) noexcept nogil:
    cdef int32_t frame_length
    cdef int64_t aligned
    last_length[0] = 0
    while offset + 4 <= limit:
        frame_length = _get_i32(data + offset)
        if frame_length <= 0:
            break
        aligned = (<int64_t>frame_length + FRAME_ALIGNMENT - 1) & ~(<int64_t>FRAME_ALIGNMENT - 1)
        if offset + aligned > limit:
            break               # runs past the data: not a complete frame
        offset += aligned
        last_length[0] = aligned
    return offset


def scan_frames(buffer, int64_t offset, int64_t limit):
    """Walk the frames of ``buffer[offset:limit]`` (offset 32-aligned).

    Returns ``(end_offset, last_aligned_length)``: where the recorded frames end (the first frame length <= 0,
    or a frame that would run past ``limit``), and the aligned length of the last whole frame (0 if none).
    """
    cdef Py_buffer view
    cdef int64_t end, last = 0
    PyObject_GetBuffer(buffer, &view, PyBUF_ANY_CONTIGUOUS)
    try:
        if limit < 0 or limit > view.len:
            limit = view.len
        if offset < 0 or offset % FRAME_ALIGNMENT:
            raise InvalidArgumentError(f"frame offset {offset} must be >= 0 and 32-aligned")
        if offset >= limit:
            return offset, 0
        with nogil:
            end = walk_frames(<const uint8_t *>view.buf, offset, limit, &last)
        return end, last
    finally:
        PyBuffer_Release(&view)
