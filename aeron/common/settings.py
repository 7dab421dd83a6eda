# SPDX-License-Identifier: Apache-2.0
"""Settings named by Aeron's Java system properties (``aeron.cluster.log.channel``) and their environment
variables (``AERON_CLUSTER_LOG_CHANNEL``: upper case, ``.`` as ``_``, unless the C driver spells one otherwise),
with the parsers Aeron's configuration uses: the one table mechanism of the media driver's, the archive's and the
cluster's configuration. A value in ``properties`` wins over the environment, which wins over the default; an
empty variable counts as unset (the C driver ends up with the default for one too); a value that does not parse
raises ConfigurationError naming the property and its variable (Java and C would fall back to the default).

:class:`SettingsTable` holds a ``SETTINGS`` tuple and its lookups, and writes the ``--help`` listing of the
properties; :class:`SettingsContext` is a Context built on one (the driver's and the archive's): defaults, then
the environment, then properties, then keyword attributes, each value checked as it is assigned.
"""
from __future__ import annotations

import dataclasses
import enum
import importlib
import os
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from aeron.common.channel_uri import parse_duration_ns, parse_size
from aeron.common.errors import ConfigurationError

__all__ = ["Setting", "SettingsContext", "SettingsTable", "enum_parser", "format_duration_ns", "parse_bool",
           "parse_duration_ns", "parse_int", "parse_long", "parse_size", "parse_str", "property_items",
           "read_properties", "resolve", "resolve_named"]

_E = TypeVar("_E", bound=enum.Enum)
_C = TypeVar("_C", bound="SettingsContext")
_TRUE = ("1", "on", "true", "yes")
_FALSE = ("0", "off", "false", "no")


def parse_str(text: str) -> str:
    """The text itself."""
    return text


def _parse_integer(text: str, bits: int) -> int:
    # base 0: decimal, or 0x/0o/0b as C's strtol reads them; "010" is refused (octal to C, ten to Java)
    try:
        value = int(text.strip(), 0)
    except ValueError:
        raise ValueError(f"not an integer: {text!r}") from None
    if not -(1 << (bits - 1)) <= value < 1 << (bits - 1):
        raise ValueError(f"{value} is not an int{bits}")
    return value


def parse_int(text: str) -> int:
    """An int32: decimal, or hexadecimal with ``0x``."""
    return _parse_integer(text, 32)


def parse_long(text: str) -> int:
    """An int64: decimal, or hexadecimal with ``0x``."""
    return _parse_integer(text, 64)


def parse_bool(text: str) -> bool:
    """``true``/``false``, ``1``/``0``, ``on``/``off`` or ``yes``/``no``, in any case (the spellings of C's
    ``aeron_parse_bool`` and Java's ``true``); anything else is refused."""
    value = text.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f"not a boolean: {text!r}")


def enum_parser(enum_type: type[_E]) -> Callable[[str], _E]:
    """A parser of ``enum_type``'s member names, in any case (``SHARED`` or ``shared``)."""
    def parse(text: str) -> _E:
        try:
            return enum_type[text.strip().upper()]
        except KeyError:
            raise ValueError(f"expected one of {', '.join(m.name for m in enum_type)}") from None
    return parse


def format_duration_ns(value: int) -> str:
    """A duration in the largest unit that holds it whole, as the duration properties take it (``5s``, ``200ms``)."""
    for unit, scale in (("s", 1_000_000_000), ("ms", 1_000_000), ("us", 1_000)):
        if value and value % scale == 0:
            return f"{value // scale}{unit}"
    return f"{value}ns"


@dataclasses.dataclass(frozen=True)
class Setting:
    """One setting: the attribute a context gives it, Aeron's property name, its default and its parser; ``env``
    when its variable is not the property upper-cased (``AERON_MULTICAST_FLOWCONTROL_SUPPLIER``), and ``check``
    for a value given as its type rather than as text (a file mode as an int). A default of None makes a setting
    that may be unset."""

    attr: str
    prop: str
    default: Any
    parse: Callable[[str], Any] = parse_str
    env: str = ""
    check: Callable[[Any], Any] | None = None

    def __post_init__(self) -> None:
        """The variable defaults to the property upper-cased, dots as underscores."""
        if not self.env:
            object.__setattr__(self, "env", self.prop.upper().replace(".", "_"))

    def value(self, properties: Mapping[str, str] | None = None, environ: Mapping[str, str] | None = None) -> Any:
        """The property from ``properties``, else the environment variable from ``environ`` (``os.environ``
        unless given; empty is unset), else the default; ConfigurationError for a value that does not parse."""
        environ = os.environ if environ is None else environ
        if properties is not None and self.prop in properties:
            return self.parse_text(properties[self.prop])
        if environ.get(self.env):
            return self.parse_text(environ[self.env])
        return self.default

    def parse_text(self, text: str) -> Any:
        """``text`` parsed, or ConfigurationError naming the property and its variable."""
        return self.coerce(text)

    def coerce(self, value: Any) -> Any:
        """A value assigned to the setting, typed: text (or a path) is parsed, None is kept only by a setting whose
        default is None, a bool or int setting takes a bool or int, an enum setting a member of its enum, and
        anything else goes through ``check`` or its text through the parser. ConfigurationError otherwise."""
        if value is None:
            if self.default is None:
                return None
            raise ConfigurationError(f"{self.prop} must not be None")
        try:
            if isinstance(value, os.PathLike):
                value = os.fspath(value)
            if isinstance(value, str):
                return self.parse(value)
            if self.check is not None:
                return self.check(value)
            default = self.default
            if isinstance(default, bool):
                if not isinstance(value, int):
                    raise ValueError(f"not a boolean: {value!r}")
                return bool(value)
            if isinstance(default, enum.Enum):
                if not isinstance(value, type(default)):
                    raise ValueError(f"not a {type(default).__name__}")
                return value
            if isinstance(default, int):
                if isinstance(value, bool) or not isinstance(value, int):
                    raise ValueError(f"not an integer: {value!r}")
                return value
            return self.parse(str(value))
        except ConfigurationError as exc:
            raise ConfigurationError(f"{self.prop} ({self.env}): {exc}") from exc
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigurationError(f"invalid {self.prop} ({self.env}) = {value!r}: {exc}") from exc

    def shown(self, value: Any) -> str:
        """``value`` as the ``--help`` listing shows a default: ``(unset)``, an enum's name, ``true``/``false``,
        a duration with its unit (the ``*_ns`` settings), else its text."""
        if value is None or value == "":
            return "(unset)"
        if isinstance(value, enum.Enum):
            return value.name
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int) and self.attr.endswith("_ns"):
            return format_duration_ns(value)
        return str(value)


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
    _by_attr: ClassVar[dict[str, Setting]] = {}
    _by_name: ClassVar[dict[str, Setting]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Index the subclass's settings by attribute, and by property, variable and attribute name."""
        super().__init_subclass__(**kwargs)
        cls._by_attr = {s.attr: s for s in cls.SETTINGS}
        cls._by_name = {**{s.prop: s for s in cls.SETTINGS}, **{s.env: s for s in cls.SETTINGS}, **cls._by_attr}

    @classmethod
    def resolve(cls, properties: Mapping[str, str] | None = None,
                environ: Mapping[str, str] | None = None) -> dict[str, Any]:
        """Every setting's value: ``properties``, else the environment, else the default."""
        return resolve(cls.SETTINGS, properties, environ)

    @classmethod
    def setting(cls, attr: str) -> Setting:
        """The setting of attribute ``attr`` (KeyError when there is none)."""
        return cls._by_attr[attr]

    @classmethod
    def find_setting(cls, name: str) -> Setting | None:
        """The setting a property name, a variable name or an attribute name names, or None."""
        return cls._by_name.get(name.strip())

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        """Every property of the table, by Aeron's name, with its default (None: unset)."""
        return {s.prop: s.default for s in cls.SETTINGS}

    @classmethod
    def describe_settings(cls, title: str, shown: Mapping[str, str] | None = None) -> str:
        """The ``--help`` listing: ``title``, then a line per property, ``  name (VARIABLE): default``; ``shown``
        gives the text of a default by attribute (a default the context works out, such as the aeron dir)."""
        shown = shown or {}
        lines = [title]
        lines += [f"  {s.prop} ({s.env}): {shown.get(s.attr) or s.shown(s.default)}" for s in cls.SETTINGS]
        return "\n".join(lines)


class SettingsContext(SettingsTable):
    """A Context over its ``SETTINGS``: ``Context(properties=None, *, environ=None, **attributes)`` starts from the
    defaults, then takes the ``environ`` variables (``os.environ`` unless given; pass ``{}`` to ignore it), then
    ``properties`` (a mapping, or ``key=value`` strings, by property, variable or attribute name), then the keyword
    attributes; every setting is checked and typed as it is assigned (:meth:`Setting.coerce`), also later
    (``ctx.term_buffer_length = "64k"``). Other attributes a subclass takes as keywords are in ``EXTRA_ATTRS``;
    ``CONTEXT_NAME`` and ``COMPONENT`` name it in errors."""

    CONTEXT_NAME: ClassVar[str] = "Context"
    COMPONENT: ClassVar[str] = ""
    EXTRA_ATTRS: ClassVar[tuple[str, ...]] = ()

    def __init__(self, properties: Mapping[str, Any] | Iterable[str] | None = None, *,
                 environ: Mapping[str, str] | None = None, **attributes: Any) -> None:
        """See the class docstring; ConfigurationError naming the property for a bad value or an unknown name."""
        for setting in self.SETTINGS:
            object.__setattr__(self, setting.attr, setting.default)
        environ = os.environ if environ is None else environ
        for setting in self.SETTINGS:
            if environ.get(setting.env):
                self.set(setting.env, environ[setting.env])
        if properties is not None:
            self.update(properties)
        for name, value in attributes.items():
            if name not in self._by_attr and name not in self.EXTRA_ATTRS:
                raise ConfigurationError(f"unknown {self.CONTEXT_NAME} attribute {name!r}")
            setattr(self, name, value)

    if not TYPE_CHECKING:
        # hidden from type checkers, which then hold an assignment to the attribute's declared type and report a
        # misspelt name (a class with __setattr__ takes any name for them)
        def __setattr__(self, name: str, value: object) -> None:
            """Check and type a setting as it is assigned (a string is parsed as its property would be)."""
            setting = self._by_attr.get(name)
            object.__setattr__(self, name, value if setting is None else setting.coerce(value))

    def set(self: _C, name: str, value: Any) -> _C:
        """Set one setting by property name, ``AERON_*`` variable name or attribute name; returns the context."""
        setting = self.find_setting(name)
        if setting is None:
            raise ConfigurationError(f"unknown {self.COMPONENT} property {name.strip()!r}")
        setattr(self, setting.attr, value)
        return self

    def update(self: _C, properties: Mapping[str, Any] | Iterable[str]) -> _C:
        """Set several settings: a mapping, or ``key=value`` strings (a leading ``-D`` allowed); returns the
        context."""
        for key, value in property_items(properties):
            self.set(key, value)
        return self


def read_properties(args: Iterable[str]) -> dict[str, str]:
    """The properties a launcher's arguments give, in order, later ones winning: ``key=value`` (or, as a JVM takes
    them, ``-Dkey=value``) and the names of properties files (``key=value`` lines; ``#`` and ``!`` comments).
    A file that cannot be read raises OSError."""
    props: dict[str, str] = {}
    for arg in args:
        text = arg[2:] if arg.startswith("-D") else arg
        if "=" in text:
            key, value = text.split("=", 1)
            props[key.strip()] = value.strip()
            continue
        with open(arg, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if line and not line.startswith(("#", "!")) and "=" in line:
                    key, value = line.split("=", 1)
                    props[key.strip()] = value.strip()
    return props


def resolve_named(text: str, what: str, expected: str = "expected package.module:name") -> Any:
    """What a ``package.module:name`` setting names (a dotted name after the colon for a nested attribute), or a
    ConfigurationError ``"<what> '<text>': <why>"`` when it is not that form or cannot be imported."""
    module_name, sep, attr = text.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigurationError(f"{what} {text!r}: {expected}")
    try:
        found: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError) as ex:
        raise ConfigurationError(f"{what} {text!r}: {ex}") from None
    return found
