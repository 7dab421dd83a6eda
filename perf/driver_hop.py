# SPDX-License-Identifier: Apache-2.0
"""The driver's hop per UDP message, from an offer seen to its subscriber woken: the data half of a wake-up driver
thread (SignallingAgent.fast_work) in one compiled call (DataSpin.run_data), against the same data half in Python (the
compiled wait, then Sender.send_data and Receiver.poll_data), alternating in one process and one run so that both see
the same machine.

    .venv/bin/python perf/driver_hop.py [--messages 20000]

A client of an INVOKER driver (our driver, the ``wakeup`` signalling of a SHARED thread) offers 32 bytes on a UDP
stream on 127.0.0.1 that its own subscription receives; a waiter of the subscription's stream is parked (prepared) on
the wake-up board before each offer, so that each timed fast_work call sends the datagram, receives it, inserts it into
the image and wakes the waiter (FUTEX_WAKE), as the driver does between a ping's offer and its pong's wake-up. The subscriber reads
the message between calls, untimed. Prints p10/p50/p90 of each, in microseconds, and their ratio.

A third kind, ``cycle``: what a wake-up cost before the idle strategy ran the data half first on it
(WakeupIdleStrategy._data_after_wake): a whole duty cycle of a SHARED thread (sender, receiver, conductor, in
SignallingAgent) timed from its start until its receive pass has returned with the message in (the subscriber woken
in it); the rest of that cycle came after the wake-up and is not counted.

``--quiet-endpoints`` (default 1): subscriptions on that many other UDP endpoints with no traffic, as in a ping-pong,
whose two directions have an endpoint each: every receive socket is read after a send, and all but one are empty.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from aeron import Aeron, Context, MediaDriver  # noqa: E402
from aeron.common.wakeup import new_waiter, stream_bit  # noqa: E402
from aeron.common.agent import CompositeAgent  # noqa: E402
from aeron.driver import Context as DriverContext  # noqa: E402
from aeron.driver.driver_wakeup import SignallingAgent  # noqa: E402

STREAM = 1001


def _port() -> int:
    import socket
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _percentiles(values: list[int]) -> tuple[float, float, float]:
    ordered = sorted(values)
    return tuple(ordered[int(len(ordered) * q)] / 1000 for q in (0.1, 0.5, 0.9))     # type: ignore[return-value]


def measure(messages: int, quiet_endpoints: int = 1) -> dict[str, tuple[float, float, float]]:
    base = "/dev/shm" if os.path.isdir("/dev/shm") else None
    tmp = tempfile.mkdtemp(prefix="driver-hop-", dir=base)
    channel = f"aeron:udp?endpoint=127.0.0.1:{_port()}"
    ctx = DriverContext(environ={}, threading_mode="INVOKER", aeron_dir=os.path.join(tmp, "d"))
    times: dict[str, list[int]] = {"compiled": [], "python": [], "cycle": []}
    try:
        with MediaDriver.launch_embedded(ctx) as driver, \
                Aeron.connect(Context(driver.aeron_dir, use_conductor_agent_invoker=True)) as client:
            signalling = driver._invoker.agent
            invoker = client.conductor_agent_invoker
            # endpoints with nothing to read, as the other direction of a ping-pong between two messages
            quiet_ids = [client.async_add_subscription(f"aeron:udp?endpoint=127.0.0.1:{_port()}", STREAM + 1 + n)
                         for n in range(quiet_endpoints)]
            sub_id = client.async_add_subscription(channel, STREAM)
            pub_id = client.async_add_exclusive_publication(channel, STREAM)
            sub = pub = None
            deadline = time.monotonic() + 30
            quiet = [None] * quiet_endpoints
            while not (pub is not None and sub is not None and pub.is_connected and sub.image_count
                       and all(q is not None for q in quiet)):
                if time.monotonic() > deadline:
                    raise RuntimeError("the stream did not connect")
                driver.do_work()
                invoker.invoke()
                sub = sub or client.get_subscription(sub_id)
                pub = pub or client.get_exclusive_publication(pub_id)
                quiet = [q or client.get_subscription(q_id) for q, q_id in zip(quiet, quiet_ids)]
            for _ in range(50):
                driver.do_work()                # setups and status messages settled
            waiter = new_waiter(client._conductor.wakeup_board, stream_bit(STREAM), futex=True)     # as our samples'
            payload = b"p" * 32
            got = [0]

            def on_fragment(buffer, offset, length, header):
                got[0] += 1

            clock = time.perf_counter_ns
            # a SHARED thread's whole cycle (Aeron's order: sender, receiver, conductor), its receive pass stamped
            conductor = driver._conductor
            shared = (conductor.sender, conductor.receiver, conductor)
            whole = SignallingAgent(CompositeAgent(*shared), client._conductor.wakeup_board, conductor, shared)
            endpoint_type = type(conductor.receiver.endpoints[0])
            received_at = [0]
            original_poll = endpoint_type.poll

            def stamped_poll(self, now_ns):
                work = original_poll(self, now_ns)
                if work and not received_at[0]:
                    received_at[0] = clock()
                return work

            endpoint_type.poll = stamped_poll
            try:
                for i in range(3 * messages):
                    kind = ("python", "compiled", "cycle")[i % 3]
                    signalling._spin_passes = kind == "compiled" and signalling._monotonic
                    if i % 64 == 0:
                        driver.do_work()        # the whole cycle the spin owes: status messages, limits
                    waiter.prepare()
                    while pub.offer(payload) < 0:
                        driver.do_work()
                    received_at[0] = 0
                    start = clock()
                    if kind == "cycle":
                        moved = whole.do_work()
                        took = received_at[0] - start
                        moved = moved if received_at[0] else 0
                    else:
                        moved = signalling.fast_work()
                        took = clock() - start
                    if moved > 0 and waiter.wait(0):
                        times[kind].append(took)
                    else:
                        waiter.cancel()
                    while sub.poll(on_fragment, 10) == 0 and got[0] <= i:
                        driver.do_work()
            finally:
                endpoint_type.poll = original_poll
                waiter.close()
                signalling._spin_passes = signalling._monotonic
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {kind: _percentiles(values) for kind, values in times.items() if values}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20000, help="messages timed per kind")
    parser.add_argument("--quiet-endpoints", type=int, default=1, help="other UDP endpoints subscribed, no traffic")
    args = parser.parse_args(argv)
    result = measure(args.messages, args.quiet_endpoints)
    for kind, (p10, p50, p90) in result.items():
        what = "whole cycle, to the data in" if kind == "cycle" else f"{kind} data half"
        print(f"driver hop, {what:28}: p10 {p10:7.2f} p50 {p50:7.2f} p90 {p90:7.2f} µs")
    if "compiled" in result and "python" in result:
        print(f"compiled / python, p50: {result['compiled'][1] / result['python'][1]:.2f}x "
              f"(load {os.getloadavg()[0]:.1f})")
    if "compiled" in result and "cycle" in result:
        print(f"compiled / cycle, p50: {result['compiled'][1] / result['cycle'][1]:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
