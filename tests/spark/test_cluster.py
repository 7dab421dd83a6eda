# SPDX-License-Identifier: Apache-2.0
"""Executors in their own processes (local-cluster): partitions and readers are pickled to other JVMs' Python
workers, which map the segment files themselves."""
import os

import pytest

from tests.spark.conftest import spark_session
from tests.spark.recordings import RecordingWriter

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]   # a Spark session starts in 20-60 s on a loaded machine


@pytest.fixture(scope="module")
def spark():
    session = spark_session("local-cluster[2,1,1024]", **{"spark.executor.memory": "512m"})
    yield session
    session.stop()


def test_partitions_read_in_executor_processes(spark, tmp_path):
    d = tmp_path / "archive"
    w = RecordingWriter(d, term_length=64 * 1024, segment_length=64 * 1024)
    for i in range(400):
        w.append(bytes([i % 256]) * (2500 if i % 5 == 0 else 300) + str(i).encode())
    w.stop()
    df = (spark.read.format("aeron-archive").option("path", str(d)).option("maxBytesPerPartition", "65536")
          .load())
    assert df.rdd.getNumPartitions() == -(-w.position // 65536)
    rows = sorted((r.position, bytes(r.payload)) for r in df.collect())
    assert rows == w.messages
    pids = set(df.rdd.mapPartitions(lambda _: [os.getpid()]).collect())
    assert os.getpid() not in pids
    executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1
    assert executors == 2
