# SPDX-License-Identifier: Apache-2.0
"""The segment -> Arrow scan without Spark: golden Java archive, synthetic recordings read exactly once across
partition and batch sizes, live, truncated and corrupt segments, timestamps, and the kernel's bounds."""
import itertools
import os
import random
import struct

import pyarrow as pa
import pytest

from aeron._core.segment_batch import SCAN_CORRUPT, SCAN_END_OF_DATA, scan_messages
from aeron.archive import segments
from aeron.archive.catalog import Catalog
from aeron.common.errors import InvalidArgumentError
from aeron.spark.scan import (
    SCHEMA,
    CorruptSegmentError,
    plan_ranges,
    read_range,
    timestamp_source,
)
from tests.spark.recordings import RecordingWriter


def read_all(archive_dir, **kw):
    plan = {k: kw.pop(k) for k in list(kw) if k not in ("skip_corrupt", "max_rows_per_batch", "max_bytes_per_batch")}
    rows = []
    for r in plan_ranges(archive_dir, **plan):
        for b in read_range(r, **kw):
            assert b.schema == SCHEMA
            rows.extend(zip(b.column("recording_id").to_pylist(), b.column("position").to_pylist(),
                            b.column("payload").to_pylist()))
    return rows


def test_golden_java_archive(golden_archive):
    ranges = plan_ranges(golden_archive)
    assert [r.recording_id for r in ranges] == [0, 1]
    rec0 = pa.Table.from_batches(list(read_range(ranges[0])))
    assert rec0.column("payload").to_pylist() == [f"Hello World! {i}".encode() for i in range(5)]
    assert rec0.column("position").to_pylist() == [0, 64, 128, 192, 256]
    assert set(rec0.column("stream_id").to_pylist()) == {1001}
    assert set(rec0.column("flags").to_pylist()) == {0xC0}
    assert rec0.column("timestamp").null_count == 5
    rec1 = pa.Table.from_batches(list(read_range(ranges[1])))
    assert rec1.num_rows == 1
    payload = rec1.column("payload")[0].as_py()
    assert len(payload) == 5000
    assert rec1.column("position")[0].as_py() == 0
    assert rec1.column("flags")[0].as_py() == 0xC0
    assert rec1.column("stream_id")[0].as_py() == 1002


def synthetic(tmp_path, seed=7):
    rnd = random.Random(seed)
    d = tmp_path / "archive"
    # starts mid-term (3 terms + 4 KiB in), 2-term segments: term rotations, segment rollovers, fragments
    a = RecordingWriter(d, term_length=64 * 1024, segment_length=128 * 1024, start_position=3 * 65536 + 4096,
                        initial_term_id=-5, stream_id=1001)
    for i in range(1500):
        a.append(bytes([i % 251]) * rnd.choice([0, 10, 100, 1376, 3000, 7000]) + str(i).encode())
    a.stop()
    b = RecordingWriter(d, stream_id=1002, channel="aeron:udp?endpoint=localhost:4000")
    for i in range(40):
        b.append(b"b%d" % i)
    b.stop()
    return d, a, b


def expected(*writers):
    return sorted((w.recording_id, p, m) for w in writers for p, m in w.messages)


@pytest.mark.parametrize("per_partition", [1, 65536, 200_000, 1 << 30])
@pytest.mark.parametrize("rows,nbytes", [(1, 1), (97, 50_000), (65536, 8 << 20)])
def test_every_message_exactly_once(tmp_path, per_partition, rows, nbytes):
    d, a, b = synthetic(tmp_path)
    got = read_all(d, max_bytes_per_partition=per_partition, max_rows_per_batch=rows, max_bytes_per_batch=nbytes)
    assert sorted(got) == expected(a, b)
    assert len(got) == len(set(got))


def test_partitions_are_term_aligned_ranges(tmp_path):
    d, a, _ = synthetic(tmp_path)
    ranges = [r for r in plan_ranges(d, max_bytes_per_partition=200_000) if r.recording_id == a.recording_id]
    assert ranges[0].from_position == a.start_position
    assert ranges[-1].to_position == a.position
    for prev, nxt in itertools.pairwise(ranges):
        assert prev.to_position == nxt.from_position
        assert nxt.from_position % (3 * 65536) == 0        # 200,000 bytes rounds down to 3 terms
    assert all(r.to_position - r.from_position <= 3 * 65536 for r in ranges)


def test_filters_select_recordings_and_positions(tmp_path):
    d, a, b = synthetic(tmp_path)
    assert {r.recording_id for r in plan_ranges(d, stream_ids=[1002])} == {b.recording_id}
    assert {r.recording_id for r in plan_ranges(d, channel="endpoint=localhost:4000")} == {b.recording_id}
    assert plan_ranges(d, recording_ids=[99]) == []
    lo, hi = a.messages[100][0] + 1, a.messages[900][0]
    got = read_all(d, recording_ids=[a.recording_id], from_position=lo, to_position=hi,
                   max_bytes_per_partition=65536)
    assert sorted(got) == [(a.recording_id, p, m) for p, m in a.messages if lo <= p < hi]
    whole = len(plan_ranges(d, recording_ids=[a.recording_id], max_bytes_per_partition=65536))
    assert len(plan_ranges(d, recording_ids=[a.recording_id], from_position=lo, to_position=hi,
                           max_bytes_per_partition=65536)) < whole


def test_live_recording_ends_before_an_incomplete_message(tmp_path):
    d = tmp_path / "archive"
    w = RecordingWriter(d)
    for i in range(10):
        w.append(b"m%d" % i)
    done = list(w.messages)
    first = w.append(b"z" * 5000)               # 4 fragments; wipe all but the first: still being written
    path = d / segments.segment_file_name(w.recording_id, 0)
    data = bytearray(path.read_bytes())
    data[first + 1408:w.position] = bytes(w.position - first - 1408)
    path.write_bytes(data)
    with Catalog(d, read_only=True) as c:
        assert c.recording(w.recording_id).stop_position == -1
    ranges = plan_ranges(d)
    assert ranges[0].to_position == first
    assert sorted(read_all(d)) == [(w.recording_id, p, m) for p, m in done]


def test_truncated_segment_returns_only_complete_frames(tmp_path):
    d, a, _ = synthetic(tmp_path)
    last_base = segments.segment_file_base_position(a.start_position, a.position - 1, 65536, 131072)
    path = d / segments.segment_file_name(a.recording_id, last_base)
    cut = (a.position - last_base) // 2 + 5                  # mid-frame
    os.truncate(path, cut)
    got = read_all(d, recording_ids=[a.recording_id])
    want = [(a.recording_id, p, m) for p, m in a.messages]
    assert sorted(got) == want[:len(got)]
    assert all(p + len(m) + 32 <= last_base + cut for _, p, m in got)
    assert len(want) - len(got) >= 1


def test_corrupt_segment_raises_naming_file_and_offset_or_skips(tmp_path):
    d, a, _ = synthetic(tmp_path)
    victim_pos = a.messages[300][0]
    base = segments.segment_file_base_position(a.start_position, victim_pos, 65536, 131072)
    path = d / segments.segment_file_name(a.recording_id, base)
    with open(path, "r+b") as f:
        f.seek(victim_pos - base + 8)
        f.write(struct.pack("<i", 12345))                  # term offset field no longer matches the frame's place
    with pytest.raises(CorruptSegmentError) as err:
        read_all(d, recording_ids=[a.recording_id])
    assert err.value.offset == victim_pos - base
    assert str(path) in str(err.value)
    with pytest.warns(RuntimeWarning, match="invalid frame"):
        got = read_all(d, recording_ids=[a.recording_id], skip_corrupt=True)
    term_base = victim_pos - (victim_pos & 65535)
    want = [(a.recording_id, p, m) for p, m in a.messages if not term_base <= p < term_base + 65536 or p < victim_pos]
    assert sorted(got) == want


def test_timestamp_from_reserved_value_or_payload(tmp_path):
    assert timestamp_source("aeron:udp?endpoint=x:1|media-rcv-ts-offset=reserved") == (1, 0)
    assert timestamp_source("aeron:udp?channel-snd-ts-offset=8") == (2, 8)
    assert timestamp_source("aeron:ipc") == (0, 0)
    d = tmp_path / "archive"
    w = RecordingWriter(d, channel="aeron:udp?endpoint=x:1|channel-rcv-ts-offset=reserved")
    w.append(b"a", reserved=1_700_000_000_123_456_789)
    w.stop()
    t = pa.Table.from_batches(list(read_range(plan_ranges(d)[0])))
    assert t.column("timestamp")[0].value == 1_700_000_000_123_456
    assert t.column("reserved_value")[0].as_py() == 1_700_000_000_123_456_789
    w2 = RecordingWriter(d, channel="aeron:udp?endpoint=x:1|media-rcv-ts-offset=4")
    w2.append(b"abcd" + struct.pack("<q", 5_000_000_000) + b"tail")
    w2.append(b"short")
    w2.stop()
    t = pa.Table.from_batches(list(read_range(plan_ranges(d, recording_ids=[w2.recording_id])[0])))
    assert t.column("timestamp")[0].value == 5_000_000
    assert t.column("timestamp")[1].as_py() is None


def test_kernel_rejects_bad_regions():
    seg = bytes(1024)
    with pytest.raises(InvalidArgumentError):
        scan_messages(seg, 0, 2048, 2048, 0, 1024, 0)
    with pytest.raises(InvalidArgumentError):
        scan_messages(seg, 16, 512, 1024, 0, 1024, 0)
    with pytest.raises(InvalidArgumentError):
        scan_messages(seg, 0, 512, 1024, 0, 1000, 0)
    assert scan_messages(seg, 0, 512, 1024, 0, 1024, 0)[3] == SCAN_END_OF_DATA
    bad = bytearray(1024)
    bad[0:4] = struct.pack("<i", 4096)                     # runs past its term
    rows, _, nxt, status, err = scan_messages(bytes(bad), 0, 1024, 1024, 0, 1024, 0)
    assert (rows, nxt, status, err) == (0, 0, SCAN_CORRUPT, 0)
