# SPDX-License-Identifier: Apache-2.0
"""Multicast on loopback (224.0.1.x, interface 127.0.0.1): one receive endpoint shared by the subscriptions of a
driver, loss at one receiver recovered by its (randomly delayed) NAKs while the others are not disturbed, and the
control group carrying status messages."""
from __future__ import annotations

import contextlib

import pytest

from aeron import Aeron, Context, MediaDriver
from aeron._core import counters as ctr
from aeron._core.loss_generator import LossGenerator
from tests.driver.udp_helpers import (counter, driver_context, free_port, multicast_available, multicast_group,
                                      stream, wait_for)

pytestmark = [pytest.mark.timeout(60),
              pytest.mark.skipif(not multicast_available(), reason="kernel refuses multicast joins on loopback")]


def channel(extra=""):
    return f"aeron:udp?endpoint={multicast_group()}:{free_port()}|interface=127.0.0.1{extra}"


def test_subscriptions_of_one_driver_share_the_multicast_endpoint(shm_dir):
    ch = channel()
    with MediaDriver.launch(driver_context(aeron_dir=str(shm_dir / "r"))) as r, \
            MediaDriver.launch(driver_context(aeron_dir=str(shm_dir / "p"))) as p, \
            Aeron.connect(Context(r.aeron_dir)) as cr, Aeron.connect(Context(p.aeron_dir)) as cp:
        subs = [cr.add_subscription(ch, 1001), cr.add_subscription(ch, 1001)]
        pub = cp.add_exclusive_publication(ch, 1001)
        wait_for(lambda: pub.is_connected and all(s.image_count == 1 for s in subs))
        stream(pub, subs, 500, 200)
        group, port = ch.split("endpoint=")[1].split("|")[0].split(":")
        channels = [rec for rec in cr.counters_reader.counters()
                    if rec.type_id == ctr.DRIVER_RECEIVE_CHANNEL_STATUS_TYPE_ID]
        assert [rec.label for rec in channels] == [f"rcv-channel: {ch} {group}:{port}"]     # one endpoint, bound
        # one image, one rcv-hwm/rcv-pos, one sub-pos per subscription
        labels = [rec.label.split(":")[0] for rec in cr.counters_reader.counters()]
        assert (labels.count("rcv-hwm"), labels.count("rcv-pos"), labels.count("sub-pos")) == (1, 1, 2)
        # the sender's status messages arrive on the control group (data group + 1)
        assert cp.counters_reader.get_counter_value(ctr.STATUS_MESSAGES_RECEIVED) > 0


def test_loss_at_one_receiver_is_recovered_by_its_naks_and_the_others_see_no_gap(shm_dir):
    ch = channel("|fc=min")
    lossy_ctx = driver_context(aeron_dir=str(shm_dir / "lossy"))
    lossy_ctx.receive_loss_generator = lambda: LossGenerator.random(0.05, seed=5)
    with contextlib.ExitStack() as stack:
        lossy = stack.enter_context(MediaDriver.launch(lossy_ctx))
        clean = stack.enter_context(MediaDriver.launch(driver_context(aeron_dir=str(shm_dir / "clean"))))
        sender = stack.enter_context(MediaDriver.launch(driver_context(aeron_dir=str(shm_dir / "p"))))
        cl, cc, cp = (stack.enter_context(Aeron.connect(Context(d.aeron_dir))) for d in (lossy, clean, sender))
        subs = [cl.add_subscription(ch, 1001), cc.add_subscription(ch, 1001)]
        pub = cp.add_exclusive_publication(ch, 1001)
        wait_for(lambda: pub.is_connected and all(s.image_count == 1 for s in subs))
        stream(pub, subs, 1500, 300)
        assert counter(cl, "rcv-naks-sent:").value > 0
        assert counter(cc, "rcv-naks-sent:").value == 0
        assert cp.counters_reader.get_counter_value(ctr.RETRANSMITS_SENT) > 0
        assert subs[0].images[0].position == subs[1].images[0].position == pub.position
