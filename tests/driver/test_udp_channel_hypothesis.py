# SPDX-License-Identifier: Apache-2.0
"""UdpChannel under hostile channel strings: whatever endpoint, control, interface, ttl, control-mode or tags a
client sends, resolving raises InvalidChannelError naming the part or succeeds (the driver answers INVALID_CHANNEL
instead of a GENERIC_ERROR from an exception it did not expect). Only address literals resolve here: the name
service is never asked."""
from __future__ import annotations

import socket
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from aeron.common.errors import InvalidChannelError
from aeron.driver import udp_channel
from tests.common.test_channel_uri_hypothesis import hostile_value

SETTINGS = settings(max_examples=300, deadline=None)
_getaddrinfo = socket.getaddrinfo


def numeric_only(host, port, family=0, type=0, proto=0, flags=0):
    # a host that is not an address literal is an unknown host, as for a name service that knows nothing
    return _getaddrinfo(host, port, family, type, proto, flags | socket.AI_NUMERICHOST)


HOSTS = st.one_of(st.sampled_from(["127.0.0.1", "0.0.0.0", "224.0.1.1", "224.0.1.2", "[::1]", "[ff02::3]", "*", "",
                                   "[::1", "1.2.3", "127.0.0.1\x00", "[\x00]", "\udcff"]),
                  st.text(max_size=20))
PORTS = st.one_of(st.integers(-5, 70000).map(str), st.sampled_from(["", "0", "+1", " 1", "1_0", "\u0661", "x"]),
                  st.text(max_size=6))
ADDRESSES = st.builds(lambda host, separator, port: host + separator + port, HOSTS, st.sampled_from([":", ""]), PORTS)


@SETTINGS
@given(st.dictionaries(st.sampled_from(["endpoint", "control", "interface"]), ADDRESSES, max_size=3),
       st.dictionaries(st.sampled_from(["control-mode", "ttl", "tags"]), hostile_value(), max_size=2),
       st.booleans())
def test_hostile_addresses_raise_only_invalid_channel(addresses, others, is_subscription):
    params = {key: value for key, value in {**addresses, **others}.items() if value and "|" not in value}
    text = "aeron:udp?" + "|".join(f"{key}={value}" for key, value in params.items()) if params else "aeron:udp?a=b"
    with mock.patch.object(udp_channel.socket, "getaddrinfo", numeric_only):
        try:
            channel = udp_channel.UdpChannel.parse(text, is_subscription=is_subscription)
        except InvalidChannelError as error:
            assert error.channel == text
            return
    assert channel.canonical_form.startswith("UDP-")
