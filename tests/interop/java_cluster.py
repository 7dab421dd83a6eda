# SPDX-License-Identifier: Apache-2.0
"""A one-member Java cluster for our clustered service container: Java's ClusteredMediaDriver (driver, archive and
consensus module, one service) on its own directories and free loopback ports, and a small Java AeronCluster
client compiled with javac at test time. Needs AERON_JAVA_CP (the tests skip without it)."""
from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import time

import pytest

from tests.procs import client_env
from tests.support import free_port

JAVA_OPENS = ["--add-opens", "java.base/jdk.internal.misc=ALL-UNNAMED",
              "--add-opens", "java.base/java.util.zip=ALL-UNNAMED"]

CLIENT_SOURCE = r"""
import io.aeron.cluster.client.AeronCluster;
import io.aeron.cluster.client.EgressListener;
import org.agrona.concurrent.UnsafeBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

// Connects to the cluster, then runs its commands: send:<text> offers a message, await:<prefix> polls the egress
// until a message starting with <prefix> came; every egress message is printed as EGRESS <session> <text>.
public class ClusterEchoClient
{
    public static void main(final String[] args)
    {
        final List<String> received = new ArrayList<>();
        final EgressListener listener = (clusterSessionId, timestamp, buffer, offset, length, header) ->
        {
            final String text = buffer.getStringWithoutLengthUtf8(offset, length);
            received.add(text);
            System.out.println("EGRESS " + clusterSessionId + " " + text);
        };
        try (AeronCluster cluster = AeronCluster.connect(new AeronCluster.Context()
            .aeronDirectoryName(args[0])
            .ingressChannel("aeron:udp")
            .ingressEndpoints(args[1])
            .egressChannel("aeron:udp?endpoint=127.0.0.1:0")
            .messageTimeoutNs(20_000_000_000L)
            .egressListener(listener)))
        {
            System.out.println("SESSION " + cluster.clusterSessionId() + " " + cluster.leaderMemberId());
            final UnsafeBuffer buffer = new UnsafeBuffer(new byte[4096]);
            for (int i = 2; i < args.length; i++)
            {
                final String command = args[i];
                final long deadline = System.nanoTime() + 20_000_000_000L;
                if (command.startsWith("send:"))
                {
                    final byte[] bytes = command.substring(5).getBytes(StandardCharsets.UTF_8);
                    buffer.putBytes(0, bytes);
                    while (cluster.offer(buffer, 0, bytes.length) < 0)
                    {
                        cluster.pollEgress();
                        if (System.nanoTime() > deadline)
                        {
                            throw new IllegalStateException("offer timed out: " + command);
                        }
                        Thread.yield();
                    }
                }
                else if (command.startsWith("await:"))
                {
                    final String prefix = command.substring(6);
                    while (received.stream().noneMatch((s) -> s.startsWith(prefix)))
                    {
                        if (cluster.pollEgress() == 0)
                        {
                            if (System.nanoTime() > deadline)
                            {
                                throw new IllegalStateException("timed out awaiting " + prefix);
                            }
                            Thread.yield();
                        }
                    }
                }
            }
        }
        System.out.println("CLOSED");
    }
}
"""


def java_cp() -> str:
    """AERON_JAVA_CP, or skip the test."""
    value = os.environ.get("AERON_JAVA_CP")
    if not value:
        pytest.skip("AERON_JAVA_CP is not set: the official Java cluster is not available")
    if shutil.which("javac") is None or shutil.which("java") is None:
        pytest.skip("javac/java not installed")
    return value


def compile_client(classpath: str, directory: pathlib.Path) -> pathlib.Path:
    """ClusterEchoClient compiled into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "ClusterEchoClient.java").write_text(CLIENT_SOURCE)
    subprocess.run(["javac", "-cp", classpath, "-d", str(directory), str(directory / "ClusterEchoClient.java")],
                   check=True, timeout=180, capture_output=True)
    return directory


def cluster_members(count: int) -> tuple[str, str]:
    """A members string of ``count`` members on free loopback ports, and the clients' ingress endpoints."""
    members, ingress = [], []
    for member_id in range(count):
        archive, ingress_port, consensus, log, catchup = (free_port() for _ in range(5))
        members.append(f"{member_id},127.0.0.1:{ingress_port},127.0.0.1:{consensus},127.0.0.1:{log},"
                       f"127.0.0.1:{catchup},127.0.0.1:{archive}")
        ingress.append(f"{member_id}=127.0.0.1:{ingress_port}")
    return "|".join(members), ",".join(ingress)


class JavaClusterNode:
    """Java's ClusteredMediaDriver for one member whose service is ours, and ClusterTool on its directory."""

    def __init__(self, classpath: str, base: pathlib.Path, member_id: int = 0,
                 members: tuple[str, str] | None = None, **properties: str) -> None:
        """A member of ``members`` (``cluster_members``; one member of its own when None); ``properties`` are more
        Java properties (dots as underscores)."""
        self.classpath = classpath
        self.base = base
        base.mkdir(parents=True, exist_ok=True)
        self.aeron_dir = str(base / "driver")
        self.cluster_dir = str(base / "cluster")
        self.archive_dir = str(base / "archive")
        members_text, self.ingress_endpoints = members or cluster_members(1)
        member = members_text.split("|")[member_id]
        archive_endpoint = member.split(",")[5]
        self.properties = {
            "aeron.dir": self.aeron_dir,
            "aeron.dir.delete.on.start": "true",
            "aeron.dir.delete.on.shutdown": "true",
            "aeron.threading.mode": "SHARED",
            "aeron.shared.idle.strategy": "backoff",
            "aeron.term.buffer.length": "65536",
            "aeron.ipc.term.buffer.length": "65536",
            "aeron.archive.dir": self.archive_dir,
            "aeron.archive.threading.mode": "SHARED",
            "aeron.archive.control.channel": f"aeron:udp?endpoint={archive_endpoint}",
            "aeron.archive.replication.channel": "aeron:udp?endpoint=127.0.0.1:0",
            "aeron.archive.segment.file.length": "65536",
            "aeron.cluster.dir": self.cluster_dir,
            "aeron.cluster.members": members_text,
            "aeron.cluster.member.id": str(member_id),
            "aeron.cluster.ingress.channel": "aeron:udp",
            "aeron.cluster.log.channel": "aeron:udp?term-length=64k",
            "aeron.cluster.replication.channel": "aeron:udp?endpoint=127.0.0.1:0",
            "aeron.cluster.service.count": "1",
        }
        self.properties.update({k.replace("_", "."): v for k, v in properties.items()})
        self.process: subprocess.Popen | None = None
        self.output = base / "node.out"

    def start(self) -> JavaClusterNode:
        """Start the node (its cluster and archive directories are kept from a previous start)."""
        properties = self.base / "node.properties"
        properties.write_text("".join(f"{k}={v}\n" for k, v in self.properties.items()))
        with open(self.output, "ab") as out:
            self.process = subprocess.Popen(
                ["java", *JAVA_OPENS, "-cp", self.classpath, "io.aeron.cluster.ClusteredMediaDriver",
                 str(properties)], stdout=out, stderr=subprocess.STDOUT, env=client_env())
        # the driver's cnc.dat and the consensus module's mark file, then a service may attach
        deadline = time.monotonic() + 60
        mark = pathlib.Path(self.cluster_dir) / "cluster-mark.dat"
        while not (mark.exists() and (pathlib.Path(self.aeron_dir) / "cnc.dat").exists()):
            if self.process.poll() is not None:
                pytest.fail(f"the Java cluster node exited: {self.output.read_text()}")
            if time.monotonic() > deadline:
                self.stop()
                pytest.fail("the Java cluster node did not start in 60 s")
            time.sleep(0.05)
        return self

    def tool(self, *command: str, timeout: float = 60) -> subprocess.CompletedProcess:
        """Java's ClusterTool on the node's cluster directory."""
        return subprocess.run(
            ["java", *JAVA_OPENS, f"-Daeron.dir={self.aeron_dir}", "-cp", self.classpath,
             "io.aeron.cluster.ClusterTool", self.cluster_dir, *command],
            capture_output=True, text=True, timeout=timeout, env=client_env())

    def await_exit(self, timeout: float = 60) -> int:
        """The node's exit status once it stopped by itself (a shutdown)."""
        assert self.process is not None
        return self.process.wait(timeout)

    def stop(self) -> None:
        """Stop the node (SIGTERM, then SIGKILL after 20 s)."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self.process = None


def run_client(classpath: str, client_dir: pathlib.Path, node: JavaClusterNode, *commands: str,
               timeout: float = 90) -> list[str]:
    """Run ClusterEchoClient against ``node``; its output lines (the test fails on a non-zero exit)."""
    result = subprocess.run(
        ["java", *JAVA_OPENS, "-cp", f"{classpath}:{client_dir}", "ClusterEchoClient", node.aeron_dir,
         node.ingress_endpoints, *commands], capture_output=True, text=True, timeout=timeout, env=client_env())
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.splitlines()
