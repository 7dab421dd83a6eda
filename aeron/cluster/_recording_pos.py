# SPDX-License-Identifier: Apache-2.0
"""Reading the archive's recording position counters (Aeron's ``RecordingPos``) and the driver's local socket
address counters (``LocalSocketAddressStatus.findNumberOfAddressesByRegistrationId``), as the consensus module
finds its log and snapshot recordings. Per call (elections, snapshots), not per message: plain counter scans.

A recording position counter (type 100) is keyed by recordingId int64 @0, sessionId int32 @8, the source
identity's length int32 @12, the source identity, and the archive id int64 after it.
"""
from __future__ import annotations

import struct
from typing import Any

from aeron._core.counters import (DRIVER_LOCAL_SOCKET_ADDRESS_STATUS_TYPE_ID, NULL_COUNTER_ID, RECORD_ALLOCATED,
                                  RECORD_UNUSED)

__all__ = ["RECORDING_POSITION_TYPE_ID", "NULL_RECORDING_ID", "find_counter_id_by_recording",
           "find_counter_id_by_session", "find_number_of_addresses_by_registration_id", "get_recording_id",
           "is_active"]

RECORDING_POSITION_TYPE_ID = 100
NULL_RECORDING_ID = -1
NULL_ARCHIVE_ID = -1


def _key(counters: Any, counter_id: int) -> tuple[int, int, int]:
    key = counters.get_counter_key(counter_id)
    recording_id, session_id, source_length = struct.unpack_from("<qii", key, 0)
    archive_offset = 16 + max(0, source_length)
    archive_id = struct.unpack_from("<q", key, archive_offset)[0] if archive_offset + 8 <= len(key) else NULL_ARCHIVE_ID
    return recording_id, session_id, archive_id


def _recording_counters(counters: Any) -> Any:
    for counter_id in range(counters.max_counter_id + 1):
        state = counters.get_counter_state(counter_id)
        if state == RECORD_UNUSED:
            return
        if state == RECORD_ALLOCATED and counters.get_counter_type_id(counter_id) == RECORDING_POSITION_TYPE_ID:
            yield counter_id


def _archive_matches(wanted: int, found: int) -> bool:
    return wanted == NULL_ARCHIVE_ID or wanted == found


def find_counter_id_by_session(counters: Any, session_id: int, archive_id: int = NULL_ARCHIVE_ID) -> int:
    """The counter of the active recording of the image with ``session_id`` in ``archive_id`` (any archive when
    -1), or NULL_COUNTER_ID."""
    for counter_id in _recording_counters(counters):
        _, key_session_id, key_archive_id = _key(counters, counter_id)
        if key_session_id == session_id and _archive_matches(archive_id, key_archive_id):
            return counter_id
    return NULL_COUNTER_ID


def find_counter_id_by_recording(counters: Any, recording_id: int, archive_id: int = NULL_ARCHIVE_ID) -> int:
    """The counter of the active recording ``recording_id``, or NULL_COUNTER_ID."""
    for counter_id in _recording_counters(counters):
        key_recording_id, _, key_archive_id = _key(counters, counter_id)
        if key_recording_id == recording_id and _archive_matches(archive_id, key_archive_id):
            return counter_id
    return NULL_COUNTER_ID


def get_recording_id(counters: Any, counter_id: int) -> int:
    """The recording id of a recording position counter (NULL_RECORDING_ID when it is not one)."""
    if counters.get_counter_state(counter_id) == RECORD_ALLOCATED and \
            counters.get_counter_type_id(counter_id) == RECORDING_POSITION_TYPE_ID:
        return _key(counters, counter_id)[0]
    return NULL_RECORDING_ID


def is_active(counters: Any, counter_id: int, recording_id: int) -> bool:
    """The counter is still the position of ``recording_id`` (the recording has not stopped)."""
    return counters.get_counter_state(counter_id) == RECORD_ALLOCATED and \
        counters.get_counter_type_id(counter_id) == RECORDING_POSITION_TYPE_ID and \
        _key(counters, counter_id)[0] == recording_id


def find_number_of_addresses_by_registration_id(counters: Any, registration_id: int) -> int:
    """How many bound sockets (local socket address counters) the channel of ``registration_id`` still has."""
    found = 0
    for counter_id in range(counters.max_counter_id + 1):
        state = counters.get_counter_state(counter_id)
        if state == RECORD_UNUSED:
            break
        if state == RECORD_ALLOCATED and \
                counters.get_counter_type_id(counter_id) == DRIVER_LOCAL_SOCKET_ADDRESS_STATUS_TYPE_ID and \
                counters.get_counter_registration_id(counter_id) == registration_id:
            found += 1
    return found
