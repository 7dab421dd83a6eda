# SPDX-License-Identifier: Apache-2.0
"""Aeron Cluster: the consensus module's files, members, counters and configuration, file- and
protocol-compatible with official Aeron (``io.aeron.cluster``).

Nothing is imported here, so that ``aeron.cluster.client`` (the AeronCluster client) loads no server code.
Modules: :mod:`~aeron.cluster.recording_log`, :mod:`~aeron.cluster.node_state_file`,
:mod:`~aeron.cluster.cluster_member`, :mod:`~aeron.cluster.consensus_module` (its ``Configuration`` and
``State``), :mod:`~aeron.cluster.cluster_control`, :mod:`~aeron.cluster.node_control`,
:mod:`~aeron.cluster.election_state`, :mod:`~aeron.cluster.service` (the clustered service side: the service
container, mark files, counters), :mod:`~aeron.cluster.client` and
:mod:`~aeron.cluster.tool` (ClusterTool).
"""
