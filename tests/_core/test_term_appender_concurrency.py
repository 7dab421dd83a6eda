# SPDX-License-Identifier: Apache-2.0
"""Concurrent appends into one log from threads running without the GIL and from two processes;
the log is then walked in plain Python: every message complete, in per-writer order, no gaps."""
import multiprocessing
import struct
import threading

from aeron._core.logbuffer import LogBuffers
from aeron._core.term_appender import ADMIN_ACTION, ConcurrentTermAppender

from tests.cython import appender_threads
from tests.support import align

HEADER = struct.Struct("<iBBhiiiiq")
SESSION, STREAM = 0x5EED, 42


def walk_all(log):
    """Walk terms from position 0. Returns ({writer: [(seq, payload)]}, end position, writer order)."""
    term_length = log.term_length
    count = log.active_term_count
    data = log.buffer.get_bytes(0, 3 * term_length)
    writers = {}
    order = []
    for term_count in range(count + 1):
        base = (term_count % 3) * term_length
        term_id = log.initial_term_id + term_count
        offset = 0
        assembling = None
        while offset < term_length:
            length, version, flags, ftype, frame_offset, session, stream, fterm_id, _ = \
                HEADER.unpack_from(data, base + offset)
            if length <= 0:
                assert length == 0, f"uncommitted frame at term {term_count} offset {offset}"
                break
            assert (version, frame_offset, session, stream, fterm_id) == (0, offset, SESSION, STREAM, term_id)
            if ftype == 0:
                assert offset + length == term_length, "padding only at the end of a term"
                assert assembling is None
            else:
                assert ftype == 1
                body = data[base + offset + 32:base + offset + length]
                if flags & 0x80:
                    assert assembling is None, "fragments of two messages interleaved"
                    assembling = bytearray()
                assert assembling is not None
                assembling += body
                if flags & 0x40:
                    writer, seq, plen = struct.unpack_from("<iii", assembling)
                    assert plen == len(assembling), "torn message"
                    writers.setdefault(writer, []).append((seq, bytes(assembling)))
                    order.append(writer)
                    assembling = None
            offset += align(length, 32)
        assert assembling is None
        if term_count < count:
            assert offset == term_length, f"gap in term {term_count} at {offset}"
        else:
            end = term_count * term_length + offset
            # the whole active term after the last frame is untouched
            assert data[base + offset:base + term_length] == bytes(term_length - offset)
    return writers, end, order


def check_writers(writers, expected_counts, expected_payload):
    assert sorted(writers) == sorted(expected_counts)
    for writer, messages in writers.items():
        seqs = [seq for seq, _ in messages]
        assert seqs == list(range(expected_counts[writer])), f"writer {writer} lost or reordered messages"
        for seq, body in messages:
            assert body == expected_payload(writer, seq, len(body))


def test_threads_append_without_gil():
    term_length = 4 << 20
    log = LogBuffers.create(term_length=term_length, initial_term_id=100, session_id=SESSION, stream_id=STREAM,
                            is_connected=1)
    app = ConcurrentTermAppender(log)
    writers, count = 4, 2000
    barrier = threading.Barrier(writers)
    results = {}

    def run(writer):
        barrier.wait(10)
        results[writer] = appender_threads.append_messages(app, writer, count, 12, 2000, 1234567 + writer)

    threads = [threading.Thread(target=run, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads)
    assert all(failures == 0 for _, failures in results.values()), results
    found, end, order = walk_all(log)
    check_writers(found, {w: count for w in range(writers)}, appender_threads.expected_payload)
    assert log.active_term_count >= 1                  # crossed at least one term boundary
    assert app.position == end
    app.close()
    log.close()


# -- two processes -------------------------------------------------------------------------------------
def process_payload(writer, seq, length):
    head = struct.pack("<iii", writer, seq, length)
    return head + bytes((writer * 7 + seq + i) & 0xFF for i in range(len(head), length))


def _child_append(path, writer, count, start_event):
    log = LogBuffers.map_existing(path)
    app = ConcurrentTermAppender(log)
    start_event.wait(30)
    for seq in range(count):
        msg = process_payload(writer, seq, 12 + (seq * 37 + writer * 101) % 3000)
        for _ in range(1000):
            result = app.offer(msg)
            if result > 0:
                break
            assert result == ADMIN_ACTION, result
        else:
            raise AssertionError("could not append")
    app.close()
    log.close()


def test_two_processes_append_into_one_shm_log(shm_dir):
    path = shm_dir / "1.logbuffer"
    term_length = 1 << 20
    log = LogBuffers.create(path, term_length=term_length, initial_term_id=3, session_id=SESSION,
                            stream_id=STREAM, is_connected=1)
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Event()
    count = 700
    procs = [ctx.Process(target=_child_append, args=(str(path), w, count, start)) for w in (1, 2)]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(60)
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join(5)
    assert [p.exitcode for p in procs] == [0, 0]
    found, end, order = walk_all(log)
    check_writers(found, {1: count, 2: count}, process_payload)
    assert log.active_term_count >= 1
    log.close()
