# SPDX-License-Identifier: Apache-2.0
"""frames under hostile input: random and mutated datagrams never crash validate_frame / decode_frame /
decode_datagram; the outcome always agrees with a small pure-Python model of the checks (aeron_is_frame_valid),
and an accepted datagram always decodes."""
import json
import pathlib
import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from aeron._core import frames as f
from aeron.common.errors import MalformedFrameError, OutOfBoundsError
from tests.conftest import GOLDEN

SETTINGS = settings(max_examples=200, deadline=None)
FIXED = {2: 28, 3: 36, 4: 40, 5: 40, 6: 40, 11: 20}


def _i32(raw, offset):
    return struct.unpack_from("<i", raw, offset)[0]


def model(raw: bytes) -> int:
    """Independent statement of the checks frame_validate makes."""
    n = len(raw)
    if n < 8:
        return -1
    if raw[4] != 0:
        return -2
    frame_length = _i32(raw, 0)
    if frame_length < 0:
        return -3
    kind = struct.unpack_from("<H", raw, 6)[0]
    if kind in (0, 1):
        if n < 32:
            return -5
        if n % 32:
            return -7
        offset = _i32(raw, 8)
        if offset < 0 or offset % 32:
            return -8
        if kind == 0:
            return 0 if frame_length >= 32 else -6
        if frame_length == 0:
            return 1 if n == 32 else -6
        return 1 if frame_length >= 32 and (frame_length + 31) // 32 * 32 <= n else -6
    if kind == 7:
        if n < 22:
            return -5
        return 7 if 8 <= frame_length <= n else -6
    if kind not in FIXED:
        return -4
    if n < FIXED[kind]:
        return -5
    if not FIXED[kind] <= frame_length <= n:
        return -6
    if kind == 5:
        term_length, mtu, offset = _i32(raw, 28), _i32(raw, 32), _i32(raw, 8)
        if not (65536 <= term_length <= 2 ** 30 and term_length & (term_length - 1) == 0):
            return -9
        if not (32 <= mtu <= 65504 and mtu % 32 == 0):
            return -9
        return 5 if 0 <= offset < term_length and offset % 32 == 0 else -8
    if kind == 3:
        offset = _i32(raw, 20)
        if offset < 0 or offset % 32:
            return -8
        return 3 if _i32(raw, 24) >= 0 else -9
    if kind == 2:
        offset = _i32(raw, 20)
        if offset < 0 or offset % 32:
            return -8
        return 2 if _i32(raw, 24) >= 0 else -9
    if kind == 4:
        text = _i32(raw, 36)
        return 4 if 0 <= text <= 1023 and 40 + text <= frame_length else -9
    return kind


def _golden():
    out = []
    for run in ("unicast", "unicast-loss-rttm", "multicast"):
        path = GOLDEN / "frames" / run / "datagrams.json"
        if path.is_file():
            seen = set()
            for datagram in json.loads(path.read_text())["datagrams"]:
                raw = bytes.fromhex(datagram["hex"])
                if raw not in seen:
                    seen.add(raw)
                    out.append(raw)
    return out


GOLDEN_DATAGRAMS = _golden()
if not GOLDEN_DATAGRAMS:  # pragma: no cover - the golden fixture fails loudly elsewhere
    GOLDEN_DATAGRAMS = [b"\0" * 32]


def _check(raw: bytes):
    code = f.validate_frame(raw)
    assert code == model(raw), (raw.hex(), code)
    try:
        first = f.decode_frame(raw)
    except MalformedFrameError as error:
        assert code < 0 and error.reason == code
    else:
        assert code >= 0 and first.type == code
    try:
        frames = f.decode_datagram(raw)
    except MalformedFrameError:
        assert code < 0 or code in (f.HDR_TYPE_DATA, f.HDR_TYPE_PAD)
    else:
        assert code >= 0 and frames and frames[0].type == code


@SETTINGS
@given(st.binary(max_size=200))
def test_random_bytes(raw):
    _check(raw)


# header-shaped noise: a plausible common header (often version 0, a known type) over random fields
@SETTINGS
@given(st.integers(-2 ** 31, 2 ** 31 - 1), st.sampled_from([0, 0, 0, 1]), st.integers(0, 255),
       st.sampled_from([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0xFFFF]), st.binary(min_size=0, max_size=120))
def test_plausible_headers(frame_length, version, flags, kind, body):
    _check(struct.pack("<iBBH", frame_length, version, flags, kind) + body)


@SETTINGS
@given(st.sampled_from(GOLDEN_DATAGRAMS), st.data())
def test_mutated_golden_datagrams(raw, data):
    mutated = bytearray(raw)
    for _ in range(data.draw(st.integers(1, 4))):
        choice = data.draw(st.sampled_from(["flip", "set_i32", "truncate", "extend"]))
        if choice == "flip" and mutated:
            i = data.draw(st.integers(0, len(mutated) - 1))
            mutated[i] ^= 1 << data.draw(st.integers(0, 7))
        elif choice == "set_i32" and len(mutated) >= 4:
            i = data.draw(st.integers(0, (len(mutated) - 4) // 4)) * 4
            struct.pack_into("<i", mutated, i, data.draw(st.sampled_from(
                [0, -1, 31, 32, 33, 64, 65504, 65536, 2 ** 30, 2 ** 31 - 1, -2 ** 31])))
        elif choice == "truncate":
            del mutated[data.draw(st.integers(0, len(mutated))):]
        elif choice == "extend":
            mutated += data.draw(st.binary(min_size=1, max_size=64))
    _check(bytes(mutated))


@SETTINGS
@given(st.lists(st.integers(0, 100), min_size=1, max_size=6), st.integers(0, 1024).map(lambda x: x * 32))
def test_batches_of_whole_frames_decode_to_their_frames(payload_lengths, term_offset):
    raw = bytearray()
    running = term_offset
    for i, length in enumerate(payload_lengths):
        slot = bytearray((32 + length + 31) & ~31)
        struct.pack_into("<iBBhiiiiq", slot, 0, 32 + length, 0, 0xC0, 1, running, 7, 8, 9, i)
        slot[32:32 + length] = bytes([i + 1]) * length
        raw += slot
        running += len(slot)
    frames = f.decode_datagram(bytes(raw))
    assert [frame.reserved_value for frame in frames] == list(range(len(payload_lengths)))
    assert [bytes(frame.payload) for frame in frames] == [bytes([i + 1]) * n for i, n in enumerate(payload_lengths)]


def test_golden_datagrams_present():
    assert len(GOLDEN_DATAGRAMS) > 50 and pathlib.Path(GOLDEN).is_dir()


# a datagram somewhere inside a larger buffer, with any offset and length a caller might pass: the span is checked
# (OutOfBoundsError) before a byte is read, and inside it the outcome is the datagram's own
@SETTINGS
@given(st.sampled_from(GOLDEN_DATAGRAMS) | st.binary(max_size=96), st.binary(max_size=40), st.binary(max_size=40),
       st.integers(-2 ** 63, 2 ** 63 - 1) | st.integers(-4, 200), st.integers(-2 ** 63, 2 ** 63 - 1) | st.integers(-4, 200))
def test_any_offset_and_length(raw, before, after, offset, length):
    buffer = bytearray(before + raw + after)
    # a negative length means "to the end of the buffer"
    inside = 0 <= offset <= len(buffer) and (length < 0 or length <= len(buffer) - offset)
    for call in (f.validate_frame, f.decode_frame, f.decode_datagram):
        try:
            call(buffer, offset, length)
        except OutOfBoundsError:
            assert not inside
        except MalformedFrameError:
            assert inside
    assert f.validate_frame(buffer, len(before), len(raw)) == f.validate_frame(raw)


# decoded fields stay inside the datagram: a payload is a view of it, an error text is no longer than its length field
@SETTINGS
@given(st.sampled_from(GOLDEN_DATAGRAMS), st.data())
def test_decoded_frames_stay_inside_the_datagram(raw, data):
    mutated = bytearray(raw)
    for _ in range(data.draw(st.integers(0, 3))):
        if len(mutated) >= 4:
            i = data.draw(st.integers(0, (len(mutated) - 4) // 4)) * 4
            struct.pack_into("<i", mutated, i, data.draw(st.sampled_from([0, -1, 8, 32, 40, 1023, 2 ** 31 - 1])))
    try:
        frames = f.decode_datagram(bytes(mutated))
    except MalformedFrameError:
        return
    for frame in frames:
        if isinstance(frame, f.DataFrame):
            assert len(frame.payload) <= len(mutated) - 32
        elif isinstance(frame, f.ErrorFrame):
            assert 0 <= frame.error_length <= len(mutated) - 40 and len(frame.error_message) == frame.error_length
        elif isinstance(frame, f.ResolutionFrame):
            assert len(frame.entries) <= len(mutated) - 8
