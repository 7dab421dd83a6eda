# SPDX-License-Identifier: Apache-2.0
"""A second subscription of a stream whose first subscription has not read it yet joins where the first one is
(the image's slowest working subscriber, a spy at the sender position), even after the publication closed while
its data is still unread: IPC, UDP and spy, as Aeron's MinPositionSubscriptionTest."""
from __future__ import annotations


import pytest

from aeron import Aeron, Context, MediaDriver
from tests.driver.udp_helpers import driver_context, free_port, wait_for, wait_for_ticks

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize("kind", ["ipc", "udp", "spy"])
def test_a_second_subscription_joins_at_the_first_ones_position(kind):
    publication_channel = "aeron:ipc" if kind == "ipc" else f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
    subscription_channel = f"aeron-spy:{publication_channel}" if kind == "spy" else publication_channel
    with MediaDriver.launch_embedded(driver_context(spies_simulate_connection=True)) as driver, \
            Aeron.connect(Context(driver.aeron_dir)) as client:
        first = client.add_subscription(subscription_channel, 1001)
        publication = client.add_publication(publication_channel, 1001)
        wait_for(lambda: publication.offer(b"m" * 128) > 0)
        session_id = publication.session_id
        publication.close()
        image_one = wait_for(lambda: first.image_by_session_id(session_id))
        assert image_one.join_position == 0
        if kind == "spy":       # timer intervals pass: unread by its spy, the closed publication stays (draining)
            wait_for_ticks(client, 10)
            assert first.image_by_session_id(session_id) is image_one
        if kind == "udp":          # the receiver has the message: the image's receiver position is past the first's
            wait_for(lambda: any(client.counters_reader.get_counter_value(i) >= 160 for i in range(64)
                                 if (client.counters_reader.get_counter_label(i) or "").startswith("rcv-pos:")))
        second = client.add_subscription(subscription_channel, 1001)
        image_two = wait_for(lambda: second.image_by_session_id(session_id))
        assert image_two.join_position == image_one.join_position
        assert second.poll(lambda buffer, offset, length, header: None, 10) == 1
