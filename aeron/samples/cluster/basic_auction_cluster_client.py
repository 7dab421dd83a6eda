# SPDX-License-Identifier: Apache-2.0
"""Port of Aeron's cluster tutorial client ``io.aeron.samples.cluster.tutorial.BasicAuctionClusterClient``: bids in
the auction of ``BasicAuctionClusteredService`` through an AeronCluster session, printing what it sends and what the
cluster answers, in the official sample's words.

    python -m aeron.samples.cluster.basic_auction_cluster_client -Daeron.cluster.tutorial.customerId=1 \\
        -Daeron.cluster.tutorial.numOfBids=3 -Daeron.cluster.tutorial.bidIntervalMs=200 \\
        [-Daeron.cluster.tutorial.hostnames=localhost,localhost,localhost]

As the Java sample, it starts its own embedded media driver, reaches member ``i`` at ``hostnames[i]:9000 + 100 i +
2`` and receives on an ephemeral UDP port; it sends a keep-alive each second without a bid and leaves one second
after its last bid.
"""
from __future__ import annotations

import random
import struct
import sys
import time
from collections.abc import Sequence
from typing import Any

from aeron.cluster.client import AeronCluster, Context, EgressListener, EventCode
from aeron.common.agent import BackoffIdleStrategy, IdleStrategy
from aeron.driver import Context as DriverContext
from aeron.driver import MediaDriver
from aeron.samples._common import Running

# the auction's message layout (BasicAuctionClusteredService): little-endian int64s, then the egress's one byte
CORRELATION_ID_OFFSET = 0
CUSTOMER_ID_OFFSET = 8
PRICE_OFFSET = 16
BID_MESSAGE_LENGTH = 24
BID_SUCCEEDED_OFFSET = BID_MESSAGE_LENGTH
EGRESS_MESSAGE_LENGTH = BID_SUCCEEDED_OFFSET + 1

# BasicAuctionClusteredServiceNode's ports: 9000 + 100 * nodeId + offset
PORT_BASE = 9000
PORTS_PER_NODE = 100
CLIENT_FACING_PORT_OFFSET = 2


def calculate_port(node_id: int, offset: int) -> int:
    """The port of ``offset`` on member ``node_id`` (``BasicAuctionClusteredServiceNode.calculatePort``)."""
    return PORT_BASE + node_id * PORTS_PER_NODE + offset


def ingress_endpoints(hostnames: Sequence[str]) -> str:
    """``0=host:port,1=host:port,...``: each member's client-facing port (``ingressEndpoints``)."""
    return ",".join(f"{i}={host}:{calculate_port(i, CLIENT_FACING_PORT_OFFSET)}" for i, host in enumerate(hostnames))


def _java_bool(value: bool) -> str:
    return "true" if value else "false"


class BasicAuctionClusterClient(EgressListener):
    """Bids ``num_of_bids`` times as ``customer_id``, at random intervals below ``bid_interval_ms``, each bid the
    last price seen plus up to 9."""

    def __init__(self, customer_id: int, num_of_bids: int, bid_interval_ms: int) -> None:
        """The bidder; :meth:`bid_in_auction` runs it on a connected client."""
        self.customer_id = customer_id
        self.num_of_bids = num_of_bids
        self.bid_interval_ms = bid_interval_ms
        self.action_bid_buffer = bytearray(BID_MESSAGE_LENGTH)
        self.idle_strategy: IdleStrategy = BackoffIdleStrategy()
        self.next_correlation_id = 0
        self.last_bid_seen = 100
        self.random = random.Random()

    def on_message(self, cluster_session_id: int, timestamp: int, buffer: Any, offset: int, length: int,
                   header: Any) -> None:
        """The auction's answer to a bid: the best price now, and whether the bid won."""
        correlation_id, customer_id, current_price = struct.unpack_from(
            "<qqq", buffer.get_bytes(offset, BID_MESSAGE_LENGTH))
        bid_succeed = buffer.get_bytes(offset + BID_SUCCEEDED_OFFSET, 1) != b"\0"
        self.last_bid_seen = current_price
        self.print_output(f"SessionMessage({cluster_session_id}, {correlation_id},{customer_id}, {current_price}, "
                          f"{_java_bool(bid_succeed)})")

    def on_session_event(self, correlation_id: int, cluster_session_id: int, leadership_term_id: int,
                         leader_member_id: int, code: EventCode, detail: str) -> None:
        """A session event, printed."""
        self.print_output(f"SessionEvent({correlation_id}, {leadership_term_id}, {leader_member_id}, {code.name}, "
                          f"{detail})")

    def on_new_leader(self, cluster_session_id: int, leadership_term_id: int, leader_member_id: int,
                      ingress_endpoints: str) -> None:
        """A new leader, printed."""
        self.print_output(f"NewLeader({cluster_session_id}, {leadership_term_id}, {leader_member_id})")

    def bid_in_auction(self, aeron_cluster: AeronCluster, running: Running | None = None) -> None:
        """Send the bids, keep the session alive between them, and poll the egress until a second after the last
        (``bidInAuction``)."""
        aeron = aeron_cluster.context.aeron
        made = None
        if type(self.idle_strategy) is BackoffIdleStrategy and aeron is not None:
            # on a media driver of ours the same backoff's parks end when the egress brings the auction's answer
            # (docs/wakeup.md); this loop has deadlines of its own, so they stay bounded as backoff's
            self.idle_strategy = made = aeron.response_idle_strategy(aeron_cluster.egress_subscription.stream_id,
                                                                     self.idle_strategy)
        try:
            self._bid_in_auction(aeron_cluster, running)
        finally:
            close = getattr(made, "close", None)
            if close is not None:
                close()

    def _bid_in_auction(self, aeron_cluster: AeronCluster, running: Running | None) -> None:
        keep_alive_deadline_ms = 0
        next_bid_deadline_ms = _now_ms() + self.random.randrange(1000)
        bids_left_to_send = self.num_of_bids
        while running is None or running:
            current_time_ms = _now_ms()
            if next_bid_deadline_ms <= current_time_ms and bids_left_to_send > 0:
                price = self.last_bid_seen + self.random.randrange(10)
                correlation_id = self.send_bid(aeron_cluster, price)
                next_bid_deadline_ms = current_time_ms + self.random.randrange(self.bid_interval_ms)
                keep_alive_deadline_ms = current_time_ms + 1_000
                bids_left_to_send -= 1
                self.print_output(f"Sent({correlation_id}, {self.customer_id}, {price}) "
                                  f"bidsRemaining={bids_left_to_send}")
            elif keep_alive_deadline_ms <= current_time_ms:
                if bids_left_to_send > 0:
                    aeron_cluster.send_keep_alive()
                    keep_alive_deadline_ms = current_time_ms + 1_000
                else:
                    break
            self.idle_strategy.idle(aeron_cluster.poll_egress())

    def send_bid(self, aeron_cluster: AeronCluster, price: int) -> int:
        """Offer one bid, polling the egress while the offer is refused (``sendBid``); its correlation id."""
        correlation_id = self.next_correlation_id
        self.next_correlation_id += 1
        struct.pack_into("<qqq", self.action_bid_buffer, 0, correlation_id, self.customer_id, price)
        self.idle_strategy.reset()
        while aeron_cluster.offer(self.action_bid_buffer, 0, BID_MESSAGE_LENGTH) < 0:
            self.idle_strategy.idle(aeron_cluster.poll_egress())
        return correlation_id

    @staticmethod
    def print_output(message: str) -> None:
        """One line of the sample's output."""
        print(message, flush=True)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _properties(argv: Sequence[str]) -> dict[str, str]:
    properties: dict[str, str] = {}
    for arg in argv:
        if not arg.startswith("-D") or "=" not in arg:
            raise SystemExit(f"usage: basic_auction_cluster_client -Dname=value ... (got {arg!r})")
        key, _, value = arg[2:].partition("=")
        properties[key] = value
    return properties


def main(argv: Sequence[str] | None = None) -> int:
    """Run the sample with Java-style ``-Dname=value`` properties (those of the official sample)."""
    properties = _properties(sys.argv[1:] if argv is None else argv)
    try:
        customer_id = int(properties["aeron.cluster.tutorial.customerId"])
        num_of_bids = int(properties["aeron.cluster.tutorial.numOfBids"])
        bid_interval_ms = int(properties["aeron.cluster.tutorial.bidIntervalMs"])
    except (KeyError, ValueError) as exc:
        print(f"aeron.cluster.tutorial.customerId, .numOfBids and .bidIntervalMs must be set as integers: {exc}",
              file=sys.stderr)
        return 2
    hostnames = properties.get("aeron.cluster.tutorial.hostnames", "localhost,localhost,localhost").split(",")
    client = BasicAuctionClusterClient(customer_id, num_of_bids, bid_interval_ms)
    running = Running().install()
    driver_ctx = DriverContext(threading_mode="SHARED", dir_delete_on_start=True)
    if "aeron.dir" in properties:
        driver_ctx.aeron_dir = properties["aeron.dir"]
    with MediaDriver.launch_embedded(driver_ctx) as media_driver, AeronCluster.connect(Context(
            egress_listener=client, egress_channel="aeron:udp?endpoint=localhost:0",
            aeron_dir=media_driver.aeron_dir, ingress_channel="aeron:udp",
            ingress_endpoints=ingress_endpoints(hostnames))) as aeron_cluster:
        client.bid_in_auction(aeron_cluster, running)
    return 0


if __name__ == "__main__":
    sys.exit(main())
