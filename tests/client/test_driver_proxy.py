# SPDX-License-Identifier: Apache-2.0
"""The client conductor's two neighbours, as Aeron has them: DriverProxy encodes each command into the to-driver
ring (read back here as the driver decodes it), DriverEventsAdapter decodes the driver's broadcast and calls the
conductor's handler for each message, skipping what is not for this client."""
from __future__ import annotations

import pytest

from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.broadcast import BroadcastReceiver, BroadcastTransmitter, CopyBroadcastReceiver
from aeron._core.ring_buffer import TRAILER_LENGTH, ManyToOneRingBuffer
from aeron.client.driver_events_adapter import DriverEventsAdapter
from aeron.client.driver_proxy import DriverProxy
from aeron.common import command as cmd
from aeron.common.errors import DriverTimeoutError, MalformedMessageError
from aeron.common.wakeup import CONDUCTOR

CLIENT_ID = 42
BROADCAST_TRAILER = 128


class FakeBoard:
    def __init__(self) -> None:
        self.signals: list[int] = []

    def signal(self, mask: int) -> None:
        self.signals.append(mask)


def _ring(capacity: int = 4096) -> ManyToOneRingBuffer:
    return ManyToOneRingBuffer(AtomicBuffer(bytearray(capacity + TRAILER_LENGTH)))


def _commands(ring: ManyToOneRingBuffer) -> list:
    read: list = []
    ring.read(lambda type_id, buffer, offset, length: read.append(cmd.decode_command(type_id, buffer, offset, length)))
    return read


def test_each_command_is_what_the_driver_decodes_with_a_fresh_correlation_id():
    ring = _ring()
    board = FakeBoard()
    proxy = DriverProxy(ring, CLIENT_ID, 1_000_000_000, board)
    sent = [
        proxy.add_publication("aeron:ipc", 7),
        proxy.add_exclusive_publication("aeron:udp?endpoint=localhost:40123", 8),
        proxy.remove_publication(100),
        proxy.add_subscription("aeron:ipc", 9),
        proxy.remove_subscription(101),
        proxy.add_destination(102, "aeron:udp?endpoint=localhost:40124"),
        proxy.remove_destination(102, "aeron:udp?endpoint=localhost:40124"),
        proxy.remove_destination_by_id(102, 103),
        proxy.add_rcv_destination(104, "aeron:udp?endpoint=localhost:40125"),
        proxy.remove_rcv_destination(104, "aeron:udp?endpoint=localhost:40125"),
        proxy.add_counter(1001, b"key", "label"),
        proxy.add_static_counter(1002, b"", "static", 105),
        proxy.remove_counter(106),
        proxy.next_available_session_id(10),
        proxy.reject_image(107, 4096, "not wanted"),
    ]
    proxy.client_close()
    assert sent == sorted(set(sent))                     # one new id per command, from the ring
    commands = _commands(ring)
    assert [c.correlation_id for c in commands] == sent + [-1]
    assert all(c.client_id == CLIENT_ID for c in commands)
    assert [c.msg_type_id for c in commands] == [
        cmd.ADD_PUBLICATION, cmd.ADD_EXCLUSIVE_PUBLICATION, cmd.REMOVE_PUBLICATION, cmd.ADD_SUBSCRIPTION,
        cmd.REMOVE_SUBSCRIPTION, cmd.ADD_DESTINATION, cmd.REMOVE_DESTINATION, cmd.REMOVE_DESTINATION_BY_ID,
        cmd.ADD_RCV_DESTINATION, cmd.REMOVE_RCV_DESTINATION, cmd.ADD_COUNTER, cmd.ADD_STATIC_COUNTER,
        cmd.REMOVE_COUNTER, cmd.GET_NEXT_AVAILABLE_SESSION_ID, cmd.REJECT_IMAGE, cmd.CLIENT_CLOSE]
    add, exclusive, remove = commands[:3]
    assert (add.channel, add.stream_id, exclusive.stream_id, remove.registration_id) == ("aeron:ipc", 7, 8, 100)
    assert (commands[3].channel, commands[3].stream_id, commands[4].registration_id) == ("aeron:ipc", 9, 101)
    assert (commands[5].registration_id, commands[5].channel) == (102, "aeron:udp?endpoint=localhost:40124")
    assert (commands[7].resource_registration_id, commands[7].destination_registration_id) == (102, 103)
    assert (commands[10].type_id, bytes(commands[10].key), commands[10].label) == (1001, b"key", "label")
    assert (commands[11].registration_id, commands[11].label) == (105, "static")
    assert (commands[14].image_correlation_id, commands[14].position, commands[14].reason) == (107, 4096,
                                                                                                 "not wanted")
    assert board.signals == [CONDUCTOR] * len(commands)     # each one wakes a parked conductor of ours


def test_a_ring_the_driver_does_not_empty_is_a_driver_timeout():
    ring = _ring(1024)
    proxy = DriverProxy(ring, CLIENT_ID, 20_000_000)
    with pytest.raises(DriverTimeoutError, match="driver not consuming"):
        for _ in range(1024):
            proxy.add_subscription("aeron:ipc", 1)


def test_the_driver_keepalive_is_the_rings_consumer_heartbeat():
    ring = _ring()
    ring.consumer_heartbeat_time = 1234
    assert DriverProxy(ring, CLIENT_ID, 1).time_of_last_driver_keepalive_ms() == 1234


class RecordingConductor:
    """Records each handler the adapter calls, with its argument."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def __getattr__(self, name: str):
        if not name.startswith("on_"):
            raise AttributeError(name)
        return lambda *args: self.calls.append((name, *args))


@pytest.fixture
def broadcast():
    memory = AtomicBuffer(bytearray(4096 + BROADCAST_TRAILER))
    transmitter = BroadcastTransmitter(memory)
    conductor = RecordingConductor()
    errors: list[BaseException] = []
    adapter = DriverEventsAdapter(CLIENT_ID, CopyBroadcastReceiver(BroadcastReceiver(memory)), conductor,
                                  errors.append)
    return transmitter, adapter, conductor, errors


def _receive_all(adapter: DriverEventsAdapter) -> int:
    count = 0
    while adapter.receive():
        count += 1
    return count


def test_each_response_goes_to_its_handler_decoded(broadcast):
    transmitter, adapter, conductor, errors = broadcast
    ready = cmd.PublicationReady(cmd.ON_EXCLUSIVE_PUBLICATION_READY, 5, 5, 11, 7, 3, -1, "/dev/shm/x.logbuffer")
    error = cmd.ErrorResponse(6, 10, "invalid channel")
    unavailable = cmd.CounterUpdate(cmd.ON_UNAVAILABLE_COUNTER, 7, 12)
    for message in (ready, error, unavailable):
        transmitter.transmit(message.msg_type_id, message.encode())
    assert _receive_all(adapter) == 3
    assert conductor.calls == [("on_new_publication", ready), ("on_error", error),
                               ("on_unavailable_counter", unavailable)]
    assert errors == []


def test_only_this_clients_timeout_ends_it(broadcast):
    transmitter, adapter, conductor, _ = broadcast
    transmitter.transmit(cmd.ON_CLIENT_TIMEOUT, cmd.ClientTimeout(CLIENT_ID + 1).encode())
    transmitter.transmit(cmd.ON_CLIENT_TIMEOUT, cmd.ClientTimeout(CLIENT_ID).encode())
    assert _receive_all(adapter) == 2
    assert conductor.calls == [("on_client_timeout",)]


def test_a_malformed_response_is_reported_and_an_unknown_type_skipped(broadcast):
    transmitter, adapter, conductor, errors = broadcast
    transmitter.transmit(0x0F77, b"\0" * 16)                           # a newer driver's message: not an error
    transmitter.transmit(cmd.ON_PUBLICATION_READY, b"\0" * 8)          # shorter than its fixed part
    transmitter.transmit(cmd.ON_CLIENT_TIMEOUT, cmd.ClientTimeout(CLIENT_ID).encode())
    assert _receive_all(adapter) == 3
    assert len(errors) == 1 and isinstance(errors[0], MalformedMessageError)
    assert conductor.calls == [("on_client_timeout",)]                  # the reader goes on after both

