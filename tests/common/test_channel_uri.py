# SPDX-License-Identifier: Apache-2.0
"""aeron.common.channel_uri: grammar, typed parameters (CommonContext), value syntax (SystemUtil.parseSize)."""
from __future__ import annotations

import pytest

from aeron.common.channel_uri import (
    INVALID_TAG, IPC_CHANNEL, MAX_URI_LENGTH, SPY_PREFIX, ChannelUri, parse_duration_ns, parse_size,
)
from aeron.common.errors import ConfigurationError, InvalidChannelError

INT64_MAX = (1 << 63) - 1


# ---- good URIs -------------------------------------------------------------------------------------------------

def test_ipc_without_params():
    uri = ChannelUri.parse("aeron:ipc")
    assert (uri.media, uri.prefix, dict(uri.params)) == ("ipc", "", {})
    assert uri.is_ipc and not uri.is_udp and not uri.is_spy
    assert str(uri) == "aeron:ipc" == IPC_CHANNEL
    assert uri.tags == (None, None) and uri.alias is None and len(uri) == 0
    assert uri.scheme == "aeron"


def test_udp_unicast():
    uri = ChannelUri.parse("aeron:udp?endpoint=localhost:40123|interface=192.168.1.0/24")
    assert uri.is_udp and uri.media == "udp"
    assert uri.get("endpoint") == "localhost:40123" and uri.endpoint == "localhost:40123"
    assert uri.get("interface") == "192.168.1.0/24"
    assert uri.has("endpoint") and "interface" in uri and not uri.has("ttl")
    assert uri.get("ttl") is None and uri.get("ttl", "8") == "8"
    assert list(uri) == ["endpoint", "interface"]


def test_spy_prefix():
    uri = ChannelUri.parse("aeron-spy:aeron:udp?endpoint=224.0.1.1:40456|interface=localhost")
    assert uri.is_spy and uri.prefix == "aeron-spy" and uri.is_udp
    assert str(uri) == "aeron-spy:aeron:udp?endpoint=224.0.1.1:40456|interface=localhost"
    assert str(uri).startswith(SPY_PREFIX)


def test_values_may_hold_colon_question_mark_equals_slash_brackets():
    uri = ChannelUri.parse("aeron:udp?endpoint=[::1]:40123|fc=tagged,g:1001/3,t:5s|alias=a=b?c|interface={eth0}")
    assert uri.get("endpoint") == "[::1]:40123"
    assert uri.get("fc") == "tagged,g:1001/3,t:5s"
    assert uri.alias == "a=b?c"
    assert uri.get("interface") == "{eth0}"


def test_tags():
    uri = ChannelUri.parse("aeron:ipc?tags=1001,1002")
    assert uri.tags == (1001, 1002) and uri.channel_tag == 1001 and uri.entity_tag == 1002
    uri = ChannelUri.parse("aeron:udp?tags=7")
    assert uri.tags == (7, None)
    assert INVALID_TAG == -1


def test_session_id_plain_and_tagged():
    assert ChannelUri.parse("aeron:ipc?session-id=-5").session_id() == -5
    tagged = ChannelUri.parse("aeron:udp?endpoint=h:1|session-id=tag:77")
    assert tagged.is_session_id_tagged() and tagged.session_id_tag() == 77
    with pytest.raises(InvalidChannelError) as info:
        tagged.session_id()
    assert info.value.part == "session-id=tag:77"
    assert ChannelUri.parse("aeron:ipc").session_id() is None
    assert ChannelUri.parse("aeron:ipc?session-id=3").session_id_tag() is None


def test_canonical_order_follows_c_sprint():
    # aeron_uri_udp_sprint prints endpoint, interface, control, control-mode, tags, ttl, then the rest as given.
    text = "aeron:udp?alias=x|ttl=4|tags=1,2|control-mode=dynamic|control=h:2|interface=eth|endpoint=h:1|mtu=8k"
    assert str(ChannelUri.parse(text)) == (
        "aeron:udp?endpoint=h:1|interface=eth|control=h:2|control-mode=dynamic|tags=1,2|ttl=4|alias=x|mtu=8k")
    assert str(ChannelUri.parse("aeron:ipc?alias=y|tags=3|term-length=64k")) == (
        "aeron:ipc?tags=3|alias=y|term-length=64k")


@pytest.mark.parametrize("text", [
    "aeron:ipc",
    "aeron:ipc?term-length=64k",
    "aeron:udp?endpoint=localhost:40123",
    "aeron:udp?endpoint=224.0.1.1:40456|interface=localhost|ttl=16",
    "aeron:udp?control=localhost:40124|control-mode=dynamic",
    "aeron:udp?control-mode=manual",
    "aeron-spy:aeron:udp?endpoint=localhost:40123",
    "aeron:ipc?tags=1,2|alias=x|sparse=false|linger=5s",
    "aeron:udp?endpoint=h:1|init-term-id=3|term-id=5|term-offset=64|term-length=64k",
])
def test_round_trip(text):
    uri = ChannelUri.parse(text)
    assert str(uri) == text
    assert ChannelUri.parse(str(uri)) == uri


def test_equality_ignores_param_order_but_not_prefix_or_media():
    a = ChannelUri.parse("aeron:udp?endpoint=h:1|alias=x")
    assert a == ChannelUri.parse("aeron:udp?alias=x|endpoint=h:1")
    assert a != ChannelUri.parse("aeron-spy:aeron:udp?alias=x|endpoint=h:1")
    assert ChannelUri.parse("aeron:ipc?alias=x") != ChannelUri.parse("aeron:udp?alias=x")
    assert a != "aeron:udp?endpoint=h:1|alias=x"
    with pytest.raises(TypeError):
        hash(a)


def test_constructor_put_remove_copy():
    uri = ChannelUri("udp", {"endpoint": "h:1"})
    assert str(uri) == "aeron:udp?endpoint=h:1"
    assert uri.put("session-id", 5) is None
    assert uri.put("session-id", "6") == "5"
    assert uri.put("tags", "4,5") is None and uri.tags == (4, 5)
    copy = uri.copy()
    assert uri.remove("tags") == "4,5" and uri.tags == (None, None)
    assert copy.tags == (4, 5) and copy.get("tags") == "4,5"
    assert uri.remove("nothing") is None
    assert str(uri) == "aeron:udp?endpoint=h:1|session-id=6"
    assert str(ChannelUri("ipc", prefix="aeron-spy")) == "aeron-spy:aeron:ipc"
    assert str(ChannelUri("ipc", [("alias", "a"), ("mtu", "1k")])) == "aeron:ipc?alias=a|mtu=1k"
    with pytest.raises(TypeError):
        uri.params["x"] = "1"  # type: ignore[index]


@pytest.mark.parametrize("key, value, part", [
    ("", "1", ""), ("a=b", "1", "a=b"), ("a|b", "1", "a|b"), ("alias", "", "alias="), ("alias", "x|y", "alias=x|y"),
    ("tags", "x", "tags=x"), ("session-id", "tag:", "session-id=tag:"),
])
def test_put_validates(key, value, part):
    uri = ChannelUri.parse("aeron:ipc")
    with pytest.raises(InvalidChannelError) as info:
        uri.put(key, value)
    assert info.value.part == part
    assert dict(uri.params) == {}


@pytest.mark.parametrize("media, prefix", [("tcp", ""), ("ipc", "aeron-foo")])
def test_constructor_validates(media, prefix):
    with pytest.raises(InvalidChannelError):
        ChannelUri(media, prefix=prefix)
    with pytest.raises(InvalidChannelError):
        ChannelUri("ipc", [("a", "1"), ("a", "2")])


# ---- bad URIs: each error names the bad part -------------------------------------------------------------------

@pytest.mark.parametrize("text, part, reason", [
    ("aeron:ipc?a=1|a=2", "a=2", "duplicate key"),
    ("aeron:udp?endpoint=h:1|endpoint=h:2", "endpoint=h:2", "duplicate key"),
    ("aeron:ipc?=1", "=1", "empty key"),
    ("aeron:ipc?a=", "a=", "empty value"),
    ("aeron:ipc?a=1|b", "b", "no '='"),
    ("aeron:ipc?alias", "alias", "no '='"),
    ("aeron:ipc?a=1||b=2", "|", "empty parameter"),
    ("aeron:ipc?a=1|", "|", "empty parameter"),
    ("aeron:ipc?|a=1", "|", "empty parameter"),
    ("aeron:ipc?", "?", "followed by parameters"),
    ("aeron:tcp?endpoint=h:1", "tcp", "unknown media"),
    ("aeron:", "aeron:", "unknown media"),
    ("aeron:IPC", "IPC", "unknown media"),
    ("aeron:ipcx", "ipcx", "unknown media"),
    ("aeron:ipc:x", "ipc:x", "unknown media"),
    ("aeron:udp", "aeron:udp", "needs parameters"),
    ("udp?endpoint=h:1", "udp", "must start with 'aeron:'"),
    ("aeron-spy:udp?endpoint=h:1", "udp", "must start with 'aeron:'"),
    ("Aeron:ipc", "Aeron:ipc", "must start with 'aeron:'"),
    ("", "", "must start with 'aeron:'"),
    ("aeron-spy:aeron-spy:aeron:udp?endpoint=h:1", "aeron-spy:aeron:udp", "must start with 'aeron:'"),
    ("aeron:ipc?tags=abc", "tags=abc", "invalid tags"),
    ("aeron:ipc?tags=1,", "tags=1,", "invalid tags"),
    ("aeron:ipc?tags=,2", "tags=,2", "invalid tags"),
    ("aeron:ipc?tags=1,2,3", "tags=1,2,3", "invalid tags"),
    ("aeron:ipc?tags=-1", "tags=-1", "invalid tags"),
    ("aeron:ipc?tags=9223372036854775808", "tags=9223372036854775808", "invalid tags"),
    ("aeron:udp?endpoint=h:1|session-id=tag:x1", "session-id=tag:x1", "session-id tag"),
    ("aeron:udp?endpoint=h:1|session-id=tag:", "session-id=tag:", "session-id tag"),
])
def test_bad_uris_name_the_part(text, part, reason):
    with pytest.raises(InvalidChannelError) as info:
        ChannelUri.parse(text)
    error = info.value
    assert error.part == part
    assert error.channel == text
    assert reason in str(error)
    if part:
        assert repr(part) in str(error)
    assert isinstance(error, ConfigurationError) and isinstance(error, ValueError)


def test_max_length():
    at_limit = "aeron:ipc?alias=" + "x" * (MAX_URI_LENGTH - len("aeron:ipc?alias="))
    assert len(at_limit) == MAX_URI_LENGTH
    assert ChannelUri.parse(at_limit).alias == "x" * (MAX_URI_LENGTH - 16)
    with pytest.raises(InvalidChannelError, match="exceeds max supported length"):
        ChannelUri.parse(at_limit + "y")


def test_not_a_string():
    with pytest.raises(InvalidChannelError):
        ChannelUri.parse(b"aeron:ipc")  # type: ignore[arg-type]


# ---- typed getters ---------------------------------------------------------------------------------------------

def parse(params: str) -> ChannelUri:
    return ChannelUri.parse("aeron:ipc?" + params)


def test_absent_params_are_none():
    uri = ChannelUri.parse("aeron:ipc")
    for getter in (uri.term_length, uri.mtu, uri.session_id, uri.linger_ns, uri.initial_position, uri.max_resend,
                   uri.sparse, uri.reliable, uri.tether, uri.rejoin, uri.eos, uri.spies_simulate_connection,
                   uri.publication_window_length, uri.receiver_window_length, uri.stream_id,
                   uri.response_correlation_id):
        assert getter() is None


@pytest.mark.parametrize("value, expected", [
    ("65536", 65536), ("64k", 65536), ("64K", 65536), ("16m", 16 << 20), ("1g", 1 << 30), ("1G", 1 << 30),
])
def test_term_length(value, expected):
    assert parse(f"term-length={value}").term_length() == expected


@pytest.mark.parametrize("value", ["32k", "2g", "100000", "96k", "0", "abc", "64kb", "-64k", "64 k"])
def test_term_length_invalid(value):
    with pytest.raises(InvalidChannelError) as info:
        parse(f"term-length={value}").term_length()
    assert info.value.part == f"term-length={value}"
    assert "term-length" in str(info.value)


@pytest.mark.parametrize("value, expected", [("1408", 1408), ("64", 64), ("8k", 8192), ("65504", 65504)])
def test_mtu(value, expected):
    assert parse(f"mtu={value}").mtu() == expected


@pytest.mark.parametrize("value", ["32", "0", "1400", "65536", "64k", "x"])
def test_mtu_invalid(value):
    with pytest.raises(InvalidChannelError) as info:
        parse(f"mtu={value}").mtu()
    assert info.value.part == f"mtu={value}"


@pytest.mark.parametrize("value", ["2147483648", "-2147483649", "1.5", "0x10", "", "abc"])
def test_session_id_invalid(value):
    uri = parse(f"session-id={value}") if value else parse("alias=x")
    if not value:
        assert uri.session_id() is None
        return
    with pytest.raises(InvalidChannelError) as info:
        uri.session_id()
    assert info.value.part == f"session-id={value}"


def test_session_id_bounds():
    assert parse("session-id=2147483647").session_id() == 2147483647
    assert parse("session-id=-2147483648").session_id() == -2147483648
    assert parse("session-id=+7").session_id() == 7


@pytest.mark.parametrize("value, expected", [
    ("5s", 5_000_000_000), ("100ms", 100_000_000), ("250us", 250_000), ("10ns", 10), ("1000", 1000),
    ("5S", 5_000_000_000), ("0", 0),
])
def test_linger(value, expected):
    assert parse(f"linger={value}").linger_ns() == expected


@pytest.mark.parametrize("value", ["5m", "5x", "ms", "-1s", "1.5s", "5 s"])
def test_linger_invalid(value):
    with pytest.raises(InvalidChannelError) as info:
        parse(f"linger={value}").linger_ns()
    assert info.value.part == f"linger={value}"


def test_initial_position():
    uri = parse("init-term-id=-5|term-id=-3|term-offset=1024|term-length=64k")
    assert uri.initial_position() == (-5, -3, 1024)
    # wrap-aware: term-id just past INT32_MAX wraps to INT32_MIN and is still after init-term-id
    assert parse("init-term-id=2147483647|term-id=-2147483648|term-offset=0").initial_position() == (
        2147483647, -2147483648, 0)
    assert parse("init-term-id=0|term-id=0|term-offset=65536").initial_position(term_length=65536) == (0, 0, 65536)


@pytest.mark.parametrize("params, part, reason", [
    ("init-term-id=1|term-id=2", "init-term-id=1|term-id=2", "complete set"),
    ("term-offset=0", "term-offset=0", "complete set"),
    ("init-term-id=5|term-id=4|term-offset=0", "init-term-id=5|term-id=4", "before init-term-id"),
    ("init-term-id=0|term-id=0|term-offset=33", "term-offset=33", "multiple of 32"),
    ("init-term-id=0|term-id=0|term-offset=131072|term-length=64k", "term-offset=131072", "must not exceed"),
    ("init-term-id=x|term-id=0|term-offset=0", "init-term-id=x", "int32"),
    ("init-term-id=0|term-id=0|term-offset=-32", "term-offset=-32", "invalid size"),
])
def test_initial_position_invalid(params, part, reason):
    with pytest.raises(InvalidChannelError) as info:
        parse(params).initial_position()
    assert info.value.part == part
    assert reason in str(info.value)


def test_initial_position_checks_the_given_term_length():
    with pytest.raises(InvalidChannelError, match="must not exceed"):
        parse("init-term-id=0|term-id=0|term-offset=65568").initial_position(term_length=65536)


@pytest.mark.parametrize("getter, key", [
    ("sparse", "sparse"), ("reliable", "reliable"), ("tether", "tether"), ("rejoin", "rejoin"), ("eos", "eos"),
    ("spies_simulate_connection", "ssc"),
])
def test_booleans(getter, key):
    assert getattr(parse(f"{key}=true"), getter)() is True
    assert getattr(parse(f"{key}=false"), getter)() is False
    with pytest.raises(InvalidChannelError) as info:
        getattr(parse(f"{key}=yes"), getter)()
    assert info.value.part == f"{key}=yes"


def test_boolean_prefix_match_as_c():
    # aeron_uri_get_bool compares only the length of "true"/"false".
    assert parse("sparse=trueish").sparse() is True
    with pytest.raises(InvalidChannelError):
        parse("sparse=1").sparse()
    with pytest.raises(InvalidChannelError):
        parse("sparse=True").sparse()


def test_other_getters():
    uri = parse("max-resend=16|pub-wnd=128k|rcv-wnd=1m|stream-id=1001|response-correlation-id=42|gtag=-9")
    assert uri.max_resend() == 16
    assert uri.publication_window_length() == 128 * 1024
    assert uri.receiver_window_length() == 1 << 20
    assert uri.stream_id() == 1001
    assert uri.response_correlation_id() == 42
    assert uri.get_int64("gtag") == -9
    assert parse("response-correlation-id=prototype").response_correlation_id() == -2
    assert parse("response-correlation-id=-1").response_correlation_id() == -1
    assert parse("nak-delay=100us").get_duration_ns("nak-delay") == 100_000
    for params, getter in [("max-resend=0", "max_resend"), ("max-resend=257", "max_resend"),
                           ("response-correlation-id=-3", "response_correlation_id"),
                           ("stream-id=x", "stream_id")]:
        with pytest.raises(InvalidChannelError) as info:
            getattr(parse(params), getter)()
        assert info.value.part == params
    with pytest.raises(InvalidChannelError):
        parse("gtag=9223372036854775808").get_int64("gtag")


# ---- value syntax ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("0", 0), ("1408", 1408), ("1k", 1024), ("1K", 1024), ("3m", 3 << 20), ("3M", 3 << 20), ("2g", 2 << 30),
    ("2G", 2 << 30), (" 64k ", 65536), ("9007199254740991k", 9007199254740991 * 1024),
    (str(INT64_MAX), INT64_MAX),
])
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", [
    "", "k", "-1", "+1", "1.5k", "1kb", "1t", "1 k", "0x10", str(INT64_MAX + 1), "9007199254740992k", "8589934592g",
])
def test_parse_size_invalid(text):
    with pytest.raises(ConfigurationError, match="size"):
        parse_size(text)


@pytest.mark.parametrize("text, expected", [
    ("0", 0), ("17", 17), ("17ns", 17), ("17NS", 17), ("3us", 3000), ("3US", 3000), ("3ms", 3_000_000),
    ("3Ms", 3_000_000), ("3s", 3_000_000_000), ("3S", 3_000_000_000), (" 1s ", 1_000_000_000),
    ("9223372037s", INT64_MAX), ("9223372036854776ms", INT64_MAX),   # saturates, as aeron_parse_duration_ns
    (str(INT64_MAX), INT64_MAX),
])
def test_parse_duration_ns(text, expected):
    assert parse_duration_ns(text) == expected


@pytest.mark.parametrize("text", ["", "s", "-1s", "1.5s", "1m", "1h", "1 s", "1sec", "1mss", str(INT64_MAX + 1)])
def test_parse_duration_ns_invalid(text):
    with pytest.raises(ConfigurationError, match="duration"):
        parse_duration_ns(text)


# -- found by the property tests: Unicode case folding and numbers longer than int() takes ---------------------

def test_the_long_s_is_not_a_seconds_suffix():
    with pytest.raises(ConfigurationError, match="invalid duration"):
        parse_duration_ns("5\u017f")                 # U+017F folds to "s" under a Unicode IGNORECASE
    with pytest.raises(InvalidChannelError, match="linger"):
        ChannelUri.parse("aeron:ipc?linger=5\u017f").linger_ns()


def test_numbers_longer_than_int_takes_are_refused_as_too_large():
    huge = "9" * 5000
    with pytest.raises(ConfigurationError, match="too large"):
        parse_size(huge)
    with pytest.raises(ConfigurationError, match="too large"):
        parse_duration_ns(huge)
    assert parse_duration_ns(huge + "ms") == 2 ** 63 - 1             # with a unit it saturates, as in C
    assert parse_size("0" * 5000 + "64k") == 65536                     # leading zeros are only zeros
    uri = ChannelUri("ipc", {"alias": "a"})
    uri.put("stream-id", huge)                                          # put() has no length limit
    with pytest.raises(InvalidChannelError, match="not an int32"):
        uri.stream_id()
    uri.put("session-id", "-" + "0" * 5000 + "7")
    assert uri.session_id() == -7
    with pytest.raises(InvalidChannelError, match="invalid tags"):
        uri.put("tags", huge)
    uri.put("tags", "0" * 5000 + "5," + "0" * 5000 + "6")
    assert uri.tags == (5, 6)
    uri.put("session-id", "tag:" + "0" * 5000 + "3")
    assert uri.session_id_tag() == 3
