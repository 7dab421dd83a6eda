# SPDX-License-Identifier: Apache-2.0
"""Faults and bad input around the client: a publisher process killed while it holds a claim, a client process
killed outright, the driver killed, paused or stopped under a client, and invalid channels, stream ids and
arguments (typed errors naming the bad part). Every wait is bounded; processes are killed in finally blocks."""
from __future__ import annotations

import os
import re
import signal
import sys
import textwrap
import time

import pytest

from aeron import Aeron, Context
from aeron._core import counters as ctr
from aeron._core.buffer_claim import BufferClaim
from aeron.common.errors import (
    DriverTimeoutError, ErrorCode, IllegalStateError, InvalidArgumentError, InvalidChannelError, RegistrationError)
from tests import procs
from tests.client.conftest import LIVENESS_NS, UNBLOCK_NS, client_context, receive, wait_for
from tests.support import free_port

pytestmark = pytest.mark.timeout(90)

CHILD = textwrap.dedent("""
    import sys, time
    from aeron import Aeron, Context
    aeron_dir, mode = sys.argv[1], sys.argv[2]
    client = Aeron.connect(Context(aeron_dir, keepalive_interval_ns=100_000_000))
    pub = client.add_publication("aeron:ipc", 21)
    sub = client.add_subscription("aeron:ipc", 22)
    counter = client.add_counter(1001, "doomed counter")
    while not pub.is_connected:
        time.sleep(0.001)
    if mode == "claim":
        claim = pub.try_claim(100)
        assert claim, claim.position
        claim.buffer[:4] = b"dead"                      # never committed: the log is blocked here
    print("ready", pub.session_id, counter.counter_id, client.client_id, flush=True)
    time.sleep(60)
""")


def start_child(aeron_dir, mode):
    proc = procs.popen([sys.executable, "-c", CHILD, aeron_dir, mode])
    try:
        line = procs.wait_for_line(proc, "ready", timeout=20)[-1].split()
    except BaseException:
        procs.stop(proc, signal.SIGKILL)
        raise
    return proc, int(line[1]), int(line[2]), int(line[3])


def kill9(proc):
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    assert proc.returncode == -signal.SIGKILL


# -- (a) a publisher killed while it holds a claim ----------------------------------------------------------------

def test_publisher_killed_mid_claim_is_unblocked_after_the_timeout_and_the_stream_goes_on(driver, errors):
    with Aeron.connect(client_context(driver.aeron_dir, errors)) as client:
        sub = client.add_subscription("aeron:ipc", 21)
        proc, session_id, _, _ = start_child(driver.aeron_dir, "claim")
        try:
            claimed_at = time.monotonic()
            pub = client.add_publication("aeron:ipc", 21)      # the same log as the dead-to-be claimant
            assert pub.session_id == session_id
            position = pub.offer(b"behind the claim")
            assert position == 160 + 64                         # after the 100 + 32 bytes claimed
            kill9(proc)
        finally:
            procs.stop(proc, signal.SIGKILL)
        reader = client.counters_reader
        assert sub.poll(lambda *a: None, 10) == 0            # blocked at the claim
        got = receive(sub, 1, timeout_s=UNBLOCK_NS / 1e9 + 5)
        waited = time.monotonic() - claimed_at
        # the claimed frame became padding once the unblock timeout passed, the message behind it arrived
        assert got == [b"behind the claim"]
        assert UNBLOCK_NS / 1e9 * 0.9 < waited < UNBLOCK_NS / 1e9 + 4
        assert reader.get_counter_value(ctr.UNBLOCKED_PUBLICATIONS) == 1
        assert sub.images[0].position == position
        for i in range(5):                                  # and the stream goes on
            assert pub.offer(b"later %d" % i) == position + 64 * (i + 1)
        assert receive(sub, 5) == [b"later %d" % i for i in range(5)]
    assert errors == []


# -- (b) a client killed outright ---------------------------------------------------------------------------------

def test_killed_client_is_timed_out_and_its_resources_released(driver, errors):
    gone = []
    with Aeron.connect(client_context(driver.aeron_dir, errors)) as client:
        sub = client.add_subscription("aeron:ipc", 21, unavailable_image_handler=gone.append)
        reader = client.counters_reader
        proc, session_id, counter_id, child_id = start_child(driver.aeron_dir, "plain")
        try:
            wait_for(lambda: sub.image_count == 1)
            heartbeat = reader.find_by_type_id_and_registration_id(ctr.DRIVER_HEARTBEAT_TYPE_ID, child_id)
            assert heartbeat >= 0 and reader.get_counter_label(heartbeat).startswith(f"client-heartbeat: id={child_id}")
            assert reader.get_counter_label(counter_id) == "doomed counter"
            assert reader.get_counter_owner_id(counter_id) == child_id
            child_sub_positions = [c.counter_id for c in reader.counters()
                                   if c.type_id == ctr.DRIVER_SUBSCRIBER_POSITION_TYPE_ID and " 22 " in c.label]
            assert len(child_sub_positions) == 0            # no publisher on 22: nothing to count yet
            kill9(proc)
            killed_at = time.monotonic()
        finally:
            procs.stop(proc, signal.SIGKILL)
        wait_for(lambda: reader.get_counter_value(ctr.CLIENT_TIMEOUTS) == 1, timeout_s=LIVENESS_NS / 1e9 + 5,
                 what="client timed out")
        timed_out = time.monotonic() - killed_at
        assert LIVENESS_NS / 1e9 * 0.5 < timed_out < LIVENESS_NS / 1e9 + 3
        wait_for(lambda: reader.get_counter_state(counter_id) != ctr.RECORD_ALLOCATED, what="counter freed")
        wait_for(lambda: reader.get_counter_state(heartbeat) != ctr.RECORD_ALLOCATED, what="heartbeat freed")
        # the publication of the dead client goes too: our image becomes unavailable
        wait_for(lambda: gone, timeout_s=5, what="unavailable image")
        assert [image.session_id for image in gone] == [session_id]
        assert sub.image_count == 0
        wait_for(lambda: not [c for c in reader.counters() if c.type_id == ctr.DRIVER_PUBLISHER_LIMIT_TYPE_ID],
                 what="publisher limit freed")
        heartbeats = [c.registration_id for c in reader.counters() if c.type_id == ctr.DRIVER_HEARTBEAT_TYPE_ID]
        assert heartbeats == [client.client_id]             # we, alive, keep ours
        assert not client.is_closed
    assert errors == []


def test_a_client_that_stops_heartbeating_is_told_it_timed_out(driver):
    """In invoker mode a client that is not invoked stops heartbeating; the driver times it out and the
    client, once invoked again, learns it (ClientTimeoutError or its own service-interval check)."""
    from aeron.common.errors import AeronTimeoutError
    errors = []
    client = Aeron.connect(client_context(driver.aeron_dir, errors, use_conductor_agent_invoker=True))
    try:
        pub = client.add_publication("aeron:ipc", 23)
        time.sleep(LIVENESS_NS / 1e9 + 0.5)                  # no invoke: no heartbeat
        client.conductor_agent_invoker.invoke()
        assert len(errors) == 1 and isinstance(errors[0], AeronTimeoutError)
        assert client.is_closed
        assert pub.is_closed and pub.offer(b"x") == pub.CLOSED
        with pytest.raises(AeronTimeoutError):
            client.add_publication("aeron:ipc", 23)
    finally:
        client.close()
    assert client.is_closed


# -- (c) the driver gone under a client ---------------------------------------------------------------------------

def _driver_process(shm_dir, timeout_ms=1000):
    aeron_dir = str(shm_dir / "driver")
    proc = procs.start_our_driver(aeron_dir, f"aeron.driver.timeout={timeout_ms}",
                                  "aeron.client.liveness.timeout=5s")
    return aeron_dir, proc


@pytest.mark.parametrize("use_invoker", [False, True])
def test_driver_killed_under_a_client_raises_driver_timeout_without_hanging(shm_dir, use_invoker):
    aeron_dir, driver = _driver_process(shm_dir)
    errors = []
    client = None
    try:
        client = Aeron.connect(Context(aeron_dir, driver_timeout_ms=1000, keepalive_interval_ns=100_000_000,
                                       error_handler=errors.append, use_conductor_agent_invoker=use_invoker))
        invoke = client.conductor_agent_invoker.invoke if use_invoker else None
        sub = client.add_subscription("aeron:ipc", 5)
        pub = client.add_publication("aeron:ipc", 5)
        counter = client.add_counter(1001, "c")
        wait_for(lambda: sub.image_count == 1, invoke=invoke)
        assert pub.offer(b"before") == 64
        kill9(driver)
        killed_at = time.monotonic()
        wait_for(lambda: errors, timeout_s=5, invoke=invoke, what="driver timeout reported")
        elapsed = time.monotonic() - killed_at
        # the driver's last heartbeat may predate the kill by a while on a loaded machine, so it is the age the
        # client saw, not the time since the kill, that must exceed the timeout; the elapsed time bounds hanging
        assert elapsed < 1.0 + 0.1 + 1.0                     # driver timeout + keepalive interval (+ slack)
        assert len(errors) == 1 and type(errors[0]) is DriverTimeoutError
        age = re.search(r"MediaDriver keepalive: age=(\d+)ms > timeout=1000ms", str(errors[0]))
        assert age is not None and int(age.group(1)) > 1000, str(errors[0])
        assert client.is_closed
        assert pub.is_closed and pub.offer(b"x") == pub.CLOSED
        assert counter.is_closed and sub.is_closed
        with pytest.raises(IllegalStateError):
            sub.poll(lambda *a: None, 10)
        with pytest.raises(IllegalStateError):
            counter.increment()
        for call in (lambda: client.add_publication("aeron:ipc", 6), lambda: client.add_subscription("aeron:ipc", 6),
                     lambda: client.async_add_counter(1001, "x"), lambda: client.next_correlation_id()):
            start = time.monotonic()
            with pytest.raises(DriverTimeoutError, match="Aeron client terminated: MediaDriver keepalive"):
                call()
            assert time.monotonic() - start < 0.5             # no waiting: the client knows
        start = time.monotonic()
        client.close()
        client.close()
        assert time.monotonic() - start < 2
        assert len(errors) == 1                                # reported once
        if not use_invoker:
            assert not [t for t in __import__("threading").enumerate() if t.name == "aeron-client-conductor"]
    finally:
        if client is not None:
            client.close()
        procs.stop(driver, signal.SIGKILL)


def test_closing_the_client_from_the_error_handler_on_driver_timeout(shm_dir):
    aeron_dir, driver = _driver_process(shm_dir)
    seen = []
    client = None
    try:
        def on_error(error):
            seen.append(error)
            client.close()              # the usual reaction to a dead driver, from the conductor thread

        client = Aeron.connect(Context(aeron_dir, driver_timeout_ms=1000, keepalive_interval_ns=100_000_000,
                                       error_handler=on_error))
        pub = client.add_publication("aeron:ipc", 8)
        kill9(driver)
        wait_for(lambda: seen, timeout_s=5)
        wait_for(lambda: not client._runner.thread.is_alive(), timeout_s=3, what="conductor thread ended")
        assert [type(e) for e in seen] == [DriverTimeoutError]
        assert client.is_closed and pub.is_closed and pub.offer(b"x") == pub.CLOSED
        with pytest.raises(DriverTimeoutError):
            client.add_publication("aeron:ipc", 8)
    finally:
        if client is not None:
            client.close()
        procs.stop(driver, signal.SIGKILL)


def test_driver_stopped_cleanly_is_reported_as_shutdown(shm_dir):
    aeron_dir, driver = _driver_process(shm_dir, timeout_ms=5000)
    errors = []
    try:
        with Aeron.connect(Context(aeron_dir, driver_timeout_ms=5000, keepalive_interval_ns=100_000_000,
                                   error_handler=errors.append)) as client:
            pub = client.add_publication("aeron:ipc", 5)
            driver.send_signal(signal.SIGTERM)
            driver.wait(10)
            assert driver.returncode == 0
            stopped_at = time.monotonic()
            wait_for(lambda: errors, timeout_s=5)
            assert time.monotonic() - stopped_at < 1.0         # not the 5 s driver timeout: the driver said so
            assert [type(e) for e in errors] == [DriverTimeoutError]
            assert str(errors[0]) == "MediaDriver has been shutdown"
            assert pub.offer(b"x") == pub.CLOSED
            with pytest.raises(DriverTimeoutError, match="MediaDriver has been shutdown"):
                client.add_subscription("aeron:ipc", 5)
    finally:
        procs.stop(driver, signal.SIGKILL)


def test_a_paused_driver_makes_a_sync_add_time_out(shm_dir):
    aeron_dir, driver = _driver_process(shm_dir)
    errors = []
    try:
        with Aeron.connect(Context(aeron_dir, driver_timeout_ms=1000, keepalive_interval_ns=100_000_000,
                                   error_handler=errors.append)) as client:
            client.add_subscription("aeron:ipc", 7)
            driver.send_signal(signal.SIGSTOP)
            try:
                wait_for(lambda: _state(driver.pid) == "T", timeout_s=5, what="driver stopped")
                start = time.monotonic()
                with pytest.raises(DriverTimeoutError):
                    client.add_publication("aeron:ipc", 7)
                # The driver writes its heartbeat once per timer interval (1 s), so the heartbeat may already be
                # most of the timeout old when the driver stops: only the upper bound is meaningful.
                assert time.monotonic() - start < 2.5
                # the conductor's own keepalive check reports it too, while the driver is still stopped (resumed, it
                # writes a fresh heartbeat at once)
                wait_for(lambda: errors, timeout_s=5, what="the client conductor's driver timeout")
            finally:
                driver.send_signal(signal.SIGCONT)
            assert type(errors[0]) is DriverTimeoutError
    finally:
        procs.stop(driver, signal.SIGKILL)


def _state(pid):
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


# -- (d) bad input ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("channel, part", [
    ("aeron:ipc?term-length", "'term-length'"),
    ("aeron:tcp?endpoint=x:1", "'tcp'"),
    ("ipc", "must start with 'aeron:'"),
    ("", "must start with 'aeron:'"),
    ("aeron:udp", "needs parameters"),
    ("aeron:udp?endpoint=", "'endpoint='"),
    ("aeron:ipc?|", "empty parameter"),
    ("aeron:ipc?=1", "empty key"),
])
def test_invalid_channels_raise_invalid_channel_error_naming_the_bad_part(client, channel, part):
    for add in (client.add_publication, client.add_exclusive_publication, client.add_subscription,
                client.async_add_publication, client.async_add_subscription):
        with pytest.raises(InvalidChannelError) as info:
            add(channel, 1)
        assert part in str(info.value)
        assert repr(channel) in str(info.value) or channel == ""


@pytest.mark.parametrize("channel", [None, 1, b"aeron:ipc"])
def test_channels_must_be_str(client, channel):
    with pytest.raises(InvalidArgumentError, match="channel must be a str"):
        client.add_publication(channel, 1)


@pytest.mark.parametrize("channel, detail", [
    ("aeron:ipc?term-length=1000", "'term-length=1000'"),
    ("aeron:ipc?term-length=abc", "'term-length=abc'"),
    ("aeron:ipc?mtu=100", "'mtu=100'"),
    ("aeron:ipc?session-id=abc", "'session-id=abc'"),
    ("aeron:ipc?init-term-id=1|term-id=5", "term-offset"),
    ("aeron:udp?endpoint=localhost:99999", "'endpoint=localhost:99999'"),
])
def test_channels_with_bad_values_are_refused_by_the_client_naming_the_parameter(client, channel, detail):
    for add in (client.add_publication, client.add_subscription):
        with pytest.raises(InvalidChannelError) as info:
            add(channel, 1)
        error = info.value
        assert not isinstance(error, RegistrationError)          # refused before any command was sent
        assert error.error_code == ErrorCode.INVALID_CHANNEL
        assert detail in str(error)
    assert client.add_publication("aeron:ipc", 1).stream_id == 1     # the client is fine afterwards


def test_channels_the_driver_refuses_arrive_as_invalid_channel_and_registration_errors(client):
    with pytest.raises(InvalidChannelError) as info:
        client.add_publication("aeron-spy:aeron:ipc", 1)
    error = info.value
    assert isinstance(error, RegistrationError) and isinstance(error, ValueError)
    assert error.error_code == ErrorCode.INVALID_CHANNEL
    assert error.error_code == 1 and type(error.error_code) is ErrorCode
    assert error.channel == "aeron-spy:aeron:ipc"
    assert "subscriptions only" in str(error)
    assert ".py:" not in str(error) and "[" not in str(error)           # no driver source location
    assert client.add_publication("aeron:ipc", 1).stream_id == 1


@pytest.mark.parametrize("stream_id", [1 << 31, -(1 << 31) - 1, 1 << 40, "1", 1.0, None, True])
def test_stream_ids_must_be_int32(client, stream_id):
    for add in (client.add_publication, client.add_exclusive_publication, client.add_subscription,
                client.async_add_publication, client.async_add_exclusive_publication,
                client.async_add_subscription):
        with pytest.raises(InvalidArgumentError, match="stream id must be an int32"):
            add("aeron:ipc", stream_id)
    with pytest.raises(InvalidArgumentError):
        client.next_session_id(stream_id)


@pytest.mark.parametrize("stream_id", [(1 << 31) - 1, -(1 << 31), 0])
def test_stream_ids_at_the_int32_limits_work(client, stream_id):
    sub = client.add_subscription("aeron:ipc", stream_id)
    pub = client.add_publication("aeron:ipc", stream_id)
    wait_for(lambda: pub.is_connected)
    assert pub.stream_id == sub.stream_id == stream_id
    assert pub.offer(b"edge") == 64
    got = []
    wait_for(lambda: sub.poll(lambda b, o, l, h: got.append(h.stream_id), 1))
    assert got == [stream_id]


@pytest.mark.parametrize("label, key, match", [
    ("x" * (ctr.MAX_LABEL_LENGTH + 1), b"", "label length 381"),
    ("ok", b"k" * (ctr.MAX_KEY_LENGTH + 1), "key length 113"),
    (b"bytes label", b"", "label must be a str"),
    ("ok", "str key", "key must be a bytes-like"),
])
def test_bad_counter_arguments(client, label, key, match):
    with pytest.raises(InvalidArgumentError, match=match):
        client.add_counter(1001, label, key)
    with pytest.raises(InvalidArgumentError, match=match):
        client.async_add_counter(1001, label, key)


def test_static_counter_registration_id_must_be_int64(client):
    for bad in (1 << 63, "5", None):
        with pytest.raises(InvalidArgumentError, match="registration id"):
            client.add_static_counter(1001, "s", bad)


def test_a_claim_left_uncommitted_on_a_udp_publication_is_unblocked_after_the_timeout(driver, errors):
    """The sender stops at an uncommitted claim; once it has stood there for the unblock timeout the conductor pads
    the claim over and the message behind it goes out (a network publication's blocked-publisher check)."""
    channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
    with Aeron.connect(client_context(driver.aeron_dir, errors)) as client:
        sub = client.add_subscription(channel, 22)
        claimant = client.add_publication(channel, 22)
        other = client.add_publication(channel, 22)             # the same log
        wait_for(lambda: claimant.is_connected and sub.image_count == 1)
        claim = BufferClaim()
        assert claimant.try_claim(100, claim) > 0
        position = other.offer(b"behind the claim")
        assert position > 0
        assert receive(sub, 1, timeout_s=UNBLOCK_NS / 1e9 + 5) == [b"behind the claim"]
        assert client.counters_reader.get_counter_value(ctr.UNBLOCKED_PUBLICATIONS) == 1
        assert sub.images[0].position == position
        del claim                                               # its view of the log, before the client closes
    assert errors == []
