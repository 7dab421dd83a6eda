# SPDX-License-Identifier: Apache-2.0
import datetime
import struct

import pytest

from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core import error_log as E
from aeron._core.error_log import (DistinctErrorLog, error_log_exists, format_error_log, format_timestamp,
                                   read_error_log)

UTC = datetime.timezone.utc


def make(n=1024, start=1000):
    now = [start]
    raw = bytearray(n)
    buf = AtomicBuffer(raw)
    return raw, buf, now, DistinctErrorLog(buf, lambda: now[0])


def test_layout_constants():
    assert (E.LENGTH_OFFSET, E.OBSERVATION_COUNT_OFFSET, E.LAST_OBSERVATION_TIMESTAMP_OFFSET,
            E.FIRST_OBSERVATION_TIMESTAMP_OFFSET, E.ENCODED_ERROR_OFFSET, E.RECORD_ALIGNMENT) == (0, 4, 8, 16, 24, 8)


def test_record_layout_bytes_and_dedup():
    raw, buf, now, log = make()
    assert not error_log_exists(buf)
    assert log.record("invalid channel", error_code=-1)
    text = b"(-1) invalid channel"
    assert struct.unpack_from("<iiqq", raw, 0) == (24 + len(text), 1, 1000, 1000)
    assert raw[24:24 + len(text)] == text
    second = (24 + len(text) + 7) & ~7
    now[0] = 2000
    assert log.record("other", error_code=7)
    now[0] = 3000
    assert log.record("invalid channel", error_code=-1)       # repeat: count and last bumped
    assert struct.unpack_from("<iiqq", raw, 0) == (24 + len(text), 2, 3000, 1000)
    assert struct.unpack_from("<iiqq", raw, second) == (24 + len(b"(7) other"), 1, 2000, 2000)
    assert log.distinct_count == 2
    recs = read_error_log(buf)
    assert [(r.observation_count, r.first_timestamp, r.last_timestamp, r.text) for r in recs] == [
        (2, 1000, 3000, "(-1) invalid channel"), (1, 2000, 2000, "(7) other")]
    assert [r.text for r in read_error_log(buf, since_timestamp=2500)] == ["(-1) invalid channel"]
    assert error_log_exists(buf)


def test_exception_recorded_as_traceback():
    raw, buf, now, log = make(4096)
    for _ in range(3):
        try:
            raise ValueError("boom")
        except ValueError as exc:
            log.record(exc)
    recs = read_error_log(buf)
    assert len(recs) == 1 and recs[0].observation_count == 3
    assert "ValueError: boom" in recs[0].text and recs[0].text.startswith("Traceback")


def test_full_log_drops_new_errors():
    raw, buf, now, log = make(64)
    assert log.record("x" * 30)          # 54 bytes -> next at 56
    assert not log.record("y")           # 25 bytes do not fit in the last 8
    assert log.record("x" * 30)          # repeats still count
    assert [r.observation_count for r in read_error_log(buf)] == [2]


def test_errorstat_format():
    raw, buf, now, log = make(start=1_795_316_532_983)
    log.record("invalid channel\n[aeron_uri_parse, aeron_uri.c:318] invalid URI scheme or transport: aeron:bogus",
               error_code=-1)
    text = format_error_log(read_error_log(buf), tz=UTC)
    assert text == (
        "***\n1 observations from 2026-11-22 03:02:12.983+0000 to 2026-11-22 03:02:12.983+0000 for:\n"
        " (-1) invalid channel\n[aeron_uri_parse, aeron_uri.c:318] invalid URI scheme or transport: aeron:bogus\n"
        "\n1 distinct errors observed.\n")
    assert format_error_log([]) == "\n0 distinct errors observed.\n"
    assert format_timestamp(1_795_316_532_983, datetime.timezone(datetime.timedelta(hours=-5))) == \
        "2026-11-21 22:02:12.983-0500"


def test_corrupt_and_truncated_buffers_stop_reading():
    raw, buf, now, log = make(256)
    log.record("first")
    log.record("second")
    good = read_error_log(buf)
    assert len(good) == 2
    # a length running past the end stops the walk after the first record
    struct.pack_into("<i", raw, good[1].offset, 10_000)
    assert [r.text for r in read_error_log(buf)] == ["first"]
    # a length shorter than the header stops too
    struct.pack_into("<i", raw, good[1].offset, 5)
    assert len(read_error_log(buf)) == 1
    struct.pack_into("<i", raw, 0, -8)
    assert read_error_log(buf) == []
    # a window cut in the middle of a record
    raw2 = bytearray(256)
    log2 = DistinctErrorLog(AtomicBuffer(raw2), lambda: 1)
    log2.record("a" * 100)
    assert read_error_log(AtomicBuffer(raw2, 0, 64)) == []
    assert read_error_log(AtomicBuffer(raw2, 0, 8)) == []


def test_texts_differing_only_in_numbers_are_one_distinct_entry():
    raw, buf, now, log = make(8192)
    for i in range(100):
        assert log.record(f"bind failed 127.0.0.1:{40000 + i} session-id={i * 31} handle=0x{i:x}f", error_code=-1)
    log.record("bind failed on IPv6 [::1]:40000", error_code=-1)     # other words: another entry
    log.record("bind failed on IPv4 127.0.0.1:40000", error_code=-1)
    recs = read_error_log(buf)
    assert [r.observation_count for r in recs] == [100, 1, 1]
    assert recs[0].text == "(-1) bind failed 127.0.0.1:40000 session-id=0 handle=0x0f"
    assert E.distinct_key("port 40123 id=-7 0xdeadBEEF IPv6") == "port # id=-# # IPv6"
