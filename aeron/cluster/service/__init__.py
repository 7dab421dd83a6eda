# SPDX-License-Identifier: Apache-2.0
"""The clustered service side of Aeron Cluster (``io.aeron.cluster.service``): the clustered service container
(:mod:`~aeron.cluster.service.clustered_service_container`: ``ClusteredServiceContainer``, its ``Context`` and
``Configuration``), the ``ClusteredService`` callbacks, the ``Cluster`` and ``ClientSession`` a service is given,
and what the consensus module shares with it: the mark files, the cluster counters, the recovery state counter,
``Cluster.Role``. ``python -m aeron.cluster.service`` runs a container in its own process.

The names below are imported on first use, so that the consensus module and the tools, which import the shared
modules of this package, load no container.
"""
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # What __getattr__ returns, spelt out for type checkers (``X as X``: an explicit re-export)
    from aeron.cluster.service.client_session import ClientSession as ClientSession
    from aeron.cluster.service.cluster import Cluster as Cluster
    from aeron.cluster.service.cluster import Role as Role
    from aeron.cluster.service.clustered_service import ClusteredService as ClusteredService
    from aeron.cluster.service.clustered_service_container import (
        ClusteredServiceContainer as ClusteredServiceContainer,
    )

_MODULES = {"ClientSession": "client_session", "Cluster": "cluster", "Role": "cluster",
            "ClusteredService": "clustered_service", "ClusteredServiceContainer": "clustered_service_container"}

__all__ = list(_MODULES)


def __getattr__(name: str) -> object:
    module_name = _MODULES.get(name)
    if module_name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib
    return getattr(importlib.import_module(f"{__name__}.{module_name}"), name)
