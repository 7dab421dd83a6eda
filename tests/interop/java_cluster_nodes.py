# SPDX-License-Identifier: Apache-2.0
"""Official Java Aeron Cluster members for interop tests: a small Java program (compiled in the test's directory with
javac against $AERON_JAVA_CP) launches a ClusteredMediaDriver (driver, archive, consensus module) and a
ClusteredServiceContainer running an echo service, on free ports of 127.0.0.1 given by the test. The service echoes
each message to its session; ``close-me`` makes it close the session (SERVICE_ACTION). The program prints
``ROLE <role>`` on each role change and ``SNAPSHOT`` when the service takes one, so tests can wait on them."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.support import free_port

JAVA_SOURCE = r"""
import io.aeron.*;
import io.aeron.archive.*;
import io.aeron.archive.client.*;
import io.aeron.cluster.*;
import io.aeron.cluster.codecs.CloseReason;
import io.aeron.cluster.service.*;
import io.aeron.driver.*;
import io.aeron.logbuffer.Header;
import io.aeron.security.*;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.ShutdownSignalBarrier;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.*;

public class EchoClusterNode {
    static final class Echo implements ClusteredService {
        Cluster cluster;
        public void onStart(Cluster cluster, Image snapshotImage) { this.cluster = cluster; }
        public void onSessionOpen(ClientSession session, long timestamp) {}
        public void onSessionClose(ClientSession session, long timestamp, CloseReason closeReason) {
            System.out.println("SESSION_CLOSED " + session.id() + " " + closeReason);
        }
        public void onSessionMessage(ClientSession session, long timestamp, DirectBuffer buffer, int offset,
                                     int length, Header header) {
            if (length == 8 && "close-me".equals(buffer.getStringWithoutLengthAscii(offset, length))) {
                cluster.closeClientSession(session.id());
                return;
            }
            for (int i = 0; i < 100; i++) {
                if (session.offer(buffer, offset, length) > 0) return;
                cluster.idleStrategy().idle();
            }
        }
        public void onTimerEvent(long correlationId, long timestamp) {}
        public void onTakeSnapshot(ExclusivePublication snapshotPublication) { System.out.println("SNAPSHOT"); }
        public void onRoleChange(Cluster.Role newRole) { System.out.println("ROLE " + newRole); }
        public void onTerminate(Cluster cluster) {}
    }

    // credentials "challenge" are challenged with "nonce" and accepted answering "answer-to-nonce"; "reject" is
    // rejected; anything else is accepted at once
    static final class ChallengingAuthenticator implements Authenticator {
        final Map<Long, String> credentials = new HashMap<>();
        final Map<Long, String> answers = new HashMap<>();
        public void onConnectRequest(long sessionId, byte[] encoded, long nowMs) {
            credentials.put(sessionId, new String(encoded, StandardCharsets.US_ASCII));
        }
        public void onChallengeResponse(long sessionId, byte[] encoded, long nowMs) {
            answers.put(sessionId, new String(encoded, StandardCharsets.US_ASCII));
        }
        public void onConnectedSession(SessionProxy proxy, long nowMs) {
            String presented = credentials.getOrDefault(proxy.sessionId(), "");
            if (presented.equals("reject")) proxy.reject();
            else if (presented.equals("challenge")) proxy.challenge("nonce".getBytes(StandardCharsets.US_ASCII));
            else proxy.authenticate(null);
        }
        public void onChallengedSession(SessionProxy proxy, long nowMs) {
            String answer = answers.remove(proxy.sessionId());   // called every cycle until the answer came
            if (answer == null) return;
            if (answer.equals("answer-to-nonce")) proxy.authenticate(null);
            else proxy.reject();
        }
    }

    public static void main(String[] args) throws Exception {
        int memberId = Integer.parseInt(args[0]);
        String members = args[1];
        File base = new File(args[2]);
        String aeronDir = args[3];
        int archivePort = Integer.parseInt(args[4]);
        boolean allowAdmin = Boolean.parseBoolean(args[5]);
        MediaDriver.Context driverCtx = new MediaDriver.Context().aeronDirectoryName(aeronDir)
            .threadingMode(ThreadingMode.SHARED).dirDeleteOnStart(true).dirDeleteOnShutdown(true)
            .publicationTermBufferLength(64 * 1024).ipcTermBufferLength(64 * 1024);
        AeronArchive.Context replication = new AeronArchive.Context()
            .controlResponseChannel("aeron:udp?endpoint=localhost:0");
        Archive.Context archiveCtx = new Archive.Context().aeronDirectoryName(aeronDir)
            .archiveDir(new File(base, "archive")).deleteArchiveOnStart(true)
            .controlChannel("aeron:udp?endpoint=localhost:" + archivePort)
            .archiveClientContext(replication).localControlChannel("aeron:ipc?term-length=64k")
            .replicationChannel("aeron:udp?endpoint=localhost:0").recordingEventsEnabled(false)
            .threadingMode(ArchiveThreadingMode.SHARED).segmentFileLength(1024 * 1024);
        AeronArchive.Context archiveClient = new AeronArchive.Context()
            .controlRequestChannel(archiveCtx.localControlChannel())
            .controlRequestStreamId(archiveCtx.localControlStreamId())
            .controlResponseChannel(archiveCtx.localControlChannel()).aeronDirectoryName(aeronDir);
        ConsensusModule.Context cmCtx = new ConsensusModule.Context().clusterMemberId(memberId)
            .clusterMembers(members).clusterDir(new File(base, "cluster")).deleteDirOnStart(true)
            .archiveContext(archiveClient.clone()).serviceCount(1).ingressChannel("aeron:udp")
            .logChannel("aeron:udp?term-length=64k").replicationChannel("aeron:udp?endpoint=localhost:0")
            .authenticatorSupplier(ChallengingAuthenticator::new);
        if (allowAdmin) cmCtx.authorisationServiceSupplier(() -> AuthorisationService.ALLOW_ALL);
        ClusteredServiceContainer.Context serviceCtx = new ClusteredServiceContainer.Context()
            .aeronDirectoryName(aeronDir).archiveContext(archiveClient.clone())
            .clusterDir(new File(base, "cluster")).clusteredService(new Echo()).serviceId(0);
        try (ShutdownSignalBarrier barrier = new ShutdownSignalBarrier();
             ClusteredMediaDriver driver = ClusteredMediaDriver.launch(driverCtx.terminationHook(barrier::signalAll),
                 archiveCtx, cmCtx.terminationHook(barrier::signalAll));
             ClusteredServiceContainer container = ClusteredServiceContainer.launch(
                 serviceCtx.terminationHook(barrier::signalAll))) {
            System.out.println("STARTED " + memberId);
            barrier.await();
        }
    }
}
"""

JVM_OPTIONS = ["-Xms32m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto",
               "--add-opens", "java.base/jdk.internal.misc=ALL-UNNAMED",
               "--add-opens", "java.base/java.util.zip=ALL-UNNAMED", "--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED"]


def java_classpath() -> str:
    value = os.environ.get("AERON_JAVA_CP")
    if not value:
        pytest.skip("AERON_JAVA_CP is not set: official Java Aeron Cluster is not available")
    if shutil.which("javac") is None or shutil.which("java") is None:
        pytest.skip("javac/java not installed")
    return value


def compile_node(work_dir: Path, classpath: str) -> Path:
    classes = work_dir / "classes"
    classes.mkdir(parents=True, exist_ok=True)
    source = work_dir / "EchoClusterNode.java"
    source.write_text(JAVA_SOURCE)
    done = subprocess.run(["javac", "-cp", classpath, "-d", str(classes), str(source)], timeout=180,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return classes


class JavaMember:
    """One Java cluster member process; ``lines`` collects its stdout."""

    def __init__(self, cluster: "JavaCluster", member_id: int) -> None:
        self.cluster = cluster
        self.member_id = member_id
        self.ports = [free_port() for _ in range(5)]    # ingress, consensus, log, catchup, archive
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
            ["java", *JVM_OPTIONS, *properties, "-cp", f"{cluster.classes}:{cluster.classpath}", "EchoClusterNode",
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
    """``size`` Java members on free ports, with ``properties`` (-D) for every JVM."""

    def __init__(self, work_dir: Path, classpath: str, classes: Path, size: int = 1,
                 properties: dict[str, str] | None = None, allow_admin: bool = False) -> None:
        self.work_dir = work_dir
        self.classpath = classpath
        self.classes = classes
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
