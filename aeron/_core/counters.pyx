# SPDX-License-Identifier: Apache-2.0
# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Counters: reader, single-writer manager, hot counter handle, type ids, system counters, keys.

Port of Agrona's CountersReader / CountersManager (and aeron_counters_manager.c). Layouts follow
the values record (128 bytes) and metadata record (512 bytes) of CountersReader.
"""
import collections
import struct
import time

cimport cython
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_WRITABLE, PyBUF_ANY_CONTIGUOUS
from libc.stdint cimport int32_t, int64_t, uint8_t, INT64_MAX
from libc.string cimport memcpy, memset

from aeron._core.atomic cimport (load_acquire_i32, load_acquire_i64, store_release_i32, store_release_i64,
                                 get_and_add_i64)
from aeron._core.atomic_buffer cimport AtomicBuffer
from aeron.common.errors import CorruptFileError, IllegalStateError, InvalidArgumentError, OutOfBoundsError

# -- layout constants (Python view of the cdef enum in counters.pxd) ----------------------------------
COUNTER_LENGTH = COUNTERS_COUNTER_LENGTH
REGISTRATION_ID_OFFSET = COUNTERS_REGISTRATION_ID_OFFSET
OWNER_ID_OFFSET = COUNTERS_OWNER_ID_OFFSET
REFERENCE_ID_OFFSET = COUNTERS_REFERENCE_ID_OFFSET
METADATA_LENGTH = COUNTERS_METADATA_LENGTH
TYPE_ID_OFFSET = COUNTERS_TYPE_ID_OFFSET
FREE_FOR_REUSE_DEADLINE_OFFSET = COUNTERS_FREE_FOR_REUSE_DEADLINE_OFFSET
KEY_OFFSET = COUNTERS_KEY_OFFSET
LABEL_OFFSET = COUNTERS_LABEL_OFFSET
MAX_KEY_LENGTH = COUNTERS_MAX_KEY_LENGTH
MAX_LABEL_LENGTH = COUNTERS_MAX_LABEL_LENGTH
RECORD_UNUSED = COUNTERS_RECORD_UNUSED
RECORD_ALLOCATED = COUNTERS_RECORD_ALLOCATED
RECORD_RECLAIMED = COUNTERS_RECORD_RECLAIMED
NOT_FREE_TO_REUSE = INT64_MAX
DEFAULT_TYPE_ID = 0
DEFAULT_REGISTRATION_ID = 0
DEFAULT_OWNER_ID = 0
DEFAULT_REFERENCE_ID = 0
NULL_COUNTER_ID = -1

# -- counter type ids (names and values as AeronCounters) -----------------------------------------------
DRIVER_SYSTEM_COUNTER_TYPE_ID = 0
DRIVER_PUBLISHER_LIMIT_TYPE_ID = 1
DRIVER_SENDER_POSITION_TYPE_ID = 2
DRIVER_RECEIVER_HWM_TYPE_ID = 3
DRIVER_SUBSCRIBER_POSITION_TYPE_ID = 4
DRIVER_RECEIVER_POS_TYPE_ID = 5
DRIVER_SEND_CHANNEL_STATUS_TYPE_ID = 6
DRIVER_RECEIVE_CHANNEL_STATUS_TYPE_ID = 7
DRIVER_SENDER_LIMIT_TYPE_ID = 9
DRIVER_PER_IMAGE_TYPE_ID = 10
DRIVER_HEARTBEAT_TYPE_ID = 11
DRIVER_PUBLISHER_POS_TYPE_ID = 12
DRIVER_SENDER_BPE_TYPE_ID = 13
DRIVER_LOCAL_SOCKET_ADDRESS_STATUS_TYPE_ID = 14
NAME_RESOLVER_NEIGHBORS_COUNTER_TYPE_ID = 15
NAME_RESOLVER_CACHE_ENTRIES_COUNTER_TYPE_ID = 16
FLOW_CONTROL_RECEIVERS_COUNTER_TYPE_ID = 17
MDC_DESTINATIONS_COUNTER_TYPE_ID = 18
DRIVER_SENDER_NAKS_RECEIVED_TYPE_ID = 19
DRIVER_RECEIVER_NAKS_SENT_TYPE_ID = 20
NAME_RESOLVER_BOOTSTRAP_NEIGHBOR_TYPE_ID = 21

# Channel endpoint status values (value of type 6/7 counters), as ChannelEndpointStatus.
CHANNEL_ENDPOINT_STATUS_ERRORED = -1
CHANNEL_ENDPOINT_STATUS_INITIALIZING = 0
CHANNEL_ENDPOINT_STATUS_ACTIVE = 1
CHANNEL_ENDPOINT_STATUS_CLOSING = 2

# -- system counters (aeron_system_counters.c): id = key = registration id, owner -1, labels as allocated --
SYSTEM_COUNTERS = (
    (0, "BYTES_SENT", "Bytes sent"),
    (1, "BYTES_RECEIVED", "Bytes received"),
    (2, "RECEIVER_PROXY_FAILS", "Failed offers to ReceiverProxy"),
    (3, "SENDER_PROXY_FAILS", "Failed offers to SenderProxy"),
    (4, "CONDUCTOR_PROXY_FAILS", "Failed offers to DriverConductorProxy"),
    (5, "NAK_MESSAGES_SENT", "NAKs sent"),
    (6, "NAK_MESSAGES_RECEIVED", "NAKs received"),
    (7, "STATUS_MESSAGES_SENT", "Status Messages sent"),
    (8, "STATUS_MESSAGES_RECEIVED", "Status Messages received"),
    (9, "HEARTBEATS_SENT", "Heartbeats sent"),
    (10, "HEARTBEATS_RECEIVED", "Heartbeats received"),
    (11, "RETRANSMITS_SENT", "Retransmits sent"),
    (12, "FLOW_CONTROL_UNDER_RUNS", "Flow control under runs"),
    (13, "FLOW_CONTROL_OVER_RUNS", "Flow control over runs"),
    (14, "INVALID_PACKETS", "Invalid packets"),
    (15, "ERRORS", "Errors"),
    (16, "SHORT_SENDS", "Short sends"),
    (17, "FREE_FAILS", "Failed attempts to free log buffers"),
    (18, "SENDER_FLOW_CONTROL_LIMITS", "Sender flow control limits, i.e. back-pressure events"),
    (19, "UNBLOCKED_PUBLICATIONS", "Unblocked Publications"),
    (20, "UNBLOCKED_COMMANDS", "Unblocked Control Commands"),
    (21, "POSSIBLE_TTL_ASYMMETRY", "Possible TTL Asymmetry"),
    (22, "CONTROLLABLE_IDLE_STRATEGY", "ControllableIdleStrategy status"),
    (23, "LOSS_GAP_FILLS", "Loss gap fills"),
    (24, "CLIENT_TIMEOUTS", "Client liveness timeouts"),
    (25, "RESOLUTION_CHANGES", "Resolution changes"),
    (26, "CONDUCTOR_MAX_CYCLE_TIME", "Conductor max cycle time doing its work in ns"),
    (27, "CONDUCTOR_CYCLE_TIME_THRESHOLD_EXCEEDED", "Conductor work cycle exceeded threshold count"),
    (28, "SENDER_MAX_CYCLE_TIME", "Sender max cycle time doing its work in ns"),
    (29, "SENDER_CYCLE_TIME_THRESHOLD_EXCEEDED", "Sender work cycle exceeded threshold count"),
    (30, "RECEIVER_MAX_CYCLE_TIME", "Receiver max cycle time doing its work in ns"),
    (31, "RECEIVER_CYCLE_TIME_THRESHOLD_EXCEEDED", "Receiver work cycle exceeded threshold count"),
    (32, "NAME_RESOLVER_MAX_TIME", "NameResolver max time in ns"),
    (33, "NAME_RESOLVER_TIME_THRESHOLD_EXCEEDED", "NameResolver exceeded threshold count"),
    (34, "AERON_VERSION", "Aeron software"),
    (35, "BYTES_CURRENTLY_MAPPED", "Bytes currently mapped"),
    (36, "RETRANSMITTED_BYTES", "Retransmitted bytes"),
    (37, "RETRANSMIT_OVERFLOW", "Retransmit Pool Overflow count"),
    (38, "ERROR_FRAMES_RECEIVED", "Error Frames received"),
    (39, "ERROR_FRAMES_SENT", "Error Frames sent"),
    (40, "PUBLICATIONS_REVOKED", "Publications Revoked"),
    (41, "PUBLICATION_IMAGES_REVOKED", "Publication Images Revoked"),
    (42, "IMAGES_REJECTED", "Images rejected"),
    (43, "CONTROL_PROTOCOL_VERSION", "Control protocol version"),
    (44, "STATUS_MESSAGES_REJECTED", "Status Messages rejected"),
    (45, "NATIVE_RESOURCE_AGENT_PROXY_FAILS", "Failed offers to NativeResourceAgentProxy"),
)
# (id, label) pairs; labels before the driver appends its suffixes (": SHARED", " version=..." ...).
SYSTEM_COUNTER_LABELS = tuple((i, label) for i, _, label in SYSTEM_COUNTERS)
SYSTEM_COUNTER_COUNT = len(SYSTEM_COUNTERS)
globals().update({name: i for i, name, _ in SYSTEM_COUNTERS})
# Our own system counters (type 0 too): their ids (key and registration id) start at 1000, clear of Aeron's 0..45
# (aeron_system_counters.h) and of those Aeron adds after 45. The driver allocates each when it is first needed, after
# Aeron's, so that every other counter keeps the counter id the C driver gives it.
EXTRA_SYSTEM_COUNTERS = (
    (1000, "UNCONFIRMED_IMAGES_REJECTED", "Unconfirmed images rejected"),
)
globals().update({name: i for i, name, _ in EXTRA_SYSTEM_COUNTERS})

# Stream counter key: int64 registration id, int32 session id, int32 stream id, int32 channel length,
# channel ASCII (at most 92 bytes so the whole key fits in 112): aeron_stream_position_counter_key_layout_t.
STREAM_KEY_REGISTRATION_ID_OFFSET = 0
STREAM_KEY_SESSION_ID_OFFSET = 8
STREAM_KEY_STREAM_ID_OFFSET = 12
STREAM_KEY_CHANNEL_OFFSET = 16
STREAM_KEY_MAX_CHANNEL_LENGTH = COUNTERS_MAX_KEY_LENGTH - 20
CHANNEL_KEY_MAX_CHANNEL_LENGTH = COUNTERS_MAX_KEY_LENGTH - 4
LOCAL_SOCKADDR_KEY_MAX_ADDRESS_LENGTH = COUNTERS_MAX_KEY_LENGTH - 8 - 1   # C writes a NUL after it

_STREAM_KEY = struct.Struct("<qiii")
_I32 = struct.Struct("<i")
_I64 = struct.Struct("<q")

CounterRecord = collections.namedtuple(
    "CounterRecord",
    "counter_id type_id value registration_id owner_id reference_id key label")


cdef bytes _ascii(object text):
    # Labels and channels are ASCII in Aeron; other characters become '?', as Agrona's putStringAscii.
    if isinstance(text, str):
        return (<str>text).encode("ascii", "replace")
    return bytes(text)


def stream_counter_key_encode(int64_t registration_id, int32_t session_id, int32_t stream_id, channel):
    """Key bytes of a stream counter (pub-lmt, pub-pos, snd-*, rcv-*, sub-pos): channel cut to 92 bytes."""
    cdef bytes ch = _ascii(channel)[:STREAM_KEY_MAX_CHANNEL_LENGTH]
    return _STREAM_KEY.pack(registration_id, session_id, stream_id, len(ch)) + ch


def stream_counter_key_decode(key):
    """(registration_id, session_id, stream_id, channel) from stream counter key bytes."""
    key = bytes(key)
    if len(key) < 20:
        raise InvalidArgumentError(f"stream counter key needs at least 20 bytes, got {len(key)}")
    reg, session, stream, n = _STREAM_KEY.unpack_from(key, 0)
    if n < 0 or n > STREAM_KEY_MAX_CHANNEL_LENGTH or 20 + n > len(key):
        raise CorruptFileError(f"stream counter key channel length {n} out of range", offset=16)
    return reg, session, stream, key[20:20 + n].decode("ascii", "replace")


def stream_counter_label(name, int64_t registration_id, int32_t session_id, int32_t stream_id, channel,
                         suffix=""):
    """Label as the driver writes it: ``<name>: <registrationId> <sessionId> <streamId> <channel><suffix>``."""
    return f"{name}: {registration_id} {session_id} {stream_id} {channel}{suffix}"


def channel_status_key_encode(channel):
    """Key of a channel status counter (snd-channel, rcv-channel, mdc-num-dest): channel cut to 108 bytes."""
    cdef bytes ch = _ascii(channel)[:CHANNEL_KEY_MAX_CHANNEL_LENGTH]
    return _I32.pack(len(ch)) + ch


def channel_status_key_decode(key):
    key = bytes(key)
    if len(key) < 4:
        raise InvalidArgumentError("channel status key needs at least 4 bytes")
    n = _I32.unpack_from(key, 0)[0]
    if n < 0 or n > CHANNEL_KEY_MAX_CHANNEL_LENGTH or 4 + n > len(key):
        raise CorruptFileError(f"channel status key length {n} out of range", offset=0)
    return key[4:4 + n].decode("ascii", "replace")


def local_sockaddr_key_encode(int32_t channel_status_id, address):
    """Key of a local socket address counter: status counter id, length, address and a NUL (as C)."""
    cdef bytes a = _ascii(address)[:LOCAL_SOCKADDR_KEY_MAX_ADDRESS_LENGTH]
    return _I32.pack(channel_status_id) + _I32.pack(len(a)) + a + b"\x00"


def local_sockaddr_key_decode(key):
    """(channel_status_id, address); bytes after the declared length are ignored (C leaves garbage)."""
    key = bytes(key)
    if len(key) < 8:
        raise InvalidArgumentError("local sockaddr key needs at least 8 bytes")
    status_id = _I32.unpack_from(key, 0)[0]
    n = _I32.unpack_from(key, 4)[0]
    if n < 0 or 8 + n > len(key):
        raise CorruptFileError(f"local sockaddr key length {n} out of range", offset=4)
    return status_id, key[8:8 + n].decode("ascii", "replace")


def heartbeat_key_encode(int64_t client_id):
    return _I64.pack(client_id)


def system_counter_key_encode(int32_t system_counter_id):
    return _I32.pack(system_counter_id)


cdef class CountersReader:
    """Read-only view of the counters sections (any process may hold one).

    ``CountersReader(metadata, values)`` with two AtomicBuffers. Bad ids raise OutOfBoundsError.
    """

    def __init__(self, AtomicBuffer metadata not None, AtomicBuffer values not None):
        metadata.check_open()
        values.check_open()
        if values.length % COUNTERS_COUNTER_LENGTH != 0:
            raise InvalidArgumentError(
                f"counters values length {values.length} is not a multiple of {COUNTERS_COUNTER_LENGTH}")
        if metadata.length < values.length * (COUNTERS_METADATA_LENGTH // COUNTERS_COUNTER_LENGTH):
            raise InvalidArgumentError(
                f"counters metadata length {metadata.length} < 4 x values length {values.length}")
        if values.length // COUNTERS_COUNTER_LENGTH > 0x7fffffff:
            raise InvalidArgumentError("counters values buffer too large")
        if (<size_t>metadata.data) % 8 != 0 or (<size_t>values.data) % 8 != 0:
            raise InvalidArgumentError("counters buffers must be 8-byte aligned for atomic access")
        self.metadata_buffer = metadata
        self.values_buffer = values
        self.max_counter_id = <int32_t>(values.length // COUNTERS_COUNTER_LENGTH - 1)

    cdef int check_id(self, int32_t counter_id) except -1:
        if self.values_buffer.closed or self.metadata_buffer.closed:
            raise IllegalStateError("counters buffers are closed")
        if counter_id < 0 or counter_id > self.max_counter_id:
            raise OutOfBoundsError(f"counter id {counter_id} out of range 0..{self.max_counter_id}")
        return 0

    cdef uint8_t *meta_ptr(self, int32_t counter_id) noexcept:
        return self.metadata_buffer.data + <Py_ssize_t>counter_id * COUNTERS_METADATA_LENGTH

    cdef uint8_t *value_ptr(self, int32_t counter_id) noexcept:
        return self.values_buffer.data + <Py_ssize_t>counter_id * COUNTERS_COUNTER_LENGTH

    cdef object read_label(self, int32_t counter_id):
        cdef uint8_t *m = self.meta_ptr(counter_id)
        cdef int32_t n = load_acquire_i32(<int32_t *>(m + COUNTERS_LABEL_OFFSET))
        if n < 0 or n > COUNTERS_MAX_LABEL_LENGTH:
            raise CorruptFileError(f"counter {counter_id} label length {n} out of range",
                                   path=self.metadata_buffer.path,
                                   offset=<Py_ssize_t>counter_id * COUNTERS_METADATA_LENGTH + COUNTERS_LABEL_OFFSET)
        return (<char *>m)[COUNTERS_LABEL_OFFSET + 4:COUNTERS_LABEL_OFFSET + 4 + n].decode("ascii", "replace")

    def get_counter_value(self, int32_t counter_id):
        """The counter's value (acquire load)."""
        self.check_id(counter_id)
        return load_acquire_i64(<int64_t *>self.value_ptr(counter_id))

    def get_counter_state(self, int32_t counter_id):
        """RECORD_UNUSED (0), RECORD_ALLOCATED (1) or RECORD_RECLAIMED (-1); other values mean corruption."""
        self.check_id(counter_id)
        return load_acquire_i32(<int32_t *>self.meta_ptr(counter_id))

    def get_counter_type_id(self, int32_t counter_id):
        self.check_id(counter_id)
        return (<int32_t *>(self.meta_ptr(counter_id) + COUNTERS_TYPE_ID_OFFSET))[0]

    def get_free_for_reuse_deadline(self, int32_t counter_id):
        self.check_id(counter_id)
        return load_acquire_i64(<int64_t *>(self.meta_ptr(counter_id) + COUNTERS_FREE_FOR_REUSE_DEADLINE_OFFSET))

    def get_counter_key(self, int32_t counter_id):
        """All 112 key bytes (readers must rely on the lengths inside, not on trailing zeros)."""
        self.check_id(counter_id)
        cdef char *m = <char *>self.meta_ptr(counter_id)
        return m[COUNTERS_KEY_OFFSET:COUNTERS_KEY_OFFSET + COUNTERS_MAX_KEY_LENGTH]

    def get_counter_label(self, int32_t counter_id):
        self.check_id(counter_id)
        return self.read_label(counter_id)

    def get_counter_registration_id(self, int32_t counter_id):
        self.check_id(counter_id)
        return load_acquire_i64(<int64_t *>(self.value_ptr(counter_id) + COUNTERS_REGISTRATION_ID_OFFSET))

    def get_counter_owner_id(self, int32_t counter_id):
        self.check_id(counter_id)
        return load_acquire_i64(<int64_t *>(self.value_ptr(counter_id) + COUNTERS_OWNER_ID_OFFSET))

    def get_counter_reference_id(self, int32_t counter_id):
        self.check_id(counter_id)
        return load_acquire_i64(<int64_t *>(self.value_ptr(counter_id) + COUNTERS_REFERENCE_ID_OFFSET))

    def for_each(self, callback):
        """Call ``callback(counter_id, type_id, key_bytes, label)`` for every allocated counter.

        Stops at the first unused record and skips reclaimed ones, as CountersReader.forEach does.
        """
        cdef int32_t i, state
        cdef uint8_t *m
        for i in range(self.max_counter_id + 1):
            self.check_id(i)      # the buffers may have been closed by the callback
            m = self.meta_ptr(i)
            state = load_acquire_i32(<int32_t *>m)
            if state == COUNTERS_RECORD_UNUSED:
                break
            if state == COUNTERS_RECORD_ALLOCATED:
                callback(i, (<int32_t *>(m + COUNTERS_TYPE_ID_OFFSET))[0],
                         (<char *>m)[COUNTERS_KEY_OFFSET:COUNTERS_KEY_OFFSET + COUNTERS_MAX_KEY_LENGTH],
                         self.read_label(i))

    def counters(self):
        """A list of CounterRecord for every allocated counter (same walk as for_each)."""
        out = []
        cdef int32_t i, state
        cdef uint8_t *m
        cdef uint8_t *v
        for i in range(self.max_counter_id + 1):
            self.check_id(i)
            m = self.meta_ptr(i)
            state = load_acquire_i32(<int32_t *>m)
            if state == COUNTERS_RECORD_UNUSED:
                break
            if state != COUNTERS_RECORD_ALLOCATED:
                continue
            v = self.value_ptr(i)
            out.append(CounterRecord(
                i, (<int32_t *>(m + COUNTERS_TYPE_ID_OFFSET))[0],
                load_acquire_i64(<int64_t *>v),
                load_acquire_i64(<int64_t *>(v + COUNTERS_REGISTRATION_ID_OFFSET)),
                load_acquire_i64(<int64_t *>(v + COUNTERS_OWNER_ID_OFFSET)),
                load_acquire_i64(<int64_t *>(v + COUNTERS_REFERENCE_ID_OFFSET)),
                (<char *>m)[COUNTERS_KEY_OFFSET:COUNTERS_KEY_OFFSET + COUNTERS_MAX_KEY_LENGTH],
                self.read_label(i)))
        return out

    def __iter__(self):
        return iter(self.counters())

    def find_by_type_id_and_registration_id(self, int32_t type_id, int64_t registration_id):
        """Id of the allocated counter with this type and (values record) registration id, else -1."""
        for rec in self.counters():
            if rec.type_id == type_id and rec.registration_id == registration_id:
                return rec.counter_id
        return NULL_COUNTER_ID

    def find_by_registration_id(self, int64_t registration_id):
        for rec in self.counters():
            if rec.registration_id == registration_id:
                return rec.counter_id
        return NULL_COUNTER_ID


def _epoch_ms():
    return time.time_ns() // 1_000_000


cdef class CountersManager(CountersReader):
    """Single-writer allocator over the counters sections (the driver conductor owns it).

    ``CountersManager(metadata, values, free_to_reuse_timeout_ms=0, clock_ms=None)``; ``clock_ms`` is a
    callable returning epoch milliseconds (default: wall clock).
    """

    def __init__(self, AtomicBuffer metadata not None, AtomicBuffer values not None,
                 int64_t free_to_reuse_timeout_ms=0, clock_ms=None):
        CountersReader.__init__(self, metadata, values)
        if free_to_reuse_timeout_ms < 0:
            raise InvalidArgumentError(f"free_to_reuse_timeout_ms must be >= 0, got {free_to_reuse_timeout_ms}")
        self.free_to_reuse_timeout_ms = free_to_reuse_timeout_ms
        self.clock_ms = clock_ms if clock_ms is not None else _epoch_ms
        self.free_list = []
        self.high_water_mark_id = -1

    @property
    def free_list_ids(self):
        return tuple(self.free_list)

    cdef int32_t next_counter_id(self) except -2:
        cdef int64_t now_ms
        cdef int32_t counter_id
        cdef uint8_t *v
        if self.free_list:
            now_ms = self.clock_ms()
            for index, counter_id in enumerate(self.free_list):
                if now_ms >= load_acquire_i64(<int64_t *>(self.meta_ptr(counter_id)
                                                           + COUNTERS_FREE_FOR_REUSE_DEADLINE_OFFSET)):
                    del self.free_list[index]
                    # Reset the values record before the id is handed out again.
                    v = self.value_ptr(counter_id)
                    store_release_i64(<int64_t *>(v + COUNTERS_REGISTRATION_ID_OFFSET), DEFAULT_REGISTRATION_ID)
                    (<int64_t *>(v + COUNTERS_OWNER_ID_OFFSET))[0] = DEFAULT_OWNER_ID
                    (<int64_t *>(v + COUNTERS_REFERENCE_ID_OFFSET))[0] = DEFAULT_REFERENCE_ID
                    store_release_i64(<int64_t *>v, 0)
                    return counter_id
        if self.high_water_mark_id + 1 > self.max_counter_id:
            raise IllegalStateError(f"unable to allocate counter: max counter id {self.max_counter_id} exceeded")
        self.high_water_mark_id += 1
        return self.high_water_mark_id

    def allocate(self, label, int32_t type_id=DEFAULT_TYPE_ID, key=b"",
                 int64_t registration_id=DEFAULT_REGISTRATION_ID, int64_t owner_id=DEFAULT_OWNER_ID,
                 int64_t reference_id=DEFAULT_REFERENCE_ID):
        """Allocate a counter and return its id.

        The label is truncated to 380 bytes; a key over 112 bytes raises InvalidArgumentError; a full
        buffer raises IllegalStateError. The state is stored (release) after type, key and label.
        """
        cdef bytes lb = _ascii(label)[:COUNTERS_MAX_LABEL_LENGTH]
        cdef const uint8_t[::1] kv = memoryview(bytes(key) if not isinstance(key, bytes) else key).cast("B")
        cdef Py_ssize_t key_length = kv.shape[0]
        if key_length > COUNTERS_MAX_KEY_LENGTH:
            raise InvalidArgumentError(f"key length {key_length} > max {COUNTERS_MAX_KEY_LENGTH}")
        self.check_id(0)
        cdef int32_t counter_id = self.next_counter_id()
        cdef uint8_t *m = self.meta_ptr(counter_id)
        cdef uint8_t *v = self.value_ptr(counter_id)
        (<int32_t *>(m + COUNTERS_TYPE_ID_OFFSET))[0] = type_id
        (<int64_t *>(m + COUNTERS_FREE_FOR_REUSE_DEADLINE_OFFSET))[0] = INT64_MAX
        if key_length:
            memcpy(m + COUNTERS_KEY_OFFSET, &kv[0], <size_t>key_length)
        if len(lb):
            memcpy(m + COUNTERS_LABEL_OFFSET + 4, <char *>lb, <size_t>len(lb))
        (<int32_t *>(m + COUNTERS_LABEL_OFFSET))[0] = <int32_t>len(lb)
        store_release_i32(<int32_t *>m, COUNTERS_RECORD_ALLOCATED)
        store_release_i64(<int64_t *>(v + COUNTERS_REGISTRATION_ID_OFFSET), registration_id)
        (<int64_t *>(v + COUNTERS_OWNER_ID_OFFSET))[0] = owner_id
        (<int64_t *>(v + COUNTERS_REFERENCE_ID_OFFSET))[0] = reference_id
        return counter_id

    def free(self, int32_t counter_id):
        """Reclaim a counter: state -1, key zeroed, reusable after free_to_reuse_timeout_ms.

        Label and value are left as they were (as the C driver). Freeing a counter that is not
        allocated raises IllegalStateError.
        """
        self.check_id(counter_id)
        cdef uint8_t *m = self.meta_ptr(counter_id)
        if load_acquire_i32(<int32_t *>m) != COUNTERS_RECORD_ALLOCATED:
            raise IllegalStateError(f"counter {counter_id} is not allocated")
        cdef int64_t deadline = <int64_t>self.clock_ms() + self.free_to_reuse_timeout_ms
        store_release_i32(<int32_t *>m, COUNTERS_RECORD_RECLAIMED)
        memset(m + COUNTERS_KEY_OFFSET, 0, COUNTERS_MAX_KEY_LENGTH)
        store_release_i64(<int64_t *>(m + COUNTERS_FREE_FOR_REUSE_DEADLINE_OFFSET), deadline)
        self.free_list.append(counter_id)

    def set_counter_value(self, int32_t counter_id, int64_t value):
        self.check_id(counter_id)
        store_release_i64(<int64_t *>self.value_ptr(counter_id), value)

    def set_counter_registration_id(self, int32_t counter_id, int64_t registration_id):
        self.check_id(counter_id)
        store_release_i64(<int64_t *>(self.value_ptr(counter_id) + COUNTERS_REGISTRATION_ID_OFFSET),
                          registration_id)

    def set_counter_owner_id(self, int32_t counter_id, int64_t owner_id):
        self.check_id(counter_id)
        (<int64_t *>(self.value_ptr(counter_id) + COUNTERS_OWNER_ID_OFFSET))[0] = owner_id

    def set_counter_reference_id(self, int32_t counter_id, int64_t reference_id):
        self.check_id(counter_id)
        (<int64_t *>(self.value_ptr(counter_id) + COUNTERS_REFERENCE_ID_OFFSET))[0] = reference_id

    def set_counter_key(self, int32_t counter_id, key):
        """Replace the key bytes (the rest of the 112-byte area is zeroed)."""
        self.check_id(counter_id)
        cdef bytes kb = bytes(key)
        if len(kb) > COUNTERS_MAX_KEY_LENGTH:
            raise InvalidArgumentError(f"key length {len(kb)} > max {COUNTERS_MAX_KEY_LENGTH}")
        cdef uint8_t *m = self.meta_ptr(counter_id)
        memset(m + COUNTERS_KEY_OFFSET, 0, COUNTERS_MAX_KEY_LENGTH)
        if len(kb):
            memcpy(m + COUNTERS_KEY_OFFSET, <char *>kb, <size_t>len(kb))

    def set_counter_label(self, int32_t counter_id, label):
        """Replace the label (truncated to 380 bytes); the length is stored last (release)."""
        self.check_id(counter_id)
        cdef bytes lb = _ascii(label)[:COUNTERS_MAX_LABEL_LENGTH]
        cdef uint8_t *m = self.meta_ptr(counter_id)
        if len(lb):
            memcpy(m + COUNTERS_LABEL_OFFSET + 4, <char *>lb, <size_t>len(lb))
        store_release_i32(<int32_t *>(m + COUNTERS_LABEL_OFFSET), <int32_t>len(lb))

    def append_to_label(self, int32_t counter_id, suffix):
        """Append to the label as far as 380 bytes allow; returns the number of bytes appended."""
        self.check_id(counter_id)
        cdef uint8_t *m = self.meta_ptr(counter_id)
        cdef int32_t n = load_acquire_i32(<int32_t *>(m + COUNTERS_LABEL_OFFSET))
        if n < 0 or n > COUNTERS_MAX_LABEL_LENGTH:
            raise CorruptFileError(f"counter {counter_id} label length {n} out of range")
        cdef bytes sb = _ascii(suffix)[:COUNTERS_MAX_LABEL_LENGTH - n]
        if len(sb):
            memcpy(m + COUNTERS_LABEL_OFFSET + 4 + n, <char *>sb, <size_t>len(sb))
        store_release_i32(<int32_t *>(m + COUNTERS_LABEL_OFFSET), <int32_t>(n + len(sb)))
        return len(sb)

    def available(self):
        """Counters that can still be allocated now (high-water room plus reusable freed ids)."""
        return self.max_counter_id - self.high_water_mark_id + len(self.free_list)


@cython.final
cdef class AtomicCounter:
    """Handle on one counter's value for hot paths (position, limit, heartbeat).

    ``AtomicCounter(values_buffer, counter_id)``. It holds an export of the values buffer, so the
    memory cannot be closed under it; call ``close()`` when done.
    """

    def __cinit__(self, AtomicBuffer values not None, int32_t counter_id):
        self._has_view = False
        values.check_open()
        if counter_id < 0 or <Py_ssize_t>counter_id >= values.length // COUNTERS_COUNTER_LENGTH:
            raise OutOfBoundsError(f"counter id {counter_id} outside values buffer of {values.length} bytes")
        if (<size_t>values.data) % 8 != 0:
            raise InvalidArgumentError("counters values buffer must be 8-byte aligned")
        PyObject_GetBuffer(values, &self._view, PyBUF_WRITABLE | PyBUF_ANY_CONTIGUOUS)
        self._has_view = True
        self.counter_id = counter_id
        self.addr = counter_addr(<uint8_t *>self._view.buf, counter_id)

    def __dealloc__(self):
        if self._has_view:
            PyBuffer_Release(&self._view)
            self._has_view = False

    cdef int _check(self) except -1:
        if not self._has_view:
            raise IllegalStateError("counter is closed")
        return 0

    def close(self):
        if self._has_view:
            PyBuffer_Release(&self._view)
            self._has_view = False
            self.addr = NULL

    @property
    def is_closed(self):
        return not self._has_view

    def get(self):
        """Plain load (owner thread)."""
        self._check()
        return self.addr[0]

    def get_volatile(self):
        """Acquire load (other threads/processes)."""
        self._check()
        return load_acquire_i64(self.addr)

    def set(self, int64_t value):
        self._check()
        self.addr[0] = value

    def set_ordered(self, int64_t value):
        """Release store."""
        self._check()
        store_release_i64(self.addr, value)

    def increment(self):
        """Atomic +1; returns the previous value."""
        self._check()
        return get_and_add_i64(self.addr, 1)

    def increment_ordered(self):
        """Single-writer +1 with a release store; returns the previous value."""
        self._check()
        cdef int64_t v = self.addr[0]
        store_release_i64(self.addr, v + 1)
        return v

    def get_and_add(self, int64_t delta):
        """Atomic add; returns the previous value."""
        self._check()
        return get_and_add_i64(self.addr, delta)

    def propose_max_ordered(self, int64_t proposed):
        """Single writer: set to ``proposed`` (release) if larger; True when it moved."""
        self._check()
        return counter_propose_max_release(self.addr, proposed)

    def __repr__(self):
        return f"<AtomicCounter id={self.counter_id}{' closed' if not self._has_view else ''}>"


UnsafeBufferPosition = AtomicCounter


def format_counter_line(int32_t counter_id, int64_t value, label, int id_width=3):
    """One AeronStat counter line: id right-aligned, value with thousands separators in 26 columns."""
    return f"{counter_id:>{id_width}}: {value:>26,} - {label}"


def format_counters(CountersReader reader not None):
    """AeronStat's counter lines (without its two header lines) for every allocated counter.

    The id column is as wide as the largest possible counter id, as the C and Java tools print it.
    """
    width = len(str(reader.max_counter_id))
    return [format_counter_line(rec.counter_id, rec.value, rec.label, width) for rec in reader.counters()]
