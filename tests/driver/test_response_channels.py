# SPDX-License-Identifier: Apache-2.0
"""Response channels (control-mode=response, response-correlation-id), after Aeron's ResponseChannelsTest: a client's
request publication names its response subscription; the server's image of it asks for a response channel; the
server's response publication names that image, and the client's response subscription learns its session (RSP_SETUP)
and connects to it alone. Over UDP within one driver and across two, and over IPC; the errors the C driver gives;
response-correlation-id as a publication matching criterion. tests/interop/test_response_channels_interop.py runs
these across `aeronmd` and our driver."""
from __future__ import annotations

import contextlib

import pytest

from aeron import Aeron, Context, MediaDriver
from aeron.common.errors import ErrorCode, InvalidChannelError, RegistrationError
from tests.driver.udp_helpers import Collector, driver_context, free_port, offer, wait_for

pytestmark = pytest.mark.timeout(60)

REQUEST_STREAM, RESPONSE_STREAM = 10000, 10001


@pytest.fixture
def clients(shm_dir):
    """(server client, client on the server's driver, client on another driver): here two of our drivers."""
    with contextlib.ExitStack() as stack:
        one = stack.enter_context(MediaDriver.launch(driver_context(aeron_dir=str(shm_dir / "one"))))
        two = stack.enter_context(MediaDriver.launch(driver_context(aeron_dir=str(shm_dir / "two"))))
        yield (stack.enter_context(Aeron.connect(Context(one.aeron_dir))),
               stack.enter_context(Aeron.connect(Context(one.aeron_dir))),
               stack.enter_context(Aeron.connect(Context(two.aeron_dir))))


def poll_until(subscription, collector, count):
    wait_for(lambda: len(collector.messages) >= count, invoke=lambda: subscription.poll(collector, 10))


class EchoServer:
    """One request subscription; for each request image a response publication naming it; echoes each request on
    the response publication of the image it came from (Aeron's ResponseServer with an echo handler)."""

    def __init__(self, aeron, request_channel, response_control):
        self.aeron = aeron
        self.response_control = response_control
        self.responses = {}                         # image correlation id -> response publication
        self.request = aeron.add_subscription(request_channel, REQUEST_STREAM)

    def run(self):
        images = self.request.images                # one snapshot: the conductor may add an image meanwhile
        for image in images:
            if image.correlation_id not in self.responses:
                self.responses[image.correlation_id] = self.aeron.add_publication(
                    f"{self.response_control}|response-correlation-id={image.correlation_id}", RESPONSE_STREAM)
        for image in images:
            response = self.responses[image.correlation_id]

            def echo(buffer, offset, length, header, response=response):
                message = buffer.get_bytes(offset, length)
                wait_for(lambda: response.offer(message) > 0)
            image.poll(echo, 10)


def test_response_publication_connects_to_the_response_subscription_only(clients):
    server, client, _ = clients
    request, control = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
    sub_req = server.add_subscription(f"aeron:udp?endpoint={request}", REQUEST_STREAM)
    sub_rsp = client.add_subscription(f"aeron:udp?control-mode=response|control={control}", RESPONSE_STREAM)
    sub_rsp_aux = client.add_subscription(f"aeron:udp?control-mode=response|control={control}", RESPONSE_STREAM)
    pub_req = client.add_publication(
        f"aeron:udp?endpoint={request}|response-correlation-id={sub_rsp.registration_id}", REQUEST_STREAM)
    wait_for(lambda: sub_req.image_count == 1 and pub_req.is_connected)
    image = sub_req.images[0]
    pub_rsp = server.add_publication(
        f"aeron:udp?control-mode=response|control={control}|response-correlation-id={image.correlation_id}",
        RESPONSE_STREAM)
    wait_for(lambda: sub_rsp.is_connected and pub_rsp.is_connected)
    assert sub_rsp.images[0].session_id == pub_rsp.session_id
    got = Collector()
    offer(pub_rsp, b"response")
    poll_until(sub_rsp, got, 1)
    assert got.messages == [b"response"]
    assert not sub_rsp_aux.is_connected and sub_rsp_aux.image_count == 0


@pytest.mark.parametrize("transport", ["udp", "ipc"])
def test_each_client_gets_its_own_responses(clients, transport):
    server, client_a, client_b = clients
    if transport == "udp":
        request = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
        control = f"aeron:udp?control-mode=response|control=127.0.0.1:{free_port()}"
        clients_ = (client_a, client_b)
    else:
        request, control = "aeron:ipc", "aeron:ipc?control-mode=response"
        clients_ = (client_a, client_a)
    echo = EchoServer(server, request, control)
    subs, pubs = [], []
    separator = "|" if "?" in request else "?"
    for client in clients_:
        sub = client.add_subscription(control, RESPONSE_STREAM)
        pubs.append(client.add_publication(f"{request}{separator}response-correlation-id={sub.registration_id}",
                                           REQUEST_STREAM))
        subs.append(sub)
    wait_for(lambda: len(echo.responses) == 2 and all(s.is_connected for s in subs), invoke=echo.run)
    collectors = [Collector(), Collector()]
    for n, pub in enumerate(pubs):
        wait_for(lambda: pub.offer(f"hello from client {n}".encode()) > 0, invoke=echo.run)
    wait_for(lambda: all(len(c.messages) >= 1 for c in collectors),
             invoke=lambda: [echo.run(), *(s.poll(c, 10) for s, c in zip(subs, collectors))])
    for _ in range(20):
        echo.run()
        for s, c in zip(subs, collectors):
            s.poll(c, 10)
    assert [c.messages for c in collectors] == [[b"hello from client 0"], [b"hello from client 1"]]


def test_response_publication_errors(clients):
    server, client, other = clients
    request = f"127.0.0.1:{free_port()}"
    control = f"aeron:udp?control-mode=response|control=127.0.0.1:{free_port()}"
    sub_req = server.add_subscription(f"aeron:udp?endpoint={request}", REQUEST_STREAM)
    pub_req = other.add_publication(f"aeron:udp?endpoint={request}", REQUEST_STREAM)      # asks for no response
    wait_for(lambda: sub_req.image_count == 1 and pub_req.is_connected)
    image = sub_req.images[0]
    cases = [(server, f"{control}|response-correlation-id={image.correlation_id}", "did not request a response"),
             (server, f"{control}|response-correlation-id={image.correlation_id + 1000}", "not found"),
             (other, f"{control}|response-correlation-id={image.correlation_id}", "not found"),
             (server, control, "no response-correlation-id set"),
             (client, f"aeron:udp?endpoint={request}|response-correlation-id=123456789",
              "unable to find response subscription")]
    for aeron, channel, part in cases:
        with pytest.raises(RegistrationError) as info:
            aeron.add_publication(channel, RESPONSE_STREAM)
        assert info.value.error_code == ErrorCode.GENERIC_ERROR and part in str(info.value), (channel, info.value)
    with pytest.raises(InvalidChannelError):           # refused by the client before the driver sees it
        client.add_publication(f"aeron:udp?endpoint={request}|response-correlation-id=-5", REQUEST_STREAM)
    prototype = server.add_publication(f"{control}|response-correlation-id=prototype", RESPONSE_STREAM)
    assert not prototype.is_connected and prototype.term_buffer_length == 65536


def test_response_correlation_id_is_a_publication_matching_criterion(clients):
    _, client, _ = clients
    endpoint = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
    client.add_subscription(endpoint, 10001)
    rsp_a = client.add_subscription("aeron:udp?control-mode=response", 10001)
    rsp_b = client.add_subscription("aeron:udp?control-mode=response", 10001)
    plain = [client.add_publication(endpoint, 10001) for _ in range(2)]
    same = [client.add_publication(f"{endpoint}|response-correlation-id={rsp_a.registration_id}", 10001)
            for _ in range(2)]
    other = client.add_publication(f"{endpoint}|response-correlation-id={rsp_b.registration_id}", 10001)
    assert plain[0].original_registration_id == plain[1].original_registration_id
    assert same[0].original_registration_id == same[1].original_registration_id
    assert len({plain[0].original_registration_id, same[0].original_registration_id,
                other.original_registration_id}) == 3
    ipc_rsp = client.add_subscription("aeron:ipc?control-mode=response", 10001)
    ipc = [client.add_publication(f"aeron:ipc?response-correlation-id={ipc_rsp.registration_id}", 10001)
           for _ in range(2)] + [client.add_publication("aeron:ipc", 10001)]
    assert ipc[0].original_registration_id == ipc[1].original_registration_id != ipc[2].original_registration_id


def test_a_response_subscription_mismatching_the_endpoint_is_refused(clients):
    _, client, _ = clients
    control = f"127.0.0.1:{free_port()}"
    client.add_subscription(f"aeron:udp?control-mode=response|control={control}", 10001)
    with pytest.raises(RegistrationError) as info:
        client.add_subscription(f"aeron:udp?control={control}", 10001)
    assert info.value.error_code == ErrorCode.GENERIC_ERROR and "isResponse=false" in str(info.value)
