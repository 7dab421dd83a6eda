# SPDX-License-Identifier: Apache-2.0
"""The cluster tutorial client's port against the fake cluster playing the auction (no Java): its endpoints, bids,
keep-alives between them and its output lines (the Java run is tests/interop/test_basic_auction_interop.py)."""
from __future__ import annotations

import re
import struct
import time

from aeron.cluster.client import AeronCluster
from aeron.samples.cluster import basic_auction_cluster_client as sample
from tests.cluster.client.conftest import client_context
from tests.cluster.client.fake_cluster import FakeMember, Request, echo_respond
from tests.support import wait_for


def test_ingress_endpoints_are_the_tutorial_nodes_client_facing_ports():
    assert sample.ingress_endpoints(["a", "b", "c"]) == "0=a:9002,1=b:9102,2=c:9202"
    assert sample.calculate_port(2, sample.CLIENT_FACING_PORT_OFFSET) == 9202


def test_the_client_bids_and_prints_the_auctions_answers_as_the_java_sample(driver, make_fake, capsys):
    best = {"price": 0}

    def auction(request: Request, member: FakeMember) -> None:
        if request.name != "SessionMessageHeader":
            echo_respond(request, member)
            return
        correlation_id, customer_id, price = struct.unpack("<qqq", request.payload)
        won = price > best["price"]
        if won:
            best["price"] = price
        member.message(request.fields["cluster_session_id"],
                       struct.pack("<qqqB", correlation_id, customer_id, best["price"], 1 if won else 0))

    fake = make_fake(respond=auction)
    client = sample.BasicAuctionClusterClient(customer_id=7, num_of_bids=3, bid_interval_ms=50)
    client.random.seed(1)
    with AeronCluster.connect(client_context(driver, fake, client)) as cluster:
        client.bid_in_auction(cluster)
        # the sample leaves a second after its last bid; on a loaded machine the last answer may come later
        answers = []
        wait_for(lambda: answers.extend(capsys.readouterr().out.splitlines()) or
                 sum(line.startswith("SessionMessage") for line in answers) == 3,
                 invoke=lambda: cluster.poll_egress() or time.sleep(0.001), what="three answers")
    lines = answers
    assert [re.sub(r"\d+", "N", line).replace("false", "true") for line in lines] == [
        "Sent(N, N, N) bidsRemaining=N", "SessionMessage(N, N,N, N, true)"] * 3
    bids = fake.of("SessionMessageHeader")
    assert [struct.unpack("<qqq", b.payload)[:2] for b in bids] == [(0, 7), (1, 7), (2, 7)]
    prices = [struct.unpack("<qqq", b.payload)[2] for b in bids]
    assert 100 <= prices[0] < 110 and all(p <= q < p + 10 for p, q in zip(prices, prices[1:]))
    assert lines[5] == f"SessionMessage(1, 2,7, {best['price']}, {'true' if best['price'] == prices[2] else 'false'})"


def test_main_refuses_missing_properties(capsys):
    assert sample.main(["-Daeron.cluster.tutorial.customerId=1"]) == 2
    assert "numOfBids" in capsys.readouterr().err
