# SPDX-License-Identifier: Apache-2.0
"""RebuildPass, an image's rebuild tracking in compiled code: status messages on a quarter window of the slowest
reader's progress and on their interval, the loss scan with its NAKs after the delay and on retry, the receiver
position, cleaning behind the readers, the loss report; what only the Python path may decide hands back with nothing
changed, and a failed send is kept for it to raise. Over a real loopback socket: the sender's control socket reads
what the pass sends."""
from __future__ import annotations

import errno
import socket

import pytest

from aeron._core import frames as f
from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.counters import COUNTER_LENGTH, AtomicCounter
from aeron._core.data_dispatcher import ImageReceiveState, address_key
from aeron._core.logbuffer import LogBuffers
from aeron._core.loss_detector import LossDetector
from aeron._core.loss_report import LossReport, read_loss_report
from aeron._core.rebuild_pass import TRACK_HAND_BACK, TRACK_NOTHING, TRACK_SENT, RebuildPass
from aeron._core.term_scanner import LogCleaner
from aeron._core.udp_transport import UdpTransport
from aeron.common.errors import IllegalStateError, InvalidArgumentError, OutOfBoundsError
from tests._core.test_data_dispatcher import data_frame

TERM = 64 * 1024
WINDOW = TERM // 2
SESSION, STREAM, INITIAL_TERM_ID = 7, 1001, 100
RECEIVER_ID = 42
NOW = 5_000_000_000
US, MS = 1_000, 1_000_000
LIVENESS = 10_000 * MS
SM_INTERVAL = 200 * MS
HWM, RCV_POS, NAKS, NAK_MESSAGES, STATUS_MESSAGES, BYTES_SENT = range(6)


class Fixed:
    """A delay generator with fixed delays, as the driver's unicast one."""

    def __init__(self, first_ns: int, retry_ns: int) -> None:
        self.static_delays = (first_ns, retry_ns)

    def first(self) -> int:
        return self.static_delays[0]

    def retry(self) -> int:
        return self.static_delays[1]


class Rig:
    def __init__(self, tmp_path, nak_delay_ns: int = 10 * US, report: LossReport | None = None,
                 now_ns: int = NOW) -> None:
        self.log = LogBuffers.create(str(tmp_path / "image.logbuffer"), term_length=TERM,
                                     initial_term_id=INITIAL_TERM_ID, session_id=SESSION, stream_id=STREAM)
        self.values = AtomicBuffer(bytearray(COUNTER_LENGTH * 8))
        self.counters = [AtomicCounter(self.values, i) for i in range(6)]
        self.terms = [self.log.term_buffer(i) for i in range(3)]
        self.state = ImageReceiveState(SESSION, STREAM, INITIAL_TERM_ID, self.terms, self.counters[HWM], 0, now_ns)
        self.control = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)      # the sender's: SMs and NAKs come here
        self.control.bind(("127.0.0.1", 0))
        self.control.settimeout(2.0)
        self.state.set_connections([(1, address_key(self.control.getsockname()), now_ns)])
        self.python_calls: list[tuple] = []
        self.loss = LossDetector(Fixed(nak_delay_ns, 100 * US), lambda *gap: self.python_calls.append(("nak", gap)),
                                 lambda *gap: self.python_calls.append(("loss", gap)))
        self.cleaner = LogCleaner(self.log, 0)
        self.rebuild = RebuildPass(self.state, self.loss, self.cleaner, self.log, *self.counters[RCV_POS:],
                                   RECEIVER_ID, None, WINDOW, 0, LIVENESS, SM_INTERVAL)
        own = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        own.bind(("127.0.0.1", 0))
        self.transport = UdpTransport(own)
        self.report = report
        self.rebuild.aim(self.transport, self.control.getsockname(), report, -1, now_ns)

    def __getitem__(self, index: int) -> int:
        return self.counters[index].get()

    def insert(self, term_offset: int, length: int = 64) -> None:
        """A frame as the receive path leaves it: in the term, the hwm moved."""
        frame = data_frame(term_offset, b"d" * (length - f.DATA_HEADER_LENGTH))
        self.terms[0].put_bytes(term_offset, frame)
        self.counters[HWM].set(max(self[HWM], term_offset + length))

    def received(self) -> list:
        """What the sender's control socket got so far, decoded."""
        out = []
        self.control.setblocking(False)
        try:
            while True:
                out.append(f.decode_frame(self.control.recv(2048)))
        except BlockingIOError:
            pass
        finally:
            self.control.settimeout(2.0)
        return out

    def close(self) -> None:
        self.transport.close()
        self.control.close()
        for term in self.terms:
            term.close()
        self.log.close()


@pytest.fixture
def rig(tmp_path):
    made = Rig(tmp_path)
    yield made
    made.close()


def test_the_first_status_message_goes_at_once_then_on_its_interval(rig):
    assert rig.rebuild.sm_pending and rig.rebuild.armed
    assert rig.rebuild.track(0, 0, NOW) == TRACK_SENT
    sm = f.decode_frame(rig.control.recv(2048))
    assert (sm.type, sm.session_id, sm.stream_id, sm.consumption_term_id, sm.consumption_term_offset,
            sm.receiver_window, sm.receiver_id, sm.group_tag, sm.flags) == (
        f.HDR_TYPE_SM, SESSION, STREAM, INITIAL_TERM_ID, 0, WINDOW, RECEIVER_ID, None, 0)
    assert (rig[STATUS_MESSAGES], rig[BYTES_SENT], rig.rebuild.sm_pending, rig.rebuild.time_of_last_sm_ns) == (
        1, f.SM_HEADER_LENGTH, False, NOW)
    assert rig.log.active_transport_count == 1
    assert rig.rebuild.track(0, 0, NOW + SM_INTERVAL - 1) == TRACK_NOTHING
    assert rig.received() == []
    assert rig.rebuild.deadline == NOW + SM_INTERVAL
    assert rig.rebuild.track(0, 0, NOW + SM_INTERVAL) == TRACK_SENT           # its interval
    assert len(rig.received()) == 1 and rig[STATUS_MESSAGES] == 2


def test_a_status_message_follows_the_slowest_reader_a_quarter_window_on_and_the_terms_are_cleaned_behind(tmp_path):
    made = Rig(tmp_path, report=None)
    try:
        made.rebuild.track(0, 0, NOW)
        made.received()
        for offset in range(0, 16 * 1024, 1024):
            made.insert(offset, 1024)
        quarter = WINDOW >> 2
        assert made.rebuild.status_message_threshold == quarter + 1
        assert made.rebuild.track(quarter, quarter, NOW) == TRACK_NOTHING     # a quarter exactly: not yet
        assert made[RCV_POS] == 16 * 1024 and made.received() == []           # rebuilt to the hwm all the same
        assert made.rebuild.track(quarter + 1024, 16 * 1024, NOW) == TRACK_SENT
        [sm] = made.received()
        assert sm.consumption_term_offset == quarter + 1024
        assert made.state.last_sm_position == made.rebuild.next_sm_position == quarter + 1024
        # readers a term and more on: the term behind them is cleaned before it is reused
        made.rebuild.next_sm_position = TERM
        assert made.rebuild.track(TERM + 16 * 1024, TERM + 16 * 1024, NOW) == TRACK_SENT
        assert made.cleaner.clean_position == 16 * 1024
        assert made.terms[0].get_bytes(0, 16 * 1024) == bytes(16 * 1024)
        [sm] = made.received()
        assert (sm.consumption_term_id, sm.consumption_term_offset) == (INITIAL_TERM_ID + 1, 16 * 1024)
    finally:
        made.close()


def test_a_gap_is_naked_after_its_delay_then_retried_and_the_receiver_position_stops_at_it(rig):
    rig.rebuild.track(0, 0, NOW)
    rig.received()
    rig.insert(0)
    rig.insert(128)                                         # [64, 128) missing
    assert rig.rebuild.track(0, 0, NOW) == TRACK_NOTHING
    assert rig.loss.gap_open and rig[RCV_POS] == 64 and rig.received() == []
    assert rig.rebuild.deadline == NOW + 10 * US             # the NAK's timer comes before the interval
    assert rig.rebuild.track(0, 0, NOW + 10 * US) == TRACK_SENT
    [nak] = rig.received()
    assert (nak.type, nak.session_id, nak.stream_id, nak.term_id, nak.term_offset, nak.length) == (
        f.HDR_TYPE_NAK, SESSION, STREAM, INITIAL_TERM_ID, 64, 64)
    assert (rig[NAKS], rig[NAK_MESSAGES], rig.loss.expiry_ns) == (1, 1, NOW + 110 * US)
    assert rig.rebuild.track(0, 0, NOW + 50 * US) == TRACK_NOTHING
    assert rig.rebuild.track(0, 0, NOW + 110 * US) == TRACK_SENT  # the retry
    assert len(rig.received()) == 1 and rig[NAKS] == 2
    rig.insert(64)                                           # filled
    assert rig.rebuild.track(0, 0, NOW + 120 * US) == TRACK_NOTHING
    assert not rig.loss.gap_open and rig[RCV_POS] == 192
    assert rig.python_calls == []                            # no callback: all in the pass


def test_a_naked_gap_goes_to_the_loss_report_once_and_the_first_one_hands_back(tmp_path):
    report = LossReport(AtomicBuffer(bytearray(64 * 1024)))
    made = Rig(tmp_path, report=report)
    try:
        made.rebuild.track(0, 0, NOW)
        made.received()
        made.insert(0)
        made.insert(128)                                             # [64, 128) missing
        assert made.rebuild.track(0, 0, NOW) == TRACK_NOTHING        # its timer runs: nothing to report yet
        before = (made[RCV_POS], made.loss.gap_open, made.loss.expiry_ns, made[NAKS])
        assert made.rebuild.track(0, 0, NOW + 10 * US) == TRACK_HAND_BACK     # its NAK: no entry yet, Python's
        assert (made[RCV_POS], made.loss.gap_open, made.loss.expiry_ns, made[NAKS]) == before
        assert made.received() == []
        entry = report.create_entry(64, 1, SESSION, STREAM, "aeron:udp?endpoint=127.0.0.1:40123", "127.0.0.1:1")
        made.loss.report_loss(INITIAL_TERM_ID, 64, 64)               # what Python's path does with the entry
        made.rebuild.aim(made.transport, made.control.getsockname(), report, entry, NOW)
        made.insert(256)                                             # [192, 256) missing too, after the first
        assert made.rebuild.track(0, 0, NOW + 10 * US) == TRACK_SENT  # the first gap NAKed, already reported
        assert read_loss_report(report.buffer)[0].observation_count == 1
        made.insert(64)                                              # filled: the next gap is NAKed, reported
        assert made.rebuild.track(0, 0, NOW + 20 * US) == TRACK_NOTHING
        assert made.rebuild.track(0, 0, NOW + 30 * US) == TRACK_SENT
        [row] = read_loss_report(report.buffer)
        assert (row.observation_count, row.total_bytes_lost) == (2, 128)
        assert row.last_observation_timestamp > 1_600_000_000_000      # the wall clock's milliseconds
        assert made.rebuild.track(0, 0, NOW + 130 * US) == TRACK_SENT  # its retry: not reported again
        assert read_loss_report(report.buffer)[0].observation_count == 2
        assert [nak.term_offset for nak in made.received()] == [64, 192, 192]
    finally:
        made.close()


def test_what_only_python_decides_hands_back_with_nothing_changed(rig):
    rig.insert(0)
    rig.rebuild.disarm()
    assert rig.rebuild.track(0, 0, NOW) == TRACK_HAND_BACK
    rig.rebuild.aim(rig.transport, rig.control.getsockname(), None, -1, NOW)
    # a sender quiet for the liveness timeout (the image's transports count changes: Python's)
    assert rig.rebuild.track(0, 0, NOW + LIVENESS) == TRACK_HAND_BACK
    # a second connection
    rig.state.set_connections([(1, address_key(rig.control.getsockname()), NOW), (1, address_key(("127.0.0.1", 9)),
                                                                                  NOW)])
    assert rig.rebuild.track(0, 0, NOW) == TRACK_HAND_BACK
    assert (rig[RCV_POS], rig[STATUS_MESSAGES], rig.rebuild.sm_pending, rig.received()) == (0, 0, True, [])
    # the Python side's time of the connection's last frame counts too
    rig.state.set_connections([(1, address_key(rig.control.getsockname()), 0)])
    rig.rebuild.aim(rig.transport, rig.control.getsockname(), None, -1, NOW)
    assert rig.rebuild.track(0, 0, NOW + LIVENESS - 1) == TRACK_SENT


def test_a_failed_send_is_kept_for_python_and_the_status_message_stays_pending(rig):
    # the broadcast address without SO_BROADCAST: sendto fails (EACCES) and nothing leaves the host
    rig.rebuild.aim(rig.transport, ("255.255.255.255", rig.control.getsockname()[1]), None, -1, NOW)
    assert rig.rebuild.track(0, 0, NOW) == TRACK_HAND_BACK
    assert (rig.rebuild.send_errno, rig.rebuild.armed, rig.rebuild.sm_pending, rig[STATUS_MESSAGES]) == (
        errno.EACCES, False, True, 0)
    assert rig.rebuild.take_send_errno() == errno.EACCES and rig.rebuild.take_send_errno() == 0


def test_a_full_socket_or_a_refused_port_counts_the_status_message_as_sent(rig):
    port = rig.control.getsockname()[1]
    rig.control.close()                                      # the port now refuses: ECONNREFUSED on a later send
    rig.rebuild.aim(rig.transport, ("127.0.0.1", port), None, -1, NOW)
    for n in range(3):
        assert rig.rebuild.track(0, 0, NOW + n * SM_INTERVAL) == TRACK_SENT
    assert (rig[STATUS_MESSAGES], rig.rebuild.send_errno) == (3, 0)


def test_arguments_are_checked(rig, tmp_path):
    with pytest.raises(InvalidArgumentError):               # delays drawn at random: only Python may
        bad = LossDetector(object(), print)
        RebuildPass(rig.state, bad, rig.cleaner, rig.log, *rig.counters[RCV_POS:], 1, None, WINDOW, 0, LIVENESS,
                    SM_INTERVAL).aim(rig.transport, rig.control.getsockname(), None, -1, NOW)
    with pytest.raises(InvalidArgumentError):
        RebuildPass(rig.state, rig.loss, rig.cleaner, rig.log, *rig.counters[RCV_POS:], 1, None, 0, 0, LIVENESS,
                    SM_INTERVAL)
    other = LogBuffers.create(str(tmp_path / "other.logbuffer"), term_length=TERM * 2, initial_term_id=1,
                              session_id=1, stream_id=1)
    try:
        with pytest.raises(InvalidArgumentError):           # terms of another length than the image's
            RebuildPass(rig.state, rig.loss, LogCleaner(other, 0), other, *rig.counters[RCV_POS:], 1, None, WINDOW,
                        0, LIVENESS, SM_INTERVAL)
    finally:
        other.close()
    report = LossReport(AtomicBuffer(bytearray(4096)))
    with pytest.raises(OutOfBoundsError):                   # an offset the report never handed out
        rig.rebuild.aim(rig.transport, rig.control.getsockname(), report, 64, NOW)
    closed = UdpTransport(socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
    closed.close()
    with pytest.raises(IllegalStateError):
        rig.rebuild.aim(closed, rig.control.getsockname(), None, -1, NOW)


def test_without_on_interval_a_status_message_goes_only_for_the_readers_progress(rig):
    rig.rebuild.track(0, 0, NOW)
    rig.received()
    assert rig.rebuild.track(0, 0, NOW + SM_INTERVAL, False) == TRACK_NOTHING     # the interval: the caller's
    assert rig.received() == [] and rig.rebuild.time_of_last_sm_ns == NOW
    rig.insert(0, 1024)
    assert rig.rebuild.track(WINDOW, WINDOW, NOW + SM_INTERVAL, False) == TRACK_SENT
    assert [sm.consumption_term_offset for sm in rig.received()] == [WINDOW]


def test_a_receiver_cycle_scans_only_after_a_move_and_hands_python_what_only_it_may_do(rig):
    """RebuildPass.cycle (ImageTracking.track for every image): with no holding subscriber nothing is tracked; the
    pass runs when data, the high-water mark or a subscriber moved, and is skipped when nothing did; a status
    message due on its interval, one pending, a disarmed pass with something to scan, a rejection and a failed send
    go to the image's Python path (hand_back), which decides as before."""
    from aeron._core.rebuild_pass import (
        HAND_BACK_NOTHING, HAND_BACK_STATUS, HAND_BACK_TRACK, LIFECYCLE_DONE, LIFECYCLE_LINGER, ImageTracking,
    )
    reader = AtomicCounter(rig.values, 6)
    rebuild = rig.rebuild
    rebuild.static_window = True
    tracking = ImageTracking()
    tracking.passes = [rebuild]
    # no subscriber: nothing scanned; the first status message is pending: Python's to send
    assert tracking.track(NOW) == 0 and tracking.hand_backs == 1 and rebuild.hand_back == HAND_BACK_STATUS
    rebuild.set_positions([reader])
    assert rebuild.run_cycle(NOW) == TRACK_SENT and rebuild.hand_back == HAND_BACK_NOTHING   # sent in the pass
    assert [m.type for m in rig.received()] == [f.HDR_TYPE_SM]
    assert (rebuild.tracked_inserts, rebuild.tracked_min_sub) == (rig.state.inserts, 0)
    # nothing moved: no scan, no send, nothing for Python
    rebuild.next_sm_position = -1           # what a scan would change, were one to run: it does not
    assert rebuild.run_cycle(NOW + MS) == 0 and rebuild.hand_back == HAND_BACK_NOTHING
    assert rebuild.next_sm_position == -1 and rig.received() == []
    rebuild.next_sm_position = 0
    # the reader moved a quarter window: scanned in the pass, its status message sent there
    reader.set(WINDOW // 4 + 32)
    assert rebuild.run_cycle(NOW + 2 * MS) == TRACK_SENT and rebuild.hand_back == HAND_BACK_NOTHING
    assert rig.received()[0].consumption_term_offset == WINDOW // 4 + 32
    # the interval, less the slack: due, and Python's (its count of interval status messages)
    rebuild.timer_slack_ns = 50 * MS
    assert rebuild.run_cycle(NOW + 2 * MS + SM_INTERVAL - 60 * MS) == 0 and rebuild.hand_back == HAND_BACK_NOTHING
    assert rebuild.run_cycle(NOW + 2 * MS + SM_INTERVAL - 50 * MS) == 0 and rebuild.hand_back == HAND_BACK_STATUS
    # disarmed with something to scan: the whole of it is Python's, nothing changed here
    rebuild.disarm()
    reader.set(WINDOW // 2 + 64)
    assert rebuild.run_cycle(NOW + 3 * MS) == 0 and rebuild.hand_back == HAND_BACK_TRACK
    assert rebuild.tracked_min_sub == WINDOW // 4 + 32 and rebuild.disarms >= 1
    # a resting subscriber holds nothing back: no positions, no scan
    rebuild.set_positions([])
    assert rebuild.run_cycle(NOW + 3 * MS) == 0 and rebuild.hand_back == HAND_BACK_NOTHING
    # lingering: no scan, but its pending status message is still Python's to send; done: nothing at all
    rebuild.set_positions([reader])
    rebuild.sm_pending = True
    rebuild.lifecycle = LIFECYCLE_LINGER
    assert rebuild.run_cycle(NOW + 4 * MS) == 0 and rebuild.hand_back == HAND_BACK_STATUS
    rebuild.lifecycle = LIFECYCLE_DONE
    assert rebuild.run_cycle(NOW + 4 * MS) == 0 and rebuild.hand_back == HAND_BACK_NOTHING
    # rejected (error frames) or a failed send to raise: Python's
    rebuild.rejected = True
    assert rebuild.run_cycle(NOW + 5 * MS) == 0 and rebuild.hand_back == HAND_BACK_TRACK
    with pytest.raises(TypeError):
        rebuild.set_positions([object()])
    reader.close()
