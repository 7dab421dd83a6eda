# SPDX-License-Identifier: Apache-2.0
"""The archive's data-path kernels alone, in this thread, against ``dd`` on the same path: CPU milliseconds to record
and to replay one segment (no driver, no other process, so the machine's load moves these figures little).

    .venv/bin/python perf/bench_archive_io.py [--dir /tmp] [--payload 1024] [--mib 128] [--repeat 3]

record: ``SegmentWriter.record`` of a log's terms (16 MiB, pre-framed messages of ``--payload`` bytes) into a
segment file, 1 MiB runs, 16 MiB per call; against ``dd if=/dev/zero bs=1M`` writing as much. replay:
``ReplayBlockReader.replay`` of that segment into a new replay log (as each replay has: its pages are first touched
by the replay), by ``pread`` and by copy from the mapping, and into a log whose pages were touched before (the copy
alone); against ``dd of=/dev/null bs=1M`` reading the segment. Each figure is the best of ``--repeat``.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import resource
import subprocess
import sys
import tempfile
import time
import uuid

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from aeron._core.archive_io import ReplayBlockReader, SegmentWriter, prefers_pread  # noqa: E402
from aeron._core.atomic_buffer import AtomicBuffer  # noqa: E402
from aeron._core.logbuffer import LogBuffers  # noqa: E402
from aeron._core.term_appender import ExclusiveTermAppender  # noqa: E402
from aeron._core.term_reader import TermReader  # noqa: E402
from tests._core.framing import write_frame, write_pad  # noqa: E402

TERM = 16 * 1024 * 1024
BATCH = 16 * 1024 * 1024
RUN = 1024 * 1024


def framed_terms(payload: int) -> LogBuffers:
    """An in-memory log whose three terms are full of ``payload``-byte DATA frames (a PAD at each term's end)."""
    log = LogBuffers.create(term_length=TERM, initial_term_id=0, session_id=1, stream_id=2, is_connected=1,
                            log_type=1)
    frame = (payload + 32 + 31) & ~31
    for index in range(3):
        term = log.term_buffer(index)
        offset = 0
        while offset + frame <= TERM:
            offset = write_frame(term, offset, b"\x5a" * payload, session_id=1, stream_id=2, term_id=index)
        if offset < TERM:
            write_pad(term, offset, TERM - offset, session_id=1, stream_id=2, term_id=index)
    return log


def record(log: LogBuffers, path: str, length: int) -> float:
    """CPU seconds of recording ``length`` bytes of the log (round and round its terms) into a new file at ``path``.
    The term ids in the frames repeat every three terms: the recorder does not read them."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    os.ftruncate(fd, length)
    reader = TermReader(log)
    writer = SegmentWriter()
    writer.fd = fd
    try:
        cpu = time.thread_time()
        done = 0
        while done < length:
            done += writer.record(reader, RUN, length, BATCH)
        return time.thread_time() - cpu
    finally:
        reader.close()
        os.close(fd)


def renumber_terms(path: str, length: int) -> None:
    """Give the frames of each term of the segment that term's id (the replay checks them)."""
    with open(path, "r+b") as f:
        data = bytearray(f.read())
        for term_id in range(length // TERM):
            offset = term_id * TERM
            end = offset + TERM
            while offset < end:
                frame_length = int.from_bytes(data[offset:offset + 4], "little")
                data[offset + 20:offset + 24] = term_id.to_bytes(4, "little")
                offset += (frame_length + 31) & ~31
        f.seek(0)
        f.write(data)


def replay(segment: AtomicBuffer, fd: int, length: int, touched: bool) -> float:
    """CPU seconds of replaying the segment into a new log in /dev/shm (its pages touched first when ``touched``),
    reading with ``pread`` from ``fd`` (or copying from the mapping when ``fd`` is -1)."""
    path = f"/dev/shm/aeron-bench-archive-io-{uuid.uuid4().hex[:8]}"
    log = LogBuffers.create(path, term_length=TERM, initial_term_id=0, session_id=9, stream_id=9, is_connected=1,
                            log_type=1)
    pub = ExclusiveTermAppender(log)
    try:
        if touched:
            for index in range(3):
                log.term_buffer(index).set_memory(0, TERM, 0)
        reader = ReplayBlockReader(RUN)
        cpu = time.thread_time()
        position = 0
        while position < length:
            n = reader.replay(segment, position, TERM, min(BATCH, length - position), pub, 0, fd)
            if n <= 0:
                raise RuntimeError(f"replay stopped at {position}: {n}")
            position += n
        return time.thread_time() - cpu
    finally:
        pub.close()
        log.close()
        os.unlink(path)


def dd(*args: str) -> float:
    """CPU seconds of one dd run (its rusage)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(["dd", *args, "bs=1M"], check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def main() -> None:
    """Print CPU milliseconds per case, best of --repeat."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", default=tempfile.gettempdir())
    parser.add_argument("--payload", type=int, default=1024)
    parser.add_argument("--mib", type=int, default=128, help="segment length, a multiple of 16")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    length = args.mib // 16 * TERM
    log = framed_terms(args.payload)
    segment_path = os.path.join(args.dir, f"aeron-bench-archive-io-{uuid.uuid4().hex[:8]}.rec")
    dd_path = segment_path + ".dd"
    try:
        best = lambda f: min(f() for _ in range(args.repeat)) * 1e3          # noqa: E731
        record_ms = best(lambda: record(log, segment_path, length))
        dd_write_ms = best(lambda: dd("if=/dev/zero", f"of={dd_path}", f"count={length // RUN}"))
        renumber_terms(segment_path, length)
        segment = AtomicBuffer.map_file(segment_path)
        fd = os.open(segment_path, os.O_RDONLY)
        try:
            cases = {"pread, new log": (fd, False), "mapping, new log": (-1, False),
                     "pread, touched log": (fd, True), "mapping, touched log": (-1, True)}
            replay_ms = {name: best(lambda: replay(segment, f, length, t)) for name, (f, t) in cases.items()}
            dd_read_ms = best(lambda: dd(f"if={segment_path}", "of=/dev/null"))
            chosen = "pread" if prefers_pread(fd) else "mapping"
        finally:
            os.close(fd)
            segment.close()
    finally:
        for path in (segment_path, dd_path):
            if os.path.exists(path):
                os.unlink(path)
    print(f"{args.dir} {args.payload} B, {length >> 20} MiB, CPU ms (best of {args.repeat}); the replay uses "
          f"{chosen} here")
    print(f"  record {record_ms:6.1f}   dd write {dd_write_ms:6.1f}   dd/record {dd_write_ms / record_ms:.2f}")
    for name, ms in replay_ms.items():
        print(f"  replay {name:22} {ms:6.1f}   dd read {dd_read_ms:6.1f}   dd/replay {dd_read_ms / ms:.2f}")


if __name__ == "__main__":
    main()
