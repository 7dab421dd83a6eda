# SPDX-License-Identifier: Apache-2.0
# UDP frame layouts (aeron_udp_protocol.h, io.aeron.protocol): field offsets of every frame type the open-source
# drivers send, little-endian accessors and writers, and the receive-side validity check. Header-only: the send
# and receive endpoints inline these. DATA/PAD offsets and HDR_TYPE_* come from frame_descriptor (cimported here, so
# `from aeron._core.frames cimport HDR_TYPE_SM` works too).
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t
from libc.string cimport memcpy
from aeron._core.frame_descriptor cimport (CURRENT_VERSION, FRAME_ALIGNMENT, HEADER_LENGTH, BEGIN_FRAG_FLAG,
                                           END_FRAG_FLAG, UNFRAGMENTED, EOS_FLAG, REVOKED_FLAG, HDR_TYPE_PAD,
                                           HDR_TYPE_DATA, HDR_TYPE_NAK, HDR_TYPE_SM, HDR_TYPE_ERR, HDR_TYPE_SETUP,
                                           HDR_TYPE_RTTM, HDR_TYPE_RES, HDR_TYPE_RSP_SETUP, HDR_TYPE_EXT,
                                           FRAME_LENGTH_FIELD_OFFSET, VERSION_FIELD_OFFSET, FLAGS_FIELD_OFFSET,
                                           TYPE_FIELD_OFFSET, TERM_OFFSET_FIELD_OFFSET, SESSION_ID_FIELD_OFFSET,
                                           STREAM_ID_FIELD_OFFSET, TERM_ID_FIELD_OFFSET,
                                           RESERVED_VALUE_FIELD_OFFSET)

cdef enum:
    FRAME_HEADER_LENGTH = 8             # length, version, flags, type: common to every frame
    DATA_HEADER_LENGTH = 32             # DATA, PAD and heartbeat (HeaderFlyweight/DataHeaderFlyweight)

    # SETUP (SetupFlyweight, aeron_setup_header_t)
    SETUP_HEADER_LENGTH = 40
    SETUP_TERM_OFFSET_FIELD_OFFSET = 8      # i32, term offset of the sender position
    SETUP_SESSION_ID_FIELD_OFFSET = 12      # i32
    SETUP_STREAM_ID_FIELD_OFFSET = 16       # i32
    SETUP_INITIAL_TERM_ID_FIELD_OFFSET = 20 # i32
    SETUP_ACTIVE_TERM_ID_FIELD_OFFSET = 24  # i32, term id of the sender position
    SETUP_TERM_LENGTH_FIELD_OFFSET = 28     # i32, power of two in [64 KiB, 1 GiB]
    SETUP_MTU_LENGTH_FIELD_OFFSET = 32      # i32, 32-aligned, in [32, 65504]
    SETUP_TTL_FIELD_OFFSET = 36             # i32, multicast TTL, 0 for unicast
    SETUP_SEND_RESPONSE_FLAG = 0x80         # publication wants a response channel
    SETUP_GROUP_FLAG = 0x40                 # multicast or multi-destination channel

    # SM (StatusMessageFlyweight, aeron_status_message_header_t)
    SM_HEADER_LENGTH = 36
    SM_WITH_GROUP_TAG_LENGTH = 44           # the only length at which the optional group tag is read
    SM_SESSION_ID_FIELD_OFFSET = 8          # i32
    SM_STREAM_ID_FIELD_OFFSET = 12          # i32
    SM_CONSUMPTION_TERM_ID_FIELD_OFFSET = 16      # i32
    SM_CONSUMPTION_TERM_OFFSET_FIELD_OFFSET = 20  # i32
    SM_RECEIVER_WINDOW_FIELD_OFFSET = 24    # i32
    SM_RECEIVER_ID_FIELD_OFFSET = 28        # i64, only 4-byte aligned
    SM_GROUP_TAG_FIELD_OFFSET = 36          # i64, "application specific feedback" slot
    SM_SEND_SETUP_FLAG = 0x80               # please send a SETUP
    SM_EOS_FLAG = 0x40                      # receiver is closing the image

    # NAK (NakFlyweight, aeron_nak_header_t)
    NAK_HEADER_LENGTH = 28
    NAK_SESSION_ID_FIELD_OFFSET = 8         # i32
    NAK_STREAM_ID_FIELD_OFFSET = 12         # i32
    NAK_TERM_ID_FIELD_OFFSET = 16           # i32, term of the gap
    NAK_TERM_OFFSET_FIELD_OFFSET = 20       # i32, gap start
    NAK_LENGTH_FIELD_OFFSET = 24            # i32, gap length in bytes

    # RTTM (RttMeasurementFlyweight, aeron_rttm_header_t)
    RTTM_HEADER_LENGTH = 40
    RTTM_SESSION_ID_FIELD_OFFSET = 8        # i32
    RTTM_STREAM_ID_FIELD_OFFSET = 12        # i32
    RTTM_ECHO_TIMESTAMP_FIELD_OFFSET = 16   # i64, originator's clock (ns)
    RTTM_RECEPTION_DELTA_FIELD_OFFSET = 24  # i64, ns between reception and reply
    RTTM_RECEIVER_ID_FIELD_OFFSET = 32      # i64
    RTTM_REPLY_FLAG = 0x80                  # the peer is asked to reply

    # ERR (ErrorFlyweight, aeron_error_header_t)
    ERR_HEADER_LENGTH = 40
    ERR_SESSION_ID_FIELD_OFFSET = 8         # i32
    ERR_STREAM_ID_FIELD_OFFSET = 12         # i32
    ERR_RECEIVER_ID_FIELD_OFFSET = 16       # i64
    ERR_GROUP_TAG_FIELD_OFFSET = 24         # i64, meaningful only with ERR_HAS_GROUP_TAG_FLAG
    ERR_ERROR_CODE_FIELD_OFFSET = 32        # i32, ErrorCode (13 = IMAGE_REJECTED)
    ERR_ERROR_LENGTH_FIELD_OFFSET = 36      # i32, text length
    ERR_ERROR_STRING_FIELD_OFFSET = 40      # ASCII text, not padded
    ERR_MAX_ERROR_MESSAGE_LENGTH = 1023
    ERR_HAS_GROUP_TAG_FLAG = 0x08

    # RSP_SETUP (ResponseSetupFlyweight, aeron_response_setup_header_t)
    RSP_SETUP_HEADER_LENGTH = 20
    RSP_SETUP_SESSION_ID_FIELD_OFFSET = 8           # i32, of the request stream
    RSP_SETUP_STREAM_ID_FIELD_OFFSET = 12           # i32, of the request stream
    RSP_SETUP_RESPONSE_SESSION_ID_FIELD_OFFSET = 16 # i32

    # RES (ResolutionEntryFlyweight): the common header then entries; the smallest datagram holds one
    RES_MIN_LENGTH = 22

    # limits used by the SETUP check (aeron_receive_channel_endpoint_is_valid_setup)
    SETUP_MIN_TERM_LENGTH = 64 * 1024
    SETUP_MAX_TERM_LENGTH = 1024 * 1024 * 1024
    SETUP_MIN_MTU_LENGTH = 32
    SETUP_MAX_MTU_LENGTH = 65504

    # frame_validate outcomes: the frame type (>= 0) or one of these
    FRAME_INVALID_TOO_SHORT = -1        # datagram shorter than the 8-byte common header
    FRAME_INVALID_VERSION = -2          # version != CURRENT_VERSION
    FRAME_INVALID_NEGATIVE_LENGTH = -3  # frame_length < 0 (only ever legal inside a term: claim in progress)
    FRAME_INVALID_TYPE = -4             # a type code the open-source data path does not accept
    FRAME_INVALID_SHORT_FOR_TYPE = -5   # datagram shorter than the fixed header of its type
    FRAME_INVALID_LENGTH = -6           # frame_length inconsistent with the datagram length
    FRAME_INVALID_ALIGNMENT = -7        # DATA/PAD datagram length not a multiple of 32
    FRAME_INVALID_TERM_OFFSET = -8      # a term offset that is negative or not 32-aligned (or past the term)
    FRAME_INVALID_FIELD = -9            # another field out of range (window, NAK length, mtu, term length, text)


cdef inline int32_t frames_get_i32(const uint8_t *p, Py_ssize_t field_offset) noexcept nogil:
    # memcpy: control-frame fields are only 4-byte aligned (SM receiver id) and a datagram can start anywhere
    cdef int32_t value
    memcpy(&value, p + field_offset, 4)
    return value

cdef inline int64_t frames_get_i64(const uint8_t *p, Py_ssize_t field_offset) noexcept nogil:
    cdef int64_t value
    memcpy(&value, p + field_offset, 8)
    return value

cdef inline uint16_t frames_get_u16(const uint8_t *p, Py_ssize_t field_offset) noexcept nogil:
    cdef uint16_t value
    memcpy(&value, p + field_offset, 2)
    return value

cdef inline void frames_put_i32(uint8_t *p, Py_ssize_t field_offset, int32_t value) noexcept nogil:
    memcpy(p + field_offset, &value, 4)

cdef inline void frames_put_i64(uint8_t *p, Py_ssize_t field_offset, int64_t value) noexcept nogil:
    memcpy(p + field_offset, &value, 8)

cdef inline int32_t frames_frame_length(const uint8_t *p) noexcept nogil:
    return frames_get_i32(p, FRAME_LENGTH_FIELD_OFFSET)

cdef inline uint16_t frames_type(const uint8_t *p) noexcept nogil:
    # Java reads the type as unsigned 16 bit; 0xFFFF is HDR_TYPE_EXT, never a valid datagram
    return frames_get_u16(p, TYPE_FIELD_OFFSET)

cdef inline uint8_t frames_flags(const uint8_t *p) noexcept nogil:
    return p[FLAGS_FIELD_OFFSET]

cdef inline bint frames_is_heartbeat(const uint8_t *p, Py_ssize_t length) noexcept nogil:
    # the receiver's own definition: exactly one header and a zero frame length
    return length == DATA_HEADER_LENGTH and frames_frame_length(p) == 0

cdef inline int64_t frames_sm_group_tag(const uint8_t *p, bint *present) noexcept nogil:
    # C rule (aeron_udp_protocol_group_tag): the tag exists only when frame_length is exactly 44
    present[0] = frames_frame_length(p) == SM_WITH_GROUP_TAG_LENGTH
    return frames_get_i64(p, SM_GROUP_TAG_FIELD_OFFSET) if present[0] else 0

cdef inline void frames_write_header(uint8_t *p, int32_t frame_length, uint8_t flags, uint16_t frame_type) noexcept nogil:
    frames_put_i32(p, FRAME_LENGTH_FIELD_OFFSET, frame_length)
    p[VERSION_FIELD_OFFSET] = CURRENT_VERSION
    p[FLAGS_FIELD_OFFSET] = flags
    memcpy(p + TYPE_FIELD_OFFSET, &frame_type, 2)


cdef inline int frames_check_term_offset(int32_t term_offset) noexcept nogil:
    if term_offset < 0 or term_offset & (FRAME_ALIGNMENT - 1):
        return FRAME_INVALID_TERM_OFFSET
    return 0


cdef inline int frames_check_control_length(const uint8_t *p, Py_ssize_t length, int32_t header_length) noexcept nogil:
    if length < header_length:
        return FRAME_INVALID_SHORT_FOR_TYPE
    cdef int32_t frame_length = frames_frame_length(p)
    # C only checks frame_length <= datagram length; a frame_length below the fixed header is also refused
    # here, because its fields past frame_length would be read from bytes the sender did not describe.
    if frame_length > length or frame_length < header_length:
        return FRAME_INVALID_LENGTH
    return 0


cdef inline int frame_validate(const uint8_t *p, Py_ssize_t length) noexcept nogil:
    """Receive-side check of one datagram (aeron_is_frame_valid and the per-type header checks of the channel
    endpoints that need no stream state). Returns the frame type (HDR_TYPE_*) or a negative FRAME_INVALID_* reason.

    DATA/PAD: only the first frame's header is checked here (term-relative checks of every batched frame are
    term_scanner.data_packet_validate's job, with the image's term length). A PAD may describe more bytes than
    the datagram holds; a DATA frame may not."""
    cdef int32_t frame_length, field, term_length
    cdef uint16_t frame_type
    cdef int rc
    if length < FRAME_HEADER_LENGTH:
        return FRAME_INVALID_TOO_SHORT
    if p[VERSION_FIELD_OFFSET] != CURRENT_VERSION:
        return FRAME_INVALID_VERSION
    frame_length = frames_frame_length(p)
    if frame_length < 0:
        return FRAME_INVALID_NEGATIVE_LENGTH
    frame_type = frames_type(p)
    if frame_type == HDR_TYPE_DATA or frame_type == HDR_TYPE_PAD:
        if length < DATA_HEADER_LENGTH:
            return FRAME_INVALID_SHORT_FOR_TYPE
        if length & (FRAME_ALIGNMENT - 1):
            return FRAME_INVALID_ALIGNMENT
        rc = frames_check_term_offset(frames_get_i32(p, TERM_OFFSET_FIELD_OFFSET))
        if rc < 0:
            return rc
        if frame_type == HDR_TYPE_PAD:
            if frame_length < DATA_HEADER_LENGTH:
                return FRAME_INVALID_LENGTH
        elif frame_length == 0:
            if length != DATA_HEADER_LENGTH:      # a heartbeat is exactly one header
                return FRAME_INVALID_LENGTH
        elif frame_length < DATA_HEADER_LENGTH or \
                ((<int64_t>frame_length + FRAME_ALIGNMENT - 1) & ~(<int64_t>FRAME_ALIGNMENT - 1)) > length:
            return FRAME_INVALID_LENGTH     # the first DATA frame must fit the datagram
        return frame_type
    if frame_type == HDR_TYPE_SETUP:
        rc = frames_check_control_length(p, length, SETUP_HEADER_LENGTH)
        if rc < 0:
            return rc
        term_length = frames_get_i32(p, SETUP_TERM_LENGTH_FIELD_OFFSET)
        if term_length < SETUP_MIN_TERM_LENGTH or term_length > SETUP_MAX_TERM_LENGTH or \
                term_length & (term_length - 1):
            return FRAME_INVALID_FIELD
        field = frames_get_i32(p, SETUP_MTU_LENGTH_FIELD_OFFSET)
        if field < SETUP_MIN_MTU_LENGTH or field > SETUP_MAX_MTU_LENGTH or field & (FRAME_ALIGNMENT - 1):
            return FRAME_INVALID_FIELD
        field = frames_get_i32(p, SETUP_TERM_OFFSET_FIELD_OFFSET)
        if frames_check_term_offset(field) < 0 or field >= term_length:
            return FRAME_INVALID_TERM_OFFSET
        return frame_type
    if frame_type == HDR_TYPE_SM:
        rc = frames_check_control_length(p, length, SM_HEADER_LENGTH)
        if rc < 0:
            return rc
        rc = frames_check_term_offset(frames_get_i32(p, SM_CONSUMPTION_TERM_OFFSET_FIELD_OFFSET))
        if rc < 0:
            return rc
        if frames_get_i32(p, SM_RECEIVER_WINDOW_FIELD_OFFSET) < 0:
            return FRAME_INVALID_FIELD
        return frame_type
    if frame_type == HDR_TYPE_NAK:
        rc = frames_check_control_length(p, length, NAK_HEADER_LENGTH)
        if rc < 0:
            return rc
        rc = frames_check_term_offset(frames_get_i32(p, NAK_TERM_OFFSET_FIELD_OFFSET))
        if rc < 0:
            return rc
        if frames_get_i32(p, NAK_LENGTH_FIELD_OFFSET) < 0:
            return FRAME_INVALID_FIELD
        return frame_type
    if frame_type == HDR_TYPE_RTTM:
        rc = frames_check_control_length(p, length, RTTM_HEADER_LENGTH)
        return rc if rc < 0 else frame_type
    if frame_type == HDR_TYPE_ERR:
        rc = frames_check_control_length(p, length, ERR_HEADER_LENGTH)
        if rc < 0:
            return rc
        field = frames_get_i32(p, ERR_ERROR_LENGTH_FIELD_OFFSET)
        if field < 0 or field > ERR_MAX_ERROR_MESSAGE_LENGTH or ERR_HEADER_LENGTH + field > frame_length:
            return FRAME_INVALID_FIELD
        return frame_type
    if frame_type == HDR_TYPE_RSP_SETUP:
        rc = frames_check_control_length(p, length, RSP_SETUP_HEADER_LENGTH)
        return rc if rc < 0 else frame_type
    if frame_type == HDR_TYPE_RES:
        if length < RES_MIN_LENGTH:
            return FRAME_INVALID_SHORT_FOR_TYPE
        if frame_length > length or frame_length < FRAME_HEADER_LENGTH:
            return FRAME_INVALID_LENGTH
        return frame_type
    return FRAME_INVALID_TYPE


cdef inline Py_ssize_t frames_next_data_frame(const uint8_t *p, Py_ssize_t length, Py_ssize_t offset) noexcept nogil:
    """Walk a DATA datagram that frame_validate accepted: given a frame at ``offset``, return where the next one
    starts (== length at the end), or -1 if the frame at ``offset`` is malformed (not DATA/PAD, term offset not
    contiguous with the first frame, frame running past the datagram). A PAD ends the datagram: only its header
    travels."""
    cdef const uint8_t *frame = p + offset
    cdef int32_t frame_length
    cdef uint16_t frame_type
    cdef int64_t aligned
    if offset < 0 or offset + DATA_HEADER_LENGTH > length:
        return -1
    frame_type = frames_type(frame)
    if frame_type != HDR_TYPE_DATA and frame_type != HDR_TYPE_PAD:
        return -1
    if frame[VERSION_FIELD_OFFSET] != CURRENT_VERSION:
        return -1
    if <int64_t>frames_get_i32(frame, TERM_OFFSET_FIELD_OFFSET) != \
            <int64_t>frames_get_i32(p, TERM_OFFSET_FIELD_OFFSET) + offset:
        return -1
    frame_length = frames_frame_length(frame)
    if frame_type == HDR_TYPE_PAD:
        return length if frame_length >= DATA_HEADER_LENGTH else -1
    if frame_length == 0:
        return length if offset == 0 and length == DATA_HEADER_LENGTH else -1
    if frame_length < DATA_HEADER_LENGTH:
        return -1
    aligned = (<int64_t>frame_length + FRAME_ALIGNMENT - 1) & ~(<int64_t>FRAME_ALIGNMENT - 1)
    if aligned > length - offset:
        return -1
    return <Py_ssize_t>(offset + aligned)


# Writers for the control frames the drivers build (callers check the room: each needs its *_HEADER_LENGTH).

cdef inline int32_t frames_write_setup(uint8_t *p, uint8_t flags, int32_t term_offset, int32_t session_id,
                                       int32_t stream_id, int32_t initial_term_id, int32_t active_term_id,
                                       int32_t term_length, int32_t mtu, int32_t ttl) noexcept nogil:
    frames_write_header(p, SETUP_HEADER_LENGTH, flags, HDR_TYPE_SETUP)
    frames_put_i32(p, SETUP_TERM_OFFSET_FIELD_OFFSET, term_offset)
    frames_put_i32(p, SETUP_SESSION_ID_FIELD_OFFSET, session_id)
    frames_put_i32(p, SETUP_STREAM_ID_FIELD_OFFSET, stream_id)
    frames_put_i32(p, SETUP_INITIAL_TERM_ID_FIELD_OFFSET, initial_term_id)
    frames_put_i32(p, SETUP_ACTIVE_TERM_ID_FIELD_OFFSET, active_term_id)
    frames_put_i32(p, SETUP_TERM_LENGTH_FIELD_OFFSET, term_length)
    frames_put_i32(p, SETUP_MTU_LENGTH_FIELD_OFFSET, mtu)
    frames_put_i32(p, SETUP_TTL_FIELD_OFFSET, ttl)
    return SETUP_HEADER_LENGTH

cdef inline int32_t frames_write_heartbeat(uint8_t *p, uint8_t flags, int32_t term_offset, int32_t session_id,
                                           int32_t stream_id, int32_t term_id) noexcept nogil:
    frames_write_header(p, 0, flags, HDR_TYPE_DATA)
    frames_put_i32(p, TERM_OFFSET_FIELD_OFFSET, term_offset)
    frames_put_i32(p, SESSION_ID_FIELD_OFFSET, session_id)
    frames_put_i32(p, STREAM_ID_FIELD_OFFSET, stream_id)
    frames_put_i32(p, TERM_ID_FIELD_OFFSET, term_id)
    frames_put_i64(p, RESERVED_VALUE_FIELD_OFFSET, 0)
    return DATA_HEADER_LENGTH

cdef inline int32_t frames_write_status_message(uint8_t *p, uint8_t flags, int32_t session_id, int32_t stream_id,
                                                int32_t consumption_term_id, int32_t consumption_term_offset,
                                                int32_t receiver_window, int64_t receiver_id, bint has_group_tag,
                                                int64_t group_tag) noexcept nogil:
    cdef int32_t length = SM_WITH_GROUP_TAG_LENGTH if has_group_tag else SM_HEADER_LENGTH
    frames_write_header(p, length, flags, HDR_TYPE_SM)
    frames_put_i32(p, SM_SESSION_ID_FIELD_OFFSET, session_id)
    frames_put_i32(p, SM_STREAM_ID_FIELD_OFFSET, stream_id)
    frames_put_i32(p, SM_CONSUMPTION_TERM_ID_FIELD_OFFSET, consumption_term_id)
    frames_put_i32(p, SM_CONSUMPTION_TERM_OFFSET_FIELD_OFFSET, consumption_term_offset)
    frames_put_i32(p, SM_RECEIVER_WINDOW_FIELD_OFFSET, receiver_window)
    frames_put_i64(p, SM_RECEIVER_ID_FIELD_OFFSET, receiver_id)
    if has_group_tag:
        frames_put_i64(p, SM_GROUP_TAG_FIELD_OFFSET, group_tag)
    return length

cdef inline int32_t frames_write_nak(uint8_t *p, int32_t session_id, int32_t stream_id, int32_t term_id,
                                     int32_t term_offset, int32_t length) noexcept nogil:
    frames_write_header(p, NAK_HEADER_LENGTH, 0, HDR_TYPE_NAK)
    frames_put_i32(p, NAK_SESSION_ID_FIELD_OFFSET, session_id)
    frames_put_i32(p, NAK_STREAM_ID_FIELD_OFFSET, stream_id)
    frames_put_i32(p, NAK_TERM_ID_FIELD_OFFSET, term_id)
    frames_put_i32(p, NAK_TERM_OFFSET_FIELD_OFFSET, term_offset)
    frames_put_i32(p, NAK_LENGTH_FIELD_OFFSET, length)
    return NAK_HEADER_LENGTH

cdef inline int32_t frames_write_rttm(uint8_t *p, uint8_t flags, int32_t session_id, int32_t stream_id,
                                      int64_t echo_timestamp, int64_t reception_delta,
                                      int64_t receiver_id) noexcept nogil:
    frames_write_header(p, RTTM_HEADER_LENGTH, flags, HDR_TYPE_RTTM)
    frames_put_i32(p, RTTM_SESSION_ID_FIELD_OFFSET, session_id)
    frames_put_i32(p, RTTM_STREAM_ID_FIELD_OFFSET, stream_id)
    frames_put_i64(p, RTTM_ECHO_TIMESTAMP_FIELD_OFFSET, echo_timestamp)
    frames_put_i64(p, RTTM_RECEPTION_DELTA_FIELD_OFFSET, reception_delta)
    frames_put_i64(p, RTTM_RECEIVER_ID_FIELD_OFFSET, receiver_id)
    return RTTM_HEADER_LENGTH

cdef inline int32_t frames_write_error(uint8_t *p, int32_t session_id, int32_t stream_id, int64_t receiver_id,
                                       bint has_group_tag, int64_t group_tag, int32_t error_code,
                                       const uint8_t *text, int32_t text_length) noexcept nogil:
    # text_length must already be capped at ERR_MAX_ERROR_MESSAGE_LENGTH; the group-tag field is always written
    frames_write_header(p, ERR_HEADER_LENGTH + text_length, ERR_HAS_GROUP_TAG_FLAG if has_group_tag else 0,
                        HDR_TYPE_ERR)
    frames_put_i32(p, ERR_SESSION_ID_FIELD_OFFSET, session_id)
    frames_put_i32(p, ERR_STREAM_ID_FIELD_OFFSET, stream_id)
    frames_put_i64(p, ERR_RECEIVER_ID_FIELD_OFFSET, receiver_id)
    frames_put_i64(p, ERR_GROUP_TAG_FIELD_OFFSET, group_tag)
    frames_put_i32(p, ERR_ERROR_CODE_FIELD_OFFSET, error_code)
    frames_put_i32(p, ERR_ERROR_LENGTH_FIELD_OFFSET, text_length)
    if text_length > 0:
        memcpy(p + ERR_ERROR_STRING_FIELD_OFFSET, text, <size_t>text_length)
    return ERR_HEADER_LENGTH + text_length

cdef inline int32_t frames_write_response_setup(uint8_t *p, int32_t session_id, int32_t stream_id,
                                                int32_t response_session_id) noexcept nogil:
    frames_write_header(p, RSP_SETUP_HEADER_LENGTH, 0, HDR_TYPE_RSP_SETUP)
    frames_put_i32(p, RSP_SETUP_SESSION_ID_FIELD_OFFSET, session_id)
    frames_put_i32(p, RSP_SETUP_STREAM_ID_FIELD_OFFSET, stream_id)
    frames_put_i32(p, RSP_SETUP_RESPONSE_SESSION_ID_FIELD_OFFSET, response_session_id)
    return RSP_SETUP_HEADER_LENGTH
