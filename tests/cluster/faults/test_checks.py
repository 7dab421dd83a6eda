# SPDX-License-Identifier: Apache-2.0
"""The campaign's schedule (seeded, reproducible) and its checks besides linearizability, on made-up histories and
applied files."""
from __future__ import annotations

import json
import random

import pytest

from tests.cluster.faults import checks, linearizability, schedule
from tests.cluster.faults.client import Generator
from tests.cluster.faults.history import FAIL, OK, UNKNOWN


def test_same_seed_same_schedule_and_different_seeds_differ():
    first = schedule.generate(7, 3, 120.0)
    assert [str(f) for f in first] == [str(f) for f in schedule.generate(7, 3, 120.0)]
    assert [str(f) for f in first] != [str(f) for f in schedule.generate(8, 3, 120.0)]
    assert {f.kind for f in first} <= set(schedule.ALL_KINDS)
    assert all(f.at < 120.0 for f in first)
    assert all(f.hold > 3.0 for f in first if f.kind == "pause")      # longer than the leader heartbeat timeout


def test_schedule_keeps_to_the_kinds_given():
    faults = schedule.generate(3, 5, 300.0, ("kill", "snapshot"))
    assert {f.kind for f in faults} == {"kill", "snapshot"}
    with pytest.raises(ValueError):
        schedule.generate(3, 5, 300.0, ("meteor",))


@pytest.mark.parametrize("seed", range(10))
def test_a_quick_cover_has_every_kind_first_with_short_holds(seed):
    faults = schedule.generate(seed, 3, 20.0, cover=True, quick=True)
    kinds = [f.kind for f in faults]
    receive = "loss+reorder+duplicate"
    assert sorted(kinds[:len(schedule.ALL_KINDS) - 2]) == sorted(
        [k for k in schedule.ALL_KINDS if k not in schedule.RECEIVE_KINDS] + [receive])
    combined = faults[kinds.index(receive)]
    assert set(combined.detail) == set(schedule.RECEIVE_KINDS)                       # the three chained
    assert "depth" in combined.detail["reorder"] and "depth" not in combined.detail["loss"]
    assert all(f.hold > 3.0 for f in faults if f.kind == "pause")
    assert all(f.hold <= 4.5 for f in faults)
    # without merging (a Java member), each receive kind on its own; a short cover runs past the duration
    apart = [f.kind for f in schedule.generate(seed, 3, 5.0, cover=True, quick=True, merge_receive=False)]
    assert sorted(apart) == sorted(schedule.ALL_KINDS)
    # a long run's receive faults carry one generator each, with its arguments
    for fault in schedule.generate(seed, 3, 600.0):
        if fault.kind in schedule.RECEIVE_KINDS:
            assert list(fault.detail) == [fault.kind] and 0.05 <= fault.detail[fault.kind]["rate"] <= 0.3
        if fault.kind == "slowdisk":
            assert fault.detail["delay_ms"] > 0


@pytest.mark.parametrize("members", [3, 5])
def test_partition_shapes(members):
    rng = random.Random(1)
    isolate = schedule.partition_pairs(members, "isolate", rng, 0)
    assert sorted(isolate) == [(0, m) for m in range(1, members)]
    for seed in range(20):
        split = schedule.partition_pairs(members, "split", random.Random(seed), 1)
        minority = {a for a, _ in split}
        assert 1 in minority and len(minority) <= (members - 1) // 2
        assert len(split) == len(minority) * (members - len(minority))
        bridge = schedule.partition_pairs(members, "bridge", random.Random(seed), 2)
        assert all(2 not in pair for pair in bridge) and bridge
    with pytest.raises(ValueError):
        schedule.partition_pairs(3, "moat", rng, 0)


def test_client_operations_follow_the_seed():
    a, b = Generator("c", 5, 0.0), Generator("c", 5, 0.0)
    assert [a.next(1.0) for _ in range(50)] == [b.next(1.0) for _ in range(50)]
    appends = [v for op, _, v in (Generator("c", 6, 0.0).next(1.0) for _ in range(200)) if op == "append"]
    assert len(appends) == len(set(appends))           # append values unique, so a duplicate shows


def write_history(path, events):
    path.write_text("".join(json.dumps(e) + "\n" for e in events) + '{"ev": "ok", "id"')   # a line cut by a kill


def test_read_history_pairs_invocations_and_completions(tmp_path):
    write_history(tmp_path / "history-a.jsonl", [
        {"ev": "invoke", "id": 0, "process": "a", "op": "append", "key": "l0", "value": "a:1", "t": 1.0},
        {"ev": "ok", "id": 0, "t": 2.0, "out": 1},
        {"ev": "invoke", "id": 1, "process": "a", "op": "cas", "key": "r0", "value": [1, 2], "t": 3.0},
        {"ev": "fail", "id": 1, "t": 4.0},
        {"ev": "invoke", "id": 2, "process": "a", "op": "read", "key": "l0", "value": None, "t": 5.0},
        {"ev": "unknown", "id": 2, "t": 9.0},
        {"ev": "invoke", "id": 3, "process": "a", "op": "read", "key": "l0", "value": None, "t": 10.0}])
    ops = checks.read_history([tmp_path / "history-a.jsonl"])
    assert [(o.ref, o.status) for o in ops] == [("a/0", OK), ("a/1", FAIL), ("a/2", UNKNOWN), ("a/3", UNKNOWN)]
    assert ops[1].value == (1, 2) and ops[0].output == 1


def applied_entry(pos, cid, op="append", key="l0", value="a:1", result=1):
    return {"pos": pos, "cmd": {"i": cid, "o": op, "k": key, "v": value}, "r": result}


def test_same_log_on_every_member_passes_and_a_divergence_is_reported():
    same = {0: [applied_entry(64, "a/0"), {"term": 1, "leader": 0, "pos": 0}],
            1: [applied_entry(64, "a/0"), applied_entry(64, "a/0"), {"term": 1, "leader": 0, "pos": 0}]}
    violations, facts = checks.check_applied(same)
    assert violations == [] and facts["positions_of"]["a/0"] == {64} and facts["terms"] == {1: {0}}
    diverged = {0: [applied_entry(64, "a/0")], 1: [applied_entry(64, "b/0", value="b:1")]}
    violations, _ = checks.check_applied(diverged)
    assert any("log position 64" in v for v in violations)


def test_two_leaders_in_a_term_and_a_command_applied_twice_are_reported():
    violations, _ = checks.check_applied({0: [{"term": 3, "leader": 0, "pos": 0}],
                                          1: [{"term": 3, "leader": 1, "pos": 0}]})
    assert violations == ["leadership term 3 has leaders [0, 1]"]
    violations, _ = checks.check_applied({0: [applied_entry(64, "a/0"), applied_entry(128, "a/0", result=2)]})
    assert violations == ["command a/0 applied at 2 log positions [64, 128]"]


def test_exactly_once(tmp_path):
    write_history(tmp_path / "history-a.jsonl", [
        {"ev": "invoke", "id": 0, "process": "a", "op": "append", "key": "l0", "value": "a:1", "t": 1.0},
        {"ev": "ok", "id": 0, "t": 2.0, "out": 1},
        {"ev": "invoke", "id": 1, "process": "a", "op": "append", "key": "l0", "value": "a:2", "t": 3.0},
        {"ev": "fail", "id": 1, "t": 4.0},
        {"ev": "invoke", "id": 2, "process": "a", "op": "append", "key": "l0", "value": "a:3", "t": 5.0}])
    history = checks.read_history([tmp_path / "history-a.jsonl"])
    assert checks.check_exactly_once(history, {"a/0": {64}, "a/2": {128}}) == []
    assert checks.check_exactly_once(history, {"a/0": {64}}) == []          # an unknown one may be missing
    lost = checks.check_exactly_once(history, {"a/2": {128}})
    assert len(lost) == 1 and "acknowledged" in lost[0] and "applied 0 times" in lost[0]
    ghost = checks.check_exactly_once(history, {"a/0": {64}, "a/1": {96}})
    assert len(ghost) == 1 and "failed" in ghost[0]
    assert checks.check_dumps({0: {"l0": ["a:1", "a:3"]}, 1: {"l0": ["a:1", "a:3"]}}, history) == []
    assert checks.check_dumps({0: {"l0": ["a:1"]}, 1: {"l0": ["a:1", "a:3"]}}, history) == [
        "final state of member 1 differs from member 0's at keys ['l0']"]
    assert checks.check_dumps({0: {"l0": ["a:1", "a:1"]}}, history) == ["l0: 'a:1' appears 2 times"]
    assert checks.check_dumps({0: {"l0": ["a:2", "x"]}}, history) == [
        "l0: 'a:2' in the final state was a failed append", "l0: 'x' in the final state was never appended",
        "l0: acknowledged append 'a:1' missing from the final state"]
    assert checks.check_dumps({}, history) == ["no member wrote its final state"]


def test_unknowns_are_settled_by_what_the_members_applied(tmp_path):
    write_history(tmp_path / "history-a.jsonl", [
        {"ev": "invoke", "id": 0, "process": "a", "op": "add", "key": "c0", "value": 3, "t": 1.0},
        {"ev": "unknown", "id": 0, "t": 9.0},
        {"ev": "invoke", "id": 1, "process": "a", "op": "add", "key": "c0", "value": 5, "t": 10.0},
        {"ev": "unknown", "id": 1, "t": 19.0},
        {"ev": "invoke", "id": 2, "process": "a", "op": "read", "key": "c0", "value": None, "t": 20.0},
        {"ev": "ok", "id": 2, "t": 21.0, "out": 3}])
    history = checks.read_history([tmp_path / "history-a.jsonl"])
    settled, applied, dropped = checks.resolve_unknowns(history, {"a/0": 3})
    assert (applied, dropped) == (1, 1)
    assert [(o.status, o.output) for o in settled] == [(OK, 3), (FAIL, None), (OK, 3)]
    assert settled[0].ret == float("inf")                  # applied, but when is still unknown
    assert linearizability.check(settled).linearizable is True
    # answers that no order gives: both additions first
    settled, _, _ = checks.resolve_unknowns(history, {"a/0": 3, "a/1": 5})
    assert linearizability.check(settled).linearizable is False
