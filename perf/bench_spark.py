# SPDX-License-Identifier: Apache-2.0
"""Scan throughput of the aeron-archive Spark source against a bare PyArrow scan of the same segments.

    .venv/bin/python perf/bench_spark.py [--mib 128] [--sizes 32,1024] [--repeat 3]

For each message size a synthetic stopped recording of ``--mib`` MiB is written under /dev/shm (64 MiB terms
and segments as an archive would record them, catalog entry by aeron.archive.catalog), then, in one run:

- memory read: the segment files read into one reused buffer (``readinto``; the page cache is the medium here);
- bare PyArrow scan: ``aeron.spark.scan.read_range`` over the planned ranges in this process, one thread: the
  segment -> RecordBatch kernel without Spark (every column built, payloads copied out of the mapping);
- Spark source: ``spark.read.format("aeron-archive")...agg(count, sum(length(payload)))`` on ``local[1]`` (one
  task thread and one Python worker, as the bare scan has one thread): the batches cross to the JVM as Arrow
  and Spark reads every row. Session start-up and a first warm-up query are not timed;
- Spark ceiling: the same query over a Python data source that yields the first batch of the same recording
  over and over (no reading at all): what Spark itself takes in from a Python source on this machine.

Best of ``--repeat`` runs of each. Targets (issue 13): Spark >= 0.8 of the bare scan for 1 KiB messages, the bare
scan >= 50 % of the memory read rate. Results: perf/results/spark.json.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import sys
import time
import uuid

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from aeron.archive import segments
from aeron.archive.catalog import Catalog
from aeron.spark.scan import plan_ranges, read_range

TERM = 64 * 1024 * 1024
RESULTS = HERE / "results"


def write_recording(archive_dir: pathlib.Path, payload_length: int, total: int) -> tuple[int, int]:
    """A stopped recording of ``total`` bytes of unfragmented ``payload_length``-byte messages (whole terms,
    each ending in a padding frame). Returns (messages, payload bytes)."""
    frame = (32 + payload_length + 31) & ~31
    per_term = (TERM - 32) // frame                 # leave room for a padding header at the end of every term
    term = np.zeros(TERM, dtype=np.uint8)
    offsets = np.arange(per_term, dtype=np.int64) * frame
    i32 = term.view(np.int32)
    i32[offsets // 4] = 32 + payload_length         # frame length
    term[offsets + 5] = 0xC0                        # flags
    term[offsets + 6] = 1                           # DATA
    i32[(offsets + 8) // 4] = offsets               # term offset
    i32[(offsets + 12) // 4] = 7                    # session id
    i32[(offsets + 16) // 4] = 1001                 # stream id
    body = np.frombuffer(np.random.default_rng(1).bytes(payload_length), dtype=np.uint8)
    for k in range(min(payload_length, 64)):        # a recognisable payload start; the rest is zeros
        term[offsets + 32 + k] = body[k]
    pad = per_term * frame
    i32[pad // 4] = TERM - pad
    term[pad + 5] = 0xC0
    i32[(pad + 8) // 4] = pad
    terms = max(1, total // TERM)
    archive_dir.mkdir(parents=True)
    with Catalog(archive_dir) as catalog:
        rid = catalog.add_recording(start_position=0, start_timestamp=1, initial_term_id=0,
                                    segment_file_length=TERM, term_buffer_length=TERM, mtu_length=1408,
                                    session_id=7, stream_id=1001, stripped_channel="aeron:ipc",
                                    original_channel="aeron:ipc", source_identity="aeron:ipc")
        for t in range(terms):
            i32[(offsets + 20) // 4] = t            # term id
            i32[(pad + 20) // 4] = t
            with open(archive_dir / segments.segment_file_name(rid, t * TERM), "wb") as f:
                f.write(term.tobytes())
        catalog.recording_stopped(rid, terms * TERM, 2)
    return per_term * terms, per_term * terms * payload_length


def memory_read(archive_dir: pathlib.Path) -> float:
    buf = bytearray(TERM)
    files = sorted(archive_dir.glob("*.rec"))
    t0 = time.perf_counter()
    n = 0
    for p in files:
        with open(p, "rb", buffering=0) as f:
            while True:
                got = f.readinto(buf)
                if not got:
                    break
                n += got
    return n / (time.perf_counter() - t0)


def bare_scan(archive_dir: pathlib.Path) -> tuple[float, int]:
    t0 = time.perf_counter()
    rows = 0
    for r in plan_ranges(archive_dir, max_bytes_per_partition=TERM):
        for b in read_range(r):
            rows += b.num_rows
    return time.perf_counter() - t0, rows


class _ReadyBatchReader:
    # pickled by value to the Python worker: the first batch of the recording, yielded ``repeat`` times
    def __init__(self, path: str, repeat: int) -> None:
        self.path, self.repeat = path, repeat

    def partitions(self):
        from pyspark.sql.datasource import InputPartition

        return [InputPartition(0)]

    def read(self, partition):
        from aeron.spark.scan import plan_ranges, read_range

        batch = next(read_range(plan_ranges(self.path)[0]))
        for _ in range(self.repeat):
            yield batch


def ceiling_source():
    from pyspark.sql.datasource import DataSource, DataSourceReader

    from aeron.spark.source import SCHEMA_DDL

    class Reader(_ReadyBatchReader, DataSourceReader):
        pass

    class ReadyBatches(DataSource):
        @classmethod
        def name(cls):
            return "bench-ready-batches"

        def schema(self):
            return SCHEMA_DDL

        def reader(self, schema):
            return Reader(self.options["path"], int(self.options["repeat"]))

    return ReadyBatches


def spark_ceiling(spark, archive_dir: pathlib.Path, messages: int) -> tuple[float, int]:
    from pyspark.sql import functions as F

    per_batch = next(read_range(plan_ranges(archive_dir)[0])).num_rows
    repeat = max(1, messages // per_batch)
    t0 = time.perf_counter()
    row = (spark.read.format("bench-ready-batches").option("path", str(archive_dir)).option("repeat", str(repeat))
           .load().agg(F.count("*").alias("n"), F.sum(F.length("payload")).alias("bytes")).collect()[0])
    return time.perf_counter() - t0, row["n"]


def spark_scan(spark, archive_dir: pathlib.Path) -> tuple[float, int, int]:
    from pyspark.sql import functions as F

    t0 = time.perf_counter()
    row = (spark.read.format("aeron-archive").option("path", str(archive_dir))
           .option("maxBytesPerPartition", str(TERM)).load()
           .agg(F.count("*").alias("n"), F.sum(F.length("payload")).alias("bytes")).collect()[0])
    return time.perf_counter() - t0, row["n"], row["bytes"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mib", type=int, default=128, help="recording size per message size (MiB, whole 64 MiB terms)")
    ap.add_argument("--sizes", default="32,1024")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import aeron.spark

    spark = (SparkSession.builder.master("local[1]").appName("bench-spark").config("spark.ui.enabled", "false")
             .config("spark.driver.memory", "2g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    aeron.spark.register(spark)
    spark.dataSource.register(ceiling_source())
    base = pathlib.Path(f"/dev/shm/aeron-bench-spark-{uuid.uuid4().hex[:8]}")
    results = {}
    try:
        for size in (int(s) for s in args.sizes.split(",")):
            d = base / f"size-{size}"
            messages, payload = write_recording(d, size, args.mib * 1024 * 1024)
            recorded = sum(p.stat().st_size for p in d.glob("*.rec"))
            spark_scan(spark, d)                                  # warm-up: workers, page cache, JIT
            mem = max(memory_read(d) for _ in range(args.repeat))
            bare_s = min(bare_scan(d)[0] for _ in range(args.repeat))
            runs = [spark_scan(spark, d) for _ in range(args.repeat)]
            assert all(n == messages and b == payload for _, n, b in runs), runs
            assert bare_scan(d)[1] == messages
            spark_s = min(s for s, _, _ in runs)
            spark_ceiling(spark, d, messages)
            ceil_s, ceil_n = min(spark_ceiling(spark, d, messages) for _ in range(args.repeat))
            r = {
                "messages": messages, "payload_bytes": payload, "recorded_bytes": recorded,
                "memory_read_MBps": mem / 1e6,
                "bare_msgs_per_s": messages / bare_s, "bare_MBps": recorded / bare_s / 1e6,
                "spark_msgs_per_s": messages / spark_s, "spark_MBps": recorded / spark_s / 1e6,
            }
            r["spark_ceiling_msgs_per_s"] = ceil_n / ceil_s
            r["spark_ceiling_MBps"] = ceil_n * size / ceil_s / 1e6
            r["spark_vs_bare"] = bare_s / spark_s
            r["spark_vs_ceiling"] = r["spark_msgs_per_s"] / r["spark_ceiling_msgs_per_s"]
            r["bare_vs_memory"] = r["bare_MBps"] / r["memory_read_MBps"]
            results[f"{size}B"] = r
            print(f"{size:>5} B: memory read {r['memory_read_MBps']:8.0f} MB/s | bare PyArrow scan "
                  f"{r['bare_msgs_per_s'] / 1e6:6.2f} M msg/s {r['bare_MBps']:7.0f} MB/s "
                  f"({r['bare_vs_memory']:.2f} of memory) | Spark {r['spark_msgs_per_s'] / 1e6:6.2f} M msg/s "
                  f"{r['spark_MBps']:7.0f} MB/s ({r['spark_vs_bare']:.2f} of bare) | Spark ceiling "
                  f"{r['spark_ceiling_msgs_per_s'] / 1e6:6.2f} M msg/s (source at {r['spark_vs_ceiling']:.2f} of it)",
                  flush=True)
            shutil.rmtree(d, ignore_errors=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
        spark.stop()
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "spark.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
