# SPDX-License-Identifier: Apache-2.0
"""UdpTransport on real loopback sockets beyond the basics: a full 64-slot batch on IPv4 and IPv6 (recvmmsg and
the recvfrom fallback), ECONNREFUSED as "nothing this time", multicast on lo, and the golden C-driver datagrams
carried and validated slot by slot (with a loss generator at the seam)."""
import errno
import json
import socket
import time

import pytest

from aeron._core import frames as f
from aeron._core.loss_generator import LossGenerator
from aeron._core.udp_transport import UdpTransport

DEADLINE_S = 3.0
TYPE = {"SETUP": f.HDR_TYPE_SETUP, "RTTM": f.HDR_TYPE_RTTM, "DATA": f.HDR_TYPE_DATA}


def _transport(family=socket.AF_INET, host="127.0.0.1", batch=64, use_mmsg=True):
    sock = socket.socket(family, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    sock.bind((host, 0))
    return UdpTransport(sock, batch=batch, use_mmsg=use_mmsg)


def _receive(transport, count):
    """(payload, source) of ``count`` datagrams, in arrival order, within DEADLINE_S."""
    got = []
    deadline = time.monotonic() + DEADLINE_S
    while len(got) < count and time.monotonic() < deadline:
        n = transport.receive_batch()
        for i in range(n):
            got.append((bytes(transport.slots[i][:transport.length(i)]), transport.source(i)))
    return got


def _ipv6_or_skip():
    if not socket.has_ipv6:
        pytest.skip("no IPv6 support in this Python")
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as probe:
            probe.bind(("::1", 0))
    except OSError:
        pytest.skip("IPv6 loopback ::1 not configured")


@pytest.mark.parametrize("use_mmsg", [True, False], ids=["mmsg", "single"])
@pytest.mark.parametrize("family", ["v4", "v6"])
def test_a_full_batch_of_64_arrives_in_one_receive(family, use_mmsg):
    if family == "v6":
        _ipv6_or_skip()
    args = (socket.AF_INET6, "::1") if family == "v6" else (socket.AF_INET, "127.0.0.1")
    a, b = _transport(*args, use_mmsg=use_mmsg), _transport(*args, use_mmsg=use_mmsg)
    try:
        assert b.receive_batch() == 0                                    # EAGAIN: 0
        payloads = [i.to_bytes(2, "little") * (1 + i % 50) for i in range(64)]
        for payload in payloads:
            assert a.send(payload, b.bound_address) == len(payload)
        first = b.receive_batch()
        assert first == 64                                               # the whole batch in one call
        got = [(bytes(b.slots[i][:b.length(i)]), b.source(i)) for i in range(first)]
        assert [p for p, _ in got] == payloads
        assert {s[:2] for _, s in got} == {a.bound_address[:2]}
        assert b.receive_batch() == 0
    finally:
        a.close()
        b.close()


def test_connection_refused_is_nothing_this_time():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as gone:
        gone.bind(("127.0.0.1", 0))
        closed_address = gone.getsockname()
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.connect(closed_address)                  # a connected UDP socket reports ICMP port unreachable
    t = UdpTransport(sock, batch=4)
    try:
        for _ in range(3):
            t.send(b"anyone?", closed_address)
            time.sleep(0.01)
            assert t.receive_batch() == 0         # ECONNREFUSED pending on the socket: still 0, no raise
            assert t.receive() == (0, None)
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) in (0, errno.ECONNREFUSED)
    finally:
        t.close()


def test_multicast_on_loopback():
    group = "224.0.1.137"
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        rx.bind((group, 0))
        rx.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
                      socket.inet_aton(group) + socket.inet_aton("127.0.0.1"))
        tx.bind(("127.0.0.1", 0))
        tx.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton("127.0.0.1"))
        tx.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)
        tx.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 0)
    except OSError as error:
        rx.close()
        tx.close()
        pytest.skip(f"kernel refused multicast on lo: {error}")
    receiver, sender = UdpTransport(rx, batch=16), UdpTransport(tx, batch=16)
    try:
        destination = (group, rx.getsockname()[1])
        sent = [b"mc%02d" % i for i in range(20)]
        for payload in sent:
            sender.send(payload, destination)
        got = _receive(receiver, 20)
        if not got:
            pytest.skip("multicast joined but nothing loops back on lo here")
        assert [p for p, _ in got] == sent
        assert {s for _, s in got} == {sender.bound_address}
    finally:
        receiver.close()
        sender.close()


def test_golden_datagrams_cross_the_transport_and_validate_per_slot(golden_dir):
    datagrams = json.loads((golden_dir / "frames" / "unicast-loss-rttm" / "datagrams.json").read_text())["datagrams"]
    towards_subscriber = [d for d in datagrams if d["direction"] == "pub->sub"]
    a, b = _transport(batch=32), _transport(batch=32)
    loss = LossGenerator.from_args("fixed-loss", "term-id=1000|term-offset=64|length=1")
    try:
        kinds = []
        deadline = time.monotonic() + DEADLINE_S
        sent = 0
        while len(kinds) < len(towards_subscriber) and time.monotonic() < deadline:
            while sent < len(towards_subscriber) and sent - len(kinds) < 32:     # stay within the socket buffer
                a.send(bytes.fromhex(towards_subscriber[sent]["hex"]), b.bound_address)
                sent += 1
            n = b.receive_batch()
            loss.filter_received(b)                       # the receive-side interceptor seam
            for i in range(n):
                length = b.length(i)
                kinds.append(f.validate_frame(b.slots[i], 0, length) if length else None)
        expected = [TYPE[d["frames"][0]["type"]] for d in towards_subscriber]
        dropped = {i for i, d in enumerate(towards_subscriber) if d.get("dropped_by_receiver_fixed_loss_interceptor")}
        assert len(kinds) == len(towards_subscriber)
        assert [k for i, k in enumerate(kinds) if i not in dropped] == [e for i, e in enumerate(expected)
                                                                        if i not in dropped]
        assert {i for i, k in enumerate(kinds) if k is None} == dropped and len(dropped) == 3
        assert loss.dropped == 3
    finally:
        a.close()
        b.close()


def test_ready_sockets_names_the_groups_with_something_to_read_in_one_poll():
    """ReadySockets: an agent's sockets looked at in one poll; a group (an endpoint's sockets) is ready when one of
    them has a datagram or an error waiting; a group of None (a socket it cannot check) is ready every time."""
    from aeron._core.udp_transport import ReadySockets
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(3)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        ready = ReadySockets()
        ready.set_groups([[sockets[0].fileno()], None, [sockets[1].fileno(), sockets[2].fileno()]])
        assert ready.group_count == 3
        assert ready.poll() == 0 and [ready.ready(g) for g in range(3)] == [False, True, False]
        sockets[0].sendto(b"x", sockets[2].getsockname())
        deadline = time.monotonic() + 5
        while ready.poll() == 0 and time.monotonic() < deadline:
            time.sleep(0.001)
        assert [ready.ready(g) for g in range(3)] == [False, True, True]
        sockets[2].recv(16)
        assert ready.poll() == 0 and not ready.ready(2)
        # an error waiting (a datagram refused by a closed port): ready, so that the receive takes it
        closed = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        closed.bind(("127.0.0.1", 0))
        address = closed.getsockname()
        closed.close()
        sockets[0].connect(address)
        sockets[0].send(b"y")
        deadline = time.monotonic() + 5
        while not ready.ready(0) and time.monotonic() < deadline:
            ready.poll()
            time.sleep(0.001)
        assert ready.ready(0)
        with pytest.raises(IndexError):
            ready.ready(3)
        ready.set_groups([])
        assert ready.poll() == 0 and ready.group_count == 0
    finally:
        for s in sockets:
            s.close()
