# SPDX-License-Identifier: Apache-2.0
# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""AtomicBuffer over shared or private memory, with Aeron's ordered accessors.

Memory safety: the buffer holds a Py_buffer on its owner, so a mapping cannot be closed (and
unmapped) while we use it, and it counts its own exports so it refuses ``close()`` while a
memoryview of it is alive.

Files are mapped by MappedFile, which keeps no file descriptor: Python's ``mmap`` dups the descriptor
for the life of the mapping, so a driver with a thousand logs would run out of descriptors. As the C
driver does, we map with mmap(2) and close the descriptor at once.
"""
import errno as errno_codes
import os

cimport cython
from cpython.buffer cimport (PyBUF_ANY_CONTIGUOUS, PyBUF_FORMAT, PyBUF_ND, PyBUF_WRITABLE,
                             PyObject_GetBuffer, PyBuffer_Release, PyBuffer_FillInfo)
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t
from libc.errno cimport errno
from libc.string cimport memcpy, memset, memcmp
from posix.mman cimport mmap, munmap, PROT_READ, PROT_WRITE, MAP_SHARED, MAP_FAILED

from aeron._core.atomic cimport (load_acquire_i32, load_acquire_i64, store_release_i32, store_release_i64,
                                 get_and_add_i32, get_and_add_i64, cas_i32, cas_i64)
from aeron.common.errors import OutOfBoundsError, IllegalStateError, InvalidArgumentError, CorruptFileError


cdef int check_bounds(Py_ssize_t offset, Py_ssize_t length, Py_ssize_t capacity) except -1:
    if offset < 0 or length < 0 or offset > capacity or length > capacity - offset:
        raise OutOfBoundsError(f"offset={offset} length={length} outside capacity={capacity}")
    return 0


cdef int negative_length(Py_ssize_t length) except -1:
    raise InvalidArgumentError(f"length must be >= 0, got {length}")


_ZEROS = bytes(65536)


def _reserve(fd, Py_ssize_t length, path):
    """Check the file system has ``length`` usable bytes (as the C driver's storage check), then allocate them:
    posix_fallocate, or writing zeros where the file system does not support it."""
    stat = os.fstatvfs(fd)
    usable = stat.f_bavail * stat.f_frsize
    if usable < length:
        raise OSError(errno_codes.ENOSPC, f"insufficient usable storage for new file of length={length} usable={usable}",
                      path)
    try:
        os.posix_fallocate(fd, 0, length)
        return
    except OSError as exc:
        if exc.errno not in (errno_codes.EOPNOTSUPP, errno_codes.EINVAL, errno_codes.ENOSYS):
            raise OSError(exc.errno, exc.strerror, path) from None
    cdef Py_ssize_t offset = 0          # the file is new and empty
    while offset < length:
        offset += os.pwrite(fd, _ZEROS[:min(len(_ZEROS), length - offset)], offset)


@cython.final
cdef class MappedFile:
    """A whole file mapped shared and read-write, holding no file descriptor.

    ``MappedFile(fd, length, path=None)`` maps ``length`` bytes of the open ``fd``; the caller may close
    ``fd`` right away. The memory is unmapped by ``close()`` (refused while a buffer export is alive,
    as ``mmap.close`` refuses) or when the object is collected.
    """

    def __cinit__(self, int fd, Py_ssize_t length, object path=None):
        self.addr = NULL
        self.length = 0
        self.exports = 0
        self.path = path
        if length <= 0:
            raise InvalidArgumentError(f"cannot map {length} bytes of {path!r}")
        cdef void *addr = mmap(NULL, <size_t>length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
        if addr == MAP_FAILED:
            err = errno
            raise OSError(err, os.strerror(err), path)
        self.addr = <uint8_t *>addr
        self.length = length

    def __dealloc__(self):
        # only reached with no exports left: every export holds a reference to us
        if self.addr != NULL:
            munmap(self.addr, <size_t>self.length)
            self.addr = NULL

    def __getbuffer__(self, Py_buffer *view, int flags):
        if self.addr == NULL:
            raise IllegalStateError(f"mapping of {self.path!r} is closed")
        PyBuffer_FillInfo(view, self, self.addr, self.length, 0, flags)
        self.exports += 1

    def __releasebuffer__(self, Py_buffer *view):
        self.exports -= 1

    def __len__(self):
        return self.length

    @property
    def closed(self):
        return self.addr == NULL

    @property
    def export_count(self):
        return self.exports

    def close(self):
        """Unmap the file. Raises IllegalStateError while a buffer export of it is alive."""
        if self.addr == NULL:
            return
        if self.exports > 0:
            raise IllegalStateError(f"cannot unmap {self.path!r}: {self.exports} exported buffer(s) alive")
        munmap(self.addr, <size_t>self.length)
        self.addr = NULL
        self.length = 0

    def __repr__(self):
        state = "closed" if self.addr == NULL else f"length={self.length}"
        return f"<MappedFile {self.path!r} {state}>"


# no_gc_clear: in a reference cycle the owner must outlive our Py_buffer on it, so the cycle
# collector may not drop `owner` before __dealloc__ releases the buffer.
@cython.final
@cython.no_gc_clear
cdef class AtomicBuffer:
    """A bounded window over writable memory with plain and ordered (acquire/release) accessors.

    ``AtomicBuffer(obj, offset=0, length=-1)`` wraps any writable buffer-protocol object without
    copying. ``AtomicBuffer.map_file(path, ...)`` maps a file shared (``MAP_SHARED``).
    """

    def __cinit__(self, object obj=None, Py_ssize_t offset=0, Py_ssize_t length=-1):
        self.data = NULL
        self.length = 0
        self._has_src = False
        self._owns_mapping = False
        self.exports = 0
        self.closed = False
        self.path = None
        if obj is None:
            raise InvalidArgumentError("AtomicBuffer needs a writable buffer")
        PyObject_GetBuffer(obj, &self._src, PyBUF_WRITABLE | PyBUF_ANY_CONTIGUOUS)
        self._has_src = True
        if length < 0:
            length = self._src.len - offset
        try:
            check_bounds(offset, length, self._src.len)
        except BaseException:
            PyBuffer_Release(&self._src)
            self._has_src = False
            raise
        self.owner = obj
        self.data = <uint8_t *>self._src.buf + offset
        self.length = length

    def __dealloc__(self):
        if self._has_src:
            PyBuffer_Release(&self._src)
            self._has_src = False

    @staticmethod
    def map_file(path, Py_ssize_t length=-1, bint create=False, bint sparse=True, Py_ssize_t min_length=0,
                 object mode=None):
        """Map ``path`` shared and read-write.

        With ``create`` the file is made (it must not exist) with ``length`` bytes whose space is
        reserved before it is mapped (a store into a mapped hole on a full disk is SIGBUS; ``sparse`` no
        longer changes that, only the log metadata records it): too little usable space, or a failed
        reservation, raises OSError ENOSPC naming the file and nothing is left behind. Permissions ``mode`` exactly (0o000-0o777), or 0o666 less the umask when
        ``mode`` is None, as the C driver creates its files. Without it the existing file is mapped
        whole; a file shorter than ``min_length`` raises CorruptFileError naming it.
        """
        path = os.fspath(path)
        if create:
            if length <= 0:
                raise InvalidArgumentError(f"length must be > 0 to create {path!r}, got {length}")
            if mode is not None and not 0 <= mode <= 0o777:
                raise InvalidArgumentError(f"file mode {mode!r} of {path!r} is not in 0o000..0o777")
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666 if mode is None else mode)
            try:
                if mode is not None:
                    os.fchmod(fd, mode)         # exactly as configured: the umask applies to open() only
                _reserve(fd, length, path)
                m = MappedFile(fd, length, path)
            except BaseException:
                os.close(fd)
                os.unlink(path)
                raise
            os.close(fd)
        else:
            fd = os.open(path, os.O_RDWR)
            try:
                size = os.fstat(fd).st_size
                if size < max(min_length, 1):
                    raise CorruptFileError(f"file too short: {size} bytes, need at least {max(min_length, 1)}",
                                           path=path, offset=size)
                m = MappedFile(fd, size, path)
            finally:
                os.close(fd)
        cdef AtomicBuffer buf = AtomicBuffer(m)
        buf._owns_mapping = True
        buf.path = path
        return buf

    cdef int check_open(self) except -1:
        if self.closed:
            raise IllegalStateError("AtomicBuffer is closed")
        return 0

    cdef int check(self, Py_ssize_t offset, Py_ssize_t length) except -1:
        if self.closed:
            raise IllegalStateError("AtomicBuffer is closed")
        return check_bounds(offset, length, self.length)

    # -- buffer protocol: exports are counted so close() can refuse while a view is alive --------
    def __getbuffer__(self, Py_buffer *view, int flags):
        self.check_open()
        PyBuffer_FillInfo(view, self, self.data, self.length, 0, flags)
        self.exports += 1

    def __releasebuffer__(self, Py_buffer *view):
        self.exports -= 1

    def __len__(self):
        return self.length

    @property
    def capacity(self):
        return self.length

    @property
    def is_closed(self):
        return self.closed

    @property
    def export_count(self):
        return self.exports

    @property
    def address(self):
        """Address of the first byte (for diagnostics and ctypes interop)."""
        self.check_open()
        return <size_t>self.data

    def close(self):
        """Release the memory. Raises IllegalStateError while a memoryview of it is alive."""
        if self.closed:
            return
        if self.exports > 0:
            raise IllegalStateError(f"cannot close AtomicBuffer: {self.exports} exported view(s) alive")
        self.closed = True
        self.data = NULL
        self.length = 0
        if self._has_src:
            PyBuffer_Release(&self._src)
            self._has_src = False
        if self._owns_mapping:
            self.owner.close()
        self.owner = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def view(self, Py_ssize_t offset=0, Py_ssize_t length=-1):
        """A memoryview of [offset, offset + length) sharing this memory (counted as an export)."""
        if length < 0:
            length = self.length - offset
        self.check(offset, length)
        return memoryview(self)[offset:offset + length]

    # -- plain accessors (little-endian host assumed, as Aeron's files are) -----------------------
    def get_u8(self, Py_ssize_t offset):
        self.check(offset, 1)
        return self.data[offset]

    def put_u8(self, Py_ssize_t offset, uint8_t value):
        self.check(offset, 1)
        self.data[offset] = value

    def get_i16(self, Py_ssize_t offset):
        self.check(offset, 2)
        cdef int16_t v
        memcpy(&v, self.data + offset, 2)
        return v

    def put_i16(self, Py_ssize_t offset, int16_t value):
        self.check(offset, 2)
        memcpy(self.data + offset, &value, 2)

    def get_i32(self, Py_ssize_t offset):
        self.check(offset, 4)
        cdef int32_t v
        memcpy(&v, self.data + offset, 4)
        return v

    def put_i32(self, Py_ssize_t offset, int32_t value):
        self.check(offset, 4)
        memcpy(self.data + offset, &value, 4)

    def get_i64(self, Py_ssize_t offset):
        self.check(offset, 8)
        cdef int64_t v
        memcpy(&v, self.data + offset, 8)
        return v

    def put_i64(self, Py_ssize_t offset, int64_t value):
        self.check(offset, 8)
        memcpy(self.data + offset, &value, 8)

    # -- ordered accessors: these need natural alignment --------------------------------------------
    cdef int check_aligned(self, Py_ssize_t offset, Py_ssize_t size) except -1:
        self.check(offset, size)
        if (<size_t>(self.data + offset)) % size != 0:
            raise InvalidArgumentError(f"offset {offset} is not {size}-byte aligned for an atomic access")
        return 0

    def get_i32_volatile(self, Py_ssize_t offset):
        self.check_aligned(offset, 4)
        return load_acquire_i32(<int32_t *>(self.data + offset))

    def put_i32_ordered(self, Py_ssize_t offset, int32_t value):
        self.check_aligned(offset, 4)
        store_release_i32(<int32_t *>(self.data + offset), value)

    def get_i64_volatile(self, Py_ssize_t offset):
        self.check_aligned(offset, 8)
        return load_acquire_i64(<int64_t *>(self.data + offset))

    def put_i64_ordered(self, Py_ssize_t offset, int64_t value):
        self.check_aligned(offset, 8)
        store_release_i64(<int64_t *>(self.data + offset), value)

    def get_and_add_i32(self, Py_ssize_t offset, int32_t delta):
        self.check_aligned(offset, 4)
        return get_and_add_i32(<int32_t *>(self.data + offset), delta)

    def get_and_add_i64(self, Py_ssize_t offset, int64_t delta):
        self.check_aligned(offset, 8)
        return get_and_add_i64(<int64_t *>(self.data + offset), delta)

    def compare_and_set_i32(self, Py_ssize_t offset, int32_t expected, int32_t desired):
        self.check_aligned(offset, 4)
        return cas_i32(<int32_t *>(self.data + offset), expected, desired)

    def compare_and_set_i64(self, Py_ssize_t offset, int64_t expected, int64_t desired):
        self.check_aligned(offset, 8)
        return cas_i64(<int64_t *>(self.data + offset), expected, desired)

    # -- bytes ---------------------------------------------------------------------------------------
    def get_bytes(self, Py_ssize_t offset, Py_ssize_t length):
        """A copy of [offset, offset + length) as bytes."""
        self.check(offset, length)
        return (<char *>self.data)[offset:offset + length]

    def put_bytes(self, Py_ssize_t offset, const uint8_t[::1] src not None):
        """Copy ``src`` (any contiguous buffer) to ``offset``."""
        cdef Py_ssize_t n = src.shape[0]
        self.check(offset, n)
        if n:
            memcpy(self.data + offset, &src[0], <size_t>n)

    def set_memory(self, Py_ssize_t offset, Py_ssize_t length, uint8_t value):
        self.check(offset, length)
        memset(self.data + offset, value, <size_t>length)

    def is_zero(self, Py_ssize_t offset=0, Py_ssize_t length=-1):
        """True if every byte of the range is zero."""
        if length < 0:
            length = self.length - offset
        self.check(offset, length)
        cdef Py_ssize_t i
        for i in range(offset, offset + length):
            if self.data[i] != 0:
                return False
        return True

    def get_string_ascii(self, Py_ssize_t offset):
        """Aeron's length-prefixed string: i32 length then that many bytes."""
        self.check(offset, 4)
        cdef int32_t n
        memcpy(&n, self.data + offset, 4)
        if n < 0 or n > self.length - offset - 4:
            raise CorruptFileError(f"string length {n} out of range", path=self.path, offset=offset)
        return (<char *>self.data)[offset + 4:offset + 4 + n].decode("ascii", "replace")

    def put_string_ascii(self, Py_ssize_t offset, str value):
        """Write an i32 length then the ASCII bytes; returns bytes written."""
        cdef bytes b = value.encode("ascii")
        cdef int32_t n = <int32_t>len(b)
        self.check(offset, 4 + n)
        memcpy(self.data + offset, &n, 4)
        if n:
            memcpy(self.data + offset + 4, <char *>b, <size_t>n)
        return 4 + n

    def __repr__(self):
        state = "closed" if self.closed else f"capacity={self.length}"
        return f"<AtomicBuffer {state}{' path=' + repr(self.path) if self.path else ''}>"


# Agrona's name for the same thing: every accessor here is bounds-checked at the Python edge and the
# ordered ones are atomic, so one class serves both roles.
UnsafeBuffer = AtomicBuffer
