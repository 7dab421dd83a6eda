# SPDX-License-Identifier: Apache-2.0
"""Client configuration (Aeron ``Aeron.Context``), with the defaults and environment variables of the C client."""
from __future__ import annotations

import os
import sys
import traceback
from typing import TYPE_CHECKING

from aeron.common.agent import AgentInvoker, SleepingIdleStrategy
from aeron.common.errors import ConfigurationError, IllegalStateError
from aeron.common.paths import default_aeron_dir
from aeron.common.settings import Setting, parse_duration_ns, parse_long

if TYPE_CHECKING:
    from aeron.client.handlers import (AvailableCounterHandler, AvailableImageHandler, CloseHandler, ErrorHandler,
                                       PublicationErrorFrameHandler, UnavailableCounterHandler,
                                       UnavailableImageHandler)
    from aeron.common.agent import IdleStrategy

MS = 1_000_000
DEFAULT_KEEPALIVE_INTERVAL_NS = 500 * MS


# the settings the client reads from its environment, on the common table (Aeron.Configuration's properties)
_DRIVER_TIMEOUT = Setting("driver_timeout_ms", "aeron.driver.timeout", 10_000, parse_long)
_RESOURCE_LINGER_DURATION = Setting("resource_linger_duration_ns", "aeron.client.resource.linger.duration",
                                    3_000 * MS, parse_duration_ns)
_IDLE_SLEEP_DURATION = Setting("idle_sleep_duration_ns", "aeron.client.idle.sleep.duration", 16 * MS,
                               parse_duration_ns)


def default_error_handler(error: BaseException) -> None:
    """Print to stderr, as Aeron's default error handler does."""
    print(f"aeron client error: {error!r}", file=sys.stderr, flush=True)
    if error.__traceback__ is not None:
        traceback.print_exception(type(error), error, error.__traceback__, file=sys.stderr)


class Context:
    """Settings of one :class:`aeron.Aeron` client. Attributes may be set by keyword or afterwards, until
    ``Aeron.connect`` concludes the context.

    ``aeron_dir`` (``AERON_DIR``), ``driver_timeout_ms`` (``AERON_DRIVER_TIMEOUT``, 10 s: the attach deadline,
    the longest a request waits, and the oldest driver heartbeat accepted), ``keepalive_interval_ns`` (500 ms),
    ``resource_linger_duration_ns`` (``AERON_CLIENT_RESOURCE_LINGER_DURATION``, 3 s: how long a closed image's
    log stays mapped for a poll that is still running), ``idle_sleep_duration_ns``
    (``AERON_CLIENT_IDLE_SLEEP_DURATION``, 16 ms: the conductor thread's idle sleep),
    ``use_conductor_agent_invoker`` (no conductor thread: the application calls ``Aeron.conductor_agent_invoker
    .invoke()``), ``idle_strategy`` (overrides the sleep), handlers for errors, images and counters,
    ``client_name`` (appended to the heartbeat counter's label), ``conductor_parking`` (True: with no
    ``idle_strategy`` given, the conductor thread parks on the wake-up board until our driver writes to its
    clients or a keepalive is due, instead of sleeping 16 ms at a time; docs/wakeup.md),
    ``driver_agent_invoker`` (an embedded driver in INVOKER mode on this client's thread, Aeron's
    ``Context.driverAgentInvoker``: a synchronous request runs it while it waits for the driver's answer, which
    nothing else on the thread would produce).
    """

    __slots__ = ("aeron_dir", "driver_timeout_ms", "keepalive_interval_ns", "resource_linger_duration_ns",
                 "idle_sleep_duration_ns", "use_conductor_agent_invoker", "idle_strategy", "error_handler",
                 "available_image_handler", "unavailable_image_handler", "available_counter_handler",
                 "unavailable_counter_handler", "close_handler", "publication_error_frame_handler",
                 "client_name", "pre_touch_mapped_memory", "conductor_parking", "driver_agent_invoker",
                 "default_idle_strategy", "_concluded")

    def __init__(self, aeron_dir: str | os.PathLike[str] | None = None, *,
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
                 driver_agent_invoker: AgentInvoker | None = None) -> None:
        """Settings by keyword; the ones not given come from the environment variables above, then the defaults."""
        self.aeron_dir = os.fspath(aeron_dir) if aeron_dir is not None else (os.environ.get("AERON_DIR") or None)
        self.driver_timeout_ms = driver_timeout_ms if driver_timeout_ms is not None else _DRIVER_TIMEOUT.value()
        self.keepalive_interval_ns = keepalive_interval_ns
        self.resource_linger_duration_ns = (
            resource_linger_duration_ns if resource_linger_duration_ns is not None
            else _RESOURCE_LINGER_DURATION.value())
        self.idle_sleep_duration_ns = (
            idle_sleep_duration_ns if idle_sleep_duration_ns is not None else _IDLE_SLEEP_DURATION.value())
        self.use_conductor_agent_invoker = use_conductor_agent_invoker
        self.idle_strategy = idle_strategy
        self.error_handler = error_handler
        self.available_image_handler = available_image_handler
        self.unavailable_image_handler = unavailable_image_handler
        self.available_counter_handler = available_counter_handler
        self.unavailable_counter_handler = unavailable_counter_handler
        self.close_handler = close_handler
        self.publication_error_frame_handler = publication_error_frame_handler
        self.client_name = client_name
        self.pre_touch_mapped_memory = pre_touch_mapped_memory
        # with no idle strategy given, the conductor thread parks on the wake-up board (docs/wakeup.md); False
        # keeps the 16 ms sleeps (an escape hatch)
        self.conductor_parking = conductor_parking
        self.driver_agent_invoker = driver_agent_invoker
        # no idle strategy given: the conductor thread may park on the wake-up board instead (set by conclude)
        self.default_idle_strategy = False
        self._concluded = False

    def _settings(self) -> dict[str, object]:
        """Every setting by name (what ``Aeron.connect`` compares with a default Context's)."""
        return {name: getattr(self, name) for name in self.__slots__
                if name not in ("default_idle_strategy", "_concluded")}

    def conclude(self) -> "Context":
        """Validate and fill defaults; a context is used by one client only."""
        if self._concluded:
            raise IllegalStateError("Context already used by a client; make a new one")
        if not self.aeron_dir:
            self.aeron_dir = default_aeron_dir()
        self.aeron_dir = os.path.abspath(os.fspath(self.aeron_dir))
        for name in ("driver_timeout_ms", "keepalive_interval_ns", "resource_linger_duration_ns",
                     "idle_sleep_duration_ns"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ConfigurationError(f"{name} must be a non-negative int, got {value!r}")
        if self.driver_timeout_ms == 0 or self.keepalive_interval_ns == 0:
            raise ConfigurationError("driver_timeout_ms and keepalive_interval_ns must be > 0")
        if self.error_handler is None:
            self.error_handler = default_error_handler
        if self.idle_strategy is None:
            self.default_idle_strategy = True
            self.idle_strategy = SleepingIdleStrategy(self.idle_sleep_duration_ns)
        self._concluded = True
        return self

    @property
    def cnc_file_name(self) -> str:
        """Path of the driver's cnc.dat in ``aeron_dir`` (the default directory when unset)."""
        return os.path.join(self.aeron_dir or default_aeron_dir(), "cnc.dat")

    def __repr__(self) -> str:
        """The directory, timeout and invoker setting."""
        return (f"Context(aeron_dir={self.aeron_dir!r}, driver_timeout_ms={self.driver_timeout_ms}, "
                f"use_conductor_agent_invoker={self.use_conductor_agent_invoker})")
