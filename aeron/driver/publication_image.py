# SPDX-License-Identifier: Apache-2.0
"""PublicationImage: a remote publication's stream rebuilt in a local log (port of aeron_publication_image.c).

The Receiver inserts datagrams (``insert_packet``), tracks the rebuild (loss detection with NAKs, receiver
position, status message scheduling: ``track_rebuild``) and sends status messages and NAKs to the sender's
control address. The conductor links subscribers (sub-pos counters) and calls ``on_time_event`` every timer
interval, which runs the lifecycle (ACTIVE → DRAINING → LINGER → DONE, then deleted).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aeron._core import counters as ctr
from aeron._core.counters import AtomicCounter
from aeron._core.data_dispatcher import ImageReceiveState
from aeron._core.frames import (
    EOS_FLAG, ERR_HEADER_LENGTH, ERR_MAX_ERROR_MESSAGE_LENGTH, NAK_HEADER_LENGTH, REVOKED_FLAG, RTTM_HEADER_LENGTH,
    RSP_SETUP_HEADER_LENGTH, RTTM_REPLY_FLAG, SM_EOS_FLAG, SM_WITH_GROUP_TAG_LENGTH, encode_error, encode_nak,
    encode_response_setup, encode_rttm, encode_status_message,
)
from aeron._core.logbuffer import LogBuffers
from aeron._core.rebuild_pass import (
    LIFECYCLE_ACTIVE, LIFECYCLE_DONE, LIFECYCLE_DRAINING, LIFECYCLE_LINGER, TRACK_HAND_BACK, RebuildPass,
)
from aeron._core.term_scanner import TermGapFiller, TermRebuilder
from aeron._core.udp_transport import UdpTransport
from aeron.common.agent import epoch_ms
from aeron.common.constants import INT64_MAX
from aeron.common.errors import ChannelEndpointError, ErrorCode, IllegalStateError
from aeron.driver.driver_common import ACTIVE, DONE, DRAINING, LINGER
from aeron.driver.congestion_control import StaticWindowCongestionControl
from aeron.driver.driver_log import DriverLog
from aeron.driver.loss_detector import LossDetector
from aeron.driver.receive_destination import DESTINATION_TIMEOUT_NS, source_key
from aeron.driver.subscription_link import SubscriberPositions
from aeron.driver.unconfirmed_images import UnconfirmedHold
from aeron.driver.untethered import (
    TETHER_ACTIVE, TETHER_RESTING, UntetheredTimeouts, check_untethered_subscriptions, untethered_window_limit,
    working_positions,
)

if TYPE_CHECKING:
    from aeron.driver.network_resources import NetworkResources
    from aeron.driver.receive_channel_endpoint import ReceiveChannelEndpoint
    from aeron.driver.receive_destination import ReceiveDestination
    from aeron.driver.subscription_link import SubscriberPosition

SM_TIMEOUT_NS = 200_000_000
IMAGE_LINGER_NS = 1_000_000_000         # a closed image's log stays a moment for clients still mapping it
NEVER_NS = -(1 << 62)               # the time of last frame of a connection that has had none
_LIFECYCLE = {ACTIVE: LIFECYCLE_ACTIVE, DRAINING: LIFECYCLE_DRAINING, LINGER: LIFECYCLE_LINGER,
              DONE: LIFECYCLE_DONE}


class ImageConnection:
    """Where status messages and NAKs for an image go: one per receive destination with a control address (all
    its traffic maps to it), else one per sender source seen on a destination."""

    __slots__ = ("control_address", "time_of_last_frame_ns", "time_of_last_activity_ns", "is_eos", "eos_position",
                 "destination", "is_fixed")

    def __init__(self, control_address: tuple, now_ns: int, destination: ReceiveDestination | None = None,
                 is_fixed: bool = False, has_frame: bool = True) -> None:
        self.control_address = control_address
        # a destination added to an image has seen no frame yet: it gets status messages (they elicit the sender)
        # but is not an active transport until data comes through it (aeron_publication_image_add_destination)
        self.time_of_last_frame_ns = now_ns if has_frame else NEVER_NS
        self.time_of_last_activity_ns = now_ns
        self.is_eos = False
        self.eos_position = 0
        self.destination = destination
        self.is_fixed = is_fixed


class PublicationImage(DriverLog):
    def __init__(self, *, correlation_id: int, session_id: int, stream_id: int, endpoint: ReceiveChannelEndpoint,
                 log: LogBuffers, source_identity: str, control_address: tuple, join_position: int,
                 rcv_hwm: AtomicCounter, rcv_pos: AtomicCounter, rcv_naks_sent: AtomicCounter,
                 congestion_control: Any, loss_delay: Any, is_reliable: bool, liveness_timeout_ns: int,
                 system: dict[int, Any], loss_report: Any, channel: str, now_ns: int,
                 cc_counters: tuple[AtomicCounter, ...] = (), epoch_clock_ms: Callable[[], int] | None = None,
                 rejoin: bool = True, destination: ReceiveDestination | None = None,
                 untethered_timeouts: UntetheredTimeouts | None = None, has_send_response_setup: bool = False,
                 unconfirmed_hold: UnconfirmedHold | None = None) -> None:
        self.correlation_id = correlation_id
        self._epoch_clock_ms = epoch_clock_ms or epoch_ms
        self.session_id = session_id
        self.stream_id = stream_id
        self.endpoint = endpoint
        self._init_log(log, join_position)
        self.log_path = log.path or ""
        self.source_identity = source_identity
        self.channel = channel
        self.initial_term_id = log.initial_term_id
        self.rcv_hwm = rcv_hwm                          # rcv-hwm: the highest position received
        self.rcv_pos = rcv_pos                          # rcv-pos: rebuilt without gaps up to here
        self.naks_sent = rcv_naks_sent                  # rcv-naks-sent
        # what the endpoint's compiled data path reads and writes for this image (positions, times, connections)
        self.receive_state = ImageReceiveState(session_id, stream_id, log.initial_term_id, self.terms, rcv_hwm,
                                               join_position, now_ns)
        self.cc_counters = cc_counters                  # rcv-cc-cubic-rtt and -wnd when cc=cubic
        self.congestion_control = congestion_control
        self.is_reliable = is_reliable
        self.liveness_timeout_ns = liveness_timeout_ns
        self.system = system
        self.loss_report = loss_report
        self.loss_report_entry = -1
        # the destination whose SETUP made the image; None only for an endpoint built without one (unit tests)
        if destination is None and endpoint.destinations:
            destination = endpoint.destinations[0]
        fixed = destination is not None and destination.has_control_address
        self.connections = [ImageConnection(destination.control_address if fixed else control_address, now_ns,
                                            destination, fixed)]
        self._subscribers = SubscriberPositions(self)   # subscription registration id -> SubscriberPosition
        self._state = ACTIVE
        self.state_change_ns = now_ns
        self.rejoin = rejoin                          # False: the session cools down before a new image (rejoin=)
        self.receiver_released = False                # the receiver has dropped it: the conductor may free it
        self.time_of_last_packet_ns = now_ns
        self.is_end_of_stream = False
        self.rcv_hwm.set_ordered(join_position)
        self.rcv_pos.set_ordered(join_position)
        self.join_position = join_position
        self.last_sm_position = join_position
        self.last_sm_window = congestion_control.initial_window_length()
        # a status message due within this much is sent now (a parking driver's timer coalescing:
        # Receiver.timer_slack_ns): Aeron's interval is a maximum
        self.rejection_reason: str | None = None      # set by REJECT_IMAGE: error frames instead of status messages
        # untethered subscribers follow the timeouts of the subscription that made the image, as in Aeron
        self.untethered_timeouts = untethered_timeouts or UntetheredTimeouts(0, 0, 0)
        # response channels: the sender asked for one (SETUP flag 0x80); once a response publication exists for this
        # image its session id goes back to the sender in RSP_SETUP frames until the response channel connects
        self.has_send_response_setup = has_send_response_setup
        self.response_session_id: int | None = None
        self._response_setup = bytearray(RSP_SETUP_HEADER_LENGTH)
        self.clean_position = join_position
        self.loss_found = False
        self.loss_detector = LossDetector(loss_delay, self._on_gap_timer, self._on_loss)
        # the status message scheduling (next position and window, pending, time of the last one) lives in the
        # compiled rebuild pass, which shares it with this Python path: rebuild_pass()
        self.rebuild = RebuildPass(self.receive_state, self.loss_detector, self._cleaner, log, rcv_pos,
                                   rcv_naks_sent, system[ctr.NAK_MESSAGES_SENT], system[ctr.STATUS_MESSAGES_SENT],
                                   system[ctr.BYTES_SENT], endpoint.receiver_id, endpoint.group_tag,
                                   self.last_sm_window, join_position, liveness_timeout_ns, SM_TIMEOUT_NS)
        # what the last rebuild scan saw (track_rebuild) is kept in the pass: it runs again only when one moved
        self._static_window = isinstance(congestion_control, StaticWindowCongestionControl)
        self.rebuild.static_window = self._static_window
        self.timer_slack_ns = 0
        self._arm_tried = -1                # the pass's disarm count when try_arm last aimed it (or failed to)
        self._sm = bytearray(SM_WITH_GROUP_TAG_LENGTH)
        self._nak = bytearray(NAK_HEADER_LENGTH)
        self._rttm = bytearray(RTTM_HEADER_LENGTH)
        self._error = bytearray(ERR_HEADER_LENGTH + ERR_MAX_ERROR_MESSAGE_LENGTH)
        self.receiver_id = endpoint.receiver_id
        self.group_tag = endpoint.group_tag
        for other in endpoint.destinations:
            if other is not destination and other.has_control_address:
                self.add_destination(other, now_ns)
        self._mirror_connections()
        # its share of the endpoint's unconfirmed images' budget until its source sends a frame (None: not counted)
        self.unconfirmed_hold = unconfirmed_hold
        if unconfirmed_hold is not None:
            endpoint.unconfirmed.attach(unconfirmed_hold, self)

    # -- the fields the compiled data path shares ---------------------------------------------------------------
    @property
    def state(self) -> str:
        """ACTIVE, DRAINING, LINGER or DONE (set by the conductor; the receiver's compiled cycle reads it too)."""
        return self._state

    @state.setter
    def state(self, value: str) -> None:
        self._state = value
        self.rebuild.lifecycle = _LIFECYCLE[value]

    @property
    def timer_slack_ns(self) -> int:
        """How early a status message due on its interval may go (Receiver.timer_slack_ns)."""
        return self.rebuild.timer_slack_ns

    @timer_slack_ns.setter
    def timer_slack_ns(self, value: int) -> None:
        self.rebuild.timer_slack_ns = value

    @property
    def subscribers(self) -> dict[int, Any]:
        """The subscriptions linked to the image: registration id -> SubscriberPosition."""
        return self._subscribers

    @subscribers.setter
    def subscribers(self, links: dict[int, Any]) -> None:
        self._subscribers = SubscriberPositions(self)
        for key, link in links.items():
            dict.__setitem__(self._subscribers, key, link)
        self.refresh_positions()

    def refresh_positions(self) -> None:
        """Tell the compiled rebuild pass which sub-pos counters hold the image back (the subscribers that are not
        resting): after a subscriber is linked or unlinked, or an untethered one changes state."""
        # a copy in one step: the conductor links and unlinks subscribers from its own thread
        self.rebuild.set_positions([link.position for link in list(self.subscribers.values())
                                    if link.state != TETHER_RESTING])

    @property
    def time_of_last_packet_ns(self) -> int:
        return self.receive_state.time_of_last_packet_ns

    @time_of_last_packet_ns.setter
    def time_of_last_packet_ns(self, value: int) -> None:
        self.receive_state.time_of_last_packet_ns = value

    @property
    def last_sm_position(self) -> int:
        return self.receive_state.last_sm_position

    @last_sm_position.setter
    def last_sm_position(self, value: int) -> None:
        self.receive_state.last_sm_position = value

    @property
    def next_sm_position(self) -> int:
        return self.rebuild.next_sm_position

    @next_sm_position.setter
    def next_sm_position(self, value: int) -> None:
        self.rebuild.next_sm_position = value

    @property
    def next_sm_window(self) -> int:
        return self.rebuild.next_sm_window

    @next_sm_window.setter
    def next_sm_window(self, value: int) -> None:
        self.rebuild.next_sm_window = value

    @property
    def time_of_last_sm_ns(self) -> int:
        return self.rebuild.time_of_last_sm_ns

    @time_of_last_sm_ns.setter
    def time_of_last_sm_ns(self, value: int) -> None:
        self.rebuild.time_of_last_sm_ns = value

    @property
    def sm_pending(self) -> bool:
        return self.rebuild.sm_pending

    @sm_pending.setter
    def sm_pending(self, value: bool) -> None:
        self.rebuild.sm_pending = value

    def _sync_connection_times(self) -> None:
        """Bring in the times of last frame that the compiled path recorded for the connections it matched."""
        state = self.receive_state
        for i in range(min(len(self.connections), state.connection_count)):
            connection = self.connections[i]
            connection.time_of_last_frame_ns = max(connection.time_of_last_frame_ns, state.connection_time(i))

    def _mirror_connections(self) -> None:
        """After the connections changed: the compiled path matches the new list (destination, source), and the
        rebuild pass waits to be aimed again (rebuild_pass)."""
        self.rebuild.disarm()
        self.receive_state.set_connections(
            (-1 if c.destination is None else c.destination.dispatch_id,
             None if c.is_fixed else source_key(c.control_address), c.time_of_last_frame_ns)
            for c in self.connections)

    def position_of(self, term_id: int, term_offset: int) -> int:
        return (((term_id - self.initial_term_id) & 0xFFFFFFFF) << self.position_bits_to_shift) + term_offset

    # -- receiver thread: data -------------------------------------------------------------------------------
    def insert_packet(self, buffer, length: int, term_id: int, term_offset: int, is_heartbeat: bool,
                      flags: int, source: tuple, now_ns: int, destination: ReceiveDestination | None = None) -> int:
        if ((term_id - self.initial_term_id) & 0xFFFFFFFF) >= 1 << 31 or self.state == DONE or \
                self.rejection_reason is not None:
            return 0                                    # older than the initial term (wrap-aware), gone, or rejected
        packet_position = self.position_of(term_id, term_offset)
        proposed = packet_position + (0 if is_heartbeat else length)
        last_sm = self.last_sm_position
        if proposed > last_sm + (self.term_length >> 1):
            self.system[ctr.FLOW_CONTROL_OVER_RUNS].increment_ordered()
            return 0
        connection = self._connection(destination, source, now_ns)
        if is_heartbeat:
            if packet_position >= max(0, last_sm - self.term_length):
                self.time_of_last_packet_ns = now_ns
                self.receive_state.count_heartbeat()
                self.system[ctr.HEARTBEATS_RECEIVED].increment_ordered()
                if flags & EOS_FLAG:
                    self._on_eos(connection, packet_position, bool(flags & REVOKED_FLAG))
                if proposed > self.rcv_hwm.get():
                    self.rcv_hwm.set_ordered(proposed)
            else:
                self.system[ctr.FLOW_CONTROL_UNDER_RUNS].increment_ordered()
            return 0
        if packet_position < last_sm:
            self.system[ctr.FLOW_CONTROL_UNDER_RUNS].increment_ordered()
            return 0
        self.time_of_last_packet_ns = now_ns
        self.receive_state.count_insert()
        term = self.terms[(packet_position >> self.position_bits_to_shift) % 3]
        TermRebuilder.insert(term, term_offset, buffer, length)
        if proposed > self.rcv_hwm.get():
            self.rcv_hwm.set_ordered(proposed)
        return length

    def _connection(self, destination: ReceiveDestination | None, source: tuple, now_ns: int) -> ImageConnection:
        if destination is None and self.connections:
            destination = self.connections[0].destination
        for connection in self.connections:
            if connection.destination is destination and (connection.is_fixed or connection.control_address == source):
                connection.time_of_last_frame_ns = now_ns
                return connection
        self._sync_connection_times()
        connection = ImageConnection(source, now_ns, destination)
        self.connections.append(connection)
        self._mirror_connections()
        return connection

    # -- receiver thread: destinations of a multi-destination subscription -------------------------------------
    def add_destination(self, destination: ReceiveDestination, now_ns: int) -> None:
        """A destination with a control address is told about the image at once (status messages that make a
        dynamic multi-destination-cast sender add it); others are learnt from their first frame."""
        if destination.has_control_address:
            self._sync_connection_times()
            self.connections.append(ImageConnection(destination.control_address, now_ns, destination, True,
                                                    has_frame=False))
            self._mirror_connections()

    def remove_destination(self, destination: ReceiveDestination) -> None:
        """Forget what arrived over ``destination``: no more status messages or NAKs to its senders."""
        self._sync_connection_times()
        self.connections = [c for c in self.connections if c.destination is not destination]
        self._mirror_connections()
        if self.connections and all(c.is_eos for c in self.connections) and not self.is_end_of_stream:
            self._on_eos(self.connections[0], self.connections[0].eos_position, False)

    def _on_eos(self, connection: ImageConnection, position: int, revoked: bool) -> None:
        connection.is_eos = True
        connection.eos_position = position
        if all(c.is_eos for c in self.connections):
            eos = max(c.eos_position for c in self.connections)
            self.log.end_of_stream_position = eos
            self.is_end_of_stream = True
            if revoked and not self.log.is_publication_revoked:     # once, though every EOS heartbeat says so
                self.log.is_publication_revoked = True
                self.rebuild.disarm()           # a revoked image is tracked in Python alone (rebuild_pass)
                self.system[ctr.PUBLICATION_IMAGES_REVOKED].increment_ordered()

    def on_rttm(self, now_ns: int, echo_timestamp: int, reception_delta: int) -> None:
        rtt = now_ns - echo_timestamp - reception_delta
        if rtt >= 0:
            self.congestion_control.on_rttm(now_ns, rtt)

    # -- receiver thread: rebuild tracking, status messages, NAKs ----------------------------------------------
    def track_rebuild(self, now_ns: int) -> int:
        """Loss scan from the rebuild position to the high-water mark, receiver position, SM scheduling."""
        errno = self.rebuild.take_send_errno()
        if errno:
            # a status message or NAK the compiled pass failed to send: raised here as the Python path's sends raise
            raise ChannelEndpointError(f"{self.channel}: sendto {self.connections[0].control_address} "
                                       f"failed: errno {errno}")
        if self.state not in (ACTIVE, DRAINING) or not self.subscribers:
            return 0
        min_sub = INT64_MAX
        max_sub = 0
        for link in self.subscribers.values():
            if link.state == TETHER_RESTING:
                continue                    # an untethered subscriber that fell behind holds nothing back
            position = link.position.get_volatile()
            if position < min_sub:
                min_sub = position
            if position > max_sub:
                max_sub = position
        if min_sub == INT64_MAX:
            return 0
        rebuild = self.rebuild
        hwm = self.rcv_hwm.get_volatile()
        inserts = self.receive_state.inserts
        if rebuild.armed:
            # the same decisions in compiled code (rebuild_pass), the status message's interval left to
            # send_pending_status_message (its slack, the receiver's count of interval status messages)
            outcome = rebuild.track(min_sub, max_sub, now_ns, False)
            if outcome != TRACK_HAND_BACK:
                rebuild.set_tracked(inserts, hwm, min_sub, max_sub)
                return outcome
            # a send that failed in it is retried just below by the Python path, which raises if it fails again
            rebuild.take_send_errno()
        loss = self.loss_detector
        # nothing it depends on has moved since the last scan (no data inserted, hwm and subscribers where they were,
        # no NAK timer due, a static window): it would decide the same again
        if inserts == rebuild.tracked_inserts and hwm == rebuild.tracked_hwm and min_sub == rebuild.tracked_min_sub \
                and max_sub == rebuild.tracked_max_sub and self._static_window and \
                not (loss.gap_open and now_ns >= loss.expiry_ns):
            return 0
        rebuild.set_tracked(inserts, hwm, min_sub, max_sub)
        rcv_pos = self.rcv_pos.get()
        rebuild = max(rcv_pos, max_sub)
        shift = self.position_bits_to_shift
        rebuild_term_offset = rebuild & self.term_length_mask
        rebuild_term_id = ((rebuild >> shift) + self.initial_term_id + (1 << 31)) % (1 << 32) - (1 << 31)
        hwm_term_id = ((hwm >> shift) + self.initial_term_id + (1 << 31)) % (1 << 32) - (1 << 31)
        term = self.terms[(rebuild >> shift) % 3]
        end_offset, loss_found = self.loss_detector.scan(term, self.term_length, rebuild_term_id, rebuild_term_offset,
                                                         hwm_term_id, hwm & self.term_length_mask, now_ns)
        new_rebuild = rebuild - rebuild_term_offset + end_offset
        if new_rebuild > rcv_pos:
            self.rcv_pos.set_ordered(new_rebuild)
        window, force = self.congestion_control.on_track_rebuild(now_ns, min_sub, self.next_sm_position, hwm,
                                                                 loss_found)
        work = 0
        if force or min_sub > self.next_sm_position + (window >> 2) or window != self.next_sm_window:
            self.clean_buffer_to(min_sub - self.term_length)
            self.next_sm_position = min_sub
            self.next_sm_window = window
            self.sm_pending = True
            work = 1
        return work

    def status_message_threshold(self) -> int | None:
        """The position that every subscriber that holds the image back (not resting) must reach before the rebuild
        tracking schedules the next status message for their progress (a static window: a quarter of it past the
        last one); None when any move of a subscriber may matter (a window that congestion control sets, an image
        not ACTIVE)."""
        if self.state != ACTIVE or not self._static_window:
            return None
        return self.rebuild.status_message_threshold

    def rebuild_pass(self) -> RebuildPass | None:
        """The compiled rebuild pass, aimed, for a receiver's probe to run between duty cycles
        (Receiver.probe_watch), or None, and the pass disarmed, while only this Python path may track the image: not
        ACTIVE, rejected, announcing a response session, a window that congestion control sets, unreliable (gaps
        filled), NAK delays drawn at random (multicast), more than one connection, a socket that is not compiled (a
        loss generator's), or a loss report kept by another clock than the system's."""
        rebuild = self.rebuild
        connections = self.connections
        transport = None
        if len(connections) == 1:
            destination = connections[0].destination
            if destination is None and self.endpoint.destinations:
                destination = self.endpoint.destinations[0]
            transport = destination.transport if destination is not None else None
        if not self._may_rebuild_in_compiled_code() or not self._static_window or not self.is_reliable or \
                not self.loss_detector.static or type(transport) is not UdpTransport or \
                (self.loss_report is not None and self._epoch_clock_ms is not epoch_ms) or \
                self.log.is_publication_revoked:
            rebuild.disarm()
            return None
        connection = connections[0]
        rebuild.aim(transport, connection.control_address, self.loss_report, self.loss_report_entry,
                    connection.time_of_last_frame_ns)
        # the conductor may have ended it meanwhile (draining, a response session): it sets those, then disarms
        if not self._may_rebuild_in_compiled_code():
            rebuild.disarm()
            return None
        return rebuild

    def try_arm(self) -> None:
        """Aim the compiled rebuild pass (rebuild_pass) for the receiver's duty cycle, once after each time it was
        disarmed: an image that cannot have it is not asked again until something changes."""
        rebuild = self.rebuild
        if rebuild.armed or rebuild.disarms == self._arm_tried:
            return
        try:
            self.rebuild_pass()
        except IllegalStateError:
            rebuild.disarm()                # its socket or log closing: the Python path tracks it meanwhile
        self._arm_tried = rebuild.disarms

    def _may_rebuild_in_compiled_code(self) -> bool:
        # what other threads change: the conductor (draining, a response session), a rejection
        return self.state == ACTIVE and self.rejection_reason is None and self.response_session_id is None

    def next_deadline_ns(self, now_ns: int, far_ns: int) -> int:
        """When the receiver next has a timer of this image due: a status message (or rejection) interval, a
        pending status message (now), a NAK; ``far_ns`` at the latest (a parked receiver's wake-up time)."""
        if self.state == DONE:
            return far_ns
        if self.sm_pending and self.rejection_reason is None:
            return now_ns
        deadline = min(far_ns, self.time_of_last_sm_ns + SM_TIMEOUT_NS)
        loss = self.loss_detector
        if loss.gap_open and loss.expiry_ns < deadline:
            deadline = loss.expiry_ns
        return deadline

    def send_pending_status_message(self, now_ns: int, slack_ns: int = -1) -> int:
        """Send the status message if one is pending or its interval is up (within ``slack_ns`` of it, by default
        ``timer_slack_ns``); returns 1 when it sent one (or an error frame for a rejected image)."""
        if self.state == DONE:
            return 0
        if self.rejection_reason is not None:
            return self._send_rejection(now_ns)
        if slack_ns < 0:
            slack_ns = self.timer_slack_ns
        if not self.sm_pending and now_ns + slack_ns < self.time_of_last_sm_ns + SM_TIMEOUT_NS:
            return 0
        position = self.next_sm_position
        window = self.next_sm_window
        shift = self.position_bits_to_shift
        term_id = ((position >> shift) + self.initial_term_id + (1 << 31)) % (1 << 32) - (1 << 31)
        flags = SM_EOS_FLAG if self.state != ACTIVE else 0
        length = encode_status_message(self._sm, 0, self.session_id, self.stream_id, term_id,
                                       position & self.term_length_mask, window, self.receiver_id, self.group_tag,
                                       flags)
        response_session_id = self.response_session_id
        if response_session_id is not None:
            encode_response_setup(self._response_setup, 0, self.session_id, self.stream_id, response_session_id)
            for connection in self._live_connections(now_ns):
                self.endpoint.send_to(self._response_setup, connection.control_address, connection.destination)
        with memoryview(self._sm)[:length] as frame:
            for connection in self._live_connections(now_ns):
                self.endpoint.send_to(frame, connection.control_address, connection.destination)
        self.system[ctr.STATUS_MESSAGES_SENT].increment_ordered()
        self.last_sm_position = position
        self.last_sm_window = window
        self.time_of_last_sm_ns = now_ns
        self.sm_pending = False
        # connections with a frame within the image liveness timeout (aeron_update_active_transport_count)
        self.log.active_transport_count = sum(1 for c in self.connections
                                              if now_ns - c.time_of_last_frame_ns < self.liveness_timeout_ns)
        if self.congestion_control.should_measure_rtt(now_ns):
            encode_rttm(self._rttm, 0, self.session_id, self.stream_id, now_ns, 0, self.receiver_id, RTTM_REPLY_FLAG)
            for connection in self._live_connections(now_ns):
                self.endpoint.send_to(self._rttm, connection.control_address, connection.destination)
            self.congestion_control.on_rttm_sent(now_ns)
        return 1

    # -- conductor thread: response channels ---------------------------------------------------------------------
    def set_response_session_id(self, response_session_id: int | None) -> None:
        """The session of the response publication made for this image (None once it has connected); a new one is
        announced with the next status message, sent at once."""
        self.response_session_id = response_session_id
        if response_session_id is not None:
            self.sm_pending = True
            self.rebuild.disarm()                   # RSP_SETUP frames go with the status messages: Python's alone

    # -- receiver thread: rejection (REJECT_IMAGE) ------------------------------------------------------------
    def reject(self, reason: str) -> None:
        """Port of aeron_publication_image_invalidate: from now on nothing is inserted and, instead of status
        messages, every sender hears an error frame (IMAGE_REJECTED, ``reason``) each status message interval. With
        no status messages and no data the senders drop this receiver and the image goes at its liveness timeout;
        a sender that keeps sending SETUPs then makes a new image."""
        self.rejection_reason = reason
        self.rebuild.disarm()
        self.receive_state.accepting = False            # its datagrams go to insert_packet, which drops them
        self.rebuild.rejected = True                    # error frames: the receiver's cycle leaves it to Python
        self.time_of_last_sm_ns = 0                     # the first error frame goes out at once

    def _send_rejection(self, now_ns: int) -> int:
        if now_ns < self.time_of_last_sm_ns + SM_TIMEOUT_NS:
            return 0
        self.time_of_last_sm_ns = now_ns
        length = encode_error(self._error, 0, self.session_id, self.stream_id, self.receiver_id,
                              ErrorCode.IMAGE_REJECTED, self.rejection_reason, self.group_tag)
        with memoryview(self._error)[:length] as frame:
            for connection in self.connections:
                if self.endpoint.send_to(frame, connection.control_address, connection.destination) == length:
                    self.system[ctr.ERROR_FRAMES_SENT].increment_ordered()
        return 1

    def _live_connections(self, now_ns: int) -> list[ImageConnection]:
        # a fixed address (multicast control group, explicit control) is kept while its destination is active, a
        # sender's source while it sends (image liveness)
        self._sync_connection_times()
        live = [c for c in self.connections if now_ns - max(c.time_of_last_frame_ns, c.time_of_last_activity_ns) <= (
            DESTINATION_TIMEOUT_NS if c.is_fixed else self.liveness_timeout_ns)]
        return live or self.connections[:1]

    def _on_gap_timer(self, term_id: int, term_offset: int, length: int) -> None:
        # the loss report hears of a gap when it is NAKed (or filled), only the bytes it has not had yet
        # (aeron_publication_image_on_gap_detected): a gap that fills before its timer is no loss there
        lost = self.loss_detector.report_loss(term_id, term_offset, length)
        if lost > 0:
            self._report_loss(lost)
        if not self.is_reliable:
            term = self.terms[(self.position_of(term_id, term_offset) >> self.position_bits_to_shift) % 3]
            if TermGapFiller.try_fill_gap(self.log, term, term_id, term_offset, length):
                self.system[ctr.LOSS_GAP_FILLS].increment_ordered()
                self.rebuild.tracked_inserts = -1   # the term changed: the next rebuild scan steps over the fill
            return
        encode_nak(self._nak, 0, self.session_id, self.stream_id, term_id, term_offset, length)
        for connection in self._live_connections(self.time_of_last_packet_ns):
            self.endpoint.send_to(self._nak, connection.control_address, connection.destination)
        self.naks_sent.increment_ordered()
        self.system[ctr.NAK_MESSAGES_SENT].increment_ordered()

    def _on_loss(self, term_id: int, term_offset: int, length: int) -> None:
        self.loss_found = True

    def _report_loss(self, bytes_lost: int) -> None:
        report = self.loss_report
        if report is None:
            return
        try:
            # loss-report.dat timestamps are epoch milliseconds (LossReport), not the driver's nano clock
            now_ms = self._epoch_clock_ms()
            if self.loss_report_entry < 0:
                self.loss_report_entry = report.create_entry(
                    bytes_lost, now_ms, self.session_id, self.stream_id, self.channel, self.source_identity)
                if self.loss_report_entry < 0:
                    self.loss_report = None     # no room for this image's entry: no more tries (as Aeron)
                self.rebuild.disarm()           # aimed again with the new entry (try_arm)
            else:
                report.record_observation(self.loss_report_entry, bytes_lost, now_ms)
        except Exception:        # noqa: BLE001 - the loss report must not stop the receiver
            pass

    # -- conductor thread --------------------------------------------------------------------------------------
    def receiver_release(self) -> None:
        """The receiver no longer inserts into this image (aeron_publication_image_receiver_release)."""
        self.receiver_released = True

    def is_drained(self) -> bool:
        rcv_pos = self.rcv_pos.get_volatile()
        return all(position >= rcv_pos for position in working_positions(self.subscribers.values()))

    def has_working_positions(self) -> bool:
        """Some subscriber holds the image (not every one an untethered subscriber resting)."""
        return any(link.state != TETHER_RESTING for link in self.subscribers.values())

    def subscriber_join_position(self) -> int:
        """Where a new subscriber, or a resting untethered one that resumes, starts
        (aeron_publication_image_join_position): with the slowest working subscriber, so that two subscriptions of
        one stream see the same messages, else at the receiver position.

        Aeron takes the lower of the receiver position and the working subscribers', the receiver position being at
        most a receiver duty cycle old there. Ours can be older (the receiver's whole cycles, which move it, wait
        while backoff's compiled phases take data in): a subscriber may have read past it, which proves the image
        rebuilt at least that far. So the slowest working subscriber is the join position whenever there is one,
        which is what Aeron's formula gives with a current receiver position."""
        working = working_positions(self.subscribers.values())
        return min(working) if working else self.rcv_pos.get_volatile()

    def add_subscriber(self, link: SubscriberPosition) -> None:
        self.subscribers[link.subscription.registration_id] = link

    def remove_subscriber(self, subscription_registration_id: int) -> SubscriberPosition | None:
        return self.subscribers.pop(subscription_registration_id, None)

    def on_time_event(self, now_ns: int, now_ms: int, conductor: NetworkResources) -> int:
        """Port of aeron_publication_image_on_time_event: ACTIVE (untethered subscribers checked) until the sender
        goes quiet (sooner for an unconfirmed image of a contended endpoint or source: UnconfirmedImages.reclaims),
        ends its stream or no subscriber holds the image; DRAINING (EOS status messages) until the
        working subscribers have read it all; LINGER (the images are gone) until the receiver let go and clients
        had time to unmap; then DONE. Returns the work."""
        state = self.state
        if state == ACTIVE:
            work = self.check_untethered_subscriptions(now_ns, conductor) if self.subscribers else 0
            # silence as the receiver saw it: when this driver was held up (a loaded machine), what the sender sent
            # meanwhile waits in the socket, and the conductor may run first; the image is inactive only once the
            # receiver has polled and found nothing for the liveness timeout
            polled_ns = self.endpoint.time_of_last_poll_ns
            seen_ns = min(now_ns, polled_ns) if polled_ns > 0 else now_ns
            silent_ns = seen_ns - self.time_of_last_packet_ns
            # an image whose source never sent a frame goes sooner while its endpoint (or source) turns SETUPs away
            inactive = silent_ns > self.liveness_timeout_ns or self.endpoint.unconfirmed.reclaims(
                self.unconfirmed_hold, self, silent_ns, now_ns)
            eos = self.is_end_of_stream and self.rcv_pos.get_volatile() >= self.rcv_hwm.get_volatile()
            if inactive or eos or not self.has_working_positions():
                self.state = DRAINING
                self.state_change_ns = now_ns
                self.sm_pending = True
                # its status messages carry EOS from now: Python's alone. Disarmed after the state is set: the
                # receiver thread aims the pass and then looks at the state again (rebuild_pass)
                self.rebuild.disarm()
                work += 1
            return work
        if state == DRAINING:
            if self.is_drained() or now_ns - self.state_change_ns > self.liveness_timeout_ns:
                self.state = LINGER
                self.state_change_ns = now_ns
                for link in list(self.subscribers.values()):
                    subscription = link.subscription
                    if link.state == TETHER_ACTIVE:     # untethered ones in LINGER/RESTING were told already
                        conductor.client_proxy.on_unavailable_image(self.correlation_id, subscription.registration_id,
                                                                    self.stream_id, subscription.channel)
                    conductor.unlink_subscriber(subscription, self, self.correlation_id)
                conductor.remove_image_from_receiver(self, now_ns)
                return 1
        elif state == LINGER:
            if self.receiver_released and now_ns - self.state_change_ns > IMAGE_LINGER_NS:
                self.state = DONE
                return 1
        return 0

    def check_untethered_subscriptions(self, now_ns: int, conductor: NetworkResources) -> int:
        """Port of aeron_publication_image_check_untethered_subscriptions (untethered.py): measured against the
        farthest working subscriber and the receiver window; a rejoining subscriber resumes at
        ``subscriber_join_position``; the timeouts are those of the subscription that made the image."""
        def rejoin(link: SubscriberPosition) -> None:
            link.position.set_ordered(self.subscriber_join_position())
            conductor.on_image_available(self, link)

        def unavailable(link: SubscriberPosition) -> None:
            conductor.client_proxy.on_unavailable_image(self.correlation_id, link.subscription.registration_id,
                                                        self.stream_id, link.subscription.channel)
        positions = working_positions(self.subscribers.values())
        work = check_untethered_subscriptions(
            self.subscribers.values(), untethered_window_limit(max(positions, default=0), self.next_sm_window),
            now_ns, unavailable, lambda link: conductor.unlink_subscriber(link.subscription, self, self.correlation_id),
            rejoin, self.untethered_timeouts)
        if work:
            self.refresh_positions()        # a subscriber that rests holds nothing back, one that rejoins does
        return work

    def has_reached_end_of_life(self) -> bool:
        return self.state == DONE

    def close(self) -> None:
        """Release the counters' handles and the log (the conductor frees the counters themselves)."""
        for counter in (self.rcv_hwm, self.rcv_pos, self.naks_sent):
            counter.close()
        self.congestion_control.detach_counters()
        for link in self.subscribers.values():
            link.position.close()
        super().close()
