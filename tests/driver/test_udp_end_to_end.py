# SPDX-License-Identifier: Apache-2.0
"""UDP end to end through our driver over loopback sockets: complete ordered delivery (also under loss,
reordering and duplication), multicast with flow control strategies, multi-destination-cast, spies, hostile
datagrams. Each test starts embedded drivers in their own /dev/shm directories and picks free ports."""
from __future__ import annotations

import random
import socket
import struct
import time

import pytest

from aeron import Aeron, Context, MediaDriver
from aeron._core import counters as ctr
from aeron._core.loss_report import read_loss_report
from aeron._core.loss_generator import LossGenerator
from tests.driver.udp_helpers import (MS, UDP_DRIVER, Collector, counter, driver_context, free_port, multicast_group,
                                      held_sender_limit, stream, wait_for, wait_for_ticks)

pytestmark = [pytest.mark.timeout(90), UDP_DRIVER]


def counter_value(client, label_start):
    return counter(client, label_start).value


# -- unicast ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("size", [32, 1000, 5000])
def test_unicast_delivers_everything_in_order(client, size):
    channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
    sub = client.add_subscription(channel, 1001)
    pub = client.add_publication(channel, 1001)
    wait_for(lambda: pub.is_connected and sub.image_count == 1)
    stream(pub, [sub], 3000 if size < 5000 else 300, size)        # several 64 KiB terms: rotation
    image = sub.images[0]
    assert image.source_identity.startswith("127.0.0.1:")
    wait_for(lambda: counter_value(client, "snd-pos:") == pub.position)
    wait_for(lambda: counter_value(client, "rcv-hwm:") == counter_value(client, "rcv-pos:") == image.position)


def test_late_subscriber_joins_by_eliciting_a_setup_and_eos_ends_the_image(client):
    channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
    pub = client.add_publication(channel, 1001)
    wait_for_ticks(client, 15)                       # SETUPs went unanswered: nobody listened
    assert not pub.is_connected
    gone = []
    sub = client.add_subscription(channel, 1001, unavailable_image_handler=gone.append)
    wait_for(lambda: pub.is_connected and sub.image_count == 1)
    stream(pub, [sub], 100)
    pub.close()
    wait_for(lambda: gone, timeout_s=10)            # EOS heartbeat → drained → unavailable
    assert gone[0].is_end_of_stream or gone[0].is_closed


def test_session_specific_subscriptions_and_two_publishers(client):
    channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
    pub_a = client.add_exclusive_publication(channel, 1001)
    pub_b = client.add_exclusive_publication(channel, 1001)
    everyone = client.add_subscription(channel, 1001)
    only_b = client.add_subscription(f"{channel}|session-id={pub_b.session_id}", 1001)
    wait_for(lambda: everyone.image_count == 2 and only_b.image_count == 1)
    assert only_b.images[0].session_id == pub_b.session_id


# -- loss, reordering, duplication ---------------------------------------------------------------------------------

@pytest.mark.parametrize("rate", [0.05, 0.10])
def test_random_loss_is_recovered_by_naks(rate, shm_dir):
    ctx = driver_context(aeron_dir=str(shm_dir / "lossy"))
    ctx.receive_loss_generator = lambda: LossGenerator.random(rate, seed=7)
    with MediaDriver.launch(ctx) as driver, Aeron.connect(Context(driver.aeron_dir)) as client:
        channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
        sub = client.add_subscription(channel, 1001)
        pub = client.add_publication(channel, 1001)
        wait_for(lambda: pub.is_connected and sub.image_count == 1)
        stream(pub, [sub], 2000, 200)
        reader = client.counters_reader
        assert reader.get_counter_value(ctr.NAK_MESSAGES_SENT) > 0
        assert reader.get_counter_value(ctr.RETRANSMITS_SENT) > 0
        assert counter_value(client, "rcv-naks-sent:") > 0
    entries = read_loss_report(_map(shm_dir / "lossy" / "loss-report.dat"))
    assert entries and entries[0].stream_id == 1001 and entries[0].total_bytes_lost > 0


def _map(path):
    from aeron._core.atomic_buffer import AtomicBuffer
    return AtomicBuffer(bytearray(path.read_bytes()))


def test_reordered_and_duplicated_datagrams_still_deliver_in_order(shm_dir):
    held = []
    rng = random.Random(3)

    def factory():
        # hold back one datagram in ten and re-inject it later; duplicate one in ten
        def should_drop(buffer, length):
            if length < 32 or buffer[6] != 1 or buffer[:4] == b"\0\0\0\0":
                return False
            roll = rng.random()
            if roll < 0.1:
                held.append(bytes(buffer[:length]))
                return True
            if roll < 0.2 and held:
                replay_socket.sendto(held.pop(0), target[0])
            if roll > 0.9:
                replay_socket.sendto(bytes(buffer[:length]), target[0])
            return False
        return should_drop
    replay_socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    port = free_port()
    target = [("127.0.0.1", port)]
    ctx = driver_context(aeron_dir=str(shm_dir / "chaos"))
    ctx.receive_loss_generator = factory
    try:
        with MediaDriver.launch(ctx) as driver, Aeron.connect(Context(driver.aeron_dir)) as client:
            channel = f"aeron:udp?endpoint=127.0.0.1:{port}"
            sub = client.add_subscription(channel, 1001)
            pub = client.add_publication(channel, 1001)
            wait_for(lambda: pub.is_connected and sub.image_count == 1)
            stream(pub, [sub], 2000, 100)
    finally:
        replay_socket.close()


def test_unreliable_subscription_gap_fills_instead_of_naking(shm_dir):
    ctx = driver_context(aeron_dir=str(shm_dir / "unreliable"))
    ctx.receive_loss_generator = lambda: LossGenerator.random(0.05, seed=11)
    with MediaDriver.launch(ctx) as driver, Aeron.connect(Context(driver.aeron_dir)) as client:
        channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
        sub = client.add_subscription(channel + "|reliable=false", 1001)
        pub = client.add_publication(channel, 1001)
        wait_for(lambda: pub.is_connected and sub.image_count == 1)
        got = Collector()
        for n in range(2000):
            while pub.offer(n.to_bytes(8, "little") * 8) < 0:
                sub.poll(got, 64)
            sub.poll(got, 64)
        wait_for(lambda: sub.images[0].position >= pub.position or sub.poll(got, 64) < 0, timeout_s=10,
                 invoke=lambda: sub.poll(got, 64))
        numbers = [int.from_bytes(m[:8], "little") for m in got.messages]
        assert numbers == sorted(numbers) and len(numbers) < 2000
        reader = client.counters_reader
        assert reader.get_counter_value(ctr.LOSS_GAP_FILLS) > 0
        assert reader.get_counter_value(ctr.NAK_MESSAGES_SENT) == 0


# -- multicast and flow control -----------------------------------------------------------------------------------

def _multicast_channel(extra=""):
    return f"aeron:udp?endpoint={multicast_group()}:{free_port()}|interface=127.0.0.1{extra}"


def test_multicast_reaches_two_subscriber_drivers(shm_dir):
    # fc=min: with the default max strategy a receiver that falls a window behind the fastest one is left behind
    # (its NAKs fall outside the sender's retransmit window), as in Aeron
    channel = _multicast_channel("|fc=min")
    with MediaDriver.launch(driver_context(aeron_dir=str(shm_dir / "a"))) as a, \
            MediaDriver.launch(driver_context(aeron_dir=str(shm_dir / "b"))) as b, \
            MediaDriver.launch(driver_context(aeron_dir=str(shm_dir / "p"))) as p, \
            Aeron.connect(Context(a.aeron_dir)) as ca, Aeron.connect(Context(b.aeron_dir)) as cb, \
            Aeron.connect(Context(p.aeron_dir)) as cp:
        subs = [ca.add_subscription(channel, 1001), cb.add_subscription(channel, 1001)]
        pub = cp.add_publication(channel, 1001)
        wait_for(lambda: pub.is_connected and all(s.image_count == 1 for s in subs))
        stream(pub, subs, 1000, 100)


@pytest.mark.parametrize("fc, held_back", [("min", True), ("max", False)])
def test_min_flow_control_holds_the_sender_behind_a_slow_receiver_and_max_does_not(shm_dir, fc, held_back):
    channel = _multicast_channel()
    with MediaDriver.launch(driver_context(aeron_dir=str(shm_dir / "fast"))) as fast, \
            MediaDriver.launch(driver_context(aeron_dir=str(shm_dir / "slow"))) as slow, \
            MediaDriver.launch(driver_context(aeron_dir=str(shm_dir / "p"))) as p, \
            Aeron.connect(Context(fast.aeron_dir)) as cf, Aeron.connect(Context(slow.aeron_dir)) as cs, \
            Aeron.connect(Context(p.aeron_dir)) as cp:
        fast_sub = cf.add_subscription(channel, 1001)
        slow_sub = cs.add_subscription(channel, 1001)          # never polled
        pub = cp.add_publication(f"{channel}|fc={fc}", 1001)
        wait_for(lambda: pub.is_connected and fast_sub.image_count == 1 and slow_sub.image_count == 1)
        window = 32768                                          # receiver window of a 64 KiB term
        got = Collector()

        def offer():
            fast_sub.poll(got, 64)
            return pub.offer(bytes(1000))

        if held_back:
            # min tracks both receivers once both have reported; the sender then goes no further than the slow one's
            # window, while the fast one goes on reporting
            wait_for(lambda: counter_value(cp, "fc-receivers:") == 2, what="both receivers tracked")
            assert held_sender_limit(cp, pub, offer) <= window + window    # the slow receiver never consumed anything
        else:
            wait_for(lambda: offer() and counter_value(cp, "snd-lmt:") > 4 * window,
                     what="the sender past the slow receiver")


def test_tagged_flow_control_counts_only_tagged_receivers(shm_dir):
    channel = _multicast_channel()
    with MediaDriver.launch(driver_context(aeron_dir=str(shm_dir / "t"))) as t, \
            MediaDriver.launch(driver_context(aeron_dir=str(shm_dir / "u"))) as u, \
            MediaDriver.launch(driver_context(aeron_dir=str(shm_dir / "p"))) as p, \
            Aeron.connect(Context(t.aeron_dir)) as ct, Aeron.connect(Context(u.aeron_dir)) as cu, \
            Aeron.connect(Context(p.aeron_dir)) as cp:
        tagged = ct.add_subscription(f"{channel}|gtag=100", 1001)
        untagged = cu.add_subscription(channel, 1001)          # slow and untagged: ignored
        pub = cp.add_publication(f"{channel}|fc=tagged,g:100", 1001)
        wait_for(lambda: pub.is_connected and tagged.image_count == 1 and untagged.image_count == 1)
        stream(pub, [tagged], 1000, 200)


# -- multi-destination-cast ------------------------------------------------------------------------------------------

def test_dynamic_mdc_sends_to_every_subscriber_that_announces_itself(shm_dir):
    control = f"127.0.0.1:{free_port()}"
    with MediaDriver.launch(driver_context(aeron_dir=str(shm_dir / "p"))) as p, \
            MediaDriver.launch(driver_context(aeron_dir=str(shm_dir / "a"))) as a, \
            MediaDriver.launch(driver_context(aeron_dir=str(shm_dir / "b"))) as b, \
            Aeron.connect(Context(p.aeron_dir)) as cp, Aeron.connect(Context(a.aeron_dir)) as ca, \
            Aeron.connect(Context(b.aeron_dir)) as cb:
        # fc=min: with the default max strategy the slower destination may be left a window behind (as multicast)
        pub = cp.add_publication(f"aeron:udp?control={control}|control-mode=dynamic|fc=min", 1001)
        subs = [c.add_subscription(f"aeron:udp?endpoint=127.0.0.1:{free_port()}|control={control}", 1001)
                for c in (ca, cb)]
        wait_for(lambda: pub.is_connected and all(s.image_count == 1 for s in subs), timeout_s=15)
        stream(pub, subs, 500, 100)


# -- spy -------------------------------------------------------------------------------------------------------------

def test_spy_sees_what_the_network_sees(client):
    channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
    sub = client.add_subscription(channel, 1001)
    pub = client.add_publication(channel, 1001)
    spy = client.add_subscription(f"aeron-spy:{channel}", 1001)
    wait_for(lambda: pub.is_connected and sub.image_count == 1 and spy.image_count == 1)
    stream(pub, [sub, spy], 500, 100)


# -- hostile datagrams -----------------------------------------------------------------------------------------------

def test_garbage_at_both_endpoints_is_counted_and_the_stream_goes_on(client):
    port = free_port()
    channel = f"aeron:udp?endpoint=127.0.0.1:{port}"
    sub = client.add_subscription(channel, 1001)
    pub = client.add_publication(channel, 1001)
    wait_for(lambda: pub.is_connected and sub.image_count == 1)
    source_port = int(sub.images[0].source_identity.rsplit(":", 1)[1])
    rng = random.Random(5)
    hdr = struct.Struct("<iBBhiiiiq")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as attacker:
        for i in range(400):
            kind = i % 4
            if kind == 0:
                junk = rng.randbytes(rng.randrange(0, 100))
            elif kind == 1:                     # a DATA header claiming the image's stream, inconsistent
                junk = bytearray(64)
                hdr.pack_into(junk, 0, rng.randrange(-100, 5000), 0, 0xC0, 1, rng.randrange(-64, 1 << 20),
                              pub.session_id, 1001, rng.randrange(-5, 5), 0)
            elif kind == 2:                     # wrong version / unknown type
                junk = bytearray(40)
                struct.pack_into("<iBBh", junk, 0, 40, rng.randrange(1, 255), 0, rng.randrange(7, 0x7FFF))
            else:                               # short control frames (SM, NAK) towards the sender
                junk = bytearray(rng.randrange(8, 30))
                struct.pack_into("<iBBh", junk, 0, len(junk), 0, 0, rng.choice((2, 3, 4, 6)))
            attacker.sendto(bytes(junk), ("127.0.0.1", port if i % 2 == 0 else source_port))
    stream(pub, [sub], 500, 64)
    assert client.counters_reader.get_counter_value(ctr.INVALID_PACKETS) > 0


def test_manual_mdc_destinations_added_and_removed_mid_stream(shm_dir):
    with MediaDriver.launch(driver_context(aeron_dir=str(shm_dir / "p"))) as p, \
            MediaDriver.launch(driver_context(aeron_dir=str(shm_dir / "a"))) as a, \
            MediaDriver.launch(driver_context(aeron_dir=str(shm_dir / "b"))) as b, \
            Aeron.connect(Context(p.aeron_dir)) as cp, Aeron.connect(Context(a.aeron_dir)) as ca, \
            Aeron.connect(Context(b.aeron_dir)) as cb:
        ports = [free_port(), free_port()]
        subs = [c.add_subscription(f"aeron:udp?endpoint=127.0.0.1:{port}", 1001) for c, port in zip((ca, cb), ports)]
        pub = cp.add_exclusive_publication("aeron:udp?control-mode=manual", 1001)
        pub.add_destination(f"aeron:udp?endpoint=127.0.0.1:{ports[0]}")
        wait_for(lambda: pub.is_connected and subs[0].image_count == 1)
        first = stream(pub, [subs[0]], 200, 64)[0]
        pub.add_destination(f"aeron:udp?endpoint=127.0.0.1:{ports[1]}")       # joins mid-stream
        wait_for(lambda: subs[1].image_count == 1, invoke=lambda: pub.offer(bytes(64)) and time.sleep(0.001))
        assert subs[1].images[0].join_position > 0
        wait_for(lambda: counter_value(ca, "rcv-hwm:") == counter_value(cp, "snd-pos:") == pub.position,
                 invoke=lambda: subs[0].poll(Collector(), 64), what="everything sent so far at the first destination")
        pub.remove_destination(f"aeron:udp?endpoint=127.0.0.1:{ports[0]}")
        wait_for(lambda: counter_value(cp, "mdc-num-dest:") == 1, what="the sender without the removed destination")
        hwm = counter_value(ca, "rcv-hwm:")
        for _ in range(50):
            while pub.offer(bytes(64)) < 0:
                subs[1].poll(Collector(), 64)
            subs[1].poll(Collector(), 64)
        wait_for(lambda: counter_value(cb, "rcv-hwm:") >= pub.position, invoke=lambda: subs[1].poll(Collector(), 64))
        assert counter_value(ca, "rcv-hwm:") == hwm     # the removed destination gets no more data
        with pytest.raises(Exception) as info:
            pub.remove_destination("aeron:udp?endpoint=127.0.0.1:1|bogus")
        assert "bogus" in str(info.value)


def test_cubic_congestion_control_measures_rtt_and_counts_it(shm_dir):
    ctx = driver_context(aeron_dir=str(shm_dir / "cubic"), cubic_congestion_control_measure_rtt=True,
                         cubic_congestion_control_initial_rtt_ns=1 * MS)
    with MediaDriver.launch(ctx) as driver, Aeron.connect(Context(driver.aeron_dir)) as client:
        channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
        sub = client.add_subscription(channel + "|cc=cubic", 1001)
        pub = client.add_publication(channel, 1001)
        wait_for(lambda: pub.is_connected and sub.image_count == 1)
        stream(pub, [sub], 500, 100)
        wait_for(lambda: counter_value(client, "rcv-cc-cubic-rtt:") > 0)      # RTTM request → reply → RTT
        assert 0 < counter_value(client, "rcv-cc-cubic-wnd:") <= 32768
        labels = [r.label for r in client.counters_reader.counters() if r.type_id == ctr.DRIVER_PER_IMAGE_TYPE_ID]
        assert [label.split(":")[0] for label in labels] == ["rcv-cc-cubic-rtt", "rcv-cc-cubic-wnd"]


def test_close_with_live_udp_and_ipc_resources_releases_every_counter_handle_and_unmaps_cnc(shm_dir):
    # every publication, image, spy position and endpoint status counter holds a view of the counters section:
    # the driver must release them all at close, or cnc.dat stays mapped
    ctx = driver_context(aeron_dir=str(shm_dir / "close"))
    driver = MediaDriver.launch(ctx)
    try:
        with Aeron.connect(Context(driver.aeron_dir)) as client:
            channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
            sub = client.add_subscription(channel, 1001)
            pub = client.add_publication(channel, 1001)
            spy = client.add_subscription(f"aeron-spy:{channel}", 1001)
            ipc_sub = client.add_subscription("aeron:ipc", 1002)
            client.add_publication("aeron:ipc", 1002)
            client.add_publication("aeron:udp?control-mode=manual", 1003)       # an MDC endpoint and its counter
            wait_for(lambda: pub.is_connected and sub.image_count == 1 and spy.image_count == 1
                     and ipc_sub.image_count == 1)
            conductor = driver.conductor
            driver.close()
    finally:
        driver.close()
    assert conductor.cnc.is_closed
    assert conductor.counters_values.is_closed
