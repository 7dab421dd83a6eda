# SPDX-License-Identifier: Apache-2.0
# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Archive data path, per block in C and without the GIL: term blocks into segment files (recording) and segment
frames into a replay publication (replay): RecordingWriter.onBlock and ReplaySession.replay.

``SegmentWriter.record`` is a recorder duty cycle for one image: it takes runs of whole frames from the image's terms
with the term reader's block scan and writes each with one ``pwrite`` straight from the term (a PAD frame as its
32-byte header only: its body stays a hole), storing the image's subscriber position after each write, until a byte
budget, the end of the segment or the end of what is there. With a record checksum each DATA frame's session id field
carries the CRC-32 (or CRC-32C) of its aligned payload; the term itself is never modified: the run is copied to a
scratch block first.

``ReplayBlockReader.replay`` is a replayer duty cycle for one replay: it reads (``pread``) or copies (from the mapped
segment) each block straight into the replay publication's term, finds the run of whole frames there, gives them the
publication's session and stream id, and publishes the run's first frame last (as ``offer_block`` does); a recorded
PAD frame becomes an appended padding. Again until a byte budget, back pressure, or the end of what is recorded.

The GIL is held only to check arguments and to raise: a whole duty cycle's copies, scans and file writes run without
it, so that the recorder, the replayer and the other threads of the process do not take turns per block.
"""
cimport cython
from cpython.buffer cimport PyBUF_SIMPLE, PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from libc.errno cimport errno, EINTR, EIO
from libc.stdint cimport int32_t, int64_t, uint8_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

from aeron._core.atomic cimport load_acquire_i32, load_acquire_i64, store_release_i64
from aeron._core.atomic_buffer cimport AtomicBuffer
from aeron._core cimport crc
from aeron._core cimport frame_descriptor as fd
from aeron._core cimport logbuffer_descriptor as ld
from aeron._core.term_appender cimport (APPEND_CLOSED,
                                        ExclusiveTermAppender, appender_span_t, appender_state_t,
                                        back_pressure_status, exclusive_reserve, exclusive_rotate_term,
                                        frame_padding_write)
from aeron._core.term_reader cimport TermReader, frame_length_is_corrupt, term_block_scan
from aeron.common.errors import CorruptFileError, InvalidArgumentError

import os

cdef extern from "unistd.h" nogil:
    ssize_t pwrite(int fd, const void *buf, size_t count, long offset)
    ssize_t pread(int fd, void *buf, size_t count, long offset)

cdef extern from "sys/mman.h" nogil:
    int madvise(void *addr, size_t length, int advice)

cdef extern from "sys/vfs.h" nogil:
    ctypedef struct statfs_t "struct statfs":
        long f_type
    int fstatfs(int fd, statfs_t *buf)
    int fsync(int fd)
    int fdatasync(int fd)

cdef enum:
    MADV_POPULATE_WRITE_ = 23           # Linux 5.14: fault the range in, one call (EINVAL before: then faults do)
    PAGE_SIZE_ = 4096
    TMPFS_MAGIC_ = 0x01021994


cdef inline void populate(const uint8_t *start, int64_t length, int advice) noexcept nogil:
    # Map the pages of [start, start + length) in one madvise instead of one page fault per page (a replay's
    # publication log is new: each of its pages is touched first by the replay's copy). Advisory: errors ignored.
    cdef size_t begin = (<size_t>start) & ~(<size_t>PAGE_SIZE_ - 1)
    cdef size_t end = <size_t>start + <size_t>length
    if length > 0:
        madvise(<void *>begin, end - begin, advice)


def prefers_pread(int file):
    """Whether a replay should ``pread`` the segment open as ``file`` rather than copy from its mapping: true except
    on tmpfs (/dev/shm), whose read path goes page by page and costs more than a copy from the mapping (where a
    fault maps several pages) does, measured in docs/performance.md "Archive"."""
    cdef statfs_t info
    cdef int rc
    with nogil:
        rc = fstatfs(file, &info)
    if rc != 0:
        raise OSError(errno, os.strerror(errno))
    return info.f_type != TMPFS_MAGIC_


CHECKSUM_NONE = crc.KIND_NONE
CHECKSUM_CRC32 = crc.KIND_CRC32
CHECKSUM_CRC32C = crc.KIND_CRC32C


cdef int _check_kind(int kind) except -1:
    if not crc.is_checksum_kind(kind):
        raise InvalidArgumentError(f"unknown checksum {kind}")
    return 0


def frame_checksum(buffer, Py_ssize_t offset, Py_ssize_t frame_length, int kind=CHECKSUM_CRC32):
    """The record checksum of the frame at ``buffer[offset:]``: the CRC of bytes [32, align(frame_length, 32)), as a
    signed int32 (the value stored in the session id field)."""
    _check_kind(kind)
    cdef Py_buffer view
    cdef Py_ssize_t end = offset + fd.align_i64(frame_length, fd.FRAME_ALIGNMENT)
    PyObject_GetBuffer(buffer, &view, PyBUF_SIMPLE)
    try:
        if offset < 0 or frame_length < fd.HEADER_LENGTH or end > view.len:
            raise InvalidArgumentError(f"frame of {frame_length} bytes at {offset} outside a {view.len}-byte buffer")
        return crc.record_checksum(kind, <const uint8_t *>view.buf + offset, end - offset)
    finally:
        PyBuffer_Release(&view)


cdef int write_fully(int file, const uint8_t *data, Py_ssize_t length, int64_t file_offset) noexcept nogil:
    """pwrite all of ``data`` at ``file_offset``: 0, or the errno of the failed write."""
    cdef ssize_t n
    while length > 0:
        n = pwrite(file, data, <size_t>length, file_offset)
        if n < 0:
            if errno == EINTR:
                continue
            return errno
        if n == 0:
            return EIO                  # a regular file never takes nothing; do not spin on it
        data += n
        length -= n
        file_offset += n
    return 0


cdef int sync_file(int file, int sync_level) noexcept nogil:
    """fdatasync (level 1) or fsync (level 2): 0, or the errno."""
    cdef int rc = fsync(file) if sync_level >= 2 else fdatasync(file)
    return errno if rc != 0 else 0


@cython.final
cdef class SegmentWriter:
    """Writes term blocks into the open segment file ``fd`` at ``segment_offset`` (advanced by each block).

    ``sync_level`` 0 leaves flushing to the OS, 1 forces the data (fdatasync) and 2 data and metadata (fsync)
    after every block (aeron.archive.file.sync.level). ``checksum`` is a CHECKSUM_* kind; a checksumming writer
    copies each block to a scratch block of ``max_block_length`` bytes first.
    """

    def __cinit__(self, int sync_level=0, int checksum=CHECKSUM_NONE, Py_ssize_t max_block_length=0):
        if checksum != CHECKSUM_NONE:
            _check_kind(checksum)
        if sync_level not in (0, 1, 2):
            raise InvalidArgumentError(f"file sync level must be 0, 1 or 2, got {sync_level}")
        self.fd = -1
        self.segment_offset = 0
        self.sync_level = sync_level
        self.checksum = checksum
        self.scratch = NULL
        self.scratch_length = 0
        if checksum != CHECKSUM_NONE:
            if max_block_length <= 0:
                raise InvalidArgumentError("a checksumming writer needs max_block_length > 0")
            self.scratch = <uint8_t *>malloc(max_block_length)
            if self.scratch == NULL:
                raise MemoryError()
            self.scratch_length = max_block_length

    def __dealloc__(self):
        if self.scratch != NULL:
            free(self.scratch)
            self.scratch = NULL

    cdef int write_block(self, const uint8_t *src, int32_t length) noexcept nogil:
        # One run of whole frames (or one PAD) at segment_offset, then the sync its level asks for: 0 or an errno.
        # The caller keeps a checksummed run within scratch_length.
        cdef int rc
        cdef int32_t pos, frame_length, aligned
        cdef uint8_t *dst
        if fd.is_padding_frame(src, 0):
            # the header alone: replay re-creates the body with an appended padding
            rc = write_fully(self.fd, src, fd.HEADER_LENGTH, self.segment_offset)
        elif self.checksum == crc.KIND_NONE:
            rc = write_fully(self.fd, src, length, self.segment_offset)
        else:
            dst = self.scratch
            memcpy(dst, src, <size_t>length)
            pos = 0
            while pos < length:
                frame_length = fd.frame_i32(dst + pos, fd.FRAME_LENGTH_FIELD_OFFSET)
                if frame_length < fd.HEADER_LENGTH:
                    break
                aligned = fd.align_i32(frame_length, fd.FRAME_ALIGNMENT)
                if aligned > length - pos:
                    break
                if not fd.is_padding_frame(dst, pos):
                    (<int32_t *>(dst + pos + fd.SESSION_ID_FIELD_OFFSET))[0] = crc.record_checksum(
                        self.checksum, dst + pos, aligned)
                pos += aligned
            rc = write_fully(self.fd, dst, length, self.segment_offset)
        if rc == 0 and self.sync_level > 0:
            rc = sync_file(self.fd, self.sync_level)
        if rc == 0:
            self.segment_offset += length
        return rc

    def record(self, TermReader image not None, int32_t block_length_limit, int64_t segment_length,
               int64_t max_length):
        """Write what ``image`` has from its position into the segment, run by run without the GIL: each run of
        whole frames at most ``block_length_limit`` bytes and within its term (TermBlockScanner rules: a PAD alone),
        the image's position stored after each run's write. Stops after ``max_length`` bytes (a run already begun is
        finished), when ``segment_offset`` reaches ``segment_length`` (the caller rolls the segment), or when no
        whole frame is there. Returns the bytes consumed, 0 when nothing was there.

        A run never passes the segment's end (in a recording a segment holds whole terms, so it never has to).
        Raises OSError when a write or sync fails (the position stays before that run) and CorruptFileError (log
        path and offset) for a committed frame that cannot be in a term, as ``block_poll`` does.
        """
        if self.fd < 0:
            raise InvalidArgumentError("no segment file open")
        if block_length_limit < fd.FRAME_ALIGNMENT:
            raise InvalidArgumentError(f"block length limit {block_length_limit} below a frame")
        if self.checksum != CHECKSUM_NONE and block_length_limit > self.scratch_length:
            raise InvalidArgumentError(
                f"block length limit {block_length_limit} exceeds the writer's {self.scratch_length}")
        if image.retired:
            return 0
        image.check_open()
        cdef int64_t position = load_acquire_i64(image.position_ptr)
        if position < 0 or position & (fd.FRAME_ALIGNMENT - 1):
            raise CorruptFileError(f"subscriber position {position} is negative or not 32-aligned")
        cdef int32_t capacity = image._term_length
        cdef int32_t mask = image.term_length_mask
        cdef int32_t bits = image._position_bits_to_shift
        cdef int64_t *position_ptr = image.position_ptr
        cdef int64_t total = 0
        cdef int32_t index = 0, offset = 0, limit_offset, resulting, length, frame_length
        cdef const uint8_t *term
        cdef int rc = 0
        cdef bint corrupt = False
        with nogil:
            # image.retired is re-read per run: a retired image stays mapped for the client's linger
            while total < max_length and self.segment_offset < segment_length and not image.retired:
                index = ld.index_by_position(position, bits)
                offset = <int32_t>(position & mask)
                limit_offset = capacity if block_length_limit > capacity - offset else offset + block_length_limit
                if limit_offset - offset > segment_length - self.segment_offset:
                    limit_offset = offset + <int32_t>(segment_length - self.segment_offset)
                term = image.terms[index]
                resulting = term_block_scan(term, offset, limit_offset, capacity)
                length = resulting - offset
                if length == 0:
                    frame_length = fd.frame_length_volatile(term, offset)
                    corrupt = frame_length > 0 and frame_length_is_corrupt(frame_length, offset, capacity)
                    break
                rc = self.write_block(term + offset, length)
                if rc != 0:
                    break
                position += length
                store_release_i64(position_ptr, position)
                total += length
        if rc != 0:
            raise OSError(rc, os.strerror(rc))
        if corrupt and total == 0:
            image.corrupt(index, offset, position)
        return total

    def force(self):
        """fdatasync (level 1) or fsync (level 2) the open segment."""
        cdef int rc
        cdef int file = self.fd
        if file < 0:
            return
        with nogil:
            rc = sync_file(file, self.sync_level)
        if rc != 0:
            raise OSError(rc, os.strerror(rc))


cdef enum:
    # why a replay run stopped short, besides the publication's status
    REPLAY_CORRUPT_LENGTH = 1           # a committed frame length that cannot be in a term
    REPLAY_FRAME_TOO_LONG = 2           # a whole frame longer than the replay block
    REPLAY_BAD_CHECKSUM = 3             # a DATA frame whose stored checksum does not match
    REPLAY_NOT_DATA = 4                 # a frame that is neither DATA nor PAD
    REPLAY_WRONG_PLACE = 5              # a run whose term id / term offset is not where the publication is
    REPLAY_TERM_PAST_SEGMENT = 6        # the term of the offset is not mapped whole
    REPLAY_READ_FAILED = 7              # pread of the segment file failed (errno kept)
    REPLAY_FILE_SHORT = 8               # the segment file ends inside a recorded frame


cdef inline bint at_term_of(appender_state_t *s, const uint8_t *frame, int32_t term_offset) noexcept nogil:
    # Rotate a full term first (no rotation past the max position); then the publication must be at the term
    # offset the frame was read from (so that a run that fits its term in the segment fits the publication's), and
    # the frame must carry that term offset and the publication's term id: a replay publication starts where the
    # replay does.
    if s.term_offset >= s.term_length and s.term_begin_position + s.term_length < s.max_possible_position:
        exclusive_rotate_term(s)
    return (s.term_offset == term_offset
            and fd.frame_i32(frame, fd.TERM_OFFSET_FIELD_OFFSET) == term_offset
            and fd.frame_i32(frame, fd.TERM_ID_FIELD_OFFSET) == s.term_id)


cdef int64_t publish_run(appender_state_t *s, uint8_t *dst, const uint8_t *first_header,
                         int32_t length) noexcept nogil:
    # offer_block's commit of a run already in the term at dst with the publication's ids (all but its first
    # header): the tail first, then the first header (from first_header, with the publication's ids) words 3, 2, 1,
    # and its length word last with a release store, which publishes the run (subscribers cannot pass the first
    # frame before it).
    cdef int32_t resulting_offset = s.term_offset + length
    cdef uint8_t header[32]                 # fd.HEADER_LENGTH
    cdef int64_t word
    store_release_i64(ld.tail_counter_ptr(s.meta, s.active_partition_index), ld.pack_tail(s.term_id, resulting_offset))
    memcpy(header, first_header, fd.HEADER_LENGTH)
    (<int32_t *>(header + fd.SESSION_ID_FIELD_OFFSET))[0] = s.session_id
    (<int32_t *>(header + fd.STREAM_ID_FIELD_OFFSET))[0] = s.stream_id
    memcpy(dst + 24, header + 24, 8)
    memcpy(dst + 16, header + 16, 8)
    memcpy(dst + 8, header + 8, 8)
    memcpy(&word, header, 8)
    store_release_i64(<int64_t *>dst, word)
    s.term_offset = resulting_offset
    return s.term_begin_position + resulting_offset


cdef inline int64_t limit_status(appender_state_t *s, int32_t length) noexcept nogil:
    # 1 when the publication may take a run of ``length`` bytes now, else its (negative) back pressure status
    cdef int64_t position = s.term_begin_position + s.term_offset
    if position >= load_acquire_i64(s.position_limit):
        return back_pressure_status(s, position, length)
    return 1


cdef ssize_t read_fully(int file, uint8_t *dst, Py_ssize_t length, int64_t file_offset) noexcept nogil:
    """pread up to ``length`` bytes at ``file_offset`` (fewer only at the end of the file): the bytes read, or
    -errno."""
    cdef ssize_t n
    cdef Py_ssize_t done = 0
    while done < length:
        n = pread(file, dst + done, <size_t>(length - done), file_offset + done)
        if n < 0:
            if errno == EINTR:
                continue
            return -errno
        if n == 0:
            break
        done += n
    return done


cdef int32_t run_in_place(const uint8_t *first_header, uint8_t *dst, int32_t got, int32_t term_offset,
                          int32_t term_length, int verify_checksum, const appender_state_t *s, int *error,
                          int32_t *stored) noexcept nogil:
    # One pass over what was copied to dst (all of it but the first header, which is at first_header; the first
    # frame is known to be there whole): the run of whole DATA frames from the start, up to a PAD or a frame not
    # there whole, each frame's ids after the first rewritten to the publication's as it goes. Where a frame is
    # not DATA or its stored checksum (when asked) does not match, the run ends before it and *error says why
    # (*stored holds the mismatching checksum).
    cdef int32_t p = 0, frame_length, aligned
    cdef const uint8_t *header = first_header
    while True:
        if p > 0:
            if got - p < fd.HEADER_LENGTH:
                break
            header = dst + p
            frame_length = fd.frame_i32(header, fd.FRAME_LENGTH_FIELD_OFFSET)
            if frame_length <= 0 or frame_length_is_corrupt(frame_length, term_offset + p, term_length) \
                    or fd.align_i32(frame_length, fd.FRAME_ALIGNMENT) > got - p or fd.is_padding_frame(header, 0):
                break
        else:
            frame_length = fd.frame_i32(header, fd.FRAME_LENGTH_FIELD_OFFSET)
        aligned = fd.align_i32(frame_length, fd.FRAME_ALIGNMENT)
        if fd.frame_type(header, 0) != fd.HDR_TYPE_DATA:
            error[0] = REPLAY_NOT_DATA
            break
        if verify_checksum != crc.KIND_NONE:
            stored[0] = fd.frame_i32(header, fd.SESSION_ID_FIELD_OFFSET)
            if stored[0] != crc.record_checksum(verify_checksum, dst + p, aligned):
                error[0] = REPLAY_BAD_CHECKSUM
                break
        if p > 0:
            (<int32_t *>(dst + p + fd.SESSION_ID_FIELD_OFFSET))[0] = s.session_id
            (<int32_t *>(dst + p + fd.STREAM_ID_FIELD_OFFSET))[0] = s.stream_id
        p += aligned
        if p >= got:
            break
    return p


cdef int64_t append_recorded_padding(appender_state_t *s, int32_t frame_length) noexcept nogil:
    # append_padding's kernel: a PAD frame of the recorded length (its body is never read)
    cdef appender_span_t span
    cdef int64_t result = exclusive_reserve(s, frame_length - fd.HEADER_LENGTH,
                                            fd.align_i32(frame_length, fd.FRAME_ALIGNMENT), &span)
    if result > 0:
        frame_padding_write(span.term, span.term_offset, frame_length, span.term_id, s.session_id, s.stream_id)
    return result


@cython.final
cdef class ReplayBlockReader:
    """Replays frames of a mapped segment into an exclusive publication (``replay``, once per duty cycle)."""

    def __cinit__(self, Py_ssize_t max_block_length):
        if max_block_length < fd.HEADER_LENGTH:
            raise InvalidArgumentError(f"max block length {max_block_length} below a frame header")
        self.max_block_length = max_block_length
        self.populated = 0

    def replay(self, AtomicBuffer segment not None, int64_t file_offset, int32_t term_length, int64_t available,
               ExclusiveTermAppender publication not None, int verify_checksum=CHECKSUM_NONE, int file=-1):
        """Offer the recorded frames at ``segment[file_offset:]``, at most ``available`` bytes (the caller keeps
        that within the segment and the recorded limit), run by run without the GIL: each run of whole frames at
        most ``max_block_length`` bytes and within its term is copied into the publication's term with its session
        and stream id; a PAD frame is appended as a padding. Returns the bytes consumed (> 0), 0 when no whole frame
        is there yet, or the publication's negative status when nothing was consumed (back pressure: try again
        later).

        Each run's bytes after its first header (read from the mapping) are put straight into the publication's
        term, read with ``pread`` from ``file`` (a descriptor open for reading on the segment's file, the same bytes
        as ``segment``) or, without it, copied from the mapping; the run is then found in the term in one pass that
        checks each frame and rewrites its ids. A read from the page cache costs what ``dd``'s does where a copy
        from the mapping also takes the faults of mapping the pages (except on tmpfs: see ``prefers_pread``). Bytes
        put past the run's end stay unpublished: the frame length word after the run is zeroed before the run is
        published, so a subscriber stops there until a later run overwrites them. The first write into each
        partition of the publication's log maps the rest of that partition in one call (a replay log is new).

        ``verify_checksum`` (a CHECKSUM_* kind) checks each DATA frame's stored checksum first. Raises
        CorruptFileError (segment path and offset) for a frame that cannot be a recorded frame, whose checksum does
        not match, or that is not where the publication is (term id and term offset), or where the file ends inside
        a recorded frame, and OSError when the read fails; the frames before it are replayed.
        """
        if verify_checksum != CHECKSUM_NONE:
            _check_kind(verify_checksum)
        if term_length < fd.FRAME_ALIGNMENT or term_length & (term_length - 1):
            raise InvalidArgumentError(f"term length {term_length} is not a power of two")
        if publication.state.term_length != term_length:
            raise InvalidArgumentError(f"replay publication's term length {publication.state.term_length} is not the "
                                       f"recording's {term_length}")
        if file_offset < 0 or file_offset & (fd.FRAME_ALIGNMENT - 1) or available < 0 \
                or file_offset + available > segment.length:
            raise InvalidArgumentError(f"range [{file_offset}, +{available}) outside a {segment.length}-byte segment "
                                       f"or not 32-aligned")
        if publication.closed:
            return APPEND_CLOSED
        cdef appender_state_t *s = &publication.state
        cdef const uint8_t *data = segment.data
        cdef int64_t segment_length = segment.length
        cdef int64_t max_block = self.max_block_length
        cdef int64_t consumed = 0, at = file_offset, budget, term_start, result = 0
        cdef int32_t term_offset = 0, length, frame_length = 0, stored = 0, got
        cdef const uint8_t *term
        cdef const uint8_t *src
        cdef uint8_t *dst
        cdef ssize_t n
        cdef int error = 0, read_errno = 0
        cdef Py_buffer pin
        # Another thread may close the publication and then its log while we copy without the GIL: our own export
        # keeps the mapping alive until the last store (log.close() is refused meanwhile), as offer() does.
        PyObject_GetBuffer(publication.log.buffer, &pin, PyBUF_SIMPLE)
        try:
            with nogil:
                while consumed < available:
                    at = file_offset + consumed
                    term_offset = <int32_t>(at & (term_length - 1))
                    term_start = at - term_offset
                    if term_start + term_length > segment_length:
                        error = REPLAY_TERM_PAST_SEGMENT
                        break
                    term = data + term_start
                    budget = available - consumed
                    if budget > max_block:
                        budget = max_block
                    if budget > term_length - term_offset:
                        budget = term_length - term_offset
                    src = term + term_offset
                    frame_length = load_acquire_i32(<const int32_t *>src)
                    if frame_length <= 0 or frame_length_is_corrupt(frame_length, term_offset, term_length) \
                            or (fd.align_i32(frame_length, fd.FRAME_ALIGNMENT) > budget
                                and not fd.is_padding_frame(src, 0)):        # a PAD goes alone, at any length
                        # no whole frame here yet, or one that cannot be replayed
                        if frame_length > 0 and frame_length_is_corrupt(frame_length, term_offset, term_length):
                            error = REPLAY_CORRUPT_LENGTH
                        elif frame_length > 0 and fd.align_i32(frame_length, fd.FRAME_ALIGNMENT) > max_block:
                            error = REPLAY_FRAME_TOO_LONG
                        break
                    if not at_term_of(s, src, term_offset):
                        error = REPLAY_WRONG_PLACE
                        break
                    if not self.populated & (1 << s.active_partition_index):
                        # first write into this partition of the (new) replay log: map the rest of it at once
                        self.populated |= 1 << s.active_partition_index
                        populate(s.terms[s.active_partition_index] + s.term_offset, term_length - s.term_offset,
                                 MADV_POPULATE_WRITE_)
                    if fd.is_padding_frame(src, 0):
                        result = append_recorded_padding(s, frame_length)
                        length = fd.align_i32(frame_length, fd.FRAME_ALIGNMENT)
                    else:
                        result = limit_status(s, <int32_t>budget)
                        if result <= 0:
                            break
                        # the budget after the first header goes straight into the term, where the run is found
                        dst = s.terms[s.active_partition_index] + s.term_offset
                        if file >= 0:
                            n = read_fully(file, dst + fd.HEADER_LENGTH, budget - fd.HEADER_LENGTH,
                                           at + fd.HEADER_LENGTH)
                            if n < 0:
                                error = REPLAY_READ_FAILED
                                read_errno = <int>-n
                                break
                            got = fd.HEADER_LENGTH + <int32_t>n
                            if fd.align_i32(frame_length, fd.FRAME_ALIGNMENT) > got:
                                error = REPLAY_FILE_SHORT
                                break
                        else:
                            memcpy(dst + fd.HEADER_LENGTH, src + fd.HEADER_LENGTH, <size_t>(budget - fd.HEADER_LENGTH))
                            got = <int32_t>budget
                        length = run_in_place(src, dst, got, term_offset, term_length, verify_checksum, s, &error,
                                              &stored)
                        if length < got:
                            # what was copied after the run stays invisible: a zero length stops subscribers there
                            (<int32_t *>(dst + length))[0] = 0
                        if length > 0:
                            result = publish_run(s, dst, src, length)
                        if error != 0:
                            # the good frames before the bad one are replayed, then it is reported
                            at += length
                            consumed += length
                            break
                    if result <= 0:
                        break
                    consumed += length
        finally:
            PyBuffer_Release(&pin)
        if consumed > 0 and publication._wake is not None:
            publication._wake.notify()              # a sleeping subscriber's conductor has work
        if error != 0:
            _raise_replay_error(error, self.max_block_length, segment, at, term_offset, frame_length, stored, s,
                                read_errno)
        if consumed > 0:
            return consumed
        return result if result < 0 else 0


cdef int _raise_replay_error(int error, Py_ssize_t max_block_length, AtomicBuffer segment, int64_t at,
                             int32_t term_offset, int32_t frame_length, int32_t stored,
                             const appender_state_t *s, int read_errno) except -1:
    if error == REPLAY_READ_FAILED:
        raise OSError(read_errno, f"{os.strerror(read_errno)} reading at {at}", segment.path)
    if error == REPLAY_FILE_SHORT:
        raise CorruptFileError(f"segment file ends inside the frame of {frame_length} bytes recorded there",
                               path=segment.path, offset=at)
    if error == REPLAY_TERM_PAST_SEGMENT:
        raise InvalidArgumentError(f"term at {at - term_offset} runs past the {segment.length}-byte segment")
    if error == REPLAY_CORRUPT_LENGTH:
        raise CorruptFileError(f"frame length {frame_length} at term offset {term_offset} cannot be a recorded "
                               f"frame", path=segment.path, offset=at)
    if error == REPLAY_FRAME_TOO_LONG:
        raise CorruptFileError(f"frame of {frame_length} bytes exceeds the replay block length "
                               f"{max_block_length}", path=segment.path, offset=at)
    if error == REPLAY_BAD_CHECKSUM:
        raise CorruptFileError(f"frame checksum mismatch (stored {stored})", path=segment.path, offset=at)
    if error == REPLAY_NOT_DATA:
        raise CorruptFileError(f"frame of type {fd.frame_type(segment.data + at, 0)} where a DATA or PAD frame "
                               f"was recorded", path=segment.path, offset=at)
    raise CorruptFileError(
        f"recorded frame of term id {fd.frame_i32(segment.data + at, fd.TERM_ID_FIELD_OFFSET)} at term offset "
        f"{fd.frame_i32(segment.data + at, fd.TERM_OFFSET_FIELD_OFFSET)} where the replay is at term id "
        f"{s.term_id} term offset {s.term_offset}", path=segment.path, offset=at)
