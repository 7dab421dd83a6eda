# SPDX-License-Identifier: Apache-2.0
"""``python -m aeron.archive``: its help lists the properties it reads with their defaults; a bad configuration is
refused before anything starts, and a launch that fails leaves no directory it made behind."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from aeron.archive.archive import Archive
from aeron.archive.archive import Context as ArchiveContext
from aeron.common.security import ALLOW_ALL
from aeron.driver.media_driver import MediaDriver
from tests.archive.test_server import archive_context
from tests.conftest import PROJECT_ROOT
from tests.procs import client_env
from tests.support import driver_context, free_port


def archive_main(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in client_env().items() if not k.startswith("AERON_")}
    return subprocess.run([sys.executable, "-m", "aeron.archive", *args], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=PROJECT_ROOT, stdin=subprocess.DEVNULL, check=False)


def test_help_lists_every_property_with_its_default():
    result = archive_main("--help")
    assert result.returncode == 0
    defaults = ArchiveContext.defaults()
    assert len(defaults) > 30 and "aeron.archive.control.channel" in defaults
    for name in defaults:
        assert f"  {name} ({name.upper().replace('.', '_')}): " in result.stdout, name
    assert "  aeron.archive.segment.file.length (AERON_ARCHIVE_SEGMENT_FILE_LENGTH): 134217728\n" in result.stdout
    assert "  aeron.archive.replay.linger.timeout (AERON_ARCHIVE_REPLAY_LINGER_TIMEOUT): 5s\n" in result.stdout
    assert "  aeron.archive.threading.mode (AERON_ARCHIVE_THREADING_MODE): DEDICATED\n" in result.stdout
    assert "  aeron.archive.control.channel (AERON_ARCHIVE_CONTROL_CHANNEL): (unset)\n" in result.stdout


@pytest.mark.parametrize("bad, message", [
    ("aeron.archive.segment.file.length=3", "aeron.archive.segment.file.length=3"),
    (None, "aeron.archive.control.channel must be set"),                  # control channel enabled, none given
    ("aeron.archive.authorisation.service.supplier=no.such.module:thing", "authorisation service supplier"),
    ("aeron.archive.nonsense=1", "unknown archive property 'aeron.archive.nonsense'"),
    ("aeron.term.buffer.length=3", "aeron.term.buffer.length"),          # a bad driver setting
])
def test_a_bad_configuration_starts_nothing_and_makes_no_directory(shm_dir, bad, message):
    driver_dir, archive_dir = shm_dir / "driver", shm_dir / "archive"
    args = ["--embedded-driver", f"aeron.dir={driver_dir}", f"aeron.archive.dir={archive_dir}"]
    if bad is None:
        args.append("aeron.archive.recording.events.enabled=false")
    else:
        args += [f"aeron.archive.control.channel=aeron:udp?endpoint=localhost:{free_port()}", bad]
    result = archive_main(*args)
    assert result.returncode == 1 and message in result.stderr, result.stderr
    assert "ConfigurationError" in result.stderr
    assert sorted(os.listdir(shm_dir)) == []


def test_a_launch_that_fails_removes_the_directories_it_made(shm_dir):
    # a running archive owns archive_dir: a second one with an embedded driver fails after its driver started
    driver = MediaDriver.launch(driver_context(aeron_dir=str(shm_dir / "driver")))
    archive_dir = shm_dir / "archive"
    try:
        with Archive.launch(archive_context(str(archive_dir), aeron_dir=driver.aeron_dir)):
            before = sorted(os.listdir(archive_dir))
            second_driver = shm_dir / "second-driver"
            result = archive_main("--embedded-driver", f"aeron.dir={second_driver}", f"aeron.archive.dir={archive_dir}",
                                  "aeron.archive.control.channel.enabled=false", "aeron.archive.threading.mode=SHARED")
            assert result.returncode == 1 and "ActiveArchiveError: active mark file detected" in result.stderr
            assert not second_driver.exists()                  # the embedded driver's directory went with it
            assert sorted(os.listdir(archive_dir)) == before   # the running archive's directory is untouched
    finally:
        driver.close()


SUPPLIED = []


def counting_supplier():
    """An authorisation service supplier the property names (tests.archive.test_main:counting_supplier)."""
    SUPPLIED.append(1)
    return ALLOW_ALL


def test_validating_first_calls_the_authorisation_supplier_once(shm_dir):
    SUPPLIED.clear()
    ctx = ArchiveContext({"aeron.archive.authorisation.service.supplier": "tests.archive.test_main:counting_supplier"},
                         environ={}, archive_dir=str(shm_dir / "archive"), control_channel_enabled=False)
    ctx.validate()
    ctx.validate()
    ctx.conclude()
    assert SUPPLIED == [1] and ctx.authorisation_service is ALLOW_ALL
