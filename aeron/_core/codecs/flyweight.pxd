# SPDX-License-Identifier: Apache-2.0
from cpython.buffer cimport Py_buffer
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy

cdef enum:
    # Most variable-length fields in one message of any schema generated here (the archive's have at most 4).
    MAX_VAR_FIELDS = 8
    # The standard SBE message header: blockLength, templateId, schemaId, version (uint16 each). A schema may
    # declare a longer one (the cluster's node-state file: 16 bytes); its classes set _header_length.
    MESSAGE_HEADER_LENGTH = 8
    # Most repeating groups at one level of a message (the cluster's have at most 2).
    MAX_GROUPS = 4
    # groupSizeEncoding: blockLength uint16, numInGroup uint16.
    GROUP_HEADER_LENGTH = 4
    # numInGroup is a uint16 whose 65535 is SBE's null value, so an encoder writes at most 65534 entries.
    GROUP_COUNT_MAX = 65534


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
    cdef int _header_length
    cdef str _name

    cdef int _acquire(self, object buffer, bint writable) except -1


cdef class EncoderFlyweight(Flyweight):
    cdef int _var_index
    cdef int _var_count
    cdef uint32_t _var_max[MAX_VAR_FIELDS]
    cdef tuple _var_names
    # repeating groups: written in schema order after the block and before the variable-length fields; the
    # group being written holds the limit until its parent writes something after it
    cdef int _group_count
    cdef int _group_index
    cdef tuple _group_encoders
    cdef object _open_group          # the GroupEncoderFlyweight being written, or None

    cdef int _put_var(self, int index, object value, bint ascii) except -1
    cdef int _close_groups(self, int upto) except -1
    cdef object _begin_group(self, int index, Py_ssize_t count)
    cdef Py_ssize_t _current_limit(self)


cdef class GroupEncoderFlyweight(EncoderFlyweight):
    cdef uint8_t* _base
    cdef Py_ssize_t _header_pos
    cdef Py_ssize_t _count
    cdef Py_ssize_t _index

    cdef int _open(self, EncoderFlyweight parent, Py_ssize_t count) except -1
    cdef int _close_entry(self) except -1
    cdef Py_ssize_t _close(self) except -1


cdef class DecoderFlyweight(Flyweight):
    cdef int _block_length
    cdef int _version
    cdef int _var_count
    cdef int _var_since[MAX_VAR_FIELDS]
    cdef uint32_t _var_max[MAX_VAR_FIELDS]
    cdef Py_ssize_t _var_pos[MAX_VAR_FIELDS]
    cdef Py_ssize_t _var_len[MAX_VAR_FIELDS]
    cdef tuple _var_names
    cdef Py_ssize_t _end
    cdef int _group_count
    cdef tuple _group_decoders
    cdef Py_ssize_t _group_pos[MAX_GROUPS]

    cdef Py_ssize_t _end_of(self, Py_ssize_t offset, Py_ssize_t end) except -2
    cdef Py_ssize_t _locate(self, Py_ssize_t offset, int block_length, int version, Py_ssize_t limit) except -1
    cdef Py_ssize_t _walk_vars(self, const uint8_t* p, Py_ssize_t pos, Py_ssize_t limit, int version,
                               bint record) except -1
    cdef object _group(self, int index)
    cdef str _var_str(self, int index)
    cdef bytes _var_bytes(self, int index)


cdef class GroupDecoderFlyweight(DecoderFlyweight):
    cdef int _since_version
    cdef uint8_t* _base
    cdef Py_ssize_t _count
    cdef Py_ssize_t _index
    cdef Py_ssize_t _next_pos

    cdef int _wrap_group(self, DecoderFlyweight parent, Py_ssize_t pos) except -1
    cdef Py_ssize_t _skip(self, const uint8_t* p, Py_ssize_t pos, Py_ssize_t limit, int version) except -1


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
