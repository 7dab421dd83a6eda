# SPDX-License-Identifier: Apache-2.0
"""The golden Java archive directory, unpacked, for the catalog, mark file, segment and ArchiveTool tests."""
import gzip
import pathlib
import shutil

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
