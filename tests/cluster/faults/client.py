# SPDX-License-Identifier: Apache-2.0
"""A client of the fault campaign in its own process: ``python -m tests.cluster.faults.client --mode sync|aio ...``.

It issues one operation at a time until its deadline and writes each invocation and each completion to its history
file as it happens (JSON lines, times on the machine's monotonic clock), so that a client killed mid-operation still
leaves the invocation behind (an unknown outcome):

- ``{"ev": "invoke", "id", "process", "op", "key", "value", "t"}`` before the offer;
- ``{"ev": "ok", "id", "t", "out"}`` when the service's answer arrived;
- ``{"ev": "fail", "id", "t"}`` when the offer was never accepted (nothing reached the cluster);
- ``{"ev": "unknown", "id", "t", "why"}`` when the offer was accepted but no answer came in time, or the session
  was lost: the operation may have taken effect.

Operations are drawn from ``--seed``: lists are appended to with values unique to this client, counters added to,
registers written and compare-and-set, anything read. List keys change every ``KEY_GENERATION_S`` seconds of the
campaign (``--epoch``), so that a list, and a read's answer, stay small.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import threading
import time
from typing import Any, TextIO

from aeron.cluster.client.aeron_cluster import AeronCluster, Context
from aeron.common.agent import BackoffIdleStrategy
from aeron.common.errors import AeronError, AeronTimeoutError
from tests.cluster.faults.history import payload

KEY_GENERATION_S = 20.0
CONNECT_RETRY_S = 0.5


class Generator:
    """The operations of one client, drawn from its seed."""

    def __init__(self, name: str, seed: int, epoch: float) -> None:
        self.name = name
        self.rng = random.Random(seed)
        self.epoch = epoch
        self.count = 0

    def next(self, now: float) -> tuple[str, str, Any]:
        """``(op, key, value)``."""
        self.count += 1
        rng = self.rng
        kind = rng.choice("lllccr")
        if kind == "l":
            key = f"l{int((now - self.epoch) // KEY_GENERATION_S)}{rng.choice('ab')}"
            if rng.random() < 0.7:
                return "append", key, f"{self.name}:{self.count}"
            return "read", key, None
        if kind == "c":
            key = f"c{rng.randrange(2)}"
            return ("add", key, rng.randrange(1, 10)) if rng.random() < 0.7 else ("read", key, None)
        key = f"r{rng.randrange(2)}"
        choice = rng.random()
        if choice < 0.4:
            return "write", key, rng.randrange(5)
        if choice < 0.8:
            return "cas", key, [rng.randrange(5), rng.randrange(5)]
        return "read", key, None


class HistoryWriter:
    """Appends this client's events to its history file, flushed at once."""

    def __init__(self, out: TextIO, process: str) -> None:
        self.out = out
        self.process = process
        self.next_id = 0

    def _write(self, record: dict[str, Any]) -> None:
        self.out.write(json.dumps(record, separators=(",", ":")) + "\n")
        self.out.flush()

    def invoke(self, op: str, key: str, value: Any) -> int:
        op_id = self.next_id
        self.next_id += 1
        self._write({"ev": "invoke", "id": op_id, "process": self.process, "op": op, "key": key, "value": value,
                     "t": time.monotonic()})
        return op_id

    def complete(self, op_id: int, ev: str, out: Any = None, why: str = "") -> None:
        self._write({"ev": ev, "id": op_id, "t": time.monotonic(), "out": out, "why": why})


def command(client: str, op_id: int, op: str, key: str, value: Any) -> bytes:
    """The service's command for one operation (its id unique in the campaign)."""
    return json.dumps({"i": f"{client}/{op_id}", "o": op, "k": key, "v": value}, separators=(",", ":")).encode()


def answer_collector(answers: dict[str, Any]) -> Any:
    """An egress listener function that files each answer under its command id in ``answers``."""
    def on_message(cluster_session_id: int, timestamp: int, buffer: Any, offset: int, length: int,
                   header: Any) -> None:
        message = json.loads(payload(buffer, offset, length))
        answers[message["i"]] = message["r"]
    return on_message


def close_quietly(cluster: AeronCluster | None) -> None:
    """Close the session if there is one; a cluster already gone is no error here."""
    if cluster is not None:
        try:
            cluster.close()
        except AeronError:
            pass


def _context(args: argparse.Namespace, listener: Any = None) -> Context:
    return Context(ingress_channel="aeron:udp", ingress_endpoints=args.ingress_endpoints,
                   egress_channel=f"aeron:udp?endpoint={args.host}:0", aeron_dir=args.aeron_dir,
                   message_timeout_ns=int(args.op_timeout * 1e9), egress_listener=listener,
                   client_name=args.name)


def run_sync(args: argparse.Namespace, history: HistoryWriter, gen: Generator) -> None:
    """The operations on the sync AeronCluster, one at a time."""
    answers: dict[str, Any] = {}
    on_message = answer_collector(answers)

    idle = BackoffIdleStrategy(1, 10, 1_000, 2_000_000)
    cluster: AeronCluster | None = None
    try:
        while time.monotonic() < args.until:
            if cluster is None or cluster.is_closed:
                if cluster is not None:
                    cluster.close()
                    cluster = None
                try:
                    cluster = AeronCluster.connect(_context(args, on_message))
                except AeronError:
                    time.sleep(CONNECT_RETRY_S)
                    continue
            op, key, value = gen.next(time.monotonic())
            op_id = history.invoke(op, key, value)
            message = command(args.name, op_id, op, key, value)
            wanted = f"{args.name}/{op_id}"
            deadline = time.monotonic() + args.op_timeout
            outcome, why = "fail", "offer not accepted in time"
            try:
                idle.reset()
                while time.monotonic() < deadline and not cluster.is_closed:
                    if cluster.offer(message) > 0:
                        outcome, why = "unknown", "no answer in time"
                        break
                    idle.idle(cluster.poll_egress())
                idle.reset()
                while outcome == "unknown" and time.monotonic() < deadline and not cluster.is_closed:
                    if wanted in answers:
                        outcome = "ok"
                        break
                    idle.idle(cluster.poll_egress())
                if wanted in answers:
                    outcome = "ok"
            except AeronError as ex:
                why = f"{type(ex).__name__}: {ex}"
            if outcome == "ok":
                history.complete(op_id, "ok", answers.pop(wanted))
            else:
                if cluster.is_closed and outcome == "unknown":
                    why = "session closed"
                history.complete(op_id, outcome, why=why)
            answers.clear()
            time.sleep(args.think * gen.rng.random())
    finally:
        close_quietly(cluster)


async def run_aio(args: argparse.Namespace, history: HistoryWriter, gen: Generator) -> None:
    """The operations on aeron.aio.cluster, one at a time."""
    import aeron.aio.cluster as aio_cluster
    from aeron.cluster.client.errors import ClusterSessionClosedError

    while time.monotonic() < args.until:
        try:
            async with aio_cluster.connect(_context(args), keep_alive_interval=1.0) as cluster:
                while time.monotonic() < args.until:
                    op, key, value = gen.next(time.monotonic())
                    op_id = history.invoke(op, key, value)
                    request = command(args.name, op_id, op, key, value)
                    wanted = f"{args.name}/{op_id}"
                    start = time.monotonic()
                    try:
                        await cluster.offer(request, timeout=args.op_timeout)
                    except AeronError as ex:
                        history.complete(op_id, "fail", why=f"{type(ex).__name__}: {ex}")
                        if cluster.cluster.is_closed:
                            break
                        continue
                    try:
                        while True:
                            remaining = args.op_timeout - (time.monotonic() - start)
                            message = await cluster.receive(timeout=max(remaining, 0.001))
                            answer = json.loads(message.tobytes())
                            if answer["i"] == wanted:
                                history.complete(op_id, "ok", answer["r"])
                                break
                    except (AeronTimeoutError, ClusterSessionClosedError, AeronError) as ex:
                        history.complete(op_id, "unknown", why=f"{type(ex).__name__}: {ex}")
                        if cluster.cluster.is_closed:
                            break
                    await asyncio.sleep(args.think * gen.rng.random())
        except AeronError:
            await asyncio.sleep(CONNECT_RETRY_S)


def run_final(args: argparse.Namespace, history: HistoryWriter) -> int:
    """Read every key of ``--final-keys`` (each read in the history, retried until answered or ``--until``), then
    ask every member's service to write its state down (``dump``); 0 when every read was answered."""
    answers: dict[str, Any] = {}
    on_message = answer_collector(answers)

    idle = BackoffIdleStrategy(1, 10, 1_000, 2_000_000)
    pending = [k for k in args.final_keys.split(",") if k]
    cluster: AeronCluster | None = None
    try:
        while time.monotonic() < args.until:
            if cluster is None or cluster.is_closed:
                try:
                    cluster = AeronCluster.connect(_context(args, on_message))
                except AeronError:
                    time.sleep(CONNECT_RETRY_S)
                    continue
            if not pending:
                dump = json.dumps({"o": "dump"}).encode()
                while time.monotonic() < args.until and not cluster.is_closed:
                    if cluster.offer(dump) > 0:
                        return 0
                    idle.idle(cluster.poll_egress())
                continue
            key = pending[0]
            op_id = history.invoke("read", key, None)
            wanted = f"{args.name}/{op_id}"
            deadline = time.monotonic() + args.op_timeout
            sent = False
            try:
                while time.monotonic() < deadline and not cluster.is_closed:
                    if not sent and cluster.offer(command(args.name, op_id, "read", key, None)) > 0:
                        sent = True
                    if wanted in answers:
                        break
                    idle.idle(cluster.poll_egress())
            except AeronError:
                pass
            if wanted in answers:
                history.complete(op_id, "ok", answers.pop(wanted))
                pending.pop(0)
            else:
                history.complete(op_id, "unknown" if sent else "fail", why="final read not answered")
        return 1
    finally:
        close_quietly(cluster)


def _stop_when_present(args: argparse.Namespace) -> None:
    """Bring ``--until`` forward to now once ``--stop-file`` exists (every loop reads ``args.until``)."""
    while not os.path.exists(args.stop_file):
        time.sleep(0.2)
    args.until = min(args.until, time.monotonic())


def main(argv: list[str] | None = None) -> int:
    """Run one client until ``--until`` (a time on the monotonic clock)."""
    parser = argparse.ArgumentParser(prog="python -m tests.cluster.faults.client")
    parser.add_argument("--mode", choices=("sync", "aio", "final"), required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--aeron-dir", required=True)
    parser.add_argument("--ingress-endpoints", required=True)
    parser.add_argument("--host", default="127.0.0.1", help="the address the client's egress binds")
    parser.add_argument("--history", required=True)
    parser.add_argument("--until", type=float, required=True)
    parser.add_argument("--epoch", type=float, required=True)
    parser.add_argument("--op-timeout", type=float, default=5.0)
    parser.add_argument("--final-keys", default="", help="final mode: the keys to read, comma separated")
    parser.add_argument("--think", type=float, default=0.02, help="longest pause between operations, seconds")
    parser.add_argument("--stop-file", default=None, help="stop before --until once this file exists")
    args = parser.parse_args(argv)
    if args.stop_file:
        threading.Thread(target=_stop_when_present, args=(args,), daemon=True, name="stop-file").start()
    gen = Generator(args.name, args.seed, args.epoch)
    with open(args.history, "a", encoding="utf-8") as out:
        history = HistoryWriter(out, args.name)
        if args.mode == "final":
            return run_final(args, history)
        if args.mode == "sync":
            run_sync(args, history, gen)
        else:
            asyncio.run(run_aio(args, history, gen))
    return 0


if __name__ == "__main__":
    sys.exit(main())
