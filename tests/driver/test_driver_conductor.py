# SPDX-License-Identifier: Apache-2.0
"""Our driver, embedded, driven with raw commands in its to-driver ring; responses, counters and files
checked against the reference tables and the golden cnc.dat / log buffer of the C driver."""
from __future__ import annotations

import gzip
import os
import re
import struct
import threading
import time

import pytest

from aeron.common import command as cmd
from aeron._core import counters as ctr
from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.buffer_claim import BufferClaim
from aeron._core.cnc import CncFile
from aeron._core.counters import CountersReader, format_counter_line
from aeron._core.error_log import read_error_log
from aeron._core.logbuffer import LogBuffers
from aeron._core.term_appender import ConcurrentTermAppender
from aeron.driver import Context, MediaDriver
from aeron.driver.driver_conductor import DRIVER_COMMIT, DRIVER_VERSION
from aeron.common.errors import ErrorCode
from tests.driver.rawclient import RawClient
from tests.support import free_port, wait_for

MIB = 1024 * 1024
GOLDEN_SIZES = dict(counters_buffer_length=MIB, ipc_term_buffer_length=65536, term_buffer_length=65536)


def make_context(aeron_dir, **overrides):
    values = dict(aeron_dir=str(aeron_dir), threading_mode="SHARED", **GOLDEN_SIZES)
    values.update(overrides)
    return Context(environ={}, **values)


@pytest.fixture
def driver(shm_dir):
    d = MediaDriver.launch(make_context(shm_dir / "driver"))
    try:
        yield d
    finally:
        d.close()


@pytest.fixture
def fast_driver(shm_dir):
    """Short timers: 20 ms timer, 300 ms client liveness, 600 ms unblock, 200 ms linger."""
    d = MediaDriver.launch(make_context(
        shm_dir / "driver", timer_interval_ns=20_000_000, client_liveness_timeout_ns=300_000_000,
        publication_unblock_timeout_ns=600_000_000, publication_linger_timeout_ns=200_000_000,
        counters_free_to_reuse_timeout_ns=0))
    try:
        yield d
    finally:
        d.close()


@pytest.fixture
def client(driver):
    c = RawClient(driver.aeron_dir)
    try:
        yield c
    finally:
        c.close()


# -- command helpers (aeron.common.command encoders) ---------------------------------------------------------

def add_publication(c, stream_id=1001, channel="aeron:ipc", exclusive=False, client_id=None):
    corr = c.next_id()
    type_id = cmd.ADD_EXCLUSIVE_PUBLICATION if exclusive else cmd.ADD_PUBLICATION
    c.send(type_id, cmd.PublicationCommand(client_id if client_id is not None else c.client_id, corr, stream_id,
                                           channel, msg_type_id=type_id).encode())
    return corr


def add_subscription(c, stream_id=1001, channel="aeron:ipc", client_id=None):
    corr = c.next_id()
    c.send(cmd.ADD_SUBSCRIPTION, cmd.SubscriptionCommand(
        client_id if client_id is not None else c.client_id, corr, -1, stream_id, channel).encode())
    return corr


def remove(c, type_id, registration_id):
    corr = c.next_id()
    if type_id == cmd.REMOVE_PUBLICATION:
        payload = cmd.RemovePublicationCommand(c.client_id, corr, registration_id).encode()
    else:
        payload = cmd.RemoveCommand(c.client_id, corr, registration_id, msg_type_id=type_id).encode()
    c.send(type_id, payload)
    return corr


def correlated(c, type_id, correlation_id=-1):
    if type_id == cmd.CLIENT_CLOSE:
        c.heartbeat = False
    c.send(type_id, cmd.CorrelatedCommand(c.client_id, correlation_id, msg_type_id=type_id).encode())


def golden_cnc(golden_dir):
    data = bytearray(gzip.decompress((golden_dir / "cnc/c-aeronmd-ipc/cnc.dat.gz").read_bytes()))
    return CncFile.from_buffer(AtomicBuffer(data))


def mask_versions(label):
    return re.sub(r"version=\S+ commit=\S+", "version=V commit=C", label)


# -- cnc.dat and directory -------------------------------------------------------------------------------------

def test_cnc_header_sections_and_system_counters_match_golden(driver, client, golden_dir):
    ours, golden = client.cnc, golden_cnc(golden_dir)
    for field in ("version", "to_driver_buffer_length", "to_clients_buffer_length", "counters_metadata_buffer_length",
                  "counters_values_buffer_length", "error_log_buffer_length", "client_liveness_timeout_ns",
                  "file_page_size", "file_length", "to_driver_buffer_offset", "to_clients_buffer_offset",
                  "counters_metadata_buffer_offset", "counters_values_buffer_offset", "error_log_buffer_offset"):
        assert getattr(ours, field) == getattr(golden, field), field
    assert ours.pid == os.getpid()
    assert abs(ours.start_timestamp_ms - time.time() * 1000) < 60_000
    # the driver took correlation id 0 at start: the first client id is 1
    assert client.client_id == 1
    assert 0 <= time.time() * 1000 - client.ring.consumer_heartbeat_time < 5_000

    golden_reader = CountersReader(golden.counters_metadata_buffer(), golden.counters_values_buffer())
    theirs = {r.counter_id: r for r in golden_reader.counters()}
    for record in client.counters.counters()[:46]:
        expected = theirs[record.counter_id]
        assert record.type_id == expected.type_id == 0
        assert record.key == expected.key
        assert (record.registration_id, record.owner_id, record.reference_id) == (record.counter_id, -1, 0)
        assert mask_versions(record.label) == mask_versions(expected.label)
    assert client.counters.get_counter_value(ctr.CONTROL_PROTOCOL_VERSION) == 65536
    assert client.counters.get_counter_label(ctr.ERRORS) == f"Errors: version={DRIVER_VERSION} commit={DRIVER_COMMIT}"
    assert client.counters.get_counter_state(46) == ctr.RECORD_UNUSED

    aeron_dir = driver.aeron_dir
    # Aeron's files, and while the driver runs our wake-up board beside them (docs/wakeup.md; gone at rest)
    assert sorted(os.listdir(aeron_dir)) == ["cnc.dat", "images", "loss-report.dat", "publications", "wakeup.dat"]
    assert os.path.getsize(os.path.join(aeron_dir, "loss-report.dat")) == MIB
    mapped = client.counters.get_counter_value(ctr.BYTES_CURRENTLY_MAPPED)
    assert mapped == ours.file_length + MIB


def test_golden_sequence_gives_the_golden_broadcast_records_and_counters(driver, golden_dir):
    """The run behind the golden cnc.dat: subscriber client 1 subscribes (corr 2), publisher client 3 adds
    the publication (corr 4) and sends five 14-byte messages that the subscriber consumes."""
    sub_client = RawClient(driver.aeron_dir)
    pub_client = None
    try:
        sub_corr = add_subscription(sub_client)
        pub_client = RawClient(driver.aeron_dir)
        pub_corr = add_publication(pub_client)
        assert (sub_client.client_id, sub_corr, pub_client.client_id, pub_corr) == (1, 2, 3, 4)
        _, ready = pub_client.await_correlated(pub_corr)
        _, image = sub_client.await_response(lambda t, m: t == cmd.ON_AVAILABLE_IMAGE)
        records = broadcast_records(sub_client.cnc)
        assert [(off, typ) for off, _, typ in records] == [
            (0, 0x0F08), (24, 0x0F07), (48, 0x0F08), (72, 0x0F03), (72 + align8(36 + len(ready.log_file_name) + 8),
                                                                     0x0F02)]
        assert [length for _, length, _ in records][:3] == [20, 20, 20]
        assert records[3][1] == 8 + 36 + len(ready.log_file_name)
        assert ready.log_file_name == os.path.join(driver.aeron_dir, "publications", f"{pub_corr}.logbuffer")
        assert (ready.registration_id, ready.stream_id, ready.position_limit_counter_id,
                ready.channel_status_indicator_id) == (pub_corr, 1001, 48, -1)
        assert (image.correlation_id, image.session_id, image.stream_id, image.subscription_registration_id,
                image.subscriber_position_id, image.log_file_name, image.source_identity) == (
            pub_corr, ready.session_id, 1001, sub_corr, 50, ready.log_file_name, "aeron:ipc")

        # publish five messages and consume them as the C clients did
        log = LogBuffers.map_existing(ready.log_file_name)
        values = pub_client.cnc.counters_values_buffer()      # cached section, closed with the client
        try:
            pub = ConcurrentTermAppender(log, values, ready.position_limit_counter_id * 128)
            for i in range(5):
                assert pub.offer(f"Hello World! {i}".encode()) > 0
            values.put_i64_ordered(50 * 128, 320)        # the subscriber's position after reading them
            wait_for(lambda: sub_client.counters.get_counter_value(47) == 320)
            pub.close()
        finally:
            log.close()

        golden = golden_cnc(golden_dir)
        # cnc + loss report + one 64 KiB-term log: the golden "Bytes currently mapped" exactly
        assert sub_client.counters.get_counter_value(ctr.BYTES_CURRENTLY_MAPPED) == 12_787_712
        golden_lines = (golden_dir / "cnc/c-aeronmd-ipc/aeronstat-c.txt").read_text().splitlines()[2:]
        session = str(ready.session_id)
        for counter_id, golden_line in zip(range(46, 51), golden_lines[46:51]):
            record = sub_client.counters.counters()[counter_id]
            line = format_counter_line(record.counter_id, record.value, record.label, 4)
            golden_line = golden_line.replace("-1382497356", session)
            if record.type_id == ctr.DRIVER_HEARTBEAT_TYPE_ID:
                # clients append " name=... version=... commit=..." and keep writing the time: compare the rest
                assert golden_line.split(" - ")[1].startswith(record.label + " name=")
            else:
                assert line == golden_line
            golden_reader = CountersReader(golden.counters_metadata_buffer(), golden.counters_values_buffer())
            expected = golden_reader.counters()[counter_id]
            assert (record.type_id, record.registration_id, record.owner_id, record.reference_id) == (
                expected.type_id, expected.registration_id, expected.owner_id, expected.reference_id)
            if record.type_id != ctr.DRIVER_HEARTBEAT_TYPE_ID:
                assert record.key[:20] == expected.key[:8] + struct.pack("<i", ready.session_id) + expected.key[12:20]
                assert record.key[20:29] == b"aeron:ipc"

        # the log metadata as the C driver writes it (golden log copied at the same moment)
        golden_meta = LogBuffers(AtomicBuffer(bytearray(gzip.decompress(
            (golden_dir / "logbuffers/ipc-c-aeronmd/4.logbuffer.gz").read_bytes())))).metadata()
        with LogBuffers.map_existing(ready.log_file_name) as ours:
            meta = ours.metadata()
        for key in golden_meta:
            if key in ("initial_term_id", "default_frame_header", "term_tail_counters"):
                continue
            assert meta[key] == golden_meta[key], key
        assert meta["is_connected"] == 1
    finally:
        sub_client.close()
        if pub_client is not None:
            pub_client.close()


def broadcast_records(cnc):
    buf = cnc.to_clients_buffer()            # the cnc's cached section, owned by the RawClient
    capacity = cnc.to_clients_buffer_length - 128
    tail = buf.get_i64(capacity + 8)
    out, offset = [], 0
    while offset < tail:
        length, type_id = buf.get_i32(offset), buf.get_i32(offset + 4)
        out.append((offset, length, type_id))
        offset += align8(length)
    return out


def align8(value):
    return (value + 7) & ~7


# -- responses ---------------------------------------------------------------------------------------------------

def test_publication_without_subscriber_is_not_connected_then_limit_follows_subscriber(driver, client):
    corr = add_publication(client)
    _, ready = client.await_correlated(corr)
    reader = client.counters
    assert reader.get_counter_label(ready.position_limit_counter_id).startswith(f"pub-lmt: {corr} ")
    time.sleep(0.05)
    assert reader.get_counter_value(ready.position_limit_counter_id) == 0
    with LogBuffers.map_existing(ready.log_file_name) as log:
        assert not log.is_connected
        sub_corr = add_subscription(client)
        client.await_correlated(sub_corr)
        _, image = client.await_response(lambda t, m: t == cmd.ON_AVAILABLE_IMAGE)
        wait_for(lambda: reader.get_counter_value(ready.position_limit_counter_id) == 32768)
        assert log.is_connected
        assert reader.get_counter_label(image.subscriber_position_id) == \
            f"sub-pos: {sub_corr} {ready.session_id} 1001 aeron:ipc @0"
        assert reader.get_counter_reference_id(image.subscriber_position_id) == corr
        rm = remove(client, cmd.REMOVE_SUBSCRIPTION, sub_corr)
        assert client.await_correlated(rm)[0] == cmd.ON_OPERATION_SUCCESS
        wait_for(lambda: not log.is_connected)
        wait_for(lambda: reader.get_counter_value(ready.position_limit_counter_id) == 0)
        assert reader.get_counter_state(image.subscriber_position_id) == ctr.RECORD_RECLAIMED


def test_concurrent_publications_are_shared_exclusive_ones_are_not(driver, client):
    first = add_publication(client, stream_id=7)
    _, a = client.await_correlated(first)
    second = add_publication(client, stream_id=7)
    t2, b = client.await_correlated(second)
    assert t2 == cmd.ON_PUBLICATION_READY
    assert (b.registration_id, b.session_id, b.position_limit_counter_id, b.log_file_name) == (
        first, a.session_id, a.position_limit_counter_id, a.log_file_name)
    third = add_publication(client, stream_id=7, exclusive=True)
    t3, c = client.await_correlated(third)
    assert t3 == cmd.ON_EXCLUSIVE_PUBLICATION_READY
    assert c.registration_id == third and c.session_id != a.session_id
    assert client.counters.get_counter_label(c.position_limit_counter_id - 1).startswith("pub-pos (exclusive): ")
    with LogBuffers.map_existing(c.log_file_name) as log:
        assert log.metadata()["type"] == 1
    conflict = add_publication(client, stream_id=7, channel="aeron:ipc?term-length=128k")
    t4, err = client.await_correlated(conflict)
    # the C driver answers a mismatch with the existing log as EINVAL: GENERIC_ERROR, naming the parameter
    assert t4 == cmd.ON_ERROR and err.error_code == ErrorCode.GENERIC_ERROR
    assert "existing publication has different 'term-length'" in err.error_message


@pytest.mark.parametrize("channel, code, text", [
    ("aeron:bogus", ErrorCode.INVALID_CHANNEL, "invalid channel"),
    ("aeron:ipc?term-length=1000", ErrorCode.INVALID_CHANNEL, "term length"),
    ("aeron:udp?endpoint=localhost:99999", ErrorCode.INVALID_CHANNEL, "port out of range"),
    ("aeron:udp?interface=127.0.0.1", ErrorCode.INVALID_CHANNEL, "needs an endpoint"),
    ("aeron-spy:aeron:udp?endpoint=localhost:40123", ErrorCode.INVALID_CHANNEL, "subscriptions only"),
])
def test_bad_or_unsupported_publication_channel(client, channel, code, text):
    corr = add_publication(client, channel=channel)
    type_id, err = client.await_correlated(corr)
    assert type_id == cmd.ON_ERROR
    assert err.error_code == code
    assert err.error_message.startswith(f"({-int(code)}) ")
    assert text in err.error_message
    records = read_error_log(client.error_log_buffer)
    assert any(text in r.text for r in records)
    assert client.counters.get_counter_value(ctr.ERRORS) >= 1


def test_bad_udp_subscription_channels_are_refused_naming_the_part(client):
    for channel, text in (("aeron:udp?endpoint=localhost:99999", "port out of range"),
                          ("aeron:udp?endpoint=127.0.0.1:40999|cc=vegas", "unknown congestion control"),
                          ("aeron:udp?endpoint=224.0.1.2:40999", "multicast data address must be odd")):
        corr = add_subscription(client, channel=channel)
        type_id, err = client.await_correlated(corr)
        assert (type_id, err.error_code) == (cmd.ON_ERROR, ErrorCode.INVALID_CHANNEL), err
        assert text in err.error_message


def test_unknown_resources_answer_their_error_codes(client):
    for type_id, code in ((cmd.REMOVE_PUBLICATION, ErrorCode.UNKNOWN_PUBLICATION),
                          (cmd.REMOVE_SUBSCRIPTION, ErrorCode.UNKNOWN_SUBSCRIPTION),
                          (cmd.REMOVE_COUNTER, ErrorCode.UNKNOWN_COUNTER)):
        corr = remove(client, type_id, 99999)
        response_type, err = client.await_correlated(corr)
        assert (response_type, err.error_code) == (cmd.ON_ERROR, code)


def test_malformed_and_unknown_commands_get_no_response_but_an_error_log_entry(driver, client):
    client.send(cmd.ADD_PUBLICATION, struct.pack("<qq", client.client_id, client.next_id()))   # 16 < 24 bytes
    client.send(cmd.ADD_SUBSCRIPTION, struct.pack("<qqqii", client.client_id, client.next_id(), -1, 1, 500) + b"x")
    client.send(0x99, struct.pack("<qq", client.client_id, client.next_id()))
    assert client.drain(0.3) == []
    records = read_error_log(client.error_log_buffer)
    texts = [r.text for r in records]
    assert sum(t.startswith("(-7) malformed command") for t in texts) >= 1
    assert any(t.startswith("(-6) unknown command type id") and "command=153 unknown" in t for t in texts)
    assert client.counters.get_counter_value(ctr.ERRORS) == 3
    # still alive
    corr = add_publication(client)
    assert client.await_correlated(corr)[0] == cmd.ON_PUBLICATION_READY


@pytest.mark.parametrize("bad_length", [3, -5 + 2**31, 4096 + 8, 200], ids=["short", "huge", "past-the-block",
                                                                         "past-the-tail"])
def test_a_malformed_ring_record_is_skipped_counted_and_logged_once(driver, client, bad_length):
    # a client claims room for a 64-byte command and commits a bad length: before, the driver raised on it every
    # duty cycle, never moved past it and served no command again while it went on heartbeating
    ring = client.ring
    corr = add_publication(client, stream_id=7)
    client.await_correlated(corr)
    errors_before = client.counters.get_counter_value(ctr.ERRORS)
    index = ring.try_claim(0x77, 64)
    assert index > 0
    buffer = ring.buffer
    record = index - 8
    buffer.put_i64(index, 0x1122334455667788)
    if bad_length == 4096 + 8:
        bad_length = ring.capacity - record + 8            # runs past the end of the ring's block
    buffer.put_i32_ordered(record, bad_length)             # "committed" with a bad length instead of 72
    corr = add_publication(client, stream_id=8)            # written after the bad record
    type_id, ready = client.await_correlated(corr)
    assert type_id == cmd.ON_PUBLICATION_READY and ready.stream_id == 8
    wait_for(lambda: client.counters.get_counter_value(ctr.ERRORS) == errors_before + 1)
    texts = [r.text for r in read_error_log(client.error_log_buffer) if "ring buffer record" in r.text]
    assert len(texts) == 1 and f"malformed length {bad_length}" in texts[0], texts
    assert "skipped 72 bytes" in texts[0]
    for stream_id in (9, 10):                              # and every command after it
        corr = add_subscription(client, stream_id=stream_id)
        assert client.await_correlated(corr)[0] == cmd.ON_SUBSCRIPTION_READY
    assert client.counters.get_counter_value(ctr.ERRORS) == errors_before + 1
    assert ring.consumer_position() == ring.producer_position()


def test_counters_static_counters_and_session_ids(client):
    corr = client.next_id()
    client.send(cmd.ADD_COUNTER, cmd.CounterCommand(client.client_id, corr, 1001, b"\x01" * 8,
                                                    "my-counter: test").encode())
    _, ready = client.await_correlated(corr)
    counter_id = ready.counter_id
    reader = client.counters
    assert (reader.get_counter_type_id(counter_id), reader.get_counter_label(counter_id),
            reader.get_counter_registration_id(counter_id), reader.get_counter_owner_id(counter_id)) == (
        1001, "my-counter: test", corr, client.client_id)
    assert reader.get_counter_key(counter_id)[:8] == b"\x01" * 8

    static_corr = client.next_id()
    client.send(cmd.ADD_STATIC_COUNTER, cmd.StaticCounterCommand(client.client_id, static_corr, 424242, 1002, b"",
                                                                 "static").encode())
    t, static = client.await_correlated(static_corr)
    assert t == cmd.ON_STATIC_COUNTER
    again = client.next_id()
    client.send(cmd.ADD_STATIC_COUNTER, cmd.StaticCounterCommand(client.client_id, again, 424242, 1002, b"",
                                                                 "static").encode())
    assert client.await_correlated(again)[1].counter_id == static.counter_id
    assert reader.get_counter_owner_id(static.counter_id) == -1

    rm = remove(client, cmd.REMOVE_COUNTER, corr)
    assert client.await_correlated(rm)[0] == cmd.ON_OPERATION_SUCCESS
    t, gone = client.await_response(lambda t, m: t == cmd.ON_UNAVAILABLE_COUNTER)
    assert (gone.correlation_id, gone.counter_id) == (corr, counter_id)
    assert reader.get_counter_state(counter_id) == ctr.RECORD_RECLAIMED

    ids = []
    for _ in range(2):
        session_corr = client.next_id()
        client.send(cmd.GET_NEXT_AVAILABLE_SESSION_ID, cmd.NextAvailableSessionIdCommand(
            client.client_id, session_corr, 77).encode())
        ids.append(client.await_correlated(session_corr)[1].next_session_id)
    assert ids[1] == ids[0] + 1 or ids[1] > 1000


def test_keepalive_moves_the_heartbeat_counter(driver, client):
    corr = add_subscription(client)
    client.await_correlated(corr)
    _, hb = client.await_response(lambda t, m: t == cmd.ON_COUNTER_READY and m.correlation_id == client.client_id)
    client.heartbeat = False                # only the driver moves it from here on
    reader = client.counters
    assert reader.get_counter_type_id(hb.counter_id) == ctr.DRIVER_HEARTBEAT_TYPE_ID
    assert reader.get_counter_label(hb.counter_id) == f"client-heartbeat: id={client.client_id}"
    assert reader.get_counter_key(hb.counter_id)[:8] == struct.pack("<q", client.client_id)
    before = reader.get_counter_value(hb.counter_id)
    time.sleep(0.02)
    correlated(client, cmd.CLIENT_KEEPALIVE, 0)
    wait_for(lambda: reader.get_counter_value(hb.counter_id) > before)


# -- liveness, linger, unblocking ---------------------------------------------------------------------------------

def test_client_timeout_releases_everything(fast_driver):
    observer = RawClient(fast_driver.aeron_dir)
    dead = RawClient(fast_driver.aeron_dir)
    # the observer's heartbeat stays fresh from the start, also while the other client sets up (300 ms liveness: under
    # load its set-up took longer once, and the observer timed out too)
    stop = threading.Event()

    def keep_observer_alive():
        while not stop.wait(0.01):
            observer.keepalive()

    keeper = threading.Thread(target=keep_observer_alive, daemon=True)
    try:
        sub = add_subscription(observer, stream_id=5)
        observer.await_correlated(sub)
        keeper.start()
        pub = add_publication(dead, stream_id=5)
        _, ready = dead.await_correlated(pub)
        counter_corr = dead.next_id()
        dead.send(cmd.ADD_COUNTER, cmd.CounterCommand(dead.client_id, counter_corr, 1001, b"", "doomed").encode())
        _, counter = dead.await_correlated(counter_corr)
        # the other client never refreshes its heartbeat from here on
        deadline = time.monotonic() + 5
        seen = []
        while time.monotonic() < deadline and not any(t == cmd.ON_UNAVAILABLE_IMAGE for t, _ in seen):
            observer.poll()
            seen.extend(observer.received)
            observer.received.clear()
            time.sleep(0.01)
        kinds = [(t, getattr(m, "correlation_id", None)) for t, m in seen]
        assert (cmd.ON_CLIENT_TIMEOUT, dead.client_id) in kinds or any(
            t == cmd.ON_CLIENT_TIMEOUT and m.client_id == dead.client_id for t, m in seen)
        assert (cmd.ON_UNAVAILABLE_COUNTER, dead.client_id) in kinds
        assert (cmd.ON_UNAVAILABLE_COUNTER, counter_corr) in kinds
        assert any(t == cmd.ON_UNAVAILABLE_IMAGE and m.correlation_id == pub for t, m in seen)
        reader = observer.counters
        assert reader.get_counter_value(ctr.CLIENT_TIMEOUTS) == 1
        assert reader.get_counter_state(counter.counter_id) == ctr.RECORD_RECLAIMED
        # the publication lingers 200 ms, then its log file goes
        # (the conductor removes the file and frees the counters in one step: the test may look in between)
        wait_for(lambda: not os.path.exists(ready.log_file_name)
                 and reader.get_counter_state(ready.position_limit_counter_id) == ctr.RECORD_RECLAIMED,
                 timeout_s=5, what="log file removed and publisher limit counter reclaimed")
    finally:
        stop.set()
        if keeper.is_alive():
            keeper.join(1)
        observer.close()
        dead.close()


def test_client_close_releases_without_timeout_event(fast_driver):
    c = RawClient(fast_driver.aeron_dir)
    try:
        corr = add_publication(c)
        _, ready = c.await_correlated(corr)
        correlated(c, cmd.CLIENT_CLOSE, -1)
        _, gone = c.await_response(lambda t, m: t == cmd.ON_UNAVAILABLE_COUNTER and m.correlation_id == c.client_id)
        assert not any(t == cmd.ON_CLIENT_TIMEOUT for t, _ in c.drain(0.1))
        assert c.counters.get_counter_value(ctr.CLIENT_TIMEOUTS) == 0
        wait_for(lambda: not os.path.exists(ready.log_file_name))
    finally:
        c.close()


def test_publisher_dead_mid_claim_is_unblocked(fast_driver):
    c = RawClient(fast_driver.aeron_dir)
    values = c.cnc.counters_values_buffer()
    pubs = []
    try:
        sub = add_subscription(c, stream_id=9)
        c.await_correlated(sub)
        corr = add_publication(c, stream_id=9)
        _, ready = c.await_correlated(corr)
        _, image = c.await_response(lambda t, m: t == cmd.ON_AVAILABLE_IMAGE)
        wait_for(lambda: c.counters.get_counter_value(ready.position_limit_counter_id) > 0)
        hb = c.counters.find_by_type_id_and_registration_id(ctr.DRIVER_HEARTBEAT_TYPE_ID, c.client_id)
        with LogBuffers.map_existing(ready.log_file_name) as log:
            pub = ConcurrentTermAppender(log, values, ready.position_limit_counter_id * 128)
            pubs.append(pub)
            claim = BufferClaim()
            assert pub.try_claim(100, claim) > 0    # the "dead" publisher: claimed, never committed
            claim = None                            # abandoned: stays uncommitted, only our pin goes
            assert pub.offer(b"after the hole") > 0
            term = log.term_buffer(0)
            try:
                assert term.get_i32_volatile(0) < 0
                deadline = time.monotonic() + 5
                while term.get_i32_volatile(0) < 0:
                    values.put_i64_ordered(hb * 128, int(time.time() * 1000))
                    assert time.monotonic() < deadline, "not unblocked"
                    time.sleep(0.02)
                assert (term.get_i32(0), term.get_bytes(4, 4)) == (132, b"\x00\xc0\x00\x00")   # PAD over the claimed 32 + 100 bytes
                assert c.counters.get_counter_value(ctr.UNBLOCKED_PUBLICATIONS) == 1
            finally:
                term.close()
                pub.close()
    finally:
        for pub in pubs:
            pub.close()
        c.close()


# -- lifecycle ----------------------------------------------------------------------------------------------------

def test_terminate_driver_needs_an_allowing_validator(shm_dir):
    for validator, expected in (("deny", False), ("allow", True)):
        d = MediaDriver.launch(make_context(shm_dir / validator, driver_termination_validator=validator))
        try:
            c = RawClient(d.aeron_dir)
            try:
                c.send(cmd.TERMINATE_DRIVER, cmd.TerminateDriverCommand(c.client_id, -1, b"").encode())
                assert d.wait_for_termination(0.5) is expected
            finally:
                c.close()
        finally:
            d.close()


def test_limit_advances_with_the_slowest_subscriber_and_terms_are_cleaned_behind_it(driver, client):
    sub_a, sub_b = add_subscription(client, stream_id=3), add_subscription(client, stream_id=3)
    corr = add_publication(client, stream_id=3)
    _, ready = client.await_correlated(corr)
    positions = []
    for _ in range(2):
        _, image = client.await_response(lambda t, m: t == cmd.ON_AVAILABLE_IMAGE)
        positions.append(image.subscriber_position_id * 128)
    values = client.cnc.counters_values_buffer()
    limit_id = ready.position_limit_counter_id
    wait_for(lambda: client.counters.get_counter_value(limit_id) == 32768)
    message = bytes(range(256)) * 3 + bytes(224)         # 992 bytes: 1024-byte frames, 64 per term
    term_length = 65536
    target = 3 * term_length + 8192
    with LogBuffers.map_existing(ready.log_file_name) as log:
        pub = ConcurrentTermAppender(log, values, limit_id * 128)
        try:
            position = 0
            deadline = time.monotonic() + 10
            while position < target:
                assert time.monotonic() < deadline
                result = pub.offer(message)
                if result > 0:
                    position = result
                    continue
                # back pressured: the slow subscriber (b) holds the limit until it catches up too
                values.put_i64_ordered(positions[0], position)
                time.sleep(0.002)
                assert client.counters.get_counter_value(limit_id) <= values.get_i64_volatile(positions[1]) + 32768
                values.put_i64_ordered(positions[1], position)
                wait_for(lambda: client.counters.get_counter_value(limit_id) > position or
                         client.counters.get_counter_value(limit_id) >= position + 32768 - 4096)
            for p in positions:
                values.put_i64_ordered(p, position)
            wait_for(lambda: client.counters.get_counter_value(limit_id - 1) == position)
            time.sleep(0.05)
            terms = [log.term_buffer(i) for i in range(3)]
            try:
                # term 1 lies wholly more than one term behind the subscribers: cleaned
                assert terms[1].get_bytes(0, term_length) == bytes(term_length)
                # term 2 is cleaned only up to one term behind them: later frames are still there
                cleaned_to = position - term_length - 2 * term_length
                assert terms[2].get_bytes(0, cleaned_to - 4096) == bytes(cleaned_to - 4096)
                assert terms[2].get_i32(16384) == 1024
                # term 3 lives in partition 0 now
                assert terms[0].get_i32(0) == 1024
            finally:
                for term in terms:
                    term.close()
        finally:
            pub.close()


def test_publication_started_at_a_position_and_with_a_window(driver, client):
    channel = "aeron:ipc?init-term-id=100|term-id=102|term-offset=1024|pub-wnd=8k|eos=false|linger=0"
    corr = add_publication(client, stream_id=11, channel=channel, exclusive=True)
    _, ready = client.await_correlated(corr)
    start = 2 * 65536 + 1024
    with LogBuffers.map_existing(ready.log_file_name) as log:
        meta = log.metadata()
        assert (meta["initial_term_id"], meta["active_term_count"], meta["publication_window_length"],
                meta["signal_eos"], meta["linger_timeout_ns"], meta["type"]) == (100, 2, 8192, 0, 0, 1)
        assert log.raw_tails()[2] == (102 << 32) | 1024
    assert client.counters.get_counter_value(ready.position_limit_counter_id - 1) == start
    sub = add_subscription(client, stream_id=11)
    client.await_correlated(sub)
    _, image = client.await_response(lambda t, m: t == cmd.ON_AVAILABLE_IMAGE)
    assert client.counters.get_counter_label(image.subscriber_position_id).endswith(f" @{start}")
    assert client.counters.get_counter_value(image.subscriber_position_id) == start
    wait_for(lambda: client.counters.get_counter_value(ready.position_limit_counter_id) == start + 8192)
    for bad in ("aeron:ipc?init-term-id=1|term-id=2", "aeron:ipc?init-term-id=1|term-id=2|term-offset=3",
                "aeron:ipc?eos=maybe", "aeron:ipc?mtu=1000"):
        bad_corr = add_publication(client, stream_id=12, channel=bad)
        t, err = client.await_correlated(bad_corr)
        assert (t, err.error_code) == (cmd.ON_ERROR, ErrorCode.INVALID_CHANNEL), bad


def test_revoked_publication_ends_at_once(driver, client):
    sub = add_subscription(client, stream_id=13)
    client.await_correlated(sub)
    corr = add_publication(client, stream_id=13, exclusive=True)
    _, ready = client.await_correlated(corr)
    client.await_response(lambda t, m: t == cmd.ON_AVAILABLE_IMAGE)
    rm = client.next_id()
    client.send(cmd.REMOVE_PUBLICATION, cmd.RemovePublicationCommand(
        client.client_id, rm, corr, cmd.REMOVE_PUBLICATION_FLAG_REVOKE).encode())
    assert client.await_correlated(rm)[0] == cmd.ON_OPERATION_SUCCESS
    _, gone = client.await_response(lambda t, m: t == cmd.ON_UNAVAILABLE_IMAGE)
    assert (gone.correlation_id, gone.subscription_registration_id, gone.stream_id, gone.channel) == (
        corr, sub, 13, "aeron:ipc")
    with LogBuffers.map_existing(ready.log_file_name) as log:
        assert log.is_publication_revoked and log.end_of_stream_position == 0
    assert client.counters.get_counter_value(ctr.PUBLICATIONS_REVOKED) == 1


def test_a_revoked_network_publication_revokes_its_images(driver, client):
    """Over UDP the revoke travels in the end-of-stream heartbeat: the receiving image is revoked and counted
    (Publication Images Revoked), as the publication is (Publications Revoked)."""
    channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
    sub = add_subscription(client, stream_id=14, channel=channel)
    client.await_correlated(sub)
    corr = add_publication(client, stream_id=14, channel=channel, exclusive=True)
    client.await_correlated(corr)
    _, image = client.await_response(lambda t, m: t == cmd.ON_AVAILABLE_IMAGE, timeout_s=10)
    rm = client.next_id()
    client.send(cmd.REMOVE_PUBLICATION, cmd.RemovePublicationCommand(
        client.client_id, rm, corr, cmd.REMOVE_PUBLICATION_FLAG_REVOKE).encode())
    assert client.await_correlated(rm)[0] == cmd.ON_OPERATION_SUCCESS
    _, gone = client.await_response(lambda t, m: t == cmd.ON_UNAVAILABLE_IMAGE and
                                    m.correlation_id == image.correlation_id, timeout_s=10)
    assert gone.subscription_registration_id == sub
    assert client.counters.get_counter_value(ctr.PUBLICATIONS_REVOKED) == 1
    assert client.counters.get_counter_value(ctr.PUBLICATION_IMAGES_REVOKED) == 1


def test_shared_publication_lives_until_its_last_user_removes_it_then_lingers(fast_driver):
    c = RawClient(fast_driver.aeron_dir)
    try:
        sub = add_subscription(c, stream_id=21)
        c.await_correlated(sub)
        first, second = add_publication(c, stream_id=21), add_publication(c, stream_id=21)
        _, ready = c.await_correlated(first)
        assert c.await_correlated(second)[1].registration_id == first
        c.await_response(lambda t, m: t == cmd.ON_AVAILABLE_IMAGE)
        # each link is removed by the correlation id its ADD got, as in the C driver
        for _, link in enumerate((second, first)):
            rm = remove(c, cmd.REMOVE_PUBLICATION, link)
            assert c.await_correlated(rm)[0] == cmd.ON_OPERATION_SUCCESS
            if _ == 0:
                time.sleep(0.1)             # several timer ticks: still one user, nothing happens
                assert not any(t == cmd.ON_UNAVAILABLE_IMAGE for t, _m in c.drain(0.05))
        _, gone = c.await_response(lambda t, m: t == cmd.ON_UNAVAILABLE_IMAGE)
        assert gone.correlation_id == first
        assert os.path.exists(ready.log_file_name)          # lingering (200 ms)
        wait_for(lambda: not os.path.exists(ready.log_file_name))
        again = remove(c, cmd.REMOVE_PUBLICATION, first)
        assert c.await_correlated(again)[1].error_code == ErrorCode.UNKNOWN_PUBLICATION
    finally:
        c.close()


def test_client_dead_between_claim_and_commit_does_not_block_the_ring(fast_driver):
    c = RawClient(fast_driver.aeron_dir)
    try:
        c.ring.try_claim(cmd.ADD_PUBLICATION, 64)      # never committed: the driver cannot read past it
        corr = add_publication(c, stream_id=31)
        time.sleep(0.1)
        assert c.drain(0.05) == []
        type_id, _ = c.await_correlated(corr, timeout_s=5)  # after the client liveness timeout (300 ms)
        assert type_id == cmd.ON_PUBLICATION_READY
        assert c.counters.get_counter_value(ctr.UNBLOCKED_COMMANDS) == 1
    finally:
        c.close()


def test_untethered_subscriber_that_falls_behind_rests_then_rejoins(fast_driver):
    c = RawClient(fast_driver.aeron_dir)
    try:
        tethered = add_subscription(c, stream_id=41)
        untethered = add_subscription(c, stream_id=41, channel=(
            "aeron:ipc?tether=false|untethered-window-limit-timeout=100ms|untethered-linger-timeout=100ms"
            "|untethered-resting-timeout=300ms"))
        corr = add_publication(c, stream_id=41)
        _, ready = c.await_correlated(corr)
        images = {}
        for _ in range(2):
            _, image = c.await_response(lambda t, m: t == cmd.ON_AVAILABLE_IMAGE)
            images[image.subscription_registration_id] = image.subscriber_position_id
        values = c.cnc.counters_values_buffer()
        limit_id = ready.position_limit_counter_id
        wait_for(lambda: c.counters.get_counter_value(limit_id) == 32768)
        with LogBuffers.map_existing(ready.log_file_name) as log:
            pub = ConcurrentTermAppender(log, values, limit_id * 128)
            try:
                position = 0
                while (result := pub.offer(bytes(992))) > 0:
                    position = result
                assert position == 32768
                values.put_i64_ordered(images[tethered] * 128, position)     # only the tethered one keeps up
                _, gone = c.await_response(lambda t, m: t == cmd.ON_UNAVAILABLE_IMAGE)
                assert (gone.correlation_id, gone.subscription_registration_id) == (corr, untethered)
                # once it rests it no longer holds the publisher back
                wait_for(lambda: c.counters.get_counter_value(limit_id) == position + 32768)
                assert pub.offer(bytes(992)) > position
                _, back = c.await_response(lambda t, m: t == cmd.ON_AVAILABLE_IMAGE)
                assert (back.subscription_registration_id, back.subscriber_position_id) == (untethered, images[untethered])
                assert c.counters.get_counter_value(images[untethered]) == position
            finally:
                pub.close()
    finally:
        c.close()


@pytest.mark.parametrize("channel, part", [
    ("aeron:udp?endpoint=224.0.1.3:40903|interface=127.0.0.1|fc=fastest", "fc=fastest"),     # no such strategy
    ("aeron:udp?endpoint=127.0.0.1:40901|ats=true", "ats=true"),        # transport security: a closed extension
])
def test_unsupported_udp_publication_parameters_are_refused_by_name(client, channel, part):
    corr = add_publication(client, channel=channel)
    type_id, err = client.await_correlated(corr)
    assert (type_id, err.error_code) == (cmd.ON_ERROR, ErrorCode.INVALID_CHANNEL)
    assert part in err.error_message



@pytest.mark.parametrize("value", ["-5", "x", "99999999999999999999"])
def test_an_invalid_response_correlation_id_is_refused_as_the_c_driver_does(client, value):
    """A client that does not check it (ours does) still gets the C driver's answer."""
    corr = add_publication(client, channel=f"aeron:udp?endpoint=127.0.0.1:40901|response-correlation-id={value}")
    type_id, err = client.await_correlated(corr)
    assert (type_id, err.error_code) == (cmd.ON_ERROR, ErrorCode.GENERIC_ERROR)
    assert "invalid response-correlation-id" in err.error_message

def test_failures_differing_only_in_their_values_are_one_distinct_error_with_each_observation(driver, client):
    """Issue 15 defect 8: one distinct error log entry per failure, not per port or id in its text."""
    for i in range(100):
        corr = remove(client, cmd.REMOVE_PUBLICATION, 500_000 + i * 7919)
        assert client.await_correlated(corr)[1].error_code == ErrorCode.UNKNOWN_PUBLICATION
    for i in range(100):
        client.send(0x400 + i, struct.pack("<qq", client.client_id, client.next_id()))
    assert client.drain(0.3) == []
    records = read_error_log(client.error_log_buffer)
    unknown_publication = [r for r in records if r.text.startswith("(-3) ")]
    unknown_command = [r for r in records if r.text.startswith("(-6) unknown command type id")]
    assert [r.observation_count for r in unknown_publication] == [100]
    assert [r.observation_count for r in unknown_command] == [100]
    assert "500000" in unknown_publication[0].text          # the first observation's values are kept
    assert client.counters.get_counter_value(ctr.ERRORS) == 200
