# SPDX-License-Identifier: Apache-2.0
"""The client against our embedded driver: connect, registration (sync and async), offers and polls, claims,
images coming and going, counters, use after close, reentrancy, invoker mode, bad input."""
from __future__ import annotations

import os
import threading
import time

import pytest

from aeron import Aeron, Context, MediaDriver
from aeron._core.cnc import CncFile
from aeron.client import FragmentAssembler
from aeron.driver import Context as DriverContext
from aeron.errors import (
    CncVersionError, DriverTimeoutError, IllegalStateError, InvalidArgumentError, InvalidChannelError,
    RegistrationError, ErrorCode)

pytestmark = pytest.mark.timeout(60)


def wait_for(predicate, timeout_s=5.0, invoke=None):
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        if invoke is not None:
            invoke()
        time.sleep(0.001)


@pytest.fixture
def driver():
    ctx = DriverContext(threading_mode="SHARED", ipc_term_buffer_length=65536, timer_interval_ns=50_000_000,
                        publication_linger_timeout_ns=100_000_000, client_liveness_timeout_ns=2_000_000_000,
                        environ={})
    with MediaDriver.launch_embedded(ctx) as d:
        yield d


@pytest.fixture
def errors():
    return []


@pytest.fixture
def client(driver, errors):
    with Aeron.connect(Context(driver.aeron_dir, error_handler=errors.append,
                               resource_linger_duration_ns=100_000_000)) as c:
        yield c


def connected_pair(client, stream_id=1001, channel="aeron:ipc"):
    sub = client.add_subscription(channel, stream_id)
    pub = client.add_publication(channel, stream_id)
    wait_for(lambda: pub.is_connected and sub.image_count == 1)
    return pub, sub


def drain(sub, limit=100):
    got = []
    sub.poll(lambda b, o, l, h: got.append(b.get_bytes(o, l)), limit)
    return got


# -- connect ---------------------------------------------------------------------------------------------------

def test_connect_without_a_driver_times_out(shm_dir):
    start = time.monotonic()
    with pytest.raises(DriverTimeoutError, match="CnC file not created"):
        Aeron.connect(Context(str(shm_dir / "none"), driver_timeout_ms=300))
    assert time.monotonic() - start < 3


def test_connect_refuses_an_incompatible_cnc_version(shm_dir):
    cnc = CncFile.create(shm_dir / "cnc.dat", to_driver_buffer_length=1024 + 768,
                         to_clients_buffer_length=1024 + 128, counters_metadata_buffer_length=4096,
                         counters_values_buffer_length=1024, error_log_buffer_length=1024,
                         client_liveness_timeout_ns=10**10, start_timestamp_ms=0, pid=os.getpid(),
                         signal_ready=False)
    cnc.signal_cnc_ready((1 << 16) | 2)                 # major 1
    cnc.close()
    with pytest.raises(CncVersionError):
        Aeron.connect(Context(str(shm_dir), driver_timeout_ms=500))


def test_a_context_serves_one_client(driver):
    ctx = Context(driver.aeron_dir)
    with Aeron.connect(ctx):
        with pytest.raises(IllegalStateError):
            Aeron.connect(ctx)


def test_close_is_idempotent_and_everything_after_raises(driver):
    client = Aeron.connect(Context(driver.aeron_dir))
    pub, sub = connected_pair(client)
    counter = client.add_counter(1001, "c")
    client.close()
    client.close()
    assert client.is_closed and pub.is_closed and sub.is_closed and counter.is_closed
    assert pub.offer(b"x") == pub.CLOSED
    with pytest.raises(IllegalStateError):
        sub.poll(print, 1)
    with pytest.raises(IllegalStateError):
        counter.increment()
    with pytest.raises(IllegalStateError):
        client.add_publication("aeron:ipc", 1)


# -- registration ------------------------------------------------------------------------------------------------

def test_async_add_then_get(client):
    registration_id = client.async_add_publication("aeron:ipc", 7)
    publication = None
    deadline = time.monotonic() + 5
    while publication is None:
        publication = client.get_publication(registration_id)
        assert time.monotonic() < deadline
    assert publication.registration_id == registration_id and publication.stream_id == 7
    sub_id = client.async_add_subscription("aeron:ipc", 7)
    subscription = None
    while subscription is None:
        subscription = client.get_subscription(sub_id)
    assert subscription.registration_id == sub_id
    with pytest.raises(InvalidArgumentError):
        client.get_subscription(sub_id)             # handed out once


def test_driver_errors_arrive_as_registration_errors(client):
    with pytest.raises(RegistrationError) as info:
        client.add_publication("aeron:ipc?term-length=1000", 1)
    assert info.value.error_code == ErrorCode.INVALID_CHANNEL
    registration_id = client.async_add_publication("aeron:udp?endpoint=localhost:99999", 1)
    deadline = time.monotonic() + 5
    with pytest.raises(RegistrationError, match="port out of range"):
        while client.get_publication(registration_id) is None:
            assert time.monotonic() < deadline


@pytest.mark.parametrize("channel, part", [("aeron:ipc?term-length", "term-length"),
                                           ("aeron:tcp?endpoint=x:1", "tcp"), ("ipc", "ipc")])
def test_invalid_channels_name_the_bad_part(client, channel, part):
    with pytest.raises(InvalidChannelError) as info:
        client.add_subscription(channel, 1)
    assert part in str(info.value)


@pytest.mark.parametrize("stream_id", [1 << 31, -(1 << 31) - 1, "1", 1.0, True])
def test_bad_stream_ids_are_refused(client, stream_id):
    with pytest.raises(InvalidArgumentError):
        client.add_publication("aeron:ipc", stream_id)


def test_shared_publications_share_the_log_and_close_separately(client):
    sub = client.add_subscription("aeron:ipc", 9)
    first = client.add_publication("aeron:ipc", 9)
    second = client.add_publication("aeron:ipc", 9)
    assert first.registration_id != second.registration_id
    assert second.original_registration_id == first.registration_id
    assert first.session_id == second.session_id and first.log_file_name == second.log_file_name
    wait_for(lambda: first.is_connected)
    first.close()
    assert first.offer(b"a") == first.CLOSED
    assert second.offer(b"b") > 0
    wait_for(lambda: drain(sub) == [b"b"])


def test_counters_and_static_counters(client):
    counter = client.add_counter(1001, "my counter", b"12345678")
    counter.increment()
    counter.get_and_add(41)
    reader = client.counters_reader
    assert reader.get_counter_value(counter.counter_id) == 42
    assert reader.get_counter_label(counter.counter_id) == "my counter" == counter.label
    assert reader.get_counter_type_id(counter.counter_id) == 1001
    assert reader.get_counter_key(counter.counter_id)[:8] == b"12345678"
    counter.close()
    counter.close()
    static_id = client.add_static_counter(1002, "static", 424242)
    assert client.add_static_counter(1002, "static", 424242) == static_id
    assert client.next_session_id(77) != client.next_session_id(77)


# -- data ----------------------------------------------------------------------------------------------------------

def test_offer_any_buffer_and_poll_in_order(client):
    numpy = pytest.importorskip("numpy")
    pub, sub = connected_pair(client)
    payloads = [b"bytes", bytearray(b"bytearray"), memoryview(b"xxmemoryviewxx")[2:-2],
                numpy.arange(4, dtype=numpy.int32)]
    for payload in payloads:
        assert pub.offer(payload) > 0
    assert pub.offerv([b"vec", b"tor"]) > 0
    got = drain(sub)
    assert got == [b"bytes", b"bytearray", b"memoryview", numpy.arange(4, dtype=numpy.int32).tobytes(), b"vector"]
    assert pub.position == sub.images[0].position == 5 * 64


def test_try_claim_both_forms(client):
    pub, sub = connected_pair(client)
    with pub.try_claim(5) as claim:
        claim.buffer[:] = b"hello"
    own = pub.try_claim(3)
    assert own and own.position > 0
    own.buffer[:] = b"abc"
    own.commit()
    from aeron.client import BufferClaim
    mine = BufferClaim()
    position = pub.try_claim(2, mine)
    assert isinstance(position, int) and position > 0
    mine.buffer[:] = b"ok"
    mine.abort()
    assert drain(sub) == [b"hello", b"abc"]          # the aborted claim became padding


def test_back_pressure_and_not_connected_are_plain_ints(client):
    pub = client.add_publication("aeron:ipc", 11)
    assert pub.offer(b"x") == pub.NOT_CONNECTED == -1
    failed = pub.try_claim(8)
    assert not failed and failed.position == pub.NOT_CONNECTED
    with pytest.raises(IllegalStateError):
        with failed:
            pass
    sub = client.add_subscription("aeron:ipc", 11)
    wait_for(lambda: pub.is_connected)
    # a 64 KiB term: the window is 32 KiB; a subscriber that does not poll holds the publisher back
    results = [pub.offer(bytes(1000)) for _ in range(40)]
    assert pub.BACK_PRESSURED in results and all(isinstance(r, int) for r in results)
    assert pub.position_limit == 32768
    sub.close()


def test_fragmented_messages_are_reassembled(client):
    pub, sub = connected_pair(client)
    message = bytes(range(256)) * 20                # 5120 bytes: four frames of an MTU of 1408
    assert len(message) > pub.max_payload_length
    assert pub.offer(message) > 0
    got = []
    assembler = FragmentAssembler(lambda b, o, l, h: got.append(b.get_bytes(o, l)))
    wait_for(lambda: sub.poll(assembler, 10) >= 0 and got)
    assert got == [message]


def test_round_robin_over_images(client):
    sub = client.add_subscription("aeron:ipc", 12)
    pubs = [client.add_exclusive_publication("aeron:ipc", 12) for _ in range(3)]
    wait_for(lambda: sub.image_count == 3)
    for i, pub in enumerate(pubs):
        for j in range(3):
            assert pub.offer(f"{i}{j}".encode()) > 0
    assert len(drain(sub, 9)) == 9
    sessions = {image.session_id for image in sub.images}
    assert sessions == {pub.session_id for pub in pubs}


# -- images coming and going --------------------------------------------------------------------------------------

def test_image_handlers_and_retired_images(driver, errors):
    seen = []
    ctx = Context(driver.aeron_dir, error_handler=errors.append, resource_linger_duration_ns=100_000_000,
                  available_image_handler=lambda image: seen.append(("up", image.session_id)),
                  unavailable_image_handler=lambda image: seen.append(("down", image.session_id)))
    with Aeron.connect(ctx) as client:
        sub = client.add_subscription("aeron:ipc", 13)
        pub = client.add_publication("aeron:ipc", 13)
        wait_for(lambda: seen == [("up", pub.session_id)])
        image = sub.images[0]
        assert pub.offer(b"last") > 0
        assert drain(sub) == [b"last"]
        pub.close()
        wait_for(lambda: ("down", pub.session_id) in seen, timeout_s=5)
        assert sub.image_count == 0 and image.is_closed
        assert image.poll(print, 10) == 0               # a retired image delivers nothing
        with pytest.raises(IllegalStateError):
            image.close()
    assert errors == []


def test_reentrant_calls_from_a_handler_raise(driver, errors):
    outcome = []

    def on_image(image):
        try:
            client.add_publication("aeron:ipc", 99)
        except IllegalStateError as exc:
            outcome.append(str(exc))
    ctx = Context(driver.aeron_dir, error_handler=errors.append, available_image_handler=on_image)
    with Aeron.connect(ctx) as client:
        client.add_subscription("aeron:ipc", 14)
        client.add_publication("aeron:ipc", 14)
        wait_for(lambda: outcome)
    assert outcome == ["reentrant calls not permitted during callbacks"]


def test_invoker_mode_runs_on_the_callers_thread(driver):
    ctx = Context(driver.aeron_dir, use_conductor_agent_invoker=True)
    with Aeron.connect(ctx) as client:
        invoker = client.conductor_agent_invoker
        assert invoker is not None
        assert not [t for t in threading.enumerate() if t.name == "aeron-client-conductor"]
        sub = client.add_subscription("aeron:ipc", 15)
        pub = client.add_publication("aeron:ipc", 15)
        wait_for(lambda: sub.image_count == 1 and pub.is_connected, invoke=invoker.invoke)
        assert pub.offer(b"invoked") > 0
        assert drain(sub) == [b"invoked"]
