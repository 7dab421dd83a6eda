# SPDX-License-Identifier: Apache-2.0
"""Three of our members (``python -m aeron.cluster``, each hosting our clustered service container with the register
service) and our AeronCluster client, no Java: a leader is elected and the client's commands are replicated to
every member's service; a client that reaches a follower first is redirected to the leader; a session that sends
no keep-alives times out on every member. The members run for the whole module; each test has clients of its
own."""
from __future__ import annotations

import pytest

from tests.cluster.system.members import TestCluster
from tests.cluster.system.register_client import add_value, running_totals

pytestmark = pytest.mark.timeout(300)


def test_three_members_elect_a_leader_and_replicate_a_clients_commands(shared_cluster: TestCluster, make_client):
    leader = shared_cluster.leader()
    followers = shared_cluster.wait_for_followers(2)
    assert leader not in followers
    client = make_client("replicate", shared_cluster.ingress_endpoints())
    assert client.cluster.leader_member_id == shared_cluster.leader().member_id

    seqs = client.add_many(20)
    state = client.run_while(lambda: shared_cluster.wait_for_same_state(
        predicate=lambda s: all(f"replicate:{seq}" in s["applied"] for seq in seqs)))
    assert client.session_id in state["opened"]
    mine = [entry for entry in state["applied"] if entry.startswith("replicate:")]
    assert mine == [f"replicate:{seq}" for seq in seqs]                 # each once, in the order sent
    totals = running_totals(state["applied"])
    assert {seq: int(client.answers[seq]) for seq in seqs} == {seq: totals[f"replicate:{seq}"] for seq in seqs}
    assert state["total"] == sum(add_value(int(e.split(":")[1])) for e in state["applied"])
    # each member's commit position reached the leader's
    client.run_while(lambda: shared_cluster.wait_for_commit_position(leader.counters().commit_position or 0))


def test_a_client_that_reaches_a_follower_first_is_redirected_to_the_leader(shared_cluster: TestCluster,
                                                                            make_client):
    follower = shared_cluster.wait_for_followers(2)[0]
    # told of one follower only: its REDIRECT names the leader and every member's ingress endpoint
    client = make_client("redirected", shared_cluster.ingress_endpoints(only=[follower.member_id]))
    assert client.cluster.leader_member_id == shared_cluster.leader().member_id != follower.member_id
    seq = client.send("add", add_value(0))
    client.answer(seq)
    client.run_while(lambda: shared_cluster.wait_for_same_state(predicate=lambda s: "redirected:0" in s["applied"]))


def test_a_session_without_keep_alives_times_out_on_every_member(shared_cluster: TestCluster, make_client):
    quiet = make_client("quiet", shared_cluster.ingress_endpoints())
    chatty = make_client("chatty", shared_cluster.ingress_endpoints())
    quiet.call("add", add_value(0))
    session_id = str(quiet.session_id)
    # the quiet client neither sends nor polls from now on; the chatty one keeps its session alive meanwhile
    chatty.wait(lambda: all((m.service_state() or {}).get("closed", {}).get(session_id) for m in shared_cluster.members),
                timeout=60, what="the quiet session closed on every member")
    state = chatty.run_while(lambda: shared_cluster.wait_for_same_state(predicate=lambda s: session_id in s["closed"]))
    assert state["closed"][session_id] == "TIMEOUT"
    assert str(chatty.session_id) not in state["closed"]
    chatty.call("add", add_value(1))                                      # the other session goes on
    # the quiet client hears of it when it polls again: the cluster closed its session
    quiet.wait(lambda: quiet.cluster.is_closed, timeout=30, what="the quiet client closed")


def test_sessions_closed_by_the_service_and_by_the_client_are_closed_on_every_member(shared_cluster: TestCluster,
                                                                                       make_client):
    closed_by_service = make_client("closed-by-service", shared_cluster.ingress_endpoints())
    closed_by_client = make_client("closed-by-client", shared_cluster.ingress_endpoints())
    closed_by_service.call("add", add_value(0))
    closed_by_client.call("add", add_value(0))
    closed_by_service.send("close")                                     # the service closes the session
    closed_by_service.wait(lambda: closed_by_service.cluster.is_closed, 30, "the session closed by the service")
    assert "SERVICE_ACTION" in str(closed_by_service.cluster.close_error)
    closed_by_client.close()
    by_service, by_client = str(closed_by_service.session_id), str(closed_by_client.session_id)
    state = shared_cluster.wait_for_same_state(predicate=lambda s: by_service in s["closed"] and by_client in s["closed"])
    assert (state["closed"][by_service], state["closed"][by_client]) == ("SERVICE_ACTION", "CLIENT_ACTION")
