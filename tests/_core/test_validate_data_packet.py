# SPDX-License-Identifier: Apache-2.0
"""validate_data_packet: the receiver's per-frame check of a DATA/PAD datagram (port of
aeron_publication_image_validate_packet)."""
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aeron._core.term_scanner import validate_data_packet
from aeron.common.errors import InvalidArgumentError

HEADER = struct.Struct("<iBBhiiiiq")
TERM = 65536


def datagram(*frames, term_offset=0):
    """frames: (frame_length, type); each at the running aligned offset."""
    out = bytearray()
    running = term_offset
    for frame_length, frame_type in frames:
        aligned = (max(frame_length, 32) + 31) & ~31 if frame_type == 1 else 32
        chunk = bytearray(aligned)
        HEADER.pack_into(chunk, 0, frame_length, 0, 0xC0, frame_type, running, 7, 1001, 3, 0)
        out += chunk
        running += aligned
    return out


def test_a_batch_of_whole_frames_covers_its_length():
    packet = datagram((64, 1), (46, 1), (33, 1), term_offset=4096)
    assert len(packet) == 64 + 64 + 64
    assert validate_data_packet(packet, len(packet), 4096, TERM) == len(packet)


def test_a_heartbeat_covers_nothing():
    packet = bytearray(32)
    HEADER.pack_into(packet, 0, 0, 0, 0xC0, 1, 128, 7, 1001, 3, 0)
    assert validate_data_packet(packet, 32, 128, TERM) == 0


def test_a_pad_ends_the_datagram_and_may_span_the_rest_of_the_term():
    packet = datagram((64, 1))
    pad = bytearray(32)
    HEADER.pack_into(pad, 0, TERM - 64, 0, 0xC0, 0, 64, 7, 1001, 3, 0)
    assert validate_data_packet(packet + pad, 96, 0, TERM) == 96
    HEADER.pack_into(pad, 0, TERM, 0, 0xC0, 0, 64, 7, 1001, 3, 0)       # would run past the term
    assert validate_data_packet(packet + pad, 96, 0, TERM) == -1


@pytest.mark.parametrize("mutate", [
    lambda p: HEADER.pack_into(p, 64, 64, 0, 0xC0, 1, 9999, 7, 1001, 3, 0),     # offset not the running one
    lambda p: HEADER.pack_into(p, 64, 64, 0, 0xC0, 5, 64, 7, 1001, 3, 0),       # a SETUP type inside
    lambda p: HEADER.pack_into(p, 64, 16, 0, 0xC0, 1, 64, 7, 1001, 3, 0),       # shorter than a header
    lambda p: HEADER.pack_into(p, 64, 4096, 0, 0xC0, 1, 64, 7, 1001, 3, 0),     # runs past the datagram
])
def test_inconsistent_frames_are_invalid(mutate):
    packet = datagram((64, 1), (64, 1))
    mutate(packet)
    assert validate_data_packet(packet, len(packet), 0, TERM) == -1


@pytest.mark.parametrize("term_offset", [-32, 16, TERM])
def test_a_bad_term_offset_is_invalid(term_offset):
    packet = datagram((64, 1), term_offset=max(0, term_offset))
    assert validate_data_packet(packet, len(packet), term_offset, TERM) == -1


def test_a_frame_crossing_the_term_end_is_invalid():
    packet = datagram((64, 1), (64, 1), term_offset=TERM - 64)
    assert validate_data_packet(packet, len(packet), TERM - 64, TERM) == -1


def test_bad_arguments_raise():
    with pytest.raises(InvalidArgumentError):
        validate_data_packet(bytearray(32), 64, 0, TERM)
    with pytest.raises(InvalidArgumentError):
        validate_data_packet(bytearray(32), 32, 0, 0)


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=0, max_size=256), st.integers(-64, TERM + 64))
def test_garbage_never_crashes(data, term_offset):
    result = validate_data_packet(data, len(data), term_offset, TERM)
    assert result == -1 or 0 <= result <= len(data)
