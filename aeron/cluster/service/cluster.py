# SPDX-License-Identifier: Apache-2.0
"""``Cluster.Role``: a node's role in the cluster, the value of its role counter (type 201) and of
``JoinLog.role``."""
from __future__ import annotations

import enum

from aeron.common.errors import ClusterError

__all__ = ["Role"]


class Role(enum.IntEnum):
    """FOLLOWER, CANDIDATE or LEADER (Aeron's ``Cluster.Role``)."""

    FOLLOWER = 0
    CANDIDATE = 1
    LEADER = 2

    @classmethod
    def get(cls, code: int) -> Role:
        """The role of a code (ClusterError for an invalid one)."""
        if not 0 <= code < len(cls):
            raise ClusterError(f"Invalid role counter code: {code}")
        return cls(code)
