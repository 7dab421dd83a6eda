# SPDX-License-Identifier: Apache-2.0
"""The DriverConductor's UDP half (aeron_driver_conductor.c, network parts): send and receive channel endpoints,
network publications, network and spy subscriptions, publication images, their counters and lifecycles, and the
hand-offs to the Sender and Receiver agents. Mixed into DriverConductor, which owns the counters, the broadcast
to clients and the client sessions."""
from __future__ import annotations

import os
import random
import socket
from typing import Any

from aeron.common import command as cmd
from aeron._core import counters as ctr
from aeron._core.counters import AtomicCounter
from aeron._core.logbuffer import LOG_TYPE_CONCURRENT, LOG_TYPE_EXCLUSIVE, LogBuffers
from aeron.common.channel_uri import ChannelUri, parse_size
from aeron.driver import network_publication as np_
from aeron.driver import publication_image as pi
from aeron.driver.congestion_control import congestion_control_for
from aeron.driver.flow_control import flow_control_for
from aeron.driver.loss_detector import OptimalMulticastDelayGenerator, StaticDelayGenerator
from aeron.driver.network_publication import NetworkPublication
from aeron.driver.proxies import CommandQueue, DriverConductorProxy, ReceiverProxy, SenderProxy
from aeron.driver.publication_image import PublicationImage
from aeron.driver.receive_channel_endpoint import ReceiveChannelEndpoint
from aeron.driver.receive_destination import ReceiveDestination
from aeron.driver.receiver import Receiver
from aeron.driver.send_channel_endpoint import SendChannelEndpoint
from aeron.driver.sender import Sender
from aeron.driver.udp_channel import (
    CONTROL_MODE_RESPONSE, TIMESTAMP_NONE, TIMESTAMP_OFFSET_KEYS, TIMESTAMP_RESERVED_VALUE, UdpChannel, format_address)
from aeron.driver.udp_channel_transport import LossyTransport, open_udp_transport
from aeron.common.errors import ChannelEndpointError, ConfigurationError, ErrorCode, InvalidArgumentError
from aeron.driver import untethered
from aeron.driver.untethered import TETHER_ACTIVE, UntetheredTimeouts
from aeron._core.frames import SETUP_SEND_RESPONSE_FLAG

IMAGE_LINGER_NS = 1_000_000_000          # a closed image's log stays a moment for clients still mapping it
# what a receive destination may not set: it shares its subscription's socket settings and window (C driver's
# AERON_DRIVER_CONDUCTOR_INVALID_DESTINATION_KEYS)
INVALID_DESTINATION_KEYS = ("mtu", "rcv-wnd", "so-rcvbuf", "so-sndbuf", "response-correlation-id")
PROTOTYPE_CORRELATION_ID = -2            # response-correlation-id=prototype (AERON_URI_PROTOTYPE_VALUE_CORRELATION_ID)
TERM_MIN_LENGTH = 65536


def check_supported_udp_params(uri: ChannelUri, channel: str, is_subscription: bool) -> None:
    """Raise CommandError(INVALID_CHANNEL) for what needs a closed extension of the official driver: ats=true (Aeron
    Transport Security), which aeronmd without the premium extension refuses too."""
    from aeron.driver.driver_conductor import CommandError
    if (uri.get("ats") or "false").lower().startswith("t"):
        raise CommandError(ErrorCode.INVALID_CHANNEL, f"parameter ats=true (transport security) is not supported: "
                                                      f"{channel}")


def _wrap32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


class NetworkSubscription:
    """A subscription on a UDP channel (or a spy on a local network publication)."""

    __slots__ = ("registration_id", "client_id", "stream_id", "channel", "session_id", "endpoint", "is_spy",
                 "is_reliable", "rejoin", "tether", "cc", "group", "links", "udp_channel", "receiver_window",
                 "nak_delay_ns",
                 "window_limit_timeout_ns", "linger_timeout_ns", "resting_timeout_ns", "is_response")

    def __init__(self, registration_id: int, client_id: int, stream_id: int, channel: str, session_id: int | None,
                 endpoint: ReceiveChannelEndpoint | None, udp_channel: UdpChannel, is_spy: bool, is_reliable: bool,
                 rejoin: bool, tether: bool, cc: str | None, group: str | None) -> None:
        self.registration_id = registration_id
        self.client_id = client_id
        self.stream_id = stream_id
        self.channel = channel
        self.session_id = session_id
        self.endpoint = endpoint
        self.udp_channel = udp_channel
        self.is_spy = is_spy
        self.is_reliable = is_reliable
        self.rejoin = rejoin
        self.tether = tether
        self.cc = cc
        self.group = group
        self.links: dict[int, Any] = {}                  # image correlation / publication registration id -> it
        self.receiver_window: int | None = None          # rcv-wnd
        self.nak_delay_ns: int | None = None             # nak-delay
        self.window_limit_timeout_ns = 0
        self.linger_timeout_ns = 0
        self.resting_timeout_ns = 0
        # control-mode=response: matches no session until the response publication's is known (RSP_SETUP)
        self.is_response = False

    def matches(self, resource: Any) -> bool:
        return resource.stream_id == self.stream_id and (
            (self.session_id is None and not self.is_response) or self.session_id == resource.session_id)


class NetworkConductor:
    """Mixin: needs the DriverConductor's ``_ctx``, ``counters``, ``counters_values``, ``system``,
    ``_transmit``, ``_nano_clock``, ``aeron_dir``, ``get_or_add_client``, ``_allocate_session_id``,
    ``_uri_int``/``_uri_bool``/``_uri_duration``, ``loss_report``, ``to_driver`` and CommandError."""

    def _init_network(self) -> None:
        # agents on one thread (SHARED, INVOKER) cannot wait for each other when a command queue is full
        one_thread = self._ctx.threading_mode.name in ("SHARED", "INVOKER")
        self.command_queue = CommandQueue(producers=2)             # sender and receiver -> conductor
        self.conductor_proxy = DriverConductorProxy(self.command_queue, self.on_create_publication_image,
                                                    self.system[ctr.CONDUCTOR_PROXY_FAILS], one_thread,
                                                    on_publication_error=self.on_publication_error,
                                                    on_response_setup=self.on_response_setup,
                                                    on_response_connected=self.on_response_connected)
        self.sender = Sender(self._nano_clock, self.system, self.conductor_proxy)
        self.receiver = Receiver(self._nano_clock, self.system, self.conductor_proxy)
        self.sender_proxy = SenderProxy(self.sender, self.system[ctr.SENDER_PROXY_FAILS], one_thread)
        self.receiver_proxy = ReceiverProxy(self.receiver, self.system[ctr.RECEIVER_PROXY_FAILS], one_thread)
        self.send_endpoints: dict[str, SendChannelEndpoint] = {}
        self.receive_endpoints: dict[str, ReceiveChannelEndpoint] = {}
        self.network_publications: list[NetworkPublication] = []
        self.network_subscriptions: list[NetworkSubscription] = []
        self.images: list[PublicationImage] = []
        self._closing_send_endpoints: list[SendChannelEndpoint] = []
        self._closing_receive_endpoints: list[ReceiveChannelEndpoint] = []
        # destinations of multi-destination subscriptions as the conductor knows them (it owns their counters)
        self._receive_destinations: dict[ReceiveChannelEndpoint, list[ReceiveDestination]] = {}
        self._closing_receive_destinations: list[ReceiveDestination] = []
        # an MDS subscription's IPC and spy destinations: its registration id -> their subscription links
        self._mds_links: dict[int, list[Any]] = {}

    # -- helpers -------------------------------------------------------------------------------------------------
    def _udp_channel(self, channel: str, uri: ChannelUri, is_subscription: bool) -> UdpChannel:
        from aeron.driver.driver_conductor import CommandError
        try:
            if uri.is_spy:      # a spy names the publication's channel: parse it as the publication does
                return UdpChannel.parse(channel[len("aeron-spy:"):], is_subscription=False)
            return UdpChannel.parse(channel, uri, is_subscription=is_subscription)
        except ConfigurationError as exc:
            raise CommandError(ErrorCode.INVALID_CHANNEL, f"{exc}") from exc

    def _socket_buffers(self, uri: ChannelUri) -> tuple[int, int]:
        ctx = self._ctx
        rcvbuf = self._uri_int(uri, "so-rcvbuf", parse_size, None)
        sndbuf = self._uri_int(uri, "so-sndbuf", parse_size, None)
        return (ctx.socket_rcvbuf if rcvbuf is None else rcvbuf, ctx.socket_sndbuf if sndbuf is None else sndbuf)

    def _channel_counters(self, kind: str, channel: str, registration_id: int, bound: tuple) -> tuple[int, int]:
        """snd-channel/rcv-channel status counter and its local-sockaddr counter (§5.6, §5.7)."""
        type_id = ctr.DRIVER_SEND_CHANNEL_STATUS_TYPE_ID if kind == "snd" else ctr.DRIVER_RECEIVE_CHANNEL_STATUS_TYPE_ID
        address = format_address(bound)
        status_id = self.counters.allocate(
            f"{kind}-channel: {channel} {address}"[:ctr.MAX_LABEL_LENGTH], type_id,
            ctr.channel_status_key_encode(channel), registration_id=registration_id)
        sockaddr_id = self.counters.allocate(
            f"{kind}-local-sockaddr: {status_id} {address}", ctr.DRIVER_LOCAL_SOCKET_ADDRESS_STATUS_TYPE_ID,
            ctr.local_sockaddr_key_encode(status_id, address), registration_id=registration_id)
        self.counters.set_counter_value(sockaddr_id, ctr.CHANNEL_ENDPOINT_STATUS_ACTIVE)
        return status_id, sockaddr_id

    def _stream_counters(self, names: list[tuple[str, int]], registration_id: int, session_id: int, stream_id: int,
                         channel: str, owner_id: int) -> dict[str, tuple[int, AtomicCounter]]:
        key = ctr.stream_counter_key_encode(registration_id, session_id, stream_id, channel)
        out: dict[str, tuple[int, AtomicCounter]] = {}
        try:
            for name, type_id in names:
                counter_id = self.counters.allocate(
                    ctr.stream_counter_label(name, registration_id, session_id, stream_id, channel), type_id, key,
                    registration_id=registration_id, owner_id=owner_id)
                out[name.split(" ")[0]] = (counter_id, AtomicCounter(self.counters_values, counter_id))
        except BaseException:
            self._free_counters(out)
            raise
        return out

    def _free_counters(self, counters: dict[str, tuple[int, AtomicCounter]]) -> None:
        for counter_id, counter in counters.values():
            counter.close()
            self.counters.free(counter_id)

    # -- publications --------------------------------------------------------------------------------------------
    def _add_network_publication(self, command, uri: ChannelUri, is_exclusive: bool) -> None:
        from aeron.driver.driver_conductor import CommandError
        ctx = self._ctx
        channel = command.channel
        check_supported_udp_params(uri, channel, is_subscription=False)
        udp_channel = self._udp_channel(channel, uri, is_subscription=False)
        if udp_channel.remote_data is None and not udp_channel.is_multi_destination and \
                udp_channel.control_mode != CONTROL_MODE_RESPONSE:
            raise CommandError(ErrorCode.INVALID_CHANNEL, f"publication channel needs an endpoint: {channel}")
        stream_id = command.stream_id
        term_length = self._uri_int(uri, "term-length", parse_size, None)
        mtu_length = self._uri_int(uri, "mtu", parse_size, None)
        session_id, tagged = self._publication_session_id(uri)
        response_correlation_id, response_image = self._response_channel(uri, udp_channel)
        endpoint = self.send_endpoints.get(udp_channel.canonical_form)
        if endpoint is not None:
            self._check_timestamp_offsets_match(endpoint.udp_channel, udp_channel, receive=False)
        if not is_exclusive and endpoint is not None:
            for publication in self.network_publications:
                if (publication.endpoint is endpoint and publication.stream_id == stream_id and
                        publication.state == np_.ACTIVE and not publication.is_exclusive and
                        (session_id is None or session_id == publication.session_id) and
                        publication.response_correlation_id == response_correlation_id):
                    self._check_joins_existing(publication, term_length, mtu_length)
                    if response_image is not None:
                        response_image.set_response_session_id(publication.session_id)
                    publication.ref_count += 1
                    client = self.get_or_add_client(command.client_id)
                    client.publication_links[command.correlation_id] = publication
                    self._transmit(cmd.PublicationReady(
                        cmd.ON_PUBLICATION_READY, command.correlation_id, publication.registration_id,
                        publication.session_id, stream_id, publication.pub_lmt_id, endpoint.status_counter_id,
                        publication.log_path))
                    return
        term_length = term_length or (tagged.term_length if tagged is not None else ctx.term_buffer_length)
        if udp_channel.control_mode == CONTROL_MODE_RESPONSE and response_correlation_id == PROTOTYPE_CORRELATION_ID:
            term_length = TERM_MIN_LENGTH           # a prototype response publication is never used: keep it small
        mtu_length = mtu_length or (tagged.mtu if tagged is not None else ctx.mtu_length)
        from aeron._core.logbuffer import check_mtu_length, check_term_length
        try:
            check_term_length(term_length)
            check_mtu_length(mtu_length)
        except ConfigurationError as exc:
            raise CommandError(ErrorCode.INVALID_CHANNEL, f"{channel}: {exc}") from exc
        if session_id is not None:
            for other in self.network_publications:
                if other.stream_id == stream_id and other.session_id == session_id and other.state != np_.DONE \
                        and other.endpoint is endpoint:
                    raise CommandError(ErrorCode.GENERIC_ERROR,
                                       f"existing publication has clashing session id: {session_id}")
        else:
            session_id = self._allocate_session_id(stream_id)
        start = (self._uri_int(uri, "init-term-id", int, None), self._uri_int(uri, "term-id", int, None),
                 self._uri_int(uri, "term-offset", parse_size, None))
        if any(v is not None for v in start) and not all(v is not None for v in start):
            raise CommandError(ErrorCode.INVALID_CHANNEL,
                               "init-term-id, term-id and term-offset must be given together")
        try:
            flow_control = flow_control_for(channel, uri.get("fc"), udp_channel.has_group_semantics,
                                            ctx.multicast_flow_control_strategy)
        except ConfigurationError as exc:
            raise CommandError(ErrorCode.INVALID_CHANNEL, str(exc)) from exc
        created_endpoint = endpoint is None
        if endpoint is None:
            endpoint = self._open_send_endpoint(udp_channel, uri, command.correlation_id)
        try:
            publication = self._create_network_publication(
                command, endpoint, udp_channel, uri, session_id, term_length, mtu_length, start, is_exclusive,
                flow_control, response_correlation_id=response_correlation_id)
        except BaseException:
            if created_endpoint:
                self._close_send_endpoint(endpoint)
            raise
        endpoint.ref_count += 1
        client = self.get_or_add_client(command.client_id)
        client.publication_links[command.correlation_id] = publication
        response_type = cmd.ON_EXCLUSIVE_PUBLICATION_READY if is_exclusive else cmd.ON_PUBLICATION_READY
        self._transmit(cmd.PublicationReady(
            response_type, command.correlation_id, publication.registration_id, session_id, stream_id,
            publication.pub_lmt_id, endpoint.status_counter_id, publication.log_path))
        for subscription in self.network_subscriptions:
            if subscription.is_spy and self._spy_matches(subscription, publication):
                self._link_spy(subscription, publication)
        if response_image is not None:
            response_image.set_response_session_id(publication.session_id)

    def _open_transport(self, udp_channel: UdpChannel, uri: ChannelUri, bind: tuple) -> Any:
        """The endpoint's socket bound to ``bind``, joined to it as a group when the channel is multicast."""
        from aeron.driver.driver_conductor import CommandError
        rcvbuf, sndbuf = self._socket_buffers(uri)
        multicast = udp_channel.is_multicast
        try:
            return open_udp_transport(udp_channel.family, bind, multicast_group=bind if multicast else None,
                                      interface=udp_channel.interface if multicast else None,
                                      ttl=udp_channel.ttl if multicast else 0, so_rcvbuf=rcvbuf, so_sndbuf=sndbuf,
                                      name=udp_channel.original)
        except ChannelEndpointError as exc:
            raise CommandError(ErrorCode.CHANNEL_ENDPOINT_ERROR, str(exc)) from exc

    def _open_send_endpoint(self, udp_channel: UdpChannel, uri: ChannelUri, registration_id: int) -> SendChannelEndpoint:
        # a multicast sender binds the control group (status messages come back there), others their local address
        transport = self._open_transport(udp_channel, uri, udp_channel.local_control if udp_channel.is_multicast
                                         else udp_channel.local_data)
        self._set_timestamp_offsets(transport, udp_channel, receive=False)
        status_id, sockaddr_id = self._channel_counters("snd", udp_channel.original, registration_id,
                                                        transport.bound_address)
        endpoint = SendChannelEndpoint(udp_channel, transport, registration_id, status_id,
                                       AtomicCounter(self.counters_values, status_id), sockaddr_id, self.system,
                                       on_publication_error=self.conductor_proxy.publication_error,
                                       on_response_setup=self.conductor_proxy.response_setup,
                                       on_response_connected=self.conductor_proxy.response_connected)
        if udp_channel.is_multi_destination:
            # mdc-num-dest: the number of destinations of an MDC send endpoint (§5.5 type 18, plain channel label)
            counter_id = self.counters.allocate(
                f"mdc-num-dest: {udp_channel.original}"[:ctr.MAX_LABEL_LENGTH], ctr.MDC_DESTINATIONS_COUNTER_TYPE_ID,
                ctr.channel_status_key_encode(udp_channel.original), registration_id=registration_id)
            endpoint.attach_destinations_counter(counter_id, AtomicCounter(self.counters_values, counter_id))
        self.send_endpoints[udp_channel.canonical_form] = endpoint
        self.sender_proxy.add_endpoint(endpoint)
        return endpoint

    def _close_send_endpoint(self, endpoint: SendChannelEndpoint) -> None:
        self.send_endpoints.pop(endpoint.udp_channel.canonical_form, None)
        endpoint.status.set_ordered(ctr.CHANNEL_ENDPOINT_STATUS_CLOSING)
        self.sender_proxy.remove_endpoint(endpoint)
        self._closing_send_endpoints.append(endpoint)

    def _create_network_publication(self, command, endpoint: SendChannelEndpoint, udp_channel: UdpChannel,
                                    uri: ChannelUri, session_id: int, term_length: int, mtu_length: int, start,
                                    is_exclusive: bool, flow_control,
                                    response_correlation_id: int | None = None) -> NetworkPublication:
        from aeron.driver.driver_conductor import CommandError
        ctx = self._ctx
        registration_id = command.correlation_id
        stream_id = command.stream_id
        channel = command.channel
        configured = self._uri_int(uri, "pub-wnd", parse_size, None) or ctx.publication_term_window_length
        window = min(configured, term_length // 2) if configured > 0 else term_length // 2
        init_term_id, term_id, term_offset = start
        at_position = init_term_id is not None
        linger_ns = self._uri_duration(uri, "linger", ctx.publication_linger_timeout_ns)
        path = os.path.join(self.aeron_dir, "publications", f"{registration_id}.logbuffer")
        try:
            log = LogBuffers.create(
                path, term_length=term_length, file_mode=ctx.dir_file_mode,
                initial_term_id=init_term_id if at_position else _wrap32(random.getrandbits(32)),
                session_id=session_id, stream_id=stream_id, mtu_length=mtu_length, page_size=ctx.file_page_size,
                correlation_id=registration_id, log_type=LOG_TYPE_EXCLUSIVE if is_exclusive else LOG_TYPE_CONCURRENT,
                term_id=term_id if at_position else 0, term_offset=term_offset if at_position else 0,
                start_at_position=at_position, sparse=self._uri_bool(uri, "sparse", ctx.term_buffer_sparse_file),
                publication_window_length=window, linger_timeout_ns=linger_ns,
                signal_eos=1 if self._uri_bool(uri, "eos", True) else 0,
                os_default_socket_sndbuf_length=self._os_sndbuf, os_default_socket_rcvbuf_length=self._os_rcvbuf,
                response_correlation_id=-1 if response_correlation_id is None else response_correlation_id,
                is_response=1 if udp_channel.control_mode == CONTROL_MODE_RESPONSE else 0)
        except InvalidArgumentError as exc:
            raise CommandError(ErrorCode.INVALID_CHANNEL, f"{channel}: {exc}") from exc
        try:
            counters = self._stream_counters(
                [("pub-pos (exclusive)" if is_exclusive else "pub-pos (concurrent)", ctr.DRIVER_PUBLISHER_POS_TYPE_ID),
                 ("pub-lmt", ctr.DRIVER_PUBLISHER_LIMIT_TYPE_ID), ("snd-pos", ctr.DRIVER_SENDER_POSITION_TYPE_ID),
                 ("snd-lmt", ctr.DRIVER_SENDER_LIMIT_TYPE_ID), ("snd-bpe", ctr.DRIVER_SENDER_BPE_TYPE_ID),
                 ("snd-naks-received", ctr.DRIVER_SENDER_NAKS_RECEIVED_TYPE_ID)],
                registration_id, session_id, stream_id, channel, command.client_id)
        except BaseException:
            log.close()
            os.unlink(path)
            raise
        max_resend = 1 if not udp_channel.has_group_semantics else (
            self._uri_int(uri, "max-resend", int, None) or ctx.max_resend)
        publication = NetworkPublication(
            registration_id=registration_id, owner_client_id=command.client_id, session_id=session_id,
            stream_id=stream_id, channel=channel, is_exclusive=is_exclusive, log=log, log_path=path,
            endpoint=endpoint, counters=counters, flow_control=flow_control, window_length=window,
            linger_timeout_ns=linger_ns, unblock_timeout_ns=ctx.publication_unblock_timeout_ns,
            connection_timeout_ns=ctx.publication_connection_timeout_ns,
            signal_eos=self._uri_bool(uri, "eos", True),
            spies_simulate_connection=self._uri_bool(uri, "ssc", ctx.spies_simulate_connection),
            max_retransmits=max_resend, ttl=udp_channel.ttl if udp_channel.is_multicast else 0,
            is_group=udp_channel.has_group_semantics, now_ns=self._nano_clock(),
            max_messages_per_send=ctx.network_publication_max_messages_per_send, system=self.system,
            untethered_timeouts=UntetheredTimeouts(*self._untethered_timeouts(uri)),
            response_correlation_id=response_correlation_id,
            is_response=udp_channel.control_mode == CONTROL_MODE_RESPONSE)
        endpoint.publications[(session_id, stream_id)] = publication
        self.network_publications.append(publication)
        self.system[ctr.BYTES_CURRENTLY_MAPPED].get_and_add(log.log_length)
        self.sender_proxy.add_publication(publication)
        return publication

    def _decref_network_publication(self, publication: NetworkPublication, now_ns: int, revoke: bool = False) -> None:
        publication.ref_count -= 1
        if publication.ref_count <= 0 and publication.state == np_.ACTIVE:
            producer_position = publication.producer_position()
            publication.pub_lmt.set_ordered(producer_position)
            publication.log.end_of_stream_position = producer_position
            if revoke:
                publication.log.is_publication_revoked = True
                publication.is_revoked = True
                publication.is_end_of_stream = True
                self.system[ctr.PUBLICATIONS_REVOKED].increment_ordered()
                self._network_publication_to_linger(publication, now_ns)
            else:
                publication.state = np_.DRAINING
                publication.state_change_ns = now_ns

    def _network_publication_to_linger(self, publication: NetworkPublication, now_ns: int) -> None:
        publication.state = np_.LINGER
        publication.state_change_ns = now_ns
        for link in list(publication.spies.values()):
            subscription = link.subscription
            if link.state == TETHER_ACTIVE:         # untethered ones in LINGER/RESTING were told already
                self._transmit(cmd.ImageUnavailable(publication.registration_id, subscription.registration_id,
                                                    publication.stream_id, subscription.channel))
            self._unlink_spy(subscription, publication)

    def _on_network_publication_timers(self, now_ns: int) -> int:
        work = 0
        for publication in list(self.network_publications):
            state = publication.state
            if state == np_.ACTIVE:
                work += publication.update_pub_pos_and_lmt()
            elif state == np_.DRAINING:
                producer_position = publication.producer_position()
                publication.pub_pos.set_ordered(producer_position)
                snd_pos = publication.snd_pos.get_volatile()
                if snd_pos >= producer_position:
                    publication.is_end_of_stream = True
                    if all(position >= producer_position
                           for position in untethered.working_positions(publication.spies.values())):
                        self._network_publication_to_linger(publication, now_ns)
                        work += 1
                elif not publication.has_receivers:
                    self._network_publication_to_linger(publication, now_ns)
                    work += 1
            elif state == np_.LINGER:
                if now_ns - publication.state_change_ns > publication.linger_timeout_ns:
                    publication.state = np_.DONE
                    self.sender_proxy.remove_publication(publication)
                    work += 1
            elif state == np_.DONE and publication.sender_released:
                self._delete_network_publication(publication)
                work += 1
        for endpoint in list(self._closing_send_endpoints):
            if endpoint.sender_released:
                self._closing_send_endpoints.remove(endpoint)
                endpoint.close()
                self.counters.free(endpoint.local_sockaddr_counter_id)
                self.counters.free(endpoint.status_counter_id)
                if endpoint.destinations_counter_id is not None:
                    self.counters.free(endpoint.destinations_counter_id)
        for endpoint in list(self._closing_receive_endpoints):
            if endpoint.receiver_released:
                self._closing_receive_endpoints.remove(endpoint)
                endpoint.close()
                if endpoint.local_sockaddr_counter_id is not None:
                    self.counters.free(endpoint.local_sockaddr_counter_id)
                self.counters.free(endpoint.status_counter_id)
                self._free_receive_destinations(endpoint)
        if self._closing_receive_destinations:
            work += self._close_released_receive_destinations()
        return work

    def _delete_network_publication(self, publication: NetworkPublication) -> None:
        self.network_publications.remove(publication)
        endpoint = publication.endpoint
        endpoint.publications.pop((publication.session_id, publication.stream_id), None)
        self._delete_log_files(publication)
        for counter_id in publication.counter_ids.values():
            self.counters.free(counter_id)
        for name in ("pub_pos", "pub_lmt", "snd_pos", "snd_lmt", "snd_bpe", "snd_naks"):
            getattr(publication, name).close()
        endpoint.ref_count -= 1
        if endpoint.ref_count <= 0:
            self._close_send_endpoint(endpoint)

    # -- subscriptions -------------------------------------------------------------------------------------------
    def _add_network_subscription(self, command, uri: ChannelUri) -> None:
        from aeron.driver.driver_conductor import CommandError
        ctx = self._ctx
        channel = command.channel
        is_spy = uri.is_spy
        check_supported_udp_params(uri, channel, is_subscription=True)
        udp_channel = self._udp_channel(channel, uri, is_subscription=not is_spy)
        session_id = self._uri_int(uri, "session-id", int, None)
        cc = uri.get("cc")
        if cc not in (None, "static", "cubic"):
            raise CommandError(ErrorCode.INVALID_CHANNEL, f"unknown congestion control cc={cc} in {channel}")
        group = uri.get("group")
        if group not in (None, "true", "false", "infer"):
            raise CommandError(ErrorCode.INVALID_CHANNEL, f"invalid group={group} in {channel}")
        endpoint = None
        if not is_spy:
            endpoint = self.receive_endpoints.get(udp_channel.canonical_form)
            if endpoint is None:
                endpoint = self._open_receive_endpoint(udp_channel, uri, command.correlation_id)
            else:
                self._check_timestamp_offsets_match(endpoint.udp_channel, udp_channel, receive=True)
                self._check_response_mode_matches(endpoint, udp_channel, command.stream_id)
            endpoint.ref_count += 1
        subscription = NetworkSubscription(
            command.correlation_id, command.client_id, command.stream_id, channel, session_id, endpoint, udp_channel,
            is_spy, self._uri_bool(uri, "reliable", True), self._uri_bool(uri, "rejoin", True),
            self._uri_bool(uri, "tether", True), cc, group)
        subscription.receiver_window = self._uri_int(uri, "rcv-wnd", parse_size, None)
        subscription.is_response = not is_spy and udp_channel.control_mode == CONTROL_MODE_RESPONSE
        (subscription.window_limit_timeout_ns, subscription.linger_timeout_ns,
         subscription.resting_timeout_ns) = self._untethered_timeouts(uri)
        if uri.has("nak-delay"):
            subscription.nak_delay_ns = self._uri_duration(uri, "nak-delay", ctx.nak_unicast_delay_ns)
        client = self.get_or_add_client(command.client_id)
        self.network_subscriptions.append(subscription)
        client.subscriptions[subscription.registration_id] = subscription
        status_id = endpoint.status_counter_id if endpoint is not None else -1
        self._transmit(cmd.SubscriptionReady(command.correlation_id, status_id))
        if is_spy:
            for publication in self.network_publications:
                if publication.state == np_.ACTIVE and self._spy_matches(subscription, publication):
                    self._link_spy(subscription, publication)
            return
        stream_id, sid = command.stream_id, session_id
        if not subscription.is_response:        # a response subscription waits for its session (RSP_SETUP)
            self.receiver_proxy.add_subscription(endpoint, stream_id, sid)
        for image in self.images:
            if image.endpoint is endpoint and image.state == pi.ACTIVE and subscription.matches(image):
                self._link_image(subscription, image)

    def _open_receive_endpoint(self, udp_channel: UdpChannel, uri: ChannelUri,
                               registration_id: int) -> ReceiveChannelEndpoint:
        if udp_channel.is_manual_control_mode:
            return self._open_multi_destination_receive_endpoint(udp_channel, uri, registration_id)
        transport = self._open_transport(udp_channel, uri, udp_channel.local_data)
        self._set_timestamp_offsets(transport, udp_channel, receive=True)
        loss = self._ctx.loss_generator_factory()
        if loss is not None:
            transport = LossyTransport(transport, loss())
        status_id, sockaddr_id = self._channel_counters("rcv", udp_channel.original, registration_id,
                                                        transport.bound_address)
        gtag = self._uri_int(uri, "gtag", int, None)
        endpoint = ReceiveChannelEndpoint(udp_channel, transport, registration_id, status_id,
                                          AtomicCounter(self.counters_values, status_id), sockaddr_id, self.system,
                                          self.conductor_proxy.create_publication_image, group_tag=gtag,
                                          stream_session_limit=self._ctx.stream_session_limit, on_error=self._log_error)
        self.receive_endpoints[udp_channel.canonical_form] = endpoint
        self.receiver_proxy.add_endpoint(endpoint)
        return endpoint

    def _remove_network_subscription(self, subscription: NetworkSubscription) -> None:
        if subscription in self.network_subscriptions:
            self.network_subscriptions.remove(subscription)
        if not subscription.is_spy:
            for link in self._mds_links.pop(subscription.registration_id, []):   # its IPC and spy destinations
                self._drop_mds_link(link, notify=False)
        if subscription.is_spy:
            for publication in list(subscription.links.values()):
                self._unlink_spy(subscription, publication)
            return
        for image in list(subscription.links.values()):
            self._unlink_image(subscription, image)
        endpoint = subscription.endpoint
        assert endpoint is not None
        stream_id, session_id = subscription.stream_id, subscription.session_id
        if not subscription.is_response:
            self.receiver_proxy.remove_subscription(endpoint, stream_id, session_id)
        endpoint.ref_count -= 1
        if endpoint.ref_count <= 0:
            self.receive_endpoints.pop(endpoint.udp_channel.canonical_form, None)
            endpoint.status.set_ordered(ctr.CHANNEL_ENDPOINT_STATUS_CLOSING)
            self.receiver_proxy.remove_endpoint(endpoint)
            self._closing_receive_endpoints.append(endpoint)

    # -- spies -----------------------------------------------------------------------------------------------------
    @staticmethod
    def _spy_matches(subscription: NetworkSubscription, publication: NetworkPublication) -> bool:
        return (publication.endpoint.udp_channel.canonical_form == subscription.udp_channel.canonical_form
                and subscription.matches(publication))

    def _link_spy(self, subscription: NetworkSubscription, publication: NetworkPublication) -> None:
        from aeron.driver.driver_conductor import SubscriberPosition
        join_position = publication.producer_position()
        counter_id = self._sub_pos_counter(subscription, publication.session_id, publication.stream_id,
                                           publication.registration_id, join_position)
        position = AtomicCounter(self.counters_values, counter_id)
        position.set_ordered(join_position)
        publication.spies[subscription.registration_id] = SubscriberPosition(
            subscription, counter_id, position, self._nano_clock())
        subscription.links[publication.registration_id] = publication
        publication.log.is_connected = publication.is_connected_now()
        self._transmit(cmd.ImageReady(
            publication.registration_id, publication.session_id, publication.stream_id,
            subscription.registration_id, counter_id, publication.log_path, "aeron:ipc"))

    def _unlink_spy(self, subscription: NetworkSubscription, publication: NetworkPublication) -> None:
        link = publication.spies.pop(subscription.registration_id, None)
        subscription.links.pop(publication.registration_id, None)
        if link is not None:
            link.position.close()
            self.counters.free(link.counter_id)

    def _sub_pos_counter(self, subscription: NetworkSubscription, session_id: int, stream_id: int,
                         reference_id: int, join_position: int) -> int:
        return self.counters.allocate(
            ctr.stream_counter_label("sub-pos", subscription.registration_id, session_id, stream_id,
                                     subscription.channel, f" @{join_position}"),
            ctr.DRIVER_SUBSCRIBER_POSITION_TYPE_ID,
            ctr.stream_counter_key_encode(subscription.registration_id, session_id, stream_id, subscription.channel),
            registration_id=subscription.registration_id, owner_id=subscription.client_id,
            reference_id=reference_id)

    # -- images ----------------------------------------------------------------------------------------------------
    def on_create_publication_image(self, endpoint: ReceiveChannelEndpoint, setup: dict, control_address: tuple,
                                    source: tuple) -> None:
        """DriverConductorProxy command from the receiver: a SETUP for a wanted stream."""
        now_ns = self._nano_clock()
        try:
            self._create_image(endpoint, setup, control_address, source, now_ns)
        except Exception as exc:    # noqa: BLE001 - a bad SETUP must not stop the conductor
            self._log_error(ErrorCode.GENERIC_ERROR, f"cannot create image: {type(exc).__name__}: {exc}", exc)
            self.receiver_proxy.image_init_failed(endpoint, setup["stream_id"], setup["session_id"], now_ns)

    def _create_image(self, endpoint: ReceiveChannelEndpoint, setup: dict, control_address: tuple, source: tuple,
                      now_ns: int) -> None:
        ctx = self._ctx
        stream_id, session_id = setup["stream_id"], setup["session_id"]
        subscriptions = [s for s in self.network_subscriptions
                         if s.endpoint is endpoint and s.stream_id == stream_id and
                         ((s.session_id is None and not s.is_response) or s.session_id == session_id)]
        if not subscriptions:
            self.receiver_proxy.image_init_failed(endpoint, stream_id, session_id, now_ns)
            return
        term_length, mtu = setup["term_length"], setup["mtu"]
        rcvbuf = setup["destination"].transport.socket.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
        first = subscriptions[0]
        initial_window = first.receiver_window or ctx.initial_window_length
        window_length = min(initial_window, term_length // 2)
        if mtu > window_length or mtu > rcvbuf:
            raise ConfigurationError(f"sender MTU {mtu} exceeds the receiver window {window_length} or "
                                     f"SO_RCVBUF {rcvbuf}")
        correlation_id = self.to_driver.next_correlation_id()
        path = os.path.join(self.aeron_dir, "images", f"{correlation_id}.logbuffer")
        log = LogBuffers.create(
            path, term_length=term_length, initial_term_id=setup["initial_term_id"], session_id=session_id,
            stream_id=stream_id, mtu_length=mtu, page_size=ctx.file_page_size, correlation_id=correlation_id,
            term_id=setup["active_term_id"], term_offset=setup["term_offset"], start_at_position=True,
            sparse=ctx.term_buffer_sparse_file, os_default_socket_sndbuf_length=self._os_sndbuf,
            os_default_socket_rcvbuf_length=self._os_rcvbuf, tether=1 if first.tether else 0,
            untethered_window_limit_timeout_ns=first.window_limit_timeout_ns,
            untethered_linger_timeout_ns=first.linger_timeout_ns,
            untethered_resting_timeout_ns=first.resting_timeout_ns, file_mode=ctx.dir_file_mode)
        join_position = log.compute_position(setup["active_term_id"], setup["term_offset"])
        channel = endpoint.udp_channel.original
        cc_counters: dict[str, tuple[int, AtomicCounter]] = {}
        try:
            if first.cc == "cubic":         # allocated first, as the C driver does (golden unicast-loss-rttm)
                cc_counters = self._stream_counters(
                    [("rcv-cc-cubic-rtt", ctr.DRIVER_PER_IMAGE_TYPE_ID),
                     ("rcv-cc-cubic-wnd", ctr.DRIVER_PER_IMAGE_TYPE_ID)],
                    correlation_id, session_id, stream_id, channel, -1)
            counters = self._stream_counters(
                [("rcv-hwm", ctr.DRIVER_RECEIVER_HWM_TYPE_ID), ("rcv-pos", ctr.DRIVER_RECEIVER_POS_TYPE_ID),
                 ("rcv-naks-sent", ctr.DRIVER_RECEIVER_NAKS_SENT_TYPE_ID)],
                correlation_id, session_id, stream_id, channel, first.client_id)
        except BaseException:
            self._free_counters(cc_counters)
            log.close()
            os.unlink(path)
            raise
        is_multicast = endpoint.udp_channel.is_multicast or (
            setup["flags"] & 0x40 and first.group in (None, "infer", "true"))
        if first.group == "false":
            is_multicast = False
        if not first.is_reliable:
            delay: Any = StaticDelayGenerator(0, 0)
        elif is_multicast:
            delay = OptimalMulticastDelayGenerator(ctx.nak_multicast_max_backoff_ns, ctx.nak_multicast_group_size)
        else:
            nak_delay = first.nak_delay_ns if first.nak_delay_ns is not None else ctx.nak_unicast_delay_ns
            delay = StaticDelayGenerator(nak_delay, nak_delay * ctx.nak_unicast_retry_delay_ratio)
        cc = congestion_control_for(first.cc, term_length, mtu, initial_window,
                                    measure_rtt=ctx.cubic_congestion_control_measure_rtt,
                                    initial_rtt_ns=ctx.cubic_congestion_control_initial_rtt_ns)
        if cc_counters:
            cc.attach_counters(cc_counters["rcv-cc-cubic-rtt"][1], cc_counters["rcv-cc-cubic-wnd"][1])
            counters.update(cc_counters)
        image = PublicationImage(
            correlation_id=correlation_id, session_id=session_id, stream_id=stream_id, endpoint=endpoint, log=log,
            log_path=path, source_identity=format_address(source), control_address=control_address,
            join_position=join_position, counters=counters, congestion_control=cc, loss_delay=delay,
            is_reliable=first.is_reliable, liveness_timeout_ns=ctx.image_liveness_timeout_ns, system=self.system,
            loss_report=self.loss_report, channel=channel, now_ns=now_ns, epoch_clock_ms=self._epoch_clock,
            rejoin=first.rejoin, destination=setup["destination"],
            untethered_timeouts=UntetheredTimeouts(first.window_limit_timeout_ns, first.linger_timeout_ns,
                                                   first.resting_timeout_ns),
            has_send_response_setup=bool(setup["flags"] & SETUP_SEND_RESPONSE_FLAG))
        self.images.append(image)
        self.system[ctr.BYTES_CURRENTLY_MAPPED].get_and_add(log.log_length)
        for subscription in subscriptions:
            self._link_image(subscription, image)
        self.receiver_proxy.add_publication_image(image)

    def _link_image(self, subscription: NetworkSubscription, image: PublicationImage) -> None:
        from aeron.driver.driver_conductor import SubscriberPosition
        join_position = image.rcv_pos.get_volatile()
        counter_id = self._sub_pos_counter(subscription, image.session_id, image.stream_id, image.correlation_id,
                                           join_position)
        position = AtomicCounter(self.counters_values, counter_id)
        position.set_ordered(join_position)
        image.subscribers[subscription.registration_id] = SubscriberPosition(
            subscription, counter_id, position, self._nano_clock())
        subscription.links[image.correlation_id] = image
        self._transmit(cmd.ImageReady(image.correlation_id, image.session_id, image.stream_id,
                                      subscription.registration_id, counter_id, image.log_path,
                                      image.source_identity))

    def _unlink_image(self, subscription: NetworkSubscription, image: PublicationImage) -> None:
        link = image.subscribers.pop(subscription.registration_id, None)
        subscription.links.pop(image.correlation_id, None)
        if link is not None:
            link.position.close()
            self.counters.free(link.counter_id)

    def _on_image_timers(self, now_ns: int) -> int:
        work = 0
        for image in list(self.images):
            state = image.state
            if state == pi.ACTIVE:
                inactive = now_ns - image.time_of_last_packet_ns > image.liveness_timeout_ns
                eos = image.is_end_of_stream and image.rcv_pos.get_volatile() >= image.rcv_hwm.get_volatile()
                if inactive or eos or not image.has_working_positions():
                    image.state = pi.DRAINING
                    image.state_change_ns = now_ns
                    image.sm_pending = True
                    work += 1
            elif state == pi.DRAINING:
                if image.is_drained() or now_ns - image.state_change_ns > image.liveness_timeout_ns:
                    image.state = pi.LINGER
                    image.state_change_ns = now_ns
                    for link in list(image.subscribers.values()):
                        subscription = link.subscription
                        if link.state == TETHER_ACTIVE:     # untethered ones in LINGER/RESTING were told already
                            self._transmit(cmd.ImageUnavailable(image.correlation_id, subscription.registration_id,
                                                                image.stream_id, subscription.channel))
                        self._unlink_image(subscription, image)
                    self.receiver_proxy.remove_publication_image(image, now_ns, image.rejoin)
                    work += 1
            elif state == pi.LINGER:
                if image.receiver_released and now_ns - image.state_change_ns > IMAGE_LINGER_NS:
                    image.state = pi.DONE
                    self._delete_image(image)
                    work += 1
        return work

    def _delete_image(self, image: PublicationImage) -> None:
        self.images.remove(image)
        self._delete_log_files(image)
        for counter_id in image.counter_ids.values():
            self.counters.free(counter_id)
        for counter in (image.rcv_hwm, image.rcv_pos, image.naks_sent):
            counter.close()
        image.congestion_control.detach_counters()

    # -- destinations (manual MDC) -----------------------------------------------------------------------------------
    def _on_network_destination(self, command) -> None:
        from aeron.driver.driver_conductor import CommandError
        client = self.clients.get(command.client_id)
        publication = client.publication_links.get(command.registration_id) if client is not None else None
        if not isinstance(publication, NetworkPublication):
            raise CommandError(ErrorCode.UNKNOWN_PUBLICATION,
                               f"unknown publication client_id={command.client_id} "
                               f"registration_id={command.registration_id}")
        endpoint = publication.endpoint
        if not endpoint.udp_channel.is_manual_control_mode:
            raise CommandError(ErrorCode.INVALID_CHANNEL,
                               "destinations can only be added to or removed from control-mode=manual channels")
        uri = self._parse_channel(command.channel)
        try:
            destination = UdpChannel.parse(command.channel, uri, is_subscription=False)
        except ConfigurationError as exc:
            raise CommandError(ErrorCode.INVALID_CHANNEL, str(exc)) from exc
        address = destination.remote_data
        if address is None:
            raise CommandError(ErrorCode.INVALID_CHANNEL, f"destination needs an endpoint: {command.channel}")
        now_ns = self._nano_clock()
        if command.msg_type_id == cmd.ADD_DESTINATION:
            corr = command.correlation_id
            self.sender_proxy.add_destination(endpoint, address, corr, now_ns)
        else:
            self.sender_proxy.remove_destination(endpoint, address)
        self._transmit(cmd.OperationSucceeded(command.correlation_id))

    def _on_remove_destination_by_id(self, command) -> None:
        """REMOVE_DESTINATION_BY_ID (aeron_driver_conductor_on_remove_receive_send_destination_by_id): the destination
        an ADD_DESTINATION with that correlation id added to the manual MDC publication with that registration id."""
        from aeron.driver.driver_conductor import CommandError
        for publication in self.network_publications:
            if publication.registration_id == command.resource_registration_id:
                endpoint = publication.endpoint
                break
        else:
            raise CommandError(ErrorCode.UNKNOWN_PUBLICATION,
                               f"unknown publication registration_id={command.resource_registration_id}")
        if not endpoint.udp_channel.is_manual_control_mode:
            raise CommandError(ErrorCode.GENERIC_ERROR, f"channel does not allow manual control of destinations: "
                                                        f"publication_registration_id={command.resource_registration_id}")
        destination_id = command.destination_registration_id
        self.sender_proxy.remove_destination_by_id(endpoint, destination_id)
        self._transmit(cmd.OperationSucceeded(command.correlation_id))

    # -- receive destinations (multi-destination subscriptions) ------------------------------------------------------
    def _open_multi_destination_receive_endpoint(self, udp_channel: UdpChannel, uri: ChannelUri,
                                                 registration_id: int) -> ReceiveChannelEndpoint:
        """A control-mode=manual subscription's endpoint: no socket of its own until destinations are added; its
        status counter names no address (as aeron_receive_channel_endpoint_bind_addr_and_port with none)."""
        status_id = self.counters.allocate(
            f"rcv-channel: {udp_channel.original} "[:ctr.MAX_LABEL_LENGTH], ctr.DRIVER_RECEIVE_CHANNEL_STATUS_TYPE_ID,
            ctr.channel_status_key_encode(udp_channel.original), registration_id=registration_id)
        endpoint = ReceiveChannelEndpoint(udp_channel, None, registration_id, status_id,
                                          AtomicCounter(self.counters_values, status_id), None, self.system,
                                          self.conductor_proxy.create_publication_image,
                                          group_tag=self._uri_int(uri, "gtag", int, None),
                                          stream_session_limit=self._ctx.stream_session_limit, on_error=self._log_error)
        self.receive_endpoints[udp_channel.canonical_form] = endpoint
        self._receive_destinations[endpoint] = []
        self.receiver_proxy.add_endpoint(endpoint)
        return endpoint

    def _find_multi_destination_subscription(self, command) -> NetworkSubscription:
        """Port of aeron_driver_conductor_find_mds_subscription."""
        from aeron.driver.driver_conductor import CommandError
        for subscription in self.network_subscriptions:
            # spies (an MDS subscription's spy destinations share its registration id) are no MDS subscription
            if subscription.registration_id == command.registration_id and not subscription.is_spy:
                if not subscription.udp_channel.is_manual_control_mode:
                    raise CommandError(ErrorCode.INVALID_CHANNEL, "channel does not allow manual control")
                return subscription
        raise CommandError(ErrorCode.UNKNOWN_SUBSCRIPTION, f"unknown subscription client_id={command.client_id} "
                                                           f"registration_id={command.registration_id}")

    def _destination_udp_channel(self, channel: str) -> UdpChannel:
        """A receive destination's channel, refusing what a destination may not set (as the C driver does)."""
        from aeron.driver.driver_conductor import CommandError
        uri = self._parse_channel(channel)
        for key in INVALID_DESTINATION_KEYS:
            if uri.has(key):
                raise CommandError(ErrorCode.INVALID_CHANNEL,
                                   f"destinations must not contain the key: {key} channel={channel}")
        if uri.get("control-mode") == "response":
            raise CommandError(ErrorCode.INVALID_CHANNEL, "destinations may not specify control-mode=response")
        try:
            return UdpChannel.parse(channel, uri, is_subscription=True, is_destination=True)
        except ConfigurationError as exc:
            raise CommandError(ErrorCode.INVALID_CHANNEL, str(exc)) from exc

    def _on_receive_destination(self, command) -> None:
        """ADD_RCV_DESTINATION / REMOVE_RCV_DESTINATION for a control-mode=manual subscription (ports of
        aeron_driver_conductor_on_add/remove_receive_network_destination). The receiver adds or removes the
        socket; a removed one is closed here once the receiver has let go of it. IPC and spy destinations are
        subscription links of their own under the MDS subscription's registration id."""
        channel = command.channel
        if channel.startswith("aeron:ipc") or channel.startswith("aeron-spy:"):
            self._on_ipc_or_spy_receive_destination(command)
            return
        subscription = self._find_multi_destination_subscription(command)
        udp_channel = self._destination_udp_channel(command.channel)
        endpoint = subscription.endpoint
        assert endpoint is not None
        destinations = self._receive_destinations[endpoint]
        now_ns = self._nano_clock()
        if command.msg_type_id == cmd.ADD_RCV_DESTINATION:
            destination = self._open_receive_destination(endpoint, subscription, udp_channel, now_ns)
            destinations.append(destination)
            self.receiver_proxy.add_destination(endpoint, destination, now_ns)
        else:
            for destination in destinations:
                if destination.matches(udp_channel):
                    destinations.remove(destination)
                    self._closing_receive_destinations.append(destination)
                    self.receiver_proxy.remove_destination(endpoint, destination)
                    break
        self._transmit(cmd.OperationSucceeded(command.correlation_id))

    def _on_ipc_or_spy_receive_destination(self, command) -> None:
        """Ports of aeron_driver_conductor_on_add/remove_receive_ipc_destination and _spy_destination: an IPC (or spy)
        subscription link with the MDS subscription's registration id and stream, this destination's channel and
        parameters, so its images join the MDS subscription; removed by the same channel string."""
        from aeron.driver.driver_conductor import ACTIVE, CommandError, IpcSubscription
        channel = command.channel
        is_ipc = channel.startswith("aeron:ipc")
        if command.msg_type_id == cmd.REMOVE_RCV_DESTINATION:
            links = self._mds_links.get(command.registration_id, [])
            for link in links:
                if link.channel == channel and isinstance(link, IpcSubscription) == is_ipc:
                    links.remove(link)
                    self._transmit(cmd.OperationSucceeded(command.correlation_id))
                    self._drop_mds_link(link, notify=True)
                    return
            raise CommandError(ErrorCode.UNKNOWN_SUBSCRIPTION, f"unknown subscription client_id={command.client_id} "
                                                               f"registration_id={command.registration_id}")
        uri = self._parse_channel(channel)
        session_id = self._uri_int(uri, "session-id", int, None)
        tether, rejoin = self._uri_bool(uri, "tether", True), self._uri_bool(uri, "rejoin", True)
        timeouts = self._untethered_timeouts(uri)
        udp_channel = self._udp_channel(channel, uri, is_subscription=False) if not is_ipc else None
        mds = self._find_multi_destination_subscription(command)
        link: Any
        if is_ipc:
            link = IpcSubscription(mds.registration_id, command.client_id, mds.stream_id, channel, session_id,
                                   tether=tether, rejoin=rejoin, window_limit_timeout_ns=timeouts[0],
                                   linger_timeout_ns=timeouts[1], resting_timeout_ns=timeouts[2])
            self.subscriptions.append(link)
        else:
            assert udp_channel is not None
            link = NetworkSubscription(mds.registration_id, command.client_id, mds.stream_id, channel, session_id,
                                       None, udp_channel, True, self._uri_bool(uri, "reliable", True), rejoin,
                                       tether, None, None)
            link.window_limit_timeout_ns, link.linger_timeout_ns, link.resting_timeout_ns = timeouts
            self.network_subscriptions.append(link)
        self._mds_links.setdefault(mds.registration_id, []).append(link)
        self._transmit(cmd.OperationSucceeded(command.correlation_id))
        if is_ipc:
            for publication in self.publications:
                if publication.state == ACTIVE and link.matches(publication) and \
                        publication not in self._ipc_cool_downs:
                    self._link(link, publication)
        else:
            for publication in self.network_publications:
                if publication.state == np_.ACTIVE and self._spy_matches(link, publication):
                    self._link_spy(link, publication)

    def _drop_mds_link(self, link: Any, notify: bool) -> None:
        """Unlink an IPC or spy destination of an MDS subscription, telling the client its images went."""
        from aeron.driver.driver_conductor import IpcSubscription
        resources = list(link.links.values())
        if notify:
            for resource in resources:
                self._transmit(cmd.ImageUnavailable(resource.registration_id, link.registration_id,
                                                    resource.stream_id, link.channel))
        if isinstance(link, IpcSubscription):
            for publication in resources:
                self._unlink(link, publication)
            if link in self.subscriptions:
                self.subscriptions.remove(link)
        else:
            self._remove_network_subscription(link)

    def _open_receive_destination(self, endpoint: ReceiveChannelEndpoint, subscription: NetworkSubscription,
                                  udp_channel: UdpChannel, now_ns: int) -> ReceiveDestination:
        """Bind the destination's socket (socket buffers from the subscription's channel, as aeron_receive_
        destination_create) and count its address under the subscription's rcv-channel status counter."""
        transport = self._open_transport(udp_channel, endpoint.udp_channel.uri, udp_channel.local_data)
        self._set_timestamp_offsets(transport, endpoint.udp_channel, receive=True)    # the subscription's offsets
        loss = self._ctx.loss_generator_factory()
        if loss is not None:
            transport = LossyTransport(transport, loss())
        address = format_address(transport.bound_address)
        try:
            counter_id = self.counters.allocate(
                f"rcv-local-sockaddr: {endpoint.status_counter_id} {address}",
                ctr.DRIVER_LOCAL_SOCKET_ADDRESS_STATUS_TYPE_ID,
                ctr.local_sockaddr_key_encode(endpoint.status_counter_id, address),
                registration_id=subscription.registration_id)
        except BaseException:
            transport.close()
            raise
        self.counters.set_counter_value(counter_id, ctr.CHANNEL_ENDPOINT_STATUS_ACTIVE)
        return ReceiveDestination(udp_channel, transport, counter_id, now_ns)

    def _free_receive_destination(self, destination: ReceiveDestination) -> None:
        destination.close()
        if destination.local_sockaddr_counter_id is not None:
            self.counters.set_counter_value(destination.local_sockaddr_counter_id, ctr.CHANNEL_ENDPOINT_STATUS_CLOSING)
            self.counters.free(destination.local_sockaddr_counter_id)
            destination.local_sockaddr_counter_id = None

    def _free_receive_destinations(self, endpoint: ReceiveChannelEndpoint) -> None:
        """The destinations still on a multi-destination endpoint the receiver has released."""
        for destination in self._receive_destinations.pop(endpoint, []):
            self._free_receive_destination(destination)

    def _close_released_receive_destinations(self) -> int:
        work = 0
        for destination in list(self._closing_receive_destinations):
            if destination.receiver_released:
                self._closing_receive_destinations.remove(destination)
                self._free_receive_destination(destination)
                work += 1
        return work

    # -- channel timestamps (media-rcv-ts-offset, channel-rcv-ts-offset, channel-snd-ts-offset) ---------------------
    def _set_timestamp_offsets(self, transport: Any, udp_channel: UdpChannel, receive: bool) -> None:
        """The transport writes receive (or send) timestamps into DATA frames where the channel says. A socket that
        refuses kernel timestamps leaves media timestamps off, logged as a warning as the C driver does."""
        media, channel_rcv, channel_snd = (offset if offset == TIMESTAMP_RESERVED_VALUE or offset >= 0
                                           else TIMESTAMP_NONE for offset in udp_channel.timestamp_offsets)
        if receive and (media, channel_rcv) != (TIMESTAMP_NONE, TIMESTAMP_NONE):
            if not transport.set_timestamp_offsets(media_receive=media, channel_receive=channel_rcv):
                self._log_error(ErrorCode.GENERIC_ERROR, f"WARNING: unable to setup media timestamping: "
                                                         f"{udp_channel.original}")
        elif not receive and channel_snd != TIMESTAMP_NONE:
            transport.set_timestamp_offsets(channel_send=channel_snd)

    @staticmethod
    def _check_timestamp_offsets_match(existing: UdpChannel, channel: UdpChannel, receive: bool) -> None:
        """A channel sharing an endpoint must ask for the timestamps the endpoint writes (aeron_driver_conductor_
        receive/send_endpoint_has_clashing_timestamp_offsets; GENERIC_ERROR as the C driver's EINVAL)."""
        from aeron.driver.driver_conductor import CommandError
        names = TIMESTAMP_OFFSET_KEYS[:2] if receive else TIMESTAMP_OFFSET_KEYS[2:]
        for name in names:
            index = TIMESTAMP_OFFSET_KEYS.index(name)
            ours, theirs = channel.timestamp_offsets[index], existing.timestamp_offsets[index]
            if ours != theirs:
                info = {TIMESTAMP_NONE: " (not specified)", TIMESTAMP_RESERVED_VALUE: " (reserved)"}.get(ours, " ")
                raise CommandError(ErrorCode.GENERIC_ERROR,
                                   f"option conflicts with existing subscription: {name}={ours}{info} "
                                   f"existingChannel={existing.original} channel={channel.original}")

    # -- response channels (control-mode=response, response-correlation-id) -------------------------------------------
    def _response_correlation_id(self, uri: ChannelUri) -> int | None:
        """``response-correlation-id``: None when absent (or -1), PROTOTYPE_CORRELATION_ID for `prototype`, else the id
        (aeron_driver_uri_get_response_correlation_id; GENERIC_ERROR as the C driver's EINVAL)."""
        from aeron.driver.driver_conductor import CommandError
        text = uri.get("response-correlation-id")
        if text is None:
            return None
        if text == "prototype":
            return PROTOTYPE_CORRELATION_ID
        try:
            value = int(text)
        except ValueError:
            value = -3
        if value < -1 or value >= 1 << 63:
            raise CommandError(ErrorCode.GENERIC_ERROR, "invalid response-correlation-id, must be a number greater "
                                                        "than or equal to -1, or 'prototype'")
        return None if value == -1 else value

    def _response_channel(self, uri: ChannelUri, udp_channel: UdpChannel) -> tuple[int | None, PublicationImage | None]:
        """A network publication's response correlation id and, for a response publication (control-mode=response),
        the image it answers (aeron_driver_conductor_validate_response_subscription and _find_response_publication_
        image): a request publication names an existing response subscription; a response publication names an
        image whose sender asked for a response channel (or is a `prototype`)."""
        from aeron.driver.driver_conductor import CommandError
        correlation_id = self._response_correlation_id(uri)
        if udp_channel.control_mode != CONTROL_MODE_RESPONSE:
            if correlation_id is not None and not any(s.registration_id == correlation_id
                                                      for s in self.network_subscriptions):
                raise CommandError(ErrorCode.GENERIC_ERROR, f"unable to find response subscription for "
                                                            f"response-correlation-id={correlation_id}")
            return correlation_id, None
        if correlation_id is None:
            raise CommandError(ErrorCode.GENERIC_ERROR,
                               "control-mode=response was specified, but no response-correlation-id set")
        if correlation_id == PROTOTYPE_CORRELATION_ID:
            return correlation_id, None
        for image in self.images:
            if image.correlation_id == correlation_id:
                if not image.has_send_response_setup:
                    raise CommandError(ErrorCode.GENERIC_ERROR, f"image.correlationId={correlation_id} did not "
                                                                f"request a response channel")
                return correlation_id, image
        raise CommandError(ErrorCode.GENERIC_ERROR, f"image.correlationId={correlation_id} not found")

    def _check_response_mode_matches(self, endpoint: ReceiveChannelEndpoint, udp_channel: UdpChannel,
                                     stream_id: int) -> None:
        """Subscriptions of one stream on one endpoint are all response subscriptions or none are."""
        from aeron.driver.driver_conductor import CommandError
        is_response = udp_channel.control_mode == CONTROL_MODE_RESPONSE
        for other in self.network_subscriptions:
            if other.endpoint is endpoint and other.stream_id == stream_id and \
                    (other.udp_channel.control_mode == CONTROL_MODE_RESPONSE) != is_response:
                raise CommandError(ErrorCode.GENERIC_ERROR,
                                   f"option conflicts with existing subscription: isResponse={str(is_response).lower()}"
                                   f" existingChannel={other.channel} channel={udp_channel.original}")

    def on_response_setup(self, response_correlation_id: int, response_session_id: int) -> None:
        """DriverConductorProxy.response_setup (port of aeron_driver_conductor_on_response_setup): the response
        subscription named by a request publication now wants the response publication's session, and asks its
        control address for a SETUP."""
        for subscription in self.network_subscriptions:
            if subscription.registration_id != response_correlation_id or subscription.is_spy:
                continue
            endpoint = subscription.endpoint
            stream_id = subscription.stream_id
            if subscription.session_id is None:
                subscription.session_id = response_session_id
                subscription.is_response = False
                self.receiver_proxy.add_subscription(endpoint, stream_id, response_session_id)
            self.receiver_proxy.request_setup(endpoint, stream_id, subscription.session_id)

    def on_response_connected(self, response_correlation_id: int) -> None:
        """DriverConductorProxy.response_connected (port of aeron_driver_conductor_on_response_connected): the
        response channel is up, its image stops sending RSP_SETUP."""
        for image in self.images:
            if image.correlation_id == response_correlation_id:
                image.set_response_session_id(None)

    # -- session-id=tag:<n> -------------------------------------------------------------------------------------------
    def _publication_session_id(self, uri: ChannelUri) -> tuple[int | None, NetworkPublication | None]:
        """A publication channel's session id: ``session-id=<n>``, or with ``session-id=tag:<n>`` the session id of
        the network publication whose entity tag (``tags=<channel tag>,<n>``) is n, which also lends its term
        length and MTU as defaults (aeron_uri_publication_session_id_param). Returns (session id or None, that
        publication or None)."""
        from aeron.driver.driver_conductor import CommandError
        tag = uri.session_id_tag()
        if tag is None:
            return self._uri_int(uri, "session-id", int, None), None
        for publication in self.network_publications:
            if publication.state != np_.DONE and ChannelUri.parse(publication.channel).entity_tag == tag:
                return publication.session_id, publication
        # GENERIC_ERROR, as the C driver answers this EINVAL
        raise CommandError(ErrorCode.GENERIC_ERROR, f"session-id=tag:{tag} must reference a network publication")

    # -- untethered network and spy subscriptions -------------------------------------------------------------------
    def _check_untethered_network_subscriptions(self, now_ns: int) -> int:
        """The untethered state machine (untethered.py) for spies of network publications, measured against the
        sender position (a rejoining spy resumes there), and for subscribers of images, measured against the
        farthest working subscriber and the receiver window (a rejoining subscriber resumes at the image's join
        position). Runs on the timer interval."""
        work = 0
        for publication in self.network_publications:
            if publication.state == np_.ACTIVE and publication.spies:
                work += self._check_untethered_spies(publication, now_ns)
        for image in self.images:
            if image.state == pi.ACTIVE and image.subscribers:
                work += self._check_untethered_image_subscribers(image, now_ns)
        return work

    def _check_untethered_spies(self, publication: NetworkPublication, now_ns: int) -> int:
        def rejoin(link) -> None:
            link.position.set_ordered(publication.snd_pos.get_volatile())
            self._transmit(cmd.ImageReady(
                publication.registration_id, publication.session_id, publication.stream_id,
                link.subscription.registration_id, link.counter_id, publication.log_path, "aeron:ipc"))
        return untethered.check_untethered_subscriptions(
            publication.spies.values(),
            untethered.untethered_window_limit(publication.snd_pos.get_volatile(), publication.window_length), now_ns,
            lambda link: self._transmit(cmd.ImageUnavailable(publication.registration_id,
                                                             link.subscription.registration_id, publication.stream_id,
                                                             link.subscription.channel)),
            lambda link: self._unlink_spy(link.subscription, publication), rejoin, publication.untethered_timeouts)

    def _check_untethered_image_subscribers(self, image: PublicationImage, now_ns: int) -> int:
        def rejoin(link) -> None:
            link.position.set_ordered(image.join_position_for_rejoin())
            self._transmit(cmd.ImageReady(image.correlation_id, image.session_id, image.stream_id,
                                          link.subscription.registration_id, link.counter_id, image.log_path,
                                          image.source_identity))
        positions = untethered.working_positions(image.subscribers.values())
        return untethered.check_untethered_subscriptions(
            image.subscribers.values(),
            untethered.untethered_window_limit(max(positions, default=0), image.next_sm_window), now_ns,
            lambda link: self._transmit(cmd.ImageUnavailable(image.correlation_id, link.subscription.registration_id,
                                                             image.stream_id, link.subscription.channel)),
            lambda link: self._unlink_image(link.subscription, image), rejoin, image.untethered_timeouts)

    # -- image rejection (REJECT_IMAGE) and publication errors -------------------------------------------------------
    def _reject_network_image(self, image_correlation_id: int, reason: str) -> bool:
        """Hand a REJECT_IMAGE to the receiver (aeron_driver_receiver_proxy_on_invalidate_image). False when no
        network image has that correlation id."""
        for image in self.images:
            if image.correlation_id == image_correlation_id:
                self.receiver_proxy.reject_image(image, reason)
                return True
        return False

    def on_publication_error(self, frame: cmd.PublicationErrorFrame) -> None:
        """DriverConductorProxy.publication_error (from the sender), and an IPC rejection: log a publication's error (once per receiver that sent one) and tell the clients (ON_PUBLICATION_ERROR),
        as aeron_driver_conductor_on_publication_error."""
        self._log_error(frame.error_code, (
            f"onPublicationError: registrationId={frame.registration_id}, "
            f"destinationRegistrationId={frame.destination_registration_id}, sessionId={frame.session_id}, "
            f"streamId={frame.stream_id}, receiverId={frame.receiver_id}, groupId={frame.group_tag}, "
            f"errorCode={int(frame.error_code)}, errorMessage={frame.error_message}"))
        self._transmit(frame)

    # -- shutdown ----------------------------------------------------------------------------------------------------
    def _close_network(self) -> None:
        for resource in [*self.images, *self.network_publications]:
            self._delete_log_files(resource)
        self.images = []
        self.network_publications = []
        for endpoint in [*self.send_endpoints.values(), *self._closing_send_endpoints,
                         *self.receive_endpoints.values(), *self._closing_receive_endpoints]:
            endpoint.close()
        self.send_endpoints.clear()
        self.receive_endpoints.clear()
        for destination in [*self._closing_receive_destinations,
                            *(d for ds in self._receive_destinations.values() for d in ds)]:
            destination.close()
