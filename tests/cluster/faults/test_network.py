# SPDX-License-Identifier: Apache-2.0
"""The campaign's partitions really partition: inside a network namespace of its own (skips where ``unshare -n`` is
not permitted), a datagram between two member namespaces goes through, is dropped while they are cut, and goes
through again once healed."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.cluster.faults import harness
from tests.procs import client_env


def test_a_cut_drops_datagrams_and_healing_restores_them():
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    try:
        permitted = subprocess.run(["unshare", "-n", "true"], capture_output=True, timeout=30,
                                   check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        permitted = False
    if not permitted:
        pytest.skip("unshare -n is not permitted here")
    env = dict(client_env(), FAULTS_NETNS="1")
    done = subprocess.run(["unshare", "-n", sys.executable, "-m", "tests.cluster.faults.netcheck"], env=env,
                          cwd=str(harness.REPO), capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().splitlines()[-1] == "before=1 cut=0 healed=1"
