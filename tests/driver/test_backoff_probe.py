# SPDX-License-Identifier: Apache-2.0
"""Backoff's spin and yield phases on a driver thread are compiled probes, not whole duty cycles
(SignallingAgent.probe_spins): the steps after a whole cycle run the agents' duty cycle only when a probe finds
something to do (data offered to a send pass, a datagram on a socket, a client command, a reader past the next status
message, an image's timer), and whole cycles come back once the probes are used up or the strategy parks; with the
thread's own backoff strategy the probes run send and receive passes themselves. Driven step by step in INVOKER
mode."""
from __future__ import annotations

import contextlib
import select
import socket
import threading
import time

import pytest

from aeron._core.frames import HDR_TYPE_DATA
from aeron.client import Aeron
from aeron.client import Context as ClientContext
from aeron.common.agent import PARKING, SPINNING, BackoffIdleStrategy
from aeron.driver import Context, MediaDriver, ThreadingMode
from aeron.driver.driver_common import ACTIVE, DRAINING
from tests.driver.fakes import CountingScans, nak, setup_frame, status_message

# the rig's bound on passes alone (SignallingAgent.send_passes_per_cycle), with no time bound to race on a loaded machine
PASSES = 8


class CountingAgent:
    """Counts the whole duty cycles of the agent it wraps."""

    def __init__(self, agent):
        self.agent, self.cycles = agent, 0
        self.role_name = agent.role_name

    def do_work(self):
        self.cycles += 1
        return self.agent.do_work()

    def on_start(self):
        self.agent.on_start()

    def on_close(self):
        self.agent.on_close()


@pytest.fixture
def rig(shm_dir, request):
    """An INVOKER driver with a unicast publication whose endpoint nobody listens on; yields (driver, signalling
    agent, counting agent, publication, the publication's destination address)."""
    param = getattr(request, "param", None)
    # "batch1": one datagram per publication per send pass, so that a few offers make several batches
    driver = MediaDriver.launch(Context(environ={}, aeron_dir=str(shm_dir / "d"), threading_mode=ThreadingMode.INVOKER,
                                        counters_buffer_length=1 << 20,
                                        # batch1's runs of passes stay within a trip gain (its window / 8) of the
                                        # publisher's limit, which would end them with a whole cycle
                                        term_buffer_length=(1 << 20) if param == "batch1" else 65536,
                                        network_publication_max_messages_per_send=1 if param == "batch1" else 16,
                                        client_liveness_timeout_ns=120_000_000_000,
                                        publication_unblock_timeout_ns=180_000_000_000))
    stop = threading.Event()

    def invoke():
        while not stop.is_set():
            driver.do_work()
            time.sleep(0.0005)
    thread = threading.Thread(target=invoke, daemon=True)
    thread.start()
    client = None
    sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sink.bind(("127.0.0.1", 0))
        # no keepalive during a test: a client command makes a probe run the duty cycle, which the tests count
        client = Aeron.connect(ClientContext(aeron_dir=driver.aeron_dir, keepalive_interval_ns=60_000_000_000))
        publication = client.add_publication(f"aeron:udp?endpoint=127.0.0.1:{sink.getsockname()[1]}", 1001)
        if param in ("receiving", "image"):          # a receive endpoint on this driver's thread
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as free:
                free.bind(("127.0.0.1", 0))
                port = free.getsockname()[1]
            subscription = client.add_subscription(f"aeron:udp?endpoint=127.0.0.1:{port}", 1002)
            request.node.receive_address = ("127.0.0.1", port)
            deadline = time.monotonic() + 5
            while not driver.conductor.receiver.endpoints and time.monotonic() < deadline:
                time.sleep(0.001)
            if param == "image":                     # ... and an image on it, from a publication of this driver
                request.node.image_publication = client.add_publication(f"aeron:udp?endpoint=127.0.0.1:{port}", 1002)
                request.node.image_subscription = subscription
                while not subscription.images and time.monotonic() < deadline:
                    time.sleep(0.001)
                assert subscription.images
        stop.set()
        thread.join(5)
        signalling = driver._invoker.agent
        counting = signalling.agent = CountingAgent(signalling.agent)
        signalling.send_passes_per_cycle = PASSES
        signalling.full_cycle_defer_ns = 60_000_000_000
        yield driver, signalling, counting, publication, sink
    finally:
        stop.set()
        thread.join(5)
        if client is not None:
            client.close()
        driver.close()
        sink.close()


def _until_idle(driver, limit=10_000):
    for _ in range(limit):
        if driver.do_work() == 0:
            return
    raise AssertionError("the driver never went idle")


def _until_a_cycle(driver, counting, cycles):
    """Steps the driver until it has run a whole duty cycle after ``cycles`` (loopback delivery may lag on a loaded
    machine), at most 5 s."""
    deadline = time.monotonic() + 5
    while counting.cycles == cycles and time.monotonic() < deadline:
        driver.do_work()


def _probing_when_idle(driver, signalling, counting, spins):
    """Arms ``spins`` probes as after a cycle with work, runs the driver until idle; the duty cycles so far."""
    signalling.probe_spins(spins)
    signalling._armed = True
    _until_idle(driver)
    return counting.cycles


def test_probes_stand_in_for_whole_cycles_until_used_up(rig):
    driver, signalling, counting, _, _ = rig
    cycles = _probing_when_idle(driver, signalling, counting, 4)
    for _ in range(4):                      # nothing to do: four probes, no duty cycle
        assert driver.do_work() == 0
    assert counting.cycles == cycles
    assert driver.do_work() == 0            # used up: whole cycles again, and they do not re-arm without work
    assert driver.do_work() == 0
    assert counting.cycles == cycles + 2


def _endpoint_address(driver):
    fd = driver.conductor.sender.endpoints[0].transport.fileno()
    with socket.fromfd(fd, socket.AF_INET, socket.SOCK_DGRAM) as sock:       # a duplicate, to read its address
        return sock.getsockname()


def test_a_probe_that_finds_a_datagram_runs_the_cycle(rig):
    driver, signalling, counting, _, sink = rig
    cycles = _probing_when_idle(driver, signalling, counting, 8)
    assert driver.do_work() == 0 and counting.cycles == cycles
    sink.sendto(b"\0" * 8, _endpoint_address(driver))    # a stray datagram where status messages and NAKs arrive
    _until_a_cycle(driver, counting, cycles)
    assert counting.cycles == cycles + 1


def _connected(driver, publication, sink, window=32768):
    # a receiver's status message opens the window (position 0 of the initial term)
    sink.sendto(status_message(session_id=publication.session_id, stream_id=1001,
                               term_id=publication.initial_term_id, window=window), _endpoint_address(driver))
    deadline = time.monotonic() + 5
    while not publication.is_connected and time.monotonic() < deadline:
        driver.do_work()
        time.sleep(0.001)
    assert publication.is_connected
    sink.setblocking(False)
    with contextlib.suppress(BlockingIOError):
        while True:
            sink.recv(65536)                           # the SETUPs sent so far
    sink.setblocking(True)


def _data_frames(sink, count):
    sink.settimeout(5.0)
    frames = [sink.recv(65536) for _ in range(count)]
    assert all(frame[6] == HDR_TYPE_DATA for frame in frames)
    return frames


def test_a_probe_that_finds_offered_data_sends_it_in_a_send_pass_and_the_cycle_follows(rig):
    driver, signalling, counting, publication, sink = rig
    _connected(driver, publication, sink)
    cycles = _probing_when_idle(driver, signalling, counting, 8)
    assert driver.do_work() == 0 and counting.cycles == cycles
    assert publication.offer(b"m" * 100) > 0
    assert driver.do_work() > 0 and counting.cycles == cycles        # the send pass alone
    [frame] = _data_frames(sink, 1)
    assert frame[32:132] == b"m" * 100
    driver.do_work()                        # the stream paused: the rest of the cycle, owed, runs now
    assert counting.cycles == cycles + 1


@pytest.mark.parametrize("rig", ["batch1"], indirect=True)
def test_send_passes_alone_are_bounded_and_a_cycle_that_sent_probes_at_once(rig):
    driver, signalling, counting, publication, sink = rig
    _connected(driver, publication, sink)
    cycles = _probing_when_idle(driver, signalling, counting, 8)
    passes = PASSES
    payload = b"s" * publication.max_payload_length        # one frame fills a datagram: one batch each
    for _ in range(passes + 3):
        assert publication.offer(payload) > 0
    for _ in range(passes):
        assert driver.do_work() > 0
    assert counting.cycles == cycles
    assert driver.do_work() > 0 and counting.cycles == cycles + 1    # then a whole cycle, which sends a batch too
    assert driver.do_work() > 0 and counting.cycles == cycles + 1    # and probes again at once: a send pass
    assert driver.do_work() > 0 and counting.cycles == cycles + 1
    driver.do_work()                                                  # all sent: the owed cycle
    assert counting.cycles == cycles + 2
    assert [len(frame) for frame in _data_frames(sink, passes + 3)] == [32 + len(payload)] * (passes + 3)


def test_a_probe_that_finds_offered_data_and_a_datagram_runs_the_cycle(rig):
    driver, signalling, counting, publication, sink = rig
    _connected(driver, publication, sink)
    cycles = _probing_when_idle(driver, signalling, counting, 8)
    assert publication.offer(b"m" * 100) > 0
    sink.sendto(b"\0" * 8, _endpoint_address(driver))    # a stray datagram where status messages and NAKs arrive
    _until_a_cycle(driver, counting, cycles)
    assert counting.cycles == cycles + 1
    _data_frames(sink, 1)


def test_a_client_command_ends_the_probes(rig):
    driver, signalling, counting, _, _ = rig
    cycles = _probing_when_idle(driver, signalling, counting, 8)
    assert driver.do_work() == 0 and counting.cycles == cycles
    driver.conductor.to_driver.write(0x7FFF_FFF0, b"\0" * 16)       # any record: the conductor must read it
    driver.do_work()
    assert counting.cycles == cycles + 1


def _receive_address(driver):
    fd = driver.conductor.receiver.endpoints[0].transport.fileno()
    with socket.fromfd(fd, socket.AF_INET, socket.SOCK_DGRAM) as sock:
        return sock.getsockname()


@pytest.mark.parametrize("rig", ["receiving"], indirect=True)
def test_a_receiving_thread_probes_and_a_datagram_on_its_receive_socket_runs_the_cycle(rig):
    driver, signalling, counting, _, sink = rig
    assert driver.conductor.receiver.endpoints
    cycles = _probing_when_idle(driver, signalling, counting, 8)
    for _ in range(4):                      # nothing to do: probes, no duty cycle
        assert driver.do_work() == 0
    assert counting.cycles == cycles
    sink.sendto(b"\0" * 8, _receive_address(driver))     # where data arrives
    _until_a_cycle(driver, counting, cycles)
    assert counting.cycles == cycles + 1


@pytest.mark.parametrize("rig", ["image"], indirect=True)
def test_a_reader_that_makes_a_status_message_due_ends_a_receiving_threads_probes(rig):
    # a reader's progress past a quarter of the window makes the image's next status message due: only a whole cycle
    # sends it; less than that schedules nothing, and the probes go on
    driver, signalling, counting, _, _ = rig
    [image] = driver.conductor.receiver.images
    [link] = image.subscribers.values()
    cycles = _probing_when_idle(driver, signalling, counting, 8)
    threshold = image.next_sm_position + (image.next_sm_window >> 2) + 1
    link.position.set_ordered(threshold - 1)
    assert driver.do_work() == 0 and counting.cycles == cycles
    link.position.set_ordered(threshold)
    driver.do_work()
    assert counting.cycles == cycles + 1


@pytest.mark.parametrize("rig", ["image"], indirect=True)
def test_a_window_set_by_congestion_control_ends_a_receiving_threads_probes_at_any_move(rig):
    driver, signalling, counting, _, _ = rig
    [image] = driver.conductor.receiver.images
    [link] = image.subscribers.values()
    image._static_window = False            # as a congestion control whose window may change with any progress
    cycles = _probing_when_idle(driver, signalling, counting, 8)
    link.position.set_ordered(link.position.get() + 32)
    driver.do_work()
    assert counting.cycles == cycles + 1


@pytest.mark.parametrize("rig", ["image"], indirect=True)
def test_a_receiving_threads_probes_end_when_a_naks_timer_comes(rig):
    # a gap's NAK goes when its timer expires, which only a whole cycle's rebuild tracking acts on
    driver, signalling, counting, _, _ = rig
    [image] = driver.conductor.receiver.images
    signalling.probe_spins(4)
    _until_idle(driver)
    cycles = counting.cycles
    loss = image.loss_detector

    def armed_with_a_gap(expiry_ns):
        loss.gap_open = True                # as a scan that found a gap leaves it
        loss.expiry_ns = expiry_ns
        assert signalling._arm_probe()
        signalling._probes_left = 4
    armed_with_a_gap(time.monotonic_ns() + 10_000_000_000)
    assert driver.do_work() == 0 and counting.cycles == cycles
    armed_with_a_gap(time.monotonic_ns() + 1_000_000)
    while time.monotonic_ns() < loss.expiry_ns:
        time.sleep(0.001)
    driver.do_work()                        # it has come: the probe ends, the cycle runs
    assert counting.cycles == cycles + 1
    loss.gap_open = False


def test_the_driver_probes_only_with_backoff(shm_dir):
    for name, probes in (("backoff", True), ("sleep-ns", False), ("wakeup", False)):
        ctx = Context(environ={}, aeron_dir=str(shm_dir / name), threading_mode=ThreadingMode.SHARED,
                      shared_idle_strategy=name, counters_buffer_length=1 << 20)
        with MediaDriver.launch(ctx) as driver:
            runner = driver._runners[0]
            assert (runner.agent._probe_spins > 0) is probes, name
            if probes:
                idle = runner.idle_strategy
                assert type(idle) is BackoffIdleStrategy
                assert runner.agent._probe_spins == idle.max_spins + idle.max_yields
                assert runner.agent._backoff is idle        # its phases run as one compiled call each


class _Steps:
    """A BackoffIdleStrategy stepped by hand after each duty cycle, as AgentRunner would, its yields and parks
    counted instead of done."""

    def __init__(self):
        self.yields = self.parks = 0
        self.idle = BackoffIdleStrategy(max_spins=10, max_yields=5, yield_fn=self._yield, sleep_fn=self._park)

    def _yield(self):
        self.yields += 1

    def _park(self, _ns):
        self.parks += 1


def _armed(signalling, idle):
    """As after a duty cycle with work: ``idle`` starts over and the probes are armed."""
    idle.reset()
    assert signalling._arm_probe()
    signalling._probes_left = signalling._probe_spins
    signalling._passes_left = PASSES


def _with_strategy(driver, signalling, counting):
    """The probes armed as after a cycle with work, and the strategy's own first step taken (spinning); the strategy
    and the whole cycles so far."""
    steps = _Steps()
    signalling.probe_backoff(steps.idle)
    _until_idle(driver)
    _armed(signalling, steps.idle)
    steps.idle.idle(0)
    return steps, counting.cycles


def test_with_its_strategy_the_probes_are_one_call_and_the_strategy_parks_next(rig):
    driver, signalling, counting, _, _ = rig
    steps, cycles = _with_strategy(driver, signalling, counting)
    assert signalling._probe_spins == 15
    assert driver.do_work() == 0                 # the rest of both phases, compiled, nothing found
    assert counting.cycles == cycles and steps.idle.state == PARKING
    steps.idle.idle(0)
    assert steps.parks == 1 and steps.yields == 0          # it yielded itself, in the compiled call
    assert driver.do_work() == 0 and counting.cycles == cycles + 1     # parked: whole cycles again ...
    assert driver.do_work() == 0 and counting.cycles == cycles + 2     # ... which do not arm the probes again


def test_with_its_strategy_a_cycle_with_work_arms_the_probes_at_once(rig):
    driver, signalling, counting, _, sink = rig
    steps = _Steps()
    signalling.probe_backoff(steps.idle)
    _until_idle(driver)
    steps.idle.state = PARKING                   # parked: the next duty cycle is a whole one
    signalling._probes_left = 0
    cycles = counting.cycles
    sink.sendto(b"\0" * 8, _endpoint_address(driver))    # a stray datagram: the sender's control poll reads it
    fd = driver.conductor.sender.endpoints[0].transport.fileno()
    assert select.select([fd], [], [], 5)[0]
    assert driver.do_work() == 1 and counting.cycles == cycles + 1
    steps.idle.idle(1)
    assert driver.do_work() == 0 and counting.cycles == cycles + 1     # the phases, compiled, nothing found
    assert steps.idle.state == PARKING


@pytest.mark.parametrize("rig", ["image"], indirect=True)
def test_with_its_strategy_a_cycle_that_a_probe_asked_for_in_vain_arms_the_probes_again(rig):
    # a reader moved: the cycle that sees it has no status message to send; the phases go on compiled
    driver, signalling, counting, _, _ = rig
    [image] = driver.conductor.receiver.images
    [link] = image.subscribers.values()
    image._static_window = False            # any move of a reader ends the probes (see the test above)
    steps, cycles = _with_strategy(driver, signalling, counting)
    link.position.set_ordered(link.position.get() + 32)
    work = driver.do_work()             # no status message due; the conductor's timers may have had work meanwhile
    assert counting.cycles == cycles + 1
    steps.idle.idle(work)
    assert driver.do_work() == 0 and counting.cycles == cycles + 1
    assert steps.idle.state == PARKING


def test_with_its_strategy_a_datagram_on_a_control_socket_is_read_by_a_control_pass(rig):
    from aeron._core import counters as ctr
    driver, signalling, counting, _, sink = rig
    invalid = driver.conductor.system[ctr.INVALID_PACKETS]
    before = invalid.get()
    steps, cycles = _with_strategy(driver, signalling, counting)
    sink.sendto(b"\0" * 8, _endpoint_address(driver))    # a stray datagram where status messages and NAKs arrive
    fd = driver.conductor.sender.endpoints[0].transport.fileno()
    assert select.select([fd], [], [], 5)[0]            # in the socket (read by nobody yet)
    driver.do_work()
    probe = signalling._probe
    # read in the phases (counted as invalid, nothing left for Python), which then started over and ran out: the
    # rest of the cycle, owed, ran before the park
    assert (probe.controls, probe.control_read, probe.control_index) == (1, 1, -1) and invalid.get() == before + 1
    assert not select.select([fd], [], [], 0)[0]
    assert counting.cycles == cycles + 1 and steps.idle.state == PARKING


def test_with_its_strategy_a_nak_a_control_pass_reads_is_resent_there_without_a_whole_cycle(rig):
    from aeron._core import counters as ctr
    driver, signalling, counting, publication, sink = rig
    _connected(driver, publication, sink)
    _until_idle(driver)                                 # the conductor gives the publisher its limit
    assert publication.offer(b"n" * 100) > 0
    _until_idle(driver)
    [sent] = _data_frames(sink, 1)
    steps, cycles = _with_strategy(driver, signalling, counting)
    naks = driver.conductor.system[ctr.NAK_MESSAGES_RECEIVED]
    retransmits = driver.conductor.system[ctr.RETRANSMITS_SENT]
    before = naks.get(), retransmits.get()
    sink.sendto(nak(session_id=publication.session_id, stream_id=1001, term_id=publication.initial_term_id,
                    length=len(sent)), _endpoint_address(driver))
    fd = driver.conductor.sender.endpoints[0].transport.fileno()
    assert select.select([fd], [], [], 5)[0]
    driver.do_work()
    probe = signalling._probe
    # the pass resent the frame itself (SendPass.on_nak: the publication's one receiver, unicast): nothing was left
    # for Python, and no whole cycle ran for it; the phases went on and ran out, so the owed rest of a cycle ran
    assert (probe.controls, probe.control_index) == (1, -1)
    assert (naks.get(), retransmits.get()) == (before[0] + 1, before[1] + 1)
    assert _data_frames(sink, 1) == [sent]
    assert counting.cycles == cycles + 1 and steps.idle.state == PARKING


def test_a_probe_that_finds_only_a_status_message_reads_it_and_sends_what_it_lets_go(rig):
    driver, signalling, counting, publication, sink = rig
    _connected(driver, publication, sink, window=0)    # connected, but flow control lets nothing go
    cycles = _probing_when_idle(driver, signalling, counting, 8)
    assert publication.offer(b"w" * 100) > 0
    assert driver.do_work() == 0 and counting.cycles == cycles        # offered, held back: nothing to do
    sink.sendto(status_message(session_id=publication.session_id, stream_id=1001,
                               term_id=publication.initial_term_id, window=32768), _endpoint_address(driver))
    fd = driver.conductor.sender.endpoints[0].transport.fileno()
    assert select.select([fd], [], [], 5)[0]
    assert driver.do_work() > 0 and counting.cycles == cycles        # the control poll, then the send pass
    [frame] = _data_frames(sink, 1)
    assert frame[32:132] == b"w" * 100
    driver.do_work()                                    # nothing more: the rest of the cycle, owed, runs now
    assert counting.cycles == cycles + 1



class _OnStep:
    """A command queue, as the compiled phases look at it each step: empty, but the ``step``-th look runs ``action``
    first (data offered at a known step of the phases, without timing)."""

    def __init__(self, step, action):
        self.step, self.action, self.looks = step, action, 0

    def __len__(self):
        self.looks += 1
        if self.looks == self.step:
            self.action()
        return 0


def test_with_its_strategy_offered_data_goes_in_send_passes_within_the_phases(rig):
    # a stream's next message a few steps away: found by the phases and sent in the same call, which starts them over
    driver, signalling, counting, publication, sink = rig
    _connected(driver, publication, sink)
    steps, cycles = _with_strategy(driver, signalling, counting)
    later = _OnStep(8, lambda: publication.offer(b"b" * 100))
    signalling._queues = (*signalling._queues, later)
    assert publication.offer(b"a" * 100) > 0
    driver.do_work()
    assert signalling._probe.sends == 2 and later.looks > 8
    assert [frame[32:132] for frame in _data_frames(sink, 2)] == [b"a" * 100, b"b" * 100]
    # the phases then ended with nothing found: the rest of the cycle, owed, ran before the park
    assert counting.cycles == cycles + 1 and steps.idle.state == PARKING
    assert steps.yields == 0 and steps.parks == 0


@pytest.mark.parametrize("rig", ["batch1"], indirect=True)
def test_with_its_strategy_the_send_passes_within_the_phases_are_bounded(rig):
    driver, signalling, counting, publication, sink = rig
    _connected(driver, publication, sink)
    steps, cycles = _with_strategy(driver, signalling, counting)
    payload = b"s" * publication.max_payload_length        # one frame fills a datagram: one batch each
    for _ in range(PASSES + 3):
        assert publication.offer(payload) > 0
    assert driver.do_work() > 0
    # as many passes as the bound lets go, then a whole cycle (which sends a batch too)
    assert signalling._probe.sends == PASSES and counting.cycles == cycles + 1
    assert len(_data_frames(sink, PASSES + 1)) == PASSES + 1


@pytest.mark.parametrize("rig", ["batch1"], indirect=True)
def test_with_its_strategy_the_passes_alone_end_at_the_time_bound(rig):
    driver, signalling, counting, publication, sink = rig
    _connected(driver, publication, sink)
    signalling.full_cycle_defer_ns = 50_000_000
    steps, cycles = _with_strategy(driver, signalling, counting)         # armed: the bound counts from here
    payload = b"s" * publication.max_payload_length
    for _ in range(PASSES + 3):
        assert publication.offer(payload) > 0
    signalling._queues = (*signalling._queues, _OnStep(3, lambda: time.sleep(0.1)))    # past the bound at the third
    assert driver.do_work() > 0
    # two passes, then the bound: a whole cycle (which sends a batch too), though the count would allow more
    assert signalling._probe.sends == 2 and counting.cycles == cycles + 1
    assert len(_data_frames(sink, 3)) == 3


def test_what_moves_a_publishers_limit_next_is_a_group_the_probes_watch(rig):
    driver, signalling, counting, publication, sink = rig
    _connected(driver, publication, sink)
    steps, cycles = _with_strategy(driver, signalling, counting)
    [network] = driver.conductor.network.network_publications
    window = network.window_length                          # a 64 KiB term: 32 KiB, its trip gain 4 KiB
    assert network.pub_lmt.get() == window
    # the limit moves once the sender's position has gone a trip gain further
    assert driver.conductor.probe_groups() == [(network.trip_gain, [network.snd_pos])]
    payload = b"p" * publication.max_payload_length
    while publication.offer(payload) > 0:                  # the publisher at its limit
        pass
    assert driver.do_work() > 0
    # one send pass took the sender past the trip gain: the whole cycle came at once, not after the phases, and the
    # conductor moved the limit in it
    assert signalling._probe.sends == 1 and counting.cycles == cycles + 1 and steps.idle.state != PARKING
    passed = signalling._probe.sent                         # where the sender was when the conductor ran
    assert passed > network.trip_gain and network.pub_lmt.get() == passed + window
    assert publication.offer(payload) > 0
    # watched again from the new limit's trip gain on
    assert driver.conductor.probe_groups() == [(passed + network.trip_gain, [network.snd_pos])]


def test_with_its_strategy_the_passes_sent_count_as_bytes_sent(rig):
    from aeron._core import counters as ctr
    driver, signalling, counting, publication, sink = rig
    _connected(driver, publication, sink)
    bytes_sent = driver.conductor.system[ctr.BYTES_SENT]
    steps, cycles = _with_strategy(driver, signalling, counting)
    before = bytes_sent.get()
    assert publication.offer(b"c" * 100) > 0
    driver.do_work()
    assert signalling._probe.sends == 1 and signalling._probe.sent == 160
    assert bytes_sent.get() - before >= 160            # the owed cycle may add a heartbeat's
    _data_frames(sink, 1)


@pytest.mark.parametrize("rig", ["image"], indirect=True)
def test_with_its_strategy_data_received_goes_in_receive_passes_within_the_phases(rig, request):
    # the driver's own publication sends to its own image: the send pass and then the receive pass, in the phases
    driver, signalling, counting, _, _ = rig
    publication, subscription = request.node.image_publication, request.node.image_subscription
    [image] = driver.conductor.receiver.images
    deadline = time.monotonic() + 5
    while image.rcv_hwm.get() == 0 and time.monotonic() < deadline:     # connected: a status message opened the window
        publication.offer(b"w" * 64)          # back pressure until then
        driver.do_work()
    hwm = image.rcv_hwm.get()
    assert hwm > 0
    steps, cycles = _with_strategy(driver, signalling, counting)
    later = _OnStep(6, lambda: publication.offer(b"r" * 100))
    # the step after the send pass waits until loopback has delivered the datagram, so that no timing decides
    # whether a probe or the owed cycle reads it
    fd = driver.conductor.receiver.endpoints[0].transport.fileno()
    delivered = _OnStep(7, lambda: select.select([fd], [], [], 5))
    signalling._queues = (*signalling._queues, later, delivered)
    for _ in range(50):
        driver.do_work()
        if image.rcv_hwm.get() > hwm:
            break
    assert image.rcv_hwm.get() == hwm + 160                 # read and inserted ...
    assert signalling._probe.receives >= 1 and counting.cycles == cycles + 1      # ... by a pass: then the owed cycle
    received = []
    deadline = time.monotonic() + 5
    while not received and time.monotonic() < deadline:
        subscription.poll(lambda buffer, offset, length, header: received.append(buffer.get_bytes(offset, length)),
                          10)
    assert received[-1] == b"r" * 100


@pytest.mark.parametrize("rig", ["receiving"], indirect=True)
def test_with_its_strategy_a_receive_pass_hands_a_setup_to_its_endpoint_before_the_cycle(rig, request):
    # a new publication's SETUP read by a probe's pass: the endpoint handles it at once (its slot is valid only until
    # the socket is read again), then the whole cycle runs, and the image comes as after any SETUP
    driver, signalling, counting, _, sink = rig
    receiver = driver.conductor.receiver
    steps, cycles = _with_strategy(driver, signalling, counting)
    sink.sendto(setup_frame(session_id=77, stream_id=1002, term_length=65536), request.node.receive_address)
    fd = receiver.endpoints[0].transport.fileno()
    assert select.select([fd], [], [], 5)[0]
    driver.do_work()
    assert signalling._probe.event_index == 0 and counting.cycles == cycles + 1
    deadline = time.monotonic() + 5
    while not any(image.session_id == 77 for image in receiver.images) and time.monotonic() < deadline:
        driver.do_work()
    assert any(image.session_id == 77 for image in receiver.images)


def _connecting_status_message(driver, publication, sink, threads=False):
    """Sends the status message that connects ``publication``; with the driver's own ``threads`` running, once its
    sender has the endpoint, else waits until it is in the socket."""
    sender = driver.conductor.sender
    deadline = time.monotonic() + 5
    while threads and not sender.endpoints and time.monotonic() < deadline:
        time.sleep(0.001)
    sink.sendto(status_message(session_id=publication.session_id, stream_id=1001,
                               term_id=publication.initial_term_id, window=32768), _endpoint_address(driver))
    if not threads:
        assert select.select([sender.endpoints[0].transport.fileno()], [], [], 5)[0]


def test_a_publication_is_seen_connected_only_with_its_limit_moved(rig):
    """The status message that connects a publication is read in the sender's part of a cycle, after the
    conductor's (INVOKER order): its limit moves before the flag, so a client that sees the flag can offer at once
    rather than find itself back pressured until the next cycle."""
    driver, signalling, _, publication, sink = rig
    signalling.probe_spins(8)
    _until_idle(driver)
    assert not publication.is_connected
    _connecting_status_message(driver, publication, sink)
    for _ in range(1000):
        driver.do_work()
        if publication.is_connected:
            break
    assert publication.is_connected and publication.offer(b"c" * 100) > 0
    assert driver.conductor.sender.connection_changes == 1
    # the next cycle comes at once, a whole one, and the probes are armed after it as after any work
    assert signalling._probes_left == 0 and signalling._armed
    _until_idle(driver)
    assert signalling._probes_left > 0


def test_with_its_strategy_a_publication_connected_by_a_control_pass_runs_the_cycle_at_once(rig):
    driver, signalling, counting, publication, sink = rig
    steps, cycles = _with_strategy(driver, signalling, counting)
    _connecting_status_message(driver, publication, sink)
    driver.do_work()
    probe = signalling._probe
    # the pass handed the status message of a publication not yet connected to Python, which connected it: its
    # limit moved with the flag, and the whole cycle ran at once (the probes' watch now has the new limit's group)
    assert (probe.controls, probe.control_index) == (1, 0)
    assert publication.is_connected and publication.offer(b"c" * 100) > 0
    assert counting.cycles == cycles + 1


def test_a_connection_signals_the_conductor_on_another_thread(shm_dir):
    """SHARED_NETWORK: the publication's limit is the conductor's thread's to move, which is woken for it."""
    from aeron.common.wakeup import CONDUCTOR
    driver = MediaDriver.launch(Context(environ={}, aeron_dir=str(shm_dir / "d"),
                                        threading_mode=ThreadingMode.SHARED_NETWORK,
                                        conductor_idle_strategy="wakeup", sharednetwork_idle_strategy="backoff"))
    sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sink.bind(("127.0.0.1", 0))
        with Aeron.connect(ClientContext(aeron_dir=driver.aeron_dir)) as client:
            publication = client.add_publication(f"aeron:udp?endpoint=127.0.0.1:{sink.getsockname()[1]}", 1001)
            network = next(runner.agent for runner in driver._runners
                           if runner.agent._sender is driver.conductor.sender)
            sender = driver.conductor.sender
            assert not sender.shares_conductor_thread
            signalled = []
            signal = network._signal
            network._signal = lambda mask: (signalled.append((mask, sender.connection_changes)), signal(mask))
            _connecting_status_message(driver, publication, sink, threads=True)
            deadline = time.monotonic() + 5
            while publication.offer(b"c" * 100) < 0 and time.monotonic() < deadline:
                time.sleep(0.001)
            assert publication.is_connected
            assert any(mask & CONDUCTOR and changes == 1 for mask, changes in list(signalled))
    finally:
        driver.close()
        sink.close()


@pytest.mark.parametrize("rig", ["image"], indirect=True)
def test_with_its_strategy_a_status_message_a_reader_makes_due_goes_in_the_images_rebuild_pass(rig):
    # the image's compiled rebuild pass (PublicationImage.rebuild_pass) sends it within the phases: no whole cycle
    # for it; the phases then go on and run out, and the owed rest of a cycle runs
    from aeron._core import counters as ctr
    driver, signalling, counting, _, _ = rig
    [image] = driver.conductor.receiver.images
    [link] = image.subscribers.values()
    sent = driver.conductor.system[ctr.STATUS_MESSAGES_SENT]
    steps, cycles = _with_strategy(driver, signalling, counting)
    assert image.rebuild.armed
    threshold = image.status_message_threshold()
    before = sent.get()
    link.position.set_ordered(threshold)
    driver.do_work()
    probe = signalling._probe
    assert (probe.statuses, probe.status_work) == (1, 1)
    assert sent.get() == before + 1 and image.last_sm_position == image.next_sm_position == threshold
    assert counting.cycles == cycles + 1 and steps.idle.state == PARKING


@pytest.mark.parametrize("rig", ["image"], indirect=True)
def test_with_its_strategy_an_images_nak_timer_runs_its_rebuild_pass_not_a_whole_cycle(rig):
    driver, signalling, counting, _, _ = rig
    [image] = driver.conductor.receiver.images
    steps, cycles = _with_strategy(driver, signalling, counting)
    loss = image.loss_detector
    loss.gap_open = True                    # as a scan that found a gap leaves it; the gap has since been filled
    loss.expiry_ns = time.monotonic_ns() - 1
    driver.do_work()
    probe = signalling._probe
    # the pass scanned, found the gap filled, sent nothing: not work, so the phases went on and ran out, with no
    # whole cycle owed
    assert (probe.statuses, probe.status_work) == (1, 0) and not loss.gap_open
    assert counting.cycles == cycles and steps.idle.state == PARKING


@pytest.mark.parametrize("rig", ["image"], indirect=True)
def test_an_image_only_python_may_track_has_no_rebuild_pass_and_its_timers_end_the_probes(rig):
    driver, signalling, counting, _, _ = rig
    [image] = driver.conductor.receiver.images
    _until_idle(driver)
    assert image.rebuild_pass() is image.rebuild and image.rebuild.armed
    image.is_reliable = False               # gaps filled, not NAKed: Python's
    assert image.rebuild_pass() is None and not image.rebuild.armed
    positions, [group], deadline, covered = driver.conductor.receiver.probe_watch()
    assert len(group) == 2 and deadline == image.next_deadline_ns(0, 1 << 62) and not covered
    image.is_reliable = True
    *_, covered = driver.conductor.receiver.probe_watch()
    assert covered and image.rebuild.armed
    image.log.is_publication_revoked = True  # as Aeron, which tracks a revoked image no more: not in compiled code
    assert image.rebuild_pass() is None
    image.log.is_publication_revoked = False
    image.state = DRAINING                  # its status messages carry EOS: Python's
    assert image.rebuild_pass() is None and not image.rebuild.armed
    image.state = ACTIVE


@pytest.mark.parametrize("rig", ["image"], indirect=True)
def test_a_whole_cycle_tracks_an_image_with_an_armed_rebuild_pass_in_compiled_code(rig, monkeypatch):
    from aeron._core import counters as ctr
    driver, signalling, counting, _, _ = rig
    [image] = driver.conductor.receiver.images
    [link] = image.subscribers.values()
    _until_idle(driver)
    assert image.rebuild_pass() is image.rebuild
    counting = CountingScans(image.loss_detector)          # the Python path's loss scan, counted
    monkeypatch.setattr(image, "loss_detector", counting)
    scans = counting.calls
    sent = driver.conductor.system[ctr.STATUS_MESSAGES_SENT]
    before = sent.get()
    threshold = image.status_message_threshold()
    link.position.set_ordered(threshold)
    assert driver.conductor.receiver.do_work() >= 1
    assert sent.get() == before + 1 and image.last_sm_position == threshold and scans == []
    image.rebuild.disarm()                  # e.g. its connections changed: the receiver's next cycle aims it again
    link.position.set_ordered(threshold + image.next_sm_window)
    driver.conductor.receiver.do_work()
    assert sent.get() == before + 2 and scans == [] and image.rebuild.armed
    image.is_reliable = False               # gaps filled, not NAKed: only the Python path may track it
    image.rebuild.disarm()
    link.position.set_ordered(threshold + 2 * image.next_sm_window)
    driver.conductor.receiver.do_work()
    assert sent.get() == before + 3 and len(scans) == 1 and not image.rebuild.armed


def test_commands_pending_sees_a_client_command_and_a_command_queued_for_the_agents(rig):
    # what the re-check of a park after data halves alone looks at (WakeupIdleStrategy._data_first): what only a
    # whole duty cycle serves
    from aeron.client.driver_proxy import DriverProxy
    driver, signalling, _, _, _ = rig
    _until_idle(driver)
    assert not signalling.commands_pending()
    DriverProxy(driver.conductor.to_driver, 4242, 10_000_000_000, None).next_available_session_id(1001)
    assert signalling.commands_pending()
    _until_idle(driver)                                 # the conductor has read it
    assert not signalling.commands_pending()
    records = driver.conductor.receiver.command_queue.records
    records.append(("a record the receiver has not run yet",))
    try:
        assert signalling.commands_pending()
    finally:
        records.pop()
    assert not signalling.commands_pending()
