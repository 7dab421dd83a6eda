# SPDX-License-Identifier: Apache-2.0
"""REJECT_IMAGE across implementations: an image our driver rejects sends error frames that `aeronmd`'s
publication acts on (disconnect, ON_PUBLICATION_ERROR to its client), and our client's Image.reject on `aeronmd`
makes it send error frames that our driver's publication acts on. Needs AERON_C_BIN."""
from __future__ import annotations

import contextlib

import pytest

from aeron import Aeron, Context, MediaDriver
from aeron._core import counters as ctr
from aeron.common.errors import ErrorCode
from tests.driver.udp_helpers import driver_context, free_port, wait_for

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

REASON = "rejected across drivers"


@contextlib.contextmanager
def clients(shm_dir, aeronmd):
    """(our client on our driver, our client on aeronmd), each collecting publication error frames."""
    errors = {"ours": [], "theirs": []}
    with MediaDriver.launch(driver_context(aeron_dir=str(shm_dir / "ours"))) as driver, \
            Aeron.connect(Context(driver.aeron_dir, publication_error_frame_handler=errors["ours"].append)) as ours, \
            Aeron.connect(Context(aeronmd, publication_error_frame_handler=errors["theirs"].append)) as theirs:
        yield ours, theirs, errors


@pytest.mark.parametrize("rejecting_side", ["ours", "theirs"])
def test_rejected_image_disconnects_the_other_drivers_publication(aeronmd, shm_dir, rejecting_side):
    with clients(shm_dir, aeronmd) as (ours, theirs, errors):
        subscriber, publisher = (ours, theirs) if rejecting_side == "ours" else (theirs, ours)
        publisher_side = "theirs" if rejecting_side == "ours" else "ours"
        port = free_port()
        channel = f"aeron:udp?endpoint=127.0.0.1:{port}"
        sub = subscriber.add_subscription(channel, 1001)
        pub = publisher.add_publication(channel, 1001)
        wait_for(lambda: pub.is_connected and sub.image_count == 1, timeout_s=20)
        sub.images[0].reject(REASON)
        wait_for(lambda: errors[publisher_side] and not pub.is_connected, timeout_s=10)
        frame = errors[publisher_side][0]
        assert (frame.registration_id, frame.session_id, frame.stream_id) == (
            pub.original_registration_id, pub.session_id, 1001)
        assert (frame.error_code, frame.error_message) == (ErrorCode.IMAGE_REJECTED, REASON)
        assert (str(frame.source_ip), frame.source_port) == ("127.0.0.1", port)
        reader = lambda client: client.counters_reader.get_counter_value   # noqa: E731
        assert reader(subscriber)(ctr.IMAGES_REJECTED) == 1 and reader(subscriber)(ctr.ERROR_FRAMES_SENT) > 0
        assert reader(publisher)(ctr.ERROR_FRAMES_RECEIVED) > 0
        assert not errors[rejecting_side]
