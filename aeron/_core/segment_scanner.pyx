# SPDX-License-Identifier: Apache-2.0
# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Frame walks over recorded segment data (the archive's ``<id>-<base>.rec`` files).

A segment holds term frames back to back at 32-byte aligned offsets; a frame length <= 0 ends the recorded data.
The walks run without the GIL over a buffer the caller holds (bytes, mmap, memoryview).
"""
from cpython.buffer cimport PyBUF_ANY_CONTIGUOUS, PyBUF_WRITABLE, PyObject_GetBuffer, PyBuffer_Release
from libc.stdint cimport int32_t, uint32_t
from libc.string cimport memcpy

from aeron._core cimport crc

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


# -- checksums (aeron_crc.h through crc.pxd: the kernel the recorder and the replayer use) ---------------------------

CHECKSUM_NONE = crc.KIND_NONE
CHECKSUM_CRC32 = crc.KIND_CRC32
CHECKSUM_CRC32C = crc.KIND_CRC32C


def crc32c_in_hardware():
    """Whether CRC-32C runs on the CPU's crc32 instruction (SSE4.2) here."""
    return bool(crc.aeron_crc32c_in_hardware())


def _crc32c_table(buffer):
    # the table-driven CRC-32C, for tests to compare with the hardware one
    cdef Py_buffer view
    cdef int64_t length = -1
    cdef int32_t result
    _get_view(buffer, &view, 0, &length, False)
    try:
        with nogil:
            result = crc.aeron_checksum_by_table(crc.KIND_CRC32C, <const uint8_t *>view.buf, <size_t>length)
        return result
    finally:
        PyBuffer_Release(&view)


cdef int _get_view(object buffer, Py_buffer *view, int64_t offset, int64_t *length, bint writable) except -1:
    PyObject_GetBuffer(buffer, view, PyBUF_ANY_CONTIGUOUS | (PyBUF_WRITABLE if writable else 0))
    if length[0] < 0:
        length[0] = view.len - offset
    if offset < 0 or length[0] < 0 or offset + length[0] > view.len:
        PyBuffer_Release(view)
        raise InvalidArgumentError(f"range [{offset}, {offset + length[0]}) is outside the {view.len}-byte buffer")
    return 0


def checksum(int kind, buffer, int64_t offset=0, int64_t length=-1):
    """CRC-32 (``kind`` CHECKSUM_CRC32) or CRC-32C (CHECKSUM_CRC32C) of ``buffer[offset:offset+length]`` as a
    signed int32, as Aeron's ``Checksum.compute`` returns it."""
    cdef Py_buffer view
    cdef int32_t result
    if not crc.is_checksum_kind(kind):
        raise InvalidArgumentError(f"unknown checksum kind {kind}")
    _get_view(buffer, &view, offset, &length, False)
    try:
        with nogil:
            result = crc.aeron_checksum(kind, <const uint8_t *>view.buf + offset, <size_t>length)
        return result
    finally:
        PyBuffer_Release(&view)


# -- verify and checksum a segment's frames (ArchiveTool verify / checksum) --------------------------------------------

cdef enum:
    V_OK = 0
    V_HEADER_UNREADABLE = 1
    V_BAD_HEADER = 2
    V_DATA_UNREADABLE = 3
    V_BAD_CHECKSUM = 4
    V_BAD_FRAME_LENGTH = 5

VERIFY_OK = V_OK
VERIFY_HEADER_UNREADABLE = V_HEADER_UNREADABLE      # (offset,)
VERIFY_BAD_HEADER = V_BAD_HEADER                    # (offset, termOffset, expected, termId, expected, streamId, expected)
VERIFY_DATA_UNREADABLE = V_DATA_UNREADABLE          # (offset, data length, data offset)
VERIFY_BAD_CHECKSUM = V_BAD_CHECKSUM                # (offset, recorded, expected)
VERIFY_BAD_FRAME_LENGTH = V_BAD_FRAME_LENGTH        # (offset, frame length)

cdef enum:
    HEADER_LENGTH = 32
    HDR_TYPE_DATA = 1


cdef int _verify(const uint8_t *data, int64_t size, int64_t offset, int64_t limit, int64_t position,
                 int32_t term_length, int32_t position_bits, int32_t initial_term_id, int32_t stream_id, int kind,
                 int64_t out[8]) noexcept nogil:
    cdef int32_t frame_length, term_offset, term_id, value
    cdef int64_t aligned
    cdef int code = V_OK
    while True:
        out[0] = offset
        if offset + HEADER_LENGTH > size:
            return V_HEADER_UNREADABLE
        frame_length = _get_i32(data + offset)
        if frame_length == 0:
            break
        if frame_length < 0:
            out[1] = frame_length
            return V_BAD_FRAME_LENGTH
        term_id = <int32_t>(<uint32_t>initial_term_id + <uint32_t>(position >> position_bits))
        term_offset = <int32_t>(position & (term_length - 1))
        if (_get_i32(data + offset + 8) != term_offset or _get_i32(data + offset + 20) != term_id or
                _get_i32(data + offset + 16) != stream_id):
            out[1] = _get_i32(data + offset + 8)
            out[2] = term_offset
            out[3] = _get_i32(data + offset + 20)
            out[4] = term_id
            out[5] = _get_i32(data + offset + 16)
            out[6] = stream_id
            return V_BAD_HEADER
        aligned = (<int64_t>frame_length + FRAME_ALIGNMENT - 1) & ~(<int64_t>FRAME_ALIGNMENT - 1)
        if offset + aligned > size:
            out[1] = aligned - HEADER_LENGTH
            out[2] = offset + HEADER_LENGTH
            return V_DATA_UNREADABLE
        if kind != crc.KIND_NONE and (data[offset + 6] | (data[offset + 7] << 8)) == HDR_TYPE_DATA:
            value = crc.record_checksum(kind, data + offset, aligned)
            if value != _get_i32(data + offset + 12):
                out[1] = _get_i32(data + offset + 12)
                out[2] = value
                return V_BAD_CHECKSUM
        offset += aligned
        position += aligned
        if offset >= limit:
            break
    out[0] = offset
    return code


def verify_frames(buffer, int64_t offset, int64_t limit, int64_t position, int32_t term_length,
                  int32_t initial_term_id, int32_t stream_id, int checksum_kind=CHECKSUM_NONE):
    """Check the frames of a segment's bytes ``buffer`` from ``offset`` (recording ``position``) up to ``limit``
    as ArchiveTool verify does: each header must carry its term offset, term id and stream id, its data must be in
    the file and, with a checksum kind, data frames must hold the payload's checksum in their session id field.

    Returns ``(code, details)``: VERIFY_OK with ``(end_offset,)``, or an error code with the offending frame's
    offset and what was found and expected (see the VERIFY_* constants).
    """
    cdef Py_buffer view
    cdef int64_t out[8]
    cdef int code
    cdef int32_t bits
    if term_length <= 0 or term_length & (term_length - 1):
        raise InvalidArgumentError(f"term length {term_length} is not a power of two")
    if checksum_kind != CHECKSUM_NONE and not crc.is_checksum_kind(checksum_kind):
        raise InvalidArgumentError(f"unknown checksum kind {checksum_kind}")
    bits = 0
    while (1 << bits) < term_length:
        bits += 1
    PyObject_GetBuffer(buffer, &view, PyBUF_ANY_CONTIGUOUS)
    try:
        if offset < 0:
            raise InvalidArgumentError(f"offset {offset} is negative")
        with nogil:
            code = _verify(<const uint8_t *>view.buf, view.len, offset, limit, position, term_length, bits,
                           initial_term_id, stream_id, checksum_kind, out)
        if code == VERIFY_OK or code == VERIFY_HEADER_UNREADABLE:
            return code, (out[0],)
        if code == VERIFY_BAD_HEADER:
            return code, (out[0], out[1], out[2], out[3], out[4], out[5], out[6])
        if code == VERIFY_BAD_FRAME_LENGTH:
            return code, (out[0], out[1])
        return code, (out[0], out[1], out[2])
    finally:
        PyBuffer_Release(&view)


def apply_checksums(buffer, int64_t offset, int checksum_kind):
    """Write each data frame's payload checksum into its session id field, from ``offset`` to the first zero frame
    length (ArchiveTool checksum). Returns ``(frames, end_offset, short_data_length)``: the frames written, where
    it stopped, and when a frame's data runs past the buffer its data length (else 0)."""
    cdef Py_buffer view
    cdef uint8_t *data
    cdef int64_t size, aligned, frames = 0, short_length = 0
    cdef int32_t frame_length, value
    if not crc.is_checksum_kind(checksum_kind):
        raise InvalidArgumentError(f"unknown checksum kind {checksum_kind}")
    PyObject_GetBuffer(buffer, &view, PyBUF_ANY_CONTIGUOUS | PyBUF_WRITABLE)
    try:
        data = <uint8_t *>view.buf
        size = view.len
        if offset < 0 or offset % FRAME_ALIGNMENT:
            raise InvalidArgumentError(f"frame offset {offset} must be >= 0 and 32-aligned")
        with nogil:
            while offset + HEADER_LENGTH <= size:
                frame_length = _get_i32(data + offset)
                if frame_length <= 0:
                    break
                aligned = (<int64_t>frame_length + FRAME_ALIGNMENT - 1) & ~(<int64_t>FRAME_ALIGNMENT - 1)
                if (data[offset + 6] | (data[offset + 7] << 8)) == HDR_TYPE_DATA:
                    if offset + aligned > size:
                        short_length = aligned - HEADER_LENGTH
                        break
                    value = crc.record_checksum(checksum_kind, data + offset, aligned)
                    memcpy(data + offset + 12, &value, 4)
                    frames += 1
                offset += aligned
        return frames, offset, short_length
    finally:
        PyBuffer_Release(&view)
