# SPDX-License-Identifier: Apache-2.0
"""``python -m aeron.cluster [props-file ...] [key=value ...]``: a cluster member (Aeron ``ClusteredMediaDriver.main``):
our media driver, an archive and a consensus module in this process. Its clustered services run in their own
processes on the same driver directory (Java's ``ClusteredServiceContainer``, ``python -m aeron.cluster.service``),
or one of them in this process: given ``aeron.cluster.service.class.name`` (``package.module:Class``, made with no
arguments; or its ``AERON_CLUSTER_SERVICE_CLASS_NAME`` variable), the member also hosts a clustered service
container running that service, with the container's ``aeron.cluster.*`` properties (``aeron.cluster.service.id``,
default 0, and the others ``python -m aeron.cluster.service --help`` lists).

Settings are Aeron's properties from ``AERON_*`` environment variables, properties files and ``key=value``
arguments (``-D`` prefixes allowed), later ones winning: ``aeron.cluster.*`` go to the consensus module,
``aeron.archive.*`` to the archive, the other ``aeron.*`` to the driver, ``aeron.dir`` to all of them (the
container's own properties go to it only, those both read to both). Unless given,
the archive's control channel is UDP on this member's archive endpoint (from ``aeron.cluster.members`` and
``aeron.cluster.member.id``), its replication channel UDP on the same host's ephemeral port, and its archive id the
member id, so that the other members can replicate this member's log.

``aeron.cluster.member.one.thread`` (ours, or ``AERON_CLUSTER_MEMBER_ONE_THREAD``) runs the driver's agents, the
archive's and the consensus module on one thread with one park (``ClusteredMediaDriver.launch(one_thread=True)``)
instead of a thread each: true by default, unless ``aeron.threading.mode`` asks for DEDICATED or SHARED_NETWORK
threads or ``aeron.archive.threading.mode`` for DEDICATED (then false by default); a hosted container keeps its own unless
``aeron.cluster.member.one.thread.service=true`` (ours, or ``AERON_CLUSTER_MEMBER_ONE_THREAD_SERVICE``; false by
default; needs the one thread and a hosted service) puts it on that thread too
(``ClusteredMediaDriver.launch(service_container_context=...)``).

Runs until SIGINT or SIGTERM, or until the consensus module terminates (ClusterTool ``shutdown`` or ``abort``;
a hosted container that terminates alone gives the consensus module its termination timeout to follow); exits 0
then, 1 when it could not start, 2 for bad arguments.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time

from aeron.archive.archive import Context as ArchiveContext
from aeron.cluster.cluster_member import ClusterMember
from aeron.cluster.clustered_media_driver import ClusteredMediaDriver
from aeron.cluster.consensus_module import Context as ConsensusModuleContext
from aeron.cluster.service.clustered_service_container import (
    ClusteredServiceContainer,
    container_property,
)
from aeron.cluster.service.clustered_service_container import (
    Context as ContainerContext,
)
from aeron.common.errors import AeronError
from aeron.common.settings import parse_bool, read_properties
from aeron.common.version import VERSION_TEXT
from aeron.driver.media_driver import MediaDriver


ONE_THREAD_PROPERTY = "aeron.cluster.member.one.thread"
ONE_THREAD_SERVICE_PROPERTY = "aeron.cluster.member.one.thread.service"


# threading modes that ask for threads of their own: a member given one of them runs a thread each by default
_OWN_THREAD_MODES = {"aeron.threading.mode": ("DEDICATED", "SHARED_NETWORK"),
                     "aeron.archive.threading.mode": ("DEDICATED",)}


def one_thread_setting(props: dict[str, str], name: str = ONE_THREAD_PROPERTY) -> bool:
    """Whether the member runs on one thread: ``aeron.cluster.member.one.thread`` (removed from ``props``: it is the
    launcher's, no part's), else ``AERON_CLUSTER_MEMBER_ONE_THREAD``, else true (measured better in round trip, CPU
    per message and throughput: docs/performance.md) unless a threading mode in ``props`` or the environment asks for
    threads of their own; the same for ``name`` (``aeron.cluster.member.one.thread.service``: the hosted container on
    that thread too), false by default."""
    text = props.pop(name, None)
    if text is None:
        text = os.environ.get(name.upper().replace(".", "_"))
    if text is None or text == "":
        return name == ONE_THREAD_PROPERTY and not _own_threads_asked(props)
    return bool(parse_bool(text))


def _own_threads_asked(props: dict[str, str]) -> bool:
    for key, modes in _OWN_THREAD_MODES.items():
        mode = props.get(key) or os.environ.get(key.upper().replace(".", "_")) or ""
        if mode.strip().upper() in modes:
            return True
    return False


def split_properties(props: dict[str, str]) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """``(driver, archive, consensus module)`` properties (see the module docstring)."""
    cluster = {k: v for k, v in props.items() if k.startswith("aeron.cluster.")}
    archive = {k: v for k, v in props.items() if k.startswith("aeron.archive.")}
    driver = {k: v for k, v in props.items() if k not in cluster and k not in archive}
    if "aeron.dir" in props:
        cluster["aeron.dir"] = archive["aeron.dir"] = props["aeron.dir"]
    if "aeron.archive.file.sync.level" in archive:
        cluster["aeron.archive.file.sync.level"] = archive["aeron.archive.file.sync.level"]
    return driver, archive, cluster


def split_container_properties(cluster: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """``(consensus module, container)`` properties of the ``aeron.cluster.*`` ones: a property the container reads
    goes to it, and to the consensus module too unless only the container knows it (the service's class name,
    id, ...); any other goes to the consensus module, which refuses one it does not know."""
    container = {k: v for k, v in cluster.items() if container_property(k)}
    consensus_module = {k: v for k, v in cluster.items()
                        if k not in container or ConsensusModuleContext.find_setting(k) is not None}
    return consensus_module, container


def member_archive_defaults(cluster: dict[str, str], archive: dict[str, str]) -> None:
    """Default the archive's control and replication channels and its id from this member's archive endpoint."""
    members = ClusterMember.parse(cluster.get("aeron.cluster.members"))
    member_id = int(cluster.get("aeron.cluster.member.id", "0"))
    member = ClusterMember.find_member(members, member_id)
    if member is None:
        return
    host = member.archive_endpoint.rsplit(":", 1)[0]
    archive.setdefault("aeron.archive.control.channel", f"aeron:udp?endpoint={member.archive_endpoint}")
    archive.setdefault("aeron.archive.replication.channel", f"aeron:udp?endpoint={host}:0")
    archive.setdefault("aeron.archive.id", str(member_id))


def main(argv: list[str] | None = None) -> int:
    """Run a cluster member until a signal or its termination; returns the exit status."""
    args = sys.argv[1:] if argv is None else argv
    if any(arg in ("-h", "--help") for arg in args):
        print(__doc__)
        return 0
    if "--version" in args:
        print(VERSION_TEXT)
        return 0
    stop = threading.Event()
    container_terminated = threading.Event()
    try:
        props = read_properties(args)
        one_thread = one_thread_setting(props)
        service_on_thread = one_thread_setting(props, ONE_THREAD_SERVICE_PROPERTY)
        driver_props, archive_props, cluster_props = split_properties(props)
        member_archive_defaults(cluster_props, archive_props)
        cluster_props, container_props = split_container_properties(cluster_props)
        container_ctx = ContainerContext(container_props, termination_hook=container_terminated.set)
        if service_on_thread and not (one_thread and container_ctx.service_class_name):
            raise ValueError(f"{ONE_THREAD_SERVICE_PROPERTY}=true needs {ONE_THREAD_PROPERTY}=true and a hosted "
                             "service (aeron.cluster.service.class.name)")
    except (OSError, ValueError, AeronError) as ex:
        print(f"aeron.cluster: {ex}", file=sys.stderr)
        return 2
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    container = None
    try:
        cm_ctx = ConsensusModuleContext(cluster_props, termination_hook=stop.set)
        running = ClusteredMediaDriver.launch(MediaDriver.Context(driver_props), ArchiveContext(archive_props), cm_ctx,
                                              one_thread=one_thread,
                                              service_container_context=container_ctx if service_on_thread else None)
        container = running.service_container
    except AeronError as ex:
        print(f"aeron.cluster: {ex}", file=sys.stderr)
        return 1
    try:
        if container_ctx.service_class_name and container is None:
            container_ctx.aeron_dir = running.media_driver.aeron_dir
            try:
                container = ClusteredServiceContainer.launch(container_ctx)
            except AeronError as ex:
                print(f"aeron.cluster: {ex}", file=sys.stderr)
                return 1
        hosted = f", service {container_ctx.service_class_name}" if container is not None else ""
        print(f"aeron.cluster: member {cm_ctx.cluster_member_id} running (aeron.dir={running.media_driver.aeron_dir}"
              f"{hosted})", file=sys.stderr, flush=True)
        wait_for_termination(running, stop, container_terminated, cm_ctx.termination_timeout_ns)
    finally:
        try:
            if container is not None and container is not running.service_container:
                container.close()
        finally:
            running.close()         # and a container on its thread
    return 0


def wait_for_termination(running: ClusteredMediaDriver, stop: threading.Event, container_terminated: threading.Event,
                         termination_timeout_ns: int) -> None:
    """Until a signal, the consensus module's termination, or the termination timeout after the hosted container
    terminated alone (a service that failed: Aeron's member would go on without it, as its container is another
    process, until an operator stops it; here the member ends with it)."""
    container_deadline = None
    while not stop.wait(0.2):
        if running.consensus_module.is_terminated:
            return
        if container_terminated.is_set():
            if container_deadline is None:
                container_deadline = time.monotonic() + termination_timeout_ns / 1e9
            elif time.monotonic() > container_deadline:
                print("aeron.cluster: the service container terminated; stopping the member", file=sys.stderr,
                      flush=True)
                return


if __name__ == "__main__":
    sys.exit(main())
