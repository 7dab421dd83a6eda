# SPDX-License-Identifier: Apache-2.0
import gzip
import struct

import pytest

from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.cnc import CncFile
from aeron._core import counters as C
from aeron._core.counters import (AtomicCounter, CountersManager, CountersReader, format_counters,
                                  heartbeat_key_encode, stream_counter_key_decode, stream_counter_key_encode,
                                  system_counter_key_encode)
from aeron.common.errors import IllegalStateError, InvalidArgumentError, OutOfBoundsError

GOLDEN_CNC = ["c-aeronmd-ipc", "java-mediadriver-ipc", "c-aeronmd-udp-unicast/publisher-driver",
              "c-aeronmd-udp-unicast/subscriber-driver"]


def load_cnc(golden_dir, name):
    data = bytearray(gzip.decompress((golden_dir / "cnc" / name / "cnc.dat.gz").read_bytes()))
    return data, CncFile.from_buffer(data)


def reader_of(cnc):
    return CountersReader(cnc.counters_metadata_buffer(), cnc.counters_values_buffer())


def test_layout_constants_match_reference():
    assert (C.COUNTER_LENGTH, C.METADATA_LENGTH) == (128, 512)
    assert (C.REGISTRATION_ID_OFFSET, C.OWNER_ID_OFFSET, C.REFERENCE_ID_OFFSET) == (8, 16, 24)
    assert (C.TYPE_ID_OFFSET, C.FREE_FOR_REUSE_DEADLINE_OFFSET, C.KEY_OFFSET, C.LABEL_OFFSET) == (4, 8, 16, 128)
    assert (C.MAX_KEY_LENGTH, C.MAX_LABEL_LENGTH) == (112, 380)
    assert (C.RECORD_UNUSED, C.RECORD_ALLOCATED, C.RECORD_RECLAIMED) == (0, 1, -1)
    assert C.DRIVER_HEARTBEAT_TYPE_ID == 11 and C.DRIVER_PUBLISHER_POS_TYPE_ID == 12
    assert C.DRIVER_SUBSCRIBER_POSITION_TYPE_ID == 4 and C.DRIVER_RECEIVER_NAKS_SENT_TYPE_ID == 20
    assert C.SYSTEM_COUNTER_COUNT == 46
    assert C.BYTES_SENT == 0 and C.ERRORS == 15 and C.CONTROL_PROTOCOL_VERSION == 43
    assert C.NATIVE_RESOURCE_AGENT_PROXY_FAILS == 45


@pytest.mark.parametrize("name", GOLDEN_CNC)
def test_golden_aeronstat_lines(golden_dir, name):
    _, cnc = load_cnc(golden_dir, name)
    lines = format_counters(reader_of(cnc))
    expected = (golden_dir / "cnc" / name / "aeronstat-c.txt").read_text().splitlines()
    assert lines == expected[2:]
    java = golden_dir / "cnc" / name / "aeronstat-java.txt"
    if java.exists():
        jl = java.read_text().splitlines()
        assert jl[-1] == "--"
        assert lines == jl[2:-1]


def test_golden_system_counters(golden_dir):
    _, cnc = load_cnc(golden_dir, "c-aeronmd-ipc")
    r = reader_of(cnc)
    stat = (golden_dir / "cnc" / "c-aeronmd-ipc" / "aeronstat-c.txt").read_text().splitlines()[2:]
    for (cid, label), line in zip(C.SYSTEM_COUNTER_LABELS, stat[:46]):
        assert r.get_counter_state(cid) == C.RECORD_ALLOCATED
        assert r.get_counter_type_id(cid) == 0
        assert r.get_counter_registration_id(cid) == cid
        assert r.get_counter_owner_id(cid) == -1
        assert r.get_counter_reference_id(cid) == 0
        assert r.get_counter_key(cid) == struct.pack("<i", cid) + bytes(108)
        assert r.get_counter_label(cid).startswith(label)
        assert line.split(" - ", 1)[1] == r.get_counter_label(cid)
    assert r.get_counter_value(34) == 79104 and r.get_counter_value(43) == 65536
    assert r.get_counter_value(35) == 12_787_712
    assert r.get_counter_state(51) == C.RECORD_UNUSED
    assert r.max_counter_id == 8191


def test_golden_stream_and_heartbeat_counters(golden_dir):
    _, cnc = load_cnc(golden_dir, "c-aeronmd-ipc")
    r = reader_of(cnc)
    session = -1382497356
    expect = {
        46: (11, 1795334962804, 1, 1, 0, "client-heartbeat: id=1 name= version=1.53.0-SNAPSHOT commit=63c11a6914"),
        47: (12, 320, 4, 3, 0, f"pub-pos (concurrent): 4 {session} 1001 aeron:ipc"),
        48: (1, 32768, 4, 3, 0, f"pub-lmt: 4 {session} 1001 aeron:ipc"),
        49: (11, 1795334962776, 3, 3, 0, "client-heartbeat: id=3 name= version=1.53.0-SNAPSHOT commit=63c11a6914"),
        50: (4, 320, 2, 1, 4, f"sub-pos: 2 {session} 1001 aeron:ipc @0"),
    }
    for cid, (type_id, value, reg, owner, ref, label) in expect.items():
        assert (r.get_counter_type_id(cid), r.get_counter_value(cid), r.get_counter_registration_id(cid),
                r.get_counter_owner_id(cid), r.get_counter_reference_id(cid),
                r.get_counter_label(cid)) == (type_id, value, reg, owner, ref, label)
        assert r.get_free_for_reuse_deadline(cid) == 2**63 - 1
    assert r.get_counter_key(46)[:8] == heartbeat_key_encode(1)
    for cid, reg in ((47, 4), (48, 4), (50, 2)):
        key = r.get_counter_key(cid)
        assert key[:29] == struct.pack("<qiii", reg, session, 1001, 9) + b"aeron:ipc"
        assert stream_counter_key_decode(key) == (reg, session, 1001, "aeron:ipc")
        assert C.stream_counter_label("pub-lmt", reg, session, 1001, "aeron:ipc") == f"pub-lmt: {reg} {session} 1001 aeron:ipc"
    seen = []
    r.for_each(lambda cid, type_id, key, label: seen.append((cid, type_id, len(key), label)))
    assert [s[0] for s in seen] == list(range(51))
    assert seen[47] == (47, 12, 112, expect[47][5])
    assert r.find_by_type_id_and_registration_id(1, 4) == 48
    assert r.find_by_type_id_and_registration_id(1, 99) == -1


def test_golden_udp_channel_and_sockaddr_keys(golden_dir):
    _, cnc = load_cnc(golden_dir, "c-aeronmd-udp-unicast/publisher-driver")
    r = reader_of(cnc)
    assert r.get_counter_type_id(46) == C.DRIVER_SEND_CHANNEL_STATUS_TYPE_ID
    assert r.get_counter_value(46) == C.CHANNEL_ENDPOINT_STATUS_ACTIVE
    assert C.channel_status_key_decode(r.get_counter_key(46)) == \
        "aeron:udp?endpoint=127.0.0.1:40601|interface=127.0.0.1:40602"
    assert C.local_sockaddr_key_decode(r.get_counter_key(47)) == (46, "127.0.0.1:40602")


def _rebuild_like_golden(r, upto):
    meta = bytearray(len(r.metadata_buffer))
    vals = bytearray(len(r.values_buffer))
    m = CountersManager(AtomicBuffer(meta), AtomicBuffer(vals), clock_ms=lambda: 0)
    for cid in range(upto):
        label = r.get_counter_label(cid)
        type_id = r.get_counter_type_id(cid)
        if type_id == 0:
            key = system_counter_key_encode(cid)
        elif type_id == C.DRIVER_HEARTBEAT_TYPE_ID:
            key = heartbeat_key_encode(r.get_counter_registration_id(cid))
        else:
            key = stream_counter_key_encode(*stream_counter_key_decode(r.get_counter_key(cid)))
        got = m.allocate(label, type_id, key, registration_id=r.get_counter_registration_id(cid),
                         owner_id=r.get_counter_owner_id(cid), reference_id=r.get_counter_reference_id(cid))
        assert got == cid
        # Values vary run to run (timestamps, positions, cycle times): write the same ones in.
        m.set_counter_value(cid, r.get_counter_value(cid))
    return meta, vals


@pytest.mark.parametrize("name", ["c-aeronmd-ipc", "java-mediadriver-ipc"])
def test_manager_reproduces_golden_sections_byte_for_byte(golden_dir, name):
    data, cnc = load_cnc(golden_dir, name)
    r = reader_of(cnc)
    meta, vals = _rebuild_like_golden(r, 51)
    mo, vo = cnc.counters_metadata_buffer_offset, cnc.counters_values_buffer_offset
    assert bytes(meta[:51 * 512]) == bytes(data[mo:mo + 51 * 512])
    assert bytes(vals[:51 * 128]) == bytes(data[vo:vo + 51 * 128])
    assert not any(meta[51 * 512:]) and not any(vals[51 * 128:])


def make_manager(n=8, timeout=0, clock=None):
    meta = bytearray(n * 512)
    vals = bytearray(n * 128)
    return meta, vals, CountersManager(AtomicBuffer(meta), AtomicBuffer(vals), timeout, clock or (lambda: 0))


def test_allocate_layout_bytes():
    meta, vals, m = make_manager()
    cid = m.allocate("hello", 7, b"\x01\x02", registration_id=9, owner_id=-1, reference_id=3)
    assert cid == 0
    assert struct.unpack_from("<iiq", meta, 0) == (1, 7, 2**63 - 1)
    assert meta[16:18] == b"\x01\x02" and not any(meta[18:128])
    assert struct.unpack_from("<i", meta, 128)[0] == 5 and meta[132:137] == b"hello"
    assert struct.unpack_from("<qqqq", vals, 0) == (0, 9, -1, 3)
    m.set_counter_value(0, 42)
    assert struct.unpack_from("<q", vals, 0)[0] == 42


def test_label_truncated_and_append():
    meta, vals, m = make_manager()
    cid = m.allocate("x" * 500)
    assert m.get_counter_label(cid) == "x" * 380
    cid2 = m.allocate("abc")
    assert m.append_to_label(cid2, " def") == 4
    assert m.get_counter_label(cid2) == "abc def"
    assert m.append_to_label(cid, "more") == 0
    m.set_counter_label(cid2, "new")
    assert m.get_counter_label(cid2) == "new"
    m.set_counter_key(cid2, b"\x05" * 112)
    assert m.get_counter_key(cid2) == b"\x05" * 112
    with pytest.raises(InvalidArgumentError):
        m.set_counter_key(cid2, bytes(113))


def test_key_too_long_and_bad_ids():
    _, _, m = make_manager()
    with pytest.raises(InvalidArgumentError):
        m.allocate("k", key=bytes(113))
    m.allocate("k", key=bytes(112))
    for bad in (-1, 8, 10_000):
        with pytest.raises(OutOfBoundsError):
            m.get_counter_value(bad)
        with pytest.raises(OutOfBoundsError):
            m.get_counter_label(bad)
        with pytest.raises(OutOfBoundsError):
            m.set_counter_value(bad, 1)


def test_full_buffer_raises():
    _, _, m = make_manager(n=3)
    assert [m.allocate(f"c{i}") for i in range(3)] == [0, 1, 2]
    with pytest.raises(IllegalStateError):
        m.allocate("overflow")


def test_free_and_reuse_after_timeout():
    now = [1000]
    meta, vals, m = make_manager(n=4, timeout=500, clock=lambda: now[0])
    a = m.allocate("a", 1, b"\xff" * 8, registration_id=5)
    b = m.allocate("b")
    m.set_counter_value(a, 77)
    m.free(a)
    assert m.get_counter_state(a) == C.RECORD_RECLAIMED
    assert m.get_free_for_reuse_deadline(a) == 1500
    assert m.get_counter_key(a) == bytes(112)
    assert m.get_counter_label(a) == "a" and m.get_counter_value(a) == 77   # left as they were
    with pytest.raises(IllegalStateError):
        m.free(a)
    assert m.allocate("c") == 2              # not yet reusable
    now[0] = 1500
    assert m.allocate("d", registration_id=0) == a
    assert m.get_counter_value(a) == 0 and m.get_counter_label(a) == "d"
    assert m.get_counter_state(a) == C.RECORD_ALLOCATED
    # reader walk: stops at first unused, skips reclaimed
    m.free(b)
    assert [rec.counter_id for rec in m.counters()] == [0, 2]


def test_reader_validates_lengths():
    with pytest.raises(InvalidArgumentError):
        CountersReader(AtomicBuffer(bytearray(512 * 3)), AtomicBuffer(bytearray(128 * 4)))
    with pytest.raises(InvalidArgumentError):
        CountersReader(AtomicBuffer(bytearray(4096)), AtomicBuffer(bytearray(130)))


def test_corrupt_label_length_is_typed():
    meta, _, m = make_manager()
    m.allocate("a")
    struct.pack_into("<i", meta, 128, 9999)
    from aeron.common.errors import CorruptFileError
    with pytest.raises(CorruptFileError):
        m.get_counter_label(0)


def test_atomic_counter():
    meta, vals, m = make_manager()
    cid = m.allocate("pos")
    vb = m.values_buffer
    c = AtomicCounter(vb, cid)
    assert c.get() == 0
    c.set_ordered(10)
    assert c.get_volatile() == 10 and m.get_counter_value(cid) == 10
    assert c.increment() == 10 and c.get() == 11
    assert c.get_and_add(5) == 11 and c.get() == 16
    assert c.propose_max_ordered(12) is False and c.get() == 16
    assert c.propose_max_ordered(20) is True and c.get() == 20
    with pytest.raises(IllegalStateError):
        vb.close()                            # the counter pins the memory
    c.close()
    with pytest.raises(IllegalStateError):
        c.get()
    with pytest.raises(OutOfBoundsError):
        AtomicCounter(vb, 8)
