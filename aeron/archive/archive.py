# SPDX-License-Identifier: Apache-2.0
"""Archive, Archive.Context and ArchivingMediaDriver (Aeron ``io.aeron.archive.Archive``).

Settings use Aeron's ``aeron.archive.*`` property names or their ``AERON_ARCHIVE_*`` variables.
``Archive.launch(ctx)`` connects a client to the driver in ``ctx.aeron_dir`` and starts the ArchiveConductor on
the threads ``ctx.threading_mode`` asks for; ``ArchivingMediaDriver.launch()`` starts our driver and an archive
on it in one process.
"""
from __future__ import annotations

import enum
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from aeron._core.logbuffer import TERM_MAX_LENGTH, TERM_MIN_LENGTH
from aeron.client.aeron import Aeron
from aeron.client.context import Context as AeronContext
from aeron.common.agent import (DRIVER_BACKOFF_MAX_PARK_NS, AgentInvoker, AgentRunner, IdleStrategy,
                                idle_strategy_from_name)
from aeron.common.errors import ConfigurationError, IllegalStateError, InvalidArgumentError
from aeron.common.paths import delete_aeron_dir, describe_failures
from aeron.common.security import (AuthorisationService, DefaultAuthenticator, as_authorisation_service,
                                   authorisation_service_from_name)
from aeron.common.settings import (Setting, SettingsContext, enum_parser, parse_bool, parse_duration_ns, parse_int,
                                   parse_long, parse_size, parse_str)
from aeron.driver.media_driver import MediaDriver

from aeron.archive.archive_conductor import ArchiveConductor
from aeron.archive.checksums import new_checksum
from aeron.archive.configuration import (
    CONTROL_CHANNEL_PROP_NAME, CONTROL_MTU_LENGTH_DEFAULT, CONTROL_MTU_LENGTH_PROP_NAME, CONTROL_STREAM_ID_DEFAULT,
    CONTROL_STREAM_ID_PROP_NAME, CONTROL_TERM_BUFFER_LENGTH_DEFAULT, CONTROL_TERM_BUFFER_LENGTH_PROP_NAME,
    CONTROL_TERM_BUFFER_SPARSE_DEFAULT, CONTROL_TERM_BUFFER_SPARSE_PROP_NAME, LOCAL_CONTROL_CHANNEL_DEFAULT,
    LOCAL_CONTROL_CHANNEL_PROP_NAME, LOCAL_CONTROL_STREAM_ID_DEFAULT, LOCAL_CONTROL_STREAM_ID_PROP_NAME,
    RECORDING_EVENTS_CHANNEL_PROP_NAME, RECORDING_EVENTS_ENABLED_DEFAULT, RECORDING_EVENTS_ENABLED_PROP_NAME,
    RECORDING_EVENTS_STREAM_ID_DEFAULT, RECORDING_EVENTS_STREAM_ID_PROP_NAME)

KIB = 1024
MIB = 1024 * KIB


class ArchiveThreadingMode(enum.Enum):
    """Aeron's ArchiveThreadingMode: DEDICATED (conductor, recorder and replayer each on a thread), SHARED (one
    thread for all three), INVOKER (no thread: the application calls ``Archive.invoker.invoke()``)."""

    DEDICATED = "DEDICATED"
    SHARED = "SHARED"
    INVOKER = "INVOKER"


def _checksum(text: str) -> str | None:
    # Aeron's checksum names (Java class names, CRC-32 / CRC-32C); stored as the canonical name
    name = text.strip()
    if not name:
        return None
    try:
        return new_checksum(name).name
    except InvalidArgumentError as ex:
        raise ValueError(str(ex)) from None


_SETTINGS: tuple[Setting, ...] = (
    Setting("aeron_dir", "aeron.dir", None, parse_str),
    Setting("archive_dir", "aeron.archive.dir", "aeron-archive", parse_str),
    Setting("mark_file_dir", "aeron.archive.mark.file.dir", None, parse_str),
    Setting("error_buffer_length", "aeron.archive.error.buffer.length", MIB, parse_size),
    Setting("delete_archive_on_start", "aeron.archive.dir.delete.on.start", False, parse_bool),
    Setting("control_channel_enabled", "aeron.archive.control.channel.enabled", True, parse_bool),
    Setting("control_channel", CONTROL_CHANNEL_PROP_NAME, None, parse_str),
    Setting("control_stream_id", CONTROL_STREAM_ID_PROP_NAME, CONTROL_STREAM_ID_DEFAULT, parse_int),
    Setting("local_control_channel", LOCAL_CONTROL_CHANNEL_PROP_NAME, LOCAL_CONTROL_CHANNEL_DEFAULT, parse_str),
    Setting("local_control_stream_id", LOCAL_CONTROL_STREAM_ID_PROP_NAME, LOCAL_CONTROL_STREAM_ID_DEFAULT,
            parse_int),
    Setting("control_term_buffer_length", CONTROL_TERM_BUFFER_LENGTH_PROP_NAME, CONTROL_TERM_BUFFER_LENGTH_DEFAULT,
            parse_size),
    Setting("control_mtu_length", CONTROL_MTU_LENGTH_PROP_NAME, CONTROL_MTU_LENGTH_DEFAULT, parse_size),
    Setting("control_term_buffer_sparse", CONTROL_TERM_BUFFER_SPARSE_PROP_NAME, CONTROL_TERM_BUFFER_SPARSE_DEFAULT,
            parse_bool),
    Setting("recording_events_enabled", RECORDING_EVENTS_ENABLED_PROP_NAME, RECORDING_EVENTS_ENABLED_DEFAULT,
            parse_bool),
    Setting("recording_events_channel", RECORDING_EVENTS_CHANNEL_PROP_NAME, None, parse_str),
    Setting("recording_events_stream_id", RECORDING_EVENTS_STREAM_ID_PROP_NAME, RECORDING_EVENTS_STREAM_ID_DEFAULT,
            parse_int),
    Setting("replication_channel", "aeron.archive.replication.channel", None, parse_str),
    Setting("segment_file_length", "aeron.archive.segment.file.length", 128 * MIB, parse_size),
    # Aeron's default is the default segment length, not the configured one
    Setting("low_storage_space_threshold", "aeron.archive.low.storage.space.threshold", 128 * MIB, parse_size),
    Setting("file_sync_level", "aeron.archive.file.sync.level", 0, parse_int),
    Setting("catalog_file_sync_level", "aeron.archive.catalog.file.sync.level", None, parse_int),
    Setting("catalog_capacity", "aeron.archive.catalog.capacity", MIB, parse_size),
    Setting("file_io_max_length", "aeron.archive.file.io.max.length", MIB, parse_size),
    Setting("max_concurrent_recordings", "aeron.archive.max.concurrent.recordings", 20, parse_int),
    Setting("max_concurrent_replays", "aeron.archive.max.concurrent.replays", 20, parse_int),
    Setting("connect_timeout_ns", "aeron.archive.connect.timeout", 5_000_000_000, parse_duration_ns),
    Setting("session_liveness_check_interval_ns", "aeron.archive.session.liveness.check.interval",
            1_000_000_000, parse_duration_ns),
    Setting("replay_linger_timeout_ns", "aeron.archive.replay.linger.timeout", 5_000_000_000, parse_duration_ns),
    Setting("threading_mode", "aeron.archive.threading.mode", ArchiveThreadingMode.DEDICATED,
            enum_parser(ArchiveThreadingMode)),
    Setting("idle_strategy", "aeron.archive.idle.strategy", "backoff", parse_str),
    Setting("archive_id", "aeron.archive.id", -1, parse_long),
    Setting("record_checksum", "aeron.archive.record.checksum", None, _checksum),
    Setting("replay_checksum", "aeron.archive.replay.checksum", None, _checksum),
    Setting("authorisation_service_supplier", "aeron.archive.authorisation.service.supplier", "", parse_str),
)


def usable_space(path: str) -> int:
    """Bytes still writable by an unprivileged process on the file system holding ``path`` (Java's
    ``FileStore.getUsableSpace``: available blocks times the fragment size)."""
    stat = os.statvfs(path)
    return stat.f_bavail * stat.f_frsize


# Aeron's DefaultAuthenticatorSupplier: every session authenticated at once with an empty principal (see
# aeron.common.security for what an authenticator is asked)
AllowAllAuthenticator = DefaultAuthenticator


class Context(SettingsContext):
    """Archive configuration. ``Context(properties=None, *, environ=None, **attributes)``: defaults, then
    ``environ``'s ``AERON_ARCHIVE_*``/``AERON_DIR`` values (``os.environ`` unless given), then ``properties`` (a
    mapping or ``key=value`` strings with Aeron's property names), then attributes, each validated as assigned.

    Besides the properties: ``authenticator`` (default: :class:`AllowAllAuthenticator`), ``authorisation_service``
    (an :class:`aeron.common.security.AuthorisationService` or a function with its arguments; default: the one
    ``aeron.archive.authorisation.service.supplier`` names, ALLOW_ALL when unset), ``usable_space_probe`` (a
    function returning the usable bytes of the archive directory's file system, checked against
    ``low_storage_space_threshold``; default: :func:`usable_space` of the directory), ``aeron`` (an Aeron client to
    use instead of connecting one to ``aeron_dir``), ``error_handler``, ``epoch_clock_ms`` and ``nano_clock``.
    """

    aeron_dir: str | None
    archive_dir: str
    mark_file_dir: str | None
    error_buffer_length: int
    delete_archive_on_start: bool
    control_channel_enabled: bool
    control_channel: str | None
    control_stream_id: int
    local_control_channel: str
    local_control_stream_id: int
    control_term_buffer_length: int
    control_mtu_length: int
    control_term_buffer_sparse: bool
    recording_events_enabled: bool
    recording_events_channel: str | None
    recording_events_stream_id: int
    replication_channel: str | None
    segment_file_length: int
    low_storage_space_threshold: int
    file_sync_level: int
    catalog_file_sync_level: int | None
    catalog_capacity: int
    file_io_max_length: int
    max_concurrent_recordings: int
    max_concurrent_replays: int
    connect_timeout_ns: int
    session_liveness_check_interval_ns: int
    replay_linger_timeout_ns: int
    threading_mode: ArchiveThreadingMode
    idle_strategy: str
    archive_id: int
    record_checksum: str | None
    replay_checksum: str | None
    authorisation_service_supplier: str

    SETTINGS = _SETTINGS
    CONTEXT_NAME = "Archive.Context"
    COMPONENT = "archive"
    EXTRA_ATTRS = ("authenticator", "authorisation_service", "usable_space_probe", "epoch_clock_ms", "nano_clock",
                   "error_handler", "aeron")

    def __init__(self, properties: Mapping[str, Any] | Iterable[str] | None = None, *,
                 environ: Mapping[str, str] | None = None, **attributes: Any) -> None:
        """See the class docstring; raises ConfigurationError naming the property for a bad value or name."""
        self.authenticator: Any = AllowAllAuthenticator()
        self.authorisation_service: AuthorisationService | None = None
        self.usable_space_probe: Callable[[], int] | None = None
        self.aeron: Aeron | None = None
        self.error_handler: Callable[[BaseException], None] | None = None
        self.epoch_clock_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000
        self.nano_clock: Callable[[], int] = time.monotonic_ns
        self._concluded = False
        self._supplied_authorisation: tuple[str | None, AuthorisationService | None] = (None, None)
        super().__init__(properties, environ=environ, **attributes)

    @classmethod
    def usage(cls) -> str:
        """Every property the archive reads, with its variable and its default (``python -m aeron.archive --help``)."""
        return cls.describe_settings("Archive properties (environment variable), default:")

    def validate(self) -> "Context":
        """Check the settings together, changing nothing (ConfigurationError naming the property): what
        :meth:`conclude` checks, so a launcher can refuse a bad configuration before it starts anything."""
        seg = self.segment_file_length
        if not isinstance(seg, int) or seg & (seg - 1) or not TERM_MIN_LENGTH <= seg <= TERM_MAX_LENGTH:
            raise ConfigurationError(f"aeron.archive.segment.file.length={seg}: a power of two in "
                                     f"[{TERM_MIN_LENGTH}, {TERM_MAX_LENGTH}]")
        io = self.file_io_max_length
        if io & (io - 1) or io < 64 * KIB:
            raise ConfigurationError(f"aeron.archive.file.io.max.length={io}: a power of two >= 65536")
        if self.file_sync_level not in (0, 1, 2):
            raise ConfigurationError(f"aeron.archive.file.sync.level={self.file_sync_level}: 0, 1 or 2")
        catalog_sync = self.file_sync_level if self.catalog_file_sync_level is None else self.catalog_file_sync_level
        if catalog_sync < self.file_sync_level or catalog_sync > 2:
            raise ConfigurationError("aeron.archive.catalog.file.sync.level must be in [file.sync.level, 2]")
        if self.control_channel_enabled:
            if not self.control_channel:
                raise ConfigurationError("aeron.archive.control.channel must be set (or set "
                                         "aeron.archive.control.channel.enabled=false for IPC only)")
            if not self.control_channel.startswith("aeron:udp"):
                raise ConfigurationError(f"aeron.archive.control.channel must be UDP: {self.control_channel}")
        if self.recording_events_enabled and not self.recording_events_channel:
            raise ConfigurationError("aeron.archive.recording.events.channel must be set when events are enabled")
        for name in ("control_stream_id", "local_control_stream_id", "max_concurrent_recordings",
                     "max_concurrent_replays"):
            if not isinstance(getattr(self, name), int):
                raise ConfigurationError(f"{self.setting(name).prop} must be an int")
        if self.error_buffer_length < MIB:
            raise ConfigurationError(f"aeron.archive.error.buffer.length={self.error_buffer_length}: at least 1 MiB")
        if not isinstance(self.low_storage_space_threshold, int) or self.low_storage_space_threshold < 0:
            raise ConfigurationError(f"aeron.archive.low.storage.space.threshold={self.low_storage_space_threshold}"
                                     ": a byte count >= 0")
        supplier = self.authorisation_service_supplier
        if self.authorisation_service is None and self._supplied_authorisation[0] != supplier:
            # the supplier is called once however often this runs: conclude, which validates first, uses it
            self._supplied_authorisation = (supplier, authorisation_service_from_name(supplier))
        return self

    def conclude(self) -> "Context":
        """Check the settings (:meth:`validate`) and fill in what they imply; a context serves one archive."""
        if self._concluded:
            raise IllegalStateError("Archive.Context already used; make a new one")
        self.validate()
        catalog_sync = self.catalog_file_sync_level
        self.catalog_file_sync_level = self.file_sync_level if catalog_sync is None else catalog_sync
        self.archive_dir = os.path.abspath(self.archive_dir)
        if self.authorisation_service is None:
            self.authorisation_service = self._supplied_authorisation[1]
        else:
            self.authorisation_service = as_authorisation_service(self.authorisation_service)
        if self.usable_space_probe is None:
            archive_dir = self.archive_dir
            self.usable_space_probe = lambda: usable_space(archive_dir)
        self.mark_file_dir = os.path.abspath(self.mark_file_dir) if self.mark_file_dir else self.archive_dir
        self._concluded = True
        return self

    def make_idle_strategy(self) -> IdleStrategy:
        """A fresh idle strategy named by ``aeron.archive.idle.strategy``."""
        return idle_strategy_from_name(self.idle_strategy)

    def __repr__(self) -> str:
        """The directory, the control channels and the threading mode."""
        return (f"Archive.Context(archive_dir={self.archive_dir!r}, control_channel={self.control_channel!r}, "
                f"local_control_channel={self.local_control_channel!r}, threading_mode={self.threading_mode.name})")


class Archive:
    """A running archive. ``Archive.launch(ctx)``; ``close()`` (idempotent) stops it and closes its client."""

    Context = Context

    def __init__(self, context: Context) -> None:
        """Conclude ``context``, connect a client (unless ``context.aeron`` is given) and start the conductor."""
        self._ctx = context.conclude()
        if context.delete_archive_on_start:
            # aeron.archive.dir.delete.on.start: a fresh directory (and mark file directory) every start
            for directory in {context.archive_dir, context.mark_file_dir}:
                if directory and os.path.isdir(directory):
                    shutil.rmtree(directory)
        self._closed = False
        self._lock = threading.Lock()
        self._own_aeron = context.aeron is None
        self._aeron = context.aeron if context.aeron is not None else Aeron.connect(
            AeronContext(aeron_dir=context.aeron_dir))
        self._runners: list[AgentRunner] = []
        self._invoker: AgentInvoker | None = None
        try:
            self._conductor = ArchiveConductor(self._ctx, self._aeron)
            mode = self._ctx.threading_mode
            handler = self._ctx.error_handler or self._conductor.on_error
            if mode is ArchiveThreadingMode.INVOKER:
                self._invoker = AgentInvoker(self._conductor.shared_agent(), error_handler=handler)
                self._invoker.start()
            elif mode is ArchiveThreadingMode.SHARED:
                self._start(self._conductor.shared_agent(), handler)
            else:
                self._start(self._conductor, handler)
                self._start(self._conductor.recorder, handler)
                self._start(self._conductor.replayer, handler)
        except BaseException:
            self._stop_agents()
            if self._own_aeron:
                self._aeron.close()
            raise

    def _start(self, agent: Any, handler: Callable[[BaseException], None]) -> None:
        # a ``wakeup`` idle strategy parks until data comes for the control streams, a recording through a spy, or
        # (added by the conductor as it subscribes) a recorded stream
        aeron = self._aeron
        replays = self._conductor.replay_sessions

        def quiet(quiet_ns: int) -> int:
            # a replay waits for its publication to connect, and then on flow control, which nothing signals: parks
            # within backoff's 1 ms while one runs (a consensus module's log replay in an election waits on it)
            return min(quiet_ns, DRIVER_BACKOFF_MAX_PARK_NS) if replays else aeron.quiet_park_ns(quiet_ns)

        idle = aeron.bind_agent_idle_strategy(
            self._ctx.make_idle_strategy(), (self._ctx.control_stream_id, self._ctx.local_control_stream_id),
            spies=True, quiet=quiet)
        waiter = getattr(idle, "waiter", None)
        if waiter is not None:
            self._conductor.wake_waiters.append(waiter)
        runner = AgentRunner(agent, idle, error_handler=handler)
        self._runners.append(runner)
        runner.start()

    @classmethod
    def launch(cls, context: Context | None = None) -> "Archive":
        """Start an archive with ``context`` (a default Context when None)."""
        return cls(context if context is not None else Context())

    @property
    def context(self) -> Context:
        """The concluded Context."""
        return self._ctx

    @property
    def conductor(self) -> ArchiveConductor:
        """The archive conductor (tests and tools)."""
        return self._conductor

    @property
    def invoker(self) -> AgentInvoker | None:
        """The invoker to call in INVOKER mode (None otherwise)."""
        return self._invoker

    @property
    def archive_id(self) -> int:
        """The archive id (configured, or the client id)."""
        return self._conductor.archive_id

    def _stop_agents(self) -> None:
        for runner in reversed(self._runners):
            runner.close()
        self._runners.clear()
        if self._invoker is not None:
            self._invoker.close()

    def close(self) -> None:
        """Stop the agents, close every session, the catalog and the client (if the archive made it)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._stop_agents()
        if self._invoker is None and not self._runners:
            self._conductor.close_once()
        if self._own_aeron:
            self._aeron.close()

    def __enter__(self) -> "Archive":
        """Return the archive; the ``with`` block closes it."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the archive."""
        self.close()


class ArchivingMediaDriver:
    """Our media driver and an archive on it, in one process (Aeron ``ArchivingMediaDriver``)."""

    def __init__(self, driver: MediaDriver, archive: Archive) -> None:
        """Made by :meth:`launch`."""
        self.driver = driver
        self.archive = archive

    @classmethod
    def launch(cls, driver_context: MediaDriver.Context | None = None,
               archive_context: Context | None = None) -> "ArchivingMediaDriver":
        """Launch a driver (``driver_context``, default Context) then an archive on its directory.

        Both contexts are checked before anything starts (ConfigurationError); when the archive fails to start,
        the driver is closed and its directory removed if this launch made it."""
        dctx = driver_context if driver_context is not None else MediaDriver.Context()
        actx = archive_context if archive_context is not None else Context()
        dctx.conclude()
        actx.aeron_dir = dctx.resolved_dir()
        actx.validate()
        made_dir = not os.path.exists(dctx.resolved_dir())
        driver = MediaDriver.launch(dctx)
        try:
            actx.aeron_dir = driver.aeron_dir
            archive = Archive.launch(actx)
        except BaseException:
            driver.close()
            if made_dir and os.path.isdir(driver.aeron_dir):
                failures = delete_aeron_dir(driver.aeron_dir)
                if failures:
                    sys.stderr.write(f"WARNING: aeron dir {driver.aeron_dir} not fully deleted: "
                                     f"{describe_failures(failures)}\n")
            raise
        return cls(driver, archive)

    def close(self) -> None:
        """Close the archive, then the driver."""
        try:
            self.archive.close()
        finally:
            self.driver.close()

    def __enter__(self) -> "ArchivingMediaDriver":
        """Return self; the ``with`` block closes both."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the archive and the driver."""
        self.close()
