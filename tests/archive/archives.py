# SPDX-License-Identifier: Apache-2.0
"""Archives for the client tests to talk to: the official Java ArchivingMediaDriver (needs AERON_JAVA_CP; skips
cleanly without it), and ours in this process, with the same face. Each runs in its own /dev/shm directory on free
loopback ports and is stopped by the fixture that started it."""
from __future__ import annotations

import contextlib
import dataclasses
import os
import pathlib
import shutil
import signal
import subprocess
import time
import uuid
from typing import Any, Iterator

import pytest

from aeron.archive import Context
from aeron.archive.archive import ArchivingMediaDriver
from aeron.archive.archive import Context as ArchiveContext
from aeron.client.aeron import Aeron
from aeron.client.context import Context as AeronContext
from aeron.driver.media_driver import MediaDriver
from tests import procs
from tests.support import free_port

JAVA_OPENS = ["--add-opens", "java.base/jdk.internal.misc=ALL-UNNAMED",
              "--add-opens", "java.base/java.util.zip=ALL-UNNAMED",
              "--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED"]
TERM_LENGTH = 64 * 1024
SEGMENT_LENGTH = 256 * 1024       # small segments: a few hundred KiB of messages spans several


@dataclasses.dataclass
class ArchiveHandle:
    """What a test needs to reach an archive: its driver's directory and its channels."""

    name: str
    aeron_dir: str
    archive_dir: str
    control_channel: str
    control_stream_id: int
    events_channel: str
    events_stream_id: int
    archive_id: int
    replication_channel: str
    proc: Any = None

    def context(self, aeron: Aeron | None = None, **settings: Any) -> Context:
        """An AeronArchive.Context for this archive (a UDP response channel on an ephemeral port)."""
        values: dict[str, Any] = dict(control_request_channel=self.control_channel,
                                      control_request_stream_id=self.control_stream_id,
                                      control_response_channel="aeron:udp?endpoint=localhost:0",
                                      recording_events_channel=self.events_channel,
                                      recording_events_stream_id=self.events_stream_id,
                                      aeron_dir=self.aeron_dir, message_timeout_ns=10_000_000_000)
        values.update(settings)
        ctx = Context(environ={}, **values)
        if aeron is not None:
            ctx.aeron = aeron
        return ctx

    def connect_aeron(self) -> Aeron:
        """A client of this archive's driver."""
        return Aeron.connect(AeronContext(self.aeron_dir))


def java_classpath() -> str:
    value = os.environ.get("AERON_JAVA_CP")
    if not value:
        pytest.skip("AERON_JAVA_CP is not set: the official Java archive is not available")
    return value


def start_java_archive(base: pathlib.Path, name: str, archive_id: int, **properties: str) -> ArchiveHandle:
    """Launch ``io.aeron.archive.ArchivingMediaDriver`` (driver and archive in one JVM, SHARED threading) with
    its own directories under ``base``; returns once its mark file exists."""
    cp = java_classpath()
    aeron_dir = str(base / f"{name}-driver")
    archive_dir = str(base / f"{name}-archive")
    control_port = free_port()
    events_port = free_port()
    handle = ArchiveHandle(name=name, aeron_dir=aeron_dir, archive_dir=archive_dir,
                           control_channel=f"aeron:udp?endpoint=localhost:{control_port}", control_stream_id=10,
                           events_channel=f"aeron:udp?endpoint=localhost:{events_port}", events_stream_id=30,
                           archive_id=archive_id, replication_channel="aeron:udp?endpoint=localhost:0")
    props = {
        "aeron.dir": aeron_dir, "aeron.dir.delete.on.start": "true", "aeron.dir.delete.on.shutdown": "true",
        "aeron.threading.mode": "SHARED", "aeron.archive.threading.mode": "SHARED",
        "aeron.term.buffer.length": str(TERM_LENGTH), "aeron.ipc.term.buffer.length": str(TERM_LENGTH),
        "aeron.archive.dir": archive_dir, "aeron.archive.dir.delete.on.start": "true",
        "aeron.archive.control.channel": handle.control_channel,
        "aeron.archive.replication.channel": handle.replication_channel,
        "aeron.archive.recording.events.enabled": "true",
        "aeron.archive.recording.events.channel": handle.events_channel,
        "aeron.archive.segment.file.length": str(SEGMENT_LENGTH), "aeron.archive.id": str(archive_id),
        "aeron.publication.linger.timeout": "200ms", "aeron.archive.replay.linger.timeout": "200ms",
        "aeron.client.liveness.timeout": "5s", "aeron.timer.interval": "100ms",
        "aeron.spies.simulate.connection": "true",
    }
    props.update(properties)
    args = ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", *JAVA_OPENS, "-cp", cp,
            *[f"-D{k}={v}" for k, v in props.items()], "io.aeron.archive.ArchivingMediaDriver"]
    env = procs.client_env()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    handle.proc = proc
    mark = pathlib.Path(archive_dir) / "archive-mark.dat"
    deadline = time.monotonic() + 60
    while not mark.exists() or not os.path.exists(os.path.join(aeron_dir, "cnc.dat")):
        if proc.poll() is not None:
            out, err = proc.communicate(timeout=5)
            pytest.fail(f"Java archive {name} exited rc={proc.returncode}\n{out}\n{err}")
        if time.monotonic() > deadline:
            stop_archive(handle)
            pytest.fail(f"Java archive {name} did not start within 60 s")
        time.sleep(0.1)
    time.sleep(0.3)     # the archive conductor subscribes to its control channel just after creating the mark file
    return handle


def stop_archive(handle: ArchiveHandle) -> None:
    """Stop the archive process (SIGTERM: the Java launcher closes driver and archive cleanly)."""
    procs.stop(handle.proc, signal.SIGTERM, timeout=20)
    handle.proc = None


@contextlib.contextmanager
def scratch_dir(tag: str) -> Iterator[pathlib.Path]:
    """A fresh directory for a module's archives and drivers (in /dev/shm where there is one), removed after."""
    path = pathlib.Path("/dev/shm" if os.path.isdir("/dev/shm") else "/tmp") / f"aeron-py-{tag}-{uuid.uuid4().hex[:8]}"
    path.mkdir()
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def our_archive(base: pathlib.Path, name: str, archive_id: int, **archive_settings: Any):
    """Our ArchivingMediaDriver (SHARED threading), set up as :func:`start_java_archive` sets up the Java one;
    ``archive_settings`` override the archive context's. The handle's ``proc`` is the ArchivingMediaDriver."""
    aeron_dir = str(base / f"{name}-driver")
    archive_dir = str(base / f"{name}-archive")
    handle = ArchiveHandle(name=name, aeron_dir=aeron_dir, archive_dir=archive_dir,
                           control_channel=f"aeron:udp?endpoint=localhost:{free_port()}", control_stream_id=10,
                           events_channel=f"aeron:udp?endpoint=localhost:{free_port()}", events_stream_id=30,
                           archive_id=archive_id, replication_channel="aeron:udp?endpoint=localhost:0")
    driver_ctx = MediaDriver.Context(
        environ={}, aeron_dir=aeron_dir, dir_delete_on_start=True, dir_delete_on_shutdown=True,
        threading_mode="SHARED", term_buffer_length=TERM_LENGTH, ipc_term_buffer_length=TERM_LENGTH,
        publication_linger_timeout_ns=200_000_000, client_liveness_timeout_ns=5_000_000_000,
        timer_interval_ns=100_000_000, spies_simulate_connection=True)
    settings: dict[str, Any] = dict(
        environ={}, archive_dir=archive_dir, control_channel=handle.control_channel,
        replication_channel=handle.replication_channel, recording_events_enabled=True,
        recording_events_channel=handle.events_channel, segment_file_length=SEGMENT_LENGTH, archive_id=archive_id,
        replay_linger_timeout_ns=200_000_000, threading_mode="SHARED")
    settings.update(archive_settings)
    with ArchivingMediaDriver.launch(driver_ctx, ArchiveContext(**settings)) as amd:
        handle.proc = amd
        yield handle
