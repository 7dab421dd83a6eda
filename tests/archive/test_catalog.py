# SPDX-License-Identifier: Apache-2.0
"""archive.catalog: the golden Java catalog decodes, a catalog we write for the same recordings is byte-identical,
in-place updates, growth, read-only readers, stop-position recovery, and corrupt files raising with an offset."""
import dataclasses
import os
import struct
import zlib

import pytest

from aeron._core.codecs.archive import RecordingState
from aeron.archive.catalog import CATALOG_FILE_NAME, Catalog
from aeron.archive.recording_descriptor import RecordingDescriptor
from aeron.archive.segments import IncompleteFragmentError, segment_file_name
from aeron.common.errors import CorruptFileError, IllegalStateError
from tests.archive.archive_files_support import GOLDEN_RECORDINGS, unpack_golden_archive


@pytest.fixture
def golden_archive(golden_dir, tmp_path):
    return unpack_golden_archive(golden_dir, tmp_path / "golden")


def add(catalog, **fields):
    fields = dict(fields)
    for key in ("control_session_id", "correlation_id", "recording_id"):
        fields.pop(key, None)
    return catalog.add_recording(**fields)


def test_golden_catalog_decodes_to_the_java_archivetool_values(golden_archive):
    with Catalog(golden_archive, read_only=True) as catalog:
        assert catalog.next_recording_id == 2 and catalog.alignment == 64 and catalog.capacity == 1048576
        assert catalog.version == 196864 and not catalog.legacy
        got = [dataclasses.asdict(r) for r in catalog]
        assert [{k: v for k, v in r.items() if k not in ("state", "checksum")} for r in got] == GOLDEN_RECORDINGS
        assert all(r.state == RecordingState.VALID for r in catalog)
        assert catalog.header_bytes(0) == (224, RecordingState.VALID, 0)
        assert catalog.header_bytes(1) == (160, RecordingState.VALID, 0)
        assert catalog.recording(1).stop_position == 5152 and catalog.stop_position(0) == 320
        assert catalog.recording_ids() == [0, 1] and len(catalog) == 2 and 1 in catalog and 2 not in catalog


def test_catalog_we_write_for_the_golden_recordings_equals_the_java_one(golden_archive, tmp_path):
    ours = tmp_path / "ours"
    ours.mkdir()
    with Catalog(ours) as catalog:
        for rec in GOLDEN_RECORDINGS:
            fields = dict(rec, stop_position=-1, stop_timestamp=-1)
            rid = add(catalog, **fields)
            assert rid == rec["recording_id"]
            assert catalog.stop_position(rid) == -1
            catalog.recording_stopped(rid, rec["stop_position"], rec["stop_timestamp"])
    assert (ours / CATALOG_FILE_NAME).read_bytes() == (golden_archive / CATALOG_FILE_NAME).read_bytes()


def test_entry_layout_matches_the_reference_example(tmp_path):
    with Catalog(tmp_path, capacity=4096) as catalog:
        rid = catalog.add_recording(start_position=0, start_timestamp=1, initial_term_id=0,
                                    segment_file_length=65536, term_buffer_length=65536, mtu_length=1408,
                                    session_id=1, stream_id=2, stripped_channel="aeron:ipc",
                                    original_channel="aeron:ipc", source_identity="aeron:ipc")
        second = catalog.add_recording(start_position=0, start_timestamp=1, initial_term_id=0,
                                       segment_file_length=65536, term_buffer_length=65536, mtu_length=1408,
                                       session_id=1, stream_id=2, stripped_channel="aeron:ipc",
                                       original_channel="aeron:ipc", source_identity="aeron:ipc")
        assert (rid, second) == (0, 1)
        assert catalog.entry_offset(0) == 32 and catalog.entry_offset(1) == 32 + 192
        assert catalog.header_bytes(0)[0] == 160
    raw = (tmp_path / CATALOG_FILE_NAME).read_bytes()
    assert len(raw) == 4096
    assert struct.unpack_from("<iiqi", raw, 0) == (196864, 32, 2, 64)


def test_in_place_updates_and_a_read_only_reader_following_them(tmp_path):
    with Catalog(tmp_path, capacity=1024) as writer, Catalog(tmp_path, read_only=True) as reader:
        rid = add(writer, **dict(GOLDEN_RECORDINGS[1], stop_position=-1, stop_timestamp=-1))
        assert reader.refresh() == 1 and reader.recording(rid).stop_position == -1
        writer.recording_stopped(rid, 5152, 77)
        assert reader.recording(rid).stop_position == 5152 and reader.recording(rid).stop_timestamp == 77
        writer.extend_recording(rid, 5, 6, 7)
        r = reader.recording(rid)
        assert (r.control_session_id, r.correlation_id, r.session_id, r.stop_position, r.stop_timestamp) == \
            (5, 6, 7, -1, -1)
        writer.update_stop_position(rid, 9000)
        writer.update_start_position(rid, 4096)
        assert (reader.start_position(rid), reader.stop_position(rid)) == (4096, 9000)
        assert writer.change_state(rid, RecordingState.DELETED)
        assert not writer.has_recording(rid) and not writer.change_state(rid, RecordingState.INVALID)
        reader.refresh()
        assert rid not in reader and reader.recording(rid, any_state=True).state == RecordingState.DELETED
        with pytest.raises(KeyError):
            reader.recording(rid)
        with pytest.raises(IllegalStateError):
            reader.update_stop_position(rid, 1)
        assert writer.change_state(rid, RecordingState.VALID, any_state=True) and writer.has_recording(rid)
    with Catalog(tmp_path, read_only=True) as again:
        r = again.recording(rid)
        assert (r.start_position, r.stop_position, r.session_id, r.state) == (4096, 9000, 7, RecordingState.VALID)


def test_growth_by_half_steps_keeps_every_entry(tmp_path):
    with Catalog(tmp_path, capacity=256) as catalog:
        ids = [add(catalog, **dict(GOLDEN_RECORDINGS[0], stream_id=i)) for i in range(20)]
        assert ids == list(range(20))
        capacity = 256
        while capacity < 32 + 20 * 256:
            capacity += capacity >> 1
        assert catalog.capacity == capacity == os.path.getsize(tmp_path / CATALOG_FILE_NAME)
    with Catalog(tmp_path, capacity=256) as reopened:
        assert [r.stream_id for r in reopened] == list(range(20)) and reopened.next_recording_id == 20
        assert add(reopened, **GOLDEN_RECORDINGS[1]) == 20


def test_find_last_matching_recording(tmp_path):
    with Catalog(tmp_path) as catalog:
        for i in range(4):
            add(catalog, **dict(GOLDEN_RECORDINGS[0], session_id=10 + i % 2,
                                original_channel=f"aeron:udp?endpoint=localhost:{4000 + i}"))
        assert catalog.find_last_matching_recording(0, "localhost", 1001, 10) == 2
        assert catalog.find_last_matching_recording(0, "", 1001, 11) == 3
        assert catalog.find_last_matching_recording(0, ":4000", 1001, 10) == 0
        assert catalog.find_last_matching_recording(1, ":4000", 1001, 10) == -1
        assert catalog.find_last_matching_recording(0, "localhost", 1002, 10) == -1
        assert catalog.find_last_matching_recording(-1, "", 1001, 10) == -1
        catalog.change_state(2, RecordingState.INVALID)
        assert catalog.find_last_matching_recording(0, "localhost", 1001, 10) == 0


def test_replace_recording_shifts_later_entries(tmp_path):
    with Catalog(tmp_path) as catalog:
        for _ in range(3):
            add(catalog, **GOLDEN_RECORDINGS[1])
        before = catalog.entry_offset(2)
        long_channel = "aeron:udp?endpoint=localhost:5000|alias=" + "x" * 100
        catalog.replace_recording(1, **dict({k: v for k, v in GOLDEN_RECORDINGS[0].items()
                                             if k not in ("control_session_id", "correlation_id", "recording_id")},
                                            original_channel=long_channel))
        assert catalog.entry_offset(2) > before
        assert catalog.recording(1).original_channel == long_channel
        assert catalog.recording(2) == RecordingDescriptor(**dict(GOLDEN_RECORDINGS[1], recording_id=2,
                                                                  stop_position=5152))
        catalog.replace_recording(1, **{k: v for k, v in GOLDEN_RECORDINGS[1].items()
                                        if k not in ("control_session_id", "correlation_id", "recording_id")})
        assert catalog.recording(1).original_channel == "aeron:ipc"
    with Catalog(tmp_path, read_only=True) as again:
        assert [r.recording_id for r in again] == [0, 1, 2]


def test_checksum_hook_covers_the_padded_body(tmp_path):
    def crc(view):
        value = zlib.crc32(view)
        return value - (1 << 32) if value & 0x80000000 else value

    with Catalog(tmp_path, checksum=crc) as catalog:
        rid = add(catalog, **GOLDEN_RECORDINGS[0])
        offset = catalog.entry_offset(rid)
        length, _, checksum = catalog.header_bytes(rid)
        raw = (tmp_path / CATALOG_FILE_NAME).read_bytes()
        assert checksum == crc(memoryview(raw[offset + 32:offset + 32 + length])) != 0
        catalog.recording_stopped(rid, 4096, 5)
        raw = (tmp_path / CATALOG_FILE_NAME).read_bytes()
        assert catalog.header_bytes(rid)[2] == crc(memoryview(raw[offset + 32:offset + 32 + length])) != checksum


# -- corrupt files --------------------------------------------------------------------------------------------


def write_catalog(path, data):
    (path / CATALOG_FILE_NAME).write_bytes(data)


def test_wrong_version_is_a_corrupt_file_with_offset(golden_archive):
    raw = bytearray((golden_archive / CATALOG_FILE_NAME).read_bytes())
    struct.pack_into("<i", raw, 0, (2 << 16) | (5 << 8))
    write_catalog(golden_archive, raw)
    with pytest.raises(CorruptFileError, match=r"incompatible catalog file version 2\.5\.0") as err:
        Catalog(golden_archive, read_only=True)
    assert err.value.offset == 0 and str(err.value.path).endswith(CATALOG_FILE_NAME)


def test_truncated_catalog_is_reported_with_the_entry_offset(golden_archive):
    raw = (golden_archive / CATALOG_FILE_NAME).read_bytes()
    write_catalog(golden_archive, raw[:32 + 256 + 100])        # cut inside the second entry
    for read_only in (True, False):
        with pytest.raises(CorruptFileError, match="runs past the end") as err:
            Catalog(golden_archive, read_only=read_only)
        assert err.value.offset == 32 + 256
    write_catalog(golden_archive, raw[:20])
    with pytest.raises(CorruptFileError, match="shorter than") as err:
        Catalog(golden_archive, read_only=True)
    assert err.value.offset == 20


@pytest.mark.parametrize("offset, value, match", [
    (32 + 4, 7, "state 7"),                                      # header state
    (32 + 32 + 16, 5, "recording id"),                           # first id above the second
    (32 + 32 + 64, 1000, "term buffer length"),                  # term length not a power of two
    (32 + 32 + 80, 10_000, "does not decode"),                   # stripped channel length past the entry
    (32 + 256 + 32 + 48, 1, "stop position 1 is before"),        # second entry's stop before start... start 0
    (32, -5, "negative"),                                        # entry length
])
def test_flipped_catalog_fields_are_reported(golden_archive, offset, value, match):
    raw = bytearray((golden_archive / CATALOG_FILE_NAME).read_bytes())
    if "stop position" in match:
        struct.pack_into("<q", raw, 32 + 256 + 32 + 40, 4096)    # start 4096, stop 1
        struct.pack_into("<q", raw, offset, value)
    else:
        struct.pack_into("<i" if "recording id" not in match else "<q", raw, offset, value)
    write_catalog(golden_archive, raw)
    with pytest.raises(CorruptFileError, match=match) as err:
        Catalog(golden_archive, read_only=True)
    assert err.value.offset is not None and 32 <= err.value.offset < 32 + 512


def test_legacy_layout_is_read_with_1024_byte_entries(golden_archive, tmp_path):
    raw = (golden_archive / CATALOG_FILE_NAME).read_bytes()
    legacy = bytearray(8192)
    struct.pack_into("<iiqi", legacy, 0, (2 << 16), 32, 0, 0)
    legacy[1024:1024 + 224 + 32] = raw[32:32 + 256]
    legacy[2048:2048 + 192] = raw[32 + 256:32 + 256 + 192]
    struct.pack_into("<i", legacy, 1024, 1024 - 32)
    struct.pack_into("<i", legacy, 2048, 1024 - 32)
    d = tmp_path / "legacy"
    d.mkdir()
    write_catalog(d, legacy)
    with pytest.raises(CorruptFileError, match="incompatible"):
        Catalog(d, read_only=True)
    with Catalog(d, read_only=True, check_version=False) as catalog:
        assert catalog.legacy and catalog.alignment == 1024 and catalog.next_recording_id == 2
        assert [r.stream_id for r in catalog] == [1001, 1002]
    with pytest.raises(IllegalStateError, match="legacy"):
        Catalog(d, check_version=False)


# -- stop-position recovery (Catalog.refreshAndFixDescriptor) ------------------------------------------------------


def set_stop_position(archive, entry_offset, value):
    raw = bytearray((archive / CATALOG_FILE_NAME).read_bytes())
    struct.pack_into("<q", raw, entry_offset + 32 + 48, value)
    write_catalog(archive, raw)


def test_crashed_recording_gets_its_stop_position_from_its_last_segment(golden_archive):
    set_stop_position(golden_archive, 32 + 256, -1)
    with Catalog(golden_archive, read_only=True) as reader:
        assert reader.stop_position(1) == -1                      # a reader never repairs
    with Catalog(golden_archive, epoch_clock=lambda: 4242) as catalog:
        r = catalog.recording(1)
        assert (r.stop_position, r.stop_timestamp) == (5152, 4242)
        assert catalog.recording(0).stop_position == 320 and catalog.recording(0).stop_timestamp == 1795335392833


def test_crashed_recording_without_files_stops_at_its_start(golden_archive):
    set_stop_position(golden_archive, 32, -1)
    os.unlink(golden_archive / segment_file_name(0, 0))
    with Catalog(golden_archive) as catalog:
        assert catalog.stop_position(0) == 0


def test_recovery_walks_the_highest_segment_from_the_start_term_offset(tmp_path):
    term = 65536
    with Catalog(tmp_path) as catalog:
        rid = add(catalog, **dict(GOLDEN_RECORDINGS[1], start_position=term + 96, stop_position=-1))
    # the recording started mid-term 1; its second segment (base 2*term with 64 KiB segments) holds 3 frames
    seg = bytearray(term)
    for i in range(3):
        struct.pack_into("<i", seg, i * 64, 40)
    (tmp_path / segment_file_name(rid, term)).write_bytes(bytes(term))
    (tmp_path / segment_file_name(rid, 2 * term)).write_bytes(bytes(seg))
    with Catalog(tmp_path) as catalog:
        assert catalog.stop_position(rid) == 2 * term + 192


def test_torn_last_frame_across_a_page_refuses_to_start(tmp_path):
    with Catalog(tmp_path) as catalog:
        rid = add(catalog, **dict(GOLDEN_RECORDINGS[1], stop_position=-1))
    seg = bytearray(65536)
    for offset in range(0, 4096 - 64, 64):
        struct.pack_into("<i", seg, offset, 64)
    struct.pack_into("<i", seg, 4096 - 64, 1000)                   # crosses into a page of zeros
    (tmp_path / segment_file_name(rid, 0)).write_bytes(bytes(seg))
    with pytest.raises(IncompleteFragmentError, match="ArchiveTool verify") as err:
        Catalog(tmp_path)
    assert err.value.offset == 4096 - 64 and str(err.value.path).endswith("0-0.rec")
    seg[4096:4096 + 900] = b"\x01" * 900                         # the next page has data: complete
    (tmp_path / segment_file_name(rid, 0)).write_bytes(bytes(seg))
    with Catalog(tmp_path) as catalog:
        assert catalog.stop_position(rid) == 4096 - 64 + 1024


def test_every_flipped_byte_either_decodes_or_is_a_corrupt_file(golden_archive):
    raw = (golden_archive / CATALOG_FILE_NAME).read_bytes()[:32 + 256 + 192]
    outcomes = {"ok": 0, "corrupt": 0}
    for offset in range(len(raw)):
        for mask in (0x01, 0xFF):
            damaged = bytearray(raw)
            damaged[offset] ^= mask
            write_catalog(golden_archive, damaged)
            for strict in (True, False):
                try:
                    with Catalog(golden_archive, read_only=True, strict=strict) as catalog:
                        for r in catalog.entries():
                            assert r.state in (RecordingState.INVALID, RecordingState.VALID, RecordingState.DELETED)
                    outcomes["ok"] += 1
                except CorruptFileError as ex:
                    assert ex.offset is not None and 0 <= ex.offset <= len(raw), (offset, mask, ex)
                    outcomes["corrupt"] += 1
    assert outcomes["ok"] and outcomes["corrupt"]
