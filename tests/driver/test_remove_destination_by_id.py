# SPDX-License-Identifier: Apache-2.0
"""REMOVE_DESTINATION_BY_ID: a manual multi-destination-cast publication's destination removed by the registration id
add_destination returned (Publication.remove_destination(int), async_remove_destination(int)); unknown publications
and non-manual channels are refused. tests/interop/test_remove_destination_by_id_interop.py runs the same tests
with the publication on `aeronmd`."""
from __future__ import annotations


import pytest

from aeron.common.errors import ErrorCode, RegistrationError
from tests.driver.udp_helpers import UDP_DRIVER, Collector, counter, free_port, hosts, numbered, wait_for

pytestmark = [pytest.mark.timeout(60), UDP_DRIVER]


@pytest.fixture
def publisher(client):
    """The ``client`` fixture: on our driver here, on `aeronmd` in tests/interop."""
    return client


@pytest.fixture
def subscribers(shm_dir):
    with hosts(shm_dir, "a", "b") as clients:
        yield clients


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_a_destination_removed_by_id_gets_nothing_more(publisher, subscribers, use_async):
    ports = [free_port(), free_port()]
    subs = [c.add_subscription(f"aeron:udp?endpoint=127.0.0.1:{port}", 1001) for c, port in zip(subscribers, ports)]
    pub = publisher.add_exclusive_publication("aeron:udp?control-mode=manual", 1001)
    ids = [pub.add_destination(f"aeron:udp?endpoint=127.0.0.1:{port}") for port in ports]
    assert len(set(ids)) == 2
    wait_for(lambda: pub.is_connected and all(s.image_count == 1 for s in subs), timeout_s=15)
    if use_async:
        corr = pub.async_remove_destination(ids[0])
        wait_for(lambda: not publisher.is_command_active(corr))
    else:
        pub.remove_destination(ids[0])
    wait_for(lambda: counter(publisher, "mdc-num-dest:").value == 1, what="the sender without the destination")
    hwm = counter(subscribers[0], "rcv-hwm:").value
    got = Collector()
    for n in range(50):
        while pub.offer(numbered(n, 64)) < 0:
            subs[1].poll(got, 64)
        subs[1].poll(got, 64)
    wait_for(lambda: len(got.messages) == 50, invoke=lambda: subs[1].poll(got, 64))
    assert counter(subscribers[0], "rcv-hwm:").value == hwm


def test_removal_by_id_refusals(publisher):
    plain = publisher.add_exclusive_publication(f"aeron:udp?endpoint=127.0.0.1:{free_port()}", 1001)
    with pytest.raises(RegistrationError) as info:
        plain.remove_destination(12345)
    assert info.value.error_code == ErrorCode.GENERIC_ERROR and "manual control" in str(info.value)
    ipc = publisher.add_publication("aeron:ipc", 1001)
    with pytest.raises(RegistrationError) as info:
        ipc.remove_destination(12345)
    assert info.value.error_code == ErrorCode.UNKNOWN_PUBLICATION
