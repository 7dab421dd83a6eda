# SPDX-License-Identifier: Apache-2.0
"""The raw UDP floor on loopback: what our compiled transport and plain Python sockets do with no driver.

    .venv/bin/python perf/bench_udp_raw.py [--seconds 2]

* streaming 32 B and 1 KiB datagrams: a sender process (UdpTransport.send_term_batch over a term of frames,
  batches of 8 MTU datagrams per sendmmsg; or socket.sendto per datagram) → a receiver process
  (receive_batch, 16 slots per recvmmsg; or recvfrom_into). Datagrams/s and messages/s (32 B frames are 64
  bytes in the term, 22 per 1408-byte datagram);
* ping-pong RTT of a 32-byte datagram between two processes, each busy-polling its socket (2 spinning
  threads), for UdpTransport and for plain sockets; and the same with both sides blocking in poll() until the
  socket is readable (no spinning thread: the wake-up cost of the kernel's wait path is included).
Results: perf/results/udp_raw.json.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import pathlib
import socket
import sys
import time

RESULTS = pathlib.Path(__file__).resolve().parent / "results"


def _socket(port: int = 0) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    sock.bind(("127.0.0.1", port))
    sock.setblocking(False)
    return sock


def _receiver(kind: str, port_queue, result_queue, seconds: float) -> None:
    from aeron._core.udp_transport import UdpTransport
    sock = _socket()
    port_queue.put(sock.getsockname()[1])
    datagrams = total = 0
    start = None
    deadline = time.monotonic() + seconds + 5
    if kind == "transport":
        t = UdpTransport(sock, batch=16)
        while time.monotonic() < deadline:
            n = t.receive_batch()
            if n:
                if start is None:
                    start = time.perf_counter()
                datagrams += n
                for i in range(n):
                    total += t.length(i)
                if t.length(n - 1) == 1:
                    break
        t.close()
    else:
        buffer = bytearray(65536)
        while time.monotonic() < deadline:
            try:
                length, _ = sock.recvfrom_into(buffer)
            except BlockingIOError:
                continue
            if start is None:
                start = time.perf_counter()
            datagrams += 1
            total += length
            if length == 1:
                break
        sock.close()
    result_queue.put((datagrams, total, time.perf_counter() - (start or time.perf_counter())))


def stream(kind: str, message_length: int, seconds: float) -> dict:
    from aeron._core.logbuffer import LogBuffers
    from aeron._core.term_appender import ExclusiveTermAppender
    from aeron._core.udp_transport import UdpTransport
    ctx = mp.get_context("spawn")
    ports, results = ctx.Queue(), ctx.Queue()
    proc = ctx.Process(target=_receiver, args=(kind, ports, results, seconds))
    proc.start()
    port = ports.get(timeout=20)
    destination = ("127.0.0.1", port)
    log = LogBuffers.create(None, term_length=1 << 20, initial_term_id=0, session_id=1, stream_id=1, mtu_length=1408)
    appender = ExclusiveTermAppender(log)
    payload = bytes(message_length)
    while appender.offer(payload) > 0 and appender.term_offset + 2 * (message_length + 64) < (1 << 20):
        pass
    term = log.term_buffer(0)
    filled = appender.term_offset
    sock = _socket()
    end = time.monotonic() + seconds
    if kind == "transport":
        t = UdpTransport(sock)
        while time.monotonic() < end:
            offset = 0
            while offset < filled:
                sent, advance = t.send_term_batch(term, offset, filled - offset, 1408, 8, destination)
                offset += advance if advance else 0
                if advance == 0:
                    time.sleep(0)
        t.send(b"x", destination)
        t.close()
    else:
        view = term.view(0, filled)
        datagram_lengths = []
        offset = 0
        from aeron._core.term_scanner import scan_for_availability
        while offset < filled:
            available, padding = scan_for_availability(term, offset, 1408)
            datagram_lengths.append((offset, available))
            offset += available + padding
        while time.monotonic() < end:
            for offset, available in datagram_lengths:
                while True:
                    try:
                        sock.sendto(view[offset:offset + available], destination)
                        break
                    except BlockingIOError:
                        time.sleep(0)
        sock.sendto(b"x", destination)
        view.release()
        sock.close()
    datagrams, total, elapsed = results.get(timeout=30)
    proc.join(10)
    term.close()
    appender.close()
    frame = (message_length + 32 + 31) & ~31
    return {"datagrams_per_s": datagrams / elapsed, "messages_per_s": total / frame / elapsed}


def _waiter(sock: socket.socket, wait: str):
    """Called before each receive attempt: nothing when busy-polling, else block in poll() until readable."""
    if wait == "spin":
        return lambda: None
    import select
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLIN)
    return lambda: poller.poll(1000)


def _pong(kind: str, port_queue, count: int, wait: str = "spin") -> None:
    from aeron._core.udp_transport import UdpTransport
    sock = _socket()
    port_queue.put(sock.getsockname()[1])
    ready = _waiter(sock, wait)
    if kind == "transport":
        t = UdpTransport(sock, batch=1)
        seen = 0
        while seen < count:
            ready()
            if t.receive_batch():
                t.send(memoryview(t.slots[0])[:t.length(0)], t.source(0))
                seen += 1
        t.close()
    else:
        buffer = bytearray(64)
        seen = 0
        while seen < count:
            ready()
            try:
                length, source = sock.recvfrom_into(buffer)
            except BlockingIOError:
                continue
            sock.sendto(memoryview(buffer)[:length], source)
            seen += 1
        sock.close()


def rtt(kind: str, count: int, wait: str = "spin") -> dict:
    from aeron._core.udp_transport import UdpTransport
    ctx = mp.get_context("spawn")
    ports = ctx.Queue()
    proc = ctx.Process(target=_pong, args=(kind, ports, count, wait))
    proc.start()
    destination = ("127.0.0.1", ports.get(timeout=20))
    sock = _socket()
    ready = _waiter(sock, wait)
    samples = []
    payload = bytes(32)
    if kind == "transport":
        t = UdpTransport(sock, batch=1)
        for _ in range(count):
            start = time.perf_counter_ns()
            t.send(payload, destination)
            ready()
            while not t.receive_batch():
                ready()
            samples.append(time.perf_counter_ns() - start)
        t.close()
    else:
        buffer = bytearray(64)
        for _ in range(count):
            start = time.perf_counter_ns()
            sock.sendto(payload, destination)
            while True:
                ready()
                try:
                    sock.recvfrom_into(buffer)
                    break
                except BlockingIOError:
                    continue
            samples.append(time.perf_counter_ns() - start)
        sock.close()
    proc.join(10)
    samples.sort()
    pick = lambda p: samples[min(len(samples) - 1, int(p * len(samples) / 100))] / 1000   # noqa: E731
    return {"p50_us": pick(50), "p90_us": pick(90), "p99_us": pick(99)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--pings", type=int, default=20000)
    args = parser.parse_args(argv)
    results = {}
    for length in (32, 1024):
        for kind in ("transport", "socket"):
            results[f"stream-{length}B-{kind}"] = r = stream(kind, length, args.seconds)
            print(f"stream {length:5d} B {kind:9s}: {r['datagrams_per_s'] / 1e3:8.1f} k datagrams/s "
                  f"{r['messages_per_s'] / 1e6:6.2f} M msg/s", flush=True)
    for wait in ("spin", "poll"):
        for kind in ("transport", "socket"):
            key = f"rtt-{kind}" if wait == "spin" else f"rtt-{kind}-poll"
            results[key] = r = rtt(kind, args.pings, wait)
            print(f"rtt {kind:9s} {wait:4s}: p50 {r['p50_us']:.1f} µs  p90 {r['p90_us']:.1f} µs  "
                  f"p99 {r['p99_us']:.1f} µs", flush=True)
    ratio = results["stream-32B-transport"]["messages_per_s"] / results["stream-32B-socket"]["messages_per_s"]
    print(f"UdpTransport / plain socket, 32 B stream: {ratio:.2f}x; spinning threads: 2 (sender, receiver)")
    for wait in ("", "-poll"):
        ratio = results[f"rtt-transport{wait}"]["p50_us"] / results[f"rtt-socket{wait}"]["p50_us"]
        print(f"RTT p50 UdpTransport / plain socket ({'poll() wait, 0' if wait else 'busy poll, 2'} spinning "
              f"threads): {ratio:.2f}x")
    ratio = results["rtt-transport-poll"]["p50_us"] / results["rtt-transport"]["p50_us"]
    print(f"RTT p50 UdpTransport poll() wait / busy poll: {ratio:.2f}x")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "udp_raw.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
