# SPDX-License-Identifier: Apache-2.0
# The per-entry dispatch of Aeron Cluster's replicated log for a clustered service (its BoundedLogAdapter's fragment
# handler): whole entries reassembled, each message header read in place, session messages handed to the service
# with their session, the rest by template id.
cimport cython
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t
from libc.string cimport memcpy
from aeron._core.fragment_assembler cimport ImageControlledFragmentAssembler


# little-endian fields of a cluster message read in place, at any alignment (this module's, cluster_ingress's and
# cluster_consensus's)
cdef inline uint16_t read_u16(const uint8_t *p) noexcept nogil:
    cdef uint16_t v
    memcpy(&v, p, 2)
    return v


cdef inline int32_t read_i32(const uint8_t *p) noexcept nogil:
    cdef int32_t v
    memcpy(&v, p, 4)
    return v


cdef inline int64_t read_i64(const uint8_t *p) noexcept nogil:
    cdef int64_t v
    memcpy(&v, p, 8)
    return v


@cython.final
cdef class LogEntryDispatcher:
    cdef object on_session_message          # service(session or None, timestamp, buffer, offset, length, header)
    cdef dict sessions                      # cluster session id -> session, the agent's (shared, not copied)
    cdef object on_event                    # (template_id, buffer, offset, length, header): every other template
    cdef ImageControlledFragmentAssembler assembler   # fragmented entries, delivered whole to on_message
    cdef public int64_t log_position        # after the entry being processed (the agent sets it for other entries)
    cdef public int64_t cluster_time        # of the entry being processed (likewise)


@cython.final
cdef class EgressOffer:
    cdef object agent                       # the service agent: its lifecycle callback and role, read per offer
    cdef LogEntryDispatcher dispatcher      # the cluster time of the entry being processed
    cdef bytearray header                   # the agent's SessionMessageHeader buffer (its term kept by the agent)
    cdef object leader_role                 # Role.LEADER


@cython.final
cdef class ConsensusLogDispatcher:
    cdef dict sessions                      # cluster session id -> session, the session manager's (shared)
    cdef int64_t nanos_per_unit             # of the cluster's time unit: a log timestamp as nanoseconds
    cdef object on_other                    # the LogAdapter's handler of every other whole entry
    cdef ImageControlledFragmentAssembler assembler   # fragmented entries, delivered whole to on_message
