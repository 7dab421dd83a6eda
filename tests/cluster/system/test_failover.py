# SPDX-License-Identifier: Apache-2.0
"""Leader failure with our members, service container and clients, no Java: the leader is SIGKILLed while a client
streams commands with several outstanding; the survivors elect a new leader, the client follows it by itself
(NewLeaderEvent), nothing answered is lost or applied twice, and every member ends with the same state; the old
leader restarts and catches up; a timer scheduled before the kill fires once, from the new leader. The asyncio
client follows a new leader too, and a session silent since before the leader died times out on the new one."""
from __future__ import annotations

import asyncio
import time

import pytest

import aeron.aio
import aeron.aio.cluster
from aeron.aio.cluster import NewLeaderEvent
from aeron.cluster.client import State
from tests.cluster.system.members import MemberProcess, TestCluster
from tests.cluster.system.register_client import (
    RegisterClient,
    add_value,
    client_context,
    running_totals,
)

pytestmark = pytest.mark.timeout(300)

WINDOW = 8                  # commands outstanding at once
BEFORE_KILL = 30            # answers before the leader is killed
AFTER_KILL = 40             # answers from the new leader
TIMER_ID = 77
TIMER_DELAY_MS = 5000       # the kill comes as soon as the timer's answer does


def check_exactly_once(state: dict, name: str, answers: dict[int, str], uncertain: set[int], sent: set[int]) -> None:
    """Every answered command of ``name`` applied once, with the answer its place in the log gives; the commands
    not applied are among those outstanding when the leader died; the client's commands applied in the order
    sent."""
    applied = [int(e.split(":")[1]) for e in state["applied"] if e.startswith(f"{name}:")]
    assert len(applied) == len(set(applied)), f"a command applied twice: {applied}"
    assert applied == sorted(applied), f"commands applied out of order: {applied}"
    totals = running_totals(state["applied"])
    for seq, answer in answers.items():
        assert f"{name}:{seq}" in totals, f"answered command {seq} is not in the state"
        assert int(answer) == totals[f"{name}:{seq}"], f"answer to {seq} is {answer}, its place in the log says " \
                                                       f"{totals[f'{name}:{seq}']}"
    lost = sent - set(applied)
    assert lost <= uncertain, f"commands lost that were not outstanding at the kill: {sorted(lost - uncertain)}"
    assert state["total"] == totals[state["applied"][-1]]


def test_leader_killed_mid_stream_client_follows_nothing_lost_old_leader_catches_up(make_cluster, make_client,
                                                                                     hosted_threading):
    cluster: TestCluster = make_cluster(3, **hosted_threading)
    old_leader = cluster.leader()
    cluster.wait_for_followers(2)
    client = make_client("stream", cluster.ingress_endpoints())
    outstanding: set[int] = set()
    sent: set[int] = set()              # the adds
    uncertain: set[int] = set()         # outstanding when the leader died: may or may not have been applied
    timer_seq = None
    old_term: int | None = None
    leaders_at_kill = 0
    killed = False
    answered_after = 0
    give_up = time.monotonic() + 120
    while answered_after < AFTER_KILL:
        assert time.monotonic() < give_up, f"stream stalled: {cluster.describe()} {client.cluster!r}"
        assert not client.cluster.is_closed, client.cluster.close_error
        if len(outstanding) < WINDOW:
            if timer_seq is None and len(client.answers) >= BEFORE_KILL:
                # a timer, in the stream: scheduled on every member, due after the kill that follows its answer
                timer_seq = client.try_send("timer", TIMER_ID, TIMER_DELAY_MS)
            elif (seq := client.try_send("add", add_value(client.next_seq))) is not None:
                outstanding.add(seq)
                sent.add(seq)
        seen_leaders = len(client.new_leaders)
        if not client.poll():
            time.sleep(0.0005)
        if len(client.new_leaders) > seen_leaders:
            # the client follows the new leader by itself; what was outstanding went to the old one
            uncertain |= outstanding
            outstanding.clear()
        for seq in [s for s in outstanding if s in client.answers]:
            outstanding.discard(seq)
            if killed and len(client.new_leaders) > leaders_at_kill:
                answered_after += 1
        if not killed and timer_seq in client.answers and outstanding:
            old_leader = cluster.leader()               # the same one, unless the load made the cluster elect again
            old_term = old_leader.counters().leadership_term_id
            leaders_at_kill = len(client.new_leaders)
            old_leader.kill()                                           # SIGKILL, with commands in flight
            killed = True
    client.wait(lambda: not outstanding or all(s in client.answers for s in outstanding), 60, "the last answers")

    # the client keeps its session alive whenever the test waits on the members
    survivors = [m for m in cluster.members if m is not old_leader]
    new_leader = client.run_while(lambda: cluster.leader(exclude=[old_leader]))
    assert len(client.new_leaders) > leaders_at_kill and old_term is not None, "no NewLeaderEvent"
    session_id, term, leader_id, _endpoints = client.new_leaders[-1]
    assert (session_id, leader_id) == (client.session_id, new_leader.member_id)
    assert term > old_term and client.cluster.leadership_term_id == term
    assert client.cluster.state is State.CONNECTED

    # the timer scheduled before the kill fires once, from a new leader (it was due after the kill)
    answers = {s: a for s, a in client.answers.items() if s in sent}
    state = client.run_while(lambda: cluster.wait_for_same_state(
        survivors, predicate=lambda s: s["fired"] and all(f"stream:{q}" in s["applied"] for q in answers), timeout=90))
    [[fired_id, fired_term]] = state["fired"]
    assert fired_id == TIMER_ID and fired_term > old_term, (state["fired"], old_term)
    assert [TIMER_ID in m.service_record()["local"]["fired_as_leader"] for m in survivors].count(True) == 1
    assert TIMER_ID not in old_leader.service_record()["local"]["fired_as_leader"]
    check_exactly_once(state, "stream", answers, uncertain, sent)

    # the old leader restarts, follows, and catches up on what happened while it was dead
    client.run_while(old_leader.start)
    client.run_while(lambda: cluster.wait_for_followers(2))
    sent.add(client.next_seq)
    client.call("add", add_value(client.next_seq))
    final = client.run_while(lambda: cluster.wait_for_same_state(
        cluster.members, timeout=90, predicate=lambda s: f"stream:{client.next_seq - 1}" in s["applied"]))
    check_exactly_once(final, "stream", {s: a for s, a in client.answers.items() if s in sent}, uncertain, sent)
    assert final["fired"] == state["fired"]                             # replayed on the old leader, once


def test_the_asyncio_client_follows_a_new_leader_after_the_leaders_sigkill(make_cluster, make_client, driver):
    cluster: TestCluster = make_cluster(3, **{"aeron.cluster.session.timeout": "4s"})
    cluster.wait_for_followers(2)
    ctx = client_context(driver.aeron_dir, cluster.ingress_endpoints())

    async def main() -> tuple[list[str], MemberProcess, RegisterClient, int, int]:
        answers: list[str] = []
        async with aeron.aio.connect(driver.aeron_dir) as client, \
                aeron.aio.cluster.connect(ctx, client=client, keep_alive_interval=0.5) as session:
            old_leader = cluster[session.leader_member_id]
            for seq in range(5):
                await session.offer(f"add aio {seq} {add_value(seq)}".encode(), timeout=30)
                answers.append(bytes((await session.receive(timeout=30)).payload).decode())
            # a session silent from just before the leader dies: the new leader times it out
            quiet = make_client("quiet", cluster.ingress_endpoints())
            quiet.call("add", add_value(0))
            old_term = session.leadership_term_id
            old_leader.kill()
            async for event in session.events(timeout=90):         # the keep-alive task polls the egress
                if isinstance(event, NewLeaderEvent):
                    break
            assert session.leader_member_id != old_leader.member_id
            for seq in range(5, 10):
                await session.offer(f"add aio {seq} {add_value(seq)}".encode(), timeout=60)
                answers.append(bytes((await session.receive(timeout=60)).payload).decode())
            session_id = session.cluster_session_id
        return answers, old_leader, quiet, old_term, session_id

    answers, old_leader, quiet, old_term, session_id = asyncio.run(main())
    new_leader = cluster.leader(exclude=[old_leader])
    survivors = [m for m in cluster.members if m is not old_leader]
    quiet_id = str(quiet.session_id)
    state = cluster.wait_for_same_state(survivors, predicate=lambda s: "aio:9" in s["applied"] and
                                        quiet_id in s["closed"] and str(session_id) in s["closed"])
    # the asyncio session was kept alive until it closed itself
    assert state["closed"] == {quiet_id: "TIMEOUT", str(session_id): "CLIENT_ACTION"}
    assert state["closed_in_term"][quiet_id] > old_term
    assert state["applied"] == [*(f"aio:{seq}" for seq in range(5)), "quiet:0", *(f"aio:{seq}" for seq in range(5, 10))]
    totals = running_totals(state["applied"])
    assert answers == [f"add aio {seq} {totals[f'aio:{seq}']}" for seq in range(10)]
    assert new_leader is not old_leader
