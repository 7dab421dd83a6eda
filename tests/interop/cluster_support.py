# SPDX-License-Identifier: Apache-2.0
"""What the cluster interop tests share: our Java test service and client (tests/interop/cluster_java, compiled
with javac once per session), Java's ClusteredServiceContainer running that service beside one of our members, a
Java AeronCluster client driven line by line, and the settings of a cluster member on loopback with short
timeouts. Needs AERON_JAVA_CP (the fixtures skip without it)."""
from __future__ import annotations

import os
import pathlib
import queue
import shutil
import subprocess
import threading
import time

import pytest

from tests.procs import client_env
from tests.support import free_port

JAVA_SOURCES = pathlib.Path(__file__).resolve().parent / "cluster_java"
JAVA_OPENS = ["--add-opens", "java.base/jdk.internal.misc=ALL-UNNAMED",
              "--add-opens", "java.base/java.util.zip=ALL-UNNAMED"]
MS = 1_000_000


@pytest.fixture(scope="session")
def cluster_java(tmp_path_factory):
    """The Java classpath with our compiled test service and client: ``(classpath, classes_dir)``."""
    java_cp = os.environ.get("AERON_JAVA_CP")
    if not java_cp:
        pytest.skip("AERON_JAVA_CP is not set: the official Java cluster is not available")
    if shutil.which("javac") is None or shutil.which("java") is None:
        pytest.skip("javac/java not installed")
    classes = tmp_path_factory.mktemp("cluster_java")
    sources = sorted(str(p) for p in JAVA_SOURCES.glob("*.java"))
    subprocess.run(["javac", "-cp", java_cp, "-d", str(classes), *sources], check=True, timeout=180,
                   capture_output=True)
    return f"{java_cp}:{classes}", classes


class LineReader:
    """Collects a process's stdout lines on a thread, so tests can wait for one with a deadline."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc
        self.lines: list[str] = []
        self._queue: queue.Queue[str] = queue.Queue()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        try:
            for line in self.proc.stdout:
                self._queue.put(line.rstrip("\n"))
        except (OSError, ValueError):
            pass                        # the pipe was closed under us

    def join(self, timeout: float = 5.0) -> None:
        """Wait for the reader to reach the end of the output."""
        self._thread.join(timeout)

    def wait_for(self, prefix: str, timeout: float = 30.0) -> str:
        """The next line starting with ``prefix`` (lines before it are kept in ``lines``)."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"no line starting {prefix!r} within {timeout}s; seen: {self.lines[-30:]}")
            try:
                line = self._queue.get(timeout=min(remaining, 0.5))
            except queue.Empty:
                if self.proc.poll() is not None and self._queue.empty():
                    raise AssertionError(f"process exited ({self.proc.returncode}) before {prefix!r}; seen: "
                                         f"{self.lines[-30:]}") from None
                continue
            self.lines.append(line)
            if line.startswith(prefix):
                return line


def start_container(classpath: str, aeron_dir: str, cluster_dir: str, cluster_id: int = 0,
                    service_id: int = 0) -> tuple[subprocess.Popen, LineReader]:
    """Java's ClusteredServiceContainer running ClusterTestService on the driver at ``aeron_dir``."""
    args = ["java", *JAVA_OPENS, "-cp", classpath,
            f"-Daeron.dir={aeron_dir}", f"-Daeron.cluster.dir={cluster_dir}", f"-Daeron.cluster.id={cluster_id}",
            f"-Daeron.cluster.service.id={service_id}", "-Daeron.cluster.service.class.name=ClusterTestService",
            "-Daeron.client.liveness.timeout=60000000000",
            "io.aeron.cluster.service.ClusteredServiceContainer"]
    proc = subprocess.Popen(args, env=client_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return proc, LineReader(proc)


class JavaClient:
    """Java's AeronCluster client (our ClusterTestClient) on the driver at ``aeron_dir``."""

    def __init__(self, classpath: str, aeron_dir: str, ingress_endpoints: str) -> None:
        egress = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
        self.proc = subprocess.Popen(
            ["java", *JAVA_OPENS, "-cp", classpath, "ClusterTestClient", aeron_dir, ingress_endpoints, egress],
            env=client_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.out = LineReader(self.proc)

    def command(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def send(self, text: str) -> None:
        self.command(f"send {text}")
        self.out.wait_for(f"SENT {text}")

    def expect(self, text: str, timeout: float = 40.0) -> None:
        """Wait (up to the client's 30 s) for an egress message equal to ``text``."""
        self.command(f"await {text}")
        line = self.out.wait_for("", timeout)
        while line not in (f"GOT {text}", f"TIMEOUT {text}"):
            line = self.out.wait_for("", timeout)
        assert line == f"GOT {text}", self.out.lines[-30:]

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.command("close")
                self.proc.wait(timeout=20)
            except (BrokenPipeError, subprocess.TimeoutExpired, OSError):
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.out.join()
        close_pipes(self.proc)


def stop_process(proc: subprocess.Popen | None, timeout: float = 20.0) -> None:
    """SIGTERM, then SIGKILL after ``timeout``; its pipes closed."""
    if proc is None:
        return
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    close_pipes(proc)


def close_pipes(proc: subprocess.Popen) -> None:
    """Close the process's stdin and stdout (the reader thread ends at end of file)."""
    for stream in (proc.stdin, proc.stdout):
        if stream is not None:
            try:
                stream.close()
            except OSError:
                pass


def member_endpoints(member_id: int) -> str:
    """``<id>,ingress,consensus,log,catchup,archive`` on free loopback ports (catch-up on an ephemeral port)."""
    ports = [free_port() for _ in range(4)]
    return (f"{member_id},127.0.0.1:{ports[0]},127.0.0.1:{ports[1]},127.0.0.1:{ports[2]},127.0.0.1:0,"
            f"127.0.0.1:{ports[3]}")


def cluster_members(count: int) -> str:
    """A members string of ``count`` members on free loopback ports."""
    return "|".join(member_endpoints(i) for i in range(count))


def member_properties(member_id: int, members: str, cluster_dir: str, **overrides: str) -> dict[str, str]:
    """A member's consensus module properties with test timeouts (heartbeat 2 s, election 300 ms)."""
    props = {
        "aeron.cluster.member.id": str(member_id),
        "aeron.cluster.members": members,
        "aeron.cluster.dir": cluster_dir,
        "aeron.cluster.ingress.channel": "aeron:udp?term-length=64k",
        "aeron.cluster.log.channel": "aeron:udp?term-length=256k",
        "aeron.cluster.replication.channel": "aeron:udp?endpoint=127.0.0.1:0",
        "aeron.cluster.leader.heartbeat.timeout": "2s",
        "aeron.cluster.leader.heartbeat.interval": "100ms",
        "aeron.cluster.startup.canvass.timeout": "4s",
        "aeron.cluster.election.timeout": "300ms",
        "aeron.cluster.election.status.interval": "50ms",
        "aeron.cluster.session.timeout": "10s",
        "aeron.cluster.termination.timeout": "5s",
    }
    props.update(overrides)
    return props
