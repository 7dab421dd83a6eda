# SPDX-License-Identifier: Apache-2.0
"""SendChannelEndpoint: the socket of one send channel, shared by every network publication on it
(port of aeron_send_channel_endpoint.c). Data goes to the channel's endpoint (unicast or multicast group) or, for
multi-destination-cast, to every destination; status messages, NAKs, RTT measurements and error frames come
back here and are dispatched to the publication by (session id, stream id)."""
from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING, Any

from aeron._core import counters as ctr
from aeron._core.control_dispatcher import ControlFrameReader
from aeron._core.frames import (
    ERR_HAS_GROUP_TAG_FLAG, HDR_TYPE_ERR, HDR_TYPE_NAK, HDR_TYPE_RSP_SETUP, HDR_TYPE_RTTM, HDR_TYPE_SM,
    SM_SEND_SETUP_FLAG, ErrorFrame, ResponseSetupFrame, decode_frame,
)
from aeron._core.send_pass import SendPass
from aeron._core.udp_transport import TIMESTAMP_NONE, UdpTransport
from aeron.common import command as cmd
from aeron.common.constants import NULL_VALUE       # no destination id, receiver id or group tag
from aeron.common.errors import ChannelEndpointError
from aeron.driver.udp_channel import CONTROL_MODE_RESPONSE, UdpChannel

if TYPE_CHECKING:
    from aeron.driver.network_publication import NetworkPublication

CONTROL_DRAIN_LIMIT = 64
DESTINATION_TIMEOUT_NS = 5_000_000_000


class Destination:
    __slots__ = ("address", "registration_id", "receiver_id", "time_of_last_activity_ns")

    def __init__(self, address: tuple, registration_id: int = 0, receiver_id: int = 0, now_ns: int = 0) -> None:
        self.address = address
        self.registration_id = registration_id
        self.receiver_id = receiver_id
        self.time_of_last_activity_ns = now_ns


class SendChannelEndpoint:
    def __init__(self, udp_channel: UdpChannel, transport: UdpTransport, registration_id: int,
                 status_counter_id: int, status: Any, local_sockaddr_counter_id: int,
                 system: dict[int, Any], on_publication_error: Any = None, on_response_setup: Any = None,
                 on_response_connected: Any = None) -> None:
        self.udp_channel = udp_channel
        # (PublicationErrorFrame) -> None, run on the sender thread: the conductor queues it for its clients
        self._on_publication_error = on_publication_error
        # response channels: (response correlation id, response session id) -> None when a request publication
        # hears RSP_SETUP; (response correlation id) -> None when a publication first hears a receiver
        self._on_response_setup = on_response_setup
        self._on_response_connected = on_response_connected
        self.is_response = udp_channel.control_mode == CONTROL_MODE_RESPONSE
        self.transport = transport
        self.registration_id = registration_id
        self.status_counter_id = status_counter_id
        self.status = status
        self.local_sockaddr_counter_id = local_sockaddr_counter_id
        self.system = system
        self.publications: dict[tuple[int, int], NetworkPublication] = {}
        self.ref_count = 0
        self.sender_released = False                  # the sender has dropped it: the conductor may close it
        self.destinations: list[Destination] = []
        self.is_mdc = udp_channel.is_multi_destination
        self.is_dynamic = udp_channel.is_dynamic_control_mode
        self.remote = udp_channel.remote_data
        self.status_messages_rejected = 0
        self._time_of_last_sm_ns = 0
        self._bytes_sent = system[ctr.BYTES_SENT]
        self._bytes_received = system[ctr.BYTES_RECEIVED]
        self._invalid = system[ctr.INVALID_PACKETS]
        self._short_sends = system[ctr.SHORT_SENDS]
        self._status_messages_received = system[ctr.STATUS_MESSAGES_RECEIVED]
        # status messages and NAKs are validated and parsed in compiled code, a batch per call
        self._control = ControlFrameReader(self._bytes_received, self._invalid)
        # the data of its publications goes out in one compiled pass per duty cycle (sender thread); a loss
        # generator's transport passes sends straight through to the compiled one it wraps
        inner = getattr(transport, "inner", transport)
        self._send_transport = inner if type(inner) is UdpTransport else None
        self._send_pass = SendPass()
        self.pass_publications: list[NetworkPublication] = []
        self.destinations_counter_id: int | None = None
        self._destinations_counter: Any = None
        self.status.set_ordered(ctr.CHANNEL_ENDPOINT_STATUS_ACTIVE)

    @property
    def time_of_last_sm_ns(self) -> int:
        """When a status message last came (a silent unicast endpoint's name is re-resolved: ReResolution), taken in
        Python or in the compiled control poll."""
        return max(self._time_of_last_sm_ns, self._control.last_fast_ns)

    # -- conductor thread --------------------------------------------------------------------------------------
    def incref(self) -> None:
        self.ref_count += 1

    def decref(self) -> int:
        """One publication fewer on this channel; returns how many are left."""
        self.ref_count -= 1
        return self.ref_count

    def add_publication(self, publication: NetworkPublication) -> None:
        """Status messages, NAKs and RTT measurements for (session, stream) go to ``publication``."""
        self.publications[(publication.session_id, publication.stream_id)] = publication

    def remove_publication(self, publication: NetworkPublication) -> None:
        self.publications.pop((publication.session_id, publication.stream_id), None)

    def attach_destinations_counter(self, counter_id: int, counter: Any) -> None:
        """The mdc-num-dest counter of an MDC endpoint, kept equal to the number of destinations."""
        self.destinations_counter_id = counter_id
        self._destinations_counter = counter
        counter.set_ordered(len(self.destinations))

    # -- sender thread -----------------------------------------------------------------------------------------
    def on_status_message_rejected(self) -> None:
        """A publication refused a status message (its position is outside the term window)."""
        self.status_messages_rejected += 1
        self.system[ctr.STATUS_MESSAGES_REJECTED].increment_ordered()

    def _destinations_changed(self) -> None:
        if self._destinations_counter is not None:
            self._destinations_counter.set_ordered(len(self.destinations))
        if self._pass_destinations:
            self._send_pass.set_destinations(self._send_transport, [d.address for d in self.destinations])

    # -- sending ---------------------------------------------------------------------------------------------
    def send(self, data, address: tuple | None = None) -> int:
        """Send one datagram to the channel's destination(s), or to ``address`` (a response publication's
        subscriber); returns its length when it went out (for MDC: to at least one destination, as Aeron's "bytes
        sent" of the last destination)."""
        transport = self.transport
        if address is not None:
            sent = transport.send(data, address)
        elif not self.is_mdc:
            if self.remote is None:
                return 0
            sent = transport.send(data, self.remote)
        else:
            if not self.destinations:       # nobody to send to is no short send (aeron_udp_destination_tracker_send)
                return len(data) if not isinstance(data, memoryview) else data.nbytes
            sent = 0
            for destination in self.destinations:
                result = transport.send(data, destination.address)
                if result > 0:
                    sent = result
        length = len(data) if not isinstance(data, memoryview) else data.nbytes
        if sent == length:
            self._bytes_sent.get_and_add(sent)
        elif sent >= 0:
            self._short_sends.increment_ordered()
        return sent

    def send_term_batch(self, term, term_offset: int, window: int, mtu: int, max_datagrams: int,
                        address: tuple | None = None, count_bytes: bool = True) -> tuple[int, int]:
        """Scan and send up to ``max_datagrams`` MTU-sized datagrams of ``term`` in one sendmmsg per destination
        (or to ``address``, see send); (bytes sent, sender position advance), as UdpTransport.send_term_batch.
        ``count_bytes=False`` for retransmits, which the bytes-sent counter leaves out (as aeronmd's)."""
        transport = self.transport
        if address is not None:
            sent, advance = transport.send_term_batch(term, term_offset, window, mtu, max_datagrams, address)
        elif not self.is_mdc:
            if self.remote is None:
                return 0, 0
            sent, advance = transport.send_term_batch(term, term_offset, window, mtu, max_datagrams, self.remote)
        else:
            # One batch for every destination, as Aeron sends one scan's datagrams to each: the first destination
            # whose scan finds data fixes the batch (its advance), and every other one, before or after it, is sent
            # exactly that range. Scanning each with the whole window let a frame the publisher committed between
            # two scans reach only the later destinations while the sender position moved past it for all: a loss
            # that no NAK mends once the publication has moved half a term on.
            sent = advance = 0
            missed = []
            for destination in self.destinations:
                if advance == 0:
                    sent, advance = transport.send_term_batch(term, term_offset, window, mtu, max_datagrams,
                                                              destination.address)
                    if advance == 0:
                        missed.append(destination)
                else:
                    transport.send_term_batch(term, term_offset, advance, mtu, max_datagrams, destination.address)
            if advance == 0:
                return 0, 0
            for destination in missed:
                transport.send_term_batch(term, term_offset, advance, mtu, max_datagrams, destination.address)
        if sent > 0 and count_bytes:
            self._bytes_sent.get_and_add(sent)
        return sent, advance

    # -- the compiled send pass (sender thread) ------------------------------------------------------------------
    def sender_add_publication(self, publication: NetworkPublication) -> bool:
        """The sender takes on ``publication``: True when this endpoint's compiled pass sends its data (unicast or
        multicast to the channel's endpoint, or to each destination of a manual multi-destination-cast channel, over
        sendmmsg, no send timestamps, not a response publication, which sends to one subscriber), False when the
        sender calls its own ``send`` (dynamic multi-destination-cast, whose destinations come and go with their
        status messages)."""
        transport = self._send_transport
        if transport is None or publication.is_response or self.is_dynamic or \
                (self.remote is None and not self.is_mdc) or \
                not transport.use_mmsg or transport.channel_send_timestamp_offset != TIMESTAMP_NONE:
            return False
        self._set_pass([*self.pass_publications, publication])
        return True

    @property
    def _pass_destinations(self) -> bool:
        """Whether the compiled pass sends to this endpoint's destinations (manual multi-destination-cast)."""
        return self.is_mdc and not self.is_dynamic and self._send_transport is not None

    def sender_remove_publication(self, publication: NetworkPublication) -> None:
        if publication in self.pass_publications:
            self._set_pass([p for p in self.pass_publications if p is not publication])
            publication.attach_pass(None, -1)

    def _set_pass(self, publications: list[NetworkPublication]) -> None:
        send_pass = self._send_pass
        for i, publication in enumerate(self.pass_publications):      # what the old table holds for them
            publication.take_pass_sent(send_pass.last_sent_ns(i), send_pass.take_sent(i))
            publication.sync_fast_status()
        send_pass.set_publications([(p.terms, p.snd_pos, p.snd_lmt, p.mtu, p.max_messages_per_send, p.log, p.snd_bpe)
                                    for p in publications])
        for i, publication in enumerate(publications):                  # each is due at its first pass
            publication.attach_pass(send_pass, i)
        if self._pass_destinations and not send_pass.multi_destination:
            send_pass.set_destinations(self._send_transport, [d.address for d in self.destinations])
        if publications and not send_pass.bound:
            # where the pass goes when a backoff's probes run it themselves (DataSpin.backoff), as send_data would
            send_pass.bind(self._send_transport, self.remote, self._bytes_sent)
            if not self.is_dynamic and not self.is_response:
                # the status messages its publications let it take (NetworkPublication._refresh_fast_status)
                self._control.set_fast(send_pass, self._status_messages_received,
                                       self.system[ctr.NAK_MESSAGES_RECEIVED])
        self.pass_publications = publications

    def send_pass(self, now_ns: int) -> int:
        """One duty cycle's send for the publications of the compiled pass: their data in one compiled call, then the
        setup, heartbeat, idle flow control and retransmit timeouts of those that are due. Returns the data bytes
        sent."""
        send_pass = self._send_pass
        total = send_pass.send(self._send_transport, self.remote, now_ns)
        if total:
            self._bytes_sent.get_and_add(total)
        if send_pass.due_count:
            publications = self.pass_publications
            for k in range(send_pass.due_count):
                i = send_pass.due(k)
                send_pass.set_due(i, publications[i].on_pass_due(now_ns, send_pass.sent(i), send_pass.last_sent_ns(i),
                                                                 send_pass.take_sent(i)))
        if send_pass.resend_errno:
            # a NAK resent in compiled code (ControlFrameReader.poll) failed: reported as a resend from Python is
            raise ChannelEndpointError(f"{self.udp_channel.original}: a retransmit's sendmmsg failed: errno "
                                       f"{send_pass.take_resend_errno()}")
        return total

    @property
    def compiled_send_pass(self) -> Any:
        """The SendPass of this endpoint's pass publications (a data spin watches it for offered data)."""
        return self._send_pass

    def send_data(self, now_ns: int) -> int:
        """The compiled pass alone, for the wake-up spin between duty cycles: data that was offered goes out (the pass
        keeps when and how much, as in send_pass); the publications' Python parts that are due (setup, heartbeat,
        timers) wait for the next whole duty cycle. Returns the bytes sent."""
        total = self._send_pass.send(self._send_transport, self.remote, now_ns)
        if total:
            self._bytes_sent.get_and_add(total)
        return total

    def add_destination(self, address: tuple, registration_id: int, now_ns: int) -> None:
        self.destinations.append(Destination(address, registration_id, 0, now_ns))
        self._destinations_changed()

    def remove_destination(self, address: tuple | None = None, registration_id: int | None = None) -> bool:
        before = len(self.destinations)
        self.destinations = [d for d in self.destinations
                             if not ((address is not None and d.address == address) or
                                     (registration_id is not None and d.registration_id == registration_id))]
        self._destinations_changed()
        return len(self.destinations) != before

    # -- receiving control frames ------------------------------------------------------------------------------
    def poll_control(self, now_ns: int) -> int:
        """Read the control frames waiting (at most CONTROL_DRAIN_LIMIT datagrams): one compiled call per batch for
        a UdpTransport, one per datagram otherwise (a loss generator in Python, a test double). Returns the
        datagrams read."""
        transport = self.transport
        reader = self._control
        compiled = type(transport) is UdpTransport
        work = 0
        while work < CONTROL_DRAIN_LIMIT:
            if compiled:
                received = reader.poll(transport, now_ns)     # one recvmmsg, GIL released, records parsed
                if received == 0:
                    break
                self.on_records(now_ns)
            else:
                received = transport.receive_batch()
                if received == 0:
                    break
                slots = transport.slots
                for i in range(received):
                    if reader.parse_datagram(slots[i], transport.length(i)):
                        self._on_record(reader, 0, i, now_ns)
            work += received
        return work

    def probe_control(self) -> tuple[ControlFrameReader, UdpTransport] | None:
        """The control pass a compiled probe may run itself (DataSpin.backoff): its reader and socket, when the reader
        takes status messages in fast mode (an endpoint that tracks its receivers' addresses reads every one in
        Python); None otherwise."""
        if type(self.transport) is not UdpTransport or not self._control.fast:
            return None
        return self._control, self.transport

    def on_records(self, now_ns: int) -> None:
        """The records the reader's last poll left (NAKs, status messages it did not take, other frames): a duty
        cycle's control poll, or a probe's control pass, before the socket is read again."""
        reader = self._control
        for i in range(reader.record_count):
            self._on_record(reader, i, reader.slot(i), now_ns)

    def _on_record(self, reader: ControlFrameReader, index: int, slot: int, now_ns: int) -> None:
        transport = self.transport
        frame_type = reader.frame_type(index)
        if frame_type == HDR_TYPE_SM:
            self._on_status_message(*reader.status_message(index), slot, now_ns)
        elif frame_type == HDR_TYPE_NAK:
            self._on_nak(*reader.nak(index), now_ns)
        else:
            frame = decode_frame(transport.slots[slot], 0, transport.length(slot))
            if frame_type == HDR_TYPE_RTTM:
                publication = self.publications.get((frame.session_id, frame.stream_id))
                if publication is not None:
                    publication.on_rttm(frame.flags, frame.echo_timestamp, frame.receiver_id)
            elif frame_type == HDR_TYPE_ERR:
                self._on_error(frame, transport.source(slot))
            elif frame_type == HDR_TYPE_RSP_SETUP:
                self._on_response_setup_frame(frame)

    def _on_status_message(self, session_id: int, stream_id: int, flags: int, term_id: int, term_offset: int,
                           window: int, receiver_id: int, group_tag: int | None, slot: int, now_ns: int) -> None:
        self._status_messages_received.increment_ordered()
        self._time_of_last_sm_ns = now_ns
        # the source address only when it is used: making it costs more than the rest of a status message
        source = self.transport.source(slot) if self.is_dynamic or self.is_response else None
        if self.is_dynamic:
            self._track_destination(source, receiver_id, now_ns)
        # a subscription's periodic announcement (session 0, stream 0) only makes it a destination: no publication
        # answers it, as in aeron_send_channel_endpoint_on_status_message (a publication that took it for a request
        # would send a SETUP, and min/tagged flow control would hold its limit there, every second)
        publication = self.publications.get((session_id, stream_id))
        if publication is None:
            return
        # validate_frame's checks ran in the reader: the term offset is >= 0 and 32-aligned
        if term_offset >= publication.term_length:
            self.system[ctr.STATUS_MESSAGES_REJECTED].increment_ordered()
            return
        publication.on_status_message(flags, term_id, term_offset, window, receiver_id, group_tag, source, now_ns)

    def _track_destination(self, source: tuple, receiver_id: int, now_ns: int) -> None:
        for destination in self.destinations:
            if destination.receiver_id == receiver_id:
                destination.address = source
                destination.time_of_last_activity_ns = now_ns
                return
        self.destinations.append(Destination(source, NULL_VALUE, receiver_id, now_ns))
        self._destinations_changed()

    def check_destinations(self, now_ns: int) -> None:
        """Dynamic MDC: forget receivers silent for 5 s."""
        if self.is_dynamic and self.destinations:
            self.destinations = [d for d in self.destinations
                                 if now_ns - d.time_of_last_activity_ns <= DESTINATION_TIMEOUT_NS]
            self._destinations_changed()

    def _on_nak(self, session_id: int, stream_id: int, term_id: int, term_offset: int, length: int,
                now_ns: int) -> None:
        self.system[ctr.NAK_MESSAGES_RECEIVED].increment_ordered()
        publication = self.publications.get((session_id, stream_id))
        if publication is None:
            return
        # the reader checked the offset is >= 0 and 32-aligned and the length >= 0; the rest needs the term
        term_length = publication.term_length
        if term_offset >= term_length or term_offset + length > term_length:
            self._invalid.increment_ordered()
            return
        publication.on_nak(term_id, term_offset, length, now_ns)

    def _on_error(self, error: ErrorFrame, source: tuple | None = None) -> None:
        # validate_frame checked the text length (at most 1023 and within the frame)
        group_tag = error.group_tag if error.flags & ERR_HAS_GROUP_TAG_FLAG else NULL_VALUE
        self.system[ctr.ERROR_FRAMES_RECEIVED].increment_ordered()
        publication = self.publications.get((error.session_id, error.stream_id))
        if publication is not None:
            if publication.on_error(error.receiver_id, error.error_code, error.error_message) and \
                    self._on_publication_error is not None:
                # the first error frame of a receiver this publication knew (aeron_network_publication_on_error)
                self._on_publication_error(self._publication_error_frame(
                    publication.registration_id, error.session_id, error.stream_id, error.receiver_id, group_tag,
                    source, error.error_code, error.error_message))

    def _on_response_setup_frame(self, frame: ResponseSetupFrame) -> None:
        """Port of aeron_send_channel_endpoint_on_response_setup: the server's image of this request publication
        names the session of its response publication; the conductor binds the response subscription to it."""
        response_session_id = frame.response_session_id
        publication = self.publications.get((frame.session_id, frame.stream_id))
        if publication is not None and publication.response_correlation_id is not None and \
                self._on_response_setup is not None:
            self._on_response_setup(publication.response_correlation_id, response_session_id)

    def notify_response_connected(self, response_correlation_id: int) -> None:
        """A publication with a response correlation id heard its first receiver (sender thread)."""
        if self._on_response_connected is not None:
            self._on_response_connected(response_correlation_id)

    def _publication_error_frame(self, registration_id: int, session_id: int, stream_id: int, receiver_id: int,
                                 group_tag: int, source: tuple | None, error_code: int,
                                 message: str) -> cmd.PublicationErrorFrame:
        destination_id = NULL_VALUE
        address_type, port, address = 0, 0, b""
        if source is not None:
            for destination in self.destinations:
                if destination.address == source:
                    destination_id = destination.registration_id
            ip = ipaddress.ip_address(source[0].split("%")[0])
            address_type = cmd.ADDRESS_TYPE_IPV4 if ip.version == 4 else cmd.ADDRESS_TYPE_IPV6
            port, address = source[1], ip.packed
        return cmd.PublicationErrorFrame(registration_id, destination_id, session_id, stream_id, receiver_id, group_tag,
                                         address_type, port, address, error_code, message)

    def sender_release(self) -> None:
        """The sender no longer polls this endpoint (conductor thread, aeron_send_channel_endpoint_sender_release)."""
        self.sender_released = True

    def close(self) -> None:
        """Close the socket and release the counters' handles (the conductor frees the counters themselves)."""
        if not self.status.is_closed:
            self.status.set_ordered(ctr.CHANNEL_ENDPOINT_STATUS_CLOSING)
            self.status.close()
        if self._destinations_counter is not None:
            self._destinations_counter.close()
        self.transport.close()
