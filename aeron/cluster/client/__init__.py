# SPDX-License-Identifier: Apache-2.0
"""The Aeron Cluster client side (``io.aeron.cluster.client``): ``AeronCluster.Configuration``. It imports no
consensus module, service container or archive code (docs/layers.md)."""
