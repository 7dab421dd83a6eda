# SPDX-License-Identifier: Apache-2.0
import gzip
import os
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("pyarrow")


def _java_ok() -> bool:
    java = shutil.which("java") or (os.environ.get("JAVA_HOME") and os.path.join(os.environ["JAVA_HOME"], "bin", "java"))
    if not java:
        return False
    try:
        return subprocess.run([java, "-version"], capture_output=True, timeout=30, check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


JAVA = _java_ok()


@pytest.fixture
def golden_archive(golden_dir, tmp_path):
    """The official Java archive directory, decompressed into tmp (2 recordings, see tests/data/golden)."""
    src = golden_dir / "archive" / "archive-dir"
    out = tmp_path / "golden-archive"
    out.mkdir()
    for f in src.iterdir():
        if f.suffix == ".gz":
            (out / f.stem).write_bytes(gzip.decompress(f.read_bytes()))
    return out


def spark_session(master: str = "local[2]", **conf: str):
    """A SparkSession whose Python workers run this interpreter (they import aeron and pyarrow)."""
    pytest.importorskip("pyspark")
    if not JAVA:
        pytest.skip("no java on PATH: PySpark needs a Java 17+ runtime to start Spark")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    builder = (SparkSession.builder.master(master).appName("aeron-spark-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.python.filterPushdown.enabled", "true")
               .config("spark.driver.memory", "1g")
               .config("spark.python.worker.reuse", "true"))
    for k, v in conf.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    import aeron.spark

    aeron.spark.register(spark)
    return spark
