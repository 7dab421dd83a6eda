# SPDX-License-Identifier: Apache-2.0
"""Multi-destination subscriptions (control-mode=manual): Subscription.add_destination / remove_destination, the
same stream over several destinations rebuilt into one image (duplicates dropped by position), status messages
per destination, a destination with an explicit control address eliciting a dynamic MDC sender (ReplayMerge's
live leg), the rcv-local-sockaddr counters, and what the driver refuses. Each publisher is its own driver."""
from __future__ import annotations


import pytest

from aeron._core import counters as ctr
from aeron.common.errors import ErrorCode, IllegalStateError, RegistrationError
from tests.driver.udp_helpers import Collector, counter, free_port, hosts, numbered, stream, system_counter, wait_for

pytestmark = pytest.mark.timeout(90)

MDS = "aeron:udp?control-mode=manual"


def local_sockaddrs(client, status_id):
    """The addresses of the rcv-local-sockaddr counters under one rcv-channel status counter."""
    out = []
    for record in client.counters_reader.counters():
        if record.type_id == ctr.DRIVER_LOCAL_SOCKET_ADDRESS_STATUS_TYPE_ID and record.label.startswith(
                "rcv-local-sockaddr:"):
            key_status_id, address = ctr.local_sockaddr_key_decode(record.key)
            if key_status_id == status_id:
                assert record.label == f"rcv-local-sockaddr: {status_id} {address}"
                assert record.value == ctr.CHANNEL_ENDPOINT_STATUS_ACTIVE
                out.append(address)
    return sorted(out)


def status_messages_received(client):
    return counter(client, "Status Messages received").value


def test_mds_subscription_has_no_socket_until_a_destination_is_added(shm_dir):
    with hosts(shm_dir, "s") as (cs,):
        sub = cs.add_subscription(MDS, 1001)
        record = counter(cs, "rcv-channel: ")
        assert record.label == f"rcv-channel: {MDS} " and record.value == ctr.CHANNEL_ENDPOINT_STATUS_ACTIVE
        assert sub.channel_status_id == record.counter_id
        assert local_sockaddrs(cs, record.counter_id) == []
        ports = [free_port(), free_port()]
        for port in ports:
            sub.add_destination(f"aeron:udp?endpoint=127.0.0.1:{port}")
        assert local_sockaddrs(cs, record.counter_id) == sorted(f"127.0.0.1:{port}" for port in ports)
        sub.remove_destination(f"aeron:udp?endpoint=127.0.0.1:{ports[0]}")
        wait_for(lambda: local_sockaddrs(cs, record.counter_id) == [f"127.0.0.1:{ports[1]}"])
        sub.close()
        wait_for(lambda: local_sockaddrs(cs, record.counter_id) == [] and not any(
            r.label.startswith("rcv-channel:") for r in cs.counters_reader.counters()))


def test_one_stream_over_two_destinations_is_one_image_and_survives_removing_either(shm_dir):
    """An MDC publication sends every datagram to both destinations of one MDS subscription: one image, each
    message once, in order; after a destination is removed the stream goes on over the other."""
    with hosts(shm_dir, "p", "s") as (cp, cs):
        ports = [free_port(), free_port()]
        destinations = [f"aeron:udp?endpoint=127.0.0.1:{port}" for port in ports]
        sub = cs.add_subscription(MDS, 1001)
        for destination in destinations:
            sub.add_destination(destination)
        pub = cp.add_exclusive_publication("aeron:udp?control-mode=manual", 1001)
        for destination in destinations:
            pub.add_destination(destination)
        wait_for(lambda: pub.is_connected and sub.image_count == 1, timeout_s=15)
        stream(pub, [sub], 400, 200)
        assert sub.image_count == 1
        wait_for(lambda: counter(cs, "rcv-pos:").value == pub.position)
        sub.remove_destination(destinations[0])
        stream(pub, [sub], 400, 200, first=400)
        sub.add_destination(destinations[0])
        sub.remove_destination(destinations[1])
        stream(pub, [sub], 400, 200, first=800)
        assert sub.image_count == 1 and sub.images[0].position == pub.position


def test_two_publishers_of_the_same_stream_merge_by_position(shm_dir):
    """ReplayMerge's situation: two senders of one stream (same session, same start), one destination each; the
    image takes each position once, status messages go to both; either sender alone keeps it going."""
    session_id, term_id = 777, 5
    channel = (f"aeron:udp?endpoint=127.0.0.1:{{port}}|session-id={session_id}|init-term-id={term_id}"
               f"|term-id={term_id}|term-offset=0")
    with hosts(shm_dir, "a", "b", "s") as (ca, cb, cs):
        ports = [free_port(), free_port()]
        sub = cs.add_subscription(MDS, 1001)
        for port in ports:
            sub.add_destination(f"aeron:udp?endpoint=127.0.0.1:{port}")
        pubs = [c.add_exclusive_publication(channel.format(port=port), 1001) for c, port in zip((ca, cb), ports)]
        wait_for(lambda: all(p.is_connected for p in pubs) and sub.image_count == 1, timeout_s=15)
        got = Collector()
        for n in range(300):
            for pub in pubs:
                while pub.offer(numbered(n, 96)) < 0:
                    sub.poll(got, 64)
            sub.poll(got, 64)
        wait_for(lambda: len(got.messages) == 300, invoke=lambda: sub.poll(got, 64))
        assert got.messages == [numbered(n, 96) for n in range(300)] and set(got.sessions) == {session_id}
        assert sub.image_count == 1 and sub.images[0].position == pubs[0].position == pubs[1].position
        # both senders hear the subscriber: each one's sender position reached the end
        wait_for(lambda: counter(ca, "snd-pos:").value == counter(cb, "snd-pos:").value == pubs[0].position)
        sub.remove_destination(f"aeron:udp?endpoint=127.0.0.1:{ports[0]}")
        before = counter(cs, "rcv-hwm:").value
        for n in range(300, 400):                    # only the second publisher now: it alone moves the image
            while pubs[1].offer(numbered(n, 96)) < 0:
                sub.poll(got, 64)
            sub.poll(got, 64)
        wait_for(lambda: len(got.messages) == 400, invoke=lambda: sub.poll(got, 64))
        assert got.messages[300:] == [numbered(n, 96) for n in range(300, 400)]
        assert counter(cs, "rcv-hwm:").value > before and sub.image_count == 1


def test_destination_with_explicit_control_elicits_a_dynamic_mdc_sender(shm_dir):
    """ReplayMerge's live leg: the destination names the publication's control address, announces itself there,
    and the dynamic MDC publication starts sending to it; removing it stops the status messages."""
    control = f"127.0.0.1:{free_port()}"
    with hosts(shm_dir, "p", "s") as (cp, cs):
        pub = cp.add_exclusive_publication(f"aeron:udp?control={control}|control-mode=dynamic", 1001)
        sub = cs.add_subscription(MDS, 1001)
        destination = f"aeron:udp?endpoint=127.0.0.1:{free_port()}|control={control}"
        sub.add_destination(destination)
        wait_for(lambda: pub.is_connected and sub.image_count == 1, timeout_s=15)
        stream(pub, [sub], 300, 100)
        received = status_messages_received(cp)
        wait_for(lambda: status_messages_received(cp) > received,     # the idle image's, every 200 ms
                 what="a status message of the idle image")
        sub.remove_destination(destination)
        # one status message interval of the image after the removal, for any sent before it to arrive; then three
        # more intervals (the image sends, or would send, one in each): none over the removed destination
        sent = system_counter(cs, ctr.STATUS_MESSAGES_SENT)
        wait_for(lambda: system_counter(cs, ctr.STATUS_MESSAGES_SENT) > sent, what="a status message interval")
        received = status_messages_received(cp)
        sent = system_counter(cs, ctr.STATUS_MESSAGES_SENT)
        wait_for(lambda: system_counter(cs, ctr.STATUS_MESSAGES_SENT) >= sent + 3,
                 what="three status message intervals")
        assert status_messages_received(cp) == received


def test_a_destination_is_an_active_transport_once_data_comes_through_it(shm_dir):
    """As the C driver counts an image's active transports (ReplayMerge and the archive's live merge wait for two):
    a destination with a control address gets status messages at once but counts only once data arrives over it;
    one that nobody sends from never does."""
    with hosts(shm_dir, "p", "s") as (cp, cs):
        port = free_port()
        sub = cs.add_subscription(MDS, 1001)
        sub.add_destination(f"aeron:udp?endpoint=127.0.0.1:{port}")
        pub = cp.add_exclusive_publication(f"aeron:udp?endpoint=127.0.0.1:{port}", 1001)
        wait_for(lambda: pub.is_connected and sub.image_count == 1, timeout_s=15)
        stream(pub, [sub], 100, 64)
        log = sub.images[0].log_buffers
        wait_for(lambda: log.active_transport_count == 1)
        sub.add_destination(f"aeron:udp?endpoint=127.0.0.1:{free_port()}|control=127.0.0.1:{free_port()}")
        sent = counter(cs, "Status Messages sent").value
        stream(pub, [sub], 100, 64, first=100)
        wait_for(lambda: counter(cs, "Status Messages sent").value >= sent + 4, timeout_s=15)
        assert log.active_transport_count == 1


def test_images_of_two_sessions_over_two_destinations(shm_dir):
    """Different streams' sessions arriving on different destinations are separate images of one subscription."""
    with hosts(shm_dir, "a", "b", "s") as (ca, cb, cs):
        ports = [free_port(), free_port()]
        sub = cs.add_subscription(MDS, 1001)
        for port in ports:
            sub.add_destination(f"aeron:udp?endpoint=127.0.0.1:{port}")
        pubs = [c.add_publication(f"aeron:udp?endpoint=127.0.0.1:{port}", 1001) for c, port in zip((ca, cb), ports)]
        wait_for(lambda: all(p.is_connected for p in pubs) and sub.image_count == 2, timeout_s=15)
        assert {image.session_id for image in sub.images} == {p.session_id for p in pubs}
        for pub in pubs:
            stream(pub, [sub], 100, 64)


def test_async_destination_commands_are_active_until_answered(shm_dir):
    errors = []
    with hosts(shm_dir, "s") as (cs,):
        cs.context.error_handler = errors.append
        sub = cs.add_subscription(MDS, 1001)
        port = free_port()
        corr = sub.async_add_destination(f"aeron:udp?endpoint=127.0.0.1:{port}")
        assert cs.is_command_active(corr)
        wait_for(lambda: not cs.is_command_active(corr))
        assert errors == []
        record = counter(cs, "rcv-channel: ")
        assert local_sockaddrs(cs, record.counter_id) == [f"127.0.0.1:{port}"]
        corr = sub.async_add_destination(f"aeron:udp?endpoint=127.0.0.1:{port}|mtu=1408")
        wait_for(lambda: not cs.is_command_active(corr))
        assert len(errors) == 1 and isinstance(errors[0], RegistrationError)
        assert errors[0].error_code == ErrorCode.INVALID_CHANNEL
        corr = sub.async_remove_destination(f"aeron:udp?endpoint=127.0.0.1:{port}")
        wait_for(lambda: not cs.is_command_active(corr) and local_sockaddrs(cs, record.counter_id) == [])


@pytest.mark.parametrize("destination, part", [
    ("aeron:udp?endpoint=127.0.0.1:{port}|mtu=1408", "mtu"),
    ("aeron:udp?endpoint=127.0.0.1:{port}|rcv-wnd=65536", "rcv-wnd"),
    ("aeron:udp?endpoint=127.0.0.1:{port}|so-rcvbuf=65536", "so-rcvbuf"),
    ("aeron:udp?endpoint=127.0.0.1:{port}|so-sndbuf=65536", "so-sndbuf"),
    ("aeron:udp?control=127.0.0.1:{port}|control-mode=response", "control-mode=response"),
])
def test_destination_parameters_a_destination_may_not_set_are_refused(shm_dir, destination, part):
    with hosts(shm_dir, "s") as (cs,):
        sub = cs.add_subscription(MDS, 1001)
        with pytest.raises(RegistrationError) as info:
            sub.add_destination(destination.format(port=free_port()))
        assert info.value.error_code == ErrorCode.INVALID_CHANNEL and part in str(info.value)


def test_destinations_only_for_manual_subscriptions(shm_dir):
    with hosts(shm_dir, "s") as (cs,):
        plain = cs.add_subscription(f"aeron:udp?endpoint=127.0.0.1:{free_port()}", 1001)
        with pytest.raises(RegistrationError) as info:
            plain.add_destination(f"aeron:udp?endpoint=127.0.0.1:{free_port()}")
        assert info.value.error_code == ErrorCode.INVALID_CHANNEL and "manual control" in str(info.value)
        sub = cs.add_subscription(MDS, 1001)
        sub.close()
        with pytest.raises(IllegalStateError):
            sub.add_destination(f"aeron:udp?endpoint=127.0.0.1:{free_port()}")
