# SPDX-License-Identifier: Apache-2.0
# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Python face of the term scanners (kernels live in term_scanner.pxd).

Ports of TermScanner, TermRebuilder, TermGapScanner, TermGapFiller, TermUnblocker and
LogBufferUnblocker. Every wrapper checks offsets and lengths
once, then calls the nogil kernel; bad arguments raise InvalidArgumentError / OutOfBoundsError.
"""
from cpython.buffer cimport PyBUF_ANY_CONTIGUOUS, PyObject_GetBuffer, PyBuffer_Release
from libc.stdint cimport int32_t, int64_t, uint8_t

from aeron._core.atomic cimport load_acquire_i64
from aeron._core.atomic_buffer cimport AtomicBuffer, check_bounds
from aeron._core.logbuffer cimport LogBuffers
from aeron._core cimport frame_descriptor as fd
from aeron._core cimport logbuffer_descriptor as ld
from aeron.common.errors import InvalidArgumentError

NO_ACTION = TERM_UNBLOCKER_NO_ACTION
UNBLOCKED = TERM_UNBLOCKER_UNBLOCKED
UNBLOCKED_TO_END = TERM_UNBLOCKER_UNBLOCKED_TO_END

# the default frame header must be readable in a metadata buffer
cdef Py_ssize_t _META_MIN = ld.LOG_DEFAULT_FRAME_HEADER_OFFSET + fd.HEADER_LENGTH


cdef int _check_term(AtomicBuffer term) except -1:
    term.check(0, 0)
    if term.length < fd.HEADER_LENGTH or term.length > ld.TERM_MAX_LENGTH or term.length % fd.FRAME_ALIGNMENT:
        raise InvalidArgumentError(f"term buffer length {term.length} is not a multiple of 32 in [32, 1 GiB]")
    if (<size_t>term.data) % 8 != 0:
        raise InvalidArgumentError("term buffer is not 8-byte aligned")
    return 0


cdef int _check_frame_offset(AtomicBuffer term, int64_t offset, str what) except -1:
    if offset < 0 or offset >= term.length or offset % fd.FRAME_ALIGNMENT:
        raise InvalidArgumentError(f"{what} {offset} must be 32-aligned and in [0, {term.length})")
    return 0


cdef const uint8_t *_meta_ptr(object meta) except NULL:
    cdef LogBuffers log
    cdef AtomicBuffer buf
    if isinstance(meta, LogBuffers):
        log = <LogBuffers>meta
        log.check_open()
        return log.meta
    if isinstance(meta, AtomicBuffer):
        buf = <AtomicBuffer>meta
        buf.check(0, _META_MIN)
        return buf.data
    raise InvalidArgumentError(f"log metadata must be a LogBuffers or an AtomicBuffer, not {type(meta).__name__}")


def scan_for_availability(AtomicBuffer term not None, int32_t offset, int32_t max_length):
    """Port of TermScanner.scanForAvailability.

    Returns ``(available, padding)``: bytes to send from ``offset`` as one batch (negative when the
    first frame alone exceeds ``max_length``) and the bytes of a trailing PAD to skip.
    """
    _check_term(term)
    _check_frame_offset(term, offset, "offset")
    if max_length < 0:
        raise InvalidArgumentError(f"max_length must be >= 0, got {max_length}")
    cdef int32_t padding = 0
    cdef int32_t available
    if max_length == 0:
        return 0, 0
    available = term_scanner_scan_for_availability(term.data + offset, <int32_t>term.length - offset,
                                                   max_length, &padding)
    return available, padding


def validate_data_packet(packet, Py_ssize_t length, int32_t term_offset, int32_t term_length):
    """Check a received DATA/PAD datagram's frames (aeron_publication_image_validate_packet) before it is inserted.

    Returns the term bytes it covers (``length``), 0 for a heartbeat, -1 when it is invalid (count and drop it).
    """
    cdef Py_buffer view
    PyObject_GetBuffer(packet, &view, PyBUF_ANY_CONTIGUOUS)
    try:
        if length < 0 or length > view.len or length > 0x7FFFFFFF:
            raise InvalidArgumentError(f"length {length} must be in [0, {view.len}]")
        if term_length <= 0:
            raise InvalidArgumentError(f"term length must be positive, got {term_length}")
        # at most an MTU of frames: cheaper than releasing the GIL
        return data_packet_validate(<const uint8_t *>view.buf, <int32_t>length, term_offset, term_length)
    finally:
        PyBuffer_Release(&view)


cdef class TermRebuilder:
    """Port of TermRebuilder: insert received datagrams into a term."""

    @staticmethod
    def insert(AtomicBuffer term not None, int32_t term_offset, packet, Py_ssize_t length=-1):
        """Copy ``length`` bytes of ``packet`` (a datagram of whole frames) to ``term_offset`` unless
        that slot already holds a frame. Returns True when copied."""
        _check_term(term)
        _check_frame_offset(term, term_offset, "term_offset")
        cdef Py_buffer view
        PyObject_GetBuffer(packet, &view, PyBUF_ANY_CONTIGUOUS)
        try:
            if length < 0:
                length = view.len
            if length < fd.HEADER_LENGTH or length > view.len:
                raise InvalidArgumentError(f"packet length {length} must be in [32, {view.len}]")
            check_bounds(term_offset, length, term.length)
            return term_rebuilder_insert(term.data + term_offset, <const uint8_t *>view.buf, <int32_t>length)
        finally:
            PyBuffer_Release(&view)


cdef class TermGapScanner:
    """Port of TermGapScanner."""

    @staticmethod
    def scan_for_gap(AtomicBuffer term not None, int32_t term_id, int32_t rebuild_offset, int32_t limit_offset,
                     handler):
        """Walk contiguous frames from ``rebuild_offset``; on the first hole below ``limit_offset``
        call ``handler(term_id, gap_offset, gap_length)``. Returns the gap start (end of
        contiguous data)."""
        _check_term(term)
        _check_frame_offset(term, rebuild_offset, "rebuild_offset")
        if limit_offset < rebuild_offset or limit_offset > term.length:
            raise InvalidArgumentError(f"limit_offset {limit_offset} must be in [{rebuild_offset}, {term.length}]")
        cdef int32_t gap_length = 0
        cdef int32_t gap_begin = term_gap_scanner_scan_for_gap(term.data, rebuild_offset, limit_offset,
                                                               <int32_t>term.length, &gap_length)
        if gap_length > 0:
            handler(term_id, gap_begin, gap_length)
        return gap_begin


cdef class TermGapFiller:
    """Port of TermGapFiller (unreliable images)."""

    @staticmethod
    def try_fill_gap(meta, AtomicBuffer term not None, int32_t term_id, int32_t gap_offset, int32_t gap_length):
        """Write a PAD (from the log's default header) over the gap if it is still all empty.

        ``meta`` is the LogBuffers or its metadata AtomicBuffer. Returns True when filled.
        """
        cdef const uint8_t *m = _meta_ptr(meta)
        _check_term(term)
        _check_frame_offset(term, gap_offset, "gap_offset")
        if gap_length <= 0 or gap_length % fd.FRAME_ALIGNMENT or gap_length > term.length - gap_offset:
            raise InvalidArgumentError(f"gap_length {gap_length} must be a positive multiple of 32 inside the term")
        return term_gap_filler_try_fill_gap(m, term.data, term_id, gap_offset, gap_length)


cdef class TermUnblocker:
    """Port of TermUnblocker: repair a term blocked by a claim that was never committed."""

    NO_ACTION = TERM_UNBLOCKER_NO_ACTION
    UNBLOCKED = TERM_UNBLOCKER_UNBLOCKED
    UNBLOCKED_TO_END = TERM_UNBLOCKER_UNBLOCKED_TO_END

    @staticmethod
    def unblock(meta, AtomicBuffer term not None, int32_t blocked_offset, int32_t tail_offset, int32_t term_id):
        """Returns NO_ACTION, UNBLOCKED or UNBLOCKED_TO_END (the caller then rotates the log)."""
        cdef const uint8_t *m = _meta_ptr(meta)
        _check_term(term)
        _check_frame_offset(term, blocked_offset, "blocked_offset")
        if tail_offset < 0 or tail_offset > term.length:
            raise InvalidArgumentError(f"tail_offset {tail_offset} must be in [0, {term.length}]")
        return term_unblocker_unblock(m, term.data, <int32_t>term.length, blocked_offset, tail_offset, term_id)


cdef class LogBufferUnblocker:
    """Port of LogBufferUnblocker."""

    @staticmethod
    def unblock(LogBuffers log not None, int64_t blocked_position):
        """Unblock the log at ``blocked_position`` (a publisher's stuck position). Returns True when
        it padded a frame or rotated the log."""
        log.check_open()
        if blocked_position < 0 or blocked_position % fd.FRAME_ALIGNMENT:
            raise InvalidArgumentError(f"blocked position {blocked_position} must be >= 0 and 32-aligned")
        cdef int32_t shift = log.position_bits_to_shift
        cdef int32_t term_length = log.term_length
        cdef int32_t blocked_term_count = <int32_t>(blocked_position >> shift)
        cdef int32_t blocked_offset = <int32_t>(blocked_position & (term_length - 1))
        cdef int32_t blocked_index = ld.index_by_term_count(blocked_term_count)
        cdef int32_t active_term_count = ld.active_term_count_volatile(log.meta)
        cdef int64_t raw_tail
        if active_term_count == blocked_term_count - 1 and blocked_offset == 0:
            # the blocked position starts a term nobody rotated to: just rotate
            raw_tail = ld.raw_tail_volatile(log.meta, ld.index_by_term_count(active_term_count))
            ld.rotate_log(log.meta, active_term_count, ld.term_id_of(raw_tail))
            return True
        raw_tail = ld.raw_tail_volatile(log.meta, blocked_index)
        cdef int32_t term_id = ld.term_id_of(raw_tail)
        cdef int32_t tail_offset = ld.term_offset_of(raw_tail, term_length)
        cdef int status = term_unblocker_unblock(log.meta, log.terms[blocked_index], term_length,
                                                 blocked_offset, tail_offset, term_id)
        if status == TERM_UNBLOCKER_UNBLOCKED_TO_END:
            ld.rotate_log(log.meta, blocked_term_count, term_id)
            return True
        return status == TERM_UNBLOCKER_UNBLOCKED


def clean_term(AtomicBuffer term not None, Py_ssize_t offset, Py_ssize_t length):
    """Zero ``[offset, offset + length)`` of a term so the length word turns 0 last."""
    _check_term(term)
    term.check(offset, length)
    if length < 8:
        raise InvalidArgumentError(f"clean length must be >= 8, got {length}")
    if (<size_t>(term.data + offset)) % 8 != 0:
        raise InvalidArgumentError(f"clean offset {offset} is not 8-byte aligned")
    term_clean(term.data, <int32_t>offset, <int32_t>length)


cdef extern from "sys/mman.h" nogil:
    int madvise(void *addr, size_t length, int advice)

cdef enum:
    _MADV_POPULATE_WRITE = 23       # Linux 5.14; EINVAL before, when the memset's page faults map the pages instead
    _PAGE_SIZE = 4096


cdef class LogCleaner:
    """The driver's cleaning of a log's consumed terms (``cleanBufferTo``), the loop in one compiled call.

    The first clean in each partition first maps the rest of that partition into this process with one
    ``madvise(MADV_POPULATE_WRITE)``: the publisher (another process) wrote those pages, and a memset into a mapping
    that has never touched them takes a page fault per 4 KiB page (about twice the cost of mapping them in one call,
    and ten times that of the memset itself). Cleaning only ever reaches into a partition once the consumers are a
    whole term past that point, so the partition's rest has been written: nothing is mapped that would not be.
    """
    def __cinit__(self, LogBuffers log not None, int64_t clean_position):
        log.check_open()
        self.log = log
        self.clean_position = clean_position

    def clean_to(self, int64_t target):
        """Zero from the clean position up to ``target`` (the length word of each range last), a term boundary at a
        time; returns the bytes cleaned. Stops short of a range under 8 bytes, as Aeron does."""
        self.log.check_open()
        cdef int64_t cleaned
        with nogil:
            cleaned = self.clean(target)
        return cleaned

    cdef int64_t clean(self, int64_t target) noexcept nogil:
        cdef int64_t position = self.clean_position, start = position
        cdef int32_t term_length = self.log.term_length, offset, length
        cdef int index
        cdef uint8_t *term
        cdef size_t begin
        while position < target:
            offset = <int32_t>(position & (term_length - 1))
            length = <int32_t>min(target - position, <int64_t>(term_length - offset))
            if length < 8:
                break
            index = <int>((position >> self.log.position_bits_to_shift) % 3)
            term = self.log.terms[index]
            if not self.populated & (1 << index):
                self.populated |= 1 << index
                begin = (<size_t>(term + offset)) & ~(<size_t>_PAGE_SIZE - 1)
                madvise(<void *>begin, <size_t>(term + term_length) - begin, _MADV_POPULATE_WRITE)
            term_clean(term, offset, length)
            position += length
        self.clean_position = position
        return position - start
