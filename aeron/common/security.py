# SPDX-License-Identifier: Apache-2.0
"""Authorisation of the actions of authenticated clients (Aeron ``io.aeron.security.AuthorisationService``), and
the credentials a client presents when it connects (``CredentialsSupplier``).

A service answers ``is_authorised(protocol_id, action_id, type, encoded_principal)``: ``protocol_id`` is the SBE
schema id of the protocol (101 for archive control), ``action_id`` the template id of the request, ``type`` an
optional refinement (None for archive requests) and ``encoded_principal`` what the authenticator accepted the
session with (None before it did). A service is called on the server's conductor thread.

:func:`authorisation_service_from_name` resolves the ``*.authorisation.service.supplier`` properties: ``ALLOW_ALL``,
``DENY_ALL``, or ``package.module:name`` naming a service, a class or a function that makes one.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from aeron.common.errors import ConfigurationError

ALLOW_ALL_NAME = "ALLOW_ALL"
DENY_ALL_NAME = "DENY_ALL"


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
    module_name, sep, attr = text.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigurationError(f"authorisation service supplier {text!r}: expected ALLOW_ALL, DENY_ALL or "
                                 "package.module:name")
    try:
        found: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError) as ex:
        raise ConfigurationError(f"authorisation service supplier {text!r}: {ex}") from None
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


__all__ = ["CredentialsSupplier", "NullCredentialsSupplier", "ALLOW_ALL", "ALLOW_ALL_NAME", "DENY_ALL", "DENY_ALL_NAME", "AuthorisationService",
           "as_authorisation_service", "authorisation_service_from_name"]
