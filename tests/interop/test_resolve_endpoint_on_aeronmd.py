# SPDX-License-Identifier: Apache-2.0
"""Our client on the official `aeronmd`: wildcard ports (``endpoint=127.0.0.1:0``, ``control=127.0.0.1:0``)
resolved from aeronmd's local-sockaddr counters, and the resolved ports used by UDP publications and
subscriptions. Needs AERON_C_BIN."""
from __future__ import annotations

import pytest

from aeron._core import counters as ctr
from tests.client.conftest import receive, wait_for
from tests.support import free_port

pytestmark = [pytest.mark.interop, pytest.mark.timeout(60)]


def test_a_wildcard_subscription_resolves_to_the_port_aeronmd_bound(client):
    sub = client.add_subscription("aeron:udp?endpoint=127.0.0.1:0", 1001)
    wait_for(lambda: sub.resolved_endpoint is not None, what="aeronmd's rcv-local-sockaddr counter")
    host, port = sub.resolved_endpoint.rsplit(":", 1)
    assert host == "127.0.0.1" and int(port) > 0
    assert sub.local_socket_addresses() == [sub.resolved_endpoint]
    # the counter as aeronmd wrote it: label, key (status counter id, address) and value ACTIVE
    (record,) = [r for r in client.counters_reader.counters()
                 if r.type_id == ctr.DRIVER_LOCAL_SOCKET_ADDRESS_STATUS_TYPE_ID]
    assert record.label == f"rcv-local-sockaddr: {sub.channel_status_id} 127.0.0.1:{port}"
    assert ctr.local_sockaddr_key_decode(record.key) == (sub.channel_status_id, f"127.0.0.1:{port}")
    assert record.value == ctr.CHANNEL_ENDPOINT_STATUS_ACTIVE
    resolved = sub.try_resolve_channel_endpoint_port()
    assert resolved == f"aeron:udp?endpoint=127.0.0.1:{port}"
    pub = client.add_publication(resolved, 1001)
    wait_for(lambda: pub.is_connected and sub.image_count == 1, what="publication connected through the port")
    wait_for(lambda: pub.offer(b"to the resolved port") > 0)
    assert receive(sub, 1) == [b"to the resolved port"]
    (snd,) = pub.local_socket_addresses()
    assert sub.images[0].source_identity.rsplit(":", 1)[1] == snd.rsplit(":", 1)[1]   # the sender's bound port


def test_a_wildcard_control_port_of_a_publication_resolves_and_takes_subscribers(client):
    pub = client.add_publication("aeron:udp?control=127.0.0.1:0|control-mode=dynamic", 1001)
    wait_for(lambda: pub.local_socket_addresses() != [], what="aeronmd's snd-local-sockaddr counter")
    (control,) = pub.local_socket_addresses()
    assert control.startswith("127.0.0.1:") and not control.endswith(":0")
    sub = client.add_subscription(f"aeron:udp?endpoint=127.0.0.1:{free_port()}|control={control}", 1001)
    wait_for(lambda: pub.is_connected and sub.image_count == 1, what="subscriber joined through the control port")
    wait_for(lambda: pub.offer(b"mdc") > 0)
    assert receive(sub, 1) == [b"mdc"]
