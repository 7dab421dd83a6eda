# SPDX-License-Identifier: Apache-2.0
"""Cluster samples, ports of Aeron's ``io.aeron.samples.cluster``: the :class:`~aeron.samples.cluster.echo_service.
EchoService`, the BasicAuction tutorial's service
(:class:`~aeron.samples.cluster.basic_auction_clustered_service.BasicAuctionClusteredService`), each run in a
:class:`~aeron.cluster.service.clustered_service_container.ClusteredServiceContainer` beside a consensus module,
and the tutorial's client (``python -m aeron.samples.cluster.basic_auction_cluster_client``)."""
