# SPDX-License-Identifier: Apache-2.0
"""Settings named by Aeron's Java system properties (``aeron.cluster.log.channel``) and their environment
variables (``AERON_CLUSTER_LOG_CHANNEL``: upper case, ``.`` as ``_``), with the parsers Aeron's configuration
uses: a value in ``properties`` wins over the environment, which wins over the default; a value that does not
parse raises ConfigurationError naming the property (Java would fall back to the default in silence).
"""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from aeron.common.channel_uri import parse_duration_ns, parse_size
from aeron.common.errors import ConfigurationError

__all__ = ["Setting", "SettingsTable", "parse_bool", "parse_duration_ns", "parse_int", "parse_size", "parse_str",
           "property_items", "resolve"]


def parse_str(text: str) -> str:
    """The text itself."""
    return text


def parse_int(text: str) -> int:
    """A decimal int32, as ``Integer.getInteger`` reads one."""
    value = int(text.strip())
    if not -(2 ** 31) <= value < 2 ** 31:
        raise ValueError(f"{value} is not an int32")
    return value


def parse_bool(text: str) -> bool:
    """``true``/``false`` (any case; also ``1``/``0``, ``yes``/``no``)."""
    value = text.strip().lower()
    if value in ("true", "1", "yes"):
        return True
    if value in ("false", "0", "no"):
        return False
    raise ValueError(f"not a boolean: {text!r}")


@dataclasses.dataclass(frozen=True)
class Setting:
    """One setting: the attribute a context gives it, Aeron's property name, its default and its parser."""

    attr: str
    prop: str
    default: Any
    parse: Callable[[str], Any] = parse_str

    @property
    def env(self) -> str:
        """The environment variable: the property upper-cased, dots as underscores."""
        return self.prop.upper().replace(".", "_")

    def value(self, properties: Mapping[str, str] | None = None, environ: Mapping[str, str] | None = None) -> Any:
        """The property from ``properties``, else the environment variable from ``environ`` (``os.environ``
        unless given), else the default; ConfigurationError for a value that does not parse."""
        environ = os.environ if environ is None else environ
        if properties is not None and self.prop in properties:
            return self.parse_text(properties[self.prop])
        if self.env in environ and environ[self.env] != "":
            return self.parse_text(environ[self.env])
        return self.default

    def parse_text(self, text: str) -> Any:
        """``text`` parsed, or ConfigurationError naming the property."""
        try:
            return self.parse(text)
        except ValueError as ex:
            raise ConfigurationError(f"{self.prop}={text!r}: {ex}") from None


def property_items(properties: Mapping[str, Any] | Iterable[str]) -> list[tuple[str, Any]]:
    """``(name, value)`` pairs of a mapping, or of ``name=value`` strings (a leading ``-D`` allowed, as on a Java
    command line); ConfigurationError for a string without ``=``."""
    if isinstance(properties, Mapping):
        return [(key.strip(), value) for key, value in properties.items()]
    items = []
    for text in properties:
        key, sep, value = (text[2:] if text.startswith("-D") else text).partition("=")
        if not sep:
            raise ConfigurationError(f"expected key=value, got {text!r}")
        items.append((key.strip(), value))
    return items


def resolve(settings: Iterable[Setting], properties: Mapping[str, str] | None = None,
            environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``{attr: value}`` of every setting (see :meth:`Setting.value`)."""
    return {s.attr: s.value(properties, environ) for s in settings}


class SettingsTable:
    """The base of a ``Configuration`` class: its ``SETTINGS`` and the lookups over them."""

    SETTINGS: tuple[Setting, ...] = ()

    @classmethod
    def resolve(cls, properties: Mapping[str, str] | None = None,
                environ: Mapping[str, str] | None = None) -> dict[str, Any]:
        """Every setting's value: ``properties``, else the environment, else the default."""
        return resolve(cls.SETTINGS, properties, environ)

    @classmethod
    def setting(cls, attr: str) -> Setting:
        """The setting of attribute ``attr`` (KeyError when there is none)."""
        for setting in cls.SETTINGS:
            if setting.attr == attr:
                return setting
        raise KeyError(attr)
