# SPDX-License-Identifier: Apache-2.0
"""The leader's commit position (ConsensusModuleAgent.update_leader_position): looking at the quorum only when
something it is made of moved, or a heartbeat is due, commits and heartbeats exactly as looking every duty cycle."""
from __future__ import annotations

import random

from aeron.cluster.cluster_member import ClusterMember
from aeron.cluster.consensus_module_agent import ConsensusModuleAgent
from aeron.archive.configuration import NULL_POSITION

HEARTBEAT_INTERVAL_NS = 100_000_000
HEARTBEAT_TIMEOUT_NS = 300_000_000


class Clock:
    def __init__(self) -> None:
        self.now_ns = 0

    def time_nanos(self) -> int:
        return self.now_ns


class Counter:
    def __init__(self) -> None:
        self.value = 0

    def get(self) -> int:
        return self.value

    def propose_max_ordered(self, value: int) -> bool:
        if value > self.value:
            self.value = value
            return True
        return False


class Leader:
    """The agent's state that update_leader_position reads and writes, around the agent's own methods."""

    update_leader_position = ConsensusModuleAgent.update_leader_position
    quorum_position_bounded_by_leader_log = ConsensusModuleAgent.quorum_position_bounded_by_leader_log
    update_member_log_position = ConsensusModuleAgent.update_member_log_position

    def __init__(self, clock: Clock, look_every_cycle: bool) -> None:
        self.look_every_cycle = look_every_cycle
        self.cluster_clock = clock
        self.active_members = [ClusterMember(i, "", "", "", "", "", "") for i in range(3)]
        self.this_member = self.active_members[0]
        self.member_id = 0
        self.leadership_term_id = 4
        self.ranked_positions = [0] * ClusterMember.quorum_threshold(3)
        self.leader_heartbeat_timeout_ns = HEARTBEAT_TIMEOUT_NS
        self.leader_heartbeat_interval_ns = HEARTBEAT_INTERVAL_NS
        self.append_position = 7                    # the log recording's position counter id
        self.recorded = 0
        self.commit_position = Counter()
        self._commit_wake = None
        self.last_quorum_backtrack_commit_position = NULL_POSITION
        self.time_of_last_log_update_ns = 0
        ConsensusModuleAgent._reset_quorum_look(self)        # type: ignore[arg-type]
        self.published: list[tuple[int, int]] = []
        self.ctx = self

    def counted_error_handler(self, error: BaseException) -> None:
        self.published.append((-1, self.cluster_clock.now_ns))

    def _append_position_value(self) -> int:
        return self.recorded

    def publish_commit_position(self, commit_position: int, leadership_term_id: int) -> None:
        self.published.append((commit_position, self.cluster_clock.now_ns))

    def _sweep_uncommitted_entries_to(self, commit_position: int) -> None:
        pass

    def cycle(self) -> int:
        if self.look_every_cycle:
            self._quorum_seen_append_position = NULL_POSITION       # as an election's look: the next looks again
        return self.update_leader_position(self.cluster_clock.now_ns)


def test_commits_and_heartbeats_are_those_of_looking_every_cycle():
    rng = random.Random(30)
    clock = Clock()
    cached, every = Leader(clock, False), Leader(clock, True)
    positions = [0, 0, 0]
    silent = set()
    works = [0, 0]
    for step in range(20_000):
        clock.now_ns += rng.choice((0, 1_000, 50_000, 1_000_000, 20_000_000))
        event = rng.random()
        if event < 0.3:
            positions[0] += 32 * rng.randint(1, 4)
            cached.recorded = every.recorded = positions[0]
        elif event < 0.6:
            follower = rng.choice((1, 2))
            if follower not in silent:
                # ahead of the leader's recording too at times (its archive slower than theirs): the leader's own
                # position then decides the quorum
                positions[follower] = max(positions[follower], positions[0] + 32 * rng.randint(-8, 8))
                for leader in (cached, every):
                    leader.update_member_log_position(leader.active_members[follower], 4, positions[follower])
        elif event < 0.62:
            silent ^= {rng.choice((1, 2))}          # a follower falls silent (lapses after the timeout), or back
        work = cached.cycle(), every.cycle()
        works[0] += work[0]
        works[1] += work[1]
        assert work[0] == work[1], step
        assert cached.commit_position.value == every.commit_position.value, step
    assert cached.published == every.published and works[0] == works[1] > 1000
    # both commits (the quorum moved) and heartbeats (nothing moved for an interval) were published
    commits = [c for c, _ in cached.published]
    assert len(set(commits)) > 100 and len(commits) > len(set(commits))


class Wake:
    def __init__(self) -> None:
        self.signals = 0

    def signal(self) -> None:
        self.signals += 1


def test_the_services_wake_at_once_or_at_the_end_of_the_threads_cycle():
    clock = Clock()
    leader = Leader(clock, False)
    leader._commit_wake = wake = Wake()
    leader._signal_commit = ConsensusModuleAgent._signal_commit.__get__(leader)
    leader.signal_owed_wakes = ConsensusModuleAgent.signal_owed_wakes.__get__(leader)
    leader.defer_commit_wake, leader._commit_wake_owed = False, False
    assert leader.cycle() == 0                       # the leader's own position known from its first look
    leader.update_member_log_position(leader.active_members[1], 4, 64)
    leader.recorded = 64
    # the quorum counts the leader's position of its last look (Java's order): committed on the next
    assert leader.cycle() == 0 and leader.cycle() == 1 and leader.commit_position.value == 64 and wake.signals == 1
    leader.defer_commit_wake = True                  # on a member's one thread
    leader.update_member_log_position(leader.active_members[2], 4, 128)
    leader.recorded = 128
    assert leader.cycle() == 0 and leader.cycle() == 1 and leader.commit_position.value == 128
    assert wake.signals == 1
    leader.signal_owed_wakes()
    assert wake.signals == 2
    leader.signal_owed_wakes()                       # owed once
    clock.now_ns += HEARTBEAT_INTERVAL_NS            # a heartbeat moves no commit position: no wake owed
    assert leader.cycle() == 1 and leader.commit_position.value == 128
    leader.signal_owed_wakes()
    assert wake.signals == 2
