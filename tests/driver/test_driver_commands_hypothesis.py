# SPDX-License-Identifier: Apache-2.0
"""The driver under hostile commands: well-framed commands carrying any channel text, stream id, client id and
registration id go through the conductor of a live driver. Every refusal is a typed error (answered ON_ERROR with
its code, or logged when the command cannot be answered) or an OS refusal: nothing else reaches the conductor's
catch-all for unexpected exceptions, and the driver goes on serving a well-behaved client."""
from __future__ import annotations

import os
import socket
import tempfile
import uuid
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aeron.common import command as cmd
from aeron.common.errors import AeronError, IllegalStateError
from aeron.driver import Context, MediaDriver, udp_channel
from tests.common.test_channel_uri_hypothesis import hostile_value
from tests.driver.rawclient import RawClient

pytestmark = pytest.mark.timeout(300)
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_getaddrinfo = socket.getaddrinfo

i32 = st.integers(-(2**31), 2**31 - 1)
i64 = st.integers(-(2**63), 2**63 - 1)
KEYS = ["endpoint", "control", "control-mode", "interface", "ttl", "mtu", "term-length", "init-term-id", "term-id",
        "term-offset", "session-id", "linger", "pub-wnd", "rcv-wnd", "sparse", "reliable", "tether", "rejoin", "eos",
        "tags", "alias", "response-correlation-id", "max-resend", "ssc", "group", "fc", "cc", "so-sndbuf", "so-rcvbuf"]
PREFIXES = ["aeron:ipc", "aeron:udp", "aeron-spy:aeron:udp", "aeron:ipc?", "aeron:xyz", ""]


def wire_text(text: str) -> str:
    # the bytes a client may put on the wire: any text's UTF-8, carried as the latin-1 the codecs take
    return text.encode("utf-8", "surrogatepass").decode("latin-1")


@st.composite
def channels(draw):
    prefix = draw(st.sampled_from(PREFIXES))
    if draw(st.integers(0, 9)) == 0:
        return wire_text(draw(st.text(max_size=60)))
    params = draw(st.dictionaries(st.sampled_from(KEYS), hostile_value(), max_size=3))
    if "udp" in prefix and draw(st.booleans()):
        params["endpoint"] = draw(st.sampled_from(["127.0.0.1:0", "127.0.0.1", "[::1]:0", "224.0.1.1:0", "x:1"]))
    body = "|".join(f"{key}={value}" for key, value in params.items())
    return wire_text(prefix + ("?" + body if body and not prefix.endswith("?") else body))


def hostile_commands(client_id):
    ids = st.one_of(st.just(client_id), i64)
    return st.lists(st.one_of(
        st.builds(lambda c, corr, s, ch, t: cmd.PublicationCommand(c, corr, s, ch, msg_type_id=t),
                  ids, i64, i32, channels(), st.sampled_from([cmd.ADD_PUBLICATION, cmd.ADD_EXCLUSIVE_PUBLICATION])),
        st.builds(cmd.SubscriptionCommand, ids, i64, i64, i32, channels()),
        st.builds(cmd.RemovePublicationCommand, ids, i64, i64, st.integers(0, 1)),
        st.builds(lambda c, corr, r, t: cmd.RemoveCommand(c, corr, r, msg_type_id=t), ids, i64, i64,
                  st.sampled_from([cmd.REMOVE_SUBSCRIPTION, cmd.REMOVE_COUNTER])),
        st.builds(lambda c, corr, r, ch, t: cmd.DestinationCommand(c, corr, r, ch, msg_type_id=t), ids, i64, i64,
                  channels(), st.sampled_from([cmd.ADD_DESTINATION, cmd.REMOVE_DESTINATION, cmd.ADD_RCV_DESTINATION,
                                               cmd.REMOVE_RCV_DESTINATION])),
        st.builds(cmd.DestinationByIdCommand, ids, i64, i64, i64),
        st.builds(cmd.CounterCommand, ids, i64, i32, st.binary(max_size=120), st.text(max_size=40).map(wire_text)),
        st.builds(cmd.StaticCounterCommand, ids, i64, i64, i32, st.binary(max_size=120),
                  st.text(max_size=40).map(wire_text)),
        st.builds(cmd.RejectImageCommand, ids, i64, i64, i64, st.text(max_size=40).map(wire_text)),
        st.builds(cmd.NextSessionIdCommand, ids, i64, i32),
        st.builds(cmd.TerminateDriverCommand, ids, i64, st.binary(max_size=20)),
    ), min_size=1, max_size=6)


def numeric_only(host, port, family=0, type=0, proto=0, flags=0):
    return _getaddrinfo(host, port, family, type, proto, flags | socket.AI_NUMERICHOST)


@pytest.fixture(scope="module")
def live():
    base = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
    aeron_dir = os.path.join(base, f"aeron-py-test-cmds-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    ctx = Context(environ={}, aeron_dir=aeron_dir, dir_delete_on_shutdown=True, threading_mode="INVOKER", ipc_term_buffer_length=65536,
                  term_buffer_length=65536, counters_buffer_length=4 * 1024 * 1024)
    with mock.patch.object(udp_channel.socket, "getaddrinfo", numeric_only):
        driver = MediaDriver.launch(ctx)
        try:
            conductor = driver.conductor
            unexpected: list[BaseException] = []
            log_error = conductor._log_error

            def checking_log_error(code, detail, exc=None):
                # an OSError is an OS refusal answered as the C driver answers it (a client reusing a correlation
                # id finds its log file taken: EEXIST, GENERIC_ERROR); anything else untyped is a bug
                if exc is not None and not isinstance(exc, (AeronError, OSError)):
                    unexpected.append(exc)
                return log_error(code, detail, exc)

            conductor._log_error = checking_log_error
            client = RawClient(driver.aeron_dir)
            try:
                yield driver, client, unexpected
            finally:
                client.close()
        finally:
            driver.close()


def run(driver, client, cycles=20):
    for _ in range(cycles):
        driver.do_work()
        try:
            client.poll()
        except IllegalStateError:
            pass        # an answer longer than a client's 4 KiB scratch buffer is skipped, as by the C client


@SETTINGS
@given(data=st.data())
def test_hostile_commands_are_refused_with_typed_errors(live, data):
    driver, client, unexpected = live
    for command in data.draw(hostile_commands(client.client_id)):
        client.send(command.msg_type_id, command.encode())
        run(driver, client, 3)
    run(driver, client)
    assert unexpected == [], [f"{type(e).__name__}: {e}" for e in unexpected]
    # and a well-behaved command is still answered
    correlation_id = client.next_id()
    client.send(cmd.ADD_SUBSCRIPTION, cmd.SubscriptionCommand(client.client_id, correlation_id, -1, 1,
                                                              "aeron:ipc").encode())
    deadline = 200
    while deadline and not any(getattr(m, "correlation_id", None) == correlation_id for _, m in client.received):
        run(driver, client, 1)
        deadline -= 1
    assert deadline, "ADD_SUBSCRIPTION not answered"
    client.received.clear()
