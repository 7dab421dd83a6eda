# SPDX-License-Identifier: Apache-2.0
"""Two hosts made of two network namespaces joined by a veth pair, with `tc netem` delay and loss on the link:
our driver in each, a publisher in one and a subscriber in the other. Skips cleanly without the privilege to
create namespaces (CAP_NET_ADMIN) or without `ip`/`tc`. Where the kernel has no netem qdisc the link stays clean
and the receiving driver's own loss generator ("loss" interceptor, 5 %) stands in for the lossy wire."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
import textwrap
import uuid

import pytest

from tests import procs

pytestmark = [pytest.mark.timeout(120), pytest.mark.slow]


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=10, check=check)


@pytest.fixture
def two_hosts():
    if shutil.which("ip") is None or shutil.which("tc") is None:
        pytest.skip("ip or tc not installed")
    tag = uuid.uuid4().hex[:6]
    a, b = f"aeronpy-a-{tag}", f"aeronpy-b-{tag}"
    if _ip("netns", "add", a, check=False).returncode != 0:
        pytest.skip("cannot create network namespaces here (needs CAP_NET_ADMIN)")
    try:
        _ip("netns", "add", b)
        _ip("link", "add", f"va{tag}", "type", "veth", "peer", "name", f"vb{tag}")
        _ip("link", "set", f"va{tag}", "netns", a)
        _ip("link", "set", f"vb{tag}", "netns", b)
        netem = True
        for ns, dev, addr in ((a, f"va{tag}", "10.77.0.1/24"), (b, f"vb{tag}", "10.77.0.2/24")):
            _ip("-n", ns, "addr", "add", addr, "dev", dev)
            _ip("-n", ns, "link", "set", dev, "up")
            _ip("-n", ns, "link", "set", "lo", "up")
            # 2 ms each way and 5 % loss on the wire
            netem = netem and subprocess.run(["ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", dev, "root",
                                              "netem", "delay", "2ms", "loss", "5%"],
                                             capture_output=True, timeout=10).returncode == 0
        yield a, b, netem
    finally:
        _ip("netns", "del", a, check=False)
        _ip("netns", "del", b, check=False)


SUBSCRIBER = textwrap.dedent("""
    import sys, time
    from aeron import Aeron, Context
    with Aeron.connect(Context(sys.argv[1])) as client:
        sub = client.add_subscription("aeron:udp?endpoint=10.77.0.2:40456", 1001)
        print("ready", flush=True)
        got = []
        deadline = time.monotonic() + 60
        while len(got) < 2000 and time.monotonic() < deadline:
            if sub.poll(lambda b, o, l, h: got.append(b.get_i64(o)), 100) == 0:
                time.sleep(0.0005)
        print("received", len(got), "in order", got == list(range(len(got))), flush=True)
""")

PUBLISHER = textwrap.dedent("""
    import sys, time
    from aeron import Aeron, Context
    with Aeron.connect(Context(sys.argv[1])) as client:
        pub = client.add_publication("aeron:udp?endpoint=10.77.0.2:40456", 1001)
        deadline = time.monotonic() + 60
        while not pub.is_connected and time.monotonic() < deadline:
            time.sleep(0.001)
        n = 0
        while n < 2000 and time.monotonic() < deadline:
            if pub.offer(n.to_bytes(8, "little") * 16) > 0:
                n += 1
            else:
                time.sleep(0.0005)
        print("sent", n, flush=True)
        sys.stdin.readline()        # the publication stays for the NAKs of the last datagrams lost, until told
""")


def _in(ns: str, args: list[str]) -> list[str]:
    return ["ip", "netns", "exec", ns, *args]


def test_stream_across_two_namespaces_with_delay_and_loss(two_hosts, shm_dir):
    a, b, netem = two_hosts
    dir_a, dir_b = str(shm_dir / "a"), str(shm_dir / "b")
    lossy = [] if netem else ["aeron.udp.channel.incoming.interceptors=loss",
                              "aeron.udp.channel.transport.bindings.loss.args=rate=0.05|seed=3|recv-msg-mask=0x2"]
    drivers = []
    subscriber = publisher = None
    try:
        for ns, directory in ((a, dir_a), (b, dir_b)):
            drivers.append(subprocess.Popen(
                _in(ns, [sys.executable, "-m", "aeron.driver", f"aeron.dir={directory}", "aeron.threading.mode=SHARED",
                         "aeron.dir.delete.on.shutdown=true", "aeron.term.buffer.length=64k",
                         *(lossy if ns == b else [])]),
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=procs.client_env()))
        for driver, directory in zip(drivers, (dir_a, dir_b)):
            procs.wait_for_cnc(driver, directory, "our driver")
        subscriber = procs.popen(_in(b, [sys.executable, "-c", SUBSCRIBER, dir_b]))
        procs.wait_for_line(subscriber, "ready", timeout=20)
        publisher = procs.popen(_in(a, [sys.executable, "-c", PUBLISHER, dir_a]), stdin=subprocess.PIPE)
        sent = procs.wait_for_line(publisher, "sent", timeout=90)
        assert "sent 2000" in sent[-1], sent
        lines = procs.wait_for_line(subscriber, "received", timeout=60)
        assert "received 2000 in order True" in lines[-1], lines
        publisher.stdin.close()
        stat = procs.run([sys.executable, "-m", "aeron.tools.stat", "-d", dir_b, "-w", "false"]).stdout
        naks = int(re.search(r"([\d,]+) - NAKs sent", stat)[1].replace(",", ""))
        assert naks > 0, f"netem={netem}"     # 5 % of the datagrams were lost and recovered
    finally:
        procs.stop(publisher)
        procs.stop(subscriber)
        for driver in drivers:
            procs.stop(driver)
