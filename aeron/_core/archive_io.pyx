# SPDX-License-Identifier: Apache-2.0
# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Archive data path: term blocks into segment files (recording) and segment frames into a replay
publication (replay), per block in C (archive.md §4.4-4.6, §10.3).

``SegmentWriter.on_block`` is the block handler of ``Image.block_poll``: a run of DATA frames is written
with one ``pwrite`` (GIL released), a PAD frame as its 32-byte header only (its body stays a hole), and
with a record checksum each DATA frame's session id field carries the CRC-32 (or CRC-32C) of its aligned payload
(the term itself is never modified: the frames are copied to a scratch block first).

``replay_block`` finds a run of frames in a mapped segment with the term reader's block scan (term_reader.pxd):
a PAD becomes ``append_padding``; a run of DATA frames is copied to the scratch block, each frame's session and
stream id rewritten to the replay publication's (after verifying its checksum when asked), and offered whole
with ``offer_block``.
"""
cimport cython
from cpython.buffer cimport PyBUF_SIMPLE, PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from libc.errno cimport errno, EINTR
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

from aeron._core.atomic cimport load_acquire_i32
from aeron._core.atomic_buffer cimport AtomicBuffer
from aeron._core cimport frame_descriptor as fd
from aeron._core.term_reader cimport frame_length_is_corrupt, term_block_scan
from aeron.common.errors import CorruptFileError, InvalidArgumentError

import os

cdef extern from "unistd.h" nogil:
    ssize_t pwrite(int fd, const void *buf, size_t count, long offset)
    int fsync(int fd)
    int fdatasync(int fd)

CHECKSUM_NONE = 0
CHECKSUM_CRC32 = 1
CHECKSUM_CRC32C = 2

cdef uint32_t CRC_TABLES[3][256]          # by checksum kind; row 0 unused


cdef void _init_crc_table(uint32_t *table, uint32_t polynomial) noexcept:
    cdef uint32_t c
    cdef int n, k
    for n in range(256):
        c = <uint32_t>n
        for k in range(8):
            if c & 1:
                c = polynomial ^ (c >> 1)
            else:
                c = c >> 1
        table[n] = c


_init_crc_table(CRC_TABLES[CHECKSUM_CRC32], <uint32_t>0xEDB88320u)      # IEEE 802.3 (java.util.zip.CRC32)
_init_crc_table(CRC_TABLES[CHECKSUM_CRC32C], <uint32_t>0x82F63B78u)     # Castagnoli (java.util.zip.CRC32C)


cdef inline uint32_t crc(int kind, const uint8_t *data, Py_ssize_t length) noexcept nogil:
    """CRC-32 or CRC-32C (reflected, all-ones start and end) of ``data``."""
    cdef const uint32_t *table = CRC_TABLES[kind]
    cdef uint32_t c = ~(<uint32_t>0)
    cdef Py_ssize_t i
    for i in range(length):
        c = table[(c ^ data[i]) & 0xFF] ^ (c >> 8)
    return ~c


cdef int _check_kind(int kind) except -1:
    if kind not in (CHECKSUM_CRC32, CHECKSUM_CRC32C):
        raise InvalidArgumentError(f"unknown checksum {kind}")
    return 0


def frame_checksum(buffer, Py_ssize_t offset, Py_ssize_t frame_length, int kind=CHECKSUM_CRC32):
    """The record checksum of the frame at ``buffer[offset:]``: the CRC of bytes [32, align(frame_length, 32)), as a
    signed int32 (the value stored in the session id field)."""
    _check_kind(kind)
    cdef Py_buffer view
    cdef Py_ssize_t end = offset + fd.align_i64(frame_length, fd.FRAME_ALIGNMENT)
    PyObject_GetBuffer(buffer, &view, PyBUF_SIMPLE)
    try:
        if offset < 0 or frame_length < fd.HEADER_LENGTH or end > view.len:
            raise InvalidArgumentError(f"frame of {frame_length} bytes at {offset} outside a {view.len}-byte buffer")
        return <int32_t>crc(kind, <const uint8_t *>view.buf + offset + fd.HEADER_LENGTH,
                            end - offset - fd.HEADER_LENGTH)
    finally:
        PyBuffer_Release(&view)


cdef int _write_fully(int file, const uint8_t *data, Py_ssize_t length, int64_t file_offset) except -1:
    cdef ssize_t n
    while length > 0:
        with nogil:
            n = pwrite(file, data, <size_t>length, file_offset)
        if n < 0:
            if errno == EINTR:
                continue
            raise OSError(errno, os.strerror(errno))
        data += n
        length -= n
        file_offset += n
    return 0


@cython.final
cdef class SegmentWriter:
    """Writes term blocks into the open segment file ``fd`` at ``segment_offset`` (advanced by each block).

    ``sync_level`` 0 leaves flushing to the OS, 1 forces the data (fdatasync) and 2 data and metadata (fsync)
    after every block (aeron.archive.file.sync.level). ``checksum`` is CHECKSUM_NONE or CHECKSUM_CRC32.
    """

    def __cinit__(self, int sync_level=0, int checksum=CHECKSUM_NONE, Py_ssize_t max_block_length=0):
        if checksum != CHECKSUM_NONE:
            _check_kind(checksum)
        if sync_level not in (0, 1, 2):
            raise InvalidArgumentError(f"file sync level must be 0, 1 or 2, got {sync_level}")
        self.fd = -1
        self.segment_offset = 0
        self.sync_level = sync_level
        self.checksum = checksum
        self.scratch = NULL
        self.scratch_length = 0
        if checksum != CHECKSUM_NONE:
            if max_block_length <= 0:
                raise InvalidArgumentError("a checksumming writer needs max_block_length > 0")
            self.scratch = <uint8_t *>malloc(max_block_length)
            if self.scratch == NULL:
                raise MemoryError()
            self.scratch_length = max_block_length

    def __dealloc__(self):
        if self.scratch != NULL:
            free(self.scratch)
            self.scratch = NULL

    def on_block(self, AtomicBuffer buffer, int32_t offset, int32_t length, int32_t session_id, int32_t term_id):
        """Block handler: write ``buffer[offset:offset + length]`` (whole frames, as block_poll delivers them)."""
        if self.fd < 0:
            raise InvalidArgumentError("no segment file open")
        buffer.check(offset, length)
        cdef const uint8_t *src = buffer.data + offset
        cdef int32_t frame_length, aligned, pos
        cdef uint8_t *dst
        if fd.is_padding_frame(src, 0):
            # the header alone: replay re-creates the body with append_padding
            _write_fully(self.fd, src, fd.HEADER_LENGTH, self.segment_offset)
        elif self.checksum == CHECKSUM_NONE:
            _write_fully(self.fd, src, length, self.segment_offset)
        else:
            if length > self.scratch_length:
                raise InvalidArgumentError(f"block of {length} bytes exceeds the writer's {self.scratch_length}")
            dst = self.scratch
            memcpy(dst, src, <size_t>length)
            pos = 0
            while pos < length:
                frame_length = fd.frame_i32(dst + pos, fd.FRAME_LENGTH_FIELD_OFFSET)
                if frame_length < fd.HEADER_LENGTH:
                    break
                aligned = fd.align_i32(frame_length, fd.FRAME_ALIGNMENT)
                if aligned > length - pos:
                    break
                if not fd.is_padding_frame(dst, pos):
                    (<int32_t *>(dst + pos + fd.SESSION_ID_FIELD_OFFSET))[0] = <int32_t>crc(
                        self.checksum, dst + pos + fd.HEADER_LENGTH, aligned - fd.HEADER_LENGTH)
                pos += aligned
            _write_fully(self.fd, dst, length, self.segment_offset)
        if self.sync_level > 0:
            self.force()
        self.segment_offset += length

    def force(self):
        """fdatasync (level 1) or fsync (level 2) the open segment."""
        cdef int rc
        cdef int file = self.fd
        if file < 0:
            return
        with nogil:
            rc = fsync(file) if self.sync_level >= 2 else fdatasync(file)
        if rc != 0:
            raise OSError(errno, os.strerror(errno))


@cython.final
cdef class ReplayBlockReader:
    """Reads frames of a mapped segment into a replay publication (one ``replay_block`` per duty cycle)."""

    def __cinit__(self, Py_ssize_t max_block_length):
        if max_block_length < fd.HEADER_LENGTH:
            raise InvalidArgumentError(f"max block length {max_block_length} below a frame header")
        self.max_block_length = max_block_length
        self.scratch = bytearray(max_block_length)

    def replay_block(self, AtomicBuffer segment, int64_t file_offset, int32_t term_length, int64_t available,
                     publication, int32_t session_id, int32_t stream_id, int verify_checksum=CHECKSUM_NONE):
        """Offer the frames at ``segment[file_offset:]``, at most ``available`` bytes (the caller keeps that within
        the term and the recorded limit), found by the term reader's block scan over the mapped term. Returns the
        bytes consumed (> 0), 0 when no whole frame is there yet, or the publication's negative status (nothing
        consumed: try again later).

        ``verify_checksum`` (a CHECKSUM_* kind) checks each DATA frame's stored checksum first. Raises
        CorruptFileError (segment path and offset) for a frame that cannot be a recorded frame or whose checksum does
        not match.
        """
        if verify_checksum != CHECKSUM_NONE:
            _check_kind(verify_checksum)
        if term_length < fd.FRAME_ALIGNMENT or term_length & (term_length - 1):
            raise InvalidArgumentError(f"term length {term_length} is not a power of two")
        if file_offset < 0 or available < 0 or file_offset + available > segment.length:
            raise InvalidArgumentError(f"range [{file_offset}, +{available}) outside a {segment.length}-byte segment")
        # segments start on term boundaries, so the term of this offset is mapped whole
        cdef int32_t term_offset = <int32_t>(file_offset & (term_length - 1))
        if file_offset - term_offset + term_length > segment.length:
            raise InvalidArgumentError(f"term at {file_offset - term_offset} runs past the segment")
        cdef const uint8_t *term = segment.data + (file_offset - term_offset)
        cdef int64_t budget = available if available < self.max_block_length else self.max_block_length
        if budget > term_length - term_offset:
            budget = term_length - term_offset
        cdef int32_t limit_offset = term_offset + <int32_t>budget
        cdef int32_t resulting = term_block_scan(term, term_offset, limit_offset, term_length)
        cdef int32_t length = resulting - term_offset
        cdef int32_t frame_length = load_acquire_i32(<const int32_t *>(term + term_offset))
        cdef int64_t result
        if length == 0:
            if frame_length > 0 and frame_length_is_corrupt(frame_length, term_offset, term_length):
                raise CorruptFileError(f"frame length {frame_length} at term offset {term_offset} cannot be a "
                                       f"recorded frame", path=segment.path, offset=file_offset)
            if frame_length > 0 and fd.align_i32(frame_length, fd.FRAME_ALIGNMENT) > self.max_block_length:
                raise CorruptFileError(f"frame of {frame_length} bytes exceeds the replay block length "
                                       f"{self.max_block_length}", path=segment.path, offset=file_offset)
            return 0
        if fd.is_padding_frame(term, term_offset):
            result = publication.append_padding(frame_length - fd.HEADER_LENGTH)
            return length if result > 0 else result
        cdef uint8_t *dst = self.scratch
        memcpy(dst, term + term_offset, <size_t>length)
        cdef int32_t p = 0
        cdef int32_t aligned, stored
        while p < length:
            aligned = fd.align_i32(fd.frame_i32(dst + p, fd.FRAME_LENGTH_FIELD_OFFSET), fd.FRAME_ALIGNMENT)
            if verify_checksum != CHECKSUM_NONE:
                stored = fd.frame_i32(dst + p, fd.SESSION_ID_FIELD_OFFSET)
                if stored != <int32_t>crc(verify_checksum, dst + p + fd.HEADER_LENGTH, aligned - fd.HEADER_LENGTH):
                    raise CorruptFileError(f"frame checksum mismatch (stored {stored})", path=segment.path,
                                           offset=file_offset + p)
            (<int32_t *>(dst + p + fd.SESSION_ID_FIELD_OFFSET))[0] = session_id
            (<int32_t *>(dst + p + fd.STREAM_ID_FIELD_OFFSET))[0] = stream_id
            p += aligned
        result = publication.offer_block(self.scratch, 0, length)
        return length if result > 0 else result
