# SPDX-License-Identifier: Apache-2.0
"""Loss recovery with exact accounting: the C driver's fixed-loss and multi-gap-loss interceptors at our receive
endpoint, NAKs and retransmits counted on both sides, loss-report.dat entries as LossReport writes them
(one observation per distinct gap, bytes counted once, epoch-millisecond timestamps)."""
from __future__ import annotations

import time

import pytest

from aeron import Aeron, Context, MediaDriver
from aeron._core import counters as ctr
from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.loss_generator import LossGenerator
from aeron._core.loss_report import read_loss_report
from tests.driver.udp_helpers import (
    counter,
    driver_context,
    free_port,
    stream,
    wait_for,
)

pytestmark = pytest.mark.timeout(60)
FRAME = 1408                      # 1376-byte messages fill the MTU: one frame per datagram
TERM = 65536


def position_after(count):
    """46 frames fill 64768 bytes of a 64 KiB term; a 768-byte PAD ends it."""
    per_term = TERM // FRAME
    return count // per_term * TERM + count % per_term * FRAME


def run_lossy(shm_dir, generator, count=60):
    """Stream ``count`` MTU-sized messages from term 0 through a driver whose receive endpoint drops what
    ``generator`` selects; returns (counters, loss report entries, image, sub channel, time window)."""
    ctx = driver_context(aeron_dir=str(shm_dir / "lossy"))
    ctx.receive_loss_generator = lambda: generator
    started_ms = time.time_ns() // 1_000_000
    with MediaDriver.launch(ctx) as driver, Aeron.connect(Context(driver.aeron_dir)) as client:
        channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
        sub = client.add_subscription(channel, 1001)
        pub = client.add_exclusive_publication(f"{channel}|init-term-id=0|term-id=0|term-offset=0", 1001)
        wait_for(lambda: pub.is_connected and sub.image_count == 1)
        stream(pub, [sub], count, FRAME - 32)
        image = sub.images[0]
        reader = client.counters_reader
        wait_for(lambda: counter(client, "snd-naks-received:").value == counter(client, "rcv-naks-sent:").value)
        values = {
            "rcv-naks-sent": counter(client, "rcv-naks-sent:").value,
            "snd-naks-received": counter(client, "snd-naks-received:").value,
            "naks sent": reader.get_counter_value(ctr.NAK_MESSAGES_SENT),
            "naks received": reader.get_counter_value(ctr.NAK_MESSAGES_RECEIVED),
            "retransmits": reader.get_counter_value(ctr.RETRANSMITS_SENT),
            "retransmitted bytes": reader.get_counter_value(ctr.RETRANSMITTED_BYTES),
            "gap fills": reader.get_counter_value(ctr.LOSS_GAP_FILLS),
            "position": image.position,
        }
        identity = (image.session_id, image.source_identity)
        entries = read_loss_report(AtomicBuffer(bytearray((shm_dir / "lossy" / "loss-report.dat").read_bytes())))
    return values, entries, identity, channel, (started_ms, time.time_ns() // 1_000_000)


def check_entry(entry, identity, channel, window, observations, bytes_lost):
    assert (entry.session_id, entry.source) == identity
    assert (entry.stream_id, entry.channel) == (1001, channel)
    assert (entry.observation_count, entry.total_bytes_lost) == (observations, bytes_lost)
    assert window[0] <= entry.first_observation_timestamp <= entry.last_observation_timestamp <= window[1]


def test_fixed_loss_is_one_gap_naked_retransmitted_and_reported_once(shm_dir):
    # fixed-loss drops the consecutive datagrams of term 0 from the first one until offset 3 × 1408 is covered
    generator = LossGenerator.fixed(0, 3 * FRAME, 1)
    values, entries, identity, channel, window = run_lossy(shm_dir, generator)
    assert generator.dropped == 4
    assert values["position"] == position_after(60) == 85248
    assert values["rcv-naks-sent"] >= 1
    assert values["rcv-naks-sent"] == values["snd-naks-received"] == values["naks sent"] == values["naks received"]
    assert values["retransmits"] >= 1 and values["retransmitted bytes"] >= 4 * FRAME
    assert values["gap fills"] == 0
    assert len(entries) == 1
    check_entry(entries[0], identity, channel, window, 1, 4 * FRAME)


def test_multi_gap_loss_counts_each_gap_once(shm_dir):
    # multi-gap-loss drops the datagram covering each multiple of 8 KiB in term 0, five times, each once
    generator = LossGenerator.multi_gap(0, 8192, 1, 5)
    values, entries, identity, channel, window = run_lossy(shm_dir, generator)
    assert generator.dropped == 5
    assert values["position"] == position_after(60) == 85248
    assert values["rcv-naks-sent"] >= 5 and values["retransmits"] >= 5
    assert values["retransmitted bytes"] >= 5 * FRAME
    assert len(entries) == 1
    # five distinct 1408-byte gaps; the term-ending PAD (a 32-byte datagram) is not a loss
    check_entry(entries[0], identity, channel, window, 5, 5 * FRAME)


def test_random_loss_of_every_frame_type_is_still_recovered(shm_dir):
    # drop SETUPs, heartbeats, RTTMs and DATA alike (mask: every type), 10 %
    generator = LossGenerator.random(0.10, seed=21, msg_type_mask=0xFFFF)
    values, entries, identity, channel, window = run_lossy(shm_dir, generator, count=400)
    assert generator.dropped > 0
    assert values["position"] == position_after(400)
    assert len(entries) == 1
    assert entries[0].observation_count >= 1 and entries[0].total_bytes_lost >= FRAME


@pytest.mark.parametrize("kind", ["reorder", "duplicate"])
def test_reordered_and_duplicated_datagrams_still_give_every_message_once_in_order(shm_dir, kind):
    # 10 % of the DATA datagrams held back past 3 more (a gap, a NAK or the late frame fills it) or delivered twice
    generator = LossGenerator.from_args(kind, "rate=0.1|seed=17|depth=3")
    values, entries, *_ = run_lossy(shm_dir, generator, count=400)
    assert values["position"] == position_after(400)            # stream() checked each message, once, in order
    if kind == "reorder":
        assert generator.delayed > 10 and generator.duplicated == 0
    else:
        assert generator.duplicated > 10 and generator.delayed == 0 and entries == []    # a duplicate is no loss


def test_reorder_and_duplicate_are_driver_settings(shm_dir):
    from aeron.common.errors import ConfigurationError
    from aeron.driver.media_driver import Context as MediaDriverContext
    ctx = MediaDriverContext({"aeron.udp.channel.incoming.interceptors": "reorder",
                              "aeron.udp.channel.transport.bindings.reorder.args": "rate=0.2|seed=1|depth=2"}, environ={})
    generator = ctx.loss_generator_factory()()
    assert generator.kind == LossGenerator.reorder(0.1).kind
    ctx = MediaDriverContext({"aeron.udp.channel.incoming.interceptors": "duplicate",
                              "aeron.udp.channel.transport.bindings.duplicate.args": "rate=0.2|depth=-1"}, environ={})
    with pytest.raises(ConfigurationError):
        ctx.loss_generator_factory()
    assert MediaDriverContext({}, environ={}).loss_generator_factory() is None              # off by default


def test_the_interceptor_list_is_a_chain(shm_dir):
    from aeron.driver.media_driver import Context as MediaDriverContext
    ctx = MediaDriverContext({"aeron.udp.channel.incoming.interceptors": "loss, reorder,duplicate",
                              "aeron.udp.channel.transport.bindings.loss.args": "rate=0.05|seed=1",
                              "aeron.udp.channel.transport.bindings.reorder.args": "rate=0.1|seed=2|depth=2",
                              "aeron.udp.channel.transport.bindings.duplicate.args": "rate=0.1|seed=3"},
                             environ={})
    chain = ctx.loss_generator_factory()()
    kinds = []
    while chain is not None:
        kinds.append(chain.kind)
        chain = chain.next_generator
    assert kinds == [LossGenerator.random(0.1).kind, LossGenerator.reorder(0.1).kind, LossGenerator.duplicate(0.1).kind]
    # every message still arrives once, in order, through all three
    generator = ctx.loss_generator_factory()()
    values, *_ = run_lossy(shm_dir, generator, count=300)
    assert values["position"] == position_after(300)
    assert generator.dropped > 0 and generator.next_generator.delayed > 0
    assert generator.next_generator.next_generator.duplicated > 0
