# SPDX-License-Identifier: Apache-2.0
"""Test doubles for driving the driver's network side without sockets or threads: a manual clock, a counters
buffer with the system counters, a transport with UdpTransport's batch API that records what is sent and hands
back queued datagrams, and builders for publications, images, endpoints and the agents with their proxies.

The endpoints, publications, images, Sender and Receiver under test are the real classes; only the socket, the
clock and the conductor's counters are replaced."""
from __future__ import annotations

import collections
from typing import Any

from aeron._core import counters as ctr
from aeron._core import frames
from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.counters import AtomicCounter
from aeron._core.logbuffer import LogBuffers
from aeron._core.term_appender import ConcurrentTermAppender
from aeron._core.term_scanner import scan_for_availability
from aeron.driver.congestion_control import congestion_control_for
from aeron.driver.flow_control import flow_control_for
from aeron.driver.loss_detector import StaticDelayGenerator
from aeron.driver.network_publication import NetworkPublication
from aeron.driver.proxies import CommandQueue, DriverConductorProxy, ReceiverProxy, SenderProxy
from aeron.driver.publication_image import PublicationImage
from aeron.driver.receive_channel_endpoint import ReceiveChannelEndpoint
from aeron.driver.receiver import Receiver
from aeron.driver.send_channel_endpoint import SendChannelEndpoint
from aeron.driver.sender import Sender
from aeron.driver.udp_channel import UdpChannel

MS = 1_000_000
TERM_LENGTH = 65536
MTU = 1408
PUBLISHER = ("127.0.0.1", 40124)            # where a publication's datagrams come from
SUBSCRIBER = ("127.0.0.1", 40123)           # the subscription channel's endpoint
CHANNEL = f"aeron:udp?endpoint={SUBSCRIBER[0]}:{SUBSCRIBER[1]}"


class ManualClock:
    """An injected nano clock: time moves only when the test moves it."""

    def __init__(self, start_ns: int = 1_000 * MS) -> None:
        self.now_ns = start_ns

    def __call__(self) -> int:
        return self.now_ns

    def advance(self, delta_ns: int) -> int:
        self.now_ns += delta_ns
        return self.now_ns


class Counters:
    """A private counters values buffer: ``system`` maps every system counter id to its AtomicCounter, as the
    conductor's ``system`` dict; ``allocate`` hands out further counters after them."""

    def __init__(self, capacity: int = 256) -> None:
        self.values = AtomicBuffer(bytearray(ctr.COUNTER_LENGTH * capacity))
        self.system = {i: AtomicCounter(self.values, i) for i in range(ctr.SYSTEM_COUNTER_COUNT)}
        self._next = ctr.SYSTEM_COUNTER_COUNT

    def allocate(self) -> tuple[int, AtomicCounter]:
        counter_id = self._next
        self._next += 1
        return counter_id, AtomicCounter(self.values, counter_id)

    def stream(self, *names: str) -> dict[str, AtomicCounter]:
        """A resource's stream counters keyed by the constructor argument each is passed as
        (``{"rcv_hwm": counter, ...}``)."""
        return {name: self.allocate()[1] for name in names}

    def __getitem__(self, system_counter_id: int) -> int:
        return self.system[system_counter_id].get()


class FakeTransport:
    """UdpTransport's send and batch-receive API without a socket.

    ``deliver(datagram, source)`` queues a datagram; ``receive_batch`` moves up to ``batch`` of them into the slots
    (as one recvmmsg would) and ``length``/``source`` describe each. Every datagram sent, by ``send`` or by the
    scan-and-send ``send_term_batch``, is recorded in ``sent`` as ``(bytes, address)``."""

    def __init__(self, bound_address: tuple = SUBSCRIBER, batch: int = 8, slot_length: int = 65504) -> None:
        self.bound_address = bound_address
        self.batch = batch
        self.slots = [bytearray(slot_length) for _ in range(batch)]
        self.inbox: collections.deque[tuple[bytes, tuple]] = collections.deque()
        self.sent: list[tuple[bytes, tuple]] = []
        self.is_closed = False
        self._received: list[tuple[int, tuple]] = []

    def deliver(self, datagram: bytes, source: tuple = PUBLISHER) -> None:
        self.inbox.append((bytes(datagram), source))

    def receive_batch(self) -> int:
        self._received = []
        while self.inbox and len(self._received) < self.batch:
            datagram, source = self.inbox.popleft()
            slot = self.slots[len(self._received)]
            slot[:len(datagram)] = datagram
            self._received.append((len(datagram), source))
        return len(self._received)

    def length(self, slot: int) -> int:
        return self._received[slot][0]

    def source(self, slot: int) -> tuple:
        return self._received[slot][1]

    def send(self, data: Any, address: tuple) -> int:
        payload = bytes(data)
        self.sent.append((payload, address))
        return len(payload)

    def send_term_batch(self, term: AtomicBuffer, term_offset: int, window: int, mtu: int, max_datagrams: int,
                        address: tuple) -> tuple[int, int]:
        sent = advance = 0
        offset = term_offset
        remaining = window
        count = 0
        while count < max_datagrams and remaining > 0 and offset < term.capacity:
            available, padding = scan_for_availability(term, offset, min(mtu, remaining))
            if available <= 0:
                break
            self.sent.append((term.get_bytes(offset, available), address))
            count += 1
            sent += available
            advance += available + padding
            offset += available + padding
            remaining -= available + padding
        return sent, advance

    def close(self) -> None:
        self.is_closed = True

    def sent_of_type(self, frame_type: int) -> list[bytes]:
        """The datagrams sent whose first frame is of ``frame_type`` (heartbeats count as DATA)."""
        return [data for data, _ in self.sent if frames.validate_frame(data) == frame_type]


class SubscriberLink:
    """What an image or spy keeps per subscription: its sub-pos counter, and its tether state (a tethered one)."""

    def __init__(self, position: AtomicCounter) -> None:
        self.position = position
        self.state = "ACTIVE"           # untethered.TETHER_ACTIVE: holds the image back


def send_endpoint(counters: Counters, transport: FakeTransport, channel: str = CHANNEL) -> SendChannelEndpoint:
    status_id, status = counters.allocate()
    return SendChannelEndpoint(UdpChannel.parse(channel), transport, 1, status_id, status, status_id + 1000,
                               counters.system)


def receive_endpoint(counters: Counters, transport: FakeTransport, on_setup: Any, channel: str = CHANNEL,
                     group_tag: int | None = None, unconfirmed: Any = None) -> ReceiveChannelEndpoint:
    """``on_setup(endpoint, setup fields, control address, source)`` stands for the conductor proxy; ``unconfirmed``
    the endpoint's UnconfirmedImages (the defaults when None)."""
    status_id, status = counters.allocate()
    return ReceiveChannelEndpoint(UdpChannel.parse(channel, is_subscription=True), transport, 2, status_id, status,
                                  status_id + 1000, counters.system, on_setup, group_tag=group_tag,
                                  unconfirmed=unconfirmed)


def network_publication(tmp_path, counters: Counters, endpoint: Any, clock: ManualClock, *, session_id: int = 7,
                        stream_id: int = 1001, initial_term_id: int = 100, channel: str = CHANNEL,
                        is_group: bool = False, max_retransmits: int = 1,
                        connection_timeout_ns: int = 5_000 * MS, signal_eos: bool = True,
                        name: str = "pub",
                        flow_control: Any = None) -> tuple[NetworkPublication, ConcurrentTermAppender]:
    """A unicast publication of one 64 KiB-term log, and an appender that offers into it within pub-lmt; its flow
    control the channel's default unless given."""
    log = LogBuffers.create(str(tmp_path / f"{name}.logbuffer"), term_length=TERM_LENGTH,
                            initial_term_id=initial_term_id, session_id=session_id, stream_id=stream_id,
                            mtu_length=MTU, correlation_id=10)
    udp = UdpChannel.parse(channel)
    stream_counters = counters.stream("pub_pos", "pub_lmt", "snd_pos", "snd_lmt", "snd_bpe", "snd_naks_received")
    publication = NetworkPublication(
        registration_id=10, owner_client_id=1, session_id=session_id, stream_id=stream_id, channel=channel,
        is_exclusive=False, log=log, endpoint=endpoint, **stream_counters,
        flow_control=flow_control if flow_control is not None else flow_control_for(channel, None,
                                                                                       udp.has_group_semantics),
        window_length=TERM_LENGTH // 2,
        linger_timeout_ns=5_000 * MS, unblock_timeout_ns=15_000 * MS, connection_timeout_ns=connection_timeout_ns,
        signal_eos=signal_eos, spies_simulate_connection=False, max_retransmits=max_retransmits, ttl=0,
        is_group=is_group, now_ns=clock(), system=counters.system)
    appender = ConcurrentTermAppender(log, counters.values, publication.pub_lmt_id * ctr.COUNTER_LENGTH)
    return publication, appender


def publication_image(tmp_path, counters: Counters, endpoint: ReceiveChannelEndpoint, clock: ManualClock, *,
                      session_id: int = 7, stream_id: int = 1001, initial_term_id: int = 100,
                      join_position: int = 0, nak_delay_ns: int = 1 * MS, initial_window: int = 128 * 1024,
                      is_reliable: bool = True, name: str = "image",
                      unconfirmed_hold: Any = None) -> tuple[PublicationImage, AtomicCounter]:
    """An image joined at ``join_position`` with one subscriber (holding ``unconfirmed_hold`` of its endpoint's
    unconfirmed images' budget, if given); returns it and the subscriber's position."""
    log = LogBuffers.create(str(tmp_path / f"{name}.logbuffer"), term_length=TERM_LENGTH,
                            initial_term_id=initial_term_id, session_id=session_id, stream_id=stream_id,
                            mtu_length=MTU, correlation_id=20, term_id=initial_term_id + join_position // TERM_LENGTH,
                            term_offset=join_position % TERM_LENGTH, start_at_position=True)
    image = PublicationImage(
        correlation_id=20, session_id=session_id, stream_id=stream_id, endpoint=endpoint, log=log,
        source_identity=f"{PUBLISHER[0]}:{PUBLISHER[1]}", control_address=PUBLISHER, join_position=join_position,
        **counters.stream("rcv_hwm", "rcv_pos", "rcv_naks_sent"),
        congestion_control=congestion_control_for(None, TERM_LENGTH, MTU, initial_window),
        loss_delay=StaticDelayGenerator(nak_delay_ns, 10 * nak_delay_ns), is_reliable=is_reliable,
        liveness_timeout_ns=10_000 * MS, system=counters.system, loss_report=None, channel=CHANNEL, now_ns=clock(),
        unconfirmed_hold=unconfirmed_hold)
    _, subscriber = counters.allocate()
    subscriber.set(join_position)
    image.subscribers[1] = SubscriberLink(subscriber)
    return image, subscriber


class CountingScans:
    """Stands in for an image's loss detector, counting the Python path's scans (``calls``): the compiled
    detector's methods cannot be patched."""

    def __init__(self, detector: Any) -> None:
        self.detector = detector
        self.calls: list[tuple] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.detector, name)

    def scan(self, *args: Any) -> Any:
        self.calls.append(args)
        return self.detector.scan(*args)


def data_frame(term_offset: int, payload: bytes, *, session_id: int = 7, stream_id: int = 1001,
               term_id: int = 100, flags: int = frames.UNFRAGMENTED) -> bytes:
    """One DATA frame as a sender transmits it: header, payload, zero padding to 32 bytes."""
    frame_length = frames.DATA_HEADER_LENGTH + len(payload)
    out = bytearray((frame_length + 31) & ~31)
    frames.encode_heartbeat(out, 0, session_id, stream_id, term_id, term_offset, flags)
    out[0:4] = frame_length.to_bytes(4, "little")
    out[frames.DATA_HEADER_LENGTH:frame_length] = payload
    return bytes(out)


def setup_frame(*, session_id: int = 7, stream_id: int = 1001, initial_term_id: int = 100, active_term_id: int = 100,
                term_offset: int = 0, term_length: int = TERM_LENGTH, mtu: int = MTU) -> bytes:
    out = bytearray(frames.SETUP_HEADER_LENGTH)
    frames.encode_setup(out, 0, session_id, stream_id, initial_term_id, active_term_id, term_offset, term_length, mtu)
    return bytes(out)


def status_message(*, session_id: int = 7, stream_id: int = 1001, term_id: int = 100, term_offset: int = 0,
                   window: int = 32768, receiver_id: int = 99, group_tag: int | None = None, flags: int = 0) -> bytes:
    out = bytearray(frames.SM_WITH_GROUP_TAG_LENGTH if group_tag is not None else frames.SM_HEADER_LENGTH)
    frames.encode_status_message(out, 0, session_id, stream_id, term_id, term_offset, window, receiver_id,
                                 group_tag, flags)
    return bytes(out)


def nak(*, session_id: int = 7, stream_id: int = 1001, term_id: int = 100, term_offset: int = 0,
        length: int = 64) -> bytes:
    out = bytearray(frames.NAK_HEADER_LENGTH)
    frames.encode_nak(out, 0, session_id, stream_id, term_id, term_offset, length)
    return bytes(out)


class Agents:
    """A Sender and a Receiver wired to each other's proxies as the conductor wires them, with the conductor's
    command queue drained by the test (``run_conductor_commands``) and created images recorded."""

    def __init__(self, counters: Counters, clock: ManualClock, runs_on_caller_thread: bool = False) -> None:
        self.conductor_queue = CommandQueue(producers=2)
        self.image_requests: list[tuple] = []
        self.conductor_proxy = DriverConductorProxy(
            self.conductor_queue, lambda *request: self.image_requests.append(request),
            counters.system[ctr.CONDUCTOR_PROXY_FAILS], runs_on_caller_thread)
        self.sender = Sender(clock, counters.system, self.conductor_proxy)
        self.receiver = Receiver(clock, counters.system, self.conductor_proxy)
        self.sender_proxy = SenderProxy(self.sender, counters.system[ctr.SENDER_PROXY_FAILS], runs_on_caller_thread)
        self.receiver_proxy = ReceiverProxy(self.receiver, counters.system[ctr.RECEIVER_PROXY_FAILS],
                                            runs_on_caller_thread)

    def run_conductor_commands(self) -> int:
        return self.conductor_queue.drain(1_000_000)
