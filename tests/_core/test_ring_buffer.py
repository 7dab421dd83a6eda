# SPDX-License-Identifier: Apache-2.0
import gzip
import os
import struct
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from aeron._core import ring_buffer as rbm
from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.ring_buffer import ManyToOneRingBuffer
from aeron.common.errors import (ConfigurationError, CorruptFileError, IllegalStateError, InvalidArgumentError,
                          OutOfBoundsError)

TO_DRIVER_OFFSET = 128
TO_DRIVER_LENGTH = 1_049_344


def make_ring(capacity=1024):
    mem = bytearray(capacity + 768)
    buf = AtomicBuffer(mem)
    return mem, buf, ManyToOneRingBuffer(buf)


def collect(ring, limit=2**31 - 1):
    out = []
    ring.read(lambda t, b, o, n: out.append((t, b.get_bytes(o, n))), limit)
    return out


def trailer(buf, ring, field):
    return buf.get_i64(ring.capacity + field)


# -- layout against RingBufferDescriptor / RecordDescriptor and a default cnc.dat ---------------------------
def test_layout_constants_match_reference():
    assert (rbm.TAIL_POSITION_OFFSET, rbm.HEAD_CACHE_POSITION_OFFSET, rbm.HEAD_POSITION_OFFSET,
            rbm.CORRELATION_COUNTER_OFFSET, rbm.CONSUMER_HEARTBEAT_OFFSET) == (128, 256, 384, 512, 640)
    assert rbm.TRAILER_LENGTH == 768
    assert (rbm.HEADER_LENGTH, rbm.ALIGNMENT, rbm.LENGTH_OFFSET, rbm.TYPE_OFFSET) == (8, 8, 0, 4)
    assert rbm.PADDING_MSG_TYPE_ID == -1
    assert rbm.INSUFFICIENT_CAPACITY == -2
    # Absolute offsets of the default C driver's cnc.dat.
    capacity = TO_DRIVER_LENGTH - 768
    assert [TO_DRIVER_OFFSET + capacity + f for f in (128, 256, 384, 512, 640)] == \
        [1_048_832, 1_048_960, 1_049_088, 1_049_216, 1_049_344]


def test_record_encoding_and_trailer_bytes():
    mem, buf, ring = make_ring(1024)
    assert ring.capacity == 1024 and ring.max_msg_length == 128
    assert ring.write(0x0A, b"abc")
    assert ring.write(0x0B, b"0123456789", 2, 5)
    # length = 8 + payload (unaligned), type id, payload; records 8-byte aligned
    assert struct.unpack_from("<ii", mem, 0) == (11, 0x0A)
    assert mem[8:11] == b"abc" and mem[11:16] == bytes(5)
    assert struct.unpack_from("<ii", mem, 16) == (13, 0x0B)
    assert mem[24:29] == b"23456"
    assert struct.unpack_from("<q", mem, 1024 + 128)[0] == 32       # tail
    assert struct.unpack_from("<q", mem, 1024 + 384)[0] == 0        # head
    assert ring.producer_position() == 32 and ring.consumer_position() == 0 and ring.size() == 32


def test_zero_length_message():
    mem, buf, ring = make_ring(64)
    assert ring.write(3, b"")
    assert struct.unpack_from("<ii", mem, 0) == (8, 3)
    assert collect(ring) == [(3, b"")]
    assert ring.consumer_position() == 8


# -- golden cnc.dat ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def golden_cnc(golden_dir):
    return bytearray(gzip.decompress((golden_dir / "cnc" / "c-aeronmd-ipc" / "cnc.dat.gz").read_bytes()))


def test_golden_to_driver_trailer(golden_cnc):
    assert struct.unpack_from("<i", golden_cnc, 4)[0] == TO_DRIVER_LENGTH
    buf = AtomicBuffer(golden_cnc, TO_DRIVER_OFFSET, TO_DRIVER_LENGTH)
    ring = ManyToOneRingBuffer(buf)
    assert ring.capacity == 1 << 20 and ring.max_msg_length == 131_072
    assert ring.producer_position() == 104
    assert ring.consumer_position() == 104
    assert trailer(buf, ring, rbm.HEAD_CACHE_POSITION_OFFSET) == 0
    assert trailer(buf, ring, rbm.CORRELATION_COUNTER_OFFSET) == 5
    assert ring.consumer_heartbeat_time == 1795334962516
    assert buf.is_zero(0, ring.capacity)          # the driver zeroes what it consumed
    assert ring.size() == 0 and collect(ring) == [] and not ring.unblock()
    # A copy: taking ids must not touch the shared fixture.
    copy = bytearray(golden_cnc[TO_DRIVER_OFFSET:TO_DRIVER_OFFSET + TO_DRIVER_LENGTH])
    ring2 = ManyToOneRingBuffer(AtomicBuffer(copy))
    assert [ring2.next_correlation_id() for _ in range(3)] == [5, 6, 7]
    assert struct.unpack_from("<q", copy, (1 << 20) + 512)[0] == 8


# -- producer / consumer ------------------------------------------------------------------------------------
def test_round_trip_and_zeroing():
    mem, buf, ring = make_ring(1024)
    msgs = [(i + 1, bytes([i]) * (i * 3)) for i in range(10)]
    for t, p in msgs:
        assert ring.write(t, p)
    assert collect(ring) == msgs
    assert ring.consumer_position() == ring.producer_position() == sum((8 + len(p) + 7) & ~7 for _, p in msgs)
    assert buf.is_zero(0, 1024)
    assert collect(ring) == []


def test_handler_gets_ring_buffer_and_offsets():
    mem, buf, ring = make_ring(256)
    ring.write(9, b"xyz")
    seen = []
    ring.read(lambda t, b, o, n: seen.append((t, b, o, n)))
    assert seen == [(9, buf, 8, 3)]


def test_full_returns_false_then_recovers():
    mem, buf, ring = make_ring(64)
    results = [ring.write(1, b"12345678") for _ in range(5)]      # 16-byte records
    assert results == [True, True, True, True, False]
    assert ring.size() == 64
    assert ring.try_claim(1, 0) == rbm.INSUFFICIENT_CAPACITY
    assert len(collect(ring, 1)) == 1
    assert ring.write(1, b"abcdefgh")
    assert not ring.write(1, b"abcdefgh")


def test_wrap_inserts_padding_record():
    mem, buf, ring = make_ring(128)                                # max_msg_length 16
    for _ in range(7):
        assert ring.write(1, b"12345678")                          # 16-byte records, tail 112
    assert len(collect(ring, 1)) == 1                              # head 16
    # A 24-byte record does not fit in the 16 bytes to the end, and head index 16 < 24: full.
    assert not ring.write(2, bytes(range(16)))
    assert len(collect(ring, 1)) == 1                              # head 32
    assert ring.write(2, bytes(range(16)))
    assert struct.unpack_from("<ii", mem, 112) == (16, -1)         # padding to the end of the buffer
    assert struct.unpack_from("<ii", mem, 0) == (24, 2)            # record at index 0
    assert mem[8:24] == bytes(range(16))
    assert ring.producer_position() == 112 + 16 + 24
    # One read covers one contiguous block: the rest of the lap (padding skipped), then the wrap.
    assert len(collect(ring)) == 5
    assert ring.consumer_position() == 128
    assert collect(ring) == [(2, bytes(range(16)))]
    assert ring.consumer_position() == 152
    assert buf.is_zero(0, 128)


def test_message_count_limit():
    mem, buf, ring = make_ring(256)
    for i in range(5):
        ring.write(i + 1, b"m")
    assert [t for t, _ in collect(ring, 2)] == [1, 2]
    assert [t for t, _ in collect(ring, 0)] == []
    assert [t for t, _ in collect(ring)] == [3, 4, 5]


def test_try_claim_commit_abort():
    mem, buf, ring = make_ring(256)
    index = ring.try_claim(7, 5)
    assert index == 8
    assert struct.unpack_from("<ii", mem, 0) == (-13, 7)           # negative while being written
    assert collect(ring) == []
    buf.put_bytes(index, b"hello")
    ring.commit(index)
    assert struct.unpack_from("<i", mem, 0)[0] == 13
    with pytest.raises(IllegalStateError, match="committed"):
        ring.commit(index)
    with pytest.raises(IllegalStateError, match="committed"):
        ring.abort(index)
    assert collect(ring) == [(7, b"hello")]

    index = ring.try_claim(8, 3)
    assert index == 24
    ring.abort(index)
    assert struct.unpack_from("<ii", mem, 16) == (11, -1)          # aborted claim becomes padding
    with pytest.raises(IllegalStateError, match="aborted"):
        ring.commit(index)
    assert ring.write(9, b"z")
    assert collect(ring) == [(9, b"z")]
    assert ring.consumer_position() == 48
    for bad in (0, 7, 12, 256 + 8, -8):
        with pytest.raises(InvalidArgumentError):
            ring.commit(bad)


def test_handler_raising_keeps_consumed_records_consumed():
    mem, buf, ring = make_ring(256)
    for i in range(3):
        ring.write(i + 1, bytes([i]) * 4)
    seen = []

    def handler(t, b, o, n):
        seen.append(t)
        if t == 2:
            raise KeyError("boom")

    with pytest.raises(KeyError):
        ring.read(handler)
    assert seen == [1, 2]
    assert ring.consumer_position() == 32                          # through the raising record
    assert buf.is_zero(0, 32)
    assert collect(ring) == [(3, bytes([2]) * 4)]


def test_controlled_read_actions():
    mem, buf, ring = make_ring(256)
    for i in range(5):
        ring.write(i + 1, b"p")
    actions = {1: rbm.CONTINUE, 2: rbm.COMMIT, 3: rbm.BREAK}
    seen = []

    def handler(t, b, o, n):
        seen.append(t)
        return actions.get(t, rbm.ABORT)

    assert ring.controlled_read(handler) == 3
    assert seen == [1, 2, 3] and ring.consumer_position() == 48
    seen.clear()
    assert ring.controlled_read(handler) == 0                      # ABORT leaves record 4 in place
    assert seen == [4] and ring.consumer_position() == 48
    assert struct.unpack_from("<ii", mem, 48) == (9, 4)
    with pytest.raises(InvalidArgumentError):
        ring.controlled_read(lambda *a: 99)
    assert ring.consumer_position() == 64                          # the bad answer still consumed it


def test_correlation_id_and_heartbeat():
    mem, buf, ring = make_ring(64)
    assert [ring.next_correlation_id() for _ in range(3)] == [0, 1, 2]
    assert struct.unpack_from("<q", mem, 64 + 512)[0] == 3
    assert ring.consumer_heartbeat_time == 0
    ring.consumer_heartbeat_time = 1795334962516
    assert struct.unpack_from("<q", mem, 64 + 640)[0] == 1795334962516
    ring.consumer_heartbeat_time = -1
    assert ring.consumer_heartbeat_time == -1


# -- unblock (ManyToOneRingBuffer.unblock) ---------------------------------------------------------------------
def test_unblock_nothing_to_do():
    mem, buf, ring = make_ring(64)
    assert not ring.unblock()
    ring.write(1, b"x")
    assert not ring.unblock()                                      # committed record at head


def test_unblock_abandoned_claim():
    mem, buf, ring = make_ring(256)
    ring.try_claim(5, 10)                                          # producer dies before commit
    assert ring.write(6, b"after")
    assert collect(ring) == []                                     # stuck behind the claim
    assert ring.unblock()
    assert struct.unpack_from("<ii", mem, 0) == (18, -1)
    assert collect(ring) == [(6, b"after")]
    assert ring.consumer_position() == ring.producer_position()


def test_unblock_gap_never_written():
    mem, buf, ring = make_ring(256)
    # A producer moved the tail by 16 and died before writing the header.
    buf.put_i64(256 + rbm.TAIL_POSITION_OFFSET, 16)
    assert not ring.unblock()                                      # nothing written after the gap yet
    assert ring.write(6, b"after")
    assert collect(ring) == []
    assert ring.unblock()
    assert struct.unpack_from("<ii", mem, 0) == (16, -1)
    assert collect(ring) == [(6, b"after")]


# -- concurrency ------------------------------------------------------------------------------------------
def _check_streams(received, producers, per_producer):
    by_producer = {}
    for t, payload in received:
        pid, seq = struct.unpack("<ii", payload[:8])
        assert t == pid + 1
        assert payload[8:] == bytes([seq & 0xFF]) * (seq % 23)
        by_producer.setdefault(pid, []).append(seq)
    assert sorted(by_producer) == list(range(producers))
    for seqs in by_producer.values():
        assert seqs == list(range(per_producer))                  # per-producer FIFO, nothing lost


def _payload(pid, seq):
    return struct.pack("<ii", pid, seq) + bytes([seq & 0xFF]) * (seq % 23)


def test_concurrent_producer_threads():
    producers, per_producer = 4, 3000
    mem, buf, ring = make_ring(4096)
    deadline = time.monotonic() + 15
    failures = []

    def produce(pid):
        for seq in range(per_producer):
            payload = _payload(pid, seq)
            while not ring.write(pid + 1, payload):
                if time.monotonic() > deadline:
                    failures.append(pid)
                    return
                time.sleep(0)

    threads = [threading.Thread(target=produce, args=(p,)) for p in range(producers)]
    for t in threads:
        t.start()
    received = []
    handler = lambda t, b, o, n: received.append((t, b.get_bytes(o, n)))
    while len(received) < producers * per_producer and time.monotonic() < deadline:
        if ring.read(handler) == 0:
            time.sleep(0)
    for t in threads:
        t.join(timeout=5)
        assert not t.is_alive()
    assert not failures
    _check_streams(received, producers, per_producer)
    assert buf.is_zero(0, ring.capacity)


PRODUCER_SCRIPT = textwrap.dedent("""
    import struct, sys, time
    from aeron._core.atomic_buffer import AtomicBuffer
    from aeron._core.ring_buffer import ManyToOneRingBuffer
    path, pid, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    ring = ManyToOneRingBuffer(AtomicBuffer.map_file(path))
    deadline = time.monotonic() + 20
    for seq in range(count):
        payload = struct.pack("<ii", pid, seq) + bytes([seq & 0xFF]) * (seq % 23)
        while not ring.write(pid + 1, payload):
            if time.monotonic() > deadline:
                sys.exit(3)
""")


def test_concurrent_producer_processes(shm_dir):
    # Separate processes: real parallel CAS on the tail, no GIL between producers.
    producers, per_producer = 2, 20000
    path = shm_dir / "ring.dat"
    with AtomicBuffer.map_file(path, 8192 + 768, create=True) as buf:
        ring = ManyToOneRingBuffer(buf)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
        procs = [subprocess.Popen([sys.executable, "-c", PRODUCER_SCRIPT, str(path), str(p), str(per_producer)],
                                  env=env) for p in range(producers)]
        received = []
        handler = lambda t, b, o, n: received.append((t, b.get_bytes(o, n)))
        deadline = time.monotonic() + 30
        try:
            while len(received) < producers * per_producer and time.monotonic() < deadline:
                if ring.read(handler) == 0:
                    time.sleep(0)
        finally:
            for p in procs:
                try:
                    assert p.wait(timeout=10) == 0
                finally:
                    p.kill()
        _check_streams(received, producers, per_producer)
        ring.close()


# -- bad input ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("length", [1000 + 768, 768, 768 + 4, 700, 0, 768 + 24])
def test_bad_capacity(length):
    with pytest.raises(ConfigurationError):
        ManyToOneRingBuffer(AtomicBuffer(bytearray(max(length, 1)), 0, length))


def test_bad_capacity_from_file_is_corrupt_file(shm_dir):
    path = shm_dir / "bad.dat"
    with AtomicBuffer.map_file(path, 1000 + 768, create=True) as buf:
        with pytest.raises(CorruptFileError) as info:
            ManyToOneRingBuffer(buf)
        assert info.value.path == str(path)


def test_bad_messages():
    mem, buf, ring = make_ring(256)
    for t in (0, -1, -5):
        with pytest.raises(InvalidArgumentError):
            ring.write(t, b"x")
        with pytest.raises(InvalidArgumentError):
            ring.try_claim(t, 1)
    assert ring.write(1, bytes(32))                                # max_msg_length = 256 / 8
    with pytest.raises(InvalidArgumentError):
        ring.write(1, bytes(33))
    with pytest.raises(InvalidArgumentError):
        ring.try_claim(1, 33)
    with pytest.raises(InvalidArgumentError):
        ring.try_claim(1, -1)
    with pytest.raises(OutOfBoundsError):
        ring.write(1, b"abc", 2, 5)
    with pytest.raises(InvalidArgumentError):
        ring.write(1, b"abc", 0, -2)
    assert ring.producer_position() == 40                          # nothing else was written


def test_a_bad_header_beyond_the_tail_is_cleared_once():
    mem, buf, ring = make_ring(256)
    ring.write(1, b"ok")
    struct.pack_into("<ii", mem, 16, 4000, 2)                      # where nothing was claimed
    got = []
    with pytest.raises(CorruptFileError, match="malformed length 4000 .*beyond the producers' tail: cleared"):
        ring.read(lambda t, b, o, n: got.append(t))
    assert got == [1] and ring.consumer_position() == 16           # records before it were committed
    assert struct.unpack_from("<i", mem, 16)[0] == 0
    assert ring.read(lambda *a: None) == 0                         # reported once
    ring.write(3, b"next")
    assert collect(ring) == [(3, b"next")]


def claim_with_bad_length(ring, buf, payload_length, bad_length, payload=b""):
    """A producer that claims room for a record and then 'commits' a bad length."""
    index = ring.try_claim(9, payload_length)
    if payload:
        buf.put_bytes(index, payload)
    buf.put_i32_ordered(index - 8, bad_length)
    return index - 8


@pytest.mark.parametrize("bad_length", [1, 7, 2**31 - 1, 1024 + 8, 200], ids=str)
@pytest.mark.parametrize("reader", ["read", "controlled_read"])
def test_a_malformed_record_is_skipped_and_the_records_after_it_are_read(bad_length, reader):
    mem, buf, ring = make_ring(1024)
    ring.write(1, b"before")
    record = claim_with_bad_length(ring, buf, 64, bad_length)
    ring.write(2, b"after one")
    ring.write(3, b"after two")
    got = []

    def handler(t, b, o, n):
        got.append((t, b.get_bytes(o, n)))
        return rbm.CONTINUE

    read = getattr(ring, reader)
    with pytest.raises(CorruptFileError, match=f"index {record} has a malformed length {bad_length} .*"
                                               "skipped 72 bytes to the next well-formed record") as info:
        read(handler)
    assert info.value.offset == record
    assert got == [(1, b"before")]
    assert read(handler) == 2
    assert got[1:] == [(2, b"after one"), (3, b"after two")]
    assert ring.consumer_position() == ring.producer_position()
    assert bytes(mem[:1024]) == bytes(1024)                        # everything consumed was zeroed


def test_garbage_that_looks_like_records_is_not_taken_for_them():
    mem, buf, ring = make_ring(1024)
    # the bad record's payload holds two plausible headers (16 bytes, type 5) that chain to a zero, not the tail
    fake = struct.pack("<ii", 16, 5) + bytes(8) + struct.pack("<ii", 16, 5) + bytes(8)
    claim_with_bad_length(ring, buf, 64, 3, fake)
    ring.write(2, b"real")
    with pytest.raises(CorruptFileError, match="skipped 72 bytes"):
        collect(ring)
    assert collect(ring) == [(2, b"real")]


def test_nothing_after_the_malformed_record_skips_what_it_claimed():
    mem, buf, ring = make_ring(1024)
    claim_with_bad_length(ring, buf, 100, 5000, b"\x01" * 100)
    with pytest.raises(CorruptFileError, match="112 bytes claimed from it\\): skipped 112 bytes"):
        collect(ring)
    assert ring.consumer_position() == ring.producer_position() == 112
    ring.write(4, b"fine")
    assert collect(ring) == [(4, b"fine")]


def test_a_claim_still_being_written_after_it_is_kept():
    mem, buf, ring = make_ring(1024)
    claim_with_bad_length(ring, buf, 16, 3)
    pending = ring.try_claim(6, 8)                                 # claimed, not committed yet
    ring.write(7, b"later")
    with pytest.raises(CorruptFileError, match="skipped 24 bytes"):
        collect(ring)
    assert collect(ring) == []                                     # waits for the claim, as always
    buf.put_bytes(pending, b"pending!")
    ring.commit(pending)
    assert collect(ring) == [(6, b"pending!"), (7, b"later")]


def test_a_malformed_record_before_the_wrap():
    mem, buf, ring = make_ring(512)
    for i in range(7):                                             # move the head to 448 so the next claims wrap
        ring.write(1, bytes(56))
    assert len(collect(ring)) == 7 and ring.consumer_position() == 448
    claim_with_bad_length(ring, buf, 40, 999)                      # 48 bytes at 448..496
    ring.write(2, bytes(40))                                       # does not fit in 16 bytes: padding, then at 0
    assert ring.producer_position() == 512 + 48
    with pytest.raises(CorruptFileError, match="skipped 48 bytes"):
        collect(ring)
    assert collect(ring) == []                                     # the padding to the end of the lap
    assert collect(ring) == [(2, bytes(40))]                       # then the record at index 0
    assert ring.consumer_position() == ring.producer_position()


def test_pinning_and_close():
    mem, buf, ring = make_ring(64)
    with pytest.raises(IllegalStateError):
        buf.close()                                                # pinned by the ring
    with pytest.raises(IllegalStateError):
        ring.write(1, b"x") and ring.read(lambda *a: ring.close())
    ring.close()
    assert ring.is_closed
    with pytest.raises(IllegalStateError):
        ring.write(1, b"x")
    with pytest.raises(IllegalStateError):
        ring.read(lambda *a: None)
    buf.close()
