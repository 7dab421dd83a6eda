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

from aeron._core.loss_generator import (
    DUPLICATE,
    HOLD_CAPACITY,
    REORDER,
    TRACKING_CAPACITY,
    LossGenerator,
)
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


# -- reorder and duplicate (ours: the same seam, batches only) -----------------------------------------------------
def _batches_through(generator, packets, batch=16, chunk=None):
    """Send ``packets`` to a transport of ``batch`` slots (``chunk`` at a time, each chunk received before the next
    goes; all at once when None), receive them through ``generator.deliver_received``: (the raw batch sizes, the
    term offsets delivered in order)."""
    rx_sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx_sock.bind(("127.0.0.1", 0))
    receiver = UdpTransport(rx_sock, batch=batch)
    sizes, delivered = [], []
    chunk = chunk or len(packets)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as tx:
        tx.bind(("127.0.0.1", 0))
        try:
            for start in range(0, len(packets), chunk):
                for p in packets[start:start + chunk]:
                    tx.sendto(p, receiver.bound_address)
                expected = min(start + chunk, len(packets))
                for _ in range(10_000):
                    if sum(sizes) >= expected:
                        break
                    n = receiver.receive_batch()
                    if not n:
                        continue
                    sizes.append(n)
                    filled = generator.deliver_received(receiver)
                    assert filled >= n and filled <= batch
                    for i in range(filled):
                        if receiver.length(i):
                            assert receiver.source(i) == tx.getsockname()      # held copies keep their source
                            delivered.append(HEADER.unpack_from(receiver.slots[i])[4])
        finally:
            receiver.close()
    return sizes, delivered


def _model(kind, decisions, sizes, offsets, depth, batch=16, capacity=8):
    """The order reorder/duplicate deliver: ``decisions`` are the random generator's draws for the same seed."""
    held, out, seen, k = [], [], 0, 0
    for size in sizes:
        filled = size
        for _ in range(size):
            offset, chosen = offsets[k], decisions[k]
            k += 1
            seen += 1
            if chosen and len(held) < capacity:
                held.append((seen + depth, offset))
                if kind == "reorder":
                    continue
            out.append(offset)
        while held and filled < batch and held[0][0] <= seen:
            out.append(held.pop(0)[1])
            filled += 1
    return out, held


@pytest.mark.parametrize("kind,depth,seed", [("reorder", 3, 1), ("reorder", 1, 9), ("reorder", 20, 4),
                                             ("duplicate", 0, 2), ("duplicate", 5, 8)])
def test_reorder_and_duplicate_deliver_as_the_model_says(kind, depth, seed):
    packets = [data(i * 64) for i in range(200)]
    offsets = [i * 64 for i in range(200)]
    oracle = LossGenerator.random(0.2, seed)                # the same draws select the same datagrams
    decisions = [oracle(p) for p in packets]
    generator = getattr(LossGenerator, kind)(0.2, seed, depth=depth)
    sizes, delivered = _batches_through(generator, packets, chunk=5)
    expected, still_held = _model(kind, decisions, sizes, offsets, depth)
    assert delivered == expected
    assert generator.held_count == len(still_held)
    assert generator.dropped == 0 and generator.seen == 200
    selected = len(expected) - 200 + len(still_held) if kind == "duplicate" else generator.delayed
    if kind == "reorder":
        assert generator.delayed > 10 and generator.duplicated == 0
        assert sorted(delivered + [o for _, o in still_held]) == offsets        # nothing lost, nothing twice
        assert delivered != sorted(delivered)                                      # and out of order
    else:
        assert generator.duplicated == selected > 10 and generator.delayed == 0
        assert sorted(set(delivered)) == offsets and len(delivered) == 200 + generator.duplicated - len(still_held)


def test_reorder_holds_at_most_its_capacity_and_a_full_batch_defers_the_release():
    # every datagram selected, depth 100: eight are held, the rest pass through in order
    generator = LossGenerator.reorder(1.0, 1, depth=100)
    packets = [data(i * 64) for i in range(64)]
    sizes, delivered = _batches_through(generator, packets)
    assert generator.held_count == HOLD_CAPACITY == 8 and generator.delayed == 8
    assert delivered == [i * 64 for i in range(8, 64)]
    # a full batch has no free slot: duplicates wait for a batch with room
    generator = LossGenerator.duplicate(1.0, 1, depth=0)
    sizes, delivered = _batches_through(generator, [data(i * 64) for i in range(16)], batch=16)
    assert sizes == [16] and delivered == [i * 64 for i in range(16)] and generator.held_count == 8


def test_reorder_and_duplicate_leave_other_types_and_zero_rates_alone():
    status = [control(3) for _ in range(20)]
    datas = [data(i * 64) for i in range(20)]
    for kind in ("reorder", "duplicate"):
        only_data = getattr(LossGenerator, kind)(1.0, 5, depth=0)                        # DATA and PAD
        _, delivered = _batches_through(only_data, status, chunk=2)
        assert len(delivered) == 20 and only_data.delayed == only_data.duplicated == only_data.held_count == 0
        only_status = getattr(LossGenerator, kind)(1.0, 5, msg_type_mask=1 << 3, depth=0)
        _batches_through(only_status, datas, chunk=2)
        assert only_status.delayed == only_status.duplicated == 0
        idle = getattr(LossGenerator, kind)(0.0, 5)
        _batches_through(idle, datas, chunk=2)
        assert idle.delayed == idle.duplicated == idle.held_count == 0


def test_reorder_and_duplicate_arguments():
    reorder = LossGenerator.from_args("reorder", "rate=0.1|seed=3|depth=5")
    assert reorder.kind == REORDER
    assert LossGenerator.from_args("duplicate", "rate=0.1|seed=3|recv-msg-mask=0x1").kind == DUPLICATE
    for name, args in [("reorder", "rate=2"), ("reorder", "depth=-1"), ("duplicate", "depth=x")]:
        with pytest.raises(ConfigurationError):
            LossGenerator.from_args(name, args)
    with pytest.raises(IllegalStateError):
        reorder(data(0))                                  # one datagram cannot be reordered
    rx_sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx_sock.bind(("127.0.0.1", 0))
    receiver = UdpTransport(rx_sock, batch=4)
    with pytest.raises(IllegalStateError):
        reorder.filter_received(receiver)                 # it adds slots: deliver_received says how many
    receiver.close()
    with pytest.raises(IllegalStateError):
        reorder.deliver_received(receiver)


def test_a_chain_applies_its_generators_in_order():
    # loss of everything first: nothing reaches the duplicator behind it
    duplicator = LossGenerator.duplicate(1.0, 1)
    chain = LossGenerator.chain([LossGenerator.random(1.0, 1), duplicator])
    _, delivered = _batches_through(chain, [data(i * 64) for i in range(10)], chunk=2)
    assert delivered == [] and chain.dropped == 10 and duplicator.seen == 0
    # duplicate then reorder: the reorderer sees the copies too, and holds them like any other datagram
    packets = [data(i * 64) for i in range(100)]
    first, second = LossGenerator.duplicate(0.3, 3), LossGenerator.reorder(0.3, 4, depth=2)
    _, delivered = _batches_through(LossGenerator.chain([first, second]), packets, chunk=4)
    assert first.duplicated > 10 and second.delayed > 10
    assert second.seen == 100 + first.duplicated
    assert sorted(set(delivered)) == [i * 64 for i in range(100)]
    assert len(delivered) == 100 + first.duplicated - first.held_count - second.held_count
    with pytest.raises(ConfigurationError):
        LossGenerator.chain([first])                       # already in a chain
    with pytest.raises(ConfigurationError):
        LossGenerator.chain([])
    with pytest.raises(IllegalStateError):
        LossGenerator.chain([LossGenerator.random(0.5, 1), LossGenerator.random(0.5, 2)])(data(0))
