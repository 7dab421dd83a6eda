# SPDX-License-Identifier: Apache-2.0
"""The cluster client's errors (Aeron's ``ClusterException`` and the failures ``AeronCluster`` reports).

Every class derives from :class:`aeron.common.errors.ClusterError`, so ``except ClusterError`` catches them all;
the timeouts are also ``AeronTimeoutError`` (a builtin ``TimeoutError``).
"""
from __future__ import annotations

from aeron.common.errors import AeronTimeoutError, ClusterError


class ClusterTimeoutError(ClusterError, AeronTimeoutError):
    """The cluster did not answer in time: a connect not done within the message timeout, a new leader not heard
    of within the new-leader timeout, or a new leader's ingress not connected within the message timeout."""


class ClusterAuthenticationError(ClusterError):
    """The cluster's authenticator rejected the session (SessionEvent AUTHENTICATION_REJECTED; Aeron raises
    ``AuthenticationException``); the message is the cluster's detail."""


class ClusterSessionClosedError(ClusterError):
    """The session is closed: by the cluster (SessionEvent CLOSED, ``reason`` its detail: ``TIMEOUT``,
    ``SERVICE_ACTION``, ``election``), by the client itself (``close()``), or after losing the cluster."""

    def __init__(self, message: str, reason: str = "") -> None:
        """``reason`` is what closed it (the cluster's detail, or the client's own account)."""
        self.reason = reason
        super().__init__(message)


__all__ = ["ClusterError", "ClusterTimeoutError", "ClusterAuthenticationError", "ClusterSessionClosedError"]
