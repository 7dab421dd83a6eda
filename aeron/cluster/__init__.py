# SPDX-License-Identifier: Apache-2.0
"""Aeron Cluster (``io.aeron.cluster``), protocol-compatible with official Aeron.

Nothing is imported here, so that ``aeron.cluster.client`` (the AeronCluster client) loads no server code.
"""
