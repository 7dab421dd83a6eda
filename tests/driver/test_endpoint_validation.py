# SPDX-License-Identifier: Apache-2.0
"""What the driver refuses when a UDP channel disagrees with the endpoint it would share, or names what cannot
work, as the C driver refuses it (the checks behind Aeron's ChannelValidationTest, PubAndSubTest's tag tests and
SessionSpecificPublicationTest): socket buffers, MTU against SO_SNDBUF, receiver window against SO_RCVBUF,
wildcard ports, manual MDC destinations, tags with other addresses or control modes, joining a shared
publication with another session id or start position. Raw commands, so the client's own checks stay out of
the way; every refused command is answered with ON_ERROR."""
from __future__ import annotations

import pytest

from aeron.common import command as cmd
from aeron.common.errors import ErrorCode
from tests.driver.test_driver_conductor import (  # noqa: F401 - its raw client fixture
    GOLDEN_SIZES, add_publication, add_subscription, client)
from tests.support import free_port

pytestmark = pytest.mark.driver(**GOLDEN_SIZES, socket_rcvbuf=131072, socket_sndbuf=0)


def ok(c, corr):
    type_id, response = c.await_correlated(corr)
    assert type_id != cmd.ON_ERROR, response
    return response


def refused(c, corr, *texts, code=ErrorCode.GENERIC_ERROR):
    type_id, err = c.await_correlated(corr)
    assert type_id == cmd.ON_ERROR, err
    assert err.error_code == code, err
    for text in texts:
        assert text in err.error_message, err
    return err


def add_destination(c, registration_id, channel):
    corr = c.next_id()
    c.send(cmd.ADD_DESTINATION, cmd.DestinationCommand(c.client_id, corr, registration_id, channel,
                                                       msg_type_id=cmd.ADD_DESTINATION).encode())
    return corr


@pytest.mark.parametrize("add", [add_publication, add_subscription])
@pytest.mark.parametrize("key", ["so-sndbuf", "so-rcvbuf"])
def test_a_channel_sharing_an_endpoint_may_not_change_its_socket_buffers(client, add, key):
    # a window that fits either buffer: a subscription's window is checked against its buffer first
    base = f"aeron:udp?endpoint=127.0.0.1:{free_port()}|rcv-wnd=32k"
    ok(client, add(client, channel=f"{base}|{key}=131072"))
    refused(client, add(client, channel=f"{base}|{key}=65536"), f"{key}=65536 does not match existing value of 131072")
    ok(client, add(client, channel=f"{base}|{key}=131072"))


def test_a_buffer_the_endpoint_left_to_the_os_is_named_so(client):
    base = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
    ok(client, add_publication(client, channel=base))              # so-sndbuf 0 in context and channel
    refused(client, add_publication(client, channel=f"{base}|so-sndbuf=65536"),
            "so-sndbuf=65536 does not match existing value of OS default")


def test_the_mtu_must_fit_the_send_buffer(client):
    refused(client, add_publication(client, channel=f"aeron:udp?endpoint=127.0.0.1:{free_port()}|mtu=1056|"
                                                    f"so-sndbuf=1024"),
            "MTU greater than SO_SNDBUF for channel: mtu=1056 so-sndbuf=1024")


def test_the_receiver_window_must_fit_the_receive_buffer(client):
    channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
    refused(client, add_subscription(client, channel=f"{channel}|rcv-wnd=1056|so-rcvbuf=1024"),
            "Initial window greater than SO_RCVBUF for channel: rcv-wnd=1056 so-rcvbuf=1024")
    ok(client, add_subscription(client, channel=channel))
    refused(client, add_subscription(client, channel=f"{channel}|rcv-wnd=256k"),
            "rcv-wnd=262144 so-rcvbuf=131072 existingChannel=")


def test_wildcard_ports_where_they_cannot_work(client):
    refused(client, add_publication(client, channel="aeron:udp?endpoint=127.0.0.1:0"),
            "endpoint has port=0 for publication")
    refused(client, add_subscription(client, channel=f"aeron:udp?control=127.0.0.1:0|endpoint=127.0.0.1:{free_port()}"),
            "control has port=0 for subscription")


@pytest.mark.parametrize("key", ["mtu", "rcv-wnd", "so-rcvbuf", "so-sndbuf"])
def test_manual_mdc_destinations_take_no_socket_or_window_parameters(client, key):
    publication = add_publication(client, channel="aeron:udp?control-mode=manual")
    ok(client, publication)
    refused(client, add_destination(client, publication, f"aeron:udp?endpoint=127.0.0.1:{free_port()}|{key}=4096"),
            f"destinations must not contain the key: {key}", code=ErrorCode.INVALID_CHANNEL)


def test_manual_mdc_destinations_need_a_real_endpoint_and_no_spy(client):
    publication = add_publication(client, channel="aeron:udp?control-mode=manual")
    ok(client, publication)
    refused(client, add_destination(client, publication, "aeron:udp?endpoint=127.0.0.1:0"),
            "endpoint has port=0 for send destination")
    refused(client, add_destination(client, publication, f"aeron-spy:aeron:udp?endpoint=127.0.0.1:{free_port()}"),
            "spies are invalid as send destinations", code=ErrorCode.INVALID_CHANNEL)
    refused(client, add_destination(client, publication, "aeron:udp?control-mode=manual"),
            "incorrect URI format for destination")
    ok(client, add_destination(client, publication, f"aeron:udp?endpoint=127.0.0.1:{free_port()}"))


def test_a_tag_alone_names_the_tagged_send_endpoint(client):
    control = free_port()
    first = ok(client, add_publication(client, stream_id=7, channel=f"aeron:udp?control-mode=dynamic|"
                                                                    f"control=127.0.0.1:{control}|tags=200"))
    by_tag = ok(client, add_publication(client, stream_id=7, channel="aeron:udp?tags=200"))
    assert by_tag.registration_id == first.registration_id and by_tag.session_id == first.session_id
    refused(client, add_publication(client, stream_id=8, channel="aeron:udp?tags=201"),
            "URI must have explicit control, endpoint, or be manual control-mode")


@pytest.mark.parametrize("first, second, text", [
    ("control={c}|endpoint={e}|tags=200", "control-mode=dynamic|control={c}|tags=200", "mismatched control-mode"),
    ("control-mode=dynamic|control={c}|tags=200", "control={c}|endpoint={e}|tags=200",
     "mismatched endpoint or control"),
    ("control-mode=dynamic|control={c}|tags=200", "control-mode=manual|control={c}|tags=200",
     "mismatched control-mode"),
    ("endpoint={e}|tags=201", "endpoint={o}|tags=201", "mismatched endpoint or control"),
])
def test_a_tag_with_other_addresses_or_control_mode_is_refused(client, first, second, text):
    ports = dict(c=f"127.0.0.1:{free_port()}", e=f"127.0.0.1:{free_port()}", o=f"127.0.0.1:{free_port()}")
    ok(client, add_publication(client, channel="aeron:udp?" + first.format(**ports)))
    refused(client, add_publication(client, channel="aeron:udp?" + second.format(**ports)), "matching tag", text)


def test_a_subscription_tag_with_another_endpoint_or_buffer_is_refused(client):
    control = free_port()
    base = f"aeron:udp?endpoint=127.0.0.1:0|control=127.0.0.1:{control}|rcv-wnd=32k"
    ok(client, add_subscription(client, channel=f"{base}|so-rcvbuf=128k|tags=1001"))
    refused(client, add_subscription(client, channel=f"aeron:udp?endpoint=127.0.0.2:0|control=127.0.0.1:{control}|"
                                                     f"tags=1001"), "mismatched endpoint or control")
    refused(client, add_subscription(client, channel=f"{base}|so-rcvbuf=64k|tags=1001"),
            "so-rcvbuf=65536 does not match existing value of 131072")
    ok(client, add_subscription(client, channel="aeron:udp?tags=1001"))


def test_a_shared_publication_is_joined_only_with_its_own_session_and_start(client):
    channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
    first = ok(client, add_publication(client, channel=f"{channel}|session-id=5"))
    refused(client, add_publication(client, channel=f"{channel}|session-id=6"),
            "existing publication has different 'session-id': existing=5 requested=6")
    assert ok(client, add_publication(client, channel=f"{channel}|session-id=5")).registration_id == \
        first.registration_id
    positioned = "aeron:ipc?init-term-id=10|term-id=12|term-offset=1024|term-length=64k"
    ipc = ok(client, add_publication(client, channel=positioned))
    assert ok(client, add_publication(client, channel=positioned)).registration_id == ipc.registration_id
    refused(client, add_publication(client, channel=positioned.replace("term-offset=1024", "term-offset=2048")),
            "existing publication has different 'term-offset': existing=1024 requested=2048")
    refused(client, add_publication(client, channel=positioned.replace("init-term-id=10", "init-term-id=11")),
            "existing publication has different 'init-term-id': existing=10 requested=11")


def test_a_bind_that_fails_is_answered_as_a_generic_error_not_a_channel_endpoint_error(client):
    """An address in use answers the command that asked for it with GENERIC_ERROR (the C driver's code for an OS
    errno): a client takes CHANNEL_ENDPOINT_ERROR as an endpoint's later failure and would keep waiting."""
    channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
    ok(client, add_subscription(client, channel=channel))
    mds = add_subscription(client, channel="aeron:udp?control-mode=manual")
    ok(client, mds)
    corr = client.next_id()
    client.send(cmd.ADD_RCV_DESTINATION, cmd.DestinationCommand(client.client_id, corr, mds, channel,
                                                                msg_type_id=cmd.ADD_RCV_DESTINATION).encode())
    refused(client, corr, "Address already in use")
