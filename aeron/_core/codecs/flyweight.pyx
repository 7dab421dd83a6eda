# SPDX-License-Identifier: Apache-2.0
# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The base of the generated SBE codecs (codegen/sbe_codegen.py): a flyweight over a caller's buffer.

What every message shares lives here once (holding the buffer, bounds checks, the message header, walking and
checking the variable-length fields), so a generated class is only its constants and one small property per
field. Generated classes set the per-message constants (template id, block length, the variable-length fields'
versions and limits, the repeating groups' flyweights) in their ``__cinit__``.

Repeating groups follow SBE's layout: after the root block, each group is a ``groupSizeEncoding`` header
(blockLength uint16, numInGroup uint16) and then its entries, each a fixed block followed by the entry's own
groups and variable-length fields; the message's variable-length fields come after its groups. A group
flyweight (GroupEncoderFlyweight, GroupDecoderFlyweight) is one entry at a time, moved on by ``next()`` (the
encoder) or by iterating (the decoder), as SBE's Java codecs do.
"""
from cpython.buffer cimport PyBUF_ANY_CONTIGUOUS, PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_FromStringAndSize

from aeron.common.errors import IllegalStateError, MalformedMessageError, OutOfBoundsError


cdef int raise_unwrapped(Flyweight f) except -1:
    if isinstance(f, GroupEncoderFlyweight):
        raise IllegalStateError(f"{f._name}: no entry to write (call next() after <group>_count(), and before the "
                                f"message writes what follows the group)")
    if isinstance(f, GroupDecoderFlyweight):
        raise IllegalStateError(f"{f._name}: no entry to read (iterate the group from its message decoder)")
    raise IllegalStateError(f"{f._name} is not wrapped over a buffer")


cdef class Flyweight:
    """A view of one message in a buffer: the buffer is held (not copied) until the next wrap or release."""

    def __cinit__(self):
        self._header_length = MESSAGE_HEADER_LENGTH

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
    """Writes one message body in place; repeating groups, then variable-length fields, go in schema order."""

    def wrap(self, buffer, Py_ssize_t offset=0):
        """Encode the message body at ``buffer[offset:]`` (no header); returns self."""
        self._acquire(buffer, True)
        if offset < 0 or offset + self._schema_block_length > self._capacity:
            raise OutOfBoundsError(f"{self._name} at {offset} needs {self._schema_block_length} bytes: "
                                   f"the buffer has {self._capacity}")
        self._offset = offset
        self._limit = offset + self._schema_block_length
        self._var_index = 0
        self._group_index = 0
        self._open_group = None
        return self

    def wrap_and_apply_header(self, buffer, Py_ssize_t offset=0):
        """Write the message header at ``offset``, then wrap the body after it; returns self.

        Only the standard header fields are written (blockLength, templateId, schemaId, version): a longer
        header's other fields (the node-state file's frameLength) are the caller's, as in SBE's Java codecs."""
        self._acquire(buffer, True)
        if offset < 0 or offset + self._header_length + self._schema_block_length > self._capacity:
            raise OutOfBoundsError(f"{self._name} at {offset} needs "
                                   f"{self._header_length + self._schema_block_length} bytes: "
                                   f"the buffer has {self._capacity}")
        put_uint16_t(self._ptr, offset, <uint16_t>self._schema_block_length)
        put_uint16_t(self._ptr, offset + 2, <uint16_t>self._template_id)
        put_uint16_t(self._ptr, offset + 4, <uint16_t>self._schema_id)
        put_uint16_t(self._ptr, offset + 6, <uint16_t>self._schema_version)
        return self.wrap(buffer, offset + self._header_length)

    def release(self):
        """Let go of the buffer, and so do this message's group flyweights."""
        Flyweight.release(self)
        self._open_group = None
        if self._group_encoders is not None:
            for g in self._group_encoders:
                g.release()

    @property
    def encoded_length(self):
        """Bytes of the body written so far: the block, the groups and the variable-length fields."""
        return self._current_limit() - self._offset

    cdef Py_ssize_t _current_limit(self):
        # the innermost group being written holds the limit
        cdef EncoderFlyweight f = self
        while f._open_group is not None:
            f = <EncoderFlyweight>f._open_group
        return f._limit

    cdef int _close_groups(self, int upto) except -1:
        # close the group being written (taking back the limit), then write groups [_group_index, upto) empty
        cdef EncoderFlyweight g
        if self._open_group is not None:
            g = <EncoderFlyweight>self._open_group
            self._open_group = None
            self._limit = (<GroupEncoderFlyweight>g)._close()
        while self._group_index < upto:
            g = <EncoderFlyweight>self._group_encoders[self._group_index]
            if self._limit + GROUP_HEADER_LENGTH > self._capacity:
                raise OutOfBoundsError(f"{g._name}: group header past the end of a {self._capacity}-byte buffer")
            put_uint16_t(self._ptr, self._limit, <uint16_t>g._schema_block_length)
            put_uint16_t(self._ptr, self._limit + 2, 0)
            self._limit += GROUP_HEADER_LENGTH
            self._group_index += 1
        return 0

    cdef object _begin_group(self, int index, Py_ssize_t count):
        cdef GroupEncoderFlyweight g = <GroupEncoderFlyweight>self._group_encoders[index]
        wrapped(self)
        if count < 0 or count > GROUP_COUNT_MAX:
            raise ValueError(f"{g._name}: count {count} outside 0..{GROUP_COUNT_MAX}")
        if self._var_index > 0:
            raise IllegalStateError(f"{g._name} written after a variable-length field of {self._name}")
        if self._group_index > index:
            raise IllegalStateError(f"{g._name} written twice, or after a later group")
        self._close_groups(index)
        g._open(self, count)
        self._group_index = index + 1
        self._open_group = g
        return g

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
        if self._group_count:
            self._close_groups(self._group_count)
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


cdef class GroupEncoderFlyweight(EncoderFlyweight):
    """Writes the entries of one repeating group, one at a time: the message's ``<group>_count(n)`` writes the
    group header and returns this; each ``next()`` starts an entry, whose fields, groups and variable-length
    fields are then written as a message's are. Skipped groups or variable-length fields of an entry are
    written empty when the next entry starts or the parent writes what follows the group."""

    def wrap(self, buffer, Py_ssize_t offset=0):
        """Not for groups: the message's ``<group>_count(n)`` positions them."""
        raise IllegalStateError(f"{self._name} is a repeating group: use its message's count method")

    def wrap_and_apply_header(self, buffer, Py_ssize_t offset=0):
        """Not for groups: the message's ``<group>_count(n)`` positions them."""
        raise IllegalStateError(f"{self._name} is a repeating group: use its message's count method")

    def release(self):
        """Let go of the buffer."""
        EncoderFlyweight.release(self)
        self._base = NULL

    cdef int _open(self, EncoderFlyweight parent, Py_ssize_t count) except -1:
        # same buffer object as the parent (a new view only when it changed), header at the parent's limit
        if not self._held or self._view.obj != parent._view.obj:
            self._acquire(<object>parent._view.obj, True)
        self._base = <uint8_t*>self._view.buf      # _ptr is NULL between entries, so from the view
        self._ptr = NULL            # no entry until next()
        if parent._limit + GROUP_HEADER_LENGTH > self._capacity:
            raise OutOfBoundsError(f"{self._name}: group header past the end of a {self._capacity}-byte buffer")
        put_uint16_t(self._base, parent._limit, <uint16_t>self._schema_block_length)
        put_uint16_t(self._base, parent._limit + 2, <uint16_t>count)
        self._header_pos = parent._limit
        self._limit = parent._limit + GROUP_HEADER_LENGTH
        self._count = count
        self._index = 0
        self._open_group = None
        return 0

    def next(self):
        """Start the next entry (after the previous one's last field); returns self."""
        if self._base == NULL:
            raise IllegalStateError(f"{self._name}: the group is not being written (call its message's count "
                                    f"method first)")
        if self._index >= self._count:
            raise IllegalStateError(f"{self._name}: all {self._count} entries declared by the count are written")
        if self._index > 0:
            self._close_entry()
        if self._limit + self._schema_block_length > self._capacity:
            raise OutOfBoundsError(f"{self._name}: entry {self._index} past the end of a {self._capacity}-byte "
                                   f"buffer")
        self._ptr = self._base
        self._offset = self._limit
        self._limit += self._schema_block_length
        self._var_index = 0
        self._group_index = 0
        self._index += 1
        return self

    def reset_count_to_index(self):
        """Rewrite the header's count as the number of entries started so far (for a count not known up front,
        as SBE's ``resetCountToIndex``); returns that count."""
        if self._base == NULL:
            raise IllegalStateError(f"{self._name}: the group is not being written")
        self._count = self._index
        put_uint16_t(self._base, self._header_pos + 2, <uint16_t>self._count)
        return self._count

    @property
    def count(self):
        """Entries declared by the group header."""
        return self._count

    cdef int _close_entry(self) except -1:
        # an entry ends with all its groups and variable-length fields present, skipped ones empty
        self._close_groups(self._group_count)
        if self._limit + 4 * (self._var_count - self._var_index) > self._capacity:
            raise OutOfBoundsError(f"{self._name}: entry {self._index - 1} past the end of a {self._capacity}-byte "
                                   f"buffer")
        while self._var_index < self._var_count:
            put_uint32_t(self._base, self._limit, 0)
            self._limit += 4
            self._var_index += 1
        return 0

    cdef Py_ssize_t _close(self) except -1:
        if self._index < self._count:
            self._ptr = NULL        # closed either way: a late write through this group is refused
            self._base = NULL
            raise IllegalStateError(f"{self._name}: {self._count} entries declared by the count, {self._index} "
                                    f"written (reset_count_to_index() fixes the count)")
        if self._index > 0:
            self._close_entry()
        self._ptr = NULL
        self._base = NULL
        return self._limit


cdef class DecoderFlyweight(Flyweight):
    """Reads one message body in place, by the block length and version it was written with (SBE evolution)."""

    def wrap(self, buffer, Py_ssize_t offset, int acting_block_length, int acting_version, Py_ssize_t end=-1):
        """Read the body at ``buffer[offset:end]`` written with this block length and schema version; checks every
        repeating group and variable-length field lies inside (MalformedMessageError if not). Returns self."""
        self._acquire(buffer, False)
        cdef Py_ssize_t limit = self._end_of(offset, end)
        self._limit = self._locate(offset, acting_block_length, acting_version, limit)
        return self

    def wrap_header(self, buffer, Py_ssize_t offset=0, Py_ssize_t end=-1):
        """Check the message header at ``offset`` names this template and schema, then wrap the body after it.
        Returns self."""
        self._acquire(buffer, False)
        cdef Py_ssize_t limit = self._end_of(offset, end)
        if offset < 0 or offset + self._header_length > limit:
            raise MalformedMessageError(f"{self._name}: shorter than the {self._header_length}-byte message header",
                                        type_id=self._template_id, offset=offset)
        cdef int template_id = get_uint16_t(self._ptr, offset + 2)
        cdef int schema_id = get_uint16_t(self._ptr, offset + 4)
        if template_id != self._template_id or schema_id != self._schema_id:
            raise MalformedMessageError(f"expected {self._name} (template {self._template_id} of schema "
                                        f"{self._schema_id}), found template {template_id} of schema {schema_id}",
                                        type_id=template_id, offset=offset)
        return self.wrap(buffer, offset + self._header_length, get_uint16_t(self._ptr, offset),
                         get_uint16_t(self._ptr, offset + 6), limit)

    def release(self):
        """Let go of the buffer, and so do this message's group flyweights."""
        Flyweight.release(self)
        if self._group_decoders is not None:
            for g in self._group_decoders:
                g.release()

    cdef Py_ssize_t _locate(self, Py_ssize_t offset, int block_length, int version, Py_ssize_t limit) except -1:
        # check the block, then walk the groups (recording where each starts) and the variable-length fields;
        # returns where the body ends
        if offset < 0 or block_length < 0 or offset + block_length > limit:
            raise MalformedMessageError(f"{self._name} block of {block_length} bytes at {offset} runs past "
                                        f"the message end {limit}", type_id=self._template_id, offset=offset)
        self._offset = offset
        self._block_length = block_length
        self._version = version
        self._end = limit
        cdef Py_ssize_t pos = offset + block_length
        cdef int i
        cdef GroupDecoderFlyweight g
        for i in range(self._group_count):
            g = <GroupDecoderFlyweight>self._group_decoders[i]
            self._group_pos[i] = pos if version >= g._since_version else -1
            pos = g._skip(self._ptr, pos, limit, version)
        return self._walk_vars(self._ptr, pos, limit, version, True)

    cdef Py_ssize_t _walk_vars(self, const uint8_t* p, Py_ssize_t pos, Py_ssize_t limit, int version,
                               bint record) except -1:
        cdef uint32_t n
        cdef int i
        for i in range(self._var_count):
            if version < self._var_since[i]:
                if record:
                    self._var_pos[i] = pos      # a field newer than the sender's version is absent, so empty
                    self._var_len[i] = 0
                continue
            if pos + 4 > limit:
                raise MalformedMessageError(f"{self._name}.{self._var_names[i]}: length field past the message end",
                                            type_id=self._template_id, offset=pos)
            n = get_uint32_t(p, pos)
            if n > self._var_max[i] or <Py_ssize_t>n > limit - pos - 4:
                raise MalformedMessageError(f"{self._name}.{self._var_names[i]}: length {n} runs past the message "
                                            f"end {limit}", type_id=self._template_id, offset=pos)
            if record:
                self._var_pos[i] = pos + 4
                self._var_len[i] = <Py_ssize_t>n
            pos += 4 + <Py_ssize_t>n
        return pos

    cdef object _group(self, int index):
        cdef GroupDecoderFlyweight g = <GroupDecoderFlyweight>self._group_decoders[index]
        wrapped(self)
        g._wrap_group(self, self._group_pos[index])
        return g

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


cdef class GroupDecoderFlyweight(DecoderFlyweight):
    """Reads the entries of one repeating group: iterating it moves this flyweight from entry to entry (the same
    object each time, as SBE's Java codecs do), and each entry reads as a message body does. A group newer than
    the message's acting version is empty. Everything was bounds-checked when the message was wrapped, and
    each entry is checked again as it is reached."""

    def wrap(self, buffer, Py_ssize_t offset, int acting_block_length, int acting_version, Py_ssize_t end=-1):
        """Not for groups: the message decoder's group property positions them."""
        raise IllegalStateError(f"{self._name} is a repeating group: use its message decoder's property")

    def wrap_header(self, buffer, Py_ssize_t offset=0, Py_ssize_t end=-1):
        """Not for groups: the message decoder's group property positions them."""
        raise IllegalStateError(f"{self._name} is a repeating group: use its message decoder's property")

    def release(self):
        """Let go of the buffer."""
        DecoderFlyweight.release(self)
        self._base = NULL
        self._count = 0
        self._index = 0

    cdef int _wrap_group(self, DecoderFlyweight parent, Py_ssize_t pos) except -1:
        if not self._held or self._view.obj != parent._view.obj:
            self._acquire(<object>parent._view.obj, False)
        self._base = <uint8_t*>self._view.buf      # _ptr is NULL between entries, so from the view
        self._ptr = NULL            # no entry until the first next
        self._version = parent._version
        self._end = parent._end
        self._index = 0
        if pos < 0:                 # newer than the sender's version
            self._count = 0
            self._block_length = self._schema_block_length
            self._next_pos = parent._end
            return 0
        self._block_length = get_uint16_t(self._base, pos)
        self._count = get_uint16_t(self._base, pos + 2)
        self._next_pos = pos + GROUP_HEADER_LENGTH
        return 0

    cdef Py_ssize_t _skip(self, const uint8_t* p, Py_ssize_t pos, Py_ssize_t limit, int version) except -1:
        # walk past this group at pos, checking every entry lies inside limit; returns where the group ends
        if version < self._since_version:
            return pos
        if pos + GROUP_HEADER_LENGTH > limit:
            raise MalformedMessageError(f"{self._name}: group header past the message end {limit}",
                                        type_id=self._template_id, offset=pos)
        cdef Py_ssize_t block = get_uint16_t(p, pos)
        cdef Py_ssize_t count = get_uint16_t(p, pos + 2)
        cdef Py_ssize_t k
        cdef int i
        pos += GROUP_HEADER_LENGTH
        for k in range(count):
            if block > limit - pos:
                raise MalformedMessageError(f"{self._name}: entry {k} of {count} ({block} bytes at {pos}) runs past "
                                            f"the message end {limit}", type_id=self._template_id, offset=pos)
            pos += block
            for i in range(self._group_count):
                pos = (<GroupDecoderFlyweight>self._group_decoders[i])._skip(p, pos, limit, version)
            pos = self._walk_vars(p, pos, limit, version, False)
        return pos

    def __iter__(self):
        return self

    def __next__(self):
        if self._index >= self._count:
            raise StopIteration
        self._ptr = self._base
        self._next_pos = self._limit = self._locate(self._next_pos, self._block_length, self._version, self._end)
        self._index += 1
        return self

    def has_next(self):
        """Whether an entry follows the current one."""
        return self._index < self._count

    @property
    def count(self):
        """Entries in the group (numInGroup of its header)."""
        return self._count

    @property
    def index(self):
        """Entries reached so far: 1 while reading the first."""
        return self._index
