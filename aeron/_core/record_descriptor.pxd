# SPDX-License-Identifier: Apache-2.0
# What the to-driver ring buffer (ring_buffer) and the to-clients broadcast buffer (broadcast) share, as Agrona's
# ringbuffer.RecordDescriptor and broadcast.RecordDescriptor describe both: `[capacity bytes of records | trailer]`,
# capacity a power of two, each record an int32 length (header included, unaligned), an int32 message type id and
# the payload, records 8-byte aligned, padding records of type -1. The set-up of either buffer over memory
# (records_init, pin_records, unpin) and the record field access are here once.
from cpython.buffer cimport Py_buffer, PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from libc.stdint cimport int32_t, uint8_t

from aeron._core.atomic_buffer cimport AtomicBuffer

cdef enum:
    RECORD_ALIGNMENT = 8                   # records start on 8-byte boundaries
    RECORD_HEADER_LENGTH = 8               # int32 length + int32 type
    RECORD_LENGTH_OFFSET = 0               # record: int32 length (8 + payload, unaligned)
    RECORD_TYPE_OFFSET = 4                 # record: int32 message type id
    RECORD_PADDING_MSG_TYPE_ID = -1        # record type of padding
    RECORD_MIN_CAPACITY = 8                # smallest capacity (aeron_mpsc_rb_init's, one record header)
    RECORD_MAX_CAPACITY = 1 << 30          # Agrona indexes with int: larger buffers cannot be addressed


cdef inline int32_t record_align(int32_t value) noexcept nogil:
    return (value + (RECORD_ALIGNMENT - 1)) & ~(RECORD_ALIGNMENT - 1)


cdef inline int32_t *record_length_ptr(uint8_t *buffer, int32_t offset) noexcept nogil:
    return <int32_t *>(buffer + offset + RECORD_LENGTH_OFFSET)


cdef inline int32_t *record_type_ptr(uint8_t *buffer, int32_t offset) noexcept nogil:
    return <int32_t *>(buffer + offset + RECORD_TYPE_OFFSET)


cdef inline Py_ssize_t capacity_of(Py_ssize_t length, Py_ssize_t trailer_length) noexcept nogil:
    # The capacity of a buffer of `length` bytes that ends with a trailer, or -1 when it is not a power of two in
    # [RECORD_MIN_CAPACITY, RECORD_MAX_CAPACITY].
    cdef Py_ssize_t capacity = length - trailer_length
    if capacity < RECORD_MIN_CAPACITY or capacity > RECORD_MAX_CAPACITY or (capacity & (capacity - 1)) != 0:
        return -1
    return capacity


cdef inline uint8_t *records_init(uint8_t *buffer, Py_ssize_t length, Py_ssize_t trailer_length, int32_t *capacity,
                                  int32_t *max_msg_length) noexcept nogil:
    # The trailer of a buffer of `length` bytes at `buffer`, its capacity and its longest message (an eighth of the
    # capacity, as Agrona's) set; NULL when the capacity is not valid.
    cdef Py_ssize_t c = capacity_of(length, trailer_length)
    if c < 0:
        return NULL
    capacity[0] = <int32_t>c
    max_msg_length[0] = <int32_t>(c >> 3)
    return buffer + c


cdef inline int pin_records(AtomicBuffer buffer, object path, Py_ssize_t file_offset, str name,
                            Py_ssize_t trailer_length, Py_buffer *pin) except -1:
    # Take an export of a buffer's memory for a ring or broadcast buffer (cold: once per buffer) into `pin`, so that
    # it cannot be closed under us, once it is checked: open, 8-byte aligned and of a valid capacity;
    # ConfigurationError otherwise, or CorruptFileError (path and offset) when the memory comes from a file (`path`,
    # else the buffer's own).
    from aeron.common.errors import ConfigurationError, CorruptFileError, InvalidArgumentError
    buffer.check_open()
    if path is None:
        path = buffer.path
    cdef Py_ssize_t length = buffer.length
    cdef str message = ""
    if length < trailer_length + RECORD_MIN_CAPACITY:
        message = (f"{name} length {length} is too short: need capacity >= {RECORD_MIN_CAPACITY} plus a "
                   f"{trailer_length}-byte trailer")
    elif (<size_t>buffer.data) % 8 != 0:
        raise InvalidArgumentError(f"{name} memory must be 8-byte aligned")
    elif capacity_of(length, trailer_length) < 0:
        message = (f"{name} capacity {length - trailer_length} (length {length} - trailer {trailer_length}) is not "
                   f"a power of two in {RECORD_MIN_CAPACITY}..{RECORD_MAX_CAPACITY}")
    if message:
        if path is not None:
            raise CorruptFileError(message, path=path, offset=file_offset)
        raise ConfigurationError(message)
    PyObject_GetBuffer(buffer, pin, PyBUF_SIMPLE)
    return 0


cdef inline void unpin(Py_buffer *pin, bint *pinned) noexcept:
    # Release what pin_records took, once.
    if pinned[0]:
        PyBuffer_Release(pin)
        pinned[0] = False
