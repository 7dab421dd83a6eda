# SPDX-License-Identifier: Apache-2.0
"""NetworkResources: the conductor's UDP side (the network parts of aeron_driver_conductor.c).

It owns the send and receive channel endpoints (with the receive destinations of multi-destination
subscriptions), the network publications, the network and spy subscriptions and the publication images; creates
and removes them on the commands the DriverConductor hands it; runs their timers; and owns the Sender and
Receiver agents with the proxies that hand them publications, endpoints and images (SenderProxy, ReceiverProxy)
and that bring their requests back (DriverConductorProxy, onto the conductor's command queue). The
DriverConductor holds one as its ``network`` field and gives it what it shares with the IPC side: the context,
the counters, the client proxy, the log factory, and the client sessions (``get_or_add_client``), session ids
(``next_session_id``) and publication errors (``on_publication_error``).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aeron._core import counters as ctr
from aeron._core.counters import AtomicCounter, CountersManager
from aeron._core.frames import SETUP_SEND_RESPONSE_FLAG
from aeron._core.logbuffer import check_mtu_length, check_term_length
from aeron._core.loss_report import LossReport
from aeron._core.publication_limit import HAND_BACK as LIMIT_HAND_BACK
from aeron.common import command as cmd
from aeron.common.channel_uri import DATA_HEADER_LENGTH, FRAME_ALIGNMENT, MAX_UDP_PAYLOAD_LENGTH, ChannelUri, parse_size
from aeron.common.errors import ChannelEndpointError, ConfigurationError, ErrorCode
from aeron.driver.client_proxy import ClientProxy
from aeron.driver.client_session import ClientSession
from aeron.driver.congestion_control import congestion_control_for
from aeron.driver.driver_common import ACTIVE, DONE, DRAINING, IPC_CHANNEL, CommandError, check_managed_resources
from aeron.driver.driver_counters import DriverCounters
from aeron.driver.driver_log import LogFactory, os_default_socket_buffers
from aeron.driver.driver_uri import (
    PROTOTYPE_CORRELATION_ID, parse_channel, uri_bool, uri_duration, uri_int, uri_response_correlation_id,
    uri_untethered_timeouts,
)
from aeron.driver.flow_control import MinFlowControl, flow_control_for
from aeron.driver.loss_detector import OptimalMulticastDelayGenerator, StaticDelayGenerator
from aeron.driver.network_publication import NetworkPublication
from aeron.driver.proxies import (
    COMMAND_QUEUE_RESERVE, CommandQueue, DriverConductorProxy, ReceiverProxy, SenderProxy,
)
from aeron.driver.publication_image import PublicationImage
from aeron.driver.receive_channel_endpoint import ReceiveChannelEndpoint
from aeron.driver.receive_destination import ReceiveDestination
from aeron.driver.receiver import Receiver
from aeron.driver.send_channel_endpoint import SendChannelEndpoint
from aeron.driver.sender import Sender
from aeron.driver.subscription_link import (
    NetworkSubscriptionLink, SpySubscriptionLink, SubscriberPosition, SubscriptionLink,
)
from aeron.driver.udp_channel import (
    CONTROL_MODE_RESPONSE, TIMESTAMP_NONE, TIMESTAMP_OFFSET_KEYS, TIMESTAMP_RESERVED_VALUE, UdpChannel, format_address,
)
from aeron.driver.udp_channel_transport import LossyTransport, open_udp_transport
from aeron.driver.unconfirmed_images import UnconfirmedImages
from aeron.driver.untethered import TETHER_RESTING, UntetheredTimeouts

# what a receive destination may not set: it shares its subscription's socket settings and window (C driver's
# AERON_DRIVER_CONDUCTOR_INVALID_DESTINATION_KEYS)
INVALID_DESTINATION_KEYS = ("mtu", "rcv-wnd", "so-rcvbuf", "so-sndbuf", "response-correlation-id")
TERM_MIN_LENGTH = 65536


def check_supported_udp_params(uri: ChannelUri, channel: str) -> None:
    """Raise CommandError(INVALID_CHANNEL) for what needs a closed extension of the official driver: ats=true (Aeron
    Transport Security), which aeronmd without the premium extension refuses too."""
    if (uri.get("ats") or "false").lower().startswith("t"):
        raise CommandError(ErrorCode.INVALID_CHANNEL, f"parameter ats=true (transport security) is not supported: "
                                                      f"{channel}")


class NetworkResources:
    def __init__(self, ctx, *, command_queue: CommandQueue, counters: CountersManager,
                 driver_counters: DriverCounters, system: dict[int, AtomicCounter], client_proxy: ClientProxy,
                 log_factory: LogFactory, loss_report: LossReport,
                 get_or_add_client: Callable[[int], ClientSession], next_session_id: Callable[[int], int],
                 next_correlation_id: Callable[[], int], log_error: Callable[..., object],
                 on_publication_error: Callable[[cmd.PublicationErrorFrame], None]) -> None:
        self._ctx = ctx
        self._nano_clock = ctx.nano_clock
        self._epoch_clock = ctx.epoch_clock_ms
        # agents on one thread (SHARED, INVOKER) cannot wait for each other when a command queue is full
        one_thread = ctx.threading_mode.name in ("SHARED", "INVOKER")
        self.conductor_proxy = DriverConductorProxy(command_queue, self.on_create_publication_image,
                                                    system[ctr.CONDUCTOR_PROXY_FAILS], one_thread,
                                                    on_publication_error=on_publication_error,
                                                    on_response_setup=self.on_response_setup,
                                                    on_response_connected=self.on_response_connected)
        self.sender = Sender(self._nano_clock, system, self.conductor_proxy)
        self.receiver = Receiver(self._nano_clock, system, self.conductor_proxy)
        self.sender_proxy = SenderProxy(self.sender, system[ctr.SENDER_PROXY_FAILS], one_thread)
        self.receiver_proxy = ReceiverProxy(self.receiver, system[ctr.RECEIVER_PROXY_FAILS], one_thread)
        self._counters = counters
        self._counters_values = driver_counters.values
        self.driver_counters = driver_counters
        self._system = system
        self.client_proxy = client_proxy
        self._log_factory = log_factory
        self._loss_report = loss_report
        self._get_or_add_client = get_or_add_client
        self._next_session_id = next_session_id
        self._next_correlation_id = next_correlation_id
        self._log_error = log_error
        self.send_endpoints: dict[str, SendChannelEndpoint] = {}          # by canonical form
        self.receive_endpoints: dict[str, ReceiveChannelEndpoint] = {}
        # every open endpoint: a tagged endpoint can share its canonical form with another (the maps hold the latest,
        # as the C driver's), and each must still be found to close it
        self._open_endpoints: list[Any] = []
        self.network_publications: list[NetworkPublication] = []
        self.network_subscriptions: list[NetworkSubscriptionLink] = []
        self.spy_subscriptions: list[SpySubscriptionLink] = []
        self.images: list[PublicationImage] = []
        self._closing_send_endpoints: list[SendChannelEndpoint] = []
        self._closing_receive_endpoints: list[ReceiveChannelEndpoint] = []
        # destinations of multi-destination subscriptions as the conductor knows them (it owns their counters)
        self._receive_destinations: dict[ReceiveChannelEndpoint, list[ReceiveDestination]] = {}
        self._closing_receive_destinations: list[ReceiveDestination] = []
        self._os_buffers: tuple[int, int] | None = None
        # the driver's name resolver for channel endpoints and control addresses (the conductor sets it)
        self.name_resolver: Any = None

    # -- duty cycle and timers -----------------------------------------------------------------------------------
    def is_applying_backpressure(self) -> bool:
        """The sender or the receiver is behind on the commands already handed on: take no new client command."""
        # CommandProxy.is_applying_backpressure of both, inlined: the conductor asks every duty cycle
        queue = self.sender_proxy.queue
        if queue.capacity - len(queue._records) < COMMAND_QUEUE_RESERVE:
            return True
        queue = self.receiver_proxy.queue
        return queue.capacity - len(queue._records) < COMMAND_QUEUE_RESERVE

    def do_work(self, now_ns: int) -> int:
        """Every conductor duty cycle: publisher limits, and the endpoints and destinations the agents let go of."""
        work = 0
        for publication in self.network_publications:
            # its compiled update, called here directly (most cycles, nothing else to do); Python's when it hands back
            moved = publication.limit.update()
            work += publication.update_pub_pos_and_lmt() if moved == LIMIT_HAND_BACK else moved
        if self._closing_send_endpoints or self._closing_receive_endpoints:
            work += self._close_released_endpoints()
        if self._closing_receive_destinations:
            work += self._close_released_receive_destinations()
        return work

    def on_time_event(self, now_ns: int, now_ms: int) -> int:
        """Every timer interval: each network publication and image runs its own lifecycle."""
        work = check_managed_resources(self.network_publications, now_ns, now_ms, self,
                                       self._delete_network_publication)
        work += check_managed_resources(self.images, now_ns, now_ms, self, self._delete_image)
        return work

    # -- what the resources' on_time_event call back -------------------------------------------------------------
    def unlink_subscriber(self, subscription: SubscriptionLink, resource: Any, resource_id: int) -> None:
        """Undo a link between a subscription and a network publication (spy) or image, freeing its sub-pos."""
        link = resource.remove_subscriber(subscription.registration_id)
        subscription.remove_link(resource_id)
        if link is not None:
            self.driver_counters.free(link.position)

    def on_spy_image_available(self, publication: NetworkPublication, link: SubscriberPosition) -> None:
        """Tell a spy's client about its image of a network publication (ON_AVAILABLE_IMAGE)."""
        self.client_proxy.on_available_image(
            publication.registration_id, publication.session_id, publication.stream_id,
            link.subscription.registration_id, link.counter_id, publication.log_path, IPC_CHANNEL)

    def on_image_available(self, image: PublicationImage, link: SubscriberPosition) -> None:
        """Tell a subscription's client about an image (ON_AVAILABLE_IMAGE)."""
        self.client_proxy.on_available_image(image.correlation_id, image.session_id, image.stream_id,
                                             link.subscription.registration_id, link.counter_id, image.log_path,
                                             image.source_identity)

    def cleanup_network_publication(self, publication: NetworkPublication) -> None:
        """Linger over: the sender lets go of the publication, then it is deleted."""
        self.sender_proxy.remove_publication(publication)

    def remove_image_from_receiver(self, image: PublicationImage, now_ns: int) -> None:
        """The image's subscribers are gone: the receiver drops it (a session that may not rejoin cools down)."""
        self.receiver_proxy.remove_publication_image(image, now_ns, image.rejoin)
        self._try_remove_receive_endpoint(image.endpoint)

    # -- helpers -------------------------------------------------------------------------------------------------
    def _udp_channel(self, channel: str, uri: ChannelUri, is_subscription: bool) -> UdpChannel:
        try:
            if uri.is_spy:      # a spy names the publication's channel: parse it as the publication does
                return UdpChannel.parse(channel[len("aeron-spy:"):], is_subscription=False,
                                        resolver=self.name_resolver)
            return UdpChannel.parse(channel, uri, is_subscription=is_subscription, resolver=self.name_resolver)
        except ConfigurationError as exc:
            raise CommandError(ErrorCode.INVALID_CHANNEL, f"{exc}") from exc

    def _socket_buffers(self, uri: ChannelUri) -> tuple[int, int]:
        ctx = self._ctx
        rcvbuf = uri_int(uri, "so-rcvbuf", parse_size, None)
        sndbuf = uri_int(uri, "so-sndbuf", parse_size, None)
        return (ctx.socket_rcvbuf if rcvbuf is None else rcvbuf, ctx.socket_sndbuf if sndbuf is None else sndbuf)

    @staticmethod
    def _channel_buffers(uri: ChannelUri) -> tuple[int, int]:
        """(so-sndbuf, so-rcvbuf) as the channel gives them, 0 where it does not."""
        return (uri_int(uri, "so-sndbuf", parse_size, None) or 0, uri_int(uri, "so-rcvbuf", parse_size, None) or 0)

    def _os_default_buffers(self) -> tuple[int, int]:
        """(SO_SNDBUF, SO_RCVBUF) of a fresh UDP socket: what a channel and context that set neither get."""
        if self._os_buffers is None:
            self._os_buffers = os_default_socket_buffers()
        return self._os_buffers

    def _check_mtu_for_sndbuf(self, mtu_length: int, endpoint_sndbuf: int, channel_sndbuf: int) -> None:
        """A publication's MTU must fit the send buffer it will get: the endpoint's, else the channel's, the
        context's or the OS default (aeron_publication_params_validate_mtu_for_sndbuf)."""
        for name, sndbuf in (("endpoint", endpoint_sndbuf), ("channel", channel_sndbuf),
                             ("context", self._ctx.socket_sndbuf), ("os default", self._os_default_buffers()[0])):
            if sndbuf != 0:
                if sndbuf < mtu_length:
                    raise CommandError(ErrorCode.GENERIC_ERROR, f"MTU greater than SO_SNDBUF for {name}: "
                                                                f"mtu={mtu_length} so-sndbuf={sndbuf}")
                return

    @staticmethod
    def _check_buffer_length(name: str, length: int, existing: int, channel: UdpChannel,
                             existing_channel: UdpChannel) -> None:
        """A channel sharing an endpoint may not ask for another socket buffer length than the endpoint has."""
        if length != 0 and length != existing:
            value = "OS default" if existing == 0 else str(existing)
            raise CommandError(ErrorCode.GENERIC_ERROR,
                               f"{name}={length} does not match existing value of {value}: "
                               f"existingChannel={existing_channel.original} channel={channel.original}")

    def _check_window_for_rcvbuf(self, window: int, rcvbuf: int, channel: UdpChannel,
                                 existing: UdpChannel | None) -> None:
        """A subscription's receiver window must fit its socket's receive buffer (aeron_driver_conductor_validate_
        initial_window_for_rcvbuf)."""
        limit, os_note = (rcvbuf, "") if rcvbuf != 0 else (self._os_default_buffers()[1], " (OS default)")
        if limit < window:
            channels = f"channel={channel.original}" if existing is None else \
                f"existingChannel={existing.original} channel={channel.original}"
            raise CommandError(ErrorCode.GENERIC_ERROR, f"Initial window greater than SO_RCVBUF for channel: "
                                                        f"rcv-wnd={window} so-rcvbuf={rcvbuf}{os_note} {channels}")

    @staticmethod
    def _matches_tag(channel: UdpChannel, endpoint_channel: UdpChannel) -> bool:
        """Whether ``channel`` names ``endpoint_channel``'s endpoint by its tag (aeron_udp_channel_matches_tag);
        the same tag with another control mode or other addresses is refused."""
        if channel.tag is None or channel.tag != endpoint_channel.tag:
            return False
        if channel.control_mode is not None and channel.control_mode != endpoint_channel.control_mode:
            raise CommandError(ErrorCode.GENERIC_ERROR, f"matching tag {channel.tag} has mismatched control-mode: "
                                                        f"{channel.original} <> {endpoint_channel.original}")
        if not channel.tag_addresses_match(endpoint_channel):
            raise CommandError(ErrorCode.GENERIC_ERROR, f"matching tag {channel.tag} has mismatched endpoint or "
                                                        f"control: {channel.original} <> {endpoint_channel.original}")
        return True

    def _find_send_endpoint(self, udp_channel: UdpChannel) -> SendChannelEndpoint | None:
        """The send endpoint a publication channel names: by tag first, else by canonical form (aeron_driver_
        conductor_find_existing_send_channel_endpoint)."""
        if udp_channel.tag is not None:
            for endpoint in self.send_endpoints.values():
                if self._matches_tag(udp_channel, endpoint.udp_channel):
                    return endpoint
            if not (udp_channel.has_explicit_control or udp_channel.is_manual_control_mode or
                    udp_channel.has_explicit_endpoint):
                raise CommandError(ErrorCode.GENERIC_ERROR,
                                   "URI must have explicit control, endpoint, or be manual control-mode when "
                                   f"original: channel={udp_channel.original}")
        endpoint = self.send_endpoints.get(udp_channel.canonical_form)
        if endpoint is not None and None not in (udp_channel.tag, endpoint.udp_channel.tag) and \
                udp_channel.tag != endpoint.udp_channel.tag:
            return None
        return endpoint

    def _find_receive_endpoint(self, udp_channel: UdpChannel) -> ReceiveChannelEndpoint | None:
        """The receive endpoint a subscription channel names: by tag first, else by canonical form."""
        if udp_channel.tag is not None:
            for endpoint in self.receive_endpoints.values():
                if self._matches_tag(udp_channel, endpoint.udp_channel):
                    return endpoint
        endpoint = self.receive_endpoints.get(udp_channel.canonical_form)
        if endpoint is not None and None not in (udp_channel.tag, endpoint.udp_channel.tag) and \
                udp_channel.tag != endpoint.udp_channel.tag:
            return None
        return endpoint

    def _channel_counters(self, kind: str, channel: str, registration_id: int, bound: tuple) -> tuple[int, int]:
        """snd-channel/rcv-channel status counter and its local-sockaddr counter (keys, labels: aeron_position.c)."""
        type_id = ctr.DRIVER_SEND_CHANNEL_STATUS_TYPE_ID if kind == "snd" else ctr.DRIVER_RECEIVE_CHANNEL_STATUS_TYPE_ID
        address = format_address(bound)
        status_id = self._counters.allocate(
            f"{kind}-channel: {channel} {address}"[:ctr.MAX_LABEL_LENGTH], type_id,
            ctr.channel_status_key_encode(channel), registration_id=registration_id)
        sockaddr_id = self._counters.allocate(
            f"{kind}-local-sockaddr: {status_id} {address}", ctr.DRIVER_LOCAL_SOCKET_ADDRESS_STATUS_TYPE_ID,
            ctr.local_sockaddr_key_encode(status_id, address), registration_id=registration_id)
        self._counters.set_counter_value(sockaddr_id, ctr.CHANNEL_ENDPOINT_STATUS_ACTIVE)
        return status_id, sockaddr_id

    def _open_transport(self, udp_channel: UdpChannel, uri: ChannelUri, bind: tuple) -> Any:
        """The endpoint's socket bound to ``bind``, joined to it as a group when the channel is multicast."""
        rcvbuf, sndbuf = self._socket_buffers(uri)
        multicast = udp_channel.is_multicast
        try:
            return open_udp_transport(udp_channel.family, bind, multicast_group=bind if multicast else None,
                                      interface=udp_channel.interface if multicast else None,
                                      ttl=udp_channel.ttl if multicast else 0, so_rcvbuf=rcvbuf, so_sndbuf=sndbuf,
                                      name=udp_channel.original)
        except ChannelEndpointError as exc:
            # GENERIC_ERROR as the C driver answers a failed bind (an OS errno): clients take CHANNEL_ENDPOINT_ERROR
            # for an endpoint's later failure, keyed by its status counter, not as the answer to their command
            raise CommandError(ErrorCode.GENERIC_ERROR, str(exc)) from exc

    # -- publications --------------------------------------------------------------------------------------------
    def add_publication(self, command, uri: ChannelUri, is_exclusive: bool) -> None:
        """ADD_PUBLICATION / ADD_EXCLUSIVE_PUBLICATION on a UDP channel: join a matching shared publication or
        create one (and its send endpoint if the channel has none yet), then link spies."""
        ctx = self._ctx
        channel = command.channel
        check_supported_udp_params(uri, channel)
        udp_channel = self._udp_channel(channel, uri, is_subscription=False)
        if not udp_channel.is_multi_destination and udp_channel.has_explicit_endpoint and \
                udp_channel.remote_data is not None and udp_channel.remote_data[1] == 0:
            raise CommandError(ErrorCode.GENERIC_ERROR, f"endpoint has port=0 for publication: channel={channel}")
        stream_id = command.stream_id
        term_length = uri_int(uri, "term-length", parse_size, None)
        mtu_length = uri_int(uri, "mtu", parse_size, None)
        session_id, tagged = self.publication_session_id(uri)
        response_correlation_id, response_image = self._response_channel(uri, udp_channel)
        endpoint = self._find_send_endpoint(udp_channel)
        if endpoint is None and udp_channel.remote_data is None and not udp_channel.is_multi_destination and \
                udp_channel.control_mode != CONTROL_MODE_RESPONSE:
            raise CommandError(ErrorCode.INVALID_CHANNEL, f"publication channel needs an endpoint: {channel}")
        channel_sndbuf, channel_rcvbuf = self._channel_buffers(uri)
        resolved_mtu = mtu_length or (tagged.mtu if tagged is not None else ctx.mtu_length)
        if endpoint is not None:
            self._check_timestamp_offsets_match(endpoint.udp_channel, udp_channel, receive=False)
            existing_rcvbuf, existing_sndbuf = self._socket_buffers(endpoint.udp_channel.uri)
            self._check_mtu_for_sndbuf(resolved_mtu, existing_sndbuf, channel_sndbuf)
            self._check_buffer_length("so-rcvbuf", channel_rcvbuf, existing_rcvbuf, udp_channel, endpoint.udp_channel)
            self._check_buffer_length("so-sndbuf", channel_sndbuf, existing_sndbuf, udp_channel, endpoint.udp_channel)
            if udp_channel.tag is not None and udp_channel.tag == endpoint.udp_channel.tag:
                udp_channel = endpoint.udp_channel      # named by its tag: the endpoint's addresses and modes
        else:
            self._check_mtu_for_sndbuf(resolved_mtu, 0, channel_sndbuf)
        start = (uri_int(uri, "init-term-id", int, None), uri_int(uri, "term-id", int, None),
                 uri_int(uri, "term-offset", parse_size, None))
        if any(v is not None for v in start) and not all(v is not None for v in start):
            raise CommandError(ErrorCode.INVALID_CHANNEL,
                               "init-term-id, term-id and term-offset must be given together")
        if not is_exclusive and endpoint is not None:
            for publication in self.network_publications:
                if (publication.endpoint is endpoint and publication.stream_id == stream_id and
                        publication.state == ACTIVE and not publication.is_exclusive and
                        publication.response_correlation_id == response_correlation_id):
                    publication.check_joins_existing(term_length, mtu_length, session_id, start)
                    ssc = uri_bool(uri, "ssc", ctx.spies_simulate_connection)
                    if publication.spies_simulate_connection != ssc:
                        raise CommandError(ErrorCode.GENERIC_ERROR, "existing publication has different spies "
                                                                    f"simulate connection: requested={ssc}".lower())
                    if response_image is not None:
                        response_image.set_response_session_id(publication.session_id)
                    publication.incref()
                    client = self._get_or_add_client(command.client_id)
                    client.publication_links[command.correlation_id] = publication
                    self.client_proxy.on_publication_ready(
                        command.correlation_id, publication.registration_id, publication.session_id, stream_id,
                        publication.pub_lmt_id, endpoint.status_counter_id, publication.log_path, is_exclusive=False)
                    return
        term_length = term_length or (tagged.term_length if tagged is not None else ctx.term_buffer_length)
        if udp_channel.control_mode == CONTROL_MODE_RESPONSE and response_correlation_id == PROTOTYPE_CORRELATION_ID:
            term_length = TERM_MIN_LENGTH           # a prototype response publication is never used: keep it small
        mtu_length = mtu_length or (tagged.mtu if tagged is not None else ctx.mtu_length)
        try:
            check_term_length(term_length)
            check_mtu_length(mtu_length)
        except ConfigurationError as exc:
            raise CommandError(ErrorCode.INVALID_CHANNEL, f"{channel}: {exc}") from exc
        if session_id is not None:
            for other in self.network_publications:
                if other.stream_id == stream_id and other.session_id == session_id and other.state != DONE \
                        and other.endpoint is endpoint:
                    raise CommandError(ErrorCode.GENERIC_ERROR,
                                       f"existing publication has clashing session id: {session_id}")
        else:
            session_id = self._next_session_id(stream_id)
        try:
            flow_control = flow_control_for(
                channel, uri.get("fc"), udp_channel.has_group_semantics, ctx.multicast_flow_control_strategy,
                ctx.unicast_flow_control_strategy, group_tag=ctx.flow_control_group_tag,
                group_min_size=ctx.flow_control_group_min_size,
                receiver_timeout_ns=ctx.flow_control_receiver_timeout_ns)
        except ConfigurationError as exc:
            raise CommandError(ErrorCode.INVALID_CHANNEL, str(exc)) from exc
        created_endpoint = endpoint is None
        if endpoint is None:
            endpoint = self._open_send_endpoint(udp_channel, uri, command.correlation_id)
        try:
            publication = self._create_network_publication(
                command, endpoint, udp_channel, uri, session_id, term_length, mtu_length, start, is_exclusive,
                flow_control, response_correlation_id)
        except BaseException:
            if created_endpoint:
                self._close_send_endpoint(endpoint)
            raise
        endpoint.incref()
        client = self._get_or_add_client(command.client_id)
        client.publication_links[command.correlation_id] = publication
        self.client_proxy.on_publication_ready(
            command.correlation_id, publication.registration_id, session_id, stream_id, publication.pub_lmt_id,
            endpoint.status_counter_id, publication.log_path, is_exclusive)
        for subscription in self.spy_subscriptions:
            if subscription.matches_publication(publication):
                self._link_spy(subscription, publication)
        if response_image is not None:
            response_image.set_response_session_id(publication.session_id)

    def _open_send_endpoint(self, udp_channel: UdpChannel, uri: ChannelUri,
                            registration_id: int) -> SendChannelEndpoint:
        # a multicast sender binds the control group (status messages come back there), others their local address
        transport = self._open_transport(udp_channel, uri, udp_channel.local_control if udp_channel.is_multicast
                                         else udp_channel.local_data)
        self._set_timestamp_offsets(transport, udp_channel, receive=False)
        status_id, sockaddr_id = self._channel_counters("snd", udp_channel.original, registration_id,
                                                        transport.bound_address)
        endpoint = SendChannelEndpoint(udp_channel, transport, registration_id, status_id,
                                       AtomicCounter(self._counters_values, status_id), sockaddr_id, self._system,
                                       on_publication_error=self.conductor_proxy.publication_error,
                                       on_response_setup=self.conductor_proxy.response_setup,
                                       on_response_connected=self.conductor_proxy.response_connected)
        if udp_channel.is_multi_destination:
            # mdc-num-dest: destinations of an MDC send endpoint (MdcDestinations: type 18, plain channel label)
            counter_id = self._counters.allocate(
                f"mdc-num-dest: {udp_channel.original}"[:ctr.MAX_LABEL_LENGTH], ctr.MDC_DESTINATIONS_COUNTER_TYPE_ID,
                ctr.channel_status_key_encode(udp_channel.original), registration_id=registration_id)
            endpoint.attach_destinations_counter(counter_id, AtomicCounter(self._counters_values, counter_id))
        self.send_endpoints[udp_channel.canonical_form] = endpoint
        self._open_endpoints.append(endpoint)
        self.sender_proxy.add_endpoint(endpoint)
        return endpoint

    def _close_send_endpoint(self, endpoint: SendChannelEndpoint) -> None:
        if self.send_endpoints.get(endpoint.udp_channel.canonical_form) is endpoint:
            del self.send_endpoints[endpoint.udp_channel.canonical_form]
        if endpoint in self._open_endpoints:
            self._open_endpoints.remove(endpoint)
        endpoint.status.set_ordered(ctr.CHANNEL_ENDPOINT_STATUS_CLOSING)
        self.sender_proxy.remove_endpoint(endpoint)
        self._closing_send_endpoints.append(endpoint)

    def _create_network_publication(self, command, endpoint: SendChannelEndpoint, udp_channel: UdpChannel,
                                    uri: ChannelUri, session_id: int, term_length: int, mtu_length: int, start,
                                    is_exclusive: bool, flow_control,
                                    response_correlation_id: int | None) -> NetworkPublication:
        ctx = self._ctx
        registration_id = command.correlation_id
        stream_id = command.stream_id
        channel = command.channel
        is_response = udp_channel.control_mode == CONTROL_MODE_RESPONSE
        configured = uri_int(uri, "pub-wnd", parse_size, None) or ctx.publication_term_window_length
        window = min(configured, term_length // 2) if configured > 0 else term_length // 2
        linger_ns = uri_duration(uri, "linger", ctx.publication_linger_timeout_ns)
        signal_eos = uri_bool(uri, "eos", True)
        log = self._log_factory.create_publication_log(
            registration_id, session_id, stream_id, channel, term_length=term_length, mtu_length=mtu_length,
            is_exclusive=is_exclusive, start=start if start[0] is not None else None,
            sparse=uri_bool(uri, "sparse", ctx.term_buffer_sparse_file), window_length=window,
            linger_timeout_ns=linger_ns, signal_eos=signal_eos, response_correlation_id=response_correlation_id,
            is_response=is_response, untethered_timeouts=uri_untethered_timeouts(uri, ctx))
        try:
            if isinstance(flow_control, MinFlowControl):    # min and tagged count their receivers (fc-receivers)
                flow_control.attach_receivers_counter(self.driver_counters.stream_counter(
                    "fc-receivers", ctr.FLOW_CONTROL_RECEIVERS_COUNTER_TYPE_ID, registration_id, session_id,
                    stream_id, endpoint.udp_channel.original, owner_id=-1))
            pub_pos, pub_lmt, snd_pos, snd_lmt, snd_bpe, snd_naks_received = self.driver_counters.stream_counters(
                (("pub-pos (exclusive)" if is_exclusive else "pub-pos (concurrent)", ctr.DRIVER_PUBLISHER_POS_TYPE_ID),
                 ("pub-lmt", ctr.DRIVER_PUBLISHER_LIMIT_TYPE_ID), ("snd-pos", ctr.DRIVER_SENDER_POSITION_TYPE_ID),
                 ("snd-lmt", ctr.DRIVER_SENDER_LIMIT_TYPE_ID), ("snd-bpe", ctr.DRIVER_SENDER_BPE_TYPE_ID),
                 ("snd-naks-received", ctr.DRIVER_SENDER_NAKS_RECEIVED_TYPE_ID)),
                registration_id, session_id, stream_id, channel, owner_id=command.client_id)
        except BaseException:
            if getattr(flow_control, "receivers_counter", None) is not None:
                self.driver_counters.free(flow_control.receivers_counter)
            self._log_factory.discard(log)
            raise
        max_resend = 1 if not udp_channel.has_group_semantics else (
            uri_int(uri, "max-resend", int, None) or ctx.max_resend)
        publication = NetworkPublication(
            registration_id=registration_id, owner_client_id=command.client_id, session_id=session_id,
            stream_id=stream_id, channel=channel, is_exclusive=is_exclusive, log=log, endpoint=endpoint,
            pub_pos=pub_pos, pub_lmt=pub_lmt, snd_pos=snd_pos, snd_lmt=snd_lmt, snd_bpe=snd_bpe,
            snd_naks_received=snd_naks_received, flow_control=flow_control, window_length=window,
            linger_timeout_ns=linger_ns, unblock_timeout_ns=ctx.publication_unblock_timeout_ns,
            connection_timeout_ns=ctx.publication_connection_timeout_ns, signal_eos=signal_eos,
            spies_simulate_connection=uri_bool(uri, "ssc", ctx.spies_simulate_connection),
            max_retransmits=max_resend, ttl=udp_channel.ttl if udp_channel.is_multicast else 0,
            is_group=udp_channel.has_group_semantics, now_ns=self._nano_clock(),
            max_messages_per_send=ctx.network_publication_max_messages_per_send, system=self._system,
            untethered_timeouts=UntetheredTimeouts(*uri_untethered_timeouts(uri, ctx)),
            response_correlation_id=response_correlation_id, is_response=is_response)
        endpoint.add_publication(publication)
        self.network_publications.append(publication)
        self.sender_proxy.add_publication(publication)
        return publication

    def remove_publication(self, publication: NetworkPublication, now_ns: int, revoke: bool) -> None:
        """A client link removed: the last one ends the stream (drained, or at once when revoked)."""
        if publication.decref() <= 0 and publication.state == ACTIVE:
            if revoke:
                publication.revoke(now_ns, self)
            else:
                publication.begin_draining(now_ns)

    def _delete_network_publication(self, publication: NetworkPublication) -> None:
        endpoint = publication.endpoint
        endpoint.remove_publication(publication)
        self._log_factory.delete(publication)
        for counter in (publication.pub_pos, publication.pub_lmt, publication.snd_pos, publication.snd_lmt,
                        publication.snd_bpe, publication.snd_naks):
            self.driver_counters.free(counter)
        receivers_counter = getattr(publication.flow_control, "receivers_counter", None)
        if receivers_counter is not None:
            self.driver_counters.free(receivers_counter)
        if endpoint.decref() <= 0:
            self._close_send_endpoint(endpoint)

    def _close_released_endpoints(self) -> int:
        """Close the endpoints the sender and receiver have let go of and free their counters."""
        work = 0
        for endpoint in [e for e in self._closing_send_endpoints if e.sender_released]:
            self._closing_send_endpoints.remove(endpoint)
            endpoint.close()
            self._counters.free(endpoint.local_sockaddr_counter_id)
            self._counters.free(endpoint.status_counter_id)
            if endpoint.destinations_counter_id is not None:
                self._counters.free(endpoint.destinations_counter_id)
            work += 1
        for endpoint in [e for e in self._closing_receive_endpoints if e.receiver_released]:
            self._closing_receive_endpoints.remove(endpoint)
            endpoint.close()
            if endpoint.local_sockaddr_counter_id is not None:
                self._counters.free(endpoint.local_sockaddr_counter_id)
            self._counters.free(endpoint.status_counter_id)
            for destination in self._receive_destinations.pop(endpoint, []):   # those still on an MDS endpoint
                self._free_receive_destination(destination)
            work += 1
        return work

    # -- subscriptions -------------------------------------------------------------------------------------------
    def add_subscription(self, command, uri: ChannelUri) -> None:
        """ADD_SUBSCRIPTION on a UDP or ``aeron-spy:`` channel: link the images (or the spied publications) there."""
        ctx = self._ctx
        channel = command.channel
        is_spy = uri.is_spy
        check_supported_udp_params(uri, channel)
        udp_channel = self._udp_channel(channel, uri, is_subscription=not is_spy)
        session_id = uri_int(uri, "session-id", int, None)
        cc = uri.get("cc")
        if cc not in (None, "static", "cubic"):
            raise CommandError(ErrorCode.INVALID_CHANNEL, f"unknown congestion control cc={cc} in {channel}")
        group = uri.get("group")
        if group not in (None, "true", "false", "infer"):
            raise CommandError(ErrorCode.INVALID_CHANNEL, f"invalid group={group} in {channel}")
        tether, rejoin = uri_bool(uri, "tether", True), uri_bool(uri, "rejoin", True)
        timeouts = uri_untethered_timeouts(uri, ctx)
        if is_spy:
            spy = SpySubscriptionLink(command.correlation_id, command.client_id, command.stream_id, channel,
                                      session_id, udp_channel, tether=tether, rejoin=rejoin,
                                      untethered_timeouts=timeouts)
            client = self._get_or_add_client(command.client_id)
            self.spy_subscriptions.append(spy)
            client.subscriptions[spy.registration_id] = spy
            self.client_proxy.on_subscription_ready(command.correlation_id, -1)
            self._link_spies(spy)
            return
        if udp_channel.has_explicit_control and udp_channel.remote_control is not None and \
                udp_channel.remote_control[1] == 0:
            raise CommandError(ErrorCode.GENERIC_ERROR, f"control has port=0 for subscription: channel={channel}")
        receiver_window = uri_int(uri, "rcv-wnd", parse_size, None)
        nak_delay_ns = uri_duration(uri, "nak-delay", ctx.nak_unicast_delay_ns) if uri.has("nak-delay") else None
        endpoint = self._find_receive_endpoint(udp_channel)
        window = receiver_window or ctx.initial_window_length
        rcvbuf, sndbuf = self._socket_buffers(uri)
        if endpoint is None:
            self._check_window_for_rcvbuf(window, rcvbuf, udp_channel, None)
            endpoint = self._open_receive_endpoint(udp_channel, uri, command.correlation_id)
        else:
            existing = endpoint.udp_channel
            self._check_timestamp_offsets_match(existing, udp_channel, receive=True)
            self._check_response_mode_matches(endpoint, udp_channel, command.stream_id)
            if not udp_channel.is_manual_control_mode and not existing.is_manual_control_mode:
                existing_rcvbuf, existing_sndbuf = self._socket_buffers(existing.uri)
                self._check_window_for_rcvbuf(window, rcvbuf, udp_channel, existing)
                self._check_buffer_length("so-sndbuf", sndbuf, existing_sndbuf, udp_channel, existing)
                self._check_buffer_length("so-rcvbuf", rcvbuf, existing_rcvbuf, udp_channel, existing)
            if udp_channel.tag is not None and udp_channel.tag == existing.tag:
                udp_channel = existing                  # named by its tag: the endpoint's addresses and modes
        endpoint.incref()
        is_response = udp_channel.control_mode == CONTROL_MODE_RESPONSE
        subscription = NetworkSubscriptionLink(
            command.correlation_id, command.client_id, command.stream_id, channel, session_id, endpoint, udp_channel,
            is_reliable=uri_bool(uri, "reliable", True), rejoin=rejoin, tether=tether, cc=cc, group=group,
            receiver_window=receiver_window, nak_delay_ns=nak_delay_ns, untethered_timeouts=timeouts,
            is_response=is_response)
        client = self._get_or_add_client(command.client_id)
        self.network_subscriptions.append(subscription)
        client.subscriptions[subscription.registration_id] = subscription
        self.client_proxy.on_subscription_ready(command.correlation_id, endpoint.status_counter_id)
        if not is_response:                     # a response subscription waits for its session (RSP_SETUP)
            self.receiver_proxy.add_subscription(endpoint, command.stream_id, session_id)
        for image in self.images:
            if image.endpoint is endpoint and self._is_accepting_subscriptions(image) and subscription.matches(image):
                self._link_image(subscription, image)

    @staticmethod
    def _is_accepting_subscriptions(image: PublicationImage) -> bool:
        """An image a new subscription may join (aeron_publication_image_is_accepting_subscriptions): one that still
        has a working subscriber and data to give. An image its last subscriber left is going: the new subscription
        waits for the image the sender's next SETUP makes, which starts where the stream is then."""
        return image.has_working_positions() and (
            image.state == ACTIVE or (image.state == DRAINING and not image.is_drained()))

    def _link_spies(self, spy: SpySubscriptionLink) -> None:
        for publication in self.network_publications:
            if self._is_accepting_spies(publication) and spy.matches_publication(publication):
                self._link_spy(spy, publication)

    @staticmethod
    def _is_accepting_spies(publication: NetworkPublication) -> bool:
        """A publication a new spy may join (aeron_network_publication_is_accepting_subscriptions): active, or
        draining with a working subscriber and data the sender has not sent yet."""
        return publication.state == ACTIVE or (
            publication.state == DRAINING and
            any(link.state != TETHER_RESTING for link in publication.spies.values()) and
            publication.producer_position() > publication.snd_pos.get_volatile())

    def _receiver_group_tag(self, uri: ChannelUri) -> int | None:
        """The group tag the endpoint's status messages carry: the channel's gtag, else the configured one."""
        return uri_int(uri, "gtag", int, self._ctx.receiver_group_tag)

    def _open_receive_endpoint(self, udp_channel: UdpChannel, uri: ChannelUri,
                               registration_id: int) -> ReceiveChannelEndpoint:
        if udp_channel.is_manual_control_mode:
            return self._open_multi_destination_receive_endpoint(udp_channel, uri, registration_id)
        group_tag = self._receiver_group_tag(uri)
        transport = self._open_transport(udp_channel, uri, udp_channel.local_data)
        self._set_timestamp_offsets(transport, udp_channel, receive=True)
        loss = self._ctx.loss_generator_factory()
        if loss is not None:
            transport = LossyTransport(transport, loss())
        status_id, sockaddr_id = self._channel_counters("rcv", udp_channel.original, registration_id,
                                                        transport.bound_address)
        endpoint = ReceiveChannelEndpoint(udp_channel, transport, registration_id, status_id,
                                          AtomicCounter(self._counters_values, status_id), sockaddr_id, self._system,
                                          self.conductor_proxy.create_publication_image, group_tag=group_tag,
                                          stream_session_limit=self._ctx.stream_session_limit,
                                          on_error=self._log_error, unconfirmed=self._unconfirmed_images())
        self.receive_endpoints[udp_channel.canonical_form] = endpoint
        self._open_endpoints.append(endpoint)
        self.receiver_proxy.add_endpoint(endpoint)
        return endpoint

    def _unconfirmed_images(self) -> UnconfirmedImages:
        """A new receive endpoint's budget for the images its sources have not confirmed yet. The first one allocates
        the driver's counter of the SETUPs they refuse: a system counter of ours, made when first needed so that
        the counters before it keep the ids the C driver gives them."""
        rejected = self._system.get(ctr.UNCONFIRMED_IMAGES_REJECTED)
        if rejected is None:
            label = next(label for i, _, label in ctr.EXTRA_SYSTEM_COUNTERS if i == ctr.UNCONFIRMED_IMAGES_REJECTED)
            counter_id = self._counters.allocate(
                label, ctr.DRIVER_SYSTEM_COUNTER_TYPE_ID,
                ctr.system_counter_key_encode(ctr.UNCONFIRMED_IMAGES_REJECTED),
                registration_id=ctr.UNCONFIRMED_IMAGES_REJECTED, owner_id=-1)
            rejected = self._system[ctr.UNCONFIRMED_IMAGES_REJECTED] = AtomicCounter(self._counters_values, counter_id)
        ctx = self._ctx
        return UnconfirmedImages(ctx.unconfirmed_images_max, ctx.unconfirmed_log_bytes_max,
                                 ctx.unconfirmed_source_images_max, ctx.unconfirmed_source_log_bytes_max,
                                 ctx.unconfirmed_image_timeout_ns, ctx.file_page_size, rejected)

    def remove_subscription(self, subscription: SubscriptionLink) -> None:
        """REMOVE_SUBSCRIPTION (or its client gone): unlink it; the last subscription closes the endpoint."""
        if isinstance(subscription, SpySubscriptionLink):
            if subscription in self.spy_subscriptions:
                self.spy_subscriptions.remove(subscription)
            for publication in list(subscription.links.values()):
                self.unlink_subscriber(subscription, publication, publication.registration_id)
            return
        assert isinstance(subscription, NetworkSubscriptionLink)
        if subscription in self.network_subscriptions:
            self.network_subscriptions.remove(subscription)
        for image in list(subscription.links.values()):
            self.unlink_subscriber(subscription, image, image.correlation_id)
        endpoint = subscription.endpoint
        if not subscription.is_response:
            self.receiver_proxy.remove_subscription(endpoint, subscription.stream_id, subscription.session_id)
        endpoint.decref()
        self._try_remove_receive_endpoint(endpoint)

    def _try_remove_receive_endpoint(self, endpoint: ReceiveChannelEndpoint) -> None:
        """Close a receive endpoint once no subscription uses it and no image still sends status messages through
        it (aeron_receive_channel_endpoint_try_remove_endpoint); the receiver lets go of such images first."""
        if endpoint.ref_count > 0 or endpoint not in self._open_endpoints or any(
                image.endpoint is endpoint and image.state in (ACTIVE, DRAINING) for image in self.images):
            return
        if self.receive_endpoints.get(endpoint.udp_channel.canonical_form) is endpoint:
            del self.receive_endpoints[endpoint.udp_channel.canonical_form]
        self._open_endpoints.remove(endpoint)
        endpoint.status.set_ordered(ctr.CHANNEL_ENDPOINT_STATUS_CLOSING)
        self.receiver_proxy.remove_endpoint(endpoint)
        self._closing_receive_endpoints.append(endpoint)

    def _link_spy(self, subscription: SpySubscriptionLink, publication: NetworkPublication) -> None:
        position = self.driver_counters.subscriber_position(
            subscription.registration_id, subscription.client_id, subscription.channel, publication.session_id,
            publication.stream_id, publication.registration_id, publication.snd_pos.get_volatile())
        link = SubscriberPosition(subscription, position, self._nano_clock())
        subscription.add_link(publication.registration_id, publication)
        publication.add_subscriber(link)
        self.on_spy_image_available(publication, link)

    # -- images ----------------------------------------------------------------------------------------------------
    def on_create_publication_image(self, endpoint: ReceiveChannelEndpoint, setup: dict, control_address: tuple,
                                    source: tuple) -> None:
        """DriverConductorProxy command from the receiver: a SETUP for a wanted stream."""
        now_ns = self._nano_clock()
        try:
            self._create_image(endpoint, setup, control_address, source, now_ns)
        except Exception as exc:    # noqa: BLE001 - a bad SETUP must not stop the conductor
            self._log_error(ErrorCode.GENERIC_ERROR, f"cannot create image: {type(exc).__name__}: {exc}", exc)
            endpoint.unconfirmed.release(setup.get("unconfirmed_hold"))
            self.receiver_proxy.image_init_failed(endpoint, setup["stream_id"], setup["session_id"], now_ns)

    def _create_image(self, endpoint: ReceiveChannelEndpoint, setup: dict, control_address: tuple, source: tuple,
                      now_ns: int) -> None:
        ctx = self._ctx
        stream_id, session_id = setup["stream_id"], setup["session_id"]
        subscriptions = [s for s in self.network_subscriptions
                         if s.endpoint is endpoint and s.matches_stream(stream_id, session_id)]
        if not subscriptions:
            endpoint.unconfirmed.release(setup.get("unconfirmed_hold"))
            self.receiver_proxy.image_init_failed(endpoint, stream_id, session_id, now_ns)
            return
        term_length, mtu = setup["term_length"], setup["mtu"]
        first = subscriptions[0]
        initial_window = first.receiver_window or ctx.initial_window_length
        self._check_sender_mtu(endpoint, mtu, uri_int(endpoint.udp_channel.uri, "rcv-wnd", parse_size, None)
                               or ctx.initial_window_length, stream_id, session_id)
        correlation_id = self._next_correlation_id()
        untethered_timeouts = (first.window_limit_timeout_ns, first.linger_timeout_ns, first.resting_timeout_ns)
        is_multicast = endpoint.udp_channel.is_multicast or (
            setup["flags"] & 0x40 and first.group in (None, "infer", "true"))
        if first.group == "false":
            is_multicast = False
        channel_sndbuf, channel_rcvbuf = self._channel_buffers(endpoint.udp_channel.uri)
        log = self._log_factory.create_image_log(
            correlation_id, session_id, stream_id, term_length=term_length, mtu_length=mtu,
            initial_term_id=setup["initial_term_id"], term_id=setup["active_term_id"],
            term_offset=setup["term_offset"], tether=first.tether, untethered_timeouts=untethered_timeouts,
            receiver_window_length=initial_window, socket_sndbuf_length=channel_sndbuf,
            socket_rcvbuf_length=channel_rcvbuf, group=1 if is_multicast else 0,
            is_response=1 if first.is_response else 0, rejoin=1 if first.rejoin else 0,
            reliable=1 if first.is_reliable else 0)
        join_position = log.compute_position(setup["active_term_id"], setup["term_offset"])
        channel = endpoint.udp_channel.original
        cc_counters: list[AtomicCounter] = []
        try:
            if first.cc == "cubic":         # allocated first, as the C driver does (golden unicast-loss-rttm)
                cc_counters = self.driver_counters.stream_counters(
                    (("rcv-cc-cubic-rtt", ctr.DRIVER_PER_IMAGE_TYPE_ID),
                     ("rcv-cc-cubic-wnd", ctr.DRIVER_PER_IMAGE_TYPE_ID)),
                    correlation_id, session_id, stream_id, channel, owner_id=-1)
            # labelled with the channel of the subscription that made the image, as the C driver
            rcv_hwm, rcv_pos, rcv_naks_sent = self.driver_counters.stream_counters(
                (("rcv-hwm", ctr.DRIVER_RECEIVER_HWM_TYPE_ID), ("rcv-pos", ctr.DRIVER_RECEIVER_POS_TYPE_ID),
                 ("rcv-naks-sent", ctr.DRIVER_RECEIVER_NAKS_SENT_TYPE_ID)),
                correlation_id, session_id, stream_id, first.channel, owner_id=first.client_id)
        except BaseException:
            for counter in cc_counters:
                self.driver_counters.free(counter)
            self._log_factory.discard(log)
            raise
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
            cc.attach_counters(*cc_counters)
        image = PublicationImage(
            correlation_id=correlation_id, session_id=session_id, stream_id=stream_id, endpoint=endpoint, log=log,
            source_identity=format_address(source), control_address=control_address, join_position=join_position,
            rcv_hwm=rcv_hwm, rcv_pos=rcv_pos, rcv_naks_sent=rcv_naks_sent, congestion_control=cc,
            loss_delay=delay, is_reliable=first.is_reliable, rejoin=first.rejoin,
            liveness_timeout_ns=ctx.image_liveness_timeout_ns, system=self._system, loss_report=self._loss_report,
            channel=channel, now_ns=now_ns, cc_counters=tuple(cc_counters), epoch_clock_ms=self._epoch_clock,
            destination=setup["destination"], untethered_timeouts=UntetheredTimeouts(*untethered_timeouts),
            has_send_response_setup=bool(setup["flags"] & SETUP_SEND_RESPONSE_FLAG),
            unconfirmed_hold=setup.get("unconfirmed_hold"))
        self.images.append(image)
        for subscription in subscriptions:
            self._link_image(subscription, image)
        self.receiver_proxy.add_publication_image(image)

    def _check_sender_mtu(self, endpoint: ReceiveChannelEndpoint, mtu: int, window: int, stream_id: int,
                          session_id: int) -> None:
        """A SETUP's MTU must fit the endpoint's receiver window and receive buffer (aeron_receiver_channel_endpoint_
        validate_sender_mtu_length); else no image, and the error log says why."""
        rcvbuf = self._socket_buffers(endpoint.udp_channel.uri)[0] or self._os_default_buffers()[1]
        if mtu < DATA_HEADER_LENGTH:
            problem = f"mtuLength={mtu} < DATA_HEADER_LENGTH={DATA_HEADER_LENGTH}"
        elif mtu > MAX_UDP_PAYLOAD_LENGTH:
            problem = f"mtuLength={mtu} > MAX_UDP_PAYLOAD_LENGTH={MAX_UDP_PAYLOAD_LENGTH}"
        elif mtu % FRAME_ALIGNMENT:
            problem = f"mtuLength={mtu} must be a multiple of FRAME_ALIGNMENT={FRAME_ALIGNMENT}"
        elif mtu > window:
            problem = f"mtuLength={mtu} > initialWindowLength={window}"
        elif window > rcvbuf or mtu > rcvbuf:
            what, value = ("Max Window length", window) if window > rcvbuf else ("Sender MTU", mtu)
            problem = f"{what} greater than socket SO_RCVBUF, increase 'AERON_RCV_INITIAL_WINDOW_LENGTH' to match " \
                      f"window: value={value}, SO_RCVBUF={rcvbuf}"
        else:
            return
        raise ConfigurationError(f"{problem} stream_id={stream_id} session_id={session_id}")

    def _link_image(self, subscription: NetworkSubscriptionLink, image: PublicationImage) -> None:
        position = self.driver_counters.subscriber_position(
            subscription.registration_id, subscription.client_id, subscription.channel, image.session_id,
            image.stream_id, image.correlation_id, image.subscriber_join_position())
        link = SubscriberPosition(subscription, position, self._nano_clock())
        image.add_subscriber(link)
        subscription.add_link(image.correlation_id, image)
        self.on_image_available(image, link)

    def _delete_image(self, image: PublicationImage) -> None:
        self._log_factory.delete(image)
        # an image deleted unconfirmed held its share of the budget until its log was gone
        image.endpoint.unconfirmed.release(image.unconfirmed_hold)
        for counter in (image.rcv_hwm, image.rcv_pos, image.naks_sent, *image.cc_counters):
            self.driver_counters.free(counter)

    def reject_image(self, image_correlation_id: int, reason: str) -> bool:
        """REJECT_IMAGE of a network image: handed to the receiver (aeron_driver_receiver_proxy_on_invalidate_image).
        False when no network image has that correlation id."""
        for image in self.images:
            if image.correlation_id == image_correlation_id:
                self.receiver_proxy.reject_image(image, reason)
                return True
        return False

    # -- destinations (manual MDC) -----------------------------------------------------------------------------------
    def on_destination(self, command, client: ClientSession | None) -> None:
        """ADD_DESTINATION / REMOVE_DESTINATION on a ``control-mode=manual`` publication of ``client``."""
        publication = client.publication_links.get(command.registration_id) if client is not None else None
        if not isinstance(publication, NetworkPublication):
            raise CommandError(ErrorCode.UNKNOWN_PUBLICATION,
                               f"unknown publication client_id={command.client_id} "
                               f"registration_id={command.registration_id}")
        endpoint = publication.endpoint
        if not endpoint.udp_channel.is_manual_control_mode:
            raise CommandError(ErrorCode.INVALID_CHANNEL,
                               "destinations can only be added to or removed from control-mode=manual channels")
        destination = self._send_destination_udp_channel(command.channel)
        address = destination.remote_data
        now_ns = self._nano_clock()
        if command.msg_type_id == cmd.ADD_DESTINATION:
            self.sender_proxy.add_destination(endpoint, address, command.correlation_id, now_ns)
        else:
            self.sender_proxy.remove_destination(endpoint, address)
        self.client_proxy.on_operation_succeeded(command.correlation_id)

    def _send_destination_udp_channel(self, channel: str) -> UdpChannel:
        """A manual MDC destination's channel, refused as the C driver refuses it (aeron_driver_conductor_validate_
        send_destination_uri): no spy, an endpoint with a port, none of what only the publication may set."""
        if channel.startswith("aeron-spy:"):
            raise CommandError(ErrorCode.INVALID_CHANNEL, f"Aeron spies are invalid as send destinations: {channel}")
        uri = parse_channel(channel)
        endpoint = uri.get("endpoint") if uri.media == "udp" else None
        if endpoint is None:
            raise CommandError(ErrorCode.GENERIC_ERROR, f"incorrect URI format for destination: {channel}")
        if endpoint.rpartition(":")[2] == "0":
            raise CommandError(ErrorCode.GENERIC_ERROR, f"endpoint has port=0 for send destination: channel={channel}")
        return self._destination_udp_channel(channel, uri, is_subscription=False)

    def on_remove_destination_by_id(self, command) -> None:
        """REMOVE_DESTINATION_BY_ID (aeron_driver_conductor_on_remove_receive_send_destination_by_id): the destination
        an ADD_DESTINATION with that correlation id added to the manual MDC publication with that registration id."""
        for publication in self.network_publications:
            if publication.registration_id == command.resource_registration_id:
                endpoint = publication.endpoint
                break
        else:
            raise CommandError(ErrorCode.UNKNOWN_PUBLICATION,
                               f"unknown publication registration_id={command.resource_registration_id}")
        if not endpoint.udp_channel.is_manual_control_mode:
            raise CommandError(ErrorCode.GENERIC_ERROR,
                               f"channel does not allow manual control of destinations: "
                               f"publication_registration_id={command.resource_registration_id}")
        self.sender_proxy.remove_destination_by_id(endpoint, command.destination_registration_id)
        self.client_proxy.on_operation_succeeded(command.correlation_id)

    # -- receive destinations (multi-destination subscriptions) ------------------------------------------------------
    def _open_multi_destination_receive_endpoint(self, udp_channel: UdpChannel, uri: ChannelUri,
                                                 registration_id: int) -> ReceiveChannelEndpoint:
        """A control-mode=manual subscription's endpoint: no socket of its own until destinations are added; its
        status counter names no address (as aeron_receive_channel_endpoint_bind_addr_and_port with none)."""
        status_id = self._counters.allocate(
            f"rcv-channel: {udp_channel.original} "[:ctr.MAX_LABEL_LENGTH], ctr.DRIVER_RECEIVE_CHANNEL_STATUS_TYPE_ID,
            ctr.channel_status_key_encode(udp_channel.original), registration_id=registration_id)
        endpoint = ReceiveChannelEndpoint(udp_channel, None, registration_id, status_id,
                                          AtomicCounter(self._counters_values, status_id), None, self._system,
                                          self.conductor_proxy.create_publication_image,
                                          group_tag=self._receiver_group_tag(uri),
                                          stream_session_limit=self._ctx.stream_session_limit,
                                          on_error=self._log_error, unconfirmed=self._unconfirmed_images())
        self.receive_endpoints[udp_channel.canonical_form] = endpoint
        self._open_endpoints.append(endpoint)
        self._receive_destinations[endpoint] = []
        self.receiver_proxy.add_endpoint(endpoint)
        return endpoint

    def find_multi_destination_subscription(self, command) -> NetworkSubscriptionLink:
        """Port of aeron_driver_conductor_find_mds_subscription: the control-mode=manual subscription a receive
        destination command names."""
        for subscription in self.network_subscriptions:
            if subscription.registration_id == command.registration_id:
                if not subscription.udp_channel.is_manual_control_mode:
                    raise CommandError(ErrorCode.INVALID_CHANNEL, "channel does not allow manual control")
                return subscription
        raise CommandError(ErrorCode.UNKNOWN_SUBSCRIPTION, f"unknown subscription client_id={command.client_id} "
                                                           f"registration_id={command.registration_id}")

    def _destination_udp_channel(self, channel: str, uri: ChannelUri, is_subscription: bool) -> UdpChannel:
        """A send or receive destination's channel, refusing what a destination may not set (as the C driver
        does)."""
        for key in INVALID_DESTINATION_KEYS:
            if uri.has(key):
                raise CommandError(ErrorCode.INVALID_CHANNEL,
                                   f"destinations must not contain the key: {key} channel={channel}")
        if uri.get("control-mode") == CONTROL_MODE_RESPONSE:
            raise CommandError(ErrorCode.INVALID_CHANNEL, "destinations may not specify control-mode=response")
        try:
            return UdpChannel.parse(channel, uri, is_subscription=is_subscription, is_destination=True,
                                    resolver=self.name_resolver)
        except ConfigurationError as exc:
            raise CommandError(ErrorCode.INVALID_CHANNEL, str(exc)) from exc

    def on_receive_destination(self, command) -> None:
        """ADD_RCV_DESTINATION / REMOVE_RCV_DESTINATION of a UDP destination for a control-mode=manual subscription
        (ports of aeron_driver_conductor_on_add/remove_receive_network_destination). The receiver adds or removes
        the socket; a removed one is closed here once the receiver has let go of it."""
        subscription = self.find_multi_destination_subscription(command)
        udp_channel = self._destination_udp_channel(command.channel, parse_channel(command.channel),
                                                    is_subscription=True)
        endpoint = subscription.endpoint
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
        self.client_proxy.on_operation_succeeded(command.correlation_id)

    def add_spy_destination(self, command, uri: ChannelUri, session_id: int | None, tether: bool, rejoin: bool,
                            untethered_timeouts: tuple[int, int, int]) -> SpySubscriptionLink:
        """ADD_RCV_DESTINATION of an ``aeron-spy:`` channel (aeron_driver_conductor_on_add_receive_spy_destination):
        a spy link with the MDS subscription's registration id and stream, so the spied publications, now and
        later, are images of the MDS subscription. Returns the link (the conductor keeps it with the MDS's)."""
        udp_channel = self._udp_channel(command.channel, uri, is_subscription=False)
        mds = self.find_multi_destination_subscription(command)
        spy = SpySubscriptionLink(mds.registration_id, command.client_id, mds.stream_id, command.channel, session_id,
                                  udp_channel, tether=tether, rejoin=rejoin, untethered_timeouts=untethered_timeouts)
        self.spy_subscriptions.append(spy)
        self.client_proxy.on_operation_succeeded(command.correlation_id)
        self._link_spies(spy)
        return spy

    def _open_receive_destination(self, endpoint: ReceiveChannelEndpoint, subscription: NetworkSubscriptionLink,
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
            counter_id = self._counters.allocate(
                f"rcv-local-sockaddr: {endpoint.status_counter_id} {address}",
                ctr.DRIVER_LOCAL_SOCKET_ADDRESS_STATUS_TYPE_ID,
                ctr.local_sockaddr_key_encode(endpoint.status_counter_id, address),
                registration_id=subscription.registration_id)
        except BaseException:
            transport.close()
            raise
        self._counters.set_counter_value(counter_id, ctr.CHANNEL_ENDPOINT_STATUS_ACTIVE)
        return ReceiveDestination(udp_channel, transport, counter_id, now_ns)

    def _free_receive_destination(self, destination: ReceiveDestination) -> None:
        """Close a destination and free its local-sockaddr counter (once: it has left every list)."""
        destination.close()
        counter_id = destination.local_sockaddr_counter_id
        if counter_id is not None:
            self._counters.set_counter_value(counter_id, ctr.CHANNEL_ENDPOINT_STATUS_CLOSING)
            self._counters.free(counter_id)

    def _close_released_receive_destinations(self) -> int:
        work = 0
        for destination in [d for d in self._closing_receive_destinations if d.receiver_released]:
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
    def _response_channel(self, uri: ChannelUri, udp_channel: UdpChannel) -> tuple[int | None, PublicationImage | None]:
        """A network publication's response correlation id and, for a response publication (control-mode=response),
        the image it answers (aeron_driver_conductor_validate_response_subscription and _find_response_publication_
        image): a request publication names an existing response subscription; a response publication names an
        image whose sender asked for a response channel (or is a `prototype`)."""
        correlation_id = uri_response_correlation_id(uri)
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
            if subscription.registration_id != response_correlation_id:
                continue
            endpoint = subscription.endpoint
            stream_id = subscription.stream_id
            if subscription.session_id is None:
                subscription.bind_response_session(response_session_id)
                self.receiver_proxy.add_subscription(endpoint, stream_id, response_session_id)
            self.receiver_proxy.request_setup(endpoint, stream_id, subscription.session_id)

    def on_response_connected(self, response_correlation_id: int) -> None:
        """DriverConductorProxy.response_connected (port of aeron_driver_conductor_on_response_connected): the
        response channel is up, its image stops sending RSP_SETUP."""
        for image in self.images:
            if image.correlation_id == response_correlation_id:
                image.set_response_session_id(None)

    # -- session-id=tag:<n> -------------------------------------------------------------------------------------------
    def publication_session_id(self, uri: ChannelUri) -> tuple[int | None, NetworkPublication | None]:
        """A publication channel's session id: ``session-id=<n>``, or with ``session-id=tag:<n>`` the session id of
        the network publication whose entity tag (``tags=<channel tag>,<n>``) is n, which also lends its term
        length and MTU as defaults (aeron_uri_publication_session_id_param). Returns (session id or None, that
        publication or None)."""
        tag = uri.session_id_tag()
        if tag is None:
            return uri_int(uri, "session-id", int, None), None
        for publication in self.network_publications:
            if publication.state != DONE and ChannelUri.parse(publication.channel).entity_tag == tag:
                return publication.session_id, publication
        # GENERIC_ERROR, as the C driver answers this EINVAL
        raise CommandError(ErrorCode.GENERIC_ERROR, f"session-id=tag:{tag} must reference a network publication")

    # -- shutdown ----------------------------------------------------------------------------------------------------
    def close(self) -> None:
        """Driver shutdown (the agents have stopped): delete every log, close every socket, release every handle
        on the counters so the counters file can be unmapped."""
        for resource in [*self.images, *self.network_publications]:
            self._log_factory.delete(resource)
        self.images = []
        self.network_publications = []
        for endpoint in [*self._open_endpoints, *self._closing_send_endpoints, *self._closing_receive_endpoints]:
            endpoint.close()
        self.send_endpoints.clear()
        self.receive_endpoints.clear()
        self._open_endpoints = []
        self._closing_send_endpoints = []
        self._closing_receive_endpoints = []
        for destination in [*self._closing_receive_destinations,
                            *(d for ds in self._receive_destinations.values() for d in ds)]:
            destination.close()
        self._closing_receive_destinations = []
        self._receive_destinations.clear()
