# SPDX-License-Identifier: Apache-2.0
"""The short fault campaign of every test run: a 3-member cluster of our members under a seeded ``--quick`` schedule
that has every fault kind once (kill -9 and restart, SIGSTOP/SIGCONT, receive loss, reordering and duplication, a
clock jump, a slow disk, snapshots and, when this machine lets the campaign make namespaces, a partition and a full
disk), each next fault once a leader is back, with sync and aio clients, then every check of campaign.py. A failure
prints the seed, the violations and where the run's files were kept; the long run is
``python -m tests.cluster.faults.campaign`` (see docs/cluster-faults.md)."""
from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import pytest

from tests.cluster.faults import harness, schedule
from tests.procs import client_env

pytestmark = pytest.mark.slow

SEEDS = (11,)
DURATION_S = 20


def run_campaign(*args: str, expect_violations: bool = False) -> dict:
    """Run a campaign in a new directory under /dev/shm (its drivers' files live there), removed when it passed and
    kept for inspection when it did not."""
    out = pathlib.Path(tempfile.mkdtemp(prefix="aeron-faults-", dir="/dev/shm"))
    env = client_env()
    if os.environ.get("AERON_JAVA_CP"):
        env["AERON_JAVA_CP"] = os.environ["AERON_JAVA_CP"]
    done = subprocess.run([sys.executable, "-m", "tests.cluster.faults.campaign", "--dir", str(out), "--keep", *args],
                          cwd=str(harness.REPO), env=env, capture_output=True, text=True, timeout=900, check=False)
    summary_path = out / "summary.json"
    if not summary_path.exists():
        raise AssertionError(f"no summary in {out}:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}")
    summary = json.loads(summary_path.read_text())
    if expect_violations:
        assert done.returncode == 1 and f"FAILED seed {summary['seed']}" in done.stdout, done.stdout[-3000:]
        shutil.rmtree(out, ignore_errors=True)
        return summary
    assert done.returncode == 0, (f"campaign failed (seed {summary.get('seed')}), files kept in {out}:\n"
                                  f"{json.dumps(summary.get('violations'), indent=1)[:6000]}\n{done.stdout[-3000:]}")
    shutil.rmtree(out, ignore_errors=True)
    return summary


@pytest.mark.timeout(1000)
@pytest.mark.parametrize("threading", [pytest.param(("--threads",), id="threads"), pytest.param((), id="one-thread")])
@pytest.mark.parametrize("seed", SEEDS)
def test_short_campaign_finds_no_violation(seed, threading):
    # with one thread per member, the slow disk's forces (the archive's) hold up the consensus module and the driver
    # too: its heartbeats and elections must still go out, each timer bounding the thread's park
    summary = run_campaign("--seed", str(seed), "--duration", str(DURATION_S), "--clients", "4", "--quick", *threading)
    assert summary["violation_count"] == 0
    assert summary["ok"] > 0 and summary["undecided_keys"] == []
    # every kind this machine allows was injected (a snapshot request may find no leader to take it)
    expected = set(schedule.ALL_KINDS) - set(summary["kinds_left_out"]) - {"snapshot", "partition"}
    assert expected <= set(summary["faults_injected"]), summary["faults_injected"]
    if "partition" not in summary["kinds_left_out"]:
        assert any(kind.startswith("partition-") for kind in summary["faults_injected"])
    if "slowdisk" not in summary["kinds_left_out"]:
        assert summary["slow_disk_forces_delayed"] > 0


@pytest.mark.timeout(1000)
def test_mixed_campaign_with_a_java_member():
    if not os.environ.get("AERON_JAVA_CP"):
        pytest.skip("AERON_JAVA_CP is not set: the official Java ClusteredMediaDriver is not available")
    # seed 14 aims the loss and the slow disk at member 0, the Java one (its debug receive endpoint, the preloaded
    # library under the JVM's forces)
    summary = run_campaign("--seed", "14", "--duration", str(DURATION_S), "--clients", "2", "--java", "--quick")
    assert summary["violation_count"] == 0 and summary["java_member"] is True
    assert {"loss", "slowdisk"} <= set(summary["java_member_faults"])


@pytest.mark.timeout(1000)
def test_the_checks_catch_a_planted_bug():
    """Every 7th append answered but not kept, the same on every member: the members agree with each other, only
    the history shows it (and the campaign says so, with its seed)."""
    summary = run_campaign("--seed", "3", "--duration", "8", "--clients", "2", "--kinds", "snapshot",
                           "--flawed-service", expect_violations=True)
    violations = summary["violations"]
    assert violations["linearizability"] and "not linearizable" in violations["linearizability"][0]
    assert any("missing from the final state" in v for v in violations["final_state"])
    assert "logs_and_leaders" not in violations         # the members agree: the bug is in what they agree on
