# SPDX-License-Identifier: Apache-2.0
import struct

import pytest

from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.logbuffer import LogBuffers
from aeron._core.term_scanner import (NO_ACTION, UNBLOCKED, UNBLOCKED_TO_END, LogBufferUnblocker, LogCleaner,
                                      TermGapFiller,
                                      TermGapScanner, TermRebuilder, TermUnblocker, clean_term,
                                      scan_for_availability)
from aeron.common.errors import IllegalStateError, InvalidArgumentError

from .framing import HEADER, read_header, write_frame, write_pad

TERM = 65536
SESSION, STREAM, INITIAL = 0x1234, 10, 5
IDS = {"session_id": SESSION, "stream_id": STREAM, "term_id": INITIAL}


@pytest.fixture
def term():
    return AtomicBuffer(bytearray(TERM))


@pytest.fixture
def log():
    return LogBuffers.create(term_length=TERM, initial_term_id=INITIAL, session_id=SESSION, stream_id=STREAM)


def pad_header(length, term_offset, term_id=INITIAL):
    # default header with type PAD, the slot's term offset and term id, length = gap
    return HEADER.pack(length, 0, 0xC0, 0, term_offset, SESSION, STREAM, term_id, 0)


# -- scan_for_availability (TermScanner) -------------------------------------------------------

def test_scan_empty(term):
    assert scan_for_availability(term, 0, 1408) == (0, 0)


def test_scan_frames_that_fit(term):
    off = 0
    for _ in range(3):
        off = write_frame(term, off, b"x" * 14, **IDS)
    assert scan_for_availability(term, 0, 1408) == (192, 0)
    assert scan_for_availability(term, 64, 1408) == (128, 0)


def test_scan_backs_out_frame_beyond_limit(term):
    off = 0
    for _ in range(3):
        off = write_frame(term, off, b"x" * 14, **IDS)
    assert scan_for_availability(term, 0, 100) == (64, 0)
    assert scan_for_availability(term, 0, 128) == (128, 0)


def test_scan_lone_frame_exceeding_limit_is_negative(term):
    write_frame(term, 0, b"y" * 200, **IDS)          # 232 -> 256 aligned
    assert scan_for_availability(term, 0, 128) == (-256, 0)
    assert scan_for_availability(term, 0, 256) == (256, 0)


def test_scan_stops_at_uncommitted(term):
    off = write_frame(term, 0, b"a", **IDS)
    write_frame(term, off, b"b", frame_length=-33, **IDS)
    assert scan_for_availability(term, 0, 1408) == (64, 0)


def test_scan_padding_sends_header_only(term):
    off = write_frame(term, 0, b"a", **IDS)
    off = write_pad(term, off, 256, **IDS)
    write_frame(term, off, b"after pad", **IDS)
    assert scan_for_availability(term, 0, 1408) == (64 + 32, 224)
    assert scan_for_availability(term, 64, 1408) == (32, 224)


def test_scan_padding_that_does_not_fit(term):
    off = write_frame(term, 0, b"a", **IDS)
    write_pad(term, off, 256, **IDS)
    assert scan_for_availability(term, 0, 64) == (64, 0)
    assert scan_for_availability(term, 0, 95) == (64, 0)
    assert scan_for_availability(term, 0, 96) == (96, 224)


def test_scan_limited_by_term_end(term):
    off = TERM - 128
    off = write_frame(term, off, b"a", **IDS)
    write_frame(term, off, b"b", **IDS)
    assert scan_for_availability(term, TERM - 128, 1408) == (128, 0)
    assert scan_for_availability(term, TERM - 64, 1408) == (64, 0)


def test_scan_corrupt_padding_capped_at_term_end(term):
    write_pad(term, TERM - 64, 1 << 20, **IDS)
    assert scan_for_availability(term, TERM - 64, 1408) == (32, 32)


def test_scan_argument_validation(term):
    for off in (-32, 31, TERM):
        with pytest.raises(InvalidArgumentError):
            scan_for_availability(term, off, 1408)
    with pytest.raises(InvalidArgumentError):
        scan_for_availability(term, 0, -1)
    assert scan_for_availability(term, 0, 0) == (0, 0)


# -- TermRebuilder ---------------------------------------------------------------------------

def test_rebuilder_copies_datagram_and_ignores_filled_slot(term):
    packet = bytearray(128)
    write_frame(packet, 0, b"first", **IDS)
    write_frame(packet, 64, b"second frame", **IDS)
    struct.pack_into("<i", packet, 8, 64)       # term offsets as in the term
    struct.pack_into("<i", packet, 64 + 8, 128)
    assert TermRebuilder.insert(term, 64, packet, 128) is True
    assert term.get_bytes(64, 128) == bytes(packet)
    other = bytearray(b"\x11" * 64)
    assert TermRebuilder.insert(term, 64, other) is False
    assert term.get_bytes(64, 128) == bytes(packet)
    # slots on either side untouched
    assert term.get_bytes(0, 64) == bytes(64) and term.get_bytes(192, 64) == bytes(64)


def test_rebuilder_validation(term):
    with pytest.raises(InvalidArgumentError):
        TermRebuilder.insert(term, 16, bytes(64))
    with pytest.raises(InvalidArgumentError):
        TermRebuilder.insert(term, 0, bytes(16))
    with pytest.raises(InvalidArgumentError):
        TermRebuilder.insert(term, 0, bytes(64), 65)
    with pytest.raises(IndexError):
        TermRebuilder.insert(term, TERM - 32, bytes(64))
    assert term.get_bytes(TERM - 32, 32) == bytes(32)


# -- TermGapScanner ---------------------------------------------------------------------------

def test_gap_scanner_finds_hole(term):
    write_frame(term, 0, b"a", **IDS)
    write_frame(term, 64, b"b", **IDS)
    write_frame(term, 256, b"c", **IDS)
    gaps = []
    assert TermGapScanner.scan_for_gap(term, INITIAL, 0, 320, lambda *g: gaps.append(g)) == 128
    assert gaps == [(INITIAL, 128, 128)]


def test_gap_scanner_hole_to_limit(term):
    write_frame(term, 0, b"a", **IDS)
    gaps = []
    assert TermGapScanner.scan_for_gap(term, INITIAL, 0, 192, lambda *g: gaps.append(g)) == 64
    assert gaps == [(INITIAL, 64, 128)]


def test_gap_scanner_no_gap(term):
    write_frame(term, 0, b"a", **IDS)
    write_frame(term, 64, b"b", **IDS)
    gaps = []
    assert TermGapScanner.scan_for_gap(term, INITIAL, 0, 128, lambda *g: gaps.append(g)) == 128
    assert TermGapScanner.scan_for_gap(term, INITIAL, 64, 100, lambda *g: gaps.append(g)) == 128
    assert gaps == []


def test_gap_scanner_first_slot_empty(term):
    write_frame(term, 96, b"z", **IDS)
    gaps = []
    assert TermGapScanner.scan_for_gap(term, 7, 0, 4096, lambda *g: gaps.append(g)) == 0
    assert gaps == [(7, 0, 96)]


def test_gap_scanner_validation(term):
    with pytest.raises(InvalidArgumentError):
        TermGapScanner.scan_for_gap(term, 0, 64, 32, print)
    with pytest.raises(InvalidArgumentError):
        TermGapScanner.scan_for_gap(term, 0, TERM, TERM, print)
    with pytest.raises(InvalidArgumentError):
        TermGapScanner.scan_for_gap(term, 0, 0, TERM + 32, print)


# -- TermGapFiller ----------------------------------------------------------------------------

def test_gap_filler_writes_pad_from_default_header(log, term):
    write_frame(term, 0, b"a", **IDS)
    write_frame(term, 256, b"c", **IDS)
    assert TermGapFiller.try_fill_gap(log, term, INITIAL + 3, 64, 192) is True
    assert term.get_bytes(64, 32) == pad_header(192, 64, INITIAL + 3)
    assert term.get_bytes(96, 160) == bytes(160)
    # also accepts the metadata buffer
    term2 = AtomicBuffer(bytearray(TERM))
    assert TermGapFiller.try_fill_gap(log.metadata_buffer(), term2, INITIAL, 0, 64) is True
    assert term2.get_bytes(0, 32) == pad_header(64, 0)


def test_gap_filler_refuses_when_slot_filled(log, term):
    write_frame(term, 128, b"late", **IDS)
    before = term.get_bytes(0, 512)
    assert TermGapFiller.try_fill_gap(log, term, INITIAL, 64, 128) is False
    assert term.get_bytes(0, 512) == before


def test_gap_filler_validation(log, term):
    with pytest.raises(InvalidArgumentError):
        TermGapFiller.try_fill_gap(log, term, INITIAL, 64, 0)
    with pytest.raises(InvalidArgumentError):
        TermGapFiller.try_fill_gap(log, term, INITIAL, 64, 40)
    with pytest.raises(InvalidArgumentError):
        TermGapFiller.try_fill_gap(log, term, INITIAL, TERM - 32, 64)
    with pytest.raises(InvalidArgumentError):
        TermGapFiller.try_fill_gap(bytearray(4096), term, INITIAL, 0, 64)


# -- TermUnblocker / LogBufferUnblocker ------------------------------------------------------

def test_unblock_negative_length_becomes_pad(log, term):
    write_frame(term, 0, b"ok", **IDS)
    write_frame(term, 64, b"claimed", frame_length=-96, session_id=1, stream_id=2, term_id=3)
    assert TermUnblocker.unblock(log, term, 64, 256, INITIAL) == UNBLOCKED
    assert term.get_bytes(64, 32) == pad_header(96, 64)


def test_unblock_zero_hole_then_later_frame(log, term):
    write_frame(term, 0, b"ok", **IDS)
    write_frame(term, 160, b"later", **IDS)
    assert TermUnblocker.unblock(log, term, 64, 256, INITIAL) == UNBLOCKED
    assert term.get_bytes(64, 32) == pad_header(96, 64)
    assert read_header(term, 160)[0] == 37


def test_unblock_zero_with_nothing_before_tail(log, term):
    assert TermUnblocker.unblock(log, term, 64, 1024, INITIAL) == NO_ACTION
    assert term.get_bytes(0, 2048) == bytes(2048)


def test_unblock_committed_frame_no_action(log, term):
    write_frame(term, 64, b"fine", **IDS)
    assert TermUnblocker.unblock(log, term, 64, 256, INITIAL) == NO_ACTION


def test_unblock_zero_to_end_of_term(log, term):
    assert TermUnblocker.unblock(log, term, TERM - 128, TERM, INITIAL) == UNBLOCKED_TO_END
    assert term.get_bytes(TERM - 128, 32) == pad_header(128, TERM - 128)


def test_unblock_corrupt_negative_length_left_alone(log, term):
    write_frame(term, TERM - 64, b"", frame_length=-1024, **IDS)
    assert TermUnblocker.unblock(log, term, TERM - 64, TERM, INITIAL) == NO_ACTION


def test_unblock_validation(log, term):
    with pytest.raises(InvalidArgumentError):
        TermUnblocker.unblock(log, term, 33, 64, INITIAL)
    with pytest.raises(InvalidArgumentError):
        TermUnblocker.unblock(log, term, 0, TERM + 1, INITIAL)


def test_log_unblocker_pads_to_end_and_rotates(log):
    meta = log.metadata_buffer()
    meta.put_i64(0, (INITIAL << 32) | (TERM + 64))      # a writer ran past the end then died
    term0 = log.term_buffer(0)
    assert LogBufferUnblocker.unblock(log, TERM - 128) is True
    assert term0.get_bytes(TERM - 128, 32) == pad_header(128, TERM - 128)
    assert log.active_term_count == 1
    assert log.raw_tail_volatile(1) == (INITIAL + 1) << 32


def test_log_unblocker_rotates_at_start_of_next_term(log):
    assert LogBufferUnblocker.unblock(log, TERM) is True
    assert log.active_term_count == 1
    assert log.raw_tail_volatile(1) == (INITIAL + 1) << 32


def test_log_unblocker_negative_claim(log):
    meta = log.metadata_buffer()
    meta.put_i64(0, (INITIAL << 32) | 256)
    term0 = log.term_buffer(0)
    write_frame(term0, 64, b"", frame_length=-192, **IDS)
    assert LogBufferUnblocker.unblock(log, 64) is True
    assert term0.get_bytes(64, 32) == pad_header(192, 64)
    assert log.active_term_count == 0
    assert LogBufferUnblocker.unblock(log, 512) is False
    with pytest.raises(InvalidArgumentError):
        LogBufferUnblocker.unblock(log, 70)


# -- clean_term (cleanBufferTo) ----------------------------------------------------------------

def test_clean_term_zeroes_range_only(term):
    term.put_bytes(0, b"\xff" * 512)
    clean_term(term, 64, 128)
    assert term.get_bytes(0, 64) == b"\xff" * 64
    assert term.get_bytes(64, 128) == bytes(128)
    assert term.get_bytes(192, 320) == b"\xff" * 320


def test_log_cleaner_zeroes_behind_across_terms_and_wraps_the_partitions(log):
    for index in range(3):
        log.term_buffer(index).put_bytes(0, b"\xff" * TERM)
    start = 2 * TERM + 96                           # a log that began in partition 2 (its own clean position)
    cleaner = LogCleaner(log, start)
    assert cleaner.clean_to(start) == 0 and cleaner.clean_to(start - 64) == 0      # nothing behind it
    assert cleaner.clean_to(3 * TERM + 256) == TERM - 96 + 256      # the rest of partition 2, then into 0
    assert cleaner.clean_position == 3 * TERM + 256
    assert log.term_buffer(2).get_bytes(0, 96) == b"\xff" * 96
    assert log.term_buffer(2).get_bytes(96, TERM - 96) == bytes(TERM - 96)
    assert log.term_buffer(0).get_bytes(0, 256) == bytes(256)
    assert log.term_buffer(0).get_bytes(256, 64) == b"\xff" * 64
    assert log.term_buffer(1).get_bytes(0, TERM) == b"\xff" * TERM
    assert cleaner.clean_to(3 * TERM + 260) == 0      # under 8 bytes: left for later, as Aeron does
    cleaner.clean_position = 5 * TERM                 # moved by its owner (an image rejoining)
    assert cleaner.clean_to(5 * TERM + 32) == 32 and log.term_buffer(2).get_bytes(0, 32) == bytes(32)
    log.close()
    with pytest.raises(IllegalStateError):
        cleaner.clean_to(6 * TERM)


def test_log_cleaner_on_a_mapped_log_another_mapping_wrote(tmp_path):
    # the driver's case: the publisher wrote the pages through its own mapping of the file
    path = str(tmp_path / "log")
    LogBuffers.create(path, term_length=TERM, initial_term_id=INITIAL, session_id=SESSION, stream_id=STREAM).close()
    writer, driver = LogBuffers.map_existing(path), LogBuffers.map_existing(path)
    try:
        for index in range(3):
            writer.term_buffer(index).put_bytes(0, b"\x5a" * TERM)
        cleaner = LogCleaner(driver, 0)
        assert cleaner.clean_to(2 * TERM + 4096) == 2 * TERM + 4096
        assert writer.term_buffer(0).get_bytes(0, TERM) == bytes(TERM)
        assert writer.term_buffer(1).get_bytes(0, TERM) == bytes(TERM)
        assert writer.term_buffer(2).get_bytes(0, 4096) == bytes(4096)
        assert writer.term_buffer(2).get_bytes(4096, TERM - 4096) == b"\x5a" * (TERM - 4096)
    finally:
        writer.close()
        driver.close()


def test_clean_term_validation(term):
    with pytest.raises(InvalidArgumentError):
        clean_term(term, 0, 4)
    with pytest.raises(InvalidArgumentError):
        clean_term(term, 4, 64)
    with pytest.raises(IndexError):
        clean_term(term, TERM - 32, 64)
