# SPDX-License-Identifier: Apache-2.0
"""aeron.common.settings, the one settings mechanism of the driver, the archive, its client and the cluster: a
setting's variable, its parsers, typed assignment, the bad-value message naming property and variable, the
Context built on a table, and the --help listing written from it."""
import enum
import pathlib

import pytest

from aeron.common.errors import ConfigurationError
from aeron.common.settings import (
    Setting,
    SettingsContext,
    SettingsTable,
    enum_parser,
    format_duration_ns,
    parse_bool,
    parse_int,
    parse_long,
    parse_size,
)


class Mode(enum.Enum):
    ONE = "ONE"
    TWO = "TWO"


class Table(SettingsTable):
    SETTINGS = (
        Setting("count", "aeron.test.count", 3, parse_int),
        Setting("enabled", "aeron.test.enabled", False, parse_bool),
        Setting("mode", "aeron.test.mode", Mode.ONE, enum_parser(Mode)),
        Setting("linger_ns", "aeron.test.linger", 5_000_000_000, lambda text: int(text)),
        Setting("path", "aeron.test.path", None),
        Setting("flow", "aeron.test.flow.supplier", "max", env="AERON_TEST_FLOWCONTROL_SUPPLIER"),
        Setting("mode_bits", "aeron.test.mode.bits", None, lambda text: int(text, 8),
                check=lambda value: value if isinstance(value, int) and 0 <= value <= 0o777 else
                (_ for _ in ()).throw(ValueError("not a mode"))),
    )


class Ctx(SettingsContext):
    SETTINGS = Table.SETTINGS
    CONTEXT_NAME = "Test.Context"
    COMPONENT = "test"
    EXTRA_ATTRS = ("hook",)

    def __init__(self, *args, **kwargs):
        self.hook = None
        super().__init__(*args, **kwargs)


def test_parsers():
    assert [parse_bool(t) for t in ("true", "TRUE", "1", "on", "yes")] == [True] * 5
    assert [parse_bool(t) for t in ("false", "0", "Off", "no")] == [False] * 4
    for text in ("t", "y", "onion", "2", ""):
        with pytest.raises(ValueError, match="not a boolean"):
            parse_bool(text)
    assert (parse_int(" 10 "), parse_int("0x10"), parse_int("-1")) == (10, 16, -1)
    with pytest.raises(ValueError, match="not an integer"):
        parse_int("010")                                # octal to C, ten to Java: refused
    with pytest.raises(ValueError, match="not an int32"):
        parse_int(str(1 << 31))
    assert parse_long(str((1 << 63) - 1)) == (1 << 63) - 1
    with pytest.raises(ValueError, match="not an int64"):
        parse_long(str(1 << 63))
    assert enum_parser(Mode)("two") is Mode.TWO
    with pytest.raises(ValueError, match="expected one of ONE, TWO"):
        enum_parser(Mode)("three")
    assert [format_duration_ns(v) for v in (5_000_000_000, 200_000_000, 1_500, 7, 0)] == [
        "5s", "200ms", "1500ns", "7ns", "0ns"]
    assert parse_size("64k") == 65536


def test_a_setting_names_its_variable_and_its_property_in_errors():
    count, flow = Table.setting("count"), Table.setting("flow")
    assert (count.env, flow.env) == ("AERON_TEST_COUNT", "AERON_TEST_FLOWCONTROL_SUPPLIER")
    with pytest.raises(ConfigurationError, match=r"invalid aeron\.test\.count \(AERON_TEST_COUNT\) = 'ten': "
                                                 "not an integer"):
        count.parse_text("ten")
    assert count.value({"aeron.test.count": "7"}, {"AERON_TEST_COUNT": "9"}) == 7
    assert count.value({}, {"AERON_TEST_COUNT": "9"}) == 9
    assert count.value({}, {"AERON_TEST_COUNT": ""}) == 3            # an empty variable is unset
    assert Table.find_setting("AERON_TEST_FLOWCONTROL_SUPPLIER") is flow
    assert Table.find_setting(" aeron.test.flow.supplier ") is flow and Table.find_setting("flow") is flow
    assert Table.find_setting("aeron.test.nothing") is None
    with pytest.raises(KeyError):
        Table.setting("nothing")


def test_assignment_is_typed():
    ctx = Ctx(environ={})
    ctx.count = "0x20"
    ctx.enabled = 1
    ctx.mode = "two"
    ctx.path = pathlib.Path("/tmp/x")
    ctx.mode_bits = 0o640
    assert (ctx.count, ctx.enabled, ctx.mode, ctx.path, ctx.mode_bits) == (32, True, Mode.TWO, "/tmp/x", 0o640)
    ctx.mode_bits = "660"
    ctx.path = None                                     # a setting whose default is None may be unset
    assert (ctx.mode_bits, ctx.path) == (0o660, None)
    for attr, value, message in (("count", None, "aeron.test.count must not be None"),
                                 ("count", 1.5, "not an integer"), ("count", True, "not an integer"),
                                 ("enabled", "maybe", "not a boolean"), ("enabled", "yes!", "not a boolean"),
                                 ("mode", "THREE", "expected one of"), ("mode", 2, "not a Mode"),
                                 ("mode_bits", 0o1000, "not a mode")):
        with pytest.raises(ConfigurationError, match=message):
            setattr(ctx, attr, value)
    ctx.hook = "anything"                               # not a setting: kept as given
    assert ctx.hook == "anything"


def test_a_context_takes_defaults_then_environment_then_properties_then_keywords():
    ctx = Ctx(["-Daeron.test.count=5", "AERON_TEST_ENABLED=true"], environ={"AERON_TEST_COUNT": "4",
                                                                         "AERON_TEST_MODE": "TWO",
                                                                         "AERON_TEST_PATH": ""},
              linger_ns=7, hook=print)
    assert (ctx.count, ctx.enabled, ctx.mode, ctx.linger_ns, ctx.path, ctx.hook) == (5, True, Mode.TWO, 7, None,
                                                                                    print)
    assert Ctx({"count": "6"}, environ={}).count == 6
    with pytest.raises(ConfigurationError, match="unknown test property 'aeron.test.nope'"):
        Ctx({"aeron.test.nope": "1"}, environ={})
    with pytest.raises(ConfigurationError, match="expected key=value, got 'aeron.test.count'"):
        Ctx(["aeron.test.count"], environ={})
    with pytest.raises(ConfigurationError, match="unknown Test.Context attribute 'nope'"):
        Ctx(environ={}, nope=1)
    with pytest.raises(ConfigurationError, match=r"AERON_TEST_COUNT\) = 'x'"):
        Ctx(environ={"AERON_TEST_COUNT": "x"})
    assert Ctx(environ={}).set("aeron.test.count", "8").update({"enabled": True}).count == 8


def test_the_help_listing_comes_from_the_table():
    text = Table.describe_settings("Test properties (environment variable), default:", {"path": "/somewhere"})
    assert text.splitlines() == [
        "Test properties (environment variable), default:",
        "  aeron.test.count (AERON_TEST_COUNT): 3",
        "  aeron.test.enabled (AERON_TEST_ENABLED): false",
        "  aeron.test.mode (AERON_TEST_MODE): ONE",
        "  aeron.test.linger (AERON_TEST_LINGER): 5s",
        "  aeron.test.path (AERON_TEST_PATH): /somewhere",
        "  aeron.test.flow.supplier (AERON_TEST_FLOWCONTROL_SUPPLIER): max",
        "  aeron.test.mode.bits (AERON_TEST_MODE_BITS): (unset)",
    ]
    assert Table.defaults()["aeron.test.mode"] is Mode.ONE


def test_the_driver_and_the_archive_list_every_property_they_read():
    from aeron.archive.archive import Context as ArchiveContext
    from aeron.driver.media_driver import Context as DriverContext
    for context in (DriverContext, ArchiveContext):
        lines = context.usage().splitlines()[1:]
        assert len(lines) == len(context.SETTINGS) > 30
        for setting, line in zip(context.SETTINGS, lines):
            assert line.startswith(f"  {setting.prop} ({setting.env}): "), line
    assert "  aeron.multicast.flow.control.strategy (AERON_MULTICAST_FLOWCONTROL_SUPPLIER): max" in \
        DriverContext.usage().splitlines()
