# SPDX-License-Identifier: Apache-2.0
"""A driver closed right after a client offered sends what was offered (within flow control) before it closes its
sockets: an application that closes its cluster client and then its embedded driver at once (AeronCluster.close's
SessionCloseRequest) loses nothing the sender could have sent. The publishing driver runs in INVOKER mode, so that
no duty cycle runs between the offer and the close."""
from __future__ import annotations

import pytest

from aeron import Aeron, Context as ClientContext, MediaDriver
from aeron.driver.media_driver import Context, ThreadingMode
from tests.driver.udp_helpers import Collector
from tests.support import InvokerThread, driver_context, free_port, wait_for

pytestmark = pytest.mark.timeout(60)


def test_data_offered_just_before_the_driver_closes_is_sent(shm_dir):
    publisher = MediaDriver.launch(Context(environ={}, aeron_dir=str(shm_dir / "a"),
                                           threading_mode=ThreadingMode.INVOKER))
    invoker = InvokerThread(publisher)
    channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
    collector = Collector()
    try:
        with MediaDriver.launch(driver_context(aeron_dir=str(shm_dir / "b"))) as subscriber, \
                Aeron.connect(ClientContext(subscriber.aeron_dir)) as receiving:
            sub = receiving.add_subscription(channel, 1001)
            sending = Aeron.connect(ClientContext(publisher.aeron_dir))
            try:
                pub = sending.add_publication(channel, 1001)
                wait_for(lambda: pub.is_connected and sub.image_count == 1, what="connected")
                assert pub.offer(b"first") > 0
                wait_for(lambda: sub.poll(collector, 10) or collector.messages, what="the first message")
                invoker.stop()
                # no duty cycle of the publishing driver from here: only its close can send these
                assert pub.offer(b"last words") > 0
                assert pub.offer(b"and goodbye") > 0
                publisher.close()
            finally:
                sending.close()
            wait_for(lambda: sub.poll(collector, 10) or len(collector.messages) >= 3, what="the last messages")
            assert collector.messages == [b"first", b"last words", b"and goodbye"]
    finally:
        invoker.stop()
        publisher.close()
