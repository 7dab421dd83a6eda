# SPDX-License-Identifier: Apache-2.0
"""Fixtures of the cluster system tests: clusters of our members (tests/cluster/system/members.py), each member its
own process with the register service in it, and the embedded driver (``driver``) our clients run on."""
from __future__ import annotations

import pathlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests import support
from tests.cluster.system.members import TestCluster
from tests.cluster.system.register_client import RegisterClient


@pytest.fixture
def make_cluster(shm_dir: pathlib.Path) -> Iterator[Callable[..., TestCluster]]:
    """``make_cluster(size=3, **member_options)``: a started cluster with a leader, in the test's /dev/shm directory;
    every member is stopped after the test."""
    made: list[TestCluster] = []

    def make(size: int = 3, **member_options: Any) -> TestCluster:
        cluster = TestCluster(shm_dir / f"cluster{len(made)}", size, **member_options)
        made.append(cluster)
        cluster.start()
        cluster.leader()
        return cluster

    yield make
    for cluster in made:
        cluster.stop()


# a member's threads: a driver thread, an archive thread and the consensus module's, or all of them on one (the
# launcher's default: aeron.cluster.member.one.thread, ClusteredMediaDriver.launch(one_thread=True))
MEMBER_THREADING = [pytest.param({"aeron.cluster.member.one.thread": "false"}, id="threads"),
                    pytest.param({}, id="one-thread")]


@pytest.fixture(params=MEMBER_THREADING)
def member_threading(request: pytest.FixtureRequest) -> dict[str, str]:
    """The member properties of each way to run a member's agents: ``make_cluster(**member_threading)`` runs a test
    with both."""
    return dict(request.param)


# and, for a member hosting its service (container="in-process"), that container on the one thread as well
# (aeron.cluster.member.one.thread.service, ClusteredMediaDriver.launch(service_container_context=...))
HOSTED_THREADING = [*MEMBER_THREADING,
                    pytest.param({"aeron.cluster.member.one.thread.service": "true"}, id="one-thread-service")]


@pytest.fixture(params=HOSTED_THREADING)
def hosted_threading(request: pytest.FixtureRequest) -> dict[str, str]:
    """:func:`member_threading`'s properties, and the one thread with the hosted container on it."""
    return dict(request.param)


@pytest.fixture(scope="module", params=MEMBER_THREADING)
def shared_cluster(request: pytest.FixtureRequest) -> Iterator[TestCluster]:
    """A cluster of three, shared by a module's tests that stop no member (each test has clients of its own names),
    once with each way to run a member's agents (MEMBER_THREADING); its sessions time out after 5 s without a
    keep-alive."""
    with support.shm_directory("aeron-py-cluster-system") as base:
        cluster = TestCluster(base, 3, **{"aeron.cluster.session.timeout": "5s", **request.param})
        try:
            cluster.start()
            cluster.leader()
            cluster.wait_for_followers(2)
            yield cluster
        finally:
            cluster.stop()


@pytest.fixture
def make_client(driver: Any) -> Iterator[Callable[..., RegisterClient]]:
    """``make_client(name, ingress_endpoints, **settings)``: a RegisterClient on the test's embedded driver, closed
    after the test."""
    made: list[RegisterClient] = []

    def make(name: str, endpoints: str, **settings: Any) -> RegisterClient:
        client = RegisterClient(name, driver.aeron_dir, endpoints, **settings)
        made.append(client)
        return client

    yield make
    for client in made:
        try:
            client.close()
        except Exception as exc:        # noqa: BLE001 - a cluster already gone: nothing to close
            print(f"closing client {client.name}: {exc!r}")
