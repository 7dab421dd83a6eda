# SPDX-License-Identifier: Apache-2.0
"""ReceiveChannelEndpoint and its data packet dispatcher: the socket of one receive channel, the streams
subscribed on it, and the images being rebuilt (aeron_receive_channel_endpoint.c,
aeron_data_packet_dispatcher.c). DATA and PAD go to their image; a SETUP for a wanted stream asks the conductor
for a new image; data from an unknown session elicits a SETUP with a status message (flag 0x80).

Hostile input is bounded here: the state kept for sessions that never sent a SETUP expires (swept every
SWEEP_INTERVAL_NS), the SETUP-eliciting replies to whatever source a datagram claims are limited to
ELICIT_REPLY_LIMIT per SWEEP_INTERVAL_NS per endpoint (so the pending state is bounded too), the images of one
stream are limited to the driver's stream session limit (aeron.driver.stream.session.limit, as the C dispatcher's
stream_session_limit), a SETUP beyond it logged as an error, and the images whose source has sent nothing but a
SETUP yet are bounded per endpoint and per source (UnconfirmedImages, unconfirmed_images.py)."""
from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

from aeron._core import counters as ctr
from aeron._core.data_dispatcher import (
    DISPATCH_HANDLED, DISPATCH_SETUP_FRAME, DISPATCH_TO_IMAGE, DataPacketDispatcher,
)
from aeron._core.frames import (
    DATA_HEADER_LENGTH, EOS_FLAG, RTTM_HEADER_LENGTH, RTTM_REPLY_FLAG, SM_HEADER_LENGTH, SM_SEND_SETUP_FLAG,
    SM_WITH_GROUP_TAG_LENGTH, RttmFrame, SetupFrame, decode_data_header, decode_frame, encode_rttm,
    encode_status_message,
)
from aeron._core.term_scanner import validate_data_packet
from aeron._core.wakeup import stream_bit
from aeron.common.constants import INT64_MAX
from aeron.common.errors import ErrorCode
from aeron._core.udp_transport import UdpTransport
from aeron.driver.receive_destination import ReceiveDestination, source_key
from aeron.driver.udp_channel import UdpChannel
from aeron.driver.udp_channel_transport import LossyTransport
from aeron.driver.unconfirmed_images import UnconfirmedImages

if TYPE_CHECKING:
    from aeron.driver.publication_image import PublicationImage

DATA_DRAIN_LIMIT = 64
PENDING_SETUP_TIMEOUT_NS = 1_000_000_000
ELICIT_INTERVAL_NS = 1_000_000_000
PENDING_SETUP, INIT_IN_PROGRESS, COOL_DOWN = "PENDING_SETUP", "INIT_IN_PROGRESS", "COOL_DOWN"
COOL_DOWN_TIMEOUT_NS = 1_000_000_000
SWEEP_INTERVAL_NS = 100_000_000
# at most this many SETUP-eliciting replies per sweep interval: a flood of DATA with made-up sessions gets a bounded
# trickle of status messages, and a real sender is not waiting on them (it sends SETUPs until it hears one)
ELICIT_REPLY_LIMIT = 64
DEFAULT_STREAM_SESSION_LIMIT = 1024
_next_receiver_id = random.getrandbits(63)


def next_receiver_id() -> int:
    global _next_receiver_id
    _next_receiver_id = (_next_receiver_id + 1) & INT64_MAX
    return _next_receiver_id


class StreamInterest:
    __slots__ = ("subscription_count", "session_subscriptions", "sessions", "image_count")

    def __init__(self) -> None:
        self.subscription_count = 0                   # subscriptions for every session of the stream
        self.session_subscriptions: dict[int, int] = {}
        self.sessions: dict[int, Any] = {}            # session id -> PublicationImage or (state, since_ns)
        self.image_count = 0                          # images and images being made (INIT_IN_PROGRESS)

    def wants(self, session_id: int) -> bool:
        return self.subscription_count > 0 or self.session_subscriptions.get(session_id, 0) > 0


class ReceiveChannelEndpoint:
    def __init__(self, udp_channel: UdpChannel, transport: UdpTransport | None, registration_id: int,
                 status_counter_id: int, status: Any, local_sockaddr_counter_id: int | None, system: dict[int, Any],
                 on_setup: Any, group_tag: int | None = None,
                 stream_session_limit: int = DEFAULT_STREAM_SESSION_LIMIT, on_error: Any = None,
                 unconfirmed: UnconfirmedImages | None = None) -> None:
        self.udp_channel = udp_channel
        # a plain subscription has its own channel as its one destination; a multi-destination subscription
        # (control-mode=manual, transport None) gains them by ADD_RCV_DESTINATION
        self.destinations: list[ReceiveDestination] = (
            [ReceiveDestination(udp_channel, transport, None)] if transport is not None else [])
        self.registration_id = registration_id
        self.status_counter_id = status_counter_id
        self.status = status
        self.local_sockaddr_counter_id = local_sockaddr_counter_id
        self.system = system
        self.receiver_id = next_receiver_id()
        self.group_tag = group_tag
        self.streams: dict[int, StreamInterest] = {}
        self.images: list[PublicationImage] = []
        self.ref_count = 0
        self.receiver_released = False                # the receiver has dropped it: the conductor may close it
        # (endpoint, setup fields, control address, source): DriverConductorProxy.create_publication_image
        self._on_setup = on_setup
        # SETUP-eliciting status messages carry the group tag too: tagged flow control counts only matching requests
        self._elicit = bytearray(SM_HEADER_LENGTH if group_tag is None else SM_WITH_GROUP_TAG_LENGTH)
        self._rttm_reply = bytearray(RTTM_HEADER_LENGTH)
        # SMs and NAKs go to the control group (multicast) or the explicit control address; else to the source
        self.control_address = udp_channel.remote_control
        self._time_of_last_elicit_ns = 0
        # when the receiver last read the sockets (0: not yet): its images' liveness is judged against it
        self.time_of_last_poll_ns = 0
        self.stream_session_limit = stream_session_limit
        self._on_error = on_error                     # (code, text): the conductor's distinct error log
        # what images not confirmed by their source yet may hold (shared with the conductor, which releases)
        self.unconfirmed = unconfirmed if unconfirmed is not None else UnconfirmedImages()
        self._time_of_last_sweep_ns = 0
        self._elicit_replies_left = ELICIT_REPLY_LIMIT
        self._bytes_received = system[ctr.BYTES_RECEIVED]
        self._bytes_sent = system[ctr.BYTES_SENT]
        self._invalid = system[ctr.INVALID_PACKETS]
        # DATA and PAD of the images here are validated and inserted in compiled code, a batch per call
        self._dispatcher = DataPacketDispatcher(
            self._bytes_received, self._invalid, system[ctr.HEARTBEATS_RECEIVED], system[ctr.FLOW_CONTROL_OVER_RUNS],
            system[ctr.FLOW_CONTROL_UNDER_RUNS])
        self._data_mask = 0                           # wake-up bits of data inserted from Python (rare)
        self.unsignalled_mask = 0                     # of the last take_data_mask(): the bits still to signal
        # data went into an image since the last take_data_mask(): the receiver takes the mask only then
        self.data_pending = False
        # when elicit_setups or sweep next has something to do (0: at once): the receiver calls run_timers only then
        self.timers_due_ns = 0
        self.status.set_ordered(ctr.CHANNEL_ENDPOINT_STATUS_ACTIVE)

    @property
    def transport(self) -> UdpTransport:
        return self.destinations[0].transport

    @property
    def is_multi_destination(self) -> bool:
        return self.udp_channel.is_manual_control_mode

    # -- destinations (receiver thread, on conductor commands) --------------------------------------------------
    def add_destination(self, destination: ReceiveDestination, now_ns: int) -> None:
        destination.time_of_last_activity_ns = now_ns
        self.destinations.append(destination)
        if destination.has_explicit_control and self.streams:
            self._elicit_setup(destination, 0, 0)         # announce at once, not at the next elicit interval
        for image in self.images:
            image.add_destination(destination, now_ns)

    def remove_destination(self, destination: ReceiveDestination) -> None:
        if destination in self.destinations:
            self.destinations.remove(destination)
        for image in self.images:
            image.remove_destination(destination)

    # -- conductor thread --------------------------------------------------------------------------------------
    def incref(self) -> None:
        self.ref_count += 1

    def decref(self) -> int:
        """One subscription fewer on this channel; returns how many are left."""
        self.ref_count -= 1
        return self.ref_count

    # -- interest (receiver thread, on conductor commands) -----------------------------------------------------
    def add_subscription(self, stream_id: int, session_id: int | None) -> None:
        self.timers_due_ns = 0                        # a first stream starts the SETUP-eliciting timer
        interest = self.streams.setdefault(stream_id, StreamInterest())
        if session_id is None:
            interest.subscription_count += 1
        else:
            interest.session_subscriptions[session_id] = interest.session_subscriptions.get(session_id, 0) + 1

    def remove_subscription(self, stream_id: int, session_id: int | None) -> None:
        interest = self.streams.get(stream_id)
        if interest is None:
            return
        if session_id is None:
            interest.subscription_count = max(0, interest.subscription_count - 1)
        else:
            left = interest.session_subscriptions.get(session_id, 0) - 1
            if left > 0:
                interest.session_subscriptions[session_id] = left
            else:
                interest.session_subscriptions.pop(session_id, None)
        if interest.subscription_count == 0 and not interest.session_subscriptions:
            del self.streams[stream_id]

    def add_image(self, image: PublicationImage) -> None:
        interest = self.streams.get(image.stream_id)
        if interest is not None:
            state = interest.sessions.get(image.session_id)
            if not (isinstance(state, tuple) and state[0] == INIT_IN_PROGRESS):
                interest.image_count += 1             # INIT_IN_PROGRESS was counted when the SETUP came
            interest.sessions[image.session_id] = image
        self.images.append(image)
        if image.receive_state is not None:
            self._dispatcher.add(image.receive_state)

    def remove_image(self, image: PublicationImage, now_ns: int, rejoin: bool = True) -> None:
        if image in self.images:
            self.images.remove(image)
        if image.receive_state is not None:
            self._dispatcher.remove(image.receive_state)
        interest = self.streams.get(image.stream_id)
        if interest is not None and interest.sessions.get(image.session_id) is image:
            interest.image_count -= 1
            if rejoin:
                del interest.sessions[image.session_id]
            else:
                interest.sessions[image.session_id] = (COOL_DOWN, now_ns)

    def on_image_init_failed(self, stream_id: int, session_id: int, now_ns: int) -> None:
        interest = self.streams.get(stream_id)
        if interest is not None:
            state = interest.sessions.get(session_id)
            if isinstance(state, tuple) and state[0] == INIT_IN_PROGRESS:
                interest.image_count -= 1
            interest.sessions[session_id] = (COOL_DOWN, now_ns)

    # -- data path (receiver thread) ----------------------------------------------------------------------------
    def poll(self, now_ns: int) -> int:
        """Drain every destination's socket (at most DATA_DRAIN_LIMIT datagrams each): one compiled call per batch
        for a UdpTransport (with or without a compiled loss generator); otherwise a compiled call per datagram.
        Returns the work: datagrams, bytes inserted, replies sent."""
        self.time_of_last_poll_ns = now_ns
        work = 0
        for destination in self.destinations:
            transport = destination.transport
            if type(transport) is UdpTransport:
                # the first batch here: an empty socket (most polls of an idle or waiting receiver) costs one call
                received = self._dispatcher.poll(transport, destination.dispatch_id, now_ns, None)  # GIL released
                if received == 0:
                    continue
                count, done = self._poll_batches(destination, transport, None, now_ns, received)
            elif isinstance(transport, LossyTransport) and transport.compiled is not None:
                count, done = self._poll_batches(destination, transport.inner, transport, now_ns, -1)
            else:
                count, done = self._poll_datagrams(destination, transport, now_ns)
            if count:
                destination.time_of_last_activity_ns = now_ns
            work += count + done
        return work

    def set_wake_board(self, board: Any) -> None:
        """Wake subscribers from the compiled receive as soon as their data is in (DataPacketDispatcher); None:
        only through take_data_mask's caller."""
        self._dispatcher.set_wake_board(board)

    def take_data_mask(self) -> int:
        """The wake-up bits of the streams whose images got data since the last call (then cleared): who the
        receiver wakes (docs/wakeup.md)."""
        dispatcher = self._dispatcher
        mask = dispatcher.take_data_mask() | self._data_mask
        self.unsignalled_mask = dispatcher.unsignalled_mask | self._data_mask
        self._data_mask = 0
        self.data_pending = False
        return mask

    def _poll_batches(self, destination: ReceiveDestination, transport: UdpTransport, lossy: LossyTransport | None,
                      now_ns: int, received: int) -> tuple[int, int]:
        """Dispatch batches until the socket has no more or DATA_DRAIN_LIMIT; ``received``: the datagrams of the
        batch the caller has just polled, -1 when it has polled none."""
        dispatcher = self._dispatcher
        loss = lossy.compiled if lossy is not None else None
        count = work = 0
        while count < DATA_DRAIN_LIMIT:
            if received < 0:
                received = dispatcher.poll(transport, destination.dispatch_id, now_ns, loss)   # GIL released
            if received == 0:
                break
            count += received
            inserted = dispatcher.inserted
            if inserted:
                work += inserted
                self.data_pending = True
            if lossy is not None:
                lossy.dropped += dispatcher.dropped
            if dispatcher.event_count:
                work += self._on_events(destination, transport, now_ns)
            if received < transport.batch:
                break       # the socket had no more: what comes later is the next pass's (one recvmmsg, not two)
            received = -1
        return count, work

    def _on_events(self, destination: ReceiveDestination, transport: UdpTransport, now_ns: int) -> int:
        """The datagrams of the dispatcher's last poll that need Python (rare): their slots are valid until the next
        receive on ``transport``."""
        dispatcher = self._dispatcher
        work = 0
        for i in range(dispatcher.event_count):
            slot = dispatcher.event_slot(i)
            work += self._on_event(dispatcher.event_kind(i), transport.slots[slot], transport.length(slot),
                                   transport.source(slot), now_ns, destination)
        return work

    def receive_pass(self, destination: ReceiveDestination) -> tuple[Any, UdpTransport, int] | None:
        """What a compiled probe needs to read ``destination``'s socket itself, one batch at a time, as ``poll`` does
        (aeron._core.data_spin.DataSpin): None where only ``poll`` may (a transport with a loss generator, a test
        double)."""
        transport = destination.transport
        if type(transport) is not UdpTransport:
            return None
        return self._dispatcher, transport, destination.dispatch_id

    def on_probe_events(self, destination: ReceiveDestination, now_ns: int) -> int:
        """The events that a probe's receive pass on ``destination`` left (before anything else reads its socket)."""
        destination.time_of_last_activity_ns = now_ns
        return self._on_events(destination, destination.transport, now_ns)

    def _poll_datagrams(self, destination: ReceiveDestination, transport: Any, now_ns: int) -> tuple[int, int]:
        dispatcher = self._dispatcher
        count = work = 0
        while count < DATA_DRAIN_LIMIT:
            received = transport.receive_batch()
            if received == 0:
                break
            count += received
            slots = transport.slots
            for i in range(received):
                length = transport.length(i)
                if length == 0:
                    continue                              # dropped by a loss generator
                source = transport.source(i)
                kind = dispatcher.dispatch(slots[i], length, source_key(source), destination.dispatch_id, now_ns)
                if dispatcher.inserted:
                    work += dispatcher.inserted
                    self.data_pending = True
                if kind != DISPATCH_HANDLED:
                    work += self._on_event(kind, slots[i], length, source, now_ns, destination)
        return count, work

    def _on_event(self, kind: int, buffer, length: int, source: tuple, now_ns: int,
                  destination: ReceiveDestination) -> int:
        if kind == DISPATCH_TO_IMAGE:
            return self._on_data(buffer, length, source, now_ns, destination)
        if kind == DISPATCH_SETUP_FRAME:
            self._on_setup_frame(decode_frame(buffer, 0, length), source, now_ns, destination)
        else:
            self._on_rttm(decode_frame(buffer, 0, length), source, now_ns, destination)
        return 0

    def _on_data(self, buffer, length: int, source: tuple, now_ns: int,
                 destination: ReceiveDestination | None = None) -> int:
        if destination is None:
            destination = self.destinations[0]
        frame_length, flags, term_offset, session_id, stream_id, term_id = decode_data_header(buffer)
        interest = self.streams.get(stream_id)
        if interest is None:
            return 0
        state = interest.sessions.get(session_id)
        if state is not None and not isinstance(state, tuple):
            image = state
            if validate_data_packet(buffer, length, term_offset, image.term_length) < 0:
                self._invalid.increment_ordered()
                return 0
            is_heartbeat = length == DATA_HEADER_LENGTH and frame_length == 0
            if not is_heartbeat:
                self._data_mask |= stream_bit(stream_id)
                self.data_pending = True
            return image.insert_packet(buffer, length, term_id, term_offset, is_heartbeat, flags, source, now_ns,
                                       destination)
        if not interest.wants(session_id):
            return 0                                  # no state kept: the check is as cheap as a tombstone
        if state is not None:
            kind, since = state
            if kind == INIT_IN_PROGRESS:
                return 0
            if now_ns - since < (COOL_DOWN_TIMEOUT_NS if kind == COOL_DOWN else PENDING_SETUP_TIMEOUT_NS):
                return 0
        if flags & EOS_FLAG or self._elicit_replies_left <= 0:
            return 0                                  # over the reply budget: no reply and no state
        self._elicit_replies_left -= 1
        # an unknown session of a wanted stream: ask its sender for a SETUP
        interest.sessions[session_id] = (PENDING_SETUP, now_ns)
        encode_status_message(self._elicit, 0, session_id, stream_id, 0, 0, 0, self.receiver_id, self.group_tag,
                              SM_SEND_SETUP_FLAG)
        self.send_to(self._elicit, destination.control_address or source, destination)
        return 1

    def _on_setup_frame(self, setup: SetupFrame, source: tuple, now_ns: int,
                        destination: ReceiveDestination | None = None) -> None:
        if destination is None:
            destination = self.destinations[0]
        session_id, stream_id = setup.session_id, setup.stream_id
        interest = self.streams.get(stream_id)
        if interest is None or not interest.wants(session_id):
            return
        state = interest.sessions.get(session_id)
        if state is not None and not isinstance(state, tuple):
            state._connection(destination, source, now_ns)   # another source or destination for an existing image
            return
        if state is not None and state[0] == INIT_IN_PROGRESS:
            return
        if state is not None and state[0] == COOL_DOWN and now_ns - state[1] < COOL_DOWN_TIMEOUT_NS:
            return
        # validate_frame checked term length, term offset and MTU as the C driver does; beyond it: a 32-byte MTU
        # leaves no room for a payload, and an active term before the initial term (wrap-aware) gives a negative
        # join position no sender can reach. Both are counted here instead of failing the image creation as a
        # driver error.
        behind = (setup.active_term_id - setup.initial_term_id) & 0xFFFFFFFF >= 0x80000000
        if setup.mtu <= DATA_HEADER_LENGTH or behind:
            self._invalid.increment_ordered()
            return
        if interest.image_count >= self.stream_session_limit:
            # a flood of SETUPs (forged or not) makes no more images than the limit; each refusal is an observation
            # of one distinct error (its text has no per-event values beyond the stream and limit)
            if self._on_error is not None:
                self._on_error(ErrorCode.GENERIC_ERROR, f"exceeded session limit, stream-id={stream_id} "
                               f"limit={self.stream_session_limit}")
            return
        hold = self.unconfirmed.admit(stream_id, session_id, source, setup.term_length, now_ns)
        if hold is None:
            return                                    # over the unconfirmed images' budget: counted there
        if self.udp_channel.is_multicast and setup.ttl > self.udp_channel.ttl > 0:
            self.system[ctr.POSSIBLE_TTL_ASYMMETRY].increment_ordered()
        interest.sessions[session_id] = (INIT_IN_PROGRESS, now_ns)
        interest.image_count += 1
        self._on_setup(self, {
            "flags": setup.flags, "term_offset": setup.term_offset, "session_id": session_id, "stream_id": stream_id,
            "initial_term_id": setup.initial_term_id, "active_term_id": setup.active_term_id,
            "term_length": setup.term_length, "mtu": setup.mtu, "ttl": setup.ttl, "destination": destination,
            "unconfirmed_hold": hold},
            destination.control_address or source, source)

    def _on_rttm(self, rttm: RttmFrame, source: tuple, now_ns: int,
                 destination: ReceiveDestination | None = None) -> None:
        if destination is None:
            destination = self.destinations[0]
        if rttm.receiver_id not in (0, self.receiver_id):
            return
        session_id, stream_id = rttm.session_id, rttm.stream_id
        interest = self.streams.get(stream_id)
        image = interest.sessions.get(session_id) if interest is not None else None
        if image is None or isinstance(image, tuple):
            return
        if rttm.flags & RTTM_REPLY_FLAG:
            encode_rttm(self._rttm_reply, 0, session_id, stream_id, rttm.echo_timestamp, 0, self.receiver_id)
            self.send_to(self._rttm_reply, destination.control_address or source, destination)
        else:
            image.on_rttm(now_ns, rttm.echo_timestamp, rttm.reception_delta)

    def send_to(self, data, address: tuple, destination: ReceiveDestination | None = None) -> int:
        """Send through ``destination``'s socket (the first destination's when not given)."""
        sent = (destination or self.destinations[0]).transport.send(data, address)
        if sent > 0:
            self._bytes_sent.get_and_add(sent)
        return sent

    def sweep(self, now_ns: int) -> int:
        """Every SWEEP_INTERVAL_NS: forget sessions that were asked for a SETUP and never sent one (after
        PENDING_SETUP_TIMEOUT_NS, as the C receiver's pending setups) and cool-downs that are over, renew the
        budget of SETUP-eliciting replies, and let the images their sources have confirmed leave the unconfirmed
        images' budget."""
        if now_ns - self._time_of_last_sweep_ns < SWEEP_INTERVAL_NS:
            return 0
        self._time_of_last_sweep_ns = now_ns
        self._elicit_replies_left = ELICIT_REPLY_LIMIT
        self.unconfirmed.sweep(now_ns)
        removed = 0
        for interest in self.streams.values():
            expired = [session_id for session_id, state in interest.sessions.items()
                       if isinstance(state, tuple) and (
                           (state[0] == PENDING_SETUP and now_ns - state[1] >= PENDING_SETUP_TIMEOUT_NS)
                           or (state[0] == COOL_DOWN and now_ns - state[1] >= COOL_DOWN_TIMEOUT_NS))]
            for session_id in expired:
                del interest.sessions[session_id]
            removed += len(expired)
        return removed

    def run_timers(self, now_ns: int) -> int:
        """elicit_setups and sweep, for the receiver when ``timers_due_ns`` has come; sets the next one."""
        work = self.elicit_setups(now_ns) + self.sweep(now_ns)
        due = self._time_of_last_sweep_ns + SWEEP_INTERVAL_NS
        if self.streams:
            due = min(due, self._time_of_last_elicit_ns + ELICIT_INTERVAL_NS)
        self.timers_due_ns = due
        return work

    def session_state_count(self) -> int:
        """Sessions the dispatcher keeps state for, images included (tests and diagnostics)."""
        return sum(len(interest.sessions) for interest in self.streams.values())

    def elicit_setups(self, now_ns: int) -> int:
        """Explicit-control subscriptions announce themselves (SM 0x80, session 0, stream 0) every second."""
        if not self.streams or now_ns - self._time_of_last_elicit_ns < ELICIT_INTERVAL_NS:
            return 0
        self._time_of_last_elicit_ns = now_ns
        work = 0
        for destination in self.destinations:
            if destination.has_explicit_control:
                work += self._elicit_setup(destination, 0, 0)
        return work

    def elicit_setup_from_control(self, stream_id: int, session_id: int) -> int:
        """Port of aeron_receive_channel_endpoint_elicit_setup: a SETUP-eliciting status message for one session to
        every destination with an explicit control address."""
        work = 0
        for destination in self.destinations:
            if destination.has_explicit_control:
                work += self._elicit_setup(destination, session_id, stream_id)
        return work

    def _elicit_setup(self, destination: ReceiveDestination, session_id: int, stream_id: int) -> int:
        encode_status_message(self._elicit, 0, session_id, stream_id, 0, 0, 0, self.receiver_id, self.group_tag,
                              SM_SEND_SETUP_FLAG)
        self.send_to(self._elicit, destination.control_address, destination)
        return 1

    def receiver_release(self) -> None:
        """The receiver no longer polls this endpoint (conductor thread)."""
        self.receiver_released = True

    def close(self) -> None:
        """Close the sockets and release the status counter's handle (the conductor frees the counter itself)."""
        if not self.status.is_closed:
            self.status.set_ordered(ctr.CHANNEL_ENDPOINT_STATUS_CLOSING)
            self.status.close()
        for destination in self.destinations:
            destination.close()
