# SPDX-License-Identifier: Apache-2.0
"""Reading through a running archive (aeron.spark.replay) and the sink's recording and embedded driver, without
Spark: recordings made by our archive read by replay into exactly the rows the offline scan reads, for several
partition sizes and position filters, on an embedded driver and on the archive's own; the sink recording what it
publishes; and each typed error (archive unreachable, unknown recording, bad options)."""
import dataclasses
import os
import random
import threading
import time

import pyarrow as pa
import pytest

from aeron.archive.errors import ArchiveTimeoutError, UnknownRecordingError
from aeron.common.errors import InvalidArgumentError
from aeron.spark import replay
from aeron.spark.connection import ArchiveSettings, Connection
from aeron.spark.scan import SCHEMA, plan_ranges, read_range
from aeron.spark.sink import SinkSettings, publish
from aeron.spark.source import AeronArchiveStreamReader, Selection
from tests import support

pytestmark = pytest.mark.timeout(300)


def trades(n=400, seed=3):
    """Messages of 0 B to 7 KB: fragmented ones, and 64 KiB terms and 128 KiB segments filled several times."""
    rnd = random.Random(seed)
    return [bytes([i % 251]) * rnd.choice([0, 10, 300, 1376, 1377, 3000, 7000]) + str(i).encode() for i in range(n)]


def table(batches):
    t = pa.Table.from_batches(list(batches), schema=SCHEMA)
    return sorted(zip(*(t.column(name).to_pylist() for name in SCHEMA.names)), key=lambda row: row[:2])


def offline(archive_dir, **plan):
    return table(b for r in plan_ranges(archive_dir, **plan) for b in read_range(r))


def replayed(conn, settings, from_position=0, to_position=None, max_bytes_per_partition=1 << 30, **read):
    rows = []
    for d in replay.list_descriptors(conn.archive):
        end = replay.recorded_end(conn.archive, d)
        to = end if to_position is None else to_position
        for rr in replay.plan(d, from_position, to, end, max_bytes_per_partition):
            rows.extend(replay.read_replayed(conn, settings, rr, **read))
    return table(rows)


def test_replay_reads_the_rows_of_the_files(running_archive):
    messages = trades()
    rid = running_archive.record(messages)
    other = running_archive.record([b"other %d" % i for i in range(30)], stream_id=1002)
    want = offline(running_archive.archive_dir)
    assert [row[-1] for row in want if row[0] == rid] == messages
    assert [row[-1] for row in want if row[0] == other] == [b"other %d" % i for i in range(30)]
    settings = ArchiveSettings.from_options({"controlChannel": running_archive.control_channel})
    with Connection(None, settings) as conn:                 # an embedded driver of its own
        assert conn.is_embedded
        for per_partition in (1, 65536, 200_000, 1 << 30):
            assert replayed(conn, settings, max_bytes_per_partition=per_partition, max_rows_per_batch=97) == want
        # filters that cut terms anywhere: the last message may run past ``to``, into the rest of its term
        by_position = [row[1] for row in want if row[0] == rid]
        lo, hi = by_position[37] + 32, by_position[300] + 1
        cut = [row for row in want if lo <= row[1] < hi]
        assert replayed(conn, settings, lo, hi, 65536) == cut
        assert offline(running_archive.archive_dir, from_position=lo, to_position=hi) == cut
        directory = conn.driver.aeron_dir
    assert not os.path.exists(directory)                     # the embedded driver went with the connection


def test_replay_over_ipc_on_the_archive_driver(running_archive):
    rid = running_archive.record(trades(120, seed=5))
    settings = ArchiveSettings.from_options({"controlChannel": "aeron:ipc?term-length=64k"})
    assert (settings.control_response_channel, settings.replay_channel) == ("aeron:ipc", "aeron:ipc")
    with Connection(running_archive.aeron_dir, settings) as conn:
        assert not conn.is_embedded
        got = replayed(conn, settings, max_bytes_per_partition=65536)
    assert got == offline(running_archive.archive_dir, recording_ids=[rid])


def test_message_boundary_of_a_live_recording(running_archive):
    """A streaming batch of a live recording ends where its first incomplete message starts."""
    settings = ArchiveSettings.from_options({"controlChannel": running_archive.control_channel})
    with running_archive.client() as archive:
        publication = archive.add_recorded_exclusive_publication("aeron:ipc?term-length=64k|mtu=1408", 1003)
        try:
            found = []

            def listed():
                found[:] = [archive.find_last_matching_recording(0, "", 1003, publication.session_id)]
                return found[0] >= 0
            support.wait_for(listed, 30, what="recording listed")
            for m in (b"a" * 100, b"b" * 100, b"c" * 100, b"d" * 5000):
                big = publication.position
                support.wait_for(lambda m=m: publication.offer(m) > 0, 30, what="offer accepted")
            end = publication.position
            support.wait_for(lambda: archive.get_recording_position(found[0]) >= end, 30, what="recorded")
            with Connection(None, settings) as conn:
                d = next(x for x in replay.list_descriptors(conn.archive) if x.recording_id == found[0])
                assert d.stop_position == -1 and replay.recorded_end(conn.archive, d) == end
                assert replay.message_boundary(conn, settings, d, end) == end
                assert replay.message_boundary(conn, settings, d, big + 1408) == big     # inside the 4-fragment one
                assert replay.message_boundary(conn, settings, d, big) == big
        finally:
            archive.stop_recording_publication(publication)
            publication.close()


def test_unreachable_archive_times_out():
    settings = ArchiveSettings.from_options({"controlChannel": f"aeron:udp?endpoint=127.0.0.1:{support.free_port()}",
                                             "timeoutMs": "500"})
    with pytest.raises(ArchiveTimeoutError):
        Connection(None, settings)


def test_unknown_recording_is_a_typed_error(running_archive):
    running_archive.record([b"x" * 100] * 10)
    settings = ArchiveSettings.from_options({"controlChannel": running_archive.control_channel})
    with Connection(running_archive.aeron_dir, settings) as conn:
        d = replay.list_descriptors(conn.archive)[0]
        rr = replay.plan(d, 0, d.stop_position, d.stop_position, 1 << 30)[0]
        lost = replay.ReplayedRange(dataclasses.replace(rr.range, recording_id=99), rr.session_id)
        with pytest.raises(UnknownRecordingError):
            list(replay.read_replayed(conn, settings, lost))
        assert len(table(replay.read_replayed(conn, settings, rr))) == 10     # the session still serves


@pytest.mark.parametrize("options,match", [
    ({"controlChannel": "tcp://archive:8010"}, "controlChannel"),
    ({"controlChannel": "aeron:udp?endpoint=h:1", "controlStreamId": "ten"}, "controlStreamId"),
    ({"controlChannel": "aeron:udp?endpoint=h:1", "controlResponseChannel": "udp://h:2"}, "controlResponseChannel"),
    ({"controlChannel": "aeron:udp?endpoint=h:1", "timeoutMs": "0"}, "timeoutMs"),
])
def test_bad_archive_options(options, match):
    with pytest.raises(InvalidArgumentError, match=match):
        ArchiveSettings.from_options(options)


def test_bad_source_and_sink_options():
    with pytest.raises(InvalidArgumentError, match="not both"):
        Selection.from_options({"path": "/x", "controlChannel": "aeron:ipc"})
    with pytest.raises(InvalidArgumentError, match="controlChannel"):
        Selection.from_options({})
    with pytest.raises(InvalidArgumentError, match="startingPosition"):
        AeronArchiveStreamReader({"controlChannel": "aeron:ipc", "startingPosition": "now"})
    sink = {"channel": "aeron:ipc", "streamId": "1"}
    with pytest.raises(InvalidArgumentError, match="controlChannel"):
        SinkSettings.from_options({**sink, "record": "true"})
    with pytest.raises(InvalidArgumentError, match="record"):
        SinkSettings.from_options({**sink, "record": "yes"})
    with pytest.raises(InvalidArgumentError, match="sourceLocation"):
        SinkSettings.from_options({**sink, "record": "true", "controlChannel": "aeron:ipc", "sourceLocation": "x"})
    with pytest.raises(InvalidArgumentError, match="streamId"):
        SinkSettings.from_options({"channel": "aeron:ipc", "streamId": "one"})


def test_sink_records_what_it_publishes_on_an_embedded_driver(running_archive):
    messages = trades(300, seed=9)
    channel = f"aeron:udp?endpoint=127.0.0.1:{support.free_port()}|term-length=64k"
    settings = SinkSettings.from_options({"channel": channel, "streamId": "4242", "record": "true",
                                          "controlChannel": running_archive.control_channel})
    batch = pa.RecordBatch.from_arrays([pa.array(messages, pa.binary())], names=["payload"])
    done = publish(settings, iter([batch.slice(0, 100), batch.slice(100)]))
    assert done.messages == len(messages) and done.recording_id >= 0
    rows = offline(running_archive.archive_dir, recording_ids=[done.recording_id])
    assert [row[-1] for row in rows] == messages
    assert rows[-1][1] < done.position
    with running_archive.client() as archive:
        support.wait_for(lambda: archive.get_stop_position(done.recording_id) == done.position, 30,
                         what="the recording stopped where the publication ended")
    read = ArchiveSettings.from_options({"controlChannel": running_archive.control_channel})
    with Connection(running_archive.aeron_dir, read) as conn:
        assert replayed(conn, read, max_bytes_per_partition=65536) == rows


def test_sink_on_an_embedded_driver_delivers_before_closing_it(running_archive):
    from aeron import Aeron, Context, FragmentAssembler

    messages = trades(200, seed=11)
    channel = f"aeron:udp?endpoint=127.0.0.1:{support.free_port()}|term-length=64k"
    got, stop = [], threading.Event()
    with Aeron.connect(Context(running_archive.aeron_dir)) as client:
        subscription = client.add_subscription(channel, 77)
        assembler = FragmentAssembler(lambda b, o, n, h: got.append(b.get_bytes(o, n)))

        def poll():
            while not stop.is_set():
                if subscription.poll(assembler, 100) == 0:
                    time.sleep(0.001)
        poller = threading.Thread(target=poll, daemon=True)
        poller.start()
        try:
            settings = SinkSettings.from_options({"channel": channel, "streamId": "77"})
            assert settings.aeron_dir is None
            batch = pa.RecordBatch.from_arrays([pa.array(messages, pa.binary())], names=["payload"])
            assert publish(settings, iter([batch])).messages == len(messages)
            # publish returned once its driver released the drained publication: everything was sent
            support.wait_for(lambda: len(got) >= len(messages), 30, what="every message received")
        finally:
            stop.set()
            poller.join(10)
    assert got == messages
