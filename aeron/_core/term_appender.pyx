# SPDX-License-Identifier: Apache-2.0
# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Append side of a log buffer: concurrent and exclusive term appenders.

Port of the offer/claim paths of Aeron's ConcurrentPublication / ExclusivePublication (C:
aeron_publication.c, aeron_exclusive_publication.c). The
kernels are nogil functions over raw pointers (declared in term_appender.pxd) so the driver, the
publication classes and test extensions can call them without the GIL; the classes below check
arguments once at the Python edge and call them.

GIL policy: a small offer keeps the GIL. Dropping and re-taking an uncontended GIL costs roughly
0.1 us and, with other Python threads waiting, a thread switch; a whole 32-byte offer from Python
measured 80-110 ns here, so a release would about double it. A 64 KiB offer measured ~6 us (copy plus
first touch of the pages), where the release is lost in the noise (65504 B with the GIL: 6.2 us,
65536 B without: 6.0 us). So from APPEND_GIL_RELEASE_THRESHOLD (64 KiB) on we copy without the GIL
and let other threads run meanwhile.
"""
cimport cython
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.stdint cimport INT64_MAX, int32_t, int64_t, uint8_t, uint16_t, uint32_t
from libc.string cimport memcpy

from aeron._core.atomic cimport (fence_release, get_and_add_i64, load_acquire_i64, store_relaxed_i64,
                                 store_release_i32, store_release_i64)
from aeron._core.atomic_buffer cimport AtomicBuffer, check_span
from aeron._core.buffer_claim cimport BufferClaim
from aeron._core cimport frame_descriptor as fd
from aeron._core cimport logbuffer_descriptor as ld
from aeron._core.logbuffer cimport LogBuffers
from aeron._core.wakeup cimport WakeSignal
from aeron.common.errors import IllegalStateError, InvalidArgumentError

NOT_CONNECTED = APPEND_NOT_CONNECTED
BACK_PRESSURED = APPEND_BACK_PRESSURED
# aeron.common.wakeup.CONDUCTOR: a back-pressured offer wakes a parked driver conductor of ours, which moves the
# publication's limit as its readers read (no reader signals it; docs/wakeup.md)
CONDUCTOR_WAKE_MASK = 1 << 62
ADMIN_ACTION = APPEND_ADMIN_ACTION
CLOSED = APPEND_CLOSED
MAX_POSITION_EXCEEDED = APPEND_MAX_POSITION_EXCEEDED
GIL_RELEASE_THRESHOLD = APPEND_GIL_RELEASE_THRESHOLD


# ------------------------------------------------------------------------------------------------
# Frame writers
# ------------------------------------------------------------------------------------------------
cdef void frame_header_write(uint8_t *term, int32_t offset, int32_t frame_length, int32_t term_id,
                             int32_t session_id, int32_t stream_id) noexcept nogil:
    cdef uint8_t *h = term + offset
    # Negative length first: readers treat <= 0 as "nothing here yet". The fence keeps the field
    # stores below from being made visible before it (the order of aeron_publication_header_write).
    store_release_i32(<int32_t *>h, -frame_length)
    fence_release()
    h[fd.VERSION_FIELD_OFFSET] = fd.CURRENT_VERSION
    h[fd.FLAGS_FIELD_OFFSET] = fd.UNFRAGMENTED
    (<uint16_t *>(h + fd.TYPE_FIELD_OFFSET))[0] = fd.HDR_TYPE_DATA
    (<int32_t *>(h + fd.TERM_OFFSET_FIELD_OFFSET))[0] = offset
    (<int32_t *>(h + fd.SESSION_ID_FIELD_OFFSET))[0] = session_id
    (<int32_t *>(h + fd.STREAM_ID_FIELD_OFFSET))[0] = stream_id
    (<int32_t *>(h + fd.TERM_ID_FIELD_OFFSET))[0] = term_id


cdef void frame_padding_write(uint8_t *term, int32_t offset, int32_t frame_length, int32_t term_id,
                              int32_t session_id, int32_t stream_id) noexcept nogil:
    frame_header_write(term, offset, frame_length, term_id, session_id, stream_id)
    (<uint16_t *>(term + offset + fd.TYPE_FIELD_OFFSET))[0] = fd.HDR_TYPE_PAD
    store_release_i32(<int32_t *>(term + offset), frame_length)


cdef void term_fragments_write(uint8_t *term, int32_t term_offset, const appender_iov_t *iov,
                               int32_t length, int32_t max_payload_length, int32_t term_id,
                               int32_t session_id, int32_t stream_id, bint commit) noexcept nogil:
    cdef int32_t remaining = length
    cdef int32_t frame_offset = term_offset
    cdef int32_t chunk, frame_length, written
    cdef Py_ssize_t n, avail
    cdef Py_ssize_t iov_index = 0, iov_offset = 0
    cdef uint8_t flags = fd.BEGIN_FRAG_FLAG
    cdef uint8_t *dst
    while True:
        chunk = remaining if remaining < max_payload_length else max_payload_length
        frame_length = chunk + fd.HEADER_LENGTH
        frame_header_write(term, frame_offset, frame_length, term_id, session_id, stream_id)
        dst = term + frame_offset + fd.HEADER_LENGTH
        written = 0
        while written < chunk:          # gather from the parts; a part may span fragments
            avail = iov[iov_index].length - iov_offset
            n = chunk - written
            if avail < n:
                n = avail
            memcpy(dst + written, iov[iov_index].base + iov_offset, <size_t>n)
            written += <int32_t>n
            iov_offset += n
            if iov_offset == iov[iov_index].length:
                iov_index += 1
                iov_offset = 0
        if remaining <= max_payload_length:
            flags |= fd.END_FRAG_FLAG
        term[frame_offset + fd.FLAGS_FIELD_OFFSET] = flags
        if commit:
            store_release_i32(<int32_t *>(term + frame_offset), frame_length)
        remaining -= chunk
        if remaining <= 0:
            break
        flags = 0
        frame_offset += fd.align_i32(frame_length, fd.FRAME_ALIGNMENT)


cdef int32_t framed_length_of(int32_t length, int32_t max_payload_length) noexcept nogil:
    if length <= max_payload_length:
        return fd.align_i32(length + fd.HEADER_LENGTH, fd.FRAME_ALIGNMENT)
    return fd.compute_fragmented_length(length, max_payload_length)


cdef inline int64_t write_reserved(const appender_state_t *s, int64_t result, const appender_span_t *span,
                                   const appender_iov_t *iov, int32_t length, bint commit) noexcept nogil:
    # The message's fragments into the span a reserve returned, when it returned a position (> 0); passes the
    # reserve's result on.
    if result > 0:
        term_fragments_write(span.term, span.term_offset, iov, length, s.max_payload_length, span.term_id,
                             s.session_id, s.stream_id, commit)
    return result


cdef int64_t back_pressure_status(const appender_state_t *s, int64_t position, int32_t length) noexcept nogil:
    # Java's test for both publication kinds; C's exclusive publication omits header and alignment.
    if position + fd.align_i64(<int64_t>length + fd.HEADER_LENGTH, fd.FRAME_ALIGNMENT) >= s.max_possible_position:
        return APPEND_MAX_POSITION_EXCEEDED
    if ld.is_connected_volatile(s.meta):
        return APPEND_BACK_PRESSURED
    return APPEND_NOT_CONNECTED


# ------------------------------------------------------------------------------------------------
# Concurrent (port of aeron_publication_offer and its helpers)
# ------------------------------------------------------------------------------------------------
cdef int64_t concurrent_reserve(appender_state_t *s, int32_t length, int32_t framed_length,
                                appender_span_t *span) noexcept nogil:
    cdef int64_t limit = load_acquire_i64(s.position_limit)
    cdef int32_t term_count = ld.active_term_count_volatile(s.meta)
    cdef int32_t index = ld.index_by_term_count(term_count)
    cdef int64_t raw_tail = ld.raw_tail_volatile(s.meta, index)
    cdef int32_t term_id = ld.term_id_of(raw_tail)
    cdef int32_t term_offset = ld.term_offset_of(raw_tail, s.term_length)
    if term_count != ld.term_count_of(term_id, s.initial_term_id):
        return APPEND_ADMIN_ACTION      # a rotation is under way
    cdef int64_t position = ld.compute_position(term_id, term_offset, s.position_bits_to_shift, s.initial_term_id)
    if position >= limit:
        return back_pressure_status(s, position, length)
    # The limit was checked before the add, so each concurrent writer may overshoot it by one
    # message; that is upstream's design (ConcurrentPublication.offer).
    raw_tail = get_and_add_i64(ld.tail_counter_ptr(s.meta, index), framed_length)
    term_id = ld.term_id_of(raw_tail)
    term_offset = ld.term_offset_of(raw_tail, s.term_length)
    cdef int32_t resulting_offset = term_offset + framed_length
    position = ld.compute_position(term_id, resulting_offset, s.position_bits_to_shift, s.initial_term_id)
    if resulting_offset > s.term_length:
        # As aeron_publication_handle_end_of_log_condition: the writer whose reservation starts inside the term
        # "trips" it and pads to the end; writers that start past the end write nothing. Everyone helps rotate
        # (idempotent CASes).
        if term_offset < s.term_length:
            frame_padding_write(s.terms[index], term_offset, s.term_length - term_offset, term_id,
                                s.session_id, s.stream_id)
        if position >= s.max_possible_position:
            return APPEND_MAX_POSITION_EXCEEDED
        ld.rotate_log(s.meta, ld.term_count_of(term_id, s.initial_term_id), term_id)
        return APPEND_ADMIN_ACTION
    span.term = s.terms[index]
    span.partition_index = index
    span.term_offset = term_offset
    span.term_id = term_id
    return position


cdef int64_t concurrent_offer(appender_state_t *s, const appender_iov_t *iov, int32_t length) noexcept nogil:
    cdef appender_span_t span
    cdef int64_t result = concurrent_reserve(s, length, framed_length_of(length, s.max_payload_length), &span)
    return write_reserved(s, result, &span, iov, length, True)


# ------------------------------------------------------------------------------------------------
# Exclusive (port of aeron_exclusive_publication_offer and its helpers)
# ------------------------------------------------------------------------------------------------
cdef void exclusive_rotate_term(appender_state_t *s) noexcept nogil:
    cdef int32_t next_term_id = <int32_t>(<uint32_t>s.term_id + 1)
    cdef int32_t next_term_count = ld.term_count_of(next_term_id, s.initial_term_id)
    cdef int32_t next_index = ld.index_by_term_count(next_term_count)
    s.term_id = next_term_id
    s.term_offset = 0
    s.active_partition_index = next_index
    s.term_begin_position += s.term_length
    # Single writer, so no CAS: the tail store may be relaxed because the release store of the
    # active term count below publishes it.
    store_relaxed_i64(ld.tail_counter_ptr(s.meta, next_index), ld.pack_tail(next_term_id, 0))
    store_release_i32(<int32_t *>(s.meta + ld.LOG_ACTIVE_TERM_COUNT_OFFSET), next_term_count)


cdef void exclusive_init_from_tail(appender_state_t *s) noexcept nogil:
    cdef int32_t term_count = ld.active_term_count_volatile(s.meta)
    cdef int32_t index = ld.index_by_term_count(term_count)
    cdef int64_t raw_tail = ld.raw_tail_volatile(s.meta, index)
    s.active_partition_index = index
    s.term_id = ld.term_id_of(raw_tail)
    # Clamped, unlike C's raw low word: a tail left past the end by concurrent writers then just
    # trips on the first offer (same outcome) and position never reports past the term.
    s.term_offset = ld.term_offset_of(raw_tail, s.term_length)
    s.term_begin_position = ld.compute_term_begin_position(s.term_id, s.position_bits_to_shift, s.initial_term_id)


cdef int64_t exclusive_reserve(appender_state_t *s, int32_t length, int32_t framed_length,
                               appender_span_t *span) noexcept nogil:
    cdef int64_t limit = load_acquire_i64(s.position_limit)
    cdef int64_t position = s.term_begin_position + s.term_offset
    if position >= limit:
        return back_pressure_status(s, position, length)
    cdef int32_t index = s.active_partition_index
    cdef int32_t term_offset = s.term_offset
    cdef int32_t resulting_offset = term_offset + framed_length
    # The tail is published before the frames are written, as upstream does.
    store_release_i64(ld.tail_counter_ptr(s.meta, index), ld.pack_tail(s.term_id, resulting_offset))
    if resulting_offset > s.term_length:
        if term_offset < s.term_length:
            frame_padding_write(s.terms[index], term_offset, s.term_length - term_offset, s.term_id,
                                s.session_id, s.stream_id)
        if s.term_begin_position + s.term_length >= s.max_possible_position:
            return APPEND_MAX_POSITION_EXCEEDED
        exclusive_rotate_term(s)
        return APPEND_ADMIN_ACTION
    span.term = s.terms[index]
    span.partition_index = index
    span.term_offset = term_offset
    span.term_id = s.term_id
    s.term_offset = resulting_offset
    return s.term_begin_position + resulting_offset


cdef int64_t exclusive_offer(appender_state_t *s, const appender_iov_t *iov, int32_t length) noexcept nogil:
    cdef appender_span_t span
    cdef int64_t result = exclusive_reserve(s, length, framed_length_of(length, s.max_payload_length), &span)
    return write_reserved(s, result, &span, iov, length, True)


# ------------------------------------------------------------------------------------------------
# Python face
# ------------------------------------------------------------------------------------------------
cdef int _wake_after_offer(WakeSignal wake, int64_t result) except -1:
    # A message published wakes the sleepers it concerns; back pressure wakes a parked conductor of ours, which moves
    # the limit.
    if result > 0:
        wake.notify()
    elif result == APPEND_BACK_PRESSURED:
        wake.board.signal(CONDUCTOR_WAKE_MASK)
    return 0


cdef inline int64_t _signal_offered(TermAppender self, int64_t result) except? -100:
    # After an offer (the check inline: no wake signal is the common case); passes the offer's result on.
    if self._wake is not None:
        _wake_after_offer(self._wake, result)
    return result


cdef class TermAppender:
    """Common part of ConcurrentTermAppender and ExclusiveTermAppender (not for direct use)."""

    def __cinit__(self):
        self._has_log_pin = False
        self._has_limit_pin = False
        # Closed until __init__ has resolved the pointers: an uninitialised subclass instance
        # returns CLOSED instead of touching NULL memory.
        self.closed = True
        self.log = None
        self._term_buffers = None
        self._claim = None
        self._wake = None

    def __init__(self, LogBuffers log not None, AtomicBuffer position_limit=None,
                 Py_ssize_t position_limit_offset=0):
        """Append to ``log``. ``position_limit`` is the publication-limit counter (an AtomicBuffer
        and the offset of its 64-bit value), read with acquire on every offer; None means no limit."""
        if self.log is not None:
            raise IllegalStateError("appender already initialised")
        log.check_open()
        cdef appender_state_t *s = &self.state
        if position_limit is not None:
            position_limit.check_aligned(position_limit_offset, 8)
            PyObject_GetBuffer(position_limit, &self._limit_pin, PyBUF_SIMPLE)
            self._has_limit_pin = True
            self._limit_buffer = position_limit
            s.position_limit = <const int64_t *>(position_limit.data + position_limit_offset)
        else:
            s.no_limit = INT64_MAX
            s.position_limit = &s.no_limit
        PyObject_GetBuffer(log.buffer, &self._log_pin, PyBUF_SIMPLE)
        self._has_log_pin = True
        cdef int i
        for i in range(ld.PARTITION_COUNT):
            s.terms[i] = log.terms[i]
        s.meta = log.meta
        s.term_length = log.term_length
        s.position_bits_to_shift = log.position_bits_to_shift
        s.initial_term_id = log.initial_term_id
        s.max_possible_position = log.max_possible_position
        s.max_message_length = log.max_message_length
        s.max_payload_length = log.mtu_length - fd.HEADER_LENGTH
        s.session_id = ld.meta_i32(log.meta, ld.LOG_DEFAULT_FRAME_HEADER_OFFSET + fd.SESSION_ID_FIELD_OFFSET)
        s.stream_id = ld.meta_i32(log.meta, ld.LOG_DEFAULT_FRAME_HEADER_OFFSET + fd.STREAM_ID_FIELD_OFFSET)
        s.term_id = 0
        s.term_offset = 0
        s.term_begin_position = 0
        s.active_partition_index = 0
        self.log = log
        self.closed = False

    def __dealloc__(self):
        self._release_exports()

    cdef void _release_exports(self) noexcept:
        if self._has_log_pin:
            PyBuffer_Release(&self._log_pin)
            self._has_log_pin = False
        if self._has_limit_pin:
            PyBuffer_Release(&self._limit_pin)
            self._has_limit_pin = False

    cdef int _release_pins(self) except -1:
        self._release_exports()
        self._limit_buffer = None
        return 0

    cdef int64_t _reserve(self, int32_t length, int32_t framed_length, appender_span_t *span) noexcept nogil:
        return APPEND_CLOSED

    cdef int64_t _append(self, const appender_iov_t *iov, int32_t length, object supplier) except? -100:
        cdef appender_state_t *s = &self.state
        cdef appender_span_t span
        cdef int32_t framed = framed_length_of(length, s.max_payload_length)
        cdef int64_t result
        cdef Py_buffer pin
        if supplier is None and length < APPEND_GIL_RELEASE_THRESHOLD:
            # The common case: the GIL is held throughout, so nothing can close the log meanwhile.
            return write_reserved(s, self._reserve(length, framed, &span), &span, iov, length, True)
        # Other Python code runs before we are done (another thread while the GIL is released, or
        # the supplier itself) and may call close() and then close the log. Our own export keeps the
        # mapping alive until the last store: log.close() is refused instead of unmapping under us.
        PyObject_GetBuffer(self.log.buffer, &pin, PyBUF_SIMPLE)
        try:
            if supplier is None:
                # Safe without the GIL: the caller holds the source Py_buffers and `pin` holds the log.
                with nogil:
                    result = write_reserved(s, self._reserve(length, framed, &span), &span, iov, length, True)
                return result
            result = write_reserved(s, self._reserve(length, framed, &span), &span, iov, length, False)
            if result > 0:
                self._commit_with_supplier(&span, length, supplier)
            return result
        finally:
            PyBuffer_Release(&pin)

    cdef int _commit_with_supplier(self, appender_span_t *span, int32_t length, object supplier) except -1:
        # Java semantics: the supplier sees each fragment's own frame offset and length (C's
        # non-vectored path passes the first fragment for all).
        cdef appender_state_t *s = &self.state
        cdef uint8_t *term = span.term
        cdef int32_t frame_offset = span.term_offset
        cdef int32_t remaining = length
        cdef int32_t chunk, frame_length
        cdef int64_t reserved
        term_buffer = self._term_buffer(span.partition_index)
        while True:
            chunk = remaining if remaining < s.max_payload_length else s.max_payload_length
            frame_length = chunk + fd.HEADER_LENGTH
            try:
                reserved = supplier(term_buffer, frame_offset, frame_length)
            except BaseException:
                # Do not leave claimed frames behind (they would block the stream until the
                # driver's unblocker fires): the rest of the message becomes padding.
                self._pad_uncommitted(term, frame_offset, remaining)
                raise
            memcpy(term + frame_offset + fd.RESERVED_VALUE_FIELD_OFFSET, &reserved, 8)
            store_release_i32(<int32_t *>(term + frame_offset), frame_length)
            remaining -= chunk
            if remaining <= 0:
                return 0
            frame_offset += fd.align_i32(frame_length, fd.FRAME_ALIGNMENT)

    cdef void _pad_uncommitted(self, uint8_t *term, int32_t frame_offset, int32_t remaining) noexcept:
        cdef int32_t chunk, frame_length
        cdef int32_t max_payload = self.state.max_payload_length
        while True:
            chunk = remaining if remaining < max_payload else max_payload
            frame_length = chunk + fd.HEADER_LENGTH
            (<uint16_t *>(term + frame_offset + fd.TYPE_FIELD_OFFSET))[0] = fd.HDR_TYPE_PAD
            store_release_i32(<int32_t *>(term + frame_offset), frame_length)
            remaining -= chunk
            if remaining <= 0:
                return
            frame_offset += fd.align_i32(frame_length, fd.FRAME_ALIGNMENT)

    cdef object _term_buffer(self, int32_t index):
        # Made on first use and kept: they pin the log like we do, and are dropped by close().
        if self._term_buffers is None:
            self._term_buffers = (self.log.term_buffer(0), self.log.term_buffer(1), self.log.term_buffer(2))
        return self._term_buffers[index]

    cdef int _check_length(self, Py_ssize_t length) except -1:
        if length > self.state.max_message_length:
            raise InvalidArgumentError(
                f"message length {length} > max_message_length {self.state.max_message_length}")
        return 0

    def offer(self, buffer, Py_ssize_t offset=0, Py_ssize_t length=-1, reserved_value_supplier=None):
        """Append ``buffer[offset:offset + length]`` (any buffer-protocol object; ``length=-1`` means
        to the end) as one message, fragmenting it over ``max_payload_length``.

        ``reserved_value_supplier(term_buffer, term_offset, frame_length) -> int`` is called per
        fragment before it is committed; its result is stored in the frame's reserved value.

        Returns the new stream position (> 0) or NOT_CONNECTED, BACK_PRESSURED, ADMIN_ACTION (retry),
        CLOSED or MAX_POSITION_EXCEEDED. Raises InvalidArgumentError (too long, bad length) or
        OutOfBoundsError (range outside ``buffer``).
        """
        if self.closed:
            return APPEND_CLOSED
        cdef Py_buffer view
        cdef appender_iov_t iov
        PyObject_GetBuffer(buffer, &view, PyBUF_SIMPLE)
        try:
            length = check_span(offset, length, view.len)
            self._check_length(length)
            iov.base = <const uint8_t *>view.buf + offset
            iov.length = length
            return _signal_offered(self, self._append(&iov, <int32_t>length, reserved_value_supplier))
        finally:
            PyBuffer_Release(&view)

    def offerv(self, buffers, reserved_value_supplier=None):
        """Append the concatenation of ``buffers`` (a sequence of buffer-protocol objects) as one
        message without joining them first. Returns as ``offer``."""
        if self.closed:
            return APPEND_CLOSED
        cdef Py_ssize_t count = len(buffers)
        cdef Py_buffer stack_views[APPEND_STACK_IOV]
        cdef appender_iov_t stack_iov[APPEND_STACK_IOV]
        cdef Py_buffer *views = stack_views
        cdef appender_iov_t *iov = stack_iov
        cdef Py_ssize_t acquired = 0, i
        cdef Py_ssize_t total = 0
        if count > APPEND_STACK_IOV:
            views = <Py_buffer *>PyMem_Malloc(<size_t>count * sizeof(Py_buffer))
            iov = <appender_iov_t *>PyMem_Malloc(<size_t>count * sizeof(appender_iov_t))
            if views == NULL or iov == NULL:
                PyMem_Free(views)
                PyMem_Free(iov)
                raise MemoryError()
        try:
            for i in range(count):
                PyObject_GetBuffer(buffers[i], &views[i], PyBUF_SIMPLE)
                acquired += 1
                iov[i].base = <const uint8_t *>views[i].buf
                iov[i].length = views[i].len
                total += views[i].len
            self._check_length(total)
            return _signal_offered(self, self._append(iov, <int32_t>total, reserved_value_supplier))
        finally:
            for i in range(acquired):
                PyBuffer_Release(&views[i])
            if views != stack_views:
                PyMem_Free(views)
                PyMem_Free(iov)

    def try_claim(self, int32_t length, BufferClaim claim=None):
        """Claim a frame of ``length`` payload bytes (<= ``max_payload_length``) to write in place;
        publish it with ``claim.commit()`` or drop it with ``claim.abort()``.

        With ``claim`` given this is Aeron's ``tryClaim``: it returns the new position (> 0) or a status
        code as ``offer``. Without it the appender's own reusable claim is returned, open (true) on
        success or closed (false) with the status code in ``claim.position``; ``with pub.try_claim(n) as
        claim:`` commits on exit and raises IllegalStateError when nothing could be claimed.

        Raises InvalidArgumentError for a bad length and IllegalStateError if the claim used still holds
        an open claim.
        """
        if claim is not None:
            return self._claim_into(length, claim)
        # One C call for both forms: the reusable claim is ours, made on first use.
        claim = self._claim
        if claim is None:
            claim = self._claim = BufferClaim()
        claim.position = self._claim_into(length, claim)
        return claim

    cdef int64_t _claim_into(self, int32_t length, BufferClaim claim) except? -100:
        cdef appender_state_t *s = &self.state
        if length < 0 or length > s.max_payload_length:
            raise InvalidArgumentError(f"claim length {length} not in [0, max_payload_length={s.max_payload_length}]")
        if claim.active:
            raise IllegalStateError("BufferClaim still holds an open claim; commit or abort it first")
        if self.closed:
            return APPEND_CLOSED
        cdef appender_span_t span
        cdef int32_t frame_length = length + fd.HEADER_LENGTH
        cdef int64_t result = self._reserve(length, fd.align_i32(frame_length, fd.FRAME_ALIGNMENT), &span)
        if result > 0:
            frame_header_write(span.term, span.term_offset, frame_length, span.term_id, s.session_id, s.stream_id)
            claim.wrap_frame(self.log.buffer, span.term, span.term_offset, length)
            claim.wake = self._wake         # the commit signals the sleepers this publication concerns
        elif result == APPEND_BACK_PRESSURED and self._wake is not None:
            self._wake.board.signal(CONDUCTOR_WAKE_MASK)
        return result

    def set_wake_signal(self, WakeSignal signal):
        """After each successful offer (and claim commit) signal ``signal``: the parked sleepers this
        publication's data concerns are woken (aeron.common.wakeup). None stops it. Costs a fence and a load
        per offer while nobody is parked."""
        self._wake = signal

    @property
    def wake_signal(self):
        """The WakeSignal set by :meth:`set_wake_signal`, or None."""
        return self._wake

    def close(self):
        """Stop appending: later offers return CLOSED. The log itself is left open."""
        self.closed = True
        self._term_buffers = None
        self._release_pins()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def is_closed(self):
        """True once closed: offers return CLOSED."""
        return self.closed

    @property
    def is_connected(self):
        """True when not closed and the driver marks the log connected."""
        return not self.closed and ld.is_connected_volatile(self.state.meta)

    @property
    def position_limit(self):
        """Current publication limit (CLOSED once closed)."""
        if self.closed:
            return APPEND_CLOSED
        return load_acquire_i64(self.state.position_limit)

    @property
    def max_payload_length(self):
        """Largest payload of one frame (the MTU less the 32-byte header); longer messages are fragmented."""
        return self.state.max_payload_length

    @property
    def max_message_length(self):
        """Largest message ``offer`` accepts (an eighth of the term length, at most 16 MiB)."""
        return self.state.max_message_length

    @property
    def max_possible_position(self):
        """The stream position at which offers return MAX_POSITION_EXCEEDED (term length << 31)."""
        return self.state.max_possible_position

    @property
    def position_bits_to_shift(self):
        """log2 of the term length: a position is ``term count << position_bits_to_shift | term offset``."""
        return self.state.position_bits_to_shift

    @property
    def session_id(self):
        """The session id of this publication's stream."""
        return self.state.session_id

    @property
    def stream_id(self):
        """The stream id."""
        return self.state.stream_id

    @property
    def initial_term_id(self):
        """The term id at position 0."""
        return self.state.initial_term_id

    @property
    def term_buffer_length(self):
        """Length of each of the log's three terms, in bytes."""
        return self.state.term_length


cdef class ConcurrentTermAppender(TermAppender):
    """Appender safe for any number of threads and processes sharing one log (concurrent
    publication semantics: tails advanced with fetch-and-add, rotation by CAS)."""

    cdef int64_t _reserve(self, int32_t length, int32_t framed_length, appender_span_t *span) noexcept nogil:
        return concurrent_reserve(&self.state, length, framed_length, span)

    @property
    def position(self):
        """Position of the active tail (where the next message would go), or CLOSED."""
        if self.closed:
            return APPEND_CLOSED
        cdef appender_state_t *s = &self.state
        cdef int32_t index = ld.index_by_term_count(ld.active_term_count_volatile(s.meta))
        cdef int64_t raw_tail = ld.raw_tail_volatile(s.meta, index)
        return ld.compute_position(ld.term_id_of(raw_tail), ld.term_offset_of(raw_tail, s.term_length),
                                   s.position_bits_to_shift, s.initial_term_id)


cdef class ExclusiveTermAppender(TermAppender):
    """Appender for a single writer (exclusive publication semantics: local term id and offset,
    tail published with a release store, rotation without CAS). Not thread-safe."""

    def __init__(self, LogBuffers log not None, AtomicBuffer position_limit=None,
                 Py_ssize_t position_limit_offset=0):
        TermAppender.__init__(self, log, position_limit, position_limit_offset)
        exclusive_init_from_tail(&self.state)

    cdef int64_t _reserve(self, int32_t length, int32_t framed_length, appender_span_t *span) noexcept nogil:
        return exclusive_reserve(&self.state, length, framed_length, span)

    @property
    def position(self):
        """Position after the last appended frame, or CLOSED."""
        if self.closed:
            return APPEND_CLOSED
        return self.state.term_begin_position + self.state.term_offset

    @property
    def term_id(self):
        """The term id the next message goes to."""
        return self.state.term_id

    @property
    def term_offset(self):
        """The offset in the term where the next message goes."""
        return self.state.term_offset

    @property
    def term_begin_position(self):
        """The stream position of the start of the current term."""
        return self.state.term_begin_position

    def append_padding(self, int32_t length):
        """Append a PAD frame with ``length`` payload bytes (frame length ``length + 32``) to
        advance the stream without data. Returns as ``offer``."""
        cdef appender_state_t *s = &self.state
        cdef int32_t max_framed = fd.compute_fragmented_length(s.max_message_length, s.max_payload_length)
        if length < 0 or length > max_framed:
            raise InvalidArgumentError(f"padding length {length} not in [0, {max_framed}]")
        if self.closed:
            return APPEND_CLOSED
        cdef appender_span_t span
        cdef int32_t frame_length = length + fd.HEADER_LENGTH
        cdef int64_t result = exclusive_reserve(s, length, fd.align_i32(frame_length, fd.FRAME_ALIGNMENT), &span)
        if result > 0:
            frame_padding_write(span.term, span.term_offset, frame_length, span.term_id, s.session_id, s.stream_id)
        return result

    def offer_block(self, buffer, Py_ssize_t offset=0, Py_ssize_t length=-1):
        """Append a pre-built run of frames ``buffer[offset:offset + length]`` verbatim. The first
        frame must be a DATA frame carrying this publication's session id, stream id, current term id
        and term offset; the block must fit in what is left of the term and be 32-byte aligned.

        Returns as ``offer``; raises InvalidArgumentError for a malformed block.
        """
        if self.closed:
            return APPEND_CLOSED
        cdef appender_state_t *s = &self.state
        if s.term_offset >= s.term_length:
            exclusive_rotate_term(s)
        cdef Py_buffer view
        cdef const uint8_t *src
        cdef uint8_t *dst
        cdef int64_t limit, position, word
        cdef int32_t resulting_offset
        PyObject_GetBuffer(buffer, &view, PyBUF_SIMPLE)
        try:
            length = check_span(offset, length, view.len)
            limit = load_acquire_i64(s.position_limit)
            position = s.term_begin_position + s.term_offset
            if position >= limit:
                return back_pressure_status(s, position, <int32_t>min(length, s.term_length))
            if length > s.term_length - s.term_offset:
                raise InvalidArgumentError(
                    f"invalid block length {length}, remaining space in term is {s.term_length - s.term_offset}")
            if length < fd.HEADER_LENGTH or length % fd.FRAME_ALIGNMENT:
                raise InvalidArgumentError(f"block length {length} must be a positive multiple of {fd.FRAME_ALIGNMENT}")
            src = <const uint8_t *>view.buf + offset
            self._check_first_frame(src)
            dst = s.terms[s.active_partition_index] + s.term_offset
            resulting_offset = s.term_offset + <int32_t>length
            store_release_i64(ld.tail_counter_ptr(s.meta, s.active_partition_index),
                              ld.pack_tail(s.term_id, resulting_offset))
            # Body first, then header words 3, 2, 1, and the length/version/flags/type word last
            # with a release store: that store publishes the first frame (ExclusivePublication.offerBlock).
            memcpy(dst + fd.HEADER_LENGTH, src + fd.HEADER_LENGTH, <size_t>(length - fd.HEADER_LENGTH))
            memcpy(dst + 24, src + 24, 8)
            memcpy(dst + 16, src + 16, 8)
            memcpy(dst + 8, src + 8, 8)
            memcpy(&word, src, 8)
            store_release_i64(<int64_t *>dst, word)
            s.term_offset = resulting_offset
            if self._wake is not None:
                self._wake.notify()
            return s.term_begin_position + resulting_offset
        finally:
            PyBuffer_Release(&view)

    cdef int _check_first_frame(self, const uint8_t *src) except -1:
        cdef appender_state_t *s = &self.state
        cdef int32_t term_offset = fd.frame_i32(src, fd.TERM_OFFSET_FIELD_OFFSET)
        cdef int32_t session_id = fd.frame_i32(src, fd.SESSION_ID_FIELD_OFFSET)
        cdef int32_t stream_id = fd.frame_i32(src, fd.STREAM_ID_FIELD_OFFSET)
        cdef int32_t term_id = fd.frame_i32(src, fd.TERM_ID_FIELD_OFFSET)
        cdef uint16_t frame_type = fd.frame_type(src, 0)
        if (term_offset != s.term_offset or session_id != s.session_id or stream_id != s.stream_id
                or term_id != s.term_id or frame_type != fd.HDR_TYPE_DATA):
            raise InvalidArgumentError(
                f"improperly formatted block: term_offset={term_offset} (expected {s.term_offset}), "
                f"session_id={session_id} (expected {s.session_id}), stream_id={stream_id} "
                f"(expected {s.stream_id}), term_id={term_id} (expected {s.term_id}), "
                f"frame_type={frame_type} (expected {fd.HDR_TYPE_DATA})")
        return 0
