# SPDX-License-Identifier: Apache-2.0
"""Receiver without threads or sockets: its ReceiverProxy commands run one per duty cycle, SETUPs become
DriverConductorProxy requests, images added that way are fed and send status messages, and what it lets go of
goes back to the conductor (aeron_driver_receiver.c)."""
from __future__ import annotations

import pytest

from aeron._core import counters as ctr
from aeron._core import frames as f
from aeron.driver import receive_channel_endpoint as rce
from aeron.driver.publication_image import SM_TIMEOUT_NS
from tests.driver.fakes import (
    MS, PUBLISHER, Agents, Counters, FakeTransport, ManualClock, data_frame, publication_image, receive_endpoint,
    setup_frame,
)


@pytest.fixture
def rig():
    counters, clock, transport = Counters(), ManualClock(), FakeTransport()
    agents = Agents(counters, clock)
    endpoint = receive_endpoint(counters, transport, agents.conductor_proxy.create_publication_image)
    return counters, clock, transport, agents, endpoint


def _added_image(rig, tmp_path):
    """The endpoint, a subscription to stream 1001 and an image of it, as the conductor adds them (commands queued
    for the receiver's next cycles): the image and its subscriber's position."""
    counters, clock, _, agents, endpoint = rig
    agents.receiver_proxy.add_endpoint(endpoint)
    agents.receiver_proxy.add_subscription(endpoint, 1001, None)
    image, subscriber = publication_image(tmp_path, counters, endpoint, clock)
    agents.receiver_proxy.add_publication_image(image)
    return image, subscriber


def _cycles(agents, count):
    for _ in range(count):
        agents.receiver.do_work()


def test_proxy_commands_run_one_per_duty_cycle_and_setups_go_to_the_conductor(rig):
    _counters, _clock, transport, agents, endpoint = rig
    agents.receiver_proxy.add_endpoint(endpoint)
    agents.receiver_proxy.add_subscription(endpoint, 1001, None)
    transport.deliver(setup_frame(session_id=9))
    agents.receiver.do_work()
    assert agents.receiver.endpoints == [endpoint] and endpoint.streams == {}
    assert len(agents.conductor_queue) == 0                               # polled before the interest existed
    agents.receiver.do_work()
    transport.deliver(setup_frame(session_id=9))
    agents.receiver.do_work()
    assert agents.run_conductor_commands() == 1
    [(handed_endpoint, setup, control_address, source)] = agents.image_requests
    assert handed_endpoint is endpoint and setup["session_id"] == 9 and control_address == source == PUBLISHER


def test_an_added_image_is_fed_and_sends_status_messages(rig, tmp_path):
    _counters, _clock, transport, agents, endpoint = rig
    image, _subscriber = _added_image(rig, tmp_path)
    _cycles(agents, 3)
    assert agents.receiver.images == [image] and endpoint.images == [image]
    [(sm, address)] = [(f.decode_frame(d), a) for d, a in transport.sent]
    assert sm.type == f.HDR_TYPE_SM and address == PUBLISHER
    transport.deliver(data_frame(0, b"a" * 32))
    agents.receiver.do_work()
    assert image.rcv_pos.get() == 64                                      # inserted and tracked in one cycle
    image.close()


def test_removed_images_and_endpoints_go_back_to_the_conductor(rig, tmp_path):
    _counters, clock, _transport, agents, endpoint = rig
    image, _ = _added_image(rig, tmp_path)
    _cycles(agents, 3)
    agents.receiver_proxy.remove_publication_image(image, clock(), False)
    agents.receiver_proxy.remove_subscription(endpoint, 1001, None)
    agents.receiver_proxy.remove_endpoint(endpoint)
    _cycles(agents, 3)
    assert agents.receiver.images == [] and endpoint.images == [] and agents.receiver.endpoints == []
    assert not image.receiver_released and not endpoint.receiver_released
    assert agents.run_conductor_commands() == 2
    assert image.receiver_released and endpoint.receiver_released
    image.close()


def test_a_removed_image_without_rejoin_cools_its_session_down(rig, tmp_path):
    _counters, clock, _transport, agents, endpoint = rig
    image, _ = _added_image(rig, tmp_path)
    agents.receiver_proxy.remove_publication_image(image, clock(), False)
    _cycles(agents, 4)
    assert endpoint.streams[1001].sessions[7] == (rce.COOL_DOWN, clock())
    image.close()


def test_a_failed_image_is_reported_back_to_the_endpoint(rig):
    _counters, clock, transport, agents, endpoint = rig
    agents.receiver_proxy.add_endpoint(endpoint)
    agents.receiver_proxy.add_subscription(endpoint, 1001, None)
    _cycles(agents, 2)
    transport.deliver(setup_frame(session_id=9))
    agents.receiver.do_work()
    assert endpoint.streams[1001].sessions[9][0] == rce.INIT_IN_PROGRESS
    agents.receiver_proxy.image_init_failed(endpoint, 1001, 9, clock())
    agents.receiver.do_work()
    assert endpoint.streams[1001].sessions[9] == (rce.COOL_DOWN, clock())
    clock.advance(1_001 * MS)
    transport.deliver(setup_frame(session_id=9))
    agents.receiver.do_work()
    assert agents.run_conductor_commands() == 2                           # asked again after the cool-down


def test_a_parked_receivers_status_messages_come_to_share_a_wake_up_and_stay_within_200_ms(rig, tmp_path):
    counters, clock, transport, agents, endpoint = rig
    receiver = agents.receiver
    receiver.timer_slack_ns = 50 * MS                       # what driver_wakeup gives a wakeup thread's receiver
    agents.receiver_proxy.add_endpoint(endpoint)
    agents.receiver_proxy.add_subscription(endpoint, 1001, None)
    images = []
    for session_id in (7, 8):                               # added 100 ms apart: status messages out of phase
        image, _ = publication_image(tmp_path, counters, endpoint, clock, session_id=session_id,
                                     name=f"image{session_id}")
        images.append(image)
        agents.receiver_proxy.add_publication_image(image)
        _cycles(agents, 3)                                  # one proxy command per duty cycle
        assert image.timer_slack_ns == 50 * MS
        clock.advance(100 * MS)
    start, seen = clock(), len(transport.sent)
    cycles = 0
    times = {7: [], 8: []}
    while clock() < start + 2000 * MS:                      # parked: a duty cycle when the next timer is due
        clock.advance(max(0, receiver.time_to_deadline_ns(start + 2000 * MS - clock())))
        receiver.do_work()
        cycles += 1
        for datagram, _ in transport.sent[seen:]:
            frame = f.decode_frame(datagram)
            assert frame.type == f.HDR_TYPE_SM
            times[frame.session_id].append(clock())
        seen = len(transport.sent)
    for sent in times.values():
        gaps = [b - a for a, b in zip(sent, sent[1:])]
        assert all(100 * MS <= gap <= 200 * MS for gap in gaps), gaps          # early, never late
        assert len(sent) >= 10
    assert times[7][-5:] == times[8][-5:]                   # one wake-up for both
    assert cycles <= 12                                     # about 5 a second, not 10
    for image in images:
        image.close()


def test_the_endpoints_timers_run_when_due_rather_than_every_cycle_and_still_fire(rig):
    """SETUP elicitation and the sweep of expired session state are looked at on their deadline (run_timers, at
    most every sweep interval) instead of in every duty cycle; a pending SETUP request still expires on time."""
    _counters, clock, transport, agents, endpoint = rig
    calls = []
    run_timers = endpoint.run_timers
    endpoint.run_timers = lambda now_ns: calls.append(now_ns) or run_timers(now_ns)
    agents.receiver_proxy.add_endpoint(endpoint)
    agents.receiver_proxy.add_subscription(endpoint, 1001, None)
    _cycles(agents, 2)
    transport.deliver(data_frame(0, b"a" * 8, session_id=9))             # an unknown session: asked for a SETUP
    agents.receiver.do_work()
    assert endpoint.streams[1001].sessions[9][0] == rce.PENDING_SETUP
    calls.clear()
    for _ in range(150):
        clock.advance(1 * MS)
        agents.receiver.do_work()
    assert 1 <= len(calls) <= 2                                           # 150 cycles, 1.5 sweep intervals
    clock.advance(rce.PENDING_SETUP_TIMEOUT_NS)
    _cycles(agents, 2)                                                    # due: swept in the next cycle
    assert 9 not in endpoint.streams[1001].sessions


def test_a_new_subscription_makes_an_explicit_control_endpoint_announce_itself_at_once(tmp_path):
    counters, clock, transport = Counters(), ManualClock(), FakeTransport()
    agents = Agents(counters, clock)
    endpoint = receive_endpoint(counters, transport, agents.conductor_proxy.create_publication_image,
                                channel="aeron:udp?endpoint=127.0.0.1:40123|control=127.0.0.1:40200")
    agents.receiver_proxy.add_endpoint(endpoint)
    _cycles(agents, 5)                                                    # timers looked at: next due in 100 ms
    assert transport.sent == []
    agents.receiver_proxy.add_subscription(endpoint, 1001, None)
    agents.receiver.do_work()                                             # not 100 ms later
    [(request, address)] = transport.sent
    assert address == ("127.0.0.1", 40200) and f.decode_frame(request).flags == f.SM_SEND_SETUP_FLAG


class _SteppingClock(ManualClock):
    """Each read moves time on by ``step_ns`` (a duty cycle takes its time)."""

    def __init__(self) -> None:
        super().__init__()
        self.step_ns = 0

    def __call__(self) -> int:
        self.now_ns += self.step_ns
        return self.now_ns


def test_the_max_cycle_time_counters_keep_the_longest_cycle():
    """The agents call propose_max only for a cycle longer than their longest so far: the counters still end on the
    longest, and a cycle over the threshold is counted every time."""
    counters, clock = Counters(), _SteppingClock()
    agents = Agents(counters, clock)
    for step_ns in (5_000, 40_000, 7_000, 200_000_000, 3_000, 150_000_000):
        clock.step_ns = step_ns
        agents.receiver.do_work()
        agents.sender.do_work()
    assert counters[ctr.RECEIVER_MAX_CYCLE_TIME] == counters[ctr.SENDER_MAX_CYCLE_TIME] == 200_000_000
    assert counters[ctr.RECEIVER_CYCLE_TIME_THRESHOLD_EXCEEDED] == 2
    assert counters[ctr.SENDER_CYCLE_TIME_THRESHOLD_EXCEEDED] == 2


def test_the_data_mask_is_taken_only_after_data_went_into_an_image(rig, tmp_path):
    _counters, _clock, transport, agents, endpoint = rig
    signalled = []
    agents.receiver.signal_data = signalled.append
    image, _ = _added_image(rig, tmp_path)
    _cycles(agents, 3)
    assert not endpoint.data_pending and agents.receiver.data_mask == 0 and signalled == []
    transport.deliver(data_frame(0, b"a" * 32))
    agents.receiver.do_work()
    assert agents.receiver.data_mask != 0 and signalled == [agents.receiver.data_mask]
    assert not endpoint.data_pending                                      # taken
    agents.receiver.do_work()
    assert agents.receiver.data_mask == 0 and len(signalled) == 1
    image.close()


def test_what_a_probe_watches_the_readers_past_the_next_status_message_and_the_images_timers(rig, tmp_path):
    """Receiver.probe_watch (driver_wakeup probes): the image's subscriber positions as a group whose threshold is
    where the next status message falls due, the earliest of the images' timers, or None while a status message is
    pending or a rejected image sends error frames."""
    counters, clock, transport, agents, endpoint = rig
    agents.receiver_proxy.add_endpoint(endpoint)
    agents.receiver_proxy.add_subscription(endpoint, 1001, None)
    assert agents.receiver.probe_watch() == ([], [], 0, True)
    image, subscriber = publication_image(tmp_path, counters, endpoint, clock)
    agents.receiver_proxy.add_publication_image(image)
    _cycles(agents, 3)
    # a fake socket: no compiled rebuild pass, so the group alone, the image's timers in the deadline, and a gap
    # that a receive pass opens not covered
    positions, [(threshold, group)], deadline, covered = agents.receiver.probe_watch()
    assert not covered and not image.rebuild.armed
    assert positions == [] and [counter.counter_id for counter in group] == [subscriber.counter_id]
    assert threshold == image.next_sm_position + (image.next_sm_window >> 2) + 1
    assert deadline == image.time_of_last_sm_ns + SM_TIMEOUT_NS           # the status message's interval
    image.sm_pending = True
    assert agents.receiver.probe_watch() is None
    agents.receiver.do_work()                                             # sent
    assert agents.receiver.probe_watch() is not None
    transport.deliver(data_frame(64, b"a" * 32))                          # a gap before it
    agents.receiver.do_work()
    assert image.loss_detector.gap_open
    assert agents.receiver.probe_watch()[2] == image.loss_detector.expiry_ns    # its NAK's timer comes first
    transport.deliver(data_frame(0, b"a" * 32))                           # filled
    agents.receiver.do_work()
    assert not image.loss_detector.gap_open
    assert agents.receiver.probe_watch()[2] == image.time_of_last_sm_ns + SM_TIMEOUT_NS
    image._static_window = False                                          # a window that may change at any move
    assert agents.receiver.probe_watch()[:2] == ([subscriber], [])
    image.reject("test")
    assert agents.receiver.probe_watch() is None
    image.close()


def test_the_sockets_a_park_waits_on_follow_the_endpoints_added_and_removed(rig):
    _counters, _clock, transport, agents, endpoint = rig
    transport.fileno = lambda: 42                  # the test double has no socket
    assert agents.receiver.wait_fds() == []
    agents.receiver_proxy.add_endpoint(endpoint)
    agents.receiver.do_work()
    fds = agents.receiver.wait_fds()
    assert fds == [42]
    agents.receiver.do_work()                      # no command: the same list, not built again
    assert agents.receiver.wait_fds() is fds
    agents.receiver_proxy.remove_endpoint(endpoint)
    agents.receiver.do_work()
    assert agents.receiver.wait_fds() == []


def test_images_are_settled_once_their_subscribers_read_up_to_the_high_water_mark(rig, tmp_path):
    _counters, _clock, transport, agents, _endpoint = rig
    image, subscriber = _added_image(rig, tmp_path)
    _cycles(agents, 3)
    assert agents.receiver.images_settled()                     # nothing received yet
    transport.deliver(data_frame(0, b"a" * 32))
    agents.receiver.do_work()
    assert image.rcv_hwm.get() == 64 and not agents.receiver.images_settled()   # a read owes a status message
    subscriber.set(64)
    assert agents.receiver.images_settled()
