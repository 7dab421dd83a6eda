# SPDX-License-Identifier: Apache-2.0
"""The driver's control frames on the wire (wire-and-logbuffers.md §1): layouts, flags, and packers/unpackers
for SETUP, SM, NAK, RTTM, ERR and heartbeats. Little-endian, as Aeron. DATA frames are never built here: the
sender transmits the log's own bytes."""
from __future__ import annotations

import struct

from aeron._core import frames

HDR_TYPE_PAD, HDR_TYPE_DATA, HDR_TYPE_NAK, HDR_TYPE_SM, HDR_TYPE_ERR, HDR_TYPE_SETUP, HDR_TYPE_RTTM = range(7)
HDR_TYPE_RES = 0x07
HDR_TYPE_RSP_SETUP = 0x0B

DATA_HEADER_LENGTH = 32
SETUP_LENGTH = 40
SM_LENGTH = 36
SM_WITH_GROUP_TAG_LENGTH = 44
NAK_LENGTH = 28
RTTM_LENGTH = 40
ERR_HEADER_LENGTH = 40
RSP_SETUP_LENGTH = 20
MAX_ERROR_MESSAGE_LENGTH = 1023

BEGIN_FLAG, END_FLAG, EOS_FLAG, REVOKED_FLAG = 0x80, 0x40, 0x20, 0x10
UNFRAGMENTED = BEGIN_FLAG | END_FLAG
SM_SEND_SETUP_FLAG, SM_EOS_FLAG = 0x80, 0x40
SETUP_SEND_RESPONSE_FLAG, SETUP_GROUP_FLAG = 0x80, 0x40
RTTM_REPLY_FLAG = 0x80
ERR_HAS_GROUP_TAG_FLAG = 0x08

FRAME_HEADER = struct.Struct("<iBBh")                              # length, version, flags, type
DATA_HEADER = struct.Struct("<iBBhiiiiq")                          # + term offset, session, stream, term id, rsv
SETUP = struct.Struct("<iBBhiiiiiiii")                             # + term offset, session, stream, initial term
#                                                                     id, active term id, term length, mtu, ttl
SM = struct.Struct("<iBBhiiiiiq")                                  # + session, stream, term id, term offset,
#                                                                     window, receiver id
GROUP_TAG = struct.Struct("<q")
NAK = struct.Struct("<iBBhiiiii")                                  # + session, stream, term id, offset, length
RTTM = struct.Struct("<iBBhiiqqq")                                 # + session, stream, echo ts, delta, rcv id
ERR = struct.Struct("<iBBhiiqqii")                                 # + session, stream, receiver id, group tag,
#                                                                     error code, error length

# minimum datagram length per frame type for the receive-side validity check (§1.3)
MIN_LENGTH = {HDR_TYPE_PAD: DATA_HEADER_LENGTH, HDR_TYPE_DATA: DATA_HEADER_LENGTH, HDR_TYPE_NAK: NAK_LENGTH,
              HDR_TYPE_SM: SM_LENGTH, HDR_TYPE_ERR: ERR_HEADER_LENGTH, HDR_TYPE_SETUP: SETUP_LENGTH,
              HDR_TYPE_RTTM: RTTM_LENGTH, HDR_TYPE_RES: 22, HDR_TYPE_RSP_SETUP: RSP_SETUP_LENGTH}


def frame_type(datagram, length: int) -> int:
    """The frame type of a valid datagram, or -1 when it fails the §1.3 checks (count it and drop it)."""
    if length < 8:
        return -1
    frame_length, version, _flags, type_ = FRAME_HEADER.unpack_from(datagram, 0)
    type_ &= 0xFFFF
    if frame_length < 0 or version != 0:
        return -1
    minimum = MIN_LENGTH.get(type_)
    if minimum is None or length < minimum:
        return -1
    if type_ in (HDR_TYPE_DATA, HDR_TYPE_PAD):
        if length % 32:
            return -1
    elif frame_length > length:
        return -1
    return type_


# The writers are the compiled frames module's (one implementation, checked byte for byte against the golden
# captures); these keep the driver's argument order.

def pack_setup(buffer, flags: int, term_offset: int, session_id: int, stream_id: int, initial_term_id: int,
               active_term_id: int, term_length: int, mtu: int, ttl: int) -> int:
    return frames.encode_setup(buffer, 0, session_id, stream_id, initial_term_id, active_term_id, term_offset,
                               term_length, mtu, ttl, flags)


def pack_heartbeat(buffer, flags: int, term_offset: int, session_id: int, stream_id: int, term_id: int) -> int:
    return frames.encode_heartbeat(buffer, 0, session_id, stream_id, term_id, term_offset, flags)


def pack_status_message(buffer, flags: int, session_id: int, stream_id: int, term_id: int, term_offset: int,
                        window: int, receiver_id: int, group_tag: int | None = None) -> int:
    return frames.encode_status_message(buffer, 0, session_id, stream_id, term_id, term_offset, window, receiver_id,
                                        group_tag, flags)


def pack_nak(buffer, session_id: int, stream_id: int, term_id: int, term_offset: int, length: int) -> int:
    return frames.encode_nak(buffer, 0, session_id, stream_id, term_id, term_offset, length)


def pack_rttm(buffer, flags: int, session_id: int, stream_id: int, echo_timestamp: int, reception_delta: int,
              receiver_id: int) -> int:
    return frames.encode_rttm(buffer, 0, session_id, stream_id, echo_timestamp, reception_delta, receiver_id, flags)


def pack_error(buffer, session_id: int, stream_id: int, receiver_id: int, group_tag: int | None,
               error_code: int, message: str) -> int:
    return frames.encode_error(buffer, 0, session_id, stream_id, receiver_id, error_code, message, group_tag)


def sm_group_tag(datagram, frame_length: int) -> int | None:
    """The optional group tag: present only when the SM is exactly 44 bytes (C rule)."""
    if frame_length == SM_WITH_GROUP_TAG_LENGTH:
        return GROUP_TAG.unpack_from(datagram, SM_LENGTH)[0]
    return None
