# SPDX-License-Identifier: Apache-2.0
"""ControlFrameReader, the compiled control path of a send endpoint: status messages (with and without the group
tag) and NAKs parsed into records, RTTM/ERR/RSP_SETUP recorded by slot, invalid datagrams counted and dropped,
hostile bytes never crash it; one recvmmsg per poll over loopback."""
from __future__ import annotations

import socket
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aeron._core import frames as f
from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.control_dispatcher import ControlFrameReader
from aeron._core.counters import AtomicCounter
from aeron._core.udp_transport import UdpTransport
from aeron.common.errors import InvalidArgumentError


def _reader():
    values = AtomicBuffer(bytearray(2 * 128))
    counters = (AtomicCounter(values, 0), AtomicCounter(values, 1))
    return ControlFrameReader(*counters), counters


def _sm(group_tag=None, flags=0):
    out = bytearray(f.SM_WITH_GROUP_TAG_LENGTH if group_tag is not None else f.SM_HEADER_LENGTH)
    f.encode_status_message(out, 0, 7, 1001, 100, 4096, 32768, 1 << 40, group_tag, flags)
    return bytes(out)


def _nak():
    out = bytearray(f.NAK_HEADER_LENGTH)
    f.encode_nak(out, 0, 7, 1001, 101, 64, 1408)
    return bytes(out)


def test_status_messages_and_naks_are_parsed_into_records():
    reader, (received, invalid) = _reader()
    assert reader.parse_datagram(_sm(), f.SM_HEADER_LENGTH) == 1
    assert reader.frame_type(0) == f.HDR_TYPE_SM
    assert reader.status_message(0) == (7, 1001, 0, 100, 4096, 32768, 1 << 40, None)
    assert reader.parse_datagram(_sm(group_tag=-5, flags=f.SM_EOS_FLAG), f.SM_WITH_GROUP_TAG_LENGTH) == 1
    assert reader.status_message(0) == (7, 1001, f.SM_EOS_FLAG, 100, 4096, 32768, 1 << 40, -5)
    assert reader.parse_datagram(_nak(), f.NAK_HEADER_LENGTH) == 1
    assert reader.nak(0) == (7, 1001, 101, 64, 1408)
    with pytest.raises(InvalidArgumentError):
        reader.status_message(0)                                        # a NAK record
    assert (received.get(), invalid.get()) == (f.SM_HEADER_LENGTH + f.SM_WITH_GROUP_TAG_LENGTH + f.NAK_HEADER_LENGTH,
                                               0)


def test_other_frames_are_recorded_by_slot_and_invalid_ones_counted():
    reader, (_, invalid) = _reader()
    rttm = bytearray(f.RTTM_HEADER_LENGTH)
    f.encode_rttm(rttm, 0, 7, 1001, 1, 0, 0)
    assert reader.parse_datagram(bytes(rttm), len(rttm)) == 1 and reader.frame_type(0) == f.HDR_TYPE_RTTM
    heartbeat = bytearray(32)
    f.encode_heartbeat(heartbeat, 0, 7, 1001, 100, 0)
    assert reader.parse_datagram(bytes(heartbeat), 32) == 0                # valid, nothing a sender acts on
    assert reader.parse_datagram(_sm()[:20], 20) == 0                       # too short for an SM
    negative_window = bytearray(_sm())
    negative_window[24:28] = (-1).to_bytes(4, "little", signed=True)
    assert reader.parse_datagram(bytes(negative_window), len(negative_window)) == 0
    assert invalid.get() == 2
    with pytest.raises(InvalidArgumentError):
        reader.parse_datagram(b"\x00" * 8, 9)


@pytest.mark.parametrize("datagram", [_sm(), _sm(group_tag=-5), _nak()], ids=["sm", "sm-group-tag", "nak"])
def test_every_truncation_of_a_status_message_or_nak_is_counted_and_dropped(datagram):
    reader, (received, invalid) = _reader()
    for length in range(1, len(datagram)):
        assert reader.parse_datagram(datagram, length) == 0, length
        assert reader.record_count == 0
        assert invalid.get() == length, length                          # one invalid datagram each
    assert received.get() == sum(range(1, len(datagram)))
    assert reader.parse_datagram(datagram, len(datagram)) == 1 and invalid.get() == len(datagram) - 1


def test_a_frame_length_that_disagrees_with_the_datagram_is_counted_and_dropped():
    reader, (_, invalid) = _reader()
    for claimed in (-1, 0, 8, f.SM_HEADER_LENGTH - 4, 1 << 20, -(1 << 31)):
        sm = bytearray(_sm())
        sm[0:4] = claimed.to_bytes(4, "little", signed=True)
        assert reader.parse_datagram(bytes(sm), len(sm)) == 0, claimed
    assert invalid.get() == 6


@settings(max_examples=300, deadline=None)
@given(datagram=st.binary(max_size=128), frame_type=st.sampled_from([f.HDR_TYPE_SM, f.HDR_TYPE_NAK, 0x7F]),
       claimed=st.integers(min_value=-2**31, max_value=2**31 - 1))
def test_hostile_datagrams_never_crash(datagram, frame_type, claimed):
    reader, counters = _reader()
    header = bytearray(8)
    header[0:4] = claimed.to_bytes(4, "little", signed=True)
    header[4] = f.CURRENT_VERSION
    header[6:8] = frame_type.to_bytes(2, "little")
    received, invalid = counters
    for candidate in (datagram, bytes(header) + datagram):
        before = invalid.get()
        records = reader.parse_datagram(candidate, len(candidate))
        assert records in (0, 1)
        assert records + (invalid.get() - before) <= 1                 # a record, or counted, or ignored: never both
    assert received.get() == 2 * len(datagram) + 8


def test_poll_reads_a_batch_over_loopback():
    reader, (received, _) = _reader()
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    transport = UdpTransport(sock, batch=8)
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        for datagram in (_sm(), b"\x00", _nak()):
            sender.sendto(datagram, transport.bound_address)
        records, count = [], 0
        deadline = time.monotonic() + 3.0
        while count < 3 and time.monotonic() < deadline:
            count += reader.poll(transport)
            records += [(reader.frame_type(i), reader.slot(i)) for i in range(reader.record_count)]
        assert count == 3
        assert [kind for kind, _ in records] == [f.HDR_TYPE_SM, f.HDR_TYPE_NAK]
        assert received.get() == f.SM_HEADER_LENGTH + 1 + f.NAK_HEADER_LENGTH
    finally:
        transport.close()
        sender.close()


def _fast_rig(term_length=65536, initial_term_id=5):
    """A send pass of one publication (session 7, stream 1001) whose status messages from receiver 99 are taken in
    compiled code; returns (reader, status-messages counter, pass, snd-pos, snd-lmt, log)."""
    from aeron._core.logbuffer import LogBuffers
    from aeron._core.send_pass import SendPass
    log = LogBuffers.create(None, term_length=term_length, initial_term_id=initial_term_id, session_id=7,
                            stream_id=1001)
    values = AtomicBuffer(bytearray(6 * 128))
    snd_pos, snd_lmt, snd_bpe, received, invalid, status = (AtomicCounter(values, i) for i in range(6))
    send_pass = SendPass()
    send_pass.set_publications([([log.term_buffer(i) for i in range(3)], snd_pos, snd_lmt, 1408, 4, log, snd_bpe)])
    reader = ControlFrameReader(received, invalid)
    reader.set_fast(send_pass, status)
    send_pass.set_fast_status(0, 7, 1001, 99)
    return reader, status, send_pass, snd_pos, snd_lmt, log


def _poll_one(reader, datagram, now_ns):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    transport = UdpTransport(sock, batch=8)
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sender.sendto(datagram, transport.bound_address)
        deadline = time.monotonic() + 3.0
        while reader.poll(transport, now_ns) == 0 and time.monotonic() < deadline:
            pass
        return [reader.frame_type(i) for i in range(reader.record_count)]
    finally:
        transport.close()
        sender.close()


def _status(term_id=5, term_offset=0, window=32768, receiver_id=99, flags=0, session_id=7):
    out = bytearray(f.SM_HEADER_LENGTH)
    f.encode_status_message(out, 0, session_id, 1001, term_id, term_offset, window, receiver_id, None, flags)
    return bytes(out)


def test_a_status_message_of_the_named_receiver_moves_the_limit_in_compiled_code():
    reader, status, send_pass, snd_pos, snd_lmt, _ = _fast_rig()
    assert send_pass.last_status_ns(0) is None
    assert _poll_one(reader, _status(term_offset=1024), 1_000) == []            # taken: no record
    assert (snd_lmt.get(), status.get(), reader.fast_count, reader.last_fast_ns) == (1024 + 32768, 1, 1, 1_000)
    assert send_pass.last_status_ns(0) == 1_000
    # max flow control: a smaller position plus window never takes the limit back
    assert _poll_one(reader, _status(term_offset=0, window=4096), 2_000) == []
    assert snd_lmt.get() == 1024 + 32768 and send_pass.last_status_ns(0) == 2_000
    # the next term: positions count from the initial term id
    snd_pos.set(65536)
    assert _poll_one(reader, _status(term_id=6, term_offset=64), 3_000) == []
    assert snd_lmt.get() == 65536 + 64 + 32768


@pytest.mark.parametrize("datagram", [
    _status(receiver_id=98),                       # another receiver
    _status(flags=f.SM_SEND_SETUP_FLAG),           # a SETUP asked for
    _status(flags=f.SM_EOS_FLAG),                  # the receiver going
    _status(window=32769 + 1),                     # more than half a term: the publication ignores it
    _status(term_id=7),                            # two terms ahead of the sender: the publication rejects it
    _status(term_id=4),                            # a term behind the initial one: a negative position, rejected
    _status(session_id=8),                         # no publication of the pass
])
def test_every_other_status_message_is_a_record_for_the_publication(datagram):
    reader, status, send_pass, _, snd_lmt, _ = _fast_rig()
    assert _poll_one(reader, datagram, 1_000) == [f.HDR_TYPE_SM]
    assert (snd_lmt.get(), status.get(), reader.fast_count, send_pass.last_status_ns(0)) == (0, 0, 0, None)


def test_status_messages_are_records_when_not_set_or_read_one_by_one():
    reader, status, send_pass, _, snd_lmt, _ = _fast_rig()
    assert reader.parse_datagram(_status(), f.SM_HEADER_LENGTH) == 1           # from Python: no time to note
    send_pass.set_fast_status(0, 7, 1001, None)
    assert _poll_one(reader, _status(), 1_000) == [f.HDR_TYPE_SM]
    send_pass.set_fast_status(0, 7, 1001, 99)
    assert reader.fast
    reader.set_fast(None)
    assert not reader.fast
    assert _poll_one(reader, _status(), 1_000) == [f.HDR_TYPE_SM]
    assert (snd_lmt.get(), status.get()) == (0, 0)


def test_a_change_of_receiver_forgets_when_the_last_was_heard():
    reader, _, send_pass, _, _, _ = _fast_rig()
    _poll_one(reader, _status(), 1_000)
    send_pass.set_fast_status(0, 7, 1001, 99)                  # the same receiver: kept
    assert send_pass.last_status_ns(0) == 1_000
    send_pass.set_fast_status(0, 7, 1001, 42)
    assert send_pass.last_status_ns(0) is None


def test_fast_status_needs_a_counter_and_the_publications_log():
    from aeron._core.send_pass import SendPass
    from aeron.common.errors import IllegalStateError
    reader, _, send_pass, _, _, _ = _fast_rig()
    with pytest.raises(InvalidArgumentError):
        reader.set_fast(send_pass)
    values = AtomicBuffer(bytearray(2 * 128))
    bare = SendPass()
    bare.set_publications([([AtomicBuffer(bytearray(65536)) for _ in range(3)], AtomicCounter(values, 0),
                            AtomicCounter(values, 1), 1408, 4)])
    with pytest.raises(IllegalStateError):
        bare.set_fast_status(0, 7, 1001, 99)
    with pytest.raises(IndexError):
        send_pass.set_fast_status(1, 7, 1001, 99)


def test_term_ids_wrap_as_int32_in_compiled_code():
    # an initial term id just below 2^31: the next term's id wraps negative, its position is still one term on
    reader, status, _, snd_pos, snd_lmt, _ = _fast_rig(initial_term_id=0x7FFF_FFFF)
    snd_pos.set(65536)
    assert _poll_one(reader, _status(term_id=-0x8000_0000, term_offset=32), 1_000) == []
    assert (snd_lmt.get(), status.get()) == (65536 + 32 + 32768, 1)
