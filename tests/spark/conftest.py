# SPDX-License-Identifier: Apache-2.0
import gzip
import os
import shutil
import subprocess
import sys

import pytest


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
    """A SparkSession whose Python workers run this interpreter (they import aeron and pyarrow), set by
    ``aeron.spark.configure``."""
    if not JAVA:
        pytest.skip("no java on PATH: PySpark needs a Java 17+ runtime to start Spark")
    from pyspark.sql import SparkSession

    import aeron.spark

    builder = (SparkSession.builder.master(master).appName("aeron-spark-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.python.filterPushdown.enabled", "true")
               .config("spark.driver.memory", "1g")
               .config("spark.python.worker.reuse", "true"))
    for k, v in conf.items():
        builder = builder.config(k, v)
    spark = aeron.spark.configure(builder, python=sys.executable).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    aeron.spark.register(spark)
    return spark


def user_env(**extra: str) -> dict[str, str]:
    """The environment of a user who just made a venv and runs its python by path: no PYSPARK_* or VIRTUAL_ENV,
    PATH without this venv's bin (so ``python3`` there is the system's). Spark's web UI is turned off through
    PYSPARK_SUBMIT_ARGS (a test binds no fixed port; 4040 is the UI's), which names no Python."""
    venv_bin = os.path.dirname(sys.executable)
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep)
                           if p and os.path.realpath(p) != os.path.realpath(venv_bin))
    env = {"PATH": path or "/usr/bin:/bin", "PYSPARK_SUBMIT_ARGS": "--conf spark.ui.enabled=false pyspark-shell"}
    for name in ("HOME", "LANG", "LC_ALL", "TMPDIR", "JAVA_HOME", "USER"):
        if name in os.environ:
            env[name] = os.environ[name]
    env.update(extra)
    return env


class RunningArchive:
    """Our ArchivingMediaDriver with a UDP control channel on a free loopback port (64 KiB IPC terms, 128 KiB
    segments), and a client of it on its own driver for the tests' recordings."""

    def __init__(self, base):
        from aeron.archive.archive import ArchivingMediaDriver
        from aeron.archive.archive import Context as ArchiveContext
        from tests import support

        self.archive_dir = str(base / "archive")
        self.control_channel = f"aeron:udp?endpoint=127.0.0.1:{support.free_port()}"
        actx = ArchiveContext(environ={}, archive_dir=self.archive_dir, control_channel_enabled=True,
                              control_channel=self.control_channel, threading_mode="SHARED",
                              segment_file_length=128 * 1024, idle_strategy="backoff")
        dctx = support.driver_context(aeron_dir=str(base / "driver"), ipc_term_buffer_length=64 * 1024)
        self.amd = ArchivingMediaDriver.launch(dctx, actx)
        self.aeron_dir = self.amd.driver.aeron_dir

    def client(self):
        """An AeronArchive over the archive's local (IPC) control channel."""
        from aeron.archive import client as archive_client

        ctx = archive_client.Context(environ={}, aeron_dir=self.aeron_dir,
                                     control_request_channel="aeron:ipc?term-length=64k", control_request_stream_id=10,
                                     control_response_channel="aeron:ipc?term-length=64k",
                                     control_response_stream_id=20)
        return archive_client.AeronArchive.connect(ctx)

    def record(self, messages, stream_id=1001, channel="aeron:ipc?term-length=64k|mtu=1408"):
        """Record ``messages`` on a publication of their own (the recording listed before the first offer, so it
        holds them all); the stopped recording's id."""
        from tests import support

        with self.client() as archive:
            publication = archive.add_recorded_exclusive_publication(channel, stream_id)
            try:
                found = []

                def listed():
                    found[:] = [archive.find_last_matching_recording(0, "", stream_id, publication.session_id)]
                    return found[0] >= 0
                support.wait_for(listed, 30, what="recording listed")
                recording_id = found[0]
                for m in messages:
                    support.wait_for(lambda m=m: publication.offer(m) > 0, 30, what="offer accepted")
                end = publication.position
                support.wait_for(lambda: archive.get_recording_position(recording_id) >= end, 30,
                                 what="everything recorded")
                archive.stop_recording_publication(publication)
                support.wait_for(lambda: archive.get_stop_position(recording_id) >= 0, 30, what="recording stopped")
            finally:
                publication.close()
        return recording_id

    def close(self):
        self.amd.close()


@pytest.fixture
def running_archive(shm_dir):
    archive = RunningArchive(shm_dir)
    try:
        yield archive
    finally:
        archive.close()
