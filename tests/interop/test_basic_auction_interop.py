# SPDX-License-Identifier: Apache-2.0
"""Our port of the cluster tutorial's client (``aeron.samples.cluster.basic_auction_cluster_client``) bids in the
official Java ``BasicAuctionClusteredServiceNode``: same properties, same stdout as the Java client's (the golden
file, prices aside: they are random). The node hard-codes ports 9001-9006, so node and client run inside a private
network namespace (``unshare -n``, loopback brought up) and no port of the host is touched. Needs AERON_JAVA_CP and
permission to make a network namespace (skips without)."""
from __future__ import annotations

import re

from tests.interop.cluster_support import run_in_namespace

SCRIPT = r"""
set -u
ip link set lo up
cd "$WORK"
java $JVM -cp "$CP" -Daeron.dir="$NODE_AERON_DIR" -Daeron.cluster.tutorial.nodeId=0 \
    -Daeron.cluster.tutorial.hostnames=127.0.0.1 -Daeron.term.buffer.length=65536 \
    -Daeron.ipc.term.buffer.length=65536 -Daeron.archive.segment.file.length=65536 \
    -Daeron.cluster.log.channel='aeron:udp?term-length=64k' \
    io.aeron.samples.cluster.tutorial.BasicAuctionClusteredServiceNode > node.out 2>&1 &
NODE=$!
tries=0
until java $JVM -cp "$CP" io.aeron.cluster.ClusterTool node0/cluster is-leader > /dev/null 2>&1; do
    tries=$((tries + 1))
    if [ $tries -gt 200 ] || ! kill -0 $NODE 2> /dev/null; then echo "no leader" >&2; kill -9 $NODE; exit 3; fi
    sleep 0.2
done
"$PYTHON" -m aeron.samples.cluster.basic_auction_cluster_client -Daeron.cluster.tutorial.customerId=1 \
    -Daeron.cluster.tutorial.numOfBids=3 -Daeron.cluster.tutorial.bidIntervalMs=200 \
    -Daeron.cluster.tutorial.hostnames=127.0.0.1 > client.out 2> client.err
status=$?
# the session's close (by the client's close request, or the session timeout should the request be lost with the
# client's driver closing right after it) before the node stops, so the node's output is complete
tries=0
until grep -q '^onSessionClose(' node.out || [ $tries -gt 300 ]; do tries=$((tries + 1)); sleep 0.1; done
kill -TERM $NODE          # a background job of a script ignores SIGINT; the node's barrier takes TERM as well
wait $NODE
exit $status
"""

# the Java client's lines, prices being random: Sent(correlationId, customerId, price) and the auction's answers
SENT = re.compile(r"Sent\((\d+), (\d+), (\d+)\) bidsRemaining=(\d+)")
ANSWER = re.compile(r"SessionMessage\((\d+), (\d+),(\d+), (\d+), (true|false)\)")


def _shape(line: str) -> str:
    # a bid no higher than the best price loses (the price is the last seen plus 0 to 9): the outcome is checked
    # against the auction's rule below, not against the golden run's
    return re.sub(r"\b(true|false)\b", "B", re.sub(r"\d+", "N", line))


def test_the_ported_client_bids_in_the_java_tutorial_cluster_as_the_java_client_does(shm_dir, golden_dir):
    status, files = run_in_namespace(SCRIPT, shm_dir / "auction", 100, NODE_AERON_DIR=str(shm_dir / "node-driver"))
    client_out, node_out = files.get("client.out", ""), files.get("node.out", "")
    assert status == 0, files
    golden = (golden_dir / "cluster" / "expected" / "BasicAuctionClusterClient.out.txt").read_text().splitlines()
    lines = client_out.splitlines()
    # the client bids on a timer, so on a busy machine an answer may come after its next bid: the bids and the
    # answers are compared each in their order
    for kind in ("Sent(", "SessionMessage("):
        assert [_shape(line) for line in lines if line.startswith(kind)] == \
            [_shape(line) for line in golden if line.startswith(kind)], client_out
    sent = [SENT.fullmatch(line) for line in lines if line.startswith("Sent(")]
    answers = [ANSWER.fullmatch(line) for line in lines if line.startswith("SessionMessage(")]
    seen = [100]                                            # the prices the client may have last seen
    for i, (bid, answer) in enumerate(zip(sent, answers)):
        assert bid is not None and answer is not None, client_out
        correlation_id, customer_id, price, bids_remaining = map(int, bid.groups())
        assert (correlation_id, customer_id, bids_remaining) == (i, 1, 2 - i)
        assert any(last <= price < last + 10 for last in seen), client_out     # the last price seen plus up to 9
        assert answer.group(1) == "1" and int(answer.group(2)) == i and answer.group(3) == "1"
        best = int(answer.group(4))
        # won: the best price is now this bid's, above every earlier best; lost: the best stays at or above it
        assert (answer.group(5) == "true") == (best == price and best > max(seen[1:], default=0)), client_out
        seen.append(best)
    # the node saw the session open, the three bids and the client's close
    assert "onSessionOpen(ClientSession{id=1" in node_out
    assert node_out.count("attemptBid(") == 3
    assert "onSessionClose(ClientSession{id=1" in node_out
