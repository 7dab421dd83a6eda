# SPDX-License-Identifier: Apache-2.0
"""kill -9 of a standalone archive (``python -m aeron.archive``) mid-recording, then a restart on the same directory:
the cut-off recording gets its stop position back from its segments and every complete message is replayable."""
from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from aeron import Aeron, Context
from aeron._core.codecs import archive as codecs
from aeron._core.codecs.archive import ControlResponseCode, RecordingSignal, SourceLocation
from aeron._core.fragment_assembler import FragmentAssembler
from aeron.archive.archive import Archive
from aeron.archive.archive_mark_file import ActiveArchiveError, ArchiveMarkFile
from aeron.common.errors import AeronError
from aeron.driver.media_driver import MediaDriver
from tests.archive.control_client import ControlClient
from tests.archive.test_server import archive_context, replay
from tests.procs import client_env
from tests.support import driver_context, wait_for


def test_kill_9_mid_recording_then_restart_recovers_the_stop_position(shm_dir):
    driver = MediaDriver.launch(driver_context(aeron_dir=str(shm_dir / "driver")))
    archive_dir = str(shm_dir / "archive")
    proc = None
    log = open(shm_dir / "archive.log", "wb")
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "aeron.archive", f"aeron.dir={driver.aeron_dir}", f"aeron.archive.dir={archive_dir}",
             "aeron.archive.control.channel.enabled=false", "aeron.archive.threading.mode=SHARED",
             "aeron.archive.segment.file.length=64k"],
            env=client_env(), stdout=subprocess.DEVNULL, stderr=log)
        with Aeron.connect(Context(aeron_dir=driver.aeron_dir)) as aeron:
            c = ControlClient(aeron, "aeron:ipc?term-length=64k", 10, "aeron:ipc?term-length=64k", 20, timeout_s=20)
            assert c.connect().code == ControlResponseCode.OK
            channel = "aeron:ipc?term-length=64k"
            c.ok(codecs.StartRecordingRequestEncoder, stream_id=4000, source_location=SourceLocation.REMOTE,
                 channel=channel)
            pub = aeron.add_exclusive_publication(channel, 4000)
            recording_id = c.wait_signal(RecordingSignal.START).recording_id
            messages = [i.to_bytes(4, "little") * (1 + i % 700) for i in range(3000)]     # some fragmented
            sent = 0
            killed_at = None
            for m in messages:
                wait_for(lambda: pub.offer(m) > 0, what="offer")
                sent += 1
                if sent == 1500:
                    wait_for(lambda: c.ok(codecs.RecordingPositionRequestEncoder, recording_id=recording_id) > 100_000,
                             what="recording under way")
                    proc.send_signal(signal.SIGKILL)
                    proc.wait(10)
                    killed_at = pub.position
                    break
            assert killed_at is not None
            pub.close()
            c.close()
        # at once, while its mark file is still fresh (Java's archive would refuse it for 10 s): its pid is gone and
        # its activity timestamp has stopped, so the restart takes the directory over; the catalog repairs the
        # stop position from the segment files
        with ArchiveMarkFile.open(archive_dir) as mark:
            assert mark.activity_timestamp > time.time() * 1000 - 10_000
        with Archive.launch(archive_context(archive_dir, aeron_dir=driver.aeron_dir)) as archive:
            stop = archive.conductor.catalog.stop_position(recording_id)
            assert 100_000 < stop <= killed_at
            with Aeron.connect(Context(aeron_dir=driver.aeron_dir)) as aeron:
                c = ControlClient(aeron, "aeron:ipc?term-length=64k", 10, "aeron:ipc?term-length=64k", 21,
                                  timeout_s=20)
                assert c.connect().code == ControlResponseCode.OK
                assert c.ok(codecs.StopPositionRequestEncoder, recording_id=recording_id) == stop
                _, sub = replay(c, aeron, recording_id, length=-2)
                # every message whose frames all lie below the stop position comes back, in order
                got = []
                assembler = FragmentAssembler(lambda b, o, n, h: got.append((b.get_bytes(o, n), h.position)))
                wait_for(lambda: got and got[-1][1] >= stop - 4096 or sub.images and sub.images[0].position >= stop,
                         invoke=lambda: sub.poll(assembler, 100), what="replayed to the stop position")
                wait_for(lambda: sub.images and sub.images[0].position >= stop, invoke=lambda: sub.poll(assembler, 100),
                         what="replay at the stop position")
                assert [m for m, _ in got] == messages[:len(got)]
                assert got[-1][1] <= stop and len(got) >= 1000
                c.close()
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(10)
        log.close()
        driver.close()


def mark_file_pid(archive_dir: str) -> int:
    try:
        with ArchiveMarkFile.open(archive_dir, timeout_ms=0) as mark:
            return mark.pid
    except (OSError, AeronError):            # not there, or not ready yet
        return 0


def test_a_running_archive_still_blocks_a_second_one_on_its_directory(shm_dir):
    driver = MediaDriver.launch(driver_context(aeron_dir=str(shm_dir / "driver")))
    archive_dir = str(shm_dir / "archive")
    log = open(shm_dir / "archive.log", "wb")
    proc = None
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "aeron.archive", f"aeron.dir={driver.aeron_dir}", f"aeron.archive.dir={archive_dir}",
             "aeron.archive.control.channel.enabled=false", "aeron.archive.threading.mode=SHARED"],
            env=client_env(), stdout=subprocess.DEVNULL, stderr=log)
        wait_for(lambda: mark_file_pid(archive_dir) == proc.pid, timeout_s=30, interval_s=0.05,
                 what="the archive's mark file")
        with pytest.raises(ActiveArchiveError, match=f"pid {proc.pid}"):
            Archive.launch(archive_context(archive_dir, aeron_dir=driver.aeron_dir))
        assert proc.poll() is None and mark_file_pid(archive_dir) == proc.pid
    finally:
        if proc is not None and proc.poll() is None:
            proc.terminate()
            proc.wait(20)
        log.close()
        driver.close()
