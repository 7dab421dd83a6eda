# SPDX-License-Identifier: Apache-2.0
"""UdpTransport's channel timestamps on loopback sockets: received datagrams get the receive time (and the
kernel's, with SO_TIMESTAMPNS) in every whole DATA frame that begins a message, at the reserved value or a payload
offset with room; sent datagrams get the send time in their first DATA frame only, in the sender's memory (the log)
as well as on the wire; heartbeats, PADs, SETUPs and too-short payloads are left alone."""
import socket
import struct
import time

import pytest

from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.udp_transport import TIMESTAMP_NONE, TIMESTAMP_RESERVED_VALUE, UdpTransport
from aeron.common.errors import InvalidArgumentError
from tests._core.framing import BEGIN, END, HDR_TYPE_PAD, HEADER, write_frame

DEADLINE_S = 3.0


def _pair(use_mmsg=True):
    socks = []
    for _ in range(2):
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind(("127.0.0.1", 0))
        socks.append(sock)
    return UdpTransport(socks[0], use_mmsg=use_mmsg), UdpTransport(socks[1], use_mmsg=use_mmsg)


def _receive_one(transport):
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        if transport.receive_batch():
            return bytes(transport.slots[0][:transport.length(0)])
    raise AssertionError("nothing received")


def _reserved(datagram, offset=0):
    return HEADER.unpack_from(datagram, offset)[8]


def _i64(datagram, offset):
    return struct.unpack_from("<q", datagram, offset)[0]


@pytest.mark.parametrize("use_mmsg", [True, False], ids=["mmsg", "single"])
def test_receive_stamps_each_whole_data_frame_that_begins_a_message(use_mmsg):
    sender, receiver = _pair(use_mmsg)
    try:
        assert receiver.set_timestamp_offsets(media_receive=8, channel_receive=TIMESTAMP_RESERVED_VALUE)
        datagram = bytearray(256)
        at = write_frame(datagram, 0, bytes(32), flags=BEGIN)           # begins a message: stamped
        at = write_frame(datagram, at, bytes(32), flags=END)            # a middle/end fragment: not
        at = write_frame(datagram, at, bytes(4))                        # room for no payload timestamp
        HEADER.pack_into(datagram, at, 64, 0, 0, HDR_TYPE_PAD, at, 0, 0, 0, 0)
        before = time.time_ns()
        sender.send(datagram[:at + 64], receiver.bound_address)
        got = _receive_one(receiver)
        after = time.time_ns()
        assert at == 192                                                # frames at 0, 64, 128, the PAD at 192
        assert before <= _reserved(got, 0) <= after
        assert _reserved(got, 64) == 0 and got[64 + 32:64 + 64] == bytes(32)
        assert before <= _reserved(got, 128) <= after and got[128 + 32:128 + 36] == bytes(4)
        media = _i64(got, 32 + 8)
        if use_mmsg:                                                    # the kernel time travels in recvmmsg only
            assert before - 1_000_000_000 <= media <= after
        else:
            assert media == 0
        assert got[32:40] == bytes(8) and got[48:64] == bytes(16)       # the rest of the payload untouched
        assert got[at:] == datagram[at:at + 64]                         # the PAD as sent
    finally:
        sender.close()
        receiver.close()


def test_send_stamps_the_first_data_frame_of_each_datagram_in_the_term():
    sender, receiver = _pair()
    try:
        sender.set_timestamp_offsets(channel_send=0)
        term = AtomicBuffer(bytearray(65536))
        raw = bytearray(4096)
        at = 0
        for _ in range(4):
            at = write_frame(raw, at, bytes(480))                       # 512-byte frames
        term.put_bytes(0, bytes(raw[:at]))
        before = time.time_ns()
        sent, advance = sender.send_term_batch(term, 0, 4096, 1024, 8, receiver.bound_address)
        after = time.time_ns()
        assert (sent, advance) == (2048, 2048)                          # two datagrams of two frames each
        data = term.get_bytes(0, 2048)
        for frame, stamped in ((0, True), (512, False), (1024, True), (1536, False)):
            value = _i64(data, frame + 32)
            assert (before <= value <= after) if stamped else value == 0
        first = _receive_one(receiver)
        assert first == data[:1024]                                     # the wire carries what the term holds
    finally:
        sender.close()
        receiver.close()


def test_send_leaves_heartbeats_setups_and_read_only_buffers_alone():
    sender, receiver = _pair()
    try:
        sender.set_timestamp_offsets(channel_send=TIMESTAMP_RESERVED_VALUE)
        heartbeat = bytearray(32)
        HEADER.pack_into(heartbeat, 0, 0, 0, 0xC0, 1, 0, 1, 2, 3, 0)
        sender.send(heartbeat, receiver.bound_address)
        assert _reserved(_receive_one(receiver)) == 0 and _reserved(heartbeat) == 0
        frame = bytearray(64)
        write_frame(frame, 0, bytes(32))
        sender.send(bytes(frame), receiver.bound_address)               # read-only: sent as it is
        assert _reserved(_receive_one(receiver)) == 0
        sender.send(frame, receiver.bound_address)                      # a writable view: stamped (a resend)
        assert _reserved(_receive_one(receiver)) > 0 and _reserved(frame) > 0
    finally:
        sender.close()
        receiver.close()


def test_offsets_are_checked_and_off_by_default():
    sender, receiver = _pair()
    try:
        assert (receiver.media_receive_timestamp_offset, receiver.channel_receive_timestamp_offset,
                receiver.channel_send_timestamp_offset) == (TIMESTAMP_NONE,) * 3
        with pytest.raises(InvalidArgumentError):
            receiver.set_timestamp_offsets(channel_receive=-3)
        frame = bytearray(64)
        write_frame(frame, 0, bytes(32))
        sender.send(frame, receiver.bound_address)
        assert _receive_one(receiver) == bytes(frame)
    finally:
        sender.close()
        receiver.close()
