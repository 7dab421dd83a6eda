# SPDX-License-Identifier: Apache-2.0
"""``python -m aeron.cluster [props-file ...] [key=value ...]``: a cluster member (Aeron ``ClusteredMediaDriver.main``):
our media driver, an archive and a consensus module in this process. Its clustered services run in their own
processes on the same driver directory (Java's ``ClusteredServiceContainer``, for one).

Settings are Aeron's properties from ``AERON_*`` environment variables, properties files and ``key=value``
arguments (``-D`` prefixes allowed), later ones winning: ``aeron.cluster.*`` go to the consensus module,
``aeron.archive.*`` to the archive, the other ``aeron.*`` to the driver, ``aeron.dir`` to all three. Unless given,
the archive's control channel is UDP on this member's archive endpoint (from ``aeron.cluster.members`` and
``aeron.cluster.member.id``), its replication channel UDP on the same host's ephemeral port, and its archive id the
member id, so that the other members can replicate this member's log.

Runs until SIGINT or SIGTERM, or until the consensus module terminates (ClusterTool ``shutdown`` or ``abort``);
exits 0 then, 1 when it could not start, 2 for bad arguments.
"""
from __future__ import annotations

import signal
import sys
import threading

from aeron.archive.archive import Context as ArchiveContext
from aeron.cluster.cluster_member import ClusterMember
from aeron.cluster.clustered_media_driver import ClusteredMediaDriver
from aeron.cluster.consensus_module import Context as ConsensusModuleContext
from aeron.common.errors import AeronError
from aeron.common.settings import read_properties
from aeron.common.version import VERSION_TEXT
from aeron.driver.media_driver import MediaDriver


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
    try:
        driver_props, archive_props, cluster_props = split_properties(read_properties(args))
        member_archive_defaults(cluster_props, archive_props)
    except (OSError, ValueError, AeronError) as ex:
        print(f"aeron.cluster: {ex}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        cm_ctx = ConsensusModuleContext(cluster_props, termination_hook=stop.set)
        running = ClusteredMediaDriver.launch(MediaDriver.Context(driver_props), ArchiveContext(archive_props), cm_ctx)
    except AeronError as ex:
        print(f"aeron.cluster: {ex}", file=sys.stderr)
        return 1
    print(f"aeron.cluster: member {cm_ctx.cluster_member_id} running (aeron.dir={running.media_driver.aeron_dir})",
          file=sys.stderr, flush=True)
    try:
        while not stop.wait(0.5):
            if running.consensus_module.is_terminated:
                break
    finally:
        running.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
