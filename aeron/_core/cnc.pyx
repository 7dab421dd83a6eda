# SPDX-License-Identifier: Apache-2.0
# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""cnc.dat descriptor: create, attach (map_existing) and section buffers.

Port of CncFileDescriptor (Java) / aeron_cnc_file_descriptor.c.
"""
import os

from libc.stdint cimport int32_t, int64_t, INT32_MAX
from libc.string cimport memcpy

from aeron._core.atomic cimport load_acquire_i32, store_release_i32
from aeron._core.atomic_buffer cimport AtomicBuffer
from aeron.common.errors import (CncNotInitialisedError, CncVersionError, ConfigurationError, CorruptFileError,
                          IllegalStateError, InvalidArgumentError)

CNC_FILE = "cnc.dat"
META_DATA_LENGTH = CNC_META_DATA_LENGTH
VERSION_FIELD_OFFSET = CNC_VERSION_FIELD_OFFSET
TO_DRIVER_BUFFER_LENGTH_FIELD_OFFSET = CNC_TO_DRIVER_BUFFER_LENGTH_FIELD_OFFSET
TO_CLIENTS_BUFFER_LENGTH_FIELD_OFFSET = CNC_TO_CLIENTS_BUFFER_LENGTH_FIELD_OFFSET
COUNTERS_METADATA_BUFFER_LENGTH_FIELD_OFFSET = CNC_COUNTERS_METADATA_BUFFER_LENGTH_FIELD_OFFSET
COUNTERS_VALUES_BUFFER_LENGTH_FIELD_OFFSET = CNC_COUNTERS_VALUES_BUFFER_LENGTH_FIELD_OFFSET
ERROR_LOG_BUFFER_LENGTH_FIELD_OFFSET = CNC_ERROR_LOG_BUFFER_LENGTH_FIELD_OFFSET
CLIENT_LIVENESS_TIMEOUT_FIELD_OFFSET = CNC_CLIENT_LIVENESS_TIMEOUT_FIELD_OFFSET
START_TIMESTAMP_FIELD_OFFSET = CNC_START_TIMESTAMP_FIELD_OFFSET
PID_FIELD_OFFSET = CNC_PID_FIELD_OFFSET
FILE_PAGE_SIZE_FIELD_OFFSET = CNC_FILE_PAGE_SIZE_FIELD_OFFSET

# Trailers the ring and broadcast put at the end of their sections (needed to validate capacities).
TO_DRIVER_TRAILER_LENGTH = 768
TO_CLIENTS_TRAILER_LENGTH = 128
COUNTERS_VALUES_RECORD_LENGTH = 128


def semantic_version_compose(int major, int minor, int patch):
    """``(major << 16) | (minor << 8) | patch``, each part 0..255 (Agrona SemanticVersion)."""
    for part in (major, minor, patch):
        if part < 0 or part > 255:
            raise InvalidArgumentError(f"semantic version parts must be 0..255, got {major}.{minor}.{patch}")
    return semantic_version_compose_c(major, minor, patch)


def semantic_version_major(int32_t version):
    return (version >> 16) & 0xFF


def semantic_version_minor(int32_t version):
    return (version >> 8) & 0xFF


def semantic_version_patch(int32_t version):
    return version & 0xFF


def semantic_version_decompose(int32_t version):
    """Inverse of semantic_version_compose: (major, minor, patch)."""
    return (version >> 16) & 0xFF, (version >> 8) & 0xFF, version & 0xFF


def semantic_version_to_string(int32_t version):
    return "%d.%d.%d" % semantic_version_decompose(version)


CNC_VERSION = semantic_version_compose_c(CNC_VERSION_MAJOR, CNC_VERSION_MINOR, CNC_VERSION_PATCH)


cdef inline bint _is_power_of_two(int64_t v):
    return v > 0 and (v & (v - 1)) == 0


def compute_cnc_file_length(int64_t total_length_of_buffers, int64_t file_page_size):
    """``align(128 + sections, page size)``, the length the driver gives cnc.dat."""
    return (CNC_META_DATA_LENGTH + total_length_of_buffers + file_page_size - 1) & ~(file_page_size - 1)


cdef class CncFile:
    """The command-and-control file of a driver directory.

    ``CncFile.create(path, ...)`` (driver side), ``CncFile.map_existing(path)`` (clients and tools) or
    ``CncFile.from_buffer(buf)``; then section AtomicBuffers via ``to_driver_buffer()`` etc.
    """

    def __init__(self):
        raise TypeError("use CncFile.create, CncFile.map_existing or CncFile.from_buffer")

    @staticmethod
    def create(path, *, int64_t to_driver_buffer_length, int64_t to_clients_buffer_length,
               int64_t counters_metadata_buffer_length, int64_t counters_values_buffer_length,
               int64_t error_log_buffer_length, int64_t client_liveness_timeout_ns,
               int64_t start_timestamp_ms, int64_t pid, int64_t file_page_size=4096,
               bint signal_ready=True, object file_mode=None):
        """Create ``path`` (must not exist), zero-filled, and fill the header. ``file_mode`` sets its
        permissions exactly (None: 0o666 less the umask, as AtomicBuffer.map_file).

        The version is stored last with a release store; pass ``signal_ready=False`` to store it
        later with ``signal_cnc_ready()`` after the sections have been initialised (the driver does).
        Inconsistent lengths raise ConfigurationError.
        """
        for name, value in (("to_driver_buffer_length", to_driver_buffer_length),
                            ("to_clients_buffer_length", to_clients_buffer_length),
                            ("counters_metadata_buffer_length", counters_metadata_buffer_length),
                            ("counters_values_buffer_length", counters_values_buffer_length),
                            ("error_log_buffer_length", error_log_buffer_length)):
            if value <= 0 or value > INT32_MAX:
                raise ConfigurationError(f"{name} must be in 1..{INT32_MAX}, got {value}")
        if not _is_power_of_two(to_driver_buffer_length - TO_DRIVER_TRAILER_LENGTH) or \
                to_driver_buffer_length - TO_DRIVER_TRAILER_LENGTH < 8:
            raise ConfigurationError(
                f"to-driver capacity {to_driver_buffer_length - TO_DRIVER_TRAILER_LENGTH} is not a power of two >= 8")
        if not _is_power_of_two(to_clients_buffer_length - TO_CLIENTS_TRAILER_LENGTH):
            raise ConfigurationError(
                f"to-clients capacity {to_clients_buffer_length - TO_CLIENTS_TRAILER_LENGTH} is not a power of two")
        if counters_values_buffer_length % COUNTERS_VALUES_RECORD_LENGTH != 0:
            raise ConfigurationError(
                f"counters values length {counters_values_buffer_length} is not a multiple of 128")
        if counters_metadata_buffer_length < 4 * counters_values_buffer_length:
            raise ConfigurationError("counters metadata length must be >= 4 x counters values length")
        if error_log_buffer_length % 8 != 0:
            raise ConfigurationError(f"error log length {error_log_buffer_length} is not a multiple of 8")
        if not _is_power_of_two(file_page_size) or file_page_size < 4096:
            raise ConfigurationError(f"file page size {file_page_size} is not a power of two >= 4096")
        cdef int64_t total = (to_driver_buffer_length + to_clients_buffer_length + counters_metadata_buffer_length
                              + counters_values_buffer_length + error_log_buffer_length)
        cdef int64_t file_length = compute_cnc_file_length(total, file_page_size)
        if file_length > INT32_MAX:
            raise ConfigurationError(f"cnc file length {file_length} > {INT32_MAX}")
        buf = AtomicBuffer.map_file(path, file_length, create=True, mode=file_mode)
        buf.put_i32(CNC_TO_DRIVER_BUFFER_LENGTH_FIELD_OFFSET, <int32_t>to_driver_buffer_length)
        buf.put_i32(CNC_TO_CLIENTS_BUFFER_LENGTH_FIELD_OFFSET, <int32_t>to_clients_buffer_length)
        buf.put_i32(CNC_COUNTERS_METADATA_BUFFER_LENGTH_FIELD_OFFSET, <int32_t>counters_metadata_buffer_length)
        buf.put_i32(CNC_COUNTERS_VALUES_BUFFER_LENGTH_FIELD_OFFSET, <int32_t>counters_values_buffer_length)
        buf.put_i32(CNC_ERROR_LOG_BUFFER_LENGTH_FIELD_OFFSET, <int32_t>error_log_buffer_length)
        buf.put_i64(CNC_CLIENT_LIVENESS_TIMEOUT_FIELD_OFFSET, client_liveness_timeout_ns)
        buf.put_i64(CNC_START_TIMESTAMP_FIELD_OFFSET, start_timestamp_ms)
        buf.put_i64(CNC_PID_FIELD_OFFSET, pid)
        buf.put_i32(CNC_FILE_PAGE_SIZE_FIELD_OFFSET, <int32_t>file_page_size)
        cdef CncFile cnc = CncFile.__new__(CncFile)
        cnc.buffer = buf
        cnc.path = os.fspath(path)
        cnc._sections = {}
        cnc.load_header(True)
        if signal_ready:
            cnc.signal_cnc_ready()
        return cnc

    @staticmethod
    def map_existing(path):
        """Map an existing cnc.dat and validate it (one attempt of aeron_client_connect_to_driver's loop).

        Raises CorruptFileError (too short for its header or sections, negative lengths),
        CncNotInitialisedError (version still 0: retry later), CncVersionError (major mismatch).
        """
        path = os.fspath(path)
        buf = AtomicBuffer.map_file(path, min_length=CNC_META_DATA_LENGTH + 1)
        cdef CncFile cnc = CncFile.__new__(CncFile)
        cnc.buffer = buf
        cnc.path = path
        cnc._sections = {}
        try:
            cnc.load_header(False)
        except BaseException:
            buf.close()
            raise
        return cnc

    @staticmethod
    def from_buffer(obj):
        """Wrap an in-memory cnc image (bytearray, mmap, AtomicBuffer) with the checks of map_existing."""
        cdef AtomicBuffer buf = obj if isinstance(obj, AtomicBuffer) else AtomicBuffer(obj)
        if buf.length <= CNC_META_DATA_LENGTH:
            raise CorruptFileError(f"cnc buffer too short: {buf.length} bytes", offset=buf.length)
        cdef CncFile cnc = CncFile.__new__(CncFile)
        cnc.buffer = buf if buf is not obj else AtomicBuffer(buf)
        cnc.path = None
        cnc._sections = {}
        cnc.load_header(False)
        return cnc

    cdef int load_header(self, bint allow_uninitialised) except -1:
        cdef AtomicBuffer b = self.buffer
        b.check(0, CNC_META_DATA_LENGTH)
        if (<size_t>b.data) % 8 != 0:
            raise CorruptFileError("cnc buffer is not 8-byte aligned", path=self.path, offset=0)
        cdef int32_t version = load_acquire_i32(<int32_t *>b.data)
        self.to_driver_buffer_length = b.get_i32(CNC_TO_DRIVER_BUFFER_LENGTH_FIELD_OFFSET)
        self.to_clients_buffer_length = b.get_i32(CNC_TO_CLIENTS_BUFFER_LENGTH_FIELD_OFFSET)
        self.counters_metadata_buffer_length = b.get_i32(CNC_COUNTERS_METADATA_BUFFER_LENGTH_FIELD_OFFSET)
        self.counters_values_buffer_length = b.get_i32(CNC_COUNTERS_VALUES_BUFFER_LENGTH_FIELD_OFFSET)
        self.error_log_buffer_length = b.get_i32(CNC_ERROR_LOG_BUFFER_LENGTH_FIELD_OFFSET)
        self.client_liveness_timeout_ns = b.get_i64(CNC_CLIENT_LIVENESS_TIMEOUT_FIELD_OFFSET)
        self.start_timestamp_ms = b.get_i64(CNC_START_TIMESTAMP_FIELD_OFFSET)
        self.pid = b.get_i64(CNC_PID_FIELD_OFFSET)
        self.file_page_size = b.get_i32(CNC_FILE_PAGE_SIZE_FIELD_OFFSET)
        lengths = (("to-driver", self.to_driver_buffer_length, CNC_TO_DRIVER_BUFFER_LENGTH_FIELD_OFFSET),
                   ("to-clients", self.to_clients_buffer_length, CNC_TO_CLIENTS_BUFFER_LENGTH_FIELD_OFFSET),
                   ("counters metadata", self.counters_metadata_buffer_length,
                    CNC_COUNTERS_METADATA_BUFFER_LENGTH_FIELD_OFFSET),
                   ("counters values", self.counters_values_buffer_length,
                    CNC_COUNTERS_VALUES_BUFFER_LENGTH_FIELD_OFFSET),
                   ("error log", self.error_log_buffer_length, CNC_ERROR_LOG_BUFFER_LENGTH_FIELD_OFFSET))
        cdef Py_ssize_t offset = CNC_META_DATA_LENGTH
        self.to_driver_buffer_offset = offset
        offset += max(self.to_driver_buffer_length, 0)
        self.to_clients_buffer_offset = offset
        offset += max(self.to_clients_buffer_length, 0)
        self.counters_metadata_buffer_offset = offset
        offset += max(self.counters_metadata_buffer_length, 0)
        self.counters_values_buffer_offset = offset
        offset += max(self.counters_values_buffer_length, 0)
        self.error_log_buffer_offset = offset
        offset += max(self.error_log_buffer_length, 0)
        self.required_length = offset
        if version == 0 and not allow_uninitialised:
            # The creator may read its own header before signal_cnc_ready; attachers must retry.
            raise CncNotInitialisedError(f"cnc file is created but not initialised: {self.path or '<buffer>'}")
        if version != 0 and semantic_version_major(version) != CNC_VERSION_MAJOR:
            raise CncVersionError(
                f"CnC version not compatible: app={semantic_version_to_string(CNC_VERSION)} "
                f"file={semantic_version_to_string(version)}", )
        for name, value, field_offset in lengths:
            if value < 0:
                raise CorruptFileError(f"cnc {name} buffer length {value} is negative",
                                       path=self.path, offset=field_offset)
        if self.counters_values_buffer_length % COUNTERS_VALUES_RECORD_LENGTH != 0 or \
                self.counters_metadata_buffer_length < 4 * <Py_ssize_t>self.counters_values_buffer_length:
            raise CorruptFileError(
                f"cnc counters lengths inconsistent: metadata {self.counters_metadata_buffer_length}, "
                f"values {self.counters_values_buffer_length}",
                path=self.path, offset=CNC_COUNTERS_METADATA_BUFFER_LENGTH_FIELD_OFFSET)
        if b.length < self.required_length:
            raise CorruptFileError(
                f"cnc file too short: {b.length} bytes, its sections need {self.required_length}",
                path=self.path, offset=b.length)
        return 0

    def signal_cnc_ready(self, int32_t version=CNC_VERSION):
        """Store the version (release): clients trust nothing else until they see it non-zero."""
        self.buffer.check_aligned(CNC_VERSION_FIELD_OFFSET, 4)
        store_release_i32(<int32_t *>(self.buffer.data + CNC_VERSION_FIELD_OFFSET), version)

    @property
    def version(self):
        """CnC version field (acquire load)."""
        self.buffer.check_open()
        return load_acquire_i32(<int32_t *>self.buffer.data)

    @property
    def file_length(self):
        return self.buffer.length

    def is_file_length_sufficient(self):
        return self.buffer.length >= self.required_length

    cdef _section(self, str name, Py_ssize_t offset, Py_ssize_t length):
        self.buffer.check_open()
        sec = self._sections.get(name)
        if sec is None or sec.is_closed:
            sec = AtomicBuffer(self.buffer, offset, length)
            self._sections[name] = sec
        return sec

    def to_driver_buffer(self):
        return self._section("to_driver", self.to_driver_buffer_offset, self.to_driver_buffer_length)

    def to_clients_buffer(self):
        return self._section("to_clients", self.to_clients_buffer_offset, self.to_clients_buffer_length)

    def counters_metadata_buffer(self):
        return self._section("counters_metadata", self.counters_metadata_buffer_offset,
                             self.counters_metadata_buffer_length)

    def counters_values_buffer(self):
        return self._section("counters_values", self.counters_values_buffer_offset,
                             self.counters_values_buffer_length)

    def error_log_buffer(self):
        return self._section("error_log", self.error_log_buffer_offset, self.error_log_buffer_length)

    def metadata(self):
        """Header fields as a dict (for tools and tests)."""
        return {
            "version": self.version, "to_driver_buffer_length": self.to_driver_buffer_length,
            "to_clients_buffer_length": self.to_clients_buffer_length,
            "counters_metadata_buffer_length": self.counters_metadata_buffer_length,
            "counters_values_buffer_length": self.counters_values_buffer_length,
            "error_log_buffer_length": self.error_log_buffer_length,
            "client_liveness_timeout_ns": self.client_liveness_timeout_ns,
            "start_timestamp_ms": self.start_timestamp_ms, "pid": self.pid, "file_page_size": self.file_page_size,
        }

    @property
    def is_closed(self):
        return self.buffer.is_closed

    def close(self):
        """Close the section buffers then the mapping; IllegalStateError while a view is still alive."""
        for sec in self._sections.values():
            sec.close()
        self._sections.clear()
        self.buffer.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"<CncFile {self.path or '<buffer>'} version={semantic_version_to_string(self.version) if not self.is_closed else 'closed'}>"
