# SPDX-License-Identifier: Apache-2.0
"""Unicast UDP through our driver on loopback: counters (labels, values and ids as aeron_position.c),
fragmentation at the MTU, two publications as two images, a stream started at a given position, term rotation,
late joiners and end of stream. One embedded driver holds both ends; they talk over real sockets."""
from __future__ import annotations


import pytest

from aeron import Aeron, Context, MediaDriver
from aeron._core import counters as ctr
from tests.driver.udp_helpers import (UDP_DRIVER, Collector, counter, driver_context, free_port, numbered, offer,
                                      stream, wait_for, wait_for_ticks)

pytestmark = [pytest.mark.timeout(60), UDP_DRIVER]
TERM = 65536


def connect(client, channel, stream_id=1001, exclusive=False):
    sub = client.add_subscription(channel, stream_id)
    add = client.add_exclusive_publication if exclusive else client.add_publication
    pub = add(channel, stream_id)
    wait_for(lambda: pub.is_connected and sub.image_count == 1)
    return pub, sub


def test_stream_counters_have_the_reference_labels_values_and_ids(client):
    port = free_port()
    channel = f"aeron:udp?endpoint=localhost:{port}"
    pub, sub = connect(client, channel)
    stream(pub, [sub], 100, 100)                              # 100 × 160-byte frames
    image = sub.images[0]
    position = 100 * 160
    assert pub.position == position
    # pub-pos is the conductor's to set, in its next whole duty cycle (data halves alone may send the stream first)
    wait_for(lambda: image.position == position and counter(client, "rcv-pos:").value == position
             and counter(client, "pub-pos (concurrent):").value == position)
    reader = client.counters_reader
    ids = f"{pub.registration_id} {pub.session_id} 1001 {channel}"
    image_ids = f"{image.correlation_id} {pub.session_id} 1001 {channel}"
    expected = {
        "pub-pos (concurrent): " + ids: (ctr.DRIVER_PUBLISHER_POS_TYPE_ID, pub.registration_id, position),
        # the limit may still move with the status message after the subscriber's last read: checked below
        "pub-lmt: " + ids: (ctr.DRIVER_PUBLISHER_LIMIT_TYPE_ID, pub.registration_id, None),
        "snd-pos: " + ids: (ctr.DRIVER_SENDER_POSITION_TYPE_ID, pub.registration_id, position),
        "snd-bpe: " + ids: (ctr.DRIVER_SENDER_BPE_TYPE_ID, pub.registration_id, 0),
        "snd-naks-received: " + ids: (ctr.DRIVER_SENDER_NAKS_RECEIVED_TYPE_ID, pub.registration_id, 0),
        "rcv-hwm: " + image_ids: (ctr.DRIVER_RECEIVER_HWM_TYPE_ID, image.correlation_id, position),
        "rcv-pos: " + image_ids: (ctr.DRIVER_RECEIVER_POS_TYPE_ID, image.correlation_id, position),
        "rcv-naks-sent: " + image_ids: (ctr.DRIVER_RECEIVER_NAKS_SENT_TYPE_ID, image.correlation_id, 0),
        f"sub-pos: {sub.registration_id} {pub.session_id} 1001 {channel} @0":
            (ctr.DRIVER_SUBSCRIBER_POSITION_TYPE_ID, sub.registration_id, position),
    }
    records = {r.label: r for r in reader.counters()}
    for label, (type_id, registration_id, value) in expected.items():
        record = records.get(label)
        assert record is not None, (label, sorted(records))
        assert (record.type_id, record.registration_id) == (type_id, registration_id), label
        assert record.value == value if value is not None else record.value > position, label
        assert record.owner_id == client.client_id
        # stream key (aeron_stream_position_counter_key_layout_t): registration id, session id, stream id, channel
        assert ctr.stream_counter_key_decode(record.key) == (registration_id, pub.session_id, 1001, channel)
    sub_pos = records[f"sub-pos: {sub.registration_id} {pub.session_id} 1001 {channel} @0"]
    assert sub_pos.reference_id == image.correlation_id               # sub-pos refers to the image
    # the sender limit: the receiver's window (32 KiB for a 64 KiB term) past the last status message position
    snd_lmt = records["snd-lmt: " + ids]
    assert snd_lmt.type_id == ctr.DRIVER_SENDER_LIMIT_TYPE_ID
    assert position <= snd_lmt.value and (snd_lmt.value - TERM // 2) % 32 == 0
    assert snd_lmt.value - TERM // 2 <= position
    # channel status counters: "snd-channel: <channel> <addr:port>" and the local socket address counters
    rcv_channel = records[f"rcv-channel: {channel} 127.0.0.1:{port}"]
    assert rcv_channel.type_id == ctr.DRIVER_RECEIVE_CHANNEL_STATUS_TYPE_ID
    assert rcv_channel.value == ctr.CHANNEL_ENDPOINT_STATUS_ACTIVE
    assert rcv_channel.registration_id == sub.registration_id and rcv_channel.owner_id == 0
    assert ctr.channel_status_key_decode(rcv_channel.key) == channel
    assert records[f"rcv-local-sockaddr: {rcv_channel.counter_id} 127.0.0.1:{port}"].type_id == \
        ctr.DRIVER_LOCAL_SOCKET_ADDRESS_STATUS_TYPE_ID
    snd_channel = next(r for r in reader.counters() if r.label.startswith(f"snd-channel: {channel} "))
    assert snd_channel.value == ctr.CHANNEL_ENDPOINT_STATUS_ACTIVE
    assert snd_channel.registration_id == pub.registration_id
    bound = snd_channel.label.rsplit(" ", 1)[1]
    assert records[f"snd-local-sockaddr: {snd_channel.counter_id} {bound}"].key[:4] == \
        snd_channel.counter_id.to_bytes(4, "little")
    assert reader.get_counter_value(ctr.BYTES_SENT) >= position
    assert reader.get_counter_value(ctr.BYTES_RECEIVED) >= position
    assert reader.get_counter_value(ctr.STATUS_MESSAGES_RECEIVED) > 0
    assert reader.get_counter_value(ctr.INVALID_PACKETS) == 0

    # closing both ends frees every stream and channel counter
    pub.close()
    sub.close()
    wait_for(lambda: not [r for r in reader.counters()
                          if r.type_id not in (ctr.DRIVER_SYSTEM_COUNTER_TYPE_ID, ctr.DRIVER_HEARTBEAT_TYPE_ID)],
             timeout_s=10)


def test_messages_fragment_at_the_mtu_and_reassemble(client):
    channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}|mtu=1408"
    pub, sub = connect(client, channel, exclusive=True)
    assert pub.max_payload_length == 1408 - 32
    frames = []
    sub_handler = lambda buffer, offset, length, header: frames.append((length, header.flags))  # noqa: E731
    sizes = [1376, 1377, 8000]             # 8000 < max message length (term / 8)
    for size in sizes:
        offer(pub, numbered(size, size))
    wait_for(lambda: sub.poll(sub_handler, 100) >= 0 and len(frames) == 1 + 2 + 6, timeout_s=10)
    assert frames[0] == (1376, 0xC0)                                   # fits one frame: unfragmented
    assert frames[1:3] == [(1376, 0x80), (1, 0x40)]                    # one byte more: begin + end
    assert [f[1] for f in frames[3:]] == [0x80] + [0x00] * 4 + [0x40]  # 8000 = 5 × 1376 + 1120
    assert [f[0] for f in frames[3:]] == [1376] * 5 + [1120]
    assert pub.position == 1408 + (1408 + 64) + 5 * 1408 + 1152    # frames aligned to 32 bytes
    # and whole messages through the assembler, largest allowed included
    stream(pub, [sub], 5, pub.max_message_length // 4)


def test_two_publications_on_one_channel_are_two_images_each_complete_and_ordered(client):
    channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
    sub = client.add_subscription(channel, 1001)
    pubs = [client.add_exclusive_publication(channel, 1001) for _ in range(2)]
    wait_for(lambda: all(p.is_connected for p in pubs) and sub.image_count == 2)
    assert {i.session_id for i in sub.images} == {p.session_id for p in pubs}
    got = Collector()
    for n in range(600):
        offer(pubs[n % 2], numbered(n, 200), step=lambda: sub.poll(got, 64))
        sub.poll(got, 64)
    wait_for(lambda: sub.poll(got, 64) >= 0 and len(got.messages) == 600, timeout_s=15)
    for k, pub in enumerate(pubs):
        mine = [int.from_bytes(m[:8], "little") for m, s in zip(got.messages, got.sessions) if s == pub.session_id]
        assert mine == list(range(k, 600, 2))
    assert sorted(i.position for i in sub.images) == [300 * 256, 300 * 256]


def test_a_stream_started_at_a_given_term_and_offset_joins_there_and_rotates_terms(client):
    channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}|init-term-id=7|term-id=9|term-offset=1024"
    pub, sub = connect(client, channel, exclusive=True)
    start = 2 * TERM + 1024
    assert pub.position == start
    image = sub.images[0]
    assert image.join_position == start and image.position == start
    term_ids = set()
    collector = Collector()

    def handler(buffer, offset, length, header):
        term_ids.add(header.term_id)
        collector(buffer, offset, length, header)
    for n in range(1200):                                     # 1200 × 256 bytes ≈ 4.7 terms
        offer(pub, numbered(n, 224), step=lambda: sub.poll(handler, 64))
        sub.poll(handler, 64)
    wait_for(lambda: sub.poll(handler, 64) >= 0 and len(collector.messages) == 1200, timeout_s=15)
    assert [int.from_bytes(m[:8], "little") for m in collector.messages] == list(range(1200))
    # 256-byte frames tile the terms exactly: no padding, terms 9..13 (position 439296 is in term count 6)
    assert pub.position == image.position == start + 1200 * 256 == 439296
    assert sorted(term_ids) == [9, 10, 11, 12, 13]


def test_a_stream_whose_term_id_wrapped_past_int32_flows(client):
    """init-term-id near the top of int32 and a term id past the wrap (negative): the sender reads status messages
    and NAKs at the position the term count wraps to, as the C driver's int32 arithmetic does."""
    initial_term_id, term_id, term_offset = 2_000_000_000, -2_000_000_000, 256
    term_count = term_id - initial_term_id + (1 << 32)
    channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
    pub, sub = connect(client, f"{channel}|init-term-id={initial_term_id}|term-id={term_id}|"
                                f"term-offset={term_offset}|term-length={TERM}", exclusive=True)
    start = term_count * TERM + term_offset
    assert pub.position == start
    stream(pub, [sub], 600, 224)                              # past the publisher window: needs status messages
    assert sub.images[0].position == pub.position == start + 600 * 256


def test_a_late_subscriber_joins_at_the_current_position_not_at_zero(client):
    channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
    early = client.add_subscription(channel, 1001)
    pub = client.add_exclusive_publication(channel, 1001)
    wait_for(lambda: pub.is_connected and early.image_count == 1)
    stream(pub, [early], 50, 96)
    joined_at = pub.position
    assert joined_at == 50 * 128
    late = client.add_subscription(channel, 1001)            # same endpoint: joins the existing image
    wait_for(lambda: late.image_count == 1)
    assert late.images[0].join_position == early.images[0].position == joined_at
    stream(pub, [early, late], 50, 96, first=50)


def test_end_of_stream_after_the_publication_closes(client):
    channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
    gone = []
    sub = client.add_subscription(channel, 1001, unavailable_image_handler=gone.append)
    pub = client.add_exclusive_publication(channel, 1001)
    wait_for(lambda: pub.is_connected and sub.image_count == 1)
    stream(pub, [sub], 20, 64)
    final = pub.position
    image = sub.images[0]
    pub.close()
    wait_for(lambda: image.is_end_of_stream, timeout_s=10, invoke=lambda: sub.poll(Collector(), 10))
    assert image.position == final
    wait_for(lambda: gone, timeout_s=10, invoke=lambda: sub.poll(Collector(), 10))
    assert gone[0] is image and sub.image_count == 0


def test_a_subscription_started_after_the_publication_elicits_a_setup(client):
    channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
    pub = client.add_exclusive_publication(channel, 1001)
    wait_for_ticks(client, 15)                               # SETUPs went unanswered
    assert not pub.is_connected and pub.offer(b"x") == pub.NOT_CONNECTED
    sub = client.add_subscription(channel, 1001)
    wait_for(lambda: pub.is_connected and sub.image_count == 1)
    assert sub.images[0].join_position == 0
    stream(pub, [sub], 100, 64)


def test_a_receive_endpoint_closes_only_after_the_receiver_let_go_of_its_images():
    """Closing the last subscription of a live stream: the receiver drops the image (no more status messages
    through the endpoint's socket) before the endpoint is removed, as the C driver counts images on the endpoint;
    else the receiver sends on a closed socket."""
    with MediaDriver.launch_embedded(driver_context()) as driver, Aeron.connect(Context(driver.aeron_dir)) as c:
        network = driver.conductor.network
        live_images_at_removal = []

        class RecordingProxy:
            """The receiver proxy, noting which images still use an endpoint when it is handed over for removal."""

            def __init__(self, proxy):
                self._proxy = proxy

            def __getattr__(self, name):
                return getattr(self._proxy, name)

            def remove_endpoint(self, endpoint):
                live_images_at_removal.append([image.state for image in network.images if image.endpoint is endpoint
                                               and image.state in ("ACTIVE", "DRAINING")])
                self._proxy.remove_endpoint(endpoint)

        network.receiver_proxy = RecordingProxy(network.receiver_proxy)
        channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
        pub, sub = connect(c, channel)
        stream(pub, [sub], 10, 64)
        status_id = sub.channel_status_id
        sub.close()
        wait_for(lambda: live_images_at_removal, timeout_s=15, invoke=lambda: pub.offer(b"x" * 32))
        assert live_images_at_removal == [[]]
        wait_for(lambda: c.counters_reader.get_counter_state(status_id) != ctr.RECORD_ALLOCATED, timeout_s=15)
        assert c.counters_reader.get_counter_value(ctr.ERRORS) == 0


def test_a_subscription_added_right_after_the_last_one_closed_gets_a_new_image_that_misses_nothing(client):
    """The image the last subscriber left takes no new subscriber (it is going); the re-added subscription waits for
    the image of the sender's next SETUP, which starts where the stream then is, so it gets every message sent once
    it is connected."""
    channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
    pub, sub = connect(client, channel)
    stream(pub, [sub], 32, 992)
    old = sub.images[0]
    sub.close()
    sub = client.add_subscription(channel, 1001)
    wait_for(lambda: sub.image_count == 1)
    assert sub.images[0].correlation_id != old.correlation_id
    stream(pub, [sub], 64, 992)


def test_image_counters_name_the_channel_of_the_subscription_that_made_the_image(client):
    endpoint = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
    publications = [client.add_publication(endpoint, stream_id) for stream_id in (1001, 1002)]
    subscriptions = [client.add_subscription(f"{endpoint}|reliable={reliable}", stream_id)
                     for stream_id, reliable in ((1001, "false"), (1002, "true"))]
    wait_for(lambda: all(p.is_connected for p in publications) and all(s.image_count == 1 for s in subscriptions))
    reader = client.counters_reader
    for subscription in subscriptions:
        image_id = subscription.images[0].correlation_id
        labels = [reader.get_counter_label(i) for i in range(256)
                  if reader.get_counter_type_id(i) == ctr.DRIVER_RECEIVER_HWM_TYPE_ID and
                  reader.get_counter_registration_id(i) == image_id]
        assert len(labels) == 1 and labels[0].endswith(subscription.channel), labels
