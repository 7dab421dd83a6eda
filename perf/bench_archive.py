# SPDX-License-Identifier: Apache-2.0
"""Archive record and replay throughput (32 B, 1 KiB, 64 KiB messages; /dev/shm and disk) against ``dd`` writing and
reading the same volume on the same path in the same run; record-while-replay latency p50/p99.

    .venv/bin/python perf/bench_archive.py [--mib 128] [--disk-dir /tmp] [--latency-messages 20000]

Setup: one process runs our driver (SHARED) and the archive (DEDICATED: conductor, recorder and replayer threads),
plus the publisher and the replay subscriber. The publisher writes whole runs of pre-framed messages with
``offer_block`` (the term then holds exactly what per-message offers would write: one DATA frame per message), so
that the figure is the archive's, not the cost of a Python call per 32-byte offer. Record throughput = recorded bytes
/ time from the first offer until the recorded position reached the end; replay throughput = bytes delivered to an
IPC subscription (consumed with ``block_poll``) / time from the replay request to the last byte. ``dd`` writes the
same number of bytes with bs=1M to a file on the same path (page cache, no sync, as the archive at file sync level
0) and reads it back. Target: archive >= 0.8 of dd. Latency: a live replay of a live recording, one timestamped
32-byte message every 50 us, offer to replayed message. Results: perf/results/archive.json.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from aeron import Aeron, Context  # noqa: E402
from aeron._core.codecs import archive as codecs  # noqa: E402
from aeron._core.codecs.archive import RecordingSignal, SourceLocation  # noqa: E402
from aeron.archive.archive import ArchivingMediaDriver  # noqa: E402
from aeron.archive.archive import Context as ArchiveContext  # noqa: E402
from aeron.driver.media_driver import MediaDriver  # noqa: E402
from tests.archive.control_client import ControlClient  # noqa: E402

RESULTS = HERE / "results"
TERM_LENGTH = 16 * 1024 * 1024
CHANNEL = f"aeron:ipc?term-length={TERM_LENGTH}|mtu=8192"
BLOCK = 1024 * 1024


def publish_bulk(pub, payload: int, total: int) -> int:
    """Publish ``total`` bytes of ``payload``-byte messages as runs of frames with offer_block, fragmented at the
    publication's max payload as an offer would (a message never crosses a term: padding first); returns the end."""
    max_payload = pub.max_payload_length
    k = (payload + max_payload - 1) // max_payload
    lengths = [max_payload] * (k - 1) + [payload - (k - 1) * max_payload]
    flags = [0xC0] if k == 1 else [0x80] + [0] * (k - 2) + [0x40]
    aligned = [(n + 32 + 31) & ~31 for n in lengths]
    message_length = sum(aligned)
    per_block = max(1, BLOCK // message_length)
    rel = np.cumsum([0] + aligned * per_block)[:-1].astype(np.int64)
    frame_lengths = np.array([n + 32 for n in lengths] * per_block, dtype=np.int32)
    frame_flags = np.array(flags * per_block, dtype=np.uint8)
    block = np.full(per_block * message_length, 0x5A, dtype=np.uint8)
    header_index = (rel[:, None] + np.arange(32)[None, :])
    block[header_index] = 0
    i32 = block.view(np.int32)
    words = rel // 4
    i32[words] = frame_lengths
    block[rel + 5] = frame_flags
    block[rel + 6] = 1                                            # DATA
    i32[words + 3] = pub.session_id
    i32[words + 4] = pub.stream_id
    start = pub.position
    end_target = start + total
    term_length = pub.term_buffer_length
    frames_per_message = k
    while pub.position < end_target:
        term_offset = pub.term_offset
        term_id = pub.term_id
        if term_offset >= term_length:
            term_offset, term_id = 0, term_id + 1
        remaining = term_length - term_offset
        n = min(per_block, remaining // message_length)
        if n == 0:
            while pub.append_padding(remaining - 32) < 0:
                pass
            continue
        f = n * frames_per_message
        i32[words[:f] + 2] = rel[:f] + term_offset
        i32[words[:f] + 5] = term_id
        while True:
            result = pub.offer_block(block, 0, n * message_length)
            if result > 0:
                break
            if result == pub.CLOSED:
                raise RuntimeError("publication closed")
            time.sleep(0)                   # back pressured: let the archive's threads have the GIL
    return pub.position


def dd_rate(path: str, total: int) -> tuple[float, float]:
    """dd write then read of ``total`` bytes at ``path`` (bs=1M): MB/s each."""
    target = os.path.join(path, f"dd-{uuid.uuid4().hex[:8]}.tmp")
    count = max(1, total // (1024 * 1024))
    try:
        t0 = time.perf_counter()
        subprocess.run(["dd", "if=/dev/zero", f"of={target}", "bs=1M", f"count={count}"], check=True,
                       capture_output=True)
        t1 = time.perf_counter()
        subprocess.run(["dd", f"if={target}", "of=/dev/null", "bs=1M"], check=True, capture_output=True)
        t2 = time.perf_counter()
    finally:
        if os.path.exists(target):
            os.unlink(target)
    mb = count * 1024 * 1024 / 1e6
    return mb / (t1 - t0), mb / (t2 - t1)


def run_case(client: ControlClient, aeron: Aeron, payload: int, total: int, stream_id: int) -> dict[str, float]:
    sub_id = client.ok(codecs.StartRecordingRequestEncoder, stream_id=stream_id,
                       source_location=SourceLocation.REMOTE, channel=CHANNEL)
    pub = aeron.add_exclusive_publication(CHANNEL, stream_id)
    recording_id = client.wait_signal(RecordingSignal.START).recording_id
    t0 = time.perf_counter()
    end = publish_bulk(pub, payload, total)
    while client.ok(codecs.RecordingPositionRequestEncoder, recording_id=recording_id) < end:
        time.sleep(0.0005)
    t1 = time.perf_counter()
    client.ok(codecs.StopRecordingSubscriptionRequestEncoder, subscription_id=sub_id)
    client.wait_signal(RecordingSignal.STOP, recording_id)
    pub.close()
    recorded = end
    sub = aeron.add_subscription("aeron:ipc", stream_id + 100)
    t2 = time.perf_counter()
    client.ok(codecs.ReplayRequestEncoder, recording_id=recording_id, position=0, length=recorded,
              replay_stream_id=stream_id + 100, file_io_max_length=0, replay_token=-1, replay_channel="aeron:ipc")
    consumed = 0
    sink = lambda *a: None          # noqa: E731
    while not sub.images:
        time.sleep(0.0001)
    image = sub.images[0]
    while image.position < recorded:
        if image.block_poll(sink, BLOCK) == 0:
            time.sleep(0)
    consumed = image.position
    t3 = time.perf_counter()
    sub.close()
    return {"record_mb_s": recorded / 1e6 / (t1 - t0), "replay_mb_s": consumed / 1e6 / (t3 - t2),
            "bytes": recorded}


def latency(client: ControlClient, aeron: Aeron, count: int) -> dict[str, float]:
    channel = "aeron:ipc?term-length=1m"
    sub_id = client.ok(codecs.StartRecordingRequestEncoder, stream_id=7000, source_location=SourceLocation.REMOTE,
                       channel=channel)
    pub = aeron.add_exclusive_publication(channel, 7000)
    recording_id = client.wait_signal(RecordingSignal.START).recording_id
    while pub.offer(b"\0" * 32) < 0:
        pass
    sub = aeron.add_subscription("aeron:ipc", 7001)
    client.ok(codecs.ReplayRequestEncoder, recording_id=recording_id, position=0, length=-1, replay_stream_id=7001,
              file_io_max_length=0, replay_token=-1, replay_channel="aeron:ipc")
    samples: list[int] = []

    def on_fragment(buffer, offset, length, header):
        sent = int.from_bytes(buffer.get_bytes(offset, 8), "little")
        if sent:
            samples.append(time.perf_counter_ns() - sent)

    while not sub.images:
        time.sleep(0.0001)
    msg = bytearray(32)
    next_send = time.perf_counter_ns()
    sent_count = 0
    while len(samples) < count:
        now = time.perf_counter_ns()
        if sent_count < count and now >= next_send:
            msg[0:8] = now.to_bytes(8, "little")
            if pub.offer(msg) > 0:
                sent_count += 1
                next_send = now + 50_000
        if sub.poll(on_fragment, 10) == 0:
            time.sleep(0)
    client.ok(codecs.StopRecordingSubscriptionRequestEncoder, subscription_id=sub_id)
    pub.close()
    sub.close()
    samples.sort()
    pick = lambda p: samples[min(len(samples) - 1, int(p * len(samples) / 100))] / 1000.0   # noqa: E731
    return {"p50_us": pick(50), "p99_us": pick(99), "samples": len(samples)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mib", type=int, default=128, help="volume per case")
    parser.add_argument("--disk-dir", default=tempfile.gettempdir())
    parser.add_argument("--latency-messages", type=int, default=20000)
    parser.add_argument("--threading-mode", default="SHARED", help="archive threading mode")
    parser.add_argument("--switch-interval-us", type=float, default=0,
                        help="sys.setswitchinterval for the run (0: leave the interpreter's 5 ms)")
    args = parser.parse_args()
    if args.switch_interval_us:
        sys.setswitchinterval(args.switch_interval_us / 1e6)
    total = args.mib * 1024 * 1024
    results: dict[str, object] = {"volume_mib": args.mib, "cases": []}
    for location in ("/dev/shm", args.disk_dir):
        base = pathlib.Path(location) / f"aeron-bench-archive-{uuid.uuid4().hex[:8]}"
        base.mkdir()
        amd = None
        try:
            amd = ArchivingMediaDriver.launch(
                MediaDriver.Context(environ={}, aeron_dir=f"/dev/shm/aeron-bench-archive-drv-{uuid.uuid4().hex[:8]}",
                                    threading_mode="SHARED", ipc_term_buffer_length=TERM_LENGTH,
                                    dir_delete_on_shutdown=True),
                ArchiveContext(environ={}, archive_dir=str(base / "archive"), control_channel_enabled=False,
                               threading_mode=args.threading_mode, idle_strategy="backoff"))
            with Aeron.connect(Context(aeron_dir=amd.driver.aeron_dir)) as aeron:
                client = ControlClient(aeron, "aeron:ipc?term-length=64k", 10, "aeron:ipc?term-length=64k", 20)
                client.connect()
                run_case(client, aeron, 1024, min(total, 16 * 1024 * 1024), 4999)        # warm-up, not reported
                for i, payload in enumerate((32, 1024, 65536)):
                    dd_write, dd_read = dd_rate(str(base), total)
                    case = run_case(client, aeron, payload, total, 5000 + i)
                    case.update(location=location, payload=payload, dd_write_mb_s=dd_write, dd_read_mb_s=dd_read,
                                record_vs_dd=case["record_mb_s"] / dd_write,
                                replay_vs_dd=case["replay_mb_s"] / dd_read)
                    results["cases"].append(case)           # type: ignore[union-attr]
                    print(f"{location:10} {payload:6d} B  record {case['record_mb_s']:8.0f} MB/s "
                          f"(dd {dd_write:6.0f}, {case['record_vs_dd']:.2f})  replay {case['replay_mb_s']:8.0f} MB/s "
                          f"(dd {dd_read:6.0f}, {case['replay_vs_dd']:.2f})", flush=True)
                    for name in os.listdir(base / "archive"):
                        if name.endswith(".rec"):
                            os.unlink(base / "archive" / name)
                if location == "/dev/shm":
                    results["record_while_replay_latency"] = lat = latency(client, aeron, args.latency_messages)
                    print(f"record-while-replay latency: p50 {lat['p50_us']:.1f} us  p99 {lat['p99_us']:.1f} us",
                          flush=True)
                client.close()
        finally:
            if amd is not None:
                amd.close()
            shutil.rmtree(base, ignore_errors=True)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "archive.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
