# SPDX-License-Identifier: Apache-2.0
"""Spy subscriptions (aeron-spy:aeron:udp?...) on network publications: they read the publication's own log, see
exactly what the network sees, hold the publication back like any tethered subscriber, connect it on their
own only with ssc=true, and see end of stream."""
from __future__ import annotations

import os
import time

import pytest

from aeron import Aeron, Context, MediaDriver
from tests.driver.udp_helpers import Collector, counter, driver_context, free_port, numbered, stream, wait_for

pytestmark = pytest.mark.timeout(60)
WINDOW = 32768                  # publication window of a 64 KiB term


@pytest.fixture
def client():
    with MediaDriver.launch_embedded(driver_context()) as driver, Aeron.connect(Context(driver.aeron_dir)) as c:
        yield c


def test_spy_and_network_subscriber_receive_the_same_stream(client):
    channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
    sub = client.add_subscription(channel, 1001)
    pub = client.add_exclusive_publication(channel, 1001)
    spy = client.add_subscription(f"aeron-spy:{channel}", 1001)
    wait_for(lambda: pub.is_connected and sub.image_count == 1 and spy.image_count == 1)
    assert spy.images[0].session_id == sub.images[0].session_id == pub.session_id
    net, spied = stream(pub, [sub, spy], 800, 300)
    assert net.messages == spied.messages
    assert spy.images[0].position == sub.images[0].position == pub.position


def test_a_spy_alone_does_not_connect_a_publication_unless_ssc(client):
    channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
    pub = client.add_exclusive_publication(channel, 1001)
    spy = client.add_subscription(f"aeron-spy:{channel}", 1001)
    wait_for(lambda: spy.image_count == 1)
    time.sleep(0.3)
    assert not pub.is_connected and pub.offer(b"x") == pub.NOT_CONNECTED

    ssc_channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}|ssc=true"
    ssc_pub = client.add_exclusive_publication(ssc_channel, 1002)
    ssc_spy = client.add_subscription(f"aeron-spy:{ssc_channel}", 1002)
    wait_for(lambda: ssc_pub.is_connected and ssc_spy.image_count == 1)
    stream(ssc_pub, [ssc_spy], 1000, 200)                  # several terms with nobody on the network
    # with no receivers the sender follows the spies (as aeron_network_publication_send): snd-pos keeps up with them
    wait_for(lambda: counter(client, f"snd-pos: {ssc_pub.registration_id} ").value == ssc_pub.position)


def test_a_slow_spy_holds_the_publication_back(client):
    channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
    sub = client.add_subscription(channel, 1001)
    pub = client.add_exclusive_publication(channel, 1001)
    spy = client.add_subscription(f"aeron-spy:{channel}", 1001)        # never polled until the end
    wait_for(lambda: pub.is_connected and spy.image_count == 1)
    got = Collector()
    sent = 0
    deadline = time.monotonic() + 1
    while time.monotonic() < deadline:
        if pub.offer(numbered(sent, 96)) > 0:
            sent += 1
        sub.poll(got, 64)
    assert spy.images[0].position == 0
    assert pub.position_limit <= WINDOW + WINDOW // 8            # the spy at 0 bounds pub-lmt (plus trip gain)
    assert pub.offer(bytes(96)) == pub.BACK_PRESSURED
    stream(pub, [spy], sent, 96)                                # the spy catches up with what was sent
    # and releases the publication once the driver's conductor has seen the spy's position and moved pub-lmt
    wait_for(lambda: pub.offer(bytes(96)) > 0, what="publication still back pressured after the spy caught up")


def test_a_spy_sees_end_of_stream(client):
    channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
    sub = client.add_subscription(channel, 1001)
    pub = client.add_exclusive_publication(channel, 1001)
    spy = client.add_subscription(f"aeron-spy:{channel}", 1001)
    wait_for(lambda: pub.is_connected and spy.image_count == 1)
    stream(pub, [sub, spy], 50, 64)
    image = spy.images[0]
    final = pub.position
    pub.close()
    wait_for(lambda: image.is_end_of_stream or image.is_closed, invoke=lambda: spy.poll(Collector(), 10))
    assert image.position == final


def test_a_session_specific_spy_sees_only_its_session(client):
    channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
    sub = client.add_subscription(channel, 1001)
    pubs = [client.add_exclusive_publication(channel, 1001) for _ in range(2)]
    spy = client.add_subscription(f"aeron-spy:{channel}|session-id={pubs[1].session_id}", 1001)
    wait_for(lambda: all(p.is_connected for p in pubs) and sub.image_count == 2 and spy.image_count == 1)
    assert spy.images[0].session_id == pubs[1].session_id
    time.sleep(0.1)
    assert spy.image_count == 1


def test_a_spy_naming_a_tag_follows_the_publications_of_the_tagged_endpoint(shm_dir):
    """``aeron-spy:aeron:udp?tags=<t>`` names the endpoint by its tag alone: a publication made later on that tagged
    endpoint, and one on a recreated endpoint with a new tag, are spied by the spy naming their tag."""
    with MediaDriver.launch_embedded(driver_context(aeron_dir=str(shm_dir / "d"))) as driver, \
            Aeron.connect(Context(driver.aeron_dir)) as client:
        port = free_port()
        for tag in (1001, 1002):
            publication = client.add_exclusive_publication(f"aeron:udp?tags={tag}|endpoint=127.0.0.1:{port}", 7)
            spy = client.add_subscription(f"aeron-spy:aeron:udp?tags={tag}|session-id={publication.session_id}", 7)
            wait_for(lambda: spy.image_by_session_id(publication.session_id) is not None)
            spy.close()
            publication.close()


def _open_sockets() -> int:
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
        except FileNotFoundError:           # the directory's own descriptor, gone once listed
            pass
    return count


def test_two_endpoints_of_one_address_with_different_tags_are_both_closed(shm_dir):
    """Tagged endpoints can share a canonical form: each is still closed (and its counters freed) when its
    publication goes or the driver closes, whichever the lookup by canonical form holds."""
    before = _open_sockets()
    with MediaDriver.launch_embedded(driver_context(aeron_dir=str(shm_dir / "d"))) as driver, \
            Aeron.connect(Context(driver.aeron_dir)) as client:
        port = free_port()
        reader = client.counters_reader

        def send_channels():
            return [r for r in reader.counters() if r.label.startswith("snd-channel:")]
        publications = [client.add_exclusive_publication(f"aeron:udp?tags={tag}|endpoint=127.0.0.1:{port}", 7)
                        for tag in (2001, 2002)]
        assert len(send_channels()) == 2
        publications[0].close()
        wait_for(lambda: len(send_channels()) == 1, timeout_s=10)
    assert _open_sockets() == before            # the driver closed the endpoint still in use too
