# SPDX-License-Identifier: Apache-2.0
"""tether=false on network subscriptions and spies (the state machine IPC subscriptions use, untethered.py): an
untethered subscriber that falls behind loses its image, rests without holding the stream back, and rejoins on the
same counter where the image then is; with rejoin=false it is dropped. A tethered subscriber next to it holds the
stream back as usual. As in Aeron, the timeouts are the image's: those of the subscription that made a publication
image, those of the publication a spy reads."""
from __future__ import annotations

import time

import pytest

from aeron._core import counters as ctr
from tests.driver.udp_helpers import (UDP_DRIVER, Collector, counter, free_port, numbered, system_counter, wait_for,
                                      wait_for_ticks)

pytestmark = [pytest.mark.timeout(60), UDP_DRIVER]

UNTETHERED = "tether=false|untethered-window-limit-timeout=100ms|untethered-linger-timeout=100ms" \
             "|untethered-resting-timeout=300ms"
WINDOW = 32768                  # a 64 KiB term's window


class Events:
    def __init__(self):
        self.available, self.unavailable = [], []


@pytest.fixture
def events():
    return Events()


@pytest.fixture
def client_settings(events):
    return dict(available_image_handler=events.available.append, unavailable_image_handler=events.unavailable.append)


@pytest.fixture
def client_and_events(client, events):
    return client, events


def sub_pos_counters(client, registration_id):
    return [r for r in client.counters_reader.counters()
            if r.type_id == ctr.DRIVER_SUBSCRIBER_POSITION_TYPE_ID and r.registration_id == registration_id]


def run_ahead(pub, tethered, until):
    """Offer while the tethered subscriber keeps up, until ``until()`` holds."""
    got = Collector()
    n = 0
    deadline = time.monotonic() + 20
    while not until():
        assert time.monotonic() < deadline, (pub.position, n)
        if pub.offer(numbered(n, 480)) > 0:
            n += 1
        tethered.poll(got, 64)
    return got


@pytest.mark.parametrize("spy", [False, True], ids=["network", "spy"])
def test_untethered_subscriber_that_falls_behind_rests_then_rejoins(client_and_events, spy):
    client, events = client_and_events
    endpoint = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
    if spy:             # a spy follows its publication's timeouts
        lagging = client.add_subscription(f"aeron-spy:{endpoint}|tether=false", 1001)
        tethered = client.add_subscription(endpoint, 1001)
        pub = client.add_exclusive_publication(f"{endpoint}|{UNTETHERED}", 1001)
    else:               # the subscription that makes the image gives the timeouts
        lagging = client.add_subscription(f"{endpoint}|{UNTETHERED}", 1001)
        tethered = client.add_subscription(endpoint, 1001)
        pub = client.add_exclusive_publication(endpoint, 1001)
    wait_for(lambda: pub.is_connected and tethered.image_count == 1 and lagging.image_count == 1)
    image = lagging.images[0]
    counter_id = image.subscriber_position_id
    # the lagging one never polls: it goes at the window limit timeout, and then holds nothing back
    run_ahead(pub, tethered, lambda: image in events.unavailable)
    assert lagging.image_count == 0 and image.position == 0
    run_ahead(pub, tethered, lambda: pub.position > 4 * WINDOW)
    # after resting it comes back on the same counter, where the stream then is
    run_ahead(pub, tethered, lambda: lagging.image_count == 1)
    back = lagging.images[0]
    assert back is not image and back.subscriber_position_id == counter_id
    assert back.correlation_id == image.correlation_id
    assert back.join_position > 4 * WINDOW - WINDOW
    assert [r.counter_id for r in sub_pos_counters(client, lagging.registration_id)] == [counter_id]
    # and now it keeps up (and is held to again)
    got = Collector()
    start = pub.position
    for n in range(50):
        while pub.offer(numbered(n, 480)) < 0:
            tethered.poll(Collector(), 64)
            lagging.poll(got, 64)
        tethered.poll(Collector(), 64)
        lagging.poll(got, 64)
    # the tethered subscriber is polled too: its position bounds the receiver window, so unpolled it can hold the
    # last frames at the sender and the rejoined one would wait for them in vain
    wait_for(lambda: back.position == pub.position,
             invoke=lambda: (tethered.poll(Collector(), 64), lagging.poll(got, 64)))
    assert pub.position > start and len(got.messages) >= 50


def test_untethered_subscriber_without_rejoin_is_dropped(client_and_events):
    client, events = client_and_events
    channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
    lagging = client.add_subscription(f"{channel}|{UNTETHERED}|rejoin=false", 1001)
    tethered = client.add_subscription(channel, 1001)
    pub = client.add_exclusive_publication(channel, 1001)
    wait_for(lambda: pub.is_connected and tethered.image_count == 1 and lagging.image_count == 1)
    image = lagging.images[0]
    run_ahead(pub, tethered, lambda: image in events.unavailable)
    wait_for(lambda: not sub_pos_counters(client, lagging.registration_id))   # unlinked after the linger
    run_ahead(pub, tethered, lambda: pub.position > 4 * WINDOW)
    wait_for_ticks(client, 20)                                          # longer than the resting timeout (300 ms)
    assert lagging.image_count == 0 and len(events.available) == 2


def test_a_tethered_subscriber_holds_the_stream_back(client_and_events):
    client, _ = client_and_events
    channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
    keeping_up = client.add_subscription(channel, 1001)
    lagging = client.add_subscription(f"{channel}|tether=true", 1001)
    pub = client.add_exclusive_publication(channel, 1001)
    wait_for(lambda: pub.is_connected and keeping_up.image_count == 1 and lagging.image_count == 1)
    sent = [0]

    def offer():
        keeping_up.poll(Collector(), 64)
        result = pub.offer(numbered(sent[0], 480))
        sent[0] += result > 0
        return result

    # held back: the publication back pressured with everything the sender sent read by the subscriber keeping up;
    # and so it stays while the receiver goes on reporting
    wait_for(lambda: offer() == pub.BACK_PRESSURED and
             keeping_up.images[0].position >= counter(client, "snd-pos:").value, what="the publication held back")
    received = system_counter(client, ctr.STATUS_MESSAGES_RECEIVED)
    wait_for(lambda: offer() and system_counter(client, ctr.STATUS_MESSAGES_RECEIVED) >= received + 4,
             what="four more status messages")
    # the receiver window past the lagging subscriber, then the publication window past what was sent
    assert pub.position <= 2 * WINDOW and lagging.image_count == 1 and lagging.images[0].position == 0


def test_an_ipc_publication_with_only_a_resting_subscriber_is_not_connected(client_and_events):
    """The tethered subscriber leaves while the untethered one rests: nobody works the stream, so the publication is
    not connected until the resting one rejoins (the C driver's working position count)."""
    client, events = client_and_events
    channel = "aeron:ipc?term-length=64k|untethered-window-limit-timeout=100ms|untethered-resting-timeout=300ms"
    pub = client.add_exclusive_publication(channel, 1001)
    tethered = client.add_subscription(channel, 1001)
    lagging = client.add_subscription(f"{channel}|tether=false", 1001)
    wait_for(lambda: pub.is_connected and tethered.image_count == 1 and lagging.image_count == 1)
    image = lagging.images[0]
    run_ahead(pub, tethered, lambda: image in events.unavailable)
    tethered.close()
    wait_for(lambda: not pub.is_connected or lagging.image_count == 1, timeout_s=10)
    assert not pub.is_connected and lagging.image_count == 0
    wait_for(lambda: lagging.image_count == 1 and pub.is_connected, timeout_s=10)
