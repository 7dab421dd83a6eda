# SPDX-License-Identifier: Apache-2.0
"""Aeron (the client object) against our embedded driver: connect and close, contexts, registration of every
resource kind, sync and async, shared publications, counters and static counters, session ids, use after close,
reentrancy from handlers and the invoker mode."""
from __future__ import annotations

import os
import threading
import time

import pytest

from aeron import Aeron, Context, Counter, ExclusivePublication, MediaDriver, Publication, Subscription, __version__
from aeron._core import counters as ctr
from aeron._core.cnc import CncFile
from aeron.common.errors import (
    CncVersionError, DriverTimeoutError, ErrorCode, IllegalStateError, InvalidArgumentError, RegistrationError)
from tests.client.conftest import (TIMER_MS, client_context, connected_pair, drain, driver_context, receive,
                                   wait_for)
from tests.support import wait_for_timer_ticks

pytestmark = pytest.mark.timeout(60)


def counter_ids_of(reader, type_id):
    return [c.counter_id for c in reader.counters() if c.type_id == type_id]


# -- connect and close --------------------------------------------------------------------------------------------

def test_connect_registers_with_the_driver_on_first_command(driver, errors):
    with Aeron.connect(client_context(driver.aeron_dir, errors, client_name="tester")) as client:
        reader = client.counters_reader
        assert not client.is_closed
        assert client.client_id >= 0
        client.add_subscription("aeron:ipc", 1)        # the first command makes the driver know us
        wait_for(lambda: reader.find_by_type_id_and_registration_id(
            ctr.DRIVER_HEARTBEAT_TYPE_ID, client.client_id) >= 0)
        counter_id = reader.find_by_type_id_and_registration_id(ctr.DRIVER_HEARTBEAT_TYPE_ID, client.client_id)
        # the driver's label plus the suffix the client appends, as Aeron's clients do
        wait_for(lambda: "name=tester" in reader.get_counter_label(counter_id))
        assert reader.get_counter_label(counter_id) == (
            f"client-heartbeat: id={client.client_id} name=tester version={__version__} commit=python")
        before = reader.get_counter_value(counter_id)
        wait_for(lambda: reader.get_counter_value(counter_id) > before, timeout_s=2)   # keepalive every 100 ms
        assert abs(reader.get_counter_value(counter_id) - time.time() * 1000) < 1000
    assert client.is_closed
    assert errors == []


def test_close_is_idempotent_calls_the_close_handler_once_and_frees_the_driver_side(driver):
    closed = []
    client = Aeron.connect(client_context(driver.aeron_dir, close_handler=lambda: closed.append(1)))
    pub, sub = connected_pair(client)
    counter = client.add_counter(1001, "c")
    heartbeat = client.counters_reader.find_by_type_id_and_registration_id(
        ctr.DRIVER_HEARTBEAT_TYPE_ID, client.client_id)
    client.close()
    client.close()
    assert closed == [1]
    assert client.is_closed and pub.is_closed and sub.is_closed and counter.is_closed
    with Aeron.connect(client_context(driver.aeron_dir)) as observer:
        reader = observer.counters_reader
        # CLIENT_CLOSE: the driver frees the client's heartbeat, counter and publication without a timeout
        wait_for(lambda: reader.get_counter_state(heartbeat) != ctr.RECORD_ALLOCATED
                 and reader.get_counter_state(counter.counter_id) != ctr.RECORD_ALLOCATED, timeout_s=3)
        # the publication goes after its linger
        wait_for(lambda: counter_ids_of(reader, ctr.DRIVER_PUBLISHER_LIMIT_TYPE_ID) == [], timeout_s=3)
        assert counter_ids_of(reader, ctr.DRIVER_SUBSCRIBER_POSITION_TYPE_ID) == []
        assert reader.get_counter_value(ctr.CLIENT_TIMEOUTS) == 0


def test_a_context_serves_one_client(driver):
    ctx = client_context(driver.aeron_dir)
    with Aeron.connect(ctx) as client:
        with pytest.raises(IllegalStateError, match="Context already used"):
            Aeron.connect(ctx)
        assert not client.is_closed
    with pytest.raises(IllegalStateError):
        Aeron.connect(ctx, driver_timeout_ms=100)       # a context and keywords together


def test_connect_with_keyword_settings(driver):
    with Aeron.connect(aeron_dir=driver.aeron_dir, driver_timeout_ms=1500) as client:
        assert client.context.driver_timeout_ms == 1500
        assert client.context.aeron_dir == driver.aeron_dir


@pytest.mark.parametrize("setting, value", [("driver_timeout_ms", 0), ("driver_timeout_ms", -1),
                                            ("keepalive_interval_ns", 0), ("resource_linger_duration_ns", 1.5)])
def test_bad_context_settings_are_refused(driver, setting, value):
    from aeron.common.errors import ConfigurationError
    with pytest.raises(ConfigurationError, match=setting):
        Aeron.connect(Context(driver.aeron_dir, **{setting: value}))


def test_connect_without_a_driver_times_out_in_time(shm_dir):
    start = time.monotonic()
    with pytest.raises(DriverTimeoutError, match="CnC file not created"):
        Aeron.connect(Context(str(shm_dir / "absent"), driver_timeout_ms=400))
    elapsed = time.monotonic() - start
    assert 0.35 < elapsed < 2.0


def _write_cnc(path, version):
    cnc = CncFile.create(path / "cnc.dat", to_driver_buffer_length=1024 + 768,
                         to_clients_buffer_length=1024 + 128, counters_metadata_buffer_length=4096,
                         counters_values_buffer_length=1024, error_log_buffer_length=1024,
                         client_liveness_timeout_ns=10**10, start_timestamp_ms=0, pid=os.getpid(),
                         signal_ready=False)
    cnc.signal_cnc_ready(version)
    cnc.close()


def test_connect_refuses_an_incompatible_cnc_major_version(shm_dir):
    _write_cnc(shm_dir, (1 << 16) | 2)                  # 1.0.2
    start = time.monotonic()
    with pytest.raises(CncVersionError, match="file=1.0.2"):
        Aeron.connect(Context(str(shm_dir), driver_timeout_ms=1000))
    assert time.monotonic() - start < 0.5               # refused at once, no waiting for the timeout


def test_connect_to_a_driver_that_never_heartbeats_times_out(shm_dir):
    _write_cnc(shm_dir, 2 << 8)                         # 0.2.0: right version, but nobody home
    start = time.monotonic()
    with pytest.raises(DriverTimeoutError, match="no driver heartbeat"):
        Aeron.connect(Context(str(shm_dir), driver_timeout_ms=300))
    assert time.monotonic() - start < 2.0


# -- publications and subscriptions -----------------------------------------------------------------------------

def test_add_and_remove_publication_subscription_and_exclusive(client):
    reader = client.counters_reader
    sub = client.add_subscription("aeron:ipc", 10)
    pub = client.add_publication("aeron:ipc", 10)
    xpub = client.add_exclusive_publication("aeron:ipc", 10)
    assert type(sub) is Subscription and type(pub) is Publication and type(xpub) is ExclusivePublication
    assert (sub.stream_id, pub.stream_id, xpub.stream_id) == (10, 10, 10)
    assert sub.channel == pub.channel == xpub.channel == "aeron:ipc"
    assert pub.session_id != xpub.session_id
    assert pub.original_registration_id == pub.registration_id
    assert xpub.original_registration_id == xpub.registration_id
    wait_for(lambda: sub.image_count == 2)
    assert {i.session_id for i in sub.images} == {pub.session_id, xpub.session_id}
    pub_limit = reader.get_counter_label(pub.position_limit_id)
    assert pub_limit == f"pub-lmt: {pub.registration_id} {pub.session_id} 10 aeron:ipc"
    assert reader.get_counter_type_id(xpub.position_limit_id) == ctr.DRIVER_PUBLISHER_LIMIT_TYPE_ID
    xpub.close()
    xpub.close()
    assert xpub.is_closed and not pub.is_closed
    wait_for(lambda: sub.image_count == 1, what="exclusive image gone")
    assert sub.images[0].session_id == pub.session_id
    pub.close()
    wait_for(lambda: sub.image_count == 0, what="image gone")
    sub.close()
    assert sub.is_closed
    wait_for(lambda: counter_ids_of(reader, ctr.DRIVER_PUBLISHER_LIMIT_TYPE_ID) == []
             and counter_ids_of(reader, ctr.DRIVER_SUBSCRIBER_POSITION_TYPE_ID) == [], what="counters freed")


def test_async_add_returns_none_until_the_driver_answers(shm_dir):
    """With the driver an invoker that only runs when told, "before the answer" is deterministic."""
    ctx = driver_context(threading_mode="INVOKER", aeron_dir=str(shm_dir / "d"))
    with MediaDriver.launch_embedded(ctx) as driver:
        driver.do_work()
        with Aeron.connect(client_context(driver.aeron_dir, use_conductor_agent_invoker=True)) as client:
            pub_id = client.async_add_publication("aeron:ipc", 3)
            xpub_id = client.async_add_exclusive_publication("aeron:ipc", 3)
            sub_id = client.async_add_subscription("aeron:ipc", 3)
            counter_id = client.async_add_counter(1001, "async counter", b"k")
            bad_id = client.async_add_publication("aeron-spy:aeron:ipc", 3)      # the driver refuses it
            assert len({pub_id, xpub_id, sub_id, counter_id, bad_id}) == 5
            assert client.get_publication(pub_id) is None
            assert client.get_exclusive_publication(xpub_id) is None
            assert client.get_subscription(sub_id) is None
            assert client.get_counter(counter_id) is None
            assert client.get_publication(bad_id) is None
            with pytest.raises(InvalidArgumentError, match="no pending subscription"):
                client.get_subscription(pub_id)         # the wrong getter does not consume the registration
            with pytest.raises(InvalidArgumentError, match="no pending publication"):
                client.get_publication(xpub_id)         # exclusive and concurrent are distinct kinds
            for _ in range(5):
                driver.do_work()
            pub = client.get_publication(pub_id)
            xpub = client.get_exclusive_publication(xpub_id)
            sub = client.get_subscription(sub_id)
            counter = client.get_counter(counter_id)
            assert (type(pub), pub.registration_id, pub.stream_id) == (Publication, pub_id, 3)
            assert (type(xpub), xpub.registration_id) == (ExclusivePublication, xpub_id)
            assert (type(sub), sub.registration_id) == (Subscription, sub_id)
            assert (type(counter), counter.registration_id, counter.label) == (Counter, counter_id, "async counter")
            with pytest.raises(RegistrationError) as info:
                client.get_publication(bad_id)
            assert info.value.error_code == ErrorCode.INVALID_CHANNEL
            assert info.value.correlation_id == bad_id
            assert "subscriptions only" in str(info.value)
            with pytest.raises(InvalidArgumentError, match=str(pub_id)):
                client.get_publication(pub_id)          # handed out once
            with pytest.raises(InvalidArgumentError):
                client.get_subscription(123456789)      # never asked for


def test_async_get_raises_driver_timeout_when_the_driver_never_answers(shm_dir):
    ctx = driver_context(threading_mode="INVOKER", aeron_dir=str(shm_dir / "d"))
    with MediaDriver.launch_embedded(ctx) as driver:
        driver.do_work()
        with Aeron.connect(client_context(driver.aeron_dir, driver_timeout_ms=300,
                                          use_conductor_agent_invoker=True)) as client:
            reg_id = client.async_add_subscription("aeron:ipc", 3)
            start = time.monotonic()
            with pytest.raises(DriverTimeoutError):
                while client.get_subscription(reg_id) is None:
                    time.sleep(0.01)
            assert 0.25 < time.monotonic() - start < 1.5
            # the silent driver's heartbeat is stale by now too: the client is terminated, later calls fail fast
            start = time.monotonic()
            with pytest.raises(DriverTimeoutError):
                client.add_publication("aeron:ipc", 3)
            assert time.monotonic() - start < 0.5


def test_driver_errors_arrive_as_registration_errors(client):
    # channels only the driver judges: a spy publication, a UDP subscription with nowhere to bind
    with pytest.raises(RegistrationError) as info:
        client.add_publication("aeron-spy:aeron:ipc", 1)
    assert info.value.error_code == ErrorCode.INVALID_CHANNEL == 1
    assert "subscriptions only" in str(info.value)
    with pytest.raises(RegistrationError) as info:
        client.add_subscription("aeron:udp?interface=127.0.0.1", 1)
    assert info.value.error_code == ErrorCode.INVALID_CHANNEL
    assert "needs an endpoint" in str(info.value)


# -- shared publications ---------------------------------------------------------------------------------------

def test_shared_publication_two_adds_one_log(client):
    sub = client.add_subscription("aeron:ipc", 9)
    first = client.add_publication("aeron:ipc", 9)
    second = client.add_publication("aeron:ipc", 9)
    assert first.registration_id != second.registration_id
    assert second.original_registration_id == first.registration_id == first.original_registration_id
    assert first.session_id == second.session_id
    assert first.log_file_name == second.log_file_name
    assert first.position_limit_id == second.position_limit_id
    wait_for(lambda: first.is_connected and second.is_connected and sub.image_count == 1)
    assert first.offer(b"one") == 64
    assert second.offer(b"two") == 128
    assert first.position == second.position == 128
    first.close()
    assert first.offer(b"x") == first.CLOSED == -4
    assert not second.is_closed and second.is_connected
    assert second.offer(b"three") == 192             # the shared log stays mapped for the second
    assert receive(sub, 3) == [b"one", b"two", b"three"]
    wait_for_timer_ticks(client.context.aeron_dir, 6, TIMER_MS)     # the log is still alive
    assert second.offer(b"four") == 256
    assert receive(sub, 1) == [b"four"]
    assert sub.image_count == 1
    second.close()
    wait_for(lambda: sub.image_count == 0)


def test_exclusive_publications_are_never_shared(client):
    a = client.add_exclusive_publication("aeron:ipc", 19)
    b = client.add_exclusive_publication("aeron:ipc", 19)
    assert a.session_id != b.session_id and a.log_file_name != b.log_file_name
    assert a.original_registration_id == a.registration_id and b.original_registration_id == b.registration_id


# -- counters --------------------------------------------------------------------------------------------------

def test_counter_lifecycle_values_label_and_key(client):
    counter = client.add_counter(1001, "my counter", b"12345678")
    reader = client.counters_reader
    assert (counter.get(), counter.increment(), counter.get_and_add(41), counter.get()) == (0, 0, 1, 42)
    counter.set(7)
    assert counter.get_volatile() == 7
    counter.set_ordered(9)
    assert counter.increment_ordered() == 9
    assert counter.propose_max_ordered(100) is True and counter.propose_max_ordered(50) is False
    assert reader.get_counter_value(counter.counter_id) == 100
    assert counter.label == reader.get_counter_label(counter.counter_id) == "my counter"
    assert reader.get_counter_type_id(counter.counter_id) == 1001
    assert reader.get_counter_key(counter.counter_id)[:8] == b"12345678"
    assert reader.get_counter_registration_id(counter.counter_id) == counter.registration_id
    assert reader.get_counter_owner_id(counter.counter_id) == client.client_id
    assert reader.get_counter_state(counter.counter_id) == ctr.RECORD_ALLOCATED
    counter.close()
    counter.close()
    assert counter.is_closed
    wait_for(lambda: reader.get_counter_state(counter.counter_id) != ctr.RECORD_ALLOCATED)
    for op in (counter.get, counter.increment, lambda: counter.set(1), lambda: counter.get_and_add(1)):
        with pytest.raises(IllegalStateError):
            op()
    with pytest.raises(IllegalStateError):
        counter.label


def test_counter_handlers_see_our_counters(driver, errors):
    seen = []
    ctx = client_context(driver.aeron_dir, errors,
                         available_counter_handler=lambda r, reg, cid: seen.append(("up", reg, cid)),
                         unavailable_counter_handler=lambda r, reg, cid: seen.append(("down", reg, cid)))
    with Aeron.connect(ctx) as client:
        counter = client.add_counter(1002, "watched")
        wait_for(lambda: ("up", counter.registration_id, counter.counter_id) in seen)
        counter.close()
        wait_for(lambda: ("down", counter.registration_id, counter.counter_id) in seen)
    assert errors == []


@pytest.mark.parametrize("label, key, match", [
    ("x" * (ctr.MAX_LABEL_LENGTH + 1), b"", "label"),
    ("é" * 200, b"", "label"),                                   # 400 bytes in UTF-8
    ("ok", b"k" * (ctr.MAX_KEY_LENGTH + 1), "key"),
])
def test_counter_labels_and_keys_too_long_are_refused(client, label, key, match):
    with pytest.raises(InvalidArgumentError, match=match):
        client.add_counter(1001, label, key)
    with pytest.raises(InvalidArgumentError, match=match):
        client.add_static_counter(1001, label, 5, key)


def test_counter_at_the_length_limits(client):
    counter = client.add_counter(1001, "y" * ctr.MAX_LABEL_LENGTH, b"z" * ctr.MAX_KEY_LENGTH)
    assert counter.label == "y" * ctr.MAX_LABEL_LENGTH
    assert client.counters_reader.get_counter_key(counter.counter_id) == b"z" * ctr.MAX_KEY_LENGTH


@pytest.mark.parametrize("type_id", [1 << 31, "1", None, True])
def test_counter_type_ids_must_be_int32(client, type_id):
    with pytest.raises(InvalidArgumentError):
        client.add_counter(type_id, "bad")


def test_static_counter_outlives_its_client(driver):
    with Aeron.connect(client_context(driver.aeron_dir)) as client:
        counter_id = client.add_static_counter(1003, "static one", 424242, b"key!")
        assert client.add_static_counter(1003, "static one", 424242) == counter_id   # same registration id
        other = client.add_static_counter(1003, "static two", 424243)
        assert other != counter_id
        reader = client.counters_reader
        assert reader.get_counter_label(counter_id) == "static one"
        assert reader.get_counter_registration_id(counter_id) == 424242
        assert reader.get_counter_key(counter_id)[:4] == b"key!"
        first_client = client.client_id
    with Aeron.connect(client_context(driver.aeron_dir)) as later:
        # the driver has released the first client: its heartbeat counter is gone
        wait_for(lambda: not [r for r in later.counters_reader.counters()
                              if r.type_id == ctr.DRIVER_HEARTBEAT_TYPE_ID and r.registration_id == first_client],
                 what="the first client released")
        assert later.counters_reader.get_counter_state(counter_id) == ctr.RECORD_ALLOCATED
        assert later.counters_reader.get_counter_label(counter_id) == "static one"


def test_next_session_id_is_not_reused_for_new_publications(client):
    first = client.next_session_id(77)
    second = client.next_session_id(77)
    assert isinstance(first, int) and first != second
    pub = client.add_publication("aeron:ipc", 77)
    assert pub.session_id not in (first, second)
    with pytest.raises(InvalidArgumentError):
        client.next_session_id(1 << 32)


def test_next_correlation_id_increases(client):
    a = client.next_correlation_id()
    b = client.next_correlation_id()
    assert b == a + 1


# -- use after close -----------------------------------------------------------------------------------------------

def test_everything_after_close_raises_or_reports_closed(driver):
    client = Aeron.connect(client_context(driver.aeron_dir))
    pub, sub = connected_pair(client)
    xpub = client.add_exclusive_publication("aeron:ipc", 1001)
    counter = client.add_counter(1001, "c")
    image = sub.images[0]
    reg_id = client.async_add_subscription("aeron:ipc", 2)
    client.close()
    assert pub.offer(b"x") == xpub.offer(b"x") == Publication.CLOSED
    assert pub.offerv([b"a", b"b"]) == Publication.CLOSED
    assert not pub.try_claim(8) and pub.try_claim(8).position == Publication.CLOSED
    assert not pub.is_connected and pub.is_closed
    assert image.poll(print, 10) == 0 and image.is_closed
    with pytest.raises(IllegalStateError):
        sub.poll(print, 1)
    with pytest.raises(IllegalStateError):
        sub.controlled_poll(print, 1)
    with pytest.raises(IllegalStateError):
        sub.block_poll(print, 1024)
    with pytest.raises(IllegalStateError):
        counter.increment()
    for call in (lambda: client.add_publication("aeron:ipc", 1), lambda: client.add_exclusive_publication("aeron:ipc", 1),
                 lambda: client.add_subscription("aeron:ipc", 1), lambda: client.add_counter(1001, "c"),
                 lambda: client.async_add_publication("aeron:ipc", 1), lambda: client.get_subscription(reg_id),
                 lambda: client.add_static_counter(1001, "s", 1), lambda: client.next_session_id(1),
                 lambda: client.next_correlation_id(), lambda: client.counters_reader):
        with pytest.raises(IllegalStateError, match="closed"):
            call()
    pub.close()
    sub.close()
    counter.close()
    client.close()


# -- reentrancy -------------------------------------------------------------------------------------------------

def test_calls_from_an_image_handler_raise_and_reach_the_error_handler(driver, errors):
    attempts = []

    def on_image(image):
        attempts.append(image.session_id)
        if len(attempts) == 1:
            client.add_publication("aeron:ipc", 99)        # raises: the error handler gets it
        else:
            client.close()

    ctx = client_context(driver.aeron_dir, errors, available_image_handler=on_image)
    with Aeron.connect(ctx) as client:
        client.add_subscription("aeron:ipc", 14)
        client.add_publication("aeron:ipc", 14)
        wait_for(lambda: len(errors) == 1)
        client.add_exclusive_publication("aeron:ipc", 14)
        wait_for(lambda: len(errors) == 2)
        assert not client.is_closed                       # close from the handler was refused
        pub = client.add_publication("aeron:ipc", 15)     # and the client works on
        assert pub.stream_id == 15
    assert len(attempts) == 2
    assert all(type(e) is IllegalStateError for e in errors)
    assert [str(e) for e in errors] == ["reentrant calls not permitted during callbacks"] * 2


def test_closing_resources_from_a_handler_raises_and_leaves_them_open(driver, errors):
    held = {}

    def on_unavailable(image):
        held["pub"].close()

    def on_counter(reader, registration_id, counter_id):
        if "counter" in held and registration_id != held["counter"].registration_id:
            held["counter"].close()         # raises: reported to the error handler

    ctx = client_context(driver.aeron_dir, errors, unavailable_image_handler=on_unavailable,
                         available_counter_handler=on_counter)
    with Aeron.connect(ctx) as client:
        sub = client.add_subscription("aeron:ipc", 16)
        held["pub"] = client.add_publication("aeron:ipc", 16)
        xpub = client.add_exclusive_publication("aeron:ipc", 16)
        wait_for(lambda: sub.image_count == 2)
        held["counter"] = client.add_counter(1001, "kept")
        client.add_counter(1001, "trigger")              # its ready event runs on_counter: close refused
        wait_for(lambda: len(errors) == 1)
        counter = held["counter"]
        assert not counter.is_closed and counter.increment() == 0
        xpub.close()                                      # the unavailable image handler tries pub.close()
        wait_for(lambda: sub.image_count == 1 and len(errors) == 2)
        pub = held["pub"]
        assert not pub.is_closed                          # refused, not half done
        assert pub.offer(b"still") > 0
        assert receive(sub, 1) == [b"still"]
        pub.close()
        wait_for(lambda: sub.image_count == 0)
    assert all(type(e) is IllegalStateError for e in errors)


def test_close_from_another_thread_while_a_handler_runs_is_not_reentrant(driver, errors):
    in_handler = threading.Event()
    release = threading.Event()

    def on_image(image):
        in_handler.set()
        release.wait(5)

    ctx = client_context(driver.aeron_dir, errors, available_image_handler=on_image)
    client = Aeron.connect(ctx)
    other = Aeron.connect(client_context(driver.aeron_dir))
    try:
        client.add_subscription("aeron:ipc", 17)
        other.add_publication("aeron:ipc", 17)     # the image event then reaches client's conductor thread
        assert in_handler.wait(5)
        outcome = []
        closer = threading.Thread(target=lambda: outcome.append(_try(client.close)))
        closer.start()
        time.sleep(0.05)
        release.set()
        closer.join(5)
        assert not closer.is_alive()
        assert outcome == [None]                          # the app thread is not inside a callback
        assert client.is_closed
    finally:
        release.set()
        client.close()
        other.close()
    assert errors == []


def _try(call):
    try:
        call()
    except Exception as exc:        # noqa: BLE001 - returned for the assertion
        return exc
    return None


# -- invoker mode ---------------------------------------------------------------------------------------------

def test_invoker_mode_runs_everything_on_the_callers_thread(driver, errors):
    events = []
    ctx = client_context(driver.aeron_dir, errors, use_conductor_agent_invoker=True,
                         available_image_handler=lambda image: events.append(("up", threading.get_ident())),
                         unavailable_image_handler=lambda image: events.append(("down", threading.get_ident())))
    with Aeron.connect(ctx) as client:
        invoker = client.conductor_agent_invoker
        assert invoker is not None
        assert not [t for t in threading.enumerate() if t.name == "aeron-client-conductor"]
        sub = client.add_subscription("aeron:ipc", 15)
        pub = client.add_publication("aeron:ipc", 15)
        counter = client.add_counter(1001, "invoked counter")
        wait_for(lambda: sub.image_count == 1 and pub.is_connected, invoke=invoker.invoke)
        assert events == [("up", threading.get_ident())]
        assert pub.offer(b"invoked") == 64
        assert drain(sub) == [b"invoked"]
        counter.increment()
        assert client.counters_reader.get_counter_value(counter.counter_id) == 1
        # keepalives only happen when invoked: invoke for a while past the driver's liveness timeout
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            invoker.invoke()
            time.sleep(0.01)
        assert not client.is_closed and pub.offer(b"alive") == 128
        assert drain(sub) == [b"alive"]                   # an IPC image goes once drained
        pub.close()
        wait_for(lambda: sub.image_count == 0, invoke=invoker.invoke)
        assert events[-1] == ("down", threading.get_ident())
    assert errors == []


def test_runner_mode_has_no_invoker(client):
    assert client.conductor_agent_invoker is None
    assert [t for t in threading.enumerate() if t.name == "aeron-client-conductor"]


def test_closing_the_client_while_other_threads_offer_and_poll_never_crashes(driver):
    """A close racing offers (which release the GIL to copy large messages) and polls: those threads end with
    CLOSED and IllegalStateError, the memory they were using is never pulled from under them."""
    big = bytes(100_000)
    for round_ in range(4):
        errors = []
        client = Aeron.connect(client_context(driver.aeron_dir, errors))
        pub, sub = connected_pair(client, stream_id=40 + round_, channel="aeron:ipc?term-length=1m")
        stop = threading.Event()
        outcome = {"offer": None, "poll": None}

        def offerer():
            deadline = time.monotonic() + 5
            while not stop.is_set() and time.monotonic() < deadline:
                if pub.offer(big) == pub.CLOSED:
                    outcome["offer"] = "CLOSED"
                    return

        def poller():
            deadline = time.monotonic() + 5
            try:
                while not stop.is_set() and time.monotonic() < deadline:
                    sub.poll(lambda b, o, l, h: b.get_bytes(o, l), 10)
            except IllegalStateError:
                outcome["poll"] = "closed"

        threads = [threading.Thread(target=offerer), threading.Thread(target=poller)]
        for t in threads:
            t.start()
        time.sleep(0.03 + 0.02 * round_)
        client.close()
        for t in threads:
            t.join(5)
        stop.set()
        assert not any(t.is_alive() for t in threads)
        assert outcome == {"offer": "CLOSED", "poll": "closed"}
        # close waited for an offer still copying without the GIL instead of unmapping under it
        assert errors == []


def test_a_claim_open_across_client_close_keeps_its_memory(driver):
    errors = []
    client = Aeron.connect(client_context(driver.aeron_dir, errors))
    pub, sub = connected_pair(client, stream_id=48)
    claim = pub.try_claim(10)
    assert claim and claim.position == 64
    client.close()
    # the claim pins the log: close reports it and leaves the mappings to go with the last reference
    assert [type(e) for e in errors] == [IllegalStateError]
    assert "1 log buffer(s) still in use at close" in str(errors[0])
    claim.buffer[:] = b"0123456789"
    claim.commit()
    assert not claim
    assert pub.offer(b"x") == pub.CLOSED


@pytest.mark.parametrize("use_invoker", [False, True])
def test_the_error_handler_may_close_the_client_mid_cycle(driver, use_invoker):
    """A handler error reaches the error handler inside the duty cycle (a broadcast being read); closing the
    client there closes it at once and unmaps only once the cycle has unwound."""
    seen, closed = [], []

    def on_error(error):
        seen.append(error)
        client.close()

    def on_image(image):
        raise ValueError("handler failed")

    ctx = client_context(driver.aeron_dir, error_handler=on_error, available_image_handler=on_image,
                         use_conductor_agent_invoker=use_invoker, close_handler=lambda: closed.append(1))
    client = Aeron.connect(ctx)
    other = Aeron.connect(client_context(driver.aeron_dir))
    try:
        sub = client.add_subscription("aeron:ipc", 50)
        other.add_publication("aeron:ipc", 50)      # the image event comes on client's own duty cycle
        invoke = client.conductor_agent_invoker.invoke if use_invoker else None
        wait_for(lambda: client.is_closed, invoke=invoke, what="closed from the error handler")
        assert [(type(e), str(e)) for e in seen] == [(ValueError, "handler failed")]
        assert sub.is_closed and closed == [1]
        with pytest.raises(IllegalStateError, match="closed"):
            client.add_subscription("aeron:ipc", 50)
        with pytest.raises(IllegalStateError, match="Subscription is closed"):
            sub.poll(lambda *a: None, 1)
        if not use_invoker:
            wait_for(lambda: not client._runner.thread.is_alive(), what="conductor thread ended by itself")
    finally:
        client.close()
        other.close()
    assert closed == [1]


def test_the_error_handler_closing_during_a_sync_add_does_not_deadlock(driver):
    for attempt in range(3):
        def on_error(error):
            client.close()

        def on_image(image):
            raise ValueError("handler failed")

        client = Aeron.connect(client_context(driver.aeron_dir, error_handler=on_error,
                                              available_image_handler=on_image))
        try:
            start = time.monotonic()
            client.add_subscription("aeron:ipc", 51 + attempt)
            try:
                client.add_publication("aeron:ipc", 51 + attempt)   # its image event may be read right here
            except IllegalStateError as exc:
                assert "closed" in str(exc)
            wait_for(lambda: client.is_closed, timeout_s=3)
            wait_for(lambda: not client._runner.thread.is_alive(), timeout_s=3)
            assert time.monotonic() - start < 3
        finally:
            client.close()


# -- context from the environment ------------------------------------------------------------------------------

def test_context_reads_the_c_clients_environment_variables(monkeypatch, tmp_path):
    monkeypatch.setenv("AERON_DIR", str(tmp_path / "from-env"))
    monkeypatch.setenv("AERON_DRIVER_TIMEOUT", "1500")
    monkeypatch.setenv("AERON_CLIENT_RESOURCE_LINGER_DURATION", "200ms")
    monkeypatch.setenv("AERON_CLIENT_IDLE_SLEEP_DURATION", "2ms")
    ctx = Context()
    assert ctx.aeron_dir == str(tmp_path / "from-env")
    assert (ctx.driver_timeout_ms, ctx.resource_linger_duration_ns, ctx.idle_sleep_duration_ns) == (
        1500, 200_000_000, 2_000_000)
    explicit = Context(str(tmp_path), driver_timeout_ms=700)
    assert (explicit.aeron_dir, explicit.driver_timeout_ms) == (str(tmp_path), 700)


def test_context_defaults_without_environment(monkeypatch):
    for name in ("AERON_DIR", "AERON_DRIVER_TIMEOUT", "AERON_CLIENT_RESOURCE_LINGER_DURATION",
                 "AERON_CLIENT_IDLE_SLEEP_DURATION"):
        monkeypatch.delenv(name, raising=False)
    from aeron.client import default_aeron_dir
    ctx = Context()
    assert ctx.aeron_dir is None
    assert (ctx.driver_timeout_ms, ctx.keepalive_interval_ns, ctx.resource_linger_duration_ns,
            ctx.idle_sleep_duration_ns) == (10_000, 500_000_000, 3_000_000_000, 16_000_000)
    ctx.conclude()
    assert ctx.aeron_dir == default_aeron_dir() == f"/dev/shm/aeron-{__import__('getpass').getuser()}"


@pytest.mark.parametrize("name, value", [("AERON_DRIVER_TIMEOUT", "soon"),
                                         ("AERON_CLIENT_RESOURCE_LINGER_DURATION", "3 parsecs")])
def test_bad_environment_values_name_the_variable(monkeypatch, name, value):
    from aeron.common.errors import ConfigurationError
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigurationError, match=name):
        Context()
