# SPDX-License-Identifier: Apache-2.0
import mmap
import os
import struct

import pytest

from aeron._core.atomic_buffer import AtomicBuffer, MappedFile
from aeron.common.errors import CorruptFileError, IllegalStateError, InvalidArgumentError, OutOfBoundsError


def test_plain_accessors_are_little_endian():
    raw = bytearray(64)
    buf = AtomicBuffer(raw)
    buf.put_u8(0, 0xAB)
    buf.put_i16(2, -2)
    buf.put_i32(4, 0x01020304)
    buf.put_i64(8, -0x0102030405060708)
    assert raw[0] == 0xAB
    assert raw[2:4] == b"\xfe\xff"
    assert raw[4:8] == b"\x04\x03\x02\x01"
    assert raw[8:16] == struct.pack("<q", -0x0102030405060708)
    assert (buf.get_u8(0), buf.get_i16(2), buf.get_i32(4), buf.get_i64(8)) == (
        0xAB, -2, 0x01020304, -0x0102030405060708)


def test_window_offset_and_length():
    raw = bytearray(range(32))
    buf = AtomicBuffer(raw, 8, 16)
    assert len(buf) == 16 and buf.capacity == 16
    assert buf.get_u8(0) == 8
    assert buf.get_bytes(0, 4) == bytes([8, 9, 10, 11])
    with pytest.raises(OutOfBoundsError):
        buf.get_u8(16)
    with pytest.raises(OutOfBoundsError):
        AtomicBuffer(raw, 20, 16)
    with pytest.raises(OutOfBoundsError):
        AtomicBuffer(raw, -1)


def test_readonly_source_refused():
    with pytest.raises(BufferError):
        AtomicBuffer(b"immutable")


def test_ordered_and_atomic_operations():
    raw = bytearray(64)
    buf = AtomicBuffer(raw)
    buf.put_i32_ordered(0, 7)
    assert buf.get_i32_volatile(0) == 7
    buf.put_i64_ordered(8, 1 << 40)
    assert buf.get_i64_volatile(8) == 1 << 40
    assert buf.get_and_add_i32(0, 5) == 7
    assert buf.get_i32(0) == 12
    assert buf.get_and_add_i64(8, -1) == 1 << 40
    assert buf.get_i64(8) == (1 << 40) - 1
    assert buf.compare_and_set_i32(0, 12, 13) is True
    assert buf.compare_and_set_i32(0, 12, 14) is False
    assert buf.get_i32(0) == 13
    assert buf.compare_and_set_i64(8, (1 << 40) - 1, -5) is True
    assert buf.compare_and_set_i64(8, 0, 1) is False
    assert struct.unpack_from("<q", raw, 8)[0] == -5


def test_atomic_ops_need_alignment_and_bounds():
    buf = AtomicBuffer(bytearray(64))
    with pytest.raises(InvalidArgumentError):
        buf.get_i64_volatile(4)
    with pytest.raises(InvalidArgumentError):
        buf.put_i32_ordered(2, 1)
    with pytest.raises(OutOfBoundsError):
        buf.get_and_add_i64(64, 1)
    with pytest.raises(OutOfBoundsError):
        buf.compare_and_set_i32(-4, 0, 1)


@pytest.mark.parametrize("op", [
    lambda b: b.get_i32(61),
    lambda b: b.put_i64(57, 1),
    lambda b: b.get_bytes(60, 5),
    lambda b: b.put_bytes(63, b"ab"),
    lambda b: b.get_i16(-1),
    lambda b: b.set_memory(0, 65, 0),
    lambda b: b.view(10, 60),
])
def test_bounds_errors(op):
    with pytest.raises(OutOfBoundsError):
        op(AtomicBuffer(bytearray(64)))


def test_bytes_helpers():
    raw = bytearray(32)
    buf = AtomicBuffer(raw)
    buf.put_bytes(4, memoryview(b"hello"))
    assert raw[4:9] == b"hello"
    assert buf.is_zero(9) and not buf.is_zero()
    buf.set_memory(0, 4, 0x11)
    assert raw[:4] == b"\x11" * 4
    assert buf.put_string_ascii(12, "abc") == 7
    assert raw[12:19] == b"\x03\x00\x00\x00abc"
    assert buf.get_string_ascii(12) == "abc"
    buf.put_i32(12, 1000)
    with pytest.raises(CorruptFileError):
        buf.get_string_ascii(12)


def test_closed_buffer_raises_illegal_state():
    buf = AtomicBuffer(bytearray(16))
    buf.close()
    assert buf.is_closed
    for op in (lambda: buf.get_i32(0), lambda: buf.put_i64_ordered(0, 1), lambda: buf.view(),
               lambda: buf.get_bytes(0, 1), lambda: buf.address):
        with pytest.raises(IllegalStateError):
            op()
    buf.close()   # idempotent


def test_close_refused_while_view_alive():
    raw = bytearray(16)
    buf = AtomicBuffer(raw)
    view = buf.view(4, 4)
    assert buf.export_count == 1
    view[:] = b"abcd"
    assert raw[4:8] == b"abcd"
    with pytest.raises(IllegalStateError):
        buf.close()
    assert not buf.is_closed
    view.release()
    assert buf.export_count == 0
    buf.close()
    assert buf.is_closed


def test_source_pinned_while_wrapped():
    # The source cannot be resized (or an mmap closed) under the buffer.
    raw = bytearray(16)
    buf = AtomicBuffer(raw)
    with pytest.raises(BufferError):
        raw.extend(b"x")
    buf.close()
    raw.extend(b"x")


def test_map_file_create_and_existing(tmp_path):
    path = tmp_path / "f.dat"
    buf = AtomicBuffer.map_file(path, 8192, create=True)
    assert buf.path == os.fspath(path) and buf.capacity == 8192
    buf.put_i64_ordered(4096, 0x1122334455667788)
    buf.close()
    assert os.path.getsize(path) == 8192
    with open(path, "rb") as f:
        data = f.read()
    assert data[4096:4104] == struct.pack("<q", 0x1122334455667788)
    again = AtomicBuffer.map_file(path)
    assert again.capacity == 8192
    assert again.get_i64_volatile(4096) == 0x1122334455667788
    again.close()
    with pytest.raises(FileExistsError):
        AtomicBuffer.map_file(path, 4096, create=True)


def test_map_file_not_sparse(tmp_path):
    path = tmp_path / "full.dat"
    buf = AtomicBuffer.map_file(path, 4096, create=True, sparse=False)
    assert buf.is_zero()
    buf.close()
    assert os.stat(path).st_blocks * 512 >= 4096


def test_map_file_too_short_names_path(tmp_path):
    path = tmp_path / "short.dat"
    path.write_bytes(b"x" * 100)
    with pytest.raises(CorruptFileError) as info:
        AtomicBuffer.map_file(path, min_length=4096)
    assert info.value.path == os.fspath(path)
    assert info.value.offset == 100
    empty = tmp_path / "empty.dat"
    empty.write_bytes(b"")
    with pytest.raises(CorruptFileError):
        AtomicBuffer.map_file(empty)


def _fds_open_on(path):
    target = os.fspath(path)
    return [fd for fd in os.listdir("/proc/self/fd") if os.path.realpath(f"/proc/self/fd/{fd}") == target]


def test_map_file_holds_no_descriptor_and_unmaps_on_close(tmp_path):
    path = tmp_path / "nofd.dat"
    buf = AtomicBuffer.map_file(path, 8192, create=True)
    again = AtomicBuffer.map_file(path)
    assert _fds_open_on(path) == []                 # Python's mmap would keep a dup per mapping
    again.put_i32(100, 7)
    assert buf.get_i32(100) == 7                    # both share the file
    with open("/proc/self/maps") as f:
        assert sum(os.fspath(path) in line for line in f) == 2
    buf.close()
    again.close()
    with open("/proc/self/maps") as f:
        assert not any(os.fspath(path) in line for line in f)


def test_mapped_file_refuses_close_while_exported(tmp_path):
    path = tmp_path / "m.dat"
    path.write_bytes(b"\0" * 4096)
    fd = os.open(path, os.O_RDWR)
    try:
        mapped = MappedFile(fd, 4096, os.fspath(path))
    finally:
        os.close(fd)
    view = memoryview(mapped)
    view[0] = 9
    with pytest.raises(IllegalStateError):
        mapped.close()
    view.release()
    mapped.close()
    assert mapped.closed
    with pytest.raises(IllegalStateError):
        memoryview(mapped)
    assert path.read_bytes()[0] == 9
    with pytest.raises(OSError):
        MappedFile(-1, 4096)                        # a bad descriptor is an OSError, not a crash
    with pytest.raises(InvalidArgumentError):
        MappedFile(0, 0)


def test_map_file_create_with_an_exact_mode(tmp_path):
    previous = os.umask(0o077)
    try:
        AtomicBuffer.map_file(tmp_path / "g.dat", 4096, create=True, mode=0o660).close()
        AtomicBuffer.map_file(tmp_path / "d.dat", 4096, create=True).close()
    finally:
        os.umask(previous)
    assert os.stat(tmp_path / "g.dat").st_mode & 0o777 == 0o660       # exact, the umask does not apply
    assert os.stat(tmp_path / "d.dat").st_mode & 0o777 == 0o600       # default: 0o666 less the umask
    with pytest.raises(InvalidArgumentError, match="file mode"):
        AtomicBuffer.map_file(tmp_path / "x.dat", 4096, create=True, mode=0o1000)
    assert not (tmp_path / "x.dat").exists()


def test_map_file_create_needs_length(tmp_path):
    with pytest.raises(InvalidArgumentError):
        AtomicBuffer.map_file(tmp_path / "x", create=True)


def test_wrapping_mmap_and_nested_buffer():
    m = mmap.mmap(-1, 4096)
    outer = AtomicBuffer(m)
    with pytest.raises(BufferError):
        m.close()                        # pinned while wrapped
    inner = AtomicBuffer(outer, 1024, 64)
    inner.put_i32(0, 42)
    assert outer.get_i32(1024) == 42
    assert outer.export_count == 1       # inner holds an export of outer
    with pytest.raises(IllegalStateError):
        outer.close()
    inner.close()
    outer.close()
    m.close()   # no export left on the mmap
