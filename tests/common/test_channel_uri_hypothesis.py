# SPDX-License-Identifier: Apache-2.0
"""Property tests: generated channel URIs parse back to the same parameters and print canonically."""
from __future__ import annotations

import pytest

from hypothesis import given, settings
from hypothesis import strategies as st

from aeron.common.channel_uri import ChannelUri, parse_duration_ns, parse_size
from aeron.common.errors import ConfigurationError, InvalidChannelError

SETTINGS = settings(max_examples=200, deadline=None)

# Keys: no '=' or '|'; values: no '|' (the grammar has no escaping). Include ':', '?', '=', '/', ',' in values.
KEY_CHARS = st.characters(blacklist_characters="=|", blacklist_categories=("Cs",))
VALUE_CHARS = st.characters(blacklist_characters="|", blacklist_categories=("Cs",))
RESERVED = {"tags", "session-id"}
keys = st.text(KEY_CHARS, min_size=1, max_size=12).filter(lambda k: k not in RESERVED)
values = st.text(VALUE_CHARS, min_size=1, max_size=16)
tags = st.tuples(st.integers(0, (1 << 63) - 1), st.none() | st.integers(0, (1 << 63) - 1))
session_ids = st.integers(-(1 << 31), (1 << 31) - 1).map(str) | st.integers(0, 1 << 40).map(lambda n: f"tag:{n}")


@st.composite
def uris(draw):
    media = draw(st.sampled_from(["udp", "ipc"]))
    prefix = draw(st.sampled_from(["", "aeron-spy"]))
    params = draw(st.dictionaries(keys, values, max_size=8))
    if draw(st.booleans()):
        channel_tag, entity_tag = draw(tags)
        params["tags"] = str(channel_tag) if entity_tag is None else f"{channel_tag},{entity_tag}"
    if draw(st.booleans()):
        params["session-id"] = draw(session_ids)
    if media == "udp" and not params:
        params["endpoint"] = "localhost:40123"
    items = list(params.items())
    draw(st.randoms()).shuffle(items)
    return prefix, media, items


def render(prefix, media, items) -> str:
    text = (prefix + ":" if prefix else "") + "aeron:" + media
    return text + ("?" + "|".join(f"{k}={v}" for k, v in items) if items else "")


@SETTINGS
@given(uris())
def test_parse_recovers_generated_params(generated):
    prefix, media, items = generated
    uri = ChannelUri.parse(render(prefix, media, items))
    assert (uri.prefix, uri.media) == (prefix, media)
    assert dict(uri.params) == dict(items)
    assert list(uri.params) == [k for k, _ in items]      # order as given
    if "tags" in uri.params:
        channel_tag, _, entity_tag = uri.params["tags"].partition(",")
        assert uri.tags == (int(channel_tag), int(entity_tag) if entity_tag else None)
    else:
        assert uri.tags == (None, None)


@SETTINGS
@given(uris())
def test_canonical_string_round_trips(generated):
    uri = ChannelUri.parse(render(*generated))
    canonical = str(uri)
    again = ChannelUri.parse(canonical)
    assert again == uri
    assert str(again) == canonical
    assert ChannelUri(uri.media, uri.params, prefix=uri.prefix) == uri


@SETTINGS
@given(uris(), st.integers(0, 8), st.sampled_from(["dup", "empty-key", "empty-value", "no-equals", "empty-param"]))
def test_one_bad_parameter_is_named(generated, position, fault):
    prefix, media, items = generated
    items = list(items) or [("alias", "a")]
    key, value = items[position % len(items)]
    bad = {"dup": f"{key}={value}", "empty-key": f"={value}", "empty-value": f"{key}=",
           "no-equals": key, "empty-param": ""}[fault]
    items_text = [f"{k}={v}" for k, v in items]
    items_text.insert(position % (len(items_text) + 1), bad)
    text = render(prefix, media, []) + "?" + "|".join(items_text)
    with pytest.raises(InvalidChannelError) as info:
        ChannelUri.parse(text)
    assert info.value.channel == text
    assert info.value.part == (bad if fault != "empty-param" else "|")


@SETTINGS
@given(st.integers(0, (1 << 53) - 1), st.sampled_from(["", "k", "K", "m", "M", "g", "G"]))
def test_parse_size_matches_powers_of_1024(number, suffix):
    expected = number << {"": 0, "k": 10, "m": 20, "g": 30}[suffix.lower()]
    if expected > (1 << 63) - 1:
        with pytest.raises(ConfigurationError):
            parse_size(f"{number}{suffix}")
    else:
        assert parse_size(f"{number}{suffix}") == expected


@SETTINGS
@given(st.integers(0, 1 << 64), st.sampled_from(["", "ns", "us", "ms", "s", "NS", "Us", "mS", "S"]))
def test_parse_duration_saturates(number, suffix):
    scale = {"": 1, "ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}[suffix.lower()]
    text = f"{number}{suffix}"
    if suffix == "" and number > (1 << 63) - 1:
        with pytest.raises(ConfigurationError):
            parse_duration_ns(text)
    else:
        assert parse_duration_ns(text) == min(number * scale, (1 << 63) - 1)


# -- hostile text: whatever a client sends, parsing and every typed getter raise InvalidChannelError or succeed --

ANY_TEXT = st.text(max_size=120)
PARAM_KEYS = ["endpoint", "interface", "control", "control-mode", "ttl", "mtu", "term-length", "init-term-id",
              "term-id", "term-offset", "session-id", "linger", "max-resend", "pub-wnd", "rcv-wnd", "stream-id",
              "response-correlation-id", "sparse", "reliable", "tether", "rejoin", "eos", "ssc", "tags", "alias"]
GETTERS = ("term_length", "mtu", "session_id", "session_id_tag", "linger_ns", "initial_position", "max_resend",
           "publication_window_length", "receiver_window_length", "stream_id", "response_correlation_id", "sparse",
           "reliable", "tether", "rejoin", "eos", "spies_simulate_connection", "tags", "alias", "endpoint",
           "control_mode", "is_session_id_tagged")


def hostile_value():
    # mostly text around the shapes the getters expect (numbers, sizes, durations, tags), with Unicode look-alikes
    # (digits of other scripts, the long s that case-folds to 's', the Kelvin sign) and huge numbers
    near = st.sampled_from(["", "-", "+", "tag:", "0x", " ", "\u017f", "\u212a", "\u0661", "_", "e3"])
    number = st.one_of(st.integers(-(2 ** 70), 2 ** 70).map(str), st.integers(4000, 5000).map(lambda n: "9" * n))
    suffix = st.sampled_from(["", "k", "m", "g", "ns", "us", "ms", "s", "S", "\u017f", "\u212a", "b", "true", "x"])
    shaped = st.builds(lambda a, n, s: a + n + s, near, number, suffix)
    return st.one_of(shaped, st.text(st.characters(blacklist_characters="|", blacklist_categories=("Cs",)),
                                     min_size=1, max_size=30)).filter(lambda v: v and "|" not in v)


@SETTINGS
@given(ANY_TEXT)
def test_any_text_parses_or_raises_invalid_channel(text):
    for candidate in (text, "aeron:" + text, "aeron:udp?" + text, "aeron:ipc?" + text, "aeron-spy:aeron:" + text):
        try:
            uri = ChannelUri.parse(candidate)
        except InvalidChannelError as error:
            assert error.channel == candidate
            continue
        assert ChannelUri.parse(str(uri)) == uri


@SETTINGS
@given(st.sampled_from(["udp", "ipc"]), st.dictionaries(st.sampled_from(PARAM_KEYS), hostile_value(), max_size=6))
def test_typed_getters_of_hostile_values_raise_only_invalid_channel(media, params):
    text = f"aeron:{media}?" + "|".join(f"{k}={v}" for k, v in params.items()) if params else f"aeron:{media}"
    try:
        uri = ChannelUri.parse(text)
    except InvalidChannelError:
        return
    for name in GETTERS:
        try:
            attr = getattr(uri, name)
            value = attr() if callable(attr) else attr
        except InvalidChannelError as error:
            assert error.part, name
            continue
        if name in ("term_length", "mtu", "max_resend", "linger_ns", "stream_id", "session_id", "session_id_tag"):
            assert value is None or isinstance(value, int)
    for key in params:
        for getter in (uri.get_int32, uri.get_int64, uri.get_size, uri.get_duration_ns, uri.get_bool):
            try:
                getter(key)
            except InvalidChannelError as error:
                assert key in error.part


@SETTINGS
@given(st.one_of(ANY_TEXT, hostile_value()))
def test_size_and_duration_parsers_raise_only_configuration_error(text):
    for parse in (parse_size, parse_duration_ns):
        try:
            value = parse(text)
        except ConfigurationError:
            continue
        assert 0 <= value <= (1 << 63) - 1

