# SPDX-License-Identifier: Apache-2.0
"""DataSpin, a driver thread's compiled wait between duty cycles: it returns as soon as a watched send pass has a
frame at a publication's sender position with room under its sender limit, or a watched socket has a datagram, and
otherwise once its time is up; it sends and reads nothing itself. run_data goes further: it runs the passes it finds work for, send and receive, in the
same call."""
from __future__ import annotations

import collections
import select
import socket
import threading
import time

import pytest

from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.counters import COUNTER_LENGTH, AtomicCounter
from aeron._core.data_dispatcher import DataPacketDispatcher, address_key
from aeron._core.data_spin import PROBE_CONTROL, PROBE_OTHER, PROBE_RECEIVE, PROBE_SEND, PROBE_STATUS, DataSpin
from aeron._core.ring_buffer import TRAILER_LENGTH, ManyToOneRingBuffer
from aeron._core.send_pass import SendPass
from aeron.common.errors import ChannelEndpointError, IllegalStateError, InvalidArgumentError
from aeron._core.udp_transport import UdpTransport
from aeron._core.wakeup import stream_bit
from aeron.common.wakeup import new_waiter, open_board
from tests._core.test_data_dispatcher import DESTINATION, HWM, SESSION, STREAM, Rig, data_frame
from tests._core.test_rebuild_pass import WINDOW
from tests._core.test_rebuild_pass import Rig as RebuildRig
from tests._core.test_send_pass import Publication


@pytest.fixture
def udp():
    """Makes UDP sockets bound to free ports on loopback, all closed after the test."""
    made: list[socket.socket] = []

    def make() -> socket.socket:
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        made.append(sock)
        sock.bind(("127.0.0.1", 0))
        return sock
    yield make
    for sock in made:
        sock.close()


def _pass_of(publication: Publication) -> SendPass:
    send_pass = SendPass()
    send_pass.set_publications([publication.entry()])
    return send_pass


def test_nothing_to_do_ends_when_the_time_is_up():
    spin = DataSpin()
    spin.set([], [])
    assert spin.wait(0) is False and spin.rounds == 1
    assert spin.wait(200_000) is False and spin.rounds > 1


def test_a_datagram_waiting_ends_it_and_stays_unread(udp):
    receiver, sender = udp(), udp()
    receiver.setblocking(False)
    spin = DataSpin()
    spin.set([], [receiver.fileno()])
    assert spin.wait(0) is False
    sender.sendto(b"x", receiver.getsockname())
    assert spin.wait(1_000_000_000) is True
    assert receiver.recv(16) == b"x"                # left for the receiver's own poll
    assert spin.wait(0) is False


def test_a_frame_offered_under_the_sender_limit_ends_it():
    publication = Publication(7)
    send_pass = _pass_of(publication)
    spin = DataSpin()
    spin.set([send_pass], [])
    assert spin.wait(0) is False                        # nothing written at the sender position
    end = publication.commit(0, 0, 32)
    assert spin.wait(0) is False                        # written, but flow control holds it (snd-lmt 0)
    publication.snd_lmt.set_ordered(end)
    assert spin.wait(1_000_000_000) is True
    publication.snd_pos.set_ordered(end)                # sent: nothing more at the new position
    assert spin.wait(0) is False


def test_only_send_passes_are_watched():
    with pytest.raises(InvalidArgumentError):
        DataSpin().set([object()], [])


def test_a_frame_larger_than_the_window_left_is_not_offered():
    # a status message's window rarely ends on a frame boundary: the pass cannot send the frame that straddles it,
    # so neither the spin nor the probe may count it as work (a probe would run whole duty cycles that send nothing)
    publication = Publication(7)
    send_pass = _pass_of(publication)
    spin = DataSpin()
    spin.set([send_pass], [])
    end = publication.commit(0, 0, 40)                  # a 72-byte frame, 96 aligned
    publication.snd_lmt.set_ordered(64)
    assert spin.wait(0) is False and spin.ready() is False
    publication.snd_lmt.set_ordered(end)
    assert spin.wait(0) is True and spin.ready() is True


def test_ready_is_one_look_at_passes_and_sockets(udp):
    receiver, sender = udp(), udp()
    publication = Publication(9)
    send_pass = _pass_of(publication)
    spin = DataSpin()
    spin.set([send_pass], [receiver.fileno()])
    assert spin.ready() is False
    sender.sendto(b"x", receiver.getsockname())
    deadline = time.monotonic() + 5
    while not spin.ready() and time.monotonic() < deadline:     # loopback delivery may lag on a loaded machine
        time.sleep(0.001)
    assert spin.ready() is True
    assert receiver.recv(16) == b"x"
    assert spin.ready() is False
    publication.snd_lmt.set_ordered(publication.commit(0, 0, 32))
    assert spin.ready() is True


def test_a_watched_counter_that_moves_ends_it():
    values = AtomicBuffer(bytearray(COUNTER_LENGTH * 4))
    moving, still = AtomicCounter(values, 1), AtomicCounter(values, 2)
    moving.set(100)
    spin = DataSpin()
    spin.set([], [], [moving, still])                   # their values now are the reference
    assert spin.ready() is False and spin.wait(0) is False
    moving.set(132)
    assert spin.ready() is True and spin.wait(1_000_000_000) is True
    spin.set([], [], [moving, still])                   # a new reference
    assert spin.ready() is False
    spin.set([], [])                                    # none watched any more
    moving.set(164)
    assert spin.ready() is False


def test_a_group_is_found_once_all_its_counters_reach_its_threshold():
    values = AtomicBuffer(bytearray(COUNTER_LENGTH * 5))
    a, b, c, d = (AtomicCounter(values, i) for i in range(1, 5))
    spin = DataSpin()
    spin.set([], [], (), 0, [(1000, [a, b]), (500, [c]), (0, [])])      # an empty group is never found
    assert spin.ready() is False
    a.set(2000)
    assert spin.ready() is False                        # b still short of it
    b.set(1000)
    assert spin.ready() is True and spin.wait(1_000_000_000) is True
    spin.set([], [], (), 0, [(1001, [a, b]), (500, [c])])
    c.set(499)
    assert spin.ready() is False
    c.set(500)
    assert spin.probe() == PROBE_OTHER
    spin.set([], [], [d], 0, [(10_000, [a])])           # groups beside counters whose every move counts
    d.set(1)
    assert spin.ready() is True


def test_the_deadline_is_found_once_it_comes():
    spin = DataSpin()
    spin.set([], [], (), 0, (), time.monotonic_ns() + 10_000_000_000)
    assert spin.ready() is False and spin.wait(0) is False
    spin.set([], [], (), 0, (), time.monotonic_ns() + 2_000_000)
    assert spin.wait(5_000_000_000) is True             # within the wait
    spin.set([], [], (), 0, (), time.monotonic_ns() - 1)
    assert spin.probe() == PROBE_OTHER and spin.backoff(3, 0) == PROBE_OTHER and spin.steps == 0
    spin.set([], [])                                    # none any more
    assert spin.ready() is False


def test_groups_and_deadlines_are_checked():
    spin = DataSpin()
    with pytest.raises(InvalidArgumentError):
        spin.set([], [], (), 0, [(0, [object()])])
    with pytest.raises(InvalidArgumentError):
        spin.set([], [], (), 0, (), -1)


def test_only_counters_are_watched():
    spin = DataSpin()
    with pytest.raises(InvalidArgumentError):
        spin.set([], [], [object()])


def test_probe_tells_data_to_send_alone_from_anything_else(udp):
    # PROBE_SEND lets a backoff probe run the send passes without a whole duty cycle: only when nothing else waits
    receiver, sender = udp(), udp()
    values = AtomicBuffer(bytearray(COUNTER_LENGTH * 2))
    position = AtomicCounter(values, 1)
    publication = Publication(11)
    send_pass = _pass_of(publication)
    spin = DataSpin()
    spin.set([send_pass], [receiver.fileno()], [position])
    assert spin.probe() == 0
    publication.snd_lmt.set_ordered(publication.commit(0, 0, 32))
    assert spin.probe() == PROBE_SEND
    sender.sendto(b"x", receiver.getsockname())
    deadline = time.monotonic() + 5
    while spin.probe() != PROBE_OTHER and time.monotonic() < deadline:   # loopback delivery may lag
        time.sleep(0.001)
    assert spin.probe() == PROBE_OTHER              # a datagram waits too: the whole cycle reads it
    assert receiver.recv(16) == b"x"
    assert spin.probe() == PROBE_SEND
    position.set(32)
    assert spin.probe() == PROBE_OTHER              # a reader moved: a status message may be due
    spin.set([send_pass], [receiver.fileno()], [position])
    publication.snd_pos.set_ordered(publication.snd_lmt.get())
    assert spin.probe() == 0


def test_backoff_runs_the_phases_and_returns_at_the_first_find(udp):
    # the spin and yield phases of a backoff idle strategy in one call; steps says how many went by before the verdict
    receiver, sender = udp(), udp()
    publication = Publication(13)
    send_pass = _pass_of(publication)
    spin = DataSpin()
    spin.set([send_pass], [receiver.fileno()])
    assert spin.backoff(11, 5) == 0 and spin.steps == 17          # all of them, and the step into parking
    assert spin.backoff(0, 0) == 0 and spin.steps == 1
    publication.snd_lmt.set_ordered(publication.commit(0, 0, 32))
    assert spin.backoff(11, 5) == PROBE_SEND and spin.steps == 0
    publication.snd_pos.set_ordered(publication.snd_lmt.get())
    sender.sendto(b"x", receiver.getsockname())
    deadline = time.monotonic() + 5
    while spin.backoff(0, 100) != PROBE_OTHER and time.monotonic() < deadline:   # loopback delivery may lag
        pass
    assert spin.backoff(3, 3) == PROBE_OTHER and spin.steps == 0
    assert receiver.recv(16) == b"x"                                # left for the duty cycle to read


def test_backoff_finds_a_datagram_that_comes_while_it_yields(udp):
    receiver, sender = udp(), udp()
    spin = DataSpin()
    spin.set([], [receiver.fileno()])
    timer = threading.Timer(0.05, sender.sendto, (b"y", receiver.getsockname()))
    timer.start()           # the yields release the GIL: the timer's thread runs meanwhile
    try:
        found = spin.backoff(0, 10_000_000)
    finally:
        timer.join()
    assert found == PROBE_OTHER and 0 < spin.steps < 10_000_000


def test_backoff_counts_a_command_waiting_as_something_found():
    spin = DataSpin()
    spin.set([], [])
    queue: collections.deque = collections.deque()
    assert spin.backoff(2, 1, None, (queue,)) == 0
    queue.append(("command",))
    assert spin.backoff(2, 1, None, ((), queue)) == PROBE_OTHER and spin.steps == 0
    ring = ManyToOneRingBuffer(AtomicBuffer(bytearray(1024 + TRAILER_LENGTH)))
    assert spin.backoff(2, 1, ring) == 0
    ring.write(1, b"\0" * 8)                                            # a client command
    assert spin.backoff(2, 1, ring) == PROBE_OTHER and spin.steps == 0


def test_backoff_rejects_negative_steps_and_a_closed_ring():
    spin = DataSpin()
    spin.set([], [])
    with pytest.raises(InvalidArgumentError):
        spin.backoff(-1, 0)
    ring = ManyToOneRingBuffer(AtomicBuffer(bytearray(1024 + TRAILER_LENGTH)))
    ring.close()
    with pytest.raises(IllegalStateError):
        spin.backoff(1, 1, ring)


def test_probe_tells_datagrams_on_the_control_sockets_alone_apart(udp):
    # PROBE_CONTROL lets a probe run the sender's control poll alone: only when no other socket has a datagram
    control, data, peer = udp(), udp(), udp()
    publication = Publication(17)
    send_pass = _pass_of(publication)
    publication.snd_lmt.set_ordered(publication.commit(0, 0, 32))
    spin = DataSpin()
    spin.set([send_pass], [control.fileno(), data.fileno()], (), 1)
    assert spin.probe() == PROBE_SEND
    peer.sendto(b"sm", control.getsockname())
    assert select.select([control], [], [], 5)[0]
    assert spin.probe() == PROBE_CONTROL                # whatever the passes have
    assert spin.backoff(3, 3) == PROBE_CONTROL and spin.steps == 0
    peer.sendto(b"data", data.getsockname())
    assert select.select([data], [], [], 5)[0]
    assert spin.probe() == PROBE_OTHER
    control.recv(16)
    assert spin.probe() == PROBE_OTHER
    spin.set([send_pass], [control.fileno(), data.fileno()])           # no control sockets: any datagram
    data.recv(16)
    peer.sendto(b"sm", control.getsockname())
    assert select.select([control], [], [], 5)[0]
    assert spin.probe() == PROBE_OTHER
    with pytest.raises(InvalidArgumentError):
        spin.set([], [control.fileno()], (), 2)


def test_backoff_runs_bound_send_passes_itself_and_starts_the_phases_over():
    from tests._core.test_send_pass import _receive, _transport
    sender, receiver = _transport(), _transport()
    values = AtomicBuffer(bytearray(COUNTER_LENGTH))
    bytes_sent = AtomicCounter(values, 0)
    try:
        publication = Publication(21, max_messages=1)          # one datagram per pass
        send_pass = _pass_of(publication)
        spin = DataSpin()
        spin.set([send_pass], [])
        end = 0
        for _ in range(3):
            end = publication.commit(0, end, 32)
        publication.snd_lmt.set_ordered(end)
        # unbound: nowhere to send, the caller sends
        assert spin.backoff(2, 1, None, (), 8, 3, 1) == PROBE_SEND and spin.sends == 0
        send_pass.bind(sender, receiver.bound_address, bytes_sent)
        assert send_pass.bound
        # bound: three passes of one datagram, each work done, then all the phases (3 + 1) and the step into parking
        assert spin.backoff(2, 1, None, (), 8, 3, 1) == 0
        assert (spin.sends, spin.sent, spin.steps) == (3, 3 * 64, 5)
        assert publication.snd_pos.get() == end and bytes_sent.get() == 3 * 64
        assert len(_receive(receiver, 3)) == 3
        # at most ``sends`` passes: then the find goes back to the caller
        for _ in range(3):
            end = publication.commit(0, end, 32)
        publication.snd_lmt.set_ordered(end)
        assert spin.backoff(2, 1, None, (), 2, 3, 1) == PROBE_SEND and (spin.sends, spin.steps) == (2, 0)
        assert spin.backoff(2, 1, None, (), 0, 3, 1) == PROBE_SEND and spin.sends == 0     # none allowed
        assert len(_receive(receiver, 2)) == 2
        send_pass.bind(None, None)
        assert not send_pass.bound
        with pytest.raises(InvalidArgumentError):
            spin.backoff(1, 1, None, (), -1)
        with pytest.raises(InvalidArgumentError):
            send_pass.bind(sender, receiver.bound_address)                  # no counter to add to
    finally:
        sender.close()
        receiver.close()


def test_backoff_hands_a_pass_that_sends_nothing_back_as_something_else():
    # a socket that takes nothing (full) or fails: the duty cycle retries the pass and reports what went wrong
    from tests._core.test_send_pass import _transport
    sender = _transport()
    values = AtomicBuffer(bytearray(COUNTER_LENGTH))
    try:
        publication = Publication(22)
        send_pass = _pass_of(publication)
        send_pass.bind(sender, ("127.0.0.1", 0), AtomicCounter(values, 0))     # port 0: sendmmsg fails
        spin = DataSpin()
        spin.set([send_pass], [])
        publication.snd_lmt.set_ordered(publication.commit(0, 0, 32))
        assert spin.backoff(2, 1, None, (), 8, 3, 1) == PROBE_OTHER
        assert (spin.sends, spin.sent, spin.steps) == (1, 0, 0)
        assert publication.snd_pos.get() == 0                   # nothing taken: the duty cycle's pass sends it
        with pytest.raises(ChannelEndpointError, match="sendmmsg"):
            send_pass.send(sender, ("127.0.0.1", 0))
        sender.close()
        with pytest.raises(IllegalStateError):                  # a closed transport: refused before any step
            spin.backoff(2, 1, None, (), 8, 3, 1)
    finally:
        sender.close()


@pytest.fixture
def receiving(udp):
    """A dispatcher with one image (tests._core.test_data_dispatcher.Rig), a transport it reads and a socket that sends
    to it as the image's one connection: (rig, transport, sender)."""
    rig = Rig()
    sock = udp()
    transport = UdpTransport(socket.socket(fileno=sock.detach()), batch=4)
    sender = udp()
    rig.state.set_connections([(DESTINATION, address_key(sender.getsockname()), 0)])
    yield rig, transport, sender
    transport.close()


def _arrived(transport):
    assert select.select([transport.fileno()], [], [], 5)[0]


def test_probe_tells_datagrams_on_sockets_with_a_receive_pass_alone_apart(udp, receiving):
    rig, transport, sender = receiving
    control, plain = udp(), udp()
    spin = DataSpin()
    spin.set([], [control.fileno(), transport.fileno(), plain.fileno()], (), 1,
             receives=[(rig.dispatcher, transport, DESTINATION), None])
    sender.sendto(data_frame(0, b"a" * 32), transport.bound_address)
    _arrived(transport)
    assert spin.probe() == PROBE_RECEIVE
    sender.sendto(b"x", control.getsockname())
    _arrived(control)
    assert spin.probe() == PROBE_OTHER                  # datagrams on both kinds: the whole cycle
    control.recv(16)
    sender.sendto(b"x", plain.getsockname())
    _arrived(plain)
    assert spin.probe() == PROBE_OTHER                  # a socket without a pass
    spin.set([], [control.fileno(), transport.fileno(), plain.fileno()], (), 1)
    plain.recv(16)
    assert spin.probe() == PROBE_OTHER                  # no passes given: any receive socket is something else


def test_backoff_runs_receive_passes_itself_and_starts_the_phases_over(receiving):
    rig, transport, sender = receiving
    spin = DataSpin()
    spin.set([], [transport.fileno()], receives=[(rig.dispatcher, transport, DESTINATION)])
    frames = [data_frame(i * 64, bytes([i]) * 32) for i in range(6)]
    for frame in frames:
        sender.sendto(frame, transport.bound_address)
    deadline = time.monotonic() + 5
    while rig[HWM] < 6 * 64 and time.monotonic() < deadline:
        assert spin.backoff(2, 1, None, (), 0, 2, 1, 8) == 0    # read, then nothing more: the phases ran out
    assert rig[HWM] == 6 * 64 and rig.terms[0].get_bytes(0, 6 * 64) == b"".join(frames)
    assert spin.receives >= 1 and spin.event_index == -1
    sender.sendto(data_frame(6 * 64, b"z" * 32), transport.bound_address)
    _arrived(transport)
    assert spin.backoff(2, 1, None, (), 0, 2, 1, 8) == 0
    assert (spin.receives, spin.received, spin.steps) == (1, 1, 4)     # the phases over from the pass: 2 + 1 + 1
    assert rig[HWM] == 7 * 64


def test_backoff_runs_no_more_receive_passes_than_it_may(receiving):
    rig, transport, sender = receiving
    spin = DataSpin()
    spin.set([], [transport.fileno()], receives=[(rig.dispatcher, transport, DESTINATION)])
    for i in range(12):                                 # three batches of four
        sender.sendto(data_frame(i * 64, b"q" * 32), transport.bound_address)
    _arrived(transport)
    time.sleep(0.05)
    assert spin.backoff(2, 1, None, (), 0, 2, 1, 2) == PROBE_RECEIVE      # two passes, then the third is the caller's
    assert (spin.receives, spin.received) == (2, 8)
    assert spin.backoff(2, 1, None, (), 0, 2, 1, 0) == PROBE_RECEIVE      # none allowed: found, not read


def test_backoff_runs_no_pass_past_its_time_bound(receiving):
    from tests._core.test_send_pass import _receive, _transport
    rig, transport, sender = receiving
    spin = DataSpin()
    spin.set([], [transport.fileno()], receives=[(rig.dispatcher, transport, DESTINATION)])
    sender.sendto(data_frame(0, b"t" * 32), transport.bound_address)
    _arrived(transport)
    # past the bound: the datagram is found and left, the rest of the caller's cycle owed
    assert spin.backoff(2, 1, None, (), 0, 2, 1, 8, time.monotonic_ns()) == PROBE_OTHER
    assert spin.receives == 0 and rig[HWM] == 0
    assert spin.backoff(2, 1, None, (), 0, 2, 1, 8, time.monotonic_ns() + 60_000_000_000) == 0
    assert spin.receives == 1 and rig[HWM] == 64
    out, into = _transport(), _transport()
    values = AtomicBuffer(bytearray(COUNTER_LENGTH))
    try:
        publication = Publication(21, max_messages=1)
        send_pass = _pass_of(publication)
        send_pass.bind(out, into.bound_address, AtomicCounter(values, 0))
        spin.set([send_pass], [])
        end = publication.commit(0, 0, 32)
        publication.snd_lmt.set_ordered(end)
        assert spin.backoff(2, 1, None, (), 8, 3, 1, 0, time.monotonic_ns()) == PROBE_OTHER and spin.sends == 0
        assert publication.snd_pos.get() == 0
        assert spin.backoff(2, 1, None, (), 8, 3, 1, 0, time.monotonic_ns() + 60_000_000_000) == 0
        assert spin.sends == 1 and publication.snd_pos.get() == end and len(_receive(into, 1)) == 1
        # no bound yet: the first pass sets it, from its own time
        end = publication.commit(0, end, 32)
        publication.snd_lmt.set_ordered(end)
        before = time.monotonic_ns()
        assert spin.backoff(2, 1, None, (), 8, 3, 1, 0, 0, 60_000_000_000) == 0 and spin.sends == 1
        assert before + 60_000_000_000 <= spin.passes_until_ns <= time.monotonic_ns() + 60_000_000_000
        assert spin.backoff(2, 1, None, (), 8, 3, 1, 0) == 0 and spin.passes_until_ns == 0     # nothing to pass
    finally:
        out.close()
        into.close()


def test_backoff_hands_back_a_pass_that_left_events_or_opened_a_gap(receiving):
    rig, transport, sender = receiving
    spin = DataSpin()
    spin.set([], [transport.fileno()], receives=[(rig.dispatcher, transport, DESTINATION)])
    unknown = data_frame(0, b"u" * 32, session_id=8)
    sender.sendto(unknown, transport.bound_address)
    _arrived(transport)
    assert spin.backoff(2, 1, None, (), 0, 2, 1, 8) == PROBE_OTHER
    assert spin.event_index == 0 and rig.dispatcher.event_count == 1     # left for the endpoint, slot unread again
    slot = rig.dispatcher.event_slot(0)
    assert bytes(transport.slots[slot][:transport.length(slot)]) == unknown
    sender.sendto(data_frame(128, b"g" * 32), transport.bound_address)   # 0 to 128 missing
    _arrived(transport)
    assert spin.backoff(2, 1, None, (), 0, 2, 1, 8) == PROBE_OTHER
    assert (spin.event_index, spin.receives, rig.dispatcher.gaps, rig[HWM]) == (-1, 1, 1, 192)


def test_backoff_runs_control_passes_itself_and_hands_back_what_they_leave():
    from tests._core.test_control_dispatcher import _fast_rig, _nak, _status
    reader, status, _, _, snd_lmt, _ = _fast_rig()
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    transport = UdpTransport(sock, batch=8)
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        spin = DataSpin()
        spin.set([], [transport.fileno()], control=1, controls=[(reader, transport)])
        sender.sendto(_status(term_offset=1024), transport.bound_address)
        _arrived(transport)
        # read here, the status message taken in compiled code: work done, the phases over from it (2 + 1 + 1)
        assert spin.backoff(2, 1, None, (), 0, 2, 1, 0, 0, 0, 8) == 0
        assert (spin.controls, spin.control_read, spin.control_index, spin.steps) == (1, 1, -1, 4)
        assert snd_lmt.get() == 1024 + 32768 and status.get() == 1
        sender.sendto(_status(term_offset=2048), transport.bound_address)
        _arrived(transport)
        assert spin.backoff(2, 1, None, (), 0, 2, 1, 0, 0, 0, 0) == PROBE_CONTROL      # none allowed: found, not read
        assert spin.controls == 0 and status.get() == 1
        assert spin.backoff(2, 1, None, (), 0, 2, 1, 0, time.monotonic_ns(), 0, 8) == PROBE_OTHER   # past the bound
        assert spin.controls == 0 and status.get() == 1
        assert spin.backoff(2, 1, None, (), 0, 2, 1, 0, 0, 0, 8) == 0 and status.get() == 2
        # a NAK is a record: the call ends there, the record left for the caller
        sender.sendto(_nak(), transport.bound_address)
        _arrived(transport)
        assert spin.backoff(2, 1, None, (), 0, 2, 1, 0, 0, 0, 8) == PROBE_OTHER
        assert (spin.controls, spin.control_index, reader.record_count) == (1, 0, 1)
        assert reader.nak(0)[2:] == (101, 64, 1408)
        # a socket without a control pass: found, left to the caller
        spin.set([], [transport.fileno()], control=1, controls=[None])
        sender.sendto(_status(term_offset=4096), transport.bound_address)
        _arrived(transport)
        assert spin.backoff(2, 1, None, (), 0, 2, 1, 0, 0, 0, 8) == PROBE_CONTROL and spin.controls == 0
        with pytest.raises(InvalidArgumentError):
            spin.set([], [transport.fileno()], control=1, controls=[None, None])
        with pytest.raises(InvalidArgumentError):
            spin.set([], [transport.fileno()], control=1, controls=[(reader, None)])
    finally:
        transport.close()
        sender.close()


def test_receive_passes_are_checked():
    spin = DataSpin()
    with pytest.raises(InvalidArgumentError):
        spin.set([], [0, 1], receives=[None])            # one per receive socket
    with pytest.raises(InvalidArgumentError):
        spin.set([], [0], receives=[(object(), object(), 1)])
    with pytest.raises(InvalidArgumentError):
        DataSpin().backoff(1, 1, None, (), 0, 0, 0, -1)


def test_set_sockets_and_set_watch_each_replace_one_half(udp):
    values = AtomicBuffer(bytearray(COUNTER_LENGTH * 2))
    position = AtomicCounter(values, 1)
    receiver, sender = udp(), udp()
    spin = DataSpin()
    spin.set([], [receiver.fileno()], [position])
    spin.set_watch()                                    # no counter any more; the socket stays
    position.set(64)
    assert spin.ready() is False
    sender.sendto(b"x", receiver.getsockname())
    assert select.select([receiver], [], [], 5)[0]
    assert spin.ready() is True
    spin.set_sockets([], [])                            # no socket any more; the watch stays
    assert spin.ready() is False
    spin.set_watch([position])
    position.set(96)
    assert spin.ready() is True
    with pytest.raises(InvalidArgumentError):
        spin.set_watch((), [(1, [object()])])
    with pytest.raises(InvalidArgumentError):
        spin.set_sockets([], [receiver.fileno()], 2)


# -- rebuild passes: an image's status messages and NAKs without a whole duty cycle ----------------------------------

@pytest.fixture
def rebuilding(tmp_path):
    """An image's rebuild pass (tests._core.test_rebuild_pass.Rig) in CLOCK_MONOTONIC time, its first status message
    sent, NAKs at once, and one reader: (rig, reader)."""
    now = time.monotonic_ns()
    rig = RebuildRig(tmp_path, nak_delay_ns=0, now_ns=now)
    rig.rebuild.track(0, 0, now)
    rig.received()
    reader = AtomicCounter(AtomicBuffer(bytearray(COUNTER_LENGTH)), 0)
    yield rig, reader
    rig.close()


def test_a_group_with_a_rebuild_pass_is_run_by_backoff_instead_of_handed_back(rebuilding):
    rig, reader = rebuilding
    spin = DataSpin()
    spin.set([], [], groups=[(rig.rebuild.status_message_threshold, [reader], rig.rebuild)])
    assert spin.probe() == 0
    for offset in range(0, 16 * 1024, 1024):
        rig.insert(offset, 1024)
    reader.set(12 * 1024)                                    # past a quarter window: a status message due
    assert spin.probe() == PROBE_STATUS
    assert spin.backoff(2, 1) == PROBE_STATUS               # no passes allowed: found, for a whole cycle
    assert spin.backoff(2, 1, statuses=4) == 0               # run, then the phases found nothing more
    assert (spin.statuses, spin.status_work) == (1, 1)
    [sm] = rig.received()
    assert sm.consumption_term_offset == 12 * 1024 and rig.state.last_sm_position == 12 * 1024
    assert spin.probe() == 0                                 # the group's threshold moved to the next one
    reader.set(16 * 1024)
    assert spin.probe() == 0                                 # not a quarter window on yet


def test_a_rebuild_pass_that_hands_back_ends_the_backoff_as_something_else(rebuilding):
    rig, reader = rebuilding
    spin = DataSpin()
    spin.set([], [], groups=[(rig.rebuild.status_message_threshold, [reader], rig.rebuild)])
    rig.rebuild.disarm()
    reader.set(WINDOW)
    assert spin.backoff(2, 1, statuses=4) == PROBE_OTHER
    assert (spin.statuses, spin.status_work, rig.received()) == (1, 0, [])


def test_a_gap_a_receive_pass_opens_is_naked_by_the_image_rebuild_pass_when_every_image_has_one(rebuilding, udp):
    rig, reader = rebuilding
    values = AtomicBuffer(bytearray(COUNTER_LENGTH * 5))
    dispatcher = DataPacketDispatcher(*(AtomicCounter(values, i) for i in range(5)))
    dispatcher.add(rig.state)
    sock = udp()
    transport = UdpTransport(socket.socket(fileno=sock.detach()), batch=4)
    try:
        spin = DataSpin()
        receives = [(dispatcher, transport, 1)]
        groups = [(rig.rebuild.status_message_threshold, [reader], rig.rebuild)]
        spin.set([], [transport.fileno()], receives=receives, groups=groups, gaps_covered=True)
        rig.control.sendto(data_frame(128, b"g" * 32), transport.bound_address)    # [0, 128) missing
        _arrived(transport)
        assert spin.backoff(2, 1, receives=4, statuses=4) == 0
        assert (spin.receives, dispatcher.gaps) == (1, 1) and spin.statuses >= 1
        [nak] = rig.received()
        assert (nak.term_offset, nak.length) == (0, 128) and rig.loss.gap_open
        # not every image with readers has its pass: the gap ends the probes, for the whole cycle's loss scan
        spin.set([], [transport.fileno()], receives=receives, groups=groups)
        rig.control.sendto(data_frame(256, b"h" * 32), transport.bound_address)
        _arrived(transport)
        assert spin.backoff(2, 1, receives=4, statuses=4) == PROBE_OTHER
    finally:
        transport.close()


def test_groups_with_a_rebuild_pass_are_checked(rebuilding):
    rig, reader = rebuilding
    spin = DataSpin()
    spin.set_watch(groups=[(1, [reader], None)])             # None: a plain group
    for bad in [(1, [reader], "pass"), (1, [reader], rig.rebuild, 4)]:
        with pytest.raises(InvalidArgumentError):
            spin.set_watch(groups=[bad])
    with pytest.raises(InvalidArgumentError):
        spin.backoff(1, 1, statuses=-1)


@pytest.fixture
def round_trip(receiving, shm_dir):
    """A bound send pass of one publication (session and stream of the rig's image) aimed at the rig's transport, a
    DataSpin watching both, and a subscriber's waiter parked on the dispatcher's wake board: (rig, publication, spin,
    waiter, transport)."""
    from tests._core.test_send_pass import _transport
    rig, transport, _ = receiving
    out = _transport()
    board = open_board(str(shm_dir), create=True)
    waiter = new_waiter(board, stream_bit(STREAM), futex=True)
    rig.dispatcher.set_wake_board(board)
    rig.state.set_connections([(DESTINATION, address_key(out.bound_address), 0)])
    publication = Publication(SESSION)
    send_pass = _pass_of(publication)
    send_pass.bind(out, transport.bound_address, AtomicCounter(AtomicBuffer(bytearray(COUNTER_LENGTH)), 0))
    publication.send_pass = send_pass
    publication.out = out                   # the socket its pass sends from (the image's one connection)
    spin = DataSpin()
    spin.set_sockets([send_pass], [transport.fileno()], 0, [(rig.dispatcher, transport, DESTINATION)])
    yield rig, publication, spin, waiter, transport
    waiter.close()
    rig.dispatcher.set_wake_board(None)
    board.close()
    out.close()


def _offer(publication, offset, payload):
    """A frame of the rig's image's stream written at ``offset`` of the first term and let go (snd-lmt past it)."""
    frame = data_frame(offset, payload)
    publication.raw[0][offset:offset + len(frame)] = frame
    publication.snd_lmt.set_ordered(offset + len(frame))
    return frame


def test_run_data_sends_receives_inserts_and_wakes_in_one_call(round_trip):
    rig, publication, spin, waiter, _ = round_trip
    assert spin.run_data(0) == 0 and not spin.handed_back and spin.rounds >= 1     # nothing offered: time up
    for offset in (0, 64):
        waiter.prepare()
        frame = _offer(publication, offset, bytes([offset]) * 32)
        assert spin.run_data(10_000_000_000) == 1
        assert (spin.sends, spin.sent, spin.receives, spin.received) == (1, len(frame), 1, 1)
        assert (spin.handed_back, spin.unsignalled, spin.data_idle_ns) == (False, 0, 0)
        assert rig[HWM] == offset + len(frame) and rig.terms[0].get_bytes(offset, len(frame)) == frame
        # woken by the pass itself; the next message wakes it again (the mask taken after each pass)
        assert waiter.wait(10_000_000_000) is True
    assert publication.snd_pos.get() == 128


def test_run_data_reads_the_socket_a_send_lands_on_whatever_the_order(round_trip, udp):
    # a ping-pong's driver: one endpoint per direction, the other one's socket empty when a message is sent
    rig, publication, spin, waiter, transport = round_trip
    values = AtomicBuffer(bytearray(COUNTER_LENGTH * 5))
    quiet = UdpTransport(socket.socket(fileno=udp().detach()), batch=4)
    try:
        quiet_dispatcher = DataPacketDispatcher(*(AtomicCounter(values, i) for i in range(5)))
        for order in ("quiet first", "quiet last"):
            receives = [(rig.dispatcher, transport, DESTINATION), (quiet_dispatcher, quiet, DESTINATION)]
            fds = [transport.fileno(), quiet.fileno()]
            if order == "quiet first":
                receives.reverse()
                fds.reverse()
            spin.set_sockets([publication.send_pass], fds, 0, receives)
            offset = 0 if order == "quiet first" else 64
            waiter.prepare()
            frame = _offer(publication, offset, bytes([offset + 1]) * 32)
            assert spin.run_data(10_000_000_000) == 1, order
            assert (spin.handed_back, spin.sends, spin.receives, spin.received) == (False, 1, 1, 1), order
            assert rig[HWM] == offset + len(frame) and waiter.wait(10_000_000_000) is True
    finally:
        quiet.close()


def _quiet_socket(udp):
    """A receive socket with its own dispatcher (no image: what it reads is counted and dropped or left as an event)."""
    values = AtomicBuffer(bytearray(COUNTER_LENGTH * 5))
    quiet = UdpTransport(socket.socket(fileno=udp().detach()), batch=4)
    return DataPacketDispatcher(*(AtomicCounter(values, i) for i in range(5))), quiet


def _readable(transport):
    return bool(select.select([transport.fileno()], [], [], 0)[0])


def test_after_a_send_only_the_socket_it_lands_on_is_read_the_others_at_the_next_poll(round_trip, udp):
    rig, publication, spin, waiter, transport = round_trip
    quiet_dispatcher, quiet = _quiet_socket(udp)
    peer = udp()
    try:
        spin.set_sockets([publication.send_pass], [quiet.fileno(), transport.fileno()], 0,
                         [(quiet_dispatcher, quiet, DESTINATION), (rig.dispatcher, transport, DESTINATION)])
        peer.sendto(b"x" * 8, quiet.bound_address)            # too short for a frame: read, counted, dropped
        _arrived(quiet)
        waiter.prepare()
        frame = _offer(publication, 0, b"s" * 32)
        # one pass: the send, then its own socket alone (one system call, not one per socket)
        assert spin.run_data(10_000_000_000) == 1
        assert (spin.handed_back, spin.sends, spin.receives, spin.received) == (False, 1, 1, 1)
        assert rig[HWM] == len(frame) and waiter.wait(10_000_000_000) is True
        assert _readable(quiet)
        # the next round polls every socket and reads the quiet one
        assert spin.run_data(10_000_000_000) == 1
        assert (spin.sends, spin.receives, spin.received) == (0, 1, 1) and not _readable(quiet)
    finally:
        quiet.close()


def test_after_a_send_its_socket_is_read_for_as_many_datagrams_as_it_sent(round_trip, udp):
    # no attempt at one more (the kernel's look into an empty socket); what else waits there, the next poll reads
    rig, publication, spin, waiter, transport = round_trip
    peer = udp()
    peer.sendto(b"x" * 8, transport.bound_address)           # ahead of the send's own datagram
    _arrived(transport)
    frame = _offer(publication, 0, b"m" * 32)
    assert spin.run_data(10_000_000_000) == 1
    assert (spin.sends, spin.received) == (1, 1) and rig[HWM] == 0 and _readable(transport)
    assert spin.run_data(10_000_000_000) == 1
    assert (spin.sends, spin.received) == (0, 1) and rig[HWM] == len(frame) and not _readable(transport)


def test_a_send_to_no_socket_of_this_thread_reads_none(round_trip, udp):
    rig, publication, spin, waiter, transport = round_trip
    remote, peer = udp(), udp()
    publication.send_pass.bind(publication.out, remote.getsockname(),
                               AtomicCounter(AtomicBuffer(bytearray(COUNTER_LENGTH)), 0))
    peer.sendto(b"x" * 8, transport.bound_address)
    _arrived(transport)
    _offer(publication, 0, b"r" * 32)
    assert spin.run_data(10_000_000_000) == 1
    assert (spin.handed_back, spin.sends, spin.receives, spin.received) == (False, 1, 0, 0)
    assert _readable(transport) and len(remote.recv(2048)) == 64     # waits for the next poll; sent where aimed
    assert spin.run_data(10_000_000_000) == 1 and (spin.sends, spin.received) == (0, 1)


def test_two_sends_with_no_poll_between_read_every_socket(round_trip, udp):
    # a stream offered in every round skips the poll: the second send in a row reads every socket, so that no other
    # socket's datagrams wait behind it for as long as it keeps coming
    rig, streamed, spin, waiter, transport = round_trip
    quiet_dispatcher, quiet = _quiet_socket(udp)
    peer = udp()
    publication = Publication(SESSION, max_messages=1)       # one datagram per pass: two offered, two passes
    send_pass = _pass_of(publication)
    send_pass.bind(streamed.out, transport.bound_address, AtomicCounter(AtomicBuffer(bytearray(COUNTER_LENGTH)), 0))
    try:
        spin.set_sockets([send_pass], [transport.fileno(), quiet.fileno()], 0,
                         [(rig.dispatcher, transport, DESTINATION), (quiet_dispatcher, quiet, DESTINATION)])
        peer.sendto(b"x" * 8, quiet.bound_address)
        _arrived(quiet)
        _offer(publication, 0, b"a" * 32)
        _offer(publication, 64, b"b" * 32)
        assert spin.run_data(10_000_000_000, 10_000_000_000, 2, 10_000_000_000) == 2
        assert (spin.sends, spin.receives, spin.received) == (2, 3, 3) and rig[HWM] == 128
        assert not _readable(quiet)
    finally:
        quiet.close()


def test_run_data_spins_on_after_data_within_its_budget(round_trip):
    rig, publication, spin, waiter, _ = round_trip

    def offer_second():
        deadline = time.monotonic() + 10
        while rig[HWM] < 64 and time.monotonic() < deadline:
            time.sleep(0.001)
        _offer(publication, 64, b"b" * 32)

    second = threading.Thread(target=offer_second)
    second.start()
    try:
        _offer(publication, 0, b"a" * 32)
        # two passes with data (the second message came while it spun on), then its budget is spent
        assert spin.run_data(10_000_000_000, 10_000_000_000, 2, 10_000_000_000) == 2
    finally:
        second.join()
    assert rig[HWM] == 128 and spin.data_idle_ns == 0 and (spin.sends, spin.receives) == (2, 2)
    _offer(publication, 128, b"c" * 32)
    # one pass, then nothing for the spin after it: how long it waited is said
    assert spin.run_data(10_000_000_000, 2_000_000, 8, 10_000_000_000) == 1 and spin.data_idle_ns >= 2_000_000
    _offer(publication, 192, b"d" * 32)
    assert spin.run_data(10_000_000_000, 2_000_000, 8, 0) == 1 and spin.data_idle_ns == 0    # no time to defer
    with pytest.raises(InvalidArgumentError):
        spin.run_data(0, 0, 0)


def test_run_data_hands_back_what_needs_python(round_trip, udp):
    rig, publication, spin, waiter, transport = round_trip
    peer = udp()
    unknown = data_frame(0, b"u" * 32, session_id=SESSION + 1)
    peer.sendto(unknown, transport.bound_address)
    _arrived(transport)
    # an unknown session: read (a pass that moved data) and left for the endpoint (its slot unread again), the spin
    # stops there
    assert spin.run_data(10_000_000_000) == 1 and spin.handed_back and spin.event_index == 0
    assert rig.dispatcher.event_count == 1 and spin.received == 1
    # a readable socket without a receive pass: left unread for the caller
    spin.set_sockets([], [transport.fileno()], 0, [None])
    peer.sendto(data_frame(0, b"x" * 32), transport.bound_address)
    _arrived(transport)
    assert spin.run_data(10_000_000_000) == 0 and spin.handed_back and spin.received == 0
    assert select.select([transport.fileno()], [], [], 0)[0]
    transport.receive_batch()
    # a pass with nowhere to go (unbound): its data left for the caller to send
    unbound = _pass_of(publication)
    spin.set_sockets([unbound], [])
    _offer(publication, 0, b"v" * 32)
    assert spin.run_data(10_000_000_000) == 0 and spin.handed_back and spin.sends == 0
    assert publication.snd_pos.get() == 0
