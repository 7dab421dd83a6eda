# SPDX-License-Identifier: Apache-2.0
"""docs/spark.md's examples run as written, as a user runs them: one script per run of the venv's python with a
clean environment (no PYSPARK_PYTHON), each example in a namespace of its own, one Spark session for all (as
``aeron.spark.session()`` returns the running one). ``ARCHIVE_DIR = "..."`` names a directory holding JSON trades
recorded on stream 1001 and one message on stream 1002; ``..._PORT = n`` lines get free ports and ``tempfile``
makes its directories under /dev/shm (tests/test_guides.py). The example under "On a cluster" names a YARN master
and is type-checked (tests/test_typing.py), not run: no cluster here.
"""
import re
import subprocess
import sys

import pytest

pytest.importorskip("pyspark", reason="the spark extra is not installed")

from tests.spark.conftest import JAVA, user_env  # noqa: E402
from tests.spark.recordings import record_trades  # noqa: E402
from tests.spark.test_session import _expected_bars  # noqa: E402
from tests.test_guides import examples, with_free_ports  # noqa: E402

NOT_RUN = {"On a cluster"}
ARCHIVE_DIR_LINE = re.compile(r'^ARCHIVE_DIR = "/var/lib/aeron-archive"', re.M)
SEPARATOR = "-- next example --"


def _pipeline_totals() -> list[str]:
    totals: dict[str, int] = {}
    for i in range(1000):
        sym = ["AB", "CD", "EF"][i % 3]
        totals[sym] = totals.get(sym, 0) + 1 + i % 5
    return [f"{sym} {qty}" for sym, qty in sorted(totals.items())]


def test_the_examples_not_run_are_the_cluster_ones():
    headings = [heading for heading, _ in examples("docs/spark.md")]
    assert headings == ["Starting a session", "Batch and streaming reads", "Partitions and pushdown",
                        "A pipeline: publish, record, query, publish the result", "On a cluster"]


@pytest.mark.slow
@pytest.mark.timeout(900)    # one Spark session for all, 20-60 s to start on a loaded machine, then five queries
def test_spark_guide_examples_run(tmp_path, shm_dir):
    if not JAVA:
        pytest.skip("no java on PATH: PySpark needs a Java 17+ runtime to start Spark")
    archive = tmp_path / "archive"
    trades = record_trades(archive)          # 60 on stream 1001, one on 1002
    codes = []
    for heading, code in examples("docs/spark.md"):
        if heading in NOT_RUN:
            continue
        code = ARCHIVE_DIR_LINE.sub(f"ARCHIVE_DIR = {str(archive)!r}", code)
        codes.append(with_free_ports(code))
    script = tmp_path / "guide.py"
    script.write_text(f"import sys\nfor code in {codes!r}:\n"
                      "    exec(compile(code, 'docs/spark.md', 'exec'), {'__name__': '__main__'})\n"
                      f"    print({SEPARATOR!r}, flush=True)\n")
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=user_env(TMPDIR=str(shm_dir)),
                            capture_output=True, text=True, timeout=840)
    assert result.returncode == 0, result.stdout + result.stderr[-5000:]
    printed = result.stdout.split(SEPARATOR + "\n")
    assert printed[-1] == ""
    session, bars, pushdown, pipeline = (part.splitlines() for part in printed[:-1])
    assert session == ["1001 60", "1002 1"]
    assert bars == _expected_bars(trades) + ["60 trades"]
    assert pushdown[0] == "True" and re.fullmatch(r"\d+ partition\(s\)", pushdown[1]), pushdown
    assert pipeline == ["1000 1000"] + _pipeline_totals(), result.stderr[-5000:]
