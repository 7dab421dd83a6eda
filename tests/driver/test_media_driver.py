# SPDX-License-Identifier: Apache-2.0
"""MediaDriver lifecycle: directory rules (active refused, stale replaced, delete on start/shutdown),
embedded launch, INVOKER mode, clean shutdown heartbeat, close idempotent, python -m aeron.driver."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from aeron.driver import Context, MediaDriver, ThreadingMode, is_driver_active
from aeron.driver import __main__ as driver_main
from aeron.common.errors import ActiveDriverError, AeronDirError, IllegalStateError
from tests.common.test_paths import in_mount_namespace, needs_userns
from tests import procs
from tests.conftest import PROJECT_ROOT
from tests.support import driver_heartbeat_ms

MIB = 1024 * 1024


def ctx_for(path, **kw):
    values = dict(aeron_dir=str(path), threading_mode="SHARED", counters_buffer_length=MIB,
                  ipc_term_buffer_length=65536)
    values.update(kw)
    return Context(environ={}, **values)


def test_second_driver_on_an_active_directory_is_refused(shm_dir):
    with MediaDriver.launch(ctx_for(shm_dir / "d")) as first:
        assert is_driver_active(first.aeron_dir, 10_000)
        with pytest.raises(ActiveDriverError, match="Active media driver detected: .*cnc.dat"):
            MediaDriver.launch(ctx_for(shm_dir / "d"))
        assert not first.is_closed
        # delete-on-start skips the check (as the C driver does)
    with MediaDriver.launch(ctx_for(shm_dir / "d", dir_delete_on_start=True)):
        pass


def test_clean_shutdown_leaves_heartbeat_minus_one_and_stale_directory_is_replaced(shm_dir):
    d = MediaDriver.launch(ctx_for(shm_dir / "d"))
    aeron_dir = d.aeron_dir
    old_pid_file = os.path.join(aeron_dir, "publications", "stale.logbuffer")
    open(old_pid_file, "w").close()
    d.close()
    d.close()                                  # idempotent
    assert d.is_closed
    assert driver_heartbeat_ms(aeron_dir) == -1
    assert not is_driver_active(aeron_dir, 10_000)
    assert sorted(os.listdir(aeron_dir)) == ["cnc.dat", "images", "loss-report.dat", "publications"]
    with MediaDriver.launch(ctx_for(shm_dir / "d")) as again:
        assert not os.path.exists(old_pid_file)
        assert driver_heartbeat_ms(again.aeron_dir) > 0


def test_delete_on_shutdown_and_embedded(shm_dir):
    with MediaDriver.launch(ctx_for(shm_dir / "d", dir_delete_on_shutdown=True)) as d:
        assert os.path.isdir(d.aeron_dir)
    assert not os.path.exists(d.aeron_dir)
    embedded = MediaDriver.launch_embedded(Context(environ={}, counters_buffer_length=MIB))
    try:
        assert embedded.aeron_dir.startswith("/dev/shm/")
        assert os.path.exists(os.path.join(embedded.aeron_dir, "cnc.dat"))
    finally:
        embedded.close()
    assert not os.path.exists(embedded.aeron_dir)


def test_invoker_mode_runs_only_when_invoked(shm_dir):
    with MediaDriver.launch(ctx_for(shm_dir / "d", threading_mode=ThreadingMode.INVOKER,
                                    timer_interval_ns=10_000_000)) as d:
        first = driver_heartbeat_ms(d.aeron_dir)
        time.sleep(0.05)
        assert driver_heartbeat_ms(d.aeron_dir) == first            # nobody runs the conductor
        time.sleep(0.02)
        d.do_work()
        assert driver_heartbeat_ms(d.aeron_dir) > first
    with pytest.raises(IllegalStateError):
        d.do_work()
    with MediaDriver.launch(ctx_for(shm_dir / "e")) as threaded, pytest.raises(IllegalStateError):
        threaded.do_work()


def test_python_m_aeron_driver_starts_logs_and_stops_on_sigterm(shm_dir):
    aeron_dir = shm_dir / "cli"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AERON_")}
    env.update(PYTHONPATH=str(PROJECT_ROOT), AERON_DIR=str(aeron_dir), AERON_THREADING_MODE="SHARED",
               AERON_COUNTERS_BUFFER_LENGTH="1m")
    proc = subprocess.Popen([sys.executable, "-m", "aeron.driver", "aeron.dir.delete.on.shutdown=true"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        procs.wait_for_cnc(proc, str(aeron_dir), "the driver")
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=10)
        assert proc.returncode == 0, err
        assert f"aeron.dir={aeron_dir}" in out
        assert "aeron.threading.mode=SHARED" in out and "aeron.counters.buffer.length=1048576" in out
        assert not aeron_dir.exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)


def test_python_m_aeron_driver_reports_bad_configuration(shm_dir):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AERON_")}
    env["PYTHONPATH"] = str(PROJECT_ROOT)
    proc = subprocess.run([sys.executable, "-m", "aeron.driver", f"aeron.dir={shm_dir}/x",
                           "aeron.ipc.term.buffer.length=12345"], capture_output=True, text=True, timeout=30, env=env)
    assert proc.returncode == 1
    assert "ConfigurationError" in proc.stderr and "aeron.ipc.term.buffer.length" in proc.stderr


def test_errors_of_a_stale_driver_are_saved_beside_the_directory(shm_dir):
    from tests.driver.rawclient import RawClient
    d = MediaDriver.launch(ctx_for(shm_dir / "d"))
    try:
        c = RawClient(d.aeron_dir)
        try:
            c.send(0x77, b"\0" * 16)                       # unknown command: error log only
            deadline = time.monotonic() + 5
            while c.counters.get_counter_value(15) == 0:
                assert time.monotonic() < deadline
                time.sleep(0.01)
        finally:
            c.close()
    finally:
        d.close()
    with MediaDriver.launch(ctx_for(shm_dir / "d")):
        saved = [p for p in os.listdir(shm_dir) if p.startswith("d-") and p.endswith("-error.log")]
        assert len(saved) == 1, os.listdir(shm_dir)
        text = (shm_dir / saved[0]).read_text()
        assert "command=119 unknown" in text and "1 distinct errors observed." in text


def test_python_m_aeron_driver_stops_on_an_accepted_terminate_driver_command(shm_dir):
    from aeron.common import command as cmd
    from tests.driver.rawclient import RawClient
    aeron_dir = shm_dir / "cli"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AERON_")}
    env["PYTHONPATH"] = str(PROJECT_ROOT)
    proc = subprocess.Popen([sys.executable, "-m", "aeron.driver", f"aeron.dir={aeron_dir}",
                             "aeron.counters.buffer.length=1m", "aeron.driver.termination.validator=allow"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 10
        while not (aeron_dir / "cnc.dat").exists():
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        c = RawClient(str(aeron_dir))
        try:
            c.send(cmd.TERMINATE_DRIVER, cmd.TerminateDriverCommand(c.client_id, -1, b"").encode())
        finally:
            c.close()
        out, err = proc.communicate(timeout=10)
        assert proc.returncode == 0, err
        assert "shutting down" in out
        assert driver_heartbeat_ms(str(aeron_dir)) == -1        # directory kept: delete-on-shutdown is off
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=5)


def test_a_symlinked_aeron_dir_is_refused_and_its_target_untouched(shm_dir):
    target = shm_dir / "elsewhere"
    target.mkdir()
    (target / "keep.txt").write_text("keep")
    link = shm_dir / "d"
    link.symlink_to(target, target_is_directory=True)
    for delete_on_start in (False, True):
        with pytest.raises(AeronDirError, match=f"{link} is a symbolic link"):
            MediaDriver.launch(ctx_for(link, dir_delete_on_start=delete_on_start))
    assert sorted(os.listdir(target)) == ["keep.txt"]       # nothing deleted there, no cnc.dat created there


def test_an_aeron_dir_of_another_user_is_refused(shm_dir, monkeypatch):
    aeron_dir = shm_dir / "d"
    aeron_dir.mkdir()
    (aeron_dir / "theirs.dat").write_bytes(b"x")
    monkeypatch.setattr(os, "geteuid", lambda: os.stat(aeron_dir).st_uid + 1)
    with pytest.raises(AeronDirError, match=f"{aeron_dir} is owned by uid"):
        MediaDriver.launch(ctx_for(aeron_dir, dir_delete_on_start=True))
    assert sorted(os.listdir(aeron_dir)) == ["theirs.dat"]


@needs_userns
def test_leftovers_refuse_a_start_and_are_reported_on_shutdown(shm_dir):
    out = in_mount_namespace("""
        import subprocess, sys
        from aeron.driver import Context, MediaDriver
        from aeron.common.errors import AeronDirError
        def ctx(path, **kw):
            return Context(environ={}, aeron_dir=path, threading_mode="SHARED", counters_buffer_length=1 << 20,
                           ipc_term_buffer_length=65536, **kw)
        old = sys.argv[1] + "/old"
        driver = MediaDriver.launch(ctx(old))
        driver.close()
        subprocess.run(["mount", "-t", "tmpfs", "none", old + "/images"], check=True)
        try:
            MediaDriver.launch(ctx(old, dir_delete_on_start=True)).close()
            print("started over leftovers")
        except AeronDirError as exc:
            print("refused:", [p for p, _ in exc.failures], exc, flush=True)
        driver = MediaDriver.launch(ctx(sys.argv[1] + "/new", dir_delete_on_shutdown=True))
        subprocess.run(["mount", "-t", "tmpfs", "none", driver.aeron_dir + "/images"], check=True)
        driver.close()
        """, str(shm_dir))
    assert out.returncode == 0, out.stderr
    old, new = shm_dir / "old", shm_dir / "new"
    assert out.stdout.startswith(f"refused: ['{old}/images'] could not remove the old aeron dir {old}: "
                                 f"{old}/images: Device or resource busy"), out.stdout
    assert (f"WARNING: aeron dir {new} not fully deleted on shutdown: {new}/images: Device or resource busy"
            in out.stderr), out.stderr
    assert sorted(os.listdir(new)) == ["images"]


@pytest.mark.parametrize("argv, expected", [
    (["-d", "/dev/shm/x"], ["aeron.dir=/dev/shm/x"]),
    (["--dir", "/dev/shm/x", "aeron.threading.mode=SHARED"], ["aeron.dir=/dev/shm/x", "aeron.threading.mode=SHARED"]),
    (["--dir=/dev/shm/y"], ["aeron.dir=/dev/shm/y"]),
    (["aeron.dir=/dev/shm/z"], ["aeron.dir=/dev/shm/z"]),
])
def test_python_m_aeron_driver_takes_dir_as_the_tools_do(argv, expected):
    assert driver_main._dir_option(argv) == expected


def test_python_m_aeron_driver_dir_option_needs_a_value():
    with pytest.raises(SystemExit, match="--dir needs a directory"):
        driver_main._dir_option(["--dir"])


def test_python_m_aeron_driver_starts_in_the_dir_given_by_dir(shm_dir):
    aeron_dir = shm_dir / "cli-dir"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AERON_")}
    env.update(PYTHONPATH=str(PROJECT_ROOT), AERON_THREADING_MODE="SHARED", AERON_COUNTERS_BUFFER_LENGTH="1m")
    proc = subprocess.Popen([sys.executable, "-m", "aeron.driver", "--dir", str(aeron_dir),
                             "aeron.dir.delete.on.shutdown=true"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 10
        while not (aeron_dir / "cnc.dat").exists():
            assert proc.poll() is None, proc.communicate(timeout=5)
            assert time.monotonic() < deadline
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=10)
        assert proc.returncode == 0, err
        assert f"aeron.dir={aeron_dir}" in out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
