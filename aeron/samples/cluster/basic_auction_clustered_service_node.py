# SPDX-License-Identifier: Apache-2.0
"""Port of the Aeron Cluster tutorial's node, ``io.aeron.samples.cluster.tutorial.BasicAuctionClusteredServiceNode``:
one cluster member in one process, a media driver, an archive and a consensus module (a ``ClusteredMediaDriver``)
with a ``ClusteredServiceContainer`` running ``BasicAuctionClusteredService`` beside them.

    python -m aeron.samples.cluster.basic_auction_clustered_service_node -Daeron.cluster.tutorial.nodeId=0 \\
        [-Daeron.cluster.tutorial.hostnames=localhost,localhost,localhost] [-Dname=value ...]

As the Java sample: member ``nodeId`` of the cluster of ``hostnames`` (one member each) listens on ``hostnames[nodeId]``
at ``9000 + 100 * nodeId +`` 1 (archive control), 2 (ingress), 3 (consensus), 4 (log), 5 (catch-up); it keeps its
archive and cluster directories under ``node<nodeId>`` in the working directory and its driver in
``<aeron.dir>-<nodeId>-driver``. Other ``-D`` properties (``aeron.*``, as the JVM's system properties) are the
defaults the tutorial's settings go over: ``-Daeron.cluster.log.channel=aeron:udp?term-length=64k``, for one. It
prints ``[<nodeId>] Started Cluster Node on <hostname>...`` and, on SIGINT, SIGTERM or the cluster's shutdown,
``[<nodeId>] Exiting...``; exits 2 for bad arguments, 1 when the node could not start.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Sequence

from aeron.archive.archive import Context as ArchiveContext
from aeron.archive.client import Context as AeronArchiveContext
from aeron.cluster.__main__ import split_properties
from aeron.cluster.clustered_media_driver import ClusteredMediaDriver
from aeron.cluster.consensus_module import Context as ConsensusModuleContext
from aeron.cluster.service.clustered_service_container import ClusteredServiceContainer, container_property
from aeron.cluster.service.clustered_service_container import Context as ClusteredServiceContainerContext
from aeron.common.errors import AeronError
from aeron.common.paths import default_aeron_dir
from aeron.common.settings import read_properties
from aeron.driver import Context as MediaDriverContext
# the ports' rule, kept with the tutorial's client (Java's client asks the node's class for it)
from aeron.samples.cluster.basic_auction_cluster_client import (CLIENT_FACING_PORT_OFFSET, PORT_BASE,  # noqa: F401
                                                                PORTS_PER_NODE, calculate_port)
from aeron.samples.cluster.basic_auction_clustered_service import BasicAuctionClusteredService

ARCHIVE_CONTROL_PORT_OFFSET = 1
MEMBER_FACING_PORT_OFFSET = 3
LOG_PORT_OFFSET = 4
TRANSFER_PORT_OFFSET = 5
LOG_CONTROL_PORT_OFFSET = 6
TERM_LENGTH = 64 * 1024


def udp_channel(node_id: int, hostname: str, port_offset: int) -> str:
    """A UDP channel on the node's port ``port_offset``, 64 KiB terms (``udpChannel``)."""
    return f"aeron:udp?endpoint={hostname}:{calculate_port(node_id, port_offset)}|term-length={TERM_LENGTH}"


def log_replication_channel(hostname: str) -> str:
    """UDP on an ephemeral port of ``hostname`` (``logReplicationChannel``)."""
    return f"aeron:udp?endpoint={hostname}:0"


def cluster_members(hostnames: Sequence[str]) -> str:
    """``id,ingress,consensus,log,catchup,archive|`` for each host (``clusterMembers``, the trailing ``|`` too)."""
    members = []
    for i, host in enumerate(hostnames):
        endpoints = (CLIENT_FACING_PORT_OFFSET, MEMBER_FACING_PORT_OFFSET, LOG_PORT_OFFSET, TRANSFER_PORT_OFFSET,
                     ARCHIVE_CONTROL_PORT_OFFSET)
        members.append(f"{i}," + ",".join(f"{host}:{calculate_port(i, offset)}" for offset in endpoints) + "|")
    return "".join(members)


def error_handler(context: str) -> Callable[[BaseException], None]:
    """Print the part that failed and the error's trace to stderr (``errorHandler``)."""
    def on_error(error: BaseException) -> None:
        print(context, file=sys.stderr)
        traceback.print_exception(error, file=sys.stderr)
    return on_error


def main(argv: Sequence[str] | None = None) -> int:
    """Run node ``aeron.cluster.tutorial.nodeId`` until SIGINT, SIGTERM or the cluster's shutdown."""
    args = sys.argv[1:] if argv is None else argv
    if any(arg in ("-h", "--help") for arg in args):
        print(__doc__)
        return 0
    try:
        properties = read_properties(args)
        node_id = int(properties["aeron.cluster.tutorial.nodeId"])
        hostnames = properties.get("aeron.cluster.tutorial.hostnames", "localhost,localhost,localhost").split(",")
        hostname = hostnames[node_id]
    except (OSError, KeyError, ValueError, IndexError) as ex:
        print(f"basic_auction_clustered_service_node: -Daeron.cluster.tutorial.nodeId=<index into "
              f"aeron.cluster.tutorial.hostnames> is needed: {ex!r}", file=sys.stderr)
        return 2
    base_dir = os.path.join(os.getcwd(), f"node{node_id}")
    aeron_dir_name = f"{properties.get('aeron.dir') or default_aeron_dir()}-{node_id}-driver"
    # the tutorial's own properties are for this launcher, not for the consensus module
    driver_props, archive_props, cluster_props = split_properties(
        {k: v for k, v in properties.items() if not k.startswith("aeron.cluster.tutorial.")})

    barrier = threading.Event()                # Java's ShutdownSignalBarrier, with the signals below
    try:
        # the driver has no error handler to give: its errors go to its error log (AeronStat, ErrorStat read it)
        media_driver_context = MediaDriverContext(
            driver_props, aeron_dir=aeron_dir_name, threading_mode="SHARED", term_buffer_sparse_file=True,
            multicast_flow_control_strategy="min", termination_hook=barrier.set)
        # Java gives the archive a client context whose replication control responses come to hostname:0; ours
        # derives that response channel from the source archive's control channel
        archive_context = ArchiveContext(
            archive_props, aeron_dir=aeron_dir_name, archive_dir=os.path.join(base_dir, "archive"),
            control_channel=udp_channel(node_id, hostname, ARCHIVE_CONTROL_PORT_OFFSET),
            local_control_channel="aeron:ipc?term-length=64k", recording_events_enabled=False,
            threading_mode="SHARED", replication_channel=f"aeron:udp?endpoint={hostname}:0")

        def aeron_archive_context() -> AeronArchiveContext:
            return AeronArchiveContext(control_request_channel=archive_context.local_control_channel,
                                       control_response_channel=archive_context.local_control_channel,
                                       aeron_dir=aeron_dir_name)

        consensus_module_context = ConsensusModuleContext(cluster_props)
        consensus_module_context.error_handler = error_handler("Consensus Module")
        consensus_module_context.cluster_member_id = node_id
        consensus_module_context.cluster_members = cluster_members(hostnames)
        consensus_module_context.cluster_dir = os.path.join(base_dir, "cluster")
        consensus_module_context.ingress_channel = "aeron:udp?term-length=64k"
        consensus_module_context.replication_channel = log_replication_channel(hostname)
        consensus_module_context.archive_context = aeron_archive_context()
        consensus_module_context.termination_hook = barrier.set

        clustered_service_context = ClusteredServiceContainerContext(
            {k: v for k, v in properties.items() if container_property(k)}, aeron_dir=aeron_dir_name,
            archive_context=aeron_archive_context(), cluster_dir=os.path.join(base_dir, "cluster"),
            clustered_service=BasicAuctionClusteredService(), error_handler=error_handler("Clustered Service"),
            termination_hook=barrier.set)
    except (AeronError, ValueError) as ex:
        print(f"basic_auction_clustered_service_node: {ex}", file=sys.stderr)
        return 2

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: barrier.set())
    try:
        clustered_media_driver = ClusteredMediaDriver.launch(media_driver_context, archive_context,
                                                             consensus_module_context)
    except AeronError as ex:
        print(f"basic_auction_clustered_service_node: {ex}", file=sys.stderr)
        return 1
    try:
        try:
            container = ClusteredServiceContainer.launch(clustered_service_context)
        except AeronError as ex:
            print(f"basic_auction_clustered_service_node: {ex}", file=sys.stderr)
            return 1
        try:
            print(f"[{node_id}] Started Cluster Node on {hostname}...", flush=True)
            barrier.wait()
            print(f"[{node_id}] Exiting...", flush=True)
        finally:
            container.close()
    finally:
        clustered_media_driver.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
