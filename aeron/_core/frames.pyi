# SPDX-License-Identifier: Apache-2.0
from typing import Any, NamedTuple

CURRENT_VERSION: int
HDR_TYPE_PAD: int
HDR_TYPE_DATA: int
HDR_TYPE_NAK: int
HDR_TYPE_SM: int
HDR_TYPE_ERR: int
HDR_TYPE_SETUP: int
HDR_TYPE_RTTM: int
HDR_TYPE_RES: int
HDR_TYPE_RSP_SETUP: int
HDR_TYPE_EXT: int
FRAME_HEADER_LENGTH: int
DATA_HEADER_LENGTH: int
SETUP_HEADER_LENGTH: int
SM_HEADER_LENGTH: int
SM_WITH_GROUP_TAG_LENGTH: int
NAK_HEADER_LENGTH: int
RTTM_HEADER_LENGTH: int
ERR_HEADER_LENGTH: int
ERR_MAX_ERROR_MESSAGE_LENGTH: int
RSP_SETUP_HEADER_LENGTH: int
RES_MIN_LENGTH: int
BEGIN_FRAG_FLAG: int
END_FRAG_FLAG: int
UNFRAGMENTED: int
EOS_FLAG: int
REVOKED_FLAG: int
SETUP_SEND_RESPONSE_FLAG: int
SETUP_GROUP_FLAG: int
SM_SEND_SETUP_FLAG: int
SM_EOS_FLAG: int
RTTM_REPLY_FLAG: int
ERR_HAS_GROUP_TAG_FLAG: int
FRAME_INVALID_TOO_SHORT: int
FRAME_INVALID_VERSION: int
FRAME_INVALID_NEGATIVE_LENGTH: int
FRAME_INVALID_TYPE: int
FRAME_INVALID_SHORT_FOR_TYPE: int
FRAME_INVALID_LENGTH: int
FRAME_INVALID_ALIGNMENT: int
FRAME_INVALID_TERM_OFFSET: int
FRAME_INVALID_FIELD: int
FRAME_INVALID_REASONS: dict[int, str]
TYPE_NAMES: dict[int, str]

class DataFrame(NamedTuple):
    frame_length: int
    version: int
    flags: int
    type: int
    term_offset: int
    session_id: int
    stream_id: int
    term_id: int
    reserved_value: int
    payload: memoryview
    is_heartbeat: bool

class SetupFrame(NamedTuple):
    frame_length: int
    version: int
    flags: int
    type: int
    term_offset: int
    session_id: int
    stream_id: int
    initial_term_id: int
    active_term_id: int
    term_length: int
    mtu: int
    ttl: int

class StatusMessageFrame(NamedTuple):
    frame_length: int
    version: int
    flags: int
    type: int
    session_id: int
    stream_id: int
    consumption_term_id: int
    consumption_term_offset: int
    receiver_window: int
    receiver_id: int
    group_tag: int | None

class NakFrame(NamedTuple):
    frame_length: int
    version: int
    flags: int
    type: int
    session_id: int
    stream_id: int
    term_id: int
    term_offset: int
    length: int

class RttmFrame(NamedTuple):
    frame_length: int
    version: int
    flags: int
    type: int
    session_id: int
    stream_id: int
    echo_timestamp: int
    reception_delta: int
    receiver_id: int

class ErrorFrame(NamedTuple):
    frame_length: int
    version: int
    flags: int
    type: int
    session_id: int
    stream_id: int
    receiver_id: int
    group_tag: int
    error_code: int
    error_length: int
    error_message: str

class ResponseSetupFrame(NamedTuple):
    frame_length: int
    version: int
    flags: int
    type: int
    session_id: int
    stream_id: int
    response_session_id: int

class ResolutionFrame(NamedTuple):
    frame_length: int
    version: int
    flags: int
    type: int
    entries: memoryview

Frame = (DataFrame | SetupFrame | StatusMessageFrame | NakFrame | RttmFrame | ErrorFrame | ResponseSetupFrame
         | ResolutionFrame)

def validate_frame(buffer: Any, offset: int = ..., length: int = ...) -> int: ...
def decode_data_header(buffer: Any, offset: int = ...) -> tuple[int, int, int, int, int, int]: ...
def encode_setup(buffer: Any, offset: int, session_id: int, stream_id: int, initial_term_id: int,
                 active_term_id: int, term_offset: int, term_length: int, mtu: int = ..., ttl: int = ...,
                 flags: int = ...) -> int: ...
def encode_heartbeat(buffer: Any, offset: int, session_id: int, stream_id: int, term_id: int, term_offset: int,
                     flags: int = ...) -> int: ...
def encode_status_message(buffer: Any, offset: int, session_id: int, stream_id: int, consumption_term_id: int,
                          consumption_term_offset: int, receiver_window: int, receiver_id: int,
                          group_tag: int | None = ..., flags: int = ...) -> int: ...
def encode_nak(buffer: Any, offset: int, session_id: int, stream_id: int, term_id: int, term_offset: int,
               length: int) -> int: ...
def encode_rttm(buffer: Any, offset: int, session_id: int, stream_id: int, echo_timestamp: int,
                reception_delta: int, receiver_id: int, flags: int = ...) -> int: ...
def encode_error(buffer: Any, offset: int, session_id: int, stream_id: int, receiver_id: int, error_code: int,
                 message: str | bytes, group_tag: int | None = ...) -> int: ...
def encode_response_setup(buffer: Any, offset: int, session_id: int, stream_id: int,
                          response_session_id: int) -> int: ...
def decode_frame(buffer: Any, offset: int = ..., length: int = ...) -> Frame: ...
def decode_datagram(buffer: Any, offset: int = ..., length: int = ...) -> list[Frame]: ...
def type_name(frame_type: int) -> str: ...
