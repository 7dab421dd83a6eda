# SPDX-License-Identifier: Apache-2.0
"""End-to-end demo over the core: two processes share one log buffer file under /dev/shm.

The publisher offers timestamped messages through a ConcurrentTermAppender, bounded by a publisher
limit counter; the subscriber polls them with a TermReader that stores its position in a counter.
The parent plays the media driver conductor's part for IPC: it moves the publisher limit to
subscriber position + window (flow control) and cleans the partition behind the subscriber, which is
exactly what the driver does for an IPC publication. Phase 1 measures throughput, phase 2 measures
latency at a paced rate.

Spinning threads: the publisher and the subscriber busy-poll with a backoff idle strategy (spin,
then yield, then sleep), the parent sleeps 1 ms between duty cycles.

    python -m aeron.samples.demo [--messages N] [--size BYTES] [--term-length BYTES] [--rate MSG_PER_S]
"""
from __future__ import annotations

import argparse
import array
import multiprocessing as mp
import os
import shutil
import struct
import sys
import time

from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.logbuffer import LogBuffers
from aeron._core.term_appender import ADMIN_ACTION, BACK_PRESSURED, NOT_CONNECTED, ConcurrentTermAppender
from aeron._core.term_reader import TermReader
from aeron._core.term_scanner import clean_term

PUB_LMT_OFFSET = 0      # positions file: one 128-byte slot per counter, as in cnc.dat's values section
SUB_POS_OFFSET = 128
DONE_OFFSET = 256       # publisher sets this to the number of messages once it has offered them all


class BackoffIdle:
    """Spin, then yield, then sleep: two busy processes share the machine's two cores."""

    __slots__ = ("spins",)

    def __init__(self):
        self.spins = 0

    def idle(self, work_count):
        if work_count > 0:
            self.spins = 0
            return
        self.spins += 1
        if self.spins < 100:
            return
        if self.spins < 200:
            os.sched_yield()
            return
        time.sleep(0.0001)


def _publisher(log_path, positions_path, messages, size, rate, phase_gap_s):
    log = LogBuffers.map_existing(log_path)
    positions = AtomicBuffer.map_file(positions_path)
    pub = ConcurrentTermAppender(log, positions, PUB_LMT_OFFSET)
    msg = bytearray(size)
    pack_into = struct.Struct("<qq").pack_into
    idle = BackoffIdle()
    now = time.perf_counter_ns
    offer = pub.offer
    total = 2 * messages
    sent = 0
    next_send = 0
    interval_ns = int(1e9 / rate) if rate > 0 else 0
    while sent < total:
        paced = sent >= messages
        if paced:
            if sent == messages:
                time.sleep(phase_gap_s)   # let the subscriber drain phase 1 before timing phase 2
                next_send = now()
            t = now()
            if t < next_send:
                continue
            next_send += interval_ns
        pack_into(msg, 0, sent, now())
        result = offer(msg)
        while result < 0:
            if result != ADMIN_ACTION and result not in (BACK_PRESSURED, NOT_CONNECTED):
                raise SystemExit(f"publisher: offer failed with {result}")
            idle.idle(0)
            pack_into(msg, 0, sent, now())
            result = offer(msg)
        sent += 1
    positions.put_i64_ordered(DONE_OFFSET, total)
    pub.close()
    del pub
    log.close()
    positions.close()


def _subscriber(log_path, positions_path, messages, result_queue):
    log = LogBuffers.map_existing(log_path)
    positions = AtomicBuffer.map_file(positions_path)
    reader = TermReader(log, positions, SUB_POS_OFFSET)
    latencies = array.array("q", bytes(8 * messages))
    state = [0, 0, 0]      # received, out-of-order count, first phase-1 receive time
    now = time.perf_counter_ns

    def on_fragment(buffer, offset, length, header):
        seq = buffer.get_i64(offset)
        if seq != state[0]:
            state[1] += 1
        if seq >= messages:
            latencies[seq - messages] = now() - buffer.get_i64(offset + 8)
        elif seq == 0:
            state[2] = now()
        state[0] = seq + 1
        if seq == messages - 1:
            state.append(now())

    idle = BackoffIdle()
    poll = reader.poll
    total = 2 * messages
    while state[0] < total:
        idle.idle(poll(on_fragment, 256))
    result_queue.put({"received": state[0], "out_of_order": state[1],
                      "phase1_ns": state[3] - state[2], "latencies": latencies.tobytes()})
    reader.close()
    del reader
    log.close()
    positions.close()


def _percentile(sorted_values, q):
    if not sorted_values:
        return float("nan")
    k = min(len(sorted_values) - 1, int(round(q / 100.0 * (len(sorted_values) - 1))))
    return sorted_values[k]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000, help="messages per phase")
    parser.add_argument("--size", type=int, default=32, help="message length in bytes (>= 16)")
    parser.add_argument("--term-length", type=int, default=16 * 1024 * 1024)
    parser.add_argument("--rate", type=int, default=100_000, help="phase 2 paced rate, msg/s")
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args(argv)
    if args.size < 16:
        parser.error("--size must be at least 16 (sequence number + timestamp)")

    base = "/dev/shm" if os.path.isdir("/dev/shm") else "/tmp"
    aeron_dir = os.path.join(base, f"aeron-py-demo-{os.getpid()}")
    os.makedirs(os.path.join(aeron_dir, "publications"))
    try:
        log_path = os.path.join(aeron_dir, "publications", "1.logbuffer")
        positions_path = os.path.join(aeron_dir, "positions.dat")
        log = LogBuffers.create(log_path, term_length=args.term_length, initial_term_id=0,
                                session_id=int.from_bytes(os.urandom(4), "little", signed=True),
                                stream_id=1001, correlation_id=1, is_connected=1)
        positions = AtomicBuffer.map_file(positions_path, 4096, create=True)
        window = log.term_length // 2
        positions.put_i64_ordered(PUB_LMT_OFFSET, window)
        print(f"aeron dir {aeron_dir}: term length {log.term_length}, window {window}, "
              f"{args.messages} messages of {args.size} B per phase")

        ctx = mp.get_context("spawn")
        queue = ctx.Queue()
        sub = ctx.Process(target=_subscriber, args=(log_path, positions_path, args.messages, queue))
        pub = ctx.Process(target=_publisher, args=(log_path, positions_path, args.messages, args.size,
                                                   args.rate, 0.5))
        sub.start()
        pub.start()

        # Conductor duty cycle: publisher limit from the subscriber position, clean behind it.
        term_length = log.term_length
        clean_position = 0
        deadline = time.monotonic() + args.timeout
        result = None
        while result is None:
            sub_pos = positions.get_i64_volatile(SUB_POS_OFFSET)
            positions.put_i64_ordered(PUB_LMT_OFFSET, sub_pos + window)
            clean_to = sub_pos - term_length
            while clean_to > clean_position:
                index = (clean_position // term_length) % 3
                offset = clean_position % term_length
                length = min(clean_to - clean_position, term_length - offset)
                clean_term(log.term_buffer(index), offset, length)
                clean_position += length
            try:
                result = queue.get(timeout=0.001)
            except Exception:
                if time.monotonic() > deadline:
                    raise SystemExit("demo timed out")
                if not sub.is_alive() and sub.exitcode not in (None, 0):
                    raise SystemExit(f"subscriber failed with exit code {sub.exitcode}")
                if not pub.is_alive() and pub.exitcode not in (None, 0):
                    raise SystemExit(f"publisher failed with exit code {pub.exitcode}")
        pub.join(10)
        sub.join(10)

        lat = array.array("q")
        lat.frombytes(result["latencies"])
        lat = sorted(lat)
        rate = args.messages / (result["phase1_ns"] / 1e9) if result["phase1_ns"] > 0 else float("nan")
        print(f"received {result['received']} messages, {result['out_of_order']} out of order")
        print(f"phase 1 throughput: {rate / 1e6:.2f} M msg/s "
              f"({rate * args.size / 1e6:.1f} MB/s payload)")
        print(f"phase 2 latency at {args.rate} msg/s (publisher offer to subscriber handler):")
        for q in (50, 90, 99, 99.9):
            print(f"  p{q:<5} {_percentile(lat, q) / 1000:8.2f} us")
        print(f"  max    {lat[-1] / 1000:8.2f} us")
        log.close()
        positions.close()
        return 0 if result["out_of_order"] == 0 and result["received"] == 2 * args.messages else 1
    finally:
        shutil.rmtree(aeron_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
