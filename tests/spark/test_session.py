# SPDX-License-Identifier: Apache-2.0
"""``aeron.spark.session`` / ``configure``: a session started from a venv's python runs its Python workers on that
python with nothing set by the user; the README's Spark example run as a user runs it (a subprocess of the venv's
python with a clean environment) reads a recording."""
import os
import subprocess
import sys
import warnings

import pytest

pytest.importorskip("pyspark", reason="the spark extra is not installed")

from pyspark.sql import SparkSession  # noqa: E402

import aeron.spark  # noqa: E402
from aeron.spark.session import PYTHON_VARIABLES  # noqa: E402
from tests.spark.conftest import JAVA, user_env  # noqa: E402
from tests.spark.recordings import record_trades  # noqa: E402
from tests.test_readme import snippet_after  # noqa: E402


@pytest.fixture
def no_python_variables(monkeypatch):
    for name in PYTHON_VARIABLES + ("MASTER", "PYSPARK_SUBMIT_ARGS"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def _conf(builder: SparkSession.Builder) -> dict[str, str]:
    return {k: str(v) for k, v in builder._options.items() if k.startswith("spark.pyspark.")}


@pytest.mark.parametrize("master", [None, "local", "local[2]", "local[*]", "local[2,3]", "local-cluster[2,1,1024]"])
def test_a_local_master_gets_this_interpreter(no_python_variables, master):
    builder = SparkSession.Builder()
    if master is not None:
        builder = builder.master(master)
    assert aeron.spark.configure(builder) is builder
    assert [os.environ[name] for name in PYTHON_VARIABLES] == [sys.executable] * 2
    assert _conf(builder) == {"spark.pyspark.python": sys.executable, "spark.pyspark.driver.python": sys.executable}


def test_a_python_the_user_set_stays(no_python_variables):
    no_python_variables.setenv("PYSPARK_PYTHON", "/opt/py/bin/python")
    no_python_variables.setenv("PYSPARK_DRIVER_PYTHON", "")          # empty counts as unset
    builder = SparkSession.Builder()
    aeron.spark.configure(builder.master("local[1]"))
    assert os.environ["PYSPARK_PYTHON"] == "/opt/py/bin/python"
    assert os.environ["PYSPARK_DRIVER_PYTHON"] == sys.executable
    aeron.spark.configure(builder, python="/srv/venv/bin/python")   # given: it wins
    assert [os.environ[name] for name in PYTHON_VARIABLES] == ["/srv/venv/bin/python"] * 2


@pytest.mark.parametrize("master", ["yarn", "spark://head:7077", "k8s://https://api:6443", "localhost"])
def test_a_cluster_master_is_left_alone_and_warned_about(no_python_variables, master):
    builder = SparkSession.Builder()
    with pytest.warns(RuntimeWarning, match="PYSPARK_PYTHON.*aeron-py\\[spark\\] installed on every executor"):
        aeron.spark.configure(builder.master(master))
    assert not any(name in os.environ for name in PYTHON_VARIABLES)
    assert _conf(builder) == {}
    no_python_variables.setenv("PYSPARK_PYTHON", "/opt/py/bin/python")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        aeron.spark.configure(builder)                                # the user said which: no warning
    aeron.spark.configure(builder, python="/opt/py/bin/python")
    assert _conf(builder)["spark.pyspark.python"] == "/opt/py/bin/python"


def _expected_bars(trades: list[dict]) -> list[str]:
    want: dict[tuple[str, int], tuple[int, int, int]] = {}
    for t in trades:
        key = (t["sym"], t["ts"] // 60_000)
        n, v, pv = want.get(key, (0, 0, 0))
        want[key] = (n + 1, v + t["qty"], pv + t["px"] * t["qty"])
    return [f"{s} {m} {n} {v} {round(pv / v, 4)}" for (s, m), (n, v, pv) in sorted(want.items())]


@pytest.mark.slow
@pytest.mark.timeout(600)    # a Spark session starts in 20-60 s on a loaded machine, the JVM and workers fresh
def test_readme_example_runs_from_the_venv_with_nothing_set(tmp_path):
    """The README's Spark example, as a file run by this venv's python by path, PYSPARK_PYTHON unset and the venv's
    bin not on PATH (where ``python3`` is the system's, without aeron): its workers read the recording."""
    if not JAVA:
        pytest.skip("no java on PATH: PySpark needs a Java 17+ runtime to start Spark")
    archive = tmp_path / "archive"
    trades = record_trades(archive)          # and one message on stream 1002: not in the aggregates
    code = snippet_after("## Spark")
    line = 'ARCHIVE_DIR = "/var/lib/aeron-archive"'
    assert code.count(line) == 1
    script = tmp_path / "bars.py"
    script.write_text(code.replace(line, f"ARCHIVE_DIR = {str(archive)!r}"))
    env = user_env()          # aeron is importable from this venv itself (installed, or ./run.sh's .pth)
    assert "PYSPARK_PYTHON" not in env and "VIRTUAL_ENV" not in env
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=540)
    assert result.returncode == 0, result.stdout + result.stderr[-5000:]
    assert result.stdout.splitlines() == _expected_bars(trades) + ["60 trades"], result.stderr[-5000:]


@pytest.mark.parametrize(("variable", "value"), [("MASTER", "yarn"),
                                                 ("PYSPARK_SUBMIT_ARGS", "--master yarn pyspark-shell"),
                                                 ("PYSPARK_SUBMIT_ARGS", "--master=spark://h:7077 pyspark-shell")])
def test_the_master_spark_submit_would_take(no_python_variables, variable, value):
    no_python_variables.setenv(variable, value)
    with pytest.warns(RuntimeWarning, match="PYSPARK_PYTHON"):
        aeron.spark.configure(SparkSession.Builder())
    assert "PYSPARK_PYTHON" not in os.environ
    aeron.spark.configure(SparkSession.Builder().master("local[1]"))     # the builder's own master comes first
    assert os.environ["PYSPARK_PYTHON"] == sys.executable
