# SPDX-License-Identifier: Apache-2.0
"""Hostile datagrams at a live driver: random bytes and mutated DATA/PAD/SETUP/SM/NAK/RTTM/ERR frames thrown with a
plain socket at a receive endpoint and at a send endpoint's control port. Datagrams failing aeron_is_frame_valid are
counted in "Invalid packets" (each at most once), nothing crashes, and a live stream keeps delivering every message
in order after each batch."""
from __future__ import annotations

import socket
import struct
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aeron import Aeron, Context, MediaDriver
from aeron._core import counters as ctr
from aeron._core import frames as f
from tests.driver.udp_helpers import (Collector, counter, driver_context, free_port, numbered, receive_queues_empty,
                                      wait_for, wait_for_ticks)

pytestmark = pytest.mark.timeout(120)

DATA_HEADER = struct.Struct("<iBBhiiiiq")     # length, version, flags, type, term offset, session, stream, term id, rsv
HEADER_LENGTHS = {0x00: 32, 0x01: 32, 0x02: 28, 0x03: 36, 0x04: 40, 0x05: 40, 0x06: 40, 0x07: 22, 0x0B: 20}


def invalid_by_reference(datagram: bytes) -> bool:
    """aeron_is_frame_valid, written out independently of aeron._core.frames."""
    if len(datagram) < 8:
        return True
    frame_length, version, _flags, frame_type = struct.unpack_from("<iBBH", datagram)
    if frame_length < 0 or version != 0 or frame_type not in HEADER_LENGTHS:
        return True
    if len(datagram) < HEADER_LENGTHS[frame_type]:
        return True
    if frame_type in (0x00, 0x01):
        return len(datagram) % 32 != 0
    return frame_length > len(datagram)


class Live:
    """One driver: a session-specific subscription and an exclusive publication on stream 1001 (the stream that must
    go on), and a subscription on stream 2002 so forged SETUPs and DATA reach the image path."""

    def __init__(self):
        self.driver = MediaDriver.launch_embedded(driver_context(image_liveness_timeout_ns=500_000_000))
        self.client = Aeron.connect(Context(self.driver.aeron_dir))
        self.port = free_port()
        self.channel = f"aeron:udp?endpoint=127.0.0.1:{self.port}"
        self.pub = self.client.add_exclusive_publication(self.channel, 1001)
        self.sub = self.client.add_subscription(f"{self.channel}|session-id={self.pub.session_id}", 1001)
        self.other = self.client.add_subscription(self.channel, 2002)
        wait_for(lambda: self.pub.is_connected and self.sub.image_count == 1)
        self.initial_term_id = self.sub.images[0].initial_term_id
        bound = counter(self.client, "snd-local-sockaddr:").label.rsplit(":", 1)[1]
        self.control_port = int(bound)
        self.attacker = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.next_message = 0
        self.got = Collector()
        self._settled: int | None = None     # the invalid-packet count at rest, until the next datagram is thrown

    def errors(self) -> list:
        import os

        from aeron._core.cnc import CncFile
        from aeron._core.error_log import read_error_log
        cnc = CncFile.map_existing(os.path.join(self.driver.aeron_dir, "cnc.dat"))
        return [record.text for record in read_error_log(cnc.error_log_buffer())]

    def invalid(self) -> int:
        return self.client.counters_reader.get_counter_value(ctr.INVALID_PACKETS)

    def settled_invalid(self) -> int:
        """The invalid-packet count once every datagram thrown so far is dispatched: both sockets' receive queues empty
        (/proc/net/udp), then a timer tick of the driver's one thread (SHARED: its sender and receiver run in the same
        duty cycles as its conductor), so the duty cycle that read the last datagram has counted it. A datagram our
        driver counts beyond invalid_by_reference (an SM whose window breaks the sender's checks, as the C driver
        counts too) may still be queued when the lower-bound wait passes; without this it was counted in the next
        example (seen once in CI: 7 counts for 6 datagrams). Nothing thrown since the last call: that call's count,
        without waiting again."""
        if self._settled is None:
            wait_for(lambda: receive_queues_empty(self.port, self.control_port), 10, what="the thrown datagrams read")
            wait_for_ticks(self.client, 1)
            self._settled = self.invalid()
        return self._settled

    def throw(self, datagrams):
        self._settled = None
        for to_control, datagram in datagrams:
            self.attacker.sendto(datagram, ("127.0.0.1", self.control_port if to_control else self.port))

    def stream_goes_on(self, count=5):
        first = self.next_message
        deadline = time.monotonic() + 15
        sent = 0
        while len(self.got.messages) < first + count:
            assert time.monotonic() < deadline, ("stream stalled", sent, len(self.got.messages) - first)
            if sent < count and self.pub.offer(numbered(first + sent, 64)) > 0:
                sent += 1
            self.sub.poll(self.got, 64)
            self.other.poll(lambda *a: None, 64)
            time.sleep(0)
        self.next_message += count
        assert [int.from_bytes(m[:8], "little") for m in self.got.messages] == list(range(self.next_message))

    def close(self):
        self.attacker.close()
        self.client.close()
        self.driver.close()


@pytest.fixture(scope="module")
def live():
    target = Live()
    try:
        yield target
    finally:
        target.close()


# -- frame templates and mutations -------------------------------------------------------------------------------------

def templates(live: Live, session: int):
    """(to_control, frame) pairs: well-formed frames of every type, aimed where each type is dispatched."""
    pub_session = live.pub.session_id
    data = bytearray(64)
    DATA_HEADER.pack_into(data, 0, 64, 0, 0xC0, f.HDR_TYPE_DATA, 0, session, 2002, 10, 0)
    pad = bytearray(64)
    DATA_HEADER.pack_into(pad, 0, 64, 0, 0xC0, f.HDR_TYPE_PAD, 64, session, 2002, 10, 0)
    heartbeat = bytearray(32)
    f.encode_heartbeat(heartbeat, 0, session, 2002, 10, 128, 0xC0)
    setup = bytearray(f.SETUP_HEADER_LENGTH)
    f.encode_setup(setup, 0, session, 2002, 10, 10, 0, 65536, 1408, 0, 0)
    rttm = bytearray(f.RTTM_HEADER_LENGTH)
    f.encode_rttm(rttm, 0, session, 2002, 123, 0, 77, 0x80)
    sm = bytearray(f.SM_WITH_GROUP_TAG_LENGTH)
    # control frames for the live publication: its own term id, so mutations land near plausible values
    term_id = live.initial_term_id + (live.pub.position >> 16)
    f.encode_status_message(sm, 0, pub_session, 1001, term_id, 0, 32768, session, 5)
    nak = bytearray(f.NAK_HEADER_LENGTH)
    f.encode_nak(nak, 0, pub_session, 1001, term_id, 0, 64)
    err = bytearray(f.ERR_HEADER_LENGTH + 80)
    f.encode_error(err, 0, session, 1001, session, 2, "x" * 80)
    return [(False, data), (False, pad), (False, heartbeat), (False, setup), (False, rttm),
            (True, sm[:f.SM_HEADER_LENGTH]), (True, sm), (True, nak), (True, rttm), (True, err)]


mutation = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 127), st.integers(1, 255)),
    st.tuples(st.just("field"), st.sampled_from([0, 4, 5, 6, 8, 12, 16, 20, 24, 28, 32]),
              st.sampled_from([0, 1, -1, 31, 32, 33, 0x7FFFFFFF, -0x80000000, 65536, 65504])),
    st.tuples(st.just("truncate"), st.integers(0, 80), st.just(0)),
    st.tuples(st.just("extend"), st.integers(1, 64), st.integers(0, 255)),
)


def mutate(frame: bytearray, mutations) -> bytes:
    out = bytearray(frame)
    for kind, a, b in mutations:
        if kind == "flip" and out:
            out[a % len(out)] ^= b
        elif kind == "field" and a + 4 <= len(out):
            struct.pack_into("<i", out, a, b)
        elif kind == "truncate":
            del out[a:]
        elif kind == "extend":
            out += bytes([b]) * a
    return bytes(out)


datagram_spec = st.one_of(
    st.tuples(st.just("random"), st.booleans(), st.binary(min_size=0, max_size=160)),
    st.tuples(st.just("mutated"), st.integers(0, 9), st.lists(mutation, min_size=1, max_size=4)),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                     HealthCheck.too_slow])
@given(specs=st.lists(datagram_spec, min_size=1, max_size=12), session=st.integers(-2**31, 2**31 - 1))
def test_hostile_datagrams_are_counted_and_the_stream_goes_on(live, specs, session):
    if session == live.pub.session_id:
        session += 1
    frames = templates(live, session)
    batch = []
    for spec in specs:
        if spec[0] == "random":
            batch.append((spec[1], spec[2]))
        else:
            to_control, frame = frames[spec[1]]
            batch.append((to_control, mutate(frame, spec[2])))
    before = live.settled_invalid()
    live.throw(batch)
    # an empty datagram is not counted: our transports mark a slot dropped by a loss generator with length 0 (the C
    # driver's recvmmsg path counts it; reported as a known deviation)
    must_count = sum(invalid_by_reference(d) for _, d in batch if d)
    wait_for(lambda: live.invalid() - before >= must_count, timeout_s=5,
             what=lambda: f"invalid packets {live.invalid() - before} < {must_count} by invalid_by_reference")
    live.stream_goes_on()
    assert live.settled_invalid() - before <= len(batch)         # each datagram counted at most once


def test_each_class_of_reference_invalid_datagram_is_counted_exactly_once(live):
    live.stream_goes_on()
    wrong_version = bytearray(64)
    DATA_HEADER.pack_into(wrong_version, 0, 64, 1, 0xC0, f.HDR_TYPE_DATA, 0, 5, 2002, 10, 0)
    unknown_type = bytearray(64)
    struct.pack_into("<iBBH", unknown_type, 0, 64, 0, 0, 0x0C)
    negative_length = bytearray(64)
    DATA_HEADER.pack_into(negative_length, 0, -64, 0, 0xC0, f.HDR_TYPE_DATA, 0, 5, 2002, 10, 0)
    short_sm = bytearray(f.SM_HEADER_LENGTH)
    f.encode_status_message(short_sm, 0, live.pub.session_id, 1001, 0, 0, 32768, 9)
    long_claim = bytearray(f.NAK_HEADER_LENGTH)
    f.encode_nak(long_claim, 0, live.pub.session_id, 1001, 0, 0, 64)
    struct.pack_into("<i", long_claim, 0, 64)                    # frame length beyond the datagram
    cases = [
        (False, b"\0"), (True, b"\0" * 7),                       # shorter than a frame header
        (False, bytes(wrong_version)), (True, bytes(wrong_version)),
        (False, bytes(unknown_type)), (True, bytes(unknown_type)),
        (False, bytes(negative_length)),
        (False, bytes(wrong_version[:48])),                       # DATA not a multiple of 32 (also wrong version)
        (True, bytes(short_sm[:30])),                             # shorter than an SM
        (True, bytes(long_claim)),
    ]
    ok_but_not_a_multiple = bytearray(48)
    DATA_HEADER.pack_into(ok_but_not_a_multiple, 0, 48, 0, 0xC0, f.HDR_TYPE_DATA, 0, 5, 2002, 10, 0)
    cases.append((False, bytes(ok_but_not_a_multiple)))
    assert all(invalid_by_reference(d) for _, d in cases)
    for to_control, datagram in cases:
        before = live.settled_invalid()
        live.throw([(to_control, datagram)])
        wait_for(lambda: live.invalid() > before, timeout_s=5, what=f"not counted: {datagram[:16].hex()}")
        assert live.settled_invalid() == before + 1, datagram[:16].hex()
    live.stream_goes_on()
    # no agent tripped over anything thrown at it in this module: the only errors allowed are the ones the C driver
    # also logs, a SETUP whose MTU exceeds the receiver window
    # (aeron_receiver_channel_endpoint_validate_sender_mtu_length)
    errors = live.errors()
    assert all("cannot create image: ConfigurationError: sender MTU" in e for e in errors), errors
