# SPDX-License-Identifier: Apache-2.0
"""The one harness of the cluster interop tests: our Java test programs (tests/interop/cluster_java, compiled with
javac once per session: a test service, two AeronCluster clients and a whole Java member), members as processes
(ours, ``python -m aeron.cluster``, or Java's ``ClusteredMediaDriver``; each with Java's ClusteredServiceContainer
or ours running the same test service, or none), a Java AeronCluster client driven line by line, and the settings
of a cluster member on loopback with short timeouts. Needs AERON_JAVA_CP (the fixtures skip without it)."""
from __future__ import annotations

import io
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable

import pytest

from tests.cluster.system.members import (
    READY_LINE,
    LineReader,
    MemberCounters,
    MemberDirs,
    close_pipes,
    cluster_members,  # noqa: F401 - the interop tests take their members strings from here
    follows,
    ingress_endpoints,
    kill_process,
    leads,
    read_counters,
    start_until_ready,
    stop_process,
)
from tests.cluster.system.members import member_properties as system_member_properties
from tests.procs import client_env
from tests.support import free_port, restartable_port, wait_for

REPO = pathlib.Path(__file__).resolve().parents[2]
JAVA_SOURCES = pathlib.Path(__file__).resolve().parent / "cluster_java"
JAVA_OPENS = ["--add-opens", "java.base/jdk.internal.misc=ALL-UNNAMED",
              "--add-opens", "java.base/java.util.zip=ALL-UNNAMED"]
# small heaps and the C1 compiler only: up to six JVMs share two cores in these tests
JVM_OPTIONS = ["-Xms32m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto", *JAVA_OPENS,
               "--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED"]
# our test service, the twin of cluster_java/ClusterTestService.java, for our container
PYTHON_TEST_SERVICE = "tests.interop.cluster_test_service:ClusterTestService"


def java_classpath() -> str:
    """AERON_JAVA_CP, or skip the test."""
    value = os.environ.get("AERON_JAVA_CP")
    if not value:
        pytest.skip("AERON_JAVA_CP is not set: the official Java cluster is not available")
    if shutil.which("javac") is None or shutil.which("java") is None:
        pytest.skip("javac/java not installed")
    return value


@pytest.fixture(scope="session")
def cluster_java(tmp_path_factory):
    """The Java classpath with our compiled test programs: ``(classpath, classes_dir)``."""
    java_cp = java_classpath()
    classes = tmp_path_factory.mktemp("cluster_java")
    sources = sorted(str(p) for p in JAVA_SOURCES.glob("*.java"))
    done = subprocess.run(["javac", "-cp", java_cp, "-d", str(classes), *sources], timeout=300, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    return f"{java_cp}:{classes}", classes


def java(classpath: str, main_class: str, *args: str, timeout: float = 120,
         properties: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run a Java tool (``ClusterTool``, ``ArchiveTool``...) to its end: its output and exit status."""
    return subprocess.run(["java", *JVM_OPTIONS, *[f"-D{k}={v}" for k, v in (properties or {}).items()], "-cp",
                           classpath, main_class, *map(str, args)], capture_output=True, text=True, timeout=timeout,
                          env=client_env())


def cluster_tool(classpath: str, cluster_dir: str, *command: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Java's ClusterTool on ``cluster_dir``."""
    return java(classpath, "io.aeron.cluster.ClusterTool", cluster_dir, *command, timeout=timeout)


def our_cluster_tool(*args: object) -> tuple[int, str]:
    """Our ClusterTool (``aeron.cluster.tool``) run in this process: its exit status and output."""
    from aeron.cluster import tool
    out = io.StringIO()
    status = tool.main([str(a) for a in args], out=out)
    return status, out.getvalue()


def without_times(text: str) -> str:
    """ClusterTool output without what changes from one run to the next: the first line of each describe/errors
    block, the members' clocks and the mark files' activity (the components run on between two runs)."""
    text = re.sub(r"(currentTimeNs|timeOfLastAppendPositionNs|activityTimestamp)=-?\d+", r"\1=T", text)
    return re.sub(r"(?m)^Type: .*$", "Type: T", text)


def namespaces_work() -> bool:
    """Whether this process may make a network namespace (``unshare -n``) and bring its loopback up."""
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return False
    probe = subprocess.run(["unshare", "-n", "ip", "link", "set", "lo", "up"], capture_output=True, timeout=30)
    return probe.returncode == 0


def run_in_namespace(script: str, work: pathlib.Path, timeout: float, **env: str) -> tuple[int, dict[str, str]]:
    """Run the shell ``script`` in a network namespace of its own (for the tutorial's fixed ports), in ``work``
    (made here) with ``env`` beside WORK, CP (the Java classpath), JVM (JVM_OPTIONS) and PYTHON; its exit status
    and the text of every file it left in ``work``, by name (``script.err``: its stderr). Skips without Java or
    namespaces; the script's processes are killed when it overruns ``timeout``."""
    classpath = java_classpath()
    if not namespaces_work():
        pytest.skip("cannot make a network namespace here (needs unshare -n and ip)")
    work.mkdir()
    environment = client_env()
    environment.update(WORK=str(work), CP=classpath, JVM=" ".join(JVM_OPTIONS), PYTHON=sys.executable, **env)
    proc = subprocess.Popen(["unshare", "-n", "sh", "-c", script], env=environment, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)         # its nodes and clients too: they are in the script's group
        _, stderr = proc.communicate()
    files = {p.name: p.read_text(errors="replace") for p in work.iterdir() if p.is_file()}
    files["script.err"] = stderr
    return proc.returncode, files


def start_container(classpath: str, aeron_dir: str, cluster_dir: str, cluster_id: int = 0,
                    service_id: int = 0, python: bool = False) -> tuple[subprocess.Popen, LineReader]:
    """A ClusteredServiceContainer running ClusterTestService on the driver at ``aeron_dir``: Java's, or with
    ``python`` ours (``python -m aeron.cluster.service``) running the Python twin. Both print the same lines."""
    if python:
        args = [sys.executable, "-m", "aeron.cluster.service", f"aeron.dir={aeron_dir}",
                f"aeron.cluster.dir={cluster_dir}", f"aeron.cluster.id={cluster_id}",
                f"aeron.cluster.service.id={service_id}", f"aeron.cluster.service.class.name={PYTHON_TEST_SERVICE}"]
    else:
        args = ["java", *JVM_OPTIONS, "-cp", classpath,
                f"-Daeron.dir={aeron_dir}", f"-Daeron.cluster.dir={cluster_dir}", f"-Daeron.cluster.id={cluster_id}",
                f"-Daeron.cluster.service.id={service_id}", "-Daeron.cluster.service.class.name=ClusterTestService",
                "-Daeron.client.liveness.timeout=60000000000",
                "io.aeron.cluster.service.ClusteredServiceContainer"]
    proc = subprocess.Popen(args, cwd=str(REPO), env=client_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    return proc, LineReader(proc)


class JavaClient:
    """Java's AeronCluster client (our ClusterTestClient) on the driver at ``aeron_dir``."""

    def __init__(self, classpath: str, aeron_dir: str, ingress_endpoints: str) -> None:
        egress = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
        self.proc = subprocess.Popen(
            ["java", *JVM_OPTIONS, "-cp", classpath, "ClusterTestClient", aeron_dir, ingress_endpoints, egress],
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


# for tests whose client idles while a member restarts (the start blocks until a killed member's mark files are
# stale) and catches up: its session outlives that on a busy machine
IDLE_CLIENT_SESSION_TIMEOUT = {"aeron.cluster.session.timeout": "30s"}


def member_properties(member_id: int, members: str, cluster_dir: str, **overrides: str) -> dict[str, str]:
    """A member's consensus module properties with the system tests' timeouts (tests.cluster.system.members:
    heartbeat 2 s, election 300 ms) and a 256 KiB log term."""
    return system_member_properties(member_id, members, cluster_dir, **{
        "aeron.cluster.log.channel": "aeron:udp?term-length=256k", **overrides})


def java_archive_properties(member_id: int, members: str, host: str = "127.0.0.1") -> dict[str, str]:
    """What Java's ClusteredMediaDriver needs set that ours derives: its archive's control channel (the member's
    archive endpoint), replication channel and id, and a fresh driver directory."""
    archive_endpoint = members.split("|")[member_id].split(",")[5]
    return {"aeron.archive.control.channel": f"aeron:udp?endpoint={archive_endpoint}",
            "aeron.archive.replication.channel": f"aeron:udp?endpoint={host}:0",
            "aeron.archive.id": str(100 + member_id), "aeron.dir.delete.on.start": "true"}


class MemberProcess(MemberDirs):
    """A member as its own process, ours (``python -m aeron.cluster``) or with ``java`` Java's
    (``io.aeron.cluster.ClusteredMediaDriver``), with a container running the test service beside it: Java's
    (``service="java"``), ours (``"python"``), or none (``None``: the test brings its own). Each member has its own
    directory under ``base``. ``java_main`` is the main class of Java's member (perf/bench_cluster_three.py's
    BenchHostedNode hosts its service in the member's JVM)."""

    def __init__(self, member_id: int, members: str, base: pathlib.Path, classpath: str, java: bool = False,
                 service: str | None = "java",
                 container: Callable[[MemberProcess], tuple[subprocess.Popen, LineReader]] | None = None,
                 java_main: str = "io.aeron.cluster.ClusteredMediaDriver", **overrides: str) -> None:
        if service not in ("java", "python", None):
            raise ValueError(f"service must be 'java', 'python' or None, not {service!r}")
        self.java = java
        self.service = service
        # what starts the member's container once it runs, instead of the test service's (perf/bench_cluster_three.py)
        self.start_container = container
        self.java_main = java_main
        super().__init__(member_id, members, base)
        self.classpath = classpath
        self.overrides = overrides
        self.proc: subprocess.Popen | None = None
        self.container: subprocess.Popen | None = None
        self.service_out: LineReader | None = None

    def properties(self) -> dict[str, str]:
        """The member's properties: test timeouts, its directories, shared threading; for Java's, the archive's
        channels and id (ours derives them) and 64 KiB terms; the overrides last."""
        props = member_properties(self.member_id, self.members, self.cluster_dir, **{
            "aeron.dir": self.aeron_dir, "aeron.archive.dir": str(self.dir / "archive"),
            "aeron.archive.segment.file.length": "262144", "aeron.threading.mode": "SHARED",
            "aeron.archive.threading.mode": "SHARED"})
        if self.java:
            props.update(java_archive_properties(self.member_id, self.members))
            props.update({"aeron.term.buffer.length": "65536", "aeron.ipc.term.buffer.length": "65536"})
        props.update(self.overrides)
        return props

    @property
    def ingress_endpoints(self) -> str:
        """The cluster's ingress endpoints, for a client."""
        return ingress_endpoints(self.members)

    def start(self, timeout: float = 60.0) -> MemberProcess:
        """Start the member, and its container once the member runs. A member killed moments ago leaves mark
        files that look alive for 10 s: the start is retried until they are stale."""
        props = self.properties()
        if self.java:
            command = ["java", *JVM_OPTIONS, "-cp", self.classpath, *[f"-D{k}={v}" for k, v in props.items()],
                       self.java_main]
        else:
            command = [sys.executable, "-m", "aeron.cluster", *[f"{k}={v}" for k, v in props.items()]]

        def launch() -> subprocess.Popen:
            if self.java:
                # a killed member's cnc.dat still holds its counters: gone, they cannot pass for the new process's
                (pathlib.Path(self.aeron_dir) / "cnc.dat").unlink(missing_ok=True)
            with open(self.dir.with_suffix(".log"), "a") as log:
                self.proc = subprocess.Popen(command, cwd=str(REPO), env=client_env(), stdout=log,
                                             stderr=subprocess.STDOUT)
            return self.proc

        def is_ready(seen: int) -> bool:
            if self.java:
                # Java's ClusteredMediaDriver prints nothing when it is up: its counters say so
                return self.counters()[0] is not None
            return READY_LINE in self.log_text()[seen:]

        start_until_ready(self.member_id, launch, is_ready, self.log_text, timeout, retry_s=1.0)
        self.start_service()
        return self

    def start_service(self) -> None:
        """Start the member's container: ``container``'s when given, else the test service's (none when ``service``
        is None)."""
        if self.start_container is not None:
            self.container, self.service_out = self.start_container(self)
        elif self.service is not None:
            self.container, self.service_out = start_container(self.classpath, self.aeron_dir, self.cluster_dir,
                                                               python=self.service == "python")

    def log_text(self) -> str:
        path = self.dir.with_suffix(".log")
        return path.read_text() if path.exists() else ""

    def counters(self) -> MemberCounters:
        """(state, role, election state, commit position, leadership term id), Nones while unavailable."""
        return read_counters(self.aeron_dir)

    def is_leader(self) -> bool:
        return leads(self.counters())

    def is_follower(self) -> bool:
        return follows(self.counters())

    def kill(self) -> None:
        """SIGKILL the member (its driver dies with it), then stop its container."""
        kill_process(self.proc)
        stop_process(self.container)

    def stop(self) -> None:
        """Stop the container, then the member."""
        stop_process(self.container)
        stop_process(self.proc, timeout=30)

    def tool(self, *command: str, timeout: float = 120) -> subprocess.CompletedProcess:
        """Java's ClusterTool on the member's cluster directory."""
        return cluster_tool(self.classpath, self.cluster_dir, *command, timeout=timeout)

    def await_exit(self, timeout: float = 60) -> int:
        """The member's exit status once it stopped by itself (a shutdown)."""
        assert self.proc is not None
        return self.proc.wait(timeout)


def start_elected(nodes: list[MemberProcess], timeout: float = 90.0) -> MemberProcess:
    """Start ``nodes`` and wait for a leader and the others following; the leader. Should that fail, every node is
    stopped before the error goes on (a test's ``finally`` has no nodes to stop yet)."""
    try:
        for node in nodes:
            node.start()
        wait_for(lambda: any(n.is_leader() for n in nodes) and sum(n.is_follower() for n in nodes) == len(nodes) - 1,
                 timeout, what="a leader and the others following", interval_s=0.2)
        return next(n for n in nodes if n.is_leader())
    except BaseException:
        for node in nodes:
            node.stop()
        raise


def run_client(classpath: str, aeron_dir: str, endpoints: str, *commands: str, timeout: float = 90) -> list[str]:
    """Run ClusterEchoClient (``send:<text>``, ``await:<prefix>`` commands) on the driver at ``aeron_dir`` against
    the cluster at ``endpoints``; its output lines (the test fails on a non-zero exit)."""
    result = subprocess.run(["java", *JVM_OPTIONS, "-cp", classpath, "ClusterEchoClient", aeron_dir, endpoints,
                             *commands], capture_output=True, text=True, timeout=timeout, env=client_env())
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.splitlines()


class JavaMember:
    """One member of a :class:`JavaCluster` (the EchoClusterNode program); ``lines`` collects its stdout."""

    def __init__(self, cluster: JavaCluster, member_id: int) -> None:
        self.cluster = cluster
        self.member_id = member_id
        self.ports = [restartable_port() for _ in range(5)]    # ingress, consensus, log, catchup, archive
        self.proc: subprocess.Popen[str] | None = None
        self.lines: list[str] = []

    @property
    def ingress_endpoint(self) -> str:
        return f"localhost:{self.ports[0]}"

    def member_string(self) -> str:
        return f"{self.member_id}," + ",".join(f"localhost:{p}" for p in self.ports)

    def start(self) -> None:
        cluster = self.cluster
        base = cluster.work_dir / f"node{self.member_id}"
        aeron_dir = f"/dev/shm/{cluster.work_dir.name}-java-{self.member_id}"
        properties = [f"-D{k}={v}" for k, v in cluster.properties.items()]
        self.proc = subprocess.Popen(
            ["java", *JVM_OPTIONS, *properties, "-cp", cluster.classpath, "EchoClusterNode",
             str(self.member_id), cluster.members_string(), str(base), aeron_dir, str(self.ports[4]),
             "true" if cluster.allow_admin else "false"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        try:
            for line in self.proc.stdout:
                self.lines.append(line.rstrip("\n"))
        except ValueError:
            pass            # closed by stop()

    def role(self) -> str | None:
        roles = [line.split()[1] for line in list(self.lines) if line.startswith("ROLE ")]
        return roles[-1] if roles else None

    def kill(self) -> None:
        """SIGKILL the member's JVM (the leader dies without a word)."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.kill()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


class JavaCluster:
    """``size`` Java members (EchoClusterNode: an echo service, an authenticator that challenges, admin requests
    allowed with ``allow_admin``) on free ports, with ``properties`` (-D) for every JVM; ``classpath`` holds the
    compiled test programs (the ``cluster_java`` fixture's)."""

    def __init__(self, work_dir: pathlib.Path, classpath: str, size: int = 1,
                 properties: dict[str, str] | None = None, allow_admin: bool = False) -> None:
        self.work_dir = work_dir
        self.classpath = classpath
        self.properties = {"aeron.cluster.session.timeout": "10s", "aeron.cluster.leader.heartbeat.timeout": "2s",
                           "aeron.cluster.election.timeout": "500ms", "aeron.cluster.startup.canvass.timeout": "5s",
                           "aeron.term.buffer.sparse.file": "true", **(properties or {})}
        self.allow_admin = allow_admin
        self.members = [JavaMember(self, i) for i in range(size)]

    def members_string(self) -> str:
        return "|".join(m.member_string() for m in self.members)

    def ingress_endpoints(self) -> str:
        return ",".join(f"{m.member_id}={m.ingress_endpoint}" for m in self.members)

    def start(self) -> None:
        for member in self.members:
            member.start()

    def leader(self, timeout_s: float = 60.0, exclude: tuple[int, ...] = ()) -> JavaMember:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for member in self.members:
                if member.member_id not in exclude and member.role() == "LEADER":
                    return member
                if member.proc is not None and member.proc.poll() is not None and member.member_id not in exclude:
                    raise AssertionError(f"member {member.member_id} exited: {member.lines[-30:]}")
            time.sleep(0.05)
        raise AssertionError(f"no leader within {timeout_s} s: " + " / ".join(
            f"{m.member_id}: {m.lines[-10:]}" for m in self.members))

    def stop(self) -> None:
        for member in self.members:
            member.stop()
        for member in self.members:
            shutil.rmtree(f"/dev/shm/{self.work_dir.name}-java-{member.member_id}", ignore_errors=True)
