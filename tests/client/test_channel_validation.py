# SPDX-License-Identifier: Apache-2.0
"""One error type for a bad channel in every layer: InvalidChannelError (a ValueError) naming the parameter and
its value, raised by the client for publications and subscriptions alike before the driver sees the channel,
and (as ChannelRejectedError, also a RegistrationError) for what only the driver can judge, whose message carries
no driver source file and line."""
from __future__ import annotations

import pytest

from aeron.common.channel_uri import ChannelUri
from aeron.client.channel_validation import validate_channel
from aeron.client.client_conductor import driver_error_text
from aeron.common.errors import ChannelRejectedError, ErrorCode, InvalidChannelError, RegistrationError


@pytest.mark.parametrize("channel, part", [
    ("aeron:ipc?mtu=100", "mtu=100"),
    ("aeron:ipc?mtu=abc", "mtu=abc"),
    ("aeron:ipc?mtu=70000", "mtu=70000"),
    ("aeron:ipc?term-length=1000", "term-length=1000"),
    ("aeron:ipc?term-length=3m", "term-length=3m"),
    ("aeron:ipc?init-term-id=1|term-id=0|term-offset=0", "init-term-id=1|term-id=0"),
    ("aeron:ipc?init-term-id=1|term-id=1|term-offset=33", "term-offset=33"),
    ("aeron:ipc?init-term-id=1|term-id=1", "init-term-id=1|term-id=1"),
    ("aeron:ipc?session-id=x", "session-id=x"),
    ("aeron:ipc?session-id=3000000000", "session-id=3000000000"),
    ("aeron:ipc?linger=5 s", "linger=5 s"),
    ("aeron:ipc?linger=forever", "linger=forever"),
    ("aeron:ipc?sparse=yes", "sparse=yes"),
    ("aeron:ipc?eos=1", "eos=1"),
    ("aeron:ipc?tether=maybe", "tether=maybe"),
    ("aeron:ipc?rejoin=no", "rejoin=no"),
    ("aeron:ipc?pub-wnd=0", "pub-wnd=0"),
    ("aeron:ipc?term-length=64k|pub-wnd=64k", "pub-wnd=64k"),
    ("aeron:ipc?mtu=4096|pub-wnd=1024", "pub-wnd=1024"),
    ("aeron:ipc?stream-id=one", "stream-id=one"),
    ("aeron:ipc?max-resend=0", "max-resend=0"),
    ("aeron:ipc?response-correlation-id=-5", "response-correlation-id=-5"),
    ("aeron:udp?endpoint=localhost", "endpoint=localhost"),
    ("aeron:udp?endpoint=localhost:99999", "endpoint=localhost:99999"),
    ("aeron:udp?endpoint=:40123", "endpoint=:40123"),
    ("aeron:udp?endpoint=[::1]40123", "endpoint=[::1]40123"),
    ("aeron:udp?endpoint=localhost:40123|control=localhost:x", "control=localhost:x"),
    ("aeron:udp?endpoint=localhost:40123|ttl=-1", "ttl=-1"),
    ("aeron:udp?endpoint=localhost:40123|ttl=300", "ttl=300"),
    ("aeron:udp?endpoint=localhost:40123|rcv-wnd=lots", "rcv-wnd=lots"),
    ("aeron:udp?endpoint=localhost:40123|so-rcvbuf=64k|rcv-wnd=128k", "rcv-wnd=128k"),
    ("aeron:udp?endpoint=localhost:40123|so-sndbuf=-1", "so-sndbuf=-1"),
    ("aeron:udp?endpoint=localhost:40123|nak-delay=soon", "nak-delay=soon"),
    ("aeron:udp?endpoint=localhost:40123|cc=vegas", "cc=vegas"),
    ("aeron:udp?endpoint=localhost:40123|group=sometimes", "group=sometimes"),
    ("aeron:udp?endpoint=localhost:40123|gtag=x", "gtag=x"),
    ("aeron:udp?endpoint=localhost:40123|fc=fastest", "fc=fastest"),
    ("aeron:udp?endpoint=localhost:40123|fc=min,g:x", "fc=min,g:x"),
    ("aeron:udp?endpoint=localhost:40123|fc=max,t:soon", "fc=max,t:soon"),
    ("aeron:udp?endpoint=localhost:40123|fc=max,z:1", "fc=max,z:1"),
    ("aeron:udp?control=localhost:40123|control-mode=sometimes", "control-mode=sometimes"),
    ("aeron:udp?endpoint=localhost:40123|control-mode=dynamic", "control-mode=dynamic"),
    ("aeron:udp?endpoint=localhost:40123|media-rcv-ts-offset=here", "media-rcv-ts-offset=here"),
    ("aeron:udp?endpoint=localhost:40123|untethered-resting-timeout=-1s", "untethered-resting-timeout=-1s"),
])
def test_bad_values_raise_invalid_channel_error_naming_parameter_and_value(channel, part):
    with pytest.raises(InvalidChannelError) as info:
        validate_channel(channel)
    error = info.value
    assert isinstance(error, ValueError) and not isinstance(error, RegistrationError)
    assert error.error_code == ErrorCode.INVALID_CHANNEL
    assert error.channel == channel and error.part == part
    assert repr(part) in str(error)
    assert ".py" not in str(error)


@pytest.mark.parametrize("channel", [
    "aeron:ipc",
    "aeron:ipc?term-length=64k|mtu=8k|sparse=true|eos=false|linger=0|pub-wnd=32k|alias=a b",
    "aeron:ipc?init-term-id=-5|term-id=-3|term-offset=1024|term-length=64k",
    "aeron:ipc?session-id=-7|tether=false|rejoin=true|group=infer|ssc=true",
    "aeron:ipc?untethered-window-limit-timeout=5s|untethered-linger-timeout=100ms|untethered-resting-timeout=1us",
    "aeron:ipc?response-correlation-id=prototype|stream-id=9",
    "aeron:udp?endpoint=localhost:40123|mtu=1408|term-length=16m|ttl=16|so-sndbuf=2m|so-rcvbuf=2m|rcv-wnd=1m",
    "aeron:udp?endpoint=[::1]:0|interface=127.0.0.1/24|reliable=false|cc=cubic|nak-delay=1ms",
    "aeron:udp?endpoint=224.0.1.1:40456|fc=tagged,g:123/2,t:5s|gtag=123",
    "aeron:udp?endpoint=224.0.1.1:40456|fc=min,t:200ms,rrwm:4",
    "aeron:udp?control=localhost:40123|control-mode=dynamic|tags=1,2",
    "aeron:udp?control-mode=response|control=localhost:40124",
    "aeron:udp?control-mode=manual|session-id=tag:5",
    "aeron:udp?endpoint=localhost:40123|media-rcv-ts-offset=reserved|channel-rcv-ts-offset=8|ats=false",
    "aeron-spy:aeron:udp?endpoint=localhost:40123",
])
def test_good_channels_pass(channel):
    assert validate_channel(channel) == ChannelUri.parse(channel)


def test_c_driver_error_text_loses_its_source_locations():
    text = ("(-9) unknown host\n"
            "[aeron_driver_conductor_set_error_from_result, aeron_driver_conductor.c:2831] (-9) unknown host\n"
            "[aeron_ip_addr_resolver, aeron_netutil.c:75] Unable to resolve host=(x.invalid)\n"
            "\n"
            "[aeron_driver_conductor_execute_add_network_subscription, aeron_driver_conductor.c:4986] \n")
    assert driver_error_text(text) == "(-9) unknown host; Unable to resolve host=(x.invalid)"
    assert driver_error_text("plain words") == "plain words"
    assert driver_error_text("[not, a location] kept") == "[not, a location] kept"


def test_channel_rejected_error_is_both_kinds():
    error = ChannelRejectedError(ErrorCode.UNKNOWN_HOST, "(-9) unknown host", "aeron:udp?endpoint=x:1", 42)
    assert isinstance(error, InvalidChannelError) and isinstance(error, RegistrationError)
    assert isinstance(error, ValueError)
    assert (error.error_code, error.raw_error_code, error.correlation_id) == (ErrorCode.UNKNOWN_HOST, 9, 42)
    assert error.channel == "aeron:udp?endpoint=x:1"
    assert str(error) == "UNKNOWN_HOST (9): (-9) unknown host (channel 'aeron:udp?endpoint=x:1')"
    unknown = ChannelRejectedError(77, "odd")
    assert unknown.error_code == ErrorCode.UNKNOWN_CODE_VALUE and unknown.raw_error_code == 77


def test_subscriptions_are_checked_like_publications(client):
    for channel, part in (("aeron:ipc?mtu=100", "'mtu=100'"), ("aeron:ipc?term-length=1000", "'term-length=1000'"),
                          ("aeron:ipc?sparse=perhaps", "'sparse=perhaps'"),
                          ("aeron:udp?endpoint=localhost:40123|rcv-wnd=lots", "'rcv-wnd=lots'")):
        for add in (client.add_subscription, client.async_add_subscription, client.add_publication,
                    client.add_exclusive_publication, client.async_add_publication):
            with pytest.raises(InvalidChannelError, match=part):
                add(channel, 5)
    assert client.add_subscription("aeron:ipc?mtu=1408|term-length=64k", 5).stream_id == 5


def test_driver_refusals_name_no_driver_source_location(client):
    with pytest.raises(ChannelRejectedError) as info:
        client.add_subscription("aeron:udp?interface=127.0.0.1", 5)
    text = str(info.value)
    assert "needs an endpoint" in text
    assert ".py:" not in text and "network_conductor" not in text
