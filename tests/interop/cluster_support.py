# SPDX-License-Identifier: Apache-2.0
"""What the cluster interop tests share: our Java test service and client (tests/interop/cluster_java, compiled
with javac once per session), Java's ClusteredServiceContainer running that service beside one of our members, a
Java AeronCluster client driven line by line, and the settings of a cluster member on loopback with short
timeouts (tests/cluster/system/members.py's members, with Java's container or as Java's ClusteredMediaDriver). Needs
AERON_JAVA_CP (the fixtures skip without it)."""
from __future__ import annotations

import os
import pathlib
import shutil
import subprocess

import pytest

from tests.cluster.system import members as _members
from tests.cluster.system.members import (  # noqa: F401 - theirs
    REPO,
    LineReader,
    close_pipes,
    cluster_members,
    ingress_endpoints,
    member_endpoints,
    read_counters,
    stop_process,
)
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

    def __init__(self, classpath: str, aeron_dir: str, endpoints: str) -> None:
        egress = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
        self.proc = subprocess.Popen(
            ["java", *JAVA_OPENS, "-cp", classpath, "ClusterTestClient", aeron_dir, endpoints, egress],
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


def member_properties(member_id: int, members: str, cluster_dir: str, **overrides: str) -> dict[str, str]:
    """:func:`tests.cluster.system.members.member_properties` with a 256 KiB log term."""
    return _members.member_properties(member_id, members, cluster_dir, **{
        "aeron.cluster.log.channel": "aeron:udp?term-length=256k", **overrides})


class MemberProcess(_members.MemberProcess):
    """One member as its own process, ours (``python -m aeron.cluster``) or with ``java`` Java's
    ``ClusteredMediaDriver``, with Java's container running ClusterTestService beside it (its output in
    ``service_out``)."""

    def __init__(self, member_id: int, members: str, base: pathlib.Path, classpath: str, java: bool = False,
                 **overrides: str) -> None:
        super().__init__(member_id, members, base, service=None, **overrides)
        self.java = java
        self.classpath = classpath
        self.service_out: LineReader | None = None

    def properties(self) -> dict[str, str]:
        props = member_properties(self.member_id, self.members, self.cluster_dir, **{
            "aeron.dir": self.aeron_dir, "aeron.archive.dir": str(self.dir / "archive"),
            "aeron.archive.segment.file.length": "262144", "aeron.threading.mode": "SHARED",
            "aeron.archive.threading.mode": "SHARED", **self.overrides})
        if self.java:
            props.update({"aeron.archive.control.channel": f"aeron:udp?endpoint={self.endpoints[5]}",
                          "aeron.archive.replication.channel": "aeron:udp?endpoint=127.0.0.1:0",
                          "aeron.archive.id": str(100 + self.member_id), "aeron.dir.delete.on.start": "true"})
        return props

    def command(self) -> list[str]:
        if not self.java:
            return super().command()
        # a killed member's cnc.dat still holds its counters: gone, they cannot pass for the new process's
        (pathlib.Path(self.aeron_dir) / "cnc.dat").unlink(missing_ok=True)
        return ["java", *JAVA_OPENS, "-cp", self.classpath, *[f"-D{k}={v}" for k, v in self.properties().items()],
                "io.aeron.cluster.ClusteredMediaDriver"]

    def is_ready(self, output: str) -> bool:
        # Java's ClusteredMediaDriver prints nothing when it is up: its counters say so
        if self.java:
            return read_counters(self.aeron_dir).state is not None
        return super().is_ready(output)

    def start_services(self) -> None:
        self.container_proc, self.service_out = start_container(self.classpath, self.aeron_dir, self.cluster_dir)

    def stop_services(self, kill: bool = False) -> None:
        stop_process(self.container_proc)
        self.container_proc = None


