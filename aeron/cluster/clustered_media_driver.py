# SPDX-License-Identifier: Apache-2.0
"""A media driver, an archive and a consensus module in one process (Aeron's ``ClusteredMediaDriver``): a
cluster member, its clustered services running in their own processes (or beside it) on the same driver.

``one_thread`` (ours; property ``aeron.cluster.member.one.thread`` of ``python -m aeron.cluster``): the driver's
agents, the archive's and the consensus module run as one agent on one thread (DriverThreadAgent) with one park,
instead of a driver thread, an archive thread and a consensus module thread taking turns on the GIL, with a wake-up
between them on every hop (docs/wakeup.md). With ``service_container_context`` (ours; property
``aeron.cluster.member.one.thread.service`` of ``python -m aeron.cluster``) a clustered service container runs on that
thread too, as Java's ClusteredServiceContainer hosted in the member's JVM does on a thread of its own: the commit
position it waits for and the egress it offers then reach it, and the driver, in the same duty cycle."""
from __future__ import annotations

from typing import Any

from aeron.archive.archive import Archive, ArchiveThreadingMode
from aeron.archive.archive import Context as ArchiveContext
from aeron.client import Aeron
from aeron.client import Context as AeronContext
from aeron.cluster.consensus_module import ConsensusModule
from aeron.cluster.consensus_module import Context as ConsensusModuleContext
from aeron.cluster.service.clustered_service_container import ClusteredServiceContainer
from aeron.cluster.service.clustered_service_container import Context as ContainerContext
from aeron.cluster.service.recovery_state import RecoveryState
from aeron.common.agent import DRIVER_BACKOFF_MAX_PARK_NS, AgentRunner, idle_strategy_from_name
from aeron.common.constants import NULL_VALUE
from aeron.common.errors import ConfigurationError
from aeron.common.wakeup import CLIENTS, streams_mask
from aeron.driver import Context as DriverContext
from aeron.driver import MediaDriver
from aeron.driver.driver_thread import DriverThreadAgent
from aeron.driver.media_driver import ThreadingMode

__all__ = ["ClusteredMediaDriver"]


class ClusteredMediaDriver:
    """A driver, its archive and a consensus module; :meth:`launch` starts them in that order, :meth:`close` stops
    them in the reverse order."""

    def __init__(self, driver: MediaDriver, archive: Archive, consensus_module: ConsensusModule,
                 runner: AgentRunner | None = None, archive_client: Aeron | None = None,
                 service_container: ClusteredServiceContainer | None = None) -> None:
        """Made by :meth:`launch`."""
        self.media_driver = driver
        self.archive = archive
        self.consensus_module = consensus_module
        self.service_container = service_container
        self._runner = runner
        self._archive_client = archive_client

    @property
    def one_thread(self) -> bool:
        """Whether the driver, the archive and the consensus module run on one thread (``launch(one_thread=True)``)."""
        return self._runner is not None

    @classmethod
    def launch(cls, driver_context: DriverContext | None = None, archive_context: ArchiveContext | None = None,
               consensus_module_context: ConsensusModuleContext | None = None, *,
               one_thread: bool = False,
               service_container_context: ContainerContext | None = None) -> ClusteredMediaDriver:
        """Launch the driver, then the archive and the consensus module on its directory; what started is closed
        again when a later part fails. ``one_thread``: all of them on one thread (see the module docstring): the
        driver in ThreadingMode.INVOKER, the archive in ArchiveThreadingMode.INVOKER, the consensus module with
        ``use_agent_invoker``, whatever the contexts said, the thread parking with the driver's
        ``aeron.shared.idle.strategy``; the parts are then closed together, by :meth:`close` (which stops their thread
        first), not one by one. ``service_container_context`` (only with ``one_thread``; ConfigurationError
        otherwise): a clustered service container on that thread as well (:attr:`service_container`), made with
        ``use_agent_invoker``, the thread's waits as its idle strategy and a client of its own without a conductor
        thread; :meth:`close` closes it before the consensus module."""
        if one_thread:
            return cls._launch_one_thread(driver_context, archive_context, consensus_module_context,
                                          service_container_context)
        if service_container_context is not None:
            raise ConfigurationError("a service container runs on the member's thread only with one_thread")
        driver: Any = None
        archive: Any = None
        consensus_module: Any = None
        try:
            driver = MediaDriver.launch(driver_context)
            archive_ctx = archive_context if archive_context is not None else ArchiveContext()
            archive_ctx.aeron_dir = driver.aeron_dir
            archive = Archive.launch(archive_ctx)
            cm_ctx = consensus_module_context if consensus_module_context is not None else ConsensusModuleContext()
            cm_ctx.aeron_dir = driver.aeron_dir
            consensus_module = ConsensusModule.launch(cm_ctx)
            return cls(driver, archive, consensus_module)
        except BaseException:
            _close_quietly(consensus_module, archive, driver)
            raise

    @classmethod
    def _launch_one_thread(cls, driver_context: DriverContext | None, archive_context: ArchiveContext | None,
                           consensus_module_context: ConsensusModuleContext | None,
                           container_ctx: ContainerContext | None) -> ClusteredMediaDriver:
        # The driver and the archive start on this thread, the consensus module on the runner's (DriverThreadAgent.
        # on_start), which then runs them all: never two threads at once.
        driver: Any = None
        archive: Any = None
        archive_client: Any = None
        consensus_module: Any = None
        container: Any = None
        try:
            driver_ctx = driver_context if driver_context is not None else DriverContext()
            driver_ctx.threading_mode = ThreadingMode.INVOKER
            driver = MediaDriver.launch(driver_ctx)
            thread = DriverThreadAgent(driver, role_name="cluster-member")
            # the driver's shared idle strategy: the thread is the driver's shared thread, with more on it
            idle = thread.bind(idle_strategy_from_name(driver.context.shared_idle_strategy), CLIENTS)
            # the archive's client and the consensus module's: no conductor thread, and the driver runs while a
            # request waits for its answer (Aeron's Context.driverAgentInvoker)
            archive_client = Aeron.connect(AeronContext(driver.aeron_dir, use_conductor_agent_invoker=True,
                                                        driver_agent_invoker=driver.invoker))
            thread.add(archive_client.conductor_agent_invoker, driver_fed=True)
            archive_ctx = archive_context if archive_context is not None else ArchiveContext()
            archive_ctx.aeron_dir = driver.aeron_dir
            archive_ctx.aeron = archive_client
            archive_ctx.threading_mode = ArchiveThreadingMode.INVOKER
            archive = Archive.launch(archive_ctx)
            archive_ctx = archive.context
            # the archive's control streams, spies (it records the leader's log through one), and each stream it
            # subscribes to record, added as it does (ArchiveConductor.wake_waiters)
            thread.add_mask(streams_mask((archive_ctx.control_stream_id, archive_ctx.local_control_stream_id),
                                         spies=True))
            if thread.waiter is not None:
                archive.conductor.wake_waiters.append(thread.waiter)
            replays = archive.conductor.replay_sessions
            # a replay waits for its publication to connect and then on flow control, which nothing signals (as
            # Archive's own thread: within backoff's 1 ms while one runs)
            thread.add(archive.invoker,                                 # type: ignore[arg-type]
                       lambda quiet_ns: min(quiet_ns, DRIVER_BACKOFF_MAX_PARK_NS) if replays else quiet_ns)
            cm_ctx = consensus_module_context if consensus_module_context is not None else ConsensusModuleContext()
            _on_thread(cm_ctx, thread, driver, error_handler=cm_ctx.counted_error_handler,
                       client_name="consensus-module", unavailable_counter_handler=cm_ctx._on_unavailable_counter)
            consensus_module = ConsensusModule(cm_ctx)
            agent = consensus_module.agent
            thread.add_mask(streams_mask(agent.wake_streams()))
            # its synchronous archive requests run the thread's other parts while they wait
            cm_ctx.archive_context.agent_invoker = thread               # type: ignore[assignment]
            cm_ctx.archive_context.idle_strategy = idle
            invoker = consensus_module.conductor_agent_invoker
            assert invoker is not None, "use_agent_invoker"
            # started on the thread, as on a thread of its own: its on_start waits for the services, which the
            # caller may start only once this returns
            agent.defer_commit_wake = True
            thread.add(invoker, agent.quiet_park_ns, after_cycle=agent.signal_owed_wakes)
            if container_ctx is not None:
                container = cls._add_service_container(thread, driver, idle, cm_ctx.aeron, container_ctx)
            runner = AgentRunner(thread, idle, error_handler=driver.conductor.on_agent_error)
            running = cls(driver, archive, consensus_module, runner, archive_client, container)
            runner.start()
            return running
        except BaseException:
            _close_quietly(container, consensus_module, archive, archive_client, driver)
            raise

    @staticmethod
    def _add_service_container(thread: DriverThreadAgent, driver: MediaDriver, idle: Any, cm_aeron: Aeron,
                               ctx: ContainerContext) -> ClusteredServiceContainer:
        # Added after the consensus module, it starts inside the module's on_start (DriverThreadAgent._run_parts) once
        # the module has allocated the RecoveryState counter the service's start reads
        # (ConsensusModuleAgent.recoverFromSnapshotAndLog), after which the module only loads its snapshot and waits
        # for the services' acks: the service's own waits (its snapshot's replay, its ack's publication) need only
        # the driver, the archive and the clients' conductors, which run in them; none needs the consensus module,
        # which is on the stack below. Started earlier (inside the module's AeronArchive.connect) it would wait for
        # that counter with the module unable to make it.
        _on_thread(ctx, thread, driver, error_handler=ctx._on_client_error,
                   client_name=ctx.service_name or "clustered-service")
        aeron = ctx.aeron
        assert aeron is not None, "_on_thread"
        conductor = aeron.conductor_agent_invoker
        if conductor is None:           # the caller's client, with a conductor thread of its own
            raise ConfigurationError("a service container on the member's thread needs a client without a conductor "
                                     "thread (use_conductor_agent_invoker)")
        thread.add(conductor, driver_fed=True)
        # the consensus module's client too: a service's wait inside one of the module's runs the thread's parts
        # but not the module, which alone invokes its client otherwise (a long wait would time that client out)
        if cm_aeron.conductor_agent_invoker is not None:
            thread.add(cm_aeron.conductor_agent_invoker, driver_fed=True)
        container = ClusteredServiceContainer(ctx)
        # its AeronArchive requests (a snapshot's load and recording) run the thread's other parts while they wait
        archive_ctx = ctx.archive_context
        assert archive_ctx is not None
        archive_ctx.agent_invoker = thread                              # type: ignore[assignment]
        archive_ctx.idle_strategy = idle
        # the consensus module signals the service stream's bit when it moves the commit position
        thread.add_mask(streams_mask((ctx.service_stream_id, archive_ctx.control_response_stream_id)))
        assert container.agent_invoker is not None, "use_agent_invoker"
        counters = aeron.counters_reader
        cluster_id = ctx.cluster_id
        thread.add(container.agent_invoker,
                   start_when=lambda: RecoveryState.find_counter_id(counters, cluster_id) != NULL_VALUE)
        return container

    def close(self) -> None:
        """Close the consensus module, the archive, then the driver (with ``one_thread``, their thread stopped
        first)."""
        try:
            if self._runner is not None:
                self.consensus_module.agent.interrupt()
                if self.service_container is not None:
                    self.service_container.agent.interrupt()
                self._runner.close()
            if self.service_container is not None:
                try:
                    self.service_container.close()
                finally:
                    self.consensus_module.close()
            else:
                self.consensus_module.close()
        finally:
            try:
                self.archive.close()
            finally:
                try:
                    if self._archive_client is not None:
                        self._archive_client.close()
                finally:
                    self.media_driver.close()

    def __enter__(self) -> ClusteredMediaDriver:
        """The running parts; the ``with`` block closes them."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close them."""
        self.close()

    def __repr__(self) -> str:
        """The driver directory and the member."""
        return f"ClusteredMediaDriver(aeron_dir={self.media_driver.aeron_dir!r}, {self.consensus_module!r})"


def _on_thread(ctx: Any, thread: DriverThreadAgent, driver: MediaDriver, **client_settings: Any) -> None:
    # a consensus module's or a container's context, to run on the thread: driven by its invoker, its blocking waits
    # running the thread's other parts, and its client (unless the caller gave one) without a conductor thread and
    # running the driver while a request waits for its answer (Aeron's Context.driverAgentInvoker)
    ctx.aeron_dir = driver.aeron_dir
    ctx.use_agent_invoker = True
    ctx.idle_strategy_supplier = thread.wait_idle_strategy
    if ctx.aeron is None:
        ctx.aeron = Aeron.connect(AeronContext(driver.aeron_dir, use_conductor_agent_invoker=True,
                                               driver_agent_invoker=driver.invoker, **client_settings))
        ctx.owns_aeron_client = True


def _close_quietly(*parts: Any) -> None:
    for part in parts:
        if part is not None:
            try:
                part.close()
            except Exception:       # noqa: BLE001 - the launch failure is the error raised
                pass
