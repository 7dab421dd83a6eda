# SPDX-License-Identifier: Apache-2.0
"""``Cluster``: what a clustered service is given to interact with the cluster (Aeron's
``io.aeron.cluster.service.Cluster``), and ``Cluster.Role``: a node's role in the cluster, the value of its role
counter (type 201) and of ``JoinLog.role``."""
from __future__ import annotations

import abc
import enum
from collections.abc import Callable, Sequence
from typing import Any

from aeron._core.codecs.cluster import ClusterTimeUnit
from aeron.common.errors import ClusterError

__all__ = ["Cluster", "Role"]


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


class Cluster(abc.ABC):
    """What a clustered service is given to interact with the cluster hosting it (Aeron's
    ``io.aeron.cluster.service.Cluster``): the member's identity and role, cluster time and log position as of
    the entry being processed, its client sessions, timers, and messages to the cluster itself.

    Messages, timers and session closes are for the handling of log events (session messages, timers, session
    open and close, new leadership terms); from ``on_start``, ``on_role_change``, ``on_take_snapshot``,
    ``on_terminate`` and ``do_background_work`` they raise ClusterError. The sends are single attempts: loop with
    ``cluster.idle_strategy`` until they succeed, as Aeron's services do, so that the container can still
    terminate.
    """

    @property
    @abc.abstractmethod
    def member_id(self) -> int:
        """The id of the member hosting the service (-1 until the service joins a log)."""

    @property
    @abc.abstractmethod
    def role(self) -> Role:
        """The member's role."""

    @property
    @abc.abstractmethod
    def log_position(self) -> int:
        """The log position after the entry being processed."""

    @property
    @abc.abstractmethod
    def aeron(self) -> Any:
        """The container's Aeron client."""

    @property
    @abc.abstractmethod
    def context(self) -> Any:
        """The container's ``ClusteredServiceContainer.Context``."""

    @abc.abstractmethod
    def get_client_session(self, cluster_session_id: int) -> Any:
        """The open ClientSession of ``cluster_session_id``, or None."""

    @property
    @abc.abstractmethod
    def client_sessions(self) -> Sequence[Any]:
        """The open client sessions in id order (a read-only view)."""

    @abc.abstractmethod
    def for_each_client_session(self, action: Callable[[Any], Any]) -> None:
        """Call ``action(session)`` for each open client session, in id order."""

    @abc.abstractmethod
    def close_client_session(self, cluster_session_id: int) -> bool:
        """Ask the consensus module to close a session: True when asked (or already closing), False when back
        pressure lasted three attempts; ClusterError for an unknown session."""

    @property
    @abc.abstractmethod
    def time(self) -> int:
        """Cluster time of the entry being processed, in :attr:`time_unit` since the epoch."""

    @property
    @abc.abstractmethod
    def time_unit(self) -> ClusterTimeUnit | None:
        """The unit of cluster time (None until the first new leadership term or snapshot says)."""

    @abc.abstractmethod
    def schedule_timer(self, correlation_id: int, deadline: int) -> bool:
        """Schedule (or move) timer ``correlation_id`` to cluster time ``deadline``; it comes back through
        ``on_timer_event``. False on back pressure (retry); ClusterError when it cannot be sent."""

    @abc.abstractmethod
    def cancel_timer(self, correlation_id: int) -> bool:
        """Cancel timer ``correlation_id`` (it races with its expiry). False on back pressure (retry)."""

    @abc.abstractmethod
    def offer(self, buffer: Any, offset: int = 0, length: int = -1) -> int:
        """Send ``buffer[offset:offset + length]`` to the cluster, for the log, as a message of this service
        (services get it with a None session). Returns the position, or a negative Publication code to retry on
        (BACK_PRESSURED, ADMIN_ACTION); ClusterError for the others."""

    @abc.abstractmethod
    def offerv(self, vectors: Sequence[Any]) -> int:
        """As :meth:`offer`, the message gathered from the buffers in ``vectors``."""

    @abc.abstractmethod
    def try_claim(self, length: int, buffer_claim: Any) -> int:
        """Claim room for a message of ``length`` bytes to the cluster: the session header fills the first 32
        bytes of the claim, the message goes after it, then commit. Returns as :meth:`offer`."""

    @abc.abstractmethod
    def idle(self, work_count: int = 0) -> None:
        """Idle once with the container's idle strategy when ``work_count`` is 0 (as ``idle_strategy.idle``), keeping
        the container alive meanwhile."""

    @property
    @abc.abstractmethod
    def idle_strategy(self) -> Any:
        """The idle strategy to loop with (``idle(work_count=0)``, ``reset()``): it also keeps the container
        alive (its clock, mark file and background work) while the service waits."""
