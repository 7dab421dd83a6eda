# SPDX-License-Identifier: Apache-2.0
"""The clustered service side of Aeron Cluster (``io.aeron.cluster.service``): the mark files of the consensus
module and the service containers, the cluster counters, the recovery state counter, ``Cluster.Role`` and
``ClusteredServiceContainer.Configuration``."""
