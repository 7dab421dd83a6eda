# SPDX-License-Identifier: Apache-2.0
"""SendChannelEndpoint: the socket of one send channel, shared by every network publication on it
(port of aeron_send_channel_endpoint.c). Data goes to the channel's endpoint (unicast or multicast group) or, for
multi-destination-cast, to every destination; status messages, NAKs, RTT measurements and error frames come
back here and are dispatched to the publication by (session id, stream id)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aeron._core import counters as ctr
from aeron.driver import protocol as p
from aeron.driver.udp_channel import UdpChannel

if TYPE_CHECKING:
    from aeron.driver.network_publication import NetworkPublication
    from aeron._core.udp_transport import UdpTransport

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
                 system: dict[int, Any]) -> None:
        self.udp_channel = udp_channel
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
        self._bytes_sent = system[ctr.BYTES_SENT]
        self._bytes_received = system[ctr.BYTES_RECEIVED]
        self._invalid = system[ctr.INVALID_PACKETS]
        self._short_sends = system[ctr.SHORT_SENDS]
        self.destinations_counter_id: int | None = None
        self._destinations_counter: Any = None
        self.status.set_ordered(ctr.CHANNEL_ENDPOINT_STATUS_ACTIVE)

    def attach_destinations_counter(self, counter_id: int, counter: Any) -> None:
        """The mdc-num-dest counter of an MDC endpoint, kept equal to the number of destinations."""
        self.destinations_counter_id = counter_id
        self._destinations_counter = counter
        counter.set_ordered(len(self.destinations))

    def _destinations_changed(self) -> None:
        if self._destinations_counter is not None:
            self._destinations_counter.set_ordered(len(self.destinations))

    # -- sending ---------------------------------------------------------------------------------------------
    def send(self, data) -> int:
        """Send one datagram to the channel's destination(s); returns its length when it went out (for MDC: to
        at least one destination, as Aeron's "bytes sent" of the last destination)."""
        transport = self.transport
        if not self.is_mdc:
            if self.remote is None:
                return 0
            sent = transport.send(data, self.remote)
        else:
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

    def send_term_batch(self, term, term_offset: int, window: int, mtu: int, max_datagrams: int) -> tuple[int, int]:
        """Scan and send up to ``max_datagrams`` MTU-sized datagrams of ``term`` in one sendmmsg per destination;
        (bytes sent, sender position advance), as UdpTransport.send_term_batch."""
        transport = self.transport
        if not self.is_mdc:
            if self.remote is None:
                return 0, 0
            sent, advance = transport.send_term_batch(term, term_offset, window, mtu, max_datagrams, self.remote)
        else:
            sent = advance = 0
            for destination in self.destinations:
                result = transport.send_term_batch(term, term_offset, window, mtu, max_datagrams,
                                                   destination.address)
                if result[1] > advance:
                    sent, advance = result
            if not self.destinations:
                return 0, 0
        if sent > 0:
            self._bytes_sent.get_and_add(sent)
        return sent, advance

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
        transport = self.transport
        work = 0
        while work < CONTROL_DRAIN_LIMIT:
            received = transport.receive_batch()              # one recvmmsg, GIL released
            if received == 0:
                break
            work += received
            slots = transport.slots
            for i in range(received):
                length = transport.length(i)
                if length == 0:
                    continue
                buffer = slots[i]
                self._bytes_received.get_and_add(length)
                frame_type = p.frame_type(buffer, length)
                if frame_type == p.HDR_TYPE_SM:
                    self._on_status_message(buffer, length, transport.source(i), now_ns)
                elif frame_type == p.HDR_TYPE_NAK:
                    self._on_nak(buffer, now_ns)
                elif frame_type == p.HDR_TYPE_RTTM:
                    _, _, flags, _, session_id, stream_id, echo, _delta, receiver_id = p.RTTM.unpack_from(buffer, 0)
                    publication = self.publications.get((session_id, stream_id))
                    if publication is not None:
                        publication.on_rttm(flags, echo, receiver_id)
                elif frame_type == p.HDR_TYPE_ERR:
                    self._on_error(buffer, length)
                elif frame_type < 0:
                    self._invalid.increment_ordered()
        return work

    def _on_status_message(self, buffer, length: int, source: tuple, now_ns: int) -> None:
        frame_length, _, flags, _, session_id, stream_id, term_id, term_offset, window, receiver_id = \
            p.SM.unpack_from(buffer, 0)
        group_tag = p.sm_group_tag(buffer, frame_length) if length >= p.SM_WITH_GROUP_TAG_LENGTH else None
        self.system[ctr.STATUS_MESSAGES_RECEIVED].increment_ordered()
        if self.is_dynamic:
            self._track_destination(source, receiver_id, now_ns)
        if session_id == 0 and stream_id == 0 and flags & p.SM_SEND_SETUP_FLAG:
            for publication in self.publications.values():
                publication.on_status_message(flags, 0, 0, 0, receiver_id, group_tag, source, now_ns)
            return
        publication = self.publications.get((session_id, stream_id))
        if publication is None:
            return
        if term_offset < 0 or term_offset >= publication.term_length or term_offset & 31:
            self.system[ctr.STATUS_MESSAGES_REJECTED].increment_ordered()
            return
        publication.on_status_message(flags, term_id, term_offset, window, receiver_id, group_tag, source, now_ns)

    def _track_destination(self, source: tuple, receiver_id: int, now_ns: int) -> None:
        for destination in self.destinations:
            if destination.receiver_id == receiver_id:
                destination.address = source
                destination.time_of_last_activity_ns = now_ns
                return
        self.destinations.append(Destination(source, 0, receiver_id, now_ns))
        self._destinations_changed()

    def check_destinations(self, now_ns: int) -> None:
        """Dynamic MDC: forget receivers silent for 5 s."""
        if self.is_dynamic and self.destinations:
            self.destinations = [d for d in self.destinations
                                 if now_ns - d.time_of_last_activity_ns <= DESTINATION_TIMEOUT_NS]
            self._destinations_changed()

    def _on_nak(self, buffer, now_ns: int) -> None:
        _, _, _, _, session_id, stream_id, term_id, term_offset, length = p.NAK.unpack_from(buffer, 0)
        self.system[ctr.NAK_MESSAGES_RECEIVED].increment_ordered()
        publication = self.publications.get((session_id, stream_id))
        if publication is None:
            return
        term_length = publication.term_length
        if term_offset < 0 or term_offset >= term_length or term_offset & 31 or length < 0 or \
                term_offset + length > term_length:
            self._invalid.increment_ordered()
            return
        publication.on_nak(term_id, term_offset, length, now_ns)

    def _on_error(self, buffer, length: int) -> None:
        fields = p.ERR.unpack_from(buffer, 0)
        frame_length, session_id, stream_id, receiver_id, error_code, error_length = (
            fields[0], fields[4], fields[5], fields[6], fields[8], fields[9])
        if not 0 <= error_length <= p.MAX_ERROR_MESSAGE_LENGTH or p.ERR_HEADER_LENGTH + error_length > frame_length:
            self._invalid.increment_ordered()
            return
        self.system[ctr.ERROR_FRAMES_RECEIVED].increment_ordered()
        publication = self.publications.get((session_id, stream_id))
        if publication is not None:
            message = bytes(buffer[p.ERR_HEADER_LENGTH:p.ERR_HEADER_LENGTH + error_length]).decode("ascii", "replace")
            publication.on_error(receiver_id, error_code, message)

    def sender_release(self) -> None:
        """The sender no longer polls this endpoint (conductor thread, aeron_send_channel_endpoint_sender_release)."""
        self.sender_released = True

    def close(self) -> None:
        self.status.set_ordered(ctr.CHANNEL_ENDPOINT_STATUS_CLOSING)
        self.transport.close()
