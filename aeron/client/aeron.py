# SPDX-License-Identifier: Apache-2.0
"""Aeron: the client entry point. ``Aeron.connect(Context(...))`` attaches to a running media driver (ours or
the official ``aeronmd``) through its cnc.dat and starts the client conductor."""
from __future__ import annotations

import errno
import logging
import os
import stat
import time
from typing import TYPE_CHECKING

from aeron._core.cnc import CNC_FILE, META_DATA_LENGTH, CncFile, semantic_version_major
from aeron._core.counters import CountersReader
from aeron._core.ring_buffer import ManyToOneRingBuffer
from aeron.common.agent import (DRIVER_BACKOFF_MAX_PARK_NS, DRIVER_BACKOFF_MAX_SPINS, DRIVER_BACKOFF_MAX_YIELDS,
                                DRIVER_BACKOFF_MIN_PARK_NS, AgentInvoker, AgentRunner, epoch_ms)
from aeron.common.cnc_attach import cnc_open_error, driver_pid_is_gone, no_driver_hint
from aeron.client.client_conductor import ClientConductor
from aeron.client.context import DEFAULT_KEEPALIVE_INTERVAL_NS, Context
from aeron.client.counter import Counter
from aeron.client.publication import ExclusivePublication, Publication
from aeron.client.subscription import Subscription
from aeron.common.errors import (
    CncNotInitialisedError, CncVersionError, CorruptFileError, DriverTimeoutError, IllegalStateError)
from aeron.common.wakeup import CLIENTS, AutoIdleStrategy, ClientWakeupIdleStrategy, WakeupIdleStrategy, stream_bit

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from aeron._core.wakeup import Waiter, WakeSignal
    from aeron.client.handlers import (AvailableCounterHandler, AvailableImageHandler, CloseHandler, ErrorHandler,
                                       PublicationErrorFrameHandler, UnavailableCounterHandler,
                                       UnavailableImageHandler)
    from aeron.common.agent import BackoffIdleStrategy, IdleStrategy


_log = logging.getLogger(__name__)


def _sleep_until(deadline_ns: int, seconds: float, what: str, hint: str) -> None:
    if time.monotonic_ns() + int(seconds * 1e9) > deadline_ns:
        raise DriverTimeoutError(f"{what}; {hint}")
    time.sleep(seconds)


def _cnc_file_size(path: str) -> int:
    """The size of cnc.dat, -1 while it does not exist; raises cnc_open_error's OSError when it exists but cannot
    be opened read-write as a regular file (the client maps it so)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return -1
    except OSError as exc:
        raise cnc_open_error(path, exc) from None
    if stat.S_ISDIR(info.st_mode):
        raise cnc_open_error(path, IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR)))
    if not stat.S_ISREG(info.st_mode):
        raise OSError(errno.ENODEV, "not a regular file (a FIFO, socket or device): cannot map the media driver's "
                                    "CnC file", path)
    try:
        os.close(os.open(path, os.O_RDWR | os.O_CLOEXEC))
    except FileNotFoundError:
        return -1
    except OSError as exc:
        raise cnc_open_error(path, exc) from None
    return info.st_size


def connect_to_driver(ctx: Context) -> CncFile:
    """Attach to the driver's cnc.dat as the C and Java clients do (Aeron.Context.connectToDriver).

    Waits up to the driver timeout for the file, its version, its full length and a fresh driver heartbeat;
    raises DriverTimeoutError when it does not come, CncVersionError for an incompatible major version and an
    OSError (PermissionError, IsADirectoryError, ...) at once for a cnc.dat that exists but cannot be mapped.
    When no driver is found the first time, logs a WARNING (logger ``aeron.client.aeron``) naming the directory
    and how to start a driver, then goes on waiting; the DriverTimeoutError says the same.
    """
    aeron_dir = ctx.aeron_dir or ""
    path = os.path.join(aeron_dir, CNC_FILE)
    hint = no_driver_hint(aeron_dir)
    timeout_ms = ctx.driver_timeout_ms
    deadline = time.monotonic_ns() + timeout_ms * 1_000_000
    warned = False

    def warn(what: str) -> None:
        nonlocal warned
        if not warned:
            warned = True
            _log.warning("%s; waiting up to %d ms (driver timeout) for one: %s", what, timeout_ms, hint)

    while True:
        size = _cnc_file_size(path)
        if size <= META_DATA_LENGTH:
            if size < 0:
                warn(f"no media driver in {aeron_dir} ({path} does not exist)")
            _sleep_until(deadline, 0.016, f"CnC file not created: {path}", hint)
            continue
        try:
            cnc = CncFile.map_existing(path)
        except CorruptFileError:
            _sleep_until(deadline, 0.001, f"CnC file is created but not fully written: {path}", hint)
            continue
        except CncNotInitialisedError:       # the driver has sized the file but not yet written its version
            _sleep_until(deadline, 0.001, f"CnC file is created but not initialised: {path}", hint)
            continue
        except FileNotFoundError:
            _sleep_until(deadline, 0.016, f"CnC file not created: {path}", hint)
            continue
        except OSError as exc:
            raise cnc_open_error(path, exc) from None
        version = cnc.version
        if version == 0:
            cnc.close()
            _sleep_until(deadline, 0.001, f"CnC file is created but not initialised: {path}", hint)
            continue
        if semantic_version_major(version) != 0:
            cnc.close()
            raise CncVersionError(f"CnC version not compatible: app=0.2.0 file=major {semantic_version_major(version)}")
        if cnc.buffer.capacity < cnc.required_length:
            cnc.close()
            _sleep_until(deadline, 0.001, f"CnC file is created but not fully sized: {path}", hint)
            continue
        section = cnc.to_driver_buffer()
        ring = ManyToOneRingBuffer(section)
        try:
            while (heartbeat := ring.consumer_heartbeat_time) == 0:
                _sleep_until(deadline, 0.001, f"no driver heartbeat detected: {path}", hint)
        except BaseException:
            ring.close()
            section.close()
            cnc.close()
            raise
        ring.close()
        section.close()
        age_ms = epoch_ms() - heartbeat
        if heartbeat < 0 or age_ms > timeout_ms:
            pid = cnc.pid
            cnc.close()
            state = "was shut down" if heartbeat < 0 else f"last heartbeat {age_ms} ms ago"
            gone = ", its process is gone" if driver_pid_is_gone(pid) else ""
            warn(f"the media driver of {aeron_dir} (pid {pid}) is not running ({state}{gone})")
            _sleep_until(deadline, 0.1, f"no driver heartbeat detected: {path} (age {age_ms} ms)", hint)
            continue
        return cnc


class Aeron:
    """A connected client. Use ``Aeron.connect(ctx)`` (also a context manager); ``close()`` is idempotent and
    closes every publication, subscription and counter made by it.

    ``add_publication``/``add_exclusive_publication``/``add_subscription``/``add_counter`` wait for the driver;
    each ``async_add_*`` returns a registration id at once, and ``get_*(registration_id)`` returns the resource
    once the driver answered (None before), or raises the driver's RegistrationError.
    """

    def __init__(self, context: Context) -> None:
        """Attach to the driver named by ``context`` (concluded here) and start the client conductor.

        Prefer :meth:`connect`. Raises DriverTimeoutError when no live driver answers within
        ``context.driver_timeout_ms``, CncVersionError for a driver of an incompatible major version.
        """
        ctx = context.conclude()
        self._ctx = ctx
        self._brief_park_holds = 0
        cnc = connect_to_driver(ctx)
        try:
            self._conductor = ClientConductor(ctx, cnc)
        except BaseException:
            cnc.close()
            raise
        # quiet_park_ns compiled, with the board (a compiled idle reads it per park)
        self._quiet = self._conductor.quiet_bound(DRIVER_BACKOFF_MAX_PARK_NS)
        self._runner: AgentRunner | None = None
        self._invoker: AgentInvoker | None = None
        if ctx.use_conductor_agent_invoker:
            self._invoker = AgentInvoker(self._conductor, error_handler=ctx.error_handler)
            self._invoker.start()
        else:
            idle = ctx.idle_strategy
            if ctx.default_idle_strategy and ctx.conductor_parking:
                # parks on the wake-up board instead of sleeping 16 ms at a time (docs/wakeup.md)
                idle = self._conductor.parking_idle_strategy() or idle
            self._runner = AgentRunner(self._conductor, idle, error_handler=ctx.error_handler)
            self._runner.start()

    @classmethod
    def connect(cls, context: Context | None = None, *,
                aeron_dir: str | os.PathLike[str] | None = None,
                driver_timeout_ms: int | None = None,
                keepalive_interval_ns: int = DEFAULT_KEEPALIVE_INTERVAL_NS,
                resource_linger_duration_ns: int | None = None,
                idle_sleep_duration_ns: int | None = None,
                use_conductor_agent_invoker: bool = False,
                idle_strategy: IdleStrategy | None = None,
                error_handler: ErrorHandler | None = None,
                available_image_handler: AvailableImageHandler | None = None,
                unavailable_image_handler: UnavailableImageHandler | None = None,
                available_counter_handler: AvailableCounterHandler | None = None,
                unavailable_counter_handler: UnavailableCounterHandler | None = None,
                close_handler: CloseHandler | None = None,
                publication_error_frame_handler: PublicationErrorFrameHandler | None = None,
                client_name: str = "",
                pre_touch_mapped_memory: bool = False, conductor_parking: bool = True,
                driver_agent_invoker: AgentInvoker | None = None) -> Aeron:
        """Connect with ``context`` or, without one, a :class:`Context` made of the keyword settings (the
        Context's own, with the same defaults). Raises IllegalStateError when both are given."""
        settings = Context(aeron_dir, driver_timeout_ms=driver_timeout_ms, keepalive_interval_ns=keepalive_interval_ns,
                           resource_linger_duration_ns=resource_linger_duration_ns,
                           idle_sleep_duration_ns=idle_sleep_duration_ns,
                           use_conductor_agent_invoker=use_conductor_agent_invoker, idle_strategy=idle_strategy,
                           error_handler=error_handler, available_image_handler=available_image_handler,
                           unavailable_image_handler=unavailable_image_handler,
                           available_counter_handler=available_counter_handler,
                           unavailable_counter_handler=unavailable_counter_handler, close_handler=close_handler,
                           publication_error_frame_handler=publication_error_frame_handler, client_name=client_name,
                           pre_touch_mapped_memory=pre_touch_mapped_memory, conductor_parking=conductor_parking,
                           driver_agent_invoker=driver_agent_invoker)
        if context is None:
            context = settings
        elif settings._settings() != Context()._settings():
            raise IllegalStateError("pass either a Context or keyword settings, not both")
        return cls(context)

    # -- identity ---------------------------------------------------------------------------------------

    @property
    def context(self) -> Context:
        """The concluded Context this client was made with."""
        return self._ctx

    @property
    def client_id(self) -> int:
        """This client's id, as the driver knows it (also in its heartbeat counter)."""
        return self._conductor.client_id

    @property
    def conductor_agent_invoker(self) -> AgentInvoker | None:
        """The invoker to call when ``use_conductor_agent_invoker`` is set (None otherwise)."""
        return self._invoker

    @property
    def counters_reader(self) -> CountersReader:
        """A reader of the driver's counters in cnc.dat (values, labels, types). Raises once the client is closed."""
        self._conductor.ensure_open()
        return self._conductor.counters_reader

    @property
    def is_closed(self) -> bool:
        """True once the client is closed or was terminated by a driver or client timeout."""
        return self._conductor.is_closed or self._conductor.is_terminating

    def next_correlation_id(self) -> int:
        """A new id unique across the driver's clients (from the to-driver ring buffer), for your own correlation."""
        self._conductor.ensure_open()
        return self._conductor.next_correlation_id()

    def next_session_id(self, stream_id: int) -> int:
        """A session id the driver will not hand out to another publication on ``stream_id`` (driver ≥ 1.x with
        control protocol GET_NEXT_AVAILABLE_SESSION_ID)."""
        return int(self._conductor.next_session_id(stream_id))

    # -- publications -------------------------------------------------------------------------------------

    def add_publication(self, channel: str, stream_id: int) -> Publication:
        """Add a concurrent publication and wait for the driver to make it.

        A second ``add_publication`` of the same channel and stream shares the first one's log (and session id).
        Raises InvalidChannelError for a bad channel (ChannelRejectedError, also a RegistrationError, when the
        driver refuses it), InvalidArgumentError for a stream id that is not an int32, RegistrationError for
        another refusal and DriverTimeoutError when the driver does not answer.
        """
        c = self._conductor
        return c.await_result(c.async_add_publication(channel, stream_id))     # type: ignore[no-any-return]

    def add_exclusive_publication(self, channel: str, stream_id: int) -> ExclusivePublication:
        """Add an exclusive publication (its own log and session id, one offering thread) and wait for the driver.

        Raises as :meth:`add_publication`.
        """
        c = self._conductor
        return c.await_result(c.async_add_publication(channel, stream_id, exclusive=True))  # type: ignore[no-any-return]

    def async_add_publication(self, channel: str, stream_id: int) -> int:
        """Ask the driver for a publication without waiting; returns the registration id for :meth:`get_publication`."""
        return self._conductor.async_add_publication(channel, stream_id)

    def async_add_exclusive_publication(self, channel: str, stream_id: int) -> int:
        """Ask for an exclusive publication without waiting; the id is for :meth:`get_exclusive_publication`."""
        return self._conductor.async_add_publication(channel, stream_id, exclusive=True)

    def async_remove_publication(self, registration_id: int) -> None:
        """Remove the publication of :meth:`async_add_publication` (or the exclusive one) by its registration id,
        whether or not the driver has answered the add yet; an id this client does not know is ignored."""
        self._conductor.async_remove_publication(registration_id)

    def get_publication(self, registration_id: int) -> Publication | None:
        """The publication of :meth:`async_add_publication`, or None while the driver has not answered.

        Raises the driver's RegistrationError, or DriverTimeoutError after the driver timeout.
        """
        return self._conductor.poll_result(registration_id, "publication")   # type: ignore[no-any-return]

    def get_exclusive_publication(self, registration_id: int) -> ExclusivePublication | None:
        """The publication of :meth:`async_add_exclusive_publication`, or None while the driver has not answered."""
        return self._conductor.poll_result(registration_id, "exclusive publication")  # type: ignore[no-any-return]

    # -- subscriptions ------------------------------------------------------------------------------------

    def add_subscription(self, channel: str, stream_id: int,
                         available_image_handler: AvailableImageHandler | None = None,
                         unavailable_image_handler: UnavailableImageHandler | None = None) -> Subscription:
        """Add a subscription and wait for the driver to register it.

        ``available_image_handler(image)`` and ``unavailable_image_handler(image)`` are called from the client
        conductor's duty cycle as publishers' images come and go (the Context's handlers when None). Images may
        appear after this returns: poll, or wait for ``is_connected``. Raises as :meth:`add_publication`.
        """
        c = self._conductor
        corr = c.async_add_subscription(channel, stream_id, available_image_handler, unavailable_image_handler)
        return c.await_result(corr)      # type: ignore[no-any-return]

    def async_add_subscription(self, channel: str, stream_id: int,
                               available_image_handler: AvailableImageHandler | None = None,
                               unavailable_image_handler: UnavailableImageHandler | None = None) -> int:
        """Ask the driver for a subscription without waiting; the id returned is for :meth:`get_subscription`."""
        return self._conductor.async_add_subscription(channel, stream_id, available_image_handler,
                                                      unavailable_image_handler)

    def async_remove_subscription(self, registration_id: int) -> None:
        """Remove the subscription of :meth:`async_add_subscription` by its registration id, whether or not the
        driver has answered the add yet; an id this client does not know is ignored."""
        self._conductor.async_remove_subscription(registration_id)

    def get_subscription(self, registration_id: int) -> Subscription | None:
        """The subscription of :meth:`async_add_subscription`, or None while the driver has not answered."""
        return self._conductor.poll_result(registration_id, "subscription")  # type: ignore[no-any-return]

    # -- counters -----------------------------------------------------------------------------------------

    def add_counter(self, type_id: int, label: str, key: bytes = b"") -> Counter:
        """Allocate a counter in the driver's counters (visible to AeronStat) and wait for it.

        ``label`` is at most 380 bytes of UTF-8 and ``key`` at most 112 bytes; InvalidArgumentError otherwise.
        """
        c = self._conductor
        return c.await_result(c.async_add_counter(type_id, label, key))      # type: ignore[no-any-return]

    def async_add_counter(self, type_id: int, label: str, key: bytes = b"") -> int:
        """Ask for a counter without waiting; returns the registration id for :meth:`get_counter`."""
        return self._conductor.async_add_counter(type_id, label, key)

    def async_remove_counter(self, registration_id: int) -> None:
        """Remove the counter of :meth:`async_add_counter` by its registration id, whether or not the driver has
        answered the add yet; an id this client does not know is ignored."""
        self._conductor.async_remove_counter(registration_id)

    def get_counter(self, registration_id: int) -> Counter | None:
        """The counter of :meth:`async_add_counter`, or None while the driver has not answered."""
        return self._conductor.poll_result(registration_id, "counter")        # type: ignore[no-any-return]

    def add_static_counter(self, type_id: int, label: str, registration_id: int, key: bytes = b"") -> int:
        """A counter that outlives this client (ADD_STATIC_COUNTER); returns its counter id."""
        return int(self._conductor.add_static_counter(type_id, label, registration_id, key))

    def is_command_active(self, correlation_id: int) -> bool:
        """True while an async command (``Subscription.async_add_destination``, ...) awaits the driver."""
        return self._conductor.is_command_active(correlation_id)

    def wakeup_idle_strategy(self, *subscriptions: Subscription, spin_ns: int | None = None,
                             yield_ns: int | None = None,
                             max_park_ns: int = DRIVER_BACKOFF_MAX_PARK_NS) -> WakeupIdleStrategy:
        """An idle strategy for a loop polling ``subscriptions`` (every stream when none are named) that parks
        until whoever writes their data wakes it: an IPC publisher of ours, or our driver's receiver
        (docs/wakeup.md). ``idle.idle(sub.poll(handler, limit))`` in the loop, as any idle strategy.

        Spins (polls again at once) for ``spin_ns`` after each message, then parks; each park is bounded by
        ``max_park_ns`` (1 ms, growing to 16 ms while nothing happens, or to 100 ms while our driver says every
        client of it signals), so a writer that does not signal (aeronmd, an official client) is still picked up. Unbound (plain backoff) when the
        wake-up board cannot be had. Released when this client closes, or by its ``close()``.

        ``spin_ns`` by default: 10 µs, or none when every subscription named is a network one (not IPC, not a
        spy): its next data comes through the driver, tens of µs away at best, and a thread the driver has just
        woken often runs on the driver's own core, where its spin only holds the driver up.

        ``yield_ns``: how long the first park after a message yields the CPU (``sched_yield``) before it sleeps,
        woken meanwhile without a system call; by default WakeupIdleStrategy.DEFAULT_YIELD_NS for network
        subscriptions only, else none; it yields only while our driver says every client signals (not on
        aeronmd, whose writes nobody signals). A CPU whose thread yields does not halt, and on a virtual machine
        waking a halted vCPU costs tens of microseconds (docs/wakeup.md); a yield that finds another process on the
        CPU holds the yields off for a while, so a busy machine gets the plain park.
        """
        network_only = bool(subscriptions) and all(sub.channel.startswith("aeron:udp") for sub in subscriptions)
        if spin_ns is None:
            spin_ns = 0 if network_only else WakeupIdleStrategy.DEFAULT_SPIN_NS
        if yield_ns is None:
            yield_ns = WakeupIdleStrategy.DEFAULT_YIELD_NS if network_only else 0
        stream_ids = [sub.stream_id for sub in subscriptions] if subscriptions else None
        # its idle compiled (one C call per poll): the loop's thread pays it per message
        idle = ClientWakeupIdleStrategy(DRIVER_BACKOFF_MAX_SPINS, DRIVER_BACKOFF_MAX_YIELDS,
                                        DRIVER_BACKOFF_MIN_PARK_NS, max_park_ns, spin_ns=spin_ns, yield_ns=yield_ns)
        # a futex, not a socket: a futex wake-up is not a "sync" one, so the kernel need not put this thread on the
        # waker's (the driver's) core, where it would hold the driver up (docs/wakeup.md)
        waiter = self._conductor.new_waiter(stream_ids, _has_spy(subscriptions), futex=True)
        return idle.bind(waiter, quiet=self._quiet_fn)

    @property
    def wakeup_by_default(self) -> bool:
        """True when this client's driver is ours: it made the aeron dir's wake-up board (docs/wakeup.md). There a
        poll loop given no idle strategy of its own parks on the board (:meth:`wakeup_idle_strategy`): our
        samples, AeronArchive's and AeronCluster's waits. False on aeronmd or Aeron's Java driver (our first
        client made the board, nobody there signals), or when the board cannot be had: those loops keep Aeron's
        strategies."""
        return self._conductor.wakeup_by_default

    def default_idle_strategy(self, fallback: IdleStrategy, *subscriptions: Subscription) -> IdleStrategy:
        """The idle strategy of a loop polling ``subscriptions`` (every stream when none are named) that was given
        none: ``fallback`` (what Aeron's own client would use) unless the driver is ours
        (:attr:`wakeup_by_default`). On ours, :meth:`wakeup_idle_strategy` when every subscription is a network
        one (our driver's receiver wakes it whoever published), else an AutoIdleStrategy: that wakeup while our
        driver says every client of it signals, ``fallback`` while an official client is connected (its IPC offers
        wake nobody). Release it with ``close()`` when done; this client's close releases it too."""
        if not self.wakeup_by_default:
            return fallback
        idle = self.wakeup_idle_strategy(*subscriptions)
        registry = self._conductor.client_registry
        if registry is None or not idle.is_bound:
            return fallback
        if subscriptions and all(sub.channel.startswith("aeron:udp") for sub in subscriptions):
            return idle
        # the verdict read by the compiled idle itself when there is a QuietBound (always, with a registry)
        all_signal = self._quiet.all_signal if self._quiet is not None else (lambda: registry.all_signal)
        return AutoIdleStrategy(idle, fallback, all_signal)

    def response_idle_strategy(self, stream_id: int, fallback: BackoffIdleStrategy) -> IdleStrategy:
        """The idle strategy of a client that waits for responses on ``stream_id`` (an archive's control responses,
        a cluster's egress) between a request and its answer, given none of its own: on a driver of ours
        (:attr:`wakeup_by_default`) a WakeupIdleStrategy with ``fallback``'s limits, woken by data on
        ``stream_id`` and by our driver's writes to its clients (the waits poll this client's conductor too), each
        park bounded by ``fallback``'s longest sleep: what else they wait for (a publication connecting, a
        writer that does not signal) is found as soon as ``fallback`` would find it. Else ``fallback``. Release
        it with ``close()`` (WakeupIdleStrategy) when done; this client's close releases it too."""
        if not self.wakeup_by_default:
            return fallback
        idle = ClientWakeupIdleStrategy(fallback.max_spins, fallback.max_yields, fallback.min_park_ns,
                                        fallback.max_park_ns, quiet_park_ns=fallback.max_park_ns)
        # quiet: never longer than backoff's longest sleep, even while every client signals (the long quiet bound
        # is for loops whose every wait is signalled; a publication's connection is not)
        return self.bind_agent_idle_strategy(idle, [stream_id], conductor=True, quiet=_same_bound)

    def conductor_waiter(self) -> Waiter | None:
        """A raw waiter woken when our driver writes to its clients (responses, image and counter notices), for an
        application that runs this client's conductor (``use_conductor_agent_invoker``) and parks between its
        duty cycles for at most :meth:`conductor_park_ns` (``aeron.aio`` does). None when the board cannot be
        had. Closed with this client."""
        return self._conductor.conductor_waiter()

    def conductor_park_ns(self) -> int:
        """How long this client's conductor may park now: until its next keepalive, at most the idle sleep (16 ms),
        or the keepalive interval while our driver says every client of it signals (docs/wakeup.md)."""
        return self._conductor.park_ns()

    def quiet_park_ns(self, quiet_ns: int) -> int:
        """How long a wake-up park of this client may grow to while nothing happens: 100 ms while our driver says
        every client of it signals what it writes, else ``quiet_ns`` (docs/wakeup.md); at most 1 ms (Agrona's backoff's
        longest park, the sleep of Aeron's ``ClientConductor.awaitResponse``) while an async add waits to be taken
        (the driver's answer wakes this client's conductor, not the thread that polls ``get_publication`` for it: a
        cluster client following a new leader) and while a user holds brief parks (:meth:`hold_brief_parks`)."""
        quiet = self._quiet
        if quiet is not None:
            return int(quiet(quiet_ns))
        if self._brief_park_holds > 0 or self._conductor.awaits_async_result():
            return min(quiet_ns, DRIVER_BACKOFF_MAX_PARK_NS)
        return quiet_ns

    @property
    def _quiet_fn(self) -> Callable[[int], int]:
        """:meth:`quiet_park_ns` for a strategy to bind: the compiled QuietBound when there is a board (a compiled
        idle reads it without a call into Python)."""
        return self.quiet_park_ns if self._quiet is None else self._quiet      # type: ignore[return-value]

    def hold_brief_parks(self, hold: bool) -> None:
        """``hold=True`` keeps this client's wake-up parks within 1 ms (as :meth:`quiet_park_ns` says) until as many
        ``hold=False`` calls: for a user of this client waiting on what nothing signals, as a cluster client waits for
        its ingress to a new leader to connect (a publication's connection wakes no thread)."""
        self._brief_park_holds = max(0, self._brief_park_holds + (1 if hold else -1))
        if self._quiet is not None:
            self._quiet.holds = self._brief_park_holds

    def bind_agent_idle_strategy(self, idle: IdleStrategy, stream_ids: Iterable[int], *, spies: bool = False,
                                 conductor: bool = False,
                                 quiet: Callable[[int], int] | None = None) -> IdleStrategy:
        """``idle`` bound to park until data for ``stream_ids`` comes (``spies``: also data for spy
        subscriptions; ``conductor``: also our driver's writes to its clients, for an agent that invokes this
        client's conductor) when it is an unbound ``wakeup`` idle strategy and the wake-up board can be had;
        ``idle`` unchanged otherwise. For an agent polling several subscriptions, some added later (a consensus
        module, an archive, a clustered service): it parks on a futex, without the yield a client's loop is given
        (docs/wakeup.md). ``quiet(quiet_ns)`` bounds its parks once nothing happens (WakeupIdleStrategy), by default
        :meth:`quiet_park_ns`; an agent with timers of its own gives a shorter one. Returns ``idle``."""
        if not isinstance(idle, WakeupIdleStrategy) or idle.is_bound:
            return idle
        waiter = self._conductor.new_waiter(list(stream_ids), spies, futex=True,
                                            extra_mask=CLIENTS if conductor else 0)
        if waiter is None:
            return idle
        return idle.bind(waiter, quiet=self._quiet_fn if quiet is None else quiet)

    def stream_wake_signal(self, stream_id: int) -> WakeSignal | None:
        """A handle whose ``signal()`` wakes the parked readers of stream ``stream_id``, for a writer of what they
        wait on besides the stream's data (a position counter: an archive's recording position, a cluster's
        commit position); None without a wake-up board."""
        board = self._conductor.wakeup_board
        return None if board is None else board.signaller(stream_bit(stream_id))

    def wakeup_waiter(self, *subscriptions: Subscription) -> Waiter | None:
        """A raw waiter on the aeron dir's wake-up board woken by data for ``subscriptions`` (every stream when
        none are named): ``prepare()``, poll once more, then ``wait(timeout_ns)``, or watch ``fileno()`` from an
        event loop (``aeron.aio`` does). None when the board cannot be had. Closed with this client."""
        return self._conductor.new_waiter([sub.stream_id for sub in subscriptions] if subscriptions else None,
                                          _has_spy(subscriptions))

    # -- lifecycle ----------------------------------------------------------------------------------------

    def close(self) -> None:
        """Close every resource, tell the driver and stop the conductor. Idempotent; raises IllegalStateError
        when called from inside one of this client's callbacks."""
        conductor = self._conductor
        conductor._ensure_not_reentrant()
        if conductor.in_duty_cycle:
            # from the error handler, on the conductor thread or on an application thread awaiting a response:
            # the conductor finishes the close as the cycle unwinds; its thread then stops by itself
            conductor.close()
        elif self._runner is not None:
            self._runner.close()          # the runner calls conductor.on_close() on its own thread
        if self._invoker is not None:
            self._invoker.close()
        conductor.close()
        handler = self._ctx.close_handler
        if handler is not None and not getattr(self, "_close_notified", False):
            self._close_notified = True
            handler()

    def __enter__(self) -> "Aeron":
        """Return the client; the ``with`` block closes it."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the client."""
        self.close()

    def __repr__(self) -> str:
        """Client id, directory and state."""
        state = "closed" if self.is_closed else "connected"
        return f"<Aeron client_id={self.client_id} dir={self._ctx.aeron_dir!r} {state}>"


def _same_bound(quiet_ns: int) -> int:
    """A park's quiet bound left as it is (Aeron.response_idle_strategy)."""
    return quiet_ns


def _has_spy(subscriptions: tuple[Subscription, ...]) -> bool:
    """True when one of ``subscriptions`` is a spy (it reads a network publication's log: woken by its offers)."""
    return any(sub.channel.startswith("aeron-spy:") for sub in subscriptions)
