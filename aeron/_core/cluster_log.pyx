# SPDX-License-Identifier: Apache-2.0
# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The replicated log's entries dispatched by template, for a clustered service: the compiled part of Aeron's
``BoundedLogAdapter.onFragment``/``onMessage`` and of ``ClusteredServiceAgent.onSessionMessage``, so that the work
a session message costs before the application's code runs is one C call from the image's poll.

An entry is a cluster protocol message (schema 111): an 8-byte message header (blockLength, templateId, schemaId,
version), then its block. An unfragmented entry is dispatched from the term; a fragmented one is reassembled first
(an ImageControlledFragmentAssembler). A SessionMessageHeader (template 1) is read in place (clusterSessionId at +16,
timestamp at +24): the log position after the entry and its timestamp become the dispatcher's ``log_position`` and
``cluster_time``, its session is looked up in the agent's map, and the service's ``on_session_message`` is called
with the payload (from +32). Every other template goes to ``on_event`` with the whole entry, for control-rate
decoding in Python. An entry of another schema, or too short for its header, is a ClusterError.
"""
cimport cython
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t
from libc.string cimport memcpy

from aeron._core.atomic_buffer cimport AtomicBuffer
from aeron._core.fragment_assembler cimport ImageControlledFragmentAssembler
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


@cython.final
cdef class LogEntryDispatcher:
    """The fragment handler of a service's log image (a ControlledFragmentHandler): returns CONTINUE."""

    def __init__(self, on_session_message, dict sessions not None, on_event):
        """``on_session_message(session, timestamp, buffer, offset, length, header)`` (the service's) for session
        messages, their session from ``sessions`` (None when it has none: a service's message), and
        ``on_event(template_id, buffer, offset, length, header)`` for every other entry of the cluster's schema."""
        self.on_session_message = on_session_message
        self.sessions = sessions
        self.on_event = on_event
        self.assembler = ImageControlledFragmentAssembler(self.on_message)
        self.log_position = -1
        self.cluster_time = 0

    def __call__(self, buffer, Py_ssize_t offset, Py_ssize_t length, Header header not None):
        if (header.frame()[fd.FLAGS_FIELD_OFFSET] & fd.UNFRAGMENTED) == fd.UNFRAGMENTED:
            return self.on_message(buffer, offset, length, header)
        return self.assembler.on_fragment(buffer, offset, length, header)

    def clear(self):
        """Drop a fragmented entry in progress (the log image is going)."""
        self.assembler.clear()

    def on_message(self, AtomicBuffer buffer not None, Py_ssize_t offset, Py_ssize_t length, Header header not None):
        """Dispatch one whole entry."""
        buffer.check(offset, length)
        if length < _MESSAGE_HEADER_LENGTH:
            raise ClusterError(f"log entry of {length} bytes is shorter than its message header")
        cdef const uint8_t *message = buffer.data + offset
        cdef uint16_t schema_id = read_u16(message + _SCHEMA_ID_OFFSET)
        if schema_id != _SCHEMA_ID:
            raise ClusterError(f"expected schemaId={_SCHEMA_ID}, actual={schema_id}")
        cdef uint16_t template_id = read_u16(message + _TEMPLATE_ID_OFFSET)
        if template_id != _SESSION_MESSAGE:
            self.on_event(template_id, buffer, offset, length, header)
            return CONTROLLED_ACTION_CONTINUE
        if length < _SESSION_HEADER_LENGTH:
            raise ClusterError(f"session message of {length} bytes is shorter than its session header")
        self.log_position = ld.compute_position(fd.frame_i32(header.frame(), fd.TERM_ID_FIELD_OFFSET),
                                                header.next_term_offset_c(), header._position_bits_to_shift,
                                                header._initial_term_id)
        cdef int64_t timestamp = read_i64(message + _TIMESTAMP_OFFSET)
        self.cluster_time = timestamp
        session = self.sessions.get(read_i64(message + _CLUSTER_SESSION_ID_OFFSET))
        self.on_session_message(session, timestamp, buffer, offset + _SESSION_HEADER_LENGTH,
                                length - _SESSION_HEADER_LENGTH, header)
        return CONTROLLED_ACTION_CONTINUE
