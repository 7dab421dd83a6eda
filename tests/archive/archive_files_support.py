# SPDX-License-Identifier: Apache-2.0
"""The golden Java archive directory, unpacked, for the catalog, mark file, segment and ArchiveTool tests."""
import gzip
import pathlib
import shutil
import struct

GOLDEN_ARCHIVE = "archive"

# the two recordings of the golden directory (tests/data/golden/archive/expected/archivetool-describe.txt)
GOLDEN_RECORDINGS = [
    dict(control_session_id=0, correlation_id=0, recording_id=0, start_timestamp=1795335387821,  # noqa: C408
         stop_timestamp=1795335392833, start_position=0, stop_position=320, initial_term_id=606839151,
         segment_file_length=65536, term_buffer_length=65536, mtu_length=1408, session_id=-1330240285,
         stream_id=1001, stripped_channel="aeron:udp?endpoint=127.0.0.1:40641",
         original_channel="aeron:udp?endpoint=127.0.0.1:40641", source_identity="aeron:ipc"),
    dict(control_session_id=0, correlation_id=0, recording_id=1, start_timestamp=1795335395556,  # noqa: C408
         stop_timestamp=1795335398102, start_position=0, stop_position=5152, initial_term_id=-1684349351,
         segment_file_length=65536, term_buffer_length=65536, mtu_length=1408, session_id=-1330240283,
         stream_id=1002, stripped_channel="aeron:ipc", original_channel="aeron:ipc", source_identity="aeron:ipc"),
]


def unpack_golden_archive(golden_dir: pathlib.Path, target: pathlib.Path) -> pathlib.Path:
    """Decompress the golden archive directory into ``target`` (created) and return it."""
    target.mkdir(parents=True, exist_ok=True)
    for gz in sorted((golden_dir / GOLDEN_ARCHIVE / "archive-dir").glob("*.gz")):
        (target / gz.name[:-3]).write_bytes(gzip.decompress(gz.read_bytes()))
    return target


def expected_text(golden_dir: pathlib.Path, name: str) -> str:
    """An expected ArchiveTool output of the golden directory."""
    return (golden_dir / GOLDEN_ARCHIVE / "expected" / name).read_text()


def copy_dir(src: pathlib.Path, dst: pathlib.Path) -> pathlib.Path:
    """A copy of ``src`` at ``dst``."""
    shutil.copytree(src, dst)
    return dst


# -- segment files written by hand, frame by frame -----------------------------------------------------------------
TERM = 64 * 1024
SESSION_ID, STREAM_ID, INITIAL_TERM_ID = 0x1234567, 1001, 100


def data_frame(term_offset, term_id, payload, flags=0xC0):
    header = struct.pack("<iBBHiiiiq", 32 + len(payload), 0, flags, 1, term_offset, SESSION_ID, STREAM_ID, term_id, 0)
    return header + payload + bytes(-(32 + len(payload)) % 32)


def pad_frame(term_offset, term_id, length):
    # the recorder keeps only the header of a padding frame; the rest stays a hole
    return struct.pack("<iBBHiiiiq", length, 0, 0xC0, 0, term_offset, SESSION_ID, STREAM_ID, term_id, 0)


def write_recording(archive_dir, recording_id, start_position, frames_by_position):
    """Segment files (one term each: 64 KiB segments) holding ``frames_by_position``; returns the stop position."""
    files = {}
    stop = start_position
    for position, frame, advance in frames_by_position:
        base = position - position % TERM
        data = files.setdefault(base, bytearray(TERM))
        data[position - base:position - base + len(frame)] = frame
        stop = position + advance
    for base, data in files.items():
        (archive_dir / f"{recording_id}-{base}.rec").write_bytes(bytes(data))
    return stop


def messages_across_a_term(count: int) -> list:
    """``count`` 1 KiB messages from position 0 whose term 0 ends in a padding frame: (position, bytes, advance)."""
    frames, position = [], 0
    for i in range(count):
        term_offset = position % TERM
        if term_offset + 1024 > TERM:
            frames.append((position, pad_frame(term_offset, INITIAL_TERM_ID, TERM - term_offset), TERM - term_offset))
            position += TERM - term_offset
            term_offset = 0
        term_id = INITIAL_TERM_ID + position // TERM
        frames.append((position, data_frame(term_offset, term_id, bytes([i]) * 992), 1024))
        position += 1024
    return frames
