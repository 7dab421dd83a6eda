# SPDX-License-Identifier: Apache-2.0
"""perf/compare.py: a ratio slower than the baseline by more than the measured noise (and the minimum change) is a
regression and the command exits 1; within the noise, or faster, it passes."""
import json
import sys

import pyperf
import pytest

from tests.conftest import PROJECT_ROOT

sys.path.insert(0, str(PROJECT_ROOT / "perf"))
import compare  # noqa: E402


def _suite(path, values):
    runs = []
    for name, samples in values.items():
        run = pyperf.Run(samples, warmups=None, collect_metadata=False, metadata={"name": name, "loops": 1})
        runs.append(pyperf.Benchmark([run]))
    pyperf.BenchmarkSuite(runs).dump(str(path))
    return str(path)


def test_spread_is_robust_and_relative():
    median, noise = compare._spread([10.0, 10.0, 10.0, 10.0, 10.0, 1000.0])
    assert median == 10.0 and noise == 0.0
    median, noise = compare._spread([9.0, 10.0, 11.0, 10.0])
    assert median == 10.0 and 0.0 < noise < 0.2


def test_a_ratio_beyond_the_noise_fails_and_within_it_passes(tmp_path):
    quiet_ref = [10e-6, 10.1e-6, 9.9e-6, 10e-6, 10.05e-6, 9.95e-6]
    base = _suite(tmp_path / "base.json", {"ref_udp_rtt": quiet_ref, "ipc_rtt": [x * 2 for x in quiet_ref]})
    baseline = tmp_path / "baseline.json"
    assert compare.main([base, "--baseline", str(baseline), "--update"]) == 0
    assert json.loads(baseline.read_text())["ratios"]["ipc_rtt"]["ratio"] == pytest.approx(2.0)
    same = _suite(tmp_path / "same.json", {"ref_udp_rtt": [x * 1.5 for x in quiet_ref],       # a slower machine
                                           "ipc_rtt": [x * 3.09 for x in quiet_ref]})
    assert compare.main([same, "--baseline", str(baseline)]) == 0
    slower = _suite(tmp_path / "slower.json", {"ref_udp_rtt": quiet_ref, "ipc_rtt": [x * 2.6 for x in quiet_ref]})
    assert compare.main([slower, "--baseline", str(baseline)]) == 1
    faster = _suite(tmp_path / "faster.json", {"ref_udp_rtt": quiet_ref, "ipc_rtt": [x * 1.2 for x in quiet_ref]})
    assert compare.main([faster, "--baseline", str(baseline)]) == 0


def test_noisy_runs_widen_what_is_allowed():
    base = {"ipc_rtt": {"ratio": 2.0, "noise": 0.01}}
    assert compare.compare({"ipc_rtt": {"ratio": 2.6, "noise": 0.01}}, base, 3.0, 0.10) == ["ipc_rtt"]
    assert compare.compare({"ipc_rtt": {"ratio": 2.6, "noise": 0.5}}, base, 3.0, 0.10) == []
