# SPDX-License-Identifier: Apache-2.0
"""Port of the Aeron Cluster tutorial's service, ``io.aeron.samples.cluster.tutorial.BasicAuctionClusteredService``:
an auction of one item. A bid (correlationId, customerId, price: three little-endian int64) wins when its price beats
the best; the bidder hears back the correlation id, the winning customer, the best price and whether its bid won
(one byte). The auction's state (winning customer and best price) is the service's snapshot. It prints what Aeron's
does, so that its output compares line for line with the official sample's."""
from __future__ import annotations

import struct
from typing import Any

from aeron.cluster.service.clustered_service import ClusteredService

CORRELATION_ID_OFFSET = 0
CUSTOMER_ID_OFFSET = CORRELATION_ID_OFFSET + 8
PRICE_OFFSET = CUSTOMER_ID_OFFSET + 8
BID_MESSAGE_LENGTH = PRICE_OFFSET + 8
BID_SUCCEEDED_OFFSET = BID_MESSAGE_LENGTH
EGRESS_MESSAGE_LENGTH = BID_SUCCEEDED_OFFSET + 1

SNAPSHOT_CUSTOMER_ID_OFFSET = 0
SNAPSHOT_PRICE_OFFSET = SNAPSHOT_CUSTOMER_ID_OFFSET + 8
SNAPSHOT_MESSAGE_LENGTH = SNAPSHOT_PRICE_OFFSET + 8


class Auction:
    """The best price and who bid it."""

    def __init__(self) -> None:
        self.best_price = 0
        self.current_winning_customer_id = -1

    def load_initial_state(self, price: int, customer_id: int) -> None:
        """The state a snapshot held."""
        self.best_price = price
        self.current_winning_customer_id = customer_id

    def attempt_bid(self, price: int, customer_id: int) -> bool:
        """A bid wins when it beats the best price."""
        print(f"attemptBid(this={self}, price={price},customerId={customer_id})", flush=True)
        if price <= self.best_price:
            return False
        self.best_price = price
        self.current_winning_customer_id = customer_id
        return True

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Auction) and (self.best_price, self.current_winning_customer_id) == (
            other.best_price, other.current_winning_customer_id)

    def __hash__(self) -> int:
        return hash((self.best_price, self.current_winning_customer_id))

    def __str__(self) -> str:
        return f"Auction{{bestPrice={self.best_price}, currentWinningCustomerId={self.current_winning_customer_id}}}"


class BasicAuctionClusteredService(ClusteredService):
    """The auction as a clustered service."""

    def __init__(self) -> None:
        self.auction = Auction()
        self.cluster: Any = None
        self.idle_strategy: Any = None
        self._egress_message = bytearray(EGRESS_MESSAGE_LENGTH)
        self._snapshot = bytearray(SNAPSHOT_MESSAGE_LENGTH)

    def on_start(self, cluster: Any, snapshot_image: Any) -> None:
        """Keep the cluster; load the auction from the snapshot when there is one."""
        self.cluster = cluster
        self.idle_strategy = cluster.idle_strategy
        if snapshot_image is not None:
            self._load_snapshot(snapshot_image)

    def on_session_message(self, session: Any, timestamp: int, buffer: Any, offset: int, length: int,
                           header: Any) -> None:
        """A bid: try it, and tell the bidder (a service's message, with no session, gets no answer)."""
        correlation_id = buffer.get_i64(offset + CORRELATION_ID_OFFSET)
        customer_id = buffer.get_i64(offset + CUSTOMER_ID_OFFSET)
        price = buffer.get_i64(offset + PRICE_OFFSET)
        bid_succeeded = self.auction.attempt_bid(price, customer_id)
        if session is not None:
            struct.pack_into("<qqqB", self._egress_message, 0, correlation_id,
                             self.auction.current_winning_customer_id, self.auction.best_price,
                             1 if bid_succeeded else 0)
            self.idle_strategy.reset()
            while session.offer(self._egress_message, 0, EGRESS_MESSAGE_LENGTH) < 0:
                self.idle_strategy.idle()

    def on_take_snapshot(self, snapshot_publication: Any) -> None:
        """The winning customer and the best price, in one message."""
        struct.pack_into("<qq", self._snapshot, 0, self.auction.current_winning_customer_id, self.auction.best_price)
        self.idle_strategy.reset()
        while snapshot_publication.offer(self._snapshot, 0, SNAPSHOT_MESSAGE_LENGTH) < 0:
            self.idle_strategy.idle()

    def _load_snapshot(self, snapshot_image: Any) -> None:
        loaded = False

        def on_fragment(buffer: Any, offset: int, length: int, header: Any) -> None:
            nonlocal loaded
            if length < SNAPSHOT_MESSAGE_LENGTH:
                raise ValueError(f"auction snapshot of {length} bytes, expected {SNAPSHOT_MESSAGE_LENGTH}")
            customer_id = buffer.get_i64(offset + SNAPSHOT_CUSTOMER_ID_OFFSET)
            price = buffer.get_i64(offset + SNAPSHOT_PRICE_OFFSET)
            self.auction.load_initial_state(price, customer_id)
            loaded = True

        while not snapshot_image.is_end_of_stream:
            fragments = snapshot_image.poll(on_fragment, 1)
            if loaded:
                break
            self.idle_strategy.idle(fragments)
        if not loaded:
            raise ValueError("the auction's snapshot ended before its state")

    def on_role_change(self, new_role: Any) -> None:
        """Nothing."""

    def on_terminate(self, cluster: Any) -> None:
        """Nothing."""

    def on_session_open(self, session: Any, timestamp: int) -> None:
        """Print the session, as Aeron's tutorial does."""
        print(f"onSessionOpen({session})", flush=True)

    def on_session_close(self, session: Any, timestamp: int, close_reason: Any) -> None:
        """Print the session, as Aeron's tutorial does."""
        print(f"onSessionClose({session})", flush=True)

    def on_timer_event(self, correlation_id: int, timestamp: int) -> None:
        """Nothing."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BasicAuctionClusteredService) and self.auction == other.auction

    def __hash__(self) -> int:
        return hash(self.auction)

    def __str__(self) -> str:
        return f"BasicAuctionClusteredService{{auction={self.auction}}}"
