# SPDX-License-Identifier: Apache-2.0
"""``RecordingPos``: finding and reading an archive's recording position counters (type 100, ``rec-pos``) in a
driver's counters (Aeron's ``io.aeron.archive.status.RecordingPos``), as a component that records through the
archive does to learn its recording's id and follow its progress (a cluster's log and snapshots).

Key: recordingId int64 @0, sessionId int32 @8, sourceIdentityLength int32 @12, the source identity (ASCII), then
the archive id int64 after it.
"""
from __future__ import annotations

import struct

from aeron._core.counters import RECORD_ALLOCATED, RECORD_UNUSED, CountersReader
from aeron.common.constants import NULL_VALUE

__all__ = ["RecordingPos"]

NULL_COUNTER_ID = NULL_VALUE


class RecordingPos:
    """Lookups of recording position counters."""

    RECORDING_POSITION_TYPE_ID = 100
    NULL_RECORDING_ID = NULL_VALUE
    NAME = "rec-pos"
    RECORDING_ID_OFFSET = 0
    SESSION_ID_OFFSET = 8
    SOURCE_IDENTITY_LENGTH_OFFSET = 12
    SOURCE_IDENTITY_OFFSET = 16

    @staticmethod
    def _key(counters: CountersReader, counter_id: int) -> bytes | None:
        if counters.get_counter_state(counter_id) == RECORD_ALLOCATED and \
                counters.get_counter_type_id(counter_id) == RecordingPos.RECORDING_POSITION_TYPE_ID:
            return counters.get_counter_key(counter_id)
        return None

    @staticmethod
    def _archive_id(key: bytes) -> int | None:
        source_length = struct.unpack_from("<i", key, RecordingPos.SOURCE_IDENTITY_LENGTH_OFFSET)[0]
        offset = RecordingPos.SOURCE_IDENTITY_OFFSET + source_length
        if source_length < 0 or offset + 8 > len(key):
            return None
        return int(struct.unpack_from("<q", key, offset)[0])

    @staticmethod
    def _find(counters: CountersReader, offset: int, fmt: str, value: int, archive_id: int) -> int:
        for counter_id in range(counters.max_counter_id + 1):
            state = counters.get_counter_state(counter_id)
            if state == RECORD_ALLOCATED:
                if counters.get_counter_type_id(counter_id) == RecordingPos.RECORDING_POSITION_TYPE_ID:
                    key = counters.get_counter_key(counter_id)
                    if struct.unpack_from(fmt, key, offset)[0] == value and (
                            archive_id == NULL_VALUE or RecordingPos._archive_id(key) == archive_id):
                        return counter_id
            elif state == RECORD_UNUSED:
                break
        return NULL_COUNTER_ID

    @staticmethod
    def find_counter_id_by_recording(counters: CountersReader, recording_id: int, archive_id: int = NULL_VALUE) -> int:
        """The counter of ``recording_id`` (in the archive ``archive_id``, or any when -1), or -1."""
        return RecordingPos._find(counters, RecordingPos.RECORDING_ID_OFFSET, "<q", recording_id, archive_id)

    @staticmethod
    def find_counter_id_by_session(counters: CountersReader, session_id: int, archive_id: int = NULL_VALUE) -> int:
        """The counter of the recording of the image of ``session_id`` (in the archive ``archive_id``, or any when
        -1), or -1."""
        return RecordingPos._find(counters, RecordingPos.SESSION_ID_OFFSET, "<i", session_id, archive_id)

    @staticmethod
    def get_recording_id(counters: CountersReader, counter_id: int) -> int:
        """The recording id of a recording position counter, or -1 when the counter is not one."""
        key = RecordingPos._key(counters, counter_id)
        if key is None:
            return RecordingPos.NULL_RECORDING_ID
        return int(struct.unpack_from("<q", key, RecordingPos.RECORDING_ID_OFFSET)[0])

    @staticmethod
    def get_source_identity(counters: CountersReader, counter_id: int) -> str | None:
        """The source identity of the recorded image, or None when the counter is not a recording position."""
        key = RecordingPos._key(counters, counter_id)
        if key is None:
            return None
        length = struct.unpack_from("<i", key, RecordingPos.SOURCE_IDENTITY_LENGTH_OFFSET)[0]
        start = RecordingPos.SOURCE_IDENTITY_OFFSET
        return key[start:start + max(0, length)].decode("ascii", "replace")

    @staticmethod
    def is_active(counters: CountersReader, counter_id: int, recording_id: int) -> bool:
        """True while the counter is the live position of ``recording_id``."""
        return RecordingPos.get_recording_id(counters, counter_id) == recording_id != NULL_VALUE
