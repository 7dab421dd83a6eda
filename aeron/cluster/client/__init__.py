# SPDX-License-Identifier: Apache-2.0
"""The Aeron Cluster client (Aeron's ``io.aeron.cluster.client``): :class:`AeronCluster` with its ``Context``,
``Configuration`` and ``AsyncConnect``; the egress listeners, adapters and poller; the client's errors.

It builds on the Aeron client and the cluster's codecs only: importing it loads no consensus module, clustered
service container or archive (docs/layers.md). The asyncio face is :mod:`aeron.aio.cluster`.
"""
from aeron.cluster.client.aeron_cluster import (NULL_VALUE, SESSION_HEADER_LENGTH, AeronCluster, AsyncConnect,
                                                Configuration, Context, ContextSettings, MemberIngress, State, connect_op,
                                                parse_ingress_endpoints)
from aeron.cluster.client.egress_adapter import ControlledEgressAdapter, EgressAdapter
from aeron.cluster.client.egress_listener import (AdminRequestType, AdminResponseCode, CloseReason,
                                                  ControlledEgressListener, ControlledEgressListenerExtension,
                                                  EgressListener, EgressListenerExtension, EventCode)
from aeron.cluster.client.ingress_session_decorator import IngressSessionDecorator
from aeron.cluster.client.egress_poller import EgressPoller
from aeron.cluster.client.errors import (ClusterAuthenticationError, ClusterError, ClusterSessionClosedError,
                                         ClusterTimeoutError)

__all__ = [
    "AeronCluster", "AsyncConnect", "Configuration", "Context", "ContextSettings", "MemberIngress", "State", "connect_op",
    "parse_ingress_endpoints", "NULL_VALUE", "SESSION_HEADER_LENGTH",
    "EgressAdapter", "ControlledEgressAdapter", "EgressListener", "ControlledEgressListener",
    "EgressListenerExtension", "ControlledEgressListenerExtension", "EgressPoller", "IngressSessionDecorator",
    "EventCode", "CloseReason", "AdminRequestType", "AdminResponseCode",
    "ClusterError", "ClusterTimeoutError", "ClusterAuthenticationError", "ClusterSessionClosedError",
]
