# SPDX-License-Identifier: Apache-2.0
"""What a client says when it finds no usable driver: a WARNING at once naming the directory and how to start
a driver (and the same in the DriverTimeoutError, the timeout kept), and an OSError at once for a cnc.dat that
exists but cannot be mapped (permission denied, a directory, a FIFO) instead of waiting out the timeout."""
from __future__ import annotations

import errno
import logging
import os
import subprocess
import threading

import pytest

from aeron import Aeron, Context, MediaDriver
from aeron.client.aeron import connect_to_driver
from aeron.common.cnc_attach import cnc_open_error, driver_pid_is_gone, no_driver_hint
from aeron.common.errors import DriverTimeoutError
from aeron.common.paths import default_aeron_dir
from tests.client.conftest import driver_context

LOGGER = "aeron.client.aeron"
LONG_TIMEOUT_MS = 60_000            # a test that waited this long would have failed by the pytest timeout


class _Captured(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []
        self.seen = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        self.seen.set()


@pytest.fixture
def warnings_log():
    handler = _Captured()
    logger = logging.getLogger(LOGGER)
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


def test_no_driver_warns_while_waiting_then_connects_once_a_driver_starts(shm_dir, warnings_log):
    aeron_dir = str(shm_dir / "late")
    result: dict[str, object] = {}

    def connect() -> None:
        try:
            result["client"] = Aeron.connect(Context(aeron_dir, driver_timeout_ms=LONG_TIMEOUT_MS))
        except BaseException as exc:      # noqa: BLE001 - reported by the assertion below
            result["error"] = exc

    thread = threading.Thread(target=connect)
    thread.start()
    try:
        assert warnings_log.seen.wait(20), "no warning while waiting for a driver"
        (record,) = warnings_log.records
        text = record.getMessage()
        assert record.levelno == logging.WARNING
        assert aeron_dir in text and "does not exist" in text
        assert f"AERON_DIR={aeron_dir} python -m aeron.driver" in text
        assert "MediaDriver.launch_embedded()" in text
        assert thread.is_alive()          # still waiting: the warning did not end the wait
        with MediaDriver.launch(driver_context(aeron_dir=aeron_dir)):
            thread.join(30)
            assert not thread.is_alive()
            assert "error" not in result, result
            client = result["client"]
            assert isinstance(client, Aeron)
            client.close()
    finally:
        thread.join(30)
    assert len(warnings_log.records) == 1         # once per connect, not once per retry


def test_no_driver_timeout_error_names_the_dir_and_how_to_start_one(shm_dir, warnings_log):
    aeron_dir = str(shm_dir / "absent")
    with pytest.raises(DriverTimeoutError) as info:
        Aeron.connect(Context(aeron_dir, driver_timeout_ms=200))
    text = str(info.value)
    assert f"CnC file not created: {aeron_dir}/cnc.dat" in text
    assert "python -m aeron.driver" in text and "MediaDriver.launch_embedded()" in text
    assert len(warnings_log.records) == 1


def test_the_hint_leaves_out_aeron_dir_for_the_default_directory():
    assert "`python -m aeron.driver`" in no_driver_hint(default_aeron_dir())
    assert "AERON_DIR=/x/y python -m aeron.driver" in no_driver_hint("/x/y")


def test_a_dead_drivers_directory_is_reported_as_not_running(shm_dir, warnings_log):
    aeron_dir = str(shm_dir / "dead")
    with MediaDriver.launch(driver_context(aeron_dir=aeron_dir)):
        pass                               # closed: heartbeat -1, the directory stays
    with pytest.raises(DriverTimeoutError, match="no driver heartbeat"):
        Aeron.connect(Context(aeron_dir, driver_timeout_ms=200))
    (record,) = warnings_log.records
    assert f"the media driver of {aeron_dir} (pid {os.getpid()}) is not running (was shut down)" \
        in record.getMessage()


def test_cnc_file_that_is_a_directory_fails_at_once(shm_dir):
    (shm_dir / "cnc.dat").mkdir()
    with pytest.raises(IsADirectoryError) as info:
        Aeron.connect(Context(str(shm_dir), driver_timeout_ms=LONG_TIMEOUT_MS))
    assert info.value.errno == errno.EISDIR
    assert info.value.filename == str(shm_dir / "cnc.dat")
    assert "is a directory" in str(info.value) and str(shm_dir / "cnc.dat") in str(info.value)


def test_cnc_file_that_is_a_fifo_fails_at_once(shm_dir):
    os.mkfifo(shm_dir / "cnc.dat")
    with pytest.raises(OSError) as info:
        Aeron.connect(Context(str(shm_dir), driver_timeout_ms=LONG_TIMEOUT_MS))
    assert not isinstance(info.value, DriverTimeoutError)
    assert info.value.errno == errno.ENODEV
    assert "not a regular file" in str(info.value) and str(shm_dir / "cnc.dat") in str(info.value)


def test_aeron_dir_that_is_a_file_fails_at_once(shm_dir):
    (shm_dir / "file").write_bytes(b"")
    with pytest.raises(NotADirectoryError):
        Aeron.connect(Context(str(shm_dir / "file"), driver_timeout_ms=LONG_TIMEOUT_MS))


@pytest.mark.parametrize("code", [errno.EACCES, errno.EPERM])
def test_permission_errors_map_to_permission_denied_with_the_path(code):
    error = cnc_open_error("/dev/shm/aeron-x/cnc.dat", PermissionError(code, os.strerror(code)))
    assert isinstance(error, PermissionError) and error.errno == code
    assert error.filename == "/dev/shm/aeron-x/cnc.dat"
    assert str(error).startswith(f"[Errno {code}] permission denied")
    assert "/dev/shm/aeron-x/cnc.dat" in str(error)


def test_other_errors_keep_their_errno_and_name_the_path():
    error = cnc_open_error("/p/cnc.dat", OSError(errno.EIO, os.strerror(errno.EIO)))
    assert type(error) is OSError and error.errno == errno.EIO
    assert "input/output error" in str(error) and "/p/cnc.dat" in str(error)


def _connect_in_child(aeron_dir: str, as_nobody: bool) -> str:
    """Connect from a forked child (dropping root first when asked) and return what it raised."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:                          # child: no pytest machinery, just the attempt and an exit code
        try:
            os.close(read_end)
            if as_nobody:
                os.setgroups([])
                os.setgid(65534)
                os.setuid(65534)
            try:
                connect_to_driver(Context(aeron_dir, driver_timeout_ms=LONG_TIMEOUT_MS).conclude())
                message = "connected"
            except BaseException as exc:  # noqa: BLE001 - sent to the parent
                message = f"{type(exc).__name__}|{exc}"
            os.write(write_end, message.encode())
        finally:
            os._exit(0)
    os.close(write_end)
    try:
        chunks = []
        while chunk := os.read(read_end, 65536):
            chunks.append(chunk)
    finally:
        os.close(read_end)
        os.waitpid(pid, 0)
    return b"".join(chunks).decode()


def test_unreadable_cnc_file_says_permission_denied_at_once(shm_dir):
    """chmod 000 as another user: root reads anything, so the attempt runs in a child that drops to nobody."""
    as_nobody = os.geteuid() == 0
    with MediaDriver.launch(driver_context(aeron_dir=str(shm_dir / "d"))) as driver:
        cnc = os.path.join(driver.aeron_dir, "cnc.dat")
        os.chmod(shm_dir, 0o755)
        os.chmod(driver.aeron_dir, 0o755)
        os.chmod(cnc, 0o600 if as_nobody else 0o000)
        outcome = _connect_in_child(driver.aeron_dir, as_nobody)
    name, _, message = outcome.partition("|")
    assert name == "PermissionError", outcome
    assert "permission denied" in message and cnc in message


def test_pid_liveness():
    assert not driver_pid_is_gone(os.getpid())
    assert not driver_pid_is_gone(0) and not driver_pid_is_gone(-5) and not driver_pid_is_gone(1 << 40)
    child = subprocess.Popen(["true"])
    assert not driver_pid_is_gone(1)     # init: someone else's or ours, alive either way
    child.wait()
    assert driver_pid_is_gone(child.pid)


def test_an_unreaped_child_counts_as_gone():
    child = subprocess.Popen(["true"])
    try:
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)   # exited, left a zombie
        assert driver_pid_is_gone(child.pid)
    finally:
        child.wait()


def test_a_sized_but_uninitialised_cnc_file_is_waited_for_not_raised(shm_dir):
    # A driver reserves and sizes cnc.dat before it writes the version last: a client that maps it in between
    # must go on waiting (as the C and Java clients do), not fail with CncNotInitialisedError.
    (shm_dir / "cnc.dat").write_bytes(bytes(1 << 20))
    with pytest.raises(DriverTimeoutError, match="not initialised"):
        connect_to_driver(Context(str(shm_dir), driver_timeout_ms=200))
