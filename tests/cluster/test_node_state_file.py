# SPDX-License-Identifier: Apache-2.0
"""NodeStateFile: the layout Java writes (header, candidate term record with its 16-byte header, footer), the
golden Java file, the candidate term's updates, the migration from the mark file, and corrupt files."""
import gzip
import struct

import pytest

from aeron.cluster.node_state_file import NodeStateFile
from aeron.common.errors import ClusterError, CorruptFileError
from tests.cluster.conftest import GOLDEN_CLUSTER

GOLDEN = gzip.decompress((GOLDEN_CLUSTER / "node0" / "cluster" / "node-state.dat.gz").read_bytes())


def test_a_new_file_is_laid_out_as_javas(tmp_path):
    with NodeStateFile(tmp_path, create_new=True) as state:
        assert state.candidate_term() == (-1, -1, -1)
    raw = (tmp_path / NodeStateFile.FILENAME).read_bytes()
    assert len(raw) == 1 << 20
    # Java's file with the candidate term's values as a new one holds them
    expected = GOLDEN[:24] + struct.pack("<qqq", -1, -1, -1) + GOLDEN[48:64]
    assert raw[:64] == expected
    assert not any(raw[64:])


def test_the_golden_java_file_reads_and_updates_in_place(tmp_path):
    (tmp_path / NodeStateFile.FILENAME).write_bytes(GOLDEN)
    with NodeStateFile(tmp_path) as state:
        assert state.candidate_term() == (0, 1795335488542, 0)
        assert state.propose_max_candidate_term_id(0, 99, 99) == 0          # not higher: unchanged
        assert state.candidate_term() == (0, 1795335488542, 0)
        assert state.propose_max_candidate_term_id(3, 736, 1795335499999) == 3
        assert state.candidate_term() == (3, 1795335499999, 736)
        state.update_candidate_term_id(2, 800, 5)                           # an update may lower it
    raw = (tmp_path / NodeStateFile.FILENAME).read_bytes()
    assert struct.unpack_from("<qqq", raw, 24) == (2, 5, 800)
    assert raw[:24] == GOLDEN[:24] and raw[48:] == GOLDEN[48:]


def test_the_mark_files_candidate_term_id_is_migrated_once(tmp_path):
    with NodeStateFile(tmp_path, create_new=True, file_sync_level=1) as state:
        assert not state.migrate_candidate_term_id(-1, 10)
        assert state.migrate_candidate_term_id(5, 10)
        assert state.candidate_term() == (5, 10, -1)
        assert not state.migrate_candidate_term_id(7, 20)                    # the file's own id wins
        assert state.candidate_term_id() == 5


def test_a_missing_file_without_create_new_is_an_error(tmp_path):
    with pytest.raises(ClusterError, match="does not exist"):
        NodeStateFile(tmp_path)


def _corrupt(tmp_path, change):
    raw = bytearray(GOLDEN)
    change(raw)
    (tmp_path / NodeStateFile.FILENAME).write_bytes(raw)
    return NodeStateFile(tmp_path)


def test_another_major_version_is_refused(tmp_path):
    with pytest.raises(ClusterError, match="major version 1"):
        _corrupt(tmp_path, lambda raw: struct.pack_into("<i", raw, 0, 1 << 16))


def test_a_negative_frame_length_is_reported_with_its_offset(tmp_path):
    with pytest.raises(CorruptFileError) as info:
        _corrupt(tmp_path, lambda raw: (struct.pack_into("<H", raw, 10, 999), struct.pack_into("<i", raw, 16, -8)))
    assert info.value.offset == 8 and "Message length -8 < 0" in str(info.value)


def test_a_missing_footer_or_candidate_term_is_corrupt(tmp_path):
    with pytest.raises(CorruptFileError, match="NodeStateFooter"):
        _corrupt(tmp_path, lambda raw: raw.__setitem__(slice(48, 64), bytes(16)))
    with pytest.raises(CorruptFileError, match="CandidateTerm"):
        _corrupt(tmp_path, lambda raw: struct.pack_into("<H", raw, 10, 302))     # not a candidateTerm record


def test_a_record_before_the_candidate_term_is_walked_over(tmp_path):
    # a record Aeron does not write (ClusterMembers, 303) ahead of the candidate term: found by its frame length
    raw = bytearray(1 << 20)
    raw[0:8] = GOLDEN[0:8]
    members = b"0,a:1,a:2,a:3,a:4,a:5"
    block = struct.pack("<qii", 0, 0, 0) + struct.pack("<I", len(members)) + members
    frame = struct.pack("<HHHHii", 16, 303, 112, 10, 16 + len(block), 0) + block
    raw[8:8 + len(frame)] = frame
    at = 8 + ((len(frame) + 7) & ~7)
    raw[at:at + 56] = GOLDEN[8:64]
    (tmp_path / NodeStateFile.FILENAME).write_bytes(raw)
    with NodeStateFile(tmp_path) as state:
        assert state.candidate_term() == (0, 1795335488542, 0)
