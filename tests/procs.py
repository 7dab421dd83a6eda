# SPDX-License-Identifier: Apache-2.0
"""Starting and stopping drivers and sample clients in subprocesses for tests: our driver
(`python -m aeron.driver`), the official `aeronmd`, and our samples. Every wait is bounded; callers stop
what they started in a finally."""
from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence

import pytest

from tests.conftest import PROJECT_ROOT
from tests.support import driver_heartbeat_ms

DRIVER_WAIT_S = 10.0


_EVENT_LOG_SETTINGS = ("AERON_EVENT_CLUSTER_LOG", "AERON_EVENT_CLUSTER_STEPS")


def client_env() -> dict[str, str]:
    """The environment without AERON_* settings (so a client only sees the directory it is given), but for the debug
    event log's (aeron/common/event_log.py: its file, which the processes of a cluster share, and its steps)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AERON_") or k in _EVENT_LOG_SETTINGS}
    env["PYTHONPATH"] = str(PROJECT_ROOT)
    return env


def wait_for_cnc(proc: subprocess.Popen, aeron_dir: str, what: str) -> subprocess.Popen:
    """Wait until the driver ``proc`` has made its cnc.dat ready (the version written last) and written its first
    heartbeat (a client attaching before it finds none)."""
    cnc = os.path.join(aeron_dir, "cnc.dat")
    deadline = time.monotonic() + DRIVER_WAIT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out, err = proc.communicate(timeout=5)
            pytest.fail(f"{what} exited early rc={proc.returncode}\n{out}\n{err}")
        try:
            with open(cnc, "rb") as f:
                ready = f.read(4) not in (b"", b"\0\0\0\0")
            if ready and driver_heartbeat_ms(aeron_dir) > 0:
                return proc
        except OSError:
            pass
        time.sleep(0.05)
    stop(proc)
    pytest.fail(f"{what} did not create {cnc} in time")
    raise AssertionError("unreachable")


def start_our_driver(aeron_dir: str, *extra: str) -> subprocess.Popen:
    """Our driver as its own process: SHARED mode, backoff idle, 64 KiB IPC terms, 1 MiB of counters."""
    args = [sys.executable, "-m", "aeron.driver", f"aeron.dir={aeron_dir}", "aeron.dir.delete.on.start=true",
            "aeron.dir.delete.on.shutdown=true", "aeron.threading.mode=SHARED", "aeron.shared.idle.strategy=backoff",
            "aeron.ipc.term.buffer.length=64k", "aeron.counters.buffer.length=1m", *extra]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=client_env())
    return wait_for_cnc(proc, aeron_dir, "our driver")


def start_aeronmd(exe: str, aeron_dir: str, **settings: str) -> subprocess.Popen:
    """The official C driver with the same settings as start_our_driver (overridable by AERON_* keywords)."""
    env = client_env()
    env.update(AERON_DIR=aeron_dir, AERON_DIR_DELETE_ON_START="1", AERON_DIR_DELETE_ON_SHUTDOWN="1",
               AERON_THREADING_MODE="SHARED", AERON_SHARED_IDLE_STRATEGY="backoff",
               AERON_TERM_BUFFER_LENGTH="65536", AERON_IPC_TERM_BUFFER_LENGTH="65536",
               AERON_COUNTERS_BUFFER_LENGTH="1048576")
    env.update(settings)
    proc = subprocess.Popen([exe], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    return wait_for_cnc(proc, aeron_dir, "aeronmd")


def stop(proc: subprocess.Popen | None, sig: int = signal.SIGINT, timeout: float = 10.0) -> tuple[str, str]:
    """Stop a process we started and close its pipes; returns (stdout, stderr) not yet read."""
    if proc is None:
        return "", ""
    if proc.poll() is None:
        proc.send_signal(sig)
    pump = getattr(proc, "pump", None)
    if pump is None:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate(timeout=5)
        return out or "", err or ""
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)
    pump.join(5)
    lines = []
    while True:
        try:
            line = proc.line_queue.get_nowait()
        except queue.Empty:
            break
        if line is not None:
            lines.append(line)
    err = proc.stderr.read() if proc.stderr is not None else ""
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
    return "".join(lines), err or ""


def run(args: Sequence[str], timeout: float = 20.0) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), capture_output=True, text=True, timeout=timeout, env=client_env())


def sample(name: str, *args: str) -> list[str]:
    """Command line of one of our samples (`python -m aeron.samples.<name>`)."""
    return [sys.executable, "-m", f"aeron.samples.{name}", *args]


def popen(args: Sequence[str], stdin: int | None = None) -> subprocess.Popen:
    """A client process whose stdout lines a thread pumps into ``proc.line_queue`` (None at end of file), so
    waiting for a line never stalls on text the pipe reader already buffered. ``stdin=subprocess.PIPE``: a pipe the
    test writes to (or closes) to tell the process something."""
    proc = subprocess.Popen(list(args), stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=client_env(), bufsize=1)
    proc.line_queue = queue.Queue()         # type: ignore[attr-defined]

    def pump() -> None:
        for line in proc.stdout:            # type: ignore[union-attr]
            proc.line_queue.put(line)       # type: ignore[attr-defined]
        proc.line_queue.put(None)           # type: ignore[attr-defined]
    proc.pump = threading.Thread(target=pump, name=f"pump-{proc.pid}", daemon=True)     # type: ignore[attr-defined]
    proc.pump.start()                       # type: ignore[attr-defined]
    return proc


def wait_for_line(proc: subprocess.Popen, needle: str, timeout: float = 10.0) -> list[str]:
    """Read ``proc``'s stdout lines (from :func:`popen`) until one contains ``needle``; returns the lines read.
    Fails on timeout or end of output."""
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    while True:
        try:
            line = proc.line_queue.get(timeout=max(0.0, deadline - time.monotonic()))   # type: ignore[attr-defined]
        except queue.Empty:
            break
        if line is None:
            break
        lines.append(line)
        if needle in line:
            return lines
    pytest.fail(f"no line with {needle!r} within {timeout} s; got {lines!r}")
    raise AssertionError("unreachable")
