# SPDX-License-Identifier: Apache-2.0
# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""BufferClaim: zero-copy write of one frame's payload (port of Aeron's BufferClaim).

``try_claim`` reserves a frame whose length is still negative (invisible to readers); the caller
writes the payload through ``buffer`` or ``put_bytes``, then ``commit()`` publishes it or ``abort()``
turns it into padding that readers skip. The log stays pinned (cannot be unmapped) while a claim
is open, and the payload view is released on commit/abort so a stale reference raises instead of
writing into the log.
"""
cimport cython
from cpython.buffer cimport PyBuffer_FillInfo
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t
from libc.string cimport memcpy

from aeron._core.atomic cimport store_release_i32
from aeron._core.atomic_buffer cimport AtomicBuffer, check_bounds
from aeron._core cimport frame_descriptor as fd
from aeron.common.errors import IllegalStateError, InvalidArgumentError


cdef class BufferClaim:
    """A claimed frame in a term buffer, filled by ``try_claim``.

    Use once: write the payload, then exactly one of ``commit()`` / ``abort()``. As a context
    manager it commits on normal exit and aborts if the block raised.
    """

    def __cinit__(self):
        self.frame = NULL
        self.claim_length = 0
        self.frame_term_offset = 0
        self.active = False
        self.exports = 0
        self._view = None
        self._pinned = None
        self.position = 0

    def __dealloc__(self):
        # An abandoned claim is left uncommitted (the driver's LogBufferUnblocker repairs it); we only
        # drop our pin so the log can be unmapped.
        if self.active:
            self._unpin()
            self.active = False

    cdef int wrap_frame(self, AtomicBuffer log_buffer, uint8_t *term, int32_t term_offset, int32_t length) except -1:
        # Counted as an export of the log's buffer, exactly as a memoryview would be (AtomicBuffer.close()
        # refuses while any is alive), without the cost of the buffer protocol on every claim.
        log_buffer.check_open()
        log_buffer.exports += 1
        self._pinned = log_buffer
        self.frame = term + term_offset
        self.frame_term_offset = term_offset
        self.claim_length = length
        self.active = True
        return 0

    def wrap(self, AtomicBuffer buffer not None, Py_ssize_t offset, Py_ssize_t length):
        """Take the claim over the frame at ``buffer[offset:offset + length]`` (``length`` counts the 32-byte frame
        header), as Aeron's ``BufferClaim.wrap``: for code that writes through a claim where nothing is sent (a
        clustered service's egress on a member that does not lead). Commit or abort writes the frame's length and
        type there, as they would in a term."""
        if self.active:
            raise IllegalStateError("a claim is already open: commit or abort it first")
        if length < fd.HEADER_LENGTH:
            raise InvalidArgumentError(f"a frame of {length} bytes is shorter than its {fd.HEADER_LENGTH}-byte header")
        buffer.check(offset, length)
        self.wrap_frame(buffer, buffer.data, <int32_t>offset, <int32_t>(length - fd.HEADER_LENGTH))
        self.position = 0

    cdef int check_active(self) except -1:
        if not self.active:
            raise IllegalStateError("no open claim: try_claim first (or it was already committed/aborted)")
        return 0

    cdef int finish(self, bint commit) except -1:
        self.check_active()
        if self._view is not None:
            try:
                self._view.release()
            except BufferError:
                raise IllegalStateError("the claimed payload view is still exported (e.g. to numpy); "
                                        "release that before commit/abort") from None
            self._view = None
        if self.exports > 0:
            # A slice of `buffer` (or a view derived from it) is still alive and would keep writing
            # into the log after the frame is published; refuse, the claim stays open.
            raise IllegalStateError(f"{self.exports} view(s) of the claimed payload still alive; "
                                    "release them before commit/abort")
        if not commit:
            (<uint16_t *>(self.frame + fd.TYPE_FIELD_OFFSET))[0] = fd.HDR_TYPE_PAD
        # the release store of the positive length is what publishes the frame (BufferClaim.commit)
        store_release_i32(<int32_t *>self.frame, self.claim_length + fd.HEADER_LENGTH)
        self.active = False
        self.frame = NULL
        self._unpin()
        if self.wake is not None:
            self.wake.notify()
            self.wake = None
        return 0

    cdef void _unpin(self) noexcept:
        self._pinned.exports -= 1
        self._pinned = None

    def __bool__(self):
        """True while a claim is open: ``if claim := pub.try_claim(n): ...``."""
        return self.active

    def commit(self):
        """Publish the frame. Raises IllegalStateError if no claim is open."""
        self.finish(True)

    def abort(self):
        """Turn the claimed frame into padding that readers skip. Raises IllegalStateError if no
        claim is open."""
        self.finish(False)

    def __enter__(self):
        self.check_active()
        return self

    def __exit__(self, exc_type, exc, tb):
        if self.active:
            self.finish(exc_type is None)
        return False

    # -- payload ------------------------------------------------------------------------------------
    def __getbuffer__(self, Py_buffer *view, int flags):
        self.check_active()
        PyBuffer_FillInfo(view, self, self.frame + fd.HEADER_LENGTH, self.claim_length, 0, flags)
        self.exports += 1

    def __releasebuffer__(self, Py_buffer *view):
        self.exports -= 1

    @property
    def buffer(self):
        """Writable memoryview of exactly the claimed payload; released by commit/abort."""
        self.check_active()
        if self._view is None:
            self._view = memoryview(self)
        return self._view

    @property
    def offset(self):
        """Offset in ``buffer`` at which the claimed payload begins (always 0: ``buffer`` is the payload)."""
        return 0

    @property
    def term_offset(self):
        """Offset of the claimed frame in its term."""
        self.check_active()
        return self.frame_term_offset

    @property
    def length(self):
        """Payload bytes claimed."""
        return self.claim_length

    @property
    def is_active(self):
        """True while a claim is open (as ``bool(claim)``)."""
        return self.active

    def put_bytes(self, src, Py_ssize_t offset=0):
        """Copy ``src`` (any contiguous buffer) into the payload at ``offset``."""
        self.check_active()
        cdef const uint8_t[::1] mv = src
        cdef Py_ssize_t n = mv.shape[0]
        check_bounds(offset, n, self.claim_length)
        if n:
            memcpy(self.frame + fd.HEADER_LENGTH + offset, &mv[0], <size_t>n)

    @property
    def reserved_value(self):
        """The frame's 64-bit reserved value, settable before commit."""
        self.check_active()
        cdef int64_t v
        memcpy(&v, self.frame + fd.RESERVED_VALUE_FIELD_OFFSET, 8)
        return v

    @reserved_value.setter
    def reserved_value(self, int64_t value):
        self.check_active()
        memcpy(self.frame + fd.RESERVED_VALUE_FIELD_OFFSET, &value, 8)

    @property
    def flags(self):
        """The frame's flags byte, settable before commit."""
        self.check_active()
        return self.frame[fd.FLAGS_FIELD_OFFSET]

    @flags.setter
    def flags(self, uint8_t value):
        self.check_active()
        self.frame[fd.FLAGS_FIELD_OFFSET] = value

    @property
    def header_type(self):
        """The frame's type field (DATA), settable before commit."""
        self.check_active()
        return (<uint16_t *>(self.frame + fd.TYPE_FIELD_OFFSET))[0]

    @header_type.setter
    def header_type(self, uint16_t value):
        self.check_active()
        (<uint16_t *>(self.frame + fd.TYPE_FIELD_OFFSET))[0] = value

    def __repr__(self):
        if not self.active:
            return "<BufferClaim (no open claim)>"
        return f"<BufferClaim term_offset={self.frame_term_offset} length={self.claim_length}>"
