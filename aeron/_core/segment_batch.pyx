# SPDX-License-Identifier: Apache-2.0
# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Recorded messages of an archive segment file as columns: the kernel of the Spark source (aeron.spark).

A segment holds raw term frames (RecordingWriter). ``scan_messages`` walks the frames of one region of a mapped
segment in C with the GIL released, reassembles fragmented messages, and either only measures the region
(rows and payload bytes that fit the caps) or also writes every message into caller-owned column buffers laid
out as Arrow arrays want them (fixed-width values, int32 binary offsets, payload bytes, a validity bitmap for
the timestamp). The caller (aeron.spark.scan) allocates the buffers between the two passes and wraps them as
Arrow arrays without a copy, so there is no Python per message.

Region rules: a message belongs to the region holding its first fragment (``offset <= frame < end``); its
later fragments may run up to ``limit`` (the end of valid data). Fragments without their BEGIN fragment (a
recording that joined mid-message) are skipped; a message cut by the end of data is not returned (the next
scan resumes at its first fragment). A frame whose header contradicts its place (length, version, type, term
offset, term id) stops the scan with SCAN_CORRUPT and its offset.
"""
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t
from libc.string cimport memcpy

from aeron._core cimport frame_descriptor as fd
from aeron.common.errors import InvalidArgumentError

# status of a scan: why it stopped
SCAN_END = 0            # reached ``end``
SCAN_END_OF_DATA = 1    # a zero frame length, or a frame running past ``limit``: no more complete data yet
SCAN_FULL = 2           # the row or byte cap was reached before ``end``
SCAN_CORRUPT = 3        # an invalid frame header at ``error_offset``

TIMESTAMP_NONE = 0      # no timestamp column values (all null)
TIMESTAMP_RESERVED = 1  # the reserved value field holds the timestamp (…-ts-offset=reserved)
TIMESTAMP_PAYLOAD = 2   # an int64 at ``timestamp_offset`` in the message payload

cdef inline uint16_t frame_type_at(const uint8_t *seg, int64_t off) noexcept nogil:
    return (<const uint16_t *>(seg + off + fd.TYPE_FIELD_OFFSET))[0]


cdef inline bint frame_valid(Scan *s, int64_t off, int32_t length) noexcept nogil:
    cdef const uint8_t *f = s.seg + off
    cdef int32_t in_term = <int32_t>(off & (s.term_length - 1))
    cdef uint32_t expected_term_id
    cdef uint16_t ftype = frame_type_at(s.seg, off)
    if length < fd.HEADER_LENGTH or f[fd.VERSION_FIELD_OFFSET] != fd.CURRENT_VERSION:
        return False
    if ftype != fd.HDR_TYPE_DATA and ftype != fd.HDR_TYPE_PAD:
        return False
    if <int64_t>in_term + fd.align_i32(length, fd.FRAME_ALIGNMENT) > s.term_length:
        return False
    if fd.frame_i32(f, fd.TERM_OFFSET_FIELD_OFFSET) != in_term:
        return False
    expected_term_id = <uint32_t>((s.segment_base + off) >> s.shift) + <uint32_t>s.initial_term_id
    return <uint32_t>fd.frame_i32(f, fd.TERM_ID_FIELD_OFFSET) == expected_term_id


cdef inline int32_t next_frame(Scan *s, int64_t off, int32_t *length) noexcept nogil:
    # 0: a complete valid frame at off (length set); 1: end of data; 2: corrupt
    cdef int32_t flen
    if off + fd.HEADER_LENGTH > s.limit:
        return 1
    flen = fd.frame_i32(s.seg + off, fd.FRAME_LENGTH_FIELD_OFFSET)
    if flen == 0:
        return 1
    if not frame_valid(s, off, flen):
        return 2
    if off + flen > s.limit:
        return 1
    length[0] = flen
    return 0


cdef void emit(Scan *s, Columns *c, int64_t first, int64_t last, int32_t last_length,
               int32_t message_length, bint fill) noexcept nogil:
    # one message from the fragment at first to the one at last (inclusive)
    cdef const uint8_t *f = s.seg + first
    cdef int64_t row = s.rows
    cdef int64_t off, out
    cdef int32_t flen, n
    cdef int64_t ts
    if fill:
        c.position[row] = s.segment_base + first
        c.stream_id[row] = fd.frame_i32(f, fd.STREAM_ID_FIELD_OFFSET)
        c.session_id[row] = fd.frame_i32(f, fd.SESSION_ID_FIELD_OFFSET)
        c.term_id[row] = fd.frame_i32(f, fd.TERM_ID_FIELD_OFFSET)
        c.term_offset[row] = fd.frame_i32(f, fd.TERM_OFFSET_FIELD_OFFSET)
        c.flags[row] = <int16_t>(f[fd.FLAGS_FIELD_OFFSET] | s.seg[last + fd.FLAGS_FIELD_OFFSET])
        c.reserved_value[row] = fd.frame_i64(f, fd.RESERVED_VALUE_FIELD_OFFSET)
        out = s.nbytes
        off = first
        while True:
            flen = fd.frame_i32(s.seg + off, fd.FRAME_LENGTH_FIELD_OFFSET)
            n = flen - fd.HEADER_LENGTH
            memcpy(c.data + out, s.seg + off + fd.HEADER_LENGTH, n)
            out += n
            if off == last:
                break
            off += fd.align_i32(flen, fd.FRAME_ALIGNMENT)
        c.offsets[row + 1] = <int32_t>out
        ts = 0
        if s.ts_mode == TS_RESERVED:
            c.timestamp_valid[row >> 3] |= <uint8_t>(1 << (row & 7))
            ts = fd.frame_i64(f, fd.RESERVED_VALUE_FIELD_OFFSET)
        elif s.ts_mode == TS_PAYLOAD and s.ts_offset >= 0 and s.ts_offset + 8 <= message_length:
            c.timestamp_valid[row >> 3] |= <uint8_t>(1 << (row & 7))
            memcpy(&ts, c.data + s.nbytes + s.ts_offset, 8)
        c.timestamp[row] = ts
    s.rows += 1
    s.nbytes += message_length


cdef void walk(Scan *s, Columns *c, bint fill) noexcept nogil:
    # the walk of scan_messages (declared in segment_batch.pxd for other kernels)
    cdef int64_t off = s.offset
    cdef int64_t first, cur
    cdef int32_t flen, clen, message_length
    cdef int32_t r
    cdef uint8_t flags
    cdef bint broken
    s.rows = 0
    s.nbytes = 0
    s.status = ST_END
    s.error_offset = -1
    if fill:
        c.offsets[0] = 0
    while off < s.end:
        r = next_frame(s, off, &flen)
        if r != 0:
            s.status = ST_END_OF_DATA if r == 1 else ST_CORRUPT
            if r == 2:
                s.error_offset = off
            break
        if frame_type_at(s.seg, off) == fd.HDR_TYPE_PAD:
            off += fd.align_i32(flen, fd.FRAME_ALIGNMENT)
            continue
        flags = s.seg[off + fd.FLAGS_FIELD_OFFSET]
        if not (flags & fd.BEGIN_FRAG_FLAG):
            off += fd.align_i32(flen, fd.FRAME_ALIGNMENT)     # the rest of a message begun before the recording
            continue
        first = off
        cur = off
        clen = flen
        message_length = flen - fd.HEADER_LENGTH
        broken = False
        while not (s.seg[cur + fd.FLAGS_FIELD_OFFSET] & fd.END_FRAG_FLAG):
            cur += fd.align_i32(clen, fd.FRAME_ALIGNMENT)
            r = next_frame(s, cur, &clen)
            if r != 0:
                break
            if (frame_type_at(s.seg, cur) != fd.HDR_TYPE_DATA
                    or s.seg[cur + fd.FLAGS_FIELD_OFFSET] & fd.BEGIN_FRAG_FLAG):
                broken = True                                  # an unfinished message: dropped as an assembler does
                break
            message_length += clen - fd.HEADER_LENGTH
        if r != 0:
            if r == 1:
                s.status = ST_END_OF_DATA
            else:
                s.status = ST_CORRUPT
                s.error_offset = cur
            break
        if broken:
            off = cur
            continue
        if first < s.skip_before:
            off = cur + fd.align_i32(clen, fd.FRAME_ALIGNMENT)
            continue
        if (s.rows >= s.max_rows or (s.rows > 0 and s.nbytes + message_length > s.max_bytes)
                or (s.data_capacity >= 0 and s.nbytes + message_length > s.data_capacity)):
            s.status = ST_FULL
            break
        emit(s, c, first, cur, clen, message_length, fill)
        off = cur + fd.align_i32(clen, fd.FRAME_ALIGNMENT)
    s.next_offset = off


cdef int32_t log2_of(int32_t value):
    cdef int32_t shift = 0
    if value < fd.FRAME_ALIGNMENT or value & (value - 1):
        raise InvalidArgumentError(f"term length must be a power of two >= 32, got {value}")
    while (1 << shift) < value:
        shift += 1
    return shift


def scan_messages(const uint8_t[::1] segment, int64_t offset, int64_t end, int64_t limit, int64_t segment_base,
                  int32_t term_length, int32_t initial_term_id, int timestamp_mode=TIMESTAMP_NONE,
                  int32_t timestamp_offset=0, int64_t max_rows=1 << 62, int64_t max_bytes=1 << 62,
                  columns=None, int64_t skip_before=0):
    """Walk the messages whose first fragment lies in ``segment[offset:end]`` (fragments may run to ``limit``).

    ``segment`` is the mapped segment file (or its first ``limit`` bytes); ``segment_base`` its base position.
    Messages whose first fragment lies before ``skip_before`` are walked over but not taken (a walk must start
    on a frame: the start of a term or of the recording). At most ``max_rows`` messages and ``max_bytes`` payload bytes (at least one message) are taken.
    ``columns`` is None to only measure, or a sequence of 11 writable buffers, each large enough for the rows and
    bytes a measuring call with the same arguments reported: position (int64), stream_id, session_id, term_id,
    term_offset (int32), flags (int16), reserved_value, timestamp (int64), timestamp validity bitmap (zeroed),
    binary offsets (int32, rows + 1) and payload bytes. Returns ``(rows, payload_bytes, next_offset, status,
    error_offset)``: ``next_offset`` is where the next scan resumes (the first frame not consumed).
    """
    cdef Scan s
    cdef Columns c
    cdef int64_t[::1] position, reserved_value, timestamp
    cdef int32_t[::1] stream_id, session_id, term_id, term_offset, offsets
    cdef int16_t[::1] flags
    cdef uint8_t[::1] timestamp_valid, data
    cdef bint fill = columns is not None
    if offset < 0 or offset > end or end > limit or limit > segment.shape[0]:
        raise InvalidArgumentError(f"scan region [{offset}, {end}) limit {limit} outside a segment view of "
                                   f"{segment.shape[0]} bytes")
    if offset & (fd.FRAME_ALIGNMENT - 1):
        raise InvalidArgumentError(f"scan offset {offset} is not 32-byte aligned")
    if max_rows < 1 or max_bytes < 1:
        raise InvalidArgumentError("max_rows and max_bytes must be positive")
    s.shift = log2_of(term_length)
    s.seg = &segment[0] if segment.shape[0] > 0 else NULL
    s.offset = offset
    s.skip_before = skip_before
    s.end = end
    s.limit = limit
    s.segment_base = segment_base
    s.term_length = term_length
    s.initial_term_id = initial_term_id
    s.ts_mode = timestamp_mode
    s.ts_offset = timestamp_offset
    s.max_rows = max_rows
    s.max_bytes = max_bytes
    if fill:
        (position, stream_id, session_id, term_id, term_offset, flags, reserved_value, timestamp,
         timestamp_valid, offsets, data) = columns
        if offsets.shape[0] < 1:
            raise InvalidArgumentError("the offsets buffer needs at least one entry")
        # the caps become the buffers' room, so a fill never writes past them
        s.max_rows = min(s.max_rows, position.shape[0], stream_id.shape[0], session_id.shape[0], term_id.shape[0],
                         term_offset.shape[0], flags.shape[0], reserved_value.shape[0], timestamp.shape[0],
                         timestamp_valid.shape[0] * 8, offsets.shape[0] - 1)
        if s.max_rows < 1:
            raise InvalidArgumentError("column buffers have no room for a row")
        c.position = &position[0]
        c.stream_id = &stream_id[0]
        c.session_id = &session_id[0]
        c.term_id = &term_id[0]
        c.term_offset = &term_offset[0]
        c.flags = &flags[0]
        c.reserved_value = &reserved_value[0]
        c.timestamp = &timestamp[0]
        c.timestamp_valid = &timestamp_valid[0]
        c.offsets = &offsets[0]
        c.data = &data[0] if data.shape[0] > 0 else NULL
        s.data_capacity = data.shape[0]
    else:
        s.data_capacity = -1
    if s.seg == NULL:
        return 0, 0, offset, SCAN_END_OF_DATA if offset < end else SCAN_END, -1
    with nogil:
        walk(&s, &c, fill)
    return s.rows, s.nbytes, s.next_offset, s.status, s.error_offset
