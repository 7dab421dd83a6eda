# SPDX-License-Identifier: Apache-2.0
# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The consensus stream's two frequent messages read in compiled code: the per-message part of Aeron's
``ConsensusAdapter.onFragment`` for AppendPosition (a follower's progress, to the leader, as often as its log moves)
and CommitPosition (the leader's commit position and heartbeat, to each follower).

Each is read in place (schema 111; AppendPosition, template 54, a 21-byte block: leadershipTermId at +0, logPosition
at +8, followerMemberId at +16, flags at +20, schema version 8 or later; CommitPosition, template 55, a 20-byte block:
leadershipTermId, logPosition, leaderMemberId) and the agent's ``on_append_position`` or ``on_commit_position`` is
called with the fields. Every other message, one of another block length or version, or one too short for its block,
goes to the Python adapter with the same arguments, which decodes it (and reports what does not decode).
"""
cimport cython
from libc.stdint cimport uint8_t, uint16_t

from aeron._core.atomic_buffer cimport AtomicBuffer
from aeron._core.cluster_log cimport read_i32, read_i64, read_u16


@cython.final
cdef class ConsensusPositionDispatcher:
    """The consensus stream's fragment handler (a FragmentHandler for whole messages)."""

    def __init__(self, agent, on_other):
        """``agent`` (its ``on_append_position(leadership_term_id, log_position, follower_member_id, flags)`` and
        ``on_commit_position(leadership_term_id, log_position, leader_member_id)``) and ``on_other(buffer, offset,
        length, header)`` for every other message."""
        self.on_append_position = agent.on_append_position
        self.on_commit_position = agent.on_commit_position
        self.on_other = on_other

    def __call__(self, buffer, Py_ssize_t offset, Py_ssize_t length, header):
        cdef AtomicBuffer atomic
        cdef const uint8_t *message
        cdef const uint8_t *body
        cdef uint16_t template_id, block_length
        if isinstance(buffer, AtomicBuffer) and length >= _HEADER_LENGTH + _COMMIT_POSITION_BLOCK_LENGTH:
            atomic = <AtomicBuffer>buffer
            atomic.check(offset, length)
            message = atomic.data + offset
            body = message + _HEADER_LENGTH
            if read_u16(message + 4) == _SCHEMA_ID:
                template_id = read_u16(message + 2)
                block_length = read_u16(message)
                if (template_id == _APPEND_POSITION and block_length == _APPEND_POSITION_BLOCK_LENGTH and
                        length >= _HEADER_LENGTH + _APPEND_POSITION_BLOCK_LENGTH and
                        read_u16(message + 6) >= _FLAGS_SINCE_VERSION):
                    self.on_append_position(read_i64(body), read_i64(body + 8), read_i32(body + 16), body[20])
                    return
                if template_id == _COMMIT_POSITION and block_length == _COMMIT_POSITION_BLOCK_LENGTH:
                    self.on_commit_position(read_i64(body), read_i64(body + 8), read_i32(body + 16))
                    return
        self.on_other(buffer, offset, length, header)
