# SPDX-License-Identifier: Apache-2.0
"""Our driver's name resolver gossiping with the official `aeronmd`'s: each becomes the other's neighbour and
caches the other's name, and channels that name the other driver carry data both ways. Needs AERON_C_BIN."""
from __future__ import annotations

import pytest

from aeron import Aeron, Context, MediaDriver
from aeron._core import counters as ctr
from tests import procs
from tests.driver.udp_helpers import MS, driver_context
from tests.support import free_port, wait_for

pytestmark = [pytest.mark.interop, pytest.mark.timeout(90)]


def _value(client, type_id: int) -> int | None:
    for record in client.counters_reader.counters():
        if record.type_id == type_id:
            return record.value
    return None


def _receive(sub, count: int) -> list[bytes]:
    received: list[bytes] = []
    wait_for(lambda: sub.poll(lambda buf, off, length, hdr: received.append(buf.get_bytes(off, length)), 10) or
             len(received) >= count, what="messages")
    return received


def test_our_resolver_and_aeronmds_know_each_other_and_carry_channels_by_name(official, shm_dir):
    port_ours, port_c, to_ours, to_c = free_port(), free_port(), free_port(), free_port()
    ours = MediaDriver.launch_embedded(driver_context(
        resolver_name="ours", resolver_interface=f"127.0.0.1:{port_ours}",
        resolver_self_resolution_interval_ns=100 * MS, resolver_neighbor_resolution_interval_ns=100 * MS))
    aeronmd = None
    try:
        aeronmd_dir = str(shm_dir / "aeronmd")
        aeronmd = procs.start_aeronmd(
            official("aeronmd"), aeronmd_dir, AERON_DRIVER_RESOLVER_NAME="theirs",
            AERON_NAME_RESOLVER_SUPPLIER="driver",
            AERON_DRIVER_RESOLVER_INTERFACE=f"127.0.0.2:{port_c}",
            AERON_DRIVER_RESOLVER_BOOTSTRAP_NEIGHBOR=f"127.0.0.1:{port_ours}",
            AERON_DRIVER_RESOLVER_SELF_RESOLUTION_INTERVAL="100ms",
            AERON_DRIVER_RESOLVER_NEIGHBOR_RESOLUTION_INTERVAL="100ms")
        with Aeron.connect(Context(ours.aeron_dir)) as on_ours, Aeron.connect(Context(aeronmd_dir)) as on_c:
            for client in (on_ours, on_c):
                wait_for(lambda c=client: _value(c, ctr.NAME_RESOLVER_NEIGHBORS_COUNTER_TYPE_ID) == 1 and
                         _value(c, ctr.NAME_RESOLVER_CACHE_ENTRIES_COUNTER_TYPE_ID) == 1, what="a neighbour")
            wait_for(lambda: _value(on_c, ctr.NAME_RESOLVER_BOOTSTRAP_NEIGHBOR_TYPE_ID) == 1,
                     what="aeronmd's bootstrap neighbour")
            # ours -> aeronmd by its name, and aeronmd -> ours by ours
            sub_c = on_c.add_subscription(f"aeron:udp?endpoint=127.0.0.2:{to_c}", 1001)
            pub_ours = on_ours.add_publication(f"aeron:udp?endpoint=theirs:{to_c}", 1001)
            sub_ours = on_ours.add_subscription(f"aeron:udp?endpoint=127.0.0.1:{to_ours}", 1002)
            pub_c = on_c.add_publication(f"aeron:udp?endpoint=ours:{to_ours}", 1002)
            wait_for(lambda: pub_ours.is_connected and pub_c.is_connected, what="both publications connected")
            wait_for(lambda: pub_ours.offer(b"to aeronmd by name") > 0)
            wait_for(lambda: pub_c.offer(b"to ours by name") > 0)
            assert _receive(sub_c, 1) == [b"to aeronmd by name"]
            assert _receive(sub_ours, 1) == [b"to ours by name"]
    finally:
        procs.stop(aeronmd)
        ours.close()
