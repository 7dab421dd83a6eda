# SPDX-License-Identifier: Apache-2.0
"""RecordingReader: a recording's frames from its segment files, across terms and segment files, from its start or
from a fragment's position, up to its stop position, its length or the first unwritten frame; bad positions and
missing segment files are typed errors; the golden Java archive reads as Java's tool dumps it."""
import struct

import pytest

from aeron.archive.catalog import Catalog
from aeron.archive.configuration import NULL_POSITION
from aeron.archive.recording_descriptor import RecordingDescriptor
from aeron.archive.recording_reader import RecordingReader
from aeron.archive.segments import segment_file_name
from aeron.common.errors import CorruptFileError, InvalidArgumentError
from tests.archive.archive_files_support import unpack_golden_archive

TERM = SEGMENT = 64 * 1024
INITIAL_TERM_ID, STREAM_ID, SESSION_ID = 7, 1001, 42
DATA, PAD = 1, 0


def descriptor(start, stop, recording_id=3):
    return RecordingDescriptor(0, 0, recording_id, 0, 0, start, stop, INITIAL_TERM_ID, SEGMENT, TERM, 1408,
                               SESSION_ID, STREAM_ID, "aeron:ipc", "aeron:ipc", "aeron:ipc")


def frame(position, payload, frame_type=DATA, flags=0xC0, length=None):
    """A frame at ``position`` (its header says that position's term offset and term id)."""
    length = 32 + len(payload) if length is None else length
    header = struct.pack("<iBBHiiiiq", length, 0, flags, frame_type, position % TERM, SESSION_ID, STREAM_ID,
                         INITIAL_TERM_ID + position // TERM, position)      # the reserved value: its position
    return header + payload


def write_recording(archive_dir, frames_by_position, recording_id=3, truncate=None):
    """Segment files holding the frames (positions from 0; every segment full length, sparse, unless cut)."""
    files = {}
    for position, data in frames_by_position:
        base = position - position % SEGMENT
        files.setdefault(base, bytearray(SEGMENT))[position - base:position - base + len(data)] = data
    for base, content in files.items():
        if truncate is not None and base in truncate:
            content = content[:truncate[base]]
        (archive_dir / segment_file_name(recording_id, base)).write_bytes(bytes(content))


def three_terms():
    """64 + 64 bytes, a padding frame to the end of the term, then the same in the next two terms/segments."""
    frames = []
    for term in range(3):
        base = term * TERM
        frames += [(base, frame(base, b"a" * 32)), (base + 64, frame(base + 64, b"b" * 20, flags=0x80)),
                   (base + 128, frame(base + 128, b"", PAD, length=TERM - 128))]
    return frames


def test_frames_across_terms_and_segment_files(tmp_path):
    write_recording(tmp_path, three_terms())
    with RecordingReader(descriptor(0, 3 * TERM), tmp_path) as reader:
        frames = list(reader)
        assert reader.is_done and reader.replay_position == 3 * TERM
    assert [(f.position, f.term_offset, f.frame_type, f.flags, f.aligned_length) for f in frames[:3]] == [
        (0, 0, DATA, 0xC0, 64), (64, 64, DATA, 0x80, 64), (128, 128, PAD, 0xC0, TERM - 128)]
    assert [f.position for f in frames] == [t * TERM + o for t in range(3) for o in (0, 64, 128)]
    assert frames[3].payload == b"a" * 32 and frames[4].payload == b"b" * 20 and frames[4].frame_length == 52
    assert frames[6].reserved_value == 2 * TERM


def test_poll_hands_up_to_the_limit_and_a_length_ends_early(tmp_path):
    write_recording(tmp_path, three_terms())
    seen = []
    with RecordingReader(descriptor(0, 3 * TERM), tmp_path) as reader:
        assert reader.poll(seen.append, 2) == 2 and [f.position for f in seen] == [0, 64]
        assert reader.poll(seen.append, 10) == 7 and reader.poll(seen.append, 10) == 0 and reader.is_done
    with RecordingReader(descriptor(0, 3 * TERM), tmp_path, position=TERM, length=128) as reader:
        assert [f.position for f in reader] == [TERM, TERM + 64]


def test_an_active_recording_ends_at_the_first_unwritten_frame_or_a_short_file(tmp_path):
    write_recording(tmp_path, three_terms()[:2])
    assert [f.position for f in RecordingReader(descriptor(0, NULL_POSITION), tmp_path)] == [0, 64]
    write_recording(tmp_path, three_terms()[:3] + [(TERM, frame(TERM, b"c"))], truncate={TERM: 16})
    assert [f.position for f in RecordingReader(descriptor(0, NULL_POSITION), tmp_path)] == [0, 64, 128]


def test_a_position_must_start_a_fragment_of_this_recording(tmp_path):
    write_recording(tmp_path, three_terms())
    assert [f.position for f in RecordingReader(descriptor(0, 3 * TERM), tmp_path, position=TERM + 64)][:2] == [
        TERM + 64, TERM + 128]
    with pytest.raises(InvalidArgumentError, match="96 position not aligned to valid fragment"):
        RecordingReader(descriptor(0, 3 * TERM), tmp_path, position=96)
    other_stream = RecordingDescriptor(**{**descriptor(0, 3 * TERM).__dict__, "stream_id": STREAM_ID + 1})
    with pytest.raises(InvalidArgumentError, match="not aligned"):
        RecordingReader(other_stream, tmp_path, position=64)
    with pytest.raises(InvalidArgumentError, match="invalid position: -2"):
        RecordingReader(descriptor(0, 3 * TERM), tmp_path, position=-2)
    with pytest.raises(InvalidArgumentError, match="invalid length: -5"):
        RecordingReader(descriptor(0, 3 * TERM), tmp_path, length=-5)
    with pytest.raises(InvalidArgumentError, match="beyond the recording's stop position"):
        RecordingReader(descriptor(0, 128), tmp_path, position=TERM)


def test_a_missing_segment_file_is_named(tmp_path):
    write_recording(tmp_path, three_terms())
    (tmp_path / segment_file_name(3, TERM)).unlink()
    reader = RecordingReader(descriptor(0, 3 * TERM), tmp_path)
    with pytest.raises(CorruptFileError, match=f"failed to open recording segment file 3-{TERM}.rec") as err:
        list(reader)
    assert err.value.path == str(tmp_path / f"3-{TERM}.rec")


def test_the_golden_java_recordings(golden_dir, tmp_path):
    archive = unpack_golden_archive(golden_dir, tmp_path / "archive")
    with Catalog(archive, read_only=True, strict=False) as catalog:
        first, second = catalog.entries()
    frames = list(RecordingReader(first, archive))
    assert [f.position for f in frames] == [0, 64, 128, 192, 256] and frames[-1].position + 64 == first.stop_position
    fragments = list(RecordingReader(second, archive))
    assert [(f.frame_length, f.flags) for f in fragments] == [(1408, 0x80), (1408, 0), (1408, 0), (904, 0x40)]
    assert sum(len(f.payload) for f in fragments) == 3 * 1376 + 872
