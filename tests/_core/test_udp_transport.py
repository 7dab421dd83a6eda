# SPDX-License-Identifier: Apache-2.0
"""UdpTransport: recvmmsg/sendmmsg batches over preallocated slots on real loopback sockets, the single-message
fallback, the scan-and-send of a term, "nothing this time" as 0, typed errors."""
import socket

import pytest

from aeron._core.logbuffer import LogBuffers
from aeron._core.term_appender import ExclusiveTermAppender
from aeron._core.udp_transport import UdpTransport
from aeron.common.errors import ChannelEndpointError, IllegalStateError, InvalidArgumentError


def _bound(family=socket.AF_INET, host="127.0.0.1"):
    sock = socket.socket(family, socket.SOCK_DGRAM)
    sock.bind((host, 0))
    return sock


@pytest.fixture(params=[True, False], ids=["mmsg", "single"])
def pair(request):
    a = UdpTransport(_bound(), batch=16, use_mmsg=request.param, name="a")
    b = UdpTransport(_bound(), batch=16, use_mmsg=request.param, name="b")
    yield a, b
    a.close()
    b.close()


def test_batches_of_datagrams_arrive_with_lengths_and_sources(pair):
    a, b = pair
    assert b.receive_batch() == 0                       # nothing waiting: 0, not an error
    for i in range(40):
        assert a.send(bytes([i]) * (i + 1), b.bound_address) == i + 1
    got = []
    while len(got) < 40:
        n = b.receive_batch()
        assert 0 < n <= 16
        for slot in range(n):
            assert b.source(slot) == a.bound_address
            got.append(bytes(b.slots[slot][:b.length(slot)]))
    assert got == [bytes([i]) * (i + 1) for i in range(40)]
    assert b.receive_batch() == 0
    with pytest.raises(InvalidArgumentError):
        b.length(0)                                     # not filled by the last (empty) batch


def test_single_receive_and_any_buffer_to_send(pair):
    a, b = pair
    assert b.receive() == (0, None)
    a.send(memoryview(b"xxhelloxx")[2:-2], b.bound_address)
    length, source = b.receive()
    assert (bytes(b.receive_buffer[:length]), source) == (b"hello", a.bound_address)


def _log_with(messages, length=32):
    log = LogBuffers.create(None, term_length=65536, initial_term_id=5, session_id=1, stream_id=2, mtu_length=1408)
    appender = ExclusiveTermAppender(log)
    for _ in range(messages):
        assert appender.offer(b"z" * length) > 0
    return log, appender


def test_send_term_batch_sends_mtu_sized_datagrams_from_the_term(pair):
    a, b = pair
    log, appender = _log_with(100)                      # 100 frames of 64 bytes
    term = log.term_buffer(0)
    sent, advance = a.send_term_batch(term, 0, 100 * 64, 1408, 8, b.bound_address)
    assert (sent, advance) == (6400, 6400)
    lengths = []
    while sum(lengths) < 6400:
        n = b.receive_batch()
        lengths += [b.length(i) for i in range(n)]
        if n and len(lengths) == n:
            assert bytes(b.slots[0][:1408]) == term.get_bytes(0, 1408)     # the term's own bytes
    assert lengths == [1408] * 4 + [768]                # 22 whole frames per 1408-byte MTU
    # the window bounds the batch, max_datagrams too
    assert a.send_term_batch(term, 0, 640, 1408, 8, b.bound_address) == (640, 640)
    assert a.send_term_batch(term, 0, 6400, 1408, 2, b.bound_address) == (2816, 2816)
    assert a.send_term_batch(term, 6400, 6400, 1408, 2, b.bound_address) == (0, 0)     # nothing committed
    term.close()
    appender.close()


def test_send_term_batch_skips_end_of_term_padding(pair):
    a, b = pair
    log = LogBuffers.create(None, term_length=65536, initial_term_id=5, session_id=1, stream_id=2, mtu_length=1408)
    appender = ExclusiveTermAppender(log)
    for _ in range(65536 // 1024 - 1):
        appender.offer(b"q" * (1024 - 32))
    appender.offer(b"r" * 1500)                          # does not fit: PAD to the end, then the next term
    term = log.term_buffer(0)
    offset = 65536 - 1024
    sent, advance = a.send_term_batch(term, offset, 1 << 20, 1408, 8, b.bound_address)
    assert (sent, advance) == (32, 1024)                # only the PAD's header travels; the rest is skipped
    term.close()
    appender.close()


@pytest.mark.skipif(not socket.has_ipv6, reason="no IPv6")
def test_ipv6_loopback():
    try:
        a, b = UdpTransport(_bound(socket.AF_INET6, "::1")), UdpTransport(_bound(socket.AF_INET6, "::1"))
    except OSError:
        pytest.skip("IPv6 loopback not configured")
    try:
        a.send(b"six", b.bound_address)
        length, source = b.receive()
        assert bytes(b.receive_buffer[:length]) == b"six" and source[:2] == a.bound_address[:2]
    finally:
        a.close()
        b.close()


def test_errors_are_typed():
    with _bound() as sock, pytest.raises(InvalidArgumentError):
        UdpTransport(sock, batch=0)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock, pytest.raises(InvalidArgumentError):
        UdpTransport(sock)
    t = UdpTransport(_bound())
    with pytest.raises(ChannelEndpointError):
        t.send(b"x", ("255.255.255.255", 9))           # broadcast without SO_BROADCAST: EACCES
    with pytest.raises(InvalidArgumentError):
        log, appender = _log_with(1)
        t.send_term_batch(log.term_buffer(0), 16, 64, 1408, 1, ("127.0.0.1", 9))
    t.close()
    t.close()
    assert t.is_closed
    with pytest.raises(IllegalStateError):
        t.receive_batch()
    with pytest.raises(IllegalStateError):
        t.send(b"x", ("127.0.0.1", 9))
