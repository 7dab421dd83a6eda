# SPDX-License-Identifier: Apache-2.0
"""ClientConductor: the client's agent. It sends commands to the driver (through its DriverProxy), turns the driver's
broadcast responses (which its DriverEventsAdapter decodes) into Publications, Subscriptions, Images and Counters,
heartbeats, watches the driver's liveness and releases lingering resources (Aeron ``ClientConductor``).

One re-entrant lock serialises the conductor's duty cycle and the application's calls (add, close), as Aeron's
client lock does: a synchronous ``add_*`` sends its command and then runs the duty cycle itself until the
driver answers, so in invoker mode nothing else has to run. User callbacks (image and counter handlers) run
inside the duty cycle; calling back into the client from one raises, as upstream.
"""
from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from aeron.common import command as cmd
from aeron._core.broadcast import BroadcastReceiver, CopyBroadcastReceiver
from aeron._core.cnc import CncFile
from aeron._core.counters import (
    DRIVER_HEARTBEAT_TYPE_ID, LABEL_OFFSET, MAX_KEY_LENGTH, MAX_LABEL_LENGTH, METADATA_LENGTH, RECORD_ALLOCATED, CountersReader)
from aeron._core.logbuffer import LogBuffers
from aeron._core.ring_buffer import ManyToOneRingBuffer
from aeron._core.wakeup import QuietBound
from aeron.common.agent import (DRIVER_BACKOFF_MAX_SPINS, DRIVER_BACKOFF_MAX_YIELDS, DRIVER_BACKOFF_MIN_PARK_NS, Agent,
                                epoch_ms, nano_time)
from aeron.client.channel_validation import validate_channel
from aeron.client.counter import Counter
from aeron.client.driver_events_adapter import DriverEventsAdapter
from aeron.client.driver_proxy import DriverProxy
from aeron.client.image import Image
from aeron.client.publication import ExclusivePublication, Publication
from aeron.client.subscription import Subscription
from aeron.common.constants import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN
from aeron.common.errors import (
    AeronError, AgentTerminationError, ChannelRejectedError, ClientTimeoutError, ConductorServiceTimeoutError,
    DriverTimeoutError, ErrorCode, IllegalStateError, InvalidArgumentError, RegistrationError, StorageSpaceError)
from aeron.common.version import __version__
from aeron.common.wakeup import (ALL_SIGNAL_OFFSET, CLIENTS, LONG_QUIET_PARK_NS, SENDER, SPIES, ClientRegistry,
                                 WakeupIdleStrategy, new_waiter, open_board, stream_bit, streams_mask)

if TYPE_CHECKING:
    from aeron._core.atomic_buffer import AtomicBuffer
    from aeron._core.wakeup import Waiter
    from aeron.client.handlers import AvailableImageHandler, UnavailableImageHandler
    from aeron.client.context import Context

MS = 1_000_000
COUNTER_VALUE_LENGTH = 128
CLOSE_WAIT_NS = 100 * MS                # longest close() waits for an offer still copying into a log
RESPONSES_PER_DUTY_CYCLE = 64           # bounded, so a flood of broadcasts cannot starve the timers

_PUBLICATION, _EXCLUSIVE, _SUBSCRIPTION, _COUNTER, _STATIC_COUNTER, _REMOVE, _SESSION_ID = range(7)
_KIND_NAMES = {_PUBLICATION: "publication", _EXCLUSIVE: "exclusive publication", _SUBSCRIPTION: "subscription",
               _COUNTER: "counter"}            # what each get_* of Aeron asks for


class _Pending:
    """A command awaiting its response; ``result`` or ``error`` is set when the response arrives."""

    __slots__ = ("kind", "channel", "stream_id", "handlers", "done", "result", "error", "deadline_ns")

    def __init__(self, kind: int, deadline_ns: int, channel: str = "", stream_id: int = 0,
                 handlers: Any = None) -> None:
        self.kind = kind
        self.deadline_ns = deadline_ns
        self.channel = channel
        self.stream_id = stream_id
        self.handlers = handlers
        self.done = False
        self.result: Any = None
        self.error: BaseException | None = None


def _check_stream_id(stream_id: object) -> int:
    if not isinstance(stream_id, int) or isinstance(stream_id, bool) or not INT32_MIN <= stream_id <= INT32_MAX:
        raise InvalidArgumentError(f"stream id must be an int32, got {stream_id!r}")
    return stream_id


def _check_counter(type_id: object, label: object, key: object) -> tuple[int, bytes]:
    """Counter arguments as Aeron's clients check them: the driver would otherwise truncate silently."""
    if not isinstance(type_id, int) or isinstance(type_id, bool) or not INT32_MIN <= type_id <= INT32_MAX:
        raise InvalidArgumentError(f"counter type id must be an int32, got {type_id!r}")
    if not isinstance(label, str):
        raise InvalidArgumentError(f"counter label must be a str, got {type(label).__name__}")
    label_length = len(label.encode("utf-8"))
    if label_length > MAX_LABEL_LENGTH:
        raise InvalidArgumentError(f"counter label length {label_length} bytes > MAX_LABEL_LENGTH {MAX_LABEL_LENGTH}")
    try:
        key_bytes = bytes(memoryview(key))      # type: ignore[arg-type]
    except TypeError:
        raise InvalidArgumentError(f"counter key must be a bytes-like object, got {type(key).__name__}") from None
    if len(key_bytes) > MAX_KEY_LENGTH:
        raise InvalidArgumentError(f"counter key length {len(key_bytes)} > MAX_KEY_LENGTH {MAX_KEY_LENGTH}")
    return type_id, key_bytes


def _check_channel(channel: object) -> str:
    if not isinstance(channel, str):
        raise InvalidArgumentError(f"channel must be a str, got {type(channel).__name__}")
    validate_channel(channel)       # InvalidChannelError naming the bad parameter, before the driver sees it
    return channel


_DRIVER_SOURCE_LOCATION = re.compile(r"^\[[^\]]*, [^\]]*:\d+\] ?")


def driver_error_text(text: str) -> str:
    """An ON_ERROR message without the driver's source locations: the C driver starts each line of it with
    ``[function, file.c:line]``, which names the driver's code, not the application's mistake. Keeps the words
    of each line once, joined by '; '."""
    lines: list[str] = []
    for line in text.splitlines():
        line = _DRIVER_SOURCE_LOCATION.sub("", line).strip()
        if line and line not in lines:
            lines.append(line)
    return "; ".join(lines)


class ClientConductor(Agent):
    """The client's agent (see the module docstring); made and driven by :class:`aeron.Aeron`, not by applications."""
    role_name = "aeron-client-conductor"

    def __init__(self, ctx: Context, cnc: CncFile) -> None:
        """Map the command, broadcast and counters sections of ``cnc`` and take a client id from the driver's ring."""
        self._ctx = ctx
        self._cnc = cnc
        self._sections: list[AtomicBuffer] = [
            cnc.to_driver_buffer(), cnc.to_clients_buffer(), cnc.counters_metadata_buffer(),
            cnc.counters_values_buffer()]
        self._ring = ManyToOneRingBuffer(self._sections[0])
        self._metadata = self._sections[2]
        self._values = self._sections[3]
        self.counters_reader = CountersReader(self._metadata, self._values)
        self.client_id = self._ring.next_correlation_id()
        # positioned at `latest` now, before the first command, so no response of ours can be missed
        self._driver_events = DriverEventsAdapter(
            self.client_id, CopyBroadcastReceiver(BroadcastReceiver(self._sections[1])), self, self._report)
        self.lock = threading.RLock()
        self._callback_thread = 0                              # ident of the thread inside a user callback
        self._service_thread = 0                               # ident of the thread running the duty cycle
        self._close_deferred = False                           # close() asked for from inside the duty cycle
        self._closed = False
        self._terminating = False
        self.termination_error: BaseException | None = None
        self._resources: dict[int, Any] = {}                  # registration (add correlation) id -> resource
        self._pending: dict[int, _Pending] = {}
        self._async_commands: set[int] = set()                # fire-and-forget commands: errors -> handler
        self._logs: dict[str, list[Any]] = {}                 # log file -> [LogBuffers, references]
        self._lingering: list[tuple[int, Image]] = []         # (release deadline ns, retired image)
        # logs whose unmap was refused: a view the application holds, or an offer copying without the GIL (it
        # pins the log but reads its limit from cnc.dat, which must therefore stay mapped too); [log, reported]
        self._refused_logs: list[list[Any]] = []
        self._heartbeat_counter_id = -1
        self._inter_service_timeout_ns = cnc.client_liveness_timeout_ns
        self._driver_timeout_ns = ctx.driver_timeout_ms * MS
        now = nano_time()
        self._time_of_last_service_ns = now
        self._time_of_last_keepalive_ns = now
        self._on_close_hooks: list[Callable[[], Any]] = []
        # the aeron dir's wake-up board (ours; on aeronmd we make it): our parked subscribers and our driver's
        # parked agents are woken through it; None means bounded sleeps only (docs/wakeup.md)
        self.wakeup_board = open_board(ctx.aeron_dir)
        self._waiters: list[Any] = []
        # registered as ours before the first command: a driver of ours then knows this client signals it
        self.client_registry: ClientRegistry | None = None
        self._registry_slot = -1
        if self.wakeup_board is not None:
            self.client_registry = ClientRegistry(self.wakeup_board)
            self._registry_slot = self.client_registry.register(self.client_id)
        self._driver_proxy = DriverProxy(self._ring, self.client_id, self._driver_timeout_ns, self.wakeup_board)
        self._parking: WakeupIdleStrategy | None = None       # the conductor thread's, closed on that thread
        self.active = False             # the last duty cycle read driver events (not only keepalives)

    # -- Agent ------------------------------------------------------------------------------------------

    def do_work(self) -> int:
        """One duty cycle: driver responses, keepalives and timeouts. Skipped (0) while the application runs one."""
        if self._closed or self._terminating or self._close_deferred:
            raise AgentTerminationError("client conductor closed")
        if not self.lock.acquire(blocking=False):
            return 0            # the application is running the duty cycle itself (awaiting a response)
        try:
            return self._service()
        finally:
            self.lock.release()

    def on_close(self) -> None:
        """Close the client when the agent stops (and the conductor thread's parking, on that thread)."""
        try:
            self.close()
        finally:
            if self._parking is not None:
                self._parking.close()

    # -- the conductor thread's parking (docs/wakeup.md) -------------------------------------------------

    def parking_idle_strategy(self) -> WakeupIdleStrategy | None:
        """An idle strategy for the conductor thread that parks until our driver broadcasts to its clients
        (CLIENTS), the next keepalive is due, or ``idle_sleep_duration_ns`` (16 ms, what the sleeping strategy
        sleeps) passed, that bound growing up to the keepalive interval while our driver says every client
        signals (then it is the one writer of the broadcast and it signals). None without a board. Its waiter is
        closed by :meth:`on_close`, on the thread that parks on it."""
        if self.wakeup_board is None:
            return None
        waiter = new_waiter(self.wakeup_board, CLIENTS)
        if waiter is None:
            return None
        sleep_ns = self._ctx.idle_sleep_duration_ns
        self._parking = WakeupIdleStrategy(DRIVER_BACKOFF_MAX_SPINS, DRIVER_BACKOFF_MAX_YIELDS,
                                           DRIVER_BACKOFF_MIN_PARK_NS, sleep_ns, spin_ns=0, quiet_park_ns=sleep_ns)
        return self._parking.bind(waiter, None, self)

    @property
    def wakeup_by_default(self) -> bool:
        """True when the board was made by this client's driver (it names cnc.dat's pid): a driver of ours."""
        registry = self.client_registry
        pid = self._cnc.pid
        return registry is not None and pid > 0 and registry.driver_pid == pid

    def time_to_deadline_ns(self, far_ns: int) -> int:
        """Until the next keepalive is due, at most ``far_ns`` (a parked conductor thread's wake-up time)."""
        return min(far_ns, self._time_of_last_keepalive_ns + self._ctx.keepalive_interval_ns - nano_time())

    def quiet_park_ns(self, quiet_ns: int) -> int:
        """The keepalive interval (within a quarter of the service interval the conductor holds itself to) while
        our driver says every client signals, else ``quiet_ns``."""
        registry = self.client_registry
        if registry is not None and registry.all_signal:
            return max(quiet_ns, min(self._ctx.keepalive_interval_ns, self._inter_service_timeout_ns // 4))
        return quiet_ns

    # -- duty cycle --------------------------------------------------------------------------------------

    def _service(self) -> int:
        if self._terminating or self._closed or self._close_deferred:
            return 0
        me = threading.get_ident()
        outermost = self._service_thread != me
        self._service_thread = me
        try:
            work = self._check_timeouts(nano_time())
            events = self._poll_driver_events()
            self.active = events > 0
            work += events
        except AgentTerminationError:
            raise
        except _Terminated:
            return 1
        finally:
            if outermost:
                self._service_thread = 0
                if self._close_deferred:
                    # the error handler closed the client mid-cycle: unmap only now that nothing of the cycle
                    # (a broadcast being read, a log being mapped) is on the stack any more
                    self._close_now()
        return work

    def _poll_driver_events(self) -> int:
        count = 0
        while count < RESPONSES_PER_DUTY_CYCLE:
            try:
                if not self._driver_events.receive():
                    break
            except IllegalStateError as exc:
                # lapped by the broadcast: responses were lost; awaited requests will time out
                self._report(exc)
                if self._terminating:
                    raise _Terminated() from None
            count += 1
        return count

    def _check_timeouts(self, now_ns: int) -> int:
        if now_ns - self._time_of_last_service_ns > self._inter_service_timeout_ns:
            gap_ms = (now_ns - self._time_of_last_service_ns) // MS
            self._terminate(ConductorServiceTimeoutError(
                f"service interval exceeded: {gap_ms} ms > {self._inter_service_timeout_ns // MS} ms"))
        self._time_of_last_service_ns = now_ns
        if now_ns - self._time_of_last_keepalive_ns < self._ctx.keepalive_interval_ns:
            return 0
        self._time_of_last_keepalive_ns = now_ns
        self._check_driver_heartbeat()
        self._heartbeat()
        self._release_lingering(now_ns)
        if self._refused_logs:
            self._retry_refused_logs(report=True)
        return 1

    def _check_driver_heartbeat(self) -> None:
        heartbeat_ms = self._driver_proxy.time_of_last_driver_keepalive_ms()
        if heartbeat_ms == -1:
            self._terminate(DriverTimeoutError("MediaDriver has been shutdown"))
        age_ms = epoch_ms() - heartbeat_ms
        if age_ms > self._ctx.driver_timeout_ms:
            self._terminate(DriverTimeoutError(
                f"MediaDriver keepalive: age={age_ms}ms > timeout={self._ctx.driver_timeout_ms}ms"))

    def _heartbeat(self) -> None:
        reader = self.counters_reader
        counter_id = self._heartbeat_counter_id
        if counter_id < 0:
            counter_id = reader.find_by_type_id_and_registration_id(DRIVER_HEARTBEAT_TYPE_ID, self.client_id)
            if counter_id < 0:
                return          # nothing sent yet: the driver has no record of us
            self._heartbeat_counter_id = counter_id
            self._values.put_i64_ordered(counter_id * COUNTER_VALUE_LENGTH, epoch_ms())
            self._append_to_heartbeat_label(counter_id)
            return
        if (reader.get_counter_state(counter_id) != RECORD_ALLOCATED
                or reader.get_counter_type_id(counter_id) != DRIVER_HEARTBEAT_TYPE_ID
                or reader.get_counter_registration_id(counter_id) != self.client_id):
            self._terminate(ClientTimeoutError(
                f"unexpected close of heartbeat timestamp counter: {counter_id}"))
        self._values.put_i64_ordered(counter_id * COUNTER_VALUE_LENGTH, epoch_ms())

    def _append_to_heartbeat_label(self, counter_id: int) -> None:
        # Parity with Aeron's clients, which append their identity to the driver's label (AeronCounters.appendToLabel).
        offset = counter_id * METADATA_LENGTH + LABEL_OFFSET
        length = self._metadata.get_i32_volatile(offset)
        name = self._ctx.client_name
        suffix = f" name={name} version={__version__} commit=python".encode()
        if not 0 <= length <= MAX_LABEL_LENGTH:
            return
        suffix = suffix[:MAX_LABEL_LENGTH - length]
        if suffix:
            self._metadata.put_bytes(offset + 4 + length, suffix)
            self._metadata.put_i32_ordered(offset, length + len(suffix))

    # -- the driver's responses, from the DriverEventsAdapter -------------------------------------------

    def on_error(self, message: cmd.ErrorResponse) -> None:
        """ON_ERROR: the driver refused a command; its awaiting call raises, an async command's goes to the error
        handler."""
        corr = message.correlation_id
        pending = self._pending.get(corr)
        text = driver_error_text(message.error_message)
        error: RegistrationError
        if message.error_code in (ErrorCode.INVALID_CHANNEL, ErrorCode.UNKNOWN_HOST):
            error = ChannelRejectedError(message.error_code, text, pending.channel if pending else "", corr)
        elif message.error_code == ErrorCode.STORAGE_SPACE:
            error = StorageSpaceError(message.error_code, text, corr)
        else:
            error = RegistrationError(message.error_code, text, corr)
        if pending is not None:
            pending.error = error
            pending.done = True
        elif corr in self._async_commands:
            self._async_commands.discard(corr)
            self._report(error)

    def on_new_publication(self, message: cmd.PublicationReady) -> None:
        """ON_PUBLICATION_READY / ON_EXCLUSIVE_PUBLICATION_READY: map the log of an awaited publication."""
        corr = message.correlation_id
        pending = self._pending.get(corr)
        if pending is None or pending.kind not in (_PUBLICATION, _EXCLUSIVE):
            return
        exclusive = message.msg_type_id == cmd.ON_EXCLUSIVE_PUBLICATION_READY
        try:
            log = self._map_log(message.log_file_name)
        except AeronError as exc:
            pending.error, pending.done = exc, True
            self._async_commands.add(self._driver_proxy.remove_publication(corr))
            return
        cls = ExclusivePublication if exclusive else Publication
        publication = cls(log, self._values, message.position_limit_counter_id * COUNTER_VALUE_LENGTH)
        publication._init_identity(self, pending.channel, corr, message.registration_id,
                                   message.channel_status_indicator_id, message.position_limit_counter_id,
                                   message.log_file_name)
        if self.wakeup_board is not None:
            # IPC: its stream's subscribers; network: the driver's sender and any spy (its stream's subscribers are
            # woken by the receiver once the data is in their image)
            mask = stream_bit(pending.stream_id) if pending.channel.startswith("aeron:ipc") else SENDER | SPIES
            publication.set_wake_signal(self.wakeup_board.signaller(mask))
        self._resources[corr] = publication
        pending.result, pending.done = publication, True

    def on_new_subscription(self, message: cmd.SubscriptionReady) -> None:
        """ON_SUBSCRIPTION_READY: an awaited subscription is added."""
        corr = message.correlation_id
        pending = self._pending.get(corr)
        if pending is None or pending.kind != _SUBSCRIPTION:
            return
        available, unavailable = pending.handlers
        subscription = Subscription(self, pending.channel, pending.stream_id, corr,
                                    available or self._ctx.available_image_handler,
                                    unavailable or self._ctx.unavailable_image_handler)
        subscription.channel_status_id = message.channel_status_indicator_id
        self._resources[corr] = subscription
        pending.result, pending.done = subscription, True

    def on_available_image(self, message: cmd.ImageReady) -> None:
        """ON_AVAILABLE_IMAGE: map the image's log, add it to its subscription of ours and tell its handler."""
        subscription = self._resources.get(message.subscription_registration_id)
        if not isinstance(subscription, Subscription) or subscription.is_closed:
            return
        if subscription._has_image(message.correlation_id):
            return
        try:
            log = self._map_log(message.log_file_name)
        except AeronError as exc:
            self._report(exc)
            return
        try:
            image = Image.create(subscription, log, self._values, message.subscriber_position_id,
                          message.correlation_id, message.session_id, message.source_identity,
                          message.log_file_name)
        except BaseException:
            self._release_log(message.log_file_name)
            raise
        subscription._add_image(image)
        handler = subscription.available_image_handler
        if handler is not None:
            self._callback(handler, image)

    def on_unavailable_image(self, message: cmd.ImageUnavailable) -> None:
        """ON_UNAVAILABLE_IMAGE: retire the image (its log lingers) and tell its handler."""
        subscription = self._resources.get(message.subscription_registration_id)
        if not isinstance(subscription, Subscription):
            return
        image = subscription._remove_image(message.correlation_id)
        if image is None:
            return
        image._retire()
        self._linger(image)
        handler = subscription.unavailable_image_handler
        if handler is not None:
            self._callback(handler, image)

    def on_counter_ready(self, message: cmd.CounterUpdate) -> None:
        """ON_COUNTER_READY: an awaited counter (or the driver's heartbeat counter of this client) is ready; the
        available-counter handler hears of every counter."""
        corr, counter_id = message.correlation_id, message.counter_id
        pending = self._pending.get(corr)
        if pending is not None and pending.kind == _COUNTER:
            counter = Counter(self, self._values, corr, counter_id)
            self._resources[corr] = counter
            pending.result, pending.done = counter, True
        if corr == self.client_id and self._heartbeat_counter_id < 0:
            self._heartbeat_counter_id = counter_id
            self._values.put_i64_ordered(counter_id * COUNTER_VALUE_LENGTH, epoch_ms())
            self._append_to_heartbeat_label(counter_id)
        if self._ctx.available_counter_handler is not None:
            self._callback(self._ctx.available_counter_handler, self.counters_reader, corr, counter_id)

    def on_unavailable_counter(self, message: cmd.CounterUpdate) -> None:
        """ON_UNAVAILABLE_COUNTER: a counter of ours is closed; the unavailable-counter handler hears of every one."""
        corr, counter_id = message.correlation_id, message.counter_id
        resource = self._resources.get(corr)
        if isinstance(resource, Counter) and resource.counter_id == counter_id:
            del self._resources[corr]
            resource._internal_close()
        if self._ctx.unavailable_counter_handler is not None:
            self._callback(self._ctx.unavailable_counter_handler, self.counters_reader, corr, counter_id)

    def on_static_counter(self, message: cmd.StaticCounterReply) -> None:
        """ON_STATIC_COUNTER: the id of an awaited static counter."""
        pending = self._pending.get(message.correlation_id)
        if pending is not None and pending.kind == _STATIC_COUNTER:
            pending.result, pending.done = message.counter_id, True

    def on_operation_success(self, message: cmd.OperationSucceeded) -> None:
        """ON_OPERATION_SUCCESS: an awaited or async command (a removal, a destination) is done."""
        corr = message.correlation_id
        pending = self._pending.get(corr)
        if pending is not None and pending.kind == _REMOVE:
            pending.done = True
        self._async_commands.discard(corr)

    def on_client_timeout(self) -> None:
        """ON_CLIENT_TIMEOUT for this client: the driver dropped it; terminate."""
        self._terminate(ClientTimeoutError("client timeout from driver"))

    def on_next_available_session_id(self, message: cmd.NextSessionIdReply) -> None:
        """ON_NEXT_AVAILABLE_SESSION_ID: the answer to an awaited :meth:`next_session_id`."""
        pending = self._pending.get(message.correlation_id)
        if pending is not None and pending.kind == _SESSION_ID:
            pending.result, pending.done = message.next_session_id, True

    def on_publication_error(self, message: cmd.PublicationErrorFrame) -> None:
        """ON_PUBLICATION_ERROR: an error frame for a publication of ours goes to its handler."""
        handler = self._ctx.publication_error_frame_handler
        if handler is not None and message.registration_id in {
                getattr(r, "original_registration_id", None) for r in self._resources.values()}:
            self._callback(handler, message)

    # -- application side ---------------------------------------------------------------------------------

    def ensure_open(self) -> None:
        """Raise IllegalStateError once closed, or a fresh copy of the error that terminated the client."""
        error = self.termination_error
        if error is not None:
            # a fresh exception of the same kind each time (DriverTimeoutError, ClientTimeoutError, ...)
            raise type(error)(f"Aeron client terminated: {error}")
        if self._closed or self._close_deferred:
            raise IllegalStateError("Aeron client is closed")

    def _ensure_not_reentrant(self) -> None:
        # per thread: another thread calling while the conductor runs a callback is not reentrant, it waits
        if self._callback_thread == threading.get_ident():
            raise IllegalStateError("reentrant calls not permitted during callbacks")

    def new_waiter(self, stream_ids: Iterable[int] | None = None, spies: bool = False,
                   futex: bool = False, extra_mask: int = 0) -> Waiter | None:
        """A waiter on the wake-up board woken by data for ``stream_ids`` (every stream when None; ``spies``: a
        spy subscription is among them; ``futex``: it waits on a futex, not a socket: a thread's loop, not an
        event loop; ``extra_mask``: more bits, such as CLIENTS), closed with the client; None when there is no
        board or no free slot (docs/wakeup.md)."""
        with self.lock:
            self.ensure_open()
            if self.wakeup_board is None:
                return None
            waiter = new_waiter(self.wakeup_board, streams_mask(stream_ids, spies) | extra_mask, futex=futex)
            if waiter is not None:
                self._waiters.append(waiter)
            return waiter

    def conductor_waiter(self) -> Waiter | None:
        """A waiter woken when our driver writes to its clients (CLIENTS), closed with the client; None when there
        is no board or no free slot (an application running this conductor parks on it: aeron.aio)."""
        with self.lock:
            self.ensure_open()
            if self.wakeup_board is None:
                return None
            waiter = new_waiter(self.wakeup_board, CLIENTS)
            if waiter is not None:
                self._waiters.append(waiter)
            return waiter

    def quiet_bound(self, brief_ns: int) -> QuietBound | None:
        """A client's quiet bound on this conductor's board (aeron._core.wakeup.QuietBound: ``brief_ns`` while an
        async add waits to be taken, as :meth:`awaits_async_result` says; the long bound while our driver says every
        client signals, as ClientRegistry.quiet_park_ns); None without a board."""
        if self.wakeup_board is None:
            return None
        return QuietBound(self.wakeup_board, ALL_SIGNAL_OFFSET, LONG_QUIET_PARK_NS, brief_ns, self._pending,
                          self.awaits_async_result)

    def awaits_async_result(self) -> bool:
        """True while an async add (:meth:`async_add_publication`, ...) waits to be taken by :meth:`poll_result`,
        within its driver timeout: the thread that asked polls for it, and the driver's answer wakes this
        conductor, not that thread."""
        pendings = self._pending
        if not pendings:
            return False
        now_ns = nano_time()
        return any(now_ns < pending.deadline_ns for pending in list(pendings.values()))

    def park_ns(self) -> int:
        """How long the conductor may park now: until its next keepalive, at most ``idle_sleep_duration_ns``, or
        the keepalive interval while our driver says every client signals (:meth:`quiet_park_ns`)."""
        return self.time_to_deadline_ns(self.quiet_park_ns(self._ctx.idle_sleep_duration_ns))

    def _begin(self, kind: int, send: Callable[[], int], channel: str = "", stream_id: int = 0,
               handlers: Any = None) -> int:
        """Send a command (``send``: a DriverProxy call returning its correlation id) whose answer is awaited."""
        with self.lock:
            self.ensure_open()
            self._ensure_not_reentrant()
            deadline_ns = nano_time() + self._driver_timeout_ns
            corr = send()
            self._pending[corr] = _Pending(kind, deadline_ns, channel, stream_id, handlers)
            return corr

    def next_correlation_id(self) -> int:
        """A new id from the to-driver ring buffer."""
        with self.lock:
            self.ensure_open()          # after termination or close the ring is unmapped
            return self._driver_proxy.next_correlation_id()

    def async_add_publication(self, channel: str, stream_id: int, exclusive: bool = False) -> int:
        """Validate and send ADD_PUBLICATION (or ADD_EXCLUSIVE_PUBLICATION); returns its correlation id."""
        channel, stream_id = _check_channel(channel), _check_stream_id(stream_id)
        proxy = self._driver_proxy
        add = proxy.add_exclusive_publication if exclusive else proxy.add_publication
        return self._begin(_EXCLUSIVE if exclusive else _PUBLICATION, lambda: add(channel, stream_id), channel,
                           stream_id)

    def async_add_subscription(self, channel: str, stream_id: int, available: AvailableImageHandler | None = None,
                               unavailable: UnavailableImageHandler | None = None) -> int:
        """Validate and send ADD_SUBSCRIPTION with its image handlers; returns its correlation id."""
        channel, stream_id = _check_channel(channel), _check_stream_id(stream_id)
        return self._begin(_SUBSCRIPTION, lambda: self._driver_proxy.add_subscription(channel, stream_id), channel,
                           stream_id, (available, unavailable))

    def async_add_counter(self, type_id: int, label: str, key: bytes = b"") -> int:
        """Validate and send ADD_COUNTER; returns its correlation id."""
        type_id, key = _check_counter(type_id, label, key)
        return self._begin(_COUNTER, lambda: self._driver_proxy.add_counter(type_id, key, label))

    def add_static_counter(self, type_id: int, label: str, registration_id: int, key: bytes = b"") -> int:
        """Send ADD_STATIC_COUNTER and wait; returns the counter id."""
        type_id, key = _check_counter(type_id, label, key)
        if (not isinstance(registration_id, int) or isinstance(registration_id, bool)
                or not INT64_MIN <= registration_id <= INT64_MAX):
            raise InvalidArgumentError(f"registration id must be an int64, got {registration_id!r}")
        return self.await_result(self._begin(
            _STATIC_COUNTER, lambda: self._driver_proxy.add_static_counter(type_id, key, label, registration_id)))

    def next_session_id(self, stream_id: int) -> int:
        """Ask the driver for the next session id it would give a publication on ``stream_id`` and wait."""
        stream_id = _check_stream_id(stream_id)
        return self.await_result(self._begin(
            _SESSION_ID, lambda: self._driver_proxy.next_available_session_id(stream_id)))

    def poll_result(self, correlation_id: int, kind_name: str) -> Any:
        """The resource for an async add, None while the driver has not answered; raises its error."""
        with self.lock:
            self.ensure_open()
            self._ensure_not_reentrant()
            pending = self._pending.get(correlation_id)
            if pending is None or _KIND_NAMES.get(pending.kind) != kind_name:
                raise InvalidArgumentError(f"no pending {kind_name} with registration id {correlation_id}")
            if not pending.done:
                self._service()
                self.ensure_open()
            if not pending.done:
                if nano_time() > pending.deadline_ns:
                    del self._pending[correlation_id]
                    raise DriverTimeoutError(f"no response from the driver for {kind_name} {correlation_id}")
                return None
            del self._pending[correlation_id]
            if pending.error is not None:
                raise pending.error
            return pending.result

    def await_result(self, correlation_id: int) -> Any:
        """Run the duty cycle until the driver answers ``correlation_id`` (or the driver timeout passes)."""
        with self.lock:
            pending = self._pending[correlation_id]
            deadline = pending.deadline_ns
            spins = 0
            driver_invoker = self._ctx.driver_agent_invoker
            try:
                while True:
                    self._service()
                    self.ensure_open()
                    if pending.done:
                        if pending.error is not None:
                            raise pending.error
                        return pending.result
                    if nano_time() > deadline:
                        raise DriverTimeoutError(
                            f"no response from MediaDriver within {self._ctx.driver_timeout_ms} ms "
                            f"(correlation id {correlation_id})")
                    spins += 1
                    if driver_invoker is not None:
                        # an embedded driver on this thread (INVOKER mode): its duty cycle answers, nothing else would
                        # (ClientConductor.awaitResponse with a driverAgentInvoker)
                        driver_invoker.invoke()
                    # the driver answers within a duty cycle or two: yield first, then nap briefly
                    elif spins < 50:
                        os.sched_yield()
                    else:
                        time.sleep(0.0002 if spins < 500 else 0.001)
            finally:
                self._pending.pop(correlation_id, None)

    # -- releasing ----------------------------------------------------------------------------------------

    def _release(self, resource: Any, remove: Callable[[int], int]) -> None:
        """Forget ``resource`` and send its removal (``remove``: a DriverProxy call taking its registration id)."""
        with self.lock:
            if self._closed or self._terminating or self._close_deferred:
                return
            self._ensure_not_reentrant()
            if self._resources.get(resource.registration_id) is not resource:
                return
            del self._resources[resource.registration_id]
            self._async_commands.add(remove(resource.registration_id))

    def release_publication(self, publication: Publication | ExclusivePublication) -> None:
        """Close ``publication``, release its log and send REMOVE_PUBLICATION. Idempotent."""
        with self.lock:
            if publication.is_closed:
                return
            self._ensure_not_reentrant()        # before anything changes: a refused close leaves it open
            publication._internal_close()
            self._release_log(publication.log_file_name)
            self._release(publication, self._driver_proxy.remove_publication)

    def release_subscription(self, subscription: Subscription) -> None:
        """Close ``subscription``, let its images linger and send REMOVE_SUBSCRIPTION. Idempotent."""
        with self.lock:
            if subscription.is_closed:
                return
            self._ensure_not_reentrant()
            images = self._close_images(subscription)
            self._release(subscription, self._driver_proxy.remove_subscription)
            self._notify_images_unavailable(subscription, images)

    def async_remove_publication(self, registration_id: int) -> None:
        """Remove the publication of an async add whether or not the driver has answered it yet (Aeron's
        ``asyncRemovePublication``): a ready one is closed; one still pending is forgotten (its answer will find
        nothing waiting, so its log is never mapped) and REMOVE_PUBLICATION is sent for its registration id, which
        the driver takes after the add (it takes commands in order). Nothing to do for an id it does not know."""
        self._async_remove(registration_id, (_PUBLICATION, _EXCLUSIVE), (Publication, ExclusivePublication))

    def async_remove_subscription(self, registration_id: int) -> None:
        """:meth:`async_remove_publication` for a subscription (Aeron's ``asyncRemoveSubscription``)."""
        self._async_remove(registration_id, (_SUBSCRIPTION,), (Subscription,))

    def async_remove_counter(self, registration_id: int) -> None:
        """:meth:`async_remove_publication` for a counter (Aeron's ``asyncRemoveCounter``)."""
        self._async_remove(registration_id, (_COUNTER,), (Counter,))

    def _async_remove(self, registration_id: int, kinds: tuple[int, ...], classes: tuple[type, ...]) -> None:
        with self.lock:
            if self._closed or self._terminating or self._close_deferred:
                return
            self._ensure_not_reentrant()
            pending = self._pending.get(registration_id)
            resource = self._resources.get(registration_id)
            if (pending is not None and pending.kind not in kinds) or (resource is not None
                                                                       and not isinstance(resource, classes)):
                what = _KIND_NAMES.get(pending.kind) if pending is not None else type(resource).__name__
                raise InvalidArgumentError(f"registration id {registration_id} is a {what}")
            self._pending.pop(registration_id, None)
            if resource is not None:
                resource.close()                    # answered (fetched or not): an ordinary close
            elif pending is not None and not pending.done:
                proxy = self._driver_proxy
                remove = (proxy.remove_subscription if pending.kind == _SUBSCRIPTION else
                          proxy.remove_counter if pending.kind == _COUNTER else proxy.remove_publication)
                self._async_commands.add(remove(registration_id))

    def _close_images(self, subscription: Subscription) -> tuple[Image, ...]:
        images = subscription._internal_close()
        for image in images:
            self._linger(image)
        return images

    def _notify_images_unavailable(self, subscription: Subscription, images: tuple[Image, ...]) -> None:
        # as Aeron's closeImages: a closed subscription's images go away for the application as they do when the
        # driver drops them, so its unavailable-image handler hears of each (the logs linger, still mapped)
        handler = subscription.unavailable_image_handler
        if handler is not None:
            for image in images:
                self._callback(handler, image)

    def destination(self, publication: Any, channel: str, add: bool) -> int:
        """ADD_DESTINATION / REMOVE_DESTINATION for a manual multi-destination-cast publication; waits for the
        driver and raises its RegistrationError. Returns the command's correlation id (an added destination's
        registration id)."""
        correlation_id = self._begin(_REMOVE, self._destination_command(publication, channel, add, receive=False))
        self.await_result(correlation_id)
        return correlation_id

    def remove_destination_by_id(self, publication: Any, destination_id: int, wait: bool = True) -> int:
        """REMOVE_DESTINATION_BY_ID: the destination added by the ADD_DESTINATION with correlation id
        ``destination_id``. Waits for the driver (or, with ``wait`` False, returns at once as the async variants do);
        returns the command's correlation id."""
        if not isinstance(destination_id, int) or isinstance(destination_id, bool):
            raise InvalidArgumentError(f"destination registration id must be an int, got {destination_id!r}")
        if publication.is_closed:
            raise IllegalStateError("publication is closed")
        registration_id = publication.original_registration_id

        def send() -> int:
            return self._driver_proxy.remove_destination_by_id(registration_id, destination_id)
        if wait:
            correlation_id = self._begin(_REMOVE, send)
            self.await_result(correlation_id)
            return correlation_id
        return self._send_async(send)

    def _send_async(self, send: Callable[[], int]) -> int:
        """Send a command (``send``: a DriverProxy call) without waiting; its correlation id stays active
        (``is_command_active``) until the driver answers, and a refusal goes to the context's error handler."""
        with self.lock:
            self.ensure_open()
            self._ensure_not_reentrant()
            correlation_id = send()
            self._async_commands.add(correlation_id)
        return correlation_id

    def receive_destination(self, subscription: Subscription, channel: str, add: bool) -> None:
        """ADD_RCV_DESTINATION / REMOVE_RCV_DESTINATION for a ``control-mode=manual`` (multi-destination)
        subscription; waits for the driver and raises its RegistrationError."""
        self.await_result(self._begin(_REMOVE, self._destination_command(subscription, channel, add, receive=True)))

    def async_destination(self, resource: Any, channel: str, add: bool, receive: bool) -> int:
        """Send a destination command without waiting: returns its correlation id, active (``is_command_active``)
        until the driver answers; a refusal goes to the context's error handler, as Aeron's async variants."""
        return self._send_async(self._destination_command(resource, channel, add, receive))

    def reject_image(self, image: Image, position: int, reason: str) -> None:
        """REJECT_IMAGE: the driver stops the image and tells its publisher why; waits for the driver and raises
        its RegistrationError (an image it no longer knows, a reason over 1023 bytes)."""
        if not isinstance(reason, str):
            raise InvalidArgumentError(f"reason must be a str, got {type(reason).__name__}")
        self.await_result(self._begin(
            _REMOVE, lambda: self._driver_proxy.reject_image(image.correlation_id, position, reason)))

    def is_command_active(self, correlation_id: int) -> bool:
        """True while an async command (``async_add_destination``, ...) awaits the driver's answer."""
        with self.lock:
            return correlation_id in self._async_commands

    def _destination_command(self, resource: Any, channel: str, add: bool, receive: bool) -> Callable[[], int]:
        """The DriverProxy call that adds or removes destination ``channel`` of ``resource``, checked first."""
        channel = _check_channel(channel)
        if resource.is_closed:
            raise IllegalStateError(f"{'subscription' if receive else 'publication'} is closed")
        proxy = self._driver_proxy
        if receive:
            command = proxy.add_rcv_destination if add else proxy.remove_rcv_destination
        else:
            command = proxy.add_destination if add else proxy.remove_destination
        registration_id = resource.registration_id
        return lambda: command(registration_id, channel)

    def release_counter(self, counter: Counter) -> None:
        """Close ``counter`` and send REMOVE_COUNTER. Idempotent."""
        with self.lock:
            if counter.is_closed:
                return
            self._ensure_not_reentrant()
            counter._internal_close()
            self._release(counter, self._driver_proxy.remove_counter)

    def counter_value(self, counter_id: int) -> int:
        """The value of counter ``counter_id`` in the driver's counters."""
        return self.counters_reader.get_counter_value(counter_id)

    # -- log buffers -------------------------------------------------------------------------------------

    def _map_log(self, path: str) -> LogBuffers:
        entry = self._logs.get(path)
        if entry is None:
            entry = [LogBuffers.map_existing(path), 0]
            self._logs[path] = entry
        entry[1] += 1
        return entry[0]

    def _release_log(self, path: str) -> None:
        entry = self._logs.get(path)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] <= 0:
            del self._logs[path]
            self._close_log(entry[0])

    def _close_log(self, log: LogBuffers) -> None:
        try:
            log.close()
        except IllegalStateError:           # in use: retried on each keepalive and at close
            self._refused_logs.append([log, False])

    def _retry_refused_logs(self, report: bool) -> None:
        still = []
        for entry in self._refused_logs:
            try:
                entry[0].close()
            except IllegalStateError as exc:
                if report and not entry[1]:
                    entry[1] = True
                    self._report(IllegalStateError(f"log buffers still in use after release, left mapped: {exc}"))
                still.append(entry)
        self._refused_logs = still

    def _linger(self, image: Image) -> None:
        self._lingering.append((nano_time() + self._ctx.resource_linger_duration_ns, image))

    def _release_lingering(self, now_ns: int) -> None:
        if not self._lingering:
            return
        keep = []
        for deadline, image in self._lingering:
            if now_ns >= deadline:
                self._release_image(image)
            else:
                keep.append((deadline, image))
        self._lingering = keep

    def _release_image(self, image: Image) -> None:
        try:
            image._release()
        except IllegalStateError as exc:
            self._report(exc)
        self._release_log(image.log_file_name)

    # -- callbacks, errors, termination ---------------------------------------------------------------------

    def _callback(self, handler: Callable[..., Any], *args: Any) -> None:
        self._callback_thread = threading.get_ident()
        try:
            handler(*args)
        except Exception as exc:        # noqa: BLE001 - a user's handler must not stop the conductor
            error: BaseException | None = exc
        else:
            error = None
        finally:
            self._callback_thread = 0
        if error is not None:
            self._report(error)         # outside the callback: the error handler may close the client

    def _report(self, error: BaseException) -> None:
        handler = self._ctx.error_handler
        if handler is not None:
            try:
                handler(error)
            except Exception:           # noqa: BLE001 - nothing sensible left to do with it
                pass

    def _terminate(self, error: BaseException) -> None:
        """Driver or client timeout: every resource is closed, the error reported once, the client unusable."""
        if self._terminating:
            raise _Terminated()
        self._terminating = True
        self.termination_error = error
        self._force_close_resources()
        self._report(error)
        for pending in self._pending.values():
            if not pending.done:
                pending.error, pending.done = error, True
        raise _Terminated()

    def _force_close_resources(self) -> None:
        for resource in list(self._resources.values()):
            if isinstance(resource, (Publication, ExclusivePublication)):
                resource._internal_close()
            elif isinstance(resource, Subscription):
                self._notify_images_unavailable(resource, self._close_images(resource))
            elif isinstance(resource, Counter):
                resource._internal_close()

    @property
    def is_closed(self) -> bool:
        """True once closed, or asked to close from inside the duty cycle."""
        return self._closed or self._close_deferred

    @property
    def in_duty_cycle(self) -> bool:
        """True when the calling thread is inside this conductor's duty cycle (the error handler)."""
        return self._service_thread == threading.get_ident()

    @property
    def is_terminating(self) -> bool:
        """True once a driver or client timeout terminated the client."""
        return self._terminating

    def close(self) -> None:
        """Tell the driver (CLIENT_CLOSE), close every resource and unmap everything. Idempotent. From inside the
        duty cycle (the error handler) the work is done as the cycle unwinds; the client is closed at once."""
        with self.lock:
            if self._closed:
                return
            self._ensure_not_reentrant()
            if self._service_thread == threading.get_ident():
                self._close_deferred = True
                return
            self._close_now()

    def _close_now(self) -> None:
        with self.lock:
            if self._closed:
                return
            if not self._terminating:
                try:
                    self._driver_proxy.client_close()
                except AeronError as exc:
                    self._report(exc)
            self._closed = True
            self._force_close_resources()
            for resource in self._resources.values():
                if isinstance(resource, (Publication, ExclusivePublication)):
                    self._release_log(resource.log_file_name)
            self._resources.clear()
            for _, image in self._lingering:
                self._release_image(image)
            self._lingering.clear()
            for log, _refs in list(self._logs.values()):
                self._close_log(log)
            self._logs.clear()
            # an offer still copying (GIL released) finishes within moments: wait a little for it
            deadline = nano_time() + CLOSE_WAIT_NS
            while self._refused_logs:
                self._retry_refused_logs(report=False)
                if not self._refused_logs or nano_time() > deadline:
                    break
                time.sleep(0.001)
            self._driver_events.close()      # its receiver's view of the broadcast buffer, which is closed below
            self._ring.close()
            if self._refused_logs:
                # Unmapping cnc.dat now could pull a publication's limit from under such an offer. The mappings
                # stay referenced by this conductor, which every publication and image references: they go
                # when the last of those objects does.
                self._report(IllegalStateError(
                    f"{len(self._refused_logs)} log buffer(s) still in use at close (a view held or an offer in "
                    "flight): they and cnc.dat stay mapped until released"))
            else:
                for section in self._sections:
                    try:
                        section.close()
                    except IllegalStateError as exc:
                        self._report(exc)
                try:
                    self._cnc.close()
                except IllegalStateError as exc:
                    self._report(exc)
            for waiter in self._waiters:
                waiter.close()
            self._waiters.clear()
            if self.client_registry is not None and self._registry_slot >= 0:
                # the view stays: a parking thread may still ask it (the board keeps the mapping until all are gone)
                self.client_registry.release(self._registry_slot, self.client_id)
            if self.wakeup_board is not None:
                self.wakeup_board.close()
            for hook in self._on_close_hooks:
                hook()


class _Terminated(Exception):
    """Unwinds a duty cycle after termination; never leaves the conductor."""

