# SPDX-License-Identifier: Apache-2.0
"""Archive record and replay throughput (32 B, 1 KiB, 64 KiB messages; /dev/shm and disk) against ``dd`` writing and
reading the same volume on the same path in the same run; record-while-replay latency p50/p99.

    .venv/bin/python perf/bench_archive.py [--mib 128] [--disk-dir /tmp] [--latency-messages 20000] [--profile]
                                           [--threading-mode SHARED] [--idle backoff] [--locations shm,disk]

Processes and threads. The archive process (this script) runs our driver (SHARED: one agent thread) and the archive
(``--threading-mode``, SHARED by default: conductor, recorder and replayer on one agent thread), both with the
``--idle`` strategy (backoff by default: spin, yield, then park, so they sleep when idle), and its Aeron client's
conductor thread; its main thread only waits (0.5 ms sleeps between reads of the recording position counter). The
publisher and the replay consumer are separate processes (as a recorded application is), each one main thread that
spins (``sched_yield`` whenever it is back pressured or finds nothing) plus its client conductor thread. So while
recording, one thread spins (the publisher) and the recorder and driver run while there is work; while replaying, the
consumer spins and the replayer and driver run while there is work.

Publisher: whole runs of pre-framed messages with ``offer_block`` (1 MiB runs of whole messages; the term then holds
exactly what per-message offers would write: one DATA frame per message, fragmented at the MTU as an offer would,
padding at a term's end). The frames are built once per case as one term's worth; per term only the term id column
is rewritten. Record throughput = recorded bytes / time from the first offer until the recording position counter
reached the end.

Consumer: ``Image.block_poll`` of whole term blocks (up to a term per call) with a handler that adds up the lengths
(one Python call per block, never per message). Replay throughput = bytes consumed / time from the replay request
until the consumer reached the end (the replay's set-up included: ``--profile`` prints when the first byte came).

``dd`` writes the same number of bytes with bs=1M to a file on the same path (page cache, no sync, as the archive at
file sync level 0) and reads it back. Target: archive >= 0.8 of dd. Each case also prints the CPU per byte: dd's CPU
seconds (its rusage) over the archive agent threads' (their CPU-time clocks) for the same volume, >= 1 when the
archive spends no more CPU per byte than dd (a figure the machine's load moves less than a rate). ``--profile`` adds the CPU seconds of each
thread of the archive process and of the publisher and consumer processes (their timed part), per phase. Latency:
a live replay of a live recording, one timestamped 32-byte message every 50 us, offer to replayed message (offers
and polls in this process). Results: perf/results/archive.json.

The bound (``perf/bare_pipeline.c``, compiled here with ``cc -O2`` at start): the same passes over the bytes with no
Aeron logic, in C with three threads and no Python — record: a producer copying 1 MiB runs of the case's frames into
a new ring of three 16 MiB terms in /dev/shm at most half a term ahead of the writer, a cleaner zeroing it a term
behind, a writer ``pwrite``-ing the runs to a file on the case's path; replay: a reader ``pread``-ing that file into a
new ring, the cleaner, a consumer stepping over the frames by their length words. Two ways: ``bare shared``, the
threads share one mapping of the ring, its pages made before the record is timed (the passes alone), and ``bare
own``, each thread maps the ring itself as each party of the design does (the publisher and the consumer are other
processes; our driver and archive map a log each), mapping its pages with one ``madvise`` where it first touches
them. Run in each case between ``dd`` and the archive, same volume, same path: their ratio to ``dd`` is the ceiling of
this design on this machine at this load; each case prints the archive against them too (``ours/bare``), and the CPU
per byte of ``dd`` over the bare pipeline's threads (all three; the archive's line has the archive thread's alone).
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import resource
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
import uuid

# numpy's OpenBLAS starts a thread per core that spins after start-up (perf showed them at ~7 % of the samples of a
# run); nothing here uses BLAS, and on 2 cores they take time from the pipeline. Children inherit it.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np  # noqa: E402

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
RECORDING_POSITION_TYPE_ID = 100
CLK_TCK = os.sysconf("SC_CLK_TCK")


# -- publisher process ----------------------------------------------------------------------------------------------

def term_template(pub, payload: int) -> tuple[np.ndarray, int, list[int]]:
    """One term's worth of ``payload``-byte messages framed as an offer would (fragmented at the publication's max
    payload), term offsets filled in: (frames, message length, int32 columns of the term id field per message)."""
    max_payload = pub.max_payload_length
    k = (payload + max_payload - 1) // max_payload
    lengths = [max_payload] * (k - 1) + [payload - (k - 1) * max_payload]
    flags = [0xC0] if k == 1 else [0x80] + [0] * (k - 2) + [0x40]
    aligned = [(n + 32 + 31) & ~31 for n in lengths]
    message_length = sum(aligned)
    count = pub.term_buffer_length // message_length
    frames = np.full(count * message_length, 0x5A, dtype=np.uint8)
    per_message = frames.reshape(count, message_length)
    words = per_message.view(np.int32)
    term_offsets = np.arange(count, dtype=np.int32) * message_length
    term_id_columns = []
    rel = 0
    for n, flag, size in zip(lengths, flags, aligned):
        per_message[:, rel:rel + 32] = 0
        w = rel // 4
        words[:, w] = n + 32
        per_message[:, rel + 5] = flag
        per_message[:, rel + 6] = 1                             # DATA
        words[:, w + 2] = term_offsets + rel
        words[:, w + 3] = pub.session_id
        words[:, w + 4] = pub.stream_id
        term_id_columns.append(w + 5)
        rel += size
    return frames, message_length, term_id_columns


def publish_bulk(pub, payload: int, total: int) -> int:
    """Publish ``total`` bytes of ``payload``-byte messages in 1 MiB runs with offer_block (a message never crosses a
    term: padding first, as an offer does); returns the end position."""
    frames, message_length, columns = term_template(pub, payload)
    words = frames.reshape(-1, message_length).view(np.int32)
    filled = len(frames)
    run = max(1, BLOCK // message_length) * message_length
    term_length = pub.term_buffer_length
    end_target = pub.position + total
    template_term_id = None
    while pub.position < end_target:
        term_offset = pub.term_offset
        term_id = pub.term_id
        if term_offset >= term_length:
            term_offset, term_id = 0, (term_id + 1 + 2**31) % 2**32 - 2**31       # int32 wrap
        if term_offset >= filled:
            while pub.append_padding(term_length - term_offset - 32) < 0:
                os.sched_yield()
            continue
        if term_id != template_term_id:
            for column in columns:
                words[:, column] = term_id
            template_term_id = term_id
        length = min(run, filled - term_offset)
        while True:
            result = pub.offer_block(frames, term_offset, length)
            if result > 0:
                break
            if result == pub.CLOSED:
                raise RuntimeError("publication closed")
            os.sched_yield()                # back pressured
    return pub.position


def publisher_main(args: argparse.Namespace) -> None:
    """The publisher process: ready, wait for go, publish, report (first offer time, end position), wait for done."""
    with Aeron.connect(Context(aeron_dir=args.aeron_dir)) as aeron:
        pub = aeron.add_exclusive_publication(CHANNEL, args.stream_id)
        print("ready", flush=True)
        sys.stdin.readline()
        t0 = time.perf_counter_ns()
        cpu0 = time.process_time()
        end = publish_bulk(pub, args.payload, args.bytes)
        print(t0, end, time.process_time() - cpu0, flush=True)
        sys.stdin.readline()
        pub.close()


# -- consumer process -----------------------------------------------------------------------------------------------

def consumer_main(args: argparse.Namespace) -> None:
    """The replay consumer process: subscribe, ready, block-poll until ``args.bytes`` were consumed, report the end
    time and the bytes."""
    with Aeron.connect(Context(aeron_dir=args.aeron_dir)) as aeron:
        sub = aeron.add_subscription("aeron:ipc", args.stream_id)
        print("ready", flush=True)
        cpu0 = time.process_time()
        while not sub.images:
            os.sched_yield()
        image = sub.images[0]
        consumed = 0

        def on_block(buffer, offset, length, session_id, term_id):
            nonlocal consumed
            consumed += length

        target = args.bytes
        while image.block_poll(on_block, TERM_LENGTH) == 0:
            os.sched_yield()
        first = time.perf_counter_ns()
        while image.position < target:
            if image.block_poll(on_block, TERM_LENGTH) == 0:
                os.sched_yield()
        t3 = time.perf_counter_ns()
        print(t3, consumed, time.process_time() - cpu0, first, flush=True)
        sys.stdin.readline()
        sub.close()


# -- the archive process --------------------------------------------------------------------------------------------

def child(role: str, aeron_dir: str, stream_id: int, payload: int, total: int) -> subprocess.Popen:
    """Start this script as the publisher or consumer process and wait until it is ready."""
    proc = subprocess.Popen([sys.executable, __file__, "--role", role, "--aeron-dir", aeron_dir, "--stream-id",
                             str(stream_id), "--payload", str(payload), "--bytes", str(total)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if line.strip() != "ready":
        proc.kill()
        raise RuntimeError(f"{role} process did not start: {line!r}")
    return proc


def report(proc: subprocess.Popen) -> tuple[int, int, float, int]:
    """What the child prints when it is done: a time, a position or byte count, its CPU seconds meanwhile, and the
    time of the first byte (the consumer; 0 from the publisher)."""
    line = proc.stdout.readline()
    try:
        first, second, cpu, *rest = line.split()
        return int(first), int(second), float(cpu), int(rest[0]) if rest else 0
    except ValueError:
        proc.kill()
        raise RuntimeError(f"child failed: {line!r}") from None


def finish(proc: subprocess.Popen) -> None:
    """Let the child close and exit."""
    proc.stdin.write("done\n")
    proc.stdin.flush()
    if proc.wait(30) != 0:
        raise RuntimeError(f"child exited with {proc.returncode}")


def thread_cpu() -> dict[str, float]:
    """CPU seconds of each Python thread of this process (its CPU-time clock), by thread name."""
    out: dict[str, float] = {}
    for thread in threading.enumerate():
        try:
            clock = time.pthread_getcpuclockid(thread.ident)        # type: ignore[arg-type]
            out[thread.name] = out.get(thread.name, 0.0) + time.clock_gettime(clock)
        except (OSError, TypeError):
            continue                                                 # ended meanwhile
    return out


def cpu_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """CPU seconds per thread between two ``thread_cpu`` snapshots (threads below 1 ms left out)."""
    return {k: round(v - before.get(k, 0.0), 3) for k, v in after.items() if v - before.get(k, 0.0) >= 0.001}


def archive_cpu(delta: dict[str, float]) -> float:
    """CPU seconds of the archive's agent threads (conductor, recorder, replayer; one composite thread in SHARED)."""
    return sum(v for k, v in delta.items() if "archive-" in k)


def recording_position_counter(aeron: Aeron, recording_id: int) -> int:
    """The id of the recording's position counter (type 100, key starting with the recording id)."""
    counters = aeron.counters_reader
    for _ in range(1000):
        for record in counters.counters():
            if record.type_id == RECORDING_POSITION_TYPE_ID and struct.unpack_from("<q", record.key)[0] == recording_id:
                return record.counter_id
        time.sleep(0.001)
    raise RuntimeError(f"no recording position counter for recording {recording_id}")


def launch(base: pathlib.Path, idle: str, threading_mode: str, **archive: object) -> ArchivingMediaDriver:
    """Our driver (SHARED, ``idle``) and archive (``threading_mode``, ``idle``, its directory in ``base``, the other
    ``archive`` context settings), without a control channel: the clients use the local one."""
    return ArchivingMediaDriver.launch(
        MediaDriver.Context(environ={}, aeron_dir=f"/dev/shm/aeron-bench-archive-drv-{uuid.uuid4().hex[:8]}",
                            threading_mode="SHARED", ipc_term_buffer_length=TERM_LENGTH, shared_idle_strategy=idle,
                            dir_delete_on_shutdown=True),
        ArchiveContext(environ={}, archive_dir=str(base / "archive"), control_channel_enabled=False,
                       threading_mode=threading_mode, idle_strategy=idle, **archive))


def run_case(client: ControlClient, aeron: Aeron, payload: int, total: int, stream_id: int,
             profile: bool) -> dict[str, object]:
    """Record ``total`` bytes of ``payload``-byte messages, stop, replay them: rates, durations and CPU."""
    aeron_dir = aeron.context.aeron_dir
    sub_id = client.ok(codecs.StartRecordingRequestEncoder, stream_id=stream_id,
                       source_location=SourceLocation.REMOTE, channel=CHANNEL)
    publisher = child("publish", aeron_dir, stream_id, payload, total)
    recording_id = client.wait_signal(RecordingSignal.START).recording_id
    counter_id = recording_position_counter(aeron, recording_id)
    counters = aeron.counters_reader
    cpu0 = thread_cpu()
    publisher.stdin.write("go\n")
    publisher.stdin.flush()
    t0, end, publisher_cpu, _ = report(publisher)
    while counters.get_counter_value(counter_id) < end:
        time.sleep(0.0005)
    t1 = time.perf_counter_ns()
    cpu1 = thread_cpu()
    finish(publisher)
    client.ok(codecs.StopRecordingSubscriptionRequestEncoder, subscription_id=sub_id)
    client.wait_signal(RecordingSignal.STOP, recording_id)

    consumer = child("consume", aeron_dir, stream_id + 100, payload, end)
    cpu2 = thread_cpu()
    t2 = time.perf_counter_ns()
    client.ok(codecs.ReplayRequestEncoder, recording_id=recording_id, position=0, length=end,
              replay_stream_id=stream_id + 100, file_io_max_length=0, replay_token=-1, replay_channel="aeron:ipc")
    t3, consumed, consumer_cpu, t_first = report(consumer)
    cpu3 = thread_cpu()
    finish(consumer)
    case: dict[str, object] = {"record_mb_s": end * 1e3 / (t1 - t0), "replay_mb_s": consumed * 1e3 / (t3 - t2),
                               "bytes": end, "record_s": (t1 - t0) / 1e9, "replay_s": (t3 - t2) / 1e9,
                               "replay_first_byte_s": (t_first - t2) / 1e9}
    record_cpu, replay_cpu = cpu_delta(cpu0, cpu1), cpu_delta(cpu2, cpu3)
    case["archive_record_cpu_s"] = archive_cpu(record_cpu)
    case["archive_replay_cpu_s"] = archive_cpu(replay_cpu)
    if profile:
        case["cpu_record"] = {**record_cpu, "publisher process": round(publisher_cpu, 3)}
        case["cpu_replay"] = {**replay_cpu, "consumer process": round(consumer_cpu, 3)}
    return case


def dd_rate(path: str, total: int) -> tuple[float, float, float, float]:
    """dd write then read of ``total`` bytes at ``path`` (bs=1M): MB/s each, and CPU seconds each."""
    target = os.path.join(path, f"dd-{uuid.uuid4().hex[:8]}.tmp")
    count = max(1, total // (1024 * 1024))

    def children_cpu() -> float:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    try:
        c0 = children_cpu()
        t0 = time.perf_counter()
        subprocess.run(["dd", "if=/dev/zero", f"of={target}", "bs=1M", f"count={count}"], check=True,
                       capture_output=True)
        t1 = time.perf_counter()
        c1 = children_cpu()
        subprocess.run(["dd", f"if={target}", "of=/dev/null", "bs=1M"], check=True, capture_output=True)
        t2 = time.perf_counter()
        c2 = children_cpu()
    finally:
        if os.path.exists(target):
            os.unlink(target)
    mb = count * 1024 * 1024 / 1e6
    return mb / (t1 - t0), mb / (t2 - t1), c1 - c0, c2 - c1


def build_bare_pipeline(workdir: str) -> str:
    """Compile perf/bare_pipeline.c into ``workdir``; the executable's path."""
    exe = os.path.join(workdir, "bare_pipeline")
    subprocess.run([os.environ.get("CC", "cc"), "-O2", "-pthread", "-o", exe, str(HERE / "bare_pipeline.c")],
                   check=True)
    return exe


def bare_rate(exe: str, path: str, total: int, payload: int, maps: str) -> dict[str, object]:
    """The bare pipeline's record and replay of ``total`` bytes of ``payload``-byte messages at ``path``, its threads
    sharing one mapping of the ring (``shared``) or each with its own (``own``): MB/s and CPU seconds (all its threads)
    each, and the CPU seconds per thread."""
    out = subprocess.run([exe, path, str(total), str(payload), str(TERM_LENGTH), str(BLOCK), "sleep", maps],
                         check=True, capture_output=True, text=True).stdout
    bare = json.loads(out)
    mb = bare["bytes"] / 1e6
    return {"record_mb_s": mb / bare["record_s"], "replay_mb_s": mb / bare["replay_s"],
            "record_cpu_s": sum(bare["record_cpu_s"].values()), "replay_cpu_s": sum(bare["replay_cpu_s"].values()),
            "cpu_record": bare["record_cpu_s"], "cpu_replay": bare["replay_cpu_s"]}


def latency(client: ControlClient, aeron: Aeron, count: int) -> dict[str, float]:
    """Offer-to-replayed-message latency of a live replay of a live recording: p50, p99."""
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
    client.wait_signal(RecordingSignal.STOP, recording_id)
    pub.close()
    sub.close()
    samples.sort()
    pick = lambda p: samples[min(len(samples) - 1, int(p * len(samples) / 100))] / 1000.0   # noqa: E731
    return {"p50_us": pick(50), "p99_us": pick(99), "samples": len(samples)}


def main() -> None:
    """Run the cases on /dev/shm and disk (or the given locations) and write perf/results/archive.json."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mib", type=int, default=128, help="volume per case")
    parser.add_argument("--disk-dir", default=tempfile.gettempdir())
    parser.add_argument("--latency-messages", type=int, default=20000, help="0: no latency run")
    parser.add_argument("--threading-mode", default="SHARED", help="archive threading mode")
    parser.add_argument("--idle", default="backoff", help="idle strategy of the driver and archive agents")
    parser.add_argument("--payloads", default="32,1024,65536", help="message sizes, comma-separated")
    parser.add_argument("--locations", default="shm,disk", help="shm, disk or both")
    parser.add_argument("--profile", action="store_true", help="CPU seconds per thread and process, per phase")
    parser.add_argument("--switch-interval-us", type=float, default=0,
                        help="sys.setswitchinterval for the archive process (0: leave the interpreter's 5 ms)")
    parser.add_argument("--role", choices=("publish", "consume"), help=argparse.SUPPRESS)
    parser.add_argument("--aeron-dir", help=argparse.SUPPRESS)
    parser.add_argument("--stream-id", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--payload", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--bytes", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role == "publish":
        publisher_main(args)
        return
    if args.role == "consume":
        consumer_main(args)
        return
    if args.switch_interval_us:
        sys.setswitchinterval(args.switch_interval_us / 1e6)
    total = args.mib * 1024 * 1024
    payloads = [int(p) for p in args.payloads.split(",")]
    locations = [{"shm": "/dev/shm", "disk": args.disk_dir}[name] for name in args.locations.split(",")]
    results: dict[str, object] = {"volume_mib": args.mib, "threading_mode": args.threading_mode, "idle": args.idle,
                                  "load_average": os.getloadavg(), "cases": []}
    print(f"load average {os.getloadavg()[0]:.1f}", flush=True)
    workdir = tempfile.mkdtemp(prefix="bench-archive-")
    bare_exe = build_bare_pipeline(workdir)
    for location in locations:
        base = pathlib.Path(location) / f"aeron-bench-archive-{uuid.uuid4().hex[:8]}"
        base.mkdir()
        amd = None
        try:
            amd = launch(base, args.idle, args.threading_mode)
            with Aeron.connect(Context(aeron_dir=amd.driver.aeron_dir)) as aeron:
                client = ControlClient(aeron, "aeron:ipc?term-length=64k", 10, "aeron:ipc?term-length=64k", 20)
                client.connect()
                run_case(client, aeron, 1024, min(total, 16 * 1024 * 1024), 4999, False)     # warm-up, not reported
                for i, payload in enumerate(payloads):
                    dd_write, dd_read, dd_write_cpu, dd_read_cpu = dd_rate(str(base), total)
                    bares = {maps: bare_rate(bare_exe, str(base), total, payload, maps) for maps in ("own", "shared")}
                    case = run_case(client, aeron, payload, total, 5000 + i, args.profile)
                    scale = total / case["bytes"]                                   # type: ignore[operator]
                    case.update(location=location, payload=payload, dd_write_mb_s=dd_write, dd_read_mb_s=dd_read,
                                dd_write_cpu_s=dd_write_cpu, dd_read_cpu_s=dd_read_cpu,
                                record_vs_dd=case["record_mb_s"] / dd_write,      # type: ignore[operator]
                                replay_vs_dd=case["replay_mb_s"] / dd_read,       # type: ignore[operator]
                                # CPU per byte, dd's over the archive threads': >= 1 when the archive costs no more
                                record_cpu_vs_dd=dd_write_cpu / max(1e-6, case["archive_record_cpu_s"] * scale),
                                replay_cpu_vs_dd=dd_read_cpu / max(1e-6, case["archive_replay_cpu_s"] * scale))
                    for maps, bare in bares.items():
                        bare.update(record_vs_dd=bare["record_mb_s"] / dd_write,          # type: ignore[operator]
                                    replay_vs_dd=bare["replay_mb_s"] / dd_read,           # type: ignore[operator]
                                    ours_record_vs_bare=case["record_mb_s"] / bare["record_mb_s"],  # type: ignore
                                    ours_replay_vs_bare=case["replay_mb_s"] / bare["replay_mb_s"],  # type: ignore
                                    record_cpu_vs_dd=dd_write_cpu / max(1e-6, bare["record_cpu_s"]),  # type: ignore
                                    replay_cpu_vs_dd=dd_read_cpu / max(1e-6, bare["replay_cpu_s"]))   # type: ignore
                    case["bare"] = bares
                    results["cases"].append(case)           # type: ignore[union-attr]
                    print(f"{location:10} {payload:6d} B  record {case['record_mb_s']:8.0f} MB/s "
                          f"(dd {dd_write:6.0f}, {case['record_vs_dd']:.2f})  replay {case['replay_mb_s']:8.0f} MB/s "
                          f"(dd {dd_read:6.0f}, {case['replay_vs_dd']:.2f})  CPU/byte vs dd: record "
                          f"{case['record_cpu_vs_dd']:.2f} replay {case['replay_cpu_vs_dd']:.2f}", flush=True)
                    for maps, bare in bares.items():
                        print(f"{'':10} {'bare ' + maps:>8}  record {bare['record_mb_s']:8.0f} MB/s (vs dd "
                              f"{bare['record_vs_dd']:.2f}, ours/bare {bare['ours_record_vs_bare']:.2f})  replay "
                              f"{bare['replay_mb_s']:8.0f} MB/s (vs dd {bare['replay_vs_dd']:.2f}, ours/bare "
                              f"{bare['ours_replay_vs_bare']:.2f})  CPU/byte vs dd: record "
                              f"{bare['record_cpu_vs_dd']:.2f} replay {bare['replay_cpu_vs_dd']:.2f}", flush=True)
                    if args.profile:
                        print(f"    replay: first byte after {case['replay_first_byte_s'] * 1e3:.1f} ms of "
                              f"{case['replay_s'] * 1e3:.1f} ms; record {case['record_s'] * 1e3:.1f} ms")
                        print(f"    cpu s, record: {case['cpu_record']}\n    cpu s, replay: {case['cpu_replay']}",
                              flush=True)
                        for maps, bare in bares.items():
                            print(f"    bare {maps} cpu s, record: {bare['cpu_record']}  replay: {bare['cpu_replay']}",
                                  flush=True)
                    for name in os.listdir(base / "archive"):
                        if name.endswith(".rec"):
                            os.unlink(base / "archive" / name)
                if location == "/dev/shm" and args.latency_messages:
                    results["record_while_replay_latency"] = lat = latency(client, aeron, args.latency_messages)
                    print(f"record-while-replay latency: p50 {lat['p50_us']:.1f} us  p99 {lat['p99_us']:.1f} us",
                          flush=True)
                client.close()
        finally:
            if amd is not None:
                amd.close()
            shutil.rmtree(base, ignore_errors=True)
    shutil.rmtree(workdir, ignore_errors=True)
    results["load_average_end"] = os.getloadavg()
    print(f"load average {os.getloadavg()[0]:.1f}", flush=True)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "archive.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
