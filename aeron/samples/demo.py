# SPDX-License-Identifier: Apache-2.0
"""End-to-end demo on an embedded media driver: publish and receive over IPC, then measure round trips.

This process launches a MediaDriver in a fresh /dev/shm directory (its conductor on one thread, backoff
idle). Two client processes connect to it with the Aeron client:

1. throughput: the publisher streams ``--messages`` messages of ``--size`` bytes (sequence number in the
   first 8 bytes) through a Publication; the subscriber polls them and checks that every one arrives, in
   order. Both sides print msgs/s.
2. latency: the publisher sends ``--pings`` pings on an ExclusivePublication, the subscriber echoes each from
   the log memory straight back (no copy), and the publisher prints round-trip percentiles.

Spinning threads: the publisher and the subscriber busy-poll (two spinning threads); the driver's conductor
backs off (spin, yield, then park up to 1 ms). While each phase runs, the demo prints its progress about once a
second, read from the driver's stream position counters (what ``python -m aeron.tools.stream_stat`` shows).

``--dir`` (or ``AERON_DIR``) names the Aeron directory: a media driver already running there is used as it is
(its own term length applies); otherwise the embedded one is launched there, and removed on exit.

    python -m aeron.samples.demo [--messages N] [--size BYTES] [--pings N] [--term-length BYTES] [--timeout S]
                                 [-d|--dir DIR]
"""
from __future__ import annotations

import argparse
import contextlib
import multiprocessing as mp
import os
import queue
import struct
import sys
import time
from array import array
from collections.abc import Callable
from typing import Any

from aeron.client import Aeron, Context
from aeron.common.errors import ConfigurationError
from aeron.common.version import VERSION_TEXT
from aeron.driver import Context as DriverContext
from aeron.driver import MediaDriver, is_driver_active
from aeron.samples._common import percentiles

CHANNEL = "aeron:ipc"
STREAM_ID, PING_STREAM_ID, PONG_STREAM_ID = 1001, 1002, 1003
STOP = -1               # ping sequence number that ends the pong loop
# Aeron's counter type ids of the publisher and subscriber positions, and the head of a stream counter's key
# (registration id, session id, stream id): what the progress lines read
PUBLISHER_POSITION_TYPE_ID, SUBSCRIBER_POSITION_TYPE_ID = 12, 4
_STREAM_KEY = struct.Struct("<qii")


def _connect(aeron_dir: str) -> Any:
    return Aeron.connect(Context(aeron_dir))


def _await_connected(*resources: Any, deadline: float) -> None:
    while not all(r.is_connected for r in resources):
        if time.monotonic() > deadline:
            raise TimeoutError("publication/subscription did not connect in time")
        time.sleep(0.001)


class _Receiver:
    """Counts messages and checks their sequence numbers; allocates nothing per message."""

    __slots__ = ("count", "out_of_order", "expected")

    def __init__(self) -> None:
        self.count = 0
        self.out_of_order = 0
        self.expected = 0

    def __call__(self, buffer: Any, offset: int, length: int, header: Any) -> None:
        if buffer.get_i64(offset) != self.expected:
            self.out_of_order += 1
        self.expected += 1
        self.count += 1


def subscriber_main(aeron_dir: str, messages: int, timeout_s: float, results: Any) -> None:
    deadline = time.monotonic() + timeout_s
    with _connect(aeron_dir) as client:
        subscription = client.add_subscription(CHANNEL, STREAM_ID)
        pings = client.add_subscription(CHANNEL, PING_STREAM_ID)
        pongs = client.add_exclusive_publication(CHANNEL, PONG_STREAM_ID)
        results.put(("subscriber-ready",))
        receiver = _Receiver()
        poll = subscription.poll
        started = 0
        while receiver.count < messages:
            if poll(receiver, 256) == 0:
                if time.monotonic() > deadline:
                    break
            elif started == 0:
                started = time.perf_counter_ns()
        elapsed = time.perf_counter_ns() - started if started else 0
        results.put(("received", receiver.count, receiver.out_of_order, elapsed))

        offer = pongs.offer
        state = {"stop": False}

        def echo(buffer: Any, offset: int, length: int, header: Any) -> None:
            if buffer.get_i64(offset + 8) == STOP:
                state["stop"] = True
                return
            while offer(buffer, offset, length) < 0:     # the ping's own bytes, straight from the log
                pass

        _await_connected(pings, pongs, deadline=deadline)
        poll = pings.poll
        while not state["stop"] and time.monotonic() < deadline:
            poll(echo, 16)


def publisher_main(aeron_dir: str, messages: int, size: int, pings: int, timeout_s: float, results: Any) -> None:
    deadline = time.monotonic() + timeout_s
    with _connect(aeron_dir) as client:
        publication = client.add_publication(CHANNEL, STREAM_ID)
        _await_connected(publication, deadline=deadline)
        message = bytearray(size)
        sequence = memoryview(message).cast("q")
        offer = publication.offer
        back_pressured = 0
        start = time.perf_counter_ns()
        for i in range(messages):
            sequence[0] = i
            while offer(message) < 0:
                back_pressured += 1
                if back_pressured & 0xFFFF == 0 and time.monotonic() > deadline:
                    raise TimeoutError("publisher back pressured past the deadline")
        elapsed = time.perf_counter_ns() - start
        results.put(("sent", messages, elapsed, back_pressured))

        ping = client.add_exclusive_publication(CHANNEL, PING_STREAM_ID)
        pong = client.add_subscription(CHANNEL, PONG_STREAM_ID)
        _await_connected(ping, pong, deadline=deadline)
        rtts = array("q", bytes(8 * max(1, pings)))
        received = [0]

        def on_pong(buffer: Any, offset: int, length: int, header: Any) -> None:
            rtts[received[0]] = time.perf_counter_ns() - buffer.get_i64(offset)
            received[0] += 1

        stamp = memoryview(message).cast("q")           # [0] send time, [1] ping number
        ping_offer, pong_poll = ping.offer, pong.poll
        for i in range(pings):
            stamp[1] = i
            stamp[0] = time.perf_counter_ns()
            while ping_offer(message) < 0:
                stamp[0] = time.perf_counter_ns()
            while received[0] <= i:
                pong_poll(on_pong, 16)
                if received[0] <= i and time.monotonic() > deadline:
                    raise TimeoutError("no pong before the deadline")
        stamp[1] = STOP
        while ping_offer(message) < 0 and time.monotonic() < deadline:
            pass
        results.put(("rtts", rtts[:received[0]].tobytes()))


def _frame_length(size: int) -> int:
    return (32 + size + 31) & ~31          # data header + payload, aligned to 32 bytes in the log


def _stream_positions(counters: Any, stream_id: int) -> dict[str, int]:
    """``{"pub-pos": bytes, "sub-pos": bytes}`` of ``stream_id``, the highest of each, read from a client's
    CountersReader over the driver's counters (what ``python -m aeron.tools.stream_stat`` shows)."""
    names = {PUBLISHER_POSITION_TYPE_ID: "pub-pos", SUBSCRIBER_POSITION_TYPE_ID: "sub-pos"}
    out: dict[str, int] = {}
    for record in counters.counters():
        name = names.get(record.type_id)
        if name is not None and len(record.key) >= _STREAM_KEY.size \
                and _STREAM_KEY.unpack_from(record.key)[2] == stream_id:
            out[name] = max(out.get(name, 0), record.value)
    return out


class _Progress:
    """Prints a phase's progress about once a second from the driver's counters: nothing is added to the
    publisher's or subscriber's loops."""

    def __init__(self, counters: Any, interval_s: float = 1.0) -> None:
        self.counters = counters                # a CountersReader over the driver's counters
        self.interval_s = interval_s
        self.started = self.last = time.monotonic()
        self.report: Callable[[], str] | None = None

    def phase(self, report: Callable[[], str]) -> None:
        self.report = report
        self.started = self.last = time.monotonic()

    def tick(self) -> None:
        now = time.monotonic()
        if self.report is None or now - self.last < self.interval_s:
            return
        self.last = now
        try:
            text = self.report()
        except Exception as exc:      # noqa: BLE001 - progress is a courtesy: the phase goes on without it
            text = f"(progress unavailable: {type(exc).__name__}: {exc})"
        print(f"  {now - self.started:5.1f} s  {text}", flush=True)

    def streaming(self, messages: int, size: int) -> str:
        positions = _stream_positions(self.counters, STREAM_ID)
        frame = _frame_length(size)
        sent, received = positions.get("pub-pos", 0) // frame, positions.get("sub-pos", 0) // frame
        return f"sent {sent:,} / received {received:,} of {messages:,} messages"

    def round_trips(self, pings: int, size: int) -> str:
        pongs = _stream_positions(self.counters, PONG_STREAM_ID).get("pub-pos", 0) // _frame_length(size)
        return f"{pongs:,} of {pings:,} round trips"


def _wait(results: Any, kind: str, deadline: float, children: list[Any], early: dict[str, Any],
          progress: _Progress | None = None) -> Any:
    """The next result of ``kind``; results of other kinds that arrive first are kept in ``early``."""
    while kind not in early:
        if progress is not None:
            progress.tick()
        try:
            item = results.get(timeout=0.2)
        except queue.Empty:
            if time.monotonic() > deadline:
                raise TimeoutError(f"demo: no {kind!r} result in time") from None
            if any(p.exitcode not in (None, 0) for p in children):
                raise RuntimeError(f"demo: a client process failed while waiting for {kind!r}") from None
            continue
        early[item[0]] = item
    return early.pop(kind)


def _driver(args: argparse.Namespace) -> Any:
    """The embedded driver (a context manager), or a null context when one already runs in ``args.dir``."""
    if args.dir and is_driver_active(args.dir, 10_000):
        print(f"using the media driver already running in {args.dir} (its term length applies)", flush=True)
        return contextlib.nullcontext(None)
    print("starting the embedded media driver…", flush=True)
    driver_ctx = DriverContext(threading_mode="SHARED", shared_idle_strategy="backoff",
                               ipc_term_buffer_length=args.term_length)
    if args.dir:
        driver_ctx.aeron_dir = args.dir
    driver = MediaDriver.launch_embedded(driver_ctx)
    print(f"media driver (embedded, SHARED, backoff idle) in {driver.aeron_dir}, IPC term "
          f"{args.term_length // 1024} KiB", flush=True)
    return driver


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m aeron.samples.demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version=VERSION_TEXT)
    parser.add_argument("--messages", type=int, default=2_000_000, help="messages in the throughput phase")
    parser.add_argument("--size", type=int, default=32, help="message length in bytes (>= 16)")
    parser.add_argument("--pings", type=int, default=100_000, help="round trips in the latency phase")
    parser.add_argument("--term-length", type=int, default=16 * 1024 * 1024, help="IPC term length")
    parser.add_argument("--timeout", type=float, default=120.0, help="give up after this many seconds")
    parser.add_argument("-d", "--dir", default=os.environ.get("AERON_DIR") or None,
                        help="Aeron directory: use the driver running there, else launch the embedded one there "
                             "(default: $AERON_DIR, else a fresh directory under /dev/shm)")
    args = parser.parse_args(argv)
    if args.size < 16:
        parser.error("--size must be at least 16 (sequence number and timestamp)")
    if args.messages < 1 or args.pings < 1:
        parser.error("--messages and --pings must be at least 1")
    try:                                    # the driver's own check of the term length, before anything starts
        DriverContext(threading_mode="SHARED", ipc_term_buffer_length=args.term_length).conclude()
    except ConfigurationError as exc:
        parser.error(f"--term-length: {exc}")
    if args.dir:
        args.dir = os.path.abspath(args.dir)

    deadline = time.monotonic() + args.timeout
    spawn = mp.get_context("spawn")         # children start clean: no driver thread forked into them
    with _driver(args) as driver, Aeron.connect(Context(args.dir if driver is None else driver.aeron_dir)) as monitor:
        aeron_dir = monitor.context.aeron_dir           # the monitor client reads the progress from the counters
        results = spawn.Queue()
        subscriber = spawn.Process(target=subscriber_main, name="subscriber",
                                   args=(aeron_dir, args.messages, args.timeout, results))
        publisher = spawn.Process(target=publisher_main, name="publisher",
                                  args=(aeron_dir, args.messages, args.size, args.pings, args.timeout, results))
        children = [subscriber, publisher]
        early: dict[str, Any] = {}
        progress = _Progress(monitor.counters_reader)
        try:
            print("starting the subscriber and publisher processes…", flush=True)
            subscriber.start()
            _wait(results, "subscriber-ready", deadline, children, early)
            publisher.start()
            print(f"throughput: streaming {args.messages:,} messages of {args.size} bytes over {CHANNEL}…",
                  flush=True)
            progress.phase(lambda: progress.streaming(args.messages, args.size))
            _, sent, sent_ns, back_pressured = _wait(results, "sent", deadline, children, early, progress)
            _, received, out_of_order, received_ns = _wait(results, "received", deadline, children, early, progress)
            print(f"throughput: {args.messages} messages of {args.size} bytes over {CHANNEL}")
            print(f"  publisher  {sent * 1e9 / max(1, sent_ns):,.0f} msgs/s "
                  f"({back_pressured} back-pressured offers retried)")
            print(f"  subscriber {received * 1e9 / max(1, received_ns):,.0f} msgs/s, "
                  f"received {received} messages, {out_of_order} out of order", flush=True)
            print(f"latency: {args.pings:,} round trips…", flush=True)
            progress.phase(lambda: progress.round_trips(args.pings, args.size))
            _, raw = _wait(results, "rtts", deadline, children, early, progress)
            rtts = array("q")
            rtts.frombytes(raw)
            table = percentiles(rtts, (50.0, 90.0, 99.0, 99.9))
            print(f"latency: {len(rtts)} round trips ping → pong → ping, {args.size}-byte messages")
            print("  " + "  ".join(f"p{p:g} {v / 1000:.2f} µs" for p, v in table.items()), flush=True)
        finally:
            for child in children:
                if child.pid is None:
                    continue                  # never started
                child.join(max(0.1, min(10.0, deadline - time.monotonic())))
                if child.is_alive():
                    child.kill()
                    child.join(5)
            results.close()
            results.join_thread()
    ok = received == args.messages and out_of_order == 0 and len(rtts) == args.pings
    print("demo: OK" if ok else "demo: FAILED", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
