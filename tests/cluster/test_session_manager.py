# SPDX-License-Identifier: Apache-2.0
"""Client sessions in the consensus module (Aeron's SessionManager and ClusterSession), with fakes for the Aeron
client, the log and egress publishers and the clock: redirects from followers, the leader's connect with the
default and a challenge/response authenticator, rejections (client version, session limit, authentication),
timeouts, closes by the client and by a service, and what an election rolls back."""
from __future__ import annotations

from types import SimpleNamespace

from aeron._core.codecs.cluster import CloseReason, EventCode
from aeron.cluster.cluster_session import State
from aeron.cluster.security import ALLOW_BACKUP_AND_STANDBY
from aeron.cluster.session_manager import SESSION_LIMIT_MSG, SESSION_REJECTED_MSG, SessionManager
from aeron.common.errors import ErrorCode, RegistrationError
from aeron.common.security import DEFAULT_AUTHENTICATOR

MS = 1_000_000
SESSION_TIMEOUT_NS = 10_000 * MS
LEADER, FOLLOWER = 2, 0
CLIENT_VERSION = (0 << 16) | (3 << 8) | 0


class Publication:
    def __init__(self, channel, stream_id, registration_id):
        self.channel, self.stream_id, self.registration_id = channel, stream_id, registration_id
        self.is_connected = True
        self.position, self.position_limit = 0, 1 << 20
        self.closed = False
        self.offered = []

    def offer(self, buffer, offset, length):
        self.offered.append(bytes(memoryview(buffer)[offset:offset + length]))
        return 64

    def close(self):
        self.closed = True


class Counter:
    def __init__(self, counter_id):
        self.counter_id = counter_id
        self.value = 0
        self.closed = False

    def set_ordered(self, value):
        self.value = value

    def increment_ordered(self):
        self.value += 1

    def close(self):
        self.closed = True


class Aeron:
    """Async adds answered on the second poll; removals recorded."""

    def __init__(self):
        self.next_id = 100
        self.pending = {}
        self.removed_publications = []
        self.removed_counters = []
        self.counters = {}
        self.counters_reader = SimpleNamespace(values_buffer=SimpleNamespace(put_i64=lambda offset, value: None))
        self.refuse_next = None

    def _id(self):
        self.next_id += 1
        return self.next_id

    def async_add_publication(self, channel, stream_id):
        registration_id = self._id()
        self.pending[registration_id] = [1, Publication(channel, stream_id, registration_id)]
        return registration_id

    def get_publication(self, registration_id):
        entry = self.pending[registration_id]
        if self.refuse_next is not None:
            error, self.refuse_next = self.refuse_next, None
            raise error
        if entry[0] > 0:
            entry[0] -= 1
            return None
        del self.pending[registration_id]
        return entry[1]

    def add_publication(self, channel, stream_id):
        return Publication(channel, stream_id, self._id())

    def async_add_counter(self, type_id, label, key):
        registration_id = self._id()
        self.counters[registration_id] = (type_id, label, key, Counter(registration_id))
        return registration_id

    def get_counter(self, registration_id):
        return self.counters[registration_id][3]

    def async_remove_publication(self, registration_id):
        self.removed_publications.append(registration_id)

    def async_remove_counter(self, registration_id):
        self.removed_counters.append(registration_id)


class LogPublisher:
    def __init__(self):
        self.entries = []
        self.pos = 0
        self.refuse = False

    def _append(self, entry):
        if self.refuse:
            return -2
        self.pos += 64
        self.entries.append(entry)
        return self.pos

    def append_session_open(self, session, leadership_term_id, timestamp):
        return self._append(("open", session.id, session.correlation_id, session.response_channel,
                             session.encoded_principal))

    def append_session_close(self, member_id, session, leadership_term_id, timestamp):
        return self._append(("close", session.id, session.close_reason)) > 0

    def position(self):
        return self.pos


class EgressPublisher:
    def __init__(self):
        self.events = []

    def send_event(self, session, leadership_term_id, leader_member_id, code, detail):
        self.events.append((session.id, EventCode(code).name, detail, session.correlation_id))
        return True

    def send_challenge(self, session, challenge):
        self.events.append((session.id, "CHALLENGE", challenge, session.correlation_id))
        return True

    def new_leader(self, session, leadership_term_id, leader_member_id, ingress_endpoints):
        self.events.append((session.id, "NEW_LEADER", ingress_endpoints, leadership_term_id))
        return True


class Clock:
    def __init__(self):
        self.now_ns = 1_000_000 * MS

    def time(self):
        return self.now_ns // MS

    def time_nanos(self):
        return self.now_ns

    def time_millis(self):
        return self.now_ns // MS

    def convert_to_nanos(self, timestamp):
        return timestamp * MS


class ChallengeAuthenticator:
    """Challenges every session; accepts the answer b"pass" as principal b"user", rejects anything else."""

    def __init__(self):
        self.answers = {}

    def on_connect_request(self, session_id, credentials, now_ms):
        pass

    def on_challenge_response(self, session_id, credentials, now_ms):
        self.answers[session_id] = bytes(credentials)

    def on_connected_session(self, proxy, now_ms):
        proxy.challenge(b"who?")

    def on_challenged_session(self, proxy, now_ms):
        answer = self.answers.get(proxy.session_id)
        if answer == b"pass":
            proxy.authenticate(b"user")
        elif answer is not None:
            proxy.reject()


class Image:
    source_identity = "127.0.0.1:5000"
    session_id = 42
    correlation_id = 7


def make(authenticator=DEFAULT_AUTHENTICATOR, max_sessions=10):
    ctx = SimpleNamespace(aeron=Aeron(), log=LogPublisher(), egress=EgressPublisher(), clock=Clock(),
                          timed_out=Counter(0), errors=[])
    manager = SessionManager(
        [], 0, ctx.clock, ctx.egress, ctx.aeron, SESSION_TIMEOUT_NS, ctx.errors.append, ctx.timed_out,
        ctx.errors.append, False, None, authenticator, ALLOW_BACKUP_AND_STANDBY, None, ctx.log, None, 203, 0,
        max_sessions, 1)
    return manager, ctx


def connect(manager, correlation_id=11, version=CLIENT_VERSION, role=LEADER, credentials=b""):
    manager.on_session_connect(correlation_id, 102, version, "aeron:udp?endpoint=127.0.0.1:9999", credentials,
                               "my-client", Image(), role, "0=127.0.0.1:1,1=127.0.0.1:2")


def process(manager, ctx, times=3):
    for _ in range(times):
        manager.process_all_pending_sessions(ctx.clock.time_nanos(), 0, 5)


def test_a_follower_redirects_to_the_members_ingress_endpoints():
    manager, ctx = make()
    connect(manager, role=FOLLOWER)
    assert manager.redirect_user_sessions[0].id == -1
    manager.send_redirects(5, 1, ctx.clock.time_nanos())      # the egress publication is still being added
    assert ctx.egress.events == []
    manager.send_redirects(5, 1, ctx.clock.time_nanos())
    manager.send_redirects(5, 1, ctx.clock.time_nanos())
    assert ctx.egress.events == [(-1, "REDIRECT", "0=127.0.0.1:1,1=127.0.0.1:2", 11)]
    assert manager.redirect_user_sessions == []


def test_the_leader_opens_a_session_in_the_log_and_answers_ok():
    manager, ctx = make()
    connect(manager)
    session = manager.pending_user_sessions[0]
    assert session.id == 1 and session.state is State.INIT
    type_id, label, key, _ = next(iter(ctx.aeron.counters.values()))
    assert type_id == 241
    assert label == "cluster-session: my-client sourceIdentity=127.0.0.1:5000 sessionId=42 - clusterId=0"
    process(manager, ctx)
    assert session.state is State.OPEN
    assert ctx.log.entries == [("open", 1, 11, "aeron:udp?endpoint=127.0.0.1:9999", b"")]
    assert ctx.egress.events == [(1, "OK", "", 11)]
    assert manager.find_by_session_id(1) is session
    assert session.ingress_image_correlation_id == 7
    assert manager.next_committed_session_id == 1         # not committed yet
    manager.sweep_uncommitted_sessions(64)
    assert manager.next_committed_session_id == 2


def test_a_client_of_another_major_version_is_rejected():
    manager, ctx = make()
    connect(manager, version=(1 << 16))
    assert manager.rejected_user_sessions[0].state is State.REJECTED
    for _ in range(3):
        manager.send_rejections(5, 0, ctx.clock.time_nanos())
    assert ctx.egress.events == [(1, "ERROR", "invalid client version 1.0.0, cluster is 0.3.0", 11)]
    assert ctx.errors                                      # recorded in the error log


def test_the_session_limit_is_enforced():
    manager, ctx = make(max_sessions=2)
    for correlation_id in (1, 2, 3):
        connect(manager, correlation_id=correlation_id)
    assert len(manager.pending_user_sessions) == 2
    assert manager.rejected_user_sessions[0].response_detail == SESSION_LIMIT_MSG


def test_challenge_response_authentication():
    authenticator = ChallengeAuthenticator()
    manager, ctx = make(authenticator)
    connect(manager, correlation_id=21)
    process(manager, ctx)
    session = manager.pending_user_sessions[0]
    assert session.state is State.CHALLENGED
    assert ctx.egress.events == [(1, "CHALLENGE", b"who?", 21)]
    manager.on_challenge_response_for_user_session(22, 1, b"pass")
    process(manager, ctx, 1)
    assert session.state is State.OPEN
    assert session.encoded_principal == b"user"
    assert ctx.log.entries[0][4] == b"user"
    assert ctx.egress.events[-1] == (1, "OK", "", 22)


def test_a_wrong_answer_is_rejected():
    authenticator = ChallengeAuthenticator()
    manager, ctx = make(authenticator)
    connect(manager)
    process(manager, ctx)
    manager.on_challenge_response_for_user_session(22, 1, b"wrong")
    process(manager, ctx, 1)
    assert manager.pending_user_sessions == []
    assert manager.rejected_user_sessions[0].response_detail == SESSION_REJECTED_MSG
    manager.send_rejections(5, 0, ctx.clock.time_nanos())
    assert ctx.egress.events[-1][1:3] == ("AUTHENTICATION_REJECTED", SESSION_REJECTED_MSG)


def test_a_pending_session_times_out():
    manager, ctx = make(ChallengeAuthenticator())
    connect(manager)
    process(manager, ctx)
    ctx.clock.now_ns += SESSION_TIMEOUT_NS + 1
    process(manager, ctx, 1)
    assert manager.pending_user_sessions == []
    assert ctx.timed_out.value == 1


def test_a_temporarily_refused_egress_is_asked_for_again():
    manager, ctx = make()
    connect(manager)
    ctx.aeron.refuse_next = RegistrationError(ErrorCode.RESOURCE_TEMPORARILY_UNAVAILABLE, "busy")
    process(manager, ctx, 1)
    assert manager.pending_user_sessions[0].state is State.INIT
    process(manager, ctx)
    assert manager.pending_user_sessions == [] and manager.find_by_session_id(1).is_open()


def open_session(manager, ctx, correlation_id=11):
    connect(manager, correlation_id=correlation_id)
    process(manager, ctx)


def test_an_idle_open_session_times_out_with_a_close_in_the_log():
    manager, ctx = make()
    open_session(manager, ctx)
    ctx.clock.now_ns += SESSION_TIMEOUT_NS + 1
    manager.check_sessions(ctx.clock.time_nanos(), 5, 0, "")
    assert ctx.log.entries[-1] == ("close", 1, CloseReason.TIMEOUT)
    assert ctx.egress.events[-1][1:3] == ("CLOSED", "TIMEOUT")
    assert manager.find_by_session_id(1) is None
    assert ctx.timed_out.value == 1


def test_the_client_closes_its_session():
    manager, ctx = make()
    open_session(manager, ctx)
    manager.on_session_close(5, 1)
    assert ctx.log.entries[-1] == ("close", 1, CloseReason.CLIENT_ACTION)
    assert manager.find_by_session_id(1) is None


def test_a_service_closes_a_session_on_the_active_leader_and_elsewhere_waits_for_the_log():
    manager, ctx = make()
    open_session(manager, ctx)
    manager.on_service_close_session(1, True, 5)
    assert ctx.log.entries[-1] == ("close", 1, CloseReason.SERVICE_ACTION)
    assert ctx.egress.events[-1][1:3] == ("CLOSED", "SERVICE_ACTION")
    follower, fctx = make()
    follower.on_replay_session_open(64, 11, 3, 1000, 102, "aeron:udp?endpoint=127.0.0.1:9999")
    follower.on_service_close_session(3, False, 5)
    assert follower.find_by_session_id(3).state is State.CLOSING
    follower.on_replay_session_close(3, CloseReason.SERVICE_ACTION)
    assert follower.find_by_session_id(3) is None
    assert follower.next_session_id == 4 and follower.next_committed_session_id == 4


def test_an_election_rolls_back_uncommitted_closes_and_drops_sessions_opened_after_the_commit():
    manager, ctx = make()
    open_session(manager, ctx, 11)                         # appended at 64
    open_session(manager, ctx, 12)                         # appended at 128
    manager.sweep_uncommitted_sessions(64)
    manager.on_session_close(5, 1)                         # appended at 192, never committed
    manager.clear_sessions_after(64, 5)                    # the new term starts at 64: session 2 goes
    assert manager.find_by_session_id(2) is None
    assert ctx.egress.events[-1][1:3] == ("CLOSED", "election")
    manager.restore_uncommitted_sessions(64)
    restored = manager.find_by_session_id(1)
    assert restored is not None and restored.state is State.CLOSING
    assert manager.next_committed_session_id == 2          # session 2's id was not committed


def test_a_new_leader_reconnects_open_sessions_and_sends_new_leader_events():
    manager, ctx = make()
    manager.on_replay_session_open(64, 11, 1, 1000, 102, "aeron:udp?endpoint=127.0.0.1:9999")
    manager.on_replay_session_open(128, 12, 2, 1000, 102, "aeron:udp?endpoint=127.0.0.1:9998")
    manager.prepare_sessions_for_new_term(False)
    # sessions learnt from the log still owe their SessionEvent OK (Aeron's hasOpenEventPending), then the news
    manager.check_sessions(ctx.clock.time_nanos(), 6, 0, "0=a,1=b")
    manager.check_sessions(ctx.clock.time_nanos(), 6, 0, "0=a,1=b")
    assert [(e[0], e[1]) for e in ctx.egress.events] == [(2, "OK"), (1, "OK"), (2, "NEW_LEADER"), (1, "NEW_LEADER")]
    assert ctx.egress.events[-1][2:] == ("0=a,1=b", 6)


def test_a_cold_start_times_out_the_sessions_of_the_snapshot():
    manager, ctx = make()
    manager.on_load_cluster_session(4, 11, 64, -1, CloseReason.NULL_VAL, 102, "aeron:udp?endpoint=127.0.0.1:9999")
    manager.load_next_session_id(5)
    manager.prepare_sessions_for_new_term(True)
    assert manager.find_by_session_id(4).state is State.CLOSING
    manager.check_sessions(ctx.clock.time_nanos() + SESSION_TIMEOUT_NS + 1, 6, 0, "")
    assert ctx.log.entries[-1] == ("close", 4, CloseReason.TIMEOUT)


def test_snapshot_lists_open_and_closing_sessions_in_id_order():
    manager, ctx = make()
    for session_id in (1, 2, 3):
        manager.on_replay_session_open(64 * session_id, 10 + session_id, session_id, 1000, 102, f"ch-{session_id}")
    manager.on_service_close_session(2, False, 5)
    taken = []
    manager.snapshot_sessions(SimpleNamespace(snapshot_session=lambda s: taken.append((s.id, s.state))))
    assert taken == [(1, State.OPEN), (2, State.CLOSING), (3, State.OPEN)]
