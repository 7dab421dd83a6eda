# SPDX-License-Identifier: Apache-2.0
# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""UDP frames (aeron_udp_protocol.h, io.aeron.protocol): the Python face of frames.pxd.

``validate_frame`` is the receive-side check (a frame type or a negative FRAME_INVALID_* code) and
``decode_data_header`` the DATA/PAD header read of the receive path, both called per datagram by the driver; the
``encode_*`` functions write one control frame (or heartbeat) into a caller's buffer at an offset and return its
length; ``decode_frame`` / ``decode_datagram`` turn a datagram into named tuples for control frames, cold paths and
tests (DATA payloads are memoryviews over the caller's buffer, not copies). Bad input raises MalformedFrameError; offsets or
lengths outside the buffer raise OutOfBoundsError.
"""
from collections import namedtuple

from cpython.buffer cimport PyBUF_ANY_CONTIGUOUS, PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t

from aeron.common.errors import MalformedFrameError, OutOfBoundsError

# Constants for Python callers. The .pxd enums are C-only and, this module sharing the .pxd's name, a Python
# global of the same name cannot be declared: publish them through the module dict instead.
globals().update({
    "CURRENT_VERSION": CURRENT_VERSION,
    "HDR_TYPE_PAD": HDR_TYPE_PAD, "HDR_TYPE_DATA": HDR_TYPE_DATA, "HDR_TYPE_NAK": HDR_TYPE_NAK,
    "HDR_TYPE_SM": HDR_TYPE_SM, "HDR_TYPE_ERR": HDR_TYPE_ERR, "HDR_TYPE_SETUP": HDR_TYPE_SETUP,
    "HDR_TYPE_RTTM": HDR_TYPE_RTTM, "HDR_TYPE_RES": HDR_TYPE_RES, "HDR_TYPE_RSP_SETUP": HDR_TYPE_RSP_SETUP,
    "HDR_TYPE_EXT": HDR_TYPE_EXT,
    "FRAME_HEADER_LENGTH": FRAME_HEADER_LENGTH, "DATA_HEADER_LENGTH": DATA_HEADER_LENGTH,
    "SETUP_HEADER_LENGTH": SETUP_HEADER_LENGTH, "SM_HEADER_LENGTH": SM_HEADER_LENGTH,
    "SM_WITH_GROUP_TAG_LENGTH": SM_WITH_GROUP_TAG_LENGTH, "NAK_HEADER_LENGTH": NAK_HEADER_LENGTH,
    "RTTM_HEADER_LENGTH": RTTM_HEADER_LENGTH, "ERR_HEADER_LENGTH": ERR_HEADER_LENGTH,
    "ERR_MAX_ERROR_MESSAGE_LENGTH": ERR_MAX_ERROR_MESSAGE_LENGTH, "RSP_SETUP_HEADER_LENGTH": RSP_SETUP_HEADER_LENGTH,
    "RES_MIN_LENGTH": RES_MIN_LENGTH,
    "BEGIN_FRAG_FLAG": BEGIN_FRAG_FLAG, "END_FRAG_FLAG": END_FRAG_FLAG, "UNFRAGMENTED": UNFRAGMENTED,
    "EOS_FLAG": EOS_FLAG, "REVOKED_FLAG": REVOKED_FLAG,
    "SETUP_SEND_RESPONSE_FLAG": SETUP_SEND_RESPONSE_FLAG, "SETUP_GROUP_FLAG": SETUP_GROUP_FLAG,
    "SM_SEND_SETUP_FLAG": SM_SEND_SETUP_FLAG, "SM_EOS_FLAG": SM_EOS_FLAG, "RTTM_REPLY_FLAG": RTTM_REPLY_FLAG,
    "ERR_HAS_GROUP_TAG_FLAG": ERR_HAS_GROUP_TAG_FLAG,
    "FRAME_INVALID_TOO_SHORT": FRAME_INVALID_TOO_SHORT, "FRAME_INVALID_VERSION": FRAME_INVALID_VERSION,
    "FRAME_INVALID_NEGATIVE_LENGTH": FRAME_INVALID_NEGATIVE_LENGTH, "FRAME_INVALID_TYPE": FRAME_INVALID_TYPE,
    "FRAME_INVALID_SHORT_FOR_TYPE": FRAME_INVALID_SHORT_FOR_TYPE, "FRAME_INVALID_LENGTH": FRAME_INVALID_LENGTH,
    "FRAME_INVALID_ALIGNMENT": FRAME_INVALID_ALIGNMENT, "FRAME_INVALID_TERM_OFFSET": FRAME_INVALID_TERM_OFFSET,
    "FRAME_INVALID_FIELD": FRAME_INVALID_FIELD,
})

FRAME_INVALID_REASONS = {
    FRAME_INVALID_TOO_SHORT: "datagram shorter than the 8-byte frame header",
    FRAME_INVALID_VERSION: "unsupported protocol version",
    FRAME_INVALID_NEGATIVE_LENGTH: "negative frame length",
    FRAME_INVALID_TYPE: "unknown or unsupported frame type",
    FRAME_INVALID_SHORT_FOR_TYPE: "datagram shorter than the header of its frame type",
    FRAME_INVALID_LENGTH: "frame length inconsistent with the datagram length",
    FRAME_INVALID_ALIGNMENT: "DATA/PAD datagram length not a multiple of 32",
    FRAME_INVALID_TERM_OFFSET: "term offset negative, not 32-aligned or outside the term",
    FRAME_INVALID_FIELD: "field out of range",
}

TYPE_NAMES = {HDR_TYPE_PAD: "PAD", HDR_TYPE_DATA: "DATA", HDR_TYPE_NAK: "NAK", HDR_TYPE_SM: "SM",
              HDR_TYPE_ERR: "ERR", HDR_TYPE_SETUP: "SETUP", HDR_TYPE_RTTM: "RTTM", HDR_TYPE_RES: "RES",
              HDR_TYPE_RSP_SETUP: "RSP_SETUP"}

_COMMON = "frame_length version flags type "
DataFrame = namedtuple("DataFrame", _COMMON + "term_offset session_id stream_id term_id reserved_value payload "
                                              "is_heartbeat")
SetupFrame = namedtuple("SetupFrame", _COMMON + "term_offset session_id stream_id initial_term_id active_term_id "
                                                "term_length mtu ttl")
StatusMessageFrame = namedtuple("StatusMessageFrame", _COMMON + "session_id stream_id consumption_term_id "
                                                                "consumption_term_offset receiver_window "
                                                                "receiver_id group_tag")
NakFrame = namedtuple("NakFrame", _COMMON + "session_id stream_id term_id term_offset length")
RttmFrame = namedtuple("RttmFrame", _COMMON + "session_id stream_id echo_timestamp reception_delta receiver_id")
ErrorFrame = namedtuple("ErrorFrame", _COMMON + "session_id stream_id receiver_id group_tag error_code "
                                                "error_length error_message")
ResponseSetupFrame = namedtuple("ResponseSetupFrame", _COMMON + "session_id stream_id response_session_id")
ResolutionFrame = namedtuple("ResolutionFrame", _COMMON + "entries")


cdef inline void _span(Py_buffer *view, Py_ssize_t offset, Py_ssize_t length, Py_ssize_t *out_length) except *:
    if length < 0:
        length = view.len - offset
    if offset < 0 or length < 0 or offset > view.len or length > view.len - offset:
        raise OutOfBoundsError(f"offset {offset} + length {length} outside a buffer of {view.len} bytes")
    out_length[0] = length


def validate_frame(buffer, Py_ssize_t offset=0, Py_ssize_t length=-1):
    """Receive-side validity check of the datagram at ``buffer[offset:offset + length]`` (length -1: to the end).

    Returns:
        the frame type (HDR_TYPE_*), or a negative FRAME_INVALID_* code (see FRAME_INVALID_REASONS).
    """
    cdef Py_buffer view
    cdef Py_ssize_t n
    PyObject_GetBuffer(buffer, &view, PyBUF_ANY_CONTIGUOUS)
    try:
        _span(&view, offset, length, &n)
        # a few header reads: the driver calls this per datagram, where dropping the GIL would cost more
        return frame_validate(<const uint8_t *>view.buf + offset, n)
    finally:
        PyBuffer_Release(&view)


def decode_data_header(buffer, Py_ssize_t offset=0):
    """The header of the DATA or PAD frame at ``offset`` (first frame of a datagram validate_frame accepted) as a
    plain tuple ``(frame_length, flags, term_offset, session_id, stream_id, term_id)``: the receive path's per-
    datagram read, without the named tuple and payload view of decode_frame.

    Raises OutOfBoundsError when fewer than 32 bytes follow ``offset``.
    """
    cdef Py_buffer view
    cdef const uint8_t *p
    PyObject_GetBuffer(buffer, &view, PyBUF_ANY_CONTIGUOUS)
    try:
        if offset < 0 or offset > view.len - DATA_HEADER_LENGTH:
            raise OutOfBoundsError(f"a {DATA_HEADER_LENGTH}-byte header at offset {offset} does not fit a buffer "
                                   f"of {view.len} bytes")
        p = <const uint8_t *>view.buf + offset
        return (frames_frame_length(p), p[FLAGS_FIELD_OFFSET], frames_get_i32(p, TERM_OFFSET_FIELD_OFFSET),
                frames_get_i32(p, SESSION_ID_FIELD_OFFSET), frames_get_i32(p, STREAM_ID_FIELD_OFFSET),
                frames_get_i32(p, TERM_ID_FIELD_OFFSET))
    finally:
        PyBuffer_Release(&view)


cdef class _Writer:
    """Pins a writable buffer for one encode (released by close())."""
    cdef Py_buffer view
    cdef bint held
    cdef uint8_t *p

    def __cinit__(self, buffer, Py_ssize_t offset, Py_ssize_t needed):
        PyObject_GetBuffer(buffer, &self.view, PyBUF_WRITABLE | PyBUF_ANY_CONTIGUOUS)
        self.held = True
        if offset < 0 or needed > self.view.len or offset > self.view.len - needed:
            PyBuffer_Release(&self.view)
            self.held = False
            raise OutOfBoundsError(f"{needed} bytes at offset {offset} do not fit a buffer of {self.view.len} bytes")
        self.p = <uint8_t *>self.view.buf + offset

    cdef void close(self) noexcept:
        if self.held:
            PyBuffer_Release(&self.view)
            self.held = False

    def __dealloc__(self):
        self.close()


def encode_setup(buffer, Py_ssize_t offset, int32_t session_id, int32_t stream_id, int32_t initial_term_id,
                 int32_t active_term_id, int32_t term_offset, int32_t term_length, int32_t mtu=1408,
                 int32_t ttl=0, uint8_t flags=0):
    """Write a SETUP frame at ``offset``. Returns its length (40)."""
    cdef _Writer w = _Writer(buffer, offset, SETUP_HEADER_LENGTH)
    try:
        return frames_write_setup(w.p, flags, term_offset, session_id, stream_id, initial_term_id, active_term_id,
                                  term_length, mtu, ttl)
    finally:
        w.close()


def encode_heartbeat(buffer, Py_ssize_t offset, int32_t session_id, int32_t stream_id, int32_t term_id,
                     int32_t term_offset, uint8_t flags=UNFRAGMENTED):
    """Write a heartbeat (DATA header, frame length 0, reserved value 0) at ``offset``; flags 0xE0 = EOS.
    Returns its length (32)."""
    cdef _Writer w = _Writer(buffer, offset, DATA_HEADER_LENGTH)
    try:
        return frames_write_heartbeat(w.p, flags, term_offset, session_id, stream_id, term_id)
    finally:
        w.close()


def encode_status_message(buffer, Py_ssize_t offset, int32_t session_id, int32_t stream_id,
                          int32_t consumption_term_id, int32_t consumption_term_offset, int32_t receiver_window,
                          int64_t receiver_id, group_tag=None, uint8_t flags=0):
    """Write an SM at ``offset``, 44 bytes with a group tag, else 36. Returns its length."""
    cdef bint tagged = group_tag is not None
    cdef int64_t tag = group_tag if tagged else 0
    cdef _Writer w = _Writer(buffer, offset, SM_WITH_GROUP_TAG_LENGTH if tagged else SM_HEADER_LENGTH)
    try:
        return frames_write_status_message(w.p, flags, session_id, stream_id, consumption_term_id,
                                           consumption_term_offset, receiver_window, receiver_id, tagged, tag)
    finally:
        w.close()


def encode_nak(buffer, Py_ssize_t offset, int32_t session_id, int32_t stream_id, int32_t term_id,
               int32_t term_offset, int32_t length):
    """Write a NAK for the gap [term_offset, term_offset + length) of term_id. Returns its length (28)."""
    cdef _Writer w = _Writer(buffer, offset, NAK_HEADER_LENGTH)
    try:
        return frames_write_nak(w.p, session_id, stream_id, term_id, term_offset, length)
    finally:
        w.close()


def encode_rttm(buffer, Py_ssize_t offset, int32_t session_id, int32_t stream_id, int64_t echo_timestamp,
                int64_t reception_delta, int64_t receiver_id, uint8_t flags=0):
    """Write an RTTM at ``offset`` (flags RTTM_REPLY_FLAG on a request). Returns its length (40)."""
    cdef _Writer w = _Writer(buffer, offset, RTTM_HEADER_LENGTH)
    try:
        return frames_write_rttm(w.p, flags, session_id, stream_id, echo_timestamp, reception_delta, receiver_id)
    finally:
        w.close()


def encode_error(buffer, Py_ssize_t offset, int32_t session_id, int32_t stream_id, int64_t receiver_id,
                 int32_t error_code, message, group_tag=None):
    """Write an ERR frame; ``message`` (str, ASCII with '?' for anything else, or bytes) is cut at 1023 bytes.
    Without a group tag the flag is clear and the tag field holds -1, as the C driver writes it.
    Returns its length (40 + text length)."""
    cdef bytes text = message.encode("ascii", "replace") if isinstance(message, str) else bytes(message)
    text = text[:ERR_MAX_ERROR_MESSAGE_LENGTH]
    cdef bint tagged = group_tag is not None
    cdef int64_t tag = group_tag if tagged else -1
    cdef int32_t text_length = <int32_t>len(text)
    cdef _Writer w = _Writer(buffer, offset, ERR_HEADER_LENGTH + text_length)
    try:
        return frames_write_error(w.p, session_id, stream_id, receiver_id, tagged, tag, error_code,
                                  <const uint8_t *><char *>text, text_length)
    finally:
        w.close()


def encode_response_setup(buffer, Py_ssize_t offset, int32_t session_id, int32_t stream_id,
                          int32_t response_session_id):
    """Write an RSP_SETUP frame. Returns its length (20)."""
    cdef _Writer w = _Writer(buffer, offset, RSP_SETUP_HEADER_LENGTH)
    try:
        return frames_write_response_setup(w.p, session_id, stream_id, response_session_id)
    finally:
        w.close()


cdef object _decode_one(object mv, const uint8_t *p, Py_ssize_t at, Py_ssize_t length, uint16_t frame_type):
    # p points at the frame, ``at`` is its offset in ``mv``; the caller validated the datagram
    cdef int32_t frame_length = frames_frame_length(p)
    cdef bint present
    cdef int64_t tag
    common = (frame_length, p[VERSION_FIELD_OFFSET], p[FLAGS_FIELD_OFFSET], frame_type)
    if frame_type == HDR_TYPE_DATA or frame_type == HDR_TYPE_PAD:
        heartbeat = frame_type == HDR_TYPE_DATA and frames_is_heartbeat(p, length)
        end = at + (frame_length if frame_type == HDR_TYPE_DATA and frame_length > DATA_HEADER_LENGTH
                    else DATA_HEADER_LENGTH)
        return DataFrame(*common, frames_get_i32(p, TERM_OFFSET_FIELD_OFFSET),
                         frames_get_i32(p, SESSION_ID_FIELD_OFFSET), frames_get_i32(p, STREAM_ID_FIELD_OFFSET),
                         frames_get_i32(p, TERM_ID_FIELD_OFFSET), frames_get_i64(p, RESERVED_VALUE_FIELD_OFFSET),
                         mv[at + DATA_HEADER_LENGTH:end], heartbeat)
    if frame_type == HDR_TYPE_SETUP:
        return SetupFrame(*common, frames_get_i32(p, SETUP_TERM_OFFSET_FIELD_OFFSET),
                          frames_get_i32(p, SETUP_SESSION_ID_FIELD_OFFSET),
                          frames_get_i32(p, SETUP_STREAM_ID_FIELD_OFFSET),
                          frames_get_i32(p, SETUP_INITIAL_TERM_ID_FIELD_OFFSET),
                          frames_get_i32(p, SETUP_ACTIVE_TERM_ID_FIELD_OFFSET),
                          frames_get_i32(p, SETUP_TERM_LENGTH_FIELD_OFFSET),
                          frames_get_i32(p, SETUP_MTU_LENGTH_FIELD_OFFSET), frames_get_i32(p, SETUP_TTL_FIELD_OFFSET))
    if frame_type == HDR_TYPE_SM:
        tag = frames_sm_group_tag(p, &present)
        return StatusMessageFrame(*common, frames_get_i32(p, SM_SESSION_ID_FIELD_OFFSET),
                                  frames_get_i32(p, SM_STREAM_ID_FIELD_OFFSET),
                                  frames_get_i32(p, SM_CONSUMPTION_TERM_ID_FIELD_OFFSET),
                                  frames_get_i32(p, SM_CONSUMPTION_TERM_OFFSET_FIELD_OFFSET),
                                  frames_get_i32(p, SM_RECEIVER_WINDOW_FIELD_OFFSET),
                                  frames_get_i64(p, SM_RECEIVER_ID_FIELD_OFFSET), tag if present else None)
    if frame_type == HDR_TYPE_NAK:
        return NakFrame(*common, frames_get_i32(p, NAK_SESSION_ID_FIELD_OFFSET),
                        frames_get_i32(p, NAK_STREAM_ID_FIELD_OFFSET), frames_get_i32(p, NAK_TERM_ID_FIELD_OFFSET),
                        frames_get_i32(p, NAK_TERM_OFFSET_FIELD_OFFSET), frames_get_i32(p, NAK_LENGTH_FIELD_OFFSET))
    if frame_type == HDR_TYPE_RTTM:
        return RttmFrame(*common, frames_get_i32(p, RTTM_SESSION_ID_FIELD_OFFSET),
                         frames_get_i32(p, RTTM_STREAM_ID_FIELD_OFFSET),
                         frames_get_i64(p, RTTM_ECHO_TIMESTAMP_FIELD_OFFSET),
                         frames_get_i64(p, RTTM_RECEPTION_DELTA_FIELD_OFFSET),
                         frames_get_i64(p, RTTM_RECEIVER_ID_FIELD_OFFSET))
    if frame_type == HDR_TYPE_ERR:
        text_length = frames_get_i32(p, ERR_ERROR_LENGTH_FIELD_OFFSET)
        text = bytes(mv[at + ERR_ERROR_STRING_FIELD_OFFSET:at + ERR_ERROR_STRING_FIELD_OFFSET + text_length])
        return ErrorFrame(*common, frames_get_i32(p, ERR_SESSION_ID_FIELD_OFFSET),
                          frames_get_i32(p, ERR_STREAM_ID_FIELD_OFFSET), frames_get_i64(p, ERR_RECEIVER_ID_FIELD_OFFSET),
                          frames_get_i64(p, ERR_GROUP_TAG_FIELD_OFFSET), frames_get_i32(p, ERR_ERROR_CODE_FIELD_OFFSET),
                          text_length, text.decode("ascii", "replace"))
    if frame_type == HDR_TYPE_RSP_SETUP:
        return ResponseSetupFrame(*common, frames_get_i32(p, RSP_SETUP_SESSION_ID_FIELD_OFFSET),
                                  frames_get_i32(p, RSP_SETUP_STREAM_ID_FIELD_OFFSET),
                                  frames_get_i32(p, RSP_SETUP_RESPONSE_SESSION_ID_FIELD_OFFSET))
    return ResolutionFrame(*common, mv[at + FRAME_HEADER_LENGTH:at + frame_length])


cdef object _byte_view(object buffer):
    mv = memoryview(buffer)
    if mv.ndim != 1 or mv.itemsize != 1 or mv.format not in ("B", "b", "c"):
        mv = mv.cast("B")
    return mv


cdef object _decode(object buffer, Py_ssize_t offset, Py_ssize_t length, bint all_frames):
    cdef Py_buffer view
    cdef Py_ssize_t n, at, next_at
    cdef const uint8_t *p
    cdef int rc
    PyObject_GetBuffer(buffer, &view, PyBUF_ANY_CONTIGUOUS)
    try:
        _span(&view, offset, length, &n)
        p = <const uint8_t *>view.buf + offset
        rc = frame_validate(p, n)
        if rc < 0:
            type_id = frames_type(p) if n >= FRAME_HEADER_LENGTH else None
            raise MalformedFrameError(f"invalid frame ({rc}): {FRAME_INVALID_REASONS[rc]}", reason=rc,
                                      type_id=type_id, offset=offset)
        mv = _byte_view(buffer)
        if not all_frames:
            return _decode_one(mv, p, offset, n, <uint16_t>rc)
        frames = []
        if rc != HDR_TYPE_DATA and rc != HDR_TYPE_PAD:
            frames.append(_decode_one(mv, p, offset, n, <uint16_t>rc))
            return frames
        at = 0
        while at < n:
            next_at = frames_next_data_frame(p, n, at)
            if next_at < 0:
                raise MalformedFrameError(f"malformed DATA frame at offset {at} of a {n}-byte datagram",
                                          reason=FRAME_INVALID_LENGTH, type_id=frames_type(p + at)
                                          if at + FRAME_HEADER_LENGTH <= n else None, offset=offset + at)
            frames.append(_decode_one(mv, p + at, offset + at, n, frames_type(p + at)))
            at = next_at
        return frames
    finally:
        PyBuffer_Release(&view)


def decode_frame(buffer, Py_ssize_t offset=0, Py_ssize_t length=-1):
    """Decode the first frame of the datagram at ``buffer[offset:offset + length]`` (after validate_frame) into a
    DataFrame, SetupFrame, StatusMessageFrame, NakFrame, RttmFrame, ErrorFrame, ResponseSetupFrame or
    ResolutionFrame. Raises MalformedFrameError (``reason`` = FRAME_INVALID_*) when the datagram is invalid."""
    return _decode(buffer, offset, length, False)


def decode_datagram(buffer, Py_ssize_t offset=0, Py_ssize_t length=-1):
    """Decode every frame of a datagram: a DATA datagram may batch several 32-aligned frames with contiguous
    term offsets (a PAD ends it); any other type is one frame. Returns a list; raises MalformedFrameError."""
    return _decode(buffer, offset, length, True)


def type_name(int frame_type):
    """Aeron's short name of a frame type code ("DATA", "SM", ...), or "UNKNOWN(<code>)"."""
    return TYPE_NAMES.get(frame_type, f"UNKNOWN({frame_type})")
