# SPDX-License-Identifier: Apache-2.0
"""``recording.log``: the index of a cluster node's log recording terms and snapshot recordings, byte-compatible
with Aeron's ``RecordingLog``.

The file is a flat sequence of entries, each at a 64-byte aligned offset, little-endian, no file header:
recordingId int64 @0, leadershipTermId int64 @8, termBaseLogPosition int64 @16, logPosition int64 @24,
timestamp int64 @32, serviceId int32 @40, entryType int32 @44 (TERM 0, SNAPSHOT 1, STANDBY_SNAPSHOT 2; bit 31 set
marks an invalidated entry, -1 a removed one), and for a STANDBY_SNAPSHOT an ASCII archive endpoint with an int32
length @48. An entry is 64 bytes (``align(52 + endpoint, 64)`` for a standby snapshot); updates rewrite single
fields in place. In memory the entries are sorted as Aeron sorts them (term, base position, TERM before the
snapshot types, then file order for terms, log position and descending service id for snapshots), which is the
order ``ClusterTool recording-log`` prints.
"""
from __future__ import annotations

import bisect
import dataclasses
import os
import pathlib
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from aeron.archive.configuration import NULL_POSITION
from aeron.common.constants import NULL_VALUE
from aeron.common.errors import ClusterError, CorruptFileError

__all__ = ["ENTRY_TYPE_INVALID_FLAG", "ENTRY_TYPE_SNAPSHOT", "ENTRY_TYPE_STANDBY_SNAPSHOT", "ENTRY_TYPE_TERM",
           "Entry", "Log", "RECORDING_LOG_FILE_NAME", "RecordingExtentSource", "RecordingLog", "RecoveryPlan",
           "Snapshot"]

SERVICE_ID = -1                         # ConsensusModule.Configuration.SERVICE_ID: the consensus module's entries

RECORDING_LOG_FILE_NAME = "recording.log"
ENTRY_TYPE_TERM = 0
ENTRY_TYPE_SNAPSHOT = 1
ENTRY_TYPE_STANDBY_SNAPSHOT = 2
ENTRY_TYPE_INVALID_FLAG = -(1 << 31)    # 1 << 31 as Java's int
RECORDING_ID_OFFSET = 0
LEADERSHIP_TERM_ID_OFFSET = 8
TERM_BASE_LOG_POSITION_OFFSET = 16
LOG_POSITION_OFFSET = 24
TIMESTAMP_OFFSET = 32
SERVICE_ID_OFFSET = 40
ENTRY_TYPE_OFFSET = 44
ENDPOINT_OFFSET = 48
MAX_ENTRY_LENGTH = 4096
MAX_ENDPOINT_LENGTH = MAX_ENTRY_LENGTH - ENDPOINT_OFFSET - 4
RECORD_ALIGNMENT = 64


def _align(value: int, alignment: int) -> int:
    return (value + alignment - 1) & ~(alignment - 1)


def type_as_string(entry_type: int) -> str:
    """TERM, SNAPSHOT, STANDBY_SNAPSHOT or UNKNOWN, as Aeron prints an entry type."""
    return {ENTRY_TYPE_TERM: "TERM", ENTRY_TYPE_SNAPSHOT: "SNAPSHOT",
            ENTRY_TYPE_STANDBY_SNAPSHOT: "STANDBY_SNAPSHOT"}.get(entry_type, "UNKNOWN")


def _java_bool(value: bool) -> str:
    return "true" if value else "false"


@dataclasses.dataclass(frozen=True, eq=False)
class Entry:
    """One entry of the recording log (Aeron's ``RecordingLog.Entry``); ``position`` is its file offset (-1 until
    written) and ``entry_index`` its place in the file, counting removed entries."""

    recording_id: int
    leadership_term_id: int
    term_base_log_position: int
    log_position: int
    timestamp: int
    service_id: int
    type: int
    archive_endpoint: str | None
    is_valid: bool
    position: int
    entry_index: int

    def __post_init__(self) -> None:
        """Aeron refuses a standby snapshot without the endpoint of its archive."""
        if self.type == ENTRY_TYPE_STANDBY_SNAPSHOT and not self.archive_endpoint:
            raise ClusterError("Remote snapshots must has a valid endpoint")

    def length(self) -> int:
        """Bytes the entry takes in the file, alignment included."""
        if self.type == ENTRY_TYPE_STANDBY_SNAPSHOT:
            return _align(ENDPOINT_OFFSET + 4 + len(self.archive_endpoint or ""), RECORD_ALIGNMENT)
        return _align(ENDPOINT_OFFSET, RECORD_ALIGNMENT)

    def encode(self) -> bytes:
        """The entry's bytes in the file, the invalid flag set when it is not valid, zero padded to
        :meth:`length` (Aeron's ``writeEntryToBuffer`` leaves the padding as its buffer last held it)."""
        entry_type = self.type | ENTRY_TYPE_INVALID_FLAG if not self.is_valid else self.type
        out = bytearray(self.length())
        out[0:48] = b"".join([
            v.to_bytes(8, "little", signed=True) for v in (self.recording_id, self.leadership_term_id,
                                                            self.term_base_log_position, self.log_position,
                                                            self.timestamp)]) + \
            self.service_id.to_bytes(4, "little", signed=True) + entry_type.to_bytes(4, "little", signed=True)
        if self.archive_endpoint:
            endpoint = self.archive_endpoint.encode("ascii")
            out[ENDPOINT_OFFSET:ENDPOINT_OFFSET + 4 + len(endpoint)] = len(endpoint).to_bytes(4, "little") + endpoint
        return bytes(out)

    def __eq__(self, other: object) -> bool:
        """Aeron's equality: every field but the file position and the endpoint."""
        if not isinstance(other, Entry):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        """Consistent with equality."""
        return hash(self._key())

    def _key(self) -> tuple[int, ...]:
        return (self.recording_id, self.leadership_term_id, self.term_base_log_position, self.log_position,
                self.timestamp, self.service_id, self.type, self.entry_index, int(self.is_valid))

    def __str__(self) -> str:
        """Aeron's ``Entry.toString``."""
        endpoint = f", archiveEndpoint={self.archive_endpoint}" if self.type == ENTRY_TYPE_STANDBY_SNAPSHOT else ""
        return (f"Entry{{recordingId={self.recording_id}, leadershipTermId={self.leadership_term_id}, "
                f"termBaseLogPosition={self.term_base_log_position}, logPosition={self.log_position}, "
                f"timestamp={self.timestamp}, serviceId={self.service_id}, type={type_as_string(self.type)}, "
                f"isValid={_java_bool(self.is_valid)}, entryIndex={self.entry_index}{endpoint}}}")


@dataclasses.dataclass(frozen=True)
class Snapshot:
    """A snapshot of the consensus module or a service in a recovery plan (Aeron's ``RecordingLog.Snapshot``)."""

    recording_id: int
    leadership_term_id: int
    term_base_log_position: int
    log_position: int
    timestamp: int
    service_id: int

    def __str__(self) -> str:
        """Java's record ``toString``."""
        return (f"Snapshot[recordingId={self.recording_id}, leadershipTermId={self.leadership_term_id}, "
                f"termBaseLogPosition={self.term_base_log_position}, logPosition={self.log_position}, "
                f"timestamp={self.timestamp}, serviceId={self.service_id}]")


@dataclasses.dataclass(frozen=True)
class Log:
    """The log recording to replay in a recovery plan, with its archive extent (Aeron's ``RecordingLog.Log``)."""

    recording_id: int
    leadership_term_id: int
    term_base_log_position: int
    log_position: int
    start_position: int
    stop_position: int
    initial_term_id: int
    term_buffer_length: int
    mtu_length: int
    session_id: int

    def __str__(self) -> str:
        """Java's record ``toString``."""
        return (f"Log[recordingId={self.recording_id}, leadershipTermId={self.leadership_term_id}, "
                f"termBaseLogPosition={self.term_base_log_position}, logPosition={self.log_position}, "
                f"startPosition={self.start_position}, stopPosition={self.stop_position}, "
                f"initialTermId={self.initial_term_id}, termBufferLength={self.term_buffer_length}, "
                f"mtuLength={self.mtu_length}, sessionId={self.session_id}]")


@dataclasses.dataclass(frozen=True)
class RecoveryPlan:
    """What a starting consensus module recovers from (Aeron's ``RecordingLog.RecoveryPlan``): the latest
    snapshots, consensus module first then service 0, 1, ..., and the log recording to replay after them."""

    last_leadership_term_id: int
    last_term_base_log_position: int
    appended_log_position: int
    committed_log_position: int
    snapshots: list[Snapshot]
    log: Log | None

    def __str__(self) -> str:
        """Java's record ``toString`` (what ``ClusterTool recovery-plan`` prints)."""
        snapshots = "[" + ", ".join(str(s) for s in self.snapshots) + "]"
        return (f"RecoveryPlan[lastLeadershipTermId={self.last_leadership_term_id}, "
                f"lastTermBaseLogPosition={self.last_term_base_log_position}, "
                f"appendedLogPosition={self.appended_log_position}, "
                f"committedLogPosition={self.committed_log_position}, snapshots={snapshots}, "
                f"log={'null' if self.log is None else self.log}]")


class RecordingExtentSource(Protocol):
    """Where a recovery plan learns a recording's extent: ``AeronArchive.list_recording``'s signature (the
    consumer gets a descriptor with start/stop positions, initial term id, term buffer and MTU lengths and
    session id; the result is 1, or 0 for an unknown recording)."""

    def list_recording(self, recording_id: int, consumer: Callable[[Any], Any]) -> int:
        """Give the recording's descriptor to ``consumer``; 1, or 0 when unknown."""


def _recording_extent(archive: RecordingExtentSource, recording_id: int) -> Any:
    found: list[Any] = []
    if archive.list_recording(recording_id, found.append) == 0 or not found:
        raise ClusterError(f"unknown recording id: {recording_id}")
    return found[0]


def _sort_key(entry: Entry) -> tuple[int, ...]:
    # Aeron's ENTRY_COMPARATOR: SNAPSHOT after every other type, else by type; terms by file order, snapshots
    # by log position then descending service id
    rank = (1, ENTRY_TYPE_SNAPSHOT) if entry.type == ENTRY_TYPE_SNAPSHOT else (0, entry.type)
    if entry.type == ENTRY_TYPE_TERM:
        tail: tuple[int, ...] = (entry.entry_index, 0)
    else:
        tail = (entry.log_position, -entry.service_id)
    return (entry.leadership_term_id, entry.term_base_log_position) + rank + tail


def is_valid_snapshot(entry: Entry) -> bool:
    """A valid SNAPSHOT entry."""
    return entry.is_valid and entry.type == ENTRY_TYPE_SNAPSHOT


def is_valid_any_snapshot(entry: Entry) -> bool:
    """A valid SNAPSHOT or STANDBY_SNAPSHOT entry."""
    return entry.is_valid and entry.type in (ENTRY_TYPE_SNAPSHOT, ENTRY_TYPE_STANDBY_SNAPSHOT)


def _is_valid_term(entry: Entry) -> bool:
    return entry.is_valid and entry.type == ENTRY_TYPE_TERM


class _Long2LongHashMap:
    """Agrona's ``Long2LongHashMap`` (open addressing, load factor 0.65, missing value -1), ported for its
    iteration order: ``RecordingLog.toString`` prints its term index map in that order."""

    _MASK64 = (1 << 64) - 1

    def __init__(self) -> None:
        self._size = 0
        self._capacity(8)

    def _capacity(self, capacity: int) -> None:
        self._threshold = int(capacity * 0.65)
        self._entries = [NULL_VALUE] * (capacity * 2)

    @classmethod
    def _even_hash(cls, key: int, mask: int) -> int:
        x = key & cls._MASK64
        x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & cls._MASK64
        x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & cls._MASK64
        x ^= x >> 31
        h = (x ^ (x >> 32)) & 0xFFFFFFFF
        return ((h << 1) - (h << 8)) & mask

    def _index_of(self, key: int) -> int:
        entries, mask = self._entries, len(self._entries) - 1
        index = self._even_hash(key, mask)
        while entries[index + 1] != NULL_VALUE:
            if entries[index] == key:
                return index
            index = (index + 2) & mask
        return -1

    def get(self, key: int) -> int:
        index = self._index_of(key)
        return NULL_VALUE if index < 0 else self._entries[index + 1]

    def __contains__(self, key: int) -> bool:
        return self._index_of(key) >= 0

    def put(self, key: int, value: int) -> None:
        entries, mask = self._entries, len(self._entries) - 1
        index = self._even_hash(key, mask)
        while entries[index + 1] != NULL_VALUE:
            if entries[index] == key:
                break
            index = (index + 2) & mask
        if entries[index + 1] == NULL_VALUE:
            self._size += 1
            entries[index] = key
        entries[index + 1] = value
        if self._size > self._threshold:
            self._rehash(len(entries))

    def _rehash(self, capacity: int) -> None:
        old = self._entries
        self._capacity(capacity)
        entries, mask = self._entries, len(self._entries) - 1
        for i in range(1, len(old), 2):
            if old[i] != NULL_VALUE:
                index = self._even_hash(old[i - 1], mask)
                while entries[index + 1] != NULL_VALUE:
                    index = (index + 2) & mask
                entries[index], entries[index + 1] = old[i - 1], old[i]

    def remove(self, key: int) -> None:
        index = self._index_of(key)
        if index < 0:
            return
        entries, mask = self._entries, len(self._entries) - 1
        entries[index + 1] = NULL_VALUE
        self._size -= 1
        delete = index
        while True:                                     # compactChain
            index = (index + 2) & mask
            if entries[index + 1] == NULL_VALUE:
                break
            h = self._even_hash(entries[index], mask)
            if (index < h and (h <= delete or delete <= index)) or (h <= delete <= index):
                entries[delete], entries[delete + 1] = entries[index], entries[index + 1]
                entries[index + 1] = NULL_VALUE
                delete = index

    def clear(self) -> None:
        if self._size > 0:
            self._entries = [NULL_VALUE] * len(self._entries)
            self._size = 0

    def compact(self) -> None:
        ideal = round(self._size * (1.0 / 0.65))
        capacity = 8
        while capacity < max(8, ideal):
            capacity <<= 1
        self._rehash(capacity)

    def add_to_values_of_keys_above(self, key: int, delta: int) -> None:
        entries = self._entries
        for i in range(1, len(entries), 2):
            if entries[i] != NULL_VALUE and entries[i - 1] > key:
                entries[i] += delta

    def items(self) -> Iterator[tuple[int, int]]:
        """In Agrona's iteration order: backwards from a free slot, wrapping round."""
        entries = self._entries
        capacity = len(entries)
        key_index = capacity
        if entries[capacity - 1] != NULL_VALUE:
            for i in range(1, capacity, 2):
                if entries[i] == NULL_VALUE:
                    key_index = i - 1
                    break
        mask = capacity - 1
        position = key_index + capacity - 2
        while position >= key_index:
            index = position & mask
            if entries[index + 1] != NULL_VALUE:
                yield entries[index], entries[index + 1]
            position -= 2

    def __str__(self) -> str:
        return "{" + ", ".join(f"{k}={v}" for k, v in self.items()) + "}"


class RecordingLog:
    """The recording log of a cluster directory (Aeron's ``RecordingLog``): ``RecordingLog(cluster_dir,
    create_new)`` opens ``cluster_dir/recording.log`` (creating it when ``create_new``) and loads its entries."""

    def __init__(self, parent_dir: str | os.PathLike[str], create_new: bool = False) -> None:
        """ClusterError when the file is missing and ``create_new`` is False, or its TERM entries disagree on the
        log recording; CorruptFileError (path and offset) for a standby snapshot's impossible endpoint length."""
        self.path = pathlib.Path(parent_dir) / RECORDING_LOG_FILE_NAME
        is_new = not self.path.exists()
        flags = os.O_RDWR | (os.O_CREAT if create_new else 0)
        try:
            self._fd = os.open(self.path, flags, 0o644)
        except FileNotFoundError:
            raise ClusterError(f"no recording log: {self.path}") from None
        self._term_recording_id = NULL_VALUE
        self._next_entry_index = 0
        self._entries: list[Entry] = []
        self._cache_index = _Long2LongHashMap()
        self._invalid_snapshots: list[int] = []
        try:
            if is_new:
                _sync_directory(self.path.parent)
            else:
                self.reload()
        except BaseException:
            os.close(self._fd)
            self._fd = -1
            raise

    # -- lifecycle ----------------------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the file (idempotent)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> RecordingLog:  # noqa: PYI034 (not meant to be subclassed)
        """The recording log itself."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close it."""
        self.close()

    def force(self, file_sync_level: int) -> None:
        """Make the file durable when ``file_sync_level`` > 0: its data (1) or data and metadata (2)."""
        if file_sync_level > 0:
            (os.fsync if file_sync_level > 1 else os.fdatasync)(self._fd)

    # -- reading ------------------------------------------------------------------------------------------------

    @property
    def entries(self) -> list[Entry]:
        """The entries in Aeron's sorted order (a copy)."""
        return list(self._entries)

    @property
    def next_entry_index(self) -> int:
        """The index the next appended entry gets."""
        return self._next_entry_index

    def reload(self) -> None:
        """Read the file again (Aeron's ``reload``): entries while more than 48 bytes remain, removed ones skipped
        but counted, a standby snapshot only when its endpoint is all there."""
        self._entries = []
        self._cache_index.clear()
        self._invalid_snapshots = []
        self._cache_index.compact()
        self._next_entry_index = 0
        size = os.fstat(self._fd).st_size
        data = os.pread(self._fd, size, 0) if size else b""
        consumed = 0
        while consumed + ENDPOINT_OFFSET < len(data):
            raw_type = int.from_bytes(data[consumed + 44:consumed + 48], "little", signed=True)
            entry_type = raw_type & ~ENTRY_TYPE_INVALID_FLAG
            endpoint = None
            if entry_type == ENTRY_TYPE_STANDBY_SNAPSHOT and raw_type != NULL_VALUE:
                at = consumed + ENDPOINT_OFFSET
                if at + 4 > len(data):
                    break
                length = int.from_bytes(data[at:at + 4], "little", signed=True)
                if length < 0 or length > MAX_ENDPOINT_LENGTH:
                    raise CorruptFileError(f"standby snapshot archive endpoint of {length} bytes", path=str(self.path),
                                           offset=at)
                if at + 4 + length > len(data):
                    break
                endpoint = data[at + 4:at + 4 + length].decode("ascii", "replace")
            recording_id, term_id, base, log_position, timestamp = (
                int.from_bytes(data[consumed + o:consumed + o + 8], "little", signed=True) for o in range(0, 40, 8))
            service_id = int.from_bytes(data[consumed + 40:consumed + 44], "little", signed=True)
            if raw_type == NULL_VALUE:
                length_of_entry = _align(ENDPOINT_OFFSET, RECORD_ALIGNMENT)
            else:
                entry = Entry(recording_id, term_id, base, log_position, timestamp, service_id, entry_type, endpoint,
                              (raw_type & ENTRY_TYPE_INVALID_FLAG) == 0, consumed, self._next_entry_index)
                if entry_type == ENTRY_TYPE_TERM:
                    self._validate_term_recording_id(entry.recording_id)
                self._entries.append(entry)
                length_of_entry = entry.length()
            consumed += length_of_entry
            self._next_entry_index += 1
        self._entries.sort(key=_sort_key)
        for i, entry in enumerate(self._entries):
            if _is_valid_term(entry):
                self._cache_index.put(entry.leadership_term_id, i)
            if not entry.is_valid and entry.type in (ENTRY_TYPE_SNAPSHOT, ENTRY_TYPE_STANDBY_SNAPSHOT):
                self._invalid_snapshots.append(i)

    def find_last_term(self) -> Entry | None:
        """The last valid TERM entry, or None."""
        for entry in reversed(self._entries):
            if _is_valid_term(entry):
                return entry
        return None

    def find_last_term_recording_id(self) -> int:
        """The log recording id of the last term, or -1."""
        last = self.find_last_term()
        return last.recording_id if last is not None else NULL_VALUE

    def get_term_entry(self, leadership_term_id: int) -> Entry:
        """The TERM entry of ``leadership_term_id`` (ClusterError when unknown)."""
        entry = self.find_term_entry(leadership_term_id)
        if entry is None:
            raise ClusterError(f"unknown leadershipTermId={leadership_term_id}")
        return entry

    def find_term_entry(self, leadership_term_id: int) -> Entry | None:
        """The TERM entry of ``leadership_term_id``, or None."""
        index = self._cache_index.get(leadership_term_id)
        return self._entries[index] if index != NULL_VALUE else None

    def is_unknown(self, leadership_term_id: int) -> bool:
        """True when no valid TERM entry has this term id."""
        return leadership_term_id not in self._cache_index

    def get_term_timestamp(self, leadership_term_id: int) -> int:
        """The timestamp of the term's entry, or -1."""
        entry = self.find_term_entry(leadership_term_id)
        return entry.timestamp if entry is not None else NULL_VALUE

    def get_latest_snapshot(self, service_id: int) -> Entry | None:
        """The newest valid snapshot of ``service_id`` (-1: the consensus module) in the newest complete set."""
        for i in range(len(self._entries) - 1, -1, -1):
            entry = self._entries[i]
            if is_valid_snapshot(entry) and entry.service_id == SERVICE_ID:
                if service_id == SERVICE_ID:
                    return entry
                at = i - (service_id + 1)
                if at >= 0:
                    snapshot = self._entries[at]
                    if is_valid_snapshot(snapshot) and snapshot.service_id == service_id:
                        return snapshot
        return None

    def latest_standby_snapshots(self, service_count: int) -> dict[str, list[Entry]]:
        """Per archive endpoint, the newest complete standby snapshot set (``service_count`` + 1 entries)."""
        by_endpoint: dict[str, dict[int, list[Entry]]] = {}
        for entry in reversed(self._entries):
            if entry.type == ENTRY_TYPE_STANDBY_SNAPSHOT and entry.is_valid:
                by_endpoint.setdefault(entry.archive_endpoint or "", {}).setdefault(entry.log_position, []).append(
                    entry)
        latest = {}
        for endpoint, by_position in by_endpoint.items():
            for position in sorted(by_position, reverse=True):
                if len(by_position[position]) == service_count + 1:
                    latest[endpoint] = by_position[position]
                    break
        return latest

    def find_snapshot_at_or_before_or_lowest(self, log_position: int, service_count: int) -> list[Snapshot] | None:
        """The newest complete snapshot set at or before ``log_position``, else the oldest complete one."""
        self._entries.sort(key=_sort_key)
        candidates = [i for i in range(len(self._entries) - 1, -1, -1)
                      if is_valid_snapshot(self._entries[i]) and self._entries[i].service_id == SERVICE_ID]
        for i in candidates:
            if self._entries[i].log_position <= log_position and self._complete_set(service_count, i):
                return [_snapshot_of(e) for e in self._entries[i - service_count:i + 1]]
        for i in reversed(candidates):
            if self._complete_set(service_count, i):
                return [_snapshot_of(e) for e in self._entries[i - service_count:i + 1]]
        return None

    def _complete_set(self, service_count: int, index: int) -> bool:
        cm = self._entries[index]
        for i in range(1, service_count + 1):
            if index - i < 0:
                return False
            entry = self._entries[index - i]
            if entry.type != ENTRY_TYPE_SNAPSHOT or entry.leadership_term_id != cm.leadership_term_id or \
                    entry.log_position != cm.log_position:
                return False
        return True

    def create_recovery_plan(self, archive: RecordingExtentSource, service_count: int,
                             replicated_recording_id: int = NULL_VALUE) -> RecoveryPlan:
        """The recovery plan (Aeron's ``createRecoveryPlan``): the newest valid snapshot set (consensus module
        then services 0..``service_count``-1) and the last valid term's log recording, whose extent ``archive``
        gives (an AeronArchive client, or anything with its ``list_recording``); an empty log with
        ``replicated_recording_id`` plans from that recording alone."""
        snapshots: list[Snapshot] = []
        log = self._plan_recovery(snapshots, archive, service_count, replicated_recording_id)
        last_term, last_base, committed, appended = NULL_VALUE, 0, 0, 0
        if snapshots:
            first = snapshots[0]
            last_term, last_base = first.leadership_term_id, first.term_base_log_position
            appended = committed = first.log_position
        if log is not None:
            last_term, last_base = log.leadership_term_id, log.term_base_log_position
            appended = log.stop_position
            committed = log.log_position if log.log_position != NULL_POSITION else committed
        return RecoveryPlan(last_term, last_base, appended, committed, snapshots, log)

    def _plan_recovery(self, snapshots: list[Snapshot], archive: RecordingExtentSource, service_count: int,
                       replicated_recording_id: int) -> Log | None:
        entries = self._entries
        if not entries:
            if replicated_recording_id != NULL_VALUE:
                extent = _recording_extent(archive, replicated_recording_id)
                return Log(replicated_recording_id, NULL_VALUE, 0, 0, extent.start_position, extent.stop_position,
                           extent.initial_term_id, extent.term_buffer_length, extent.mtu_length, extent.session_id)
            return None
        log_index = snapshot_index = -1
        for i in range(len(entries) - 1, -1, -1):
            entry = entries[i]
            if snapshot_index == -1 and is_valid_snapshot(entry) and entry.service_id == SERVICE_ID:
                snapshot_index = i
            elif log_index == -1 and _is_valid_term(entry) and entry.recording_id != NULL_VALUE:
                log_index = i
            elif snapshot_index != -1 and log_index != -1:
                break
        if snapshot_index != -1:
            self._add_snapshots(snapshots, service_count, snapshot_index)
        if log_index == -1:
            return None
        entry = entries[log_index]
        extent = _recording_extent(archive, entry.recording_id)
        start = extent.start_position if snapshot_index == -1 else snapshots[0].log_position
        return Log(entry.recording_id, entry.leadership_term_id, entry.term_base_log_position, entry.log_position,
                   start, extent.stop_position, extent.initial_term_id, extent.term_buffer_length,
                   extent.mtu_length, extent.session_id)

    def _add_snapshots(self, snapshots: list[Snapshot], service_count: int, snapshot_index: int) -> None:
        cm = self._entries[snapshot_index]
        snapshots.append(_snapshot_of(cm))
        for i in range(1, service_count + 1):
            if snapshot_index - i < 0:
                raise ClusterError(f"snapshot missing for service at index {i} in "
                                   f"[{', '.join(str(e) for e in self._entries)}]")
            entry = self._entries[snapshot_index - i]
            if entry.type == ENTRY_TYPE_SNAPSHOT and entry.leadership_term_id == cm.leadership_term_id and \
                    entry.log_position == cm.log_position:
                snapshots.insert(entry.service_id + 1, _snapshot_of(entry))

    # -- writing ------------------------------------------------------------------------------------------------

    def append_term(self, recording_id: int, leadership_term_id: int, term_base_log_position: int,
                    timestamp: int) -> None:
        """Append the TERM entry of a new leadership term: the previous term is committed at this term's base, and
        the entry's log position is the next term's base when that one is already known."""
        self._validate_term_recording_id(recording_id)
        log_position = NULL_POSITION
        if self._entries:
            if leadership_term_id in self._cache_index:
                raise ClusterError(f"duplicate TERM entry for leadershipTermId={leadership_term_id}")
            if leadership_term_id - 1 in self._cache_index:
                self.commit_log_position(leadership_term_id - 1, term_base_log_position)
            following = self.find_term_entry(leadership_term_id + 1)
            if following is not None:
                log_position = following.term_base_log_position
        index = self._append(ENTRY_TYPE_TERM, recording_id, leadership_term_id, term_base_log_position,
                             log_position, timestamp, NULL_VALUE, None)
        self._cache_index.put(leadership_term_id, index)

    def append_snapshot(self, recording_id: int, leadership_term_id: int, term_base_log_position: int,
                        log_position: int, timestamp: int, service_id: int) -> None:
        """Append a SNAPSHOT entry (or make valid again an invalidated one of the same term, positions and
        service)."""
        _validate_recording_id(recording_id)
        if not self._restore_invalid_snapshot(ENTRY_TYPE_SNAPSHOT, recording_id, leadership_term_id,
                                              term_base_log_position, log_position, timestamp, service_id, None):
            self._append(ENTRY_TYPE_SNAPSHOT, recording_id, leadership_term_id, term_base_log_position, log_position,
                         timestamp, service_id, None)

    def append_standby_snapshot(self, recording_id: int, leadership_term_id: int, term_base_log_position: int,
                                log_position: int, timestamp: int, service_id: int, archive_endpoint: str) -> None:
        """Append a STANDBY_SNAPSHOT entry naming the archive that holds it."""
        _validate_recording_id(recording_id)
        if not archive_endpoint:
            raise ClusterError("Remote snapshots must have a valid endpoint")
        if len(archive_endpoint) > MAX_ENDPOINT_LENGTH:
            raise ClusterError(f"Endpoint is too long: {len(archive_endpoint)} vs {MAX_ENDPOINT_LENGTH}")
        archive_endpoint.encode("ascii")
        if not self._restore_invalid_snapshot(ENTRY_TYPE_STANDBY_SNAPSHOT, recording_id, leadership_term_id,
                                              term_base_log_position, log_position, timestamp, service_id,
                                              archive_endpoint):
            self._append(ENTRY_TYPE_STANDBY_SNAPSHOT, recording_id, leadership_term_id, term_base_log_position,
                         log_position, timestamp, service_id, archive_endpoint)

    def commit_log_position(self, leadership_term_id: int, log_position: int) -> None:
        """Set the log position where a term ended (written in place)."""
        index = self._cache_index.get(leadership_term_id)
        if index == NULL_VALUE:
            raise ClusterError(f"unknown leadershipTermId={leadership_term_id}")
        entry = self._entries[index]
        if entry.log_position != log_position:
            self._write(entry.position + LOG_POSITION_OFFSET, log_position.to_bytes(8, "little", signed=True))
            self._entries[index] = dataclasses.replace(entry, log_position=log_position)

    def invalidate_entry(self, index: int) -> None:
        """Mark the entry at ``index`` of :attr:`entries` invalid (bit 31 of its type, written in place)."""
        entry = dataclasses.replace(self._entries[index], is_valid=False)
        self._entries[index] = entry
        if entry.type == ENTRY_TYPE_TERM:
            self._cache_index.remove(entry.leadership_term_id)
        elif entry.type in (ENTRY_TYPE_SNAPSHOT, ENTRY_TYPE_STANDBY_SNAPSHOT):
            self._invalid_snapshots.append(index)
        self._write(entry.position + ENTRY_TYPE_OFFSET,
                    (entry.type | ENTRY_TYPE_INVALID_FLAG).to_bytes(4, "little", signed=True))

    def invalidate_latest_snapshot(self) -> bool:
        """Invalidate every entry of the newest snapshot set (the consensus module's and its services'), so that
        the previous set is recovered from; False when there is none."""
        indices: list[int] = []
        high = NULL_POSITION
        for idx in range(len(self._entries) - 1, -1, -1):
            entry = self._entries[idx]
            if is_valid_any_snapshot(entry) and entry.service_id == SERVICE_ID:
                if entry.log_position < high:
                    break                       # an earlier snapshot: the newest set is found
                if entry.leadership_term_id not in self._cache_index:
                    raise ClusterError(f"no matching term for snapshot: leadershipTermId={entry.leadership_term_id}")
                if entry.log_position > high:
                    indices.clear()
                    high = entry.log_position
                indices.append(idx)
        found = bool(indices)
        while indices:
            service_id = SERVICE_ID
            for idx in range(indices.pop(), -1, -1):
                entry = self._entries[idx]
                if is_valid_any_snapshot(entry) and entry.service_id == service_id:
                    self.invalidate_entry(idx)
                    service_id += 1
                else:
                    break
        return found

    def remove_entry(self, leadership_term_id: int, entry_index: int) -> None:
        """Remove an entry (type -1 in the file) and reload."""
        for entry in reversed(self._entries):
            if entry.leadership_term_id == leadership_term_id and entry.entry_index == entry_index:
                self._write(entry.position + ENTRY_TYPE_OFFSET, NULL_VALUE.to_bytes(4, "little", signed=True))
                self.reload()
                return
        raise ClusterError(f"unknown entry index: {entry_index}")

    def ensure_coherent(self, recording_id: int, initial_log_leadership_term_id: int,
                        initial_term_base_log_position: int, leadership_term_id: int, term_base_log_position: int,
                        log_position: int, now_ns: int, timestamp: int, file_sync_level: int) -> None:
        """Make the log hold a TERM entry for every term up to ``leadership_term_id`` (Aeron's
        ``ensureCoherent``): missing terms appended, the previous open term committed, ``log_position`` set."""
        last = self.find_last_term()
        if last is None:
            for term_id in range(max(0, initial_log_leadership_term_id), leadership_term_id):
                self.append_term(recording_id, term_id, initial_term_base_log_position, timestamp)
            self.append_term(recording_id, leadership_term_id, term_base_log_position, timestamp)
        elif last.leadership_term_id < leadership_term_id:
            if last.log_position == NULL_VALUE:
                if term_base_log_position == NULL_VALUE:
                    raise ClusterError(f"Prior term was not committed: {last} and logTermBasePosition was not "
                                       f"specified: leadershipTermId = {leadership_term_id}, logTermBasePosition = "
                                       f"{term_base_log_position}, logPosition = {log_position}, nowNs = {now_ns}")
                self.commit_log_position(last.leadership_term_id, term_base_log_position)
                last = self.find_last_term()
                assert last is not None
            for term_id in range(last.leadership_term_id + 1, leadership_term_id):
                self.append_term(recording_id, term_id, last.log_position, timestamp)
            self.append_term(recording_id, leadership_term_id, last.log_position, timestamp)
        if log_position != NULL_VALUE:
            self.commit_log_position(leadership_term_id, log_position)
        self.force(file_sync_level)

    def _validate_term_recording_id(self, recording_id: int) -> None:
        _validate_recording_id(recording_id)
        if recording_id != self._term_recording_id:
            if self._term_recording_id == NULL_VALUE:
                self._term_recording_id = recording_id
            else:
                raise ClusterError(f"invalid TERM recordingId={recording_id}, expected recordingId="
                                   f"{self._term_recording_id}")

    def _restore_invalid_snapshot(self, entry_type: int, recording_id: int, leadership_term_id: int,
                                  term_base_log_position: int, log_position: int, timestamp: int, service_id: int,
                                  archive_endpoint: str | None) -> bool:
        for i in range(len(self._invalid_snapshots) - 1, -1, -1):
            index = self._invalid_snapshots[i]
            entry = self._entries[index]
            if entry.type == entry_type and entry.leadership_term_id == leadership_term_id and \
                    entry.term_base_log_position == term_base_log_position and \
                    entry.log_position == log_position and entry.service_id == service_id:
                valid = Entry(recording_id, leadership_term_id, term_base_log_position, log_position, timestamp,
                              service_id, entry_type, archive_endpoint, True, entry.position, entry.entry_index)
                self._write(entry.position, valid.encode())
                self._entries[index] = valid
                self._invalid_snapshots[i] = self._invalid_snapshots[-1]     # fastUnorderedRemove
                self._invalid_snapshots.pop()
                return True
        return False

    def _append(self, entry_type: int, recording_id: int, leadership_term_id: int, term_base_log_position: int,
                log_position: int, timestamp: int, service_id: int, endpoint: str | None) -> int:
        entry = Entry(recording_id, leadership_term_id, term_base_log_position, log_position, timestamp, service_id,
                      entry_type, endpoint, True, NULL_VALUE, self._next_entry_index)
        position = _align(os.fstat(self._fd).st_size, RECORD_ALIGNMENT)
        entry = dataclasses.replace(entry, position=position)
        self._write(position, entry.encode())
        self._next_entry_index += 1
        keys = [_sort_key(e) for e in self._entries]
        index = bisect.bisect_right(keys, _sort_key(entry))
        self._entries.insert(index, entry)
        if index < len(self._entries) - 1:
            self._cache_index.add_to_values_of_keys_above(leadership_term_id, 1)
            for i in range(len(self._invalid_snapshots) - 1, -1, -1):
                if self._invalid_snapshots[i] >= index:
                    self._invalid_snapshots[i] += 1
                else:
                    break
        return index

    def _write(self, position: int, data: bytes) -> None:
        if os.pwrite(self._fd, data, position) != len(data):
            raise ClusterError(f"failed to write field atomically: {self.path} @ {position}")

    def __str__(self) -> str:
        """Aeron's ``toString`` (what ``ClusterTool recording-log`` prints)."""
        return (f"RecordingLog{{entries=[{', '.join(str(e) for e in self._entries)}], "
                f"cacheIndex={self._cache_index}}}")


def _validate_recording_id(recording_id: int) -> None:
    if recording_id == NULL_VALUE:
        raise ClusterError(f"invalid recordingId={recording_id}")


def _snapshot_of(entry: Entry) -> Snapshot:
    return Snapshot(entry.recording_id, entry.leadership_term_id, entry.term_base_log_position, entry.log_position,
                    entry.timestamp, entry.service_id)


def _sync_directory(directory: pathlib.Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_entries(cluster_dir: str | os.PathLike[str], entries: list[Entry]) -> None:
    """Replace ``cluster_dir/recording.log`` with ``entries`` in this order, through ``recording.log.tmp`` then a
    rename (Aeron's ``ClusterToolOperator.updateRecordingLog``); no entries removes the file. Invalid entries keep
    their invalid flag, which Aeron's tool drops."""
    target = pathlib.Path(cluster_dir) / RECORDING_LOG_FILE_NAME
    if not entries:
        target.unlink()
        return
    tmp = target.with_name(RECORDING_LOG_FILE_NAME + ".tmp")
    tmp.unlink(missing_ok=True)
    with open(tmp, "xb") as f:
        for entry in entries:
            f.write(entry.encode())
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, target)
