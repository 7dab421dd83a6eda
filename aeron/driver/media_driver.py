# SPDX-License-Identifier: Apache-2.0
"""MediaDriver, its Context and ThreadingMode (port of MediaDriver.java / aeron_driver.c: IPC and UDP).

Configuration comes, lowest precedence first, from the ``AERON_*`` environment variables that
``aeronmd`` reads, then from ``key=value`` properties (Aeron's Java names, ``aeron.dir=...``), then from
keyword attributes (``term_buffer_length=65536``). Every value is validated when it is set; a bad one
raises ConfigurationError naming the property.
"""
from __future__ import annotations

import contextlib
import datetime
import enum
import getpass
import os
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from aeron._core.cnc import CNC_FILE, CncFile, semantic_version_major
from aeron._core.error_log import format_error_log
from aeron._core.logbuffer import check_mtu_length, check_page_size, check_term_length
from aeron._core.loss_generator import LossGenerator
from aeron._core.ring_buffer import ManyToOneRingBuffer
from aeron.common.agent import (AgentInvoker, AgentRunner, BackoffIdleStrategy, CompositeAgent, IdleStrategy,
                                epoch_ms, idle_strategy_from_name)
from aeron.common.cnc_attach import driver_error_records, driver_pid_is_gone, is_driver_dead, read_cnc_pid
from aeron.common.cpu_latency import DEFAULT_CPU_LATENCY_QOS_PATH, CpuLatencyRequest, check_cpu_latency_us
from aeron.common.errors import (
    ActiveDriverError, AeronDirError, CncNotInitialisedError, ConfigurationError, IllegalStateError)
from aeron.common.paths import check_aeron_dir_is_safe, default_aeron_dir, delete_aeron_dir, describe_failures
from aeron.common.settings import (Setting, SettingsContext, enum_parser, parse_bool, parse_duration_ns, parse_int,
                                   parse_long, parse_size, parse_str)
from aeron.common.wakeup import WAKEUP_FILE, WakeupIdleStrategy, open_board
from aeron.driver.driver_conductor import DriverConductor
from aeron.driver.driver_wakeup import SignallingAgent, bind_idle_strategy
from aeron.driver.flow_control import strategy_name
from aeron.driver.unconfirmed_images import (
    DEFAULT_IMAGE_TIMEOUT_NS as DEFAULT_UNCONFIRMED_IMAGE_TIMEOUT_NS, DEFAULT_IMAGES_MAX as DEFAULT_UNCONFIRMED_IMAGES_MAX,
    DEFAULT_LOG_BYTES_MAX as DEFAULT_UNCONFIRMED_LOG_BYTES_MAX,
    DEFAULT_SOURCE_IMAGES_MAX as DEFAULT_UNCONFIRMED_SOURCE_IMAGES_MAX,
    DEFAULT_SOURCE_LOG_BYTES_MAX as DEFAULT_UNCONFIRMED_SOURCE_LOG_BYTES_MAX,
)

# How the settings are spelt and parsed. ------------------------------------------------------------


class ThreadingMode(enum.Enum):
    """Threads the driver runs (Aeron ``ThreadingMode``): DEDICATED, one each for the conductor, the sender and the
    receiver; SHARED_NETWORK, one for the conductor and one for sender and receiver; SHARED, one for all three;
    INVOKER, none (the application calls ``MediaDriver.do_work()``). Over IPC only the conductor has work.

    The default is SHARED_NETWORK (Aeron's is DEDICATED), chosen by measurement (perf/bench_threading.py,
    docs/performance.md): our agents run Python under one GIL, so three threads do not run in parallel, they
    take turns and hand the GIL over; the sender and the receiver in one thread send and read a loopback
    datagram in one duty cycle without a hand-over, while the conductor's timers and commands stay off their
    path. Measured on 2 cores it streamed UDP 1.8-1.9x as fast as DEDICATED and cut the UDP round trip by
    40-50 %, and was never clearly behind SHARED."""

    DEDICATED = "DEDICATED"
    SHARED_NETWORK = "SHARED_NETWORK"
    SHARED = "SHARED"
    INVOKER = "INVOKER"


_parse_threading_mode = enum_parser(ThreadingMode)     # C parses the exact upper-case names; any case here


def _parse_supplier(text: str) -> str:
    return strategy_name(text)


# Ours, where Aeron's is backoff: wake-on-work while every client of this driver is ours (they signal what they write),
# parks bounded as backoff's (1 ms) as soon as one that is not (an official client) connects (docs/wakeup.md)
DEFAULT_IDLE_STRATEGY = "wakeup"


def _parse_idle(text: str) -> str:
    idle_strategy_from_name(text.strip())      # validate now, build when the driver starts
    return text.strip()


def _parse_validator(text: str) -> str:
    value = text.strip().lower()
    if value not in ("allow", "deny"):
        raise ValueError("must be 'allow' or 'deny'")
    return value


def _parse_name_resolver_supplier(text: str) -> str:
    # the C driver's supplier names; csv_table (a test-only redirecting table) is not implemented here
    value = text.strip()
    if value not in ("", "default", "driver"):
        raise ValueError("expected 'default' or 'driver'")
    return value


def _parse_file_mode(text: str) -> int | None:
    # octal, as chmod takes it: 660, 0660 or 0o660; empty for the default (0o666 less the umask)
    value = text.strip().lower()
    if not value:
        return None
    return _check_file_mode(int(value[2:] if value.startswith("0o") else value, 8))


def _parse_cpu_latency_us(text: str) -> int | None:
    # microseconds, 0..2**31-1 (the kernel's s32); empty for none (the default: the system is left alone)
    value = text.strip()
    if not value:
        return None
    return check_cpu_latency_us(parse_int(value))


def _parse_path(text: str) -> str:
    if not text.strip():
        raise ValueError("must not be empty")
    return text


def _check_file_mode_value(mode: Any) -> int:
    # an int as an attribute (ctx.dir_file_mode = 0o660); text goes through _parse_file_mode
    if isinstance(mode, bool) or not isinstance(mode, int):
        raise ValueError(f"not an integer: {mode!r}")
    return _check_file_mode(mode)


def _check_file_mode(mode: int) -> int:
    if not 0 <= mode <= 0o777:
        raise ValueError(f"{mode:#o} is not a permission mode in 0o000..0o777")
    if mode & 0o600 != 0o600:
        raise ValueError(f"{mode:#o} does not let the owner read and write the files")
    return mode


def dir_mode_for(file_mode: int) -> int:
    """The directory mode that goes with a file mode: search (x) wherever read is allowed (0o660 -> 0o770)."""
    return file_mode | (file_mode & 0o444) >> 2


_default_dir = default_aeron_dir        # aeron_default_path: shared with the client


MIB = 1024 * 1024
_SETTINGS: tuple[Setting, ...] = (
    Setting("aeron_dir", "aeron.dir", None, parse_str),
    Setting("dir_delete_on_start", "aeron.dir.delete.on.start", False, parse_bool),
    Setting("dir_delete_on_shutdown", "aeron.dir.delete.on.shutdown", False, parse_bool),
    Setting("dir_warn_if_exists", "aeron.dir.warn.if.exists", False, parse_bool),
    Setting("dir_file_mode", "aeron.dir.file.mode", None, _parse_file_mode, check=_check_file_mode_value),
    Setting("threading_mode", "aeron.threading.mode", ThreadingMode.SHARED_NETWORK, _parse_threading_mode),
    Setting("term_buffer_length", "aeron.term.buffer.length", 16 * MIB, parse_size),
    Setting("ipc_term_buffer_length", "aeron.ipc.term.buffer.length", 64 * MIB, parse_size),
    Setting("term_buffer_sparse_file", "aeron.term.buffer.sparse.file", True, parse_bool),
    Setting("mtu_length", "aeron.mtu.length", 1408, parse_size),
    Setting("ipc_mtu_length", "aeron.ipc.mtu.length", 1408, parse_size),
    Setting("ipc_publication_term_window_length", "aeron.ipc.publication.term.window.length", 0, parse_size),
    Setting("file_page_size", "aeron.file.page.size", 4096, parse_size),
    Setting("client_liveness_timeout_ns", "aeron.client.liveness.timeout", 10_000_000_000, parse_duration_ns),
    Setting("publication_unblock_timeout_ns", "aeron.publication.unblock.timeout", 15_000_000_000,
             parse_duration_ns),
    Setting("publication_linger_timeout_ns", "aeron.publication.linger.timeout", 5_000_000_000,
             parse_duration_ns),
    Setting("untethered_window_limit_timeout_ns", "aeron.untethered.window.limit.timeout", 5_000_000_000,
             parse_duration_ns),
    Setting("untethered_resting_timeout_ns", "aeron.untethered.resting.timeout", 10_000_000_000,
             parse_duration_ns),
    Setting("timer_interval_ns", "aeron.timer.interval", 1_000_000_000, parse_duration_ns),
    Setting("counters_free_to_reuse_timeout_ns", "aeron.counters.free.to.reuse.timeout", 1_000_000_000,
             parse_duration_ns),
    Setting("driver_timeout_ms", "aeron.driver.timeout", 10_000, parse_long),
    Setting("counters_buffer_length", "aeron.counters.buffer.length", 8 * MIB, parse_size),
    Setting("error_buffer_length", "aeron.error.buffer.length", 4 * MIB, parse_size),
    Setting("conductor_buffer_length", "aeron.conductor.buffer.length", MIB + 768, parse_size),
    Setting("clients_buffer_length", "aeron.clients.buffer.length", MIB + 128, parse_size),
    Setting("loss_report_buffer_length", "aeron.loss.report.buffer.length", MIB, parse_size),
    Setting("publication_reserved_session_id_low", "aeron.publication.reserved.session.id.low", -1, parse_int),
    Setting("publication_reserved_session_id_high", "aeron.publication.reserved.session.id.high", 1000,
             parse_int),
    Setting("driver_termination_validator", "aeron.driver.termination.validator", "deny", _parse_validator),
    Setting("print_configuration", "aeron.print.configuration", False, parse_bool),
    Setting("conductor_idle_strategy", "aeron.conductor.idle.strategy", DEFAULT_IDLE_STRATEGY, _parse_idle),
    Setting("sender_idle_strategy", "aeron.sender.idle.strategy", DEFAULT_IDLE_STRATEGY, _parse_idle),
    Setting("receiver_idle_strategy", "aeron.receiver.idle.strategy", DEFAULT_IDLE_STRATEGY, _parse_idle),
    Setting("sharednetwork_idle_strategy", "aeron.sharednetwork.idle.strategy", DEFAULT_IDLE_STRATEGY, _parse_idle),
    Setting("shared_idle_strategy", "aeron.shared.idle.strategy", DEFAULT_IDLE_STRATEGY, _parse_idle),
    # UDP (defaults as aeron_driver_context.c)
    Setting("image_liveness_timeout_ns", "aeron.image.liveness.timeout", 10_000_000_000, parse_duration_ns),
    # images per stream per receive endpoint (C: stream_session_limit, unlimited there); SETUPs beyond it are refused
    # and logged, so a flood of forged SETUPs cannot make images (and log files) without end
    Setting("stream_session_limit", "aeron.driver.stream.session.limit", 1024, parse_int),
    # ours: what images whose source has sent nothing but a SETUP may hold, per receive endpoint and per source
    # address on it, and how soon they go while the endpoint turns SETUPs away (unconfirmed_images.py)
    Setting("unconfirmed_images_max", "aeron.receiver.unconfirmed.images.max", DEFAULT_UNCONFIRMED_IMAGES_MAX,
             parse_int),
    Setting("unconfirmed_log_bytes_max", "aeron.receiver.unconfirmed.log.bytes.max",
             DEFAULT_UNCONFIRMED_LOG_BYTES_MAX, parse_size),
    Setting("unconfirmed_source_images_max", "aeron.receiver.unconfirmed.source.images.max",
             DEFAULT_UNCONFIRMED_SOURCE_IMAGES_MAX, parse_int),
    Setting("unconfirmed_source_log_bytes_max", "aeron.receiver.unconfirmed.source.log.bytes.max",
             DEFAULT_UNCONFIRMED_SOURCE_LOG_BYTES_MAX, parse_size),
    Setting("unconfirmed_image_timeout_ns", "aeron.receiver.unconfirmed.image.timeout",
             DEFAULT_UNCONFIRMED_IMAGE_TIMEOUT_NS, parse_duration_ns),
    Setting("publication_connection_timeout_ns", "aeron.publication.connection.timeout", 5_000_000_000,
             parse_duration_ns),
    Setting("status_message_timeout_ns", "aeron.rcv.status.message.timeout", 200_000_000, parse_duration_ns),
    Setting("initial_window_length", "aeron.rcv.initial.window.length", 128 * 1024, parse_size),
    Setting("socket_rcvbuf", "aeron.socket.so_rcvbuf", 128 * 1024, parse_size),
    Setting("socket_sndbuf", "aeron.socket.so_sndbuf", 0, parse_size),
    Setting("publication_term_window_length", "aeron.publication.term.window.length", 0, parse_size),
    Setting("nak_unicast_delay_ns", "aeron.nak.unicast.delay", 1_000, parse_duration_ns),
    Setting("nak_unicast_retry_delay_ratio", "aeron.nak.unicast.retry.delay.ratio", 100, parse_long),
    Setting("nak_multicast_max_backoff_ns", "aeron.nak.multicast.max.backoff", 10_000_000, parse_duration_ns),
    Setting("nak_multicast_group_size", "aeron.nak.multicast.group.size", 10, parse_int),
    Setting("max_resend", "aeron.max.resend", 16, parse_int),
    # a strategy name (max, min, tagged, unicast) or the C driver's supplier name for it
    Setting("multicast_flow_control_strategy", "aeron.multicast.flow.control.strategy", "max", _parse_supplier,
             env="AERON_MULTICAST_FLOWCONTROL_SUPPLIER"),
    Setting("unicast_flow_control_strategy", "aeron.unicast.flow.control.strategy", "unicast", _parse_supplier,
             env="AERON_UNICAST_FLOWCONTROL_SUPPLIER"),
    # min and tagged flow control's group tag, group minimum size and receiver timeout where fc= gives none
    Setting("flow_control_group_tag", "aeron.flow.control.group.tag", -1, parse_long),
    Setting("flow_control_group_min_size", "aeron.flow.control.group.min.size", 0, parse_int),
    Setting("flow_control_receiver_timeout_ns", "aeron.flow.control.receiver.timeout", 5_000_000_000,
             parse_duration_ns),
    # the group tag receivers put in their status messages where the channel has no gtag (None: no tag)
    Setting("receiver_group_tag", "aeron.receiver.group.tag", None, parse_long),
    Setting("spies_simulate_connection", "aeron.spies.simulate.connection", False, parse_bool),
    # C defaults to 2 datagrams per publication per sender cycle; a Python duty cycle costs ~10x a C one, so we
    # send up to 8 per cycle to amortise it (same batching limit otherwise, still bounded per cycle)
    Setting("cubic_congestion_control_measure_rtt", "aeron.CubicCongestionControl.measureRtt", False, parse_bool,
             env="AERON_CUBICCONGESTIONCONTROL_MEASURERTT"),
    Setting("cubic_congestion_control_initial_rtt_ns", "aeron.CubicCongestionControl.initialRtt", 100_000,
             parse_duration_ns, env="AERON_CUBICCONGESTIONCONTROL_INITIALRTT"),
    # loss generators on received datagrams, as the C driver's interceptors (tests and demos only), and ours that
    # reorder and duplicate received datagrams (the same seam, the same kind of arguments)
    Setting("udp_channel_incoming_interceptors", "aeron.udp.channel.incoming.interceptors", "", parse_str),
    Setting("loss_args", "aeron.udp.channel.transport.bindings.loss.args", "", parse_str),
    Setting("fixed_loss_args", "aeron.udp.channel.transport.bindings.fixed.loss.args", "", parse_str),
    Setting("multi_gap_loss_args", "aeron.udp.channel.transport.bindings.multi.gap.loss.args", "", parse_str),
    Setting("reorder_args", "aeron.udp.channel.transport.bindings.reorder.args", "", parse_str),
    Setting("duplicate_args", "aeron.udp.channel.transport.bindings.duplicate.args", "", parse_str),
    # datagrams per publication per duty cycle: Aeron's default is 2; ours sends more per cycle because each cycle
    # costs Python (16 against 8: CPU per sent 1 KiB datagram down ~14 %, docs/performance.md)
    Setting("network_publication_max_messages_per_send", "aeron.network.publication.max.messages.per.send", 16,
             parse_int),
    # name resolution (name_resolver.py): which resolver (default, driver; unset: driver when a resolver interface
    # is set), and the driver resolver's name, interface, bootstrap neighbours, timeout and intervals
    Setting("name_resolver_supplier", "aeron.name.resolver.supplier", "", _parse_name_resolver_supplier),
    Setting("resolver_name", "aeron.driver.resolver.name", "", parse_str),
    Setting("resolver_interface", "aeron.driver.resolver.interface", "", parse_str),
    Setting("resolver_bootstrap_neighbor", "aeron.driver.resolver.bootstrap.neighbor", "", parse_str),
    Setting("resolver_neighbor_timeout_ns", "aeron.driver.resolver.neighbor.timeout", 10_000_000_000,
             parse_duration_ns),
    Setting("resolver_self_resolution_interval_ns", "aeron.driver.resolver.self.resolution.interval",
             1_000_000_000, parse_duration_ns),
    Setting("resolver_neighbor_resolution_interval_ns", "aeron.driver.resolver.neighbor.resolution.interval",
             2_000_000_000, parse_duration_ns),
    Setting("resolver_bootstrap_neighbor_resolution_interval_ns",
             "aeron.driver.resolver.bootstrap.neighbor.resolution.interval", 10_000_000_000, parse_duration_ns),
    # how often silent unicast endpoints have their names resolved again (0: never)
    Setting("re_resolution_check_interval_ns", "aeron.driver.reresolution.check.interval", 1_000_000_000,
             parse_duration_ns, env="AERON_DRIVER_RERESOLUTION_CHECK_INTERVAL"),
    # ours: a CPU latency QoS request held while the driver runs (aeron/common/cpu_latency.py, docs/wakeup.md);
    # None leaves the system alone
    Setting("cpu_latency_qos_us", "aeron.driver.cpu.latency.qos.us", None, _parse_cpu_latency_us,
            check=check_cpu_latency_us),
    Setting("cpu_latency_qos_path", "aeron.driver.cpu.latency.qos.path", DEFAULT_CPU_LATENCY_QOS_PATH, _parse_path),
    # ours: how long a thread on the ``wakeup`` idle strategy keeps running its data half after data moved
    # (WakeupIdleStrategy._fast_spin); 0 parks at once, for a machine with more busy threads than cores
    Setting("wakeup_data_spin_ns", "aeron.driver.wakeup.data.spin", WakeupIdleStrategy.DEFAULT_DATA_SPIN_NS,
            parse_duration_ns),
)


if TYPE_CHECKING:
    from typing_extensions import Buffer

    # ``should_drop(buffer, length)`` for each received datagram (aeron's loss generator transport bindings)
    LossGeneratorFunction = Callable[[Buffer, int], bool]


class Context(SettingsContext):
    """MediaDriver configuration.

    ``Context(properties=None, *, environ=None, term_buffer_length=..., ...)``: ``environ`` defaults to
    ``os.environ`` (pass ``{}`` to ignore it); ``properties`` is a mapping or an iterable of
    ``"key=value"`` strings with Java property names (``aeron.dir``) or ``AERON_*`` names; every setting is
    also a keyword parameter and an attribute of the same name (``ctx.term_buffer_length = 65536``), validated
    when assigned.

    Who may read the driver's files: by default, as the C driver, files are created 0o666 and
    directories 0o777 less the process umask, so under the usual umask 022 every local user can read
    cnc.dat and the log buffers (the messages). ``dir_file_mode`` (``aeron.dir.file.mode``,
    ``AERON_DIR_FILE_MODE``; octal, e.g. ``660`` or ``0o660``; an int as an attribute) sets the exact
    permissions, whatever the umask, of every file the driver creates: cnc.dat, the loss report, every
    log buffer and the error dump written beside a replaced directory. The aeron dir and its
    ``publications`` and ``images`` directories get the same mode with search added wherever read is
    allowed. ``660`` shares with the group only (files 0o660, directories 0o770: clients must run as the
    driver's user or in its group), ``600`` keeps everything to the driver's user. The owner must be
    able to read and write.

    How fast an idle CPU wakes: ``cpu_latency_qos_us`` (``aeron.driver.cpu.latency.qos.us``,
    ``AERON_DRIVER_CPU_LATENCY_QOS_US``; microseconds, 0..2**31-1; unset by default, leaving the system alone)
    makes the driver hold a CPU latency QoS request from its start to its close, through
    ``cpu_latency_qos_path`` (``aeron.driver.cpu.latency.qos.path``, default ``/dev/cpu_dma_latency``, writable by
    root only unless granted). At 0, idle CPUs poll in the kernel's idle loop instead of halting, so a parked thread
    wakes in microseconds, at the price of cores that never sleep (power; on a VM the host sees busy vCPUs):
    docs/wakeup.md. A request that cannot be held fails the launch with CpuLatencyQosError.

    ``wakeup_data_spin_ns`` (``aeron.driver.wakeup.data.spin``, ours; 200 µs): how long a driver thread on the
    ``wakeup`` idle strategy keeps running its compiled send and receive passes after data moved before it parks
    (docs/wakeup.md, "The driver's data spin"). 0 parks at once: better where more threads than cores want to run,
    such as three cluster members on two cores (docs/performance.md, "Cluster").

    What forged SETUP frames can take: an image is unconfirmed until its source sends a frame after its SETUP, and
    the unconfirmed images of each receive endpoint are bounded, in number and in log bytes, per endpoint
    (``unconfirmed_images_max``, ``aeron.receiver.unconfirmed.images.max``, 64; ``unconfirmed_log_bytes_max``,
    ``aeron.receiver.unconfirmed.log.bytes.max``, 1 GiB) and per source address and port on it
    (``unconfirmed_source_images_max``, ``aeron.receiver.unconfirmed.source.images.max``, 16;
    ``unconfirmed_source_log_bytes_max``, ``aeron.receiver.unconfirmed.source.log.bytes.max``, 512 MiB); a holder of
    none takes one image of any size. A SETUP beyond them is counted (``Unconfirmed images rejected``) and dropped;
    while SETUPs are turned away, unconfirmed images go after ``unconfirmed_image_timeout_ns``
    (``aeron.receiver.unconfirmed.image.timeout``, 2 s) and only sessions that ask again get the room. The C driver
    has no such bounds: docs/operations.md.
    """

    # typed settings (values, defaults and property names in _SETTINGS)
    aeron_dir: str | None
    dir_delete_on_start: bool
    dir_delete_on_shutdown: bool
    dir_warn_if_exists: bool
    dir_file_mode: int | None
    threading_mode: ThreadingMode
    term_buffer_length: int
    ipc_term_buffer_length: int
    term_buffer_sparse_file: bool
    mtu_length: int
    ipc_mtu_length: int
    ipc_publication_term_window_length: int
    file_page_size: int
    client_liveness_timeout_ns: int
    publication_unblock_timeout_ns: int
    publication_linger_timeout_ns: int
    untethered_window_limit_timeout_ns: int
    untethered_resting_timeout_ns: int
    timer_interval_ns: int
    counters_free_to_reuse_timeout_ns: int
    driver_timeout_ms: int
    counters_buffer_length: int
    error_buffer_length: int
    conductor_buffer_length: int
    clients_buffer_length: int
    loss_report_buffer_length: int
    publication_reserved_session_id_low: int
    publication_reserved_session_id_high: int
    driver_termination_validator: str
    print_configuration: bool
    conductor_idle_strategy: str
    sender_idle_strategy: str
    receiver_idle_strategy: str
    sharednetwork_idle_strategy: str
    shared_idle_strategy: str
    image_liveness_timeout_ns: int
    stream_session_limit: int
    unconfirmed_images_max: int
    unconfirmed_log_bytes_max: int
    unconfirmed_source_images_max: int
    unconfirmed_source_log_bytes_max: int
    unconfirmed_image_timeout_ns: int
    publication_connection_timeout_ns: int
    status_message_timeout_ns: int
    initial_window_length: int
    socket_rcvbuf: int
    socket_sndbuf: int
    publication_term_window_length: int
    nak_unicast_delay_ns: int
    nak_unicast_retry_delay_ratio: int
    nak_multicast_max_backoff_ns: int
    nak_multicast_group_size: int
    max_resend: int
    multicast_flow_control_strategy: str
    unicast_flow_control_strategy: str
    flow_control_group_tag: int
    flow_control_group_min_size: int
    flow_control_receiver_timeout_ns: int
    receiver_group_tag: int | None
    spies_simulate_connection: bool
    network_publication_max_messages_per_send: int
    udp_channel_incoming_interceptors: str
    cubic_congestion_control_measure_rtt: bool
    cubic_congestion_control_initial_rtt_ns: int
    loss_args: str
    fixed_loss_args: str
    multi_gap_loss_args: str
    reorder_args: str
    duplicate_args: str
    name_resolver_supplier: str
    resolver_name: str
    resolver_interface: str
    resolver_bootstrap_neighbor: str
    resolver_neighbor_timeout_ns: int
    resolver_self_resolution_interval_ns: int
    resolver_neighbor_resolution_interval_ns: int
    resolver_bootstrap_neighbor_resolution_interval_ns: int
    re_resolution_check_interval_ns: int
    cpu_latency_qos_us: int | None
    cpu_latency_qos_path: str
    wakeup_data_spin_ns: int

    SETTINGS = _SETTINGS
    CONTEXT_NAME = "MediaDriver.Context"
    COMPONENT = "media driver"
    EXTRA_ATTRS = ("termination_hook", "termination_validator", "epoch_clock_ms", "nano_clock",
                   "receive_loss_generator")

    def __init__(self, properties: Mapping[str, object] | Iterable[str] | None = None, *,
                 environ: Mapping[str, str] | None = None,
                 aeron_dir: str | os.PathLike[str] | None = None,
                 dir_delete_on_start: bool | None = None,
                 dir_delete_on_shutdown: bool | None = None,
                 dir_warn_if_exists: bool | None = None,
                 dir_file_mode: int | str | None = None,
                 threading_mode: ThreadingMode | str | None = None,
                 term_buffer_length: int | None = None,
                 ipc_term_buffer_length: int | None = None,
                 term_buffer_sparse_file: bool | None = None,
                 mtu_length: int | None = None,
                 ipc_mtu_length: int | None = None,
                 ipc_publication_term_window_length: int | None = None,
                 file_page_size: int | None = None,
                 client_liveness_timeout_ns: int | None = None,
                 publication_unblock_timeout_ns: int | None = None,
                 publication_linger_timeout_ns: int | None = None,
                 untethered_window_limit_timeout_ns: int | None = None,
                 untethered_resting_timeout_ns: int | None = None,
                 timer_interval_ns: int | None = None,
                 counters_free_to_reuse_timeout_ns: int | None = None,
                 driver_timeout_ms: int | None = None,
                 counters_buffer_length: int | None = None,
                 error_buffer_length: int | None = None,
                 conductor_buffer_length: int | None = None,
                 clients_buffer_length: int | None = None,
                 loss_report_buffer_length: int | None = None,
                 publication_reserved_session_id_low: int | None = None,
                 publication_reserved_session_id_high: int | None = None,
                 driver_termination_validator: str | None = None,
                 print_configuration: bool | None = None,
                 conductor_idle_strategy: str | None = None,
                 sender_idle_strategy: str | None = None,
                 receiver_idle_strategy: str | None = None,
                 sharednetwork_idle_strategy: str | None = None,
                 shared_idle_strategy: str | None = None,
                 image_liveness_timeout_ns: int | None = None,
                 stream_session_limit: int | None = None,
                 unconfirmed_images_max: int | None = None,
                 unconfirmed_log_bytes_max: int | None = None,
                 unconfirmed_source_images_max: int | None = None,
                 unconfirmed_source_log_bytes_max: int | None = None,
                 unconfirmed_image_timeout_ns: int | None = None,
                 publication_connection_timeout_ns: int | None = None,
                 status_message_timeout_ns: int | None = None,
                 initial_window_length: int | None = None,
                 socket_rcvbuf: int | None = None,
                 socket_sndbuf: int | None = None,
                 publication_term_window_length: int | None = None,
                 nak_unicast_delay_ns: int | None = None,
                 nak_unicast_retry_delay_ratio: int | None = None,
                 nak_multicast_max_backoff_ns: int | None = None,
                 nak_multicast_group_size: int | None = None,
                 max_resend: int | None = None,
                 multicast_flow_control_strategy: str | None = None,
                 unicast_flow_control_strategy: str | None = None,
                 flow_control_group_tag: int | None = None,
                 flow_control_group_min_size: int | None = None,
                 flow_control_receiver_timeout_ns: int | None = None,
                 receiver_group_tag: int | None = None,
                 spies_simulate_connection: bool | None = None,
                 network_publication_max_messages_per_send: int | None = None,
                 udp_channel_incoming_interceptors: str | None = None,
                 cubic_congestion_control_measure_rtt: bool | None = None,
                 cubic_congestion_control_initial_rtt_ns: int | None = None,
                 loss_args: str | None = None,
                 fixed_loss_args: str | None = None,
                 multi_gap_loss_args: str | None = None,
                 reorder_args: str | None = None,
                 duplicate_args: str | None = None,
                 name_resolver_supplier: str | None = None,
                 resolver_name: str | None = None,
                 resolver_interface: str | None = None,
                 resolver_bootstrap_neighbor: str | None = None,
                 resolver_neighbor_timeout_ns: int | None = None,
                 resolver_self_resolution_interval_ns: int | None = None,
                 resolver_neighbor_resolution_interval_ns: int | None = None,
                 resolver_bootstrap_neighbor_resolution_interval_ns: int | None = None,
                 re_resolution_check_interval_ns: int | None = None,
                 cpu_latency_qos_us: int | None = None,
                 cpu_latency_qos_path: str | os.PathLike[str] | None = None,
                 wakeup_data_spin_ns: int | None = None,
                 termination_hook: Callable[[], None] | None = None,
                 termination_validator: Callable[[bytes], bool] | None = None,
                 epoch_clock_ms: Callable[[], int] | None = None,
                 nano_clock: Callable[[], int] | None = None,
                 receive_loss_generator: Callable[[], LossGeneratorFunction] | None = None) -> None:
        """Defaults, then ``environ``'s ``AERON_*`` values, then ``properties``, then the keyword settings, each
        validated. Every setting is a keyword of its own, so a type checker reports a misspelt one; a keyword left
        at None keeps what came before it (to clear an optional setting such as ``aeron_dir``, assign None to the
        attribute afterwards).

        Raises ConfigurationError naming the property for a bad value or an unknown name.
        """
        given = {name: value for name, value in locals().items()
                 if name not in ("self", "properties", "environ", "__class__") and value is not None}
        self.termination_hook: Callable[[], None] | None = None
        self.termination_validator: Callable[[bytes], bool] | None = None
        self.epoch_clock_ms: Callable[[], int] = epoch_ms
        self.nano_clock: Callable[[], int] = time.monotonic_ns
        # tests: a loss generator for received datagrams, ``should_drop(buffer, length) -> bool`` built per
        # receive endpoint by this factory (aeron's loss generator transport bindings); None in production
        self.receive_loss_generator: Callable[[], LossGeneratorFunction] | None = None
        super().__init__(properties, environ=environ, **given)

    @classmethod
    def usage(cls) -> str:
        """Every property the driver reads, with its variable and its default (``aeron-driver --help``)."""
        return cls.describe_settings("Media driver properties (environment variable), default:",
                                     {"aeron_dir": _default_dir()})

    # -- derived values ------------------------------------------------------------------------------
    def resolved_dir(self) -> str:
        """The absolute Aeron directory: ``aeron_dir``, else the default ``/dev/shm/aeron-<user>``."""
        return os.path.abspath(self.aeron_dir if self.aeron_dir else _default_dir())

    def loss_generator_factory(self) -> Callable[[], LossGeneratorFunction] | None:
        """The receive loss generator: ``receive_loss_generator`` if set, else the one the C driver's
        interceptor settings name (``loss``: rate, seed, recv-msg-mask; ``fixed-loss``: term-id, term-offset,
        length; ``multi-gap-loss``: term-id, gap-radix, gap-length, total-gaps), or ours (``reorder`` and
        ``duplicate``: rate, seed, recv-msg-mask, depth)."""
        if self.receive_loss_generator is not None:
            return self.receive_loss_generator
        names = [n.strip() for n in self.udp_channel_incoming_interceptors.split(",") if n.strip()]
        if not names:
            return None
        known = {"loss": self.loss_args, "fixed-loss": self.fixed_loss_args,
                 "multi-gap-loss": self.multi_gap_loss_args, "reorder": self.reorder_args,
                 "duplicate": self.duplicate_args}
        unknown = [name for name in names if name not in known]
        if unknown:
            raise ConfigurationError(f"unknown incoming interceptor {unknown[0]!r} (loss, fixed-loss, "
                                     f"multi-gap-loss, reorder, duplicate)")
        chain = [(name, known[name]) for name in names]

        def generator() -> LossGenerator:
            # the interceptors in the order listed, as the C driver chains them: each sees what the last let through
            return LossGenerator.chain(LossGenerator.from_args(name, args) for name, args in chain)
        generator()                                  # bad arguments fail now, at configuration
        return generator

    def idle_strategy_name(self) -> str:
        """The idle strategy name of the conductor's thread: ``shared_idle_strategy`` in SHARED mode, else
        ``conductor_idle_strategy``."""
        mode = self.threading_mode
        if mode is ThreadingMode.SHARED:
            return self.shared_idle_strategy
        return self.conductor_idle_strategy

    def as_properties(self) -> dict[str, str]:
        """Every setting as ``{java property name: value}``, for logging."""
        out = {}
        for s in self.SETTINGS:
            value = getattr(self, s.attr)
            if s.attr == "aeron_dir":
                value = self.resolved_dir()
            elif s.attr == "dir_file_mode":
                value = "" if value is None else f"0{value:o}"
            elif s.attr == "cpu_latency_qos_us" and value is None:
                value = ""
            out[s.prop] = value.name if isinstance(value, ThreadingMode) else str(value)
        return out

    def conclude(self) -> "Context":
        """Cross-field validation done at start (C ``aeron_driver_init``); raises ConfigurationError."""
        for attr in ("term_buffer_length", "ipc_term_buffer_length"):
            try:
                check_term_length(getattr(self, attr))
            except ConfigurationError as exc:
                raise ConfigurationError(f"{self.setting(attr).prop}: {exc}") from exc
        for attr in ("mtu_length", "ipc_mtu_length"):
            try:
                check_mtu_length(getattr(self, attr))
            except ConfigurationError as exc:
                raise ConfigurationError(f"{self.setting(attr).prop}: {exc}") from exc
        try:
            check_page_size(self.file_page_size)
        except ConfigurationError as exc:
            raise ConfigurationError(f"aeron.file.page.size: {exc}") from exc
        if self.stream_session_limit < 1:
            raise ConfigurationError(f"aeron.driver.stream.session.limit must be >= 1, got {self.stream_session_limit}")
        for attr in ("unconfirmed_images_max", "unconfirmed_source_images_max", "unconfirmed_image_timeout_ns"):
            if getattr(self, attr) < 1:
                raise ConfigurationError(f"{self.setting(attr).prop} must be >= 1, got {getattr(self, attr)}")
        for attr in ("unconfirmed_log_bytes_max", "unconfirmed_source_log_bytes_max"):
            if getattr(self, attr) < 0:
                raise ConfigurationError(f"{self.setting(attr).prop} must be >= 0, got {getattr(self, attr)}")
        if not self.publication_unblock_timeout_ns > self.client_liveness_timeout_ns:
            raise ConfigurationError(
                "aeron.publication.unblock.timeout must be greater than aeron.client.liveness.timeout "
                f"({self.publication_unblock_timeout_ns} <= {self.client_liveness_timeout_ns})")
        if not self.client_liveness_timeout_ns > self.timer_interval_ns:
            raise ConfigurationError(
                "aeron.client.liveness.timeout must be greater than aeron.timer.interval "
                f"({self.client_liveness_timeout_ns} <= {self.timer_interval_ns})")
        if self.timer_interval_ns <= 0:
            raise ConfigurationError("aeron.timer.interval must be > 0")
        if self.driver_timeout_ms <= 0:
            raise ConfigurationError("aeron.driver.timeout must be > 0")
        if self.counters_buffer_length < 8192 or self.counters_buffer_length % 128:
            # room for the 46 system counters and some more; the C driver's minimum is 1 MiB
            raise ConfigurationError(
                f"aeron.counters.buffer.length must be a multiple of 128 and >= 8192, got {self.counters_buffer_length}")
        for attr, trailer in (("conductor_buffer_length", 768), ("clients_buffer_length", 128)):
            capacity = getattr(self, attr) - trailer
            if capacity < 8 or capacity & (capacity - 1):
                raise ConfigurationError(
                    f"{self.setting(attr).prop}: capacity {capacity} (length - {trailer}-byte trailer) "
                    "must be a power of two >= 8")
        if self.error_buffer_length < 1024 or self.error_buffer_length % 8:
            raise ConfigurationError("aeron.error.buffer.length must be a multiple of 8 and >= 1024")
        if self.loss_report_buffer_length <= 0:
            raise ConfigurationError("aeron.loss.report.buffer.length must be > 0")
        if self.ipc_publication_term_window_length < 0:
            raise ConfigurationError("aeron.ipc.publication.term.window.length must be >= 0")
        if self.publication_reserved_session_id_low > self.publication_reserved_session_id_high:
            raise ConfigurationError("aeron.publication.reserved.session.id.low must be <= high")
        if self.resolver_interface and not self.resolver_name:
            raise ConfigurationError("aeron.driver.resolver.name (AERON_DRIVER_RESOLVER_NAME) is required when "
                                     "aeron.driver.resolver.interface is set")
        for attr in ("resolver_neighbor_timeout_ns", "resolver_self_resolution_interval_ns",
                     "resolver_neighbor_resolution_interval_ns",
                     "resolver_bootstrap_neighbor_resolution_interval_ns"):
            if getattr(self, attr) <= 0:
                raise ConfigurationError(f"{self.setting(attr).prop} must be > 0")
        return self

    def __repr__(self) -> str:
        """Every setting, by property name."""
        return f"MediaDriver.Context({self.as_properties()!r})"


# Directory rules. -----------------------------------------------------------------------------------

def is_driver_active(aeron_dir: str, driver_timeout_ms: int, now_ms: int | None = None) -> bool:
    """True when ``aeron_dir/cnc.dat`` has a heartbeat younger than the driver timeout (CommonContext.isDriverActive)
    and its driver has not died: a pid gone from this host with a stopped heartbeat means a dead driver at once,
    without waiting out the driver timeout (``aeron.common.cnc_attach.is_driver_dead``)."""
    path = os.path.join(aeron_dir, CNC_FILE)
    if not os.path.exists(path):
        return False
    deadline = time.monotonic() + driver_timeout_ms / 1000.0
    while True:
        try:
            cnc = CncFile.map_existing(path)
            break
        except CncNotInitialisedError:
            # a driver may be creating it right now: wait for its version, up to the driver timeout, unless the
            # pid it wrote first is gone (it died while creating the file)
            if time.monotonic() > deadline or driver_pid_is_gone(read_cnc_pid(path)):
                return False
            time.sleep(0.001)
        except Exception:       # noqa: BLE001 - unreadable, truncated or another major version: not active
            return False
    try:
        if semantic_version_major(cnc.version) != 0 or not cnc.is_file_length_sufficient():
            return False
        section = cnc.to_driver_buffer()
        try:
            ring = ManyToOneRingBuffer(section)
            try:
                heartbeat = ring.consumer_heartbeat_time
                now = time.time_ns() // 1_000_000 if now_ms is None else now_ms
                if not (heartbeat > 0 and now - heartbeat <= driver_timeout_ms):
                    return False
                return not is_driver_dead(cnc.pid, lambda: ring.consumer_heartbeat_time)
            finally:
                ring.close()
        finally:
            section.close()
    finally:
        cnc.close()


def _save_existing_errors(aeron_dir: str, file_mode: int | None = None) -> str | None:
    """Write the old error log beside the directory, as the C driver does (aeron_report_existing_errors)."""
    try:
        records = driver_error_records(aeron_dir)
    except Exception:       # noqa: BLE001 - nothing readable (or of another major version) to save
        return None
    if not records:
        return None
    stamp = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H-%M-%S.%f")
    stamp = stamp[:-3] + datetime.datetime.now().astimezone().strftime("%z")
    target = f"{aeron_dir.rstrip(os.sep)}-{stamp}-error.log"
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666 if file_mode is None else file_mode)
    with open(fd, "w") as f:
        if file_mode is not None:
            os.fchmod(fd, file_mode)        # exactly as configured, whatever the umask
        f.write(format_error_log(records))
    return target


def ensure_dir_is_recreated(ctx: Context, log: Callable[[str], None] | None = None) -> None:
    """Port of aeron_driver_ensure_dir_is_recreated: refuse an active driver, replace a stale one."""
    aeron_dir = ctx.resolved_dir()
    # a symlink, another user's directory or a file: AeronDirError before anything is read or removed
    if check_aeron_dir_is_safe(aeron_dir):
        if ctx.dir_warn_if_exists and log is not None:
            log(f"WARNING: {aeron_dir} exists")
        if not ctx.dir_delete_on_start:
            if is_driver_active(aeron_dir, ctx.driver_timeout_ms):
                raise ActiveDriverError(f"Active media driver detected: {os.path.join(aeron_dir, CNC_FILE)}")
            saved = _save_existing_errors(aeron_dir, ctx.dir_file_mode)
            if saved and log is not None:
                log(f"WARNING: Existing errors saved to: {saved}")
        failures = delete_aeron_dir(aeron_dir)
        if failures:
            # a new driver must not start over an old driver's leftovers
            raise AeronDirError(f"could not remove the old aeron dir {aeron_dir}: {describe_failures(failures)}",
                                aeron_dir, failures)
    for sub in ("", "publications", "images"):
        os.makedirs(os.path.join(aeron_dir, sub), exist_ok=True)
        if ctx.dir_file_mode is not None:
            os.chmod(os.path.join(aeron_dir, sub), dir_mode_for(ctx.dir_file_mode))


# The driver. ----------------------------------------------------------------------------------------

_Context = Context


class MediaDriver:
    """A media driver: IPC and UDP (unicast, multicast, multi-destination-cast).

    ``MediaDriver.launch(ctx)`` starts its conductor, sender and receiver agents on the threads
    ``ctx.threading_mode`` says (none in INVOKER mode, where the application calls ``do_work()``);
    ``launch_embedded()`` uses a fresh directory under /dev/shm removed on close. ``close()`` is idempotent;
    the driver is also a context manager.
    """

    Context = Context

    def __init__(self, context: _Context) -> None:
        """Conclude ``context``, prepare the directory and start the agents; prefer :meth:`launch`.

        Raises ConfigurationError for inconsistent settings, CpuLatencyQosError when ``cpu_latency_qos_us`` is set
        and the request cannot be held, and ActiveDriverError when a live driver already uses the directory.
        """
        self._ctx = context.conclude()
        self._closed = False
        self._lock = threading.Lock()
        self._terminated = threading.Event()
        self._aeron_dir = context.resolved_dir()
        # first: a driver that cannot have the request it was asked for fails before it touches the directory, and
        # its agents run with the request in force from their first duty cycle
        self._cpu_latency: CpuLatencyRequest | None = None
        if context.cpu_latency_qos_us is not None:
            self._cpu_latency = CpuLatencyRequest(context.cpu_latency_qos_us, context.cpu_latency_qos_path)
        try:
            self._open(context)
        except BaseException:
            self._release_cpu_latency()
            raise

    def _open(self, context: _Context) -> None:
        ensure_dir_is_recreated(context, log=_stderr)
        # before cnc.dat: a client that sees the driver ready finds the board too
        self._wakeup_board = open_board(self._aeron_dir, create=True, file_mode=context.dir_file_mode)
        self._waiters: list[Any] = []
        try:
            self._conductor = DriverConductor(context, termination_hook=self._on_termination)
        except BaseException:
            # e.g. the resolver interface could not be bound: nothing of this driver stays behind
            self._close_wakeup()
            if self._ctx.dir_delete_on_shutdown:
                self._delete_dir_on_shutdown()
            raise
        self._runners: list[Any] = []
        self._invoker = None
        self._invoked: Any = None
        conductor = self._conductor
        on_error = conductor.on_agent_error          # logs the error and bumps the errors counter itself
        try:
            mode = context.threading_mode
            if mode is ThreadingMode.INVOKER or mode is ThreadingMode.SHARED:
                conductor.sender.shares_conductor_thread = True
            if mode is ThreadingMode.INVOKER:
                agents = (conductor, conductor.sender, conductor.receiver)
                invoked: Any = CompositeAgent(*agents)
                if self._wakeup_board is not None:
                    invoked = SignallingAgent(invoked, self._wakeup_board, conductor, agents)
                self._invoked = invoked
                self._invoker = AgentInvoker(invoked, error_handler=on_error)
                self._invoker.start()
            elif mode is ThreadingMode.SHARED:
                # Aeron's order (aeron_driver_shared_do_work): a datagram offered is sent, and one that arrived is
                # received, before the conductor's housekeeping
                self._start((conductor.sender, conductor.receiver, conductor), context.shared_idle_strategy, on_error)
            elif mode is ThreadingMode.SHARED_NETWORK:
                self._start((conductor,), context.conductor_idle_strategy, on_error)
                self._start((conductor.sender, conductor.receiver), context.sharednetwork_idle_strategy, on_error)
            else:
                self._start((conductor,), context.conductor_idle_strategy, on_error)
                self._start((conductor.sender,), context.sender_idle_strategy, on_error)
                self._start((conductor.receiver,), context.receiver_idle_strategy, on_error)
        except BaseException:
            for runner in self._runners:
                runner.close()
            conductor.on_close()
            self._close_wakeup()
            raise

    def _start(self, agents: tuple[Any, ...], idle_name: str, on_error: Callable[[BaseException], None]) -> None:
        agent: Any = agents[0] if len(agents) == 1 else CompositeAgent(*agents)
        idle = idle_strategy_from_name(idle_name)
        if isinstance(idle, WakeupIdleStrategy):
            idle.data_spin_ns = self._ctx.wakeup_data_spin_ns
        board = self._wakeup_board
        if board is not None:
            # signals go out whatever our idle strategy: our clients parked on us wake either way
            agent = SignallingAgent(agent, board, self._conductor, agents)
            if type(idle) is BackoffIdleStrategy:
                agent.probe_backoff(idle)
            waiter = bind_idle_strategy(idle, board, self._conductor, agents, agent)
            if waiter is not None:
                self._waiters.append(waiter)
        runner = AgentRunner(agent, idle, error_handler=on_error)
        self._runners.append(runner)
        runner.start()

    def _release_cpu_latency(self) -> None:
        if self._cpu_latency is not None:
            self._cpu_latency.release()

    def _close_wakeup(self) -> None:
        for waiter in self._waiters:
            waiter.close()
        self._waiters.clear()
        if self._wakeup_board is not None:
            self._wakeup_board.close()
            self._wakeup_board = None
            # at rest the directory holds only Aeron's files
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(self._aeron_dir, WAKEUP_FILE))

    @classmethod
    def launch(cls, context: _Context | None = None) -> "MediaDriver":
        """Start a driver with ``context`` (a default Context when None)."""
        return cls(context if context is not None else _Context())

    @classmethod
    def launch_embedded(cls, context: _Context | None = None) -> "MediaDriver":
        """Start a driver in a fresh directory under /dev/shm, removed on close."""
        ctx = context if context is not None else _Context()
        if not ctx.aeron_dir:
            base = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
            ctx.aeron_dir = os.path.join(base, f"aeron-{getpass.getuser()}-{uuid.uuid4().hex[:12]}")
        ctx.dir_delete_on_shutdown = True
        return cls(ctx)

    @property
    def aeron_dir(self) -> str:
        """The absolute directory of this driver's cnc.dat and log files."""
        return self._aeron_dir

    @property
    def context(self) -> _Context:
        """The concluded Context."""
        return self._ctx

    @property
    def conductor(self):
        """The driver conductor agent (tests and tools)."""
        return self._conductor

    @property
    def is_closed(self) -> bool:
        """True once :meth:`close` ran."""
        return self._closed

    def do_work(self) -> int:
        """One duty cycle of the conductor, sender and receiver (INVOKER mode only). Returns the work count."""
        if self._invoker is None:
            raise IllegalStateError("do_work() is only for ThreadingMode.INVOKER")
        if self._closed:
            raise IllegalStateError("media driver is closed")
        return self._invoker.invoke()

    @property
    def invoker(self) -> AgentInvoker | None:
        """The invoker of the conductor, sender and receiver in INVOKER mode (None otherwise): for an application
        thread that runs them among its own agents (aeron.driver.driver_thread.DriverThreadAgent)."""
        return self._invoker

    def bind_invoker_idle_strategy(self, idle: IdleStrategy, mask: int, timers: Any) -> Any:
        """INVOKER mode: bind ``idle`` (a ``wakeup`` idle strategy) for the application thread that invokes this
        driver, as a SHARED driver thread's is bound (its UDP sockets, client commands, data to send), also woken by
        ``mask`` (the board's bits of what the thread's other agents poll), its parks timed by ``timers`` (which
        answers ``active``, ``time_to_deadline_ns`` and ``quiet_park_ns``; see DriverThreadAgent). Returns the waiter,
        closed with the driver (None when ``idle`` is another kind or there is no board)."""
        if self._invoker is None:
            raise IllegalStateError("bind_invoker_idle_strategy() is only for ThreadingMode.INVOKER")
        conductor = self._conductor
        agents = (conductor, conductor.sender, conductor.receiver)
        if isinstance(idle, WakeupIdleStrategy):
            idle.data_spin_ns = 0       # no data half of its own to spin on: its other agents' data is in the cycle
        waiter = bind_idle_strategy(idle, self._wakeup_board, conductor, agents, timers)
        if waiter is not None:
            waiter.set_mask(waiter.mask | mask)
            if isinstance(self._invoked, SignallingAgent):
                self._invoked.backoff_park_ns = idle.max_park_ns    # type: ignore[attr-defined]
            self._waiters.append(waiter)
        return waiter

    @property
    def invoked_agent(self) -> Any:
        """What the invoker runs in INVOKER mode: the SignallingAgent of the three agents (with a wake-up board), whose
        ``active``, ``time_to_deadline_ns`` and ``quiet_park_ns`` time a park of the invoking thread."""
        return self._invoked

    def _on_termination(self) -> None:
        self._terminated.set()
        hook = self._ctx.termination_hook
        if hook is not None:
            hook()

    @property
    def is_terminated(self) -> bool:
        """True once a TERMINATE_DRIVER command was accepted."""
        return self._terminated.is_set()

    def wait_for_termination(self, timeout_s: float | None = None) -> bool:
        """Wait until a TERMINATE_DRIVER command is accepted; False when ``timeout_s`` passed first."""
        return self._terminated.wait(timeout_s)

    def close(self) -> None:
        """Stop the agents, release every file and socket, and delete the directory if so configured. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        try:
            # network agents first, the conductor (whose on_close releases cnc, logs, files, sockets) last
            for runner in reversed(self._runners):
                runner.close()
            if self._invoker is not None:
                self._invoker.close()
            self._close_wakeup()
        finally:
            try:
                if not self._conductor.is_closed:
                    self._conductor.on_close()
                if self._ctx.dir_delete_on_shutdown:
                    self._delete_dir_on_shutdown()
            finally:
                # last: the agents have stopped, and the request goes whatever else failed
                self._release_cpu_latency()

    def _delete_dir_on_shutdown(self) -> None:
        # close() does not raise for leftovers: it says what stayed behind and why
        try:
            failures = delete_aeron_dir(self._aeron_dir)
        except AeronDirError as exc:
            _stderr(f"WARNING: aeron dir not deleted on shutdown: {exc}")
            return
        if failures:
            _stderr(f"WARNING: aeron dir {self._aeron_dir} not fully deleted on shutdown: "
                    f"{describe_failures(failures)}")

    def __enter__(self) -> "MediaDriver":
        """Return the driver; the ``with`` block closes it."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the driver."""
        self.close()

    def __repr__(self) -> str:
        """Directory, threading mode and state."""
        state = "closed" if self._closed else "running"
        return f"<MediaDriver {self._aeron_dir} {self._ctx.threading_mode.name} {state}>"


def _stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
