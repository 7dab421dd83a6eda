# SPDX-License-Identifier: Apache-2.0
# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Distinct error log writer and reader, and the ErrorStat text format.

Port of Agrona DistinctErrorLog / ErrorLogReader (aeron_distinct_error_log.c), with their
record layout. Errors are rare, so deduplication bookkeeping stays in Python.
"""
import collections
import datetime
import re
import threading
import time
import traceback

from libc.stdint cimport int32_t, int64_t, uint8_t
from libc.string cimport memcpy

from aeron._core.atomic cimport load_acquire_i32, load_acquire_i64, store_release_i32, store_release_i64, \
    get_and_add_i32
from aeron._core.atomic_buffer cimport AtomicBuffer
from aeron.common.errors import InvalidArgumentError

LENGTH_OFFSET = ERROR_LOG_LENGTH_OFFSET
OBSERVATION_COUNT_OFFSET = ERROR_LOG_OBSERVATION_COUNT_OFFSET
LAST_OBSERVATION_TIMESTAMP_OFFSET = ERROR_LOG_LAST_OBSERVATION_TIMESTAMP_OFFSET
FIRST_OBSERVATION_TIMESTAMP_OFFSET = ERROR_LOG_FIRST_OBSERVATION_TIMESTAMP_OFFSET
ENCODED_ERROR_OFFSET = ERROR_LOG_ENCODED_ERROR_OFFSET
HEADER_LENGTH = ERROR_LOG_ENCODED_ERROR_OFFSET
RECORD_ALIGNMENT = ERROR_LOG_RECORD_ALIGNMENT

ErrorLogRecord = collections.namedtuple(
    "ErrorLogRecord", "observation_count first_timestamp last_timestamp text offset")


def _epoch_ms():
    return time.time_ns() // 1_000_000


# The values an error text carries (ports, ids, lengths, addresses, hex handles); not part of what makes it distinct.
_VARIABLE_VALUE = re.compile(r"0[xX][0-9a-fA-F]+|(?<![A-Za-z_])\d+")


def distinct_key(text):
    """What two error texts are compared on: the text with its numbers masked, so the same failure with other ports
    or ids is one more observation of one entry (the first observation's text, values included, is the one kept)
    instead of a new entry each time, which would fill the log. Words with digits in them (IPv6) stay."""
    return _VARIABLE_VALUE.sub("#", text)


def encode_error(error, error_code=None):
    """Text stored for an error: ``(code) description`` as the C driver, or a Python traceback."""
    if isinstance(error, BaseException):
        text = "".join(traceback.format_exception(type(error), error, error.__traceback__)).rstrip("\n")
    else:
        text = str(error)
    if error_code is not None:
        text = f"({int(error_code)}) {text}"
    return text


cdef class DistinctErrorLog:
    """Writer of the distinct error log (one per driver; thread safe for new records).

    ``DistinctErrorLog(buffer, clock_ms=None)``; ``record(error, error_code=None) -> bool``.
    """

    def __init__(self, AtomicBuffer buffer not None, clock_ms=None):
        buffer.check_open()
        if (<size_t>buffer.data) % 8 != 0:
            raise InvalidArgumentError("error log buffer must be 8-byte aligned")
        self.buffer = buffer
        self.clock_ms = clock_ms if clock_ms is not None else _epoch_ms
        self.observations = {}
        self.next_offset = 0
        self.lock = threading.Lock()

    def record(self, error, error_code=None):
        """Record one observation of ``error`` (exception or text, optional error code).

        Returns True if recorded, False when a new distinct error does not fit (it is dropped, as
        Agrona does). A repeat -- the same text up to its numeric values (``distinct_key``) -- bumps the
        record's count (atomic) and last timestamp (release).
        """
        text = encode_error(error, error_code)
        key = (error_code, distinct_key(text))
        cdef int64_t now_ms = self.clock_ms()
        offset = self.observations.get(key)
        cdef bytes encoded
        cdef Py_ssize_t off, length
        cdef uint8_t *p
        if offset is None:
            with self.lock:
                offset = self.observations.get(key)
                if offset is None:
                    encoded = text.encode("utf-8", "replace")
                    length = HEADER_LENGTH + len(encoded)
                    off = self.next_offset
                    self.buffer.check_open()
                    if length > self.buffer.length - off or length > 0x7fffffff:
                        return False
                    p = self.buffer.data + off
                    if len(encoded):
                        memcpy(p + ERROR_LOG_ENCODED_ERROR_OFFSET, <char *>encoded, <size_t>len(encoded))
                    (<int64_t *>(p + ERROR_LOG_FIRST_OBSERVATION_TIMESTAMP_OFFSET))[0] = now_ms
                    (<int32_t *>(p + ERROR_LOG_OBSERVATION_COUNT_OFFSET))[0] = 0
                    self.next_offset = (off + length + RECORD_ALIGNMENT - 1) & ~(RECORD_ALIGNMENT - 1)
                    # The length is the record's commit: readers stop at a zero length.
                    store_release_i32(<int32_t *>(p + ERROR_LOG_LENGTH_OFFSET), <int32_t>length)
                    self.observations[key] = off
                    offset = off
        off = offset
        self.buffer.check_open()
        p = self.buffer.data + off
        get_and_add_i32(<int32_t *>(p + ERROR_LOG_OBSERVATION_COUNT_OFFSET), 1)
        store_release_i64(<int64_t *>(p + ERROR_LOG_LAST_OBSERVATION_TIMESTAMP_OFFSET), now_ms)
        return True

    @property
    def distinct_count(self):
        return len(self.observations)


def error_log_exists(AtomicBuffer buffer not None):
    """True if the log holds at least one record (first length non-zero)."""
    buffer.check_open()
    if buffer.length < 4:
        return False
    return load_acquire_i32(<int32_t *>buffer.data) != 0


def read_error_log(AtomicBuffer buffer not None, int64_t since_timestamp=0):
    """Records whose last observation is >= ``since_timestamp``, in log order.

    Reading stops at the first zero length, at the end of the buffer, or at a length that cannot be
    a record (shorter than the header or running past the end): a damaged tail is not an error.
    """
    buffer.check_open()
    out = []
    cdef Py_ssize_t offset = 0
    cdef Py_ssize_t capacity = buffer.length
    cdef int32_t length
    cdef int64_t last
    cdef uint8_t *p
    if (<size_t>buffer.data) % 8 != 0:
        raise InvalidArgumentError("error log buffer must be 8-byte aligned")
    while offset + HEADER_LENGTH <= capacity:
        p = buffer.data + offset
        length = load_acquire_i32(<int32_t *>(p + ERROR_LOG_LENGTH_OFFSET))
        if length == 0:
            break
        if length < HEADER_LENGTH or length > capacity - offset:
            break
        last = load_acquire_i64(<int64_t *>(p + ERROR_LOG_LAST_OBSERVATION_TIMESTAMP_OFFSET))
        if last >= since_timestamp:
            out.append(ErrorLogRecord(
                load_acquire_i32(<int32_t *>(p + ERROR_LOG_OBSERVATION_COUNT_OFFSET)),
                (<int64_t *>(p + ERROR_LOG_FIRST_OBSERVATION_TIMESTAMP_OFFSET))[0],
                last,
                (<char *>p)[HEADER_LENGTH:length].decode("utf-8", "replace"),
                offset))
        offset += (length + RECORD_ALIGNMENT - 1) & ~(RECORD_ALIGNMENT - 1)
    return out


def format_timestamp(epoch_ms, tz=None):
    """``YYYY-MM-DD HH:MM:SS.mmm+zzzz`` in ``tz`` (default: local time), as aeron_format_date."""
    epoch_ms = int(epoch_ms)        # Python floor semantics (this module compiles with cdivision)
    dt = datetime.datetime.fromtimestamp(epoch_ms // 1000, tz)
    if tz is None:
        dt = dt.astimezone()
    return dt.strftime("%Y-%m-%d %H:%M:%S") + f".{epoch_ms % 1000:03d}" + dt.strftime("%z")


def format_error_log(records, tz=None):
    """ErrorStat's output for ``records`` (from read_error_log), including the final count line."""
    parts = []
    for rec in records:
        parts.append(f"***\n{rec.observation_count} observations from {format_timestamp(rec.first_timestamp, tz)} "
                     f"to {format_timestamp(rec.last_timestamp, tz)} for:\n {rec.text}\n")
    parts.append(f"\n{len(records)} distinct errors observed.\n")
    return "".join(parts)
