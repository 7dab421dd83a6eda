# SPDX-License-Identifier: Apache-2.0
"""Channel timestamps: channel-snd-ts-offset (the sender writes the send time into each datagram's first DATA
frame, in the log), channel-rcv-ts-offset (the receiver writes the time it read the datagram) and
media-rcv-ts-offset (the kernel's receive time, SO_TIMESTAMPNS), each into the reserved value (`reserved`) or at an
offset into the payload when the payload has room. Overlapping offsets and an endpoint shared with other offsets
are refused. tests/interop/test_timestamps_interop.py runs the same tests across `aeronmd` and our driver."""
from __future__ import annotations

import contextlib
import struct
import time

import pytest

from aeron import Aeron, Context, MediaDriver
from aeron.client import FragmentAssembler
from aeron.common.errors import ErrorCode, RegistrationError
from tests.driver.udp_helpers import driver_context, free_port, offer, wait_for

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def pair(shm_dir):
    """(publishing client, subscribing client): here both on one of our drivers."""
    with MediaDriver.launch(driver_context(aeron_dir=str(shm_dir / "ours"))) as driver, \
            Aeron.connect(Context(driver.aeron_dir)) as client:
        yield client, client


class Received:
    def __init__(self):
        self.messages = []

    def __call__(self, buffer, offset, length, header):
        self.messages.append((buffer.get_bytes(offset, length), header.reserved_value))


def exchange(pub_client, sub_client, pub_params, sub_params, payloads):
    port = free_port()
    sub = sub_client.add_subscription(f"aeron:udp?endpoint=127.0.0.1:{port}{sub_params}", 1001)
    pub = pub_client.add_exclusive_publication(f"aeron:udp?endpoint=127.0.0.1:{port}{pub_params}", 1001)
    wait_for(lambda: pub.is_connected and sub.image_count == 1, timeout_s=20)
    got = Received()
    assembler = FragmentAssembler(got)
    before = time.time_ns()
    for count, payload in enumerate(payloads, 1):
        # one message per datagram: the send timestamp goes into a datagram's first frame only (as in Aeron)
        offer(pub, payload, step=lambda: sub.poll(assembler, 10))
        wait_for(lambda: len(got.messages) == count, invoke=lambda: sub.poll(assembler, 10))
    after = time.time_ns()
    return before, after, got.messages


def ns(payload, offset):
    return struct.unpack_from("<q", payload, offset)[0]


def test_send_timestamp_in_the_reserved_value_and_receive_timestamps_in_the_payload(pair):
    pub_client, sub_client = pair
    payloads = [bytes(64) for _ in range(20)] + [bytes(12)]         # the last too short for offset 8
    before, after, messages = exchange(pub_client, sub_client, "|channel-snd-ts-offset=reserved",
                                       "|channel-rcv-ts-offset=0|media-rcv-ts-offset=8", payloads)
    for payload, reserved in messages[:-1]:
        sent, received, media = reserved, ns(payload, 0), ns(payload, 8)
        assert before <= sent <= received <= after
        assert before <= media <= after and abs(received - media) < 1_000_000_000
        assert payload[16:] == bytes(48)
    short, reserved = messages[-1]
    assert before <= reserved <= after and short[8:] == bytes(4)    # no room for the media timestamp
    assert before <= ns(short, 0) <= after


def test_receive_timestamps_only_stamp_the_first_fragment_of_a_message(pair):
    pub_client, sub_client = pair
    big = bytes(3000)                                               # three fragments at the default MTU
    before, after, messages = exchange(pub_client, sub_client, "", "|channel-rcv-ts-offset=reserved", [big, big])
    for payload, reserved in messages:
        assert before <= reserved <= after and payload == big       # the payload itself is untouched


def test_no_timestamps_without_the_options(pair):
    pub_client, sub_client = pair
    _, _, messages = exchange(pub_client, sub_client, "", "", [bytes(32)] * 3)
    assert messages == [(bytes(32), 0)] * 3


def test_overlapping_offsets_are_refused(pair):
    _, sub_client = pair
    with pytest.raises(RegistrationError) as info:
        sub_client.add_subscription(
            f"aeron:udp?endpoint=127.0.0.1:{free_port()}|channel-rcv-ts-offset=0|media-rcv-ts-offset=4", 1001)
    assert "overlap" in str(info.value)


def test_an_endpoint_shared_with_other_timestamp_offsets_is_refused(pair):
    pub_client, sub_client = pair
    channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
    sub_client.add_subscription(f"{channel}|channel-rcv-ts-offset=reserved", 1001)
    with pytest.raises(RegistrationError) as info:
        sub_client.add_subscription(channel, 1002)
    assert info.value.error_code == ErrorCode.GENERIC_ERROR and "channel-rcv-ts-offset" in str(info.value)
    pub_client.add_publication(f"{channel}|channel-snd-ts-offset=0", 1001)
    with pytest.raises(RegistrationError) as info:
        pub_client.add_publication(f"{channel}|channel-snd-ts-offset=8", 1002)
    assert info.value.error_code == ErrorCode.GENERIC_ERROR and "channel-snd-ts-offset" in str(info.value)
