# SPDX-License-Identifier: Apache-2.0
# BufferClaim: a frame reserved in a term by try_claim, written in place, then committed or aborted
# (port of BufferClaim and aeron_publication_try_claim).
from libc.stdint cimport int32_t, int64_t, uint8_t
from aeron._core.atomic_buffer cimport AtomicBuffer
from aeron._core.wakeup cimport WakeSignal

cdef class BufferClaim:
    cdef uint8_t *frame               # claimed frame header in the term; NULL when no claim is open
    cdef int32_t claim_length         # payload bytes claimed (frame length = length + 32)
    cdef int32_t frame_term_offset    # offset of the frame in its term
    cdef bint active                  # claimed and not yet committed/aborted
    cdef AtomicBuffer _pinned         # the log while a claim is open, its export count raised: no unmap mid-claim
    cdef object _view                 # memoryview handed out by `buffer`, released on commit/abort
    cdef Py_ssize_t exports           # live exports of the payload (the view and anything derived)
    cdef public int64_t position      # result of the try_claim(length) that returned this claim (the appender's own)
    cdef WakeSignal wake              # the claiming publication's wake-up signal (None: none), signalled on commit

    # Called by the appenders: take the claim over a frame whose header is written (length negative).
    cdef int wrap_frame(self, AtomicBuffer log_buffer, uint8_t *term, int32_t term_offset, int32_t length) except -1
    cdef int check_active(self) except -1
    cdef int finish(self, bint commit) except -1
    cdef void _unpin(self) noexcept
