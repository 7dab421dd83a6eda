# SPDX-License-Identifier: Apache-2.0
"""Our port of the cluster tutorial's node (``aeron.samples.cluster.basic_auction_clustered_service_node``: our
ClusteredMediaDriver and our container with BasicAuctionClusteredService) takes the bids of Java's tutorial client,
``io.aeron.samples.cluster.tutorial.BasicAuctionClusterClient``, then of our port of it, and prints what Java's node
prints (the golden file, ids and prices aside); Java's ClusterTool snapshots it. With three of our nodes every
member's auction sees the same bids, and after the leader's SIGKILL Java's client bids with the new leader. The
node hard-codes ports 9001-9006 (+100 a node), so nodes and clients run inside a private network namespace
(``unshare -n``, loopback brought up) and no port of the host is touched. Needs AERON_JAVA_CP and permission to
make a network namespace (skips without)."""
from __future__ import annotations

import re

from tests.interop.cluster_support import run_in_namespace

# Runs in the namespace; $NODES nodes of ours, then the Java client, then ours, then a snapshot by Java's ClusterTool
# on the leader, then SIGTERM to the nodes. Each step's failure exits with its own status.
SCRIPT = r"""
set -u
ip link set lo up || exit 90
cd "$WORK"
PIDS=""
HOSTS=$(for i in $(seq 1 $NODES); do printf '127.0.0.1,'; done | sed 's/,$//')
for i in $(seq 0 $((NODES - 1))); do
    "$PYTHON" -m aeron.samples.cluster.basic_auction_clustered_service_node -Daeron.dir="$AERON_BASE" \
        -Daeron.cluster.tutorial.nodeId=$i -Daeron.cluster.tutorial.hostnames=$HOSTS \
        -Daeron.term.buffer.length=65536 -Daeron.ipc.term.buffer.length=65536 \
        -Daeron.archive.segment.file.length=65536 -Daeron.cluster.log.channel='aeron:udp?term-length=64k' \
        -Daeron.cluster.session.timeout=20s \
        > node$i.out 2> node$i.err &
    PIDS="$PIDS $!"
done
stop_nodes() { kill -TERM $PIDS 2> /dev/null; wait $PIDS; }
find_leader() {          # the leader among the nodes but node $1, in LEADER
    LEADER=""
    tries=0
    while [ -z "$LEADER" ]; do
        for i in $(seq 0 $((NODES - 1))); do
            if [ $i != "$1" ] && [ -f node$i/cluster/cluster-mark.dat ] && \
                    "$PYTHON" -m aeron.cluster.tool node$i/cluster is-leader > /dev/null 2>&1; then
                LEADER=$i
            fi
        done
        tries=$((tries + 1))
        if [ -z "$LEADER" ] && [ $tries -gt 300 ]; then return 1; fi
        [ -z "$LEADER" ] && sleep 0.3
    done
    return 0
}
find_leader -1 || { echo "no leader" >&2; stop_nodes; exit 91; }
echo $LEADER > leader
java $JVM -cp "$CP" -Daeron.dir="$AERON_BASE-java-client" -Daeron.cluster.tutorial.customerId=1 \
    -Daeron.cluster.tutorial.numOfBids=3 -Daeron.cluster.tutorial.bidIntervalMs=200 \
    -Daeron.cluster.tutorial.hostnames=$HOSTS -Daeron.term.buffer.length=65536 \
    io.aeron.samples.cluster.tutorial.BasicAuctionClusterClient > java-client.out 2> java-client.err \
    || { stop_nodes; exit 92; }
"$PYTHON" -m aeron.samples.cluster.basic_auction_cluster_client -Daeron.dir="$AERON_BASE-client" \
    -Daeron.cluster.tutorial.customerId=2 -Daeron.cluster.tutorial.numOfBids=3 \
    -Daeron.cluster.tutorial.bidIntervalMs=200 -Daeron.cluster.tutorial.hostnames=$HOSTS \
    > client.out 2> client.err || { stop_nodes; exit 93; }
# both sessions closed (by the clients' close requests, or the session timeout should a request be lost with a
# client's driver closing right after it) before the snapshot, so the node's output is complete
tries=0
until [ "$(grep -c '^onSessionClose(' node$LEADER.out)" -ge 2 ]; do
    tries=$((tries + 1))
    if [ $tries -gt 600 ]; then echo "sessions not closed" >&2; stop_nodes; exit 95; fi
    sleep 0.1
done
java $JVM -cp "$CP" io.aeron.cluster.ClusterTool node$LEADER/cluster snapshot > snapshot.out 2>&1 \
    || { stop_nodes; exit 94; }
if [ "${FAILOVER:-0}" = 1 ]; then
    # the leader's node dies without a word; the other two elect a leader, and Java's client bids with it
    set -- $PIDS
    eval "LEADER_PID=\${$((LEADER + 1))}"
    kill -KILL $LEADER_PID
    find_leader $LEADER || { echo "no new leader" >&2; stop_nodes; exit 96; }
    echo $LEADER > new-leader
    java $JVM -cp "$CP" -Daeron.dir="$AERON_BASE-java-client" -Daeron.cluster.tutorial.customerId=3 \
        -Daeron.cluster.tutorial.numOfBids=3 -Daeron.cluster.tutorial.bidIntervalMs=200 \
        -Daeron.cluster.tutorial.hostnames=$HOSTS -Daeron.term.buffer.length=65536 \
        io.aeron.samples.cluster.tutorial.BasicAuctionClusterClient > java-client-2.out 2> java-client-2.err \
        || { stop_nodes; exit 97; }
fi
stop_nodes
exit 0                  # whatever the killed node's status
"""

SENT = re.compile(r"Sent\((\d+), (\d+), (\d+)\) bidsRemaining=(\d+)")
ANSWER = re.compile(r"SessionMessage\((\d+), (\d+),(\d+), (\d+), (true|false)\)")
BID = re.compile(r"attemptBid\(this=Auction\{bestPrice=(\d+), currentWinningCustomerId=(-?\d+)\}, "
                 r"price=(\d+),customerId=(\d+)\)")


def normalised(lines: list[str], booleans: bool = False) -> list[str]:
    """Lines with what differs from run to run (ids, ports, positions, prices; with ``booleans`` whether a random bid
    won) as ``#``, and channels' parameters sorted: Java's client writes its egress channel's in the order of a hash
    map, ours in the order they were given."""
    def sorted_params(uri: re.Match[str]) -> str:
        return f"'{uri.group(1)}?{'|'.join(sorted(uri.group(2).split('|')))}'"
    return [re.sub(r"-?\d+|\b(true|false)\b" if booleans else r"-?\d+", "#",
                   re.sub(r"'(aeron:\w+)\?([^']*)'", sorted_params, line)) for line in lines]


def run_nodes(shm_dir, nodes: int, timeout: float, failover: bool = False) -> tuple[int, dict[str, str]]:
    """Run SCRIPT with ``nodes`` nodes (and with ``failover`` the leader's SIGKILL and more bids); its exit status
    and every file it wrote, by name."""
    return run_in_namespace(SCRIPT, shm_dir / "auction", timeout, NODES=str(nodes), AERON_BASE=str(shm_dir / "aeron"),
                            FAILOVER="1" if failover else "0")


def check_java_client(text: str, golden: list[str]) -> list[int]:
    """Java's client printed the golden lines (bids and answers each in their order: an answer may come after the
    next bid on a busy machine); the prices it bid."""
    lines = text.splitlines()
    for kind in ("Sent(", "SessionMessage("):
        assert [line for line in normalised(lines, booleans=True) if line.startswith(kind)] == \
            [line for line in normalised(golden, booleans=True) if line.startswith(kind)], text
    sent = [SENT.fullmatch(line) for line in lines if line.startswith("Sent(")]
    assert [int(m.group(4)) for m in sent if m] == [2, 1, 0], text
    return [int(m.group(3)) for m in sent if m]


def test_javas_tutorial_client_and_ours_bid_on_our_tutorial_node(shm_dir, golden_dir):
    status, files = run_nodes(shm_dir, 1, 240)
    assert status == 0, files
    expected = golden_dir / "cluster" / "expected"
    java_prices = check_java_client(files["java-client.out"],
                                    (expected / "BasicAuctionClusterClient.out.txt").read_text().splitlines())
    our_lines = files["client.out"].splitlines()
    our_prices = [int(m.group(3)) for m in map(SENT.fullmatch, our_lines) if m]
    assert len(our_prices) == 3 and all(ANSWER.fullmatch(line) for line in our_lines if line.startswith("Session"))
    assert files["snapshot.out"].strip() == "Member [0]: SNAPSHOT applied successfully", files["snapshot.out"]

    node = files["node0.out"].splitlines()
    golden = (expected / "BasicAuctionClusteredServiceNode.out.txt").read_text().splitlines()
    assert node[0] == golden[0] and node[-1] == golden[-1], files["node0.out"]
    # each session opens as in the golden run, bids, and closes as there; a session's close may come after the
    # other's open (a close request lost with the client's driver closing is the session timeout's)
    opened = [i for i, line in enumerate(node) if line.startswith("onSessionOpen(")]
    closed = [line for line in node if line.startswith("onSessionClose(")]
    assert normalised([node[i] for i in opened]) == normalised([golden[1]] * 2), files["node0.out"]
    assert normalised(closed) == normalised([golden[5]] * 2), files["node0.out"]
    assert [line.startswith("attemptBid(") for line in node[opened[0] + 1:opened[0] + 4]] == [True] * 3
    assert [line.startswith("attemptBid(") for line in node[opened[1] + 1:opened[1] + 4]] == [True] * 3
    assert len(node) == 2 + 2 + 6 + 2, files["node0.out"]
    bids = [BID.fullmatch(line) for line in node if line.startswith("attemptBid(")]
    assert [int(m.group(3)) for m in bids if m] == java_prices + our_prices
    assert [int(m.group(4)) for m in bids if m] == [1, 1, 1, 2, 2, 2]
    # each bid meets the best price before it: the auction's state is carried from bid to bid
    best, winner = 0, -1
    for m in bids:
        assert m is not None and (int(m.group(1)), int(m.group(2))) == (best, winner)
        if int(m.group(3)) > best:
            best, winner = int(m.group(3)), int(m.group(4))
    assert files["node0.err"] == "", files["node0.err"]


def test_three_of_our_tutorial_nodes_replicate_the_auction_and_fail_over(shm_dir, golden_dir):
    status, files = run_nodes(shm_dir, 3, 110, failover=True)
    assert status == 0, files
    leader, new_leader = int(files["leader"]), int(files["new-leader"])
    expected = golden_dir / "cluster" / "expected"
    golden_client = (expected / "BasicAuctionClusterClient.out.txt").read_text().splitlines()
    check_java_client(files["java-client.out"], golden_client)
    assert files["snapshot.out"].strip() == f"Member [{leader}]: SNAPSHOT applied successfully", files["snapshot.out"]
    # after the leader's SIGKILL Java's client bids with the new leader
    assert new_leader != leader
    check_java_client(files["java-client-2.out"], golden_client)
    # every member's service saw the same bids against the same auction: six with the first leader, three more
    # with the second on the two left
    bids = [[line for line in files[f"node{i}.out"].splitlines() if line.startswith("attemptBid(")] for i in range(3)]
    survivors = [i for i in range(3) if i != leader]
    assert len(bids[new_leader]) == 9, files[f"node{new_leader}.out"]
    assert bids[survivors[0]] == bids[survivors[1]], bids
    assert bids[leader] == bids[new_leader][:6], bids
    for i in survivors:
        lines = files[f"node{i}.out"].splitlines()
        assert lines[0] == f"[{i}] Started Cluster Node on 127.0.0.1..." and lines[-1] == f"[{i}] Exiting...", lines
