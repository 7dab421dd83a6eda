# SPDX-License-Identifier: Apache-2.0
"""The fault campaign's linearizability checker on histories known to be linearizable and known not to be, with
unknown outcomes, and the window it reports for a violation."""
from __future__ import annotations

import random

import pytest

from tests.cluster.faults.history import (
    FAIL,
    INFINITY,
    OK,
    UNKNOWN,
    ModelError,
    Operation,
    apply,
    initial_state,
    load,
    number,
    save,
)
from tests.cluster.faults.linearizability import _search, check


def op(process, name, key, value, call, ret, output=None, status=OK):
    return Operation(str(process), name, key, value, float(call), INFINITY if ret is None else float(ret), status,
                     output)


def verdict(*ops):
    return check(number(ops)).linearizable


def test_sequential_history_of_each_kind_is_linearizable():
    assert verdict(op(0, "append", "l0", 1, 0, 1, 1), op(0, "append", "l0", 2, 2, 3, 2),
                   op(0, "read", "l0", None, 4, 5, (1, 2)),
                   op(0, "add", "c0", 5, 0, 1, 5), op(0, "add", "c0", -2, 2, 3, 3), op(0, "read", "c0", None, 4, 5, 3),
                   op(0, "write", "r0", 7, 0, 1), op(0, "cas", "r0", (7, 8), 2, 3, True),
                   op(0, "cas", "r0", (7, 9), 4, 5, False), op(0, "read", "r0", None, 6, 7, 8)) is True


def test_concurrent_appends_in_either_order():
    # both appends overlap: the read says 2 went first, which the overlap allows
    assert verdict(op(0, "append", "l0", 1, 0, 10, 2), op(1, "append", "l0", 2, 1, 9, 1),
                   op(2, "read", "l0", None, 11, 12, (2, 1))) is True


def test_real_time_order_is_enforced():
    # append 1 returned before append 2 was called: a read cannot see 2 before 1
    assert verdict(op(0, "append", "l0", 1, 0, 1, 1), op(1, "append", "l0", 2, 2, 3, 2),
                   op(2, "read", "l0", None, 4, 5, (2, 1))) is False


def test_stale_read_after_a_completed_write_is_not_linearizable():
    assert verdict(op(0, "write", "r0", 1, 0, 1), op(1, "write", "r0", 2, 2, 3),
                   op(2, "read", "r0", None, 4, 5, 1)) is False


def test_read_concurrent_with_a_write_may_see_either():
    for seen in (1, 2):
        assert verdict(op(0, "write", "r0", 1, 0, 1), op(1, "write", "r0", 2, 2, 6),
                       op(2, "read", "r0", None, 3, 4, seen)) is True


def test_lost_acknowledged_append_is_not_linearizable():
    assert verdict(op(0, "append", "l0", 1, 0, 1, 1), op(0, "append", "l0", 2, 2, 3, 2),
                   op(1, "read", "l0", None, 4, 5, (2,))) is False


def test_duplicated_append_is_not_linearizable():
    assert verdict(op(0, "append", "l0", 1, 0, 1, 1), op(1, "read", "l0", None, 2, 3, (1, 1))) is False


def test_counter_answers_must_agree():
    assert verdict(op(0, "add", "c0", 1, 0, 1, 1), op(1, "add", "c0", 1, 0, 1, 1)) is False
    assert verdict(op(0, "add", "c0", 1, 0, 2, 1), op(1, "add", "c0", 1, 1, 3, 2)) is True


def test_unknown_outcome_may_have_happened():
    assert verdict(op(0, "append", "l0", 1, 0, None, status=UNKNOWN),
                   op(1, "read", "l0", None, 5, 6, (1,))) is True


def test_unknown_outcome_may_not_have_happened():
    assert verdict(op(0, "append", "l0", 1, 0, None, status=UNKNOWN),
                   op(1, "read", "l0", None, 5, 6, ())) is True


def test_unknown_outcome_happens_at_most_once():
    assert verdict(op(0, "append", "l0", 1, 0, None, status=UNKNOWN),
                   op(1, "read", "l0", None, 5, 6, (1, 1))) is False


def test_unknown_outcome_cannot_take_effect_before_its_call():
    assert verdict(op(1, "read", "l0", None, 0, 1, (1,)),
                   op(0, "append", "l0", 1, 2, None, status=UNKNOWN)) is False


def test_unknown_outcome_seen_then_unseen_is_not_linearizable():
    assert verdict(op(0, "write", "r0", 1, 0, None, status=UNKNOWN), op(1, "read", "r0", None, 2, 3, 1),
                   op(1, "read", "r0", None, 4, 5, None)) is False


def test_failed_operations_did_not_happen():
    assert verdict(op(0, "append", "l0", 1, 0, 1, status=FAIL), op(1, "read", "l0", None, 2, 3, ())) is True
    assert verdict(op(0, "append", "l0", 1, 0, 1, status=FAIL), op(1, "read", "l0", None, 2, 3, (1,))) is False


def test_keys_are_checked_alone_and_the_violation_names_its_key():
    result = check(number([op(0, "append", "l0", 1, 0, 1, 1), op(0, "write", "r1", 3, 0, 1),
                           op(1, "read", "r1", None, 2, 3, 4)]))
    assert result.linearizable is False
    assert [r.key for r in result.violations] == ["r1"]
    assert result.keys["l0"].linearizable is True


def test_unknown_key_kind_and_operation_are_model_errors():
    with pytest.raises(ModelError):
        initial_state("x0")
    with pytest.raises(ModelError):
        apply("c0", 0, "append", 1)


def test_violation_window_starts_after_the_longest_prefix_and_ends_where_it_breaks():
    ops = [op(0, "append", "l0", i, 2 * i, 2 * i + 1, i + 1) for i in range(20)]
    ops.append(op(1, "read", "l0", None, 40, 41, tuple(range(20))))
    ops.append(op(1, "read", "l0", None, 42, 43, tuple(range(19))))        # the 20th append vanished
    ops += [op(0, "append", "l0", 100 + i, 50 + i, 50.5 + i, 21 + i) for i in range(10)]
    result = check(number(ops))
    [violation] = result.violations
    assert violation.fail_time == 43
    assert len(violation.longest) == 21 and violation.state_after_longest == tuple(range(20))
    assert [o.index for o in violation.window] == [21]
    assert "not linearizable" in violation.describe()
    # the window cannot follow that prefix: checked again from the state it leaves
    assert _search("l0", violation.window, violation.state_after_longest, 10_000)[0] is False


def random_linearizable_history(rng, clients=4, ops_per_client=12, unknown_rate=0.15):
    """A history made by executing ops atomically at random instants inside their intervals."""
    events = []
    state = {k: initial_state(k) for k in ("l0", "c0", "r0")}
    t = 0.0
    running = {}
    history = []
    left = {c: ops_per_client for c in range(clients)}
    while left or running:
        t += rng.random()
        choice = rng.random()
        idle = [c for c in left if c not in running]
        if idle and choice < 0.5:
            c = rng.choice(idle)
            key = rng.choice(("l0", "c0", "r0"))
            name = {"l": rng.choice(("append", "read")), "c": rng.choice(("add", "read")),
                    "r": rng.choice(("write", "cas", "read"))}[key[0]]
            value = {"append": rng.randrange(1000), "add": rng.randrange(1, 5), "write": rng.randrange(3),
                     "cas": (rng.randrange(3), rng.randrange(3)), "read": None}[name]
            o = op(c, name, key, value, t, None)
            running[c] = [o, False]
            history.append(o)
            left[c] -= 1
            if not left[c]:
                del left[c]
        elif running:
            c = rng.choice(list(running))
            o, applied = running[c]
            if not applied:
                state[o.key], o.output = apply(o.key, state[o.key], o.op, o.value)
                running[c][1] = True
            elif rng.random() < unknown_rate:
                o.status, o.output, o.ret = UNKNOWN, None, INFINITY
                del running[c]
            else:
                o.ret, o.status = t, OK
                del running[c]
        events.append(t)
    return history


@pytest.mark.parametrize("seed", range(40))
def test_random_linearizable_histories_pass(seed):
    rng = random.Random(seed)
    assert check(number(random_linearizable_history(rng))).linearizable is True


@pytest.mark.parametrize("seed", range(40))
def test_random_histories_with_one_answer_corrupted_fail(seed):
    rng = random.Random(1000 + seed)
    history = random_linearizable_history(rng, unknown_rate=0.0)
    # one answer made impossible: a list read with an element nobody appended, a counter beyond every sum, a register
    # read of a value nobody wrote
    victim = rng.choice([o for o in history if o.status == OK and (o.op in ("read", "add"))])
    if victim.key == "l0":
        victim.output = tuple(victim.output) + (-1,)
    elif victim.key == "c0":
        victim.output += 10_000
    else:
        victim.output = 99
    assert check(number(history)).linearizable is False


def test_history_round_trips_through_json(tmp_path):
    ops = number([op(0, "cas", "r0", (1, 2), 0, 1, False), op(1, "append", "l0", 3, 0, None, status=UNKNOWN),
                  op(1, "read", "l0", None, 2, 3, (3,))])
    save(ops, tmp_path / "h.jsonl")
    loaded = load(tmp_path / "h.jsonl")
    assert [(o.op, o.value, o.ret, o.output) for o in loaded] == [(o.op, o.value, o.ret, o.output) for o in ops]
    assert check(loaded).linearizable is True


def test_a_search_out_of_budget_is_undecided_not_a_verdict():
    ops = number([op(c, "append", "l0", c, 0, 10, None, status=UNKNOWN) for c in range(6)] +
                 [op(9, "read", "l0", None, 20, 21, (5, 4, 3, 2, 1, 0))])
    result = check(ops, budget=3)
    assert result.linearizable is None and result.keys["l0"].linearizable is None
    assert check(ops).linearizable is True
