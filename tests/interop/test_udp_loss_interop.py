# SPDX-License-Identifier: Apache-2.0
"""Loss recovery across drivers, as in golden/frames/unicast-loss-rttm: the subscriber's driver drops the first
datagrams of term 1000 (fixed-loss interceptor), NAKs, gets the retransmit, and every message arrives. Both ways:
aeronmd publishing to our driver (the official LossStat and AeronStat then read our files), and our driver
publishing to aeronmd. Needs AERON_C_BIN."""
from __future__ import annotations

import re

import pytest

from tests import procs
from tests.support import free_port

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]
LOSS = {"AERON_UDP_CHANNEL_INCOMING_INTERCEPTORS": "fixed-loss",
        "AERON_UDP_CHANNEL_TRANSPORT_BINDINGS_FIXED_LOSS_ARGS": "term-id=1000|term-offset=64|length=1"}


def _counter(stat_text: str, label: str) -> int:
    found = re.search(r"^\s*\d+:\s+([\d,]+) - " + re.escape(label), stat_text, re.M)
    assert found, stat_text
    return int(found[1].replace(",", ""))


@pytest.mark.parametrize("lossy", ["ours", "official"])
def test_lost_datagrams_are_nak_ed_and_retransmitted(official, shm_dir, lossy):
    ours_dir, theirs_dir = str(shm_dir / "ours"), str(shm_dir / "aeronmd")
    port, source = free_port(), free_port()
    sub_channel = f"aeron:udp?endpoint=127.0.0.1:{port}"
    pub_channel = f"{sub_channel}|interface=127.0.0.1:{source}|init-term-id=1000|term-id=1000|term-offset=0"
    ours_args = ["aeron.term.buffer.length=64k"]
    if lossy == "ours":
        ours_args += ["aeron.udp.channel.incoming.interceptors=fixed-loss",
                      "aeron.udp.channel.transport.bindings.fixed.loss.args=term-id=1000|term-offset=64|length=1"]
        theirs_env = {}
    else:
        theirs_env = LOSS
    theirs = procs.start_aeronmd(official("aeronmd"), theirs_dir, **theirs_env)
    ours = subscriber = None
    try:
        ours = procs.start_our_driver(ours_dir, *ours_args)
        sub_dir, pub_dir = (ours_dir, theirs_dir) if lossy == "ours" else (theirs_dir, ours_dir)
        sub_args = ("-p", sub_dir, "-c", sub_channel)
        subscriber = procs.popen(procs.sample("basic_subscriber", *sub_args) if lossy == "ours"
                                 else ["stdbuf", "-oL", official("basic_subscriber"), *sub_args])
        procs.wait_for_line(subscriber, "Subscription channel status 1", timeout=20)
        pub_args = ("-p", pub_dir, "-c", pub_channel, "-m", "5")
        publisher = procs.run([official("basic_publisher"), *pub_args] if lossy == "ours"
                              else procs.sample("basic_publisher", *pub_args), timeout=40)
        delivered = [int(n) for n in re.findall(r"offering (\d)/5 - yay!", publisher.stdout)]
        assert delivered and delivered[-1] == 4, publisher.stdout
        lines = procs.wait_for_line(subscriber, "<<Hello World! 4>>", timeout=20)
        received = [int(n) for n in re.findall(r"<<Hello World! (\d)>>", "".join(lines))]
        assert received == delivered                          # the lost first message came back by NAK
        sub_stat = procs.run([official("AeronStat"), "-d", sub_dir, "-w", "false"]).stdout
        pub_stat = procs.run([official("AeronStat"), "-d", pub_dir, "-w", "false"]).stdout
        assert _counter(sub_stat, "NAKs sent") >= 1 and _counter(pub_stat, "NAKs received") >= 1
        assert _counter(pub_stat, "Retransmits sent") >= 1
        loss = procs.run([official("LossStat"), "-d", sub_dir])
        assert loss.returncode == 0, loss.stderr
        assert re.search(r"1 entries read", loss.stdout) or re.search(r"^\s*\d+,\s*\d+,\s*64,", loss.stdout, re.M), \
            loss.stdout
        assert sub_channel in loss.stdout and f"127.0.0.1:{source}" in loss.stdout
    finally:
        procs.stop(subscriber)
        procs.stop(ours)
        procs.stop(theirs)
