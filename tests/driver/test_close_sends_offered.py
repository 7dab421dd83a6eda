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


class _Sender:
    """A sender whose send passes say what they did."""

    def __init__(self, shares: bool, over: bool, fails: bool = False) -> None:
        self.shares_conductor_thread, self.cycles_over, self.fails, self.sends = shares, over, fails, 0

    def send_remaining(self) -> None:
        self.sends += 1
        if self.fails:
            raise OSError("the socket went away")


@pytest.mark.parametrize("shares, over, sent", [(True, False, 1), (False, True, 1), (False, False, 0)])
def test_the_close_sends_only_when_no_sender_thread_can_still_run(shm_dir, shares, over, sent):
    # a sender thread whose runner did not stop (its close timed out) may still run the same send passes: two
    # threads sending from one position would send data twice
    driver = MediaDriver.launch(Context(environ={}, aeron_dir=str(shm_dir / "a"), threading_mode=ThreadingMode.INVOKER))
    conductor = driver._conductor
    real, conductor.sender = conductor.sender, _Sender(shares, over)
    try:
        conductor.on_close()
        assert conductor.sender.sends == sent
    finally:
        conductor.sender = real
        driver.close()


def test_an_error_sending_at_the_close_is_logged_and_the_close_goes_on(shm_dir):
    driver = MediaDriver.launch(Context(environ={}, aeron_dir=str(shm_dir / "a"), threading_mode=ThreadingMode.INVOKER))
    conductor = driver._conductor
    real, conductor.sender = conductor.sender, _Sender(True, False, fails=True)
    logged = []
    original = conductor._log_error
    conductor._log_error = lambda code, detail, exc=None: logged.append(detail) or original(code, detail, exc)
    try:
        conductor.on_close()
        assert conductor.sender.sends == 1 and any("the socket went away" in d for d in logged)
    finally:
        conductor.sender = real
        driver.close()
