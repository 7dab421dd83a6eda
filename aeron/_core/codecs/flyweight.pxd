# SPDX-License-Identifier: Apache-2.0
from cpython.buffer cimport Py_buffer
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy

cdef enum:
    # Most variable-length fields in one message of any schema generated here (the archive's have at most 4).
    MAX_VAR_FIELDS = 8
    # The standard SBE message header: blockLength, templateId, schemaId, version (uint16 each).
    MESSAGE_HEADER_LENGTH = 8


cdef class Flyweight:
    cdef Py_buffer _view
    cdef bint _held
    cdef uint8_t* _ptr
    cdef Py_ssize_t _capacity
    cdef Py_ssize_t _offset
    cdef Py_ssize_t _limit
    cdef int _template_id
    cdef int _schema_id
    cdef int _schema_version
    cdef int _schema_block_length
    cdef str _name

    cdef int _acquire(self, object buffer, bint writable) except -1


cdef class EncoderFlyweight(Flyweight):
    cdef int _var_index
    cdef int _var_count
    cdef uint32_t _var_max[MAX_VAR_FIELDS]
    cdef tuple _var_names

    cdef int _put_var(self, int index, object value, bint ascii) except -1


cdef class DecoderFlyweight(Flyweight):
    cdef int _block_length
    cdef int _version
    cdef int _var_count
    cdef int _var_since[MAX_VAR_FIELDS]
    cdef uint32_t _var_max[MAX_VAR_FIELDS]
    cdef Py_ssize_t _var_pos[MAX_VAR_FIELDS]
    cdef Py_ssize_t _var_len[MAX_VAR_FIELDS]
    cdef tuple _var_names

    cdef Py_ssize_t _end_of(self, Py_ssize_t offset, Py_ssize_t end) except -2
    cdef str _var_str(self, int index)
    cdef bytes _var_bytes(self, int index)


cdef inline uint8_t* wrapped(Flyweight f) except NULL:
    # every generated accessor goes through this: an accessor of a flyweight never wrapped raises, not crashes
    if f._ptr == NULL:
        raise_unwrapped(f)
    return f._ptr


cdef int raise_unwrapped(Flyweight f) except -1


cdef inline int8_t get_int8_t(const uint8_t* buf, Py_ssize_t pos) noexcept nogil:
    return <int8_t>buf[pos]


cdef inline uint8_t get_uint8_t(const uint8_t* buf, Py_ssize_t pos) noexcept nogil:
    return buf[pos]


cdef inline int16_t get_int16_t(const uint8_t* buf, Py_ssize_t pos) noexcept nogil:
    cdef int16_t v
    memcpy(&v, buf + pos, sizeof(v))
    return v


cdef inline uint16_t get_uint16_t(const uint8_t* buf, Py_ssize_t pos) noexcept nogil:
    cdef uint16_t v
    memcpy(&v, buf + pos, sizeof(v))
    return v


cdef inline int32_t get_int32_t(const uint8_t* buf, Py_ssize_t pos) noexcept nogil:
    cdef int32_t v
    memcpy(&v, buf + pos, sizeof(v))
    return v


cdef inline uint32_t get_uint32_t(const uint8_t* buf, Py_ssize_t pos) noexcept nogil:
    cdef uint32_t v
    memcpy(&v, buf + pos, sizeof(v))
    return v


cdef inline int64_t get_int64_t(const uint8_t* buf, Py_ssize_t pos) noexcept nogil:
    cdef int64_t v
    memcpy(&v, buf + pos, sizeof(v))
    return v


cdef inline uint64_t get_uint64_t(const uint8_t* buf, Py_ssize_t pos) noexcept nogil:
    cdef uint64_t v
    memcpy(&v, buf + pos, sizeof(v))
    return v


cdef inline void put_int8_t(uint8_t* buf, Py_ssize_t pos, int8_t v) noexcept nogil:
    buf[pos] = <uint8_t>v


cdef inline void put_uint8_t(uint8_t* buf, Py_ssize_t pos, uint8_t v) noexcept nogil:
    buf[pos] = v


cdef inline void put_int16_t(uint8_t* buf, Py_ssize_t pos, int16_t v) noexcept nogil:
    memcpy(buf + pos, &v, sizeof(v))


cdef inline void put_uint16_t(uint8_t* buf, Py_ssize_t pos, uint16_t v) noexcept nogil:
    memcpy(buf + pos, &v, sizeof(v))


cdef inline void put_int32_t(uint8_t* buf, Py_ssize_t pos, int32_t v) noexcept nogil:
    memcpy(buf + pos, &v, sizeof(v))


cdef inline void put_uint32_t(uint8_t* buf, Py_ssize_t pos, uint32_t v) noexcept nogil:
    memcpy(buf + pos, &v, sizeof(v))


cdef inline void put_int64_t(uint8_t* buf, Py_ssize_t pos, int64_t v) noexcept nogil:
    memcpy(buf + pos, &v, sizeof(v))


cdef inline void put_uint64_t(uint8_t* buf, Py_ssize_t pos, uint64_t v) noexcept nogil:
    memcpy(buf + pos, &v, sizeof(v))
