# SPDX-License-Identifier: Apache-2.0
"""Log buffers under hostile bytes: a driver's log with its metadata fields (geometry, tails, term count, default
header) overwritten, bytes flipped in the metadata and in the frames, or truncated and extended, in memory and as a
file, goes through LogBuffers and then what a client does with a log (read the metadata, poll it with a TermReader,
offer and claim with both appenders). Nothing crashes, nothing reads or writes outside the log, and nothing escapes
but a typed AeronError or a status code."""
from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aeron._core import logbuffer as lb
from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.buffer_claim import BufferClaim
from aeron._core.logbuffer import LogBuffers
from aeron._core.term_appender import ConcurrentTermAppender, ExclusiveTermAppender
from aeron._core.term_reader import TermReader
from aeron.common.errors import AeronError

pytestmark = pytest.mark.timeout(300)
SETTINGS = settings(max_examples=150, deadline=None)
TERM = 65536
LENGTH = 3 * TERM + lb.LOG_META_DATA_LENGTH
META = LENGTH - lb.LOG_META_DATA_LENGTH
I32 = [0, -1, 1, 31, 32, 33, 1408, 4096, TERM - 32, TERM, TERM + 32, 2 ** 16 + 1, 2 ** 30, 2 ** 31 - 1, -(2 ** 31)]
I32_FIELDS = ["active_term_count", "initial_term_id", "default_frame_header_length", "mtu_length", "term_length",
              "page_size", "is_connected", "active_transport_count"]


def _image() -> bytes:
    log = LogBuffers.create(None, term_length=TERM, initial_term_id=7, session_id=11, stream_id=13,
                            term_id=9, term_offset=4096, start_at_position=True)
    appender = ExclusiveTermAppender(log)
    for size in (10, 100, 3000):
        assert appender.offer(bytes(size)) > 0
    image = bytes(log.buffer.get_bytes(0, log.buffer.capacity))
    appender.close()
    log.close()
    return image


IMAGE = _image()


@st.composite
def hostile_logs(draw):
    image = bytearray(IMAGE)
    for _ in range(draw(st.integers(1, 6))):
        choice = draw(st.sampled_from(["field", "tail", "flip-meta", "frame", "truncate", "extend"]))
        meta = len(image) - lb.LOG_META_DATA_LENGTH
        if choice == "field" and meta >= 0:
            struct.pack_into("<i", image, meta + lb.METADATA_OFFSETS[draw(st.sampled_from(I32_FIELDS))],
                             draw(st.sampled_from(I32) | st.integers(-(2 ** 31), 2 ** 31 - 1)))
        elif choice == "tail" and meta >= 0 and len(image) >= 24:
            term_id = draw(st.sampled_from([0, 7, 8, 9, 10, -1, 2 ** 31 - 1]) | st.integers(-(2 ** 31), 2 ** 31 - 1))
            offset = draw(st.sampled_from([0, 32, 4096, TERM - 32, TERM, TERM + 64, 2 ** 31 - 1, -1]))
            struct.pack_into("<q", image, meta + 8 * draw(st.integers(0, 2)),
                             (term_id << 32) | (offset & 0xFFFFFFFF) if term_id >= 0 else
                             ((term_id & 0xFFFFFFFF) << 32 | (offset & 0xFFFFFFFF)) - (1 << 64))
        elif choice == "flip-meta" and meta >= 0:
            i = meta + draw(st.integers(0, 511))
            image[i] ^= 1 << draw(st.integers(0, 7))
        elif choice == "frame":
            at = draw(st.integers(0, 2)) * TERM + 4096 + draw(st.integers(0, 8)) * 32
            if at + 8 > len(image):
                continue
            struct.pack_into("<iBBH", image, at, draw(st.sampled_from(I32)), draw(st.sampled_from([0, 1])),
                             draw(st.sampled_from([0, 0x80, 0x40, 0xC0])), draw(st.sampled_from([0, 1, 5, 0xFFFF])))
        elif choice == "truncate":
            del image[draw(st.integers(0, len(image))):]
        elif choice == "extend":
            image += bytes(draw(st.sampled_from([8, 4096, TERM])))
    return image


def use(log: LogBuffers) -> None:
    """What a client does with a log; each step may refuse with a typed error or return a status code."""
    def metadata():
        log.metadata()
        log.raw_tails()
        log.default_frame_header
        (log.active_term_count, log.active_partition_index, log.end_of_stream_position, log.is_connected)
        log.compute_position(log.initial_term_id, 0)

    def read():
        seen = []
        with TermReader(log) as reader:
            reader.poll(lambda buffer, offset, length, header: seen.append(buffer.get_bytes(offset, length)), 10)
            reader.controlled_poll(lambda *a: 4, 10)
            reader.block_poll(lambda *a: None, 4096)
            reader.is_end_of_stream

    def offer(appender_type):
        def step():
            with appender_type(log) as appender:
                appender.offer(b"x" * 100)
                appender.offer(bytes(5000))
                claim = BufferClaim()
                if appender.try_claim(64, claim) > 0:
                    claim.commit()
        return step

    for step in (metadata, read, offer(ConcurrentTermAppender), offer(ExclusiveTermAppender), read):
        try:
            step()
        except AeronError:
            pass


def check_in_memory(image: bytes) -> None:
    memory = bytearray(image)
    try:
        log = LogBuffers(AtomicBuffer(memory) if memory else memory)
    except AeronError:
        return
    try:
        use(log)
    finally:
        log.close()
    assert len(memory) == len(image)


@SETTINGS
@given(hostile_logs())
def test_hostile_logs_in_memory(image):
    check_in_memory(bytes(image))


@SETTINGS
@given(st.binary(max_size=4096).map(lambda b: b + bytes(LENGTH - len(b))) | st.binary(max_size=512))
def test_arbitrary_bytes(image):
    check_in_memory(image)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, LENGTH + 100))
def test_a_truncated_or_extended_file(tmp_path_factory, length):
    path = tmp_path_factory.mktemp("log") / "1.logbuffer"
    path.write_bytes(IMAGE[:length] + bytes(max(0, length - LENGTH)))
    try:
        log = LogBuffers.map_existing(path)
    except AeronError as error:
        assert length != LENGTH
        assert error.path == str(path)
        return
    try:
        assert length == LENGTH
        use(log)
    finally:
        log.close()
