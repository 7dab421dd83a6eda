# SPDX-License-Identifier: Apache-2.0
# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The replicated log's entries dispatched by template, for Aeron Cluster's log readers: a clustered service's
``BoundedLogAdapter`` (Aeron's ``BoundedLogAdapter.onMessage``) makes a :class:`LogEntryDispatcher` the delegate of
its one-image reassembly, so that the per-message work before the application's code, reading the message header
and a session message's fields, is compiled.

An entry is a cluster protocol message (schema 111): an 8-byte message header (blockLength, templateId, schemaId,
version), then its block. A SessionMessageHeader (template 1) is read in place (clusterSessionId at +16, timestamp at
+24) and its payload handed on from +32 with the log position after the entry; every other template goes to the
``on_event`` handler with the whole entry, for control-rate decoding in Python. An entry of another schema, or too
short for its header, is a ClusterError.
"""
cimport cython
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t
from libc.string cimport memcpy

from aeron._core.atomic_buffer cimport AtomicBuffer
from aeron._core.term_reader cimport Header, CONTROLLED_ACTION_CONTINUE
from aeron._core cimport frame_descriptor as fd
from aeron._core cimport logbuffer_descriptor as ld
from aeron.common.errors import ClusterError

CLUSTER_SCHEMA_ID = 111
SESSION_MESSAGE_HEADER_TEMPLATE_ID = 1
MESSAGE_HEADER_LENGTH = 8
SESSION_HEADER_LENGTH = 32              # message header + SessionMessageHeader's 24-byte block

cdef enum:
    _SCHEMA_ID = 111
    _SESSION_MESSAGE = 1
    _MESSAGE_HEADER_LENGTH = 8
    _SESSION_HEADER_LENGTH = 32
    _TEMPLATE_ID_OFFSET = 2
    _SCHEMA_ID_OFFSET = 4
    _CLUSTER_SESSION_ID_OFFSET = 16
    _TIMESTAMP_OFFSET = 24


cdef inline uint16_t _u16(const uint8_t *p) noexcept nogil:
    cdef uint16_t v
    memcpy(&v, p, 2)
    return v


cdef inline int64_t _i64(const uint8_t *p) noexcept nogil:
    cdef int64_t v
    memcpy(&v, p, 8)
    return v


cdef inline int64_t _position_after(Header header) except? -1:
    # Header.position without the Python property: the stream position after the (assembled) entry
    return ld.compute_position(fd.frame_i32(header.frame(), fd.TERM_ID_FIELD_OFFSET), header.next_term_offset_c(),
                               header._position_bits_to_shift, header._initial_term_id)


@cython.final
cdef class LogEntryDispatcher:
    """The delegate of a log image's reassembly: dispatches each whole entry and returns CONTINUE."""

    def __init__(self, on_session_message, on_event):
        """``on_session_message(log_position, cluster_session_id, timestamp, buffer, offset, length, header)`` for
        session messages (the payload's offset and length), ``on_event(template_id, buffer, offset, length,
        header)`` for every other entry of the cluster's schema."""
        self.on_session_message = on_session_message
        self.on_event = on_event

    def __call__(self, AtomicBuffer buffer not None, Py_ssize_t offset, Py_ssize_t length, Header header not None):
        buffer.check(offset, length)
        if length < _MESSAGE_HEADER_LENGTH:
            raise ClusterError(f"log entry of {length} bytes is shorter than its message header")
        cdef const uint8_t *message = buffer.data + offset
        cdef uint16_t schema_id = _u16(message + _SCHEMA_ID_OFFSET)
        if schema_id != _SCHEMA_ID:
            raise ClusterError(f"expected schemaId={_SCHEMA_ID}, actual={schema_id}")
        cdef uint16_t template_id = _u16(message + _TEMPLATE_ID_OFFSET)
        if template_id == _SESSION_MESSAGE:
            if length < _SESSION_HEADER_LENGTH:
                raise ClusterError(f"session message of {length} bytes is shorter than its session header")
            self.on_session_message(_position_after(header), _i64(message + _CLUSTER_SESSION_ID_OFFSET),
                                    _i64(message + _TIMESTAMP_OFFSET), buffer, offset + _SESSION_HEADER_LENGTH,
                                    length - _SESSION_HEADER_LENGTH, header)
        else:
            self.on_event(template_id, buffer, offset, length, header)
        return CONTROLLED_ACTION_CONTINUE
