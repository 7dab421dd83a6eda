# SPDX-License-Identifier: Apache-2.0
# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""LossDetector: finds the first gap between the rebuild position and the high-water mark and decides when to
NAK it (aeron_loss_detector.c). A gap is the active one only while its term, offset
and length are all the same; any other (a new gap, or the active one shrunk or grown by data) starts its own timer
and is a new loss for congestion control. What the loss report records is decided when a gap is NAKed
(``report_loss``): the bytes past the range last reported, as aeron_publication_image_on_gap_detected.

Its state is compiled so that the receiver's rebuild pass (aeron._core.rebuild_pass) can scan and NAK without Python
for an image with fixed delays; ``scan`` is the same decision for the receiver's Python path, with the callbacks.
The delay generator is any object with ``first()`` and ``retry()`` (nanoseconds); one with ``static_delays``, a
(first, retry) pair, has its delays read once and used from compiled code.
"""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t

from aeron._core.atomic_buffer cimport AtomicBuffer
from aeron._core.term_scanner cimport term_gap_scanner_scan_for_gap

from aeron.common.errors import InvalidArgumentError


cdef class LossDetector:
    """``scan(term, term_length, rebuild_term_id, rebuild_offset, hwm_term_id, hwm_offset, now_ns)`` returns the
    offset where contiguous data ends and whether a new gap was found; it calls ``on_nak(term_id, term_offset,
    length)`` when the gap's timer expires and ``on_loss(term_id, term_offset, length)`` for every new gap
    (congestion control)."""

    def __init__(self, delay, on_nak, on_loss=None):
        self.delay = delay
        self._on_nak = on_nak
        self._on_loss = on_loss
        self.active_term_offset = -1
        delays = getattr(delay, "static_delays", None)
        if delays is not None:
            first, retry = delays
            if first < 0 or retry < 0:
                raise InvalidArgumentError(f"NAK delays must be >= 0, got {first} and {retry}")
            self.static = True
            self.first_delay_ns = first
            self.retry_delay_ns = retry

    cdef int32_t find_gap(self, const uint8_t *term, int32_t term_length, int32_t rebuild_term_id,
                          int32_t rebuild_offset, int32_t hwm_term_id, int32_t hwm_offset,
                          int32_t *gap_length) noexcept nogil:
        """Where contiguous data from the rebuild offset ends in its term, and the gap's length there (0: none)."""
        cdef uint32_t term_delta = <uint32_t>hwm_term_id - <uint32_t>rebuild_term_id
        gap_length[0] = 0
        if term_delta >= 0x80000000u or (term_delta == 0 and rebuild_offset >= hwm_offset):
            # the rebuild position at or past the high-water mark: nothing to scan. It can be past it: a term-ending
            # PAD arrives as a 32-byte datagram, so the hwm stops 32 bytes into the padding while the scan steps over
            # the whole PAD frame into the next term (as in the C driver, which compares positions here)
            return rebuild_offset
        return term_gap_scanner_scan_for_gap(term, rebuild_offset, hwm_offset if term_delta == 0 else term_length,
                                             term_length, gap_length)

    cdef bint is_new(self, int32_t term_id, int32_t gap_offset, int32_t gap_length) noexcept nogil:
        # only the very same gap keeps its timer (aeron_loss_detector_gaps_match)
        return not (term_id == self.active_term_id and gap_offset == self.active_term_offset and
                    gap_length == self.active_length)

    cdef int64_t loss_to_report(self, int32_t term_id, int32_t term_offset, int32_t length) noexcept nogil:
        """The bytes of a NAKed gap the loss report has not had yet: all of it in another term or past the range last
        reported, the part past that range's end if it overlaps, else 0."""
        cdef int64_t end = <int64_t>self.report_term_offset + self.report_length
        if term_id != self.report_term_id or term_offset >= end:
            return length
        if <int64_t>term_offset + length > end:
            return <int64_t>term_offset + length - end
        return 0

    cdef void reported(self, int32_t term_id, int32_t term_offset, int32_t length) noexcept nogil:
        self.report_term_id = term_id
        self.report_term_offset = term_offset
        self.report_length = length

    def report_loss(self, int32_t term_id, int32_t term_offset, int32_t length):
        """A gap is being NAKed: the bytes lost to record in the loss report (0: none new), the range remembered
        when there are some."""
        cdef int64_t lost = self.loss_to_report(term_id, term_offset, length)
        if lost > 0:
            self.reported(term_id, term_offset, length)
        return lost

    cdef int on_gap(self, int32_t term_id, int32_t gap_offset, int32_t gap_length, int64_t now_ns,
                    int64_t first_delay_ns) noexcept nogil:
        """A scan found a gap (gap_length > 0): it becomes the active one (a new gap's timer starts at
        ``first_delay_ns``). Returns LOSS_* flags; with LOSS_NAK_DUE the caller NAKs the active gap and sets the
        retry's expiry."""
        cdef int flags = 0
        self.gap_open = True
        if self.is_new(term_id, gap_offset, gap_length):
            self.active_term_id = term_id
            self.active_term_offset = gap_offset
            self.active_length = gap_length
            self.expiry_ns = now_ns + first_delay_ns
            flags = LOSS_NEW_GAP
        if now_ns >= self.expiry_ns:
            flags |= LOSS_NAK_DUE
        return flags

    def scan(self, AtomicBuffer term not None, int32_t term_length, int32_t rebuild_term_id, int32_t rebuild_offset,
             int32_t hwm_term_id, int32_t hwm_offset, int64_t now_ns):
        """Returns (offset where contiguous data ends, whether a new gap was found)."""
        cdef int32_t gap_length, gap_offset
        cdef int flags
        cdef int64_t first = 0
        term.check(0, 0)
        if term_length != term.length or rebuild_offset < 0 or rebuild_offset > term_length or hwm_offset < 0 or \
                hwm_offset > term_length:
            raise InvalidArgumentError(f"offsets {rebuild_offset} and {hwm_offset} must be within the term "
                                       f"({term.length} bytes, given {term_length})")
        gap_offset = self.find_gap(term.data, term_length, rebuild_term_id, rebuild_offset, hwm_term_id, hwm_offset,
                                   &gap_length)
        if gap_length == 0:
            self.gap_open = False
            return gap_offset, False
        if self.static:
            first = self.first_delay_ns
        elif self.is_new(rebuild_term_id, gap_offset, gap_length):
            first = self.delay.first()      # drawn only for a new gap, as the generator's own sequence
        flags = self.on_gap(rebuild_term_id, gap_offset, gap_length, now_ns, first)
        if flags & LOSS_NEW_GAP and self._on_loss is not None:
            self._on_loss(rebuild_term_id, gap_offset, gap_length)
        if flags & LOSS_NAK_DUE:
            self._on_nak(self.active_term_id, self.active_term_offset, self.active_length)
            self.expiry_ns = now_ns + (self.retry_delay_ns if self.static else self.delay.retry())
        return gap_offset, bool(flags & LOSS_NEW_GAP)
