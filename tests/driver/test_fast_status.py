# SPDX-License-Identifier: Apache-2.0
"""Status messages taken in compiled code: once a unicast publication under max flow control is connected to its one
receiver, that receiver's plain status messages move the sender limit in the control poll's compiled call
(SendPass.set_fast_status), and the publication still sees when it last heard from the receiver; its NAKs are
resent there too (SendPass.set_fast_retransmit). Anything else (a
second receiver, a flag, a rejected position) goes through the publication as before. Driven step by step in INVOKER
mode on a clock the test moves (ManualClock), a socket standing in for the receiver."""
from __future__ import annotations

import socket
import time

import pytest

from aeron._core import counters as ctr
from aeron._core.frames import HDR_TYPE_DATA
from aeron.client import Aeron
from aeron.client import Context as ClientContext
from aeron.driver import Context, MediaDriver, ThreadingMode
from tests.driver.fakes import MS, ManualClock, nak, status_message

CONNECTION_TIMEOUT_NS = 400_000_000


@pytest.fixture
def clock():
    return ManualClock()


@pytest.fixture
def rig(shm_dir, clock):
    """(driver, the publication's endpoint, its NetworkPublication, the client publication, the receiver's socket)."""
    driver = MediaDriver.launch(Context(environ={}, aeron_dir=str(shm_dir / "d"), threading_mode=ThreadingMode.INVOKER,
                                        counters_buffer_length=1 << 20, term_buffer_length=65536,
                                        publication_connection_timeout_ns=CONNECTION_TIMEOUT_NS,
                                        client_liveness_timeout_ns=120_000_000_000,
                                        publication_unblock_timeout_ns=180_000_000_000, nano_clock=clock))
    sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    client = None
    try:
        sink.bind(("127.0.0.1", 0))
        client = Aeron.connect(ClientContext(aeron_dir=driver.aeron_dir, use_conductor_agent_invoker=True,
                                             keepalive_interval_ns=60_000_000_000))
        registration = client.async_add_publication(f"aeron:udp?endpoint=127.0.0.1:{sink.getsockname()[1]}", 1001)
        publication = None
        deadline = time.monotonic() + 5
        while publication is None and time.monotonic() < deadline:
            driver.do_work()
            client.conductor_agent_invoker.invoke()
            publication = client.get_publication(registration)
        assert publication is not None
        [endpoint] = driver.conductor.sender.endpoints
        [network] = endpoint.publications.values()
        yield driver, endpoint, network, publication, sink
    finally:
        if client is not None:
            client.close()
        driver.close()
        sink.close()


def _address(endpoint):
    """Where the endpoint reads status messages and NAKs."""
    with socket.fromfd(endpoint.transport.fileno(), socket.AF_INET, socket.SOCK_DGRAM) as sock:
        return sock.getsockname()


def _send_status(driver, endpoint, publication, sink, *, receiver_id=99, term_offset=0, window=32768):
    address = _address(endpoint)
    before = endpoint.system[ctr.STATUS_MESSAGES_RECEIVED].get()
    sink.sendto(status_message(session_id=publication.session_id, stream_id=1001, term_id=publication.initial_term_id,
                               term_offset=term_offset, window=window, receiver_id=receiver_id), address)
    deadline = time.monotonic() + 5
    while endpoint.system[ctr.STATUS_MESSAGES_RECEIVED].get() == before and time.monotonic() < deadline:
        driver.do_work()
    assert endpoint.system[ctr.STATUS_MESSAGES_RECEIVED].get() == before + 1


@pytest.fixture
def python_handled(rig, monkeypatch):
    """The status messages the endpoint handed to Python, as (receiver id, window)."""
    _, endpoint, _, _, _ = rig
    seen = []
    original = endpoint._on_status_message

    def counting(session_id, stream_id, flags, term_id, term_offset, window, receiver_id, *rest):
        seen.append((receiver_id, window))
        return original(session_id, stream_id, flags, term_id, term_offset, window, receiver_id, *rest)
    monkeypatch.setattr(endpoint, "_on_status_message", counting)
    return seen


def test_once_connected_the_receivers_status_messages_move_the_limit_in_compiled_code(rig, python_handled):
    driver, endpoint, network, publication, sink = rig
    _send_status(driver, endpoint, publication, sink, window=4096)
    assert python_handled == [(99, 4096)] and network.has_receivers        # the first: the publication connects
    for window in (8192, 16384):
        _send_status(driver, endpoint, publication, sink, window=window)
        assert network.snd_lmt.get() == window                            # max flow control: position 0 + window
    assert python_handled == [(99, 4096)]                                  # none of those went through Python
    assert endpoint.time_of_last_sm_ns >= network.receivers[99]


def test_a_receiver_heard_only_in_compiled_code_stays_connected_and_times_out_when_silent(rig, python_handled, clock):
    driver, endpoint, network, publication, sink = rig
    _send_status(driver, endpoint, publication, sink)
    for _ in range(50):                         # 1 s: 2.5 connection timeouts, a status message every 20 ms
        clock.advance(20 * MS)
        _send_status(driver, endpoint, publication, sink)
        for _ in range(20):
            driver.do_work()
        assert network.has_receivers, "expired although its status messages kept coming"
    assert len(python_handled) == 1
    silent = clock()
    while network.has_receivers and clock() - silent < 5_000 * MS:
        clock.advance(5 * MS)
        driver.do_work()
    assert not network.has_receivers
    assert CONNECTION_TIMEOUT_NS <= clock() - silent <= CONNECTION_TIMEOUT_NS + 20 * MS


def test_a_second_receiver_sends_every_status_message_through_the_publication(rig, python_handled):
    driver, endpoint, network, publication, sink = rig
    _send_status(driver, endpoint, publication, sink, receiver_id=99, window=4096)
    _send_status(driver, endpoint, publication, sink, receiver_id=98, window=8192)
    _send_status(driver, endpoint, publication, sink, receiver_id=99, window=16384)
    assert python_handled == [(99, 4096), (98, 8192), (99, 16384)]
    assert set(network.receivers) == {98, 99} and network.snd_lmt.get() == 16384


def test_a_status_message_the_publication_rejects_still_goes_through_it(rig, python_handled):
    driver, endpoint, network, publication, sink = rig
    _send_status(driver, endpoint, publication, sink)
    rejected = endpoint.system[ctr.STATUS_MESSAGES_REJECTED].get()
    _send_status(driver, endpoint, publication, sink, term_offset=65536 - 32, window=1024)   # far past snd-pos
    assert len(python_handled) == 2 and network.snd_lmt.get() == 32768
    assert endpoint.system[ctr.STATUS_MESSAGES_REJECTED].get() == rejected + 1


@pytest.fixture
def python_naks(rig, monkeypatch):
    """The NAKs the endpoint handed to Python, as (term offset, length)."""
    _, endpoint, _, _, _ = rig
    seen = []
    original = endpoint._on_nak

    def counting(session_id, stream_id, term_id, term_offset, length, now_ns):
        seen.append((term_offset, length))
        return original(session_id, stream_id, term_id, term_offset, length, now_ns)
    monkeypatch.setattr(endpoint, "_on_nak", counting)
    return seen


def _send_nak(driver, endpoint, publication, sink, term_offset, length):
    address = _address(endpoint)
    naks = endpoint.system[ctr.NAK_MESSAGES_RECEIVED]
    before = naks.get()
    sink.sendto(nak(session_id=publication.session_id, stream_id=1001, term_id=publication.initial_term_id,
                    term_offset=term_offset, length=length), address)
    deadline = time.monotonic() + 5
    while naks.get() == before and time.monotonic() < deadline:
        driver.do_work()
    assert naks.get() == before + 1


def _data(sink, count):
    frames = []
    sink.settimeout(5)
    try:
        while len(frames) < count:
            datagram = sink.recv(2048)
            if datagram[6] == HDR_TYPE_DATA and len(datagram) > 32:     # data, not a heartbeat or a setup
                frames.append(datagram)
    finally:
        sink.settimeout(None)
    return frames


def test_once_connected_the_receivers_naks_are_resent_in_compiled_code(rig, python_naks):
    driver, endpoint, network, publication, sink = rig
    retransmits = endpoint.system[ctr.RETRANSMITS_SENT]
    _send_nak(driver, endpoint, publication, sink, 0, 64)      # before any connection: the publication's own
    assert python_naks == [(0, 64)]
    _send_status(driver, endpoint, publication, sink)
    for _ in range(50):                                         # the conductor moves the publisher's limit
        driver.do_work()
    assert publication.offer(b"r" * 200) > 0
    deadline = time.monotonic() + 5
    while network.snd_pos.get() == 0 and time.monotonic() < deadline:
        driver.do_work()
    [sent] = _data(sink, 1)
    before = retransmits.get(), network.snd_naks.get()
    _send_nak(driver, endpoint, publication, sink, 0, len(sent))
    assert _data(sink, 1) == [sent]
    assert python_naks == [(0, 64)]                             # not through Python
    assert (retransmits.get(), network.snd_naks.get()) == (before[0] + 1, before[1] + 1)
    # a second receiver: the publication's own handling again
    _send_status(driver, endpoint, publication, sink, receiver_id=98)
    _send_nak(driver, endpoint, publication, sink, 0, len(sent))
    assert python_naks == [(0, 64), (0, len(sent))]


def test_a_resend_that_failed_in_compiled_code_is_raised_by_the_next_send_pass(rig):
    import errno

    from aeron.common.errors import ChannelEndpointError
    driver, endpoint, _, _, _ = rig
    real = endpoint._send_pass

    class Failed:                       # the pass as it is after a compiled resend's sendmmsg failed with EACCES
        resend_errno = errno.EACCES

        def take_resend_errno(self):
            self.resend_errno = 0
            return errno.EACCES

        def __getattr__(self, name):
            return getattr(real, name)
    endpoint._send_pass = Failed()
    try:
        with pytest.raises(ChannelEndpointError, match=f"errno {errno.EACCES}"):
            endpoint.send_pass(time.monotonic_ns())
        assert endpoint.send_pass(time.monotonic_ns()) >= 0          # reported once
    finally:
        endpoint._send_pass = real
