# SPDX-License-Identifier: Apache-2.0
"""Our archive client against our archive server: the whole client suite of tests/archive/client_suite.py (which
tests/interop/test_archive_client_java.py runs against the official Java archive), here with our
ArchivingMediaDriver in this process, set up as the Java one is there."""
import contextlib
import os
import pathlib
import shutil
import uuid

import pytest

from aeron.archive.archive import ArchivingMediaDriver
from aeron.archive.archive import Context as ArchiveContext
from aeron.driver.media_driver import MediaDriver
from tests.archive.archives import SEGMENT_LENGTH, TERM_LENGTH, ArchiveHandle
from tests.archive.client_suite import *  # noqa: F401,F403 - the shared tests run here against our archive
from tests.support import free_port


@pytest.fixture(scope="module")
def our_base():
    base = pathlib.Path("/dev/shm" if os.path.isdir("/dev/shm") else "/tmp") / f"aeron-py-parc-{uuid.uuid4().hex[:8]}"
    base.mkdir()
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


@contextlib.contextmanager
def our_archive(base: pathlib.Path, name: str, archive_id: int):
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
    archive_ctx = ArchiveContext(
        environ={}, archive_dir=archive_dir, control_channel=handle.control_channel,
        replication_channel=handle.replication_channel, recording_events_enabled=True,
        recording_events_channel=handle.events_channel, segment_file_length=SEGMENT_LENGTH, archive_id=archive_id,
        replay_linger_timeout_ns=200_000_000, threading_mode="SHARED")
    with ArchivingMediaDriver.launch(driver_ctx, archive_ctx) as amd:
        handle.proc = amd
        yield handle


@pytest.fixture(scope="module")
def archive(our_base):
    with our_archive(our_base, "src", 4711) as handle:
        yield handle


@pytest.fixture(scope="module")
def second_archive(our_base):
    with our_archive(our_base, "dst", 4712) as handle:
        yield handle
