# SPDX-License-Identifier: Apache-2.0
"""Multi-destination subscriptions across implementations: our client's Subscription.add_destination /
remove_destination on `aeronmd`, official C publishers (unicast, and a dynamic MDC one reached through a destination
with an explicit control address, ReplayMerge's live leg) sending to our driver's MDS subscription, and one stream
from two `aeronmd` publications merged into one image by our driver. Needs AERON_C_BIN."""
from __future__ import annotations

import re

import pytest

from aeron import Aeron, Context
from tests import procs
from tests.driver.udp_helpers import Collector, free_port, hosts, numbered, wait_for

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

MDS = "aeron:udp?control-mode=manual"


def same_stream_publications(client, ports, session_id=4242, term_id=17):
    """Two exclusive publications of one stream (same session, same start), one to each port."""
    return [client.add_exclusive_publication(
        f"aeron:udp?endpoint=127.0.0.1:{port}|session-id={session_id}|init-term-id={term_id}|term-id={term_id}"
        f"|term-offset=0", 1001) for port in ports]


def offer_each(pubs, sub, got, first, count, size=96):
    for n in range(first, first + count):
        for pub in pubs:
            wait_for(lambda: pub.offer(numbered(n, size)) > 0, invoke=lambda: sub.poll(got, 64),
                     what=f"offer {n} kept failing")
        sub.poll(got, 64)
    wait_for(lambda: len(got.messages) == first + count, invoke=lambda: sub.poll(got, 64))
    assert got.messages[first:] == [numbered(n, size) for n in range(first, first + count)]


def test_our_client_adds_and_removes_receive_destinations_on_aeronmd(aeronmd):
    """Everything on `aeronmd`, driven by our client: one stream from two publications over two destinations is
    one image; removing a destination leaves the other feeding it."""
    with Aeron.connect(Context(aeronmd)) as client:
        ports = [free_port(), free_port()]
        sub = client.add_subscription(MDS, 1001)
        for port in ports:
            sub.add_destination(f"aeron:udp?endpoint=127.0.0.1:{port}")
        pubs = same_stream_publications(client, ports)
        wait_for(lambda: all(p.is_connected for p in pubs) and sub.image_count == 1, timeout_s=20)
        got = Collector()
        offer_each(pubs, sub, got, 0, 200)
        assert sub.image_count == 1 and set(got.sessions) == {4242}
        sub.remove_destination(f"aeron:udp?endpoint=127.0.0.1:{ports[0]}")
        offer_each(pubs[1:], sub, got, 200, 100)
        assert sub.image_count == 1


def test_aeronmd_publications_of_one_stream_merge_in_our_mds_subscription(aeronmd, shm_dir):
    with hosts(shm_dir, "ours") as (ours,), Aeron.connect(Context(aeronmd)) as theirs:
        ports = [free_port(), free_port()]
        sub = ours.add_subscription(MDS, 1001)
        for port in ports:
            sub.add_destination(f"aeron:udp?endpoint=127.0.0.1:{port}")
        pubs = same_stream_publications(theirs, ports)
        wait_for(lambda: all(p.is_connected for p in pubs) and sub.image_count == 1, timeout_s=20)
        got = Collector()
        offer_each(pubs, sub, got, 0, 200)
        sub.remove_destination(f"aeron:udp?endpoint=127.0.0.1:{ports[1]}")
        offer_each(pubs[:1], sub, got, 200, 100)
        assert sub.image_count == 1 and sub.images[0].position == pubs[0].position


def test_official_c_publishers_to_our_mds_subscription(aeronmd, official, shm_dir):
    """A unicast C publisher to one destination, a dynamic MDC C publisher found through another destination's
    control address: two images of one subscription, every message of each."""
    control = f"127.0.0.1:{free_port()}"
    with hosts(shm_dir, "ours") as (ours,):
        sub = ours.add_subscription(MDS, 1001)
        unicast_port = free_port()
        sub.add_destination(f"aeron:udp?endpoint=127.0.0.1:{unicast_port}")
        sub.add_destination(f"aeron:udp?endpoint=127.0.0.1:{free_port()}|control={control}")
        got = Collector()
        outputs = []
        for channel in (f"aeron:udp?endpoint=127.0.0.1:{unicast_port}", f"aeron:udp?control={control}|"
                                                                        f"control-mode=dynamic"):
            publisher = procs.popen([official("basic_publisher"), "-p", aeronmd, "-c", channel, "-m", "3"])
            try:
                wait_for(lambda: publisher.poll() is not None, timeout_s=40, invoke=lambda: sub.poll(got, 64))
            finally:
                out, _ = procs.stop(publisher)
            outputs.append(out)
        delivered = [re.findall(r"offering (\d)/3 - yay!", out) for out in outputs]
        assert all(d and d == [str(n) for n in range(int(d[0]), 3)] for d in delivered), outputs
        expected = sorted(f"Hello World! {n}".encode() for d in delivered for n in d)
        wait_for(lambda: len(got.messages) >= len(expected), timeout_s=10, invoke=lambda: sub.poll(got, 64))
        assert sorted(got.messages) == expected
        assert len(set(got.sessions)) == 2
