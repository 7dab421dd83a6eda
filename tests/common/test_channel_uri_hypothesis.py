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
