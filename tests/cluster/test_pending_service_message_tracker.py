# SPDX-License-Identifier: Apache-2.0
"""Service messages queued for the log: service session ids, the leader's appends and sweeps, a follower's sweep,
the roll back of uncommitted appends, and the snapshot state check (Aeron's PendingServiceMessageTracker)."""
import struct

import pytest

from aeron._core.codecs import cluster as codecs
from aeron.cluster.pending_service_message_tracker import (
    ExpandableRingBuffer,
    PendingServiceMessageTracker,
    service_id_from_log_message,
    service_id_from_service_message,
    service_session_id,
)
from aeron.common.errors import ClusterError


class Counter:
    def __init__(self, value=0):
        self.value = value

    def get(self):
        return self.value


class Clock:
    def time(self):
        return 1234


class FakeLogPublisher:
    """Appends to a list; positions go up by 64 per message; can refuse."""

    def __init__(self):
        self.entries = []
        self.position = 0
        self.refuse = False

    def append_message(self, leadership_term_id, cluster_session_id, timestamp, buffer, offset, length):
        if self.refuse:
            return -2
        self.position += 64
        self.entries.append((leadership_term_id, cluster_session_id, bytes(memoryview(buffer)[offset:offset + length])))
        return self.position


def service_message(service_id, payload):
    """What a service sends: SessionMessageHeader (clusterSessionId = service id) + payload."""
    buffer = bytearray(32 + len(payload))
    e = codecs.SessionMessageHeaderEncoder().wrap_and_apply_header(buffer, 0)
    e.leadership_term_id = 5
    e.cluster_session_id = service_id
    e.timestamp = 0
    e.release()
    buffer[32:] = payload
    return buffer


def enqueue(tracker, payload):
    message = service_message(tracker.service_id, payload)
    tracker.enqueue_message(message, 32, len(payload))


def make(service_id=0, commit=0):
    log = FakeLogPublisher()
    commit_position = Counter(commit)
    tracker = PendingServiceMessageTracker(service_id, commit_position, log, Clock())
    tracker.leadership_term_id = 3
    return tracker, log, commit_position


def test_service_session_ids_are_negative_and_carry_the_service_id():
    for service_id in range(10):
        first = service_session_id(service_id, -(1 << 63)) + 1
        assert first < 0
        assert service_id_from_log_message(first) == service_id
        assert first == -(1 << 63) + (service_id << 56) + 1
    assert service_id_from_service_message(7) == 7
    assert service_id_from_service_message((5 << 40) | 3) == 3


def test_leader_appends_queued_messages_in_order_with_service_session_ids():
    tracker, log, _ = make(service_id=2)
    for i in range(3):
        enqueue(tracker, b"msg%d" % i)
    walked = tracker.poll()
    assert walked == 3 * 48              # each queued: 8-byte ring header + 32-byte session header + 4, 8-aligned
    ids = [e[1] for e in log.entries]
    base = service_session_id(2, -(1 << 63))
    assert ids == [base + 1, base + 2, base + 3]
    assert [e[2] for e in log.entries] == [b"msg0", b"msg1", b"msg2"]
    assert all(e[0] == 3 for e in log.entries)
    # a second poll appends nothing more: the head offset moved past them
    tracker.poll()
    assert len(log.entries) == 3


def test_leader_appends_at_most_twenty_per_poll():
    tracker, log, _ = make()
    for i in range(25):
        enqueue(tracker, b"x%d" % i)
    tracker.poll()
    assert len(log.entries) == 20
    tracker.poll()
    assert len(log.entries) == 25


def test_back_pressure_leaves_messages_for_the_next_poll():
    tracker, log, _ = make()
    enqueue(tracker, b"a")
    log.refuse = True
    tracker.poll()
    assert log.entries == []
    log.refuse = False
    tracker.poll()
    assert [e[2] for e in log.entries] == [b"a"]


def test_leader_sweeps_committed_messages():
    tracker, log, commit = make()
    for i in range(4):
        enqueue(tracker, b"m%d" % i)
    tracker.poll()
    commit.value = 128                  # the first two are committed
    tracker.sweep_leader_messages()
    assert tracker.log_service_session_id == log.entries[1][1]
    assert tracker.size() > 0
    commit.value = 10_000
    tracker.sweep_leader_messages()
    assert tracker.size() == 0
    assert tracker.log_service_session_id == log.entries[3][1]


def test_restore_after_election_appends_the_uncommitted_again():
    tracker, log, commit = make()
    for i in range(3):
        enqueue(tracker, b"m%d" % i)
    tracker.poll()
    commit.value = 64                   # only the first was committed before the election
    tracker.restore_uncommitted_messages()
    log.entries.clear()
    tracker.poll()
    assert [e[2] for e in log.entries] == [b"m1", b"m2"]


def test_follower_sweeps_messages_the_log_carried():
    tracker, _, _ = make(service_id=1)
    for i in range(3):
        enqueue(tracker, b"m%d" % i)
    base = service_session_id(1, -(1 << 63))
    tracker.sweep_follower_messages(base + 2)
    assert tracker.log_service_session_id == base + 2
    remaining = []
    tracker.for_each_message(lambda buf, off, length, head: remaining.append(
        struct.unpack_from("<q", buf, off + 16)[0]) or True)
    assert remaining == [base + 3]


def test_a_message_seen_in_the_log_before_the_service_sent_it_is_not_queued():
    tracker, log, _ = make()
    base = service_session_id(0, -(1 << 63))
    tracker.sweep_follower_messages(base + 1)   # the leader's copy was read first
    enqueue(tracker, b"late")
    assert tracker.size() == 0
    assert tracker.next_service_session_id == base + 2


def test_verify_accepts_contiguous_ids_and_refuses_a_gap():
    tracker, _, _ = make()
    for i in range(3):
        enqueue(tracker, b"m%d" % i)
    tracker.verify()
    copy, _, _ = make()
    copy.load_state(tracker.next_service_session_id + 1, tracker.log_service_session_id, tracker.size())
    tracker.for_each_message(lambda buf, off, length, head: copy.append_message(buf, off, length) or True)
    with pytest.raises(ClusterError, match="incorrect pending message state"):
        copy.verify()


def test_ring_buffer_wraps_and_grows_keeping_order():
    ring = ExpandableRingBuffer(64)
    seen = []
    for round_ in range(20):
        for i in range(3):
            assert ring.append(bytes([round_, i]) * 5, 0, 10)
        ring.consume(lambda buf, off, length, head: seen.append(bytes(buf[off:off + length])) or True, 2)
    ring.consume(lambda buf, off, length, head: seen.append(bytes(buf[off:off + length])) or True, 1000)
    assert seen == [bytes([r, i]) * 5 for r in range(20) for i in range(3)]
    assert ring.is_empty()
