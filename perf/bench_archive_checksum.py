# SPDX-License-Identifier: Apache-2.0
"""Recording with a record checksum against recording without, in the same run: MiB/s of each and their ratio.

    .venv/bin/python perf/bench_archive_checksum.py [--mib 128] [--payloads 32,1024,65536] [--repeat 3]
                                                    [--dir /dev/shm] [--checksum CRC-32C] [--kernel-only]

archive: our archive (``ArchivingMediaDriver``, SHARED threading, backoff idle) records ``--mib`` of ``--payload``-byte
messages that a publisher process (``perf/bench_archive.py``'s, ``offer_block`` of pre-framed 1 MiB runs) sends over
IPC, once with ``aeron.archive.record.checksum`` unset and once with it set to ``--checksum`` (each DATA frame's
session id field then carries the CRC of its aligned body, as Aeron's ``RecordingWriter`` stores it). One archive per
setting, launched afresh for every case, the two settings taking turns ``--repeat`` times so that the machine's load
falls on both alike. Rate = recorded bytes / time from the first offer until the recording position counter reached
the end; CPU = the archive agent thread's CPU seconds meanwhile, as MiB per CPU second.

kernel: ``SegmentWriter.record`` alone in this thread (no driver, no other process), the same log of pre-framed
messages into a segment file in ``--dir``, without and with the checksum: MiB per CPU second of this thread, the
best of ``--repeat``. The machine's load moves this figure far less than the archive's rate.

The ratio is checksummed / unchecksummed (1.0: the checksum costs nothing). Results: perf/results/archive_checksum.json.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import statistics
import sys
import time
import uuid

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import bench_archive as ba  # noqa: E402  (perf/, the publisher process and the archive helpers)
import bench_archive_io as bio  # noqa: E402  (perf/, the pre-framed log)

from aeron import Aeron, Context  # noqa: E402
from aeron._core.archive_io import CHECKSUM_CRC32, CHECKSUM_CRC32C, CHECKSUM_NONE, SegmentWriter  # noqa: E402
from aeron._core.codecs import archive as codecs  # noqa: E402
from aeron._core.codecs.archive import RecordingSignal, SourceLocation  # noqa: E402
from aeron._core.term_reader import TermReader  # noqa: E402
from tests.archive.control_client import ControlClient  # noqa: E402

MIB = 1024 * 1024
KINDS = {"CRC-32": CHECKSUM_CRC32, "CRC-32C": CHECKSUM_CRC32C}


def record_case(client: ControlClient, aeron: Aeron, payload: int, total: int, stream_id: int) -> dict[str, float]:
    """Record ``total`` bytes of ``payload``-byte messages from a publisher process: MiB/s and MiB per archive CPU
    second."""
    sub_id = client.ok(codecs.StartRecordingRequestEncoder, stream_id=stream_id,
                       source_location=SourceLocation.REMOTE, channel=ba.CHANNEL)
    publisher = ba.child("publish", aeron.context.aeron_dir, stream_id, payload, total)
    try:
        recording_id = client.wait_signal(RecordingSignal.START).recording_id
        counter_id = ba.recording_position_counter(aeron, recording_id)
        counters = aeron.counters_reader
        cpu0 = ba.thread_cpu()
        publisher.stdin.write("go\n")
        publisher.stdin.flush()
        t0, end, _, _ = ba.report(publisher)
        while counters.get_counter_value(counter_id) < end:
            time.sleep(0.0005)
        t1 = time.perf_counter_ns()
        cpu = ba.archive_cpu(ba.cpu_delta(cpu0, ba.thread_cpu()))
        ba.finish(publisher)
    except BaseException:
        publisher.kill()
        raise
    client.ok(codecs.StopRecordingSubscriptionRequestEncoder, subscription_id=sub_id)
    client.wait_signal(RecordingSignal.STOP, recording_id)
    return {"mib_s": end / MIB / ((t1 - t0) / 1e9), "mib_per_cpu_s": end / MIB / max(cpu, 1e-6)}


def archive_case(location: str, checksum: str | None, payload: int, total: int, stream_id: int) -> dict[str, float]:
    """A fresh archive with the record checksum ``checksum`` (None: none) at ``location``: a warm-up recording, then
    the measured one."""
    base = pathlib.Path(location) / f"aeron-bench-checksum-{uuid.uuid4().hex[:8]}"
    base.mkdir()
    amd = None
    try:
        amd = ba.launch(base, "backoff", "SHARED", record_checksum=checksum)
        with Aeron.connect(Context(aeron_dir=amd.driver.aeron_dir)) as aeron:
            client = ControlClient(aeron, "aeron:ipc?term-length=64k", 10, "aeron:ipc?term-length=64k", 20)
            client.connect()
            record_case(client, aeron, payload, min(total, 16 * MIB), stream_id)          # warm-up, not reported
            case = record_case(client, aeron, payload, total, stream_id + 1)
            client.close()
        return case
    finally:
        if amd is not None:
            amd.close()
        shutil.rmtree(base, ignore_errors=True)


def kernel_mib_per_cpu_s(log, path: str, length: int, kind: int) -> float:
    """MiB per CPU second of this thread for ``SegmentWriter.record`` of ``length`` bytes of ``log`` into a new file at
    ``path``, with the checksum ``kind``."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    os.ftruncate(fd, length)
    reader = TermReader(log)
    writer = SegmentWriter(0, kind, bio.RUN)
    writer.fd = fd
    try:
        cpu = time.thread_time()
        done = 0
        while done < length:
            done += writer.record(reader, bio.RUN, length, bio.BATCH)
        return length / MIB / max(time.thread_time() - cpu, 1e-6)
    finally:
        reader.close()
        os.close(fd)


def main() -> None:
    """Print each payload's figures without and with the checksum and write perf/results/archive_checksum.json."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mib", type=int, default=128, help="volume per case, a multiple of 16")
    parser.add_argument("--payloads", default="32,1024,65536", help="message sizes, comma-separated")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", default="/dev/shm", help="where the archive and the kernel's segment go")
    parser.add_argument("--checksum", default="CRC-32C", choices=sorted(KINDS))
    parser.add_argument("--kernel-only", action="store_true", help="only SegmentWriter.record in this thread")
    args = parser.parse_args()
    total = args.mib // 16 * 16 * MIB
    payloads = [int(p) for p in args.payloads.split(",")]
    results: dict[str, object] = {"volume_mib": total // MIB, "checksum": args.checksum, "dir": args.dir,
                                  "load_average": os.getloadavg(), "kernel": {}, "archive": {}}
    print(f"load average {os.getloadavg()[0]:.1f}; {total // MIB} MiB per case, {args.checksum} against none, "
          f"{args.dir}", flush=True)
    segment = os.path.join(args.dir, f"aeron-bench-checksum-{uuid.uuid4().hex[:8]}.rec")
    try:
        for payload in payloads:
            log = bio.framed_terms(payload)
            try:
                best = {name: max(kernel_mib_per_cpu_s(log, segment, total, kind) for _ in range(args.repeat))
                        for name, kind in (("none", CHECKSUM_NONE), (args.checksum, KINDS[args.checksum]))}
            finally:
                log.close()
            ratio = best[args.checksum] / best["none"]
            results["kernel"][payload] = {**best, "ratio": ratio}        # type: ignore[index]
            print(f"kernel  {payload:6d} B  none {best['none']:8.0f} MiB/cpu-s  {args.checksum} "
                  f"{best[args.checksum]:8.0f} MiB/cpu-s  ratio {ratio:.2f}", flush=True)
    finally:
        if os.path.exists(segment):
            os.unlink(segment)
    if not args.kernel_only:
        for i, payload in enumerate(payloads):
            runs: dict[str, list[dict[str, float]]] = {"none": [], args.checksum: []}
            for r in range(args.repeat):
                for name, setting in (("none", None), (args.checksum, args.checksum)):
                    runs[name].append(archive_case(args.dir, setting, payload, total, 6000 + 10 * (i * args.repeat + r)))
            figures = {name: {"best_mib_s": max(c["mib_s"] for c in cases),
                              "median_mib_s": statistics.median(c["mib_s"] for c in cases),
                              "best_mib_per_cpu_s": max(c["mib_per_cpu_s"] for c in cases)}
                       for name, cases in runs.items()}
            none, crc = figures["none"], figures[args.checksum]
            entry = {**figures, "ratio_best": crc["best_mib_s"] / none["best_mib_s"],
                     "ratio_median": crc["median_mib_s"] / none["median_mib_s"],
                     "ratio_cpu": crc["best_mib_per_cpu_s"] / none["best_mib_per_cpu_s"]}
            results["archive"][payload] = entry                          # type: ignore[index]
            print(f"archive {payload:6d} B  none {none['best_mib_s']:8.0f} MiB/s (median {none['median_mib_s']:6.0f})  "
                  f"{args.checksum} {crc['best_mib_s']:8.0f} MiB/s (median {crc['median_mib_s']:6.0f})  ratio "
                  f"{entry['ratio_best']:.2f} (median {entry['ratio_median']:.2f}, per CPU second "
                  f"{entry['ratio_cpu']:.2f})", flush=True)
    results["load_average_end"] = os.getloadavg()
    print(f"load average {os.getloadavg()[0]:.1f}", flush=True)
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    (out / "archive_checksum.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
