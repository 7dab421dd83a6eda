# SPDX-License-Identifier: Apache-2.0
"""Descriptor math and LogBuffers against LogBufferDescriptor and the golden log buffers."""
import gzip
import os
import struct

import pytest

from aeron._core import logbuffer as lb
from aeron._core.logbuffer import LogBuffers, read_metadata
from aeron.common.errors import ConfigurationError, CorruptFileError, IllegalStateError, InvalidArgumentError

INT64_MAX = (1 << 63) - 1
META = 200704 - 4096


# -- position arithmetic (LogBufferDescriptor) --------------------------------------------------------
def test_raw_tail_example():
    raw = lb.pack_tail(5, 0xC0)
    assert raw == 0x00000005000000C0
    assert lb.term_id(raw) == 5
    assert lb.term_offset(raw, 65536) == 0xC0


def test_raw_tail_negative_term_id_and_clamp():
    raw = lb.pack_tail(-3, 70000)
    assert raw == (-3 << 32) | 70000
    assert lb.term_id(raw) == -3
    assert lb.term_offset(raw, 65536) == 65536          # offset past the end clamps
    # the low word is unsigned: a raw offset >= 2^31 still clamps, never goes negative
    assert lb.term_offset((7 << 32) | 0xFFFFFFF0, 65536) == 65536


def test_position_worked_example():
    shift = lb.position_bits_to_shift(65536)
    assert shift == 16
    assert lb.compute_position(6, 320, shift, 5) == 65856
    assert lb.compute_term_begin_position(6, shift, 5) == 65536
    assert lb.compute_term_id_from_position(65856, shift, 5) == 6
    assert lb.compute_term_offset_from_position(65856, shift) == 320
    assert lb.index_by_position(65856, shift) == 1
    assert lb.index_by_term(5, 6) == 1
    assert lb.index_by_term_count(4) == 1


def test_term_id_wraps_at_2_pow_31():
    shift = 16
    initial = 2**31 - 2
    # term ids 2^31-2, 2^31-1, -2^31, -2^31+1: counts 0..3
    assert lb.term_count(-(2**31), initial) == 2
    assert lb.compute_position(-(2**31), 64, shift, initial) == 2 * 65536 + 64
    assert lb.compute_term_id_from_position(3 * 65536, shift, initial) == -(2**31) + 1
    assert lb.index_by_term(initial, -(2**31) + 1) == 0
    # the partitions "before" the initial one, as the driver pre-sets them (aeron_network_publication_create)
    assert lb.index_by_term(initial, initial - 1) == 2
    assert lb.index_by_term(initial, initial - 2) == 1


@pytest.mark.parametrize("term_length,shift", [(65536, 16), (1 << 20, 20), (16 << 20, 24), (1 << 30, 30)])
def test_shift_and_max_position(term_length, shift):
    assert lb.position_bits_to_shift(term_length) == shift
    assert lb.max_possible_position(term_length) == term_length << 31


def test_check_term_length():
    for ok in (65536, 1 << 17, 1 << 30):
        lb.check_term_length(ok)
    for bad in (32768, 65536 + 4096, (1 << 30) * 2, 0, -65536, 3 * 65536):
        with pytest.raises(ConfigurationError):
            lb.check_term_length(bad)


def test_check_page_size():
    for ok in (4096, 8192, 1 << 21, 1 << 30):
        lb.check_page_size(ok)
    for bad in (2048, 4096 + 32, 1 << 31, 0, 12288):
        with pytest.raises(ConfigurationError):
            lb.check_page_size(bad)


def test_check_mtu_length():
    for ok in (64, 1408, 8192, 65504):
        lb.check_mtu_length(ok)
    for bad in (32, 0, 1400, 65536, 65505):
        with pytest.raises(ConfigurationError):
            lb.check_mtu_length(bad)


def test_compute_log_length():
    assert lb.compute_log_length(65536) == 200704
    assert lb.compute_log_length(65536, 4096) == 3 * 65536 + 4096
    assert lb.compute_log_length(65536, 1 << 20) == 1 << 20        # rounded up to the page
    assert lb.compute_log_length(16 << 20, 2 << 20) == 50 << 20
    with pytest.raises(ConfigurationError):
        lb.compute_log_length(65536, 1000)


def test_max_message_length():
    assert lb.compute_max_message_length(65536) == 8192
    assert lb.compute_max_message_length(16 << 20) == 2 << 20
    assert lb.compute_max_message_length(1 << 30) == 16 << 20


def test_fragmented_length_example():
    assert lb.compute_fragmented_length(3000, 1408 - 32) == 3104
    assert lb.compute_fragmented_length(1376, 1376) == 1408
    assert lb.compute_fragmented_length(1377, 1376) == 1408 + 64
    assert lb.compute_fragmented_length(2752, 1376) == 2816
    with pytest.raises(ConfigurationError):
        lb.compute_fragmented_length(10, 0)


def test_align():
    assert lb.align(46, 32) == 64
    assert lb.align(64, 32) == 64
    assert lb.align(0, 32) == 0
    with pytest.raises(ConfigurationError):
        lb.align(10, 24)


# -- golden log buffers (official Aeron, see tests/data/golden/README.md) -------------------------
C_HOST = dict(os_default_socket_sndbuf_length=212992, os_max_socket_sndbuf_length=0,
              os_default_socket_rcvbuf_length=212992, os_max_socket_rcvbuf_length=0, max_resend=0)
COMMON = dict(active_term_count=0, end_of_stream_position=INT64_MAX, default_frame_header_length=32,
              mtu_length=1408, term_length=65536, page_size=4096, socket_sndbuf_length=0,
              socket_rcvbuf_length=0, untethered_window_limit_timeout_ns=5_000_000_000,
              untethered_resting_timeout_ns=10_000_000_000, is_response=0, sparse=1,
              spies_simulate_connection=0, is_publication_revoked=0, untethered_linger_timeout_ns=5_000_000_000)
PUB = dict(COMMON, is_connected=1, active_transport_count=0, correlation_id=2, publication_window_length=32768,
           receiver_window_length=0, entity_tag=-1, response_correlation_id=-1, linger_timeout_ns=5_000_000_000,
           rejoin=0, reliable=0, signal_eos=1, tether=0, type=0)
IMAGE = dict(COMMON, is_connected=0, active_transport_count=1, correlation_id=3, publication_window_length=0,
             receiver_window_length=131072, entity_tag=0, response_correlation_id=0, linger_timeout_ns=0,
             rejoin=1, reliable=1, signal_eos=0, tether=1, type=2, **C_HOST)

# (relative path, session id, initial term id, expected fields)
GOLDEN = {
    "ipc-c-aeronmd": ("ipc-c-aeronmd/4.logbuffer.gz", -1382497356, 2145401527,
                      dict(PUB, correlation_id=4, group=0, **C_HOST)),
    "ipc-java-mediadriver": ("ipc-java-mediadriver/4.logbuffer.gz", 1492258850, -604896961,
                             dict(PUB, correlation_id=4, group=0, os_default_socket_sndbuf_length=106496,
                                  os_max_socket_sndbuf_length=4194304, os_default_socket_rcvbuf_length=106496,
                                  os_max_socket_rcvbuf_length=4194304, max_resend=16)),
    "udp-unicast-pub": ("udp-unicast/publisher-driver/publications/2.logbuffer.gz", -1814757439, 1569665970,
                        dict(PUB, group=0, **C_HOST)),
    "udp-unicast-image": ("udp-unicast/subscriber-driver/images/3.logbuffer.gz", -1814757439, 1569665970,
                          dict(IMAGE, group=0)),
    "udp-loss-pub": ("udp-unicast-loss-rttm/publisher-driver/publications/2.logbuffer.gz", -976833086, 1000,
                     dict(PUB, group=0, **C_HOST)),
    "udp-loss-image": ("udp-unicast-loss-rttm/subscriber-driver/images/3.logbuffer.gz", -976833086, 1000,
                       dict(IMAGE, group=0)),
    "udp-multicast-pub": ("udp-multicast/publisher-driver/publications/2.logbuffer.gz", 180082899, -379515587,
                          dict(PUB, group=1, **C_HOST)),
    "udp-multicast-image": ("udp-multicast/subscriber-driver/images/3.logbuffer.gz", 180082899, -379515587,
                            dict(IMAGE, group=1)),
}
DEFAULT_HEADERS = {
    "ipc-c-aeronmd": "0000000000c0010000000000b4c398ade9030000b73ae07f0000000000000000",
    "ipc-java-mediadriver": "0000000000c00100000000002210f258e90300003f01f2db0000000000000000",
    "udp-unicast-pub": "0000000000c0010000000000c1ffd493e9030000b2338f5d0000000000000000",
    "udp-loss-pub": "0000000000c0010000000000c2b5c6c5e9030000e80300000000000000000000",
    "udp-multicast-pub": "0000000000c0010000000000d3d8bb0ae90300003d0d61e90000000000000000",
}


def golden_bytes(golden_dir, name):
    return gzip.decompress((golden_dir / "logbuffers" / GOLDEN[name][0]).read_bytes())


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden_metadata(golden_dir, name):
    _, session_id, initial, expected = GOLDEN[name]
    data = bytearray(golden_bytes(golden_dir, name))
    assert len(data) == 200704
    log = LogBuffers(data)
    try:
        assert (log.term_length, log.page_size, log.mtu_length, log.initial_term_id) == (65536, 4096, 1408, initial)
        assert log.position_bits_to_shift == 16
        assert log.max_message_length == 8192
        assert log.max_possible_position == 65536 << 31
        assert log.log_length == 200704
        meta = log.metadata()
        for field, value in expected.items():
            assert meta[field] == value, field
        assert meta["initial_term_id"] == initial
        assert log.session_id == session_id and log.stream_id == 1001
        assert log.correlation_id == expected["correlation_id"]
        assert log.is_connected == (expected["is_connected"] == 1)
        assert log.active_transport_count == expected["active_transport_count"]
        assert log.end_of_stream_position == INT64_MAX
        assert log.active_term_count == 0 and log.active_partition_index == 0
        header = struct.pack("<iBBhiiiiq", 0, 0, 0xC0, 1, 0, session_id, 1001, initial, 0)
        assert log.default_frame_header == header
        if name in DEFAULT_HEADERS:
            assert header.hex() == DEFAULT_HEADERS[name]
        if expected["type"] == 2:
            assert log.raw_tails() == (0, 0, 0)
        else:
            assert log.raw_tails() == (lb.pack_tail(initial, 320), lb.pack_tail(initial - 2, 0),
                                       lb.pack_tail(initial - 1, 0))
            assert log.compute_position(initial, 320) == 320
        # the metadata section starts exactly at 3 * term_length and the rest of it is zero
        assert bytes(data[META + 508:]) == bytes(4096 - 508)
        assert read_metadata(bytes(data[META:])) == meta
    finally:
        log.close()


def test_map_existing_golden(golden_dir, tmp_path):
    path = tmp_path / "4.logbuffer"
    path.write_bytes(golden_bytes(golden_dir, "ipc-c-aeronmd"))
    with LogBuffers.map_existing(path) as log:
        assert log.path == os.fspath(path)
        assert log.initial_term_id == 2145401527
        term0 = log.term_buffer(0)
        assert term0.get_i32_volatile(0) == 46
        assert term0.get_bytes(32, 14) == b"Hello World! 0"
        assert term0.get_bytes(256 + 32, 14) == b"Hello World! 4"
        with pytest.raises(IllegalStateError):
            log.close()                       # a term view is alive
        term0.close()
        with pytest.raises(InvalidArgumentError):
            log.term_buffer(3)
    assert log.is_closed
    with pytest.raises(IllegalStateError):
        log.raw_tails()


# -- corrupt inputs -----------------------------------------------------------------------------------
def _golden_file(golden_dir, tmp_path, mutate):
    data = bytearray(golden_bytes(golden_dir, "ipc-c-aeronmd"))
    data = mutate(data)
    path = tmp_path / "bad.logbuffer"
    path.write_bytes(bytes(data))
    return path


def _put_i32(offset, value):
    def mutate(data):
        struct.pack_into("<i", data, offset, value)
        return data
    return mutate


@pytest.mark.parametrize("mutate,offset", [
    (_put_i32(META + 276, 65536 + 4096), META + 276),      # term length not a power of 2
    (_put_i32(META + 276, 32768), META + 276),             # below the minimum
    (_put_i32(META + 280, 4000), META + 280),              # page size not a power of 2
    (_put_i32(META + 280, 1 << 20), 200704),               # page size legal but length mismatch
    (_put_i32(META + 276, 1 << 17), 200704),               # term length legal but length mismatch
    (_put_i32(META + 272, 1400), META + 272),              # mtu not a multiple of 32
    (_put_i32(META + 272, 0), META + 272),                 # mtu too small
    (_put_i32(META + 268, 64), META + 268),                # default frame header length wrong
])
def test_corrupt_metadata(golden_dir, tmp_path, mutate, offset):
    path = _golden_file(golden_dir, tmp_path, mutate)
    with pytest.raises(CorruptFileError) as info:
        LogBuffers.map_existing(path)
    assert info.value.path == os.fspath(path)
    assert info.value.offset == offset


def test_truncated_file(golden_dir, tmp_path):
    path = _golden_file(golden_dir, tmp_path, lambda d: d[:100000])
    with pytest.raises(CorruptFileError) as info:
        LogBuffers.map_existing(path)
    assert info.value.path == os.fspath(path)
    assert info.value.offset == 100000
    # valid metadata in the last 4096 bytes, but the file is one page longer than it implies
    path.unlink()
    path = _golden_file(golden_dir, tmp_path, lambda d: d + d[-4096:])
    with pytest.raises(CorruptFileError) as info:
        LogBuffers.map_existing(path)
    assert info.value.offset == 200704 + 4096


def test_in_memory_corrupt_has_offset():
    with pytest.raises(CorruptFileError) as info:
        LogBuffers(bytearray(200704))               # all-zero metadata
    assert info.value.offset == META + 276


@pytest.mark.parametrize("shift", [1, 4])
def test_misaligned_log_memory_is_rejected(shift):
    # Tails, active term count and frame lengths are accessed with atomics, which need natural
    # alignment; a log window that does not start 8-aligned would make every one of them misaligned.
    from aeron._core.atomic_buffer import AtomicBuffer
    good = LogBuffers.create(term_length=65536, initial_term_id=0, session_id=1, stream_id=2)
    n = good.log_length
    data = bytearray(n + 8)
    data[shift:shift + n] = good.buffer.get_bytes(0, n)
    window = AtomicBuffer(data, shift, n)
    assert window.address % 8 != 0
    with pytest.raises(InvalidArgumentError):
        LogBuffers(window)
    window.close()


# -- LogBuffers.create ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["ipc-c-aeronmd", "udp-unicast-pub", "udp-multicast-pub"])
def test_create_matches_golden_metadata(golden_dir, name, tmp_path):
    _, session_id, initial, expected = GOLDEN[name]
    golden = golden_bytes(golden_dir, name)
    log = LogBuffers.create(tmp_path / "x.logbuffer", term_length=65536, initial_term_id=initial,
                            session_id=session_id, stream_id=1001, correlation_id=expected["correlation_id"],
                            is_connected=1, group=expected["group"],
                            os_default_socket_sndbuf_length=212992, os_default_socket_rcvbuf_length=212992)
    try:
        ours = log.metadata()
        theirs = read_metadata(golden[META:])
        for field in theirs:
            if field == "term_tail_counters":
                continue            # the golden publication has appended 320 bytes
            assert ours[field] == theirs[field], field
        tails = list(theirs["term_tail_counters"])
        tails[0] = lb.pack_tail(initial, 0)
        assert ours["term_tail_counters"] == tuple(tails)
        # byte for byte: the whole metadata section except the tail of partition 0
        with open(tmp_path / "x.logbuffer", "rb") as f:
            f.seek(META)
            raw = f.read()
        assert raw[8:] == golden[META + 8:]
    finally:
        log.close()


def test_create_start_at_position():
    # init-term-id 10, term-id 14, term-offset 192 -> active index 1, count 4
    log = LogBuffers.create(term_length=65536, initial_term_id=10, session_id=1, stream_id=2,
                            term_id=14, term_offset=192, start_at_position=True)
    try:
        assert log.active_term_count == 4
        assert log.active_partition_index == 1
        # walking forward from the active index: index 2 gets 14 + 1 - 3, index 0 gets 14 + 2 - 3
        assert log.raw_tails() == (lb.pack_tail(13, 0), lb.pack_tail(14, 192), lb.pack_tail(12, 0))
        assert log.compute_position(14, 192) == 4 * 65536 + 192
    finally:
        log.close()


def test_create_rejects_bad_arguments(tmp_path):
    with pytest.raises(ConfigurationError):
        LogBuffers.create(term_length=65536 + 1, initial_term_id=0, session_id=0, stream_id=0)
    with pytest.raises(ConfigurationError):
        LogBuffers.create(term_length=65536, initial_term_id=0, session_id=0, stream_id=0, mtu_length=100)
    with pytest.raises(InvalidArgumentError):
        LogBuffers.create(term_length=65536, initial_term_id=0, session_id=0, stream_id=0, no_such_field=1)
    with pytest.raises(InvalidArgumentError):
        LogBuffers.create(term_length=65536, initial_term_id=0, session_id=0, stream_id=0,
                          term_id=1, term_offset=33, start_at_position=True)
    path = tmp_path / "y.logbuffer"
    with pytest.raises(InvalidArgumentError):
        LogBuffers.create(path, term_length=65536, initial_term_id=0, session_id=0, stream_id=0, bogus=1)
    assert not path.exists()            # a failed create leaves no file behind


def test_metadata_setters_are_visible_in_bytes():
    log = LogBuffers.create(term_length=65536, initial_term_id=0, session_id=0, stream_id=0)
    try:
        log.is_connected = True
        log.end_of_stream_position = 4096
        log.active_transport_count = 3
        log.is_publication_revoked = True
        meta = log.metadata_buffer()
        assert meta.get_i32(136) == 1
        assert meta.get_i64(128) == 4096
        assert meta.get_i32(140) == 3
        assert meta.get_u8(496) == 1
        meta.close()
    finally:
        log.close()


def test_producer_position_reads_the_active_partitions_tail_capped_at_the_term_end():
    term_length = 64 * 1024
    log = LogBuffers.create(None, term_length=term_length, initial_term_id=-5, session_id=1, stream_id=2)
    meta = log.metadata_buffer()
    assert log.producer_position() == 0
    meta.put_i64(0, lb.pack_tail(-5, 4096))
    assert log.producer_position() == 4096
    # the third term (partition 2, active term count 2), its tail run past the end by a claim that did not fit
    meta.put_i64(16, lb.pack_tail(-3, term_length + 96))
    meta.put_i32(24, 2)
    assert log.producer_position() == 3 * term_length
