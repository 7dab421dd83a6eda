# SPDX-License-Identifier: Apache-2.0
"""What the samples share, mirroring the official C samples (aeron-samples/src/main/c): option syntax and
defaults (samples_configuration.h), the SIGINT flag, image printers, the once-a-second rate reporter and
the latency percentile print."""
from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from array import array
from collections.abc import Callable, Sequence
from typing import Any

from aeron.client import Aeron, Context
from aeron.common.agent import BusySpinIdleStrategy, idle_strategy_from_name
from aeron.common.channel_uri import parse_duration_ns, parse_size
from aeron.common.errors import AeronError, ConfigurationError
from aeron.common.version import VERSION_TEXT, __version__
from aeron.common.wakeup import AutoIdleStrategy, WakeupIdleStrategy

DEFAULT_CHANNEL = "aeron:udp?endpoint=localhost:20121"
DEFAULT_PING_CHANNEL = "aeron:udp?endpoint=localhost:20123"
DEFAULT_PONG_CHANNEL = "aeron:udp?endpoint=localhost:20124"
DEFAULT_STREAM_ID = 1001
DEFAULT_PING_STREAM_ID = 1002
DEFAULT_PONG_STREAM_ID = 1003
DEFAULT_NUMBER_OF_WARM_UP_MESSAGES = 100_000
DEFAULT_NUMBER_OF_MESSAGES = 10_000_000
DEFAULT_MESSAGE_LENGTH = 32
DEFAULT_LINGER_TIMEOUT_MS = 0
DEFAULT_FRAGMENT_COUNT_LIMIT = 10


class Running:
    """Cleared by SIGINT/SIGTERM, as the C samples' `running` flag: a plain attribute (the poll loops test it
    between every two polls; a store of a bool is atomic under the GIL, and the signal handler runs on the main
    thread)."""

    __slots__ = ("_running",)

    def __init__(self) -> None:
        self._running = True

    def __bool__(self) -> bool:
        return self._running

    def stop(self, *_: Any) -> None:
        self._running = False

    def install(self) -> "Running":
        signal.signal(signal.SIGINT, self.stop)
        signal.signal(signal.SIGTERM, self.stop)
        return self


def _size(text: str) -> int:
    try:
        return parse_size(text)
    except ConfigurationError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _duration_ns(text: str) -> int:
    try:
        return parse_duration_ns(text)
    except ConfigurationError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _stream_id(text: str) -> int:
    # strtoul(optarg, NULL, 0) then (int32_t): any base prefix, wraps into int32
    try:
        value = int(text, 0) & 0xFFFFFFFF
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid stream id: {text!r}") from None
    return value - (1 << 32) if value >= 1 << 31 else value


class _Version(argparse.Action):
    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        print(f"{parser.prog} <{__version__}> aeron for Python")
        parser.exit(0)


AUTO_IDLE = "auto"


def parser(prog: str, options: str, idle_fallback: str = "spin") -> argparse.ArgumentParser:
    """A parser with the C samples' single-letter options; ``options`` lists which ones this sample takes (``i``:
    our ``--idle``, whose ``auto`` falls back to ``idle_fallback``, how the C sample waits)."""
    p = argparse.ArgumentParser(prog=f"python -m aeron.samples.{prog}", allow_abbrev=False)
    p.add_argument("-v", action=_Version, nargs=0, help="show version and exit (the C samples' format)")
    p.add_argument("--version", action="version", version=VERSION_TEXT)
    table: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {
        "c": (("-c",), dict(dest="channel", metavar="uri", help="use channel specified in uri")),
        "C": (("-C",), dict(dest="pong_channel", metavar="uri", default=DEFAULT_PONG_CHANNEL,
                            help="use channel specified in uri for pong channel")),
        "p": (("-p", "--dir"), dict(dest="prefix", metavar="prefix", default=None,
                                     help="aeron.dir location specified as prefix (default: $AERON_DIR, else "
                                          "/dev/shm/aeron-<user>)")),
        "s": (("-s",), dict(dest="stream_id", metavar="stream-id", type=_stream_id, help="stream-id to use")),
        "S": (("-S",), dict(dest="pong_stream_id", metavar="stream-id", type=_stream_id,
                            default=DEFAULT_PONG_STREAM_ID, help="stream-id to use for pong channel")),
        "m": (("-m",), dict(dest="messages", metavar="messages", type=_size, default=DEFAULT_NUMBER_OF_MESSAGES,
                            help="number of messages to send")),
        "l": (("-l",), dict(dest="linger_ns", metavar="linger", type=_duration_ns,
                            default=DEFAULT_LINGER_TIMEOUT_MS * 1_000_000,
                            help="linger at end of publishing for linger seconds")),
        "L": (("-L",), dict(dest="length", metavar="length", type=_size, default=DEFAULT_MESSAGE_LENGTH,
                            help="use message length of length bytes")),
        "w": (("-w",), dict(dest="warm_up", metavar="messages", type=_size,
                            default=DEFAULT_NUMBER_OF_WARM_UP_MESSAGES, help="number of warm up messages to send")),
        "f": (("-f",), dict(dest="fill_mtu", action="store_true",
                            help="use a message that will fill the whole MTU")),
        "F": (("-f",), dict(dest="fragment_limit", metavar="limit", type=_size, default=DEFAULT_FRAGMENT_COUNT_LIMIT,
                            help="limit to fragments per poll")),
    }
    for letter in options.replace("i", ""):
        args, kwargs = table[letter]
        p.add_argument(*args, **kwargs)
    if "i" in options:
        as_c = "1 ms sleeps" if idle_fallback == "sleep-ms" else idle_fallback
        p.add_argument("--idle", metavar="strategy", default=AUTO_IDLE,
                       help=f"how to wait for the next message (ours, not the C samples'): auto (the default: "
                            f"wakeup on a media driver of ours, over IPC while every client of it is ours; else "
                            f"{as_c} as the C sample), wakeup (park until the writer wakes us), spin, backoff, yield, "
                            f"sleep-ms, ...")
    return p


def channel_and_stream_id(args: argparse.Namespace, channel: str = DEFAULT_CHANNEL,
                          stream_id: int = DEFAULT_STREAM_ID) -> tuple[str, int]:
    """``-c`` and ``-s``, or the sample's defaults (the C samples' ``DEFAULT_*`` of samples_configuration.h)."""
    return args.channel or channel, stream_id if args.stream_id is None else args.stream_id


def idle_strategy(client: Aeron, name: str, *subscriptions: Any, fallback: str = "spin") -> Any:
    """The sample's idle strategy for a loop polling ``subscriptions``: ``auto`` is ``Aeron.default_idle_strategy``
    (on a driver of ours a ``wakeup`` bound to ``client``'s wake-up board, else ``fallback``, how the C sample
    waits), ``wakeup`` is ``Aeron.wakeup_idle_strategy``, any other name the Agrona strategy of that name.
    None for a busy spin: the sample then polls in a loop of its own, as the C sample does."""
    name = name.strip()
    if name == AUTO_IDLE:
        idle = client.default_idle_strategy(idle_strategy_from_name(fallback), *subscriptions)
    elif name == "wakeup":
        idle = client.wakeup_idle_strategy(*subscriptions)
    else:
        idle = idle_strategy_from_name(name)
    return None if isinstance(idle, BusySpinIdleStrategy) else idle


def parking(idle: Any) -> Any:
    """``idle`` when it parks until woken (``wakeup``; an ``auto``'s wakeup), else None: the samples wait for their
    peers with a parking strategy, and with 1 ms sleeps rather than a spinning or yielding one (as before the
    peers, their C originals)."""
    if isinstance(idle, AutoIdleStrategy):
        return idle.wakeup
    return idle if isinstance(idle, WakeupIdleStrategy) else None


def connect(prefix: str | None, **settings: Any) -> Aeron:
    ctx = Context(prefix, **settings) if prefix else Context(**settings)
    return Aeron.connect(ctx)


NO_ID_ALLOCATED = -1     # AERON_COUNTER_CHANNEL_ENDPOINT_STATUS_NO_ID_ALLOCATED


def channel_status(resource: Any) -> int:
    """The channel status as the C client's ``aeron_publication_channel_status`` /
    ``aeron_subscription_channel_status`` return it: the status counter's value, or NO_ID_ALLOCATED (-1)
    when there is no counter (IPC, the driver sends counter id -1) or the resource is closed.

    Our ``channel_status`` properties follow the Java client, which reports ACTIVE (1) for IPC; the samples
    print what the C samples print, so they read the counter themselves.
    """
    if resource.is_closed or resource.channel_status_id == NO_ID_ALLOCATED:
        return NO_ID_ALLOCATED
    return int(resource.channel_status)


def uint64(value: int) -> int:
    """``value`` as C's ``printf("%" PRIu64)`` shows an int64_t: -1 is 18446744073709551615."""
    return value & 0xFFFF_FFFF_FFFF_FFFF


def println(line: str) -> None:
    """Print ``line`` and its newline in one write, flushed: the image handlers and the rate reporter print
    from other threads than the poll loop, and print() writes the text and the newline separately, so lines
    could interleave (a C sample's printf of one line does not)."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def print_available_image(image: Any) -> None:
    sub = image.subscription
    log = image.log_buffers
    println(f"Available image on {sub.channel} streamId={sub.stream_id} sessionId={image.session_id} "
            f"mtu={log.mtu_length} term-length={log.term_length} from {image.source_identity}")


def print_unavailable_image(image: Any) -> None:
    sub = image.subscription
    println(f"Unavailable image on {sub.channel} streamId={sub.stream_id} sessionId={image.session_id}")


def add_subscription(client: Aeron, channel: str, stream_id: int) -> Any:
    """Subscribe with the image printers and print the subscription's channel status, as the C samples do."""
    subscription = client.add_subscription(channel, stream_id, print_available_image, print_unavailable_image)
    print(f"Subscription channel status {uint64(channel_status(subscription))}", flush=True)
    return subscription


def print_rate_report(duration_ns: int, mps: float, bps: float, total_messages: int, total_bytes: int) -> None:
    println(f"{duration_ns // 1_000_000}ms, {mps:.4g} msgs/sec, {bps:.4g} bytes/sec, totals {total_messages} "
            f"messages {total_bytes // (1024 * 1024)} MB payloads")


class RateReporter:
    """Counts in the hot loop (two int adds), reports once a second from its own thread (the C samples'
    rate reporter agent with a 1 s sleeping idle)."""

    def __init__(self, on_report: Callable[[int, float, float, int, int], Any] = print_rate_report,
                 interval_s: float = 1.0) -> None:
        self.total_messages = 0
        self.total_bytes = 0
        self._on_report = on_report
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rate reporter", daemon=True)
        self._last = (time.monotonic_ns(), 0, 0)

    def on_message(self, length: int) -> None:
        self.total_messages += 1
        self.total_bytes += length

    def start(self) -> "RateReporter":
        self._last = (time.monotonic_ns(), 0, 0)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            self.report()

    def report(self) -> None:
        now = time.monotonic_ns()
        messages, total_bytes = self.total_messages, self.total_bytes
        last_ns, last_messages, last_bytes = self._last
        duration = max(1, now - last_ns)
        self._on_report(duration, (messages - last_messages) * 1e9 / duration,
                        (total_bytes - last_bytes) * 1e9 / duration, messages, total_bytes)
        self._last = (now, messages, total_bytes)

    def halt(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(2.0)


PERCENTILES = (50.0, 90.0, 99.0, 99.9, 99.99, 100.0)


def percentiles(samples_ns: Sequence[int] | array[int], points: Sequence[float] = PERCENTILES) -> dict[float, int]:
    """Nearest-rank percentiles of the recorded values (ns)."""
    ordered = sorted(samples_ns)
    if not ordered:
        return {}
    n = len(ordered)
    out = {}
    for p in points:
        rank = max(1, min(n, -(-int(p * n * 1000) // 100_000)))     # ceil(p/100 * n) without float drift
        out[p] = ordered[rank - 1]
    return out


def print_percentiles(samples_ns: Sequence[int] | array[int], out: Any = None) -> dict[float, int]:
    """The percentile lines of an HdrHistogram print in microseconds (the C cping prints its histogram with a
    1000 scaling ratio)."""
    out = out or sys.stdout
    table = percentiles(samples_ns)
    print(f"{'Value(us)':>12} {'Percentile':>14} {'TotalCount':>10}", file=out)
    n = len(samples_ns)
    for p, value in table.items():
        print(f"{value / 1000.0:12.3f} {p / 100.0:14.6f} {int(n * p / 100):10d}", file=out)
    if n:
        mean = sum(samples_ns) / n
        print(f"#[Mean    = {mean / 1000.0:12.3f}, Max     = {max(samples_ns) / 1000.0:12.3f}]", file=out)
        print(f"#[Total count    = {n:12d}]", file=out)
    out.flush()
    return table


def poll_while_running(poll: Callable[[Any, int], int], handler: Any, limit: int, running: Running,
                       idle_strategy: Any = None) -> None:
    """Poll until SIGINT/SIGTERM: spinning with no idle strategy (as the C samples' loops), else idling on each
    poll's work."""
    if idle_strategy is None:
        while running:
            poll(handler, limit)
    else:
        idle = idle_strategy.idle
        while running:
            idle(poll(handler, limit))


def wait_for_image(subscription: Any, running: Running, idle: Any = None) -> Any:
    """The subscription's first image once it has one (None once stopped), waiting as :func:`wait_for_ping_pong`."""
    wait = _waiting(idle)
    while running and subscription.image_count == 0:
        wait(0)
    return subscription.image_at_index(0) if subscription.image_count else None


def wait_for_ping_pong(subscription: Any, publication: Any, running: Running, idle: Any = None) -> Any:
    """Ping's and pong's start: both ends connected, then the subscription's image (None once stopped).

    ``idle``: the loop's ``wakeup`` idle strategy, which parks here as it will between messages (its bound growing
    while nothing comes, so a pong with no ping yet costs what an idle connected one does), as Aeron's Pong waits
    for its subscription with its own idle strategy; without one, 1 ms sleeps (a thousand wake-ups a second)."""
    wait = _waiting(idle)
    while running and not (subscription.is_connected and publication.is_connected):
        wait(0)
    return wait_for_image(subscription, running, idle)


def _waiting(idle: Any) -> Callable[[int], None]:
    if idle is not None:
        wait: Callable[[int], None] = idle.idle
        return wait
    return lambda _work: time.sleep(0.001)


def main_guard(main: Callable[[Sequence[str] | None], int]) -> None:
    try:
        sys.exit(main(None))
    except (AeronError, OSError) as exc:     # OSError: a cnc.dat that cannot be mapped (permission denied)
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        sys.exit(1)
