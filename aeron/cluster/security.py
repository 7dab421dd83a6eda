# SPDX-License-Identifier: Apache-2.0
"""Authorisation of cluster sessions' requests (Aeron's ``AllowBackupAndStandbyAuthorisationService``); the
authenticators (``aeron.cluster.authenticator.supplier``) are :mod:`aeron.common.security`'s.

``aeron.cluster.authorisation.service.supplier`` names what authenticated sessions may do: by default
(:data:`ALLOW_BACKUP_AND_STANDBY`) only backup queries, heartbeat requests and standby snapshots, so an
AdminRequest is refused with UNAUTHORISED_ACCESS unless you allow it; ``ALLOW_ALL``, ``DENY_ALL`` or
``package.module:name`` otherwise (as :func:`aeron.common.security.authorisation_service_from_name` reads them).
"""
from __future__ import annotations

from typing import Any

from aeron._core.codecs import cluster as codecs
from aeron.common import security

__all__ = ["ALLOW_BACKUP_AND_STANDBY", "ALLOW_BACKUP_AND_STANDBY_NAME", "authorisation_service_from_name"]

ALLOW_BACKUP_AND_STANDBY_NAME = "io.aeron.cluster.AllowBackupAndStandbyAuthorisationService"


class _AllowBackupAndStandby:
    """Allows BackupQuery, HeartbeatRequest and StandbySnapshot of the cluster protocol, nothing else."""

    _ACTIONS = frozenset((codecs.BackupQueryDecoder.TEMPLATE_ID, codecs.HeartbeatRequestDecoder.TEMPLATE_ID,
                          codecs.StandbySnapshotDecoder.TEMPLATE_ID))

    def is_authorised(self, protocol_id: int, action_id: int, type: Any, encoded_principal: bytes | None) -> bool:
        """Whether the action is one of those three cluster requests."""
        return protocol_id == codecs.SCHEMA_ID and action_id in self._ACTIONS

    def __repr__(self) -> str:
        """Aeron's class name."""
        return ALLOW_BACKUP_AND_STANDBY_NAME


ALLOW_BACKUP_AND_STANDBY: security.AuthorisationService = _AllowBackupAndStandby()


def authorisation_service_from_name(name: str | None) -> security.AuthorisationService:
    """The service ``aeron.cluster.authorisation.service.supplier`` names (see the module docstring)."""
    text = (name or "").strip()
    if not text or text in (ALLOW_BACKUP_AND_STANDBY_NAME, "AllowBackupAndStandbyAuthorisationService"):
        return ALLOW_BACKUP_AND_STANDBY
    return security.authorisation_service_from_name(text)
