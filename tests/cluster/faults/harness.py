# SPDX-License-Identifier: Apache-2.0
"""Process control of the fault campaign: members (``python -m aeron.cluster`` with the faults service in its own
``python -m aeron.cluster.service`` container, or Java's ClusteredMediaDriver), the clients' media driver, and the
network they live on.

Two networks:

- :class:`LoopbackNetwork`: every process on 127.0.0.1 with free ports; no partitions.
- :class:`NamespaceNetwork`: each member in a network namespace of its own, joined to a bridge in the campaign's
  namespace by a veth pair (member ``i`` at ``10.77.0.<i+1>``, the clients at ``10.77.0.254``). The campaign must run
  in a network namespace of its own (``unshare -n``, see ``campaign.py``): nothing of the host's network is touched.
  A cut between two members pins each one's neighbour entry for the other to a MAC address nobody has, so their
  frames go nowhere and are dropped silently, as on a real partition (no send error, no ICMP).

The small API (:class:`Member` ``start/kill/pause/resume/stop/counters/snapshot``, :class:`ClientDriver`,
``Network.cut/heal``) is what ``campaign.py`` drives.
"""
from __future__ import annotations

import abc
import os
import pathlib
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping

from tests.cluster.system.members import (
    READY_LINE,
    MemberCounters,
    MemberDirs,
    kill_process,
    read_counters,
    signal_processes,
    start_until_ready,
    stop_process,
)
from tests.interop.cluster_support import (
    JAVA_OPENS,
    java_archive_properties,
    member_properties,
)
from tests.procs import client_env
from tests.support import restartable_port, wait_for

REPO = pathlib.Path(__file__).resolve().parents[3]
SERVICE_CLASS = "tests.cluster.faults.service:FaultsService"
BRIDGE = "faultsbr0"
SUBNET = "10.77.0"
CLIENT_HOST = f"{SUBNET}.254"
NOWHERE_MAC = "02:00:00:00:00:99"


def run_checked(args: list[str], timeout: float = 30.0) -> str:
    """Run a short command; RuntimeError with its output when it fails."""
    done = subprocess.run(args, capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: exit {done.returncode}: {done.stderr.strip()}")
    return done.stdout


class Network(abc.ABC):
    """Where the members and clients live."""

    partitions = False

    @abc.abstractmethod
    def member_host(self, member_id: int) -> str:
        """The address of a member."""

    @abc.abstractmethod
    def client_host(self) -> str:
        """The address the clients' egress binds."""

    @abc.abstractmethod
    def member_ports(self, member_id: int) -> tuple[int, int, int, int]:
        """Ingress, consensus, log and archive ports of a member."""

    def prefix(self, member_id: int) -> list[str]:
        """The command prefix that runs a command where member ``member_id`` lives."""
        return []

    def cut(self, pairs: Iterable[tuple[int, int]]) -> None:
        """Stop traffic both ways between each pair of members."""
        raise RuntimeError("this network cannot partition")

    def heal(self) -> None:
        """Undo every cut."""

    def close(self) -> None:
        """Release what the network made."""


class LoopbackNetwork(Network):
    """Everything on 127.0.0.1, on free ports."""

    def __init__(self, count: int) -> None:
        self._ports = {i: (restartable_port(), restartable_port(), restartable_port(), restartable_port())
                       for i in range(count)}

    def member_host(self, member_id: int) -> str:
        return "127.0.0.1"

    def client_host(self) -> str:
        return "127.0.0.1"

    def member_ports(self, member_id: int) -> tuple[int, int, int, int]:
        return self._ports[member_id]


def namespaces_available() -> str | None:
    """None when this process may make the namespace network (root in a network namespace of its own, ``ip`` and
    ``nsenter`` present), else why not."""
    if os.geteuid() != 0:
        return "not root"
    if os.environ.get("FAULTS_NETNS") != "1":
        return "the campaign is not running in its own network namespace (run it through campaign.py)"
    for tool in ("ip", "nsenter", "unshare"):
        if subprocess.run(["which", tool], capture_output=True, check=False).returncode != 0:
            return f"{tool} not installed"
    return None


class NamespaceNetwork(Network):
    """A network namespace per member on a bridge (see the module docstring)."""

    partitions = True

    def __init__(self, count: int) -> None:
        reason = namespaces_available()
        if reason is not None:
            raise RuntimeError(f"namespace network unavailable: {reason}")
        self.count = count
        self.holders: dict[int, subprocess.Popen] = {}
        self._cuts: set[tuple[int, int]] = set()
        own = os.readlink("/proc/self/ns/net")
        run_checked(["ip", "link", "set", "lo", "up"])
        run_checked(["ip", "link", "add", BRIDGE, "type", "bridge"])
        run_checked(["ip", "addr", "add", f"{CLIENT_HOST}/24", "dev", BRIDGE])
        run_checked(["ip", "link", "set", BRIDGE, "up"])
        for i in range(count):
            holder = subprocess.Popen(["unshare", "-n", "sleep", "infinity"])
            self.holders[i] = holder
            wait_for(lambda holder=holder: self._ns_of(holder.pid) not in (None, own), 10,
                     what=f"namespace of member {i}", interval_s=0.02)
            host, member = f"fh{i}", f"fm{i}"
            run_checked(["ip", "link", "add", host, "type", "veth", "peer", "name", member])
            run_checked(["ip", "link", "set", member, "netns", str(holder.pid)])
            run_checked(["ip", "link", "set", host, "master", BRIDGE, "up"])
            self._in(i, ["ip", "link", "set", "lo", "up"])
            self._in(i, ["ip", "addr", "add", f"{self.member_host(i)}/24", "dev", member])
            self._in(i, ["ip", "link", "set", member, "up"])

    @staticmethod
    def _ns_of(pid: int) -> str | None:
        try:
            return os.readlink(f"/proc/{pid}/ns/net")
        except OSError:
            return None

    def _in(self, member_id: int, args: list[str]) -> str:
        return run_checked([*self.prefix(member_id), *args])

    def member_host(self, member_id: int) -> str:
        return f"{SUBNET}.{member_id + 1}"

    def client_host(self) -> str:
        return CLIENT_HOST

    def member_ports(self, member_id: int) -> tuple[int, int, int, int]:
        return 20000, 20001, 20002, 20003

    def prefix(self, member_id: int) -> list[str]:
        return ["nsenter", "-t", str(self.holders[member_id].pid), "-n"]

    def cut(self, pairs: Iterable[tuple[int, int]]) -> None:
        for a, b in pairs:
            for x, y in ((a, b), (b, a)):
                self._in(x, ["ip", "neigh", "replace", self.member_host(y), "lladdr", NOWHERE_MAC, "dev", f"fm{x}",
                             "nud", "permanent"])
            self._cuts.add((min(a, b), max(a, b)))

    def heal(self) -> None:
        for a, b in sorted(self._cuts):
            for x, y in ((a, b), (b, a)):
                subprocess.run([*self.prefix(x), "ip", "neigh", "del", self.member_host(y), "dev", f"fm{x}"],
                               capture_output=True, timeout=30, check=False)
        self._cuts.clear()

    def close(self) -> None:
        for holder in self.holders.values():
            holder.kill()
            holder.wait(timeout=10)
        subprocess.run(["ip", "link", "del", BRIDGE], capture_output=True, timeout=30, check=False)


def mounts_available() -> bool:
    """Whether this process runs in a mount namespace of its own (made by campaign.py) and may mount there."""
    return os.geteuid() == 0 and os.environ.get("FAULTS_MOUNTNS") == "1"


def mount_tmpfs(path: pathlib.Path, size_mb: int) -> None:
    """A tmpfs of ``size_mb`` at ``path``, in this process's own mount namespace (gone with it)."""
    path.mkdir(parents=True, exist_ok=True)
    run_checked(["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(path)])


def fill_file_system(path: pathlib.Path, limit_mb: int = 1024) -> int:
    """Write ``path`` until its file system is full (ENOSPC) or ``limit_mb`` are written; the bytes written."""
    written = 0
    chunk = bytes(1 << 20)
    with open(path, "wb", buffering=0) as f:
        while written < limit_mb << 20:
            try:
                written += f.write(chunk)
            except OSError:
                break
    return written


def members_string(network: Network, count: int) -> str:
    """``id,ingress,consensus,log,catchup,archive|...`` of ``count`` members on ``network``."""
    out = []
    for i in range(count):
        host = network.member_host(i)
        ingress, consensus, log, archive = network.member_ports(i)
        out.append(f"{i},{host}:{ingress},{host}:{consensus},{host}:{log},{host}:0,{host}:{archive}")
    return "|".join(out)


class Member(MemberDirs):
    """One member: its consensus module process (with driver and archive) and its service container process, in
    ``base/m<id>``, with logs ``m<id>.log`` and ``m<id>-service.log`` and the service's applied file
    ``m<id>-applied.jsonl``. ``java``: Java's ClusteredMediaDriver instead of ours (``classpath`` needed)."""

    def __init__(self, member_id: int, members: str, base: pathlib.Path, network: Network, *,
                 java: bool = False, classpath: str = "", overrides: Mapping[str, str] | None = None,
                 flawed_service: bool = False, slow_disk_library: pathlib.Path | None = None) -> None:
        super().__init__(member_id, members, base)
        self.base = base
        self.network = network
        self.java = java
        self.classpath = classpath
        self.overrides = dict(overrides or {})
        self.flawed_service = flawed_service
        self.slow_disk_library = slow_disk_library
        self.proc: subprocess.Popen | None = None
        self.container: subprocess.Popen | None = None
        self.paused = False
        self.starts = 0

    @property
    def log_path(self) -> pathlib.Path:
        return self.base / f"m{self.member_id}.log"

    @property
    def clock_path(self) -> pathlib.Path:
        """The offset file of this member's JumpClock (clock.py)."""
        return self.base / f"m{self.member_id}-clock-offset"

    @property
    def slow_disk_path(self) -> pathlib.Path:
        """The control file of this member's slow disk (slow_disk.c): milliseconds per force."""
        return self.base / f"m{self.member_id}-slow-disk"

    def env(self) -> dict[str, str]:
        """The environment of this member's processes: the clients', the jump clock's file and, when the slow disk
        is on, its library preloaded with this member's control file."""
        env = client_env()
        env["FAULTS_CLOCK_FILE"] = str(self.clock_path)
        if self.slow_disk_library is not None:
            env["LD_PRELOAD"] = str(self.slow_disk_library)
            env["FAULTS_SLOW_DISK_FILE"] = str(self.slow_disk_path)
        return env

    @property
    def applied_path(self) -> pathlib.Path:
        return self.base / f"m{self.member_id}-applied.jsonl"

    def properties(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The member's properties: the interop tests' short timeouts, this network's addresses, ``extra``."""
        host = self.network.member_host(self.member_id)
        props = member_properties(self.member_id, self.members, self.cluster_dir, **{
            "aeron.dir": self.aeron_dir, "aeron.archive.dir": str(self.archive_dir),
            "aeron.archive.segment.file.length": "262144", "aeron.threading.mode": "SHARED",
            "aeron.archive.threading.mode": "SHARED", "aeron.archive.low.storage.space.threshold": "16m",
            "aeron.cluster.replication.channel": f"aeron:udp?endpoint={host}:0",
            "aeron.cluster.leader.heartbeat.timeout": "3s", "aeron.cluster.startup.canvass.timeout": "6s",
            "aeron.cluster.session.timeout": "15s",
            "aeron.cluster.election.timeout": "500ms",
            # forced writes, as a durable deployment has them (and so that a slow disk is felt)
            "aeron.archive.file.sync.level": "1", "aeron.archive.catalog.file.sync.level": "1",
            "aeron.cluster.file.sync.level": "1",
            **self.overrides, **(extra or {})})
        if self.java:
            props.update(java_archive_properties(self.member_id, self.members, host))
        return props

    @property
    def archive_dir(self) -> pathlib.Path:
        return self.dir / "archive"

    def is_running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self, timeout: float = 120.0, extra: Mapping[str, str] | None = None) -> None:
        """Start the member, then its container once the member runs. A member killed moments ago leaves a driver
        that looks alive until its timeout: the start is retried until the driver's files are stale."""
        props = self.properties(extra)
        if self.java:
            command = ["java", *JAVA_OPENS, "-cp", self.classpath, *[f"-D{k}={v}" for k, v in props.items()],
                       "io.aeron.cluster.ClusteredMediaDriver"]
        else:
            props["aeron.cluster.clock"] = "tests.cluster.faults.clock:JumpClock"
            command = [sys.executable, "-m", "aeron.cluster", *[f"{k}={v}" for k, v in props.items()]]
        command = [*self.network.prefix(self.member_id), *command]
        env = self.env()

        def launch() -> subprocess.Popen:
            if self.java:
                (pathlib.Path(self.aeron_dir) / "cnc.dat").unlink(missing_ok=True)
            with open(self.log_path, "a") as log:
                log.write(f"--- start {self.starts} at {time.monotonic():.3f}: {' '.join(command)}\n")
                log.flush()
                self.proc = subprocess.Popen(command, cwd=str(REPO), env=env, stdout=log,
                                             stderr=subprocess.STDOUT)
            return self.proc

        start_until_ready(self.member_id, launch, self._started, self.log_text, timeout, poll_s=0.2, retry_s=1.0)
        self.starts += 1
        self.start_container()

    def _started(self, seen: int) -> bool:
        if self.java:
            return self.counters()[0] is not None
        return READY_LINE in self.log_text()[seen:]

    def start_container(self) -> None:
        """The service container, on this member's driver."""
        env = self.env()
        env["FAULTS_APPLIED_FILE"] = str(self.applied_path)
        if self.flawed_service:
            env["FAULTS_SERVICE_FLAW"] = "1"
        command = [*self.network.prefix(self.member_id), sys.executable, "-m", "aeron.cluster.service",
                   f"aeron.dir={self.aeron_dir}", f"aeron.cluster.dir={self.cluster_dir}",
                   f"aeron.cluster.service.class.name={SERVICE_CLASS}"]
        with open(self.base / f"m{self.member_id}-service.log", "a") as log:
            log.write(f"--- start at {time.monotonic():.3f}\n")
            log.flush()
            self.container = subprocess.Popen(command, cwd=str(REPO), env=env, stdout=log, stderr=subprocess.STDOUT)

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def counters(self) -> MemberCounters:
        """(module state, role, election state, commit position, leadership term id); Nones while unavailable
        (not running, or paused: a stopped driver's counters say nothing of now)."""
        if not self.is_running() or self.paused:
            return MemberCounters.none()
        return read_counters(self.aeron_dir)

    def snapshot(self) -> bool:
        """Ask this member's consensus module for a snapshot through its control toggle (it must lead); whether
        the toggle moved. Not waited for: the snapshot happens amid whatever else goes on."""
        from aeron.cluster.cluster_control import (
            ToggleState,
            find_control_toggle,
            map_counters,
        )
        try:
            with map_counters(pathlib.Path(self.aeron_dir) / "cnc.dat") as mapped:
                toggle = find_control_toggle(mapped.reader, mapped.values, 0)
                return toggle is not None and ToggleState.SNAPSHOT.toggle(toggle)
        except Exception:               # noqa: BLE001 - the member went away
            return False

    def kill(self) -> None:
        """kill -9 of the member and its container (the whole node crashes: both die at once)."""
        signal_processes((self.proc, self.container), signal.SIGKILL)
        for proc in (self.proc, self.container):
            kill_process(proc, timeout=30)
        self.paused = False

    def pause(self) -> None:
        """SIGSTOP the member and its container."""
        signal_processes((self.proc, self.container), signal.SIGSTOP)
        self.paused = True

    def resume(self) -> None:
        """SIGCONT them."""
        signal_processes((self.proc, self.container), signal.SIGCONT)
        self.paused = False

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM the container then the member; SIGKILL what is left after ``timeout``."""
        if self.paused:
            self.resume()
        for proc in (self.container, self.proc):
            stop_process(proc, timeout)


class ClientDriver:
    """The media driver the campaign's clients share, in the campaign's own namespace."""

    def __init__(self, base: pathlib.Path) -> None:
        self.aeron_dir = str(base / "client-driver")
        self.log = open(base / "client-driver.log", "a")          # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "aeron.driver", f"aeron.dir={self.aeron_dir}", "aeron.dir.delete.on.start=true",
             "aeron.threading.mode=SHARED", "aeron.shared.idle.strategy=backoff"],
            cwd=str(REPO), env=client_env(), stdout=self.log, stderr=subprocess.STDOUT)
        from tests.support import driver_heartbeat_ms

        def ready() -> bool:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the clients' driver exited {self.proc.returncode}")
            try:
                return driver_heartbeat_ms(self.aeron_dir) > 0
            except Exception:           # noqa: BLE001 - not there yet
                return False
        wait_for(ready, 60, what="the clients' media driver", interval_s=0.1)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.log.close()
