# SPDX-License-Identifier: Apache-2.0
"""ClusterTool: inspect and repair a cluster node's directory (Aeron ``io.aeron.cluster.ClusterTool``).

    python -m aeron.cluster.tool <cluster-dir> <command> [args]

Commands that read the node's files, whether it runs or not: ``describe``, ``pid``, ``recording-log``, ``errors``,
``is-leader`` (the role and election state counters in the media driver's cnc.dat), ``describe-latest-cm-snapshot
<archive-dir>`` (the consensus module's latest snapshot, read from the archive's segment files) and
``recovery-plan <service count>`` (asks the node's archive, as Aeron does). Commands that rewrite the recording
log, ``sort-recording-log``, ``seed-recording-log-from-snapshot`` and ``invalidate-latest-snapshot``, ask for a
``y`` first unless given ``--yes`` (Aeron's tool does not ask). The output matches the Java tool's line for line,
and each command is also a function here that returns what it found (and prints the Java tool's text to ``out``
when one is given). Exit status: 0, or -1 (255) as Aeron's; ``is-leader`` exits 0 for the leader, 1 otherwise.

Commands that talk to the running consensus module over its control channel and the driver's counters:
``list-members`` (ClusterMembersQuery), and on the leader ``snapshot``, ``suspend``, ``resume``, ``shutdown`` and
``abort`` (the cluster control toggle). ``backup-query`` and ``validate-recording-log`` are not here yet.
"""
from __future__ import annotations

import dataclasses
import datetime
import os
import pathlib
import shutil
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import IO, Any

from aeron._core.codecs import cluster as codecs
from aeron._core.error_log import ErrorLogRecord
from aeron._core.fragment_assembler import FragmentAssembler
from aeron.client.aeron import Aeron
from aeron.client.context import Context as AeronContext
from aeron.cluster.cluster_control import ToggleState, find_control_toggle, map_counters
from aeron.cluster.cluster_member import ClusterMember
from aeron.cluster.consensus_module import State
from aeron.cluster.election_state import ElectionState
from aeron.cluster.recording_log import (
    Entry,
    RecordingExtentSource,
    RecordingLog,
    RecoveryPlan,
    is_valid_snapshot,
    write_entries,
)
from aeron.cluster.service.cluster import Role
from aeron.cluster.service.cluster_counters import CLUSTER_ELECTION_STATE_TYPE_ID, CLUSTER_NODE_ROLE_TYPE_ID
from aeron.cluster.service.cluster_mark_file import ClusterMarkFile, component_type_name, format_mark_file_header
from aeron.common.cnc_attach import driver_error_records
from aeron.common.errors import AeronError, ClusterError
from aeron.common.mark_file import print_error_log, resolve_link
from aeron.common.settings import Setting, parse_duration_ns
from aeron.common.version import VERSION_TEXT
from aeron.driver.media_driver import is_driver_active

# the archive: its offline catalog and recording reader (describe-latest-cm-snapshot) and its client
# (recovery-plan): its file readers and client, never its server or ArchiveTool
from aeron.archive.catalog import Catalog
from aeron.archive.client import AeronArchive
from aeron.archive.client import Context as AeronArchiveContext
from aeron.archive.recording_reader import RecordingReader

__all__ = ["ClusterToolError", "MarkFileDescription", "SnapshotItem", "SnapshotNotFoundError", "describe", "describe_latest_cm_snapshot", "errors",
           "invalidate_latest_snapshot", "is_leader", "main", "pid", "recording_log", "recovery_plan",
           "seed_recording_log_from_snapshot", "sort_recording_log"]

Out = IO[str] | None
Log = Callable[[str], None] | None      # where a command's warnings go (the command line: stderr)

SUCCESS = 0
FAILURE = -1
NOT_LEADER = 1
CONSENSUS_MODULE_SERVICE_ID = -1            # ConsensusModule.Configuration.SERVICE_ID
CONSENSUS_MODULE_SNAPSHOT_TYPE_ID = 1       # ConsensusModule.Configuration.SNAPSHOT_TYPE_ID
TIMEOUT_PROP_NAME = "aeron.cluster.tool.timeout"
DRIVER_TIMEOUT_MS = 10_000                  # the driver timeout a node's client would use to judge its driver
_BEGIN, _END = 0x80, 0x40
_HDR_TYPE_DATA = 1


class ClusterToolError(ClusterError):
    """A command that cannot be carried out (no mark file, no snapshot, a recording missing from the archive)."""


class SnapshotNotFoundError(ClusterToolError):
    """The recording log holds no valid snapshot of the consensus module."""


@dataclasses.dataclass(frozen=True)
class MarkFileDescription:
    """One mark file as ``describe`` found it: its path, component type, pid, timestamps and the header's text."""

    path: pathlib.Path
    component_type: str
    pid: int
    start_timestamp: int
    activity_timestamp: int
    header: str


def _print(out: Out, text: str = "", end: str = "\n") -> None:
    if out is not None:
        out.write(text + end)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _java_date(epoch_ms: int, tz: datetime.tzinfo | None) -> datetime.datetime:
    moment = datetime.datetime.fromtimestamp(epoch_ms // 1000, datetime.timezone.utc)
    return moment.astimezone(tz) if tz is not None else moment.astimezone()


def type_line(component_type: str, start_ms: int, activity_ms: int, now_ms: int | None = None,
              tz: datetime.tzinfo | None = None) -> str:
    """``Type: <TYPE> HH:mm:ss (start: yyyy-MM-dd HH:mm:ss, activity: yyyy-MM-dd HH:mm:ss)``, as Aeron's
    ``printTypeAndActivityTimestamp`` (local time unless ``tz``)."""
    now = _java_date(_now_ms() if now_ms is None else now_ms, tz)
    start, activity = _java_date(start_ms, tz), _java_date(activity_ms, tz)
    return (f"Type: {component_type} {now:%H:%M:%S} (start: {start:%Y-%m-%d %H:%M:%S}, "
            f"activity: {activity:%Y-%m-%d %H:%M:%S})")


# -- mark files --------------------------------------------------------------------------------------------------


def mark_file_exists(cluster_dir: str | os.PathLike[str]) -> bool:
    """Whether the consensus module's mark file is there (following ``cluster-mark.lnk``)."""
    return (ClusterMarkFile.resolve_mark_file_dir(cluster_dir) / ClusterMarkFile.FILENAME).exists()


def open_mark_file(cluster_dir: str | os.PathLike[str], timeout_ms: int = 0,
                   log: Callable[[str], None] | None = None) -> ClusterMarkFile:
    """The consensus module's mark file, read-only."""
    return ClusterMarkFile.open(ClusterMarkFile.resolve_mark_file_dir(cluster_dir), ClusterMarkFile.FILENAME,
                                timeout_ms=timeout_ms, log=log)


def _check_mark_file(cluster_dir: str | os.PathLike[str], timeout_ms: int, out: Out) -> bool:
    if mark_file_exists(cluster_dir) or timeout_ms > 0:
        return True
    _print(out, f"{ClusterMarkFile.FILENAME} does not exist.")
    return False


def resolve_cluster_services_dir(cluster_dir: str | os.PathLike[str], mark: ClusterMarkFile,
                                 log: Log = None) -> pathlib.Path:
    """Where the service mark files are: the ``servicesClusterDir`` the consensus module's mark file names (from
    its version 1), else ``cluster_dir``; a named directory that is not there (a copied cluster directory) falls
    back to ``cluster_dir`` too, where Aeron would find no service at all."""
    decoder = mark.decoder()
    try:
        services = decoder.services_cluster_dir if decoder.acting_version >= 1 else ""
    finally:
        decoder.release()
    if services and pathlib.Path(services).is_dir():
        return pathlib.Path(services)
    if services and log is not None:
        log(f"WARNING: services directory {services} not found, service mark files read from {cluster_dir}")
    return pathlib.Path(cluster_dir)


def service_mark_file_paths(services_dir: str | os.PathLike[str]) -> list[pathlib.Path]:
    """The service mark files of a directory: ``.lnk`` files first (each names the directory of its ``.dat``),
    then the ``.dat`` files no link named, as Aeron resolves them."""
    directory = pathlib.Path(services_dir)
    if not directory.is_dir():
        return []
    names = [n for n in os.listdir(directory) if n.startswith(ClusterMarkFile.SERVICE_FILENAME_PREFIX) and
             (n.endswith(ClusterMarkFile.FILE_EXTENSION) or n.endswith(ClusterMarkFile.LINK_FILE_EXTENSION))]
    resolved, seen = [], set()
    for name in names:
        if name.endswith(ClusterMarkFile.LINK_FILE_EXTENSION):
            stem = name[:-len(ClusterMarkFile.LINK_FILE_EXTENSION)]
            resolved.append(resolve_link(directory / name) / (stem + ClusterMarkFile.FILE_EXTENSION))
            seen.add(stem)
    for name in names:
        if name.endswith(ClusterMarkFile.FILE_EXTENSION):
            stem = name[:-len(ClusterMarkFile.FILE_EXTENSION)]
            if stem not in seen:
                resolved.append(directory / name)
                seen.add(stem)
    return resolved


def _open_service_mark_files(services_dir: pathlib.Path, timeout_ms: int, out: Out) -> Iterator[ClusterMarkFile]:
    for path in service_mark_file_paths(services_dir):
        yield ClusterMarkFile.open(path.parent, path.name, timeout_ms=timeout_ms,
                                   log=(lambda text: _print(out, text)) if out is not None else None)


def _component_type_name(mark: ClusterMarkFile) -> str:
    return component_type_name(mark.component_type)


def _describe_one(mark: ClusterMarkFile, out: Out, now_ms: int | None,
                  tz: datetime.tzinfo | None) -> MarkFileDescription:
    decoder = mark.decoder()
    try:
        header = format_mark_file_header(decoder)
        start = decoder.start_timestamp
    finally:
        decoder.release()
    activity = mark.activity_timestamp_volatile()
    kind = _component_type_name(mark)
    _print(out, type_line(kind, start, activity, now_ms, tz))
    _print(out, header)
    return MarkFileDescription(mark.path, kind, mark.pid, start, activity, header)


# -- describe, pid, errors ---------------------------------------------------------------------------------------


def describe(cluster_dir: str | os.PathLike[str], out: Out = None, tz: datetime.tzinfo | None = None,
             now_ms: int | None = None, timeout_ms: int = 0, log: Log = None) -> list[MarkFileDescription]:
    """The consensus module's mark file, then every service's (``describe``)."""
    if not _check_mark_file(cluster_dir, timeout_ms, out):
        raise ClusterToolError(f"{ClusterMarkFile.FILENAME} does not exist in {cluster_dir}")
    found = []
    with open_mark_file(cluster_dir, timeout_ms) as mark:
        found.append(_describe_one(mark, out, now_ms, tz))
        services_dir = resolve_cluster_services_dir(cluster_dir, mark, log)
    for service in _open_service_mark_files(services_dir, timeout_ms, out):
        with service:
            found.append(_describe_one(service, out, now_ms, tz))
    return found


def pid(cluster_dir: str | os.PathLike[str], timeout_ms: int = 0) -> int:
    """The consensus module's process id (``pid``)."""
    if not mark_file_exists(cluster_dir) and timeout_ms <= 0:
        raise ClusterToolError(f"{ClusterMarkFile.FILENAME} does not exist in {cluster_dir}")
    with open_mark_file(cluster_dir, timeout_ms) as mark:
        return mark.pid


def errors(cluster_dir: str | os.PathLike[str], out: Out = None, tz: datetime.tzinfo | None = None,
           now_ms: int | None = None, timeout_ms: int = 0,
           aeron_dir: str | os.PathLike[str] | None = None, log: Log = None) -> dict[str, list[ErrorLogRecord]]:
    """The distinct errors of the consensus module's mark file, of its media driver (when its cnc.dat is there;
    ``aeron_dir`` instead of the directory the mark file names) and of every service's mark file (``errors``).
    Returns them by mark file path, the driver's under its cnc.dat path."""
    found: dict[str, list[ErrorLogRecord]] = {}
    services_dir = pathlib.Path(cluster_dir)
    if _check_mark_file(cluster_dir, timeout_ms, out):
        with open_mark_file(cluster_dir, timeout_ms) as mark:
            found[str(mark.path)] = _print_errors(mark, out, now_ms, tz)
            decoder = mark.decoder()
            try:
                aeron_directory = decoder.aeron_directory if aeron_dir is None else os.fspath(aeron_dir)
            finally:
                decoder.release()
            _print(out)
            _print(out, f"Aeron driver error log (directory: {aeron_directory}):")
            cnc_path = os.path.join(aeron_directory, "cnc.dat")
            if os.path.exists(cnc_path):
                found[cnc_path] = driver_error_records(aeron_directory)
                _print(out, print_error_log(found[cnc_path], tz), end="")
            else:
                _print(out, f"no media driver CnC file: {cnc_path}")
            services_dir = resolve_cluster_services_dir(cluster_dir, mark, log)
    for service in _open_service_mark_files(services_dir, timeout_ms, out):
        with service:
            found[str(service.path)] = _print_errors(service, out, now_ms, tz)
    return found


def _print_errors(mark: ClusterMarkFile, out: Out, now_ms: int | None,
                  tz: datetime.tzinfo | None) -> list[ErrorLogRecord]:
    decoder = mark.decoder()
    try:
        start = decoder.start_timestamp
    finally:
        decoder.release()
    _print(out, type_line(_component_type_name(mark), start, mark.activity_timestamp_volatile(), now_ms, tz))
    records = mark.error_records()
    _print(out, "Cluster component error log:")
    _print(out, print_error_log(records, tz), end="")
    return records


# -- is-leader ---------------------------------------------------------------------------------------------------


def is_leader(cluster_dir: str | os.PathLike[str], out: Out = None, timeout_ms: int = 0,
              aeron_dir: str | os.PathLike[str] | None = None, log: Log = None) -> int:
    """0 when the node is the leader and its election is closed, 1 when not (or its media driver is not
    running), -1 when there is no mark file (``is-leader``). The role and election state counters are read
    from the media driver's cnc.dat in the directory the mark file names (or ``aeron_dir``)."""
    if not mark_file_exists(cluster_dir):
        _print(out, f"{ClusterMarkFile.FILENAME} does not exist.")
        return FAILURE
    with open_mark_file(cluster_dir, timeout_ms) as mark:
        decoder = mark.decoder()
        try:
            aeron_directory = decoder.aeron_directory if aeron_dir is None else os.fspath(aeron_dir)
        finally:
            decoder.release()
    if not is_driver_active(aeron_directory, DRIVER_TIMEOUT_MS):
        if log is not None:
            log(f"no active media driver in {aeron_directory}")
        return NOT_LEADER
    role = election_state = -1
    with map_counters(os.path.join(aeron_directory, "cnc.dat")) as counters:
        # as Aeron's tool: the last counter of each type, whatever its cluster id
        for record in counters.reader.counters():
            if record.type_id == CLUSTER_NODE_ROLE_TYPE_ID:
                role = record.value
            elif record.type_id == CLUSTER_ELECTION_STATE_TYPE_ID:
                election_state = record.value
    return SUCCESS if role == Role.LEADER and election_state == ElectionState.CLOSED else NOT_LEADER


# -- the recording log -------------------------------------------------------------------------------------------


def recording_log(cluster_dir: str | os.PathLike[str], out: Out = None) -> list[Entry]:
    """The recording log's entries in Aeron's order, printed as its ``toString`` (``recording-log``)."""
    with RecordingLog(cluster_dir, False) as log:
        _print(out, str(log))
        return log.entries


def _is_sorted(entries: Sequence[Entry]) -> bool:
    return all(entry.entry_index == i for i, entry in enumerate(entries))


def sort_recording_log(cluster_dir: str | os.PathLike[str]) -> bool:
    """Rewrite the recording log in its sorted order (``sort-recording-log``); False when it already was, or
    could not be read (Aeron's tool then fails too)."""
    try:
        with RecordingLog(cluster_dir, False) as log:
            entries = log.entries
    except AeronError:
        return False
    if _is_sorted(entries):
        return False
    write_entries(cluster_dir, entries)
    return True


def seed_recording_log_from_snapshot(cluster_dir: str | os.PathLike[str]) -> list[Entry]:
    """Back the recording log up to ``recording.log.bak`` and replace it with only the latest valid snapshot set,
    term base and log position 0 (``seed-recording-log-from-snapshot``); no snapshot leaves no recording log.
    Returns the entries written."""
    with RecordingLog(cluster_dir, False) as log:
        entries = log.entries
    index = next((i for i in range(len(entries) - 1, -1, -1)
                  if is_valid_snapshot(entries[i]) and entries[i].service_id == CONSENSUS_MODULE_SERVICE_ID), -1)
    path = pathlib.Path(cluster_dir) / "recording.log"
    shutil.copy2(path, path.with_name("recording.log.bak"))
    seeded: list[Entry] = []
    if index != -1:
        service_id = CONSENSUS_MODULE_SERVICE_ID
        for i in range(index, -1, -1):
            entry = entries[i]
            if not (is_valid_snapshot(entry) and entry.service_id == service_id):
                break
            seeded.append(Entry(entry.recording_id, entry.leadership_term_id, 0, 0, entry.timestamp,
                                entry.service_id, entry.type, None, entry.is_valid, -1, -1))
            service_id += 1
        seeded.reverse()
    write_entries(cluster_dir, seeded)
    return seeded


def invalidate_latest_snapshot(cluster_dir: str | os.PathLike[str], out: Out = None) -> bool:
    """Mark the newest snapshot set invalid, so that the previous one is recovered from
    (``invalidate-latest-snapshot``); whether there was one."""
    with RecordingLog(cluster_dir, False) as log:
        result = log.invalidate_latest_snapshot()
    _print(out, f" invalidate latest snapshot: {'true' if result else 'false'}")
    return result


def recovery_plan(cluster_dir: str | os.PathLike[str], service_count: int, archive: RecordingExtentSource,
                  out: Out = None) -> RecoveryPlan:
    """The recovery plan a consensus module of ``service_count`` services would follow, the log recording's
    extent asked of ``archive`` (an AeronArchive client connected to the node's archive) (``recovery-plan``)."""
    with RecordingLog(cluster_dir, False) as log:
        plan = log.create_recovery_plan(archive, service_count)
    _print(out, str(plan))
    return plan


# -- describe-latest-cm-snapshot ---------------------------------------------------------------------------------


def format_hex_dump(data: bytes) -> str:
    """``ConsensusModuleSnapshotPrinter.formatHexDump``: rows of 16 bytes with their offset, then the row's
    bytes as UTF-8 text (invalid bytes replaced, newlines as spaces)."""
    rows = []
    for row in range(0, len(data), 16):
        chunk = data[row:row + 16]
        hexes = "".join(f"{b:02x} " for b in chunk) + "   " * (16 - len(chunk))
        text = chunk.decode("utf-8", "replace").replace("\r\n", " ").replace("\n", " ")
        rows.append(f"{row:06d}:  {hexes}  |  {text}\n")
    return "".join(rows)


@dataclasses.dataclass(frozen=True)
class SnapshotItem:
    """One entry of a consensus module snapshot: its template name, fields and where it was in the image."""

    name: str
    fields: dict[str, Any]
    offset: int
    length: int


def _time_unit_name(code: int) -> str:
    # ClusterClock.map: MILLIS, or a sender too old to say, is milliseconds
    if code == codecs.ClusterTimeUnit.MICROS:
        return "MICROSECONDS"
    if code == codecs.ClusterTimeUnit.NANOS:
        return "NANOSECONDS"
    return "MILLISECONDS"


def _close_reason_name(code: int) -> str:
    try:
        return codecs.CloseReason(code).name
    except ValueError:
        return str(code)


def _snapshot_messages(archive_dir: str | os.PathLike[str], recording_id: int) -> Iterator[tuple[bytes, int, int]]:
    # (message, offset in the term or 0 when reassembled, position after it) of each message of the recording,
    # reassembled from its fragments as an image's fragment assembler would
    with Catalog(archive_dir, read_only=True, strict=False) as catalog:
        descriptor = catalog.find_recording(recording_id)
    if descriptor is None:
        raise ClusterToolError(f"recording {recording_id} is not in the archive catalog of {archive_dir}")
    parts: list[bytes] = []
    for frame in RecordingReader(descriptor, archive_dir):
        if frame.frame_type != _HDR_TYPE_DATA:
            continue
        message = frame.payload[:frame.frame_length - 32]
        end = frame.position + frame.aligned_length
        flags = frame.flags
        if flags & (_BEGIN | _END) == (_BEGIN | _END):
            yield message, frame.term_offset + 32, end
        elif flags & _BEGIN:
            parts = [message]
        elif parts:
            parts.append(message)
            if flags & _END:
                yield b"".join(parts), 0, end
                parts = []


def describe_latest_cm_snapshot(cluster_dir: str | os.PathLike[str], archive_dir: str | os.PathLike[str],
                                out: Out = None, timeout_ms: int = 0) -> list[SnapshotItem]:
    """The consensus module's latest valid snapshot, read from the node's archive directory ``archive_dir`` (its
    catalog and segment files, so the node need not run), printed as Aeron's ``ConsensusModuleSnapshotPrinter``
    does (``describe-latest-cm-snapshot``); ClusterToolError when there is no snapshot."""
    with RecordingLog(cluster_dir, False) as log:
        entry = log.get_latest_snapshot(CONSENSUS_MODULE_SERVICE_ID)
    if entry is None:
        _print(out, "Snapshot not found")
        raise SnapshotNotFoundError(f"no valid consensus module snapshot in the recording log of {cluster_dir}")
    with open_mark_file(cluster_dir, timeout_ms) as mark:
        member_id = mark.load_control_properties().member_id
    items: list[SnapshotItem] = []
    in_snapshot = done = False
    position = 0
    header = codecs.MessageHeaderDecoder()
    decoders: dict[int, Any] = {}
    try:
        for message, offset, position in _snapshot_messages(archive_dir, entry.recording_id):
            header.wrap(message, 0)
            if header.schema_id != codecs.SCHEMA_ID:
                raise ClusterToolError(f"expected schemaId={codecs.SCHEMA_ID}, actual={header.schema_id}")
            template_id = header.template_id
            if template_id not in codecs.TEMPLATES:
                continue
            decoder = decoders.setdefault(template_id, codecs.TEMPLATES[template_id][1]())
            decoder.wrap(message, codecs.MESSAGE_HEADER_LENGTH, header.block_length, header.version, len(message))
            item = _snapshot_item(decoder, message, offset, out)
            if isinstance(decoder, codecs.SnapshotMarkerDecoder):
                if decoder.type_id != CONSENSUS_MODULE_SNAPSHOT_TYPE_ID:
                    raise ClusterToolError(f"unexpected snapshot type: {decoder.type_id}")
                if decoder.mark == codecs.SnapshotMark.BEGIN:
                    if in_snapshot:
                        raise ClusterToolError("already in snapshot")
                    in_snapshot = True
                elif decoder.mark == codecs.SnapshotMark.END:
                    if not in_snapshot:
                        raise ClusterToolError("missing begin snapshot")
                    done = True
            if item is not None:
                items.append(item)
            if done:
                break
    finally:
        header.release()
        for decoder in decoders.values():
            decoder.release()
    if not done:
        raise ClusterToolError(f"snapshot ended unexpectedly: recording {entry.recording_id} at {position}")
    _print(out, f"Consensus Module Snapshot End: memberId={member_id} recordingId={entry.recording_id} "
                f"length={position}")
    return items


def _snapshot_item(decoder: Any, message: bytes, offset: int, out: Out) -> SnapshotItem | None:
    # ConsensusModuleSnapshotAdapter's dispatch and ConsensusModuleSnapshotPrinter's lines
    length = len(message)
    d = decoder
    fields: dict[str, Any]
    if isinstance(d, codecs.SnapshotMarkerDecoder):
        if d.mark == codecs.SnapshotMark.BEGIN:
            _print(out, f"Snapshot: appVersion={d.app_version} timeUnit={_time_unit_name(d.time_unit)}")
            fields = {"mark": "BEGIN", "app_version": d.app_version, "time_unit": d.time_unit}
        elif d.mark == codecs.SnapshotMark.END:
            _print(out, f"End Snapshot, offset={offset}, length={length}")
            _print(out, format_hex_dump(message))
            fields = {"mark": "END"}
        else:
            return None
        return SnapshotItem("SnapshotMarker", fields, offset, length)
    if isinstance(d, codecs.ConsensusModuleDecoder):
        _print(out, f"Consensus Module State: nextSessionId={d.next_session_id} nextServiceSessionId="
                    f"{d.next_service_session_id} logServiceSessionId={d.log_service_session_id} "
                    f"pendingMessageCapacity={d.pending_message_capacity}")
        _print(out, format_hex_dump(message))
        fields = {"next_session_id": d.next_session_id, "next_service_session_id": d.next_service_session_id,
                  "log_service_session_id": d.log_service_session_id,
                  "pending_message_capacity": d.pending_message_capacity}
        return SnapshotItem("ConsensusModule", fields, offset, length)
    if isinstance(d, codecs.SessionMessageHeaderDecoder):
        _print(out, f"Pending Message: length={length} clusterSessionId={d.cluster_session_id}")
        return SnapshotItem("SessionMessageHeader", {"cluster_session_id": d.cluster_session_id}, offset, length)
    if isinstance(d, codecs.ClusterSessionDecoder):
        _print(out, f"Cluster Session: clusterSessionId={d.cluster_session_id} correlationId={d.correlation_id} "
                    f"openedLogPosition={d.opened_log_position} timeOfLastActivity={d.time_of_last_activity} "
                    f"closeReason={_close_reason_name(d.close_reason)} responseStreamId={d.response_stream_id} "
                    f"responseChannel={d.response_channel}")
        fields = {"cluster_session_id": d.cluster_session_id, "correlation_id": d.correlation_id,
                  "opened_log_position": d.opened_log_position, "time_of_last_activity": d.time_of_last_activity,
                  "close_reason": d.close_reason, "response_stream_id": d.response_stream_id,
                  "response_channel": d.response_channel}
        return SnapshotItem("ClusterSession", fields, offset, length)
    if isinstance(d, codecs.TimerDecoder):
        _print(out, f"Timer: correlationId={d.correlation_id} deadline={d.deadline}")
        return SnapshotItem("Timer", {"correlation_id": d.correlation_id, "deadline": d.deadline}, offset, length)
    if isinstance(d, codecs.PendingMessageTrackerDecoder):
        _print(out, f"Pending Message Tracker: nextServiceSessionId={d.next_service_session_id} "
                    f"logServiceSessionId={d.log_service_session_id} pendingMessageCapacity="
                    f"{d.pending_message_capacity} serviceId={d.service_id}")
        fields = {"next_service_session_id": d.next_service_session_id,
                  "log_service_session_id": d.log_service_session_id,
                  "pending_message_capacity": d.pending_message_capacity, "service_id": d.service_id}
        return SnapshotItem("PendingMessageTracker", fields, offset, length)
    return None


# -- live commands: the running consensus module ------------------------------------------------------------------

@dataclasses.dataclass
class ClusterMembership:
    """What a member says of the cluster (Aeron's ``ClusterMembership``): its own id, the leader's, the time on its
    clock and the active members as it knows them."""

    member_id: int = -1
    leader_member_id: int = -1
    current_time_ns: int = -1
    active_members: list[Any] = dataclasses.field(default_factory=list)
    active_members_str: str = ""


def query_cluster_members(control: Any, timeout_ms: int) -> ClusterMembership | None:
    """Ask the consensus module named by ``control`` (its mark file's control properties) for its members over
    the control channel (ClusterMembersQuery, extended), waiting up to ``timeout_ms``; None on timeout (Aeron's
    ``ClusterToolOperator.queryClusterMembers``)."""
    deadline = time.monotonic() + timeout_ms / 1000
    with Aeron.connect(AeronContext(control.aeron_directory_name, client_name="cluster-tool")) as aeron:
        subscription = aeron.add_subscription(control.control_channel, control.service_stream_id)
        publication = aeron.add_publication(control.control_channel, control.consensus_module_stream_id)
        correlation_id = aeron.next_correlation_id()
        while not publication.is_connected or publication.position_limit - publication.position <= 0:
            if time.monotonic() > deadline:
                return None
            time.sleep(0.001)
        query = bytearray(codecs.MESSAGE_HEADER_LENGTH + codecs.ClusterMembersQueryEncoder.BLOCK_LENGTH)
        encoder = codecs.ClusterMembersQueryEncoder().wrap_and_apply_header(query, 0)
        encoder.correlation_id = correlation_id
        encoder.extended = codecs.BooleanType.TRUE
        encoder.release()
        while publication.offer(query, 0, len(query)) <= 0:
            if time.monotonic() > deadline:
                return None
            time.sleep(0.001)
        found: list[ClusterMembership] = []

        def on_fragment(buffer: Any, offset: int, length: int, header: Any) -> None:
            message = bytes(memoryview(buffer)[offset:offset + length])
            head = codecs.MessageHeaderDecoder().wrap(message, 0)
            if head.schema_id != codecs.SCHEMA_ID:
                raise ClusterError(f"expected schemaId={codecs.SCHEMA_ID}, actual={head.schema_id}")
            if head.template_id == codecs.ClusterMembersExtendedResponseDecoder.TEMPLATE_ID:
                d = codecs.ClusterMembersExtendedResponseDecoder().wrap_header(message)
                if d.correlation_id != correlation_id:
                    return
                members = []
                for m in d.active_members:
                    endpoints = ",".join((m.ingress_endpoint, m.consensus_endpoint, m.log_endpoint,
                                          m.catchup_endpoint, m.archive_endpoint))
                    member = ClusterMember(m.member_id, m.ingress_endpoint, m.consensus_endpoint, m.log_endpoint,
                                           m.catchup_endpoint, m.archive_endpoint, endpoints)
                    member.is_leader = m.member_id == d.leader_member_id
                    member.leadership_term_id = m.leadership_term_id
                    member.log_position = m.log_position
                    member.time_of_last_append_position_ns = m.time_of_last_append_ns
                    members.append(member)
                found.append(ClusterMembership(d.member_id, d.leader_member_id, d.current_time_ns, members,
                                               ClusterMember.encode_as_string(members)))
            elif head.template_id == codecs.ClusterMembersResponseDecoder.TEMPLATE_ID:
                response = codecs.ClusterMembersResponseDecoder().wrap_header(message)
                if response.correlation_id == correlation_id:
                    found.append(ClusterMembership(leader_member_id=response.leader_member_id,
                                                   active_members_str=response.active_members))

        assembler = FragmentAssembler(on_fragment)
        while not found:
            if subscription.poll(assembler, 10) == 0:
                if time.monotonic() > deadline:
                    return None
                time.sleep(0.001)
        return found[0]


def list_members(cluster_dir: str | os.PathLike[str], out: Out = None, timeout_ms: int = 0) -> ClusterMembership | None:
    """The members as the running node knows them (``list-members``): ``currentTimeNs=..., leaderMemberId=...,
    memberId=..., activeMembers=[ClusterMember{...}, ...]``, or ``timeout waiting for response from node``."""
    if not mark_file_exists(cluster_dir) and timeout_ms <= 0:
        _print(out, f"{ClusterMarkFile.FILENAME} does not exist.")
        raise ClusterToolError(f"no mark file in {cluster_dir}")
    with open_mark_file(cluster_dir, timeout_ms) as mark:
        control = mark.load_control_properties()
    membership = query_cluster_members(control, max(1000, timeout_ms))
    if membership is None:
        _print(out, "timeout waiting for response from node")
        return None
    members = "[" + ", ".join(str(m) for m in membership.active_members) + "]"
    _print(out, f"currentTimeNs={membership.current_time_ns}, leaderMemberId={membership.leader_member_id}, "
                f"memberId={membership.member_id}, activeMembers={members}")
    return membership


# (expected consensus module state, wait for the toggle to return to NEUTRAL, default timeout ms) per command
_TOGGLES = {
    "snapshot": ("ACTIVE", True, 30_000),
    "suspend": ("ACTIVE", False, 1_000),
    "resume": ("SUSPENDED", True, 1_000),
    "shutdown": ("ACTIVE", False, 1_000),
    "abort": ("ACTIVE", False, 1_000),
}


def toggle_cluster_state(cluster_dir: str | os.PathLike[str], command: str, out: Out = None,
                         timeout_ms: int = 0) -> bool:
    """``snapshot``, ``suspend``, ``resume``, ``shutdown`` or ``abort`` on the leader, as Aeron's
    ``ClusterToolOperator.toggleClusterState``: the node must be the leader and its consensus module in the
    expected state; the control toggle is moved from NEUTRAL to the action, and for ``snapshot`` and ``resume``
    watched until the leader puts it back. Prints ``Member [<id>]: <TOGGLE> applied successfully`` or why not."""
    expected_name, wait, default_timeout_ms = _TOGGLES[command]
    target = ToggleState[command.upper()]
    if not mark_file_exists(cluster_dir) and timeout_ms <= 0:
        _print(out, f"{ClusterMarkFile.FILENAME} does not exist.")
        return False
    with open_mark_file(cluster_dir, timeout_ms) as mark:
        cluster_id = mark.cluster_id()
        control = mark.load_control_properties()
    membership = query_cluster_members(control, max(1000, timeout_ms))
    if membership is None:
        _print(out, "Timed out querying cluster.")
        return False
    prefix = f"Member [{membership.member_id}]: "
    if membership.leader_member_id != membership.member_id:
        _print(out, f"{prefix}Current node is not the leader (leaderMemberId = {membership.leader_member_id}), "
                    f"unable to {target.name}")
        return False
    cnc_file = pathlib.Path(control.aeron_directory_name) / "cnc.dat"
    if not cnc_file.exists():
        _print(out, f"{prefix}Unable to locate media driver. C`n`C file [{cnc_file.absolute()}] does not exist.")
        return False
    with map_counters(cnc_file) as mapped:
        state = State.find(mapped.reader, cluster_id)
        if state is None:
            _print(out, f"{prefix}Unable to resolve state of consensus module.")
            return False
        if state.name != expected_name:
            _print(out, f"{prefix}Unable to {target.name} as the state of the consensus module is {state.name}, "
                        f"but needs to be {expected_name}")
            return False
        toggle = find_control_toggle(mapped.reader, mapped.values, cluster_id)
        if toggle is None:
            _print(out, f"{prefix}Failed to find control toggle")
            return False
        if not target.toggle(toggle):
            _print(out, f"{prefix}Failed to apply {target.name}, current toggle value = "
                        f"{ToggleState.get(toggle).name}")
            return False
        if wait:
            toggle_timeout_ms = max(default_timeout_ms, timeout_ms)
            deadline = time.monotonic() + toggle_timeout_ms / 1000
            current = None
            while current is not ToggleState.NEUTRAL:
                time.sleep(0.001)
                if time.monotonic() > deadline:
                    break
                current = ToggleState.get(toggle)
            if current is not ToggleState.NEUTRAL:
                _print(out, f"{prefix}Timed out after {toggle_timeout_ms}ms waiting for {target.name} to complete.")
                return False
        _print(out, f"{prefix}{target.name} applied successfully")
        return True


# -- command line ------------------------------------------------------------------------------------------------

_COMMANDS: dict[str, str] = {
    "describe": "prints out all descriptors in the mark file.",
    "pid": "prints PID of cluster component.",
    "recovery-plan": "[service count] prints recovery plan of cluster component.",
    "recording-log": "prints recording log of cluster component.",
    "sort-recording-log": "reorders entries in the recording log to match the order in memory.",
    "seed-recording-log-from-snapshot": "creates a new recording log based on the latest valid snapshot.",
    "errors": "prints Aeron and cluster component error logs.",
    "list-members": "prints leader memberId and active members.",
    "invalidate-latest-snapshot": "marks the latest snapshot as a invalid so the previous is loaded.",
    "is-leader": "returns zero if the cluster node is leader, non-zero if not.",
    "snapshot": "triggers a snapshot on the leader.",
    "suspend": "suspends appending to the log.",
    "resume": "resumes appending to the log.",
    "shutdown": "initiates an orderly stop of the cluster with a snapshot.",
    "abort": "stops the cluster without a snapshot.",
    "describe-latest-cm-snapshot": "<archive dir> prints the contents of the latest valid consensus module "
                                   "snapshot.",
}
_DESTRUCTIVE = {
    "sort-recording-log": "The recording log will be rewritten in sorted order.",
    "seed-recording-log-from-snapshot": "The recording log will be replaced by the latest valid snapshot alone "
                                        "(a copy is kept in recording.log.bak).",
    "invalidate-latest-snapshot": "The latest snapshot will be marked invalid.",
}
HELP_PREFIX = "Usage: <cluster-dir> <command> [options]"


def print_help(out: IO[str]) -> None:
    """The commands and what they do, as Aeron's ``ClusterToolCommand.printHelp`` lays them out; the usage line
    names the command as it was started (``aeron-cluster-tool`` or ``python -m aeron.cluster.tool``)."""
    from aeron.common.cli import program_name
    out.write(HELP_PREFIX.replace("Usage: ", f"Usage: {program_name('aeron-cluster-tool', 'aeron.cluster.tool')} ", 1)
              + "\n")
    width = max(len(name) for name in _COMMANDS) + 1
    for name, description in _COMMANDS.items():
        out.write(" " * (width - len(name)) + f"{name}: {description}\n")
    out.write(" " * (width - len("--yes")) + "--yes: after a command that rewrites the recording log: do not ask.\n")


def _confirm(command: str, out: IO[str], stdin: IO[str]) -> bool:
    # only an explicit yes goes on: an empty line, anything else or the end of the input is a no
    out.write(f"WARNING: {_DESTRUCTIVE[command]} Continue? (y/n): ")
    out.flush()
    answer = stdin.readline()
    return answer.strip().lower() in ("y", "yes")


def _timeout_ms() -> int:
    # aeron.cluster.tool.timeout (AERON_CLUSTER_TOOL_TIMEOUT): how long to wait for mark files
    return int(Setting("timeout_ns", TIMEOUT_PROP_NAME, 0, parse_duration_ns).value()) // 1_000_000


def _connect_archive(cluster_dir: str) -> Any:
    # Aeron's tool connects an AeronArchive client configured by the aeron.archive.* properties; the driver
    # directory defaults to the one the node's mark file names
    ctx = AeronArchiveContext(client_name="cluster-tool")
    if ctx.aeron_dir is None and mark_file_exists(cluster_dir):
        with open_mark_file(cluster_dir) as mark:
            ctx.aeron_dir = mark.load_control_properties().aeron_directory_name
    return AeronArchive.connect(ctx)


def main(argv: Sequence[str] | None = None, out: IO[str] | None = None, stdin: IO[str] | None = None) -> int:
    """``python -m aeron.cluster.tool <cluster-dir> <command> [args] [--yes]``; returns the exit status (0, 1
    for is-leader's follower, -1 for a failure as Aeron's tool)."""
    args = list(sys.argv[1:] if argv is None else argv)
    out = out or sys.stdout
    stdin = stdin or sys.stdin
    if args == ["--version"]:
        out.write(VERSION_TEXT + "\n")
        return SUCCESS
    if args[:1] in (["-h"], ["--help"]):        # not a cluster directory: the usage
        print_help(out)
        return SUCCESS
    yes = "--yes" in args or "-y" in args
    args = [a for a in args if a not in ("--yes", "-y")]
    if len(args) < 2:
        print_help(out)
        return FAILURE
    cluster_dir, command, rest = args[0], args[1], args[2:]
    if not os.path.exists(cluster_dir):
        sys.stderr.write(f"ERR: cluster directory not found: {os.path.abspath(cluster_dir)}\n")
        print_help(out)
        return FAILURE
    if command not in _COMMANDS:
        out.write(f"Unknown command: {command}\n")
        print_help(out)
        return FAILURE
    if command in _DESTRUCTIVE and not yes and not _confirm(command, out, stdin):
        out.write("Aborted: nothing was changed.\n")
        return FAILURE
    try:
        return _run(cluster_dir, command, rest, out)
    except (AeronError, OSError, ValueError) as ex:
        out.flush()
        sys.stderr.write(f"{type(ex).__name__}: {ex}\n")
        return FAILURE


def _stderr(text: str) -> None:
    sys.stderr.write(text + "\n")


def _run(cluster_dir: str, command: str, rest: list[str], out: IO[str]) -> int:
    timeout_ms = _timeout_ms()
    if command == "describe":
        try:
            describe(cluster_dir, out, timeout_ms=timeout_ms, log=_stderr)
        except ClusterToolError:
            pass                                    # Aeron's describe ignores failures
        return SUCCESS
    if command == "pid":
        if not mark_file_exists(cluster_dir) and timeout_ms <= 0:
            return FAILURE
        out.write(f"{pid(cluster_dir, timeout_ms)}\n")
    elif command == "recording-log":
        recording_log(cluster_dir, out)
    elif command == "sort-recording-log":
        return SUCCESS if sort_recording_log(cluster_dir) else FAILURE
    elif command == "seed-recording-log-from-snapshot":
        seed_recording_log_from_snapshot(cluster_dir)
    elif command == "errors":
        errors(cluster_dir, out, timeout_ms=timeout_ms, log=_stderr)
    elif command == "invalidate-latest-snapshot":
        return SUCCESS if invalidate_latest_snapshot(cluster_dir, out) else FAILURE
    elif command == "is-leader":
        return is_leader(cluster_dir, out, timeout_ms, log=_stderr)
    elif command == "list-members":
        try:
            return SUCCESS if list_members(cluster_dir, out, timeout_ms) is not None else FAILURE
        except ClusterToolError:
            return FAILURE
    elif command in _TOGGLES:
        return SUCCESS if toggle_cluster_state(cluster_dir, command, out, timeout_ms) else FAILURE
    elif command == "recovery-plan":
        if not rest:
            print_help(out)
            return FAILURE
        service_count = int(rest[0])
        with _connect_archive(cluster_dir) as archive:
            recovery_plan(cluster_dir, service_count, archive, out)
    elif command == "describe-latest-cm-snapshot":
        if not rest:
            sys.stderr.write("ERR: describe-latest-cm-snapshot reads the node's archive directory: give it, as in "
                             "`describe-latest-cm-snapshot <archive-dir>`\n")
            return FAILURE
        try:
            describe_latest_cm_snapshot(cluster_dir, rest[0], out, timeout_ms)
        except SnapshotNotFoundError:
            return FAILURE
    return SUCCESS


if __name__ == "__main__":
    sys.exit(main())
