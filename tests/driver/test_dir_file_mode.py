# SPDX-License-Identifier: Apache-2.0
"""aeron.dir.file.mode: the permissions of every file and directory the driver creates, whatever the umask
(group-only sharing: files 0o660, directories 0o770); by default, as the C driver, 0o666/0o777 less the umask."""
from __future__ import annotations

import os
import stat

import pytest

from aeron import Aeron, Context
from aeron.common.errors import ConfigurationError
from aeron.driver import MediaDriver
from aeron.driver import Context as DriverContext
from aeron.driver.media_driver import dir_mode_for
from tests.driver.udp_helpers import driver_context, free_port, wait_for

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def umask_022():
    previous = os.umask(0o022)          # the usual umask, under which the default is world-readable
    try:
        yield
    finally:
        os.umask(previous)


def mode_of(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def modes_under(aeron_dir: str) -> dict[str, int]:
    out = {".": mode_of(aeron_dir)}
    for root, dirs, files in os.walk(aeron_dir):
        for name in dirs + files:
            path = os.path.join(root, name)
            out[os.path.relpath(path, aeron_dir)] = mode_of(path)
    return out


def run_ipc_and_udp(aeron_dir: str) -> dict[str, int]:
    """A client with an IPC publication and a UDP stream to itself: cnc.dat, loss report, a publication log of
    each kind and an image log exist; the modes of everything in the directory."""
    channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
    with Aeron.connect(Context(aeron_dir)) as client:
        client.add_publication("aeron:ipc", 10)
        sub = client.add_subscription(channel, 11)
        pub = client.add_publication(channel, 11)
        wait_for(lambda: pub.is_connected and sub.image_count == 1)
        modes = modes_under(aeron_dir)
    assert sum(p.startswith("publications/") for p in modes) == 2, modes
    assert sum(p.startswith("images/") for p in modes) == 1, modes
    assert {"cnc.dat", "loss-report.dat", "publications", "images"} <= modes.keys()
    return modes


def test_group_only_sharing_whatever_the_umask(shm_dir, umask_022):
    aeron_dir = str(shm_dir / "d")
    with MediaDriver.launch(driver_context(aeron_dir=aeron_dir, dir_file_mode="660")):
        modes = run_ipc_and_udp(aeron_dir)
    dirs = {".", "publications", "images"}
    assert {p: m for p, m in modes.items() if p in dirs} == {p: 0o770 for p in dirs}
    assert {p: m for p, m in modes.items() if p not in dirs} == {p: 0o660 for p in modes if p not in dirs}
    os.umask(0o077)                     # a stricter umask does not narrow it either
    with MediaDriver.launch(driver_context(aeron_dir=aeron_dir, dir_file_mode=0o660)) as driver:
        assert mode_of(os.path.join(aeron_dir, "cnc.dat")) == 0o660 and mode_of(aeron_dir) == 0o770
        driver.conductor.error_log.record(ValueError("kept for the next driver"))
    # a driver replacing this directory saves the old errors beside it, with the same mode
    with MediaDriver.launch(driver_context(aeron_dir=aeron_dir, dir_file_mode=0o640)):
        dumps = [name for name in os.listdir(shm_dir) if name.endswith("-error.log")]
        assert len(dumps) == 1
        assert mode_of(shm_dir / dumps[0]) == 0o640
        assert mode_of(aeron_dir) == 0o750 and mode_of(os.path.join(aeron_dir, "images")) == 0o750


def test_default_is_the_c_drivers_umask_rule(shm_dir, umask_022):
    aeron_dir = str(shm_dir / "d")
    with MediaDriver.launch(driver_context(aeron_dir=aeron_dir)):
        modes = run_ipc_and_udp(aeron_dir)
    dirs = {".", "publications", "images"}
    assert all(m == 0o755 for p, m in modes.items() if p in dirs), modes
    assert all(m == 0o644 for p, m in modes.items() if p not in dirs), modes


@pytest.mark.parametrize("text", ["660", "0660", "0o660", " 660 "])
def test_the_setting_is_octal(text):
    assert DriverContext(environ={}, dir_file_mode=text).dir_file_mode == 0o660
    assert DriverContext([f"aeron.dir.file.mode={text}"], environ={}).dir_file_mode == 0o660
    assert DriverContext(environ={"AERON_DIR_FILE_MODE": text}).dir_file_mode == 0o660


def test_the_setting_defaults_to_none_and_shows_in_octal():
    ctx = DriverContext(environ={})
    assert ctx.dir_file_mode is None and ctx.as_properties()["aeron.dir.file.mode"] == ""
    ctx.dir_file_mode = 0o600
    assert ctx.as_properties()["aeron.dir.file.mode"] == "0600"
    ctx.dir_file_mode = ""
    assert ctx.dir_file_mode is None


@pytest.mark.parametrize("bad", ["999", "1777", "0440", "060", "rw-rw----", 0o1000, -1, 0o400, True, 6.6])
def test_bad_modes_are_refused(bad):
    with pytest.raises(ConfigurationError, match="aeron.dir.file.mode"):
        DriverContext(environ={}, dir_file_mode=bad)


def test_dir_mode_adds_search_where_read_is_allowed():
    assert [dir_mode_for(m) for m in (0o600, 0o640, 0o660, 0o644, 0o666)] == [0o700, 0o750, 0o770, 0o755, 0o777]
