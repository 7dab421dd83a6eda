# SPDX-License-Identifier: Apache-2.0
# Read side of a log: the reusable Header flyweight, the TermReader (subscriber poll loops) and the
# nogil frame-walking kernels other modules (Image, driver, IPC consumers) inline from here.
# Port of TermReader.read and Image's poll loops: acquire-load frame_length, <= 0 means nothing yet.
cimport cython
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t
from aeron._core.atomic_buffer cimport AtomicBuffer
from aeron._core.logbuffer cimport LogBuffers
from aeron._core.frame_descriptor cimport (FRAME_ALIGNMENT, HEADER_LENGTH, align_i32, frame_length_volatile,
                                           is_padding_frame)

cdef enum:
    # controlled poll actions (C values from aeronc.h)
    CONTROLLED_ACTION_ABORT = 1      # undo this fragment and stop; it is redelivered
    CONTROLLED_ACTION_BREAK = 2      # stop after this fragment
    CONTROLLED_ACTION_COMMIT = 3     # store the position through this fragment now, continue
    CONTROLLED_ACTION_CONTINUE = 4   # continue; position stored at the end of the poll

    # results of term_reader_next_frame besides a positive frame length
    TERM_READ_NOTHING = 0            # no committed frame before the limit
    TERM_READ_CORRUPT = -1           # frame at *offset has a length that cannot be right


# -- kernels ---------------------------------------------------------------------------------------

cdef inline bint frame_length_is_corrupt(int32_t frame_length, int32_t offset, int32_t capacity) noexcept nogil:
    # A committed frame always carries its 32-byte header and ends inside its term. Checking this
    # before aligning also keeps align_i32 away from int32 overflow.
    return frame_length < HEADER_LENGTH or frame_length > capacity - offset


cdef inline int32_t term_reader_next_frame(const uint8_t *term, int32_t *offset, int32_t limit_offset,
                                           int32_t capacity) noexcept nogil:
    """Skip PAD frames from *offset (advancing it) while *offset < limit_offset.

    Returns the length of the committed DATA frame now at *offset (not consumed), TERM_READ_NOTHING
    when the next slot is not committed (length <= 0) or the limit is reached, TERM_READ_CORRUPT when
    the frame at *offset would run past the term (or is shorter than a header).
    """
    cdef int32_t off = offset[0]
    cdef int32_t frame_length
    while off < limit_offset:
        frame_length = frame_length_volatile(term, off)
        if frame_length <= 0:
            break
        if frame_length_is_corrupt(frame_length, off, capacity):
            offset[0] = off
            return TERM_READ_CORRUPT
        if is_padding_frame(term, off):
            off += align_i32(frame_length, FRAME_ALIGNMENT)
            continue
        offset[0] = off
        return frame_length
    offset[0] = off
    return TERM_READ_NOTHING


cdef inline int32_t term_block_scan(const uint8_t *term, int32_t term_offset, int32_t limit_offset,
                                    int32_t capacity) noexcept nogil:
    """Port of TermBlockScanner.scan: the end of the run of whole frames from term_offset below
    limit_offset. Stops before an uncommitted frame, a frame that would pass the limit, or a PAD
    (a PAD at term_offset itself is returned alone). Deviation: also stops before a corrupt frame."""
    cdef int32_t offset = term_offset
    cdef int32_t frame_length, aligned
    while offset < limit_offset:
        frame_length = frame_length_volatile(term, offset)
        if frame_length <= 0 or frame_length_is_corrupt(frame_length, offset, capacity):
            break
        aligned = align_i32(frame_length, FRAME_ALIGNMENT)
        if is_padding_frame(term, offset):
            if offset == term_offset:
                offset += aligned
            break
        if aligned > limit_offset - offset:
            break
        offset += aligned
    return offset


# C-level fragment callback for consumers that stay in C: return 0 to continue, non-zero to stop
# after this fragment.
ctypedef int (*term_fragment_fn)(void *ctx, const uint8_t *term, int32_t frame_offset,
                                 int32_t frame_length) noexcept nogil


cdef inline int64_t term_reader_read(const uint8_t *term, int32_t term_offset, int32_t limit_offset,
                                     int32_t capacity, int32_t fragment_limit, term_fragment_fn fn,
                                     void *ctx) noexcept nogil:
    """Port of TermReader.read for C callers: deliver up to fragment_limit DATA frames to fn.

    Returns (offset << 32) | fragments_read (Java's pack). A corrupt frame stops the read before it.
    """
    cdef int32_t offset = term_offset
    cdef int32_t fragments = 0
    cdef int32_t frame_length
    cdef int rc
    while fragments < fragment_limit:
        frame_length = term_reader_next_frame(term, &offset, limit_offset, capacity)
        if frame_length <= 0:
            break
        fragments += 1
        rc = fn(ctx, term, offset, frame_length)
        offset += align_i32(frame_length, FRAME_ALIGNMENT)
        if rc != 0:
            break
    return ((<int64_t>offset) << 32) | <int64_t>(<uint32_t>fragments)



# -- Header ----------------------------------------------------------------------------------------

@cython.final
cdef class Header:
    cdef AtomicBuffer _buffer                # memory of the current frame: a term view or a 32-byte store
    cdef int32_t _offset                     # frame start in _buffer
    cdef int32_t _initial_term_id            # of the stream, for position()
    cdef int32_t _position_bits_to_shift     # log2(term length), for position()
    cdef int32_t _fragmented_frame_length    # span of an assembled message, -1 for a single frame
    cdef public object context               # free slot for the owner (Java Header.context)

    cdef const uint8_t *frame(self) except NULL
    cdef int32_t next_term_offset_c(self) except? -1


# -- TermReader -----------------------------------------------------------------------------------

cdef class TermReader:
    cdef LogBuffers log                      # the mapped log (pinned by term_buffers)
    cdef tuple term_buffers                  # 3 long-lived AtomicBuffer views, one per partition
    cdef uint8_t *terms[3]                   # partition starts (valid while term_buffers are open)
    cdef uint8_t *meta                       # metadata section of the log
    cdef int32_t _term_length                # partition length (power of two)
    cdef int32_t term_length_mask            # _term_length - 1
    cdef int32_t _position_bits_to_shift     # log2(_term_length)
    cdef int32_t _initial_term_id            # from the log metadata
    cdef int32_t session_id                  # from the log's default frame header (block handlers)
    cdef AtomicBuffer position_view          # 8-byte window on the sub-pos counter, or None
    cdef int64_t *position_ptr               # where the subscriber position lives
    cdef int64_t _own_position               # the position when no counter is given
    cdef Header header                       # re-pointed per fragment, never reallocated
    cdef bint closed                         # after close() every use raises IllegalStateError
    cdef bint retired                        # taken out of service: polls deliver nothing, memory stays

    cdef int check_open(self) except -1
    cdef AtomicBuffer open_term_buffer(self, int32_t index)
    cdef int read(self, object handler, int64_t limit_position, int fragment_limit,
                  bint controlled) except -1
    cdef int corrupt(self, int32_t index, int32_t term_offset, int64_t position) except -1
