# SPDX-License-Identifier: Apache-2.0
"""``ElectionState``: the states of an election, the value of the election state counter (type 207)."""
from __future__ import annotations

import enum

from aeron.common.errors import ClusterError

__all__ = ["ElectionState"]


class ElectionState(enum.IntEnum):
    """The election's states (Aeron's ``ElectionState``); CLOSED once it has finished."""

    INIT = 0
    CANVASS = 1
    NOMINATE = 2
    CANDIDATE_BALLOT = 3
    FOLLOWER_BALLOT = 4
    LEADER_LOG_REPLICATION = 5
    LEADER_REPLAY = 6
    LEADER_INIT = 7
    LEADER_READY = 8
    FOLLOWER_LOG_REPLICATION = 9
    FOLLOWER_REPLAY = 10
    FOLLOWER_CATCHUP_INIT = 11
    FOLLOWER_CATCHUP_AWAIT = 12
    FOLLOWER_CATCHUP = 13
    FOLLOWER_LOG_INIT = 14
    FOLLOWER_LOG_AWAIT = 15
    FOLLOWER_READY = 16
    CLOSED = 17

    @classmethod
    def get(cls, code: int) -> ElectionState:
        """The state of a counter value (ClusterError for an invalid one)."""
        if not 0 <= code < len(cls):
            raise ClusterError(f"invalid election state counter code: {code}")
        return cls(code)
