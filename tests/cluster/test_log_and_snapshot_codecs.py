# SPDX-License-Identifier: Apache-2.0
"""What the consensus module writes, decoded as Aeron reads it: the leader's log entries (LogPublisher) read back
through the LogAdapter's dispatch; the consensus module snapshot written by ConsensusModuleSnapshotTaker and read by
ConsensusModuleSnapshotAdapter; and the golden snapshot of a Java consensus module read by our adapter."""
from __future__ import annotations

import struct

import pytest

from aeron._core.codecs import cluster as codecs
from aeron._core.term_reader import BREAK, CONTINUE
from aeron.cluster import tool
from aeron.cluster.consensus_module_snapshot_adapter import ConsensusModuleSnapshotAdapter
from aeron.cluster.consensus_module_snapshot_taker import ConsensusModuleSnapshotTaker
from aeron.cluster.log_adapter import LogAdapter
from aeron.cluster.log_publisher import LogPublisher
from aeron.cluster.pending_service_message_tracker import PendingServiceMessageTracker, service_session_id
from aeron.cluster.recording_log import RecordingLog
from aeron.common.errors import ClusterError


class Publication:
    """Frames offered, each at its aligned log position as an exclusive publication would place it."""

    term_buffer_length = 64 * 1024

    def __init__(self):
        self.position = 0
        self.messages: list[bytes] = []
        self.closed = False

    def _append(self, data: bytes) -> int:
        self.messages.append(data)
        self.position += (len(data) + 32 + 31) & ~31
        return self.position

    def offer(self, buffer, offset=0, length=-1):
        view = memoryview(buffer)
        return self._append(bytes(view[offset:offset + length]))

    def offerv(self, buffers):
        return self._append(b"".join(bytes(b) for b in buffers))

    def close(self):
        self.closed = True


class Header:
    def __init__(self, position):
        self.position = position


class Recorder:
    """Records every call made on it."""

    def __init__(self, result=None):
        self.calls = []
        self.result = result

    def __getattr__(self, name):
        def record(*args):
            self.calls.append((name, *args))
            return self.result
        return record


class Session:
    id = 9
    correlation_id = 77
    response_stream_id = 102
    response_channel = "aeron:udp?endpoint=localhost:9000"
    encoded_principal = b"alice"
    close_reason = codecs.CloseReason.TIMEOUT
    opened_log_position = 128


def test_log_entries_read_back_as_the_log_adapter_dispatches_them():
    publisher = LogPublisher("aeron:udp?term-length=64k")
    publication = Publication()
    publisher.publication = publication
    payload = bytearray(b"xx hello")
    assert publisher.append_message(3, 9, 1000, payload, 3, 5) == 96       # 32 + 32 + 5 bytes, 32-aligned
    opened_at = publisher.append_session_open(Session(), 3, 1001)
    assert publisher.append_session_close(0, Session(), 3, 1002)
    assert publisher.append_timer(55, 3, 1003) > 0
    before_action = publication.position
    assert publisher.append_cluster_action(3, 1004, codecs.ClusterAction.SNAPSHOT, 0)
    before_event = publication.position
    assert publisher.append_new_leadership_term_event(4, 1005, 256, 1, 4242, codecs.ClusterTimeUnit.MILLIS,
                                                      (1 << 16))
    agent = Recorder()
    adapter = LogAdapter(agent, 10)
    position = 0
    actions = []
    for message in publication.messages:
        position += (len(message) + 32 + 31) & ~31
        actions.append(adapter._on_message(message, 0, len(message), Header(position)))
    assert actions == [CONTINUE, CONTINUE, CONTINUE, CONTINUE, BREAK, CONTINUE]
    assert publication.messages[0][32:] == b"hello"
    assert agent.calls == [
        ("on_replay_session_message", 9, 1000),
        ("on_replay_session_open", opened_at, 77, 9, 1001, 102, "aeron:udp?endpoint=localhost:9000"),
        ("on_replay_session_close", 9, codecs.CloseReason.TIMEOUT),
        ("on_replay_timer_event", 55),
        # the log position each carries is the one after its own frame
        ("on_replay_cluster_action", 3, before_action + 96, 1004, codecs.ClusterAction.SNAPSHOT, 0),
        ("on_replay_new_leadership_term_event", 4, before_event + 96, 1005, 256, codecs.ClusterTimeUnit.MILLIS,
         1 << 16),
    ]
    opened = codecs.SessionOpenEventDecoder().wrap_header(publication.messages[1])
    assert opened.encoded_principal == b"alice"


def test_a_malformed_log_entry_is_a_cluster_error():
    adapter = LogAdapter(Recorder(), 10)
    bad = bytearray(8 + 10)
    struct.pack_into("<HHHH", bad, 0, 36, codecs.SessionOpenEventDecoder.TEMPLATE_ID, codecs.SCHEMA_ID, 17)
    with pytest.raises(ClusterError, match="malformed log entry"):
        adapter._on_message(bad, 0, len(bad), Header(64))


class Idle:
    def reset(self):
        pass

    def idle(self, work=0):
        pass


class Listener:
    """Collects what a snapshot loads."""

    def __init__(self):
        self.loaded = []

    def on_load_begin_snapshot(self, app_version, time_unit, buffer, offset, length):
        self.loaded.append(("begin", app_version, time_unit))

    def on_load_consensus_module_state(self, next_session_id, next_service_session_id, log_service_session_id,
                                       capacity, buffer, offset, length):
        self.loaded.append(("state", next_session_id, next_service_session_id, log_service_session_id, capacity))

    def on_load_pending_message(self, cluster_session_id, buffer, offset, length):
        self.loaded.append(("pending", cluster_session_id, bytes(memoryview(buffer)[offset + 32:offset + length])))

    def on_load_cluster_session(self, cluster_session_id, correlation_id, opened, last_activity, close_reason,
                                response_stream_id, response_channel, buffer, offset, length):
        self.loaded.append(("session", cluster_session_id, correlation_id, opened, last_activity, close_reason,
                            response_stream_id, response_channel))

    def on_load_timer(self, correlation_id, deadline, buffer, offset, length):
        self.loaded.append(("timer", correlation_id, deadline))

    def on_load_pending_message_tracker(self, next_id, log_id, capacity, service_id, buffer, offset, length):
        self.loaded.append(("tracker", next_id, log_id, capacity, service_id))

    def on_load_end_snapshot(self, buffer, offset, length):
        self.loaded.append(("end",))


def load(messages, listener):
    adapter = ConsensusModuleSnapshotAdapter(None, listener)
    for message in messages:
        action = adapter.on_fragment(message, 0, len(message), None)
        if action == BREAK:
            break
    return adapter


def test_snapshot_round_trip():
    publication = Publication()
    taker = ConsensusModuleSnapshotTaker(publication, Idle())
    tracker = PendingServiceMessageTracker(0, Recorder(), Recorder(), Recorder())
    message = bytearray(32 + 4)
    codecs.SessionMessageHeaderEncoder().wrap_and_apply_header(message, 0).release()
    message[32:] = b"ping"
    tracker.enqueue_message(message, 32, 4)
    taker.mark_begin(1, 4096, 3, 0, codecs.ClusterTimeUnit.MILLIS, (1 << 16) | 2)
    taker.snapshot_consensus_module_state(5, tracker.next_service_session_id, tracker.log_service_session_id,
                                          tracker.size())
    taker.snapshot_session(Session())
    taker.snapshot_timer(31, 9999)
    taker.snapshot_tracker(tracker, Recorder())
    taker.mark_end(1, 4096, 3, 0, codecs.ClusterTimeUnit.MILLIS, (1 << 16) | 2)
    listener = Listener()
    adapter = load(publication.messages, listener)
    assert adapter.is_done
    base = service_session_id(0, -(1 << 63))
    assert listener.loaded == [
        ("begin", (1 << 16) | 2, codecs.ClusterTimeUnit.MILLIS),
        ("state", 5, base + 2, base, 48),
        ("session", 9, 77, 128, -1, codecs.CloseReason.TIMEOUT, 102, "aeron:udp?endpoint=localhost:9000"),
        ("timer", 31, 9999),
        ("tracker", base + 2, base, 48, 0),
        ("pending", base + 1, b"ping"),
        ("end",),
    ]


def test_snapshot_markers_are_checked():
    publication = Publication()
    taker = ConsensusModuleSnapshotTaker(publication, Idle())
    taker.mark_end(1, 0, 0, 0, codecs.ClusterTimeUnit.MILLIS, 1)
    with pytest.raises(ClusterError, match="missing begin snapshot"):
        load(publication.messages, Listener())
    publication = Publication()
    ConsensusModuleSnapshotTaker(publication, Idle()).mark_begin(2, 0, 0, 0, codecs.ClusterTimeUnit.MILLIS, 1)
    with pytest.raises(ClusterError, match="unexpected snapshot type: 2"):
        load(publication.messages, Listener())


def test_the_snapshot_of_a_java_consensus_module_loads(golden_node):
    with RecordingLog(golden_node / "cluster", False) as log:
        entry = log.get_latest_snapshot(-1)
    messages = [message for message, _, _ in tool._snapshot_messages(golden_node / "archive", entry.recording_id)]
    listener = Listener()
    adapter = load(messages, listener)
    assert adapter.is_done
    assert listener.loaded[0] == ("begin", 1, codecs.ClusterTimeUnit.MILLIS)
    assert ("state", 2, -9223372036854775807, -9223372036854775808, 0) in listener.loaded
    assert ("tracker", -9223372036854775807, -9223372036854775808, 0, 0) in listener.loaded
    assert listener.loaded[-1] == ("end",)
