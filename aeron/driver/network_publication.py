# SPDX-License-Identifier: Apache-2.0
"""NetworkPublication: a publication's log sent over UDP (port of aeron_network_publication.c).

The Sender calls ``send`` (SETUP until the first status message, data within the sender limit in MTU-sized
batches found by scan_for_availability, heartbeats when idle) and the control handlers ``on_status_message``,
``on_nak``, ``on_rttm``, ``on_error``; the conductor calls ``update_pub_pos_and_lmt`` every duty cycle and
``on_time_event`` every timer interval, which runs the lifecycle (ACTIVE → DRAINING → LINGER → DONE, then deleted
once the sender has let go). Datagrams are the log's own bytes, sent from the mapped term: no copy.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aeron._core import counters as ctr
from aeron._core.counters import AtomicCounter
from aeron._core.frames import (
    DATA_HEADER_LENGTH, EOS_FLAG, REVOKED_FLAG, RTTM_HEADER_LENGTH, RTTM_REPLY_FLAG, SETUP_GROUP_FLAG,
    SETUP_HEADER_LENGTH, SETUP_SEND_RESPONSE_FLAG, SM_EOS_FLAG, SM_SEND_SETUP_FLAG, UNFRAGMENTED, encode_heartbeat,
    encode_rttm, encode_setup,
)
from aeron._core.logbuffer import LogBuffers
from aeron._core.publication_limit import HAND_BACK, PublicationLimit
from aeron._core.term_scanner import LogBufferUnblocker
from aeron.driver.driver_common import ACTIVE, DONE, DRAINING, LINGER, wrap32
from aeron.driver.driver_log import DriverPublication
from aeron.driver.flow_control import FlowControl, retransmission_estimate
from aeron.driver.retransmit_handler import RetransmitHandler
from aeron.driver.subscription_link import SubscriberPositions
from aeron.driver.untethered import (
    TETHER_RESTING, UntetheredTimeouts, check_untethered_subscriptions, untethered_window_limit,
    working_positions,
)

if TYPE_CHECKING:
    from aeron.driver.network_resources import NetworkResources
    from aeron.driver.send_channel_endpoint import SendChannelEndpoint
    from aeron.driver.subscription_link import SubscriberPosition

SETUP_INTERVAL_NS = 100_000_000
HEARTBEAT_INTERVAL_NS = 100_000_000
RESEND_BATCH = 64                                   # datagrams per sendmmsg when retransmitting (UdpTransport's most)


class NetworkPublication(DriverPublication):
    def __init__(self, *, registration_id: int, owner_client_id: int, session_id: int, stream_id: int,
                 channel: str, is_exclusive: bool, log: LogBuffers, endpoint: SendChannelEndpoint,
                 pub_pos: AtomicCounter, pub_lmt: AtomicCounter, snd_pos: AtomicCounter, snd_lmt: AtomicCounter,
                 snd_bpe: AtomicCounter, snd_naks_received: AtomicCounter, flow_control: FlowControl,
                 window_length: int, linger_timeout_ns: int, unblock_timeout_ns: int, connection_timeout_ns: int,
                 signal_eos: bool, spies_simulate_connection: bool, max_retransmits: int, ttl: int,
                 is_group: bool, now_ns: int, max_messages_per_send: int = 2,
                 system: dict[int, Any] | None = None, untethered_timeouts: UntetheredTimeouts | None = None,
                 response_correlation_id: int | None = None, is_response: bool = False) -> None:
        # the conductor's per cycle limit update in compiled code: it keeps the state, trip limit, consumer position
        # and has_receivers that the properties below read and write
        self.limit = PublicationLimit(log, pub_pos, pub_lmt, snd_pos, window_length)
        super().__init__(registration_id=registration_id, owner_client_id=owner_client_id, session_id=session_id,
                         stream_id=stream_id, channel=channel, is_exclusive=is_exclusive, log=log, pub_pos=pub_pos,
                         pub_lmt=pub_lmt, window_length=window_length, linger_timeout_ns=linger_timeout_ns,
                         unblock_timeout_ns=unblock_timeout_ns, now_ns=now_ns)
        self.endpoint = endpoint
        # called on the sender thread when the log's is_connected is about to flip (Sender: the limit is to move)
        self.on_connection_change: Callable[[NetworkPublication], None] | None = None
        self.initial_term_id = log.initial_term_id
        self.mtu = log.mtu_length
        self.max_message_length = log.max_message_length
        self.snd_pos = snd_pos                          # snd-pos: what the sender has sent
        self.snd_lmt = snd_lmt                          # snd-lmt: how far flow control lets it send
        self.snd_bpe = snd_bpe                          # snd-bpe: back-pressure events
        self.snd_naks = snd_naks_received               # snd-naks-received
        self.flow_control = flow_control
        self.connection_timeout_ns = connection_timeout_ns
        self.signal_eos = signal_eos
        self.spies_simulate_connection = spies_simulate_connection
        self.limit.cleaner = self._cleaner
        self.limit.spies_simulate_connection = spies_simulate_connection
        # a group's minimum size of receivers (has_required_receivers) is known in Python alone
        self.limit.python_only = type(flow_control).has_required_receivers is not FlowControl.has_required_receivers
        self.ttl = ttl
        self.setup_flags = SETUP_GROUP_FLAG if is_group else 0
        # response channels: a request publication (response-correlation-id, not control-mode=response) asks the
        # server's image for a response channel in its SETUPs; a response publication (control-mode=response) sends
        # only to the subscriber that elicited its SETUP
        self.response_correlation_id = response_correlation_id
        self.is_response = is_response
        self.response_address: tuple | None = None
        if response_correlation_id is not None and not is_response:
            self.setup_flags |= SETUP_SEND_RESPONSE_FLAG
        self.max_messages_per_send = max(1, max_messages_per_send)
        system = system or {}
        overflow = system.get(ctr.RETRANSMIT_OVERFLOW)
        self.retransmit_handler = RetransmitHandler(
            self.resend, max_retransmits, on_overflow=overflow.increment_ordered if overflow is not None else None)
        self._heartbeats_sent = system.get(ctr.HEARTBEATS_SENT)
        self._retransmits_sent = system.get(ctr.RETRANSMITS_SENT)
        self._retransmitted_bytes = system.get(ctr.RETRANSMITTED_BYTES)
        self._publications_revoked = system.get(ctr.PUBLICATIONS_REVOKED)
        self._unblocked_publications = system.get(ctr.UNBLOCKED_PUBLICATIONS)
        self.sender_released = False                    # the sender has dropped it: the conductor may free it
        self.has_initial_connection = False
        self.setup_elicited = False
        self.has_receivers = False
        self.is_end_of_stream = False
        self.is_revoked = False
        self.receivers: dict[int, int] = {}             # receiver id -> time of last status message
        self.time_of_last_setup_ns = now_ns - SETUP_INTERVAL_NS - 1
        self.time_of_last_data_or_heartbeat_ns = now_ns - HEARTBEAT_INTERVAL_NS - 1
        self.spies: dict[int, Any] = SubscriberPositions(self)  # spy registration id -> SubscriberPosition
        # untethered spies follow the publication's timeouts (its channel's or the driver's), as in Aeron
        self.untethered_timeouts = untethered_timeouts or UntetheredTimeouts(0, 0, 0)
        self._setup = bytearray(SETUP_HEADER_LENGTH)
        self._heartbeat = bytearray(DATA_HEADER_LENGTH)
        self._rttm = bytearray(RTTM_HEADER_LENGTH)
        start = self.consumer_position
        self.snd_pos.set_ordered(start)
        self.snd_lmt.set_ordered(start)
        self.bytes_sent = 0
        self.short_sends = 0
        # the endpoint's compiled send pass and this publication's index in it (sender thread; None: own send)
        self._send_pass: Any = None
        self._pass_index = -1
        # max flow control's idle step changes nothing: no need to run it every cycle
        self._trivial_idle_flow_control = type(flow_control).on_idle is FlowControl.on_idle
        # max flow control: a status message only moves the limit, which compiled code can do (set_fast_status)
        self._max_flow_control = type(flow_control).on_status_message is FlowControl.on_status_message
        self._fast_receiver_id: int | None = None          # whose status messages the compiled pass takes
        self._fast_naks = False                            # its NAKs resent by the compiled pass (set_fast_retransmit)
        # a heartbeat due within this much is sent now (a parking driver's timer coalescing: Sender.timer_slack_ns)
        self.timer_slack_ns = 0

    # -- what the compiled limit update shares (PublicationLimit) -----------------------------------------------
    @property
    def state(self) -> str:
        """ACTIVE, DRAINING, LINGER or DONE."""
        return self._state

    @state.setter
    def state(self, value: str) -> None:
        self._state = value
        self.limit.active = value == ACTIVE

    @property
    def trip_limit(self) -> int:
        """Where the sender position (with the working spies) must get for the limit to move again."""
        return self.limit.trip_limit

    @trip_limit.setter
    def trip_limit(self, value: int) -> None:
        self.limit.trip_limit = value

    @property
    def consumer_position(self) -> int:
        return self.limit.consumer_position

    @consumer_position.setter
    def consumer_position(self, value: int) -> None:
        self.limit.consumer_position = value

    @property
    def has_receivers(self) -> bool:
        """Some receiver sent a status message within the connection timeout."""
        return self.limit.has_receivers

    @has_receivers.setter
    def has_receivers(self, value: bool) -> None:
        self.limit.has_receivers = value

    def refresh_positions(self) -> None:
        """Tell the compiled limit update which spies hold the publication back (not resting), and how many there
        are: after one is linked or unlinked, or an untethered one changes state."""
        spies = list(self.spies.values())
        self.limit.set_spies([spy.position for spy in spies if spy.state != TETHER_RESTING], len(spies))

    # -- positions ---------------------------------------------------------------------------------------
    def _term_id(self, position: int) -> int:
        return ((position >> self.position_bits_to_shift) + self.initial_term_id + (1 << 31)) % (1 << 32) - (1 << 31)

    # -- sender thread --------------------------------------------------------------------------------------
    def send(self, now_ns: int) -> int:
        """The per-publication send (MDC, response publications, transports without a compiled pass): setup,
        data within the sender limit, then the idle work."""
        snd_pos = self.snd_pos.get()
        if not self.has_initial_connection or self.setup_elicited:
            self._setup_message_check(now_ns, snd_pos)
        sent = self._send_data(now_ns, snd_pos)
        return self._after_data(now_ns, sent)

    def on_pass_due(self, now_ns: int, sent: int, last_sent_ns: int, sent_since: int) -> int:
        """The rest of a duty cycle's send after the endpoint's compiled send pass, run only when this publication is
        due (see ``pass_due_ns``): the pass sent ``sent`` bytes of its data this cycle (and moved snd-pos), last
        sent data at ``last_sent_ns`` and ``sent_since`` bytes since the last call; it also counted back pressure.
        Returns when it is next due."""
        self.take_pass_sent(last_sent_ns, sent_since)
        self.sync_fast_status()
        if not self.has_initial_connection or self.setup_elicited:
            self._setup_message_check(now_ns, self.snd_pos.get())
        self._after_data(now_ns, sent)
        return self.pass_due_ns(now_ns)

    def take_pass_sent(self, last_sent_ns: int, sent_since: int) -> None:
        """What the compiled pass sent of this publication since it last took it: when data last went out (the
        heartbeat timer counts from there) and how many bytes."""
        if last_sent_ns > self.time_of_last_data_or_heartbeat_ns:
            self.time_of_last_data_or_heartbeat_ns = last_sent_ns
        self.bytes_sent += sent_since

    def pass_due_ns(self, now_ns: int) -> int:
        """When the Python part of a compiled-pass publication has work next: every cycle while it is not connected,
        was asked for a SETUP, has no receivers (spies may move its sender position) or its flow control has an idle
        step; otherwise at its next heartbeat, receiver timeout or retransmit timer. Anything that changes these
        (status messages, NAKs, error frames) makes it due at once (``_make_pass_due``)."""
        if not self.has_initial_connection or self.setup_elicited or not self.has_receivers or \
                not self._trivial_idle_flow_control:
            return now_ns
        deadline = self.time_of_last_data_or_heartbeat_ns + HEARTBEAT_INTERVAL_NS + 1 - self.timer_slack_ns
        self.sync_fast_status()
        if self.receivers:
            deadline = min(deadline, min(self.receivers.values()) + self.connection_timeout_ns + 1)
        return self.retransmit_handler.next_deadline_ns(deadline)

    def attach_pass(self, send_pass: Any, index: int) -> None:
        """The endpoint's compiled send pass sends this publication's data as its ``index``-th (None: it does not)."""
        self._send_pass = send_pass
        self._pass_index = index
        self._fast_naks = False                            # a new table: nothing set in it yet
        self._refresh_fast_status()

    def _refresh_fast_status(self) -> None:
        """Lets the compiled pass take this publication's status messages while handling one would only move the
        limit and note when its one receiver was last heard from: connected, one receiver, max flow control, an
        endpoint with one destination. Run after anything that changes these."""
        send_pass = self._send_pass
        if send_pass is None:
            self._fast_receiver_id = None
            return
        endpoint = self.endpoint
        receiver_id = None
        # (not multi-destination-cast: a NAK resent from compiled code goes to one address, Python's to each one)
        if self.has_initial_connection and len(self.receivers) == 1 and self._max_flow_control and \
                not endpoint.is_mdc and not endpoint.is_response:
            (receiver_id,) = self.receivers
        if receiver_id != self._fast_receiver_id:
            self.sync_fast_status()                        # what it heard from the one before, before it forgets
            self._fast_receiver_id = receiver_id
        send_pass.set_fast_status(self._pass_index, self.session_id, self.stream_id, receiver_id)
        # and its NAKs, when resending one is unicast's immediate retransmit (SendPass.on_nak)
        handler = self.retransmit_handler
        if receiver_id is not None and handler.compiled_eligible:
            if not self._fast_naks:
                send_pass.set_fast_retransmit(self._pass_index, self.snd_naks, self._retransmits_sent,
                                              self._retransmitted_bytes, handler.linger_ns,
                                              retransmission_estimate(self.term_length, self.flow_control.rrwm),
                                              self.max_message_length)
                self._fast_naks = True
        elif self._fast_naks:
            send_pass.set_fast_retransmit(self._pass_index, None)
            self._fast_naks = False

    def sync_fast_status(self) -> None:
        """Takes when the compiled pass last heard from the receiver (before liveness is judged, before the pass's
        table is replaced)."""
        send_pass = self._send_pass
        if send_pass is None:
            return
        receiver_id = self._fast_receiver_id
        if receiver_id is None:
            return
        seen = send_pass.last_status_ns(self._pass_index)
        last = self.receivers.get(receiver_id)
        if seen is not None and last is not None and seen > last:
            self.receivers[receiver_id] = seen

    def _make_pass_due(self) -> None:
        if self._send_pass is not None:
            self._send_pass.set_due(self._pass_index, 0)

    def _after_data(self, now_ns: int, sent: int) -> int:
        if sent == 0:
            snd_pos = self.snd_pos.get()
            self._heartbeat_check(now_ns, snd_pos)
            if self.spies_simulate_connection and self.spies and not self.has_receivers:
                # nobody on the network: the sender position follows the farthest spy, or an ssc publication read
                # only by spies would stall one window in (aeron_network_publication_send)
                for spy in list(self.spies.values()):
                    if spy.state != TETHER_RESTING:
                        snd_pos = max(snd_pos, spy.position.get_volatile())
                self.snd_pos.set_ordered(snd_pos)
            self.snd_lmt.set_ordered(self.flow_control.on_idle(now_ns, self.snd_lmt.get(), snd_pos,
                                                               self.is_end_of_stream))
            self._expire_receivers(now_ns)
        self.retransmit_handler.process_timeouts(now_ns)
        return sent

    def next_deadline_ns(self, far_ns: int) -> int:
        """When ``send`` next has a timer due with no data to send: a SETUP while not connected (or when one was
        asked for), a heartbeat, a retransmit; ``far_ns`` at the latest (a parked sender's wake-up time)."""
        deadline = far_ns
        if not self.has_initial_connection or self.setup_elicited:
            deadline = min(deadline, self.time_of_last_setup_ns + SETUP_INTERVAL_NS + 1)
        if self.has_initial_connection:
            deadline = min(deadline, self.time_of_last_data_or_heartbeat_ns + HEARTBEAT_INTERVAL_NS + 1)
        return self.retransmit_handler.next_deadline_ns(deadline)

    def _setup_message_check(self, now_ns: int, snd_pos: int) -> None:
        if now_ns <= self.time_of_last_setup_ns + SETUP_INTERVAL_NS:
            return
        term_id, term_offset = self._term_id(snd_pos), snd_pos & self.term_length_mask
        encode_setup(self._setup, 0, self.session_id, self.stream_id, self.initial_term_id, term_id, term_offset,
                     self.term_length, self.mtu, self.ttl, self.setup_flags)
        if self.endpoint.send(self._setup, self.response_address) == SETUP_HEADER_LENGTH:
            self.time_of_last_setup_ns = now_ns
            self.time_of_last_data_or_heartbeat_ns = now_ns
            self.flow_control.on_setup(self.snd_lmt.get(), now_ns)
            if self.has_receivers:
                self.setup_elicited = False

    def _heartbeat_check(self, now_ns: int, snd_pos: int) -> None:
        if not self.has_initial_connection or \
                now_ns + self.timer_slack_ns <= self.time_of_last_data_or_heartbeat_ns + HEARTBEAT_INTERVAL_NS:
            return
        term_id, term_offset = self._term_id(snd_pos), snd_pos & self.term_length_mask
        flags = UNFRAGMENTED
        if self.is_revoked:
            flags |= EOS_FLAG | REVOKED_FLAG
        elif self.signal_eos and self.is_end_of_stream:
            flags |= EOS_FLAG
        encode_heartbeat(self._heartbeat, 0, self.session_id, self.stream_id, term_id, term_offset, flags)
        if self.endpoint.send(self._heartbeat, self.response_address) == DATA_HEADER_LENGTH:
            self.time_of_last_data_or_heartbeat_ns = now_ns
            if self._heartbeats_sent is not None:
                self._heartbeats_sent.increment_ordered()

    def _send_data(self, now_ns: int, snd_pos: int) -> int:
        sender_limit = self.snd_lmt.get()
        position = snd_pos
        total = 0
        budget = self.max_messages_per_send
        # one scan-and-sendmmsg pass per term the window touches (at most two)
        while budget > 0 and sender_limit > position:
            term_offset = position & self.term_length_mask
            term = self.terms[(position >> self.position_bits_to_shift) % 3]
            sent, advance = self.endpoint.send_term_batch(term, term_offset, sender_limit - position, self.mtu,
                                                          budget, self.response_address)
            if advance == 0:
                break
            total += sent
            position += advance
            budget -= max(1, -(-sent // self.mtu))
            if position & self.term_length_mask:
                break                                   # stopped inside the term: nothing more to send now
        if position != snd_pos:
            self.snd_pos.set_ordered(position)
            self.time_of_last_data_or_heartbeat_ns = now_ns
            self.bytes_sent += total
        elif sender_limit <= snd_pos and self.producer_position() > snd_pos:
            self.snd_bpe.increment_ordered()         # data waiting, window closed: back pressure
        return total

    def resend(self, term_id: int, term_offset: int, length: int) -> None:
        """Retransmit ``length`` bytes from (term_id, term_offset) if still in the log: scanned and sent from the term
        in one sendmmsg per RESEND_BATCH datagrams. Counted once per resend (aeron_network_publication_resend)."""
        snd_pos = self.snd_pos.get()
        resend_position = (wrap32(term_id - self.initial_term_id) << self.position_bits_to_shift) + term_offset
        bottom = snd_pos - (self.term_length >> 1) - self.max_message_length
        if not (bottom <= resend_position < snd_pos):
            return
        term = self.terms[(resend_position >> self.position_bits_to_shift) % 3]
        remaining = min(length, self.term_length - term_offset)
        offset = term_offset
        total = 0
        while remaining > 0:
            # not counted in bytes sent: the C driver counts retransmits only in retransmitted bytes
            _, advance = self.endpoint.send_term_batch(term, offset, remaining, self.mtu, RESEND_BATCH,
                                                       self.response_address, count_bytes=False)
            if advance == 0:
                break                                   # nothing more in the range, or the socket would block
            total += advance
            offset += advance
            remaining -= advance
        # one retransmit per resend action however many datagrams it took, as the C driver counts them
        if total > 0 and self._retransmits_sent is not None:
            self._retransmits_sent.increment_ordered()
            self._retransmitted_bytes.get_and_add(total)

    # -- control frames (sender thread) ---------------------------------------------------------------------
    def on_status_message(self, flags: int, term_id: int, term_offset: int, window: int, receiver_id: int,
                          group_tag: int | None, source: tuple, now_ns: int) -> None:
        self._make_pass_due()
        if window < 0 or window > self.term_length // 2:
            return
        if flags & SM_SEND_SETUP_FLAG:
            if not self.is_end_of_stream:
                self.setup_elicited = True
                self.flow_control.on_trigger_send_setup(group_tag, now_ns)
                if self.is_response:
                    self.response_address = source      # the response subscriber that asked for it
            return
        position = (wrap32(term_id - self.initial_term_id) << self.position_bits_to_shift) + term_offset
        snd_pos = self.snd_pos.get()
        # more than half a term from what was sent: a receiver of another stream with this session (before the first
        # connection too, as aeron_network_publication_is_valid_status_message)
        if abs(position - snd_pos) > self.term_length // 2:
            self.endpoint.on_status_message_rejected()
            return
        is_eos = bool(flags & SM_EOS_FLAG)
        if is_eos:
            self.receivers.pop(receiver_id, None)
        else:
            self.receivers[receiver_id] = now_ns
        self.has_initial_connection = True
        if not self.has_receivers and self.receivers and self.response_correlation_id is not None:
            self.endpoint.notify_response_connected(self.response_correlation_id)
        limit = self.flow_control.on_status_message(self.snd_lmt.get(), position, window, receiver_id, group_tag,
                                                    is_eos, now_ns)
        self.snd_lmt.set_ordered(limit)
        self._update_has_receivers()
        if is_eos and self.state == LINGER and not self.receivers:
            self.state_change_ns = 0                 # unicast: the receiver has gone, end the linger now

    def on_nak(self, term_id: int, term_offset: int, length: int, now_ns: int) -> None:
        self._make_pass_due()                        # its retransmit timers
        self.snd_naks.increment_ordered()
        self.retransmit_handler.on_nak(term_id, term_offset, length, self.term_length, now_ns,
                                       self._max_retransmission_length)

    def _max_retransmission_length(self, term_offset: int, resend_length: int) -> int:
        return self.flow_control.max_retransmission_length(term_offset, resend_length, self.term_length, self.mtu)

    def on_rttm(self, flags: int, echo_timestamp: int, receiver_id: int) -> None:
        if flags & RTTM_REPLY_FLAG:
            encode_rttm(self._rttm, 0, self.session_id, self.stream_id, echo_timestamp, 0, receiver_id)
            self.endpoint.send(self._rttm, self.response_address)

    def on_error(self, receiver_id: int, error_code: int, message: str) -> bool:
        """An error frame from a receiver: it is dropped at once. True when it was a receiver this publication knew
        (its clients are then told, once)."""
        self._make_pass_due()
        known = self.receivers.pop(receiver_id, None) is not None
        self.flow_control.on_error(receiver_id)
        self._update_has_receivers()
        return known

    def _expire_receivers(self, now_ns: int) -> None:
        if not self.receivers:
            return
        self.sync_fast_status()
        timeout = self.connection_timeout_ns
        expired = [rid for rid, seen in self.receivers.items() if now_ns - seen > timeout]
        for rid in expired:
            del self.receivers[rid]
        if expired:
            self._update_has_receivers()

    def _update_has_receivers(self) -> None:
        has = bool(self.receivers)
        if has != self.has_receivers:
            self.has_receivers = has
        log = self.log
        connected = self.is_connected_now()
        if connected != log.is_connected:
            if self.on_connection_change is not None:
                self.on_connection_change(self)     # first: a client that sees the flag may find its limit moved
            log.is_connected = connected
        self._refresh_fast_status()

    def is_connected_now(self) -> bool:
        return (self.has_receivers and self.flow_control.has_required_receivers()) or (
            self.spies_simulate_connection and bool(self.spies))

    # -- conductor thread ------------------------------------------------------------------------------------
    def sender_release(self) -> None:
        """The sender no longer touches this publication (aeron_network_publication_sender_release)."""
        self.sender_released = True

    def add_subscriber(self, link: SubscriberPosition) -> None:
        """A spy joins: it reads the log (and, with ssc, counts as a receiver)."""
        self.spies[link.subscription.registration_id] = link
        self.log.is_connected = self.is_connected_now()

    def remove_subscriber(self, subscription_registration_id: int) -> SubscriberPosition | None:
        return self.spies.pop(subscription_registration_id, None)

    def begin_draining(self, now_ns: int) -> None:
        """The last client link is gone: the stream ends where the publishers stopped; the sender sends the rest."""
        producer_position = self.producer_position()
        self.pub_lmt.set_ordered(producer_position)
        self.log.end_of_stream_position = producer_position
        self.to_state(DRAINING, now_ns)

    def revoke(self, now_ns: int, conductor: NetworkResources) -> None:
        """The last client link is gone with revoke: the stream ends here, receivers are told at once."""
        producer_position = self.producer_position()
        self.pub_lmt.set_ordered(producer_position)
        self.log.end_of_stream_position = producer_position
        self.log.is_publication_revoked = True
        self.is_revoked = True
        self.is_end_of_stream = True
        if self._publications_revoked is not None:
            self._publications_revoked.increment_ordered()
        self.begin_linger(now_ns, conductor)

    def _check_for_blocked_publisher(self, now_ns: int) -> None:
        """A concurrent publisher that claimed and died leaves an uncommitted frame at the sender position: once
        the sender has stood there for the unblock timeout, the claim is padded over (aeron_network_publication_
        check_for_blocked_publisher)."""
        snd_pos = self.snd_pos.get_volatile()
        possibly_blocked = (self.log.active_term_count != snd_pos >> self.position_bits_to_shift or
                            self.producer_position() > snd_pos)
        if snd_pos == self.last_consumer_position and possibly_blocked:
            if now_ns > self.time_of_last_consumer_change_ns + self.unblock_timeout_ns and \
                    LogBufferUnblocker.unblock(self.log, snd_pos):
                self._count_unblock()
        else:
            self.time_of_last_consumer_change_ns = now_ns
            self.last_consumer_position = snd_pos

    def _count_unblock(self) -> None:
        if self._unblocked_publications is not None:
            self._unblocked_publications.increment_ordered()

    def begin_linger(self, now_ns: int, conductor: NetworkResources) -> None:
        """Drained (or revoked): the spies' images go; the log lingers for retransmits and late clients."""
        self.to_state(LINGER, now_ns)
        self.drop_subscribers(self.spies, conductor)

    def on_time_event(self, now_ns: int, now_ms: int, conductor: NetworkResources) -> int:
        """Port of aeron_network_publication_on_time_event: untethered spies while ACTIVE; DRAINING until the sender
        has sent everything and the working spies have read it (or nobody listens), LINGER for the linger timeout,
        then DONE once the sender let go. Returns the work done."""
        state = self.state
        if state == ACTIVE:
            work = self.check_untethered_spies(now_ns, conductor) if self.spies else 0
            if not self.is_exclusive:
                self._check_for_blocked_publisher(now_ns)
            return work
        if state == DRAINING:
            producer_position = self.producer_position()
            self.pub_pos.set_ordered(producer_position)
            snd_pos = self.snd_pos.get_volatile()
            if producer_position > snd_pos and LogBufferUnblocker.unblock(self.log, snd_pos):
                self._count_unblock()       # a claim its publisher left behind: the sender may go on
                return 0
            if producer_position > snd_pos:
                if self.has_receivers:
                    return 0                # the sender still has data for its receivers
            else:
                self.is_end_of_stream = True
            # all sent, or nobody on the network to send to: over once the working spies have read it all
            if all(position >= producer_position for position in working_positions(self.spies.values())):
                self.begin_linger(now_ns, conductor)
                return 1
        elif state == LINGER and now_ns - self.state_change_ns > self.linger_timeout_ns:
            self.to_state(DONE, now_ns)
            conductor.cleanup_network_publication(self)
            return 1
        return 0

    def has_reached_end_of_life(self) -> bool:
        return self.state == DONE and self.sender_released

    def check_untethered_spies(self, now_ns: int, conductor: NetworkResources) -> int:
        """Port of aeron_network_publication_check_untethered_subscriptions (untethered.py): measured against the
        sender position, where a rejoining spy resumes, with the publication's timeouts."""
        snd_pos = self.snd_pos.get_volatile()

        def rejoin(link: SubscriberPosition) -> None:
            link.position.set_ordered(self.snd_pos.get_volatile())
            conductor.on_spy_image_available(self, link)

        def unavailable(link: SubscriberPosition) -> None:
            conductor.client_proxy.on_unavailable_image(self.registration_id, link.subscription.registration_id,
                                                        self.stream_id, link.subscription.channel)
        work = check_untethered_subscriptions(
            self.spies.values(), untethered_window_limit(snd_pos, self.window_length), now_ns, unavailable,
            lambda link: conductor.unlink_subscriber(link.subscription, self, self.registration_id), rejoin,
            self.untethered_timeouts)
        if work:
            self.refresh_positions()        # a spy that rests holds nothing back, one that rejoins does
        return work

    def close(self) -> None:
        """Release the counters' handles and the log (the conductor frees the counters themselves)."""
        for counter in (self.snd_pos, self.snd_lmt, self.snd_bpe, self.snd_naks):
            counter.close()
        for spy in self.spies.values():
            spy.position.close()
        super().close()

    def limit_watch(self) -> tuple[int, list[AtomicCounter]] | None:
        """What moves the limit next, for a compiled probe (DriverPublication._limit_watch): the sender's position
        and the spies' that hold it back; None while not connected (the conductor moves no limit then)."""
        if not self.is_connected_now():
            return None
        positions = [self.snd_pos]
        positions.extend([spy.position for spy in list(self.spies.values()) if spy.state != TETHER_RESTING])
        return self._limit_watch(positions)

    def update_pub_pos_and_lmt(self) -> int:
        """Port of aeron_network_publication_update_pub_pos_and_lmt: in compiled code (PublicationLimit) unless it
        hands back, with the same decisions."""
        moved = self.limit.update()
        if moved != HAND_BACK:
            return moved
        if self.state != ACTIVE:
            return 0
        work = 0
        snd_pos = self.snd_pos.get_volatile()
        self.pub_pos.set_ordered(self.log.producer_position())
        if self.has_receivers and self.flow_control.has_required_receivers() or self.is_connected_now():
            # an untethered spy that fell behind (resting) holds nothing back
            spies = self.spies
            min_position = min([snd_pos, *working_positions(spies.values())]) if spies else snd_pos
            # short of the trip limit (most cycles): _update_limit would not move it
            if min_position + self.window_length >= self.trip_limit:
                work = self._update_limit(min_position)
            self.consumer_position = snd_pos
        elif self.pub_lmt.get_volatile() > snd_pos:
            self.log.is_connected = False
            self.pub_lmt.set_ordered(snd_pos)
            self.trip_limit = snd_pos
            self.clean_buffer_to(snd_pos - self.term_length)
            work = 1
        return work
