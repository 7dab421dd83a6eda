# SPDX-License-Identifier: Apache-2.0
"""The election state machine, in the style of Aeron's ElectionTest: the consensus module agent, the consensus
publisher, the node-state file, the recording log and the Aeron client are fakes that record what the election
asks of them; time is passed in and the nomination delay comes from a fixed random source, so every transition is
driven deterministically, without sleeping."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from aeron._core.codecs.cluster import ClusterTimeUnit
from aeron.cluster.cluster_event import ClusterEvent, ElectionTimeoutError
from aeron.cluster.cluster_member import ClusterMember
from aeron.cluster.consensus_module import State
from aeron.cluster.election import Election
from aeron.cluster.election_state import ElectionState
from aeron.cluster.service.cluster import Role

NULL_VALUE = -1
NULL_POSITION = -1
MS = 1_000_000
LEADER_HEARTBEAT_TIMEOUT_NS = 10_000 * MS
LEADER_HEARTBEAT_INTERVAL_NS = 200 * MS
ELECTION_TIMEOUT_NS = 1_000 * MS
ELECTION_STATUS_INTERVAL_NS = 100 * MS
STARTUP_CANVASS_TIMEOUT_NS = 60_000 * MS
LOG_SESSION_ID = 777
RECORDING_ID = 3

MEMBERS = ("0,localhost:20000,localhost:20001,localhost:20002,localhost:0,localhost:8010|"
           "1,localhost:20100,localhost:20101,localhost:20102,localhost:0,localhost:8011|"
           "2,localhost:20200,localhost:20201,localhost:20202,localhost:0,localhost:8012")


class Counter:
    def __init__(self, value=0):
        self.value = value

    def get(self):
        return self.value

    def set_ordered(self, value):
        self.value = int(value)

    def increment_ordered(self):
        self.value += 1
        return self.value - 1


class NodeStateFile:
    def __init__(self, candidate_term_id=NULL_VALUE):
        self.candidate_term_id_value = candidate_term_id
        self.updates = []

    def candidate_term_id(self):
        return self.candidate_term_id_value

    def update_candidate_term_id(self, candidate_term_id, log_position, timestamp_ms):
        self.candidate_term_id_value = candidate_term_id
        self.updates.append(candidate_term_id)

    def propose_max_candidate_term_id(self, candidate_term_id, log_position, timestamp_ms):
        if candidate_term_id > self.candidate_term_id_value:
            self.update_candidate_term_id(candidate_term_id, log_position, timestamp_ms)
        return self.candidate_term_id_value


class RecordingLog:
    def __init__(self):
        self.entries = {}
        self.coherent = []

    def find_term_entry(self, leadership_term_id):
        return self.entries.get(leadership_term_id)

    def ensure_coherent(self, recording_id, initial_term, initial_base, term, base, log_position, now_ns, timestamp,
                        file_sync_level):
        self.coherent.append((recording_id, term, base, log_position))


class Publisher:
    """Records every message the election sends, per destination member."""

    def __init__(self):
        self.sent = []

    def _record(self, name, publication, **fields):
        self.sent.append((name, publication, fields))
        return True

    def canvass_position(self, publication, log_leadership_term_id, log_position, leadership_term_id, member_id):
        self._record("canvass", publication, log_leadership_term_id=log_leadership_term_id,
                     log_position=log_position, leadership_term_id=leadership_term_id)

    def request_vote(self, publication, log_leadership_term_id, log_position, candidate_term_id, member_id):
        return self._record("request_vote", publication, candidate_term_id=candidate_term_id,
                            log_position=log_position)

    def place_vote(self, publication, candidate_term_id, log_leadership_term_id, log_position, candidate_id,
                   member_id, vote):
        self._record("vote", publication, candidate_term_id=candidate_term_id, vote=vote)

    def new_leadership_term(self, publication, log_leadership_term_id, next_leadership_term_id,
                            next_term_base_log_position, next_log_position, leadership_term_id, term_base_log_position,
                            log_position, commit_position, leader_recording_id, timestamp, leader_member_id,
                            log_session_id, app_version, is_startup):
        self._record("new_leadership_term", publication, leadership_term_id=leadership_term_id,
                     log_leadership_term_id=log_leadership_term_id, log_position=log_position,
                     log_session_id=log_session_id, commit_position=commit_position, is_startup=is_startup)

    def append_position(self, publication, leadership_term_id, log_position, member_id, flags):
        return self._record("append_position", publication, leadership_term_id=leadership_term_id,
                            log_position=log_position)

    def catchup_position(self, publication, leadership_term_id, log_position, member_id, endpoint):
        return self._record("catchup_position", publication, log_position=log_position, endpoint=endpoint)

    def names(self, publication=None):
        return [name for name, pub, _ in self.sent if publication is None or pub is publication]

    def last(self, name):
        return [fields for n, _, fields in self.sent if n == name][-1]


class Image:
    def __init__(self, join_position):
        self.join_position = join_position


class Subscription:
    def __init__(self, channel):
        self.channel = channel
        self.destinations = []
        self.images = {}
        self.registration_id = 99
        self.channel_status = 1
        self.resolved_endpoint = "localhost:40404"
        self.closed = False

    def add_destination(self, destination):
        self.destinations.append(destination)

    def image_by_session_id(self, session_id):
        return self.images.get(session_id)

    def close(self):
        self.closed = True


class Aeron:
    def __init__(self):
        self.correlation_id = 100
        self.subscriptions = []

    def next_correlation_id(self):
        self.correlation_id += 1
        return self.correlation_id

    def add_subscription(self, channel, stream_id):
        subscription = Subscription(channel)
        self.subscriptions.append(subscription)
        return subscription


class Replay:
    def __init__(self, start, stop):
        self.start, self.stop = start, stop
        self.pos = start
        self.closed = False

    def do_work(self):
        self.pos = self.stop
        return 1

    def is_done(self):
        return self.pos >= self.stop

    def position(self):
        return self.pos

    def close(self):
        self.closed = True


class Replication:
    def __init__(self, stop):
        self.stop = stop
        self.position = NULL_POSITION
        self.recording_id = RECORDING_ID
        self.has_replication_ended = False
        self.has_stopped = False
        self.closed = False

    def poll(self, now_ns):
        return 0

    def on_signal(self, *args):
        pass

    def close(self):
        self.closed = True


class Agent:
    """The consensus module agent's side of the election."""

    def __init__(self, ctx, members):
        self.ctx = ctx
        self.members = members
        self.role = Role.FOLLOWER
        self.state = State.ACTIVE
        self.log_recording_id = RECORDING_ID
        self.time_of_last_leader_update_ns = 0
        self.live_log_destination = None
        self.catchup_log_destination = None
        self.calls = []
        self.replays = []
        self.replications = []
        self.last_append_position = NULL_POSITION
        self.join_as_follower = True
        self.near_live = True

    def set_role(self, role):
        self.role = role

    def set_log_recording_id(self, recording_id):
        if recording_id != NULL_VALUE:
            self.log_recording_id = recording_id

    def update_member_log_position(self, member, leadership_term_id, log_position):
        member.leadership_term_id = leadership_term_id
        member.log_position = log_position
        member.time_of_last_append_position_ns = self.ctx.cluster_clock.time_nanos()

    def quorum_position_bounded_by_leader_log(self, append_position, now_ns):
        ranked = [0] * ClusterMember.quorum_threshold(len(self.members))
        return min(ClusterMember.quorum_position(self.members, ranked, now_ns, LEADER_HEARTBEAT_TIMEOUT_NS),
                   append_position)

    def prepare_for_new_leadership(self, log_position, now_ns):
        self.calls.append(("prepare_for_new_leadership", log_position))
        return self.last_append_position

    def add_log_publication(self, append_position):
        self.calls.append(("add_log_publication", append_position))
        return LOG_SESSION_ID

    def new_log_replay(self, log_position, append_position):
        replay = Replay(log_position, append_position)
        self.replays.append(replay)
        return replay

    def join_log_as_leader(self, leadership_term_id, log_position, log_session_id, is_startup):
        self.calls.append(("join_log_as_leader", leadership_term_id, log_position, log_session_id, is_startup))

    def update_leader_position(self, now_ns, append_position, quorum_position):
        return 0

    def append_new_leadership_term_event(self, now_ns):
        self.calls.append(("append_new_leadership_term_event",))
        return True

    def election_complete(self, now_ns):
        self.calls.append(("election_complete",))

    def publish_commit_position(self, position, leadership_term_id):
        self.calls.append(("publish_commit_position", position, leadership_term_id))

    def track_catchup_completion(self, follower, leadership_term_id, flags):
        pass

    def stop_all_catchups(self):
        self.calls.append(("stop_all_catchups",))

    def await_local_sockets_closed(self, registration_id):
        pass

    def try_join_log_as_follower(self, image, is_leader_startup, now_ns):
        self.calls.append(("try_join_log_as_follower", image.join_position, is_leader_startup))
        return self.join_as_follower

    def catchup_initiated(self, now_ns):
        self.calls.append(("catchup_initiated",))

    def catchup_poll(self, limit_position, now_ns):
        self.ctx.commit_position_counter.value = max(self.ctx.commit_position_counter.value, limit_position)
        return 1

    def is_catchup_near_live(self, position):
        return self.near_live

    def truncate_log_entry(self, leadership_term_id, log_position):
        self.calls.append(("truncate_log_entry", leadership_term_id, log_position))

    def new_log_replication(self, endpoint, response_endpoint, leader_recording_id, stop_position, now_ns):
        replication = Replication(stop_position)
        self.replications.append((endpoint, leader_recording_id, stop_position, replication))
        return replication

    def poll_archive_events(self):
        return 0

    def names(self):
        return [c[0] for c in self.calls]


class Clock:
    def __init__(self):
        self.now_ns = 1_000_000_000 * MS

    def time_unit(self):
        return ClusterTimeUnit.MILLIS

    def time_nanos(self):
        return self.now_ns


class Random:
    def __init__(self, value=0.0):
        self.value = value

    def random(self):
        return self.value


class Harness:
    def __init__(self, member_id, members=MEMBERS, appointed_leader_id=NULL_VALUE, candidate_term_id=NULL_VALUE,
                 is_log_mdc=True, random=0.0):
        self.clock = Clock()
        self.members = ClusterMember.parse(members)
        for member in self.members:
            member.publication = f"pub-{member.id}"
        self.by_id = {m.id: m for m in self.members}
        self.this_member = self.by_id[member_id]
        self.publisher = Publisher()
        self.aeron = Aeron()
        self.ctx = SimpleNamespace(
            cluster_clock=self.clock, epoch_clock=lambda: self.clock.now_ns // MS,
            election_state_counter=Counter(), election_counter=Counter(), commit_position_counter=Counter(),
            node_state_file=NodeStateFile(candidate_term_id), random=Random(random),
            election_timeout_ns=ELECTION_TIMEOUT_NS, startup_canvass_timeout_ns=STARTUP_CANVASS_TIMEOUT_NS,
            leader_heartbeat_timeout_ns=LEADER_HEARTBEAT_TIMEOUT_NS,
            leader_heartbeat_interval_ns=LEADER_HEARTBEAT_INTERVAL_NS,
            election_status_interval_ns=ELECTION_STATUS_INTERVAL_NS, appointed_leader_id=appointed_leader_id,
            consensus_stream_id=108, aeron=self.aeron, counted_error_handler=self.errors.append,
            recording_log=RecordingLog(), app_version=1, log_channel="aeron:udp?term-length=64k",
            is_log_mdc=is_log_mdc, log_stream_id=100, file_sync_level=0)
        self.agent = Agent(self.ctx, self.members)

    errors: list = []

    def election(self, is_startup=True, leadership_term_id=NULL_VALUE, log_position=0, append_position=0,
                 graceful_closed_leader_id=NULL_VALUE):
        self.errors = []
        self.ctx.counted_error_handler = self.errors.append
        return Election(is_startup, graceful_closed_leader_id, leadership_term_id, 0, log_position, append_position,
                        self.members, self.by_id, self.this_member, self.publisher, self.ctx, self.agent)

    def advance(self, delta_ns):
        self.clock.now_ns += delta_ns
        return self.clock.now_ns

    def now(self):
        return self.clock.now_ns


def step(election, harness, times=1, delta_ns=0):
    for _ in range(times):
        election.do_work(harness.advance(delta_ns))


def canvass_from_all(harness, election, log_leadership_term_id=NULL_VALUE, log_position=0, leadership_term_id=None):
    for member in harness.members:
        if member is not harness.this_member:
            election.on_canvass_position(log_leadership_term_id, log_position,
                                         log_leadership_term_id if leadership_term_id is None else leadership_term_id,
                                         member.id, 1 << 16)


# -- a cluster of one ---------------------------------------------------------------------------------------------

def test_single_member_elects_itself_and_replays_nothing():
    h = Harness(0, members="0,localhost:20000,localhost:20001,localhost:20002,localhost:0,localhost:8010")
    election = h.election()
    assert h.ctx.election_counter.value == 1
    step(election, h)
    assert election.state is ElectionState.LEADER_LOG_REPLICATION
    assert h.agent.role is Role.LEADER
    assert h.ctx.node_state_file.updates == [0]
    assert election.leadership_term_id == 0
    assert ("add_log_publication", 0) in h.agent.calls
    step(election, h)
    assert election.state is ElectionState.LEADER_REPLAY
    step(election, h)
    assert election.state is ElectionState.LEADER_INIT
    step(election, h)
    assert election.state is ElectionState.LEADER_READY
    assert ("join_log_as_leader", 0, 0, LOG_SESSION_ID, True) in h.agent.calls
    assert h.ctx.recording_log.coherent == [(RECORDING_ID, 0, 0, NULL_VALUE)]
    step(election, h)
    assert election.state is ElectionState.CLOSED
    assert h.agent.names()[-2:] == ["append_new_leadership_term_event", "election_complete"]
    assert h.ctx.election_state_counter.value == ElectionState.CLOSED


def test_single_member_replays_its_uncommitted_log_before_leading():
    h = Harness(0, members="0,localhost:20000,localhost:20001,localhost:20002,localhost:0,localhost:8010")
    election = h.election(leadership_term_id=4, log_position=1024, append_position=4096)
    step(election, h, times=3)
    assert election.state is ElectionState.LEADER_REPLAY
    replay = h.agent.replays[0]
    assert (replay.start, replay.stop) == (1024, 4096)
    step(election, h)
    assert election.state is ElectionState.LEADER_INIT
    assert replay.closed
    assert election.log_position == 4096
    assert election.leadership_term_id == 5


# -- a candidate's path -------------------------------------------------------------------------------------------

def test_appointed_leader_canvasses_nominates_and_wins_a_unanimous_ballot():
    h = Harness(0, appointed_leader_id=0)
    election = h.election()
    step(election, h)
    assert election.state is ElectionState.CANVASS
    step(election, h)
    assert h.publisher.names().count("canvass") == 2      # to each peer
    canvass_from_all(h, election)
    step(election, h)
    assert election.state is ElectionState.NOMINATE
    step(election, h)                                       # the random delay is 0 in this harness
    assert election.state is ElectionState.CANDIDATE_BALLOT
    assert h.agent.role is Role.CANDIDATE
    assert h.ctx.node_state_file.candidate_term_id() == 0
    step(election, h)
    assert h.publisher.names().count("request_vote") == 2
    assert h.publisher.last("request_vote")["candidate_term_id"] == 0
    for voter in (1, 2):
        election.on_vote(0, NULL_VALUE, 0, 0, voter, True)
    step(election, h)
    assert election.state is ElectionState.LEADER_LOG_REPLICATION
    assert h.agent.role is Role.LEADER
    assert election.leadership_term_id == 0
    step(election, h)                                       # NewLeadershipTerm to both, quorum at 0
    nlt = h.publisher.last("new_leadership_term")
    assert (nlt["leadership_term_id"], nlt["log_session_id"], nlt["is_startup"]) == (0, LOG_SESSION_ID, False)
    assert election.state is ElectionState.LEADER_REPLAY
    step(election, h, times=2)
    assert election.state is ElectionState.LEADER_READY
    step(election, h)
    assert election.state is ElectionState.LEADER_READY     # followers have not reported the new term
    election.on_append_position(0, 0, 1, 0)
    step(election, h)
    assert election.state is ElectionState.CLOSED
    assert "election_complete" in h.agent.names()


def test_a_member_that_is_not_the_appointed_leader_only_canvasses():
    h = Harness(1, appointed_leader_id=0)
    election = h.election()
    step(election, h)
    canvass_from_all(h, election)
    step(election, h, times=5, delta_ns=STARTUP_CANVASS_TIMEOUT_NS)
    assert election.state is ElectionState.CANVASS


def test_quorum_candidate_waits_for_the_startup_canvass_timeout():
    h = Harness(0)
    election = h.election()
    step(election, h)
    election.on_canvass_position(NULL_VALUE, 0, NULL_VALUE, 1, 1 << 16)   # only one peer is heard
    step(election, h)
    assert election.state is ElectionState.CANVASS
    step(election, h, delta_ns=STARTUP_CANVASS_TIMEOUT_NS - MS)
    assert election.state is ElectionState.CANVASS
    step(election, h, delta_ns=MS)
    assert election.state is ElectionState.NOMINATE


def test_a_member_with_a_shorter_log_does_not_nominate_itself():
    h = Harness(0)
    election = h.election(leadership_term_id=1, log_position=100, append_position=100)
    step(election, h)
    canvass_from_all(h, election, log_leadership_term_id=1, log_position=200)
    step(election, h, delta_ns=STARTUP_CANVASS_TIMEOUT_NS)
    assert election.state is ElectionState.CANVASS


def test_nomination_delay_comes_from_the_random_source():
    h = Harness(0, random=0.5)
    election = h.election()
    step(election, h)
    canvass_from_all(h, election)
    step(election, h)
    assert election.state is ElectionState.NOMINATE
    assert election.nomination_deadline_ns == h.now() + (ELECTION_TIMEOUT_NS >> 1) // 2
    step(election, h, delta_ns=(ELECTION_TIMEOUT_NS >> 2) - 1)
    assert election.state is ElectionState.NOMINATE
    step(election, h, delta_ns=1)
    assert election.state is ElectionState.CANDIDATE_BALLOT


def test_candidate_with_a_quorum_of_votes_wins_at_the_election_timeout():
    h = Harness(0)
    election = h.election()
    step(election, h)
    canvass_from_all(h, election)
    step(election, h, times=3)
    assert election.state is ElectionState.CANDIDATE_BALLOT
    election.on_vote(0, NULL_VALUE, 0, 0, 1, True)
    step(election, h, delta_ns=ELECTION_TIMEOUT_NS - 1)
    assert election.state is ElectionState.CANDIDATE_BALLOT
    step(election, h, delta_ns=1)
    assert election.state is ElectionState.LEADER_LOG_REPLICATION


def test_candidate_without_a_quorum_goes_back_to_canvass():
    h = Harness(0)
    election = h.election()
    step(election, h)
    canvass_from_all(h, election)
    step(election, h, times=3)
    election.on_vote(0, NULL_VALUE, 0, 0, 1, False)
    step(election, h, delta_ns=ELECTION_TIMEOUT_NS)
    assert election.state is ElectionState.CANVASS
    assert h.agent.role is Role.FOLLOWER


def test_votes_for_another_candidate_term_are_ignored():
    h = Harness(0)
    election = h.election()
    step(election, h)
    canvass_from_all(h, election)
    step(election, h, times=3)
    election.on_vote(7, NULL_VALUE, 0, 0, 1, True)      # another term
    election.on_vote(0, NULL_VALUE, 0, 2, 1, True)      # for another candidate
    step(election, h, delta_ns=ELECTION_TIMEOUT_NS)
    assert election.state is ElectionState.CANVASS


def test_a_gracefully_closed_leader_is_left_out_of_a_unanimous_ballot():
    h = Harness(0)
    election = h.election(is_startup=False, leadership_term_id=0, graceful_closed_leader_id=2)
    step(election, h)
    election.on_canvass_position(0, 0, 0, 1, 1 << 16)
    step(election, h)
    assert election.state is ElectionState.NOMINATE       # 1 and itself suffice: 2 closed gracefully
    step(election, h, times=2)
    election.on_vote(1, 0, 0, 0, 1, True)
    step(election, h)
    assert election.state is ElectionState.LEADER_LOG_REPLICATION


# -- voting -------------------------------------------------------------------------------------------------------

def test_votes_yes_for_a_higher_term_with_a_log_not_behind_and_persists_the_term_first():
    h = Harness(1)
    election = h.election()
    step(election, h)
    election.on_request_vote(NULL_VALUE, 0, 5, 0, 1 << 16)
    assert election.state is ElectionState.FOLLOWER_BALLOT
    assert h.ctx.node_state_file.candidate_term_id() == 5
    sent = [s for s in h.publisher.sent if s[0] == "vote"]
    assert sent[-1][1] == "pub-0"
    assert sent[-1][2] == {"candidate_term_id": 5, "vote": True}


def test_votes_no_for_a_term_not_above_its_candidate_term():
    h = Harness(1, candidate_term_id=5)
    election = h.election()
    step(election, h)
    election.on_request_vote(NULL_VALUE, 0, 5, 0, 1 << 16)
    assert election.state is ElectionState.CANVASS
    assert h.publisher.last("vote") == {"candidate_term_id": 5, "vote": False}


def test_votes_no_for_a_candidate_whose_log_is_behind_but_remembers_the_term():
    h = Harness(1)
    election = h.election(leadership_term_id=2, log_position=500, append_position=500)
    step(election, h)
    election.on_request_vote(2, 100, 3, 0, 1 << 16)
    assert election.state is ElectionState.CANVASS
    assert h.publisher.last("vote") == {"candidate_term_id": 3, "vote": False}
    assert h.ctx.node_state_file.candidate_term_id() == 3
    election.on_request_vote(2, 100, 3, 2, 1 << 16)       # the same term again: no
    assert h.publisher.last("vote") == {"candidate_term_id": 3, "vote": False}


def test_messages_are_ignored_in_init_and_own_vote_requests():
    h = Harness(1)
    election = h.election()
    election.on_request_vote(NULL_VALUE, 0, 5, 0, 1 << 16)
    election.on_canvass_position(NULL_VALUE, 0, NULL_VALUE, 0, 1 << 16)
    assert h.publisher.sent == []
    step(election, h)
    election.on_request_vote(NULL_VALUE, 0, 5, 1, 1 << 16)
    assert h.publisher.names() == []


def test_follower_ballot_times_out_to_canvass():
    h = Harness(1)
    election = h.election()
    step(election, h)
    election.on_request_vote(NULL_VALUE, 0, 5, 0, 1 << 16)
    step(election, h, delta_ns=ELECTION_TIMEOUT_NS)
    assert election.state is ElectionState.CANVASS


# -- a follower's path -------------------------------------------------------------------------------------------

def new_leadership_term(election, log_leadership_term_id=NULL_VALUE, next_leadership_term_id=0,
                        next_term_base_log_position=0, next_log_position=NULL_POSITION, leadership_term_id=0,
                        term_base_log_position=0, log_position=0, commit_position=0, leader_id=0, is_startup=True):
    election.on_new_leadership_term(log_leadership_term_id, next_leadership_term_id, next_term_base_log_position,
                                    next_log_position, leadership_term_id, term_base_log_position, log_position,
                                    commit_position, 7, 0, leader_id, LOG_SESSION_ID, is_startup)


def test_follower_joins_the_live_log_of_the_leader_it_voted_for():
    h = Harness(1)
    election = h.election()
    step(election, h)
    election.on_request_vote(NULL_VALUE, 0, 0, 0, 1 << 16)
    new_leadership_term(election)
    assert election.state is ElectionState.FOLLOWER_REPLAY
    assert election.leader().id == 0
    step(election, h)
    assert election.state is ElectionState.FOLLOWER_LOG_INIT
    step(election, h)
    assert election.state is ElectionState.FOLLOWER_LOG_AWAIT
    subscription = h.aeron.subscriptions[0]
    assert "control-mode=manual" in subscription.channel and f"session-id={LOG_SESSION_ID}" in subscription.channel
    assert "alias=log-cm" in subscription.channel and "group=true" in subscription.channel
    assert subscription.destinations == ["aeron:udp?endpoint=localhost:20102"]
    assert h.agent.live_log_destination == "aeron:udp?endpoint=localhost:20102"
    step(election, h)
    assert election.state is ElectionState.FOLLOWER_LOG_AWAIT
    subscription.images[LOG_SESSION_ID] = Image(0)
    step(election, h)
    assert election.state is ElectionState.FOLLOWER_READY
    assert ("try_join_log_as_follower", 0, True) in h.agent.calls
    assert h.ctx.recording_log.coherent == [(RECORDING_ID, 0, 0, NULL_VALUE)]
    step(election, h)
    assert election.state is ElectionState.CLOSED
    assert h.publisher.last("append_position") == {"leadership_term_id": 0, "log_position": 0}
    assert h.agent.names()[-1] == "election_complete"


def test_follower_with_a_non_mdc_log_subscribes_to_the_log_channel_itself():
    h = Harness(1, is_log_mdc=False)
    election = h.election()
    step(election, h)
    new_leadership_term(election)
    step(election, h, times=2)
    assert h.aeron.subscriptions[0].destinations == ["aeron:udp?term-length=64k"]


def test_follower_refuses_a_log_joined_at_another_position():
    h = Harness(1)
    election = h.election()
    step(election, h)
    new_leadership_term(election)
    step(election, h, times=2)
    h.aeron.subscriptions[0].images[LOG_SESSION_ID] = Image(4096)
    with pytest.raises(ClusterEvent, match="joinPosition=4096 greater than logPosition=0"):
        step(election, h)


def test_follower_times_out_waiting_for_the_live_log():
    h = Harness(1)
    election = h.election()
    step(election, h)
    new_leadership_term(election)
    step(election, h, times=2)
    with pytest.raises(ElectionTimeoutError, match="failed to join live log"):
        step(election, h, delta_ns=LEADER_HEARTBEAT_TIMEOUT_NS)


def test_follower_replays_its_log_up_to_the_notified_commit_position():
    h = Harness(1)
    election = h.election(leadership_term_id=0, log_position=100, append_position=300)
    step(election, h)
    new_leadership_term(election, log_leadership_term_id=0, next_leadership_term_id=NULL_VALUE,
                        next_term_base_log_position=NULL_POSITION, leadership_term_id=1, term_base_log_position=300,
                        log_position=300, commit_position=0)
    assert election.state is ElectionState.FOLLOWER_REPLAY
    step(election, h)                                       # no commit position known: report the append position
    assert h.publisher.last("append_position") == {"leadership_term_id": 1, "log_position": 300}
    election.on_commit_position(1, 300, 0)
    step(election, h)
    replay = h.agent.replays[0]
    assert (replay.start, replay.stop) == (100, 300)
    step(election, h)
    assert election.state is ElectionState.FOLLOWER_LOG_INIT
    assert election.log_position == 300


def test_follower_behind_the_leader_catches_up_then_joins_live():
    h = Harness(1)
    election = h.election(leadership_term_id=0, log_position=100, append_position=100)
    step(election, h)
    new_leadership_term(election, log_leadership_term_id=0, next_leadership_term_id=1,
                        next_term_base_log_position=500, leadership_term_id=1, term_base_log_position=100,
                        log_position=500, commit_position=400)
    assert election.state is ElectionState.FOLLOWER_REPLAY
    assert election.catchup_join_position == 500
    step(election, h)
    assert election.state is ElectionState.FOLLOWER_CATCHUP_INIT
    step(election, h)
    assert election.state is ElectionState.FOLLOWER_CATCHUP_AWAIT
    subscription = h.aeron.subscriptions[0]
    # the catch-up endpoint ends in :0, so the resolved port goes to the leader
    assert h.publisher.last("catchup_position") == {"log_position": 100, "endpoint": "localhost:40404"}
    assert subscription.destinations == ["aeron:udp?endpoint=localhost:0"]
    assert h.agent.catchup_log_destination == "aeron:udp?endpoint=localhost:0"
    subscription.images[LOG_SESSION_ID] = Image(100)
    step(election, h)
    assert election.state is ElectionState.FOLLOWER_CATCHUP
    step(election, h)
    assert h.agent.live_log_destination == "aeron:udp?endpoint=localhost:20102"
    assert election.state is ElectionState.FOLLOWER_CATCHUP      # the catch-up destination is still there
    h.agent.catchup_log_destination = None                       # StopCatchup arrived
    step(election, h)
    assert election.state is ElectionState.FOLLOWER_CATCHUP      # committed only to 400 of the 500 to catch up
    election.on_commit_position(1, 500, 0)
    step(election, h)
    assert election.state is ElectionState.FOLLOWER_LOG_INIT
    assert election.log_position == 500
    step(election, h)
    assert election.state is ElectionState.FOLLOWER_READY


def test_follower_does_not_leave_catchup_while_a_snapshot_runs():
    h = Harness(1)
    election = h.election(leadership_term_id=0, log_position=100, append_position=100)
    step(election, h)
    new_leadership_term(election, log_leadership_term_id=0, next_leadership_term_id=1,
                        next_term_base_log_position=500, leadership_term_id=1, term_base_log_position=100,
                        log_position=500, commit_position=500)
    step(election, h, times=2)
    h.aeron.subscriptions[0].images[LOG_SESSION_ID] = Image(100)
    step(election, h)
    h.agent.catchup_log_destination = None
    h.agent.state = State.SNAPSHOT
    step(election, h)
    assert election.state is ElectionState.FOLLOWER_CATCHUP
    h.agent.state = State.ACTIVE
    step(election, h)
    assert election.state is ElectionState.FOLLOWER_LOG_INIT


def test_follower_missing_the_end_of_its_term_replicates_it_from_the_leader():
    h = Harness(1)
    election = h.election(leadership_term_id=0, log_position=100, append_position=100)
    step(election, h)
    new_leadership_term(election, log_leadership_term_id=0, next_leadership_term_id=1,
                        next_term_base_log_position=300, next_log_position=600, leadership_term_id=2,
                        term_base_log_position=600, log_position=600, commit_position=600)
    assert election.state is ElectionState.FOLLOWER_LOG_REPLICATION
    step(election, h)
    endpoint, leader_recording_id, stop_position, replication = h.agent.replications[0]
    assert (endpoint, leader_recording_id, stop_position) == ("localhost:8010", 7, 300)
    replication.position = 300
    replication.has_replication_ended = replication.has_stopped = True
    election.on_commit_position(2, 600, 0)
    step(election, h)
    assert election.state is ElectionState.CANVASS
    assert replication.closed
    assert election.append_position == 300
    # an open term's base is already in the recording log: the initial base is passed
    assert h.ctx.recording_log.coherent[-1] == (RECORDING_ID, 0, 0, 300)
    assert h.publisher.last("append_position") == {"leadership_term_id": 2, "log_position": 300}


def test_follower_at_the_next_terms_base_replicates_that_term():
    h = Harness(1)
    election = h.election(leadership_term_id=0, log_position=300, append_position=300)
    step(election, h)
    new_leadership_term(election, log_leadership_term_id=0, next_leadership_term_id=1,
                        next_term_base_log_position=300, next_log_position=700, leadership_term_id=2,
                        term_base_log_position=700, log_position=700, commit_position=700)
    assert election.state is ElectionState.FOLLOWER_LOG_REPLICATION
    assert (election.replication_leadership_term_id, election.replication_stop_position,
            election.replication_term_base_log_position) == (1, 700, 300)


def test_log_replication_times_out_without_the_leaders_commit_position():
    h = Harness(1)
    election = h.election(leadership_term_id=0, log_position=100, append_position=100)
    step(election, h)
    new_leadership_term(election, log_leadership_term_id=0, next_leadership_term_id=1,
                        next_term_base_log_position=300, leadership_term_id=1, term_base_log_position=300,
                        log_position=300, commit_position=0)
    step(election, h)
    replication = h.agent.replications[0][3]
    replication.position = 300
    replication.has_replication_ended = replication.has_stopped = True
    with pytest.raises(ElectionTimeoutError, match="timeout awaiting commit position"):
        step(election, h, delta_ns=LEADER_HEARTBEAT_TIMEOUT_NS)


def test_a_log_beyond_the_new_terms_base_is_truncated_and_the_election_restarts():
    h = Harness(1)
    election = h.election(leadership_term_id=0, log_position=100, append_position=900)
    h.ctx.commit_position_counter.value = 100
    step(election, h)
    with pytest.raises(ClusterEvent, match="Truncating Cluster Log"):
        new_leadership_term(election, log_leadership_term_id=0, next_leadership_term_id=1,
                            next_term_base_log_position=600, leadership_term_id=1, term_base_log_position=600,
                            log_position=600, commit_position=600)
    assert ("truncate_log_entry", 0, 600) in h.agent.calls
    assert election.append_position == 600


def test_a_new_leadership_term_for_another_log_term_sends_the_follower_back_to_canvass():
    h = Harness(1)
    election = h.election(leadership_term_id=0)
    step(election, h)
    election.on_request_vote(0, 0, 3, 0, 1 << 16)
    assert election.state is ElectionState.FOLLOWER_BALLOT
    new_leadership_term(election, log_leadership_term_id=1, leadership_term_id=3)
    assert election.state is ElectionState.CANVASS


def test_a_new_leadership_term_of_another_ballot_term_is_ignored():
    h = Harness(1)
    election = h.election(leadership_term_id=0)
    step(election, h)
    election.on_request_vote(0, 0, 3, 0, 1 << 16)
    new_leadership_term(election, log_leadership_term_id=0, leadership_term_id=2)
    assert election.state is ElectionState.FOLLOWER_BALLOT


# -- a leader and lagging members ---------------------------------------------------------------------------------

def leader_in_log_replication(h):
    election = h.election(leadership_term_id=0, log_position=0, append_position=0)
    step(election, h)
    canvass_from_all(h, election, log_leadership_term_id=0)
    step(election, h, times=3)
    for voter in (1, 2):
        election.on_vote(1, 0, 0, 0, voter, True)
    step(election, h)
    assert election.state is ElectionState.LEADER_LOG_REPLICATION
    return election


def test_leader_answers_a_canvass_from_an_older_term_with_new_leadership_term():
    h = Harness(0)
    election = leader_in_log_replication(h)
    h.publisher.sent.clear()
    election.on_canvass_position(NULL_VALUE, 0, NULL_VALUE, 2, 1 << 16)
    assert h.publisher.sent[-1][0] == "new_leadership_term"
    assert h.publisher.sent[-1][1] == "pub-2"
    assert h.publisher.sent[-1][2]["log_leadership_term_id"] == NULL_VALUE


def test_leader_hearing_of_a_newer_term_abandons_its_election():
    h = Harness(0)
    election = leader_in_log_replication(h)
    with pytest.raises(ClusterEvent, match="potential new election in progress"):
        election.on_canvass_position(5, 0, 5, 2, 1 << 16)


def test_leader_ready_hearing_a_commit_position_of_a_newer_term_abandons_its_election():
    h = Harness(0)
    election = leader_in_log_replication(h)
    step(election, h, times=3)
    assert election.state is ElectionState.LEADER_READY
    with pytest.raises(ClusterEvent, match="new leader detected due to commit position"):
        election.on_commit_position(9, 0, 2)


def test_leader_publishes_commit_position_as_the_quorum_advances():
    h = Harness(0)
    election = h.election(leadership_term_id=0, log_position=0, append_position=1000)
    step(election, h)
    canvass_from_all(h, election, log_leadership_term_id=0, log_position=1000)
    step(election, h, times=3)
    for voter in (1, 2):
        election.on_vote(1, 0, 1000, 0, voter, True)
    step(election, h)
    assert election.state is ElectionState.LEADER_LOG_REPLICATION
    h.agent.calls.clear()
    for member in h.members:
        if member is not h.this_member:
            member.log_position = 0
    step(election, h)
    assert election.state is ElectionState.LEADER_LOG_REPLICATION       # followers are behind
    election.on_append_position(1, 1000, 1, 0)
    step(election, h)
    assert ("publish_commit_position", 1000, 1) in h.agent.calls
    assert election.state is ElectionState.LEADER_REPLAY


# -- errors and restarts ------------------------------------------------------------------------------------------

def test_handle_error_restarts_at_the_commit_position_and_reinitialises():
    h = Harness(1)
    election = h.election(is_startup=False, leadership_term_id=0, log_position=400, append_position=400)
    step(election, h)
    assert h.agent.names().count("prepare_for_new_leadership") == 1       # an election entered while running
    new_leadership_term(election, log_leadership_term_id=0, next_leadership_term_id=1,
                        next_term_base_log_position=400, leadership_term_id=1, term_base_log_position=400,
                        log_position=400, commit_position=300)
    step(election, h, times=2)
    assert election.state is ElectionState.FOLLOWER_LOG_AWAIT
    h.ctx.commit_position_counter.value = 250
    error = ClusterEvent("boom")
    election.handle_error(h.now(), error)
    assert h.errors == [error]
    assert election.state is ElectionState.INIT
    assert election.log_position == 250
    h.agent.last_append_position = 400
    step(election, h)
    assert election.state is ElectionState.CANVASS
    assert h.agent.names().count("prepare_for_new_leadership") == 2
    assert "stop_all_catchups" in h.agent.names()
    assert h.aeron.subscriptions[0].closed


def test_canvass_deadline_after_a_leader_loss_is_the_heartbeat_timeout():
    h = Harness(1)
    h.agent.time_of_last_leader_update_ns = h.now()
    election = h.election(is_startup=False, leadership_term_id=0)
    step(election, h)
    election.on_canvass_position(0, 0, 0, 2, 1 << 16)
    step(election, h, delta_ns=LEADER_HEARTBEAT_TIMEOUT_NS - MS)
    assert election.state is ElectionState.CANVASS
    step(election, h, delta_ns=MS)
    assert election.state is ElectionState.NOMINATE
