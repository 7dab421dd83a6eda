# SPDX-License-Identifier: Apache-2.0
"""Bound addresses read back through the driver's local-sockaddr counters (type 14): the counter scan on its
own, ``ChannelUri.replace_endpoint_wildcard_port``, and ``Subscription.local_socket_addresses`` /
``resolved_endpoint`` / ``try_resolve_channel_endpoint_port`` and ``Publication.local_socket_addresses`` on our
embedded driver, a wildcard port resolved and used."""
from __future__ import annotations

import socket

import pytest

from aeron._core import counters as ctr
from aeron._core.atomic_buffer import AtomicBuffer
from aeron.common.channel_uri import ChannelUri
from aeron.client.local_socket_address_status import find_address, find_addresses
from aeron.common.errors import InvalidArgumentError
from tests.client.conftest import receive, wait_for
from tests.support import free_port

pytestmark = pytest.mark.timeout(60)

ACTIVE = ctr.CHANNEL_ENDPOINT_STATUS_ACTIVE


def sockaddr_counter(manager, status_id: int, address: str, value: int = ACTIVE) -> int:
    counter_id = manager.allocate(f"rcv-local-sockaddr: {status_id} {address}",
                                  ctr.DRIVER_LOCAL_SOCKET_ADDRESS_STATUS_TYPE_ID,
                                  ctr.local_sockaddr_key_encode(status_id, address))
    manager.set_counter_value(counter_id, value)
    return counter_id


def test_the_scan_takes_active_counters_of_the_channel_only():
    manager = ctr.CountersManager(AtomicBuffer(bytearray(64 * ctr.METADATA_LENGTH)),
                                  AtomicBuffer(bytearray(64 * ctr.COUNTER_LENGTH)))
    status = manager.allocate("rcv-channel: x", ctr.DRIVER_RECEIVE_CHANNEL_STATUS_TYPE_ID)
    other = manager.allocate("rcv-channel: y", ctr.DRIVER_RECEIVE_CHANNEL_STATUS_TYPE_ID)
    assert find_addresses(manager, ACTIVE, status) == [] and find_address(manager, ACTIVE, status) is None
    sockaddr_counter(manager, other, "127.0.0.1:9000")                          # another channel's socket
    manager.allocate("not a sockaddr", 0, ctr.local_sockaddr_key_encode(status, "127.0.0.1:1"))   # wrong type
    sockaddr_counter(manager, status, "127.0.0.1:9001", value=ctr.CHANNEL_ENDPOINT_STATUS_CLOSING)
    first = sockaddr_counter(manager, status, "127.0.0.1:9002")
    sockaddr_counter(manager, status, "")                                       # bound, address not known
    sockaddr_counter(manager, status, "[::1]:9003")
    assert find_addresses(manager, ACTIVE, status) == ["127.0.0.1:9002", "[::1]:9003"]
    assert find_address(manager, ACTIVE, status) == "127.0.0.1:9002"
    assert find_addresses(manager, ctr.CHANNEL_ENDPOINT_STATUS_INITIALIZING, status) == []
    assert find_address(manager, ctr.CHANNEL_ENDPOINT_STATUS_ERRORED, status) is None
    manager.free(first)                                                         # a freed counter is skipped
    assert find_addresses(manager, ACTIVE, status) == ["[::1]:9003"]
    assert find_addresses(manager, ACTIVE, -1) == []                            # IPC: no status counter


def test_the_first_counter_of_the_channel_decides_the_resolved_endpoint():
    # Aeron's findAddress stops at the first ACTIVE counter of the channel, even with its address still empty.
    manager = ctr.CountersManager(AtomicBuffer(bytearray(8 * ctr.METADATA_LENGTH)),
                                  AtomicBuffer(bytearray(8 * ctr.COUNTER_LENGTH)))
    status = manager.allocate("snd-channel: x", ctr.DRIVER_SEND_CHANNEL_STATUS_TYPE_ID)
    sockaddr_counter(manager, status, "")
    sockaddr_counter(manager, status, "127.0.0.1:9004")
    assert find_address(manager, ACTIVE, status) is None
    assert find_addresses(manager, ACTIVE, status) == ["127.0.0.1:9004"]


@pytest.mark.parametrize("channel, resolved, expected", [
    ("aeron:udp?endpoint=localhost:0", "127.0.0.1:40123", "aeron:udp?endpoint=localhost:40123"),
    ("aeron:udp?endpoint=127.0.0.1:0|term-length=64k", "127.0.0.1:7", "aeron:udp?endpoint=127.0.0.1:7|term-length=64k"),
    ("aeron:udp?endpoint=[::1]:0", "[::1]:40124", "aeron:udp?endpoint=[::1]:40124"),
    ("aeron:udp?endpoint=127.0.0.1:5", "127.0.0.1:6", "aeron:udp?endpoint=127.0.0.1:5"),     # not a wildcard
    ("aeron:udp?control=127.0.0.1:5", "127.0.0.1:6", "aeron:udp?endpoint=127.0.0.1:6|control=127.0.0.1:5"),
])
def test_replace_endpoint_wildcard_port(channel, resolved, expected):
    uri = ChannelUri.parse(channel)
    uri.replace_endpoint_wildcard_port(resolved)
    assert str(uri) == expected


@pytest.mark.parametrize("resolved", ["127.0.0.1", "127.0.0.1:0"])
def test_replace_endpoint_wildcard_port_needs_a_real_port(resolved):
    with pytest.raises(InvalidArgumentError):
        ChannelUri.parse("aeron:udp?endpoint=localhost:0").replace_endpoint_wildcard_port(resolved)


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_a_wildcard_subscription_port_resolves_to_the_bound_one(client, host):
    channel = f"aeron:udp?endpoint={host}:0|term-length=64k"
    sub = client.add_subscription(channel, 1001)
    addresses = sub.local_socket_addresses()
    assert len(addresses) == 1
    bound_host, port = addresses[0].rsplit(":", 1)
    assert bound_host == "127.0.0.1" and int(port) > 0
    assert sub.resolved_endpoint == addresses[0]
    resolved = sub.try_resolve_channel_endpoint_port()
    assert resolved == f"aeron:udp?endpoint={host}:{port}|term-length=64k"
    assert sub.try_resolve_channel_endpoint_port() is resolved               # kept, as upstream
    # the driver's socket really is bound there: a publication to the resolved channel reaches the subscription
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        with pytest.raises(OSError):
            probe.bind(("127.0.0.1", int(port)))
    pub = client.add_publication(resolved, 1001)
    wait_for(lambda: pub.is_connected and sub.image_count == 1, what="connected through the resolved port")
    wait_for(lambda: pub.offer(b"through the resolved port") > 0)
    assert receive(sub, 1) == [b"through the resolved port"]
    snd = pub.local_socket_addresses()
    assert len(snd) == 1 and int(snd[0].rsplit(":", 1)[1]) > 0
    assert sub.images[0].source_identity.rsplit(":", 1)[1] == snd[0].rsplit(":", 1)[1]   # the sender's port
    pub.close()
    sub.close()
    assert sub.local_socket_addresses() == []                                 # closed: nothing to report
    records = client.counters_reader.counters
    wait_for(lambda: not [r for r in records() if r.type_id == ctr.DRIVER_LOCAL_SOCKET_ADDRESS_STATUS_TYPE_ID],
             timeout_s=10, what="local-sockaddr counters freed with their endpoints")


def test_nothing_to_resolve_gives_the_channel_back(client):
    port = free_port()
    fixed = f"aeron:udp?endpoint=127.0.0.1:{port}"
    sub = client.add_subscription(fixed, 1001)
    assert sub.try_resolve_channel_endpoint_port() == fixed
    assert sub.resolved_endpoint == f"127.0.0.1:{port}"
    ipc = client.add_subscription("aeron:ipc", 1001)
    assert ipc.try_resolve_channel_endpoint_port() == "aeron:ipc"
    assert ipc.resolved_endpoint is None and ipc.local_socket_addresses() == []
    pub = client.add_publication("aeron:ipc", 1001)
    assert pub.local_socket_addresses() == []


def test_a_dynamic_control_wildcard_publication_is_reached_through_its_resolved_port(client):
    pub = client.add_publication("aeron:udp?control=127.0.0.1:0|control-mode=dynamic|term-length=64k", 1001)
    (control,) = pub.local_socket_addresses()
    assert control.startswith("127.0.0.1:") and not control.endswith(":0")
    sub = client.add_subscription(f"aeron:udp?endpoint=127.0.0.1:{free_port()}|control={control}", 1001)
    wait_for(lambda: pub.is_connected and sub.image_count == 1, what="subscriber joined through the control port")
    wait_for(lambda: pub.offer(b"mdc") > 0)
    assert receive(sub, 1) == [b"mdc"]
