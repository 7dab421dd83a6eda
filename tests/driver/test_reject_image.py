# SPDX-License-Identifier: Apache-2.0
"""REJECT_IMAGE (Image.reject): over UDP the image stops taking data and sends its senders error frames
(IMAGE_REJECTED and the reason) instead of status messages; the publication drops the receiver at once, logs the
error once and tells its clients (ON_PUBLICATION_ERROR, publication_error_frame_handler); the image goes at its
liveness timeout and the publisher comes back as a new image. Over IPC the subscribers lose the image at once and
rejoin, same correlation id, after a cool-down of the image liveness timeout. Modelled on Aeron's RejectImageTest."""
from __future__ import annotations

import contextlib
import types

import pytest

from aeron import Aeron, Context, MediaDriver
from aeron._core import counters as ctr
from aeron.common.command import ADDRESS_TYPE_IPV4
from aeron.common.errors import ErrorCode, IllegalStateError, RegistrationError
from aeron.tools.error_stat import read_errors
from tests.driver.udp_helpers import Collector, driver_context, free_port, offer, wait_for

pytestmark = pytest.mark.timeout(60)

MS = 1_000_000
REASON = "Needs to be closed"


class Events:
    def __init__(self):
        self.available, self.unavailable, self.errors = [], [], []


@contextlib.contextmanager
def host(shm_dir, name, events):
    ctx = driver_context(aeron_dir=str(shm_dir / name), image_liveness_timeout_ns=1234 * MS)
    with MediaDriver.launch(ctx) as driver:
        with Aeron.connect(Context(driver.aeron_dir, publication_error_frame_handler=events.errors.append,
                                   available_image_handler=events.available.append,
                                   unavailable_image_handler=events.unavailable.append)) as client:
            yield driver, client


def system(client, counter_id):
    return client.counters_reader.get_counter_value(counter_id)


def connected_pair(client, channel):
    pub = client.add_publication(channel, 1001)
    sub = client.add_subscription(channel, 1001)
    wait_for(lambda: pub.is_connected and sub.image_count == 1)
    offer(pub, b"this is a test message")
    got = Collector()
    wait_for(lambda: sub.poll(got, 1) > 0 or len(got.messages) > 0)
    image = sub.images[0]
    assert image.position == pub.position
    return pub, sub, image


def test_rejected_udp_image_disconnects_its_publisher_and_comes_back_as_a_new_image(shm_dir):
    port = free_port()
    channel = f"aeron:udp?endpoint=127.0.0.1:{port}"
    events = Events()
    with host(shm_dir, "d", events) as (driver, client):
        pub, sub, image = connected_pair(client, channel)
        before = {c: system(client, c) for c in (ctr.ERROR_FRAMES_RECEIVED, ctr.ERROR_FRAMES_SENT, ctr.ERRORS,
                                                  ctr.IMAGES_REJECTED)}
        image.reject(REASON)
        wait_for(lambda: not pub.is_connected, timeout_s=5)          # at once, not after the connection timeout
        assert system(client, ctr.IMAGES_REJECTED) == before[ctr.IMAGES_REJECTED] + 1
        wait_for(lambda: system(client, ctr.ERROR_FRAMES_SENT) > before[ctr.ERROR_FRAMES_SENT]
                 and system(client, ctr.ERROR_FRAMES_RECEIVED) > before[ctr.ERROR_FRAMES_RECEIVED])
        wait_for(lambda: events.errors, invoke=lambda: sub.poll(Collector(), 10))
        frame = events.errors[0]
        assert (frame.registration_id, frame.session_id, frame.stream_id) == (
            pub.original_registration_id, pub.session_id, 1001)
        assert (frame.error_code, frame.error_message) == (ErrorCode.IMAGE_REJECTED, REASON)
        assert (frame.address_type, str(frame.source_ip), frame.source_port) == (ADDRESS_TYPE_IPV4, "127.0.0.1", port)
        assert frame.destination_registration_id == -1 and frame.group_tag == -1
        # the image goes at its liveness timeout; the publisher's SETUPs then make a new one
        wait_for(lambda: events.unavailable and len(events.available) >= 2 and pub.is_connected, timeout_s=20)
        assert events.unavailable[0] is image and image.is_closed
        assert sub.image_count == 1 and sub.images[0] is not image
        assert sub.images[0].correlation_id != image.correlation_id
        assert len(events.errors) == 1                                # one error per receiver the publication knew
        assert system(client, ctr.ERRORS) == before[ctr.ERRORS] + 1
        assert system(client, ctr.ERROR_FRAMES_RECEIVED) - before[ctr.ERROR_FRAMES_RECEIVED] < 100
        texts = [record.text for record in read_errors(driver.aeron_dir)]
        assert any(REASON in text and "onPublicationError" in text for text in texts), texts
        got = Collector()
        offer(pub, b"after")
        wait_for(lambda: sub.poll(got, 10) > 0 or got.messages)
        assert got.messages == [b"after"]


def test_rejected_udp_image_error_frames_reach_a_publisher_on_another_driver(shm_dir):
    channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
    pub_events, sub_events = Events(), Events()
    with host(shm_dir, "p", pub_events) as (_, cp), host(shm_dir, "s", sub_events) as (_, cs):
        pub = cp.add_publication(channel, 1001)
        sub = cs.add_subscription(channel, 1001)
        wait_for(lambda: pub.is_connected and sub.image_count == 1)
        sub.images[0].reject(REASON)
        wait_for(lambda: pub_events.errors and not pub.is_connected)
        assert pub_events.errors[0].error_message == REASON and not sub_events.errors
        # the subscriber's driver counts its error frame once the send returns: the publisher's may be first
        wait_for(lambda: system(cs, ctr.ERROR_FRAMES_SENT) > 0 and system(cp, ctr.ERROR_FRAMES_RECEIVED) > 0)
        assert system(cs, ctr.IMAGES_REJECTED) == 1 and system(cp, ctr.IMAGES_REJECTED) == 0


def test_rejected_ipc_image_is_gone_at_once_and_rejoins_after_the_cool_down(shm_dir):
    events = Events()
    with host(shm_dir, "d", events) as (driver, client):
        pub, sub, image = connected_pair(client, "aeron:ipc")
        before_errors = system(client, ctr.ERRORS)
        image.reject(REASON)
        wait_for(lambda: events.unavailable and events.errors, invoke=lambda: sub.poll(Collector(), 10))
        assert events.unavailable == [image] and sub.image_count == 0 and not pub.is_connected
        frame = events.errors[0]
        assert (frame.registration_id, frame.error_code, frame.error_message) == (
            pub.original_registration_id, ErrorCode.IMAGE_REJECTED, REASON)
        assert (frame.address_type, str(frame.source_ip), frame.source_port) == (ADDRESS_TYPE_IPV4, "127.0.0.1", 0)
        assert system(client, ctr.IMAGES_REJECTED) == 1 and system(client, ctr.ERRORS) == before_errors + 1
        late = client.add_subscription("aeron:ipc", 1001)          # no link during the cool-down either
        assert late.image_count == 0
        wait_for(lambda: sub.image_count == 1 and late.image_count == 1 and pub.is_connected, timeout_s=10)
        assert sub.images[0] is not image and sub.images[0].correlation_id == image.correlation_id
        got = Collector()
        offer(pub, b"after")
        wait_for(lambda: sub.poll(got, 10) > 0 or got.messages)
        assert got.messages == [b"after"]


def test_reject_refusals(shm_dir):
    events = Events()
    with host(shm_dir, "d", events) as (_, client):
        pub, sub, image = connected_pair(client, "aeron:ipc")
        with pytest.raises(RegistrationError) as info:
            image.reject("x" * 1024)
        assert info.value.error_code == ErrorCode.GENERIC_ERROR and "1023" in str(info.value)
        with pytest.raises(RegistrationError) as info:
            client._conductor.reject_image(types.SimpleNamespace(correlation_id=1 << 40), 0, REASON)
        assert info.value.error_code == ErrorCode.GENERIC_ERROR and "Unable to resolve image" in str(info.value)
        assert system(client, ctr.IMAGES_REJECTED) == 0
        pub.close()
        wait_for(lambda: sub.image_count == 0, invoke=lambda: sub.poll(Collector(), 10))
        with pytest.raises(IllegalStateError):
            image.reject(REASON)                                    # closed on the client side


def test_an_error_frame_from_a_dynamic_mdc_receiver_names_no_destination_id(shm_dir):
    """Only manual MDC destinations have registration ids; a receiver that joined a dynamic MDC publication by its
    status messages is reported with destination registration id -1 (NULL_VALUE), and its group tag."""
    control, port = free_port(), free_port()
    events = Events()
    with host(shm_dir, "d", events) as (_, client):
        pub = client.add_publication(f"aeron:udp?control-mode=dynamic|control=127.0.0.1:{control}|fc=tagged,g:1001",
                                     1001)
        sub = client.add_subscription(f"aeron:udp?control=127.0.0.1:{control}|endpoint=127.0.0.1:{port}|gtag=1001",
                                      1001)
        wait_for(lambda: pub.is_connected and sub.image_count == 1)
        sub.images[0].reject(REASON)
        wait_for(lambda: events.errors, invoke=lambda: sub.poll(Collector(), 10))
        frame = events.errors[0]
        assert (frame.destination_registration_id, frame.group_tag, frame.source_port) == (-1, 1001, port)
