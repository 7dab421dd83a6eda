# SPDX-License-Identifier: Apache-2.0
# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""A leader's ingress session messages appended to the log in one compiled call: the per-message part of Aeron's
``IngressAdapter.onFragment``, ``ConsensusModuleAgent.onIngressMessage`` and ``LogPublisher.appendMessage``.

A SessionMessageHeader (schema 111, template 1, its 24-byte block) is read in place (leadershipTermId at +8,
clusterSessionId at +16). While the agent leads in that term and the session is open, the entry is the 32-byte
session header (the term, the session, the cluster time) and the payload, offered to the log publication in place
(``term_appender_offer_two``: no copy, no allocation); then the session's activity time is refreshed. Three
attempts, as the LogPublisher's; still refused, the publication's status is checked (a closed log raises) and the
fragment is ABORTed, to be read again. Every other message, of this schema or another, goes to the Python handler
with the same arguments.
"""
cimport cython
from libc.stdint cimport int64_t, uint8_t, uint16_t
from libc.string cimport memcpy

from aeron._core.atomic_buffer cimport AtomicBuffer
from aeron._core.cluster_log cimport read_i64, read_u16
from aeron._core.term_appender cimport TermAppender
from aeron._core.term_reader cimport Header, CONTROLLED_ACTION_ABORT, CONTROLLED_ACTION_CONTINUE
from aeron._core.two_buffer_offer cimport term_appender_offer_two


@cython.final
cdef class IngressSessionAppender:
    """The ingress fragment handler of a consensus module (a ControlledFragmentHandler for whole messages)."""

    def __init__(self, agent, on_other, dict sessions not None, open_state, leader_role, log_publisher, cluster_clock,
                 bytes message_header not None, check_result):
        """``agent`` (its ``leadership_term_id`` and ``role`` read for each message), ``on_other(buffer, offset,
        length, header)`` for every other message, ``sessions`` (cluster session id -> session, whose ``state`` must
        be ``open_state``), ``log_publisher`` (its ``publication``), ``cluster_clock`` (``time()``,
        ``convert_to_nanos``), the 8-byte message header of a SessionMessageHeader, and
        ``check_result(result, publication)`` for a refused append (raises for a closed log)."""
        if len(message_header) != 8:
            raise ValueError("the message header is 8 bytes")
        self.agent = agent
        self.on_other = on_other
        self.sessions = sessions
        self.open_state = open_state
        self.leader_role = leader_role
        self.log_publisher = log_publisher
        self.clock_time = cluster_clock.time
        self.to_nanos = cluster_clock.convert_to_nanos
        self.check_result = check_result
        memcpy(self.header, <const char *>message_header, 8)
        self.appended = 0

    def __call__(self, AtomicBuffer buffer not None, Py_ssize_t offset, Py_ssize_t length, Header header not None):
        buffer.check(offset, length)
        cdef const uint8_t *message = buffer.data + offset
        if (length < _SESSION_HEADER_LENGTH or read_u16(message + 4) != _SCHEMA_ID or
                read_u16(message + 2) != _SESSION_MESSAGE or read_u16(message) != _BLOCK_LENGTH):
            return self.on_other(buffer, offset, length, header)
        cdef int64_t leadership_term_id = read_i64(message + _LEADERSHIP_TERM_ID_OFFSET)
        cdef int64_t cluster_session_id = read_i64(message + _CLUSTER_SESSION_ID_OFFSET)
        agent = self.agent
        if agent.leadership_term_id != leadership_term_id or agent.role is not self.leader_role:
            return CONTROLLED_ACTION_CONTINUE
        session = self.sessions.get(cluster_session_id)
        if session is None or session.state is not self.open_state:
            return CONTROLLED_ACTION_CONTINUE
        timestamp = self.clock_time()
        publication = self.log_publisher.publication
        if not isinstance(publication, TermAppender):
            # no log to append to (a publication of another kind): the Python path decides
            return self.on_other(buffer, offset, length, header)
        cdef int64_t ts = timestamp
        memcpy(self.header + _LEADERSHIP_TERM_ID_OFFSET, &leadership_term_id, 8)
        memcpy(self.header + _CLUSTER_SESSION_ID_OFFSET, &cluster_session_id, 8)
        memcpy(self.header + _TIMESTAMP_OFFSET, &ts, 8)
        cdef int64_t result = 0
        cdef int attempt
        for attempt in range(_SEND_ATTEMPTS):
            result = term_appender_offer_two(<TermAppender>publication, self.header, _SESSION_HEADER_LENGTH,
                                             message + _SESSION_HEADER_LENGTH, length - _SESSION_HEADER_LENGTH,
                                             None)
            if result > 0:
                self.appended += 1
                session.time_of_last_activity_ns = self.to_nanos(timestamp)
                return CONTROLLED_ACTION_CONTINUE
            self.check_result(result, publication)
        return CONTROLLED_ACTION_ABORT
