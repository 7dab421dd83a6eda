# SPDX-License-Identifier: Apache-2.0
"""Cluster members as processes, for tests: start, SIGKILL, restart, SIGSTOP/SIGCONT and stop a member, find the
leader, read a member's counters and its service's state. The system tests (tests/cluster/system) launch their
members with it; the launchers of the Java interop tests (tests/interop/cluster_support.py, for Java's members as well
as ours) and of the fault campaign (tests/cluster/faults/harness.py) are built on its pieces: the members strings and
properties, :class:`LineReader`, :func:`start_until_ready` (the start retried over a killed member's live mark file),
:func:`stop_process`/:func:`kill_process`/:func:`signal_processes`, :func:`read_counters` and
:func:`leads`/:func:`follows`.

A member is ``python -m aeron.cluster`` (driver, archive and consensus module in one process) in its own directory
``<base>/m<id>`` (``driver``, ``cluster``, ``archive``; its output in ``<base>/m<id>.log``), on free loopback ports,
with test timeouts (:func:`member_properties`: heartbeat timeout 2 s, election timeout 300 ms, 64 KiB terms). Its
clustered service runs in the member's process (``aeron.cluster.service.class.name``; the default,
``container="in-process"``), in a container process of its own (``container="process"``:
``python -m aeron.cluster.service``), or not at all (``container=None``: the test starts one itself, Java's for
one, by overriding :meth:`MemberProcess.start_services`).

API::

    cluster = TestCluster(base_dir, size=3)            # members 0..2 on free ports; nothing started yet
    cluster.start()                                    # every member; returns once each one runs
    leader = cluster.leader()                          # waits for a leader with its election closed
    cluster.wait_for_followers(2)
    leader.kill()                                      # SIGKILL: the member's driver, archive, CM and service die
    leader.start()                                     # the same member again, same dirs and ports
    member.pause(); member.resume()                    # SIGSTOP / SIGCONT
    member.counters()                                  # MemberCounters(state, role, election_state, ...)
    member.cluster_tool("snapshot")                    # ClusterTool on the member's directory: CompletedProcess
    member.service_state()                             # tests.cluster.system.register_service's state file
    cluster.stop()                                     # SIGTERM (then SIGKILL) every member; idempotent

Every wait has a deadline; nothing sleeps a fixed time except between polls.
"""
from __future__ import annotations

import concurrent.futures
import json
import os
import pathlib
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from tests.procs import client_env
from tests.support import restartable_port, wait_for

REPO = pathlib.Path(__file__).resolve().parents[3]
REGISTER_SERVICE = "tests.cluster.system.register_service:RegisterService"
ROLE_FOLLOWER, ROLE_CANDIDATE, ROLE_LEADER = 0, 1, 2
ELECTION_CLOSED = 17            # ElectionState.CLOSED
READY_LINE = "running (aeron.dir"


# -- members strings and properties ------------------------------------------------------------------------------------

def member_endpoints(member_id: int, host: str = "127.0.0.1") -> str:
    """``<id>,ingress,consensus,log,catchup,archive`` on free loopback ports (catch-up on an ephemeral port)."""
    ports = [restartable_port() for _ in range(4)]
    return f"{member_id},{host}:{ports[0]},{host}:{ports[1]},{host}:{ports[2]},{host}:0,{host}:{ports[3]}"


def cluster_members(count: int) -> str:
    """A members string (``aeron.cluster.members``) of ``count`` members on free loopback ports."""
    return "|".join(member_endpoints(i) for i in range(count))


def ingress_endpoints(members: str, only: Iterable[int] | None = None) -> str:
    """``<id>=<ingress endpoint>,...`` of a members string (of the members in ``only`` when given)."""
    chosen = None if only is None else set(only)
    return ",".join(f"{m.split(',')[0]}={m.split(',')[1]}" for m in members.split("|")
                    if chosen is None or int(m.split(",")[0]) in chosen)


def member_properties(member_id: int, members: str, cluster_dir: str, **overrides: str) -> dict[str, str]:
    """A member's consensus module properties with test timeouts (leader heartbeat timeout 2 s, election 300 ms,
    session timeout 10 s) and 64 KiB ingress and log terms."""
    props = {
        "aeron.cluster.member.id": str(member_id),
        "aeron.cluster.members": members,
        "aeron.cluster.dir": cluster_dir,
        "aeron.cluster.ingress.channel": "aeron:udp?term-length=64k",
        "aeron.cluster.log.channel": "aeron:udp?term-length=64k",
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


# -- processes ---------------------------------------------------------------------------------------------------------

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


def close_pipes(proc: subprocess.Popen) -> None:
    """Close the process's stdin and stdout (a reader thread ends at end of file)."""
    for stream in (proc.stdin, proc.stdout):
        if stream is not None:
            try:
                stream.close()
            except OSError:
                pass


def stop_process(proc: subprocess.Popen | None, timeout: float = 20.0) -> None:
    """SIGTERM (SIGCONT first, in case it is stopped), then SIGKILL after ``timeout``; its pipes closed."""
    if proc is None:
        return
    if proc.poll() is None:
        proc.send_signal(signal.SIGCONT)
        proc.terminate()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    close_pipes(proc)


def kill_process(proc: subprocess.Popen | None, timeout: float = 10.0) -> None:
    """SIGKILL and reap (waiting up to ``timeout``); its pipes closed."""
    if proc is None:
        return
    if proc.poll() is None:
        proc.kill()
        proc.wait(timeout=timeout)
    close_pipes(proc)


def signal_processes(procs: Iterable[subprocess.Popen | None], sig: int) -> None:
    """Send ``sig`` to each of ``procs`` that still runs (SIGSTOP/SIGCONT: a member stalled by its host)."""
    for proc in procs:
        if proc is not None and proc.poll() is None:
            try:
                proc.send_signal(sig)
            except ProcessLookupError:
                pass                    # it exited since the poll


def start_until_ready(member_id: int, launch: Callable[[], subprocess.Popen], is_ready: Callable[[int], bool],
                      log_text: Callable[[], str], timeout: float, poll_s: float = 0.1,
                      retry_s: float = 0.5) -> subprocess.Popen:
    """Launch a member (``launch`` starts its process, appending its output to the member's log) and wait until
    ``is_ready(seen)`` (``seen``: the length of the log before this launch); the running process. A member killed
    moments ago leaves a cluster mark file that looks alive for 10 s (Aeron refuses to start on it, and exits): the
    launch is retried until the mark file is stale. On ``timeout`` the process is killed and AssertionError raised
    with the log's tail."""
    deadline = time.monotonic() + timeout
    while True:
        seen = len(log_text())
        proc = launch()
        while proc.poll() is None and not is_ready(seen):
            if time.monotonic() > deadline:
                kill_process(proc)
                raise AssertionError(f"member {member_id} did not start: {log_text()[-3000:]}")
            time.sleep(poll_s)
        if proc.poll() is None:
            return proc
        if time.monotonic() > deadline:
            raise AssertionError(f"member {member_id} did not start: {log_text()[-3000:]}")
        time.sleep(retry_s)


class MemberCounters(NamedTuple):
    """What a member's driver counters say (None where a counter is not there, or the driver is gone)."""

    state: int | None               # ConsensusModule.State (type 200): 1 ACTIVE
    role: int | None                # Cluster.Role (201): 0 FOLLOWER, 1 CANDIDATE, 2 LEADER
    election_state: int | None      # ElectionState (207): 17 CLOSED
    commit_position: int | None     # (203)
    leadership_term_id: int | None  # (239)

    @classmethod
    def none(cls) -> MemberCounters:
        """Nothing known."""
        return cls(None, None, None, None, None)


COUNTER_TYPE_IDS = (200, 201, 207, 203, 239)


def leads(counters: tuple[int | None, ...]) -> bool:
    """Whether a member's counters (:class:`MemberCounters`) say it leads, with its election closed."""
    return counters[1] == ROLE_LEADER and counters[2] == ELECTION_CLOSED


def follows(counters: tuple[int | None, ...]) -> bool:
    """Whether a member's counters (:class:`MemberCounters`) say it follows, with its election closed."""
    return counters[1] == ROLE_FOLLOWER and counters[2] == ELECTION_CLOSED


def read_counters(aeron_dir: str | os.PathLike[str], cluster_id: int = 0) -> MemberCounters:
    """The cluster counters of the driver in ``aeron_dir`` (all None while it is not there)."""
    from aeron.cluster.cluster_control import map_counters
    from aeron.cluster.service.cluster_counters import ClusterCounters
    try:
        with map_counters(pathlib.Path(aeron_dir) / "cnc.dat") as mapped:
            return MemberCounters(*(ClusterCounters.find_value(mapped.reader, type_id, cluster_id)
                                    for type_id in COUNTER_TYPE_IDS))
    except Exception:                   # noqa: BLE001 - not there yet, or going away
        return MemberCounters.none()


def read_counter(aeron_dir: str | os.PathLike[str], type_id: int, cluster_id: int = 0) -> int | None:
    """One cluster counter of the driver in ``aeron_dir`` by type id (None when absent)."""
    from aeron.cluster.cluster_control import map_counters
    from aeron.cluster.service.cluster_counters import ClusterCounters
    try:
        with map_counters(pathlib.Path(aeron_dir) / "cnc.dat") as mapped:
            return ClusterCounters.find_value(mapped.reader, type_id, cluster_id)  # type: ignore[no-any-return]
    except Exception:                   # noqa: BLE001 - not there yet, or going away
        return None


class MemberDirs:
    """Where a member of a members string keeps its things: ``base / f"m{member_id}"`` (made here), with its
    driver's directory (``driver``) and its cluster directory (``cluster``) in it. The three launchers' members
    (this module's, tests/interop/cluster_support.py's and tests/cluster/faults/harness.py's) are ones."""

    def __init__(self, member_id: int, members: str, base: pathlib.Path) -> None:
        self.member_id = member_id
        self.members = members
        self.dir = pathlib.Path(base) / f"m{member_id}"
        self.dir.mkdir(parents=True, exist_ok=True)

    @property
    def aeron_dir(self) -> str:
        return str(self.dir / "driver")

    @property
    def cluster_dir(self) -> str:
        return str(self.dir / "cluster")


class MemberProcess(MemberDirs):
    """One member as its own process, in ``base / f"m{member_id}"`` (see the module docstring). ``overrides`` are
    properties (``aeron.*`` names) over :func:`member_properties` and the member's directories."""

    def __init__(self, member_id: int, members: str, base: pathlib.Path, *, service: str | None = REGISTER_SERVICE,
                 container: str | None = "in-process", **overrides: str) -> None:
        if container not in ("in-process", "process", None):
            raise ValueError(f"container must be 'in-process', 'process' or None: {container!r}")
        super().__init__(member_id, members, base)
        self.service = service
        self.container = container if service is not None else None
        self.overrides = overrides
        self.proc: subprocess.Popen | None = None
        self.container_proc: subprocess.Popen | None = None
        self.starts = 0

    def __repr__(self) -> str:
        running = self.proc is not None and self.proc.poll() is None
        return f"<MemberProcess {self.member_id} {'running' if running else 'stopped'} {self.dir}>"

    # -- where things are --------------------------------------------------------------------------------------------
    @property
    def archive_dir(self) -> str:
        return str(self.dir / "archive")

    @property
    def log_path(self) -> pathlib.Path:
        """The member's output (every start appends to it)."""
        return self.dir.with_suffix(".log")

    @property
    def endpoints(self) -> list[str]:
        """``[id, ingress, consensus, log, catchup, archive]`` of this member."""
        return self.members.split("|")[self.member_id].split(",")

    @property
    def ingress_endpoint(self) -> str:
        return self.endpoints[1]

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def log_text(self) -> str:
        """The member's output so far."""
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    # -- the command -------------------------------------------------------------------------------------------------
    def properties(self) -> dict[str, str]:
        """Every property the member is started with."""
        props = member_properties(self.member_id, self.members, self.cluster_dir, **{
            "aeron.dir": self.aeron_dir, "aeron.dir.delete.on.start": "true",
            "aeron.archive.dir": self.archive_dir, "aeron.archive.segment.file.length": "256k",
            "aeron.threading.mode": "SHARED", "aeron.archive.threading.mode": "SHARED",
            "aeron.term.buffer.length": "64k", "aeron.ipc.term.buffer.length": "64k"})
        if self.container == "in-process":
            props["aeron.cluster.service.class.name"] = str(self.service)
        props.update(self.overrides)
        return props

    def command(self) -> list[str]:
        """The member's command line."""
        return [sys.executable, "-m", "aeron.cluster", *[f"{k}={v}" for k, v in self.properties().items()]]

    def env(self) -> dict[str, str]:
        """The member's environment: no AERON_* variables of the test's; the register service writes its state
        into the member's directory."""
        env = client_env()
        env["REGISTER_SERVICE_DIR"] = str(self.dir)
        return env

    def is_ready(self, output: str) -> bool:
        """Whether the member's output since its start says it runs."""
        return READY_LINE in output

    # -- life cycle --------------------------------------------------------------------------------------------------
    def start(self, timeout: float = 60.0) -> None:
        """Start the member (and its container process when it has one) and wait until it runs. A member killed
        moments ago leaves a cluster mark file that looks alive for 10 s (Aeron refuses to start on it): the start
        is retried until the mark file is stale."""
        if self.proc is not None and self.proc.poll() is None:
            raise AssertionError(f"member {self.member_id} is running already")

        def launch() -> subprocess.Popen:
            with open(self.log_path, "a") as log:
                log.write(f"--- start {self.starts} at {time.strftime('%H:%M:%S')}\n")
                log.flush()
                self.proc = subprocess.Popen(self.command(), cwd=str(REPO), env=self.env(), stdout=log,
                                             stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            return self.proc

        start_until_ready(self.member_id, launch, lambda seen: self.is_ready(self.log_text()[seen:]), self.log_text,
                          timeout)
        self.starts += 1
        self.start_services()

    def start_services(self) -> None:
        """Start the member's clustered services in their own processes (``container="process"``)."""
        if self.container != "process":
            return
        props = {k: v for k, v in self.properties().items() if k.startswith("aeron.cluster.") or k == "aeron.dir"}
        props["aeron.cluster.service.class.name"] = str(self.service)
        with open(self.dir.with_suffix(".service.log"), "a") as log:
            self.container_proc = subprocess.Popen(
                [sys.executable, "-m", "aeron.cluster.service", *[f"{k}={v}" for k, v in props.items()]],
                cwd=str(REPO), env=self.env(), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def stop_services(self, kill: bool = False) -> None:
        """Stop the member's service processes (SIGKILL with ``kill``)."""
        (kill_process if kill else stop_process)(self.container_proc)
        self.container_proc = None

    def kill(self) -> None:
        """SIGKILL the member (its driver, archive, consensus module and hosted service die with it) and its service
        processes."""
        kill_process(self.proc)
        self.stop_services(kill=True)

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM the services, then the member (SIGKILL after ``timeout``); idempotent."""
        self.stop_services()
        stop_process(self.proc, timeout)

    def pause(self) -> None:
        """SIGSTOP the member (and its service process): it stops answering, as a member stalled by its host."""
        signal_processes((self.proc, self.container_proc), signal.SIGSTOP)

    def resume(self) -> None:
        """SIGCONT what :meth:`pause` stopped."""
        signal_processes((self.proc, self.container_proc), signal.SIGCONT)

    def wait_exit(self, timeout: float = 60.0) -> int:
        """Wait for the member's process to exit by itself (ClusterTool shutdown); its exit status."""
        assert self.proc is not None
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"member {self.member_id} still running after {timeout}s: "
                                 f"{self.log_text()[-3000:]}") from None

    @property
    def is_running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    # -- what it says ------------------------------------------------------------------------------------------------
    def cluster_tool(self, *command: str, timeout: float = 60.0) -> subprocess.CompletedProcess:
        """``python -m aeron.cluster.tool <the member's cluster dir> <command...>`` (ClusterTool), its output
        captured."""
        return subprocess.run([sys.executable, "-m", "aeron.cluster.tool", self.cluster_dir, *command], cwd=str(REPO),
                              env=client_env(), check=False, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)

    def counters(self) -> MemberCounters:
        """The member's cluster counters (all None while its driver is not there)."""
        if not self.is_running:
            return MemberCounters.none()
        return read_counters(self.aeron_dir)

    def counter(self, type_id: int) -> int | None:
        """One of the member's cluster counters by type id."""
        return read_counter(self.aeron_dir, type_id) if self.is_running else None

    def is_leader(self) -> bool:
        """Leader, with its election closed."""
        return leads(self.counters())

    def is_follower(self) -> bool:
        """Follower, with its election closed."""
        return follows(self.counters())

    def describe_errors(self, most: int = 6) -> str:
        """`` errors: [count× text, ...]``: the distinct errors of the member's mark files and driver (the last
        ``most``, first line of each), or '' when it has none or its files cannot be read."""
        from aeron.cluster import tool

        try:
            found = tool.errors(self.cluster_dir, aeron_dir=self.aeron_dir)
        except Exception as ex:             # noqa: BLE001 - a failure message must not fail in turn
            return f" errors: unreadable ({type(ex).__name__}: {ex})"
        records = sorted((r for rs in found.values() for r in rs), key=lambda r: r.last_timestamp)[-most:]
        if not records:
            return ""
        return " errors: [" + "; ".join(f"{r.observation_count}x {r.text.splitlines()[0][:200]}"
                                        for r in records) + "]"

    def service_state_file(self, service_id: int = 0) -> pathlib.Path:
        """The register service's state file."""
        return self.dir / f"register-service-{service_id}.json"

    def service_record(self, service_id: int = 0) -> dict[str, Any] | None:
        """The register service's whole record (``state``, ``local``, ``log_position``), None before its start."""
        try:
            return json.loads(self.service_state_file(service_id).read_text())  # type: ignore[no-any-return]
        except (OSError, ValueError):
            return None

    def service_state(self, service_id: int = 0) -> dict[str, Any] | None:
        """The register service's replicated state (see tests.cluster.system.register_service)."""
        record = self.service_record(service_id)
        return None if record is None else record["state"]  # type: ignore[no-any-return]


class TestCluster:
    """``size`` members on free loopback ports in ``base`` (see the module docstring); ``member_options`` go to
    each :class:`MemberProcess` (``service``, ``container``, property overrides)."""

    __test__ = False                # not a test class, whatever its name

    member_class: type[MemberProcess] = MemberProcess

    def __init__(self, base: pathlib.Path, size: int = 3, **member_options: Any) -> None:
        self.base = pathlib.Path(base)
        self.members_text = cluster_members(size)
        self.members = [self.member_class(i, self.members_text, self.base, **member_options) for i in range(size)]

    def __getitem__(self, member_id: int) -> MemberProcess:
        return self.members[member_id]

    def ingress_endpoints(self, only: Iterable[int] | None = None) -> str:
        """``<id>=<ingress endpoint>,...`` of the members (those in ``only`` when given)."""
        return ingress_endpoints(self.members_text, only)

    def start(self, timeout: float = 90.0) -> None:
        """Start every member, all at once; they elect a leader among themselves."""
        with concurrent.futures.ThreadPoolExecutor(len(self.members)) as pool:
            for future in [pool.submit(member.start, timeout) for member in self.members]:
                future.result()

    def stop(self) -> None:
        """Stop every member that runs (SIGTERM, then SIGKILL)."""
        for member in self.members:
            member.stop()

    def kill(self) -> None:
        """SIGKILL every member."""
        for member in self.members:
            member.kill()

    def running(self) -> list[MemberProcess]:
        """The members whose process runs."""
        return [m for m in self.members if m.is_running]

    def leader(self, timeout: float = 60.0, exclude: Iterable[MemberProcess] = ()) -> MemberProcess:
        """Wait for one running member (not in ``exclude``) to lead with its election closed, and return it."""
        excluded = list(exclude)
        return wait_for(lambda: next((m for m in self.running() if m not in excluded and m.is_leader()), None),
                        timeout, what=lambda: f"a leader ({self.describe(errors=True)})", interval_s=0.1)

    def wait_for_followers(self, count: int, timeout: float = 60.0) -> list[MemberProcess]:
        """Wait until ``count`` running members follow with their elections closed."""
        return wait_for(lambda: [m for m in self.running() if m.is_follower()] if
                        sum(m.is_follower() for m in self.running()) >= count else None,
                        timeout, what=lambda: f"{count} followers ({self.describe(errors=True)})", interval_s=0.1)

    def wait_for_commit_position(self, position: int, members: Iterable[MemberProcess] | None = None,
                                 timeout: float = 60.0) -> None:
        """Wait until the members (the running ones by default) have a commit position of at least ``position``."""
        chosen = list(members) if members is not None else self.running()
        wait_for(lambda: all((m.counters().commit_position or -1) >= position for m in chosen), timeout,
                 what=lambda: f"commit position {position} on {chosen} ({self.describe(errors=True)})",
                 interval_s=0.1)

    def wait_for_same_state(self, members: Iterable[MemberProcess] | None = None, timeout: float = 60.0,
                            predicate: Callable[[dict[str, Any]], bool] | None = None) -> dict[str, Any]:
        """Wait until every member's register service has the same state (satisfying ``predicate`` when given)
        and return it."""
        chosen = list(members) if members is not None else self.running()

        def same() -> dict[str, Any] | None:
            states = [m.service_state() for m in chosen]
            first = states[0]
            if first is None or any(s != first for s in states[1:]):
                return None
            return first if predicate is None or predicate(first) else None

        try:
            return wait_for(same, timeout, what="the same service state on every member", interval_s=0.1)
        except AssertionError:
            detail = {m.member_id: m.service_state() for m in chosen}
            raise AssertionError(f"service states differ or are not there yet: {json.dumps(detail)[:3000]} "
                                 f"({self.describe(errors=True)})") from None

    def describe(self, errors: bool = False) -> str:
        """Each member's counters, for failure messages; with ``errors`` also the distinct errors its cluster mark
        files and its driver logged (what a member stuck in an election kept failing on)."""
        return "; ".join(f"m{m.member_id}: {tuple(m.counters()) if m.is_running else 'not running'}"
                         f"{m.describe_errors() if errors else ''}" for m in self.members)
