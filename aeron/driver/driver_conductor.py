# SPDX-License-Identifier: Apache-2.0
"""DriverConductor: the media driver's control agent (port of aeron_driver_conductor.c, IPC subset).

It owns cnc.dat (ready protocol of cnc-and-driver.md §1.4), reads client commands from the to-driver
ring, answers on the to-clients broadcast buffer, keeps the counters, and runs the IPC publications:
publisher limit behind the slowest subscriber, cleaning, unblocking, linger, and client liveness.
One duty cycle is a short sum of named steps; each step works on whole collections in one pass.
"""
from __future__ import annotations

import errno
import os
import random
import socket
import traceback
from collections.abc import Callable

from aeron.common.version import __version__ as _package_version
from aeron.common import command as cmd
from aeron._core import counters as ctr
from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.broadcast import BroadcastTransmitter
from aeron._core.cnc import CNC_FILE, CncFile, semantic_version_compose
from aeron._core.counters import AtomicCounter, CountersManager
from aeron._core.error_log import DistinctErrorLog
from aeron._core.logbuffer import (
    LOG_TYPE_CONCURRENT, LOG_TYPE_EXCLUSIVE, LogBuffers, check_mtu_length, check_term_length,
)
from aeron._core.loss_report import LOSS_REPORT_FILE, LossReport
from aeron._core.ring_buffer import ManyToOneRingBuffer
from aeron._core.term_scanner import LogBufferUnblocker
from aeron.common.agent import Agent
from aeron.driver import untethered
from aeron.driver.untethered import TETHER_ACTIVE, TETHER_LINGER, TETHER_RESTING  # noqa: F401 - re-exported
from aeron.driver.driver_log import DriverLog
from aeron.driver.network_conductor import NetworkConductor, NetworkSubscription
from aeron.driver.network_publication import NetworkPublication
from aeron.driver.proxies import COMMAND_DRAIN_LIMIT as DRIVER_COMMAND_DRAIN_LIMIT
from aeron.common.channel_uri import ChannelUri, parse_duration_ns, parse_size
from aeron.common.errors import (
    AeronError, ConfigurationError, ErrorCode, IllegalStateError, InvalidArgumentError, MalformedMessageError,
)

COMMAND_DRAIN_LIMIT = 10                     # AERON_COMMAND_DRAIN_LIMIT
IPC_SOURCE_IDENTITY = "aeron:ipc"
NULL_CHANNEL_STATUS_ID = -1                  # IPC resources have no channel endpoint status counter
DRIVER_VERSION = _package_version            # shown in the "Errors" and "Aeron software" labels
DRIVER_COMMIT = "aeron-py"
CYCLE_THRESHOLD_NS = 100_000_000             # aeron.driver.conductor.cycle.threshold default
_INT64_MAX = 0x7FFFFFFFFFFFFFFF
MAX_ERROR_TEXT_LENGTH = 1023                 # AERON_ERROR_MAX_TEXT_LENGTH: longest rejection reason

class CommandError(AeronError):
    """A command the driver refuses: answered with ON_ERROR(code, message)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = int(code)
        self.message = message


def _response_text(code: int, detail: str) -> str:
    """ON_ERROR text: the C driver's ``(-code) description`` head and the detail, without the driver source location
    the error log keeps (it names the driver's code, not the client's mistake)."""
    return f"({-int(code)}) {cmd.error_code_description(code)}\n{detail}"


def _wrap32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - 0x1_0000_0000 if value & 0x8000_0000 else value


# Resources ------------------------------------------------------------------------------------------

class ClientSession:
    """Per-client state created on the first ADD_* command of an unknown client id (§6.8.1)."""

    __slots__ = ("client_id", "heartbeat_counter_id", "closed_by_command", "publication_links",
                 "subscriptions", "counters")

    def __init__(self, client_id: int, heartbeat_counter_id: int) -> None:
        self.client_id = client_id
        self.heartbeat_counter_id = heartbeat_counter_id
        self.closed_by_command = False
        # one entry per ADD_*PUBLICATION, keyed by that command's correlation id: a shared publication is
        # removed by the id its adder got (C aeron_publication_link_t), not only by its original id
        self.publication_links: dict[int, IpcPublication] = {}
        self.subscriptions: dict[int, IpcSubscription] = {}     # by registration id
        self.counters: dict[int, int] = {}                      # ADD_COUNTER registration id -> counter id


class IpcSubscription:
    __slots__ = ("registration_id", "client_id", "stream_id", "channel", "session_id", "links", "tether",
                 "rejoin", "window_limit_timeout_ns", "linger_timeout_ns", "resting_timeout_ns", "is_response")

    def __init__(self, registration_id: int, client_id: int, stream_id: int, channel: str,
                 session_id: int | None, tether: bool = True, rejoin: bool = True,
                 window_limit_timeout_ns: int = 0, linger_timeout_ns: int = 0, resting_timeout_ns: int = 0,
                 is_response: bool = False) -> None:
        self.registration_id = registration_id
        self.client_id = client_id
        self.stream_id = stream_id
        self.channel = channel
        self.session_id = session_id
        self.links: dict[int, IpcPublication] = {}              # publication registration id -> publication
        self.tether = tether                                     # False: may fall behind without holding back
        self.rejoin = rejoin                                     # untethered: come back after resting
        self.window_limit_timeout_ns = window_limit_timeout_ns
        self.linger_timeout_ns = linger_timeout_ns
        self.resting_timeout_ns = resting_timeout_ns
        # control-mode=response: no publication matches until a response publication names this subscription
        self.is_response = is_response

    def matches(self, publication: "IpcPublication") -> bool:
        return publication.stream_id == self.stream_id and (
            (self.session_id is None and not self.is_response) or self.session_id == publication.session_id)




class SubscriberPosition:
    """A subscriber's position on a publication (aeron_tetherable_position_t)."""

    __slots__ = ("subscription", "counter_id", "position", "state", "state_change_ns")

    def __init__(self, subscription: IpcSubscription, counter_id: int, position: AtomicCounter, now_ns: int) -> None:
        self.subscription = subscription
        self.counter_id = counter_id
        self.position = position
        self.state = TETHER_ACTIVE          # untethered subscribers move through LINGER and RESTING (§6.13)
        self.state_change_ns = now_ns


ACTIVE, DRAINING, LINGER, DONE = "ACTIVE", "DRAINING", "LINGER", "DONE"


class IpcPublication(DriverLog):
    """Port of aeron_ipc_publication.c: one log shared by publishers and subscribers of a stream."""

    def __init__(self, *, registration_id: int, owner_client_id: int, session_id: int, stream_id: int,
                 channel: str, is_exclusive: bool, log: LogBuffers, log_path: str, pub_pos_id: int,
                 pub_pos: AtomicCounter, pub_lmt_id: int, pub_lmt: AtomicCounter, window_length: int,
                 linger_timeout_ns: int, unblock_timeout_ns: int, now_ns: int,
                 response_correlation_id: int | None = None) -> None:
        self.registration_id = registration_id
        self.response_correlation_id = response_correlation_id     # response channels: see _add_ipc_publication
        self.owner_client_id = owner_client_id
        self.session_id = session_id
        self.stream_id = stream_id
        self.channel = channel
        self.is_exclusive = is_exclusive
        self._init_log(log, 0)
        self.log_path = log_path
        self.mtu_length = log.mtu_length
        self.pub_pos_id = pub_pos_id
        self.pub_pos = pub_pos
        self.pub_lmt_id = pub_lmt_id
        self.pub_lmt = pub_lmt
        self.window_length = window_length
        self.trip_gain = window_length // 8
        self.linger_timeout_ns = linger_timeout_ns
        self.unblock_timeout_ns = unblock_timeout_ns
        self.ref_count = 1
        self.state = ACTIVE
        self.state_change_ns = now_ns
        self.subscribers: dict[int, SubscriberPosition] = {}    # subscription registration id -> position
        start = self.producer_position()
        self.consumer_position = start
        self.last_consumer_position = start
        self.time_of_last_consumer_change_ns = now_ns
        self.clean_position = start
        self.trip_limit = 0

    # -- positions -----------------------------------------------------------------------------------
    def join_position(self) -> int:
        position = self.consumer_position
        for sub in self.subscribers.values():
            if sub.state != TETHER_RESTING:
                position = min(position, sub.position.get_volatile())
        return position

    def is_drained(self, producer_position: int) -> bool:
        return all(sub.position.get_volatile() >= producer_position for sub in self.subscribers.values()
                   if sub.state != TETHER_RESTING)

    def update_pub_pos_and_lmt(self) -> int:
        """Port of aeron_ipc_publication_update_pub_pos_and_lmt: limit = slowest subscriber + window."""
        if self.state != ACTIVE:
            return 0
        work = 0
        self.pub_pos.set_ordered(self.producer_position())
        min_pos = _INT64_MAX
        max_pos = self.consumer_position
        for sub in self.subscribers.values():
            if sub.state == TETHER_RESTING:
                continue                # an untethered subscriber that fell behind holds nothing back
            position = sub.position.get_volatile()
            if position < min_pos:
                min_pos = position
            if position > max_pos:
                max_pos = position
        if min_pos != _INT64_MAX:
            new_limit = min_pos + self.window_length
            if new_limit >= self.trip_limit:
                self.clean_buffer_to(min_pos - self.term_length)
                self.pub_lmt.set_ordered(new_limit)
                self.trip_limit = new_limit + self.trip_gain
                work = 1
            self.consumer_position = max_pos
        elif self.pub_lmt.get_volatile() > self.consumer_position:
            # nobody reads any more: hold the publisher where the last reader stopped (not connected)
            self.pub_lmt.set_ordered(self.consumer_position)
            self.trip_limit = self.consumer_position
            self.clean_buffer_to(self.consumer_position - self.term_length)
            work = 1
        return work

    def check_for_blocked_publisher(self, producer_position: int, now_ns: int) -> bool:
        """Unblock a claim left by a dead publisher after the unblock timeout (§3.6). True if unblocked."""
        consumer_position = self.consumer_position
        positions = [sub.position.get_volatile() for sub in self.subscribers.values() if sub.state != TETHER_RESTING]
        if positions:
            consumer_position = min(positions)
        if consumer_position == self.last_consumer_position and producer_position > consumer_position:
            if now_ns > self.time_of_last_consumer_change_ns + self.unblock_timeout_ns:
                if LogBufferUnblocker.unblock(self.log, consumer_position):
                    self.time_of_last_consumer_change_ns = now_ns
                    return True
        else:
            self.time_of_last_consumer_change_ns = now_ns
            self.last_consumer_position = consumer_position
        return False

    def close(self) -> None:
        self.pub_pos.close()
        self.pub_lmt.close()
        for sub in self.subscribers.values():
            sub.position.close()
        super().close()


# The conductor --------------------------------------------------------------------------------------

class DriverConductor(NetworkConductor, Agent):
    """The driver's conductor agent. ``DriverConductor(ctx, termination_hook=None)`` creates the driver
    files in ``ctx.resolved_dir()`` (which must exist and be empty) and signals cnc.dat ready."""

    role_name = "driver-conductor"

    def __init__(self, ctx, termination_hook: Callable[[], None] | None = None) -> None:
        super().__init__()
        self._ctx = ctx
        self._termination_hook = termination_hook
        self._epoch_clock = ctx.epoch_clock_ms
        self._nano_clock = ctx.nano_clock
        self.aeron_dir = ctx.resolved_dir()
        self._closed = False
        self._views: list[AtomicBuffer] = []
        now_ms = self._epoch_clock()
        now_ns = self._nano_clock()

        values_length = ctx.counters_buffer_length
        self.cnc = CncFile.create(
            os.path.join(self.aeron_dir, CNC_FILE),
            to_driver_buffer_length=ctx.conductor_buffer_length,
            to_clients_buffer_length=ctx.clients_buffer_length,
            counters_metadata_buffer_length=4 * values_length,
            counters_values_buffer_length=values_length,
            error_log_buffer_length=ctx.error_buffer_length,
            client_liveness_timeout_ns=ctx.client_liveness_timeout_ns,
            start_timestamp_ms=now_ms, pid=os.getpid(), file_page_size=ctx.file_page_size,
            signal_ready=False, file_mode=ctx.dir_file_mode)
        try:
            self._init_sections(now_ms, now_ns)
        except BaseException:
            self._release_files()
            raise

    def _view(self, buffer: AtomicBuffer) -> AtomicBuffer:
        self._views.append(buffer)
        return buffer

    def _init_sections(self, now_ms: int, now_ns: int) -> None:
        ctx = self._ctx
        cnc = self.cnc
        self.to_driver = ManyToOneRingBuffer(self._view(cnc.to_driver_buffer()))
        self.to_clients = BroadcastTransmitter(self._view(cnc.to_clients_buffer()))
        self.counters_values = self._view(cnc.counters_values_buffer())
        self.counters = CountersManager(
            self._view(cnc.counters_metadata_buffer()), self.counters_values,
            free_to_reuse_timeout_ms=ctx.counters_free_to_reuse_timeout_ns // 1_000_000,
            clock_ms=self._epoch_clock)
        self.error_log = DistinctErrorLog(self._view(cnc.error_log_buffer()), clock_ms=self._epoch_clock)

        page = ctx.file_page_size
        loss_length = -(-ctx.loss_report_buffer_length // page) * page
        self._loss_report_path = os.path.join(self.aeron_dir, LOSS_REPORT_FILE)
        self.loss_report_buffer = AtomicBuffer.map_file(self._loss_report_path, loss_length, create=True,
                                                       mode=ctx.dir_file_mode)
        self.loss_report = LossReport(self.loss_report_buffer)

        # 46 system counters, ids 0..45, labels and suffixes as the C driver (§5.9)
        mode = ctx.threading_mode.name
        suffixes = {
            ctr.ERRORS: f": version={DRIVER_VERSION} commit={DRIVER_COMMIT}",
            ctr.RESOLUTION_CHANGES: ": driverName=",
            ctr.CONDUCTOR_MAX_CYCLE_TIME: f": {mode}",
            ctr.CONDUCTOR_CYCLE_TIME_THRESHOLD_EXCEEDED: f": threshold=100ms {mode}",
            ctr.SENDER_MAX_CYCLE_TIME: f": {mode}",
            ctr.SENDER_CYCLE_TIME_THRESHOLD_EXCEEDED: f": threshold=100ms {mode}",
            ctr.RECEIVER_MAX_CYCLE_TIME: f": {mode}",
            ctr.RECEIVER_CYCLE_TIME_THRESHOLD_EXCEEDED: f": threshold=100ms {mode}",
            ctr.NAME_RESOLVER_TIME_THRESHOLD_EXCEEDED: ": threshold=5s",
            ctr.AERON_VERSION: f": version={DRIVER_VERSION} commit={DRIVER_COMMIT}",
        }
        self.system: dict[int, AtomicCounter] = {}
        for counter_id, _name, label in ctr.SYSTEM_COUNTERS:
            allocated = self.counters.allocate(
                label + suffixes.get(counter_id, ""), ctr.DRIVER_SYSTEM_COUNTER_TYPE_ID,
                ctr.system_counter_key_encode(counter_id), registration_id=counter_id, owner_id=-1)
            if allocated != counter_id:
                raise IllegalStateError(f"system counter {counter_id} got id {allocated}: counters not empty")
            self.system[counter_id] = AtomicCounter(self.counters_values, counter_id)
        version = _semantic_version(DRIVER_VERSION)
        self.system[ctr.AERON_VERSION].set_ordered(version)
        self.system[ctr.CONTROL_PROTOCOL_VERSION].set_ordered(cmd.CONTROL_PROTOCOL_SEMANTIC_VERSION)
        self.system[ctr.BYTES_CURRENTLY_MAPPED].set_ordered(self.cnc.file_length + loss_length)
        self.errors_counter = self.system[ctr.ERRORS]

        self.clients: dict[int, ClientSession] = {}
        self.publications: list[IpcPublication] = []
        self.subscriptions: list[IpcSubscription] = []
        self._ipc_cool_downs: dict[IpcPublication, int] = {}     # rejected IPC publication -> end of its cool-down
        self._next_session_id = _wrap32(random.getrandbits(32))
        self._timer_interval_ns = ctx.timer_interval_ns
        self._next_timer_ns = now_ns + self._timer_interval_ns
        self._ring_last_consumer_position = self.to_driver.consumer_position()
        self._ring_last_change_ns = now_ns
        self._handlers = self._build_handlers()
        self._os_sndbuf, self._os_rcvbuf = _os_default_socket_buffers()
        self._init_network()

        # ready protocol (§1.4): correlation counter starts at 1, heartbeat fresh, version last
        self.to_driver.next_correlation_id()
        self.to_driver.consumer_heartbeat_time = now_ms
        self.cnc.signal_cnc_ready()

    # -- Agent ---------------------------------------------------------------------------------------
    @property
    def is_closed(self) -> bool:
        return self._closed

    def on_start(self) -> None:
        pass

    def do_work(self) -> int:
        start_ns = self._nano_clock()
        work = 0
        try:
            # no new client command while the sender or receiver is behind on the ones already handed on
            if not (self.sender_proxy.is_applying_backpressure() or self.receiver_proxy.is_applying_backpressure()):
                work += self.to_driver.read(self._on_command, COMMAND_DRAIN_LIMIT)
        except Exception as exc:        # noqa: BLE001 - a corrupt record must not stop the driver
            self.on_agent_error(exc)
        if start_ns >= self._next_timer_ns:
            self._next_timer_ns = start_ns + self._timer_interval_ns
            work += self.on_timer_event(start_ns, self._epoch_clock())
        for publication in self.publications:
            work += publication.update_pub_pos_and_lmt()
        work += self.command_queue.drain(DRIVER_COMMAND_DRAIN_LIMIT)      # DriverConductorProxy commands
        work += self._on_network_publication_timers(start_ns)
        work += self._on_image_timers(start_ns)
        cycle_ns = self._nano_clock() - start_ns
        self.system[ctr.CONDUCTOR_MAX_CYCLE_TIME].propose_max_ordered(cycle_ns)
        if cycle_ns > CYCLE_THRESHOLD_NS:
            self.system[ctr.CONDUCTOR_CYCLE_TIME_THRESHOLD_EXCEEDED].increment_ordered()
        return work

    def on_close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self.to_driver.consumer_heartbeat_time = -1      # clients read "driver has been shut down"
        except Exception:           # noqa: BLE001 - closing anyway
            pass
        for publication in self.publications:
            self._delete_log_files(publication)
        self.publications = []
        try:
            self._close_network()
        finally:
            self._release_files()

    def on_agent_error(self, exc: BaseException) -> None:
        """Error handler for the runner: log it distinctly and count it (counter 15)."""
        self._log_error(ErrorCode.GENERIC_ERROR, "".join(traceback.format_exception(exc)).rstrip(), exc)

    def _release_files(self) -> None:
        for name in ("to_driver", "to_clients"):
            obj = getattr(self, name, None)
            if obj is not None:
                obj.close()
        for counter in getattr(self, "system", {}).values():
            counter.close()
        # drop every holder of a section before closing the sections themselves
        for name in ("counters", "error_log", "errors_counter", "loss_report"):
            setattr(self, name, None)
        for view in self._views:
            view.close()
        self._views = []
        buffer = getattr(self, "loss_report_buffer", None)
        if buffer is not None:
            buffer.close()
        self.cnc.close()

    # -- errors and responses ------------------------------------------------------------------------
    def _log_error(self, code: int, detail: str, exc: BaseException | None = None) -> str:
        """Record ``detail`` in the distinct error log as the C driver formats it, naming the function
        that raised (or the conductor), and count it (system counter 15). Returns the text."""
        function, filename, line = "on_command", "driver_conductor.py", 0
        if exc is not None and exc.__traceback__ is not None:
            frame = traceback.extract_tb(exc.__traceback__)[-1]
            function, filename, line = frame.name, os.path.basename(frame.filename), frame.lineno or 0
        text = cmd.format_driver_error(code, detail, function=function, filename=filename, line=line)
        if self.error_log is not None:
            self.error_log.record(text)
            self.errors_counter.increment_ordered()
        return text

    def _transmit(self, message) -> None:
        self.to_clients.transmit(message.TYPE_ID, message.encode())

    def _on_command(self, msg_type_id: int, buffer: AtomicBuffer, offset: int, length: int) -> None:
        handler = self._handlers.get(msg_type_id)
        if handler is None:
            self._log_error(ErrorCode.UNKNOWN_COMMAND_TYPE_ID, f"command={msg_type_id} unknown")
            return
        try:
            command = cmd.decode_command(msg_type_id, buffer, offset, length)
        except MalformedMessageError as exc:
            # no answer: the client cannot be trusted to be told (reference §6.1); error log only
            self._log_error(exc.error_code, str(exc))
            return
        try:
            handler(command)
        except CommandError as exc:
            self._log_error(exc.code, exc.message, exc)
            self._transmit(cmd.ErrorResponse(command.correlation_id, exc.code, _response_text(exc.code, exc.message)))
        except Exception as exc:        # noqa: BLE001 - a bug or OS error answers GENERIC_ERROR, driver lives on
            code = ErrorCode.STORAGE_SPACE if isinstance(exc, OSError) and exc.errno == errno.ENOSPC \
                else ErrorCode.GENERIC_ERROR
            detail = f"{type(exc).__name__}: {exc}"
            self._log_error(code, detail, exc)
            self._transmit(cmd.ErrorResponse(command.correlation_id, code, _response_text(code, detail)))

    def _build_handlers(self) -> dict:
        return {
            cmd.ADD_PUBLICATION: self.on_add_publication,
            cmd.ADD_EXCLUSIVE_PUBLICATION: self.on_add_exclusive_publication,
            cmd.REMOVE_PUBLICATION: self.on_remove_publication,
            cmd.ADD_SUBSCRIPTION: self.on_add_subscription,
            cmd.REMOVE_SUBSCRIPTION: self.on_remove_subscription,
            cmd.CLIENT_KEEPALIVE: self.on_client_keepalive,
            cmd.ADD_DESTINATION: self.on_destination,
            cmd.REMOVE_DESTINATION: self.on_destination,
            cmd.ADD_COUNTER: self.on_add_counter,
            cmd.REMOVE_COUNTER: self.on_remove_counter,
            cmd.CLIENT_CLOSE: self.on_client_close,
            cmd.ADD_RCV_DESTINATION: self.on_destination,
            cmd.REMOVE_RCV_DESTINATION: self.on_destination,
            cmd.TERMINATE_DRIVER: self.on_terminate_driver,
            cmd.ADD_STATIC_COUNTER: self.on_add_static_counter,
            cmd.REJECT_IMAGE: self.on_reject_image,
            cmd.REMOVE_DESTINATION_BY_ID: self.on_destination,
            cmd.GET_NEXT_AVAILABLE_SESSION_ID: self.on_get_next_available_session_id,
        }

    # -- clients -------------------------------------------------------------------------------------
    def get_or_add_client(self, client_id: int) -> ClientSession:
        client = self.clients.get(client_id)
        if client is None:
            counter_id = self.counters.allocate(
                f"client-heartbeat: id={client_id}", ctr.DRIVER_HEARTBEAT_TYPE_ID,
                ctr.heartbeat_key_encode(client_id), registration_id=client_id, owner_id=client_id)
            self.counters.set_counter_value(counter_id, self._epoch_clock())
            client = ClientSession(client_id, counter_id)
            self.clients[client_id] = client
            self._transmit(cmd.CounterUpdate(cmd.ON_COUNTER_READY, client_id, counter_id))
        return client

    def on_client_keepalive(self, command) -> None:
        client = self.clients.get(command.client_id)
        if client is not None:
            self.counters.set_counter_value(client.heartbeat_counter_id, self._epoch_clock())

    def on_client_close(self, command) -> None:
        client = self.clients.get(command.client_id)
        if client is not None:
            # expire at the next liveness check without ON_CLIENT_TIMEOUT (§6.8.8)
            client.closed_by_command = True
            self.counters.set_counter_value(client.heartbeat_counter_id, 0)

    def _release_client(self, client: ClientSession) -> None:
        del self.clients[client.client_id]
        self._transmit(cmd.CounterUpdate(cmd.ON_UNAVAILABLE_COUNTER, client.client_id, client.heartbeat_counter_id))
        self.counters.free(client.heartbeat_counter_id)
        for registration_id, counter_id in client.counters.items():
            self._transmit(cmd.CounterUpdate(cmd.ON_UNAVAILABLE_COUNTER, registration_id, counter_id))
            self.counters.free(counter_id)
        client.counters.clear()
        for subscription in list(client.subscriptions.values()):
            self._remove_subscription(subscription)
        client.subscriptions.clear()
        now_ns = self._nano_clock()
        for publication in client.publication_links.values():
            if isinstance(publication, NetworkPublication):
                self._decref_network_publication(publication, now_ns)
            else:
                self._decref_publication(publication, now_ns)
        client.publication_links.clear()

    # -- publications --------------------------------------------------------------------------------
    def on_add_publication(self, command) -> None:
        self._add_publication(command, is_exclusive=False)

    def on_add_exclusive_publication(self, command) -> None:
        self._add_publication(command, is_exclusive=True)

    def _add_publication(self, command, is_exclusive: bool) -> None:
        uri = self._parse_channel(command.channel)
        if uri.is_spy:
            raise CommandError(ErrorCode.INVALID_CHANNEL, f"aeron-spy channels are for subscriptions only: "
                                                          f"{command.channel}")
        if uri.media == "udp":
            self._add_network_publication(command, uri, is_exclusive)
        else:
            self._add_ipc_publication(command, is_exclusive)

    def _parse_channel(self, channel: str) -> ChannelUri:
        try:
            return ChannelUri.parse(channel)
        except ConfigurationError as exc:
            raise CommandError(ErrorCode.INVALID_CHANNEL, f"invalid channel {channel!r}: {exc}") from exc

    def _uri_int(self, uri: ChannelUri, key: str, parse: Callable[[str], int], default: int | None) -> int | None:
        text = uri.get(key)
        if text is None:
            return default
        try:
            return parse(text)
        except (ValueError, ConfigurationError) as exc:
            raise CommandError(ErrorCode.INVALID_CHANNEL, f"invalid {key}={text!r}: {exc}") from exc

    def _uri_duration(self, uri: ChannelUri, key: str, default: int) -> int:
        value = self._uri_int(uri, key, parse_duration_ns, default)
        return default if value is None else value

    def _uri_bool(self, uri: ChannelUri, key: str, default: bool) -> bool:
        text = uri.get(key)
        if text is None:
            return default
        value = text.strip().lower()
        if value and "true".startswith(value):
            return True
        if value and "false".startswith(value):
            return False
        raise CommandError(ErrorCode.INVALID_CHANNEL, f"invalid {key}={text!r}: expected true or false")

    def _add_ipc_publication(self, command, is_exclusive: bool) -> None:
        channel = command.channel
        uri = self._parse_channel(channel)
        ctx = self._ctx
        stream_id = command.stream_id
        term_length = self._uri_int(uri, "term-length", parse_size, None)
        mtu_length = self._uri_int(uri, "mtu", parse_size, None)
        session_id, tagged = self._publication_session_id(uri)
        response_correlation_id = self._response_correlation_id(uri)
        linger_ns = self._uri_duration(uri, "linger", ctx.publication_linger_timeout_ns)
        window = self._uri_int(uri, "pub-wnd", parse_size, None)
        start = [self._uri_int(uri, key, int, None) for key in ("init-term-id", "term-id", "term-offset")]
        sparse = self._uri_bool(uri, "sparse", ctx.term_buffer_sparse_file)
        signal_eos = self._uri_bool(uri, "eos", True)
        try:
            if term_length is not None:
                check_term_length(term_length)
            if mtu_length is not None:
                check_mtu_length(mtu_length)
        except ConfigurationError as exc:
            raise CommandError(ErrorCode.INVALID_CHANNEL, f"{channel}: {exc}") from exc
        if any(value is not None for value in start) and not all(value is not None for value in start):
            raise CommandError(ErrorCode.INVALID_CHANNEL,
                               f"{channel}: init-term-id, term-id and term-offset must be given together")
        if window is not None and window <= 0:
            raise CommandError(ErrorCode.INVALID_CHANNEL, f"{channel}: pub-wnd must be > 0")

        publication = None
        if not is_exclusive:
            for candidate in self.publications:
                if (candidate.state == ACTIVE and not candidate.is_exclusive and candidate.stream_id == stream_id
                        and (session_id is None or candidate.session_id == session_id)
                        and candidate.response_correlation_id == response_correlation_id):
                    publication = candidate
                    break
        if publication is not None:
            self._check_joins_existing(publication, term_length, mtu_length)
            if start[0] is not None:
                raise CommandError(ErrorCode.INVALID_CHANNEL,
                                   "existing publication cannot be joined at a given init-term-id/term-id/"
                                   "term-offset")
            publication.ref_count += 1
            client = self.get_or_add_client(command.client_id)
            client.publication_links[command.correlation_id] = publication
            self._transmit(cmd.PublicationReady(
                cmd.ON_PUBLICATION_READY, command.correlation_id, publication.registration_id,
                publication.session_id, stream_id, publication.pub_lmt_id, NULL_CHANNEL_STATUS_ID,
                publication.log_path))
            return

        if session_id is not None:
            for other in self.publications:
                if other.stream_id == stream_id and other.session_id == session_id and other.state != DONE:
                    raise CommandError(ErrorCode.GENERIC_ERROR,
                                       f"existing publication has clashing session id: {session_id}")
        else:
            session_id = self._allocate_session_id(stream_id)
        if tagged is not None:          # the tagged network publication's term length and MTU are the defaults
            term_length, mtu_length = term_length or tagged.term_length, mtu_length or tagged.mtu
        publication = self._create_ipc_publication(
            command, session_id, term_length or ctx.ipc_term_buffer_length, mtu_length or ctx.ipc_mtu_length,
            linger_ns, sparse, is_exclusive, window, start, signal_eos, response_correlation_id)
        self._update_ipc_response_subscription(publication)
        client = self.get_or_add_client(command.client_id)
        client.publication_links[command.correlation_id] = publication
        response_type = cmd.ON_EXCLUSIVE_PUBLICATION_READY if is_exclusive else cmd.ON_PUBLICATION_READY
        # link existing subscribers before answering, so the log is connected and has a limit by the time the
        # client can offer; the image messages still follow the publication's, as in the C driver
        images = [self._link(subscription, publication, transmit=False)
                  for subscription in self.subscriptions if subscription.matches(publication)]
        self._transmit(cmd.PublicationReady(
            response_type, command.correlation_id, publication.registration_id, session_id, stream_id,
            publication.pub_lmt_id, NULL_CHANNEL_STATUS_ID, publication.log_path))
        for message in images:
            self._transmit(message)

    def _update_ipc_response_subscription(self, publication: IpcPublication) -> None:
        """Port of aeron_driver_conductor_find_and_update_ipc_response_subscription: an IPC response publication
        names its request publication (response-correlation-id = that publication's registration id, its image's
        correlation id); the request publication names the response subscription, which now wants this session."""
        correlation_id = publication.response_correlation_id
        if correlation_id is None:
            return
        for request in self.publications:
            if request.registration_id == correlation_id:
                for subscription in self.subscriptions:
                    if subscription.registration_id == request.response_correlation_id:
                        subscription.session_id = publication.session_id
                        break
                break

    @staticmethod
    def _check_joins_existing(publication: DriverLog, term_length: int | None, mtu_length: int | None) -> None:
        """A second ADD_PUBLICATION shares the log only if it asks for nothing the log does not have."""
        if term_length is not None and term_length != publication.term_length:
            raise CommandError(ErrorCode.INVALID_CHANNEL, f"existing publication has different term length: "
                                                          f"existing={publication.term_length} requested={term_length}")
        mtu = publication.log.mtu_length
        if mtu_length is not None and mtu_length != mtu:
            raise CommandError(ErrorCode.INVALID_CHANNEL, f"existing publication has different MTU length: "
                                                          f"existing={mtu} requested={mtu_length}")

    def _allocate_session_id(self, stream_id: int) -> int:
        low = self._ctx.publication_reserved_session_id_low
        high = self._ctx.publication_reserved_session_id_high
        in_use = {p.session_id for p in self.publications if p.stream_id == stream_id and p.state != DONE}
        while True:
            session_id = self._next_session_id
            self._next_session_id = _wrap32(session_id + 1)
            if low <= session_id <= high or session_id in in_use:
                continue
            return session_id

    def _create_ipc_publication(self, command, session_id, term_length, mtu_length, linger_ns, sparse,
                                is_exclusive, window, start, signal_eos,
                                response_correlation_id: int | None = None) -> IpcPublication:
        ctx = self._ctx
        registration_id = command.correlation_id
        stream_id = command.stream_id
        channel = command.channel
        # effective window: min(configured, term length / 2), the URI's pub-wnd first (aeron_producer_window_length)
        configured = window if window is not None else ctx.ipc_publication_term_window_length
        window = min(configured, term_length // 2) if configured > 0 else term_length // 2
        init_term_id, term_id, term_offset = start
        at_position = init_term_id is not None
        path = os.path.join(self.aeron_dir, "publications", f"{registration_id}.logbuffer")
        try:
            log = LogBuffers.create(
                path, term_length=term_length, file_mode=ctx.dir_file_mode,
                initial_term_id=init_term_id if at_position else _wrap32(random.getrandbits(32)),
                session_id=session_id, stream_id=stream_id, mtu_length=mtu_length, page_size=ctx.file_page_size,
                correlation_id=registration_id,
                log_type=LOG_TYPE_EXCLUSIVE if is_exclusive else LOG_TYPE_CONCURRENT,
                term_id=term_id if at_position else 0, term_offset=term_offset if at_position else 0,
                start_at_position=at_position, sparse=sparse, publication_window_length=window,
                linger_timeout_ns=linger_ns, signal_eos=1 if signal_eos else 0,
                untethered_window_limit_timeout_ns=ctx.untethered_window_limit_timeout_ns,
                untethered_resting_timeout_ns=ctx.untethered_resting_timeout_ns,
                os_default_socket_sndbuf_length=self._os_sndbuf, os_default_socket_rcvbuf_length=self._os_rcvbuf,
                response_correlation_id=-1 if response_correlation_id is None else response_correlation_id)
        except InvalidArgumentError as exc:
            raise CommandError(ErrorCode.INVALID_CHANNEL, f"{channel}: {exc}") from exc
        counter_ids = []
        try:
            key = ctr.stream_counter_key_encode(registration_id, session_id, stream_id, channel)
            name = "pub-pos (exclusive)" if is_exclusive else "pub-pos (concurrent)"
            for label_name, type_id in ((name, ctr.DRIVER_PUBLISHER_POS_TYPE_ID),
                                        ("pub-lmt", ctr.DRIVER_PUBLISHER_LIMIT_TYPE_ID)):
                counter_ids.append(self.counters.allocate(
                    ctr.stream_counter_label(label_name, registration_id, session_id, stream_id, channel),
                    type_id, key, registration_id=registration_id, owner_id=command.client_id))
        except BaseException:
            for counter_id in counter_ids:
                self.counters.free(counter_id)
            log.close()
            os.unlink(path)
            raise
        pub_pos_id, pub_lmt_id = counter_ids
        publication = IpcPublication(
            registration_id=registration_id, owner_client_id=command.client_id, session_id=session_id,
            stream_id=stream_id, channel=channel, is_exclusive=is_exclusive, log=log, log_path=path,
            pub_pos_id=pub_pos_id, pub_pos=AtomicCounter(self.counters_values, pub_pos_id),
            pub_lmt_id=pub_lmt_id, pub_lmt=AtomicCounter(self.counters_values, pub_lmt_id), window_length=window,
            linger_timeout_ns=linger_ns, unblock_timeout_ns=ctx.publication_unblock_timeout_ns,
            now_ns=self._nano_clock(), response_correlation_id=response_correlation_id)
        publication.pub_pos.set_ordered(publication.consumer_position)
        publication.pub_lmt.set_ordered(publication.consumer_position)
        self.publications.append(publication)
        self.system[ctr.BYTES_CURRENTLY_MAPPED].get_and_add(log.log_length)
        return publication

    def on_remove_publication(self, command) -> None:
        client = self.clients.get(command.client_id)
        registration_id = command.registration_id
        publication = client.publication_links.pop(registration_id, None) if client is not None else None
        if publication is None:
            raise CommandError(ErrorCode.UNKNOWN_PUBLICATION, f"unknown publication client_id={command.client_id} "
                                                              f"registration_id={registration_id}")
        self._transmit(cmd.OperationSucceeded(command.correlation_id))
        now_ns = self._nano_clock()
        if isinstance(publication, NetworkPublication):
            self._decref_network_publication(publication, now_ns, revoke=bool(command.revoke))
            return
        self._decref_publication(publication, now_ns)
        if command.revoke and publication.state in (ACTIVE, DRAINING):
            # revoked: the stream ends where it is, subscribers see it go at once (§6.12)
            producer_position = publication.producer_position()
            publication.log.is_publication_revoked = True
            publication.log.end_of_stream_position = producer_position
            publication.pub_lmt.set_ordered(producer_position)
            self._begin_linger(publication, now_ns)
            self.system[ctr.PUBLICATIONS_REVOKED].increment_ordered()

    def _decref_publication(self, publication: IpcPublication, now_ns: int) -> None:
        publication.ref_count -= 1
        if publication.ref_count == 0 and publication.state == ACTIVE:
            producer_position = publication.producer_position()
            publication.pub_pos.set_ordered(producer_position)
            publication.pub_lmt.set_ordered(producer_position)
            publication.log.end_of_stream_position = producer_position
            publication.state = DRAINING
            publication.state_change_ns = now_ns

    def _link(self, subscription: IpcSubscription, publication: IpcPublication, transmit: bool = True) -> object:
        """Link a subscriber (sub-pos counter, connected log, limit). Returns the ON_AVAILABLE_IMAGE message,
        transmitted here unless ``transmit`` is False (the caller sends it after its own response)."""
        join_position = publication.join_position()
        counter_id = self.counters.allocate(
            ctr.stream_counter_label("sub-pos", subscription.registration_id, publication.session_id,
                                     publication.stream_id, subscription.channel, f" @{join_position}"),
            ctr.DRIVER_SUBSCRIBER_POSITION_TYPE_ID,
            ctr.stream_counter_key_encode(subscription.registration_id, publication.session_id,
                                          publication.stream_id, subscription.channel),
            registration_id=subscription.registration_id, owner_id=subscription.client_id,
            reference_id=publication.registration_id)
        position = AtomicCounter(self.counters_values, counter_id)
        position.set_ordered(join_position)
        publication.subscribers[subscription.registration_id] = SubscriberPosition(
            subscription, counter_id, position, self._nano_clock())
        subscription.links[publication.registration_id] = publication
        publication.log.is_connected = True
        # the limit moves now, not at the next duty cycle: a client that offers the moment it learns of the
        # publication must not see a connected log with no room (BACK_PRESSURED)
        publication.update_pub_pos_and_lmt()
        message = cmd.ImageReady(publication.registration_id, publication.session_id, publication.stream_id,
                                 subscription.registration_id, counter_id, publication.log_path, IPC_SOURCE_IDENTITY)
        if transmit:
            self._transmit(message)
        return message

    def _unlink(self, subscription: IpcSubscription, publication: IpcPublication) -> None:
        link = publication.subscribers.pop(subscription.registration_id, None)
        subscription.links.pop(publication.registration_id, None)
        if link is not None:
            link.position.close()
            self.counters.free(link.counter_id)
        if not publication.subscribers:
            publication.log.is_connected = False

    # -- subscriptions -------------------------------------------------------------------------------
    def on_add_subscription(self, command) -> None:
        channel = command.channel
        uri = self._parse_channel(channel)
        if uri.media == "udp":
            self._add_network_subscription(command, uri)
            return
        session_id = self._uri_int(uri, "session-id", int, None)
        window_limit_ns, linger_ns, resting_ns = self._untethered_timeouts(uri)
        subscription = IpcSubscription(
            command.correlation_id, command.client_id, command.stream_id, channel, session_id,
            tether=self._uri_bool(uri, "tether", True), rejoin=self._uri_bool(uri, "rejoin", True),
            window_limit_timeout_ns=window_limit_ns, linger_timeout_ns=linger_ns, resting_timeout_ns=resting_ns,
            is_response=uri.get("control-mode") == "response")
        client = self.get_or_add_client(command.client_id)
        self.subscriptions.append(subscription)
        client.subscriptions[subscription.registration_id] = subscription
        self._transmit(cmd.SubscriptionReady(command.correlation_id, NULL_CHANNEL_STATUS_ID))
        for publication in self.publications:
            if publication.state == ACTIVE and subscription.matches(publication) and \
                    publication not in self._ipc_cool_downs:
                self._link(subscription, publication)

    def _untethered_timeouts(self, uri: ChannelUri) -> tuple[int, int, int]:
        """A subscription's untethered window limit, linger and resting timeouts: its channel's, else the driver's
        (the linger timeout defaults to the window limit timeout, as in Aeron)."""
        ctx = self._ctx
        window_limit_ns = self._uri_duration(uri, "untethered-window-limit-timeout",
                                             ctx.untethered_window_limit_timeout_ns)
        return (window_limit_ns, self._uri_duration(uri, "untethered-linger-timeout", window_limit_ns),
                self._uri_duration(uri, "untethered-resting-timeout", ctx.untethered_resting_timeout_ns))

    def on_remove_subscription(self, command) -> None:
        client = self.clients.get(command.client_id)
        subscription = client.subscriptions.pop(command.registration_id, None) if client is not None else None
        if subscription is None:
            raise CommandError(ErrorCode.UNKNOWN_SUBSCRIPTION,
                               f"unknown subscription client_id={command.client_id} "
                               f"registration_id={command.registration_id}")
        self._remove_subscription(subscription)
        self._transmit(cmd.OperationSucceeded(command.correlation_id))

    def _remove_subscription(self, subscription: IpcSubscription) -> None:
        if isinstance(subscription, NetworkSubscription):
            self._remove_network_subscription(subscription)
            return
        for publication in list(subscription.links.values()):
            self._unlink(subscription, publication)
        if subscription in self.subscriptions:
            self.subscriptions.remove(subscription)

    # -- counters ------------------------------------------------------------------------------------
    def on_add_counter(self, command) -> None:
        client = self.get_or_add_client(command.client_id)
        counter_id = self._allocate_counter(command.label, command.type_id, command.key,
                                            registration_id=command.correlation_id, owner_id=command.client_id)
        client.counters[command.correlation_id] = counter_id
        self._transmit(cmd.CounterUpdate(cmd.ON_COUNTER_READY, command.correlation_id, counter_id))

    def _allocate_counter(self, label, type_id, key, registration_id, owner_id) -> int:
        if isinstance(label, str):
            label = label.encode("utf-8", "replace")
        try:
            return self.counters.allocate(bytes(label)[:ctr.MAX_LABEL_LENGTH], type_id,
                                          bytes(key)[:ctr.MAX_KEY_LENGTH], registration_id=registration_id,
                                          owner_id=owner_id)
        except AeronError as exc:
            raise CommandError(ErrorCode.GENERIC_ERROR, f"unable to allocate counter: {exc}") from exc

    def on_remove_counter(self, command) -> None:
        client = self.clients.get(command.client_id)
        counter_id = client.counters.pop(command.registration_id, None) if client is not None else None
        if counter_id is None:
            raise CommandError(ErrorCode.UNKNOWN_COUNTER,
                               f"unknown counter client_id={command.client_id} "
                               f"registration_id={command.registration_id}")
        self._transmit(cmd.OperationSucceeded(command.correlation_id))
        self._transmit(cmd.CounterUpdate(cmd.ON_UNAVAILABLE_COUNTER, command.registration_id, counter_id))
        self.counters.free(counter_id)

    def on_add_static_counter(self, command) -> None:
        self.get_or_add_client(command.client_id)
        existing = self.counters.find_by_type_id_and_registration_id(command.type_id, command.registration_id)
        if existing != ctr.NULL_COUNTER_ID:
            if self.counters.get_counter_owner_id(existing) != -1:
                raise CommandError(ErrorCode.GENERIC_ERROR,
                                   f"cannot add static counter, because a non-static counter exists "
                                   f"(counterId={existing}) for typeId={command.type_id} and "
                                   f"registrationId={command.registration_id}")
            counter_id = existing
        else:
            counter_id = self._allocate_counter(command.label, command.type_id, command.key,
                                                registration_id=command.registration_id, owner_id=-1)
        self._transmit(cmd.StaticCounterReply(command.correlation_id, counter_id))

    # -- the rest of §6.2 ----------------------------------------------------------------------------
    def on_destination(self, command) -> None:
        if command.msg_type_id in (cmd.ADD_DESTINATION, cmd.REMOVE_DESTINATION):
            self._on_network_destination(command)
            return
        if command.msg_type_id in (cmd.ADD_RCV_DESTINATION, cmd.REMOVE_RCV_DESTINATION):
            self._on_receive_destination(command)
            return
        self._on_remove_destination_by_id(command)

    def on_reject_image(self, command) -> None:
        self._reject_image(command)

    def on_terminate_driver(self, command) -> None:
        token = bytes(command.token)
        validator = self._ctx.termination_validator
        if validator is not None:
            accepted = bool(validator(token))
        else:
            accepted = self._ctx.driver_termination_validator == "allow"
        if accepted and self._termination_hook is not None:
            self._termination_hook()

    def on_get_next_available_session_id(self, command) -> None:
        self.get_or_add_client(command.client_id)
        session_id = self._allocate_session_id(command.stream_id)
        self._transmit(cmd.NextSessionIdReply(command.correlation_id, session_id))

    # -- timers --------------------------------------------------------------------------------------
    def on_timer_event(self, now_ns: int, now_ms: int) -> int:
        """Housekeeping every timer interval: heartbeat, client liveness, publications, stuck commands."""
        self.to_driver.consumer_heartbeat_time = now_ms
        work = self._check_clients(now_ms)
        work += self._on_publication_timers(now_ns)
        work += self._check_for_blocked_commands(now_ns)
        if self._ipc_cool_downs:
            work += self._end_ipc_cool_downs(now_ns)
        work += self._check_untethered_network_subscriptions(now_ns)
        return work

    def _check_clients(self, now_ms: int) -> int:
        liveness_ms = self._ctx.client_liveness_timeout_ns // 1_000_000
        work = 0
        for client in list(self.clients.values()):
            heartbeat_ms = self.counters.get_counter_value(client.heartbeat_counter_id)
            if now_ms > heartbeat_ms + liveness_ms:
                if not client.closed_by_command:
                    self._transmit(cmd.ClientTimeout(client.client_id))
                    self.system[ctr.CLIENT_TIMEOUTS].increment_ordered()
                self._release_client(client)
                work += 1
        return work

    def _on_publication_timers(self, now_ns: int) -> int:
        work = 0
        for publication in list(self.publications):
            state = publication.state
            if state == ACTIVE:
                work += self._check_untethered_subscriptions(publication, now_ns)
                if publication.check_for_blocked_publisher(publication.producer_position(), now_ns):
                    self.system[ctr.UNBLOCKED_PUBLICATIONS].increment_ordered()
            elif state == DRAINING:
                producer_position = publication.producer_position()
                publication.pub_pos.set_ordered(producer_position)
                if publication.is_drained(producer_position):
                    self._begin_linger(publication, now_ns)
                    work += 1
                elif publication.check_for_blocked_publisher(producer_position, now_ns):
                    self.system[ctr.UNBLOCKED_PUBLICATIONS].increment_ordered()
            elif state == LINGER and now_ns - publication.state_change_ns > publication.linger_timeout_ns:
                publication.state = DONE
                self.publications.remove(publication)
                self._delete_log_files(publication)
                self.counters.free(publication.pub_pos_id)
                self.counters.free(publication.pub_lmt_id)
                work += 1
        return work

    def _check_untethered_subscriptions(self, publication: IpcPublication, now_ns: int) -> int:
        """Port of aeron_ipc_publication_check_untethered_subscriptions (§6.13): measured against the consumers'
        position; a rejoining subscriber resumes there, as a new image on the same counter."""
        def rejoin(link: SubscriberPosition) -> None:
            link.position.set_ordered(publication.consumer_position)
            self._transmit(cmd.ImageReady(
                publication.registration_id, publication.session_id, publication.stream_id,
                link.subscription.registration_id, link.counter_id, publication.log_path, IPC_SOURCE_IDENTITY))
        return untethered.check_untethered_subscriptions(
            publication.subscribers.values(),
            untethered.untethered_window_limit(publication.consumer_position, publication.window_length), now_ns,
            lambda link: self._transmit(cmd.ImageUnavailable(publication.registration_id,
                                                             link.subscription.registration_id, publication.stream_id,
                                                             link.subscription.channel)),
            lambda link: self._unlink(link.subscription, publication), rejoin)

    def _begin_linger(self, publication: IpcPublication, now_ns: int) -> None:
        publication.state = LINGER
        publication.state_change_ns = now_ns
        for link in list(publication.subscribers.values()):
            subscription = link.subscription
            if link.state == TETHER_ACTIVE:         # untethered ones in LINGER/RESTING were told already
                self._transmit(cmd.ImageUnavailable(publication.registration_id, subscription.registration_id,
                                                    publication.stream_id, subscription.channel))
            self._unlink(subscription, publication)

    # -- image rejection (REJECT_IMAGE) --------------------------------------------------------------------
    def _reject_image(self, command) -> None:
        """Port of aeron_driver_conductor_on_invalidate_image: a network image (by its correlation id) stops
        taking data and answers its senders with error frames; an IPC image (by its publication's registration
        id) rejects the publication's subscribers for a cool-down."""
        reason = command.reason
        if len(reason.encode("utf-8", "replace")) > MAX_ERROR_TEXT_LENGTH:
            raise CommandError(ErrorCode.GENERIC_ERROR, "Invalidation reason_text must be 1023 bytes or less")
        image_id = command.image_correlation_id
        if not self._reject_network_image(image_id, reason):
            for publication in self.publications:
                if publication.registration_id == image_id:
                    self._reject_ipc_publication(publication, reason, self._nano_clock())
                    break
            else:
                raise CommandError(ErrorCode.GENERIC_ERROR, f"Unable to resolve image for correlationId={image_id}")
        self.system[ctr.IMAGES_REJECTED].increment_ordered()
        self._transmit(cmd.OperationSucceeded(command.correlation_id))

    def _reject_ipc_publication(self, publication: IpcPublication, reason: str, now_ns: int) -> None:
        """Port of aeron_ipc_publication_reject: the publisher hears of it (ON_PUBLICATION_ERROR from the loopback
        address), every subscriber loses its image at once and none is linked until the image liveness timeout
        has passed without another rejection; then the subscribers rejoin (same image correlation id)."""
        self.on_publication_error(cmd.PublicationErrorFrame(
            publication.registration_id, -1, publication.session_id, publication.stream_id, -1, -1,
            cmd.ADDRESS_TYPE_IPV4, 0, bytes((127, 0, 0, 1)), ErrorCode.IMAGE_REJECTED, reason))
        if publication not in self._ipc_cool_downs:
            publication.update_pub_pos_and_lmt()    # the subscribers rejoin where they are now, not a cycle ago
            for link in list(publication.subscribers.values()):
                subscription = link.subscription
                if link.state == TETHER_ACTIVE:     # untethered ones in LINGER/RESTING were told already
                    self._transmit(cmd.ImageUnavailable(publication.registration_id, subscription.registration_id,
                                                        publication.stream_id, subscription.channel))
                self._unlink(subscription, publication)
            publication.log.is_connected = False
        self._ipc_cool_downs[publication] = now_ns + self._ctx.image_liveness_timeout_ns

    def _end_ipc_cool_downs(self, now_ns: int) -> int:
        """Rejected IPC publications whose cool-down is over take their subscribers back."""
        work = 0
        for publication, expiry_ns in list(self._ipc_cool_downs.items()):
            if publication.state != ACTIVE:
                del self._ipc_cool_downs[publication]
            elif now_ns > expiry_ns:
                del self._ipc_cool_downs[publication]
                for subscription in self.subscriptions:
                    if subscription.matches(publication) and subscription.registration_id not in publication.subscribers:
                        self._link(subscription, publication)
                work += 1
        return work

    def _delete_log_files(self, resource: DriverLog) -> None:
        """Close a log the driver owns (publication or image), delete its file, stop counting its bytes."""
        length = resource.log.log_length
        try:
            resource.close()
        finally:
            try:
                os.unlink(resource.log_path)            # type: ignore[attr-defined]
            except FileNotFoundError:
                pass
            self.system[ctr.BYTES_CURRENTLY_MAPPED].get_and_add(-length)

    def _check_for_blocked_commands(self, now_ns: int) -> int:
        """Unblock a client that died between claiming and committing a ring record (§3.7)."""
        ring = self.to_driver
        consumer_position = ring.consumer_position()
        if consumer_position == self._ring_last_consumer_position and ring.producer_position() > consumer_position:
            if now_ns > self._ring_last_change_ns + self._ctx.client_liveness_timeout_ns:
                if ring.unblock():
                    self.system[ctr.UNBLOCKED_COMMANDS].increment_ordered()
                    self._ring_last_change_ns = now_ns
                    return 1
        else:
            self._ring_last_consumer_position = consumer_position
            self._ring_last_change_ns = now_ns
        return 0


def _os_default_socket_buffers() -> tuple[int, int]:
    """The OS default SO_SNDBUF / SO_RCVBUF, which the C driver probes and writes into every log's metadata."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            return (probe.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF),
                    probe.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF))
    except OSError:
        return 0, 0


def _semantic_version(text: str) -> int:
    parts = []
    for piece in text.split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit()) or "0"
        parts.append(min(int(digits), 255))
    while len(parts) < 3:
        parts.append(0)
    return semantic_version_compose(*parts)
