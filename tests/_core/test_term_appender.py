# SPDX-License-Identifier: Apache-2.0
"""Term appenders against Aeron's publications (aeron_publication.c, aeron_exclusive_publication.c) and the golden
log buffers."""
import gzip
import struct

import pytest

from aeron._core import logbuffer as lb
from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.buffer_claim import BufferClaim
from aeron._core.logbuffer import LogBuffers
from aeron._core.term_appender import (ADMIN_ACTION, BACK_PRESSURED, CLOSED, MAX_POSITION_EXCEEDED, NOT_CONNECTED,
                                       ConcurrentTermAppender, ExclusiveTermAppender, GIL_RELEASE_THRESHOLD)
from aeron.common.errors import IllegalStateError, InvalidArgumentError, OutOfBoundsError

HEADER = struct.Struct("<iBBhiiiiq")
TERM = 65536
META = 3 * TERM
APPENDERS = [ConcurrentTermAppender, ExclusiveTermAppender]
LOG_TYPE = {ConcurrentTermAppender: 0, ExclusiveTermAppender: 1}


def align32(n):
    return (n + 31) & ~31


def make_log(kind=ConcurrentTermAppender, term_length=TERM, initial_term_id=5, session_id=0x1234, stream_id=10,
             connected=1, **kw):
    return LogBuffers.create(term_length=term_length, initial_term_id=initial_term_id, session_id=session_id,
                             stream_id=stream_id, is_connected=connected, log_type=LOG_TYPE[kind], **kw)


def make_raw_log(term_length, initial_term_id, session_id, stream_id, term_id=None, term_offset=0,
                 mtu_length=1408, connected=1, log_type=0):
    """A log whose metadata is packed here with struct (LogBufferDescriptor), independent of LogBuffers.create."""
    if term_id is None:
        term_id = initial_term_id
    wrap = lambda v: (v + 2**31) % 2**32 - 2**31          # noqa: E731  int32 wrap
    count = wrap(term_id - initial_term_id)
    data = bytearray(3 * term_length + 4096)
    meta = 3 * term_length
    active = count % 3
    tails = [0, 0, 0]
    tails[active] = lb.pack_tail(term_id, term_offset)
    for k in (1, 2):
        tails[(active + k) % 3] = lb.pack_tail(wrap(term_id + k - 3), 0)
    struct.pack_into("<3qi", data, meta, *tails, count)
    struct.pack_into("<qi", data, meta + 128, (1 << 63) - 1, connected)
    struct.pack_into("<qiiiiii", data, meta + 256, 0, initial_term_id, 32, mtu_length, term_length, 4096,
                     term_length // 2)
    HEADER.pack_into(data, meta + 320, 0, 0, 0xC0, 1, 0, session_id, stream_id, initial_term_id, 0)
    data[meta + 497] = log_type
    return LogBuffers(data)


def raw(log):
    """The whole log as bytes (a copy)."""
    return log.buffer.get_bytes(0, log.log_length)


def header_at(data, offset):
    """(frame_length, version, flags, type, term_offset, session, stream, term_id, reserved)."""
    return HEADER.unpack_from(data, offset)


def walk_term(term, term_length, start=0):
    """Plain-Python frame walk of one term (bytes-like): list of frame headers + payloads, in order.
    Stops at the first zero/negative length; returns (frames, end_offset)."""
    frames = []
    offset = start
    while offset < term_length:
        fields = HEADER.unpack_from(term, offset)
        length = fields[0]
        if length <= 0:
            break
        payload = bytes(term[offset + 32:offset + length]) if fields[3] == 1 else None
        frames.append((offset, fields, payload))
        offset += align32(length)
    return frames, offset


# -- frame bytes (as a C driver's publication log holds them) ----------------------------------------
@pytest.mark.parametrize("kind", APPENDERS)
def test_hello_world_frame_bytes(kind):
    log = make_log(kind)
    app = kind(log)
    for i in range(3):
        assert app.offer(f"Hello World! {i}".encode()) == 64 * (i + 1)
    data = raw(log)
    expected = bytes.fromhex("2e000000 00c00100 00000000 34120000 0a000000 05000000 0000000000000000"
                             .replace(" ", "")) + b"Hello World! 0" + bytes(18)
    assert data[:64] == expected
    assert data[64 + 32:64 + 46] == b"Hello World! 1"
    assert header_at(data, 128) == (46, 0, 0xC0, 1, 128, 0x1234, 10, 5, 0)
    assert data[128 + 46:TERM] == bytes(TERM - 174)
    # the C driver's tails after three 14-byte messages
    assert log.raw_tails() == (0x00000005000000C0, 0x0000000300000000, 0x0000000400000000)
    assert app.position == 192
    app.close()
    log.close()


@pytest.mark.parametrize("kind", APPENDERS)
def test_empty_message_is_header_only_frame(kind):
    log = make_log(kind)
    app = kind(log)
    assert app.offer(b"") == 32
    assert header_at(raw(log), 0)[:4] == (32, 0, 0xC0, 1)
    app.close()
    log.close()


# -- fragmentation ---------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", APPENDERS)
def test_fragmentation_3000_bytes_mtu_1408(kind):
    log = make_log(kind)
    app = kind(log)
    assert app.max_payload_length == 1376
    msg = bytes(i * 7 % 251 for i in range(3000))
    assert app.offer(msg) == 3104
    data = raw(log)
    frames, end = walk_term(data, TERM)
    assert end == 3104
    assert [(off, f[0], f[2], f[3], f[4]) for off, f, _ in frames] == [
        (0, 1408, 0x80, 1, 0), (1408, 1408, 0x00, 1, 1408), (2816, 280, 0x40, 1, 2816)]
    assert b"".join(p for _, _, p in frames) == msg
    assert data[2816 + 280:2816 + 288] == bytes(8)
    assert log.raw_tails()[0] == lb.pack_tail(5, 3104)
    app.close()
    log.close()


@pytest.mark.parametrize("kind", APPENDERS)
def test_exact_max_payload_is_unfragmented(kind):
    log = make_log(kind)
    app = kind(log)
    assert app.offer(bytes(1376)) == 1408
    assert app.offer(bytes(1377)) == 1408 + 1408 + 64
    data = raw(log)
    assert header_at(data, 0)[:3] == (1408, 0, 0xC0)
    assert header_at(data, 1408)[:3] == (1408, 0, 0x80)
    assert header_at(data, 2816)[:3] == (33, 0, 0x40)
    app.close()
    log.close()


@pytest.mark.parametrize("kind", APPENDERS)
def test_large_message_released_gil_path(kind):
    # 1 MiB terms allow 128 KiB messages: this goes through the nogil copy
    log = make_log(kind, term_length=1 << 20)
    app = kind(log)
    msg = bytes(i * 13 % 256 for i in range(GIL_RELEASE_THRESHOLD + 5000))
    pos = app.offer(msg)
    assert pos == lb.compute_fragmented_length(len(msg), 1376)
    frames, end = walk_term(log.buffer.get_bytes(0, 1 << 20), 1 << 20)
    assert end == pos
    assert b"".join(p for _, _, p in frames) == msg
    assert frames[0][1][2] == 0x80 and frames[-1][1][2] == 0x40
    assert all(f[2] == 0 for _, f, _ in frames[1:-1])
    app.close()
    log.close()


# -- end of term ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", APPENDERS)
def test_160_byte_frame_at_65408_pads_and_rotates(kind):
    log = make_log(kind, term_id=5, term_offset=65408, start_at_position=True)
    app = kind(log)
    assert app.position == 65408
    msg = b"m" * 128                            # frame 160 bytes
    assert app.offer(msg) == ADMIN_ACTION
    data = raw(log)
    assert header_at(data, 65408) == (128, 0, 0xC0, 0, 65408, 0x1234, 10, 5, 0)   # PAD to the end
    assert log.active_term_count == 1
    assert log.raw_tail_volatile(1) == lb.pack_tail(6, 0)
    assert log.raw_tail_volatile(0) == lb.pack_tail(5, 65408 + 160)   # may run past the end
    assert app.offer(msg) == TERM + 160
    data = raw(log)
    assert header_at(data, TERM) == (160, 0, 0xC0, 1, 0, 0x1234, 10, 6, 0)
    assert data[TERM + 32:TERM + 160] == msg
    assert log.raw_tail_volatile(1) == lb.pack_tail(6, 160)
    assert app.position == TERM + 160
    app.close()
    log.close()


@pytest.mark.parametrize("kind", APPENDERS)
def test_message_filling_term_exactly_does_not_pad(kind):
    log = make_log(kind, term_id=5, term_offset=TERM - 160, start_at_position=True)
    app = kind(log)
    assert app.offer(b"x" * 128) == TERM
    assert log.active_term_count == 0
    assert app.offer(b"y") == ADMIN_ACTION      # nothing left: no pad written, rotate
    assert header_at(raw(log), TERM - 160)[:4] == (160, 0, 0xC0, 1)
    assert log.active_term_count == 1
    assert app.offer(b"y") == TERM + 64
    app.close()
    log.close()


def test_concurrent_writer_after_trip_writes_nothing_but_rotates():
    # Another writer already reserved past the end (and tripped): our reservation starts beyond the
    # term, so we must not write anything, only help rotate.
    log = make_log(ConcurrentTermAppender)
    meta = log.metadata_buffer()
    meta.put_i64_ordered(0, lb.pack_tail(5, TERM + 96))
    app = ConcurrentTermAppender(log)
    before = raw(log)[:META]
    assert app.offer(b"z" * 10) == ADMIN_ACTION
    assert raw(log)[:META] == before
    assert log.raw_tail_volatile(0) == lb.pack_tail(5, TERM + 96 + 64)
    assert log.raw_tail_volatile(1) == lb.pack_tail(6, 0)
    assert log.active_term_count == 1
    meta.close()
    app.close()
    log.close()


def test_concurrent_rotation_in_progress_is_admin_action():
    # active_term_count moved on but the new partition's tail still holds the old term
    log = make_log(ConcurrentTermAppender)
    meta = log.metadata_buffer()
    meta.put_i32_ordered(24, 1)
    app = ConcurrentTermAppender(log)
    assert app.offer(b"a") == ADMIN_ACTION
    assert raw(log)[:TERM] == bytes(TERM)
    meta.put_i64_ordered(8, lb.pack_tail(6, 0))
    assert app.offer(b"a") == TERM + 64
    meta.close()
    app.close()
    log.close()


def test_three_rotations_walk_all_partitions():
    log = make_log(ExclusiveTermAppender)
    app = ExclusiveTermAppender(log)
    msg = bytes(1000)                   # 1056-byte frames: 62 per term, then a 64-byte pad
    positions = []
    for _ in range(150):
        r = app.offer(msg)
        if r == ADMIN_ACTION:
            r = app.offer(msg)
        positions.append(r)
    assert positions == sorted(positions) and positions[-1] > 2 * TERM
    assert log.active_term_count == 2 and app.term_id == 7
    assert log.raw_tails()[2] == lb.pack_tail(7, app.term_offset)
    assert positions[61] == 62 * 1056 and positions[62] == TERM + 1056
    data = raw(log)
    assert header_at(data, 62 * 1056)[:4] == (64, 0, 0xC0, 0)
    assert header_at(data, 2 * TERM - 64)[:4] == (64, 0, 0xC0, 0)
    app.close()
    log.close()


# -- status codes (Publication.backPressureStatus) --------------------------------------------------------
def limit_counter(value):
    counter = AtomicBuffer(bytearray(64))
    counter.put_i64_ordered(8, value)
    return counter


@pytest.mark.parametrize("kind", APPENDERS)
def test_back_pressured_and_not_connected(kind):
    log = make_log(kind)
    counter = limit_counter(128)
    app = kind(log, counter, 8)
    assert app.position_limit == 128
    assert app.offer(b"a") == 64
    assert app.offer(b"b") == 128
    assert app.offer(b"c") == BACK_PRESSURED
    log.is_connected = False
    assert not app.is_connected
    assert app.offer(b"c") == NOT_CONNECTED
    log.is_connected = True
    counter.put_i64_ordered(8, 192)
    assert app.offer(b"c") == 192
    with pytest.raises(IllegalStateError):
        counter.close()                     # the appender pins the counter it reads
    app.close()
    counter.close()
    log.close()


@pytest.mark.parametrize("kind", APPENDERS)
def test_limit_checked_before_reservation_allows_one_overshoot(kind):
    log = make_log(kind)
    counter = limit_counter(32)
    app = kind(log, counter, 8)
    assert app.offer(bytes(1000)) == 1056        # position 0 < 32: whole message goes in
    assert app.offer(b"x") == BACK_PRESSURED
    app.close()
    log.close()


@pytest.mark.parametrize("kind", APPENDERS)
def test_max_position_exceeded(kind):
    # last term of the stream: term count 2^31 - 1
    log = make_log(kind, initial_term_id=0, term_id=2**31 - 1, term_offset=TERM - 64, start_at_position=True)
    app = kind(log)
    assert app.position == (2**31 - 1) * TERM + TERM - 64
    assert app.offer(bytes(100)) == MAX_POSITION_EXCEEDED
    assert header_at(raw(log), TERM * ((2**31 - 1) % 3) + TERM - 64)[:4] == (64, 0, 0xC0, 0)   # padded
    app.close()
    log.close()


@pytest.mark.parametrize("kind", APPENDERS)
def test_max_position_exceeded_when_back_pressured(kind):
    log = make_log(kind, initial_term_id=0, term_id=2**31 - 1, term_offset=TERM - 64, start_at_position=True)
    app = kind(log, limit_counter(0), 8)
    assert app.offer(bytes(100)) == MAX_POSITION_EXCEEDED
    assert app.offer(bytes(0)) == BACK_PRESSURED      # 32 more bytes still fit below the max
    app.close()
    log.close()


@pytest.mark.parametrize("kind", APPENDERS)
def test_closed(kind):
    log = make_log(kind)
    app = kind(log)
    with pytest.raises(IllegalStateError):
        log.close()                                   # the appender pins the log
    app.close()
    assert app.is_closed and not app.is_connected
    assert app.offer(b"x") == CLOSED
    assert app.offerv([b"x"]) == CLOSED
    assert app.try_claim(1, BufferClaim()) == CLOSED
    assert app.position == CLOSED and app.position_limit == CLOSED
    if kind is ExclusiveTermAppender:
        assert app.append_padding(1) == CLOSED
        assert app.offer_block(bytes(32)) == CLOSED
    log.close()
    assert app.offer(b"again") == CLOSED           # safe after the log is gone too


# -- argument errors -----------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", APPENDERS)
def test_argument_errors(kind):
    log = make_log(kind)
    app = kind(log)
    with pytest.raises(InvalidArgumentError):
        app.offer(bytes(8193))                      # > max_message_length (term/8)
    with pytest.raises(InvalidArgumentError):
        app.offerv([bytes(5000), bytes(5000)])
    with pytest.raises(InvalidArgumentError):
        app.offer(b"abc", 0, -2)
    with pytest.raises(OutOfBoundsError):
        app.offer(b"abc", 2, 2)
    with pytest.raises(OutOfBoundsError):
        app.offer(b"abc", -1)
    with pytest.raises(OutOfBoundsError):
        app.offer(b"abc", 4)
    with pytest.raises(TypeError):
        app.offer("not a buffer")
    with pytest.raises(TypeError):
        app.offerv([b"ok", 5])
    with pytest.raises(InvalidArgumentError):
        app.try_claim(1377, BufferClaim())
    with pytest.raises(InvalidArgumentError):
        app.try_claim(-1, BufferClaim())
    with pytest.raises(InvalidArgumentError):
        kind(log, AtomicBuffer(bytearray(64)), 4)   # misaligned counter
    with pytest.raises(OutOfBoundsError):
        kind(log, AtomicBuffer(bytearray(64)), 64)
    assert app.position == 0 and raw(log)[:TERM] == bytes(TERM)   # nothing was appended
    assert app.offer(b"abcdef", 2, 3) == 64
    assert raw(log)[32:35] == b"cde"
    assert app.offer(memoryview(bytearray(b"0123456789"))[4:]) == 128
    assert raw(log)[64 + 32:64 + 38] == b"456789"
    app.close()
    log.close()


def test_properties():
    log = make_raw_log(1 << 17, -7, 99, 1001)
    app = ConcurrentTermAppender(log)
    assert (app.session_id, app.stream_id, app.initial_term_id, app.term_buffer_length) == (99, 1001, -7, 1 << 17)
    assert (app.max_payload_length, app.max_message_length) == (1376, 16384)
    assert app.max_possible_position == (1 << 17) << 31
    assert app.position_limit == (1 << 63) - 1
    assert app.log is log and app.is_connected
    app.close()
    log.close()


def test_python_subclass_with_slots():
    class Publication(ConcurrentTermAppender):
        __slots__ = ()

    class Lazy(ExclusiveTermAppender):
        __slots__ = ()

        def __init__(self):            # forgets to initialise the base: must fail safe, not crash
            pass

    log = make_log()
    pub = Publication(log)
    assert pub.offer(b"x") == 64
    assert not hasattr(pub, "__dict__")
    lazy = Lazy()
    assert lazy.offer(b"x") == CLOSED
    pub.close()
    log.close()


def test_appender_initialised_twice_refused():
    log = make_log()
    app = ConcurrentTermAppender(log)
    with pytest.raises(IllegalStateError):
        app.__init__(log)
    app.close()
    log.close()


# -- reserved value supplier -------------------------------------------------------------------------
@pytest.mark.parametrize("kind", APPENDERS)
def test_reserved_value_supplier_per_fragment(kind):
    log = make_log(kind)
    app = kind(log)
    calls = []

    def supplier(term_buffer, term_offset, frame_length):
        calls.append((term_offset, frame_length, term_buffer.get_i32(term_offset)))
        return 0x1000 + term_offset

    assert app.offer(b"hi", reserved_value_supplier=supplier) == 64
    assert app.offer(bytes(3000), reserved_value_supplier=supplier) == 64 + 3104
    # each fragment's own offset (Java semantics); the frame is still uncommitted (negative length)
    assert calls == [(0, 34, -34), (64, 1408, -1408), (1472, 1408, -1408), (2880, 280, -280)]
    data = raw(log)
    for off in (0, 64, 1472, 2880):
        assert struct.unpack_from("<q", data, off + 24)[0] == 0x1000 + off
    frames, end = walk_term(data, TERM)
    assert end == 64 + 3104 and [f[2] for _, f, _ in frames] == [0xC0, 0x80, 0x00, 0x40]
    app.close()
    log.close()


@pytest.mark.parametrize("kind", APPENDERS)
def test_no_supplier_leaves_reserved_field_alone(kind):
    log = make_log(kind)
    log.buffer.put_i64(24, 0x5555555555555555)      # as if the partition had not been cleaned
    app = kind(log)
    app.offer(b"abc")
    assert log.buffer.get_i64(24) == 0x5555555555555555
    app.close()
    log.close()


@pytest.mark.parametrize("kind", APPENDERS)
def test_supplier_error_pads_the_message_and_propagates(kind):
    log = make_log(kind)
    app = kind(log)
    seen = []

    def failing(term_buffer, term_offset, frame_length):
        seen.append(term_offset)
        if len(seen) == 2:
            raise KeyError("boom")
        return 7

    with pytest.raises(KeyError):
        app.offer(bytes(3000), reserved_value_supplier=failing)
    with pytest.raises(TypeError):
        app.offer(b"x", reserved_value_supplier=lambda *a: "not an int")
    assert app.offer(b"after") == 3104 + 64 + 64
    frames, end = walk_term(raw(log), TERM)
    assert end == 3104 + 128
    # first fragment committed as data, the rest of the message became padding
    assert [(off, f[3]) for off, f, _ in frames] == [(0, 1), (1408, 0), (2816, 0), (3104, 0), (3168, 1)]
    assert frames[-1][2] == b"after"
    app.close()
    log.close()


@pytest.mark.parametrize("kind", APPENDERS)
def test_supplier_cannot_unmap_the_log_under_the_append(kind, shm_dir):
    # The supplier is Python code running between the copy and the commit. Closing the term view it
    # is handed, the appender and then the log used to unmap the file under the pending reserved
    # value and commit stores (segfault). The log must stay pinned for the whole append.
    log = LogBuffers.create(shm_dir / "1.logbuffer", term_length=TERM, initial_term_id=5, session_id=0x1234,
                            stream_id=10, is_connected=1, log_type=LOG_TYPE[kind])
    app = kind(log)

    def closing(term_buffer, term_offset, frame_length):
        term_buffer.close()
        app.close()
        log.close()
        return 7

    with pytest.raises(IllegalStateError):
        app.offer(b"abc", reserved_value_supplier=closing)
    # the claimed frame was turned into padding, not left blocking the stream
    assert header_at(raw(log), 0)[:4] == (35, 0, 0xC0, 0)
    log.close()                                   # nothing pins it any more


@pytest.mark.parametrize("kind", APPENDERS)
def test_close_racing_a_nogil_offer_cannot_unmap_the_log(kind, shm_dir):
    # Offers of GIL_RELEASE_THRESHOLD bytes or more copy without the GIL, so another thread can run
    # close() and log.close() meanwhile. The copy must keep the mapping pinned: log.close() is then
    # refused (IllegalStateError) until the copy is done, instead of unmapping under it (segfault).
    import threading
    term_length = 1 << 20
    log = LogBuffers.create(shm_dir / "1.logbuffer", term_length=term_length, initial_term_id=5,
                            session_id=0x1234, stream_id=10, is_connected=1, log_type=LOG_TYPE[kind])
    app = kind(log)
    msg = bytes(term_length // 8)
    started = threading.Event()
    results = []

    def offer_until_closed():
        started.set()
        for _ in range(100000):
            result = app.offer(msg)
            if result == CLOSED:
                return
            if result == ADMIN_ACTION:
                continue
            results.append(result)

    t = threading.Thread(target=offer_until_closed, daemon=True)
    t.start()
    assert started.wait(10)
    while len(results) < 3:
        t.join(0.001)
    app.close()
    refused = 0
    for _ in range(100000):
        try:
            log.close()
            break
        except IllegalStateError:
            refused += 1
    t.join(10)
    assert not t.is_alive() and log.is_closed
    assert all(r > 0 for r in results)


# -- offerv ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", APPENDERS)
def test_offerv_matches_offer(kind):
    parts = [b"Hello ", bytearray(b"World"), memoryview(b"! 0"), b""]
    big = [bytes([i]) * (100 + 37 * i) for i in range(12)]      # > 8 parts: heap path, crosses fragments
    log_a, log_b = make_log(kind), make_log(kind)
    a, b = kind(log_a), kind(log_b)
    assert a.offerv(parts) == b.offer(b"Hello World! 0") == 64
    assert a.offerv(big) == b.offer(b"".join(big))
    assert a.offerv([]) == b.offer(b"")
    assert a.offerv((b"", b"", b"x")) == b.offer(b"x")
    assert raw(log_a) == raw(log_b)
    for x in (a, b):
        x.close()
    log_a.close()
    log_b.close()


# -- exclusive offer_block / append_padding ---------------------------------------------------------------
def test_append_padding():
    log = make_log(ExclusiveTermAppender)
    app = ExclusiveTermAppender(log)
    assert app.offer(b"a") == 64
    assert app.append_padding(100) == 64 + 160
    assert header_at(raw(log), 64) == (132, 0, 0xC0, 0, 64, 0x1234, 10, 5, 0)
    assert app.offer(b"b") == 64 + 160 + 64
    assert app.append_padding(0) == 64 + 160 + 64 + 32
    with pytest.raises(InvalidArgumentError):
        app.append_padding(-1)
    with pytest.raises(InvalidArgumentError):
        app.append_padding(lb.compute_fragmented_length(8192, 1376) + 1)
    app.close()
    log.close()


def test_append_padding_at_term_end_rotates():
    log = make_log(ExclusiveTermAppender, term_id=5, term_offset=TERM - 64, start_at_position=True)
    app = ExclusiveTermAppender(log)
    assert app.append_padding(100) == ADMIN_ACTION
    assert header_at(raw(log), TERM - 64)[:4] == (64, 0, 0xC0, 0)
    assert app.term_id == 6 and app.term_offset == 0
    app.close()
    log.close()


def build_block(count, term_offset=0, term_id=5):
    """Frames made by a separate appender, starting at term_offset, as bytes."""
    src_log = make_log(ExclusiveTermAppender, term_id=term_id, term_offset=term_offset, start_at_position=True)
    src = ExclusiveTermAppender(src_log)
    for i in range(count):
        src.offer(f"block message {i}".encode() * (i + 1))
    end = src.term_offset
    block = src_log.buffer.get_bytes(TERM * ((term_id - 5) % 3) + term_offset,
                                     end - term_offset)
    src.close()
    src_log.close()
    return block


def test_offer_block_copies_frames_verbatim():
    block = build_block(3)
    log = make_log(ExclusiveTermAppender)
    app = ExclusiveTermAppender(log)
    assert app.offer_block(block) == len(block)
    assert raw(log)[:len(block)] == block
    assert log.raw_tails()[0] == lb.pack_tail(5, len(block))
    # the next block must start at the new offset
    block2 = build_block(2, term_offset=len(block))
    assert app.offer_block(bytearray(b"xx" + block2), 2) == len(block) + len(block2)
    frames, end = walk_term(raw(log), TERM)
    assert end == len(block) + len(block2) and len(frames) == 5
    app.close()
    log.close()


def test_offer_block_validation():
    log = make_log(ExclusiveTermAppender)
    app = ExclusiveTermAppender(log)
    block = bytearray(build_block(2))
    for field, value in ((8, 64), (12, 1), (16, 11), (20, 6)):      # term offset, session, stream, term id
        bad = bytearray(block)
        struct.pack_into("<i", bad, field, value)
        with pytest.raises(InvalidArgumentError):
            app.offer_block(bad)
    bad = bytearray(block)
    struct.pack_into("<h", bad, 6, 0)                                 # PAD type
    with pytest.raises(InvalidArgumentError):
        app.offer_block(bad)
    with pytest.raises(InvalidArgumentError):
        app.offer_block(block, 0, 40)                                 # not 32-aligned
    with pytest.raises(InvalidArgumentError):
        app.offer_block(block + bytes(TERM))                          # longer than the term left
    with pytest.raises(OutOfBoundsError):
        app.offer_block(block, 0, len(block) + 32)
    assert raw(log)[:TERM] == bytes(TERM) and app.position == 0
    app.close()
    log.close()


def test_offer_block_back_pressured():
    log = make_log(ExclusiveTermAppender)
    app = ExclusiveTermAppender(log, limit_counter(0), 8)
    assert app.offer_block(build_block(1)) == BACK_PRESSURED
    app.close()
    log.close()


# -- starting mid-stream ----------------------------------------------------------------------------
@pytest.mark.parametrize("kind", APPENDERS)
def test_negative_and_wrapping_term_ids(kind):
    # initial term id 2^31 - 2, current term -2^31 (count 2), one message from the end of the term
    log = make_raw_log(TERM, 2**31 - 2, -5, 3, term_id=-(2**31), term_offset=TERM - 64)
    app = kind(log)
    assert app.position == 3 * TERM - 64
    assert app.offer(b"q" * 40) == ADMIN_ACTION
    assert log.active_term_count == 3
    assert log.raw_tail_volatile(0) == lb.pack_tail(-(2**31) + 1, 0)
    assert app.offer(b"q" * 40) == 3 * TERM + 96
    assert header_at(raw(log), 0) == (72, 0, 0xC0, 1, 0, -5, 3, -(2**31) + 1, 0)
    app.close()
    log.close()



@pytest.mark.parametrize("kind", APPENDERS)
def test_start_at_position(kind):
    log = make_log(kind, initial_term_id=10, term_id=14, term_offset=192, start_at_position=True)
    assert log.raw_tails() == (lb.pack_tail(13, 0), lb.pack_tail(14, 192), lb.pack_tail(12, 0))
    app = kind(log)
    assert app.position == 4 * TERM + 192
    if kind is ExclusiveTermAppender:
        assert (app.term_id, app.term_offset, app.term_begin_position) == (14, 192, 4 * TERM)
    assert app.offer(b"abc") == 4 * TERM + 256
    assert header_at(raw(log), TERM + 192) == (35, 0, 0xC0, 1, 192, 0x1234, 10, 14, 0)
    assert log.raw_tail_volatile(1) == lb.pack_tail(14, 256)
    app.close()
    log.close()


# -- golden: the C driver's IPC and UDP publication logs, byte for byte -----------------------------------------
GOLDEN = {
    "ipc-c-aeronmd": ("ipc-c-aeronmd/4.logbuffer.gz", -1382497356, 2145401527, 4),
    "udp-unicast": ("udp-unicast/publisher-driver/publications/2.logbuffer.gz", -1814757439, 1569665970, 2),
}


@pytest.mark.parametrize("kind", APPENDERS)
@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden_log_byte_for_byte(golden_dir, shm_dir, name, kind):
    rel, session_id, initial, correlation_id = GOLDEN[name]
    golden = gzip.decompress((golden_dir / "logbuffers" / rel).read_bytes())
    path = shm_dir / f"{correlation_id}.logbuffer"
    log = LogBuffers.create(path, term_length=TERM, initial_term_id=initial, session_id=session_id,
                            stream_id=1001, correlation_id=correlation_id, is_connected=1,
                            log_type=LOG_TYPE[kind], os_default_socket_sndbuf_length=212992,
                            os_default_socket_rcvbuf_length=212992)
    app = kind(log)
    for i in range(5):
        assert app.offer(f"Hello World! {i}".encode()) == 64 * (i + 1)
    app.close()
    log.close()
    ours = path.read_bytes()
    assert len(ours) == len(golden) == 200704
    if kind is ExclusiveTermAppender:
        assert ours[META + 497] == 1 and golden[META + 497] == 0
        ours = ours[:META + 497] + b"\x00" + ours[META + 498:]
    assert ours == golden


@pytest.mark.parametrize("initial,term_id", [(-7, -7), (-(2**31), -(2**31) + 4), (2**31 - 2, -(2**31))])
def test_raw_log_helper_agrees_with_create(initial, term_id):
    # the struct-packed helper used by the property tests lays out what LogBuffers.create does
    ours = make_raw_log(TERM, initial, -99, 7, term_id=term_id, term_offset=96)
    created = LogBuffers.create(term_length=TERM, initial_term_id=initial, session_id=-99, stream_id=7,
                                term_id=term_id, term_offset=96, start_at_position=True, is_connected=1)
    a, b = ours.metadata(), created.metadata()
    for field in ("term_tail_counters", "active_term_count", "initial_term_id", "default_frame_header",
                  "term_length", "mtu_length", "is_connected"):
        assert a[field] == b[field], field
    ours.close()
    created.close()
