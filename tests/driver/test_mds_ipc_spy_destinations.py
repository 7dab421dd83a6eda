# SPDX-License-Identifier: Apache-2.0
"""IPC and spy receive destinations of a multi-destination subscription: aeron:ipc and aeron-spy:aeron:udp?...
destinations bring the matching IPC publications and (spied) network publications in as images of the MDS
subscription, next to what its UDP destinations receive; removing one makes its images unavailable; closing the
subscription takes them all. tests/interop/test_mds_ipc_spy_destinations_interop.py runs the same on `aeronmd`."""
from __future__ import annotations

import pytest

from aeron.common.errors import ErrorCode, RegistrationError
from tests.driver.udp_helpers import UDP_DRIVER, Collector, free_port, offer, wait_for

pytestmark = [pytest.mark.timeout(60), UDP_DRIVER]

MDS = "aeron:udp?control-mode=manual"


@pytest.fixture
def events():
    return {"available": [], "unavailable": []}


@pytest.fixture
def spy_removal_announced():
    """Whether removing a spy destination tells the client its image went with the image's correlation id (ours
    does; aeronmd 1.53 sends 0, its network publications' subscribable has no correlation id, so the client keeps
    the image)."""
    return True


@pytest.fixture
def client_settings(events):
    return dict(available_image_handler=events["available"].append,
                unavailable_image_handler=events["unavailable"].append)


def test_ipc_spy_and_udp_destinations_feed_one_subscription(client, events, spy_removal_announced):
    sub = client.add_subscription(MDS, 1001)
    udp_port = free_port()
    sub.add_destination(f"aeron:udp?endpoint=127.0.0.1:{udp_port}")
    sub.add_destination("aeron:ipc")
    spied_channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
    sub.add_destination(f"aeron-spy:{spied_channel}")
    ipc = client.add_publication("aeron:ipc", 1001)
    spied = client.add_publication(f"{spied_channel}|ssc=true", 1001)      # connected by the spy alone
    udp = client.add_publication(f"aeron:udp?endpoint=127.0.0.1:{udp_port}", 1001)
    wait_for(lambda: sub.image_count == 3 and ipc.is_connected and spied.is_connected and udp.is_connected)
    assert {image.session_id for image in sub.images} == {ipc.session_id, spied.session_id, udp.session_id}
    got = Collector()
    for pub, text in ((ipc, b"ipc"), (spied, b"spy"), (udp, b"udp")):
        offer(pub, text)
    wait_for(lambda: len(got.messages) == 3, invoke=lambda: sub.poll(got, 10))
    assert sorted(got.messages) == [b"ipc", b"spy", b"udp"]
    sub.remove_destination("aeron:ipc")
    wait_for(lambda: sub.image_count == 2)
    assert [i.session_id for i in events["unavailable"]] == [ipc.session_id]
    sub.remove_destination(f"aeron-spy:{spied_channel}")
    if spy_removal_announced:
        wait_for(lambda: sub.image_count == 1)
        assert sub.images[0].session_id == udp.session_id
    late = client.add_publication("aeron:ipc", 1001)                       # the removed destination takes no more
    assert late.session_id == ipc.session_id and not late.is_connected
    with pytest.raises(RegistrationError) as info:
        sub.remove_destination("aeron:ipc")
    assert info.value.error_code == ErrorCode.UNKNOWN_SUBSCRIPTION


def test_an_ipc_destination_joins_publications_added_later_and_goes_with_its_subscription(client, events):
    sub = client.add_subscription(MDS, 1001)
    sub.add_destination("aeron:ipc")
    other = client.add_subscription("aeron:ipc", 1001)
    pub = client.add_publication("aeron:ipc", 1001)
    wait_for(lambda: sub.image_count == 1 and other.image_count == 1)
    sub.close()
    got = Collector()
    offer(pub, b"still flowing")
    wait_for(lambda: got.messages, invoke=lambda: other.poll(got, 10))
    assert got.messages == [b"still flowing"]
    again = client.add_subscription(MDS, 1001)
    wait_for(lambda: pub.is_connected)
    assert again.image_count == 0                       # the closed subscription's IPC destination is gone
