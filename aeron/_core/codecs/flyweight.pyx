# SPDX-License-Identifier: Apache-2.0
# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The base of the generated SBE codecs (codegen/sbe_codegen.py): a flyweight over a caller's buffer.

What every message shares lives here once (holding the buffer, bounds checks, the message header, walking and
checking the variable-length fields), so a generated class is only its constants and one small property per
field. Generated classes set the per-message constants (template id, block length, the variable-length fields'
versions and limits) in their ``__cinit__``.
"""
from cpython.buffer cimport PyBUF_ANY_CONTIGUOUS, PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_FromStringAndSize

from aeron.common.errors import IllegalStateError, MalformedMessageError, OutOfBoundsError


cdef int raise_unwrapped(Flyweight f) except -1:
    raise IllegalStateError(f"{f._name} is not wrapped over a buffer")


cdef class Flyweight:
    """A view of one message in a buffer: the buffer is held (not copied) until the next wrap or release."""

    def __dealloc__(self):
        if self._held:
            PyBuffer_Release(&self._view)

    cdef int _acquire(self, object buffer, bint writable) except -1:
        cdef Py_buffer view
        PyObject_GetBuffer(buffer, &view, (PyBUF_WRITABLE | PyBUF_ANY_CONTIGUOUS) if writable else PyBUF_ANY_CONTIGUOUS)
        if self._held:
            PyBuffer_Release(&self._view)
        self._view = view
        self._held = True
        self._ptr = <uint8_t*>view.buf
        self._capacity = view.len
        return 0

    def release(self):
        """Let go of the buffer (a wrap holds it, e.g. keeping an mmap from closing)."""
        if self._held:
            PyBuffer_Release(&self._view)
            self._held = False
        self._ptr = NULL
        self._capacity = 0
        self._offset = 0
        self._limit = 0

    @property
    def offset(self):
        """Where the body starts in the buffer."""
        return self._offset

    @property
    def encoded_length(self):
        """Bytes of the body: the block plus the variable-length fields (written so far, for an encoder)."""
        return self._limit - self._offset


cdef class EncoderFlyweight(Flyweight):
    """Writes one message body in place; variable-length fields go in schema order."""

    def wrap(self, buffer, Py_ssize_t offset=0):
        """Encode the message body at ``buffer[offset:]`` (no header); returns self."""
        self._acquire(buffer, True)
        if offset < 0 or offset + self._schema_block_length > self._capacity:
            raise OutOfBoundsError(f"{self._name} at {offset} needs {self._schema_block_length} bytes: "
                                   f"the buffer has {self._capacity}")
        self._offset = offset
        self._limit = offset + self._schema_block_length
        self._var_index = 0
        return self

    def wrap_and_apply_header(self, buffer, Py_ssize_t offset=0):
        """Write the message header at ``offset``, then wrap the body after it; returns self."""
        self._acquire(buffer, True)
        if offset < 0 or offset + MESSAGE_HEADER_LENGTH + self._schema_block_length > self._capacity:
            raise OutOfBoundsError(f"{self._name} at {offset} needs "
                                   f"{MESSAGE_HEADER_LENGTH + self._schema_block_length} bytes: "
                                   f"the buffer has {self._capacity}")
        put_uint16_t(self._ptr, offset, <uint16_t>self._schema_block_length)
        put_uint16_t(self._ptr, offset + 2, <uint16_t>self._template_id)
        put_uint16_t(self._ptr, offset + 4, <uint16_t>self._schema_id)
        put_uint16_t(self._ptr, offset + 6, <uint16_t>self._schema_version)
        return self.wrap(buffer, offset + MESSAGE_HEADER_LENGTH)

    cdef int _put_var(self, int index, object value, bint ascii) except -1:
        cdef bytes data
        cdef str name = self._var_names[index]
        wrapped(self)
        if isinstance(value, str):
            try:
                data = (<str>value).encode("ascii")
            except UnicodeEncodeError as ex:
                raise ValueError(f"{self._name}.{name} must be US-ASCII: {value!r}") from ex
        else:
            data = bytes(value)
        cdef Py_ssize_t n = len(data)
        if self._var_index > index:
            raise IllegalStateError(f"{self._name}.{name} written after a later variable-length field")
        if n > self._var_max[index]:
            raise ValueError(f"{self._name}.{name} is {n} bytes: at most {self._var_max[index]}")
        cdef Py_ssize_t needed = 4 * (index - self._var_index + 1) + n
        if self._limit + needed > self._capacity:
            raise OutOfBoundsError(f"{self._name}.{name}: {n} bytes past the end of a {self._capacity}-byte buffer")
        while self._var_index < index:     # a skipped field is written empty
            put_uint32_t(self._ptr, self._limit, 0)
            self._limit += 4
            self._var_index += 1
        put_uint32_t(self._ptr, self._limit, <uint32_t>n)
        if n:
            memcpy(self._ptr + self._limit + 4, <const char*>data, <size_t>n)
        self._limit += 4 + n
        self._var_index += 1
        return 0


cdef class DecoderFlyweight(Flyweight):
    """Reads one message body in place, by the block length and version it was written with (SBE evolution)."""

    def wrap(self, buffer, Py_ssize_t offset, int acting_block_length, int acting_version, Py_ssize_t end=-1):
        """Read the body at ``buffer[offset:end]`` written with this block length and schema version; checks every
        variable-length field lies inside (MalformedMessageError if not). Returns self."""
        self._acquire(buffer, False)
        cdef Py_ssize_t limit = self._end_of(offset, end)
        if offset < 0 or acting_block_length < 0 or offset + acting_block_length > limit:
            raise MalformedMessageError(f"{self._name} block of {acting_block_length} bytes at {offset} runs past "
                                        f"the message end {limit}", type_id=self._template_id, offset=offset)
        self._offset = offset
        self._block_length = acting_block_length
        self._version = acting_version
        cdef Py_ssize_t pos = offset + acting_block_length
        cdef uint32_t n
        cdef int i
        for i in range(self._var_count):
            if acting_version < self._var_since[i]:
                self._var_pos[i] = pos      # a field newer than the sender's version is absent, so empty
                self._var_len[i] = 0
                continue
            if pos + 4 > limit:
                raise MalformedMessageError(f"{self._name}.{self._var_names[i]}: length field past the message end",
                                            type_id=self._template_id, offset=pos)
            n = get_uint32_t(self._ptr, pos)
            if n > self._var_max[i] or <Py_ssize_t>n > limit - pos - 4:
                raise MalformedMessageError(f"{self._name}.{self._var_names[i]}: length {n} runs past the message "
                                            f"end {limit}", type_id=self._template_id, offset=pos)
            self._var_pos[i] = pos + 4
            self._var_len[i] = <Py_ssize_t>n
            pos += 4 + <Py_ssize_t>n
        self._limit = pos
        return self

    def wrap_header(self, buffer, Py_ssize_t offset=0, Py_ssize_t end=-1):
        """Check the message header at ``offset`` names this template and schema, then wrap the body after it.
        Returns self."""
        self._acquire(buffer, False)
        cdef Py_ssize_t limit = self._end_of(offset, end)
        if offset < 0 or offset + MESSAGE_HEADER_LENGTH > limit:
            raise MalformedMessageError(f"{self._name}: shorter than the {MESSAGE_HEADER_LENGTH}-byte message header",
                                        type_id=self._template_id, offset=offset)
        cdef int template_id = get_uint16_t(self._ptr, offset + 2)
        cdef int schema_id = get_uint16_t(self._ptr, offset + 4)
        if template_id != self._template_id or schema_id != self._schema_id:
            raise MalformedMessageError(f"expected {self._name} (template {self._template_id} of schema "
                                        f"{self._schema_id}), found template {template_id} of schema {schema_id}",
                                        type_id=template_id, offset=offset)
        return self.wrap(buffer, offset + MESSAGE_HEADER_LENGTH, get_uint16_t(self._ptr, offset),
                         get_uint16_t(self._ptr, offset + 6), limit)

    cdef Py_ssize_t _end_of(self, Py_ssize_t offset, Py_ssize_t end) except -2:
        if end < 0:
            return self._capacity
        if end > self._capacity or end < offset:
            raise OutOfBoundsError(f"end {end} outside the buffer (offset {offset}, capacity {self._capacity})")
        return end

    @property
    def acting_block_length(self):
        """The block length it was wrapped with."""
        return self._block_length

    @property
    def acting_version(self):
        """The schema version it was wrapped with."""
        return self._version

    cdef str _var_str(self, int index):
        return self._var_bytes(index).decode("ascii", "replace")

    cdef bytes _var_bytes(self, int index):
        wrapped(self)
        return PyBytes_FromStringAndSize(<const char*>self._ptr + self._var_pos[index], self._var_len[index])
