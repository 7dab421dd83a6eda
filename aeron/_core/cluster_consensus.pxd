# SPDX-License-Identifier: Apache-2.0
# The consensus stream's AppendPosition and CommitPosition read in compiled code (cluster_consensus.pyx says how).

cdef enum:
    _SCHEMA_ID = 111
    _HEADER_LENGTH = 8
    _APPEND_POSITION = 54
    _APPEND_POSITION_BLOCK_LENGTH = 21
    _FLAGS_SINCE_VERSION = 8            # AppendPosition's flags field, and so its 21-byte block
    _COMMIT_POSITION = 55
    _COMMIT_POSITION_BLOCK_LENGTH = 20


cdef class ConsensusPositionDispatcher:
    cdef object on_append_position          # the agent's bound methods, looked up once
    cdef object on_commit_position
    cdef object on_other                    # the Python adapter's handler of every other message
