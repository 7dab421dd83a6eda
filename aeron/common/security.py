# SPDX-License-Identifier: Apache-2.0
"""Authentication of client sessions and authorisation of their actions (Aeron's ``io.aeron.security``:
``Authenticator``, ``SessionProxy``, ``DefaultAuthenticatorSupplier``, ``AuthorisationService``).

An authenticator hears of each connect request with its credentials (``on_connect_request``), of each challenge
response (``on_challenge_response``), and is then asked, every cycle while the session waits, to decide through
the :class:`SessionProxy` it is given (``on_connected_session``, ``on_challenged_session``): ``authenticate``
with an encoded principal, ``challenge`` with an encoded challenge (the client answers with a ChallengeResponse),
or ``reject``. Making no decision keeps the session waiting, up to the session timeout.
:func:`authenticator_from_name` resolves the ``*.authenticator.supplier`` properties: empty or Aeron's
``io.aeron.security.DefaultAuthenticatorSupplier`` accepts everyone with an empty principal;
``package.module:name`` names an authenticator, a class or a function that makes one.
A client presents its credentials through a :class:`CredentialsSupplier` (``io.aeron.security.CredentialsSupplier``).

A service answers ``is_authorised(protocol_id, action_id, type, encoded_principal)``: ``protocol_id`` is the SBE
schema id of the protocol (101 for archive control), ``action_id`` the template id of the request, ``type`` an
optional refinement (None for archive requests) and ``encoded_principal`` what the authenticator accepted the
session with (None before it did). A service is called on the server's conductor thread.

:func:`authorisation_service_from_name` resolves the ``*.authorisation.service.supplier`` properties: ``ALLOW_ALL``,
``DENY_ALL``, or ``package.module:name`` naming a service, a class or a function that makes one.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from aeron.common.errors import ConfigurationError
from aeron.common.settings import resolve_named

ALLOW_ALL_NAME = "ALLOW_ALL"
DENY_ALL_NAME = "DENY_ALL"
NULL_ENCODED_PRINCIPAL = b""
DEFAULT_AUTHENTICATOR_SUPPLIER_NAME = "io.aeron.security.DefaultAuthenticatorSupplier"


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
    """What a server asks before it runs a client's request."""

    def is_authorised(self, protocol_id: int, action_id: int, type: Any, encoded_principal: bytes | None) -> bool:
        """True when the principal may perform ``action_id`` of ``protocol_id``."""


class _Fixed:
    """A service that gives the same answer to every request."""

    __slots__ = ("_answer", "_name")

    def __init__(self, answer: bool, name: str) -> None:
        self._answer = answer
        self._name = name

    def is_authorised(self, protocol_id: int, action_id: int, type: Any, encoded_principal: bytes | None) -> bool:
        """The fixed answer."""
        return self._answer

    def __repr__(self) -> str:
        """Its supplier name."""
        return self._name


class _FunctionService:
    """A plain function ``(protocol_id, action_id, type, encoded_principal) -> bool`` used as a service."""

    __slots__ = ("function",)

    def __init__(self, function: Callable[[int, int, Any, bytes | None], bool]) -> None:
        self.function = function

    def is_authorised(self, protocol_id: int, action_id: int, type: Any, encoded_principal: bytes | None) -> bool:
        """The function's answer, as a bool."""
        return bool(self.function(protocol_id, action_id, type, encoded_principal))

    def __repr__(self) -> str:
        """The wrapped function."""
        return f"AuthorisationService({self.function!r})"


ALLOW_ALL: AuthorisationService = _Fixed(True, ALLOW_ALL_NAME)
DENY_ALL: AuthorisationService = _Fixed(False, DENY_ALL_NAME)


def authenticator_from_name(name: str | None) -> Authenticator:
    """The authenticator an ``*.authenticator.supplier`` property names (see the module docstring)."""
    text = (name or "").strip()
    if not text or text in (DEFAULT_AUTHENTICATOR_SUPPLIER_NAME, "DefaultAuthenticatorSupplier"):
        return DEFAULT_AUTHENTICATOR
    found = resolve_named(text, "authenticator supplier")
    if isinstance(found, Authenticator) and not isinstance(found, type):
        return found
    if not callable(found):
        raise ConfigurationError(f"authenticator supplier {text!r} is neither an authenticator nor callable")
    made = found()
    if not isinstance(made, Authenticator):
        raise ConfigurationError(f"authenticator supplier {text!r} made {made!r}, not an Authenticator")
    return made


def as_authorisation_service(value: Any) -> AuthorisationService:
    """``value`` as a service: an object with ``is_authorised``, or a function taking the same four arguments."""
    if isinstance(value, AuthorisationService):
        return value
    if callable(value):
        return _FunctionService(value)
    raise ConfigurationError(f"not an authorisation service (no is_authorised, not callable): {value!r}")


def authorisation_service_from_name(name: str | None) -> AuthorisationService:
    """The service a supplier property names: empty or ``ALLOW_ALL`` allows every request, ``DENY_ALL`` none;
    ``package.module:name`` is imported, and a class or function found there is called with no argument to make
    the service (an object that already is one is used as is)."""
    text = (name or "").strip()
    if not text or text == ALLOW_ALL_NAME:
        return ALLOW_ALL
    if text == DENY_ALL_NAME:
        return DENY_ALL
    found = resolve_named(text, "authorisation service supplier", "expected ALLOW_ALL, DENY_ALL or package.module:name")
    if isinstance(found, AuthorisationService) and not isinstance(found, type):
        return found
    if not callable(found):
        raise ConfigurationError(f"authorisation service supplier {text!r} is neither a service nor callable")
    return as_authorisation_service(found())


@runtime_checkable
class CredentialsSupplier(Protocol):
    """What a client presents to a server's authenticator (Aeron ``io.aeron.security.CredentialsSupplier``): its
    credentials with the connect request, and its answer to a challenge."""

    def encoded_credentials(self) -> bytes:
        """The credentials sent with the connect request (empty for none)."""

    def on_challenge(self, encoded_challenge: bytes) -> bytes:
        """The credentials answering the server's ``encoded_challenge``."""


class NullCredentialsSupplier:
    """No credentials, and an empty answer to a challenge (Aeron ``NullCredentialsSupplier``)."""

    def encoded_credentials(self) -> bytes:
        """Empty credentials."""
        return b""

    def on_challenge(self, encoded_challenge: bytes) -> bytes:
        """An empty challenge response."""
        return b""


__all__ = ["ALLOW_ALL", "ALLOW_ALL_NAME", "DEFAULT_AUTHENTICATOR", "DEFAULT_AUTHENTICATOR_SUPPLIER_NAME", "DENY_ALL",
           "DENY_ALL_NAME", "NULL_ENCODED_PRINCIPAL", "Authenticator", "AuthorisationService", "CredentialsSupplier",
           "DefaultAuthenticator", "NullCredentialsSupplier", "SessionProxy", "as_authorisation_service",
           "authenticator_from_name", "authorisation_service_from_name"]
