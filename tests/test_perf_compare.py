# SPDX-License-Identifier: Apache-2.0
"""perf/compare.py: the change against its base commit on one machine, values paired. A median ratio beyond the noise
measured across the pairs (and the minimum change) is a regression; within it, or faster, it passes; the
references are never judged; the base commit is checked out and built beside, reusing what it shares."""
import subprocess
import sys

import pytest

from tests.conftest import PROJECT_ROOT

sys.path.insert(0, str(PROJECT_ROOT / "perf"))
import compare  # noqa: E402


def _rounds(base_by_name, change_by_name, jitter=(1.0, 1.01, 0.99, 1.0, 1.02, 0.98)):
    """Rounds of {"base", "change"} paired values; each round's machine is ``j`` times slower for both sides alike."""
    return [{"base": {n: [v * j] * 3 for n, v in base_by_name.items()},
             "change": {n: [v * j] * 3 for n, v in change_by_name.items()}} for j in jitter]


def test_same_code_passes_on_a_machine_that_drifts():
    rounds = _rounds({"ipc_rtt": 2e-6, "ref_udp_rtt": 20e-6}, {"ipc_rtt": 2e-6, "ref_udp_rtt": 20e-6},
                     jitter=(1.0, 3.0, 0.5, 1.2, 8.0, 1.0))        # the load swings, both sides alike
    result = compare.verdicts(rounds, 3.0, 0.10)
    assert result["ipc_rtt"]["verdict"] == "ok" and result["ipc_rtt"]["ratio"] == pytest.approx(1.0)
    assert result["ref_udp_rtt"]["verdict"] == "reference"


def test_a_slower_change_fails_and_a_faster_one_passes():
    rounds = _rounds({"ipc_rtt": 2e-6, "aio_rtt": 5e-6}, {"ipc_rtt": 2.6e-6, "aio_rtt": 3e-6})
    result = compare.verdicts(rounds, 3.0, 0.10)
    assert result["ipc_rtt"]["verdict"] == "REGRESSION" and result["ipc_rtt"]["ratio"] == pytest.approx(1.3)
    assert result["aio_rtt"]["verdict"] == "faster"
    assert compare.report(result) == ["ipc_rtt"]


def test_noisy_rounds_widen_what_is_allowed():
    # the change's ratio swings from pair to pair: a 30 % median is within 3 sigmas of that noise
    base = [{"base": {"udp_rtt": [1.0]}, "change": {"udp_rtt": [r]}} for r in (0.6, 2.5, 1.3, 0.8, 2.2, 1.3)]
    result = compare.verdicts(base, 3.0, 0.10)
    assert result["udp_rtt"]["ratio"] == pytest.approx(1.3) and result["udp_rtt"]["allowed"] > 0.3
    assert result["udp_rtt"]["verdict"] == "ok"


def test_too_few_pairs_never_fail():
    rounds = [{"base": {"ipc_rtt": [2e-6]}, "change": {"ipc_rtt": [4e-6]}}] * 3
    assert compare.verdicts(rounds, 3.0, 0.10)["ipc_rtt"]["verdict"] == "ok"


def _git(cwd, *args):
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True).stdout.strip()


def test_the_base_build_reuses_equal_sources_and_rebuilds_the_rest(tmp_path, monkeypatch):
    # a checkout with a built module and its source, and a base worktree whose copy of that source is older
    checkout = tmp_path / "checkout"
    (checkout / "aeron" / "_core").mkdir(parents=True)
    for name in ("same", "changed"):
        (checkout / "aeron" / "_core" / f"{name}.pyx").write_text(f"# {name}\n")
        (checkout / "aeron" / "_core" / f"{name}.c").write_text("/* generated */\n")
        (checkout / "aeron" / "_core" / f"{name}.so").write_bytes(b"\x7fELF")
    _git(tmp_path, "init", "-q", str(checkout))
    _git(checkout, "add", "aeron/_core/same.pyx", "aeron/_core/changed.pyx")
    _git(checkout, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    base = _git(checkout, "rev-parse", "HEAD")
    (checkout / "aeron" / "_core" / "changed.pyx").write_text("# changed since the base\n")
    tree = tmp_path / "base"
    _git(checkout, "worktree", "add", "-q", "--detach", str(tree), base)
    monkeypatch.setattr(compare, "ROOT", checkout)
    assert not compare.checkout_is_base(base)
    assert compare._seed_build(tree) == 1
    same, changed = tree / "aeron" / "_core" / "same.pyx", tree / "aeron" / "_core" / "changed.pyx"
    assert same.stat().st_mtime_ns == (checkout / "aeron" / "_core" / "same.pyx").stat().st_mtime_ns
    assert (tree / "aeron" / "_core" / "same.so").read_bytes() == b"\x7fELF"
    # the differing source is newer than the artefacts copied beside it: the build regenerates and recompiles it
    assert changed.stat().st_mtime_ns > (tree / "aeron" / "_core" / "changed.c").stat().st_mtime_ns
    _git(checkout, "checkout", "-q", "--", "aeron/_core/changed.pyx")
    assert compare.checkout_is_base(base)
