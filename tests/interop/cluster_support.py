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
import sys
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

    def drain(self) -> list[str]:
        """Every line read so far (those not yet waited for moved into ``lines``)."""
        while True:
            try:
                self.lines.append(self._queue.get_nowait())
            except queue.Empty:
                return self.lines

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


class MemberProcess:
    """One of our members as its own process (``python -m aeron.cluster``) with Java's container beside it, each
    member in its own directory under ``base``."""

    def __init__(self, member_id: int, members: str, base: pathlib.Path, classpath: str, java: bool = False,
                 **overrides: str) -> None:
        self.java = java
        self.member_id = member_id
        self.members = members
        self.dir = base / f"m{member_id}"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.classpath = classpath
        self.overrides = overrides
        self.proc: subprocess.Popen | None = None
        self.container: subprocess.Popen | None = None
        self.service_out: LineReader | None = None

    @property
    def aeron_dir(self) -> str:
        return str(self.dir / "driver")

    @property
    def cluster_dir(self) -> str:
        return str(self.dir / "cluster")

    def start(self, timeout: float = 60.0) -> None:
        """Start the member, and its container once the member runs. A member killed moments ago leaves mark
        files that look alive for 10 s: the start is retried until they are stale."""
        props = member_properties(self.member_id, self.members, self.cluster_dir, **{
            "aeron.dir": self.aeron_dir, "aeron.archive.dir": str(self.dir / "archive"),
            "aeron.archive.segment.file.length": "262144", "aeron.threading.mode": "SHARED",
            "aeron.archive.threading.mode": "SHARED", **self.overrides})
        if self.java:
            archive_endpoint = self.members.split("|")[self.member_id].split(",")[5]
            props.update({"aeron.archive.control.channel": f"aeron:udp?endpoint={archive_endpoint}",
                          "aeron.archive.replication.channel": "aeron:udp?endpoint=127.0.0.1:0",
                          "aeron.archive.id": str(100 + self.member_id), "aeron.dir.delete.on.start": "true"})
            command = ["java", *JAVA_OPENS, "-cp", self.classpath, *[f"-D{k}={v}" for k, v in props.items()],
                       "io.aeron.cluster.ClusteredMediaDriver"]
            ready = "ready"
        else:
            command = [sys.executable, "-m", "aeron.cluster", *[f"{k}={v}" for k, v in props.items()]]
            ready = "running (aeron.dir"
        deadline = time.monotonic() + timeout
        while True:
            seen = len(self.log_text())
            if self.java:
                # a killed member's cnc.dat still holds its counters: gone, they cannot pass for the new process's
                (pathlib.Path(self.aeron_dir) / "cnc.dat").unlink(missing_ok=True)
            log = open(self.dir.with_suffix(".log"), "a")
            try:
                self.proc = subprocess.Popen(command, cwd=str(REPO), env=client_env(), stdout=log,
                                             stderr=subprocess.STDOUT)
            finally:
                log.close()
            if self.java:
                # Java's ClusteredMediaDriver prints nothing when it is up: its counters say so
                while self.proc.poll() is None and self.counters()[0] is None:
                    if time.monotonic() > deadline:
                        raise AssertionError(f"member {self.member_id} did not start: {self.log_text()[-2000:]}")
                    time.sleep(0.2)
                if self.proc.poll() is None:
                    break
            while self.proc.poll() is None and ready not in self.log_text()[seen:]:
                if time.monotonic() > deadline:
                    raise AssertionError(f"member {self.member_id} did not start: {self.log_text()[-2000:]}")
                time.sleep(0.1)
            if self.proc.poll() is None:
                break
            if time.monotonic() > deadline:
                raise AssertionError(f"member {self.member_id} did not start: {self.log_text()[-2000:]}")
            time.sleep(1)
        self.container, self.service_out = start_container(self.classpath, self.aeron_dir, self.cluster_dir)

    def log_text(self) -> str:
        path = self.dir.with_suffix(".log")
        return path.read_text() if path.exists() else ""

    def counters(self) -> tuple[int | None, ...]:
        """(state, role, election state, commit position, leadership term id), Nones while unavailable."""
        return member_counters(self.aeron_dir)

    def is_leader(self) -> bool:
        state = self.counters()
        return state[1] == 2 and state[2] == 17

    def is_follower(self) -> bool:
        state = self.counters()
        return state[1] == 0 and state[2] == 17

    def kill(self) -> None:
        """SIGKILL the member (its driver dies with it), then stop its container."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        stop_process(self.container)

    def stop(self) -> None:
        """Stop the container, then the member."""
        stop_process(self.container)
        stop_process(self.proc, timeout=30)


REPO = pathlib.Path(__file__).resolve().parents[2]


def member_counters(aeron_dir: str) -> tuple[int | None, ...]:
    """The consensus module's (state, role, election state, commit position, leadership term id) counters in the
    driver at ``aeron_dir``, Nones while unavailable."""
    from aeron.cluster.cluster_control import map_counters
    from aeron.cluster.service.cluster_counters import ClusterCounters
    try:
        with map_counters(pathlib.Path(aeron_dir) / "cnc.dat") as mapped:
            return tuple(ClusterCounters.find_value(mapped.reader, type_id, 0)
                         for type_id in (200, 201, 207, 203, 239))
    except Exception:               # noqa: BLE001 - not there yet, or going away
        return (None,) * 5


def ingress_endpoints(members: str) -> str:
    """``<id>=<ingress endpoint>,...`` of a members string."""
    return ",".join(f"{m.split(',')[0]}={m.split(',')[1]}" for m in members.split("|"))
