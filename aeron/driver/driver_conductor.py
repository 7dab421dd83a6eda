# SPDX-License-Identifier: Apache-2.0
"""DriverConductor: the media driver's control agent (port of aeron_driver_conductor.c).

It owns cnc.dat (made ready as aeron_driver_init does), reads client commands from the to-driver ring and
answers them through the ClientProxy, keeps the counters, and holds the driver's resources: client sessions
(client_session.py), IPC publications and subscriptions (ipc_publication.py, subscription_link.py) and, in its
``network`` collaborator (network_resources.py), the UDP endpoints, network publications, spies and images.

A duty cycle drains commands and moves every publication's limit behind its slowest consumer; once per timer
interval (``aeron.timer.interval``) every resource runs its own ``on_time_event`` (client liveness, lifecycles,
untethered subscribers, unblocking) and those at their end of life are deleted.
"""
from __future__ import annotations

import errno
import os
import random
import traceback
from collections.abc import Callable
from typing import Any

from aeron._core import counters as ctr
from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.broadcast import BroadcastTransmitter
from aeron._core.cnc import CNC_FILE, CncFile, semantic_version_compose
from aeron._core.counters import AtomicCounter, CountersManager
from aeron._core.error_log import DistinctErrorLog
from aeron._core.logbuffer import check_mtu_length, check_term_length
from aeron._core.loss_report import LOSS_REPORT_FILE, LossReport
from aeron._core.ring_buffer import ManyToOneRingBuffer
from aeron.common import command as cmd
from aeron.common.agent import Agent
from aeron.common.channel_uri import parse_size
from aeron.common.errors import AeronError, ConfigurationError, ErrorCode, IllegalStateError, MalformedMessageError
from aeron.common.version import __version__ as _package_version
from aeron.driver.client_proxy import ClientProxy
from aeron.driver.client_session import ClientSession
from aeron.driver.driver_common import ACTIVE, DONE, DRAINING, IPC_CHANNEL, CommandError, check_managed_resources, wrap32
from aeron.driver.duty_cycle_stall_tracker import DutyCycleStallTracker
from aeron.driver.driver_counters import DriverCounters
from aeron.driver.driver_log import LogFactory
from aeron.driver.driver_uri import (
    parse_channel, uri_bool, uri_duration, uri_int, uri_response_correlation_id, uri_untethered_timeouts,
)
from aeron.driver.ipc_publication import IpcPublication
from aeron.driver.name_resolver import name_resolver_for
from aeron.driver.network_publication import NetworkPublication
from aeron.driver.network_resources import NetworkResources
from aeron.driver.proxies import COMMAND_DRAIN_LIMIT as DRIVER_COMMAND_DRAIN_LIMIT
from aeron.driver.proxies import CommandQueue
from aeron.driver.re_resolution import ReResolution
from aeron.driver.subscription_link import IpcSubscriptionLink, SubscriberPosition, SubscriptionLink

COMMAND_DRAIN_LIMIT = 10                     # AERON_COMMAND_DRAIN_LIMIT
NULL_CHANNEL_STATUS_ID = -1                  # IPC resources have no channel endpoint status counter
DRIVER_VERSION = _package_version            # shown in the "Errors" and "Aeron software" labels
DRIVER_COMMIT = "aeron-py"
MAX_ERROR_TEXT_LENGTH = 1023                 # AERON_ERROR_MAX_TEXT_LENGTH: longest rejection reason
RESOLVER_CHECK_NS = 1_000_000                # how often the conductor lets the name resolver look at its clock
def _response_text(code: int, detail: str) -> str:
    """ON_ERROR text: the C driver's ``(-code) description`` head and the detail, without the driver source location
    the error log keeps (it names the driver's code, not the client's mistake)."""
    return f"({-int(code)}) {cmd.error_code_description(code)}\n{detail}"


class DriverConductor(Agent):
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
        self.client_proxy = ClientProxy(self.to_clients)
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

        # 46 system counters, ids 0..45, labels and suffixes as the C driver (aeron_system_counters.c)
        mode = ctx.threading_mode.name
        suffixes = {
            ctr.ERRORS: f": version={DRIVER_VERSION} commit={DRIVER_COMMIT}",
            ctr.RESOLUTION_CHANGES: f": driverName={ctx.resolver_name}",
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
        self._duty_cycle_tracker = DutyCycleStallTracker(self.system[ctr.CONDUCTOR_MAX_CYCLE_TIME],
                                                         self.system[ctr.CONDUCTOR_CYCLE_TIME_THRESHOLD_EXCEEDED])
        self.driver_counters = DriverCounters(self.counters, self.counters_values)
        self.log_factory = LogFactory(self.aeron_dir, ctx, self.system[ctr.BYTES_CURRENTLY_MAPPED])

        self.clients: dict[int, ClientSession] = {}
        self.clients_changes = 0        # bumped as clients come and go (driver_wakeup reviews who signals)
        self.ipc_publications: list[IpcPublication] = []
        self.ipc_subscriptions: list[IpcSubscriptionLink] = []
        # a multi-destination subscription's IPC and spy destinations: its registration id -> their links
        self._mds_links: dict[int, list[SubscriptionLink]] = {}
        self._next_session_id = wrap32(random.getrandbits(32))
        self._timer_interval_ns = ctx.timer_interval_ns
        self._next_timer_ns = now_ns + self._timer_interval_ns
        self.activity = 0
        self._ring_last_consumer_position = self.to_driver.consumer_position()
        self._ring_last_change_ns = now_ns
        self._handlers = self._build_handlers()
        # resolves channels' endpoint and control names; the driver resolver also gossips with other drivers
        self.name_resolver = name_resolver_for(ctx, self.counters, self.system, self._log_resolver_error)
        self.command_queue = CommandQueue(producers=2)             # sender and receiver -> conductor
        self._commands = self.command_queue.records               # looked at every duty cycle
        self.network = NetworkResources(
            ctx, command_queue=self.command_queue, counters=self.counters,
            driver_counters=self.driver_counters, system=self.system, client_proxy=self.client_proxy,
            log_factory=self.log_factory, loss_report=self.loss_report, get_or_add_client=self.get_or_add_client,
            next_session_id=self._allocate_session_id, next_correlation_id=self.to_driver.next_correlation_id,
            log_error=self._log_error, on_publication_error=self.on_publication_error)
        self.network.name_resolver = self.name_resolver
        self.re_resolution = ReResolution(self.network, self.name_resolver, self.system,
                                          ctx.re_resolution_check_interval_ns, self._log_resolver_error)
        self._next_resolver_work_ns = 0
        self.sender = self.network.sender                           # the agents MediaDriver runs
        self.receiver = self.network.receiver

        # ready, in aeron_driver_init's order: correlation counter starts at 1, heartbeat fresh, version last
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
            if not self.network.is_applying_backpressure():
                work += self.to_driver.read(self._on_command, COMMAND_DRAIN_LIMIT)
        except Exception as exc:        # noqa: BLE001 - a corrupt record must not stop the driver
            self.on_agent_error(exc)
        timers = 0
        if start_ns >= self._next_timer_ns:
            self._next_timer_ns = start_ns + self._timer_interval_ns
            timers = self.on_timer_event(start_ns, self._epoch_clock())
        for publication in self.ipc_publications:
            work += publication.update_pub_pos_and_lmt()
        if self._commands:                                                 # DriverConductorProxy commands
            work += self.command_queue.drain(DRIVER_COMMAND_DRAIN_LIMIT)
        work += self.network.do_work(start_ns)
        if start_ns >= self._next_resolver_work_ns:        # the resolver keeps its own 10 ms duty cycle
            self._next_resolver_work_ns = start_ns + RESOLVER_CHECK_NS
            # gossip and re-resolution run on their intervals: timer work, which must not keep the driver spinning
            timers += self.name_resolver.do_work(self._epoch_clock())
            timers += self.re_resolution.do_work(start_ns)
        self.activity = work            # commands, and limits moved by readers: not the timers (driver_wakeup)
        work += timers
        duration_ns = self._nano_clock() - start_ns
        if duration_ns > self._duty_cycle_tracker.report_above_ns:
            self._duty_cycle_tracker.report_measurement(duration_ns)
        return work

    def probe_groups(self) -> list[tuple[int, list[Any]]]:
        """For a compiled probe between duty cycles on this thread (driver_wakeup.SignallingAgent): each
        publication's next move of its limit, as a group (threshold, positions) found once the positions that hold
        the limit back have all reached the threshold. Without it, a publisher at its limit would wait for the next
        whole cycle."""
        groups = []
        for publications in (self.network.network_publications, self.ipc_publications):
            for publication in publications:
                watch = publication.limit_watch()
                if watch is not None:
                    groups.append(watch)
        return groups

    @property
    def context(self) -> Any:
        """The driver's concluded context."""
        return self._ctx

    def on_close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self.to_driver.consumer_heartbeat_time = -1      # clients read "driver has been shut down"
        except Exception:           # noqa: BLE001 - closing anyway
            pass
        for publication in self.ipc_publications:
            self.log_factory.delete(publication)
        self.ipc_publications = []
        for client in self.clients.values():
            client.heartbeat.close()
        try:
            sender = self.sender
            if sender.shares_conductor_thread or sender.cycles_over:
                # the sender's duty cycles are over (its thread stopped, or it shares this one): it sends what
                # clients offered that it has not sent yet; not while its own thread may still run them (a runner
                # whose close timed out), where both would send from the same positions
                try:
                    sender.send_remaining()
                except Exception as exc:        # noqa: BLE001 - closing anyway: what was left is lost, and said
                    self._log_error(ErrorCode.GENERIC_ERROR, f"sending what was offered before the close: {exc}", exc)
            self.name_resolver.close()
            self.network.close()
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

    def _log_resolver_error(self, code: int, detail: str, os_errno: int | None, count: bool) -> None:
        """An error of the name resolver: in the distinct error log, and in ``Errors`` when ``count`` (the C
        resolver logs failed bootstrap neighbour resolutions without counting them)."""
        if self.error_log is None:
            return
        self.error_log.record(cmd.format_driver_error(code, detail, function="name_resolver",
                                                      filename="name_resolver.py", line=0, os_errno=os_errno))
        if count:
            self.errors_counter.increment_ordered()

    def _on_command(self, msg_type_id: int, buffer: AtomicBuffer, offset: int, length: int) -> None:
        handler = self._handlers.get(msg_type_id)
        if handler is None:
            self._log_error(ErrorCode.UNKNOWN_COMMAND_TYPE_ID, f"command={msg_type_id} unknown")
            return
        try:
            command = cmd.decode_command(msg_type_id, buffer, offset, length)
        except MalformedMessageError as exc:
            # no answer: the client cannot be trusted to be told; error log only, as aeron_driver_conductor_on_command
            self._log_error(exc.error_code, str(exc))
            return
        try:
            handler(command)
        except CommandError as exc:
            self._log_error(exc.code, exc.message, exc)
            self.client_proxy.on_error(command.correlation_id, exc.code, _response_text(exc.code, exc.message))
        except Exception as exc:        # noqa: BLE001 - a bug or OS error answers GENERIC_ERROR, driver lives on
            code = ErrorCode.STORAGE_SPACE if isinstance(exc, OSError) and exc.errno == errno.ENOSPC \
                else ErrorCode.GENERIC_ERROR
            detail = f"{type(exc).__name__}: {exc}"
            self._log_error(code, detail, exc)
            self.client_proxy.on_error(command.correlation_id, code, _response_text(code, detail))

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
            client = ClientSession(client_id, AtomicCounter(self.counters_values, counter_id),
                                   self._ctx.client_liveness_timeout_ns // 1_000_000,
                                   self.system[ctr.CLIENT_TIMEOUTS], self._epoch_clock())
            self.clients[client_id] = client
            self.clients_changes += 1
            self.client_proxy.on_counter_ready(client_id, counter_id)
        return client

    def on_client_keepalive(self, command) -> None:
        client = self.clients.get(command.client_id)
        if client is not None:
            client.on_keepalive(self._epoch_clock())

    def on_client_close(self, command) -> None:
        client = self.clients.get(command.client_id)
        if client is not None:
            client.on_close_by_command()

    def _release_client(self, client: ClientSession) -> None:
        del self.clients[client.client_id]
        self.clients_changes += 1
        self.client_proxy.on_unavailable_counter(client.client_id, client.heartbeat_counter_id)
        self.driver_counters.free(client.heartbeat)
        for registration_id, counter_id in client.counters.items():
            self.client_proxy.on_unavailable_counter(registration_id, counter_id)
            self.counters.free(counter_id)
        client.counters.clear()
        for subscription in list(client.subscriptions.values()):
            self._remove_subscription(subscription)
        client.subscriptions.clear()
        now_ns = self._nano_clock()
        for publication in client.publication_links.values():
            if isinstance(publication, NetworkPublication):
                self.network.remove_publication(publication, now_ns, revoke=False)
            else:
                self._decref_publication(publication, now_ns)
        client.publication_links.clear()

    # -- publications --------------------------------------------------------------------------------
    def on_add_publication(self, command) -> None:
        self._add_publication(command, is_exclusive=False)

    def on_add_exclusive_publication(self, command) -> None:
        self._add_publication(command, is_exclusive=True)

    def _add_publication(self, command, is_exclusive: bool) -> None:
        uri = parse_channel(command.channel)
        if uri.is_spy:
            raise CommandError(ErrorCode.INVALID_CHANNEL, f"aeron-spy channels are for subscriptions only: "
                                                          f"{command.channel}")
        if uri.media == "udp":
            self.network.add_publication(command, uri, is_exclusive)
        else:
            self._add_ipc_publication(command, is_exclusive)

    def _add_ipc_publication(self, command, is_exclusive: bool) -> None:
        channel = command.channel
        uri = parse_channel(channel)
        ctx = self._ctx
        stream_id = command.stream_id
        term_length = uri_int(uri, "term-length", parse_size, None)
        mtu_length = uri_int(uri, "mtu", parse_size, None)
        session_id, tagged = self.network.publication_session_id(uri)
        response_correlation_id = uri_response_correlation_id(uri)
        linger_ns = uri_duration(uri, "linger", ctx.publication_linger_timeout_ns)
        window = uri_int(uri, "pub-wnd", parse_size, None)
        start = tuple(uri_int(uri, key, int, None) for key in ("init-term-id", "term-id", "term-offset"))
        sparse = uri_bool(uri, "sparse", ctx.term_buffer_sparse_file)
        signal_eos = uri_bool(uri, "eos", True)
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
            for candidate in self.ipc_publications:
                if (candidate.state == ACTIVE and not candidate.is_exclusive and candidate.stream_id == stream_id
                        and candidate.response_correlation_id == response_correlation_id):
                    publication = candidate
                    break
        if publication is not None:
            publication.check_joins_existing(term_length, mtu_length, session_id, start)
            publication.incref()
            client = self.get_or_add_client(command.client_id)
            client.publication_links[command.correlation_id] = publication
            self.client_proxy.on_publication_ready(
                command.correlation_id, publication.registration_id, publication.session_id, stream_id,
                publication.pub_lmt_id, NULL_CHANNEL_STATUS_ID, publication.log_path, is_exclusive=False)
            return

        if session_id is not None:
            for other in self.ipc_publications:
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
        # link existing subscribers before answering, so the log is connected and has a limit by the time the
        # client can offer; the image messages still follow the publication's, as in the C driver
        positions = [self._link(subscription, publication)
                     for subscription in self.ipc_subscriptions if subscription.matches(publication)]
        self.client_proxy.on_publication_ready(
            command.correlation_id, publication.registration_id, session_id, stream_id, publication.pub_lmt_id,
            NULL_CHANNEL_STATUS_ID, publication.log_path, is_exclusive)
        for position in positions:
            self.on_ipc_image_available(publication, position)

    def _update_ipc_response_subscription(self, publication: IpcPublication) -> None:
        """Port of aeron_driver_conductor_find_and_update_ipc_response_subscription: an IPC response publication
        names its request publication (response-correlation-id = that publication's registration id, its image's
        correlation id); the request publication names the response subscription, which now wants this session."""
        correlation_id = publication.response_correlation_id
        if correlation_id is None:
            return
        for request in self.ipc_publications:
            if request.registration_id == correlation_id:
                for subscription in self.ipc_subscriptions:
                    if subscription.registration_id == request.response_correlation_id:
                        subscription.bind_response_session(publication.session_id)
                        break
                break

    def _allocate_session_id(self, stream_id: int) -> int:
        low = self._ctx.publication_reserved_session_id_low
        high = self._ctx.publication_reserved_session_id_high
        in_use = {p.session_id for p in self.ipc_publications if p.stream_id == stream_id and p.state != DONE}
        while True:
            session_id = self._next_session_id
            self._next_session_id = wrap32(session_id + 1)
            if low <= session_id <= high or session_id in in_use:
                continue
            return session_id

    def _create_ipc_publication(self, command, session_id, term_length, mtu_length, linger_ns, sparse,
                                is_exclusive, window, start, signal_eos,
                                response_correlation_id: int | None) -> IpcPublication:
        ctx = self._ctx
        registration_id = command.correlation_id
        stream_id = command.stream_id
        channel = command.channel
        # effective window: min(configured, term length / 2), the URI's pub-wnd first (aeron_producer_window_length)
        configured = window if window is not None else ctx.ipc_publication_term_window_length
        window = min(configured, term_length // 2) if configured > 0 else term_length // 2
        log = self.log_factory.create_publication_log(
            registration_id, session_id, stream_id, channel, term_length=term_length, mtu_length=mtu_length,
            is_exclusive=is_exclusive, start=start if start[0] is not None else None, sparse=sparse,
            window_length=window, linger_timeout_ns=linger_ns, signal_eos=signal_eos,
            response_correlation_id=response_correlation_id,
            untethered_timeouts=uri_untethered_timeouts(parse_channel(command.channel), ctx))
        try:
            pub_pos, pub_lmt = self.driver_counters.stream_counters(
                (("pub-pos (exclusive)" if is_exclusive else "pub-pos (concurrent)", ctr.DRIVER_PUBLISHER_POS_TYPE_ID),
                 ("pub-lmt", ctr.DRIVER_PUBLISHER_LIMIT_TYPE_ID)),
                registration_id, session_id, stream_id, channel, owner_id=command.client_id)
        except BaseException:
            self.log_factory.discard(log)
            raise
        publication = IpcPublication(
            registration_id=registration_id, owner_client_id=command.client_id, session_id=session_id,
            stream_id=stream_id, channel=channel, is_exclusive=is_exclusive, log=log, pub_pos=pub_pos,
            pub_lmt=pub_lmt, window_length=window, linger_timeout_ns=linger_ns,
            unblock_timeout_ns=ctx.publication_unblock_timeout_ns,
            unblocked_publications=self.system[ctr.UNBLOCKED_PUBLICATIONS],
            publications_revoked=self.system[ctr.PUBLICATIONS_REVOKED], now_ns=self._nano_clock(),
            response_correlation_id=response_correlation_id)
        self.ipc_publications.append(publication)
        return publication

    def on_remove_publication(self, command) -> None:
        client = self.clients.get(command.client_id)
        registration_id = command.registration_id
        publication = client.publication_links.pop(registration_id, None) if client is not None else None
        if publication is None:
            raise CommandError(ErrorCode.UNKNOWN_PUBLICATION, f"unknown publication client_id={command.client_id} "
                                                              f"registration_id={registration_id}")
        self.client_proxy.on_operation_succeeded(command.correlation_id)
        now_ns = self._nano_clock()
        if isinstance(publication, NetworkPublication):
            self.network.remove_publication(publication, now_ns, revoke=bool(command.revoke))
            return
        self._decref_publication(publication, now_ns)
        if command.revoke:
            publication.revoke(now_ns, self)

    def _decref_publication(self, publication: IpcPublication, now_ns: int) -> None:
        if publication.decref() <= 0 and publication.state == ACTIVE:
            publication.begin_draining(now_ns)

    def _link(self, subscription: IpcSubscriptionLink, publication: IpcPublication) -> SubscriberPosition:
        """Link a subscriber (sub-pos counter, connected log, limit); the caller tells the client."""
        position = self.driver_counters.subscriber_position(
            subscription.registration_id, subscription.client_id, subscription.channel, publication.session_id,
            publication.stream_id, publication.registration_id, publication.join_position())
        link = SubscriberPosition(subscription, position, self._nano_clock())
        subscription.add_link(publication.registration_id, publication)
        publication.add_subscriber(link)
        return link

    def on_ipc_image_available(self, publication: IpcPublication, link: SubscriberPosition) -> None:
        """Tell the subscriber's client about its image of an IPC publication (ON_AVAILABLE_IMAGE)."""
        self.client_proxy.on_available_image(
            publication.registration_id, publication.session_id, publication.stream_id,
            link.subscription.registration_id, link.counter_id, publication.log_path, IPC_CHANNEL)

    def unlink_subscriber(self, subscription: SubscriptionLink, resource, resource_id: int) -> None:
        """Undo a link between a subscription and a publication or image, freeing the sub-pos counter."""
        link = resource.remove_subscriber(subscription.registration_id)
        subscription.remove_link(resource_id)
        if link is not None:
            self.driver_counters.free(link.position)

    # -- subscriptions -------------------------------------------------------------------------------
    def on_add_subscription(self, command) -> None:
        channel = command.channel
        uri = parse_channel(channel)
        if uri.media == "udp":
            self.network.add_subscription(command, uri)
            return
        subscription = IpcSubscriptionLink(
            command.correlation_id, command.client_id, command.stream_id, channel,
            uri_int(uri, "session-id", int, None), uri_bool(uri, "tether", True), uri_bool(uri, "rejoin", True),
            *uri_untethered_timeouts(uri, self._ctx), is_response=uri.get("control-mode") == "response")
        client = self.get_or_add_client(command.client_id)
        self.ipc_subscriptions.append(subscription)
        client.subscriptions[subscription.registration_id] = subscription
        self.client_proxy.on_subscription_ready(command.correlation_id, NULL_CHANNEL_STATUS_ID)
        self._link_ipc_publications(subscription)

    def _link_ipc_publications(self, subscription: IpcSubscriptionLink) -> None:
        """Link a new IPC subscription to every active publication it matches (not those rejected a moment ago)."""
        for publication in self.ipc_publications:
            if subscription.matches(publication) and self._is_accepting_subscriptions(publication):
                self.on_ipc_image_available(publication, self._link(subscription, publication))

    @staticmethod
    def _is_accepting_subscriptions(publication: IpcPublication) -> bool:
        """An IPC publication a new subscription may join (aeron_ipc_publication_is_accepting_subscriptions): not
        cooling down after a rejection, and active or draining with data its subscribers have not read."""
        return not publication.in_cool_down and (publication.state == ACTIVE or (
            publication.state == DRAINING and not publication.is_drained(publication.producer_position())))

    def link_ipc_subscribers(self, publication: IpcPublication) -> None:
        """A rejected publication's cool-down is over: the subscriptions it matches rejoin (same image id)."""
        for subscription in self.ipc_subscriptions:
            if subscription.matches(publication) and subscription.registration_id not in publication.subscribers:
                self.on_ipc_image_available(publication, self._link(subscription, publication))

    def on_remove_subscription(self, command) -> None:
        client = self.clients.get(command.client_id)
        subscription = client.subscriptions.pop(command.registration_id, None) if client is not None else None
        if subscription is None:
            raise CommandError(ErrorCode.UNKNOWN_SUBSCRIPTION,
                               f"unknown subscription client_id={command.client_id} "
                               f"registration_id={command.registration_id}")
        self._remove_subscription(subscription)
        self.client_proxy.on_operation_succeeded(command.correlation_id)

    def _remove_subscription(self, subscription: SubscriptionLink) -> None:
        if not isinstance(subscription, IpcSubscriptionLink):
            for link in self._mds_links.pop(subscription.registration_id, []):   # its IPC and spy destinations
                self._drop_mds_link(link, notify=False)
            self.network.remove_subscription(subscription)
            return
        for publication in list(subscription.links.values()):
            self.unlink_subscriber(subscription, publication, publication.registration_id)
        if subscription in self.ipc_subscriptions:
            self.ipc_subscriptions.remove(subscription)

    # -- IPC and spy destinations of multi-destination subscriptions ---------------------------------
    def _on_ipc_or_spy_receive_destination(self, command) -> None:
        """Ports of aeron_driver_conductor_on_add/remove_receive_ipc_destination and _spy_destination: an IPC (or
        spy) subscription link with the MDS subscription's registration id and stream, this destination's channel
        and parameters, so its images join the MDS subscription; removed by the same channel string."""
        channel = command.channel
        is_ipc = channel.startswith("aeron:ipc")
        if command.msg_type_id == cmd.REMOVE_RCV_DESTINATION:
            links = self._mds_links.get(command.registration_id, [])
            for link in links:
                if link.channel == channel and isinstance(link, IpcSubscriptionLink) == is_ipc:
                    links.remove(link)
                    self.client_proxy.on_operation_succeeded(command.correlation_id)
                    self._drop_mds_link(link, notify=True)
                    return
            raise CommandError(ErrorCode.UNKNOWN_SUBSCRIPTION, f"unknown subscription client_id={command.client_id} "
                                                               f"registration_id={command.registration_id}")
        uri = parse_channel(channel)
        session_id = uri_int(uri, "session-id", int, None)
        tether, rejoin = uri_bool(uri, "tether", True), uri_bool(uri, "rejoin", True)
        timeouts = uri_untethered_timeouts(uri, self._ctx)
        if is_ipc:
            mds = self.network.find_multi_destination_subscription(command)
            link: SubscriptionLink = IpcSubscriptionLink(mds.registration_id, command.client_id, mds.stream_id,
                                                         channel, session_id, tether, rejoin, *timeouts)
            self.ipc_subscriptions.append(link)
            self._mds_links.setdefault(mds.registration_id, []).append(link)
            self.client_proxy.on_operation_succeeded(command.correlation_id)
            self._link_ipc_publications(link)
        else:
            link = self.network.add_spy_destination(command, uri, session_id, tether, rejoin, timeouts)
            self._mds_links.setdefault(link.registration_id, []).append(link)

    def _drop_mds_link(self, link: SubscriptionLink, notify: bool) -> None:
        """Unlink an IPC or spy destination of an MDS subscription, telling the client its images went."""
        resources = list(link.links.values())
        if notify:
            for resource in resources:
                self.client_proxy.on_unavailable_image(resource.registration_id, link.registration_id,
                                                       resource.stream_id, link.channel)
        if isinstance(link, IpcSubscriptionLink):
            for publication in resources:
                self.unlink_subscriber(link, publication, publication.registration_id)
            if link in self.ipc_subscriptions:
                self.ipc_subscriptions.remove(link)
        else:
            self.network.remove_subscription(link)

    # -- counters ------------------------------------------------------------------------------------
    def on_add_counter(self, command) -> None:
        client = self.get_or_add_client(command.client_id)
        counter_id = self._allocate_counter(command.label, command.type_id, command.key,
                                            registration_id=command.correlation_id, owner_id=command.client_id)
        client.counters[command.correlation_id] = counter_id
        self.client_proxy.on_counter_ready(command.correlation_id, counter_id)

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
        self.client_proxy.on_operation_succeeded(command.correlation_id)
        self.client_proxy.on_unavailable_counter(command.registration_id, counter_id)
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
        self.client_proxy.on_static_counter(command.correlation_id, counter_id)

    # -- destinations, image rejection, termination, session ids -------------------------------------
    def on_destination(self, command) -> None:
        msg_type_id = command.msg_type_id
        if msg_type_id in (cmd.ADD_DESTINATION, cmd.REMOVE_DESTINATION):
            self.network.on_destination(command, self.clients.get(command.client_id))
        elif msg_type_id in (cmd.ADD_RCV_DESTINATION, cmd.REMOVE_RCV_DESTINATION):
            if command.channel.startswith("aeron:ipc") or command.channel.startswith("aeron-spy:"):
                self._on_ipc_or_spy_receive_destination(command)
            else:
                self.network.on_receive_destination(command)
        else:
            self.network.on_remove_destination_by_id(command)

    def on_reject_image(self, command) -> None:
        """Port of aeron_driver_conductor_on_invalidate_image: a network image (by its correlation id) stops
        taking data and answers its senders with error frames; an IPC image (by its publication's registration
        id) rejects the publication's subscribers for a cool-down of the image liveness timeout."""
        reason = command.reason
        if len(reason.encode("utf-8", "replace")) > MAX_ERROR_TEXT_LENGTH:
            raise CommandError(ErrorCode.GENERIC_ERROR, "Invalidation reason_text must be 1023 bytes or less")
        image_id = command.image_correlation_id
        if not self.network.reject_image(image_id, reason):
            for publication in self.ipc_publications:
                if publication.registration_id == image_id:
                    publication.reject(reason, self._nano_clock(), self._ctx.image_liveness_timeout_ns, self)
                    break
            else:
                raise CommandError(ErrorCode.GENERIC_ERROR, f"Unable to resolve image for correlationId={image_id}")
        self.system[ctr.IMAGES_REJECTED].increment_ordered()
        self.client_proxy.on_operation_succeeded(command.correlation_id)

    def on_publication_error(self, frame: cmd.PublicationErrorFrame) -> None:
        """A publication's error (once per receiver that sent one, or an IPC rejection): logged and told to the
        clients (ON_PUBLICATION_ERROR), as aeron_driver_conductor_on_publication_error."""
        self._log_error(frame.error_code, (
            f"onPublicationError: registrationId={frame.registration_id}, "
            f"destinationRegistrationId={frame.destination_registration_id}, sessionId={frame.session_id}, "
            f"streamId={frame.stream_id}, receiverId={frame.receiver_id}, groupId={frame.group_tag}, "
            f"errorCode={int(frame.error_code)}, errorMessage={frame.error_message}"))
        self.client_proxy.on_publication_error(frame)

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
        self.client_proxy.on_next_available_session_id(command.correlation_id, session_id)

    # -- timers --------------------------------------------------------------------------------------
    def on_timer_event(self, now_ns: int, now_ms: int) -> int:
        """Housekeeping every timer interval: heartbeat, client liveness, publications, stuck commands."""
        self.to_driver.consumer_heartbeat_time = now_ms
        work = self._check_clients(now_ns, now_ms)
        work += check_managed_resources(self.ipc_publications, now_ns, now_ms, self, self._delete_ipc_publication)
        work += self.network.on_time_event(now_ns, now_ms)
        work += self._check_for_blocked_commands(now_ns)
        return work

    def _check_clients(self, now_ns: int, now_ms: int) -> int:
        work = 0
        for client in self.clients.values():
            work += client.on_time_event(now_ns, now_ms, self)
        if work:        # released after the walk: releasing changes the dict
            for client in [c for c in self.clients.values() if c.has_reached_end_of_life()]:
                self._release_client(client)
        return work

    def _delete_ipc_publication(self, publication: IpcPublication) -> None:
        self.log_factory.delete(publication)
        self.driver_counters.free(publication.pub_pos)
        self.driver_counters.free(publication.pub_lmt)

    def _check_for_blocked_commands(self, now_ns: int) -> int:
        """Unblock a client that died between claiming and committing a ring record (aeron_mpsc_rb_unblock)."""
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


def _semantic_version(text: str) -> int:
    parts = []
    for piece in text.split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit()) or "0"
        parts.append(min(int(digits), 255))
    while len(parts) < 3:
        parts.append(0)
    return semantic_version_compose(*parts)
