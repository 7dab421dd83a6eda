# SPDX-License-Identifier: Apache-2.0
"""Starting and stopping drivers and sample clients in subprocesses for tests: our driver
(`python -m aeron.driver`), the official `aeronmd`, and our samples. Every wait is bounded; callers stop
what they started in a finally."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence

import pytest

from tests.conftest import PROJECT_ROOT

DRIVER_WAIT_S = 10.0


def client_env() -> dict[str, str]:
    """The environment without AERON_* settings (so a client only sees the directory it is given)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AERON_")}
    env["PYTHONPATH"] = str(PROJECT_ROOT)
    return env


def wait_for_cnc(proc: subprocess.Popen, aeron_dir: str, what: str) -> subprocess.Popen:
    cnc = os.path.join(aeron_dir, "cnc.dat")
    deadline = time.monotonic() + DRIVER_WAIT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out, err = proc.communicate(timeout=5)
            pytest.fail(f"{what} exited early rc={proc.returncode}\n{out}\n{err}")
        try:
            with open(cnc, "rb") as f:
                if f.read(4) not in (b"", b"\0\0\0\0"):
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
    proc = wait_for_cnc(proc, aeron_dir, "aeronmd")
    time.sleep(0.2)         # its first heartbeat: the client attach wants a non-zero one
    return proc


def stop(proc: subprocess.Popen | None, sig: int = signal.SIGINT, timeout: float = 10.0) -> tuple[str, str]:
    """Stop a process we started and close its pipes; returns (stdout, stderr)."""
    if proc is None:
        return "", ""
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate(timeout=5)
    return out or "", err or ""


def run(args: Sequence[str], timeout: float = 20.0) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), capture_output=True, text=True, timeout=timeout, env=client_env())


def sample(name: str, *args: str) -> list[str]:
    """Command line of one of our samples (`python -m aeron.samples.<name>`)."""
    return [sys.executable, "-m", f"aeron.samples.{name}", *args]


def popen(args: Sequence[str]) -> subprocess.Popen:
    """A client process with line-buffered text pipes."""
    return subprocess.Popen(list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=client_env(), bufsize=1)


def wait_for_line(proc: subprocess.Popen, needle: str, timeout: float = 10.0) -> list[str]:
    """Read ``proc``'s stdout until a line containing ``needle``; returns the lines read. Fails on timeout."""
    import selectors
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if not sel.select(timeout=max(0.0, deadline - time.monotonic())):
                break
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            if needle in line:
                return lines
    pytest.fail(f"no line with {needle!r} within {timeout} s; got {lines!r}")
    raise AssertionError("unreachable")
