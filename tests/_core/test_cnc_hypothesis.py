# SPDX-License-Identifier: Apache-2.0
"""cnc.dat under hostile bytes: arbitrary images, a driver's image with its header fields overwritten, flipped or
truncated, in memory and as a file, go through CncFile and then everything a client or tool reads from it (the
to-driver ring, the to-clients broadcast, the counters, the error log). Nothing crashes and nothing escapes but a
typed AeronError (CorruptFileError, CncNotInitialisedError, CncVersionError, ...)."""
from __future__ import annotations

import os
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aeron._core import cnc as c
from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.broadcast import BroadcastReceiver, BroadcastTransmitter, CopyBroadcastReceiver
from aeron._core.cnc import CncFile
from aeron._core.counters import CountersManager, CountersReader, format_counters
from aeron._core.error_log import DistinctErrorLog, read_error_log
from aeron._core.ring_buffer import ManyToOneRingBuffer
from aeron.common.errors import AeronError

pytestmark = pytest.mark.timeout(120)
SETTINGS = settings(max_examples=200, deadline=None)
HOSTILE_I32 = [0, -1, 1, 7, 8, 64, 128, 768, 1024, 1024 + 768, 1024 + 128, 4096, 2 ** 30, 2 ** 31 - 1, -(2 ** 31)]
HEADER_FIELDS = [c.VERSION_FIELD_OFFSET, c.TO_DRIVER_BUFFER_LENGTH_FIELD_OFFSET,
                 c.TO_CLIENTS_BUFFER_LENGTH_FIELD_OFFSET, c.COUNTERS_METADATA_BUFFER_LENGTH_FIELD_OFFSET,
                 c.COUNTERS_VALUES_BUFFER_LENGTH_FIELD_OFFSET, c.ERROR_LOG_BUFFER_LENGTH_FIELD_OFFSET,
                 c.FILE_PAGE_SIZE_FIELD_OFFSET]


def _driver_image() -> bytes:
    """A small cnc.dat as the driver writes it, with a counter, a broadcast, a command and an error in it."""
    path = f"/dev/shm/aeron-py-test-cnc-image-{os.getpid()}.dat"
    if os.path.exists(path):
        os.unlink(path)
    cnc = CncFile.create(path, to_driver_buffer_length=1024 + 768, to_clients_buffer_length=1024 + 128,
                         counters_metadata_buffer_length=4 * 1024, counters_values_buffer_length=1024,
                         error_log_buffer_length=1024, client_liveness_timeout_ns=10 ** 10, start_timestamp_ms=1,
                         pid=os.getpid())
    try:
        ring = ManyToOneRingBuffer(cnc.to_driver_buffer())
        ring.write(1, b"command")
        ring.close()
        transmitter = BroadcastTransmitter(cnc.to_clients_buffer())
        transmitter.transmit(2, b"response")
        transmitter.close()
        manager = CountersManager(cnc.counters_metadata_buffer(), cnc.counters_values_buffer())
        manager.allocate("a counter", 1, b"key")
        manager = None
        DistinctErrorLog(cnc.error_log_buffer(), clock_ms=lambda: 5).record("an error")
        return bytes(cnc.buffer.get_bytes(0, cnc.buffer.capacity))
    finally:
        cnc.close()
        os.unlink(path)


IMAGE = _driver_image()
REQUIRED = c.META_DATA_LENGTH + (1024 + 768) + (1024 + 128) + 4 * 1024 + 1024 + 1024     # the rest is page padding


def read_everything(cnc: CncFile) -> None:
    """What clients and tools read: each step may refuse with a typed error, none may do anything else."""
    steps = []

    def ring():
        with ManyToOneRingBuffer(cnc.to_driver_buffer()) as r:
            r.consumer_heartbeat_time
            r.size()
            r.read(lambda *a: None, 10)

    def broadcast():
        receiver = BroadcastReceiver(cnc.to_clients_buffer())
        try:
            CopyBroadcastReceiver(receiver).receive(lambda *a: None)
        finally:
            receiver.close()

    def counters():
        format_counters(CountersReader(cnc.counters_metadata_buffer(), cnc.counters_values_buffer()))

    def errors():
        read_error_log(cnc.error_log_buffer())

    for step in (cnc.metadata, cnc.is_file_length_sufficient, ring, broadcast, counters, errors):
        try:
            step()
        except AeronError as error:
            steps.append(error)


def load(image: bytes) -> None:
    memory = bytearray(image)
    try:
        cnc = CncFile.from_buffer(AtomicBuffer(memory) if memory else memory)
    except AeronError:
        return
    try:
        read_everything(cnc)
    finally:
        cnc.close()


@SETTINGS
@given(st.binary(max_size=2048))
def test_arbitrary_bytes(image):
    load(image)


@SETTINGS
@given(st.data())
def test_a_drivers_image_with_hostile_fields_flips_and_truncations(data):
    image = bytearray(IMAGE)
    for _ in range(data.draw(st.integers(1, 5))):
        choice = data.draw(st.sampled_from(["field", "flip", "truncate", "i32"]))
        if choice == "field" and len(image) >= c.META_DATA_LENGTH:
            struct.pack_into("<i", image, data.draw(st.sampled_from(HEADER_FIELDS)),
                             data.draw(st.sampled_from(HOSTILE_I32) | st.integers(-(2 ** 31), 2 ** 31 - 1)))
        elif choice == "flip" and image:
            i = data.draw(st.integers(0, len(image) - 1))
            image[i] ^= 1 << data.draw(st.integers(0, 7))
        elif choice == "truncate":
            del image[data.draw(st.integers(0, len(image))):]
        elif choice == "i32" and len(image) >= 4:
            struct.pack_into("<i", image, data.draw(st.integers(0, len(image) // 4 - 1)) * 4,
                             data.draw(st.sampled_from(HOSTILE_I32)))
    load(bytes(image))


@SETTINGS
@given(st.integers(0, len(IMAGE)))
def test_a_truncated_file(tmp_path_factory, length):
    path = tmp_path_factory.mktemp("cnc") / "cnc.dat"
    path.write_bytes(IMAGE[:length])
    try:
        cnc = CncFile.map_existing(path)
    except AeronError as error:
        assert length < REQUIRED
        assert getattr(error, "path", str(path)) in (str(path), None)
        return
    try:
        assert length >= REQUIRED
        read_everything(cnc)
    finally:
        cnc.close()


def test_the_image_is_a_drivers():
    cnc = CncFile.from_buffer(bytearray(IMAGE))
    try:
        assert cnc.version == c.CNC_VERSION and cnc.required_length == REQUIRED < len(IMAGE)
    finally:
        cnc.close()

