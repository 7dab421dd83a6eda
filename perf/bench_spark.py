# SPDX-License-Identifier: Apache-2.0
"""Scan throughput of the aeron-archive Spark source against a bare PyArrow scan of the same segments.

    .venv/bin/python perf/bench_spark.py [--mib 256] [--sizes 32,1024] [--repeat 3] [--threads 1]
                                         [--conf key=value ...] [--no-replay]

For each message size a synthetic stopped recording of ``--mib`` MiB is written under /dev/shm (64 MiB terms
and segments as an archive would record them, catalog entry by aeron.archive.catalog), then, in one run:

- memory read: the segment files read into one reused buffer (``readinto``; the page cache is the medium here);
- bare PyArrow scan: ``aeron.spark.scan.read_range`` over the planned ranges in this process, in ``--threads``
  threads (the kernel runs without the GIL): the segment -> RecordBatch kernel without Spark (every column built,
  payloads copied out of the mapping);
- Spark source: ``spark.read.format("aeron-archive")...agg(count, sum(length(payload)))`` on
  ``local[<threads>]`` (as many task threads and Python workers as the bare scan has threads), one partition per
  task thread: the batches cross to the JVM as Arrow and Spark reads every row. Session start-up and two
  warm-up queries (Python workers, JIT) are not timed;
- Spark ceiling: the same query over a Python data source that yields the first batch of the same recording
  over and over (no reading at all): what Spark itself takes in from a Python source on this machine;
- Spark replay (1 KiB only, unless ``--no-replay``): the same query with ``option("controlChannel", ...)``
  instead of ``path``, against our ArchivingMediaDriver launched in this process over the same directory: each
  partition is a replay, over IPC on the archive's driver (``aeronDir``), and over UDP to the task's own
  embedded driver (the options' default, as for an archive on another machine).

For the Spark cases the CPU time the JVM and the Python worker spent per row is printed too (from /proc): where
the time goes when the wall clock is shared with other work. ``--conf`` passes a Spark setting (e.g.
``spark.driver.extraJavaOptions=...``). Best of ``--repeat`` runs of each. Targets (issue 13): Spark >= 0.8 of
the bare scan for 1 KiB messages, the bare scan >= 50 % of the memory read rate. Results: perf/results/spark.json.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import pathlib
import shutil
import socket
import sys
import time
import uuid

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from aeron.archive import segments
from aeron.archive.archive import ArchivingMediaDriver
from aeron.archive.archive import Context as ArchiveContext
from aeron.archive.catalog import Catalog
from aeron.driver import Context as DriverContext
from aeron.spark.scan import plan_ranges, read_range

TERM = 64 * 1024 * 1024
RESULTS = HERE / "results"
_TICK = os.sysconf("SC_CLK_TCK")


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


def _rows(r) -> int:
    return sum(b.num_rows for b in read_range(r))


def bare_scan(archive_dir: pathlib.Path, threads: int = 1) -> tuple[float, int]:
    t0 = time.perf_counter()
    ranges = plan_ranges(archive_dir, max_bytes_per_partition=TERM)
    if threads == 1:
        rows = sum(_rows(r) for r in ranges)
    else:
        with concurrent.futures.ThreadPoolExecutor(threads) as pool:
            rows = sum(pool.map(_rows, ranges))
    return time.perf_counter() - t0, rows


def _descendants_cpu() -> dict[str, float]:
    """CPU seconds (user + system) so far of this process's descendants: the JVM and Spark's Python workers
    (``pyspark.daemon pyspark.worker`` and the workers it forks)."""
    parent: dict[int, int] = {}
    stats: dict[int, tuple[str, float]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rpartition(")")[2].split()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        pid = int(entry)
        parent[pid] = int(fields[1])
        kind = "jvm" if argv[0].endswith(b"java") else "worker" if b"pyspark.worker" in argv else "other"
        stats[pid] = (kind, (int(fields[11]) + int(fields[12])) / _TICK)
    me = os.getpid()
    out = {"jvm": 0.0, "worker": 0.0}
    for pid, (kind, cpu) in stats.items():
        p = parent.get(pid)
        while p is not None and p != me:
            p = parent.get(p)
        if p == me and kind in out:
            out[kind] += cpu
    return out


class _ReadyBatchReader:
    # pickled by value to the Python worker: the first batch of the recording, yielded ``repeat`` times by each of
    # ``partitions`` partitions
    def __init__(self, path: str, repeat: int, partitions: int) -> None:
        self.path, self.repeat, self.count = path, repeat, partitions

    def partitions(self):
        from pyspark.sql.datasource import InputPartition

        return [InputPartition(i) for i in range(self.count)]

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
            return Reader(self.options["path"], int(self.options["repeat"]), int(self.options["partitions"]))

    return ReadyBatches


def spark_query(spark, fmt: str, options: dict[str, str]) -> dict[str, float]:
    """count and sum(length(payload)) over ``format(fmt)`` with ``options``: wall seconds, the two results, and
    the CPU seconds the JVM and the Python workers spent meanwhile."""
    from pyspark.sql import functions as F

    reader = spark.read.format(fmt)
    for k, v in options.items():
        reader = reader.option(k, v)
    cpu0 = _descendants_cpu()
    t0 = time.perf_counter()
    row = reader.load().agg(F.count("*").alias("n"), F.sum(F.length("payload")).alias("bytes")).collect()[0]
    seconds = time.perf_counter() - t0
    cpu1 = _descendants_cpu()
    return {"s": seconds, "n": row["n"], "bytes": row["bytes"] or 0, "jvm_cpu_s": cpu1["jvm"] - cpu0["jvm"],
            "worker_cpu_s": cpu1["worker"] - cpu0["worker"]}


def ceiling_options(archive_dir: pathlib.Path, messages: int, partitions: int) -> dict[str, str]:
    per_batch = next(read_range(plan_ranges(archive_dir)[0])).num_rows
    return {"path": str(archive_dir), "repeat": str(max(1, messages // per_batch // partitions)),
            "partitions": str(partitions)}


def best(runs: list[dict[str, float]]) -> dict[str, float]:
    """The fastest run, with the median CPU per row of all of them."""
    fastest = dict(min(runs, key=lambda r: r["s"]))
    for key in ("jvm_cpu_s", "worker_cpu_s"):
        per_row = sorted(r[key] / max(1, r["n"]) for r in runs)
        fastest[key.replace("_cpu_s", "_cpu_us_per_row")] = per_row[len(per_row) // 2] * 1e6
    return fastest


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def running_archive(archive_dir: pathlib.Path, driver_dir: pathlib.Path) -> tuple[ArchivingMediaDriver, str]:
    """Our archive (and its driver) in this process over ``archive_dir``, its control channel on a free UDP port."""
    control = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
    actx = ArchiveContext(environ={}, archive_dir=str(archive_dir), control_channel_enabled=True,
                          control_channel=control, threading_mode="SHARED")
    dctx = DriverContext(environ={}, aeron_dir=str(driver_dir), threading_mode="SHARED")
    return ArchivingMediaDriver.launch(dctx, actx), control


def _line(name: str, r: dict[str, float], bare_s: float, ceiling: dict[str, float] | None = None) -> str:
    text = (f"{name} {r['n'] / r['s'] / 1e6:6.3f} M msg/s ({bare_s / r['s']:.3f} of bare; JVM "
            f"{r['jvm_cpu_us_per_row']:.2f} us/row, worker {r['worker_cpu_us_per_row']:.2f} us/row CPU)")
    if ceiling is not None:
        text += f", at {ceiling['s'] / r['s'] * r['n'] / ceiling['n']:.2f} of the ceiling"
    return text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mib", type=int, default=256, help="recording size per message size (MiB, whole 64 MiB terms)")
    ap.add_argument("--sizes", default="32,1024")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1, help="Spark local[N] and N bare-scan threads")
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark setting (repeatable)")
    ap.add_argument("--no-replay", action="store_true", help="skip the reads through a running archive")
    args = ap.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import aeron.spark

    confs = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false", "spark.driver.memory": "2g"}
    confs.update(c.split("=", 1) for c in args.conf)
    builder = SparkSession.builder.master(f"local[{args.threads}]").appName("bench-spark")
    for k, v in confs.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    aeron.spark.register(spark)
    spark.dataSource.register(ceiling_source())
    base = pathlib.Path(f"/dev/shm/aeron-bench-spark-{uuid.uuid4().hex[:8]}")
    results: dict[str, object] = {"threads": args.threads, "confs": confs, "load_average_start": os.getloadavg()[0]}
    print(f"local[{args.threads}], {args.mib} MiB per size, best of {args.repeat}; load average "
          f"{os.getloadavg()[0]:.1f}; confs {confs}", flush=True)
    try:
        for size in (int(s) for s in args.sizes.split(",")):
            d = base / f"size-{size}" / "archive"
            messages, payload = write_recording(d, size, args.mib * 1024 * 1024)
            recorded = sum(p.stat().st_size for p in d.glob("*.rec"))
            # one partition per task thread: each task has a fixed cost in the JVM and the worker (see
            # docs/performance.md), which the bare scan does not pay
            per_task = max(TERM, -(-recorded // args.threads // TERM) * TERM)
            scan_options = {"path": str(d), "maxBytesPerPartition": str(per_task)}
            for _ in range(2):                                    # warm-up: workers, page cache, JIT
                spark_query(spark, "aeron-archive", scan_options)
            mem = max(memory_read(d) for _ in range(args.repeat))
            bare_s = min(bare_scan(d, args.threads)[0] for _ in range(args.repeat))
            assert bare_scan(d, args.threads)[1] == messages
            runs = [spark_query(spark, "aeron-archive", scan_options) for _ in range(args.repeat)]
            assert all(r["n"] == messages and r["bytes"] == payload for r in runs), runs
            scan_run = best(runs)
            ceil_options = ceiling_options(d, messages, args.threads)
            spark_query(spark, "bench-ready-batches", ceil_options)
            ceiling = best([spark_query(spark, "bench-ready-batches", ceil_options) for _ in range(args.repeat)])
            r: dict[str, object] = {
                "messages": messages, "payload_bytes": payload, "recorded_bytes": recorded,
                "memory_read_MBps": mem / 1e6,
                "bare_msgs_per_s": messages / bare_s, "bare_MBps": recorded / bare_s / 1e6,
                "bare_vs_memory": recorded / bare_s / mem,
                "spark": scan_run, "spark_msgs_per_s": messages / scan_run["s"],
                "spark_MBps": recorded / scan_run["s"] / 1e6, "spark_vs_bare": bare_s / scan_run["s"],
                "ceiling": ceiling, "spark_ceiling_msgs_per_s": ceiling["n"] / ceiling["s"],
                "spark_ceiling_vs_bare": bare_s / ceiling["s"] * ceiling["n"] / messages,
                "spark_vs_ceiling": messages / scan_run["s"] / (ceiling["n"] / ceiling["s"]),
            }
            print(f"{size:>5} B: memory read {mem / 1e6:7.0f} MB/s | bare PyArrow scan {messages / bare_s / 1e6:6.2f} "
                  f"M msg/s {recorded / bare_s / 1e6:6.0f} MB/s ({r['bare_vs_memory']:.2f} of memory)\n"
                  f"         {_line('Spark source ', scan_run, bare_s, ceiling)}\n"
                  f"         {_line('Spark ceiling', ceiling, bare_s * ceiling['n'] / messages)}", flush=True)
            if size == 1024 and not args.no_replay:
                amd, control = running_archive(d, base / f"size-{size}" / "driver")
                try:
                    for name, extra in (("ipc", {"aeronDir": amd.driver.aeron_dir, "replayChannel": "aeron:ipc"}),
                                        ("udp", {})):
                        options = {"controlChannel": control, "maxBytesPerPartition": str(per_task), **extra}
                        spark_query(spark, "aeron-archive", options)
                        runs = [spark_query(spark, "aeron-archive", options) for _ in range(args.repeat)]
                        assert all(x["n"] == messages and x["bytes"] == payload for x in runs), runs
                        replayed = best(runs)
                        r[f"replay_{name}"] = replayed
                        r[f"replay_{name}_vs_bare"] = bare_s / replayed["s"]
                        print(f"         {_line(f'Spark replay {name}', replayed, bare_s)}", flush=True)
                finally:
                    amd.close()
            r["load_average_end"] = os.getloadavg()[0]
            results[f"{size}B"] = r
            shutil.rmtree(d.parent, ignore_errors=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
        spark.stop()
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "spark.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
