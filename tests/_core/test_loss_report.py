# SPDX-License-Identifier: Apache-2.0
import datetime
import gzip
import struct

import pytest

from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core import loss_report as L
from aeron._core.loss_report import LossReport, entry_length, format_loss_report, read_loss_report
from aeron.common.errors import OutOfBoundsError

UTC = datetime.timezone.utc
CHANNEL = "aeron:udp?endpoint=127.0.0.1:40611|cc=cubic"


def golden(golden_dir):
    d = golden_dir / "frames" / "unicast-loss-rttm"
    return (bytearray(gzip.decompress((d / "loss-report-subscriber-driver.dat.gz").read_bytes())),
            (d / "lossstat-subscriber-driver.txt").read_text())


def test_layout_constants():
    assert (L.OBSERVATION_COUNT_OFFSET, L.TOTAL_BYTES_LOST_OFFSET, L.FIRST_OBSERVATION_OFFSET,
            L.LAST_OBSERVATION_OFFSET, L.SESSION_ID_OFFSET, L.STREAM_ID_OFFSET, L.CHANNEL_OFFSET,
            L.ENTRY_ALIGNMENT) == (0, 8, 16, 24, 32, 36, 40, 64)
    assert entry_length(43, 15) == 128      # 40 + 48 + 4 + 15 = 107 -> 128
    assert entry_length(0, 0) == 64


def test_golden_read_and_lossstat_format(golden_dir):
    data, text = golden(golden_dir)
    entries = read_loss_report(AtomicBuffer(data))
    assert len(entries) == 1
    e = entries[0]
    assert (e.observation_count, e.total_bytes_lost, e.first_observation_timestamp,
            e.last_observation_timestamp, e.session_id, e.stream_id, e.channel, e.source) == (
        1, 64, 1795335211700, 1795335211700, -976833086, 1001, CHANNEL, "127.0.0.1:40612")
    assert format_loss_report(entries, tz=UTC) == text
    assert text.splitlines()[0] == L.LOSS_STAT_HEADER


def test_writer_reproduces_golden_bytes(golden_dir):
    data, _ = golden(golden_dir)
    mine = bytearray(len(data))
    report = LossReport(AtomicBuffer(mine))
    assert report.create_entry(64, 1795335211700, -976833086, 1001, CHANNEL, "127.0.0.1:40612") == 0
    assert mine == data
    assert report.next_record_offset == 128


def test_observations_and_multiple_entries():
    raw = bytearray(4096)
    buf = AtomicBuffer(raw)
    report = LossReport(buf)
    a = report.create_entry(10, 100, 1, 2, "aeron:udp?endpoint=x:1", "h:2")   # channel 22 -> pad to 24
    b = report.create_entry(5, 200, 3, 4, "c", "s")
    assert (a, b) == (0, 128)
    # channel padded to 4: source length at 40 + align(4 + 22, 4) = 68
    assert struct.unpack_from("<i", raw, 68)[0] == 3 and raw[72:75] == b"h:2"
    report.record_observation(a, 7, 150)
    report.record_observation(a, 3, 160)
    e = read_loss_report(buf)
    assert [(x.observation_count, x.total_bytes_lost, x.first_observation_timestamp,
             x.last_observation_timestamp, x.session_id, x.stream_id, x.channel, x.source) for x in e] == [
        (3, 20, 100, 160, 1, 2, "aeron:udp?endpoint=x:1", "h:2"), (1, 5, 200, 200, 3, 4, "c", "s")]
    assert format_loss_report(e, UTC).splitlines()[-1] == "2 entries read"
    with pytest.raises(OutOfBoundsError):
        report.record_observation(64, 1, 1)
    with pytest.raises(OutOfBoundsError):
        report.record_observation(256, 1, 1)


def test_full_report_and_corrupt_entries():
    raw = bytearray(128)
    report = LossReport(AtomicBuffer(raw))
    assert report.create_entry(1, 1, 1, 1, "c" * 40, "s") == 0
    assert report.create_entry(1, 1, 1, 1, "c" * 40, "s") == -1      # does not fit
    struct.pack_into("<i", raw, 40, 10_000)                          # channel length past the end
    assert read_loss_report(AtomicBuffer(raw)) == []
    struct.pack_into("<i", raw, 40, -1)
    assert read_loss_report(AtomicBuffer(raw)) == []
    assert read_loss_report(AtomicBuffer(bytearray(30))) == []
