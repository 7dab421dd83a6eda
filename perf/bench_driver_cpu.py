# SPDX-License-Identifier: Apache-2.0
"""Driver CPU per datagram, side by side in one run: our driver vs the official `aeronmd`, same clients.

    .venv/bin/python perf/bench_driver_cpu.py [--runs 3] [--quick]        (aeronmd needs AERON_C_BIN)

Two drivers on one machine: the publisher's (it sends) and the subscriber's (it receives); the one measured is
paired with an aeronmd on the other side, so both kinds face the same partner (aeronmd with aeronmd, ours with
aeronmd): ours sending to aeronmd gives our CPU per sent datagram, aeronmd sending to ours our CPU per received
one. The official `streaming_publisher` sends a fixed stream of messages over loopback UDP to `rate_subscriber`;
each driver's own process CPU time (utime + stime from /proc/<pid>/stat, every thread) over the stream is divided
by the datagrams it handled, read from its own counters in cnc.dat:
  * sent datagrams (publisher's driver): the stream's data datagrams (its snd-pos / frame length) + heartbeats
    sent, + the status messages and NAKs it read;
  * received datagrams (subscriber's driver): the stream's data datagrams (its rcv-pos / frame length) +
    heartbeats received, + the status messages and NAKs it sent.
Retransmissions and duplicates are not counted as datagrams handled but cost CPU like the rest: a driver that
causes loss pays for it. What was resent is shown from the retransmitted-bytes counter, which both drivers keep
alike (bytes sent leaves retransmits out in both). The CPU of idle steps counts too: while a driver waits for status
messages or for the publisher it backs off (spin, yield, park) and pays for each step; both drivers back off about as
often over a stream (as many sched_yield and nanosleep calls, docs/performance.md), so this does not favour either,
but a step that runs a whole Python duty cycle costs ours far more than aeronmd's.
The stream is over when the subscriber's image has rebuilt it all (rcv-pos). Every datagram holds exactly one frame so that bytes convert to datagrams exactly: 32 B messages go with
``mtu=96`` on the channel (a 64-byte frame; two would not fit), 1 KiB messages with the default MTU (1408: one
1056-byte frame per datagram). Both drivers: SHARED threading, `backoff` idle, as perf/bench_udp.py.
Results: perf/results/driver_cpu.json. Targets (issue 14): CPU per datagram <= 1.5x aeronmd's. ``--case 1KiB`` and
``--side sent`` run one case or one side of ours (each run still measures aeronmd with aeronmd beside it).
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time

from bench_ipc import RESULTS, Driver, _clients, _env, _popen, _stop

from aeron._core import counters as ctr
from aeron.tools.stat import read_stat

_TICK = os.sysconf("SC_CLK_TCK")


def _port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK           # utime, stime (fields 14 and 15)


def _system_counters(driver: Driver) -> dict[int, int]:
    stat = read_stat(driver.dir)
    values = {c.counter_id: c.value for c in stat.counters if c.type_id == ctr.DRIVER_SYSTEM_COUNTER_TYPE_ID}
    # the stream's positions, keyed below the system counter ids' range
    for key, type_id in ((-1, ctr.DRIVER_SENDER_POSITION_TYPE_ID), (-2, ctr.DRIVER_RECEIVER_POS_TYPE_ID)):
        values[key] = max((c.value for c in stat.counters if c.type_id == type_id), default=0)
    return values


def _wait_rebuilt(driver: Driver, position: int, timeout_s: float = 60.0) -> None:
    """Until the subscriber's driver has rebuilt the whole stream without gaps (its image's rcv-pos reaches
    ``position``; the publication starts at 0), or the image has gone after being seen."""
    deadline = time.monotonic() + timeout_s
    seen = False
    while time.monotonic() < deadline:
        positions = [c.value for c in read_stat(driver.dir).counters
                     if c.type_id == ctr.DRIVER_RECEIVER_POS_TYPE_ID]
        if positions and max(positions) >= position or seen and not positions:
            return
        seen = seen or bool(positions)
        time.sleep(0.005)
    raise RuntimeError(f"the subscriber's driver did not rebuild {position} bytes in {timeout_s} s")


def _frame_length(message_length: int) -> int:
    return (message_length + 32 + 31) & ~31


def measure(pub_kind: str, sub_kind: str, bin_dir: str | None, messages: int, length: int) -> dict[str, float]:
    """One stream from a ``pub_kind`` driver to a ``sub_kind`` one; CPU µs per datagram for each side."""
    channel = f"aeron:udp?endpoint=127.0.0.1:{_port()}" + ("|mtu=96" if length <= 32 else "")
    frame = _frame_length(length)
    clients = _clients("C", bin_dir)
    pub_driver = Driver(pub_kind, bin_dir)
    try:
        sub_driver = Driver(sub_kind, bin_dir)
        try:
            sub = _popen([*clients["subscriber"], "-p", sub_driver.dir, "-c", channel])
            try:
                time.sleep(0.5)
                before = [(_cpu_seconds(d.proc.pid), _system_counters(d)) for d in (pub_driver, sub_driver)]
                pub = subprocess.run([*clients["publisher"], "-p", pub_driver.dir, "-c", channel, "-m",
                                      str(messages), "-L", str(length)], capture_output=True, text=True, timeout=600,
                                     env=_env())
                if pub.returncode != 0:
                    raise RuntimeError(f"publisher failed: {pub.stdout} {pub.stderr}")
                _wait_rebuilt(sub_driver, messages * frame)
                after = [(_cpu_seconds(d.proc.pid), _system_counters(d)) for d in (pub_driver, sub_driver)]
            finally:
                _stop(sub)
        finally:
            sub_driver.close()
    finally:
        pub_driver.close()
    (cpu0_pub, c0_pub), (cpu0_sub, c0_sub) = before
    (cpu1_pub, c1_pub), (cpu1_sub, c1_sub) = after

    def delta(a: dict[int, int], b: dict[int, int], key: int) -> int:
        return b[key] - a[key]
    hb_sent = delta(c0_pub, c1_pub, ctr.HEARTBEATS_SENT)
    # the publication starts at 0; its counters may have gone with it, then the stream was sent whole
    sent_data = (c1_pub[-1] or messages * frame) // frame
    sent = sent_data + hb_sent
    resent = delta(c0_pub, c1_pub, ctr.RETRANSMITTED_BYTES) // frame
    control_in = delta(c0_pub, c1_pub, ctr.STATUS_MESSAGES_RECEIVED) + delta(c0_pub, c1_pub, ctr.NAK_MESSAGES_RECEIVED)
    hb_received = delta(c0_sub, c1_sub, ctr.HEARTBEATS_RECEIVED)
    received = (c1_sub[-2] or messages * frame) // frame + hb_received
    control_out = delta(c0_sub, c1_sub, ctr.STATUS_MESSAGES_SENT) + delta(c0_sub, c1_sub, ctr.NAK_MESSAGES_SENT)
    return {"sent_us": (cpu1_pub - cpu0_pub) * 1e6 / max(1, sent + control_in),
            "received_us": (cpu1_sub - cpu0_sub) * 1e6 / max(1, received + control_out),
            "sent": sent, "received": received, "control_in": control_in, "control_out": control_out,
            "naks": delta(c0_sub, c1_sub, ctr.NAK_MESSAGES_SENT), "resent": resent}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="smaller message counts")
    parser.add_argument("--case", choices=("32B", "1KiB"), help="only this message length")
    parser.add_argument("--side", choices=("sent", "received"),
                        help="only this side of ours (its stream, and aeronmd with aeronmd, each run)")
    args = parser.parse_args(argv)
    bin_dir = os.environ.get("AERON_C_BIN")
    if not bin_dir or not os.access(os.path.join(bin_dir, "aeronmd"), os.X_OK):
        print("AERON_C_BIN not set: this benchmark needs the official clients (and aeronmd to compare)")
        return 0
    scale = 0.25 if args.quick else 1.0
    cases = [("cpu-per-dgram-32B", int(1e6 * scale), 32), ("cpu-per-dgram-1KiB", int(4e5 * scale), 1024)]
    if args.case:
        cases = [case for case in cases if case[0].endswith("-" + args.case)]
    sides = (args.side,) if args.side else ("sent", "received")
    results: dict[str, dict[str, dict[str, float]]] = {}
    for name, messages, length in cases:
        samples: dict[str, list[dict[str, float]]] = {"ours": [], "aeronmd": []}
        for _ in range(args.runs):            # interleaved, so background noise hits both drivers alike
            ours: dict[str, float] = {}
            if "sent" in sides:             # ours sending to aeronmd: what ours paid, what it was asked to resend
                sent = measure("ours", "aeronmd", bin_dir, messages, length)
                ours.update({key: sent[key] for key in ("sent_us", "sent", "control_in", "resent")})
            if "received" in sides:         # aeronmd sending to ours: what ours paid, what it sent back
                received = measure("aeronmd", "ours", bin_dir, messages, length)
                ours.update({key: received[key] for key in ("received_us", "received", "control_out", "naks")})
            samples["ours"].append(ours)
            samples["aeronmd"].append(measure("aeronmd", "aeronmd", bin_dir, messages, length))
        for kind, runs in samples.items():
            value = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
            results.setdefault(name, {})[kind] = value
            per_side = "  ".join(f"{side} {value[side + '_us']:.3f} µs/dgram" for side in sides)
            counts = ", ".join(f"{value[key]:.0f} {label}" for key, label in (
                ("sent", "sent"), ("received", "received"), ("control_out", "SM+NAK"), ("naks", "NAKs"),
                ("resent", "datagrams resent")) if key in value)
            print(f"{name:20s} {kind:8s} {per_side}  ({counts})", flush=True)
    print()
    print(f"{'case':20s} {'side':9s} {'ours µs':>9s} {'aeronmd µs':>11s} {'ours/aeronmd':>13s}")
    for name, by in results.items():
        for side in sides:
            ours, theirs = by["ours"][f"{side}_us"], by["aeronmd"][f"{side}_us"]
            print(f"{name:20s} {side:9s} {ours:9.3f} {theirs:11.3f} {ours / theirs:12.2f}x")
    print(f"\ndriver process CPU (all threads) per datagram handled, the other side aeronmd, SHARED + backoff, median "
          f"of {args.runs} runs; "
          "target: <= 1.5x aeronmd")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "driver_cpu.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
