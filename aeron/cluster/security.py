# SPDX-License-Identifier: Apache-2.0
"""Authentication and authorisation of cluster sessions (Aeron's ``Authenticator``, ``SessionProxy``,
``DefaultAuthenticatorSupplier`` and ``AllowBackupAndStandbyAuthorisationService``).

An authenticator hears of each connect request with its credentials (``on_connect_request``), of each challenge
response (``on_challenge_response``), and is then asked, every cycle while the session waits, to decide through
the :class:`SessionProxy` it is given (``on_connected_session``, ``on_challenged_session``): ``authenticate``
with an encoded principal, ``challenge`` with an encoded challenge (the client answers with a ChallengeResponse),
or ``reject``. Making no decision keeps the session waiting, up to the session timeout.

``aeron.cluster.authenticator.supplier`` names the authenticator: empty or Aeron's
``io.aeron.security.DefaultAuthenticatorSupplier`` accepts everyone with an empty principal; ``package.module:name``
names an authenticator, a class or a function that makes one.

``aeron.cluster.authorisation.service.supplier`` names what authenticated sessions may do: by default
(:data:`ALLOW_BACKUP_AND_STANDBY`) only backup queries, heartbeat requests and standby snapshots, so an
AdminRequest is refused with UNAUTHORISED_ACCESS unless you allow it; ``ALLOW_ALL``, ``DENY_ALL`` or
``package.module:name`` otherwise.
"""
from __future__ import annotations

import importlib
from typing import Any, Protocol, runtime_checkable

from aeron._core.codecs import cluster as codecs
from aeron.common.errors import ConfigurationError

__all__ = ["ALLOW_ALL", "ALLOW_BACKUP_AND_STANDBY", "DENY_ALL", "Authenticator", "AuthorisationService",
           "DEFAULT_AUTHENTICATOR", "DefaultAuthenticator", "SessionProxy", "authenticator_from_name",
           "authorisation_service_from_name"]

NULL_ENCODED_PRINCIPAL = b""
DEFAULT_AUTHENTICATOR_SUPPLIER_NAME = "io.aeron.security.DefaultAuthenticatorSupplier"
ALLOW_BACKUP_AND_STANDBY_NAME = "io.aeron.cluster.AllowBackupAndStandbyAuthorisationService"


@runtime_checkable
class SessionProxy(Protocol):
    """The session an authenticator decides on."""

    @property
    def session_id(self) -> int:
        """The cluster session id."""

    def challenge(self, encoded_challenge: bytes) -> bool:
        """Send a Challenge; whether it went (a session that could not be challenged is asked again)."""

    def authenticate(self, encoded_principal: bytes | None) -> bool:
        """Accept the session with ``encoded_principal`` (at most 4 KiB)."""

    def reject(self) -> None:
        """Refuse the session (the client gets AUTHENTICATION_REJECTED)."""


@runtime_checkable
class Authenticator(Protocol):
    """Decides on cluster sessions; called on the consensus module's thread."""

    def on_connect_request(self, session_id: int, encoded_credentials: bytes, now_ms: int) -> None:
        """A client asked to connect with ``encoded_credentials``."""

    def on_challenge_response(self, session_id: int, encoded_credentials: bytes, now_ms: int) -> None:
        """A challenged client answered."""

    def on_connected_session(self, session_proxy: SessionProxy, now_ms: int) -> None:
        """The session's egress is connected: decide (or wait)."""

    def on_challenged_session(self, session_proxy: SessionProxy, now_ms: int) -> None:
        """The session was challenged: decide (or wait for the response)."""


class DefaultAuthenticator:
    """Accepts every session with an empty principal (Aeron's default)."""

    def on_connect_request(self, session_id: int, encoded_credentials: bytes, now_ms: int) -> None:
        """Nothing to check."""

    def on_challenge_response(self, session_id: int, encoded_credentials: bytes, now_ms: int) -> None:
        """Nothing to check."""

    def on_connected_session(self, session_proxy: SessionProxy, now_ms: int) -> None:
        """Accept."""
        session_proxy.authenticate(NULL_ENCODED_PRINCIPAL)

    def on_challenged_session(self, session_proxy: SessionProxy, now_ms: int) -> None:
        """Accept."""
        session_proxy.authenticate(NULL_ENCODED_PRINCIPAL)

    def __repr__(self) -> str:
        """Aeron's supplier name."""
        return DEFAULT_AUTHENTICATOR_SUPPLIER_NAME


DEFAULT_AUTHENTICATOR = DefaultAuthenticator()


@runtime_checkable
class AuthorisationService(Protocol):
    """What a server asks before it runs an authenticated session's request."""

    def is_authorised(self, protocol_id: int, action_id: int, type: Any, encoded_principal: bytes | None) -> bool:
        """True when the principal may perform ``action_id`` (a template id) of ``protocol_id`` (a schema id)."""


class _Fixed:
    __slots__ = ("_answer", "_name")

    def __init__(self, answer: bool, name: str) -> None:
        self._answer = answer
        self._name = name

    def is_authorised(self, protocol_id: int, action_id: int, type: Any, encoded_principal: bytes | None) -> bool:
        return self._answer

    def __repr__(self) -> str:
        return self._name


class _AllowBackupAndStandby:
    """Allows BackupQuery, HeartbeatRequest and StandbySnapshot of the cluster protocol, nothing else."""

    _ACTIONS = frozenset((codecs.BackupQueryDecoder.TEMPLATE_ID, codecs.HeartbeatRequestDecoder.TEMPLATE_ID,
                          codecs.StandbySnapshotDecoder.TEMPLATE_ID))

    def is_authorised(self, protocol_id: int, action_id: int, type: Any, encoded_principal: bytes | None) -> bool:
        return protocol_id == codecs.SCHEMA_ID and action_id in self._ACTIONS

    def __repr__(self) -> str:
        return ALLOW_BACKUP_AND_STANDBY_NAME


ALLOW_ALL: AuthorisationService = _Fixed(True, "ALLOW_ALL")
DENY_ALL: AuthorisationService = _Fixed(False, "DENY_ALL")
ALLOW_BACKUP_AND_STANDBY: AuthorisationService = _AllowBackupAndStandby()


def _import(text: str, what: str) -> Any:
    module_name, sep, attr = text.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigurationError(f"{what} {text!r}: expected package.module:name")
    try:
        found: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError) as ex:
        raise ConfigurationError(f"{what} {text!r}: {ex}") from None
    return found


def authenticator_from_name(name: str | None) -> Any:
    """The authenticator ``aeron.cluster.authenticator.supplier`` names (see the module docstring)."""
    text = (name or "").strip()
    if not text or text in (DEFAULT_AUTHENTICATOR_SUPPLIER_NAME, "DefaultAuthenticatorSupplier"):
        return DEFAULT_AUTHENTICATOR
    found = _import(text, "authenticator supplier")
    if isinstance(found, Authenticator) and not isinstance(found, type):
        return found
    if not callable(found):
        raise ConfigurationError(f"authenticator supplier {text!r} is neither an authenticator nor callable")
    made = found()
    if not isinstance(made, Authenticator):
        raise ConfigurationError(f"authenticator supplier {text!r} made {made!r}, not an Authenticator")
    return made


def authorisation_service_from_name(name: str | None) -> Any:
    """The service ``aeron.cluster.authorisation.service.supplier`` names (see the module docstring)."""
    text = (name or "").strip()
    if not text or text in (ALLOW_BACKUP_AND_STANDBY_NAME, "AllowBackupAndStandbyAuthorisationService"):
        return ALLOW_BACKUP_AND_STANDBY
    if text == "ALLOW_ALL":
        return ALLOW_ALL
    if text == "DENY_ALL":
        return DENY_ALL
    found = _import(text, "authorisation service supplier")
    if isinstance(found, AuthorisationService) and not isinstance(found, type):
        return found
    if not callable(found):
        raise ConfigurationError(f"authorisation service supplier {text!r} is neither a service nor callable")
    made = found()
    if not isinstance(made, AuthorisationService):
        raise ConfigurationError(f"authorisation service supplier {text!r} made {made!r}, not a service")
    return made
