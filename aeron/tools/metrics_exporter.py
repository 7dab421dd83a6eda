# SPDX-License-Identifier: Apache-2.0
"""Prometheus exporter: every counter of a running media driver (ours or the official ``aeronmd``), read from its
cnc.dat at scrape time with the counters reader AeronStat uses. Needs the ``metrics`` extra (prometheus-client);
without it the command says so in one line.

    aeron-metrics-exporter [-d|--dir DIR] [--port PORT] [--addr ADDR] [--driver-timeout MS]

Serves ``http://ADDR:PORT/metrics`` (default 127.0.0.1:9360; the directory defaults to $AERON_DIR, else
/dev/shm/aeron-<user>). Nothing polls between scrapes: a custom collector maps cnc.dat, reads and unmaps it for
each scrape, so a restarted driver (a new cnc.dat) is followed without restarting the exporter.

Metrics (every counter of the driver appears in exactly one ``aeron_*counter*``/position family):

``aeron_driver_up``
    1 when cnc.dat could be read and the driver heartbeat is younger than ``--driver-timeout`` (10 s), else 0.
    When cnc.dat cannot be read it is the only metric served.
``aeron_driver_heartbeat_age_seconds``
    Age of the driver's last heartbeat in the to-driver ring buffer.
``aeron_driver_info{pid, cnc_version}``
    Always 1; the driver's pid and the cnc.dat version.
``aeron_system_counter{id, name, label}``
    The driver's system counters (type 0): ``id`` (0..45), ``name`` a stable snake_case name
    (``bytes_sent``, ``nak_messages_received``, ``errors``...; ``system_counter_<id>`` for an id this package does
    not know), ``label`` the driver's own label. Gauges: most only grow while the driver runs, some are levels
    (``bytes_currently_mapped``) or versions (``aeron_version``).
``aeron_stream_position{type, registration_id, session_id, stream_id, channel}``
    Per-stream positions and limits, in bytes: ``type`` is the counter's name up to its first space (``pub-pos``,
    ``pub-lmt``, ``snd-pos``, ``snd-lmt``, ``rcv-hwm``, ``rcv-pos``, ``sub-pos``); ``registration_id`` tells
    several subscribers of one stream apart; ``channel`` as in the counter labels.
``aeron_stream_counter{type, registration_id, session_id, stream_id, channel}``
    The other per-stream counters: ``snd-bpe`` (back-pressure events), ``snd-naks-received``, ``rcv-naks-sent``.
``aeron_channel_status{type, channel}``
    Send and receive channel endpoint status (-1 errored, 0 initialising, 1 active, 2 closing).
``aeron_clients``
    Number of client heartbeat counters: the clients attached to the driver.
``aeron_counter{id, type_id, label}``
    Every other counter (client heartbeats, local socket addresses, application counters...), by its label.
``aeron_error_log_distinct_errors``, ``aeron_error_log_observations_total``
    Distinct errors in the driver's error log, and the sum of their observation counts.
``aeron_error_log_last_observation_timestamp_seconds``
    When the latest error was last observed (absent while the log is empty).
"""
from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any

try:
    from prometheus_client import start_http_server
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
    from prometheus_client.registry import Collector, CollectorRegistry
    _MISSING_EXTRA: ModuleNotFoundError | None = None
except ModuleNotFoundError as missing:
    if (missing.name or "").partition(".")[0] != "prometheus_client":
        raise
    # without the metrics extra the module still imports, so that its command can say what to install
    _MISSING_EXTRA = missing
    Collector = object  # type: ignore[assignment,misc]

from aeron._core import counters as ctr
from aeron.tools._common import default_aeron_dir, tool_parser
from aeron.tools.error_stat import read_errors
from aeron.tools.stat import read_stat
from aeron.tools.stream_stat import group_streams

DEFAULT_PORT = 9360
DEFAULT_ADDR = "127.0.0.1"
DEFAULT_DRIVER_TIMEOUT_MS = 10_000
METRICS_EXTRA_HINT = "needs the metrics extra (prometheus-client): pip install 'aeron-py[metrics]'"

SYSTEM_COUNTER_NAMES = {counter_id: name.lower() for counter_id, name, _ in ctr.SYSTEM_COUNTERS + ctr.EXTRA_SYSTEM_COUNTERS}
POSITION_TYPES = frozenset((
    ctr.DRIVER_PUBLISHER_POS_TYPE_ID, ctr.DRIVER_PUBLISHER_LIMIT_TYPE_ID, ctr.DRIVER_SENDER_POSITION_TYPE_ID,
    ctr.DRIVER_SENDER_LIMIT_TYPE_ID, ctr.DRIVER_RECEIVER_HWM_TYPE_ID, ctr.DRIVER_RECEIVER_POS_TYPE_ID,
    ctr.DRIVER_SUBSCRIBER_POSITION_TYPE_ID))
OTHER_STREAM_TYPES = frozenset((ctr.DRIVER_SENDER_BPE_TYPE_ID, ctr.DRIVER_SENDER_NAKS_RECEIVED_TYPE_ID,
                                ctr.DRIVER_RECEIVER_NAKS_SENT_TYPE_ID))
CHANNEL_STATUS_TYPES = frozenset((ctr.DRIVER_SEND_CHANNEL_STATUS_TYPE_ID, ctr.DRIVER_RECEIVE_CHANNEL_STATUS_TYPE_ID))
_STREAM_LABELS = ["type", "registration_id", "session_id", "stream_id", "channel"]


def _system_counter_id(record: ctr.CounterRecord) -> int:
    # the key of a system counter is its id (int32); fall back to the counter id for an empty key
    return int.from_bytes(record.key[:4], "little", signed=True) if len(record.key) >= 4 else record.counter_id


class AeronCollector(Collector):
    """Reads a driver's counters and error log when Prometheus scrapes (``collect``); holds nothing between
    scrapes."""

    def __init__(self, aeron_dir: str | None = None, driver_timeout_ms: int = DEFAULT_DRIVER_TIMEOUT_MS) -> None:
        """Collect from the driver in ``aeron_dir`` (the default directory when None); ``driver_timeout_ms`` is the
        heartbeat age past which ``aeron_driver_up`` is 0. ModuleNotFoundError without the metrics extra.
        """
        _require_extra()
        self.aeron_dir = aeron_dir or default_aeron_dir()
        self.driver_timeout_ms = driver_timeout_ms

    def collect(self) -> Iterator[Metric]:
        """Read cnc.dat and its error log now and yield the metric families."""
        up = GaugeMetricFamily("aeron_driver_up", "1 when the media driver's cnc.dat is readable and its heartbeat "
                                                  "is fresh", labels=["aeron_dir"])
        try:
            snapshot = read_stat(self.aeron_dir, timeout_ms=0)
            errors = read_errors(self.aeron_dir, timeout_ms=0)
        except Exception:       # noqa: BLE001 - no driver, or not yet: a scrape reports it, it does not fail
            up.add_metric([self.aeron_dir], 0)
            yield up
            return
        age_ms = snapshot.heartbeat_age_ms
        up.add_metric([self.aeron_dir], 1 if 0 <= age_ms <= self.driver_timeout_ms else 0)
        yield up
        yield GaugeMetricFamily("aeron_driver_heartbeat_age_seconds", "Age of the driver's last heartbeat",
                                value=age_ms / 1000.0)
        info = GaugeMetricFamily("aeron_driver_info", "The driver's pid and cnc.dat version",
                                 labels=["pid", "cnc_version"])
        info.add_metric([str(snapshot.pid), snapshot.cnc_version], 1)
        yield info
        yield from self._counters(snapshot.counters)
        yield GaugeMetricFamily("aeron_error_log_distinct_errors", "Distinct errors in the driver's error log",
                                value=len(errors))
        yield CounterMetricFamily("aeron_error_log_observations", "Observations of all distinct errors",
                                  value=sum(e.observation_count for e in errors))
        if errors:
            yield GaugeMetricFamily("aeron_error_log_last_observation_timestamp_seconds",
                                    "When the latest error was last observed",
                                    value=max(e.last_timestamp for e in errors) / 1000.0)

    def _counters(self, counters: tuple[ctr.CounterRecord, ...]) -> Iterator[Metric]:
        system = GaugeMetricFamily("aeron_system_counter", "Media driver system counters",
                                   labels=["id", "name", "label"])
        positions = GaugeMetricFamily("aeron_stream_position", "Per-stream positions and limits in bytes",
                                      labels=_STREAM_LABELS)
        stream_counters = GaugeMetricFamily("aeron_stream_counter", "Per-stream event counters",
                                            labels=_STREAM_LABELS)
        status = GaugeMetricFamily("aeron_channel_status", "Channel endpoint status (-1 errored, 0 initialising, "
                                                           "1 active, 2 closing)", labels=["type", "channel"])
        other = GaugeMetricFamily("aeron_counter", "Every other counter of the driver", labels=["id", "type_id", "label"])
        clients = 0
        for stream in group_streams(counters):
            for position in stream.positions:
                family = positions if position.type_id in POSITION_TYPES else stream_counters
                family.add_metric([position.name.split(" ")[0], str(position.registration_id), str(stream.session_id),
                                   str(stream.stream_id), stream.full_channel], position.value)
        for record in counters:
            type_id = record.type_id
            if type_id == ctr.DRIVER_SYSTEM_COUNTER_TYPE_ID:
                system_id = _system_counter_id(record)
                name = SYSTEM_COUNTER_NAMES.get(system_id, f"system_counter_{system_id}")
                system.add_metric([str(system_id), name, record.label], record.value)
            elif type_id in POSITION_TYPES or type_id in OTHER_STREAM_TYPES:
                continue                                    # served above, grouped by stream
            elif type_id in CHANNEL_STATUS_TYPES:
                kind = record.label.split(":", 1)[0]
                try:
                    channel = ctr.channel_status_key_decode(record.key)
                except (ValueError, IndexError):    # a key we cannot read: the label still names the channel
                    channel = record.label[len(kind) + 1:].strip()
                status.add_metric([kind, channel], record.value)
            else:
                if type_id == ctr.DRIVER_HEARTBEAT_TYPE_ID:
                    clients += 1
                other.add_metric([str(record.counter_id), str(type_id), record.label], record.value)
        yield system
        yield positions
        yield stream_counters
        yield status
        yield GaugeMetricFamily("aeron_clients", "Clients attached to the driver (client heartbeat counters)",
                                value=clients)
        yield other


def start_exporter(aeron_dir: str | None = None, port: int = DEFAULT_PORT, addr: str = DEFAULT_ADDR,
                   driver_timeout_ms: int = DEFAULT_DRIVER_TIMEOUT_MS) -> tuple[Any, threading.Thread]:
    """Serve the metrics of the driver in ``aeron_dir`` on ``http://addr:port/metrics`` from a daemon thread.
    Returns ``(server, thread)``; ``server.shutdown(); server.server_close()`` stops it. Port 0 picks a free
    port: ``server.server_port`` tells which."""
    _require_extra()
    registry = CollectorRegistry()
    registry.register(AeronCollector(aeron_dir, driver_timeout_ms))
    server, thread = start_http_server(port, addr, registry=registry)
    return server, thread


def _require_extra() -> None:
    if _MISSING_EXTRA is not None:
        raise ModuleNotFoundError(f"the Prometheus exporter {METRICS_EXTRA_HINT}", name="prometheus_client")


def main(argv: list[str] | None = None) -> int:
    """The exporter's command line (``argv`` defaults to ``sys.argv[1:]``): serve until SIGINT or SIGTERM; returns the
    exit status, 1 when it cannot listen or the metrics extra is not installed.
    """
    parser = tool_parser("aeron-metrics-exporter", "aeron.tools.metrics_exporter",
                         "Serve a media driver's counters in Prometheus format.", cnc_timeout=False)
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"HTTP port (default {DEFAULT_PORT})")
    parser.add_argument("--addr", default=DEFAULT_ADDR,
                        help=f"address to listen on (default {DEFAULT_ADDR}; 0.0.0.0 for every interface)")
    parser.add_argument("--driver-timeout", dest="driver_timeout_ms", type=int,
                        default=DEFAULT_DRIVER_TIMEOUT_MS,
                        help="heartbeat age in ms past which aeron_driver_up is 0 (default 10000)")
    args = parser.parse_args(argv)
    if _MISSING_EXTRA is not None:
        print(f"{parser.prog}: {METRICS_EXTRA_HINT}", file=sys.stderr)
        return 1
    aeron_dir = args.aeron_dir or default_aeron_dir()
    try:
        server, thread = start_exporter(aeron_dir, args.port, args.addr, args.driver_timeout_ms)
    except OSError as exc:
        print(f"metrics_exporter: cannot listen on {args.addr}:{args.port}: {exc}", file=sys.stderr)
        return 1
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print(f"serving the metrics of the media driver in {aeron_dir} on "
          f"http://{args.addr}:{server.server_port}/metrics", flush=True)
    while not stop.wait(0.5):
        pass
    server.shutdown()
    server.server_close()
    thread.join(5)
    return 0


if __name__ == "__main__":
    sys.exit(main())
