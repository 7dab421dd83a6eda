# SPDX-License-Identifier: Apache-2.0
"""Archive.Context: Aeron's aeron.archive.* properties and AERON_ARCHIVE_* variables, validation; INVOKER mode."""
from __future__ import annotations

import threading

import pytest

from aeron import Aeron, Context
from aeron._core.codecs import archive as codecs
from aeron._core.codecs.archive import ControlResponseCode
from aeron.archive.archive import Archive, ArchiveThreadingMode
from aeron.archive.archive import Context as ArchiveContext
from aeron.common.errors import ConfigurationError
from aeron.driver.media_driver import MediaDriver
from tests.archive.control_client import ControlClient
from tests.support import driver_context


def test_properties_environment_and_attributes():
    ctx = ArchiveContext({"aeron.archive.dir": "/tmp/x", "aeron.archive.segment.file.length": "1m",
                          "aeron.archive.threading.mode": "shared", "aeron.archive.file.sync.level": "1"},
                         environ={"AERON_ARCHIVE_CONTROL_CHANNEL": "aeron:udp?endpoint=localhost:8010",
                                  "AERON_ARCHIVE_CONTROL_STREAM_ID": "11", "AERON_ARCHIVE_ID": "77",
                                  "AERON_ARCHIVE_DIR": "/tmp/overridden"},
                         catalog_capacity=2 * 1024 * 1024)
    assert ctx.archive_dir == "/tmp/x"                     # properties win over the environment
    assert (ctx.segment_file_length, ctx.threading_mode, ctx.file_sync_level) == (1 << 20,
                                                                                  ArchiveThreadingMode.SHARED, 1)
    assert (ctx.control_channel, ctx.control_stream_id, ctx.archive_id) == ("aeron:udp?endpoint=localhost:8010", 11, 77)
    assert ctx.catalog_capacity == 2 * 1024 * 1024
    assert ctx.local_control_channel == "aeron:ipc?term-length=64k" and ctx.replay_linger_timeout_ns == 5_000_000_000
    ctx.conclude()
    assert ctx.catalog_file_sync_level == 1 and ctx.mark_file_dir == "/tmp/x"


@pytest.mark.parametrize("settings, message", [
    (dict(segment_file_length=3 * 65536), "segment.file.length"),
    (dict(segment_file_length=32 * 1024), "segment.file.length"),
    (dict(file_sync_level=3), "file.sync.level"),
    (dict(file_sync_level=2, catalog_file_sync_level=1), "catalog.file.sync.level"),
    (dict(control_channel=None), "control.channel"),
    (dict(control_channel="aeron:ipc"), "must be UDP"),
    (dict(recording_events_enabled=True), "events.channel"),
    (dict(file_io_max_length=1000), "file.io.max.length"),
])
def test_bad_settings_are_configuration_errors(settings, message):
    base = dict(control_channel="aeron:udp?endpoint=localhost:8010")
    base.update(settings)
    with pytest.raises(ConfigurationError, match=message):
        ArchiveContext(environ={}, **base).conclude()


def test_unknown_names_and_bad_values():
    with pytest.raises(ConfigurationError, match="unknown archive property"):
        ArchiveContext({"aeron.archive.no.such.thing": "1"}, environ={})
    with pytest.raises(ConfigurationError, match="aeron.archive.control.stream.id"):
        ArchiveContext({"aeron.archive.control.stream.id": "ten"}, environ={})
    with pytest.raises(ConfigurationError, match="threading.mode"):
        ArchiveContext({"aeron.archive.threading.mode": "BOTH"}, environ={})
    with pytest.raises(ConfigurationError, match="unknown Archive.Context attribute"):
        ArchiveContext(environ={}, no_such_attribute=1)


def test_invoker_mode_runs_only_when_invoked(shm_dir):
    with MediaDriver.launch(driver_context(aeron_dir=str(shm_dir / "driver"))) as driver:
        ctx = ArchiveContext(environ={}, aeron_dir=driver.aeron_dir, archive_dir=str(shm_dir / "archive"),
                             control_channel_enabled=False, threading_mode="INVOKER")
        with Archive.launch(ctx) as archive, Aeron.connect(Context(aeron_dir=driver.aeron_dir)) as aeron:
            assert archive.invoker is not None
            client = ControlClient(aeron, "aeron:ipc?term-length=64k", 10, "aeron:ipc?term-length=64k", 20)
            stop = threading.Event()

            def invoke():
                while not stop.is_set():
                    if archive.invoker.invoke() == 0:
                        stop.wait(0.0005)
            t = threading.Thread(target=invoke)
            t.start()
            try:
                assert client.connect().code == ControlResponseCode.OK
                assert client.ok(codecs.ArchiveIdRequestEncoder) == archive.archive_id
            finally:
                stop.set()
                t.join()
            client.close()


def test_delete_archive_on_start(shm_dir):
    archive_dir = shm_dir / "archive"
    archive_dir.mkdir()
    (archive_dir / "7-0.rec").write_bytes(b"old")
    with MediaDriver.launch(driver_context(aeron_dir=str(shm_dir / "driver"))) as driver:
        ctx = ArchiveContext({"aeron.archive.dir.delete.on.start": "true"}, environ={}, aeron_dir=driver.aeron_dir,
                             archive_dir=str(archive_dir), control_channel_enabled=False, threading_mode="SHARED")
        with Archive.launch(ctx):
            assert not (archive_dir / "7-0.rec").exists()
            assert (archive_dir / "archive.catalog").exists() and (archive_dir / "archive-mark.dat").exists()
