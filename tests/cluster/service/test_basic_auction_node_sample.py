# SPDX-License-Identifier: Apache-2.0
"""The cluster tutorial node's port without Java and without its fixed ports: the members string and channels it
builds (Java's ``BasicAuctionClusteredServiceNode``'s), and its refusals of bad arguments. The node running, with
Java's tutorial client bidding, is tests/interop/test_basic_auction_node_interop.py."""
from __future__ import annotations

from aeron.samples.cluster import basic_auction_clustered_service_node as node


def test_members_and_channels_are_the_java_nodes():
    # id, then ingress (+2), consensus (+3), log (+4), catch-up (+5) and archive (+1), each member closed by "|"
    assert node.cluster_members(["a", "b"]) == ("0,a:9002,a:9003,a:9004,a:9005,a:9001|"
                                                "1,b:9102,b:9103,b:9104,b:9105,b:9101|")
    assert node.udp_channel(2, "h", node.ARCHIVE_CONTROL_PORT_OFFSET) == "aeron:udp?endpoint=h:9201|term-length=65536"
    assert node.log_replication_channel("h") == "aeron:udp?endpoint=h:0"


def test_bad_arguments_exit_2_and_say_what_is_needed(capsys):
    assert node.main([]) == 2
    assert "aeron.cluster.tutorial.nodeId" in capsys.readouterr().err
    assert node.main(["-Daeron.cluster.tutorial.nodeId=3", "-Daeron.cluster.tutorial.hostnames=a,b"]) == 2
    assert node.main(["-Daeron.cluster.tutorial.nodeId=x"]) == 2
    assert node.main(["/no/such/properties/file"]) == 2
    assert node.main(["-Daeron.cluster.tutorial.nodeId=0", "-Daeron.cluster.no.such.property=1"]) == 2
    assert "aeron.cluster.no.such.property" in capsys.readouterr().err
    assert node.main(["--help"]) == 0
    assert "BasicAuctionClusteredServiceNode" in capsys.readouterr().out
