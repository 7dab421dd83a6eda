# SPDX-License-Identifier: Apache-2.0
# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Python face of the log buffer and frame descriptors: constants, position arithmetic and the
validation rules for term lengths, page sizes and MTUs (cold path; kernels cimport the .pxd)."""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t

from aeron._core cimport frame_descriptor as fd
from aeron._core cimport logbuffer_descriptor as ld
from aeron.common.errors import ConfigurationError

PARTITION_COUNT = <int>ld.PARTITION_COUNT
TERM_MIN_LENGTH = ld.TERM_MIN_LENGTH
TERM_MAX_LENGTH = ld.TERM_MAX_LENGTH
PAGE_MIN_SIZE = ld.PAGE_MIN_SIZE
PAGE_MAX_SIZE = ld.PAGE_MAX_SIZE
LOG_META_DATA_LENGTH = ld.LOG_META_DATA_LENGTH
FRAME_ALIGNMENT = fd.FRAME_ALIGNMENT
HEADER_LENGTH = fd.HEADER_LENGTH
MAX_UDP_PAYLOAD_LENGTH = 65504
DEFAULT_MTU_LENGTH = 1408
LOG_TYPE_CONCURRENT = ld.LOG_TYPE_CONCURRENT
LOG_TYPE_EXCLUSIVE = ld.LOG_TYPE_EXCLUSIVE
LOG_TYPE_IMAGE = ld.LOG_TYPE_IMAGE

# Metadata field offsets, for tests and tools.
METADATA_OFFSETS = {
    "term_tail_counters": ld.TERM_TAIL_COUNTERS_OFFSET,
    "active_term_count": ld.LOG_ACTIVE_TERM_COUNT_OFFSET,
    "end_of_stream_position": ld.LOG_END_OF_STREAM_POSITION_OFFSET,
    "is_connected": ld.LOG_IS_CONNECTED_OFFSET,
    "active_transport_count": ld.LOG_ACTIVE_TRANSPORT_COUNT_OFFSET,
    "correlation_id": ld.LOG_CORRELATION_ID_OFFSET,
    "initial_term_id": ld.LOG_INITIAL_TERM_ID_OFFSET,
    "default_frame_header_length": ld.LOG_DEFAULT_FRAME_HEADER_LENGTH_OFFSET,
    "mtu_length": ld.LOG_MTU_LENGTH_OFFSET,
    "term_length": ld.LOG_TERM_LENGTH_OFFSET,
    "page_size": ld.LOG_PAGE_SIZE_OFFSET,
    "publication_window_length": ld.LOG_PUBLICATION_WINDOW_LENGTH_OFFSET,
    "receiver_window_length": ld.LOG_RECEIVER_WINDOW_LENGTH_OFFSET,
    "socket_sndbuf_length": ld.LOG_SOCKET_SNDBUF_LENGTH_OFFSET,
    "os_default_socket_sndbuf_length": ld.LOG_OS_DEFAULT_SOCKET_SNDBUF_LENGTH_OFFSET,
    "os_max_socket_sndbuf_length": ld.LOG_OS_MAX_SOCKET_SNDBUF_LENGTH_OFFSET,
    "socket_rcvbuf_length": ld.LOG_SOCKET_RCVBUF_LENGTH_OFFSET,
    "os_default_socket_rcvbuf_length": ld.LOG_OS_DEFAULT_SOCKET_RCVBUF_LENGTH_OFFSET,
    "os_max_socket_rcvbuf_length": ld.LOG_OS_MAX_SOCKET_RCVBUF_LENGTH_OFFSET,
    "max_resend": ld.LOG_MAX_RESEND_OFFSET,
    "default_frame_header": ld.LOG_DEFAULT_FRAME_HEADER_OFFSET,
    "entity_tag": ld.LOG_ENTITY_TAG_OFFSET,
    "response_correlation_id": ld.LOG_RESPONSE_CORRELATION_ID_OFFSET,
    "linger_timeout_ns": ld.LOG_LINGER_TIMEOUT_NS_OFFSET,
    "untethered_window_limit_timeout_ns": ld.LOG_UNTETHERED_WINDOW_LIMIT_TIMEOUT_NS_OFFSET,
    "untethered_resting_timeout_ns": ld.LOG_UNTETHERED_RESTING_TIMEOUT_NS_OFFSET,
    "group": ld.LOG_GROUP_OFFSET,
    "is_response": ld.LOG_IS_RESPONSE_OFFSET,
    "rejoin": ld.LOG_REJOIN_OFFSET,
    "reliable": ld.LOG_RELIABLE_OFFSET,
    "sparse": ld.LOG_SPARSE_OFFSET,
    "signal_eos": ld.LOG_SIGNAL_EOS_OFFSET,
    "spies_simulate_connection": ld.LOG_SPIES_SIMULATE_CONNECTION_OFFSET,
    "tether": ld.LOG_TETHER_OFFSET,
    "is_publication_revoked": ld.LOG_IS_PUBLICATION_REVOKED_OFFSET,
    "type": ld.LOG_TYPE_OFFSET,
    "untethered_linger_timeout_ns": ld.LOG_UNTETHERED_LINGER_TIMEOUT_NS_OFFSET,
}


def check_term_length(int64_t term_length):
    """Raise ConfigurationError unless 64 KiB <= term_length <= 1 GiB and a power of two."""
    if term_length < ld.TERM_MIN_LENGTH or term_length > ld.TERM_MAX_LENGTH:
        raise ConfigurationError(
            f"term length {term_length} outside [{ld.TERM_MIN_LENGTH}, {ld.TERM_MAX_LENGTH}]")
    if term_length & (term_length - 1):
        raise ConfigurationError(f"term length {term_length} is not a power of 2")


def check_page_size(int64_t page_size):
    """Raise ConfigurationError unless 4 KiB <= page_size <= 1 GiB and a power of two."""
    if page_size < ld.PAGE_MIN_SIZE or page_size > ld.PAGE_MAX_SIZE:
        raise ConfigurationError(f"page size {page_size} outside [{ld.PAGE_MIN_SIZE}, {ld.PAGE_MAX_SIZE}]")
    if page_size & (page_size - 1):
        raise ConfigurationError(f"page size {page_size} is not a power of 2")


def check_mtu_length(int64_t mtu_length):
    """Raise ConfigurationError unless 32 < mtu <= 65504 and a multiple of 32."""
    if mtu_length <= fd.HEADER_LENGTH or mtu_length > MAX_UDP_PAYLOAD_LENGTH:
        raise ConfigurationError(f"mtu length {mtu_length} outside ({fd.HEADER_LENGTH}, {MAX_UDP_PAYLOAD_LENGTH}]")
    if mtu_length % fd.FRAME_ALIGNMENT:
        raise ConfigurationError(f"mtu length {mtu_length} is not a multiple of {fd.FRAME_ALIGNMENT}")


def align(int64_t value, int64_t alignment):
    if alignment <= 0 or alignment & (alignment - 1):
        raise ConfigurationError(f"alignment {alignment} is not a positive power of 2")
    return fd.align_i64(value, alignment)


def compute_log_length(int64_t term_length, int64_t page_size=ld.PAGE_MIN_SIZE):
    check_term_length(term_length)
    check_page_size(page_size)
    return ld.compute_log_length(term_length, page_size)


def position_bits_to_shift(int32_t term_length):
    check_term_length(term_length)
    return ld.position_bits_to_shift(term_length)


def compute_position(int32_t term_id, int32_t term_offset, int32_t position_bits_to_shift, int32_t initial_term_id):
    return ld.compute_position(term_id, term_offset, position_bits_to_shift, initial_term_id)


def compute_term_begin_position(int32_t term_id, int32_t position_bits_to_shift, int32_t initial_term_id):
    return ld.compute_term_begin_position(term_id, position_bits_to_shift, initial_term_id)


def compute_term_id_from_position(int64_t position, int32_t position_bits_to_shift, int32_t initial_term_id):
    return ld.compute_term_id_from_position(position, position_bits_to_shift, initial_term_id)


def compute_term_offset_from_position(int64_t position, int32_t position_bits_to_shift):
    return ld.compute_term_offset_from_position(position, position_bits_to_shift)


def index_by_position(int64_t position, int32_t position_bits_to_shift):
    return ld.index_by_position(position, position_bits_to_shift)


def index_by_term(int32_t initial_term_id, int32_t active_term_id):
    return ld.index_by_term(initial_term_id, active_term_id)


def index_by_term_count(int64_t term_count):
    return ld.index_by_term_count(term_count)


def term_count(int32_t term_id, int32_t initial_term_id):
    return ld.term_count_of(term_id, initial_term_id)


def pack_tail(int32_t term_id, int32_t term_offset):
    return ld.pack_tail(term_id, term_offset)


def term_id(int64_t raw_tail):
    return ld.term_id_of(raw_tail)


def term_offset(int64_t raw_tail, int64_t term_length):
    return ld.term_offset_of(raw_tail, term_length)


def max_possible_position(int32_t term_length):
    return ld.max_possible_position(term_length)


def compute_max_message_length(int32_t term_length):
    return fd.compute_max_message_length(term_length)


def compute_fragmented_length(int32_t length, int32_t max_payload_length):
    if max_payload_length <= 0:
        raise ConfigurationError(f"max payload length must be > 0, got {max_payload_length}")
    return fd.compute_fragmented_length(length, max_payload_length)


# ------------------------------------------------------------------------------------------------
# LogBuffers
# ------------------------------------------------------------------------------------------------
import os
import struct as _struct

from libc.string cimport memcpy, memset
from aeron._core.atomic cimport (load_acquire_i32, load_acquire_i64, store_release_i32, store_release_i64,
                                 load_acquire_u8, store_release_u8)
from aeron._core.atomic_buffer cimport AtomicBuffer
from aeron.common.errors import CorruptFileError, IllegalStateError, InvalidArgumentError

cdef object _DEFAULT_HEADER = _struct.Struct("<iBBhiiiiq")


cdef class LogBuffers:
    """A log buffer: three term partitions and the metadata section, as the driver lays them out.

    ``LogBuffers(memory)`` wraps an existing log (an AtomicBuffer, bytearray, mmap, ...);
    ``LogBuffers.map_existing(path)`` maps a ``.logbuffer`` file; ``LogBuffers.create(...)`` makes
    a new one and fills its metadata the way the C driver does. The geometry is validated once:
    a truncated or inconsistent log raises CorruptFileError naming the path and offset.
    """

    def __cinit__(self, object memory=None):
        if memory is None:
            raise InvalidArgumentError("LogBuffers needs the log's memory")
        cdef AtomicBuffer buf = memory if isinstance(memory, AtomicBuffer) else AtomicBuffer(memory)
        buf.check_open()
        if (<size_t>buf.data) % 8 != 0:
            # tails, term count and frame lengths are atomics and need natural alignment
            raise InvalidArgumentError("log buffer memory must start 8-byte aligned")
        cdef object path = buf.path
        cdef Py_ssize_t n = buf.length
        if n < 3 * ld.TERM_MIN_LENGTH + ld.LOG_META_DATA_LENGTH:
            raise CorruptFileError(f"log buffer too short: {n} bytes", path=path, offset=n)
        cdef uint8_t *meta = buf.data + n - ld.LOG_META_DATA_LENGTH
        cdef int32_t term_length = ld.meta_i32(meta, ld.LOG_TERM_LENGTH_OFFSET)
        cdef int32_t page_size = ld.meta_i32(meta, ld.LOG_PAGE_SIZE_OFFSET)
        cdef int32_t mtu = ld.meta_i32(meta, ld.LOG_MTU_LENGTH_OFFSET)
        cdef Py_ssize_t meta_at = n - ld.LOG_META_DATA_LENGTH
        try:
            check_term_length(term_length)
        except ConfigurationError as e:
            raise CorruptFileError(f"bad term_length in log metadata: {e}", path=path,
                                   offset=meta_at + ld.LOG_TERM_LENGTH_OFFSET) from None
        try:
            check_page_size(page_size)
        except ConfigurationError as e:
            raise CorruptFileError(f"bad page_size in log metadata: {e}", path=path,
                                   offset=meta_at + ld.LOG_PAGE_SIZE_OFFSET) from None
        if ld.compute_log_length(term_length, page_size) != n:
            raise CorruptFileError(
                f"log length {n} does not match term_length {term_length} and page_size {page_size} "
                f"(expected {ld.compute_log_length(term_length, page_size)})", path=path, offset=n)
        if ld.meta_i32(meta, ld.LOG_DEFAULT_FRAME_HEADER_LENGTH_OFFSET) != fd.HEADER_LENGTH:
            raise CorruptFileError("default frame header length is not 32", path=path,
                                   offset=meta_at + ld.LOG_DEFAULT_FRAME_HEADER_LENGTH_OFFSET)
        try:
            check_mtu_length(mtu)
        except ConfigurationError as e:
            raise CorruptFileError(f"bad mtu_length in log metadata: {e}", path=path,
                                   offset=meta_at + ld.LOG_MTU_LENGTH_OFFSET) from None
        self.buffer = buf
        self.meta = meta
        cdef int i
        for i in range(ld.PARTITION_COUNT):
            self.terms[i] = buf.data + <Py_ssize_t>i * term_length
        self.term_length = term_length
        self.page_size = page_size
        self.mtu_length = mtu
        self.position_bits_to_shift = ld.position_bits_to_shift(term_length)
        self.initial_term_id = ld.meta_i32(meta, ld.LOG_INITIAL_TERM_ID_OFFSET)
        self.max_message_length = fd.compute_max_message_length(term_length)
        self.max_possible_position = ld.max_possible_position(term_length)

    @staticmethod
    def map_existing(path):
        """Map an existing ``.logbuffer`` file shared, validating its geometry."""
        buf = AtomicBuffer.map_file(path, min_length=3 * ld.TERM_MIN_LENGTH + ld.LOG_META_DATA_LENGTH)
        try:
            return LogBuffers(buf)
        except BaseException:
            buf.close()
            raise

    @staticmethod
    def create(path=None, *, int32_t term_length, int32_t initial_term_id, int32_t session_id,
               int32_t stream_id, int32_t mtu_length=1408, int32_t page_size=4096,
               int64_t correlation_id=0, int log_type=ld.LOG_TYPE_CONCURRENT,
               int32_t term_id=0, int32_t term_offset=0, bint start_at_position=False,
               bint sparse=True, object file_mode=None, **metadata):
        """Create a log (a file at ``path``, or memory when ``path`` is None) initialised as the C
        driver initialises a publication log; ``file_mode`` as in AtomicBuffer.map_file. ``term_id``/``term_offset`` with
        ``start_at_position`` start the stream mid-way, as the URI's init-term-id/term-id/term-offset.
        Other metadata fields (``publication_window_length``, ``linger_timeout_ns``, ...) may be
        given by name; unknown names raise InvalidArgumentError."""
        check_term_length(term_length)
        check_page_size(page_size)
        check_mtu_length(mtu_length)
        length = ld.compute_log_length(term_length, page_size)
        if path is None:
            buf = AtomicBuffer(bytearray(length))
        else:
            buf = AtomicBuffer.map_file(path, length, create=True, sparse=sparse, mode=file_mode)
        try:
            meta = buf.view(length - ld.LOG_META_DATA_LENGTH, ld.LOG_META_DATA_LENGTH)
            try:
                _init_metadata(meta, term_length=term_length, initial_term_id=initial_term_id,
                               session_id=session_id, stream_id=stream_id, mtu_length=mtu_length,
                               page_size=page_size, correlation_id=correlation_id, log_type=log_type,
                               term_id=term_id if start_at_position else initial_term_id,
                               term_offset=term_offset if start_at_position else 0,
                               sparse=sparse, metadata=metadata)
            finally:
                meta.release()
            return LogBuffers(buf)
        except BaseException:
            buf.close()
            if path is not None:
                os.unlink(path)
            raise

    cdef int check_open(self) except -1:
        return self.buffer.check_open()

    def close(self):
        """Unmap (or release) the log. Raises IllegalStateError while a term view is alive."""
        self.buffer.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def is_closed(self):
        return self.buffer.closed

    @property
    def path(self):
        return self.buffer.path

    @property
    def log_length(self):
        return self.buffer.length

    def term_buffer(self, int index):
        """AtomicBuffer over partition ``index`` (0..2); keeps the log pinned while alive."""
        self.check_open()
        if index < 0 or index >= ld.PARTITION_COUNT:
            raise InvalidArgumentError(f"partition index {index} not in 0..2")
        return AtomicBuffer(self.buffer, <Py_ssize_t>index * self.term_length, self.term_length)

    def metadata_buffer(self):
        """AtomicBuffer over the 4096-byte metadata section."""
        self.check_open()
        return AtomicBuffer(self.buffer, self.buffer.length - ld.LOG_META_DATA_LENGTH, ld.LOG_META_DATA_LENGTH)

    # -- metadata (ordered where the reference says release/acquire) -----------------------------
    def raw_tail_volatile(self, int index):
        self.check_open()
        if index < 0 or index >= ld.PARTITION_COUNT:
            raise InvalidArgumentError(f"partition index {index} not in 0..2")
        return ld.raw_tail_volatile(self.meta, index)

    def raw_tails(self):
        self.check_open()
        return tuple(ld.raw_tail_volatile(self.meta, i) for i in range(ld.PARTITION_COUNT))

    @property
    def active_term_count(self):
        self.check_open()
        return ld.active_term_count_volatile(self.meta)

    def producer_position(self):
        """Where the publishers have got to: the active partition's tail, capped at the term end (the driver reads
        it every duty cycle)."""
        self.check_open()
        cdef int64_t raw_tail = ld.raw_tail_volatile(
            self.meta, ld.index_by_term_count(ld.active_term_count_volatile(self.meta)))
        return ld.compute_position(ld.term_id_of(raw_tail), ld.term_offset_of(raw_tail, self.term_length),
                                   self.position_bits_to_shift, self.initial_term_id)

    @property
    def active_partition_index(self):
        self.check_open()
        return ld.index_by_term_count(ld.active_term_count_volatile(self.meta))

    @property
    def end_of_stream_position(self):
        self.check_open()
        return load_acquire_i64(<int64_t *>(self.meta + ld.LOG_END_OF_STREAM_POSITION_OFFSET))

    @end_of_stream_position.setter
    def end_of_stream_position(self, int64_t value):
        self.check_open()
        store_release_i64(<int64_t *>(self.meta + ld.LOG_END_OF_STREAM_POSITION_OFFSET), value)

    @property
    def is_connected(self):
        self.check_open()
        return ld.is_connected_volatile(self.meta)

    @is_connected.setter
    def is_connected(self, bint value):
        self.check_open()
        store_release_i32(<int32_t *>(self.meta + ld.LOG_IS_CONNECTED_OFFSET), 1 if value else 0)

    @property
    def active_transport_count(self):
        self.check_open()
        return load_acquire_i32(<int32_t *>(self.meta + ld.LOG_ACTIVE_TRANSPORT_COUNT_OFFSET))

    @active_transport_count.setter
    def active_transport_count(self, int32_t value):
        self.check_open()
        store_release_i32(<int32_t *>(self.meta + ld.LOG_ACTIVE_TRANSPORT_COUNT_OFFSET), value)

    @property
    def is_publication_revoked(self):
        self.check_open()
        return load_acquire_u8(self.meta + ld.LOG_IS_PUBLICATION_REVOKED_OFFSET) == 1

    @is_publication_revoked.setter
    def is_publication_revoked(self, bint value):
        self.check_open()
        store_release_u8(self.meta + ld.LOG_IS_PUBLICATION_REVOKED_OFFSET, 1 if value else 0)

    @property
    def correlation_id(self):
        self.check_open()
        return ld.meta_i64(self.meta, ld.LOG_CORRELATION_ID_OFFSET)

    @property
    def default_frame_header(self):
        """The 32-byte default DATA header (version, flags 0xC0, type DATA, session, stream, term)."""
        self.check_open()
        return (<char *>self.meta)[ld.LOG_DEFAULT_FRAME_HEADER_OFFSET:ld.LOG_DEFAULT_FRAME_HEADER_OFFSET + fd.HEADER_LENGTH]

    @property
    def session_id(self):
        self.check_open()
        return ld.meta_i32(self.meta, ld.LOG_DEFAULT_FRAME_HEADER_OFFSET + fd.SESSION_ID_FIELD_OFFSET)

    @property
    def stream_id(self):
        self.check_open()
        return ld.meta_i32(self.meta, ld.LOG_DEFAULT_FRAME_HEADER_OFFSET + fd.STREAM_ID_FIELD_OFFSET)

    def metadata(self):
        """Every metadata field by name (a snapshot; tails as raw 64-bit values)."""
        self.check_open()
        return read_metadata(self.buffer.view(self.buffer.length - ld.LOG_META_DATA_LENGTH, ld.LOG_META_DATA_LENGTH))

    def compute_position(self, int32_t term_id, int32_t term_offset):
        return ld.compute_position(term_id, term_offset, self.position_bits_to_shift, self.initial_term_id)

    def __repr__(self):
        if self.buffer.closed:
            return "<LogBuffers closed>"
        return (f"<LogBuffers term_length={self.term_length} initial_term_id={self.initial_term_id} "
                f"mtu={self.mtu_length} path={self.buffer.path!r}>")


# (name, struct code, offset) for every metadata field after the tails.
_META_FIELDS = (
    ("active_term_count", "i", ld.LOG_ACTIVE_TERM_COUNT_OFFSET),
    ("end_of_stream_position", "q", ld.LOG_END_OF_STREAM_POSITION_OFFSET),
    ("is_connected", "i", ld.LOG_IS_CONNECTED_OFFSET),
    ("active_transport_count", "i", ld.LOG_ACTIVE_TRANSPORT_COUNT_OFFSET),
    ("correlation_id", "q", ld.LOG_CORRELATION_ID_OFFSET),
    ("initial_term_id", "i", ld.LOG_INITIAL_TERM_ID_OFFSET),
    ("default_frame_header_length", "i", ld.LOG_DEFAULT_FRAME_HEADER_LENGTH_OFFSET),
    ("mtu_length", "i", ld.LOG_MTU_LENGTH_OFFSET),
    ("term_length", "i", ld.LOG_TERM_LENGTH_OFFSET),
    ("page_size", "i", ld.LOG_PAGE_SIZE_OFFSET),
    ("publication_window_length", "i", ld.LOG_PUBLICATION_WINDOW_LENGTH_OFFSET),
    ("receiver_window_length", "i", ld.LOG_RECEIVER_WINDOW_LENGTH_OFFSET),
    ("socket_sndbuf_length", "i", ld.LOG_SOCKET_SNDBUF_LENGTH_OFFSET),
    ("os_default_socket_sndbuf_length", "i", ld.LOG_OS_DEFAULT_SOCKET_SNDBUF_LENGTH_OFFSET),
    ("os_max_socket_sndbuf_length", "i", ld.LOG_OS_MAX_SOCKET_SNDBUF_LENGTH_OFFSET),
    ("socket_rcvbuf_length", "i", ld.LOG_SOCKET_RCVBUF_LENGTH_OFFSET),
    ("os_default_socket_rcvbuf_length", "i", ld.LOG_OS_DEFAULT_SOCKET_RCVBUF_LENGTH_OFFSET),
    ("os_max_socket_rcvbuf_length", "i", ld.LOG_OS_MAX_SOCKET_RCVBUF_LENGTH_OFFSET),
    ("max_resend", "i", ld.LOG_MAX_RESEND_OFFSET),
    ("entity_tag", "q", ld.LOG_ENTITY_TAG_OFFSET),
    ("response_correlation_id", "q", ld.LOG_RESPONSE_CORRELATION_ID_OFFSET),
    ("linger_timeout_ns", "q", ld.LOG_LINGER_TIMEOUT_NS_OFFSET),
    ("untethered_window_limit_timeout_ns", "q", ld.LOG_UNTETHERED_WINDOW_LIMIT_TIMEOUT_NS_OFFSET),
    ("untethered_resting_timeout_ns", "q", ld.LOG_UNTETHERED_RESTING_TIMEOUT_NS_OFFSET),
    ("group", "B", ld.LOG_GROUP_OFFSET),
    ("is_response", "B", ld.LOG_IS_RESPONSE_OFFSET),
    ("rejoin", "B", ld.LOG_REJOIN_OFFSET),
    ("reliable", "B", ld.LOG_RELIABLE_OFFSET),
    ("sparse", "B", ld.LOG_SPARSE_OFFSET),
    ("signal_eos", "B", ld.LOG_SIGNAL_EOS_OFFSET),
    ("spies_simulate_connection", "B", ld.LOG_SPIES_SIMULATE_CONNECTION_OFFSET),
    ("tether", "B", ld.LOG_TETHER_OFFSET),
    ("is_publication_revoked", "B", ld.LOG_IS_PUBLICATION_REVOKED_OFFSET),
    ("type", "B", ld.LOG_TYPE_OFFSET),
    ("untethered_linger_timeout_ns", "q", ld.LOG_UNTETHERED_LINGER_TIMEOUT_NS_OFFSET),
)
_META_FIELD_NAMES = frozenset(name for name, _, _ in _META_FIELDS)


def read_metadata(meta):
    """Decode a 4096-byte metadata section (any buffer) into a dict of field values."""
    mv = memoryview(meta)
    try:
        if mv.nbytes < ld.LOG_META_DATA_STRUCT_LENGTH:
            raise CorruptFileError(f"metadata section too short: {mv.nbytes} bytes", offset=mv.nbytes)
        out = {"term_tail_counters": _struct.unpack_from("<3q", mv, 0)}
        for name, code, off in _META_FIELDS:
            out[name] = _struct.unpack_from("<" + code, mv, off)[0]
        out["default_frame_header"] = bytes(mv[ld.LOG_DEFAULT_FRAME_HEADER_OFFSET:ld.LOG_DEFAULT_FRAME_HEADER_OFFSET + fd.HEADER_LENGTH])
        return out
    finally:
        mv.release()


def _init_metadata(meta, *, term_length, initial_term_id, session_id, stream_id, mtu_length, page_size,
                   correlation_id, log_type, term_id, term_offset, sparse, metadata):
    unknown = set(metadata) - _META_FIELD_NAMES
    if unknown:
        raise InvalidArgumentError(f"unknown log metadata field(s): {', '.join(sorted(unknown))}")
    if term_offset < 0 or term_offset > term_length or term_offset % fd.FRAME_ALIGNMENT:
        raise InvalidArgumentError(f"term offset {term_offset} must be 32-aligned and within [0, {term_length}]")
    # Defaults the C driver writes for a publication log (aeron_logbuffer_metadata_init); images differ.
    image = log_type == ld.LOG_TYPE_IMAGE
    values = {
        "active_term_count": 0,
        "end_of_stream_position": 0x7FFFFFFFFFFFFFFF,
        "is_connected": 0,
        "active_transport_count": 0,
        "correlation_id": correlation_id,
        "initial_term_id": initial_term_id,
        "default_frame_header_length": fd.HEADER_LENGTH,
        "mtu_length": mtu_length,
        "term_length": term_length,
        "page_size": page_size,
        "publication_window_length": 0 if image else term_length // 2,
        "receiver_window_length": 128 * 1024 if image else 0,
        "entity_tag": 0 if image else -1,
        "response_correlation_id": 0 if image else -1,
        "linger_timeout_ns": 0 if image else 5_000_000_000,
        "untethered_window_limit_timeout_ns": 5_000_000_000,
        "untethered_resting_timeout_ns": 10_000_000_000,
        "rejoin": 1 if image else 0,
        "reliable": 1 if image else 0,
        "tether": 1 if image else 0,
        "sparse": 1 if sparse else 0,
        "signal_eos": 0 if image else 1,
        "type": log_type,
        "untethered_linger_timeout_ns": 5_000_000_000,
    }
    values.update(metadata)
    for name, code, off in _META_FIELDS:
        if name in values:
            _struct.pack_into("<" + code, meta, off, values[name])
    _DEFAULT_HEADER.pack_into(meta, ld.LOG_DEFAULT_FRAME_HEADER_OFFSET, 0, fd.CURRENT_VERSION, fd.UNFRAGMENTED,
                              fd.HDR_TYPE_DATA, 0, session_id, stream_id, initial_term_id, 0)
    # Tails (as aeron_network_publication_create sets them): the active partition holds term_id/term_offset,
    # the others the terms "before" it, so a rotation into them is recognised as pending.
    if image:
        return
    count = ld.term_count_of(term_id, initial_term_id)
    if count < 0:
        raise InvalidArgumentError(f"term id {term_id} is before initial term id {initial_term_id}")
    active = count % ld.PARTITION_COUNT
    tails = [0, 0, 0]
    tails[active] = ld.pack_tail(term_id, term_offset)
    for k in (1, 2):
        # wrapping 32-bit arithmetic: term ids run from -2^31 to 2^31-1
        previous_term_id = ((term_id + k - 3 + 0x80000000) & 0xFFFFFFFF) - 0x80000000
        tails[(active + k) % ld.PARTITION_COUNT] = ld.pack_tail(previous_term_id, 0)
    _struct.pack_into("<3q", meta, ld.TERM_TAIL_COUNTERS_OFFSET, *tails)
    _struct.pack_into("<i", meta, ld.LOG_ACTIVE_TERM_COUNT_OFFSET, count)
