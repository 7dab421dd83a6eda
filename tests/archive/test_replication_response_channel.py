# SPDX-License-Identifier: Apache-2.0
"""The control response channel a replication's connection to the source archive uses when the request names none:
on this archive's host (Aeron's Archive.Context.conclude derives it from the archive's own control channel), not
the source's. Found by the cluster fault campaign (tests/cluster/faults) with each member on its own address: a
follower's archive subscribed for the leader's responses at the leader's address, could not bind it, and never
caught up; on one host both addresses are the same and nothing showed."""
from __future__ import annotations

from aeron.archive.replication_session import default_response_channel


def test_the_response_channel_is_on_this_archives_host():
    assert default_response_channel("aeron:udp?endpoint=10.77.0.3:20003",
                                    "aeron:udp?endpoint=10.77.0.1:20003") == "aeron:udp?endpoint=10.77.0.1:0"


def test_an_ipc_source_answers_on_ipc():
    assert default_response_channel("aeron:ipc", "aeron:udp?endpoint=10.77.0.1:20003") == "aeron:ipc"


def test_without_a_udp_control_channel_of_its_own_the_sources_host_is_used():
    assert default_response_channel("aeron:udp?endpoint=10.77.0.3:20003", None) == "aeron:udp?endpoint=10.77.0.3:0"
    assert default_response_channel("aeron:udp?endpoint=10.77.0.3:20003", "aeron:ipc") == \
        "aeron:udp?endpoint=10.77.0.3:0"
