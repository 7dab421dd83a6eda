# SPDX-License-Identifier: Apache-2.0
"""The clustered service side of Aeron Cluster (``io.aeron.cluster.service``): the clustered service container
(:mod:`~aeron.cluster.service.clustered_service_container`: ``ClusteredServiceContainer``, its ``Context`` and
``Configuration``), the ``ClusteredService`` callbacks, the ``Cluster`` and ``ClientSession`` a service is given,
and what the consensus module shares with it: the mark files, the cluster counters, the recovery state counter,
``Cluster.Role``. ``python -m aeron.cluster.service`` runs a container in its own process."""
