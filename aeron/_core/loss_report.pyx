# SPDX-License-Identifier: Apache-2.0
# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Loss report writer and reader, and the LossStat text format.

Port of LossReport / LossReportReader (aeron_loss_reporter.c).
"""
import collections

from libc.stdint cimport int32_t, int64_t, uint8_t
from libc.string cimport memcpy

from aeron._core.atomic cimport load_acquire_i64, store_release_i64, get_and_add_i64
from aeron._core.atomic_buffer cimport AtomicBuffer
from aeron._core.error_log import format_timestamp
from aeron.common.errors import InvalidArgumentError, OutOfBoundsError

LOSS_REPORT_FILE = "loss-report.dat"
OBSERVATION_COUNT_OFFSET = LOSS_REPORT_OBSERVATION_COUNT_OFFSET
TOTAL_BYTES_LOST_OFFSET = LOSS_REPORT_TOTAL_BYTES_LOST_OFFSET
FIRST_OBSERVATION_OFFSET = LOSS_REPORT_FIRST_OBSERVATION_OFFSET
LAST_OBSERVATION_OFFSET = LOSS_REPORT_LAST_OBSERVATION_OFFSET
SESSION_ID_OFFSET = LOSS_REPORT_SESSION_ID_OFFSET
STREAM_ID_OFFSET = LOSS_REPORT_STREAM_ID_OFFSET
CHANNEL_OFFSET = LOSS_REPORT_CHANNEL_OFFSET
ENTRY_ALIGNMENT = LOSS_REPORT_ENTRY_ALIGNMENT
LOSS_STAT_HEADER = ("OBSERVATION_COUNT, TOTAL_BYTES_LOST, FIRST_OBSERVATION,LAST_OBSERVATION, SESSION_ID, "
                    "STREAM_ID, CHANNEL, SOURCE")

LossReportEntry = collections.namedtuple(
    "LossReportEntry",
    "observation_count total_bytes_lost first_observation_timestamp last_observation_timestamp "
    "session_id stream_id channel source offset")


cdef inline Py_ssize_t _align(Py_ssize_t v, Py_ssize_t a) noexcept nogil:
    return (v + a - 1) & ~(a - 1)


def entry_length(Py_ssize_t channel_length, Py_ssize_t source_length):
    """Writer stride: ``align(40 + align(4 + channel, 4) + 4 + source, 64)``."""
    return _align(CHANNEL_OFFSET + _align(4 + channel_length, 4) + 4 + source_length, ENTRY_ALIGNMENT)


cdef class LossReport:
    """Writer of loss-report.dat (one receiver thread writes; LossStat reads concurrently).

    ``LossReport(buffer)``; ``create_entry(...)`` returns the entry offset, or -1 when it does not fit.
    """

    def __init__(self, AtomicBuffer buffer not None):
        buffer.check_open()
        if (<size_t>buffer.data) % 8 != 0:
            raise InvalidArgumentError("loss report buffer must be 8-byte aligned")
        self.buffer = buffer
        self.next_record_offset = 0
        self.entry_offsets = set()

    def create_entry(self, int64_t initial_bytes_lost, int64_t timestamp_ms, int32_t session_id,
                     int32_t stream_id, channel, source):
        """Add an entry for a newly lossy image: count 1 (release, last), bytes, timestamps, ids, strings.

        Returns the entry offset for record_observation, or -1 if the report is full.
        """
        cdef bytes ch = channel.encode("ascii", "replace") if isinstance(channel, str) else bytes(channel)
        cdef bytes src = source.encode("ascii", "replace") if isinstance(source, str) else bytes(source)
        cdef Py_ssize_t offset = self.next_record_offset
        cdef Py_ssize_t source_offset = CHANNEL_OFFSET + _align(4 + len(ch), 4)
        cdef Py_ssize_t length = entry_length(len(ch), len(src))
        self.buffer.check_open()
        if length > self.buffer.length - offset:
            return -1
        cdef uint8_t *p = self.buffer.data + offset
        cdef int32_t n
        (<int64_t *>(p + LOSS_REPORT_TOTAL_BYTES_LOST_OFFSET))[0] = initial_bytes_lost
        (<int64_t *>(p + LOSS_REPORT_FIRST_OBSERVATION_OFFSET))[0] = timestamp_ms
        (<int64_t *>(p + LOSS_REPORT_LAST_OBSERVATION_OFFSET))[0] = timestamp_ms
        (<int32_t *>(p + LOSS_REPORT_SESSION_ID_OFFSET))[0] = session_id
        (<int32_t *>(p + LOSS_REPORT_STREAM_ID_OFFSET))[0] = stream_id
        n = <int32_t>len(ch)
        memcpy(p + LOSS_REPORT_CHANNEL_OFFSET, &n, 4)
        if n:
            memcpy(p + LOSS_REPORT_CHANNEL_OFFSET + 4, <char *>ch, <size_t>n)
        n = <int32_t>len(src)
        memcpy(p + source_offset, &n, 4)
        if n:
            memcpy(p + source_offset + 4, <char *>src, <size_t>n)
        # The count is the entry's commit: readers stop at a count <= 0.
        store_release_i64(<int64_t *>(p + LOSS_REPORT_OBSERVATION_COUNT_OFFSET), 1)
        self.next_record_offset = offset + length
        self.entry_offsets.add(offset)
        return offset

    cdef int check_entry(self, Py_ssize_t offset) except -1:
        self.buffer.check_open()
        if offset not in self.entry_offsets:
            raise OutOfBoundsError(f"no loss report entry at offset {offset}")
        return 0

    def record_observation(self, Py_ssize_t offset, int64_t bytes_lost, int64_t timestamp_ms):
        """Another loss on the entry at ``offset``: last = now (release), bytes and count added atomically."""
        self.check_entry(offset)
        cdef uint8_t *p = self.buffer.data + offset
        store_release_i64(<int64_t *>(p + LOSS_REPORT_LAST_OBSERVATION_OFFSET), timestamp_ms)
        get_and_add_i64(<int64_t *>(p + LOSS_REPORT_TOTAL_BYTES_LOST_OFFSET), bytes_lost)
        get_and_add_i64(<int64_t *>(p + LOSS_REPORT_OBSERVATION_COUNT_OFFSET), 1)


def read_loss_report(AtomicBuffer buffer not None):
    """Entries in file order; stops at a count <= 0, at the end, or at an entry that does not fit."""
    buffer.check_open()
    if (<size_t>buffer.data) % 8 != 0:
        raise InvalidArgumentError("loss report buffer must be 8-byte aligned")
    out = []
    cdef Py_ssize_t offset = 0
    cdef Py_ssize_t capacity = buffer.length
    cdef Py_ssize_t source_offset
    cdef int64_t count
    cdef int32_t clen, slen
    cdef uint8_t *p
    while offset + CHANNEL_OFFSET + 4 <= capacity:
        p = buffer.data + offset
        count = load_acquire_i64(<int64_t *>(p + LOSS_REPORT_OBSERVATION_COUNT_OFFSET))
        if count <= 0:
            break
        memcpy(&clen, p + LOSS_REPORT_CHANNEL_OFFSET, 4)
        if clen < 0 or clen > capacity - offset - CHANNEL_OFFSET - 8:
            break
        source_offset = CHANNEL_OFFSET + _align(4 + clen, 4)
        if source_offset + 4 > capacity - offset:
            break
        memcpy(&slen, p + source_offset, 4)
        if slen < 0 or slen > capacity - offset - source_offset - 4:
            break
        out.append(LossReportEntry(
            count,
            load_acquire_i64(<int64_t *>(p + LOSS_REPORT_TOTAL_BYTES_LOST_OFFSET)),
            (<int64_t *>(p + LOSS_REPORT_FIRST_OBSERVATION_OFFSET))[0],
            load_acquire_i64(<int64_t *>(p + LOSS_REPORT_LAST_OBSERVATION_OFFSET)),
            (<int32_t *>(p + LOSS_REPORT_SESSION_ID_OFFSET))[0],
            (<int32_t *>(p + LOSS_REPORT_STREAM_ID_OFFSET))[0],
            (<char *>p)[CHANNEL_OFFSET + 4:CHANNEL_OFFSET + 4 + clen].decode("ascii", "replace"),
            (<char *>p)[source_offset + 4:source_offset + 4 + slen].decode("ascii", "replace"),
            offset))
        offset += _align(source_offset + 4 + slen, ENTRY_ALIGNMENT)
    return out


def format_loss_entry(entry, tz=None):
    """One LossStat line (C tool format)."""
    return (f"{entry.observation_count},{entry.total_bytes_lost},"
            f"{format_timestamp(entry.first_observation_timestamp, tz)},"
            f"{format_timestamp(entry.last_observation_timestamp, tz)},"
            f"{entry.session_id},{entry.stream_id},{entry.channel},{entry.source}")


def format_loss_report(entries, tz=None):
    """LossStat's output: header, one line per entry, ``<n> entries read``."""
    lines = [LOSS_STAT_HEADER]
    lines.extend(format_loss_entry(e, tz) for e in entries)
    lines.append(f"{len(entries)} entries read")
    return "\n".join(lines) + "\n"
