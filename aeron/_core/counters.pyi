# SPDX-License-Identifier: Apache-2.0
from collections.abc import Callable, Iterator
from typing import NamedTuple

from typing_extensions import Buffer

from aeron._core.atomic_buffer import AtomicBuffer

# record layout
COUNTER_LENGTH: int
REGISTRATION_ID_OFFSET: int
OWNER_ID_OFFSET: int
REFERENCE_ID_OFFSET: int
METADATA_LENGTH: int
TYPE_ID_OFFSET: int
FREE_FOR_REUSE_DEADLINE_OFFSET: int
KEY_OFFSET: int
LABEL_OFFSET: int
MAX_KEY_LENGTH: int
MAX_LABEL_LENGTH: int
RECORD_UNUSED: int
RECORD_ALLOCATED: int
RECORD_RECLAIMED: int
NOT_FREE_TO_REUSE: int
DEFAULT_TYPE_ID: int
DEFAULT_REGISTRATION_ID: int
DEFAULT_OWNER_ID: int
DEFAULT_REFERENCE_ID: int
NULL_COUNTER_ID: int

# counter type ids
DRIVER_SYSTEM_COUNTER_TYPE_ID: int
DRIVER_PUBLISHER_LIMIT_TYPE_ID: int
DRIVER_SENDER_POSITION_TYPE_ID: int
DRIVER_RECEIVER_HWM_TYPE_ID: int
DRIVER_SUBSCRIBER_POSITION_TYPE_ID: int
DRIVER_RECEIVER_POS_TYPE_ID: int
DRIVER_SEND_CHANNEL_STATUS_TYPE_ID: int
DRIVER_RECEIVE_CHANNEL_STATUS_TYPE_ID: int
DRIVER_SENDER_LIMIT_TYPE_ID: int
DRIVER_PER_IMAGE_TYPE_ID: int
DRIVER_HEARTBEAT_TYPE_ID: int
DRIVER_PUBLISHER_POS_TYPE_ID: int
DRIVER_SENDER_BPE_TYPE_ID: int
DRIVER_LOCAL_SOCKET_ADDRESS_STATUS_TYPE_ID: int
NAME_RESOLVER_NEIGHBORS_COUNTER_TYPE_ID: int
NAME_RESOLVER_CACHE_ENTRIES_COUNTER_TYPE_ID: int
FLOW_CONTROL_RECEIVERS_COUNTER_TYPE_ID: int
MDC_DESTINATIONS_COUNTER_TYPE_ID: int
DRIVER_SENDER_NAKS_RECEIVED_TYPE_ID: int
DRIVER_RECEIVER_NAKS_SENT_TYPE_ID: int
NAME_RESOLVER_BOOTSTRAP_NEIGHBOR_TYPE_ID: int

# channel endpoint status values
CHANNEL_ENDPOINT_STATUS_ERRORED: int
CHANNEL_ENDPOINT_STATUS_INITIALIZING: int
CHANNEL_ENDPOINT_STATUS_ACTIVE: int
CHANNEL_ENDPOINT_STATUS_CLOSING: int

# system counters: (id, NAME, label); each NAME is also a module constant holding the id
SYSTEM_COUNTERS: tuple[tuple[int, str, str], ...]
SYSTEM_COUNTER_LABELS: tuple[tuple[int, str], ...]
SYSTEM_COUNTER_COUNT: int
BYTES_SENT: int
BYTES_RECEIVED: int
RECEIVER_PROXY_FAILS: int
SENDER_PROXY_FAILS: int
CONDUCTOR_PROXY_FAILS: int
NAK_MESSAGES_SENT: int
NAK_MESSAGES_RECEIVED: int
STATUS_MESSAGES_SENT: int
STATUS_MESSAGES_RECEIVED: int
HEARTBEATS_SENT: int
HEARTBEATS_RECEIVED: int
RETRANSMITS_SENT: int
FLOW_CONTROL_UNDER_RUNS: int
FLOW_CONTROL_OVER_RUNS: int
INVALID_PACKETS: int
ERRORS: int
SHORT_SENDS: int
FREE_FAILS: int
SENDER_FLOW_CONTROL_LIMITS: int
UNBLOCKED_PUBLICATIONS: int
UNBLOCKED_COMMANDS: int
POSSIBLE_TTL_ASYMMETRY: int
CONTROLLABLE_IDLE_STRATEGY: int
LOSS_GAP_FILLS: int
CLIENT_TIMEOUTS: int
RESOLUTION_CHANGES: int
CONDUCTOR_MAX_CYCLE_TIME: int
CONDUCTOR_CYCLE_TIME_THRESHOLD_EXCEEDED: int
SENDER_MAX_CYCLE_TIME: int
SENDER_CYCLE_TIME_THRESHOLD_EXCEEDED: int
RECEIVER_MAX_CYCLE_TIME: int
RECEIVER_CYCLE_TIME_THRESHOLD_EXCEEDED: int
NAME_RESOLVER_MAX_TIME: int
NAME_RESOLVER_TIME_THRESHOLD_EXCEEDED: int
AERON_VERSION: int
BYTES_CURRENTLY_MAPPED: int
RETRANSMITTED_BYTES: int
RETRANSMIT_OVERFLOW: int
ERROR_FRAMES_RECEIVED: int
ERROR_FRAMES_SENT: int
PUBLICATIONS_REVOKED: int
PUBLICATION_IMAGES_REVOKED: int
IMAGES_REJECTED: int
CONTROL_PROTOCOL_VERSION: int
STATUS_MESSAGES_REJECTED: int
NATIVE_RESOURCE_AGENT_PROXY_FAILS: int
# ours, ids from 1000 on, allocated when first needed
EXTRA_SYSTEM_COUNTERS: tuple[tuple[int, str, str], ...]
UNCONFIRMED_IMAGES_REJECTED: int

# counter keys
STREAM_KEY_REGISTRATION_ID_OFFSET: int
STREAM_KEY_SESSION_ID_OFFSET: int
STREAM_KEY_STREAM_ID_OFFSET: int
STREAM_KEY_CHANNEL_OFFSET: int
STREAM_KEY_MAX_CHANNEL_LENGTH: int
CHANNEL_KEY_MAX_CHANNEL_LENGTH: int
LOCAL_SOCKADDR_KEY_MAX_ADDRESS_LENGTH: int

class CounterRecord(NamedTuple):
    counter_id: int
    type_id: int
    value: int
    registration_id: int
    owner_id: int
    reference_id: int
    key: bytes
    label: str

def stream_counter_key_encode(registration_id: int, session_id: int, stream_id: int, channel: str | bytes) -> bytes: ...
def stream_counter_key_decode(key: Buffer) -> tuple[int, int, int, str]: ...
def stream_counter_label(name: str, registration_id: int, session_id: int, stream_id: int, channel: str,
                         suffix: str = "") -> str: ...
def channel_status_key_encode(channel: str | bytes) -> bytes: ...
def channel_status_key_decode(key: Buffer) -> str: ...
def local_sockaddr_key_encode(channel_status_id: int, address: str | bytes) -> bytes: ...
def local_sockaddr_key_decode(key: Buffer) -> tuple[int, str]: ...
def heartbeat_key_encode(client_id: int) -> bytes: ...
def system_counter_key_encode(system_counter_id: int) -> bytes: ...

class CountersReader:
    def __init__(self, metadata: AtomicBuffer, values: AtomicBuffer) -> None: ...
    @property
    def metadata_buffer(self) -> AtomicBuffer: ...
    @property
    def values_buffer(self) -> AtomicBuffer: ...
    @property
    def max_counter_id(self) -> int: ...
    def get_counter_value(self, counter_id: int) -> int: ...
    def get_counter_state(self, counter_id: int) -> int: ...
    def get_counter_type_id(self, counter_id: int) -> int: ...
    def get_free_for_reuse_deadline(self, counter_id: int) -> int: ...
    def get_counter_key(self, counter_id: int) -> bytes: ...
    def get_counter_label(self, counter_id: int) -> str: ...
    def get_counter_registration_id(self, counter_id: int) -> int: ...
    def get_counter_owner_id(self, counter_id: int) -> int: ...
    def get_counter_reference_id(self, counter_id: int) -> int: ...
    def for_each(self, callback: Callable[[int, int, bytes, str], object]) -> None: ...
    def counters(self) -> list[CounterRecord]: ...
    def __iter__(self) -> Iterator[CounterRecord]: ...
    def find_by_type_id_and_registration_id(self, type_id: int, registration_id: int) -> int: ...
    def find_by_registration_id(self, registration_id: int) -> int: ...

class CountersManager(CountersReader):
    def __init__(self, metadata: AtomicBuffer, values: AtomicBuffer, free_to_reuse_timeout_ms: int = 0,
                 clock_ms: Callable[[], int] | None = None) -> None: ...
    @property
    def high_water_mark_id(self) -> int: ...
    @property
    def free_to_reuse_timeout_ms(self) -> int: ...
    @property
    def free_list_ids(self) -> tuple[int, ...]: ...
    def allocate(self, label: str | bytes, type_id: int = 0, key: Buffer = b"", registration_id: int = 0,
                 owner_id: int = 0, reference_id: int = 0) -> int: ...
    def free(self, counter_id: int) -> None: ...
    def set_counter_value(self, counter_id: int, value: int) -> None: ...
    def set_counter_registration_id(self, counter_id: int, registration_id: int) -> None: ...
    def set_counter_owner_id(self, counter_id: int, owner_id: int) -> None: ...
    def set_counter_reference_id(self, counter_id: int, reference_id: int) -> None: ...
    def set_counter_key(self, counter_id: int, key: Buffer) -> None: ...
    def set_counter_label(self, counter_id: int, label: str | bytes) -> None: ...
    def append_to_label(self, counter_id: int, suffix: str | bytes) -> int: ...
    def available(self) -> int: ...

class AtomicCounter:
    def __init__(self, values: AtomicBuffer, counter_id: int) -> None: ...
    @property
    def counter_id(self) -> int: ...
    @property
    def is_closed(self) -> bool: ...
    def close(self) -> None: ...
    def get(self) -> int: ...
    def get_volatile(self) -> int: ...
    def set(self, value: int) -> None: ...
    def set_ordered(self, value: int) -> None: ...
    def increment(self) -> int: ...
    def increment_ordered(self) -> int: ...
    def get_and_add(self, delta: int) -> int: ...
    def propose_max_ordered(self, proposed: int) -> bool: ...

UnsafeBufferPosition = AtomicCounter

def format_counter_line(counter_id: int, value: int, label: str, id_width: int = 3) -> str: ...
def format_counters(reader: CountersReader) -> list[str]: ...
