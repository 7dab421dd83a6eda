# SPDX-License-Identifier: Apache-2.0
"""Events and terminations of the consensus module (Aeron's ``ClusterEvent``, ``ClusterTerminationException``).

A :class:`ClusterEvent` is a noteworthy event reported through the error handler (a warning by default: a new
election, a timed out catch-up), not a fault. :class:`ClusterTerminationError` ends the consensus module's agent:
expected after an orderly shutdown or abort, unexpected otherwise.
"""
from __future__ import annotations

from aeron.common.errors import AgentTerminationError, Category, ClusterError

__all__ = ["ClusterEvent", "ClusterTerminationError", "ElectionTimeoutError"]


class ClusterEvent(ClusterError):
    """An event in the life of the cluster, reported as a warning unless given another category."""

    category = Category.WARN


class ElectionTimeoutError(ClusterError):
    """A step of an election did not complete in time (Aeron's ``TimeoutException`` there); the election starts
    again."""

    category = Category.WARN


class ClusterTerminationError(AgentTerminationError):
    """The consensus module's agent terminates; ``is_expected`` after ClusterTool shutdown or abort."""

    def __init__(self, is_expected: bool) -> None:
        """``is_expected``: an orderly termination rather than a failure."""
        super().__init__("expected termination" if is_expected else "unexpected termination")
        self.is_expected = is_expected
