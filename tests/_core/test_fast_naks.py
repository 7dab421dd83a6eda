# SPDX-License-Identifier: Apache-2.0
"""NAKs resent in compiled code (SendPass.set_fast_retransmit, read by ControlFrameReader.poll): unicast's one
retransmit action with no delay, as RetransmitHandler does it. A range still in the log is resent at once through
the bound transport and counted; NAKs inside it are ignored while it lingers; a range past the term is dropped as
invalid; anything else is left to the publication in Python."""
from __future__ import annotations

import errno
import socket
import time

import pytest

from aeron._core import frames as f
from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.control_dispatcher import ControlFrameReader
from aeron._core.counters import AtomicCounter
from aeron._core.logbuffer import LogBuffers
from aeron._core.send_pass import SendPass
from aeron._core.term_appender import ExclusiveTermAppender
from aeron._core.udp_transport import UdpTransport
from aeron.common.errors import IllegalStateError, InvalidArgumentError

TERM_LENGTH = 65536
INITIAL_TERM_ID = 5
FRAME = 1056                    # a 1000-byte message: 32 + 1000 aligned to 32
LINGER_NS = 10_000_000
ESTIMATE = 32768 * 16           # min(128 KiB, term / 2) x unicast's rrwm


class Rig:
    """One publication (session 7, stream 1001) with four messages sent, its pass bound to a socket standing in for
    the receiver, its status messages and NAKs taken in compiled code."""

    def __init__(self, address=None):
        self.log = LogBuffers.create(None, term_length=TERM_LENGTH, initial_term_id=INITIAL_TERM_ID, session_id=7,
                                     stream_id=1001)
        appender = ExclusiveTermAppender(self.log)
        for i in range(4):
            assert appender.offer(bytes([i + 1]) * 1000) > 0
        values = AtomicBuffer(bytearray(11 * 128))
        (self.snd_pos, self.snd_lmt, snd_bpe, received, self.invalid, self.status, self.naks, self.snd_naks,
         self.retransmits, self.retransmitted, self.bytes_sent) = (AtomicCounter(values, i) for i in range(11))
        self.snd_pos.set(4 * FRAME)
        self.send_pass = SendPass()
        self.send_pass.set_publications([([self.log.term_buffer(i) for i in range(3)], self.snd_pos, self.snd_lmt,
                                          1408, 4, self.log, snd_bpe)])
        self.sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sink.bind(("127.0.0.1", 0))
        self.sink.settimeout(0.2)
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind(("127.0.0.1", 0))
        self.transport = UdpTransport(sock, batch=8)
        self.send_pass.bind(self.transport, address or self.sink.getsockname(), self.bytes_sent)
        self.reader = ControlFrameReader(received, self.invalid)
        self.reader.set_fast(self.send_pass, self.status, self.naks)
        self.send_pass.set_fast_status(0, 7, 1001, 99)
        self.send_pass.set_fast_retransmit(0, self.snd_naks, self.retransmits, self.retransmitted, LINGER_NS, ESTIMATE,
                                           self.log.max_message_length)
        self.peer = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)

    def nak(self, term_offset, length, now_ns, term_id=INITIAL_TERM_ID, session_id=7):
        """Sends a NAK to the transport and polls it in; returns the frame types left as records."""
        out = bytearray(f.NAK_HEADER_LENGTH)
        f.encode_nak(out, 0, session_id, 1001, term_id, term_offset, length)
        self.peer.sendto(bytes(out), self.transport.bound_address)
        deadline = time.monotonic() + 3.0
        while self.reader.poll(self.transport, now_ns) == 0 and time.monotonic() < deadline:
            pass
        return [self.reader.frame_type(i) for i in range(self.reader.record_count)]

    def resent(self):
        """The datagrams the sink received (waits a moment for the first)."""
        out = []
        try:
            while True:
                out.append(self.sink.recv(2048))
                self.sink.settimeout(0.05)
        except (socket.timeout, BlockingIOError):
            pass
        self.sink.settimeout(0.2)
        return out

    def term_bytes(self, start, end):
        return self.log.term_buffer(0).get_bytes(start, end - start)

    def counts(self):
        return (self.naks.get(), self.snd_naks.get(), self.retransmits.get(), self.retransmitted.get(),
                self.invalid.get())

    def close(self):
        self.transport.close()
        for sock in (self.sink, self.peer):
            sock.close()
        self.send_pass.set_publications([])             # lets go of the terms
        self.log.close()


@pytest.fixture
def rig():
    made = Rig()
    yield made
    made.close()


def test_a_nak_of_a_range_sent_is_resent_at_once_and_counted(rig):
    assert rig.nak(FRAME, 2 * FRAME, 1_000) == []                   # taken: no record for Python
    assert rig.reader.fast_naks == 1
    # one frame per datagram (two would exceed the MTU), straight from the term
    assert rig.resent() == [rig.term_bytes(FRAME, 2 * FRAME), rig.term_bytes(2 * FRAME, 3 * FRAME)]
    # NAK received (endpoint) and by the publication; one retransmit however many datagrams, its bytes
    assert rig.counts() == (1, 1, 1, 2 * FRAME, 0)
    assert rig.bytes_sent.get() == 0                                # retransmits are not bytes sent


def test_a_nak_inside_the_range_just_resent_is_ignored_until_the_linger_ends(rig):
    rig.nak(0, 2 * FRAME, 1_000)
    assert len(rig.resent()) == 2
    assert rig.nak(FRAME, FRAME, 1_000 + LINGER_NS) == []           # inside, at the last moment of the linger
    assert rig.resent() == [] and rig.counts()[:3] == (2, 2, 1)
    assert rig.nak(FRAME, FRAME, 1_001 + LINGER_NS) == []           # strictly past it: resent again
    assert rig.resent() == [rig.term_bytes(FRAME, 2 * FRAME)] and rig.counts()[:3] == (3, 3, 2)


def test_another_range_replaces_unicasts_one_action_at_once(rig):
    rig.nak(0, FRAME, 1_000)
    rig.resent()
    assert rig.nak(3 * FRAME, FRAME, 2_000) == []
    assert rig.resent() == [rig.term_bytes(3 * FRAME, 4 * FRAME)] and rig.counts()[:3] == (2, 2, 2)
    assert rig.nak(0, FRAME, 3_000) == []                           # the first range no longer lingers
    assert len(rig.resent()) == 1


def test_a_range_not_yet_sent_or_no_longer_in_the_log_is_counted_but_not_resent(rig):
    assert rig.nak(4 * FRAME, FRAME, 1_000) == []                   # at the sender position: never sent
    assert rig.nak(0, FRAME, 1_000, term_id=INITIAL_TERM_ID - 1) == []   # before the stream began
    rig.snd_pos.set(3 * TERM_LENGTH)                               # the first term is long overwritten
    assert rig.nak(0, FRAME, 20_000_000, term_id=INITIAL_TERM_ID) == []
    assert rig.resent() == [] and rig.counts() == (3, 3, 0, 0, 0)


def test_a_nak_of_no_length_or_too_near_the_terms_end_is_counted_and_ignored(rig):
    assert rig.nak(0, 0, 1_000) == []
    assert rig.nak(TERM_LENGTH - 32, 32, 1_000) == []               # a frame header's length from the end: too near
    assert rig.resent() == [] and rig.counts() == (2, 2, 0, 0, 0)


def test_a_nak_past_the_terms_end_is_dropped_as_invalid(rig):
    assert rig.nak(TERM_LENGTH - 64, 128, 1_000) == []
    assert rig.nak(TERM_LENGTH, 32, 1_000) == []
    assert rig.resent() == [] and rig.counts() == (2, 0, 0, 0, 2)


def test_the_resend_is_bounded_by_the_estimate_and_the_terms_end():
    # an estimate of one frame: a NAK of three frames resends one (RetransmitHandler's max_retransmission_length)
    made = Rig()
    try:
        made.send_pass.set_fast_retransmit(0, made.snd_naks, made.retransmits, made.retransmitted, LINGER_NS, FRAME,
                                           made.log.max_message_length)
        made.nak(0, 3 * FRAME, 1_000)
        assert made.resent() == [made.term_bytes(0, FRAME)] and made.counts()[2:4] == (1, FRAME)
    finally:
        made.close()


@pytest.mark.parametrize("change", ["off", "no fast status", "other session", "no nak counter", "unbound"])
def test_otherwise_a_nak_is_a_record_for_the_publication(rig, change):
    session_id = 7
    if change == "off":
        rig.send_pass.set_fast_retransmit(0, None)
    elif change == "no fast status":
        rig.send_pass.set_fast_status(0, 7, 1001, None)
    elif change == "other session":
        session_id = 8
    elif change == "no nak counter":
        rig.reader.set_fast(rig.send_pass, rig.status)
    else:
        rig.send_pass.bind(None, None)
    assert rig.nak(0, FRAME, 1_000, session_id=session_id) == [f.HDR_TYPE_NAK]
    assert rig.reader.nak(0) == (session_id, 1001, INITIAL_TERM_ID, 0, FRAME)
    assert rig.resent() == [] and rig.counts() == (0, 0, 0, 0, 0)


def test_a_nak_read_one_by_one_from_python_is_a_record(rig):
    out = bytearray(f.NAK_HEADER_LENGTH)
    f.encode_nak(out, 0, 7, 1001, INITIAL_TERM_ID, 0, FRAME)
    assert rig.reader.parse_datagram(bytes(out), len(out)) == 1 and rig.counts() == (0, 0, 0, 0, 0)


def test_a_failed_resend_is_kept_for_python_to_report():
    # the broadcast address without SO_BROADCAST: sendmmsg fails (EACCES) and nothing leaves the host
    made = Rig(address=("255.255.255.255", 40999))
    try:
        assert made.nak(0, FRAME, 1_000) == []
        assert made.send_pass.resend_errno == errno.EACCES
        assert made.send_pass.take_resend_errno() == errno.EACCES and made.send_pass.take_resend_errno() == 0
        assert made.counts() == (1, 1, 0, 0, 0)
    finally:
        made.close()


def test_set_fast_retransmit_checks_its_arguments(rig):
    counter = rig.snd_naks
    with pytest.raises(IndexError):
        rig.send_pass.set_fast_retransmit(1, counter)
    with pytest.raises(InvalidArgumentError):
        rig.send_pass.set_fast_retransmit(0, counter, rig.retransmits, None, LINGER_NS, ESTIMATE, 0)
    with pytest.raises(InvalidArgumentError):
        rig.send_pass.set_fast_retransmit(0, counter, None, None, LINGER_NS, 16, 0)
    with pytest.raises(InvalidArgumentError):
        rig.send_pass.set_fast_retransmit(0, counter, None, None, -1, ESTIMATE, 0)
    values = AtomicBuffer(bytearray(2 * 128))
    bare = SendPass()
    bare.set_publications([([AtomicBuffer(bytearray(65536)) for _ in range(3)], AtomicCounter(values, 0),
                            AtomicCounter(values, 1), 1408, 4)])
    with pytest.raises(IllegalStateError):
        bare.set_fast_retransmit(0, counter, None, None, LINGER_NS, ESTIMATE, 0)
