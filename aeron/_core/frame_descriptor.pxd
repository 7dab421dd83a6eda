# SPDX-License-Identifier: Apache-2.0
# Frame layout of DATA/PAD frames in term buffers and on the wire (port of
# FrameDescriptor and DataHeaderFlyweight). Header-only: every module that cimports this inlines it.
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint16_t
from aeron._core.atomic cimport load_acquire_i32, store_release_i32

cdef enum:
    FRAME_ALIGNMENT = 32               # frames start on 32-byte boundaries in a term
    HEADER_LENGTH = 32                 # DATA/PAD header length; payload starts here
    DATA_OFFSET = 32
    FRAME_LENGTH_FIELD_OFFSET = 0      # i32, release/acquire: the publish word
    VERSION_FIELD_OFFSET = 4           # u8, always CURRENT_VERSION
    FLAGS_FIELD_OFFSET = 5             # u8, BEGIN/END/EOS/REVOKED
    TYPE_FIELD_OFFSET = 6              # u16, HDR_TYPE_*
    TERM_OFFSET_FIELD_OFFSET = 8       # i32, offset of this frame in its term
    SESSION_ID_FIELD_OFFSET = 12       # i32
    STREAM_ID_FIELD_OFFSET = 16        # i32
    TERM_ID_FIELD_OFFSET = 20          # i32
    RESERVED_VALUE_FIELD_OFFSET = 24   # i64, application defined

    CURRENT_VERSION = 0

    BEGIN_FRAG_FLAG = 0x80
    END_FRAG_FLAG = 0x40
    UNFRAGMENTED = 0xC0
    EOS_FLAG = 0x20
    REVOKED_FLAG = 0x10

    HDR_TYPE_PAD = 0x00
    HDR_TYPE_DATA = 0x01
    HDR_TYPE_NAK = 0x02
    HDR_TYPE_SM = 0x03
    HDR_TYPE_ERR = 0x04
    HDR_TYPE_SETUP = 0x05
    HDR_TYPE_RTTM = 0x06
    HDR_TYPE_RES = 0x07
    HDR_TYPE_RSP_SETUP = 0x0B
    HDR_TYPE_EXT = 0xFFFF

    MAX_MESSAGE_LENGTH_LIMIT = 16 * 1024 * 1024   # cap on max message length whatever the term


cdef inline int32_t align_i32(int32_t value, int32_t alignment) noexcept nogil:
    return (value + (alignment - 1)) & ~(alignment - 1)

cdef inline int64_t align_i64(int64_t value, int64_t alignment) noexcept nogil:
    return (value + (alignment - 1)) & ~(alignment - 1)

cdef inline int32_t frame_length_volatile(const uint8_t *term, int32_t offset) noexcept nogil:
    # pairs with the writer's release store of the length: everything before it is visible
    return load_acquire_i32(<const int32_t *>(term + offset))

cdef inline void frame_length_ordered(uint8_t *term, int32_t offset, int32_t length) noexcept nogil:
    store_release_i32(<int32_t *>(term + offset), length)

cdef inline uint16_t frame_type(const uint8_t *term, int32_t offset) noexcept nogil:
    return (<const uint16_t *>(term + offset + TYPE_FIELD_OFFSET))[0]

cdef inline uint8_t frame_flags(const uint8_t *term, int32_t offset) noexcept nogil:
    return term[offset + FLAGS_FIELD_OFFSET]

cdef inline bint is_padding_frame(const uint8_t *term, int32_t offset) noexcept nogil:
    return frame_type(term, offset) == HDR_TYPE_PAD

cdef inline int32_t frame_i32(const uint8_t *frame, int32_t field_offset) noexcept nogil:
    return (<const int32_t *>(frame + field_offset))[0]

cdef inline int64_t frame_i64(const uint8_t *frame, int32_t field_offset) noexcept nogil:
    # reserved value sits 8-aligned inside a 32-aligned frame
    return (<const int64_t *>(frame + field_offset))[0]

cdef inline int32_t compute_max_message_length(int32_t term_length) noexcept nogil:
    cdef int32_t eighth = term_length // 8
    return eighth if eighth < MAX_MESSAGE_LENGTH_LIMIT else MAX_MESSAGE_LENGTH_LIMIT

cdef inline int32_t compute_fragmented_length(int32_t length, int32_t max_payload_length) noexcept nogil:
    # all fragments are reserved with one tail update; full fragments need no alignment
    cdef int32_t num_max_payloads = length // max_payload_length
    cdef int32_t remaining = length % max_payload_length
    cdef int32_t last = align_i32(remaining + HEADER_LENGTH, FRAME_ALIGNMENT) if remaining > 0 else 0
    return num_max_payloads * (max_payload_length + HEADER_LENGTH) + last
