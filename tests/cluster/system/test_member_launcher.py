# SPDX-License-Identifier: Apache-2.0
"""``python -m aeron.cluster`` hosting a clustered service container in the member's process when given
``aeron.cluster.service.class.name`` (Java's ClusteredServiceContainer property): the properties each part gets,
the help text, a service that cannot be loaded, and a single member whose service answers."""
from __future__ import annotations

import subprocess

import pytest

from aeron.cluster import tool
from aeron.cluster.__main__ import (
    ONE_THREAD_PROPERTY,
    ONE_THREAD_SERVICE_PROPERTY,
    main,
    one_thread_setting,
    split_container_properties,
)
from tests.cluster.system.members import REPO, MemberProcess, cluster_members
from tests.cluster.system.register_client import add_value
from tests.support import wait_for

pytestmark = pytest.mark.timeout(300)


def test_container_properties_go_to_the_container_and_shared_ones_to_both():
    cm, container = split_container_properties({
        "aeron.cluster.service.class.name": "pkg.module:Service", "aeron.cluster.service.id": "1",
        "aeron.cluster.dir": "/tmp/c", "aeron.cluster.control.channel": "aeron:ipc?term-length=64k",
        "aeron.cluster.member.id": "2", "aeron.cluster.nonsense": "x"})
    assert container == {"aeron.cluster.service.class.name": "pkg.module:Service", "aeron.cluster.service.id": "1",
                         "aeron.cluster.dir": "/tmp/c", "aeron.cluster.control.channel": "aeron:ipc?term-length=64k"}
    # the consensus module refuses the property nobody knows, as before
    assert cm == {"aeron.cluster.dir": "/tmp/c", "aeron.cluster.control.channel": "aeron:ipc?term-length=64k",
                  "aeron.cluster.member.id": "2", "aeron.cluster.nonsense": "x"}


def test_help_names_the_hosted_service_property(capsys):
    assert main(["--help"]) == 0
    assert "aeron.cluster.service.class.name" in capsys.readouterr().out


def test_a_bad_container_property_is_refused_before_anything_starts(capsys):
    assert main(["aeron.cluster.service.id=eleven"]) == 2
    assert "aeron.cluster.service.id" in capsys.readouterr().err


def test_the_one_thread_property_is_the_launchers_and_a_bad_value_is_refused(capsys, monkeypatch):
    monkeypatch.delenv("AERON_CLUSTER_MEMBER_ONE_THREAD", raising=False)
    props = {ONE_THREAD_PROPERTY: "true", "aeron.cluster.member.id": "0"}
    assert one_thread_setting(props) is True
    assert props == {"aeron.cluster.member.id": "0"}            # no part is given it (the consensus module refuses it)
    assert one_thread_setting({ONE_THREAD_PROPERTY: "off"}) is False
    monkeypatch.setenv("AERON_CLUSTER_MEMBER_ONE_THREAD", "no")
    assert one_thread_setting({}) is False
    assert one_thread_setting({ONE_THREAD_PROPERTY: "on"}) is True        # a property wins over the variable
    assert main([f"{ONE_THREAD_PROPERTY}=sometimes"]) == 2
    assert "sometimes" in capsys.readouterr().err


def test_a_member_is_on_one_thread_by_default_unless_its_threading_modes_ask_for_threads(monkeypatch):
    for name in ("AERON_CLUSTER_MEMBER_ONE_THREAD", "AERON_THREADING_MODE", "AERON_ARCHIVE_THREADING_MODE"):
        monkeypatch.delenv(name, raising=False)
    assert one_thread_setting({}) is True
    assert one_thread_setting({"aeron.threading.mode": "SHARED", "aeron.archive.threading.mode": "SHARED"}) is True
    assert one_thread_setting({"aeron.threading.mode": "INVOKER"}) is True
    assert one_thread_setting({"aeron.threading.mode": "dedicated"}) is False
    assert one_thread_setting({"aeron.threading.mode": "SHARED_NETWORK"}) is False
    assert one_thread_setting({"aeron.archive.threading.mode": "DEDICATED"}) is False
    # asked for by name, the one thread still wins (the parts run in INVOKER whatever their modes say)
    assert one_thread_setting({ONE_THREAD_PROPERTY: "true", "aeron.threading.mode": "DEDICATED"}) is True
    monkeypatch.setenv("AERON_THREADING_MODE", "DEDICATED")
    assert one_thread_setting({}) is False
    # the hosted service's setting keeps false as its default
    assert one_thread_setting({}, ONE_THREAD_SERVICE_PROPERTY) is False


def test_the_service_on_the_one_thread_needs_the_one_thread_and_a_hosted_service(capsys, monkeypatch):
    for name in ("AERON_CLUSTER_MEMBER_ONE_THREAD", "AERON_CLUSTER_MEMBER_ONE_THREAD_SERVICE",
                 "AERON_CLUSTER_SERVICE_CLASS_NAME"):
        monkeypatch.delenv(name, raising=False)
    props = {ONE_THREAD_SERVICE_PROPERTY: "true"}
    assert one_thread_setting(props, ONE_THREAD_SERVICE_PROPERTY) is True and props == {}
    # refused before anything starts: without the one thread, or without a service to host
    assert main([f"{ONE_THREAD_SERVICE_PROPERTY}=true", f"{ONE_THREAD_PROPERTY}=false",
                 "aeron.cluster.service.class.name=pkg.module:Service"]) == 2
    assert ONE_THREAD_PROPERTY in capsys.readouterr().err
    assert main([f"{ONE_THREAD_SERVICE_PROPERTY}=true", f"{ONE_THREAD_PROPERTY}=true"]) == 2
    assert "aeron.cluster.service.class.name" in capsys.readouterr().err


def test_a_service_class_that_cannot_be_loaded_ends_the_member_with_status_1(shm_dir):
    member = MemberProcess(0, cluster_members(1), shm_dir, service="no_such_package.module:Service")
    result = subprocess.run(member.command(), cwd=str(REPO), env=member.env(), check=False, capture_output=True, text=True,
                            timeout=120, stdin=subprocess.DEVNULL)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "no_such_package.module:Service" in result.stderr


@pytest.mark.parametrize("container", ["in-process", "process"])
def test_a_single_member_runs_its_service_in_its_process_or_beside_it(shm_dir, make_client, container,
                                                                      member_threading):
    member = MemberProcess(0, cluster_members(1), shm_dir, container=container, **member_threading)
    try:
        member.start()
        wait_for(member.is_leader, 60, what="the member leading", interval_s=0.1)
        client = make_client("solo", f"0={member.ingress_endpoint}")
        assert client.call("add", add_value(0)) == str(add_value(0))
        assert member.service_state()["applied"] == ["solo:0"]
        assert (member.container_proc is None) == (container == "in-process")
        if member.container_proc is not None:
            assert member.container_proc.poll() is None
    finally:
        member.stop()
    assert member.proc is not None and member.proc.returncode == 0
    if container == "process":
        assert member.container_proc is None


def test_a_hosted_service_that_fails_to_start_ends_the_member(shm_dir, hosted_threading):
    # as Java's: the service's failure ends its container, the consensus module terminates on the failed ServiceAck
    # ("failed to start clustered service(s)"), and the member with it; the errors stay in the mark files
    member = MemberProcess(0, cluster_members(1), shm_dir, service="tests.cluster.system.register_service:FailingService",
                           **hosted_threading)
    result = subprocess.run(member.command(), cwd=str(REPO), env=member.env(), check=False, capture_output=True,
                            text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stdout + result.stderr
    errors = "\n".join(record.text for records in tool.errors(member.cluster_dir, out=None).values()
                       for record in records)
    assert "FailingService does not start" in errors and "failed to start clustered service" in errors, errors
