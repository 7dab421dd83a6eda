# SPDX-License-Identifier: Apache-2.0
"""``cluster-mark.dat`` and ``cluster-mark-service-<id>.dat``: the liveness and configuration files of the
consensus module and of each clustered service container, byte-compatible with Aeron's ``ClusterMarkFile``.

Layout: an SBE message header and the MarkFileHeader (template 200 of schema 110) with six strings, zeros up to
8192 bytes, then a distinct error log (``errorBufferLength`` bytes, Agrona's layout); the file is that rounded up
to the file page size. ``version`` (file offset 8) is written last, with release ordering, when the component is
ready (0.3.0 = 768, or -1 after a failed start); ``activityTimestamp`` (offset 16) is refreshed every second and
is -1 after a clean stop. A legacy file has no message header (the header block at offset 0); tools read it, and
a component taking it over rewrites it in the current layout.
"""
from __future__ import annotations

import dataclasses
import os
import pathlib
import time
from collections.abc import Callable

from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.codecs.cluster_mark import (
    ClusterComponentType,
    MarkFileHeaderDecoder,
    MarkFileHeaderEncoder,
    MessageHeaderDecoder,
)
from aeron._core.error_log import DistinctErrorLog, ErrorLogRecord
from aeron.common.constants import INT32_MAX, NULL_VALUE
from aeron.common.errors import ClusterError, CorruptFileError, IllegalStateError, InvalidArgumentError, \
    MalformedMessageError
from aeron.common.mark_file import MarkFile, error_log_records, resolve_link

__all__ = ["ClusterComponentType", "ClusterMarkFile", "ClusterNodeControlProperties", "component_type_name",
           "format_mark_file_header"]

_HEADER_OFFSET = MessageHeaderDecoder.ENCODED_LENGTH
# MarkFileHeader block offsets (schema 110)
_VERSION, _COMPONENT_TYPE, _ACTIVITY_TIMESTAMP, _PID, _CANDIDATE_TERM_ID = 0, 4, 8, 24, 32
_MEMBER_ID, _HEADER_LENGTH, _ERROR_BUFFER_LENGTH, _CLUSTER_ID = 56, 64, 68, 72


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _semantic_version(major: int, minor: int, patch: int) -> int:
    return (major << 16) | (minor << 8) | patch


@dataclasses.dataclass(frozen=True)
class ClusterNodeControlProperties:
    """What a tool needs to talk to a running node, from its mark file (Aeron's ClusterNodeControlProperties)."""

    member_id: int
    service_stream_id: int
    consensus_module_stream_id: int
    aeron_directory_name: str
    control_channel: str


def header_offset_of(data: object) -> int:
    """8 when the bytes start with the message header of MarkFileHeader (schema 110), 0 for a legacy file."""
    head = bytes(memoryview(data)[:_HEADER_OFFSET])   # type: ignore[arg-type]
    if len(head) < _HEADER_OFFSET:
        return 0
    template_id = int.from_bytes(head[2:4], "little")
    schema_id = int.from_bytes(head[4:6], "little")
    if template_id == MarkFileHeaderDecoder.TEMPLATE_ID and schema_id == MarkFileHeaderDecoder.SCHEMA_ID:
        return _HEADER_OFFSET
    return 0


def _read_header_offset(path: pathlib.Path) -> int:
    with open(path, "rb") as f:
        return header_offset_of(f.read(_HEADER_OFFSET))


def component_type_name(value: int) -> str:
    """The ClusterComponentType name of a code (NULL_VAL, or the number for one the schema does not know)."""
    if value == ClusterComponentType.NULL_VAL:
        return "NULL_VAL"
    try:
        return ClusterComponentType(value).name
    except ValueError:
        return str(value)


def format_mark_file_header(decoder: MarkFileHeaderDecoder) -> str:
    """The MarkFileHeader decoder's ``toString`` as SBE's Java generator writes it (what ClusterTool ``describe``
    prints); an acting version or block length other than the schema's shows as ``acting/schema``."""
    version = decoder.acting_version
    block = decoder.acting_block_length
    v = f"{version}/{MarkFileHeaderDecoder.SCHEMA_VERSION}" if version != MarkFileHeaderDecoder.SCHEMA_VERSION \
        else str(version)
    b = f"{block}/{MarkFileHeaderDecoder.BLOCK_LENGTH}" if block != MarkFileHeaderDecoder.BLOCK_LENGTH else str(block)
    d = decoder
    return (f"[MarkFileHeader](sbeTemplateId={MarkFileHeaderDecoder.TEMPLATE_ID}|"
            f"sbeSchemaId={MarkFileHeaderDecoder.SCHEMA_ID}|sbeSchemaVersion={v}|sbeBlockLength={b}):"
            f"version={d.version}|componentType={component_type_name(d.component_type)}|"
            f"activityTimestamp={d.activity_timestamp}|startTimestamp={d.start_timestamp}|pid={d.pid}|"
            f"candidateTermId={d.candidate_term_id}|archiveStreamId={d.archive_stream_id}|"
            f"serviceStreamId={d.service_stream_id}|consensusModuleStreamId={d.consensus_module_stream_id}|"
            f"ingressStreamId={d.ingress_stream_id}|memberId={d.member_id}|serviceId={d.service_id}|"
            f"headerLength={d.header_length}|errorBufferLength={d.error_buffer_length}|clusterId={d.cluster_id}|"
            f"aeronDirectory='{d.aeron_directory}'|controlChannel='{d.control_channel}'|"
            f"ingressChannel='{d.ingress_channel}'|serviceName='{d.service_name}'|"
            f"authenticator='{d.authenticator}'|servicesClusterDir='{d.services_cluster_dir}'")


class ClusterMarkFile:
    """The mark file of a consensus module, service container or backup (Aeron's ``ClusterMarkFile``).

    :meth:`create` for the component that owns it (a new file, or one taken over from a stopped or dead
    owner), :meth:`open` for a tool (read-only). The header is read with :meth:`decoder` and written with
    :meth:`encoder`; :meth:`signal_ready` publishes it.
    """

    MAJOR_VERSION = 0
    MINOR_VERSION = 3
    PATCH_VERSION = 0
    SEMANTIC_VERSION = _semantic_version(MAJOR_VERSION, MINOR_VERSION, PATCH_VERSION)
    HEADER_LENGTH = 8 * 1024
    VERSION_FAILED = -1
    ERROR_BUFFER_MIN_LENGTH = 1024 * 1024
    ERROR_BUFFER_MAX_LENGTH = INT32_MAX - HEADER_LENGTH
    FILE_EXTENSION = ".dat"
    LINK_FILE_EXTENSION = ".lnk"
    FILENAME = "cluster-mark" + FILE_EXTENSION
    LINK_FILENAME = "cluster-mark" + LINK_FILE_EXTENSION
    SERVICE_FILENAME_PREFIX = "cluster-mark-service-"

    def __init__(self, mark_file: MarkFile, header_offset: int, writable: bool) -> None:
        """Use :meth:`create` or :meth:`open`."""
        self._mark_file = mark_file
        self._header_offset = header_offset
        self._writable = writable
        self._error_buffer: AtomicBuffer | None = None
        self._error_log: DistinctErrorLog | None = None
        self._clock: Callable[[], int] = _now_ms
        self._encoder = MarkFileHeaderEncoder()

    # -- creation (the component) -------------------------------------------------------------------------------

    @classmethod
    def create(cls, file: str | os.PathLike[str], component_type: ClusterComponentType | int,
               error_buffer_length: int = ERROR_BUFFER_MIN_LENGTH, epoch_clock: Callable[[], int] | None = None,
               timeout_ms: int = 10_000, file_page_size: int = 4096, pid: int | None = None,
               log: Callable[[str], None] | None = None) -> ClusterMarkFile:
        """Create ``file`` for a starting component of ``component_type``, or take the existing one over.

        An existing file must be of the same type (UNKNOWN, or a BACKUP file taken by a CONSENSUS_MODULE), have
        major version 0 (a version of -1, a failed start, is only warned about), and be stale: its activity
        timestamp older than ``timeout_ms`` or its owner's pid gone (ActiveMarkFileError otherwise). Its errors are
        saved to ``<TYPE>-<timestamp>-error.log`` beside it and its error log cleared; its legacy candidateTermId
        is kept for ``NodeStateFile`` to migrate. Writes the component type, start timestamp, pid, header and
        error buffer lengths; the caller writes the rest with :meth:`encoder`, then :meth:`signal_ready`.
        """
        component_type = ClusterComponentType(component_type)
        clock = epoch_clock or _now_ms
        if not cls.ERROR_BUFFER_MIN_LENGTH <= error_buffer_length <= cls.ERROR_BUFFER_MAX_LENGTH:
            raise InvalidArgumentError(f"Invalid errorBufferLength: {error_buffer_length}")
        if not 4096 <= file_page_size <= 1 << 30 or file_page_size & (file_page_size - 1):
            raise InvalidArgumentError(f"file page size must be a power of 2 in [4096, 1 GiB]: {file_page_size}")
        path = pathlib.Path(file)
        path.parent.mkdir(parents=True, exist_ok=True)
        total_length = (cls.HEADER_LENGTH + error_buffer_length + file_page_size - 1) & ~(file_page_size - 1)
        candidate_term_id = NULL_VALUE
        existed = path.exists()
        if existed:
            offset = _read_header_offset(path)
            mark, _ = MarkFile.map_new_or_existing(
                path, version_offset=offset + _VERSION, timestamp_offset=offset + _ACTIVITY_TIMESTAMP,
                total_file_length=total_length, timeout_ms=timeout_ms, epoch_clock=clock,
                version_check=cls._check_version_on_start(log),
                pid_of=lambda buffer: buffer.get_i64(offset + _PID), log=log)
            try:
                candidate_term_id = cls._adopt_existing(mark, path, offset, component_type, log)
                if offset == 0:
                    # a legacy file: rewritten from zeros in the current layout
                    mark.relocate(_HEADER_OFFSET + _VERSION, _HEADER_OFFSET + _ACTIVITY_TIMESTAMP)
            except BaseException:
                mark.close()
                raise
        else:
            mark, _ = MarkFile.map_new_or_existing(
                path, version_offset=_HEADER_OFFSET + _VERSION, timestamp_offset=_HEADER_OFFSET + _ACTIVITY_TIMESTAMP,
                total_file_length=total_length, timeout_ms=timeout_ms, epoch_clock=clock)
        marked = cls(mark, _HEADER_OFFSET, True)
        marked._clock = clock
        encoder = marked.encoder()
        encoder.component_type = component_type
        encoder.start_timestamp = clock()
        encoder.pid = os.getpid() if pid is None else pid
        encoder.candidate_term_id = candidate_term_id
        encoder.header_length = cls.HEADER_LENGTH
        encoder.error_buffer_length = error_buffer_length
        return marked

    @staticmethod
    def _check_version_on_start(log: Callable[[str], None] | None) -> Callable[[int], None]:
        def check(version: int) -> None:
            if version == ClusterMarkFile.VERSION_FAILED:
                if log is not None:
                    log("mark file version -1 indicates error on previous startup.")
            elif (version >> 16) != ClusterMarkFile.MAJOR_VERSION:
                raise ClusterError(f"mark file major version {version >> 16} does not match software: "
                                   f"{ClusterMarkFile.MAJOR_VERSION}")
        return check

    @classmethod
    def _adopt_existing(cls, mark: MarkFile, path: pathlib.Path, offset: int, component_type: ClusterComponentType,
                        log: Callable[[str], None] | None) -> int:
        # the checks and clean-up of ClusterMarkFile's constructor on an existing file; returns its candidateTermId
        decoder = MarkFileHeaderDecoder()
        try:
            if offset:
                decoder.wrap_header(mark.buffer, 0, cls.HEADER_LENGTH)
            else:
                decoder.wrap(mark.buffer, 0, MarkFileHeaderDecoder.BLOCK_LENGTH, MarkFileHeaderDecoder.SCHEMA_VERSION,
                             cls.HEADER_LENGTH)
            existing = decoder.component_type
            if existing != ClusterComponentType.UNKNOWN and existing != component_type and not (
                    existing == ClusterComponentType.BACKUP and component_type == ClusterComponentType.CONSENSUS_MODULE):
                raise ClusterError(f"existing Mark file type {component_type_name(existing)} not same as required "
                                   f"type {component_type.name}")
            header_length, error_length = decoder.header_length, decoder.error_buffer_length
            candidate_term_id = decoder.candidate_term_id
        except MalformedMessageError as ex:
            raise CorruptFileError(f"mark file header does not decode: {ex}", path=str(path), offset=offset) from None
        finally:
            decoder.release()
        mark.save_existing_errors(header_length, error_length, component_type.name, log)
        return candidate_term_id

    # -- opening (tools) ----------------------------------------------------------------------------------------

    @classmethod
    def open(cls, directory: str | os.PathLike[str], filename: str = FILENAME,
             epoch_clock: Callable[[], int] | None = None, timeout_ms: int = 0,
             log: Callable[[str], None] | None = None) -> ClusterMarkFile:
        """Map ``directory/filename`` read-only, waiting up to ``timeout_ms`` for it to be ready; its major version
        must be 0 (a file left at -1 by a failed start is refused: ClusterError)."""
        path = pathlib.Path(directory) / filename
        clock = epoch_clock or _now_ms
        offset = _read_header_offset(path) if path.exists() else _HEADER_OFFSET

        def check(version: int) -> None:
            if (version >> 16) & 0xFFFF != cls.MAJOR_VERSION:
                raise ClusterError(f"mark file major version {(version >> 16) & 0xFFFF} does not match software: "
                                   f"{cls.MAJOR_VERSION} ({path})")

        mark = MarkFile.map_existing(path, version_offset=offset + _VERSION,
                                     timestamp_offset=offset + _ACTIVITY_TIMESTAMP, timeout_ms=timeout_ms,
                                     epoch_clock=clock, version_check=check, log=log)
        marked = cls(mark, offset, False)
        marked._clock = clock
        return marked

    @staticmethod
    def resolve_mark_file_dir(cluster_dir: str | os.PathLike[str]) -> pathlib.Path:
        """The directory of ``cluster-mark.dat``: ``cluster_dir``, or where its ``cluster-mark.lnk`` points."""
        link = pathlib.Path(cluster_dir) / ClusterMarkFile.LINK_FILENAME
        return resolve_link(link) if link.exists() else pathlib.Path(cluster_dir)

    # -- header -------------------------------------------------------------------------------------------------

    @property
    def path(self) -> pathlib.Path:
        """The file."""
        return self._mark_file.path

    def parent_directory(self) -> pathlib.Path:
        """The directory holding the file."""
        return self._mark_file.path.parent

    @property
    def is_closed(self) -> bool:
        """True once closed."""
        return self._mark_file.closed

    def decoder(self) -> MarkFileHeaderDecoder:
        """A decoder over the header as it is now (the caller releases it, or lets it go)."""
        data = self._mark_file.data
        decoder = MarkFileHeaderDecoder()
        try:
            if self._header_offset:
                decoder.wrap_header(data, 0, self.HEADER_LENGTH)
            else:
                decoder.wrap(data, 0, MarkFileHeaderDecoder.BLOCK_LENGTH, MarkFileHeaderDecoder.SCHEMA_VERSION,
                             self.HEADER_LENGTH)
        except MalformedMessageError as ex:
            decoder.release()
            raise CorruptFileError(f"mark file header does not decode: {ex}", path=str(self.path),
                                   offset=self._header_offset) from None
        return decoder

    def encoder(self) -> MarkFileHeaderEncoder:
        """The encoder over the header (writable files), with its message header written: fixed fields may be set
        in any order, the strings in schema order (aeronDirectory, controlChannel, ingressChannel, serviceName,
        authenticator, servicesClusterDir)."""
        if not self._writable:
            raise IllegalStateError(f"mark file not open for writing: {self.path}")
        return self._encoder.wrap_and_apply_header(self._mark_file.buffer, 0)

    def _get_i32(self, block_offset: int) -> int:
        return self._mark_file.get_i32(self._header_offset + block_offset)

    @property
    def component_type(self) -> int:
        """The ClusterComponentType code."""
        return self._get_i32(_COMPONENT_TYPE)

    @property
    def pid(self) -> int:
        """The owner's process id."""
        return self._mark_file.get_i64(self._header_offset + _PID)

    def candidate_term_id(self) -> int:
        """The legacy candidateTermId (-1 on files of this version; NodeStateFile holds it now)."""
        if self.is_closed:
            return NULL_VALUE
        return self._mark_file.get_i64(self._header_offset + _CANDIDATE_TERM_ID)

    def member_id(self, member_id: int | None = None) -> int:
        """The member id; with an argument, write it first (a service learns it when it joins a log)."""
        if self.is_closed:
            return NULL_VALUE
        if member_id is not None:
            self._mark_file.buffer.put_i32(self._header_offset + _MEMBER_ID, member_id)
        return self._get_i32(_MEMBER_ID)

    def cluster_id(self, cluster_id: int | None = None) -> int:
        """The cluster id; with an argument, write it first."""
        if self.is_closed:
            return NULL_VALUE
        if cluster_id is not None:
            self._mark_file.buffer.put_i32(self._header_offset + _CLUSTER_ID, cluster_id)
        return self._get_i32(_CLUSTER_ID)

    def load_control_properties(self) -> ClusterNodeControlProperties:
        """Member id, control streams, driver directory and control channel, from the header."""
        decoder = self.decoder()
        try:
            return ClusterNodeControlProperties(decoder.member_id, decoder.service_stream_id,
                                                decoder.consensus_module_stream_id, decoder.aeron_directory,
                                                decoder.control_channel)
        finally:
            decoder.release()

    # -- liveness -----------------------------------------------------------------------------------------------

    def signal_ready(self, activity_timestamp: int) -> None:
        """The activity timestamp, then version 0.3.0, each with release ordering, then force the file."""
        self._signal_ready(self.SEMANTIC_VERSION, activity_timestamp)

    def signal_failed_start(self) -> None:
        """Version -1 and timestamp -1: the component failed to start (tools refuse such a file)."""
        self._signal_ready(self.VERSION_FAILED, NULL_VALUE)

    def _signal_ready(self, version: int, activity_timestamp: int) -> None:
        if self.is_closed:
            return
        self._mark_file.timestamp_release(activity_timestamp)
        self._mark_file.signal_ready(version)
        self.force()

    def signal_terminated(self) -> None:
        """A clean stop: the activity timestamp becomes -1, forced to the file."""
        if self.is_closed:
            return
        self._mark_file.timestamp_release(NULL_VALUE)
        self.force()

    def update_activity_timestamp(self, now_ms: int) -> None:
        """The owner's heartbeat (every second, ``ClusteredServiceContainer.Configuration.MARK_FILE_UPDATE_INTERVAL_NS``)."""
        if not self.is_closed:
            self._mark_file.timestamp_release(now_ms)

    def activity_timestamp_volatile(self) -> int:
        """The activity timestamp (-1 once closed)."""
        return NULL_VALUE if self.is_closed else self._mark_file.timestamp_volatile()

    def version_volatile(self) -> int:
        """The version field."""
        return self._mark_file.version_volatile()

    def force(self) -> None:
        """Write the mapping back to the file."""
        if not self.is_closed and self._writable:
            self._mark_file.force()

    # -- error log ----------------------------------------------------------------------------------------------

    def _error_region(self) -> tuple[int, int]:
        header_length = self._get_i32(_HEADER_LENGTH)
        error_length = self._get_i32(_ERROR_BUFFER_LENGTH)
        if header_length <= 0 or error_length <= 0 or header_length + error_length > self._mark_file.capacity:
            raise CorruptFileError(f"error log region [{header_length}, {header_length + error_length}) outside the "
                                   f"{self._mark_file.capacity}-byte file", path=str(self.path),
                                   offset=self._header_offset + _HEADER_LENGTH)
        return header_length, error_length

    def error_buffer(self) -> AtomicBuffer:
        """The error log region of a writable file."""
        if self._error_buffer is None:
            header_length, error_length = self._error_region()
            self._error_buffer = AtomicBuffer(self._mark_file.buffer, header_length, error_length)
        return self._error_buffer

    @property
    def error_log(self) -> DistinctErrorLog:
        """The component's DistinctErrorLog over the error region (writable files)."""
        if self._error_log is None:
            self._error_log = DistinctErrorLog(self.error_buffer(), self._clock)
        return self._error_log

    def error_records(self) -> list[ErrorLogRecord]:
        """The distinct errors recorded in the file, in log order."""
        header_length, error_length = self._error_region()
        return error_log_records(self._mark_file.data, header_length, error_length)

    # -- names --------------------------------------------------------------------------------------------------

    @staticmethod
    def is_service_mark_file(name: str | os.PathLike[str]) -> bool:
        """Whether a file name is a service container's mark file (``cluster-mark-service-*.dat``)."""
        file_name = pathlib.Path(name).name
        return file_name.startswith(ClusterMarkFile.SERVICE_FILENAME_PREFIX) and \
            file_name.endswith(ClusterMarkFile.FILE_EXTENSION)

    @staticmethod
    def is_consensus_module_mark_file(name: str | os.PathLike[str]) -> bool:
        """Whether a file name is the consensus module's mark file."""
        return pathlib.Path(name).name == ClusterMarkFile.FILENAME

    @staticmethod
    def mark_filename_for_service(service_id: int) -> str:
        """``cluster-mark-service-<id>.dat``."""
        return f"{ClusterMarkFile.SERVICE_FILENAME_PREFIX}{service_id}{ClusterMarkFile.FILE_EXTENSION}"

    @staticmethod
    def link_filename_for_service(service_id: int) -> str:
        """``cluster-mark-service-<id>.lnk``."""
        return f"{ClusterMarkFile.SERVICE_FILENAME_PREFIX}{service_id}{ClusterMarkFile.LINK_FILE_EXTENSION}"

    @staticmethod
    def check_header_length(aeron_directory: str | None, control_channel: str | None, ingress_channel: str | None,
                            service_name: str | None, authenticator: str | None) -> None:
        """ClusterError when these strings would not fit in the 8 KiB header (as Aeron counts them)."""
        length = _HEADER_OFFSET + MarkFileHeaderEncoder.BLOCK_LENGTH + 5 * 4 + sum(
            len(s or "") for s in (aeron_directory, control_channel, ingress_channel, service_name, authenticator))
        if length > ClusterMarkFile.HEADER_LENGTH:
            raise ClusterError(f"ClusterMarkFile headerLength={length} > headerLengthCapacity="
                               f"{ClusterMarkFile.HEADER_LENGTH}")

    # -- lifecycle ----------------------------------------------------------------------------------------------

    def close(self) -> None:
        """Unmap (idempotent)."""
        if self.is_closed:
            return
        self._encoder.release()
        self._error_log = None
        if self._error_buffer is not None:
            self._error_buffer.close()
            self._error_buffer = None
        self._mark_file.close()

    def __enter__(self) -> ClusterMarkFile:  # noqa: PYI034 (not meant to be subclassed)
        """The mark file itself."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close it."""
        self.close()

    def __repr__(self) -> str:
        """Aeron's ``toString``: the semantic version and the file."""
        return f"ClusterMarkFile{{semanticVersion=0.3.0, markFile={self.path}}}"
