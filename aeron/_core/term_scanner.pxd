# SPDX-License-Identifier: Apache-2.0
# Scanners and repair tools over one term partition, for the sender (batch scan), the receiver
# (rebuild, gap scan, gap fill), the conductor (unblock, clean): TermScanner, TermRebuilder, TermGapScanner,
# TermGapFiller, TermUnblocker, cleanBufferTo. Kernels are header-only so the driver inlines them; bounds are
# the caller's job (the Python wrappers in term_scanner.pyx check them once).
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t
from libc.string cimport memcpy, memset
from aeron._core.atomic cimport load_acquire_i32, store_release_i32, store_release_i64
from aeron._core.frame_descriptor cimport (FRAME_ALIGNMENT, HEADER_LENGTH, HDR_TYPE_PAD, TYPE_FIELD_OFFSET,
                                           TERM_OFFSET_FIELD_OFFSET, TERM_ID_FIELD_OFFSET, align_i64,
                                           frame_length_volatile, is_padding_frame)
from aeron._core.logbuffer cimport LogBuffers
from aeron._core.logbuffer_descriptor cimport LOG_DEFAULT_FRAME_HEADER_OFFSET

cdef enum:
    # TermUnblocker outcomes (aeron_term_unblocker_status_t order)
    TERM_UNBLOCKER_NO_ACTION = 0
    TERM_UNBLOCKER_UNBLOCKED = 1
    TERM_UNBLOCKER_UNBLOCKED_TO_END = 2


cdef inline int32_t term_scanner_scan_for_availability(const uint8_t *buffer, int32_t term_length_left,
                                                       int32_t max_length, int32_t *padding) noexcept nogil:
    """Port of TermScanner.scanForAvailability from ``buffer`` (the scan start in the term).

    Returns the bytes available to send as one batch, negative when a lone first frame exceeds
    the limit; *padding = bytes of a trailing PAD to skip (only its header counts as available).
    Deviation for corrupt terms only: lengths are summed in 64 bits and a PAD's padding is capped
    at the end of the term, so no caller advances past the term on garbage.
    """
    cdef int32_t limit = max_length if max_length < term_length_left else term_length_left
    cdef int32_t available = 0
    cdef int32_t frame_length
    cdef int64_t aligned
    padding[0] = 0
    while True:
        frame_length = frame_length_volatile(buffer, available)
        if frame_length <= 0:
            break
        aligned = align_i64(frame_length, FRAME_ALIGNMENT)
        if is_padding_frame(buffer, available):
            if aligned - HEADER_LENGTH > term_length_left - available - HEADER_LENGTH:
                aligned = term_length_left - available
            padding[0] = <int32_t>(aligned - HEADER_LENGTH)
            aligned = HEADER_LENGTH
        if available + aligned > limit:
            # does not fit: a lone frame reports its (negated) length, otherwise back it out
            if available == 0:
                available = -<int32_t>(aligned if aligned < 0x7FFFFFE0 else 0x7FFFFFE0)
            padding[0] = 0
            break
        available += <int32_t>aligned
        if padding[0] != 0 or available >= limit:
            break
    return available


cdef inline bint term_rebuilder_insert(uint8_t *dest, const uint8_t *src, int32_t length) noexcept nogil:
    """Port of TermRebuilder.insert: copy a received datagram (length >= 32) into the term at
    ``dest`` unless that slot is already filled. Payload first, header words 3, 2, 1, then a
    64-bit release store of word 0 (length, version, flags, type) publishes the whole batch."""
    if load_acquire_i32(<const int32_t *>dest) != 0:
        return False
    memcpy(dest + HEADER_LENGTH, src + HEADER_LENGTH, <size_t>(length - HEADER_LENGTH))
    memcpy(dest + 24, src + 24, 8)
    memcpy(dest + 16, src + 16, 8)
    memcpy(dest + 8, src + 8, 8)
    cdef int64_t word0
    memcpy(&word0, src, 8)
    store_release_i64(<int64_t *>dest, word0)
    return True


cdef inline int32_t term_gap_scanner_scan_for_gap(const uint8_t *term, int32_t term_offset, int32_t limit_offset,
                                                  int32_t capacity, int32_t *gap_length) noexcept nogil:
    """Port of TermGapScanner.scanForGap: returns the end of contiguous data from term_offset
    (the gap start) and sets *gap_length (0 when there is no gap before limit_offset).
    Corrupt frame lengths are summed in 64 bits and the result capped at capacity."""
    cdef int64_t offset = term_offset
    cdef int32_t frame_length
    gap_length[0] = 0
    while True:
        frame_length = frame_length_volatile(term, <int32_t>offset)
        if frame_length <= 0:
            break
        offset += align_i64(frame_length, FRAME_ALIGNMENT)
        if offset >= limit_offset:
            break
    if offset > capacity:
        offset = capacity
    cdef int32_t gap_begin = <int32_t>offset
    cdef int32_t scan
    if gap_begin < limit_offset:
        scan = gap_begin + HEADER_LENGTH
        while scan < limit_offset:
            if frame_length_volatile(term, scan) != 0:
                break
            scan += HEADER_LENGTH
        gap_length[0] = scan - gap_begin
    return gap_begin


cdef inline void term_write_pad_from_default(const uint8_t *meta, uint8_t *term, int32_t term_offset,
                                             int32_t term_id, int32_t frame_length) noexcept nogil:
    # Shared by the gap filler and the unblocker: default header, then type PAD, this slot's term
    # offset and term id, and the length last with release so readers see a complete PAD.
    memcpy(term + term_offset, meta + LOG_DEFAULT_FRAME_HEADER_OFFSET, HEADER_LENGTH)
    cdef uint8_t *frame = term + term_offset
    cdef uint16_t pad_type = HDR_TYPE_PAD
    memcpy(frame + TYPE_FIELD_OFFSET, &pad_type, 2)
    memcpy(frame + TERM_OFFSET_FIELD_OFFSET, &term_offset, 4)
    memcpy(frame + TERM_ID_FIELD_OFFSET, &term_id, 4)
    store_release_i32(<int32_t *>frame, frame_length)



cdef inline bint term_gap_filler_try_fill_gap(const uint8_t *meta, uint8_t *term, int32_t term_id,
                                              int32_t gap_offset, int32_t gap_length) noexcept nogil:
    """Port of TermGapFiller.tryFillGap: PAD the gap if every 32-byte slot in it is still empty."""
    cdef int32_t offset = gap_offset + gap_length - FRAME_ALIGNMENT
    while offset >= gap_offset:
        if load_acquire_i32(<const int32_t *>(term + offset)) != 0:
            return False
        offset -= FRAME_ALIGNMENT
    term_write_pad_from_default(meta, term, gap_offset, term_id, gap_length)
    return True


cdef inline int term_unblocker_unblock(const uint8_t *meta, uint8_t *term, int32_t term_length,
                                       int32_t blocked_offset, int32_t tail_offset,
                                       int32_t term_id) noexcept nogil:
    """Port of TermUnblocker.unblock; returns a TERM_UNBLOCKER_* status."""
    cdef int32_t frame_length = frame_length_volatile(term, blocked_offset)
    cdef int32_t current, i
    cdef bint zeroed
    if frame_length < 0:
        # Deviation: a claim that would run past the term (corrupt) is left alone.
        if frame_length < -(term_length - blocked_offset):
            return TERM_UNBLOCKER_NO_ACTION
        term_write_pad_from_default(meta, term, blocked_offset, term_id, -frame_length)
        return TERM_UNBLOCKER_UNBLOCKED
    if frame_length != 0:
        return TERM_UNBLOCKER_NO_ACTION
    cdef int status = TERM_UNBLOCKER_NO_ACTION
    current = blocked_offset + FRAME_ALIGNMENT
    while current < tail_offset:
        if frame_length_volatile(term, current) != 0:
            # only pad if the hole is still all zero (a late writer may have filled part of it)
            zeroed = True
            i = current - FRAME_ALIGNMENT
            while i >= blocked_offset:
                if frame_length_volatile(term, i) != 0:
                    zeroed = False
                    break
                i -= FRAME_ALIGNMENT
            if zeroed:
                term_write_pad_from_default(meta, term, blocked_offset, term_id, current - blocked_offset)
                status = TERM_UNBLOCKER_UNBLOCKED
            break
        current += FRAME_ALIGNMENT
    if current == term_length:
        if frame_length_volatile(term, blocked_offset) == 0:
            term_write_pad_from_default(meta, term, blocked_offset, term_id, current - blocked_offset)
            status = TERM_UNBLOCKER_UNBLOCKED_TO_END
    return status


cdef inline void term_clean(uint8_t *term, int32_t offset, int32_t length) noexcept nogil:
    """Zero [offset + 8, offset + length), then release-store 0 over the first 8 bytes so the
    frame-length word becomes 0 last. Requires length >= 8 and offset 8-aligned."""
    memset(term + offset + 8, 0, <size_t>(length - 8))
    store_release_i64(<int64_t *>(term + offset), 0)


cdef inline int32_t data_packet_validate(const uint8_t *packet, int32_t length, int32_t term_offset,
                                         int32_t term_length) noexcept nogil:
    """Port of aeron_publication_image_validate_packet: every frame of a received DATA/PAD datagram
    is DATA or PAD, sits at the running term offset and stays inside the term; trailing bytes are allowed
    only after a PAD. Returns the bytes the datagram covers in the term (0 for a heartbeat), or -1."""
    cdef int32_t offset = 0
    cdef int32_t running = term_offset
    cdef int32_t frame_length, aligned
    cdef uint16_t frame_type
    if term_offset < 0 or term_offset >= term_length or term_offset & (FRAME_ALIGNMENT - 1):
        return -1
    while offset + HEADER_LENGTH <= length:
        frame_length = (<const int32_t *>(packet + offset))[0]
        frame_type = (<const uint16_t *>(packet + offset + TYPE_FIELD_OFFSET))[0]
        if (frame_type != HDR_TYPE_PAD and frame_type != 1) or \
                (<const int32_t *>(packet + offset + TERM_OFFSET_FIELD_OFFSET))[0] != running:
            return -1
        if frame_length == 0 and length == HEADER_LENGTH:
            return 0                                  # heartbeat
        if frame_type == HDR_TYPE_PAD:
            if frame_length < HEADER_LENGTH or frame_length > term_length - running:
                return -1
            return length                             # a PAD ends the datagram: only its header travels
        if frame_length < HEADER_LENGTH:
            return -1
        aligned = <int32_t>align_i64(frame_length, FRAME_ALIGNMENT)
        if aligned > length - offset or aligned > term_length - running:
            return -1
        offset += aligned
        running += aligned
    return length if offset == length else -1


cdef class LogCleaner:
    cdef LogBuffers log
    cdef public int64_t clean_position
    cdef int populated                  # bit i: partition i mapped here
    cdef int64_t clean(self, int64_t target) noexcept nogil     # clean_to's loop: the log must be open
