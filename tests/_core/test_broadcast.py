# SPDX-License-Identifier: Apache-2.0
import gzip
import os
import struct
import subprocess
import sys
import textwrap
import time

import pytest

from aeron._core import broadcast as bm
from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.broadcast import BroadcastReceiver, BroadcastTransmitter, CopyBroadcastReceiver
from aeron.common.errors import (ConfigurationError, CorruptFileError, IllegalStateError, InvalidArgumentError,
                          OutOfBoundsError)

TO_CLIENTS_OFFSET = 1_049_472
TO_CLIENTS_LENGTH = 1_048_704
# (offset, record length incl. header, type) of the records in the golden cnc/c-aeronmd-ipc/cnc.dat
# (golden data from official Aeron, see tests/data/golden/README.md)
GOLDEN_RECORDS = [(0, 20, 0x0F08), (24, 20, 0x0F07), (48, 20, 0x0F08), (72, 90, 0x0F03), (168, 101, 0x0F02)]


def make(capacity=1024):
    mem = bytearray(capacity + 128)
    buf = AtomicBuffer(mem)
    return mem, buf, BroadcastTransmitter(buf)


def trailer(mem, capacity):
    return struct.unpack_from("<qqq", mem, capacity)


def drain(receiver):
    out = []
    while receiver.receive_next():
        out.append((receiver.type_id, receiver.buffer.get_bytes(receiver.offset, receiver.length)))
        assert receiver.validate()
    return out


# -- layout (BroadcastBufferDescriptor, a default cnc.dat) ------------------------------------------------
def test_layout_constants_match_reference():
    assert (bm.TAIL_INTENT_COUNTER_OFFSET, bm.TAIL_COUNTER_OFFSET, bm.LATEST_COUNTER_OFFSET) == (0, 8, 16)
    assert bm.TRAILER_LENGTH == 128
    assert (bm.HEADER_LENGTH, bm.RECORD_ALIGNMENT, bm.LENGTH_OFFSET, bm.TYPE_OFFSET) == (8, 8, 0, 4)
    assert bm.PADDING_MSG_TYPE_ID == -1 and bm.SCRATCH_BUFFER_LENGTH == 4096
    capacity = TO_CLIENTS_LENGTH - 128
    assert [TO_CLIENTS_OFFSET + capacity + f for f in (0, 8, 16)] == [2_098_048, 2_098_056, 2_098_064]


def test_record_encoding_and_trailer():
    mem, buf, tx = make(1024)
    assert tx.capacity == 1024 and tx.max_msg_length == 128
    tx.transmit(0x0F08, struct.pack("<qi", 1, 48))                 # ON_COUNTER_READY, 12-byte payload
    assert struct.unpack_from("<ii", mem, 0) == (20, 0x0F08)        # unaligned length, 24 bytes used
    assert struct.unpack_from("<qi", mem, 8) == (1, 48)
    assert trailer(mem, 1024) == (24, 24, 0)
    tx.transmit(0x0F07, b"0123456789", 3, 4)
    assert struct.unpack_from("<ii", mem, 24) == (12, 0x0F07) and mem[32:36] == b"3456"
    assert trailer(mem, 1024) == (40, 40, 24)


# -- golden cnc.dat ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def golden_section(golden_dir):
    cnc = gzip.decompress((golden_dir / "cnc" / "c-aeronmd-ipc" / "cnc.dat.gz").read_bytes())
    assert struct.unpack_from("<i", cnc, 8)[0] == TO_CLIENTS_LENGTH
    return bytes(cnc[TO_CLIENTS_OFFSET:TO_CLIENTS_OFFSET + TO_CLIENTS_LENGTH])


def test_golden_trailer_and_fresh_receiver_starts_at_latest(golden_section):
    mem = bytearray(golden_section)
    capacity = TO_CLIENTS_LENGTH - 128
    assert trailer(mem, capacity) == (272, 272, 168)
    rx = BroadcastReceiver(AtomicBuffer(mem))
    assert rx.capacity == 1 << 20
    assert rx.cursor == rx.next_record == 168
    assert rx.receive_next()                                        # the latest record is re-delivered
    assert (rx.cursor, rx.type_id, rx.offset, rx.length) == (168, 0x0F02, 176, 93)
    corr, session, stream, sub_reg, sub_pos_id = struct.unpack_from("<qiiqi", mem, rx.offset)
    assert (corr, session, stream, sub_reg, sub_pos_id) == (4, -1382497356, 1001, 2, 50)
    assert not rx.receive_next()
    assert rx.lapped_count == 0


def test_golden_records_from_start(golden_section):
    mem = bytearray(golden_section)
    capacity = TO_CLIENTS_LENGTH - 128
    struct.pack_into("<q", mem, capacity + 16, 0)                  # latest = 0: receiver starts at 0
    rx = BroadcastReceiver(AtomicBuffer(mem))
    seen = []
    while rx.receive_next():
        assert rx.validate()
        seen.append((rx.offset - 8, rx.length + 8, rx.type_id))
    assert seen == GOLDEN_RECORDS
    assert struct.unpack_from("<qi", mem, 8) == (1, 46)            # ON_COUNTER_READY corr 1, counter 46
    assert struct.unpack_from("<qi", mem, 32) == (2, -1)           # ON_SUBSCRIPTION_READY corr 2
    assert struct.unpack_from("<qi", mem, 56) == (3, 49)
    assert struct.unpack_from("<qqiiii", mem, 80) == (4, 4, -1382497356, 1001, 48, -1)


def test_transmitter_rebuilds_golden_section_byte_for_byte(golden_section):
    mem = bytearray(TO_CLIENTS_LENGTH)
    tx = BroadcastTransmitter(AtomicBuffer(mem))
    for offset, length, type_id in GOLDEN_RECORDS:
        tx.transmit(type_id, golden_section, offset + 8, length - 8)
    assert mem == golden_section


def test_golden_copy_receiver(golden_section):
    mem = bytearray(golden_section)
    cr = CopyBroadcastReceiver(BroadcastReceiver(AtomicBuffer(mem)))
    got = []
    assert cr.receive(lambda t, b, o, n: got.append((t, b, o, n, b.get_bytes(o, n)))) == 1
    (t, b, o, n, payload), = got
    assert (t, o, n) == (0x0F02, 0, 93) and b is cr.scratch_buffer
    assert payload == golden_section[176:176 + 93]
    assert cr.receive(lambda *a: got.append(a)) == 0


# -- transmit / receive ---------------------------------------------------------------------------------------
def test_transmit_receive_in_order():
    mem, buf, tx = make(1024)
    rx = BroadcastReceiver(buf)                                     # fresh buffer: latest 0
    assert not rx.receive_next()
    msgs = [(i + 1, bytes([i]) * i) for i in range(12)]
    for t, p in msgs:
        tx.transmit(t, p)
    assert drain(rx) == msgs
    assert rx.lapped_count == 0
    tx.transmit(99, b"late")
    assert drain(rx) == [(99, b"late")]


def test_wrap_inserts_padding():
    mem, buf, tx = make(128)                                        # max_msg_length 16
    rx = BroadcastReceiver(buf)
    for i in range(6):
        tx.transmit(1, bytes([i]) * 8)                              # 16-byte records: tail 96
    assert drain(rx) == [(1, bytes([i]) * 8) for i in range(6)]
    tx.transmit(2, bytes(range(16)))                                # 24 bytes, 32 to the end: fits
    assert trailer(mem, 128) == (120, 120, 96)
    tx.transmit(3, b"wrapped!")                                     # 16 > 8 to the end: pad + wrap
    assert struct.unpack_from("<ii", mem, 120) == (8, -1)
    assert struct.unpack_from("<ii", mem, 0) == (16, 3) and mem[8:16] == b"wrapped!"
    assert trailer(mem, 128) == (144, 144, 128)                     # latest = position after padding
    assert drain(rx) == [(2, bytes(range(16))), (3, b"wrapped!")]
    assert rx.cursor == 128 and rx.next_record == 144


def test_zero_length_message():
    mem, buf, tx = make(64)
    rx = BroadcastReceiver(buf)
    tx.transmit(5, b"")
    assert struct.unpack_from("<ii", mem, 0) == (8, 5)
    assert drain(rx) == [(5, b"")]


def test_slow_receiver_is_lapped_and_recovers_at_latest():
    mem, buf, tx = make(128)
    rx = BroadcastReceiver(buf)
    tx.transmit(1, b"first")
    assert rx.receive_next() and rx.type_id == 1
    for i in range(20):                                             # more than a buffer's worth
        tx.transmit(10 + i, bytes([i]) * 8)
    assert not rx.validate()                                        # the held record was overwritten
    assert rx.receive_next()
    assert rx.lapped_count == 1
    latest = struct.unpack_from("<q", mem, 128 + 16)[0]
    assert rx.cursor == latest and rx.type_id == 29
    assert rx.validate()
    tx.transmit(50, b"next")
    assert drain(rx) == [(50, b"next")] and rx.lapped_count == 1


def test_copy_receiver_contract():
    mem, buf, tx = make(1024)
    cr = CopyBroadcastReceiver(BroadcastReceiver(buf), scratch_length=32)
    assert cr.scratch_length == 32 and len(cr.scratch_buffer) == 32
    got = []
    handler = lambda t, b, o, n: got.append((t, o, n, b.get_bytes(o, n)))
    assert cr.receive(handler) == 0
    tx.transmit(4, b"hello")
    assert cr.receive(handler) == 1 and got == [(4, 0, 5, b"hello")]
    tx.transmit(5, bytes(33))                                       # longer than the scratch buffer
    tx.transmit(6, b"after")
    with pytest.raises(IllegalStateError, match="scratch buffer too small"):
        cr.receive(handler)
    assert cr.receive(handler) == 1 and got[-1] == (6, 0, 5, b"after")   # the big one was skipped


def test_copy_receiver_lapped_raises_then_continues():
    mem, buf, tx = make(128)
    cr = CopyBroadcastReceiver(BroadcastReceiver(buf))
    for i in range(20):
        tx.transmit(1 + i, bytes([i]) * 8)
    with pytest.raises(IllegalStateError, match="unable to keep up with broadcast"):
        cr.receive(lambda *a: None)
    assert cr.receiver.lapped_count == 1
    tx.transmit(77, b"fresh")
    got = []
    assert cr.receive(lambda t, b, o, n: got.append((t, b.get_bytes(o, n)))) == 1
    assert got == [(77, b"fresh")]


TRANSMITTER_SCRIPT = textwrap.dedent("""
    import struct, sys, time
    from aeron._core.atomic_buffer import AtomicBuffer
    from aeron._core.broadcast import BroadcastTransmitter
    tx = BroadcastTransmitter(AtomicBuffer.map_file(sys.argv[1]))
    end = time.monotonic() + float(sys.argv[2])
    seq = burst = 0
    while time.monotonic() < end:
        # Long bursts lap the 4 KiB buffer continuously (tearing copies); short ones and the
        # pauses let a reader slowed by a loaded machine deliver too.
        burst += 1
        for _ in range(20000 if burst % 2 == 0 else 10):
            n = 8 + seq % 400
            tx.transmit(1 + seq % 1000, struct.pack("<q", seq) + bytes([seq & 0xFF]) * (n - 8))
            seq += 1
        time.sleep(0.001)
""")


def test_copy_receiver_never_delivers_torn_copies(shm_dir):
    # A transmitter in another process laps a 4 KiB buffer continuously; every message the copy
    # receiver delivers must be intact (validated after the copy), the rest are reported as loss.
    path = shm_dir / "bcast.dat"
    buf = AtomicBuffer.map_file(path, 4096 + 128, create=True)
    rx = BroadcastReceiver(buf)
    cr = CopyBroadcastReceiver(rx)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.Popen([sys.executable, "-c", TRANSMITTER_SCRIPT, str(path), "1.5"], env=env)
    delivered = 0
    last_seq = -1

    def handler(t, b, o, n):
        nonlocal delivered, last_seq
        seq = b.get_i64(o)
        assert t == 1 + seq % 1000 and n == 8 + seq % 400
        assert b.get_bytes(o + 8, n - 8) == bytes([seq & 0xFF]) * (n - 8)
        assert seq > last_seq
        last_seq = seq
        delivered += 1

    try:
        deadline = time.monotonic() + 15
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                cr.receive(handler)
            except IllegalStateError as e:
                assert "unable to keep up" in str(e)
        assert proc.wait(timeout=10) == 0
        while cr.receive(handler):
            pass
        assert delivered > 50
    finally:
        proc.kill()
        rx.close()
        buf.close()


# -- bad input ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("cls", [BroadcastTransmitter, BroadcastReceiver])
@pytest.mark.parametrize("length", [1000 + 128, 128, 100, 0, 128 + 24])
def test_bad_capacity(cls, length):
    with pytest.raises(ConfigurationError):
        cls(AtomicBuffer(bytearray(max(length, 1)), 0, length))


def test_bad_capacity_from_file_is_corrupt_file(shm_dir):
    path = shm_dir / "bad.dat"
    with AtomicBuffer.map_file(path, 1000 + 128, create=True) as buf:
        with pytest.raises(CorruptFileError):
            BroadcastReceiver(buf)


def test_bad_messages():
    mem, buf, tx = make(256)
    for t in (0, -1):
        with pytest.raises(InvalidArgumentError):
            tx.transmit(t, b"x")
    tx.transmit(1, bytes(32))                                       # max_msg_length = 256 / 8
    with pytest.raises(InvalidArgumentError):
        tx.transmit(1, bytes(33))
    with pytest.raises(OutOfBoundsError):
        tx.transmit(1, b"abc", 1, 5)
    with pytest.raises(OutOfBoundsError):
        tx.transmit(1, b"abc", 4)                                   # to the end, from past it
    with pytest.raises(InvalidArgumentError, match="length must be >= 0, got -2"):
        tx.transmit(1, b"abc", 0, -2)
    assert trailer(mem, 256) == (40, 40, 0)
    with pytest.raises(InvalidArgumentError):
        CopyBroadcastReceiver(BroadcastReceiver(buf), scratch_length=0)


def test_malformed_record_raises_corrupt_file():
    mem, buf, tx = make(256)
    rx = BroadcastReceiver(buf)
    tx.transmit(1, b"ok")
    struct.pack_into("<ii", mem, 0, 4000, 1)                        # length past the buffer
    with pytest.raises(CorruptFileError):
        rx.receive_next()
    struct.pack_into("<ii", mem, 0, 3, 1)                           # shorter than a header
    with pytest.raises(CorruptFileError):
        CopyBroadcastReceiver(rx).receive(lambda *a: None)


def test_pinning_and_close():
    mem, buf, tx = make(64)
    rx = BroadcastReceiver(buf)
    with pytest.raises(IllegalStateError):
        buf.close()
    tx.close()
    rx.close()
    with pytest.raises(IllegalStateError):
        tx.transmit(1, b"x")
    with pytest.raises(IllegalStateError):
        rx.receive_next()
    buf.close()
