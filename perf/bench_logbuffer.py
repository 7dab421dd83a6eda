# SPDX-License-Identifier: Apache-2.0
"""pyperf: offer from a Python loop into concurrent and exclusive term appenders (32 B, 1 KiB) and
poll the messages back with a TermReader; offer vs try_claim + commit of 32 B through a client
``Publication`` in the same run; pyzmq PUSH over ipc:// as the reference point.

Threads that spin: none in the appender/reader benchmarks (one thread offers or polls); the pyzmq
benchmark has a receiver process blocked in recv (zmq's I/O threads do the work).

Run through ``./run.sh bench`` (summary with ratios) or directly with pyperf options.
"""
import atexit
import os
import sys
import time

import pyperf

from aeron._core.logbuffer import LogBuffers
from aeron._core.term_appender import ADMIN_ACTION, ConcurrentTermAppender, ExclusiveTermAppender
from aeron._core.term_reader import TermReader
from aeron._core.term_scanner import clean_term
from aeron.client import BufferClaim, Publication

TERM_LENGTH = 16 * 1024 * 1024
APPENDERS = {"concurrent": ConcurrentTermAppender, "exclusive": ExclusiveTermAppender}


def make_log():
    return LogBuffers.create(term_length=TERM_LENGTH, initial_term_id=7, session_id=42, stream_id=1001,
                             is_connected=1)


def clean_partition(log, index):
    # The driver conductor zeroes a partition before it is reused; here we do it outside the clock.
    clean_term(log.term_buffer(index), 0, TERM_LENGTH)


def bench_offer(loops, kind, size):
    log = make_log()
    appender = APPENDERS[kind](log)
    offer = appender.offer
    msg = bytes(size)
    spent = 0.0
    t0 = time.perf_counter()
    for _ in range(loops):
        if offer(msg) == ADMIN_ACTION:   # term rotated: clean the next partition off the clock
            t1 = time.perf_counter()
            clean_partition(log, (log.active_term_count + 1) % 3)
            spent += time.perf_counter() - t1
            offer(msg)
    elapsed = time.perf_counter() - t0 - spent
    appender.close()
    return elapsed


def make_publication(log):
    # Made as the client conductor makes one (appender over the log, then identity), minus the driver:
    # no position limit, so nothing but the rotation (cleaned off the clock) interrupts the loop.
    pub = Publication(log)
    pub._init_identity(None, "aeron:ipc", 1, 1, -1, -1, "")
    return pub


def bench_publication(loops, how):
    """32 B messages through a client Publication: ``offer``, ``try_claim(n)`` + commit (the publication's
    own claim) or ``try_claim(n, claim)`` + commit (the caller's claim)."""
    log = make_log()
    pub = make_publication(log)
    msg = bytes(32)
    spent = 0.0
    t0 = time.perf_counter()
    if how == "offer":
        offer = pub.offer
        for _ in range(loops):
            if offer(msg) == ADMIN_ACTION:
                t1 = time.perf_counter()
                clean_partition(log, (log.active_term_count + 1) % 3)
                spent += time.perf_counter() - t1
                offer(msg)
    elif how == "try_claim_commit_own_claim":
        try_claim = pub.try_claim
        for _ in range(loops):
            claim = try_claim(32)
            if not claim:
                t1 = time.perf_counter()
                clean_partition(log, (log.active_term_count + 1) % 3)
                spent += time.perf_counter() - t1
                claim = try_claim(32)
            claim.commit()
    else:                               # "try_claim_commit": the caller's claim
        try_claim = pub.try_claim
        claim = BufferClaim()
        commit = claim.commit
        for _ in range(loops):
            if try_claim(32, claim) == ADMIN_ACTION:
                t1 = time.perf_counter()
                clean_partition(log, (log.active_term_count + 1) % 3)
                spent += time.perf_counter() - t1
                try_claim(32, claim)
            commit()
    elapsed = time.perf_counter() - t0 - spent
    ConcurrentTermAppender.close(pub)   # no conductor to tell: close the appender part only
    return elapsed


def _noop(buffer, offset, length, header):
    pass


def bench_poll(loops, size):
    # Fill (off the clock) then poll everything back with a Python handler.
    log = make_log()
    appender = ExclusiveTermAppender(log)
    reader = TermReader(log)
    msg = bytes(size)
    per_term = TERM_LENGTH // ((size + 32 + 31) & ~31)
    elapsed = 0.0
    remaining = loops
    while remaining > 0:
        batch = min(remaining, per_term - 1)
        for _ in range(batch):
            appender.offer(msg)
        t0 = time.perf_counter()
        got = 0
        while got < batch:
            got += reader.poll(_noop, 1 << 30)
        elapsed += time.perf_counter() - t0
        remaining -= batch
        # start the next batch on a fresh log so every batch polls from a term start
        appender.close()
        reader.close()
        log.close()
        log = make_log()
        appender = ExclusiveTermAppender(log)
        reader = TermReader(log)
    return elapsed


def _zmq_sink(data_endpoint, ack_endpoint):
    # Drains the PUSH socket; an empty message is a sync marker answered on the ack socket.
    import zmq
    ctx = zmq.Context()
    pull = ctx.socket(zmq.PULL)
    pull.connect(data_endpoint)
    ack = ctx.socket(zmq.PUSH)
    ack.connect(ack_endpoint)
    while True:
        frame = pull.recv(copy=False)
        if len(frame) == 0:
            ack.send(b"ok")


_zmq = None


def _zmq_setup():
    global _zmq
    import multiprocessing as mp
    import tempfile
    import zmq
    base = f"ipc://{tempfile.gettempdir()}/aeron-py-bench-{os.getpid()}"
    ctx = zmq.Context()
    push = ctx.socket(zmq.PUSH)
    push.setsockopt(zmq.SNDHWM, 100_000)
    push.bind(base + ".data")
    ack = ctx.socket(zmq.PULL)
    ack.bind(base + ".ack")
    sink = mp.get_context("spawn").Process(target=_zmq_sink, args=(base + ".data", base + ".ack"), daemon=True)
    sink.start()
    push.send(b"")          # wait until the sink is connected and draining
    ack.recv()
    _zmq = (ctx, push, ack, sink)
    atexit.register(_zmq_teardown, base)
    return _zmq


def _zmq_teardown(base):
    ctx, push, ack, sink = _zmq
    sink.kill()
    push.close(linger=0)
    ack.close(linger=0)
    ctx.term()
    for suffix in (".data", ".ack"):
        try:
            os.unlink(base[len("ipc://"):] + suffix)
        except FileNotFoundError:
            pass


def bench_zmq_send(loops, size):
    """pyzmq PUSH over ipc:// to a draining PULL in another process: send rate from a Python loop."""
    ctx, push, ack, sink = _zmq or _zmq_setup()
    msg = bytes(size)
    send = push.send
    t0 = time.perf_counter()
    for _ in range(loops):
        send(msg, copy=True)
    elapsed = time.perf_counter() - t0
    push.send(b"")          # drain before the next timing, off the clock
    ack.recv()
    return elapsed


def main():
    # pyperf workers get a filtered environment: pass our switches through explicitly.
    if not any(a.startswith("--inherit-environ") for a in sys.argv):
        sys.argv.append("--inherit-environ=AERON_PY_BENCH_ONLY,AERON_PY_BENCH_NO_ZMQ")
    runner = pyperf.Runner()
    runner.metadata["spinning_threads"] = "0 (single-threaded offer/poll loops)"
    only = os.environ.get("AERON_PY_BENCH_ONLY", "")   # substring filter on benchmark names
    benches = [(f"offer_{kind}_{size}B", bench_offer, (kind, size))
               for kind in ("concurrent", "exclusive") for size in (32, 1024)]
    benches += [(f"poll_{size}B", bench_poll, (size,)) for size in (32, 1024)]
    benches += [(f"publication_{how}_32B", bench_publication, (how,))
                for how in ("offer", "try_claim_commit", "try_claim_commit_own_claim")]
    if not os.environ.get("AERON_PY_BENCH_NO_ZMQ"):
        benches.append(("pyzmq_push_ipc_32B", bench_zmq_send, (32,)))
    for name, func, args in benches:
        if only in name:
            runner.bench_time_func(name, func, *args)


if __name__ == "__main__":
    main()
