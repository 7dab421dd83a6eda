# SPDX-License-Identifier: Apache-2.0
"""perf/bare_wakeup.c, the floor of the wake-up design that perf/bench_wakeup.py measures ours against: it builds,
completes a ping-pong parking at once and yielding first, and refuses bad arguments."""
import json
import pathlib
import shutil
import subprocess

import pytest

SOURCE = pathlib.Path(__file__).resolve().parent.parent / "perf" / "bare_wakeup.c"
COMPILER = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")


@pytest.fixture(scope="module")
def bare(tmp_path_factory):
    if COMPILER is None:
        pytest.skip("no C compiler")
    exe = tmp_path_factory.mktemp("bare") / "bare_wakeup"
    subprocess.run([COMPILER, "-O2", "-Wall", "-Werror", "-o", str(exe), str(SOURCE)], check=True)
    return str(exe)


@pytest.mark.parametrize("yield_ns", [0, 100_000])
def test_a_ping_pong_completes_and_reports_its_percentiles(bare, yield_ns):
    out = subprocess.run([bare, "300", "50", "0", "0", "0", str(yield_ns)], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    values = json.loads(out)
    assert list(values) == ["p10", "p50", "p90", "p99"]
    assert 0 < values["p10"] <= values["p50"] <= values["p90"] <= values["p99"]


@pytest.mark.parametrize("args", [[], ["10"], ["10", "1", "0", "0", "-1"], ["10", "1", "0", "0", "0", "-5"]])
def test_bad_arguments_are_refused(bare, args):
    result = subprocess.run([bare, *args], capture_output=True, text=True, timeout=30)
    assert result.returncode == 2 and result.stderr
