# SPDX-License-Identifier: Apache-2.0
"""Our archive client against the official Java ArchivingMediaDriver (driver and archive in one JVM; needs
AERON_JAVA_CP, skips cleanly without it): the whole client suite of tests/archive/client_suite.py."""
import os
import pathlib
import shutil
import threading
import time
import uuid

import pytest

from aeron._core.codecs.archive import RecordingSignal
from aeron.archive import AeronArchive, SourceLocation
from tests.archive.archives import java_classpath, start_java_archive, stop_archive
from tests.archive.client_suite import *  # noqa: F401,F403 - the shared tests run here against Java
from tests.archive.client_suite import (STREAM_ID, WAIT_S, Signals, archive_control_channel, await_signal, payloads,
                                        record)
from tests.support import free_port, wait_for


@pytest.fixture(scope="module")
def java_base():
    java_classpath()
    base = pathlib.Path("/dev/shm" if os.path.isdir("/dev/shm") else "/tmp") / f"aeron-py-jarc-{uuid.uuid4().hex[:8]}"
    base.mkdir()
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def archive(java_base):
    handle = start_java_archive(java_base, "src", archive_id=4711)
    try:
        yield handle
    finally:
        stop_archive(handle)


@pytest.fixture(scope="module")
def second_archive(java_base):
    handle = start_java_archive(java_base, "dst", archive_id=4712)
    try:
        yield handle
    finally:
        stop_archive(handle)


def test_replicate_with_live_merge_while_the_source_keeps_recording(client, aeron, signals, second_archive):
    """Replication that merges onto the live stream (MERGE signal) while the publisher keeps going; Java only: our
    archive answers this request with a clear GENERIC error (no live merge yet)."""
    control_port = free_port()
    live = f"aeron:udp?control=localhost:{control_port}|control-mode=dynamic"
    recording_id, _, publication = record(client, aeron, signals, payloads(100), live, SourceLocation.LOCAL)
    stop = threading.Event()

    def publish() -> None:
        while not stop.is_set():
            publication.offer(payloads(1)[0])
            time.sleep(0.001)

    thread = threading.Thread(target=publish, daemon=True)
    thread.start()
    dst_aeron = second_archive.connect_aeron()
    dst_signals = Signals()
    ctx = second_archive.context(aeron=dst_aeron)
    ctx.recording_signal_consumer = dst_signals
    try:
        with AeronArchive.connect(ctx) as dst:
            replication_id = dst.replicate(recording_id, -1, client.context.control_request_stream_id,
                                           archive_control_channel(client),
                                           f"aeron:udp?endpoint=localhost:0|control=localhost:{control_port}")
            merge = wait_for(lambda: dst_signals.of(RecordingSignal.MERGE), WAIT_S,
                             invoke=dst.poll_for_recording_signals, what="MERGE")[0]
            assert merge.correlation_id == replication_id and merge.position > 0
            dst_id = merge.recording_id
            wait_for(lambda: dst.get_recording_position(dst_id) > merge.position, WAIT_S,
                     invoke=lambda: time.sleep(0.01), what="the merged recording follows the live stream")
            dst.try_stop_replication(replication_id)      # the session may already have ended after the merge
            await_signal(dst, dst_signals, RecordingSignal.REPLICATE_END)
            dst.try_stop_recording_by_identity(dst_id)
    finally:
        stop.set()
        thread.join(10)
        dst_aeron.close()
        publication.close()
        client.stop_recording(live, STREAM_ID)
