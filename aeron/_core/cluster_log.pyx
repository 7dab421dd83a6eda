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

The consensus module reads the same log (a follower, or any member replaying it) only to keep its own state: a
ConsensusLogDispatcher is the compiled part of its ``LogAdapter.onMessage`` and ``onReplaySessionMessage`` for the
common entry, a session message of a known session, whose activity time it refreshes in place (the timestamp in the
cluster's time unit as nanoseconds); every other entry goes whole to the Python adapter.

The service's answer goes back the same way: an EgressOffer is the compiled part of Aeron's
``ClientSession.offer`` (``ClusteredServiceAgent.offer``): on the leader, the 32-byte SessionMessageHeader (the
term the agent keeps in its header buffer, the session, the cluster time of the entry being processed) and the
message offered in place (``term_appender_offer_two``: no copy, no allocation); elsewhere a mocked success.
"""
cimport cython
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_GET_SIZE
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t
from libc.string cimport memcpy

from aeron._core.atomic_buffer cimport AtomicBuffer, check_span
from aeron._core.term_appender cimport APPEND_NOT_CONNECTED, TermAppender
from aeron._core.two_buffer_offer cimport term_appender_offer_two
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
    _SESSION_BLOCK_LENGTH = 24
    _MOCKED_OFFER = 1                   # ClientSession.MOCKED_OFFER: what an offer returns on a member not leading


cdef inline object whole_entry(object dispatcher, ImageControlledFragmentAssembler assembler, object buffer,
                               Py_ssize_t offset, Py_ssize_t length, Header header):
    # an unfragmented entry straight to the dispatcher's on_message, a fragment to its assembler (which hands it the
    # whole entry once the last fragment is in)
    if (header.frame()[fd.FLAGS_FIELD_OFFSET] & fd.UNFRAGMENTED) == fd.UNFRAGMENTED:
        return dispatcher.on_message(buffer, offset, length, header)
    return assembler.on_fragment(buffer, offset, length, header)


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
        return whole_entry(self, self.assembler, buffer, offset, length, header)

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


@cython.final
cdef class EgressOffer:
    """A clustered service's egress offers to its clients' sessions (``offer``), for its ContainerClientSessions."""

    def __init__(self, agent, LogEntryDispatcher dispatcher not None, bytearray header not None, leader_role):
        """``agent`` (its ``active_lifecycle_callback``, 0 outside a lifecycle callback, else its
        ``_check_for_valid_invocation()`` raises; its ``_role``, compared with ``leader_role``), ``dispatcher`` (the
        cluster time of the entry being processed) and ``header``, the agent's 32-byte SessionMessageHeader buffer
        with its message header and leadership term written (the session and timestamp are written here)."""
        if PyByteArray_GET_SIZE(header) != _SESSION_HEADER_LENGTH:
            raise ValueError(f"the session header is {_SESSION_HEADER_LENGTH} bytes")
        self.agent = agent
        self.dispatcher = dispatcher
        self.header = header
        self.leader_role = leader_role

    def offer(self, int64_t cluster_session_id, publication, buffer, Py_ssize_t offset=0, Py_ssize_t length=-1):
        """``buffer[offset:offset + length]`` (all of it by default; an AtomicBuffer or any buffer-protocol object)
        to the session's ``publication``: the new position, MOCKED_OFFER (1) when the member does not lead,
        NOT_CONNECTED without a publication, or the publication's negative code."""
        agent = self.agent
        if agent.active_lifecycle_callback != 0:
            agent._check_for_valid_invocation()         # raises: no sending from a lifecycle callback
        if agent._role is not self.leader_role:
            return _MOCKED_OFFER
        if publication is None:
            return APPEND_NOT_CONNECTED
        cdef uint8_t *header = <uint8_t *>PyByteArray_AS_STRING(self.header)
        cdef int64_t timestamp = self.dispatcher.cluster_time
        memcpy(header + _CLUSTER_SESSION_ID_OFFSET, &cluster_session_id, 8)
        memcpy(header + _TIMESTAMP_OFFSET, &timestamp, 8)
        if not isinstance(publication, TermAppender):
            # a publication of another kind: its own gathering offer, with the range as a view
            view = memoryview(buffer)
            end = view.nbytes if length == -1 else offset + length
            return publication.offerv((self.header, view[offset:end]))
        cdef AtomicBuffer atomic
        cdef Py_buffer view_buffer
        if isinstance(buffer, AtomicBuffer):
            atomic = <AtomicBuffer>buffer
            atomic.check_open()
            length = check_span(offset, length, atomic.length)
            return term_appender_offer_two(<TermAppender>publication, header, _SESSION_HEADER_LENGTH,
                                           atomic.data + offset, length, None)
        PyObject_GetBuffer(buffer, &view_buffer, PyBUF_SIMPLE)
        try:
            length = check_span(offset, length, view_buffer.len)
            return term_appender_offer_two(<TermAppender>publication, header, _SESSION_HEADER_LENGTH,
                                           <const uint8_t *>view_buffer.buf + offset, length, None)
        finally:
            PyBuffer_Release(&view_buffer)


@cython.final
cdef class ConsensusLogDispatcher:
    """The fragment handler of a consensus module's log image (a ControlledFragmentHandler, its LogAdapter's)."""

    def __init__(self, dict sessions not None, int64_t nanos_per_unit, on_message):
        """``sessions`` (cluster session id -> session, the session manager's map, shared), ``nanos_per_unit`` (of
        the cluster's time unit) and ``on_message(buffer, offset, length, header)``, the adapter's handler of every
        other whole entry (its action returned)."""
        if nanos_per_unit <= 0:
            raise ValueError(f"nanos_per_unit must be > 0, got {nanos_per_unit}")
        self.sessions = sessions
        self.nanos_per_unit = nanos_per_unit
        self.on_other = on_message
        self.assembler = ImageControlledFragmentAssembler(self.on_message)

    def __call__(self, buffer, Py_ssize_t offset, Py_ssize_t length, Header header not None):
        return whole_entry(self, self.assembler, buffer, offset, length, header)

    def clear(self):
        """Drop a fragmented entry in progress (the log image is going)."""
        self.assembler.clear()

    def on_message(self, buffer, Py_ssize_t offset, Py_ssize_t length, header):
        """One whole entry: a session message (its block as this version writes it) of a known session refreshes
        the session's ``time_of_last_activity_ns``; anything else goes to ``on_message``."""
        cdef AtomicBuffer atomic
        cdef const uint8_t *message
        if isinstance(buffer, AtomicBuffer) and length >= _SESSION_HEADER_LENGTH:
            atomic = <AtomicBuffer>buffer
            atomic.check(offset, length)
            message = atomic.data + offset
            if (read_u16(message + _SCHEMA_ID_OFFSET) == _SCHEMA_ID and
                    read_u16(message + _TEMPLATE_ID_OFFSET) == _SESSION_MESSAGE and
                    read_u16(message) == _SESSION_BLOCK_LENGTH):
                session = self.sessions.get(read_i64(message + _CLUSTER_SESSION_ID_OFFSET))
                if session is not None:
                    session.time_of_last_activity_ns = read_i64(message + _TIMESTAMP_OFFSET) * self.nanos_per_unit
                    return CONTROLLED_ACTION_CONTINUE
        return self.on_other(buffer, offset, length, header)
