# SPDX-License-Identifier: Apache-2.0
"""The clustered service container (Aeron's ``io.aeron.cluster.service.ClusteredServiceContainer``):
:class:`ClusteredServiceContainer` hosts a ``ClusteredService`` in a cluster, configured by its :class:`Context`;
``Configuration`` holds the constants and ``aeron.cluster.*`` properties of the container, several of which the
consensus module reads too (cluster id, directories, the control channel and its streams, the snapshot channel),
each with its default, its ``AERON_CLUSTER_*`` environment variable and its parser (``Configuration.SETTINGS``)."""
from __future__ import annotations

import copy
import dataclasses
import functools
import importlib
import os
import sys
import traceback
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from aeron._core.cnc import CNC_FILE, FILE_PAGE_SIZE_FIELD_OFFSET, semantic_version_compose, semantic_version_major
from aeron._core.codecs.cluster_mark import ClusterComponentType
from aeron._core.error_log import DistinctErrorLog
from aeron.archive.client import Context as ArchiveContext
from aeron.archive.configuration import CONTROL_RESPONSE_STREAM_ID_DEFAULT, LOCAL_CONTROL_CHANNEL_DEFAULT, \
    LOCAL_CONTROL_STREAM_ID_DEFAULT
from aeron.client.aeron import Aeron
from aeron.client.context import Context as AeronContext
from aeron.cluster.service.cluster_counters import (
    CLUSTER_CLUSTERED_SERVICE_CYCLE_TIME_THRESHOLD_EXCEEDED_TYPE_ID,
    CLUSTER_CLUSTERED_SERVICE_ERROR_COUNT_TYPE_ID,
    CLUSTER_CLUSTERED_SERVICE_MAX_CYCLE_TIME_TYPE_ID,
    CLUSTER_COMMIT_POSITION_TYPE_ID,
    CLUSTER_NODE_ROLE_TYPE_ID,
    CLUSTERED_SERVICE_MAX_SNAPSHOT_DURATION_TYPE_ID,
    CLUSTERED_SERVICE_SNAPSHOT_DURATION_THRESHOLD_EXCEEDED_TYPE_ID,
    ClusterCounters,
)
from aeron.cluster.service.cluster_mark_file import ClusterMarkFile
from aeron.cluster.service.snapshot_duration_tracker import SnapshotDurationTracker
from aeron.common.agent import AgentInvoker, AgentRunner, IdleStrategy, epoch_ms, idle_strategy_from_name, nano_time
from aeron.common.channel_uri import ALIAS_PARAM_NAME, ChannelUri
from aeron.common.constants import NULL_VALUE
from aeron.common.errors import ClusterError, ConfigurationError, IllegalStateError
from aeron.common.mark_file import ensure_mark_file_link
from aeron.common.paths import default_aeron_dir
from aeron.common.settings import Setting, SettingsTable, parse_bool, parse_duration_ns, parse_int, parse_size, \
    property_items, resolve
from aeron.common.version import __version__
from aeron.driver.duty_cycle_stall_tracker import DutyCycleStallTracker

__all__ = ["ClusteredServiceContainer", "Configuration", "Context", "container_property",
           "semantic_versioning_validator"]

IPC_CHANNEL = "aeron:ipc"
COMMIT = "aeron-py"     # what the "commit=" of versioned counter labels names (no git hash is built in)


_SECOND_NS = 1_000_000_000
_MILLI_NS = 1_000_000


class Configuration(SettingsTable):
    """``ClusteredServiceContainer.Configuration``: the service container's constants and properties."""

    SNAPSHOT_TYPE_ID = 2                # typeId of a clustered service's SnapshotMarker
    MARK_FILE_UPDATE_INTERVAL_NS = _SECOND_NS
    LIVENESS_TIMEOUT_MS = 10 * (MARK_FILE_UPDATE_INTERVAL_NS // _MILLI_NS)
    MAX_SERVICE_COUNT = 10
    CLUSTER_NODE_ROLE_TYPE_ID = CLUSTER_NODE_ROLE_TYPE_ID
    COMMIT_POSITION_TYPE_ID = CLUSTER_COMMIT_POSITION_TYPE_ID
    CLUSTERED_SERVICE_ERROR_COUNT_TYPE_ID = CLUSTER_CLUSTERED_SERVICE_ERROR_COUNT_TYPE_ID

    CLUSTER_ID_PROP_NAME = "aeron.cluster.id"
    CLUSTER_ID_DEFAULT = 0
    SERVICE_ID_PROP_NAME = "aeron.cluster.service.id"
    SERVICE_ID_DEFAULT = 0
    SERVICE_NAME_PROP_NAME = "aeron.cluster.service.name"
    SERVICE_NAME_DEFAULT = "clustered-service"
    SERVICE_CLASS_NAME_PROP_NAME = "aeron.cluster.service.class.name"
    REPLAY_CHANNEL_PROP_NAME = "aeron.cluster.replay.channel"
    REPLAY_CHANNEL_DEFAULT = "aeron:ipc"
    REPLAY_STREAM_ID_PROP_NAME = "aeron.cluster.replay.stream.id"
    REPLAY_STREAM_ID_DEFAULT = 103
    CONTROL_CHANNEL_PROP_NAME = "aeron.cluster.control.channel"
    CONTROL_CHANNEL_DEFAULT = "aeron:ipc?term-length=128k"
    SERVICE_STREAM_ID_PROP_NAME = "aeron.cluster.service.stream.id"
    SERVICE_STREAM_ID_DEFAULT = 104
    CONSENSUS_MODULE_STREAM_ID_PROP_NAME = "aeron.cluster.consensus.module.stream.id"
    CONSENSUS_MODULE_STREAM_ID_DEFAULT = 105
    SNAPSHOT_CHANNEL_PROP_NAME = "aeron.cluster.snapshot.channel"
    SNAPSHOT_CHANNEL_DEFAULT = "aeron:ipc?alias=snapshot"
    SNAPSHOT_STREAM_ID_PROP_NAME = "aeron.cluster.snapshot.stream.id"
    SNAPSHOT_STREAM_ID_DEFAULT = 106
    CLUSTER_DIR_PROP_NAME = "aeron.cluster.dir"
    CLUSTER_DIR_DEFAULT = "aeron-cluster"
    CLUSTER_SERVICES_DIR_PROP_NAME = "aeron.cluster.services.dir"
    MARK_FILE_DIR_PROP_NAME = "aeron.cluster.mark.file.dir"
    ERROR_BUFFER_LENGTH_PROP_NAME = "aeron.cluster.service.error.buffer.length"
    ERROR_BUFFER_LENGTH_DEFAULT = 1024 * 1024
    RESPONDER_SERVICE_PROP_NAME = "aeron.cluster.service.responder"
    RESPONDER_SERVICE_DEFAULT = True
    LOG_FRAGMENT_LIMIT_PROP_NAME = "aeron.cluster.log.fragment.limit"
    LOG_FRAGMENT_LIMIT_DEFAULT = 50
    DELEGATING_ERROR_HANDLER_PROP_NAME = "aeron.cluster.service.delegating.error.handler"
    CYCLE_THRESHOLD_PROP_NAME = "aeron.cluster.service.cycle.threshold"
    CYCLE_THRESHOLD_DEFAULT_NS = 100 * _MILLI_NS
    SNAPSHOT_DURATION_THRESHOLD_PROP_NAME = "aeron.cluster.service.snapshot.threshold"
    SNAPSHOT_DURATION_THRESHOLD_DEFAULT_NS = 1000 * _MILLI_NS
    CLUSTER_IDLE_STRATEGY_PROP_NAME = "aeron.cluster.idle.strategy"
    DEFAULT_IDLE_STRATEGY = "org.agrona.concurrent.BackoffIdleStrategy"

    SETTINGS: tuple[Setting, ...] = (
        Setting("cluster_id", CLUSTER_ID_PROP_NAME, CLUSTER_ID_DEFAULT, parse_int),
        Setting("service_id", SERVICE_ID_PROP_NAME, SERVICE_ID_DEFAULT, parse_int),
        Setting("service_name", SERVICE_NAME_PROP_NAME, SERVICE_NAME_DEFAULT),
        Setting("service_class_name", SERVICE_CLASS_NAME_PROP_NAME, None),
        Setting("replay_channel", REPLAY_CHANNEL_PROP_NAME, REPLAY_CHANNEL_DEFAULT),
        Setting("replay_stream_id", REPLAY_STREAM_ID_PROP_NAME, REPLAY_STREAM_ID_DEFAULT, parse_int),
        Setting("control_channel", CONTROL_CHANNEL_PROP_NAME, CONTROL_CHANNEL_DEFAULT),
        Setting("service_stream_id", SERVICE_STREAM_ID_PROP_NAME, SERVICE_STREAM_ID_DEFAULT, parse_int),
        Setting("consensus_module_stream_id", CONSENSUS_MODULE_STREAM_ID_PROP_NAME,
                CONSENSUS_MODULE_STREAM_ID_DEFAULT, parse_int),
        Setting("snapshot_channel", SNAPSHOT_CHANNEL_PROP_NAME, SNAPSHOT_CHANNEL_DEFAULT),
        Setting("snapshot_stream_id", SNAPSHOT_STREAM_ID_PROP_NAME, SNAPSHOT_STREAM_ID_DEFAULT, parse_int),
        Setting("cluster_dir", CLUSTER_DIR_PROP_NAME, CLUSTER_DIR_DEFAULT),
        Setting("cluster_services_dir", CLUSTER_SERVICES_DIR_PROP_NAME, None),
        Setting("mark_file_dir", MARK_FILE_DIR_PROP_NAME, None),
        Setting("error_buffer_length", ERROR_BUFFER_LENGTH_PROP_NAME, ERROR_BUFFER_LENGTH_DEFAULT, parse_size),
        Setting("is_responding_service", RESPONDER_SERVICE_PROP_NAME, RESPONDER_SERVICE_DEFAULT, parse_bool),
        Setting("log_fragment_limit", LOG_FRAGMENT_LIMIT_PROP_NAME, LOG_FRAGMENT_LIMIT_DEFAULT, parse_int),
        Setting("delegating_error_handler", DELEGATING_ERROR_HANDLER_PROP_NAME, None),
        Setting("cycle_threshold_ns", CYCLE_THRESHOLD_PROP_NAME, CYCLE_THRESHOLD_DEFAULT_NS, parse_duration_ns),
        Setting("snapshot_duration_threshold_ns", SNAPSHOT_DURATION_THRESHOLD_PROP_NAME,
                SNAPSHOT_DURATION_THRESHOLD_DEFAULT_NS, parse_duration_ns),
        Setting("idle_strategy", CLUSTER_IDLE_STRATEGY_PROP_NAME, DEFAULT_IDLE_STRATEGY),
    )


_CONTEXT_SETTINGS = tuple(
    # Aeron's Context reads the service name property with no default: when unset, conclude() names the service
    # after its cluster and service ids
    dataclasses.replace(s, default=None) if s.attr == "service_name" else
    # the name, as idle_strategy() makes an idle strategy
    dataclasses.replace(s, attr="idle_strategy_name") if s.attr == "idle_strategy" else s
    for s in Configuration.SETTINGS
) + (Setting("aeron_dir", "aeron.dir", None),)
_BY_PROPERTY = {s.prop: s for s in _CONTEXT_SETTINGS}
_BY_ATTR = {s.attr: s for s in _CONTEXT_SETTINGS}


def container_property(name: str) -> bool:
    """Whether ``name`` is a property the container reads (Aeron's name of one of its settings)."""
    return name in _BY_PROPERTY


def semantic_versioning_validator(configured: int, received: int) -> bool:
    """Aeron's ``AppVersionValidator.SEMANTIC_VERSIONING_VALIDATOR``: compatible when the major versions are
    equal."""
    return bool(semantic_version_major(configured) == semantic_version_major(received))


def _load_class(name: str, what: str) -> Any:
    """The class ``module:Class`` or ``module.Class`` names (ConfigurationError when it cannot be loaded)."""
    module_name, sep, class_name = name.partition(":")
    if not sep:
        module_name, _, class_name = name.rpartition(".")
    try:
        return getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError, ValueError) as ex:
        raise ConfigurationError(f"cannot load the {what} {name!r}: {ex}") from None


def _driver_file_page_size(aeron_dir: str) -> int:
    """The file page size the driver of ``aeron_dir`` wrote in its cnc.dat (4096 when it cannot be read)."""
    try:
        with open(os.path.join(aeron_dir, CNC_FILE), "rb") as f:
            f.seek(FILE_PAGE_SIZE_FIELD_OFFSET)
            data = f.read(4)
    except OSError:
        return 4096
    value = int.from_bytes(data, "little", signed=True) if len(data) == 4 else 0
    return value if value >= 4096 and value & (value - 1) == 0 else 4096


class Context:
    """Settings of a :class:`ClusteredServiceContainer` (Aeron's ``ClusteredServiceContainer.Context``).

    Each setting comes from its default, then its ``AERON_CLUSTER_*`` environment variable, then ``properties``
    (Aeron's names: ``aeron.cluster.service.id``, ``aeron.cluster.dir``, ``aeron.dir``, ...), then keywords. Besides
    :class:`Configuration`'s settings: ``clustered_service`` (the service; else one is made from
    ``service_class_name``, ``module:Class``), ``aeron`` (a connected client; else one is connected to ``aeron_dir``
    and closed with the container), ``archive_context`` (an ``AeronArchive.Context`` for the local archive; else
    its local control channel and a response stream of ``clusterId * 100 + 100 + 20 + serviceId + 1``),
    ``app_version`` (a semantic version, 0.0.1), ``app_version_validator(configured, received)``,
    ``idle_strategy_supplier``, ``epoch_clock`` (ms), ``nano_clock``, ``error_handler``,
    ``delegating_error_handler`` (an object with ``next(handler)`` and ``on_error(error)``, or its class's name),
    ``termination_hook`` (called when the container terminates), ``use_agent_invoker`` (no thread: the caller
    drives :attr:`ClusteredServiceContainer.agent_invoker`).

    :meth:`conclude` checks the settings and makes what is missing: the cluster and mark file directories, the
    service's mark file ``cluster-mark-service-<id>.dat`` (and its link when elsewhere), the error log in it, the
    Aeron client, the error, cycle time and snapshot duration counters, and the archive context.
    """

    cluster_id: int
    service_id: int
    service_name: str | None
    service_class_name: str | None
    replay_channel: str
    replay_stream_id: int
    control_channel: str
    service_stream_id: int
    consensus_module_stream_id: int
    snapshot_channel: str
    snapshot_stream_id: int
    cluster_dir: str
    cluster_services_dir: str | None
    mark_file_dir: str | None
    error_buffer_length: int
    is_responding_service: bool
    log_fragment_limit: int
    delegating_error_handler: Any
    cycle_threshold_ns: int
    snapshot_duration_threshold_ns: int
    idle_strategy_name: str
    aeron_dir: str | None

    def __init__(self, properties: Mapping[str, str] | Iterable[str] | None = None, *,
                 environ: Mapping[str, str] | None = None, **settings: Any) -> None:
        """Defaults, then the environment, then ``properties`` (a mapping, or ``key=value`` strings, ``-D``
        allowed), then ``settings`` (ConfigurationError for an unknown name or a value that does not parse)."""
        for attr, value in resolve(_CONTEXT_SETTINGS, None, environ).items():
            setattr(self, attr, value)
        environ = os.environ if environ is None else environ
        if self.aeron_dir is None and environ.get("AERON_DIR"):
            self.aeron_dir = environ["AERON_DIR"]
        self.app_version = semantic_version_compose(0, 0, 1)
        self.app_version_validator: Callable[[int, int], bool] = semantic_versioning_validator
        self.clustered_service: Any = None
        self.aeron: Aeron | None = None
        self.owns_aeron_client = False
        self.archive_context: ArchiveContext | None = None
        self.idle_strategy_supplier: Callable[[], IdleStrategy] | None = None
        self.epoch_clock: Callable[[], int] = epoch_ms
        self.nano_clock: Callable[[], int] = nano_time
        self.error_handler: Callable[[BaseException], Any] | None = None
        self.error_log: DistinctErrorLog | None = None
        self.error_counter: Any = None
        self.counted_error_handler: Callable[[BaseException], Any] | None = None
        self.duty_cycle_tracker: DutyCycleStallTracker | None = None
        self.snapshot_duration_tracker: SnapshotDurationTracker | None = None
        self.termination_hook: Callable[[], Any] | None = None
        self.mark_file: ClusterMarkFile | None = None
        self.use_agent_invoker = False
        self.is_concluded = False
        if properties is not None:
            self.update(properties)
        for name, value in settings.items():
            if name.startswith("_") or name == "is_concluded" or not hasattr(self, name):
                raise ConfigurationError(f"unknown ClusteredServiceContainer.Context setting {name!r}")
            setattr(self, name, value)

    def update(self, properties: Mapping[str, str] | Iterable[str]) -> Context:
        """Apply Aeron's property names (or attribute names) from a mapping or ``key=value`` strings."""
        items = property_items(properties)
        for key, value in items:
            setting = _BY_PROPERTY.get(key.strip()) or _BY_ATTR.get(key.strip())
            if setting is None:
                raise ConfigurationError(f"unknown clustered service container property {key!r}")
            setattr(self, setting.attr, setting.parse_text(value) if isinstance(value, str) else value)
        return self

    def idle_strategy(self) -> IdleStrategy:
        """A new idle strategy from the supplier (each user gets its own, as Aeron's supplier does)."""
        supplier = self.idle_strategy_supplier
        return supplier() if supplier is not None else idle_strategy_from_name(self.idle_strategy_name)

    def conclude(self) -> Context:
        """Check the settings and make what is missing (see the class). Raises ConfigurationError for a setting
        out of range, IllegalStateError when concluded twice, ClusterError when the local archive's control is
        not IPC or the mark file's strings do not fit; the mark file is left for :meth:`close`."""
        if self.is_concluded:
            raise IllegalStateError("ClusteredServiceContainer.Context already concluded")
        self.is_concluded = True
        max_id = Configuration.MAX_SERVICE_COUNT - 1
        if not 0 <= self.service_id <= max_id:
            raise ConfigurationError(f"service id outside allowed range [0,{max_id}]: {self.service_id}")
        if self.idle_strategy_supplier is None:
            name = self.idle_strategy_name
            idle_strategy_from_name(name)        # a bad name fails here, not on the agent's thread
            self.idle_strategy_supplier = functools.partial(idle_strategy_from_name, name)
        self.cluster_dir = os.path.abspath(self.cluster_dir)
        self.mark_file_dir = os.path.abspath(self.mark_file_dir or self.cluster_dir)
        os.makedirs(self.cluster_dir, exist_ok=True)
        os.makedirs(self.mark_file_dir, exist_ok=True)
        if self.service_name is None or self.service_name == "":
            self.service_name = f"clustered-service-{self.cluster_id}-{self.service_id}"
        aeron_dir = self.aeron.context.aeron_dir if self.aeron is not None else self.aeron_dir
        if aeron_dir is None:
            aeron_dir = default_aeron_dir()
        self.aeron_dir = aeron_dir
        mark_file_name = ClusterMarkFile.mark_filename_for_service(self.service_id)
        if self.mark_file is None:
            self.mark_file = ClusterMarkFile.create(
                os.path.join(self.mark_file_dir, mark_file_name), ClusterComponentType.CONTAINER,
                self.error_buffer_length, self.epoch_clock, Configuration.LIVENESS_TIMEOUT_MS,
                _driver_file_page_size(aeron_dir))
        ensure_mark_file_link(self.cluster_dir, os.path.join(self.mark_file.parent_directory(), mark_file_name),
                              ClusterMarkFile.link_filename_for_service(self.service_id))
        if self.error_log is None:
            self.error_log = self.mark_file.error_log
        self.error_handler = _logging_error_handler(self.error_log, self.error_handler)
        delegating = self.delegating_error_handler
        if isinstance(delegating, str):
            delegating = _load_class(delegating, "delegating error handler")()
        if delegating is not None:
            delegating.next(self.error_handler)
            self.delegating_error_handler = delegating
            self.error_handler = delegating.on_error
        if self.aeron is None:
            self.aeron = Aeron.connect(AeronContext(aeron_dir, error_handler=self._on_client_error,
                                                    client_name=self.service_name))
            self.owns_aeron_client = True
        if self.error_counter is None:
            self.error_counter = ClusterCounters.allocate_service_error_counter(
                self.aeron, self.cluster_id, self.service_id, __version__, COMMIT)
        if self.counted_error_handler is None:
            self.counted_error_handler = _counted_error_handler(self.error_handler, self.error_counter)
        if self.duty_cycle_tracker is None:
            self.duty_cycle_tracker = DutyCycleStallTracker(
                ClusterCounters.allocate_service_counter(
                    self.aeron, "Cluster container max cycle time in ns",
                    CLUSTER_CLUSTERED_SERVICE_MAX_CYCLE_TIME_TYPE_ID, self.cluster_id, self.service_id),
                ClusterCounters.allocate_service_counter(
                    self.aeron, "Cluster container work cycle time exceeded count: threshold="
                    f"{format_duration(self.cycle_threshold_ns)}",
                    CLUSTER_CLUSTERED_SERVICE_CYCLE_TIME_THRESHOLD_EXCEEDED_TYPE_ID, self.cluster_id,
                    self.service_id),
                self.cycle_threshold_ns)
        if self.snapshot_duration_tracker is None:
            self.snapshot_duration_tracker = SnapshotDurationTracker(
                ClusterCounters.allocate_service_counter(
                    self.aeron, "Clustered service max snapshot duration in ns",
                    CLUSTERED_SERVICE_MAX_SNAPSHOT_DURATION_TYPE_ID, self.cluster_id, self.service_id),
                ClusterCounters.allocate_service_counter(
                    self.aeron, "Clustered service max snapshot duration exceeded count: threshold="
                    f"{format_duration(self.snapshot_duration_threshold_ns)}",
                    CLUSTERED_SERVICE_SNAPSHOT_DURATION_THRESHOLD_EXCEEDED_TYPE_ID, self.cluster_id,
                    self.service_id),
                self.snapshot_duration_threshold_ns)
        self._conclude_archive_context()
        if self.termination_hook is None:
            self.termination_hook = _no_op
        if self.clustered_service is None:
            if not self.service_class_name:
                raise ClusterError("either a instance or class name for the service must be provided")
            self.clustered_service = _load_class(self.service_class_name, "clustered service")()
        self._conclude_mark_file()
        return self

    def _on_client_error(self, error: BaseException) -> None:
        # the client's errors are counted as the container's (Aeron hands its client the counted error handler)
        handler = self.counted_error_handler or self.error_handler
        if handler is not None:
            handler(error)

    def _conclude_archive_context(self) -> None:
        archive = self.archive_context
        if archive is None:
            archive = ArchiveContext(
                control_request_channel=LOCAL_CONTROL_CHANNEL_DEFAULT,
                control_response_channel=LOCAL_CONTROL_CHANNEL_DEFAULT,
                control_request_stream_id=LOCAL_CONTROL_STREAM_ID_DEFAULT,
                control_response_stream_id=(self.cluster_id * 100 + 100 + CONTROL_RESPONSE_STREAM_ID_DEFAULT
                                            + (self.service_id + 1)))
        if not (archive.control_request_channel or "").startswith(IPC_CHANNEL) or \
                not (archive.control_response_channel or "").startswith(IPC_CHANNEL):
            raise ClusterError("local archive control must be IPC")
        archive.aeron = self.aeron
        archive.owns_aeron_client = False
        archive.error_handler = None            # errors raise where the request was made
        archive.control_request_channel = _add_alias_if_absent(
            archive.control_request_channel or "", f"sc-{self.service_id}-archive-ctrl-req-cluster-{self.cluster_id}")
        archive.control_response_channel = _add_alias_if_absent(
            archive.control_response_channel or "",
            f"sc-{self.service_id}-archive-ctrl-resp-cluster-{self.cluster_id}")
        archive.client_name = self.service_name or ""
        self.archive_context = archive

    def _conclude_mark_file(self) -> None:
        assert self.mark_file is not None and self.aeron is not None and self.archive_context is not None
        ClusterMarkFile.check_header_length(self.aeron_dir, self.control_channel, None, self.service_name, None)
        encoder = self.mark_file.encoder()
        encoder.archive_stream_id = self.archive_context.control_request_stream_id
        encoder.service_stream_id = self.service_stream_id
        encoder.consensus_module_stream_id = self.consensus_module_stream_id
        encoder.ingress_stream_id = NULL_VALUE
        encoder.member_id = NULL_VALUE
        encoder.service_id = self.service_id
        encoder.cluster_id = self.cluster_id
        encoder.put_aeron_directory(self.aeron_dir or "")
        encoder.put_control_channel(self.control_channel)
        encoder.put_ingress_channel("")
        encoder.put_service_name(self.service_name or "")
        encoder.put_authenticator("")
        encoder.put_services_cluster_dir("")
        self.mark_file.signal_ready(self.epoch_clock())

    def new_archive_context(self) -> ArchiveContext:
        """A copy of the concluded archive context, for one ``AeronArchive.connect`` (Aeron clones it each time)."""
        assert self.archive_context is not None
        return copy.copy(self.archive_context)

    def close(self) -> None:
        """Close the Aeron client when the context made it, and the mark file."""
        if self.owns_aeron_client and self.aeron is not None:
            try:
                self.aeron.close()
            except Exception as ex:
                if self.counted_error_handler is not None:
                    self.counted_error_handler(ex)
        if self.mark_file is not None:
            self.mark_file.close()

    def __repr__(self) -> str:
        """The main settings."""
        return (f"ClusteredServiceContainer.Context(cluster_id={self.cluster_id}, service_id={self.service_id}, "
                f"service_name={self.service_name!r}, cluster_dir={self.cluster_dir!r}, aeron_dir={self.aeron_dir!r}, "
                f"control_channel={self.control_channel!r}, is_concluded={self.is_concluded})")


def _no_op() -> None:
    pass


def _add_alias_if_absent(channel: str, alias: str) -> str:
    """``channel`` with ``alias=<alias>`` unless it has an alias (Aeron's ``ChannelUri.addAliasIfAbsent``)."""
    uri = ChannelUri.parse(channel)
    if uri.alias is not None:
        return channel
    uri.put(ALIAS_PARAM_NAME, alias)
    return str(uri)


def _logging_error_handler(error_log: DistinctErrorLog, user_handler: Callable[[BaseException], Any] | None
                           ) -> Callable[[BaseException], Any]:
    """Errors to the mark file's error log, then to the user's handler (Aeron's ``CommonContext.setupErrorHandler``);
    one the log has no room for goes to stderr."""
    def on_error(error: BaseException) -> None:
        if not error_log.record(error):
            traceback.print_exception(type(error), error, error.__traceback__, file=sys.stderr)
        if user_handler is not None:
            user_handler(error)
    return on_error


def _counted_error_handler(error_handler: Callable[[BaseException], Any], error_counter: Any
                           ) -> Callable[[BaseException], Any]:
    """Counts each error, then handles it (Agrona's ``CountedErrorHandler``)."""
    def on_error(error: BaseException) -> None:
        if not error_counter.is_closed:
            error_counter.increment()
        error_handler(error)
    return on_error


def format_duration(duration_ns: int) -> str:
    """A duration as Agrona's ``SystemUtil.formatDuration`` prints it: the largest unit that divides it
    (``100ms``)."""
    for unit, scale in (("s", 1_000_000_000), ("ms", 1_000_000), ("us", 1_000)):
        if duration_ns and duration_ns % scale == 0:
            return f"{duration_ns // scale}{unit}"
    return f"{duration_ns}ns"


# the container's own names for them, as the class nests Aeron's names
_Context = Context
_Configuration = Configuration


class ClusteredServiceContainer:
    """Hosts a :class:`~aeron.cluster.service.clustered_service.ClusteredService` in a cluster: a
    ``ClusteredServiceAgent`` on its own thread (or driven through an invoker) that follows the consensus module
    of the same member over IPC. Port of Aeron's ``io.aeron.cluster.service.ClusteredServiceContainer``.

    The consensus module may run in this process (``ClusteredMediaDriver``) or in another one, Java's or ours: the
    container finds it through the driver's counters and the control channel.
    """

    Context = _Context                  # Aeron's nested ``ClusteredServiceContainer.Context``
    Configuration = _Configuration      # and ``ClusteredServiceContainer.Configuration``

    def __init__(self, ctx: _Context) -> None:
        """Conclude ``ctx`` (on failure mark the mark file as a failed start, close the context and re-raise) and
        make the agent and its runner; use :meth:`launch`."""
        from aeron.cluster.service.clustered_service_agent import ClusteredServiceAgent
        self.ctx = ctx
        try:
            ctx.conclude()
        except BaseException:
            if ctx.mark_file is not None:
                ctx.mark_file.signal_failed_start()
            ctx.close()
            raise
        self.agent = ClusteredServiceAgent(ctx)
        self.agent_runner: AgentRunner | None = None
        self.agent_invoker: AgentInvoker | None = None
        if ctx.use_agent_invoker:
            self.agent_invoker = AgentInvoker(self.agent, ctx.error_handler, ctx.error_counter)
        else:
            self.agent_runner = AgentRunner(self.agent, self.agent.bind_idle_strategy(ctx.idle_strategy()),
                                            ctx.error_handler, ctx.error_counter)

    @classmethod
    def launch(cls, ctx: _Context | None = None, **settings: Any) -> ClusteredServiceContainer:
        """Launch a container for ``ctx`` (or a Context made of ``settings``): its agent starts on its own thread,
        or, with ``use_agent_invoker``, when :attr:`agent_invoker` is first invoked (``start()`` is called here)."""
        container = cls(ctx if ctx is not None else _Context(**settings))
        if container.agent_runner is not None:
            container.agent_runner.start()
        else:
            assert container.agent_invoker is not None
            container.agent_invoker.start()
        return container

    @property
    def context(self) -> _Context:
        """The container's context."""
        return self.ctx

    def close(self) -> None:
        """Stop the agent (its ``on_terminate`` runs if the service started) and release what the context made."""
        self.agent.interrupt()
        if self.agent_runner is not None:
            self.agent_runner.close()
        elif self.agent_invoker is not None:
            self.agent_invoker.close()

    def __enter__(self) -> ClusteredServiceContainer:
        """The container; the ``with`` block closes it."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the container."""
        self.close()
