# SPDX-License-Identifier: Apache-2.0
"""Service messages waiting for the log (Aeron's ``PendingServiceMessageTracker``).

A clustered service sends a message to the cluster itself (``Cluster.offer``) as a ``SessionMessageHeader`` whose
``clusterSessionId`` carries the service id. Every member's consensus module queues it under the next *service
session id*, ``((service_id << 56) | 0x8000000000000000) + n`` for n = 1, 2, ... (negative, so it never collides
with a client session); the leader appends up to 20 queued messages per poll to the log, and every member drops its
copies once the log carries their ids: the leader when the commit position passes them, a follower when its log
reaches them. An election rolls back what the leader appended but did not commit, so it is appended again.

Queued messages are whole ``SessionMessageHeader`` messages in an :class:`ExpandableRingBuffer` (Agrona's), byte for
byte what the consensus module snapshot stores; the header's ``timestamp`` holds the log position the message was
appended at, or ``Long.MAX_VALUE`` while it is not.
"""
from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from aeron._core.codecs.cluster import MESSAGE_HEADER_LENGTH, SessionMessageHeaderDecoder
from aeron.common.constants import INT64_MAX, INT64_MIN, NULL_VALUE
from aeron.common.errors import Category, ClusterError, InvalidArgumentError

__all__ = ["ExpandableRingBuffer", "PendingServiceMessageTracker", "SERVICE_MESSAGE_LIMIT", "service_id_from_log_message",
           "service_id_from_service_message", "service_session_id"]

SERVICE_MESSAGE_LIMIT = 20
SESSION_HEADER_LENGTH = MESSAGE_HEADER_LENGTH + SessionMessageHeaderDecoder.BLOCK_LENGTH   # 32

_I32 = struct.Struct("<i")
_I64 = struct.Struct("<q")
# where the header's fields sit within a queued message (SBE header first)
_CLUSTER_SESSION_ID_OFFSET = MESSAGE_HEADER_LENGTH + 8
_TIMESTAMP_OFFSET = MESSAGE_HEADER_LENGTH + 16


def _to_signed64(value: int) -> int:
    value &= 0xFFFFFFFFFFFFFFFF
    return value - (1 << 64) if value & (1 << 63) else value


def service_session_id(service_id: int, session_id: int) -> int:
    """``(service_id << 56) | session_id`` as a signed 64-bit id (Aeron's ``serviceSessionId``)."""
    return _to_signed64((service_id << 56) | (session_id & 0xFFFFFFFFFFFFFFFF))


def service_id_from_log_message(cluster_session_id: int) -> int:
    """The service id of a service session id found in the log: bits 56..62."""
    return ((cluster_session_id & 0xFFFFFFFFFFFFFFFF) >> 56) & 0x7F


def service_id_from_service_message(cluster_session_id: int) -> int:
    """The service id a service puts in the ``clusterSessionId`` of its message to the consensus module."""
    return _I32.unpack(_I64.pack(_to_signed64(cluster_session_id))[:4])[0]


MessageConsumer = Callable[[bytearray, int, int, int], bool]
"""``(buffer, offset, length, head_offset) -> bool``: False stops the walk (and keeps the message)."""


def _align(value: int, alignment: int) -> int:
    return (value + alignment - 1) & ~(alignment - 1)


class ExpandableRingBuffer:
    """Agrona's ``ExpandableRingBuffer``: variable-length messages in a ring that doubles as needed, each an 8-byte
    header (length int32 including the header, type int32: 1 data, 0 padding) and the message, 8-byte aligned.
    ``head_offset`` given to consumers is the offset from the head just past the message."""

    MAX_CAPACITY = 1 << 30
    HEADER_ALIGNMENT = 8
    HEADER_LENGTH = 8
    _TYPE_PADDING = 0
    _TYPE_DATA = 1

    def __init__(self, initial_capacity: int = 0, max_capacity: int = MAX_CAPACITY) -> None:
        """An empty ring; ``max_capacity`` a power of two up to 2^30."""
        if max_capacity < 0 or max_capacity > self.MAX_CAPACITY or max_capacity & (max_capacity - 1):
            raise InvalidArgumentError(f"illegal max capacity: {max_capacity}")
        self.max_capacity = max_capacity
        self.head = 0
        self.tail = 0
        if initial_capacity == 0:
            self.capacity = 0
            self._mask = 0
            self._buffer = bytearray()
            return
        if initial_capacity < 0:
            raise InvalidArgumentError(f"initial capacity < 0 : {initial_capacity}")
        self.capacity = 1 << (initial_capacity - 1).bit_length()
        self._mask = self.capacity - 1
        self._buffer = bytearray(self.capacity)

    @property
    def buffer(self) -> bytearray:
        """The backing buffer (offsets given to consumers are into it)."""
        return self._buffer

    def size(self) -> int:
        """Bytes in use, headers and padding included."""
        return self.tail - self.head

    def is_empty(self) -> bool:
        """No messages."""
        return self.head == self.tail

    def reset(self, required_capacity: int) -> None:
        """Empty, with at least ``required_capacity`` (a power of two; InvalidArgumentError beyond the maximum)."""
        if required_capacity < 0:
            raise InvalidArgumentError(f"required capacity <= 0 : {required_capacity}")
        new_capacity = 1 if required_capacity <= 1 else 1 << (required_capacity - 1).bit_length()
        if new_capacity > self.max_capacity:
            raise InvalidArgumentError(f"requiredCapacity={required_capacity} > maxCapacity={self.max_capacity}")
        if new_capacity != self.capacity:
            self.capacity = new_capacity
            self._mask = new_capacity - 1
            self._buffer = bytearray(new_capacity)
        self.head = 0
        self.tail = 0

    def for_each(self, consumer: MessageConsumer, limit: int, head_offset: int = 0) -> int:
        """Walk messages from ``head_offset`` past the head without consuming them, calling ``consumer`` for up to
        ``limit``; returns the bytes walked."""
        if head_offset < 0 or head_offset > self.size():
            raise InvalidArgumentError(f"size={self.size()} : headOffset={head_offset}")
        if head_offset % self.HEADER_ALIGNMENT:
            raise InvalidArgumentError(f"{head_offset} not aligned to {self.HEADER_ALIGNMENT}")
        initial = self.head + head_offset
        position = initial
        count = 0
        buffer = self._buffer
        while count < limit and position < self.tail:
            offset = position & self._mask
            length = _I32.unpack_from(buffer, offset)[0]
            type_id = _I32.unpack_from(buffer, offset + 4)[0]
            position += _align(length, self.HEADER_ALIGNMENT)
            if type_id != self._TYPE_PADDING:
                if not consumer(buffer, offset + self.HEADER_LENGTH, length - self.HEADER_LENGTH, position - self.head):
                    break
                count += 1
        return position - initial

    def consume(self, consumer: MessageConsumer, message_limit: int) -> int:
        """Walk messages from the head, removing each the consumer accepts, up to ``message_limit``; stops at the
        first refused (which stays). Returns the bytes removed."""
        count = 0
        position = self.head
        buffer = self._buffer
        try:
            while count < message_limit and position < self.tail:
                offset = position & self._mask
                length = _I32.unpack_from(buffer, offset)[0]
                type_id = _I32.unpack_from(buffer, offset + 4)[0]
                aligned = _align(length, self.HEADER_ALIGNMENT)
                position += aligned
                if type_id != self._TYPE_PADDING:
                    if not consumer(buffer, offset + self.HEADER_LENGTH, length - self.HEADER_LENGTH,
                                    position - self.head):
                        position -= aligned
                        break
                    count += 1
        finally:
            consumed = position - self.head
            self.head = position
        return consumed

    def append(self, src: Any, src_offset: int, src_length: int) -> bool:
        """Copy ``src[src_offset:src_offset+src_length]`` in as one message, growing the ring as needed; False when
        it would exceed the maximum capacity."""
        head_offset = self.head & self._mask
        tail_offset = self.tail & self._mask
        aligned = _align(self.HEADER_LENGTH + src_length, self.HEADER_ALIGNMENT)
        total_remaining = self.capacity - (self.tail - self.head)
        if aligned > total_remaining:
            self._resize(aligned)
        elif tail_offset >= head_offset:
            to_end = self.capacity - tail_offset
            if aligned > to_end:
                if aligned <= total_remaining - to_end:
                    _I32.pack_into(self._buffer, tail_offset, to_end)
                    _I32.pack_into(self._buffer, tail_offset + 4, self._TYPE_PADDING)
                    self.tail += to_end
                else:
                    self._resize(aligned)
        if aligned > self.capacity - (self.tail - self.head):
            return False
        offset = self.tail & self._mask
        _I32.pack_into(self._buffer, offset, self.HEADER_LENGTH + src_length)
        _I32.pack_into(self._buffer, offset + 4, self._TYPE_DATA)
        with memoryview(src) as view:
            self._buffer[offset + self.HEADER_LENGTH:offset + self.HEADER_LENGTH + src_length] = \
                view[src_offset:src_offset + src_length].cast("B")
        self.tail += aligned
        return True

    def _resize(self, new_message_length: int) -> None:
        new_capacity = 1 << (self.capacity + new_message_length - 1).bit_length()
        if new_capacity < self.capacity or new_capacity > self.max_capacity:
            return
        new_buffer = bytearray(new_capacity)
        head_offset = self.head & self._mask
        remaining = self.tail - self.head
        first = min(remaining, self.capacity - head_offset)
        new_buffer[0:first] = self._buffer[head_offset:head_offset + first]
        if first < remaining:
            new_buffer[first:remaining] = self._buffer[0:remaining - first]
        self._buffer = new_buffer
        self.capacity = new_capacity
        self._mask = new_capacity - 1
        self.head = 0
        self.tail = remaining


class PendingServiceMessageTracker:
    """The service messages of one service not yet committed to the log."""

    def __init__(self, service_id: int, commit_position: Any, log_publisher: Any, cluster_clock: Any) -> None:
        """``commit_position`` is the commit-pos counter (``get()``), ``log_publisher`` the :class:`LogPublisher`
        (``append_message``), ``cluster_clock`` the cluster clock (``time()``)."""
        self.service_id = service_id
        self._commit_position = commit_position
        self._log_publisher = log_publisher
        self._cluster_clock = cluster_clock
        self._pending_message_head_offset = 0
        self._uncommitted_messages = 0
        self.log_service_session_id = service_session_id(service_id, INT64_MIN)
        self.next_service_session_id = self.log_service_session_id + 1
        self.leadership_term_id = NULL_VALUE
        self.pending_messages = ExpandableRingBuffer()

    def size(self) -> int:
        """Bytes queued (what the snapshot records as ``pendingMessageCapacity``)."""
        return self.pending_messages.size()

    def enqueue_message(self, buffer: Any, offset: int, length: int) -> None:
        """Queue the service message whose payload is ``buffer[offset:offset+length]`` (its 32-byte session header
        before it), under the next service session id. ClusterError when the queue is full."""
        cluster_session_id = self.next_service_session_id
        self.next_service_session_id += 1
        if cluster_session_id > self.log_service_session_id:
            ring = self.pending_messages
            if not ring.append(buffer, offset - SESSION_HEADER_LENGTH, length + SESSION_HEADER_LENGTH):
                raise ClusterError(f"pending service message buffer at capacity={ring.size()} "
                                   f"for serviceId={self.service_id}")
            # the copy in the ring gets its session id and "not appended" (the service's buffer is not ours)
            message_offset = (ring.tail - _align(ExpandableRingBuffer.HEADER_LENGTH + length + SESSION_HEADER_LENGTH,
                                                 ExpandableRingBuffer.HEADER_ALIGNMENT)) & (ring.capacity - 1)
            message_offset += ExpandableRingBuffer.HEADER_LENGTH
            _I64.pack_into(ring.buffer, message_offset + _CLUSTER_SESSION_ID_OFFSET, cluster_session_id)
            _I64.pack_into(ring.buffer, message_offset + _TIMESTAMP_OFFSET, INT64_MAX)

    def sweep_follower_messages(self, cluster_session_id: int) -> None:
        """A follower's log reached ``cluster_session_id``: drop it and those before it."""
        self.log_service_session_id = cluster_session_id
        self.pending_messages.consume(self._follower_message_sweeper, 2 ** 31 - 1)

    def sweep_leader_messages(self) -> None:
        """The leader's commit position moved: drop the appended messages it passed."""
        if self._uncommitted_messages > 0:
            self._pending_message_head_offset -= self.pending_messages.consume(self._leader_message_sweeper,
                                                                               2 ** 31 - 1)
            self._pending_message_head_offset = max(self._pending_message_head_offset, 0)

    def restore_uncommitted_messages(self) -> None:
        """An election rolled back the uncommitted log: drop what was committed, mark the rest not appended."""
        if self._uncommitted_messages > 0:
            self.pending_messages.consume(self._leader_message_sweeper, 2 ** 31 - 1)
            self.pending_messages.for_each(self._message_reset, 2 ** 31 - 1)
            self._uncommitted_messages = 0
            self._pending_message_head_offset = 0

    def append_message(self, buffer: Any, offset: int, length: int) -> None:
        """Queue a whole message as loaded from a snapshot."""
        self.pending_messages.append(buffer, offset, length)

    def load_state(self, next_service_session_id: int, log_service_session_id: int,
                   pending_message_capacity: int) -> None:
        """The tracker's state from a snapshot."""
        self.next_service_session_id = next_service_session_id
        self.log_service_session_id = log_service_session_id
        self.pending_messages.reset(pending_message_capacity)

    def poll(self) -> int:
        """Leader: append up to 20 queued messages not yet appended; returns how many walked."""
        return self.pending_messages.for_each(self._message_appender, SERVICE_MESSAGE_LIMIT,
                                              self._pending_message_head_offset)

    def verify(self) -> None:
        """After a snapshot load: the queued ids must follow ``log_service_session_id`` one by one, up to
        ``next_service_session_id`` (ClusterError, fatal, otherwise)."""
        count = 0

        def check(buffer: bytearray, offset: int, length: int, head_offset: int) -> bool:
            nonlocal count
            count += 1
            cluster_session_id = _I64.unpack_from(buffer, offset + _CLUSTER_SESSION_ID_OFFSET)[0]
            if cluster_session_id != self.log_service_session_id + count:
                raise ClusterError(
                    f"snapshot has incorrect pending message: serviceId={self.service_id} "
                    f"nextServiceSessionId={self.next_service_session_id} "
                    f"logServiceSessionId={self.log_service_session_id} clusterSessionId={cluster_session_id} "
                    f"pendingMessageIndex={count}", category=Category.FATAL)
            return True

        self.pending_messages.for_each(check, 2 ** 31 - 1)
        if self.next_service_session_id != self.log_service_session_id + count + 1:
            raise ClusterError(
                f"snapshot has incorrect pending message state: serviceId={self.service_id} "
                f"nextServiceSessionId={self.next_service_session_id} "
                f"logServiceSessionId={self.log_service_session_id} pendingMessageCount={count}",
                category=Category.FATAL)

    def reset(self) -> None:
        """Mark every queued message not appended."""
        self.pending_messages.for_each(self._message_reset, 2 ** 31 - 1)

    def for_each_message(self, consumer: MessageConsumer) -> None:
        """``consumer(buffer, offset, length, head_offset)`` for every queued message (for the snapshot)."""
        self.pending_messages.for_each(consumer, 2 ** 31 - 1)

    # -- the ring walkers -------------------------------------------------------------------------------------

    def _message_appender(self, buffer: bytearray, offset: int, length: int, head_offset: int) -> bool:
        cluster_session_id = _I64.unpack_from(buffer, offset + _CLUSTER_SESSION_ID_OFFSET)[0]
        append_position = self._log_publisher.append_message(
            self.leadership_term_id, cluster_session_id, self._cluster_clock.time(),
            buffer, offset + SESSION_HEADER_LENGTH, length - SESSION_HEADER_LENGTH)
        if append_position > 0:
            self._uncommitted_messages += 1
            self._pending_message_head_offset = head_offset
            _I64.pack_into(buffer, offset + _TIMESTAMP_OFFSET, append_position)
            return True
        return False

    @staticmethod
    def _message_reset(buffer: bytearray, offset: int, length: int, head_offset: int) -> bool:
        append_position = _I64.unpack_from(buffer, offset + _TIMESTAMP_OFFSET)[0]
        if append_position < INT64_MAX:
            _I64.pack_into(buffer, offset + _TIMESTAMP_OFFSET, INT64_MAX)
            return True
        return False

    def _leader_message_sweeper(self, buffer: bytearray, offset: int, length: int, head_offset: int) -> bool:
        append_position = _I64.unpack_from(buffer, offset + _TIMESTAMP_OFFSET)[0]
        if self._commit_position.get() >= append_position:
            self.log_service_session_id = _I64.unpack_from(buffer, offset + _CLUSTER_SESSION_ID_OFFSET)[0]
            self._uncommitted_messages -= 1
            return True
        return False

    def _follower_message_sweeper(self, buffer: bytearray, offset: int, length: int, head_offset: int) -> bool:
        return bool(_I64.unpack_from(buffer, offset + _CLUSTER_SESSION_ID_OFFSET)[0] <= self.log_service_session_id)

    def __repr__(self) -> str:
        """The tracker's ids and queue size."""
        return (f"PendingServiceMessageTracker(serviceId={self.service_id}, "
                f"nextServiceSessionId={self.next_service_session_id}, "
                f"logServiceSessionId={self.log_service_session_id}, size={self.size()})")

