# SPDX-License-Identifier: Apache-2.0
"""LossGenerator: the C interceptors' decisions (random = glibc erand48 with the C seeding, fixed-loss on the
golden loss run, multi-gap), tracking limits, the transport seam and argument parsing."""
import ctypes
import ctypes.util
import json
import random
import socket
import struct

import pytest

from aeron._core.loss_generator import TRACKING_CAPACITY, LossGenerator
from aeron._core.udp_transport import UdpTransport
from aeron.common.errors import ConfigurationError, IllegalStateError, OutOfBoundsError

HEADER = struct.Struct("<iBBhiiiiq")


def data(term_offset, length=64, term_id=5, session_id=1, stream_id=2, frame_length=None, frame_type=1):
    out = bytearray(length)
    HEADER.pack_into(out, 0, length if frame_length is None else frame_length, 0, 0xC0, frame_type, term_offset,
                     session_id, stream_id, term_id, 0)
    return bytes(out)


def control(frame_type, length=36):
    out = bytearray(length)
    struct.pack_into("<iBBH", out, 0, length, 0, 0, frame_type)
    return bytes(out)


def _libc_erand48():
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    try:
        fn = libc.erand48
    except AttributeError:
        pytest.skip("this libc has no erand48, the generator the C driver seeds and this test compares against")
    fn.restype = ctypes.c_double
    fn.argtypes = [ctypes.POINTER(ctypes.c_ushort)]
    return fn


@pytest.mark.parametrize("seed", [0, 1, 7, 0x123456789ABC, 2 ** 64 - 1])
def test_random_decisions_are_the_c_interceptors_for_the_same_seed(seed):
    erand48 = _libc_erand48()
    xsubi = (ctypes.c_ushort * 3)()
    # as aeron_udp_channel_interceptor_loss_configure seeds it
    xsubi[2], xsubi[1], xsubi[0] = seed & 0xFFFF, (seed >> 16) & 0xFFFF, (seed >> 32) & 0xFFFF
    generator = LossGenerator.random(0.25, seed)
    packet = data(0)
    expected = [erand48(xsubi) <= 0.25 for _ in range(2000)]
    assert [generator(packet) for _ in range(2000)] == expected
    assert generator.dropped == sum(expected) and generator.seen == 2000


def test_random_rate_over_ten_thousand_and_the_type_mask():
    generator = LossGenerator.random(0.1, seed=42)
    packets = [data(i * 64) for i in range(10_000)]
    dropped = sum(generator(p) for p in packets)
    assert 900 <= dropped <= 1100                        # 3 sigma is ~90
    assert generator.dropped == dropped
    # default mask: DATA and PAD only; SM/NAK/SETUP never drop and draw nothing
    before = generator.dropped
    assert not any(generator(control(t)) for t in (2, 3, 5, 6) for _ in range(500))
    assert generator.dropped == before
    assert sum(LossGenerator.random(1.0, 1)(data(0, frame_type=0)) for _ in range(50)) == 50   # PAD
    sm_only = LossGenerator.random(1.0, 1, msg_type_mask=1 << 3)
    assert sm_only(control(3)) and not sm_only(data(0))
    assert not any(LossGenerator.random(0.0, 3)(data(0)) for _ in range(1000))
    assert not LossGenerator.random(1.0, 3)(b"\0" * 7)                 # too short to have a type
    assert not LossGenerator.random(1.0, 3, msg_type_mask=0xFFFFFFFF)(control(0xFFFF))  # EXT: no bit


def test_random_same_seed_same_decisions_and_no_seed_still_works():
    a, b = LossGenerator.random(0.5, 99), LossGenerator.random(0.5, 99)
    packets = [data(i * 64) for i in range(500)]
    assert [a(p) for p in packets] == [b(p) for p in packets]
    c = LossGenerator.random(0.5)
    assert 150 < sum(c(p) for p in packets) < 350


def test_fixed_loss_drops_exactly_the_golden_runs_datagrams(golden_dir):
    path = golden_dir / "frames" / "unicast-loss-rttm" / "datagrams.json"
    datagrams = json.loads(path.read_text())["datagrams"]
    generator = LossGenerator.from_args("fixed-loss", "term-id=1000|term-offset=64|length=1")
    dropped = [d["index"] for d in datagrams
               if d["direction"] == "pub->sub" and generator(bytes.fromhex(d["hex"]))]
    assert dropped == [d["index"] for d in datagrams if d.get("dropped_by_receiver_fixed_loss_interceptor")]
    assert dropped == [3, 5, 6]
    assert generator.dropped == 3


def test_fixed_loss_per_session_and_term():
    generator = LossGenerator.fixed(term_id=5, term_offset=0, length=200)
    # session 1: 64-byte datagrams from 0 -> 0, 64, 128, 192 dropped (tracked offset reaches 256 >= 200)
    assert [generator(data(o)) for o in range(0, 512, 64)] == [True] * 4 + [False] * 4
    # another session is tracked on its own; another term is never touched
    assert generator(data(0, session_id=9)) and not generator(data(0, term_id=6, session_id=10))
    # the retransmit of a dropped offset gets through
    assert not generator(data(64))


def test_multi_gap_drops_each_gap_once_and_stops_after_total_gaps():
    generator = LossGenerator.multi_gap(term_id=5, gap_radix=8192, gap_length=1024, total_gaps=3)
    offsets = range(0, 65536, 1024)
    dropped = [o for o in offsets if generator(data(o, length=1024))]
    assert dropped == [8192, 16384, 24576]
    # retransmits of the gaps are delivered
    assert not any(generator(data(o, length=1024)) for o in dropped)
    # a radix that is not a power of two rounds up, as C does
    rounded = LossGenerator.multi_gap(5, 6000, 64, 1)
    assert [o for o in range(0, 16384, 64) if rounded(data(o))] == [8192]


def _python_fixed(term_id, term_offset, length):
    tracking = {}

    def drop(packet):
        if len(packet) < 32 or struct.unpack_from("<H", packet, 6)[0] != 1:
            return False
        _, _, _, _, offset, session, stream, tid, _ = HEADER.unpack_from(packet)
        if tid != term_id:
            return False
        tracked = tracking.setdefault((stream, session), offset)
        if tracked < term_offset + length and offset <= tracked < offset + len(packet):
            tracking[(stream, session)] = offset + len(packet)
            return True
        return False
    return drop


def _python_multi_gap(term_id, radix, gap_length, total_gaps):
    bits = radix.bit_length() - 1
    limit = total_gaps * radix + gap_length
    tracking = {}

    def drop(packet):
        if len(packet) < 32 or struct.unpack_from("<H", packet, 6)[0] != 1:
            return False
        _, _, _, _, offset, session, stream, tid, _ = HEADER.unpack_from(packet)
        if tid != term_id or offset > limit:
            return False
        if tracking.setdefault((stream, session), offset) > offset:
            return False
        end = offset + len(packet)
        tz = (offset & -offset).bit_length() - 1 if offset else 0
        prev_gap = offset & ~(radix - 1)
        next_gap = ((offset >> bits) + 1) << bits
        if (offset and tz >= bits) or (prev_gap > 0 and offset < prev_gap + gap_length) or \
                (end > next_gap and offset < next_gap + gap_length):
            tracking[(stream, session)] = end
            return True
        return False
    return drop


@pytest.mark.parametrize("seed", range(5))
def test_fixed_and_multi_gap_agree_with_a_python_model_on_shuffled_streams(seed):
    rng = random.Random(seed)
    stream = []
    for session in (1, 2):
        offset = 0
        while offset < 40000:
            length = rng.choice([32, 64, 640, 1408])
            stream.append(data(offset, length=length, session_id=session))
            offset += length
    stream += rng.sample(stream, 40)                    # retransmits, out of order
    rng.shuffle(stream)
    for ours, model in ((LossGenerator.fixed(5, 1024, 3000), _python_fixed(5, 1024, 3000)),
                        (LossGenerator.multi_gap(5, 4096, 512, 6), _python_multi_gap(5, 4096, 512, 6))):
        decisions = [ours(p) for p in stream]
        assert decisions == [model(p) for p in stream]
        assert ours.dropped == sum(decisions)


def test_tracking_is_bounded():
    generator = LossGenerator.fixed(5, 0, 64)
    assert all(generator(data(0, session_id=s)) for s in range(TRACKING_CAPACITY))
    assert not generator(data(0, session_id=TRACKING_CAPACITY))       # table full: never dropped
    assert generator(data(64, session_id=0)) is False                  # tracked sessions keep their state


def test_filter_received_on_a_transport_batch():
    rx_sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx_sock.bind(("127.0.0.1", 0))
    receiver = UdpTransport(rx_sock, batch=64)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as tx:
        try:
            for o in range(0, 64 * 64, 64):
                tx.sendto(data(o), receiver.bound_address)
            generator = LossGenerator.fixed(5, 128, 192)    # tracking starts at 0: drops until offset 320
            got = []
            for _ in range(200):
                n = receiver.receive_batch()
                if n:
                    dropped = generator.filter_received(receiver)
                    lengths = [receiver.length(i) for i in range(n)]
                    assert lengths.count(0) == dropped
                    got += lengths
                if len(got) >= 64:
                    break
            assert got == [0] * 5 + [64] * 59
        finally:
            receiver.close()
    with pytest.raises(IllegalStateError):
        generator.filter_received(receiver)


def test_arguments_are_checked():
    assert LossGenerator.from_args("loss", "rate=0.5|seed=3|recv-msg-mask=0x8")(control(3)) in (True, False)
    assert LossGenerator.from_args("multi-gap-loss", "term-id=1|gap-radix=64|gap-length=32|total-gaps=2").kind == 3
    for name, args in [("loss", "rate=2"), ("loss", "rate=x"), ("fixed-loss", "term-id=1"), ("nope", ""),
                       ("fixed-loss", "term-id=1|term-offset=0|length=-1"), ("loss", "rate"),
                       ("multi-gap-loss", "term-id=1|gap-radix=0|gap-length=1|total-gaps=1")]:
        with pytest.raises(ConfigurationError):
            LossGenerator.from_args(name, args)
    with pytest.raises(TypeError):
        LossGenerator()
    with pytest.raises(OutOfBoundsError):
        LossGenerator.random(1.0, 1)(b"\0" * 8, 9)
