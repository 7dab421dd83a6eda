# SPDX-License-Identifier: Apache-2.0
"""UdpChannel: channel URIs resolved into socket addresses, multicast control groups, MDC control addresses and the
canonical form that keys endpoint sharing (aeron_udp_channel.c)."""
from __future__ import annotations

import socket

import pytest

from aeron.driver.udp_channel import UdpChannel, format_address
from aeron.common.errors import InvalidChannelError


def parse(channel, sub=False):
    return UdpChannel.parse(channel, is_subscription=sub)


@pytest.mark.parametrize("sub", [False, True])
def test_unicast_endpoint(sub):
    ch = parse("aeron:udp?endpoint=127.0.0.1:40123", sub)
    assert ch.family == socket.AF_INET
    assert ch.remote_data == ("127.0.0.1", 40123)
    assert not ch.is_multicast and not ch.has_group_semantics and not ch.has_explicit_control
    # publication sends from an ephemeral port; subscription binds the endpoint
    assert ch.local_data == (("127.0.0.1", 40123) if sub else ("0.0.0.0", 0))
    assert ch.canonical_form == "UDP-0.0.0.0:0-127.0.0.1:40123"


def test_unicast_publication_bound_to_an_interface():
    ch = parse("aeron:udp?endpoint=127.0.0.1:5|interface=127.0.0.1:7")
    assert ch.local_data == ("127.0.0.1", 7)
    assert ch.canonical_form == "UDP-127.0.0.1:7-127.0.0.1:5"


def test_hostnames_resolve_but_the_canonical_form_keeps_the_literal_value():
    ch = parse("aeron:udp?endpoint=localhost:40123")
    assert ch.remote_data == ("127.0.0.1", 40123)               # IPv4 preferred, as the C resolver
    assert ch.canonical_form == "UDP-0.0.0.0:0-localhost:40123"


@pytest.mark.parametrize("sub", [False, True])
def test_multicast_data_and_control_groups(sub):
    ch = parse("aeron:udp?endpoint=224.0.1.1:40456|interface=127.0.0.1|ttl=4", sub)
    assert ch.is_multicast and ch.has_group_semantics
    assert ch.remote_data == ("224.0.1.1", 40456)
    assert ch.remote_control == ("224.0.1.2", 40456)            # control group = data group + 1
    assert ch.interface == ("127.0.0.1", 0)
    assert ch.ttl == 4
    assert ch.canonical_form == "UDP-127.0.0.1:0-224.0.1.1:40456"


def test_multicast_canonical_form_distinguishes_interfaces():
    a = parse("aeron:udp?endpoint=224.0.1.1:40456|interface=127.0.0.1")
    b = parse("aeron:udp?endpoint=224.0.1.1:40456")
    assert b.canonical_form == "UDP-0.0.0.0:0-224.0.1.1:40456"
    assert a.canonical_form != b.canonical_form


@pytest.mark.parametrize("ttl, expected", [("0", 0), ("255", 255), ("1000", 255)])
def test_ttl_is_clamped(ttl, expected):
    assert parse(f"aeron:udp?endpoint=224.0.1.1:40456|ttl={ttl}").ttl == expected


def test_mdc_dynamic_publication_and_its_subscribers():
    pub = parse("aeron:udp?control=127.0.0.1:40457|control-mode=dynamic")
    assert pub.is_dynamic_control_mode and pub.is_multi_destination and pub.has_group_semantics
    assert pub.local_control == ("127.0.0.1", 40457) and pub.local_data == ("127.0.0.1", 40457)
    assert pub.canonical_form == "UDP-127.0.0.1:40457-0.0.0.0:0"
    sub = parse("aeron:udp?endpoint=127.0.0.1:40458|control=127.0.0.1:40457", sub=True)
    assert sub.has_explicit_control and not sub.is_multi_destination
    assert sub.remote_control == ("127.0.0.1", 40457)           # where its status messages go
    assert sub.local_data == ("127.0.0.1", 40458)
    assert sub.canonical_form == "UDP-127.0.0.1:40457-127.0.0.1:40458"


def test_manual_mdc_needs_no_address_and_is_unique():
    a = parse("aeron:udp?control-mode=manual")
    b = parse("aeron:udp?control-mode=manual")
    assert a.is_manual_control_mode and a.has_group_semantics
    assert a.canonical_form.startswith("UDP-0.0.0.0:0-0.0.0.0:0-")
    assert a.canonical_form != b.canonical_form


def test_wildcard_ports_make_the_form_unique_or_tagged():
    a = parse("aeron:udp?endpoint=127.0.0.1:0", sub=True)
    b = parse("aeron:udp?endpoint=127.0.0.1:0", sub=True)
    assert a.canonical_form.startswith("UDP-0.0.0.0:0-127.0.0.1:0-") and a.canonical_form != b.canonical_form
    tagged = parse("aeron:udp?endpoint=127.0.0.1:0|tags=5", sub=True)
    assert tagged.canonical_form == "UDP-0.0.0.0:0-127.0.0.1:0#5" and tagged.tag == 5
    wildcard_control = parse("aeron:udp?endpoint=127.0.0.1:9|control=127.0.0.1:0", sub=True)
    assert wildcard_control.canonical_form.startswith("UDP-127.0.0.1:0-127.0.0.1:9-")


def test_ipv6():
    ch = parse("aeron:udp?endpoint=[::1]:40123", sub=True)
    assert ch.family == socket.AF_INET6 and ch.remote_data[:2] == ("::1", 40123)
    assert ch.canonical_form == "UDP-[::]:0-[::1]:40123"
    assert format_address(ch.remote_data) == "[::1]:40123"
    assert format_address(("10.0.0.1", 5)) == "10.0.0.1:5"


@pytest.mark.parametrize("channel, part", [
    ("aeron:ipc", "ipc"),
    ("aeron:udp?alias=x", "endpoint"),                                    # nothing to send to or bind
    ("aeron:udp?endpoint=127.0.0.1", "endpoint=127.0.0.1"),                # no port
    ("aeron:udp?endpoint=127.0.0.1:x", "endpoint=127.0.0.1:x"),
    ("aeron:udp?endpoint=127.0.0.1:70000", "endpoint=127.0.0.1:70000"),
    ("aeron:udp?endpoint=[::1:5", "endpoint=[::1:5"),
    ("aeron:udp?endpoint=[::1]x5", "endpoint=[::1]x5"),
    ("aeron:udp?endpoint=no-such-host.invalid:5", "endpoint=no-such-host.invalid:5"),
    ("aeron:udp?endpoint=224.0.1.2:5", "endpoint=224.0.1.2:5"),           # even multicast data address
    ("aeron:udp?control-mode=dynamic", "control-mode"),                   # dynamic needs control
    ("aeron:udp?endpoint=127.0.0.1:5|control-mode=sideways", "control-mode=sideways"),
    ("aeron:udp?endpoint=224.0.1.1:5|ttl=-1", "ttl=-1"),
    ("aeron:udp?endpoint=224.0.1.1:5|ttl=x", "ttl=x"),
    ("aeron:udp?endpoint=224.0.1.1:5|interface={eth0}", "interface={eth0}"),
])
def test_invalid_channels_name_the_part(channel, part):
    with pytest.raises(InvalidChannelError) as info:
        parse(channel)
    assert part in str(info.value)
