# SPDX-License-Identifier: Apache-2.0
"""``ClusteredService``: the callbacks through which a clustered service container drives an application's replicated
state machine (Aeron's ``io.aeron.cluster.service.ClusteredService``).

Subclass :class:`ClusteredService` and override the callbacks; the container calls them on its agent's thread, in
log order, the same on every member. ``on_new_leadership_term_event`` and ``do_background_work`` have Aeron's
defaults (do nothing); the others must be given. Any object with these methods can be a service (the container
looks the two optional ones up and uses the defaults when they are missing).

The ``cluster`` (:class:`~aeron.cluster.service.cluster.Cluster`) sends messages to the cluster and schedules
timers only in response to log events (``on_session_message``, ``on_timer_event``, ``on_session_open``,
``on_session_close``, ``on_new_leadership_term_event``); from ``on_start``, ``on_role_change``,
``on_take_snapshot``, ``on_terminate`` and ``do_background_work`` it raises ClusterError, as Aeron does.
"""
from __future__ import annotations

import abc
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aeron._core.codecs.cluster import CloseReason, ClusterTimeUnit
    from aeron._core.term_reader import Header
    from aeron.client.image import Image
    from aeron.client.publication import ExclusivePublication
    from aeron.cluster.service.client_session import ClientSession
    from aeron.cluster.service.cluster import Cluster, Role

__all__ = ["ClusteredService"]


class ClusteredService(abc.ABC):
    """The interface a service implements to be contained in the cluster."""

    @abc.abstractmethod
    def on_start(self, cluster: Cluster, snapshot_image: Image | None) -> None:
        """The service starts: keep ``cluster``, and load the state of ``snapshot_image`` (None when there is no
        snapshot). The image is positioned after the container's own part of the snapshot: what is left is what
        ``on_take_snapshot`` wrote. Use ``cluster.idle_strategy`` while polling it. An exception ends the
        container (and the consensus module waiting for it)."""

    @abc.abstractmethod
    def on_session_open(self, session: ClientSession, timestamp: int) -> None:
        """A client session was opened, at cluster time ``timestamp``."""

    @abc.abstractmethod
    def on_session_close(self, session: ClientSession, timestamp: int, close_reason: CloseReason) -> None:
        """A client session was closed for ``close_reason`` (CLIENT_ACTION, SERVICE_ACTION or TIMEOUT)."""

    @abc.abstractmethod
    def on_session_message(self, session: ClientSession | None, timestamp: int, buffer: Any, offset: int,
                           length: int, header: Header) -> None:
        """A message for the service: ``buffer[offset:offset + length]`` (valid during the call only), from
        ``session``, or None when a service sent it (``Cluster.offer``)."""

    @abc.abstractmethod
    def on_timer_event(self, correlation_id: int, timestamp: int) -> None:
        """The timer scheduled with ``correlation_id`` expired at cluster time ``timestamp``."""

    @abc.abstractmethod
    def on_take_snapshot(self, snapshot_publication: ExclusivePublication) -> None:
        """Write the service's state to ``snapshot_publication`` (an archived exclusive publication). Idle with
        ``cluster.idle_strategy`` while it is back pressured."""

    @abc.abstractmethod
    def on_role_change(self, new_role: Role) -> None:
        """The member changed role (FOLLOWER, CANDIDATE, LEADER)."""

    @abc.abstractmethod
    def on_terminate(self, cluster: Cluster) -> None:
        """The container is terminating (called only after a successful start)."""

    def on_new_leadership_term_event(self, leadership_term_id: int, log_position: int, timestamp: int,
                                     term_base_log_position: int, leader_member_id: int, log_session_id: int,
                                     time_unit: ClusterTimeUnit, app_version: int) -> None:
        """An election ended and a leader started a new term (default: nothing)."""

    def do_background_work(self, now_ns: int) -> int:
        """Work outside the replicated state machine (keeping external connections alive, ...), called every duty
        cycle and while the container idles; ``now_ns`` is a monotonic clock, not cluster time. It must not change
        the service's state nor use the cluster to send or schedule. Returns the work done (default 0)."""
        return 0
