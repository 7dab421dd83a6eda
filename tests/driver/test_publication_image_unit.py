# SPDX-License-Identifier: Apache-2.0
"""PublicationImage without sockets or threads: datagrams inserted directly, status messages and NAKs read back
from a recording transport under a ReceiveChannelEndpoint, time from a manual clock. Out-of-order rebuild, the
status message window and its scheduling, one NAK per gap per retry delay, gap fill when unreliable, overruns and
end of stream (aeron_publication_image.c)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from aeron._core import counters as ctr
from aeron._core import frames as f
from aeron.driver import publication_image as pi
from tests.driver.fakes import (
    MS, PUBLISHER, TERM_LENGTH, Counters, CountingScans, FakeTransport, ManualClock, SubscriberLink, data_frame,
    publication_image, receive_endpoint,
)


@pytest.fixture
def rig(tmp_path):
    counters = Counters()
    clock = ManualClock()
    transport = FakeTransport()
    endpoint = receive_endpoint(counters, transport, on_setup=lambda *args: None)
    image, subscriber = publication_image(tmp_path, counters, endpoint, clock)
    yield counters, clock, transport, endpoint, image, subscriber
    image.close()


def _insert(image, clock, term_offset, payload, flags=f.UNFRAGMENTED):
    frame = data_frame(term_offset, payload, flags=flags)
    return image.insert_packet(frame, len(frame), 100, term_offset, False, flags, PUBLISHER, clock())


def _sent(transport, frame_type):
    return [(f.decode_frame(data), address) for data, address in transport.sent
            if f.validate_frame(data) == frame_type]


def test_out_of_order_frames_are_rebuilt_in_place(rig):
    counters, clock, transport, endpoint, image, subscriber = rig
    frames = [data_frame(64 * n, bytes([65 + n]) * 32) for n in range(3)]
    assert _insert(image, clock, 64, b"B" * 32) == 64
    assert image.rcv_hwm.get() == 128
    image.track_rebuild(clock())
    assert image.rcv_pos.get() == 0                                     # frame 0 is missing
    _insert(image, clock, 128, b"C" * 32)
    _insert(image, clock, 0, b"A" * 32)
    image.track_rebuild(clock())
    assert image.rcv_pos.get() == 192 and image.rcv_hwm.get() == 192
    assert image.terms[0].get_bytes(0, 192) == b"".join(frames)


def test_the_rebuild_scan_runs_again_only_when_something_it_depends_on_moved(rig, monkeypatch):
    counters, clock, transport, endpoint, image, subscriber = rig
    counting = CountingScans(image.loss_detector)
    monkeypatch.setattr(image, "loss_detector", counting)
    scans = counting.calls
    _insert(image, clock, 64, b"B" * 32)
    image.track_rebuild(clock())
    image.track_rebuild(clock())
    image.track_rebuild(clock())
    assert len(scans) == 1                        # nothing new: the same decision, not scanned again
    _insert(image, clock, 0, b"A" * 32)           # fills the gap: the hwm stays, the same clock time
    image.track_rebuild(clock())
    assert len(scans) == 2 and image.rcv_pos.get() == 128
    clock.advance(MS)                             # a NAK timer or a subscriber moving also brings it back
    subscriber.set_ordered(64)
    image.track_rebuild(clock())
    assert len(scans) == 3


def test_the_first_status_message_goes_at_once_with_the_receiver_window(rig):
    counters, clock, transport, endpoint, image, subscriber = rig
    assert image.send_pending_status_message(clock()) == 1
    [(sm, address)] = _sent(transport, f.HDR_TYPE_SM)
    assert address == PUBLISHER
    assert (sm.session_id, sm.stream_id, sm.consumption_term_id, sm.consumption_term_offset, sm.receiver_window,
            sm.receiver_id, sm.group_tag, sm.flags) == (7, 1001, 100, 0, TERM_LENGTH // 2, endpoint.receiver_id,
                                                        None, 0)
    assert counters[ctr.STATUS_MESSAGES_SENT] == 1
    assert image.send_pending_status_message(clock()) == 0             # nothing new, timeout not reached
    clock.advance(201 * MS)
    assert image.send_pending_status_message(clock()) == 1             # the keepalive SM


def test_a_status_message_follows_the_subscriber_a_quarter_window_on(rig):
    counters, clock, transport, endpoint, image, subscriber = rig
    image.send_pending_status_message(clock())
    payload = b"p" * (1408 - 32)
    for n in range(7):                                                   # 7 x 1408 = 9856 > window / 4
        _insert(image, clock, 1408 * n, payload)
    image.track_rebuild(clock())
    assert image.rcv_pos.get() == 9856
    assert image.send_pending_status_message(clock()) == 0             # the subscriber has not moved
    subscriber.set(4096)
    image.track_rebuild(clock())
    assert image.send_pending_status_message(clock()) == 0             # less than a quarter window
    subscriber.set(9856)
    assert image.track_rebuild(clock()) == 1
    assert image.send_pending_status_message(clock()) == 1
    sm = _sent(transport, f.HDR_TYPE_SM)[-1][0]
    assert (sm.consumption_term_id, sm.consumption_term_offset, sm.receiver_window) == (100, 9856, TERM_LENGTH // 2)


def test_a_group_tag_rides_on_every_status_message(tmp_path):
    counters, clock, transport = Counters(), ManualClock(), FakeTransport()
    endpoint = receive_endpoint(counters, transport, lambda *args: None, group_tag=77)
    image, _ = publication_image(tmp_path, counters, endpoint, clock)
    image.send_pending_status_message(clock())
    [(sm, _)] = _sent(transport, f.HDR_TYPE_SM)
    assert sm.frame_length == f.SM_WITH_GROUP_TAG_LENGTH and sm.group_tag == 77
    image.close()


def test_a_gap_is_nakked_once_per_retry_delay(rig):
    counters, clock, transport, endpoint, image, subscriber = rig           # NAK delay 1 ms, retry 10 ms
    _insert(image, clock, 64, b"B" * 32)
    image.track_rebuild(clock())
    assert _sent(transport, f.HDR_TYPE_NAK) == []                       # the delay has not passed
    clock.advance(1 * MS)
    image.track_rebuild(clock())
    [(nak, address)] = _sent(transport, f.HDR_TYPE_NAK)
    assert (nak.session_id, nak.stream_id, nak.term_id, nak.term_offset, nak.length, address) == (
        7, 1001, 100, 0, 64, PUBLISHER)
    for _ in range(9):
        clock.advance(1 * MS)
        image.track_rebuild(clock())
    assert len(_sent(transport, f.HDR_TYPE_NAK)) == 1
    assert (image.naks_sent.get(), counters[ctr.NAK_MESSAGES_SENT]) == (1, 1)
    clock.advance(1 * MS)
    image.track_rebuild(clock())
    assert len(_sent(transport, f.HDR_TYPE_NAK)) == 2                  # the retry
    _insert(image, clock, 0, b"A" * 32)                                 # the retransmit arrives
    for _ in range(3):
        clock.advance(20 * MS)
        image.track_rebuild(clock())
    assert len(_sent(transport, f.HDR_TYPE_NAK)) == 2 and image.rcv_pos.get() == 128


def test_an_unreliable_image_fills_the_gap_instead_of_nakking(tmp_path):
    counters, clock, transport = Counters(), ManualClock(), FakeTransport()
    endpoint = receive_endpoint(counters, transport, lambda *args: None)
    image, _ = publication_image(tmp_path, counters, endpoint, clock, is_reliable=False, nak_delay_ns=0)
    _insert(image, clock, 64, b"B" * 32)
    image.track_rebuild(clock())
    assert counters[ctr.LOSS_GAP_FILLS] == 1
    image.track_rebuild(clock())
    assert image.rcv_pos.get() == 128 and _sent(transport, f.HDR_TYPE_NAK) == []
    assert image.terms[0].get_i32(0) == 64 and image.terms[0].get_i16(6) == f.HDR_TYPE_PAD
    image.close()


def test_data_beyond_half_a_term_past_the_last_status_message_is_an_overrun(rig):
    counters, clock, transport, endpoint, image, subscriber = rig
    assert _insert(image, clock, TERM_LENGTH // 2, b"x" * 32) == 0
    assert counters[ctr.FLOW_CONTROL_OVER_RUNS] == 1 and image.rcv_hwm.get() == 0


def test_an_end_of_stream_heartbeat_ends_the_stream_at_its_position(rig):
    counters, clock, transport, endpoint, image, subscriber = rig
    _insert(image, clock, 0, b"A" * 32)
    heartbeat = bytearray(32)
    f.encode_heartbeat(heartbeat, 0, 7, 1001, 100, 64, f.UNFRAGMENTED | f.EOS_FLAG)
    assert image.insert_packet(heartbeat, 32, 100, 64, True, f.UNFRAGMENTED | f.EOS_FLAG, PUBLISHER, clock()) == 0
    assert image.is_end_of_stream and image.log.end_of_stream_position == 64
    assert counters[ctr.HEARTBEATS_RECEIVED] == 1 and image.rcv_hwm.get() == 64


def test_a_draining_image_says_end_of_stream_in_its_status_messages(rig):
    counters, clock, transport, endpoint, image, subscriber = rig
    image.state = pi.DRAINING                                           # the conductor's lifecycle step
    image.send_pending_status_message(clock())
    assert _sent(transport, f.HDR_TYPE_SM)[-1][0].flags == f.SM_EOS_FLAG


class _TetheredLink(SubscriberLink):
    """A tethered subscriber, as the conductor's lifecycle step looks at it."""

    subscription = SimpleNamespace(tether=True)

    def update_time(self, now_ns: int) -> None:
        pass


def test_liveness_is_judged_by_what_the_receiver_saw(rig):
    """After the whole driver was held up past the liveness timeout, the conductor may look before the receiver
    has read what waited in the socket: the image stays until the receiver has polled and found nothing for the
    liveness timeout."""
    counters, clock, transport, endpoint, image, subscriber = rig
    image.subscribers[1] = _TetheredLink(subscriber)
    endpoint.poll(clock())
    clock.advance(image.liveness_timeout_ns + 1 * MS)                  # nothing ran meanwhile
    image.on_time_event(clock(), clock() // 1_000_000, None)
    assert image.state == pi.ACTIVE
    endpoint.poll(clock())                                              # the receiver reads: a heartbeat waited
    frame = data_frame(0, b"")
    image.insert_packet(frame, len(frame), 100, 0, True, f.UNFRAGMENTED, PUBLISHER, clock())
    image.on_time_event(clock(), clock() // 1_000_000, None)
    assert image.state == pi.ACTIVE
    clock.advance(image.liveness_timeout_ns + 1 * MS)
    endpoint.poll(clock())                                              # polled, and nothing came
    image.on_time_event(clock(), clock() // 1_000_000, None)
    assert image.state == pi.DRAINING


def test_a_parking_drivers_status_message_may_go_early_by_its_slack_but_its_deadline_stays(rig):
    # a wakeup driver thread sends a status message that is nearly due when it is awake anyway
    # (Receiver.timer_slack_ns) and parks until the interval's end: never later than the 200 ms
    counters, clock, transport, endpoint, image, subscriber = rig
    assert image.send_pending_status_message(clock()) == 1
    last = clock()
    image.timer_slack_ns = 50 * MS
    assert image.next_deadline_ns(clock(), clock() + 1000 * MS) == last + pi.SM_TIMEOUT_NS
    clock.advance(140 * MS)
    assert image.send_pending_status_message(clock()) == 0             # 140 ms on: not within the slack
    assert image.send_pending_status_message(clock(), 100 * MS) == 1   # a wider slack asked for (Receiver)
    clock.advance(160 * MS)
    assert image.send_pending_status_message(clock()) == 1             # 160 ms on: within the slack
    assert counters[ctr.STATUS_MESSAGES_SENT] == 3


def test_a_new_subscriber_joins_where_the_slowest_working_one_is_even_past_the_receiver_position(rig):
    """The receiver position moves in the receiver's whole cycles; a subscriber that has read the data before one
    ran is past it, and a second subscription must start where the first is (PubAndSubTest's image sharing)."""
    counters, clock, transport, endpoint, image, subscriber = rig
    _insert(image, clock, 0, b"A" * 32)
    _insert(image, clock, 64, b"B" * 32)
    image.track_rebuild(clock())
    assert image.rcv_pos.get() == 128
    _insert(image, clock, 128, b"C" * 32)               # in the log, before the next rebuild scan
    subscriber.set(192)                                  # ... and read
    assert image.subscriber_join_position() == 192
    _, slower = counters.allocate()
    slower.set(64)
    image.subscribers[2] = SubscriberLink(slower)
    assert image.subscriber_join_position() == 64        # with the slowest working subscriber
    resting = [SimpleNamespace(position=link.position, state=pi.TETHER_RESTING) for link in image.subscribers.values()]
    image.subscribers = dict(enumerate(resting))
    assert image.subscriber_join_position() == 128       # none working: the receiver position


def test_the_loss_report_hears_of_a_gap_when_it_is_nakked_and_a_full_one_is_given_up(rig):
    from aeron._core.atomic_buffer import AtomicBuffer
    from aeron._core.loss_report import LossReport, read_loss_report
    counters, clock, transport, endpoint, image, subscriber = rig           # NAK delay 1 ms, retry 10 ms
    image.loss_report = report = LossReport(AtomicBuffer(bytearray(4096)))
    _insert(image, clock, 64, b"B" * 32)
    image.track_rebuild(clock())
    assert read_loss_report(report.buffer) == []                        # found, not yet NAKed
    clock.advance(1 * MS)
    image.track_rebuild(clock())
    [entry] = read_loss_report(report.buffer)
    assert (entry.observation_count, entry.total_bytes_lost) == (1, 64)
    clock.advance(10 * MS)
    image.track_rebuild(clock())                                        # the retry: not a loss again
    assert len(_sent(transport, f.HDR_TYPE_NAK)) == 2
    assert read_loss_report(report.buffer)[0].observation_count == 1
    # a report with no room for the image's entry is given up, as Aeron; the NAKs go on
    image.loss_report, image.loss_report_entry = LossReport(AtomicBuffer(bytearray(64))), -1
    image.loss_detector.report_term_id = 0                              # as if never reported
    clock.advance(10 * MS)
    image.track_rebuild(clock())
    assert image.loss_report is None and len(_sent(transport, f.HDR_TYPE_NAK)) == 3


def test_the_receivers_compiled_cycle_follows_the_subscribers_and_the_lifecycle(rig):
    """What the receiver's one compiled call per cycle reads for the image (RebuildPass.cycle): the subscribers that
    hold it back, as they are linked, unlinked, replaced or rest, and the image's state."""
    from aeron._core.rebuild_pass import HAND_BACK_NOTHING, HAND_BACK_TRACK, LIFECYCLE_DRAINING
    counters, clock, transport, endpoint, image, subscriber = rig
    rebuild = image.rebuild
    image.track_rebuild(clock())
    image.send_pending_status_message(clock())
    assert rebuild.run_cycle(clock()) == 0 and rebuild.hand_back == HAND_BACK_NOTHING
    _, slower = counters.allocate()
    slower.set(-64)                                     # a new subscriber below the others: a move to track
    image.subscribers[2] = SubscriberLink(slower)
    assert rebuild.run_cycle(clock()) == 0 and rebuild.hand_back == HAND_BACK_TRACK
    image.subscribers.pop(2)
    assert rebuild.run_cycle(clock()) == 0 and rebuild.hand_back == HAND_BACK_NOTHING
    image.subscribers = {3: SimpleNamespace(position=slower, state=pi.TETHER_ACTIVE)}
    assert rebuild.run_cycle(clock()) == 0 and rebuild.hand_back == HAND_BACK_TRACK
    image.subscribers = {3: SimpleNamespace(position=slower, state=pi.TETHER_RESTING)}
    assert rebuild.run_cycle(clock()) == 0 and rebuild.hand_back == HAND_BACK_NOTHING     # holds nothing back
    image.state = pi.DRAINING
    assert rebuild.lifecycle == LIFECYCLE_DRAINING and rebuild.run_cycle(clock()) == 0
