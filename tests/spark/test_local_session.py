# SPDX-License-Identifier: Apache-2.0
"""The aeron-archive format in a local Spark session: batch reads, partitions, pushdown, corrupt segments,
a streaming query restarted from its checkpoint, reads through a running archive, and the sink."""
import struct

import pytest

from tests import support
from tests.spark.conftest import spark_session
from tests.spark.recordings import RecordingWriter

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]   # a Spark session starts in 20-60 s on a loaded machine


@pytest.fixture(scope="module")
def spark():
    session = spark_session()
    yield session
    session.stop()


def rows_of(df):
    return sorted((r.recording_id, r.position, bytes(r.payload)) for r in df.collect())


def test_golden_java_archive(spark, golden_archive):
    df = spark.read.format("aeron-archive").option("path", str(golden_archive)).load()
    assert df.columns == ["recording_id", "position", "stream_id", "session_id", "term_id", "term_offset", "flags",
                          "reserved_value", "timestamp", "payload"]
    rows = df.orderBy("recording_id", "position").collect()
    assert [bytes(r.payload) for r in rows[:5]] == [f"Hello World! {i}".encode() for i in range(5)]
    assert len(rows) == 6
    assert len(rows[5].payload) == 5000 and rows[5].stream_id == 1002 and rows[5].flags == 0xC0
    assert all(r.timestamp is None for r in rows)


def make_archive(tmp_path):
    d = tmp_path / "archive"
    a = RecordingWriter(d, term_length=64 * 1024, segment_length=128 * 1024, stream_id=1001)
    for i in range(600):
        a.append(bytes([i % 251]) * (3000 if i % 7 == 0 else 200) + struct.pack("<i", i))
    a.stop()
    b = RecordingWriter(d, stream_id=1002)
    for i in range(30):
        b.append(b"b%d" % i)
    b.stop()
    return d, a, b


@pytest.mark.parametrize("per_partition", ["65536", "300000"])
def test_every_message_once_across_partitions(spark, tmp_path, per_partition):
    d, a, b = make_archive(tmp_path)
    df = (spark.read.format("aeron-archive").option("path", str(d))
          .option("maxBytesPerPartition", per_partition).option("maxRowsPerBatch", "100").load())
    want = sorted((w.recording_id, p, m) for w in (a, b) for p, m in w.messages)
    assert rows_of(df) == want
    terms = -(-a.position // 65536)
    per = max(1, int(per_partition) // 65536)
    assert df.rdd.getNumPartitions() == -(-terms // per) + 1


def test_pushdown_prunes_partitions(spark, tmp_path):
    d, a, b = make_archive(tmp_path)
    base = (spark.read.format("aeron-archive").option("path", str(d)).option("maxBytesPerPartition", "65536")
            .option("pushFilters", "true").load())
    whole = base.rdd.getNumPartitions()
    only_b = base.filter("stream_id = 1002")
    assert only_b.rdd.getNumPartitions() == 1
    assert rows_of(only_b) == sorted((b.recording_id, p, m) for p, m in b.messages)
    lo = a.messages[300][0]
    tail = base.filter(f"recording_id = {a.recording_id} and position >= {lo}")
    assert tail.rdd.getNumPartitions() < whole - 1
    assert rows_of(tail) == [(a.recording_id, p, m) for p, m in a.messages if p >= lo]
    # the same predicates as options, for Spark without pushFilters
    opt = (spark.read.format("aeron-archive").option("path", str(d)).option("maxBytesPerPartition", "65536")
           .option("recordingId", str(a.recording_id)).option("fromPosition", str(lo)).load())
    assert opt.rdd.getNumPartitions() == tail.rdd.getNumPartitions()
    assert rows_of(opt) == rows_of(tail)


def test_corrupt_segment_fails_the_query_or_is_skipped(spark, tmp_path):
    d, a, _ = make_archive(tmp_path)
    pos = a.messages[10][0]
    with open(d / f"{a.recording_id}-0.rec", "r+b") as f:
        f.seek(pos + 20)
        f.write(struct.pack("<i", 424242))                 # wrong term id
    df = spark.read.format("aeron-archive").option("path", str(d)).option("recordingId", str(a.recording_id))
    with pytest.raises(Exception, match=f"CorruptSegmentError.*{a.recording_id}-0.rec @ offset {pos}"):
        df.load().count()
    got = rows_of(df.option("onCorrupt", "skip").load())
    assert got == [(a.recording_id, p, m) for p, m in a.messages if p < pos or p >= 65536]


def test_streaming_restart_from_checkpoint(spark, tmp_path):
    d = tmp_path / "archive"
    live = RecordingWriter(d, stream_id=1001)               # never stopped: followed while it records
    for i in range(100):
        live.append(b"a%d" % i + bytes(300))
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"

    def run():
        q = (spark.readStream.format("aeron-archive").option("path", str(d)).option("maxBytesPerTrigger", "20000")
             .option("maxBytesPerPartition", "65536").load()
             .writeStream.format("parquet").option("path", str(out)).option("checkpointLocation", str(ckpt))
             .trigger(availableNow=True).start())
        q.awaitTermination(120)
        assert q.exception() is None
        return q

    q = run()
    assert len(q.recentProgress) >= 2                       # maxBytesPerTrigger split the backlog
    first = live.append(b"half" + bytes(5000))              # its later fragments are not written yet
    path = d / f"{live.recording_id}-0.rec"
    data = bytearray(path.read_bytes())
    saved = bytes(data[first + 1408:live.position])
    data[first + 1408:live.position] = bytes(len(saved))
    path.write_bytes(data)
    run()
    data = bytearray(path.read_bytes())
    data[first + 1408:first + 1408 + len(saved)] = saved   # the message completes
    path.write_bytes(data)
    for i in range(200):
        live.append(b"c%d" % i + bytes(400))                # term rotation while stopped
    other = RecordingWriter(d, stream_id=1002)              # a new recording appears
    for i in range(20):
        other.append(b"n%d" % i)
    run()
    got = sorted((r.recording_id, r.position, bytes(r.payload)) for r in spark.read.parquet(str(out)).collect())
    want = sorted((w.recording_id, p, m) for w in (live, other) for p, m in w.messages)
    assert got == want


@pytest.fixture
def driver(shm_dir):
    from aeron import MediaDriver
    from tests import support

    ctx = support.driver_context(aeron_dir=str(shm_dir / "driver"), ipc_term_buffer_length=64 * 1024)
    with MediaDriver.launch_embedded(ctx) as d:
        yield d


def collect(driver, stream_id, expect):
    """A subscription polled by a thread until ``expect`` messages arrived (bounded)."""
    import threading
    import time

    from aeron import Aeron, Context, FragmentAssembler

    got, ready, done = [], threading.Event(), threading.Event()

    def run():
        with Aeron.connect(Context(driver.aeron_dir)) as client:
            sub = client.add_subscription("aeron:ipc", stream_id)
            assembler = FragmentAssembler(lambda b, o, n, h: got.append(b.get_bytes(o, n)))
            ready.set()
            deadline = time.monotonic() + 120
            while len(got) < expect and time.monotonic() < deadline:
                if sub.poll(assembler, 100) == 0:
                    time.sleep(0.001)
        done.set()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    assert ready.wait(30)
    return got, done, t


def test_sink_publishes_each_payload(spark, driver, tmp_path):
    d, a, _ = make_archive(tmp_path)
    got, done, t = collect(driver, 77, len(a.messages))
    df = (spark.read.format("aeron-archive").option("path", str(d)).option("recordingId", str(a.recording_id))
          .option("maxBytesPerPartition", "65536").load().coalesce(1).sortWithinPartitions("position"))
    df.write.format("aeron").option("channel", "aeron:ipc").option("streamId", "77") \
        .option("aeronDir", driver.aeron_dir).option("timeoutMs", "30000").mode("append").save()
    assert done.wait(120)
    t.join(10)
    assert got == [m for _, m in a.messages]                # one message per row, in order, 3000-byte ones too


def test_sink_streaming_json_rows(spark, driver, tmp_path):
    import json

    d, _, b = make_archive(tmp_path)
    got, done, t = collect(driver, 78, len(b.messages))
    q = (spark.readStream.format("aeron-archive").option("path", str(d)).option("streamId", "1002").load()
         .selectExpr("position", "cast(payload as string) as text")
         .writeStream.format("aeron").option("channel", "aeron:ipc").option("streamId", "78")
         .option("encoding", "json").option("aeronDir", driver.aeron_dir)
         .option("checkpointLocation", str(tmp_path / "ckpt")).trigger(availableNow=True).start())
    q.awaitTermination(120)
    assert q.exception() is None
    assert done.wait(120)
    t.join(10)
    assert sorted((r["position"], r["text"]) for r in map(json.loads, got)) == \
        [(p, m.decode()) for p, m in b.messages]


def test_sink_without_a_driver_times_out(spark, tmp_path):
    df = spark.createDataFrame([(b"x",)], "payload binary")
    with pytest.raises(Exception, match="DriverTimeoutError|AeronTimeoutError|no driver|cnc"):
        df.write.format("aeron").option("channel", "aeron:ipc").option("streamId", "1") \
            .option("aeronDir", str(tmp_path / "nothing")).option("timeoutMs", "500").mode("append").save()


def test_decoders_add_typed_columns(spark, tmp_path):
    import json

    import pyarrow.compute as pc

    import aeron.spark

    d = tmp_path / "archive"
    w = RecordingWriter(d)
    for i in range(50):
        w.append(json.dumps({"sym": f"S{i % 3}", "px": 10.0 + i, "qty": i}).encode())
    w.stop()
    s = RecordingWriter(d, stream_id=5)
    for i in range(20):
        s.append(struct.pack("<qd", i, i * 0.25))
    s.stop()
    base = spark.read.format("aeron-archive").option("path", str(d))
    text = base.option("recordingId", str(w.recording_id)).option("decoder", "utf-8").load()
    assert text.schema["value"].dataType.simpleString() == "string"
    assert sorted(r.value for r in text.select("value").collect()) == sorted(m.decode() for _, m in w.messages)
    js = (base.option("recordingId", str(w.recording_id)).option("decoder", "json")
          .option("valueSchema", "sym string, px double, qty int").load())
    agg = {r.sym: (r.n, r.q) for r in js.groupBy("sym").agg({"qty": "sum", "*": "count"})
           .withColumnRenamed("sum(qty)", "q").withColumnRenamed("count(1)", "n").collect()}
    assert agg == {f"S{k}": (len(range(k, 50, 3)), sum(range(k, 50, 3))) for k in range(3)}
    st = (base.option("recordingId", str(s.recording_id)).option("decoder", "struct:<qd")
          .option("valueColumns", "id,price").load())
    assert sorted((r.id, r.price) for r in st.collect()) == [(i, i * 0.25) for i in range(20)]
    fmt = aeron.spark.with_decoder(lambda p: pc.binary_length(p), "size int", name="aeron-archive-sizes")
    spark.dataSource.register(fmt)
    sizes = spark.read.format("aeron-archive-sizes").option("path", str(d)).option("streamId", "5").load()
    assert {r.size for r in sizes.collect()} == {16}


def test_sink_round_trip_through_our_archive(spark, shm_dir, tmp_path):
    """Write with the sink on a channel our archive records, stop the recording, read it back with the source."""
    from aeron.archive import client as archive_client
    from aeron.archive.archive import ArchivingMediaDriver
    from aeron.archive.archive import Context as ArchiveContext
    from aeron.archive.catalog import Catalog
    from tests import support

    archive_dir = shm_dir / "archive"
    actx = ArchiveContext(environ={}, archive_dir=str(archive_dir), control_channel_enabled=False,
                          threading_mode="SHARED", segment_file_length=64 * 1024, idle_strategy="backoff")
    dctx = support.driver_context(aeron_dir=str(shm_dir / "driver"), ipc_term_buffer_length=64 * 1024)
    channel = "aeron:ipc?term-length=64k"
    messages = [b"row-%d-" % i + bytes(i * 37 % 4000) for i in range(300)]
    with ArchivingMediaDriver.launch(dctx, actx) as amd:
        ctx = archive_client.Context(environ={}, aeron_dir=amd.driver.aeron_dir,
                                     control_request_channel="aeron:ipc?term-length=64k", control_request_stream_id=10,
                                     control_response_channel="aeron:ipc?term-length=64k",
                                     control_response_stream_id=20)
        with archive_client.AeronArchive.connect(ctx) as archive:
            archive.start_recording(channel, 4321, archive_client.SourceLocation.LOCAL)
            df = spark.createDataFrame([(m,) for m in messages], "payload binary").coalesce(1)
            df.write.format("aeron").option("channel", channel).option("streamId", "4321") \
                .option("aeronDir", amd.driver.aeron_dir).mode("append").save()

            def recorded():
                with Catalog(archive_dir, read_only=True) as c:
                    return [d for d in c if d.stream_id == 4321 and d.stop_position > 0]
            support.wait_for(recorded, 60, what="the recording stopped")    # the sink's publication closed
            archive.try_stop_recording(channel, 4321)
    back = spark.read.format("aeron-archive").option("path", str(archive_dir)).option("streamId", "4321").load()
    assert [bytes(r.payload) for r in back.orderBy("position").collect()] == messages


def test_sink_records_and_the_archive_replays_the_same_dataframe(spark, running_archive):
    """The sink on embedded drivers (no aeronDir) publishes over UDP to our archive, which records each task's
    publication; the recordings read back through the archive (controlChannel, embedded drivers again) give the
    same DataFrame as the files, every message once."""
    from aeron.archive.catalog import Catalog

    messages = [b"trade-%d-" % i + bytes([i % 251]) * (i * 53 % 4500) for i in range(400)]
    channel = f"aeron:udp?endpoint=127.0.0.1:{support.free_port()}|term-length=64k"
    df = spark.createDataFrame([(m,) for m in messages], "payload binary")
    assert df.rdd.getNumPartitions() == 2
    df.write.format("aeron").option("channel", channel).option("streamId", "4321").option("record", "true") \
        .option("controlChannel", running_archive.control_channel).mode("append").save()
    with Catalog(running_archive.archive_dir, read_only=True) as c:
        ids = sorted(d.recording_id for d in c if d.stream_id == 4321)
    assert len(ids) == 2                                     # one recording per task
    files = (spark.read.format("aeron-archive").option("path", running_archive.archive_dir)
             .option("maxBytesPerPartition", "65536").load())
    replayed = (spark.read.format("aeron-archive").option("controlChannel", running_archive.control_channel)
                .option("maxBytesPerPartition", "65536").load())
    assert replayed.rdd.getNumPartitions() == files.rdd.getNumPartitions() > 4
    want = sorted(files.collect())
    assert sorted(replayed.collect()) == want
    assert sorted(bytes(r.payload) for r in want) == sorted(messages)
    for rid in ids:
        mine = [bytes(r.payload) for r in sorted(want, key=lambda r: r.position) if r.recording_id == rid]
        first = messages.index(mine[0])
        assert mine == messages[first:first + len(mine)]     # each task's rows in order
    with pytest.raises(Exception, match="ArchiveTimeoutError"):
        (spark.read.format("aeron-archive").option("timeoutMs", "500")
         .option("controlChannel", f"aeron:udp?endpoint=127.0.0.1:{support.free_port()}").load().count())


def test_streaming_through_the_archive_resumes_from_its_checkpoint(spark, running_archive, tmp_path):
    """controlChannel in streaming: maxBytesPerTrigger cuts recordings anywhere, a restarted query picks up a new
    recording, and every message is read once (the same rows as the files)."""
    first = [b"s%d-" % i + bytes(i * 97 % 3000) for i in range(150)]
    running_archive.record(first, stream_id=2001)
    out, ckpt = str(tmp_path / "out"), str(tmp_path / "ckpt")

    def run():
        q = (spark.readStream.format("aeron-archive").option("controlChannel", running_archive.control_channel)
             .option("streamId", "2001").option("maxBytesPerTrigger", "60000").option("maxBytesPerPartition", "65536")
             .load().writeStream.format("parquet").option("path", out).option("checkpointLocation", ckpt)
             .trigger(availableNow=True).start())
        q.awaitTermination(180)
        assert q.exception() is None
        return q

    assert len(run().recentProgress) >= 2                   # maxBytesPerTrigger split the backlog
    second = [b"t%d-" % i + bytes(i * 31 % 2000) for i in range(100)]
    running_archive.record(second, stream_id=2001)
    run()
    got = sorted((r.recording_id, r.position, bytes(r.payload)) for r in spark.read.parquet(out).collect())
    files = spark.read.format("aeron-archive").option("path", running_archive.archive_dir).option("streamId", "2001")
    assert got == rows_of(files.load())
    assert sorted(m for _, _, m in got) == sorted(first + second)
