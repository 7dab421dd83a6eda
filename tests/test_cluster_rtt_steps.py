# SPDX-License-Identifier: Apache-2.0
"""perf/cluster_rtt_steps.py: a round trip's steps read back from the cluster's event log, the leader found by its
ingress poll, each step the first after the one before."""
import sys

from tests.conftest import PROJECT_ROOT

sys.path.insert(0, str(PROJECT_ROOT / "perf"))
import cluster_rtt_steps as steps  # noqa: E402


def _log(*events):
    return [f"{ns} 4{i} {who} {kind} {detail}".rstrip() + "\n" for i, (ns, who, kind, detail) in enumerate(events)]


def _trip(t0, leader=1, follower=0):
    return [(t0, "client", "PING_OFFERED", "0"),
            (t0 + 1_000, f"member-{follower}", "LOG_POLLED", "1"),          # a follower's step of the last message
            (t0 + 100_000, f"member-{leader}", "INGRESS_POLLED", "1"),
            (t0 + 150_000, f"member-{follower}", "APPEND_POSITION_SENT", "96"),
            (t0 + 190_000, f"member-{leader}", "APPEND_POSITION_RECEIVED", f"{follower} 96"),
            (t0 + 200_000, f"member-{leader}", "COMMIT", "96"),
            (t0 + 210_000, f"member-{leader}", "SERVICES_WOKEN", ""),
            (t0 + 220_000, f"service-{follower}", "LOG_POLLED", "1"),       # not the leader's service
            (t0 + 260_000, f"service-{leader}", "LOG_POLLED", "1"),
            (t0 + 400_000, "client", "ECHO_RECEIVED", "0")]


def test_each_step_is_timed_from_the_one_before_and_the_leader_is_the_member_that_polled_the_ingress():
    events = steps.read_events(["a line that is not an event\n", *_log(*_trip(10_000_000), *_trip(20_000_000, 2, 1))])
    trips = steps.round_trips(events)
    assert len(trips) == 2
    assert steps.step_times(trips[0]) == [10_000_000 + d for d in
                                          (0, 100_000, 150_000, 190_000, 200_000, 210_000, 260_000, 400_000)]
    text = steps.report(events)
    assert text.startswith("2 round trips")
    assert "log polled (leader-service)" in text and "      50       50       50" in text   # 210 -> 260 µs
    assert "round trip" in text and "     400      400      400" in text


def test_a_step_missing_is_left_out_and_the_next_is_timed_from_the_last_one_seen():
    trip = [e for e in _trip(0) if e[2] != "SERVICES_WOKEN"]          # services woken at once (threads mode)
    events = steps.read_events(_log(*trip))
    assert steps.step_times(steps.round_trips(events)[0])[5] is None
    lines = {line.split("(")[0].strip(): line.split(")", 1)[1].split() for line in steps.report(events).splitlines()
             if line.startswith("  ") and "(" in line}
    assert lines["services woken"] == ["-", "in", "0", "of", "1"]
    assert lines["log polled"] == ["60", "60", "60", "in", "1", "of", "1"]             # from the commit


def test_a_log_without_steps_says_so():
    assert "no round trips" in steps.report(steps.read_events(_log((1, "member-0", "ELECTION_STATE_CHANGE", "x"))))
