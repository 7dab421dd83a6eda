# SPDX-License-Identifier: Apache-2.0
import gzip
import struct

import pytest

from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core import cnc as cncmod
from aeron._core.cnc import (CNC_VERSION, CncFile, compute_cnc_file_length, semantic_version_compose,
                             semantic_version_decompose, semantic_version_to_string)
from aeron._core.counters import CountersReader
from aeron.common.errors import (CncNotInitialisedError, CncVersionError, ConfigurationError, CorruptFileError,
                          IllegalStateError, InvalidArgumentError)

GOLDEN = {
    "c-aeronmd-ipc": (1795334955512, 19741),
    "java-mediadriver-ipc": (1795334986698, 20028),
    "c-aeronmd-udp-unicast/publisher-driver": (1795335194136, 21727),
    "c-aeronmd-udp-unicast/subscriber-driver": (1795335194140, 21728),
}

SMALL = dict(to_driver_buffer_length=1024 + 768, to_clients_buffer_length=1024 + 128,
             counters_metadata_buffer_length=4 * 1024, counters_values_buffer_length=1024,
             error_log_buffer_length=1024, client_liveness_timeout_ns=10_000_000_000,
             start_timestamp_ms=123456789, pid=4242)


def test_version_encoding():
    assert CNC_VERSION == 0x200 == semantic_version_compose(0, 2, 0)
    assert semantic_version_compose(1, 53, 0) == 79104
    assert semantic_version_compose(1, 0, 0) == 65536
    assert semantic_version_decompose(79104) == (1, 53, 0)
    assert semantic_version_to_string(CNC_VERSION) == "0.2.0"
    with pytest.raises(InvalidArgumentError):
        semantic_version_compose(256, 0, 0)


def test_header_offsets():
    assert cncmod.META_DATA_LENGTH == 128
    assert (cncmod.TO_DRIVER_BUFFER_LENGTH_FIELD_OFFSET, cncmod.TO_CLIENTS_BUFFER_LENGTH_FIELD_OFFSET,
            cncmod.COUNTERS_METADATA_BUFFER_LENGTH_FIELD_OFFSET, cncmod.COUNTERS_VALUES_BUFFER_LENGTH_FIELD_OFFSET,
            cncmod.ERROR_LOG_BUFFER_LENGTH_FIELD_OFFSET, cncmod.CLIENT_LIVENESS_TIMEOUT_FIELD_OFFSET,
            cncmod.START_TIMESTAMP_FIELD_OFFSET, cncmod.PID_FIELD_OFFSET,
            cncmod.FILE_PAGE_SIZE_FIELD_OFFSET) == (4, 8, 12, 16, 20, 24, 32, 40, 48)
    # the layout of a default C driver's cnc.dat
    total = 1_049_344 + 1_048_704 + 33_554_432 + 8_388_608 + 4_194_304
    assert compute_cnc_file_length(total, 4096) == 48_238_592


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden_header_and_offsets(golden_dir, shm_dir, name):
    data = gzip.decompress((golden_dir / "cnc" / name / "cnc.dat.gz").read_bytes())
    path = shm_dir / "cnc.dat"
    path.write_bytes(data)
    start, pid = GOLDEN[name]
    with CncFile.map_existing(path) as cnc:
        assert cnc.version == 0x200
        assert cnc.metadata() == {
            "version": 0x200, "to_driver_buffer_length": 1_049_344, "to_clients_buffer_length": 1_048_704,
            "counters_metadata_buffer_length": 4_194_304, "counters_values_buffer_length": 1_048_576,
            "error_log_buffer_length": 4_194_304, "client_liveness_timeout_ns": 10_000_000_000,
            "start_timestamp_ms": start, "pid": pid, "file_page_size": 4096}
        assert cnc.file_length == 11_538_432
        assert (cnc.to_driver_buffer_offset, cnc.to_clients_buffer_offset, cnc.counters_metadata_buffer_offset,
                cnc.counters_values_buffer_offset, cnc.error_log_buffer_offset) == \
            (128, 1_049_472, 2_098_176, 6_292_480, 7_341_056)
        assert len(cnc.to_driver_buffer()) == 1_049_344 and len(cnc.error_log_buffer()) == 4_194_304
        if name.endswith("-ipc"):
            # ring trailer (RingBufferDescriptor): correlation counter at capacity + 512 is 5 in the golden IPC runs
            assert cnc.to_driver_buffer().get_i64(1_048_576 + 512) == 5
        r = CountersReader(cnc.counters_metadata_buffer(), cnc.counters_values_buffer())
        assert r.get_counter_value(43) == 65536
        del r
        assert cnc.error_log_buffer().is_zero()
    assert cnc.is_closed


def test_create_then_map_existing(shm_dir):
    path = shm_dir / "cnc.dat"
    cnc = CncFile.create(path, **SMALL, signal_ready=False)
    raw = path.read_bytes()
    assert len(raw) == 12288   # align(128 + 9088, 4096)
    assert struct.unpack_from("<iiiiiiqqqi", raw, 0) == (0, 1792, 1152, 4096, 1024, 1024, 10_000_000_000,
                                                         123456789, 4242, 4096)
    with pytest.raises(CncNotInitialisedError):
        CncFile.map_existing(path)
    cnc.signal_cnc_ready()
    assert struct.unpack_from("<i", path.read_bytes(), 0)[0] == 0x200
    other = CncFile.map_existing(path)
    assert other.counters_values_buffer_offset == 128 + 1792 + 1152 + 4096
    other.counters_values_buffer().put_i64(0, 99)
    assert cnc.counters_values_buffer().get_i64(0) == 99      # same shared file
    view = other.error_log_buffer().view()
    with pytest.raises(IllegalStateError):
        other.close()
    del view
    other.close()
    cnc.close()
    with pytest.raises(FileExistsError):
        CncFile.create(path, **SMALL)


@pytest.mark.parametrize("field,value", [
    ("to_driver_buffer_length", 1000 + 768),          # capacity not a power of two
    ("to_clients_buffer_length", 0),
    ("counters_metadata_buffer_length", 4 * 1024 - 8),
    ("counters_values_buffer_length", 1000),
    ("file_page_size", 1000),
])
def test_create_rejects_inconsistent_lengths(shm_dir, field, value):
    with pytest.raises(ConfigurationError):
        CncFile.create(shm_dir / "cnc.dat", **{**SMALL, field: value})
    assert not (shm_dir / "cnc.dat").exists()


def _image(**over):
    buf = bytearray(12288)
    fields = dict(version=0x200, td=1792, tc=1152, cm=4096, cv=1024, el=1024)
    fields.update(over)
    struct.pack_into("<iiiiii", buf, 0, fields["version"], fields["td"], fields["tc"], fields["cm"],
                     fields["cv"], fields["el"])
    struct.pack_into("<qqqi", buf, 24, 1, 2, 3, 4096)
    return buf


def test_from_buffer_bad_inputs():
    assert CncFile.from_buffer(_image()).required_length == 128 + 1792 + 1152 + 4096 + 1024 + 1024
    with pytest.raises(CncNotInitialisedError):
        CncFile.from_buffer(_image(version=0))
    with pytest.raises(CncVersionError) as ei:
        CncFile.from_buffer(_image(version=semantic_version_compose(1, 2, 0)))
    assert ei.value.category.name == "FATAL"
    CncFile.from_buffer(_image(version=semantic_version_compose(0, 3, 7)))   # only major compared
    with pytest.raises(CorruptFileError):
        CncFile.from_buffer(_image(el=8192))                  # sections run past the end
    with pytest.raises(CorruptFileError):
        CncFile.from_buffer(_image(td=-5))
    with pytest.raises(CorruptFileError):
        CncFile.from_buffer(_image(cm=1024))                  # metadata < 4 x values
    with pytest.raises(CorruptFileError):
        CncFile.from_buffer(bytearray(100))


def test_map_existing_truncated_file(golden_dir, shm_dir):
    data = gzip.decompress((golden_dir / "cnc" / "c-aeronmd-ipc" / "cnc.dat.gz").read_bytes())
    path = shm_dir / "cnc.dat"
    path.write_bytes(data[:7_341_056 + 100])
    with pytest.raises(CorruptFileError) as ei:
        CncFile.map_existing(path)
    assert ei.value.path == str(path) and ei.value.offset == 7_341_156
    path.write_bytes(data[:64])
    with pytest.raises(CorruptFileError):
        CncFile.map_existing(path)
    with pytest.raises(FileNotFoundError):
        CncFile.map_existing(shm_dir / "absent.dat")
    with pytest.raises(TypeError):
        CncFile()
